/* Mask arguments of attention and Transformer calls (masks.h): the shape,
 * and the engine's summary of the values read in place from host memory. */
#include <string.h>

#include "masks.h"

/* The element type a mask's values are read in; 0 when it is not one of
 * them (float8, ...). */
static int
mask_dtype(const tsx_dtype *info, ts_mask_dtype *out)
{
    static const struct {
        const char *name;
        ts_mask_dtype dtype;
    } known[] = {
        {"torch.bool", TS_MASK_BOOL},
        {"torch.float16", TS_MASK_FLOAT16},
        {"torch.bfloat16", TS_MASK_BFLOAT16},
        {"torch.float32", TS_MASK_FLOAT32},
        {"torch.float64", TS_MASK_FLOAT64},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (PyUnicode_CompareWithASCIIString(info->name, known[i].name) == 0) {
            *out = known[i].dtype;
            return 1;
        }
    }
    return 0;
}

/* After a failed Python call: an Exception leaves the values unread (0,
 * cleared); an interrupt or a MemoryError propagates (-1): a failed
 * allocation is not a fact about the mask, and the report must not change
 * with it. */
static int
unread_or_raise(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)
        && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

/* value.cpu() inside torch._C._DisableTorchDispatch(): the crawl's
 * operator counter and a caller's dispatch modes do not see the copy. A
 * new reference; NULL with an exception on failure. */
static PyObject *
host_copy(tsx_state *st, PyObject *value)
{
    PyObject *torch_c = PyImport_ImportModule("torch._C");
    PyObject *guard_type =
        torch_c ? tsx_getattr(st, torch_c, "_DisableTorchDispatch") : NULL;
    PyObject *guard = guard_type ? PyObject_CallNoArgs(guard_type) : NULL;
    PyObject *enter = guard ? tsx_name(st, "__enter__") : NULL;
    PyObject *exit = enter ? tsx_name(st, "__exit__") : NULL;
    PyObject *entered = exit ? PyObject_CallMethodNoArgs(guard, enter) : NULL;
    PyObject *copy = NULL, *exited, *pending;
    if (entered != NULL) {
        copy = PyObject_CallMethodNoArgs(value, st->s_cpu);
        pending = tsx_fetch();
        exited = PyObject_CallMethodObjArgs(
            guard, exit, Py_None, Py_None, Py_None, NULL);
        if (exited == NULL) {
            Py_CLEAR(copy);
            Py_XDECREF(pending); /* the exit's error replaces it */
        }
        else if (pending != NULL) {
            tsx_restore(pending);
        }
        Py_XDECREF(exited);
    }
    Py_XDECREF(torch_c);
    Py_XDECREF(guard_type);
    Py_XDECREF(guard);
    Py_XDECREF(enter);
    Py_XDECREF(exit);
    Py_XDECREF(entered);
    return copy;
}

/* A plain tensor whose values live somewhere: torch.Tensor or
 * nn.Parameter, not meta. 1 yes, 0 no, -1 with an exception. */
static int
readable_tensor(tsx_state *st, PyObject *value)
{
    PyObject *meta;
    int is_meta;
    if (Py_TYPE(value) != (PyTypeObject *)st->tensor_type
        && Py_TYPE(value) != (PyTypeObject *)st->parameter_type) {
        return 0;
    }
    meta = PyObject_GetAttr(value, st->s_is_meta);
    is_meta = meta ? PyObject_IsTrue(meta) : -1;
    Py_XDECREF(meta);
    return is_meta < 0 ? -1 : !is_meta;
}

/* The strided view of a host tensor: its data pointer and strides, and
 * its neg bit clear (a negative view would read with flipped signs). 1
 * read, 0 not readable (an Exception cleared), -1 with an exception. */
static int
host_view(tsx_state *st,
          PyObject *host,
          const ts_shape *shape,
          ts_mask_buffer *buf)
{
    PyObject *neg = tsx_getattr(st, host, "is_neg");
    PyObject *is_neg = neg ? PyObject_CallNoArgs(neg) : NULL;
    PyObject *ptr = NULL, *strides = NULL, *method = NULL;
    int rc = -1;
    if (is_neg == NULL) {
        rc = unread_or_raise();
        goto done;
    }
    if (is_neg != Py_False) {
        rc = 0;
        goto done;
    }
    method = tsx_getattr(st, host, "data_ptr");
    ptr = method ? PyObject_CallNoArgs(method) : NULL;
    Py_XDECREF(method);
    method = ptr ? tsx_getattr(st, host, "stride") : NULL;
    strides = method ? PyObject_CallNoArgs(method) : NULL;
    if (strides == NULL) {
        rc = unread_or_raise();
        goto done;
    }
    if (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != shape->ndim) {
        rc = 0;
        goto done;
    }
    buf->data = PyLong_AsVoidPtr(ptr);
    if (buf->data == NULL && PyErr_Occurred()) {
        rc = unread_or_raise();
        goto done;
    }
    buf->ndim = shape->ndim;
    for (int d = 0; d < shape->ndim; d++) {
        buf->dims[d] = shape->dims[d];
        buf->strides[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, d));
        if (buf->strides[d] == -1 && PyErr_Occurred()) {
            rc = unread_or_raise();
            goto done;
        }
    }
    rc = 1;
done:
    Py_XDECREF(neg);
    Py_XDECREF(is_neg);
    Py_XDECREF(ptr);
    Py_XDECREF(strides);
    Py_XDECREF(method);
    return rc;
}

int
tsx_read_mask(tsx_state *st, PyObject *value, ts_mask_info *out)
{
    PyObject *dtype = NULL, *on_cpu = NULL, *host = NULL;
    const tsx_dtype *info;
    ts_mask_buffer buf;
    int rc = -1, readable;
    memset(out, 0, sizeof *out);
    memset(&buf, 0, sizeof buf);
    out->shape.ndim = -1;
    if (value == NULL || value == Py_None) {
        return 0;
    }
    out->present = true;
    if (!tsx_is_tensor(st, value)) {
        return 0; /* PyTorch refuses it; the relations say why */
    }
    if (tsx_tensor_shape(st, value, &out->shape) < 0) {
        return -1;
    }
    if (out->shape.ndim < 0 || !out->shape.dense
        || (out->shape.dtype != TS_DTYPE_BOOL
            && out->shape.dtype != TS_DTYPE_FLOAT)) {
        return 0;
    }
    readable = readable_tensor(st, value);
    if (readable <= 0) {
        return readable;
    }
    dtype = PyObject_GetAttr(value, st->s_dtype);
    info = dtype ? tsx_dtype_info(st, dtype) : NULL;
    on_cpu = info ? PyObject_GetAttr(value, st->s_is_cpu) : NULL;
    if (on_cpu == NULL) {
        goto done;
    }
    rc = 0;
    if (!mask_dtype(info, &buf.dtype)) {
        goto done;
    }
    host = on_cpu == Py_True ? Py_NewRef(value) : host_copy(st, value);
    if (host == NULL) {
        rc = unread_or_raise();
        goto done;
    }
    rc = host_view(st, host, &out->shape, &buf);
    if (rc == 1) {
        /* a view the engine refuses (it cannot come from PyTorch) stays
         * unread */
        if (ts_mask_scan(&buf, out) != TS_OK) {
            out->read = false;
        }
        rc = 0;
    }
done:
    Py_XDECREF(dtype);
    Py_XDECREF(on_cpu);
    Py_XDECREF(host);
    return rc;
}
