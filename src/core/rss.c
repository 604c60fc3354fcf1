/* Peak RSS of a command in a fresh process group, reaped with wait4.
 *
 * The command is started with posix_spawnp: on Linux (glibc) that is a
 * vfork-style clone, so the child never holds a copy of the supervisor's
 * pages either. Signals are handled with the classic race-free pattern:
 * the handler itself kills the process group (kill is async-signal-safe),
 * so a signal that lands just before wait4 blocks cannot be lost; wait4
 * then returns because the child died.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "torchscan/rss.h"

#define FAIL(err, code, ...) (ts_error_set((err), (code), __VA_ARGS__), (code))

extern char **environ;

/* The process group to kill from a signal handler (0: none), and the first
 * signal that arrived while supervising. */
static volatile sig_atomic_t kill_group;
static volatile sig_atomic_t caught_signal;

static const int handled_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGALRM};
#define NHANDLED (sizeof handled_signals / sizeof handled_signals[0])

static void
on_signal(int signo)
{
    int saved = errno;
    if (caught_signal == 0) {
        caught_signal = signo;
    }
    if (kill_group > 0) {
        kill(-(pid_t)kill_group, SIGKILL);
    }
    errno = saved;
}

int64_t
ts_rss_maxrss_bytes(long ru_maxrss)
{
    int64_t value = ru_maxrss < 0 ? 0 : (int64_t)ru_maxrss;
#ifdef __APPLE__
    return value;
#else
    return value > INT64_MAX / 1024 ? INT64_MAX : value * 1024;
#endif
}

/* Reaps descendants that were re-parented to us (Linux child subreaper)
 * after their group was killed. Descendants that left the group and are
 * still running are given up after about a second. */
static void
reap_descendants(void)
{
    const struct timespec pause = {0, 1000000};
    for (int idle = 0; idle < 1000;) {
        pid_t r = waitpid(-1, NULL, WNOHANG);
        if (r > 0) {
            continue;
        }
        if (r < 0 && errno != EINTR) {
            break; /* ECHILD: nothing left */
        }
        if (r == 0) {
            nanosleep(&pause, NULL);
            idle++;
        }
    }
}

static void
set_deadline(double seconds)
{
    struct itimerval timer;
    memset(&timer, 0, sizeof timer);
    /* Beyond ~3 years there is no practical deadline (and some systems
     * refuse such itimer values). */
    if (seconds > 0.0 && seconds < 1e8) {
        timer.it_value.tv_sec = (time_t)seconds;
        timer.it_value.tv_usec =
            (suseconds_t)((seconds - (double)timer.it_value.tv_sec) * 1e6);
        if (timer.it_value.tv_sec == 0 && timer.it_value.tv_usec == 0) {
            timer.it_value.tv_usec = 1;
        }
    }
    setitimer(ITIMER_REAL, &timer, NULL);
}

/* What supervising changes in the process's signal state, recorded so
 * that restore_signals can put back exactly what was changed. */
typedef struct signal_state {
    sigset_t block;      /* the handled signals */
    sigset_t saved_mask; /* the caller's signal mask */
    bool masked;
    struct sigaction previous[NHANDLED];
    bool installed[NHANDLED];
    struct sigaction chld_previous;
    bool chld_changed;
} signal_state;

/* Blocks the handled signals, installs on_signal for them and gives
 * SIGCHLD its default disposition where it was ignored. *s (zeroed by the
 * caller) records what succeeded, also on failure. TS_OK or
 * TS_EUNSUPPORTED. */
static int
install_signals(signal_state *s, ts_error *err)
{
    sigemptyset(&s->block);
    for (size_t i = 0; i < NHANDLED; i++) {
        sigaddset(&s->block, handled_signals[i]);
    }
    if (sigprocmask(SIG_BLOCK, &s->block, &s->saved_mask) != 0) {
        return FAIL(err, TS_EUNSUPPORTED, "sigprocmask: %s", strerror(errno));
    }
    s->masked = true;
    for (size_t i = 0; i < NHANDLED; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = on_signal;
        action.sa_mask = s->block;
        if (sigaction(handled_signals[i], &action, &s->previous[i]) != 0) {
            return FAIL(
                err, TS_EUNSUPPORTED, "sigaction: %s", strerror(errno));
        }
        s->installed[i] = true;
    }
    /* With SIGCHLD ignored (or SA_NOCLDWAIT) the kernel reaps the command
     * itself and wait4 finds no child: the default for the measurement; the
     * command inherits it. */
    if (sigaction(SIGCHLD, NULL, &s->chld_previous) == 0
        && (s->chld_previous.sa_handler == SIG_IGN
            || (s->chld_previous.sa_flags & SA_NOCLDWAIT) != 0)) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        if (sigaction(SIGCHLD, &dfl, NULL) != 0) {
            return FAIL(
                err, TS_EUNSUPPORTED, "sigaction: %s", strerror(errno));
        }
        s->chld_changed = true;
    }
    return TS_OK;
}

/* Puts back the caller's signal mask, handlers and SIGCHLD disposition. */
static void
restore_signals(const signal_state *s)
{
    /* A signal held since the child was reaped reaches on_signal here
     * (with no group left to kill), not the default disposition. */
    if (s->masked) {
        sigprocmask(SIG_SETMASK, &s->saved_mask, NULL);
    }
    for (size_t i = 0; i < NHANDLED; i++) {
        if (s->installed[i]) {
            sigaction(handled_signals[i], &s->previous[i], NULL);
        }
    }
    if (s->chld_changed) {
        sigaction(SIGCHLD, &s->chld_previous, NULL);
    }
}

/* Starts argv in its own process group, with the caller's signal mask and
 * default dispositions for the handled signals, `close_fds` closed. TS_OK
 * with *pid set, or with *spawn_errno set when posix_spawnp failed (the
 * command's outcome, not a supervision error); TS_EUNSUPPORTED when the
 * spawn could not be set up. */
static int
spawn_command(char *const argv[],
              const int *close_fds,
              size_t nclose,
              const signal_state *s,
              pid_t *pid,
              int *spawn_errno,
              ts_error *err)
{
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t actions;
    int rc = TS_OK;
    int e;
    if ((e = posix_spawnattr_init(&attr)) != 0) {
        return FAIL(
            err, TS_EUNSUPPORTED, "posix_spawnattr_init: %s", strerror(e));
    }
    if ((e = posix_spawn_file_actions_init(&actions)) != 0) {
        rc = FAIL(err,
                  TS_EUNSUPPORTED,
                  "posix_spawn_file_actions_init: %s",
                  strerror(e));
        posix_spawnattr_destroy(&attr);
        return rc;
    }
    /* The child: its own process group, the caller's signal mask and
     * default dispositions for the signals handled here. */
    e = posix_spawnattr_setflags(&attr,
                                 POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK
                                     | POSIX_SPAWN_SETSIGDEF);
    if (e == 0) {
        e = posix_spawnattr_setpgroup(&attr, 0);
    }
    if (e == 0) {
        e = posix_spawnattr_setsigmask(&attr, &s->saved_mask);
    }
    if (e == 0) {
        e = posix_spawnattr_setsigdefault(&attr, &s->block);
    }
    for (size_t i = 0; e == 0 && close_fds != NULL && i < nclose; i++) {
        e = posix_spawn_file_actions_addclose(&actions, close_fds[i]);
    }
    if (e != 0) {
        rc = FAIL(err, TS_EUNSUPPORTED, "posix_spawn setup: %s", strerror(e));
    }
    else {
        *spawn_errno =
            posix_spawnp(pid, argv[0], &actions, &attr, argv, environ);
    }
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    return rc;
}

/* Waits for the command with the handled signals unblocked (on_signal then
 * kills its group) and the deadline armed; then kills what is left of its
 * process group and reaps the descendants that come back. TS_OK, or
 * TS_EUNSUPPORTED when wait4 failed. */
static int
wait_command(pid_t pid,
             double timeout_seconds,
             const sigset_t *block,
             int *status,
             struct rusage *usage,
             ts_error *err)
{
    int rc = TS_OK;
    kill_group = (sig_atomic_t)pid;
    set_deadline(timeout_seconds);
    /* Signals that arrived since the spawn are delivered here: the handler
     * already knows the group. */
    sigprocmask(SIG_UNBLOCK, block, NULL);
    while (wait4(pid, status, 0, usage) < 0) {
        if (errno != EINTR) {
            rc = FAIL(err, TS_EUNSUPPORTED, "wait4: %s", strerror(errno));
            break;
        }
    }
    sigprocmask(SIG_BLOCK, block, NULL);
    set_deadline(0.0);
    kill_group = 0;
    /* Nothing of the command's process group outlives the measurement. */
    kill(-pid, SIGKILL);
    reap_descendants();
    return rc;
}

/* How the command ended: a signal the supervisor caught (the deadline's
 * SIGALRM included) wins over the command's own status. */
static void
set_outcome(ts_rss_result *out, int status, const struct rusage *usage)
{
    out->peak_bytes = ts_rss_maxrss_bytes(usage->ru_maxrss);
    if (caught_signal == SIGALRM) {
        out->outcome = TS_RSS_TIMED_OUT;
    }
    else if (caught_signal != 0) {
        out->outcome = TS_RSS_INTERRUPTED;
        out->code = caught_signal;
    }
    else if (WIFSIGNALED(status)) {
        out->outcome = TS_RSS_SIGNALED;
        out->code = WTERMSIG(status);
    }
    else {
        out->outcome = TS_RSS_EXITED;
        out->code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    }
}

int
ts_rss_supervise(char *const argv[],
                 double timeout_seconds,
                 const int *close_fds,
                 size_t nclose,
                 ts_rss_result *out,
                 ts_error *err)
{
    signal_state signals;
    struct rusage usage;
    int status = 0;
    int spawn_errno = 0;
    pid_t pid = -1;
    int rc;
    if (argv == NULL || argv[0] == NULL || out == NULL) {
        return FAIL(err, TS_EINVAL, "a command is required");
    }
    memset(out, 0, sizeof *out);
    memset(&usage, 0, sizeof usage);
    memset(&signals, 0, sizeof signals);
    kill_group = 0;
    caught_signal = 0;
    rc = install_signals(&signals, err);
    if (rc == TS_OK) {
#ifdef __linux__
        /* Orphaned descendants of the command come back to us to be reaped
         * (best effort: without it they go to init). */
        (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif
        rc = spawn_command(
            argv, close_fds, nclose, &signals, &pid, &spawn_errno, err);
    }
    if (rc == TS_OK && spawn_errno != 0) {
        out->outcome = TS_RSS_SPAWN_FAILED;
        out->code = spawn_errno;
    }
    else if (rc == TS_OK) {
        rc = wait_command(
            pid, timeout_seconds, &signals.block, &status, &usage, err);
        set_outcome(out, status, &usage);
    }
    restore_signals(&signals);
    return rc;
}

int
ts_rss_exit_status(const ts_rss_result *result)
{
    switch (result->outcome) {
        case TS_RSS_EXITED:
            return result->code;
        case TS_RSS_SIGNALED:
        case TS_RSS_INTERRUPTED:
            return 128 + result->code;
        case TS_RSS_TIMED_OUT:
            return 124;
        case TS_RSS_SPAWN_FAILED:
        default:
            return result->code == ENOENT || result->code == ENOTDIR ? 127
                                                                     : 126;
    }
}

static const char *const outcome_names[] = {
    "exited", "signaled", "timeout", "interrupted", "spawn-failed"};
#define NOUTCOMES (sizeof outcome_names / sizeof outcome_names[0])

const char *
ts_rss_outcome_name(ts_rss_outcome outcome)
{
    return (size_t)outcome < NOUTCOMES ? outcome_names[outcome] : "unknown";
}

int
ts_rss_format(const ts_rss_result *result, char *buf, size_t size)
{
    return snprintf(buf,
                    size,
                    "%s %d %" PRId64 "\n",
                    ts_rss_outcome_name(result->outcome),
                    result->code,
                    result->peak_bytes);
}

int
ts_rss_parse(const char *line, ts_rss_result *out, ts_error *err)
{
    const char *p = line;
    const char *word;
    size_t len;
    char *end;
    long code;
    long long peak;
    size_t k;
    if (line == NULL || out == NULL) {
        return FAIL(err, TS_EFORMAT, "no supervisor result");
    }
    word = p;
    while (*p != '\0' && *p != ' ') {
        p++;
    }
    len = (size_t)(p - word);
    for (k = 0; k < NOUTCOMES; k++) {
        if (strlen(outcome_names[k]) == len
            && strncmp(outcome_names[k], word, len) == 0) {
            break;
        }
    }
    if (k == NOUTCOMES || *p != ' ') {
        return FAIL(err, TS_EFORMAT, "malformed supervisor result");
    }
    errno = 0;
    code = strtol(p + 1, &end, 10);
    if (end == p + 1 || *end != ' ' || errno != 0 || code < INT32_MIN
        || code > INT32_MAX) {
        return FAIL(err, TS_EFORMAT, "malformed supervisor result");
    }
    p = end + 1;
    peak = strtoll(p, &end, 10);
    if (end == p || errno != 0 || peak < 0
        || (*end != '\0' && strcmp(end, "\n") != 0)) {
        return FAIL(err, TS_EFORMAT, "malformed supervisor result");
    }
    out->outcome = (ts_rss_outcome)k;
    out->code = (int)code;
    out->peak_bytes = (int64_t)peak;
    return TS_OK;
}
