/* Module formulas of the grid and layout families: pooling (fixed,
 * adaptive, LP), unpooling, upsampling, fold, padding, shuffles, reshapes
 * and embeddings. Conventions: contract 2.1 and docs/module-formulas.md. */
#include "module_formulas_internal.h"

/* ---- MaxPool / AvgPool ------------------------------------------------- */

/* A max over K values takes K-1 comparisons per output. */
int64_t
ts_mf_flops_maxpool(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->o, sub(x, ts_mf_kernel_volume(x), 1));
}

/* Read K values, write the output and, when requested, its index. */
int64_t
ts_mf_dmas_maxpool(fctx *x, ts_estimate *e)
{
    (void)e;
    int64_t per_out =
        SUM(x, ts_mf_kernel_volume(x), 1, flag(x->d->return_indices));
    return mul(x, x->o, per_out);
}

/* K-1 additions and one division per output. */
int64_t
ts_mf_flops_avgpool(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->o, ts_mf_kernel_volume(x));
}

/* K-1 accumulations plus one per spatial axis for the divisor, which is a
 * product over the axes. */
int64_t
ts_mf_macs_avgpool(fctx *x, ts_estimate *e)
{
    (void)e;
    int64_t per_out = add(x, sub(x, ts_mf_kernel_volume(x), 1), x->d->rank);
    return mul(x, x->o, per_out);
}

/* Read K values and write the output; average (and LP) pooling returns no
 * indices. */
int64_t
ts_mf_dmas_avgpool(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->o, add(x, ts_mf_kernel_volume(x), 1));
}

/* Max pooling carries a dilation, average and LP pooling have none: the
 * window widens only where the module has the attribute, as in the
 * reference. */
void
ts_mf_rf_pool(fctx *x, ts_number trio[3], ts_estimate *e)
{
    (void)e;
    ts_mf_rf_window(x, trio, x->d->has_dilation);
}

/* ---- adaptive pooling (exact windows, contract; v0.2 approximated) ----- */

/* Each output compares its window's values once less than their count. */
int64_t
ts_mf_flops_adaptive_max(fctx *x, ts_estimate *e)
{
    return sub(x, ts_mf_adaptive_visits(x, x->d->rank, e), x->o);
}

/* Each visited value is added, then each output divided once. */
int64_t
ts_mf_flops_adaptive_avg(fctx *x, ts_estimate *e)
{
    return ts_mf_adaptive_visits(x, x->d->rank, e);
}

/* As fixed average pooling: the divisor costs one step per extra axis. */
int64_t
ts_mf_macs_adaptive_avg(fctx *x, ts_estimate *e)
{
    int64_t visits = ts_mf_adaptive_visits(x, x->d->rank, e);
    return add(x, visits, mul(x, x->o, x->d->rank - 1));
}

/* Read every visited value, write each output and its index if returned. */
int64_t
ts_mf_dmas_adaptive(fctx *x, ts_estimate *e)
{
    int64_t visits = ts_mf_adaptive_visits(x, x->d->rank, e);
    int64_t writes = mul(x, x->o, 1 + flag(x->d->return_indices));
    return add(x, visits, writes);
}

/* Legacy approximation kept by the contract: stride = ceil(L/O) on the last
 * axis, window = stride, padding = (L - k*s)/2 (possibly fractional or
 * negative). */
void
ts_mf_rf_adaptive(fctx *x, ts_number trio[3], ts_estimate *e)
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
    trio[2] = ts_mf_ratio(sub(x, len, mul(x, s, s)), 2);
}

/* ---- LPPool (beyond the reference) ------------------------------------- */

/* Per output: x^p of each of the K window values, K-1 additions and one
 * p-th root: 2K. (The operator view follows PyTorch's decomposition through
 * avg_pool, sign, relu and two powers instead.) */
int64_t
ts_mf_flops_lppool(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->o, mul(x, 2, ts_mf_kernel_volume(x)));
}

/* The window accumulation: K-1 per output. */
int64_t
ts_mf_macs_lppool(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->o, sub(x, ts_mf_kernel_volume(x), 1));
}

/* ---- MaxUnpool (beyond the reference) ---------------------------------- */

/* No arithmetic: each value and its index are read and scattered into the
 * zero-filled output, which is written once. */
int64_t
ts_mf_dmas_maxunpool(fctx *x, ts_estimate *e)
{
    (void)e;
    return add(x, mul(x, 2, x->n), x->o);
}

/* ---- Upsample ---------------------------------------------------------- */

/* Per output element, by interpolation mode: n neighbours are weighted and
 * summed ((2n-1) FLOPs, n MACs) after reading them ((n+1) DMAs with the
 * write). Nearest copies one neighbour: no arithmetic, 2 DMAs. Area is
 * adaptive average pooling (area = true). */
typedef struct upsample_costs {
    int64_t flops, macs, dmas; /* per output element */
    bool area;
} upsample_costs;

static const upsample_costs upsample_table[] = {
    [TS_UPSAMPLE_NEAREST] = {0, 0, 2, false},
    [TS_UPSAMPLE_LINEAR] = {3, 2, 3, false},
    [TS_UPSAMPLE_BILINEAR] = {7, 4, 5, false},
    [TS_UPSAMPLE_TRILINEAR] = {15, 8, 9, false},
    [TS_UPSAMPLE_BICUBIC] = {31, 16, 17, false},
    [TS_UPSAMPLE_AREA] = {0, 0, 0, true},
};

static const upsample_costs *
upsample_of(const fctx *x, ts_estimate *e)
{
    unsigned mode = (unsigned)x->d->upsample_mode;
    if (mode >= sizeof upsample_table / sizeof upsample_table[0]) {
        fail(e, "ValueError: invalid upsample mode %u", mode);
        return &upsample_table[TS_UPSAMPLE_NEAREST];
    }
    return &upsample_table[mode];
}

/* Upsample has no fixed rank: the spatial axes are those after (N, C). */
static int
upsample_rank(const fctx *x)
{
    return x->c->input.ndim - 2;
}

int64_t
ts_mf_flops_upsample(fctx *x, ts_estimate *e)
{
    const upsample_costs *u = upsample_of(x, e);
    if (u->area) {
        return ts_mf_adaptive_visits(x, upsample_rank(x), e);
    }
    return mul(x, u->flops, x->o);
}

int64_t
ts_mf_macs_upsample(fctx *x, ts_estimate *e)
{
    const upsample_costs *u = upsample_of(x, e);
    if (u->area) {
        int64_t visits = ts_mf_adaptive_visits(x, upsample_rank(x), e);
        return add(x, visits, mul(x, x->o, upsample_rank(x) - 1));
    }
    return mul(x, u->macs, x->o);
}

int64_t
ts_mf_dmas_upsample(fctx *x, ts_estimate *e)
{
    const upsample_costs *u = upsample_of(x, e);
    if (u->area) {
        return add(x, ts_mf_adaptive_visits(x, upsample_rank(x), e), x->o);
    }
    return mul(x, u->dmas, x->o);
}

/* ---- Fold (beyond the reference) --------------------------------------- */

/* Blocks along one output axis of length `len`: PyTorch's
 * (len + 2p - d(k-1) - 1) / s + 1 (none when negative). */
static int64_t
fold_blocks(fctx *x, int64_t len, int axis)
{
    const ts_module_desc *d = x->d;
    int64_t span =
        add(x, mul(x, d->dilation[axis], sub(x, d->kernel[axis], 1)), 1);
    int64_t room = sub(x, add(x, len, mul(x, 2, d->padding[axis])), span);
    return room < 0 ? 0 : add(x, room / d->stride[axis], 1);
}

/* Contributions landing inside one output axis, and the positions they
 * cover: position t gets one contribution per (block b, offset j) with
 * b*s - p + j*dil = t. The loop is over positions and kernel offsets. */
static void
fold_axis(fctx *x, int axis, int64_t *contributions, int64_t *covered)
{
    const ts_module_desc *d = x->d;
    int64_t len = d->output_size[axis];
    int64_t blocks = fold_blocks(x, len, axis);
    *contributions = 0;
    *covered = 0;
    for (int64_t t = 0; t < len; t++) {
        int64_t c = 0;
        for (int64_t j = 0; j < d->kernel[axis]; j++) {
            int64_t start = sub(
                x, add(x, t, d->padding[axis]), mul(x, j, d->dilation[axis]));
            if (start >= 0 && start % d->stride[axis] == 0
                && start / d->stride[axis] < blocks) {
                c++;
            }
        }
        *contributions = add(x, *contributions, c);
        *covered = add(x, *covered, flag(c > 0));
    }
}

/* Fold sums overlapping blocks: an output position reached by c block
 * elements takes c - 1 additions. Over the grid that is (contributions -
 * covered positions), per axis product, times the leading (batch, channel)
 * slices. Block elements that fall into the padding are dropped without
 * work. */
int64_t
ts_mf_flops_fold(fctx *x, ts_estimate *e)
{
    const ts_module_desc *d = x->d;
    const ts_shape *out = &x->c->output;
    if (out->ndim < 2) {
        fail(e, "ValueError: Fold expects a (C, H, W) or (N, C, H, W) output");
        return 0;
    }
    for (int i = 0; i < 2; i++) {
        /* the enumeration is output_size * kernel steps: bound it */
        if (d->stride[i] <= 0 || d->dilation[i] <= 0 || d->kernel[i] < 0
            || d->padding[i] < 0 || d->output_size[i] < 0
            || d->kernel[i] > (1 << 20)
            || d->output_size[i] > ((int64_t)1 << 32) / (d->kernel[i] + 1)) {
            fail(e, "ValueError: Fold geometry out of range");
            return 0;
        }
    }
    int64_t contrib[2], covered[2];
    fold_axis(x, 0, &contrib[0], &covered[0]);
    fold_axis(x, 1, &contrib[1], &covered[1]);
    int64_t slices = ts_mf_prod_dims(x, out, 0, out->ndim - 2);
    int64_t adds =
        sub(x, mul(x, contrib[0], contrib[1]), mul(x, covered[0], covered[1]));
    return mul(x, slices, adds);
}

/* Read every block element once, write every output once. */
int64_t
ts_mf_dmas_read_write(fctx *x, ts_estimate *e)
{
    (void)e;
    return add(x, x->n, x->o);
}

/* ---- Identity, Flatten, layout modules --------------------------------- */

/* Identity hands its input back: the only traffic is reading it once. */
int64_t
ts_mf_dmas_identity(fctx *x, ts_estimate *e)
{
    (void)e;
    return x->n;
}

/* Flatten is counted as a copy of its input: read and write each element. */
int64_t
ts_mf_dmas_copy_in(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, 2, x->n);
}

/* Shuffles, Unfold and the reflection/replication/circular pads build
 * their output by gathering: each output element is read from somewhere
 * and written (2O), whatever the input size. */
int64_t
ts_mf_dmas_copy_out(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, 2, x->o);
}

/* Constant padding reads only the input that survives negative pads
 * (crops) and writes the whole output; the fill value costs nothing. */
int64_t
ts_mf_dmas_constant_pad(fctx *x, ts_estimate *e)
{
    const ts_module_desc *d = x->d;
    const ts_shape *in = &x->c->input;
    int axes = d->pad_count / 2;
    if (d->pad_count < 0 || d->pad_count > 6 || d->pad_count % 2 != 0
        || axes > in->ndim) {
        fail(e,
             "ValueError: padding of length %d does not fit a %d-D input",
             d->pad_count,
             in->ndim);
        return 0;
    }
    int64_t kept = 1;
    for (int i = 0; i < in->ndim; i++) {
        int64_t len = in->dims[i];
        /* F.pad pairs run from the last axis backwards */
        size_t from_last = (size_t)(in->ndim - 1 - i);
        if (from_last < (size_t)axes) {
            int64_t left = d->pad[2 * from_last];
            int64_t right = d->pad[2 * from_last + 1];
            len = add(
                x, len, add(x, left < 0 ? left : 0, right < 0 ? right : 0));
        }
        kept = mul(x, kept, max0(len));
    }
    return add(x, kept, x->o);
}

/* ---- Embedding, EmbeddingBag ------------------------------------------- */

/* A lookup: read each index (N), read each selected row element (O), write
 * it (O). No arithmetic. */
int64_t
ts_mf_dmas_embedding(fctx *x, ts_estimate *e)
{
    (void)e;
    return add(x, x->n, mul(x, 2, x->o));
}

/* Row elements gathered: one embedding row (D elements) per index. */
static int64_t
bag_gathered(fctx *x)
{
    return mul(x, x->n, x->d->embedding_dim);
}

/* Combining the gathered rows of each bag into its D outputs takes
 * (rows - 1) * D additions (sum, mean) or comparisons (max): N*D - O over
 * all bags, exact when no bag is empty. Mean divides each output once;
 * per_sample_weights multiply each gathered element once. Rows equal to
 * padding_idx are value-dependent and counted like the others. */
int64_t
ts_mf_flops_embedding_bag(fctx *x, ts_estimate *e)
{
    (void)e;
    int64_t gathered = bag_gathered(x);
    int64_t total = max0(sub(x, gathered, x->o));
    if (x->d->bag_mode == TS_BAG_MEAN) {
        total = add(x, total, x->o);
    }
    if (x->c->has_per_sample_weights) {
        total = add(x, total, gathered);
    }
    return total;
}

/* Accumulations are MACs (as pooling counts them): the reduction, plus the
 * divisor for mean; weighted sums are one multiply-accumulate per gathered
 * element (as Linear counts them). */
int64_t
ts_mf_macs_embedding_bag(fctx *x, ts_estimate *e)
{
    (void)e;
    int64_t gathered = bag_gathered(x);
    if (x->c->has_per_sample_weights) {
        return gathered;
    }
    int64_t total = max0(sub(x, gathered, x->o));
    if (x->d->bag_mode == TS_BAG_MEAN) {
        total = add(x, total, x->o);
    }
    return total;
}

/* Indices, offsets, gathered row elements and per-sample weights are read
 * once; the outputs written once. */
int64_t
ts_mf_dmas_embedding_bag(fctx *x, ts_estimate *e)
{
    (void)e;
    int64_t weights = x->c->has_per_sample_weights ? x->n : 0;
    return SUM(x, x->n, x->c->aux_numel, bag_gathered(x), weights, x->o);
}
