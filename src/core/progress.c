/* The progress line of long measurements (progress.h): when to draw, and
 * the bytes and texts to draw. No I/O here: the binding writes. */
#include <stdio.h>
#include <string.h>

#include "torchscan/progress.h"

void
ts_progress_init(ts_progress *p, int64_t now_ns)
{
    p->start_ns = now_ns;
    p->drawn_ns = now_ns;
    p->shown = 0;
}

bool
ts_progress_due(const ts_progress *p, int64_t now_ns)
{
    if (now_ns - p->start_ns < TS_PROGRESS_DELAY_NS) {
        return false;
    }
    return p->shown == 0 || now_ns - p->drawn_ns >= TS_PROGRESS_PERIOD_NS;
}

size_t
ts_progress_draw(
    ts_progress *p, const char *text, size_t width, int64_t now_ns, char *buf)
{
    size_t len = strlen(text);
    size_t at = 0;
    if (width < 2) {
        return 0;
    }
    if (len > width - 1) {
        len = width - 1;
    }
    if (len > TS_PROGRESS_TEXT_SIZE - 1) {
        len = TS_PROGRESS_TEXT_SIZE - 1;
    }
    buf[at++] = '\r';
    for (size_t i = 0; i < len; i++) {
        /* the texts are ours and ASCII; anything else would not be one
         * column */
        unsigned char c = (unsigned char)text[i];
        buf[at++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    /* the previous text is at most TS_PROGRESS_TEXT_SIZE - 1 columns */
    for (size_t i = len; i < p->shown; i++) {
        buf[at++] = ' ';
    }
    if (p->shown > len) {
        /* back over the spaces, so the cursor ends after the text */
        memcpy(buf + at, buf, len + 1);
        at += len + 1;
    }
    p->shown = len;
    p->drawn_ns = now_ns;
    return at;
}

size_t
ts_progress_clear(ts_progress *p, char *buf)
{
    size_t at = 0;
    if (p->shown == 0) {
        return 0;
    }
    buf[at++] = '\r';
    memset(buf + at, ' ', p->shown);
    at += p->shown;
    buf[at++] = '\r';
    p->shown = 0;
    return at;
}

/* " 3.4 s" or " 2 min 05 s" after ", ". */
static void
elapsed_text(char *buf, size_t size, int64_t elapsed_ns)
{
    int64_t tenths = elapsed_ns < 0 ? 0 : elapsed_ns / INT64_C(100000000);
    if (tenths < 600) {
        snprintf(buf,
                 size,
                 "%lld.%lld s",
                 (long long)(tenths / 10),
                 (long long)(tenths % 10));
    }
    else {
        long long seconds = (long long)(tenths / 10);
        snprintf(buf, size, "%lld min %02lld s", seconds / 60, seconds % 60);
    }
}

void
ts_progress_pass_text(char *buf, const char *label, int64_t elapsed_ns)
{
    char elapsed[48];
    elapsed_text(elapsed, sizeof elapsed, elapsed_ns);
    snprintf(buf, TS_PROGRESS_TEXT_SIZE, "torchscan: %s, %s", label, elapsed);
}

void
ts_progress_timing_text(char *buf,
                        const char *label,
                        const ts_timing_progress *t,
                        int64_t elapsed_ns)
{
    char elapsed[48];
    elapsed_text(elapsed, sizeof elapsed, elapsed_ns);
    switch (t->phase) {
        case TS_TIMING_WARMUP:
            snprintf(buf,
                     TS_PROGRESS_TEXT_SIZE,
                     "torchscan: %s: warm-up %lld/%lld, %s",
                     label,
                     (long long)t->done,
                     (long long)t->total,
                     elapsed);
            break;
        case TS_TIMING_CALIBRATION:
            snprintf(buf,
                     TS_PROGRESS_TEXT_SIZE,
                     "torchscan: %s: calibrating (blocks of %lld calls), %s",
                     label,
                     (long long)t->calls,
                     elapsed);
            break;
        default:
            snprintf(buf,
                     TS_PROGRESS_TEXT_SIZE,
                     "torchscan: %s: %lld blocks (at least %lld), %.2f of "
                     "%.2f s timed, %s",
                     label,
                     (long long)t->done,
                     (long long)t->total,
                     t->timed_s,
                     t->min_run_time,
                     elapsed);
            break;
    }
}
