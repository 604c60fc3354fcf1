/* Timing statistics: block-size rule, quantiles, median/IQR/throughput. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/stats.h"

static void
test_autorange_rule(void)
{
    int64_t next = -1;
    /* A block that reaches the target is final. */
    CHECK(ts_autorange_next(7, 0.02, 0.02, &next));
    CHECK_EQ_INT(next, 7);
    CHECK(ts_autorange_next(1, 0.5, 0.02, &next));
    CHECK_EQ_INT(next, 1);
    /* Far below the target: at most 10x per calibration block. */
    CHECK(!ts_autorange_next(1, 1e-7, 0.02, &next));
    CHECK_EQ_INT(next, 10);
    CHECK(!ts_autorange_next(1000, 1e-5, 0.02, &next));
    CHECK_EQ_INT(next, 10000);
    /* Close below it: at least 2x. */
    CHECK(!ts_autorange_next(100, 0.019, 0.02, &next));
    CHECK_EQ_INT(next, 200);
    /* In between: number * target / seconds * 1.25, rounded up:
     * 100 * 0.02 / 0.005 * 1.25 = 500. */
    CHECK(!ts_autorange_next(100, 0.005, 0.02, &next));
    CHECK_EQ_INT(next, 500);
    /* 3 * 4 * 1.25 = 15 */
    CHECK(!ts_autorange_next(3, 0.005, 0.02, &next));
    CHECK_EQ_INT(next, 15);
    /* A zero or broken clock reading grows by 10x. */
    CHECK(!ts_autorange_next(10, 0.0, 0.02, &next));
    CHECK_EQ_INT(next, 100);
    CHECK(!ts_autorange_next(10, NAN, 0.02, &next));
    CHECK_EQ_INT(next, 100);
    /* The cap ends calibration. */
    CHECK(!ts_autorange_next(TS_AUTORANGE_MAX_NUMBER / 2, 1e-9, 0.02, &next));
    CHECK_EQ_INT(next, TS_AUTORANGE_MAX_NUMBER);
    CHECK(ts_autorange_next(TS_AUTORANGE_MAX_NUMBER, 1e-9, 0.02, &next));
    CHECK_EQ_INT(next, TS_AUTORANGE_MAX_NUMBER);
}

static void
test_quantiles(void)
{
    /* torch.tensor([1., 2., 3., 4.]).quantile(q): 0.25 -> 1.75,
     * 0.5 -> 2.5, 0.75 -> 3.25 */
    const double four[] = {1.0, 2.0, 3.0, 4.0};
    const double one[] = {5.0};
    CHECK_EQ_REAL(ts_quantile_sorted(four, 4, 0.25), 1.75);
    CHECK_EQ_REAL(ts_quantile_sorted(four, 4, 0.5), 2.5);
    CHECK_EQ_REAL(ts_quantile_sorted(four, 4, 0.75), 3.25);
    CHECK_EQ_REAL(ts_quantile_sorted(four, 4, 0.0), 1.0);
    CHECK_EQ_REAL(ts_quantile_sorted(four, 4, 1.0), 4.0);
    CHECK_EQ_REAL(ts_quantile_sorted(one, 1, 0.25), 5.0);
    CHECK(isnan(ts_quantile_sorted(one, 0, 0.5)));
}

static void
test_pinned_summary(void)
{
    /* The contract's pinned case: number_per_run 4, raw blocks
     * [0.02, 0.04, 0.18, 0.08, 0.08]. Per call: 0.005, 0.01, 0.045, 0.02,
     * 0.02 -> sorted 0.005, 0.01, 0.02, 0.02, 0.045: median 0.02,
     * p25 0.01, p75 0.02, IQR 0.01. 20 calls in 0.40 s: 0.02 s per call,
     * 8 work units per call -> 400 per second. */
    const double raw[] = {0.02, 0.04, 0.18, 0.08, 0.08};
    ts_timing_summary s;
    ts_error err;
    CHECK_EQ_INT(ts_timing_summarize(raw, 5, 4, 8.0, &s, &err), TS_OK);
    CHECK_EQ_REAL(s.median, 0.02);
    CHECK_EQ_REAL(s.p25, 0.01);
    CHECK_EQ_REAL(s.p75, 0.02);
    CHECK_EQ_REAL(s.iqr, 0.01);
    CHECK_EQ_REAL(s.total_seconds, 0.40);
    CHECK_EQ_INT(s.measured_calls, 20);
    CHECK_EQ_REAL(s.throughput, 400.0);
    /* the input is not reordered */
    CHECK_EQ_REAL(raw[2], 0.18);
}

static void
test_even_block_count(void)
{
    /* Two blocks of 10 calls: 0.1 s and 0.3 s -> 0.01 and 0.03 per call,
     * median 0.02, p25 0.015, p75 0.025; throughput 20 calls / 0.4 s * 1
     * unit = 50. */
    const double raw[] = {0.3, 0.1};
    ts_timing_summary s;
    ts_error err;
    CHECK_EQ_INT(ts_timing_summarize(raw, 2, 10, 1.0, &s, &err), TS_OK);
    CHECK_EQ_REAL(s.median, 0.02);
    CHECK_EQ_REAL(s.iqr, 0.01);
    CHECK_EQ_REAL(s.throughput, 50.0);
}

static void
test_errors(void)
{
    const double zero[] = {0.02, 0.0};
    const double negative[] = {-1e-3};
    const double inf[] = {INFINITY};
    const double ok[] = {0.1};
    ts_timing_summary s;
    ts_error err;
    CHECK_EQ_INT(ts_timing_summarize(zero, 2, 1, 1.0, &s, &err), TS_EMEASURE);
    CHECK_EQ_STR(err.message,
                 "Timing must produce positive finite durations.");
    CHECK_EQ_INT(ts_timing_summarize(negative, 1, 1, 1.0, &s, &err),
                 TS_EMEASURE);
    CHECK_EQ_INT(ts_timing_summarize(inf, 1, 1, 1.0, &s, &err), TS_EMEASURE);
    /* work units so large the throughput overflows to infinity */
    CHECK_EQ_INT(ts_timing_summarize(ok, 1, 1, 1e308, &s, &err), TS_EMEASURE);
    CHECK_EQ_STR(err.message,
                 "Throughput must be positive and finite; adjust "
                 "work_units.");
    CHECK_EQ_INT(ts_timing_summarize(ok, 0, 1, 1.0, &s, &err), TS_EINVAL);
    CHECK_EQ_INT(ts_timing_summarize(ok, 1, 0, 1.0, &s, &err), TS_EINVAL);
    CHECK_EQ_INT(ts_timing_summarize(NULL, 1, 1, 1.0, &s, &err), TS_EINVAL);
    CHECK_EQ_INT(
        ts_timing_summarize(ok, 1, TS_AUTORANGE_MAX_NUMBER, 1.0, &s, &err),
        TS_OK);
}

static void
test_report(void)
{
    const double raw[] = {0.02, 0.04, 0.18, 0.08, 0.08};
    ts_error err;
    json_t *report = ts_timing_report(0.5, raw, 5, 4, 8.0, "samples", &err);
    json_t *totals;
    json_t *m;
    CHECK(report != NULL);
    if (report == NULL) {
        return;
    }
    totals = json_object_get(report, "totals");
    CHECK_EQ_INT(json_object_size(totals), 4);
    m = json_object_get(totals, "first_call_latency");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "status")), "complete");
    CHECK_EQ_REAL(json_real_value(json_object_get(m, "value")), 0.5);
    CHECK_EQ_REAL(json_real_value(json_object_get(m, "known_value")), 0.5);
    CHECK_EQ_STR(json_string_value(json_object_get(m, "unit")), "seconds");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "scope")), "first_call");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "method")),
                 "synchronized_monotonic_clock");
    m = json_object_get(totals, "latency");
    CHECK_EQ_REAL(json_real_value(json_object_get(m, "value")), 0.02);
    CHECK_EQ_STR(json_string_value(json_object_get(m, "scope")),
                 "warmed_block_average");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "method")),
                 "torchscan_blocked_timer");
    m = json_object_get(totals, "latency_iqr");
    CHECK_EQ_REAL(json_real_value(json_object_get(m, "value")), 0.01);
    m = json_object_get(totals, "throughput");
    CHECK_EQ_REAL(json_real_value(json_object_get(m, "value")), 400.0);
    CHECK_EQ_STR(json_string_value(json_object_get(m, "unit")), "samples/s");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "scope")),
                 "warmed_blocks");
    m = json_object_get(report, "measurement");
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "number_per_run")), 4);
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "measured_calls")), 20);
    CHECK_EQ_INT(json_array_size(json_object_get(m, "raw_times_seconds")), 5);
    CHECK_EQ_REAL(json_real_value(json_array_get(
                      json_object_get(m, "raw_times_seconds"), 2)),
                  0.18);
    json_decref(report);

    CHECK(ts_timing_report(0.0, raw, 5, 4, 8.0, "samples", &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EMEASURE);
    CHECK(ts_timing_report(0.5, raw, 5, 4, 8.0, NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
}

int
main(void)
{
    test_autorange_rule();
    test_quantiles();
    test_pinned_summary();
    test_even_block_count();
    test_errors();
    test_report();
    return ts_test_report();
}
