/* Operator statistics: what one operator counter observed (calls per
 * operator packet, counted FLOPs, ignored, uncounted and refused calls),
 * written as a FlopReport. The binding's dispatch mode feeds them, for
 * measure_flops and for a crawl (whose AnalysisReport embeds the
 * FlopReport, session.h).
 */
#ifndef TORCHSCAN_OPSTATS_H
#define TORCHSCAN_OPSTATS_H

#include "torchscan/core.h"
#include "torchscan/phase.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_opstats ts_opstats;

/* New, empty statistics, owned by the caller; NULL on allocation failure. */
ts_opstats *ts_opstats_new(void);

/* Frees the statistics with the names and messages they copied (NULL is a
 * no-op). */
void ts_opstats_free(ts_opstats *stats);

/* Registers an operator packet name (copied) and returns its id (>= 0), the
 * same id for the same name; negative TS_E* on failure. */
int ts_opstats_intern(ts_opstats *stats, const char *packet_name);

/* How an observed call was handled. */
typedef enum {
    TS_OPCALL_COUNTED = 0, /* flops counted (may be 0) */
    TS_OPCALL_IGNORED,     /* on the ignore list (reason from the table) */
    TS_OPCALL_UNCOUNTED,   /* no formula: uncounted_operator */
    TS_OPCALL_UNSUPPORTED, /* formula refused: unsupported_operator_formula */
} ts_opcall_kind;

/* Records one call of operator `id`. For COUNTED, `flops` is added to the
 * operator's total and to the statistics' total (a crawl attributes them to
 * its layer with ts_session_add_layer_op); `incomplete` adds one
 * incomplete_operator_formula diagnostic per operator, whose message names
 * `message` (copied, the first incomplete call's) when it is non-empty, and
 * otherwise the work native formulas leave out. For UNSUPPORTED,
 * `message` (copied) is the reason (one diagnostic per distinct operator and
 * message). For IGNORED, `ignore_reason` is kept by address (a static string
 * of the operator table). A COUNTED call whose flops would overflow a sum
 * is recorded as UNSUPPORTED instead and returns TS_EOVERFLOW (the sums are
 * unchanged). Otherwise TS_OK, TS_EINVAL for an unknown id or kind, or
 * TS_ENOMEM. */
int ts_opstats_record(ts_opstats *stats,
                      int id,
                      ts_opcall_kind kind,
                      int64_t flops,
                      bool incomplete,
                      const char *message,
                      const char *ignore_reason);

/* ts_opstats_record for an operator of phase `phase` (phase.h):
 * ts_opstats_record is this with TS_PHASE_FORWARD. Each phase keeps its
 * own counted sums (per operator and in all), which add up to the
 * statistics' sums, and its own status: an uncounted, refused, overflowing
 * or incomplete call makes its phase partial. TS_EINVAL also for a phase
 * out of range. */
int ts_opstats_record_in(ts_opstats *stats,
                         ts_phase phase,
                         int id,
                         ts_opcall_kind kind,
                         int64_t flops,
                         bool incomplete,
                         const char *message,
                         const char *ignore_reason);

/* Whether a call of the backward or the optimizer phase was recorded (any
 * kind): the FlopReport then has "phases". */
bool ts_opstats_has_phases(const ts_opstats *stats);

/* The counted FLOPs of one phase (0 for a phase out of range). */
int64_t ts_opstats_phase_total(const ts_opstats *stats, ts_phase phase);

/* Adds `matrix_flops`, the matrix products of one call of operator `id`
 * counted as FlopCounterMode counts them, to the operator's
 * matrix_product_flops entry (listed, possibly with 0, once this was
 * called). Independent of the call's record: the operator counter adds the
 * products of calls it counts under another name (the kernels and the math
 * path of an attention, listed as aten.scaled_dot_product_attention) to the
 * operator that ran them. TS_OK, TS_EINVAL for an unknown id or a negative
 * count; a sum past INT64_MAX stays at INT64_MAX. */
int ts_opstats_add_matrix(ts_opstats *stats, int id, int64_t matrix_flops);
/* Records the bytes one call of collective `id` moved
 * (torchscan_collective_bytes_v1), after its ts_opstats_record: the
 * operator is listed in the FlopReport's `collectives` {calls, bytes_moved}
 * and the bytes add to its `collective_bytes` total. `bytes` < 0: the
 * call's bytes are unknown (its formula refused it), and collective_bytes
 * becomes partial. A sum that would overflow keeps what fit, the total
 * becomes partial, and TS_EOVERFLOW is returned; otherwise TS_OK, or
 * TS_EINVAL for an unknown id. */
int ts_opstats_record_bytes(ts_opstats *stats, int id, int64_t bytes);

/* Sum of counted flops (the known value of the total). */
int64_t ts_opstats_total(const ts_opstats *stats);

/* Builds the FlopReport {schema_version, context, total, by_module,
 * by_operator, matrix_product_flops, ignored_operators, diagnostics}, plus
 * {collectives, collective_bytes} when a collective was recorded
 * (ts_opstats_record_bytes). `by_module` (stolen, also on failure; NULL for
 * {}) is inserted as given. New reference, or NULL when an allocation
 * failed. */
json_t *ts_opstats_report(const ts_opstats *stats,
                          const char *torch_version,
                          const char *method,
                          json_t *by_module);

/* ts_opstats_report, plus, when ts_opstats_has_phases, "phases":
 * {forward, backward, optimizer}, each {total (MetricResult, scope
 * workload, `method`), by_operator {name: flops of the calls of that
 * phase}, by_module, layers}. `phase_layers` (stolen, also on failure;
 * NULL: none) is {phase name: {by_module, layers}} as
 * ts_session_phase_layers writes it; a phase it lacks gets {} and []. */
json_t *ts_opstats_report_phased(const ts_opstats *stats,
                                 const char *torch_version,
                                 const char *method,
                                 json_t *by_module,
                                 json_t *phase_layers);

/* The FlopReport stub of structure mode (everything not_requested). New
 * reference, or NULL when an allocation failed. */
json_t *ts_flop_report_not_requested(const char *torch_version);

/* The method string of operator FLOPs. */
#define TS_OPERATOR_METHOD "torchscan_dispatch_counter"

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_OPSTATS_H */
