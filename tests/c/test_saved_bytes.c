/* saved_bytes.c: the storage dedupe, exclusion and per-layer sums behind
 * saved_activation_bytes. Numbers by hand. */
#include "harness.h"
#include "torchscan/saved_bytes.h"
#include "torchscan/session.h"

static void
test_dedupe_and_layers(void)
{
    ts_saved *s = ts_saved_new();
    ts_saved_totals t;
    CHECK(s != NULL);
    /* layer 0 saves storage A (32 bytes) twice: counted once */
    CHECK_EQ_INT(ts_saved_add(s, 0xA0, 32, 0), 1);
    CHECK_EQ_INT(ts_saved_add(s, 0xA0, 32, 0), 0);
    /* layer 1 saves A again (a view of its input) and B (24 bytes) */
    CHECK_EQ_INT(ts_saved_add(s, 0xA0, 32, 1), 0);
    CHECK_EQ_INT(ts_saved_add(s, 0xB0, 24, 1), 1);
    /* a parameter's storage is excluded, before and after */
    CHECK_EQ_INT(ts_saved_exclude(s, 0xC0), TS_OK);
    CHECK_EQ_INT(ts_saved_add(s, 0xC0, 1000, 1), 0);
    CHECK_EQ_INT(ts_saved_exclude(s, 0xA0), TS_OK); /* counted stays */
    /* outside every call */
    CHECK_EQ_INT(ts_saved_add(s, 0xD0, 8, -1), 1);
    CHECK_EQ_INT(ts_saved_layer_bytes(s, 0), 32);
    CHECK_EQ_INT(ts_saved_layer_bytes(s, 1), 24);
    CHECK_EQ_INT(ts_saved_layer_bytes(s, -1), 8);
    CHECK_EQ_INT(ts_saved_layer_bytes(s, 7), 0); /* never seen */
    CHECK_EQ_INT(ts_saved_owner(s, 0xA0), 0);
    CHECK_EQ_INT(ts_saved_owner(s, 0xB0), 1);
    CHECK_EQ_INT(ts_saved_owner(s, 0xD0), -1);
    CHECK_EQ_INT(ts_saved_owner(s, 0xC0), -2);
    CHECK_EQ_INT(ts_saved_owner(s, 0xE0), -2);
    ts_saved_get_totals(s, &t);
    CHECK_EQ_INT(t.bytes, 64);
    CHECK_EQ_INT(t.storages, 3);
    CHECK_EQ_INT(t.saves, 6);
    CHECK_EQ_INT(t.unmeasured, 0);
    /* unmeasured: the first of a layer says so */
    CHECK_EQ_INT(ts_saved_add_unmeasured(s, 1), 1);
    CHECK_EQ_INT(ts_saved_add_unmeasured(s, 1), 0);
    CHECK_EQ_INT(ts_saved_add_unmeasured(s, 3), 1);
    CHECK_EQ_INT(ts_saved_layer_unmeasured(s, 1), 2);
    CHECK_EQ_INT(ts_saved_layer_unmeasured(s, 0), 0);
    ts_saved_get_totals(s, &t);
    CHECK_EQ_INT(t.unmeasured, 3);
    /* bad arguments */
    CHECK_EQ_INT(ts_saved_add(s, 0xF0, -1, 0), TS_EINVAL);
    CHECK_EQ_INT(ts_saved_add(s, 0xF0, 1, -2), TS_EINVAL);
    CHECK_EQ_INT(ts_saved_add_unmeasured(s, -5), TS_EINVAL);
    /* overflow: nothing added, the storage stays uncounted */
    CHECK_EQ_INT(ts_saved_add(s, 0xF1, INT64_MAX, 2), TS_EOVERFLOW);
    CHECK_EQ_INT(ts_saved_owner(s, 0xF1), -2);
    ts_saved_get_totals(s, &t);
    CHECK_EQ_INT(t.bytes, 64);
    ts_saved_free(s);
    ts_saved_free(NULL);
}

/* Many storages and layers: the table and the layer sums grow. */
static void
test_growth(void)
{
    ts_saved *s = ts_saved_new();
    ts_saved_totals t;
    int64_t expected = 0;
    for (int i = 0; i < 5000; i++) {
        /* aligned addresses, as storages have */
        CHECK_EQ_INT(
            ts_saved_add(s, 0x7f0000000000ULL + (uint64_t)i * 64, i, i % 700),
            1);
        expected += i;
    }
    for (int i = 0; i < 5000; i += 7) {
        CHECK_EQ_INT(
            ts_saved_add(s, 0x7f0000000000ULL + (uint64_t)i * 64, i, 3), 0);
    }
    ts_saved_get_totals(s, &t);
    CHECK_EQ_INT(t.bytes, expected);
    CHECK_EQ_INT(t.storages, 5000);
    /* layer 699: i = 699, 1399, 2099, 2799, 3499, 4199, 4899 */
    CHECK_EQ_INT(ts_saved_layer_bytes(s, 699),
                 699 + 1399 + 2099 + 2799 + 3499 + 4199 + 4899);
    CHECK_EQ_INT(ts_saved_owner(s, 0x7f0000000000ULL + 4999 * 64), 4999 % 700);
    ts_saved_free(s);
}

/* The session's accumulator and the report's fields. */
static void
test_session_report(void)
{
    ts_session *session = ts_session_new(false);
    ts_module_desc desc;
    ts_model_totals totals;
    ts_error err;
    json_t *report, *row, *metric;
    int root, child, l0, l1;
    memset(&desc, 0, sizeof desc);
    memset(&totals, 0, sizeof totals);
    CHECK(ts_session_saved(session) == NULL);
    root = ts_session_add_module(session, "", "Net", &desc, false);
    child = ts_session_add_module(session, "fc", "Linear", &desc, true);
    CHECK_EQ_INT(ts_session_enable_saved(session), TS_OK);
    CHECK(ts_session_saved(session) != NULL);
    l0 = ts_session_begin_call(session, root, json_object(), NULL);
    l1 = ts_session_begin_call(session, child, json_object(), NULL);
    CHECK_EQ_INT(ts_session_current_layer(session), l1);
    CHECK_EQ_INT(ts_saved_add(ts_session_saved(session), 1, 40, l1), 1);
    CHECK_EQ_INT(
        ts_session_end_call(session, child, json_object(), false, NULL), l1);
    CHECK_EQ_INT(ts_saved_add(ts_session_saved(session), 2, 12, l0), 1);
    CHECK_EQ_INT(ts_saved_add_unmeasured(ts_session_saved(session), l0), 1);
    CHECK_EQ_INT(
        ts_session_end_call(session, root, json_object(), false, NULL), l0);
    report = ts_session_report(
        session, json_object(), json_object(), &totals, NULL, "2", &err);
    CHECK(report != NULL);
    row = json_array_get(json_object_get(report, "layers"), 1);
    metric = json_object_get(json_object_get(row, "metrics"),
                             "saved_activation_bytes");
    CHECK_EQ_INT(json_integer_value(json_object_get(metric, "value")), 40);
    CHECK(strcmp(json_string_value(json_object_get(metric, "status")),
                 "complete")
          == 0);
    row = json_array_get(json_object_get(report, "layers"), 0);
    metric = json_object_get(json_object_get(row, "metrics"),
                             "saved_activation_bytes");
    CHECK(json_is_null(json_object_get(metric, "value")));
    CHECK_EQ_INT(json_integer_value(json_object_get(metric, "known_value")),
                 12);
    metric = json_object_get(json_object_get(report, "totals"),
                             "saved_activation_bytes");
    CHECK(
        strcmp(json_string_value(json_object_get(metric, "status")), "partial")
        == 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(metric, "known_value")),
                 52);
    CHECK(
        strcmp(json_string_value(json_object_get(metric, "scope")), "forward")
        == 0);
    json_decref(report);
    /* the same numbers per layer call and in all, in the caller's scope */
    report = ts_session_saved_layers(session, "workload");
    CHECK(report != NULL);
    CHECK_EQ_INT((int64_t)json_array_size(json_object_get(report, "layers")),
                 2);
    row = json_array_get(json_object_get(report, "layers"), 1);
    CHECK(strcmp(json_string_value(json_object_get(row, "path")), "fc") == 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(row, "call_index")), 0);
    metric = json_object_get(row, "saved_activation_bytes");
    CHECK_EQ_INT(json_integer_value(json_object_get(metric, "value")), 40);
    CHECK(strcmp(json_string_value(json_object_get(metric, "scope")),
                 "module_call_self")
          == 0);
    metric =
        json_object_get(json_array_get(json_object_get(report, "layers"), 0),
                        "saved_activation_bytes");
    CHECK(json_is_null(json_object_get(metric, "value")));
    CHECK_EQ_INT(json_integer_value(json_object_get(metric, "known_value")),
                 12);
    metric = json_object_get(report, "total");
    CHECK(
        strcmp(json_string_value(json_object_get(metric, "status")), "partial")
        == 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(metric, "known_value")),
                 52);
    CHECK(
        strcmp(json_string_value(json_object_get(metric, "scope")), "workload")
        == 0);
    json_decref(report);
    ts_session_free(session);
}

/* Without enable_saved the report has no such field. */
static void
test_not_requested(void)
{
    ts_session *session = ts_session_new(true);
    ts_module_desc desc;
    ts_model_totals totals;
    ts_error err;
    json_t *report;
    int root;
    memset(&desc, 0, sizeof desc);
    memset(&totals, 0, sizeof totals);
    root = ts_session_add_module(session, "", "Net", &desc, true);
    ts_session_begin_call(session, root, json_object(), NULL);
    ts_session_end_call(session, root, json_object(), false, NULL);
    report = ts_session_report(
        session, json_object(), json_object(), &totals, NULL, "2", &err);
    CHECK(report != NULL);
    CHECK(json_object_get(json_object_get(report, "totals"),
                          "saved_activation_bytes")
          == NULL);
    CHECK(json_object_get(
              json_object_get(
                  json_array_get(json_object_get(report, "layers"), 0),
                  "metrics"),
              "saved_activation_bytes")
          == NULL);
    json_decref(report);
    CHECK(ts_session_saved_layers(session, "workload") == NULL);
    ts_session_free(session);
}

int
main(void)
{
    test_dedupe_and_layers();
    test_growth();
    test_session_report();
    test_not_requested();
    return ts_test_report();
}
