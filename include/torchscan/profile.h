/* Operator rows of profile_workload (contract 1.9): the profiler's
 * key_averages rows, sorted and limited in C. */
#ifndef TORCHSCAN_PROFILE_H
#define TORCHSCAN_PROFILE_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One key_averages group. Strings and `input_shapes` are borrowed. */
typedef struct ts_profile_row {
    const char *op; /* "aten::mm", "[memory]", ... */
    int64_t calls;
    const json_t *input_shapes; /* NULL for [] */
    double cpu_self_seconds;
    bool has_device_time;
    double device_self_seconds;
    int64_t cpu_net_bytes;
    size_t order; /* set by ts_profile_rows: the input position */
} ts_profile_row;

/* Sorts `rows` in place, descending by device self time when
 * `device_time_supported`, else by CPU self time; ties keep their input
 * order (Python's stable sort). Returns a new JSON array of the first
 * `limit` rows as {operator, calls, input_shapes, cpu_self_seconds,
 * device_self_seconds (null unless supported and known), cpu_net_bytes},
 * or NULL with err set (TS_ENOMEM, TS_EINVAL for a non-finite time). */
json_t *ts_profile_rows(ts_profile_row *rows,
                        size_t n,
                        size_t limit,
                        bool device_time_supported,
                        ts_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_PROFILE_H */
