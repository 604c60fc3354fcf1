/* Legacy torch.save files (_use_new_zipfile_serialization=False). There is
 * no written specification; this is what torch's own writer produces and
 * its loader reads (torch/serialization.py, _legacy_save and
 * _legacy_load), checked against files torch 2.13 writes in
 * tests/python/test_checkpoint_torch.py:
 *
 *   pickle 1   the magic number 0x1950a86a20f9469cfc6c (a LONG1)
 *   pickle 2   the protocol version, 1001
 *   pickle 3   sys_info: {protocol_version, little_endian, type_sizes}
 *   pickle 4   the object; storages are persistent ids ('storage', type,
 *              key, location, numel, view_metadata)
 *   pickle 5   the list of storage keys, in the order of their data
 *   then, for each key: its numel (8 bytes, little-endian) and numel
 *   elements of the storage's dtype.
 *
 * The pickles are read from the start of the file into a buffer of 1 MiB,
 * doubled (up to 1 GiB) while a pickle runs past it. Only the 8-byte
 * numel of each storage is read from the data. */
#include <stdlib.h>
#include <string.h>

#include "ckpt_internal.h"

#define LEGACY_MAX_PICKLES ((uint64_t)1 << 30)

static const uint8_t legacy_magic[10] = {
    0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

bool
ck_is_torch_legacy(const uint8_t *head, size_t n)
{
    static const uint8_t start[4] = {0x80, 0x02, 0x8a, 0x0a};
    return n >= 14 && memcmp(head, start, 4) == 0
           && memcmp(head + 4, legacy_magic, 10) == 0;
}

/* Runs the small pickle at *pos; false with err set, or *retry when it ran
 * past the buffer. */
static bool
small_pickle(const ck_source *src,
             const char *what,
             const uint8_t *buf,
             size_t len,
             size_t *pos,
             ck_pickle_value *out,
             bool *retry,
             ts_error *err)
{
    if (ck_unpickle_value(src, what, buf + *pos, len - *pos, *pos, out, err)
        != TS_OK) {
        *retry = out->truncated;
        return false;
    }
    *pos += out->end;
    return true;
}

/* The storages' data after the keys: offsets, numel checked. */
static int
place_legacy(ck_set *set,
             const ck_source *src,
             const json_t *keys,
             uint64_t pos,
             ts_error *err)
{
    json_t *seen = json_object();
    size_t i;
    json_t *key;
    int rc = TS_OK;
    if (seen == NULL) {
        return ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    json_array_foreach(keys, i, key)
    {
        const char *k = json_string_value(key);
        uint8_t numel_bytes[8];
        int64_t numel;
        size_t s;
        for (s = 0; s < set->nstorages; s++) {
            if (strcmp(set->storages[s].key, k) == 0) {
                break;
            }
        }
        if (s == set->nstorages || json_object_get(seen, k) != NULL) {
            rc = ts_error_set(
                err,
                TS_EFORMAT,
                "%s: the storage key list names '%.64s', %s",
                src->name,
                k,
                s == set->nstorages ? "which no tensor uses" : "twice");
            break;
        }
        if (json_object_set_new(seen, k, json_true()) != 0) {
            rc = ts_error_set(err, TS_ENOMEM, "out of memory");
            break;
        }
        if ((rc = ck_read(src, pos, numel_bytes, 8, "a storage's size", err))
            != TS_OK) {
            break;
        }
        numel = (int64_t)ck_le64(numel_bytes);
        if (numel != set->storages[s].elements) {
            rc = ts_error_set(err,
                              TS_EFORMAT,
                              "%s: byte %llu: storage '%s' holds %lld "
                              "elements, its persistent id says %lld",
                              src->name,
                              (unsigned long long)pos,
                              k,
                              (long long)numel,
                              (long long)set->storages[s].elements);
            break;
        }
        pos += 8;
        if ((uint64_t)set->storages[s].bytes > src->size - pos) {
            rc = ts_error_set(err,
                              TS_EFORMAT,
                              "%s: truncated: storage '%s' (%lld bytes at "
                              "byte %llu) ends past the end of the file "
                              "(%llu bytes)",
                              src->name,
                              k,
                              (long long)set->storages[s].bytes,
                              (unsigned long long)pos,
                              (unsigned long long)src->size);
            break;
        }
        set->storages[s].offset = (int64_t)pos;
        pos += (uint64_t)set->storages[s].bytes;
    }
    if (rc == TS_OK && json_object_size(seen) != set->nstorages) {
        rc = ts_error_set(err,
                          TS_EFORMAT,
                          "%s: %zu storages are used, the key list names %zu",
                          src->name,
                          set->nstorages,
                          json_object_size(seen));
    }
    if (rc == TS_OK && pos < src->size) {
        rc = ck_diagnose(set,
                         "checkpoint_unreferenced_bytes",
                         NULL,
                         err,
                         "%s: %llu bytes after the last storage",
                         src->name,
                         (unsigned long long)(src->size - pos));
    }
    json_decref(seen);
    return rc;
}

/* One attempt with the first `len` bytes; *retry when more are needed. */
static int
read_pickles(ck_set *set,
             const ck_source *src,
             const uint8_t *buf,
             size_t len,
             bool *retry,
             ts_error *err)
{
    ck_pickle_value v[3];
    ck_pickle_value keys;
    size_t pos = 0, end;
    int file, rc;
    bool truncated = false;
    static const char *const what[3] = {
        "the magic number", "the protocol version", "sys_info"};
    memset(v, 0, sizeof v);
    memset(&keys, 0, sizeof keys);
    *retry = false;
    for (int k = 0; k < 3; k++) {
        if (!small_pickle(src, what[k], buf, len, &pos, &v[k], retry, err)) {
            return err->code;
        }
    }
    if (v[0].kind != CK_PICKLED_BIGINT || v[0].nbig != 10
        || memcmp(v[0].big, legacy_magic, 10) != 0) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: not a legacy torch.save file: the magic "
                            "number is wrong",
                            src->name);
    }
    if (v[1].kind != CK_PICKLED_INT || v[1].i != 1001) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: legacy protocol version %lld (1001 is read)",
                            src->name,
                            (long long)v[1].i);
    }
    file = ck_add_file(set, src->name, "pytorch_legacy", src->size, err);
    if (file < 0) {
        return file;
    }
    rc = ck_unpickle(set,
                     src,
                     "the pickle",
                     buf + pos,
                     len - pos,
                     pos,
                     file,
                     &end,
                     &truncated,
                     err);
    if (rc != TS_OK) {
        *retry = truncated;
        return rc;
    }
    pos += end;
    if (!small_pickle(
            src, "the storage keys", buf, len, &pos, &keys, retry, err)) {
        return err->code;
    }
    if (keys.kind != CK_PICKLED_KEYS) {
        json_decref(keys.keys);
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: byte %zu: the storage keys are not a list "
                            "of text",
                            src->name,
                            pos - keys.end);
    }
    set->files[file].header_bytes = pos;
    rc = place_legacy(set, src, keys.keys, pos, err);
    json_decref(keys.keys);
    if (rc == TS_OK) {
        ck_place_tensors(set);
    }
    return rc;
}

int
ck_read_torch_legacy(ck_set *set, const ck_source *src, ts_error *err)
{
    uint64_t len =
        src->size < ((uint64_t)1 << 20) ? src->size : (uint64_t)1 << 20;
    for (;;) {
        uint8_t *buf = ck_read_alloc(src, 0, (size_t)len, "the pickles", err);
        bool retry = false;
        int rc;
        if (buf == NULL) {
            return err->code;
        }
        rc = read_pickles(set, src, buf, (size_t)len, &retry, err);
        free(buf);
        if (rc == TS_OK || !retry || len >= src->size
            || len >= LEGACY_MAX_PICKLES) {
            return rc;
        }
        /* start again with twice the bytes */
        ck_set_clear(set);
        if ((rc = ck_set_init(set, err)) != TS_OK) {
            return rc;
        }
        set->format = "pytorch_legacy";
        set->method = "pickle_symbolic";
        len = len * 2 < src->size ? len * 2 : src->size;
    }
}
