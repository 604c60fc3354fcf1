/* Module formulas: FLOPs, MACs, DMAs and receptive field of one module call.
 *
 * Every family is one row of `families` (indexed by ts_module_kind) holding
 * small formula functions; a NULL slot means "no formula" and yields the
 * reference's "Module type not supported" outcome. Counting conventions are
 * those of contract section 2.1 and are tabulated in docs/module-formulas.md.
 *
 * All arithmetic goes through checked helpers that set a sticky overflow
 * flag: Python integers never overflow, so an int64 overflow here must
 * surface as an error rather than as a wrong count.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "torchscan/module_formulas.h"

/* ---- call context and checked arithmetic ------------------------------- */

typedef struct fctx {
    const ts_module_desc *d;
    const ts_module_call *c;
    int64_t n;     /* input elements (N) */
    int64_t o;     /* output elements (O) */
    bool overflow; /* sticky: a checked operation overflowed */
} fctx;

/* mul/add/sub return 0 and set x->overflow instead of wrapping; the
 * dispatcher turns a set flag into one OverflowError for the metric. */
static int64_t
mul(fctx *x, int64_t a, int64_t b)
{
    int64_t r;
    if (!ts_mul(a, b, &r)) {
        x->overflow = true;
        return 0;
    }
    return r;
}

static int64_t
add(fctx *x, int64_t a, int64_t b)
{
    int64_t r;
    if (!ts_add(a, b, &r)) {
        x->overflow = true;
        return 0;
    }
    return r;
}

static int64_t
sub(fctx *x, int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) {
        x->overflow = true;
        return 0;
    }
    return r;
}

static int64_t
sum_terms(fctx *x, const int64_t *terms, size_t count)
{
    int64_t total = 0;
    for (size_t i = 0; i < count; i++) {
        total = add(x, total, terms[i]);
    }
    return total;
}

static int64_t
prod_terms(fctx *x, const int64_t *terms, size_t count)
{
    int64_t total = 1;
    for (size_t i = 0; i < count; i++) {
        total = mul(x, total, terms[i]);
    }
    return total;
}

/* SUM(x, a, b, ...) and PROD(x, a, b, ...): checked n-ary sum and product.
 * sizeof does not evaluate its operand, so each term is evaluated once. */
#define TERMS_(...) ((const int64_t[]){__VA_ARGS__})
#define COUNT_(...) (sizeof TERMS_(__VA_ARGS__) / sizeof(int64_t))
#define SUM(x, ...) sum_terms((x), TERMS_(__VA_ARGS__), COUNT_(__VA_ARGS__))
#define PROD(x, ...) prod_terms((x), TERMS_(__VA_ARGS__), COUNT_(__VA_ARGS__))

static int64_t
flag(bool b)
{
    return b ? 1 : 0;
}

static int64_t
max0(int64_t v)
{
    return v > 0 ? v : 0;
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

/* Formats "<ExceptionType>: <text>", the shape of module_metric_error
 * messages, into an estimate. */
static void fail(ts_estimate *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void
fail(ts_estimate *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    e->kind = TS_EST_ERROR;
    e->value = ts_int(0);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

/* A ratio as the reference's true division gives it: exact integers stay
 * integers, anything else is the real quotient. */
static ts_number
ratio(int64_t num, int64_t den)
{
    if (num % den == 0) {
        return ts_int(num / den);
    }
    return ts_real((double)num / (double)den);
}

/* ---- shared geometry --------------------------------------------------- */

/* Nominal kernel volume K: an int kernel stands for k in every spatial
 * axis (k^rank), as PyTorch expands it, whatever the tensor's batching. */
static int64_t
kernel_volume(fctx *x)
{
    const ts_module_desc *d = x->d;
    int64_t k = 1;
    for (int i = 0; i < d->rank; i++) {
        k = mul(x, k, d->kernel_is_int ? d->kernel[0] : d->kernel[i]);
    }
    return k;
}

/* Parameter elements P, as module.parameters() yields them: the binding
 * reads them so that parametrized or subclassed weights count as stored. */
static int64_t
params(const fctx *x)
{
    return x->d->param_numel;
}

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

/* Exact adaptive-pooling visits: PyTorch's window i spans
 * [floor(iL/O), ceil((i+1)L/O)), and these lengths sum to L + O - gcd(L, O)
 * per axis; axes multiply, and every leading (batch, channel) slice repeats
 * the pattern. */
static int64_t
adaptive_visits(fctx *x, ts_estimate *e)
{
    const ts_shape *in = &x->c->input;
    const ts_shape *out = &x->c->output;
    int rank = x->d->rank;
    if (in->ndim < rank || out->ndim != in->ndim) {
        fail(e,
             "ValueError: adaptive pooling expects input and output of equal "
             "rank with %d spatial axes",
             rank);
        return 0;
    }
    int lead = out->ndim - rank;
    int64_t visits = 1;
    for (int i = 0; i < lead; i++) {
        visits = mul(x, visits, out->dims[i]);
    }
    for (int i = lead; i < out->ndim; i++) {
        int64_t len = in->dims[i];
        int64_t outs = out->dims[i];
        int64_t axis = sub(x, add(x, len, outs), gcd64(len, outs));
        visits = mul(x, visits, axis);
    }
    return visits;
}

/* ---- counts shared by several families --------------------------------- */

/* Data movement and layout modules do no arithmetic; activations and dropout
 * do no multiply-accumulate. */
static int64_t
count_zero(fctx *x, ts_estimate *e)
{
    (void)x;
    (void)e;
    return 0;
}

/* ---- Identity, Flatten ------------------------------------------------- */

/* Identity hands its input back: the only traffic is reading it once. */
static int64_t
dmas_identity(fctx *x, ts_estimate *e)
{
    (void)e;
    return x->n;
}

/* Flatten is counted as a copy: read every element and write it again. */
static int64_t
dmas_flatten(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, 2, x->n);
}

/* ---- pointwise activations (ReLU, ELU, LeakyReLU, ReLU6, Tanh, Sigmoid) */

/* Per-element costs live in the family table (see `families`), so the
 * activations share two functions and differ only by data. */
static int64_t flops_pointwise(fctx *x, ts_estimate *e);
static int64_t dmas_pointwise(fctx *x, ts_estimate *e);

/* ---- Linear ------------------------------------------------------------ */

/* Each output is a dot product of in_features terms: in products and in-1
 * additions (never negative for in_features = 0), plus one bias add. */
static int64_t
flops_linear(fctx *x, ts_estimate *e)
{
    (void)e;
    int64_t dot = max0(sub(x, mul(x, 2, x->d->in_features), 1));
    return add(x, mul(x, x->o, dot), mul(x, x->o, flag(x->d->has_bias)));
}

/* One multiply-accumulate per weight term and output; the bias rides along
 * in the accumulation. */
static int64_t
macs_linear(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->d->in_features, x->o);
}

/* Read the input and every parameter once, write the output. */
static int64_t
dmas_linear(fctx *x, ts_estimate *e)
{
    (void)e;
    return SUM(x, x->n, params(x), x->o);
}

/* ---- Conv1d/2d/3d ------------------------------------------------------ */

/* Per output: a grouped dot product of (Cin/groups)*prod(k) terms, i.e.
 * 2*terms - 1 operations, plus the bias add. */
static int64_t
flops_conv(fctx *x, ts_estimate *e)
{
    int64_t groups = groups_or_fail(x, e);
    int64_t terms = mul(x, x->d->in_channels / groups, kernel_volume(x));
    int64_t per_out = max0(sub(x, mul(x, 2, terms), 1));
    return mul(x, x->o, add(x, per_out, flag(x->d->has_bias)));
}

/* One multiply-accumulate per grouped kernel term and output; the bias rides
 * along in the accumulation. */
static int64_t
macs_conv(fctx *x, ts_estimate *e)
{
    int64_t groups = groups_or_fail(x, e);
    return PROD(x, x->o, x->d->in_channels / groups, kernel_volume(x));
}

/* Every output reads its Cin*prod(k)/groups window (the division comes last,
 * as in the reference), plus parameters once and the output write. */
static int64_t
dmas_conv(fctx *x, ts_estimate *e)
{
    int64_t groups = groups_or_fail(x, e);
    int64_t window = PROD(x, x->d->in_channels, kernel_volume(x), x->o);
    return SUM(x, window / groups, params(x), x->o);
}

/* ---- ConvTranspose1d/2d/3d --------------------------------------------- */

/* Dense scatter (contract, not v0.2): every input element is multiplied by
 * the (Cout/groups)*prod(k) weights it scatters to and accumulated (2 ops
 * each), then every output gets its bias. Counting from the input avoids the
 * output-based overcount of strided transposed convolutions. */
static int64_t
flops_convtranspose(fctx *x, ts_estimate *e)
{
    int64_t groups = groups_or_fail(x, e);
    int64_t scatter =
        PROD(x, 2, x->n, x->d->out_channels / groups, kernel_volume(x));
    return add(x, scatter, mul(x, x->o, flag(x->d->has_bias)));
}

/* Half of the dense scatter: one multiply-accumulate per input element and
 * scattered weight; the bias is not a MAC. */
static int64_t
macs_convtranspose(fctx *x, ts_estimate *e)
{
    int64_t groups = groups_or_fail(x, e);
    return PROD(x, x->n, x->d->out_channels / groups, kernel_volume(x));
}

/* The convolution's traffic plus reading stride, padding, kernel size and
 * two more per-axis values that the output-padding computation needs. */
static int64_t
dmas_convtranspose(fctx *x, ts_estimate *e)
{
    int64_t conv = dmas_conv(x, e);
    return add(x, mul(x, 5, x->d->rank), conv);
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
 * unbiased running variance (5C). An empty batch does no work. */
static int64_t
flops_batchnorm(fctx *x, ts_estimate *e)
{
    (void)e;
    const ts_module_desc *d = x->d;
    if (x->n == 0) {
        return 0;
    }
    int64_t affine = flag(d->has_weight) + flag(d->has_bias);
    int64_t total = SUM(
        x, mul(x, 2, x->n), mul(x, 2, d->num_features), mul(x, affine, x->n));
    if (bn_uses_batch_stats(d)) {
        total = add(x, total, mul(x, 4, x->n));
    }
    if (d->training && d->track_running_stats) {
        int64_t per_channel =
            3 * flag(d->has_running_mean) + 5 * flag(d->has_running_var);
        total = add(x, total, mul(x, d->num_features, per_channel));
    }
    return total;
}

/* Normalization is one MAC per element, the affine transform another.
 * Tracked training accumulates the per-channel mean (M-1 per channel, M =
 * elements per channel), the variance (2M-1) and updates both running
 * statistics (4C). */
static int64_t
macs_batchnorm(fctx *x, ts_estimate *e)
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
        for (int i = 2; i < in->ndim; i++) {
            per_channel = mul(x, per_channel, in->dims[i]);
        }
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
static int64_t
dmas_batchnorm(fctx *x, ts_estimate *e)
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

/* ---- MaxPool / AvgPool ------------------------------------------------- */

/* A max over K values takes K-1 comparisons per output. */
static int64_t
flops_maxpool(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->o, sub(x, kernel_volume(x), 1));
}

/* Read K values, write the output and, when requested, its index. */
static int64_t
dmas_maxpool(fctx *x, ts_estimate *e)
{
    (void)e;
    int64_t per_out = SUM(x, kernel_volume(x), 1, flag(x->d->return_indices));
    return mul(x, x->o, per_out);
}

/* K-1 additions and one division per output. */
static int64_t
flops_avgpool(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->o, kernel_volume(x));
}

/* K-1 accumulations plus one per spatial axis for the divisor, which is a
 * product over the axes. */
static int64_t
macs_avgpool(fctx *x, ts_estimate *e)
{
    (void)e;
    int64_t per_out = add(x, sub(x, kernel_volume(x), 1), x->d->rank);
    return mul(x, x->o, per_out);
}

/* Read K values and write the output; average pooling returns no indices. */
static int64_t
dmas_avgpool(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->o, add(x, kernel_volume(x), 1));
}

/* ---- adaptive pooling (exact windows, contract; v0.2 approximated) ----- */

/* Each output compares its window's values once less than their count. */
static int64_t
flops_adaptive_max(fctx *x, ts_estimate *e)
{
    return sub(x, adaptive_visits(x, e), x->o);
}

/* Each visited value is added, then each output divided once. */
static int64_t
flops_adaptive_avg(fctx *x, ts_estimate *e)
{
    return adaptive_visits(x, e);
}

/* As fixed average pooling: the divisor costs one step per extra axis. */
static int64_t
macs_adaptive_avg(fctx *x, ts_estimate *e)
{
    int64_t visits = adaptive_visits(x, e);
    return add(x, visits, mul(x, x->o, x->d->rank - 1));
}

/* Read every visited value, write each output and its index if returned. */
static int64_t
dmas_adaptive(fctx *x, ts_estimate *e)
{
    int64_t visits = adaptive_visits(x, e);
    int64_t writes = mul(x, x->o, 1 + flag(x->d->return_indices));
    return add(x, visits, writes);
}

/* ---- Dropout ----------------------------------------------------------- */

/* Eval (and p = 0) is the identity. Training samples a mask and scales each
 * kept value (2N); p = 1 only fills zeros (N). */
static int64_t
flops_dropout(fctx *x, ts_estimate *e)
{
    (void)e;
    if (!x->d->training || x->d->p <= 0.0) {
        return 0;
    }
    return x->d->p >= 1.0 ? x->n : mul(x, 2, x->n);
}

/* ---- LayerNorm --------------------------------------------------------- */

/* Rows R = N / prod(normalized_shape); a row without elements has no
 * statistic to compute, so it is refused. */
static int64_t
layernorm_rows(fctx *x, ts_estimate *e)
{
    if (x->d->normalized_numel <= 0) {
        fail(e,
             "NotImplementedError: LayerNorm rows are empty "
             "(normalized_shape has no elements)");
        return 0;
    }
    return x->n / x->d->normalized_numel;
}

/* Per element: mean and variance passes, subtract, scale (6N); per row:
 * eps add and rsqrt (2R); one op per affine tensor and element. */
static int64_t
flops_layernorm(fctx *x, ts_estimate *e)
{
    int64_t rows = layernorm_rows(x, e);
    int64_t affine = flag(x->d->has_weight) + flag(x->d->has_bias);
    return SUM(x, mul(x, 6, x->n), mul(x, 2, rows), mul(x, affine, x->n));
}

/* Normalization is one MAC per element, the weight scale another. */
static int64_t
macs_layernorm(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->n, 1 + flag(x->d->has_weight));
}

/* Four passes over the input, five per-row statistic accesses, eps,
 * parameters once, plus reading and writing again for the affine step. */
static int64_t
dmas_layernorm(fctx *x, ts_estimate *e)
{
    int64_t rows = layernorm_rows(x, e);
    int64_t total = SUM(x, mul(x, 4, x->n), mul(x, 5, rows), 1, params(x));
    if (x->d->has_weight) {
        total = add(x, total, mul(x, 2, x->n));
    }
    return total;
}

/* ---- MultiheadAttention ------------------------------------------------ */

static bool
shape_empty(const ts_shape *s)
{
    for (int i = 0; i < s->ndim; i++) {
        if (s->dims[i] == 0) {
            return true;
        }
    }
    return false;
}

typedef struct mha_geom {
    int64_t b, t, s; /* batch, target length, source length */
    int64_t e, h, d; /* embed dim, heads, head dim */
    int64_t kw, vw;  /* key and value widths (kdim, vdim) */
} mha_geom;

/* Reads the batched (B, L, E) or (L, B, E) geometry. The formulas do not
 * model unbatched calls, learned bias_k/bias_v or zero-attention columns;
 * MACs and DMAs also refuse empty calls. */
static bool
mha_geometry(fctx *x, ts_estimate *e, bool need_nonempty, mha_geom *g)
{
    const ts_module_desc *d = x->d;
    const ts_module_call *c = x->c;
    if (c->input.ndim != 3 || c->key.ndim != 3 || c->value.ndim != 3) {
        fail(e,
             "NotImplementedError: MultiheadAttention estimates need batched "
             "3-D query, key and value");
        return false;
    }
    if (d->add_bias_kv || d->add_zero_attn) {
        fail(e,
             "NotImplementedError: MultiheadAttention estimates do not model "
             "add_bias_kv or add_zero_attn");
        return false;
    }
    if (d->num_heads <= 0 || d->embed_dim % d->num_heads != 0) {
        fail(e,
             "ValueError: embed_dim %lld is not divisible by num_heads %lld",
             (long long)d->embed_dim,
             (long long)d->num_heads);
        return false;
    }
    if (need_nonempty
        && (x->n == 0 || shape_empty(&c->key) || shape_empty(&c->value))) {
        fail(e,
             "NotImplementedError: MultiheadAttention MACs and DMAs need "
             "non-empty inputs");
        return false;
    }
    int bdim = d->batch_first ? 0 : 1;
    int ldim = d->batch_first ? 1 : 0;
    g->b = c->input.dims[bdim];
    g->t = c->input.dims[ldim];
    g->s = c->key.dims[ldim];
    g->e = d->embed_dim;
    g->h = d->num_heads;
    g->d = d->embed_dim / d->num_heads;
    g->kw = c->key.dims[2];
    g->vw = c->value.dims[2];
    return true;
}

/* One input projection: rows * E outputs, each a dot product of `width`
 * terms plus the in-projection bias. */
static int64_t
mha_projection(fctx *x, const ts_shape *t)
{
    int64_t rows = mul(x, t->dims[0], t->dims[1]);
    int64_t dot = max0(sub(x, mul(x, 2, t->dims[2]), 1));
    int64_t per_out = add(x, dot, flag(x->d->has_in_proj_bias));
    return PROD(x, rows, x->d->embed_dim, per_out);
}

/* Projections, query scaling (one multiply per query element, no separate
 * rsqrt: contract), QK^T, one op per score per mask, softmax at the
 * operator convention 5S-2 per row (contract; v0.2 used 3S-1), training
 * dropout as nn.Dropout counts it, weights times V, the output projection,
 * and the head average when averaged weights are returned. */
static int64_t
flops_mha(fctx *x, ts_estimate *e)
{
    const ts_module_desc *d = x->d;
    const ts_module_call *c = x->c;
    mha_geom g;
    if (!mha_geometry(x, e, false, &g)) {
        return 0;
    }
    int64_t rows = PROD(x, g.b, g.h, g.t);
    int64_t scores = mul(x, rows, g.s);
    int64_t masks = flag(c->has_key_padding_mask) + flag(c->has_attn_mask);
    int64_t q_rows = mul(x, g.b, g.t);
    int64_t out_dot = max0(sub(x, mul(x, 2, g.e), 1));
    int64_t out_proj =
        PROD(x, q_rows, g.e, add(x, out_dot, flag(d->has_out_proj_bias)));
    int64_t dropout = 0;
    if (d->training && d->attn_dropout > 0.0) {
        dropout = d->attn_dropout >= 1.0 ? scores : mul(x, 2, scores);
    }
    int64_t averaged =
        c->has_weights_output && c->weights_ndim == 3 ? scores : 0;
    return SUM(x,
               mha_projection(x, &c->input),
               mha_projection(x, &c->key),
               mha_projection(x, &c->value),
               mul(x, rows, g.d),
               mul(x, scores, sub(x, mul(x, 2, g.d), 1)),
               mul(x, masks, scores),
               mul(x, rows, sub(x, mul(x, 5, g.s), 2)),
               dropout,
               PROD(x, rows, g.d, sub(x, mul(x, 2, g.s), 1)),
               out_proj,
               averaged);
}

/* Query and output projections (B*T*E^2 each), key and value projections
 * (B*S*E*kdim, B*S*E*vdim), QK^T and weights times V (B*T*S*E each). */
static int64_t
macs_mha(fctx *x, ts_estimate *e)
{
    mha_geom g;
    if (!mha_geometry(x, e, true, &g)) {
        return 0;
    }
    return SUM(x,
               PROD(x, 2, g.b, g.t, g.e, g.e),
               PROD(x, g.b, g.s, g.e, add(x, g.kw, g.vw)),
               PROD(x, 2, g.b, g.t, g.s, g.e));
}

/* Staged logical traffic: the three inputs I, parameters P, the query-side
 * tensors (7Q, Q = B*T*E), the projected key/value side (4J, J = B*S*E),
 * the scores (10A, A = B*H*T*S) and softmax rows (4R, R = B*H*T); each mask
 * is read and applied (numel + 2A); averaged weights read A and write
 * B*T*S. */
static int64_t
dmas_mha(fctx *x, ts_estimate *e)
{
    const ts_module_call *c = x->c;
    mha_geom g;
    if (!mha_geometry(x, e, true, &g)) {
        return 0;
    }
    int64_t in_k = 0;
    int64_t in_v = 0;
    if (!ts_shape_numel(&c->key, &in_k) || !ts_shape_numel(&c->value, &in_v)) {
        x->overflow = true;
    }
    int64_t q = PROD(x, g.b, g.t, g.e);
    int64_t j = PROD(x, g.b, g.s, g.e);
    int64_t rows = PROD(x, g.b, g.h, g.t);
    int64_t a = mul(x, rows, g.s);
    int64_t total = SUM(x,
                        x->n,
                        in_k,
                        in_v,
                        params(x),
                        mul(x, 7, q),
                        mul(x, 4, j),
                        mul(x, 10, a),
                        mul(x, 4, rows));
    if (c->has_key_padding_mask) {
        total = SUM(x, total, c->key_padding_mask_numel, mul(x, 2, a));
    }
    if (c->has_attn_mask) {
        total = SUM(x, total, c->attn_mask_numel, mul(x, 2, a));
    }
    if (c->has_weights_output && c->weights_ndim == 3) {
        total = SUM(x, total, a, PROD(x, g.b, g.t, g.s));
    }
    return total;
}

/* ---- receptive field --------------------------------------------------- */

typedef void (*rf_fn)(fctx *x, ts_number trio[3], ts_estimate *e);

/* Elementwise and dense-per-position modules see one position, keep the
 * grid and add no padding. */
static void
rf_pointwise(fctx *x, ts_number trio[3], ts_estimate *e)
{
    (void)x;
    (void)e;
    trio[0] = ts_int(1);
    trio[1] = ts_int(1);
    trio[2] = ts_int(0);
}

/* Window d*(k-1)+1, stride and padding of the first spatial axis (the
 * reference's sequential-path convention). */
static void
rf_window(fctx *x, ts_number trio[3], bool dilated)
{
    const ts_module_desc *d = x->d;
    int64_t k = d->kernel[0];
    if (dilated) {
        k = add(x, mul(x, d->dilation[0], sub(x, k, 1)), 1);
    }
    trio[0] = ts_int(k);
    trio[1] = ts_int(d->stride[0]);
    trio[2] = ts_int(d->padding[0]);
}

/* Convolutions always carry a dilation. */
static void
rf_conv(fctx *x, ts_number trio[3], ts_estimate *e)
{
    (void)e;
    rf_window(x, trio, true);
}

/* Max pooling carries a dilation, average pooling has none: the window
 * widens only where the module has the attribute, as in the reference. */
static void
rf_pool(fctx *x, ts_number trio[3], ts_estimate *e)
{
    (void)e;
    rf_window(x, trio, x->d->has_dilation);
}

/* The reference marks upsampling by a negative window and a fractional
 * stride: (-k, 1/s, 0). */
static void
rf_convtranspose(fctx *x, ts_number trio[3], ts_estimate *e)
{
    const ts_module_desc *d = x->d;
    if (d->stride[0] == 0) {
        fail(e, "ZeroDivisionError: float division by zero");
        return;
    }
    trio[0] = ts_int(sub(x, 0, d->kernel[0]));
    trio[1] = ratio(1, d->stride[0]);
    trio[2] = ts_int(0);
}

/* Legacy approximation kept by the contract: stride = ceil(L/O) on the last
 * axis, window = stride, padding = (L - k*s)/2 (possibly fractional or
 * negative). */
static void
rf_adaptive(fctx *x, ts_number trio[3], ts_estimate *e)
{
    const ts_shape *in = &x->c->input;
    const ts_shape *out = &x->c->output;
    if (in->ndim == 0 || out->ndim == 0) {
        fail(e, "IndexError: adaptive pooling needs a last axis");
        return;
    }
    int64_t len = in->dims[in->ndim - 1];
    int64_t outs = out->dims[out->ndim - 1];
    if (outs == 0) {
        fail(e, "ZeroDivisionError: division by zero");
        return;
    }
    int64_t s = len / outs + (len % outs != 0 ? 1 : 0);
    trio[0] = ts_int(s);
    trio[1] = ts_int(s);
    trio[2] = ratio(sub(x, len, mul(x, s, s)), 2);
}

/* Attention mixes tokens, not a spatial grid: the spatial trio does not
 * apply (token dependencies describe it instead). */
static void
rf_not_applicable(fctx *x, ts_number trio[3], ts_estimate *e)
{
    (void)x;
    (void)trio;
    e->kind = TS_EST_NOT_APPLICABLE;
}

/* ---- the family table -------------------------------------------------- */

typedef int64_t (*count_fn)(fctx *x, ts_estimate *e);

/* Per-element constants of the pointwise activations. */
typedef struct pointwise {
    int64_t flops;   /* operations per input element */
    int64_t reads;   /* input reads per element */
    int64_t scalars; /* scalar parameters read once (alpha, slope, p) */
} pointwise;

typedef struct family {
    const char *name;
    bool spatial; /* needs desc->rank in 1..3 */
    pointwise pw;
    count_fn flops, macs, dmas; /* NULL: no formula ("not supported") */
    rf_fn rf;                   /* NULL: no formula ("not supported") */
} family;

/* Activation costs, per input element: ReLU compares with 0; ReLU6 clamps
 * twice; LeakyReLU takes max and min with 0, scales one part and adds;
 * Sigmoid negates, exponentiates, adds 1 and divides; ELU compares,
 * exponentiates, subtracts 1, scales, selects and adds; Tanh takes two
 * exponentials (reading the input for each), a sum, a difference and a
 * division. Dropout reads p like ELU/LeakyReLU read alpha/slope.
 * MaxPool and adaptive max pooling count their comparisons as MACs too.
 * LayerNorm has no receptive-field formula: v0.2's module_rf does not list
 * it, so the trio is "not supported". */
#define NO_PW_  \
    {           \
        0, 0, 0 \
    }
#define ACT_ flops_pointwise, count_zero, dmas_pointwise, rf_pointwise

/* clang-format off */
static const family families[TS_MOD_KIND_COUNT] = {
    [TS_MOD_UNKNOWN]          = {"unknown",          false, NO_PW_,
        NULL,                NULL,               NULL,           NULL},
    [TS_MOD_IDENTITY]         = {"identity",         false, NO_PW_,
        count_zero,          count_zero,         dmas_identity,  rf_pointwise},
    [TS_MOD_FLATTEN]          = {"flatten",          false, NO_PW_,
        count_zero,          count_zero,         dmas_flatten,   rf_pointwise},
    [TS_MOD_LINEAR]           = {"linear",           false, NO_PW_,
        flops_linear,        macs_linear,        dmas_linear,    rf_pointwise},
    [TS_MOD_RELU]             = {"relu",      false, {1, 1, 0}, ACT_},
    [TS_MOD_ELU]              = {"elu",       false, {6, 1, 1}, ACT_},
    [TS_MOD_LEAKYRELU]        = {"leakyrelu", false, {4, 1, 1}, ACT_},
    [TS_MOD_RELU6]            = {"relu6",     false, {2, 1, 0}, ACT_},
    [TS_MOD_TANH]             = {"tanh",      false, {6, 2, 0}, ACT_},
    [TS_MOD_SIGMOID]          = {"sigmoid",   false, {4, 1, 0}, ACT_},
    [TS_MOD_CONV]             = {"conv",             true,  NO_PW_,
        flops_conv,          macs_conv,          dmas_conv,      rf_conv},
    [TS_MOD_CONVTRANSPOSE]    = {"convtranspose",    true,  NO_PW_,
        flops_convtranspose, macs_convtranspose, dmas_convtranspose,
        rf_convtranspose},
    [TS_MOD_BATCHNORM]        = {"batchnorm",        false, NO_PW_,
        flops_batchnorm,     macs_batchnorm,     dmas_batchnorm, rf_pointwise},
    [TS_MOD_MAXPOOL]          = {"maxpool",          true,  NO_PW_,
        flops_maxpool,       flops_maxpool,      dmas_maxpool,   rf_pool},
    [TS_MOD_AVGPOOL]          = {"avgpool",          true,  NO_PW_,
        flops_avgpool,       macs_avgpool,       dmas_avgpool,   rf_pool},
    [TS_MOD_ADAPTIVE_MAXPOOL] = {"adaptive_maxpool", true,  NO_PW_,
        flops_adaptive_max,  flops_adaptive_max, dmas_adaptive,  rf_adaptive},
    [TS_MOD_ADAPTIVE_AVGPOOL] = {"adaptive_avgpool", true,  NO_PW_,
        flops_adaptive_avg,  macs_adaptive_avg,  dmas_adaptive,  rf_adaptive},
    [TS_MOD_DROPOUT]          = {"dropout",          false, {0, 1, 1},
        flops_dropout,       count_zero,         dmas_pointwise, rf_pointwise},
    [TS_MOD_LAYERNORM]        = {"layernorm",        false, NO_PW_,
        flops_layernorm,     macs_layernorm,     dmas_layernorm, NULL},
    [TS_MOD_MHA]              = {"mha",              false, NO_PW_,
        flops_mha,           macs_mha,           dmas_mha,  rf_not_applicable},
};
/* clang-format on */

/* Activations cost a fixed number of operations per input element. */
static int64_t
flops_pointwise(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, families[x->d->kind].pw.flops, x->n);
}

/* Read the input (Tanh twice), the scalar parameters once, and write the
 * output unless the module works in place. */
static int64_t
dmas_pointwise(fctx *x, ts_estimate *e)
{
    (void)e;
    const family *f = &families[x->d->kind];
    int64_t writes = x->d->inplace ? 0 : x->o;
    return SUM(x, mul(x, f->pw.reads, x->n), f->pw.scalars, writes);
}

/* ---- dispatch ---------------------------------------------------------- */

static void
set_unsupported(ts_estimate *e, const ts_module_call *call)
{
    const char *name = call->type_name != NULL ? call->type_name : "?";
    e->kind = TS_EST_UNSUPPORTED;
    e->value = ts_int(0);
    snprintf(
        e->message, sizeof e->message, "Module type not supported: %s", name);
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

/* Formulas need concrete shapes of real, dense, strided tensors: complex,
 * nested and sparse calls are refused as the reference refuses them
 * (NotImplementedError). */
static bool
check_tensor(const ts_shape *s, const char *what, ts_estimate *e)
{
    if (!shape_valid(s)) {
        fail(e, "ValueError: %s has an invalid shape", what);
        return false;
    }
    if (!s->dense) {
        fail(e,
             "NotImplementedError: module formulas need a dense strided %s "
             "(not nested or sparse)",
             what);
        return false;
    }
    if (s->dtype == TS_DTYPE_COMPLEX) {
        fail(e, "NotImplementedError: module formulas need a real %s", what);
        return false;
    }
    return true;
}

/* The verdict shared by every metric of the call: tensors present and
 * usable, element counts known, spatial rank in range. */
static bool
precheck(fctx *x, const family *f, ts_estimate *e)
{
    const ts_module_call *c = x->c;
    if (!c->has_input || !c->has_output) {
        fail(e,
             "ValueError: the module call exposes no %s tensor",
             c->has_input ? "output" : "input");
        return false;
    }
    if (!check_tensor(&c->input, "input", e)
        || !check_tensor(&c->output, "output", e)) {
        return false;
    }
    if (x->d->kind == TS_MOD_MHA
        && (!check_tensor(&c->key, "key", e)
            || !check_tensor(&c->value, "value", e))) {
        return false;
    }
    if (!ts_shape_numel(&c->input, &x->n)
        || !ts_shape_numel(&c->output, &x->o)) {
        fail(e, "OverflowError: tensor element count exceeds int64");
        return false;
    }
    if (f->spatial && (x->d->rank < 1 || x->d->rank > 3)) {
        fail(e, "ValueError: spatial rank %d is not 1, 2 or 3", x->d->rank);
        return false;
    }
    return true;
}

/* A missing formula outranks any problem with the call (the reference warns
 * "not supported" without looking at tensors); a failed verdict is shared
 * by every metric; only then does the formula run, under a fresh overflow
 * flag. */
static void
run_count(count_fn fn,
          const char *metric,
          fctx *x,
          const ts_estimate *verdict,
          ts_estimate *e)
{
    if (fn == NULL) {
        set_unsupported(e, x->c);
        return;
    }
    if (verdict->kind != TS_EST_COMPLETE) {
        *e = *verdict;
        return;
    }
    x->overflow = false;
    e->kind = TS_EST_COMPLETE;
    e->message[0] = '\0';
    int64_t value = fn(x, e);
    if (e->kind != TS_EST_COMPLETE) {
        return;
    }
    if (x->overflow) {
        fail(e,
             "OverflowError: %s of %s exceed the int64 range",
             metric,
             x->c->type_name != NULL ? x->c->type_name : "?");
        return;
    }
    e->value = ts_int(value);
}

/* The trio is computed together and shares one outcome, so that the
 * caller can emit a single diagnostic for it. */
static void
run_rf(rf_fn fn, fctx *x, const ts_estimate *verdict, ts_module_estimates *out)
{
    ts_estimate status = {TS_EST_COMPLETE, {false, 0, 0.0}, ""};
    ts_number trio[3] = {ts_int(0), ts_int(0), ts_int(0)};
    if (fn == NULL) {
        set_unsupported(&status, x->c);
    }
    else if (verdict->kind != TS_EST_COMPLETE) {
        status = *verdict;
    }
    else {
        x->overflow = false;
        fn(x, trio, &status);
        if (status.kind == TS_EST_COMPLETE && x->overflow) {
            fail(&status,
                 "OverflowError: receptive field of %s exceeds "
                 "the int64 range",
                 x->c->type_name != NULL ? x->c->type_name : "?");
        }
    }
    ts_estimate *slots[3] = {&out->rf, &out->stride, &out->padding};
    for (int i = 0; i < 3; i++) {
        *slots[i] = status;
        slots[i]->value = status.kind == TS_EST_COMPLETE ? trio[i] : ts_int(0);
    }
}

int
ts_module_estimate(const ts_module_desc *desc,
                   const ts_module_call *call,
                   ts_module_estimates *out)
{
    if (desc == NULL || call == NULL || out == NULL) {
        return TS_EINVAL;
    }
    memset(out, 0, sizeof *out);
    ts_estimate verdict = {TS_EST_COMPLETE, {false, 0, 0.0}, ""};
    if ((unsigned)desc->kind >= TS_MOD_KIND_COUNT) {
        fail(&verdict, "ValueError: invalid module kind %d", (int)desc->kind);
        out->flops = out->macs = out->dmas = verdict;
        out->rf = out->stride = out->padding = verdict;
        return TS_EINVAL;
    }
    const family *f = &families[desc->kind];
    fctx x = {desc, call, 0, 0, false};
    precheck(&x, f, &verdict);
    run_count(f->flops, "FLOPs", &x, &verdict, &out->flops);
    run_count(f->macs, "MACs", &x, &verdict, &out->macs);
    run_count(f->dmas, "DMAs", &x, &verdict, &out->dmas);
    run_rf(f->rf, &x, &verdict, out);
    return TS_OK;
}

const char *
ts_module_kind_name(ts_module_kind kind)
{
    if ((unsigned)kind >= TS_MOD_KIND_COUNT) {
        return "invalid";
    }
    return families[kind].name;
}
