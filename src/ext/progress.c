/* The progress line on a terminal (progress.h). The engine decides when to
 * draw and what (src/core/progress.c); this file owns the descriptor, the
 * one-line-per-process rule and, for a single long call, a drawing thread.
 *
 * Nothing here runs inside a timed region: measure_latency's loop draws
 * between blocks (timing.c), and the drawing thread serves passes that are
 * not timed. The thread never touches Python (no GIL), blocks every signal
 * (so Ctrl-C reaches the thread that waits on the workload or the child),
 * and writes with write(2) to its own duplicate of the descriptor, so that
 * a redirection of fd 2 meanwhile (the profiler's quiet start) does not
 * send the line elsewhere, and no child inherits it (close-on-exec). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "fail.h"
#include "progress.h"

/* The one line a process may show at a time. */
static atomic_bool line_taken = false;

/* Columns when the terminal does not say. */
#define DEFAULT_WIDTH 80

int64_t
tsx_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * INT64_C(1000000000) + (int64_t)ts.tv_nsec;
}

/* Writes all of buf, giving up on an error (a line is not worth a retry
 * loop: a full or vanished terminal just loses it). */
static void
write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        buf += n;
        len -= (size_t)n;
    }
}

static size_t
terminal_width(int fd)
{
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        return ws.ws_col;
    }
    return DEFAULT_WIDTH;
}

void
tsx_progress_open(tsx_progress *p, int fd)
{
    bool expected = false;
    p->fd = -1;
    ts_progress_init(&p->line, tsx_monotonic_ns());
    if (fd < 0 || !isatty(fd)
        || !atomic_compare_exchange_strong(&line_taken, &expected, true)) {
        return;
    }
    p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (p->fd < 0) {
        atomic_store(&line_taken, false);
    }
}

bool
tsx_progress_due(const tsx_progress *p, int64_t *now_ns)
{
    if (p->fd < 0) {
        return false;
    }
    *now_ns = tsx_monotonic_ns();
    return ts_progress_due(&p->line, *now_ns);
}

void
tsx_progress_show(tsx_progress *p, const char *text, int64_t now_ns)
{
    char buf[TS_PROGRESS_LINE_SIZE];
    size_t len;
    if (p->fd < 0) {
        return;
    }
    len = ts_progress_draw(&p->line, text, terminal_width(p->fd), now_ns, buf);
    write_all(p->fd, buf, len);
}

void
tsx_progress_close(tsx_progress *p)
{
    char buf[TS_PROGRESS_LINE_SIZE];
    if (p->fd < 0) {
        return;
    }
    write_all(p->fd, buf, ts_progress_clear(&p->line, buf));
    close(p->fd);
    p->fd = -1;
    atomic_store(&line_taken, false);
}

/* ---- a thread for one long call ---- */

#define TICKER_CAPSULE "torchscan._engine.progress"

typedef struct ticker {
    tsx_progress progress;
    char label[96];
    pid_t pid; /* the process that started the thread */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
} ticker;

static struct timespec
timespec_of(int64_t ns)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / INT64_C(1000000000));
    ts.tv_nsec = (long)(ns % INT64_C(1000000000));
    return ts;
}

static void *
ticker_main(void *arg)
{
    ticker *t = arg;
    int64_t next = t->progress.line.start_ns + TS_PROGRESS_DELAY_NS;
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        struct timespec deadline = timespec_of(next);
        int rc = pthread_cond_timedwait(&t->wake, &t->lock, &deadline);
        int64_t now;
        char text[TS_PROGRESS_TEXT_SIZE];
        if (t->stop || rc != ETIMEDOUT) {
            continue;
        }
        now = tsx_monotonic_ns();
        pthread_mutex_unlock(&t->lock);
        ts_progress_pass_text(text, t->label, now - t->progress.line.start_ns);
        tsx_progress_show(&t->progress, text, now);
        pthread_mutex_lock(&t->lock);
        next = now + TS_PROGRESS_PERIOD_NS;
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* Starts the thread with every signal blocked (it inherits the mask). */
static int
start_thread(ticker *t)
{
    pthread_condattr_t attr;
    sigset_t all, old;
    int rc;
    if (pthread_condattr_init(&attr) != 0) {
        return -1;
    }
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0) {
        rc = pthread_cond_init(&t->wake, &attr);
    }
    pthread_condattr_destroy(&attr);
    if (rc != 0) {
        return -1;
    }
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        pthread_cond_destroy(&t->wake);
        return -1;
    }
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&t->thread, NULL, ticker_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_mutex_destroy(&t->lock);
        pthread_cond_destroy(&t->wake);
        return -1;
    }
    return 0;
}

/* Stops and joins the thread, blanks the line. The join waits for at most
 * one write to the terminal; release_gil lets other Python threads run
 * meanwhile (not from a destructor). In a child forked while the thread
 * ran, the thread does not exist: the line is left to the parent (the
 * child closes its copy of the descriptor; the lock may be held forever). */
static void
ticker_stop(ticker *t, bool release_gil)
{
    if (t->pid != getpid()) {
        t->stop = true;
        close(t->progress.fd);
        t->progress.fd = -1;
        return;
    }
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    if (release_gil) {
        Py_BEGIN_ALLOW_THREADS
        pthread_join(t->thread, NULL);
        Py_END_ALLOW_THREADS
    }
    else {
        pthread_join(t->thread, NULL);
    }
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->wake);
    tsx_progress_close(&t->progress);
}

static void
ticker_capsule_free(PyObject *capsule)
{
    ticker *t = PyCapsule_GetPointer(capsule, TICKER_CAPSULE);
    if (t == NULL) {
        PyErr_Clear();
        return;
    }
    if (!t->stop) {
        ticker_stop(t, false);
    }
    PyMem_RawFree(t);
}

PyObject *
tsx_engine_progress_start(PyObject *module, PyObject *args)
{
    const char *label;
    int fd;
    ticker *t;
    PyObject *capsule;
    if (!PyArg_ParseTuple(args, "si:progress_start", &label, &fd)) {
        return NULL;
    }
    t = PyMem_RawCalloc(1, sizeof *t);
    if (t == NULL) {
        return PyErr_NoMemory();
    }
    tsx_progress_open(&t->progress, fd);
    if (t->progress.fd < 0) {
        PyMem_RawFree(t);
        Py_RETURN_NONE;
    }
    snprintf(t->label, sizeof t->label, "%s", label);
    t->pid = getpid();
    if (start_thread(t) < 0) {
        /* no thread: no line, as on a pipe */
        tsx_progress_close(&t->progress);
        PyMem_RawFree(t);
        Py_RETURN_NONE;
    }
    capsule = PyCapsule_New(t, TICKER_CAPSULE, ticker_capsule_free);
    if (capsule == NULL) {
        ticker_stop(t, false);
        PyMem_RawFree(t);
    }
    return capsule;
}

PyObject *
tsx_engine_progress_stop(PyObject *module, PyObject *handle)
{
    ticker *t = PyCapsule_GetPointer(handle, TICKER_CAPSULE);
    if (t == NULL) {
        return NULL;
    }
    if (!t->stop) {
        ticker_stop(t, true);
    }
    Py_RETURN_NONE;
}
