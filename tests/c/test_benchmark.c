/* compare_benchmarks in C: validation messages, context matching, withheld
 * deltas, latency_change and context_changes. */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "torchscan/benchmark.h"

static json_t *
timing(double value, const char *unit)
{
    return json_pack("{s:s, s:f, s:f, s:s, s:s, s:s}",
                     "status",
                     "complete",
                     "value",
                     value,
                     "known_value",
                     value,
                     "unit",
                     unit,
                     "scope",
                     "warmed_block_average",
                     "method",
                     "torchscan_blocked_timer");
}

/* A valid report: latency `latency`, IQR `iqr`, 4 threads. */
static json_t *
report(double latency, double iqr, int threads)
{
    json_t *r = json_pack(
        "{s:i, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:n, s:i, s:s, "
        "s:s, s:i}, s:{s:s}, s:{}, s:{s:i}}",
        "schema_version",
        1,
        "context",
        "device",
        "cpu",
        "device_name",
        "cpu0",
        "processor",
        "cpu0",
        "machine",
        "x86_64",
        "platform",
        "linux",
        "torch_version",
        "2.13.0",
        "torchscan_version",
        "0.3.0",
        "python_version",
        "3.11",
        "cuda_version",
        "work_units",
        32,
        "work_unit",
        "samples",
        "inputs_source",
        "caller_supplied",
        "num_threads",
        threads,
        "inputs",
        "kind",
        "tensor",
        "totals",
        "measurement",
        "number_per_run",
        4);
    json_t *totals = json_object_get(r, "totals");
    json_object_set_new(totals, "first_call_latency", timing(0.5, "seconds"));
    json_object_set_new(totals, "latency", timing(latency, "seconds"));
    json_object_set_new(totals, "latency_iqr", timing(iqr, "seconds"));
    json_object_set_new(
        totals, "throughput", timing(32.0 / latency, "samples/s"));
    return r;
}

static void
expect_prepare_error(json_t *before, json_t *after, const char *needle)
{
    ts_error err;
    json_t *diffs = (json_t *)1;
    CHECK_EQ_INT(ts_benchmark_prepare(before, after, &diffs, &err), TS_EINVAL);
    CHECK(diffs == NULL);
    CHECK(strstr(err.message, needle) != NULL);
    if (strstr(err.message, needle) == NULL) {
        fprintf(stderr, "  message: %s (wanted %s)\n", err.message, needle);
    }
}

static void
test_validation(void)
{
    json_t *good = report(0.01, 0.001, 4);
    json_t *bad = report(0.01, 0.001, 4);
    json_t *m;
    ts_error err;
    CHECK_EQ_INT(ts_benchmark_validate(good, "before", &err), TS_OK);

    m = json_object_get(json_object_get(bad, "totals"), "latency_iqr");
    json_object_set_new(m, "unit", json_string("milliseconds"));
    expect_prepare_error(good, bad, "timing unit");
    json_object_set_new(m, "unit", json_string("seconds"));

    m = json_object_get(json_object_get(bad, "totals"), "throughput");
    json_object_set_new(m, "unit", json_string("calls/s"));
    expect_prepare_error(bad, good, "timing unit");
    json_object_set_new(m, "unit", json_string("samples/s"));

    m = json_object_get(json_object_get(bad, "totals"), "latency");
    json_object_set_new(m, "value", json_real(-1.0));
    json_object_set_new(m, "known_value", json_real(-1.0));
    expect_prepare_error(good, bad, "timing value");
    json_object_set_new(m, "known_value", json_real(2.0));
    expect_prepare_error(good, bad, "invalid MetricResult: totals.latency");
    json_object_set_new(m, "value", json_real(0.01));
    json_object_set_new(m, "known_value", json_real(0.01));

    /* a negative non-timing total (its delta could overflow) */
    json_object_set_new(json_object_get(bad, "totals"),
                        "peak_memory",
                        json_pack("{s:s,s:I,s:I,s:s,s:s,s:s}",
                                  "status",
                                  "complete",
                                  "value",
                                  (json_int_t)INT64_MIN,
                                  "known_value",
                                  (json_int_t)INT64_MIN,
                                  "unit",
                                  "bytes",
                                  "scope",
                                  "pytorch_tensor_bytes",
                                  "method",
                                  "torch.profiler.allocation_events"));
    expect_prepare_error(good, bad, "totals.peak_memory in 'after': negative");
    json_object_del(json_object_get(bad, "totals"), "peak_memory");

    json_object_set_new(bad, "schema_version", json_true());
    expect_prepare_error(good, bad, "schema_version");
    json_object_set_new(bad, "schema_version", json_integer(2));
    expect_prepare_error(good, bad, "schema_version");
    json_object_set_new(bad, "schema_version", json_integer(1));

    json_object_del(json_object_get(bad, "totals"), "first_call_latency");
    expect_prepare_error(good, bad, "lacks totals.first_call_latency");
    json_object_set_new(json_object_get(bad, "totals"),
                        "first_call_latency",
                        timing(0.5, "seconds"));

    json_object_set_new(bad, "measurement", json_array());
    expect_prepare_error(good, bad, "measurement");
    json_object_set_new(bad, "measurement", json_object());

    /* contexts */
    json_object_set_new(
        json_object_get(bad, "context"), "device_name", json_string("other"));
    expect_prepare_error(good,
                         bad,
                         "contexts differ or are missing: "
                         "device_name.");
    json_object_set_new(
        json_object_get(bad, "context"), "device_name", json_string("cpu0"));
    json_object_del(json_object_get(bad, "context"), "cuda_version");
    expect_prepare_error(good, bad, "missing: cuda_version.");
    json_object_set_new(
        json_object_get(bad, "context"), "cuda_version", json_null());
    /* 32 == 32.0, as in Python */
    json_object_set_new(
        json_object_get(bad, "context"), "work_units", json_real(32.0));
    CHECK_EQ_INT(ts_benchmark_validate(bad, "after", &err), TS_OK);

    json_object_set_new(bad, "inputs", json_pack("{s:s}", "kind", "none"));
    expect_prepare_error(good, bad, "input metadata");
    json_object_set_new(bad, "inputs", json_pack("{s:s}", "kind", "tensor"));
    json_object_set_new(json_object_get(good, "context"),
                        "inputs_source",
                        json_string("not_provided"));
    json_object_set_new(json_object_get(bad, "context"),
                        "inputs_source",
                        json_string("not_provided"));
    expect_prepare_error(good, bad, "input metadata");

    json_decref(good);
    json_decref(bad);
}

static void
test_comparison(void)
{
    json_t *before = report(0.010, 0.001, 4);
    json_t *after = report(0.004, 0.0005, 1);
    json_t *diffs = NULL;
    json_t *out;
    json_t *lat;
    ts_error err;
    char *text;
    CHECK_EQ_INT(ts_benchmark_prepare(before, after, &diffs, &err), TS_OK);
    out = ts_benchmark_comparison(before, after, diffs, true, &err);
    CHECK(out != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(out, "report_type")),
                 "benchmark_comparison");
    CHECK_EQ_STR(json_string_value(json_object_get(out, "output_check")),
                 "passed");
    CHECK_EQ_STR(json_string_value(json_object_get(out, "latency_change")),
                 "faster");
    lat = json_object_get(json_object_get(out, "totals"), "latency");
    CHECK_EQ_REAL(json_real_value(json_object_get(lat, "delta")), -0.006);
    text = json_dumps(json_object_get(out, "context_changes"), JSON_COMPACT);
    CHECK_EQ_STR(text, "{\"num_threads\":{\"before\":4,\"after\":1}}");
    free(text);
    CHECK(json_object_get(out, "before") != before);
    json_decref(out);

    /* A failed check withholds every delta. */
    CHECK_EQ_INT(ts_benchmark_prepare(before, after, &diffs, &err), TS_OK);
    out = ts_benchmark_comparison(before, after, diffs, false, &err);
    CHECK_EQ_STR(json_string_value(json_object_get(out, "output_check")),
                 "failed");
    CHECK_EQ_STR(json_string_value(json_object_get(out, "latency_change")),
                 "unavailable");
    lat = json_object_get(json_object_get(out, "totals"), "throughput");
    CHECK_EQ_STR(json_string_value(json_object_get(lat, "status")),
                 "unavailable");
    CHECK(json_is_null(json_object_get(lat, "delta")));
    CHECK(json_is_object(json_object_get(lat, "before")));
    json_decref(out);
    json_decref(after);

    /* Within the larger IQR, and slower. */
    after = report(0.0105, 0.0002, 4);
    CHECK_EQ_INT(ts_benchmark_prepare(before, after, &diffs, &err), TS_OK);
    out = ts_benchmark_comparison(before, after, diffs, true, &err);
    CHECK_EQ_STR(json_string_value(json_object_get(out, "latency_change")),
                 "within_variability");
    CHECK_EQ_INT(json_object_size(json_object_get(out, "context_changes")), 0);
    json_decref(out);
    json_decref(after);
    after = report(0.02, 0.0002, 4);
    CHECK_EQ_INT(ts_benchmark_prepare(before, after, &diffs, &err), TS_OK);
    out = ts_benchmark_comparison(before, after, diffs, true, &err);
    CHECK_EQ_STR(json_string_value(json_object_get(out, "latency_change")),
                 "slower");
    json_decref(out);

    /* A partial IQR leaves the change unavailable; an incompatible method
     * is an error. */
    json_object_set_new(json_object_get(after, "totals"),
                        "latency_iqr",
                        json_pack("{s:s, s:n, s:f, s:s, s:s, s:s}",
                                  "status",
                                  "partial",
                                  "value",
                                  "known_value",
                                  0.0001,
                                  "unit",
                                  "seconds",
                                  "scope",
                                  "warmed_block_average",
                                  "method",
                                  "torchscan_blocked_timer"));
    CHECK_EQ_INT(ts_benchmark_prepare(before, after, &diffs, &err), TS_OK);
    out = ts_benchmark_comparison(before, after, diffs, true, &err);
    CHECK_EQ_STR(json_string_value(json_object_get(out, "latency_change")),
                 "unavailable");
    json_decref(out);
    json_object_set_new(
        json_object_get(json_object_get(after, "totals"), "latency"),
        "method",
        json_string("torch.utils.benchmark.Timer"));
    expect_prepare_error(before, after, "incompatible method");
    json_decref(before);
    json_decref(after);
}

int
main(void)
{
    test_validation();
    test_comparison();
    return ts_test_report();
}
