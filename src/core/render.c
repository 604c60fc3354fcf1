/* render_report for BenchmarkReports and BenchmarkComparisons (contract
 * 1.13, 4.3): a minimal self-contained HTML page without any script. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/benchmark.h"
#include "torchscan/diff.h"
#include "torchscan/json_text.h"
#include "torchscan/render.h"
#include "torchscan/workload.h"
#include "render_plot.h"
#include "render_style.h"
#include "text_buf.h"

#define FAIL(err, code, ...) (ts_error_set((err), (code), __VA_ARGS__), (code))

/* ---- output buffer ------------------------------------------------------ */

typedef ts_text_buf html_buf;

static void
raw(html_buf *b, const char *text)
{
    ts_text_put(b, text);
}

/* Appends caller text with & < > " ' escaped. */
static void
esc(html_buf *b, const char *text)
{
    ts_text_put_escaped(b, text);
}

/* Escaped caller text inside an element: <tag>text</tag>. */
static void
element(html_buf *b, const char *tag, const char *text)
{
    raw(b, "<");
    raw(b, tag);
    raw(b, ">");
    esc(b, text);
    raw(b, "</");
    raw(b, tag);
    raw(b, ">");
}

char *
ts_html_escape(const char *text)
{
    html_buf b = {NULL, 0, 0, false};
    esc(&b, text != NULL ? text : "");
    if (b.failed || b.data == NULL) {
        free(b.data);
        return NULL;
    }
    return b.data;
}

/* ---- text the page may hold -------------------------------------------- */

/* The first code point of valid UTF-8 `text` that an HTML page must not
 * hold (contract: control characters other than tab, CR and LF, and
 * noncharacters such as U+FFFE/U+FFFF), or 0 when there is none. */
static uint32_t
forbidden_code_point(const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        uint32_t cp;
        int extra;
        if (*p < 0x80) {
            cp = *p;
            extra = 0;
        }
        else if (*p >= 0xF0) {
            cp = *p & 0x07u;
            extra = 3;
        }
        else if (*p >= 0xE0) {
            cp = *p & 0x0Fu;
            extra = 2;
        }
        else {
            cp = *p & 0x1Fu;
            extra = 1;
        }
        p++;
        for (int i = 0; i < extra && (*p & 0xC0) == 0x80; i++, p++) {
            cp = (cp << 6) | (*p & 0x3Fu);
        }
        if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r')
            || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0xFDD0 && cp <= 0xFDEF)
            || (cp & 0xFFFEu) == 0xFFFEu) {
            return cp;
        }
    }
    return 0;
}

/* Checks every string and key of a JSON value (depth-bounded by the
 * validators that run after). */
static int
check_texts(const json_t *value, const char *what, int depth, ts_error *err)
{
    uint32_t cp = 0;
    if (depth > 256) {
        return FAIL(err, TS_EINVAL, "%s is nested too deeply", what);
    }
    if (json_is_string(value)) {
        cp = forbidden_code_point(json_string_value(value));
    }
    else if (json_is_object(value)) {
        const char *key;
        json_t *item;
        json_object_foreach((json_t *)value, key, item)
        {
            int rc;
            if ((cp = forbidden_code_point(key)) != 0) {
                break;
            }
            if ((rc = check_texts(item, what, depth + 1, err)) != TS_OK) {
                return rc;
            }
        }
    }
    else if (json_is_array(value)) {
        for (size_t i = 0; i < json_array_size(value); i++) {
            int rc =
                check_texts(json_array_get(value, i), what, depth + 1, err);
            if (rc != TS_OK) {
                return rc;
            }
        }
    }
    return cp == 0 ? TS_OK
                   : FAIL(err,
                          TS_EINVAL,
                          "%s holds text with U+%04X, which an HTML page "
                          "cannot hold",
                          what,
                          (unsigned)cp);
}

/* ---- value formatting --------------------------------------------------- */

static bool
is_number(const json_t *v)
{
    return json_is_integer(v) || json_is_real(v);
}

static double
number_of(const json_t *v)
{
    return json_is_integer(v) ? (double)json_integer_value(v)
                              : json_real_value(v);
}

/* The exact JSON text of a value, numbers as json.dumps shows them, objects
 * in their stored order (compact separators). */
static void
json_text(html_buf *b, const json_t *value)
{
    char *text = ts_json_text(value, -1);
    if (text == NULL) {
        b->failed = true;
        return;
    }
    esc(b, text);
    free(text);
}

/* A number with 3 grouped decimals, e.g. "1,234.500". */
static void
grouped(html_buf *b, double value)
{
    char digits[512];
    if (!ts_format_grouped(value, digits, sizeof digits)) {
        b->failed = true;
        return;
    }
    raw(b, digits);
}

static const char *
string_of(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* ---- labels ------------------------------------------------------------- */

static const struct {
    const char *name;
    const char *label;
} metric_labels[] = {
    {"first_call_latency", "First call"},
    {"latency", "Latency (block median)"},
    {"latency_iqr", "Latency IQR"},
    {"throughput", "Throughput"},
    {"operator_flops", "Operator FLOPs"},
    {"peak_memory", "PyTorch peak memory"},
    {"process_peak_rss", "Process peak RSS"},
    {"achieved_flops", "Achieved FLOP/s"},
    {"flops_utilization", "FLOP/s utilization"},
};

static const char *
metric_label(const char *name)
{
    for (size_t i = 0; i < sizeof metric_labels / sizeof metric_labels[0];
         i++) {
        if (strcmp(metric_labels[i].name, name) == 0) {
            return metric_labels[i].label;
        }
    }
    return name;
}

/* ---- validation --------------------------------------------------------- */

static bool
is_comparison(const json_t *report)
{
    const char *type = string_of(report, "report_type");
    return type != NULL && strcmp(type, "benchmark_comparison") == 0;
}

static int
validate_diagnostics(const json_t *report, const char *which, ts_error *err)
{
    const json_t *diagnostics = json_object_get(report, "diagnostics");
    if (diagnostics == NULL) {
        return TS_OK;
    }
    if (!json_is_array(diagnostics)) {
        return FAIL(err,
                    TS_EINVAL,
                    "Benchmark report '%s' has diagnostics that are not a "
                    "list.",
                    which);
    }
    for (size_t i = 0; i < json_array_size(diagnostics); i++) {
        const json_t *d = json_array_get(diagnostics, i);
        const char *severity = string_of(d, "severity");
        const json_t *path = json_object_get(d, "path");
        const json_t *op = json_object_get(d, "operator");
        if (!json_is_object(d)
            || !json_is_string(json_object_get(d, "message"))
            || severity == NULL
            || (strcmp(severity, "warning") != 0
                && strcmp(severity, "error") != 0)
            || (path != NULL && !json_is_string(path))
            || (op != NULL && !json_is_string(op))) {
            return FAIL(err,
                        TS_EINVAL,
                        "Benchmark report '%s' has an invalid diagnostic "
                        "(a str message, severity warning or error, and str "
                        "path/operator are required).",
                        which);
        }
    }
    return TS_OK;
}

static int
validate_profile(const json_t *report, const char *which, ts_error *err)
{
    const json_t *profile = json_object_get(report, "profile");
    const json_t *context = json_object_get(report, "context");
    const json_t *pcontext = json_object_get(profile, "context");
    const json_t *version = json_object_get(profile, "schema_version");
    const json_t *operators = json_object_get(profile, "operators");
    if (profile == NULL || json_is_null(profile)) {
        return TS_OK;
    }
    if (!json_is_object(profile) || !json_is_integer(version)
        || json_integer_value(version) != 1 || !json_is_array(operators)
        || !json_is_object(pcontext)) {
        return FAIL(err,
                    TS_EINVAL,
                    "Benchmark report '%s' has an invalid profile "
                    "(schema_version 1, a context object and an operators "
                    "list are required).",
                    which);
    }
    if (!ts_json_equal(json_object_get(pcontext, "device"),
                       json_object_get(context, "device"))
        || !ts_json_equal(json_object_get(pcontext, "torch_version"),
                          json_object_get(context, "torch_version"))) {
        return FAIL(err,
                    TS_EINVAL,
                    "Benchmark report '%s' has a profile whose device or "
                    "torch_version differs from the report's.",
                    which);
    }
    for (size_t i = 0; i < json_array_size(operators); i++) {
        if (!json_is_object(json_array_get(operators, i))) {
            return FAIL(err,
                        TS_EINVAL,
                        "Benchmark report '%s' has a profile row that is not "
                        "an object.",
                        which);
        }
    }
    return validate_diagnostics(profile, which, err);
}

static int
validate_report(const json_t *report, const char *which, ts_error *err)
{
    const json_t *flops = json_object_get(report, "operator_flops");
    int rc = ts_benchmark_validate(report, which, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (flops != NULL && !json_is_null(flops)) {
        const json_t *version = json_object_get(flops, "schema_version");
        if (!json_is_object(flops) || !json_is_integer(version)
            || json_integer_value(version) != 1) {
            return FAIL(err,
                        TS_EINVAL,
                        "Benchmark report '%s' has operator_flops with an "
                        "unsupported schema_version (expected 1).",
                        which);
        }
        if (!ts_json_equal(json_object_get(json_object_get(report, "totals"),
                                           "operator_flops"),
                           json_object_get(flops, "total"))) {
            return FAIL(err,
                        TS_EINVAL,
                        "Benchmark report '%s': totals.operator_flops must "
                        "match operator_flops.total.",
                        which);
        }
    }
    rc = validate_diagnostics(report, which, err);
    return rc != TS_OK ? rc : validate_profile(report, which, err);
}

/* A saved comparison must be exactly what compare_benchmarks would build
 * from its own before and after reports. */
static int
validate_comparison(const json_t *report, ts_error *err)
{
    const json_t *version = json_object_get(report, "schema_version");
    const json_t *before = json_object_get(report, "before");
    const json_t *after = json_object_get(report, "after");
    const char *check = string_of(report, "output_check");
    json_t *diffs = NULL;
    json_t *expected = NULL;
    int rc;
    if (!json_is_integer(version) || json_integer_value(version) != 1) {
        return FAIL(err,
                    TS_EINVAL,
                    "Benchmark comparison has an unsupported schema_version "
                    "(expected 1).");
    }
    if (check == NULL
        || (strcmp(check, "passed") != 0 && strcmp(check, "failed") != 0)) {
        return FAIL(err,
                    TS_EINVAL,
                    "Benchmark comparison needs output_check 'passed' or "
                    "'failed'.");
    }
    if ((rc = validate_report(before, "before", err)) != TS_OK
        || (rc = validate_report(after, "after", err)) != TS_OK
        || (rc = ts_benchmark_prepare(before, after, &diffs, err)) != TS_OK) {
        return rc;
    }
    expected = ts_benchmark_comparison(
        before, after, diffs, strcmp(check, "passed") == 0, err);
    if (expected == NULL) {
        return err != NULL && err->code != TS_OK ? err->code : TS_ENOMEM;
    }
    if (!ts_json_equal(json_object_get(expected, "totals"),
                       json_object_get(report, "totals"))) {
        rc = FAIL(err,
                  TS_EINVAL,
                  "Benchmark comparison deltas do not match its before and "
                  "after reports.");
    }
    else if (!ts_json_equal(json_object_get(expected, "latency_change"),
                            json_object_get(report, "latency_change"))) {
        rc = FAIL(err,
                  TS_EINVAL,
                  "Latency change does not match the benchmark comparison's "
                  "reports.");
    }
    else if (!ts_json_equal(json_object_get(expected, "context_changes"),
                            json_object_get(report, "context_changes"))) {
        rc = FAIL(err,
                  TS_EINVAL,
                  "Context changes do not match the benchmark comparison's "
                  "reports.");
    }
    json_decref(expected);
    return rc;
}

/* ---- verdict ------------------------------------------------------------ */

char *
ts_render_verdict(const json_t *report, ts_error *err)
{
    html_buf b = {NULL, 0, 0, false};
    if (!is_comparison(report)) {
        raw(&b, "Single workload measurement");
    }
    else {
        const char *check = string_of(report, "output_check");
        const json_t *changes = json_object_get(report, "context_changes");
        const char *key;
        const json_t *value;
        bool first = true;
        if (check != NULL && strcmp(check, "passed") == 0) {
            raw(&b, "Output check passed");
        }
        else if (check != NULL && strcmp(check, "failed") == 0) {
            raw(&b, "Output check failed \xe2\x80\x94 gains withheld");
        }
        else {
            ts_error_set(err,
                         TS_EINVAL,
                         "Benchmark comparison needs output_check 'passed' "
                         "or 'failed'.");
            return NULL;
        }
        json_object_foreach((json_t *)changes, key, value)
        {
            raw(&b, first ? ". Recorded context changed: " : ", ");
            raw(&b, key);
            first = false;
        }
    }
    if (b.failed || b.data == NULL) {
        free(b.data);
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    return b.data;
}

/* ---- page sections ------------------------------------------------------ */

/* Light by default, dark where the reader's system prefers it, light and
 * without backgrounds on paper. The figures take their colours from the
 * same variables (their marks differ by shape as well as colour). */
/* The exact value cell of a MetricResult. */
static void
metric_value(html_buf *b, const json_t *metric)
{
    const char *status = string_of(metric, "status");
    if (status != NULL && strcmp(status, "complete") == 0) {
        json_text(b, json_object_get(metric, "value"));
    }
    else if (status != NULL && strcmp(status, "partial") == 0) {
        raw(b, "partial: known lower bound ");
        json_text(b, json_object_get(metric, "known_value"));
    }
    else {
        raw(b, "Unavailable");
    }
}

static void
diagnostics_list(html_buf *b, const json_t *diagnostics)
{
    if (json_array_size(diagnostics) == 0) {
        raw(b, "<p>No diagnostics.</p>\n");
        return;
    }
    raw(b, "<ul>\n");
    for (size_t i = 0; i < json_array_size(diagnostics); i++) {
        const json_t *d = json_array_get(diagnostics, i);
        const char *code = string_of(d, "code");
        const char *metric = string_of(d, "metric");
        raw(b, "<li>");
        if (code != NULL) {
            raw(b, "<code>");
            esc(b, code);
            raw(b, "</code> ");
        }
        if (metric != NULL) {
            esc(b, metric);
            raw(b, ": ");
        }
        esc(b, string_of(d, "message"));
        raw(b, "</li>\n");
    }
    raw(b, "</ul>\n");
}

/* The terminal summary, then the exact metric table and diagnostics, under a
 * heading of level `sub` (h3 on a single report's page, h4 under a
 * comparison's Baseline/Candidate h3, so that no heading level is skipped). */
static int
measured_values(html_buf *b,
                const json_t *report,
                const char *sub,
                ts_error *err)
{
    const json_t *totals = json_object_get(report, "totals");
    char *summary = ts_workload_summary(report, err);
    const char *name;
    const json_t *metric;
    if (summary == NULL) {
        return err != NULL && err->code != TS_OK ? err->code : TS_ENOMEM;
    }
    raw(b, "<pre>");
    esc(b, summary);
    raw(b, "</pre>\n");
    free(summary);
    raw(b,
        "<details><summary>Exact values, methods, and diagnostics</summary>\n"
        "<table>\n<tr><th>Metric</th><th>Name</th><th>Status</th>"
        "<th>Value</th><th>Unit</th><th>Scope</th><th>Method</th></tr>\n");
    json_object_foreach((json_t *)totals, name, metric)
    {
        raw(b, "<tr>");
        element(b, "td", metric_label(name));
        raw(b, "<td><code>");
        esc(b, name);
        raw(b, "</code></td>");
        element(b, "td", string_of(metric, "status"));
        raw(b, "<td class=\"num\">");
        metric_value(b, metric);
        raw(b, "</td>");
        element(b, "td", string_of(metric, "unit"));
        element(b, "td", string_of(metric, "scope"));
        element(b, "td", string_of(metric, "method"));
        raw(b, "</tr>\n");
    }
    raw(b, "</table>\n");
    element(b, sub, "Diagnostics");
    raw(b, "\n");
    diagnostics_list(b, json_object_get(report, "diagnostics"));
    raw(b, "</details>\n");
    return TS_OK;
}

static const char *
latency_change_text(const char *change)
{
    if (change == NULL) {
        return "unavailable";
    }
    if (strcmp(change, "within_variability") == 0) {
        return "within variability";
    }
    return change;
}

static void
measured_changes(html_buf *b, const json_t *report)
{
    const json_t *totals = json_object_get(report, "totals");
    const json_t *changes = json_object_get(report, "context_changes");
    const char *name;
    const json_t *diff;
    const char *key;
    const json_t *change;
    raw(b,
        "<h3>Measured changes</h3>\n<table>\n<tr><th>Metric</th>"
        "<th>Delta (candidate &#x2212; baseline)</th><th>Unit</th></tr>\n");
    json_object_foreach((json_t *)totals, name, diff)
    {
        const json_t *delta = json_object_get(diff, "delta");
        const char *unit = string_of(json_object_get(diff, "before"), "unit");
        double scale;
        const char *shown = ts_display_unit(
            unit, is_number(delta) ? number_of(delta) : 0.0, &scale);
        raw(b, "<tr>");
        element(b, "td", metric_label(name));
        raw(b, "<td class=\"num\">");
        if (is_number(delta)) {
            double value = number_of(delta) * scale;
            if (value > 0) {
                raw(b, "+");
            }
            grouped(b, value);
        }
        else {
            raw(b, "Unavailable");
        }
        raw(b, "</td>");
        element(b, "td", shown);
        raw(b, "</tr>\n");
    }
    raw(b, "</table>\n<p><strong>Latency change: ");
    esc(b, latency_change_text(string_of(report, "latency_change")));
    raw(b,
        "</strong></p>\n<p class=\"note\">Descriptive only: a latency delta "
        "no larger than the larger of the two interquartile ranges (IQR) is "
        "reported as within variability. This is not a significance "
        "test.</p>\n<h3>Changed execution context</h3>\n");
    if (json_object_size(changes) == 0) {
        raw(b, "<p>No recorded context key changed.</p>\n");
        return;
    }
    raw(b,
        "<table>\n<tr><th>Context key</th><th>Baseline</th>"
        "<th>Candidate</th></tr>\n");
    json_object_foreach((json_t *)changes, key, change)
    {
        raw(b, "<tr>");
        element(b, "td", key);
        raw(b, "<td>");
        json_text(b, json_object_get(change, "before"));
        raw(b, "</td><td>");
        json_text(b, json_object_get(change, "after"));
        raw(b, "</td></tr>\n");
    }
    raw(b, "</table>\n");
}

/* Milliseconds of a seconds value, 3 decimals, or "Unavailable". */
static void
seconds_cell(html_buf *b, const json_t *seconds)
{
    raw(b, "<td class=\"num\">");
    if (is_number(seconds)) {
        double scale;
        const char *shown =
            ts_display_unit("seconds", number_of(seconds), &scale);
        grouped(b, number_of(seconds) * scale);
        if (strcmp(shown, "ms") != 0) {
            raw(b, " s"); /* beyond what ms can show */
        }
    }
    else {
        raw(b, "Unavailable");
    }
    raw(b, "</td>");
}

static void
profile_section(html_buf *b, const char *heading, const json_t *report)
{
    const json_t *profile = json_object_get(report, "profile");
    const json_t *operators = json_object_get(profile, "operators");
    const json_t *context = json_object_get(profile, "context");
    const char *key;
    const json_t *value;
    raw(b, "<section>\n");
    element(b, "h2", heading);
    raw(b, "\n");
    if (!json_is_object(profile)) {
        raw(b,
            "<p>No operator profile was supplied. Run profile_workload in a "
            "separate diagnostic pass.</p>\n</section>\n");
        return;
    }
    raw(b,
        "<table>\n<tr><th>Operator / runtime event</th><th>Input shapes</th>"
        "<th>Calls</th><th>CPU self ms</th><th>Device self ms</th>"
        "<th>CPU net bytes</th></tr>\n");
    for (size_t i = 0; i < json_array_size(operators); i++) {
        const json_t *row = json_array_get(operators, i);
        const json_t *shapes = json_object_get(row, "input_shapes");
        const char *op = string_of(row, "operator");
        raw(b, "<tr><td><code>");
        if (op != NULL) {
            esc(b, op);
        }
        else {
            json_text(b, json_object_get(row, "operator"));
        }
        raw(b, "</code></td><td>");
        if (shapes != NULL && !json_is_null(shapes)) {
            json_text(b, shapes);
        }
        raw(b, "</td><td class=\"num\">");
        json_text(b, json_object_get(row, "calls"));
        raw(b, "</td>");
        seconds_cell(b, json_object_get(row, "cpu_self_seconds"));
        seconds_cell(b, json_object_get(row, "device_self_seconds"));
        raw(b, "<td class=\"num\">");
        json_text(b, json_object_get(row, "cpu_net_bytes"));
        raw(b, "</td></tr>\n");
    }
    raw(b, "</table>\n<h3>Profiler diagnostics</h3>\n");
    diagnostics_list(b, json_object_get(profile, "diagnostics"));
    raw(b,
        "<details><summary>Profiler settings and row limits</summary>\n"
        "<table>\n");
    json_object_foreach((json_t *)context, key, value)
    {
        raw(b, "<tr>");
        element(b, "th", key);
        raw(b, "<td>");
        json_text(b, value);
        raw(b, "</td></tr>\n");
    }
    raw(b,
        "</table>\n<p class=\"note\">Rows are the profiler's groups by "
        "operator and input shapes, sorted by self time and truncated to "
        "the limit; the profile is one separate instrumented call, not the "
        "timed run.</p>\n</details>\n</section>\n");
}

static void
context_block(html_buf *b, const char *heading, const json_t *report)
{
    const json_t *context = json_object_get(report, "context");
    const json_t *measurement = json_object_get(report, "measurement");
    const char *sub = heading != NULL ? "h4" : "h3"; /* no skipped level */
    const char *key;
    const json_t *value;
    if (heading != NULL) {
        element(b, "h3", heading);
        raw(b, "\n");
    }
    raw(b, "<table>\n");
    json_object_foreach((json_t *)context, key, value)
    {
        raw(b, "<tr>");
        element(b, "th", key);
        raw(b, "<td>");
        if (json_is_string(value)) {
            esc(b, json_string_value(value));
        }
        else {
            json_text(b, value);
        }
        raw(b, "</td></tr>\n");
    }
    raw(b, "</table>\n");
    element(b, sub, "Inputs");
    raw(b, "\n<pre>");
    json_text(b, json_object_get(report, "inputs"));
    raw(b, "</pre>\n");
    element(b, sub, "Raw timing blocks");
    raw(b, "\n<table>\n");
    json_object_foreach((json_t *)measurement, key, value)
    {
        raw(b, "<tr>");
        element(b, "th", key);
        raw(b, "<td>");
        json_text(b, value);
        raw(b, "</td></tr>\n");
    }
    raw(b, "</table>\n");
}

char *
ts_render_benchmark_html(const json_t *report,
                         const char *title,
                         ts_error *err)
{
    html_buf b = {NULL, 0, 0, false};
    bool comparison = is_comparison(report);
    const json_t *before = json_object_get(report, "before");
    const json_t *after = json_object_get(report, "after");
    char *verdict = NULL;
    int rc;
    if (title == NULL) {
        title = "TorchScan analysis";
    }
    rc = comparison ? validate_comparison(report, err)
                    : validate_report(report, "report", err);
    if (rc == TS_OK) {
        uint32_t cp = forbidden_code_point(title);
        rc = cp == 0 ? check_texts(report, "report", 0, err)
                     : FAIL(err,
                            TS_EINVAL,
                            "title holds text with U+%04X, which an HTML page "
                            "cannot hold",
                            (unsigned)cp);
    }
    if (rc != TS_OK) {
        return NULL;
    }
    verdict = ts_render_verdict(report, err);
    if (verdict == NULL) {
        return NULL;
    }
    raw(&b,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
        "charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
        "'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action "
        "'none'\">\n<meta name=\"viewport\" content=\"width=device-width, "
        "initial-scale=1\">\n");
    element(&b, "title", title);
    raw(&b, "\n<style>");
    raw(&b, rs_style);
    raw(&b, "</style>\n</head>\n<body>\n<header>\n");
    element(&b, "h1", title);
    raw(&b, "\n<p class=\"verdict\">");
    esc(&b, verdict);
    raw(&b, "</p>\n</header>\n<main>\n<section>\n<h2>Measured values</h2>\n");
    free(verdict);
    if (comparison) {
        raw(&b, "<h3>Baseline</h3>\n");
        rc = measured_values(&b, before, "h4", err);
        if (rc == TS_OK) {
            raw(&b, "<h3>Candidate</h3>\n");
            rc = measured_values(&b, after, "h4", err);
        }
        measured_changes(&b, report);
    }
    else {
        rc = measured_values(&b, report, "h3", err);
    }
    if (rc != TS_OK) {
        free(b.data);
        return NULL;
    }
    raw(&b, "</section>\n");
    ts_render_timing_section(
        &b, comparison ? before : report, comparison ? after : NULL);
    if (comparison) {
        if (json_is_object(json_object_get(before, "profile"))) {
            profile_section(&b, "Baseline bottleneck evidence", before);
        }
        profile_section(&b, "Candidate bottleneck evidence", after);
    }
    else {
        profile_section(&b, "Bottleneck evidence", report);
    }
    raw(&b,
        "<section>\n<h2>Execution context</h2>\n<details><summary>Inputs, "
        "hardware and raw timing blocks</summary>\n");
    if (comparison) {
        context_block(&b, "Baseline", before);
        context_block(&b, "Candidate", after);
    }
    else {
        context_block(&b, NULL, report);
    }
    raw(&b, "</details>\n</section>\n</main>\n</body>\n</html>\n");
    if (b.failed || b.data == NULL) {
        free(b.data);
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    return b.data;
}
