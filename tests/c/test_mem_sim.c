/* The memory simulator: hand-computed sequences of allocations, frees and
 * resizes, the two peaks, their location and composition, phases, and a
 * key map that grows and reuses keys. */
#include <jansson.h>
#include <string.h>

#include "harness.h"
#include "torchscan/core.h"
#include "torchscan/mem_sim.h"

static int64_t
iget(const json_t *obj, const char *path1, const char *path2)
{
    const json_t *v = json_object_get(obj, path1);
    if (path2 != NULL) {
        v = json_object_get(v, path2);
    }
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -999;
}

static int
layer_name(void *ctx, int layer, const char **path, int32_t *call_index)
{
    (void)ctx;
    if (layer != 0) {
        return -1;
    }
    *path = "blocks.0";
    *call_index = 1;
    return 0;
}

/* A parameter of 1000 B exists; forward: mm allocates 400 (key 1), relu
 * 400 (key 2), key 1 freed, add_ in place; backward: mm allocates the
 * 1000 B gradient (key 3): own 1400, resident 2400, the peak; key 2 and
 * the parameter freed; key 3 resized to 1200 (own 1200, below). */
static void
test_sequence(void)
{
    ts_memsim *sim = ts_memsim_new();
    json_t *r, *peak, *comp, *own, *phases, *tl;
    CHECK(sim != NULL);
    if (sim == NULL) {
        return;
    }
    CHECK_EQ_INT(ts_memsim_observe(sim, 100, 1000, "cpu", true), TS_OK);
    CHECK_EQ_INT(ts_memsim_set_role(sim, 100, TS_MEM_PARAMETER), TS_OK);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, true), 1000);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, false), 0);
    CHECK_EQ_INT(ts_memsim_op(sim, "aten.mm.default", TS_PHASE_FORWARD, 0),
                 TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 1, 400, "cpu", false), TS_OK);
    CHECK_EQ_INT(ts_memsim_op(sim, "aten.relu.default", TS_PHASE_FORWARD, 0),
                 TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 2, 400, "cpu", false), TS_OK);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, false), 800);
    CHECK_EQ_INT(ts_memsim_release(sim, 1), TS_OK);
    CHECK(!ts_memsim_known(sim, 1));
    CHECK_EQ_INT(ts_memsim_op(sim, "aten.add_.Tensor", TS_PHASE_FORWARD, -1),
                 TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 2, 400, "cpu", false), TS_OK);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, false), 400);
    CHECK_EQ_INT(ts_memsim_op(sim, "aten.mm.default", TS_PHASE_BACKWARD, 0),
                 TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 3, 1000, "cpu", false), TS_OK);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, true), 2400);
    CHECK_EQ_INT(ts_memsim_release(sim, 2), TS_OK);
    CHECK_EQ_INT(ts_memsim_release(sim, 100), TS_OK);
    CHECK_EQ_INT(ts_memsim_release(sim, 555), TS_OK); /* unknown: ignored */
    CHECK_EQ_INT(ts_memsim_observe(sim, 3, 1200, "cpu", false), TS_OK);
    /* named after its allocation: counts as a gradient at the peak */
    CHECK_EQ_INT(ts_memsim_set_role(sim, 3, TS_MEM_GRADIENT), TS_OK);
    CHECK_EQ_INT(ts_memsim_set_role(sim, 3, TS_MEM_OPTIMIZER_STATE), TS_OK);
    CHECK_EQ_INT(ts_memsim_set_role(sim, 4, TS_MEM_GRADIENT), TS_EINVAL);
    CHECK_EQ_INT(ts_memsim_set_role(sim, 3, TS_MEM_ACTIVATION), TS_EINVAL);
    CHECK_EQ_INT(ts_memsim_observe(sim, 9, -1, "cpu", false), TS_EINVAL);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, false), 1200);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, true), 1200);

    r = ts_memsim_report(sim, true, layer_name, NULL);
    CHECK(r != NULL);
    if (r == NULL) {
        ts_memsim_free(sim);
        return;
    }
    CHECK_EQ_INT(iget(r, "peak_bytes", NULL), 1400);
    CHECK_EQ_INT(iget(r, "resident_peak_bytes", NULL), 2400);
    CHECK_EQ_INT(iget(r, "existing_bytes", NULL), 1000);
    CHECK_EQ_INT(iget(r, "allocated_bytes", NULL), 400 + 400 + 1000 + 200);
    CHECK_EQ_INT(iget(r, "freed_bytes", NULL), 400 + 400 + 1000);
    CHECK_EQ_INT(iget(r, "operators", NULL), 4);
    CHECK_EQ_INT(iget(r, "storages", NULL), 4);
    CHECK_EQ_INT(iget(r, "events", NULL), 7);
    peak = json_object_get(r, "peak");
    CHECK_EQ_INT(iget(peak, "event", NULL), 3);
    CHECK_EQ_INT(iget(peak, "op_index", NULL), 3);
    CHECK_EQ_STR(json_string_value(json_object_get(peak, "operator")),
                 "aten.mm.default");
    CHECK_EQ_STR(json_string_value(json_object_get(peak, "phase")),
                 "backward");
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(peak, "layer"), "path")),
                 "blocks.0");
    CHECK_EQ_INT(iget(peak, "layer", "call_index"), 1);
    CHECK_EQ_INT(iget(peak, "bytes", NULL), 1400);
    CHECK_EQ_INT(iget(peak, "resident_bytes", NULL), 2400);
    comp = json_object_get(peak, "composition");
    CHECK_EQ_INT(iget(comp, "parameter", NULL), 1000);
    CHECK_EQ_INT(iget(comp, "gradient", NULL), 1000);
    CHECK_EQ_INT(iget(comp, "activation", NULL), 400);
    CHECK_EQ_INT(iget(comp, "temporary", NULL), 0);
    CHECK_EQ_INT(iget(comp, "optimizer_state", NULL), 0);
    CHECK_EQ_INT(iget(comp, "other", NULL), 0);
    own = json_object_get(peak, "allocated_composition");
    CHECK_EQ_INT(iget(own, "parameter", NULL), 0);
    CHECK_EQ_INT(iget(own, "gradient", NULL), 1000);
    CHECK_EQ_INT(iget(own, "activation", NULL), 400);
    CHECK_EQ_INT(iget(peak, "by_device", "cpu"), 2400);
    /* the resident peak is the same event here */
    CHECK_EQ_INT(iget(r, "resident_peak", "event"), 3);
    phases = json_object_get(r, "phases");
    CHECK_EQ_INT(iget(json_object_get(phases, "forward"), "operators", NULL),
                 3);
    CHECK_EQ_INT(
        iget(json_object_get(phases, "forward"), "allocated_bytes", NULL),
        800);
    CHECK_EQ_INT(iget(json_object_get(phases, "forward"), "peak_bytes", NULL),
                 800);
    CHECK_EQ_INT(
        iget(json_object_get(phases, "forward"), "resident_peak_bytes", NULL),
        1800);
    CHECK_EQ_INT(
        iget(json_object_get(phases, "backward"), "allocated_bytes", NULL),
        1200);
    CHECK_EQ_INT(iget(json_object_get(phases, "backward"), "peak_bytes", NULL),
                 1400);
    CHECK_EQ_INT(iget(json_object_get(phases, "optimizer"), "operators", NULL),
                 0);
    {
        json_t *fwd = json_object_get(phases, "forward");
        json_t *fpeak = json_object_get(fwd, "resident_peak");
        CHECK(json_is_null(json_object_get(
            json_object_get(phases, "optimizer"), "resident_peak")));
        /* the forward's resident peak: after relu, parameter + two
         * outputs */
        CHECK_EQ_INT(iget(fpeak, "event", NULL), 1);
        CHECK_EQ_INT(iget(fpeak, "resident_bytes", NULL), 1800);
        CHECK_EQ_INT(
            iget(json_object_get(fpeak, "composition"), "activation", NULL),
            800);
    }
    tl = json_object_get(r, "timeline");
    CHECK_EQ_INT(json_array_size(tl), 7);
    /* the free of the parameter: resident only */
    CHECK_EQ_INT(iget(json_array_get(tl, 5), "delta", NULL), -1000);
    CHECK_EQ_INT(iget(json_array_get(tl, 5), "bytes", NULL), 1000);
    CHECK_EQ_INT(iget(json_array_get(tl, 5), "resident_bytes", NULL), 1000);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(tl, 5), "role")),
        "parameter");
    CHECK_EQ_INT(iget(json_array_get(tl, 6), "delta", NULL), 200);
    /* the free of key 1 came after relu, in layer 0 */
    CHECK_EQ_INT(iget(json_array_get(tl, 2), "layer", "call_index"), 1);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(tl, 2), "operator")),
        "aten.relu.default");
    json_decref(r);
    ts_memsim_free(sim);
}

/* Existing storages seen late still count from the start; releasing them
 * never lowers the workload's own bytes; an empty run has no peak. */
static void
test_existing_and_empty(void)
{
    ts_memsim *sim = ts_memsim_new();
    json_t *r;
    CHECK(sim != NULL);
    if (sim == NULL) {
        return;
    }
    r = ts_memsim_report(sim, false, NULL, NULL);
    CHECK(r != NULL && json_is_null(json_object_get(r, "peak")));
    CHECK_EQ_INT(iget(r, "peak_bytes", NULL), 0);
    CHECK(json_object_get(r, "timeline") == NULL);
    json_decref(r);
    CHECK_EQ_INT(
        ts_memsim_op(sim, "aten.empty.memory_format", TS_PHASE_FORWARD, -1),
        TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 7, 64, "meta", false), TS_OK);
    /* an input first seen now: resident 64 + 32 from the start */
    CHECK_EQ_INT(ts_memsim_observe(sim, 8, 32, "cpu", true), TS_OK);
    CHECK_EQ_INT(ts_memsim_release(sim, 8), TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 10, 16, "meta", false), TS_OK);
    r = ts_memsim_report(sim, false, NULL, NULL);
    CHECK_EQ_INT(iget(r, "peak_bytes", NULL), 80);
    CHECK_EQ_INT(iget(r, "resident_peak_bytes", NULL), 96);
    CHECK_EQ_INT(iget(r, "resident_peak", "event"), 0);
    CHECK_EQ_INT(iget(r, "peak", "event"), 2);
    CHECK_EQ_INT(iget(json_object_get(r, "peak"), "by_device", "meta"), 80);
    CHECK_EQ_INT(iget(json_object_get(r, "peak"), "by_device", "cpu"), 0);
    CHECK_EQ_INT(iget(json_object_get(r, "peak"), "layer", NULL), -999);
    CHECK(json_is_null(json_object_get(json_object_get(r, "peak"), "layer")));
    json_decref(r);
    ts_memsim_free(sim);
}

/* A kernel's workspace: beside the output while the kernel runs, freed
 * before it returns. */
static void
test_workspace(void)
{
    ts_memsim *sim = ts_memsim_new();
    json_t *r, *comp;
    CHECK(sim != NULL);
    if (sim == NULL) {
        return;
    }
    CHECK_EQ_INT(ts_memsim_op(sim, "aten.convolution", TS_PHASE_FORWARD, -1),
                 TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 1, 100, "cpu", false), TS_OK);
    CHECK_EQ_INT(ts_memsim_workspace(sim, 50, "cpu"), TS_OK);
    CHECK_EQ_INT(ts_memsim_workspace(sim, -1, "cpu"), TS_EINVAL);
    CHECK_EQ_INT(ts_memsim_workspace(sim, 0, "cpu"), TS_OK); /* nothing */
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, false), 100);
    CHECK_EQ_INT(ts_memsim_op(sim, "aten.relu", TS_PHASE_FORWARD, -1), TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 2, 100, "cpu", false), TS_OK);
    r = ts_memsim_report(sim, false, NULL, NULL);
    CHECK_EQ_INT(iget(r, "peak_bytes", NULL), 200);
    CHECK_EQ_INT(iget(r, "allocated_bytes", NULL), 250);
    CHECK_EQ_INT(iget(r, "freed_bytes", NULL), 50);
    CHECK_EQ_INT(iget(r, "events", NULL), 4);
    json_decref(r);
    /* a larger workspace makes the peak: 100 + 100 + 300 */
    CHECK_EQ_INT(ts_memsim_workspace(sim, 300, "cpu"), TS_OK);
    r = ts_memsim_report(sim, false, NULL, NULL);
    CHECK_EQ_INT(iget(r, "peak_bytes", NULL), 500);
    comp = json_object_get(json_object_get(r, "peak"), "composition");
    CHECK_EQ_INT(iget(comp, "workspace", NULL), 300);
    CHECK_EQ_INT(iget(comp, "activation", NULL), 200);
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(r, "peak"), "operator")),
                 "aten.relu");
    json_decref(r);
    ts_memsim_free(sim);
}

/* 20,000 storages alive at once, then freed one by one and their keys
 * reused: the map grows and sweeps deleted slots. */
static void
test_many(void)
{
    ts_memsim *sim = ts_memsim_new();
    int bad = 0;
    CHECK(sim != NULL);
    if (sim == NULL) {
        return;
    }
    for (uint64_t k = 1; k <= 20000; k++) {
        bad += ts_memsim_observe(sim, k * 16, 8, "cpu", false) != TS_OK;
    }
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, false), 160000);
    for (int round = 0; round < 3; round++) {
        for (uint64_t k = 1; k <= 20000; k++) {
            bad += ts_memsim_release(sim, k * 16) != TS_OK;
            bad += ts_memsim_observe(sim, k * 16, 4, "cpu", false) != TS_OK;
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(ts_memsim_live_bytes(sim, false), 80000);
    for (uint64_t k = 1; k <= 20000; k++) {
        bad += !ts_memsim_known(sim, k * 16);
    }
    CHECK_EQ_INT(bad, 0);
    ts_memsim_free(sim);
}

/* The MemoryReport around the simulation: statuses and diagnostics from
 * what ran (nothing: unavailable; unreadable storages: partial), the saved
 * activations taken over as given. */
static const char *
code_of(const json_t *report, size_t i, const char **metric)
{
    const json_t *d =
        json_array_get(json_object_get(report, "diagnostics"), i);
    *metric = json_string_value(json_object_get(d, "metric"));
    return json_string_value(json_object_get(d, "code"));
}

static void
test_memory_report(void)
{
    ts_memsim *sim = ts_memsim_new();
    ts_memory_report_info info = {"2.13.0", "fused", 0, NULL};
    const char *metric = NULL;
    json_t *r, *saved_total;
    CHECK(sim != NULL);
    if (sim == NULL) {
        return;
    }
    /* no operator: both totals unavailable, one diagnostic each */
    r = ts_memory_report(sim, false, NULL, NULL, &info);
    CHECK_EQ_INT(iget(r, "schema_version", NULL), 1);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(r, "context"), "attention")),
                 "fused");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(r, "context"), "torch_version")),
                 "2.13.0");
    CHECK_EQ_INT(ts_metric_status(json_object_get(json_object_get(r, "totals"),
                                                  "peak_bytes")),
                 TS_UNAVAILABLE);
    CHECK_EQ_INT(json_array_size(json_object_get(r, "diagnostics")), 2);
    CHECK_EQ_STR(code_of(r, 0, &metric), "measurement_unavailable");
    CHECK_EQ_STR(metric, "peak_bytes");
    CHECK_EQ_STR(code_of(r, 1, &metric), "measurement_unavailable");
    CHECK_EQ_STR(metric, "resident_peak_bytes");
    CHECK(json_object_get(r, "peak_bytes") == NULL);
    CHECK(json_object_get(r, "layers") == NULL);
    json_decref(r);

    /* 96 bytes allocated over 32 existing, 3 tensors unreadable: partial
     * lower bounds 96 and 128 */
    CHECK_EQ_INT(ts_memsim_op(sim, "aten.mm", TS_PHASE_FORWARD, -1), TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 1, 32, "cpu", true), TS_OK);
    CHECK_EQ_INT(ts_memsim_observe(sim, 2, 96, "cpu", false), TS_OK);
    info.unobserved = 3;
    info.saved = json_pack(
        "{s:[{s:s, s:i, s:o}], s:o}",
        "layers",
        "path",
        "fc",
        "call_index",
        0,
        "saved_activation_bytes",
        ts_metric_new(
            TS_PARTIAL, ts_int(40), "bytes", "module_call_self", "h"),
        "total",
        ts_metric_new(TS_PARTIAL, ts_int(40), "bytes", "workload", "h"));
    CHECK(info.saved != NULL);
    saved_total = json_incref(json_object_get(info.saved, "total"));
    r = ts_memory_report(sim, false, NULL, NULL, &info);
    {
        json_t *totals = json_object_get(r, "totals");
        json_t *peak = json_object_get(totals, "peak_bytes");
        json_t *resident = json_object_get(totals, "resident_peak_bytes");
        CHECK_EQ_INT(ts_metric_status(peak), TS_PARTIAL);
        CHECK(json_is_null(json_object_get(peak, "value")));
        CHECK_EQ_INT(iget(peak, "known_value", NULL), 96);
        CHECK_EQ_INT(iget(resident, "known_value", NULL), 128);
        CHECK_EQ_STR(json_string_value(json_object_get(resident, "scope")),
                     "simulated_resident_tensor_bytes");
        CHECK_EQ_STR(json_string_value(json_object_get(peak, "method")),
                     "torchscan_memory_simulation");
        CHECK(json_equal(json_object_get(totals, "saved_activation_bytes"),
                         saved_total));
    }
    CHECK_EQ_INT(iget(r, "unobserved", NULL), 3);
    CHECK_EQ_INT(iget(r, "operators", NULL), 1);
    CHECK_EQ_INT(json_array_size(json_object_get(r, "layers")), 1);
    CHECK_EQ_INT(json_array_size(json_object_get(r, "diagnostics")), 3);
    CHECK_EQ_STR(code_of(r, 1, &metric), "unobserved_storage");
    CHECK_EQ_STR(metric, "resident_peak_bytes");
    CHECK(strstr(json_string_value(json_object_get(
                     json_array_get(json_object_get(r, "diagnostics"), 0),
                     "message")),
                 "3 tensor(s)")
          != NULL);
    CHECK_EQ_STR(code_of(r, 2, &metric), "unmeasured_saved_tensor");
    CHECK_EQ_STR(metric, "saved_activation_bytes");
    json_decref(r);
    json_decref(saved_total);

    /* everything read: complete, no diagnostic */
    info.unobserved = 0;
    info.saved = NULL;
    r = ts_memory_report(sim, false, NULL, NULL, &info);
    CHECK_EQ_INT(ts_metric_status(json_object_get(json_object_get(r, "totals"),
                                                  "peak_bytes")),
                 TS_COMPLETE);
    CHECK_EQ_INT(iget(json_object_get(r, "totals"), "peak_bytes", "value"),
                 96);
    CHECK_EQ_INT(json_array_size(json_object_get(r, "diagnostics")), 0);
    json_decref(r);
    ts_memsim_free(sim);
}

int
main(void)
{
    test_sequence();
    test_existing_and_empty();
    test_workspace();
    test_many();
    test_memory_report();
    CHECK(ts_mem_role_name(TS_MEM_UNSET) == NULL);
    CHECK_EQ_STR(ts_mem_role_name(TS_MEM_OPTIMIZER_STATE), "optimizer_state");
    CHECK_EQ_STR(ts_mem_role_name(TS_MEM_WORKSPACE), "workspace");
    CHECK(ts_mem_role_name((ts_mem_role)TS_MEM_ROLE_COUNT) == NULL);
    return ts_test_report();
}
