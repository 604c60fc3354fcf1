/* metric_check.c: MetricResults read back (ts_metric_result_check,
 * report_check.h) and objects of them. */
#include "checker.h"
#include "torchscan/diff.h"

/* ---- MetricResult ------------------------------------------------------- */

int
chk_metric(checker *c, const json_t *metric)
{
    const json_t *status;
    const json_t *value;
    const json_t *known;
    const char *name;
    char buf[64];
    int rc = chk_object(c, metric, "a MetricResult object");
    if (rc != TS_OK) {
        return rc;
    }
    status = json_object_get(metric, "status");
    value = json_object_get(metric, "value");
    known = json_object_get(metric, "known_value");
    name = json_string_value(status);
    if (name == NULL || ts_status_parse(name) < 0) {
        push_key(c, "status");
        return chk_fail(
            c,
            "expected 'complete', 'partial' or 'unavailable', got %s",
            status == NULL ? "nothing" : GOT(status, buf));
    }
    if (value == NULL || known == NULL) {
        push_key(c, value == NULL ? "value" : "known_value");
        return chk_fail(c, "missing (a MetricResult has every key)");
    }
    switch ((ts_status)ts_status_parse(name)) {
        case TS_COMPLETE:
            if (!json_is_number(value)) {
                push_key(c, "value");
                return chk_fail(c,
                                "a complete metric needs a number, got %s",
                                GOT(value, buf));
            }
            if (!json_is_number(known)) {
                push_key(c, "known_value");
                return chk_fail(c,
                                "a complete metric needs a number, got %s",
                                GOT(known, buf));
            }
            if (!ts_json_equal(value, known)) {
                push_key(c, "known_value");
                return chk_fail(
                    c,
                    "a complete metric needs known_value == value, "
                    "got %s",
                    GOT(known, buf));
            }
            break;
        case TS_PARTIAL:
            if (!json_is_null(value)) {
                push_key(c, "value");
                return chk_fail(
                    c, "a partial metric needs None, got %s", GOT(value, buf));
            }
            if (!json_is_number(known)) {
                push_key(c, "known_value");
                return chk_fail(
                    c,
                    "a partial metric needs a numeric lower bound, "
                    "got %s",
                    GOT(known, buf));
            }
            break;
        case TS_UNAVAILABLE:
            if (!json_is_null(value) || !json_is_null(known)) {
                const json_t *bad = json_is_null(value) ? known : value;
                push_key(c, json_is_null(value) ? "known_value" : "value");
                return chk_fail(c,
                                "an unavailable metric needs None, got %s",
                                GOT(bad, buf));
            }
            break;
    }
    if ((rc = chk_member_str(c, metric, "unit", false)) != TS_OK
        || (rc = chk_member_str(c, metric, "scope", false)) != TS_OK
        || (rc = chk_member_str(c, metric, "method", false)) != TS_OK) {
        return rc;
    }
    return TS_OK;
}

int
ts_metric_result_check(const json_t *metric, const char *where, ts_error *err)
{
    checker c;
    checker_init(&c, where, err);
    return chk_metric(&c, metric);
}

/* Metrics whose numbers add up: a negative one is corrupt. */
static bool
is_additive(const char *name)
{
    static const char *const names[] = {
        "calls",
        "module_flops",
        "macs",
        "dmas",
        "operator_flops",
        "parameters",
        "trainable_parameters",
        "frozen_parameters",
        "parameter_bytes",
        "buffer_elements",
        "buffer_bytes",
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (strcmp(name, names[k]) == 0) {
            return true;
        }
    }
    return false;
}

bool
chk_is_negative(const json_t *number)
{
    return json_is_integer(number) ? json_integer_value(number) < 0
           : json_is_real(number)  ? json_real_value(number) < 0.0
                                   : false;
}

/* {name: MetricResult} at the current path. */
int
chk_metrics(checker *c, const json_t *metrics)
{
    const char *name;
    const json_t *metric;
    int rc = chk_object(c, metrics, "an object of MetricResults");
    if (rc != TS_OK) {
        return rc;
    }
    json_object_foreach((json_t *)metrics, name, metric)
    {
        size_t saved = push_key(c, name);
        if ((rc = chk_metric(c, metric)) != TS_OK) {
            return rc;
        }
        if (is_additive(name)
            && chk_is_negative(json_object_get(metric, "known_value"))) {
            char buf[64];
            push_key(c, "known_value");
            return chk_fail(c,
                            "a cost cannot be negative, got %s",
                            GOT(json_object_get(metric, "known_value"), buf));
        }
        pop(c, saved);
    }
    return TS_OK;
}
