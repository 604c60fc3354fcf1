/* Safetensors headers and sharded indexes written here: each malformed
 * header field refused with the tensor it names, and an index whose shards
 * disagree with it (stray and missing tensors, total_size) read from a
 * temporary folder. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "ckpt_internal.h"
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
    /* reader 0: safetensors, also for a header that is not an object */
    report = ck_inspect_memory_as(buf, size, 0, err);
    free(buf);
    return report;
}

static int64_t
total(const json_t *report, const char *key)
{
    return json_integer_value(json_object_get(
        json_object_get(json_object_get(report, "totals"), key),
        "known_value"));
}

static size_t
count_code(const json_t *report, const char *code)
{
    const json_t *d = json_object_get(report, "diagnostics");
    size_t n = 0;
    for (size_t k = 0; k < json_array_size(d); k++) {
        const char *c =
            json_string_value(json_object_get(json_array_get(d, k), "code"));
        n += c != NULL && strcmp(c, code) == 0;
    }
    return n;
}

static void
expect_error(const char *header, size_t data, const char *fragment)
{
    ts_error err;
    json_t *r = inspect_st(header, data, &err);
    CHECK(r == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    if (r != NULL || strstr(err.message, fragment) == NULL) {
        fprintf(stderr,
                "message '%s' lacks '%s'\n",
                r != NULL ? "(a report)" : err.message,
                fragment);
        CHECK(!"message");
    }
    json_decref(r);
}

static void
test_header_errors(void)
{
    expect_error("[1, 2]", 0, "fuzz: header (byte 8): expected a JSON object");
    expect_error("{\"a\": 1}", 0, "tensor 'a': expected an object");
    expect_error(
        "{\"a\": {\"dtype\": 5}}", 0, "tensor 'a': dtype: expected text");
    expect_error("{\"a\": {\"dtype\": \"F33\", \"shape\": []}}",
                 0,
                 "tensor 'a': unknown dtype 'F33'");
    expect_error("{\"a\": {\"dtype\": \"F32\", \"shape\": 3}}",
                 0,
                 "tensor 'a': shape: expected a list of at most 64 sizes");
    {
        /* 65 dimensions */
        char header[512] = "{\"a\": {\"dtype\": \"F32\", \"shape\": [1";
        for (int k = 1; k < 65; k++) {
            strcat(header, ",1");
        }
        strcat(header, "], \"data_offsets\": [0, 4]}}");
        expect_error(header, 4, "shape: expected a list of at most 64 sizes");
    }
    expect_error(
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
        "\"data_offsets\": [0]}}",
        4,
        "data_offsets: expected [begin, end], two non-negative");
    expect_error(
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
        "\"data_offsets\": [-1, 4]}}",
        4,
        "data_offsets: expected [begin, end], two non-negative");
    expect_error(
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
        "\"data_offsets\": [0, \"4\"]}}",
        4,
        "data_offsets: expected [begin, end], two non-negative");
    expect_error(
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [1, -2], "
        "\"data_offsets\": [0, 4]}}",
        4,
        "tensor 'a': shape[1]: expected a non-negative integer");
    expect_error(
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], "
        "\"data_offsets\": [4, 0]}}",
        4,
        "data_offsets [4, 0] end before they begin");
    expect_error(
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
        "\"data_offsets\": [0, 4]}}",
        4,
        "data_offsets [0, 4] hold 4 bytes, its dtype and shape 8");
    expect_error(
        "{\"__metadata__\": [1]}", 0, "__metadata__: expected an object");
    expect_error("{\"__metadata__\": {\"k\": 1}}",
                 0,
                 "header: __metadata__.k: expected text");
    expect_error(
        "{\"a\": {]}", 0, "fuzz: header at byte 16: string or '}' expected");
    {
        /* a header length over 100 MiB, and one past the file */
        unsigned char buf[16] = {0, 0, 0, 0x10, 0, 0, 0, 0, '{', '}'};
        ts_error err;
        json_t *r = ck_inspect_memory_as(buf, 10, 0, &err);
        CHECK(r == NULL);
        CHECK(strstr(err.message, "more than safetensors' limit of 100 MiB")
              != NULL);
        buf[3] = 0;
        buf[0] = 3;
        r = ck_inspect_memory_as(buf, 10, 0, &err);
        CHECK(r == NULL);
        CHECK(strstr(err.message,
                     "truncated: the header (3 bytes at byte 8) ends past "
                     "the end of the file (10 bytes)")
              != NULL);
    }
}

static void
test_empty_and_gaps(void)
{
    ts_error err;
    /* two tensors on the same bytes */
    expect_error(
        "{\"p\": {\"dtype\": \"F32\", \"shape\": [1], "
        "\"data_offsets\": [0, 4]}, "
        "\"q\": {\"dtype\": \"I32\", \"shape\": [1], "
        "\"data_offsets\": [0, 4]}}",
        4,
        "(bytes 0 to 4)");
    /* an empty tensor at the start of another's bytes, and 4 bytes no
     * tensor covers */
    json_t *r = inspect_st(
        "{\"e\": {\"dtype\": \"F32\", \"shape\": [0], "
        "\"data_offsets\": [0, 0]}, "
        "\"b\": {\"dtype\": \"F32\", \"shape\": [2], "
        "\"data_offsets\": [0, 8]}, "
        "\"c\": {\"dtype\": \"I8\", \"shape\": [1], "
        "\"data_offsets\": [0, 1]}}",
        12,
        &err);
    CHECK(r == NULL);
    CHECK(strstr(err.message,
                 "tensor 'b' (data bytes 0 to 8) overlaps tensor 'c' (bytes "
                 "0 to 1)")
          != NULL);
    r = inspect_st(
        "{\"e\": {\"dtype\": \"F32\", \"shape\": [0], "
        "\"data_offsets\": [0, 0]}, "
        "\"b\": {\"dtype\": \"F32\", \"shape\": [2], "
        "\"data_offsets\": [0, 8]}}",
        12,
        &err);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_INT(total(r, "tensors"), 2);
        CHECK_EQ_INT(total(r, "tensor_bytes"), 8);
        CHECK_EQ_INT(count_code(r, "checkpoint_unreferenced_bytes"), 1);
    }
    json_decref(r);
}

/* ---- sharded indexes on disk ---- */

static char dir[64];

static void
write_file(const char *name, const void *data, size_t n)
{
    char path[256];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f != NULL) {
        CHECK(fwrite(data, 1, n, f) == n);
        fclose(f);
    }
}

static void
write_st(const char *name, const char *header, size_t data)
{
    size_t size;
    unsigned char *buf = safetensors(header, data, &size);
    write_file(name, buf, size);
    free(buf);
}

static json_t *
inspect_index(const char *text, ts_error *err)
{
    char path[256];
    write_file("model.safetensors.index.json", text, strlen(text));
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    ts_error_clear(err);
    return ts_checkpoint_inspect(path, err);
}

static void
test_index(void)
{
    ts_error err;
    json_t *r;
    char names[64][16];
    write_st("s1.safetensors",
             "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
             "\"data_offsets\": [0, 8]}, "
             "\"x\": {\"dtype\": \"F16\", \"shape\": [2], "
             "\"data_offsets\": [8, 12]}}",
             12);
    write_st("s2.safetensors",
             "{\"b\": {\"dtype\": \"I64\", \"shape\": [1], "
             "\"data_offsets\": [0, 8]}}",
             8);
    /* agreeing: a, x in s1, b in s2, total_size 8 + 4 + 8 */
    r = inspect_index(
        "{\"metadata\": {\"total_size\": 20}, \"weight_map\": "
        "{\"a\": \"s1.safetensors\", \"b\": \"s2.safetensors\", "
        "\"x\": \"s1.safetensors\"}}",
        &err);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_STR(json_string_value(json_object_get(r, "format")),
                     "safetensors_sharded");
        CHECK_EQ_INT(json_array_size(json_object_get(r, "files")), 3);
        CHECK_EQ_INT(total(r, "tensor_bytes"), 20);
        CHECK_EQ_INT(count_code(r, "checkpoint_index_mismatch"), 0);
    }
    else {
        fprintf(stderr, "%s\n", err.message);
    }
    json_decref(r);
    /* disagreeing: x not listed, b listed in s1, y in no shard, total 99 */
    r = inspect_index(
        "{\"metadata\": {\"total_size\": 99}, \"weight_map\": "
        "{\"a\": \"s1.safetensors\", \"b\": \"s1.safetensors\", "
        "\"y\": \"s2.safetensors\"}}",
        &err);
    CHECK(r != NULL);
    if (r != NULL) {
        /* s1 and s2 are both read (b is in s2, y's shard) */
        CHECK_EQ_INT(total(r, "tensor_bytes"), 20);
        /* x (stray), b (in another shard), y (missing), the total */
        CHECK_EQ_INT(count_code(r, "checkpoint_index_mismatch"), 4);
        CHECK_EQ_STR(
            json_string_value(json_object_get(
                json_object_get(json_object_get(r, "totals"), "tensors"),
                "status")),
            "partial");
    }
    else {
        fprintf(stderr, "%s\n", err.message);
    }
    json_decref(r);
    /* more than 8 missing tensors: the first 8 named, then a summary */
    {
        char text[2048] = "{\"weight_map\": {\"a\": \"s1.safetensors\"";
        for (int k = 0; k < 10; k++) {
            snprintf(names[k], sizeof names[k], "m%d", k);
            strcat(text, ", \"");
            strcat(text, names[k]);
            strcat(text, "\": \"s1.safetensors\"");
        }
        strcat(text, "}, \"metadata\": null}");
        r = inspect_index(text, &err);
        CHECK(r != NULL);
        if (r != NULL) {
            /* x stray, 8 of 10 missing named, one summary */
            CHECK_EQ_INT(count_code(r, "checkpoint_index_mismatch"),
                         1 + 8 + 1);
        }
        json_decref(r);
    }
    /* more than 8 stray tensors */
    {
        char header[4096] = "{";
        for (int k = 0; k < 10; k++) {
            char entry[128];
            snprintf(entry,
                     sizeof entry,
                     "%s\"t%d\": {\"dtype\": \"U8\", \"shape\": [1], "
                     "\"data_offsets\": [%d, %d]}",
                     k ? ", " : "",
                     k,
                     k,
                     k + 1);
            strcat(header, entry);
        }
        strcat(header, "}");
        write_st("s3.safetensors", header, 10);
        r = inspect_index("{\"weight_map\": {\"t0\": \"s3.safetensors\"}}",
                          &err);
        CHECK(r != NULL);
        if (r != NULL) {
            CHECK_EQ_INT(count_code(r, "checkpoint_index_mismatch"), 8 + 1);
            CHECK_EQ_INT(total(r, "tensors"), 10);
        }
        json_decref(r);
    }
    /* only a missing tensor, no stray one */
    r = inspect_index(
        "{\"weight_map\": {\"a\": \"s1.safetensors\", "
        "\"x\": \"s1.safetensors\", \"zz\": "
        "\"s1.safetensors\"}}",
        &err);
    CHECK(r != NULL);
    if (r != NULL) {
        const char *msg = json_string_value(json_object_get(
            json_array_get(json_object_get(r, "diagnostics"), 0), "message"));
        CHECK_EQ_INT(count_code(r, "checkpoint_index_mismatch"), 1);
        CHECK(msg != NULL
              && strstr(msg,
                        "tensor 'zz' is listed in shard s1.safetensors, "
                        "which does not hold it")
                     != NULL);
    }
    json_decref(r);
    /* refusals */
    r = inspect_index("{\"weight_map\": {\"a\": \"../s1.safetensors\"}}",
                      &err);
    CHECK(r == NULL
          && strstr(err.message,
                    "weight_map.a: expected the file "
                    "name of a shard beside the index")
                 != NULL);
    r = inspect_index("{\"weight_map\": {\"a\": \"d\\\\s1\"}}", &err);
    CHECK(r == NULL && strstr(err.message, "weight_map.a") != NULL);
    r = inspect_index("{\"weight_map\": {\"a\": \".\"}}", &err);
    CHECK(r == NULL && strstr(err.message, "weight_map.a") != NULL);
    r = inspect_index("{\"weight_map\": {\"a\": \"..\"}}", &err);
    CHECK(r == NULL && strstr(err.message, "weight_map.a") != NULL);
    r = inspect_index("{\"weight_map\": {\"a\": \"\"}}", &err);
    CHECK(r == NULL && strstr(err.message, "weight_map.a") != NULL);
    r = inspect_index("{\"weight_map\": {\"a\": 3}}", &err);
    CHECK(r == NULL && strstr(err.message, "weight_map.a") != NULL);
    r = inspect_index("{\"weight_map\": [], \"metadata\": {}}", &err);
    CHECK(r == NULL
          && strstr(err.message,
                    "a JSON object with a weight_map "
                    "object")
                 != NULL);
    r = inspect_index("{\"weight_map\": {}, \"metadata\": 3}", &err);
    CHECK(r == NULL
          && strstr(err.message, "metadata: expected an object") != NULL);
    r = inspect_index("{\"weight_map\": {\"a\": \"none.safetensors\"}}", &err);
    CHECK(r == NULL && err.code == TS_EIO);
    write_st("bad.safetensors", "{\"q\": 1}", 0);
    r = inspect_index("{\"weight_map\": {\"q\": \"bad.safetensors\"}}", &err);
    CHECK(r == NULL
          && strstr(err.message, "tensor 'q': expected an object") != NULL);
    r = inspect_index("{\"weight_map\": {,}}", &err);
    CHECK(r == NULL && err.code == TS_EFORMAT
          && strstr(err.message, "model.safetensors.index.json: at byte")
                 != NULL);
    /* the index in memory: its tensors unknown, partial */
    {
        static const char text[] =
            "{\"weight_map\": {\"a\": \"s1.safetensors\"}}";
        r = ts_checkpoint_inspect_memory(
            text, sizeof text - 1, "i.json", &err);
        CHECK(r != NULL);
        if (r != NULL) {
            CHECK_EQ_INT(total(r, "tensors"), 0);
            CHECK_EQ_STR(
                json_string_value(json_object_get(
                    json_object_get(json_object_get(r, "totals"), "tensors"),
                    "status")),
                "partial");
        }
        json_decref(r);
        r = ck_inspect_memory_as("[]", 2, 1, &err);
        CHECK(r == NULL && strstr(err.message, "weight_map object") != NULL);
    }
}

/* The file layer: what cannot be opened or read, and the bounds of the
 * record arrays. */
static void
test_file_layer(void)
{
    ts_error err;
    json_t *r;
    ck_source src;
    ck_set set;
    uint8_t buf[16];
    char path[128];
    int64_t dims[2];
    FILE *f;
    r = ts_checkpoint_inspect(dir, &err);
    CHECK(r == NULL && err.code == TS_EIO);
    CHECK(strstr(err.message, ": is a directory") != NULL);
    /* a trailing slash: the name is the whole path */
    snprintf(path, sizeof path, "%s/", dir);
    r = ts_checkpoint_inspect(path, &err);
    CHECK(r == NULL && err.code == TS_EIO);
    CHECK(strncmp(err.message, path, strlen(path)) == 0);
    r = ts_checkpoint_inspect("/dev/null", &err);
    CHECK(r == NULL && err.code == TS_EIO);
    CHECK_EQ_STR(err.message, "null: not a regular file");
    /* a file that shrinks after it was opened */
    snprintf(path, sizeof path, "%s/shrinks.bin", dir);
    f = fopen(path, "wb");
    CHECK(f != NULL && fwrite("0123456789abcdef", 1, 16, f) == 16);
    if (f != NULL) {
        fclose(f);
    }
    CHECK_EQ_INT(ck_open(&src, dir, "shrinks.bin", &err), TS_OK);
    CHECK_EQ_INT(src.size, 16);
    CHECK_EQ_STR(src.name, "shrinks.bin");
    CHECK(truncate(path, 4) == 0);
    CHECK_EQ_INT(ck_read(&src, 0, buf, 16, "the bytes", &err), TS_EIO);
    CHECK_EQ_STR(err.message,
                 "shrinks.bin: cannot read the bytes at byte 4: the file is "
                 "shorter than it was");
    CHECK(ck_read_alloc(&src, 2, 14, "the rest", &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EIO);
    CHECK(ck_read_alloc(&src, 17, 1, "past", &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK(ck_read_alloc(&src, 2, 15, "past", &err) == NULL);
    CHECK_EQ_STR(err.message,
                 "shrinks.bin: truncated: past (15 bytes at byte 2) ends past "
                 "the end of the file (16 bytes)");
    /* a descriptor that is not open */
    close(src.fd);
    src.fd = -1;
    CHECK_EQ_INT(ck_read(&src, 0, buf, 4, "the bytes", &err), TS_EIO);
    CHECK(strstr(err.message, "cannot read the bytes at byte 0: ") != NULL);
    ck_close(&src);
    remove(path);
    CHECK_EQ_INT(ck_open(&src, dir, "none.bin", &err), TS_EIO);
    CHECK(strncmp(err.message, "none.bin: cannot open: ", 23) == 0);
    /* tensors of -1 and 65 dimensions; sizes below zero or overflowing */
    CHECK_EQ_INT(ck_set_init(&set, &err), TS_OK);
    CHECK(ck_add_tensor(&set, "t", 1, -1, &err) == NULL);
    CHECK_EQ_STR(err.message, "tensor with -1 dimensions (at most 64)");
    CHECK(ck_add_tensor(&set, "t", 1, 65, &err) == NULL);
    ck_set_clear(&set);
    dims[0] = -1;
    dims[1] = 1;
    CHECK(!ck_numel(dims, 2, &dims[1]));
    dims[0] = INT64_MAX;
    dims[1] = 2;
    CHECK(!ck_numel(dims, 2, &dims[1]));
    dims[0] = 3;
    dims[1] = 4;
    CHECK(ck_numel(dims, 2, &dims[0]) && dims[0] == 12);
}

static void
cleanup(void)
{
    static const char *const files[] = {"s1.safetensors",
                                        "s2.safetensors",
                                        "s3.safetensors",
                                        "bad.safetensors",
                                        "model.safetensors.index.json"};
    for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        remove(path);
    }
    rmdir(dir);
}

/* An index over 100 MiB is refused before it is read. */
static void
test_huge_index(void)
{
    size_t n = ((size_t)100 << 20) + 1;
    char *buf = calloc(n, 1);
    ts_error err;
    json_t *r;
    CHECK(buf != NULL);
    if (buf == NULL) {
        return;
    }
    buf[0] = '{';
    r = ts_checkpoint_inspect_memory(buf, n, "big.json", &err);
    CHECK(r == NULL);
    CHECK_EQ_STR(err.message,
                 "big.json: an index of 104857601 bytes (more than 100 MiB)");
    free(buf);
}

int
main(void)
{
    test_header_errors();
    test_empty_and_gaps();
    test_huge_index();
    snprintf(dir, sizeof dir, "/tmp/ts_checkpoint_safetensors_XXXXXX");
    if (mkdtemp(dir) != NULL) {
        test_index();
        test_file_layer();
        cleanup();
    }
    else {
        CHECK(!"mkdtemp");
    }
    return ts_test_report();
}
