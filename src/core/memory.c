/* Peak of a memory timeline, reduced from allocation events. */
#include <stdbool.h>
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

/* Blocks alive that were allocated in the window, by address: linear
 * probing on the high bits of a multiplicative hash, with backward-shift
 * deletion (no tombstones), so a reused address costs no more than a new
 * one. At most one slot per live block; the table has at least twice as
 * many slots as there are allocations. */
typedef struct block {
    uint64_t ptr;
    int64_t bytes;
    bool used;
} block;

typedef struct blocks {
    block *slot;
    size_t mask;
    int shift; /* 64 - log2(slots) */
} blocks;

static size_t
home(const blocks *t, uint64_t ptr)
{
    return (size_t)((ptr * 0x9E3779B97F4A7C15u) >> t->shift);
}

/* The slot holding `ptr`, or the empty slot where it would go. */
static size_t
probe(const blocks *t, uint64_t ptr)
{
    size_t i = home(t, ptr);
    while (t->slot[i].used && t->slot[i].ptr != ptr) {
        i = (i + 1) & t->mask;
    }
    return i;
}

/* Empties slot i, moving back later entries of its run that would no
 * longer be found. */
static void
remove_at(blocks *t, size_t i)
{
    size_t j = i;
    for (;;) {
        j = (j + 1) & t->mask;
        if (!t->slot[j].used) {
            break;
        }
        size_t k = home(t, t->slot[j].ptr);
        /* move j back to i unless its home lies cyclically in (i, j] */
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            t->slot[i] = t->slot[j];
            i = j;
        }
    }
    t->slot[i].used = false;
}

int
ts_memory_peak(ts_mem_event *events, size_t n, int64_t *peak)
{
    int64_t live = 0, best = 0;
    size_t allocs = 0, cap = 16;
    int bits = 4;
    blocks t;
    int rc = TS_OK;
    for (size_t i = 0; i < n; i++) {
        allocs += events[i].bytes > 0;
    }
    while (cap < 2 * allocs) {
        cap *= 2;
        bits++;
    }
    t.slot = calloc(cap, sizeof *t.slot);
    t.mask = cap - 1;
    t.shift = 64 - bits;
    if (t.slot == NULL) {
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
        size_t at = probe(&t, ev->ptr);
        if (ev->bytes > 0) {
            if (t.slot[at].used) {
                live -= t.slot[at].bytes; /* its free was not recorded */
            }
            t.slot[at] = (block){ev->ptr, ev->bytes, true};
            if (!ts_add(live, ev->bytes, &live)) {
                rc = TS_EOVERFLOW;
            }
        }
        else if (ev->bytes < 0 && t.slot[at].used) {
            live -= t.slot[at].bytes;
            remove_at(&t, at);
        }
        /* a free of a block allocated before the window: not counted */
        if (live > best) {
            best = live;
        }
    }
    free(t.slot);
    if (rc == TS_OK) {
        *peak = best;
    }
    return rc;
}
