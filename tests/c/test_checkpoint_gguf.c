/* GGUF files written here: metadata values of every kind (text that is
 * not UTF-8 summarised, long and nested arrays, non-finite floats), the
 * alignment key's checks and the tensor infos' refusals, each with the
 * numbers worked out by hand. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "checkpoint_build.h"
#include "torchscan/checkpoint.h"

static json_t *
inspect(bytes *b, ts_error *err)
{
    json_t *r;
    ts_error_clear(err);
    r = ts_checkpoint_inspect_memory(b->d, b->n, "g.gguf", err);
    free(b->d);
    memset(b, 0, sizeof *b);
    return r;
}

static int64_t
total(const json_t *report, const char *key)
{
    return json_integer_value(json_object_get(
        json_object_get(json_object_get(report, "totals"), key),
        "known_value"));
}

#define EXPECT_ERR(r, err, fragment)                                    \
    do {                                                                \
        CHECK((r) == NULL);                                             \
        if ((r) != NULL || strstr((err).message, (fragment)) == NULL) { \
            fprintf(stderr,                                             \
                    "%s:%d: message '%s' lacks '%s'\n",                 \
                    __FILE__,                                           \
                    __LINE__,                                           \
                    (r) != NULL ? "(a report)" : (err).message,         \
                    (fragment));                                        \
            CHECK(!"message");                                          \
        }                                                               \
        json_decref(r);                                                 \
    } while (0)

static void
test_text_values(void)
{
    /* valid text of 1 to 4 bytes a character, and eight invalid forms */
    static const struct {
        const char *s;
        size_t n;
        bool text;
    } cases[] = {
        {"a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10, true},
        {"\xc0\x80", 2, false},         /* overlong 2 bytes */
        {"\xe0\x80\x80", 3, false},     /* overlong 3 bytes */
        {"\xf0\x80\x80\x80", 4, false}, /* overlong 4 bytes */
        {"\xf4\x90\x80\x80", 4, false}, /* past U+10FFFF */
        {"\xed\xa0\x80", 3, false},     /* a surrogate */
        {"\xc3\x28", 2, false},         /* a bad continuation */
        {"\xe2\x82", 2, false},         /* cut */
        {"\xff", 1, false},             /* no such lead byte */
        {"a\0b", 3, false},             /* NUL */
    };
    size_t n = sizeof cases / sizeof *cases;
    bytes b = {0};
    ts_error err;
    json_t *r;
    g_head(&b, 3, 0, n);
    for (size_t k = 0; k < n; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%zu", k);
        g_key(&b, key, 8);
        g_str(&b, cases[k].s, cases[k].n);
    }
    r = inspect(&b, &err);
    CHECK(r != NULL);
    if (r == NULL) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        char key[16];
        const json_t *v;
        snprintf(key, sizeof key, "k%zu", k);
        v = json_object_get(json_object_get(r, "metadata"), key);
        if (cases[k].text) {
            CHECK(json_is_string(v) && json_string_length(v) == cases[k].n
                  && memcmp(json_string_value(v), cases[k].s, cases[k].n)
                         == 0);
        }
        else {
            CHECK_EQ_STR(json_string_value(json_object_get(v, "type")),
                         "bytes");
            CHECK_EQ_INT(json_integer_value(json_object_get(v, "length")),
                         (int64_t)cases[k].n);
        }
    }
    json_decref(r);
}

static void
test_arrays_and_numbers(void)
{
    bytes b = {0};
    ts_error err;
    json_t *r;
    const json_t *meta;
    g_head(&b, 3, 0, 6);
    /* 100 uint16: summarised */
    g_key(&b, "big", 9);
    le(&b, 2, 4);
    le(&b, 100, 8);
    for (int k = 0; k < 100; k++) {
        le(&b, (uint64_t)k, 2);
    }
    /* 70 strings: summarised */
    g_key(&b, "words", 9);
    le(&b, 8, 4);
    le(&b, 70, 8);
    for (int k = 0; k < 70; k++) {
        g_str(&b, "w", 1);
    }
    /* [[1], [2, 3]] of int8 */
    g_key(&b, "nested", 9);
    le(&b, 9, 4);
    le(&b, 2, 8);
    le(&b, 1, 4);
    le(&b, 1, 8);
    le(&b, 1, 1);
    le(&b, 1, 4);
    le(&b, 2, 8);
    le(&b, 2, 1);
    le(&b, 0xfd, 1); /* int8 -3 */
    /* float32 +inf, float64 NaN: null */
    g_key(&b, "inf", 6);
    le(&b, 0x7f800000u, 4);
    g_key(&b, "nan", 12);
    le(&b, 0x7ff8000000000000ull, 8);
    /* a string of 5000 bytes: summarised */
    g_key(&b, "long", 8);
    {
        char *s = calloc(5000, 1);
        memset(s, 's', 5000);
        g_str(&b, s, 5000);
        free(s);
    }
    r = inspect(&b, &err);
    CHECK(r != NULL);
    if (r == NULL) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    meta = json_object_get(r, "metadata");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(meta, "big"), "item_type")),
                 "uint16");
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_object_get(meta, "big"), "length")),
                 100);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(meta, "words"), "item_type")),
                 "string");
    CHECK_EQ_INT(json_integer_value(json_array_get(
                     json_array_get(json_object_get(meta, "nested"), 1), 1)),
                 -3);
    CHECK(json_is_null(json_object_get(meta, "inf")));
    CHECK(json_is_null(json_object_get(meta, "nan")));
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(meta, "long"), "type")),
                 "string");
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_object_get(meta, "long"), "length")),
                 5000);
    json_decref(r);
    /* arrays nested 9 deep */
    g_head(&b, 3, 0, 1);
    g_key(&b, "deep", 9);
    for (int k = 0; k < 9; k++) {
        le(&b, 9, 4);
        le(&b, 1, 8);
    }
    le(&b, 0, 4);
    le(&b, 0, 8);
    r = inspect(&b, &err);
    EXPECT_ERR(r, err, "(deep): arrays nested deeper than 8");
}

static void
test_keys_and_alignment(void)
{
    bytes b = {0};
    ts_error err;
    json_t *r;
    /* a key of 70,000 bytes */
    {
        char *key = calloc(70000, 1);
        memset(key, 'k', 70000);
        g_head(&b, 3, 0, 1);
        g_str(&b, key, 70000);
        le(&b, 0, 4);
        le(&b, 0, 1);
        r = inspect(&b, &err);
        EXPECT_ERR(r,
                   err,
                   "a metadata key longer than 64 KiB, holding NUL or not "
                   "UTF-8 text");
        /* a tensor name of 70,000 bytes */
        g_head(&b, 3, 1, 0);
        g_str(&b, key, 70000);
        le(&b, 0, 4);
        le(&b, 0, 4);
        le(&b, 0, 8);
        r = inspect(&b, &err);
        EXPECT_ERR(r, err, "a tensor name longer than 64 KiB");
        free(key);
    }
    g_head(&b, 3, 0, 1);
    g_str(&b, "a\0b", 3);
    le(&b, 0, 4);
    le(&b, 0, 1);
    r = inspect(&b, &err);
    EXPECT_ERR(
        r,
        err,
        "a metadata key longer than 64 KiB, holding NUL or not UTF-8 text");
    /* general.alignment: as uint64, 0, 48 */
    g_head(&b, 3, 0, 1);
    g_key(&b, "general.alignment", 10);
    le(&b, 64, 8);
    r = inspect(&b, &err);
    EXPECT_ERR(r, err, "(general.alignment): the alignment is not a power");
    g_head(&b, 3, 0, 1);
    g_key(&b, "general.alignment", 4);
    le(&b, 0, 4);
    r = inspect(&b, &err);
    EXPECT_ERR(r, err, "(general.alignment): the alignment is not a power");
    g_head(&b, 3, 0, 1);
    g_key(&b, "general.alignment", 4);
    le(&b, 48, 4);
    r = inspect(&b, &err);
    EXPECT_ERR(r, err, "(general.alignment): the alignment is not a power");
    /* alignment 64 and two F16 tensors: one empty, sharing its offset
     * with the next (allowed) */
    {
        uint64_t d0[1] = {0}, d8[1] = {8};
        g_head(&b, 3, 2, 1);
        g_key(&b, "general.alignment", 4);
        le(&b, 64, 4);
        g_tensor(&b, "e", 1, d0, 1, 0);
        g_tensor(&b, "h", 1, d8, 1, 0);
        g_data(&b, 64, 16);
        r = inspect(&b, &err);
        CHECK(r != NULL);
        if (r != NULL) {
            const json_t *t = json_array_get(json_object_get(r, "tensors"), 1);
            CHECK_EQ_INT(total(r, "tensor_bytes"), 16);
            /* the data starts at the first multiple of 64 */
            CHECK_EQ_INT(json_integer_value(json_object_get(t, "offset")) % 64,
                         0);
            CHECK_EQ_INT(json_integer_value(json_object_get(t, "bytes")), 16);
        }
        else {
            fprintf(stderr, "%s\n", err.message);
        }
        json_decref(r);
    }
    /* a tensor at offset 2^64 - 32: its end wraps */
    {
        uint64_t d[1] = {32};
        g_head(&b, 3, 1, 0);
        g_tensor(&b, "w", 1, d, 0, 0xffffffffffffffe0ull);
        g_data(&b, 32, 0);
        r = inspect(&b, &err);
        EXPECT_ERR(r, err, "(w): its data range overflows");
    }
}

static void
test_unknown_types(void)
{
    bytes b = {0};
    ts_error err;
    json_t *r;
    uint64_t d3[1] = {3}, huge[1] = {(uint64_t)1 << 62};
    /* ggml type 4 (the removed Q4_2): size unknown, bytes null, partial */
    g_head(&b, 3, 2, 0);
    g_tensor(&b, "u", 1, d3, 4, 0);
    g_tensor(&b, "f", 1, d3, 0, 0);
    g_data(&b, 32, 12);
    r = inspect(&b, &err);
    CHECK(r != NULL);
    if (r != NULL) {
        const json_t *t = json_array_get(json_object_get(r, "tensors"), 0);
        const json_t *tb =
            json_object_get(json_object_get(r, "totals"), "tensor_bytes");
        CHECK_EQ_STR(json_string_value(json_object_get(t, "dtype")),
                     "unknown");
        CHECK(json_is_null(json_object_get(t, "bytes")));
        CHECK_EQ_STR(json_string_value(json_object_get(tb, "status")),
                     "partial");
        /* the known part: f's 3 float32 */
        CHECK_EQ_INT(json_integer_value(json_object_get(tb, "known_value")),
                     12);
        CHECK_EQ_STR(
            json_string_value(json_object_get(
                json_array_get(json_object_get(r, "diagnostics"), 0), "code")),
            "checkpoint_unknown_dtype");
    }
    else {
        fprintf(stderr, "%s\n", err.message);
    }
    json_decref(r);
    /* two tensors of 2^62 elements of an unknown type: their sum
     * overflows int64 */
    g_head(&b, 3, 2, 0);
    g_tensor(&b, "a", 1, huge, 4, 0);
    g_tensor(&b, "b", 1, huge, 4, 0);
    g_data(&b, 32, 0);
    r = inspect(&b, &err);
    CHECK(r == NULL);
    CHECK_EQ_INT(err.code, TS_EOVERFLOW);
    json_decref(r);
}

/* Names that are not UTF-8 cannot be named in the report: refused as
 * malformed (they were reported as out of memory). */
static void
test_names_not_utf8(void)
{
    bytes b = {0};
    ts_error err;
    json_t *r;
    uint64_t d[1] = {1};
    g_head(&b, 3, 1, 0);
    g_tensor(&b, "w\xff", 1, d, 0, 0);
    g_data(&b, 32, 4);
    r = inspect(&b, &err);
    EXPECT_ERR(r, err, "a tensor name that is not UTF-8 text");
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    g_head(&b, 3, 0, 1);
    g_key(&b, "k\xc3", 7);
    le(&b, 1, 1);
    r = inspect(&b, &err);
    EXPECT_ERR(r,
               err,
               "a metadata key longer than 64 KiB, holding NUL or "
               "not UTF-8 text");
    CHECK_EQ_INT(err.code, TS_EFORMAT);
}

int
main(void)
{
    test_text_values();
    test_arrays_and_numbers();
    test_keys_and_alignment();
    test_unknown_types();
    test_names_not_utf8();
    return ts_test_report();
}
