/* svg_axis.c refusals and value texts test_svg_axis.c leaves out: each
 * domain an axis refuses (non-finite, empty, unbounded, too wide for round
 * ticks, too narrow for its distance from zero), values that round to a
 * negative zero, values too long for the short buffer, plain units. */
#include <stdlib.h>

#include "harness.h"
#include "svg_axis.h"

static int
init(double lo, double hi, double px_lo, int ticks, ts_error *err)
{
    ts_axis a;
    return ts_axis_init(&a, lo, hi, px_lo, 100.0, NULL, 0, ticks, false, err);
}

static void
test_refusals(void)
{
    ts_error err;
    const char *domain =
        "an axis needs a finite domain lo < hi and at least "
        "one tick interval";
    CHECK_EQ_INT(init(NAN, 1.0, 0.0, 5, &err), TS_EINVAL);
    CHECK_EQ_STR(err.message, domain);
    CHECK_EQ_INT(init(0.0, INFINITY, 0.0, 5, &err), TS_EINVAL);
    CHECK_EQ_INT(init(1.0, 1.0, 0.0, 5, &err), TS_EINVAL);
    CHECK_EQ_INT(init(-1e308, 1e308, 0.0, 5, &err), TS_EINVAL); /* hi - lo */
    CHECK_EQ_INT(init(0.0, 1.0, NAN, 5, &err), TS_EINVAL);
    CHECK_EQ_INT(init(0.0, 1.0, 0.0, 0, &err), TS_EINVAL);
    CHECK_EQ_STR(err.message, domain);
    /* in nanoseconds, 1e300 s is no finite span */
    {
        ts_axis a;
        ts_axis_unit ns[] = {{"ns", 1e9}};
        CHECK_EQ_INT(
            ts_axis_init(&a, 0.0, 1e300, 0.0, 100.0, ns, 1, 5, false, &err),
            TS_EINVAL);
        CHECK_EQ_STR(err.message, "the axis domain cannot be displayed");
    }
    /* steps of 10^99 and 10^-101 are past 10^24 and 10^-24 */
    CHECK_EQ_INT(init(0.0, 1e100, 0.0, 1, &err), TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "the axis domain is too narrow or too wide for round ticks");
    CHECK_EQ_INT(init(0.0, 1e-100, 0.0, 1, &err), TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "the axis domain is too narrow or too wide for round ticks");
    /* a step of 0.2 around 4e15: 2e16 steps from zero, past 2^53 */
    CHECK_EQ_INT(init(4e15, 4e15 + 1.0, 0.0, 5, &err), TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "the axis domain is too narrow for its distance from zero");
}

static char *
value_text(const ts_axis *a, double v, int decimals)
{
    ts_text_buf b = {NULL, 0, 0, false};
    ts_axis_put_value(&b, a, v, decimals);
    return b.data;
}

static void
test_values(void)
{
    ts_error err;
    ts_axis a;
    char *t;
    CHECK_EQ_INT(
        ts_axis_init(&a, 0.0, 10.0, 0.0, 100.0, NULL, 0, 5, false, &err),
        TS_OK);
    /* plain numbers: no unit; -0.001 with 2 decimals is "0.00" */
    t = value_text(&a, -0.001, 2);
    CHECK_EQ_STR(t, "0.00");
    free(t);
    t = value_text(&a, -0.5, 1);
    CHECK_EQ_STR(t, "-0.5");
    free(t);
    /* 1e70 with 2 decimals: 71 digits + ".00", past the 64-byte buffer */
    t = value_text(&a, 1e70, 2);
    CHECK(t != NULL && strlen(t) == 74 && strcmp(t + 71, ".00") == 0);
    free(t);
    /* in ms: 0.0025 s */
    CHECK_EQ_INT(ts_axis_init(&a,
                              0.001,
                              0.004,
                              0.0,
                              100.0,
                              ts_axis_time_units,
                              TS_AXIS_TIME_UNITS,
                              3,
                              false,
                              &err),
                 TS_OK);
    CHECK_EQ_STR(a.unit.symbol, "ms");
    t = value_text(&a, 0.0025, 1);
    CHECK_EQ_STR(t, "2.5 ms");
    free(t);
    /* an axis without a label draws none */
    ts_text_buf b = {NULL, 0, 0, false};
    ts_svg_axis(&b, &a, TS_AXIS_LEFT, 40.0, 200.0, NULL);
    CHECK(b.data != NULL && strstr(b.data, "axis-label") == NULL);
    CHECK(b.data != NULL && strstr(b.data, "text-anchor=\"end\"") != NULL);
    free(b.data);
}

int
main(void)
{
    test_refusals();
    test_values();
    return ts_test_report();
}
