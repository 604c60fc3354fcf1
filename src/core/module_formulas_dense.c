/* Module formulas of the dense families: Linear, Bilinear, convolutions and
 * the normalizations (BatchNorm, LayerNorm, GroupNorm, RMSNorm,
 * InstanceNorm, LocalResponseNorm). Conventions: contract 2.1 and
 * docs/module-formulas.md. */
#include "module_formulas_internal.h"

/* ---- Linear ------------------------------------------------------------ */

/* Each output is a dot product of in_features terms: in products and in-1
 * additions (never negative for in_features = 0), plus one bias add. */
int64_t
ts_mf_flops_linear(fctx *x, ts_estimate *e)
{
    (void)e;
    int64_t dot = max0(sub(x, mul(x, 2, x->d->in_features), 1));
    return add(x, mul(x, x->o, dot), mul(x, x->o, flag(x->d->has_bias)));
}

/* One multiply-accumulate per weight term and output; the bias rides along
 * in the accumulation. */
int64_t
ts_mf_macs_linear(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->d->in_features, x->o);
}

/* Read the input and every parameter once, write the output. */
int64_t
ts_mf_dmas_linear(fctx *x, ts_estimate *e)
{
    (void)e;
    return SUM(x, x->n, params(x), x->o);
}

/* ---- Bilinear (beyond the reference) ----------------------------------- */

/* y_k = x1^T A_k x2 + b_k, evaluated as t = A_k x2 (in1 dot products of in2
 * terms: in1*(2*in2 - 1)) then x1 . t (2*in1 - 1): 2*in1*in2 + in1 - 1 per
 * output, plus the bias add. */
int64_t
ts_mf_flops_bilinear(fctx *x, ts_estimate *e)
{
    (void)e;
    const ts_module_desc *d = x->d;
    int64_t per_out = max0(sub(
        x,
        add(x, PROD(x, 2, d->in_features, d->in2_features), d->in_features),
        1));
    return mul(x, x->o, add(x, per_out, flag(d->has_bias)));
}

/* One multiply-accumulate per term of A_k x2 (in1*in2) and of x1 . t (in1)
 * per output; the bias rides along. */
int64_t
ts_mf_macs_bilinear(fctx *x, ts_estimate *e)
{
    (void)e;
    const ts_module_desc *d = x->d;
    return mul(
        x,
        x->o,
        add(x, mul(x, d->in_features, d->in2_features), d->in_features));
}

/* Both inputs and every parameter read once, the output written: Linear's
 * N + P + O with the second input. */
int64_t
ts_mf_dmas_bilinear(fctx *x, ts_estimate *e)
{
    (void)e;
    int64_t n2 = 0;
    if (!ts_shape_numel(&x->c->second, &n2)) {
        x->k.overflow = true;
    }
    return SUM(x, x->n, n2, params(x), x->o);
}

/* ---- Conv1d/2d/3d ------------------------------------------------------ */

static int64_t
groups_or_fail(const fctx *x, ts_estimate *e)
{
    if (x->d->groups <= 0) {
        fail(e,
             "ValueError: groups must be positive, got %lld",
             (long long)x->d->groups);
        return 1;
    }
    return x->d->groups;
}

/* Per output: a grouped dot product of (Cin/groups)*prod(k) terms, i.e.
 * 2*terms - 1 operations, plus the bias add. */
int64_t
ts_mf_flops_conv(fctx *x, ts_estimate *e)
{
    int64_t groups = groups_or_fail(x, e);
    int64_t terms = mul(x, x->d->in_channels / groups, ts_mf_kernel_volume(x));
    int64_t per_out = max0(sub(x, mul(x, 2, terms), 1));
    return mul(x, x->o, add(x, per_out, flag(x->d->has_bias)));
}

/* One multiply-accumulate per grouped kernel term and output; the bias rides
 * along in the accumulation. */
int64_t
ts_mf_macs_conv(fctx *x, ts_estimate *e)
{
    int64_t groups = groups_or_fail(x, e);
    return PROD(x, x->o, x->d->in_channels / groups, ts_mf_kernel_volume(x));
}

/* Every output reads its floor(Cin*prod(k)*O/groups) window (the division
 * comes last, as in the reference), plus parameters once and the output
 * write. With Cin = q*g + r and a = r*prod(k) the window is
 * q*prod(k)*O + a*(O/g) + floor(a*(O%g)/g), whose terms stay in int64
 * whenever the result does (a depthwise window's undivided product may
 * not). */
int64_t
ts_mf_dmas_conv(fctx *x, ts_estimate *e)
{
    int64_t groups = groups_or_fail(x, e);
    int64_t cin = x->d->in_channels, volume = ts_mf_kernel_volume(x);
    int64_t a = mul(x, cin % groups, volume);
    int64_t window = SUM(x,
                         PROD(x, cin / groups, volume, x->o),
                         mul(x, a, x->o / groups),
                         mul(x, a, x->o % groups) / groups);
    return SUM(x, window, params(x), x->o);
}

/* Convolutions always carry a dilation. */
void
ts_mf_rf_conv(fctx *x, ts_number trio[3], ts_estimate *e)
{
    (void)e;
    ts_mf_rf_window(x, trio, true);
}

/* ---- ConvTranspose1d/2d/3d --------------------------------------------- */

/* Dense scatter (contract, not v0.2): every input element is multiplied by
 * the (Cout/groups)*prod(k) weights it scatters to and accumulated (2 ops
 * each), then every output gets its bias. Counting from the input avoids the
 * output-based overcount of strided transposed convolutions. */
int64_t
ts_mf_flops_convtranspose(fctx *x, ts_estimate *e)
{
    int64_t groups = groups_or_fail(x, e);
    int64_t scatter =
        PROD(x, 2, x->n, x->d->out_channels / groups, ts_mf_kernel_volume(x));
    return add(x, scatter, mul(x, x->o, flag(x->d->has_bias)));
}

/* Half of the dense scatter: one multiply-accumulate per input element and
 * scattered weight; the bias is not a MAC. */
int64_t
ts_mf_macs_convtranspose(fctx *x, ts_estimate *e)
{
    int64_t groups = groups_or_fail(x, e);
    return PROD(x, x->n, x->d->out_channels / groups, ts_mf_kernel_volume(x));
}

/* The convolution's traffic plus reading stride, padding, kernel size and
 * two more per-axis values that the output-padding computation needs. */
int64_t
ts_mf_dmas_convtranspose(fctx *x, ts_estimate *e)
{
    int64_t conv = ts_mf_dmas_conv(x, e);
    return add(x, mul(x, 5, x->d->rank), conv);
}

/* The reference marks upsampling by a negative window and a fractional
 * stride: (-k, 1/s, 0). MaxUnpool, the inverse of pooling, shares it. */
void
ts_mf_rf_convtranspose(fctx *x, ts_number trio[3], ts_estimate *e)
{
    const ts_module_desc *d = x->d;
    if (d->stride[0] == 0) {
        fail(e, "ZeroDivisionError: float division by zero");
        return;
    }
    trio[0] = ts_int(sub(x, 0, d->kernel[0]));
    trio[1] = ts_mf_ratio(1, d->stride[0]);
    trio[2] = ts_int(0);
}

/* ---- BatchNorm --------------------------------------------------------- */

/* PyTorch normalizes with batch statistics when training, and also in eval
 * when no running statistics exist. */
static bool
bn_uses_batch_stats(const ts_module_desc *d)
{
    return d->training || (!d->has_running_mean && !d->has_running_var);
}

/* Per channel: eps add and sqrt (2C); per element: subtract and divide (2N)
 * and one op per affine tensor (A*N). Batch statistics add mean (N) and
 * variance (3N); tracked training updates the running mean (3C) and the
 * unbiased running variance (5C). An empty batch does no work. `channels`
 * is C for BatchNorm and B*C for InstanceNorm, which PyTorch computes as a
 * batch norm over B*C channels. */
static int64_t
norm_stats_flops(fctx *x, int64_t channels, bool batch_stats)
{
    const ts_module_desc *d = x->d;
    if (x->n == 0) {
        return 0;
    }
    int64_t affine = flag(d->has_weight) + flag(d->has_bias);
    int64_t total =
        SUM(x, mul(x, 2, x->n), mul(x, 2, channels), mul(x, affine, x->n));
    if (batch_stats) {
        total = add(x, total, mul(x, 4, x->n));
    }
    if (d->training && d->track_running_stats) {
        int64_t per_channel =
            3 * flag(d->has_running_mean) + 5 * flag(d->has_running_var);
        total = add(x, total, mul(x, channels, per_channel));
    }
    return total;
}

int64_t
ts_mf_flops_batchnorm(fctx *x, ts_estimate *e)
{
    (void)e;
    return norm_stats_flops(x, x->d->num_features, bn_uses_batch_stats(x->d));
}

/* Normalization is one MAC per element, the affine transform another.
 * Tracked training accumulates the per-channel mean (M-1 per channel, M =
 * elements per channel), the variance (2M-1) and updates both running
 * statistics (4C). */
int64_t
ts_mf_macs_batchnorm(fctx *x, ts_estimate *e)
{
    (void)e;
    const ts_module_desc *d = x->d;
    const ts_shape *in = &x->c->input;
    if (x->n == 0) {
        return 0;
    }
    int64_t affine = flag(d->has_weight || d->has_bias);
    int64_t total = mul(x, x->n, 1 + affine);
    if (d->training && d->track_running_stats) {
        int64_t per_channel = in->ndim > 0 ? in->dims[0] : 1;
        per_channel = mul(x, per_channel, ts_mf_prod_dims(x, in, 2, in->ndim));
        int64_t c = d->num_features;
        total = SUM(x,
                    total,
                    mul(x, c, sub(x, per_channel, 1)),
                    mul(x, c, sub(x, mul(x, 2, per_channel), 1)),
                    mul(x, 4, c));
    }
    return total;
}

/* Input, eps, each running statistic present, the affine pair, the
 * momentum scalar, the training update (batch counter plus both statistics)
 * and the output. */
int64_t
ts_mf_dmas_batchnorm(fctx *x, ts_estimate *e)
{
    (void)e;
    const ts_module_desc *d = x->d;
    int64_t c = d->num_features;
    bool stats = d->has_running_mean && d->has_running_var;
    int64_t total = add(x, x->n, 1);
    if (stats) {
        total = add(x, total, mul(x, 2, c));
    }
    if (d->has_weight && d->has_bias) {
        total = add(x, total, mul(x, 2, c));
    }
    total = add(x, total, flag(!d->momentum_is_none));
    if (d->training && d->track_running_stats && stats) {
        total = add(x, total, add(x, 1, mul(x, 2, c)));
    }
    return add(x, total, x->o);
}

/* ---- LayerNorm and RMSNorm --------------------------------------------- */

/* Rows R = N / prod(normalized_shape); a row without elements has no
 * statistic to compute, so it is refused. */
static int64_t
normalized_rows(fctx *x, ts_estimate *e, const char *name)
{
    if (x->d->normalized_numel <= 0) {
        fail(e,
             "NotImplementedError: %s rows are empty "
             "(normalized_shape has no elements)",
             name);
        return 0;
    }
    return x->n / x->d->normalized_numel;
}

/* Per element: mean and variance passes, subtract, scale (6N); per row:
 * eps add and rsqrt (2R); one op per affine tensor and element. */
int64_t
ts_mf_flops_layernorm(fctx *x, ts_estimate *e)
{
    int64_t rows = normalized_rows(x, e, "LayerNorm");
    int64_t affine = flag(x->d->has_weight) + flag(x->d->has_bias);
    return SUM(x, mul(x, 6, x->n), mul(x, 2, rows), mul(x, affine, x->n));
}

/* Normalization is one MAC per element, the weight scale another (also
 * GroupNorm and RMSNorm, contract). */
int64_t
ts_mf_macs_layernorm(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->n, 1 + flag(x->d->has_weight));
}

int64_t
ts_mf_macs_norm(fctx *x, ts_estimate *e)
{
    return ts_mf_macs_layernorm(x, e);
}

/* Four passes over the input, five per-row statistic accesses, eps,
 * parameters once, plus reading and writing again for the affine step. */
static int64_t
row_norm_dmas(fctx *x, int64_t rows)
{
    int64_t total = SUM(x, mul(x, 4, x->n), mul(x, 5, rows), 1, params(x));
    if (x->d->has_weight) {
        total = add(x, total, mul(x, 2, x->n));
    }
    return total;
}

int64_t
ts_mf_dmas_layernorm(fctx *x, ts_estimate *e)
{
    return row_norm_dmas(x, normalized_rows(x, e, "LayerNorm"));
}

/* RMSNorm skips the mean: square, mean pass, scale (3N), plus one op per
 * element for the weight; eps add and rsqrt per row (2R). Equals the
 * operator convention of rms_norm. */
int64_t
ts_mf_flops_rmsnorm(fctx *x, ts_estimate *e)
{
    int64_t rows = normalized_rows(x, e, "RMSNorm");
    int64_t per_element = 3 + flag(x->d->has_weight);
    return add(x, mul(x, per_element, x->n), mul(x, 2, rows));
}

/* Three passes over the input, four per-row accesses and eps; the weight
 * adds its read-modify-write (2N) and its own elements (P). */
int64_t
ts_mf_dmas_rmsnorm(fctx *x, ts_estimate *e)
{
    int64_t rows = normalized_rows(x, e, "RMSNorm");
    int64_t total = SUM(x, mul(x, 3, x->n), mul(x, 4, rows), 1);
    if (x->d->has_weight) {
        total = SUM(x, total, mul(x, 2, x->n), params(x));
    }
    return total;
}

/* ---- GroupNorm --------------------------------------------------------- */

/* Rows are B * groups; a group without elements has no statistic (refused),
 * an empty batch has no rows. */
static int64_t
group_rows(fctx *x, ts_estimate *e)
{
    const ts_shape *in = &x->c->input;
    if (in->ndim < 2 || x->d->num_groups <= 0) {
        fail(e,
             "ValueError: GroupNorm expects (N, C, *) input and positive "
             "groups");
        return 0;
    }
    int64_t rows = mul(x, in->dims[0], x->d->num_groups);
    if (rows > 0 && x->n / rows == 0) {
        fail(e, "NotImplementedError: GroupNorm groups are empty");
    }
    return rows;
}

/* As LayerNorm per group: (6 + A)N + 2 * B * groups, the operator
 * convention of native_group_norm. */
int64_t
ts_mf_flops_groupnorm(fctx *x, ts_estimate *e)
{
    int64_t rows = group_rows(x, e);
    int64_t affine = flag(x->d->has_weight) + flag(x->d->has_bias);
    return add(x, mul(x, 6 + affine, x->n), mul(x, 2, rows));
}

/* LayerNorm's staged traffic with R = B * groups. */
int64_t
ts_mf_dmas_groupnorm(fctx *x, ts_estimate *e)
{
    return row_norm_dmas(x, group_rows(x, e));
}

/* ---- InstanceNorm (beyond the reference) ------------------------------- */

/* Instances R = B * C (C * 1 unbatched): everything before the module's
 * spatial axes. */
static int64_t
instance_rows(fctx *x)
{
    const ts_shape *in = &x->c->input;
    return ts_mf_prod_dims(x, in, 0, in->ndim - x->d->rank);
}

/* Instance statistics are used in training and whenever no running
 * statistics are tracked (PyTorch's use_input_stats). */
static bool
instance_uses_input_stats(const ts_module_desc *d)
{
    return d->training || !d->track_running_stats;
}

/* PyTorch computes instance norm as a batch norm over B*C channels, so the
 * BatchNorm convention with C := R applies term by term: (6 + A)N + 2R with
 * instance statistics (GroupNorm with one group per channel), 2N + 2R + AN
 * with running statistics. */
int64_t
ts_mf_flops_instancenorm(fctx *x, ts_estimate *e)
{
    (void)e;
    return norm_stats_flops(
        x, instance_rows(x), instance_uses_input_stats(x->d));
}

/* Normalize and (affine) scale: N(1 + W), as GroupNorm and LayerNorm. */
int64_t
ts_mf_macs_instancenorm(fctx *x, ts_estimate *e)
{
    return ts_mf_macs_layernorm(x, e);
}

/* Instance statistics: GroupNorm's staged traffic with R instances.
 * Running statistics: BatchNorm's eval traffic over C channels. */
int64_t
ts_mf_dmas_instancenorm(fctx *x, ts_estimate *e)
{
    if (instance_uses_input_stats(x->d)) {
        return row_norm_dmas(x, instance_rows(x));
    }
    return ts_mf_dmas_batchnorm(x, e);
}

/* ---- LocalResponseNorm (beyond the reference) -------------------------- */

/* b = a / (k + alpha/n * sum_window a^2)^beta, as PyTorch evaluates it:
 * square (N), window average over `size` channels (size per element, the
 * avg_pool of the operator view), scale, shift, power (3N) and the division
 * (N): (size + 5) N. */
int64_t
ts_mf_flops_lrn(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, add(x, x->d->size, 5), x->n);
}

/* One square-and-accumulate per window element and output. */
int64_t
ts_mf_macs_lrn(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->d->size, x->n);
}

/* Each output reads its channel window and its own input, then writes. */
int64_t
ts_mf_dmas_lrn(fctx *x, ts_estimate *e)
{
    (void)e;
    return add(x, mul(x, add(x, x->d->size, 1), x->n), x->o);
}
