/* Metadata of Python values (contract 1.1): shapes, dtypes, devices and
 * container structure, never values, file paths or reprs. */
#include <string.h>

#include "fail.h"
#include "describe.h"

#define DESCRIBE_MAX_DEPTH 64
/* Values described per top-level value (an argument, an output): a
 * container that holds the same child twice at every level would take
 * 2^depth steps otherwise. Beyond it, values are described by type only. */
#define DESCRIBE_MAX_NODES 10000

const tsx_dtype *
tsx_dtype_info(tsx_state *st, PyObject *dtype)
{
    tsx_dtype *d;
    PyObject *flag;
    for (int i = 0; i < st->ndtypes; i++) {
        if (st->dtypes[i].dtype == dtype) {
            return &st->dtypes[i];
        }
    }
    if (st->ndtypes == TSX_MAX_DTYPES) {
        tsx_fail(PyExc_RuntimeError, "too many distinct dtypes");
        return NULL;
    }
    d = &st->dtypes[st->ndtypes];
    d->name = PyObject_Str(dtype);
    if (d->name == NULL) {
        return NULL;
    }
    d->cls = TS_DTYPE_OTHER;
    flag = PyObject_GetAttr(dtype, st->s_is_complex);
    if (flag == NULL) {
        goto error;
    }
    if (flag == Py_True) {
        d->cls = TS_DTYPE_COMPLEX;
    }
    Py_DECREF(flag);
    flag = PyObject_GetAttr(dtype, st->s_is_floating_point);
    if (flag == NULL) {
        goto error;
    }
    if (flag == Py_True) {
        d->cls = TS_DTYPE_FLOAT;
    }
    Py_DECREF(flag);
    if (d->cls == TS_DTYPE_OTHER) {
        const char *name = PyUnicode_AsUTF8(d->name);
        if (name == NULL) {
            goto error;
        }
        if (strcmp(name, "torch.bool") == 0) {
            d->cls = TS_DTYPE_BOOL;
        }
        else if (strstr(name, "int") != NULL && strstr(name, "torch.q") == NULL
                 && strstr(name, "bits") == NULL) {
            d->cls = TS_DTYPE_INT;
        }
    }
    flag = PyObject_GetAttr(dtype, st->s_itemsize);
    if (flag == NULL) {
        goto error;
    }
    d->itemsize = PyLong_AsLongLong(flag);
    Py_DECREF(flag);
    if (d->itemsize == -1 && PyErr_Occurred()) {
        goto error;
    }
    d->json_name = json_string(PyUnicode_AsUTF8(d->name));
    if (d->json_name == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    d->dtype = Py_NewRef(dtype);
    st->ndtypes++;
    return d;
error:
    Py_CLEAR(d->name);
    return NULL;
}

int
tsx_is_tensor(tsx_state *st, PyObject *obj)
{
    if (Py_TYPE(obj) == (PyTypeObject *)st->tensor_type) {
        return 1;
    }
    return PyObject_TypeCheck(obj, (PyTypeObject *)st->tensor_type);
}

PyObject *
tsx_number_index(tsx_state *st, PyObject *value)
{
    if (strcmp(Py_TYPE(value)->tp_name, "SymInt") == 0) {
        /* A SymInt's __index__ adds a guard: it would specialize the
         * graph being traced. Its hint (the example value) is read
         * instead; none, and it has no concrete value. */
        PyObject *node = tsx_getattr(st, value, "node");
        PyObject *hint = node ? tsx_getattr(st, node, "hint") : NULL;
        Py_XDECREF(node);
        if (hint != NULL && !PyLong_CheckExact(hint)) {
            Py_CLEAR(hint);
            tsx_fail(PyExc_TypeError, "a SymInt without a hint");
        }
        return hint;
    }
    return PyNumber_Index(value);
}

/* Reads one dimension; -1 with an exception; 0 when symbolic (no concrete
 * value), 1 when *out is set. */
static int
read_dim(tsx_state *st, PyObject *item, int64_t *out)
{
    long long v;
    if (PyLong_Check(item)) {
        v = PyLong_AsLongLong(item);
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        *out = v;
        return 1;
    }
    /* SymInt: concrete when it has a hint. */
    PyObject *as_int = tsx_number_index(st, item);
    if (as_int == NULL) {
        PyErr_Clear();
        return 0;
    }
    v = PyLong_AsLongLong(as_int);
    Py_DECREF(as_int);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *out = v;
    return 1;
}

/* tensor.shape, or NULL with *nested set when the tensor is a nested tensor
 * (strided nested tensors raise on .shape; jagged ones are a subclass whose
 * shape holds a symbolic dimension). Plain tensors and parameters are asked
 * for their shape first: is_nested is read only when that fails, which
 * spares one attribute read per tensor. NULL with *nested false: error. */
static PyObject *
shape_or_nested(tsx_state *st, PyObject *t, bool *nested)
{
    PyObject *size, *flag, *exc;
    PyTypeObject *tp = Py_TYPE(t);
    *nested = false;
    if (tp != (PyTypeObject *)st->tensor_type
        && tp != (PyTypeObject *)st->parameter_type) {
        flag = PyObject_GetAttr(t, st->s_is_nested);
        if (flag == NULL) {
            return NULL;
        }
        *nested = flag == Py_True;
        Py_DECREF(flag);
        return *nested ? NULL : PyObject_GetAttr(t, st->s_shape);
    }
    size = PyObject_GetAttr(t, st->s_shape);
    if (size != NULL || !PyErr_ExceptionMatches(PyExc_RuntimeError)) {
        return size;
    }
    exc = tsx_fetch();
    flag = PyObject_GetAttr(t, st->s_is_nested);
    *nested = flag == Py_True;
    if (flag != NULL && !*nested) {
        tsx_restore(exc); /* not nested: the shape's own error */
        exc = NULL;
    }
    Py_XDECREF(exc);
    Py_XDECREF(flag);
    return NULL;
}

int
tsx_tensor_shape(tsx_state *st, PyObject *tensor, ts_shape *shape)
{
    PyObject *size = NULL, *dtype = NULL, *flag = NULL;
    const tsx_dtype *info;
    bool nested;
    Py_ssize_t n;
    int rc = -1;

    shape->ndim = 0;
    shape->dense = true;
    shape->dtype = TS_DTYPE_OTHER;
    shape->itemsize = 0;
    size = shape_or_nested(st, tensor, &nested);
    if (nested) {
        shape->dense = false;
        shape->ndim = -1;
        return 0;
    }
    if (size == NULL) {
        return -1;
    }
    if (!PyTuple_Check(size)) {
        tsx_fail(PyExc_TypeError, "tensor.shape is not a tuple");
        goto done;
    }
    flag = PyObject_GetAttr(tensor, st->s_layout);
    if (flag == NULL) {
        goto done;
    }
    shape->dense = flag == st->strided;
    dtype = PyObject_GetAttr(tensor, st->s_dtype);
    if (dtype == NULL || (info = tsx_dtype_info(st, dtype)) == NULL) {
        goto done;
    }
    shape->dtype = info->cls;
    shape->itemsize = (int)info->itemsize;
    n = PyTuple_GET_SIZE(size);
    if (n > TS_MAX_DIMS) {
        shape->ndim = -1;
        rc = 0;
        goto done;
    }
    shape->ndim = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        int got = read_dim(st, PyTuple_GET_ITEM(size, i), &shape->dims[i]);
        if (got < 0) {
            goto done;
        }
        if (got == 0) {
            shape->ndim = -1;
            break;
        }
    }
    rc = 0;
done:
    Py_XDECREF(size);
    Py_XDECREF(dtype);
    Py_XDECREF(flag);
    return rc;
}

/* Models describe the same few tensor kinds over and over (a layer's output
 * is the next one's input): the record of a CPU tensor with concrete sizes
 * is built once and shared (jansson records are reference counted, and
 * these are never modified after they are built). Direct-mapped on a hash
 * of shape, dtype and requires_grad; a collision replaces the slot. */
#define META_CACHE_SIZE 256

typedef struct meta_slot {
    json_t *meta; /* NULL: empty */
    json_t *call; /* {"args": [meta], "kwargs": {}}, or NULL until asked */
    const tsx_dtype *dtype;
    int ndim;
    bool requires_grad;
    int64_t dims[TS_MAX_DIMS];
} meta_slot;

struct tsx_meta_cache {
    meta_slot slots[META_CACHE_SIZE];
};

void
tsx_meta_cache_free(tsx_state *st)
{
    if (st->meta_cache == NULL) {
        return;
    }
    for (size_t i = 0; i < META_CACHE_SIZE; i++) {
        json_decref(st->meta_cache->slots[i].meta);
        json_decref(st->meta_cache->slots[i].call);
    }
    PyMem_Free(st->meta_cache);
    st->meta_cache = NULL;
}

static meta_slot *
meta_slot_for(tsx_state *st,
              const ts_shape *shape,
              const tsx_dtype *dtype,
              bool requires_grad)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)dtype;
    if (st->meta_cache == NULL) {
        st->meta_cache = PyMem_Calloc(1, sizeof(struct tsx_meta_cache));
        if (st->meta_cache == NULL) {
            return NULL; /* no cache: the record is built each time */
        }
    }
    h = (h ^ (uint64_t)requires_grad) * 1099511628211ull;
    for (int i = 0; i < shape->ndim; i++) {
        h = (h ^ (uint64_t)shape->dims[i]) * 1099511628211ull;
    }
    return &st->meta_cache->slots[(h ^ (h >> 32)) % META_CACHE_SIZE];
}

static bool
meta_slot_holds(const meta_slot *slot,
                const ts_shape *shape,
                const tsx_dtype *dtype,
                bool requires_grad)
{
    return slot->meta != NULL && slot->dtype == dtype
           && slot->requires_grad == requires_grad && slot->ndim == shape->ndim
           && memcmp(slot->dims,
                     shape->dims,
                     (size_t)shape->ndim * sizeof(int64_t))
                  == 0;
}

/* What a tensor's record is read from (references owned). */
typedef struct tensor_attrs {
    PyObject *size, *dtype, *device, *devstr, *rg;
    const tsx_dtype *info;
    bool nested;
} tensor_attrs;

static void
tensor_attrs_clear(tensor_attrs *ta)
{
    Py_XDECREF(ta->size);
    Py_XDECREF(ta->dtype);
    Py_XDECREF(ta->device);
    Py_XDECREF(ta->devstr);
    Py_XDECREF(ta->rg);
}

/* Shape (none for a nested tensor), dtype, device text and requires_grad:
 * 0, or -1 with an exception. */
static int
read_tensor_attrs(tsx_state *st, PyObject *t, tensor_attrs *ta)
{
    memset(ta, 0, sizeof *ta);
    ta->size = shape_or_nested(st, t, &ta->nested);
    ta->dtype =
        (ta->size || ta->nested) ? PyObject_GetAttr(t, st->s_dtype) : NULL;
    /* CPU tensors are the common case: is_cpu spares building and printing
     * a torch.device. */
    ta->device = ta->dtype ? PyObject_GetAttr(t, st->s_is_cpu) : NULL;
    if (ta->device == Py_True) {
        ta->devstr = Py_NewRef(st->s_cpu);
    }
    else if (ta->device != NULL) {
        Py_SETREF(ta->device, PyObject_GetAttr(t, st->s_device));
        ta->devstr = ta->device ? PyObject_Str(ta->device) : NULL;
    }
    ta->rg = ta->devstr ? PyObject_GetAttr(t, st->s_requires_grad) : NULL;
    ta->info = ta->rg ? tsx_dtype_info(st, ta->dtype) : NULL;
    return ta->info != NULL ? 0 : -1;
}

static json_t *
nested_meta(const tensor_attrs *ta)
{
    json_t *meta = json_pack("{s:s, s:s, s:s, s:b}",
                             "kind",
                             "nested_tensor",
                             "dtype",
                             PyUnicode_AsUTF8(ta->info->name),
                             "device",
                             PyUnicode_AsUTF8(ta->devstr),
                             "requires_grad",
                             ta->rg == Py_True);
    if (meta == NULL) {
        PyErr_NoMemory();
    }
    return meta;
}

/* The sizes into *shape: 1 when all are concrete, 0 when one is symbolic
 * (or there are more than TS_MAX_DIMS), -1 with an exception. */
static int
read_shape(tsx_state *st, const tensor_attrs *ta, ts_shape *shape)
{
    Py_ssize_t ndim = PyTuple_GET_SIZE(ta->size);
    bool concrete = ndim <= TS_MAX_DIMS;
    shape->ndim = (int)ndim;
    shape->dtype = ta->info->cls;
    shape->itemsize = (int)ta->info->itemsize;
    shape->dense = true;
    for (Py_ssize_t i = 0; concrete && i < ndim; i++) {
        int got = read_dim(st, PyTuple_GET_ITEM(ta->size, i), &shape->dims[i]);
        if (got < 0) {
            return -1;
        }
        concrete = got == 1;
    }
    return concrete;
}

/* The first tensor of a call, for the formulas: its shape and layout. */
static int
keep_first(tsx_state *st,
           PyObject *t,
           const ts_shape *shape,
           bool concrete,
           ts_shape *first,
           bool *found)
{
    PyObject *layout = PyObject_GetAttr(t, st->s_layout);
    if (layout == NULL) {
        return -1;
    }
    *first = *shape;
    first->dense = layout == st->strided;
    Py_DECREF(layout);
    if (!concrete) {
        first->ndim = -1;
    }
    *found = true;
    return 0;
}

/* The sizes as JSON: numbers, or a symbolic size's expression. */
static json_t *
dims_json(tsx_state *st, PyObject *size, const ts_shape *shape, bool concrete)
{
    Py_ssize_t ndim = PyTuple_GET_SIZE(size);
    json_t *dims = json_array();
    if (dims == NULL) {
        return (json_t *)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < ndim; i++) {
        PyObject *item = PyTuple_GET_ITEM(size, i);
        int64_t v = 0;
        int got = concrete ? 1 : read_dim(st, item, &v);
        json_t *j;
        if (got < 0) {
            json_decref(dims);
            return NULL;
        }
        if (got) {
            j = json_integer(concrete ? shape->dims[i] : v);
        }
        else {
            /* A symbolic size has no number: keep its expression. */
            PyObject *text = PyObject_Str(item);
            j = text ? json_string(PyUnicode_AsUTF8(text)) : NULL;
            Py_XDECREF(text);
        }
        if (j == NULL || json_array_append_new(dims, j)) {
            if (!PyErr_Occurred()) {
                PyErr_NoMemory();
            }
            json_decref(dims);
            return NULL;
        }
    }
    return dims;
}

/* The tensor record (steals `dims`). Built member by member with the
 * shared "tensor"/dtype/"cpu" strings instead of json_pack, which parses
 * its format and copies every string. */
static json_t *
tensor_meta(tsx_state *st, const tensor_attrs *ta, json_t *dims)
{
    json_t *meta = json_object();
    if (meta != NULL
        && (json_object_set_nocheck(meta, "kind", st->j_tensor)
            || json_object_set_new_nocheck(meta, "shape", dims)
            || json_object_set_nocheck(meta, "dtype", ta->info->json_name)
            || json_object_set_new_nocheck(
                meta,
                "device",
                ta->devstr == st->s_cpu
                    ? json_incref(st->j_cpu)
                    : json_string(PyUnicode_AsUTF8(ta->devstr)))
            || json_object_set_new_nocheck(
                meta, "requires_grad", json_boolean(ta->rg == Py_True)))) {
        json_decref(meta);
        meta = NULL;
    }
    else if (meta == NULL) {
        json_decref(dims);
    }
    if (meta == NULL) {
        PyErr_NoMemory();
    }
    return meta;
}

static void
meta_slot_store(meta_slot *slot,
                json_t *meta,
                const tensor_attrs *ta,
                const ts_shape *shape)
{
    json_decref(slot->meta);
    json_decref(slot->call);
    slot->call = NULL;
    slot->meta = json_incref(meta);
    slot->dtype = ta->info;
    slot->requires_grad = ta->rg == Py_True;
    slot->ndim = shape->ndim;
    memcpy(slot->dims, shape->dims, (size_t)shape->ndim * sizeof(int64_t));
}

/* The record of a tensor; *cached (when not NULL) tells the cache slot that
 * holds it, or NULL. */
static json_t *
describe_tensor(tsx_state *st,
                PyObject *t,
                ts_shape *first,
                bool *found,
                meta_slot **cached)
{
    meta_slot *slot = NULL;
    json_t *meta = NULL, *dims;
    tensor_attrs ta;
    ts_shape shape;
    int concrete;
    if (cached != NULL) {
        *cached = NULL;
    }
    if (read_tensor_attrs(st, t, &ta) < 0) {
        goto done;
    }
    if (ta.nested) {
        meta = nested_meta(&ta);
        goto done;
    }
    if (!PyTuple_Check(ta.size)) {
        tsx_fail(PyExc_TypeError, "tensor.shape is not a tuple");
        goto done;
    }
    if ((concrete = read_shape(st, &ta, &shape)) < 0
        || (first != NULL && !*found
            && keep_first(st, t, &shape, concrete, first, found) < 0)) {
        goto done;
    }
    if (concrete && ta.devstr == st->s_cpu) {
        slot = meta_slot_for(st, &shape, ta.info, ta.rg == Py_True);
        if (slot != NULL
            && meta_slot_holds(slot, &shape, ta.info, ta.rg == Py_True)) {
            meta = json_incref(slot->meta);
            if (cached != NULL) {
                *cached = slot;
            }
            goto done;
        }
    }
    dims = dims_json(st, ta.size, &shape, concrete);
    meta = dims != NULL ? tensor_meta(st, &ta, dims) : NULL;
    if (meta != NULL && slot != NULL) {
        meta_slot_store(slot, meta, &ta, &shape);
        if (cached != NULL) {
            *cached = slot;
        }
    }
done:
    tensor_attrs_clear(&ta);
    return meta;
}

static json_t *describe(tsx_state *st,
                        PyObject *value,
                        ts_shape *first,
                        bool *found,
                        int depth,
                        long *budget);

static json_t *
describe_items(tsx_state *st,
               PyObject *seq,
               const char *kind,
               ts_shape *first,
               bool *found,
               int depth,
               long *budget)
{
    json_t *items = json_array();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (items == NULL) {
        return (json_t *)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        json_t *m = describe(st,
                             PySequence_Fast_GET_ITEM(seq, i),
                             first,
                             found,
                             depth + 1,
                             budget);
        if (m == NULL || json_array_append_new(items, m)) {
            if (!PyErr_Occurred()) {
                PyErr_NoMemory();
            }
            json_decref(items);
            return NULL;
        }
    }
    json_t *meta = json_pack("{s:s, s:o}", "kind", kind, "items", items);
    if (meta == NULL) {
        PyErr_NoMemory();
    }
    return meta;
}

static json_t *
type_meta(const char *kind, PyObject *value, bool qualified)
{
    PyObject *name = qualified ? PyType_GetQualName(Py_TYPE(value))
                               : PyType_GetName(Py_TYPE(value));
    const char *text = name ? PyUnicode_AsUTF8(name) : NULL;
    json_t *meta = NULL;
    /* a __qualname__ is any str: one that UTF-8 cannot encode raises */
    if (text != NULL) {
        meta = json_pack("{s:s, s:s}", "kind", kind, "type", text);
        if (meta == NULL) {
            PyErr_NoMemory();
        }
    }
    Py_XDECREF(name);
    return meta;
}

static json_t *
describe_mapping(tsx_state *st,
                 PyObject *value,
                 ts_shape *first,
                 bool *found,
                 int depth,
                 long *budget)
{
    json_t *meta = NULL, *items = NULL;
    PyObject *pairs = NULL, *seq = NULL;
    Py_ssize_t n;
    /* A dict's items are a fresh list; another mapping's items() may hand
     * back a list that code run while describing a value (another
     * mapping's items(), a tensor subclass) changes: it is copied. */
    pairs = PyMapping_Items(value);
    seq = pairs == NULL              ? NULL
          : PyDict_CheckExact(value) ? Py_NewRef(pairs)
                                     : PySequence_Tuple(pairs);
    items = seq ? json_array() : NULL;
    if (items == NULL) {
        if (seq != NULL) {
            PyErr_NoMemory();
        }
        goto done;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *key, *item, *key_type;
        json_t *entry, *vm;
        int bad;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            tsx_fail(PyExc_TypeError, "mapping items are not pairs");
            goto done;
        }
        key = PyTuple_GET_ITEM(pair, 0);
        item = PyTuple_GET_ITEM(pair, 1);
        key_type = PyType_GetName(Py_TYPE(key));
        if (key_type == NULL) {
            goto done;
        }
        entry = json_object();
        bad = entry == NULL;
        /* Only keys that cannot carry private text are kept: ints and
         * identifiers (a file path or a sentence is dropped). */
        if (!bad && PyLong_Check(key)) {
            long long k = PyLong_AsLongLong(key);
            if (k == -1 && PyErr_Occurred()) {
                PyErr_Clear();
            }
            else {
                bad = json_object_set_new(
                    entry,
                    "key",
                    PyBool_Check(key) ? json_boolean(k) : json_integer(k));
            }
        }
        else if (!bad && PyUnicode_Check(key)
                 && PyUnicode_IsIdentifier(key) == 1) {
            bad = json_object_set_new(
                entry, "key", json_string(PyUnicode_AsUTF8(key)));
        }
        if (!bad) {
            bad = json_object_set_new(
                entry, "key_type", json_string(PyUnicode_AsUTF8(key_type)));
        }
        Py_DECREF(key_type);
        vm = bad ? NULL : describe(st, item, first, found, depth + 1, budget);
        if (vm == NULL) {
            /* a failed jansson allocation sets no exception */
            json_decref(entry);
            if (!PyErr_Occurred()) {
                PyErr_NoMemory();
            }
            goto done;
        }
        /* set_new takes vm, append_new entry, also when they fail */
        if (json_object_set_new(entry, "value", vm)) {
            json_decref(entry);
            PyErr_NoMemory();
            goto done;
        }
        if (json_array_append_new(items, entry)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    PyObject *tname = PyType_GetName(Py_TYPE(value));
    if (tname == NULL) {
        goto done;
    }
    meta = json_pack("{s:s, s:s, s:O}",
                     "kind",
                     "mapping",
                     "type",
                     PyUnicode_AsUTF8(tname),
                     "items",
                     items);
    Py_DECREF(tname);
    if (meta == NULL) {
        PyErr_NoMemory();
    }
done:
    json_decref(items);
    Py_XDECREF(seq);
    Py_XDECREF(pairs);
    return meta;
}

static json_t *
describe(tsx_state *st,
         PyObject *value,
         ts_shape *first,
         bool *found,
         int depth,
         long *budget)
{
    int is;
    if (--*budget < 0 || depth > DESCRIBE_MAX_DEPTH) {
        return type_meta("object", value, true);
    }
    is = tsx_is_tensor(st, value);
    if (is) {
        return describe_tensor(st, value, first, found, NULL);
    }
    if (value == Py_None) {
        json_t *m = json_pack("{s:s}", "kind", "none");
        return m ? m : (json_t *)PyErr_NoMemory();
    }
    if (PyTuple_Check(value) || PyList_Check(value)) {
        /* A list is described from a snapshot: describing its items can
         * run Python code (a mapping's items(), a tensor subclass's
         * __torch_function__) that changes it. */
        PyObject *seq =
            PyList_Check(value) ? PyList_AsTuple(value) : Py_NewRef(value);
        json_t *m;
        if (seq == NULL) {
            return NULL;
        }
        m = describe_items(st,
                           seq,
                           PyTuple_Check(value) ? "tuple" : "list",
                           first,
                           found,
                           depth,
                           budget);
        Py_DECREF(seq);
        return m;
    }
    if (PyDict_Check(value)) {
        return describe_mapping(st, value, first, found, depth, budget);
    }
    if (PyLong_Check(value) || PyFloat_Check(value) || PyComplex_Check(value)
        || PyUnicode_Check(value) || PyBytes_Check(value)) {
        return type_meta("scalar", value, false);
    }
    is = PyObject_IsInstance(value, st->mapping_abc);
    if (is < 0) {
        return NULL;
    }
    if (is) {
        return describe_mapping(st, value, first, found, depth, budget);
    }
    return type_meta("object", value, true);
}

json_t *
tsx_describe(tsx_state *st, PyObject *value, ts_shape *first, bool *found)
{
    long budget = DESCRIBE_MAX_NODES;
    return describe(st, value, first, found, 0, &budget);
}

/* Appends the keyword arguments with identifier names to `kw` (only those
 * are kept, as for a mapping's keys: f(**{"/home/me/notes.txt": x}) is
 * legal Python). 0, or -1 with an exception. */
static int
describe_kwargs(
    tsx_state *st, PyObject *kwargs, json_t *kw, ts_shape *first, bool *found)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
        json_t *m;
        int ident, bad;
        if (!PyUnicode_Check(key)) {
            tsx_fail(PyExc_TypeError, "keyword names must be strings");
            return -1;
        }
        ident = PyUnicode_IsIdentifier(key);
        if (ident < 0) {
            return -1;
        }
        if (ident == 0) {
            continue;
        }
        /* describing can run Python code that changes the dict */
        Py_INCREF(key);
        Py_INCREF(value);
        long budget = DESCRIBE_MAX_NODES;
        m = describe(st, value, first, found, 1, &budget);
        bad = m == NULL || json_object_set_new(kw, PyUnicode_AsUTF8(key), m);
        Py_DECREF(key);
        Py_DECREF(value);
        if (bad) {
            if (!PyErr_Occurred()) {
                PyErr_NoMemory();
            }
            return -1;
        }
    }
    return 0;
}

/* The common call, one tensor and no keywords: its record, whose whole
 * call record is shared too, next to the tensor's (*slot). *only is NULL
 * when the call is not of that form. 0, or -1 with an exception. */
static int
describe_single_tensor(tsx_state *st,
                       PyObject *args,
                       PyObject *kwargs,
                       ts_shape *first,
                       bool *found,
                       json_t **only,
                       meta_slot **slot)
{
    int is;
    *only = NULL;
    *slot = NULL;
    if (args == NULL || PyTuple_GET_SIZE(args) != 1
        || (kwargs != NULL
            && (!PyDict_Check(kwargs) || PyDict_GET_SIZE(kwargs) != 0))) {
        return 0;
    }
    is = tsx_is_tensor(st, PyTuple_GET_ITEM(args, 0));
    if (is <= 0) {
        return is;
    }
    *only = describe_tensor(st, PyTuple_GET_ITEM(args, 0), first, found, slot);
    return *only != NULL ? 0 : -1;
}

/* The positional arguments' records (or the single tensor's, `only`,
 * stolen) appended to `arr`. */
static int
describe_args(tsx_state *st,
              PyObject *args,
              json_t *only,
              json_t *arr,
              ts_shape *first,
              bool *found)
{
    if (only != NULL) {
        return json_array_append_new(arr, only) ? -1 : 0;
    }
    for (Py_ssize_t i = 0; args != NULL && i < PyTuple_GET_SIZE(args); i++) {
        long budget = DESCRIBE_MAX_NODES;
        json_t *m =
            describe(st, PyTuple_GET_ITEM(args, i), first, found, 1, &budget);
        if (m == NULL || json_array_append_new(arr, m)) {
            return -1;
        }
    }
    return 0;
}

json_t *
tsx_describe_call(tsx_state *st,
                  PyObject *args,
                  PyObject *kwargs,
                  ts_shape *first,
                  bool *found)
{
    json_t *arr, *kw, *meta, *only;
    meta_slot *slot;
    if (describe_single_tensor(st, args, kwargs, first, found, &only, &slot)
        < 0) {
        return NULL;
    }
    if (slot != NULL && slot->call != NULL) {
        json_decref(only);
        return json_incref(slot->call);
    }
    arr = json_array();
    kw = json_object();
    if (arr == NULL || kw == NULL) {
        json_decref(only);
        PyErr_NoMemory();
        goto error;
    }
    if (describe_args(st, args, only, arr, first, found) < 0
        || (kwargs != NULL && PyDict_Check(kwargs)
            && describe_kwargs(st, kwargs, kw, first, found) < 0)) {
        goto error_set;
    }
    meta = json_object();
    if (meta == NULL) {
        goto error_set;
    }
    /* both calls take their value's reference, also when they fail */
    int bad = json_object_set_new_nocheck(meta, "args", arr);
    bad |= json_object_set_new_nocheck(meta, "kwargs", kw);
    if (bad) {
        json_decref(meta);
        PyErr_NoMemory();
        return NULL;
    }
    if (slot != NULL) {
        slot->call = json_incref(meta);
    }
    return meta;
error_set:
    if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
error:
    json_decref(arr);
    json_decref(kw);
    return NULL;
}
