/* report_check.c rules the hostile table of test_report_check.c leaves
 * out: Python's repr() of odd values in messages (every JSON type, quotes,
 * escapes, truncation), text a report or a page cannot hold, unavailable
 * metrics with a bound, negative real costs, and the per-phase rules of a
 * FlopReport (rows, totals, counts, overflow). Each edit is refused with
 * TS_EFORMAT and the whole message is compared. */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "torchscan/report_check.h"

#ifndef TS_SOURCE_ROOT
#define TS_SOURCE_ROOT "."
#endif

static json_t *
valid_report(void)
{
    json_error_t error;
    json_t *report = json_load_file(
        TS_SOURCE_ROOT "/tests/c/report_check_valid.json", 0, &error);
    if (report == NULL) {
        fprintf(stderr, "fixture: %s at line %d\n", error.text, error.line);
    }
    return report;
}

/* The value at a path such as "layers[1].metrics.macs" ("" is the root). */
static json_t *
at(json_t *root, const char *path)
{
    json_t *node = root;
    const char *p = path;
    while (node != NULL && *p != '\0') {
        if (*p == '.') {
            p++;
        }
        if (*p == '[') {
            char *end;
            size_t index = strtoul(p + 1, &end, 10);
            node = json_array_get(node, index);
            p = end + 1;
        }
        else {
            size_t n = strcspn(p, ".[");
            char key[64];
            snprintf(key, sizeof key, "%.*s", (int)n, p);
            node = json_object_get(node, key);
            p += n;
        }
    }
    return node;
}

/* One edit: parent[key] = value (JSON text), or removed when value is
 * NULL; a list parent takes key "+" as an append. */
typedef struct edit {
    const char *parent;
    const char *key;
    const char *value;
} edit;

typedef struct hostile {
    const char *rule;
    edit edits[3];
    const char *expected; /* the whole message */
} hostile;

static void
apply(json_t *root, const edit *e)
{
    json_t *parent = at(root, e->parent);
    json_t *value = NULL;
    if (e->value != NULL) {
        json_error_t error;
        value = json_loads(e->value, JSON_DECODE_ANY, &error);
        CHECK(value != NULL);
    }
    if (json_is_array(parent)) {
        if (strcmp(e->key, "+") == 0) {
            json_array_append_new(parent, value);
        }
        else {
            json_array_set_new(parent, strtoul(e->key, NULL, 10), value);
        }
    }
    else if (value == NULL) {
        CHECK(json_object_del(parent, e->key) == 0);
    }
    else {
        CHECK(json_object_set_new(parent, e->key, value) == 0);
    }
}

#define M(status, value, known)                                         \
    "{\"status\":" status ",\"value\":" value ",\"known_value\":" known \
    ",\"unit\":\"MACs\",\"scope\":\"module_call\",\"method\":\"f\"}"

/* A FlopReport phase: total known `known` (status `status`, value
 * `value`), its by_operator sum `op`, its layers `layers`. */
#define PHASE(status, value, known, op, by_module, layers)             \
    "{\"total\":{\"status\":" status ",\"value\":" value               \
    ",\"known_value\":" known                                          \
    ",\"unit\":\"FLOPs\",\"scope\":\"workload\",\"method\":\"m\"},"    \
    "\"by_operator\":{\"aten.addmm\":" op "},\"by_module\":" by_module \
    ",\"layers\":" layers "}"

#define ROW0                                                        \
    "[{\"path\":\"\",\"call_index\":0,\"operator_flops\":"          \
    "{\"status\":\"complete\",\"value\":0,\"known_value\":0,"       \
    "\"unit\":\"FLOPs\",\"scope\":\"module_call_self\",\"method\":" \
    "\"m\"}}]"

#define ZERO PHASE("\"complete\"", "0", "0", "0", "{}", "[]")
#define FWD(layers) PHASE("\"complete\"", "64", "64", "64", "{}", layers)
#define PHASES(f, b, o) \
    "{\"forward\":" f ",\"backward\":" b ",\"optimizer\":" o "}"

static const hostile cases[] = {
    /* describe() of each JSON type */
    {"status a real",
     {{"layers[1].metrics.macs", "status", "1.5"}},
     "before: layers[1].metrics.macs.status: expected 'complete', "
     "'partial' or 'unavailable', got 1.5"},
    {"status false",
     {{"layers[1].metrics.macs", "status", "false"}},
     "before: layers[1].metrics.macs.status: expected 'complete', "
     "'partial' or 'unavailable', got False"},
    {"status null",
     {{"layers[1].metrics.macs", "status", "null"}},
     "before: layers[1].metrics.macs.status: expected 'complete', "
     "'partial' or 'unavailable', got None"},
    {"status an object",
     {{"layers[1].metrics.macs", "status", "{}"}},
     "before: layers[1].metrics.macs.status: expected 'complete', "
     "'partial' or 'unavailable', got an object"},
    {"status missing",
     {{"layers[1].metrics.macs", "status", NULL}},
     "before: layers[1].metrics.macs.status: expected 'complete', "
     "'partial' or 'unavailable', got nothing"},
    /* repr(): quotes, escapes, truncation at 48 bytes */
    {"status with a quote",
     {{"layers[1].metrics.macs", "status", "\"it's\""}},
     "before: layers[1].metrics.macs.status: expected 'complete', "
     "'partial' or 'unavailable', got \"it's\""},
    {"status with both quotes and escapes",
     {{"layers[1].metrics.macs",
       "status",
       "\"a'\\\"\\\\\\n\\r\\t\\u0001\\u007f\""}},
     "before: layers[1].metrics.macs.status: expected 'complete', "
     "'partial' or 'unavailable', got 'a\\'\"\\\\\\n\\r\\t\\x01\\x7f'"},
    {"long status",
     {{"layers[1].metrics.macs",
       "status",
       "\"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz\""}},
     "before: layers[1].metrics.macs.status: expected 'complete', "
     "'partial' or 'unavailable', got "
     "'abcdefghijklmnopqrstuvwxyzabcdefghijklm...'"},
    /* metric statuses */
    {"complete with a str bound",
     {{"layers[1].metrics", "macs", M("\"complete\"", "1", "\"1\"")}},
     "before: layers[1].metrics.macs.known_value: a complete metric needs "
     "a number, got '1'"},
    {"unavailable with a bound",
     {{"layers[1].metrics", "dmas", M("\"unavailable\"", "null", "0")}},
     "before: layers[1].metrics.dmas.known_value: an unavailable metric "
     "needs None, got 0"},
    {"unavailable with a list",
     {{"layers[1].metrics", "dmas", M("\"unavailable\"", "[]", "null")}},
     "before: layers[1].metrics.dmas.value: an unavailable metric needs "
     "None, got a list"},
    {"negative real cost",
     {{"totals", "parameters", M("\"complete\"", "-0.5", "-0.5")}},
     "before: totals.parameters.known_value: a cost cannot be negative, "
     "got -0.5"},
    {"metric not an object",
     {{"layers[1].metrics", "macs", "true"}},
     "before: layers[1].metrics.macs: expected a MetricResult object, got "
     "True"},
    {"metrics not an object",
     {{"layers[1]", "metrics", "[]"}},
     "before: layers[1].metrics: expected an object of MetricResults, got "
     "a list"},
    /* FlopReport phases */
    {"phases not an object",
     {{"operator_flops", "phases", "[]"}},
     "before: operator_flops.phases: expected an object {forward, "
     "backward, optimizer}, got a list"},
    {"two phases",
     {{"operator_flops",
       "phases",
       "{\"forward\":" ZERO ",\"backward\":" ZERO "}"}},
     "before: operator_flops.phases: expected exactly forward, backward and "
     "optimizer"},
    {"phase not an object",
     {{"operator_flops", "phases", PHASES("1", ZERO, ZERO)}},
     "before: operator_flops.phases.forward: expected an object {total, "
     "by_operator, by_module, layers}, got 1"},
    {"phase total not a metric",
     {{"operator_flops", "phases", PHASES("{\"total\":3}", ZERO, ZERO)}},
     "before: operator_flops.phases.forward.total: expected a MetricResult "
     "object, got 3"},
    {"phase total negative",
     {{"operator_flops",
       "phases",
       PHASES(
           PHASE("\"complete\"", "-1", "-1", "-1", "{}", "[]"), ZERO, ZERO)}},
     "before: operator_flops.phases.forward.total.known_value: a cost cannot "
     "be negative"},
    {"phase by_operator negative",
     {{"operator_flops",
       "phases",
       PHASES(
           PHASE("\"complete\"", "64", "64", "-64", "{}", "[]"), ZERO, ZERO)}},
     "before: operator_flops.phases.forward.by_operator.aten.addmm: "
     "expected a non-negative int, got -64"},
    {"phase by_operator not adding up",
     {{"operator_flops",
       "phases",
       PHASES(
           PHASE("\"complete\"", "64", "64", "60", "{}", "[]"), ZERO, ZERO)}},
     "before: operator_flops.phases.forward.by_operator: must add up to the "
     "phase's total"},
    {"phase by_module not an object",
     {{"operator_flops",
       "phases",
       PHASES(
           PHASE("\"complete\"", "64", "64", "64", "[]", "[]"), ZERO, ZERO)}},
     "before: operator_flops.phases.forward.by_module: expected an object, "
     "got a list"},
    {"phase layers not a list",
     {{"operator_flops", "phases", PHASES(FWD("{}"), ZERO, ZERO)}},
     "before: operator_flops.phases.forward.layers: expected a list, got "
     "an object"},
    {"phase layer not an object",
     {{"operator_flops", "phases", PHASES(FWD("[0]"), ZERO, ZERO)}},
     "before: operator_flops.phases.forward.layers[0]: expected an object "
     "{path, call_index, operator_flops}, got 0"},
    {"phase layer without path",
     {{"operator_flops",
       "phases",
       PHASES(FWD("[{\"call_index\":0}]"), ZERO, ZERO)}},
     "before: operator_flops.phases.forward.layers[0].path: expected a str, "
     "got nothing"},
    {"phase layer call_index negative",
     {{"operator_flops",
       "phases",
       PHASES(FWD("[{\"path\":\"\",\"call_index\":-1}]"), ZERO, ZERO)}},
     "before: operator_flops.phases.forward.layers[0].call_index: expected "
     "a non-negative int, got -1"},
    {"phase layer operator_flops missing",
     {{"operator_flops",
       "phases",
       PHASES(FWD("[{\"path\":\"\",\"call_index\":0}]"), ZERO, ZERO)}},
     "before: operator_flops.phases.forward.layers[0].operator_flops: "
     "expected a MetricResult object, got nothing"},
    {"phase totals not adding up",
     {{"operator_flops", "phases", PHASES(ZERO, ZERO, ZERO)}},
     "before: operator_flops.phases: the phases' totals must add up to "
     "total"},
    {"phase partial alone",
     {{"operator_flops",
       "phases",
       PHASES(
           PHASE("\"partial\"", "null", "64", "64", "{}", ROW0), ZERO, ZERO)}},
     "before: operator_flops.phases: total must be partial exactly when a "
     "phase's total is"},
    {"phase totals overflow",
     {{"operator_flops",
       "phases",
       PHASES(PHASE("\"complete\"",
                    "9223372036854775807",
                    "9223372036854775807",
                    "9223372036854775807",
                    "{}",
                    "[]"),
              PHASE("\"complete\"", "1", "1", "1", "{}", "[]"),
              ZERO)}},
     "before: operator_flops.phases: the phases' totals overflow"},
    {"by_operator overflow",
     {{"operator_flops",
       "phases",
       PHASES(PHASE("\"complete\"",
                    "64",
                    "64",
                    "9223372036854775807, \"aten.mm\": 1",
                    "{}",
                    "[]"),
              ZERO,
              ZERO)}},
     "before: operator_flops.phases.forward.by_operator: must add up to the "
     "phase's total"},
    /* FlopReport members */
    {"matrix_product_flops negative",
     {{"operator_flops", "matrix_product_flops", "{\"aten.mm\": -2}"}},
     "before: operator_flops.matrix_product_flops.aten.mm: expected a "
     "non-negative int, got -2"},
    {"flops context not an object",
     {{"operator_flops", "context", "\"x\""}},
     "before: operator_flops.context: expected an object, got 'x'"},
    {"flop total negative",
     {{"operator_flops", "total", M("\"partial\"", "null", "-5")}},
     "before: operator_flops.total.known_value: a cost cannot be negative"},
    {"ignored entry not an object",
     {{"operator_flops.ignored_operators", "aten.t", "[]"}},
     "before: operator_flops.ignored_operators.aten.t: expected an object "
     "{calls, reason}, got a list"},
    {"ignored not an object",
     {{"operator_flops", "ignored_operators", "3"}},
     "before: operator_flops.ignored_operators: expected an object, got 3"},
    {"metric_ownership not an object",
     {{"layers[0]", "metric_ownership", "[]"}},
     "before: layers[0].metric_ownership: expected an object, got a list"},
    {"metric_owners not an object",
     {{"layers[1]", "metric_owners", "1"}},
     "before: layers[1].metric_owners: expected an object, got 1"},
    {"metric_owners entry without path",
     {{"layers[1].metric_owners", "module_flops", "{\"call_index\": 0}"}},
     "before: layers[1].metric_owners.module_flops.path: expected a str, "
     "got nothing"},
};

static void
test_cases(void)
{
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        json_t *report = valid_report();
        ts_error err;
        for (size_t e = 0; e < 3 && cases[k].edits[e].parent != NULL; e++) {
            apply(report, &cases[k].edits[e]);
        }
        ts_error_clear(&err);
        int rc = ts_analysis_report_check(report, "before", &err);
        if (rc != TS_EFORMAT || strcmp(err.message, cases[k].expected) != 0) {
            fprintf(stderr,
                    "case \"%s\": rc %d, message\n  %s\nexpected\n  %s\n",
                    cases[k].rule,
                    rc,
                    err.message,
                    cases[k].expected);
        }
        CHECK_EQ_INT(rc, TS_EFORMAT);
        CHECK_EQ_STR(err.message, cases[k].expected);
        json_decref(report);
    }
}

/* A valid report with phases passes: forward holds the 64 FLOPs. */
static void
test_valid_phases(void)
{
    json_t *report = valid_report();
    edit e = {
        "operator_flops",
        "phases",
        PHASES(PHASE("\"complete\"", "64", "64", "64", "{\"\": 64}", ROW0),
               ZERO,
               ZERO)};
    edit empty = {"operator_flops", "matrix_product_flops", "{}"};
    ts_error err;
    apply(report, &e);
    apply(report, &empty);
    CHECK_EQ_INT(ts_analysis_report_check(report, "before", &err), TS_OK);
    json_decref(report);
}

/* Text: a NUL or a surrogate anywhere; for display also control
 * characters (C0 but tab/CR/LF, DEL, C1) and U+FFFE/U+FFFF; in a key or
 * a value; and nesting past 512 levels. */
static void
test_text(void)
{
    ts_error err;
    json_t *report = valid_report();
    json_t *inputs = json_object_get(report, "inputs");
    json_t *deep;

    json_object_set_new(inputs, "n", json_stringn("a\0b", 3));
    CHECK_EQ_INT(ts_analysis_report_check(report, "before", &err), TS_EFORMAT);
    CHECK_EQ_STR(err.message, "before: inputs.n: text holds a NUL character");
    json_object_set_new(inputs, "n", json_stringn_nocheck("a\xed\xa0\x80", 4));
    CHECK_EQ_INT(ts_analysis_report_check(report, "before", &err), TS_EFORMAT);
    CHECK_EQ_STR(err.message, "before: inputs.n: text holds a surrogate");
    /* U+D7FF (ED 9F BF) is no surrogate */
    json_object_set_new(inputs, "n", json_string("\xed\x9f\xbf"));
    CHECK_EQ_INT(ts_analysis_report_check(report, "before", &err), TS_OK);
    json_object_set_new(inputs, "n", json_string("a\x01"));
    CHECK_EQ_INT(ts_analysis_report_check(report, "before", &err), TS_OK);
    CHECK_EQ_INT(ts_analysis_report_check_display(report, "page", &err),
                 TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "page: inputs.n: text holds a control character");
    json_object_set_new(inputs, "n", json_string("\x7f"));
    CHECK_EQ_INT(ts_analysis_report_check_display(report, "page", &err),
                 TS_EFORMAT);
    json_object_set_new(inputs, "n", json_string("\xc2\x9f"));
    CHECK_EQ_INT(ts_analysis_report_check_display(report, "page", &err),
                 TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "page: inputs.n: text holds a control character");
    /* U+00A0 and U+FFFD are fine, tab/CR/LF too */
    json_object_set_new(
        inputs, "n", json_string("\xc2\xa0\xef\xbf\xbd\t\r\n"));
    CHECK_EQ_INT(ts_analysis_report_check_display(report, "page", &err),
                 TS_OK);
    json_object_set_new(inputs, "n", json_string("x\xef\xbf\xbe"));
    CHECK_EQ_INT(ts_analysis_report_check_display(report, "page", &err),
                 TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "page: inputs.n: text holds a non-character (U+FFFE or "
                 "U+FFFF)");
    json_object_del(inputs, "n");
    /* in a key, inside a list */
    json_object_set_new(
        inputs, "l", json_pack("[i, {s:i}]", 1, "k\xef\xbf\xbf", 2));
    CHECK_EQ_INT(ts_analysis_report_check_display(report, "page", &err),
                 TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "page: inputs.l[1]: a key holds a non-character (U+FFFE or "
                 "U+FFFF)");
    CHECK_EQ_INT(ts_json_data_check(json_object_get(inputs, "l"), "v", &err),
                 TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "v: [1]: a key holds a non-character (U+FFFE or U+FFFF)");
    json_object_del(inputs, "l");
    /* 600 nested lists */
    deep = json_array();
    for (int i = 0; i < 600; i++) {
        deep = json_pack("[o]", deep);
    }
    json_object_set_new(inputs, "deep", deep);
    CHECK_EQ_INT(ts_analysis_report_check(report, "before", &err), TS_EFORMAT);
    CHECK(strstr(err.message, "nested too deeply (more than 512 levels)")
          != NULL);
    CHECK(strncmp(err.message, "before: inputs.deep[0][0][0]", 28) == 0);
    json_decref(report);
}

int
main(void)
{
    test_cases();
    test_valid_phases();
    test_text();
    return ts_test_report();
}
