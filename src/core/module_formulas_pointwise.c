/* Module formulas of the elementwise families: activations, the Softmax
 * family, GLU, dropout variants, and the two-input similarity/distance
 * modules. Per-element activation costs live in the family table
 * (module_formulas.c); they equal the torchscan_flops_v1 operator costs, so
 * module and operator FLOPs agree on these calls. */
#include <math.h>

#include "module_formulas_internal.h"

/* ---- activations ------------------------------------------------------- */

/* Activations cost a fixed number of operations per input element. */
int64_t
ts_mf_flops_pointwise(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, ts_mf_families[x->d->kind].pw.flops, x->n);
}

/* Read the input (Tanh twice) and the scalar parameters once; write the
 * output unless a v0.2 activation works in place (the newer ones always
 * count the write, contract). PReLU reads its weights, except on an empty
 * batch, which gives 0 everywhere (contract). */
int64_t
ts_mf_dmas_pointwise(fctx *x, ts_estimate *e)
{
    (void)e;
    const pointwise *pw = &ts_mf_families[x->d->kind].pw;
    int64_t writes = x->d->inplace && !pw->writes ? 0 : x->o;
    int64_t weights = pw->weights && x->n > 0 ? params(x) : 0;
    return SUM(x, mul(x, pw->reads, x->n), pw->scalars, weights, writes);
}

/* RReLU in eval is a fixed-slope leaky ReLU (4N); training samples a slope
 * per element, which the operator convention leaves unsupported too. */
int64_t
ts_mf_flops_rrelu(fctx *x, ts_estimate *e)
{
    if (x->d->training) {
        fail(e, "NotImplementedError: RReLU FLOPs are defined in eval only");
        return 0;
    }
    return ts_mf_flops_pointwise(x, e);
}

/* Exact GELU: x * 0.5 * (1 + erf(x / sqrt 2)) = 5 per element. The tanh
 * approximation x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) costs
 * 14 (tanh counts 6). */
int64_t
ts_mf_flops_gelu(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, x->d->approximate_tanh ? 14 : 5, x->n);
}

/* GLU: a * sigmoid(b) per output element (sigmoid 4, product 1). */
int64_t
ts_mf_flops_glu(fctx *x, ts_estimate *e)
{
    (void)e;
    return mul(x, 5, x->o);
}

/* ---- Softmax family ---------------------------------------------------- */

/* Costs per element (N) and per normalized row (R), contract 2.1: softmax
 * subtracts the max (N - R comparisons + N), exponentiates, sums (N - R)
 * and divides: 5N - 2R; log-softmax 4N - R; softmin negates first
 * (N + softmax). DMAs are the staged logical traffic of the contract. */
typedef struct softmax_costs {
    int64_t flops_n, flops_r, dmas_n, dmas_r;
} softmax_costs;

static const softmax_costs softmax_table[TS_MOD_KIND_COUNT] = {
    [TS_MOD_SOFTMAX] = {5, -2, 8, 4},
    [TS_MOD_SOFTMAX2D] = {5, -2, 8, 4},
    [TS_MOD_LOGSOFTMAX] = {4, -1, 8, 6},
    [TS_MOD_SOFTMIN] = {6, -2, 10, 4},
};

/* Rows R = N / size(dim). Softmax2d normalizes over channels (dim -3 of a
 * 3-D or 4-D input); dim=None is torch's legacy choice (0 for 0-, 1- and
 * 3-D inputs, else 1). An empty axis means no rows. */
static int64_t
softmax_rows(fctx *x, ts_estimate *e)
{
    const ts_module_desc *d = x->d;
    const ts_shape *in = &x->c->input;
    int64_t dim = d->dim;
    int axis = 0;
    if (d->kind == TS_MOD_SOFTMAX2D) {
        if (in->ndim != 3 && in->ndim != 4) {
            fail(e,
                 "ValueError: Softmax2d expects a 3-D or 4-D input, got %d-D",
                 in->ndim);
            return 0;
        }
        dim = -3;
    }
    else if (d->dim_is_none) {
        dim = in->ndim == 0 || in->ndim == 1 || in->ndim == 3 ? 0 : 1;
    }
    if (!ts_mf_wrap_dim(dim, in->ndim, &axis, e)) {
        return 0;
    }
    return div0(x->n, in->ndim == 0 ? 1 : in->dims[axis]);
}

static const softmax_costs *
softmax_of(const fctx *x)
{
    return &softmax_table[x->d->kind];
}

int64_t
ts_mf_flops_softmax(fctx *x, ts_estimate *e)
{
    const softmax_costs *s = softmax_of(x);
    int64_t rows = softmax_rows(x, e);
    return max0(add(x, mul(x, s->flops_n, x->n), mul(x, s->flops_r, rows)));
}

int64_t
ts_mf_dmas_softmax(fctx *x, ts_estimate *e)
{
    const softmax_costs *s = softmax_of(x);
    int64_t rows = softmax_rows(x, e);
    return add(x, mul(x, s->dmas_n, x->n), mul(x, s->dmas_r, rows));
}

/* ---- Dropout family ---------------------------------------------------- */

/* Eval (and p = 0) is the identity. Training samples a mask and scales each
 * kept value (2N); p = 1 only fills zeros (N). Dropout1d/2d/3d sample one
 * value per channel but still scale every element: the same count. */
int64_t
ts_mf_flops_dropout(fctx *x, ts_estimate *e)
{
    (void)e;
    if (!x->d->training || x->d->p <= 0.0) {
        return 0;
    }
    return x->d->p >= 1.0 ? x->n : mul(x, 2, x->n);
}

/* Alpha dropout is the identity in eval. Training applies a mask and an
 * affine correction whose cost no convention fixes: refused rather than
 * guessed. */
int64_t
ts_mf_flops_alpha_dropout(fctx *x, ts_estimate *e)
{
    if (x->d->training && x->d->p > 0.0) {
        fail(e,
             "NotImplementedError: alpha dropout FLOPs are defined in eval "
             "only");
    }
    return 0;
}

/* ---- CosineSimilarity, PairwiseDistance (beyond the reference) ---------- */

/* The broadcast shape of two inputs, aligned from the last axis. */
static bool
broadcast(const ts_shape *a, const ts_shape *b, ts_shape *out, ts_estimate *e)
{
    int ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
    *out = *a;
    out->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        int ia = a->ndim - ndim + i;
        int ib = b->ndim - ndim + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1;
        int64_t db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            fail(e, "ValueError: the two inputs do not broadcast");
            return false;
        }
        out->dims[i] = da == 1 ? db : da;
    }
    return true;
}

typedef struct pair_geom {
    int64_t n1, n2; /* elements of each input */
    int64_t nb;     /* elements of their broadcast */
    int ndim;       /* dims of their broadcast */
} pair_geom;

static bool
pair_geometry(fctx *x, ts_estimate *e, pair_geom *g)
{
    const ts_shape *b = &x->c->second;
    ts_shape both;
    if (!broadcast(&x->c->input, b, &both, e)) {
        return false;
    }
    g->n1 = x->n;
    g->n2 = ts_mf_prod_dims(x, b, 0, b->ndim);
    g->nb = ts_mf_prod_dims(x, &both, 0, both.ndim);
    g->ndim = both.ndim;
    return true;
}

/* As PyTorch computes it (and the operator view counts it): both inputs
 * are expanded to their broadcast shape (Nb elements), then two L2 norms
 * along dim (2 per element each), each norm clamped by eps (1 per output
 * element), each input divided by its norm (1 per element), the normalized
 * inputs multiplied (Nb) and summed along dim (Nb - O): 8Nb + O. */
int64_t
ts_mf_flops_cosine(fctx *x, ts_estimate *e)
{
    pair_geom g;
    int axis = 0;
    if (!pair_geometry(x, e, &g)
        || !ts_mf_wrap_dim(x->d->dim, g.ndim, &axis, e)) {
        return 0;
    }
    return add(x, mul(x, 8, g.nb), x->o);
}

/* Three accumulations per broadcast element: each squared norm and the
 * dot product. */
int64_t
ts_mf_macs_cosine(fctx *x, ts_estimate *e)
{
    pair_geom g;
    if (!pair_geometry(x, e, &g)) {
        return 0;
    }
    return mul(x, 3, g.nb);
}

/* Both inputs read once, the output written once. */
int64_t
ts_mf_dmas_two_inputs(fctx *x, ts_estimate *e)
{
    pair_geom g;
    if (!pair_geometry(x, e, &g)) {
        return 0;
    }
    return SUM(x, g.n1, g.n2, x->o);
}

/* ||x1 - x2 + eps||_p over the last axis, as PyTorch evaluates it: the
 * difference and the eps shift (2 per broadcast element), then the norm at
 * the operator convention: p = 2 squares and sums then roots (2Nb);
 * p = 1 or inf reduce |d| (2Nb - O); any other p raises |d| to p (2Nb),
 * sums (Nb - O) and roots (O). */
int64_t
ts_mf_flops_pairwise(fctx *x, ts_estimate *e)
{
    pair_geom g;
    if (!pair_geometry(x, e, &g)) {
        return 0;
    }
    double p = x->d->norm_p;
    int64_t shift = mul(x, 2, g.nb);
    if (p == 2.0) {
        return add(x, shift, mul(x, 2, g.nb));
    }
    if (p == 1.0 || isinf(p)) {
        return add(x, shift, max0(sub(x, mul(x, 2, g.nb), x->o)));
    }
    return add(x, shift, mul(x, 3, g.nb));
}

/* One accumulation per element of the difference. */
int64_t
ts_mf_macs_pairwise(fctx *x, ts_estimate *e)
{
    pair_geom g;
    if (!pair_geometry(x, e, &g)) {
        return 0;
    }
    return g.nb;
}
