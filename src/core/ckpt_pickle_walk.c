/* Naming the tensors of a pickle's value: a walk of the value the symbolic
 * machine built (ckpt_pickle.c), keys and indices joined by dots as
 * state_dict names them, each TENSOR value checked against its storage
 * and added to the set. The walk stops at depth PK_MAX_DEPTH and after
 * PK_MAX_VISITS values (memo references can make a small pickle describe
 * a huge tree), with a diagnostic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_pickle_internal.h"

typedef struct walk {
    pk *p;
    char *path;
    size_t len, cap;
    size_t visits;
    bool cut; /* the depth or visit bound was reached */
} walk;

static bool
path_push(walk *w, const char *text, size_t n, size_t *saved)
{
    size_t need = w->len + n + 2;
    *saved = w->len;
    if (need > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        char *p;
        while (cap < need) {
            cap *= 2;
        }
        if ((p = realloc(w->path, cap)) == NULL) {
            return false;
        }
        w->path = p;
        w->cap = cap;
    }
    if (w->len > 0) {
        w->path[w->len++] = '.';
    }
    memcpy(w->path + w->len, text, n);
    w->len += n;
    w->path[w->len] = '\0';
    return true;
}

static bool
int_items(const pv *t, int64_t *out, int ndim)
{
    for (int k = 0; k < ndim; k++) {
        if (t->items[k]->kind != PV_INT || t->items[k]->i < 0) {
            return false;
        }
        out[k] = t->items[k]->i;
    }
    return true;
}

/* Adds the tensor record of a TENSOR value named w->path. */
static int
add_tensor(walk *w, const pv *v)
{
    pk *p = w->p;
    const pv *storage = v->items[0], *offset = v->items[1];
    const pv *size = v->items[2], *stride = v->items[3], *dtype = v->items[4];
    const ck_torch_dtype *dt = NULL;
    const char *name = w->len ? w->path : "";
    int64_t extent = 0, bytes;
    ck_tensor *t;
    int ndim;
    if ((size->kind != PV_TUPLE && size->kind != PV_LIST)
        || (stride->kind != PV_TUPLE && stride->kind != PV_LIST)
        || size->nitems != stride->nitems || size->nitems > CK_MAX_DIMS) {
        return ts_error_set(p->err,
                            TS_EFORMAT,
                            "%s: %s: tensor '%s': size and stride are not "
                            "two lists of one length (at most %d)",
                            p->src->name,
                            p->what,
                            name,
                            CK_MAX_DIMS);
    }
    ndim = (int)size->nitems;
    t = ck_add_tensor(p->set, name, w->len, ndim, p->err);
    if (t == NULL) {
        return p->err->code;
    }
    t->has_stride = true;
    t->file = p->file;
    if (!int_items(size, t->dims, ndim)
        || !int_items(stride, t->dims + ndim, ndim)
        || (offset != &ck_pk_mark && offset->kind != PV_INT)
        || (offset != &ck_pk_mark && offset->i < 0)) {
        return ts_error_set(p->err,
                            TS_EFORMAT,
                            "%s: %s: tensor '%s': size, stride and offset "
                            "must be non-negative integers",
                            p->src->name,
                            p->what,
                            name);
    }
    t->storage_offset = offset != &ck_pk_mark ? offset->i : 0;
    if (dtype != &ck_pk_mark) {
        dt = dtype->kind == PV_GLOBAL ? ck_dtype_of_global(dtype->s) : NULL;
        if (dt == NULL) {
            return ts_error_set(p->err,
                                TS_EFORMAT,
                                "%s: %s: tensor '%s': its dtype is not a "
                                "torch dtype",
                                p->src->name,
                                p->what,
                                name);
        }
    }
    if (!ck_numel(t->dims, ndim, &t->elements)) {
        return ts_error_set(p->err,
                            TS_EFORMAT,
                            "%s: %s: tensor '%s': its size overflows",
                            p->src->name,
                            p->what,
                            name);
    }
    if (storage->kind == PV_STORAGE) {
        const ck_storage *st = &p->set->storages[storage->i];
        t->storage = (int)storage->i;
        if (dt == NULL) {
            dt = ck_dtype_of_global(st->dtype);
        }
    }
    else if (storage != &ck_pk_mark) {
        return ts_error_set(p->err,
                            TS_EFORMAT,
                            "%s: %s: tensor '%s': its storage is not a "
                            "persistent id",
                            p->src->name,
                            p->what,
                            name);
    }
    t->dtype = dt->full;
    if (!ts_mul(t->elements, dt->itemsize, &t->bytes)) {
        return ts_error_set(p->err,
                            TS_EFORMAT,
                            "%s: %s: tensor '%s': its size overflows",
                            p->src->name,
                            p->what,
                            name);
    }
    if (t->storage < 0) {
        t->bytes = 0; /* a meta tensor: no data */
        return TS_OK;
    }
    /* the view must lie inside its storage */
    if (t->elements > 0) {
        extent = t->storage_offset;
        for (int k = 0; k < ndim; k++) {
            int64_t reach;
            if (!ts_mul(t->dims[k] - 1, t->dims[ndim + k], &reach)
                || !ts_add(extent, reach, &extent)) {
                extent = INT64_MAX - 1;
                break;
            }
        }
        extent += 1;
    }
    {
        const ck_storage *st = &p->set->storages[t->storage];
        if (!ts_mul(extent, dt->itemsize, &bytes) || bytes > st->bytes) {
            return ts_error_set(p->err,
                                TS_EFORMAT,
                                "%s: %s: tensor '%s': its view (offset "
                                "%lld, %d dims) reaches past storage '%s' "
                                "(%lld bytes)",
                                p->src->name,
                                p->what,
                                name,
                                (long long)t->storage_offset,
                                ndim,
                                st->key,
                                (long long)st->bytes);
        }
        if (st->offset >= 0) {
            t->offset = st->offset + t->storage_offset * dt->itemsize;
        }
    }
    return TS_OK;
}

static int walk_value(walk *w, const pv *v, int depth);

static int
walk_child(walk *w, const char *text, size_t n, const pv *child, int depth)
{
    size_t saved;
    int rc;
    if (!path_push(w, text, n, &saved)) {
        return ck_pk_nomem(w->p);
    }
    rc = walk_value(w, child, depth + 1);
    w->len = saved;
    if (w->path != NULL) {
        w->path[saved] = '\0';
    }
    return rc;
}

static int
walk_value(walk *w, const pv *v, int depth)
{
    char num[32];
    if (depth > PK_MAX_DEPTH || ++w->visits > PK_MAX_VISITS) {
        w->cut = true;
        return TS_OK;
    }
    switch (v->kind) {
        case PV_TENSOR:
            return add_tensor(w, v);
        case PV_DICT:
            for (size_t k = 0; k + 1 < v->nitems; k += 2) {
                const pv *key = v->items[k];
                int rc;
                if (key->kind == PV_STR) {
                    /* a key no report can name (NUL, not UTF-8) */
                    if (key->n > CK_MAX_NAME || !ck_utf8(key->s, key->n)) {
                        continue;
                    }
                    rc = walk_child(w, key->s, key->n, v->items[k + 1], depth);
                }
                else if (key->kind == PV_INT) {
                    snprintf(num, sizeof num, "%lld", (long long)key->i);
                    rc = walk_child(
                        w, num, strlen(num), v->items[k + 1], depth);
                }
                else {
                    rc = walk_child(w, "?", 1, v->items[k + 1], depth);
                }
                if (rc != TS_OK) {
                    return rc;
                }
            }
            return TS_OK;
        case PV_LIST:
        case PV_TUPLE:
        case PV_SET:
            for (size_t k = 0; k < v->nitems; k++) {
                int rc;
                snprintf(num, sizeof num, "%zu", k);
                if ((rc = walk_child(w, num, strlen(num), v->items[k], depth))
                    != TS_OK) {
                    return rc;
                }
            }
            return TS_OK;
        case PV_OBJECT:
            /* its arguments and state, under the same name */
            for (size_t k = 0; k < v->nitems; k++) {
                int rc = walk_value(w, v->items[k], depth + 1);
                if (rc != TS_OK) {
                    return rc;
                }
            }
            return TS_OK;
        default:
            return TS_OK;
    }
}

int
ck_pk_name_tensors(pk *p, const pv *root)
{
    walk w;
    int rc;
    memset(&w, 0, sizeof w);
    w.p = p;
    rc = walk_value(&w, root, 0);
    if (rc == TS_OK && w.cut) {
        p->set->incomplete = true;
        rc = ck_diagnose(p->set,
                         "checkpoint_unknown_object",
                         NULL,
                         p->err,
                         "%s: %s: the pickle's values nest deeper than %d "
                         "or reach more than %d values; the rest was not "
                         "searched for tensors",
                         p->src->name,
                         p->what,
                         PK_MAX_DEPTH,
                         PK_MAX_VISITS);
    }
    free(w.path);
    return rc;
}
