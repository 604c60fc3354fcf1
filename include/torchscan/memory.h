/* Peak-memory reduction for the CPU path of measure_peak_memory. */
#ifndef TORCHSCAN_MEMORY_H
#define TORCHSCAN_MEMORY_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One allocator event: +bytes on allocation, -bytes on release. */
typedef struct ts_mem_event {
    int64_t time_ns;
    int64_t bytes;
} ts_mem_event;

/* Sorts `events` in time order (in place) and returns in *peak the largest
 * number of bytes alive at once, counting from zero before the first event.
 * TS_EOVERFLOW if the running sum overflows. */
int ts_memory_peak(ts_mem_event *events, size_t n, int64_t *peak);

#ifdef __cplusplus
}
#endif

#endif
