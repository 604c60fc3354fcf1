/* Private to src/core: the record-keeping helpers that the operator
 * statistics (opstats.c) and the crawl session (session.c) share: growing a
 * flat array, copying a string, appending a diagnostic object. They are
 * static inline, so that the session's recording functions, which grow the
 * layer array and the call stack on every module call, keep them inlined.
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

/* Appends {code, severity, metric, [path|operator], message} to `list`. */
static inline int
add_diagnostic(json_t *list,
               const char *code,
               const char *metric,
               const char *path,
               const char *op,
               const char *message)
{
    json_t *d = json_pack("{s:s, s:s, s:s}",
                          "code",
                          code,
                          "severity",
                          "warning",
                          "metric",
                          metric);
    if (d == NULL) {
        return TS_ENOMEM;
    }
    if ((path != NULL && json_object_set_new(d, "path", json_string(path)))
        || (op != NULL && json_object_set_new(d, "operator", json_string(op)))
        || json_object_set_new(d, "message", json_string(message))
        || json_array_append_new(list, d)) {
        return TS_ENOMEM;
    }
    return TS_OK;
}

#endif /* TORCHSCAN_RECORD_UTIL_H */
