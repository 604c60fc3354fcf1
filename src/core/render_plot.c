/* The benchmark page's pictures of timed blocks (see render_plot.h). */
#include "render_plot.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/json_text.h"
#include "torchscan/stats.h"
#include "svg_axis.h"

/* Figure geometry, in CSS pixels (the SVG scales down on narrow screens). */
#define WIDTH 640.0
#define MARGIN_RIGHT 24.0
#define STRIP_TOP 8.0
#define STRIP_ROW 44.0
#define STRIP_LABELS 96.0 /* room for "Candidate" left of a row */
#define STRIP_PLAIN 24.0  /* left margin without row labels */
#define AXIS_ROOM 46.0    /* below a bottom axis: ticks, labels, title */
#define RUN_LEFT 72.0     /* room for a left axis */
#define RUN_TOP 12.0
#define RUN_LEGEND 22.0
#define RUN_HEIGHT 180.0
#define MARK 3.5 /* half the size of a block's mark */

/* A block's figures must match the report's within this relative error. */
#define AGREEMENT 1e-9

typedef struct series {
    const char *name; /* "Baseline" / "Candidate"; NULL on a single report */
    const char *cls;  /* its CSS class */
    bool square;      /* the candidate's marks are squares, others circles */
    double *per_call; /* seconds per call of each block, in run order; NULL
                         when the report is not drawn */
    size_t n;
    int64_t number;     /* calls per block */
    double median, iqr; /* the report's latency and latency_iqr */
    double p25, p75;    /* quartiles of per_call */
    size_t fastest, slowest;
    char why[512]; /* why the report is not drawn */
} series;

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

static bool
agrees(double a, double b, double scale)
{
    return fabs(a - b) <= AGREEMENT * scale;
}

/* Why a timing total cannot be drawn, or NULL when it is complete. */
static const char *
unavailable_reason(const json_t *metric)
{
    const char *status = json_string_value(json_object_get(metric, "status"));
    const char *method = json_string_value(json_object_get(metric, "method"));
    if (status != NULL && strcmp(status, "complete") == 0) {
        return NULL;
    }
    if (status != NULL && strcmp(status, "partial") == 0) {
        return "is partial (only a lower bound is known)";
    }
    if (method != NULL && strcmp(method, "not_requested") == 0) {
        return "was not requested";
    }
    return "is unavailable (see the diagnostics)";
}

/* Reads the report's blocks into `s`, or says in s->why why they are not
 * drawn. False only when out of memory. */
static bool
load_series(series *s, const json_t *report)
{
    const json_t *totals = json_object_get(report, "totals");
    const json_t *latency = json_object_get(totals, "latency");
    const json_t *iqr = json_object_get(totals, "latency_iqr");
    const json_t *measurement = json_object_get(report, "measurement");
    const json_t *number = json_object_get(measurement, "number_per_run");
    const json_t *raw = json_object_get(measurement, "raw_times_seconds");
    const char *reason;
    double *blocks = NULL;
    ts_timing_summary summary;
    ts_error err;
    int rc;
    size_t n = json_array_size(raw);
    ts_error_clear(&err);
    if ((reason = unavailable_reason(latency)) != NULL) {
        snprintf(s->why,
                 sizeof s->why,
                 "latency %s, so there is no median to draw.",
                 reason);
        return true;
    }
    if ((reason = unavailable_reason(iqr)) != NULL) {
        snprintf(s->why,
                 sizeof s->why,
                 "the latency IQR %s, so there is no IQR to draw.",
                 reason);
        return true;
    }
    if (!json_is_integer(number) || json_integer_value(number) < 1
        || !json_is_array(raw) || n == 0) {
        snprintf(s->why,
                 sizeof s->why,
                 "the report holds no timed blocks "
                 "(measurement.number_per_run and raw_times_seconds).");
        return true;
    }
    if (n > SIZE_MAX / sizeof *blocks) {
        return false;
    }
    blocks = malloc(n * sizeof *blocks);
    s->per_call = malloc(n * sizeof *s->per_call);
    if (blocks == NULL || s->per_call == NULL) {
        free(blocks);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *block = json_array_get(raw, i);
        /* not a number: NaN, which the summary refuses */
        blocks[i] = is_number(block) ? number_of(block) : NAN;
    }
    s->n = n;
    s->number = json_integer_value(number);
    s->median = number_of(json_object_get(latency, "value"));
    s->iqr = number_of(json_object_get(iqr, "value"));
    rc = ts_timing_summarize(blocks, n, s->number, 1.0, &summary, &err);
    if (rc == TS_ENOMEM) {
        free(blocks);
        return false; /* the page fails: never "no picture: out of memory" */
    }
    if (rc != TS_OK) {
        snprintf(s->why,
                 sizeof s->why,
                 "its timed blocks cannot be summarized: %.400s",
                 err.message);
    }
    else if (!agrees(summary.median, s->median, s->median)
             || !agrees(summary.iqr, s->iqr, s->median)) {
        char bm[TS_JSON_REAL_SIZE], bi[TS_JSON_REAL_SIZE];
        char rm[TS_JSON_REAL_SIZE], ri[TS_JSON_REAL_SIZE];
        ts_format_json_real(summary.median, bm);
        ts_format_json_real(summary.iqr, bi);
        ts_format_json_real(s->median, rm);
        ts_format_json_real(s->iqr, ri);
        snprintf(s->why,
                 sizeof s->why,
                 "its timed blocks do not reproduce its latency and IQR "
                 "(from the blocks: median %s s, IQR %s s; reported: median "
                 "%s s, IQR %s s), so they are not drawn as its "
                 "measurement.",
                 bm,
                 bi,
                 rm,
                 ri);
    }
    else {
        s->p25 = summary.p25;
        s->p75 = summary.p75;
        for (size_t i = 0; i < n; i++) {
            s->per_call[i] = blocks[i] / (double)s->number;
            if (s->per_call[i] < s->per_call[s->fastest]) {
                s->fastest = i;
            }
            if (s->per_call[i] > s->per_call[s->slowest]) {
                s->slowest = i;
            }
        }
        free(blocks);
        return true;
    }
    free(blocks);
    free(s->per_call);
    s->per_call = NULL;
    return true;
}

/* ---- SVG pieces --------------------------------------------------------- */

static void
attr(ts_text_buf *b, const char *name, double value)
{
    ts_text_put(b, " ");
    ts_text_put(b, name);
    ts_text_put(b, "=\"");
    ts_svg_put_num(b, value);
    ts_text_put(b, "\"");
}

/* One block's mark centred at (x, y) with its tooltip. */
static void
mark(ts_text_buf *b,
     const series *s,
     const ts_axis *time,
     size_t i,
     double x,
     double y)
{
    if (s->square) {
        ts_text_put(b, "<rect class=\"block\"");
        attr(b, "x", x - MARK);
        attr(b, "y", y - MARK);
        attr(b, "width", 2 * MARK);
        attr(b, "height", 2 * MARK);
        ts_text_put(b, ">");
    }
    else {
        ts_text_put(b, "<circle class=\"block\"");
        attr(b, "cx", x);
        attr(b, "cy", y);
        attr(b, "r", MARK);
        ts_text_put(b, ">");
    }
    if (s->name != NULL) {
        ts_text_printf(b, "<title>%s block %zu: ", s->name, i + 1);
    }
    else {
        ts_text_printf(b, "<title>Block %zu: ", i + 1);
    }
    ts_axis_put_value(b, time, s->per_call[i], 3);
    ts_text_put(b, s->square ? "</title></rect>\n" : "</title></circle>\n");
}

/* <svg ...> with its accessible name (escaped into both places). */
static void
svg_open(ts_text_buf *b,
         const char *cls,
         double height,
         const ts_text_buf *label)
{
    ts_text_put(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"");
    ts_text_put(b, cls);
    ts_text_put(b, "\" role=\"img\"");
    attr(b, "width", WIDTH);
    attr(b, "height", height);
    ts_text_put(b, " viewBox=\"0 0 ");
    ts_svg_put_num(b, WIDTH);
    ts_text_put(b, " ");
    ts_svg_put_num(b, height);
    ts_text_put(b, "\" aria-label=\"");
    ts_text_put_escaped(b, label->data);
    ts_text_put(b, "\">\n<title>");
    ts_text_put_escaped(b, label->data);
    ts_text_put(b, "</title>\n");
}

/* "Baseline: " / "" */
static void
put_name(ts_text_buf *b, const series *s, const char *suffix)
{
    if (s->name != NULL) {
        ts_text_put(b, s->name);
        ts_text_put(b, suffix);
    }
}

/* "s" unless there is one. */
static const char *
plural(size_t n)
{
    return n == 1 ? "" : "s";
}

/* What a comparison's figure holds: both reports, or one of them. */
static void
put_scope(ts_text_buf *l, series *const *drawn, size_t rows)
{
    if (rows == 2) {
        ts_text_put(l, ", baseline and candidate on one axis.");
        return;
    }
    ts_text_put(l, ", ");
    ts_text_put(l, drawn[0]->square ? "candidate" : "baseline");
    ts_text_put(l, " only (the page says why the other is not drawn).");
}

/* A vertical offset of a few pixels per block, the same for the same
 * block number, so that equal times do not hide each other. */
static double
jitter(size_t i)
{
    return (double)((int)(i * 5 % 9) - 4) * 2.0;
}

/* ---- the strip ---------------------------------------------------------- */

static void
strip_label(ts_text_buf *l,
            series *const *drawn,
            size_t rows,
            const ts_axis *x,
            bool comparison)
{
    if (comparison) {
        ts_text_put(l, "Strip plot of the per-call time of the timed blocks");
        put_scope(l, drawn, rows);
    }
    else {
        ts_text_put(l, "Strip plot of the per-call time of ");
    }
    for (size_t r = 0; r < rows; r++) {
        const series *s = drawn[r];
        if (comparison) {
            ts_text_printf(l, " %s: %zu block%s", s->name, s->n, plural(s->n));
        }
        else {
            ts_text_printf(l, "%zu timed block%s", s->n, plural(s->n));
        }
        ts_text_printf(l,
                       " (%lld call%s each): median ",
                       (long long)s->number,
                       plural((size_t)s->number));
        ts_axis_put_value(l, x, s->median, 3);
        ts_text_put(l, ", IQR ");
        ts_axis_put_value(l, x, s->iqr, 3);
        ts_text_put(l, " (25th percentile ");
        ts_axis_put_value(l, x, s->p25, 3);
        ts_text_put(l, " to 75th percentile ");
        ts_axis_put_value(l, x, s->p75, 3);
        ts_text_put(l, ").");
    }
}

/* The strip's numbers, as its axis shows them. */
static void
strip_numbers(ts_text_buf *b,
              series *const *drawn,
              size_t rows,
              const ts_axis *x,
              bool comparison)
{
    ts_text_put(b, "<table class=\"plot-numbers\">\n<tr>");
    if (comparison) {
        ts_text_put(b, "<th>Report</th>");
    }
    ts_text_put(b,
                "<th>Blocks</th><th>Calls per block</th><th>Median "
                "(latency)</th><th>IQR</th><th>25th percentile</th>"
                "<th>75th percentile</th><th>Fastest block</th>"
                "<th>Slowest block</th></tr>\n");
    for (size_t r = 0; r < rows; r++) {
        const series *s = drawn[r];
        const double values[] = {s->median,
                                 s->iqr,
                                 s->p25,
                                 s->p75,
                                 s->per_call[s->fastest],
                                 s->per_call[s->slowest]};
        ts_text_put(b, "<tr>");
        if (comparison) {
            ts_text_printf(b, "<td>%s</td>", s->name);
        }
        ts_text_printf(b,
                       "<td class=\"num\">%zu</td><td class=\"num\">%lld"
                       "</td>",
                       s->n,
                       (long long)s->number);
        for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
            ts_text_put(b, "<td class=\"num\">");
            ts_axis_put_value(b, x, values[k], 3);
            ts_text_put(b, "</td>");
        }
        ts_text_put(b, "</tr>\n");
    }
    ts_text_put(b, "</table>\n");
}

static void
strip_figure(ts_text_buf *b,
             series *const *drawn,
             size_t rows,
             double lo,
             double hi,
             bool comparison)
{
    double left = comparison ? STRIP_LABELS : STRIP_PLAIN;
    double axis_y = STRIP_TOP + STRIP_ROW * (double)rows;
    ts_text_buf label = {NULL, 0, 0, false};
    ts_axis x;
    ts_error err;
    if (ts_axis_init(&x,
                     lo,
                     hi,
                     left,
                     WIDTH - MARGIN_RIGHT,
                     ts_axis_time_units,
                     TS_AXIS_TIME_UNITS,
                     5,
                     false,
                     &err)
        != TS_OK) {
        ts_text_put(b, "<p class=\"nopic\">No picture of the timed blocks: ");
        ts_text_put_escaped(b, err.message);
        ts_text_put(b, ".</p>\n");
        return;
    }
    strip_label(&label, drawn, rows, &x, comparison);
    if (label.failed) {
        free(label.data);
        b->failed = true;
        return;
    }
    ts_text_put(b, "<figure class=\"plot\">\n");
    svg_open(b, "plot strip", axis_y + AXIS_ROOM, &label);
    ts_svg_axis(b,
                &x,
                TS_AXIS_BOTTOM,
                axis_y,
                axis_y - STRIP_TOP,
                "Per-call time of a block");
    for (size_t r = 0; r < rows; r++) {
        const series *s = drawn[r];
        double cy = STRIP_TOP + STRIP_ROW * ((double)r + 0.5);
        double x25 = ts_axis_px(&x, s->p25);
        double xm = ts_axis_px(&x, s->median);
        ts_text_printf(b, "<g class=\"series %s\">\n", s->cls);
        if (comparison) {
            ts_text_put(b, "<text class=\"row-label\"");
            attr(b, "x", left - 10.0);
            attr(b, "y", cy + 4.0);
            ts_text_put(b, " text-anchor=\"end\">");
            ts_text_put(b, s->name);
            ts_text_put(b, "</text>\n");
        }
        ts_text_put(b, "<rect class=\"iqr\"");
        attr(b, "x", x25);
        attr(b, "y", cy - 13.0);
        attr(b, "width", ts_axis_px(&x, s->p75) - x25);
        attr(b, "height", 26.0);
        ts_text_put(b,
                    " fill=\"currentColor\" fill-opacity=\"0.12\" "
                    "stroke=\"currentColor\"/>\n<line class=\"median\"");
        attr(b, "x1", xm);
        attr(b, "y1", cy - 16.0);
        attr(b, "x2", xm);
        attr(b, "y2", cy + 16.0);
        ts_text_put(b, " stroke=\"currentColor\" stroke-width=\"3\"/>\n");
        for (size_t i = 0; i < s->n; i++) {
            mark(b, s, &x, i, ts_axis_px(&x, s->per_call[i]), cy + jitter(i));
        }
        ts_text_put(b, "</g>\n");
    }
    ts_text_put(b,
                "</svg>\n<figcaption>Each mark is one timed block (its time "
                "divided by its calls); the box spans the middle half of the "
                "blocks (25th to 75th percentile: the IQR) and the thick "
                "line is the median, the reported latency.");
    if (comparison) {
        ts_text_put(b,
                    " Baseline blocks are circles, candidate blocks "
                    "squares, on one axis.");
    }
    ts_text_put(b, "</figcaption>\n</figure>\n");
    free(label.data);
    strip_numbers(b, drawn, rows, &x, comparison);
}

/* ---- the run-order plot ------------------------------------------------- */

static void
run_label(ts_text_buf *l,
          series *const *drawn,
          size_t rows,
          const ts_axis *y,
          bool comparison)
{
    if (comparison) {
        ts_text_put(l,
                    "Run-order plot of the timed blocks, per-call time by "
                    "block");
        put_scope(l, drawn, rows);
    }
    else {
        ts_text_put(l, "Run-order plot of ");
    }
    for (size_t r = 0; r < rows; r++) {
        const series *s = drawn[r];
        if (comparison) {
            ts_text_printf(l,
                           " %s (%s, %zu block%s):",
                           s->name,
                           s->square ? "squares" : "circles",
                           s->n,
                           plural(s->n));
        }
        else {
            ts_text_printf(l,
                           "%zu timed block%s, per-call time by block:",
                           s->n,
                           plural(s->n));
        }
        ts_text_put(l, " first block ");
        ts_axis_put_value(l, y, s->per_call[0], 3);
        ts_text_put(l, ", last block ");
        ts_axis_put_value(l, y, s->per_call[s->n - 1], 3);
        ts_text_put(l, ", fastest ");
        ts_axis_put_value(l, y, s->per_call[s->fastest], 3);
        ts_text_printf(l, " (block %zu), slowest ", s->fastest + 1);
        ts_axis_put_value(l, y, s->per_call[s->slowest], 3);
        ts_text_printf(l, " (block %zu); median ", s->slowest + 1);
        ts_axis_put_value(l, y, s->median, 3);
        ts_text_put(l, ".");
    }
}

static void
legend(ts_text_buf *b, series *const *drawn, size_t rows, double at)
{
    double x = RUN_LEFT + 8.0;
    ts_text_put(b, "<g class=\"legend\">\n");
    for (size_t r = 0; r < rows; r++) {
        const series *s = drawn[r];
        ts_text_printf(b, "<g class=\"series %s\">", s->cls);
        if (s->square) {
            ts_text_put(b, "<rect class=\"key\"");
            attr(b, "x", x - MARK);
            attr(b, "y", at - MARK);
            attr(b, "width", 2 * MARK);
            attr(b, "height", 2 * MARK);
            ts_text_put(b, "/>");
        }
        else {
            ts_text_put(b, "<circle class=\"key\"");
            attr(b, "cx", x);
            attr(b, "cy", at);
            attr(b, "r", MARK);
            ts_text_put(b, "/>");
        }
        ts_text_put(b, "<text");
        attr(b, "x", x + 9.0);
        attr(b, "y", at + 4.0);
        ts_text_put(b, ">");
        ts_text_put(b, s->name);
        ts_text_put(b, "</text></g>\n");
        x += 110.0;
    }
    ts_text_put(b, "</g>\n");
}

/* Every block's per-call time in run order: as the axis shows it, and in
 * seconds as Python writes the double. */
static void
block_table(ts_text_buf *b,
            series *const *drawn,
            size_t rows,
            size_t blocks,
            const ts_axis *y)
{
    ts_text_put(b,
                "<details><summary>Per-call time of every block, in run "
                "order</summary>\n<table class=\"plot-numbers\">\n<tr>"
                "<th>Block</th>");
    for (size_t r = 0; r < rows; r++) {
        ts_text_put(b, "<th>");
        put_name(b, drawn[r], " ");
        ts_text_put(b, "per call</th><th>");
        put_name(b, drawn[r], " ");
        ts_text_put(b, "seconds per call</th>");
    }
    ts_text_put(b, "</tr>\n");
    for (size_t i = 0; i < blocks; i++) {
        ts_text_printf(b, "<tr><td class=\"num\">%zu</td>", i + 1);
        for (size_t r = 0; r < rows; r++) {
            const series *s = drawn[r];
            char exact[TS_JSON_REAL_SIZE];
            if (i >= s->n) {
                ts_text_put(b, "<td></td><td></td>");
                continue;
            }
            ts_format_json_real(s->per_call[i], exact);
            ts_text_put(b, "<td class=\"num\">");
            ts_axis_put_value(b, y, s->per_call[i], 3);
            ts_text_put(b, "</td><td class=\"num\">");
            ts_text_put(b, exact);
            ts_text_put(b, "</td>");
        }
        ts_text_put(b, "</tr>\n");
    }
    ts_text_put(b, "</table>\n</details>\n");
}

/* One report's run: its median line, the trace through its blocks in run
 * order, and their marks. */
static void
run_series(ts_text_buf *b, const series *s, const ts_axis *x, const ts_axis *y)
{
    double ym = ts_axis_px(y, s->median);
    ts_text_printf(
        b, "<g class=\"series %s\">\n<line class=\"median\"", s->cls);
    attr(b, "x1", x->px_lo);
    attr(b, "y1", ym);
    attr(b, "x2", x->px_hi);
    attr(b, "y2", ym);
    ts_text_put(b,
                s->square ? " stroke=\"currentColor\" "
                            "stroke-dasharray=\"2 3\"/>\n"
                          : " stroke=\"currentColor\" "
                            "stroke-dasharray=\"6 4\"/>\n");
    ts_text_put(b, "<polyline class=\"trace\" points=\"");
    for (size_t i = 0; i < s->n; i++) {
        if (i > 0) {
            ts_text_put(b, " ");
        }
        ts_svg_put_num(b, ts_axis_px(x, (double)(i + 1)));
        ts_text_put(b, ",");
        ts_svg_put_num(b, ts_axis_px(y, s->per_call[i]));
    }
    ts_text_put(b,
                s->square ? "\" fill=\"none\" stroke=\"currentColor\" "
                            "stroke-dasharray=\"5 3\"/>\n"
                          : "\" fill=\"none\" "
                            "stroke=\"currentColor\"/>\n");
    for (size_t i = 0; i < s->n; i++) {
        mark(b,
             s,
             y,
             i,
             ts_axis_px(x, (double)(i + 1)),
             ts_axis_px(y, s->per_call[i]));
    }
    ts_text_put(b, "</g>\n");
}

static void
run_figure(ts_text_buf *b,
           series *const *drawn,
           size_t rows,
           double lo,
           double hi,
           bool comparison)
{
    double top = RUN_TOP + (comparison ? RUN_LEGEND : 0.0);
    double axis_y = top + RUN_HEIGHT;
    double right = WIDTH - MARGIN_RIGHT;
    size_t blocks = 0;
    ts_text_buf label = {NULL, 0, 0, false};
    ts_axis x;
    ts_axis y;
    ts_error err;
    for (size_t r = 0; r < rows; r++) {
        blocks = drawn[r]->n > blocks ? drawn[r]->n : blocks;
    }
    if (ts_axis_init(&x,
                     0.5,
                     (double)blocks + 0.5,
                     RUN_LEFT,
                     right,
                     NULL,
                     0,
                     8,
                     true,
                     &err)
            != TS_OK
        || ts_axis_init(&y,
                        lo,
                        hi,
                        axis_y,
                        top,
                        ts_axis_time_units,
                        TS_AXIS_TIME_UNITS,
                        5,
                        false,
                        &err)
               != TS_OK) {
        ts_text_put(b,
                    "<p class=\"nopic\">No run-order plot of the timed "
                    "blocks: ");
        ts_text_put_escaped(b, err.message);
        ts_text_put(b, ".</p>\n");
        return;
    }
    run_label(&label, drawn, rows, &y, comparison);
    if (label.failed) {
        free(label.data);
        b->failed = true;
        return;
    }
    ts_text_put(b, "<figure class=\"plot\">\n");
    svg_open(b, "plot run-order", axis_y + AXIS_ROOM, &label);
    ts_svg_axis(b, &y, TS_AXIS_LEFT, RUN_LEFT, right - RUN_LEFT, "Per call");
    ts_svg_axis(b, &x, TS_AXIS_BOTTOM, axis_y, 0.0, "Block, in run order");
    if (comparison) {
        legend(b, drawn, rows, RUN_TOP + 4.0);
    }
    for (size_t r = 0; r < rows; r++) {
        run_series(b, drawn[r], &x, &y);
    }
    ts_text_put(b,
                "</svg>\n<figcaption>Each block's per-call time in the "
                "order the blocks ran; a dashed line marks the median. A "
                "drift from the first blocks to the last shows warm-up that "
                "the untimed warm-up calls did not absorb; a lone mark far "
                "from its line is an outlier.");
    if (comparison) {
        ts_text_put(b,
                    " Baseline: circles on a solid line; candidate: squares "
                    "on a dashed line.");
    }
    ts_text_put(b, "</figcaption>\n</figure>\n");
    free(label.data);
    block_table(b, drawn, rows, blocks, &y);
}

/* ---- the section -------------------------------------------------------- */

void
ts_render_timing_section(ts_text_buf *b,
                         const json_t *report,
                         const json_t *candidate)
{
    bool comparison = candidate != NULL;
    series all[2] = {
        {.name = comparison ? "Baseline" : NULL,
         .cls = comparison ? "baseline" : "single"},
        {.name = "Candidate", .cls = "candidate", .square = true},
    };
    series *drawn[2];
    size_t count = comparison ? 2 : 1;
    size_t rows = 0;
    double lo = INFINITY;
    double hi = -INFINITY;
    if (!load_series(&all[0], report)
        || (comparison && !load_series(&all[1], candidate))) {
        b->failed = true;
        goto cleanup;
    }
    ts_text_put(b,
                "<section>\n<h2>Timed blocks</h2>\n<p class=\"note\">A "
                "timed block is a run of calls timed as one; its time "
                "divided by its calls is a per-call time, and the median of "
                "those is the reported latency (their interquartile range "
                "the latency IQR). The first call and the warm-up calls are "
                "not blocks and are not drawn.</p>\n");
    for (size_t k = 0; k < count; k++) {
        series *s = &all[k];
        if (s->per_call == NULL) {
            ts_text_put(b, "<p class=\"nopic\">No picture of ");
            ts_text_put(b,
                        !comparison ? "the"
                        : k == 0    ? "the baseline&#x27;s"
                                    : "the candidate&#x27;s");
            ts_text_put(b, " timed blocks: ");
            ts_text_put_escaped(b, s->why);
            ts_text_put(b, "</p>\n");
            continue;
        }
        drawn[rows++] = s;
        for (size_t i = 0; i < s->n; i++) {
            lo = fmin(lo, s->per_call[i]);
            hi = fmax(hi, s->per_call[i]);
        }
        lo = fmin(lo, s->median);
        hi = fmax(hi, s->median);
    }
    if (rows > 0) {
        /* Room around the marks: 5% of the spread, at least 0.5% of the
         * values (equal blocks still get an axis); never below zero. */
        double pad = fmax((hi - lo) * 0.05, fmax(fabs(lo), fabs(hi)) * 0.005);
        double start = lo >= 0.0 && lo - pad < 0.0 ? 0.0 : lo - pad;
        strip_figure(b, drawn, rows, start, hi + pad, comparison);
        run_figure(b, drawn, rows, start, hi + pad, comparison);
    }
    ts_text_put(b, "</section>\n");
cleanup:
    free(all[0].per_call);
    free(all[1].per_call);
}
