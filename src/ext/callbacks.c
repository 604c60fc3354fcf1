/* The only place the binding runs user code: custom operator formulas,
 * module handlers' estimates and module readers, under one rule for what
 * that code raises or returns (callbacks.h; the table is in
 * docs/architecture.md). Everything here returns 0/1/-1: done, the site's
 * diagnostic, or an interrupt to propagate. */
#include <math.h>

#include "fail.h"
#include "callbacks.h"

/* ---- the rule ------------------------------------------------------------
 */

int
tsx_user_failed(PyObject **exc)
{
    PyObject *raised = tsx_fetch();
    if (exc != NULL) {
        *exc = NULL;
    }
    if (raised == NULL) {
        return 1; /* nothing raised: an error without an exception */
    }
    /* Only errors (Exception) are the user code's result: KeyboardInterrupt,
     * SystemExit, GeneratorExit and other BaseExceptions go on. */
    if (!PyErr_GivenExceptionMatches(raised, PyExc_Exception)) {
        tsx_restore(raised);
        return -1;
    }
    if (exc != NULL) {
        *exc = raised;
    }
    else {
        Py_DECREF(raised);
    }
    return 1;
}

void
tsx_exception_text(PyObject *exc, char *buf, size_t size)
{
    PyObject *text = exc != NULL ? PyObject_Str(exc) : NULL;
    const char *t = text != NULL ? PyUnicode_AsUTF8(text) : NULL;
    snprintf(buf, size, "%s", t != NULL ? t : "");
    if (t == NULL) {
        PyErr_Clear(); /* the message does without the text */
    }
    Py_XDECREF(text);
}

/* ---- numbers returned by user code ----------------------------------------
 */

/* 1 when `x` is a numpy or tensor truth value (its dtype prints as "bool"
 * or "torch.bool"), 0 otherwise, -1 on an interrupt. */
static int
is_boolean(tsx_state *st, PyObject *x)
{
    PyObject *dtype = NULL, *text = NULL;
    const char *name;
    int found = 0;
    if (tsx_optional_attr(st, x, "dtype", &dtype) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return -1;
        }
        PyErr_Clear();
        return 0;
    }
    text = dtype ? PyObject_Str(dtype) : NULL;
    name = text ? PyUnicode_AsUTF8(text) : NULL;
    found = name != NULL
            && (strcmp(name, "bool") == 0 || strcmp(name, "torch.bool") == 0);
    Py_XDECREF(text);
    Py_XDECREF(dtype);
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return -1;
        }
        PyErr_Clear();
    }
    return found;
}

/* A float-like's value: TSX_NUMBER_REAL, TSX_NUMBER_NONE when its
 * conversion raised an Exception, -1 on an interrupt. */
static int
real_number(PyObject *value, ts_number *out)
{
    PyObject *f = PyNumber_Float(value);
    if (f != NULL) {
        *out = ts_real(PyFloat_AS_DOUBLE(f));
        Py_DECREF(f);
        return TSX_NUMBER_REAL;
    }
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear(); /* not a number after all */
        return TSX_NUMBER_NONE;
    }
    return -1; /* interrupts and exits go on */
}

int
tsx_user_number(tsx_state *st, PyObject *value, ts_number *out)
{
    PyObject *as_int = NULL;
    int rc, boolean = PyBool_Check(value);
    bool builtin = PyLong_Check(value) || PyFloat_Check(value);
    *out = ts_int(0);
    if (!builtin && (boolean = is_boolean(st, value)) < 0) {
        return -1;
    }
    if (boolean) {
        return TSX_NUMBER_BOOL; /* a truth value is not a count */
    }
    if (!builtin && PyIndex_Check(value)) {
        /* integer-likes (numpy integers, SymInts) count as ints */
        as_int = tsx_number_index(st, value);
        if (as_int != NULL) {
            value = as_int;
        }
        else if (PyErr_ExceptionMatches(PyExc_Exception)) {
            PyErr_Clear(); /* not an integer after all */
        }
        else {
            return -1; /* interrupts and exits go on */
        }
    }
    if (PyLong_Check(value)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(value, &overflow);
        *out = ts_int(x);
        rc = overflow > 0   ? TSX_NUMBER_TOO_LARGE
             : overflow < 0 ? TSX_NUMBER_TOO_SMALL
                            : TSX_NUMBER_INT;
    }
    else if (Py_TYPE(value)->tp_as_number != NULL
             && Py_TYPE(value)->tp_as_number->nb_float != NULL) {
        /* floats, numpy floats, one-element tensors */
        rc = real_number(value, out);
    }
    else {
        rc = TSX_NUMBER_NONE;
    }
    Py_XDECREF(as_int);
    return rc;
}

/* ---- custom operator formulas (custom_mapping)
 * ------------------------------ */

/* Replaces tensors by their shapes (one level into lists), as the shape
 * contract of FlopCounterMode's formulas expects. */
static PyObject *
shapes_of(tsx_state *st, PyObject *v)
{
    if (tsx_is_tensor(st, v)) {
        return PyObject_GetAttr(v, st->s_shape);
    }
    if (PyTuple_Check(v) || PyList_Check(v)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        PyObject *r = PyTuple_Check(v) ? PyTuple_New(n) : PyList_New(n);
        for (Py_ssize_t i = 0; r != NULL && i < n; i++) {
            PyObject *x = shapes_of(st, PySequence_Fast_GET_ITEM(v, i));
            if (x == NULL) {
                Py_CLEAR(r);
                break;
            }
            if (PyTuple_Check(r)) {
                PyTuple_SET_ITEM(r, i, x);
            }
            else {
                PyList_SET_ITEM(r, i, x);
            }
        }
        return r;
    }
    return Py_NewRef(v);
}

/* The arguments a formula receives. FlopCounterMode's contract: formulas
 * marked _get_raw see the real arguments and out_val; the others see
 * shapes and out_shape. 0, or -1 with an exception. */
static int
formula_arguments(tsx_state *st,
                  PyObject *formula,
                  PyObject *args,
                  PyObject *kwargs,
                  PyObject *out,
                  PyObject **cargs,
                  PyObject **ckw)
{
    PyObject *flag, *value;
    bool raw;
    *cargs = *ckw = NULL;
    if (tsx_optional_attr(st, formula, "_get_raw", &flag) < 0) {
        return -1;
    }
    int truth = flag != NULL ? PyObject_IsTrue(flag) : 0;
    Py_XDECREF(flag);
    if (truth < 0) {
        return -1;
    }
    raw = truth == 1;
    *cargs = raw ? Py_NewRef(args) : shapes_of(st, args);
    *ckw = *cargs ? PyDict_New() : NULL;
    if (*ckw == NULL) {
        return -1;
    }
    if (kwargs != NULL) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs, &pos, &k, &v)) {
            PyObject *x = raw ? Py_NewRef(v) : shapes_of(st, v);
            int e = x ? PyDict_SetItem(*ckw, k, x) : -1;
            Py_XDECREF(x);
            if (e < 0) {
                return -1;
            }
        }
    }
    value = raw ? Py_NewRef(out) : shapes_of(st, out);
    int e = value != NULL ? PyDict_SetItemString(
                *ckw, raw ? "out_val" : "out_shape", value)
                          : -1;
    Py_XDECREF(value);
    return e < 0 ? -1 : 0;
}

/* A formula's result as a count: 0 with *flops, or 1 with *message (the
 * diagnostic says why it is not a count). `returned` names its type. */
static int
formula_count(int kind,
              ts_number number,
              const char *returned,
              int64_t *flops,
              char *message,
              size_t size)
{
    double d = -1.0;
    if (kind == TSX_NUMBER_INT && number.i >= 0) {
        *flops = number.i;
        return 0;
    }
    if (kind == TSX_NUMBER_TOO_LARGE) {
        d = 0x1p63; /* too large: reported below */
    }
    else if (kind == TSX_NUMBER_REAL) {
        d = number.r;
    }
    if (d >= 0.0 && d < 0x1p63 && d == floor(d)) {
        *flops = (int64_t)d;
        return 0;
    }
    if (d >= 0x1p63 && isfinite(d)) {
        snprintf(message,
                 size,
                 "the custom formula returned a count that does not "
                 "fit in a signed 64-bit integer");
        return 1;
    }
    if (d > 0.0 && d < 0x1p63) {
        /* Counts are whole numbers: rounding each call would turn ten
         * calls of 0.4 into 0 and call it complete. */
        char *text = PyOS_double_to_string(d, 'r', 0, 0, NULL);
        snprintf(message,
                 size,
                 "the custom formula returned %s, not a whole number of "
                 "FLOPs (round it in the formula)",
                 text != NULL ? text : "a fraction");
        if (text == NULL) {
            PyErr_Clear(); /* the message does without the digits */
        }
        PyMem_Free(text);
        return 1;
    }
    snprintf(message,
             size,
             "the custom formula returned %.80s, not a non-negative "
             "finite number",
             returned);
    return 1;
}

int
tsx_run_formula(tsx_state *st,
                PyObject *formula,
                PyObject *args,
                PyObject *kwargs,
                PyObject *out,
                int64_t *flops,
                char *message,
                size_t size)
{
    PyObject *cargs, *ckw, *result = NULL, *exc;
    char returned[96] = "", text[512];
    ts_number number;
    int rc = -1, kind;
    if (formula_arguments(st, formula, args, kwargs, out, &cargs, &ckw) < 0) {
        goto done;
    }
    result = PyObject_Call(formula, cargs, ckw);
    if (result == NULL) {
        rc = tsx_user_failed(&exc);
        if (rc > 0) {
            tsx_exception_text(exc, text, sizeof text);
            snprintf(message,
                     size,
                     "the custom formula raised %.80s: %.300s",
                     exc ? Py_TYPE(exc)->tp_name : "an exception",
                     text);
            Py_XDECREF(exc);
        }
        goto done;
    }
    /* named as returned, before any conversion */
    snprintf(returned, sizeof returned, "%s", Py_TYPE(result)->tp_name);
    kind = tsx_user_number(st, result, &number);
    rc = kind < 0
             ? -1
             : formula_count(kind, number, returned, flops, message, size);
done:
    Py_XDECREF(cargs);
    Py_XDECREF(ckw);
    Py_XDECREF(result);
    return rc;
}

/* ---- custom module handlers (custom_modules)
 * -------------------------------- */

int
tsx_run_estimate(PyObject *estimate,
                 PyObject *call,
                 const char *identity,
                 PyObject **result,
                 char *message,
                 size_t size)
{
    PyObject *exc;
    char text[1024];
    int rc;
    *result = PyObject_CallOneArg(estimate, call);
    if (*result != NULL) {
        return 0;
    }
    rc = tsx_user_failed(&exc);
    if (rc > 0) {
        tsx_exception_text(exc, text, sizeof text);
        snprintf(message,
                 size,
                 "%s: %s: %s",
                 identity,
                 exc ? Py_TYPE(exc)->tp_name : "an exception",
                 text);
        Py_XDECREF(exc);
    }
    return rc;
}

/* ---- module readers
 * ---------------------------------------------------------- */

/* 1 when the class looks attributes up as nn.Module does: its
 * __getattr__ is nn.Module's and its __getattribute__ is object's (a
 * subclass overriding either decides for itself). Errors read as 0. */
static int
module_lookup(tsx_state *st, PyTypeObject *type)
{
    PyObject *ga = tsx_name(st, "__getattr__");
    PyObject *gab = tsx_name(st, "__getattribute__");
    int yes = 0;
    if (ga != NULL && gab != NULL && st->module_getattr == NULL) {
        PyObject *nn = PyImport_ImportModule("torch.nn");
        PyObject *cls = nn ? tsx_getattr(st, nn, "Module") : NULL;
        if (cls != NULL && PyType_Check(cls)) {
            st->module_getattr =
                Py_XNewRef(_PyType_Lookup((PyTypeObject *)cls, ga));
        }
        Py_XDECREF(cls);
        Py_XDECREF(nn);
    }
    if (ga != NULL && gab != NULL && st->module_getattr != NULL) {
        yes = _PyType_Lookup(type, ga) == st->module_getattr
              && _PyType_Lookup(type, gab) == st->object_getattribute;
    }
    Py_XDECREF(ga);
    Py_XDECREF(gab);
    PyErr_Clear();
    return yes;
}

/* getattr for nn.Module attributes. PyTorch keeps parameters, buffers and
 * submodules in the _parameters, _buffers and _modules dicts and finds them
 * through nn.Module.__getattr__, a Python function reached after the
 * ordinary lookup has failed (an AttributeError raised and cleared). When
 * the class does not define the name, the instance dict and then those
 * three dicts are read directly, in the order nn.Module.__getattr__ uses,
 * for classes that keep nn.Module's lookup; anything else takes the
 * ordinary lookup. New reference, or NULL with an exception. */
PyObject *
tsx_module_attr(tsx_state *st, PyObject *obj, const char *name)
{
    static const char *const stores[3] = {
        "_parameters", "_buffers", "_modules"};
    PyObject *n = tsx_name(st, name), *dict, *v = NULL;
    if (n == NULL) {
        return NULL;
    }
    if (_PyType_Lookup(Py_TYPE(obj), n) == NULL
        && module_lookup(st, Py_TYPE(obj))
        && (dict = PyObject_GenericGetDict(obj, NULL)) != NULL) {
        v = PyDict_GetItemWithError(dict, n);
        for (int i = 0; v == NULL && !PyErr_Occurred() && i < 3; i++) {
            PyObject *sn = tsx_name(st, stores[i]);
            PyObject *store = sn ? PyDict_GetItemWithError(dict, sn) : NULL;
            Py_XDECREF(sn);
            if (store != NULL && PyDict_CheckExact(store)) {
                v = PyDict_GetItemWithError(store, n);
            }
        }
        Py_XINCREF(v);
        Py_DECREF(dict);
        if (v != NULL || PyErr_Occurred()) {
            Py_DECREF(n);
            return v;
        }
    }
    PyErr_Clear(); /* no instance dict: the ordinary lookup decides */
    v = PyObject_GetAttr(obj, n);
    Py_DECREF(n);
    return v;
}

int
tsx_attr_int(tsx_state *st, PyObject *obj, const char *name, int64_t *out)
{
    PyObject *v = tsx_module_attr(st, obj, name);
    long long x;
    if (v == NULL) {
        return -1;
    }
    x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = x;
    return 0;
}

int
tsx_attr_real(tsx_state *st, PyObject *obj, const char *name, double *out)
{
    PyObject *v = tsx_module_attr(st, obj, name);
    double x;
    if (v == NULL) {
        return -1;
    }
    x = PyFloat_AsDouble(v);
    Py_DECREF(v);
    if (x == -1.0 && PyErr_Occurred()) {
        return -1;
    }
    *out = x;
    return 0;
}

/* 1 when the attribute is truthy, 0 when falsy, -1 on error. */
int
tsx_attr_true(tsx_state *st, PyObject *obj, const char *name)
{
    PyObject *v = tsx_module_attr(st, obj, name);
    int t;
    if (v == NULL) {
        return -1;
    }
    t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
}

/* 1 when the module has a parameter `name` that is not None. Native
 * families always register weight and bias (None when absent), so the
 * _parameters dict answers without nn.Module.__getattr__. */
int
tsx_param_present(tsx_state *st, PyObject *module, const char *name)
{
    PyObject *d, *item;
    int present = 0;
    if (tsx_optional_attr(st, module, "_parameters", &d) < 0) {
        return -1;
    }
    if (d != NULL && PyDict_Check(d)) {
        item = tsx_dict_get(st, d, name);
        present = item != NULL && item != Py_None;
    }
    Py_XDECREF(d);
    return present;
}

/* 1 when the attribute exists and is not None, 0 when not, -1 on error. */
int
tsx_attr_present(tsx_state *st, PyObject *obj, const char *name)
{
    PyObject *v = tsx_module_attr(st, obj, name);
    if (v == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(v);
    return v != Py_None;
}

/* Reads an int or a tuple of `rank` ints into out[]. */
int
tsx_attr_tuple(tsx_state *st,
               PyObject *obj,
               const char *name,
               int rank,
               int64_t *out,
               bool *is_int,
               bool *is_string)
{
    PyObject *v = tsx_module_attr(st, obj, name);
    int rc = -1;
    if (is_int != NULL) {
        *is_int = false;
    }
    if (is_string != NULL) {
        *is_string = false;
    }
    if (v == NULL) {
        return -1;
    }
    if (PyUnicode_Check(v) && is_string != NULL) {
        *is_string = true;
        rc = 0;
    }
    else if (PyLong_Check(v)) {
        long long x = PyLong_AsLongLong(v);
        if (!(x == -1 && PyErr_Occurred())) {
            for (int i = 0; i < rank; i++) {
                out[i] = x;
            }
            if (is_int != NULL) {
                *is_int = true;
            }
            rc = 0;
        }
    }
    else if (PyTuple_Check(v) || PyList_Check(v)) {
        PyObject *seq = PySequence_Fast(v, "");
        if (seq != NULL) {
            Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
            rc = 0;
            for (int i = 0; i < rank && rc == 0; i++) {
                /* A shorter tuple (MaxPool2d((2,))) repeats its last entry,
                 * as PyTorch's pooling does. */
                PyObject *item =
                    PySequence_Fast_GET_ITEM(seq, i < n ? i : n - 1);
                long long x = n ? PyLong_AsLongLong(item) : 0;
                if (x == -1 && PyErr_Occurred()) {
                    rc = -1;
                }
                out[i] = x;
            }
            Py_DECREF(seq);
        }
    }
    else {
        tsx_fail(PyExc_TypeError,
                 "unexpected %s of type %.100s",
                 name,
                 Py_TYPE(v)->tp_name);
    }
    Py_DECREF(v);
    return rc;
}

/* Reads a string attribute and sets *index to its position in `names`
 * (NULL terminated), or -1 when the value is not listed (the caller
 * refuses it). Returns -1 on error, else 0. */
int
tsx_attr_choice(tsx_state *st,
                PyObject *obj,
                const char *name,
                const char *const *names,
                int *index)
{
    PyObject *v = tsx_module_attr(st, obj, name);
    *index = -1;
    if (v == NULL) {
        return -1;
    }
    for (int i = 0; PyUnicode_Check(v) && names[i] != NULL; i++) {
        if (PyUnicode_CompareWithASCIIString(v, names[i]) == 0) {
            *index = i;
            break;
        }
    }
    Py_DECREF(v);
    return 0;
}

/* Reads an int attribute that may be None (Softmax's legacy dim). */
int
tsx_attr_int_or_none(
    tsx_state *st, PyObject *obj, const char *name, int64_t *out, bool *none)
{
    PyObject *v = tsx_module_attr(st, obj, name);
    if (v == NULL) {
        return -1;
    }
    *none = v == Py_None;
    *out = 0;
    if (!*none) {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred()) {
            Py_DECREF(v);
            return -1;
        }
        *out = x;
    }
    Py_DECREF(v);
    return 0;
}
