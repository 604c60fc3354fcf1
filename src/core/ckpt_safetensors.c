/* safetensors files and sharded safetensors checkpoints.
 *
 * A file: an 8-byte little-endian header length N (at most 100 MiB, as the
 * safetensors package requires), N bytes of JSON, then the data. The JSON
 * object maps each tensor name to {dtype, shape, data_offsets: [begin,
 * end]}, offsets relative to the data; "__metadata__" maps text to text.
 * Refused: duplicate keys (jansson's JSON_REJECT_DUPLICATES), a dtype this
 * reader does not know, a byte range that does not hold exactly the
 * tensor's elements, ends past the file or overlaps another tensor's.
 * Bytes no tensor covers are a diagnostic (the safetensors package refuses
 * such files too; here they are reported, as they cannot mislead).
 *
 * A sharded checkpoint: `model.safetensors.index.json` holds {metadata,
 * weight_map: {tensor: shard}}. Shards are plain file names beside the
 * index (no directory part: an index cannot point elsewhere); each is read
 * as a file above, and the index and the shards are checked against each
 * other. */
#include <stdlib.h>
#include <string.h>

#include "ckpt_internal.h"
#include "record_util.h"

/* safetensors' dtypes, sorted by name: torch's name where torch reads the
 * file with the same shape (the sub-byte float types keep their own). */
static const struct st_dtype {
    const char *name, *torch;
    int bits;
} st_dtypes[] = {
    {"BF16", "torch.bfloat16", 16},
    {"BOOL", "torch.bool", 8},
    {"C64", "torch.complex64", 64},
    {"F16", "torch.float16", 16},
    {"F32", "torch.float32", 32},
    {"F4", "F4", 4},
    {"F64", "torch.float64", 64},
    {"F6_E2M3", "F6_E2M3", 6},
    {"F6_E3M2", "F6_E3M2", 6},
    {"F8_E4M3", "torch.float8_e4m3fn", 8},
    {"F8_E5M2", "torch.float8_e5m2", 8},
    {"F8_E8M0", "torch.float8_e8m0fnu", 8},
    {"I16", "torch.int16", 16},
    {"I32", "torch.int32", 32},
    {"I64", "torch.int64", 64},
    {"I8", "torch.int8", 8},
    {"U16", "torch.uint16", 16},
    {"U32", "torch.uint32", 32},
    {"U64", "torch.uint64", 64},
    {"U8", "torch.uint8", 8},
};

static int
cmp_dtype(const void *key, const void *entry)
{
    return strcmp((const char *)key, ((const struct st_dtype *)entry)->name);
}

const char *
ck_safetensors_dtype(const char *name, int *bits)
{
    const struct st_dtype *d = bsearch(name,
                                       st_dtypes,
                                       sizeof st_dtypes / sizeof st_dtypes[0],
                                       sizeof st_dtypes[0],
                                       cmp_dtype);
    if (d == NULL) {
        return NULL;
    }
    *bits = d->bits;
    return d->torch;
}

/* A JSON integer >= 0 into *out. */
static bool
get_count(const json_t *v, int64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        return false;
    }
    *out = (int64_t)json_integer_value(v);
    return true;
}

typedef struct st_range {
    uint64_t begin, end;
    size_t tensor;
} st_range;

static int
cmp_range(const void *a, const void *b)
{
    const st_range *x = a, *y = b;
    if (x->begin != y->begin) {
        return x->begin < y->begin ? -1 : 1;
    }
    if (x->end != y->end) {
        return x->end < y->end ? -1 : 1;
    }
    return 0;
}

/* One tensor entry of the header. */
static int
read_entry(ck_set *set,
           const ck_source *src,
           int file,
           const char *key,
           const json_t *info,
           uint64_t data_start,
           uint64_t data_size,
           st_range *range,
           ts_error *err)
{
    const json_t *dtype = json_object_get(info, "dtype");
    const json_t *shape = json_object_get(info, "shape");
    const json_t *offsets = json_object_get(info, "data_offsets");
    const char *torch_name;
    int64_t begin, end, bits_total;
    int bits = 0;
    size_t ndim;
    ck_tensor *t;
    if (!json_is_object(info)) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: header: tensor '%s': expected an object",
                            src->name,
                            key);
    }
    if (!json_is_string(dtype)) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: header: tensor '%s': dtype: expected text",
                            src->name,
                            key);
    }
    torch_name = ck_safetensors_dtype(json_string_value(dtype), &bits);
    if (torch_name == NULL) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: header: tensor '%s': unknown dtype '%.32s'",
                            src->name,
                            key,
                            json_string_value(dtype));
    }
    if (!json_is_array(shape) || json_array_size(shape) > CK_MAX_DIMS) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: header: tensor '%s': shape: expected a list "
                            "of at most %d sizes",
                            src->name,
                            key,
                            CK_MAX_DIMS);
    }
    if (!json_is_array(offsets) || json_array_size(offsets) != 2
        || !get_count(json_array_get(offsets, 0), &begin)
        || !get_count(json_array_get(offsets, 1), &end)) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: header: tensor '%s': data_offsets: expected "
                            "[begin, end], two non-negative integers",
                            src->name,
                            key);
    }
    ndim = json_array_size(shape);
    t = ck_add_tensor(set, key, strlen(key), (int)ndim, err);
    if (t == NULL) {
        return err->code;
    }
    for (size_t i = 0; i < ndim; i++) {
        if (!get_count(json_array_get(shape, i), &t->dims[i])) {
            return ts_error_set(err,
                                TS_EFORMAT,
                                "%s: header: tensor '%s': shape[%zu]: "
                                "expected a non-negative integer",
                                src->name,
                                key,
                                i);
        }
    }
    if (!ck_numel(t->dims, t->ndim, &t->elements)
        || !ts_mul(t->elements, bits, &bits_total)) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: header: tensor '%s': its size overflows "
                            "64 bits",
                            src->name,
                            key);
    }
    if (bits_total % 8 != 0) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: header: tensor '%s': %lld elements of %d "
                            "bits are not a whole number of bytes",
                            src->name,
                            key,
                            (long long)t->elements,
                            bits);
    }
    t->dtype = torch_name;
    t->bytes = bits_total / 8;
    t->file = file;
    if (begin > end || (uint64_t)end > data_size) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: header: tensor '%s': data_offsets [%lld, "
                            "%lld] %s (the data holds %llu bytes, from byte "
                            "%llu)",
                            src->name,
                            key,
                            (long long)begin,
                            (long long)end,
                            begin > end ? "end before they begin"
                                        : "end past the end of the file",
                            (unsigned long long)data_size,
                            (unsigned long long)data_start);
    }
    if (end - begin != t->bytes) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: header: tensor '%s': data_offsets [%lld, "
                            "%lld] hold %lld bytes, its dtype and shape %lld",
                            src->name,
                            key,
                            (long long)begin,
                            (long long)end,
                            (long long)(end - begin),
                            (long long)t->bytes);
    }
    t->offset = (int64_t)(data_start + (uint64_t)begin);
    range->begin = (uint64_t)begin;
    range->end = (uint64_t)end;
    range->tensor = set->ntensors - 1;
    return TS_OK;
}

/* Overlapping ranges are refused; uncovered bytes are a diagnostic. */
static int
check_ranges(ck_set *set,
             const ck_source *src,
             st_range *ranges,
             size_t n,
             uint64_t data_size,
             ts_error *err)
{
    uint64_t covered = 0, prev_end = 0;
    size_t prev = 0;
    bool any = false;
    qsort(ranges, n, sizeof *ranges, cmp_range);
    for (size_t i = 0; i < n; i++) {
        if (ranges[i].begin == ranges[i].end) {
            continue; /* an empty tensor overlaps nothing */
        }
        if (any && ranges[i].begin < prev_end) {
            return ts_error_set(
                err,
                TS_EFORMAT,
                "%s: header: tensor '%s' (data bytes %llu to %llu) overlaps "
                "tensor '%s' (bytes %llu to %llu)",
                src->name,
                set->tensors[ranges[i].tensor].name,
                (unsigned long long)ranges[i].begin,
                (unsigned long long)ranges[i].end,
                set->tensors[ranges[prev].tensor].name,
                (unsigned long long)ranges[prev].begin,
                (unsigned long long)prev_end);
        }
        covered += ranges[i].end - ranges[i].begin;
        prev_end = ranges[i].end;
        prev = i;
        any = true;
    }
    if (covered < data_size) {
        return ck_diagnose(set,
                           "checkpoint_unreferenced_bytes",
                           NULL,
                           err,
                           "%s: %llu of its %llu data bytes belong to no "
                           "tensor",
                           src->name,
                           (unsigned long long)(data_size - covered),
                           (unsigned long long)data_size);
    }
    return TS_OK;
}

/* __metadata__: text to text, copied into the set's metadata. */
static int
read_metadata(ck_set *set,
              const ck_source *src,
              const json_t *meta,
              ts_error *err)
{
    const char *key;
    json_t *value;
    if (!json_is_object(meta)) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: header: __metadata__: expected an object",
                            src->name);
    }
    json_object_foreach((json_t *)meta, key, value)
    {
        if (!json_is_string(value)) {
            return ts_error_set(err,
                                TS_EFORMAT,
                                "%s: header: __metadata__.%s: expected text",
                                src->name,
                                key);
        }
        if (json_object_set(set->metadata, key, value) != 0) {
            return ts_error_set(err, TS_ENOMEM, "out of memory");
        }
    }
    return TS_OK;
}

int
ck_read_safetensors(ck_set *set, const ck_source *src, ts_error *err)
{
    uint8_t head[8];
    uint64_t n, data_start, data_size;
    uint8_t *text = NULL;
    json_t *header = NULL;
    json_error_t jerr;
    st_range *ranges = NULL;
    size_t nranges = 0;
    const char *key;
    json_t *value;
    int file, rc;
    if ((rc = ck_read(src, 0, head, 8, "the header length", err)) != TS_OK) {
        return rc;
    }
    n = ck_le64(head);
    if (n > CK_MAX_JSON) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: header length %llu (byte 0) is more than "
                            "safetensors' limit of 100 MiB",
                            src->name,
                            (unsigned long long)n);
    }
    if (n > src->size - 8) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: truncated: the header (%llu bytes at byte "
                            "8) ends past the end of the file (%llu bytes)",
                            src->name,
                            (unsigned long long)n,
                            (unsigned long long)src->size);
    }
    data_start = 8 + n;
    data_size = src->size - data_start;
    file = ck_add_file(set, src->name, "safetensors", src->size, err);
    if (file < 0) {
        return file;
    }
    set->files[file].header_bytes = data_start;
    text = ck_read_alloc(src, 8, (size_t)n, "the header", err);
    if (text == NULL) {
        return err->code;
    }
    header = json_loadb(
        (const char *)text, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (header == NULL) {
        return ts_error_set(err,
                            json_error_code(&jerr) == json_error_out_of_memory
                                ? TS_ENOMEM
                                : TS_EFORMAT,
                            "%s: header at byte %llu: %s",
                            src->name,
                            (unsigned long long)(8 + (uint64_t)jerr.position),
                            jerr.text);
    }
    if (!json_is_object(header)) {
        rc = ts_error_set(err,
                          TS_EFORMAT,
                          "%s: header (byte 8): expected a JSON object",
                          src->name);
        goto done;
    }
    ranges = calloc(json_object_size(header) + 1, sizeof *ranges);
    if (ranges == NULL) {
        rc = ts_error_set(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    rc = TS_OK;
    json_object_foreach(header, key, value)
    {
        if (strcmp(key, "__metadata__") == 0) {
            rc = read_metadata(set, src, value, err);
        }
        else {
            rc = read_entry(set,
                            src,
                            file,
                            key,
                            value,
                            data_start,
                            data_size,
                            &ranges[nranges],
                            err);
            nranges += rc == TS_OK;
        }
        if (rc != TS_OK) {
            goto done;
        }
    }
    rc = check_ranges(set, src, ranges, nranges, data_size, err);
done:
    free(ranges);
    json_decref(header);
    return rc;
}

/* ---- sharded checkpoints ---- */

/* A shard's name is a plain file name: no directory part, not "." or "..",
 * no NUL. */
static bool
plain_name(const json_t *v)
{
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    return s != NULL && len > 0 && strlen(s) == len && strchr(s, '/') == NULL
           && strchr(s, '\\') == NULL && strcmp(s, ".") != 0
           && strcmp(s, "..") != 0;
}

/* The shards in the order the weight map first names them. */
static int
list_shards(const ck_source *src,
            const json_t *map,
            json_t *shards,
            ts_error *err)
{
    const char *key;
    json_t *value;
    json_t *seen = json_object();
    int rc = TS_OK;
    if (seen == NULL) {
        return ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    json_object_foreach((json_t *)map, key, value)
    {
        const char *s = json_string_value(value);
        if (!plain_name(value)) {
            rc = ts_error_set(err,
                              TS_EFORMAT,
                              "%s: weight_map.%s: expected the file name of "
                              "a shard beside the index (no directory part)",
                              src->name,
                              key);
            break;
        }
        if (json_object_get(seen, s) == NULL
            && (json_object_set_new(seen, s, json_true()) != 0
                || json_array_append(shards, value) != 0)) {
            rc = ts_error_set(err, TS_ENOMEM, "out of memory");
            break;
        }
    }
    json_decref(seen);
    return rc;
}

/* The index and the shards agree: each tensor is in the shard the index
 * names, and each indexed tensor was found. */
static int
cross_check(ck_set *set,
            const ck_source *src,
            const json_t *map,
            size_t first_tensor,
            ts_error *err)
{
    json_t *found = json_object();
    const char *key;
    json_t *value;
    size_t stray = 0, missing = 0;
    int rc = TS_OK;
    if (found == NULL) {
        return ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    for (size_t i = first_tensor; i < set->ntensors && rc == TS_OK; i++) {
        const ck_tensor *t = &set->tensors[i];
        const char *shard = json_string_value(json_object_get(map, t->name));
        if (json_object_set_new(found, t->name, json_true()) != 0) {
            rc = ts_error_set(err, TS_ENOMEM, "out of memory");
        }
        else if (shard == NULL
                 || strcmp(shard, set->files[t->file].name) != 0) {
            if (stray++ < 8) {
                rc = ck_diagnose(
                    set,
                    "checkpoint_index_mismatch",
                    t->name,
                    err,
                    "%s: tensor '%s' is in shard %s, the index %s%s",
                    src->name,
                    t->name,
                    set->files[t->file].name,
                    shard != NULL ? "names " : "does not list it",
                    shard != NULL ? shard : "");
            }
        }
    }
    json_object_foreach((json_t *)map, key, value)
    {
        if (rc != TS_OK) {
            break;
        }
        if (json_object_get(found, key) == NULL && missing++ < 8) {
            rc = ck_diagnose(set,
                             "checkpoint_index_mismatch",
                             key,
                             err,
                             "%s: tensor '%s' is listed in shard %s, which "
                             "does not hold it",
                             src->name,
                             key,
                             json_string_value(value));
        }
    }
    json_decref(found);
    if (rc == TS_OK && (stray > 8 || missing > 8)) {
        rc = ck_diagnose(set,
                         "checkpoint_index_mismatch",
                         NULL,
                         err,
                         "%s: %zu tensors outside the index and %zu indexed "
                         "tensors not found in all (the first 8 of each "
                         "are named)",
                         src->name,
                         stray,
                         missing);
    }
    if (stray > 0 || missing > 0) {
        set->incomplete = true;
    }
    return rc;
}

/* The index's metadata.total_size against the tensors' bytes. */
static int
check_total_size(ck_set *set,
                 const ck_source *src,
                 size_t first_tensor,
                 ts_error *err)
{
    const json_t *total = json_object_get(set->metadata, "total_size");
    int64_t sum = 0, want;
    if (!json_is_integer(total)) {
        return TS_OK;
    }
    want = (int64_t)json_integer_value(total);
    for (size_t i = first_tensor; i < set->ntensors; i++) {
        if (set->tensors[i].bytes < 0
            || !ts_add(sum, set->tensors[i].bytes, &sum)) {
            return TS_OK;
        }
    }
    if (sum != want) {
        return ck_diagnose(set,
                           "checkpoint_index_mismatch",
                           NULL,
                           err,
                           "%s: metadata.total_size is %lld, the shards' "
                           "tensors hold %lld bytes",
                           src->name,
                           (long long)want,
                           (long long)sum);
    }
    return TS_OK;
}

int
ck_read_safetensors_index(ck_set *set,
                          const ck_source *src,
                          const char *dir,
                          ts_error *err)
{
    uint8_t *text;
    json_t *index, *map, *meta, *shards = NULL;
    json_error_t jerr;
    int file, rc = TS_OK;
    size_t first_tensor = set->ntensors;
    if (src->size > CK_MAX_JSON) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: an index of %llu bytes (more than 100 MiB)",
                            src->name,
                            (unsigned long long)src->size);
    }
    file = ck_add_file(set, src->name, "safetensors_index", src->size, err);
    if (file < 0) {
        return file;
    }
    set->files[file].header_bytes = src->size;
    text = ck_read_alloc(src, 0, (size_t)src->size, "the index", err);
    if (text == NULL) {
        return err->code;
    }
    index = json_loadb(
        (const char *)text, (size_t)src->size, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (index == NULL) {
        return ts_error_set(err,
                            json_error_code(&jerr) == json_error_out_of_memory
                                ? TS_ENOMEM
                                : TS_EFORMAT,
                            "%s: at byte %llu: %s",
                            src->name,
                            (unsigned long long)jerr.position,
                            jerr.text);
    }
    map = json_object_get(index, "weight_map");
    meta = json_object_get(index, "metadata");
    if (!json_is_object(index) || !json_is_object(map)) {
        rc = ts_error_set(err,
                          TS_EFORMAT,
                          "%s: expected a sharded checkpoint index, a JSON "
                          "object with a weight_map object",
                          src->name);
        goto done;
    }
    if (meta != NULL && !json_is_null(meta)) {
        if (!json_is_object(meta)) {
            rc = ts_error_set(err,
                              TS_EFORMAT,
                              "%s: metadata: expected an object",
                              src->name);
            goto done;
        }
        if (json_object_update(set->metadata, meta) != 0) {
            rc = ts_error_set(err, TS_ENOMEM, "out of memory");
            goto done;
        }
    }
    shards = json_array();
    if (shards == NULL) {
        rc = ts_error_set(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = list_shards(src, map, shards, err)) != TS_OK) {
        goto done;
    }
    if (dir == NULL) {
        /* only the index: its tensors are not known */
        set->incomplete = set->incomplete || json_object_size(map) > 0;
        goto done;
    }
    for (size_t i = 0; i < json_array_size(shards); i++) {
        const char *name = json_string_value(json_array_get(shards, i));
        ck_source shard;
        if ((rc = ck_open(&shard, dir, name, err)) != TS_OK) {
            goto done;
        }
        rc = ck_read_safetensors(set, &shard, err);
        ck_close(&shard);
        if (rc != TS_OK) {
            goto done;
        }
    }
    if ((rc = cross_check(set, src, map, first_tensor, err)) == TS_OK) {
        rc = check_total_size(set, src, first_tensor, err);
    }
done:
    json_decref(shards);
    json_decref(index);
    return rc;
}
