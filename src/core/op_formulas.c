/* Operator FLOP formulas keyed by aten packet name (op_formulas.h).
 *
 * Three kinds of entries share one sorted table:
 *  - native formulas (TS_OPF_NATIVE) replicate torch.utils.flop_counter of
 *    torch 2.13 count for count, quirks included, because contract 1.4 takes
 *    the counts of those operators from FlopCounterMode;
 *  - supplemental formulas implement contract 2.2 (torchscan_flops_v1) for
 *    operators FlopCounterMode lacks, behind the reference's guards (dense
 *    layout, real arithmetic, integer work excluded);
 *  - ignored operators (contract 1.4 ignore list) carry no formula, only the
 *    reason string reported in ignored_operators.
 *
 * Every count is built with checked int64 arithmetic: a count that does not
 * fit is TS_EOVERFLOW, never a wrapped number.
 */
#include <math.h>
#include <string.h>

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
static const char MSG_INCOMPLETE_ATTENTION[] =
    "Native fused attention formula counts matrix products only; scaling, "
    "softmax, masks, and dropout work are not covered.";
static const char MSG_VARLEN[] =
    "Variable-length attention (cu_seqlens / nested inputs) is counted by "
    "FlopCounterMode from the offsets' values, which shape formulas do not "
    "see; this call is not counted.";

/* ---- reading a call ---------------------------------------------------- */

/* Zero-initialised: kind TS_ARG_ABSENT. Returned for positions past nargs so
 * that formulas read schema defaults uniformly. */
static const ts_op_arg absent_arg;

static int
clamp_count(int n, int limit)
{
    return n < 0 ? 0 : (n > limit ? limit : n);
}

static const ts_op_arg *
arg_at(const ts_op_call *call, int i)
{
    if (i < 0 || i >= clamp_count(call->nargs, TS_OP_MAX_ARGS)) {
        return &absent_arg;
    }
    return &call->args[i];
}

/* Python's "is not None": the argument was passed and is not None. */
static bool
given(const ts_op_arg *a)
{
    return a->kind != TS_ARG_ABSENT && a->kind != TS_ARG_NONE;
}

static const ts_shape *
tensor_at(const ts_op_call *call, int i)
{
    const ts_op_arg *a = arg_at(call, i);
    return a->kind == TS_ARG_TENSOR ? &a->tensor : NULL;
}

/* An output with a concrete shape, or NULL. ndim < 0 is how the caller
 * marks an output it could not describe: a None entry of a tuple result
 * (convolution_backward under output_mask), symbolic sizes, or more than
 * TS_MAX_DIMS dimensions. */
static const ts_shape *
out_at(const ts_op_call *call, int i)
{
    if (i < 0 || i >= clamp_count(call->nouts, TS_OP_MAX_OUTS)
        || call->outs[i].ndim < 0) {
        return NULL;
    }
    return &call->outs[i];
}

static bool
overload_is(const ts_op_call *call, const char *name)
{
    return call->overload != NULL && strcmp(call->overload, name) == 0;
}

/* A bool argument; ints are accepted because Python bools are ints. */
static bool
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
static bool
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
static int
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
static int
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
static int
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

static bool
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

/* ---- checked arithmetic -------------------------------------------------
 * A formula threads one calc through its arithmetic; after an overflow the
 * operations return 0 and the final check reports TS_EOVERFLOW, which keeps
 * the formulas readable while every product stays checked. */

typedef struct calc {
    bool overflow;
} calc;

static int64_t
c_mul(calc *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!ts_mul(a, b, &r)) {
        c->overflow = true;
        return 0;
    }
    return r;
}

static int64_t
c_add(calc *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!ts_add(a, b, &r)) {
        c->overflow = true;
        return 0;
    }
    return r;
}

static int64_t
c_sub(calc *c, int64_t a, int64_t b)
{
    if (b == INT64_MIN) {
        c->overflow = true;
        return 0;
    }
    return c_add(c, a, -b);
}

static int64_t
c_prod(calc *c, const int64_t *values, int n)
{
    int64_t r = 1;
    for (int i = 0; i < n; i++) {
        r = c_mul(c, r, values[i]);
    }
    return r;
}

static int64_t
c_numel(calc *c, const ts_shape *s)
{
    return c_prod(c, s->dims, s->ndim);
}

static int64_t
max0(int64_t v)
{
    return v < 0 ? 0 : v;
}

static int
finish(const calc *c, int64_t flops, ts_op_result *out, ts_error *err)
{
    if (c->overflow) {
        return ts_error_set(err, TS_EOVERFLOW, "%s", MSG_OVERFLOW);
    }
    out->flops = flops;
    return TS_OK;
}

/* ---- guards shared by all formulas ------------------------------------- */

static void
result_clear(ts_op_result *out)
{
    out->flops = 0;
    out->incomplete = false;
    out->incomplete_message = NULL;
}

static bool
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
static const ts_shape *
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
static int
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

static bool
arg_complex(const ts_op_arg *a)
{
    const ts_shape *s = arg_tensor(a);
    return a->kind == TS_ARG_COMPLEX
           || (s != NULL && s->dtype == TS_DTYPE_COMPLEX);
}

static bool
arg_floating(const ts_op_arg *a)
{
    const ts_shape *s = arg_tensor(a);
    if (a->kind == TS_ARG_REAL || a->kind == TS_ARG_COMPLEX) {
        return true;
    }
    return s != NULL
           && (s->dtype == TS_DTYPE_FLOAT || s->dtype == TS_DTYPE_COMPLEX);
}

static bool
dtype_floating(ts_dtype_class d)
{
    return d == TS_DTYPE_FLOAT || d == TS_DTYPE_COMPLEX;
}

static bool
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

static bool
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

static bool
dtype_complex(ts_dtype_class d)
{
    return d == TS_DTYPE_COMPLEX;
}

/* Native formulas: only the layout guard applies before counting. */
static int
native_begin(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    result_clear(out);
    return check_tensors(call, err);
}

/* FlopCounterMode counts complex products as if they were real ones, and
 * fused attention kernels as their two matrix products, so such counts are
 * lower bounds (incomplete_operator_formula). Complex operands are judged
 * from the arguments, plus the outputs, which stand for a complex dtype=
 * argument that the call struct does not carry. */
static int
native_finish(const ts_op_call *call,
              const calc *c,
              int64_t flops,
              bool attention,
              ts_op_result *out,
              ts_error *err)
{
    int rc = finish(c, flops, out, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (any_arg(call, arg_complex, false)
        || any_out_dtype(call, dtype_complex)) {
        out->incomplete = true;
        out->incomplete_message = MSG_INCOMPLETE_COMPLEX;
    }
    else if (attention) {
        out->incomplete = true;
        out->incomplete_message = MSG_INCOMPLETE_ATTENTION;
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
static int
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

static int
need_tensor(const ts_shape *s, const char *what, ts_error *err)
{
    if (s == NULL) {
        return ts_error_set(
            err, TS_EUNSUPPORTED, "The formula needs %s as a tensor.", what);
    }
    return TS_OK;
}

static int
need_output(const ts_op_call *call, const ts_shape **s, ts_error *err)
{
    *s = out_at(call, 0);
    if (*s == NULL) {
        return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_NEEDS_OUTPUT);
    }
    return TS_OK;
}

/* ==== native formulas (FlopCounterMode parity) ========================== */

/* mm_flop: m*n*2*k, two 2-D operands with equal inner dimensions. */
static int
mm_core(calc *c,
        const ts_shape *a,
        const ts_shape *b,
        int64_t *flops,
        ts_error *err)
{
    if (a == NULL || b == NULL || a->ndim != 2 || b->ndim != 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The matrix product formula needs two 2-D "
                            "tensors.");
    }
    if (a->dims[1] != b->dims[0]) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Matrix product inner dimensions differ (%lld "
                            "and %lld).",
                            (long long)a->dims[1],
                            (long long)b->dims[0]);
    }
    *flops =
        c_mul(c, c_mul(c, c_mul(c, a->dims[0], b->dims[1]), 2), a->dims[1]);
    return TS_OK;
}

/* bmm_flop on explicit sizes: b*m*n*2*k. */
static int64_t
bmm_count(calc *c, int64_t b, int64_t m, int64_t k, int64_t n)
{
    return c_mul(c, c_mul(c, c_mul(c, c_mul(c, b, m), n), 2), k);
}

static int
bmm_core(calc *c,
         const ts_shape *a,
         const ts_shape *b,
         int64_t *flops,
         ts_error *err)
{
    if (a == NULL || b == NULL || a->ndim != 3 || b->ndim != 3) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The batched matrix product formula needs two "
                            "3-D tensors.");
    }
    if (a->dims[0] != b->dims[0] || a->dims[2] != b->dims[1]) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Batched matrix product batch or inner "
                            "dimensions differ.");
    }
    *flops = bmm_count(c, a->dims[0], a->dims[1], a->dims[2], b->dims[2]);
    return TS_OK;
}

/* Shared body of mm/addmm/_scaled_mm (mat_first = index of the first
 * matrix) and bmm/baddbmm. */
static int
matmul_formula(const ts_op_call *call,
               int first,
               bool batched,
               ts_op_result *out,
               ts_error *err)
{
    calc c = {false};
    int64_t flops = 0;
    int rc = native_begin(call, out, err);
    if (rc != TS_OK) {
        return rc;
    }
    rc = batched ? bmm_core(&c,
                            tensor_at(call, first),
                            tensor_at(call, first + 1),
                            &flops,
                            err)
                 : mm_core(&c,
                           tensor_at(call, first),
                           tensor_at(call, first + 1),
                           &flops,
                           err);
    if (rc != TS_OK) {
        return rc;
    }
    return native_finish(call, &c, flops, false, out, err);
}

static int
f_mm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return matmul_formula(call, 0, false, out, err);
}

/* addmm counts mat1 @ mat2 only: FlopCounterMode leaves out the bias add
 * and the beta/alpha scaling. */
static int
f_addmm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return matmul_formula(call, 1, false, out, err);
}

static int
f_bmm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return matmul_formula(call, 0, true, out, err);
}

static int
f_baddbmm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return matmul_formula(call, 1, true, out, err);
}

/* conv_flop_count: prod(conv_shape) * prod(filter) * batch * c_out * c_in
 * * 2, where conv_shape is the output's spatial size (the input's when
 * transposed) and (c_out, c_in, *filter) = w. For a grouped convolution
 * w[1] is c_in/groups, and FlopCounterMode uses it as it is: we do too. */
static int
conv_core(calc *c,
          const ts_shape *x,
          const ts_shape *w,
          const ts_shape *y,
          bool transposed,
          int64_t *flops,
          ts_error *err)
{
    const ts_shape *spatial = transposed ? x : y;
    int64_t n;
    if (x == NULL || w == NULL || x->ndim < 1 || w->ndim < 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The convolution formula needs a batched input "
                            "and a weight with at least two dimensions.");
    }
    if (spatial == NULL) {
        return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_NEEDS_OUTPUT);
    }
    /* Python's shape[2:] is empty (product 1) on shorter shapes. */
    n = spatial->ndim > 2 ? c_prod(c, spatial->dims + 2, spatial->ndim - 2)
                          : 1;
    n = c_mul(c, n, c_prod(c, w->dims + 2, w->ndim - 2));
    n = c_mul(c, n, x->dims[0]);
    n = c_mul(c, n, w->dims[0]);
    n = c_mul(c, n, w->dims[1]);
    *flops = c_mul(c, n, 2);
    return TS_OK;
}

/* FlopCounterMode's conv_flop reads `transposed` as the 7th positional
 * argument (index 6) of every operator it is registered for. */
static int
conv_forward(const ts_op_call *call,
             int transposed_index,
             ts_op_result *out,
             ts_error *err)
{
    calc c = {false};
    int64_t flops = 0;
    bool transposed;
    int rc = native_begin(call, out, err);
    if (rc != TS_OK) {
        return rc;
    }
    transposed =
        transposed_index >= 0 && flag_at(call, transposed_index, false);
    rc = conv_core(&c,
                   tensor_at(call, 0),
                   tensor_at(call, 1),
                   out_at(call, 0),
                   transposed,
                   &flops,
                   err);
    if (rc != TS_OK) {
        return rc;
    }
    return native_finish(call, &c, flops, false, out, err);
}

/* convolution, _convolution, convolution_overrideable: index 6 is
 * `transposed`. */
static int
f_convolution(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return conv_forward(call, 6, out, err);
}

/* cudnn_convolution has no `transposed` argument: index 6 is `benchmark`,
 * and FlopCounterMode reads it as `transposed` anyway (with benchmark=True
 * it counts the input's spatial size). Parity means copying that. */
static int
f_cudnn_convolution(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return conv_forward(call, 6, out, err);
}

/* _slow_conv2d_forward(self, weight, kernel_size, bias, stride, padding)
 * has six arguments; FlopCounterMode registers conv_flop for it, which then
 * raises TypeError for the missing `transposed`. There is no FlopCounterMode
 * number to match, so we count what conv_flop means for a forward (not
 * transposed) convolution. */
static int
f_slow_conv2d_forward(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return conv_forward(call, -1, out, err);
}

static ts_shape
swap01(const ts_shape *s)
{
    ts_shape t = *s;
    t.dims[0] = s->dims[1];
    t.dims[1] = s->dims[0];
    return t;
}

/* conv_backward_flop: grad_input is a convolution of grad_output with the
 * weight in the opposite direction; grad_weight is a convolution of the
 * input with grad_output with batch and channels swapped. FlopCounterMode
 * takes the gradients' shapes from the outputs; grad_input always has the
 * input's shape and grad_weight the weight's, so we read those from the
 * arguments and do not depend on how outputs that output_mask leaves
 * undefined are packed into outs. */
static int
f_convolution_backward(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err)
{
    calc c = {false};
    int64_t flops = 0, part = 0;
    const ts_shape *go = tensor_at(call, 0);
    const ts_shape *x = tensor_at(call, 1);
    const ts_shape *w = tensor_at(call, 2);
    const ts_op_arg *mask = arg_at(call, 10);
    bool transposed = flag_at(call, 7, false);
    int rc = native_begin(call, out, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (go == NULL || x == NULL || w == NULL || go->ndim < 2 || x->ndim < 2
        || w->ndim < 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "convolution_backward needs grad_output, input "
                            "and weight tensors with at least two "
                            "dimensions.");
    }
    if (mask->kind != TS_ARG_INTS || mask->nints < 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "convolution_backward needs output_mask as a "
                            "list of booleans.");
    }
    if (mask->ints[0] != 0) {
        rc = conv_core(&c, go, w, x, !transposed, &part, err);
        if (rc != TS_OK) {
            return rc;
        }
        flops = c_add(&c, flops, part);
    }
    if (mask->ints[1] != 0) {
        ts_shape tgo = swap01(go), tx = swap01(x), tw = swap01(w);
        if (transposed) {
            rc = conv_core(&c, &tgo, &tx, &tw, false, &part, err);
        }
        else {
            rc = conv_core(&c, &tx, &tgo, &tw, false, &part, err);
        }
        if (rc != TS_OK) {
            return rc;
        }
        flops = c_add(&c, flops, part);
    }
    return native_finish(call, &c, flops, false, out, err);
}

static int
need_4d(const ts_shape *s, const char *what, ts_error *err)
{
    if (s == NULL || s->ndim != 4) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The attention formula needs a 4-D %s tensor.",
                            what);
    }
    return TS_OK;
}

/* sdpa_flop_count: q @ k^T then scores @ v as two bmm counts over
 * b*h_q batches, with key/value heads broadcast to query heads (GQA). The
 * shapes are read as (b, h, s, d) whatever the kernel's layout is. */
static int
sdpa_core(calc *c,
          const ts_shape *q,
          const ts_shape *k,
          const ts_shape *v,
          int64_t *flops,
          ts_error *err)
{
    int64_t bh;
    int rc = need_4d(q, "query", err);
    if (rc == TS_OK) {
        rc = need_4d(k, "key", err);
    }
    if (rc == TS_OK) {
        rc = need_4d(v, "value", err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (!(q->dims[0] == k->dims[0] && k->dims[0] == v->dims[0]
          && k->dims[1] == v->dims[1] && q->dims[3] == k->dims[3]
          && k->dims[2] == v->dims[2])) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Attention query/key/value shapes are "
                            "incompatible.");
    }
    if (k->dims[1] == 0 || q->dims[1] < k->dims[1]
        || q->dims[1] % k->dims[1] != 0) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Attention query heads (%lld) must be a "
                            "multiple of key/value heads (%lld).",
                            (long long)q->dims[1],
                            (long long)k->dims[1]);
    }
    bh = c_mul(c, q->dims[0], q->dims[1]);
    *flops = c_add(c,
                   bmm_count(c, bh, q->dims[2], q->dims[3], k->dims[2]),
                   bmm_count(c, bh, q->dims[2], k->dims[2], v->dims[3]));
    return TS_OK;
}

/* sdpa_backward_flop_count: the recomputed scores and four gradient
 * products, i.e. five bmm counts. */
static int
sdpa_backward_core(calc *c,
                   const ts_shape *go,
                   const ts_shape *q,
                   const ts_shape *k,
                   const ts_shape *v,
                   int64_t *flops,
                   ts_error *err)
{
    int64_t bh, sq, sk, dq, dv, n;
    int rc = need_4d(go, "grad_out", err);
    if (rc == TS_OK) {
        rc = need_4d(q, "query", err);
    }
    if (rc == TS_OK) {
        rc = need_4d(k, "key", err);
    }
    if (rc == TS_OK) {
        rc = need_4d(v, "value", err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (!(q->dims[0] == k->dims[0] && k->dims[0] == v->dims[0]
          && v->dims[0] == go->dims[0] && k->dims[1] == v->dims[1]
          && q->dims[1] == go->dims[1])) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Attention backward batch/heads differ among "
                            "tensors.");
    }
    if (k->dims[1] == 0 || q->dims[1] < k->dims[1]
        || q->dims[1] % k->dims[1] != 0) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Attention query heads (%lld) must be a "
                            "multiple of key/value heads (%lld).",
                            (long long)q->dims[1],
                            (long long)k->dims[1]);
    }
    if (!(q->dims[3] == k->dims[3] && v->dims[3] == go->dims[3]
          && k->dims[2] == v->dims[2] && q->dims[2] == go->dims[2])) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Attention backward grad_out/value/key/query "
                            "shapes are incompatible.");
    }
    bh = c_mul(c, q->dims[0], q->dims[1]);
    sq = q->dims[2];
    sk = k->dims[2];
    dq = q->dims[3];
    dv = v->dims[3];
    n = bmm_count(c, bh, sq, dq, sk);
    n = c_add(c, n, bmm_count(c, bh, sq, dv, sk));
    n = c_add(c, n, bmm_count(c, bh, sk, sq, dv));
    n = c_add(c, n, bmm_count(c, bh, sq, sk, dq));
    *flops = c_add(c, n, bmm_count(c, bh, dq, sq, sk));
    return TS_OK;
}

/* Fused attention: `first` is the index of query (grad_out precedes it in
 * backward calls); `seqlens_index` is the cu_seqlens_q / cum_seq_q argument
 * of the kernels that accept variable-length batches, or -1. */
static int
attention_formula(const ts_op_call *call,
                  bool backward,
                  int seqlens_index,
                  ts_op_result *out,
                  ts_error *err)
{
    calc c = {false};
    int64_t flops = 0;
    int rc = native_begin(call, out, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (seqlens_index >= 0 && given(arg_at(call, seqlens_index))) {
        return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_VARLEN);
    }
    if (backward) {
        rc = sdpa_backward_core(&c,
                                tensor_at(call, 0),
                                tensor_at(call, 1),
                                tensor_at(call, 2),
                                tensor_at(call, 3),
                                &flops,
                                err);
    }
    else {
        rc = sdpa_core(&c,
                       tensor_at(call, 0),
                       tensor_at(call, 1),
                       tensor_at(call, 2),
                       &flops,
                       err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return native_finish(call, &c, flops, true, out, err);
}

static int
f_sdpa(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return attention_formula(call, false, -1, out, err);
}

static int
f_sdpa_backward(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return attention_formula(call, true, -1, out, err);
}

/* _flash_attention_forward(query, key, value, cum_seq_q, ...): dense
 * inputs are (batch, seq, heads, dim) and FlopCounterMode passes them to
 * sdpa_flop_count unchanged, i.e. reads seq as heads; we do the same. */
static int
f_flash_attention_forward(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err)
{
    return attention_formula(call, false, 3, out, err);
}

/* _efficient_attention_forward(query, key, value, bias, cu_seqlens_q, ...)
 * with the same raw-layout reading as flash. */
static int
f_efficient_attention_forward(const ts_op_call *call,
                              ts_op_result *out,
                              ts_error *err)
{
    return attention_formula(call, false, 4, out, err);
}

/* _flash_attention_backward(grad_out, query, key, value, out, logsumexp,
 * cum_seq_q, ...) and _efficient_attention_backward(grad_out_, query, key,
 * value, bias, out, cu_seqlens_q, ...): both have the sequence offsets at
 * index 6. */
static int
f_attention_backward_varlen(const ts_op_call *call,
                            ts_op_result *out,
                            ts_error *err)
{
    return attention_formula(call, true, 6, out, err);
}

/* ==== supplemental formulas (contract 2.2) ============================== */

/* cost * output elements, once the guards have passed. */
static int
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
static int
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

static int
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

static int
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
static int
f_add(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *y;
    bool count, scaled = false;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = scalar_not_one(arg_at(call, 2), "alpha", &scaled, err);
    if (rc == TS_OK) {
        rc = need_output(call, &y, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return finish(
        &c, c_mul(&c, c_numel(&c, y), 1 + (scaled ? 1 : 0)), out, err);
}

static int
f_unit(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 1, out, err);
}

/* exp, sqrt, rsqrt produce floats even from integer inputs. */
static int
f_unit_promoting(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_ALWAYS, 1, out, err);
}

/* div: true division promotes integers; a rounding_mode (keyword-only,
 * index 2 of the *_mode overloads) is outside the convention. Index 2 of
 * div.out is the out tensor, so only a string there is a rounding mode. */
static int
f_div(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    bool rounded = arg_at(call, 2)->kind == TS_ARG_STR;
    bool count;
    int rc;
    if (!rounded) {
        return per_output(call, DT_ALWAYS, 1, out, err);
    }
    rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_ROUNDED);
}

static int
f_masked_fill(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_SELF, 1, out, err);
}

/* where(condition) alone is nonzero(): indices, no arithmetic. */
static int
f_where(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    bool count;
    int rc;
    if (given(arg_at(call, 1))) {
        return per_output(call, DT_LEAVES, 1, out, err);
    }
    rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    return ts_error_set(err,
                        TS_EUNSUPPORTED,
                        "where(condition) returns indices and has no "
                        "arithmetic convention.");
}

/* clamp: one comparison/selection per bound given. */
static int
f_clamp(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *y;
    bool count;
    int64_t bounds =
        (given(arg_at(call, 1)) ? 1 : 0) + (given(arg_at(call, 2)) ? 1 : 0);
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_output(call, &y, err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_mul(&c, c_numel(&c, y), bounds), out, err);
}

/* addcmul/addcdiv: product or quotient, add, and a multiply by value when
 * value != 1 (keyword-only, index 3). */
static int
f_addc(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *y;
    bool count, scaled = false;
    int rc = supp_begin(call, DT_TENSOR_OPERANDS, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = scalar_not_one(arg_at(call, 3), "value", &scaled, err);
    if (rc == TS_OK) {
        rc = need_output(call, &y, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return finish(
        &c, c_mul(&c, c_numel(&c, y), 2 + (scaled ? 1 : 0)), out, err);
}

static int
f_sigmoid(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 4, out, err);
}

static int
f_tanh(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 6, out, err);
}

/* silu and glu: a sigmoid (4) and a multiply per output element. */
static int
f_silu(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 5, out, err);
}

/* gelu: 5 per output (erf counts 1) or 14 for the tanh expansion. */
static int
f_gelu(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    const ts_op_arg *a = arg_at(call, 1);
    int64_t cost = 5;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (a->kind == TS_ARG_STR && a->str != NULL
        && strcmp(a->str, "tanh") == 0) {
        cost = 14;
    }
    else if (a->kind != TS_ARG_ABSENT
             && !(a->kind == TS_ARG_STR && a->str != NULL
                  && strcmp(a->str, "none") == 0)) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "GELU estimates support only 'none' and 'tanh' "
                            "approximations.");
    }
    return count_output(call, cost, out, err);
}

/* pow: only squaring by an explicit scalar 2 has a convention (one
 * multiply); a tensor exponent (pow.Tensor_Tensor, pow.Scalar) has not. */
static int
f_pow(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    const ts_op_arg *e = arg_at(call, 1);
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (!((e->kind == TS_ARG_INT && e->i == 2)
          || (e->kind == TS_ARG_REAL && e->r == 2.0))) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Power FLOPs only cover an explicit scalar "
                            "exponent of two.");
    }
    return count_output(call, 1, out, err);
}

static int
f_in2(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 2, out, err);
}

static int
f_in3(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 3, out, err);
}

static int
f_in4(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 4, out, err);
}

static int
f_in5(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 5, out, err);
}

static int
f_in7(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 7, out, err);
}

static int
f_in10(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 10, out, err);
}

/* elu(self, alpha, scale, input_scale): 6 per input, plus one multiply for
 * each scale that is not 1. */
static int
f_elu(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    bool count, scale = false, input_scale = false;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = scalar_not_one(arg_at(call, 2), "scale", &scale, err);
    if (rc == TS_OK) {
        rc = scalar_not_one(arg_at(call, 3), "input_scale", &input_scale, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return count_input(
        call, 6 + (scale ? 1 : 0) + (input_scale ? 1 : 0), out, err);
}

/* rrelu_with_noise(self, noise, lower, upper, training, ...): in eval it is
 * a leaky ReLU with a fixed slope (4 per input); training samples slopes,
 * which has no convention. */
static int
f_rrelu(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (flag_at(call, 4, false)) {
        return ts_error_set(
            err, TS_EUNSUPPORTED, "RReLU FLOPs cover evaluation calls only.");
    }
    return count_input(call, 4, out, err);
}

/* Input and output element counts of a reduction. */
static int
reduction_sizes(
    const ts_op_call *call, calc *c, int64_t *n, int64_t *o, ts_error *err)
{
    const ts_shape *x = tensor_at(call, 0);
    const ts_shape *y;
    int rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = need_output(call, &y, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    *n = c_numel(c, x);
    *o = c_numel(c, y);
    return TS_OK;
}

/* sum: one add per reduced element beyond the first of each output. */
static int
f_sum(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    int64_t n = 0, o = 0;
    bool count;
    int rc = supp_begin(call, DT_OUTPUT, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = reduction_sizes(call, &c, &n, &o, err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, max0(c_sub(&c, n, o)), out, err);
}

/* mean: sum plus one division per output; a mean over empty rows is NaN
 * work with no convention. */
static int
f_mean(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    int64_t n = 0, o = 0;
    bool count;
    int rc = supp_begin(call, DT_OUTPUT, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = reduction_sizes(call, &c, &n, &o, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (n == 0 && o > 0) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Mean FLOPs require nonempty reduction rows.");
    }
    return finish(&c, c_add(&c, max0(c_sub(&c, n, o)), o), out, err);
}

/* Size of the dim argument (index 1) of a row-wise operator; a 0-D input
 * has rows of width 1, as in the reference. */
static int
row_width(const ts_op_call *call,
          const ts_shape *x,
          int64_t *width,
          ts_error *err)
{
    int dim = 0;
    int rc;
    if (x->ndim == 0) {
        *width = 1;
        return TS_OK;
    }
    rc = wrap_dim(arg_at(call, 1), x->ndim, &dim, err);
    if (rc != TS_OK) {
        return rc;
    }
    *width = x->dims[dim];
    return TS_OK;
}

/* cumsum: width-1 adds per row, i.e. N - N/width. */
static int
f_cumsum(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    int64_t width = 0, n;
    bool count;
    int rc = supp_begin(call, DT_LEAVES_OR_OUTPUT, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = row_width(call, x, &width, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    n = c_numel(&c, x);
    return finish(&c, width == 0 ? 0 : c_sub(&c, n, n / width), out, err);
}

/* max/min: with a second tensor it is elementwise (one comparison per
 * output); otherwise a reduction, N - O comparisons. The reference tells
 * them apart by a tensor second positional argument; max.unary_out(self,
 * *, out) also has a tensor there (its out), so the overload name decides
 * when the caller gives it, and else a 0-D "other" that yields a 0-D result
 * from a non-0-D input can only be that out tensor. */
static int
f_extremum(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    const ts_shape *other = tensor_at(call, 1);
    const ts_shape *y = out_at(call, 0);
    int64_t n = 0, o = 0;
    bool count, elementwise = other != NULL;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (elementwise && call->overload != NULL) {
        elementwise = !overload_is(call, "unary_out");
    }
    else if (elementwise && x != NULL && y != NULL) {
        elementwise = !(other->ndim == 0 && y->ndim == 0 && x->ndim != 0
                        && clamp_count(call->nargs, TS_OP_MAX_ARGS) == 2);
    }
    if (elementwise) {
        return count_output(call, 1, out, err);
    }
    rc = reduction_sizes(call, &c, &n, &o, err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, max0(c_sub(&c, n, o)), out, err);
}

/* norm / linalg_vector_norm (order at index 1, default 2): order 2 squares,
 * sums and takes a root (2N); orders 1 and +-inf take absolute values and
 * reduce (2N - O). */
static int
f_norm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_op_arg *p = arg_at(call, 1);
    int64_t n = 0, o = 0;
    bool count, two = false, one_or_inf = false;
    int rc = supp_begin(call, DT_LEAVES_OR_OUTPUT, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (!given(p)) {
        two = true;
    }
    else if (p->kind == TS_ARG_INT || p->kind == TS_ARG_BOOL) {
        two = p->i == 2;
        one_or_inf = p->i == 1;
    }
    else if (p->kind == TS_ARG_REAL) {
        two = p->r == 2.0;
        one_or_inf = p->r == 1.0 || isinf(p->r);
    }
    if (!two && !one_or_inf) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Norm FLOPs cover only orders 1, 2, and "
                            "+/-infinity.");
    }
    rc = reduction_sizes(call, &c, &n, &o, err);
    if (rc != TS_OK) {
        return rc;
    }
    n = c_mul(&c, n, 2);
    return finish(&c, two ? n : max0(c_sub(&c, n, o)), out, err);
}

/* dot, vdot, mv: one multiply-add per element of the first operand. */
static int
f_dot(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the first operand", err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_mul(&c, 2, c_numel(&c, x)), out, err);
}

/* _grouped_mm(self, mat2, offs, ...): packed token rows (2-D) against
 * equal-width expert matrices (3-D): each row meets one expert, so
 * 2 * rows * k * n whatever the offsets. */
static int
f_grouped_mm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    const ts_shape *w = tensor_at(call, 1);
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (x == NULL || w == NULL || x->ndim != 2 || w->ndim != 3
        || x->dims[1] != w->dims[1]) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Grouped matmul counts cover packed rows and "
                            "equal-width expert matrices only.");
    }
    return finish(
        &c, c_mul(&c, c_mul(&c, 2, c_numel(&c, x)), w->dims[2]), out, err);
}

/* Stable softmax over rows of `width`: max (width-1), subtract, exp, sum
 * (width-1) and divide per row gives 5N - 2R; log-softmax 4N - R. */
static int
softmax_formula(const ts_op_call *call,
                dtype_rule rule,
                int64_t per_elem,
                int64_t per_row,
                int64_t extra_per_output,
                ts_op_result *out,
                ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    const ts_shape *y = NULL;
    int64_t width = 0, n, flops = 0;
    bool count;
    int rc = supp_begin(call, rule, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = row_width(call, x, &width, err);
    }
    if (rc == TS_OK && extra_per_output != 0) {
        rc = need_output(call, &y, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    n = c_numel(&c, x);
    if (width != 0) {
        flops =
            c_sub(&c, c_mul(&c, per_elem, n), c_mul(&c, per_row, n / width));
    }
    if (y != NULL) {
        flops = c_add(&c, flops, c_mul(&c, extra_per_output, c_numel(&c, y)));
    }
    return finish(&c, flops, out, err);
}

static int
f_softmax(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return softmax_formula(call, DT_LEAVES, 5, 2, 0, out, err);
}

static int
f_log_softmax(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return softmax_formula(call, DT_LEAVES, 4, 1, 0, out, err);
}

/* _safe_softmax: softmax plus a comparison with -inf and a selection per
 * output element (rows that are fully masked give zeros). */
static int
f_safe_softmax(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return softmax_formula(call, DT_LEAVES_OR_OUTPUT, 5, 2, 2, out, err);
}

/* Number of affine tensors given among two argument positions. */
static int64_t
affine_count(const ts_op_call *call, int weight, int bias)
{
    return (given(arg_at(call, weight)) ? 1 : 0)
           + (given(arg_at(call, bias)) ? 1 : 0);
}

/* native_layer_norm(input, normalized_shape, weight, bias, eps):
 * 6N + 2R + A*N (mean, centring, variance, normalisation, then affine). */
static int
f_layer_norm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    const ts_op_arg *ns = arg_at(call, 1);
    int64_t n, row, flops;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc != TS_OK) {
        return rc;
    }
    if (ns->kind != TS_ARG_INTS) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "LayerNorm FLOPs need normalized_shape as a list "
                            "of ints.");
    }
    row = c_prod(&c, ns->ints, ns->nints);
    if (c.overflow) {
        return finish(&c, 0, out, err);
    }
    if (row <= 0) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "LayerNorm FLOPs require a nonempty normalized "
                            "row.");
    }
    n = c_numel(&c, x);
    flops = c_add(&c, c_mul(&c, 6, n), c_mul(&c, 2, n / row));
    flops = c_add(&c, flops, c_mul(&c, n, affine_count(call, 2, 3)));
    return finish(&c, flops, out, err);
}

/* native_group_norm(input, weight, bias, N, C, HxW, group, eps):
 * 6N + 2*batch*groups + A*N. */
static int
f_group_norm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    int64_t n, batch = 0, groups = 0, flops;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = count_at(call, 3, "N", &batch, err);
    }
    if (rc == TS_OK) {
        rc = count_at(call, 6, "group", &groups, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (x->ndim < 1 || c_prod(&c, x->dims + 1, x->ndim - 1) == 0) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "GroupNorm FLOPs require a nonempty normalized "
                            "group.");
    }
    n = c_numel(&c, x);
    flops = c_add(&c, c_mul(&c, 6, n), c_mul(&c, 2, c_mul(&c, batch, groups)));
    flops = c_add(&c, flops, c_mul(&c, n, affine_count(call, 1, 2)));
    return finish(&c, flops, out, err);
}

/* rms_norm / _fused_rms_norm(input, normalized_shape, weight, eps):
 * square, mean and scale per element plus rsqrt work per row:
 * (3 + W)N + 2R. */
static int
f_rms_norm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    const ts_op_arg *ns = arg_at(call, 1);
    const ts_shape *w = tensor_at(call, 2);
    int64_t n, row, flops;
    bool count, rows_ok;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc != TS_OK) {
        return rc;
    }
    rows_ok = ns->kind == TS_ARG_INTS && ns->nints > 0 && ns->nints <= x->ndim;
    for (int i = 0; rows_ok && i < ns->nints; i++) {
        rows_ok =
            ns->ints[i] > 0 && x->dims[x->ndim - ns->nints + i] == ns->ints[i];
    }
    if (!rows_ok) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "RMSNorm estimates require matching nonempty "
                            "normalized rows.");
    }
    if (w != NULL) {
        bool same = w->ndim == ns->nints;
        for (int i = 0; same && i < ns->nints; i++) {
            same = w->dims[i] == ns->ints[i];
        }
        if (!same) {
            return ts_error_set(err,
                                TS_EUNSUPPORTED,
                                "RMSNorm FLOPs require a matching weight "
                                "shape.");
        }
    }
    row = c_prod(&c, ns->ints, ns->nints);
    n = c_numel(&c, x);
    flops = c_add(
        &c, c_mul(&c, 3 + (w != NULL ? 1 : 0), n), c_mul(&c, 2, n / row));
    return finish(&c, flops, out, err);
}

/* Batch norm: normalise 2N, per-channel 2C, affine A*N; training adds the
 * batch statistics (4N) and the running-stat updates (3C mean, 5C var). */
static int
batch_norm_formula(const ts_op_call *call,
                   bool has_mean,
                   bool has_var,
                   bool training,
                   ts_op_result *out,
                   ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    int64_t n, ch, flops;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (x == NULL || x->ndim < 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "BatchNorm FLOPs need an input with a channel "
                            "dimension.");
    }
    n = c_numel(&c, x);
    ch = x->dims[1];
    if (n == 0 && !c.overflow) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Empty native BatchNorm work depends on strides "
                            "unavailable to the shape formula.");
    }
    flops = c_add(&c, c_mul(&c, 2, n), c_mul(&c, 2, ch));
    flops = c_add(&c, flops, c_mul(&c, n, affine_count(call, 1, 2)));
    if (training) {
        flops = c_add(&c, flops, c_mul(&c, 4, n));
        flops = c_add(
            &c, flops, c_mul(&c, ch, (has_mean ? 3 : 0) + (has_var ? 5 : 0)));
    }
    return finish(&c, flops, out, err);
}

/* native_batch_norm(input, weight, bias, running_mean, running_var,
 * training, momentum, eps). */
static int
f_native_batch_norm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return batch_norm_formula(call,
                              given(arg_at(call, 3)),
                              given(arg_at(call, 4)),
                              flag_at(call, 5, false),
                              out,
                              err);
}

/* _native_batch_norm_legit has a no_stats overload without the two
 * running-stat tensors: there, index 3 is the training flag. */
static int
f_native_batch_norm_legit(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err)
{
    ts_arg_kind k3 = arg_at(call, 3)->kind;
    if (overload_is(call, "no_stats") || overload_is(call, "no_stats_out")
        || k3 == TS_ARG_BOOL || k3 == TS_ARG_INT) {
        return batch_norm_formula(
            call, false, false, flag_at(call, 3, false), out, err);
    }
    return f_native_batch_norm(call, out, err);
}

static int
f_native_batch_norm_no_training(const ts_op_call *call,
                                ts_op_result *out,
                                ts_error *err)
{
    return batch_norm_formula(
        call, given(arg_at(call, 3)), given(arg_at(call, 4)), false, out, err);
}

/* Fixed-window pooling over `rank` spatial dims: K is the nominal kernel
 * volume (a single kernel value stands for a cube, k^rank). Max pooling
 * makes K-1 comparisons per output, average pooling K-1 adds and a
 * division. The output is the first result (values, not indices). */
static int
pool_formula(const ts_op_call *call,
             int rank,
             bool maximum,
             ts_op_result *out,
             ts_error *err)
{
    calc c = {false};
    const ts_op_arg *k = arg_at(call, 1);
    const ts_shape *y;
    int64_t volume = 1;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_output(call, &y, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (k->kind == TS_ARG_INT || (k->kind == TS_ARG_INTS && k->nints == 1)) {
        int64_t side = k->kind == TS_ARG_INT ? k->i : k->ints[0];
        for (int i = 0; i < rank; i++) {
            volume = c_mul(&c, volume, side);
        }
    }
    else if (k->kind == TS_ARG_INTS) {
        volume = c_prod(&c, k->ints, k->nints);
    }
    else {
        return ts_error_set(
            err, TS_EUNSUPPORTED, "Pooling FLOPs need kernel_size as ints.");
    }
    if (volume < 0) {
        return ts_error_set(
            err, TS_EUNSUPPORTED, "Pooling kernel_size must be non-negative.");
    }
    return finish(
        &c,
        c_mul(&c, c_numel(&c, y), maximum ? c_sub(&c, volume, 1) : volume),
        out,
        err);
}

static int
f_max_pool2d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return pool_formula(call, 2, true, out, err);
}

static int
f_max_pool3d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return pool_formula(call, 3, true, out, err);
}

static int
f_avg_pool2d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return pool_formula(call, 2, false, out, err);
}

static int
f_avg_pool3d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return pool_formula(call, 3, false, out, err);
}

static int64_t
gcd64(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Adaptive pooling visits every element of its exact floor/ceil windows;
 * along one axis the windows of L inputs and O outputs cover
 * L + O - gcd(L, O) elements (overlaps included). Visits multiply across
 * axes and leading (batch, channel) dims; max pooling compares visits - O
 * times, average pooling adds and divides `visits` times. */
static int
adaptive_pool_formula(const ts_op_call *call,
                      int rank,
                      bool maximum,
                      ts_op_result *out,
                      ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    const ts_op_arg *size = arg_at(call, 1);
    const ts_shape *y;
    int64_t visits;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = need_output(call, &y, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (size->kind == TS_ARG_INTS) {
        rank = size->nints;
    }
    if (rank < 1 || x->ndim < rank || y->ndim < rank) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Adaptive pooling FLOPs need input and output "
                            "with the pooled dimensions.");
    }
    visits = c_prod(&c, x->dims, x->ndim - rank);
    for (int i = 0; i < rank; i++) {
        int64_t len = x->dims[x->ndim - rank + i];
        int64_t o = y->dims[y->ndim - rank + i];
        visits =
            c_mul(&c, visits, c_sub(&c, c_add(&c, len, o), gcd64(len, o)));
    }
    if (maximum) {
        visits = c_sub(&c, visits, c_numel(&c, y));
    }
    return finish(&c, visits, out, err);
}

static int
f_adaptive_max_pool2d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return adaptive_pool_formula(call, 2, true, out, err);
}

static int
f_adaptive_max_pool3d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return adaptive_pool_formula(call, 3, true, out, err);
}

static int
f_adaptive_avg_pool2d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return adaptive_pool_formula(call, 2, false, out, err);
}

static int
f_adaptive_avg_pool3d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return adaptive_pool_formula(call, 3, false, out, err);
}

/* _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p,
 * is_causal, *, attn_mask, scale): the two matrix products as in
 * FlopCounterMode, plus score scaling (1 per score), stable softmax
 * (5*scores - 2*rows) and one selection/add per score for a causal or
 * explicit mask. Not a matrix-core-only count, hence no attention flag. */
static int
f_cpu_attention(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *q = tensor_at(call, 0);
    const ts_shape *k = tensor_at(call, 1);
    const ts_shape *v = tensor_at(call, 2);
    const ts_op_arg *dropout = arg_at(call, 3);
    int64_t rows, scores, flops;
    bool count, dropped = false;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (q == NULL || k == NULL || v == NULL || q->ndim != 4 || k->ndim != 4
        || v->ndim != 4 || q->dims[0] != k->dims[0] || k->dims[1] <= 0
        || q->dims[1] % k->dims[1] != 0 || k->dims[0] != v->dims[0]
        || k->dims[1] != v->dims[1] || k->dims[2] != v->dims[2]
        || q->dims[3] != k->dims[3]) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "CPU attention formula requires matching "
                            "batches, divisible query/KV heads, Q/K widths, "
                            "and K/V lengths.");
    }
    if (dropout->kind == TS_ARG_REAL) {
        dropped = dropout->r != 0.0;
    }
    else if (dropout->kind == TS_ARG_INT || dropout->kind == TS_ARG_BOOL) {
        dropped = dropout->i != 0;
    }
    if (dropped) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "CPU attention formula does not cover dropout.");
    }
    rows = c_mul(&c, c_mul(&c, q->dims[0], q->dims[1]), q->dims[2]);
    if (rows == 0 || k->dims[2] == 0) {
        return finish(&c, 0, out, err);
    }
    scores = c_mul(&c, rows, k->dims[2]);
    flops = c_mul(&c, c_mul(&c, 2, scores), c_add(&c, q->dims[3], v->dims[3]));
    flops = c_add(&c, flops, c_mul(&c, 6, scores));
    flops = c_sub(&c, flops, c_mul(&c, 2, rows));
    flops = c_add(&c,
                  flops,
                  c_mul(&c,
                        scores,
                        (flag_at(call, 4, false) ? 1 : 0)
                            + (given(arg_at(call, 5)) ? 1 : 0)));
    return finish(&c, flops, out, err);
}

/* Dense batched self-attention of _native_multi_head_attention:
 * four E x E projections (8BLE^2 with the 2K-per-dot native convention),
 * query scaling (BLE), the two products (4BL^2E), stable softmax
 * (5*scores - 2*rows), one add per score for a mask and one for averaging
 * the returned weights over heads. */
static int
mha_count(calc *c,
          const ts_shape *q,
          const ts_shape *k,
          const ts_shape *v,
          int64_t embed_dim,
          int64_t heads,
          bool mask,
          bool averaged,
          int64_t *flops,
          ts_error *err)
{
    int64_t b, l, e, ble, rows, scores, n;
    if (q == NULL || k == NULL || v == NULL || q->ndim != 3
        || !shapes_equal(q, k) || !shapes_equal(k, v)
        || q->dims[2] != embed_dim) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Fused MHA counts require dense batched "
                            "self-attention with matching widths.");
    }
    b = q->dims[0];
    l = q->dims[1];
    e = q->dims[2];
    ble = c_mul(c, c_mul(c, b, l), e);
    rows = c_mul(c, c_mul(c, b, heads), l);
    scores = c_mul(c, rows, l);
    n = c_mul(c, c_mul(c, 8, ble), e);
    n = c_add(c, n, ble);
    n = c_add(c, n, c_mul(c, c_mul(c, 4, ble), l));
    n = c_add(c, n, c_mul(c, 5, scores));
    n = c_sub(c, n, c_mul(c, 2, rows));
    *flops =
        c_add(c, n, c_mul(c, scores, (mask ? 1 : 0) + (averaged ? 1 : 0)));
    return TS_OK;
}

/* _native_multi_head_attention(query, key, value, embed_dim, num_head,
 * qkv_weight, qkv_bias, proj_weight, proj_bias, mask, need_weights,
 * average_attn_weights, mask_type). */
static int
f_native_mha(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    int64_t embed = 0, heads = 0, flops = 0;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = count_at(call, 3, "embed_dim", &embed, err);
    if (rc == TS_OK) {
        rc = count_at(call, 4, "num_head", &heads, err);
    }
    if (rc == TS_OK) {
        rc = mha_count(&c,
                       tensor_at(call, 0),
                       tensor_at(call, 1),
                       tensor_at(call, 2),
                       embed,
                       heads,
                       given(arg_at(call, 9)),
                       flag_at(call, 10, true) && flag_at(call, 11, true),
                       &flops,
                       err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, flops, out, err);
}

/* _transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight,
 * qkv_bias, proj_weight, proj_bias, use_gelu, norm_first, eps,
 * norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
 * ffn_bias_1, ffn_weight_2, ffn_bias_2, mask, mask_type): attention without
 * returned weights, the two feed-forward linears (4*hidden*E), the
 * activation (ReLU 1 or exact GELU 5 per hidden element), two residual adds
 * and two LayerNorms with affine terms (18N + 4R). The mask sits at index
 * 18: a call cut short before the required arguments (ffn_bias_2, index 17)
 * cannot tell whether a mask was passed, so it is not counted. */
static int
f_encoder_layer(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *src = tensor_at(call, 0);
    const ts_shape *ffn1 = tensor_at(call, 14);
    int64_t embed = 0, heads = 0, attention = 0, rows, hidden, flops;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (clamp_count(call->nargs, TS_OP_MAX_ARGS) < 18) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "_transformer_encoder_layer_fwd needs its first "
                            "18 arguments (mask is argument 18; "
                            "TS_OP_MAX_ARGS is %d).",
                            TS_OP_MAX_ARGS);
    }
    rc = count_at(call, 1, "embed_dim", &embed, err);
    if (rc == TS_OK) {
        rc = count_at(call, 2, "num_heads", &heads, err);
    }
    if (rc == TS_OK) {
        rc = mha_count(&c,
                       src,
                       src,
                       src,
                       embed,
                       heads,
                       given(arg_at(call, 18)),
                       false,
                       &attention,
                       err);
    }
    if (rc == TS_OK && (ffn1 == NULL || ffn1->ndim < 1)) {
        rc = ts_error_set(err,
                          TS_EUNSUPPORTED,
                          "_transformer_encoder_layer_fwd needs ffn_weight_1 "
                          "as a tensor.");
    }
    if (rc != TS_OK) {
        return rc;
    }
    rows = c_mul(&c, src->dims[0], src->dims[1]);
    hidden = c_mul(&c, rows, ffn1->dims[0]);
    flops = c_add(&c, attention, c_mul(&c, c_mul(&c, 4, hidden), embed));
    flops = c_add(
        &c, flops, flag_at(call, 7, false) ? c_mul(&c, 5, hidden) : hidden);
    flops = c_add(&c, flops, c_mul(&c, 18, c_numel(&c, src)));
    flops = c_add(&c, flops, c_mul(&c, 4, rows));
    return finish(&c, flops, out, err);
}

/* ==== the table ==========================================================
 * Sorted by strcmp (byte order) for ts_op_lookup's binary search; the tests
 * check the order and uniqueness. */

/* clang-format off: it would split these one-line initializers. */
// clang-format off
#define NATIVE(name, fn, text) {name, fn, NULL, TS_OPF_NATIVE, text}
#define ATTENTION(name, fn, text) \
    {name, fn, NULL, TS_OPF_NATIVE | TS_OPF_ATTENTION, text}
#define SUPP(name, fn, text) {name, fn, NULL, 0u, text}
#define IGNORED(name, reason) {name, NULL, reason, 0u, NULL}
// clang-format on

#define VIEW "Metadata-only tensor view."
#define MOVE "Data movement is excluded from FLOPs."
#define ALLOC "Tensor allocation is excluded from FLOPs."
#define CREATE "Tensor creation is excluded from FLOPs."
#define MARK "Profiler annotation: no arithmetic."

#define T_MM "2*m*n*k (FlopCounterMode)"
#define T_BMM "2*b*m*n*k (FlopCounterMode)"
#define T_CONV                                                              \
    "2*batch*w[0]*w[1]*prod(kernel)*prod(output spatial; input spatial if " \
    "transposed); w[1] is c_in/groups (FlopCounterMode)"
#define T_SDPA                                                   \
    "2*b*h_q*s_q*s_k*(d_q + d_v): the two matrix products only " \
    "(FlopCounterMode)"
#define T_SDPA_BWD                                                \
    "2*b*h_q*s_q*s_k*(3*d_q + 2*d_v): five matrix products only " \
    "(FlopCounterMode)"
#define T_RAW_FWD                                                         \
    "as SDPA forward on the raw (batch, seq, heads, dim) shapes read as " \
    "(b, h, s, d) (FlopCounterMode); variable-length calls unsupported"
#define T_RAW_BWD                                                          \
    "as SDPA backward on the raw (batch, seq, heads, dim) shapes read as " \
    "(b, h, s, d) (FlopCounterMode); variable-length calls unsupported"
#define T_ADD "out*(1 + [alpha != 1])"
#define T_UNIT "out"
#define T_IN(n) n "*N (N = input elements)"
#define T_POOL_MAX "out*(K - 1), K = kernel volume (k^rank for one value)"
#define T_POOL_AVG "out*K, K = kernel volume (k^rank for one value)"
#define T_AMAX \
    "visits - out; visits = lead dims * prod(L + O - gcd(L, O)) per axis"
#define T_AAVG "visits = lead dims * prod(L + O - gcd(L, O)) per axis"
#define T_BN                                                 \
    "2N + 2C + A*N; training: + 4N + C*(3*[running_mean] + " \
    "5*[running_var]); empty input unsupported"

static const ts_op_entry op_table[] = {
    SUPP("aten._adaptive_avg_pool2d", f_adaptive_avg_pool2d, T_AAVG),
    SUPP("aten._adaptive_avg_pool3d", f_adaptive_avg_pool3d, T_AAVG),
    NATIVE("aten._convolution", f_convolution, T_CONV),
    ATTENTION("aten._efficient_attention_backward",
              f_attention_backward_varlen,
              T_RAW_BWD),
    ATTENTION("aten._efficient_attention_forward",
              f_efficient_attention_forward,
              T_RAW_FWD),
    ATTENTION("aten._flash_attention_backward",
              f_attention_backward_varlen,
              T_RAW_BWD),
    ATTENTION(
        "aten._flash_attention_forward", f_flash_attention_forward, T_RAW_FWD),
    SUPP("aten._fused_rms_norm", f_rms_norm, "(3 + [weight])*N + 2*rows"),
    SUPP("aten._grouped_mm",
         f_grouped_mm,
         "2*prod(input)*n (2-D packed rows, 3-D equal-width experts)"),
    SUPP("aten._log_softmax", f_log_softmax, "4*N - rows"),
    SUPP("aten._native_batch_norm_legit", f_native_batch_norm_legit, T_BN),
    SUPP("aten._native_batch_norm_legit_no_training",
         f_native_batch_norm_no_training,
         "2N + 2C + A*N (eval); empty input unsupported"),
    SUPP("aten._native_multi_head_attention",
         f_native_mha,
         "8BLE^2 + BLE + 4BL^2E + 5*scores - 2*rows + scores*([mask] + "
         "[need_weights and average_attn_weights])"),
    SUPP("aten._prelu_kernel", f_in4, T_IN("4")),
    SUPP("aten._safe_softmax", f_safe_softmax, "5*N - 2*rows + 2*out"),
    ATTENTION("aten._scaled_dot_product_cudnn_attention", f_sdpa, T_SDPA),
    ATTENTION("aten._scaled_dot_product_cudnn_attention_backward",
              f_sdpa_backward,
              T_SDPA_BWD),
    ATTENTION("aten._scaled_dot_product_efficient_attention", f_sdpa, T_SDPA),
    ATTENTION("aten._scaled_dot_product_efficient_attention_backward",
              f_sdpa_backward,
              T_SDPA_BWD),
    ATTENTION("aten._scaled_dot_product_flash_attention", f_sdpa, T_SDPA),
    ATTENTION("aten._scaled_dot_product_flash_attention_backward",
              f_sdpa_backward,
              T_SDPA_BWD),
    SUPP("aten._scaled_dot_product_flash_attention_for_cpu",
         f_cpu_attention,
         "2*scores*(d_q + d_v) + scores + 5*scores - 2*rows + "
         "scores*([is_causal] + [attn_mask]); dropout unsupported"),
    NATIVE("aten._scaled_mm",
           f_mm,
           "2*m*n*k; scales and bias not counted (FlopCounterMode)"),
    NATIVE("aten._slow_conv2d_forward",
           f_slow_conv2d_forward,
           "2*batch*w[0]*w[1]*prod(kernel)*prod(output spatial) "
           "(FlopCounterMode's conv formula; its own call raises TypeError "
           "here)"),
    SUPP("aten._softmax", f_softmax, "5*N - 2*rows"),
    IGNORED("aten._to_copy", MOVE),
    SUPP("aten._transformer_encoder_layer_fwd",
         f_encoder_layer,
         "MHA (no weights) + 4*hidden*E + (5*hidden GELU or hidden ReLU) + "
         "18N + 4*rows"),
    IGNORED("aten._unsafe_view", VIEW),
    SUPP("aten.abs", f_unit, T_UNIT),
    SUPP("aten.abs_", f_unit, T_UNIT),
    SUPP("aten.adaptive_max_pool2d", f_adaptive_max_pool2d, T_AMAX),
    SUPP("aten.adaptive_max_pool3d", f_adaptive_max_pool3d, T_AMAX),
    SUPP("aten.add", f_add, T_ADD),
    SUPP("aten.add_", f_add, T_ADD),
    SUPP("aten.addcdiv", f_addc, "out*(2 + [value != 1])"),
    SUPP("aten.addcdiv_", f_addc, "out*(2 + [value != 1])"),
    SUPP("aten.addcmul", f_addc, "out*(2 + [value != 1])"),
    SUPP("aten.addcmul_", f_addc, "out*(2 + [value != 1])"),
    NATIVE("aten.addmm",
           f_addmm,
           "2*m*n*k of mat1 @ mat2; bias and scaling not counted "
           "(FlopCounterMode)"),
    IGNORED("aten.alias", VIEW),
    IGNORED("aten.as_strided", VIEW),
    SUPP("aten.avg_pool2d", f_avg_pool2d, T_POOL_AVG),
    SUPP("aten.avg_pool3d", f_avg_pool3d, T_POOL_AVG),
    NATIVE("aten.baddbmm",
           f_baddbmm,
           "2*b*m*n*k of batch1 @ batch2; bias and scaling not counted "
           "(FlopCounterMode)"),
    NATIVE("aten.bmm", f_bmm, T_BMM),
    IGNORED("aten.cat", MOVE),
    SUPP("aten.celu", f_in7, T_IN("7")),
    SUPP("aten.celu_", f_in7, T_IN("7")),
    SUPP("aten.clamp", f_clamp, "out*([min given] + [max given])"),
    SUPP("aten.clamp_", f_clamp, "out*([min given] + [max given])"),
    SUPP("aten.clamp_max", f_unit, T_UNIT),
    SUPP("aten.clamp_max_", f_unit, T_UNIT),
    SUPP("aten.clamp_min", f_unit, T_UNIT),
    SUPP("aten.clamp_min_", f_unit, T_UNIT),
    IGNORED("aten.clone", MOVE),
    IGNORED("aten.contiguous", MOVE),
    NATIVE("aten.convolution", f_convolution, T_CONV),
    NATIVE("aten.convolution_backward",
           f_convolution_backward,
           "[output_mask[0]] conv count of grad_input + [output_mask[1]] conv "
           "count of grad_weight (FlopCounterMode)"),
    NATIVE("aten.convolution_overrideable", f_convolution, T_CONV),
    IGNORED("aten.copy_", MOVE),
    SUPP("aten.cos", f_unit, T_UNIT),
    SUPP("aten.cos_", f_unit, T_UNIT),
    NATIVE("aten.cudnn_convolution",
           f_cudnn_convolution,
           T_CONV "; argument 6 (benchmark) is read as transposed, as "
                  "FlopCounterMode does"),
    SUPP("aten.cumsum", f_cumsum, "N - N/width along dim"),
    SUPP("aten.cumsum_", f_cumsum, "N - N/width along dim"),
    IGNORED("aten.detach", VIEW),
    SUPP("aten.div", f_div, "out (true division); rounding_mode unsupported"),
    SUPP("aten.div_", f_div, "out (true division); rounding_mode unsupported"),
    SUPP("aten.dot", f_dot, "2*prod(first operand)"),
    SUPP("aten.elu", f_elu, "(6 + [scale != 1] + [input_scale != 1])*N"),
    SUPP("aten.elu_", f_elu, "(6 + [scale != 1] + [input_scale != 1])*N"),
    IGNORED("aten.empty", ALLOC),
    IGNORED("aten.empty_like", ALLOC),
    IGNORED("aten.empty_strided", ALLOC),
    SUPP("aten.exp",
         f_unit_promoting,
         "out (integer inputs promote to floating)"),
    IGNORED("aten.expand", VIEW),
    IGNORED("aten.fill_", MOVE),
    IGNORED("aten.full", CREATE),
    IGNORED("aten.full_like", CREATE),
    SUPP("aten.gelu", f_gelu, "5*out (exact) or 14*out (tanh)"),
    SUPP("aten.gelu_", f_gelu, "5*out (exact) or 14*out (tanh)"),
    SUPP("aten.glu", f_silu, "5*out"),
    SUPP("aten.hardshrink", f_in3, T_IN("3")),
    SUPP("aten.hardsigmoid", f_in4, T_IN("4")),
    SUPP("aten.hardsigmoid_", f_in4, T_IN("4")),
    SUPP("aten.hardswish", f_in5, T_IN("5")),
    SUPP("aten.hardswish_", f_in5, T_IN("5")),
    SUPP("aten.hardtanh", f_in2, T_IN("2")),
    SUPP("aten.hardtanh_", f_in2, T_IN("2")),
    SUPP("aten.leaky_relu", f_in4, T_IN("4")),
    SUPP("aten.leaky_relu_", f_in4, T_IN("4")),
    IGNORED("aten.lift_fresh", CREATE),
    IGNORED("aten.lift_fresh_copy", CREATE),
    SUPP("aten.linalg_vector_norm",
         f_norm,
         "2N (order 2 or None) or max(0, 2N - out) (order 1 or +/-inf)"),
    SUPP("aten.log", f_unit, T_UNIT),
    SUPP("aten.log_", f_unit, T_UNIT),
    SUPP("aten.log_sigmoid_forward", f_in7, T_IN("7")),
    SUPP("aten.masked_fill", f_masked_fill, "out (dtype of the input)"),
    SUPP("aten.masked_fill_", f_masked_fill, "out (dtype of the input)"),
    SUPP("aten.max",
         f_extremum,
         "out (with a second tensor) or max(0, N - out) (reduction)"),
    SUPP("aten.max_pool2d_with_indices", f_max_pool2d, T_POOL_MAX),
    SUPP("aten.max_pool3d_with_indices", f_max_pool3d, T_POOL_MAX),
    SUPP("aten.maximum", f_unit, T_UNIT),
    SUPP("aten.mean", f_mean, "max(0, N - out) + out; empty rows unsupported"),
    SUPP("aten.min",
         f_extremum,
         "out (with a second tensor) or max(0, N - out) (reduction)"),
    SUPP("aten.minimum", f_unit, T_UNIT),
    SUPP("aten.mish", f_in10, T_IN("10")),
    SUPP("aten.mish_", f_in10, T_IN("10")),
    NATIVE("aten.mm", f_mm, T_MM),
    SUPP("aten.mul", f_unit, T_UNIT),
    SUPP("aten.mul_", f_unit, T_UNIT),
    SUPP("aten.mv", f_dot, "2*prod(first operand)"),
    IGNORED("aten.narrow", VIEW),
    SUPP("aten.native_batch_norm", f_native_batch_norm, T_BN),
    SUPP("aten.native_group_norm", f_group_norm, "6N + 2*batch*groups + A*N"),
    SUPP("aten.native_layer_norm", f_layer_norm, "6N + 2*rows + A*N"),
    SUPP("aten.neg", f_unit, T_UNIT),
    SUPP("aten.norm",
         f_norm,
         "2N (order 2 or None) or max(0, 2N - out) (order 1 or +/-inf)"),
    IGNORED("aten.ones", CREATE),
    IGNORED("aten.ones_like", CREATE),
    IGNORED("aten.permute", VIEW),
    SUPP("aten.pow",
         f_pow,
         "out for a scalar exponent of 2; other exponents unsupported"),
    SUPP("aten.pow_",
         f_pow,
         "out for a scalar exponent of 2; other exponents unsupported"),
    SUPP("aten.prelu", f_in4, T_IN("4")),
    SUPP("aten.reciprocal", f_unit, T_UNIT),
    SUPP("aten.reciprocal_", f_unit, T_UNIT),
    SUPP("aten.relu", f_unit, T_UNIT),
    SUPP("aten.relu_", f_unit, T_UNIT),
    SUPP("aten.rms_norm", f_rms_norm, "(3 + [weight])*N + 2*rows"),
    SUPP(
        "aten.rrelu_with_noise", f_rrelu, "4*N in eval; training unsupported"),
    SUPP("aten.rrelu_with_noise_",
         f_rrelu,
         "4*N in eval; training unsupported"),
    SUPP("aten.rsqrt",
         f_unit_promoting,
         "out (integer inputs promote to floating)"),
    IGNORED("aten.scalar_tensor", CREATE),
    IGNORED("aten.select", VIEW),
    SUPP("aten.sigmoid", f_sigmoid, "4*out"),
    SUPP("aten.sigmoid_", f_sigmoid, "4*out"),
    SUPP("aten.silu", f_silu, "5*out"),
    SUPP("aten.silu_", f_silu, "5*out"),
    SUPP("aten.sin", f_unit, T_UNIT),
    SUPP("aten.sin_", f_unit, T_UNIT),
    IGNORED("aten.slice", VIEW),
    SUPP("aten.softplus", f_in7, T_IN("7")),
    SUPP("aten.softshrink", f_in5, T_IN("5")),
    IGNORED("aten.split", MOVE),
    IGNORED("aten.split_with_sizes", MOVE),
    SUPP("aten.sqrt",
         f_unit_promoting,
         "out (integer inputs promote to floating)"),
    IGNORED("aten.squeeze", VIEW),
    IGNORED("aten.squeeze_", VIEW),
    SUPP("aten.sub", f_add, T_ADD),
    SUPP("aten.sub_", f_add, T_ADD),
    SUPP("aten.sum", f_sum, "max(0, N - out)"),
    IGNORED("aten.t", VIEW),
    SUPP("aten.tanh", f_tanh, "6*out"),
    SUPP("aten.tanh_", f_tanh, "6*out"),
    SUPP("aten.threshold", f_in2, T_IN("2")),
    SUPP("aten.threshold_", f_in2, T_IN("2")),
    IGNORED("aten.to", MOVE),
    IGNORED("aten.transpose", VIEW),
    IGNORED("aten.unbind", VIEW),
    IGNORED("aten.unsqueeze", VIEW),
    SUPP("aten.vdot", f_dot, "2*prod(first operand)"),
    IGNORED("aten.view", VIEW),
    SUPP("aten.where", f_where, T_UNIT),
    IGNORED("aten.zero_", MOVE),
    IGNORED("aten.zeros", CREATE),
    IGNORED("aten.zeros_like", CREATE),
    /* Profiler annotations (record_function, optimizer steps) mark a
     * region; they do no arithmetic. */
    IGNORED("profiler._record_function_enter", MARK),
    IGNORED("profiler._record_function_enter_new", MARK),
    IGNORED("profiler._record_function_exit", MARK),
};

#undef NATIVE
#undef ATTENTION
#undef SUPP
#undef IGNORED

const ts_op_entry *
ts_op_lookup(const char *packet_name)
{
    size_t lo = 0, hi = sizeof op_table / sizeof op_table[0];
    if (packet_name == NULL) {
        return NULL;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(packet_name, op_table[mid].name);
        if (cmp == 0) {
            return &op_table[mid];
        }
        if (cmp < 0) {
            hi = mid;
        }
        else {
            lo = mid + 1;
        }
    }
    return NULL;
}

size_t
ts_op_table(const ts_op_entry **entries)
{
    if (entries != NULL) {
        *entries = op_table;
    }
    return sizeof op_table / sizeof op_table[0];
}
