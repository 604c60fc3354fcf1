/* The timing loop of measure_latency: the workload is called through the C
 * API between two readings of CLOCK_MONOTONIC, each reading preceded by
 * the device synchronizer (None on CPU). What the readings mean (block
 * size, median, IQR, throughput) is computed by the engine (stats.c).
 *
 * Sequence: one timed first call; `warmup` untimed calls; calibration
 * blocks of 1, then more calls (ts_autorange_next) until one block takes
 * at least min_run_time / 10; that block is the first measured block, and
 * blocks of the same size follow until they add up to min_run_time and
 * there are at least min_repeats of them. As in timeit and
 * torch.utils.benchmark, the cyclic garbage collector is paused while
 * blocks run (restored afterwards, also on errors). Thread settings are
 * never touched.
 */
#include <math.h>
#include <time.h>

#include "tsx.h"

#include "torchscan/stats.h"

static int64_t
monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * INT64_C(1000000000) + (int64_t)ts.tv_nsec;
}

/* Synchronizes the device (when `sync` is not None), then reads the
 * clock. */
static int
tick(PyObject *sync, int64_t *now)
{
    if (sync != Py_None) {
        PyObject *r = PyObject_CallNoArgs(sync);
        if (r == NULL) {
            return -1;
        }
        Py_DECREF(r);
    }
    *now = monotonic_ns();
    return 0;
}

static int
call_once(PyObject *workload)
{
    PyObject *r = PyObject_CallNoArgs(workload);
    if (r == NULL) {
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

static int
bad_duration(double seconds)
{
    if (isfinite(seconds) && seconds > 0.0) {
        return 0;
    }
    PyErr_SetString(PyExc_RuntimeError,
                    "Timing must produce positive finite durations.");
    return -1;
}

/* One block of `number` calls; *seconds is its duration. Pending signals
 * (KeyboardInterrupt) are honoured between blocks. */
static int
run_block(PyObject *workload, PyObject *sync, int64_t number, double *seconds)
{
    int64_t start;
    int64_t stop;
    if (tick(sync, &start) < 0) {
        return -1;
    }
    for (int64_t i = 0; i < number; i++) {
        if (call_once(workload) < 0) {
            return -1;
        }
    }
    if (tick(sync, &stop) < 0) {
        return -1;
    }
    *seconds = (double)(stop - start) * 1e-9;
    if (bad_duration(*seconds) < 0) {
        return -1;
    }
    return PyErr_CheckSignals();
}

PyObject *
tsx_time_workload(PyObject *module, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"workload",
                             "synchronize",
                             "warmup",
                             "min_run_time",
                             "min_repeats",
                             "work_units",
                             "work_unit",
                             NULL};
    PyObject *workload;
    PyObject *sync;
    Py_ssize_t warmup;
    Py_ssize_t min_repeats;
    double min_run_time;
    double work_units;
    const char *work_unit;
    PyObject *result = NULL;
    double *blocks = NULL;
    size_t nblocks = 0;
    size_t capacity = 0;
    double first_call;
    double seconds = 0.0;
    double total;
    int64_t number = 1;
    int64_t next;
    int64_t start;
    int64_t stop;
    int gc_was_enabled = 0;
    bool gc_paused = false;
    json_t *report = NULL;
    ts_error err;
    if (!PyArg_ParseTupleAndKeywords(args,
                                     kwds,
                                     "OOndnds:time_workload",
                                     kwlist,
                                     &workload,
                                     &sync,
                                     &warmup,
                                     &min_run_time,
                                     &min_repeats,
                                     &work_units,
                                     &work_unit)) {
        return NULL;
    }
    if (!PyCallable_Check(workload)
        || (sync != Py_None && !PyCallable_Check(sync))) {
        PyErr_SetString(PyExc_TypeError,
                        "workload and synchronize must be callable");
        return NULL;
    }
    if (warmup < 0 || min_repeats < 1 || !isfinite(min_run_time)
        || min_run_time <= 0.0 || !isfinite(work_units) || work_units <= 0.0) {
        PyErr_SetString(PyExc_ValueError, "invalid timing settings");
        return NULL;
    }
    /* First call: everything the workload does the first time. */
    if (tick(sync, &start) < 0 || call_once(workload) < 0
        || tick(sync, &stop) < 0) {
        goto cleanup;
    }
    first_call = (double)(stop - start) * 1e-9;
    if (bad_duration(first_call) < 0) {
        goto cleanup;
    }
    for (Py_ssize_t i = 0; i < warmup; i++) {
        /* a C workload runs no bytecode that would notice Ctrl-C; warmup is
         * untimed, so checking here costs nothing measured */
        if (call_once(workload) < 0
            || ((i & 1023) == 1023 && PyErr_CheckSignals() < 0)) {
            goto cleanup;
        }
    }
    gc_was_enabled = PyGC_Disable();
    gc_paused = true;
    /* Calibration: the first block that reaches the target is kept. */
    for (;;) {
        if (run_block(workload, sync, number, &seconds) < 0) {
            goto cleanup;
        }
        if (ts_autorange_next(number,
                              seconds,
                              min_run_time * TS_AUTORANGE_BLOCK_FRACTION,
                              &next)) {
            break;
        }
        number = next;
    }
    total = 0.0;
    for (;;) {
        if (nblocks == capacity) {
            size_t grown = capacity ? capacity * 2 : 16;
            double *more = PyMem_Realloc(blocks, grown * sizeof *blocks);
            if (more == NULL) {
                PyErr_NoMemory();
                goto cleanup;
            }
            blocks = more;
            capacity = grown;
        }
        blocks[nblocks++] = seconds;
        total += seconds;
        if (total >= min_run_time && nblocks >= (size_t)min_repeats) {
            break;
        }
        if (run_block(workload, sync, number, &seconds) < 0) {
            goto cleanup;
        }
    }
    if (gc_was_enabled) {
        PyGC_Enable();
    }
    gc_paused = false;
    ts_error_clear(&err);
    report = ts_timing_report(
        first_call, blocks, nblocks, number, work_units, work_unit, &err);
    result = report != NULL ? tsx_from_json(tsx_get_state(module), report)
                            : tsx_raise(&err);
cleanup:
    if (gc_paused && gc_was_enabled) {
        PyGC_Enable();
    }
    json_decref(report);
    PyMem_Free(blocks);
    return result;
}
