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
    /* Same timestamp: the order they were recorded in. */
    return (x->order > y->order) - (x->order < y->order);
}

/* Blocks alive that were allocated in the window, by address: open
 * addressing; a freed slot is never reused, so each allocation takes one
 * slot and a table of twice the event count never fills. */
typedef struct block {
    uint64_t ptr;
    int64_t bytes;
    uint8_t state; /* 0 empty, 1 alive, 2 freed */
} block;

static size_t
home(uint64_t ptr, size_t mask)
{
    return (size_t)((ptr >> 4) * 0x9E3779B97F4A7C15u) & mask;
}

/* The slot of the live block at `ptr`, or SIZE_MAX. */
static size_t
find(const block *table, size_t mask, uint64_t ptr)
{
    for (size_t i = home(ptr, mask);; i = (i + 1) & mask) {
        if (table[i].state == 0) {
            return SIZE_MAX;
        }
        if (table[i].state == 1 && table[i].ptr == ptr) {
            return i;
        }
    }
}

int
ts_memory_peak(ts_mem_event *events, size_t n, int64_t *peak)
{
    int64_t live = 0, best = 0;
    size_t cap = 16;
    block *table;
    int rc = TS_OK;
    while (cap < 2 * n) {
        cap *= 2;
    }
    table = calloc(cap, sizeof *table);
    if (table == NULL) {
        return TS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        events[i].order = i;
    }
    if (n > 1) {
        qsort(events, n, sizeof *events, compare_events);
    }
    for (size_t i = 0; i < n && rc == TS_OK; i++) {
        const ts_mem_event *ev = &events[i];
        size_t at = find(table, cap - 1, ev->ptr);
        if (ev->bytes > 0) {
            if (at == SIZE_MAX) {
                /* the first empty slot on the probe path */
                at = home(ev->ptr, cap - 1);
                while (table[at].state != 0) {
                    at = (at + 1) & (cap - 1);
                }
            }
            else {
                live -= table[at].bytes; /* its free was not recorded */
            }
            table[at].ptr = ev->ptr;
            table[at].bytes = ev->bytes;
            table[at].state = 1;
            if (!ts_add(live, ev->bytes, &live)) {
                rc = TS_EOVERFLOW;
            }
        }
        else if (ev->bytes < 0 && at != SIZE_MAX) {
            live -= table[at].bytes;
            table[at].state = 2;
        }
        /* a free of a block allocated before the window: not counted */
        if (live > best) {
            best = live;
        }
    }
    free(table);
    if (rc == TS_OK) {
        *peak = best;
    }
    return rc;
}
