/* timing.c: the timing loop of measure_latency. */
#ifndef TSX_TIMING_H
#define TSX_TIMING_H

#include "convert.h"

/* time_workload(workload, synchronize, warmup, min_run_time, min_repeats,
 * work_units, work_unit) -> {'totals', 'measurement'} */
PyObject *tsx_time_workload(PyObject *module, PyObject *args, PyObject *kwds);

#endif
