/* Summary table (contract 5.1). The fixtures mirror reports of the reference
 * crawler (trimmed of context and inputs, which the table never reads) and
 * every expected text was printed by the reference's format_info /
 * aggregate_info (torchscan 0.2.0) from the same JSON. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/table.h"

/* ---- fixture builders ---- */

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

/* Fixtures are arrays of pieces joined at load time: ISO C only promises
 * string literals of 4095 characters. */

/* nn.Conv2d(3, 8, 3) on (3, 32, 32). */
static const char *const conv_report[] = {
    "{\"schema_version\":1,\"layers\":[",
    LAYER("", "conv2d", "0", "Conv2d", TENSOR("1,8,30,30"), "224", "0", "0",
          ",\"module_flops\":"
          COMPLETE("388800", "FLOPs", "module_call", "torchscan_module_formula")
          RF("3", "1", "0")),
    "],\"totals\":{" PARAM_TOTALS("224", "224", "0", "896", "0", "0"),
    ",\"module_flops\":" FORWARD("complete", "388800", "388800", "FLOPs")
    ",\"operator_flops\":" OPERATOR("complete", "388800", "388800")
    ",\"macs\":" FORWARD("complete", "194400", "194400", "MACs")
    ",\"dmas\":" FORWARD("complete", "201824", "201824", "DMAs")
    "},\"diagnostics\":[]}",
    NULL,
};

/* A model of depth 4: features (Sequential) > Block > a long-named
 * Sequential > Conv2d/BatchNorm2d; a module returning (tensor, [tensor,
 * None], {"k": tensor}); an LSTM; a Linear with a frozen bias. The DMA total
 * is made unavailable to show that footer form. */
#define T14 TENSOR("1,4,14,14")
#define LONG "a_really_long_submodule_name_here"
static const char *const nested_report[] = {
    "{\"schema_version\":1,\"layers\":[",
    LAYER("", "net", "0", "Net", TENSOR("1,1,2"), "0", "0", "0", "") ",",
    LAYER("features", "features", "1", "Sequential", T14, "0", "0", "0", "") ",",
    LAYER("features.0", "0", "2", "Block", T14, "0", "0", "0", "") ",",
    LAYER("features.0." LONG, LONG, "3", "Sequential", T14, "0", "0", "0", "") ",",
    LAYER("features.0." LONG ".0", "0", "4", "Conv2d", T14, "112", "0", "0",
          RF("3", "1", "0")) ",",
    LAYER("features.0." LONG ".1", "1", "4", "BatchNorm2d", T14, "8", "0", "9",
          RF("1.0", "1.0", "0.0")) ",",
    LAYER("features.0.act", "act", "3", "ReLU", T14, "0", "0", "0",
          RF("1.0", "1.0", "0.0")) ",",
    LAYER("features.1", "1", "2", "Sequential", T14, "0", "0", "0", "") ",",
    LAYER("features.1.0", "0", "3", "Sequential", T14, "0", "0", "0", "") ",",
    LAYER("features.1.0.0", "0", "4", "Identity", T14, "0", "0", "0",
          RF("1.0", "1.0", "0.0")) ",",
    LAYER("multi", "multi", "1", "Multi",
          "{\"kind\":\"tuple\",\"items\":[" T14 ",{\"kind\":\"list\",\"items\":["
          TENSOR("1,1,14,14") ",{\"kind\":\"none\"}]},{\"kind\":\"mapping\","
          "\"type\":\"dict\",\"items\":[{\"key\":\"k\",\"key_type\":\"str\","
          "\"value\":" T14 "}]}]}",
          "0", "0", "0", NO_RF) ",",
    LAYER("lstm", "lstm", "1", "LSTM",
          "{\"kind\":\"tuple\",\"items\":[" TENSOR("1,1,5")
          ",{\"kind\":\"tuple\",\"items\":[" TENSOR("1,1,5") "," TENSOR("1,1,5")
          "]}]}",
          "220", "0", "0", NO_RF) ",",
    LAYER("head", "head", "1", "Linear", TENSOR("1,1,2"), "10", "2", "0",
          RF("1.0", "1.0", "0.0")),
    "],\"totals\":{" PARAM_TOTALS("352", "350", "2", "1408", "9", "40"),
    ",\"module_flops\":" FORWARD("partial", "null", "46284", "FLOPs")
    ",\"operator_flops\":" OPERATOR("partial", "null", "42356")
    ",\"macs\":" FORWARD("partial", "null", "22746", "MACs")
    ",\"dmas\":" FORWARD("unavailable", "null", "null", "DMAs")
    "},\"diagnostics\":[{\"code\":\"unsupported_module_metric\",\"severity\":"
    "\"warning\",\"metric\":\"module_flops\",\"message\":\"m\",\"path\":"
    "\"lstm\"},{\"code\":\"uncounted_operator\",\"severity\":\"warning\","
    "\"metric\":\"operator_flops\",\"message\":\"m\",\"operator\":"
    "\"aten.mean\"}]}",
    NULL,
};

/* Edge cases: dotted and non-ASCII names past the width, counts with
 * separators, buffer-only and frozen-only rows, partial and real receptive
 * fields, every metadata kind, large totals and no operator FLOPs (a
 * structure-like report). */
static const char *const misc_report[] = {
    "{\"schema_version\":1,\"layers\":[",
    LAYER("", "model.with.a.very.long.dotted.name.tail", "0", "Model",
          "{\"kind\":\"tuple\",\"items\":[" TENSOR("5") "]}", "1234567", "0",
          "0", "") ",",
    LAYER("blk", "блок_с_очень_длинным_именем", "1", "Модуль",
          "{\"kind\":\"mapping\",\"type\":\"dict\",\"items\":[{\"key_type\":"
          "\"str\",\"value\":" TENSOR("") "},{\"key\":0,\"key_type\":\"int\","
          "\"value\":{\"kind\":\"scalar\",\"type\":\"int\"}}]}",
          "0", "0", "5",
          ",\"receptive_field\":"
          METRIC("partial", "null", "2.5", "elements", "module_call",
                 "torchscan_module_formula")
          ",\"effective_stride\":"
          COMPLETE("3.5", "elements", "module_call",
                   "torchscan_module_formula")) ",",
    LAYER("blk.frozen", "frozen", "2", "Linear", "{\"kind\":\"failed\"}", "0",
          "1000", "0", "") ",",
    LAYER("blk.nothing", "nothing", "2", "Weird",
          "{\"kind\":\"list\",\"items\":[]}", "0", "0", "0", ""),
    "],\"totals\":{"
    PARAM_TOTALS("1235567", "1234567", "1000", "4942268", "5", "5000000"),
    ",\"module_flops\":" FORWARD("complete", "1000000000000", "1000000000000",
                                 "FLOPs")
    ",\"macs\":" FORWARD("partial", "null", "999", "MACs")
    ",\"dmas\":" FORWARD("complete", "2500000000.0", "2500000000.0", "DMAs")
    "},\"diagnostics\":[]}",
    NULL,
};

/* A report with no rows (an empty totals piece is filled per test). */
static const char *const empty_report[] = {
    "{\"layers\":[],\"totals\":{"
    PARAM_TOTALS("0", "0", "0", "0", "0", "0"),
    ",\"module_flops\":" FORWARD("unavailable", "null", "null", "FLOPs")
    ",\"macs\":" FORWARD("unavailable", "null", "null", "MACs")
    ",\"dmas\":" FORWARD("unavailable", "null", "null", "DMAs")
    "},\"diagnostics\":[]}",
    NULL,
};

/* ---- expected text (printed by the reference) ---- */

static const char conv_expected[] =
    "__________________________________________________________\n"
    "Layer     Type      Output Shape      Param #    Trainable\n"
    "==========================================================\n"
    "conv2d    Conv2d    (1, 8, 30, 30)    224        True     \n"
    "==========================================================\n"
    "Trainable params: 224\n"
    "Non-trainable params: 0\n"
    "Total params: 224\n"
    "----------------------------------------------------------\n"
    "Model size (params + buffers): 0.00 Mb\n"
    "----------------------------------------------------------\n"
    "Module-formula forward FLOPs: 388.80 kFLOPs\n"
    "Multiply-Accumulations: 194.40 kMACs\n"
    "Direct memory accesses: 201.82 kDMAs\n"
    "Operator forward FLOPs: 388.80 kFLOPs\n"
    "__________________________________________________________";

static const char nested_mid_expected[] =
    "_________________________________________________________________________"
    "______________________\n"
    "Layer                          Type           Output Shape               "
    "  Param #    Trainable\n"
    "========================================================================="
    "======================\n"
    "net                            Net            (1, 1, 2)                  "
    "  0          -        \n"
    "├─features                     Sequential     (1, 4, 14, 14)             "
    "  0          -        \n"
    "|    └─0                       Block          (1, 4, 14, 14)             "
    "  0          -        \n"
    "|    |    └─a_really_lon[..    Sequential     (1, 4, 14, 14)             "
    "  0          -        \n"
    "|    |    |    └─0             Conv2d         (1, 4, 14, 14)             "
    "  112        True     \n"
    "|    |    |    └─1             BatchNorm2d    (1, 4, 14, 14)             "
    "  17         True     \n"
    "|    |    └─act                ReLU           (1, 4, 14, 14)             "
    "  0          -        \n"
    "|    └─1                       Sequential     (1, 4, 14, 14)             "
    "  0          -        \n"
    "|    |    └─0                  Sequential     (1, 4, 14, 14)             "
    "  0          -        \n"
    "|    |    |    └─0             Identity       (1, 4, 14, 14)             "
    "  0          -        \n"
    "├─multi                        Multi          ((1, 4, 14, 14), [(1[...]  "
    "  0          -        \n"
    "├─lstm                         LSTM           ((1, 1, 5), ((1, 1, [...]  "
    "  220        True     \n"
    "├─head                         Linear         (1, 1, 2)                  "
    "  12         True     \n"
    "========================================================================="
    "======================\n"
    "Trainable params: 350\n"
    "Non-trainable params: 2\n"
    "Total params: 352\n"
    "-------------------------------------------------------------------------"
    "----------------------\n"
    "Model size (params + buffers): 0.00 Mb\n"
    "-------------------------------------------------------------------------"
    "----------------------\n"
    "Module-formula forward FLOPs: known 46.28 kFLOPs\n"
    "Multiply-Accumulations: known 22.75 kMACs\n"
    "Direct memory accesses: unavailable\n"
    "Operator forward FLOPs: known 42.36 kFLOPs\n"
    "Diagnostics: 2 (inspect report['diagnostics'])\n"
    "_________________________________________________________________________"
    "______________________";

static const char nested_rf_depth2_expected[] =
    "_________________________________________________________________________"
    "_______________________\n"
    "Layer         Type          Output Shape                 Param #    "
    "Trainable    Receptive field\n"
    "========================================================================="
    "=======================\n"
    "net           Net           (1, 1, 2)                    0          -    "
    "        ?              \n"
    "├─features    Sequential    (1, 4, 14, 14)               0          -    "
    "        ?              \n"
    "|    └─0      Block         (1, 4, 14, 14)               0          -    "
    "        ?              \n"
    "|    └─1      Sequential    (1, 4, 14, 14)               0          -    "
    "        ?              \n"
    "├─multi       Multi         ((1, 4, 14, 14), [(1[...]    0          -    "
    "        ?              \n"
    "├─lstm        LSTM          ((1, 1, 5), ((1, 1, [...]    220        True "
    "        ?              \n"
    "├─head        Linear        (1, 1, 2)                    12         True "
    "        1              \n"
    "========================================================================="
    "=======================\n"
    "Trainable params: 350\n"
    "Non-trainable params: 2\n"
    "Total params: 352\n"
    "-------------------------------------------------------------------------"
    "-----------------------\n"
    "Model size (params + buffers): 0.00 Mb\n"
    "-------------------------------------------------------------------------"
    "-----------------------\n"
    "Module-formula forward FLOPs: known 46.28 kFLOPs\n"
    "Multiply-Accumulations: known 22.75 kMACs\n"
    "Direct memory accesses: unavailable\n"
    "Operator forward FLOPs: known 42.36 kFLOPs\n"
    "Diagnostics: 2 (inspect report['diagnostics'])\n"
    "_________________________________________________________________________"
    "_______________________";

static const char misc_expected[] =
    "_________________________________________________________________________"
    "__________________________________________________________________\n"
    "Layer                          Type      Output Shape    Param #      "
    "Trainable    Receptive field    Effective stride    Effective padding\n"
    "========================================================================="
    "==================================================================\n"
    "model.with.a.very.lo[...].t    Model     ((5,))          1,234,567    "
    "True         ?                  ?                   ?                \n"
    "├─блок_с_очень_длинным_имен    Модуль    {(), scalar}    5            -  "
    "          2                  4                   ?                \n"
    "|    └─frozen                  Linear    failed          1,000        "
    "False        ?                  ?                   ?                \n"
    "|    └─nothing                 Weird     []              0            -  "
    "          ?                  ?                   ?                \n"
    "========================================================================="
    "==================================================================\n"
    "Trainable params: 1,234,567\n"
    "Non-trainable params: 1,000\n"
    "Total params: 1,235,567\n"
    "-------------------------------------------------------------------------"
    "------------------------------------------------------------------\n"
    "Model size (params + buffers): 9.48 Mb\n"
    "-------------------------------------------------------------------------"
    "------------------------------------------------------------------\n"
    "Module-formula forward FLOPs: 1.00 TFLOPs\n"
    "Multiply-Accumulations: known 999.00 MACs\n"
    "Direct memory accesses: 2.50 GDMAs\n"
    "_________________________________________________________________________"
    "__________________________________________________________________";

static const char empty_expected[] =
    "_____________________________________________________\n"
    "Layer    Type    Output Shape    Param #    Trainable\n"
    "=====================================================\n"
    "=====================================================\n"
    "Trainable params: 0\n"
    "Non-trainable params: 0\n"
    "Total params: 0\n"
    "-----------------------------------------------------\n"
    "Model size (params + buffers): 0.00 Mb\n"
    "-----------------------------------------------------\n"
    "Module-formula forward FLOPs: unavailable\n"
    "Multiply-Accumulations: unavailable\n"
    "Direct memory accesses: unavailable\n"
    "_____________________________________________________";

/* ---- helpers ---- */

/* Joins the pieces of a fixture and parses them. */
static json_t *
load(const char *const *pieces)
{
    json_error_t error;
    json_t *value = NULL;
    size_t size = 1;
    char *text;
    for (size_t i = 0; pieces[i] != NULL; i++) {
        size += strlen(pieces[i]);
    }
    text = malloc(size);
    if (text == NULL) {
        return NULL;
    }
    size = 0;
    for (size_t i = 0; pieces[i] != NULL; i++) {
        size_t len = strlen(pieces[i]);
        memcpy(text + size, pieces[i], len);
        size += len;
    }
    text[size] = '\0';
    value = json_loads(text, 0, &error);
    if (value == NULL) {
        fprintf(
            stderr, "fixture: %s at column %d\n", error.text, error.column);
    }
    free(text);
    return value;
}

/* Formats and compares with expected; NULL expected means an error with
 * code and message are expected instead. */
static void
check_table(const json_t *report,
            ts_wrap_mode mode,
            bool receptive_field,
            bool stats,
            int max_depth,
            const char *expected)
{
    ts_table_options options = {mode, receptive_field, stats, max_depth};
    ts_error err;
    char *text = ts_format_summary(report, &options, &err);
    CHECK(text != NULL);
    CHECK_EQ_INT(err.code, TS_OK);
    CHECK_EQ_STR(text, expected);
    free(text);
}

/* Returns whether the table holds the line (exactly, as a whole line). */
static bool
has_line(const char *table, const char *line)
{
    size_t len = strlen(line);
    for (const char *at = strstr(table, line); at != NULL;
         at = strstr(at + 1, line)) {
        if ((at == table || at[-1] == '\n')
            && (at[len] == '\n' || at[len] == '\0')) {
            return true;
        }
    }
    return false;
}

static char *
format(const json_t *report, ts_wrap_mode mode, int max_depth, ts_error *err)
{
    ts_table_options options = {mode, false, false, max_depth};
    return ts_format_summary(report, &options, err);
}

/* ---- tests ---- */

static void
test_conv(void)
{
    json_t *report = load(conv_report);
    ts_error err;
    char *text;
    CHECK(report != NULL);
    check_table(report, TS_WRAP_MID, false, false, -1, conv_expected);
    /* NULL options are summary()'s defaults. */
    text = ts_format_summary(report, NULL, &err);
    CHECK_EQ_STR(text, conv_expected);
    free(text);
    /* max_depth 0 is the deepest row of a single-module model. */
    check_table(report, TS_WRAP_MID, false, false, 0, conv_expected);
    json_decref(report);
}

static void
test_nested(void)
{
    json_t *report = load(nested_report);
    ts_error err;
    char *text;
    CHECK(report != NULL);
    check_table(report, TS_WRAP_MID, false, false, -1, nested_mid_expected);
    check_table(
        report, TS_WRAP_MID, true, false, 2, nested_rf_depth2_expected);

    /* The name is wrapped to width + 3, then cut to the width (27). */
    text = format(report, TS_WRAP_END, -1, &err);
    CHECK(text != NULL
          && has_line(text,
                      "|    |    └─a_really_long[.    Sequential"
                      "     (1, 4, 14, 14)               0       "
                      "   -        "));
    free(text);
    text = format(report, TS_WRAP_NONE, -1, &err);
    CHECK(text != NULL
          && has_line(text,
                      "|    |    └─a_really_long_s    Sequential"
                      "     (1, 4, 14, 14)               0       "
                      "   -        "));
    free(text);
    /* A depth that exists keeps shallower rows only; widths shrink. */
    text = format(report, TS_WRAP_MID, 0, &err);
    CHECK(text != NULL
          && has_line(text,
                      "net      Net     (1, 1, 2)       0          -  "
                      "      "));
    CHECK(text != NULL && strstr(text, "├─") == NULL);
    free(text);
    text = format(report, TS_WRAP_MID, 4, &err);
    CHECK_EQ_STR(text, nested_mid_expected);
    free(text);

    /* Deeper than any row: the reference's aggregate_info error. */
    text = format(report, TS_WRAP_MID, 5, &err);
    CHECK(text == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "The `max_depth` argument cannot be higher than module "
                 "depth.");
    json_decref(report);
}

static void
test_misc(void)
{
    json_t *report = load(misc_report);
    CHECK(report != NULL);
    check_table(report, TS_WRAP_MID, true, true, -1, misc_expected);
    json_decref(report);
}

static void
test_totals(void)
{
    json_t *report = load(nested_report);
    json_t *totals = json_object_get(report, "totals");
    json_t *flops = json_object_get(totals, "module_flops");
    ts_error err;
    char *text = format(report, TS_WRAP_MID, -1, &err);
    CHECK(text != NULL
          && has_line(text,
                      "Multiply-Accumulations: known "
                      "22.75 kMACs"));
    CHECK(text != NULL
          && has_line(text,
                      "Direct memory accesses: "
                      "unavailable"));
    CHECK(text != NULL
          && has_line(text,
                      "Diagnostics: 2 (inspect "
                      "report['diagnostics'])"));
    free(text);

    /* SI prefixes switch at exactly 1e3, 1e6, 1e9 and 1e12; below 1e3 and
     * negatives get none. */
    json_object_set_new(flops, "status", json_string("complete"));
    json_object_set_new(flops, "value", json_integer(999));
    text = format(report, TS_WRAP_MID, -1, &err);
    CHECK(text != NULL
          && has_line(text,
                      "Module-formula forward FLOPs: "
                      "999.00 FLOPs"));
    free(text);
    json_object_set_new(flops, "value", json_integer(1000));
    text = format(report, TS_WRAP_MID, -1, &err);
    CHECK(text != NULL
          && has_line(text,
                      "Module-formula forward FLOPs: "
                      "1.00 kFLOPs"));
    free(text);
    json_object_set_new(flops, "value", json_real(999999999.0));
    text = format(report, TS_WRAP_MID, -1, &err);
    CHECK(text != NULL
          && has_line(text,
                      "Module-formula forward FLOPs: "
                      "1000.00 MFLOPs"));
    free(text);
    json_object_set_new(flops, "value", json_integer(-5000));
    text = format(report, TS_WRAP_MID, -1, &err);
    CHECK(text != NULL
          && has_line(text,
                      "Module-formula forward FLOPs: "
                      "-5000.00 FLOPs"));
    free(text);
    /* A complete status without a value cannot print a number. */
    json_object_set_new(flops, "value", json_null());
    text = format(report, TS_WRAP_MID, -1, &err);
    CHECK(text != NULL
          && has_line(text,
                      "Module-formula forward FLOPs: "
                      "unavailable"));
    free(text);

    /* No operator FLOPs and no diagnostics: both lines are left out. */
    json_object_del(totals, "operator_flops");
    json_array_clear(json_object_get(report, "diagnostics"));
    text = format(report, TS_WRAP_MID, -1, &err);
    CHECK(text != NULL && strstr(text, "Operator forward") == NULL);
    CHECK(text != NULL && strstr(text, "Diagnostics") == NULL);
    CHECK(text != NULL
          && has_line(text,
                      "Direct memory accesses: "
                      "unavailable"));
    free(text);
    json_decref(report);
}

static void
test_errors(void)
{
    json_t *report = load(nested_report);
    json_t *empty = load(empty_report);
    json_t *layer;
    ts_table_options options = {(ts_wrap_mode)7, false, false, -1};
    ts_error err;
    char *text;
    CHECK(report != NULL && empty != NULL);

    /* With no rows any depth is accepted, as in the reference. */
    text = format(empty, TS_WRAP_MID, 3, &err);
    CHECK_EQ_STR(text, empty_expected);
    free(text);

    /* A bad wrap mode fails only when a name needs wrapping. */
    text = ts_format_summary(report, &options, &err);
    CHECK(text == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "received an unexpected value of argument `mode`");
    options.max_depth = 2;
    text = ts_format_summary(report, &options, &err);
    CHECK(text != NULL);
    free(text);

    text = ts_format_summary(json_object_get(report, "layers"), NULL, &err);
    CHECK(text == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);

    json_object_del(json_object_get(empty, "totals"), "macs");
    text = ts_format_summary(empty, NULL, &err);
    CHECK(text == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK_EQ_STR(err.message, "report totals lack 'macs'");

    layer = json_array_get(json_object_get(report, "layers"), 3);
    json_object_del(layer, "output");
    text = ts_format_summary(report, NULL, &err);
    CHECK(text == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    /* A hidden row is not read beyond its depth. */
    text = format(report, TS_WRAP_MID, 2, &err);
    CHECK(text != NULL);
    free(text);

    json_object_set_new(
        layer,
        "output",
        json_pack("{s:s,s:[i,s]}", "kind", "tensor", "shape", 1, "x"));
    text = ts_format_summary(report, NULL, &err);
    CHECK(text == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);

    json_object_set_new(layer, "depth", json_string("3"));
    text = format(report, TS_WRAP_MID, 1, &err);
    CHECK(text == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);

    /* A depth whose tree prefix would take gigabytes is refused. */
    json_object_set_new(layer, "depth", json_integer(3));
    layer = json_array_get(json_object_get(report, "layers"), 1);
    json_object_set_new(layer, "depth", json_integer(2000000000));
    text = ts_format_summary(report, NULL, &err);
    CHECK(text == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "report layer 1: depth 2000000000 is beyond 100000");

    json_decref(report);
    json_decref(empty);
}

/* ts_table_line: format_line_str's cells of one layer. Expected texts by
 * hand from 0.2.0's format_line_str (widths None: the name wraps at 100). */
static void
check_cells(const ts_table_text *cells,
            int count,
            const char *const *expected,
            int expected_count)
{
    CHECK_EQ_INT(count, expected_count);
    for (int c = 0; c < count && c < expected_count; c++) {
        CHECK_EQ_STR(cells[c].data, expected[c]);
    }
}

static void
test_line(void)
{
    static const int64_t none[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    static const int64_t narrow[8] = {10, 8, 12, 7, 9, 4, 4, 4};
    /* depth 4: "|    " * 3 + "└─0" */
    static const char *const plain[] = {
        "|    |    |    └─0", "Conv2d", "(1, 4, 14, 14)", "112", "True"};
    /* the name (18) end-wrapped to 10 + 3: s[:8] + "[...]", then cut to
     * 10; the shape (14) end-wrapped to 12: s[:7] + "[...]" */
    static const char *const cut[] = {"|    |  [.",
                                      "Conv2d  ",
                                      "(1, 4, [...]",
                                      "112    ",
                                      "True     ",
                                      "3   ",
                                      "1   ",
                                      "0   "};
    json_t *report = load(nested_report);
    json_t *layer = json_array_get(json_object_get(report, "layers"), 4);
    ts_table_text cells[8];
    int count;
    ts_error err;
    CHECK_EQ_INT(
        ts_table_line(
            layer, none, TS_WRAP_MID, false, false, cells, &count, &err),
        TS_OK);
    check_cells(cells, count, plain, 5);
    ts_table_texts_free(cells, count);
    CHECK_EQ_INT(
        ts_table_line(
            layer, narrow, TS_WRAP_END, true, true, cells, &count, &err),
        TS_OK);
    check_cells(cells, count, cut, 8);
    ts_table_texts_free(cells, count);
    /* the receptive field alone: six cells */
    CHECK_EQ_INT(
        ts_table_line(
            layer, none, TS_WRAP_MID, true, false, cells, &count, &err),
        TS_OK);
    CHECK_EQ_INT(count, 6);
    CHECK_EQ_STR(cells[5].data, "3");
    ts_table_texts_free(cells, count);
    /* an unknown mode is refused only when the name needs shortening */
    CHECK_EQ_INT(
        ts_table_line(
            layer, none, TS_WRAP_UNKNOWN, false, false, cells, &count, &err),
        TS_OK);
    ts_table_texts_free(cells, count);
    CHECK_EQ_INT(
        ts_table_line(
            layer, narrow, TS_WRAP_UNKNOWN, false, false, cells, &count, &err),
        TS_EINVAL);
    CHECK_EQ_INT(count, 0);
    CHECK_EQ_STR(err.message,
                 "received an unexpected value of argument `mode`");

    json_object_set_new(layer, "depth", json_integer(-1));
    CHECK_EQ_INT(
        ts_table_line(
            layer, none, TS_WRAP_MID, false, false, cells, &count, &err),
        TS_EINVAL);
    CHECK_EQ_STR(err.message, "layer depth must be >= 0, got -1.");
    json_object_del(layer, "type");
    CHECK_EQ_INT(
        ts_table_line(
            layer, none, TS_WRAP_MID, false, false, cells, &count, &err),
        TS_EFORMAT);
    CHECK_EQ_STR(err.message, "layer lacks string 'type'");
    CHECK_EQ_INT(ts_table_line(json_object_get(report, "layers"),
                               none,
                               TS_WRAP_MID,
                               false,
                               false,
                               cells,
                               &count,
                               &err),
                 TS_EFORMAT);
    json_decref(report);
}

/* ts_table_limit_depth: aggregate_info's view. */
static void
test_limit_depth(void)
{
    json_t *report = load(nested_report);
    json_t *empty = load(empty_report);
    json_t *view;
    json_t *layers;
    ts_error err;
    /* depths 0 1 2 3 4 4 3 2 3 4 1 1 1: five rows of depth <= 1 */
    view = ts_table_limit_depth(report, 1, &err);
    CHECK(view != NULL);
    layers = json_object_get(view, "layers");
    CHECK_EQ_INT(json_array_size(layers), 5);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(layers, 4), "path")),
        "head");
    CHECK(json_object_get(view, "totals")
          == json_object_get(report, "totals"));
    CHECK_EQ_INT(json_array_size(json_object_get(report, "layers")), 13);
    json_decref(view);
    view = ts_table_limit_depth(report, 4, &err);
    CHECK(view != NULL
          && json_array_size(json_object_get(view, "layers")) == 13);
    json_decref(view);

    CHECK(ts_table_limit_depth(report, 5, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "The `max_depth` argument cannot be higher than module "
                 "depth.");
    CHECK(ts_table_limit_depth(report, -1, &err) == NULL);
    CHECK_EQ_STR(err.message, "max_depth must be non-negative.");
    /* no rows: any depth */
    view = ts_table_limit_depth(empty, 3, &err);
    CHECK(view != NULL
          && json_array_size(json_object_get(view, "layers")) == 0);
    json_decref(view);
    CHECK(ts_table_limit_depth(json_object_get(report, "totals"), 0, &err)
          == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    json_object_del(json_array_get(json_object_get(report, "layers"), 2),
                    "depth");
    CHECK(ts_table_limit_depth(report, 1, &err) == NULL);
    CHECK_EQ_STR(err.message, "report layer 2 lacks 'depth'");
    json_decref(report);
    json_decref(empty);
}

int
main(void)
{
    test_conv();
    test_nested();
    test_misc();
    test_totals();
    test_errors();
    test_line();
    test_limit_depth();
    return ts_test_report();
}
