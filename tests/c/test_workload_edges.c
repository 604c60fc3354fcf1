/* workload.c paths test_workload.c leaves out: refused totals, every
 * reason achieved FLOP/s is unavailable, the grouping buffer limits, the
 * display units, and the summary lines of partial, unrequested and
 * scoped metrics, phases, profile states and bare diagnostics. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/workload.h"

static json_t *
load(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (v == NULL) {
        fprintf(stderr, "bad fixture: %s\n", e.text);
    }
    return v;
}

static void
test_totals(void)
{
    ts_error err;
    json_t *measured = load("{\"latency\": 3}");
    CHECK(ts_workload_totals(NULL, TS_WORKLOAD_LATENCY, NULL, NULL, NULL, &err)
          == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message, "work_unit is required");
    CHECK(ts_workload_totals(
              measured, TS_WORKLOAD_LATENCY, "samples", NULL, NULL, &err)
          == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK_EQ_STR(err.message, "totals.latency must be a metric");
    /* a metric that is not selected is not_requested even when measured */
    json_t *t = ts_workload_totals(measured,
                                   TS_WORKLOAD_MEMORY,
                                   "tokens",
                                   "pytorch_tensor_bytes",
                                   "tracked_tensors",
                                   &err);
    CHECK(t != NULL);
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(t, "latency"), "method")),
                 "not_requested");
    /* memory selected, not measured: the caller's scope and method */
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(t, "peak_memory"), "scope")),
                 "pytorch_tensor_bytes");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(t, "peak_memory"), "method")),
                 "tracked_tensors");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(t, "peak_memory"), "status")),
                 "unavailable");
    /* throughput's unit is the work unit per second */
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(t, "throughput"), "unit")),
                 "tokens/s");
    CHECK(json_object_get(t, "achieved_flops") == NULL);
    json_decref(t);
    /* memory selected without a scope: "unavailable" method */
    t = ts_workload_totals(NULL,
                           TS_WORKLOAD_MEMORY,
                           "tokens",
                           "pytorch_tensor_bytes",
                           NULL,
                           &err);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(t, "peak_memory"), "method")),
                 "unavailable");
    json_decref(t);
    json_decref(measured);
}

/* achieved_flops for totals `text`: its method, and the message of its
 * diagnostic ("" when none). */
static void
achieved(const char *text,
         double peak,
         const char *method,
         const char *message)
{
    ts_error err;
    json_t *totals = load(text);
    json_t *diags = json_array();
    CHECK_EQ_INT(ts_workload_achieved(totals, peak, diags, &err), TS_OK);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(totals, "achieved_flops"), "method")),
                 method);
    if (message[0] == '\0') {
        CHECK_EQ_INT(json_array_size(diags), 0);
    }
    else {
        CHECK_EQ_STR(json_string_value(
                         json_object_get(json_array_get(diags, 0), "message")),
                     message);
        if (peak > 0.0) {
            /* the utilization says the same, in its own name */
            CHECK_EQ_INT(json_array_size(diags), 2);
            CHECK_EQ_STR(json_string_value(json_object_get(
                             json_array_get(diags, 1), "metric")),
                         "flops_utilization");
        }
    }
    json_decref(diags);
    json_decref(totals);
}

#define OPF(body) "\"operator_flops\": {" body "}"
#define LAT(body) "\"latency\": {" body "}"

static void
test_achieved_reasons(void)
{
    ts_error err;
    json_t *totals = json_object();
    json_t *not_list = json_object();
    CHECK_EQ_INT(ts_workload_achieved(totals, 0.0, not_list, &err),
                 TS_EFORMAT);
    json_t *list = json_array();
    CHECK_EQ_INT(ts_workload_achieved(totals, NAN, list, &err), TS_EINVAL);
    json_decref(list);
    json_decref(totals);
    json_decref(not_list);

    achieved("{}",
             0.0,
             "unavailable",
             "achieved_flops is unavailable: operator FLOPs were not "
             "measured; latency was not measured.");
    achieved("{" OPF("\"method\": \"not_requested\"") ", " LAT(
                 "\"method\": \"not_requested\"") "}",
             2.0,
             "unavailable",
             "achieved_flops is unavailable: operator FLOPs were not "
             "measured (select \"flops\"); latency was not measured (select "
             "\"latency\").");
    achieved("{" OPF("\"status\": \"partial\", \"known_value\": 3") ", " LAT(
                 "\"status\": \"partial\"") "}",
             0.0,
             "unavailable",
             "achieved_flops is unavailable: operator FLOPs are partial, a "
             "lower bound (see the flops diagnostics); latency is partial.");
    achieved("{" OPF("\"status\": \"complete\", \"value\": \"12\"") ", " LAT(
                 "\"status\": \"unavailable\"") "}",
             0.0,
             "unavailable",
             "achieved_flops is unavailable: operator FLOPs are unavailable "
             "(see diagnostics); latency is unavailable (see diagnostics).");
    achieved("{" OPF("\"status\": \"complete\", \"value\": 12") ", " LAT(
                 "\"status\": \"complete\", \"value\": 0") "}",
             0.0,
             "unavailable",
             "achieved_flops is unavailable: latency is not a positive "
             "number of seconds.");
    achieved("{" OPF("\"status\": \"complete\", \"value\": 1e308") ", " LAT(
                 "\"status\": \"complete\", \"value\": 1e-300") "}",
             5.0,
             "unavailable",
             "achieved_flops is unavailable: operator FLOPs / latency is not "
             "a finite number.");
    /* 12 FLOPs in 0.5 s: 24 FLOP/s, 24 / 96 = 0.25 of the peak */
    totals =
        load("{" OPF("\"status\": \"complete\", \"value\": 12.0") ", " LAT(
            "\"status\": \"complete\", \"value\": 0.5") "}");
    json_t *diags = json_array();
    CHECK_EQ_INT(ts_workload_achieved(totals, 96.0, diags, &err), TS_OK);
    CHECK_EQ_REAL(json_real_value(json_object_get(
                      json_object_get(totals, "achieved_flops"), "value")),
                  24.0);
    CHECK_EQ_REAL(json_real_value(json_object_get(
                      json_object_get(totals, "flops_utilization"), "value")),
                  0.25);
    CHECK_EQ_INT(json_array_size(diags), 0);
    json_decref(diags);
    json_decref(totals);
}

static void
test_grouping_and_units(void)
{
    char buf[32];
    double scale = 0.0;
    CHECK(!ts_format_grouped(1.0, buf, 0));
    /* "1,234.000" needs 10 bytes: 9 fail at the tail, 2 at the comma */
    CHECK(ts_format_grouped(1234.0, buf, 10));
    CHECK_EQ_STR(buf, "1,234.000");
    CHECK(!ts_format_grouped(1234.0, buf, 9));
    CHECK(!ts_format_grouped(1234.0, buf, 2));
    CHECK(!ts_format_grouped(1234.0, buf, 1));
    CHECK(ts_format_grouped(-5.25, buf, sizeof buf));
    CHECK_EQ_STR(buf, "-5.250");
    /* %.3f of 1e300 has 301 integer digits: too long for the 400 bytes
     * once grouped in a 32-byte buffer */
    CHECK(!ts_format_grouped(1e300, buf, sizeof buf));

    CHECK_EQ_STR(ts_display_unit(NULL, 1.0, &scale), "");
    CHECK_EQ_REAL(scale, 1.0);
    CHECK_EQ_STR(ts_display_unit("seconds", 0.25, &scale), "ms");
    CHECK_EQ_REAL(scale, 1000.0);
    /* seconds too large to show in ms stay seconds */
    CHECK_EQ_STR(ts_display_unit("seconds", 1e308, &scale), "seconds");
    CHECK_EQ_REAL(scale, 1.0);
    CHECK_EQ_STR(ts_display_unit("bytes", 1.0, &scale), "MiB");
    CHECK_EQ_REAL(scale, 1.0 / 1048576.0);
    CHECK_EQ_STR(ts_display_unit("FLOPs", 1.0, &scale), "FLOPs");
}

static void
test_summary_lines(void)
{
    ts_error err;
    /* no device, threads not an int, partial latency, unrequested
     * throughput, unavailable first call, memory in each scope, phases,
     * a claimed but missing profile, and a diagnostic without fields */
    json_t *report = load(
        "{\"context\": {\"num_threads\": \"4\", \"profile_status\": "
        "\"complete\"},"
        " \"totals\": {"
        "  \"first_call_latency\": {\"status\": \"unavailable\", \"unit\": "
        "\"seconds\", \"method\": \"m\"},"
        "  \"latency\": {\"status\": \"partial\", \"known_value\": 0.002, "
        "\"unit\": \"seconds\"},"
        "  \"throughput\": {\"status\": \"unavailable\", \"method\": "
        "\"not_requested\"},"
        "  \"operator_flops\": {\"status\": \"complete\", \"value\": 1000, "
        "\"unit\": \"FLOPs\"},"
        "  \"peak_memory\": {\"status\": \"complete\", \"value\": 2097152, "
        "\"unit\": \"bytes\", \"scope\": \"pytorch_reserved_bytes\"},"
        "  \"process_peak_rss\": {\"status\": \"partial\", \"known_value\": "
        "1048576, \"unit\": \"bytes\", \"scope\": "
        "\"child_process_lifetime\"}},"
        " \"operator_flops\": {\"phases\": {\"forward\": {\"total\": "
        "{\"status\": \"complete\", \"value\": 600, \"unit\": \"FLOPs\"}},"
        "  \"backward\": {\"total\": 3}}},"
        " \"diagnostics\": [{}, {\"metric\": \"latency\", \"message\": "
        "\"noisy\"}]}");
    char *text = ts_workload_summary(report, &err);
    CHECK_EQ_STR(text,
                 "Workload on unknown device (? PyTorch threads)"
                 "\n  First call: unavailable (see diagnostics)"
                 "\n  Latency (block median): partial (known lower bound: "
                 "2.000 ms)"
                 "\n  Throughput: unavailable (not requested)"
                 "\n  Operator FLOPs: 1,000.000 FLOPs"
                 "\n    forward: 600.000 FLOPs"
                 "\n  PyTorch peak memory: 2.000 MiB"
                 "\n    Scope: PyTorch device allocator"
                 "\n  Process peak RSS: partial (known lower bound: 1.000 MiB)"
                 "\n    Scope: fresh child process lifetime"
                 "\n  Profiler: complete, but no profile is attached to this "
                 "report (separate instrumented pass)"
                 "\n  ?: "
                 "\n  latency: noisy");
    free(text);
    json_decref(report);

    /* an attached profile with diagnostics is partial; other scopes are
     * shown as they are */
    report = load(
        "{\"context\": {\"device\": \"cpu\", \"num_threads\": 2},"
        " \"totals\": {\"peak_memory\": {\"status\": \"complete\", "
        "\"value\": 0, \"unit\": \"bytes\", \"scope\": \"custom_scope\"}},"
        " \"profile\": {\"diagnostics\": [{}]}}");
    text = ts_workload_summary(report, &err);
    CHECK_EQ_STR(text,
                 "Workload on cpu (2 PyTorch threads)"
                 "\n  PyTorch peak memory: 0.000 MiB"
                 "\n    Scope: custom_scope"
                 "\n  Profiler: partial (separate instrumented pass)");
    free(text);
    json_decref(report);

    /* no profile and no status: not requested; a partial status without a
     * profile says it is missing */
    report = load(
        "{\"totals\": {}, \"context\": {\"profile_status\": "
        "\"partial\"}}");
    text = ts_workload_summary(report, &err);
    CHECK_EQ_STR(text,
                 "Workload on unknown device (? PyTorch threads)"
                 "\n  Profiler: partial, but no profile is attached to this "
                 "report (separate instrumented pass)");
    free(text);
    json_decref(report);
    report = load("{\"totals\": {}, \"profile\": {}}");
    text = ts_workload_summary(report, &err);
    CHECK(text != NULL
          && strstr(text, "Profiler: complete (separate") != NULL);
    free(text);
    json_decref(report);
    report = load("{\"totals\": []}");
    CHECK(ts_workload_summary(report, &err) == NULL);
    CHECK_EQ_STR(err.message, "a benchmark report needs an object 'totals'");
    json_decref(report);
}

int
main(void)
{
    test_totals();
    test_achieved_reasons();
    test_grouping_and_units();
    test_summary_lines();
    return ts_test_report();
}
