/* The memory simulator (mem_sim.h): a table of live storages keyed by the
 * caller's key, a flat list of events (allocation, resize, free) tagged
 * with the operator that was running, and the peaks. Compositions are
 * found by replaying the events up to the peak, so a storage's role may be
 * named after its allocation (a gradient is known as one only when the
 * optimizer steps) and still count where it belongs. */
#include "torchscan/mem_sim.h"

#include <stdlib.h>
#include <string.h>

typedef struct mem_entry {
    uint64_t key;
    int64_t bytes;   /* now */
    int64_t initial; /* when first seen (existing storages) */
    int device;
    uint8_t role;  /* ts_mem_role named by the caller, or TS_MEM_UNSET */
    uint8_t phase; /* of the operator that allocated it */
    bool existing;
} mem_entry;

#define NO_OP UINT32_MAX

typedef struct mem_event {
    uint32_t entry;
    uint32_t op; /* NO_OP: before any operator */
    int64_t delta;
} mem_event;

typedef struct mem_op {
    int name;
    int layer;
    uint8_t phase;
} mem_op;

/* interned strings: a list and an open-addressing index into it */
typedef struct strtab {
    char **items;
    size_t n, cap;
    int *index; /* -1 empty */
    size_t icap;
} strtab;

/* key -> entry; entry -1 empty, -2 deleted */
typedef struct key_slot {
    uint64_t key;
    int64_t entry;
} key_slot;

struct ts_memsim {
    mem_entry *entries;
    size_t nentries, entries_cap;
    mem_event *events;
    size_t nevents, events_cap;
    mem_op *ops;
    size_t nops, ops_cap;
    key_slot *map;
    size_t map_cap, map_used; /* used: live + deleted */
    strtab names, devices;
    int64_t own_live, all_live, existing;
    int64_t allocated, freed;
};

static const char *const role_names[TS_MEM_ROLE_COUNT] = {NULL,
                                                          "parameter",
                                                          "gradient",
                                                          "optimizer_state",
                                                          "activation",
                                                          "temporary",
                                                          "other",
                                                          "workspace"};

const char *
ts_mem_role_name(ts_mem_role role)
{
    if ((int)role <= 0 || (int)role >= TS_MEM_ROLE_COUNT) {
        return NULL;
    }
    return role_names[role];
}

/* Grows *items (of element size `size`) to hold one more. */
static int
grow(void **items, size_t *cap, size_t n, size_t size)
{
    size_t ncap;
    void *p;
    if (n < *cap) {
        return TS_OK;
    }
    ncap = *cap ? *cap * 2 : 64;
    if (ncap > SIZE_MAX / size) {
        return TS_ENOMEM;
    }
    p = realloc(*items, ncap * size);
    if (p == NULL) {
        return TS_ENOMEM;
    }
    *items = p;
    *cap = ncap;
    return TS_OK;
}

static uint64_t
hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

static uint64_t
hash_key(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static int
strtab_rehash(strtab *t, size_t icap)
{
    int *index = malloc(icap * sizeof *index);
    if (index == NULL) {
        return TS_ENOMEM;
    }
    for (size_t i = 0; i < icap; i++) {
        index[i] = -1;
    }
    for (size_t j = 0; j < t->n; j++) {
        size_t i = hash_str(t->items[j]) & (icap - 1);
        while (index[i] >= 0) {
            i = (i + 1) & (icap - 1);
        }
        index[i] = (int)j;
    }
    free(t->index);
    t->index = index;
    t->icap = icap;
    return TS_OK;
}

/* The id of `s` in `t`, added when new; a negative status on failure. */
static int
strtab_intern(strtab *t, const char *s)
{
    size_t i;
    char *copy;
    if (t->icap == 0 || (t->n + 1) * 2 > t->icap) {
        int rc = strtab_rehash(t, t->icap ? t->icap * 2 : 64);
        if (rc != TS_OK) {
            return rc;
        }
    }
    i = hash_str(s) & (t->icap - 1);
    while (t->index[i] >= 0) {
        if (strcmp(t->items[t->index[i]], s) == 0) {
            return t->index[i];
        }
        i = (i + 1) & (t->icap - 1);
    }
    if (t->n >= (size_t)INT32_MAX
        || grow((void **)&t->items, &t->cap, t->n, sizeof *t->items)
               != TS_OK) {
        return TS_ENOMEM;
    }
    copy = strdup(s);
    if (copy == NULL) {
        return TS_ENOMEM;
    }
    t->items[t->n] = copy;
    t->index[i] = (int)t->n;
    return (int)t->n++;
}

static void
strtab_clear(strtab *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->items[i]);
    }
    free(t->items);
    free(t->index);
}

ts_memsim *
ts_memsim_new(void)
{
    return calloc(1, sizeof(ts_memsim));
}

void
ts_memsim_free(ts_memsim *sim)
{
    if (sim == NULL) {
        return;
    }
    free(sim->entries);
    free(sim->events);
    free(sim->ops);
    free(sim->map);
    strtab_clear(&sim->names);
    strtab_clear(&sim->devices);
    free(sim);
}

/* ---- the key map -------------------------------------------------------- */

static key_slot *
map_find(const ts_memsim *sim, uint64_t key)
{
    size_t i;
    if (sim->map_cap == 0) {
        return NULL;
    }
    i = hash_key(key) & (sim->map_cap - 1);
    while (sim->map[i].entry != -1) {
        if (sim->map[i].entry >= 0 && sim->map[i].key == key) {
            return &sim->map[i];
        }
        i = (i + 1) & (sim->map_cap - 1);
    }
    return NULL;
}

static int
map_rehash(ts_memsim *sim, size_t cap)
{
    key_slot *map = malloc(cap * sizeof *map);
    size_t used = 0;
    if (map == NULL) {
        return TS_ENOMEM;
    }
    for (size_t i = 0; i < cap; i++) {
        map[i].entry = -1;
    }
    for (size_t j = 0; j < sim->map_cap; j++) {
        if (sim->map[j].entry >= 0) {
            size_t i = hash_key(sim->map[j].key) & (cap - 1);
            while (map[i].entry != -1) {
                i = (i + 1) & (cap - 1);
            }
            map[i] = sim->map[j];
            used++;
        }
    }
    free(sim->map);
    sim->map = map;
    sim->map_cap = cap;
    sim->map_used = used;
    return TS_OK;
}

/* Inserts a key known to be absent. */
static int
map_insert(ts_memsim *sim, uint64_t key, int64_t entry)
{
    size_t i;
    if ((sim->map_used + 1) * 2 > sim->map_cap) {
        size_t live = 0;
        for (size_t j = 0; j < sim->map_cap; j++) {
            live += sim->map[j].entry >= 0;
        }
        /* doubles when live storages fill it, else sweeps the deleted */
        size_t cap = sim->map_cap ? sim->map_cap : 256;
        while ((live + 1) * 4 > cap) {
            cap *= 2;
        }
        int rc = map_rehash(sim, cap);
        if (rc != TS_OK) {
            return rc;
        }
    }
    i = hash_key(key) & (sim->map_cap - 1);
    while (sim->map[i].entry >= 0) {
        i = (i + 1) & (sim->map_cap - 1);
    }
    if (sim->map[i].entry == -1) {
        sim->map_used++;
    }
    sim->map[i].key = key;
    sim->map[i].entry = entry;
    return TS_OK;
}

/* ---- events ------------------------------------------------------------- */

int
ts_memsim_op(ts_memsim *sim, const char *name, ts_phase phase, int layer)
{
    int id;
    if (sim->nops >= NO_OP - 1) {
        return TS_EOVERFLOW;
    }
    if (grow((void **)&sim->ops, &sim->ops_cap, sim->nops, sizeof *sim->ops)
        != TS_OK) {
        return TS_ENOMEM;
    }
    id = strtab_intern(&sim->names, name);
    if (id < 0) {
        return id;
    }
    sim->ops[sim->nops].name = id;
    sim->ops[sim->nops].layer = layer;
    sim->ops[sim->nops].phase = (uint8_t)phase;
    sim->nops++;
    return TS_OK;
}

bool
ts_memsim_known(const ts_memsim *sim, uint64_t key)
{
    return map_find(sim, key) != NULL;
}

/* Appends an event of `delta` bytes of entry `e` and moves the totals. */
static int
add_event(ts_memsim *sim, size_t e, int64_t delta)
{
    int64_t own = sim->own_live, all = sim->all_live;
    /* the sums are written back only when all of them fit: an overflow
     * builtin stores the wrapped value in its result */
    int64_t allocated = sim->allocated, freed = sim->freed;
    mem_entry *m = &sim->entries[e];
    if (sim->nevents >= UINT32_MAX
        || grow((void **)&sim->events,
                &sim->events_cap,
                sim->nevents,
                sizeof *sim->events)
               != TS_OK) {
        return TS_ENOMEM;
    }
    if (__builtin_add_overflow(all, delta, &all)
        || (!m->existing && __builtin_add_overflow(own, delta, &own))) {
        return TS_EOVERFLOW;
    }
    if (delta > 0 && !m->existing
        && __builtin_add_overflow(allocated, delta, &allocated)) {
        return TS_EOVERFLOW;
    }
    if (delta < 0 && __builtin_add_overflow(freed, -delta, &freed)) {
        return TS_EOVERFLOW;
    }
    sim->events[sim->nevents].entry = (uint32_t)e;
    sim->events[sim->nevents].op =
        sim->nops ? (uint32_t)(sim->nops - 1) : NO_OP;
    sim->events[sim->nevents].delta = delta;
    sim->nevents++;
    sim->own_live = own;
    sim->all_live = all;
    sim->allocated = allocated;
    sim->freed = freed;
    return TS_OK;
}

int
ts_memsim_observe(ts_memsim *sim,
                  uint64_t key,
                  int64_t bytes,
                  const char *device,
                  bool existing)
{
    key_slot *k;
    mem_entry *m;
    int dev, rc;
    if (bytes < 0) {
        return TS_EINVAL;
    }
    k = map_find(sim, key);
    if (k != NULL) {
        m = &sim->entries[k->entry];
        if (m->bytes == bytes) {
            return TS_OK;
        }
        rc = add_event(sim, (size_t)k->entry, bytes - m->bytes);
        if (rc == TS_OK) {
            m->bytes = bytes;
        }
        return rc;
    }
    if (sim->nentries >= UINT32_MAX
        || grow((void **)&sim->entries,
                &sim->entries_cap,
                sim->nentries,
                sizeof *sim->entries)
               != TS_OK) {
        return TS_ENOMEM;
    }
    dev = strtab_intern(&sim->devices, device != NULL ? device : "");
    if (dev < 0) {
        return dev;
    }
    if (existing) {
        int64_t all = sim->all_live, ex = sim->existing;
        if (__builtin_add_overflow(all, bytes, &all)
            || __builtin_add_overflow(ex, bytes, &ex)) {
            return TS_EOVERFLOW;
        }
        rc = map_insert(sim, key, (int64_t)sim->nentries);
        if (rc != TS_OK) {
            return rc;
        }
        sim->all_live = all;
        sim->existing = ex;
    }
    else {
        rc = map_insert(sim, key, (int64_t)sim->nentries);
        if (rc != TS_OK) {
            return rc;
        }
    }
    m = &sim->entries[sim->nentries];
    m->key = key;
    m->bytes = existing ? bytes : 0;
    m->initial = m->bytes;
    m->device = dev;
    m->role = TS_MEM_UNSET;
    m->phase = sim->nops ? sim->ops[sim->nops - 1].phase : TS_PHASE_FORWARD;
    m->existing = existing;
    sim->nentries++;
    if (existing || bytes == 0) {
        return TS_OK;
    }
    rc = add_event(sim, sim->nentries - 1, bytes);
    if (rc != TS_OK) {
        /* forget it again: the key was not observed */
        map_find(sim, key)->entry = -2;
        sim->nentries--;
        return rc;
    }
    m->bytes = bytes;
    return TS_OK;
}

int
ts_memsim_workspace(ts_memsim *sim, int64_t bytes, const char *device)
{
    mem_entry *m;
    int dev, rc;
    if (bytes < 0) {
        return TS_EINVAL;
    }
    if (bytes == 0) {
        return TS_OK;
    }
    if (sim->nentries >= UINT32_MAX
        || grow((void **)&sim->entries,
                &sim->entries_cap,
                sim->nentries,
                sizeof *sim->entries)
               != TS_OK) {
        return TS_ENOMEM;
    }
    dev = strtab_intern(&sim->devices, device != NULL ? device : "");
    if (dev < 0) {
        return dev;
    }
    /* no key: nothing can observe or release it but this call */
    m = &sim->entries[sim->nentries];
    memset(m, 0, sizeof *m);
    m->device = dev;
    m->role = TS_MEM_WORKSPACE;
    m->phase = sim->nops ? sim->ops[sim->nops - 1].phase : TS_PHASE_FORWARD;
    sim->nentries++;
    rc = add_event(sim, sim->nentries - 1, bytes);
    if (rc != TS_OK) {
        sim->nentries--;
        return rc;
    }
    m->bytes = bytes;
    rc = add_event(sim, sim->nentries - 1, -bytes);
    if (rc != TS_OK) {
        /* undo the allocation: the kernel's buffer was never half-counted */
        sim->nevents--;
        sim->own_live -= bytes;
        sim->all_live -= bytes;
        sim->allocated -= bytes;
        sim->nentries--;
        return rc;
    }
    m->bytes = 0;
    return TS_OK;
}

int
ts_memsim_release(ts_memsim *sim, uint64_t key)
{
    key_slot *k = map_find(sim, key);
    int rc;
    if (k == NULL) {
        return TS_OK;
    }
    if (sim->entries[k->entry].bytes != 0) {
        rc = add_event(sim, (size_t)k->entry, -sim->entries[k->entry].bytes);
        if (rc != TS_OK) {
            return rc;
        }
        sim->entries[k->entry].bytes = 0;
    }
    k->entry = -2;
    return TS_OK;
}

int
ts_memsim_set_role(ts_memsim *sim, uint64_t key, ts_mem_role role)
{
    key_slot *k = map_find(sim, key);
    if (k == NULL
        || (role != TS_MEM_PARAMETER && role != TS_MEM_GRADIENT
            && role != TS_MEM_OPTIMIZER_STATE)) {
        return TS_EINVAL;
    }
    if (sim->entries[k->entry].role == TS_MEM_UNSET) {
        sim->entries[k->entry].role = (uint8_t)role;
    }
    return TS_OK;
}

int64_t
ts_memsim_live_bytes(const ts_memsim *sim, bool resident)
{
    return resident ? sim->all_live : sim->own_live;
}

/* ---- the report --------------------------------------------------------- */

static ts_mem_role
role_of(const mem_entry *m)
{
    if (m->role != TS_MEM_UNSET) {
        return (ts_mem_role)m->role;
    }
    if (m->existing) {
        return TS_MEM_OTHER;
    }
    return m->phase == TS_PHASE_FORWARD ? TS_MEM_ACTIVATION : TS_MEM_TEMPORARY;
}

static int
set_new(json_t *obj, const char *key, json_t *value)
{
    return value != NULL && json_object_set_new(obj, key, value) == 0 ? 0 : -1;
}

static json_t *
layer_json(int layer, ts_memsim_layer_fn fn, void *ctx)
{
    const char *path;
    int32_t call_index;
    /* without names (no modules given), a layer is not reported */
    if (layer < 0 || fn == NULL || fn(ctx, layer, &path, &call_index) != 0) {
        return json_null();
    }
    return json_pack(
        "{s:s, s:I}", "path", path, "call_index", (json_int_t)call_index);
}

/* Where event `at` happened and what was live after it. */
static json_t *
peak_json(const ts_memsim *sim, size_t at, ts_memsim_layer_fn fn, void *ctx)
{
    int64_t comp[TS_MEM_ROLE_COUNT] = {0}, own[TS_MEM_ROLE_COUNT] = {0};
    int64_t *dev = calloc(sim->devices.n ? sim->devices.n : 1, sizeof *dev);
    int64_t bytes = 0, resident = 0;
    json_t *out = NULL, *jc, *jo, *jd;
    uint32_t op;
    if (dev == NULL) {
        return NULL;
    }
    for (size_t e = 0; e < sim->nentries; e++) {
        const mem_entry *m = &sim->entries[e];
        if (m->existing) {
            comp[role_of(m)] += m->initial;
            dev[m->device] += m->initial;
            resident += m->initial;
        }
    }
    for (size_t i = 0; i <= at; i++) {
        const mem_event *ev = &sim->events[i];
        const mem_entry *m = &sim->entries[ev->entry];
        ts_mem_role r = role_of(m);
        comp[r] += ev->delta;
        dev[m->device] += ev->delta;
        resident += ev->delta;
        if (!m->existing) {
            own[r] += ev->delta;
            bytes += ev->delta;
        }
    }
    op = sim->events[at].op;
    out = json_pack("{s:I, s:I, s:s?, s:s?, s:o, s:I, s:I}",
                    "event",
                    (json_int_t)at,
                    "op_index",
                    (json_int_t)(op == NO_OP ? -1 : (int64_t)op),
                    "operator",
                    op == NO_OP ? NULL : sim->names.items[sim->ops[op].name],
                    "phase",
                    op == NO_OP ? NULL : ts_phase_name(sim->ops[op].phase),
                    "layer",
                    layer_json(op == NO_OP ? -1 : sim->ops[op].layer, fn, ctx),
                    "bytes",
                    (json_int_t)bytes,
                    "resident_bytes",
                    (json_int_t)resident);
    /* set_new steals: each object belongs to `out` once set */
    if (out == NULL || set_new(out, "composition", jc = json_object()) < 0
        || set_new(out, "allocated_composition", jo = json_object()) < 0
        || set_new(out, "by_device", jd = json_object()) < 0) {
        goto fail;
    }
    for (int r = 1; r < TS_MEM_ROLE_COUNT; r++) {
        if (set_new(jc, role_names[r], json_integer(comp[r])) < 0
            || set_new(jo, role_names[r], json_integer(own[r])) < 0) {
            goto fail;
        }
    }
    for (size_t d = 0; d < sim->devices.n; d++) {
        if (set_new(jd, sim->devices.items[d], json_integer(dev[d])) < 0) {
            goto fail;
        }
    }
    free(dev);
    return out;
fail:
    json_decref(out);
    free(dev);
    return NULL;
}

static json_t *
timeline_json(const ts_memsim *sim, ts_memsim_layer_fn fn, void *ctx)
{
    json_t *list = json_array();
    int64_t own = 0, all = sim->existing;
    for (size_t i = 0; list != NULL && i < sim->nevents; i++) {
        const mem_event *ev = &sim->events[i];
        const mem_entry *m = &sim->entries[ev->entry];
        uint32_t op = ev->op;
        json_t *row;
        all += ev->delta;
        if (!m->existing) {
            own += ev->delta;
        }
        row = json_pack(
            "{s:I, s:s?, s:s?, s:o, s:I, s:s, s:s, s:I, s:I, s:I}",
            "op_index",
            (json_int_t)(op == NO_OP ? -1 : (int64_t)op),
            "operator",
            op == NO_OP ? NULL : sim->names.items[sim->ops[op].name],
            "phase",
            op == NO_OP ? NULL : ts_phase_name(sim->ops[op].phase),
            "layer",
            layer_json(op == NO_OP ? -1 : sim->ops[op].layer, fn, ctx),
            "storage",
            (json_int_t)ev->entry,
            "role",
            role_names[role_of(m)],
            "device",
            sim->devices.items[m->device],
            "delta",
            (json_int_t)ev->delta,
            "bytes",
            (json_int_t)own,
            "resident_bytes",
            (json_int_t)all);
        if (row == NULL || json_array_append_new(list, row) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    return list;
}

json_t *
ts_memsim_report(const ts_memsim *sim,
                 bool timeline,
                 ts_memsim_layer_fn layer_fn,
                 void *layer_ctx)
{
    int64_t own = 0, all = sim->existing, peak = 0, rpeak = sim->existing;
    int64_t pk[TS_PHASE_COUNT] = {0}, rpk[TS_PHASE_COUNT] = {0};
    int64_t alloc[TS_PHASE_COUNT] = {0};
    int64_t rpk_at[TS_PHASE_COUNT] = {-1, -1, -1};
    size_t nops[TS_PHASE_COUNT] = {0};
    int64_t at = -1, rat = -1;
    json_t *out, *phases;
    for (size_t i = 0; i < sim->nops; i++) {
        nops[sim->ops[i].phase]++;
    }
    for (size_t i = 0; i < sim->nevents; i++) {
        const mem_event *ev = &sim->events[i];
        bool mine = !sim->entries[ev->entry].existing;
        int ph = ev->op == NO_OP ? TS_PHASE_FORWARD : sim->ops[ev->op].phase;
        /* sums were checked when the events were added */
        all += ev->delta;
        if (mine) {
            own += ev->delta;
            if (ev->delta > 0) {
                alloc[ph] += ev->delta;
            }
        }
        if (own > peak) {
            peak = own;
            at = (int64_t)i;
        }
        if (all > rpeak) {
            rpeak = all;
            rat = (int64_t)i;
        }
        if (own > pk[ph]) {
            pk[ph] = own;
        }
        if (all > rpk[ph]) {
            rpk[ph] = all;
            rpk_at[ph] = (int64_t)i;
        }
    }
    out = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                    "peak_bytes",
                    (json_int_t)peak,
                    "resident_peak_bytes",
                    (json_int_t)rpeak,
                    "existing_bytes",
                    (json_int_t)sim->existing,
                    "allocated_bytes",
                    (json_int_t)sim->allocated,
                    "freed_bytes",
                    (json_int_t)sim->freed,
                    "operators",
                    (json_int_t)sim->nops,
                    "storages",
                    (json_int_t)sim->nentries,
                    "events",
                    (json_int_t)sim->nevents);
    phases = json_object();
    if (out == NULL || phases == NULL
        || set_new(out,
                   "peak",
                   at < 0 ? json_null()
                          : peak_json(sim, (size_t)at, layer_fn, layer_ctx))
               < 0
        || set_new(out,
                   "resident_peak",
                   rat < 0 ? json_null()
                           : peak_json(sim, (size_t)rat, layer_fn, layer_ctx))
               < 0) {
        goto fail;
    }
    for (int p = 0; p < TS_PHASE_COUNT; p++) {
        json_t *ph =
            rpk_at[p] < 0
                ? json_null()
                : peak_json(sim, (size_t)rpk_at[p], layer_fn, layer_ctx);
        if (set_new(phases,
                    ts_phase_name((ts_phase)p),
                    json_pack("{s:I, s:I, s:I, s:I, s:o}",
                              "operators",
                              (json_int_t)nops[p],
                              "allocated_bytes",
                              (json_int_t)alloc[p],
                              "peak_bytes",
                              (json_int_t)pk[p],
                              "resident_peak_bytes",
                              (json_int_t)rpk[p],
                              "resident_peak",
                              ph))
            < 0) {
            goto fail;
        }
    }
    if (set_new(out, "phases", phases) < 0) {
        phases = NULL;
        goto fail;
    }
    phases = NULL;
    if (timeline
        && set_new(out, "timeline", timeline_json(sim, layer_fn, layer_ctx))
               < 0) {
        goto fail;
    }
    return out;
fail:
    json_decref(phases);
    json_decref(out);
    return NULL;
}
