/* Crawl sessions and operator statistics: bookkeeping on flat arrays, report
 * assembly at the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/emit.h"
#include "torchscan/session.h"

#define MODULE_METHOD "torchscan_module_formula"

/* Grows *items (of `size`-byte elements) to hold at least `need` entries. */
static int
grow(void **items, size_t *cap, size_t need, size_t size)
{
    size_t new_cap;
    void *p;
    if (need <= *cap) {
        return TS_OK;
    }
    new_cap = *cap ? *cap * 2 : 16;
    while (new_cap < need) {
        new_cap *= 2;
    }
    if (new_cap > SIZE_MAX / size) {
        return TS_ENOMEM;
    }
    p = realloc(*items, new_cap * size);
    if (p == NULL) {
        return TS_ENOMEM;
    }
    *items = p;
    *cap = new_cap;
    return TS_OK;
}

static char *
dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy != NULL) {
        memcpy(copy, s, n);
    }
    return copy;
}

/* Appends {code, severity, metric, [path|operator], message} to `list`. */
static int
add_diagnostic(json_t *list,
               const char *code,
               const char *metric,
               const char *path,
               const char *op,
               const char *message)
{
    json_t *d = json_pack("{s:s, s:s, s:s}",
                          "code",
                          code,
                          "severity",
                          "warning",
                          "metric",
                          metric);
    if (d == NULL) {
        return TS_ENOMEM;
    }
    if ((path != NULL && json_object_set_new(d, "path", json_string(path)))
        || (op != NULL && json_object_set_new(d, "operator", json_string(op)))
        || json_object_set_new(d, "message", json_string(message))
        || json_array_append_new(list, d)) {
        return TS_ENOMEM;
    }
    return TS_OK;
}

/* ---- operator statistics ------------------------------------------------ */

typedef struct op_record {
    char *name;
    int64_t flops;
    int64_t counted_calls;
    int64_t ignored_calls;
    int64_t uncounted_calls;
    const char *ignore_reason;
    bool incomplete;
    bool unsupported;
} op_record;

typedef struct unsupported_note {
    int id;
    char *message;
} unsupported_note;

struct ts_opstats {
    op_record *ops;
    size_t nops, cap;
    unsupported_note *notes;
    size_t nnotes, notes_cap;
    int64_t total;
};

ts_opstats *
ts_opstats_new(void)
{
    return calloc(1, sizeof(ts_opstats));
}

void
ts_opstats_free(ts_opstats *stats)
{
    if (stats == NULL) {
        return;
    }
    for (size_t i = 0; i < stats->nops; i++) {
        free(stats->ops[i].name);
    }
    for (size_t i = 0; i < stats->nnotes; i++) {
        free(stats->notes[i].message);
    }
    free(stats->ops);
    free(stats->notes);
    free(stats);
}

int
ts_opstats_intern(ts_opstats *stats, const char *packet_name)
{
    /* Called once per distinct overload object (the binding caches ids), so
     * a linear scan over the ~100 packets a model runs is enough. */
    for (size_t i = 0; i < stats->nops; i++) {
        if (strcmp(stats->ops[i].name, packet_name) == 0) {
            return (int)i;
        }
    }
    if (stats->nops >= INT32_MAX
        || grow((void **)&stats->ops,
                &stats->cap,
                stats->nops + 1,
                sizeof(op_record))) {
        return TS_ENOMEM;
    }
    op_record *rec = &stats->ops[stats->nops];
    memset(rec, 0, sizeof *rec);
    rec->name = dup_string(packet_name);
    if (rec->name == NULL) {
        return TS_ENOMEM;
    }
    return (int)stats->nops++;
}

/* One unsupported_operator_formula note per operator and message. */
static int
note_unsupported(ts_opstats *stats,
                 op_record *rec,
                 int id,
                 const char *message)
{
    rec->unsupported = true;
    for (size_t i = 0; i < stats->nnotes; i++) {
        if (stats->notes[i].id == id
            && strcmp(stats->notes[i].message, message) == 0) {
            return TS_OK;
        }
    }
    if (grow((void **)&stats->notes,
             &stats->notes_cap,
             stats->nnotes + 1,
             sizeof(unsupported_note))) {
        return TS_ENOMEM;
    }
    stats->notes[stats->nnotes].id = id;
    stats->notes[stats->nnotes].message = dup_string(message);
    if (stats->notes[stats->nnotes].message == NULL) {
        return TS_ENOMEM;
    }
    stats->nnotes++;
    return TS_OK;
}

int
ts_opstats_record(ts_opstats *stats,
                  int id,
                  ts_opcall_kind kind,
                  int64_t flops,
                  bool incomplete,
                  const char *message,
                  const char *ignore_reason)
{
    op_record *rec;
    int64_t op_sum, total;
    int rc;
    if (id < 0 || (size_t)id >= stats->nops) {
        return TS_EINVAL;
    }
    rec = &stats->ops[id];
    switch (kind) {
        case TS_OPCALL_COUNTED:
            if (ts_add(rec->flops, flops, &op_sum)
                && ts_add(stats->total, flops, &total)) {
                rec->flops = op_sum;
                stats->total = total;
                rec->counted_calls++;
                rec->incomplete |= incomplete;
                return TS_OK;
            }
            /* The sums keep what fits; the call is noted like a formula
             * whose count does not fit (the total becomes partial). */
            rc = note_unsupported(stats,
                                  rec,
                                  id,
                                  "The operator's FLOPs no longer fit in a "
                                  "signed 64-bit sum; this call is not "
                                  "counted.");
            return rc == TS_OK ? TS_EOVERFLOW : rc;
        case TS_OPCALL_IGNORED:
            rec->ignored_calls++;
            rec->ignore_reason = ignore_reason;
            return TS_OK;
        case TS_OPCALL_UNCOUNTED:
            rec->uncounted_calls++;
            return TS_OK;
        case TS_OPCALL_UNSUPPORTED:
            return note_unsupported(stats, rec, id, message);
        default:
            return TS_EINVAL;
    }
}

int64_t
ts_opstats_total(const ts_opstats *stats)
{
    return stats->total;
}

static int
compare_records_by_name(const void *a, const void *b)
{
    const op_record *const *x = a;
    const op_record *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

json_t *
ts_opstats_report(const ts_opstats *stats,
                  const char *torch_version,
                  const char *method,
                  json_t *by_module)
{
    json_t *report = NULL, *by_op = NULL, *ignored = NULL, *diags = NULL;
    json_t *total = NULL;
    const op_record **sorted = NULL;
    char message[512];

    if (by_module == NULL) {
        by_module = json_object();
    }
    by_op = json_object();
    ignored = json_object();
    diags = json_array();
    if (by_module == NULL || by_op == NULL || ignored == NULL
        || diags == NULL) {
        goto error;
    }
    sorted =
        malloc((stats->nops ? stats->nops : 1) * sizeof(const op_record *));
    if (sorted == NULL) {
        goto error;
    }
    for (size_t i = 0; i < stats->nops; i++) {
        sorted[i] = &stats->ops[i];
    }
    qsort(sorted,
          stats->nops,
          sizeof(const op_record *),
          compare_records_by_name);

    for (size_t i = 0; i < stats->nops; i++) {
        const op_record *rec = sorted[i];
        if (rec->counted_calls > 0
            && json_object_set_new(
                by_op, rec->name, json_integer(rec->flops))) {
            goto error;
        }
        if (rec->ignored_calls > 0
            && json_object_set_new(
                ignored,
                rec->name,
                json_pack("{s:I, s:s}",
                          "calls",
                          (json_int_t)rec->ignored_calls,
                          "reason",
                          rec->ignore_reason ? rec->ignore_reason : ""))) {
            goto error;
        }
    }
    /* Diagnostics: uncounted operators (sorted by name), refused formulas
     * (first-seen order), then incomplete native formulas (sorted). */
    for (size_t i = 0; i < stats->nops; i++) {
        const op_record *rec = sorted[i];
        if (rec->uncounted_calls > 0 && !rec->unsupported) {
            snprintf(message,
                     sizeof message,
                     strncmp(rec->name, "higher_order.", 13) == 0
                         ? "%s was observed %lld time(s): a higher-order "
                           "operator whose inner operators TorchScan cannot "
                           "observe ran uncounted."
                         : "%s was observed %lld time(s), but no FLOP "
                           "formula is registered.",
                     rec->name,
                     (long long)rec->uncounted_calls);
            if (add_diagnostic(diags,
                               "uncounted_operator",
                               "flops",
                               NULL,
                               rec->name,
                               message)) {
                goto error;
            }
        }
    }
    for (size_t i = 0; i < stats->nnotes; i++) {
        const op_record *rec = &stats->ops[stats->notes[i].id];
        if (add_diagnostic(diags,
                           "unsupported_operator_formula",
                           "flops",
                           NULL,
                           rec->name,
                           stats->notes[i].message)) {
            goto error;
        }
    }
    for (size_t i = 0; i < stats->nops; i++) {
        const op_record *rec = sorted[i];
        if (rec->incomplete) {
            snprintf(message,
                     sizeof message,
                     "%s was counted with a formula that leaves work out "
                     "(complex arithmetic or the softmax and scaling of "
                     "fused attention); the count is a lower bound.",
                     rec->name);
            if (add_diagnostic(diags,
                               "incomplete_operator_formula",
                               "flops",
                               NULL,
                               rec->name,
                               message)) {
                goto error;
            }
        }
    }
    total = ts_metric_new(json_array_size(diags) ? TS_PARTIAL : TS_COMPLETE,
                          ts_int(stats->total),
                          "FLOPs",
                          "workload",
                          method);
    if (total == NULL) {
        goto error;
    }
    report = json_pack("{s:i, s:{s:s, s:s, s:s}, s:o, s:o, s:o, s:o, s:o}",
                       "schema_version",
                       1,
                       "context",
                       "torch_version",
                       torch_version,
                       "method",
                       method,
                       "counting_convention",
                       "torchscan_flops_v1",
                       "total",
                       total,
                       "by_module",
                       by_module,
                       "by_operator",
                       by_op,
                       "ignored_operators",
                       ignored,
                       "diagnostics",
                       diags);
    free(sorted);
    return report; /* json_pack's "o" stole every reference, also on error */
error:
    free(sorted);
    json_decref(by_module);
    json_decref(by_op);
    json_decref(ignored);
    json_decref(diags);
    json_decref(total);
    return NULL;
}

json_t *
ts_flop_report_not_requested(const char *torch_version)
{
    json_t *total = ts_metric_new(
        TS_UNAVAILABLE, ts_int(0), "FLOPs", "workload", "not_requested");
    if (total == NULL) {
        return NULL;
    }
    return json_pack("{s:i, s:{s:s, s:s}, s:o, s:{}, s:{}, s:{}, s:[]}",
                     "schema_version",
                     1,
                     "context",
                     "torch_version",
                     torch_version,
                     "method",
                     "not_requested",
                     "total",
                     total,
                     "by_module",
                     "by_operator",
                     "ignored_operators",
                     "diagnostics");
}

/* ---- crawl session ------------------------------------------------------ */

typedef struct module_record {
    char *path;
    char *type_name;
    const char *name; /* the row name: last path part; root: type, lowered */
    ts_module_desc desc;
    bool metric_leaf;
    bool handler; /* a custom handler estimates this module */
    int32_t calls;
} module_record;

/* The six module estimates, in report order. */
enum {
    N_ESTIMATES = 6,
    N_SUMMED = 3 /* the first three have model totals */
};
static const char *const estimate_names[N_ESTIMATES] = {"module_flops",
                                                        "macs",
                                                        "dmas",
                                                        "receptive_field",
                                                        "effective_stride",
                                                        "effective_padding"};
static const char *const estimate_units[N_ESTIMATES] = {
    "FLOPs", "MACs", "DMAs", "elements", "elements", "elements"};

/* One estimate of one call, kept as plain data until the report is
 * written (no JSON per hook call). Methods are static strings. */
typedef struct metric_slot {
    ts_status status;
    ts_number value;
    const char *method; /* static, or `owned` */
    char *owned;        /* a handler's method string (malloc'd) */
    bool subtree;       /* scope "subtree" (else "module_call") */
} metric_slot;

typedef struct layer_record {
    int module;
    int32_t call_index;
    json_t *input;
    json_t *output; /* NULL while pending */
    ts_attribution attribution;
    int64_t op_flops;
    uint8_t present; /* estimates with a slot (bit i: estimate_names[i]) */
    uint8_t handled; /* estimates a handler supplied (metric_ownership) */
    uint8_t owns;    /* estimates this call owns for its whole subtree */
    uint8_t covered; /* estimates an enclosing call owns */
    bool failed;
    bool op_incomplete;
    int owner[N_ESTIMATES]; /* covering layer per covered estimate */
    metric_slot estimates[N_ESTIMATES];
} layer_record;

static void
slot_reset(metric_slot *slot)
{
    free(slot->owned);
    memset(slot, 0, sizeof *slot);
}

/* Module paths and type names live in chunks freed with the session: one
 * allocation per few hundred names instead of two per module. */
typedef struct text_chunk {
    struct text_chunk *next;
    size_t used, cap;
    char text[];
} text_chunk;

struct ts_session {
    bool full;
    text_chunk *texts;
    module_record *modules;
    size_t nmodules, modules_cap;
    layer_record *layers;
    size_t nlayers, layers_cap;
    int *stack;
    size_t depth, stack_cap;
    json_t *diagnostics;
};

/* A copy of `s` that lives as long as the session, or NULL. */
static char *
session_text(ts_session *session, const char *s)
{
    size_t n = strlen(s) + 1;
    text_chunk *c = session->texts;
    char *copy;
    if (c == NULL || c->cap - c->used < n) {
        size_t cap = n > 4000 ? n : 4000;
        c = malloc(sizeof(text_chunk) + cap);
        if (c == NULL) {
            return NULL;
        }
        c->next = session->texts;
        c->used = 0;
        c->cap = cap;
        session->texts = c;
    }
    copy = c->text + c->used;
    memcpy(copy, s, n);
    c->used += n;
    return copy;
}

/* Sets m->name: the last part of the path, or for the root (empty path)
 * its type name in lower case. TS_OK or TS_ENOMEM. */
static int
set_row_name(ts_session *session, module_record *m)
{
    const char *dot = strrchr(m->path, '.');
    char *lowered;
    if (m->path[0] != '\0') {
        m->name = dot ? dot + 1 : m->path;
        return TS_OK;
    }
    lowered = session_text(session, m->type_name);
    if (lowered == NULL) {
        return TS_ENOMEM;
    }
    for (char *c = lowered; *c; c++) {
        *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    }
    m->name = lowered;
    return TS_OK;
}

ts_session *
ts_session_new(bool full)
{
    ts_session *s = calloc(1, sizeof(ts_session));
    if (s == NULL) {
        return NULL;
    }
    s->full = full;
    s->diagnostics = json_array();
    if (s->diagnostics == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

void
ts_session_free(ts_session *session)
{
    if (session == NULL) {
        return;
    }
    while (session->texts != NULL) {
        text_chunk *next = session->texts->next;
        free(session->texts);
        session->texts = next;
    }
    for (size_t i = 0; i < session->nlayers; i++) {
        json_decref(session->layers[i].input);
        json_decref(session->layers[i].output);
        for (int k = 0; k < N_ESTIMATES; k++) {
            free(session->layers[i].estimates[k].owned);
        }
    }
    free(session->modules);
    free(session->layers);
    free(session->stack);
    json_decref(session->diagnostics);
    free(session);
}

int
ts_session_add_module(ts_session *session,
                      const char *path,
                      const char *type_name,
                      const ts_module_desc *desc,
                      bool metric_leaf)
{
    module_record *m;
    if (session->nmodules >= INT32_MAX
        || grow((void **)&session->modules,
                &session->modules_cap,
                session->nmodules + 1,
                sizeof(module_record))) {
        return TS_ENOMEM;
    }
    m = &session->modules[session->nmodules];
    memset(m, 0, sizeof *m);
    m->path = session_text(session, path);
    m->type_name = session_text(session, type_name);
    if (m->path == NULL || m->type_name == NULL
        || set_row_name(session, m) != TS_OK) {
        return TS_ENOMEM;
    }
    if (desc != NULL) {
        memcpy(&m->desc, desc, sizeof m->desc);
    }
    m->metric_leaf = metric_leaf;
    return (int)session->nmodules++;
}

size_t
ts_session_module_count(const ts_session *session)
{
    return session->nmodules;
}

const ts_module_desc *
ts_session_module_desc(const ts_session *session, int module)
{
    return &session->modules[module].desc;
}

int
ts_session_update_module(ts_session *session,
                         int module,
                         const char *type_name,
                         const ts_module_desc *desc)
{
    module_record *m;
    char *name;
    if (module < 0 || (size_t)module >= session->nmodules) {
        return TS_EINVAL;
    }
    m = &session->modules[module];
    name = type_name == NULL || strcmp(m->type_name, type_name) == 0
               ? m->type_name
               : session_text(session, type_name);
    if (name == NULL) {
        return TS_ENOMEM;
    }
    if (name != m->type_name) {
        m->type_name = name;
        if (set_row_name(session, m) != TS_OK) {
            return TS_ENOMEM;
        }
    }
    /* bytewise: the binding compares descriptions with memcmp */
    memcpy(&m->desc, desc, sizeof m->desc);
    return TS_OK;
}

bool
ts_session_module_is_leaf(const ts_session *session, int module)
{
    return session->modules[module].metric_leaf;
}

void
ts_session_set_module_handler(ts_session *session, int module, bool handler)
{
    if (module >= 0 && (size_t)module < session->nmodules) {
        session->modules[module].handler = handler;
    }
}

int
ts_session_begin_call(ts_session *session,
                      int module,
                      json_t *input,
                      const ts_attribution *attribution)
{
    return ts_session_begin_owned_call(session, module, input, attribution, 0);
}

int
ts_session_begin_owned_call(ts_session *session,
                            int module,
                            json_t *input,
                            const ts_attribution *attribution,
                            unsigned owns)
{
    layer_record *layer;
    if (module < 0 || (size_t)module >= session->nmodules) {
        json_decref(input);
        return TS_EINVAL;
    }
    if (session->nlayers >= INT32_MAX
        || grow((void **)&session->layers,
                &session->layers_cap,
                session->nlayers + 1,
                sizeof(layer_record))
        || grow((void **)&session->stack,
                &session->stack_cap,
                session->depth + 1,
                sizeof(int))) {
        json_decref(input);
        return TS_ENOMEM;
    }
    layer = &session->layers[session->nlayers];
    memset(layer, 0, sizeof *layer);
    layer->module = module;
    layer->call_index = session->modules[module].calls++;
    layer->input = input;
    if (attribution != NULL) {
        layer->attribution = *attribution;
    }
    /* Ownership follows the dynamic call tree: the outermost open call
     * that owns an estimate covers it in every call it encloses. */
    for (size_t d = 0; d < session->depth; d++) {
        const layer_record *open = &session->layers[session->stack[d]];
        unsigned take = open->owns & ~layer->covered & TS_ALL_ESTIMATES;
        for (int k = 0; k < N_ESTIMATES; k++) {
            if (take & (1u << k)) {
                layer->owner[k] = session->stack[d];
            }
        }
        layer->covered |= (uint8_t)take;
    }
    layer->owns = (uint8_t)(owns & TS_ALL_ESTIMATES & ~layer->covered);
    session->nlayers++;
    session->stack[session->depth++] = (int)(session->nlayers - 1);
    return (int)(session->nlayers - 1);
}

unsigned
ts_session_layer_covered(const ts_session *session, int layer)
{
    if (layer < 0 || (size_t)layer >= session->nlayers) {
        return 0;
    }
    return session->layers[layer].covered;
}

int
ts_session_set_estimate(ts_session *session,
                        int layer,
                        int which,
                        ts_status status,
                        ts_number value,
                        bool subtree,
                        const char *method)
{
    layer_record *l;
    metric_slot *slot;
    if (layer < 0 || (size_t)layer >= session->nlayers || which < 0
        || which >= N_ESTIMATES) {
        return TS_EINVAL;
    }
    l = &session->layers[layer];
    slot = &l->estimates[which];
    slot_reset(slot);
    slot->owned = dup_string(method);
    if (slot->owned == NULL) {
        return TS_ENOMEM;
    }
    slot->method = slot->owned;
    slot->status = status;
    slot->value = value;
    slot->subtree = subtree;
    l->present |= (uint8_t)(1u << which);
    l->handled |= (uint8_t)(1u << which);
    return TS_OK;
}

int
ts_session_add_diagnostic(ts_session *session,
                          const char *code,
                          const char *metric,
                          int layer,
                          const char *message)
{
    const char *path = NULL;
    if (layer >= 0 && (size_t)layer < session->nlayers) {
        path = session->modules[session->layers[layer].module].path;
    }
    return add_diagnostic(
        session->diagnostics, code, metric, path, NULL, message);
}

int
ts_session_current_layer(const ts_session *session)
{
    return session->depth ? session->stack[session->depth - 1] : -1;
}

size_t
ts_session_layer_count(const ts_session *session)
{
    return session->nlayers;
}

void
ts_session_add_layer_op(ts_session *session,
                        int layer,
                        int64_t flops,
                        bool complete)
{
    if (layer >= 0 && (size_t)layer < session->nlayers) {
        layer_record *l = &session->layers[layer];
        if (!ts_add(l->op_flops, flops, &l->op_flops)) {
            l->op_flops = INT64_MAX;
            l->op_incomplete = true;
        }
        l->op_incomplete |= !complete;
    }
}

/* Turns one formula result into a slot, with its diagnostic. */
static int
store_estimate(ts_session *session,
               metric_slot *slot,
               const char *path,
               int which,
               const ts_estimate *est,
               bool emit_diagnostic)
{
    const char *code = NULL;
    slot->value = ts_int(0);
    slot->method = MODULE_METHOD;
    slot->subtree = false;
    switch (est->kind) {
        case TS_EST_COMPLETE:
            slot->status = TS_COMPLETE;
            slot->value = est->value;
            break;
        case TS_EST_UNSUPPORTED:
            /* A formula that does not know the module keeps its zero as a
             * lower bound: partial, never a silent zero. The receptive
             * field has no lower bound, so it becomes unavailable. */
            slot->status = which < 3 ? TS_PARTIAL : TS_UNAVAILABLE;
            code = "unsupported_module_metric";
            break;
        case TS_EST_NOT_APPLICABLE:
            slot->status = TS_UNAVAILABLE;
            slot->method = MODULE_METHOD ":not_applicable";
            break;
        case TS_EST_ERROR:
        default:
            slot->status = TS_UNAVAILABLE;
            code = "module_metric_error";
            break;
    }
    if (code != NULL && emit_diagnostic) {
        return add_diagnostic(session->diagnostics,
                              code,
                              estimate_names[which],
                              path,
                              NULL,
                              est->message);
    }
    return TS_OK;
}

/* Module formulas for the estimates still wanted (`wanted`): not covered
 * by an enclosing owner and not supplied by a handler. */
static int
estimate_layer(ts_session *session,
               layer_record *layer,
               const module_record *m,
               bool failed,
               const ts_module_call *call,
               unsigned wanted)
{
    metric_slot *slots = layer->estimates;
    if (wanted == 0) {
        return TS_OK;
    }
    if (failed) {
        for (int i = 0; i < N_ESTIMATES; i++) {
            if (wanted & (1u << i)) {
                slot_reset(&slots[i]);
                slots[i].status = TS_UNAVAILABLE;
                slots[i].method = "forward_failed";
                layer->present |= (uint8_t)(1u << i);
            }
        }
        return TS_OK;
    }
    if (call == NULL || !call->has_input || !call->has_output) {
        for (int i = 0; i < 3; i++) {
            if (!(wanted & (1u << i))) {
                continue;
            }
            slot_reset(&slots[i]);
            slots[i].status = TS_UNAVAILABLE;
            slots[i].method = MODULE_METHOD;
            layer->present |= (uint8_t)(1u << i);
            if (add_diagnostic(session->diagnostics,
                               "missing_metric_tensor",
                               estimate_names[i],
                               m->path,
                               NULL,
                               "The module call did not expose both an "
                               "input and output tensor.")) {
                return TS_ENOMEM;
            }
        }
        return TS_OK;
    }
    ts_module_estimates est;
    ts_module_call named = *call;
    named.type_name = m->type_name; /* for "Module type not supported" */
    int rc = ts_module_estimate(&m->desc, &named, &est);
    if (rc != TS_OK) {
        return rc;
    }
    const ts_estimate *all[N_ESTIMATES] = {
        &est.flops, &est.macs, &est.dmas, &est.rf, &est.stride, &est.padding};
    int first_rf = -1;
    for (int i = 0; i < N_ESTIMATES; i++) {
        if (!(wanted & (1u << i))) {
            continue;
        }
        if (i >= 3 && first_rf < 0) {
            first_rf = i;
        }
        slot_reset(&slots[i]);
        /* The receptive-field trio reports one diagnostic, on its first
         * wanted metric. */
        rc = store_estimate(
            session, &slots[i], m->path, i, all[i], i < 3 || i == first_rf);
        if (rc != TS_OK) {
            return rc;
        }
        layer->present |= (uint8_t)(1u << i);
        if (layer->owns & (1u << i)) {
            /* an inclusive built-in estimate (native Transformer family):
             * it covers the subtree, and says so */
            slots[i].subtree = true;
            layer->handled |= (uint8_t)(1u << i);
            if (all[i]->kind == TS_EST_NOT_APPLICABLE) {
                slots[i].method = "not_applicable";
            }
        }
    }
    return TS_OK;
}

int
ts_session_end_call(ts_session *session,
                    int module,
                    json_t *output,
                    bool failed,
                    const ts_module_call *call)
{
    size_t pos = session->depth;
    layer_record *layer;
    const module_record *m;
    int index;
    /* The innermost open call of this module; calls above it can only be
     * left open by an interrupt that skipped their hooks. */
    while (pos > 0
           && session->layers[session->stack[pos - 1]].module != module) {
        pos--;
    }
    if (pos == 0) {
        json_decref(output);
        return TS_EINVAL;
    }
    index = session->stack[pos - 1];
    session->depth = pos - 1;
    layer = &session->layers[index];
    m = &session->modules[module];
    json_decref(layer->output);
    layer->output = NULL;
    layer->failed = failed;
    if (failed) {
        json_decref(output);
        if (add_diagnostic(session->diagnostics,
                           "module_forward_error",
                           "calls",
                           m->path,
                           NULL,
                           "The module forward raised an exception that "
                           "a parent module caught.")) {
            return TS_ENOMEM;
        }
    }
    else {
        layer->output = output;
        if (output == NULL) {
            return TS_ENOMEM;
        }
    }
    if (session->full && (m->metric_leaf || m->handler)) {
        /* Leaves get formulas for what handlers and owners left; a handler
         * row whose forward failed gets its remaining metrics as
         * forward_failed. */
        unsigned wanted = TS_ALL_ESTIMATES & ~(unsigned)layer->covered
                          & ~(unsigned)layer->present;
        if (!m->metric_leaf) {
            wanted = failed ? wanted : 0;
        }
        int rc = estimate_layer(session, layer, m, failed, call, wanted);
        if (rc != TS_OK) {
            return rc;
        }
    }
    return index;
}

typedef struct path_sum {
    const char *path;
    int64_t flops;
} path_sum;

static int
compare_path_sums(const void *a, const void *b)
{
    return strcmp(((const path_sum *)a)->path, ((const path_sum *)b)->path);
}

json_t *
ts_session_op_flops_by_path(const ts_session *session)
{
    json_t *by_path = json_object();
    path_sum *sums =
        calloc(session->nmodules ? session->nmodules : 1, sizeof(path_sum));
    bool *called = calloc(session->nmodules ? session->nmodules : 1, 1);
    size_t n = 0;
    if (by_path == NULL || sums == NULL || called == NULL) {
        goto error;
    }
    /* Sum per module (module order), then emit sorted by path. */
    for (size_t m = 0; m < session->nmodules; m++) {
        sums[m].path = session->modules[m].path;
    }
    for (size_t i = 0; i < session->nlayers; i++) {
        const layer_record *l = &session->layers[i];
        called[l->module] = true;
        if (!ts_add(
                sums[l->module].flops, l->op_flops, &sums[l->module].flops)) {
            sums[l->module].flops = INT64_MAX;
        }
    }
    for (size_t m = 0; m < session->nmodules; m++) {
        if (called[m]) {
            sums[n++] = sums[m];
        }
    }
    if (n > 1) {
        qsort(sums, n, sizeof *sums, compare_path_sums);
    }
    for (size_t k = 0; k < n; k++) {
        if (json_object_set_new(
                by_path, sums[k].path, json_integer(sums[k].flops))) {
            goto error;
        }
    }
    free(sums);
    free(called);
    return by_path;
error:
    free(sums);
    free(called);
    json_decref(by_path);
    return NULL;
}

int
ts_session_mark_expanded_boundary(ts_session *session, int layer)
{
    layer_record *l;
    if (layer < 0 || (size_t)layer >= session->nlayers) {
        return TS_EINVAL;
    }
    l = &session->layers[layer];
    for (int i = 0; i < 3; i++) {
        slot_reset(&l->estimates[i]);
        l->estimates[i].status = TS_UNAVAILABLE;
        l->estimates[i].method = "expanded_atomic_boundary";
        l->present |= (uint8_t)(1u << i);
        if (add_diagnostic(session->diagnostics,
                           "expanded_atomic_boundary",
                           estimate_names[i],
                           session->modules[l->module].path,
                           NULL,
                           "A custom handler matched a module inside this "
                           "nn.Transformer, so its descendants' estimates "
                           "replace the inclusive formula and the root's own "
                           "work is not estimated.")) {
            return TS_ENOMEM;
        }
    }
    return TS_OK;
}

int
ts_session_own_retroactively(ts_session *session, int layer, unsigned mask)
{
    layer_record *owner;
    if (layer < 0 || (size_t)layer >= session->nlayers) {
        return TS_EINVAL;
    }
    owner = &session->layers[layer];
    mask &= TS_ALL_ESTIMATES & ~(unsigned)owner->covered;
    owner->owns |= (uint8_t)mask;
    /* Every layer recorded after an open call is one of its descendants;
     * the outer owner wins over owners nested inside it. */
    for (size_t i = (size_t)layer + 1; i < session->nlayers; i++) {
        layer_record *l = &session->layers[i];
        for (int k = 0; k < N_ESTIMATES; k++) {
            if (mask & (1u << k)) {
                slot_reset(&l->estimates[k]);
                l->owner[k] = layer;
            }
        }
        l->present &= (uint8_t)~mask;
        l->handled &= (uint8_t)~mask;
        l->owns &= (uint8_t)~mask;
        l->covered |= (uint8_t)mask;
    }
    return TS_OK;
}

/* ---- report writing ------------------------------------------------------
 */

#define TRY_EMIT(expr)     \
    do {                   \
        if ((expr) != 0) { \
            return -1;     \
        }                  \
    } while (0)

static int
emit_number(const ts_emitter *e, ts_number n)
{
    return n.is_real ? e->real(e->ctx, n.r) : e->integer(e->ctx, n.i);
}

/* One MetricResult, obeying the status invariants. */
static int
emit_metric(const ts_emitter *e,
            ts_status status,
            ts_number value,
            const char *unit,
            const char *scope,
            const char *method)
{
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "status"));
    TRY_EMIT(e->string(e->ctx, ts_status_name(status)));
    TRY_EMIT(e->key(e->ctx, "value"));
    TRY_EMIT(status == TS_COMPLETE ? emit_number(e, value) : e->null(e->ctx));
    TRY_EMIT(e->key(e->ctx, "known_value"));
    TRY_EMIT(status == TS_UNAVAILABLE ? e->null(e->ctx)
                                      : emit_number(e, value));
    TRY_EMIT(e->key(e->ctx, "unit"));
    TRY_EMIT(e->string(e->ctx, unit));
    TRY_EMIT(e->key(e->ctx, "scope"));
    TRY_EMIT(e->string(e->ctx, scope));
    TRY_EMIT(e->key(e->ctx, "method"));
    TRY_EMIT(e->string(e->ctx, method));
    return e->end_object(e->ctx);
}

static int
emit_int_member(const ts_emitter *e, const char *key, int64_t value)
{
    TRY_EMIT(e->key(e->ctx, key));
    return e->integer(e->ctx, value);
}

static int
emit_layer(const ts_emitter *e,
           const ts_session *session,
           const layer_record *layer)
{
    const module_record *m = &session->modules[layer->module];
    const ts_attribution *a = &layer->attribution;
    const char *name = m->name;
    int depth = 0;
    if (m->path[0] != '\0') {
        depth = 1;
        for (const char *p = m->path; *p; p++) {
            depth += *p == '.';
        }
    }
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "path"));
    TRY_EMIT(e->string(e->ctx, m->path));
    TRY_EMIT(emit_int_member(e, "call_index", layer->call_index));
    TRY_EMIT(e->key(e->ctx, "name"));
    TRY_EMIT(e->string(e->ctx, name));
    TRY_EMIT(emit_int_member(e, "depth", depth));
    TRY_EMIT(e->key(e->ctx, "type"));
    TRY_EMIT(e->string(e->ctx, m->type_name));
    TRY_EMIT(e->key(e->ctx, "input"));
    TRY_EMIT(e->tree(e->ctx, layer->input));
    TRY_EMIT(e->key(e->ctx, "output"));
    if (layer->output != NULL) {
        TRY_EMIT(e->tree(e->ctx, layer->output));
    }
    else {
        TRY_EMIT(e->begin_object(e->ctx));
        TRY_EMIT(e->key(e->ctx, "kind"));
        TRY_EMIT(e->string(e->ctx, layer->failed ? "failed" : "pending"));
        TRY_EMIT(e->end_object(e->ctx));
    }
    TRY_EMIT(e->key(e->ctx, "parameters"));
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(emit_int_member(e, "trainable", a->trainable));
    TRY_EMIT(emit_int_member(e, "frozen", a->frozen));
    TRY_EMIT(emit_int_member(e, "bytes", a->param_bytes));
    TRY_EMIT(e->key(e->ctx, "shared"));
    TRY_EMIT(e->boolean(e->ctx, a->param_shared));
    TRY_EMIT(e->end_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "buffers"));
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(emit_int_member(e, "elements", a->buffer_elements));
    TRY_EMIT(emit_int_member(e, "bytes", a->buffer_bytes));
    TRY_EMIT(e->key(e->ctx, "shared"));
    TRY_EMIT(e->boolean(e->ctx, a->buffer_shared));
    TRY_EMIT(e->end_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "metrics"));
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "calls"));
    TRY_EMIT(emit_metric(
        e, TS_COMPLETE, ts_int(1), "calls", "module_call", "pytorch_hook"));
    for (int i = 0; i < N_ESTIMATES; i++) {
        const metric_slot *slot = &layer->estimates[i];
        if (!(layer->present & (1u << i))) {
            continue;
        }
        TRY_EMIT(e->key(e->ctx, estimate_names[i]));
        TRY_EMIT(emit_metric(e,
                             slot->status,
                             slot->value,
                             estimate_units[i],
                             slot->subtree ? "subtree" : "module_call",
                             slot->method));
    }
    if (session->full) {
        /* The operators this call ran itself; the rows sum to the total. */
        TRY_EMIT(e->key(e->ctx, "operator_flops"));
        TRY_EMIT(emit_metric(e,
                             layer->op_incomplete ? TS_PARTIAL : TS_COMPLETE,
                             ts_int(layer->op_flops),
                             "FLOPs",
                             "module_call_self",
                             TS_OPERATOR_METHOD));
    }
    TRY_EMIT(e->end_object(e->ctx));
    if (layer->handled) {
        /* which estimates a handler supplied, and for what scope */
        TRY_EMIT(e->key(e->ctx, "metric_ownership"));
        TRY_EMIT(e->begin_object(e->ctx));
        for (int i = 0; i < N_ESTIMATES; i++) {
            if (layer->handled & (1u << i)) {
                TRY_EMIT(e->key(e->ctx, estimate_names[i]));
                TRY_EMIT(e->string(
                    e->ctx,
                    layer->estimates[i].subtree ? "subtree" : "module_call"));
            }
        }
        TRY_EMIT(e->end_object(e->ctx));
    }
    if (layer->covered) {
        /* estimates an enclosing call's handler includes */
        TRY_EMIT(e->key(e->ctx, "metric_owners"));
        TRY_EMIT(e->begin_object(e->ctx));
        for (int i = 0; i < N_ESTIMATES; i++) {
            if (layer->covered & (1u << i)) {
                const layer_record *o = &session->layers[layer->owner[i]];
                TRY_EMIT(e->key(e->ctx, estimate_names[i]));
                TRY_EMIT(e->begin_object(e->ctx));
                TRY_EMIT(e->key(e->ctx, "path"));
                TRY_EMIT(e->string(e->ctx, session->modules[o->module].path));
                TRY_EMIT(emit_int_member(e, "call_index", o->call_index));
                TRY_EMIT(e->end_object(e->ctx));
            }
        }
        TRY_EMIT(e->end_object(e->ctx));
    }
    return e->end_object(e->ctx);
}

/* One estimate summed over the rows that have it (contract 1.2): complete
 * when every row is, partial when any lower bound is known. Integer rows
 * add exactly; a real row (a caller handler's 0.5) makes the sum real. An
 * int64 overflow, or a real sum that is not finite, makes it unavailable,
 * with its own diagnostic. */
#define METHOD_TEXT 512

typedef struct aggregate {
    ts_status status;
    ts_number value;
    bool overflow;
    char method[METHOD_TEXT];
} aggregate;

static void
aggregate_estimate(const ts_session *session, int which, aggregate *out)
{
    int64_t known = 0;
    double real = 0.0;
    size_t rows = 0, known_rows = 0;
    bool all_complete = true, any_real = false;
    const char *methods[8];
    size_t nmethods = 0;
    const size_t size = METHOD_TEXT;
    char *method = out->method;
    out->overflow = false;
    for (size_t i = 0; i < session->nlayers; i++) {
        const layer_record *l = &session->layers[i];
        const metric_slot *slot;
        size_t j;
        if (!(l->present & (1u << which))) {
            continue;
        }
        slot = &l->estimates[which];
        rows++;
        all_complete &= slot->status == TS_COMPLETE;
        if (slot->status != TS_UNAVAILABLE) {
            known_rows++;
            if (slot->value.is_real) {
                any_real = true;
                real += slot->value.r;
            }
            else {
                out->overflow |= !ts_add(known, slot->value.i, &known);
            }
        }
        for (j = 0; j < nmethods && strcmp(methods[j], slot->method) != 0;
             j++) {
        }
        if (j == nmethods && nmethods < 8) {
            methods[nmethods++] = slot->method;
        }
    }
    if (nmethods <= 1) {
        snprintf(method, size, "%s", nmethods ? methods[0] : MODULE_METHOD);
    }
    else {
        /* Several methods contributed: name them all, sorted. */
        size_t len;
        for (size_t x = 1; x < nmethods; x++) {
            for (size_t y = x; y > 0 && strcmp(methods[y - 1], methods[y]) > 0;
                 y--) {
                const char *t = methods[y];
                methods[y] = methods[y - 1];
                methods[y - 1] = t;
            }
        }
        len = (size_t)snprintf(method, size, "sum_module_estimates[");
        for (size_t j = 0; j < nmethods && len < size; j++) {
            len += (size_t)snprintf(
                method + len, size - len, "%s%s", j ? ", " : "", methods[j]);
        }
        if (len < size) {
            snprintf(method + len, size - len, "]");
        }
    }
    if (rows == 0 || out->overflow) {
        out->status = TS_UNAVAILABLE;
    }
    else if (all_complete) {
        out->status = TS_COMPLETE;
    }
    else {
        out->status = known_rows ? TS_PARTIAL : TS_UNAVAILABLE;
    }
    out->value = any_real ? ts_real((double)known + real) : ts_int(known);
    if (any_real && !isfinite(out->value.r)) {
        out->overflow = true; /* no JSON number */
        out->status = TS_UNAVAILABLE;
    }
}

/* The diagnostic of a total whose sum left the int64 or float range. */
static int
emit_overflow_diagnostic(const ts_emitter *e, int which)
{
    static const char *const messages[N_SUMMED] = {
        "OverflowError: the module_flops total exceeds the int64 or float "
        "range",
        "OverflowError: the macs total exceeds the int64 or float range",
        "OverflowError: the dmas total exceeds the int64 or float range",
    };
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "code"));
    TRY_EMIT(e->string(e->ctx, "module_metric_error"));
    TRY_EMIT(e->key(e->ctx, "severity"));
    TRY_EMIT(e->string(e->ctx, "warning"));
    TRY_EMIT(e->key(e->ctx, "metric"));
    TRY_EMIT(e->string(e->ctx, estimate_names[which]));
    TRY_EMIT(e->key(e->ctx, "message"));
    TRY_EMIT(e->string(e->ctx, messages[which]));
    return e->end_object(e->ctx);
}

static int
emit_model_metric(const ts_emitter *e,
                  const char *name,
                  int64_t value,
                  const char *unit)
{
    TRY_EMIT(e->key(e->ctx, name));
    return emit_metric(
        e, TS_COMPLETE, ts_int(value), unit, "model", "pytorch");
}

int
ts_session_emit_report(const ts_session *session,
                       const ts_emitter *e,
                       const json_t *context,
                       const json_t *inputs,
                       const ts_model_totals *totals,
                       const json_t *flop_report)
{
    const json_t *flop_diags = json_object_get(flop_report, "diagnostics");
    aggregate sums[N_SUMMED] = {0}; /* outlive the emission (text) */
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(emit_int_member(e, "schema_version", 1));
    TRY_EMIT(e->key(e->ctx, "context"));
    TRY_EMIT(e->begin_object(e->ctx));
    {
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)context, key, value)
        {
            TRY_EMIT(e->key(e->ctx, key));
            TRY_EMIT(e->tree(e->ctx, value));
        }
    }
    if (!session->full) {
        TRY_EMIT(e->key(e->ctx, "analysis_mode"));
        TRY_EMIT(e->string(e->ctx, "structure"));
    }
    TRY_EMIT(e->end_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "inputs"));
    TRY_EMIT(e->tree(e->ctx, inputs));
    TRY_EMIT(e->key(e->ctx, "layers"));
    TRY_EMIT(e->begin_array(e->ctx));
    for (size_t i = 0; i < session->nlayers; i++) {
        TRY_EMIT(emit_layer(e, session, &session->layers[i]));
    }
    TRY_EMIT(e->end_array(e->ctx));
    TRY_EMIT(e->key(e->ctx, "operator_flops"));
    TRY_EMIT(e->tree(e->ctx, flop_report));
    TRY_EMIT(e->key(e->ctx, "totals"));
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(emit_model_metric(
        e, "parameters", totals->trainable + totals->frozen, "elements"));
    TRY_EMIT(emit_model_metric(
        e, "trainable_parameters", totals->trainable, "elements"));
    TRY_EMIT(
        emit_model_metric(e, "frozen_parameters", totals->frozen, "elements"));
    TRY_EMIT(
        emit_model_metric(e, "parameter_bytes", totals->param_bytes, "bytes"));
    TRY_EMIT(emit_model_metric(
        e, "buffer_elements", totals->buffer_elements, "elements"));
    TRY_EMIT(
        emit_model_metric(e, "buffer_bytes", totals->buffer_bytes, "bytes"));
    for (int i = 0; i < N_SUMMED; i++) {
        TRY_EMIT(e->key(e->ctx, estimate_names[i]));
        if (session->full) {
            aggregate_estimate(session, i, &sums[i]);
            TRY_EMIT(emit_metric(e,
                                 sums[i].status,
                                 sums[i].value,
                                 estimate_units[i],
                                 "forward",
                                 sums[i].method));
        }
        else {
            TRY_EMIT(emit_metric(e,
                                 TS_UNAVAILABLE,
                                 ts_int(0),
                                 estimate_units[i],
                                 "forward",
                                 "not_requested"));
        }
        if (i == 0) {
            TRY_EMIT(e->key(e->ctx, "operator_flops"));
            TRY_EMIT(e->tree(e->ctx, json_object_get(flop_report, "total")));
        }
    }
    TRY_EMIT(e->end_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "diagnostics"));
    TRY_EMIT(e->begin_array(e->ctx));
    for (size_t i = 0; i < json_array_size(session->diagnostics); i++) {
        TRY_EMIT(e->tree(e->ctx, json_array_get(session->diagnostics, i)));
    }
    for (int i = 0; session->full && i < N_SUMMED; i++) {
        if (sums[i].overflow) {
            TRY_EMIT(emit_overflow_diagnostic(e, i));
        }
    }
    for (size_t i = 0; i < json_array_size(flop_diags); i++) {
        TRY_EMIT(e->tree(e->ctx, json_array_get(flop_diags, i)));
    }
    TRY_EMIT(e->end_array(e->ctx));
    return e->end_object(e->ctx);
}

json_t *
ts_session_report(ts_session *session,
                  json_t *context,
                  json_t *inputs,
                  const ts_model_totals *totals,
                  json_t *flop_report,
                  const char *torch_version,
                  ts_error *err)
{
    ts_json_builder *b = ts_json_builder_new();
    json_t *report = NULL;
    ts_emitter e;
    if (flop_report == NULL) {
        flop_report = ts_flop_report_not_requested(torch_version);
    }
    if (b != NULL && context != NULL && inputs != NULL
        && flop_report != NULL) {
        ts_json_builder_emitter(b, &e);
        if (ts_session_emit_report(
                session, &e, context, inputs, totals, flop_report)
            == 0) {
            report = ts_json_builder_take(b);
        }
    }
    if (report == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory building the report");
    }
    ts_json_builder_free(b);
    json_decref(context);
    json_decref(inputs);
    json_decref(flop_report);
    return report;
}

static int
compare_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool
ts_report_incomplete(const json_t *report, char **message)
{
    const json_t *totals = json_object_get(report, "totals");
    const json_t *diags = json_object_get(report, "diagnostics");
    const char *key;
    json_t *value;
    size_t n = 0, cap = json_object_size(totals) + json_array_size(diags);
    const char **names = malloc((cap ? cap : 1) * sizeof *names);
    bool incomplete = json_array_size(diags) > 0;
    size_t len = 0, size;
    char *text;

    *message = NULL;
    if (names == NULL) {
        return incomplete;
    }
    json_object_foreach((json_t *)totals, key, value)
    {
        const char *method =
            json_string_value(json_object_get(value, "method"));
        if (ts_metric_status(value) != TS_COMPLETE
            && !(method && strcmp(method, "not_requested") == 0)) {
            incomplete = true;
            names[n++] = key;
        }
    }
    for (size_t i = 0; i < json_array_size(diags); i++) {
        const char *metric = json_string_value(
            json_object_get(json_array_get(diags, i), "metric"));
        if (metric != NULL) {
            names[n++] = metric;
        }
    }
    qsort(names, n, sizeof *names, compare_cstr);
    size = 64;
    for (size_t i = 0; i < n; i++) {
        size += strlen(names[i]) + 2;
    }
    text = malloc(size);
    if (text != NULL) {
        len = (size_t)snprintf(text, size, "Analysis is incomplete for: ");
        for (size_t i = 0, shown = 0; i < n; i++) {
            if (i > 0 && strcmp(names[i], names[i - 1]) == 0) {
                continue;
            }
            len += (size_t)snprintf(
                text + len, size - len, "%s%s", shown++ ? ", " : "", names[i]);
        }
        snprintf(text + len, size - len, "%s.", n ? "" : "unknown metrics");
    }
    free(names);
    *message = text;
    return incomplete;
}
