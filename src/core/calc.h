/* Checked int64 arithmetic with a sticky overflow flag, for the formulas
 * (op_formulas_internal.h, module_match_internal.h,
 * module_formulas_internal.h). A formula threads one
 * calc through its arithmetic; after an overflow the operations return 0
 * and the formula's final check reports TS_EOVERFLOW (Python integers never
 * overflow, so an overflow is an error, never a wrong count), which keeps
 * the formulas readable while every product stays checked. */
#ifndef TS_CALC_H
#define TS_CALC_H

#include <stdbool.h>
#include <stdint.h>

#include "torchscan/core.h"

typedef struct calc {
    bool overflow;
} calc;

static inline int64_t
c_mul(calc *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!ts_mul(a, b, &r)) {
        c->overflow = true;
        return 0;
    }
    return r;
}

static inline int64_t
c_add(calc *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!ts_add(a, b, &r)) {
        c->overflow = true;
        return 0;
    }
    return r;
}

static inline int64_t
c_sub(calc *c, int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) {
        c->overflow = true;
        return 0;
    }
    return r;
}

static inline int64_t
c_prod(calc *c, const int64_t *values, int n)
{
    int64_t r = 1;
    for (int i = 0; i < n; i++) {
        r = c_mul(c, r, values[i]);
    }
    return r;
}

#endif
