/* Custom module handlers (crawl_module(custom_modules=...)): matching a
 * module's class to a handler, running the callback, and normalising what
 * it returns into estimates and diagnostics (contract 1.10). */
#include <math.h>

#include "tsx.h"

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
tsx_handler_owns(PyObject *handler, unsigned *owns)
{
    PyObject *subtree = tsx_getattr(handler, "subtree_metrics");
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
tsx_handler_identity(PyObject *estimate)
{
    PyObject *module = tsx_getattr(estimate, "__module__");
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
    qualname = tsx_getattr(estimate, "__qualname__");
    if (qualname == NULL) {
        PyErr_Clear();
        qualname = PyType_GetQualName(Py_TYPE(estimate));
    }
    result = qualname ? PyUnicode_FromFormat("%S.%S", module, qualname) : NULL;
    Py_DECREF(module);
    Py_XDECREF(qualname);
    return result;
}

/* A finite, non-negative number (not a bool). 1 with *out set, 0 when
 * invalid (reason in `why`), -1 on error. */
static int
read_number(PyObject *v, ts_number *out, const char **why)
{
    if (PyBool_Check(v)) {
        *why = "a bool is not a count";
        return 0;
    }
    if (PyLong_Check(v) || (!PyFloat_Check(v) && PyIndex_Check(v))) {
        int overflow = 0;
        PyObject *i = PyNumber_Index(v);
        long long x = i ? PyLong_AsLongLongAndOverflow(i, &overflow) : -1;
        Py_XDECREF(i);
        if (x == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (overflow || x < 0) {
            *why = overflow ? "the integer is outside the 64-bit range"
                            : "a negative value is not a count";
            return 0;
        }
        *out = ts_int(x);
        return 1;
    }
    if (PyFloat_Check(v)) {
        double d = PyFloat_AS_DOUBLE(v);
        if (!isfinite(d) || d < 0) {
            *why = "the value must be finite and non-negative";
            return 0;
        }
        *out = ts_real(d);
        return 1;
    }
    *why = "expected a number, a MetricResult dict or None";
    return 0;
}

/* A caller-built MetricResult dict: 1 valid (status/value/method set),
 * 0 invalid (why), -1 error. */
static int
read_structured(PyObject *v,
                int which,
                ts_status *status,
                ts_number *value,
                const char **method,
                const char **why)
{
    static const char *const keys[6] = {
        "status", "value", "known_value", "unit", "scope", "method"};
    PyObject *items[6];
    const char *st, *unit;
    int parsed, rc;
    if (PyDict_GET_SIZE(v) != 6) {
        *why =
            "a MetricResult needs exactly status, value, known_value, "
            "unit, scope and method";
        return 0;
    }
    for (int i = 0; i < 6; i++) {
        items[i] = tsx_dict_get(v, keys[i]);
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
    st = PyUnicode_AsUTF8(items[0]);
    unit = PyUnicode_AsUTF8(items[3]);
    *method = PyUnicode_AsUTF8(items[5]);
    if (st == NULL || unit == NULL || *method == NULL) {
        return -1;
    }
    if (strcmp(unit, metric_units[which]) != 0) {
        *why = "the unit does not match the metric";
        return 0;
    }
    parsed = ts_status_parse(st);
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
    rc = read_number(items[2], value, why);
    if (rc <= 0) {
        return rc;
    }
    if (*status == TS_COMPLETE) {
        ts_number v2;
        rc = read_number(items[1], &v2, why);
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
    if (ts_session_set_estimate(
            s, layer, which, status, value, subtree, method)
            != TS_OK
        || (code != NULL
            && ts_session_add_diagnostic(
                   s, code, metric_names[which], layer, message)
                   != TS_OK)) {
        PyErr_NoMemory();
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

int
tsx_handler_run(const tsx_handler_call *h)
{
    PyObject *call = NULL, *result = NULL, *key, *value;
    PyObject *kwargs = NULL, *args = NULL;
    const char *identity = PyUnicode_AsUTF8(h->identity);
    char base[512], method[1024], message[1024];
    Py_ssize_t pos = 0;
    int rc = -1;

    if (identity == NULL) {
        return -1;
    }
    snprintf(base, sizeof base, "custom_module_handler:%s", identity);
    args = h->args ? Py_NewRef(h->args) : PyTuple_New(0);
    kwargs = h->kwargs ? Py_NewRef(h->kwargs) : PyDict_New();
    call = (args && kwargs) ? PyObject_CallFunctionObjArgs(
               h->module_call_cls, h->module, args, kwargs, h->output, NULL)
                            : NULL;
    if (call == NULL) {
        goto done;
    }
    tsx_counter_pause(h->counter, true);
    result = PyObject_CallOneArg(h->estimate, call);
    tsx_counter_pause(h->counter, false);
    if (result == NULL) {
        PyObject *exc = tsx_fetch(), *text;
        /* Interrupts are not the callback's estimate: they propagate. */
        if (!PyErr_GivenExceptionMatches(exc, PyExc_Exception)) {
            tsx_restore(exc);
            goto done;
        }
        text = PyObject_Str(exc);
        snprintf(message,
                 sizeof message,
                 "%s: %s: %s",
                 identity,
                 Py_TYPE(exc)->tp_name,
                 text ? PyUnicode_AsUTF8(text) : "");
        PyErr_Clear();
        Py_XDECREF(text);
        Py_DECREF(exc);
        rc = fail_all(h->session,
                      h->layer,
                      h->requested,
                      h->owns,
                      base,
                      "custom_handler_error",
                      message);
        goto done;
    }
    if (!PyDict_Check(result)) {
        snprintf(message,
                 sizeof message,
                 "%s: returned %s; expected a mapping of metric names to "
                 "estimates.",
                 identity,
                 Py_TYPE(result)->tp_name);
        rc = fail_all(h->session,
                      h->layer,
                      h->requested,
                      h->owns,
                      base,
                      "custom_handler_invalid",
                      message);
        goto done;
    }
    while (PyDict_Next(result, &pos, &key, &value)) {
        if (metric_index(key) < 0) {
            PyObject *r = PyObject_Repr(key);
            snprintf(message,
                     sizeof message,
                     "%s: unknown metric %s; supported: module_flops, macs, "
                     "dmas, receptive_field, effective_stride, "
                     "effective_padding.",
                     identity,
                     r ? PyUnicode_AsUTF8(r) : "?");
            PyErr_Clear();
            Py_XDECREF(r);
            rc = fail_all(h->session,
                          h->layer,
                          h->requested,
                          h->owns,
                          base,
                          "custom_handler_invalid",
                          message);
            goto done;
        }
    }
    for (int k = 0; k < 6; k++) {
        bool subtree = (h->owns >> k) & 1u;
        ts_status status = TS_COMPLETE;
        ts_number number = ts_int(0);
        const char *why = NULL, *supplied = NULL, *code = NULL;
        int ok;
        if (!(h->requested & (1u << k))) {
            continue; /* covered by an enclosing owner */
        }
        value = tsx_dict_get(result, metric_names[k]);
        if (value == NULL) {
            if (subtree) {
                /* an owned field stays unavailable: no fallback */
                snprintf(message,
                         sizeof message,
                         "%s: %s is owned for the subtree but was not "
                         "supplied.",
                         identity,
                         metric_names[k]);
                if (store(h->session,
                          h->layer,
                          k,
                          TS_UNAVAILABLE,
                          number,
                          true,
                          base,
                          "custom_metric_unavailable",
                          message)
                    < 0) {
                    goto done;
                }
            }
            continue; /* omitted: formulas or children answer */
        }
        if (value == Py_None) {
            status = TS_UNAVAILABLE;
            ok = 1;
        }
        else if (PyDict_Check(value)) {
            ok = read_structured(value, k, &status, &number, &supplied, &why);
        }
        else {
            ok = read_number(value, &number, &why);
        }
        if (ok < 0) {
            goto done;
        }
        if (supplied != NULL) {
            snprintf(method, sizeof method, "%s:%s", base, supplied);
        }
        else {
            snprintf(method, sizeof method, "%s", base);
        }
        if (ok == 0) {
            status = TS_UNAVAILABLE;
            code = "custom_metric_invalid";
            snprintf(message,
                     sizeof message,
                     "%s: %s: %s.",
                     identity,
                     metric_names[k],
                     why);
            snprintf(method, sizeof method, "%s", base);
        }
        else if (status == TS_PARTIAL) {
            code = "custom_metric_partial";
            snprintf(message,
                     sizeof message,
                     "%s: %s is partial; its known_value is a lower bound.",
                     identity,
                     metric_names[k]);
        }
        else if (status == TS_UNAVAILABLE) {
            code = "custom_metric_unavailable";
            snprintf(message,
                     sizeof message,
                     "%s: %s is unavailable.",
                     identity,
                     metric_names[k]);
        }
        if (store(h->session,
                  h->layer,
                  k,
                  status,
                  number,
                  subtree,
                  method,
                  code,
                  message)
            < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    Py_XDECREF(call);
    Py_XDECREF(result);
    return rc;
}
