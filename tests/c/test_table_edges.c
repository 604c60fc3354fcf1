/* table.c paths test_table.c leaves out: output metadata of every kind
 * and its refusals (not an object, kinds, shapes, items, nesting), real
 * and refused depths, overflowing parameter counts, receptive-field cells
 * and totals that are partial, missing or malformed, a lone row's cells,
 * and the depth-limited view's refusals. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/table.h"

#define TENSOR(dims)                        \
    "{\"kind\":\"tensor\",\"shape\":[" dims \
    "],\"dtype\":\"torch.float32\","        \
    "\"device\":\"cpu\",\"requires_grad\":false}"

#define METRIC(status, value, known, unit, scope, method)                   \
    "{\"status\":\"" status "\",\"value\":" value ",\"known_value\":" known \
    ",\"unit\":\"" unit "\",\"scope\":\"" scope "\",\"method\":\"" method   \
    "\"}"

#define COMPLETE(value, unit, scope, method) \
    METRIC("complete", value, value, unit, scope, method)

#define CALLS COMPLETE("1", "calls", "module_call", "pytorch_hook")

#define RF(rf, stride, padding) \
    ",\"receptive_field\":"                                                  \
    COMPLETE(rf, "elements", "module_call", "torchscan_module_formula")      \
    ",\"effective_stride\":"                                                 \
    COMPLETE(stride, "elements", "module_call", "torchscan_module_formula")  \
    ",\"effective_padding\":"                                                \
    COMPLETE(padding, "elements", "module_call", "torchscan_module_formula")

#define NO_RF \
    ",\"receptive_field\":"                                                \
    METRIC("unavailable", "null", "null", "elements", "module_call",       \
           "torchscan_module_formula")                                     \
    ",\"effective_stride\":"                                               \
    METRIC("unavailable", "null", "null", "elements", "module_call",       \
           "torchscan_module_formula")                                     \
    ",\"effective_padding\":"                                              \
    METRIC("unavailable", "null", "null", "elements", "module_call",       \
           "torchscan_module_formula")

#define LAYER(                                                             \
    path, name, depth, type, output, trainable, frozen, buffers, metrics)  \
    "{\"path\":\"" path "\",\"call_index\":0,\"name\":\"" name             \
    "\",\"depth\":" depth ",\"type\":\"" type                              \
    "\","                                                                  \
    "\"input\":{\"args\":[],\"kwargs\":{}},\"output\":" output             \
    ",\"parameters\":{\"trainable\":" trainable ",\"frozen\":" frozen      \
    ",\"bytes\":0,\"shared\":false},\"buffers\":{\"elements\":" buffers    \
    ",\"bytes\":0,\"shared\":false},\"metrics\":{\"calls\":" CALLS metrics \
    "}}"

#define MODEL_TOTAL(key, value, unit) \
    "\"" key "\":" COMPLETE(value, unit, "model", "pytorch")

#define PARAM_TOTALS(params, trainable, frozen, param_bytes, buf, buf_bytes) \
    MODEL_TOTAL("parameters", params, "elements")                            \
    "," MODEL_TOTAL("trainable_parameters", trainable, "elements")           \
    "," MODEL_TOTAL("frozen_parameters", frozen, "elements")                 \
    "," MODEL_TOTAL("parameter_bytes", param_bytes, "bytes")                 \
    "," MODEL_TOTAL("buffer_elements", buf, "elements")                      \
    "," MODEL_TOTAL("buffer_bytes", buf_bytes, "bytes")

#define FORWARD(status, value, known, unit) \
    METRIC(status, value, known, unit, "forward", "torchscan_module_formula")

#define OPERATOR(status, value, known) \
    METRIC(status,                     \
           value,                      \
           known,                      \
           "FLOPs",                    \
           "workload",                 \
           "torch.utils.flop_counter.FlopCounterMode")


/* One Linear row (depth 0) under model totals. */
static json_t *
base(void)
{
    json_error_t error;
    json_t *r = json_loads(
        "{\"layers\":[" LAYER("", "net", "0", "Net", TENSOR("2,3"), "6", "0",
                              "0", RF("1", "1", "0")) "],\"totals\":{"
        PARAM_TOTALS("6", "6", "0", "24", "0", "0")
        ",\"module_flops\":" FORWARD("complete", "12", "12", "FLOPs")
        ",\"macs\":" FORWARD("partial", "null", "6", "MACs")
        ",\"dmas\":" FORWARD("unavailable", "null", "null", "DMAs")
        "},\"diagnostics\":[]}",
        0,
        &error);
    if (r == NULL) {
        fprintf(stderr, "fixture: %s at %d\n", error.text, error.column);
    }
    return r;
}

static json_t *
layer0(json_t *r)
{
    return json_array_get(json_object_get(r, "layers"), 0);
}

static json_t *
parse(const char *text)
{
    json_error_t error;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &error);
    if (v == NULL) {
        fprintf(stderr, "bad value %s: %s\n", text, error.text);
    }
    return v;
}

/* The table of `r` with the receptive-field columns; NULL with err. */
static char *
table(const json_t *r, ts_error *err)
{
    ts_table_options o = {TS_WRAP_MID, true, true, -1};
    return ts_format_summary(r, &o, err);
}

/* layer0[key] = value; the table is refused with `message`. */
static void
refuse_layer(const char *key, const char *value, int code, const char *message)
{
    json_t *r = base();
    ts_error err;
    json_object_set_new(layer0(r), key, parse(value));
    char *text = table(r, &err);
    if (text != NULL || strcmp(err.message, message) != 0) {
        fprintf(stderr, "%s=%s: \"%s\"\n", key, value, err.message);
    }
    CHECK(text == NULL);
    CHECK_EQ_INT(err.code, code);
    CHECK_EQ_STR(err.message, message);
    free(text);
    json_decref(r);
}

/* layer0.output = value; the table holds `part`. */
static void
shows_output(const char *value, const char *part)
{
    json_t *r = base();
    ts_error err;
    json_object_set_new(layer0(r), "output", parse(value));
    char *text = table(r, &err);
    if (text == NULL || strstr(text, part) == NULL) {
        fprintf(stderr,
                "output %s: %s\n%s\n",
                value,
                err.message,
                text ? text : "(null)");
    }
    CHECK(text != NULL && strstr(text, part) != NULL);
    free(text);
    json_decref(r);
}

static void
test_outputs(void)
{
    shows_output("{\"kind\":null}", "None");
    shows_output("{}", "None");
    shows_output("{\"kind\":\"none\"}", "none");
    shows_output("{\"kind\":\"tensor\",\"shape\":[5]}", "(5,)");
    shows_output("{\"kind\":\"list\",\"items\":[" TENSOR("2") ","
                 "{\"kind\":\"tuple\",\"items\":[]}]}",
                 "[(2,), ()]");
    shows_output(
        "{\"kind\":\"mapping\",\"items\":[{\"key\":\"a\","
        "\"value\":" TENSOR("1,2") "}]}",
        "{(1, 2)}");
    refuse_layer(
        "output", "[]", TS_EFORMAT, "output metadata is not an object");
    refuse_layer("output",
                 "{\"kind\":3}",
                 TS_EFORMAT,
                 "output metadata 'kind' is not a string");
    refuse_layer("output",
                 "{\"kind\":\"tensor\"}",
                 TS_EFORMAT,
                 "tensor metadata lacks 'shape'");
    refuse_layer("output",
                 "{\"kind\":\"tensor\",\"shape\":[1,\"s\"]}",
                 TS_EFORMAT,
                 "tensor shape holds a non-integer");
    refuse_layer("output",
                 "{\"kind\":\"tuple\"}",
                 TS_EFORMAT,
                 "tuple metadata lacks 'items'");
    refuse_layer("output",
                 "{\"kind\":\"mapping\",\"items\":[{\"key\":\"a\"}]}",
                 TS_EFORMAT,
                 "mapping item lacks 'value'");
    /* 1100 nested tuples */
    {
        json_t *r = base();
        json_t *meta = parse("{\"kind\":\"none\"}");
        ts_error err;
        for (int i = 0; i < 1100; i++) {
            meta = json_pack("{s:s, s:[o]}", "kind", "tuple", "items", meta);
        }
        json_object_set_new(layer0(r), "output", meta);
        char *text = table(r, &err);
        CHECK(text == NULL);
        CHECK_EQ_STR(err.message, "output metadata is nested too deeply");
        free(text);
        json_decref(r);
    }
}

static void
test_fields(void)
{
    json_t *r = base();
    ts_error err;
    char *text;
    /* a real depth is truncated like Python's int() */
    json_object_set_new(layer0(r), "depth", json_real(0.75));
    text = table(r, &err);
    CHECK(text != NULL && strstr(text, "net ") != NULL);
    free(text);
    json_decref(r);
    refuse_layer("depth",
                 "1e300",
                 TS_EFORMAT,
                 "report layer 0 field 'depth' is not an integer");
    refuse_layer("depth",
                 "\"0\"",
                 TS_EFORMAT,
                 "report layer 0 field 'depth' is not an integer");
    refuse_layer("depth",
                 "100001",
                 TS_EFORMAT,
                 "report layer 0: depth 100001 is beyond 100000");
    refuse_layer(
        "name", "1", TS_EFORMAT, "report layer 0 lacks string 'name'");
    refuse_layer("buffers",
                 "[]",
                 TS_EFORMAT,
                 "report layer 0 lacks 'output', 'parameters', 'buffers' or "
                 "'metrics'");
    refuse_layer("parameters",
                 "{\"trainable\":9223372036854775807,\"frozen\":1}",
                 TS_EOVERFLOW,
                 "report layer 0 parameter count overflows");
    refuse_layer("parameters",
                 "{\"trainable\":1}",
                 TS_EFORMAT,
                 "report layer 0 parameters lacks 'frozen'");
    refuse_layer("buffers",
                 "{\"elements\":null}",
                 TS_EFORMAT,
                 "report layer 0 buffers field 'elements' is not an integer");
}

/* The receptive-field cells: partial values show their bound, a missing
 * metric "?", malformed ones are refused. */
static void
test_rf_cells(void)
{
    json_t *r = base();
    json_t *metrics = json_object_get(layer0(r), "metrics");
    ts_error err;
    char *text;
    json_object_set_new(
        metrics,
        "receptive_field",
        parse(METRIC("partial", "null", "7", "elements", "module_call", "f")));
    json_object_del(metrics, "effective_stride");
    text = table(r, &err);
    CHECK(text != NULL && strstr(text, "7  ") != NULL);
    CHECK(text != NULL && strstr(text, " ? ") != NULL);
    free(text);
    json_object_set_new(metrics, "receptive_field", parse("{}"));
    CHECK(table(r, &err) == NULL);
    CHECK_EQ_STR(err.message, "metric 'receptive_field' lacks 'status'");
    json_object_set_new(
        metrics, "receptive_field", parse("{\"status\":\"complete\"}"));
    CHECK(table(r, &err) == NULL);
    CHECK_EQ_STR(err.message, "metric 'receptive_field' lacks its value");
    json_object_set_new(metrics,
                        "receptive_field",
                        parse("{\"status\":\"complete\",\"value\":\"3\"}"));
    CHECK(table(r, &err) == NULL);
    CHECK_EQ_STR(err.message,
                 "metric 'receptive_field' value is not a number");
    json_decref(r);
}

/* totals[key] = value; refused with `message`. */
static void
refuse_total(const char *key, const char *value, const char *message)
{
    json_t *r = base();
    ts_error err;
    if (value == NULL) {
        json_object_del(json_object_get(r, "totals"), key);
    }
    else {
        json_object_set_new(json_object_get(r, "totals"), key, parse(value));
    }
    char *text = table(r, &err);
    if (text != NULL || strcmp(err.message, message) != 0) {
        fprintf(stderr, "totals.%s: \"%s\"\n", key, err.message);
    }
    CHECK(text == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK_EQ_STR(err.message, message);
    free(text);
    json_decref(r);
}

static void
test_totals(void)
{
    json_t *r = base();
    ts_error err;
    char *text = table(r, &err);
    /* 12 FLOPs, a partial 6 MACs, unavailable DMAs */
    CHECK(text != NULL
          && strstr(text, "Module-formula forward FLOPs: 12.00 FLOPs")
                 != NULL);
    CHECK(text != NULL
          && strstr(text, "Multiply-Accumulations: known 6.00 MACs") != NULL);
    CHECK(text != NULL
          && strstr(text, "Direct memory accesses: unavailable") != NULL);
    free(text);
    json_decref(r);
    refuse_total("parameters", NULL, "report totals lack 'parameters'");
    refuse_total("parameters",
                 "{\"status\":\"complete\"}",
                 "total 'parameters' lacks 'value'");
    refuse_total("parameters",
                 "{\"value\":\"6\"}",
                 "total 'parameters' value is not an integer");
    refuse_total("parameter_bytes",
                 "{\"value\":\"24\"}",
                 "total 'parameter_bytes' lacks a numeric value");
    refuse_total(
        "buffer_bytes", "{}", "total 'buffer_bytes' lacks a numeric value");
    refuse_total("macs", "{\"value\":1}", "total 'macs' lacks 'status'");
    refuse_total(
        "macs", "{\"status\":\"partial\"}", "total 'macs' lacks its value");
    refuse_total("macs",
                 "{\"status\":\"complete\",\"value\":6}",
                 "total 'macs' lacks a numeric value or a unit");
    refuse_total("macs",
                 "{\"status\":\"complete\",\"value\":\"6\",\"unit\":\"MACs\"}",
                 "total 'macs' lacks a numeric value or a unit");
    refuse_total("operator_flops", "3", "report totals lack 'operator_flops'");
}

static void
test_line_and_depth(void)
{
    json_t *r = base();
    ts_error err;
    ts_table_text cells[8];
    int count = -1;
    const int64_t widths[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    json_t *num = json_integer(3);
    CHECK_EQ_INT(
        ts_table_line(
            num, widths, TS_WRAP_MID, true, true, cells, &count, &err),
        TS_EFORMAT);
    CHECK_EQ_STR(err.message, "layer is not an object");
    CHECK_EQ_INT(count, 0);
    json_decref(num);
    /* a lone layer's errors name it as "layer" */
    json_object_set_new(layer0(r), "depth", json_string("x"));
    CHECK_EQ_INT(
        ts_table_line(
            layer0(r), widths, TS_WRAP_MID, false, false, cells, &count, &err),
        TS_EFORMAT);
    CHECK_EQ_STR(err.message, "layer field 'depth' is not an integer");
    json_object_set_new(layer0(r), "depth", json_integer(0));
    CHECK_EQ_INT(
        ts_table_line(
            layer0(r), widths, TS_WRAP_MID, true, false, cells, &count, &err),
        TS_OK);
    CHECK_EQ_INT(count, 6);
    CHECK_EQ_STR(cells[0].data, "net");
    CHECK_EQ_STR(cells[3].data, "6");
    ts_table_texts_free(cells, count);

    CHECK(ts_table_limit_depth(json_object_get(r, "layers"), 0, &err) == NULL);
    CHECK_EQ_STR(err.message, "report lacks a 'layers' list");
    CHECK(ts_table_limit_depth(r, -1, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message, "max_depth must be non-negative.");
    json_t *view = ts_table_limit_depth(r, 0, &err);
    CHECK(view != NULL
          && json_array_size(json_object_get(view, "layers")) == 1);
    json_decref(view);
    json_decref(r);
}

int
main(void)
{
    test_outputs();
    test_fields();
    test_rf_cells();
    test_totals();
    test_line_and_depth();
    return ts_test_report();
}
