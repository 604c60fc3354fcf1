/* reports.c: the module functions of torchscan._engine that work on
 * reports (module.c lists them in its method table). */
#ifndef TSX_REPORTS_H
#define TSX_REPORTS_H

#include "describe.h"

PyObject *tsx_engine_compare_reports(PyObject *module, PyObject *args);
PyObject *tsx_engine_diff_metrics(PyObject *module, PyObject *args);
PyObject *tsx_engine_incomplete(PyObject *module, PyObject *report);
PyObject *tsx_engine_describe_call(PyObject *module, PyObject *args);
PyObject *tsx_engine_render_benchmark_html(PyObject *module, PyObject *args);
PyObject *tsx_engine_render_analysis(PyObject *module, PyObject *args);
PyObject *tsx_engine_gather_shape(PyObject *module, PyObject *report);
PyObject *tsx_engine_gather_check(PyObject *module, PyObject *args);
PyObject *tsx_engine_gather_reports(PyObject *module, PyObject *args);

#endif
