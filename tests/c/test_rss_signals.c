/* The RSS supervisor's signal and spawn paths with real children: a
 * signal sent to the supervisor (interrupted, twice), SIGCHLD ignored by
 * the caller (restored after), descriptors closed in the child, deadlines
 * at both ends, a descendant that leaves the group and signals after the
 * command ended, and the result line's parser. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "torchscan/rss.h"

/* A descendant that left the group and outlives the command is given up
 * after about a second of reaping (then ended here). */
static void
test_gives_up(void)
{
    ts_rss_result r;
    ts_error err;
    char script[256], pidfile[64];
    struct timespec t0, t1;
    FILE *f;
    long pid = 0;
    double elapsed;
    snprintf(
        pidfile, sizeof pidfile, "/tmp/ts_rss_signals_%ld", (long)getpid());
    snprintf(script,
             sizeof script,
             "setsid sh -c 'echo $$ > %s; exec sleep 20' </dev/null "
             ">/dev/null 2>&1 & sleep 0.2; exit 0",
             pidfile);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    {
        char *argv[] = {"sh", "-c", script, NULL};
        CHECK_EQ_INT(ts_rss_supervise(argv, 30.0, NULL, 0, &r, &err), TS_OK);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    elapsed = (double)(t1.tv_sec - t0.tv_sec)
              + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK_EQ_INT(r.outcome, TS_RSS_EXITED);
    CHECK_EQ_INT(r.code, 0);
    /* 0.2 s of the command, then at least 1,000 idle polls of 1 ms */
    CHECK(elapsed >= 1.0);
    f = fopen(pidfile, "r");
    CHECK(f != NULL && fscanf(f, "%ld", &pid) == 1 && pid > 0);
    if (f != NULL) {
        fclose(f);
    }
    remove(pidfile);
    if (pid > 0) {
        /* still running (given up, not killed); it is our child now */
        CHECK(kill((pid_t)pid, 0) == 0);
        kill((pid_t)pid, SIGKILL);
        waitpid((pid_t)pid, NULL, 0);
    }
}

static void
ignore_late(int signo)
{
    (void)signo;
}

static void
test_interrupted(void)
{
    ts_rss_result r;
    ts_error err;
    char script[256];
    /* a descendant in its own session signals the supervisor twice: the
     * first signal kills the command's group (no 5 s sleep) and is the one
     * reported; the second arrives while the descendant is reaped, with
     * no group left to kill */
    snprintf(script,
             sizeof script,
             "setsid sh -c 'kill -INT %ld; sleep 0.2; kill -TERM %ld' "
             "</dev/null >/dev/null 2>&1 & sleep 5",
             (long)getpid(),
             (long)getpid());
    {
        char *argv[] = {"sh", "-c", script, NULL};
        CHECK_EQ_INT(ts_rss_supervise(argv, 30.0, NULL, 0, &r, &err), TS_OK);
    }
    CHECK_EQ_INT(r.outcome, TS_RSS_INTERRUPTED);
    CHECK_EQ_INT(r.code, SIGINT);
    CHECK_EQ_INT(ts_rss_exit_status(&r), 128 + SIGINT);
    CHECK_EQ_STR(ts_rss_outcome_name(r.outcome), "interrupted");
}

static void
test_sigchld_ignored(void)
{
    ts_rss_result r;
    ts_error err;
    struct sigaction ign, now;
    char *argv[] = {"sh", "-c", "exit 7", NULL};
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    CHECK(sigaction(SIGCHLD, &ign, NULL) == 0);
    /* the exit status is still measured (wait4 finds the child) */
    CHECK_EQ_INT(ts_rss_supervise(argv, 0.0, NULL, 0, &r, &err), TS_OK);
    CHECK_EQ_INT(r.outcome, TS_RSS_EXITED);
    CHECK_EQ_INT(r.code, 7);
    CHECK(sigaction(SIGCHLD, NULL, &now) == 0);
    CHECK(now.sa_handler == SIG_IGN);
    /* SA_NOCLDWAIT with the default handler: the same */
    ign.sa_handler = SIG_DFL;
    ign.sa_flags = SA_NOCLDWAIT;
    CHECK(sigaction(SIGCHLD, &ign, NULL) == 0);
    CHECK_EQ_INT(ts_rss_supervise(argv, 0.0, NULL, 0, &r, &err), TS_OK);
    CHECK_EQ_INT(r.code, 7);
    CHECK(sigaction(SIGCHLD, NULL, &now) == 0);
    CHECK((now.sa_flags & SA_NOCLDWAIT) != 0);
    ign.sa_flags = 0;
    CHECK(sigaction(SIGCHLD, &ign, NULL) == 0);
}

static void
test_close_fds(void)
{
    ts_rss_result r;
    ts_error err;
    int fds[2];
    int close9[1] = {9};
    char buf[8] = {0};
    /* writing to descriptor 9 works when it is open, fails when the
     * supervisor closes it in the child */
    char *argv[] = {"sh", "-c", "exec 2>/dev/null; echo x >&9", NULL};
    CHECK(pipe(fds) == 0);
    CHECK(dup2(fds[1], 9) == 9);
    close(fds[1]);
    CHECK_EQ_INT(ts_rss_supervise(argv, 0.0, NULL, 0, &r, &err), TS_OK);
    CHECK_EQ_INT(r.code, 0);
    CHECK_EQ_INT(read(fds[0], buf, sizeof buf - 1), 2);
    CHECK_EQ_STR(buf, "x\n");
    CHECK_EQ_INT(ts_rss_supervise(argv, 0.0, close9, 1, &r, &err), TS_OK);
    CHECK_EQ_INT(r.outcome, TS_RSS_EXITED);
    CHECK(r.code != 0);
    close(9);
    close(fds[0]);
    /* a descriptor that cannot be closed: the spawn is not set up, and
     * the caller's handlers are back */
    {
        int bad[1] = {-1};
        struct sigaction now;
        CHECK_EQ_INT(ts_rss_supervise(argv, 0.0, bad, 1, &r, &err),
                     TS_EUNSUPPORTED);
        CHECK(strstr(err.message, "posix_spawn setup: ") != NULL);
        CHECK(sigaction(SIGINT, NULL, &now) == 0);
        CHECK(now.sa_handler == ignore_late);
    }
}

static void
test_deadlines(void)
{
    ts_rss_result r;
    ts_error err;
    char *quick[] = {"sh", "-c", "exit 3", NULL};
    char *slow[] = {"sleep", "5", NULL};
    /* beyond 1e8 s: no deadline at all */
    CHECK_EQ_INT(ts_rss_supervise(quick, 1e9, NULL, 0, &r, &err), TS_OK);
    CHECK_EQ_INT(r.outcome, TS_RSS_EXITED);
    CHECK_EQ_INT(r.code, 3);
    /* a nanosecond: rounded up to a microsecond, not "no deadline" */
    CHECK_EQ_INT(ts_rss_supervise(slow, 1e-9, NULL, 0, &r, &err), TS_OK);
    CHECK_EQ_INT(r.outcome, TS_RSS_TIMED_OUT);
    CHECK_EQ_INT(ts_rss_exit_status(&r), 124);
}

static void
test_late_signal(void)
{
    ts_rss_result r;
    ts_error err;
    char script[256];
    /* the command starts a descendant in its own session (not killed with
     * the group) that signals the supervisor after the command ended:
     * the signal waits while the descendant is reaped and reaches the
     * handler (no group to kill) when the mask is restored; the outcome is
     * the command's own */
    snprintf(script,
             sizeof script,
             "setsid sh -c 'sleep 0.3; kill -TERM %ld' </dev/null "
             ">/dev/null 2>&1 & sleep 0.1; exit 4",
             (long)getpid());
    {
        char *argv[] = {"sh", "-c", script, NULL};
        CHECK_EQ_INT(ts_rss_supervise(argv, 30.0, NULL, 0, &r, &err), TS_OK);
    }
    CHECK_EQ_INT(r.outcome, TS_RSS_EXITED);
    CHECK_EQ_INT(r.code, 4);
}

static void
test_small_pieces(void)
{
    ts_rss_result r;
    ts_error err;
    char *empty[] = {NULL};
    char *argv[] = {"true", NULL};
    CHECK_EQ_INT(ts_rss_maxrss_bytes(LONG_MAX), INT64_MAX);
    CHECK_EQ_INT(ts_rss_maxrss_bytes(-5), 0);
    CHECK_EQ_INT(ts_rss_maxrss_bytes(3), 3 * 1024);
    CHECK_EQ_INT(ts_rss_supervise(empty, 0.0, NULL, 0, &r, &err), TS_EINVAL);
    CHECK_EQ_STR(err.message, "a command is required");
    CHECK_EQ_INT(ts_rss_supervise(argv, 0.0, NULL, 0, NULL, &err), TS_EINVAL);
    CHECK_EQ_STR(ts_rss_outcome_name((ts_rss_outcome)99), "unknown");
    CHECK_EQ_STR(ts_rss_outcome_name(TS_RSS_SPAWN_FAILED), "spawn-failed");
    /* parse: a code past int32, errno from the peak, no peak, trailing */
    CHECK_EQ_INT(ts_rss_parse("exited 0 1", NULL, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exited 4294967296 1", &r, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exited -4294967296 1", &r, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exited 99999999999999999999 1", &r, &err),
                 TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exited 0 99999999999999999999", &r, &err),
                 TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exited 0 ", &r, &err), TS_EFORMAT);
    CHECK_EQ_INT(ts_rss_parse("exited 0 5\nx", &r, &err), TS_EFORMAT);
    CHECK_EQ_STR(err.message, "malformed supervisor result");
    CHECK_EQ_INT(ts_rss_parse("spawn-failed 2 0", &r, &err), TS_OK);
    CHECK_EQ_INT(r.outcome, TS_RSS_SPAWN_FAILED);
    CHECK_EQ_INT(ts_rss_exit_status(&r), 127); /* ENOENT */
    r.code = EACCES;
    CHECK_EQ_INT(ts_rss_exit_status(&r), 126);
}

int
main(void)
{
    /* a late signal (after a supervision restored the caller's handlers)
     * must not end the test */
    struct sigaction quiet;
    memset(&quiet, 0, sizeof quiet);
    quiet.sa_handler = ignore_late;
    sigemptyset(&quiet.sa_mask);
    sigaction(SIGTERM, &quiet, NULL);
    sigaction(SIGINT, &quiet, NULL);
    test_small_pieces();
    test_deadlines();
    test_close_fds();
    test_sigchld_ignored();
    test_interrupted();
    test_late_signal();
    test_gives_up();
    return ts_test_report();
}
