/* The bytes a forward saves for backward, measured with saved-tensor hooks
 * (saved.h). */
#include "fail.h"
#include "convert.h"
#include "saved.h"
#include "counter.h"

/* Whether the exception set is an Exception (a measurement failure) rather
 * than an interrupt, or a failed allocation (MemoryError: the storage was
 * not read, which says nothing of the tensor; it propagates, as in
 * memsim.c). */
static bool
is_exception(void)
{
    return PyErr_ExceptionMatches(PyExc_Exception)
           && !PyErr_ExceptionMatches(PyExc_MemoryError);
}

/* obj.name() with an interned name: a new reference, or NULL with an
 * exception. */
static PyObject *
call_method(tsx_state *st, PyObject *obj, const char *name)
{
    PyObject *n = tsx_name(st, name), *result;
    if (n == NULL) {
        return NULL;
    }
    result = PyObject_CallMethodNoArgs(obj, n);
    Py_DECREF(n);
    return result;
}

int
tsx_saved_storage(tsx_state *st,
                  PyObject *tensor,
                  uint64_t *storage,
                  int64_t *nbytes,
                  PyObject **why)
{
    PyObject *s = NULL, *cdata = NULL, *size = NULL;
    int rc = -1;
    *why = NULL;
    s = call_method(st, tensor, "untyped_storage");
    if (s != NULL) {
        cdata = tsx_getattr(st, s, "_cdata");
        size = cdata ? call_method(st, s, "nbytes") : NULL;
    }
    if (size == NULL) {
        if (is_exception()) {
            /* no storage to read: sparse, a wrapper subclass, ... */
            *why = tsx_fetch();
            rc = 0;
        }
        goto done;
    }
    *storage = (uint64_t)PyLong_AsUnsignedLongLong(cdata);
    *nbytes = PyLong_AsLongLong(size);
    if (PyErr_Occurred()) {
        goto done;
    }
    if (*nbytes < 0) {
        tsx_fail(PyExc_ValueError, "a storage reports %lld bytes", *nbytes);
        goto done;
    }
    rc = 1;
done:
    Py_XDECREF(s);
    Py_XDECREF(cdata);
    Py_XDECREF(size);
    return rc;
}

/* Excludes the storages of one iterable of tensors. */
static int
exclude_all(tsx_state *st, ts_saved *acc, PyObject *iterable)
{
    PyObject *it = iterable ? PyObject_GetIter(iterable) : NULL, *t;
    int rc = it != NULL ? 0 : -1;
    while (rc == 0 && (t = PyIter_Next(it)) != NULL) {
        uint64_t storage;
        int64_t nbytes;
        PyObject *why = NULL;
        int read = tsx_saved_storage(st, t, &storage, &nbytes, &why);
        int status = read == 1 ? ts_saved_exclude(acc, storage) : TS_OK;
        Py_XDECREF(why); /* no storage: nothing autograd could save of it */
        Py_DECREF(t);
        if (read < 0) {
            rc = -1;
        }
        else if (status != TS_OK) {
            tsx_raise_status(status, NULL);
            rc = -1;
        }
    }
    if (rc == 0 && PyErr_Occurred()) {
        rc = -1;
    }
    Py_XDECREF(it);
    return rc;
}

int
tsx_saved_exclude_module(tsx_state *st, ts_saved *acc, PyObject *module)
{
    PyObject *params, *buffers = NULL;
    int rc = -1;
    params = call_method(st, module, "parameters");
    if (params != NULL && exclude_all(st, acc, params) == 0) {
        buffers = call_method(st, module, "buffers");
        rc = buffers != NULL ? exclude_all(st, acc, buffers) : -1;
    }
    Py_XDECREF(params);
    Py_XDECREF(buffers);
    return rc;
}

/* The diagnostic of a layer's first unmeasured saved tensor. */
static int
diagnose(ts_session *session, PyObject *tensor, PyObject *why, int layer)
{
    PyObject *text = PyUnicode_FromFormat(
        "a saved %s has no readable storage (%s: %S): its bytes are not "
        "counted, saved_activation_bytes is a lower bound",
        Py_TYPE(tensor)->tp_name,
        Py_TYPE(why)->tp_name,
        why);
    const char *message = text ? PyUnicode_AsUTF8(text) : NULL;
    int status = message ? ts_session_add_diagnostic(session,
                                                     TSX_SAVED_UNMEASURED,
                                                     "saved_activation_bytes",
                                                     layer,
                                                     message)
                         : TS_OK;
    Py_XDECREF(text);
    if (message == NULL) {
        return -1;
    }
    if (status != TS_OK) {
        tsx_raise_status(status, NULL);
        return -1;
    }
    return 0;
}

int
tsx_saved_measure(tsx_state *st,
                  ts_saved *acc,
                  ts_session *diagnostics,
                  PyObject *tensor,
                  int layer)
{
    uint64_t storage = 0;
    int64_t nbytes = 0;
    PyObject *why = NULL;
    int rc = -1, status;
    int read = tsx_saved_storage(st, tensor, &storage, &nbytes, &why);
    if (read < 0) {
        return -1;
    }
    status = read ? ts_saved_add(acc, storage, nbytes, layer)
                  : ts_saved_add_unmeasured(acc, layer);
    if (status < 0) {
        tsx_raise_status(status, NULL);
    }
    else if (!read && status == 1 && diagnostics != NULL) {
        rc = diagnose(diagnostics, tensor, why, layer);
    }
    else {
        rc = 0;
    }
    Py_XDECREF(why);
    return rc;
}

void
tsx_saved_open(tsx_saved_run *run, ts_session *session, PyObject *counter)
{
    run->session = session;
    run->acc = ts_session_saved(session);
    run->counter = counter;
}

PyObject *
tsx_saved_pack(tsx_state *st, tsx_saved_run *run, PyObject *tensor)
{
    PyObject *detached;
    if (run->acc == NULL) {
        return tsx_fail(PyExc_RuntimeError,
                        "saved-tensor hook of a crawl that is not installed");
    }
    if (tsx_saved_measure(st,
                          run->acc,
                          run->session,
                          tensor,
                          ts_session_current_layer(run->session))
        < 0) {
        return NULL;
    }
    /* the same storage without the autograd history: nothing that the
     * graph keeps refers back to the node that saves it (not counted: the
     * hook's operator, not the model's) */
    tsx_counter_pause(run->counter, true);
    detached = call_method(st, tensor, "detach");
    tsx_counter_pause(run->counter, false);
    return detached;
}

PyObject *
tsx_saved_unpack(PyObject *packed)
{
    /* autograd wraps it with the saved grad_fn and requires_grad */
    return Py_NewRef(packed);
}

void
tsx_saved_release(tsx_saved_run *run)
{
    run->session = NULL;
    run->acc = NULL;
    run->counter = NULL;
}
