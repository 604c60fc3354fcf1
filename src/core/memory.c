/* Peak of a memory timeline, reduced from allocation events. */
#include <stdlib.h>

#include "torchscan/memory.h"

static int
compare_events(const void *a, const void *b)
{
    const ts_mem_event *x = a;
    const ts_mem_event *y = b;
    if (x->time_ns != y->time_ns) {
        return x->time_ns < y->time_ns ? -1 : 1;
    }
    /* Same timestamp: frees first, so a free-then-allocate of one buffer is
     * not counted twice. */
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

int
ts_memory_peak(ts_mem_event *events, size_t n, int64_t *peak)
{
    int64_t live = 0, best = 0;
    if (n > 1) {
        qsort(events, n, sizeof *events, compare_events);
    }
    for (size_t i = 0; i < n; i++) {
        if (!ts_add(live, events[i].bytes, &live)) {
            return TS_EOVERFLOW;
        }
        if (live > best) {
            best = live;
        }
    }
    *peak = best;
    return TS_OK;
}
