/* Workload totals (placeholders) and the terminal summary text (5.2). */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/workload.h"

static json_t *
metric(const char *status,
       json_t *value,
       const char *unit,
       const char *scope,
       const char *method)
{
    json_t *m =
        json_pack("{s:s, s:O, s:O, s:s, s:s, s:s}",
                  "status",
                  status,
                  "value",
                  strcmp(status, "complete") == 0 ? value : json_null(),
                  "known_value",
                  value,
                  "unit",
                  unit,
                  "scope",
                  scope,
                  "method",
                  method);
    json_decref(value);
    return m;
}

static void
test_grouped(void)
{
    char buf[512];
    CHECK(ts_format_grouped(1734801.9674, buf, sizeof buf));
    CHECK_EQ_STR(buf, "1,734,801.967");
    CHECK(ts_format_grouped(0.0, buf, sizeof buf));
    CHECK_EQ_STR(buf, "0.000");
    CHECK(ts_format_grouped(999.9996, buf, sizeof buf));
    CHECK_EQ_STR(buf, "1,000.000");
    CHECK(ts_format_grouped(-1234567.5, buf, sizeof buf));
    CHECK_EQ_STR(buf, "-1,234,567.500");
    CHECK(ts_format_grouped(123.0, buf, sizeof buf));
    CHECK_EQ_STR(buf, "123.000");
    CHECK(ts_format_grouped(1048576.0, buf, sizeof buf));
    CHECK_EQ_STR(buf, "1,048,576.000");
    /* the largest double fits in 512 bytes */
    CHECK(ts_format_grouped(1.7976931348623157e308, buf, sizeof buf));
    CHECK(!ts_format_grouped(1234567.0, buf, 8));
}

static void
test_totals(void)
{
    json_t *measured = json_object();
    json_t *totals;
    json_t *m;
    ts_error err;
    json_object_set_new(measured,
                        "latency",
                        metric("complete",
                               json_real(0.001),
                               "seconds",
                               "warmed_block_average",
                               "torchscan_blocked_timer"));
    json_object_set_new(measured,
                        "throughput",
                        metric("complete",
                               json_real(10.0),
                               "samples/s",
                               "warmed_blocks",
                               "torchscan_blocked_timer"));
    /* Only throughput and memory selected; memory not produced. */
    totals = ts_workload_totals(measured,
                                TS_WORKLOAD_THROUGHPUT | TS_WORKLOAD_MEMORY,
                                "samples",
                                "pytorch_tensor_bytes",
                                "torch.profiler.allocation_events",
                                &err);
    CHECK(totals != NULL);
    CHECK_EQ_INT(json_object_size(totals), 7);
    /* measured but not selected: a not_requested placeholder */
    m = json_object_get(totals, "latency");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "status")),
                 "unavailable");
    CHECK(json_is_null(json_object_get(m, "value")));
    CHECK_EQ_STR(json_string_value(json_object_get(m, "method")),
                 "not_requested");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "scope")),
                 "warmed_block_average");
    m = json_object_get(totals, "first_call_latency");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "scope")), "first_call");
    /* selected and measured: copied */
    m = json_object_get(totals, "throughput");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "status")), "complete");
    CHECK_EQ_REAL(json_real_value(json_object_get(m, "value")), 10.0);
    CHECK(m != json_object_get(measured, "throughput"));
    /* selected, not produced: the backend's scope and method */
    m = json_object_get(totals, "peak_memory");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "status")),
                 "unavailable");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "scope")),
                 "pytorch_tensor_bytes");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "method")),
                 "torch.profiler.allocation_events");
    m = json_object_get(totals, "operator_flops");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "unit")), "FLOPs");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "scope")), "workload");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "method")),
                 "not_requested");
    m = json_object_get(totals, "process_peak_rss");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "scope")),
                 "child_process_lifetime");
    json_decref(totals);

    /* Throughput selected but not produced: unit from work_unit, method
     * "unavailable". */
    totals = ts_workload_totals(
        NULL, TS_WORKLOAD_THROUGHPUT, "tokens", NULL, NULL, &err);
    m = json_object_get(totals, "throughput");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "unit")), "tokens/s");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "method")),
                 "unavailable");
    json_decref(totals);

    CHECK(ts_workload_totals(NULL, 0, NULL, NULL, NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    json_decref(measured);
}

/* The last line of `report`'s summary (the Profiler line when the report
 * has no diagnostics); a malloc'd copy. */
static char *
last_line(const json_t *report)
{
    ts_error err;
    char *text = ts_workload_summary(report, &err);
    char *line = NULL;
    if (text != NULL) {
        const char *nl = strrchr(text, '\n');
        line = strdup(nl != NULL ? nl + 1 : text);
    }
    free(text);
    return line;
}

/* The Profiler line says what the report holds: an attached profile is
 * complete or partial (diagnostics) whatever context.profile_status says,
 * and a status that claims a profile the report lacks says so. */
static void
test_profile_line(json_t *report)
{
    json_t *context = json_object_get(report, "context");
    json_t *profile = json_incref(json_object_get(report, "profile"));
    char *line;
    /* measure_latency's report plus profile_workload: no profile_status */
    json_object_del(context, "profile_status");
    line = last_line(report);
    CHECK_EQ_STR(line, "  Profiler: partial (separate instrumented pass)");
    free(line);
    json_array_clear(json_object_get(profile, "diagnostics"));
    line = last_line(report);
    CHECK_EQ_STR(line, "  Profiler: complete (separate instrumented pass)");
    free(line);
    /* measure_workload without profile=True, a profile attached later */
    json_object_set_new(
        context, "profile_status", json_string("not_requested"));
    line = last_line(report);
    CHECK_EQ_STR(line, "  Profiler: complete (separate instrumented pass)");
    free(line);
    /* a profile that was removed, or is null */
    json_object_set_new(context, "profile_status", json_string("complete"));
    json_object_set_new(report, "profile", json_null());
    line = last_line(report);
    CHECK_EQ_STR(line,
                 "  Profiler: complete, but no profile is attached to this "
                 "report (separate instrumented pass)");
    free(line);
    json_object_del(report, "profile");
    json_object_set_new(context, "profile_status", json_string("unavailable"));
    line = last_line(report);
    CHECK_EQ_STR(line, "  Profiler: unavailable (separate instrumented pass)");
    free(line);
    json_object_del(context, "profile_status");
    line = last_line(report);
    CHECK_EQ_STR(line,
                 "  Profiler: not requested (separate instrumented pass)");
    free(line);
    json_decref(profile);
}

static void
test_summary(void)
{
    /* The contract's sample (5.2), rebuilt from its figures. */
    json_t *report =
        json_pack("{s:{s:s, s:i, s:s}, s:{}, s:[{s:s, s:s, s:s, s:s}]}",
                  "context",
                  "device",
                  "cpu",
                  "num_threads",
                  1,
                  "profile_status",
                  "not_requested",
                  "totals",
                  "diagnostics",
                  "code",
                  "uncounted_operator",
                  "severity",
                  "warning",
                  "metric",
                  "flops",
                  "message",
                  "aten.linear was observed 1 time(s), but no FLOP formula is "
                  "registered.");
    json_t *totals = json_object_get(report, "totals");
    ts_error err;
    char *text;
    json_object_set_new(totals,
                        "first_call_latency",
                        metric("complete",
                               json_real(0.000449),
                               "seconds",
                               "first_call",
                               "synchronized_monotonic_clock"));
    json_object_set_new(totals,
                        "latency",
                        metric("complete",
                               json_real(0.000018),
                               "seconds",
                               "warmed_block_average",
                               "torchscan_blocked_timer"));
    json_object_set_new(totals,
                        "latency_iqr",
                        metric("complete",
                               json_real(0.0000002),
                               "seconds",
                               "warmed_block_average",
                               "torchscan_blocked_timer"));
    json_object_set_new(totals,
                        "throughput",
                        metric("complete",
                               json_real(1734801.967),
                               "samples/s",
                               "warmed_blocks",
                               "torchscan_blocked_timer"));
    json_object_set_new(totals,
                        "operator_flops",
                        metric("partial",
                               json_integer(1048576),
                               "FLOPs",
                               "workload",
                               "torchscan_dispatch_counter"));
    /* 98,304 bytes = 0.09375 MiB -> "0.094" */
    json_object_set_new(totals,
                        "peak_memory",
                        metric("complete",
                               json_integer(98304),
                               "bytes",
                               "pytorch_tensor_bytes",
                               "torch.profiler.allocation_events"));
    json_object_set_new(totals,
                        "process_peak_rss",
                        metric("unavailable",
                               json_null(),
                               "bytes",
                               "child_process_lifetime",
                               "not_requested"));
    text = ts_workload_summary(report, &err);
    CHECK_EQ_STR(text,
                 "Workload on cpu (1 PyTorch threads)\n"
                 "  First call: 0.449 ms\n"
                 "  Latency (block median): 0.018 ms\n"
                 "  Latency IQR: 0.000 ms\n"
                 "  Throughput: 1,734,801.967 samples/s\n"
                 "  Operator FLOPs: partial (known lower bound: "
                 "1,048,576.000 FLOPs)\n"
                 "  PyTorch peak memory: 0.094 MiB\n"
                 "    Scope: PyTorch tracked CPU tensors\n"
                 "  Process peak RSS: unavailable (not requested)\n"
                 "  Profiler: not requested (separate instrumented pass)\n"
                 "  flops: aten.linear was observed 1 time(s), but no FLOP "
                 "formula is registered.");
    free(text);

    /* RSS measured, memory unavailable for a collector reason, profile
     * partial; a total missing from the report is skipped. */
    json_object_set_new(totals,
                        "process_peak_rss",
                        metric("complete",
                               json_integer(10485760),
                               "bytes",
                               "child_process_lifetime",
                               "wait4.ru_maxrss"));
    json_object_set_new(totals,
                        "peak_memory",
                        metric("unavailable",
                               json_null(),
                               "bytes",
                               "pytorch_tensor_bytes",
                               "torch.profiler.allocation_events"));
    json_object_del(totals, "latency_iqr");
    json_object_set_new(json_object_get(report, "context"),
                        "profile_status",
                        json_string("partial"));
    json_object_set_new(report,
                        "profile",
                        json_pack("{s:i, s:[], s:[{s:s}]}",
                                  "schema_version",
                                  1,
                                  "operators",
                                  "diagnostics",
                                  "message",
                                  "the profiler recorded no device time"));
    json_array_clear(json_object_get(report, "diagnostics"));
    text = ts_workload_summary(report, &err);
    CHECK_EQ_STR(text,
                 "Workload on cpu (1 PyTorch threads)\n"
                 "  First call: 0.449 ms\n"
                 "  Latency (block median): 0.018 ms\n"
                 "  Throughput: 1,734,801.967 samples/s\n"
                 "  Operator FLOPs: partial (known lower bound: "
                 "1,048,576.000 FLOPs)\n"
                 "  PyTorch peak memory: unavailable (see diagnostics)\n"
                 "  Process peak RSS: 10.000 MiB\n"
                 "    Scope: fresh child process lifetime\n"
                 "  Profiler: partial (separate instrumented pass)");
    free(text);

    test_profile_line(report);

    CHECK(ts_workload_summary(json_object_get(report, "context"), &err)
          == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    json_decref(report);
}

/* Achieved FLOP/s: hand arithmetic on the totals, the unavailable paths
 * with their reasons, the peak's check. */
static void
test_achieved(void)
{
    json_t *totals = json_pack(
        "{s:o, s:o}",
        "operator_flops",
        ts_metric_new(TS_COMPLETE, ts_int(3000), "FLOPs", "workload", "m"),
        "latency",
        ts_metric_new(TS_COMPLETE,
                      ts_real(0.002),
                      "seconds",
                      "warmed_block_average",
                      "t"));
    json_t *diags = json_array();
    json_t *m;
    ts_error err;
    ts_error_clear(&err);
    CHECK_EQ_INT(ts_workload_achieved(totals, 3e6, diags, &err), TS_OK);
    m = json_object_get(totals, "achieved_flops");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "status")), "complete");
    CHECK(fabs(json_real_value(json_object_get(m, "value")) - 1.5e6) < 1e-6);
    CHECK_EQ_STR(json_string_value(json_object_get(m, "unit")), "FLOPs/s");
    m = json_object_get(totals, "flops_utilization");
    CHECK(fabs(json_real_value(json_object_get(m, "value")) - 0.5) < 1e-12);
    CHECK_EQ_STR(json_string_value(json_object_get(m, "method")),
                 "achieved_over_declared_peak");
    CHECK_EQ_INT(json_array_size(diags), 0);
    /* no peak: no utilization */
    json_object_del(totals, "flops_utilization");
    CHECK_EQ_INT(ts_workload_achieved(totals, 0.0, diags, &err), TS_OK);
    CHECK(json_object_get(totals, "flops_utilization") == NULL);
    /* partial FLOPs: unavailable, one diagnostic each */
    json_object_set_new(
        totals,
        "operator_flops",
        ts_metric_new(TS_PARTIAL, ts_int(3000), "FLOPs", "workload", "m"));
    CHECK_EQ_INT(ts_workload_achieved(totals, 1e9, diags, &err), TS_OK);
    m = json_object_get(totals, "achieved_flops");
    CHECK_EQ_STR(json_string_value(json_object_get(m, "status")),
                 "unavailable");
    CHECK(json_is_null(json_object_get(m, "value")));
    CHECK_EQ_INT(json_array_size(diags), 2);
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_array_get(diags, 0), "message")),
                 "achieved_flops is unavailable: operator FLOPs are partial, "
                 "a lower bound (see the flops diagnostics).");
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(diags, 1), "metric")),
        "flops_utilization");
    /* latency not requested, and zero latency */
    json_array_clear(diags);
    json_object_set_new(
        totals,
        "operator_flops",
        ts_metric_new(TS_COMPLETE, ts_int(3000), "FLOPs", "workload", "m"));
    json_object_set_new(totals,
                        "latency",
                        ts_metric_new(TS_UNAVAILABLE,
                                      ts_int(0),
                                      "seconds",
                                      "warmed_block_average",
                                      "not_requested"));
    CHECK_EQ_INT(ts_workload_achieved(totals, 0.0, diags, &err), TS_OK);
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_array_get(diags, 0), "message")),
                 "achieved_flops is unavailable: latency was not measured "
                 "(select \"latency\").");
    json_array_clear(diags);
    json_object_set_new(totals,
                        "latency",
                        ts_metric_new(TS_COMPLETE,
                                      ts_real(0.0),
                                      "seconds",
                                      "warmed_block_average",
                                      "t"));
    CHECK_EQ_INT(ts_workload_achieved(totals, 0.0, diags, &err), TS_OK);
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_array_get(diags, 0), "message")),
                 "achieved_flops is unavailable: latency is not a positive "
                 "number of seconds.");
    /* the peak: positive and finite */
    CHECK_EQ_INT(ts_workload_achieved(totals, -1.0, diags, &err), TS_EINVAL);
    CHECK_EQ_INT(ts_workload_achieved(totals, INFINITY, diags, &err),
                 TS_EINVAL);
    CHECK_EQ_INT(ts_workload_achieved(json_null(), 0.0, diags, &err),
                 TS_EFORMAT);
    json_decref(diags);
    json_decref(totals);
}

/* The summary lists the phases of a training step under Operator FLOPs. */
static void
test_summary_phases(void)
{
    ts_error err;
    json_t *report = json_pack(
        "{s:{s:s, s:i}, s:{s:o}, s:{s:{s:{s:o}, s:{s:o}, s:{s:o}}}, s:[]}",
        "context",
        "device",
        "cpu",
        "num_threads",
        1,
        "totals",
        "operator_flops",
        ts_metric_new(TS_COMPLETE, ts_int(571), "FLOPs", "workload", "m"),
        "operator_flops",
        "phases",
        "forward",
        "total",
        ts_metric_new(TS_COMPLETE, ts_int(204), "FLOPs", "workload", "m"),
        "backward",
        "total",
        ts_metric_new(TS_COMPLETE, ts_int(275), "FLOPs", "workload", "m"),
        "optimizer",
        "total",
        ts_metric_new(TS_PARTIAL, ts_int(92), "FLOPs", "workload", "m"),
        "diagnostics");
    char *text;
    ts_error_clear(&err);
    text = ts_workload_summary(report, &err);
    CHECK(text != NULL);
    CHECK_EQ_STR(text,
                 "Workload on cpu (1 PyTorch threads)\n"
                 "  Operator FLOPs: 571.000 FLOPs\n"
                 "    forward: 204.000 FLOPs\n"
                 "    backward: 275.000 FLOPs\n"
                 "    optimizer: partial (known lower bound: 92.000 FLOPs)\n"
                 "  Profiler: not requested (separate instrumented pass)");
    free(text);
    json_decref(report);
}

int
main(void)
{
    test_grouped();
    test_summary_phases();
    test_achieved();
    test_totals();
    test_summary();
    return ts_test_report();
}
