/* torchscan-rss-supervisor: runs one command in a fresh process group and
 * reports its peak resident set size (wait4's ru_maxrss).
 *
 *   torchscan-rss-supervisor [--timeout SECONDS] [--result-fd N] -- COMMAND
 *                            [ARG...]
 *
 * The result line (see torchscan/rss.h) goes to file descriptor N (default
 * 2, stderr); the command inherits the standard streams but never N.
 * measure_peak_rss launches this program rather than forking the (large)
 * Python process, so the command's figure starts from this program's
 * ~1 MiB instead of the caller's resident memory.
 *
 * Exit status: the command's exit status; 128 + signal when it was killed
 * by a signal or when this program was interrupted; 124 on timeout; 127
 * when the command was not found, 126 when it could not be started; 2 on
 * bad usage; 1 when supervising failed.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "torchscan/rss.h"

static int
usage(void)
{
    fputs(
        "usage: torchscan-rss-supervisor [--timeout SECONDS] "
        "[--result-fd N] -- COMMAND [ARG...]\n",
        stderr);
    return 2;
}

static int
write_all(int fd, const char *text, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        text += n;
        len -= (size_t)n;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    double timeout = 0.0;
    long result_fd = 2;
    int first = -1;
    int close_fd;
    ts_rss_result result;
    ts_error err;
    char line[128];
    int len;
#ifdef __linux__
    /* If the caller dies, SIGTERM reaches us and the command's group is
     * killed instead of orphaned. */
    (void)prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
#endif
    for (int i = 1; i < argc; i++) {
        char *end;
        if (strcmp(argv[i], "--") == 0) {
            first = i + 1;
            break;
        }
        if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            errno = 0;
            timeout = strtod(argv[++i], &end);
            if (*end != '\0' || errno != 0 || !isfinite(timeout)
                || timeout <= 0.0) {
                fputs(
                    "torchscan-rss-supervisor: --timeout needs a positive "
                    "number of seconds\n",
                    stderr);
                return 2;
            }
        }
        else if (strcmp(argv[i], "--result-fd") == 0 && i + 1 < argc) {
            errno = 0;
            result_fd = strtol(argv[++i], &end, 10);
            if (*end != '\0' || errno != 0 || result_fd < 0
                || result_fd > INT_MAX) {
                fputs(
                    "torchscan-rss-supervisor: --result-fd needs a file "
                    "descriptor\n",
                    stderr);
                return 2;
            }
        }
        else {
            return usage();
        }
    }
    if (first < 0 || first >= argc) {
        return usage();
    }
    close_fd = (int)result_fd;
    ts_error_clear(&err);
    if (ts_rss_supervise(argv + first,
                         timeout,
                         result_fd > 2 ? &close_fd : NULL,
                         result_fd > 2 ? 1 : 0,
                         &result,
                         &err)
        != TS_OK) {
        fprintf(stderr, "torchscan-rss-supervisor: %s\n", err.message);
        return 1;
    }
    len = ts_rss_format(&result, line, sizeof line);
    if (len < 0 || (size_t)len >= sizeof line
        || write_all(close_fd, line, (size_t)len) != 0) {
        fprintf(stderr, "torchscan-rss-supervisor: cannot write the result\n");
        return 1;
    }
    return ts_rss_exit_status(&result);
}
