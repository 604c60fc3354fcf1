/* Report comparison (contract 1.5): pure arithmetic over two reports. */
#ifndef TORCHSCAN_DIFF_H
#define TORCHSCAN_DIFF_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Diffs two {name: MetricResult} maps over the sorted union of names.
 * Returns a new {name: {status, delta, before, after}} object, or NULL with
 * err (TS_EINVAL "metric 'x' has incompatible unit" ...). */
json_t *ts_diff_metrics(const json_t *before,
                        const json_t *after,
                        ts_error *err);

/* compare_reports: a new ReportDiff, or NULL with err set (TS_EINVAL for
 * schema mismatch, duplicate layer calls, incompatible metrics). The inputs
 * are not modified. */
json_t *ts_compare_reports(const json_t *before,
                           const json_t *after,
                           ts_error *err);

/* Python's == on the values json.loads would build: numbers compare by
 * value across int, float and bool (1 == 1.0 == true); NULL (a missing
 * key) equals null, as dict.get's None does. */
bool ts_json_equal(const json_t *a, const json_t *b);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_DIFF_H */
