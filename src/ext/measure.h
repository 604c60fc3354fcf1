/* measure.c: the module functions of the workload measurements (module.c
 * lists them in its method table). */
#ifndef TSX_MEASURE_H
#define TSX_MEASURE_H

#include "convert.h"

PyObject *tsx_engine_memory_peak(PyObject *module, PyObject *args);
PyObject *tsx_engine_profile_rows(PyObject *module, PyObject *args);
PyObject *tsx_engine_workload_totals(PyObject *module, PyObject *args);
PyObject *tsx_engine_workload_summary(PyObject *module, PyObject *report);
PyObject *tsx_engine_workload_achieved(PyObject *module, PyObject *args);
PyObject *tsx_engine_compare_benchmarks(PyObject *module, PyObject *args);
PyObject *tsx_engine_rss_parse(PyObject *module, PyObject *args);
/* The WORKLOAD_* and method-name constants. 0, or -1 with an exception. */
int tsx_measure_constants(PyObject *module);

#endif
