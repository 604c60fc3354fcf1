/* MetricResult construction and status names. */
#include <math.h>
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
    if (json_object_set_new(obj, "status", json_string(ts_status_name(status)))
        || json_object_set_new(obj, "value", value)
        || json_object_set_new(obj, "known_value", known_value)
        || json_object_set_new(obj, "unit", json_string(unit))
        || json_object_set_new(obj, "scope", json_string(scope))
        || json_object_set_new(obj, "method", json_string(method))) {
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
