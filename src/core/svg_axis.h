/* Private to src/core: one linear axis of an SVG figure, with "nice" ticks
 * and a display unit, and the SVG text that draws it.
 *
 * A figure maps a domain [lo, hi] of values in a base unit (seconds, bytes,
 * FLOPs, block numbers) linearly onto pixels [px_lo, px_hi]; px_lo may be
 * the larger one (a vertical axis grows upwards). The display unit is
 * chosen from a ladder (ns, us, ms, s for seconds) by the domain's
 * magnitude, and the ticks are round numbers in that unit:
 *
 *     ts_axis x;
 *     ts_axis_init(&x, 0.00123, 0.00456, 40, 600, ts_axis_time_units,
 *                  TS_AXIS_TIME_UNITS, 5, false, &err);
 *     // unit "ms", ticks 1.5, 2.0, ..., 4.5 (step 0.5, one decimal)
 *     double px = ts_axis_px(&x, 0.002);            // where 2 ms is
 *     ts_svg_axis(&buf, &x, TS_AXIS_BOTTOM, 180, 150, "Per-call time");
 *
 * The tick step is 1, 2 or 5 times a power of ten, picked as d3's
 * tickIncrement picks it (the step nearest span / target_ticks on a log
 * scale, thresholds sqrt(50), sqrt(10), sqrt(2)); ticks are the multiples
 * of the step inside the domain, and their labels show exactly as many
 * decimals as the step needs ("1.5", "2.0" for a step of 0.5; "20" for a
 * step of 10).
 * The caller pads the domain if the marks should not touch its ends.
 *
 * Everything is deterministic: numbers are written with fixed precision
 * (coordinates with 2 decimals), so the same input gives the same bytes. */
#ifndef TORCHSCAN_SVG_AXIS_H
#define TORCHSCAN_SVG_AXIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "torchscan/core.h"
#include "text_buf.h"

/* A display unit: value shown = base value * factor. */
typedef struct ts_axis_unit {
    const char *symbol; /* "ms"; "" for plain numbers */
    double factor;
} ts_axis_unit;

/* Seconds shown as ns, us (U+00B5 MICRO SIGN), ms or s, finest first. */
#define TS_AXIS_TIME_UNITS 4
extern const ts_axis_unit ts_axis_time_units[TS_AXIS_TIME_UNITS];

typedef struct ts_axis {
    double lo, hi;       /* the domain, in base units (lo < hi) */
    double px_lo, px_hi; /* where lo and hi are drawn */
    ts_axis_unit unit;   /* the display unit chosen */
    int step_mantissa;   /* 1, 2 or 5 */
    int step_exponent;   /* tick step = mantissa * 10^exponent, displayed */
    int64_t first;       /* tick i shows (first + i) * step */
    size_t ticks;        /* how many ticks lie in the domain (may be 0) */
    int decimals;        /* digits after the point in tick labels */
} ts_axis;

/* Sets up `axis` for the domain [lo, hi] (base units) drawn from px_lo to
 * px_hi. `units` (n_units entries, finest first, factors decreasing) is the
 * ladder; the unit chosen is the coarsest whose display of max(|lo|, |hi|)
 * is at least 1 (the finest one when none is); NULL or n_units 0 means
 * plain numbers (symbol "", factor 1). `target_ticks` >= 1 is the wanted
 * number of intervals (d3's `count`); with `integer_ticks` the step is at
 * least 1 (block numbers). TS_EINVAL with err set when lo and hi are not
 * finite with lo < hi, or the domain is too narrow or too far from zero
 * for round ticks in double precision (more than 2^53 steps from zero), or
 * needs a step beyond 10^+-24 in the display unit (labels of dozens of
 * digits): such a domain cannot be drawn. Labels therefore hold at most 24
 * decimals and about 40 digits in all. */
int ts_axis_init(ts_axis *axis,
                 double lo,
                 double hi,
                 double px_lo,
                 double px_hi,
                 const ts_axis_unit *units,
                 size_t n_units,
                 int target_ticks,
                 bool integer_ticks,
                 ts_error *err);

/* The pixel position of `value` (base units): linear, extrapolated outside
 * the domain. */
double ts_axis_px(const ts_axis *axis, double value);

/* Tick i (0 <= i < axis->ticks) in display units, computed from integers
 * so that 0.1 * 3 shows as 0.3. */
double ts_axis_tick_display(const ts_axis *axis, size_t i);

/* Tick i in base units (its display value / the unit's factor). */
double ts_axis_tick(const ts_axis *axis, size_t i);

/* Appends tick i's label: the display value with axis->decimals decimals
 * ("1.5", "2.0"), no unit. */
void ts_axis_put_tick_label(ts_text_buf *b, const ts_axis *axis, size_t i);

/* Appends `value` (base units) in the axis's display unit with `decimals`
 * decimals, then a space and the unit symbol when there is one:
 * "1.234 ms". */
void ts_axis_put_value(ts_text_buf *b,
                       const ts_axis *axis,
                       double value,
                       int decimals);

/* Appends an SVG coordinate: 2 decimals, "-0.00" written "0.00". */
void ts_svg_put_num(ts_text_buf *b, double value);

typedef enum ts_axis_side {
    TS_AXIS_BOTTOM, /* horizontal, along y = at, labels below */
    TS_AXIS_LEFT,   /* vertical, along x = at, labels to the left */
} ts_axis_side;

/* Appends the axis as an SVG group:
 *
 *   <g class="axis">
 *     <line class="grid" .../>             per tick, when grid > 0
 *     <line class="domain" .../>           from px_lo to px_hi
 *     <g class="tick"><line .../><text ...>1.5</text></g>   per tick
 *     <text class="axis-label" ...>Per-call time (ms)</text>
 *   </g>
 *
 * Tick marks are 5 px long, outside the plot; grid lines run `grid` px
 * into the plot (upwards from a bottom axis, rightwards from a left one).
 * `label` is escaped; the unit symbol, when there is one, is added in
 * parentheses. A reader of the figure recovers the scale from any two
 * ticks: their positions and labels. */
void ts_svg_axis(ts_text_buf *b,
                 const ts_axis *axis,
                 ts_axis_side side,
                 double at,
                 double grid,
                 const char *label);

#endif /* TORCHSCAN_SVG_AXIS_H */
