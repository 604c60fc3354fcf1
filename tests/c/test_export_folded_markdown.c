/* Folded and Markdown exports at their edges: the root frame from the
 * root's type, or "model"; DEL in frames and cells; a real value below 0
 * or past 2^63 refused; rows and parameters that are malformed. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "torchscan/export.h"

static char *
export_text(const char *json,
            ts_export_format format,
            int metric,
            ts_error *err)
{
    json_error_t jerr;
    json_t *report = json_loads(json, 0, &jerr);
    ts_export_options opt = {format, metric};
    char *text;
    CHECK(report != NULL);
    ts_error_clear(err);
    text = ts_export_report(report, &opt, NULL, err);
    json_decref(report);
    return text;
}

#define FLOPS(v)                                                  \
    "\"metrics\": {\"module_flops\": {\"status\": \"complete\", " \
    "\"value\": " v ", \"known_value\": " v "}}"

static void
test_root_frames(void)
{
    ts_error err;
    char *text;
    /* the root has a type but an empty name: the type names the stacks */
    text = export_text(
        "{\"layers\": [{\"path\": \"\", \"call_index\": 0, "
        "\"name\": \"\", \"type\": \"Net\"}, {\"path\": "
        "\"a\\u007fb\", \"call_index\": 0, " FLOPS("5") "}]}",
        TS_EXPORT_FOLDED,
        -1,
        &err);
    CHECK_EQ_STR(text, "Net;a%7Fb 5\n");
    free(text);
    /* neither: "model" */
    text = export_text(
        "{\"layers\": [{\"path\": \"\", \"call_index\": 0, "
        "\"type\": \"\"}, {\"path\": \"a\", \"call_index\": "
        "0, " FLOPS("2") "}]}",
        TS_EXPORT_FOLDED,
        -1,
        &err);
    CHECK_EQ_STR(text, "model;a 2\n");
    free(text);
    /* DEL in a Markdown cell is a character reference */
    text = export_text(
        "{\"layers\": [{\"path\": \"x\\u007f\", "
        "\"call_index\": 0, " FLOPS("1") "}]}",
        TS_EXPORT_MARKDOWN,
        TS_EXPORT_MODULE_FLOPS,
        &err);
    CHECK(text != NULL && strstr(text, "| x&#x7F; |") != NULL);
    free(text);
}

static void
test_refusals(void)
{
    ts_error err;
    /* real values below 0 and past 2^63 do not fit a count */
    CHECK(export_text(
              "{\"layers\": [{\"path\": \"a\", \"call_index\": 0, " FLOPS(
                  "-2.5") "}]}",
              TS_EXPORT_FOLDED,
              -1,
              &err)
          == NULL);
    CHECK_EQ_INT(err.code, TS_EOVERFLOW);
    CHECK_EQ_STR(err.message,
                 "layers[0].module_flops does not fit a 64-bit count");
    CHECK(export_text(
              "{\"layers\": [{\"path\": \"a\", \"call_index\": 0, " FLOPS(
                  "1e19") "}]}",
              TS_EXPORT_FOLDED,
              -1,
              &err)
          == NULL);
    CHECK_EQ_INT(err.code, TS_EOVERFLOW);
    /* rows: not an object, a path that is not text, no call_index */
    CHECK(export_text("{\"layers\": [3]}", TS_EXPORT_CSV, -1, &err) == NULL);
    CHECK_EQ_STR(err.message,
                 "layers[0]: expected a layer with path and call_index");
    CHECK(export_text("{\"layers\": [{\"path\": 1, \"call_index\": 0}]}",
                      TS_EXPORT_CSV,
                      -1,
                      &err)
          == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK(
        export_text(
            "{\"layers\": [{\"path\": \"a\"}]}", TS_EXPORT_MARKDOWN, -1, &err)
        == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    /* parameter counts: negative, and a sum past 2^63 */
    CHECK(export_text("{\"layers\": [{\"path\": \"a\", \"call_index\": 0, "
                      "\"parameters\": {\"trainable\": -1, \"frozen\": 0}}]}",
                      TS_EXPORT_FOLDED,
                      TS_EXPORT_PARAMETERS,
                      &err)
          == NULL);
    CHECK_EQ_STR(err.message,
                 "layers[0].parameters: expected non-negative counts whose "
                 "sum fits 64 bits");
    CHECK(export_text("{\"layers\": [{\"path\": \"a\", \"call_index\": 0, "
                      "\"parameters\": {\"trainable\": 9223372036854775807, "
                      "\"frozen\": 1}}]}",
                      TS_EXPORT_FOLDED,
                      TS_EXPORT_PARAMETERS,
                      &err)
          == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK(export_text("{\"layers\": [{\"path\": \"a\", \"call_index\": 0, "
                      "\"parameters\": {\"trainable\": 1, \"frozen\": -4}}]}",
                      TS_EXPORT_CSV,
                      TS_EXPORT_PARAMETERS,
                      &err)
          == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
}

int
main(void)
{
    test_root_frames();
    test_refusals();
    return ts_test_report();
}
