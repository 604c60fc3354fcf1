/* timing.c: the timing loop of measure_latency. */
#ifndef TSX_TIMING_H
#define TSX_TIMING_H

#include "progress.h"

/* time_workload(workload, synchronize, warmup, min_run_time, min_repeats,
 * work_units, work_unit, *, progress_fd=-1,
 * progress_label="measure_latency") -> {'totals', 'measurement'}; with
 * progress_fd a terminal, the loop's progress is drawn there (progress.c) */
PyObject *tsx_time_workload(PyObject *module, PyObject *args, PyObject *kwds);

#endif
