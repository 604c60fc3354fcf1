/* Private to src/core: what the checkpoint readers share (ckpt_*.c).
 *
 * A reader turns the bytes of one file into records of a ck_set: tensors
 * (name, dtype, shape, where their data lies), storages (the pickle
 * formats' shared buffers), files, metadata, the globals a pickle names and
 * diagnostics. ckpt_report.c builds the checkpoint report from a set; the
 * readers never build report JSON themselves.
 *
 * Untrusted input rules, followed by every reader: each count, size and
 * offset is checked against the file's size and for overflow before it is
 * used; no allocation is sized by a number read from the file unless that
 * number was first bounded (by the file size or by a fixed limit below); an
 * error names the file and where (a byte offset, an entry or a tensor). */
#ifndef TORCHSCAN_CKPT_INTERNAL_H
#define TORCHSCAN_CKPT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "torchscan/core.h"

#define CK_MAX_DIMS 64                    /* dimensions of one tensor */
#define CK_MAX_NAME 65536                 /* bytes of one tensor or key name */
#define CK_MAX_TENSORS 10000000           /* tensors in one checkpoint */
#define CK_MAX_JSON ((uint64_t)100 << 20) /* safetensors' header limit */

/* The bytes of one file: in memory (mem != NULL) or an open descriptor
 * read with pread. */
typedef struct ck_source {
    const char *name; /* for messages: the file's base name */
    char *owned;      /* what ck_open allocated */
    const uint8_t *mem;
    int fd;
    uint64_t size;
} ck_source;

/* Opens dir/name (dir NULL: name is the path) for reading: src->name is
 * the base name (owned by the source; ck_close releases it). TS_EIO with
 * a message naming the file. */
int ck_open(ck_source *src, const char *dir, const char *name, ts_error *err);
void ck_close(ck_source *src);

/* Reads len bytes at offset into buf; TS_EFORMAT naming `what` when they
 * lie (partly) past the end of the file, TS_EIO on a read error. */
int ck_read(const ck_source *src,
            uint64_t offset,
            void *buf,
            size_t len,
            const char *what,
            ts_error *err);

/* A malloc'd copy of len bytes at offset (len bounded by the caller); NULL
 * with err set. */
uint8_t *ck_read_alloc(const ck_source *src,
                       uint64_t offset,
                       size_t len,
                       const char *what,
                       ts_error *err);

static inline uint64_t
ck_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

static inline uint32_t
ck_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
           | (uint32_t)p[3] << 24;
}

static inline uint16_t
ck_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* One tensor of the checkpoint. */
typedef struct ck_tensor {
    char *name;        /* owned */
    const char *dtype; /* static text */
    int ndim;
    int64_t *dims;          /* owned: ndim sizes, then ndim strides */
    bool has_stride;        /* pickle formats: strides and storage_offset */
    int64_t storage_offset; /* in elements */
    int64_t elements;
    int64_t bytes;  /* the data of its own elements; -1: unknown */
    int file;       /* index into files */
    int64_t offset; /* absolute byte offset of its data; -1: unknown */
    int storage;    /* index into storages; -1: none */
} ck_tensor;

/* A storage of a pickle-format checkpoint (tensors that share one are
 * tied or views). */
typedef struct ck_storage {
    char *key;         /* owned: the archive's key ("0", "1", ...) */
    const char *dtype; /* static text */
    int64_t itemsize;  /* bytes per element */
    int64_t elements;  /* -1: not known yet */
    int64_t bytes;
    int file;
    int64_t offset; /* absolute byte offset of its data; -1: unknown */
    char *location; /* owned: "cpu", "cuda:0"; NULL when none was named */
} ck_storage;

typedef struct ck_file {
    char *name;         /* owned: base name */
    const char *format; /* static */
    uint64_t size;
    uint64_t header_bytes; /* bytes of metadata (header, pickle, index) */
} ck_file;

typedef struct ck_set {
    const char *format; /* static: the checkpoint's format */
    const char *method; /* static: how it was read (MetricResult.method) */
    ck_tensor *tensors;
    size_t ntensors, cap_tensors;
    ck_storage *storages;
    size_t nstorages, cap_storages;
    ck_file *files;
    size_t nfiles, cap_files;
    json_t *metadata;    /* object */
    json_t *globals;     /* list of {name, allowed, uses} */
    json_t *diagnostics; /* list */
    bool incomplete;     /* something was not understood: totals are partial */
} ck_set;

/* Initialises an empty set; TS_ENOMEM. ck_set_clear releases it. */
int ck_set_init(ck_set *set, ts_error *err);
void ck_set_clear(ck_set *set);

/* Adds a file; returns its index, or a negative status with err set. */
int ck_add_file(ck_set *set,
                const char *name,
                const char *format,
                uint64_t size,
                ts_error *err);

/* Appends a tensor with `ndim` dims (and room for as many strides),
 * taking a copy of name[0..name_len); returns it or NULL with err set. */
ck_tensor *ck_add_tensor(
    ck_set *set, const char *name, size_t name_len, int ndim, ts_error *err);

/* Appends a storage; returns its index, or a negative status. */
int ck_add_storage(ck_set *set, const char *key, ts_error *err);

/* The product of dims into *out; false when it overflows or a dim is
 * negative. */
bool ck_numel(const int64_t *dims, int ndim, int64_t *out);

/* True for n bytes of valid UTF-8 without NUL: what a JSON string (a name
 * or key in the report) can hold. */
bool ck_utf8(const char *s, size_t n);

/* Appends a diagnostic {code, severity, metric, path, message} to the
 * set; TS_ENOMEM. path may be NULL. */
int ck_diagnose(ck_set *set,
                const char *code,
                const char *path,
                ts_error *err,
                const char *fmt,
                ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* ---- readers: each adds one file's records to set ---- */

/* safetensors: the 8-byte header length, the JSON header, the data. */
int ck_read_safetensors(ck_set *set, const ck_source *src, ts_error *err);

/* A sharded safetensors checkpoint: the index JSON (`text`, `len` bytes of
 * the index file) names the shards in `dir` (NULL: only the index is
 * read, for the fuzzer). */
int ck_read_safetensors_index(ck_set *set,
                              const ck_source *src,
                              const char *dir,
                              ts_error *err);

/* ---- pickles (ckpt_pickle.c, ckpt_pickle_walk.c) ---- */

/* Runs the pickle data[0..len) (the entry `what` of src, at file offset
 * `base`) on the symbolic machine and adds the tensors it describes, the
 * storages its persistent ids name and the globals it names to set; the
 * tensors are in file `file`. *end: the byte after STOP. *truncated (may
 * be NULL) is set when the pickle ran past `len` (the caller may retry
 * with more bytes). Storages' offsets must be set before (zip) or fixed
 * after (legacy) by the caller. */
int ck_unpickle(ck_set *set,
                const ck_source *src,
                const char *what,
                const uint8_t *data,
                size_t len,
                uint64_t base,
                int file,
                size_t *end,
                bool *truncated,
                ts_error *err);

typedef enum {
    CK_PICKLED_OTHER,
    CK_PICKLED_INT,
    CK_PICKLED_BIGINT,
    CK_PICKLED_KEYS,
} ck_pickled_kind;

/* The value of one of the legacy format's small pickles. */
typedef struct ck_pickle_value {
    ck_pickled_kind kind;
    int64_t i;       /* CK_PICKLED_INT */
    uint8_t big[16]; /* CK_PICKLED_BIGINT: its little-endian bytes */
    size_t nbig;
    json_t *keys;   /* CK_PICKLED_KEYS: the list of text (owned) */
    size_t end;     /* the byte after STOP */
    bool truncated; /* the pickle ran past len */
} ck_pickle_value;

int ck_unpickle_value(const ck_source *src,
                      const char *what,
                      const uint8_t *data,
                      size_t len,
                      uint64_t base,
                      ck_pickle_value *out,
                      ts_error *err);

/* ---- the names torch's pickles use (ckpt_torch_names.c) ---- */

/* Whether torch.load(weights_only=True) in torch 2.13 allows a global
 * ("module.name"); the sorted allowlist itself (for tests). */
bool ck_global_allowed(const char *name);
size_t ck_allowed_globals(const char *const **names);

/* A torch dtype: its name after "torch.", the full name, bytes per
 * element. */
typedef struct ck_torch_dtype {
    const char *name, *full;
    int itemsize;
} ck_torch_dtype;

/* The dtype a global such as "torch.float32" names; NULL when it is none. */
const ck_torch_dtype *ck_dtype_of_global(const char *name);
/* The dtype of a storage type global (torch.FloatStorage -> float32);
 * untyped storages hold bytes (uint8); NULL when it is none. */
const ck_torch_dtype *ck_dtype_of_storage(const char *name);
/* The Python 3 name of the module m[0..*n) a protocol 2 pickle names
 * (_compat_pickle's IMPORT_MAPPING); *n is set to its length. Returns m
 * itself when it has no other name. */
const char *ck_py3_module(const char *m, size_t *n);

/* ---- PyTorch files (ckpt_zip.c, ckpt_legacy.c) ---- */

int ck_read_torch_zip(ck_set *set, const ck_source *src, ts_error *err);
int ck_read_torch_legacy(ck_set *set, const ck_source *src, ts_error *err);

/* GGUF v2/v3 (ckpt_gguf.c); the magic is checked by the caller. */
int ck_read_gguf(ck_set *set, const ck_source *src, ts_error *err);

/* A ggml type by id: its name, elements per block and bytes per block;
 * false for an id that is not (or no longer) a type. */
bool ck_ggml_type(uint32_t id, const char **name, int *block, int *size);

/* True for the first bytes of a legacy torch.save file (its magic). */
bool ck_is_torch_legacy(const uint8_t *head, size_t n);

/* Sets each tensor's file offset from its storage's (once the storages are
 * placed). */
void ck_place_tensors(ck_set *set);

/* The report of `size` bytes read by one reader, whatever they begin
 * with: 0 safetensors, 1 a sharded index (shards not read), 2 torch zip,
 * 3 legacy torch, 4 GGUF (its magic not checked). For the fuzz targets,
 * one per reader (tests/fuzz/fuzz_checkpoint.c). */
json_t *ck_inspect_memory_as(const void *data,
                             size_t size,
                             int reader,
                             ts_error *err);

/* Builds the report of a finished set (ckpt_report.c). */
json_t *ck_report(const ck_set *set, ts_error *err);

/* The torch dtype name of a safetensors dtype ("BF16" ->
 * "torch.bfloat16"), its size in bits; NULL when unknown. */
const char *ck_safetensors_dtype(const char *name, int *bits);

#endif /* TORCHSCAN_CKPT_INTERNAL_H */
