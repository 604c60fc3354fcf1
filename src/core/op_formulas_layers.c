/* Layer-level formulas of torchscan_flops_v1: softmax and normalisation
 * (contract 2.2), and their extensions: gradients of those layers, weight
 * normalisation and interpolation (attention and the fused transformer
 * kernels are in op_formulas_attention.c; pooling and its gradients in
 * op_formulas_pooling.c; losses, lookups and the LSTM kernel in
 * op_formulas_losses.c).
 */
#include "op_formulas_internal.h"

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
        rc = row_width(call, x, 1, &width, err);
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

int
ts_opf_softmax(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return softmax_formula(call, DT_LEAVES, 5, 2, 0, out, err);
}

int
ts_opf_log_softmax(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return softmax_formula(call, DT_LEAVES, 4, 1, 0, out, err);
}

/* _safe_softmax: softmax plus a comparison with -inf and a selection per
 * output element (rows that are fully masked give zeros). */
int
ts_opf_safe_softmax(const ts_op_call *call, ts_op_result *out, ts_error *err)
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
int
ts_opf_layer_norm(const ts_op_call *call, ts_op_result *out, ts_error *err)
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
int
ts_opf_group_norm(const ts_op_call *call, ts_op_result *out, ts_error *err)
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
int
ts_opf_rms_norm(const ts_op_call *call, ts_op_result *out, ts_error *err)
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
int
ts_opf_native_batch_norm(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err)
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
int
ts_opf_native_batch_norm_legit(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err)
{
    ts_arg_kind k3 = arg_at(call, 3)->kind;
    if (overload_is(call, "no_stats") || overload_is(call, "no_stats_out")
        || k3 == TS_ARG_BOOL || k3 == TS_ARG_INT) {
        return batch_norm_formula(
            call, false, false, flag_at(call, 3, false), out, err);
    }
    return ts_opf_native_batch_norm(call, out, err);
}

int
ts_opf_native_batch_norm_no_training(const ts_op_call *call,
                                     ts_op_result *out,
                                     ts_error *err)
{
    return batch_norm_formula(
        call, given(arg_at(call, 3)), given(arg_at(call, 4)), false, out, err);
}

/* ==== extensions: layer gradients and interpolation ===================
 * Gradients count the arithmetic of their textbook formula given what the
 * forward saved (values it returned or kept are not recomputed unless the
 * kernel's signature shows that it recomputes them). Scattering a gradient
 * into a zero-filled buffer counts one add per contribution: a shape
 * formula cannot tell a first write from an accumulation. */

/* ---- softmax gradients --------------------------------------------------
 * _softmax_backward_data(grad, y, dim, input_dtype): dx = y * (dy -
 * sum(dy * y)) per row: multiply N, row sums N - R, subtract N, multiply N:
 * 4N - R. _log_softmax_backward_data: dx = dy - exp(y) * sum(dy): row sums
 * N - R, exp, multiply, subtract: 4N - R. */
int
ts_opf_softmax_backward(const ts_op_call *call,
                        ts_op_result *out,
                        ts_error *err)
{
    calc c = {false};
    const ts_shape *g = tensor_at(call, 0);
    int64_t width = 0, n;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(g, "grad_output", err);
    if (rc == TS_OK) {
        rc = row_width(call, g, 2, &width, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    n = c_numel(&c, g);
    return finish(
        &c, width == 0 ? 0 : c_sub(&c, c_mul(&c, 4, n), n / width), out, err);
}

/* The boolean output_mask argument (grad_input, grad_weight, grad_bias). */
static int
output_mask(const ts_op_call *call, int index, bool mask[3], ts_error *err)
{
    const ts_op_arg *m = arg_at(call, index);
    if (m->kind != TS_ARG_INTS || m->nints < 3) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The formula needs output_mask as a list of "
                            "three booleans.");
    }
    for (int i = 0; i < 3; i++) {
        mask[i] = m->ints[i] != 0;
    }
    return TS_OK;
}

/* Batch norm backward, with x^ = (x - mean) * invstd over N elements in C
 * channels (M = N/C each) and mask = (grad_input, grad_weight, grad_bias):
 *  - x^ (2N) and sum(dy * x^) (2N - C) when grad_weight is wanted or
 *    training grad_input needs them; sum(dy) (N - C) for grad_bias or
 *    training grad_input;
 *  - training grad_input: w*invstd*(dy - sum(dy)/M - x^*sum(dy x^)/M):
 *    4N, plus 2C for the two means and C for w*invstd with a weight;
 *  - evaluation grad_input: dy * w * invstd, N, plus 3C for invstd =
 *    1/sqrt(running_var + eps) and C for the weight product. */
static int
batch_norm_backward_formula(const ts_shape *x,
                            bool train,
                            const bool mask[3],
                            bool weighted,
                            ts_op_result *out,
                            ts_error *err)
{
    calc c = {false};
    bool xhat, sum_dy;
    int64_t n, ch, flops = 0;
    if (x == NULL || x->ndim < 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "BatchNorm FLOPs need an input with a channel "
                            "dimension.");
    }
    n = c_numel(&c, x);
    ch = x->dims[1];
    if (n == 0) {
        return finish(&c, 0, out, err);
    }
    xhat = mask[1] || (train && mask[0]);
    sum_dy = mask[2] || (train && mask[0]);
    if (xhat) {
        flops =
            c_add(&c, c_mul(&c, 2, n), max0(c_sub(&c, c_mul(&c, 2, n), ch)));
    }
    if (sum_dy) {
        flops = c_add(&c, flops, max0(c_sub(&c, n, ch)));
    }
    if (mask[0]) {
        int64_t per_channel = (train ? 2 : 3) + (weighted ? 1 : 0);
        flops = c_add(&c, flops, c_mul(&c, train ? 4 : 1, n));
        flops = c_add(&c, flops, c_mul(&c, per_channel, ch));
    }
    return finish(&c, flops, out, err);
}

/* native_batch_norm_backward(grad_out, input, weight, running_mean,
 * running_var, save_mean, save_invstd, train, eps, output_mask). */
int
ts_opf_batch_norm_backward(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    bool mask[3] = {false, false, false}, count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = output_mask(call, 9, mask, err);
    if (rc != TS_OK) {
        return rc;
    }
    return batch_norm_backward_formula(tensor_at(call, 1),
                                       flag_at(call, 7, false),
                                       mask,
                                       given(arg_at(call, 2)),
                                       out,
                                       err);
}

/* cudnn_batch_norm_backward(input, grad_output, weight, running_mean,
 * running_var, save_mean, save_var, epsilon, reserveSpace) and
 * miopen_batch_norm_backward (the same without reserveSpace) follow a
 * training forward only (PyTorch's autograd uses native_batch_norm_backward
 * after an evaluation one) and return all three gradients, so they count as
 * native_batch_norm_backward with train and output_mask (1, 1, 1). */
int
ts_opf_vendor_batch_norm_backward(const ts_op_call *call,
                                  ts_op_result *out,
                                  ts_error *err)
{
    static const bool all[3] = {true, true, true};
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    return batch_norm_backward_formula(
        tensor_at(call, 0), true, all, given(arg_at(call, 2)), out, err);
}

/* native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd,
 * weight, bias, output_mask), N elements in R rows of width W:
 *  - x^ = (x - mean) * rstd: 2N for grad_input or grad_weight;
 *  - grad_input: dy^ = dy * w (N with a weight), row sums of dy^ (N - R)
 *    and of dy^ * x^ (2N - R), their means (2R), then
 *    rstd * (dy^ - mean(dy^) - x^ * mean(dy^ x^)) (4N): (7 + [weight])N,
 *    the row terms cancelling;
 *  - grad_weight: column sums of dy * x^ over the R rows (2N - W);
 *  - grad_bias: column sums of dy (N - W). */
int
ts_opf_layer_norm_backward(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 1);
    const ts_op_arg *ns = arg_at(call, 2);
    bool mask[3] = {false, false, false}, count;
    bool weighted = given(arg_at(call, 5));
    int64_t n, row, flops = 0;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = output_mask(call, 7, mask, err);
    }
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
    if (mask[0] || mask[1]) {
        flops = c_mul(&c, 2, n);
    }
    if (mask[0]) {
        flops = c_add(&c, flops, c_mul(&c, 7 + (weighted ? 1 : 0), n));
    }
    if (mask[1]) {
        flops = c_add(&c, flops, max0(c_sub(&c, c_mul(&c, 2, n), row)));
    }
    if (mask[2]) {
        flops = c_add(&c, flops, max0(c_sub(&c, n, row)));
    }
    return finish(&c, flops, out, err);
}

/* ---- interpolation -------------------------------------------------------
 * Source indices and interpolation weights depend on the output row or
 * column only (integer index work and O(H + W) weights), so only the
 * per-element arithmetic of the CPU kernel counts. Linear interpolation
 * blends 2^rank taps separably: 1-D w0*x0 + w1*x1 (3), 2-D
 * h0*(w0*a + w1*b) + h1*(w0*c + w1*d) (9), 3-D two such planes blended
 * (21). The gradient hands each grad_output element to the 2^rank taps,
 * each with its weight product (rank multiplies) and an add: 2^rank *
 * (rank + 1), i.e. 4, 12, 32. */
int
ts_opf_upsample_linear1d(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err)
{
    return per_output(call, DT_LEAVES, 3, out, err);
}

int
ts_opf_upsample_bilinear2d(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    return per_output(call, DT_LEAVES, 9, out, err);
}

int
ts_opf_upsample_trilinear3d(const ts_op_call *call,
                            ts_op_result *out,
                            ts_error *err)
{
    return per_output(call, DT_LEAVES, 21, out, err);
}

int
ts_opf_upsample_linear1d_backward(const ts_op_call *call,
                                  ts_op_result *out,
                                  ts_error *err)
{
    return per_input(call, 4, out, err);
}

int
ts_opf_upsample_bilinear2d_backward(const ts_op_call *call,
                                    ts_op_result *out,
                                    ts_error *err)
{
    return per_input(call, 12, out, err);
}

int
ts_opf_upsample_trilinear3d_backward(const ts_op_call *call,
                                     ts_op_result *out,
                                     ts_error *err)
{
    return per_input(call, 32, out, err);
}

/* Nearest upsampling copies the source element (a lookup, see
 * ts_opf_lookup); its gradient sums the grad_output elements that share a
 * source: grad_output elements - grad_input elements adds. */
int
ts_opf_upsample_nearest_backward(const ts_op_call *call,
                                 ts_op_result *out,
                                 ts_error *err)
{
    calc c = {false};
    const ts_shape *g = tensor_at(call, 0);
    const ts_shape *y;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(g, "grad_output", err);
    if (rc == TS_OK) {
        rc = need_output(call, &y, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return finish(
        &c, max0(c_sub(&c, c_numel(&c, g), c_numel(&c, y))), out, err);
}

/* native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C,
 * HxW, group, output_mask), N elements in R = batch*group rows, C channels:
 * as native_layer_norm_backward with the per-channel weight: x^ (2N) for
 * grad_input or grad_weight; grad_input (7 + [weight])N; grad_weight sums
 * dy * x^ per channel over batch and space (2N - C); grad_bias sums dy
 * (N - C). */
int
ts_opf_group_norm_backward(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 1);
    bool mask[3] = {false, false, false}, count;
    bool weighted = given(arg_at(call, 4));
    int64_t n, channels = 0, flops = 0;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = count_at(call, 6, "C", &channels, err);
    }
    if (rc == TS_OK) {
        rc = output_mask(call, 9, mask, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    n = c_numel(&c, x);
    if (mask[0] || mask[1]) {
        flops = c_mul(&c, 2, n);
    }
    if (mask[0]) {
        flops = c_add(&c, flops, c_mul(&c, 7 + (weighted ? 1 : 0), n));
    }
    if (mask[1]) {
        flops = c_add(&c, flops, max0(c_sub(&c, c_mul(&c, 2, n), channels)));
    }
    if (mask[2]) {
        flops = c_add(&c, flops, max0(c_sub(&c, n, channels)));
    }
    return finish(&c, flops, out, err);
}

/* ---- weight normalisation ----------------------------------------------
 * _weight_norm_interface(v, g, dim) -> (w, norms), w = g * v / ||v||, the
 * norm taken over every dimension of v but `dim` (dim = -1: over the whole
 * tensor, one norm), R norms of N/R elements each. As torch's decomposition
 * (v * (g / norm)) and the CPU kernel compute it: the 2-norms as aten.norm
 * counts them (N squares, N - R adds, R square roots: 2N), g / norm (R),
 * the product with v (N): 3N + R. */
static int
weight_norm_rows(const ts_op_call *call,
                 const ts_shape *v,
                 int dim_index,
                 int64_t *rows,
                 ts_error *err)
{
    const ts_op_arg *d = arg_at(call, dim_index);
    int64_t dim = 0;
    if (given(d)) {
        if (d->kind != TS_ARG_INT) {
            return ts_error_set(
                err, TS_EUNSUPPORTED, "The dim argument must be an int.");
        }
        dim = d->i;
    }
    if (dim == -1 || v->ndim == 0) {
        *rows = 1;
        return TS_OK;
    }
    if (dim < 0 || dim >= v->ndim) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "dim %lld is out of range for a %d-D weight "
                            "(weight norm takes 0..%d, or -1 for the whole "
                            "tensor).",
                            (long long)dim,
                            v->ndim,
                            v->ndim - 1);
    }
    *rows = v->dims[dim];
    return TS_OK;
}

int
ts_opf_weight_norm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *v = tensor_at(call, 0);
    int64_t rows = 0, n;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(v, "v", err);
    if (rc == TS_OK) {
        rc = weight_norm_rows(call, v, 2, &rows, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    n = c_numel(&c, v);
    if (n == 0) {
        return finish(&c, 0, out, err);
    }
    return finish(&c, c_add(&c, c_mul(&c, 3, n), rows), out, err);
}

/* _weight_norm_interface_backward(grad_w, saved_v, saved_g, saved_norms,
 * dim) -> (grad_v, grad_g), as the CPU kernel computes them per norm row:
 * s = sum(grad_w * v) (2N - R), grad_g = s / norm (R), a = g / norm (R),
 * b = a * grad_g / norm (2R), grad_v = a * grad_w - b * v (3N):
 * 5N + 3R. */
int
ts_opf_weight_norm_backward(const ts_op_call *call,
                            ts_op_result *out,
                            ts_error *err)
{
    calc c = {false};
    const ts_shape *v = tensor_at(call, 1);
    int64_t rows = 0, n;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(v, "saved_v", err);
    if (rc == TS_OK) {
        rc = weight_norm_rows(call, v, 4, &rows, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    n = c_numel(&c, v);
    if (n == 0) {
        return finish(&c, 0, out, err);
    }
    return finish(
        &c, c_add(&c, c_mul(&c, 5, n), c_mul(&c, 3, rows)), out, err);
}
