/* Elementwise, activation and reduction formulas of torchscan_flops_v1
 * (contract 2.2), and the extensions of the same convention to operators the
 * contract does not list (comparisons, lerp, activation gradients, pow
 * exponents other than 2).
 *
 * The convention: each scalar add, mul, div, exp, sqrt, erf, comparison or
 * selection counts 1; sigmoid 4, tanh 6. Integer and boolean work counts 0.
 */
#include "op_formulas_internal.h"

/* `base` FLOPs per output element, plus one when the scalar argument at
 * `index` (alpha, value) is not 1: the extra multiply. */
static int
per_output_scaled(const ts_op_call *call,
                  dtype_rule rule,
                  int index,
                  const char *name,
                  int64_t base,
                  ts_op_result *out,
                  ts_error *err)
{
    calc c = {false};
    const ts_shape *y;
    bool count, scaled = false;
    int rc = supp_begin(call, rule, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = scalar_not_one(arg_at(call, index), name, &scaled, err);
    if (rc == TS_OK) {
        rc = need_output(call, &y, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return finish(
        &c, c_mul(&c, c_numel(&c, y), base + (scaled ? 1 : 0)), out, err);
}

int
ts_opf_add(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output_scaled(call, DT_LEAVES, 2, "alpha", 1, out, err);
}

int
ts_opf_unit(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 1, out, err);
}

/* exp, sqrt, rsqrt produce floats even from integer inputs. */
int
ts_opf_unit_promoting(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_ALWAYS, 1, out, err);
}

/* div: true division promotes integers; a rounding_mode (keyword-only,
 * index 2 of the *_mode overloads) is outside the convention. Index 2 of
 * div.out is the out tensor, so only a string there is a rounding mode. */
int
ts_opf_div(const ts_op_call *call, ts_op_result *out, ts_error *err)
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

int
ts_opf_masked_fill(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_SELF, 1, out, err);
}

/* where(condition) alone is nonzero(): indices, no arithmetic. */
int
ts_opf_where(const ts_op_call *call, ts_op_result *out, ts_error *err)
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
int
ts_opf_clamp(const ts_op_call *call, ts_op_result *out, ts_error *err)
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
int
ts_opf_addc(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output_scaled(
        call, DT_TENSOR_OPERANDS, 3, "value", 2, out, err);
}

int
ts_opf_sigmoid(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 4, out, err);
}

int
ts_opf_tanh(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 6, out, err);
}

/* silu and glu: a sigmoid (4) and a multiply per output element. */
int
ts_opf_silu(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 5, out, err);
}

/* The GELU family: `exact` per output element for approximate='none'
 * (the argument at `index`, absent meaning 'none'), `tanh` for 'tanh';
 * any other approximation has no convention. */
static int
gelu_cost(const ts_op_call *call,
          int index,
          int64_t exact,
          int64_t tanh,
          ts_op_result *out,
          ts_error *err)
{
    const ts_op_arg *a = arg_at(call, index);
    int64_t cost = exact;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (a->kind == TS_ARG_STR && a->str != NULL
        && strcmp(a->str, "tanh") == 0) {
        cost = tanh;
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

/* gelu: 5 per output (erf counts 1) or 14 for the tanh expansion. */
int
ts_opf_gelu(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return gelu_cost(call, 1, 5, 14, out, err);
}

/* Multiplies that an integer power takes by binary exponentiation
 * (square-and-multiply): floor(log2 n) squarings plus one multiply per
 * further set bit; a negative exponent adds one reciprocal. This is how the
 * CPU kernel specialises x^2 (1), x^3 (2), x^-1 (1) and x^-2 (2), and it
 * gives contract 2.2's count for the exponent 2. x^0 fills ones and x^1
 * copies: no arithmetic. */
static int64_t
integer_power_cost(int64_t n)
{
    int64_t cost = 0;
    uint64_t m = n < 0 ? (uint64_t)(-(n + 1)) + 1u : (uint64_t)n;
    if (m > 1u) {
        int squarings = 63 - __builtin_clzll(m);
        cost = squarings + __builtin_popcountll(m) - 1;
    }
    return cost + (n < 0 ? 1 : 0);
}

/* pow(self, exponent): a scalar exponent that is an integer (2, 3.0, -1)
 * costs its square-and-multiply count; +-0.5 are a (reciprocal) square
 * root, 1. Any other real exponent would be exp(y*log(x)), and a tensor
 * exponent (pow.Tensor_Tensor, pow.Scalar) varies per element: neither has
 * a convention, so both are unsupported rather than guessed. */
int
ts_opf_pow(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    const ts_op_arg *e = arg_at(call, 1);
    int64_t cost = -1;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (e->kind == TS_ARG_INT || e->kind == TS_ARG_BOOL) {
        cost = integer_power_cost(e->i);
    }
    else if (e->kind == TS_ARG_REAL && isfinite(e->r)) {
        /* |exponent| <= 2^53: exactly representable integers only, and far
         * from the int64 conversion limit. */
        if (fabs(e->r) <= 9007199254740992.0 && e->r == floor(e->r)) {
            cost = integer_power_cost((int64_t)e->r);
        }
        else if (e->r == 0.5 || e->r == -0.5) {
            cost = 1;
        }
    }
    if (cost < 0) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Power FLOPs cover scalar exponents that are "
                            "integers or +/-0.5 only.");
    }
    return count_output(call, cost, out, err);
}

int
ts_opf_in2(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 2, out, err);
}

int
ts_opf_in3(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 3, out, err);
}

int
ts_opf_in4(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 4, out, err);
}

int
ts_opf_in5(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 5, out, err);
}

int
ts_opf_in7(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 7, out, err);
}

int
ts_opf_in10(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 10, out, err);
}

/* elu(self, alpha, scale, input_scale): 6 per input, plus one multiply for
 * each scale that is not 1. */
int
ts_opf_elu(const ts_op_call *call, ts_op_result *out, ts_error *err)
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
int
ts_opf_rrelu(const ts_op_call *call, ts_op_result *out, ts_error *err)
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
int
ts_opf_sum(const ts_op_call *call, ts_op_result *out, ts_error *err)
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
int
ts_opf_mean(const ts_op_call *call, ts_op_result *out, ts_error *err)
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

/* cumsum: width-1 adds per row, i.e. N - N/width, in the output dtype:
 * cumsum(x, dtype=) converts x first and adds in that dtype, so the output
 * decides, as for sum and mean (the reference counts any floating
 * operand). */
int
ts_opf_cumsum(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    int64_t width = 0, n;
    bool count;
    int rc = supp_begin(call, DT_OUTPUT, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = row_width(call, x, 1, &width, err);
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
int
ts_opf_extremum(const ts_op_call *call, ts_op_result *out, ts_error *err)
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
int
ts_opf_norm(const ts_op_call *call, ts_op_result *out, ts_error *err)
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
int
ts_opf_dot(const ts_op_call *call, ts_op_result *out, ts_error *err)
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

/* _grouped_mm(a, b, offs): one product per group of experts, 2 per
 * multiply-add as for mm. The four layouts PyTorch accepts, with K the
 * shared (reduced) dimension:
 *  - a (M, K) packed rows, b (G, K, N) experts (the forward, and the input
 *    gradient of the backward): 2*M*K*N = 2*prod(a)*N;
 *  - a (M, K), b (K, N), K ragged by offs (the experts' weight gradient):
 *    sum over groups of 2*M*K_g*N = 2*prod(a)*N;
 *  - a (G, M, K), b (G, K, N), no offsets: 2*G*M*K*N = 2*prod(a)*N;
 *  - a (G, M, K), b (K, N), N ragged by offs: sum of 2*M*K*N_g =
 *    2*M*K*N.
 * Rows past the last offset (expert-parallel sentinels) are counted: which
 * rows the offsets cover is data. */
int
ts_opf_grouped_mm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *a = tensor_at(call, 0);
    const ts_shape *b = tensor_at(call, 1);
    int64_t flops;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (a == NULL || b == NULL || (a->ndim != 2 && a->ndim != 3)
        || (b->ndim != 2 && b->ndim != 3)
        || a->dims[a->ndim - 1] != b->dims[b->ndim - 2]
        || (a->ndim == 3 && b->ndim == 3 && a->dims[0] != b->dims[0])) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Grouped matmul counts need 2-D or 3-D operands "
                            "whose shared dimension (and group count, for "
                            "two 3-D operands) match.");
    }
    if (a->ndim == 3 && b->ndim == 2) {
        flops = c_mul(&c, c_mul(&c, 2, a->dims[1]), a->dims[2]);
        return finish(&c, c_mul(&c, flops, b->dims[1]), out, err);
    }
    flops = c_mul(&c, c_mul(&c, 2, c_numel(&c, a)), b->dims[b->ndim - 1]);
    return finish(&c, flops, out, err);
}

/* Stable softmax over rows of `width`: max (width-1), subtract, exp, sum
 * (width-1) and divide per row gives 5N - 2R; log-softmax 4N - R. */

/* ==== extensions of torchscan_flops_v1 ==================================
 * Operators the contract does not name, counted by the same rules: the
 * arithmetic of the expression the kernel evaluates per element, each add,
 * mul, div, exp, erf, comparison or selection 1, sigmoid 4, tanh 6. */

/* Integer and boolean work is excluded: bitwise operators only ever see
 * integer or boolean operands, so they count 0 (after the layout and
 * complex guards, which still apply). */
int
ts_opf_boolean(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    bool count;
    return supp_begin(call, DT_LEAVES, out, &count, err);
}

/* all/any: a floating input is tested against zero once per element; the
 * logical combination of those tests is boolean work (excluded). Boolean
 * and integer inputs count 0. */
int
ts_opf_all_any(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    bool count;
    int rc = supp_begin(call, DT_SELF, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    return count_input(call, 1, out, err);
}

/* lerp: self + weight * (end - self), a subtract, a multiply and an add per
 * output element (scalar or tensor weight alike). */
int
ts_opf_lerp(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 3, out, err);
}

/* Dropout with the mask given: multiply by the mask and by 1/(1-p). Drawing
 * the mask is random number generation, which the convention excludes
 * (bernoulli is on the ignore list), so native_dropout's count is the same
 * as the CPU path's (bernoulli_, div_ of the mask, mul). */
int
ts_opf_native_dropout(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    bool count;
    const ts_op_arg *train = arg_at(call, 2);
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    /* train=False (not None) returns the input and an all-true mask. */
    if ((train->kind == TS_ARG_BOOL || train->kind == TS_ARG_INT)
        && train->i == 0) {
        return TS_OK;
    }
    return count_input(call, 2, out, err);
}

/* native_dropout_backward(grad, mask, scale): grad * mask * scale. */
int
ts_opf_native_dropout_backward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err)
{
    return per_output(call, DT_LEAVES, 2, out, err);
}

/* ---- activation gradients -----------------------------------------------
 * Per output (= grad_output) element, the arithmetic of the derivative
 * given the saved input or output. */

/* threshold_backward(grad, self, threshold): grad where self > threshold,
 * else 0 -- one masked selection, as relu itself counts 1. */
int
ts_opf_threshold_backward(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err)
{
    return per_output(call, DT_LEAVES, 1, out, err);
}

/* hardtanh_backward: grad where min < x < max: the two bound tests of
 * hardtanh (2) with the selection folded in, as hardtanh counts 2. */
int
ts_opf_hardtanh_backward(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err)
{
    return per_output(call, DT_LEAVES, 2, out, err);
}

/* hardsigmoid_backward: grad / 6 inside (-3, 3), else 0: two bound tests
 * and a multiply. */
int
ts_opf_hardsigmoid_backward(const ts_op_call *call,
                            ts_op_result *out,
                            ts_error *err)
{
    return per_output(call, DT_LEAVES, 3, out, err);
}

/* hardswish_backward: 0 below -3, grad above 3, else grad * (x/3 + 0.5):
 * two bound tests, a divide, an add and a multiply. */
int
ts_opf_hardswish_backward(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err)
{
    return per_output(call, DT_LEAVES, 5, out, err);
}

/* leaky_relu_backward: grad, or grad * slope where x <= 0: a masked
 * selection and a multiply. */
int
ts_opf_leaky_relu_backward(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    return per_output(call, DT_LEAVES, 2, out, err);
}

/* sigmoid_backward(grad, y) = grad * y * (1 - y); tanh_backward(grad, y) =
 * grad * (1 - y*y): three operations each, from the saved output. */
int
ts_opf_sigmoid_tanh_backward(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err)
{
    return per_output(call, DT_LEAVES, 3, out, err);
}

/* gelu_backward(grad, x, *, approximate), as the CPU kernel evaluates it.
 * Exact: cdf = 0.5 * (1 + erf(x / sqrt 2)) (4), pdf = k * exp(-0.5 * x*x)
 * (4), grad * (cdf + x * pdf) (3): 11. Tanh: x^2, x^3 (2), inner =
 * b * (x + c * x^3) (3), tanh (6), 0.5 * x, 1 + t, 0.5 * (1 + t) (3),
 * 1 - t*t (2), b * (1 + 3c * x^2) (3), grad * (l' + l * r' * inner') (4):
 * 23. Forward GELU counts 5 and 14 by the same rules. */
int
ts_opf_gelu_backward(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return gelu_cost(call, 2, 11, 23, out, err);
}

/* elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result),
 * the CPU kernel's expression with both branches evaluated: from the input
 * x <= 0 ? grad * c * exp(x * input_scale) : grad * scale (comparison,
 * selection, multiply, exp, two multiplies, multiply: 7); from the result
 * y <= 0 ? grad * input_scale * (y + alpha*scale) : grad * scale (6). */
int
ts_opf_elu_backward(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(
        call, DT_LEAVES, flag_at(call, 4, false) ? 6 : 7, out, err);
}

/* softplus_backward(grad, x, beta, threshold): z = exp(x*beta);
 * x*beta > threshold ? grad : grad * z / (z + 1): multiply, comparison,
 * exp, add, divide, multiply, selection: 7, as softplus itself. */
int
ts_opf_softplus_backward(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err)
{
    return per_output(call, DT_LEAVES, 7, out, err);
}

/* log_sigmoid_backward(grad, x, buffer) with buffer z = exp(-|x|) saved by
 * the forward: (max_deriv - sign * z / (1 + z)) * grad with max_deriv and
 * sign selected by x < 0: comparison, two selections, add, divide,
 * multiply, subtract, multiply: 8. */
int
ts_opf_log_sigmoid_backward(const ts_op_call *call,
                            ts_op_result *out,
                            ts_error *err)
{
    return per_output(call, DT_LEAVES, 8, out, err);
}

/* _prelu_kernel_backward(grad, x, weight) -> (grad_input, grad_weight),
 * per input element: grad or weight * grad (masked selection and multiply,
 * as leaky_relu_backward: 2) and x * grad where x <= 0 (1); the reduction
 * of grad_weight to the weight's shape is a separate sum. */
int
ts_opf_prelu_backward(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    /* The input sets the element count: the outputs are a pair. */
    const ts_shape *x = tensor_at(call, 1);
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_mul(&c, 3, c_numel(&c, x)), out, err);
}

/* hardshrink_backward / softshrink_backward(grad, x, lambd): grad where
 * |x| > lambd, else 0: two bound tests with the selection folded in, as
 * hardtanh_backward. */
int
ts_opf_shrink_backward(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err)
{
    return per_output(call, DT_LEAVES, 2, out, err);
}

/* glu_backward(grad, x, dim), per grad element (half the input): with
 * s = sigmoid(b) (4), da = grad * s (1) and db = grad * a * s * (1 - s)
 * (4): 9. */
int
ts_opf_glu_backward(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 9, out, err);
}

/* sgn / sign: one comparison-selection per element, as relu (complex sgn
 * divides by the magnitude: the real-arithmetic guard rejects it). */
int
ts_opf_sign(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 1, out, err);
}

/* xlogy(x, y) = x == 0 ? 0 : x * log(y), NaN for a NaN y: two tests, log,
 * multiply: 4. Integer inputs promote to floating. */
int
ts_opf_xlogy(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_ALWAYS, 4, out, err);
}

/* amax/amin/argmax/argmin: N - O comparisons (the index bookkeeping of
 * argmax is integer work), as the max/min reductions. */
int
ts_opf_extreme_reduction(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err)
{
    calc c = {false};
    int64_t n = 0, o = 0;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = reduction_sizes(call, &c, &n, &o, err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, max0(c_sub(&c, n, o)), out, err);
}

/* logsumexp over O rows of N elements: max (N - O), subtract (N), exp (N),
 * sum (N - O), log (O), add the max back (O): 4N. */
int
ts_opf_logsumexp(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 4, out, err);
}

/* var (and var_mean, whose mean is the same pass): mean (N - O adds, O
 * divisions), subtract (N), square (N), sum (N - O), divide by the
 * corrected count (O): 4N. std and std_mean add a square root per output:
 * 4N + O. */
static int
variance_formula(const ts_op_call *call,
                 bool root,
                 ts_op_result *out,
                 ts_error *err)
{
    calc c = {false};
    int64_t n = 0, o = 0;
    bool count;
    int rc = supp_begin(call, DT_LEAVES_OR_OUTPUT, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = reduction_sizes(call, &c, &n, &o, err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_add(&c, c_mul(&c, 4, n), root ? o : 0), out, err);
}

int
ts_opf_var(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return variance_formula(call, false, out, err);
}

int
ts_opf_std(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return variance_formula(call, true, out, err);
}
