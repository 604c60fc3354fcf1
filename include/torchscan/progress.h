/* The progress line of long measurements (measure_latency's timed blocks,
 * profile_workload's pass, measure_workload's stages, measure_peak_rss's
 * child): when to draw it and what it says. The engine never prints: it
 * writes the bytes to draw into the caller's buffer, and the binding
 * (src/ext/progress.c) writes them to a terminal.
 *
 * The line appears only once a measurement has run TS_PROGRESS_DELAY_NS,
 * is redrawn at most every TS_PROGRESS_PERIOD_NS, and is drawn with
 * carriage returns and spaces only (no escape sequence), each draw covering
 * what the previous one showed, so any terminal that moves to the start of
 * the line on "\r" shows one line that changes in place. Texts are ASCII:
 * a column is a byte. */
#ifndef TORCHSCAN_PROGRESS_H
#define TORCHSCAN_PROGRESS_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nothing is drawn during a measurement's first second... */
#define TS_PROGRESS_DELAY_NS INT64_C(1000000000)
/* ...then at most ten times a second. */
#define TS_PROGRESS_PERIOD_NS INT64_C(100000000)
/* The longest text of a line (before it is cut to the terminal's width). */
#define TS_PROGRESS_TEXT_SIZE 160
/* Bytes a draw or clear can take: "\r", the text, the spaces over the
 * previous line, "\r". */
#define TS_PROGRESS_LINE_SIZE (2 * TS_PROGRESS_TEXT_SIZE + 4)

/* One line on a terminal. Caller-owned; ts_progress_init fills it. */
typedef struct ts_progress {
    int64_t start_ns; /* when the measurement began (a monotonic clock) */
    int64_t drawn_ns; /* the last draw; meaningless while shown == 0 */
    size_t shown;     /* columns the line shows now (0: nothing drawn) */
} ts_progress;

void ts_progress_init(ts_progress *p, int64_t now_ns);

/* Whether a draw is due at now_ns: the first second is over and the last
 * draw (if any) is at least a period old. */
bool ts_progress_due(const ts_progress *p, int64_t now_ns);

/* The bytes that draw `text` (cut to width - 1 columns: the last column
 * stays free so that no terminal wraps the line) over the line shown:
 * "\r", the text, spaces over the rest of the previous text. Records the
 * draw at now_ns. Returns the byte count (at most TS_PROGRESS_LINE_SIZE;
 * buf must hold that many). A width below 2 draws nothing (returns 0). */
size_t ts_progress_draw(
    ts_progress *p, const char *text, size_t width, int64_t now_ns, char *buf);

/* The bytes that blank the line shown and put the cursor back at its
 * start ("\r", spaces, "\r"), or none when nothing is shown. Returns the
 * byte count (at most TS_PROGRESS_LINE_SIZE). */
size_t ts_progress_clear(ts_progress *p, char *buf);

/* "torchscan: <label>, <elapsed>": a pass that runs as one call (a
 * profile, a FLOP count, a child process). Elapsed time reads "3.4 s", or
 * "2 min 05 s" from a minute on. Writes at most TS_PROGRESS_TEXT_SIZE bytes
 * (NUL included) into buf. */
void ts_progress_pass_text(char *buf, const char *label, int64_t elapsed_ns);

/* Where measure_latency's loop is. */
typedef enum {
    TS_TIMING_WARMUP = 0,      /* `done` of `total` untimed calls made */
    TS_TIMING_CALIBRATION = 1, /* blocks of `calls` calls, growing */
    TS_TIMING_BLOCKS = 2,      /* `done` blocks of `calls` calls kept */
} ts_timing_phase;

typedef struct ts_timing_progress {
    ts_timing_phase phase;
    int64_t done;        /* warm-up calls made, or measured blocks */
    int64_t total;       /* warm-up calls to make, or min_repeats */
    int64_t calls;       /* calls per block */
    double timed_s;      /* seconds the measured blocks add up to */
    double min_run_time; /* seconds they must add up to */
} ts_timing_progress;

/* "torchscan: <label>: warm-up 12/50, 3.4 s", "...: calibrating (blocks
 * of 640 calls), 3.4 s" or "...: 4 blocks (at least 5), 0.83 of 2.00 s
 * timed, 3.4 s". Writes at most TS_PROGRESS_TEXT_SIZE bytes (NUL
 * included). */
void ts_progress_timing_text(char *buf,
                             const char *label,
                             const ts_timing_progress *t,
                             int64_t elapsed_ns);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_PROGRESS_H */
