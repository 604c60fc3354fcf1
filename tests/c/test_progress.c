/* The progress line (progress.c): when a draw is due, the bytes of a draw
 * and of a clear, and the texts. Expected bytes are written out by hand. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/progress.h"

#define S INT64_C(1000000000)
#define MS INT64_C(1000000)

static void
check_bytes(const char *buf, size_t len, const char *expected)
{
    CHECK_EQ_INT(len, strlen(expected));
    CHECK(len == strlen(expected) && memcmp(buf, expected, len) == 0);
}

static void
test_due(void)
{
    ts_progress p;
    char buf[TS_PROGRESS_LINE_SIZE];
    ts_progress_init(&p, 5 * S);
    /* nothing during the first second */
    CHECK(!ts_progress_due(&p, 5 * S));
    CHECK(!ts_progress_due(&p, 6 * S - 1));
    CHECK(ts_progress_due(&p, 6 * S));
    ts_progress_draw(&p, "x", 80, 6 * S, buf);
    /* then at most every 100 ms */
    CHECK(!ts_progress_due(&p, 6 * S + 99 * MS));
    CHECK(ts_progress_due(&p, 6 * S + 100 * MS));
    /* a clock that went back (another thread's reading) is not due */
    CHECK(!ts_progress_due(&p, 4 * S));
}

static void
test_draw_and_clear(void)
{
    ts_progress p;
    char buf[TS_PROGRESS_LINE_SIZE];
    size_t len;
    ts_progress_init(&p, 0);
    /* nothing shown: nothing to clear */
    CHECK_EQ_INT(ts_progress_clear(&p, buf), 0);
    len = ts_progress_draw(&p, "abcdef", 80, S, buf);
    check_bytes(buf, len, "\rabcdef");
    CHECK_EQ_INT(p.shown, 6);
    /* a longer text covers the shorter one */
    len = ts_progress_draw(&p, "abcdefgh", 80, 2 * S, buf);
    check_bytes(buf, len, "\rabcdefgh");
    /* a shorter one: spaces over the rest, then the text again so that the
     * cursor ends after it */
    len = ts_progress_draw(&p, "xyz", 80, 3 * S, buf);
    check_bytes(buf, len, "\rxyz     \rxyz");
    CHECK_EQ_INT(p.shown, 3);
    /* cut to width - 1; non-ASCII bytes shown as '?' */
    len = ts_progress_draw(&p, "12345\n7", 6, 4 * S, buf);
    check_bytes(buf, len, "\r12345");
    len = ts_progress_draw(&p, "a\xc3\xa9", 80, 4 * S, buf);
    check_bytes(buf, len, "\ra??  \ra??");
    CHECK_EQ_INT(ts_progress_draw(&p, "abc", 1, 5 * S, buf), 0);
    len = ts_progress_clear(&p, buf);
    check_bytes(buf, len, "\r   \r");
    CHECK_EQ_INT(p.shown, 0);
    CHECK_EQ_INT(ts_progress_clear(&p, buf), 0);
}

static void
test_long_text_fits_the_buffer(void)
{
    ts_progress p;
    char text[400];
    char buf[TS_PROGRESS_LINE_SIZE];
    size_t len;
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    ts_progress_init(&p, 0);
    len = ts_progress_draw(&p, text, 1000, S, buf);
    CHECK_EQ_INT(len, TS_PROGRESS_TEXT_SIZE); /* "\r" + 159 columns */
    len = ts_progress_draw(&p, "y", 1000, 2 * S, buf);
    CHECK(len <= TS_PROGRESS_LINE_SIZE);
    CHECK_EQ_INT(len, 1 + 1 + 158 + 1 + 1);
}

static void
test_texts(void)
{
    char text[TS_PROGRESS_TEXT_SIZE];
    ts_timing_progress t = {TS_TIMING_WARMUP, 12, 50, 0, 0.0, 0.0};
    ts_progress_pass_text(
        text, "profile_workload: profiling one call", 3 * S + 450 * MS);
    CHECK_EQ_STR(text,
                 "torchscan: profile_workload: profiling one call, 3.4 s");
    ts_progress_pass_text(text, "measure_peak_rss: command running", 125 * S);
    CHECK_EQ_STR(text,
                 "torchscan: measure_peak_rss: command running, 2 min 05 s");
    ts_progress_timing_text(text, "measure_latency", &t, 1 * S);
    CHECK_EQ_STR(text, "torchscan: measure_latency: warm-up 12/50, 1.0 s");
    t.phase = TS_TIMING_CALIBRATION;
    t.calls = 640;
    ts_progress_timing_text(text, "measure_latency", &t, 59 * S + 990 * MS);
    CHECK_EQ_STR(text,
                 "torchscan: measure_latency: calibrating (blocks of 640 "
                 "calls), 59.9 s");
    t.phase = TS_TIMING_BLOCKS;
    t.done = 4;
    t.total = 5;
    t.timed_s = 0.834;
    t.min_run_time = 2.0;
    ts_progress_timing_text(text, "measure_workload: timing", &t, 60 * S);
    CHECK_EQ_STR(text,
                 "torchscan: measure_workload: timing: 4 blocks (at least "
                 "5), 0.83 of 2.00 s timed, 1 min 00 s");
}

int
main(void)
{
    test_due();
    test_draw_and_clear();
    test_long_text_fits_the_buffer();
    test_texts();
    return ts_test_report();
}
