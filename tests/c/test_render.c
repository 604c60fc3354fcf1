/* render_report's benchmark page in C: escaping, the verdict lines, the
 * page's sections and the consistency checks on saved comparisons. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "torchscan/benchmark.h"
#include "torchscan/json_text.h"
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

static void
test_escape(void)
{
    char *text = ts_html_escape("<script>a & 'b' \"c\"</script>");
    CHECK_EQ_STR(text,
                 "&lt;script&gt;a &amp; &#x27;b&#x27; &quot;c&quot;"
                 "&lt;/script&gt;");
    free(text);
    text = ts_html_escape("");
    CHECK_EQ_STR(text, "");
    free(text);
}

static void
test_verdicts(void)
{
    json_t *before = report(0.010, 1);
    json_t *after = report(0.002, 2);
    json_t *passed = comparison(before, after, true);
    json_t *failed = comparison(before, before, false);
    ts_error err;
    char *verdict;
    ts_error_clear(&err);
    verdict = ts_render_verdict(before, &err);
    CHECK_EQ_STR(verdict, "Single workload measurement");
    free(verdict);
    verdict = ts_render_verdict(passed, &err);
    CHECK_EQ_STR(verdict,
                 "Output check passed. Recorded context changed: "
                 "num_threads");
    free(verdict);
    verdict = ts_render_verdict(failed, &err);
    CHECK_EQ_STR(verdict, "Output check failed \xe2\x80\x94 gains withheld");
    free(verdict);
    json_object_set_new(failed, "output_check", json_string("maybe"));
    CHECK(ts_render_verdict(failed, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    json_decref(before);
    json_decref(after);
    json_decref(passed);
    json_decref(failed);
}

static void
test_single_page(void)
{
    json_t *r = report(0.010, 1);
    ts_error err;
    char *html;
    ts_error_clear(&err);
    json_object_set_new(json_object_get(r, "totals"),
                        "operator_flops",
                        json_pack("{s:s, s:n, s:i, s:s, s:s, s:s}",
                                  "status",
                                  "partial",
                                  "value",
                                  "known_value",
                                  1024,
                                  "unit",
                                  "FLOPs",
                                  "scope",
                                  "workload",
                                  "method",
                                  "torch_dispatch"));
    json_object_set_new(r,
                        "diagnostics",
                        json_pack("[{s:s, s:s, s:s, s:s}]",
                                  "code",
                                  "unsupported_operator",
                                  "severity",
                                  "warning",
                                  "metric",
                                  "flops",
                                  "message",
                                  "aten.sinc <uncounted> & 'x'"));
    html = ts_render_benchmark_html(r, "<script>alert(1)</script>", &err);
    CHECK(html != NULL);
    if (html != NULL) {
        CHECK(strstr(html, "<script") == NULL);
        CHECK(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL);
        CHECK(strstr(html, "Single workload measurement") != NULL);
        CHECK(strstr(html,
                     "default-src 'none'; style-src 'unsafe-inline'; "
                     "base-uri 'none'; form-action 'none'")
              != NULL);
        CHECK(strstr(html, "<pre>Workload on cpu (1 PyTorch threads)")
              != NULL);
        CHECK(strstr(html, "Exact values, methods, and diagnostics") != NULL);
        CHECK(strstr(html, "lower bound") != NULL);
        CHECK(strstr(html, "aten.sinc &lt;uncounted&gt; &amp; &#x27;x&#x27;")
              != NULL);
        CHECK(strstr(html, "<h2>Bottleneck evidence</h2>") != NULL);
        CHECK(strstr(html, "No operator profile was supplied.") != NULL);
        CHECK(strstr(html, "<h2>Execution context</h2>") != NULL);
        CHECK(strstr(html, "Measured changes") == NULL);
        /* under the h2 sections, h3 (an h4 would skip a level) */
        CHECK(strstr(html, "<h3>Diagnostics</h3>") != NULL);
        CHECK(strstr(html, "<h3>Raw timing blocks</h3>") != NULL);
        CHECK(strstr(html, "<h4>") == NULL);
    }
    free(html);
    json_object_set_new(r, "schema_version", json_integer(2));
    CHECK(ts_render_benchmark_html(r, "t", &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    json_decref(r);
}

static void
test_comparison_page(void)
{
    json_t *before = report(0.010, 1);
    json_t *after = report(0.002, 2);
    json_t *profile = json_pack(
        "{s:i, s:{s:s, s:s, s:b}, s:[{s:s, s:i, s:[[i, i]], s:f, s:n, "
        "s:i}], s:[]}",
        "schema_version",
        1,
        "context",
        "device",
        "cpu",
        "torch_version",
        "2.13.0",
        "device_time_supported",
        0,
        "operators",
        "operator",
        "aten::mm",
        "calls",
        3,
        "input_shapes",
        32,
        128,
        "cpu_self_seconds",
        0.0015,
        "device_self_seconds",
        "cpu_net_bytes",
        4096,
        "diagnostics");
    json_t *cmp;
    ts_error err;
    char *html;
    ts_error_clear(&err);
    json_object_set(before, "profile", profile);
    json_object_set_new(after, "profile", profile);
    cmp = comparison(before, after, true);
    html = ts_render_benchmark_html(cmp, "Batching", &err);
    CHECK(html != NULL);
    if (html != NULL) {
        CHECK(strstr(html,
                     "Output check passed. Recorded context changed: "
                     "num_threads")
              != NULL);
        CHECK(strstr(html, "<h3>Baseline</h3>") != NULL);
        CHECK(strstr(html, "<h3>Candidate</h3>") != NULL);
        CHECK(strstr(html, "<h4>Diagnostics</h4>") != NULL);
        CHECK(strstr(html, "<h4>Raw timing blocks</h4>") != NULL);
        CHECK(strstr(html, "Measured changes") != NULL);
        CHECK(strstr(html, "<td class=\"num\">-8.000</td><td>ms</td>")
              != NULL);
        CHECK(strstr(html, "Latency change: faster") != NULL);
        CHECK(strstr(html, "IQR") != NULL);
        CHECK(strstr(html, "Changed execution context") != NULL);
        CHECK(strstr(html, "Baseline bottleneck evidence") != NULL);
        CHECK(strstr(html, "Candidate bottleneck evidence") != NULL);
        CHECK(strstr(html,
                     "<td class=\"num\">1.500</td><td "
                     "class=\"num\">Unavailable</td>")
              != NULL);
        CHECK(strstr(html, "Profiler settings and row limits") != NULL);
        CHECK(strstr(html, "<script") == NULL);
    }
    free(html);
    /* tampered deltas, latency change, context changes */
    json_object_set_new(cmp, "latency_change", json_string("slower"));
    CHECK(ts_render_benchmark_html(cmp, "t", &err) == NULL);
    CHECK(strstr(err.message, "Latency change") != NULL);
    json_object_set_new(cmp, "latency_change", json_string("faster"));
    json_object_set_new(cmp, "context_changes", json_object());
    CHECK(ts_render_benchmark_html(cmp, "t", &err) == NULL);
    CHECK(strstr(err.message, "Context changes") != NULL);
    json_decref(cmp);
    cmp = comparison(before, after, false);
    html = ts_render_benchmark_html(cmp, "t", &err);
    CHECK(html != NULL && strstr(html, "gains withheld") != NULL);
    CHECK(html != NULL
          && strstr(html, "<td class=\"num\">Unavailable</td><td>ms</td>")
                 != NULL);
    free(html);
    json_object_set_new(cmp, "output_check", json_string("passed"));
    CHECK(ts_render_benchmark_html(cmp, "t", &err) == NULL);
    CHECK(strstr(err.message, "deltas") != NULL);
    json_decref(cmp);
    /* a profile of another device */
    json_object_set_new(
        json_object_get(profile, "context"), "device", json_string("cuda:0"));
    CHECK(ts_render_benchmark_html(after, "t", &err) == NULL);
    CHECK(strstr(err.message, "profile") != NULL);
    json_decref(before);
    json_decref(after);
}

/* Python's repr() of each value (the text json.dumps writes). */
static void
test_real_text(void)
{
    static const struct {
        double value;
        const char *text;
    } cases[] = {
        {0.1, "0.1"},
        {0.30000000000000004, "0.30000000000000004"},
        {2.5, "2.5"},
        {100.0, "100.0"},
        {-0.0, "-0.0"},
        {0.0, "0.0"},
        {1e-4, "0.0001"},
        {1e-5, "1e-05"},
        {1.5e-7, "1.5e-07"},
        {5.4904179408766573e-8, "5.4904179408766573e-08"},
        {781905.30835792806, "781905.3083579281"},
        {1e15, "1000000000000000.0"},
        {1e16, "1e+16"},
        {123456789012345678.0, "1.2345678901234568e+17"},
        {1e100, "1e+100"},
        {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {-2.5e-300, "-2.5e-300"},
    };
    char out[TS_JSON_REAL_SIZE];
    uint64_t state = 0x9E3779B97F4A7C15ull;
    int misses = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_format_json_real(cases[i].value, out);
        CHECK_EQ_STR(out, cases[i].text);
    }
    /* any finite double reads back exactly */
    for (int i = 0; i < 200000; i++) {
        double value;
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        memcpy(&value, &state, sizeof value);
        if (!isfinite(value)) {
            continue;
        }
        ts_format_json_real(value, out);
        misses += strtod(out, NULL) != value;
    }
    CHECK_EQ_INT(misses, 0);
}

/* The texts json.dumps gives for the same value (indent=2; and compact
 * with ensure_ascii=False). */
static void
test_json_text(void)
{
    json_t *v = json_pack("{s:[i,f,{}],s:s,s:[],s:n,s:b,s:{s:f}}",
                          "a",
                          1,
                          2.5,
                          "b",
                          "q\"\\\n\t\x01\x7f\xc3\xa9\xf0\x9f\x98\x80",
                          "c",
                          "d",
                          "e",
                          1,
                          "f",
                          "g",
                          -0.0);
    char *pretty = ts_json_text(v, 2);
    char *compact = ts_json_text(v, -1);
    CHECK_EQ_STR(pretty,
                 "{\n  \"a\": [\n    1,\n    2.5,\n    {}\n  ],\n"
                 "  \"b\": "
                 "\"q\\\"\\\\\\n\\t\\u0001\\u007f\\u00e9\\ud83d\\ude00\",\n"
                 "  \"c\": [],\n  \"d\": null,\n  \"e\": true,\n"
                 "  \"f\": {\n    \"g\": -0.0\n  }\n}");
    CHECK_EQ_STR(compact,
                 "{\"a\":[1,2.5,{}],\"b\":\"q\\\"\\\\\\n\\t\\u0001\x7f"
                 "\xc3\xa9\xf0\x9f\x98\x80\",\"c\":[],\"d\":null,"
                 "\"e\":true,\"f\":{\"g\":-0.0}}");
    free(pretty);
    free(compact);
    json_decref(v);
}

int
main(void)
{
    test_json_text();
    test_real_text();
    test_escape();
    test_verdicts();
    test_single_page();
    test_comparison_page();
    return ts_test_report();
}
