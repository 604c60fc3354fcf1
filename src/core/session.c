/* Crawl sessions (session.h): the module table and one record per module
 * call, kept on flat arrays while the forward runs, with the module formulas
 * of each call and the ownership of estimates across the call tree. The
 * report is written from these records by session_report.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record_util.h"
#include "session_internal.h"
#include "torchscan/token_deps.h"

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

static void mark_innermost(ts_session *session);

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
        json_decref(session->layers[i].tokens);
        json_decref(session->layers[i].token_diagnostic);
        for (int k = 0; k < N_ESTIMATES; k++) {
            free(session->layers[i].estimates[k].owned);
        }
    }
    free(session->modules);
    free(session->layers);
    free(session->stack);
    free(session->ops);
    json_decref(session->diagnostics);
    ts_phase_marks_free(&session->marks);
    ts_saved_free(session->saved);
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

void
ts_session_set_module_matchable(ts_session *session,
                                int module,
                                bool matchable)
{
    if (module >= 0 && (size_t)module < session->nmodules) {
        session->modules[module].matchable = matchable;
    }
}

bool
ts_session_wants_ops(const ts_session *session)
{
    return session->full && session->depth > 0
           && session
                  ->modules[session->layers[session->stack[session->depth - 1]]
                                .module]
                  .matchable;
}

int
ts_session_record_op(ts_session *session, const ts_match_op *op)
{
    if (!ts_session_wants_ops(session)) {
        return TS_OK;
    }
    if (grow((void **)&session->ops,
             &session->ops_cap,
             session->nops + 1,
             sizeof(ts_match_op))) {
        return TS_ENOMEM;
    }
    session->ops[session->nops] = *op;
    session->ops[session->nops].layer = session->stack[session->depth - 1];
    session->nops++;
    return TS_OK;
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
    layer->ops_start = session->nops;
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
    mark_innermost(session);
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

bool
ts_session_layer_wants_tokens(const ts_session *session, int layer)
{
    const layer_record *l;
    const module_record *m;
    if (layer < 0 || (size_t)layer >= session->nlayers || !session->full) {
        return false;
    }
    l = &session->layers[layer];
    m = &session->modules[l->module];
    return m->metric_leaf && ts_token_kind_supported(m->desc.kind)
           && !((l->covered | l->present) & RF_BIT);
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
    return ts_diagnostic_append(
        session->diagnostics, code, metric, path, NULL, message);
}

/* With a clock: from the autograd sequence number now on, nodes belong to
 * the innermost open call. A mark that cannot be kept (out of memory)
 * leaves the map without answers rather than with wrong ones. */
static void
mark_innermost(ts_session *session)
{
    if (session->clock != NULL
        && ts_phase_marks_add(&session->marks,
                              session->clock(session->clock_ctx),
                              ts_session_current_layer(session))
               != TS_OK) {
        session->marks.unordered = true;
    }
}

void
ts_session_set_clock(ts_session *session,
                     uint64_t (*clock)(void *ctx),
                     void *ctx)
{
    session->clock = clock;
    session->clock_ctx = ctx;
    if (clock != NULL) {
        mark_innermost(session);
    }
}

int
ts_session_layer_of_seq(const ts_session *session, uint64_t seq)
{
    return ts_phase_marks_find(&session->marks, seq);
}

void
ts_session_add_phase_op(ts_session *session,
                        int layer,
                        ts_phase phase,
                        int64_t flops,
                        bool complete)
{
    if (layer >= 0 && (size_t)layer < session->nlayers
        && (unsigned)phase < TS_PHASE_COUNT) {
        layer_record *l = &session->layers[layer];
        if (!ts_add(l->phase_flops[phase], flops, &l->phase_flops[phase])) {
            l->phase_flops[phase] = INT64_MAX;
            l->phase_incomplete[phase] = true;
        }
        l->phase_incomplete[phase] |= !complete;
    }
}

int
ts_session_enable_saved(ts_session *session)
{
    if (session->saved == NULL) {
        session->saved = ts_saved_new();
    }
    return session->saved != NULL ? TS_OK : TS_ENOMEM;
}

ts_saved *
ts_session_saved(ts_session *session)
{
    return session->saved;
}

int
ts_session_current_layer(const ts_session *session)
{
    return session->depth ? session->stack[session->depth - 1] : -1;
}

int
ts_session_layer_identity(const ts_session *session,
                          int layer,
                          const char **path,
                          int32_t *call_index)
{
    if (layer < 0 || (size_t)layer >= session->nlayers) {
        return -1;
    }
    *path = session->modules[session->layers[layer].module].path;
    *call_index = session->layers[layer].call_index;
    return 0;
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
        return ts_diagnostic_append(session->diagnostics,
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
        /* every wanted estimate, the receptive-field trio included, with a
         * diagnostic each (contract 1.3, step 4) */
        for (int i = 0; i < N_ESTIMATES; i++) {
            if (!(wanted & (1u << i))) {
                continue;
            }
            slot_reset(&slots[i]);
            slots[i].status = TS_UNAVAILABLE;
            slots[i].method = MODULE_METHOD;
            layer->present |= (uint8_t)(1u << i);
            if (ts_diagnostic_append(session->diagnostics,
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

/* Records a child's call among the operators of its parent (now the
 * innermost call, matchable): where it happened, its family and output. */
static int
record_child(ts_session *session,
             const module_record *child,
             const ts_module_call *call)
{
    ts_match_op op;
    memset(&op, 0, sizeof op);
    op.code = TS_MOP_CHILD;
    op.counted = true;
    op.nargs = 1;
    op.args[0].kind = TS_ARG_INT;
    op.args[0].i = child->desc.kind;
    if (call != NULL && call->has_output) {
        op.nouts = 1;
        op.outs[0] = call->output;
    }
    return ts_session_record_op(session, &op);
}

/* Matches a matchable module's call against the signatures with the
 * operators it ran itself: 1 matched (*match filled), 0 not, or a negative
 * status. */
static int
match_layer(ts_session *session,
            const layer_record *layer,
            const module_record *m,
            const ts_module_call *call,
            ts_match_result *match)
{
    ts_match_call mc;
    memset(&mc, 0, sizeof mc);
    mc.ops = session->ops + layer->ops_start;
    mc.nops = session->nops - layer->ops_start;
    mc.leaf = m->metric_leaf;
    if (call != NULL) {
        mc.has_input = call->has_input;
        mc.has_output = call->has_output;
        mc.input = call->input;
        mc.output = call->output;
    }
    return ts_match_call_estimates(&mc, match);
}

/* The estimates a signature gave a call (method
 * torchscan_module_formula:signature_<name>), or, for a composite whose
 * own work no signature recognized, "not supported" with the reason. */
static int
estimate_matched(ts_session *session,
                 layer_record *layer,
                 const module_record *m,
                 const ts_match_result *match,
                 unsigned wanted)
{
    ts_module_estimates est = match->estimates;
    const ts_estimate *all[N_ESTIMATES] = {
        &est.flops, &est.macs, &est.dmas, &est.rf, &est.stride, &est.padding};
    int first_rf = -1;
    if (match->uncovered) {
        ts_estimate unsupported;
        memset(&unsupported, 0, sizeof unsupported);
        unsupported.kind = TS_EST_UNSUPPORTED;
        snprintf(unsupported.message,
                 sizeof unsupported.message,
                 "Module type not supported: %s (it computes matrix products "
                 "or layers itself, and no signature recognizes them)",
                 m->type_name);
        est.flops = est.macs = est.dmas = unsupported;
        est.rf = est.stride = est.padding = unsupported;
    }
    for (int i = 0; i < N_ESTIMATES; i++) {
        int rc;
        if (!(wanted & (1u << i))) {
            continue;
        }
        if (i >= 3 && first_rf < 0) {
            first_rf = i;
        }
        slot_reset(&layer->estimates[i]);
        rc = store_estimate(session,
                            &layer->estimates[i],
                            m->path,
                            i,
                            all[i],
                            i < 3 || i == first_rf);
        if (rc != TS_OK) {
            return rc;
        }
        if (!match->uncovered && all[i]->kind != TS_EST_NOT_APPLICABLE) {
            layer->estimates[i].method = match->method;
        }
        layer->present |= (uint8_t)(1u << i);
    }
    return TS_OK;
}

/* The token dependencies of a native attention or Transformer row whose
 * receptive field the built-in estimates just answered, with their
 * unsupported_token_dependencies diagnostic when the call's masks or
 * structure leave them unknown. A failed call's are unavailable: its
 * module_forward_error says why. */
static int
record_tokens(ts_session *session,
              layer_record *layer,
              const module_record *m,
              bool failed,
              const ts_module_call *call)
{
    ts_token_result result;
    json_t *tokens;
    memset(&result, 0, sizeof result);
    if (!failed && (call == NULL || !call->has_input || !call->has_output)) {
        snprintf(result.message,
                 sizeof result.message,
                 "Token dependencies unavailable: the call did not expose "
                 "its input and output tensors.");
    }
    else if (!failed) {
        ts_module_call named = *call;
        int rc;
        named.type_name = m->type_name;
        rc = ts_token_dependencies(&m->desc, &named, &result);
        if (rc != TS_OK) {
            return rc;
        }
    }
    tokens = ts_token_result_json(&result);
    if (tokens == NULL) {
        return TS_ENOMEM;
    }
    json_decref(layer->tokens);
    layer->tokens = tokens;
    if (!result.complete && result.message[0] != '\0') {
        if (ts_diagnostic_append(session->diagnostics,
                                 "unsupported_token_dependencies",
                                 "token_dependencies",
                                 m->path,
                                 NULL,
                                 result.message)) {
            return TS_ENOMEM;
        }
        json_decref(layer->token_diagnostic);
        layer->token_diagnostic = json_incref(json_array_get(
            session->diagnostics, json_array_size(session->diagnostics) - 1));
    }
    return TS_OK;
}

/* Drops a layer's token dependencies and their diagnostic (an owner took
 * its receptive field after the fact). */
static void
drop_tokens(ts_session *session, layer_record *layer)
{
    json_decref(layer->tokens);
    layer->tokens = NULL;
    if (layer->token_diagnostic == NULL) {
        return;
    }
    for (size_t i = json_array_size(session->diagnostics); i-- > 0;) {
        if (json_array_get(session->diagnostics, i)
            == layer->token_diagnostic) {
            json_array_remove(session->diagnostics, i);
            break;
        }
    }
    json_decref(layer->token_diagnostic);
    layer->token_diagnostic = NULL;
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
    ts_match_result match;
    bool matched = false;
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
    mark_innermost(session);
    layer = &session->layers[index];
    m = &session->modules[module];
    json_decref(layer->output);
    layer->output = NULL;
    layer->failed = failed;
    memset(&match, 0, sizeof match);
    if (failed) {
        json_decref(output);
        if (ts_diagnostic_append(session->diagnostics,
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
    if (m->matchable) {
        int rc = session->full && !failed
                     ? match_layer(session, layer, m, call, &match)
                     : 0;
        /* the call's operators are spent, matched or not */
        session->nops = layer->ops_start;
        if (rc < 0) {
            return rc;
        }
        matched = rc == 1;
    }
    if (!failed && ts_session_wants_ops(session)
        && record_child(session, m, call) != TS_OK) {
        return TS_ENOMEM;
    }
    if (session->full
        && (m->metric_leaf || m->handler || matched || match.uncovered)) {
        /* Leaves get formulas for what handlers and owners left; a handler
         * row whose forward failed gets its remaining metrics as
         * forward_failed. A composite whose own operators matched a
         * signature (or hold work none recognized) gets its estimates for
         * that work. */
        unsigned wanted = TS_ALL_ESTIMATES & ~(unsigned)layer->covered
                          & ~(unsigned)layer->present;
        int rc;
        if (!m->metric_leaf && !matched && !match.uncovered) {
            wanted = failed ? wanted : 0;
        }
        rc = matched || match.uncovered
                 ? estimate_matched(session, layer, m, &match, wanted)
                 : estimate_layer(session, layer, m, failed, call, wanted);
        if (rc == TS_OK && m->metric_leaf && (wanted & RF_BIT)
            && ts_token_kind_supported(m->desc.kind)) {
            rc = record_tokens(session, layer, m, failed, call);
        }
        if (rc != TS_OK) {
            return rc;
        }
    }
    return index;
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
        if (ts_diagnostic_append(
                session->diagnostics,
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
    /* an estimate the owner already holds (a handler supplied it for the
     * call alone) is not taken over */
    mask &= TS_ALL_ESTIMATES & ~(unsigned)owner->covered
            & ~(unsigned)owner->present;
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
        if (mask & RF_BIT) {
            drop_tokens(session, l);
        }
    }
    return TS_OK;
}
