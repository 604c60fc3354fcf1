/* Module functions on reports (reports.h): comparison, the strict-mode
 * check, call metadata and the rendered pages (the summary table and its
 * text helpers are tables.c's). Each
 * converts its arguments once (convert.c) and lets the engine work. */
#include "fail.h"
#include "reports.h"

#include "torchscan/diff.h"
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
