/* progress.c: the progress line of long measurements on a terminal (the
 * engine's progress.h says when and what; this file writes it). One line
 * at a time in a process: a line opened while another is shown stays
 * silent. */
#ifndef TSX_PROGRESS_H
#define TSX_PROGRESS_H

#include "convert.h"

#include "torchscan/progress.h"

/* A line drawn from the measuring thread, between the measurement's steps
 * (measure_latency's loop). Caller-owned. */
typedef struct tsx_progress {
    int fd; /* our own descriptor of the terminal; -1: silent */
    ts_progress line;
} tsx_progress;

/* Opens a line on `fd` when fd >= 0 is a terminal and no other line is
 * open in the process; otherwise the line stays silent (fd -1) and every
 * call below does nothing. Never fails. */
void tsx_progress_open(tsx_progress *p, int fd);

/* Whether a draw is due now (false for a silent line). *now_ns: the
 * clock, read only for a line that is not silent. */
bool tsx_progress_due(const tsx_progress *p, int64_t *now_ns);

/* Draws `text`, recording the draw at now_ns. */
void tsx_progress_show(tsx_progress *p, const char *text, int64_t now_ns);

/* Blanks the line and closes it (a silent line: nothing). */
void tsx_progress_close(tsx_progress *p);

/* The monotonic clock in nanoseconds. */
int64_t tsx_monotonic_ns(void);

/* progress_start(label, fd) -> a handle, or None when the line stays
 * silent: a thread draws "torchscan: <label>, <elapsed>" while the caller's
 * single long call runs (a profile, a FLOP count, a child process), after
 * the first second and ten times a second. */
PyObject *tsx_engine_progress_start(PyObject *module, PyObject *args);

/* progress_stop(handle): stops the thread and blanks the line. */
PyObject *tsx_engine_progress_stop(PyObject *module, PyObject *handle);

#endif
