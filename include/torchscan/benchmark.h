/* compare_benchmarks (contract 1.11): validation of two BenchmarkReports,
 * context matching, and the BenchmarkComparison. The owner's output check
 * is a Python callable; the binding runs it between ts_benchmark_prepare
 * and ts_benchmark_comparison, outside any timing. */
#ifndef TORCHSCAN_BENCHMARK_H
#define TORCHSCAN_BENCHMARK_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Validates one BenchmarkReport: schema_version 1; context, inputs and
 * measurement objects; totals of valid MetricResults including
 * first_call_latency, latency, latency_iqr and throughput; seconds for the
 * timing metrics and "<context.work_unit>/s" for throughput ("Invalid
 * benchmark timing unit ..."); complete timing values > 0, latency_iqr
 * >= 0 ("Invalid benchmark timing value ..."). `which` names the report
 * in messages. TS_EINVAL with err set on failure. */
int ts_benchmark_validate(const json_t *report,
                          const char *which,
                          ts_error *err);

/* Validates both reports, requires equal contexts on the compared keys
 * ("Benchmark contexts differ or are missing: <key>.") and equal
 * caller-supplied input metadata ("Comparisons require matching
 * caller-supplied input metadata."), and diffs the totals
 * (ts_diff_metrics: an incompatible unit, scope or method is TS_EINVAL).
 * On success *diffs is a new reference. */
int ts_benchmark_prepare(const json_t *before,
                         const json_t *after,
                         json_t **diffs,
                         ts_error *err);

/* The BenchmarkComparison {schema_version, report_type, before, after,
 * totals, output_check, latency_change, context_changes}. `diffs` (stolen)
 * is ts_benchmark_prepare's result; when `check_passed` is false every
 * delta is withheld (status unavailable, delta null). Returns a new
 * reference or NULL with err set. */
json_t *ts_benchmark_comparison(const json_t *before,
                                const json_t *after,
                                json_t *diffs,
                                bool check_passed,
                                ts_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_BENCHMARK_H */
