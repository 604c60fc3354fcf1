/* Private to src/core: the record-keeping helpers that the operator
 * statistics (opstats.c) and the crawl session (session.c) share: growing a
 * flat array and copying a string (static inline: the session grows its
 * layer array and call stack on every module call), and appending a
 * diagnostic object (record_util.c).
 */
#ifndef TORCHSCAN_RECORD_UTIL_H
#define TORCHSCAN_RECORD_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "torchscan/core.h"

/* Grows *items (of `size`-byte elements) to hold at least `need` entries. */
static inline int
grow(void **items, size_t *cap, size_t need, size_t size)
{
    size_t new_cap;
    void *p;
    if (need <= *cap) {
        return TS_OK;
    }
    new_cap = *cap ? *cap * 2 : 16;
    while (new_cap < need) {
        new_cap *= 2;
    }
    if (new_cap > SIZE_MAX / size) {
        return TS_ENOMEM;
    }
    p = realloc(*items, new_cap * size);
    if (p == NULL) {
        return TS_ENOMEM;
    }
    *items = p;
    *cap = new_cap;
    return TS_OK;
}

static inline char *
dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy != NULL) {
        memcpy(copy, s, n);
    }
    return copy;
}

/* Appends {code, severity "warning", metric, [path], [operator], message}
 * to the array `list` (path and op may be NULL). TS_OK or TS_ENOMEM.
 * Defined out of line in record_util.c: it runs only when something went
 * wrong, and inlined into a recording function it would cost that
 * function's common path registers. */
int ts_diagnostic_append(json_t *list,
                         const char *code,
                         const char *metric,
                         const char *path,
                         const char *op,
                         const char *message);

#endif /* TORCHSCAN_RECORD_UTIL_H */
