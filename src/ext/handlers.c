/* Custom module handlers (crawl_module(custom_modules=...)): matching a
 * module's class to a handler, and normalising what its estimate returns
 * into estimates and diagnostics (contract 1.10). The estimate runs in
 * callbacks.c, with operator counting paused around it. */
#include <math.h>

#include "handlers.h"

static const char *const metric_names[6] = {"module_flops",
                                            "macs",
                                            "dmas",
                                            "receptive_field",
                                            "effective_stride",
                                            "effective_padding"};
static const char *const metric_units[6] = {
    "FLOPs", "MACs", "DMAs", "elements", "elements", "elements"};

static int
metric_index(PyObject *key)
{
    if (!PyUnicode_Check(key)) {
        return -1;
    }
    for (int i = 0; i < 6; i++) {
        if (PyUnicode_CompareWithASCIIString(key, metric_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

int
tsx_handler_match(PyObject *handlers, PyTypeObject *type, PyObject **handler)
{
    PyObject *mro = type->tp_mro;
    *handler = NULL;
    if (handlers == NULL || mro == NULL) {
        return 0;
    }
    /* The closest class in the MRO wins, whatever the mapping's order;
     * virtual subclasses (ABC registration) never match. */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyObject *h =
            PyDict_GetItemWithError(handlers, PyTuple_GET_ITEM(mro, i));
        if (h != NULL) {
            *handler = Py_NewRef(h);
            return 1;
        }
        if (PyErr_Occurred()) {
            return -1;
        }
    }
    return 0;
}

int
tsx_handler_owns(tsx_state *st, PyObject *handler, unsigned *owns)
{
    PyObject *subtree = tsx_getattr(st, handler, "subtree_metrics");
    PyObject *it, *item;
    *owns = 0;
    if (subtree == NULL) {
        return -1;
    }
    it = PyObject_GetIter(subtree);
    Py_DECREF(subtree);
    if (it == NULL) {
        return -1;
    }
    while ((item = PyIter_Next(it)) != NULL) {
        int k = metric_index(item);
        Py_DECREF(item);
        if (k >= 0) {
            *owns |= 1u << k;
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

PyObject *
tsx_handler_identity(tsx_state *st, PyObject *estimate)
{
    PyObject *module = tsx_getattr(st, estimate, "__module__");
    PyObject *qualname;
    PyObject *result;
    if (module == NULL || module == Py_None) {
        PyErr_Clear();
        Py_XDECREF(module);
        module = PyUnicode_FromString("<unknown>");
        if (module == NULL) {
            return NULL;
        }
    }
    qualname = tsx_getattr(st, estimate, "__qualname__");
    if (qualname == NULL) {
        PyErr_Clear();
        qualname = PyType_GetQualName(Py_TYPE(estimate));
    }
    result = qualname ? PyUnicode_FromFormat("%S.%S", module, qualname) : NULL;
    Py_DECREF(module);
    Py_XDECREF(qualname);
    return result;
}

/* A finite, non-negative number (not a bool), converted as callbacks.c
 * converts every number user code returns. 1 with *out set, 0 when invalid
 * (reason in `why`), -1 on an interrupt. */
static int
read_number(tsx_state *st, PyObject *v, ts_number *out, const char **why)
{
    ts_number n;
    switch (tsx_user_number(st, v, &n)) {
        case TSX_NUMBER_INT:
            if (n.i < 0) {
                *why = "a negative value is not a count";
                return 0;
            }
            *out = n;
            return 1;
        case TSX_NUMBER_REAL:
            if (!isfinite(n.r) || n.r < 0) {
                *why = "the value must be finite and non-negative";
                return 0;
            }
            *out = n;
            return 1;
        case TSX_NUMBER_TOO_LARGE:
        case TSX_NUMBER_TOO_SMALL:
            *why = "the integer is outside the 64-bit range";
            return 0;
        case TSX_NUMBER_BOOL:
            *why = "a bool is not a count";
            return 0;
        case TSX_NUMBER_NONE:
            *why = "expected a number, a MetricResult dict or None";
            return 0;
        default:
            return -1;
    }
}

/* A caller-built MetricResult dict: 1 valid (status/value/method set),
 * 0 invalid (why), -1 error. */
static int
read_structured(tsx_state *st,
                PyObject *v,
                int which,
                ts_status *status,
                ts_number *value,
                const char **method,
                const char **why)
{
    static const char *const keys[6] = {
        "status", "value", "known_value", "unit", "scope", "method"};
    PyObject *items[6];
    const char *text, *unit;
    int parsed, rc;
    if (PyDict_GET_SIZE(v) != 6) {
        *why =
            "a MetricResult needs exactly status, value, known_value, "
            "unit, scope and method";
        return 0;
    }
    for (int i = 0; i < 6; i++) {
        items[i] = tsx_dict_get(st, v, keys[i]);
        if (items[i] == NULL) {
            *why =
                "a MetricResult needs exactly status, value, known_value, "
                "unit, scope and method";
            return 0;
        }
    }
    if (!PyUnicode_Check(items[0]) || !PyUnicode_Check(items[3])
        || !PyUnicode_Check(items[4]) || !PyUnicode_Check(items[5])
        || PyUnicode_GET_LENGTH(items[4]) == 0
        || PyUnicode_GET_LENGTH(items[5]) == 0) {
        *why = "status, unit, scope and method must be non-empty strings";
        return 0;
    }
    text = PyUnicode_AsUTF8(items[0]);
    unit = PyUnicode_AsUTF8(items[3]);
    *method = PyUnicode_AsUTF8(items[5]);
    if (text == NULL || unit == NULL || *method == NULL) {
        return -1;
    }
    if (strcmp(unit, metric_units[which]) != 0) {
        *why = "the unit does not match the metric";
        return 0;
    }
    parsed = ts_status_parse(text);
    if (parsed < 0) {
        *why = "status must be complete, partial or unavailable";
        return 0;
    }
    *status = (ts_status)parsed;
    if (*status == TS_UNAVAILABLE) {
        if (items[1] != Py_None || items[2] != Py_None) {
            *why = "an unavailable metric has no value and no known_value";
            return 0;
        }
        *value = ts_int(0);
        return 1;
    }
    if (*status == TS_PARTIAL && items[1] != Py_None) {
        *why = "a partial metric has value None";
        return 0;
    }
    rc = read_number(st, items[2], value, why);
    if (rc <= 0) {
        return rc;
    }
    if (*status == TS_COMPLETE) {
        ts_number v2;
        rc = read_number(st, items[1], &v2, why);
        if (rc <= 0) {
            return rc;
        }
        if ((v2.is_real ? v2.r : (double)v2.i)
            != (value->is_real ? value->r : (double)value->i)) {
            *why = "a complete metric needs known_value equal to value";
            return 0;
        }
        *value = v2;
    }
    return 1;
}

/* Records one estimate and its diagnostic (code may be NULL). */
static int
store(ts_session *s,
      int layer,
      int which,
      ts_status status,
      ts_number value,
      bool subtree,
      const char *method,
      const char *code,
      const char *message)
{
    int rc = ts_session_set_estimate(
        s, layer, which, status, value, subtree, method);
    if (rc == TS_OK && code != NULL) {
        rc = ts_session_add_diagnostic(
            s, code, metric_names[which], layer, message);
    }
    if (rc != TS_OK) {
        tsx_raise_status(rc, NULL);
        return -1;
    }
    return 0;
}

/* Every requested metric unavailable with the same diagnostic. */
static int
fail_all(ts_session *s,
         int layer,
         unsigned requested,
         unsigned owns,
         const char *method,
         const char *code,
         const char *message)
{
    for (int k = 0; k < 6; k++) {
        if ((requested & (1u << k))
            && store(s,
                     layer,
                     k,
                     TS_UNAVAILABLE,
                     ts_int(0),
                     (owns >> k) & 1u,
                     method,
                     code,
                     message)
                   < 0) {
            return -1;
        }
    }
    return 0;
}


/* Every requested metric of the call unavailable with one diagnostic. */
static int
fail_call(const tsx_handler_call *h,
          const char *base,
          const char *code,
          const char *message)
{
    return fail_all(
        h->session, h->layer, h->requested, h->owns, base, code, message);
}

/* The ModuleCall the estimate receives (new reference, or NULL). */
static PyObject *
module_call(const tsx_handler_call *h)
{
    PyObject *args = h->args ? Py_NewRef(h->args) : PyTuple_New(0);
    PyObject *kwargs = h->kwargs ? Py_NewRef(h->kwargs) : PyDict_New();
    PyObject *call =
        (args && kwargs) ? PyObject_CallFunctionObjArgs(
            h->module_call_cls, h->module, args, kwargs, h->output, NULL)
                         : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return call;
}

/* A result that is not a dict of known metric names is invalid as a
 * whole: 1 when it was (the diagnostic is stored), 0 when it is a dict of
 * metrics, -1 on error. */
static int
invalid_result(const tsx_handler_call *h,
               PyObject *result,
               const char *identity,
               const char *base)
{
    char message[1024];
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    if (!PyDict_Check(result)) {
        snprintf(message,
                 sizeof message,
                 "%s: returned %s; expected a mapping of metric names to "
                 "estimates.",
                 identity,
                 Py_TYPE(result)->tp_name);
        return fail_call(h, base, "custom_handler_invalid", message) < 0 ? -1
                                                                         : 1;
    }
    while (PyDict_Next(result, &pos, &key, &value)) {
        if (metric_index(key) < 0) {
            PyObject *r = PyObject_Repr(key);
            const char *text = r ? PyUnicode_AsUTF8(r) : NULL;
            snprintf(message,
                     sizeof message,
                     "%s: unknown metric %s; supported: module_flops, macs, "
                     "dmas, receptive_field, effective_stride, "
                     "effective_padding.",
                     identity,
                     text ? text : "?");
            PyErr_Clear();
            Py_XDECREF(r);
            return fail_call(h, base, "custom_handler_invalid", message) < 0
                       ? -1
                       : 1;
        }
    }
    return 0;
}

/* Stores metric k of a result dict: its value, or what was wrong with it.
 * 0, or -1 with an exception. */
static int
store_metric(const tsx_handler_call *h,
             PyObject *result,
             int k,
             const char *identity,
             const char *base)
{
    char method[1024], message[1024];
    bool subtree = (h->owns >> k) & 1u;
    ts_status status = TS_COMPLETE;
    ts_number number = ts_int(0);
    const char *why = NULL, *supplied = NULL, *code = NULL;
    PyObject *value = tsx_dict_get(h->st, result, metric_names[k]);
    int ok;
    if (value == NULL) {
        if (!subtree) {
            return 0; /* omitted: formulas or children answer */
        }
        /* an owned field stays unavailable: no fallback */
        snprintf(message,
                 sizeof message,
                 "%s: %s is owned for the subtree but was not supplied.",
                 identity,
                 metric_names[k]);
        return store(h->session,
                     h->layer,
                     k,
                     TS_UNAVAILABLE,
                     number,
                     true,
                     base,
                     "custom_metric_unavailable",
                     message);
    }
    if (value == Py_None) {
        status = TS_UNAVAILABLE;
        ok = 1;
    }
    else if (PyDict_Check(value)) {
        ok = read_structured(
            h->st, value, k, &status, &number, &supplied, &why);
    }
    else {
        ok = read_number(h->st, value, &number, &why);
    }
    if (ok < 0) {
        return -1;
    }
    snprintf(method, sizeof method, "%s", base);
    if (ok == 0) {
        status = TS_UNAVAILABLE;
        code = "custom_metric_invalid";
        snprintf(message,
                 sizeof message,
                 "%s: %s: %s.",
                 identity,
                 metric_names[k],
                 why);
    }
    else if (supplied != NULL) {
        snprintf(method, sizeof method, "%s:%s", base, supplied);
    }
    if (ok == 1 && status == TS_PARTIAL) {
        code = "custom_metric_partial";
        snprintf(message,
                 sizeof message,
                 "%s: %s is partial; its known_value is a lower bound.",
                 identity,
                 metric_names[k]);
    }
    else if (ok == 1 && status == TS_UNAVAILABLE) {
        code = "custom_metric_unavailable";
        snprintf(message,
                 sizeof message,
                 "%s: %s is unavailable.",
                 identity,
                 metric_names[k]);
    }
    return store(h->session,
                 h->layer,
                 k,
                 status,
                 number,
                 subtree,
                 method,
                 code,
                 message);
}

int
tsx_handler_run(const tsx_handler_call *h)
{
    PyObject *call = NULL, *result = NULL;
    const char *identity = PyUnicode_AsUTF8(h->identity);
    char base[512], message[1024];
    int rc = -1;

    if (identity == NULL) {
        return -1;
    }
    snprintf(base, sizeof base, "custom_module_handler:%s", identity);
    call = module_call(h);
    if (call == NULL) {
        goto done;
    }
    tsx_counter_pause(h->counter, true);
    rc = tsx_run_estimate(
        h->estimate, call, identity, &result, message, sizeof message);
    tsx_counter_pause(h->counter, false);
    if (rc != 0) {
        /* an Exception: every requested metric unavailable */
        rc = rc < 0 ? -1 : fail_call(h, base, "custom_handler_error", message);
        goto done;
    }
    rc = invalid_result(h, result, identity, base);
    if (rc != 0) {
        rc = rc < 0 ? -1 : 0;
        goto done;
    }
    for (int k = 0; k < 6; k++) {
        /* an estimate an enclosing owner covers is not asked for */
        if ((h->requested & (1u << k))
            && store_metric(h, result, k, identity, base) < 0) {
            rc = -1;
            goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(call);
    Py_XDECREF(result);
    return rc;
}
