/* Module formulas of the sequence families: MultiheadAttention, the
 * recurrent modules (RNN, LSTM, GRU and their cells) and the native
 * Transformer family, whose estimates are sums of the attention, Linear and
 * LayerNorm formulas of their sub-layers. Conventions: contract 2.1 and
 * docs/module-formulas.md. */
#include <string.h>

#include "module_formulas_internal.h"

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
 * and the head average when averaged weights are returned. An empty source
 * (S = 0) leaves empty rows: their softmax and sums cost 0, never less. */
int64_t
ts_mf_flops_mha(fctx *x, ts_estimate *e)
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
               mul(x, scores, max0(sub(x, mul(x, 2, g.d), 1))),
               mul(x, masks, scores),
               mul(x, rows, max0(sub(x, mul(x, 5, g.s), 2))),
               dropout,
               PROD(x, rows, g.d, max0(sub(x, mul(x, 2, g.s), 1))),
               out_proj,
               averaged);
}

/* Query and output projections (B*T*E^2 each), key and value projections
 * (B*S*E*kdim, B*S*E*vdim), QK^T and weights times V (B*T*S*E each). */
int64_t
ts_mf_macs_mha(fctx *x, ts_estimate *e)
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
int64_t
ts_mf_dmas_mha(fctx *x, ts_estimate *e)
{
    const ts_module_call *c = x->c;
    mha_geom g;
    if (!mha_geometry(x, e, true, &g)) {
        return 0;
    }
    int64_t in_k = 0;
    int64_t in_v = 0;
    if (!ts_shape_numel(&c->key, &in_k) || !ts_shape_numel(&c->value, &in_v)) {
        x->k.overflow = true;
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

/* ---- RNN, LSTM, GRU and their cells (beyond the reference) ------------- */

/* Work of one cell step per hidden unit, besides the gate matmuls
 * (torchscan_flops_v1: sigmoid 4, tanh 6, other elementwise ops 1):
 *   RNN:  ih + hh (1); tanh (6) or relu (1).
 *   LSTM: 4 gate sums (4); c' = f*c + i*g (3); h = o*tanh(c') (1);
 *         3 sigmoids (12) and 2 tanh (12).
 *   GRU:  r, z sums (2); r * hh_n (1); + ih_n (1); h' = n + z*(h - n) (3);
 *         2 sigmoids (8) and one tanh (6).
 * These are exactly the elementwise operators PyTorch runs. */
typedef struct rnn_costs {
    int64_t gates;       /* gate rows per hidden unit */
    int64_t elementwise; /* per hidden unit */
    int64_t activation;  /* per hidden unit */
    bool cell_state;     /* LSTM: c is read and written */
} rnn_costs;

static const rnn_costs rnn_table[] = {
    [TS_RNN_TANH] = {1, 1, 6, false},
    [TS_RNN_RELU] = {1, 1, 1, false},
    [TS_RNN_LSTM] = {4, 8, 24, true},
    [TS_RNN_GRU] = {3, 7, 14, false},
};

typedef struct rnn_geom {
    const rnn_costs *cost;
    int64_t rows;      /* (batch, step) pairs: N / input_size */
    int64_t dirs;      /* 1 or 2 */
    int64_t hidden;    /* H */
    int64_t recurrent; /* width of h: proj_size or H */
    int64_t proj;      /* proj_size (0: none) */
} rnn_geom;

/* Rows are the (batch, time) pairs the first layer consumes: N /
 * input_size holds for batched, unbatched and packed inputs alike (a
 * PackedSequence's data is (sum of lengths, input_size)). */
static bool
rnn_geometry(fctx *x, ts_estimate *e, bool cell, rnn_geom *g)
{
    const ts_module_desc *d = x->d;
    unsigned mode = (unsigned)d->rnn_mode;
    if (mode >= sizeof rnn_table / sizeof rnn_table[0] || d->input_size <= 0
        || d->hidden_size < 0 || x->n % d->input_size != 0 || d->proj_size < 0
        || (!cell && d->num_layers < 1)) {
        fail(e,
             "ValueError: recurrent module geometry does not match its input");
        return false;
    }
    g->cost = &rnn_table[mode];
    g->rows = x->n / d->input_size;
    g->dirs = !cell && d->bidirectional ? 2 : 1;
    g->hidden = d->hidden_size;
    g->proj = cell ? 0 : d->proj_size;
    g->recurrent = g->proj > 0 ? g->proj : g->hidden;
    return true;
}

/* Width of the input of layer `layer`: the module input, then the
 * previous layer's (directions x recurrent width) output. */
static int64_t
rnn_layer_input(fctx *x, const rnn_geom *g, int64_t layer)
{
    return layer == 0 ? x->d->input_size : mul(x, g->dirs, g->recurrent);
}

/* FLOPs of one step of one direction for one row: the gate matmuls at 2
 * per multiply-add (2*G*in + 2*G*R, G = gates*H), both bias vectors added
 * (2*G), the elementwise and activation work, and the LSTM projection
 * (2*H*P). The operator view (addmm) does not count the bias adds. */
static int64_t
rnn_step_flops(fctx *x, const rnn_geom *g, int64_t in)
{
    int64_t gates = mul(x, g->cost->gates, g->hidden);
    int64_t per_unit =
        mul(x, g->hidden, g->cost->elementwise + g->cost->activation);
    return SUM(x,
               PROD(x, 2, gates, add(x, in, g->recurrent)),
               PROD(x, 2, gates, flag(x->d->has_bias)),
               per_unit,
               PROD(x, 2, g->hidden, g->proj));
}

/* One MAC per gate-matmul term and per projection term. */
static int64_t
rnn_step_macs(fctx *x, const rnn_geom *g, int64_t in)
{
    int64_t gates = mul(x, g->cost->gates, g->hidden);
    return add(x,
               mul(x, gates, add(x, in, g->recurrent)),
               mul(x, g->hidden, g->proj));
}

typedef int64_t (*rnn_step_fn)(fctx *x, const rnn_geom *g, int64_t in);

/* Sums a per-step count over layers and directions: layer 0 reads the
 * input, every later layer the same (dirs * R)-wide output, so L - 1 equal
 * terms. */
static int64_t
rnn_total(fctx *x, const rnn_geom *g, rnn_step_fn step)
{
    int64_t later = sub(x, x->d->num_layers, 1);
    int64_t per_row = add(x,
                          step(x, g, rnn_layer_input(x, g, 0)),
                          mul(x, later, step(x, g, rnn_layer_input(x, g, 1))));
    return PROD(x, g->rows, g->dirs, per_row);
}

int64_t
ts_mf_flops_rnn(fctx *x, ts_estimate *e)
{
    rnn_geom g;
    if (!rnn_geometry(x, e, false, &g)) {
        return 0;
    }
    int64_t total = rnn_total(x, &g, rnn_step_flops);
    /* training applies dropout between layers, counted as nn.Dropout */
    if (x->d->training && x->d->p > 0.0) {
        int64_t dropped =
            PROD(x, sub(x, x->d->num_layers, 1), g.rows, g.dirs, g.recurrent);
        total = add(x, total, x->d->p >= 1.0 ? dropped : mul(x, 2, dropped));
    }
    return total;
}

int64_t
ts_mf_macs_rnn(fctx *x, ts_estimate *e)
{
    rnn_geom g;
    if (!rnn_geometry(x, e, false, &g)) {
        return 0;
    }
    return rnn_total(x, &g, rnn_step_macs);
}

/* Layer by layer, as a stack of Linear-like steps: parameters once (P),
 * each direction reads its layer input and writes its output (for one
 * unidirectional layer: N + O), and the states are read at the start and
 * written at the end (2 * numel(h_n), plus 2 * numel(c_n) for LSTM). */
static int64_t
rnn_layer_traffic(fctx *x, const rnn_geom *g, int64_t in)
{
    return add(x, in, g->recurrent);
}

int64_t
ts_mf_dmas_rnn(fctx *x, ts_estimate *e)
{
    rnn_geom g;
    int64_t h_n = 0;
    if (!rnn_geometry(x, e, false, &g)) {
        return 0;
    }
    if (!ts_shape_numel(&x->c->second, &h_n)) {
        x->k.overflow = true;
    }
    int64_t c_n = g.cost->cell_state ? x->c->aux_numel : 0;
    return SUM(x,
               params(x),
               rnn_total(x, &g, rnn_layer_traffic),
               mul(x, 2, h_n),
               mul(x, 2, c_n));
}

/* Cells are one step of one layer: rows = batch (1 unbatched). */
int64_t
ts_mf_flops_rnn_cell(fctx *x, ts_estimate *e)
{
    rnn_geom g;
    if (!rnn_geometry(x, e, true, &g)) {
        return 0;
    }
    return mul(x, g.rows, rnn_step_flops(x, &g, x->d->input_size));
}

int64_t
ts_mf_macs_rnn_cell(fctx *x, ts_estimate *e)
{
    rnn_geom g;
    if (!rnn_geometry(x, e, true, &g)) {
        return 0;
    }
    return mul(x, g.rows, rnn_step_macs(x, &g, x->d->input_size));
}

/* Input, parameters, the new h (the output O), the old h (O more reads),
 * and for LSTMCell the old c read and the new c written (2O). */
int64_t
ts_mf_dmas_rnn_cell(fctx *x, ts_estimate *e)
{
    rnn_geom g;
    if (!rnn_geometry(x, e, true, &g)) {
        return 0;
    }
    int64_t states = g.cost->cell_state ? 3 : 1;
    return SUM(x, x->n, params(x), x->o, mul(x, states, x->o));
}

/* ---- native Transformer family ----------------------------------------- */

enum {
    M_FLOPS = 0,
    M_MACS,
    M_DMAS,
    M_COUNT
};

static const count_fn mha_fns[M_COUNT] = {
    ts_mf_flops_mha, ts_mf_macs_mha, ts_mf_dmas_mha};
static const count_fn linear_fns[M_COUNT] = {
    ts_mf_flops_linear, ts_mf_macs_linear, ts_mf_dmas_linear};
static const count_fn norm_fns[M_COUNT] = {
    ts_mf_flops_layernorm, ts_mf_macs_layernorm, ts_mf_dmas_layernorm};

/* Per-element costs of the parts that are not modules of their own:
 * the residual add (1 FLOP; reads two tensors and writes one: 3 DMAs), the
 * activation per hidden element (ReLU 1 or exact GELU 5 FLOPs; N + O
 * DMAs). Neither has MACs. */
static const int64_t residual_costs[M_COUNT] = {1, 0, 3};
static const int64_t activation_costs[][M_COUNT] = {
    [TS_ACT_RELU] = {1, 0, 2},
    [TS_ACT_GELU] = {5, 0, 2},
};

/* The sequences of one call: the encoder input (src), the decoder input
 * (tgt) and the memory the decoder attends to (the encoder output, which
 * has src's shape, inside nn.Transformer). */
typedef struct tf_call {
    const ts_shape *src, *tgt, *memory;
} tf_call;

static ts_shape
with_last_dim(const ts_shape *s, int64_t last)
{
    ts_shape r = *s;
    if (r.ndim > 0) {
        r.dims[r.ndim - 1] = last;
    }
    return r;
}

/* Counts one attention block through the MultiheadAttention formula, with
 * the block's masks. MACs and DMAs also need the masks to have native
 * element counts (attn: T*S or B*H*T*S; key padding: B*S). */
static int64_t
tf_attention(fctx *x,
             ts_estimate *e,
             int metric,
             const ts_attention_desc *a,
             const ts_shape *query,
             const ts_shape *kv,
             ts_tf_mask attn_mask,
             ts_tf_mask padding_mask)
{
    const ts_module_call *c = x->c;
    ts_module_desc d;
    ts_module_call call;
    memset(&d, 0, sizeof d);
    memset(&call, 0, sizeof call);
    d.kind = TS_MOD_MHA;
    d.training = a->training;
    d.embed_dim = a->embed_dim;
    d.num_heads = a->num_heads;
    d.kdim = a->kdim;
    d.vdim = a->vdim;
    d.batch_first = a->batch_first;
    d.has_in_proj_bias = a->has_in_proj_bias;
    d.has_out_proj_bias = a->has_out_proj_bias;
    d.add_bias_kv = a->add_bias_kv;
    d.add_zero_attn = a->add_zero_attn;
    d.attn_dropout = a->dropout;
    d.param_numel = a->param_numel;
    call.type_name = c->type_name;
    call.has_input = call.has_output = true;
    call.input = call.output = *query;
    call.key = call.value = *kv;
    call.has_attn_mask = c->tf_mask[attn_mask];
    call.attn_mask_numel = c->tf_mask_numel[attn_mask];
    call.has_key_padding_mask = c->tf_mask[padding_mask];
    call.key_padding_mask_numel = c->tf_mask_numel[padding_mask];
    if (metric != M_FLOPS && query->ndim == 3 && kv->ndim == 3) {
        int bdim = a->batch_first ? 0 : 1;
        int ldim = a->batch_first ? 1 : 0;
        int64_t b = query->dims[bdim];
        int64_t t = query->dims[ldim];
        int64_t s = kv->dims[ldim];
        int64_t ts = mul(x, t, s);
        bool attn_ok = !call.has_attn_mask || call.attn_mask_numel == ts
                       || call.attn_mask_numel == PROD(x, b, a->num_heads, ts);
        bool pad_ok = !call.has_key_padding_mask
                      || call.key_padding_mask_numel == mul(x, b, s);
        if (!attn_ok || !pad_ok) {
            fail(e,
                 "NotImplementedError: Transformer estimates need masks of "
                 "native shapes");
            return 0;
        }
    }
    return ts_mf_sub_count(x, mha_fns[metric], &d, &call, e);
}

static int64_t
tf_linear(fctx *x,
          ts_estimate *e,
          int metric,
          const ts_linear_desc *l,
          const ts_shape *in)
{
    ts_module_desc d;
    ts_module_call call;
    memset(&d, 0, sizeof d);
    memset(&call, 0, sizeof call);
    d.kind = TS_MOD_LINEAR;
    d.in_features = l->in_features;
    d.out_features = l->out_features;
    d.has_bias = l->has_bias;
    d.has_weight = true;
    d.param_numel = l->param_numel;
    call.type_name = x->c->type_name;
    call.has_input = call.has_output = true;
    call.input = with_last_dim(in, l->in_features);
    call.output = with_last_dim(in, l->out_features);
    return ts_mf_sub_count(x, linear_fns[metric], &d, &call, e);
}

/* LayerNorm through its formula; Identity and absent norms cost nothing
 * (the staged DMAs have no stage for them). */
static int64_t
tf_norm(fctx *x,
        ts_estimate *e,
        int metric,
        const ts_norm_desc *n,
        const ts_shape *in)
{
    ts_module_desc d;
    ts_module_call call;
    if (n->kind != TS_NORM_LAYERNORM) {
        return 0;
    }
    memset(&d, 0, sizeof d);
    memset(&call, 0, sizeof call);
    d.kind = TS_MOD_LAYERNORM;
    d.has_weight = n->has_weight;
    d.has_bias = n->has_bias;
    d.normalized_numel = n->normalized_numel;
    d.param_numel = n->param_numel;
    call.type_name = x->c->type_name;
    call.has_input = call.has_output = true;
    call.input = call.output = *in;
    return ts_mf_sub_count(x, norm_fns[metric], &d, &call, e);
}

/* A dropout in training mode over `elements`, counted as nn.Dropout counts
 * it. Each sub-layer's own mode decides (MC dropout switches only them). */
static int64_t
tf_dropout(fctx *x, double p, bool training, int64_t elements)
{
    if (!training || p <= 0.0) {
        return 0;
    }
    return p >= 1.0 ? elements : mul(x, 2, elements);
}

/* One encoder or decoder layer on `seq` (decoders attend to `memory`):
 * self-attention, cross-attention (decoders), the feed-forward block
 * (linear1, activation, linear2), one residual add and one LayerNorm per
 * block, and in training the dropouts. norm_first only reorders these
 * terms. */
static int64_t
tf_layer(fctx *x,
         ts_estimate *e,
         int metric,
         const ts_transformer_layer_desc *l,
         const ts_shape *seq,
         const ts_shape *memory)
{
    int64_t n = ts_mf_prod_dims(x, seq, 0, seq->ndim);
    int blocks = l->decoder ? 3 : 2;
    ts_tf_mask self_mask = l->decoder ? TS_TF_TGT_MASK : TS_TF_SRC_MASK;
    ts_tf_mask self_pad =
        l->decoder ? TS_TF_TGT_KEY_PADDING_MASK : TS_TF_SRC_KEY_PADDING_MASK;
    ts_shape hidden = with_last_dim(seq, l->linear1.out_features);
    int64_t hidden_n = ts_mf_prod_dims(x, &hidden, 0, hidden.ndim);
    unsigned act = (unsigned)l->activation;
    if (act >= sizeof activation_costs / sizeof activation_costs[0]) {
        fail(e, "ValueError: invalid Transformer activation %u", act);
        return 0;
    }
    int64_t total =
        SUM(x,
            tf_attention(
                x, e, metric, &l->self_attn, seq, seq, self_mask, self_pad),
            tf_linear(x, e, metric, &l->linear1, seq),
            mul(x, activation_costs[act][metric], hidden_n),
            tf_linear(x, e, metric, &l->linear2, &hidden),
            PROD(x, blocks, residual_costs[metric], n));
    if (l->decoder) {
        total = add(x,
                    total,
                    tf_attention(x,
                                 e,
                                 metric,
                                 &l->cross_attn,
                                 seq,
                                 memory,
                                 TS_TF_MEMORY_MASK,
                                 TS_TF_MEMORY_KEY_PADDING_MASK));
    }
    for (int i = 0; i < blocks; i++) {
        total = add(x, total, tf_norm(x, e, metric, &l->norm[i], seq));
    }
    if (metric == M_FLOPS) {
        total = add(
            x,
            total,
            tf_dropout(x, l->dropout[0], l->dropout_training[0], hidden_n));
        for (int i = 1; i <= blocks; i++) {
            total =
                add(x,
                    total,
                    tf_dropout(x, l->dropout[i], l->dropout_training[i], n));
        }
    }
    return total;
}

/* A stack: `count` identical layers on the same shapes, then its final
 * norm. A single layer is a stack of one without a final norm. */
static int64_t
tf_stack(fctx *x,
         ts_estimate *e,
         int metric,
         const ts_transformer_layer_desc *l,
         const ts_norm_desc *final_norm,
         const ts_shape *seq,
         const ts_shape *memory)
{
    int64_t layers = mul(x, l->count, tf_layer(x, e, metric, l, seq, memory));
    return add(x, layers, tf_norm(x, e, metric, final_norm, seq));
}

/* Which sequences the call's tensors are: encoders take src first;
 * decoders take tgt, then memory; nn.Transformer takes src, then tgt, and
 * its decoder attends to the encoder output (src-shaped). */
static tf_call
tf_sequences(const fctx *x)
{
    const ts_module_call *c = x->c;
    tf_call s = {&c->input, &c->input, &c->input};
    switch (x->d->kind) {
        case TS_MOD_TRANSFORMER_DECODER_LAYER:
        case TS_MOD_TRANSFORMER_DECODER:
            s.tgt = &c->input;
            s.memory = &c->second;
            break;
        case TS_MOD_TRANSFORMER:
            s.tgt = &c->second;
            break;
        default:
            break;
    }
    return s;
}

/* Whether any sub-layer of a stack is in training mode. */
static bool
tf_layer_training(const ts_transformer_layer_desc *l)
{
    bool training = l->count > 0 && l->self_attn.training;
    training |= l->count > 0 && l->decoder && l->cross_attn.training;
    for (int i = 0; l->count > 0 && i < (l->decoder ? 4 : 3); i++) {
        training |= l->dropout_training[i];
    }
    return training;
}

/* What the MAC and DMA estimates assume beyond the FLOP formula (contract
 * 2.1 notes): eval mode (the sub-layers too), explicit masks behind causal
 * hints, and no nested tensors for encoder padding masks. */
static bool
tf_check_estimable(fctx *x, ts_estimate *e)
{
    const ts_module_call *c = x->c;
    static const ts_tf_mask causal_masks[TS_TF_SEQ_COUNT] = {
        [TS_TF_SRC] = TS_TF_SRC_MASK,
        [TS_TF_TGT] = TS_TF_TGT_MASK,
        [TS_TF_MEMORY] = TS_TF_MEMORY_MASK,
    };
    if (x->d->training || tf_layer_training(&x->d->transformer.encoder)
        || tf_layer_training(&x->d->transformer.decoder)) {
        fail(e,
             "NotImplementedError: Transformer MACs and DMAs are defined in "
             "eval mode");
        return false;
    }
    for (int i = 0; i < TS_TF_SEQ_COUNT; i++) {
        if (c->tf_causal[i] && !c->tf_mask[causal_masks[i]]) {
            fail(e,
                 "NotImplementedError: a causal hint without an explicit "
                 "mask is not modelled");
            return false;
        }
    }
    if (x->d->transformer.enable_nested_tensor
        && c->tf_mask[TS_TF_SRC_KEY_PADDING_MASK]) {
        fail(e,
             "NotImplementedError: encoder padding masks need "
             "enable_nested_tensor=False");
        return false;
    }
    return true;
}

/* Encoder, then decoder: each part is absent (count 0) unless the kind has
 * it, so one expression serves the five kinds. */
static int64_t
tf_count(fctx *x, ts_estimate *e, int metric)
{
    const ts_transformer_desc *t = &x->d->transformer;
    tf_call s = tf_sequences(x);
    if (metric != M_FLOPS && !tf_check_estimable(x, e)) {
        return 0;
    }
    int64_t total = 0;
    if (t->encoder.count > 0) {
        total = add(
            x,
            total,
            tf_stack(
                x, e, metric, &t->encoder, &t->encoder_norm, s.src, s.src));
    }
    if (t->decoder.count > 0) {
        total = add(
            x,
            total,
            tf_stack(
                x, e, metric, &t->decoder, &t->decoder_norm, s.tgt, s.memory));
    }
    return total;
}

int64_t
ts_mf_flops_transformer(fctx *x, ts_estimate *e)
{
    return tf_count(x, e, M_FLOPS);
}

int64_t
ts_mf_macs_transformer(fctx *x, ts_estimate *e)
{
    return tf_count(x, e, M_MACS);
}

int64_t
ts_mf_dmas_transformer(fctx *x, ts_estimate *e)
{
    return tf_count(x, e, M_DMAS);
}
