/* The SVG axis helper: unit choice, nice ticks, labels, the linear scale
 * and the SVG text. Every expected value is derived by hand from the rules
 * in svg_axis.h (d3's tick step: the power of ten below span / target,
 * times 1, 2, 5 or 10 by the thresholds sqrt(2), sqrt(10), sqrt(50)). */
#include <stdlib.h>

#include "harness.h"
#include "svg_axis.h"

/* The labels of every tick, joined by spaces (malloc'd). */
static char *
labels(const ts_axis *axis)
{
    ts_text_buf b = {NULL, 0, 0, false};
    for (size_t i = 0; i < axis->ticks; i++) {
        if (i > 0) {
            ts_text_put(&b, " ");
        }
        ts_axis_put_tick_label(&b, axis, i);
    }
    if (b.data == NULL) {
        ts_text_put(&b, "");
    }
    return b.data;
}

static void
check_labels(const ts_axis *axis, const char *expected)
{
    char *text = labels(axis);
    CHECK_EQ_STR(text, expected);
    free(text);
}

/* The brief's example: 1.23 ms .. 4.56 ms. Span 3.33 ms / 5 = 0.666 ms:
 * power 0.1, 6.66 is between sqrt(10) and sqrt(50), so the step is 0.5 ms;
 * the multiples of 0.5 inside [1.23, 4.56] are 1.5 .. 4.5. */
static void
test_milliseconds(void)
{
    ts_axis a;
    ts_error err;
    ts_error_clear(&err);
    CHECK_EQ_INT(ts_axis_init(&a,
                              0.00123,
                              0.00456,
                              0.0,
                              333.0,
                              ts_axis_time_units,
                              TS_AXIS_TIME_UNITS,
                              5,
                              false,
                              &err),
                 TS_OK);
    CHECK_EQ_STR(a.unit.symbol, "ms");
    CHECK_EQ_INT(a.step_mantissa, 5);
    CHECK_EQ_INT(a.step_exponent, -1);
    CHECK_EQ_INT(a.decimals, 1);
    CHECK_EQ_INT(a.ticks, 7);
    check_labels(&a, "1.5 2.0 2.5 3.0 3.5 4.0 4.5");
    CHECK_EQ_REAL(ts_axis_tick(&a, 0), 0.0015);
    CHECK_EQ_REAL(ts_axis_tick(&a, 6), 0.0045);
    /* 333 px for 3.33 ms: 100 px per ms from 1.23 ms */
    CHECK_EQ_REAL(ts_axis_px(&a, 0.00123), 0.0);
    CHECK_EQ_REAL(ts_axis_px(&a, 0.002), 77.0);
    CHECK_EQ_REAL(ts_axis_px(&a, ts_axis_tick(&a, 0)), 27.0);
    CHECK_EQ_REAL(ts_axis_px(&a, 0.00456), 333.0);
    {
        ts_text_buf b = {NULL, 0, 0, false};
        ts_axis_put_value(&b, &a, 0.00123456, 3);
        ts_text_put(&b, "|");
        ts_axis_put_value(&b, &a, 0.0045, 1);
        CHECK_EQ_STR(b.data, "1.235 ms|4.5 ms");
        free(b.data);
    }
}

/* The unit is the coarsest one showing the larger end as at least 1. */
static void
test_unit_choice(void)
{
    ts_axis a;
    ts_error err;
    ts_error_clear(&err);
    /* 900 ns is 0.9 us: nanoseconds. Span 700 / 5 = 140: power 100, 1.4 <
     * sqrt(2), step 100 ns. */
    CHECK_EQ_INT(ts_axis_init(&a,
                              2e-7,
                              9e-7,
                              0.0,
                              100.0,
                              ts_axis_time_units,
                              TS_AXIS_TIME_UNITS,
                              5,
                              false,
                              &err),
                 TS_OK);
    CHECK_EQ_STR(a.unit.symbol, "ns");
    CHECK_EQ_INT(a.decimals, 0);
    check_labels(&a, "200 300 400 500 600 700 800 900");
    /* 12..18 us: span 6 / 5 = 1.2 < sqrt(2), step 1 us */
    CHECK_EQ_INT(ts_axis_init(&a,
                              12e-6,
                              18e-6,
                              0.0,
                              100.0,
                              ts_axis_time_units,
                              TS_AXIS_TIME_UNITS,
                              5,
                              false,
                              &err),
                 TS_OK);
    CHECK_EQ_STR(a.unit.symbol, "\xc2\xb5s");
    check_labels(&a, "12 13 14 15 16 17 18");
    /* 0.5..2.5 s: span 2 / 5 = 0.4, 4 -> step 0.5 s, both ends are ticks */
    CHECK_EQ_INT(ts_axis_init(&a,
                              0.5,
                              2.5,
                              0.0,
                              100.0,
                              ts_axis_time_units,
                              TS_AXIS_TIME_UNITS,
                              5,
                              false,
                              &err),
                 TS_OK);
    CHECK_EQ_STR(a.unit.symbol, "s");
    check_labels(&a, "0.5 1.0 1.5 2.0 2.5");
    /* 0.9..1.1 ms: 1.1 ms is the larger end, so ms; span 0.2 / 4 = 0.05:
     * power 0.01, 5 -> step 0.05 */
    CHECK_EQ_INT(ts_axis_init(&a,
                              0.0009,
                              0.0011,
                              0.0,
                              100.0,
                              ts_axis_time_units,
                              TS_AXIS_TIME_UNITS,
                              4,
                              false,
                              &err),
                 TS_OK);
    CHECK_EQ_STR(a.unit.symbol, "ms");
    check_labels(&a, "0.90 0.95 1.00 1.05 1.10");
    /* below 1 ns: still ns, the finest unit */
    CHECK_EQ_INT(ts_axis_init(&a,
                              1e-10,
                              5e-10,
                              0.0,
                              100.0,
                              ts_axis_time_units,
                              TS_AXIS_TIME_UNITS,
                              4,
                              false,
                              &err),
                 TS_OK);
    CHECK_EQ_STR(a.unit.symbol, "ns");
    check_labels(&a, "0.1 0.2 0.3 0.4 0.5");
    /* plain numbers: no ladder */
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.0, 10.0, 200.0, 20.0, NULL, 0, 5, false, &err),
        TS_OK);
    CHECK_EQ_STR(a.unit.symbol, "");
    check_labels(&a, "0 2 4 6 8 10");
    /* a vertical axis grows upwards: 0 at 200 px, 10 at 20 px */
    CHECK_EQ_REAL(ts_axis_px(&a, 5.0), 110.0);
    CHECK_EQ_REAL(ts_axis_px(&a, 10.0), 20.0);
}

/* Tick values come from integers: the third tick of a 0.1 step is 0.3,
 * not 0.1 + 0.1 + 0.1 = 0.30000000000000004. */
static void
test_exact_ticks(void)
{
    ts_axis a;
    ts_error err;
    ts_error_clear(&err);
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.1, 0.9, 0.0, 80.0, NULL, 0, 8, false, &err), TS_OK);
    check_labels(&a, "0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9");
    CHECK(ts_axis_tick_display(&a, 2) == 0.3);
    CHECK(ts_axis_tick_display(&a, 6) == 0.7);
    /* span 20 / 10 = 2: step 2; negative ticks */
    CHECK_EQ_INT(
        ts_axis_init(&a, -5.0, 15.0, 0.0, 80.0, NULL, 0, 10, false, &err),
        TS_OK);
    check_labels(&a, "-4 -2 0 2 4 6 8 10 12 14");
    /* span 14 / 5 = 2.8: 2.8 < sqrt(10), step 2 */
    CHECK_EQ_INT(
        ts_axis_init(&a, 3.0, 17.0, 0.0, 80.0, NULL, 0, 5, false, &err),
        TS_OK);
    check_labels(&a, "4 6 8 10 12 14 16");
    /* a step of 10 becomes 1 of the next power: 75 / 5 = 15, 1.5 ->
     * step 20 */
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.0, 75.0, 0.0, 80.0, NULL, 0, 5, false, &err),
        TS_OK);
    check_labels(&a, "0 20 40 60");
    /* span 8 / 1 = 8 >= sqrt(50): step 10; no tick inside [1, 9] */
    CHECK_EQ_INT(
        ts_axis_init(&a, 1.0, 9.0, 0.0, 80.0, NULL, 0, 1, false, &err), TS_OK);
    CHECK_EQ_INT(a.ticks, 0);
}

/* Block numbers: the step is at least 1. */
static void
test_integer_ticks(void)
{
    ts_axis a;
    ts_error err;
    ts_error_clear(&err);
    /* 3 blocks drawn at 1..3 in [0.5, 3.5]: 3 / 5 = 0.6 would be 0.5 */
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.5, 3.5, 0.0, 300.0, NULL, 0, 5, true, &err), TS_OK);
    check_labels(&a, "1 2 3");
    CHECK_EQ_REAL(ts_axis_px(&a, 1.0), 50.0);
    /* 40 blocks: 40 / 8 = 5, step 5 */
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.5, 40.5, 0.0, 400.0, NULL, 0, 8, true, &err),
        TS_OK);
    check_labels(&a, "5 10 15 20 25 30 35 40");
}

static void
test_refused_domains(void)
{
    ts_axis a;
    ts_error err;
    ts_error_clear(&err);
    CHECK_EQ_INT(
        ts_axis_init(&a, 1.0, 1.0, 0.0, 10.0, NULL, 0, 5, false, &err),
        TS_EINVAL);
    CHECK_EQ_INT(
        ts_axis_init(&a, 2.0, 1.0, 0.0, 10.0, NULL, 0, 5, false, &err),
        TS_EINVAL);
    CHECK_EQ_INT(
        ts_axis_init(&a, NAN, 1.0, 0.0, 10.0, NULL, 0, 5, false, &err),
        TS_EINVAL);
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.0, INFINITY, 0.0, 10.0, NULL, 0, 5, false, &err),
        TS_EINVAL);
    CHECK_EQ_INT(
        ts_axis_init(
            &a, -1.7e308, 1.7e308, 0.0, 10.0, NULL, 0, 5, false, &err),
        TS_EINVAL);
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.0, 1.0, 0.0, 10.0, NULL, 0, 0, false, &err),
        TS_EINVAL);
    /* 4 / 5 = 0.8: step 1, and 1e16 is more than 2^53 steps from zero */
    CHECK_EQ_INT(
        ts_axis_init(&a, 1e16, 1e16 + 4, 0.0, 10.0, NULL, 0, 5, false, &err),
        TS_EINVAL);
    CHECK(strstr(err.message, "too narrow") != NULL);
    /* a step of 1e-320, or of 2e-26 ns, or of 2e25: past 10^+-24 */
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.0, 5e-320, 0.0, 10.0, NULL, 0, 5, false, &err),
        TS_EINVAL);
    CHECK_EQ_INT(ts_axis_init(&a,
                              1e-34,
                              2e-34,
                              0.0,
                              10.0,
                              ts_axis_time_units,
                              TS_AXIS_TIME_UNITS,
                              5,
                              false,
                              &err),
                 TS_EINVAL);
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.0, 1e26, 0.0, 10.0, NULL, 0, 5, false, &err),
        TS_EINVAL);
    /* 10^24 itself still draws: 5e24 / 5 = 1e24, step 1e24 */
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.0, 5e24, 0.0, 10.0, NULL, 0, 5, false, &err),
        TS_OK);
    CHECK_EQ_INT(a.ticks, 6);
    CHECK_EQ_INT(a.step_exponent, 24);
}

static void
test_numbers(void)
{
    ts_text_buf b = {NULL, 0, 0, false};
    ts_svg_put_num(&b, 12.3456);
    ts_text_put(&b, " ");
    ts_svg_put_num(&b, -3.5);
    ts_text_put(&b, " ");
    ts_svg_put_num(&b, -0.001);
    ts_text_put(&b, " ");
    ts_svg_put_num(&b, -0.0);
    ts_text_put(&b, " ");
    ts_svg_put_num(&b, 1e20);
    CHECK_EQ_STR(b.data, "12.35 -3.50 0.00 0.00 100000000000000000000.00");
    free(b.data);
    /* past the small buffer: 1e300 has 301 digits before the point */
    b = (ts_text_buf){NULL, 0, 0, false};
    ts_svg_put_num(&b, 1e300);
    CHECK(b.data != NULL && strlen(b.data) == 304);
    CHECK(b.data != NULL && strncmp(b.data, "10000000000000000525", 20) == 0);
    CHECK(b.data != NULL && strcmp(b.data + 301, ".00") == 0);
    free(b.data);
    /* the text buffer's printf and escaping, which the figures use */
    b = (ts_text_buf){NULL, 0, 0, false};
    ts_text_printf(&b, "%0200d|%s", 7, "x");
    CHECK(b.data != NULL && strlen(b.data) == 202);
    CHECK(b.data != NULL && strcmp(b.data + 195, "00007|x") == 0);
    ts_text_put_escaped(&b, "<a href='x'>&\"</a>");
    CHECK(b.data != NULL
          && strcmp(b.data + 202,
                    "&lt;a href=&#x27;x&#x27;&gt;&amp;&quot;&lt;/a&gt;")
                 == 0);
    free(b.data);
}

/* The SVG text, as svg_axis.h lays it out. */
static void
test_svg_text(void)
{
    ts_axis a;
    ts_error err;
    ts_text_buf b = {NULL, 0, 0, false};
    ts_error_clear(&err);
    /* 0..2 with one interval: step 2, ticks 0 and 2 */
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.0, 2.0, 10.0, 110.0, NULL, 0, 1, false, &err),
        TS_OK);
    ts_svg_axis(&b, &a, TS_AXIS_BOTTOM, 50.0, 0.0, "a < b");
    CHECK_EQ_STR(b.data,
                 "<g class=\"axis\">\n"
                 "<line class=\"domain\" x1=\"10.00\" y1=\"50.00\" "
                 "x2=\"110.00\" y2=\"50.00\" stroke=\"currentColor\"/>\n"
                 "<g class=\"tick\"><line x1=\"10.00\" y1=\"50.00\" "
                 "x2=\"10.00\" y2=\"55.00\" stroke=\"currentColor\"/>"
                 "<text x=\"10.00\" y=\"68.00\" "
                 "text-anchor=\"middle\">0</text></g>\n"
                 "<g class=\"tick\"><line x1=\"110.00\" y1=\"50.00\" "
                 "x2=\"110.00\" y2=\"55.00\" stroke=\"currentColor\"/>"
                 "<text x=\"110.00\" y=\"68.00\" "
                 "text-anchor=\"middle\">2</text></g>\n"
                 "<text class=\"axis-label\" x=\"60.00\" y=\"86.00\" "
                 "text-anchor=\"middle\">a &lt; b</text>\n"
                 "</g>\n");
    free(b.data);
    b = (ts_text_buf){NULL, 0, 0, false};
    /* a left time axis with grid lines: 2..4 s upwards, step 2 s */
    CHECK_EQ_INT(ts_axis_init(&a,
                              2.0,
                              4.0,
                              100.0,
                              0.0,
                              ts_axis_time_units,
                              TS_AXIS_TIME_UNITS,
                              1,
                              false,
                              &err),
                 TS_OK);
    ts_svg_axis(&b, &a, TS_AXIS_LEFT, 60.0, 300.0, "Time");
    CHECK_EQ_STR(b.data,
                 "<g class=\"axis\">\n"
                 "<line class=\"grid\" x1=\"60.00\" y1=\"100.00\" "
                 "x2=\"360.00\" y2=\"100.00\" stroke=\"currentColor\"/>\n"
                 "<line class=\"grid\" x1=\"60.00\" y1=\"0.00\" "
                 "x2=\"360.00\" y2=\"0.00\" stroke=\"currentColor\"/>\n"
                 "<line class=\"domain\" x1=\"60.00\" y1=\"100.00\" "
                 "x2=\"60.00\" y2=\"0.00\" stroke=\"currentColor\"/>\n"
                 "<g class=\"tick\"><line x1=\"55.00\" y1=\"100.00\" "
                 "x2=\"60.00\" y2=\"100.00\" stroke=\"currentColor\"/>"
                 "<text x=\"52.00\" y=\"104.00\" "
                 "text-anchor=\"end\">2</text></g>\n"
                 "<g class=\"tick\"><line x1=\"55.00\" y1=\"0.00\" "
                 "x2=\"60.00\" y2=\"0.00\" stroke=\"currentColor\"/>"
                 "<text x=\"52.00\" y=\"4.00\" "
                 "text-anchor=\"end\">4</text></g>\n"
                 "<text class=\"axis-label\" x=\"8.00\" y=\"50.00\" "
                 "transform=\"rotate(-90 8.00 50.00)\" "
                 "text-anchor=\"middle\">Time (s)</text>\n"
                 "</g>\n");
    free(b.data);
}

int
main(void)
{
    test_milliseconds();
    test_unit_choice();
    test_exact_ticks();
    test_integer_ticks();
    test_refused_domains();
    test_numbers();
    test_svg_text();
    return ts_test_report();
}
