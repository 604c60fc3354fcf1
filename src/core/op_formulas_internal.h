/* Private to src/core/op_formulas*.c: the helpers every operator formula
 * shares (reading a ts_op_call, checked arithmetic, the reference's guards),
 * the declarations of the formula functions that the table in op_table.c
 * points to, and the table itself (looked up in op_formulas.c).
 *
 * The helpers are static inline so that each formula file gets its own copy
 * that the compiler can inline into the hot path (one formula call per
 * observed aten operator); none of them is part of the engine's API.
 */
#ifndef TORCHSCAN_OP_FORMULAS_INTERNAL_H
#define TORCHSCAN_OP_FORMULAS_INTERNAL_H

#include <math.h>
#include <string.h>

#include "calc.h"
#include "torchscan/op_formulas.h"

/* ---- messages -----------------------------------------------------------
 * Where the reference implementation has a message for the same condition we
 * reuse its wording, so that diagnostics read the same. */

static const char MSG_LAYOUT[] =
    "Shape FLOP formulas require dense strided tensors; sparse and nested "
    "layouts are unsupported.";
static const char MSG_REAL_ONLY[] =
    "Supplemental FLOP formulas cover real arithmetic only.";
static const char MSG_ROUNDED[] =
    "Rounded division is not covered by the scalar arithmetic formula.";
static const char MSG_OVERFLOW[] =
    "The FLOP count does not fit in a signed 64-bit integer.";
static const char MSG_NEEDS_OUTPUT[] =
    "This formula counts output elements, but the call has no output shape.";
static const char MSG_INCOMPLETE_COMPLEX[] =
    "Native shape formula does not account for real operations inside "
    "complex arithmetic.";
static const char MSG_VARLEN[] =
    "Variable-length attention (cu_seqlens / nested inputs) is counted by "
    "FlopCounterMode from the offsets' values, which shape formulas do not "
    "see; this call is not counted.";

/* ---- reading a call ---------------------------------------------------- */

/* Zero-initialised: kind TS_ARG_ABSENT. Returned for positions past nargs so
 * that formulas read schema defaults uniformly. */
static const ts_op_arg absent_arg;

static inline int
clamp_count(int n, int limit)
{
    return n < 0 ? 0 : (n > limit ? limit : n);
}

static inline const ts_op_arg *
arg_at(const ts_op_call *call, int i)
{
    if (i < 0 || i >= clamp_count(call->nargs, TS_OP_MAX_ARGS)) {
        return &absent_arg;
    }
    return &call->args[i];
}

/* Python's "is not None": the argument was passed and is not None. */
static inline bool
given(const ts_op_arg *a)
{
    return a->kind != TS_ARG_ABSENT && a->kind != TS_ARG_NONE;
}

static inline const ts_shape *
tensor_at(const ts_op_call *call, int i)
{
    const ts_op_arg *a = arg_at(call, i);
    return a->kind == TS_ARG_TENSOR ? &a->tensor : NULL;
}

/* An output with a concrete shape, or NULL. ndim < 0 is how the caller
 * marks an output it could not describe: a None entry of a tuple result
 * (convolution_backward under output_mask), symbolic sizes, or more than
 * TS_MAX_DIMS dimensions. */
static inline const ts_shape *
out_at(const ts_op_call *call, int i)
{
    if (i < 0 || i >= clamp_count(call->nouts, TS_OP_MAX_OUTS)
        || call->outs[i].ndim < 0) {
        return NULL;
    }
    return &call->outs[i];
}

static inline bool
overload_is(const ts_op_call *call, const char *name)
{
    return call->overload != NULL && strcmp(call->overload, name) == 0;
}

/* A bool argument; ints are accepted because Python bools are ints. */
static inline bool
flag_at(const ts_op_call *call, int i, bool fallback)
{
    const ts_op_arg *a = arg_at(call, i);
    if (a->kind == TS_ARG_BOOL || a->kind == TS_ARG_INT) {
        return a->i != 0;
    }
    return fallback;
}

/* Python equality of a Scalar argument with an integer (2.0 == 2 and
 * True == 1 hold in Python, and the reference compares that way). Returns
 * false when the argument is not a real number. */
static inline bool
scalar_equals(const ts_op_arg *a, int64_t value, bool *equal)
{
    switch (a->kind) {
        case TS_ARG_INT:
        case TS_ARG_BOOL:
            *equal = a->i == value;
            return true;
        case TS_ARG_REAL:
            *equal = a->r == (double)value;
            return true;
        default:
            return false;
    }
}

/* Scalar argument with a default of 1 (alpha, value, scale): is it != 1? */
static inline int
scalar_not_one(const ts_op_arg *a,
               const char *name,
               bool *not_one,
               ts_error *err)
{
    bool equal = true;
    *not_one = false;
    if (given(a) && !scalar_equals(a, 1, &equal)) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The %s argument must be a real scalar.",
                            name);
    }
    *not_one = !equal;
    return TS_OK;
}

/* An int argument that must be a non-negative count (heads, groups). */
static inline int
count_at(const ts_op_call *call,
         int i,
         const char *name,
         int64_t *value,
         ts_error *err)
{
    const ts_op_arg *a = arg_at(call, i);
    if (a->kind != TS_ARG_INT || a->i < 0) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The %s argument must be a non-negative int.",
                            name);
    }
    *value = a->i;
    return TS_OK;
}

/* Resolves a possibly negative dim against ndim like PyTorch does. */
static inline int
wrap_dim(const ts_op_arg *a, int ndim, int *dim, ts_error *err)
{
    if (a->kind != TS_ARG_INT) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The dim argument must be an int (named "
                            "dimensions are not supported).");
    }
    if (a->i < -(int64_t)ndim || a->i >= (int64_t)ndim) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "dim %lld is out of range for a %d-D tensor.",
                            (long long)a->i,
                            ndim);
    }
    *dim = (int)(a->i < 0 ? a->i + ndim : a->i);
    return TS_OK;
}

static inline bool
shapes_equal(const ts_shape *a, const ts_shape *b)
{
    if (a->ndim != b->ndim) {
        return false;
    }
    for (int i = 0; i < a->ndim; i++) {
        if (a->dims[i] != b->dims[i]) {
            return false;
        }
    }
    return true;
}

/* ---- checked arithmetic (calc.h) ------------------------------------- */

static inline int64_t
c_numel(calc *c, const ts_shape *s)
{
    return c_prod(c, s->dims, s->ndim);
}

static inline int64_t
max0(int64_t v)
{
    return v < 0 ? 0 : v;
}

static inline int
finish(const calc *c, int64_t flops, ts_op_result *out, ts_error *err)
{
    if (c->overflow) {
        return ts_error_set(err, TS_EOVERFLOW, "%s", MSG_OVERFLOW);
    }
    out->flops = flops;
    return TS_OK;
}

/* ---- guards shared by all formulas ------------------------------------- */

static inline void
result_clear(ts_op_result *out)
{
    out->flops = 0;
    out->matrix_flops = 0;
    out->incomplete = false;
    out->incomplete_message = NULL;
}

static inline bool
shape_valid(const ts_shape *s)
{
    if (s->ndim < 0 || s->ndim > TS_MAX_DIMS) {
        return false;
    }
    for (int i = 0; i < s->ndim; i++) {
        if (s->dims[i] < 0) {
            return false;
        }
    }
    return true;
}

/* The first tensor an argument describes, or NULL (TENSORS lists describe
 * their first tensor only). */
static inline const ts_shape *
arg_tensor(const ts_op_arg *a)
{
    if (a->kind == TS_ARG_TENSOR
        || (a->kind == TS_ARG_TENSORS && a->ntensors > 0)) {
        return &a->tensor;
    }
    return NULL;
}

/* The reference bypasses every registered (non-caller) formula when a
 * tensor argument is nested or not strided, before reading shapes. */
static inline int
check_tensors(const ts_op_call *call, ts_error *err)
{
    int n = clamp_count(call->nargs, TS_OP_MAX_ARGS);
    for (int i = 0; i < n; i++) {
        const ts_shape *s = arg_tensor(&call->args[i]);
        if (s == NULL) {
            continue;
        }
        if (!s->dense) {
            return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_LAYOUT);
        }
        if (s->ndim < 0) {
            return ts_error_set(err,
                                TS_EUNSUPPORTED,
                                "Argument %d has no concrete shape (symbolic "
                                "sizes or more than %d dimensions).",
                                i,
                                TS_MAX_DIMS);
        }
        if (!shape_valid(s)) {
            return ts_error_set(
                err, TS_EUNSUPPORTED, "Argument %d has a malformed shape.", i);
        }
    }
    /* Outputs without a concrete shape (ndim < 0) are absent, not
     * malformed: formulas that need one say so through out_at. */
    n = clamp_count(call->nouts, TS_OP_MAX_OUTS);
    for (int i = 0; i < n; i++) {
        if (call->outs[i].ndim >= 0 && !shape_valid(&call->outs[i])) {
            return ts_error_set(
                err, TS_EUNSUPPORTED, "Output %d has a malformed shape.", i);
        }
    }
    return TS_OK;
}

static inline bool
arg_complex(const ts_op_arg *a)
{
    const ts_shape *s = arg_tensor(a);
    return a->kind == TS_ARG_COMPLEX
           || (s != NULL && s->dtype == TS_DTYPE_COMPLEX);
}

static inline bool
arg_floating(const ts_op_arg *a)
{
    const ts_shape *s = arg_tensor(a);
    if (a->kind == TS_ARG_REAL || a->kind == TS_ARG_COMPLEX) {
        return true;
    }
    return s != NULL
           && (s->dtype == TS_DTYPE_FLOAT || s->dtype == TS_DTYPE_COMPLEX);
}

static inline bool
dtype_floating(ts_dtype_class d)
{
    return d == TS_DTYPE_FLOAT || d == TS_DTYPE_COMPLEX;
}

static inline bool
any_arg(const ts_op_call *call,
        bool (*pred)(const ts_op_arg *),
        bool tensors_only)
{
    int n = clamp_count(call->nargs, TS_OP_MAX_ARGS);
    for (int i = 0; i < n; i++) {
        if (tensors_only && arg_tensor(&call->args[i]) == NULL) {
            continue;
        }
        if (pred(&call->args[i])) {
            return true;
        }
    }
    return false;
}

static inline bool
any_out_dtype(const ts_op_call *call, bool (*pred)(ts_dtype_class))
{
    int n = clamp_count(call->nouts, TS_OP_MAX_OUTS);
    for (int i = 0; i < n; i++) {
        if (pred(call->outs[i].dtype)) {
            return true;
        }
    }
    return false;
}

static inline bool
dtype_complex(ts_dtype_class d)
{
    return d == TS_DTYPE_COMPLEX;
}

/* Native formulas: only the layout guard applies before counting. */
static inline int
native_begin(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    result_clear(out);
    return check_tensors(call, err);
}

/* FlopCounterMode counts complex products as if they were real ones, so
 * such counts are lower bounds (incomplete_operator_formula). Complex
 * operands are judged from the arguments, plus the outputs, which stand for
 * a complex dtype= argument that the call struct does not carry. A native
 * count is all matrix products. */
static inline int
native_finish(const ts_op_call *call,
              const calc *c,
              int64_t flops,
              ts_op_result *out,
              ts_error *err)
{
    int rc = finish(c, flops, out, err);
    if (rc != TS_OK) {
        return rc;
    }
    out->matrix_flops = out->flops;
    if (any_arg(call, arg_complex, false)
        || any_out_dtype(call, dtype_complex)) {
        out->incomplete = true;
        out->incomplete_message = MSG_INCOMPLETE_COMPLEX;
    }
    return TS_OK;
}

/* How a supplemental formula decides whether the call does floating-point
 * arithmetic at all (contract 1.4 dtype rules). Integer and boolean work
 * counts 0 without a diagnostic. */
typedef enum {
    /* any floating tensor or Python float among the arguments */
    DT_LEAVES,
    /* ...or a floating/complex output: the output stands for the dtype=
     * argument (cumsum, norms, _safe_softmax), which the call struct does
     * not carry and which sets the output dtype */
    DT_LEAVES_OR_OUTPUT,
    /* sum/mean: dtype= argument, else out=, else input: that is exactly
     * the output's dtype */
    DT_OUTPUT,
    /* true division, exp, sqrt and rsqrt promote integers to floating */
    DT_ALWAYS,
    /* masked_fill follows its input */
    DT_SELF,
    /* addcmul/addcdiv: the tensor operands, not the value scalar */
    DT_TENSOR_OPERANDS,
} dtype_rule;

/* Applies the reference's guards in its order: layout, complex operands
 * (unsupported), then integer work (counts 0). *count tells the formula to
 * go on. */
static inline int
supp_begin(const ts_op_call *call,
           dtype_rule rule,
           ts_op_result *out,
           bool *count,
           ts_error *err)
{
    bool is_complex, floating;
    const ts_shape *self = tensor_at(call, 0);
    const ts_shape *result = out_at(call, 0);
    int rc;

    *count = false;
    result_clear(out);
    rc = check_tensors(call, err);
    if (rc != TS_OK) {
        return rc;
    }
    is_complex = any_arg(call, arg_complex, false);
    floating = any_arg(call, arg_floating, false);
    switch (rule) {
        case DT_LEAVES:
            break;
        case DT_LEAVES_OR_OUTPUT:
            is_complex = is_complex || any_out_dtype(call, dtype_complex);
            floating = floating || any_out_dtype(call, dtype_floating);
            break;
        case DT_OUTPUT: {
            const ts_shape *ref = result != NULL ? result : self;
            is_complex = ref != NULL && ref->dtype == TS_DTYPE_COMPLEX;
            floating = ref != NULL && dtype_floating(ref->dtype);
            break;
        }
        case DT_ALWAYS:
            floating = true;
            break;
        case DT_SELF:
            floating = self != NULL && dtype_floating(self->dtype);
            break;
        case DT_TENSOR_OPERANDS:
            floating = any_arg(call, arg_floating, true);
            break;
    }
    if (is_complex) {
        return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_REAL_ONLY);
    }
    *count = floating;
    return TS_OK;
}

static inline int
need_tensor(const ts_shape *s, const char *what, ts_error *err)
{
    if (s == NULL) {
        return ts_error_set(
            err, TS_EUNSUPPORTED, "The formula needs %s as a tensor.", what);
    }
    return TS_OK;
}

static inline int
need_output(const ts_op_call *call, const ts_shape **s, ts_error *err)
{
    *s = out_at(call, 0);
    if (*s == NULL) {
        return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_NEEDS_OUTPUT);
    }
    return TS_OK;
}

/* ==== supplemental formulas (contract 2.2) ============================== */

/* cost * output elements, once the guards have passed. */
static inline int
count_output(const ts_op_call *call,
             int64_t cost,
             ts_op_result *out,
             ts_error *err)
{
    calc c = {false};
    const ts_shape *y;
    int rc = need_output(call, &y, err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_mul(&c, cost, c_numel(&c, y)), out, err);
}

/* cost * input elements, once the guards have passed. The reference reads
 * the input so that kernels returning auxiliary buffers
 * (log_sigmoid_forward) count once. */
static inline int
count_input(const ts_op_call *call,
            int64_t cost,
            ts_op_result *out,
            ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    int rc = need_tensor(x, "the input", err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_mul(&c, cost, c_numel(&c, x)), out, err);
}

static inline int
per_output(const ts_op_call *call,
           dtype_rule rule,
           int64_t cost,
           ts_op_result *out,
           ts_error *err)
{
    bool count;
    int rc = supp_begin(call, rule, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    return count_output(call, cost, out, err);
}

static inline int
per_input(const ts_op_call *call,
          int64_t cost,
          ts_op_result *out,
          ts_error *err)
{
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    return count_input(call, cost, out, err);
}

/* add/sub: one add per output, plus one multiply when alpha != 1. */

/* bmm_flop on explicit sizes: b*m*n*2*k. */
static inline int64_t
bmm_count(calc *c, int64_t b, int64_t m, int64_t k, int64_t n)
{
    return c_mul(c, c_mul(c, c_mul(c, c_mul(c, b, m), n), 2), k);
}

/* Size of the dim argument (at dim_index) of a row-wise operator; a 0-D
 * input has rows of width 1, as in the reference. */
static inline int
row_width(const ts_op_call *call,
          const ts_shape *x,
          int dim_index,
          int64_t *width,
          ts_error *err)
{
    int dim = 0;
    int rc;
    if (x->ndim == 0) {
        *width = 1;
        return TS_OK;
    }
    rc = wrap_dim(arg_at(call, dim_index), x->ndim, &dim, err);
    if (rc != TS_OK) {
        return rc;
    }
    *width = x->dims[dim];
    return TS_OK;
}

/* ---- formula functions (the table's entries) ----------------------------
 * Each returns TS_OK with *out filled, TS_EUNSUPPORTED with err's message
 * (diagnostic unsupported_operator_formula), or TS_EOVERFLOW. */

/* op_formulas_elementwise.c */
int ts_opf_add(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_unit(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_unit_promoting(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err);
int ts_opf_div(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_masked_fill(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err);
int ts_opf_where(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_clamp(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_addc(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_sigmoid(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_tanh(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_silu(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_gelu(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_pow(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_in2(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_in3(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_in4(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_in5(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_in7(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_in10(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_elu(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_rrelu(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_sum(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_mean(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_cumsum(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_extremum(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_norm(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_dot(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_grouped_mm(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_boolean(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_all_any(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_lerp(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_native_dropout(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err);
int ts_opf_native_dropout_backward(const ts_op_call *call,
                                   ts_op_result *out,
                                   ts_error *err);
int ts_opf_threshold_backward(const ts_op_call *call,
                              ts_op_result *out,
                              ts_error *err);
int ts_opf_hardtanh_backward(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err);
int ts_opf_hardsigmoid_backward(const ts_op_call *call,
                                ts_op_result *out,
                                ts_error *err);
int ts_opf_hardswish_backward(const ts_op_call *call,
                              ts_op_result *out,
                              ts_error *err);
int ts_opf_leaky_relu_backward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_sigmoid_tanh_backward(const ts_op_call *call,
                                 ts_op_result *out,
                                 ts_error *err);
int ts_opf_gelu_backward(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err);
int ts_opf_elu_backward(const ts_op_call *call,
                        ts_op_result *out,
                        ts_error *err);
int ts_opf_softplus_backward(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err);
int ts_opf_log_sigmoid_backward(const ts_op_call *call,
                                ts_op_result *out,
                                ts_error *err);
int ts_opf_prelu_backward(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err);
int ts_opf_shrink_backward(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err);
int ts_opf_glu_backward(const ts_op_call *call,
                        ts_op_result *out,
                        ts_error *err);
int ts_opf_sign(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_xlogy(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_extreme_reduction(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err);
int ts_opf_logsumexp(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_var(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_std(const ts_op_call *call, ts_op_result *out, ts_error *err);

/* op_formulas_layers.c */
int ts_opf_softmax(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_log_softmax(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err);
int ts_opf_safe_softmax(const ts_op_call *call,
                        ts_op_result *out,
                        ts_error *err);
int ts_opf_layer_norm(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_group_norm(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_rms_norm(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_native_batch_norm(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err);
int ts_opf_native_batch_norm_legit(const ts_op_call *call,
                                   ts_op_result *out,
                                   ts_error *err);
int ts_opf_native_batch_norm_no_training(const ts_op_call *call,
                                         ts_op_result *out,
                                         ts_error *err);
int ts_opf_softmax_backward(const ts_op_call *call,
                            ts_op_result *out,
                            ts_error *err);
int ts_opf_batch_norm_backward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_vendor_batch_norm_backward(const ts_op_call *call,
                                      ts_op_result *out,
                                      ts_error *err);
int ts_opf_layer_norm_backward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_upsample_linear1d(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err);
int ts_opf_upsample_bilinear2d(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_upsample_trilinear3d(const ts_op_call *call,
                                ts_op_result *out,
                                ts_error *err);
int ts_opf_upsample_linear1d_backward(const ts_op_call *call,
                                      ts_op_result *out,
                                      ts_error *err);
int ts_opf_upsample_bilinear2d_backward(const ts_op_call *call,
                                        ts_op_result *out,
                                        ts_error *err);
int ts_opf_upsample_trilinear3d_backward(const ts_op_call *call,
                                         ts_op_result *out,
                                         ts_error *err);
int ts_opf_upsample_nearest_backward(const ts_op_call *call,
                                     ts_op_result *out,
                                     ts_error *err);
int ts_opf_group_norm_backward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_weight_norm(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err);
int ts_opf_weight_norm_backward(const ts_op_call *call,
                                ts_op_result *out,
                                ts_error *err);

/* op_formulas_pooling.c */
int ts_opf_max_pool2d(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_max_pool3d(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_avg_pool2d(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_avg_pool3d(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_adaptive_max_pool2d(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_adaptive_max_pool3d(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_adaptive_avg_pool2d(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_adaptive_avg_pool3d(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_scatter_grad(const ts_op_call *call,
                        ts_op_result *out,
                        ts_error *err);
int ts_opf_avg_pool2d_backward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_avg_pool3d_backward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_adaptive_avg_pool2d_backward(const ts_op_call *call,
                                        ts_op_result *out,
                                        ts_error *err);
int ts_opf_adaptive_avg_pool3d_backward(const ts_op_call *call,
                                        ts_op_result *out,
                                        ts_error *err);

/* op_formulas_losses.c */
int ts_opf_nll_loss(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_nll_loss_backward(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err);
int ts_opf_mse_loss(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_mse_loss_backward(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err);
int ts_opf_binary_cross_entropy(const ts_op_call *call,
                                ts_op_result *out,
                                ts_error *err);
int ts_opf_binary_cross_entropy_backward(const ts_op_call *call,
                                         ts_op_result *out,
                                         ts_error *err);
int ts_opf_bce_with_logits(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err);
int ts_opf_smooth_l1_loss(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err);
int ts_opf_smooth_l1_loss_backward(const ts_op_call *call,
                                   ts_op_result *out,
                                   ts_error *err);
int ts_opf_lookup(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_embedding_backward(const ts_op_call *call,
                              ts_op_result *out,
                              ts_error *err);
int ts_opf_index_put(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_scatter_add(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err);
int ts_opf_scatter(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_mkldnn_lstm(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err);
int ts_opf_mkldnn_lstm_backward(const ts_op_call *call,
                                ts_op_result *out,
                                ts_error *err);
int ts_opf_embedding_bag(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err);
int ts_opf_embedding_bag_backward(const ts_op_call *call,
                                  ts_op_result *out,
                                  ts_error *err);

/* op_formulas_native.c */
int ts_opf_mm(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_addmm(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_bmm(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_baddbmm(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_convolution(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err);
int ts_opf_cudnn_convolution(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err);
int ts_opf_slow_conv2d_forward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_convolution_backward(const ts_op_call *call,
                                ts_op_result *out,
                                ts_error *err);

/* op_formulas_attention.c: the attention convention */
int ts_opf_sdpa_composite(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err);
int ts_opf_cpu_attention(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err);
int ts_opf_cpu_attention_backward(const ts_op_call *call,
                                  ts_op_result *out,
                                  ts_error *err);
int ts_opf_flash_sdpa(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_flash_sdpa_backward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_efficient_sdpa(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err);
int ts_opf_efficient_sdpa_backward(const ts_op_call *call,
                                   ts_op_result *out,
                                   ts_error *err);
int ts_opf_cudnn_sdpa(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_cudnn_sdpa_backward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err);
int ts_opf_overrideable_sdpa(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err);
int ts_opf_overrideable_sdpa_backward(const ts_op_call *call,
                                      ts_op_result *out,
                                      ts_error *err);
int ts_opf_flash_attention_forward(const ts_op_call *call,
                                   ts_op_result *out,
                                   ts_error *err);
int ts_opf_flash_attention_backward(const ts_op_call *call,
                                    ts_op_result *out,
                                    ts_error *err);
int ts_opf_efficient_attention_forward(const ts_op_call *call,
                                       ts_op_result *out,
                                       ts_error *err);
int ts_opf_efficient_attention_backward(const ts_op_call *call,
                                        ts_op_result *out,
                                        ts_error *err);
int ts_opf_native_mha(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_encoder_layer(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err);

/* op_formulas_optim.c */
int ts_opf_foreach_add(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err);
int ts_opf_foreach_unit(const ts_op_call *call,
                        ts_op_result *out,
                        ts_error *err);
int ts_opf_foreach_lerp(const ts_op_call *call,
                        ts_op_result *out,
                        ts_error *err);
int ts_opf_foreach_addc(const ts_op_call *call,
                        ts_op_result *out,
                        ts_error *err);
int ts_opf_foreach_norm(const ts_op_call *call,
                        ts_op_result *out,
                        ts_error *err);
int ts_opf_fused_sgd(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_fused_adam(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_fused_adamw(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err);

/* op_formulas_vision.c */
int ts_opf_round(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_remainder(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_floor_divide(const ts_op_call *call,
                        ts_op_result *out,
                        ts_error *err);
int ts_opf_histc(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_sort(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_topk(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_unique(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_nms(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_roi_align(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_ps_roi_align(const ts_op_call *call,
                        ts_op_result *out,
                        ts_error *err);
int ts_opf_roi_pool(const ts_op_call *call, ts_op_result *out, ts_error *err);
int ts_opf_deform_conv2d(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err);
int ts_opf_grid_sampler_2d(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err);
int ts_opf_upsample_bicubic2d(const ts_op_call *call,
                              ts_op_result *out,
                              ts_error *err);

/* ---- op_formulas_collectives.c: torch.distributed's collectives ----------
 */
int ts_opf_collective(const ts_op_call *call,
                      ts_op_result *out,
                      ts_error *err);
int ts_opf_collective_gather(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err);
int ts_opf_barrier(const ts_op_call *call, ts_op_result *out, ts_error *err);

/* ---- the table (op_table.c) ---------------------------------------------
 * Every entry, sorted by name with strcmp; ts_opf_table_len entries. */
extern const ts_op_entry ts_opf_table[];
extern const size_t ts_opf_table_len;

#endif /* TORCHSCAN_OP_FORMULAS_INTERNAL_H */
