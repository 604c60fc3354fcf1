/* mem_sim.c paths test_mem_sim.c leaves out: sums past int64 for new,
 * existing and workspace storages (refused and forgotten), an existing
 * storage that changes size, zero-byte observations and releases, 100
 * operator names and 40 devices (the string tables grow), and layers the
 * caller cannot name. Every number is the hand sum of the bytes fed. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/mem_sim.h"

static int
name_layer(void *ctx, int layer, const char **path, int32_t *call_index)
{
    (void)ctx;
    if (layer == 1) {
        return -1; /* a layer the caller cannot name */
    }
    *path = "blk";
    *call_index = layer;
    return 0;
}

static void
test_overflow(void)
{
    ts_memsim *sim = ts_memsim_new();
    CHECK_EQ_INT(ts_memsim_observe(sim, 1, -1, "cpu", false), TS_EINVAL);
    CHECK_EQ_INT(ts_memsim_workspace(sim, -1, "cpu"), TS_EINVAL);
    CHECK_EQ_INT(ts_memsim_workspace(sim, 0, "cpu"), TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 1, INT64_MAX - 10, NULL, false),
                 TS_OK);
    /* a second large storage overflows: refused and not kept */
    CHECK_EQ_INT(ts_memsim_observe(sim, 2, 20, NULL, false), TS_EOVERFLOW);
    CHECK(!ts_memsim_known(sim, 2));
    CHECK_EQ_INT(ts_memsim_workspace(sim, 20, NULL), TS_EOVERFLOW);
    /* an existing storage whose bytes do not fit the resident sum */
    CHECK_EQ_INT(ts_memsim_observe(sim, 3, 20, "cpu", true), TS_EOVERFLOW);
    CHECK(!ts_memsim_known(sim, 3));
    /* growing the first one past the range */
    CHECK_EQ_INT(ts_memsim_observe(sim, 1, INT64_MAX, NULL, false), TS_OK);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, false), INT64_MAX);
    CHECK_EQ_INT(ts_memsim_release(sim, 1), TS_OK);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, false), 0);
    /* INT64_MAX bytes were allocated in all: 64 more do not fit the
     * allocated sum even with nothing live; the refusal leaves the sums
     * as they were (an overflowing sum used to be stored wrapped, and the
     * next storage was then accepted) */
    CHECK_EQ_INT(ts_memsim_workspace(sim, 64, "cuda:0"), TS_EOVERFLOW);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, true), 0);
    CHECK_EQ_INT(ts_memsim_observe(sim, 4, 64, "cpu", false), TS_EOVERFLOW);
    CHECK(!ts_memsim_known(sim, 4));
    json_t *r = ts_memsim_report(sim, false, NULL, NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(r, "allocated_bytes")),
                 INT64_MAX);
    CHECK_EQ_INT(json_integer_value(json_object_get(r, "freed_bytes")),
                 INT64_MAX);
    json_decref(r);
    ts_memsim_free(sim);

    /* an existing storage's release counts as freed, not its allocation:
     * a workspace then allocates but cannot free, and is undone */
    sim = ts_memsim_new();
    CHECK_EQ_INT(ts_memsim_observe(sim, 7, INT64_MAX - 10, "cpu", true),
                 TS_OK);
    CHECK_EQ_INT(ts_memsim_release(sim, 7), TS_OK);
    CHECK_EQ_INT(ts_memsim_workspace(sim, 64, "cpu"), TS_EOVERFLOW);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, true), 0);
    r = ts_memsim_report(sim, false, NULL, NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(r, "allocated_bytes")), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(r, "freed_bytes")),
                 INT64_MAX - 10);
    /* the release alone: one event */
    CHECK_EQ_INT(json_integer_value(json_object_get(r, "events")), 1);
    json_decref(r);
    ts_memsim_free(sim);
}

static void
test_existing_and_tables(void)
{
    ts_memsim *sim = ts_memsim_new();
    char name[32];
    /* 100 operators, 40 devices: a storage of 10 bytes on each device */
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "aten.op%d", i);
        CHECK_EQ_INT(
            ts_memsim_op(sim,
                         name,
                         i < 50 ? TS_PHASE_FORWARD : TS_PHASE_BACKWARD,
                         i % 3),
            TS_OK);
        if (i < 40) {
            snprintf(name, sizeof name, "cuda:%d", i);
            CHECK_EQ_INT(
                ts_memsim_observe(sim, 100 + (uint64_t)i, 10, name, false),
                TS_OK);
        }
    }
    /* the same name again reuses its entry */
    CHECK_EQ_INT(ts_memsim_op(sim, "aten.op7", TS_PHASE_BACKWARD, 2), TS_OK);
    /* an existing storage (a parameter) of 1000 bytes grows to 1500, then
     * shrinks to 200; a zero-byte storage is kept without an event */
    CHECK_EQ_INT(ts_memsim_observe(sim, 7, 1000, "cpu", true), TS_OK);
    CHECK_EQ_INT(ts_memsim_set_role(sim, 7, TS_MEM_PARAMETER), TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 7, 1000, "cpu", true), TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 7, 1500, "cpu", true), TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 7, 200, "cpu", true), TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 8, 0, "cpu", false), TS_OK);
    CHECK(ts_memsim_known(sim, 8));
    CHECK_EQ_INT(ts_memsim_release(sim, 8), TS_OK);
    CHECK(!ts_memsim_known(sim, 8));
    CHECK_EQ_INT(ts_memsim_release(sim, 999), TS_OK); /* unknown: nothing */
    /* live: 40 * 10 own, plus 200 resident */
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, false), 400);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, true), 600);
    json_t *r = ts_memsim_report(sim, true, name_layer, NULL);
    CHECK(r != NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(r, "peak_bytes")), 400);
    /* resident peak: 400 own + 1500 while the parameter was largest */
    CHECK_EQ_INT(json_integer_value(json_object_get(r, "resident_peak_bytes")),
                 1900);
    json_t *timeline = json_object_get(r, "timeline");
    /* 40 allocations, +500, -1300 */
    CHECK_EQ_INT(json_array_size(timeline), 42);
    json_t *last = json_array_get(timeline, 41);
    CHECK_EQ_INT(json_integer_value(json_object_get(last, "delta")), -1300);
    CHECK_EQ_STR(json_string_value(json_object_get(last, "role")),
                 "parameter");
    CHECK_EQ_INT(json_integer_value(json_object_get(last, "resident_bytes")),
                 600);
    /* the last op ran in layer 2: named; op 1's layer 1 is not */
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(last, "layer"), "path")),
                 "blk");
    json_t *second = json_array_get(timeline, 1);
    CHECK_EQ_STR(json_string_value(json_object_get(second, "operator")),
                 "aten.op1");
    CHECK(json_is_null(json_object_get(second, "layer")));
    CHECK_EQ_STR(json_string_value(json_object_get(second, "device")),
                 "cuda:1");
    json_decref(r);
    ts_memsim_free(sim);
}

int
main(void)
{
    test_overflow();
    test_existing_and_tables();
    return ts_test_report();
}
