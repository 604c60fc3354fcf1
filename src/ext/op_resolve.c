/* Operator identity and call description (op_resolve.h): the process-wide
 * cache of resolved OpOverloads (names, schema argument names,
 * decomposability, the table entry; resolved once per overload object and
 * kept for the life of the module), and the reading of an aten call's
 * arguments and outputs into the plain ts_op_call the formulas take. */
#include "describe.h"
#include "fail.h"
#include "op_resolve.h"

#include <math.h>
#include <stddef.h>

/* Overloads that only query metadata; FlopCounterMode declines them too
 * (they reach a mode only for tensors with Python-level sizes, fake tensors
 * or forward-mode AD's dual tensors). */
static const char *const skipped_overloads[] = {
    "aten.dim.default",
    "aten.is_contiguous.default",
    "aten.is_contiguous.memory_format",
    "aten.is_non_overlapping_and_dense.default",
    "aten.is_strides_like_format.default",
    "aten.numel.default",
    "aten.size.default",
    "aten.storage_offset.default",
    "aten.stride.default",
    "aten.sym_is_contiguous.default",
    "aten.sym_numel.default",
    "aten.sym_size.default",
    "aten.sym_storage_offset.default",
    "aten.sym_stride.default",
    "prim.layout.default",
};

/* Overloads that answer metadata questions but must run (fake tensors and
 * forward-mode AD's dual tensors send them to the mode): unless the caller
 * maps their packet, they run unrecorded, neither counted nor listed as
 * ignored. */
static const char *const silent_overloads[] = {
    "aten._has_same_storage_numel.default",
    "aten.is_same_size.default",
    "prim.device.default",
};

#define N_OF(list) (sizeof(list) / sizeof(list)[0])

static bool
listed(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(name, list[i]) == 0) {
            return true;
        }
    }
    return false;
}

static size_t
slot_hash(PyObject *p)
{
    uintptr_t x = (uintptr_t)p >> 4;
    x ^= x >> 15;
    x *= 0x2C1B3C6D;
    return (size_t)(x ^ (x >> 12));
}

void
tsx_op_slot_clear(op_slot *s)
{
    Py_CLEAR(s->func);
    Py_CLEAR(s->op);
    Py_CLEAR(s->packet);
    Py_CLEAR(s->names);
    Py_CLEAR(s->overload);
}

static void
slot_free(op_slot *s)
{
    tsx_op_slot_clear(s);
    PyMem_Free(s->name);
    s->name = NULL;
}

void
tsx_op_slot_copy(op_slot *dst, const op_slot *src)
{
    *dst = *src;
    Py_XINCREF(dst->func);
    Py_XINCREF(dst->op);
    Py_XINCREF(dst->packet);
    Py_XINCREF(dst->names);
    Py_XINCREF(dst->overload);
}

void
tsx_op_cache_free(tsx_state *st)
{
    struct tsx_op_cache *cache = st->op_cache;
    if (cache == NULL) {
        return;
    }
    for (size_t i = 0; i < cache->cap; i++) {
        slot_free(&cache->slots[i]);
    }
    PyMem_Free(cache->slots);
    PyMem_Free(cache);
    st->op_cache = NULL;
}

int
tsx_op_cache_traverse(tsx_state *st, visitproc visit, void *arg)
{
    struct tsx_op_cache *cache = st->op_cache;
    for (size_t i = 0; cache != NULL && i < cache->cap; i++) {
        Py_VISIT(cache->slots[i].func);
        Py_VISIT(cache->slots[i].op);
        Py_VISIT(cache->slots[i].packet);
        Py_VISIT(cache->slots[i].names);
        Py_VISIT(cache->slots[i].overload);
    }
    return 0;
}

static int
cache_grow(struct tsx_op_cache *c)
{
    size_t cap = c->cap ? c->cap * 2 : 256;
    op_slot *slots = PyMem_Calloc(cap, sizeof(op_slot));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < c->cap; i++) {
        if (c->slots[i].func != NULL) {
            size_t j = slot_hash(c->slots[i].func) & (cap - 1);
            while (slots[j].func != NULL) {
                j = (j + 1) & (cap - 1);
            }
            slots[j] = c->slots[i];
        }
    }
    PyMem_Free(c->slots);
    c->slots = slots;
    c->cap = cap;
    return 0;
}

/* Whether an aten overload that has no formula has a
 * CompositeImplicitAutograd kernel: as FlopCounterMode does, such an
 * operator is decomposed and its parts are counted. */
static int
read_decomposable(tsx_state *st, PyObject *func, op_slot *s)
{
    PyObject *opname = PyObject_CallMethod(func, "name", NULL);
    PyObject *has =
        opname ? PyObject_CallFunction(
            st->has_kernel, "Os", opname, "CompositeImplicitAutograd")
               : NULL;
    Py_XDECREF(opname);
    if (has == NULL) {
        return -1;
    }
    s->decomposable = has == Py_True;
    Py_DECREF(has);
    return 0;
}

/* The schema's argument names (keyword arguments find their position). */
static int
read_argument_names(tsx_state *st, PyObject *func, op_slot *s)
{
    PyObject *schema = PyObject_GetAttr(func, st->s_schema);
    PyObject *arguments =
        schema ? PyObject_GetAttr(schema, st->s_arguments) : NULL;
    Py_ssize_t n = arguments ? PySequence_Length(arguments) : -1;
    int rc = -1;
    if (n < 0 || (s->names = PyTuple_New(n)) == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PySequence_GetItem(arguments, i);
        PyObject *an = a ? PyObject_GetAttr(a, st->s_name) : NULL;
        Py_XDECREF(a);
        if (an == NULL) {
            goto done;
        }
        PyTuple_SET_ITEM(s->names, i, an);
    }
    rc = 0;
done:
    Py_XDECREF(schema);
    Py_XDECREF(arguments);
    return rc;
}

/* A higher-order operator, named like the packets ("higher_order.cond"):
 * *fname holds the name. */
static int
read_hop(tsx_state *st, PyObject *func, op_slot *s, PyObject **fname)
{
    PyObject *pname = PyObject_CallMethodNoArgs(func, st->s_name);
    *fname = pname ? PyUnicode_FromFormat("higher_order.%S", pname) : NULL;
    Py_XDECREF(pname);
    if (*fname == NULL || PyUnicode_AsUTF8(*fname) == NULL) {
        return -1;
    }
    s->hop = true;
    s->func = Py_NewRef(func);
    return 0;
}

/* An aten overload: its packet, lists, formula entry, kernel and schema.
 * *pname holds the packet name. */
static int
read_overload(tsx_state *st, PyObject *func, op_slot *s, PyObject **pname)
{
    PyObject *fname;
    const char *full;
    s->packet = PyObject_GetAttr(func, st->s_overloadpacket);
    *pname = s->packet ? PyObject_Str(s->packet) : NULL;
    fname = *pname ? PyObject_Str(func) : NULL;
    full = fname && PyUnicode_AsUTF8(*pname) ? PyUnicode_AsUTF8(fname) : NULL;
    if (full == NULL) {
        Py_XDECREF(fname);
        return -1;
    }
    s->func = Py_NewRef(func);
    s->role = ts_attn_role_of(full);
    s->skip = listed(full, skipped_overloads, N_OF(skipped_overloads));
    s->silent = listed(full, silent_overloads, N_OF(silent_overloads));
    Py_DECREF(fname);
    s->entry = ts_op_lookup(PyUnicode_AsUTF8(*pname));
    s->match_code = ts_match_op_code(PyUnicode_AsUTF8(*pname));
    {
        const char *packet = PyUnicode_AsUTF8(*pname);
        size_t len = strlen(packet);
        s->inplace = len > 0 && packet[len - 1] == '_';
    }
    if (!s->skip && !s->silent && read_decomposable(st, func, s) < 0) {
        return -1;
    }
    s->op = PyObject_GetAttr(func, st->s_op);
    s->overload = s->op ? tsx_getattr(st, func, "_overloadname") : NULL;
    if (s->overload != NULL && !PyUnicode_Check(s->overload)) {
        tsx_fail(PyExc_TypeError, "an overload name is not a str");
    }
    if (s->overload == NULL || !PyUnicode_Check(s->overload)) {
        return -1;
    }
    return read_argument_names(st, func, s);
}

/* Resolves an operator overload the first time the process sees it. */
static op_slot *
resolve(tsx_state *st, PyObject *func)
{
    struct tsx_op_cache *cache = st->op_cache;
    op_slot s;
    PyObject *name_obj = NULL;
    const char *name;
    size_t j, len;
    int hop;

    memset(&s, 0, sizeof s);
    if (cache == NULL) {
        cache = st->op_cache = PyMem_Calloc(1, sizeof *cache);
        if (cache == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
    }
    if ((cache->size + 1) * 2 > cache->cap && cache_grow(cache) < 0) {
        return NULL;
    }
    hop = PyObject_IsInstance(func, st->hop_type);
    if (hop < 0
        || (hop ? read_hop(st, func, &s, &name_obj)
                : read_overload(st, func, &s, &name_obj))
               < 0) {
        goto error;
    }
    name = PyUnicode_AsUTF8(name_obj);
    len = strlen(name) + 1;
    s.name = PyMem_Malloc(len);
    if (s.name == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    memcpy(s.name, name, len);
    s.index = (int)cache->size;
    Py_DECREF(name_obj);
    j = slot_hash(func) & (cache->cap - 1);
    while (cache->slots[j].func != NULL) {
        j = (j + 1) & (cache->cap - 1);
    }
    cache->slots[j] = s;
    cache->size++;
    return &cache->slots[j];
error:
    Py_XDECREF(name_obj);
    slot_free(&s);
    return NULL;
}

op_slot *
tsx_op_lookup(tsx_state *st, PyObject *func)
{
    struct tsx_op_cache *cache = st->op_cache;
    if (cache != NULL && cache->cap) {
        size_t j = slot_hash(func) & (cache->cap - 1);
        while (cache->slots[j].func != NULL) {
            if (cache->slots[j].func == func) {
                return &cache->slots[j];
            }
            j = (j + 1) & (cache->cap - 1);
        }
    }
    return resolve(st, func);
}

/* Element count of a tensor that is not the first of a list (only its
 * count matters); -1 when it has none. */
static int64_t
other_tensor_numel(tsx_state *st, PyObject *t)
{
    int64_t numel = -1;
    PyObject *nobj = PyObject_CallMethodNoArgs(t, st->s_numel);
    if (nobj == NULL) {
        PyErr_Clear();
        return -1;
    }
    Py_SETREF(nobj, tsx_number_index(st, nobj));
    numel = nobj ? PyLong_AsLongLong(nobj) : -1;
    Py_XDECREF(nobj);
    if (numel == -1 && PyErr_Occurred()) {
        PyErr_Clear();
    }
    return numel;
}

/* A list of tensors (None entries skipped): the first described in full
 * (dtype, layout); the others of an optimizer's parameter list only need
 * their element count. A list whose total is unknown (a first tensor
 * without a concrete shape, an element count that cannot be read or does
 * not fit) stays a list of tensors, with numel_sum -1: the formulas then
 * refuse it (as they refuse such a tensor) instead of taking it for a
 * non-tensor argument and counting a complete zero. */
static int
classify_tensors(tsx_state *st, PyObject **items, Py_ssize_t n, ts_op_arg *a)
{
    a->kind = TS_ARG_TENSORS;
    a->ntensors = 0;
    a->numel_sum = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        ts_shape shape;
        int64_t numel = -1;
        if (items[i] == Py_None) {
            continue;
        }
        if (a->ntensors++ == 0) {
            if (tsx_tensor_shape(st, items[i], &shape) < 0) {
                return -1;
            }
            a->tensor = shape;
            if (shape.ndim < 0 || !ts_shape_numel(&shape, &numel)) {
                numel = -1;
            }
        }
        else if (a->numel_sum >= 0) {
            numel = other_tensor_numel(st, items[i]);
        }
        if (a->numel_sum >= 0
            && (numel < 0 || !ts_add(a->numel_sum, numel, &a->numel_sum))) {
            a->numel_sum = -1;
        }
    }
    return 0;
}

/* A list of ints (sizes, dims); not ints when an item has no integer. */
static void
classify_ints(tsx_state *st, PyObject **items, Py_ssize_t n, ts_op_arg *a)
{
    a->kind = TS_ARG_INTS;
    a->nints = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = tsx_number_index(st, items[i]);
        long long y = x ? PyLong_AsLongLong(x) : -1;
        Py_XDECREF(x);
        if (y == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            a->kind = TS_ARG_OTHER;
            break;
        }
        a->ints[i] = y;
    }
}

/* A list of lists of tensors (c10d's per-rank Tensor[][] arguments): the
 * tensors of every inner list, as one list. 1 when it is one (a->kind
 * TENSORS), 0 when it is not, -1 with an exception. */
static int
classify_nested(tsx_state *st, PyObject **items, Py_ssize_t n, ts_op_arg *a)
{
    PyObject *flat, *inner;
    int rc;
    if (n == 0 || !(PyList_Check(items[0]) || PyTuple_Check(items[0]))
        || PySequence_Fast_GET_SIZE(items[0]) == 0) {
        return 0;
    }
    inner = PySequence_Fast_GET_ITEM(items[0], 0);
    if (inner == Py_None || !tsx_is_tensor(st, inner)) {
        return 0;
    }
    flat = PyList_New(0);
    for (Py_ssize_t i = 0; flat != NULL && i < n; i++) {
        if (!(PyList_Check(items[i]) || PyTuple_Check(items[i]))) {
            Py_CLEAR(flat);
            return 0;
        }
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(items[i]); j++) {
            if (PyList_Append(flat, PySequence_Fast_GET_ITEM(items[i], j))
                < 0) {
                Py_CLEAR(flat);
                return -1;
            }
        }
    }
    if (flat == NULL) {
        return -1;
    }
    rc = classify_tensors(
        st, PySequence_Fast_ITEMS(flat), PyList_GET_SIZE(flat), a);
    Py_DECREF(flat);
    return rc < 0 ? -1 : 1;
}

/* A list or tuple argument: tensors, ints, or other. */
static int
classify_sequence(tsx_state *st, PyObject *v, ts_op_arg *a)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    PyObject **items = PySequence_Fast_ITEMS(v);
    int nested = classify_nested(st, items, n, a);
    if (nested != 0) {
        return nested < 0 ? -1 : 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (items[i] != Py_None && tsx_is_tensor(st, items[i])) {
            return classify_tensors(st, items, n, a);
        }
    }
    if (n <= TS_MAX_DIMS) {
        classify_ints(st, items, n, a);
    }
    return 0;
}

/* SymInt and friends: a concrete int when they have one. */
static void
classify_int_like(tsx_state *st, PyObject *v, ts_op_arg *a)
{
    PyObject *x = tsx_number_index(st, v);
    if (x != NULL) {
        int overflow;
        a->i = PyLong_AsLongLongAndOverflow(x, &overflow);
        a->kind = overflow ? TS_ARG_OTHER : TS_ARG_INT;
        Py_DECREF(x);
    }
    else {
        PyErr_Clear();
    }
}

/* Fills one formula argument from a Python value. */
static int
classify(tsx_state *st, PyObject *v, ts_op_arg *a)
{
    a->kind = TS_ARG_OTHER;
    if (tsx_is_tensor(st, v)) {
        a->kind = TS_ARG_TENSOR;
        return tsx_tensor_shape(st, v, &a->tensor);
    }
    if (v == Py_None) {
        a->kind = TS_ARG_NONE;
    }
    else if (PyBool_Check(v)) {
        a->kind = TS_ARG_BOOL;
        a->i = v == Py_True;
    }
    else if (PyLong_Check(v)) {
        int overflow;
        a->i = PyLong_AsLongLongAndOverflow(v, &overflow);
        a->kind = overflow ? TS_ARG_OTHER : TS_ARG_INT;
    }
    else if (PyFloat_Check(v)) {
        a->kind = TS_ARG_REAL;
        a->r = PyFloat_AS_DOUBLE(v);
    }
    else if (PyComplex_Check(v)) {
        a->kind = TS_ARG_COMPLEX;
    }
    else if (PyUnicode_Check(v)) {
        a->kind = TS_ARG_STR;
        a->str = PyUnicode_AsUTF8(v);
        if (a->str == NULL) {
            return -1;
        }
    }
    else if (PyList_Check(v) || PyTuple_Check(v)) {
        return classify_sequence(st, v, a);
    }
    else if (PyObject_TypeCheck(v, (PyTypeObject *)st->dtype_type)) {
        const tsx_dtype *info = tsx_dtype_info(st, v);
        if (info == NULL) {
            return -1;
        }
        a->tensor.dtype = info->cls;
    }
    else {
        classify_int_like(st, v, a);
    }
    return 0;
}

int
tsx_op_fill_call(tsx_state *st,
                 const op_slot *s,
                 PyObject *args,
                 PyObject *kwargs,
                 PyObject *out,
                 ts_op_call *call)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    call->nargs = 0;
    call->nouts = 0;
    call->overload = PyUnicode_AsUTF8(s->overload);
    if (call->overload == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < n && i < TS_OP_MAX_ARGS; i++) {
        memset(&call->args[i], 0, sizeof call->args[i]);
        if (classify(st, PyTuple_GET_ITEM(args, i), &call->args[i]) < 0) {
            return -1;
        }
        call->nargs = (int)i + 1;
    }
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        Py_ssize_t nn = PyTuple_GET_SIZE(s->names);
        while (PyDict_Next(kwargs, &pos, &key, &value)) {
            for (Py_ssize_t k = 0; k < nn && k < TS_OP_MAX_ARGS; k++) {
                int eq = PyUnicode_Compare(key, PyTuple_GET_ITEM(s->names, k));
                if (eq == 0) {
                    while (call->nargs <= k) {
                        memset(
                            &call->args[call->nargs], 0, sizeof call->args[0]);
                        call->nargs++;
                    }
                    if (classify(st, value, &call->args[k]) < 0) {
                        return -1;
                    }
                    break;
                }
                if (eq == -1 && PyErr_Occurred()) {
                    return -1;
                }
            }
        }
    }
    if (tsx_is_tensor(st, out)) {
        call->nouts = 1;
        return tsx_tensor_shape(st, out, &call->outs[0]);
    }
    if (PyTuple_Check(out) || PyList_Check(out)) {
        Py_ssize_t m = PySequence_Fast_GET_SIZE(out);
        for (Py_ssize_t i = 0; i < m && i < TS_OP_MAX_OUTS; i++) {
            PyObject *o = PySequence_Fast_GET_ITEM(out, i);
            ts_shape *shape = &call->outs[call->nouts++];
            shape->ndim = -1;
            shape->dense = false;
            shape->dtype = TS_DTYPE_OTHER;
            shape->itemsize = 0;
            if (o != Py_None && tsx_is_tensor(st, o)
                && tsx_tensor_shape(st, o, shape) < 0) {
                return -1;
            }
        }
    }
    return 0;
}
