/* GGUF v2 and v3 (llama.cpp's format): "GGUF", version (u32), tensor count
 * and metadata count (u64), the metadata key-values, the tensor infos
 * (name, dims, ggml type, offset), then the data from the next multiple
 * of general.alignment (32 by default). Little-endian only.
 *
 * The header is read through a buffered cursor (1 MiB windows), so a
 * vocabulary of 150,000 strings costs a few reads. Every count is bounded
 * by the bytes left in the file before anything is allocated for it;
 * metadata strings longer than 4 KiB and arrays longer than 64 items are
 * summarised, not kept. A tensor's bytes are its elements / block size x
 * type size (its first dimension a multiple of the block size); its data
 * must lie inside the file, aligned, and overlap no other tensor's. */
#include <stdlib.h>
#include <string.h>

#include "ckpt_internal.h"

#define GG_WINDOW ((size_t)1 << 20)
#define GG_MAX_STRING_KEPT 4096
#define GG_MAX_ARRAY_KEPT 64
#define GG_MAX_ARRAY_DEPTH 8

/* ggml types by id: name, elements per block, bytes per block (the gguf
 * package's GGML_QUANT_SIZES; removed ids have no name). */
static const struct gg_type {
    const char *name;
    int block, size;
} gg_types[] = {
    [0] = {"F32", 1, 4},         [1] = {"F16", 1, 2},
    [2] = {"Q4_0", 32, 18},      [3] = {"Q4_1", 32, 20},
    [6] = {"Q5_0", 32, 22},      [7] = {"Q5_1", 32, 24},
    [8] = {"Q8_0", 32, 34},      [9] = {"Q8_1", 32, 40},
    [10] = {"Q2_K", 256, 84},    [11] = {"Q3_K", 256, 110},
    [12] = {"Q4_K", 256, 144},   [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},   [15] = {"Q8_K", 256, 292},
    [16] = {"IQ2_XXS", 256, 66}, [17] = {"IQ2_XS", 256, 74},
    [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},
    [20] = {"IQ4_NL", 32, 18},   [21] = {"IQ3_S", 256, 110},
    [22] = {"IQ2_S", 256, 82},   [23] = {"IQ4_XS", 256, 136},
    [24] = {"I8", 1, 1},         [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},        [27] = {"I64", 1, 8},
    [28] = {"F64", 1, 8},        [29] = {"IQ1_M", 256, 56},
    [30] = {"BF16", 1, 2},       [34] = {"TQ1_0", 256, 54},
    [35] = {"TQ2_0", 256, 66},   [39] = {"MXFP4", 32, 17},
    [40] = {"NVFP4", 64, 36},    [41] = {"Q1_0", 128, 18},
};

#define GG_NTYPES (sizeof gg_types / sizeof gg_types[0])

bool
ck_ggml_type(uint32_t id, const char **name, int *block, int *size)
{
    if (id >= GG_NTYPES || gg_types[id].name == NULL) {
        return false;
    }
    *name = gg_types[id].name;
    *block = gg_types[id].block;
    *size = gg_types[id].size;
    return true;
}

typedef struct gg {
    const ck_source *src;
    uint64_t pos;
    uint8_t *buf;
    uint64_t buf_start;
    size_t buf_len;
    ts_error *err;
} gg;

/* Makes [pos, pos + n) readable at the returned pointer (n <= the
 * window); NULL with err set past the end of the file. */
static const uint8_t *
need(gg *g, size_t n, const char *what)
{
    if (g->pos >= g->buf_start && g->pos - g->buf_start + n <= g->buf_len) {
        return g->buf + (g->pos - g->buf_start);
    }
    if (g->pos > g->src->size || n > g->src->size - g->pos) {
        ck_read(g->src, g->pos, NULL, n, what, g->err);
        return NULL;
    }
    {
        uint64_t left = g->src->size - g->pos;
        size_t len = left < GG_WINDOW ? (size_t)left : GG_WINDOW;
        if (len < n) {
            len = n;
        }
        if (g->buf == NULL) {
            g->buf = malloc(GG_WINDOW);
            if (g->buf == NULL) {
                ts_error_set(g->err, TS_ENOMEM, "out of memory");
                return NULL;
            }
        }
        if (ck_read(g->src, g->pos, g->buf, len, what, g->err) != TS_OK) {
            return NULL;
        }
        g->buf_start = g->pos;
        g->buf_len = len;
    }
    return g->buf;
}

static bool
get_u32(gg *g, uint32_t *v, const char *what)
{
    const uint8_t *p = need(g, 4, what);
    if (p == NULL) {
        return false;
    }
    *v = ck_le32(p);
    g->pos += 4;
    return true;
}

static bool
get_u64(gg *g, uint64_t *v, const char *what)
{
    const uint8_t *p = need(g, 8, what);
    if (p == NULL) {
        return false;
    }
    *v = ck_le64(p);
    g->pos += 8;
    return true;
}

static bool
skip(gg *g, uint64_t n, const char *what)
{
    if (n > g->src->size - g->pos) {
        ck_read(g->src,
                g->pos,
                NULL,
                (size_t)(n > SIZE_MAX ? SIZE_MAX : n),
                what,
                g->err);
        return false;
    }
    g->pos += n;
    return true;
}

/* A gguf_string: its length and, when kept (<= `keep` bytes), a malloc'd
 * copy. */
static bool
get_string(gg *g, uint64_t *len, char **copy, size_t keep, const char *what)
{
    uint64_t n;
    *copy = NULL;
    if (!get_u64(g, &n, what)) {
        return false;
    }
    *len = n;
    if (n <= keep) {
        const uint8_t *p = need(g, (size_t)n, what);
        if (p == NULL) {
            return false;
        }
        *copy = malloc((size_t)n + 1);
        if (*copy == NULL) {
            ts_error_set(g->err, TS_ENOMEM, "out of memory");
            return false;
        }
        memcpy(*copy, p, (size_t)n);
        (*copy)[n] = '\0';
        g->pos += n;
        return true;
    }
    return skip(g, n, what);
}

static const char *const value_types[] = {"uint8",
                                          "int8",
                                          "uint16",
                                          "int16",
                                          "uint32",
                                          "int32",
                                          "float32",
                                          "bool",
                                          "string",
                                          "array",
                                          "uint64",
                                          "int64",
                                          "float64"};
static const int value_sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

/* A string's JSON value; one that is not text is summarised. NULL: out of
 * memory. */
static json_t *
text_json(const char *s, uint64_t len)
{
    if (ck_utf8(s, (size_t)len)) {
        return json_stringn(s, (size_t)len);
    }
    return json_pack("{s:s, s:I}", "type", "bytes", "length", (json_int_t)len);
}

static int gg_fail(gg *g, const char *key, const char *what);

/* One value of type t; *out a new reference (NULL: nothing kept). */
static bool
get_value(gg *g, uint32_t t, int depth, json_t **out, const char *key)
{
    *out = NULL;
    if (t > 12) {
        gg_fail(g, key, "an unknown value type");
        return false;
    }
    if (t == 8) { /* string */
        uint64_t len;
        char *s;
        if (!get_string(
                g, &len, &s, GG_MAX_STRING_KEPT, "a metadata string")) {
            return false;
        }
        *out =
            s != NULL
                ? text_json(s, len)
                : json_pack(
                    "{s:s, s:I}", "type", "string", "length", (json_int_t)len);
        free(s);
        return *out != NULL
               || (ts_error_set(g->err, TS_ENOMEM, "out of memory"), false);
    }
    if (t == 9) { /* array */
        uint32_t et;
        uint64_t n;
        json_t *list = NULL;
        if (depth >= GG_MAX_ARRAY_DEPTH) {
            gg_fail(g, key, "arrays nested deeper than 8");
            return false;
        }
        if (!get_u32(g, &et, "an array's type")
            || !get_u64(g, &n, "an array's length")) {
            return false;
        }
        if (et > 12) {
            gg_fail(g, key, "an array of an unknown value type");
            return false;
        }
        /* every item takes at least one byte (a string eight) */
        if (n > (g->src->size - g->pos)
                    / (et == 8   ? 8
                       : et == 9 ? 12
                                 : (uint64_t)value_sizes[et])) {
            gg_fail(g, key, "an array longer than the bytes left in the file");
            return false;
        }
        if (n <= GG_MAX_ARRAY_KEPT && (list = json_array()) == NULL) {
            ts_error_set(g->err, TS_ENOMEM, "out of memory");
            return false;
        }
        if (et != 8 && et != 9 && n > GG_MAX_ARRAY_KEPT) {
            if (!skip(g, n * (uint64_t)value_sizes[et], "an array")) {
                return false;
            }
        }
        else {
            for (uint64_t k = 0; k < n; k++) {
                json_t *item;
                if (!get_value(g, et, depth + 1, &item, key)) {
                    json_decref(list);
                    return false;
                }
                if (list != NULL) {
                    if (json_array_append_new(list, item) != 0) {
                        json_decref(list);
                        ts_error_set(g->err, TS_ENOMEM, "out of memory");
                        return false;
                    }
                }
                else {
                    json_decref(item);
                }
            }
        }
        *out = list != NULL ? list
                            : json_pack("{s:s, s:s, s:I}",
                                        "type",
                                        "array",
                                        "item_type",
                                        value_types[et],
                                        "length",
                                        (json_int_t)n);
        if (*out == NULL) {
            ts_error_set(g->err, TS_ENOMEM, "out of memory");
            return false;
        }
        return true;
    }
    {
        const uint8_t *p = need(g, (size_t)value_sizes[t], "a metadata value");
        if (p == NULL) {
            return false;
        }
        switch (t) {
            case 0:
                *out = json_integer(p[0]);
                break;
            case 1:
                *out = json_integer((int8_t)p[0]);
                break;
            case 2:
                *out = json_integer(ck_le16(p));
                break;
            case 3:
                *out = json_integer((int16_t)ck_le16(p));
                break;
            case 4:
                *out = json_integer(ck_le32(p));
                break;
            case 5:
                *out = json_integer((int32_t)ck_le32(p));
                break;
            case 6: {
                uint32_t u = ck_le32(p);
                float f;
                memcpy(&f, &u, 4);
                *out = f == f && f - f == 0 ? json_real(f) : json_null();
                break;
            }
            case 7:
                *out = json_boolean(p[0] != 0);
                break;
            case 10: {
                uint64_t u = ck_le64(p);
                *out = u <= INT64_MAX ? json_integer((json_int_t)u)
                                      : json_real((double)u);
                break;
            }
            case 11:
                *out = json_integer((json_int_t)ck_le64(p));
                break;
            default: {
                uint64_t u = ck_le64(p);
                double d;
                memcpy(&d, &u, 8);
                *out = d == d && d - d == 0 ? json_real(d) : json_null();
                break;
            }
        }
        g->pos += (uint64_t)value_sizes[t];
        if (*out == NULL) {
            ts_error_set(g->err, TS_ENOMEM, "out of memory");
            return false;
        }
        return true;
    }
}

static int
gg_fail(gg *g, const char *key, const char *what)
{
    return ts_error_set(g->err,
                        TS_EFORMAT,
                        "%s: byte %llu%s%s%s: %s",
                        g->src->name,
                        (unsigned long long)g->pos,
                        key != NULL ? " (" : "",
                        key != NULL ? key : "",
                        key != NULL ? ")" : "",
                        what);
}

typedef struct gg_range {
    uint64_t begin, end;
    size_t tensor;
} gg_range;

static int
cmp_range(const void *a, const void *b)
{
    const gg_range *x = a, *y = b;
    return x->begin != y->begin ? (x->begin < y->begin ? -1 : 1)
                                : (x->end < y->end ? -1 : x->end > y->end);
}

/* A tensor info; its data range relative to the data start. */
static int
read_tensor(gg *g, ck_set *set, int file, gg_range *range, ts_error *err)
{
    uint64_t name_len, off;
    char *name;
    uint32_t ndim, type;
    ck_tensor *t;
    const char *tname;
    int block, size;
    if (!get_string(g, &name_len, &name, CK_MAX_NAME, "a tensor name")) {
        return err->code;
    }
    if (name == NULL) {
        return gg_fail(g, NULL, "a tensor name longer than 64 KiB");
    }
    if (strlen(name) != name_len) {
        free(name);
        return gg_fail(g, NULL, "a tensor name holding NUL");
    }
    if (!ck_utf8(name, (size_t)name_len)) {
        free(name);
        return gg_fail(g, NULL, "a tensor name that is not UTF-8 text");
    }
    if (!get_u32(g, &ndim, "a tensor's dimensions")) {
        free(name);
        return err->code;
    }
    if (ndim > CK_MAX_DIMS) {
        gg_fail(g, name, "more than 64 dimensions");
        free(name);
        return TS_EFORMAT;
    }
    t = ck_add_tensor(set, name, name_len, (int)ndim, err);
    free(name);
    if (t == NULL) {
        return err->code;
    }
    t->file = file;
    for (uint32_t k = 0; k < ndim; k++) {
        uint64_t d;
        if (!get_u64(g, &d, "a tensor's dimension")) {
            return err->code;
        }
        if (d > INT64_MAX) {
            return gg_fail(g, t->name, "a dimension past 2^63");
        }
        t->dims[k] = (int64_t)d;
    }
    if (!get_u32(g, &type, "a tensor's type")
        || !get_u64(g, &off, "a tensor's offset")) {
        return err->code;
    }
    if (!ck_numel(t->dims, t->ndim, &t->elements)) {
        return gg_fail(
            g, t->name, "its dimensions' product overflows 64 bits");
    }
    range->tensor = set->ntensors - 1;
    range->begin = off;
    range->end = off;
    if (!ck_ggml_type(type, &tname, &block, &size)) {
        set->incomplete = true;
        t->dtype = "unknown";
        return ck_diagnose(set,
                           "checkpoint_unknown_dtype",
                           t->name,
                           err,
                           "%s: tensor '%s' has ggml type %u, which this "
                           "reader does not know: its size is unknown",
                           g->src->name,
                           t->name,
                           type);
    }
    t->dtype = tname;
    if (t->ndim > 0 && t->dims[0] % block != 0) {
        return gg_fail(g,
                       t->name,
                       "its first dimension is not a multiple of "
                       "its type's block size");
    }
    if (!ts_mul(t->elements / block, size, &t->bytes)) {
        return gg_fail(g, t->name, "its byte size overflows 64 bits");
    }
    range->end = off + (uint64_t)t->bytes; /* checked against the file later */
    if (range->end < off) {
        return gg_fail(g, t->name, "its data range overflows");
    }
    return TS_OK;
}

int
ck_read_gguf(ck_set *set, const ck_source *src, ts_error *err)
{
    gg g;
    uint32_t version;
    uint64_t ntensors, nkv, alignment = 32, data_start;
    gg_range *ranges = NULL;
    int file, rc = TS_OK;
    memset(&g, 0, sizeof g);
    g.src = src;
    g.err = err;
    g.pos = 4; /* the magic, checked by the caller */
    if (!get_u32(&g, &version, "the version")
        || !get_u64(&g, &ntensors, "the tensor count")
        || !get_u64(&g, &nkv, "the metadata count")) {
        rc = err->code;
        goto done;
    }
    if (version != 2 && version != 3) {
        rc = ts_error_set(err,
                          TS_EFORMAT,
                          "%s: GGUF version %u (2 and 3 are read)",
                          src->name,
                          version);
        goto done;
    }
    /* a key-value takes at least 13 bytes, a tensor info 24 */
    if (nkv > src->size / 13 || ntensors > src->size / 24) {
        rc = ts_error_set(err,
                          TS_EFORMAT,
                          "%s: byte 8: %llu tensors and %llu metadata "
                          "entries cannot fit in %llu bytes",
                          src->name,
                          (unsigned long long)ntensors,
                          (unsigned long long)nkv,
                          (unsigned long long)src->size);
        goto done;
    }
    file = ck_add_file(set, src->name, "gguf", src->size, err);
    if (file < 0) {
        rc = file;
        goto done;
    }
    if (json_object_set_new(
            set->metadata, "gguf.version", json_integer(version))
        != 0) {
        rc = ts_error_set(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    for (uint64_t k = 0; k < nkv; k++) {
        uint64_t klen;
        char *key;
        uint32_t t;
        json_t *value;
        if (!get_string(&g, &klen, &key, CK_MAX_NAME, "a metadata key")) {
            rc = err->code;
            goto done;
        }
        if (key == NULL || strlen(key) != klen
            || !ck_utf8(key, (size_t)klen)) {
            free(key);
            rc = gg_fail(&g,
                         NULL,
                         "a metadata key longer than 64 KiB, holding NUL "
                         "or not UTF-8 text");
            goto done;
        }
        if (!get_u32(&g, &t, "a metadata type")
            || !get_value(&g, t, 0, &value, key)) {
            free(key);
            rc = err->code;
            goto done;
        }
        if (strcmp(key, "general.alignment") == 0) {
            if (!json_is_integer(value) || t != 4
                || json_integer_value(value) == 0
                || (json_integer_value(value)
                    & (json_integer_value(value) - 1))
                       != 0) {
                json_decref(value);
                rc = gg_fail(&g,
                             key,
                             "the alignment is not a power of two "
                             "(uint32)");
                free(key);
                goto done;
            }
            alignment = (uint64_t)json_integer_value(value);
        }
        if (json_object_get(set->metadata, key) != NULL) {
            json_decref(value);
            rc = gg_fail(&g, key, "a duplicate metadata key");
            free(key);
            goto done;
        }
        if (json_object_set_new(set->metadata, key, value) != 0) {
            free(key);
            rc = ts_error_set(err, TS_ENOMEM, "out of memory");
            goto done;
        }
        free(key);
    }
    ranges = calloc((size_t)ntensors + 1, sizeof *ranges);
    if (ranges == NULL) {
        rc = ts_error_set(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    for (uint64_t k = 0; k < ntensors; k++) {
        if ((rc = read_tensor(&g, set, file, &ranges[k], err)) != TS_OK) {
            goto done;
        }
    }
    data_start = (g.pos + alignment - 1) / alignment * alignment;
    set->files[file].header_bytes =
        data_start < src->size ? data_start : src->size;
    {
        uint64_t data_size =
            data_start <= src->size ? src->size - data_start : 0;
        size_t n = 0;
        for (uint64_t k = 0; k < ntensors; k++) {
            ck_tensor *t = &set->tensors[set->ntensors - ntensors + k];
            gg_range *r = &ranges[k];
            if (r->begin % alignment != 0) {
                rc = ts_error_set(err,
                                  TS_EFORMAT,
                                  "%s: tensor '%s': offset %llu is not a "
                                  "multiple of the alignment %llu",
                                  src->name,
                                  t->name,
                                  (unsigned long long)r->begin,
                                  (unsigned long long)alignment);
                goto done;
            }
            if (t->bytes < 0) {
                continue;
            }
            if (r->end > data_size) {
                rc = ts_error_set(err,
                                  TS_EFORMAT,
                                  "%s: tensor '%s': its %lld bytes at data "
                                  "offset %llu end past the end of the file "
                                  "(the data holds %llu bytes from byte %llu)",
                                  src->name,
                                  t->name,
                                  (long long)t->bytes,
                                  (unsigned long long)r->begin,
                                  (unsigned long long)data_size,
                                  (unsigned long long)data_start);
                goto done;
            }
            t->offset = (int64_t)(data_start + r->begin);
            ranges[n++] = *r;
        }
        qsort(ranges, n, sizeof *ranges, cmp_range);
        for (size_t k = 1; k < n; k++) {
            if (ranges[k].begin < ranges[k - 1].end
                && ranges[k].begin != ranges[k].end) {
                rc = ts_error_set(err,
                                  TS_EFORMAT,
                                  "%s: tensor '%s' overlaps tensor '%s'",
                                  src->name,
                                  set->tensors[ranges[k].tensor].name,
                                  set->tensors[ranges[k - 1].tensor].name);
                goto done;
            }
        }
    }
done:
    free(ranges);
    free(g.buf);
    return rc;
}
