/* render_plot.c: the reason the page gives for each latency or IQR total
 * that cannot be drawn (partial, unavailable, not requested, no status).
 * Helpers as in test_render_plot.c. */
#include <stdlib.h>

#include "harness.h"
#include "render_plot.h"

static json_t *
metric(const char *status, double value, const char *method)
{
    bool complete = strcmp(status, "complete") == 0;
    bool partial = strcmp(status, "partial") == 0;
    return json_pack("{s:s, s:o, s:o, s:s, s:s, s:s}",
                     "status",
                     status,
                     "value",
                     complete ? json_real(value) : json_null(),
                     "known_value",
                     complete || partial ? json_real(value) : json_null(),
                     "unit",
                     "seconds",
                     "scope",
                     "warmed_block_average",
                     "method",
                     method);
}

/* A report with the given blocks (seconds, `number` calls each) and
 * latency / IQR totals. */
static json_t *
report(const double *blocks, size_t n, int number, double latency, double iqr)
{
    json_t *raw = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(raw, json_real(blocks[i]));
    }
    return json_pack("{s:{s:o, s:o}, s:{s:i, s:o}}",
                     "totals",
                     "latency",
                     metric("complete", latency, "torchscan_blocked_timer"),
                     "latency_iqr",
                     metric("complete", iqr, "torchscan_blocked_timer"),
                     "measurement",
                     "number_per_run",
                     number,
                     "raw_times_seconds",
                     raw);
}

static char *
section(const json_t *a, const json_t *b)
{
    ts_text_buf t = {NULL, 0, 0, false};
    ts_render_timing_section(&t, a, b);
    CHECK(!t.failed);
    return t.data;
}

static int
count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++) {
        n++;
    }
    return n;
}

static const double blocks[] = {0.002, 0.004, 0.003};

/* The page says why a report's blocks are not drawn. */
static void
why_not(json_t *r, const char *why)
{
    char *html = section(r, NULL);
    char expected[512];
    snprintf(expected,
             sizeof expected,
             "<p class=\"nopic\">No picture of the timed blocks: %s</p>",
             why);
    if (html == NULL || strstr(html, expected) == NULL) {
        fprintf(stderr, "lacks: %s\n%s\n", expected, html ? html : "");
    }
    CHECK(html != NULL && strstr(html, expected) != NULL);
    CHECK(html != NULL && count(html, "<svg ") == 0);
    free(html);
    json_decref(r);
}

static void
test_reasons(void)
{
    json_t *r = report(blocks, 3, 1, 0.003, 0.001);
    json_object_set_new(json_object_get(r, "totals"),
                        "latency",
                        metric("partial", 0.003, "torchscan_blocked_timer"));
    why_not(r,
            "latency is partial (only a lower bound is known), so there is "
            "no median to draw.");
    r = report(blocks, 3, 1, 0.003, 0.001);
    json_object_set_new(json_object_get(r, "totals"),
                        "latency",
                        metric("unavailable", 0, "torchscan_blocked_timer"));
    why_not(r,
            "latency is unavailable (see the diagnostics), so there is no "
            "median to draw.");
    r = report(blocks, 3, 1, 0.003, 0.001);
    json_object_set_new(
        json_object_get(r, "totals"), "latency", json_object());
    why_not(r,
            "latency is unavailable (see the diagnostics), so there is no "
            "median to draw.");
    r = report(blocks, 3, 1, 0.003, 0.001);
    json_object_set_new(json_object_get(r, "totals"),
                        "latency_iqr",
                        metric("partial", 0.001, "torchscan_blocked_timer"));
    why_not(r,
            "the latency IQR is partial (only a lower bound is known), so "
            "there is no IQR to draw.");
    r = report(blocks, 3, 1, 0.003, 0.001);
    json_object_set_new(json_object_get(r, "totals"),
                        "latency_iqr",
                        metric("unavailable", 0, "not_requested"));
    why_not(r,
            "the latency IQR was not requested, so there is no IQR to draw.");
}

int
main(void)
{
    test_reasons();
    return ts_test_report();
}
