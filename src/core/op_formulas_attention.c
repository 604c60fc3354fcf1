/* The attention convention: every scaled-dot-product attention kernel
 * (CPU flash, CUDA flash, memory-efficient, cuDNN, the overrideable kernel
 * of other backends, the raw flash/efficient kernels), the composite
 * aten.scaled_dot_product_attention itself, their backward kernels, and the
 * fused transformer kernels (_native_multi_head_attention,
 * _transformer_encoder_layer_fwd) count one attention by one formula, the
 * one contract 2.2 gives the CPU kernel, so that a call counts the same
 * whichever kernel PyTorch picked (docs/operator-flops.md, "Attention").
 *
 * An attention of B batches, Hq query heads over Hk key/value heads (Hq a
 * multiple of Hk), T queries, S keys, query/key width Dq and value width Dv
 * has rows = B*Hq*T softmax rows and scores = rows*S scores:
 *
 *   forward  = 2*scores*(Dq + Dv)                      matrix products
 *            + scores                                  scaling
 *            + 5*scores - 2*rows                       stable softmax
 *            + scores*([causal] + [mask])              masking
 *            + 2*scores*[dropout]                      dropout
 *   backward = 2*scores*(3*Dq + 2*Dv)                  five products
 *            + scores*(6 + [causal] + [mask])          P recomputed from
 *                                                      logsumexp, dS and its
 *                                                      scaling
 *            + 2*scores*[dropout]                      the mask on dP and P
 *            + rows*(2*Dv - 1)                         rowsum(dO * O)
 *            + (Hq - Hk)*B*S*(Dq + Dv)                 dK, dV summed over
 *                                                      each group's heads
 *
 * The matrix products are FlopCounterMode's count (sdpa_flop_count and
 * sdpa_backward_flop_count) and are returned apart in matrix_flops, so that
 * parity with it stays checkable. A causal mask, an explicit mask or bias,
 * a sliding window each count one selection or add per score; ALiBi slopes
 * count two (the bias slope*distance and its add); dropout two (the keep
 * test and the 1/(1-p) scaling, or the mask's product and its scaling as
 * the math path runs them).
 */
#include "op_formulas_internal.h"

static const char MSG_SHAPES[] =
    "The attention formula needs 4-D query, key and value with equal batch, "
    "equal key/value heads and lengths, equal query/key widths, and query "
    "heads a multiple of key/value heads.";

/* One attention's sizes. */
typedef struct attn {
    int64_t b, hq, hk, t, s, dq, dv;
} attn;

/* What the scores go through besides scaling and softmax. */
typedef struct attn_work {
    int64_t masks; /* selections or adds per score (causal, mask, window) */
    bool dropout;
} attn_work;

/* A dropout probability argument that is not zero (absent means 0). */
static bool
has_dropout(const ts_op_arg *p)
{
    if (p->kind == TS_ARG_REAL) {
        return p->r != 0.0;
    }
    if (p->kind == TS_ARG_INT || p->kind == TS_ARG_BOOL) {
        return p->i != 0;
    }
    return false;
}

/* Reads q, k, v of the (batch, heads, seq, dim) layout (bhsd) or of the raw
 * kernels' (batch, seq, heads, dim) layout. */
static int
read_attn(const ts_shape *q,
          const ts_shape *k,
          const ts_shape *v,
          bool bhsd,
          attn *a,
          ts_error *err)
{
    int h = bhsd ? 1 : 2, s = bhsd ? 2 : 1;
    if (q == NULL || k == NULL || v == NULL || q->ndim != 4 || k->ndim != 4
        || v->ndim != 4) {
        return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_SHAPES);
    }
    a->b = q->dims[0];
    a->hq = q->dims[h];
    a->t = q->dims[s];
    a->dq = q->dims[3];
    a->hk = k->dims[h];
    a->s = k->dims[s];
    a->dv = v->dims[3];
    if (k->dims[0] != a->b || v->dims[0] != a->b || v->dims[h] != a->hk
        || v->dims[s] != a->s || k->dims[3] != a->dq || a->hk <= 0
        || a->hq % a->hk != 0) {
        return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_SHAPES);
    }
    return TS_OK;
}

/* The convention on explicit sizes: rows softmax rows of s scores, query
 * width dq, value width dv. */
static void
forward_count(calc *c,
              int64_t rows,
              int64_t s,
              int64_t dq,
              int64_t dv,
              const attn_work *w,
              ts_op_result *out)
{
    int64_t scores = c_mul(c, rows, s), per_score;
    if (rows == 0 || s == 0) {
        out->flops = out->matrix_flops = 0;
        return;
    }
    out->matrix_flops = c_mul(c, c_mul(c, 2, scores), c_add(c, dq, dv));
    per_score = 6 + w->masks + (w->dropout ? 2 : 0);
    out->flops = c_add(c, out->matrix_flops, c_mul(c, per_score, scores));
    out->flops = c_sub(c, out->flops, c_mul(c, 2, rows));
}

static void
backward_count(calc *c, const attn *a, const attn_work *w, ts_op_result *out)
{
    int64_t rows = c_mul(c, c_mul(c, a->b, a->hq), a->t);
    int64_t scores = c_mul(c, rows, a->s), per_score, n;
    if (rows == 0 || a->s == 0) {
        out->flops = out->matrix_flops = 0;
        return;
    }
    out->matrix_flops =
        c_mul(c,
              c_mul(c, 2, scores),
              c_add(c, c_mul(c, 3, a->dq), c_mul(c, 2, a->dv)));
    per_score = 6 + w->masks + (w->dropout ? 2 : 0);
    n = c_add(c, out->matrix_flops, c_mul(c, per_score, scores));
    n = c_add(c, n, c_mul(c, rows, max0(c_sub(c, c_mul(c, 2, a->dv), 1))));
    n = c_add(c,
              n,
              c_mul(c,
                    c_mul(c, c_mul(c, a->hq - a->hk, a->b), a->s),
                    c_add(c, a->dq, a->dv)));
    out->flops = n;
}

/* Finishes a count: overflow, and complex operands (counted as if real,
 * as FlopCounterMode counts them: a lower bound). */
static int
attn_finish(const ts_op_call *call,
            const calc *c,
            ts_op_result *out,
            ts_error *err)
{
    if (c->overflow) {
        out->flops = out->matrix_flops = 0;
        return ts_error_set(err, TS_EOVERFLOW, "%s", MSG_OVERFLOW);
    }
    if (any_arg(call, arg_complex, false)
        || any_out_dtype(call, dtype_complex)) {
        out->incomplete = true;
        out->incomplete_message = MSG_INCOMPLETE_COMPLEX;
    }
    return TS_OK;
}

/* Where a kernel keeps its arguments; -1 for an argument it does not
 * have. */
typedef struct attn_args {
    int first;   /* query (grad_out, when backward, is just before) */
    bool bhsd;   /* (batch, heads, seq, dim); else (batch, seq, heads, dim) */
    int mask;    /* attn_mask / attn_bias / bias */
    int dropout; /* dropout_p */
    int causal;  /* is_causal */
    int mask_type; /* custom_mask_type (efficient kernels): != 0 is causal */
    int window;    /* window_size_left, or window_size (one of two) */
    int window2;   /* window_size_right */
    int alibi;     /* alibi_slopes */
    int seqlens;   /* cum_seq_q / cu_seqlens_q: variable-length calls */
} attn_args;

static bool
int_given(const ts_op_arg *a)
{
    return given(a) && a->kind == TS_ARG_INT;
}

static attn_work
read_work(const ts_op_call *call, const attn_args *p)
{
    attn_work w = {0, false};
    if (p->causal >= 0 && flag_at(call, p->causal, false)) {
        w.masks++;
    }
    if (p->mask_type >= 0 && arg_at(call, p->mask_type)->kind == TS_ARG_INT
        && arg_at(call, p->mask_type)->i != 0) {
        w.masks++;
    }
    if (p->mask >= 0 && given(arg_at(call, p->mask))) {
        w.masks++;
    }
    /* a sliding window (either side, or window_size) is one more test */
    if ((p->window >= 0 && int_given(arg_at(call, p->window))
         && arg_at(call, p->window)->i >= 0)
        || (p->window2 >= 0 && int_given(arg_at(call, p->window2))
            && arg_at(call, p->window2)->i >= 0)) {
        w.masks++;
    }
    if (p->alibi >= 0 && given(arg_at(call, p->alibi))) {
        w.masks += 2;
    }
    w.dropout = p->dropout >= 0 && has_dropout(arg_at(call, p->dropout));
    return w;
}

/* FlopCounterMode reads the raw kernels' dense (batch, seq, heads, dim)
 * inputs as (b, h, s, d): sdpa_flop_count on those shapes. Returns false
 * when its own checks would refuse them (it raises there). */
static bool
fcm_raw_products(calc *c,
                 const ts_op_call *call,
                 int first,
                 bool backward,
                 int64_t *products)
{
    const ts_shape *q = tensor_at(call, first),
                   *k = tensor_at(call, first + 1);
    const ts_shape *v = tensor_at(call, first + 2);
    int64_t bh, sq, sk, dq, dv;
    if (k->dims[1] == 0 || q->dims[1] % k->dims[1] != 0
        || k->dims[2] != v->dims[2]) {
        return false;
    }
    bh = c_mul(c, q->dims[0], q->dims[1]);
    sq = q->dims[2];
    sk = k->dims[2];
    dq = q->dims[3];
    dv = v->dims[3];
    *products = backward ? c_add(c,
                                 c_add(c,
                                       bmm_count(c, bh, sq, dq, sk),
                                       bmm_count(c, bh, sq, dv, sk)),
                                 c_add(c,
                                       c_add(c,
                                             bmm_count(c, bh, sk, sq, dv),
                                             bmm_count(c, bh, sq, sk, dq)),
                                       bmm_count(c, bh, dq, sq, sk)))
                         : c_add(c,
                                 bmm_count(c, bh, sq, dq, sk),
                                 bmm_count(c, bh, sq, sk, dv));
    return true;
}

static int
kernel_count(const ts_op_call *call,
             const attn_args *p,
             bool backward,
             ts_op_result *out,
             ts_error *err)
{
    calc c = {false};
    attn a = {0, 0, 0, 0, 0, 0, 0};
    attn_work w;
    int rc = native_begin(call, out, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (p->seqlens >= 0 && given(arg_at(call, p->seqlens))) {
        return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_VARLEN);
    }
    rc = read_attn(tensor_at(call, p->first),
                   tensor_at(call, p->first + 1),
                   tensor_at(call, p->first + 2),
                   p->bhsd,
                   &a,
                   err);
    if (rc != TS_OK) {
        return rc;
    }
    if (backward) {
        const ts_shape *g = tensor_at(call, p->first - 1);
        int h = p->bhsd ? 1 : 2, s = p->bhsd ? 2 : 1;
        if (g == NULL || g->ndim != 4 || g->dims[0] != a.b
            || g->dims[h] != a.hq || g->dims[s] != a.t || g->dims[3] != a.dv) {
            return ts_error_set(err,
                                TS_EUNSUPPORTED,
                                "The attention backward formula needs "
                                "grad_out shaped like the output.");
        }
    }
    w = read_work(call, p);
    if (backward) {
        backward_count(&c, &a, &w, out);
    }
    else {
        forward_count(&c,
                      c_mul(&c, c_mul(&c, a.b, a.hq), a.t),
                      a.s,
                      a.dq,
                      a.dv,
                      &w,
                      out);
    }
    if (!p->bhsd) {
        int64_t products = 0;
        if (fcm_raw_products(&c, call, p->first, backward, &products)) {
            out->matrix_flops = products;
        }
    }
    return attn_finish(call, &c, out, err);
}

/* ---- the kernels, by their schemas -------------------------------------- */

/* scaled_dot_product_attention(query, key, value, attn_mask=None,
 * dropout_p=0., is_causal=False, *, scale=None, enable_gqa=False): the
 * composite operator, which reaches a dispatch mode under inference_mode
 * (and otherwise decomposes into one of the kernels below or the math
 * path, which the operator counter groups back into one attention). Any
 * rank >= 2: rows are the query's leading elements. */
int
ts_opf_sdpa_composite(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    static const attn_args p = {0, true, 3, 4, 5, -1, -1, -1, -1, -1};
    calc c = {false};
    const ts_shape *q = tensor_at(call, 0), *k = tensor_at(call, 1);
    const ts_shape *v = tensor_at(call, 2);
    attn_work w;
    int64_t rows;
    int rc = native_begin(call, out, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (q == NULL || k == NULL || v == NULL || q->ndim < 2 || k->ndim < 2
        || v->ndim < 2 || k->dims[k->ndim - 1] != q->dims[q->ndim - 1]
        || v->dims[v->ndim - 2] != k->dims[k->ndim - 2]) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "scaled_dot_product_attention needs query (..., "
                            "T, D), key (..., S, D) and value (..., S, Dv).");
    }
    if (q->dims[q->ndim - 1] == 0) {
        rows = 0;
    }
    else {
        rows = c_numel(&c, q) / q->dims[q->ndim - 1];
    }
    w = read_work(call, &p);
    forward_count(&c,
                  rows,
                  k->dims[k->ndim - 2],
                  q->dims[q->ndim - 1],
                  v->dims[v->ndim - 1],
                  &w,
                  out);
    return attn_finish(call, &c, out, err);
}

/* _scaled_dot_product_flash_attention_for_cpu(query, key, value,
 * dropout_p=0., is_causal=False, *, attn_mask=None, scale=None) */
int
ts_opf_cpu_attention(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    static const attn_args p = {0, true, 5, 3, 4, -1, -1, -1, -1, -1};
    return kernel_count(call, &p, false, out, err);
}

/* _scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query,
 * key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None,
 * scale=None) */
int
ts_opf_cpu_attention_backward(const ts_op_call *call,
                              ts_op_result *out,
                              ts_error *err)
{
    static const attn_args p = {1, true, 8, 6, 7, -1, -1, -1, -1, -1};
    return kernel_count(call, &p, true, out, err);
}

/* _scaled_dot_product_flash_attention(query, key, value, dropout_p=0.,
 * is_causal=False, return_debug_mask=False, *, scale=None), and its
 * .quantized overload with q/k/v_descale before dropout_p. */
int
ts_opf_flash_sdpa(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    static const attn_args p = {0, true, -1, 3, 4, -1, -1, -1, -1, -1};
    static const attn_args quantized = {0, true, -1, 6, 7, -1, -1, -1, -1, -1};
    return kernel_count(call,
                        overload_is(call, "quantized") ? &quantized : &p,
                        false,
                        out,
                        err);
}

/* _scaled_dot_product_flash_attention_backward(grad_out, query, key, value,
 * out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal,
 * philox_seed, philox_offset, *, scale=None). The sequence offsets of the
 * forward's outputs are passed back even for dense inputs, so they do not
 * mark a variable-length call here. */
int
ts_opf_flash_sdpa_backward(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    static const attn_args p = {1, true, -1, 10, 11, -1, -1, -1, -1, -1};
    return kernel_count(call, &p, true, out, err);
}

/* _scaled_dot_product_efficient_attention(query, key, value, attn_bias,
 * compute_log_sumexp, dropout_p=0., is_causal=False, *, scale=None) */
int
ts_opf_efficient_sdpa(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    static const attn_args p = {0, true, 3, 5, 6, -1, -1, -1, -1, -1};
    return kernel_count(call, &p, false, out, err);
}

/* _scaled_dot_product_efficient_attention_backward(grad_out_, query, key,
 * value, attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p,
 * grad_input_mask, is_causal=False, *, scale=None). The bias gradient is dS
 * itself (no extra work). */
int
ts_opf_efficient_sdpa_backward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err)
{
    static const attn_args p = {1, true, 4, 9, 11, -1, -1, -1, -1, -1};
    return kernel_count(call, &p, true, out, err);
}

/* _scaled_dot_product_cudnn_attention(query, key, value, attn_bias,
 * compute_log_sumexp, dropout_p=0., is_causal=False,
 * return_debug_mask=False, *, scale=None) */
int
ts_opf_cudnn_sdpa(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    static const attn_args p = {0, true, 3, 5, 6, -1, -1, -1, -1, -1};
    return kernel_count(call, &p, false, out, err);
}

/* _scaled_dot_product_cudnn_attention_backward(grad_out, query, key, value,
 * out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q,
 * cum_seq_k, max_q, max_k, dropout_p, is_causal, *, scale=None) */
int
ts_opf_cudnn_sdpa_backward(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    static const attn_args p = {1, true, 8, 13, 14, -1, -1, -1, -1, -1};
    return kernel_count(call, &p, true, out, err);
}

/* _scaled_dot_product_fused_attention_overrideable(query, key, value,
 * attn_bias=None, dropout_p=0., is_causal=False, return_debug_mask=False,
 * *, scale=None): the kernel other backends (XPU, PrivateUse1) register. */
int
ts_opf_overrideable_sdpa(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err)
{
    static const attn_args p = {0, true, 3, 4, 5, -1, -1, -1, -1, -1};
    return kernel_count(call, &p, false, out, err);
}

/* _scaled_dot_product_fused_attention_overrideable_backward(grad_out,
 * query, key, value, attn_bias, grad_input_mask, out, logsumexp, cum_seq_q,
 * cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed,
 * philox_offset, *, scale=None) */
int
ts_opf_overrideable_sdpa_backward(const ts_op_call *call,
                                  ts_op_result *out,
                                  ts_error *err)
{
    static const attn_args p = {1, true, 4, 12, 13, -1, -1, -1, -1, -1};
    return kernel_count(call, &p, true, out, err);
}

/* _flash_attention_forward(query, key, value, cum_seq_q, cum_seq_k, max_q,
 * max_k, dropout_p, is_causal, return_debug_mask, *, scale=None,
 * window_size_left=None, window_size_right=None, seqused_k=None,
 * alibi_slopes=None, ...) on (batch, seq, heads, dim) inputs; the
 * .quantized overload has q/k/v_descale before the keyword arguments. */
int
ts_opf_flash_attention_forward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err)
{
    static const attn_args p = {0, false, -1, 7, 8, -1, 11, 12, 14, 3};
    static const attn_args quantized = {0, false, -1, 7, 8, -1, 14, 15, 17, 3};
    return kernel_count(call,
                        overload_is(call, "quantized") ? &quantized : &p,
                        false,
                        out,
                        err);
}

/* _flash_attention_backward(grad_out, query, key, value, out, logsumexp,
 * cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, rng_state,
 * unused, *, scale=None, window_size_left=None, window_size_right=None) */
int
ts_opf_flash_attention_backward(const ts_op_call *call,
                                ts_op_result *out,
                                ts_error *err)
{
    static const attn_args p = {1, false, -1, 10, 11, -1, 15, 16, -1, 6};
    return kernel_count(call, &p, true, out, err);
}

/* _efficient_attention_forward(query, key, value, bias, cu_seqlens_q,
 * cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, custom_mask_type,
 * compute_log_sumexp=False, *, scale=None, seqlen_k=None,
 * window_size=None) on (batch, seq, heads, dim) inputs */
int
ts_opf_efficient_attention_forward(const ts_op_call *call,
                                   ts_op_result *out,
                                   ts_error *err)
{
    static const attn_args p = {0, false, 3, 8, -1, 9, 13, -1, -1, 4};
    return kernel_count(call, &p, false, out, err);
}

/* _efficient_attention_backward(grad_out_, query, key, value, bias, out,
 * cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, logsumexp,
 * dropout_p, philox_seed, philox_offset, custom_mask_type,
 * bias_requires_grad, *, scale=None, num_splits_key=None,
 * window_size=None, shared_storage_dqdkdv=False) */
int
ts_opf_efficient_attention_backward(const ts_op_call *call,
                                    ts_op_result *out,
                                    ts_error *err)
{
    static const attn_args p = {1, false, 4, 11, -1, 14, 18, -1, -1, 6};
    return kernel_count(call, &p, true, out, err);
}

/* ---- the fused transformer kernels ---------------------------------------
 * Dense batched self-attention of embed_dim E over L tokens and B batches,
 * H heads, counted as nn.MultiheadAttention's other path counts the same
 * call (F.multi_head_attention_forward: the path of meta tensors, of
 * training, and wherever the fast path does not apply), so that a model
 * counts the same whichever path runs:
 *  - the four E x E projections, 8BLE^2 (2 per multiply-add; their biases,
 *    like addmm's, are not counted), plus the input projection's bias adds,
 *    3BLE, when the other path runs them apart: F.linear on the transposed
 *    batch-first input, which is contiguous only when B or L is 1, is mm
 *    and add there (docs/methodology.md);
 *  - without returned weights, the attention by the convention above (the
 *    other path runs scaled_dot_product_attention): 4BL^2E +
 *    6*scores - 2*rows + scores*[mask];
 *  - with returned weights (need_weights), the arithmetic that path runs to
 *    return them: the query scaled before the product (BLE), the products
 *    (4BL^2E, the mask added inside baddbmm, which counts its product only),
 *    the softmax 5*scores - 2*rows, and one add per score for averaging the
 *    weights over heads. */
static int
mha_count(calc *c,
          const ts_shape *q,
          const ts_shape *k,
          const ts_shape *v,
          int64_t embed_dim,
          int64_t heads,
          bool mask,
          bool need_weights,
          bool averaged,
          ts_op_result *out,
          ts_error *err)
{
    int64_t b, l, e, ble, rows, scores, n, products;
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
    products =
        c_add(c, c_mul(c, c_mul(c, 8, ble), e), c_mul(c, c_mul(c, 4, ble), l));
    n = products;
    if (b > 1 && l > 1) {
        n = c_add(c, n, c_mul(c, 3, ble));
    }
    if (rows != 0 && l != 0) {
        n = c_add(c, n, c_sub(c, c_mul(c, 5, scores), c_mul(c, 2, rows)));
        if (need_weights) {
            n = c_add(c, n, ble);
            n = c_add(c, n, averaged ? scores : 0);
        }
        else {
            n = c_add(c, n, c_mul(c, scores, 1 + (mask ? 1 : 0)));
        }
    }
    out->flops = n;
    out->matrix_flops = products;
    return TS_OK;
}

/* _native_multi_head_attention(query, key, value, embed_dim, num_head,
 * qkv_weight, qkv_bias, proj_weight, proj_bias, mask, need_weights,
 * average_attn_weights, mask_type). */
int
ts_opf_native_mha(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    int64_t embed = 0, heads = 0;
    bool count, need_weights = flag_at(call, 10, true);
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
                       need_weights,
                       need_weights && flag_at(call, 11, true),
                       out,
                       err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return attn_finish(call, &c, out, err);
}

/* _transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight,
 * qkv_bias, proj_weight, proj_bias, use_gelu, norm_first, eps,
 * norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
 * ffn_bias_1, ffn_weight_2, ffn_bias_2, mask, mask_type): the attention
 * without returned weights (by the convention, as above), the two
 * feed-forward linears (4*hidden*E), the activation (ReLU 1 or exact GELU 5
 * per hidden element), two residual adds and two LayerNorms with affine
 * terms (18N + 4R). The mask sits at index 18: a call cut short before the
 * required arguments (ffn_bias_2, index 17) cannot tell whether a mask was
 * passed, so it is not counted. */
int
ts_opf_encoder_layer(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *src = tensor_at(call, 0);
    const ts_shape *ffn1 = tensor_at(call, 14);
    int64_t embed = 0, heads = 0, rows, hidden, ffn, flops;
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
                       false,
                       out,
                       err);
    }
    if (rc == TS_OK && (ffn1 == NULL || ffn1->ndim < 1)) {
        rc = ts_error_set(err,
                          TS_EUNSUPPORTED,
                          "_transformer_encoder_layer_fwd needs ffn_weight_1 "
                          "as a tensor.");
    }
    if (rc != TS_OK) {
        result_clear(out);
        return rc;
    }
    rows = c_mul(&c, src->dims[0], src->dims[1]);
    hidden = c_mul(&c, rows, ffn1->dims[0]);
    ffn = c_mul(&c, c_mul(&c, 4, hidden), embed);
    flops = c_add(&c, out->flops, ffn);
    flops = c_add(
        &c, flops, flag_at(call, 7, false) ? c_mul(&c, 5, hidden) : hidden);
    flops = c_add(&c, flops, c_mul(&c, 18, c_numel(&c, src)));
    out->flops = c_add(&c, flops, c_mul(&c, 4, rows));
    out->matrix_flops = c_add(&c, out->matrix_flops, ffn);
    return attn_finish(call, &c, out, err);
}
