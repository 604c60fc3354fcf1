/* Peak resident set size of a command in a fresh child process (contract
 * 1.7). ts_rss_supervise is what the small `torchscan-rss-supervisor`
 * program runs: because that program is tiny, the command it starts does
 * not inherit a large caller's high-water mark through fork (a fork of a
 * large Python process starts with the parent's resident pages, and Linux
 * carries their peak into ru_maxrss across exec). The line format lets the
 * Python side read the supervisor's result without parsing logic of its
 * own.
 */
#ifndef TORCHSCAN_RSS_H
#define TORCHSCAN_RSS_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TS_RSS_EXITED = 0,       /* code: exit status */
    TS_RSS_SIGNALED = 1,     /* code: the signal that ended the command */
    TS_RSS_TIMED_OUT = 2,    /* the deadline passed; the group was killed */
    TS_RSS_INTERRUPTED = 3,  /* code: the signal the supervisor received
                                (SIGINT/SIGTERM/SIGHUP); group killed */
    TS_RSS_SPAWN_FAILED = 4, /* code: errno of posix_spawnp */
} ts_rss_outcome;

typedef struct ts_rss_result {
    ts_rss_outcome outcome;
    int code;
    int64_t peak_bytes; /* the child's ru_maxrss in bytes; 0 when it never
                           ran */
} ts_rss_result;

/* ru_maxrss in bytes: Linux reports KiB, macOS bytes. */
int64_t ts_rss_maxrss_bytes(long ru_maxrss);

/* Runs argv (argv[0] looked up in PATH, the environment inherited) in a
 * new process group, waits for it with wait4 and fills *out with how it
 * ended and its ru_maxrss.
 *
 * While it waits, SIGINT, SIGTERM and SIGHUP sent to the calling process,
 * and the deadline `timeout_seconds` (> 0; <= 0 means none), kill the whole
 * process group with SIGKILL; the command is then reaped and the outcome is
 * TS_RSS_INTERRUPTED or TS_RSS_TIMED_OUT. After the command ends, what is
 * left of its process group is killed too, and on Linux (where the caller
 * becomes a child subreaper) every descendant that ended is reaped, so no
 * zombie or orphan of the group outlives the call.
 *
 * `close_fds` (may be NULL) are closed in the child. Installs and restores
 * signal handlers and the signal mask: meant for a dedicated program, not
 * for a library host. Returns TS_OK (also when the command failed; see
 * out->outcome) or TS_EINVAL / TS_EUNSUPPORTED with err set when the
 * process could not be supervised. */
int ts_rss_supervise(char *const argv[],
                     double timeout_seconds,
                     const int *close_fds,
                     size_t nclose,
                     ts_rss_result *out,
                     ts_error *err);

/* Writes the one-line form of a result ("exited 0 123456\n",
 * "signaled 9 ...", "timeout 0 ...", "interrupted 2 ...",
 * "spawn-failed 2 0") into buf; returns what snprintf returns. */
int ts_rss_format(const ts_rss_result *result, char *buf, size_t size);

/* Parses a line written by ts_rss_format (a trailing newline is allowed).
 * TS_EFORMAT when it is malformed. */
int ts_rss_parse(const char *line, ts_rss_result *out, ts_error *err);

/* The exit status a shell would give for the command's outcome: its own
 * status when it exited; 128 + N when signal N ended it (or, outcome
 * interrupted, when signal N stopped the supervisor, which killed the
 * command); 124 on timeout (as GNU timeout); 127 when it was not found
 * (spawn errno ENOENT or ENOTDIR), 126 when it could not be started
 * (found but not executable, or any other spawn error). */
int ts_rss_exit_status(const ts_rss_result *result);

/* "exited", "signaled", "timeout", "interrupted", "spawn-failed". */
const char *ts_rss_outcome_name(ts_rss_outcome outcome);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_RSS_H */
