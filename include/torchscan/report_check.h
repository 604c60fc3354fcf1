/* The one validator of AnalysisReports read back (contract 1.13's
 * render_report rules, applied to every report that is not freshly
 * crawled): compare_reports (both reports, before any arithmetic), the
 * `torchscan table` and `torchscan compare` commands, and any renderer.
 *
 * A renderer calls ts_analysis_report_check(report, "report", err) and,
 * for a before/after view, ts_analysis_report_check(before, "before", err)
 * before reading a field; every field it then reads has the type checked
 * here.
 *
 * Messages name WHERE and what was expected, as
 *   "<where>: layers[3].metrics.macs.status: expected 'complete',
 *    'partial' or 'unavailable', got 'weird'"
 * where <where> is the caller's name for the report ("before", a file
 * name) and the path reads as Python subscripts without the brackets
 * around keys: `.key` for an object member, `[i]` for a list item.
 *
 * What is required and what is checked only when present: a report needs
 * schema_version, layers (each with path, call_index and metrics) and
 * totals, the fields every reader of a report uses. The other fields of
 * docs/report-schema.md (context, inputs, operator_flops, diagnostics, a
 * layer's depth, parameters, buffers, metric_ownership, metric_owners) are
 * checked when present, so that reports trimmed to what a comparison reads
 * stay comparable. */
#ifndef TORCHSCAN_REPORT_CHECK_H
#define TORCHSCAN_REPORT_CHECK_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks that `value` is JSON data a page may display, at every depth
 * (the render rule of contract 1.13): text (keys included) without NUL,
 * control characters other than tab, CR and LF (C0, DEL and C1), UTF-16
 * surrogates or U+FFFE/U+FFFF, and nesting no deeper than 512. (jansson
 * already refuses NaN, infinities and integers outside the 64-bit range;
 * Python's side refuses them while converting, naming where.) Returns TS_OK or
 * TS_EFORMAT with err naming where. */
int ts_json_data_check(const json_t *value, const char *where, ts_error *err);

/* Checks one MetricResult: an object with the keys status, value,
 * known_value, unit, scope and method; status one of complete, partial,
 * unavailable (anything else is refused, where the reference read it as
 * complete); complete: value and known_value numbers (bools are not) and
 * equal; partial: value null, known_value a number; unavailable: both
 * null; unit, scope, method strings. `where` names the metric in full
 * ("before: totals.macs"). Returns TS_OK or TS_EFORMAT. */
int ts_metric_result_check(const json_t *metric,
                           const char *where,
                           ts_error *err);

/* Checks an AnalysisReport (contract 1.13), in this order:
 *  - the data rules of ts_json_data_check on the whole report, except
 *    that text may hold control characters and U+FFFE/U+FFFF (a module
 *    name or a user exception message the crawl copied: compare_reports
 *    and the table read those reports; a renderer checks the text it
 *    displays with ts_json_data_check or escapes it);
 *  - schema_version: the integer 1 (true, 2 and "1" are refused);
 *  - context and inputs: objects; context.devices and context.dtypes:
 *    lists of str;
 *  - diagnostics (the report's and operator_flops'): a list of objects
 *    with code a str, severity "warning" or "error", and metric, message,
 *    path and operator str when present;
 *  - layers: a list of objects; path a str without an empty component
 *    ("bad..path", ".a", "a."; "" is the root); call_index and depth
 *    non-negative ints; parameters.{trainable,frozen,bytes} and
 *    buffers.{elements,bytes} non-negative ints and their `shared` bools;
 *    metrics an object of MetricResults;
 *  - totals: an object of MetricResults;
 *  - additive costs not negative: the known_value of calls, module_flops,
 *    macs, dmas, operator_flops and the parameter and buffer totals;
 *  - operator_flops: as ts_flop_report_check (phases included) and
 *    schema_version 1, total a MetricResult equal to
 *    totals.operator_flops ("must match"), by_operator and by_module
 *    values non-negative ints, ignored_operators values {calls: a
 *    non-negative int, reason: a str};
 *  - no duplicate (path, call_index): "<where> contains duplicate layer
 *    call ('a', 0)", naming the first repeat in report order;
 *  - ownership evidence: metric_ownership values "module_call" or
 *    "subtree"; metric_owners values {path: str, call_index: int} naming
 *    an existing row other than this one whose metric_ownership lists the
 *    metric; a covered metric absent from the covered row's metrics; no
 *    cycle of owners for a metric.
 * `where` names the report in messages ("report", "before", a file name;
 * NULL reads as "report"). The report is not modified. Returns TS_OK,
 * TS_EFORMAT with err naming where, or TS_ENOMEM. */
int ts_analysis_report_check(const json_t *report,
                             const char *where,
                             ts_error *err);

/* Checks one FlopReport as ts_analysis_report_check checks its
 * operator_flops: schema_version 1, total a MetricResult that is not
 * negative, by_operator / matrix_product_flops / by_module {key:
 * non-negative int}, ignored_operators, diagnostics; and, when present,
 * "phases": exactly forward, backward and optimizer, each {total (a
 * MetricResult), by_operator (adding up to that total), by_module, layers
 * [{path, call_index, operator_flops (a MetricResult)}]}, the three totals
 * adding up to total, which is partial exactly when one of them is.
 * Returns TS_OK or TS_EFORMAT with err naming where. */
int ts_flop_report_check(const json_t *flops,
                         const char *where,
                         ts_error *err);

/* ts_analysis_report_check with the text rule of ts_json_data_check for
 * every string (a renderer's check: the page displays the text), in the
 * same single pass over the report. */
int ts_analysis_report_check_display(const json_t *report,
                                     const char *where,
                                     ts_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_REPORT_CHECK_H */
