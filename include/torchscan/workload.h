/* measure_workload (contract 1.12, 5.2): the totals every workload report
 * carries and the terminal summary. */
#ifndef TORCHSCAN_WORKLOAD_H
#define TORCHSCAN_WORKLOAD_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Selected measurements (the `metrics` argument, plus RSS when a command
 * was given). */
enum {
    TS_WORKLOAD_LATENCY = 1 << 0, /* first_call_latency, latency, iqr */
    TS_WORKLOAD_THROUGHPUT = 1 << 1,
    TS_WORKLOAD_FLOPS = 1 << 2,
    TS_WORKLOAD_MEMORY = 1 << 3,
    TS_WORKLOAD_RSS = 1 << 4,
    /* achieved_flops, and flops_utilization with a declared peak
     * (ts_workload_achieved) */
    TS_WORKLOAD_ACHIEVED = 1 << 5,
};

/* The seven totals of a workload report, in report order:
 * first_call_latency, latency, latency_iqr, throughput, operator_flops,
 * peak_memory, process_peak_rss. For each name: a copy of measured[name]
 * when the metric is selected and was measured; an unavailable placeholder
 * with method "not_requested" when it is not selected (even if measured);
 * an unavailable placeholder with method "unavailable" when it is selected
 * but was not produced. Placeholder units/scopes: seconds/first_call,
 * seconds/warmed_block_average (x2), "<work_unit>/s"/warmed_blocks,
 * FLOPs/workload, bytes/workload, bytes/child_process_lifetime. A selected
 * but unproduced peak_memory instead keeps the backend's `memory_scope` and
 * `memory_method` (when not NULL), so that reports stay comparable.
 * `measured` may be NULL. Returns a new object or NULL with err set. */
json_t *ts_workload_totals(const json_t *measured,
                           unsigned selected,
                           const char *work_unit,
                           const char *memory_scope,
                           const char *memory_method,
                           ts_error *err);

/* Achieved FLOP/s from a report's own totals: adds to `totals`
 *   achieved_flops     totals.operator_flops / totals.latency (FLOPs/s,
 *                      scope warmed_block_average, method
 *                      operator_flops_over_latency): the operator FLOPs of
 *                      one call over the warmed per-call latency;
 *   flops_utilization  (only when peak_flops > 0) achieved_flops /
 *                      peak_flops (unit fraction, same scope, method
 *                      achieved_over_declared_peak), the peak the caller
 *                      declared.
 * Each is complete when operator_flops is complete and latency is a
 * complete positive number; otherwise unavailable (method unavailable) and
 * a measurement_unavailable diagnostic for it, appended to `diagnostics`,
 * says why (FLOPs partial or not measured, latency not measured). The
 * caller validates peak_flops (a positive finite number); a value that is
 * not one is TS_EINVAL here. TS_OK, TS_EINVAL, TS_EFORMAT (totals not an
 * object) or TS_ENOMEM, with err set. */
int ts_workload_achieved(json_t *totals,
                         double peak_flops,
                         json_t *diagnostics,
                         ts_error *err);

/* The terminal summary of a BenchmarkReport (contract 5.2), without a
 * trailing newline:
 *
 *   Workload on cpu (1 PyTorch threads)
 *     First call: 0.449 ms
 *     ...
 *     PyTorch peak memory: 0.094 MiB
 *       Scope: PyTorch tracked CPU tensors
 *     Process peak RSS: unavailable (not requested)
 *     Profiler: not requested (separate instrumented pass)
 *     flops: aten.linear was observed 1 time(s), but no FLOP formula ...
 *
 * Seconds print as ms, bytes as MiB, other units unchanged; 3 decimals
 * with thousands separators. Totals missing from the report are skipped.
 * The Profiler line describes the profile the report holds: an attached
 * `profile` object is "complete", or "partial" when it has diagnostics,
 * whatever context.profile_status says (a profile attached after
 * measure_latency has none); without one, profile_status is shown
 * ("not requested" when absent), and a "complete"/"partial" status adds
 * ", but no profile is attached to this report".
 * Returns a malloc'd string (caller frees) or NULL with err set. */
char *ts_workload_summary(const json_t *report, ts_error *err);

/* Formats `value` like Python's f"{value:,.3f}" into buf; returns false
 * when buf is too small (512 bytes always suffice). */
bool ts_format_grouped(double value, char *buf, size_t size);

/* How a value of `unit` is displayed: seconds as "ms" and bytes as "MiB"
 * (*scale is the factor to apply), other units as they are. Seconds stay
 * seconds when `value` in ms would not be finite. */
const char *ts_display_unit(const char *unit, double value, double *scale);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_WORKLOAD_H */
