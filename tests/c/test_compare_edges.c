/* ts_compare_reports paths test_diff.c leaves out: reports that are not
 * objects, a schema_version that is not an int on either side (refused by
 * the report check, naming the side), and calls listed out of
 * (path, call_index) order. The fixture is the report check's valid
 * report (tests/c/report_check_valid.json): rows "" #0, "lin" #0, "lin"
 * #1. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/diff.h"

#ifndef TS_SOURCE_ROOT
#define TS_SOURCE_ROOT "."
#endif

static json_t *
valid_report(void)
{
    json_error_t error;
    json_t *r = json_load_file(
        TS_SOURCE_ROOT "/tests/c/report_check_valid.json", 0, &error);
    if (r == NULL) {
        fprintf(stderr, "fixture: %s\n", error.text);
    }
    return r;
}

static void
test_refusals(void)
{
    json_t *a = valid_report();
    json_t *b = valid_report();
    json_t *list = json_array();
    ts_error err;
    CHECK(ts_compare_reports(list, b, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message, "reports must be JSON objects");
    CHECK(ts_compare_reports(a, list, &err) == NULL);
    CHECK_EQ_STR(err.message, "reports must be JSON objects");
    json_object_set_new(a, "schema_version", json_string("1"));
    CHECK(ts_compare_reports(a, b, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK_EQ_STR(err.message, "before: schema_version: expected 1, got '1'");
    json_object_set_new(a, "schema_version", json_integer(1));
    json_object_set_new(b, "schema_version", json_real(1.5));
    CHECK(ts_compare_reports(a, b, &err) == NULL);
    CHECK_EQ_STR(err.message, "after: schema_version: expected 1, got 1.5");
    json_decref(list);
    json_decref(a);
    json_decref(b);
}

/* The after report lists "lin" #1 before "lin" #0 and the root last: the
 * calls are matched by (path, call_index) whatever the order, so nothing
 * changed, and a changed value is found on its own call. */
static void
test_order(void)
{
    json_t *a = valid_report();
    json_t *b = valid_report();
    json_t *layers = json_object_get(b, "layers");
    json_t *reordered = json_pack("[O, O, O]",
                                  json_array_get(layers, 2),
                                  json_array_get(layers, 1),
                                  json_array_get(layers, 0));
    ts_error err;
    json_object_set_new(b, "layers", reordered);
    json_t *d = ts_compare_reports(a, b, &err);
    CHECK(d != NULL);
    json_t *dl = json_object_get(d, "layers");
    CHECK_EQ_INT(json_array_size(json_object_get(dl, "added")), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(dl, "removed")), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(dl, "changed")), 0);
    json_decref(d);
    /* "lin" #0 records 4 calls instead of 1: a delta of 3 */
    json_object_set_new(
        json_object_get(
            json_object_get(json_array_get(reordered, 1), "metrics"), "calls"),
        "value",
        json_integer(4));
    json_object_set_new(
        json_object_get(
            json_object_get(json_array_get(reordered, 1), "metrics"), "calls"),
        "known_value",
        json_integer(4));
    d = ts_compare_reports(a, b, &err);
    CHECK(d != NULL);
    json_t *changed = json_object_get(json_object_get(d, "layers"), "changed");
    CHECK_EQ_INT(json_array_size(changed), 1);
    json_t *entry = json_array_get(changed, 0);
    CHECK_EQ_STR(json_string_value(json_object_get(entry, "path")), "lin");
    CHECK_EQ_INT(json_integer_value(json_object_get(entry, "call_index")), 0);
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(entry, "metrics"), "calls"),
            "delta")),
        3);
    json_decref(d);
    json_decref(a);
    json_decref(b);
}

int
main(void)
{
    test_refusals();
    test_order();
    return ts_test_report();
}
