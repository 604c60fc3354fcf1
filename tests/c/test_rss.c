/* Child-process RSS: the result line, unit conversion, and supervising real
 * children (exit codes, signals, timeouts, a missing command). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "torchscan/rss.h"

static void
test_format_parse(void)
{
    ts_rss_result r = {TS_RSS_EXITED, 3, INT64_C(123456789)};
    ts_rss_result back;
    ts_error err;
    char line[128];
    CHECK_EQ_INT(ts_rss_format(&r, line, sizeof line), 19);
    CHECK_EQ_STR(line, "exited 3 123456789\n");
    CHECK_EQ_INT(ts_rss_parse(line, &back, &err), TS_OK);
    CHECK_EQ_INT(back.outcome, TS_RSS_EXITED);
    CHECK_EQ_INT(back.code, 3);
    CHECK_EQ_INT(back.peak_bytes, 123456789);

    r.outcome = TS_RSS_SPAWN_FAILED;
    r.code = 2;
    r.peak_bytes = 0;
    ts_rss_format(&r, line, sizeof line);
    CHECK_EQ_STR(line, "spawn-failed 2 0\n");
    CHECK_EQ_INT(ts_rss_parse("timeout 0 4096", &back, &err), TS_OK);
    CHECK_EQ_INT(back.outcome, TS_RSS_TIMED_OUT);
    CHECK_EQ_INT(back.peak_bytes, 4096);
    CHECK_EQ_INT(ts_rss_parse("signaled -9 1\n", &back, &err), TS_OK);
    CHECK_EQ_INT(back.code, -9);

    CHECK_EQ_INT(ts_rss_parse("", &back, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exited", &back, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exited 0", &back, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exited x 1", &back, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exited 0 -1", &back, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exited 0 12 extra", &back, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("finished 0 12", &back, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exite 0 12", &back, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse(NULL, &back, &err), TS_EFORMAT);
    CHECK_EQ_STR(ts_rss_outcome_name(TS_RSS_INTERRUPTED), "interrupted");
}

static void
test_exit_status(void)
{
    /* what a shell gives for the same outcomes */
    ts_rss_result r = {TS_RSS_EXITED, 0, 0};
    CHECK_EQ_INT(ts_rss_exit_status(&r), 0);
    r.code = 3;
    CHECK_EQ_INT(ts_rss_exit_status(&r), 3);
    r.outcome = TS_RSS_SIGNALED;
    r.code = SIGTERM;
    CHECK_EQ_INT(ts_rss_exit_status(&r), 128 + SIGTERM);
    r.outcome = TS_RSS_INTERRUPTED;
    r.code = SIGINT;
    CHECK_EQ_INT(ts_rss_exit_status(&r), 128 + SIGINT);
    r.outcome = TS_RSS_TIMED_OUT;
    r.code = 0;
    CHECK_EQ_INT(ts_rss_exit_status(&r), 124);
    r.outcome = TS_RSS_SPAWN_FAILED;
    r.code = ENOENT;
    CHECK_EQ_INT(ts_rss_exit_status(&r), 127);
    r.code = ENOTDIR;
    CHECK_EQ_INT(ts_rss_exit_status(&r), 127);
    r.code = EACCES;
    CHECK_EQ_INT(ts_rss_exit_status(&r), 126);
    r.code = ENOEXEC;
    CHECK_EQ_INT(ts_rss_exit_status(&r), 126);
}

static void
test_units(void)
{
#ifdef __APPLE__
    CHECK_EQ_INT(ts_rss_maxrss_bytes(4096), 4096);
#else
    CHECK_EQ_INT(ts_rss_maxrss_bytes(4), 4096);
#endif
    CHECK_EQ_INT(ts_rss_maxrss_bytes(-1), 0);
}

/* A missing program and one that is not executable: the shell's 127 and
 * 126. */
static void
spawn_failures(char **missing, ts_rss_result *r, ts_error *err)
{
    CHECK_EQ_INT(ts_rss_supervise(missing, 0.0, NULL, 0, r, err), TS_OK);
    CHECK_EQ_INT(r->outcome, TS_RSS_SPAWN_FAILED);
    CHECK(r->code != 0);
    CHECK_EQ_INT(ts_rss_exit_status(r), 127);

    /* a file that exists but is not executable: 126, as in a shell */
    {
        char path[] = "/tmp/torchscan-test-rss-XXXXXX";
        int fd = mkstemp(path);
        char *not_executable[] = {path, NULL};
        CHECK(fd >= 0);
        if (fd >= 0) {
            close(fd);
            CHECK_EQ_INT(
                ts_rss_supervise(not_executable, 0.0, NULL, 0, r, err), TS_OK);
            CHECK_EQ_INT(r->outcome, TS_RSS_SPAWN_FAILED);
            CHECK_EQ_INT(r->code, EACCES);
            CHECK_EQ_INT(ts_rss_exit_status(r), 126);
            unlink(path);
        }
    }
}

static void
test_supervise(void)
{
    char *ok[] = {"sh", "-c", "exit 0", NULL};
    char *three[] = {"sh", "-c", "exit 3", NULL};
    char *killed[] = {"sh", "-c", "kill -9 $$", NULL};
    char *slow[] = {"sh", "-c", "sleep 30 & sleep 30; exit 0", NULL};
    char *missing[] = {"torchscan-no-such-command-here", NULL};
    ts_rss_result r;
    ts_error err;
    CHECK_EQ_INT(ts_rss_supervise(ok, 0.0, NULL, 0, &r, &err), TS_OK);
    CHECK_EQ_INT(r.outcome, TS_RSS_EXITED);
    CHECK_EQ_INT(r.code, 0);
    CHECK(r.peak_bytes > 0);

    /* A caller that ignores SIGCHLD (daemons do) still gets a measurement,
     * and its disposition back. */
    {
        struct sigaction ignore, now;
        memset(&ignore, 0, sizeof ignore);
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        CHECK_EQ_INT(sigaction(SIGCHLD, &ignore, &now), 0);
        CHECK_EQ_INT(ts_rss_supervise(three, 0.0, NULL, 0, &r, &err), TS_OK);
        CHECK_EQ_INT(r.outcome, TS_RSS_EXITED);
        CHECK_EQ_INT(r.code, 3);
        CHECK(r.peak_bytes > 0);
        CHECK_EQ_INT(sigaction(SIGCHLD, &now, &ignore), 0);
        CHECK(ignore.sa_handler == SIG_IGN);
    }

    CHECK_EQ_INT(ts_rss_supervise(three, 0.0, NULL, 0, &r, &err), TS_OK);
    CHECK_EQ_INT(r.outcome, TS_RSS_EXITED);
    CHECK_EQ_INT(r.code, 3);

    CHECK_EQ_INT(ts_rss_supervise(killed, 0.0, NULL, 0, &r, &err), TS_OK);
    CHECK_EQ_INT(r.outcome, TS_RSS_SIGNALED);
    CHECK_EQ_INT(r.code, SIGKILL);

    /* The deadline kills the shell and its background sleep (same group)
     * well before the 30 s they would take. */
    CHECK_EQ_INT(ts_rss_supervise(slow, 0.2, NULL, 0, &r, &err), TS_OK);
    CHECK_EQ_INT(r.outcome, TS_RSS_TIMED_OUT);

    /* exec failures come back through posix_spawn, which valgrind runs
     * as a fork (it cannot run CLONE_VFORK children): under valgrind the
     * child exits 127 instead and these checks are skipped (make valgrind
     * sets TORCHSCAN_TEST_VALGRIND) */
    if (getenv("TORCHSCAN_TEST_VALGRIND") != NULL) {
        printf("test_rss: spawn failures skipped under valgrind\n");
    }
    else {
        spawn_failures(missing, &r, &err);
    }

    CHECK_EQ_INT(ts_rss_supervise(NULL, 0.0, NULL, 0, &r, &err), TS_EINVAL);
}

int
main(void)
{
    test_format_parse();
    test_units();
    test_exit_status();
    test_supervise();
    return ts_test_report();
}
