/* Operator statistics (opstats.h): per-operator counts on a flat array while
 * the counter runs, the FlopReport at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record_util.h"
#include "torchscan/op_formulas.h"
#include "torchscan/opstats.h"
#include "torchscan/phase.h"

typedef struct op_record {
    char *name;
    int64_t flops;
    int64_t counted_calls;
    int64_t ignored_calls;
    int64_t uncounted_calls;
    int64_t collective_calls; /* ts_opstats_record_bytes calls */
    int64_t bytes_moved;
    const char *ignore_reason;
    /* matrix products of its calls (ts_opstats_add_matrix) */
    int64_t matrix_flops;
    bool has_matrix;
    /* The first incomplete call's reason, when its formula gave one (owned);
     * NULL for the generic wording. */
    char *incomplete_note;
    bool incomplete;
    bool unsupported;
    /* per phase (phase.h): counted FLOPs and counted calls */
    int64_t phase_flops[TS_PHASE_COUNT];
    int64_t phase_calls[TS_PHASE_COUNT];
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
    int64_t collective_bytes;
    bool any_collective;
    bool bytes_partial; /* a call's bytes unknown, or a sum overflowed */
    /* per phase: counted FLOPs, whether a call of that phase made the
     * count a lower bound, whether any call of that phase was recorded */
    int64_t phase_total[TS_PHASE_COUNT];
    bool phase_partial[TS_PHASE_COUNT];
    bool phase_seen[TS_PHASE_COUNT];
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
        free(stats->ops[i].incomplete_note);
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
    return ts_opstats_record_in(stats,
                                TS_PHASE_FORWARD,
                                id,
                                kind,
                                flops,
                                incomplete,
                                message,
                                ignore_reason);
}

int
ts_opstats_record_in(ts_opstats *stats,
                     ts_phase phase,
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
    if (id < 0 || (size_t)id >= stats->nops
        || (unsigned)phase >= TS_PHASE_COUNT) {
        return TS_EINVAL;
    }
    rec = &stats->ops[id];
    stats->phase_seen[phase] = true;
    switch (kind) {
        case TS_OPCALL_COUNTED:
            if (ts_add(rec->flops, flops, &op_sum)
                && ts_add(stats->total, flops, &total)) {
                rec->flops = op_sum;
                stats->total = total;
                rec->counted_calls++;
                /* each phase's sums are parts of the total: they fit */
                rec->phase_flops[phase] += flops;
                rec->phase_calls[phase]++;
                stats->phase_total[phase] += flops;
                rec->incomplete |= incomplete;
                stats->phase_partial[phase] |= incomplete;
                if (incomplete && message != NULL && message[0] != '\0'
                    && rec->incomplete_note == NULL) {
                    rec->incomplete_note = dup_string(message);
                    if (rec->incomplete_note == NULL) {
                        return TS_ENOMEM;
                    }
                }
                return TS_OK;
            }
            /* The sums keep what fits; the call is noted like a formula
             * whose count does not fit (the total becomes partial). */
            stats->phase_partial[phase] = true;
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
            stats->phase_partial[phase] = true;
            return TS_OK;
        case TS_OPCALL_UNSUPPORTED:
            stats->phase_partial[phase] = true;
            return note_unsupported(stats, rec, id, message);
        default:
            return TS_EINVAL;
    }
}

int
ts_opstats_add_matrix(ts_opstats *stats, int id, int64_t matrix_flops)
{
    op_record *rec;
    if (id < 0 || (size_t)id >= stats->nops || matrix_flops < 0) {
        return TS_EINVAL;
    }
    rec = &stats->ops[id];
    if (!ts_add(rec->matrix_flops, matrix_flops, &rec->matrix_flops)) {
        rec->matrix_flops = INT64_MAX;
    }
    rec->has_matrix = true;
    return TS_OK;
}

int
ts_opstats_record_bytes(ts_opstats *stats, int id, int64_t bytes)
{
    op_record *rec;
    int64_t op_sum, total;
    if (id < 0 || (size_t)id >= stats->nops) {
        return TS_EINVAL;
    }
    rec = &stats->ops[id];
    stats->any_collective = true;
    rec->collective_calls++;
    if (bytes < 0) {
        stats->bytes_partial = true;
        return TS_OK;
    }
    if (!ts_add(rec->bytes_moved, bytes, &op_sum)
        || !ts_add(stats->collective_bytes, bytes, &total)) {
        stats->bytes_partial = true;
        return TS_EOVERFLOW;
    }
    rec->bytes_moved = op_sum;
    stats->collective_bytes = total;
    return TS_OK;
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

/* The records sorted by operator name: malloc'd (the caller frees), NULL
 * when out of memory. */
static const op_record **
sorted_by_name(const ts_opstats *stats)
{
    const op_record **sorted =
        malloc((stats->nops ? stats->nops : 1) * sizeof(const op_record *));
    if (sorted == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < stats->nops; i++) {
        sorted[i] = &stats->ops[i];
    }
    qsort(sorted,
          stats->nops,
          sizeof(const op_record *),
          compare_records_by_name);
    return sorted;
}

/* by_operator {name: flops} of the counted operators, matrix_product_flops
 * {name: flops} and ignored_operators {name: {calls, reason}}, in name
 * order. TS_OK or TS_ENOMEM. */
static int
fill_operator_maps(const op_record *const *sorted,
                   size_t n,
                   json_t *by_op,
                   json_t *matrix,
                   json_t *ignored)
{
    for (size_t i = 0; i < n; i++) {
        const op_record *rec = sorted[i];
        if (rec->counted_calls > 0
            && json_object_set_new(
                by_op, rec->name, json_integer(rec->flops))) {
            return TS_ENOMEM;
        }
        if (rec->has_matrix
            && json_object_set_new(
                matrix, rec->name, json_integer(rec->matrix_flops))) {
            return TS_ENOMEM;
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
            return TS_ENOMEM;
        }
    }
    return TS_OK;
}

/* uncounted_operator for each operator that ran without a formula (and
 * had no refused call), in name order. TS_OK or TS_ENOMEM. */
static int
add_uncounted_diagnostics(const op_record *const *sorted,
                          size_t n,
                          json_t *diags)
{
    char message[512];
    for (size_t i = 0; i < n; i++) {
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
            if (ts_diagnostic_append(diags,
                                     "uncounted_operator",
                                     "flops",
                                     NULL,
                                     rec->name,
                                     message)) {
                return TS_ENOMEM;
            }
        }
    }
    return TS_OK;
}

/* unsupported_operator_formula for each distinct operator and refusal
 * message, in first-seen order. TS_OK or TS_ENOMEM. */
static int
add_refused_diagnostics(const ts_opstats *stats, json_t *diags)
{
    for (size_t i = 0; i < stats->nnotes; i++) {
        const op_record *rec = &stats->ops[stats->notes[i].id];
        if (ts_diagnostic_append(diags,
                                 "unsupported_operator_formula",
                                 "flops",
                                 NULL,
                                 rec->name,
                                 stats->notes[i].message)) {
            return TS_ENOMEM;
        }
    }
    return TS_OK;
}

/* incomplete_operator_formula for each operator counted with a formula
 * that leaves work out, in name order. TS_OK or TS_ENOMEM. */
static int
add_incomplete_diagnostics(const op_record *const *sorted,
                           size_t n,
                           json_t *diags)
{
    char message[512];
    for (size_t i = 0; i < n; i++) {
        const op_record *rec = sorted[i];
        if (!rec->incomplete) {
            continue;
        }
        /* the formula's own reason, or what native formulas leave out */
        snprintf(message,
                 sizeof message,
                 "%s was counted with a formula that leaves work out (%s); "
                 "the count is a lower bound.",
                 rec->name,
                 rec->incomplete_note != NULL ? rec->incomplete_note
                                              : "complex arithmetic");
        if (ts_diagnostic_append(diags,
                                 "incomplete_operator_formula",
                                 "flops",
                                 NULL,
                                 rec->name,
                                 message)) {
            return TS_ENOMEM;
        }
    }
    return TS_OK;
}

/* "collectives" {name: {calls, bytes_moved}} in name order and the
 * "collective_bytes" total, set on the report. TS_OK or TS_ENOMEM. */
static int
add_collectives(const ts_opstats *stats,
                const op_record *const *sorted,
                json_t *report)
{
    json_t *by_op = json_object(), *total;
    for (size_t i = 0; by_op != NULL && i < stats->nops; i++) {
        const op_record *rec = sorted[i];
        if (rec->collective_calls > 0
            && json_object_set_new(by_op,
                                   rec->name,
                                   json_pack("{s:I, s:I}",
                                             "calls",
                                             (json_int_t)rec->collective_calls,
                                             "bytes_moved",
                                             (json_int_t)rec->bytes_moved))) {
            json_decref(by_op);
            return TS_ENOMEM;
        }
    }
    if (by_op == NULL || json_object_set_new(report, "collectives", by_op)) {
        return TS_ENOMEM;
    }
    total = ts_metric_new(stats->bytes_partial ? TS_PARTIAL : TS_COMPLETE,
                          ts_int(stats->collective_bytes),
                          "bytes",
                          "workload",
                          TS_COLLECTIVE_CONVENTION);
    if (total == NULL
        || json_object_set_new(report, "collective_bytes", total)) {
        return TS_ENOMEM;
    }
    return TS_OK;
}

bool
ts_opstats_has_phases(const ts_opstats *stats)
{
    return stats->phase_seen[TS_PHASE_BACKWARD]
           || stats->phase_seen[TS_PHASE_OPTIMIZER];
}

int64_t
ts_opstats_phase_total(const ts_opstats *stats, ts_phase phase)
{
    return (unsigned)phase < TS_PHASE_COUNT ? stats->phase_total[phase] : 0;
}

/* One phase's entry {total, by_operator, by_module, layers}; `layers`
 * (borrowed, may be NULL) is the session's {by_module, layers} of that
 * phase. New reference, or NULL when out of memory. */
static json_t *
phase_entry(const ts_opstats *stats,
            const op_record *const *sorted,
            ts_phase phase,
            const char *method,
            json_t *layers)
{
    json_t *by_op = json_object(), *total, *by_module, *rows;
    for (size_t i = 0; by_op != NULL && i < stats->nops; i++) {
        const op_record *rec = sorted[i];
        if (rec->phase_calls[phase] > 0
            && json_object_set_new(
                by_op, rec->name, json_integer(rec->phase_flops[phase]))) {
            json_decref(by_op);
            return NULL;
        }
    }
    total =
        ts_metric_new(stats->phase_partial[phase] ? TS_PARTIAL : TS_COMPLETE,
                      ts_int(stats->phase_total[phase]),
                      "FLOPs",
                      "workload",
                      method);
    by_module = layers ? json_object_get(layers, "by_module") : NULL;
    rows = layers ? json_object_get(layers, "layers") : NULL;
    by_module = by_module ? json_incref(by_module) : json_object();
    rows = rows ? json_incref(rows) : json_array();
    /* json_pack's "o" steals every reference, also on error */
    return json_pack("{s:o, s:o, s:o, s:o}",
                     "total",
                     total,
                     "by_operator",
                     by_op,
                     "by_module",
                     by_module,
                     "layers",
                     rows);
}

/* "phases" {forward, backward, optimizer}, set on the report. TS_OK or
 * TS_ENOMEM. */
static int
add_phases(const ts_opstats *stats,
           const op_record *const *sorted,
           const char *method,
           json_t *phase_layers,
           json_t *report)
{
    json_t *phases = json_object();
    if (phases == NULL || json_object_set_new(report, "phases", phases)) {
        return TS_ENOMEM;
    }
    for (int p = 0; p < TS_PHASE_COUNT; p++) {
        const char *name = ts_phase_name((ts_phase)p);
        json_t *entry = phase_entry(
            stats,
            sorted,
            (ts_phase)p,
            method,
            phase_layers ? json_object_get(phase_layers, name) : NULL);
        if (entry == NULL || json_object_set_new(phases, name, entry)) {
            return TS_ENOMEM;
        }
    }
    return TS_OK;
}

json_t *
ts_opstats_report(const ts_opstats *stats,
                  const char *torch_version,
                  const char *method,
                  json_t *by_module)
{
    return ts_opstats_report_phased(
        stats, torch_version, method, by_module, NULL);
}

json_t *
ts_opstats_report_phased(const ts_opstats *stats,
                         const char *torch_version,
                         const char *method,
                         json_t *by_module,
                         json_t *phase_layers)
{
    json_t *report = NULL, *by_op = NULL, *ignored = NULL, *diags = NULL;
    json_t *matrix = NULL;
    json_t *total = NULL;
    const op_record **sorted = NULL;

    if (by_module == NULL) {
        by_module = json_object();
    }
    by_op = json_object();
    matrix = json_object();
    ignored = json_object();
    diags = json_array();
    if (by_module == NULL || by_op == NULL || matrix == NULL || ignored == NULL
        || diags == NULL) {
        goto error;
    }
    sorted = sorted_by_name(stats);
    /* Diagnostics: uncounted operators (sorted by name), refused formulas
     * (first-seen order), then incomplete formulas (sorted). */
    if (sorted == NULL
        || fill_operator_maps(sorted, stats->nops, by_op, matrix, ignored)
               != TS_OK
        || add_uncounted_diagnostics(sorted, stats->nops, diags) != TS_OK
        || add_refused_diagnostics(stats, diags) != TS_OK
        || add_incomplete_diagnostics(sorted, stats->nops, diags) != TS_OK) {
        goto error;
    }
    total = ts_metric_new(json_array_size(diags) ? TS_PARTIAL : TS_COMPLETE,
                          ts_int(stats->total),
                          "FLOPs",
                          "workload",
                          method);
    if (total == NULL) {
        goto error;
    }
    report = json_pack(
        "{s:i, s:{s:s, s:s, s:s}, s:o, s:o, s:o, s:o, s:o, "
        "s:o}",
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
        "matrix_product_flops",
        matrix,
        "ignored_operators",
        ignored,
        "diagnostics",
        diags);
    /* json_pack's "o" stole every reference, also on error */
    if (report != NULL
        && ((stats->any_collective
             && add_collectives(stats, sorted, report) != TS_OK)
            || (ts_opstats_has_phases(stats)
                && add_phases(stats, sorted, method, phase_layers, report)
                       != TS_OK))) {
        json_decref(report);
        report = NULL;
    }
    free(sorted);
    json_decref(phase_layers);
    return report;
error:
    free(sorted);
    json_decref(phase_layers);
    json_decref(by_module);
    json_decref(by_op);
    json_decref(matrix);
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
    return json_pack("{s:i, s:{s:s, s:s}, s:o, s:{}, s:{}, s:{}, s:{}, s:[]}",
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
                     "matrix_product_flops",
                     "ignored_operators",
                     "diagnostics");
}
