/* Peak-memory reduction for the CPU path of measure_peak_memory. */
#ifndef TORCHSCAN_MEMORY_H
#define TORCHSCAN_MEMORY_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One allocator event: +bytes on allocation, -bytes on release, of the
 * block at `ptr`. */
typedef struct ts_mem_event {
    int64_t time_ns;
    int64_t bytes;
    uint64_t ptr;
    uint64_t order; /* set by ts_memory_peak: the position it was given in */
} ts_mem_event;

/* Sorts `events` in time order (in place; ties keep the given order) and
 * returns in *peak the largest number of bytes alive at once of the blocks
 * allocated among the events, counting from zero before the first. A
 * release of a block allocated before the events (an earlier profiling
 * session's tensor) is not counted: it would hide the window's own
 * allocations. TS_EOVERFLOW if the sum overflows, TS_ENOMEM. */
int ts_memory_peak(ts_mem_event *events, size_t n, int64_t *peak);

#ifdef __cplusplus
}
#endif

#endif
