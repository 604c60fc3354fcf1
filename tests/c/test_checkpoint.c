/* Checkpoint readers (torchscan/checkpoint.h) on files built byte by byte
 * here: the numbers of the report, the module tree's order, and the
 * errors that say where. The Python suite compares the readers with the
 * files torch, safetensors and gguf write. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "torchscan/checkpoint.h"

/* A safetensors file: 8-byte length, the header, `data` zero bytes. */
static unsigned char *
safetensors(const char *header, size_t data, size_t *size)
{
    size_t n = strlen(header);
    unsigned char *buf = calloc(8 + n + data + 1, 1);
    for (int i = 0; i < 8; i++) {
        buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
    }
    memcpy(buf + 8, header, n);
    *size = 8 + n + data;
    return buf;
}

static json_t *
inspect_st(const char *header, size_t data, ts_error *err)
{
    size_t size;
    unsigned char *buf = safetensors(header, data, &size);
    json_t *report;
    ts_error_clear(err);
    report = ts_checkpoint_inspect_memory(buf, size, "m.safetensors", err);
    free(buf);
    return report;
}

static int64_t
total(const json_t *report, const char *key)
{
    return json_integer_value(json_object_get(
        json_object_get(json_object_get(report, "totals"), key), "value"));
}

static void
test_safetensors_report(void)
{
    ts_error err;
    json_t *r = inspect_st(
        "{\"layers.10.w\": {\"dtype\": \"BF16\", \"shape\": [2, 3], "
        "\"data_offsets\": [0, 12]}, "
        "\"layers.2.w\": {\"dtype\": \"F32\", \"shape\": [2], "
        "\"data_offsets\": [12, 20]}, "
        "\"layers.2.b\": {\"dtype\": \"F8_E4M3\", \"shape\": [], "
        "\"data_offsets\": [20, 21]}, "
        "\"__metadata__\": {\"format\": \"pt\"}}",
        21,
        &err);
    const json_t *modules, *dtypes;
    CHECK(r != NULL);
    if (r == NULL) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    CHECK_EQ_STR(json_string_value(json_object_get(r, "format")),
                 "safetensors");
    CHECK_EQ_INT(total(r, "tensors"), 3);
    CHECK_EQ_INT(total(r, "elements"), 6 + 2 + 1);
    CHECK_EQ_INT(total(r, "tensor_bytes"), 21);
    CHECK_EQ_INT(total(r, "stored_bytes"), 21);
    modules = json_object_get(r, "modules");
    /* "", layers, layers.2, layers.10: numeric order */
    CHECK_EQ_INT(json_array_size(modules), 4);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(modules, 2), "path")),
        "layers.2");
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(modules, 3), "path")),
        "layers.10");
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_array_get(modules, 2), "bytes")),
                 9);
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_array_get(modules, 1), "tensors")),
                 3);
    dtypes = json_object_get(r, "dtypes");
    CHECK_EQ_INT(json_array_size(dtypes), 3);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(dtypes, 0), "dtype")),
        "torch.bfloat16");
    CHECK_EQ_INT(json_array_size(json_object_get(r, "diagnostics")), 0);
    {
        char *text = ts_checkpoint_table(r, 1, &err);
        CHECK(text != NULL && strstr(text, "  layers ") != NULL
              && strstr(text, "      10") == NULL);
        free(text);
    }
    json_decref(r);
}

static void
expect_error(const char *header, size_t data, const char *fragment)
{
    ts_error err;
    json_t *r = inspect_st(header, data, &err);
    CHECK(r == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    if (strstr(err.message, fragment) == NULL) {
        fprintf(stderr, "message '%s' lacks '%s'\n", err.message, fragment);
        CHECK(!"message");
    }
    json_decref(r);
}

static void
test_safetensors_errors(void)
{
    expect_error(
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
        "\"data_offsets\": [0, 8]}, \"b\": {\"dtype\": \"F32\", "
        "\"shape\": [1], \"data_offsets\": [4, 8]}}",
        8,
        "overlaps");
    expect_error(
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
        "\"data_offsets\": [0, 8]}}",
        4,
        "end past the end of the file");
    expect_error(
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904, "
        "4], \"data_offsets\": [0, 8]}}",
        8,
        "overflows");
    expect_error("{\"a\": 1, \"a\": 2}", 0, "duplicate object key");
    expect_error(
        "{\"a\": {\"dtype\": \"F4\", \"shape\": [3], "
        "\"data_offsets\": [0, 2]}}",
        2,
        "not a whole number of bytes");
}

static void
test_every_truncation(void)
{
    size_t size;
    unsigned char *buf = safetensors(
        "{\"a\": {\"dtype\": \"I64\", \"shape\": [2], "
        "\"data_offsets\": [0, 16]}}",
        16,
        &size);
    int refused = 0;
    for (size_t n = 0; n < size; n++) {
        ts_error err;
        json_t *r = ts_checkpoint_inspect_memory(buf, n, "t", &err);
        refused += r == NULL && err.code == TS_EFORMAT;
        json_decref(r);
    }
    CHECK_EQ_INT(refused, (int)size);
    free(buf);
}

static void
test_unknown_format(void)
{
    ts_error err;
    json_t *r = ts_checkpoint_inspect_memory("hello!", 6, "x.bin", &err);
    CHECK(r == NULL);
    CHECK_EQ_STR(err.message,
                 "x.bin: not a checkpoint TorchScan reads (safetensors, a "
                 "sharded safetensors index, a PyTorch zip or legacy file, "
                 "GGUF): it begins with 68 65 6c 6c 6f 21");
}

static void
test_match(void)
{
    ts_error err;
    json_t *r = inspect_st(
        "{\"a.w\": {\"dtype\": \"F32\", \"shape\": [2], "
        "\"data_offsets\": [0, 8]}}",
        8,
        &err);
    json_t *want = json_pack("{s:s, s:[{s:s, s:[i], s:s}, {s:s, s:[], s:s}]}",
                             "report_type",
                             "state_dict",
                             "tensors",
                             "name",
                             "a.w",
                             "shape",
                             3,
                             "dtype",
                             "torch.float32",
                             "name",
                             "b",
                             "shape",
                             "dtype",
                             "torch.float32");
    json_t *m = ts_checkpoint_match(r, want, &err);
    char *text;
    CHECK(m != NULL);
    CHECK(json_is_false(json_object_get(m, "matches")));
    CHECK_EQ_INT(json_array_size(json_object_get(m, "mismatched")), 1);
    CHECK_EQ_INT(json_array_size(json_object_get(m, "missing")), 1);
    text = ts_checkpoint_match_text(m, &err);
    CHECK_EQ_STR(text,
                 "does not match (tensor level): 0 matched, 1 missing, 0 "
                 "unexpected, 1 mismatched\n"
                 "missing:\n"
                 "  b: [] torch.float32 expected\n"
                 "mismatched:\n"
                 "  a.w: [2] torch.float32 in the checkpoint, [3] "
                 "torch.float32 expected\n");
    free(text);
    json_decref(m);
    json_decref(want);
    json_decref(r);
}

int
main(void)
{
    test_safetensors_report();
    test_safetensors_errors();
    test_every_truncation();
    test_unknown_format();
    test_match();
    return ts_test_report();
}
