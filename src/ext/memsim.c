/* The memory simulator's binding (memsim.h). */
#include "memsim.h"
#include "convert.h"
#include "fail.h"

struct tsx_memsim {
    tsx_state *st;
    ts_memsim *sim;
    PyObject *refs;     /* {weak reference: storage key (int)} */
    PyObject *callback; /* the counter's _storage_freed */
    PyObject *s_untyped_storage, *s_nbytes, *s_grad, *s_param_groups,
        *s_params, *s_state, *s_parameters, *s_shape, *s_name;
    /* torch._C._select_conv_backend, or NULL when this PyTorch lacks it;
     * torch._C._get_mkldnn_enabled and torch._C._has_mkldnn */
    PyObject *select_conv_backend, *mkldnn_enabled;
    bool has_mkldnn;
    int64_t unobserved; /* tensors whose storage could not be read */
};

tsx_memsim *
tsx_memsim_new(tsx_state *st, PyObject *callback)
{
    tsx_memsim *m = PyMem_Calloc(1, sizeof *m);
    if (m == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    m->st = st;
    m->callback = Py_NewRef(callback);
    m->sim = ts_memsim_new();
    m->refs = PyDict_New();
    m->s_untyped_storage = PyUnicode_InternFromString("untyped_storage");
    m->s_nbytes = PyUnicode_InternFromString("nbytes");
    m->s_grad = PyUnicode_InternFromString("grad");
    m->s_param_groups = PyUnicode_InternFromString("param_groups");
    m->s_params = PyUnicode_InternFromString("params");
    m->s_state = PyUnicode_InternFromString("state");
    m->s_parameters = PyUnicode_InternFromString("parameters");
    m->s_shape = PyUnicode_InternFromString("shape");
    m->s_name = PyUnicode_InternFromString("name");
    {
        PyObject *tc = PyImport_ImportModule("torch._C");
        PyObject *has =
            tc != NULL ? PyObject_GetAttrString(tc, "_has_mkldnn") : NULL;
        m->has_mkldnn = has == NULL || PyObject_IsTrue(has) != 0;
        Py_XDECREF(has);
        m->select_conv_backend =
            tc != NULL ? PyObject_GetAttrString(tc, "_select_conv_backend")
                       : NULL;
        m->mkldnn_enabled =
            tc != NULL ? PyObject_GetAttrString(tc, "_get_mkldnn_enabled")
                       : NULL;
        Py_XDECREF(tc);
        if (m->select_conv_backend == NULL || m->mkldnn_enabled == NULL) {
            Py_CLEAR(m->select_conv_backend); /* no workspace model here */
            PyErr_Clear();
        }
    }
    if (m->sim == NULL) {
        tsx_memsim_free(m);
        tsx_raise_status(TS_ENOMEM, NULL);
        return NULL;
    }
    if (m->refs == NULL || m->s_untyped_storage == NULL || m->s_nbytes == NULL
        || m->s_grad == NULL || m->s_param_groups == NULL
        || m->s_params == NULL || m->s_state == NULL
        || m->s_parameters == NULL) {
        tsx_memsim_free(m);
        return NULL;
    }
    return m;
}

void
tsx_memsim_free(tsx_memsim *m)
{
    if (m == NULL) {
        return;
    }
    /* dropping a weak reference drops its callback: none runs later */
    Py_CLEAR(m->refs);
    Py_CLEAR(m->callback);
    Py_CLEAR(m->s_untyped_storage);
    Py_CLEAR(m->s_nbytes);
    Py_CLEAR(m->s_grad);
    Py_CLEAR(m->s_param_groups);
    Py_CLEAR(m->s_params);
    Py_CLEAR(m->s_state);
    Py_CLEAR(m->s_parameters);
    Py_CLEAR(m->s_shape);
    Py_CLEAR(m->s_name);
    Py_CLEAR(m->select_conv_backend);
    Py_CLEAR(m->mkldnn_enabled);
    ts_memsim_free(m->sim);
    PyMem_Free(m);
}

int
tsx_memsim_traverse(tsx_memsim *m, visitproc visit, void *arg)
{
    if (m != NULL) {
        Py_VISIT(m->refs);
        Py_VISIT(m->callback);
    }
    return 0;
}

/* An engine status as an exception: -1. */
static int
fail_status(int rc)
{
    tsx_raise_status(rc, NULL);
    return -1;
}

/* The number a method of `obj` returns, as int64: 0 or -1 with an
 * exception. */
static int
call_int(PyObject *obj, PyObject *name, int64_t *out)
{
    PyObject *v = PyObject_CallMethodNoArgs(obj, name);
    long long x;
    if (v == NULL) {
        return -1;
    }
    x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (int64_t)x;
    return 0;
}

/* Starts following a storage first seen now: its weak reference, then the
 * core's record. 0, or -1 with an exception. */
static int
follow(tsx_memsim *m, PyObject *storage, uint64_t key, bool existing)
{
    PyObject *ref = NULL, *k = NULL, *dev = NULL, *dev_str = NULL;
    const char *device;
    int64_t bytes;
    int rc = -1, status;
    if (call_int(storage, m->s_nbytes, &bytes) < 0) {
        goto done;
    }
    dev = PyObject_GetAttr(storage, m->st->s_device);
    dev_str = dev != NULL ? PyObject_Str(dev) : NULL;
    device = dev_str != NULL ? PyUnicode_AsUTF8(dev_str) : NULL;
    if (device == NULL) {
        goto done;
    }
    ref = PyWeakref_NewRef(storage, m->callback);
    if (ref == NULL && PyErr_ExceptionMatches(PyExc_TypeError)
        && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        /* a storage-like object that cannot be followed: unobserved */
        PyErr_Clear();
        m->unobserved++;
        rc = 0;
        goto done;
    }
    k = ref != NULL ? PyLong_FromUnsignedLongLong(key) : NULL;
    if (k == NULL || PyDict_SetItem(m->refs, ref, k) < 0) {
        goto done;
    }
    status = ts_memsim_observe(m->sim, key, bytes, device, existing);
    if (status != TS_OK) {
        /* not followed: its death means nothing */
        if (PyDict_DelItem(m->refs, ref) < 0) {
            goto done;
        }
        fail_status(status);
        goto done;
    }
    rc = 0;
done:
    Py_XDECREF(ref);
    Py_XDECREF(k);
    Py_XDECREF(dev);
    Py_XDECREF(dev_str);
    return rc;
}

/* Observes the storage of tensor `t`; *key is its key, 0 when the storage
 * cannot be read (a sparse or nested tensor, a subclass without one:
 * counted as unobserved). A known output storage is read again for its
 * size (resize_, out= variants). 0, or -1 with an exception. */
static int
observe(tsx_memsim *m, PyObject *t, bool existing, uint64_t *key)
{
    PyObject *storage = PyObject_CallMethodNoArgs(t, m->s_untyped_storage);
    int rc = 0;
    *key = 0;
    if (storage == NULL) {
        /* what a tensor without a storage raises (sparse tensors:
         * NotImplementedError; a subclass without the method); anything
         * else (PyTorch's RuntimeError when allocating the storage object
         * fails, out of memory, an interrupt) propagates */
        if (!PyErr_ExceptionMatches(PyExc_NotImplementedError)
            && !PyErr_ExceptionMatches(PyExc_AttributeError)
            && !PyErr_ExceptionMatches(PyExc_TypeError)) {
            return -1;
        }
        PyErr_Clear();
        m->unobserved++;
        return 0;
    }
    *key = (uint64_t)(uintptr_t)storage;
    if (!ts_memsim_known(m->sim, *key)) {
        rc = follow(m, storage, *key, existing);
    }
    else if (!existing) {
        int64_t bytes;
        int status;
        rc = call_int(storage, m->s_nbytes, &bytes);
        if (rc == 0) {
            /* the device string is not read again: it is known */
            status = ts_memsim_observe(m->sim, *key, bytes, NULL, false);
            rc = status == TS_OK ? 0 : fail_status(status);
        }
    }
    Py_DECREF(storage);
    return rc;
}

/* Observes every tensor of `obj`: a tensor, or a list/tuple of them (one
 * level of nesting more: foreach operators' lists inside the arguments).
 */
static int
walk(tsx_memsim *m, PyObject *obj, bool existing, int depth)
{
    uint64_t key;
    if (PyObject_TypeCheck(obj, (PyTypeObject *)m->st->tensor_type)) {
        return observe(m, obj, existing, &key);
    }
    if (depth < 2 && (PyTuple_Check(obj) || PyList_Check(obj))) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
        for (Py_ssize_t i = 0; i < n; i++) {
            /* a list can change under a callback: re-read its size */
            if (i >= PySequence_Fast_GET_SIZE(obj)) {
                break;
            }
            PyObject *item = Py_NewRef(PySequence_Fast_GET_ITEM(obj, i));
            int rc = walk(m, item, existing, depth + 1);
            Py_DECREF(item);
            if (rc < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* The first n ints of a sequence attribute (a shape, a stride list): 0,
 * or -1 (not read; no exception). */
static int
read_ints(PyObject *seq, int64_t *out, Py_ssize_t n)
{
    if (seq == NULL || !PySequence_Check(seq) || PySequence_Size(seq) != n) {
        PyErr_Clear();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PySequence_GetItem(seq, i);
        long long x = v != NULL ? PyLong_AsLongLong(v) : -1;
        Py_XDECREF(v);
        if (x == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
        out[i] = (int64_t)x;
    }
    return 0;
}

/* An int attribute: 0, or -1 (no exception). */
static int
attr_int(PyObject *obj, PyObject *name, int64_t *out)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    long long x = v != NULL ? PyLong_AsLongLong(v) : -1;
    Py_XDECREF(v);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    *out = (int64_t)x;
    return 0;
}

/* The bytes of the im2col buffer `finput` that slow_conv2d (the CPU
 * convolution PyTorch runs when oneDNN does not: ConvBackend.Slow2d) holds
 * beside its output while it runs: batch x (C_in x kH x kW) x (H_out x
 * W_out) elements of the output's dtype; none for a 1x1 kernel of stride 1
 * without padding (aten/src/ATen/native/ConvolutionMM2d.cpp). 0 for any
 * other backend, a call it cannot read (symbolic sizes), or a PyTorch
 * without torch._C._select_conv_backend. */
static int64_t
slow2d_workspace(tsx_memsim *m, PyObject *conv, PyObject *out, bool backward)
{
    PyObject *backend = NULL, *name = NULL, *shape;
    int64_t w[4], o[4], stride[2], pad[2], itemsize, bytes = 0;
    int64_t is_cpu = 0;
    if (!PyObject_TypeCheck(out, (PyTypeObject *)m->st->tensor_type)
        || attr_int(out, m->st->s_is_cpu, &is_cpu) < 0 || !is_cpu) {
        /* meta tensors plan for another device: its kernels, not these */
        return 0;
    }
    backend = PyObject_Call(m->select_conv_backend, conv, NULL);
    name = backend != NULL ? PyObject_GetAttr(backend, m->s_name) : NULL;
    if (name == NULL || !PyUnicode_Check(name)
        || PyUnicode_CompareWithASCIIString(name, "Slow2d") != 0) {
        goto done;
    }
    shape = PyObject_GetAttr(PyTuple_GET_ITEM(conv, 1), m->s_shape);
    if (read_ints(shape, w, 4) < 0) {
        Py_XDECREF(shape);
        goto done;
    }
    Py_DECREF(shape);
    shape = PyObject_GetAttr(out, m->s_shape);
    if (read_ints(shape, o, 4) < 0) {
        Py_XDECREF(shape);
        goto done;
    }
    Py_DECREF(shape);
    if (read_ints(PyTuple_GET_ITEM(conv, 3), stride, 2) < 0
        || read_ints(PyTuple_GET_ITEM(conv, 4), pad, 2) < 0
        || attr_int(out, m->st->s_itemsize, &itemsize) < 0) {
        goto done;
    }
    if (w[2] == 1 && w[3] == 1 && stride[0] == 1 && stride[1] == 1
        && pad[0] == 0 && pad[1] == 0) {
        /* no im2col for a 1x1 kernel: the product reads the input */
    }
    else if (__builtin_mul_overflow(o[0], w[1] * w[2] * w[3], &bytes)
             || __builtin_mul_overflow(bytes, o[2] * o[3], &bytes)
             || __builtin_mul_overflow(bytes, itemsize, &bytes) || bytes < 0) {
        bytes = 0;
        goto done;
    }
    if (backward) {
        /* the backward makes grad_output contiguous first (a gradient
         * expanded from a scalar, as sum's, is not): a copy of its own */
        PyObject *c = PyObject_CallMethod(out, "is_contiguous", NULL);
        int contiguous = c != NULL ? PyObject_IsTrue(c) : -1;
        int64_t copy;
        Py_XDECREF(c);
        if (contiguous == 0
            && !__builtin_mul_overflow(o[0] * o[1], o[2] * o[3], &copy)
            && !__builtin_mul_overflow(copy, itemsize, &copy)
            && !__builtin_add_overflow(bytes, copy, &bytes)) {
            /* counted */
        }
    }
done:
    PyErr_Clear(); /* best effort: a call it cannot read has no model */
    Py_XDECREF(backend);
    Py_XDECREF(name);
    return bytes;
}

/* The workspace of a convolution's kernel (aten.convolution: its output;
 * aten.convolution_backward: the buffer of its backward, the same size,
 * beside the gradients; output-shaped tensor: grad_output). 0, or -1 with
 * an exception. */
static int
conv_workspace(tsx_memsim *m, const char *name, PyObject *args, PyObject *out)
{
    /* _select_conv_backend(input, weight, bias, stride, padding, dilation,
     * transposed, output_padding, groups, bias_sizes) */
    static const int fwd[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, -1};
    static const int bwd[10] = {1, 2, -1, 4, 5, 6, 7, 8, 9, 3};
    bool backward = strcmp(name, "aten.convolution_backward") == 0;
    const int *map = backward ? bwd : fwd;
    PyObject *conv, *shaped;
    int64_t ws;
    int rc;
    PyObject *enabled;
    int on;
    if ((!backward && strcmp(name, "aten.convolution") != 0)
        || m->select_conv_backend == NULL || !PyTuple_Check(args)
        || PyTuple_GET_SIZE(args) < (backward ? 10 : 9)) {
        return 0;
    }
    /* With oneDNN on, float convolutions run through it (its buffers are
     * not modelled): the backend is not asked. Asking costs a pybind11
     * call per convolution, which also crashes PyTorch when the
     * allocation of its result fails. */
    enabled = PyObject_CallNoArgs(m->mkldnn_enabled);
    on = enabled != NULL ? PyObject_IsTrue(enabled) : -1;
    Py_XDECREF(enabled);
    if (on < 0) {
        return -1;
    }
    if (on && m->has_mkldnn) {
        return 0;
    }
    conv = PyTuple_New(10);
    if (conv == NULL) {
        return -1;
    }
    for (int i = 0; i < 10; i++) {
        PyObject *v = map[i] < 0 ? Py_None : PyTuple_GET_ITEM(args, map[i]);
        PyTuple_SET_ITEM(conv, i, Py_NewRef(v));
    }
    shaped = backward ? PyTuple_GET_ITEM(args, 0) : out;
    ws = slow2d_workspace(m, conv, shaped, backward);
    Py_DECREF(conv);
    if (ws <= 0) {
        return 0;
    }
    rc = ts_memsim_workspace(m->sim, ws, "cpu");
    return rc == TS_OK ? 0 : fail_status(rc);
}

int
tsx_memsim_op(tsx_memsim *m,
              const char *name,
              ts_phase phase,
              int layer,
              PyObject *args,
              PyObject *kwargs,
              PyObject *out)
{
    int rc = ts_memsim_op(m->sim, name, phase, layer);
    if (rc != TS_OK) {
        return fail_status(rc);
    }
    /* inputs first: an existing storage is resident from the start, and
     * an in-place output is then known */
    if (walk(m, args, true, 0) < 0) {
        return -1;
    }
    if (kwargs != NULL) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs, &pos, &key, &value)) {
            Py_INCREF(value);
            rc = walk(m, value, true, 1);
            Py_DECREF(value);
            if (rc < 0) {
                return -1;
            }
        }
    }
    if (walk(m, out, false, 0) < 0) {
        return -1;
    }
    if (conv_workspace(m, name, args, out) < 0) {
        return -1;
    }
    return 0;
}

int
tsx_memsim_freed(tsx_memsim *m, PyObject *ref)
{
    PyObject *k;
    unsigned long long key;
    int rc;
    if (m->refs == NULL) {
        return 0;
    }
    k = PyDict_GetItemWithError(m->refs, ref);
    if (k == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    key = PyLong_AsUnsignedLongLong(k);
    if (key == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    if (PyDict_DelItem(m->refs, ref) < 0) {
        return -1;
    }
    rc = ts_memsim_release(m->sim, (uint64_t)key);
    return rc == TS_OK ? 0 : fail_status(rc);
}

/* Names tensor `t` (None: nothing). */
static int
name_tensor(tsx_memsim *m, PyObject *t, ts_mem_role role)
{
    uint64_t key;
    if (t == Py_None
        || !PyObject_TypeCheck(t, (PyTypeObject *)m->st->tensor_type)) {
        return 0;
    }
    if (observe(m, t, true, &key) < 0) {
        return -1;
    }
    /* a storage that could not be read has no key (0) */
    if (key != 0) {
        int rc = ts_memsim_set_role(m->sim, key, role);
        if (rc != TS_OK && rc != TS_EINVAL) {
            return fail_status(rc);
        }
    }
    return 0;
}

/* A parameter and its gradient. */
static int
name_parameter(tsx_memsim *m, PyObject *p)
{
    PyObject *grad;
    int rc;
    if (name_tensor(m, p, TS_MEM_PARAMETER) < 0) {
        return -1;
    }
    grad = PyObject_GetAttr(p, m->s_grad);
    if (grad == NULL) {
        return -1;
    }
    rc = name_tensor(m, grad, TS_MEM_GRADIENT);
    Py_DECREF(grad);
    return rc;
}

/* Calls `fn(m, item)` for each item of an iterable. */
static int
each(tsx_memsim *m, PyObject *iterable, int (*fn)(tsx_memsim *, PyObject *))
{
    PyObject *it = PyObject_GetIter(iterable), *item;
    if (it == NULL) {
        return -1;
    }
    while ((item = PyIter_Next(it)) != NULL) {
        int rc = fn(m, item);
        Py_DECREF(item);
        if (rc < 0) {
            Py_DECREF(it);
            return -1;
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

int
tsx_memsim_name_module(tsx_memsim *m, PyObject *root)
{
    PyObject *params = PyObject_CallMethodNoArgs(root, m->s_parameters);
    int rc;
    if (params == NULL) {
        return -1;
    }
    rc = each(m, params, name_parameter);
    Py_DECREF(params);
    return rc;
}

static int
name_group(tsx_memsim *m, PyObject *group)
{
    PyObject *params = PyObject_GetItem(group, m->s_params);
    int rc;
    if (params == NULL) {
        return -1;
    }
    rc = each(m, params, name_parameter);
    Py_DECREF(params);
    return rc;
}

static int
name_state_tensor(tsx_memsim *m, PyObject *t)
{
    return name_tensor(m, t, TS_MEM_OPTIMIZER_STATE);
}

/* One parameter's state: {name: tensor or number}. */
static int
name_state(tsx_memsim *m, PyObject *state)
{
    PyObject *values;
    int rc;
    if (!PyDict_Check(state)) {
        return 0;
    }
    values = PyDict_Values(state);
    if (values == NULL) {
        return -1;
    }
    rc = each(m, values, name_state_tensor);
    Py_DECREF(values);
    return rc;
}

int
tsx_memsim_name_optimizer(tsx_memsim *m, PyObject *optimizer)
{
    PyObject *groups = PyObject_GetAttr(optimizer, m->s_param_groups);
    PyObject *state = NULL, *values = NULL;
    int rc = -1;
    if (groups == NULL || each(m, groups, name_group) < 0) {
        goto done;
    }
    state = PyObject_GetAttr(optimizer, m->s_state);
    values =
        state != NULL && PyDict_Check(state) ? PyDict_Values(state) : NULL;
    if (values == NULL) {
        if (state != NULL && !PyErr_Occurred()) {
            rc = 0; /* not a dict: nothing to name */
        }
        goto done;
    }
    rc = each(m, values, name_state);
done:
    Py_XDECREF(groups);
    Py_XDECREF(state);
    Py_XDECREF(values);
    return rc;
}

static int
layer_identity(void *ctx, int layer, const char **path, int32_t *call_index)
{
    return ts_session_layer_identity(ctx, layer, path, call_index);
}

json_t *
tsx_memsim_report(tsx_memsim *m,
                  ts_session *session,
                  bool timeline,
                  const char *attention,
                  const char *torch_version)
{
    ts_memory_report_info info = {
        torch_version, attention, m->unobserved, NULL};
    json_t *r;
    if (session != NULL && ts_session_saved(session) != NULL) {
        info.saved = ts_session_saved_layers(session, "workload");
        if (info.saved == NULL) {
            tsx_raise_status(TS_ENOMEM, NULL);
            return NULL;
        }
    }
    r = ts_memory_report(m->sim,
                         timeline,
                         session != NULL ? layer_identity : NULL,
                         (void *)session,
                         &info);
    if (r == NULL) {
        tsx_raise_status(TS_ENOMEM, NULL);
    }
    return r;
}
