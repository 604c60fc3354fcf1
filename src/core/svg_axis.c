/* A linear SVG axis with nice ticks and a display unit (see svg_axis.h). */
#include "svg_axis.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FAIL(err, code, ...) (ts_error_set((err), (code), __VA_ARGS__), (code))

const ts_axis_unit ts_axis_time_units[TS_AXIS_TIME_UNITS] = {
    {"ns", 1e9},
    {"\xc2\xb5s", 1e6}, /* U+00B5 MICRO SIGN, as SI texts commonly write it */
    {"ms", 1e3},
    {"s", 1.0},
};

/* Ticks stay exact integers times the step below 2^53. */
#define MAX_STEPS 9007199254740992.0
/* Steps beyond 10^+-24 in the display unit would need labels of dozens of
 * digits: a figure of such values wants another unit ladder. */
#define MAX_EXPONENT 24

/* 10^k for 0 <= k <= MAX_EXPONENT + 1: exact up to 10^22, and the same
 * (deterministic) rounding everywhere beyond. */
static double
power_of_ten(int k)
{
    double p = 1.0;
    for (int i = 0; i < k; i++) {
        p *= 10.0;
    }
    return p;
}

/* `value` / step, where step = mantissa * 10^exponent, dividing by the
 * exact power of ten where the step is a fraction. */
static double
in_steps(double value, int mantissa, int exponent)
{
    if (exponent >= 0) {
        return value / ((double)mantissa * power_of_ten(exponent));
    }
    return value * power_of_ten(-exponent) / (double)mantissa;
}

int
ts_axis_init(ts_axis *axis,
             double lo,
             double hi,
             double px_lo,
             double px_hi,
             const ts_axis_unit *units,
             size_t n_units,
             int target_ticks,
             bool integer_ticks,
             ts_error *err)
{
    static const ts_axis_unit plain = {"", 1.0};
    double magnitude;
    double span;
    double raw_step;
    double first;
    double last;
    double error;
    int exponent;
    int mantissa;
    memset(axis, 0, sizeof *axis);
    if (!isfinite(lo) || !isfinite(hi) || !(lo < hi) || !isfinite(hi - lo)
        || !isfinite(px_lo) || !isfinite(px_hi) || target_ticks < 1) {
        return FAIL(err,
                    TS_EINVAL,
                    "an axis needs a finite domain lo < hi and at least one "
                    "tick interval");
    }
    axis->lo = lo;
    axis->hi = hi;
    axis->px_lo = px_lo;
    axis->px_hi = px_hi;
    axis->unit = plain;
    magnitude = fmax(fabs(lo), fabs(hi));
    if (units != NULL && n_units > 0) {
        axis->unit = units[0];
        for (size_t k = n_units; k-- > 0;) {
            if (magnitude * units[k].factor >= 1.0) {
                axis->unit = units[k];
                break;
            }
        }
    }
    span = (hi - lo) * axis->unit.factor;
    raw_step = span / (double)target_ticks;
    if (!isfinite(span) || !(raw_step > 0.0)) {
        return FAIL(err, TS_EINVAL, "the axis domain cannot be displayed");
    }
    /* d3's tickIncrement: the power of ten below the raw step, times 1, 2,
     * 5 or 10 by the geometric midpoints sqrt(2), sqrt(10), sqrt(50). */
    exponent = (int)floor(log10(raw_step));
    if (exponent < -MAX_EXPONENT - 1 || exponent > MAX_EXPONENT) {
        return FAIL(err,
                    TS_EINVAL,
                    "the axis domain is too narrow or too wide for round "
                    "ticks");
    }
    error = in_steps(raw_step, 1, exponent);
    mantissa = error >= sqrt(50.0)   ? 10
               : error >= sqrt(10.0) ? 5
               : error >= sqrt(2.0)  ? 2
                                     : 1;
    if (mantissa == 10) {
        mantissa = 1;
        exponent++;
    }
    if (integer_ticks && exponent < 0) {
        mantissa = 1;
        exponent = 0;
    }
    if (exponent < -MAX_EXPONENT || exponent > MAX_EXPONENT) {
        return FAIL(err,
                    TS_EINVAL,
                    "the axis domain is too narrow or too wide for round "
                    "ticks");
    }
    /* A tick that misses the domain by rounding (1.5000000000000002 steps
     * for an end at 1.5) still counts. */
    first = ceil(in_steps(lo * axis->unit.factor, mantissa, exponent) - 1e-9);
    last = floor(in_steps(hi * axis->unit.factor, mantissa, exponent) + 1e-9);
    if (!(fabs(first) <= MAX_STEPS) || !(fabs(last) <= MAX_STEPS)) {
        return FAIL(err,
                    TS_EINVAL,
                    "the axis domain is too narrow for its distance from "
                    "zero");
    }
    axis->step_mantissa = mantissa;
    axis->step_exponent = exponent;
    axis->first = (int64_t)first;
    axis->ticks = last >= first ? (size_t)(last - first) + 1 : 0;
    axis->decimals = exponent < 0 ? -exponent : 0;
    return TS_OK;
}

double
ts_axis_px(const ts_axis *axis, double value)
{
    return axis->px_lo
           + (value - axis->lo) / (axis->hi - axis->lo)
                 * (axis->px_hi - axis->px_lo);
}

double
ts_axis_tick_display(const ts_axis *axis, size_t i)
{
    double steps = (double)(axis->first + (int64_t)i);
    if (axis->step_exponent >= 0) {
        return steps * axis->step_mantissa * power_of_ten(axis->step_exponent);
    }
    return steps * axis->step_mantissa / power_of_ten(-axis->step_exponent);
}

double
ts_axis_tick(const ts_axis *axis, size_t i)
{
    return ts_axis_tick_display(axis, i) / axis->unit.factor;
}

/* `value` with `decimals` decimals; a value that rounds to zero is written
 * without a minus sign. */
static void
put_fixed(ts_text_buf *b, double value, int decimals)
{
    char small[64];
    int len = snprintf(small, sizeof small, "%.*f", decimals, value);
    if (len > 0 && (size_t)len < sizeof small && small[0] == '-'
        && strspn(small + 1, "0.") == (size_t)len - 1) {
        ts_text_put(b, small + 1);
        return;
    }
    if (len > 0 && (size_t)len < sizeof small) {
        ts_text_put(b, small);
        return;
    }
    ts_text_printf(b, "%.*f", decimals, value); /* a huge value */
}

void
ts_axis_put_tick_label(ts_text_buf *b, const ts_axis *axis, size_t i)
{
    put_fixed(b, ts_axis_tick_display(axis, i), axis->decimals);
}

void
ts_axis_put_value(ts_text_buf *b,
                  const ts_axis *axis,
                  double value,
                  int decimals)
{
    put_fixed(b, value * axis->unit.factor, decimals);
    if (axis->unit.symbol[0] != '\0') {
        ts_text_put(b, " ");
        ts_text_put(b, axis->unit.symbol);
    }
}

void
ts_svg_put_num(ts_text_buf *b, double value)
{
    put_fixed(b, value, 2);
}

/* name="value" with an SVG coordinate. */
static void
attr_num(ts_text_buf *b, const char *name, double value)
{
    ts_text_put(b, " ");
    ts_text_put(b, name);
    ts_text_put(b, "=\"");
    ts_svg_put_num(b, value);
    ts_text_put(b, "\"");
}

/* <line class="cls" x1 y1 x2 y2 stroke="currentColor"/> */
static void
line(ts_text_buf *b,
     const char *cls,
     double x1,
     double y1,
     double x2,
     double y2)
{
    ts_text_put(b, "<line");
    if (cls != NULL) {
        ts_text_put(b, " class=\"");
        ts_text_put(b, cls);
        ts_text_put(b, "\"");
    }
    attr_num(b, "x1", x1);
    attr_num(b, "y1", y1);
    attr_num(b, "x2", x2);
    attr_num(b, "y2", y2);
    ts_text_put(b, " stroke=\"currentColor\"/>");
}

void
ts_svg_axis(ts_text_buf *b,
            const ts_axis *axis,
            ts_axis_side side,
            double at,
            double grid,
            const char *label)
{
    bool bottom = side == TS_AXIS_BOTTOM;
    double mid = (axis->px_lo + axis->px_hi) / 2.0;
    ts_text_put(b, "<g class=\"axis\">\n");
    for (size_t i = 0; grid > 0.0 && i < axis->ticks; i++) {
        double p = ts_axis_px(axis, ts_axis_tick(axis, i));
        if (bottom) {
            line(b, "grid", p, at, p, at - grid);
        }
        else {
            line(b, "grid", at, p, at + grid, p);
        }
        ts_text_put(b, "\n");
    }
    if (bottom) {
        line(b, "domain", axis->px_lo, at, axis->px_hi, at);
    }
    else {
        line(b, "domain", at, axis->px_lo, at, axis->px_hi);
    }
    ts_text_put(b, "\n");
    for (size_t i = 0; i < axis->ticks; i++) {
        double p = ts_axis_px(axis, ts_axis_tick(axis, i));
        ts_text_put(b, "<g class=\"tick\">");
        if (bottom) {
            line(b, NULL, p, at, p, at + 5.0);
            ts_text_put(b, "<text");
            attr_num(b, "x", p);
            attr_num(b, "y", at + 18.0);
            ts_text_put(b, " text-anchor=\"middle\">");
        }
        else {
            line(b, NULL, at - 5.0, p, at, p);
            ts_text_put(b, "<text");
            attr_num(b, "x", at - 8.0);
            attr_num(b, "y", p + 4.0);
            ts_text_put(b, " text-anchor=\"end\">");
        }
        ts_axis_put_tick_label(b, axis, i);
        ts_text_put(b, "</text></g>\n");
    }
    if (label != NULL) {
        double x = bottom ? mid : at - 52.0;
        double y = bottom ? at + 36.0 : mid;
        ts_text_put(b, "<text class=\"axis-label\"");
        attr_num(b, "x", x);
        attr_num(b, "y", y);
        if (!bottom) {
            ts_text_put(b, " transform=\"rotate(-90 ");
            ts_svg_put_num(b, x);
            ts_text_put(b, " ");
            ts_svg_put_num(b, y);
            ts_text_put(b, ")\"");
        }
        ts_text_put(b, " text-anchor=\"middle\">");
        ts_text_put_escaped(b, label);
        if (axis->unit.symbol[0] != '\0') {
            ts_text_put(b, " (");
            ts_text_put(b, axis->unit.symbol);
            ts_text_put(b, ")");
        }
        ts_text_put(b, "</text>\n");
    }
    ts_text_put(b, "</g>\n");
}
