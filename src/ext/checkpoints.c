/* Module functions on checkpoints (checkpoints.h): each converts its
 * arguments once (convert.c) and lets the engine work. */
#include "checkpoints.h"
#include "fail.h"

#include "torchscan/checkpoint.h"

PyObject *
tsx_engine_inspect_checkpoint(PyObject *module, PyObject *path)
{
    PyObject *bytes = NULL, *result;
    json_t *report;
    ts_error err;
    if (!PyUnicode_FSConverter(path, &bytes)) {
        return NULL;
    }
    ts_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
    report = ts_checkpoint_inspect(PyBytes_AS_STRING(bytes), &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(bytes);
    if (report == NULL) {
        return tsx_raise(&err);
    }
    result = tsx_from_json(tsx_get_state(module), report);
    json_decref(report);
    return result;
}

PyObject *
tsx_engine_format_checkpoint(PyObject *module, PyObject *args)
{
    PyObject *report, *result;
    int max_depth;
    json_t *j;
    char *text;
    ts_error err;
    if (!PyArg_ParseTuple(args, "Oi:format_checkpoint", &report, &max_depth)
        || (j = tsx_to_json(report, "report")) == NULL) {
        return NULL;
    }
    ts_error_clear(&err);
    text = ts_checkpoint_table(j, max_depth, &err);
    json_decref(j);
    result = text != NULL ? PyUnicode_FromString(text) : tsx_raise(&err);
    free(text);
    return result;
}

PyObject *
tsx_engine_match_checkpoint(PyObject *module, PyObject *args)
{
    PyObject *report, *against, *result = NULL;
    json_t *jr = NULL, *ja = NULL, *match;
    ts_error err;
    if (!PyArg_ParseTuple(args, "OO:match_checkpoint", &report, &against)
        || (jr = tsx_to_json(report, "report")) == NULL
        || (ja = tsx_to_json(against, "against")) == NULL) {
        json_decref(jr);
        return NULL;
    }
    ts_error_clear(&err);
    match = ts_checkpoint_match(jr, ja, &err);
    result = match != NULL ? tsx_from_json(tsx_get_state(module), match)
                           : tsx_raise(&err);
    json_decref(match);
    json_decref(jr);
    json_decref(ja);
    return result;
}
