/* Per-layer exports of an AnalysisReport for other tools: CSV (RFC 4180),
 * a Markdown table and flame-graph folded stacks (the input of Brendan
 * Gregg's flamegraph.pl and of speedscope). `torchscan export` writes them.
 *
 * The metrics a layer row holds that add up across rows (the report's
 * totals are their sums):
 *   module_flops, macs, dmas   metrics.<name>: the row's own estimate; a
 *                              row whose handler owns a subtree estimate
 *                              (metric_ownership "subtree") holds the
 *                              subtree's work, and the rows it covers do not
 *                              hold the metric at all (metric_owners), so
 *                              nothing is counted twice;
 *   operator_flops             metrics.operator_flops: the operators the
 *                              call ran itself (scope module_call_self);
 *   parameters, parameter_bytes parameters.trainable + frozen and
 *                              parameters.bytes: the tensors first met by
 *                              this call (each tensor is attributed once).
 * So each row's recorded number is its exclusive ("self") cost, and the
 * rows' numbers sum to the report's total (parameters: to the parameters
 * of the modules that were called). */
#ifndef TORCHSCAN_EXPORT_H
#define TORCHSCAN_EXPORT_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TS_EXPORT_CSV = 0,
    TS_EXPORT_MARKDOWN = 1,
    TS_EXPORT_FOLDED = 2,
} ts_export_format;

typedef enum {
    TS_EXPORT_MODULE_FLOPS = 0,
    TS_EXPORT_MACS = 1,
    TS_EXPORT_DMAS = 2,
    TS_EXPORT_OPERATOR_FLOPS = 3,
    TS_EXPORT_PARAMETERS = 4,
    TS_EXPORT_PARAMETER_BYTES = 5,
} ts_export_metric;

#define TS_EXPORT_NMETRICS 6

/* "module_flops", "macs", "dmas", "operator_flops", "parameters",
 * "parameter_bytes"; NULL for anything else. */
const char *ts_export_metric_name(int metric);

/* The metric of a name above; -1 when unknown. */
int ts_export_metric_parse(const char *name);

/* "csv", "markdown", "folded" and back; -1 when unknown. */
const char *ts_export_format_name(int format);
int ts_export_format_parse(const char *name);

typedef struct ts_export_options {
    ts_export_format format;
    /* csv and markdown: the one metric whose columns are written, or < 0
     * for every metric in the order above. folded: the metric of the
     * stacks (< 0 reads as module_flops). */
    int metric;
} ts_export_options;

/* What an export wrote and left out (for the caller's messages). */
typedef struct ts_export_stats {
    size_t rows;     /* layer rows written (folded: rows with a number
                        other than a complete 0) */
    size_t left_out; /* folded: rows whose metric is unavailable */
    size_t without;  /* folded: rows that do not hold the metric */
    size_t rounded;  /* folded: fractional values rounded to integers */
    size_t partial;  /* cells (csv, markdown) or rows (folded) whose
                        metric is partial: a lower bound */
} ts_export_stats;

/* The export of one AnalysisReport that passed ts_analysis_report_check
 * (fields are still type-checked as they are read; a report that lacks
 * them gives TS_EFORMAT).
 *
 * csv: a header line, then one line per layer row in report order:
 *   path,type,call_index,depth, then for each metric M:
 *   M_status,M_value,M_known_value
 * Lines end with CRLF; a field holding a comma, a double quote, CR or LF
 * is quoted, with quotes doubled (RFC 4180). A metric the row does not
 * hold has three empty fields; numbers are written as Python writes them.
 *
 * markdown: a GitHub-flavoured table, one line per row: path, type,
 * call_index, depth and one cell per metric: the value when complete,
 * ">= N (partial)" when partial, "unavailable", or empty when the row does
 * not hold the metric. In text cells `\`, `|`, `` ` ``, `*`, `_`, `<`, `>`,
 * `[`, `]` and `&` are backslash-escaped and control characters written as
 * &#xHH; references.
 *
 * folded: one line "FRAME;FRAME;...;FRAME VALUE" per distinct stack, in
 * the order stacks first occur. The frames of a row are the root's name
 * (the root row's `name`, else its `type`, else "model") followed by each
 * prefix of its path: path "a.b.c" gives root;a;a.b;a.b.c. VALUE is the
 * row's own number (see above), summed over the rows with the same stack
 * (repeated calls of one module). A partial row is written with its known
 * lower bound and " [partial]" appended to its last frame; an unavailable
 * row is left out (stats->left_out); a row that does not hold the metric
 * has nothing of its own to show (stats->without), and a complete 0 has
 * no cost to draw: neither is written. Values are integers
 * (speedscope reads only those): a fractional one is rounded to the
 * nearest (stats->rounded). In frame text `%`, `;` and control characters
 * are written as %XX. For a complete report the values sum to the total.
 *
 * Returns a malloc'd NUL-terminated string (caller frees; "" when there is
 * nothing to write), NULL with err set: TS_EINVAL (bad options),
 * TS_EFORMAT, TS_EOVERFLOW (a folded sum past 2^63 - 1), TS_ENOMEM.
 * `stats` may be NULL. */
char *ts_export_report(const json_t *report,
                       const ts_export_options *options,
                       ts_export_stats *stats,
                       ts_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_EXPORT_H */
