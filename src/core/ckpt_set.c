/* The records the checkpoint readers fill (ckpt_internal.h): reading a
 * file's bytes with bounds, and growing the tensor, storage and file
 * arrays. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_internal.h"
#include "record_util.h"

int
ck_read(const ck_source *src,
        uint64_t offset,
        void *buf,
        size_t len,
        const char *what,
        ts_error *err)
{
    size_t done = 0;
    if (offset > src->size || len > src->size - offset) {
        return ts_error_set(err,
                            TS_EFORMAT,
                            "%s: truncated: %s (%zu bytes at byte %llu) "
                            "ends past the end of the file (%llu bytes)",
                            src->name,
                            what,
                            len,
                            (unsigned long long)offset,
                            (unsigned long long)src->size);
    }
    if (src->mem != NULL) {
        if (len > 0) {
            memcpy(buf, src->mem + offset, len);
        }
        return TS_OK;
    }
    while (done < len) {
        ssize_t n = pread(src->fd,
                          (uint8_t *)buf + done,
                          len - done,
                          (off_t)(offset + done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return ts_error_set(
                err,
                TS_EIO,
                "%s: cannot read %s at byte %llu: %s",
                src->name,
                what,
                (unsigned long long)(offset + done),
                n < 0 ? strerror(errno) : "the file is shorter than it was");
        }
        done += (size_t)n;
    }
    return TS_OK;
}

uint8_t *
ck_read_alloc(const ck_source *src,
              uint64_t offset,
              size_t len,
              const char *what,
              ts_error *err)
{
    uint8_t *buf;
    if (offset > src->size || len > src->size - offset) {
        ck_read(src, offset, NULL, len, what, err); /* the message */
        return NULL;
    }
    buf = malloc(len + 1);
    if (buf == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    if (ck_read(src, offset, buf, len, what, err) != TS_OK) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

int
ck_set_init(ck_set *set, ts_error *err)
{
    memset(set, 0, sizeof *set);
    set->metadata = json_object();
    set->globals = json_array();
    set->diagnostics = json_array();
    if (set->metadata == NULL || set->globals == NULL
        || set->diagnostics == NULL) {
        ck_set_clear(set);
        return ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    return TS_OK;
}

void
ck_set_clear(ck_set *set)
{
    for (size_t i = 0; i < set->ntensors; i++) {
        free(set->tensors[i].name);
        free(set->tensors[i].dims);
    }
    for (size_t i = 0; i < set->nstorages; i++) {
        free(set->storages[i].key);
        free(set->storages[i].location);
    }
    for (size_t i = 0; i < set->nfiles; i++) {
        free(set->files[i].name);
    }
    free(set->tensors);
    free(set->storages);
    free(set->files);
    json_decref(set->metadata);
    json_decref(set->globals);
    json_decref(set->diagnostics);
    memset(set, 0, sizeof *set);
}

int
ck_add_file(ck_set *set,
            const char *name,
            const char *format,
            uint64_t size,
            ts_error *err)
{
    ck_file *f;
    char *copy;
    if (set->nfiles >= INT32_MAX
        || grow((void **)&set->files,
                &set->cap_files,
                set->nfiles + 1,
                sizeof *set->files)
               != TS_OK
        || (copy = dup_string(name)) == NULL) {
        return ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    f = &set->files[set->nfiles];
    memset(f, 0, sizeof *f);
    f->name = copy;
    f->format = format;
    f->size = size;
    return (int)set->nfiles++;
}

ck_tensor *
ck_add_tensor(
    ck_set *set, const char *name, size_t name_len, int ndim, ts_error *err)
{
    ck_tensor *t;
    char *copy;
    int64_t *dims;
    if (set->ntensors >= CK_MAX_TENSORS) {
        ts_error_set(err,
                     TS_EFORMAT,
                     "more than %d tensors in one checkpoint",
                     CK_MAX_TENSORS);
        return NULL;
    }
    if (ndim < 0 || ndim > CK_MAX_DIMS) {
        ts_error_set(err,
                     TS_EFORMAT,
                     "tensor with %d dimensions (at most %d)",
                     ndim,
                     CK_MAX_DIMS);
        return NULL;
    }
    if (grow((void **)&set->tensors,
             &set->cap_tensors,
             set->ntensors + 1,
             sizeof *set->tensors)
        != TS_OK) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    copy = malloc(name_len + 1);
    dims = calloc((size_t)(2 * ndim + 1), sizeof *dims);
    if (copy == NULL || dims == NULL) {
        free(copy);
        free(dims);
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    memcpy(copy, name, name_len);
    copy[name_len] = '\0';
    t = &set->tensors[set->ntensors++];
    memset(t, 0, sizeof *t);
    t->name = copy;
    t->dims = dims;
    t->ndim = ndim;
    t->bytes = -1;
    t->offset = -1;
    t->storage = -1;
    t->dtype = "unknown";
    return t;
}

int
ck_add_storage(ck_set *set, const char *key, ts_error *err)
{
    ck_storage *s;
    char *copy;
    if (set->nstorages >= CK_MAX_TENSORS) {
        return ts_error_set(err, TS_EFORMAT, "too many storages");
    }
    if (grow((void **)&set->storages,
             &set->cap_storages,
             set->nstorages + 1,
             sizeof *set->storages)
            != TS_OK
        || (copy = dup_string(key)) == NULL) {
        return ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    s = &set->storages[set->nstorages];
    memset(s, 0, sizeof *s);
    s->key = copy;
    s->dtype = "unknown";
    s->elements = -1;
    s->bytes = -1;
    s->offset = -1;
    s->file = -1;
    return (int)set->nstorages++;
}

bool
ck_utf8(const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t k = 0;
    while (k < n) {
        unsigned c = s[k];
        size_t len = c < 0x80         ? 1
                     : (c >> 5) == 6  ? 2
                     : (c >> 4) == 14 ? 3
                     : (c >> 3) == 30 ? 4
                                      : 0;
        uint32_t cp;
        if (c == 0 || len == 0 || len > n - k) {
            return false;
        }
        cp = len == 1 ? c : c & (0x3Fu >> (len - 1));
        for (size_t j = 1; j < len; j++) {
            if ((s[k + j] & 0xC0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (s[k + j] & 0x3Fu);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800)
            || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))
            || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        k += len;
    }
    return true;
}

bool
ck_numel(const int64_t *dims, int ndim, int64_t *out)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0 || !ts_mul(n, dims[i], &n)) {
            return false;
        }
    }
    *out = n;
    return true;
}

int
ck_diagnose(ck_set *set,
            const char *code,
            const char *path,
            ts_error *err,
            const char *fmt,
            ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (ts_diagnostic_append(
            set->diagnostics, code, "tensors", path, NULL, message)
        != TS_OK) {
        return ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    return TS_OK;
}

int
ck_open(ck_source *src, const char *dir, const char *name, ts_error *err)
{
    struct stat st;
    size_t dlen = dir != NULL ? strlen(dir) : 0, nlen = strlen(name);
    char *path = malloc(dlen + nlen + 2);
    const char *base;
    memset(src, 0, sizeof *src);
    src->fd = -1;
    if (path == NULL) {
        return ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    if (dir != NULL) {
        memcpy(path, dir, dlen);
        path[dlen] = '/';
        memcpy(path + dlen + 1, name, nlen + 1);
    }
    else {
        memcpy(path, name, nlen + 1);
    }
    base = strrchr(path, '/');
    src->owned = path;
    src->name = base != NULL && base[1] != '\0' ? base + 1 : path;
    src->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (src->fd < 0) {
        int e = errno;
        ts_error_set(err,
                     TS_EIO,
                     "%s: cannot open: %s",
                     dir ? name : path,
                     strerror(e));
        ck_close(src);
        return TS_EIO;
    }
    if (fstat(src->fd, &st) != 0) {
        int e = errno;
        ts_error_set(err, TS_EIO, "%s: %s", src->name, strerror(e));
        ck_close(src);
        return TS_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        ts_error_set(
            err,
            TS_EIO,
            "%s: %s",
            src->name,
            S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
        ck_close(src);
        return TS_EIO;
    }
    src->size = (uint64_t)st.st_size;
    return TS_OK;
}

void
ck_close(ck_source *src)
{
    if (src->fd >= 0) {
        close(src->fd);
    }
    free(src->owned);
    memset(src, 0, sizeof *src);
    src->fd = -1;
}
