/* Byte builders shared by the test_checkpoint_* checkpoint tests: a
 * growable buffer, a pickle assembler, a zip writer (STORED entries,
 * optional Zip64 records and extra fields, bytes prepended), a GGUF writer
 * and the pickles several tests read. Static inline: each test uses a
 * part. */
#ifndef TS_TEST_COV_COREA_BUILD_H
#define TS_TEST_COV_COREA_BUILD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growable byte buffer ---- */

typedef struct bytes {
    unsigned char *d;
    size_t n, cap;
} bytes;

static inline void
put(bytes *b, const void *data, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) {
            cap *= 2;
        }
        b->d = realloc(b->d, cap);
        if (b->d == NULL) {
            abort();
        }
        b->cap = cap;
    }
    memcpy(b->d + b->n, data, n);
    b->n += n;
}

static inline void
op(bytes *b, int code)
{
    unsigned char c = (unsigned char)code;
    put(b, &c, 1);
}

static inline void
le(bytes *b, uint64_t v, int n)
{
    for (int k = 0; k < n; k++) {
        op(b, (int)((v >> (8 * k)) & 0xff));
    }
}

/* ---- pickle assembly ---- */

static inline void
p_str(bytes *b, const char *s) /* SHORT_BINUNICODE */
{
    op(b, 0x8c);
    op(b, (int)strlen(s));
    put(b, s, strlen(s));
}

static inline void
p_int(bytes *b, int v) /* BININT1 */
{
    op(b, 'K');
    op(b, v);
}

static inline void
p_global(bytes *b, const char *module, const char *name) /* GLOBAL */
{
    op(b, 'c');
    put(b, module, strlen(module));
    op(b, '\n');
    put(b, name, strlen(name));
    op(b, '\n');
}

static inline void
p_ints(bytes *b, int n, const int *v) /* a tuple */
{
    op(b, '(');
    for (int k = 0; k < n; k++) {
        p_int(b, v[k]);
    }
    op(b, 't');
}

/* ('storage', torch.<stype>, key, 'cpu', numel) BINPERSID */
static inline void
p_storage(bytes *b, const char *stype, const char *key, int numel)
{
    op(b, '(');
    p_str(b, "storage");
    p_global(b, "torch", stype);
    p_str(b, key);
    p_str(b, "cpu");
    p_int(b, numel);
    op(b, 't');
    op(b, 'Q');
}

/* _rebuild_tensor_v2(storage, offset, size, stride, False, ()) */
static inline void
p_tensor(bytes *b,
         const char *stype,
         const char *key,
         int numel,
         int offset,
         int ndim,
         const int *size,
         const int *stride)
{
    p_global(b, "torch._utils", "_rebuild_tensor_v2");
    op(b, '(');
    p_storage(b, stype, key, numel);
    p_int(b, offset);
    p_ints(b, ndim, size);
    p_ints(b, ndim, stride);
    op(b, 0x89);
    op(b, ')');
    op(b, 't');
    op(b, 'R');
}

/* ---- zip writing ---- */

typedef struct zent {
    const char *name;
    const void *data;
    size_t size;
    int method;       /* 0: STORED */
    int csize_delta;  /* written compressed size minus size */
    bool zip64_extra; /* sizes and offset in a Zip64 extra field */
    bool short_extra; /* the Zip64 extra field with only 8 bytes */
    int only_local;   /* other extra fields: 1: only the offset in the
                         Zip64 field; 2: the offset saturated, the field
                         empty; 3: only the two sizes in it; 4: the sizes
                         saturated, the field empty; 5: an unrelated
                         field; 6: a field longer than the extra data */
} zent;

typedef struct zopts {
    size_t prepend;        /* bytes before the archive */
    bool zip64;            /* a Zip64 record and locator, saturated EOCD */
    int64_t locator_delta; /* added to the locator's record offset */
    bool move_record;      /* a gap between the record and the locator */
} zopts;

static inline void
zip_file(bytes *z, const zent *e, size_t n, const zopts *o)
{
    uint64_t *local = calloc(n + 1, sizeof *local);
    uint64_t cd_start, cd_size, rec_at;
    for (size_t k = 0; k < o->prepend; k++) {
        op(z, 'x');
    }
    for (size_t k = 0; k < n; k++) {
        size_t nlen = strlen(e[k].name);
        local[k] = z->n - o->prepend;
        le(z, 0x04034b50u, 4);
        le(z, 20, 2);
        le(z, 0, 2);
        le(z, (uint64_t)e[k].method, 2);
        le(z, 0, 4);
        le(z, 0, 4);
        le(z, e[k].size, 4);
        le(z, e[k].size, 4);
        le(z, nlen, 2);
        le(z, 0, 2);
        put(z, e[k].name, nlen);
        put(z, e[k].data, e[k].size);
    }
    cd_start = z->n - o->prepend;
    for (size_t k = 0; k < n; k++) {
        size_t nlen = strlen(e[k].name);
        bool x = e[k].zip64_extra;
        le(z, 0x02014b50u, 4);
        le(z, 45, 2);
        le(z, 20, 2);
        le(z, 0, 2);
        le(z, (uint64_t)e[k].method, 2);
        le(z, 0, 4);
        le(z, 0, 4);
        bool sizes = x || e[k].only_local == 3 || e[k].only_local == 4;
        bool offset = x || e[k].only_local == 1 || e[k].only_local == 2;
        le(z, sizes ? 0xFFFFFFFFu : e[k].size + (uint64_t)e[k].csize_delta, 4);
        le(z, sizes ? 0xFFFFFFFFu : e[k].size, 4);
        le(z, nlen, 2);
        le(z,
           x                      ? (e[k].short_extra ? 4 + 8 + 4 : 4 + 24 + 4)
           : e[k].only_local == 1 ? 4 + 8
           : e[k].only_local == 3 ? 4 + 16
           : e[k].only_local != 0 ? 4
                                  : 0,
           2);
        le(z, 0, 2);
        le(z, 0, 2);
        le(z, 0, 2);
        le(z, 0, 4);
        le(z, offset ? 0xFFFFFFFFu : local[k], 4);
        put(z, e[k].name, nlen);
        if (e[k].only_local == 1) {
            le(z, 0x0001, 2);
            le(z, 8, 2);
            le(z, local[k], 8);
        }
        else if (e[k].only_local == 2 || e[k].only_local == 4) {
            le(z, 0x0001, 2);
            le(z, 0, 2);
        }
        else if (e[k].only_local == 3) {
            le(z, 0x0001, 2);
            le(z, 16, 2);
            le(z, e[k].size, 8);
            le(z, e[k].size, 8);
        }
        else if (e[k].only_local == 5) {
            le(z, 0x7075, 2);
            le(z, 0, 2);
        }
        else if (e[k].only_local == 6) {
            le(z, 0x0001, 2);
            le(z, 100, 2);
        }
        if (x) {
            /* an unrelated field first, then Zip64's */
            le(z, 0x7075, 2);
            le(z, 0, 2);
            le(z, 0x0001, 2);
            if (e[k].short_extra) {
                le(z, 8, 2);
                le(z, e[k].size, 8);
            }
            else {
                le(z, 24, 2);
                le(z, e[k].size, 8);
                le(z, e[k].size, 8);
                le(z, local[k], 8);
            }
        }
    }
    cd_size = z->n - o->prepend - cd_start;
    if (o->zip64) {
        rec_at = z->n - o->prepend;
        le(z, 0x06064b50u, 4);
        le(z, 44, 8);
        le(z, 45, 2);
        le(z, 45, 2);
        le(z, 0, 4);
        le(z, 0, 4);
        le(z, n, 8);
        le(z, n, 8);
        le(z, cd_size, 8);
        le(z, cd_start, 8);
        if (o->move_record) {
            for (int k = 0; k < 16; k++) {
                op(z, 0);
            }
        }
        le(z, 0x07064b50u, 4);
        le(z, 0, 4);
        le(z, (uint64_t)((int64_t)rec_at + o->locator_delta), 8);
        le(z, 1, 4);
    }
    le(z, 0x06054b50u, 4);
    le(z, 0, 2);
    le(z, 0, 2);
    le(z, o->zip64 ? 0xFFFF : n, 2);
    le(z, o->zip64 ? 0xFFFF : n, 2);
    le(z, o->zip64 ? 0xFFFFFFFFu : cd_size, 4);
    le(z, o->zip64 ? 0xFFFFFFFFu : cd_start, 4);
    le(z, 0, 2);
    free(local);
}


/* A state dict {"w": 2x3 float32 on storage "0"} and its 24-byte data. */
static inline void
w_pickle(bytes *b)
{
    static const int size[2] = {2, 3}, stride[2] = {3, 1};
    op(b, 0x80);
    op(b, 2);
    op(b, '}');
    op(b, '(');
    p_str(b, "w");
    p_tensor(b, "FloatStorage", "0", 6, 0, 2, size, stride);
    op(b, 'u');
    op(b, '.');
}

static const unsigned char zeros[4096];

/* A dict of many value kinds around four tensors, running every opcode the
 * reader runs: a.0 (float32 [4] on storage "0", 16 bytes), b (bfloat16
 * 2x2 on storage "1", 8 bytes), c (a Parameter of a.0), d (a float16 3x5
 * meta tensor); globals mymod.Thing and mymod.Other. */
static inline void
rich_pickle(bytes *pk)
{
    static const int size1[1] = {4}, stride1[1] = {1};
    static const int size2[2] = {2, 2}, stride2[2] = {2, 1};
    /* a dict of many value kinds around three tensors: every opcode the
     * reader runs, the tensors named by their keys and indices */
    op(pk, 0x80);
    op(pk, 4);
    op(pk, 0x95); /* FRAME */
    le(pk, 0, 8);
    op(pk, '}');
    op(pk, 0x94); /* MEMOIZE -> memo 0 */
    op(pk, '(');
    /* "a": a list of a tensor (float32, 4 elements) */
    p_str(pk, "a");
    op(pk, ']');
    p_tensor(pk, "FloatStorage", "0", 4, 0, 1, size1, stride1);
    op(pk, 'q'); /* BINPUT 1 */
    op(pk, 1);
    op(pk, 'a'); /* APPEND */
    /* "b": a v3 tensor, bfloat16 2x2 on storage "1" of 4 elements */
    p_str(pk, "b");
    p_global(pk, "torch._utils", "_rebuild_tensor_v3");
    op(pk, '(');
    p_storage(pk, "BFloat16Storage", "1", 4);
    p_int(pk, 0);
    p_ints(pk, 2, size2);
    p_ints(pk, 2, stride2);
    op(pk, 0x89);
    op(pk, ')');
    p_global(pk, "torch", "bfloat16");
    op(pk, 't');
    op(pk, 'R');
    /* "c": a Parameter around the memo'd tensor (LONG_BINGET 1) */
    p_str(pk, "c");
    p_global(pk, "torch._utils", "_rebuild_parameter");
    op(pk, 'j');
    le(pk, 1, 4);
    op(pk, 0x88); /* NEWTRUE */
    op(pk, ')');
    op(pk, 0x87); /* TUPLE3 */
    op(pk, 'R');
    /* "d": a meta tensor 3x5 float16 (no storage, no bytes) */
    p_str(pk, "d");
    p_global(pk, "torch._utils", "_rebuild_meta_tensor_no_storage");
    op(pk, '(');
    p_global(pk, "torch", "float16");
    {
        static const int s[2] = {3, 5}, st[2] = {5, 1};
        p_ints(pk, 2, s);
        p_ints(pk, 2, st);
    }
    op(pk, 0x89);
    op(pk, 't');
    op(pk, 'R');
    /* "e": scalars of every width and text kinds, in a tuple */
    p_str(pk, "e");
    op(pk, '(');
    op(pk, 'M'); /* BININT2 */
    le(pk, 513, 2);
    op(pk, 'J'); /* BININT */
    le(pk, (uint32_t)-7, 4);
    op(pk, 0x8a); /* LONG1 -1 */
    op(pk, 1);
    op(pk, 0xff);
    op(pk, 0x8a); /* LONG1 0 bytes */
    op(pk, 0);
    op(pk, 0x8a); /* LONG1 of 9 bytes: a big integer */
    op(pk, 9);
    le(pk, 0, 8);
    op(pk, 1);
    op(pk, 0x8b); /* LONG4 */
    le(pk, 2, 4);
    le(pk, 300, 2);
    op(pk, 'G'); /* BINFLOAT */
    le(pk, 0, 8);
    op(pk, 'B'); /* BINBYTES */
    le(pk, 2, 4);
    put(pk, "xy", 2);
    op(pk, 'C'); /* SHORT_BINBYTES */
    op(pk, 1);
    op(pk, 'z');
    op(pk, 'T'); /* BINSTRING */
    le(pk, 1, 4);
    op(pk, 's');
    op(pk, 'U'); /* SHORT_BINSTRING */
    op(pk, 1);
    op(pk, 't');
    op(pk, 0x8d); /* BINUNICODE8 */
    le(pk, 1, 8);
    op(pk, 'u');
    op(pk, 0x8e); /* BINBYTES8 */
    le(pk, 1, 8);
    op(pk, 'v');
    op(pk, 0x96); /* BYTEARRAY8 */
    le(pk, 1, 8);
    op(pk, 'w');
    op(pk, 'N');
    op(pk, 0x85); /* TUPLE1 */
    op(pk, 't');
    /* "f": sets and a frozenset */
    p_str(pk, "f");
    op(pk, 0x8f); /* EMPTY_SET */
    op(pk, '(');
    p_int(pk, 1);
    p_int(pk, 2);
    op(pk, 0x90); /* ADDITEMS */
    op(pk, '(');
    p_int(pk, 3);
    op(pk, 0x91); /* FROZENSET */
    op(pk, 0x86);
    /* "g": a LIST of [DUP'd int], POP and POP_MARK in between */
    p_str(pk, "g");
    op(pk, '(');
    p_int(pk, 9);
    op(pk, '2'); /* DUP */
    p_int(pk, 8);
    op(pk, '0'); /* POP */
    op(pk, 'l'); /* LIST */
    op(pk, '(');
    p_int(pk, 7);
    op(pk, '1'); /* POP_MARK */
    /* "h": objects: NEWOBJ, NEWOBJ_EX with BUILD state, STACK_GLOBAL */
    p_str(pk, "h");
    p_str(pk, "mymod");
    p_str(pk, "Thing");
    op(pk, 0x93); /* STACK_GLOBAL */
    op(pk, ')');
    op(pk, 0x81); /* NEWOBJ */
    op(pk, '}');
    op(pk, 'b'); /* BUILD: state of an object */
    /* "i": a DICT with an integer key and a None key */
    p_str(pk, "i");
    op(pk, '(');
    p_int(pk, 5);
    p_int(pk, 1);
    op(pk, 'N');
    p_int(pk, 2);
    op(pk, 'd');
    /* "j": NEWOBJ_EX of an OrderedDict-like global, dict SETITEM, BUILD
     * on a dict (left) */
    p_str(pk, "j");
    p_global(pk, "mymod", "Other");
    op(pk, ')');
    op(pk, '}');
    op(pk, 0x92); /* NEWOBJ_EX */
    op(pk, 'h');  /* BINGET 0: the root dict */
    op(pk, 0);
    op(pk, '0');
    p_global(pk, "collections", "OrderedDict");
    op(pk, ')');
    op(pk, 'R');
    p_str(pk, "k");
    p_int(pk, 1);
    op(pk, 's'); /* SETITEM */
    op(pk, '}');
    op(pk, 'b'); /* BUILD on a dict */
    op(pk, 0x86);
    op(pk, 'u');
    op(pk, '.');
}

/* {"p": _rebuild_from_type_v2(_rebuild_tensor_v2, Parameter, (float32
 * 2x3 on storage "0"), {}), "q": _rebuild_qtensor(), "r": Parameter(3)} */
static inline void
calls_pickle(bytes *pk)
{
    static const int size2[2] = {2, 3}, stride2[2] = {3, 1};
    /* _rebuild_from_type_v2(_rebuild_tensor_v2, Parameter, args, {}) */
    op(pk, 0x80);
    op(pk, 2);
    op(pk, '}');
    op(pk, '(');
    p_str(pk, "p");
    p_global(pk, "torch._tensor", "_rebuild_from_type_v2");
    op(pk, '(');
    p_global(pk, "torch._utils", "_rebuild_tensor_v2");
    p_global(pk, "torch.nn.parameter", "Parameter");
    op(pk, '(');
    p_storage(pk, "FloatStorage", "0", 6);
    p_int(pk, 0);
    p_ints(pk, 2, size2);
    p_ints(pk, 2, stride2);
    op(pk, 0x89);
    op(pk, ')');
    op(pk, 't');
    op(pk, '}');
    op(pk, 't');
    op(pk, 'R');
    /* q: a quantized tensor: diagnosed, not read */
    p_str(pk, "q");
    p_global(pk, "torch._utils", "_rebuild_qtensor");
    op(pk, ')');
    op(pk, 'R');
    /* r: a Parameter of something that is not a tensor */
    p_str(pk, "r");
    p_global(pk, "torch.nn.parameter", "Parameter");
    op(pk, '(');
    p_int(pk, 3);
    op(pk, 't');
    op(pk, 'R');
    op(pk, 'u');
    op(pk, '.');
}

/* ---- GGUF ---- */

static inline void
g_head(bytes *b, uint32_t version, uint64_t ntensors, uint64_t nkv)
{
    put(b, "GGUF", 4);
    le(b, version, 4);
    le(b, ntensors, 8);
    le(b, nkv, 8);
}

static inline void
g_str(bytes *b, const void *s, size_t n)
{
    le(b, n, 8);
    put(b, s, n);
}

static inline void
g_key(bytes *b, const char *key, uint32_t type)
{
    g_str(b, key, strlen(key));
    le(b, type, 4);
}

static inline void
g_tensor(bytes *b,
         const char *name,
         int ndim,
         const uint64_t *dims,
         uint32_t type,
         uint64_t offset)
{
    g_str(b, name, strlen(name));
    le(b, (uint64_t)ndim, 4);
    for (int k = 0; k < ndim; k++) {
        le(b, dims[k], 8);
    }
    le(b, type, 4);
    le(b, offset, 8);
}

/* Pads to `align` and appends `data` zero bytes. */
static inline void
g_data(bytes *b, size_t align, size_t data)
{
    while (b->n % align != 0) {
        le(b, 0, 1);
    }
    for (size_t k = 0; k < data; k++) {
        le(b, 0, 1);
    }
}

#endif
