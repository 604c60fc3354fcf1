/* Module functions on reports (reports.h): comparison, the strict-mode
 * check, call metadata and the rendered pages (the summary table and its
 * text helpers are tables.c's). Each
 * converts its arguments once (convert.c) and lets the engine work. */
#include "fail.h"
#include "reports.h"

#include "torchscan/diff.h"
#include "torchscan/emit.h"
#include "torchscan/gather.h"
#include "torchscan/render.h"
#include "torchscan/session.h"

/* (before, after) -> an engine comparison of their JSON forms. */
static PyObject *
compare_pair(PyObject *module,
             PyObject *args,
             const char *format,
             json_t *(*compare)(const json_t *, const json_t *, ts_error *))
{
    PyObject *before, *after, *result = NULL;
    json_t *jb = NULL, *ja = NULL, *diff = NULL;
    ts_error err;
    if (!PyArg_ParseTuple(args, format, &before, &after)) {
        return NULL;
    }
    jb = tsx_to_json(before, "before");
    ja = jb ? tsx_to_json(after, "after") : NULL;
    if (ja == NULL) {
        goto done;
    }
    ts_error_clear(&err);
    diff = compare(jb, ja, &err);
    result =
        diff ? tsx_from_json(tsx_get_state(module), diff) : tsx_raise(&err);
done:
    json_decref(jb);
    json_decref(ja);
    json_decref(diff);
    return result;
}

PyObject *
tsx_engine_compare_reports(PyObject *module, PyObject *args)
{
    return compare_pair(
        module, args, "OO:compare_reports", ts_compare_reports);
}

PyObject *
tsx_engine_diff_metrics(PyObject *module, PyObject *args)
{
    return compare_pair(module, args, "OO:diff_metrics", ts_diff_metrics);
}

PyObject *
tsx_engine_incomplete(PyObject *module, PyObject *report)
{
    json_t *j = tsx_to_json(report, "report");
    char *message = NULL;
    bool incomplete;
    PyObject *result;
    if (j == NULL) {
        return NULL;
    }
    incomplete = ts_report_incomplete(j, &message);
    json_decref(j);
    if (message == NULL) {
        return tsx_raise_status(TS_ENOMEM, NULL);
    }
    result = Py_BuildValue("(Os)", incomplete ? Py_True : Py_False, message);
    free(message);
    return result;
}

PyObject *
tsx_engine_describe_call(PyObject *module, PyObject *args)
{
    PyObject *call_args, *call_kwargs, *result;
    json_t *meta;
    if (!PyArg_ParseTuple(args,
                          "O!O!:describe_call",
                          &PyTuple_Type,
                          &call_args,
                          &PyDict_Type,
                          &call_kwargs)) {
        return NULL;
    }
    meta = tsx_describe_call(
        tsx_get_state(module), call_args, call_kwargs, NULL, NULL);
    if (meta == NULL) {
        return NULL;
    }
    result = tsx_from_json(tsx_get_state(module), meta);
    json_decref(meta);
    return result;
}

/* The UTF-8 text of a page title; NULL with ValueError for text that is
 * not valid (lone surrogates) or holds NUL. */
static const char *
title_text(PyObject *title)
{
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(title, &len);
    if (text == NULL || strlen(text) != (size_t)len) {
        PyErr_Clear();
        tsx_fail(PyExc_ValueError, "title holds invalid text");
        return NULL;
    }
    return text;
}

/* A report's JSON form; invalid text reads as ValueError naming `what`. */
static json_t *
report_json(PyObject *report, const char *what)
{
    json_t *j = tsx_to_json(report, what);
    if (j == NULL && PyErr_ExceptionMatches(PyExc_UnicodeError)) {
        PyErr_Clear();
        tsx_fail(PyExc_ValueError, "%s holds invalid text", what);
    }
    return j;
}

/* render_benchmark_html(report, title) -> the benchmark HTML page. */
PyObject *
tsx_engine_render_benchmark_html(PyObject *module, PyObject *args)
{
    PyObject *report, *title, *result = NULL;
    const char *text;
    json_t *j = NULL;
    char *html = NULL;
    ts_error err;
    if (!PyArg_ParseTuple(args, "OU:render_benchmark_html", &report, &title)
        || (text = title_text(title)) == NULL
        || (j = report_json(report, "report")) == NULL) {
        return NULL;
    }
    ts_error_clear(&err);
    html = ts_render_benchmark_html(j, text, &err);
    json_decref(j);
    result = html != NULL ? PyUnicode_FromString(html) : tsx_raise(&err);
    free(html);
    return result;
}

/* render_analysis(report, before, title, metric, format) -> the HTML page
 * or SVG of an AnalysisReport; before is None or the earlier report. */
PyObject *
tsx_engine_render_analysis(PyObject *module, PyObject *args)
{
    PyObject *report, *before, *title, *result = NULL;
    const char *text, *metric, *format;
    json_t *jr = NULL, *jb = NULL;
    char *page = NULL;
    ts_error err;
    if (!PyArg_ParseTuple(args,
                          "OOUss:render_analysis",
                          &report,
                          &before,
                          &title,
                          &metric,
                          &format)
        || (text = title_text(title)) == NULL
        || (jr = report_json(report, "report")) == NULL) {
        return NULL;
    }
    if (before != Py_None && (jb = report_json(before, "before")) == NULL) {
        goto done;
    }
    ts_error_clear(&err);
    page = ts_render_analysis(jr, jb, text, metric, format, &err);
    result = page != NULL ? PyUnicode_FromString(page) : tsx_raise(&err);
done:
    json_decref(jr);
    json_decref(jb);
    free(page);
    return result;
}

/* gather_shape(report) -> the shape every rank must share (gather.h). */
PyObject *
tsx_engine_gather_shape(PyObject *module, PyObject *report)
{
    json_t *j = tsx_to_json(report, "report"), *shape;
    PyObject *result;
    ts_error err;
    if (j == NULL) {
        return NULL;
    }
    ts_error_clear(&err);
    shape = ts_gather_shape(j, &err);
    json_decref(j);
    result =
        shape ? tsx_from_json(tsx_get_state(module), shape) : tsx_raise(&err);
    json_decref(shape);
    return result;
}

/* The posted statuses (a list of JSON texts, bytes) as one JSON array; a
 * text that does not parse is that rank's error. */
static json_t *
parse_statuses(PyObject *texts)
{
    json_t *statuses = json_array();
    if (statuses == NULL) {
        return (json_t *)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(texts); i++) {
        char *data;
        Py_ssize_t len;
        json_t *status;
        if (PyBytes_AsStringAndSize(PyList_GET_ITEM(texts, i), &data, &len)
            < 0) {
            json_decref(statuses);
            return NULL;
        }
        status = json_loadb(data, (size_t)len, 0, NULL);
        if (status == NULL) {
            status = json_pack("{s:{s:s, s:s}}",
                               "error",
                               "type",
                               "RuntimeError",
                               "message",
                               "its gather_reports status is not JSON");
        }
        if (json_array_append_new(statuses, status)) {
            json_decref(statuses);
            return (json_t *)PyErr_NoMemory();
        }
    }
    return statuses;
}

/* gather_check(statuses, ranks) -> None when the ranks can gather, else
 * (exception type name, message): every rank computes the same answer from
 * the same statuses, and raises it itself. */
PyObject *
tsx_engine_gather_check(PyObject *module, PyObject *args)
{
    PyObject *texts, *ranks, *result = NULL;
    json_t *statuses = NULL, *jranks = NULL;
    char type[32];
    ts_error err;
    int rc;
    if (!PyArg_ParseTuple(args,
                          "O!O!:gather_check",
                          &PyList_Type,
                          &texts,
                          &PyList_Type,
                          &ranks)) {
        return NULL;
    }
    statuses = parse_statuses(texts);
    jranks = statuses ? tsx_to_json(ranks, "ranks") : NULL;
    if (jranks == NULL) {
        goto done;
    }
    ts_error_clear(&err);
    rc = ts_gather_check(statuses, jranks, type, sizeof type, &err);
    if (rc == TS_OK) {
        result = Py_NewRef(Py_None);
    }
    else if (rc == TS_EINVAL) {
        result = Py_BuildValue("(ss)", type, err.message);
    }
    else {
        result = tsx_raise(&err);
    }
done:
    json_decref(statuses);
    json_decref(jranks);
    return result;
}

/* dict[key] for a C string key, borrowed: NULL when absent, or NULL with
 * an exception (PyDict_GetItemString would drop a failure to make the key
 * and read the item as absent: a report without its totals). */
static int
dict_item(PyObject *dict, const char *key, PyObject **out)
{
    PyObject *k = PyUnicode_FromString(key);
    if (k == NULL) {
        return -1;
    }
    *out = PyDict_GetItemWithError(dict, k);
    Py_DECREF(k);
    return *out == NULL && PyErr_Occurred() ? -1 : 0;
}

/* The parts of one rank's report that the GatheredReport reads, as JSON:
 * its totals, its operator FLOPs (a FlopReport's own fields), and each
 * layer call's path, call_index and metrics. The rest (input and output
 * descriptions, attribution, diagnostics: most of a report) is not
 * converted, so a large report costs what its metrics cost. */
static json_t *
gathered_parts(PyObject *report)
{
    static const char *const whole[] = {"schema_version",
                                        "totals",
                                        "operator_flops",
                                        "measurement",
                                        "total",
                                        "by_operator",
                                        "collectives",
                                        "collective_bytes"};
    static const char *const row_keys[] = {"path", "call_index", "metrics"};
    PyObject *layers, *value;
    json_t *out, *rows, *item;
    if (!PyDict_Check(report)) {
        return tsx_to_json(report, "reports[]"); /* refused there */
    }
    out = json_object();
    if (out == NULL) {
        return (json_t *)PyErr_NoMemory();
    }
    for (size_t k = 0; k < sizeof whole / sizeof whole[0]; k++) {
        if (dict_item(report, whole[k], &value) < 0) {
            json_decref(out);
            return NULL;
        }
        if (value == NULL) {
            continue;
        }
        item = tsx_to_json(value, whole[k]);
        if (item == NULL || json_object_set_new(out, whole[k], item)) {
            json_decref(out);
            return item == NULL ? NULL : (json_t *)PyErr_NoMemory();
        }
    }
    if (dict_item(report, "layers", &layers) < 0) {
        json_decref(out);
        return NULL;
    }
    if (layers == NULL || !PyList_Check(layers)) {
        return out;
    }
    rows = json_array();
    if (rows == NULL || json_object_set_new(out, "layers", rows)) {
        json_decref(out);
        return (json_t *)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(layers); i++) {
        PyObject *layer = PyList_GET_ITEM(layers, i);
        json_t *row = json_object();
        if (row == NULL || json_array_append_new(rows, row)) {
            json_decref(out);
            return (json_t *)PyErr_NoMemory();
        }
        for (size_t k = 0; PyDict_Check(layer) && k < 3; k++) {
            if (dict_item(layer, row_keys[k], &value) < 0) {
                json_decref(out);
                return NULL;
            }
            item = value ? tsx_to_json(value, row_keys[k]) : NULL;
            if (value != NULL
                && (item == NULL
                    || json_object_set_new(row, row_keys[k], item))) {
                json_decref(out);
                return item == NULL ? NULL : (json_t *)PyErr_NoMemory();
            }
        }
    }
    return out;
}

/* gather_reports(reports, ranks) -> the GatheredReport (gather.h), written
 * by the engine straight into Python objects. The reports themselves are
 * not in it: gather.py attaches the objects it received. */
PyObject *
tsx_engine_gather_reports(PyObject *module, PyObject *args)
{
    PyObject *reports, *ranks, *result = NULL;
    json_t *jreports = NULL, *jranks = NULL;
    tsx_pybuilder *b;
    ts_emitter e;
    ts_error err;
    if (!PyArg_ParseTuple(args,
                          "O!O!:gather_reports",
                          &PyList_Type,
                          &reports,
                          &PyList_Type,
                          &ranks)) {
        return NULL;
    }
    jreports = json_array();
    for (Py_ssize_t i = 0; jreports != NULL && i < PyList_GET_SIZE(reports);
         i++) {
        json_t *parts = gathered_parts(PyList_GET_ITEM(reports, i));
        if (parts == NULL || json_array_append_new(jreports, parts)) {
            json_decref(jreports);
            jreports = NULL;
        }
    }
    if (jreports == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        return NULL;
    }
    jranks = tsx_to_json(ranks, "ranks");
    b = jranks ? tsx_pybuilder_new(&e, tsx_get_state(module)) : NULL;
    if (b != NULL) {
        ts_error_clear(&err);
        if (ts_gather_emit(jreports, jranks, false, &e, &err) == TS_OK) {
            result = tsx_pybuilder_finish(b);
        }
        else {
            /* the partial value is dropped; the engine's error is raised */
            Py_XDECREF(tsx_pybuilder_finish(b));
            PyErr_Clear();
            tsx_raise(&err);
        }
    }
    json_decref(jreports);
    json_decref(jranks);
    return result;
}
