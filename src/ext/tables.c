/* The summary table and 0.2.0's table-text helpers (tables.h). Python
 * checks the arguments' types; each function here converts them once and
 * the engine (src/core/table.c, table_text.c) writes the text.
 *
 * Text goes to the engine as UTF-8 with Python's "surrogatepass", so that
 * any str (lone surrogates and NUL characters included) comes back as
 * 0.2.0's Python would give it; the engine counts a surrogate's three bytes
 * as one code point. Reports and layers go through the JSON conversion
 * (convert.c), whose rules they already follow. */
#include "fail.h"
#include "tables.h"

#include "torchscan/report_check.h"
#include "torchscan/table.h"

/* ---- arguments ---- */

/* The UTF-8 bytes of a str (surrogatepass): a new bytes object, or NULL
 * with TypeError naming `what` for anything else. */
static PyObject *
text_bytes(PyObject *text, const char *what)
{
    if (!PyUnicode_Check(text)) {
        return tsx_fail(PyExc_TypeError,
                        "%s must be a str, got %.100s.",
                        what,
                        Py_TYPE(text)->tp_name);
    }
    return PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass");
}

/* An engine text as a str (surrogatepass), freeing it; NULL after an
 * engine error. */
static PyObject *
text_result(int rc, ts_table_text *t, const ts_error *err)
{
    PyObject *result;
    if (rc != TS_OK) {
        return tsx_raise(err);
    }
    result =
        PyUnicode_DecodeUTF8(t->data, (Py_ssize_t)t->len, "surrogatepass");
    free(t->data);
    t->data = NULL;
    return result;
}

/* None: no wrap; "mid", "end"; any other str: TS_WRAP_UNKNOWN, refused
 * only when a text needs shortening (strict: refused now). */
static int
wrap_mode(PyObject *mode, bool strict, ts_wrap_mode *out)
{
    if (mode == Py_None) {
        *out = TS_WRAP_NONE;
        return 0;
    }
    if (PyUnicode_Check(mode)
        && PyUnicode_CompareWithASCIIString(mode, "mid") == 0) {
        *out = TS_WRAP_MID;
        return 0;
    }
    if (PyUnicode_Check(mode)
        && PyUnicode_CompareWithASCIIString(mode, "end") == 0) {
        *out = TS_WRAP_END;
        return 0;
    }
    if (strict || !PyUnicode_Check(mode)) {
        tsx_fail(strict ? PyExc_ValueError : PyExc_TypeError,
                 strict ? "wrap_mode must be 'mid', 'end' or None."
                        : "mode must be a str or None.");
        return -1;
    }
    *out = TS_WRAP_UNKNOWN;
    return 0;
}

/* max_depth: absent or negative -> -1 (every row); beyond a C int -> the
 * deepest int, which the table refuses as deeper than the model. */
static int
table_depth(PyObject *depth, int *out)
{
    int overflow = 0;
    long long value;
    *out = -1;
    if (depth == NULL) {
        return 0;
    }
    value = PyLong_AsLongLongAndOverflow(depth, &overflow);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow > 0 || value > INT_MAX) {
        *out = INT_MAX;
    }
    else if (overflow == 0 && value >= 0) {
        *out = (int)value;
    }
    return 0;
}

/* ---- the table ---- */

static PyObject *
summary(PyObject *args, PyObject *kwds, const char *format, bool checked)
{
    static char *kwlist[] = {"report",
                             "wrap_mode",
                             "receptive_field",
                             "effective_rf_stats",
                             "max_depth",
                             NULL};
    PyObject *report, *wrap = Py_None, *depth = NULL, *result = NULL;
    int rf = 0, stats = 0;
    ts_table_options opt;
    json_t *j = NULL;
    char *text = NULL;
    ts_error err;
    if (!PyArg_ParseTupleAndKeywords(args,
                                     kwds,
                                     format,
                                     kwlist,
                                     &report,
                                     &wrap,
                                     &rf,
                                     &stats,
                                     &PyLong_Type,
                                     &depth)
        || wrap_mode(wrap, true, &opt.wrap_mode) < 0
        || table_depth(depth, &opt.max_depth) < 0) {
        return NULL;
    }
    opt.receptive_field = rf;
    opt.effective_rf_stats = stats;
    j = tsx_to_json(report, "report");
    if (j == NULL) {
        return NULL;
    }
    ts_error_clear(&err);
    if (!checked || ts_analysis_report_check(j, "report", &err) == TS_OK) {
        text = ts_format_summary(j, &opt, &err);
    }
    json_decref(j);
    if (text == NULL) {
        return tsx_raise(&err);
    }
    result = PyUnicode_FromString(text);
    free(text);
    return result;
}

PyObject *
tsx_engine_format_summary(PyObject *module, PyObject *args, PyObject *kwds)
{
    return summary(args, kwds, "O|OppO!:format_summary", false);
}

PyObject *
tsx_engine_format_report(PyObject *module, PyObject *args, PyObject *kwds)
{
    return summary(args, kwds, "O|OppO!:format_report", true);
}

/* ---- one value at a time ---- */

PyObject *
tsx_engine_format_name(PyObject *module, PyObject *args)
{
    PyObject *name, *bytes;
    long long depth;
    ts_table_text t = {NULL, 0};
    ts_error err;
    int rc;
    if (!PyArg_ParseTuple(args, "OL:format_name", &name, &depth)
        || (bytes = text_bytes(name, "name")) == NULL) {
        return NULL;
    }
    rc = ts_table_format_name(PyBytes_AS_STRING(bytes),
                              (size_t)PyBytes_GET_SIZE(bytes),
                              depth,
                              &t,
                              &err);
    Py_DECREF(bytes);
    return text_result(rc, &t, &err);
}

PyObject *
tsx_engine_wrap_string(PyObject *module, PyObject *args)
{
    PyObject *s, *delimiter, *wrap, *mode, *result = NULL;
    PyObject *sb = NULL, *db = NULL, *wb = NULL;
    long long max_len;
    ts_wrap_mode wm;
    ts_wrap_marks marks;
    ts_table_text t = {NULL, 0};
    ts_error err;
    int rc;
    if (!PyArg_ParseTuple(
            args, "OLOOO:wrap_string", &s, &max_len, &delimiter, &wrap, &mode)
        || (sb = text_bytes(s, "s")) == NULL
        || (db = text_bytes(delimiter, "delimiter")) == NULL
        || (wb = text_bytes(wrap, "wrap")) == NULL
        || wrap_mode(mode, false, &wm) < 0) {
        goto done;
    }
    marks.delimiter = PyBytes_AS_STRING(db);
    marks.delimiter_len = (size_t)PyBytes_GET_SIZE(db);
    marks.wrap = PyBytes_AS_STRING(wb);
    marks.wrap_len = (size_t)PyBytes_GET_SIZE(wb);
    rc = ts_table_wrap_string(PyBytes_AS_STRING(sb),
                              (size_t)PyBytes_GET_SIZE(sb),
                              max_len,
                              &marks,
                              wm,
                              &t,
                              &err);
    result = text_result(rc, &t, &err);
done:
    Py_XDECREF(sb);
    Py_XDECREF(db);
    Py_XDECREF(wb);
    return result;
}

PyObject *
tsx_engine_format_s(PyObject *module, PyObject *args)
{
    PyObject *s, *bytes;
    long long min_w, max_w;
    ts_table_text t = {NULL, 0};
    ts_error err;
    int rc;
    if (!PyArg_ParseTuple(args, "OLL:format_s", &s, &min_w, &max_w)
        || (bytes = text_bytes(s, "f_string")) == NULL) {
        return NULL;
    }
    rc = ts_table_format_s(PyBytes_AS_STRING(bytes),
                           (size_t)PyBytes_GET_SIZE(bytes),
                           min_w,
                           max_w,
                           &t,
                           &err);
    Py_DECREF(bytes);
    return text_result(rc, &t, &err);
}

/* The number is compared as a float (0.2.0's val // factor converts an int
 * too, raising OverflowError past the float range); the division is the
 * value's own, so the result has the type 0.2.0's val / factor gives. */
PyObject *
tsx_engine_unit_scale(PyObject *module, PyObject *val)
{
    double value = PyFloat_AsDouble(val);
    double divisor;
    const char *prefix;
    PyObject *factor, *scaled;
    if (value == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (!ts_table_unit_scale(value, &divisor, &prefix)) {
        return Py_BuildValue("(Os)", val, "");
    }
    factor = PyFloat_FromDouble(divisor);
    if (factor == NULL) {
        return NULL;
    }
    scaled = PyNumber_TrueDivide(val, factor);
    Py_DECREF(factor);
    return scaled != NULL ? Py_BuildValue("(Ns)", scaled, prefix) : NULL;
}

PyObject *
tsx_engine_format_line(PyObject *module, PyObject *args)
{
    PyObject *layer, *mode, *result = NULL;
    long long w[8];
    int64_t col_w[8];
    int rf, stats, count = 0, rc;
    ts_wrap_mode wm;
    ts_table_text cells[8];
    json_t *j;
    ts_error err;
    if (!PyArg_ParseTuple(args,
                          "O(LLLLLLLL)Opp:format_line",
                          &layer,
                          &w[0],
                          &w[1],
                          &w[2],
                          &w[3],
                          &w[4],
                          &w[5],
                          &w[6],
                          &w[7],
                          &mode,
                          &rf,
                          &stats)
        || wrap_mode(mode, false, &wm) < 0
        || (j = tsx_to_json(layer, "layer")) == NULL) {
        return NULL;
    }
    for (int c = 0; c < 8; c++) {
        col_w[c] = w[c];
    }
    rc = ts_table_line(j, col_w, wm, rf, stats, cells, &count, &err);
    json_decref(j);
    if (rc != TS_OK) {
        return tsx_raise(&err);
    }
    result = PyList_New(count);
    for (int c = 0; result != NULL && c < count; c++) {
        PyObject *cell = PyUnicode_DecodeUTF8(
            cells[c].data, (Py_ssize_t)cells[c].len, "surrogatepass");
        if (cell == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, c, cell);
    }
    ts_table_texts_free(cells, count);
    return result;
}

PyObject *
tsx_engine_limit_depth(PyObject *module, PyObject *args)
{
    PyObject *report, *result;
    long long max_depth;
    json_t *j, *view;
    ts_error err;
    if (!PyArg_ParseTuple(args, "OL:limit_depth", &report, &max_depth)
        || (j = tsx_to_json(report, "info")) == NULL) {
        return NULL;
    }
    view = ts_table_limit_depth(j, max_depth, &err);
    json_decref(j);
    if (view == NULL) {
        return tsx_raise(&err);
    }
    result = tsx_from_json(tsx_get_state(module), view);
    json_decref(view);
    return result;
}
