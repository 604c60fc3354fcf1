/* PyTorch checkpoints built here byte by byte: a small zip writer (STORED
 * entries, optional Zip64 records and extra fields, bytes prepended) and a
 * pickle assembler. Each file checks one reader path: the tensors and
 * storages it reports (sizes by hand arithmetic) or the error that names
 * where the file is wrong. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "checkpoint_build.h"
#include "ckpt_internal.h"
#include "torchscan/checkpoint.h"

static json_t *
inspect_zip(const zent *e, size_t n, const zopts *o, ts_error *err)
{
    bytes z = {0};
    static const zopts none = {0};
    json_t *r;
    zip_file(&z, e, n, o != NULL ? o : &none);
    ts_error_clear(err);
    r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", err);
    free(z.d);
    return r;
}

static int64_t
total(const json_t *report, const char *key)
{
    return json_integer_value(json_object_get(
        json_object_get(json_object_get(report, "totals"), key),
        "known_value"));
}

static const json_t *
tensor(const json_t *report, size_t k)
{
    return json_array_get(json_object_get(report, "tensors"), k);
}

static bool
has_code(const json_t *report, const char *code)
{
    const json_t *d = json_object_get(report, "diagnostics");
    for (size_t k = 0; k < json_array_size(d); k++) {
        const char *c =
            json_string_value(json_object_get(json_array_get(d, k), "code"));
        if (c != NULL && strcmp(c, code) == 0) {
            return true;
        }
    }
    return false;
}

#define EXPECT_ERR(r, err, fragment)                                    \
    do {                                                                \
        CHECK((r) == NULL);                                             \
        CHECK_EQ_INT((err).code, TS_EFORMAT);                           \
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


/* ---- the zip container ---- */

static void
test_zip_layouts(void)
{
    ts_error err;
    bytes pk = {0};
    json_t *r;
    w_pickle(&pk);
    {
        /* PREFIX-less names, a Zip64 record and locator, extra fields */
        zent e[2] = {{"data.pkl", pk.d, pk.n, 0, 0, true, false, 0},
                     {"data/0", zeros, 24, 0, 0, true, false, 0}};
        zopts o = {0};
        o.zip64 = true;
        r = inspect_zip(e, 2, &o, &err);
        CHECK(r != NULL);
        if (r == NULL) {
            fprintf(stderr, "%s\n", err.message);
        }
        CHECK_EQ_INT(total(r, "tensors"), 1);
        CHECK_EQ_INT(total(r, "stored_bytes"), 24);
        CHECK_EQ_INT(
            json_integer_value(json_object_get(tensor(r, 0), "bytes")), 24);
        json_decref(r);
        /* the same with 100 bytes prepended: the record sits where the
         * locator says plus the prefix */
        o.prepend = 100;
        r = inspect_zip(e, 2, &o, &err);
        CHECK(r != NULL);
        /* the data of "data/0" follows its 30-byte local header and
         * 6-byte name; the local header follows data.pkl's */
        CHECK_EQ_INT(
            json_integer_value(json_object_get(tensor(r, 0), "offset")),
            100 + 30 + 8 + (int64_t)pk.n + 30 + 6);
        json_decref(r);
        /* a gap between the record and the locator: found by the offset */
        o.prepend = 0;
        o.move_record = true;
        r = inspect_zip(e, 2, &o, &err);
        CHECK(r != NULL);
        json_decref(r);
        o.move_record = false;
        o.locator_delta = 1000000;
        r = inspect_zip(e, 2, &o, &err);
        EXPECT_ERR(r, err, "Zip64 locator points outside the space before it");
        o.move_record = true;
        o.locator_delta = -1;
        r = inspect_zip(e, 2, &o, &err);
        EXPECT_ERR(r, err, "Zip64 locator points at no Zip64 record");
    }
    {
        zent e[2] = {{"data.pkl", pk.d, pk.n, 0, 0, true, true, 0},
                     {"data/0", zeros, 24, 0, 0, false, false, 0}};
        r = inspect_zip(e, 2, NULL, &err);
        EXPECT_ERR(r, err, "an entry's Zip64 sizes are missing or short");
    }
    {
        /* an archive folder deeper than PREFIX/data.pkl is skipped, and
         * "xdata.pkl" is not data.pkl */
        zent e[3] = {{"a/b/data.pkl", pk.d, pk.n, 0, 0, false, false, 0},
                     {"xdata.pkl", pk.d, pk.n, 0, 0, false, false, 0},
                     {"arch/data.pkl", pk.d, pk.n, 0, 0, false, false, 0}};
        r = inspect_zip(e, 3, NULL, &err);
        EXPECT_ERR(r, err, "storage '0' has no entry arch/data/0");
    }
    {
        zent e[1] = {{"a/b/data.pkl", pk.d, pk.n, 0, 0, false, false, 0}};
        r = inspect_zip(e, 1, NULL, &err);
        EXPECT_ERR(r, err, "no data.pkl entry: a zip archive");
    }
    {
        zent e[2] = {{"arch/data.pkl", pk.d, pk.n, 8, 0, false, false, 0},
                     {"arch/data/0", zeros, 24, 0, 0, false, false, 0}};
        r = inspect_zip(e, 2, NULL, &err);
        EXPECT_ERR(r, err, "entry arch/data.pkl is compressed (method 8)");
    }
    {
        zent e[2] = {{"arch/data.pkl", pk.d, pk.n, 0, 0, false, false, 0},
                     {"arch/data/0", zeros, 24, 0, -4, false, false, 0}};
        r = inspect_zip(e, 2, NULL, &err);
        EXPECT_ERR(r, err, "entry arch/data/0 is STORED with two sizes");
    }
    {
        zent e[2] = {{"arch/data.pkl", pk.d, pk.n, 0, 0, false, false, 0},
                     {"arch/data/0", zeros, 20, 0, 0, false, false, 0}};
        r = inspect_zip(e, 2, NULL, &err);
        EXPECT_ERR(r,
                   err,
                   "entry arch/data/0 holds 20 bytes, storage '0' 24 (6 "
                   "elements of torch.float32)");
    }
    {
        /* a name over 48 bytes, twice: the message cuts it at 48 */
        static const char long_name[] =
            "arch/0123456789012345678901234567890123456789012345678901";
        zent e[2] = {{long_name, zeros, 1, 0, 0, false, false, 0},
                     {long_name, zeros, 1, 0, 0, false, false, 0}};
        r = inspect_zip(e, 2, NULL, &err);
        CHECK(r == NULL);
        CHECK_EQ_STR(err.message,
                     "t.pt: zip: duplicate entry "
                     "arch/0123456789012345678901234567890123456789012");
    }
    {
        /* an empty archive: only the end record (PK 5 6) */
        r = inspect_zip(NULL, 0, NULL, &err);
        EXPECT_ERR(r, err, "no data.pkl entry");
    }
    free(pk.d);
}

/* Zip files edited after writing: offsets that point elsewhere. */
static void
test_zip_bad_offsets(void)
{
    ts_error err;
    bytes pk = {0}, z = {0};
    zent e[2];
    static const zopts none = {0};
    size_t cd, eocd;
    json_t *r;
    w_pickle(&pk);
    memset(e, 0, sizeof e);
    e[0].name = "arch/data.pkl";
    e[0].data = pk.d;
    e[0].size = pk.n;
    e[1].name = "arch/data/0";
    e[1].data = zeros;
    e[1].size = 24;
    zip_file(&z, e, 2, &none);
    eocd = z.n - 22;
    cd = ck_le32(z.d + eocd + 16);
    /* Zip64 fields in a plain end record */
    z.d[eocd + 10] = 0xff;
    z.d[eocd + 11] = 0xff;
    r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", &err);
    EXPECT_ERR(r, err, "Zip64 fields without a Zip64 locator");
    z.d[eocd + 10] = 2;
    z.d[eocd + 11] = 0;
    /* the directory said to start past its end record */
    z.d[eocd + 16] = (unsigned char)(eocd + 1);
    z.d[eocd + 17] = (unsigned char)((eocd + 1) >> 8);
    r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", &err);
    EXPECT_ERR(
        r, err, "the central directory does not lie before its end record");
    z.d[eocd + 16] = (unsigned char)cd;
    z.d[eocd + 17] = (unsigned char)(cd >> 8);
    /* data.pkl's local header offset (central entry + 42) past the
     * directory */
    z.d[cd + 42] = (unsigned char)(cd - 10);
    z.d[cd + 43] = (unsigned char)((cd - 10) >> 8);
    r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", &err);
    EXPECT_ERR(r, err, "is not before the central directory");
    /* pointing at data.pkl's own data: no local header there */
    z.d[cd + 42] = 30 + 13;
    z.d[cd + 43] = 0;
    r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", &err);
    EXPECT_ERR(r, err, "entry arch/data.pkl: no local header at byte 43");
    z.d[cd + 42] = 0;
    /* a local header whose name length runs its data past the directory */
    z.d[26] = 0xff;
    z.d[27] = 0x7f;
    r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", &err);
    EXPECT_ERR(r, err, "run past the central directory");
    z.d[26] = 13;
    z.d[27] = 0;
    /* intact again: read */
    r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", &err);
    CHECK(r != NULL);
    json_decref(r);
    free(z.d);
    free(pk.d);
}

/* ---- the pickle machine, through data.pkl ---- */

/* The report of data.pkl = pickle, with storages data/KEY of the sizes
 * given (NULL-terminated key list, sizes in bytes). */
static json_t *
run_pickle(const bytes *pk,
           const char *const *keys,
           const size_t *sizes,
           ts_error *err)
{
    zent e[8];
    char names[8][32];
    size_t n = 1;
    memset(e, 0, sizeof e);
    e[0].name = "arch/data.pkl";
    e[0].data = pk->d;
    e[0].size = pk->n;
    for (size_t k = 0; keys != NULL && keys[k] != NULL && n < 8; k++, n++) {
        snprintf(names[n], sizeof names[n], "arch/data/%s", keys[k]);
        e[n].name = names[n];
        e[n].data = zeros;
        e[n].size = sizes[k];
    }
    return inspect_zip(e, n, NULL, err);
}

/* The error of a pickle of `code` bytes (after PROTO 2). */
static void
expect_pickle_error(const char *code, size_t n, const char *fragment)
{
    bytes pk = {0};
    ts_error err;
    json_t *r;
    op(&pk, 0x80);
    op(&pk, 2);
    put(&pk, code, n);
    r = run_pickle(&pk, NULL, NULL, &err);
    EXPECT_ERR(r, err, fragment);
    free(pk.d);
}

#define PICKLE_ERROR(lit, fragment) \
    expect_pickle_error((lit), sizeof(lit) - 1, (fragment))

static void
test_pickle_errors(void)
{
    ts_error err;
    json_t *r;
    bytes pk = {0};
    /* protocol 1 */
    op(&pk, 0x80);
    op(&pk, 1);
    op(&pk, 'N');
    op(&pk, '.');
    r = run_pickle(&pk, NULL, NULL, &err);
    EXPECT_ERR(r, err, "pickle protocol outside 2..5");
    free(pk.d);
    PICKLE_ERROR("(N\x01.", "an opcode this reader does not run: 0x01");
    PICKLE_ERROR("Nh\x05.", "a memo reference to nothing");
    PICKLE_ERROR("Nj\x05\x00\x00\x00.", "a memo reference to nothing");
    PICKLE_ERROR("Nr\xff\xff\x00\x00.",
                 "a memo index past what the pickle can hold");
    PICKLE_ERROR("(\x86.", "a tuple of more items than the stack holds");
    PICKLE_ERROR("(N\x86.", "a mark inside a tuple");
    PICKLE_ERROR("(NNNd.", "DICT of an odd number of items");
    PICKLE_ERROR("}(NNNu.", "SETITEMS with an odd number of items");
    PICKLE_ERROR("NNNs.", "items added to a value that is no container");
    PICKLE_ERROR("(Ne.", "no container below the mark");
    PICKLE_ERROR("0.", "pop from an empty stack");
    PICKLE_ERROR("NN.", "STOP with a stack that does not hold one value");
    PICKLE_ERROR("K\x01K\x02\x93.",
                 "STACK_GLOBAL of values that are not text");
    PICKLE_ERROR(
        "X\xff\x00\x00\x00"
        "ab.",
        "truncated: a string ends past the pickle");
    PICKLE_ERROR("cmod\x00x\nname\n.", "a global name holding NUL");
    /* persistent ids */
    PICKLE_ERROR("K\x01Q.", "a persistent id that is not ('storage'");
    PICKLE_ERROR(
        "(\x8c\x07storagectorch\nFloatStorage\n\x8c\x00"
        "\x8c\x03"
        "cpuK\x01tQ.",
        "a storage key that is empty, too long or holds NUL");
    PICKLE_ERROR(
        "(\x8c\x07storagectorch\nNoSuchStorage\n\x8c\x01"
        "0\x8c\x03"
        "cpuK\x01tQ.",
        "an unknown storage type torch.NoSuchStorage");
    PICKLE_ERROR(
        "(\x8c\x07storagectorch\nFloatStorage\n\x8c\x01"
        "0\x8c\x03"
        "cpuK\x01K\x00tQ.",
        "storage views (legacy view metadata) are not read");
    /* one key, two sizes */
    PICKLE_ERROR(
        "(\x8c\x07storagectorch\nFloatStorage\n\x8c\x01"
        "0\x8c\x03"
        "cpuK\x01tQ"
        "(\x8c\x07storagectorch\nFloatStorage\n\x8c\x01"
        "0\x8c\x03"
        "cpuK\x02tQ\x86.",
        "storage key used twice with different sizes: 0");
    /* a storage size that overflows int64 (LONG1 of 8 bytes) */
    PICKLE_ERROR(
        "(\x8c\x07storagectorch\nDoubleStorage\n\x8c\x01"
        "0\x8c\x03"
        "cpu\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40tQ.",
        "a storage size that overflows");
    /* rebuild calls */
    PICKLE_ERROR("ctorch._utils\n_rebuild_tensor_v2\n(K\x01tR.",
                 "a tensor rebuild call with too few arguments");
    PICKLE_ERROR("ctorch._utils\n_rebuild_tensor_v3\n(K\x01K\x01K\x01K\x01tR.",
                 "a tensor rebuild call with too few arguments");
    PICKLE_ERROR("ctorch._utils\n_rebuild_meta_tensor_no_storage\n(K\x01tR.",
                 "a meta tensor rebuild with too few arguments");
}

static void
test_pickle_values(void)
{
    ts_error err;
    json_t *r;
    bytes pk = {0};
    const char *keys[] = {"0", "1", NULL};
    const size_t sizes[] = {16, 8};
    rich_pickle(&pk);
    r = run_pickle(&pk, keys, sizes, &err);
    CHECK(r != NULL);
    if (r == NULL) {
        fprintf(stderr, "%s\n", err.message);
        free(pk.d);
        return;
    }
    /* a.0 (4 float32), b (2x2 bf16), c (the same tensor as a.0), d meta */
    CHECK_EQ_INT(total(r, "tensors"), 4);
    CHECK_EQ_INT(total(r, "elements"), 4 + 4 + 4 + 15);
    /* bytes: 16 + 8 + 16 + 0 (meta) */
    CHECK_EQ_INT(total(r, "tensor_bytes"), 16 + 8 + 16);
    CHECK_EQ_INT(total(r, "stored_bytes"), 16 + 8);
    CHECK_EQ_STR(json_string_value(json_object_get(tensor(r, 0), "name")),
                 "a.0");
    CHECK_EQ_STR(json_string_value(json_object_get(tensor(r, 1), "dtype")),
                 "torch.bfloat16");
    CHECK_EQ_STR(json_string_value(json_object_get(tensor(r, 3), "name")),
                 "d");
    CHECK_EQ_STR(json_string_value(json_object_get(tensor(r, 3), "dtype")),
                 "torch.float16");
    /* a.0 and c are one view of storage 0: tied */
    CHECK_EQ_STR(
        json_string_value(json_object_get(
            json_array_get(json_object_get(r, "shared"), 0), "relation")),
        "tied");
    /* mymod.Thing and mymod.Other are not allowed */
    CHECK(has_code(r, "checkpoint_unsafe_global"));
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(json_object_get(r, "totals"), "tensors"),
                     "status")),
                 "partial");
    json_decref(r);
    free(pk.d);
}

static void
test_pickle_tensors(void)
{
    ts_error err;
    json_t *r;
    bytes pk = {0};
    const char *keys[] = {"0", NULL};
    size_t sizes[] = {24};
    calls_pickle(&pk);
    r = run_pickle(&pk, keys, sizes, &err);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_INT(total(r, "tensors"), 1);
        CHECK_EQ_INT(total(r, "tensor_bytes"), 24);
        CHECK_EQ_STR(json_string_value(json_object_get(tensor(r, 0), "name")),
                     "p");
        CHECK(has_code(r, "checkpoint_unknown_object"));
    }
    else {
        fprintf(stderr, "%s\n", err.message);
    }
    json_decref(r);
    free(pk.d);
}

/* Tensor records the walk refuses. */
static void
expect_tensor_error(const int *size,
                    const int *stride,
                    int ndim,
                    int nstride,
                    int offset,
                    int numel,
                    const char *fragment)
{
    ts_error err;
    json_t *r;
    bytes pk = {0};
    const char *keys[] = {"0", NULL};
    size_t sizes[1];
    sizes[0] = (size_t)numel * 4;
    op(&pk, 0x80);
    op(&pk, 2);
    op(&pk, '}');
    op(&pk, '(');
    p_str(&pk, "t");
    p_global(&pk, "torch._utils", "_rebuild_tensor_v2");
    op(&pk, '(');
    p_storage(&pk, "FloatStorage", "0", numel);
    p_int(&pk, offset);
    p_ints(&pk, ndim, size);
    p_ints(&pk, nstride, stride);
    op(&pk, 0x89);
    op(&pk, ')');
    op(&pk, 't');
    op(&pk, 'R');
    op(&pk, 'u');
    op(&pk, '.');
    r = run_pickle(&pk, keys, sizes, &err);
    EXPECT_ERR(r, err, fragment);
    free(pk.d);
}

static void
test_tensor_records(void)
{
    static const int s2[2] = {2, 3}, st2[2] = {3, 1}, st1[1] = {1};
    /* size and stride of different lengths */
    expect_tensor_error(s2, st1, 2, 1, 0, 6, "tensor 't': size and stride");
    /* a view past its 6-element storage: offset 1 + 5 = element 6 */
    expect_tensor_error(s2, st2, 2, 2, 1, 6, "its view (offset 1, 2 dims)");
    {
        ts_error err;
        json_t *r;
        bytes pk = {0};
        const char *keys[] = {"0", NULL};
        size_t sizes[] = {4};
        /* an empty tensor (size 0) on a storage: placed at its storage */
        static const int s[1] = {0}, st[1] = {1};
        op(&pk, 0x80);
        op(&pk, 2);
        op(&pk, '}');
        op(&pk, '(');
        p_str(&pk, "t");
        p_tensor(&pk, "FloatStorage", "0", 1, 0, 1, s, st);
        p_str(&pk, "u");
        /* size as a list, negative stride: refused */
        p_global(&pk, "torch._utils", "_rebuild_tensor");
        op(&pk, '(');
        p_storage(&pk, "FloatStorage", "0", 1);
        p_int(&pk, 0);
        op(&pk, ']');
        op(&pk, '(');
        p_int(&pk, 1);
        op(&pk, 'e');
        op(&pk, '(');
        op(&pk, 0x8a);
        op(&pk, 1);
        op(&pk, 0xff);
        op(&pk, 't');
        op(&pk, 't');
        op(&pk, 'R');
        op(&pk, 'u');
        op(&pk, '.');
        r = run_pickle(&pk, keys, sizes, &err);
        EXPECT_ERR(r,
                   err,
                   "tensor 'u': size, stride and offset must be "
                   "non-negative integers");
        free(pk.d);
    }
    {
        ts_error err;
        json_t *r;
        bytes pk = {0};
        const char *keys[] = {"0", NULL};
        size_t sizes[] = {4};
        static const int s[1] = {0}, st[1] = {1};
        op(&pk, 0x80);
        op(&pk, 2);
        op(&pk, '}');
        op(&pk, '(');
        p_str(&pk, "t");
        p_tensor(&pk, "FloatStorage", "0", 1, 0, 1, s, st);
        op(&pk, 'u');
        op(&pk, '.');
        r = run_pickle(&pk, keys, sizes, &err);
        CHECK(r != NULL);
        if (r != NULL) {
            /* data/0's data: after data.pkl's header, name and bytes and
             * its own 30 + 11 */
            CHECK_EQ_INT(
                json_integer_value(json_object_get(tensor(r, 0), "offset")),
                30 + 13 + (int64_t)pk.n + 30 + 11);
            CHECK_EQ_INT(
                json_integer_value(json_object_get(tensor(r, 0), "elements")),
                0);
        }
        json_decref(r);
        free(pk.d);
    }
    {
        /* the dtype argument of v3 that is not a dtype; a storage that is
         * not a persistent id */
        PICKLE_ERROR(
            "ctorch._utils\n_rebuild_tensor_v3\n(NK\x00(K\x01t(K\x01t"
            "\x89)K\x05tR.",
            "its dtype is not a torch dtype");
        PICKLE_ERROR(
            "ctorch._utils\n_rebuild_tensor_v2\n(K\x07K\x00(K\x01t(K"
            "\x01t\x89)tR.",
            "its storage is not a persistent id");
    }
}


/* More zip layouts: Zip64 fields one at a time, short names, long names,
 * sizes past the directory, saturated fields without Zip64. */
static void
test_zip_fields(void)
{
    ts_error err;
    bytes pk = {0};
    json_t *r;
    static const zopts none = {0};
    w_pickle(&pk);
    {
        /* only the local header offset in the Zip64 field; a one-byte
         * entry name */
        zent e[3] = {{"a", zeros, 1, 0, 0, false, false, 0},
                     {"data.pkl", pk.d, pk.n, 0, 0, false, false, 1},
                     {"data/0", zeros, 24, 0, 0, false, false, 0}};
        r = inspect_zip(e, 3, NULL, &err);
        CHECK(r != NULL);
        CHECK_EQ_INT(total(r, "stored_bytes"), 24);
        json_decref(r);
        e[1].only_local = 2;
        r = inspect_zip(e, 3, NULL, &err);
        EXPECT_ERR(r, err, "an entry's Zip64 sizes are missing or short");
        /* sizes only in the field (offset plain); an unrelated field; a
         * field longer than the extra data (ignored) */
        e[1].only_local = 3;
        e[2].only_local = 5;
        e[0].only_local = 6;
        r = inspect_zip(e, 3, NULL, &err);
        CHECK(r != NULL);
        CHECK_EQ_INT(total(r, "stored_bytes"), 24);
        json_decref(r);
        e[1].only_local = 4;
        r = inspect_zip(e, 3, NULL, &err);
        EXPECT_ERR(r, err, "an entry's Zip64 sizes are missing or short");
    }
    {
        /* a compressed data.pkl under a 90-byte folder: its name cut at
         * 80 bytes in the error */
        char name[128];
        zent e[1] = {{name, zeros, 1, 8, 0, false, false, 0}};
        memset(name, 'f', 90);
        memcpy(name + 90, "/data.pkl", 10);
        r = inspect_zip(e, 1, NULL, &err);
        CHECK(r == NULL);
        CHECK(strstr(err.message, "zip: entry ffffffffff") != NULL
              && strstr(err.message,
                        "ffff is compressed (method 8); torch.save writes "
                        "STORED entries")
                     != NULL);
        /* 80 of the 99 bytes: no "/data.pkl" */
        CHECK(strstr(err.message, "/data.pkl") == NULL);
    }
    {
        /* a compressed entry whose name is cut at 80 bytes in the error */
        static const char name[] =
            "arch/data/"
            "0123456789012345678901234567890123456789012345678901234567890123"
            "456789xyz";
        zent e[1] = {{name, zeros, 1, 8, 0, false, false, 0}};
        bytes z = {0};
        zip_file(&z, e, 1, &none);
        r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", &err);
        EXPECT_ERR(r, err, "no data.pkl entry");
        free(z.d);
    }
    {
        bytes z = {0};
        zent e[2];
        size_t cd, eocd;
        memset(e, 0, sizeof e);
        e[0].name = "arch/data.pkl";
        e[0].data = pk.d;
        e[0].size = pk.n;
        e[1].name = "arch/data/0";
        e[1].data = zeros;
        e[1].size = 24;
        zip_file(&z, e, 2, &none);
        eocd = z.n - 22;
        cd = ck_le32(z.d + eocd + 16);
        /* data.pkl said to hold 4096 bytes (both sizes): past the
         * directory */
        z.d[cd + 20] = 0;
        z.d[cd + 21] = 0x10;
        z.d[cd + 24] = 0;
        z.d[cd + 25] = 0x10;
        r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", &err);
        EXPECT_ERR(r, err, "entry arch/data.pkl: its 4096 bytes at byte 43");
        z.d[cd + 20] = (unsigned char)pk.n;
        z.d[cd + 21] = 0;
        z.d[cd + 24] = (unsigned char)pk.n;
        z.d[cd + 25] = 0;
        /* saturated directory size, then offset, without a locator */
        memset(z.d + eocd + 12, 0xff, 4);
        r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", &err);
        EXPECT_ERR(r, err, "Zip64 fields without a Zip64 locator");
        z.d[eocd + 12] = (unsigned char)(eocd - cd);
        z.d[eocd + 13] = (unsigned char)((eocd - cd) >> 8);
        z.d[eocd + 14] = 0;
        z.d[eocd + 15] = 0;
        memset(z.d + eocd + 16, 0xff, 4);
        r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", &err);
        EXPECT_ERR(r, err, "Zip64 fields without a Zip64 locator");
        z.d[eocd + 16] = (unsigned char)cd;
        z.d[eocd + 17] = (unsigned char)(cd >> 8);
        z.d[eocd + 18] = 0;
        z.d[eocd + 19] = 0;
        /* a directory size that runs past the end record */
        z.d[eocd + 12] = (unsigned char)(eocd - cd + 1);
        z.d[eocd + 13] = (unsigned char)((eocd - cd + 1) >> 8);
        r = ts_checkpoint_inspect_memory(z.d, z.n, "t.pt", &err);
        EXPECT_ERR(r,
                   err,
                   "the central directory does not lie before its end "
                   "record");
        free(z.d);
    }
    free(pk.d);
}

static void
test_pickle_truncations(void)
{
    /* each opcode cut after its code byte */
    PICKLE_ERROR("\x95\x01\x00",
                 "truncated: the pickle ends inside an opcode");
    PICKLE_ERROR("\x8b\x01\x00",
                 "truncated: the pickle ends inside an opcode");
    PICKLE_ERROR("\x8b\x05\x00\x00\x00\x01",
                 "truncated: the pickle ends inside an opcode");
    PICKLE_ERROR("X\x01\x00", "truncated: the pickle ends inside an opcode");
    PICKLE_ERROR("\x8d\x01\x00",
                 "truncated: the pickle ends inside an opcode");
    PICKLE_ERROR("Nr\x01\x00", "truncated: the pickle ends inside an opcode");
    PICKLE_ERROR("j\x01\x00", "truncated: the pickle ends inside an opcode");
    PICKLE_ERROR("cmod", "truncated: a GLOBAL line without its end");
    /* too few values for an opcode */
    PICKLE_ERROR("a.", "pop from an empty stack");
    PICKLE_ERROR("N\x93.", "pop from an empty stack");
    PICKLE_ERROR("N\x81.", "pop from an empty stack");
    PICKLE_ERROR("NN\x92.", "pop from an empty stack");
    PICKLE_ERROR("N\x92.", "pop from an empty stack");
    PICKLE_ERROR("\x8c\x01xK\x01\x93.",
                 "STACK_GLOBAL of values that are not text");
    PICKLE_ERROR("(.", "STOP with a stack that does not hold one value");
    /* opcodes on an empty stack, or without a mark */
    static const char *const empty_ops[] = {
        "\x93.", "\x92.", "\x81.", "R.", "Q.", "b.", "s.", "Ns."};
    for (size_t k = 0; k < sizeof empty_ops / sizeof *empty_ops; k++) {
        expect_pickle_error(
            empty_ops[k], strlen(empty_ops[k]), "pop from an empty stack");
    }
    static const char *const no_mark[] = {
        "e.", "t.", "l.", "d.", "\x91.", "1.", "Nu."};
    for (size_t k = 0; k < sizeof no_mark / sizeof *no_mark; k++) {
        expect_pickle_error(
            no_mark[k], strlen(no_mark[k]), "no mark on the stack");
    }
    static const char *const no_top[] = {"2.", "Na.", "NNs.", "Nb."};
    for (size_t k = 0; k < sizeof no_top / sizeof *no_top; k++) {
        expect_pickle_error(
            no_top[k], strlen(no_top[k]), "the stack is empty");
    }
    PICKLE_ERROR("\x8f(N\x90(K\x01\x91K\x00\x8a\x01\xff\x86.",
                 "STOP with a stack that does not hold one value");
}

static void
test_pickle_calls(void)
{
    ts_error err;
    json_t *r;
    /* a persistent id with a negative numel */
    PICKLE_ERROR(
        "(\x8c\x07storagectorch\nFloatStorage\n\x8c\x01"
        "0\x8c\x03"
        "cpu\x8a\x01\xfftQ.",
        "a persistent id that is not ('storage'");
    /* rebuild calls whose arguments are no tuple */
    PICKLE_ERROR("ctorch._utils\n_rebuild_tensor_v2\nK\x01R.",
                 "a tensor rebuild call with too few arguments");
    PICKLE_ERROR("ctorch._utils\n_rebuild_meta_tensor_no_storage\nK\x01R.",
                 "a meta tensor rebuild with too few arguments");
    /* a global name over 64 KiB */
    {
        bytes pk = {0};
        char *big = calloc(65537 + 1, 1);
        memset(big, 'm', 65537);
        op(&pk, 0x80);
        op(&pk, 2);
        op(&pk, 'X');
        le(&pk, 65537, 4);
        put(&pk, big, 65537);
        p_str(&pk, "name");
        op(&pk, 0x93);
        op(&pk, '.');
        r = run_pickle(&pk, NULL, NULL, &err);
        EXPECT_ERR(r, err, "a global name longer than 64 KiB");
        free(pk.d);
        free(big);
    }
    /* a global whose name (not module) is over 64 KiB */
    {
        bytes pk = {0};
        char *big = calloc(65537 + 1, 1);
        memset(big, 'n', 65537);
        op(&pk, 0x80);
        op(&pk, 2);
        p_str(&pk, "mod");
        op(&pk, 'X');
        le(&pk, 65537, 4);
        put(&pk, big, 65537);
        op(&pk, 0x93);
        op(&pk, '.');
        r = run_pickle(&pk, NULL, NULL, &err);
        EXPECT_ERR(r, err, "a global name longer than 64 KiB");
        free(pk.d);
        free(big);
    }
    /* a storage location of 70 bytes is not kept */
    {
        bytes pk = {0};
        char loc[71];
        memset(loc, 'l', 70);
        loc[70] = '\0';
        op(&pk, 0x80);
        op(&pk, 2);
        op(&pk, '(');
        p_str(&pk, "storage");
        p_global(&pk, "torch", "ByteStorage");
        p_str(&pk, "0");
        p_str(&pk, loc);
        p_int(&pk, 3);
        op(&pk, 't');
        op(&pk, 'Q');
        op(&pk, '.');
        r = run_pickle(
            &pk, (const char *const[]){"0", NULL}, (const size_t[]){3}, &err);
        CHECK(r != NULL);
        if (r != NULL) {
            const json_t *st =
                json_array_get(json_object_get(r, "storages"), 0);
            CHECK(json_is_null(json_object_get(st, "location")));
            CHECK_EQ_INT(json_integer_value(json_object_get(st, "bytes")), 3);
        }
        json_decref(r);
        free(pk.d);
    }
    /* the other tensor kinds torch rebuilds: diagnosed, not read; a
     * Parameter of nothing, _rebuild_from_type_v2 nested too deep or with
     * too few arguments */
    {
        static const char *const kinds[] = {
            "_rebuild_sparse_tensor",
            "_rebuild_nested_tensor",
            "_rebuild_wrapper_subclass",
            "_rebuild_device_tensor_from_numpy",
            "_rebuild_device_tensor_from_cpu_tensor",
        };
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
            bytes pk = {0};
            const char *msg;
            op(&pk, 0x80);
            op(&pk, 2);
            p_global(&pk, "torch._utils", kinds[k]);
            op(&pk, ')');
            op(&pk, 'R');
            op(&pk, '.');
            r = run_pickle(&pk, NULL, NULL, &err);
            CHECK(r != NULL);
            msg = json_string_value(json_object_get(
                json_array_get(json_object_get(r, "diagnostics"), 0),
                "message"));
            CHECK(msg != NULL && strstr(msg, kinds[k]) != NULL
                  && strstr(msg, "is not read") != NULL);
            CHECK_EQ_INT(total(r, "tensors"), 0);
            json_decref(r);
            free(pk.d);
        }
    }
    {
        bytes pk = {0};
        op(&pk, 0x80);
        op(&pk, 2);
        op(&pk, '(');
        /* Parameter(3) (not a tuple), Parameter(), with_state(()) */
        p_global(&pk, "torch.nn.parameter", "Parameter");
        p_int(&pk, 3);
        op(&pk, 'R');
        p_global(&pk, "torch.nn.parameter", "Parameter");
        op(&pk, ')');
        op(&pk, 'R');
        p_global(&pk, "torch._utils", "_rebuild_parameter_with_state");
        op(&pk, ')');
        op(&pk, 'R');
        /* _rebuild_from_type_v2 with too few arguments, and with an
         * argument that is no tuple */
        p_global(&pk, "torch._tensor", "_rebuild_from_type_v2");
        op(&pk, '(');
        p_int(&pk, 1);
        op(&pk, 't');
        op(&pk, 'R');
        p_global(&pk, "torch._tensor", "_rebuild_from_type_v2");
        p_int(&pk, 1);
        op(&pk, 'R');
        /* five levels of _rebuild_from_type_v2: the fifth is opaque */
        p_global(&pk, "torch._tensor", "_rebuild_from_type_v2");
        for (int k = 0; k < 5; k++) {
            op(&pk, '(');
            p_global(&pk, "torch._tensor", "_rebuild_from_type_v2");
            op(&pk, 'N');
        }
        op(&pk, ')');
        for (int k = 0; k < 5; k++) {
            op(&pk, 't');
        }
        op(&pk, 'R');
        /* a persistent id whose location is no text: no location */
        p_storage(&pk, "HalfStorage", "7", 3);
        op(&pk, 'l');
        op(&pk, '.');
        r = run_pickle(
            &pk, (const char *const[]){"7", NULL}, (const size_t[]){6}, &err);
        CHECK(r != NULL);
        if (r != NULL) {
            const json_t *st =
                json_array_get(json_object_get(r, "storages"), 0);
            CHECK_EQ_INT(total(r, "tensors"), 0);
            CHECK_EQ_STR(json_string_value(json_object_get(st, "dtype")),
                         "torch.float16");
            CHECK_EQ_INT(json_integer_value(json_object_get(st, "bytes")), 6);
        }
        else {
            fprintf(stderr, "%s\n", err.message);
        }
        json_decref(r);
        free(pk.d);
    }
}

/* Values the walk refuses or cuts. */
static void
test_walk_limits(void)
{
    ts_error err;
    json_t *r;
    /* 300 nested lists: cut at depth 256, diagnosed */
    {
        bytes pk = {0};
        op(&pk, 0x80);
        op(&pk, 2);
        for (int k = 0; k < 300; k++) {
            op(&pk, ']');
        }
        for (int k = 0; k < 299; k++) {
            op(&pk, 'a');
        }
        op(&pk, '.');
        r = run_pickle(&pk, NULL, NULL, &err);
        CHECK(r != NULL);
        CHECK(has_code(r, "checkpoint_unknown_object"));
        json_decref(r);
        free(pk.d);
    }
    /* a key of 300 bytes (the path grows past 256), a key holding NUL
     * (skipped), with a tensor under each */
    {
        bytes pk = {0};
        char key[301];
        static const int s[1] = {2}, st[1] = {1};
        memset(key, 'k', 300);
        key[300] = '\0';
        op(&pk, 0x80);
        op(&pk, 2);
        op(&pk, '}');
        op(&pk, '(');
        op(&pk, 'X');
        le(&pk, 300, 4);
        put(&pk, key, 300);
        p_tensor(&pk, "FloatStorage", "0", 2, 0, 1, s, st);
        op(&pk, 0x8c);
        op(&pk, 3);
        put(&pk, "a\0b", 3);
        p_tensor(&pk, "FloatStorage", "0", 2, 0, 1, s, st);
        op(&pk, 'u');
        op(&pk, '.');
        r = run_pickle(
            &pk, (const char *const[]){"0", NULL}, (const size_t[]){8}, &err);
        CHECK(r != NULL);
        if (r != NULL) {
            CHECK_EQ_INT(total(r, "tensors"), 1);
            CHECK_EQ_INT(strlen(json_string_value(
                             json_object_get(tensor(r, 0), "name"))),
                         300);
        }
        json_decref(r);
        free(pk.d);
    }
    /* tensor records: stride no tuple, 65 dims, offset None or -1,
     * a stride of None, sizes whose product overflows, a view whose
     * extent overflows */
    PICKLE_ERROR(
        "ctorch._utils\n_rebuild_tensor_v2\n(NK\x00(K\x01tK\x01"
        "\x89)tR.",
        "size and stride are not two lists");
    {
        bytes pk = {0};
        op(&pk, 0x80);
        op(&pk, 2);
        p_global(&pk, "torch._utils", "_rebuild_tensor_v2");
        op(&pk, '(');
        op(&pk, 'N');
        p_int(&pk, 0);
        for (int t = 0; t < 2; t++) {
            op(&pk, '(');
            for (int k = 0; k < 65; k++) {
                p_int(&pk, 1);
            }
            op(&pk, 't');
        }
        op(&pk, 0x89);
        op(&pk, ')');
        op(&pk, 't');
        op(&pk, 'R');
        op(&pk, '.');
        r = run_pickle(&pk, NULL, NULL, &err);
        EXPECT_ERR(r, err, "two lists of one length (at most 64)");
        free(pk.d);
    }
    PICKLE_ERROR(
        "ctorch._utils\n_rebuild_tensor_v2\n(NN(K\x01t(K\x01t"
        "\x89)tR.",
        "size, stride and offset must be non-negative integers");
    PICKLE_ERROR(
        "ctorch._utils\n_rebuild_tensor_v2\n(N\x8a\x01\xff(K\x01t(K"
        "\x01t\x89)tR.",
        "size, stride and offset must be non-negative integers");
    PICKLE_ERROR(
        "ctorch._utils\n_rebuild_tensor_v2\n(NK\x00(K\x01t(Nt"
        "\x89)tR.",
        "size, stride and offset must be non-negative integers");
    /* 2^62 x 2^62 elements */
    PICKLE_ERROR(
        "ctorch._utils\n_rebuild_meta_tensor_no_storage\n(ctorch\n"
        "float32\n(\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40\x8a\x08"
        "\x00\x00\x00\x00\x00\x00\x00\x40t(K\x01K\x01t\x89tR.",
        "its size overflows");
    /* 2^62 float32 elements: 2^64 bytes */
    PICKLE_ERROR(
        "ctorch._utils\n_rebuild_meta_tensor_no_storage\n(ctorch\n"
        "float32\n(\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40t(K\x01t"
        "\x89tR.",
        "its size overflows");
    /* a 2-element view with stride 2^62 at offset 2^62: its extent
     * overflows, and so reaches past the storage */
    {
        bytes pk = {0};
        op(&pk, 0x80);
        op(&pk, 2);
        p_global(&pk, "torch._utils", "_rebuild_tensor_v2");
        op(&pk, '(');
        p_storage(&pk, "FloatStorage", "0", 2);
        put(&pk, "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40", 10);
        op(&pk, '(');
        p_int(&pk, 2);
        op(&pk, 't');
        op(&pk, '(');
        put(&pk, "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40", 10);
        op(&pk, 't');
        op(&pk, 0x89);
        op(&pk, ')');
        op(&pk, 't');
        op(&pk, 'R');
        op(&pk, '.');
        r = run_pickle(&pk, NULL, NULL, &err);
        EXPECT_ERR(r, err, "reaches past storage '0' (8 bytes)");
        free(pk.d);
    }
}

/* ---- legacy files ---- */

static void
legacy_file(bytes *b,
            const bytes *main_pickle,
            const char *keys_pickle,
            size_t keys_len,
            const int64_t *numels,
            const size_t *nbytes,
            size_t nstorages,
            size_t trailing)
{
    static const unsigned char magic[] = {0x80,
                                          0x02,
                                          0x8a,
                                          0x0a,
                                          0x6c,
                                          0xfc,
                                          0x9c,
                                          0x46,
                                          0xf9,
                                          0x20,
                                          0x6a,
                                          0xa8,
                                          0x50,
                                          0x19,
                                          '.'};
    put(b, magic, sizeof magic);
    put(b, "\x80\x02M\xe9\x03.", 6); /* 1001 */
    put(b, "\x80\x02}.", 4);         /* sys_info */
    put(b, main_pickle->d, main_pickle->n);
    put(b, keys_pickle, keys_len);
    for (size_t k = 0; k < nstorages; k++) {
        le(b, (uint64_t)numels[k], 8);
        for (size_t i = 0; i < nbytes[k]; i++) {
            op(b, 0);
        }
    }
    for (size_t i = 0; i < trailing; i++) {
        op(b, 0);
    }
}

#define KEYS(lit) (lit), sizeof(lit) - 1

static json_t *
inspect_legacy(const bytes *main_pickle,
               const char *keys_pickle,
               size_t keys_len,
               const int64_t *numels,
               const size_t *nbytes,
               size_t nstorages,
               size_t trailing,
               ts_error *err)
{
    bytes f = {0};
    json_t *r;
    legacy_file(&f,
                main_pickle,
                keys_pickle,
                keys_len,
                numels,
                nbytes,
                nstorages,
                trailing);
    ts_error_clear(err);
    r = ts_checkpoint_inspect_memory(f.d, f.n, "l.pt", err);
    free(f.d);
    return r;
}

static void
test_legacy(void)
{
    ts_error err;
    json_t *r;
    bytes pk = {0};
    const int64_t six[2] = {6, 6};
    const size_t b24[2] = {24, 24};
    w_pickle(&pk);
    /* w: 2x3 float32; 5 bytes after the storage */
    r = inspect_legacy(&pk,
                       KEYS("\x80\x02(\x8c\x01"
                            "0l."),
                       six,
                       b24,
                       1,
                       5,
                       &err);
    CHECK(r != NULL);
    if (r != NULL) {
        /* 15 + 6 + 4 bytes of small pickles, the main one, the keys (8),
         * then 8 bytes of numel before the data */
        CHECK_EQ_INT(
            json_integer_value(json_object_get(tensor(r, 0), "offset")),
            25 + (int64_t)pk.n + 8 + 8);
        CHECK_EQ_INT(total(r, "stored_bytes"), 24);
        CHECK(has_code(r, "checkpoint_unreferenced_bytes"));
    }
    else {
        fprintf(stderr, "%s\n", err.message);
    }
    json_decref(r);
    r = inspect_legacy(&pk, KEYS("\x80\x02K\x01."), six, b24, 1, 0, &err);
    EXPECT_ERR(r, err, "the storage keys are not a list of text");
    r = inspect_legacy(&pk, KEYS("\x80\x02(K\x01l."), six, b24, 1, 0, &err);
    EXPECT_ERR(r, err, "a storage key list of other than text");
    r = inspect_legacy(
        &pk, KEYS("\x80\x02(\x8c\x01\xffl."), six, b24, 1, 0, &err);
    EXPECT_ERR(r, err, "a storage key list of other than text");
    r = inspect_legacy(&pk,
                       KEYS("\x80\x02(\x8c\x01"
                            "9l."),
                       six,
                       b24,
                       1,
                       0,
                       &err);
    EXPECT_ERR(r, err, "the storage key list names '9', which no tensor uses");
    r = inspect_legacy(&pk,
                       KEYS("\x80\x02(\x8c\x01"
                            "0\x8c\x01"
                            "0l."),
                       six,
                       b24,
                       2,
                       0,
                       &err);
    EXPECT_ERR(r, err, "the storage key list names '0', twice");
    {
        const int64_t five[1] = {5};
        r = inspect_legacy(&pk,
                           KEYS("\x80\x02(\x8c\x01"
                                "0l."),
                           five,
                           b24,
                           1,
                           0,
                           &err);
        EXPECT_ERR(r,
                   err,
                   "storage '0' holds 5 elements, its persistent id "
                   "says 6");
    }
    {
        const size_t b20[1] = {20};
        r = inspect_legacy(&pk,
                           KEYS("\x80\x02(\x8c\x01"
                                "0l."),
                           six,
                           b20,
                           1,
                           0,
                           &err);
        EXPECT_ERR(r, err, "truncated: storage '0' (24 bytes at byte");
    }
    r = inspect_legacy(&pk, KEYS("\x80\x02]."), six, b24, 0, 0, &err);
    EXPECT_ERR(r, err, "1 storages are used, the key list names 0");
    free(pk.d);
    /* wrong magic numbers and versions, through the legacy reader */
    {
        static const char *const heads[] = {
            /* a 9-byte LONG1 */
            "\x80\x02\x8a\x09\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50.",
            /* 10 bytes, one changed */
            "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x18.",
            /* 20 bytes */
            "\x80\x02\x8a\x14\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01"
            "\x01\x01\x01\x01\x01\x01\x01\x01\x01.",
            /* an integer */
            "\x80\x02K\x01.",
        };
        for (size_t k = 0; k < sizeof heads / sizeof *heads; k++) {
            bytes f = {0};
            put(&f, heads[k], strlen(heads[k]));
            put(&f, "\x80\x02M\xe9\x03.\x80\x02}.", 10);
            r = ck_inspect_memory_as(f.d, f.n, 3, &err);
            EXPECT_ERR(r, err, "the magic number is wrong");
            free(f.d);
        }
    }
    {
        static const char *const versions[] = {"\x80\x02M\xe8\x03.",
                                               "\x80\x02N."};
        for (size_t k = 0; k < 2; k++) {
            bytes f = {0};
            put(&f,
                "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.",
                15);
            put(&f, versions[k], strlen(versions[k]));
            put(&f, "\x80\x02}.", 4);
            r = ck_inspect_memory_as(f.d, f.n, 3, &err);
            EXPECT_ERR(r, err, "legacy protocol version");
            free(f.d);
        }
    }
    {
        /* sys_info as a key list (dropped), then a main pickle that ends
         * with a mark alone */
        bytes f = {0};
        put(&f,
            "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.",
            15);
        put(&f, "\x80\x02M\xe9\x03.", 6);
        put(&f,
            "\x80\x02(\x8c\x01"
            "al.",
            7);
        put(&f, "\x80\x02(.", 4);
        r = ts_checkpoint_inspect_memory(f.d, f.n, "l.pt", &err);
        EXPECT_ERR(r, err, "STOP with a stack that does not hold one value");
        free(f.d);
    }
    {
        /* a small pickle ending with a mark alone */
        bytes f = {0};
        put(&f,
            "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.",
            15);
        put(&f, "\x80\x02(.", 4);
        r = ts_checkpoint_inspect_memory(f.d, f.n, "l.pt", &err);
        EXPECT_ERR(r, err, "STOP with a stack that does not hold one value");
        free(f.d);
    }
    {
        /* a main pickle over 1 MiB (a text of 1.5 MiB beside the tensor):
         * read again with the whole file */
        size_t big = 3 << 19;
        char *text = calloc(big, 1);
        bytes main_pk = {0};
        static const int s[1] = {2}, st[1] = {1};
        const int64_t two[1] = {2};
        const size_t b8[1] = {8};
        memset(text, 't', big);
        op(&main_pk, 0x80);
        op(&main_pk, 2);
        op(&main_pk, '}');
        op(&main_pk, '(');
        p_str(&main_pk, "note");
        op(&main_pk, 'X');
        le(&main_pk, big, 4);
        put(&main_pk, text, big);
        p_str(&main_pk, "v");
        p_tensor(&main_pk, "FloatStorage", "0", 2, 0, 1, s, st);
        op(&main_pk, 'u');
        op(&main_pk, '.');
        r = inspect_legacy(&main_pk,
                           KEYS("\x80\x02(\x8c\x01"
                                "0l."),
                           two,
                           b8,
                           1,
                           0,
                           &err);
        CHECK(r != NULL);
        if (r != NULL) {
            CHECK_EQ_INT(total(r, "tensors"), 1);
            CHECK_EQ_INT(total(r, "stored_bytes"), 8);
            CHECK_EQ_INT(
                json_integer_value(json_object_get(tensor(r, 0), "offset")),
                25 + (int64_t)main_pk.n + 8 + 8);
        }
        else {
            fprintf(stderr, "%s\n", err.message);
        }
        json_decref(r);
        free(main_pk.d);
        free(text);
    }
}

/* Names that are not UTF-8 (the report could not name them): refused as
 * malformed, or, for a state dict key, skipped like a key holding NUL;
 * they were reported as out of memory. */
static void
test_names_not_utf8(void)
{
    ts_error err;
    json_t *r;
    bytes pk = {0};
    w_pickle(&pk);
    {
        zent e[2] = {{"arch/data.pkl", pk.d, pk.n, 0, 0, false, false, 0},
                     {"arch/\xff", zeros, 1, 0, 0, false, false, 0}};
        r = inspect_zip(e, 2, NULL, &err);
        EXPECT_ERR(r,
                   err,
                   "t.pt: zip: an entry name that is not UTF-8 text: "
                   "entry 1");
    }
    free(pk.d);
    PICKLE_ERROR("cmod\xff\nname\n.", "a global name that is not UTF-8 text");
    PICKLE_ERROR(
        "(\x8c\x07storagectorch\nFloatStorage\n\x8c\x01\xfe\x8c\x03"
        "cpuK\x01tQ.",
        "a storage key that is not UTF-8 text");
    {
        /* a location that is not text: no location; a key \xfe: skipped */
        static const int s[1] = {1}, st[1] = {1};
        memset(&pk, 0, sizeof pk);
        op(&pk, 0x80);
        op(&pk, 2);
        op(&pk, '}');
        op(&pk, '(');
        p_str(&pk, "\xfe");
        p_tensor(&pk, "FloatStorage", "0", 1, 0, 1, s, st);
        p_str(&pk, "ok");
        p_global(&pk, "torch._utils", "_rebuild_tensor_v2");
        op(&pk, '(');
        op(&pk, '(');
        p_str(&pk, "storage");
        p_global(&pk, "torch", "FloatStorage");
        p_str(&pk, "1");
        p_str(&pk, "cu\xc0");
        p_int(&pk, 1);
        op(&pk, 't');
        op(&pk, 'Q');
        p_int(&pk, 0);
        p_ints(&pk, 1, s);
        p_ints(&pk, 1, st);
        op(&pk, 0x89);
        op(&pk, ')');
        op(&pk, 't');
        op(&pk, 'R');
        op(&pk, 'u');
        op(&pk, '.');
        r = run_pickle(&pk,
                       (const char *const[]){"0", "1", NULL},
                       (const size_t[]){4, 4},
                       &err);
        CHECK(r != NULL);
        if (r != NULL) {
            const json_t *sts = json_object_get(r, "storages");
            CHECK_EQ_INT(total(r, "tensors"), 1);
            CHECK_EQ_STR(
                json_string_value(json_object_get(tensor(r, 0), "name")),
                "ok");
            CHECK(json_is_null(
                json_object_get(json_array_get(sts, 1), "location")));
            CHECK_EQ_STR(json_string_value(json_object_get(
                             json_array_get(sts, 0), "location")),
                         "cpu");
        }
        else {
            fprintf(stderr, "%s\n", err.message);
        }
        json_decref(r);
        free(pk.d);
    }
}

/* Python 2 module names of globals read as Python 3's; untyped storages
 * are bytes; a storage class outside torch is unknown. */
static void
test_names_of_globals(void)
{
    ts_error err;
    json_t *r;
    bytes pk = {0};
    static const int s[1] = {6}, st[1] = {1};
    op(&pk, 0x80);
    op(&pk, 2);
    op(&pk, '}');
    op(&pk, '(');
    p_str(&pk, "u");
    p_tensor(&pk, "UntypedStorage", "0", 6, 0, 1, s, st);
    p_str(&pk, "v");
    p_global(&pk, "torch._utils", "_rebuild_tensor_v2");
    op(&pk, '(');
    op(&pk, '(');
    p_str(&pk, "storage");
    p_global(&pk, "torch.storage", "UntypedStorage");
    p_str(&pk, "1");
    p_str(&pk, "cpu");
    p_int(&pk, 2);
    op(&pk, 't');
    op(&pk, 'Q');
    p_int(&pk, 0);
    {
        static const int s2[1] = {2};
        p_ints(&pk, 1, s2);
    }
    p_ints(&pk, 1, st);
    op(&pk, 0x89);
    op(&pk, ')');
    op(&pk, 't');
    op(&pk, 'R');
    p_str(&pk, "e");
    p_global(&pk, "__builtin__", "eval");
    p_str(&pk, "n");
    p_global(&pk, "copy_reg", "_reconstructor");
    op(&pk, 'u');
    op(&pk, '.');
    r = run_pickle(&pk,
                   (const char *const[]){"0", "1", NULL},
                   (const size_t[]){6, 2},
                   &err);
    CHECK(r != NULL);
    if (r != NULL) {
        const json_t *globals = json_object_get(r, "globals");
        bool eval = false, reconstructor = false;
        CHECK_EQ_STR(json_string_value(json_object_get(tensor(r, 0), "dtype")),
                     "torch.uint8");
        CHECK_EQ_INT(total(r, "tensor_bytes"), 6 + 2);
        for (size_t k = 0; k < json_array_size(globals); k++) {
            const json_t *g = json_array_get(globals, k);
            const char *name = json_string_value(json_object_get(g, "name"));
            if (strcmp(name, "builtins.eval") == 0) {
                eval = json_is_false(json_object_get(g, "allowed"));
            }
            if (strcmp(name, "copyreg._reconstructor") == 0) {
                reconstructor = true; /* copy_reg read as copyreg */
            }
        }
        CHECK(eval);
        CHECK(reconstructor);
    }
    else {
        fprintf(stderr, "%s\n", err.message);
    }
    json_decref(r);
    free(pk.d);
    PICKLE_ERROR(
        "(\x8c\x07storagecmymod\nFloatStorage\n\x8c\x01"
        "0\x8c\x03"
        "cpuK\x01tQ.",
        "an unknown storage type mymod.FloatStorage");
    PICKLE_ERROR(
        "(\x8c\x07storagectorch\nFloat\n\x8c\x01"
        "0\x8c\x03"
        "cpuK\x01tQ.",
        "an unknown storage type torch.Float");
}

/* More walks: a stride given as a list, sizes that are not integers, a
 * reach that overflows, a bad tensor inside an object's state, a key over
 * 64 KiB (skipped), and memo references that make 2^24 visits of a
 * 60-byte pickle (cut at 4,000,000, diagnosed). */
static void
test_more_walks(void)
{
    ts_error err;
    json_t *r;
    bytes pk = {0};
    static const int s3[1] = {3};
    /* stride as a LIST: a valid [3] float32 on 3 elements */
    op(&pk, 0x80);
    op(&pk, 2);
    p_global(&pk, "torch._utils", "_rebuild_tensor_v2");
    op(&pk, '(');
    p_storage(&pk, "FloatStorage", "0", 3);
    p_int(&pk, 0);
    p_ints(&pk, 1, s3);
    op(&pk, ']');
    op(&pk, '(');
    p_int(&pk, 1);
    op(&pk, 'e');
    op(&pk, 0x89);
    op(&pk, ')');
    op(&pk, 't');
    op(&pk, 'R');
    op(&pk, '.');
    r = run_pickle(
        &pk, (const char *const[]){"0", NULL}, (const size_t[]){12}, &err);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_INT(total(r, "tensor_bytes"), 12);
        CHECK_EQ_STR(json_string_value(json_object_get(tensor(r, 0), "name")),
                     "");
    }
    json_decref(r);
    free(pk.d);
    PICKLE_ERROR(
        "ctorch._utils\n_rebuild_tensor_v2\n(NK\x00(Nt(K\x01t"
        "\x89)tR.",
        "size, stride and offset must be non-negative integers");
    /* size 3, stride 2^62: (3 - 1) x 2^62 overflows */
    {
        memset(&pk, 0, sizeof pk);
        op(&pk, 0x80);
        op(&pk, 2);
        p_global(&pk, "torch._utils", "_rebuild_tensor_v2");
        op(&pk, '(');
        p_storage(&pk, "FloatStorage", "0", 3);
        p_int(&pk, 0);
        p_ints(&pk, 1, s3);
        op(&pk, '(');
        put(&pk, "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40", 10);
        op(&pk, 't');
        op(&pk, 0x89);
        op(&pk, ')');
        op(&pk, 't');
        op(&pk, 'R');
        op(&pk, '.');
        r = run_pickle(&pk, NULL, NULL, &err);
        EXPECT_ERR(r, err, "reaches past storage '0' (12 bytes)");
        free(pk.d);
    }
    /* a bad tensor (offset None) in an object's state */
    PICKLE_ERROR(
        "cmymod\nT\n)\x81(ctorch._utils\n_rebuild_tensor_v2\n(NN(K"
        "\x01t(K\x01t\x89)tRtb.",
        "size, stride and offset must be non-negative integers");
    /* a key of 70,000 bytes: its tensor is skipped */
    {
        char *key = calloc(70000, 1);
        memset(key, 'k', 70000);
        memset(&pk, 0, sizeof pk);
        op(&pk, 0x80);
        op(&pk, 2);
        op(&pk, '}');
        op(&pk, '(');
        op(&pk, 'X');
        le(&pk, 70000, 4);
        put(&pk, key, 70000);
        p_tensor(&pk, "FloatStorage", "0", 3, 0, 1, s3, (const int[]){1});
        op(&pk, 'u');
        op(&pk, '.');
        r = run_pickle(
            &pk, (const char *const[]){"0", NULL}, (const size_t[]){12}, &err);
        CHECK(r != NULL);
        if (r != NULL) {
            CHECK_EQ_INT(total(r, "tensors"), 0);
            CHECK_EQ_INT(json_array_size(json_object_get(r, "storages")), 1);
        }
        json_decref(r);
        free(pk.d);
        free(key);
    }
    /* L0 = [None]; Lk = [Lk-1, Lk-1] for k = 1..24: 2^25 values */
    {
        memset(&pk, 0, sizeof pk);
        op(&pk, 0x80);
        op(&pk, 4);
        op(&pk, ']');
        op(&pk, 'N');
        op(&pk, 'a');
        op(&pk, 0x94); /* memo 0 */
        op(&pk, '0');
        for (int k = 1; k <= 24; k++) {
            op(&pk, ']');
            op(&pk, '(');
            op(&pk, 'h');
            op(&pk, k - 1);
            op(&pk, 'h');
            op(&pk, k - 1);
            op(&pk, 'e');
            op(&pk, 0x94); /* memo k */
            op(&pk, '0');
        }
        op(&pk, 'h');
        op(&pk, 24);
        op(&pk, '.');
        r = run_pickle(&pk, NULL, NULL, &err);
        CHECK(r != NULL);
        if (r != NULL) {
            const char *msg = json_string_value(json_object_get(
                json_array_get(json_object_get(r, "diagnostics"), 0),
                "message"));
            CHECK(msg != NULL
                  && strstr(msg, "reach more than 4000000 values") != NULL);
        }
        json_decref(r);
        free(pk.d);
    }
    /* the legacy start (80 02 8a 0a) with another magic: not legacy */
    r = ts_checkpoint_inspect_memory(
        "\x80\x02\x8a\x0a\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a.",
        15,
        "m",
        &err);
    CHECK(r == NULL);
    CHECK(strstr(err.message, "not a checkpoint TorchScan reads") != NULL);
}

/* ---- checkpoint.c: detection and the file entry point ---- */

static void
test_detection(void)
{
    ts_error err;
    json_t *r;
    /* an index after white space of each kind: only the index is read */
    static const char index[] =
        " \t\r\n{\"metadata\": {}, \"weight_map\": {}}";
    r = ts_checkpoint_inspect_memory(index, sizeof index - 1, NULL, &err);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_STR(json_string_value(json_object_get(r, "format")),
                     "safetensors_sharded");
    }
    else {
        fprintf(stderr, "%s\n", err.message);
    }
    json_decref(r);
    /* NULL data: an empty file */
    r = ts_checkpoint_inspect_memory(NULL, 5, NULL, &err);
    CHECK(r == NULL);
    CHECK(strstr(err.message, "<memory>: not a checkpoint") != NULL
          && strstr(err.message, "the file is empty") != NULL);
    /* 30 bytes of text, no zip end record: unknown */
    r = ts_checkpoint_inspect_memory(
        "0123456789abcdefghijklmnopqrstuv", 32, "x", &err);
    CHECK(r == NULL);
    CHECK(strstr(err.message,
                 "x: not a checkpoint TorchScan reads (safetensors, a sharded "
                 "safetensors index, a PyTorch zip or legacy file, GGUF): it "
                 "begins with 30 31 32 33 34 35 36 37")
          != NULL);
    /* PK\3\4 prefixed by text: read as a zip whose errors are kept */
    {
        bytes z = {0};
        zent e[1] = {{"a/b/data.pkl", "x", 1, 0, 0, false, false, 0}};
        zopts o = {0};
        o.prepend = 5;
        zip_file(&z, e, 1, &o);
        r = ts_checkpoint_inspect_memory(z.d, z.n, "p.pt", &err);
        EXPECT_ERR(r, err, "p.pt: zip: no data.pkl entry");
        free(z.d);
    }
    /* GGUF of 4 bytes only; "PK" not followed by 3 4 or 5 6 */
    r = ts_checkpoint_inspect_memory("GGUF", 4, "g", &err);
    CHECK(r == NULL && err.code == TS_EFORMAT);
    r = ts_checkpoint_inspect_memory("PK\x05\x07zzzz", 8, "k", &err);
    CHECK(r == NULL);
    CHECK(strstr(err.message, "it begins with 50 4b 05 07") != NULL);
    r = ts_checkpoint_inspect_memory("Pzzzzzzz", 8, "k", &err);
    CHECK(r == NULL);
    CHECK(strstr(err.message, "it begins with 50 7a 7a 7a") != NULL);
    r = ts_checkpoint_inspect_memory("PK\x03\x05zzzz", 8, "k", &err);
    CHECK(r == NULL);
    CHECK(strstr(err.message, "it begins with 50 4b 03 05") != NULL);
    /* the fuzzing entry: a reader index out of range */
    r = ck_inspect_memory_as("x", 1, -1, &err);
    CHECK(r == NULL && err.code == TS_EINVAL);
    r = ck_inspect_memory_as("x", 1, 5, &err);
    CHECK(r == NULL && err.code == TS_EINVAL);
    r = ck_inspect_memory_as(NULL, 0, 4, &err);
    CHECK(r == NULL && err.code == TS_EFORMAT);
}

static void
test_inspect_file(void)
{
    ts_error err;
    json_t *r;
    char dir[] = "/tmp/ts_checkpoint_XXXXXX";
    char cwd[4096];
    FILE *f;
    bytes pk = {0}, z = {0};
    zent e[2];
    static const zopts none = {0};
    r = ts_checkpoint_inspect("/nonexistent/dir/model.pt", &err);
    CHECK(r == NULL && err.code == TS_EIO);
    if (mkdtemp(dir) == NULL || getcwd(cwd, sizeof cwd) == NULL) {
        CHECK(!"temporary directory");
        return;
    }
    w_pickle(&pk);
    memset(e, 0, sizeof e);
    e[0].name = "m/data.pkl";
    e[0].data = pk.d;
    e[0].size = pk.n;
    e[1].name = "m/data/0";
    e[1].data = zeros;
    e[1].size = 24;
    zip_file(&z, e, 2, &none);
    /* a plain name, read from the working directory */
    CHECK(chdir(dir) == 0);
    f = fopen("m.pt", "wb");
    CHECK(f != NULL && fwrite(z.d, 1, z.n, f) == z.n);
    if (f != NULL) {
        fclose(f);
    }
    r = ts_checkpoint_inspect("m.pt", &err);
    CHECK(r != NULL);
    if (r != NULL) {
        CHECK_EQ_INT(total(r, "file_bytes"), (int64_t)z.n);
        CHECK_EQ_STR(
            json_string_value(json_object_get(
                json_array_get(json_object_get(r, "files"), 0), "name")),
            "m.pt");
    }
    json_decref(r);
    remove("m.pt");
    CHECK(chdir(cwd) == 0);
    rmdir(dir);
    free(z.d);
    free(pk.d);
}

int
main(void)
{
    test_zip_layouts();
    test_zip_bad_offsets();
    test_pickle_errors();
    test_pickle_values();
    test_pickle_tensors();
    test_tensor_records();
    test_zip_fields();
    test_pickle_truncations();
    test_pickle_calls();
    test_walk_limits();
    test_legacy();
    test_names_not_utf8();
    test_names_of_globals();
    test_more_walks();
    test_detection();
    test_inspect_file();
    return ts_test_report();
}
