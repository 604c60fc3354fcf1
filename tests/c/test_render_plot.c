/* The benchmark page's pictures (render_plot.c): geometry derived by hand
 * from render_plot.h's rules and the layout constants of render_plot.c.
 *
 * The report used: 1 call per block, blocks 2, 4 and 3 ms. Per-call times
 * are the blocks; median 3 ms; quartiles 2.5 and 3.5 ms (linear
 * interpolation), IQR 1 ms. The domain is padded by 5% of the 2 ms spread
 * (0.1 ms; 0.5% of 4 ms is less): 1.9 .. 4.1 ms. Its ticks: 2.2 ms / 5 =
 * 0.44 ms, so a step of 0.5 ms: 2.0, 2.5, 3.0, 3.5, 4.0.
 *
 * Strip (single report): x from 24 to 616 px, 592 px for 2.2 ms. 3 ms is at
 * 24 + 1.1 / 2.2 * 592 = 320; 2 ms at 50.91; 4 ms at 589.09; 2.5 ms at
 * 185.45, 3.5 ms at 454.55. The row is centred at y = 8 + 44 / 2 = 30; the
 * jitter of block i is ((5 i mod 9) - 4) * 2: -8, 2, -6 px.
 *
 * Run order: y from 192 (1.9 ms) up to 12 (4.1 ms), 180 px for 2.2 ms:
 * 3 ms at 102, 2 ms at 183.82, 4 ms at 20.18; x for blocks 0.5 .. 3.5 from
 * 72 to 616: block 1 at 162.67, 2 at 344, 3 at 525.33. */
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

static void
test_single(void)
{
    json_t *r = report(blocks, 3, 1, 0.003, 0.001);
    char *html = section(r, NULL);
    char *again = section(r, NULL);
    CHECK_EQ_STR(html, again); /* deterministic */
    CHECK(html != NULL);
    if (html == NULL) {
        json_decref(r);
        free(again);
        return;
    }
    CHECK(strstr(html, "<h2>Timed blocks</h2>") != NULL);
    CHECK_EQ_INT(count(html, "<svg "), 2);
    CHECK_EQ_INT(count(html, "role=\"img\""), 2);
    /* the strip */
    CHECK(strstr(html,
                 "aria-label=\"Strip plot of the per-call time of 3 timed "
                 "blocks (1 call each): median 3.000 ms, IQR 1.000 ms (25th "
                 "percentile 2.500 ms to 75th percentile 3.500 ms).\"")
          != NULL);
    CHECK(strstr(html,
                 "<title>Strip plot of the per-call time of 3 timed blocks")
          != NULL);
    CHECK(strstr(html,
                 "<text x=\"50.91\" y=\"70.00\" "
                 "text-anchor=\"middle\">2.0</text>")
          != NULL);
    CHECK(strstr(html,
                 "<text x=\"185.45\" y=\"70.00\" "
                 "text-anchor=\"middle\">2.5</text>")
          != NULL);
    CHECK(strstr(html,
                 "<text x=\"589.09\" y=\"70.00\" "
                 "text-anchor=\"middle\">4.0</text>")
          != NULL);
    CHECK(strstr(html, ">Per-call time of a block (ms)</text>") != NULL);
    CHECK(strstr(html,
                 "<rect class=\"iqr\" x=\"185.45\" y=\"17.00\" "
                 "width=\"269.09\" height=\"26.00\"")
          != NULL);
    CHECK(strstr(html,
                 "<line class=\"median\" x1=\"320.00\" y1=\"14.00\" "
                 "x2=\"320.00\" y2=\"46.00\"")
          != NULL);
    CHECK(strstr(html,
                 "<circle class=\"block\" cx=\"50.91\" cy=\"22.00\" "
                 "r=\"3.50\"><title>Block 1: 2.000 ms</title></circle>\n"
                 "<circle class=\"block\" cx=\"589.09\" cy=\"32.00\" "
                 "r=\"3.50\"><title>Block 2: 4.000 ms</title></circle>\n"
                 "<circle class=\"block\" cx=\"320.00\" cy=\"24.00\" "
                 "r=\"3.50\"><title>Block 3: 3.000 ms</title></circle>\n")
          != NULL);
    /* its numbers */
    CHECK(strstr(html,
                 "<tr><td class=\"num\">3</td><td class=\"num\">1</td>"
                 "<td class=\"num\">3.000 ms</td><td class=\"num\">1.000 "
                 "ms</td><td class=\"num\">2.500 ms</td><td class=\"num\">"
                 "3.500 ms</td><td class=\"num\">2.000 ms</td><td "
                 "class=\"num\">4.000 ms</td></tr>")
          != NULL);
    /* the run-order plot */
    CHECK(strstr(html,
                 "aria-label=\"Run-order plot of 3 timed blocks, per-call "
                 "time by block: first block 2.000 ms, last block 3.000 ms, "
                 "fastest 2.000 ms (block 1), slowest 4.000 ms (block 2); "
                 "median 3.000 ms.\"")
          != NULL);
    CHECK(strstr(html,
                 "<line class=\"median\" x1=\"72.00\" y1=\"102.00\" "
                 "x2=\"616.00\" y2=\"102.00\"")
          != NULL);
    CHECK(strstr(html,
                 "<polyline class=\"trace\" points=\"162.67,183.82 "
                 "344.00,20.18 525.33,102.00\"")
          != NULL);
    CHECK(strstr(html,
                 "<circle class=\"block\" cx=\"344.00\" cy=\"20.18\" "
                 "r=\"3.50\"><title>Block 2: 4.000 ms</title></circle>")
          != NULL);
    CHECK(strstr(html,
                 "<text x=\"64.00\" y=\"106.00\" "
                 "text-anchor=\"end\">3.0</text>")
          != NULL);
    CHECK(strstr(html,
                 "<text x=\"344.00\" y=\"210.00\" "
                 "text-anchor=\"middle\">2</text>")
          != NULL);
    /* the per-block table: the per-call times as Python writes them */
    CHECK(strstr(html,
                 "<tr><td class=\"num\">2</td><td class=\"num\">4.000 "
                 "ms</td><td class=\"num\">0.004</td></tr>")
          != NULL);
    CHECK_EQ_INT(count(html, "class=\"block\""), 6);
    CHECK(strstr(html, "nopic") == NULL);
    free(html);
    free(again);
    json_decref(r);
}

static void
test_comparison(void)
{
    /* the candidate: 2 calls per block of 1 and 1.5 ms per call */
    static const double fast[] = {0.002, 0.003};
    json_t *before = report(blocks, 3, 1, 0.003, 0.001);
    json_t *after = report(fast, 2, 2, 0.00125, 0.00025);
    char *html = section(before, after);
    CHECK(html != NULL);
    if (html != NULL) {
        CHECK_EQ_INT(count(html, "<svg "), 2);
        /* one axis per figure: both reports on it */
        CHECK_EQ_INT(count(html, "<g class=\"axis\">"), 3);
        CHECK_EQ_INT(count(html, "<circle class=\"block\""), 6);
        CHECK_EQ_INT(count(html, "<rect class=\"block\""), 4);
        CHECK(strstr(html,
                     "baseline and candidate on one axis. Baseline: 3 "
                     "blocks (1 call each): median 3.000 ms")
              != NULL);
        CHECK(strstr(html,
                     " Candidate: 2 blocks (2 calls each): median 1.250 ms, "
                     "IQR 0.250 ms (25th percentile 1.125 ms to 75th "
                     "percentile 1.375 ms).")
              != NULL);
        CHECK(strstr(html, "Baseline (circles, 3 blocks):") != NULL);
        CHECK(strstr(html, "Candidate (squares, 2 blocks):") != NULL);
        CHECK(strstr(html, "<g class=\"legend\">") != NULL);
        CHECK(strstr(html,
                     "<text class=\"row-label\" x=\"86.00\" y=\"34.00\" "
                     "text-anchor=\"end\">Baseline</text>")
              != NULL);
        CHECK(strstr(html, "stroke-dasharray=\"5 3\"") != NULL);
        CHECK(strstr(html,
                     "<th>Block</th><th>Baseline per call</th><th>Baseline "
                     "seconds per call</th><th>Candidate per call</th>"
                     "<th>Candidate seconds per call</th>")
              != NULL);
        /* block 3 has no candidate */
        CHECK(strstr(html,
                     "<tr><td class=\"num\">3</td><td class=\"num\">3.000 "
                     "ms</td><td class=\"num\">0.003</td><td></td><td></td>"
                     "</tr>")
              != NULL);
    }
    free(html);
    /* an unavailable candidate latency: the baseline alone, and why */
    json_object_set_new(json_object_get(after, "totals"),
                        "latency",
                        metric("unavailable", 0, "not_requested"));
    html = section(before, after);
    CHECK(html != NULL);
    if (html != NULL) {
        CHECK_EQ_INT(count(html, "<svg "), 2);
        CHECK_EQ_INT(count(html, "<rect class=\"block\""), 0);
        CHECK_EQ_INT(count(html, "<circle class=\"block\""), 6);
        CHECK(strstr(html,
                     "No picture of the candidate&#x27;s timed blocks: "
                     "latency was not requested, so there is no median to "
                     "draw.")
              != NULL);
        CHECK(strstr(html,
                     ", baseline only (the page says why the other is not "
                     "drawn).")
              != NULL);
    }
    free(html);
    json_decref(before);
    json_decref(after);
}

static void
test_not_drawn(void)
{
    json_t *r = report(blocks, 3, 1, 0.003, 0.001);
    json_t *totals = json_object_get(r, "totals");
    char *html;
    /* a partial IQR */
    json_object_set_new(totals,
                        "latency_iqr",
                        metric("partial", 0.001, "torchscan_blocked_timer"));
    html = section(r, NULL);
    CHECK(html != NULL && strstr(html, "<svg") == NULL);
    CHECK(html != NULL
          && strstr(html,
                    "No picture of the timed blocks: the latency IQR is "
                    "partial (only a lower bound is known), so there is no "
                    "IQR to draw.")
                 != NULL);
    free(html);
    /* blocks that give another median */
    json_object_set_new(totals,
                        "latency_iqr",
                        metric("complete", 0.001, "torchscan_blocked_timer"));
    json_object_set_new(totals,
                        "latency",
                        metric("complete", 0.0031, "torchscan_blocked_timer"));
    html = section(r, NULL);
    CHECK(html != NULL && strstr(html, "<svg") == NULL);
    CHECK(html != NULL
          && strstr(html,
                    "its timed blocks do not reproduce its latency and IQR "
                    "(from the blocks: median 0.003 s, IQR ")
                 != NULL);
    CHECK(html != NULL
          && strstr(html, "; reported: median 0.0031 s, IQR 0.001 s)")
                 != NULL);
    free(html);
    /* no blocks, or blocks that are not durations */
    json_object_set_new(totals,
                        "latency",
                        metric("complete", 0.003, "torchscan_blocked_timer"));
    json_object_set_new(json_object_get(r, "measurement"),
                        "raw_times_seconds",
                        json_pack("[f, s, f]", 0.002, "x", 0.004));
    html = section(r, NULL);
    CHECK(html != NULL
          && strstr(html,
                    "cannot be summarized: Timing must produce positive "
                    "finite durations.")
                 != NULL);
    free(html);
    json_object_del(json_object_get(r, "measurement"), "number_per_run");
    html = section(r, NULL);
    CHECK(html != NULL
          && strstr(html, "the report holds no timed blocks") != NULL);
    free(html);
    json_decref(r);
}

int
main(void)
{
    test_single();
    test_comparison();
    test_not_drawn();
    return ts_test_report();
}
