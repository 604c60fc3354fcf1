/* PyTorch's zip checkpoints (torch.save since 1.6): a zip archive whose
 * entries all start with one prefix ("archive/", the file's stem), with
 * PREFIX/data.pkl (the pickle), PREFIX/data/KEY (one storage each, STORED)
 * and small records (byteorder, version, .format_version).
 *
 * Read: the end of central directory record (searched backwards through
 * the last 64 KiB + 22 bytes), Zip64's locator and record when a field
 * overflows, the central directory (at most 256 MiB, every entry inside
 * it), then the local header of each entry that is used. Data before the
 * archive (bytes prepended to it) is allowed, as zip readers allow it.
 * Every offset is checked against the file and the directory; an entry's
 * data must lie before the central directory. */
#include <stdlib.h>
#include <string.h>

#include "ckpt_internal.h"
#include "record_util.h"

#define ZIP_EOCD 0x06054b50u
#define ZIP64_LOCATOR 0x07064b50u
#define ZIP64_EOCD 0x06064b50u
#define ZIP_CENTRAL 0x02014b50u
#define ZIP_LOCAL 0x04034b50u
#define ZIP_MAX_CD ((uint64_t)256 << 20)
#define ZIP_MAX_PICKLE ((uint64_t)1 << 30)

typedef struct zip_entry {
    const char *name; /* into the central directory buffer */
    size_t name_len;
    uint64_t size;  /* uncompressed */
    uint64_t csize; /* compressed */
    uint64_t local; /* local header offset (file offset) */
    uint16_t method;
} zip_entry;

typedef struct zip {
    const ck_source *src;
    uint8_t *cd;
    uint64_t cd_offset, cd_size, prefix;
    zip_entry *entries;
    size_t n;
    json_t *index; /* name -> entry index */
} zip;

static int
zfail(const zip *z, ts_error *err, const char *fmt, const char *detail)
{
    return ts_error_set(err,
                        TS_EFORMAT,
                        "%s: zip: %s%s",
                        z->src->name,
                        fmt,
                        detail != NULL ? detail : "");
}

/* The end of central directory record: its offset into *eocd_pos. */
static int
find_eocd(zip *z, uint8_t rec[22], uint64_t *eocd_pos, ts_error *err)
{
    uint64_t size = z->src->size;
    size_t tail = size < 22 + 65535 ? (size_t)size : 22 + 65535;
    uint8_t *buf;
    int rc = TS_EFORMAT;
    if (size < 22) {
        return zfail(z, err, "truncated: no end of central directory", NULL);
    }
    buf = ck_read_alloc(z->src, size - tail, tail, "the zip's end", err);
    if (buf == NULL) {
        return err->code;
    }
    for (size_t k = tail - 22 + 1; k > 0; k--) {
        const uint8_t *p = buf + k - 1;
        if (ck_le32(p) == ZIP_EOCD && (k - 1) + 22 + ck_le16(p + 20) == tail) {
            memcpy(rec, p, 22);
            *eocd_pos = size - tail + (k - 1);
            rc = TS_OK;
            break;
        }
    }
    free(buf);
    if (rc != TS_OK) {
        return zfail(z,
                     err,
                     "no end of central directory record in the last 64 KiB "
                     "(truncated, or not a zip archive)",
                     NULL);
    }
    return TS_OK;
}

/* Zip64: the locator just before the EOCD and the record it names (torch
 * writes them even when no field overflows). *found is false when there is
 * no locator. The record normally ends where the locator begins: if the
 * locator's offset points elsewhere, the difference is bytes prepended to
 * the archive. */
static int
read_zip64(
    zip *z, uint64_t eocd_pos, uint64_t *entries, bool *found, ts_error *err)
{
    uint8_t loc[20], rec[56];
    uint64_t at, record;
    int rc;
    *found = false;
    if (eocd_pos < 20 + 56) {
        return TS_OK;
    }
    if ((rc =
             ck_read(z->src, eocd_pos - 20, loc, 20, "the Zip64 locator", err))
        != TS_OK) {
        return rc;
    }
    if (ck_le32(loc) != ZIP64_LOCATOR) {
        return TS_OK;
    }
    *found = true;
    at = ck_le64(loc + 8);
    record = eocd_pos - 20 - 56;
    if ((rc = ck_read(z->src, record, rec, 56, "the Zip64 end record", err))
        != TS_OK) {
        return rc;
    }
    if (ck_le32(rec) != ZIP64_EOCD || at > record) {
        /* not right before the locator: where the locator says */
        if (at > eocd_pos - 20 || eocd_pos - 20 - at < 56) {
            return zfail(z,
                         err,
                         "the Zip64 locator points outside the space before "
                         "it",
                         NULL);
        }
        record = at;
        if ((rc =
                 ck_read(z->src, record, rec, 56, "the Zip64 end record", err))
            != TS_OK) {
            return rc;
        }
        if (ck_le32(rec) != ZIP64_EOCD) {
            return zfail(
                z, err, "the Zip64 locator points at no Zip64 record", NULL);
        }
    }
    z->prefix = record - at;
    *entries = ck_le64(rec + 32);
    z->cd_size = ck_le64(rec + 40);
    z->cd_offset = ck_le64(rec + 48);
    if (z->cd_offset > at || z->cd_size > at - z->cd_offset) {
        return zfail(z,
                     err,
                     "the central directory does not lie before the Zip64 "
                     "record",
                     NULL);
    }
    return TS_OK;
}

/* Zip64 extra field values for the fields saturated at 0xFFFFFFFF. */
static int
zip64_extra(zip *z,
            const uint8_t *extra,
            size_t len,
            zip_entry *e,
            bool need_size,
            bool need_csize,
            bool need_local,
            ts_error *err)
{
    size_t k = 0;
    while (k + 4 <= len) {
        uint16_t id = ck_le16(extra + k), n = ck_le16(extra + k + 2);
        const uint8_t *v = extra + k + 4;
        size_t used = 0;
        if (n > len - k - 4) {
            break;
        }
        if (id == 0x0001) {
            if (need_size) {
                if (used + 8 > n) {
                    goto short_field;
                }
                e->size = ck_le64(v + used);
                used += 8;
            }
            if (need_csize) {
                if (used + 8 > n) {
                    goto short_field;
                }
                e->csize = ck_le64(v + used);
                used += 8;
            }
            if (need_local) {
                if (used + 8 > n) {
                    goto short_field;
                }
                e->local = ck_le64(v + used);
            }
            return TS_OK;
        }
        k += 4 + (size_t)n;
    }
    if (!need_size && !need_csize && !need_local) {
        return TS_OK;
    }
short_field:
    return zfail(z, err, "an entry's Zip64 sizes are missing or short", NULL);
}

static int
read_central(zip *z, uint64_t entries, ts_error *err)
{
    uint64_t k = 0;
    size_t pos = 0;
    if (z->cd_size > ZIP_MAX_CD) {
        return zfail(z, err, "a central directory larger than 256 MiB", NULL);
    }
    if (entries > z->cd_size / 46) {
        return zfail(
            z, err, "more entries than the central directory can hold", NULL);
    }
    z->cd = ck_read_alloc(z->src,
                          z->cd_offset + z->prefix,
                          (size_t)z->cd_size,
                          "the central directory",
                          err);
    if (z->cd == NULL) {
        return err->code;
    }
    z->entries = calloc((size_t)entries + 1, sizeof *z->entries);
    z->index = json_object();
    if (z->entries == NULL || z->index == NULL) {
        return ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    for (k = 0; k < entries; k++) {
        const uint8_t *h = z->cd + pos;
        zip_entry *e = &z->entries[k];
        size_t nlen, xlen, clen;
        char where[64];
        if (z->cd_size - pos < 46 || ck_le32(h) != ZIP_CENTRAL) {
            snprintf(where, sizeof where, "%llu", (unsigned long long)k);
            return zfail(
                z, err, "central directory entry is cut or bad: ", where);
        }
        nlen = ck_le16(h + 28);
        xlen = ck_le16(h + 30);
        clen = ck_le16(h + 32);
        if (46 + nlen + xlen + clen > z->cd_size - pos) {
            snprintf(where, sizeof where, "%llu", (unsigned long long)k);
            return zfail(z,
                         err,
                         "central directory entry runs past the "
                         "directory: ",
                         where);
        }
        e->method = ck_le16(h + 10);
        e->csize = ck_le32(h + 20);
        e->size = ck_le32(h + 24);
        e->local = ck_le32(h + 42);
        e->name = (const char *)h + 46;
        e->name_len = nlen;
        if (zip64_extra(z,
                        h + 46 + nlen,
                        xlen,
                        e,
                        e->size == 0xFFFFFFFFu,
                        e->csize == 0xFFFFFFFFu,
                        e->local == 0xFFFFFFFFu,
                        err)
            != TS_OK) {
            return err->code;
        }
        if (memchr(e->name, '\0', nlen) != NULL) {
            return zfail(z, err, "an entry name holds NUL", NULL);
        }
        if (!ck_utf8(e->name, nlen)) {
            snprintf(where, sizeof where, "%llu", (unsigned long long)k);
            return zfail(
                z, err, "an entry name that is not UTF-8 text: entry ", where);
        }
        {
            json_t *idx = json_integer((json_int_t)k);
            if (json_object_getn(z->index, e->name, nlen) != NULL) {
                json_decref(idx);
                snprintf(where,
                         sizeof where,
                         "%.*s",
                         (int)(nlen < 48 ? nlen : 48),
                         e->name);
                return zfail(z, err, "duplicate entry ", where);
            }
            if (idx == NULL
                || json_object_setn_new(z->index, e->name, nlen, idx) != 0) {
                return ts_error_set(err, TS_ENOMEM, "out of memory");
            }
        }
        pos += 46 + nlen + xlen + clen;
    }
    z->n = (size_t)entries;
    return TS_OK;
}

/* The data offset and size of entry k, checked: STORED, inside the file,
 * before the central directory. */
static int
entry_data(zip *z, size_t k, uint64_t *offset, ts_error *err)
{
    zip_entry *e = &z->entries[k];
    uint8_t h[30];
    uint64_t local = e->local + z->prefix, start;
    char name[96];
    int rc;
    snprintf(name,
             sizeof name,
             "%.*s",
             (int)(e->name_len < 80 ? e->name_len : 80),
             e->name);
    if (e->method != 0) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: zip: entry %s is compressed (method %u); "
                            "torch.save writes STORED entries",
                            z->src->name,
                            name,
                            e->method);
    }
    if (e->size != e->csize) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: zip: entry %s is STORED with two sizes",
                            z->src->name,
                            name);
    }
    if (local > z->cd_offset + z->prefix
        || z->cd_offset + z->prefix - local < 30) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: zip: entry %s: its local header (byte "
                            "%llu) is not before the central directory",
                            z->src->name,
                            name,
                            (unsigned long long)local);
    }
    if ((rc = ck_read(z->src, local, h, 30, "a local header", err)) != TS_OK) {
        return rc;
    }
    if (ck_le32(h) != ZIP_LOCAL) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: zip: entry %s: no local header at byte %llu",
                            z->src->name,
                            name,
                            (unsigned long long)local);
    }
    start = local + 30 + ck_le16(h + 26) + ck_le16(h + 28);
    if (start > z->cd_offset + z->prefix
        || e->size > z->cd_offset + z->prefix - start) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: zip: entry %s: its %llu bytes at byte %llu "
                            "run past the central directory",
                            z->src->name,
                            name,
                            (unsigned long long)e->size,
                            (unsigned long long)start);
    }
    *offset = start;
    return TS_OK;
}

static long
find_entry(const zip *z, const char *name)
{
    const json_t *v = json_object_get(z->index, name);
    return v != NULL ? (long)json_integer_value(v) : -1;
}

/* PREFIX/data.pkl: the first entry named data.pkl at the top of a
 * folder (the archive's prefix). */
static long
find_pickle(const zip *z, size_t *prefix_len)
{
    for (size_t k = 0; k < z->n; k++) {
        const zip_entry *e = &z->entries[k];
        if (e->name_len >= 8
            && memcmp(e->name + e->name_len - 8, "data.pkl", 8) == 0
            && (e->name_len == 8 || e->name[e->name_len - 9] == '/')) {
            const char *slash = memchr(e->name, '/', e->name_len - 8);
            if (e->name_len > 8 && slash != e->name + e->name_len - 9) {
                continue; /* deeper than PREFIX/data.pkl */
            }
            *prefix_len = e->name_len - 8;
            return (long)k;
        }
    }
    return -1;
}

/* Each storage's entry PREFIX/data/KEY: its offset, and its size equal to
 * the storage's. */
static int
place_storages(
    zip *z, ck_set *set, const char *prefix, size_t plen, ts_error *err)
{
    for (size_t s = 0; s < set->nstorages; s++) {
        ck_storage *st = &set->storages[s];
        size_t klen = strlen(st->key);
        char *name = malloc(plen + 5 + klen + 1);
        long k;
        uint64_t offset;
        int rc;
        if (name == NULL) {
            return ts_error_set(err, TS_ENOMEM, "out of memory");
        }
        memcpy(name, prefix, plen);
        memcpy(name + plen, "data/", 5);
        memcpy(name + plen + 5, st->key, klen + 1);
        k = find_entry(z, name);
        if (k < 0) {
            rc = ts_error_set(err,
                              TS_EFORMAT,
                              "%s: storage '%s' has no entry %s",
                              z->src->name,
                              st->key,
                              name);
            free(name);
            return rc;
        }
        if ((rc = entry_data(z, (size_t)k, &offset, err)) != TS_OK) {
            free(name);
            return rc;
        }
        if (z->entries[k].size != (uint64_t)st->bytes) {
            rc = ts_error_set(err,
                              TS_EFORMAT,
                              "%s: entry %s holds %llu bytes, storage '%s' "
                              "%lld (%lld elements of %s)",
                              z->src->name,
                              name,
                              (unsigned long long)z->entries[k].size,
                              st->key,
                              (long long)st->bytes,
                              (long long)st->elements,
                              st->dtype);
            free(name);
            return rc;
        }
        free(name);
        st->offset = (int64_t)offset;
    }
    return TS_OK;
}

void
ck_place_tensors(ck_set *set)
{
    for (size_t i = 0; i < set->ntensors; i++) {
        ck_tensor *t = &set->tensors[i];
        if (t->storage >= 0 && set->storages[t->storage].offset >= 0
            && t->elements > 0) {
            const ck_storage *st = &set->storages[t->storage];
            int64_t itemsize = t->elements > 0 ? t->bytes / t->elements : 0;
            t->offset = st->offset + t->storage_offset * itemsize;
        }
        else if (t->storage >= 0 && set->storages[t->storage].offset >= 0) {
            t->offset = set->storages[t->storage].offset;
        }
    }
}

int
ck_read_torch_zip(ck_set *set, const ck_source *src, ts_error *err)
{
    zip z;
    uint8_t eocd[22] = {0};
    uint64_t eocd_pos = 0, entries, pkl_offset = 0;
    uint8_t *pickle = NULL;
    char *prefix = NULL, *what = NULL;
    size_t plen = 0, end;
    long k;
    int file, rc;
    bool zip64 = false;
    memset(&z, 0, sizeof z);
    z.src = src;
    if ((rc = find_eocd(&z, eocd, &eocd_pos, err)) != TS_OK) {
        goto done;
    }
    entries = ck_le16(eocd + 10);
    z.cd_size = ck_le32(eocd + 12);
    z.cd_offset = ck_le32(eocd + 16);
    if ((rc = read_zip64(&z, eocd_pos, &entries, &zip64, err)) != TS_OK) {
        goto done;
    }
    if (!zip64) {
        if (entries == 0xFFFF || z.cd_size == 0xFFFFFFFFu
            || z.cd_offset == 0xFFFFFFFFu) {
            rc = zfail(&z, err, "Zip64 fields without a Zip64 locator", NULL);
            goto done;
        }
        if (z.cd_offset > eocd_pos || z.cd_size > eocd_pos - z.cd_offset) {
            rc = zfail(&z,
                       err,
                       "the central directory does not lie before its end "
                       "record",
                       NULL);
            goto done;
        }
        /* bytes before the archive shift every offset */
        z.prefix = eocd_pos - (z.cd_offset + z.cd_size);
    }
    if ((rc = read_central(&z, entries, err)) != TS_OK) {
        goto done;
    }
    if ((k = find_pickle(&z, &plen)) < 0) {
        rc = zfail(&z,
                   err,
                   "no data.pkl entry: a zip archive, not a torch.save file",
                   NULL);
        goto done;
    }
    if ((rc = entry_data(&z, (size_t)k, &pkl_offset, err)) != TS_OK) {
        goto done;
    }
    if (z.entries[k].size > ZIP_MAX_PICKLE) {
        rc = zfail(&z, err, "a data.pkl larger than 1 GiB", NULL);
        goto done;
    }
    file = ck_add_file(set, src->name, "pytorch_zip", src->size, err);
    if (file < 0) {
        rc = file;
        goto done;
    }
    set->files[file].header_bytes = z.entries[k].size + z.cd_size + 22;
    prefix = malloc(plen + 1);
    what = malloc(z.entries[k].name_len + 1);
    if (prefix == NULL || what == NULL) {
        rc = ts_error_set(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    memcpy(prefix, z.entries[k].name, plen);
    prefix[plen] = '\0';
    memcpy(what, z.entries[k].name, z.entries[k].name_len);
    what[z.entries[k].name_len] = '\0';
    pickle =
        ck_read_alloc(src, pkl_offset, (size_t)z.entries[k].size, what, err);
    if (pickle == NULL) {
        rc = err->code;
        goto done;
    }
    rc = ck_unpickle(set,
                     src,
                     what,
                     pickle,
                     (size_t)z.entries[k].size,
                     pkl_offset,
                     file,
                     &end,
                     NULL,
                     err);
    if (rc == TS_OK) {
        rc = place_storages(&z, set, prefix, plen, err);
    }
    if (rc == TS_OK) {
        ck_place_tensors(set);
    }
done:
    free(pickle);
    free(prefix);
    free(what);
    free(z.cd);
    free(z.entries);
    json_decref(z.index);
    return rc;
}
