/* compare_reports (contract 1.5). The fixtures mirror reports of the
 * reference crawler (trimmed to what a diff reads) and the expected JSON was
 * printed by the reference's compare_reports (torchscan 0.2.0) with
 * json.dumps(separators=(",", ":")), which is jansson's JSON_COMPACT. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/diff.h"

/* ---- fixture builders ---- */

#define METRIC(status, value, known, unit, scope, method)                   \
    "{\"status\":\"" status "\",\"value\":" value ",\"known_value\":" known \
    ",\"unit\":\"" unit "\",\"scope\":\"" scope "\",\"method\":\"" method   \
    "\"}"

#define COMPLETE(value, unit, scope, method) \
    METRIC("complete", value, value, unit, scope, method)

#define FORMULA(value, unit) \
    COMPLETE(value, unit, "module_call", "torchscan_module_formula")

#define CALLS \
    "\"calls\":" COMPLETE("1", "calls", "module_call", "pytorch_hook")

#define MODEL(key, value, unit) \
    "\"" key "\":" COMPLETE(value, unit, "model", "pytorch")

#define FORWARD(key, value, unit) \
    "\"" key "\":" COMPLETE(value, unit, "forward", "torchscan_module_formula")

/* crawl_module(nn.Conv2d(3, out, 3), (3, 32, 32)) for out = 8 and 12. */
#define CONV_REPORT(params, bytes, flops, macs, dmas) \
    "{\"schema_version\":1,\"layers\":[{\"path\":\"\",\"call_index\":0,"      \
    "\"name\":\"conv2d\",\"depth\":0,\"type\":\"Conv2d\",\"metrics\":{" CALLS \
    ",\"module_flops\":" FORMULA(flops, "FLOPs")                              \
    ",\"macs\":" FORMULA(macs, "MACs") ",\"dmas\":" FORMULA(dmas, "DMAs")     \
    ",\"receptive_field\":" FORMULA("3", "elements")                          \
    ",\"effective_stride\":" FORMULA("1", "elements")                         \
    ",\"effective_padding\":" FORMULA("0", "elements")                        \
    "}}],\"totals\":{" MODEL("parameters", params, "elements")                \
    "," MODEL("trainable_parameters", params, "elements")                     \
    "," MODEL("frozen_parameters", "0", "elements")                           \
    "," MODEL("parameter_bytes", bytes, "bytes")                              \
    "," MODEL("buffer_elements", "0", "elements")                             \
    "," MODEL("buffer_bytes", "0", "bytes")                                   \
    "," FORWARD("module_flops", flops, "FLOPs")                               \
    ",\"operator_flops\":"                                                    \
    COMPLETE(flops, "FLOPs", "workload",                                      \
             "torch.utils.flop_counter.FlopCounterMode")                      \
    "," FORWARD("macs", macs, "MACs") "," FORWARD("dmas", dmas, "DMAs")       \
    "},\"diagnostics\":[]}"

static const char conv8[] =
    CONV_REPORT("224", "896", "388800", "194400", "201824");
static const char conv12[] =
    CONV_REPORT("336", "1344", "583200", "291600", "302736");

static const char e5_layers[] =
    "{\"added\":[],\"removed\":[],\"changed\":[{\"path\":\"\",\"call_index\":"
    "0,\"metrics\":{\"dmas\":{\"status\":\"complete\",\"delta\":100912,"
    "\"before\":{\"status\":\"complete\",\"value\":201824,\"known_value\":"
    "201824,\"unit\":\"DMAs\",\"scope\":\"module_call\",\"method\":"
    "\"torchscan_module_formula\"},\"after\":{\"status\":\"complete\","
    "\"value\":302736,\"known_value\":302736,\"unit\":\"DMAs\",\"scope\":"
    "\"module_call\",\"method\":\"torchscan_module_formula\"}},\"macs\":{"
    "\"status\":\"complete\",\"delta\":97200,\"before\":{\"status\":"
    "\"complete\",\"value\":194400,\"known_value\":194400,\"unit\":\"MACs\","
    "\"scope\":\"module_call\",\"method\":\"torchscan_module_formula\"},"
    "\"after\":{\"status\":\"complete\",\"value\":291600,\"known_value\":"
    "291600,\"unit\":\"MACs\",\"scope\":\"module_call\",\"method\":"
    "\"torchscan_module_formula\"}},\"module_flops\":{\"status\":"
    "\"complete\",\"delta\":194400,\"before\":{\"status\":\"complete\","
    "\"value\":388800,\"known_value\":388800,\"unit\":\"FLOPs\",\"scope\":"
    "\"module_call\",\"method\":\"torchscan_module_formula\"},\"after\":{"
    "\"status\":\"complete\",\"value\":583200,\"known_value\":583200,"
    "\"unit\":\"FLOPs\",\"scope\":\"module_call\",\"method\":"
    "\"torchscan_module_formula\"}}}}]}";

static const char e5_parameters[] =
    "{\"status\":\"complete\",\"delta\":112,\"before\":{\"status\":"
    "\"complete\",\"value\":224,\"known_value\":224,\"unit\":\"elements\","
    "\"scope\":\"model\",\"method\":\"pytorch\"},\"after\":{\"status\":"
    "\"complete\",\"value\":336,\"known_value\":336,\"unit\":\"elements\","
    "\"scope\":\"model\",\"method\":\"pytorch\"}}";

/* Layer calls that are kept, added, removed and changed. Keys sort by path
 * code point ("a.b" < "a0" since '.' < '0'), then by call_index as a number
 * (2 < 10). */
#define LAYER(path, index, metrics)                \
    "{\"path\":\"" path "\",\"call_index\":" index \
    ",\"metrics\":{" CALLS metrics "}}"
#define FLOPS(value) ",\"module_flops\":" FORMULA(value, "FLOPs")
#define PARTIAL_FLOPS(known)                   \
    ",\"module_flops\":" METRIC("partial",     \
                                "null",        \
                                known,         \
                                "FLOPs",       \
                                "module_call", \
                                "torchscan_module_formula")
#define TOTALS(flops)                                                   \
    "],\"totals\":{" MODEL("parameters", "10", "elements") "," FORWARD( \
        "module_flops", flops, "FLOPs") "},\"diagnostics\":[]}"

static const char calls_before[] =
    "{\"schema_version\":1,\"layers\":[" LAYER("", "0", FLOPS("100")) ","
    LAYER("a0", "0", FLOPS("5")) "," LAYER("a", "10", FLOPS("7")) ","
    LAYER("a", "2", FLOPS("7")) "," LAYER("a.b", "0", PARTIAL_FLOPS("3")) ","
    LAYER("gone", "0", "") TOTALS("112");
static const char calls_after[] =
    "{\"schema_version\":1,\"layers\":[" LAYER("", "0", FLOPS("100.0")) ","
    LAYER("a0", "0", FLOPS("6")) "," LAYER("a", "2", FLOPS("7")) ","
    LAYER("a", "10", FLOPS("9")) "," LAYER("a.b", "0", FLOPS("4")) ","
    LAYER("new", "1", FLOPS("1")) TOTALS("120.5");

static const char calls_layers[] =
    "{\"added\":[{\"path\":\"new\",\"call_index\":1,\"metrics\":{\"calls\":{"
    "\"status\":\"complete\",\"value\":1,\"known_value\":1,\"unit\":\"calls\","
    "\"scope\":\"module_call\",\"method\":\"pytorch_hook\"},\"module_flops\":{"
    "\"status\":\"complete\",\"value\":1,\"known_value\":1,\"unit\":\"FLOPs\","
    "\"scope\":\"module_call\",\"method\":\"torchscan_module_formula\"}}}],"
    "\"removed\":[{\"path\":\"gone\",\"call_index\":0,\"metrics\":{\"calls\":{"
    "\"status\":\"complete\",\"value\":1,\"known_value\":1,\"unit\":\"calls\","
    "\"scope\":\"module_call\",\"method\":\"pytorch_hook\"}}}],\"changed\":[{"
    "\"path\":\"a\",\"call_index\":10,\"metrics\":{\"module_flops\":{"
    "\"status\":\"complete\",\"delta\":2,\"before\":{\"status\":\"complete\","
    "\"value\":7,\"known_value\":7,\"unit\":\"FLOPs\",\"scope\":"
    "\"module_call\",\"method\":\"torchscan_module_formula\"},\"after\":{"
    "\"status\":\"complete\",\"value\":9,\"known_value\":9,\"unit\":\"FLOPs\","
    "\"scope\":\"module_call\",\"method\":\"torchscan_module_formula\"}}}},{"
    "\"path\":\"a.b\",\"call_index\":0,\"metrics\":{\"module_flops\":{"
    "\"status\":\"partial\",\"delta\":null,\"before\":{\"status\":"
    "\"partial\",\"value\":null,\"known_value\":3,\"unit\":\"FLOPs\","
    "\"scope\":\"module_call\",\"method\":\"torchscan_module_formula\"},"
    "\"after\":{\"status\":\"complete\",\"value\":4,\"known_value\":4,"
    "\"unit\":\"FLOPs\",\"scope\":\"module_call\",\"method\":"
    "\"torchscan_module_formula\"}}}},{\"path\":\"a0\",\"call_index\":0,"
    "\"metrics\":{\"module_flops\":{\"status\":\"complete\",\"delta\":1,"
    "\"before\":{\"status\":\"complete\",\"value\":5,\"known_value\":5,"
    "\"unit\":\"FLOPs\",\"scope\":\"module_call\",\"method\":"
    "\"torchscan_module_formula\"},\"after\":{\"status\":\"complete\","
    "\"value\":6,\"known_value\":6,\"unit\":\"FLOPs\",\"scope\":"
    "\"module_call\",\"method\":\"torchscan_module_formula\"}}}}]}";

/* ---- helpers ---- */

static json_t *
load(const char *text)
{
    json_error_t error;
    json_t *value = json_loads(text, 0, &error);
    if (value == NULL) {
        fprintf(
            stderr, "fixture: %s at column %d\n", error.text, error.column);
    }
    return value;
}

/* Checks that value dumps (compactly, in its own key order) to expected. */
static void
check_dump(const json_t *value, const char *expected)
{
    char *text = value != NULL ? json_dumps(value, JSON_COMPACT) : NULL;
    CHECK_EQ_STR(text, expected);
    free(text);
}

static json_t *
metric(ts_status status, ts_number value, const char *unit)
{
    return ts_metric_new(
        status, value, unit, "forward", "torchscan_module_formula");
}

/* ---- tests ---- */

static void
test_e5(void)
{
    json_t *before = load(conv8);
    json_t *after = load(conv12);
    json_t *before_copy = json_deep_copy(before);
    json_t *after_copy = json_deep_copy(after);
    ts_error err;
    json_t *diff = ts_compare_reports(before, after, &err);
    json_t *totals = json_object_get(diff, "totals");
    json_t *parameters = json_object_get(totals, "parameters");
    static const char *const total_names[] = {
        "buffer_bytes",
        "buffer_elements",
        "dmas",
        "frozen_parameters",
        "macs",
        "module_flops",
        "operator_flops",
        "parameter_bytes",
        "parameters",
        "trainable_parameters",
    };
    static const long long total_deltas[] = {
        0, 0, 100912, 0, 97200, 194400, 194400, 448, 112, 112};
    size_t k = 0;
    const char *name;
    json_t *entry;

    CHECK(diff != NULL);
    CHECK_EQ_INT(err.code, TS_OK);
    CHECK_EQ_INT(json_integer_value(json_object_get(diff, "schema_version")),
                 1);
    CHECK_EQ_STR(json_string_value(json_object_get(parameters, "status")),
                 "complete");
    CHECK_EQ_INT(json_integer_value(json_object_get(parameters, "delta")),
                 112);
    check_dump(parameters, e5_parameters);
    check_dump(json_object_get(diff, "layers"), e5_layers);

    /* Totals diff every metric, unchanged ones too, in sorted order. */
    CHECK_EQ_INT(json_object_size(totals), 10);
    json_object_foreach(totals, name, entry)
    {
        if (k < 10) {
            CHECK_EQ_STR(name, total_names[k]);
            CHECK(json_is_integer(json_object_get(entry, "delta")));
            CHECK_EQ_INT(json_integer_value(json_object_get(entry, "delta")),
                         total_deltas[k]);
        }
        k++;
    }

    /* Inputs untouched; snapshots are copies, not shared references. */
    CHECK(json_equal(before, before_copy));
    CHECK(json_equal(after, after_copy));
    CHECK(json_object_get(parameters, "before")
          != json_object_get(json_object_get(before, "totals"), "parameters"));
    json_object_set_new(
        json_object_get(parameters, "before"), "value", json_integer(-1));
    CHECK(json_equal(before, before_copy));

    json_decref(diff);
    json_decref(before);
    json_decref(after);
    json_decref(before_copy);
    json_decref(after_copy);
}

static void
test_layer_calls(void)
{
    json_t *before = load(calls_before);
    json_t *after = load(calls_after);
    ts_error err;
    json_t *diff = ts_compare_reports(before, after, &err);
    json_t *again = ts_compare_reports(before, after, &err);
    json_t *flops =
        json_object_get(json_object_get(diff, "totals"), "module_flops");
    char *first = diff != NULL ? json_dumps(diff, JSON_COMPACT) : NULL;
    char *second = again != NULL ? json_dumps(again, JSON_COMPACT) : NULL;

    CHECK(diff != NULL);
    /* "" 100 -> 100.0 is equal in value (Python ==), so not changed; the
     * unchanged call ("a", 2) is absent too. */
    check_dump(json_object_get(diff, "layers"), calls_layers);
    /* An int and a real give a real delta. */
    CHECK(json_is_real(json_object_get(flops, "delta")));
    CHECK_EQ_REAL(json_real_value(json_object_get(flops, "delta")), 8.5);
    CHECK_EQ_STR(first, second);
    free(first);
    free(second);
    json_decref(again);
    json_decref(diff);

    /* The reverse direction swaps added and removed. */
    diff = ts_compare_reports(after, before, &err);
    CHECK_EQ_STR(
        json_string_value(json_object_get(
            json_array_get(
                json_object_get(json_object_get(diff, "layers"), "added"), 0),
            "path")),
        "gone");
    json_decref(diff);
    json_decref(before);
    json_decref(after);
}

static void
test_metric_diffs(void)
{
    json_t *before = json_object();
    json_t *after = json_object();
    json_t *diff;
    json_t *entry;
    ts_error err;
    json_object_set_new(before, "a", metric(TS_COMPLETE, ts_int(5), "FLOPs"));
    json_object_set_new(after, "a", metric(TS_COMPLETE, ts_int(2), "FLOPs"));
    json_object_set_new(
        before, "b", metric(TS_UNAVAILABLE, ts_int(0), "FLOPs"));
    json_object_set_new(after, "b", metric(TS_PARTIAL, ts_int(4), "FLOPs"));
    json_object_set_new(after, "c", metric(TS_COMPLETE, ts_int(1), "FLOPs"));
    json_object_set_new(
        before, "d", metric(TS_COMPLETE, ts_real(0.5), "seconds"));
    json_object_set_new(
        after, "d", metric(TS_COMPLETE, ts_real(0.25), "seconds"));
    json_object_set_new(before, "e", metric(TS_PARTIAL, ts_int(1), "MACs"));
    json_object_set_new(after, "e", metric(TS_COMPLETE, ts_int(1), "MACs"));

    diff = ts_diff_metrics(before, after, &err);
    CHECK(diff != NULL);
    CHECK_EQ_INT(json_object_size(diff), 5);
    entry = json_object_get(diff, "a");
    CHECK_EQ_STR(json_string_value(json_object_get(entry, "status")),
                 "complete");
    CHECK_EQ_INT(json_integer_value(json_object_get(entry, "delta")), -3);
    /* Unavailable wins over partial, partial over complete; no delta. */
    entry = json_object_get(diff, "b");
    CHECK_EQ_STR(json_string_value(json_object_get(entry, "status")),
                 "unavailable");
    CHECK(json_is_null(json_object_get(entry, "delta")));
    entry = json_object_get(diff, "e");
    CHECK_EQ_STR(json_string_value(json_object_get(entry, "status")),
                 "partial");
    CHECK(json_is_null(json_object_get(entry, "delta")));
    /* A metric on one side only is unavailable with a null other side. */
    entry = json_object_get(diff, "c");
    CHECK_EQ_STR(json_string_value(json_object_get(entry, "status")),
                 "unavailable");
    CHECK(json_is_null(json_object_get(entry, "before")));
    CHECK(json_equal(json_object_get(entry, "after"),
                     json_object_get(after, "c")));
    entry = json_object_get(diff, "d");
    CHECK(json_is_real(json_object_get(entry, "delta")));
    CHECK_EQ_REAL(json_real_value(json_object_get(entry, "delta")), -0.25);
    json_decref(diff);

    /* The result does not depend on the inputs' key order. */
    json_decref(after);
    after = json_object();
    json_object_set_new(after, "e", metric(TS_COMPLETE, ts_int(1), "MACs"));
    json_object_set_new(
        after, "d", metric(TS_COMPLETE, ts_real(0.25), "seconds"));
    json_object_set_new(after, "c", metric(TS_COMPLETE, ts_int(1), "FLOPs"));
    json_object_set_new(after, "b", metric(TS_PARTIAL, ts_int(4), "FLOPs"));
    json_object_set_new(after, "a", metric(TS_COMPLETE, ts_int(2), "FLOPs"));
    diff = ts_diff_metrics(before, after, &err);
    {
        const char *name;
        json_t *value;
        const char *expected = "abcde";
        size_t k = 0;
        json_object_foreach(diff, name, value)
        {
            CHECK(k < 5 && name[0] == expected[k] && name[1] == '\0');
            k++;
        }
        (void)value;
    }
    json_decref(diff);

    /* Same name, different unit, scope or method: refused. */
    json_object_set_new(after, "d", metric(TS_COMPLETE, ts_real(1), "ms"));
    diff = ts_diff_metrics(before, after, &err);
    CHECK(diff == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message, "metric 'd' has incompatible unit");
    json_object_set_new(after,
                        "d",
                        ts_metric_new(TS_COMPLETE,
                                      ts_real(1),
                                      "seconds",
                                      "workload",
                                      "torchscan_module_formula"));
    diff = ts_diff_metrics(before, after, &err);
    CHECK(diff == NULL);
    CHECK_EQ_STR(err.message, "metric 'd' has incompatible scope");
    json_object_set_new(
        after,
        "d",
        ts_metric_new(TS_COMPLETE, ts_real(1), "seconds", "forward", "other"));
    diff = ts_diff_metrics(before, after, &err);
    CHECK(diff == NULL);
    CHECK_EQ_STR(err.message, "metric 'd' has incompatible method");

    /* Exact int64 arithmetic: a delta past int64 is refused, not wrapped. */
    json_object_clear(before);
    json_object_clear(after);
    json_object_set_new(
        before, "x", metric(TS_COMPLETE, ts_int(-INT64_MAX), "FLOPs"));
    json_object_set_new(
        after, "x", metric(TS_COMPLETE, ts_int(INT64_MAX), "FLOPs"));
    diff = ts_diff_metrics(before, after, &err);
    CHECK(diff == NULL);
    CHECK_EQ_INT(err.code, TS_EOVERFLOW);

    json_decref(before);
    json_decref(after);
}

static void
test_token_dependencies(void)
{
    json_t *before = load(calls_before);
    json_t *after = load(calls_after);
    json_t *tokens = json_pack("{s:s, s:s, s:s, s:[]}",
                               "status",
                               "complete",
                               "scope",
                               "module_call",
                               "method",
                               "torchscan_token_dependency_v1",
                               "assumptions");
    json_t *before_layers = json_object_get(before, "layers");
    json_t *after_layers = json_object_get(after, "layers");
    ts_error err;
    json_t *diff;
    json_t *changed;
    json_t *entry;

    /* Snapshots of added and removed calls keep token_dependencies. */
    json_object_set(
        json_array_get(before_layers, 5), "token_dependencies", tokens);
    /* ("a", 2): metrics equal, relations differ -> changed, no metrics. */
    json_object_set(
        json_array_get(before_layers, 3), "token_dependencies", tokens);
    json_object_set_new(json_array_get(after_layers, 2),
                        "token_dependencies",
                        json_pack("{s:s}", "status", "unavailable"));
    diff = ts_compare_reports(before, after, &err);
    CHECK(diff != NULL);
    entry = json_array_get(
        json_object_get(json_object_get(diff, "layers"), "removed"), 0);
    CHECK(json_equal(json_object_get(entry, "token_dependencies"), tokens));
    changed = json_object_get(json_object_get(diff, "layers"), "changed");
    CHECK_EQ_INT(json_array_size(changed), 4);
    entry = json_array_get(changed, 0);
    CHECK_EQ_STR(json_string_value(json_object_get(entry, "path")), "a");
    CHECK_EQ_INT(json_integer_value(json_object_get(entry, "call_index")), 2);
    CHECK_EQ_INT(json_object_size(json_object_get(entry, "metrics")), 0);
    check_dump(json_object_get(entry, "token_dependencies"),
               "{\"before\":{\"status\":\"complete\",\"scope\":"
               "\"module_call\",\"method\":\"torchscan_token_dependency_v1\","
               "\"assumptions\":[]},\"after\":{\"status\":\"unavailable\"}}");
    json_decref(diff);
    json_decref(tokens);
    json_decref(before);
    json_decref(after);
}

static void
test_errors(void)
{
    json_t *before = load(conv8);
    json_t *after = load(conv12);
    json_t *layers = json_object_get(after, "layers");
    json_t *layer = json_deep_copy(json_array_get(layers, 0));
    ts_error err;

    json_object_set_new(after, "schema_version", json_integer(2));
    CHECK(ts_compare_reports(before, after, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message, "schema versions differ: 1 != 2");
    json_object_set_new(before, "schema_version", json_integer(2));
    CHECK(ts_compare_reports(before, after, &err) == NULL);
    CHECK_EQ_STR(err.message, "unsupported schema version: 2");
    json_object_set_new(before, "schema_version", json_integer(1));
    json_object_set_new(after, "schema_version", json_integer(1));

    /* The first repeated call in report order is named, as a Python key
     * (by the report check: TS_EFORMAT, a malformed report). */
    json_object_set_new(layer, "path", json_string("it's"));
    json_array_append(layers, layer);
    json_array_append(layers, layer);
    json_array_append(layers, json_array_get(layers, 0));
    CHECK(ts_compare_reports(before, after, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "after contains duplicate layer call (\"it's\", 0)");
    CHECK(ts_compare_reports(after, before, &err) == NULL);
    CHECK_EQ_STR(err.message,
                 "before contains duplicate layer call (\"it's\", 0)");
    json_array_remove(layers, 1);
    CHECK(ts_compare_reports(before, after, &err) == NULL);
    CHECK_EQ_STR(err.message, "after contains duplicate layer call ('', 0)");
    json_array_remove(layers, 2);

    /* A layer metric whose method changed is refused. */
    json_object_set_new(
        json_object_get(json_object_get(json_array_get(layers, 0), "metrics"),
                        "macs"),
        "method",
        json_string("custom"));
    CHECK(ts_compare_reports(before, after, &err) == NULL);
    CHECK_EQ_STR(err.message, "metric 'macs' has incompatible method");

    json_object_del(before, "totals");
    CHECK(ts_compare_reports(before, before, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK(ts_compare_reports(NULL, after, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);

    json_decref(layer);
    json_decref(before);
    json_decref(after);
}

/* Many calls in opposite orders: matching sorts, so this stays fast and
 * still pairs every call. */
static void
test_many_calls(void)
{
    enum {
        CALLS_N = 20000
    };
    json_t *before = load(conv8);
    json_t *after = load(conv8);
    json_t *before_layers = json_array();
    json_t *after_layers = json_array();
    ts_error err;
    json_t *diff;
    for (int k = 0; k < CALLS_N; k++) {
        char path[32];
        snprintf(path, sizeof path, "blocks.%d", k);
        json_array_append_new(
            before_layers,
            json_pack("{s:s, s:i, s:{s:o}}",
                      "path",
                      path,
                      "call_index",
                      k % 3,
                      "metrics",
                      "calls",
                      metric(TS_COMPLETE, ts_int(1), "calls")));
        snprintf(path, sizeof path, "blocks.%d", CALLS_N - 1 - k);
        json_array_append_new(
            after_layers,
            json_pack("{s:s, s:i, s:{s:o}}",
                      "path",
                      path,
                      "call_index",
                      (CALLS_N - 1 - k) % 3,
                      "metrics",
                      "calls",
                      metric(TS_COMPLETE, ts_int(k == 0 ? 2 : 1), "calls")));
    }
    json_object_set_new(before, "layers", before_layers);
    json_object_set_new(after, "layers", after_layers);
    diff = ts_compare_reports(before, after, &err);
    CHECK(diff != NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(
                     json_object_get(diff, "layers"), "added")),
                 0);
    CHECK_EQ_INT(json_array_size(json_object_get(
                     json_object_get(diff, "layers"), "changed")),
                 1);
    json_decref(diff);
    json_decref(before);
    json_decref(after);
}

int
main(void)
{
    test_e5();
    test_layer_calls();
    test_metric_diffs();
    test_token_dependencies();
    test_errors();
    test_many_calls();
    return ts_test_report();
}
