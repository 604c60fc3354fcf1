/* A tiny C test harness: CHECK macros print file:line on failure and the
 * program ends with the machine-readable line "N passed, N failed". */
#ifndef TS_TEST_HARNESS_H
#define TS_TEST_HARNESS_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int ts_test_passed;
static int ts_test_failed;

#define CHECK(cond)                              \
    do {                                         \
        if (cond) {                              \
            ts_test_passed++;                    \
        }                                        \
        else {                                   \
            ts_test_failed++;                    \
            fprintf(stderr,                      \
                    "%s:%d: CHECK(%s) failed\n", \
                    __FILE__,                    \
                    __LINE__,                    \
                    #cond);                      \
        }                                        \
    } while (0)

#define CHECK_EQ_INT(actual, expected)                    \
    do {                                                  \
        long long ts_a_ = (long long)(actual);            \
        long long ts_e_ = (long long)(expected);          \
        if (ts_a_ == ts_e_) {                             \
            ts_test_passed++;                             \
        }                                                 \
        else {                                            \
            ts_test_failed++;                             \
            fprintf(stderr,                               \
                    "%s:%d: %s == %lld, expected %lld\n", \
                    __FILE__,                             \
                    __LINE__,                             \
                    #actual,                              \
                    ts_a_,                                \
                    ts_e_);                               \
        }                                                 \
    } while (0)

#define CHECK_EQ_REAL(actual, expected)                          \
    do {                                                         \
        double ts_a_ = (double)(actual);                         \
        double ts_e_ = (double)(expected);                       \
        if (fabs(ts_a_ - ts_e_) <= 1e-9 * (1.0 + fabs(ts_e_))) { \
            ts_test_passed++;                                    \
        }                                                        \
        else {                                                   \
            ts_test_failed++;                                    \
            fprintf(stderr,                                      \
                    "%s:%d: %s == %.17g, expected %.17g\n",      \
                    __FILE__,                                    \
                    __LINE__,                                    \
                    #actual,                                     \
                    ts_a_,                                       \
                    ts_e_);                                      \
        }                                                        \
    } while (0)

#define CHECK_EQ_STR(actual, expected)                                     \
    do {                                                                   \
        const char *ts_a_ = (actual);                                      \
        const char *ts_e_ = (expected);                                    \
        if (ts_a_ != NULL && ts_e_ != NULL && strcmp(ts_a_, ts_e_) == 0) { \
            ts_test_passed++;                                              \
        }                                                                  \
        else {                                                             \
            ts_test_failed++;                                              \
            fprintf(stderr,                                                \
                    "%s:%d: %s == \"%s\", expected \"%s\"\n",              \
                    __FILE__,                                              \
                    __LINE__,                                              \
                    #actual,                                               \
                    ts_a_ ? ts_a_ : "(null)",                              \
                    ts_e_ ? ts_e_ : "(null)");                             \
        }                                                                  \
    } while (0)

/* Prints the summary line; returns the process exit status. */
static int
ts_test_report(void)
{
    printf("%d passed, %d failed\n", ts_test_passed, ts_test_failed);
    return ts_test_failed == 0 ? 0 : 1;
}

#endif
