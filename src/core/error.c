#include <stdarg.h>
#include <stdio.h>

#include "torchscan/core.h"

void
ts_error_clear(ts_error *err)
{
    if (err != NULL) {
        err->code = TS_OK;
        err->message[0] = '\0';
    }
}

int
ts_error_set(ts_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL) {
        return code;
    }
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

bool
ts_shape_numel(const ts_shape *shape, int64_t *out)
{
    int64_t n = 1;
    for (int i = 0; i < shape->ndim; i++) {
        if (!ts_mul(n, shape->dims[i], &n)) {
            return false;
        }
    }
    *out = n;
    return true;
}
