/* benchmark.c paths test_benchmark.c leaves out: MetricResults of each
 * status with the wrong value/known_value, negative values, comparisons
 * of inputs that are not caller-supplied or differ, an unreadable
 * latency spread, context keys on one side only, and a comparison without
 * diffs. */
#include <math.h>
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

/* A valid BenchmarkReport with latency `latency` and `threads` threads. */
static json_t *
report(double latency, int threads)
{
    json_t *r = json_pack(
        "{s:i, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:n, s:i, s:s, "
        "s:s, s:i}, s:{s:s}, s:{}, s:{s:i, s:[f, f]}}",
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
        4,
        "raw_times_seconds",
        0.02,
        0.04);
    json_t *totals = json_object_get(r, "totals");
    json_object_set_new(totals, "first_call_latency", timing(0.5, "seconds"));
    json_object_set_new(totals, "latency", timing(latency, "seconds"));
    json_object_set_new(totals, "latency_iqr", timing(0.0001, "seconds"));
    json_object_set_new(
        totals, "throughput", timing(32.0 / latency, "samples/s"));
    return r;
}

static json_t *
metric(const char *status, json_t *value, json_t *known)
{
    return json_pack("{s:s, s:o, s:o, s:s, s:s, s:s}",
                     "status",
                     status,
                     "value",
                     value,
                     "known_value",
                     known,
                     "unit",
                     "bytes",
                     "scope",
                     "workload",
                     "method",
                     "m");
}

/* report with totals.peak_memory = m is refused with `message`. */
static void
refused_memory(json_t *m, const char *message)
{
    json_t *r = report(0.01, 1);
    ts_error err;
    json_object_set_new(json_object_get(r, "totals"), "peak_memory", m);
    CHECK_EQ_INT(ts_benchmark_validate(r, "report", &err), TS_EINVAL);
    CHECK_EQ_STR(err.message, message);
    json_decref(r);
}

static void
test_metrics(void)
{
    const char *invalid =
        "Benchmark report 'report' has an invalid MetricResult: "
        "totals.peak_memory.";
    refused_memory(metric("partial", json_integer(1), json_integer(1)),
                   invalid);
    refused_memory(metric("partial", json_null(), json_string("1")), invalid);
    refused_memory(metric("unavailable", json_null(), json_integer(0)),
                   invalid);
    refused_memory(metric("unavailable", json_real(0.0), json_null()),
                   invalid);
    refused_memory(metric("complete", json_integer(2), json_real(2.5)),
                   invalid);
    refused_memory(metric("done", json_integer(2), json_integer(2)), invalid);
    refused_memory(json_integer(3), invalid);
    refused_memory(metric("complete", json_integer(-8), json_integer(-8)),
                   "Invalid benchmark value for totals.peak_memory in "
                   "'report': negative.");
    refused_memory(metric("partial", json_null(), json_real(-0.5)),
                   "Invalid benchmark value for totals.peak_memory in "
                   "'report': negative.");
    /* valid: partial with a real bound, unavailable with nothing, an int
     * equal to a real */
    json_t *r = report(0.01, 1);
    ts_error err;
    json_object_set_new(json_object_get(r, "totals"),
                        "peak_memory",
                        metric("partial", json_null(), json_real(1.5)));
    json_object_set_new(json_object_get(r, "totals"),
                        "process_peak_rss",
                        metric("unavailable", json_null(), json_null()));
    json_object_set_new(json_object_get(r, "totals"),
                        "operator_flops",
                        metric("complete", json_integer(2), json_real(2.0)));
    CHECK_EQ_INT(ts_benchmark_validate(r, "report", &err), TS_OK);
    json_decref(r);
}

static void
test_prepare_and_compare(void)
{
    json_t *before = report(0.010, 1);
    json_t *after = report(0.030, 1);
    json_t *diffs = NULL;
    ts_error err;
    /* generated inputs cannot be compared */
    json_object_set_new(json_object_get(before, "context"),
                        "inputs_source",
                        json_string("generated"));
    json_object_set_new(json_object_get(after, "context"),
                        "inputs_source",
                        json_string("generated"));
    CHECK_EQ_INT(ts_benchmark_prepare(before, after, &diffs, &err), TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "Comparisons require matching caller-supplied input "
                 "metadata.");
    CHECK(diffs == NULL);
    json_object_set_new(json_object_get(before, "context"),
                        "inputs_source",
                        json_string("caller_supplied"));
    json_object_set_new(json_object_get(after, "context"),
                        "inputs_source",
                        json_string("caller_supplied"));
    /* inputs that differ */
    json_object_set_new(
        json_object_get(after, "inputs"), "kind", json_string("tuple"));
    CHECK_EQ_INT(ts_benchmark_prepare(before, after, &diffs, &err), TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "Comparisons require matching caller-supplied input "
                 "metadata.");
    json_object_set_new(
        json_object_get(after, "inputs"), "kind", json_string("tensor"));

    /* the candidate's spread is partial: no latency verdict; a context
     * key only the candidate has is a change from None */
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
    json_object_set_new(
        json_object_get(after, "context"), "compile_mode", json_string("max"));
    CHECK_EQ_INT(ts_benchmark_prepare(before, after, &diffs, &err), TS_OK);
    json_t *cmp = ts_benchmark_comparison(before, after, diffs, true, &err);
    CHECK(cmp != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(cmp, "latency_change")),
                 "unavailable");
    json_t *change = json_object_get(json_object_get(cmp, "context_changes"),
                                     "compile_mode");
    CHECK(json_is_null(json_object_get(change, "before")));
    CHECK_EQ_STR(json_string_value(json_object_get(change, "after")), "max");
    /* latency 10 ms -> 30 ms: +0.02 s */
    CHECK_EQ_REAL(
        json_real_value(json_object_get(
            json_object_get(json_object_get(cmp, "totals"), "latency"),
            "delta")),
        0.02);
    json_decref(cmp); /* diffs were stolen by the comparison */
    /* no diffs (a list, stolen too) */
    CHECK(ts_benchmark_comparison(before, after, json_array(), true, &err)
          == NULL);
    CHECK_EQ_STR(err.message, "comparison needs the diffs of the totals");
    json_decref(before);
    json_decref(after);
}

int
main(void)
{
    test_metrics();
    test_prepare_and_compare();
    return ts_test_report();
}
