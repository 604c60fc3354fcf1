/* Edges of the small engine files: the block-size rule and quantiles
 * (stats.c), timing refusals, the JSON builder misused (emit.c), profile
 * rows (profile.c) and the peak of a long allocation trace (memory.c). */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "torchscan/emit.h"
#include "torchscan/memory.h"
#include "torchscan/profile.h"
#include "torchscan/stats.h"

static void
test_autorange(void)
{
    int64_t next = -1;
    /* at the cap: done, unchanged */
    CHECK(ts_autorange_next(TS_AUTORANGE_MAX_NUMBER, 0.0, 1.0, &next));
    CHECK_EQ_INT(next, TS_AUTORANGE_MAX_NUMBER);
    /* long enough: done */
    CHECK(ts_autorange_next(8, 2.0, 1.0, &next));
    CHECK_EQ_INT(next, 8);
    /* number 0 is never done; it starts at 1, and a block already past
     * the target grows by the least factor, 2 */
    CHECK(!ts_autorange_next(0, 2.0, 1.0, &next));
    CHECK_EQ_INT(next, 2);
    /* no usable time: grow by 10 */
    CHECK(!ts_autorange_next(3, NAN, 1.0, &next));
    CHECK_EQ_INT(next, 30);
    CHECK(!ts_autorange_next(3, 0.0, 1.0, &next));
    CHECK_EQ_INT(next, 30);
    CHECK(!ts_autorange_next(3, 0.5, INFINITY, &next));
    CHECK_EQ_INT(next, 30);
    /* 0.2 s of a 0.5 s target: 0.5 / 0.2 * 1.25 = 3.125, ceil(4 * 3.125) */
    CHECK(!ts_autorange_next(4, 0.2, 0.5, &next));
    CHECK_EQ_INT(next, 13);
    /* far too short: 10x, capped */
    CHECK(!ts_autorange_next(1000000000, 1e-9, 1.0, &next));
    CHECK_EQ_INT(next, TS_AUTORANGE_MAX_NUMBER);
}

static void
test_quantiles_and_timing(void)
{
    const double sorted[] = {1.0, 2.0, 4.0};
    ts_timing_summary s;
    ts_error err;
    CHECK(isnan(ts_quantile_sorted(sorted, 0, 0.5)));
    CHECK_EQ_REAL(ts_quantile_sorted(sorted, 3, 1.0), 4.0);
    CHECK_EQ_REAL(ts_quantile_sorted(sorted, 3, 0.75), 3.0);
    /* q past 1 stays on the last value */
    CHECK_EQ_REAL(ts_quantile_sorted(sorted, 3, 2.0), 4.0);

    CHECK_EQ_INT(ts_timing_summarize(NULL, 1, 1, 1.0, &s, &err), TS_EINVAL);
    CHECK_EQ_STR(err.message, "timing needs at least one block");
    CHECK_EQ_INT(ts_timing_summarize(sorted, 3, 0, 1.0, &s, &err), TS_EINVAL);
    CHECK_EQ_INT(ts_timing_summarize(sorted, 0, 1, 1.0, &s, &err), TS_EINVAL);
    CHECK_EQ_INT(ts_timing_summarize(sorted, 3, INT64_MAX, 1.0, &s, &err),
                 TS_EOVERFLOW);
    CHECK_EQ_STR(err.message, "measured call count overflows");
    {
        const double bad[] = {1.0, -1.0};
        CHECK_EQ_INT(ts_timing_summarize(bad, 2, 1, 1.0, &s, &err),
                     TS_EMEASURE);
        CHECK_EQ_STR(err.message,
                     "Timing must produce positive finite durations.");
    }
    {
        /* each finite, their sum not */
        const double huge[] = {1e308, 1e308};
        CHECK_EQ_INT(ts_timing_summarize(huge, 2, 1, 1.0, &s, &err),
                     TS_EMEASURE);
        CHECK_EQ_STR(err.message,
                     "Timing must produce positive finite durations.");
    }
    CHECK_EQ_INT(ts_timing_summarize(sorted, 3, 2, 0.0, &s, &err),
                 TS_EMEASURE);
    CHECK_EQ_STR(err.message,
                 "Throughput must be positive and finite; adjust work_units.");
    CHECK_EQ_INT(ts_timing_summarize(sorted, 3, 2, INFINITY, &s, &err),
                 TS_EMEASURE);
    /* 3 blocks of 2 calls: per call 0.5, 1, 2; 7 s for 6 calls, 12 units
     * per call */
    CHECK_EQ_INT(ts_timing_summarize(sorted, 3, 2, 12.0, &s, &err), TS_OK);
    CHECK_EQ_REAL(s.median, 1.0);
    CHECK_EQ_REAL(s.p25, 0.75);
    CHECK_EQ_REAL(s.p75, 1.5);
    CHECK_EQ_INT(s.measured_calls, 6);
    CHECK_EQ_REAL(s.throughput, 12.0 / (7.0 / 6.0));

    CHECK(ts_timing_report(0.1, sorted, 3, 2, 1.0, NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message, "work_unit is required");
    CHECK(ts_timing_report(NAN, sorted, 3, 2, 1.0, "samples", &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EMEASURE);
    CHECK(ts_timing_report(0.0, sorted, 3, 2, 1.0, "samples", &err) == NULL);
    CHECK(ts_timing_report(0.1, sorted, 3, 0, 1.0, "samples", &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
}

/* A builder refuses every misuse and keeps refusing after one. */
static void
test_builder_misuse(void)
{
    ts_emitter e;
    ts_json_builder *b;

    /* a key outside an object, a value after the result */
    b = ts_json_builder_new();
    ts_json_builder_emitter(b, &e);
    CHECK_EQ_INT(e.key(e.ctx, "k"), -1);
    CHECK(ts_json_builder_take(b) == NULL);
    CHECK_EQ_INT(e.integer(e.ctx, 1), -1); /* failed for good */
    ts_json_builder_free(b);

    b = ts_json_builder_new();
    ts_json_builder_emitter(b, &e);
    CHECK_EQ_INT(e.boolean(e.ctx, false), 0);
    CHECK_EQ_INT(e.null(e.ctx), -1);
    CHECK(ts_json_builder_take(b) == NULL);
    ts_json_builder_free(b);

    /* a key inside a list; a member without a key; closing nothing */
    b = ts_json_builder_new();
    ts_json_builder_emitter(b, &e);
    CHECK_EQ_INT(e.begin_array(e.ctx), 0);
    CHECK_EQ_INT(e.key(e.ctx, "k"), -1);
    ts_json_builder_free(b);
    b = ts_json_builder_new();
    ts_json_builder_emitter(b, &e);
    CHECK_EQ_INT(e.begin_object(e.ctx), 0);
    CHECK_EQ_INT(e.string(e.ctx, "v"), -1);
    CHECK_EQ_INT(e.end_object(e.ctx), -1);
    CHECK_EQ_INT(e.begin_array(e.ctx), -1);
    CHECK_EQ_INT(e.key(e.ctx, "k"), -1);
    ts_json_builder_free(b);
    b = ts_json_builder_new();
    ts_json_builder_emitter(b, &e);
    CHECK_EQ_INT(e.end_array(e.ctx), -1);
    ts_json_builder_free(b);
    /* a NaN is no JSON number */
    b = ts_json_builder_new();
    ts_json_builder_emitter(b, &e);
    CHECK_EQ_INT(e.real(e.ctx, NAN), -1);
    ts_json_builder_free(b);
    /* an open container is no result */
    b = ts_json_builder_new();
    ts_json_builder_emitter(b, &e);
    CHECK_EQ_INT(e.begin_object(e.ctx), 0);
    CHECK(ts_json_builder_take(b) == NULL);
    ts_json_builder_free(b);
    /* 256 levels open, the 257th refused */
    b = ts_json_builder_new();
    ts_json_builder_emitter(b, &e);
    int rc = 0;
    for (int i = 0; i < 256 && rc == 0; i++) {
        rc = e.begin_array(e.ctx);
    }
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(e.begin_array(e.ctx), -1);
    ts_json_builder_free(b);

    /* a tree with every kind replays into an equal tree */
    json_t *tree = json_pack("{s:[b, b, n, f, I, s], s:{}}",
                             "a",
                             1,
                             0,
                             2.5,
                             (json_int_t)-3,
                             "x",
                             "o");
    b = ts_json_builder_new();
    ts_json_builder_emitter(b, &e);
    CHECK_EQ_INT(ts_emit_tree(&e, tree), 0);
    json_t *copy = ts_json_builder_take(b);
    CHECK(copy != NULL && json_equal(copy, tree));
    json_decref(copy);
    ts_json_builder_free(b);
    json_decref(tree);
}

static void
test_profile_rows(void)
{
    ts_error err;
    ts_profile_row rows[4];
    json_t *shapes = json_pack("[[i, i]]", 2, 3);
    CHECK(ts_profile_rows(NULL, 2, 10, false, &err) == NULL);
    CHECK_EQ_STR(err.message, "profile rows are missing");
    json_t *none = ts_profile_rows(NULL, 0, 10, false, &err);
    CHECK(json_is_array(none) && json_array_size(none) == 0);
    json_decref(none);
    memset(rows, 0, sizeof rows);
    rows[0] = (ts_profile_row){"aten::mm", 2, shapes, 0.5, true, 0.25, 64, 0};
    rows[1] = (ts_profile_row){"aten::add", 1, NULL, 0.5, true, 0.75, 0, 0};
    rows[2] = (ts_profile_row){"aten::relu", 4, NULL, 0.1, false, 0.0, 8, 0};
    rows[3] = (ts_profile_row){"[memory]", 1, NULL, 0.9, true, 0.25, -8, 0};
    rows[2].cpu_self_seconds = INFINITY;
    CHECK(ts_profile_rows(rows, 4, 10, false, &err) == NULL);
    CHECK_EQ_STR(err.message, "profile times must be finite");
    rows[2].cpu_self_seconds = 0.1;
    rows[1].device_self_seconds = NAN;
    CHECK(ts_profile_rows(rows, 4, 10, true, &err) == NULL);
    rows[1].device_self_seconds = 0.75;
    /* by device time: add 0.75, then mm and [memory] tie at 0.25 (input
     * order), relu without a device time last; 3 kept */
    json_t *out = ts_profile_rows(rows, 4, 3, true, &err);
    CHECK_EQ_INT(json_array_size(out), 3);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(out, 0), "operator")),
        "aten::add");
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(out, 1), "operator")),
        "aten::mm");
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(out, 2), "operator")),
        "[memory]");
    CHECK(json_equal(json_object_get(json_array_get(out, 1), "input_shapes"),
                     shapes));
    json_decref(out);
    /* by CPU time without device times: [memory] 0.9, then add and mm
     * tie at 0.5 (add now sits first after the previous sort) */
    out = ts_profile_rows(rows, 4, 10, false, &err);
    CHECK_EQ_INT(json_array_size(out), 4);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(out, 0), "operator")),
        "[memory]");
    CHECK(json_is_null(
        json_object_get(json_array_get(out, 0), "device_self_seconds")));
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(out, 3), "operator")),
        "aten::relu");
    json_decref(out);
    json_decref(shapes);
}

/* 1000 blocks of 8 bytes allocated, freed in another order, 500 again:
 * the peak is all 1000 live, 8000 bytes; frees of unknown blocks and
 * zero-byte events change nothing. */
static void
test_memory_trace(void)
{
    enum {
        N = 1000
    };
    ts_mem_event *ev = calloc(3 * N + 2, sizeof *ev);
    size_t n = 0;
    int64_t peak = -1;
    for (int i = 0; i < N; i++) {
        ev[n++] = (ts_mem_event){(int64_t)n, 8, 0x1000 + 64 * (uint64_t)i, 0};
    }
    for (int i = 0; i < N; i++) {
        /* a stride coprime with N visits every block */
        uint64_t k = (uint64_t)((i * 7) % N);
        ev[n++] = (ts_mem_event){(int64_t)n, -8, 0x1000 + 64 * k, 0};
    }
    ev[n++] = (ts_mem_event){(int64_t)n, -8, 0xdead0000, 0};
    ev[n++] = (ts_mem_event){(int64_t)n, 0, 0x1000, 0};
    for (int i = 0; i < N / 2; i++) {
        ev[n++] = (ts_mem_event){(int64_t)n, 8, 0x1000 + 64 * (uint64_t)i, 0};
    }
    CHECK_EQ_INT(ts_memory_peak(ev, n, &peak), TS_OK);
    CHECK_EQ_INT(peak, 8 * N);
    /* two huge blocks overflow */
    ev[0] = (ts_mem_event){1, INT64_MAX, 1, 0};
    ev[1] = (ts_mem_event){2, INT64_MAX, 2, 0};
    CHECK_EQ_INT(ts_memory_peak(ev, 2, &peak), TS_EOVERFLOW);
    free(ev);
}

int
main(void)
{
    test_autorange();
    test_quantiles_and_timing();
    test_builder_misuse();
    test_profile_rows();
    test_memory_trace();
    return ts_test_report();
}
