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
 *
 * Progress (a terminal's stderr only, progress.c): after the first
 * second, at most ten times a second, the loop draws where it is. It
 * checks between calls and blocks, never inside a timed region: the check
 * reads the clock once after a block's closing reading (or does nothing
 * when no line is shown), and a draw is one write(2) before the next
 * block's opening reading.
 */
#include <math.h>

#include "fail.h"
#include "timing.h"

#include "torchscan/stats.h"

/* The workload, its synchronizer, and the progress line of one timing. */
typedef struct timing_loop {
    PyObject *workload;
    PyObject *sync;
    const char *label;
    tsx_progress progress;
    ts_timing_progress state;
} timing_loop;

/* Draws the loop's state when a draw is due (between timed regions). */
static void
show_progress(timing_loop *loop)
{
    int64_t now;
    char text[TS_PROGRESS_TEXT_SIZE];
    if (tsx_progress_due(&loop->progress, &now)) {
        ts_progress_timing_text(text,
                                loop->label,
                                &loop->state,
                                now - loop->progress.line.start_ns);
        tsx_progress_show(&loop->progress, text, now);
    }
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
    *now = tsx_monotonic_ns();
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
    tsx_fail(PyExc_RuntimeError,
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

/* The timed first call (everything the workload does the first time) and
 * the untimed warmup calls. */
static int
first_call_and_warmup(timing_loop *loop, Py_ssize_t warmup, double *first_call)
{
    int64_t start, stop;
    if (tick(loop->sync, &start) < 0 || call_once(loop->workload) < 0
        || tick(loop->sync, &stop) < 0) {
        return -1;
    }
    *first_call = (double)(stop - start) * 1e-9;
    if (bad_duration(*first_call) < 0) {
        return -1;
    }
    loop->state.phase = TS_TIMING_WARMUP;
    loop->state.total = warmup;
    for (Py_ssize_t i = 0; i < warmup; i++) {
        /* a C workload runs no bytecode that would notice Ctrl-C; warmup is
         * untimed, so checking here costs nothing measured */
        loop->state.done = i;
        show_progress(loop);
        if (call_once(loop->workload) < 0
            || ((i & 1023) == 1023 && PyErr_CheckSignals() < 0)) {
            return -1;
        }
    }
    return 0;
}

/* Calibration: blocks grow until one reaches the target; that block is
 * kept (*number calls took *seconds). */
static int
calibrate(timing_loop *loop,
          double min_run_time,
          int64_t *number,
          double *seconds)
{
    int64_t next;
    loop->state.phase = TS_TIMING_CALIBRATION;
    for (;;) {
        loop->state.calls = *number;
        show_progress(loop);
        if (run_block(loop->workload, loop->sync, *number, seconds) < 0) {
            return -1;
        }
        if (ts_autorange_next(*number,
                              *seconds,
                              min_run_time * TS_AUTORANGE_BLOCK_FRACTION,
                              &next)) {
            return 0;
        }
        *number = next;
    }
}

/* The measured blocks: the calibration's last, then blocks of the same
 * size until they add up to min_run_time and there are min_repeats. */
static int
measure_blocks(timing_loop *loop,
               int64_t number,
               double seconds,
               double min_run_time,
               Py_ssize_t min_repeats,
               double **blocks,
               size_t *nblocks)
{
    size_t capacity = 0;
    double total = 0.0;
    loop->state.phase = TS_TIMING_BLOCKS;
    loop->state.total = min_repeats;
    loop->state.calls = number;
    loop->state.min_run_time = min_run_time;
    for (;;) {
        if (*nblocks == capacity) {
            size_t grown = capacity ? capacity * 2 : 16;
            double *more = PyMem_Realloc(*blocks, grown * sizeof **blocks);
            if (more == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            *blocks = more;
            capacity = grown;
        }
        (*blocks)[(*nblocks)++] = seconds;
        total += seconds;
        loop->state.done = (int64_t)*nblocks;
        loop->state.timed_s = total;
        show_progress(loop);
        if (total >= min_run_time && *nblocks >= (size_t)min_repeats) {
            return 0;
        }
        if (run_block(loop->workload, loop->sync, number, &seconds) < 0) {
            return -1;
        }
    }
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
                             "progress_fd",
                             "progress_label",
                             NULL};
    PyObject *workload, *sync, *result = NULL;
    timing_loop loop;
    int progress_fd = -1;
    const char *label = "measure_latency";
    Py_ssize_t warmup, min_repeats;
    double min_run_time, work_units, first_call, seconds = 0.0;
    const char *work_unit;
    double *blocks = NULL;
    size_t nblocks = 0;
    int64_t number = 1;
    int gc_was_enabled = 0, rc;
    json_t *report = NULL;
    ts_error err;
    if (!PyArg_ParseTupleAndKeywords(args,
                                     kwds,
                                     "OOndnds|$is:time_workload",
                                     kwlist,
                                     &workload,
                                     &sync,
                                     &warmup,
                                     &min_run_time,
                                     &min_repeats,
                                     &work_units,
                                     &work_unit,
                                     &progress_fd,
                                     &label)) {
        return NULL;
    }
    if (!PyCallable_Check(workload)
        || (sync != Py_None && !PyCallable_Check(sync))) {
        tsx_fail(PyExc_TypeError, "workload and synchronize must be callable");
        return NULL;
    }
    if (warmup < 0 || min_repeats < 1 || !isfinite(min_run_time)
        || min_run_time <= 0.0 || !isfinite(work_units) || work_units <= 0.0) {
        tsx_fail(PyExc_ValueError, "invalid timing settings");
        return NULL;
    }
    memset(&loop, 0, sizeof loop);
    loop.workload = workload;
    loop.sync = sync;
    loop.label = label;
    tsx_progress_open(&loop.progress, progress_fd);
    rc = first_call_and_warmup(&loop, warmup, &first_call);
    if (rc == 0) {
        gc_was_enabled = PyGC_Disable();
        rc = calibrate(&loop, min_run_time, &number, &seconds);
        if (rc == 0) {
            rc = measure_blocks(&loop,
                                number,
                                seconds,
                                min_run_time,
                                min_repeats,
                                &blocks,
                                &nblocks);
        }
        if (gc_was_enabled) {
            PyGC_Enable();
        }
    }
    tsx_progress_close(&loop.progress);
    if (rc == 0) {
        ts_error_clear(&err);
        report = ts_timing_report(
            first_call, blocks, nblocks, number, work_units, work_unit, &err);
        result = report != NULL ? tsx_from_json(tsx_get_state(module), report)
                                : tsx_raise(&err);
    }
    json_decref(report);
    PyMem_Free(blocks);
    return result;
}
