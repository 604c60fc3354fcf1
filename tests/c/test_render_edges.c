/* render.c paths test_render.c leaves out: each rule on diagnostics,
 * profiles and operator_flops that refuses a page, the texts an HTML page
 * cannot hold (values, keys, title, nesting), partial and unavailable
 * cells, profile rows without names or shapes, and comparisons with
 * unchanged or slower latency or a bad output_check. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "torchscan/benchmark.h"
#include "torchscan/render.h"

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
comparison(json_t *before, json_t *after, bool passed)
{
    json_t *diffs = NULL;
    ts_error err;
    ts_error_clear(&err);
    CHECK_EQ_INT(ts_benchmark_prepare(before, after, &diffs, &err), TS_OK);
    return ts_benchmark_comparison(before, after, diffs, passed, &err);
}


/* Renders `r` (a single report); on refusal returns NULL with err set. */
static char *
page(const json_t *r, ts_error *err)
{
    ts_error_clear(err);
    return ts_render_benchmark_html(r, "T", err);
}

/* The page of report `r` is refused with a message that contains `part`. */
static void
refused(const json_t *r, const char *part)
{
    ts_error err;
    char *html = page(r, &err);
    CHECK(html == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    if (strstr(err.message, part) == NULL) {
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err.message, part);
        CHECK(0);
    }
    free(html);
}

static json_t *
diag(const char *severity)
{
    return json_pack("{s:s, s:s, s:s, s:s}",
                     "code",
                     "measurement_unavailable",
                     "severity",
                     severity,
                     "metric",
                     "latency",
                     "message",
                     "a < b");
}

/* Each rule on diagnostics refuses the page, naming the report. */
static void
test_diagnostic_rules(void)
{
    json_t *r = report(0.01, 1);
    json_t *d;
    ts_error err;
    char *html;
    json_object_set_new(r, "diagnostics", json_object());
    refused(r,
            "Benchmark report 'report' has diagnostics that are not a list");
    json_object_set_new(r, "diagnostics", json_pack("[i]", 1));
    refused(r, "invalid diagnostic");
    json_object_set_new(r, "diagnostics", json_pack("[{s:i}]", "message", 1));
    refused(r, "invalid diagnostic");
    json_object_set_new(
        r, "diagnostics", json_pack("[{s:s}]", "message", "m"));
    refused(r, "invalid diagnostic");
    json_object_set_new(r, "diagnostics", json_pack("[o]", diag("info")));
    refused(r, "invalid diagnostic");
    d = diag("error");
    json_object_set_new(d, "path", json_integer(3));
    json_object_set_new(r, "diagnostics", json_pack("[o]", d));
    refused(r, "invalid diagnostic");
    d = diag("warning");
    json_object_set_new(d, "operator", json_null());
    json_object_set_new(r, "diagnostics", json_pack("[o]", d));
    refused(r, "invalid diagnostic");
    /* valid: one with code and metric, one with neither */
    d = diag("error");
    json_object_set_new(d, "path", json_string("fc"));
    json_object_set_new(d, "operator", json_string("aten.mm"));
    json_object_set_new(
        r,
        "diagnostics",
        json_pack(
            "[o, {s:s, s:s}]", d, "severity", "warning", "message", "x"));
    html = page(r, &err);
    CHECK(html != NULL);
    CHECK(html != NULL
          && strstr(html,
                    "<li><code>measurement_unavailable</code> latency: a "
                    "&lt; b</li>\n<li>x</li>")
                 != NULL);
    /* the summary lists both, the second as "?: x" */
    CHECK(html != NULL && strstr(html, "\n  ?: x") != NULL);
    free(html);
    json_decref(r);
}

static json_t *
profile_of(const char *device, const char *torch)
{
    return json_pack("{s:i, s:{s:s, s:s, s:i}, s:[], s:[]}",
                     "schema_version",
                     1,
                     "context",
                     "device",
                     device,
                     "torch_version",
                     torch,
                     "row_limit",
                     20,
                     "operators",
                     "diagnostics");
}

static void
test_profile_rules(void)
{
    json_t *r = report(0.01, 1);
    json_t *p;
    ts_error err;
    char *html;
    /* null: as if absent */
    json_object_set_new(r, "profile", json_null());
    html = page(r, &err);
    CHECK(html != NULL
          && strstr(html, "No operator profile was supplied") != NULL);
    free(html);
    json_object_set_new(r, "profile", json_array());
    refused(r, "has an invalid profile");
    p = profile_of("cpu", "2.13.0");
    json_object_set_new(p, "schema_version", json_integer(2));
    json_object_set_new(r, "profile", p);
    refused(r, "has an invalid profile");
    p = profile_of("cpu", "2.13.0");
    json_object_set_new(p, "operators", json_object());
    json_object_set_new(r, "profile", p);
    refused(r, "has an invalid profile");
    p = profile_of("cpu", "2.13.0");
    json_object_del(p, "context");
    json_object_set_new(r, "profile", p);
    refused(r, "has an invalid profile");
    json_object_set_new(r, "profile", profile_of("cpu", "2.12.0"));
    refused(r, "device or torch_version differs");
    p = profile_of("cpu", "2.13.0");
    json_array_append_new(json_object_get(p, "operators"), json_integer(1));
    json_object_set_new(r, "profile", p);
    refused(r, "profile row that is not an object");
    p = profile_of("cpu", "2.13.0");
    json_array_append_new(json_object_get(p, "diagnostics"), json_integer(1));
    json_object_set_new(r, "profile", p);
    refused(r, "invalid diagnostic");
    /* rows: an operator that is not a string, no shapes, seconds past
     * what ms can show; the settings table */
    p = profile_of("cpu", "2.13.0");
    json_array_append_new(json_object_get(p, "operators"),
                          json_pack("{s:i, s:n, s:i, s:f, s:f, s:i}",
                                    "operator",
                                    7,
                                    "input_shapes",
                                    "calls",
                                    2,
                                    "cpu_self_seconds",
                                    1e308,
                                    "device_self_seconds",
                                    0.25,
                                    "cpu_net_bytes",
                                    -64));
    json_array_append_new(json_object_get(p, "diagnostics"), diag("warning"));
    json_object_set_new(r, "profile", p);
    html = page(r, &err);
    CHECK(html != NULL);
    if (html != NULL) {
        CHECK(strstr(html,
                     "<tr><td><code>7</code></td><td></td><td "
                     "class=\"num\">2</td>")
              != NULL);
        CHECK(strstr(html,
                     " s</td><td class=\"num\">250.000</td><td "
                     "class=\"num\">-64</td></tr>")
              != NULL);
        CHECK(strstr(html, "<tr><th>row_limit</th><td>20</td></tr>") != NULL);
        /* the attached profile with a diagnostic is partial */
        CHECK(strstr(html, "Profiler: partial (separate") != NULL);
    }
    free(html);
    json_decref(r);
}

static void
test_flops_and_texts(void)
{
    json_t *r = report(0.01, 1);
    json_t *total = json_pack("{s:s, s:i, s:i, s:s, s:s, s:s}",
                              "status",
                              "complete",
                              "value",
                              1000,
                              "known_value",
                              1000,
                              "unit",
                              "FLOPs",
                              "scope",
                              "workload",
                              "method",
                              "torchscan_dispatch_counter");
    ts_error err;
    char *html;
    json_object_set_new(
        r, "operator_flops", json_pack("{s:i}", "schema_version", 2));
    refused(r, "operator_flops with an unsupported schema_version");
    json_object_set_new(r, "operator_flops", json_array());
    refused(r, "operator_flops with an unsupported schema_version");
    json_object_set_new(
        r,
        "operator_flops",
        json_pack("{s:i, s:O}", "schema_version", 1, "total", total));
    refused(r, "totals.operator_flops must match operator_flops.total");
    json_object_set(json_object_get(r, "totals"), "operator_flops", total);
    html = page(r, &err);
    CHECK(html != NULL
          && strstr(html, "Operator FLOPs: 1,000.000 FLOPs") != NULL);
    free(html);
    /* a null operator_flops is as if absent (the totals row stays) */
    json_object_set_new(r, "operator_flops", json_null());
    html = page(r, &err);
    CHECK(html != NULL);
    free(html);

    /* partial and unavailable totals in the exact-values table */
    json_object_set_new(json_object_get(r, "totals"),
                        "peak_memory",
                        json_pack("{s:s, s:n, s:i, s:s, s:s, s:s}",
                                  "status",
                                  "partial",
                                  "value",
                                  "known_value",
                                  2048,
                                  "unit",
                                  "bytes",
                                  "scope",
                                  "pytorch_tensor_bytes",
                                  "method",
                                  "m"));
    json_object_set_new(json_object_get(r, "totals"),
                        "process_peak_rss",
                        json_pack("{s:s, s:n, s:n, s:s, s:s, s:s}",
                                  "status",
                                  "unavailable",
                                  "value",
                                  "known_value",
                                  "unit",
                                  "bytes",
                                  "scope",
                                  "child_process_lifetime",
                                  "method",
                                  "unavailable"));
    /* context values that are not strings are written as JSON */
    json_object_set_new(
        json_object_get(r, "context"), "extra", json_pack("[i, s]", 1, "a"));
    html = page(r, &err);
    CHECK(html != NULL);
    if (html != NULL) {
        CHECK(strstr(html,
                     "<td class=\"num\">partial: known lower bound "
                     "2048</td>")
              != NULL);
        CHECK(strstr(html, "<td class=\"num\">Unavailable</td>") != NULL);
        CHECK(strstr(html, "<tr><th>extra</th><td>[1,&quot;a&quot;]</td>")
              != NULL);
        CHECK(strstr(html, "<tr><th>cuda_version</th><td>null</td>") != NULL);
    }
    free(html);

    /* texts an HTML page cannot hold: in a value, a key, the title */
    json_object_set_new(
        json_object_get(r, "inputs"), "note", json_string("bell\x07"));
    refused(r, "report holds text with U+0007");
    json_object_del(json_object_get(r, "inputs"), "note");
    json_object_set_new(json_object_get(r, "inputs"),
                        "shapes",
                        json_pack("{s:i}", "k\xc2\x85", 1));
    refused(r, "report holds text with U+0085");
    json_object_del(json_object_get(r, "inputs"), "shapes");
    json_object_set_new(
        json_object_get(r, "inputs"), "x", json_pack("[s]", "\xef\xb7\x90"));
    refused(r, "report holds text with U+FDD0");
    json_object_del(json_object_get(r, "inputs"), "x");
    html = ts_render_benchmark_html(r, "ok\xef\xbf\xbe", &err);
    CHECK(html == NULL);
    CHECK_EQ_STR(err.message,
                 "title holds text with U+FFFE, which an HTML page cannot "
                 "hold");
    /* tab, newline and carriage return are allowed; a NULL title is the
     * default one */
    json_object_set_new(
        json_object_get(r, "inputs"), "note", json_string("a\tb\nc\rd"));
    html = ts_render_benchmark_html(r, NULL, &err);
    CHECK(html != NULL
          && strstr(html, "<title>TorchScan analysis</title>") != NULL);
    free(html);
    /* nesting past 256 levels */
    {
        json_t *deep = json_array();
        for (int i = 0; i < 300; i++) {
            deep = json_pack("[o]", deep);
        }
        json_object_set_new(json_object_get(r, "inputs"), "deep", deep);
        refused(r, "report is nested too deeply");
    }
    json_decref(total);
    json_decref(r);
}

static void
test_comparison_rules(void)
{
    json_t *before = report(0.010, 1);
    json_t *after = report(0.010, 1);
    json_t *cmp = comparison(before, after, true);
    ts_error err;
    char *html;
    char *verdict;
    /* equal latencies: within variability, no context change; the
     * throughput delta 0 has no sign */
    html = page(cmp, &err);
    CHECK(html != NULL);
    if (html != NULL) {
        CHECK(strstr(html, "Latency change: within variability") != NULL);
        CHECK(strstr(html, "No recorded context key changed.") != NULL);
        CHECK(strstr(html, "Output check passed</p>") != NULL);
        /* no baseline profile: only the candidate's evidence section */
        CHECK(strstr(html, "Baseline bottleneck evidence") == NULL);
        CHECK(strstr(html, "Candidate bottleneck evidence") != NULL);
    }
    free(html);
    json_object_set_new(cmp, "schema_version", json_integer(3));
    refused(cmp, "Benchmark comparison has an unsupported schema_version");
    json_object_set_new(cmp, "schema_version", json_integer(1));
    json_object_set_new(cmp, "output_check", json_string("maybe"));
    refused(cmp, "needs output_check 'passed' or 'failed'");
    verdict = ts_render_verdict(cmp, &err);
    CHECK(verdict == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    json_object_del(cmp, "output_check");
    refused(cmp, "needs output_check 'passed' or 'failed'");
    CHECK(ts_render_verdict(cmp, &err) == NULL);
    json_decref(cmp);
    /* slower candidate: positive deltas get a sign */
    json_decref(after);
    after = report(0.020, 1);
    cmp = comparison(before, after, true);
    html = page(cmp, &err);
    CHECK(html != NULL
          && strstr(html, "<td class=\"num\">+10.000</td><td>ms</td>")
                 != NULL);
    CHECK(html != NULL && strstr(html, "Latency change: slower") != NULL);
    free(html);
    /* an invalid candidate inside the comparison */
    json_object_set_new(
        json_object_get(cmp, "after"), "diagnostics", json_string("none"));
    refused(cmp,
            "Benchmark report 'after' has diagnostics that are not a "
            "list");
    json_decref(cmp);
    json_decref(before);
    json_decref(after);
}

int
main(void)
{
    test_diagnostic_rules();
    test_profile_rules();
    test_flops_and_texts();
    test_comparison_rules();
    return ts_test_report();
}
