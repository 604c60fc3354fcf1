/* tables.c: the module functions of torchscan._engine behind the summary
 * table (summary, torchscan.utils) and 0.2.0's table-text helpers
 * (module.c lists them in its method table). */
#ifndef TSX_TABLES_H
#define TSX_TABLES_H

#include "convert.h"

/* format_summary(report, wrap_mode="mid", receptive_field=False,
 * effective_rf_stats=False, max_depth=-1) -> the table of a fresh report */
PyObject *tsx_engine_format_summary(PyObject *module,
                                    PyObject *args,
                                    PyObject *kwds);
/* format_report(...): the same arguments; the report is checked first, as
 * `torchscan table` checks a saved one */
PyObject *tsx_engine_format_report(PyObject *module,
                                   PyObject *args,
                                   PyObject *kwds);
/* format_name(name, depth) -> str */
PyObject *tsx_engine_format_name(PyObject *module, PyObject *args);
/* wrap_string(s, max_len, delimiter, wrap, mode) -> str */
PyObject *tsx_engine_wrap_string(PyObject *module, PyObject *args);
/* format_s(s, min_w, max_w) -> str (a negative width: none) */
PyObject *tsx_engine_format_s(PyObject *module, PyObject *args);
/* unit_scale(val) -> (val or val / factor, prefix) */
PyObject *tsx_engine_unit_scale(PyObject *module, PyObject *val);
/* format_line(layer, col_w: 8 ints, -1 for none, wrap_mode,
 * receptive_field, effective_rf_stats) -> list of cells */
PyObject *tsx_engine_format_line(PyObject *module, PyObject *args);
/* limit_depth(report, max_depth) -> a new report with the rows of depth <=
 * max_depth (aggregate_info) */
PyObject *tsx_engine_limit_depth(PyObject *module, PyObject *args);

#endif
