/* render_report (contract 1.13, 4.1-4.3): offline pages of reports.
 *
 * An AnalysisReport renders as one self-contained HTML page (summary
 * cards, five metric views switched by CSS radio buttons, each with a
 * module cost map, a rail of unknown/zero/small contributions, ranked call
 * evidence and an inspector; per-call operator FLOPs; an appendix with
 * every exact value) or as a standalone SVG of one view. With `before`, a
 * comparison: paired before/after bars on one scale, a diverging colour
 * for the change, removed modules on the rail, and execution deltas
 * withheld (with reasons) when inputs or the recorded context differ.
 *
 * A BenchmarkReport or BenchmarkComparison renders as a minimal HTML page
 * without script. */
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

/* The page of an AnalysisReport. `format` is "html" or "svg"; `metric` is
 * the view shown first (HTML) or drawn (SVG): module_flops, macs, dmas,
 * parameters or parameter_bytes; `title` is caller text (escaped; control
 * characters refused). `before` (NULL for none) is the earlier report of a
 * comparison. Both reports are checked with ts_analysis_report_check and
 * their text with ts_json_data_check; compare_reports' errors propagate.
 * Deterministic (identical input gives identical bytes); the reports are
 * not modified. Returns a malloc'd string (caller frees) or NULL with err
 * set: TS_EINVAL for a bad argument, TS_EFORMAT naming where a report is
 * bad, TS_ENOMEM. */
char *ts_render_analysis(const json_t *report,
                         const json_t *before,
                         const char *title,
                         const char *metric,
                         const char *format,
                         ts_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_RENDER_H */
