/* The checkpoint report of a finished ck_set (torchscan/checkpoint.h says
 * every field): files, tensors, storages and what shares them, the tree of
 * module prefixes, the dtype breakdown, globals, totals, diagnostics. The
 * same builder serves every format, so the reports of two formats read
 * alike. */
#include <stdlib.h>
#include <string.h>

#include "ckpt_internal.h"
#include "record_util.h"

#define FAIL_NOMEM(err) ts_error_set((err), TS_ENOMEM, "out of memory")

/* ---- name order: components compared as numbers where both are ---- */

static bool
all_digits(const char *s, size_t n)
{
    if (n == 0) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
    }
    return true;
}

static int
cmp_component(const char *a, size_t na, const char *b, size_t nb)
{
    int c;
    if (all_digits(a, na) && all_digits(b, nb)) {
        while (na > 1 && *a == '0') {
            a++, na--;
        }
        while (nb > 1 && *b == '0') {
            b++, nb--;
        }
        if (na != nb) {
            return na < nb ? -1 : 1;
        }
        return memcmp(a, b, na);
    }
    c = memcmp(a, b, na < nb ? na : nb);
    if (c != 0) {
        return c;
    }
    return na == nb ? 0 : (na < nb ? -1 : 1);
}

/* Compares dotted names component by component. */
static int
cmp_names(const char *a, const char *b)
{
    for (;;) {
        const char *ea = strchr(a, '.'), *eb = strchr(b, '.');
        size_t na = ea ? (size_t)(ea - a) : strlen(a);
        size_t nb = eb ? (size_t)(eb - b) : strlen(b);
        int c = cmp_component(a, na, b, nb);
        if (c != 0) {
            return c;
        }
        if (ea == NULL || eb == NULL) {
            return ea == eb ? 0 : (ea == NULL ? -1 : 1);
        }
        a = ea + 1;
        b = eb + 1;
    }
}

static const ck_tensor *sort_base;

static int
cmp_tensor_index(const void *x, const void *y)
{
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    int c = cmp_names(sort_base[i].name, sort_base[j].name);
    return c != 0 ? c : (i < j ? -1 : i > j);
}

/* ---- the module tree ---- */

typedef struct node_sum {
    json_t *row;      /* borrowed from the modules list */
    const char *path; /* the tensor name it was opened with (a prefix) */
    size_t path_len;
    int64_t tensors, elements, bytes;
    bool bytes_unknown;
} node_sum;

static int
close_node(node_sum *n, ts_error *err)
{
    if (json_object_set_new(n->row, "tensors", json_integer(n->tensors))
        || json_object_set_new(n->row, "elements", json_integer(n->elements))
        || json_object_set_new(
            n->row,
            "bytes",
            n->bytes_unknown ? json_null() : json_integer(n->bytes))) {
        return FAIL_NOMEM(err);
    }
    return TS_OK;
}

static int
open_node(json_t *modules,
          node_sum *n,
          const char *name,
          size_t path_len,
          int depth,
          ts_error *err)
{
    json_t *row = json_object();
    memset(n, 0, sizeof *n);
    if (row == NULL
        || json_object_set_new(row, "path", json_stringn(name, path_len))
        || json_object_set_new(row, "depth", json_integer(depth))
        || json_array_append_new(modules, row)) {
        json_decref(row);
        return FAIL_NOMEM(err);
    }
    n->row = row;
    n->path = name;
    n->path_len = path_len;
    return TS_OK;
}

/* Adds one tensor to every open node; false on overflow. */
static bool
add_to_nodes(node_sum *stack, size_t depth, const ck_tensor *t)
{
    for (size_t k = 0; k <= depth; k++) {
        node_sum *n = &stack[k];
        n->tensors++;
        if (!ts_add(n->elements, t->elements, &n->elements)) {
            return false;
        }
        if (t->bytes < 0) {
            n->bytes_unknown = true;
        }
        else if (!ts_add(n->bytes, t->bytes, &n->bytes)) {
            return false;
        }
    }
    return true;
}

/* The number of dots in s (components - 1). */
static size_t
count_dots(const char *s)
{
    size_t n = 0;
    for (; *s; s++) {
        n += *s == '.';
    }
    return n;
}

static json_t *
module_tree(const ck_set *set, ts_error *err)
{
    json_t *modules = json_array();
    size_t *order = calloc(set->ntensors + 1, sizeof *order);
    node_sum *stack = NULL;
    size_t depth = 0, max_dots = 0;
    int rc = TS_OK;
    if (modules == NULL || order == NULL) {
        rc = FAIL_NOMEM(err);
        goto done;
    }
    for (size_t i = 0; i < set->ntensors; i++) {
        size_t d = count_dots(set->tensors[i].name);
        order[i] = i;
        max_dots = d > max_dots ? d : max_dots;
    }
    stack = calloc(max_dots + 1, sizeof *stack);
    if (stack == NULL) {
        rc = FAIL_NOMEM(err);
        goto done;
    }
    sort_base = set->tensors;
    qsort(order, set->ntensors, sizeof *order, cmp_tensor_index);
    if ((rc = open_node(modules, &stack[0], "", 0, 0, err)) != TS_OK) {
        goto done;
    }
    for (size_t i = 0; i < set->ntensors; i++) {
        const ck_tensor *t = &set->tensors[order[i]];
        const char *name = t->name;
        /* the module components of the name: all but the last */
        size_t keep = 0, level = 0;
        const char *p = name;
        /* how many open nodes (below the root) this name continues */
        while (level < depth) {
            const node_sum *open = &stack[level + 1];
            if (strlen(name) <= open->path_len || name[open->path_len] != '.'
                || memcmp(name, open->path, open->path_len) != 0) {
                break;
            }
            p = name + open->path_len + 1;
            level++;
        }
        keep = level;
        while (depth > keep) {
            if ((rc = close_node(&stack[depth], err)) != TS_OK) {
                goto done;
            }
            depth--;
        }
        for (const char *dot = strchr(p, '.'); dot != NULL;
             dot = strchr(dot + 1, '.')) {
            depth++;
            rc = open_node(modules,
                           &stack[depth],
                           name,
                           (size_t)(dot - name),
                           (int)depth,
                           err);
            if (rc != TS_OK) {
                goto done;
            }
        }
        if (!add_to_nodes(stack, depth, t)) {
            rc = ts_error_set(err,
                              TS_EOVERFLOW,
                              "the elements under a module prefix overflow "
                              "64 bits");
            goto done;
        }
    }
    for (;;) {
        if ((rc = close_node(&stack[depth], err)) != TS_OK || depth == 0) {
            break;
        }
        depth--;
    }
done:
    free(order);
    free(stack);
    if (rc != TS_OK) {
        json_decref(modules);
        return NULL;
    }
    return modules;
}

/* ---- tensors, storages, dtypes ---- */

static json_t *
int_list(const int64_t *v, int n)
{
    json_t *list = json_array();
    for (int i = 0; list != NULL && i < n; i++) {
        if (json_array_append_new(list, json_integer(v[i])) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

static json_t *
bytes_value(int64_t bytes)
{
    return bytes < 0 ? json_null() : json_integer(bytes);
}

static json_t *
tensor_row(const ck_set *set, const ck_tensor *t)
{
    json_t *row =
        json_pack("{s:s, s:s, s:o*, s:I, s:o, s:i, s:o}",
                  "name",
                  t->name,
                  "dtype",
                  t->dtype,
                  "shape",
                  int_list(t->dims, t->ndim),
                  "elements",
                  (json_int_t)t->elements,
                  "bytes",
                  bytes_value(t->bytes),
                  "file",
                  t->file,
                  "offset",
                  t->offset < 0 ? json_null() : json_integer(t->offset));
    if (row == NULL || !json_object_get(row, "shape")) {
        json_decref(row);
        return NULL;
    }
    if (t->storage >= 0) {
        if (json_object_set_new(
                row, "storage", json_string(set->storages[t->storage].key))
            || json_object_set_new(
                row, "storage_offset", json_integer(t->storage_offset))
            || json_object_set_new(
                row, "stride", int_list(t->dims + t->ndim, t->ndim))) {
            json_decref(row);
            return NULL;
        }
    }
    return row;
}

/* Tensors of one storage: "tied" when all are the same view. */
static bool
same_view(const ck_tensor *a, const ck_tensor *b)
{
    return a->ndim == b->ndim && a->storage_offset == b->storage_offset
           && memcmp(a->dims, b->dims, 2 * (size_t)a->ndim * sizeof *a->dims)
                  == 0;
}

static int
storage_rows(const ck_set *set, json_t *report, ts_error *err)
{
    json_t *storages = json_array(), *shared = json_array();
    json_t **names = calloc(set->nstorages + 1, sizeof *names);
    size_t *first = calloc(set->nstorages + 1, sizeof *first);
    bool *tied = calloc(set->nstorages + 1, sizeof *tied);
    int rc = TS_OK;
    if (storages == NULL || shared == NULL || names == NULL || first == NULL
        || tied == NULL) {
        rc = FAIL_NOMEM(err);
        goto done;
    }
    for (size_t s = 0; s < set->nstorages; s++) {
        if ((names[s] = json_array()) == NULL) {
            rc = FAIL_NOMEM(err);
            goto done;
        }
        tied[s] = true;
    }
    for (size_t i = 0; i < set->ntensors; i++) {
        const ck_tensor *t = &set->tensors[i];
        if (t->storage < 0) {
            continue;
        }
        if (json_array_size(names[t->storage]) == 0) {
            first[t->storage] = i;
        }
        else if (!same_view(&set->tensors[first[t->storage]], t)) {
            tied[t->storage] = false;
        }
        if (json_array_append_new(names[t->storage], json_string(t->name))) {
            rc = FAIL_NOMEM(err);
            goto done;
        }
    }
    for (size_t s = 0; s < set->nstorages; s++) {
        const ck_storage *st = &set->storages[s];
        json_t *row = json_pack(
            "{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:O}",
            "key",
            st->key,
            "dtype",
            st->dtype,
            "elements",
            st->elements < 0 ? json_null() : json_integer(st->elements),
            "bytes",
            bytes_value(st->bytes),
            "file",
            st->file < 0 ? json_null() : json_integer(st->file),
            "offset",
            st->offset < 0 ? json_null() : json_integer(st->offset),
            "location",
            st->location ? json_string(st->location) : json_null(),
            "tensors",
            names[s]);
        if (row == NULL || json_array_append_new(storages, row)) {
            rc = FAIL_NOMEM(err);
            goto done;
        }
        if (json_array_size(names[s]) > 1) {
            row = json_pack("{s:s, s:O, s:s}",
                            "storage",
                            st->key,
                            "tensors",
                            names[s],
                            "relation",
                            tied[s] ? "tied" : "views");
            if (row == NULL || json_array_append_new(shared, row)) {
                rc = FAIL_NOMEM(err);
                goto done;
            }
        }
    }
    if (set->nstorages > 0
        && json_object_set(report, "storages", storages) != 0) {
        rc = FAIL_NOMEM(err);
        goto done;
    }
    if (json_object_set(report, "shared", shared) != 0) {
        rc = FAIL_NOMEM(err);
    }
done:
    for (size_t s = 0; names != NULL && s < set->nstorages; s++) {
        json_decref(names[s]);
    }
    free(names);
    free(first);
    free(tied);
    json_decref(storages);
    json_decref(shared);
    return rc;
}

typedef struct dtype_sum {
    const char *dtype;
    int64_t tensors, elements, bytes;
    bool bytes_unknown;
} dtype_sum;

static int
cmp_dtype_sum(const void *a, const void *b)
{
    return strcmp(((const dtype_sum *)a)->dtype,
                  ((const dtype_sum *)b)->dtype);
}

static json_t *
dtype_rows(const ck_set *set, ts_error *err)
{
    dtype_sum *sums = NULL;
    size_t n = 0, cap = 0;
    json_t *rows = json_array();
    if (rows == NULL) {
        FAIL_NOMEM(err);
        return NULL;
    }
    for (size_t i = 0; i < set->ntensors; i++) {
        const ck_tensor *t = &set->tensors[i];
        size_t k = 0;
        while (k < n && strcmp(sums[k].dtype, t->dtype) != 0) {
            k++;
        }
        if (k == n) {
            if (grow((void **)&sums, &cap, n + 1, sizeof *sums) != TS_OK) {
                goto nomem;
            }
            memset(&sums[n], 0, sizeof sums[n]);
            sums[n++].dtype = t->dtype;
        }
        sums[k].tensors++;
        if (!ts_add(sums[k].elements, t->elements, &sums[k].elements)
            || (t->bytes >= 0
                && !ts_add(sums[k].bytes, t->bytes, &sums[k].bytes))) {
            ts_error_set(err, TS_EOVERFLOW, "a dtype's total overflows");
            free(sums);
            json_decref(rows);
            return NULL;
        }
        sums[k].bytes_unknown = sums[k].bytes_unknown || t->bytes < 0;
    }
    if (n > 0) {
        qsort(sums, n, sizeof *sums, cmp_dtype_sum);
    }
    for (size_t k = 0; k < n; k++) {
        json_t *row = json_pack(
            "{s:s, s:I, s:I, s:o}",
            "dtype",
            sums[k].dtype,
            "tensors",
            (json_int_t)sums[k].tensors,
            "elements",
            (json_int_t)sums[k].elements,
            "bytes",
            sums[k].bytes_unknown ? json_null() : json_integer(sums[k].bytes));
        if (row == NULL || json_array_append_new(rows, row)) {
            goto nomem;
        }
    }
    free(sums);
    return rows;
nomem:
    free(sums);
    json_decref(rows);
    FAIL_NOMEM(err);
    return NULL;
}

/* ---- files and totals ---- */

static json_t *
file_rows(const ck_set *set, ts_error *err)
{
    json_t *rows = json_array();
    for (size_t f = 0; rows != NULL && f < set->nfiles; f++) {
        const ck_file *file = &set->files[f];
        int64_t tensors = 0, bytes = 0;
        json_t *row;
        for (size_t i = 0; i < set->ntensors; i++) {
            const ck_tensor *t = &set->tensors[i];
            if (t->file == (int)f) {
                tensors++;
                if (t->bytes > 0 && !ts_add(bytes, t->bytes, &bytes)) {
                    ts_error_set(
                        err, TS_EOVERFLOW, "a shard's bytes overflow");
                    json_decref(rows);
                    return NULL;
                }
            }
        }
        row = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}",
                        "name",
                        file->name,
                        "format",
                        file->format,
                        "bytes",
                        (json_int_t)file->size,
                        "header_bytes",
                        (json_int_t)file->header_bytes,
                        "tensors",
                        (json_int_t)tensors,
                        "tensor_bytes",
                        (json_int_t)bytes);
        if (row == NULL || json_array_append_new(rows, row)) {
            json_decref(rows);
            rows = NULL;
        }
    }
    if (rows == NULL) {
        FAIL_NOMEM(err);
    }
    return rows;
}

static int
add_total(json_t *totals,
          const char *key,
          bool partial,
          int64_t value,
          const char *unit,
          const char *method,
          ts_error *err)
{
    json_t *m = ts_metric_new(partial ? TS_PARTIAL : TS_COMPLETE,
                              ts_int(value),
                              unit,
                              "checkpoint",
                              method);
    if (m == NULL || json_object_set_new(totals, key, m) != 0) {
        return FAIL_NOMEM(err);
    }
    return TS_OK;
}

static json_t *
totals(const ck_set *set, ts_error *err)
{
    int64_t elements = 0, tensor_bytes = 0, stored = 0, file_bytes = 0;
    bool unknown_bytes = false;
    json_t *t = json_object();
    const char *m = set->method;
    if (t == NULL) {
        FAIL_NOMEM(err);
        return NULL;
    }
    for (size_t i = 0; i < set->ntensors; i++) {
        const ck_tensor *x = &set->tensors[i];
        if (!ts_add(elements, x->elements, &elements)
            || (x->bytes >= 0
                && !ts_add(tensor_bytes, x->bytes, &tensor_bytes))) {
            goto overflow;
        }
        unknown_bytes = unknown_bytes || x->bytes < 0;
        if (x->storage < 0 && x->bytes >= 0
            && !ts_add(stored, x->bytes, &stored)) {
            goto overflow;
        }
    }
    for (size_t s = 0; s < set->nstorages; s++) {
        if (set->storages[s].bytes < 0) {
            unknown_bytes = true;
        }
        else if (!ts_add(stored, set->storages[s].bytes, &stored)) {
            goto overflow;
        }
    }
    for (size_t f = 0; f < set->nfiles; f++) {
        if (!ts_add(file_bytes, (int64_t)set->files[f].size, &file_bytes)) {
            goto overflow;
        }
    }
    if (add_total(t,
                  "tensors",
                  set->incomplete,
                  (int64_t)set->ntensors,
                  "tensors",
                  m,
                  err)
            != TS_OK
        || add_total(
               t, "elements", set->incomplete, elements, "elements", m, err)
               != TS_OK
        || add_total(t,
                     "tensor_bytes",
                     set->incomplete || unknown_bytes,
                     tensor_bytes,
                     "bytes",
                     m,
                     err)
               != TS_OK
        || add_total(t,
                     "stored_bytes",
                     set->incomplete || unknown_bytes,
                     stored,
                     "bytes",
                     m,
                     err)
               != TS_OK
        || add_total(t, "file_bytes", false, file_bytes, "bytes", m, err)
               != TS_OK) {
        json_decref(t);
        return NULL;
    }
    return t;
overflow:
    ts_error_set(err, TS_EOVERFLOW, "a checkpoint total overflows 64 bits");
    json_decref(t);
    return NULL;
}

/* Sets report[key] = value (stolen); false with err set when value is
 * NULL (its builder set err) or the set fails. */
static bool
put(json_t *report, const char *key, json_t *value, ts_error *err)
{
    if (value == NULL) {
        return false;
    }
    if (json_object_set_new(report, key, value) != 0) {
        FAIL_NOMEM(err);
        return false;
    }
    return true;
}

static json_t *
tensor_rows(const ck_set *set, ts_error *err)
{
    json_t *tensors = json_array();
    for (size_t i = 0; tensors != NULL && i < set->ntensors; i++) {
        if (json_array_append_new(tensors,
                                  tensor_row(set, &set->tensors[i]))) {
            json_decref(tensors);
            tensors = NULL;
        }
    }
    if (tensors == NULL) {
        FAIL_NOMEM(err);
    }
    return tensors;
}

static json_t *
copy_of(json_t *value, ts_error *err)
{
    json_t *copy = json_deep_copy(value);
    if (copy == NULL) {
        FAIL_NOMEM(err);
    }
    return copy;
}

json_t *
ck_report(const ck_set *set, ts_error *err)
{
    json_t *report = json_pack("{s:i, s:s, s:s}",
                               "schema_version",
                               1,
                               "report_type",
                               "checkpoint",
                               "format",
                               set->format);
    if (report == NULL) {
        FAIL_NOMEM(err);
        return NULL;
    }
    if (!put(report, "files", file_rows(set, err), err)
        || !put(report, "metadata", copy_of(set->metadata, err), err)
        || !put(report, "tensors", tensor_rows(set, err), err)
        || storage_rows(set, report, err) != TS_OK
        || !put(report, "modules", module_tree(set, err), err)
        || !put(report, "dtypes", dtype_rows(set, err), err)
        || (json_array_size(set->globals) > 0
            && !put(report, "globals", copy_of(set->globals, err), err))
        || !put(report, "totals", totals(set, err), err)
        || !put(report, "diagnostics", copy_of(set->diagnostics, err), err)) {
        json_decref(report);
        return NULL;
    }
    return report;
}
