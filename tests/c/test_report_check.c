/* The validator of AnalysisReports read back (report_check.h): a real
 * report's shape (tests/c/report_check_valid.json) passes, and one hostile
 * edit per rule of contract 1.13 is refused with TS_EFORMAT and a message
 * naming where. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/diff.h"
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

static const hostile cases[] = {
    {"schema_version 2",
     {{"", "schema_version", "2"}},
     "before: schema_version: expected 1, got 2"},
    {"schema_version \"1\"",
     {{"", "schema_version", "\"1\""}},
     "before: schema_version: expected 1, got '1'"},
    {"schema_version true",
     {{"", "schema_version", "true"}},
     "before: schema_version: expected 1, got True"},
    {"schema_version 1.0",
     {{"", "schema_version", "1.0"}},
     "before: schema_version: expected 1, got 1.0"},
    {"schema_version 1e+20",
     {{"", "schema_version", "1e20"}},
     "before: schema_version: expected 1, got 1e+20"},
    {"context not an object",
     {{"", "context", "[]"}},
     "before: context: expected an object, got a list"},
    {"inputs not an object",
     {{"", "inputs", "\"x\""}},
     "before: inputs: expected an object, got 'x'"},
    {"devices not a list",
     {{"context", "devices", "\"cpu\""}},
     "before: context.devices: expected a list, got 'cpu'"},
    {"dtypes holding a number",
     {{"context.dtypes", "+", "3"}},
     "before: context.dtypes[1]: expected a str, got 3"},
    {"unknown status",
     {{"layers[1].metrics.macs", "status", "\"weird\""}},
     "before: layers[1].metrics.macs.status: expected 'complete', "
     "'partial' or 'unavailable', got 'weird'"},
    {"complete with value != known_value",
     {{"layers[0].metrics", "calls", M("\"complete\"", "1", "2")}},
     "before: layers[0].metrics.calls.known_value: a complete metric "
     "needs known_value == value, got 2"},
    {"complete with a bool value",
     {{"totals", "parameters", M("\"complete\"", "true", "true")}},
     "before: totals.parameters.value: a complete metric needs a number, "
     "got True"},
    {"complete with a null value",
     {{"totals", "parameters", M("\"complete\"", "null", "3")}},
     "before: totals.parameters.value: a complete metric needs a number, "
     "got None"},
    {"partial with a value",
     {{"layers[1].metrics", "macs", M("\"partial\"", "16", "16")}},
     "before: layers[1].metrics.macs.value: a partial metric needs None, "
     "got 16"},
    {"partial without a bound",
     {{"layers[1].metrics", "macs", M("\"partial\"", "null", "\"16\"")}},
     "before: layers[1].metrics.macs.known_value: a partial metric needs "
     "a numeric lower bound, got '16'"},
    {"unavailable with a number",
     {{"layers[1].metrics", "dmas", M("\"unavailable\"", "null", "0")}},
     "before: layers[1].metrics.dmas.known_value: an unavailable metric "
     "needs None, got 0"},
    {"metric without unit",
     {{"layers[1].metrics.dmas", "unit", NULL}},
     "before: layers[1].metrics.dmas.unit: expected a str, got nothing"},
    {"metric missing value",
     {{"layers[1].metrics.dmas", "value", NULL}},
     "before: layers[1].metrics.dmas.value: missing (a MetricResult has "
     "every key)"},
    {"diagnostics not a list",
     {{"", "diagnostics", "{}"}},
     "before: diagnostics: expected a list, got an object"},
    {"diagnostic severity",
     {{"diagnostics[0]", "severity", "\"fatal\""}},
     "before: diagnostics[0].severity: expected 'warning' or 'error', got "
     "'fatal'"},
    {"diagnostic path not a str",
     {{"diagnostics[0]", "path", "1"}},
     "before: diagnostics[0].path: expected a str, got 1"},
    {"diagnostic operator not a str",
     {{"operator_flops.diagnostics",
       "+",
       "{\"code\":\"c\",\"severity\":\"error\",\"operator\":null}"}},
     "before: operator_flops.diagnostics[0].operator: expected a str, got "
     "None"},
    {"layers not a list",
     {{"", "layers", "{}"}},
     "before: layers: expected a list, got an object"},
    {"empty path component",
     {{"layers[1]", "path", "\"bad..path\""}},
     "before: layers[1].path: a module path has an empty component, got "
     "'bad..path'"},
    {"leading dot",
     {{"layers[1]", "path", "\".lin\""}},
     "before: layers[1].path: a module path has an empty component, got "
     "'.lin'"},
    {"depth -3",
     {{"layers[2]", "depth", "-3"}},
     "before: layers[2].depth: expected a non-negative int, got -3"},
    {"depth a bool",
     {{"layers[2]", "depth", "false"}},
     "before: layers[2].depth: expected a non-negative int, got False"},
    {"call_index a real",
     {{"layers[2]", "call_index", "1.0"}},
     "before: layers[2].call_index: expected a non-negative int, got 1.0"},
    {"duplicate (path, call_index)",
     {{"layers[2]", "call_index", "0"}},
     "before contains duplicate layer call ('lin', 0)"},
    {"parameters count negative",
     {{"layers[1].parameters", "frozen", "-1"}},
     "before: layers[1].parameters.frozen: expected a non-negative int, "
     "got -1"},
    {"buffers shared not a bool",
     {{"layers[1].buffers", "shared", "0"}},
     "before: layers[1].buffers.shared: expected a bool"},
    {"operator_flops schema_version",
     {{"operator_flops", "schema_version", "2"}},
     "before: operator_flops.schema_version: expected 1, got 2"},
    {"totals.operator_flops must match",
     {{"totals.operator_flops", "value", "65"},
      {"totals.operator_flops", "known_value", "65"}},
     "before: totals.operator_flops: must match operator_flops.total"},
    {"by_operator value a real",
     {{"operator_flops.by_operator", "aten.addmm", "64.5"}},
     "before: operator_flops.by_operator.aten.addmm: expected a "
     "non-negative int, got 64.5"},
    {"by_module value negative",
     {{"operator_flops.by_module", "lin", "-64"}},
     "before: operator_flops.by_module.lin: expected a non-negative int, "
     "got -64"},
    {"ignored operator calls",
     {{"operator_flops.ignored_operators",
       "aten.t",
       "{\"calls\":\"1\",\"reason\":\"view\"}"}},
     "before: operator_flops.ignored_operators.aten.t.calls: expected a "
     "non-negative int, got '1'"},
    {"ignored operator reason",
     {{"operator_flops.ignored_operators", "aten.t", "{\"calls\":1}"}},
     "before: operator_flops.ignored_operators.aten.t.reason: expected a "
     "str, got nothing"},
    {"metric_ownership value",
     {{"layers[0].metric_ownership", "module_flops", "\"forward\""}},
     "before: layers[0].metric_ownership.module_flops: expected "
     "'module_call' or 'subtree', got 'forward'"},
    {"metric_owners call_index a bool",
     {{"layers[1].metric_owners.module_flops", "call_index", "false"}},
     "before: layers[1].metric_owners.module_flops.call_index: expected a "
     "non-negative int, got False"},
    {"metric_owners naming no row",
     {{"layers[1].metric_owners.module_flops", "path", "\"gone\""}},
     "before: layers[1].metric_owners.module_flops: names no row of "
     "layers"},
    {"metric_owners naming a row that does not own it",
     {{"layers[1].metric_owners.module_flops", "path", "\"lin\""},
      {"layers[1].metric_owners.module_flops", "call_index", "1"}},
     "before: layers[1].metric_owners.module_flops: names layers[2], "
     "whose metric_ownership lacks the metric"},
    {"covered metric also on the covered row",
     {{"layers[1].metrics",
       "module_flops",
       "{\"status\":\"complete\",\"value\":1,\"known_value\":1,\"unit\":"
       "\"FLOPs\",\"scope\":\"module_call\",\"method\":\"f\"}"}},
     "before: layers[1].metrics.module_flops: a metric covered by "
     "metric_owners cannot also be on the covered row"},
    {"cyclic ownership",
     {{"layers[0].metrics", "module_flops", NULL},
      {"layers[0]",
       "metric_owners",
       "{\"module_flops\":{\"path\":\"lin\",\"call_index\":0}}"},
      {"layers[1]", "metric_ownership", "{\"module_flops\":\"subtree\"}"}},
     "before: layers[0].metric_owners.module_flops: the owners of this "
     "metric form a cycle"},
    {"negative additive cost",
     {{"layers[1].metrics", "macs", M("\"partial\"", "null", "-16")}},
     "before: layers[1].metrics.macs.known_value: a cost cannot be "
     "negative, got -16"},
    {"negative total",
     {{"totals.parameters", "value", "-20"},
      {"totals.parameters", "known_value", "-20.0"}},
     "before: totals.parameters.known_value: a cost cannot be negative, "
     "got -20.0"},
    {"totals missing",
     {{"", "totals", NULL}},
     "before: totals: expected an object of MetricResults, got nothing"},
};

static void
test_valid(void)
{
    json_t *report = valid_report();
    json_t *copy = json_deep_copy(report);
    ts_error err;
    ts_error_clear(&err);
    CHECK_EQ_INT(ts_analysis_report_check(report, "before", &err), TS_OK);
    CHECK_EQ_STR(err.message, "");
    CHECK(json_equal(report, copy)); /* not modified */
    /* ints past 2^53 are JSON data */
    json_object_set_new(json_object_get(report, "totals"),
                        "parameters",
                        ts_metric_new(TS_COMPLETE,
                                      ts_int(((int64_t)1 << 53) + 1),
                                      "elements",
                                      "model",
                                      "pytorch"));
    CHECK_EQ_INT(ts_analysis_report_check(report, NULL, &err), TS_OK);
    /* text the crawl copies from Python (a module name, a user exception
     * message) may hold control characters and non-characters: a report
     * read back keeps them */
    json_object_set_new(json_object_get(report, "context"),
                        "model_type",
                        json_string("a\x1b[31m\xc2\x85\xef\xbf\xbf"));
    CHECK_EQ_INT(ts_analysis_report_check(report, NULL, &err), TS_OK);
    CHECK_EQ_INT(ts_analysis_report_check(json_null(), NULL, &err),
                 TS_EFORMAT);
    CHECK_EQ_STR(err.message, "report: an AnalysisReport is a JSON object");
    json_decref(copy);
    json_decref(report);
}

/* FlopReport.phases: additive, with statuses per phase. */
#define PHASE(status, value, known, op)                               \
    "{\"total\":{\"status\":" status ",\"value\":" value              \
    ",\"known_value\":" known                                         \
    ",\"unit\":\"FLOPs\",\"scope\":\"workload\",\"method\":\"m\"},"   \
    "\"by_operator\":{\"aten.addmm\":" op                             \
    "},\"by_module\":{\"\":0},"                                       \
    "\"layers\":[{\"path\":\"\",\"call_index\":0,\"operator_flops\":" \
    "{\"status\":\"complete\",\"value\":0,\"known_value\":0,"         \
    "\"unit\":\"FLOPs\",\"scope\":\"module_call_self\",\"method\":"   \
    "\"m\"}}]}"

static void
test_phases(void)
{
    static const struct {
        const char *forward, *backward, *total_status, *expected;
    } phase_cases[] = {
        {PHASE("\"complete\"", "24", "24", "24"),
         PHASE("\"complete\"", "40", "40", "40"),
         "\"complete\"",
         ""},
        /* the phases' totals must add up */
        {PHASE("\"complete\"", "24", "24", "24"),
         PHASE("\"complete\"", "41", "41", "41"),
         "\"complete\"",
         "r: phases: the phases' totals must add up to total"},
        /* a phase's operators must add up to it */
        {PHASE("\"complete\"", "24", "24", "23"),
         PHASE("\"complete\"", "40", "40", "40"),
         "\"complete\"",
         "r: phases.forward.by_operator: must add up to the phase's total"},
        /* partial exactly when a phase is */
        {PHASE("\"complete\"", "24", "24", "24"),
         PHASE("\"partial\"", "null", "40", "40"),
         "\"complete\"",
         "r: phases: total must be partial exactly when a phase's total is"},
        {PHASE("\"complete\"", "24", "24", "24"),
         PHASE("\"complete\"", "-40", "-40", "40"),
         "\"complete\"",
         "r: phases.backward.total.known_value: a cost cannot be negative"},
    };
    for (size_t k = 0; k < sizeof phase_cases / sizeof phase_cases[0]; k++) {
        json_error_t error;
        char text[4096];
        json_t *flops;
        ts_error err;
        snprintf(text,
                 sizeof text,
                 "{\"schema_version\":1,\"total\":{\"status\":%s,"
                 "\"value\":%s,\"known_value\":64,\"unit\":\"FLOPs\","
                 "\"scope\":\"workload\",\"method\":\"m\"},"
                 "\"by_operator\":{\"aten.addmm\":64},\"phases\":{"
                 "\"forward\":%s,\"backward\":%s,\"optimizer\":%s}}",
                 phase_cases[k].total_status,
                 strcmp(phase_cases[k].total_status, "\"complete\"") == 0
                     ? "64"
                     : "null",
                 phase_cases[k].forward,
                 phase_cases[k].backward,
                 PHASE("\"complete\"", "0", "0", "0"));
        flops = json_loads(text, 0, &error);
        CHECK(flops != NULL);
        ts_error_clear(&err);
        CHECK_EQ_INT(ts_flop_report_check(flops, "r", &err),
                     phase_cases[k].expected[0] ? TS_EFORMAT : TS_OK);
        CHECK_EQ_STR(err.message, phase_cases[k].expected);
        if (k == 0) {
            /* inside an AnalysisReport, and the set of phases */
            json_t *report = valid_report();
            json_t *phases = json_object_get(flops, "phases");
            json_object_set(
                json_object_get(report, "operator_flops"), "phases", phases);
            CHECK_EQ_INT(ts_analysis_report_check(report, "before", &err),
                         TS_OK);
            json_object_del(phases, "optimizer");
            CHECK_EQ_INT(ts_analysis_report_check(report, "before", &err),
                         TS_EFORMAT);
            CHECK_EQ_STR(err.message,
                         "before: operator_flops.phases: expected exactly "
                         "forward, backward and optimizer");
            json_decref(report);
        }
        json_decref(flops);
    }
}

static void
test_hostile(void)
{
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        json_t *report = valid_report();
        ts_error err;
        ts_error_clear(&err);
        for (size_t e = 0; e < 3 && cases[k].edits[e].key != NULL; e++) {
            apply(report, &cases[k].edits[e]);
        }
        CHECK_EQ_INT(ts_analysis_report_check(report, "before", &err),
                     TS_EFORMAT);
        if (strcmp(err.message, cases[k].expected) != 0) {
            fprintf(stderr, "rule: %s\n", cases[k].rule);
        }
        CHECK_EQ_STR(err.message, cases[k].expected);
        json_decref(report);
    }
}

/* compare_reports checks both reports before any arithmetic, naming the
 * argument. */
static void
test_compare(void)
{
    json_t *good = valid_report();
    json_t *bad = valid_report();
    ts_error err;
    json_t *diff = ts_compare_reports(good, good, &err);
    CHECK(diff != NULL);
    json_decref(diff);
    json_object_set_new(
        at(bad, "layers[1].metrics.macs"), "status", json_string("weird"));
    CHECK(ts_compare_reports(good, bad, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "after: layers[1].metrics.macs.status: expected 'complete', "
                 "'partial' or 'unavailable', got 'weird'");
    CHECK(ts_compare_reports(bad, good, &err) == NULL);
    CHECK(strncmp(err.message, "before: layers[1]", 17) == 0);
    json_decref(good);
    json_decref(bad);
}

static void
test_parts(void)
{
    ts_error err;
    json_t *metric = ts_metric_new(
        TS_PARTIAL, ts_int(3), "FLOPs", "forward", "torchscan_module_formula");
    json_t *text = json_string("a\tb\r\nc");
    CHECK_EQ_INT(ts_metric_result_check(metric, "m", &err), TS_OK);
    json_object_set_new(metric, "value", json_integer(3));
    CHECK_EQ_INT(ts_metric_result_check(metric, "totals.m", &err), TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "totals.m: value: a partial metric needs None, got 3");
    CHECK_EQ_INT(ts_json_data_check(text, "x", &err), TS_OK);
    json_decref(text);
    /* the display rule: control characters (C0, DEL, C1) and non-characters
     * are refused, in keys too */
    {
        static const char *const shown[][2] = {
            {"Lin\aear", "x: text holds a control character"},
            {"a\x7f", "x: text holds a control character"},
            {"a\xc2\x85"
             "b",
             "x: text holds a control character"},
            {"a\xef\xbf\xbf"
             "b",
             "x: text holds a non-character (U+FFFE or U+FFFF)"},
        };
        for (size_t k = 0; k < sizeof shown / sizeof shown[0]; k++) {
            text = json_string(shown[k][0]);
            CHECK_EQ_INT(ts_json_data_check(text, "x", &err), TS_EFORMAT);
            CHECK_EQ_STR(err.message, shown[k][1]);
            json_decref(text);
        }
        text = json_object();
        json_object_set_new(text, "a\x01", json_null());
        CHECK_EQ_INT(ts_json_data_check(text, "x", &err), TS_EFORMAT);
        CHECK_EQ_STR(err.message, "x: a key holds a control character");
        json_decref(text);
    }
    text = json_stringn("a\0b", 3);
    CHECK_EQ_INT(ts_json_data_check(text, "x", &err), TS_EFORMAT);
    CHECK_EQ_STR(err.message, "x: text holds a NUL character");
    json_decref(text);
    /* deeper than 512 levels */
    text = json_array();
    for (int k = 0; k < 600; k++) {
        json_t *outer = json_array();
        json_array_append_new(outer, text);
        text = outer;
    }
    CHECK_EQ_INT(ts_json_data_check(text, "x", &err), TS_EFORMAT);
    CHECK(strstr(err.message, "nested too deeply") != NULL);
    json_decref(text);
    json_decref(metric);
}

int
main(void)
{
    test_valid();
    test_hostile();
    test_phases();
    test_compare();
    test_parts();
    return ts_test_report();
}
