/* Bytes saved for backward per layer call (saved_bytes.h): an open
 * addressing set of storage identities (each with the layer it was
 * attributed to, or EXCLUDED) and per-layer sums, slot 0 for "outside
 * every call". */
#include <stdlib.h>
#include <string.h>

#include "torchscan/saved_bytes.h"

#define EXCLUDED (-2)

typedef struct entry {
    uint64_t key;
    int32_t owner; /* layer (>= -1) or EXCLUDED */
    bool used;
} entry;

typedef struct layer_sum {
    int64_t bytes;
    int64_t unmeasured;
} layer_sum;

struct ts_saved {
    entry *table;
    size_t cap, count; /* cap: a power of two, or 0 */
    layer_sum *layers; /* index layer + 1 */
    size_t nlayers;
    ts_saved_totals totals;
};

ts_saved *
ts_saved_new(void)
{
    return calloc(1, sizeof(ts_saved));
}

void
ts_saved_free(ts_saved *saved)
{
    if (saved != NULL) {
        free(saved->table);
        free(saved->layers);
        free(saved);
    }
}

/* A 64-bit mix (splitmix64's finalizer): storage addresses share their low
 * bits (alignment) and their high bits (one heap). */
static size_t
slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 30;
    key *= 0xbf58476d1ce4e5b9ULL;
    key ^= key >> 27;
    key *= 0x94d049bb133111ebULL;
    key ^= key >> 31;
    return (size_t)key & (cap - 1);
}

static entry *
find(const ts_saved *saved, uint64_t key)
{
    if (saved->cap == 0) {
        return NULL;
    }
    for (size_t i = slot_of(key, saved->cap);;
         i = (i + 1) & (saved->cap - 1)) {
        entry *e = &saved->table[i];
        if (!e->used || e->key == key) {
            return e;
        }
    }
}

/* Keeps the load under one half. TS_OK or TS_ENOMEM. */
static int
reserve(ts_saved *saved)
{
    size_t cap;
    entry *old = saved->table, *table;
    if ((saved->count + 1) * 2 <= saved->cap) {
        return TS_OK;
    }
    cap = saved->cap ? saved->cap * 2 : 64;
    if (cap > SIZE_MAX / sizeof(entry)) {
        return TS_ENOMEM;
    }
    table = calloc(cap, sizeof(entry));
    if (table == NULL) {
        return TS_ENOMEM;
    }
    size_t old_cap = saved->cap;
    saved->table = table;
    saved->cap = cap; /* find() probes the new table */
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].used) {
            *find(saved, old[i].key) = old[i];
        }
    }
    free(old);
    return TS_OK;
}

/* The sums of `layer` (>= -1), grown on demand; NULL when out of memory. */
static layer_sum *
layer_at(ts_saved *saved, int layer)
{
    size_t index = (size_t)layer + 1;
    if (index >= saved->nlayers) {
        size_t n = saved->nlayers ? saved->nlayers : 16;
        layer_sum *p;
        while (n <= index) {
            if (n > SIZE_MAX / 2 / sizeof(layer_sum)) {
                return NULL;
            }
            n *= 2;
        }
        p = realloc(saved->layers, n * sizeof(layer_sum));
        if (p == NULL) {
            return NULL;
        }
        memset(
            p + saved->nlayers, 0, (n - saved->nlayers) * sizeof(layer_sum));
        saved->layers = p;
        saved->nlayers = n;
    }
    return &saved->layers[index];
}

/* Inserts `key` with `owner` (not present yet). */
static int
insert(ts_saved *saved, uint64_t key, int32_t owner)
{
    entry *e;
    int rc = reserve(saved);
    if (rc != TS_OK) {
        return rc;
    }
    e = find(saved, key);
    e->used = true;
    e->key = key;
    e->owner = owner;
    saved->count++;
    return TS_OK;
}

int
ts_saved_exclude(ts_saved *saved, uint64_t storage)
{
    entry *e = find(saved, storage);
    if (e != NULL && e->used) {
        return TS_OK; /* counted or excluded already */
    }
    return insert(saved, storage, EXCLUDED);
}

int
ts_saved_add(ts_saved *saved, uint64_t storage, int64_t nbytes, int layer)
{
    entry *e;
    layer_sum *sum;
    int64_t layer_bytes, total;
    int rc;
    if (nbytes < 0 || layer < -1) {
        return TS_EINVAL;
    }
    e = find(saved, storage);
    if (e != NULL && e->used) {
        saved->totals.saves++;
        return 0;
    }
    if ((sum = layer_at(saved, layer)) == NULL) {
        return TS_ENOMEM;
    }
    if (!ts_add(sum->bytes, nbytes, &layer_bytes)
        || !ts_add(saved->totals.bytes, nbytes, &total)) {
        return TS_EOVERFLOW;
    }
    if ((rc = insert(saved, storage, layer)) != TS_OK) {
        return rc;
    }
    sum->bytes = layer_bytes;
    saved->totals.bytes = total;
    saved->totals.saves++;
    saved->totals.storages++;
    return 1;
}

int
ts_saved_add_unmeasured(ts_saved *saved, int layer)
{
    layer_sum *sum;
    if (layer < -1) {
        return TS_EINVAL;
    }
    if ((sum = layer_at(saved, layer)) == NULL) {
        return TS_ENOMEM;
    }
    sum->unmeasured++;
    saved->totals.unmeasured++;
    return sum->unmeasured == 1;
}

static const layer_sum *
layer_get(const ts_saved *saved, int layer)
{
    size_t index = (size_t)layer + 1;
    return layer >= -1 && index < saved->nlayers ? &saved->layers[index]
                                                 : NULL;
}

int64_t
ts_saved_layer_bytes(const ts_saved *saved, int layer)
{
    const layer_sum *sum = layer_get(saved, layer);
    return sum ? sum->bytes : 0;
}

int64_t
ts_saved_layer_unmeasured(const ts_saved *saved, int layer)
{
    const layer_sum *sum = layer_get(saved, layer);
    return sum ? sum->unmeasured : 0;
}

int
ts_saved_owner(const ts_saved *saved, uint64_t storage)
{
    const entry *e = find(saved, storage);
    return e != NULL && e->used ? e->owner : EXCLUDED;
}

void
ts_saved_get_totals(const ts_saved *saved, ts_saved_totals *out)
{
    *out = saved->totals;
}
