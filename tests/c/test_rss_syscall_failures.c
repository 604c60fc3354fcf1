/* The RSS supervisor when a system call fails: sigprocmask, sigaction and
 * the posix_spawn set-up calls are wrapped at link time (meson.build) and
 * fail on request, wait4 fails or is interrupted. Each failure is
 * TS_EUNSUPPORTED naming the call, and the caller's signal mask and
 * handlers are as they were (SIGCHLD's disposition included); a command
 * that was started is killed and reaped. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "torchscan/rss.h"

/* The call to fail ("" none) and which of its calls (1 = the next). */
static const char *fail_name = "";
static int fail_countdown;
static int fail_errno = EPERM;

static int
must_fail(const char *name)
{
    if (strcmp(name, fail_name) == 0 && fail_countdown > 0
        && --fail_countdown == 0) {
        return 1;
    }
    return 0;
}

int __real_sigprocmask(int how, const sigset_t *set, sigset_t *old);
int __wrap_sigprocmask(int how, const sigset_t *set, sigset_t *old);
int __real_sigaction(int sig,
                     const struct sigaction *act,
                     struct sigaction *old);
int __wrap_sigaction(int sig,
                     const struct sigaction *act,
                     struct sigaction *old);
int __real_posix_spawnattr_init(posix_spawnattr_t *a);
int __wrap_posix_spawnattr_init(posix_spawnattr_t *a);
int __real_posix_spawn_file_actions_init(posix_spawn_file_actions_t *a);
int __wrap_posix_spawn_file_actions_init(posix_spawn_file_actions_t *a);
int __real_posix_spawnattr_setflags(posix_spawnattr_t *a, short flags);
int __wrap_posix_spawnattr_setflags(posix_spawnattr_t *a, short flags);
int __real_posix_spawnattr_setpgroup(posix_spawnattr_t *a, pid_t g);
int __wrap_posix_spawnattr_setpgroup(posix_spawnattr_t *a, pid_t g);
int __real_posix_spawnattr_setsigmask(posix_spawnattr_t *a, const sigset_t *m);
int __wrap_posix_spawnattr_setsigmask(posix_spawnattr_t *a, const sigset_t *m);
int __real_posix_spawnattr_setsigdefault(posix_spawnattr_t *a,
                                         const sigset_t *m);
int __wrap_posix_spawnattr_setsigdefault(posix_spawnattr_t *a,
                                         const sigset_t *m);
pid_t __real_wait4(pid_t pid, int *status, int options, struct rusage *ru);
pid_t __wrap_wait4(pid_t pid, int *status, int options, struct rusage *ru);

int
__wrap_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    if (must_fail("sigprocmask")) {
        errno = fail_errno;
        return -1;
    }
    return __real_sigprocmask(how, set, old);
}

int
__wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (must_fail("sigaction")) {
        errno = fail_errno;
        return -1;
    }
    return __real_sigaction(sig, act, old);
}

int
__wrap_posix_spawnattr_init(posix_spawnattr_t *a)
{
    return must_fail("posix_spawnattr_init") ? ENOMEM
                                             : __real_posix_spawnattr_init(a);
}

int
__wrap_posix_spawn_file_actions_init(posix_spawn_file_actions_t *a)
{
    return must_fail("posix_spawn_file_actions_init")
               ? ENOMEM
               : __real_posix_spawn_file_actions_init(a);
}

int
__wrap_posix_spawnattr_setflags(posix_spawnattr_t *a, short flags)
{
    return must_fail("setflags") ? EINVAL
                                 : __real_posix_spawnattr_setflags(a, flags);
}

int
__wrap_posix_spawnattr_setpgroup(posix_spawnattr_t *a, pid_t g)
{
    return must_fail("setpgroup") ? EINVAL
                                  : __real_posix_spawnattr_setpgroup(a, g);
}

int
__wrap_posix_spawnattr_setsigmask(posix_spawnattr_t *a, const sigset_t *m)
{
    return must_fail("setsigmask") ? EINVAL
                                   : __real_posix_spawnattr_setsigmask(a, m);
}

int
__wrap_posix_spawnattr_setsigdefault(posix_spawnattr_t *a, const sigset_t *m)
{
    return must_fail("setsigdefault")
               ? EINVAL
               : __real_posix_spawnattr_setsigdefault(a, m);
}

pid_t
__wrap_wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
    if (must_fail("wait4")) {
        errno = fail_errno;
        return -1;
    }
    return __real_wait4(pid, status, options, ru);
}

static void
caller_handler(int signo)
{
    (void)signo;
}

/* The caller's state: SIGINT handled by caller_handler, SIGHUP blocked,
 * SIGCHLD as given. */
static void
set_caller_state(void (*chld)(int))
{
    struct sigaction a;
    sigset_t hup;
    memset(&a, 0, sizeof a);
    a.sa_handler = caller_handler;
    sigemptyset(&a.sa_mask);
    __real_sigaction(SIGINT, &a, NULL);
    a.sa_handler = chld;
    __real_sigaction(SIGCHLD, &a, NULL);
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    __real_sigprocmask(SIG_SETMASK, &hup, NULL);
}

/* The caller's state is intact. */
static void
check_caller_state(const char *what, void (*chld)(int))
{
    struct sigaction a;
    sigset_t mask;
    int ok = 1;
    __real_sigaction(SIGINT, NULL, &a);
    ok &= a.sa_handler == caller_handler;
    __real_sigaction(SIGTERM, NULL, &a);
    ok &= a.sa_handler == SIG_DFL;
    __real_sigaction(SIGCHLD, NULL, &a);
    ok &= a.sa_handler == chld;
    __real_sigprocmask(SIG_SETMASK, NULL, &mask);
    ok &= sigismember(&mask, SIGHUP) == 1 && sigismember(&mask, SIGINT) == 0
          && sigismember(&mask, SIGALRM) == 0;
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "%s: the caller's signal state changed\n", what);
    }
}

/* Supervises `sh -c "exit 5"` with call `name`'s n-th call failing;
 * expects TS_EUNSUPPORTED with a message starting `prefix`. */
static void
expect_failure(const char *name, int n, const char *prefix, void (*chld)(int))
{
    char *argv[] = {"sh", "-c", "exit 5", NULL};
    ts_rss_result r;
    ts_error err;
    int rc;
    set_caller_state(chld);
    fail_name = name;
    fail_countdown = n;
    rc = ts_rss_supervise(argv, 0.0, NULL, 0, &r, &err);
    fail_name = "";
    CHECK_EQ_INT(rc, TS_EUNSUPPORTED);
    if (rc != TS_EUNSUPPORTED
        || strncmp(err.message, prefix, strlen(prefix)) != 0) {
        fprintf(stderr,
                "%s #%d: rc %d, message '%s' (expected '%s...')\n",
                name,
                n,
                rc,
                rc != TS_OK ? err.message : "",
                prefix);
        CHECK(!"message");
    }
    check_caller_state(name, chld);
}

int
main(void)
{
    char *sleeper[] = {"sleep", "5", NULL};
    char *quick[] = {"sh", "-c", "exit 5", NULL};
    ts_rss_result r;
    ts_error err;
    /* the signal set-up: blocking, then each handler (the first, the
     * third), then SIGCHLD's default where the caller ignores it */
    expect_failure("sigprocmask", 1, "sigprocmask: ", SIG_DFL);
    expect_failure("sigaction", 1, "sigaction: ", SIG_DFL);
    expect_failure("sigaction", 3, "sigaction: ", SIG_DFL);
    /* calls 1-4 install the handlers, 5 reads SIGCHLD's, 6 sets it */
    expect_failure("sigaction", 6, "sigaction: ", SIG_IGN);
    /* the spawn's set-up */
    expect_failure(
        "posix_spawnattr_init", 1, "posix_spawnattr_init: ", SIG_DFL);
    expect_failure("posix_spawn_file_actions_init",
                   1,
                   "posix_spawn_file_actions_init: ",
                   SIG_DFL);
    expect_failure("setflags", 1, "posix_spawn setup: ", SIG_DFL);
    expect_failure("setpgroup", 1, "posix_spawn setup: ", SIG_DFL);
    expect_failure("setsigmask", 1, "posix_spawn setup: ", SIG_DFL);
    expect_failure("setsigdefault", 1, "posix_spawn setup: ", SIG_DFL);
    /* SIGCHLD's disposition cannot be read: left as it is, the command
     * still measured */
    set_caller_state(SIG_DFL);
    fail_name = "sigaction";
    fail_countdown = 5;
    CHECK_EQ_INT(ts_rss_supervise(quick, 0.0, NULL, 0, &r, &err), TS_OK);
    fail_name = "";
    CHECK_EQ_INT(r.outcome, TS_RSS_EXITED);
    CHECK_EQ_INT(r.code, 5);
    check_caller_state("sigaction query", SIG_DFL);
    /* wait4 interrupted once: waited again */
    set_caller_state(SIG_DFL);
    fail_name = "wait4";
    fail_countdown = 1;
    fail_errno = EINTR;
    CHECK_EQ_INT(ts_rss_supervise(quick, 0.0, NULL, 0, &r, &err), TS_OK);
    fail_name = "";
    CHECK_EQ_INT(r.code, 5);
    /* wait4 failing: TS_EUNSUPPORTED, and the command (sleep 5) is killed
     * and reaped: no child is left */
    fail_name = "wait4";
    fail_countdown = 1;
    fail_errno = ECHILD;
    CHECK_EQ_INT(ts_rss_supervise(sleeper, 0.0, NULL, 0, &r, &err),
                 TS_EUNSUPPORTED);
    fail_name = "";
    CHECK(strncmp(err.message, "wait4: ", 7) == 0);
    errno = 0;
    CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
    check_caller_state("wait4", SIG_DFL);
    return ts_test_report();
}
