/* The text pieces of the analysis page (render_text.h): two-decimal
 * coordinates against printf("%.2f"), compact numbers past the last SI
 * prefix, and every form of a diff's delta sentence. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "harness.h"
#include "render_model.h"
#include "render_text.h"
#include "text_buf.h"

/* The text rt_fixed2 writes for `value` (a static buffer). */
static const char *
fixed2(double value)
{
    static char out[512];
    ts_text_buf b = {0};
    rt_fixed2(&b, value);
    snprintf(out, sizeof out, "%s", b.failed ? "(failed)" : b.data);
    free(b.data);
    return out;
}

static void
test_fixed2_matches_printf(void)
{
    /* negative values, values past the exact-integer range of the fast
     * path (|value| * 100 >= 9e15) and ordinary ones: printf is the oracle */
    static const double values[] = {-1234.5678,
                                    -0.25,
                                    -7.0,
                                    -99.999,
                                    12.5,
                                    0.07,
                                    1.0e14,
                                    -1.0e14,
                                    123456789012345.0,
                                    1.0e300,
                                    -3.0e17};
    for (size_t k = 0; k < sizeof values / sizeof *values; k++) {
        char want[400];
        snprintf(want, sizeof want, "%.2f", values[k]);
        CHECK_EQ_STR(fixed2(values[k]), want);
    }
    /* a negative value that rounds to zero hundredths drops its sign (no
     * "-0.00" coordinate) */
    CHECK_EQ_STR(fixed2(-0.004), "0.00");
    CHECK_EQ_STR(fixed2(-0.005), "-0.01"); /* printf's own rounding */
}

static const char *
compact(double value)
{
    static char out[128];
    ts_text_buf b = {0};
    rt_compact(&b, value);
    snprintf(out, sizeof out, "%s", b.failed ? "(failed)" : b.data);
    free(b.data);
    return out;
}

static void
test_compact_prefixes(void)
{
    CHECK_EQ_STR(compact(999.0), "999");
    CHECK_EQ_STR(compact(2.5), "2.5");
    CHECK_EQ_STR(compact(1500.0), "1.50 k");
    CHECK_EQ_STR(compact(-2.0e6), "-2.00 M");
    CHECK_EQ_STR(compact(3.0e24), "3.00 Y");
    /* past yotta the prefix stays Y: 1e30 = 1,000,000 Y */
    CHECK_EQ_STR(compact(1.0e30), "1000000.00 Y");
}

/* The delta sentence of a diff built from JSON text. */
static const char *
delta(const char *json)
{
    static char out[256];
    json_error_t jerr;
    json_t *diff = json_loads(json, 0, &jerr);
    ts_text_buf b = {0};
    if (diff == NULL) {
        fprintf(stderr, "bad test JSON: %s\n", jerr.text);
        return "(bad json)";
    }
    rt_delta_text(&b, diff);
    snprintf(out, sizeof out, "%s", b.failed ? "(failed)" : b.data);
    free(b.data);
    json_decref(diff);
    return out;
}

static void
test_delta_text(void)
{
    /* integer delta, unit from `after` */
    CHECK_EQ_STR(delta("{\"status\": \"complete\", \"delta\": 1234,"
                       " \"after\": {\"unit\": \"FLOPs\"}}"),
                 "complete · +1,234 FLOPs");
    /* negative integer, `after` null: the unit comes from `before` */
    CHECK_EQ_STR(delta("{\"status\": \"complete\", \"delta\": -1234567,"
                       " \"after\": null, \"before\": {\"unit\": \"B\"}}"),
                 "complete · -1,234,567 B");
    /* a real delta; no side at all: no unit */
    CHECK_EQ_STR(delta("{\"status\": \"complete\", \"delta\": -0.5}"),
                 "complete · -0.5 ");
    CHECK_EQ_STR(delta("{\"status\": \"complete\", \"delta\": 2.25,"
                       " \"before\": {\"unit\": \"s\"}}"),
                 "complete · +2.25 s");
    /* the unit is escaped */
    CHECK_EQ_STR(delta("{\"status\": \"complete\", \"delta\": 0,"
                       " \"after\": {\"unit\": \"<b>\"}}"),
                 "complete · +0 &lt;b&gt;");
    CHECK_EQ_STR(delta("{\"status\": \"partial\", \"delta\": null}"),
                 "partial · delta unknown (requires two complete "
                 "measurements)");
    /* complete without a numeric delta is not a complete sentence */
    CHECK_EQ_STR(delta("{\"status\": \"complete\", \"delta\": \"12\"}"),
                 "unavailable · not comparable: measured on one side only "
                 "or unavailable");
    CHECK_EQ_STR(delta("{\"status\": \"complete\"}"),
                 "unavailable · not comparable: measured on one side only "
                 "or unavailable");
    CHECK_EQ_STR(delta("{\"status\": \"unavailable\","
                       " \"reason\": \"a < b & c\"}"),
                 "unavailable · a &lt; b &amp; c");
    CHECK_EQ_STR(delta("{\"delta\": 5}"),
                 "unavailable · not comparable: measured on one side only "
                 "or unavailable");
}

int
main(void)
{
    test_fixed2_matches_printf();
    test_compact_prefixes();
    test_delta_text();
    return ts_test_report();
}
