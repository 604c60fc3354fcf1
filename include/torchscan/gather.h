/* Reports of several ranks of a torch.distributed process group
 * (torchscan.gather_reports): what the ranks must agree on before their
 * reports travel, and the gathered report built from them on the
 * destination rank. Pure JSON arithmetic: the binding moves the reports
 * over torch.distributed; nothing here communicates.
 *
 * The kinds of report gathered: AnalysisReport (crawl_module), FlopReport
 * (measure_flops) and BenchmarkReport (measure_latency, measure_workload).
 */
#ifndef TORCHSCAN_GATHER_H
#define TORCHSCAN_GATHER_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The method string of a GatheredReport. */
#define TS_GATHER_METHOD "torchscan_gather_reports"

/* The shape of one rank's report, which every rank must share:
 * {"kind": "AnalysisReport" | "FlopReport" | "BenchmarkReport",
 *  "layers": digest of the model (context.model_type, each layer call's
 *            path, call_index, type and global parameter and buffer
 *            counts) or null,
 *  "inputs": digest of the inputs' metadata or null,
 *  "metrics": digest of every metric's name, unit, scope and method},
 * digests as 16 hex digits (FNV-1a 64 of a canonical text). A report that
 * is none of the three kinds, or not a valid one (an AnalysisReport is
 * checked as compare_reports checks it), is TS_EINVAL/TS_EFORMAT with a
 * message. New reference, or NULL with err. */
json_t *ts_gather_shape(const json_t *report, ts_error *err);

/* Whether the ranks can gather: `statuses` holds one object per rank of
 * the group, in group order, as each rank posted it: {"dst": int, "ok":
 * shape} or {"error": {"type": str, "message": str}}; `ranks` their global
 * ranks. TS_OK when every rank is ok with the same dst and shape.
 * Otherwise TS_EINVAL with err's message naming the first rank (in group
 * order) that failed or differs from the group's first rank, the same text
 * on every rank that checks the same statuses; `type` (size bytes) gets
 * the Python exception to raise: the failing rank's own ("TypeError",
 * "ValueError"; anything else reads "RuntimeError"), "ValueError" for a
 * disagreement. TS_EFORMAT for statuses that are not of this form. */
int ts_gather_check(const json_t *statuses,
                    const json_t *ranks,
                    char *type,
                    size_t size,
                    ts_error *err);

/* The GatheredReport of the ranks' reports (group order; `ranks` their
 * global ranks), which ts_gather_check accepted:
 * {schema_version: 1,
 *  context: {method, report_type, world_size, ranks},
 *  reports: [each rank's report, as given] (only `with_reports`: the
 *           binding attaches the Python objects it already holds instead),
 *  totals: {name: RankStats}                (AnalysisReport, BenchmarkReport)
 *  operator_flops: {total, collective_bytes?, by_operator: {op: RankStats},
 *                   collectives: {op: RankStats}}   (when the reports have
 *                                                    operator FLOPs)
 *  layers: [{path, call_index, metrics: {name: RankStats}}] (AnalysisReport)}
 * RankStats: {unit, scope, method, status, values: [value or null per
 * rank], known_values: [...], min, median, max: {value, rank} or null,
 * sum: number or null}: status complete when every rank's is, unavailable
 * when no rank has a number, partial otherwise; min, median (the lower
 * middle one for an even count), max and sum only when complete; each
 * {value, rank} names the global rank that has it (the lowest rank among
 * equal values; the median in value order, ties in rank order); no sum for
 * seconds and rates. by_operator counts and collectives' bytes are
 * complete counts, 0 on a rank that did not run the operator. New
 * reference, or NULL with err (TS_EINVAL for reports whose metrics differ
 * in unit, scope or method, TS_ENOMEM). */
json_t *ts_gather_reports(const json_t *reports,
                          const json_t *ranks,
                          bool with_reports,
                          ts_error *err);

/* ts_gather_reports through an emitter (torchscan/emit.h): the binding
 * writes the GatheredReport straight into Python objects. TS_OK, or the
 * status of err (TS_EINVAL for metrics that differ in unit, scope or
 * method, TS_ENOMEM); after a failure the emitter holds a partial value
 * that the caller discards. */
struct ts_emitter;
int ts_gather_emit(const json_t *reports,
                   const json_t *ranks,
                   bool with_reports,
                   const struct ts_emitter *emitter,
                   ts_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_GATHER_H */
