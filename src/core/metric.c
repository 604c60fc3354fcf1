/* MetricResult construction and status names, and the strict check of a
 * report (which metrics are not complete). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/core.h"

static const char *const status_names[] = {
    "complete", "partial", "unavailable"};

const char *
ts_status_name(ts_status status)
{
    if ((unsigned)status > TS_UNAVAILABLE) {
        return "unavailable";
    }
    return status_names[status];
}

int
ts_status_parse(const char *name)
{
    for (int i = 0; i <= TS_UNAVAILABLE; i++) {
        if (strcmp(name, status_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

static json_t *
number_new(ts_number n)
{
    if (n.is_real) {
        /* json_real refuses non-finite values: reports stay valid JSON. */
        return json_real(n.r);
    }
    return json_integer((json_int_t)n.i);
}

json_t *
ts_metric_new(ts_status status,
              ts_number known,
              const char *unit,
              const char *scope,
              const char *method)
{
    json_t *obj = json_object();
    json_t *value = NULL;
    json_t *known_value = NULL;
    if (obj == NULL) {
        return NULL;
    }
    if (status == TS_UNAVAILABLE) {
        value = json_null();
        known_value = json_null();
    }
    else {
        known_value = number_new(known);
        if (known_value == NULL) {
            goto error;
        }
        value = status == TS_COMPLETE ? json_incref(known_value) : json_null();
    }
    /* every set runs (| not ||): each takes its value, also when it or an
     * earlier one failed, so that nothing is left behind */
    if (json_object_set_new(obj, "status", json_string(ts_status_name(status)))
        | json_object_set_new(obj, "value", value)
        | json_object_set_new(obj, "known_value", known_value)
        | json_object_set_new(obj, "unit", json_string(unit))
        | json_object_set_new(obj, "scope", json_string(scope))
        | json_object_set_new(obj, "method", json_string(method))) {
        json_decref(obj);
        return NULL;
    }
    return obj;
error:
    json_decref(obj);
    return NULL;
}

int
ts_metric_status(const json_t *metric)
{
    const json_t *status = json_object_get(metric, "status");
    if (!json_is_string(status)) {
        return -1;
    }
    return ts_status_parse(json_string_value(status));
}

static int
compare_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool
ts_report_incomplete(const json_t *report, char **message)
{
    const json_t *totals = json_object_get(report, "totals");
    const json_t *diags = json_object_get(report, "diagnostics");
    const char *key;
    json_t *value;
    size_t n = 0, cap = json_object_size(totals) + json_array_size(diags);
    const char **names = malloc((cap ? cap : 1) * sizeof *names);
    bool incomplete = json_array_size(diags) > 0;
    size_t len = 0, size;
    char *text;

    *message = NULL;
    if (names == NULL) {
        return incomplete;
    }
    json_object_foreach((json_t *)totals, key, value)
    {
        const char *method =
            json_string_value(json_object_get(value, "method"));
        if (ts_metric_status(value) != TS_COMPLETE
            && !(method && strcmp(method, "not_requested") == 0)) {
            incomplete = true;
            names[n++] = key;
        }
    }
    for (size_t i = 0; i < json_array_size(diags); i++) {
        const char *metric = json_string_value(
            json_object_get(json_array_get(diags, i), "metric"));
        if (metric != NULL) {
            names[n++] = metric;
        }
    }
    qsort(names, n, sizeof *names, compare_cstr);
    size = 64;
    for (size_t i = 0; i < n; i++) {
        size += strlen(names[i]) + 2;
    }
    text = malloc(size);
    if (text != NULL) {
        len = (size_t)snprintf(text, size, "Analysis is incomplete for: ");
        for (size_t i = 0, shown = 0; i < n; i++) {
            if (i > 0 && strcmp(names[i], names[i - 1]) == 0) {
                continue;
            }
            len += (size_t)snprintf(
                text + len, size - len, "%s%s", shown++ ? ", " : "", names[i]);
        }
        snprintf(text + len, size - len, "%s.", n ? "" : "unknown metrics");
    }
    free(names);
    *message = text;
    return incomplete;
}
