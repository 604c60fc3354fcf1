/* render_report for benchmark reports (contract 1.13, 4.3): one
 * self-contained HTML page, with no script, built from a BenchmarkReport
 * or a BenchmarkComparison. AnalysisReports are not rendered here. */
#ifndef TORCHSCAN_RENDER_H
#define TORCHSCAN_RENDER_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* `text` with & < > " ' replaced by HTML character references. Returns a
 * malloc'd string (caller frees) or NULL when out of memory. */
char *ts_html_escape(const char *text);


/* The header verdict of a benchmark page: "Single workload measurement",
 * "Output check passed" or "Output check failed — gains withheld", plus
 * ". Recorded context changed: k1, k2" when a comparison's
 * context_changes is non-empty. Not escaped. Returns a malloc'd string or
 * NULL with err set (TS_EINVAL for an output_check other than
 * passed/failed). */
char *ts_render_verdict(const json_t *report, ts_error *err);

/* The HTML page of a BenchmarkReport or a BenchmarkComparison (one with
 * report_type "benchmark_comparison"). The report is validated first:
 * a BenchmarkReport as ts_benchmark_validate does, plus diagnostics,
 * operator_flops and profile consistency; a comparison's stored totals,
 * latency_change and context_changes must equal the ones recomputed from
 * its before and after reports. `title` is caller text and is escaped.
 * Deterministic; the report is not modified. Returns a malloc'd string
 * (caller frees) or NULL with err set (TS_EINVAL for an invalid report). */
char *ts_render_benchmark_html(const json_t *report,
                               const char *title,
                               ts_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_RENDER_H */
