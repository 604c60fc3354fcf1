/* Building ts_op_call packets in the C tests, as the extension's binding
 * fills them: shapes from text ("2,3,4"), then arguments in schema order
 * (a_*) and outputs (o_tensor). Shared by test_op_formulas.c and
 * test_attention_match.c. */
#ifndef TS_TEST_OP_CALLS_H
#define TS_TEST_OP_CALLS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/op_formulas.h"

/* "2,3,4" -> a dense (2, 3, 4) shape; "" -> 0-D. */
static inline ts_shape
shape(ts_dtype_class dtype, const char *dims)
{
    ts_shape s;
    const char *p = dims;
    memset(&s, 0, sizeof s);
    s.dtype = dtype;
    s.dense = true;
    while (*p != '\0' && s.ndim < TS_MAX_DIMS) {
        char *end;
        s.dims[s.ndim++] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    return s;
}

static inline ts_op_call
call_new(void)
{
    ts_op_call c;
    memset(&c, 0, sizeof c);
    return c;
}

/* Arguments past TS_OP_MAX_ARGS land in a scratch slot and are dropped, as
 * a binding limited to TS_OP_MAX_ARGS would drop them. */
static inline ts_op_arg *
next_arg(ts_op_call *c)
{
    static ts_op_arg scratch;
    ts_op_arg *a = c->nargs < TS_OP_MAX_ARGS ? &c->args[c->nargs++] : &scratch;
    memset(a, 0, sizeof *a);
    return a;
}

static inline void
a_tensor(ts_op_call *c, ts_dtype_class dtype, const char *dims)
{
    ts_op_arg *a = next_arg(c);
    a->kind = TS_ARG_TENSOR;
    a->tensor = shape(dtype, dims);
}

static inline void
a_int(ts_op_call *c, int64_t v)
{
    ts_op_arg *a = next_arg(c);
    a->kind = TS_ARG_INT;
    a->i = v;
}

static inline void
a_real(ts_op_call *c, double v)
{
    ts_op_arg *a = next_arg(c);
    a->kind = TS_ARG_REAL;
    a->r = v;
}

static inline void
a_bool(ts_op_call *c, bool v)
{
    ts_op_arg *a = next_arg(c);
    a->kind = TS_ARG_BOOL;
    a->i = v ? 1 : 0;
}

static inline void
a_none(ts_op_call *c)
{
    next_arg(c)->kind = TS_ARG_NONE;
}

static inline void
a_absent(ts_op_call *c)
{
    next_arg(c)->kind = TS_ARG_ABSENT;
}

static inline void
a_str(ts_op_call *c, const char *s)
{
    ts_op_arg *a = next_arg(c);
    a->kind = TS_ARG_STR;
    a->str = s;
}

static inline void
a_complex(ts_op_call *c)
{
    next_arg(c)->kind = TS_ARG_COMPLEX;
}

static inline void
a_other(ts_op_call *c)
{
    next_arg(c)->kind = TS_ARG_OTHER;
}

static inline void
a_ints(ts_op_call *c, const char *list)
{
    ts_op_arg *a = next_arg(c);
    ts_shape s = shape(TS_DTYPE_FLOAT, list);
    a->kind = TS_ARG_INTS;
    a->nints = s.ndim;
    memcpy(a->ints, s.dims, sizeof a->ints);
}

/* A tensor list "2,3;4" (as the binding describes one: the first tensor's
 * shape, the number of tensors and their total elements). */
static inline void
a_tensors(ts_op_call *c, ts_dtype_class dtype, const char *shapes)
{
    ts_op_arg *a = next_arg(c);
    char part[64];
    const char *p = shapes;
    a->kind = TS_ARG_TENSORS;
    while (*p != '\0' || a->ntensors == 0) {
        size_t len = strcspn(p, ";");
        ts_shape s;
        int64_t numel = 1;
        snprintf(part, sizeof part, "%.*s", (int)len, p);
        s = shape(dtype, part);
        for (int i = 0; i < s.ndim; i++) {
            numel *= s.dims[i];
        }
        if (a->ntensors++ == 0) {
            a->tensor = s;
        }
        a->numel_sum += numel;
        p += len;
        if (*p == ';') {
            p++;
        }
        else {
            break;
        }
    }
}

static inline void
o_tensor(ts_op_call *c, ts_dtype_class dtype, const char *dims)
{
    c->outs[c->nouts++] = shape(dtype, dims);
}

#endif
