/* MetricResult invariants, status names and the strict check. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/core.h"

static void
test_invariants(void)
{
    json_t *m = ts_metric_new(TS_COMPLETE,
                              ts_int(42),
                              "FLOPs",
                              "forward",
                              "torchscan_module_formula");
    CHECK(m != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(m, "status")), "complete");
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "value")), 42);
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "known_value")), 42);
    CHECK_EQ_INT(ts_metric_status(m), TS_COMPLETE);
    json_decref(m);

    /* partial: value null, known_value is the lower bound */
    m = ts_metric_new(TS_PARTIAL, ts_int(7), "FLOPs", "workload", "x");
    CHECK(json_is_null(json_object_get(m, "value")));
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "known_value")), 7);
    json_decref(m);

    /* unavailable: both null whatever number is passed */
    m = ts_metric_new(TS_UNAVAILABLE, ts_int(7), "FLOPs", "workload", "x");
    CHECK(json_is_null(json_object_get(m, "value")));
    CHECK(json_is_null(json_object_get(m, "known_value")));
    CHECK_EQ_INT(json_object_size(m), 6);
    json_decref(m);

    /* reals stay reals; non-finite values are refused */
    m = ts_metric_new(
        TS_COMPLETE, ts_real(0.5), "elements", "module_call", "x");
    CHECK_EQ_REAL(json_real_value(json_object_get(m, "value")), 0.5);
    json_decref(m);
    CHECK(ts_metric_new(TS_COMPLETE, ts_real(INFINITY), "s", "x", "y")
          == NULL);
    CHECK(ts_metric_new(TS_COMPLETE, ts_real(NAN), "s", "x", "y") == NULL);
}

static void
test_names(void)
{
    CHECK_EQ_STR(ts_status_name(TS_PARTIAL), "partial");
    CHECK_EQ_INT(ts_status_parse("unavailable"), TS_UNAVAILABLE);
    CHECK_EQ_INT(ts_status_parse("done"), -1);
}

static void
test_checked_math(void)
{
    int64_t out = 0;
    ts_shape s = {3, {2, 3, 4}, TS_DTYPE_FLOAT, true, 4};
    CHECK(ts_shape_numel(&s, &out));
    CHECK_EQ_INT(out, 24);
    CHECK(!ts_mul(INT64_MAX, 2, &out));
    CHECK(!ts_add(INT64_MAX, 1, &out));
    s.ndim = 0;
    CHECK(ts_shape_numel(&s, &out));
    CHECK_EQ_INT(out, 1);
}

/* The strict message names every total that is neither complete nor
 * not_requested and every diagnostic's metric, sorted, each once. */
static void
test_strict_check(void)
{
    json_t *report = json_pack(
        "{s:{s:o, s:o, s:o, s:o}, s:[{s:s}, {s:s}, {s:s}]}",
        "totals",
        "a",
        ts_metric_new(TS_COMPLETE, ts_int(1), "FLOPs", "forward", "x"),
        "d",
        ts_metric_new(TS_UNAVAILABLE, ts_int(0), "FLOPs", "forward", "x"),
        "b",
        ts_metric_new(TS_PARTIAL, ts_int(1), "FLOPs", "forward", "x"),
        "c",
        ts_metric_new(
            TS_UNAVAILABLE, ts_int(0), "FLOPs", "forward", "not_requested"),
        "diagnostics",
        "metric",
        "b",
        "metric",
        "a",
        "code",
        "no_metric");
    char *message = NULL;
    CHECK(ts_report_incomplete(report, &message));
    CHECK_EQ_STR(message, "Analysis is incomplete for: a, b, d.");
    free(message);
    json_decref(report);

    /* complete totals and no diagnostic: nothing to report */
    report = json_pack(
        "{s:{s:o}, s:[]}",
        "totals",
        "a",
        ts_metric_new(TS_COMPLETE, ts_int(1), "FLOPs", "forward", "x"),
        "diagnostics");
    CHECK(!ts_report_incomplete(report, &message));
    CHECK(message != NULL);
    free(message);
    json_decref(report);
}

int
main(void)
{
    test_invariants();
    test_names();
    test_checked_math();
    test_strict_check();
    return ts_test_report();
}
