/* Text pieces of the analysis page and its SVG (render_text.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_put.h"
#include "render_text.h"
#include "torchscan/json_text.h"

void
rt_fixed2(ts_text_buf *b, double value)
{
    double exact = fabs(value) * 100.0, scaled = round(exact);
    int64_t hundredths;
    char frac[3];
    /* near a half the product's rounding error could flip the digit:
     * printf decides from the exact binary value there */
    if (!(scaled < 9.0e15) || fabs(exact - floor(exact) - 0.5) < 1e-6) {
        ts_text_printf(b, "%.2f", value);
        return;
    }
    hundredths = (int64_t)scaled;
    if (value < 0 && hundredths != 0) {
        ts_text_put_n(b, "-", 1);
    }
    ts_text_put_int(b, hundredths / 100);
    frac[0] = '.';
    frac[1] = (char)('0' + (hundredths % 100) / 10);
    frac[2] = (char)('0' + hundredths % 10);
    ts_text_put_n(b, frac, 3);
}

static void
grouped_int(ts_text_buf *b, int64_t value)
{
    char out[48]; /* 20 digits, 6 commas, a sign */
    size_t i = sizeof out, digits = 0;
    uint64_t mag = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    do {
        if (digits > 0 && digits % 3 == 0) {
            out[--i] = ',';
        }
        out[--i] = (char)('0' + mag % 10);
        mag /= 10;
        digits++;
    } while (mag > 0);
    if (value < 0) {
        out[--i] = '-';
    }
    ts_text_put_n(b, out + i, sizeof out - i);
}

void
rt_grouped(ts_text_buf *b, const rp_sum *value)
{
    if (value->real) {
        char text[TS_JSON_REAL_SIZE];
        ts_format_json_real(value->r, text);
        ts_text_put(b, text);
    }
    else {
        grouped_int(b, value->i);
    }
}

void
rt_compact(ts_text_buf *b, double value)
{
    static const char *const prefixes[] = {
        "", " k", " M", " G", " T", " P", " E", " Z", " Y"};
    size_t p = 0;
    double mag = fabs(value);
    if (mag < 1000.0) {
        if (value == floor(value)) {
            ts_text_printf(b, "%.0f", value);
        }
        else {
            ts_text_printf(b, "%.3g", value);
        }
        return;
    }
    while (mag >= 999.995 && p + 1 < sizeof prefixes / sizeof *prefixes) {
        mag /= 1000.0;
        value /= 1000.0;
        p++;
    }
    ts_text_printf(b, "%.2f%s", value, prefixes[p]);
}

void
rt_status_text(ts_text_buf *b, const rp_sum *value, const char *unit)
{
    switch (value->status) {
        case TS_COMPLETE:
            ts_text_put(b, "complete · ");
            rt_grouped(b, value);
            ts_text_put(b, " ");
            ts_text_put_escaped(b, unit);
            break;
        case TS_PARTIAL:
            ts_text_put(b, "partial · at least ");
            rt_grouped(b, value);
            ts_text_put(b, " ");
            ts_text_put_escaped(b, unit);
            ts_text_put(b, " (lower bound; full value unknown)");
            break;
        case TS_UNAVAILABLE:
            ts_text_put(b, "unavailable · unknown");
            break;
        default:
            ts_text_put(b, "not recorded");
            break;
    }
}

void
rt_status_short(ts_text_buf *b, const rp_sum *value, const char *unit)
{
    if (value->status != TS_PARTIAL) {
        rt_status_text(b, value, unit);
        return;
    }
    ts_text_put(b, "partial · ≥ ");
    rt_grouped(b, value);
    ts_text_put(b, " ");
    ts_text_put_escaped(b, unit);
    ts_text_put(b, " · full value unknown");
}

void
rt_metric_text(ts_text_buf *b, const json_t *metric)
{
    rp_sum value = rp_sum_of_metric(metric);
    rt_status_text(
        b, &value, json_string_value(json_object_get(metric, "unit")));
}

void
rt_delta_text(ts_text_buf *b, const json_t *diff)
{
    const char *status = json_string_value(json_object_get(diff, "status"));
    const json_t *delta = json_object_get(diff, "delta");
    const json_t *side = json_object_get(diff, "after");
    const char *unit;
    if (side == NULL || json_is_null(side)) {
        side = json_object_get(diff, "before");
    }
    unit = json_string_value(json_object_get(side, "unit"));
    if (status != NULL && strcmp(status, "complete") == 0
        && (json_is_integer(delta) || json_is_real(delta))) {
        rp_sum d = {TS_COMPLETE, json_is_real(delta), 0, 0.0};
        if (d.real) {
            d.r = json_real_value(delta);
        }
        else {
            d.i = json_integer_value(delta);
        }
        ts_text_put(b, "complete · ");
        if (rp_sum_double(&d) >= 0) {
            ts_text_put(b, "+");
        }
        rt_grouped(b, &d);
        ts_text_put(b, " ");
        ts_text_put_escaped(b, unit != NULL ? unit : "");
    }
    else if (status != NULL && strcmp(status, "partial") == 0) {
        ts_text_put(b,
                    "partial · delta unknown (requires two complete "
                    "measurements)");
    }
    else {
        const char *reason =
            json_string_value(json_object_get(diff, "reason"));
        ts_text_put(b, "unavailable · ");
        if (reason != NULL) {
            ts_text_put_escaped(b, reason);
        }
        else {
            ts_text_put(b,
                        "not comparable: measured on one side only or "
                        "unavailable");
        }
    }
}

void
rt_json_island(ts_text_buf *b, const json_t *value)
{
    ts_json_put(b, value, -1, true);
}

void
rt_json_esc(ts_text_buf *b, const json_t *value)
{
    char *text = ts_json_text(value, -1);
    const char *start;
    if (text == NULL) {
        b->failed = true;
        return;
    }
    /* element content: only & < > need references */
    start = text;
    for (const char *c = text; *c; c++) {
        const char *ref = *c == '&'   ? "&amp;"
                          : *c == '<' ? "&lt;"
                          : *c == '>' ? "&gt;"
                                      : NULL;
        if (ref != NULL) {
            ts_text_put_n(b, start, (size_t)(c - start));
            ts_text_put(b, ref);
            start = c + 1;
        }
    }
    ts_text_put(b, start);
    free(text);
}
