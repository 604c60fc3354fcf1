/* Module functions of the workload measurements (measure.h): the peak of
 * profiler allocation events, profile rows, workload totals and summary,
 * benchmark comparison and the RSS supervisor's result line. Each converts
 * its arguments once and lets the engine work. */
#include "fail.h"
#include "measure.h"

#include "torchscan/memory.h"

#include "torchscan/benchmark.h"
#include "torchscan/profile.h"
#include "torchscan/rss.h"
#include "torchscan/stats.h"
#include "torchscan/workload.h"

/* tsx_to_json for a report: text that cannot be encoded (lone surrogates)
 * is a ValueError like every other non-JSON content. */
static json_t *
report_json(PyObject *obj, const char *what)
{
    json_t *j = tsx_to_json(obj, what);
    if (j == NULL && PyErr_ExceptionMatches(PyExc_UnicodeError)) {
        PyErr_Clear();
        tsx_fail(PyExc_ValueError, "%s holds invalid text", what);
    }
    return j;
}

/* ---- peak memory ----------------------------------------------------------
 */

/* Appends the CPU allocation events below `node` of a profiler event tree
 * (node.tag == Allocation: node.extra_fields.{ptr, alloc_size, device}),
 * in the order they were recorded. */
static int
collect_allocations(tsx_state *st,
                    PyObject *roots,
                    PyObject *alloc_tag,
                    ts_mem_event **buf,
                    size_t *n,
                    size_t *cap)
{
    PyObject *stack = PySequence_List(roots);
    int rc = -1;
    if (stack == NULL) {
        return -1;
    }
    /* depth first, in order: children are pushed last to first */
    if (PyList_Reverse(stack) < 0) {
        goto done;
    }
    while (PyList_GET_SIZE(stack) > 0) {
        Py_ssize_t top = PyList_GET_SIZE(stack) - 1;
        PyObject *node = Py_NewRef(PyList_GET_ITEM(stack, top));
        PyObject *tag = NULL, *fields = NULL, *dev = NULL, *type = NULL;
        PyObject *ptr = NULL, *size = NULL, *t = NULL, *kids = NULL;
        int is_alloc, ok = -1;
        if (PyList_SetSlice(stack, top, top + 1, NULL) < 0
            || (tag = tsx_getattr(st, node, "tag")) == NULL
            || (is_alloc = PyObject_RichCompareBool(tag, alloc_tag, Py_EQ))
                   < 0) {
            goto next;
        }
        if (is_alloc) {
            if ((fields = tsx_getattr(st, node, "extra_fields")) == NULL
                || (dev = tsx_getattr(st, fields, "device")) == NULL
                || (type = tsx_getattr(st, dev, "type")) == NULL
                || (ptr = tsx_getattr(st, fields, "ptr")) == NULL
                || (size = tsx_getattr(st, fields, "alloc_size")) == NULL
                || (t = tsx_getattr(st, node, "start_time_ns")) == NULL) {
                goto next;
            }
            if (PyUnicode_Check(type)
                && PyUnicode_CompareWithASCIIString(type, "cpu") == 0) {
                ts_mem_event ev = {0, 0, 0, 0};
                if (*n == *cap) {
                    size_t grown = *cap ? *cap * 2 : 256;
                    ts_mem_event *p =
                        PyMem_Realloc(*buf, grown * sizeof **buf);
                    if (p == NULL) {
                        PyErr_NoMemory();
                        goto next;
                    }
                    *buf = p;
                    *cap = grown;
                }
                ev.ptr = PyLong_AsUnsignedLongLongMask(ptr);
                ev.bytes = PyLong_AsLongLong(size);
                ev.time_ns = PyLong_AsLongLong(t);
                if (PyErr_Occurred()) {
                    goto next;
                }
                (*buf)[(*n)++] = ev;
            }
        }
        else {
            Py_ssize_t k;
            PyObject *children = tsx_getattr(st, node, "children");
            kids = children ? PySequence_Fast(children, "children") : NULL;
            Py_XDECREF(children);
            if (kids == NULL) {
                goto next;
            }
            for (k = PySequence_Fast_GET_SIZE(kids) - 1; k >= 0; k--) {
                if (PyList_Append(stack, PySequence_Fast_GET_ITEM(kids, k))
                    < 0) {
                    goto next;
                }
            }
        }
        ok = 0;
    next:
        Py_DECREF(node);
        Py_XDECREF(tag);
        Py_XDECREF(fields);
        Py_XDECREF(dev);
        Py_XDECREF(type);
        Py_XDECREF(ptr);
        Py_XDECREF(size);
        Py_XDECREF(t);
        Py_XDECREF(kids);
        if (ok < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    Py_DECREF(stack);
    return rc;
}

/* Peak of the CPU allocations of a profiler run: (event-tree roots,
 * Allocation tag) -> peak bytes, or None when there was no CPU allocation
 * event. */
PyObject *
tsx_engine_memory_peak(PyObject *module, PyObject *args)
{
    PyObject *roots, *alloc_tag, *result = NULL;
    ts_mem_event *buf = NULL;
    size_t n = 0, cap = 0;
    int64_t peak = 0;
    int rc;
    if (!PyArg_ParseTuple(args, "OO:memory_peak", &roots, &alloc_tag)) {
        return NULL;
    }
    if (collect_allocations(
            tsx_get_state(module), roots, alloc_tag, &buf, &n, &cap)
        < 0) {
        goto done;
    }
    if (n == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    rc = ts_memory_peak(buf, n, &peak);
    result = rc == TS_OK
                 ? PyLong_FromLongLong(peak)
                 : tsx_raise_status(
                     rc, rc == TS_EOVERFLOW ? "memory peak overflows" : NULL);
done:
    PyMem_Free(buf);
    return result;
}


/* ---- profile rows ------------------------------------------------------- */

/* Reads a float attribute; *found is false when it is missing or None. */
static int
float_attr(
    tsx_state *st, PyObject *obj, const char *name, double *out, bool *found)
{
    PyObject *v = NULL;
    int rc = tsx_optional_attr(st, obj, name, &v);
    *found = false;
    if (rc <= 0 || v == Py_None) {
        Py_XDECREF(v);
        return rc;
    }
    *out = PyFloat_AsDouble(v);
    Py_DECREF(v);
    if (*out == -1.0 && PyErr_Occurred()) {
        return -1;
    }
    *found = true;
    return 0;
}

static int
int_attr(tsx_state *st, PyObject *obj, const char *name, int64_t *out)
{
    PyObject *v = tsx_getattr(st, obj, name);
    long long value;
    if (v == NULL) {
        return -1;
    }
    value = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (int64_t)value;
    return 0;
}

/* Reads one key_averages group into a row; keeps the objects the row
 * points into (*key, *shapes) for the caller to release. */
static int
read_profile_row(tsx_state *st,
                 PyObject *ev,
                 bool device,
                 ts_profile_row *row,
                 PyObject **key,
                 json_t **shapes)
{
    PyObject *obj;
    bool found;
    double cpu = 0.0;
    *key = tsx_getattr(st, ev, "key");
    if (*key == NULL) {
        return -1;
    }
    if (!PyUnicode_Check(*key)) {
        tsx_fail(PyExc_TypeError, "profiler keys must be str");
        return -1;
    }
    row->op = PyUnicode_AsUTF8(*key);
    obj = row->op != NULL ? tsx_getattr(st, ev, "input_shapes") : NULL;
    if (obj == NULL) {
        return -1;
    }
    *shapes = obj == Py_None ? NULL : report_json(obj, "input_shapes");
    if (obj != Py_None && *shapes == NULL) {
        Py_DECREF(obj);
        return -1;
    }
    Py_DECREF(obj);
    row->input_shapes = *shapes;
    if (int_attr(st, ev, "count", &row->calls) < 0
        || int_attr(st, ev, "self_cpu_memory_usage", &row->cpu_net_bytes) < 0
        || float_attr(st, ev, "self_cpu_time_total", &cpu, &found) < 0) {
        return -1;
    }
    row->cpu_self_seconds = cpu / 1e6;
    if (device) {
        double dev = 0.0;
        if (float_attr(st, ev, "self_device_time_total", &dev, &found) < 0) {
            return -1;
        }
        if (!found
            && float_attr(st, ev, "self_cuda_time_total", &dev, &found) < 0) {
            return -1;
        }
        row->has_device_time = found;
        row->device_self_seconds = dev / 1e6;
    }
    return 0;
}

/* profile_rows(events, device_time_supported, limit) -> [row, ...]: the
 * key_averages groups read once, sorted and limited by the engine. */
PyObject *
tsx_engine_profile_rows(PyObject *module, PyObject *args)
{
    tsx_state *st = tsx_get_state(module);
    PyObject *events;
    PyObject *seq = NULL;
    PyObject **keys = NULL;
    json_t **shapes = NULL;
    ts_profile_row *rows = NULL;
    PyObject *result = NULL;
    json_t *out = NULL;
    int device = 0;
    Py_ssize_t limit;
    Py_ssize_t n = 0;
    ts_error err;
    if (!PyArg_ParseTuple(
            args, "Opn:profile_rows", &events, &device, &limit)) {
        return NULL;
    }
    if (limit < 1) {
        tsx_fail(PyExc_ValueError, "limit must be at least 1");
        return NULL;
    }
    seq = PySequence_Fast(events, "events must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    keys = PyMem_Calloc((size_t)n + 1, sizeof *keys);
    shapes = PyMem_Calloc((size_t)n + 1, sizeof *shapes);
    rows = PyMem_Calloc((size_t)n + 1, sizeof *rows);
    if (keys == NULL || shapes == NULL || rows == NULL) {
        PyErr_NoMemory();
        goto cleanup;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (read_profile_row(st,
                             PySequence_Fast_GET_ITEM(seq, i),
                             device != 0,
                             &rows[i],
                             &keys[i],
                             &shapes[i])
            < 0) {
            goto cleanup;
        }
    }
    ts_error_clear(&err);
    out = ts_profile_rows(rows, (size_t)n, (size_t)limit, device != 0, &err);
    result = out != NULL ? tsx_from_json(st, out) : tsx_raise(&err);
cleanup:
    json_decref(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (keys != NULL) {
            Py_XDECREF(keys[i]);
        }
        if (shapes != NULL) {
            json_decref(shapes[i]);
        }
    }
    PyMem_Free(keys);
    PyMem_Free(shapes);
    PyMem_Free(rows);
    Py_DECREF(seq);
    return result;
}

/* ---- workload reports --------------------------------------------------- */

/* workload_totals(measured, selected, work_unit, memory_scope=None,
 * memory_method=None) -> every total of a workload report. */
PyObject *
tsx_engine_workload_totals(PyObject *module, PyObject *args)
{
    PyObject *measured;
    unsigned int selected;
    const char *work_unit;
    const char *memory_scope = NULL;
    const char *memory_method = NULL;
    json_t *jm = NULL;
    json_t *totals = NULL;
    PyObject *result = NULL;
    ts_error err;
    if (!PyArg_ParseTuple(args,
                          "O!Is|zz:workload_totals",
                          &PyDict_Type,
                          &measured,
                          &selected,
                          &work_unit,
                          &memory_scope,
                          &memory_method)) {
        return NULL;
    }
    jm = report_json(measured, "measured totals");
    if (jm == NULL) {
        return NULL;
    }
    ts_error_clear(&err);
    totals = ts_workload_totals(
        jm, selected, work_unit, memory_scope, memory_method, &err);
    result = totals != NULL ? tsx_from_json(tsx_get_state(module), totals)
                            : tsx_raise(&err);
    json_decref(totals);
    json_decref(jm);
    return result;
}

/* workload_achieved(totals, peak_flops) -> (totals with achieved_flops
 * and, for peak_flops > 0, flops_utilization; the diagnostics of those that
 * are unavailable). */
PyObject *
tsx_engine_workload_achieved(PyObject *module, PyObject *args)
{
    PyObject *totals, *result = NULL;
    double peak = 0.0;
    json_t *jt, *diags = NULL;
    ts_error err;
    if (!PyArg_ParseTuple(
            args, "O!d:workload_achieved", &PyDict_Type, &totals, &peak)) {
        return NULL;
    }
    jt = report_json(totals, "totals");
    if (jt == NULL) {
        return NULL;
    }
    diags = json_array();
    ts_error_clear(&err);
    if (diags == NULL) {
        ts_error_set(&err, TS_ENOMEM, "out of memory");
    }
    if (diags == NULL
        || ts_workload_achieved(jt, peak, diags, &err) != TS_OK) {
        result = tsx_raise(&err);
    }
    else {
        PyObject *t = tsx_from_json(tsx_get_state(module), jt);
        PyObject *d = t ? tsx_from_json(tsx_get_state(module), diags) : NULL;
        result = d ? PyTuple_Pack(2, t, d) : NULL;
        Py_XDECREF(t);
        Py_XDECREF(d);
    }
    json_decref(diags);
    json_decref(jt);
    return result;
}

PyObject *
tsx_engine_workload_summary(PyObject *module, PyObject *report)
{
    json_t *j = report_json(report, "report");
    char *text = NULL;
    PyObject *result = NULL;
    ts_error err;
    if (j == NULL) {
        return NULL;
    }
    ts_error_clear(&err);
    text = ts_workload_summary(j, &err);
    result = text != NULL ? PyUnicode_FromString(text) : tsx_raise(&err);
    free(text);
    json_decref(j);
    return result;
}

/* ---- benchmark comparison ----------------------------------------------- */

/* compare_benchmarks(before, after, check) -> BenchmarkComparison. The
 * check runs after every validation and outside any timing. */
PyObject *
tsx_engine_compare_benchmarks(PyObject *module, PyObject *args)
{
    PyObject *before;
    PyObject *after;
    PyObject *check;
    PyObject *outcome = NULL;
    PyObject *result = NULL;
    json_t *jb = NULL;
    json_t *ja = NULL;
    json_t *diffs = NULL;
    json_t *comparison = NULL;
    bool passed;
    ts_error err;
    if (!PyArg_ParseTuple(
            args, "OOO:compare_benchmarks", &before, &after, &check)) {
        return NULL;
    }
    if (!PyCallable_Check(check)) {
        tsx_fail(PyExc_TypeError, "check must be callable.");
        return NULL;
    }
    jb = report_json(before, "before");
    ja = jb != NULL ? report_json(after, "after") : NULL;
    if (ja == NULL) {
        goto cleanup;
    }
    ts_error_clear(&err);
    if (ts_benchmark_prepare(jb, ja, &diffs, &err) != TS_OK) {
        tsx_raise(&err);
        goto cleanup;
    }
    outcome = PyObject_CallNoArgs(check);
    if (outcome == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AssertionError)) {
            goto cleanup; /* any other exception propagates */
        }
        PyErr_Clear();
        passed = false;
    }
    else if (outcome == Py_None || outcome == Py_True) {
        passed = true;
    }
    else if (outcome == Py_False) {
        passed = false;
    }
    else {
        tsx_fail(
            PyExc_ValueError,
            "check must return None/True on success or False on failure.");
        goto cleanup;
    }
    comparison = ts_benchmark_comparison(jb, ja, diffs, passed, &err);
    diffs = NULL; /* stolen */
    result = comparison != NULL
                 ? tsx_from_json(tsx_get_state(module), comparison)
                 : tsx_raise(&err);
cleanup:
    Py_XDECREF(outcome);
    json_decref(comparison);
    json_decref(diffs);
    json_decref(jb);
    json_decref(ja);
    return result;
}

/* ---- RSS supervisor ----------------------------------------------------- */

/* rss_parse(line: str) -> (outcome, code, peak_bytes) */
PyObject *
tsx_engine_rss_parse(PyObject *module, PyObject *args)
{
    const char *line;
    ts_rss_result r;
    ts_error err;
    if (!PyArg_ParseTuple(args, "s:rss_parse", &line)) {
        return NULL;
    }
    ts_error_clear(&err);
    if (ts_rss_parse(line, &r, &err) != TS_OK) {
        return tsx_raise(&err);
    }
    return Py_BuildValue("(siL)",
                         ts_rss_outcome_name(r.outcome),
                         r.code,
                         (long long)r.peak_bytes);
}

int
tsx_measure_constants(PyObject *module)
{
    if (PyModule_AddIntConstant(
            module, "WORKLOAD_LATENCY", TS_WORKLOAD_LATENCY)
            < 0
        || PyModule_AddIntConstant(
               module, "WORKLOAD_THROUGHPUT", TS_WORKLOAD_THROUGHPUT)
               < 0
        || PyModule_AddIntConstant(module, "WORKLOAD_FLOPS", TS_WORKLOAD_FLOPS)
               < 0
        || PyModule_AddIntConstant(
               module, "WORKLOAD_MEMORY", TS_WORKLOAD_MEMORY)
               < 0
        || PyModule_AddIntConstant(module, "WORKLOAD_RSS", TS_WORKLOAD_RSS) < 0
        || PyModule_AddIntConstant(
               module, "WORKLOAD_ACHIEVED", TS_WORKLOAD_ACHIEVED)
               < 0
        || PyModule_AddStringConstant(module, "TIMER_METHOD", TS_TIMER_METHOD)
               < 0
        || PyModule_AddStringConstant(
               module, "FIRST_CALL_METHOD", TS_FIRST_CALL_METHOD)
               < 0) {
        return -1;
    }
    return 0;
}
