/* export.c paths test_export.c leaves out: names and formats out of
 * range, refused options and layers, parameter sums past int64, Markdown
 * escapes of control characters, folded stacks with escaped frames, a
 * root named by its type or "model", rounded and unrepresentable reals. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/export.h"

static json_t *
parse(const char *text)
{
    json_error_t error;
    json_t *v = json_loads(text, 0, &error);
    if (v == NULL) {
        fprintf(stderr, "bad fixture: %s\n", error.text);
    }
    return v;
}

#define C(v)                                                      \
    "{\"status\":\"complete\",\"value\":" v ",\"known_value\":" v \
    ",\"unit\":\"FLOPs\",\"scope\":\"module_call\",\"method\":\"f\"}"
#define U                                                              \
    "{\"status\":\"unavailable\",\"value\":null,\"known_value\":null," \
    "\"unit\":\"FLOPs\",\"scope\":\"module_call\",\"method\":\"f\"}"

static char *
run(const json_t *r,
    int format,
    int metric,
    ts_export_stats *st,
    ts_error *err)
{
    ts_export_options o = {(ts_export_format)format, metric};
    return ts_export_report(r, &o, st, err);
}

static void
test_names_and_options(void)
{
    ts_error err;
    json_t *r = parse("{\"layers\":[]}");
    CHECK(ts_export_format_name(-1) == NULL);
    CHECK(ts_export_format_name(3) == NULL);
    CHECK_EQ_STR(ts_export_format_name(TS_EXPORT_FOLDED), "folded");
    CHECK_EQ_INT(ts_export_format_parse(NULL), -1);
    CHECK_EQ_INT(ts_export_format_parse("xml"), -1);
    CHECK_EQ_INT(ts_export_format_parse("markdown"), TS_EXPORT_MARKDOWN);
    CHECK(ts_export_metric_name(-1) == NULL);
    CHECK(ts_export_metric_name(TS_EXPORT_NMETRICS) == NULL);
    CHECK_EQ_INT(ts_export_metric_parse(NULL), -1);
    CHECK_EQ_INT(ts_export_metric_parse("parameter_bytes"),
                 TS_EXPORT_PARAMETER_BYTES);
    CHECK(ts_export_report(r, NULL, NULL, &err) == NULL);
    CHECK_EQ_STR(err.message, "unknown export format or metric");
    CHECK(run(r, 7, 0, NULL, &err) == NULL);
    CHECK(run(r, TS_EXPORT_CSV, TS_EXPORT_NMETRICS, NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    json_decref(r);
    r = parse("{\"layers\":{}}");
    CHECK(run(r, TS_EXPORT_CSV, -1, NULL, &err) == NULL);
    CHECK_EQ_STR(err.message, "layers: expected a list");
    json_decref(r);
    /* an empty folded export is the empty string */
    r = parse("{\"layers\":[]}");
    char *text = run(r, TS_EXPORT_FOLDED, -1, NULL, &err);
    CHECK_EQ_STR(text, "");
    free(text);
    json_decref(r);
}

static void
test_refused_rows(void)
{
    ts_error err;
    json_t *r = parse("{\"layers\":[{\"path\":\"a\"}]}");
    CHECK(run(r, TS_EXPORT_CSV, -1, NULL, &err) == NULL);
    CHECK_EQ_STR(err.message,
                 "layers[0]: expected a layer with path and call_index");
    json_decref(r);
    r = parse(
        "{\"layers\":[{\"path\":\"a\",\"call_index\":0,\"parameters\":"
        "{\"trainable\":9223372036854775807,\"frozen\":1}}]}");
    CHECK(run(r, TS_EXPORT_CSV, TS_EXPORT_PARAMETERS, NULL, &err) == NULL);
    CHECK_EQ_STR(err.message,
                 "layers[0].parameters: expected non-negative counts whose "
                 "sum fits 64 bits");
    json_decref(r);
    r = parse(
        "{\"layers\":[{\"path\":\"a\",\"call_index\":0,\"parameters\":"
        "{\"bytes\":-4}}]}");
    CHECK(run(r, TS_EXPORT_MARKDOWN, TS_EXPORT_PARAMETER_BYTES, NULL, &err)
          == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    json_decref(r);
    /* a real past 2^63 has no folded count */
    r = parse(
        "{\"layers\":[{\"path\":\"\",\"call_index\":0,\"metrics\":"
        "{\"module_flops\":" C("1e19") "}}]}");
    CHECK(run(r, TS_EXPORT_FOLDED, -1, NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EOVERFLOW);
    CHECK_EQ_STR(err.message,
                 "layers[0].module_flops does not fit a 64-bit count");
    json_decref(r);
}

static void
test_folded_frames(void)
{
    ts_error err;
    ts_export_stats st;
    /* root without a name: its type; frames escape % and ; and control
     * characters; 2.5 rounds to 2 (to even), 3.4 to 3; an unavailable
     * row is left out, a row without the metric counted as such, a
     * complete zero drawn nowhere */
    json_t *r = parse(
        "{\"layers\":["
        "{\"path\":\"\",\"call_index\":0,\"name\":\"\",\"type\":\"Net\","
        "\"metrics\":{\"module_flops\":" C("0") "}},"
        "{\"path\":\"a%b\",\"call_index\":0,\"metrics\":{\"module_flops\":"
        C("2.5") "}},"
        "{\"path\":\"a%b.c;d\\u0001\",\"call_index\":0,\"metrics\":"
        "{\"module_flops\":" C("3.4") "}},"
        "{\"path\":\"u\",\"call_index\":0,\"metrics\":{\"module_flops\":" U
        "}},"
        "{\"path\":\"w\",\"call_index\":0,\"metrics\":{}}]}");
    char *text = run(r, TS_EXPORT_FOLDED, TS_EXPORT_MODULE_FLOPS, &st, &err);
    CHECK_EQ_STR(text, "Net;a%25b 2\nNet;a%25b;a%25b.c%3Bd%01 3\n");
    CHECK_EQ_INT(st.rows, 2);
    CHECK_EQ_INT(st.left_out, 1);
    CHECK_EQ_INT(st.without, 1);
    CHECK_EQ_INT(st.rounded, 2);
    free(text);
    /* without a name or type the root frame is "model"; no root row at
     * all gives the same */
    json_object_del(json_array_get(json_object_get(r, "layers"), 0), "type");
    text = run(r, TS_EXPORT_FOLDED, -1, &st, &err);
    CHECK(text != NULL && strncmp(text, "model;a%25b 2\n", 14) == 0);
    free(text);
    json_array_remove(json_object_get(r, "layers"), 0);
    text = run(r, TS_EXPORT_FOLDED, -1, &st, &err);
    CHECK(text != NULL && strncmp(text, "model;a%25b 2\n", 14) == 0);
    free(text);
    json_decref(r);
}

static void
test_markdown_escapes(void)
{
    ts_error err;
    ts_export_stats st;
    json_t *r = parse(
        "{\"layers\":[{\"path\":\"x\\u0007|y\",\"call_index\":0,\"depth\":1,"
        "\"type\":\"T\\u007f*\",\"metrics\":{\"macs\":" U "}}]}");
    char *text = run(r, TS_EXPORT_MARKDOWN, TS_EXPORT_MACS, &st, &err);
    CHECK(text != NULL);
    CHECK(text != NULL
          && strstr(text, "| x&#x07;\\|y | T&#x7F;\\* | 0 | 1 | unavailable |")
                 != NULL);
    free(text);
    json_decref(r);
}

int
main(void)
{
    test_names_and_options();
    test_refused_rows();
    test_folded_frames();
    test_markdown_escapes();
    return ts_test_report();
}
