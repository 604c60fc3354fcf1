/* The symbolic pickle machine's values and state, shared by the machine
 * (ckpt_pickle.c) and the walk that names the tensors of its result
 * (ckpt_pickle_walk.c). Private to those two files. */
#ifndef TS_CKPT_PICKLE_INTERNAL_H
#define TS_CKPT_PICKLE_INTERNAL_H

#include "ckpt_internal.h"

#define PK_MAX_DEPTH 256
#define PK_MAX_VISITS 4000000

typedef enum {
    PV_MARK,
    PV_NONE,
    PV_BOOL,
    PV_INT,
    PV_BIGINT, /* an integer past 64 bits: only its presence matters */
    PV_FLOAT,
    PV_STR,
    PV_BYTES,
    PV_TUPLE,
    PV_LIST,
    PV_DICT, /* items: key, value, key, value... */
    PV_SET,
    PV_GLOBAL,
    PV_STORAGE,
    PV_TENSOR, /* items: storage (or NONE), offset, size, stride, dtype */
    PV_OBJECT, /* an opaque result: items are its arguments and state */
} pv_kind;

typedef struct pv pv;
struct pv {
    pv_kind kind;
    bool parameter;   /* TENSOR: wrapped by a Parameter */
    int64_t i;        /* BOOL, INT; STORAGE: its index in the set */
    const char *s;    /* STR, BYTES: into the pickle; GLOBAL: text */
    size_t n;         /* length of s */
    const char *type; /* OBJECT: the global that made it (text) */
    pv **items;
    size_t nitems, cap;
    pv *next_alloc; /* every value, for freeing */
    char *owned;    /* GLOBAL: its name, malloc'd */
};

typedef struct pk {
    ck_set *set;
    const ck_source *src;
    const char *what; /* the entry, for messages */
    const uint8_t *data;
    size_t len, pos;
    uint64_t base;  /* file offset of data[0] */
    bool truncated; /* read past the end of data */
    pv **stack;
    size_t nstack, cap_stack;
    pv **memo;
    size_t nmemo;
    pv *values; /* the allocation list */
    size_t nvalues;
    json_t *global_index;  /* name -> row of set->globals */
    json_t *storage_index; /* key -> index of set->storages */
    int file;
    bool legacy; /* persistent ids of the legacy format */
    ts_error *err;
} pk;

/* The MARK on the stack; also what a missing argument of a tensor rebuild
 * is held as (a meta tensor's storage offset). */
extern pv ck_pk_mark;

/* Fails the pickle at byte `at` of its data: TS_EINVAL with a message
 * naming the file, the entry and the file offset (fmt takes detail). */
int ck_pk_fail(pk *p, size_t at, const char *fmt, const char *detail);
/* TS_ENOMEM in p->err. */
int ck_pk_nomem(pk *p);

/* Adds the tensors root holds to p->set, named by their keys and indices
 * (ckpt_pickle_walk.c); a diagnostic when the bounds cut the walk. */
int ck_pk_name_tensors(pk *p, const pv *root);

#endif
