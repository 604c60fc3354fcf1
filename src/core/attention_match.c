/* The math path of scaled_dot_product_attention grouped back into one
 * attention call (attention_match.h). A small state machine over the
 * counted calls, in the order the dispatcher ran them: it holds calls back
 * while they can still be the decomposition, and either records them as one
 * attention (the formula of aten.scaled_dot_product_attention) or, at the
 * first call that does not fit, as themselves. */
#include <stddef.h>
#include <string.h>

#include "torchscan/attention_match.h"

enum {
    IDLE = 0,  /* nothing held back */
    AFTER_Q,   /* q scaled; maybe the causal mask */
    AFTER_K,   /* k^T scaled */
    AFTER_QK,  /* scores = q @ k^T */
    AFTER_ADD, /* mask added */
    AFTER_SM,  /* probabilities; maybe dropout */
    BACKWARD,  /* the backward of a grouped forward (bw_steps) */
};

/* The backward's steps (bits of bw_steps). */
enum {
    BW_DV = 1u << 0,      /* bmm(p^T, dO) */
    BW_DP = 1u << 1,      /* bmm(dO, v^T) */
    BW_DROPOUT = 1u << 2, /* mul.Tensor(dP, mask) */
    BW_DS = 1u << 3,      /* _softmax_backward_data */
    BW_DKT = 1u << 4,     /* bmm(q^T, dS) */
    BW_DQ = 1u << 5,      /* bmm(dS, k) */
    BW_MK = 1u << 6,      /* mul.Scalar(dK^T, factor) */
    BW_MQ = 1u << 7,      /* mul.Scalar(dQ, factor) */
    BW_SUM_K = 1u << 8,   /* sum over the query heads of a key head */
    BW_SUM_V = 1u << 9,   /* and of a value head */
};

static const struct {
    const char *name;
    ts_attn_role role;
} roles[] = {
    {"aten._safe_softmax.default", TS_ATTN_ROLE_SOFTMAX},
    {"aten._softmax_backward_data.default", TS_ATTN_ROLE_SOFTMAX_BW},
    {"aten.add.Tensor", TS_ATTN_ROLE_ADD},
    {"aten.add_.Tensor", TS_ATTN_ROLE_ADD},
    {"aten.bmm.default", TS_ATTN_ROLE_BMM},
    {"aten.div_.Scalar", TS_ATTN_ROLE_DROPOUT_DIV},
    {"aten.mul.Scalar", TS_ATTN_ROLE_SCALE},
    {"aten.mul.Tensor", TS_ATTN_ROLE_DROPOUT_MUL},
    {"aten.sum.dim_IntList", TS_ATTN_ROLE_SUM},
    {"aten.tril.default", TS_ATTN_ROLE_TRIL},
    {"aten.where.self", TS_ATTN_ROLE_WHERE},
};

ts_attn_role
ts_attn_role_of(const char *overload_name)
{
    if (overload_name == NULL) {
        return TS_ATTN_ROLE_NONE;
    }
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        if (strcmp(overload_name, roles[i].name) == 0) {
            return roles[i].role;
        }
    }
    return TS_ATTN_ROLE_NONE;
}

void
ts_attn_matcher_init(ts_attn_matcher *m)
{
    memset(m, 0, sizeof *m);
}

/* Forgets the sequence being matched; the forwards awaiting their backward
 * stay. */
static void
reset_sequence(ts_attn_matcher *m)
{
    memset(m, 0, offsetof(ts_attn_matcher, nseen));
}

/* ---- recording ---------------------------------------------------------- */

/* Records `flops` under operator `id` for the call `at` stands for (its
 * layer, phase and the layer its phase is attributed to). */
static int
record_as(const ts_attn_sink *sink,
          int id,
          const ts_counted_call *at,
          int64_t flops)
{
    int rc = ts_opstats_record_in(sink->stats,
                                  at->phase,
                                  id,
                                  TS_OPCALL_COUNTED,
                                  flops,
                                  false,
                                  NULL,
                                  NULL);
    if (rc == TS_EOVERFLOW) {
        /* noted unsupported by the statistics; the layer is partial */
        if (sink->session != NULL) {
            ts_session_add_layer_op(sink->session, at->layer, 0, false);
            ts_session_add_phase_op(
                sink->session, at->phase_layer, at->phase, 0, false);
        }
        return TS_OK;
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (sink->session != NULL) {
        ts_session_add_layer_op(sink->session, at->layer, flops, true);
        ts_session_add_phase_op(
            sink->session, at->phase_layer, at->phase, flops, true);
    }
    return TS_OK;
}

static int
add_matrix(const ts_attn_sink *sink, const ts_counted_call *call)
{
    return call->matrix_flops >= 0 ? ts_opstats_add_matrix(
               sink->stats, call->id, call->matrix_flops)
                                   : TS_OK;
}

int
ts_attn_record(const ts_attn_sink *sink, const ts_counted_call *call)
{
    int rc = record_as(sink, call->id, call, call->flops);
    return rc == TS_OK ? add_matrix(sink, call) : rc;
}

int
ts_attn_flush(ts_attn_matcher *m, const ts_attn_sink *sink)
{
    int rc = TS_OK;
    for (int i = 0; i < m->npending && rc == TS_OK; i++) {
        rc = ts_attn_record(sink, &m->pending[i]);
    }
    reset_sequence(m);
    return rc;
}

int
ts_attn_record_kernel(ts_attn_matcher *m,
                      const ts_attn_sink *sink,
                      const ts_counted_call *call)
{
    int rc = ts_attn_flush(m, sink);
    if (rc == TS_OK) {
        rc = record_as(sink, sink->attention_id, call, call->flops);
    }
    return rc == TS_OK ? add_matrix(sink, call) : rc;
}

int
ts_attn_record_backward_kernel(ts_attn_matcher *m,
                               const ts_attn_sink *sink,
                               const ts_counted_call *call)
{
    int rc = ts_attn_flush(m, sink);
    if (rc == TS_OK) {
        rc = record_as(sink, sink->backward_id, call, call->flops);
    }
    return rc == TS_OK ? add_matrix(sink, call) : rc;
}

/* ---- matching ----------------------------------------------------------- */

static const ts_shape *
tensor_arg(const ts_op_call *c, int i)
{
    return i < c->nargs && i < TS_OP_MAX_ARGS
                   && c->args[i].kind == TS_ARG_TENSOR
               ? &c->args[i].tensor
               : NULL;
}

static bool
scalar_arg(const ts_op_call *c, int i)
{
    return i < c->nargs && i < TS_OP_MAX_ARGS
           && (c->args[i].kind == TS_ARG_REAL
               || c->args[i].kind == TS_ARG_INT);
}

static double
scalar_value(const ts_op_call *c, int i)
{
    return c->args[i].kind == TS_ARG_REAL ? c->args[i].r
                                          : (double)c->args[i].i;
}

/* s == (*lead, x, y) */
static bool
is_lead_2(const ts_attn_matcher *m, const ts_shape *s, int64_t x, int64_t y)
{
    if (s == NULL || s->ndim != m->nlead + 2 || s->dims[m->nlead] != x
        || s->dims[m->nlead + 1] != y) {
        return false;
    }
    for (int i = 0; i < m->nlead; i++) {
        if (s->dims[i] != m->lead[i]) {
            return false;
        }
    }
    return true;
}

/* s == (batch, x, y), a bmm operand of the flattened batch */
static bool
is_batch_2(const ts_attn_matcher *m, const ts_shape *s, int64_t x, int64_t y)
{
    return s != NULL && s->ndim == 3 && s->dims[0] == m->batch
           && s->dims[1] == x && s->dims[2] == y;
}

/* mul.Scalar(q, scale) with q of rank >= 3: a possible start. */
static bool
start(ts_attn_matcher *m, const ts_op_call *args)
{
    const ts_shape *q = tensor_arg(args, 0);
    if (q == NULL || q->ndim < 3 || q->ndim > TS_MAX_DIMS
        || !scalar_arg(args, 1)) {
        return false;
    }
    reset_sequence(m);
    m->nlead = q->ndim - 2;
    m->factor = scalar_value(args, 1);
    m->batch = 1;
    for (int i = 0; i < m->nlead; i++) {
        m->lead[i] = q->dims[i];
        if (!ts_mul(m->batch, q->dims[i], &m->batch)) {
            return false;
        }
    }
    m->t = q->dims[m->nlead];
    m->dq = q->dims[m->nlead + 1];
    m->state = AFTER_Q;
    return true;
}

/* _safe_softmax(scores, -1) after the product (and the mask): AFTER_SM,
 * or -1. A causal mask must have been added. */
static int
softmax_next(const ts_attn_matcher *m,
             ts_attn_role role,
             const ts_op_call *args)
{
    const ts_shape *a = tensor_arg(args, 0);
    if (role == TS_ATTN_ROLE_SOFTMAX && is_lead_2(m, a, m->t, m->s)
        && (!m->causal_tril || m->masked) && args->nargs >= 2
        && args->args[1].kind == TS_ARG_INT
        && (args->args[1].i == -1 || args->args[1].i == m->nlead + 1)) {
        return AFTER_SM;
    }
    return -1;
}

/* The next state when `role`/`args` continue the sequence, or -1. */
static int
advance(ts_attn_matcher *m, ts_attn_role role, const ts_op_call *args)
{
    const ts_shape *a = tensor_arg(args, 0), *b = tensor_arg(args, 1);
    const ts_shape *out = args->nouts > 0 ? &args->outs[0] : NULL;
    switch (m->state) {
        case AFTER_Q:
            if (role == TS_ATTN_ROLE_TRIL && !m->causal_tril && a != NULL
                && a->ndim == 2 && a->dims[0] == m->t) {
                m->causal_tril = true;
                m->causal_s = a->dims[1];
                return AFTER_Q;
            }
            if (role == TS_ATTN_ROLE_WHERE && m->causal_tril && out != NULL
                && out->ndim == 2 && out->dims[0] == m->t
                && out->dims[1] == m->causal_s) {
                return AFTER_Q;
            }
            if (role == TS_ATTN_ROLE_SCALE && scalar_arg(args, 1) && a != NULL
                && a->ndim == m->nlead + 2
                && is_lead_2(m, a, m->dq, a->dims[m->nlead + 1])
                && (!m->causal_tril || a->dims[m->nlead + 1] == m->causal_s)) {
                m->s = a->dims[m->nlead + 1];
                return AFTER_K;
            }
            return -1;
        case AFTER_K:
            return role == TS_ATTN_ROLE_BMM && is_batch_2(m, a, m->t, m->dq)
                           && is_batch_2(m, b, m->dq, m->s)
                       ? AFTER_QK
                       : -1;
        case AFTER_QK:
            if (role == TS_ATTN_ROLE_ADD && out != NULL
                && is_lead_2(m, out, m->t, m->s)) {
                m->masked = true;
                return AFTER_ADD;
            }
            return softmax_next(m, role, args);
        case AFTER_ADD:
            return softmax_next(m, role, args);
        case AFTER_SM:
            if (role == TS_ATTN_ROLE_DROPOUT_DIV && !m->dropout_div
                && scalar_arg(args, 1) && is_lead_2(m, a, m->t, m->s)) {
                m->dropout_div = true;
                return AFTER_SM;
            }
            if (role == TS_ATTN_ROLE_DROPOUT_MUL && m->dropout_div
                && !m->dropout && is_lead_2(m, a, m->t, m->s)
                && is_lead_2(m, b, m->t, m->s)) {
                m->dropout = true;
                return AFTER_SM;
            }
            return -1;
        default:
            return -1;
    }
}

/* bmm(p, v) after the softmax: the call that completes the attention. */
static bool
completes(const ts_attn_matcher *m, ts_attn_role role, const ts_op_call *args)
{
    const ts_shape *a = tensor_arg(args, 0), *b = tensor_arg(args, 1);
    return m->state == AFTER_SM && role == TS_ATTN_ROLE_BMM
           && (m->dropout_div == m->dropout) && is_batch_2(m, a, m->t, m->s)
           && b != NULL && b->ndim == 3 && b->dims[0] == m->batch
           && b->dims[1] == m->s;
}

/* The attention by the formula of aten.scaled_dot_product_attention on the
 * shapes the sequence gave: q (*lead, T, Dq), k (*lead, S, Dq),
 * v (*lead, S, Dv), a mask when one was added, dropout when it ran. */
static int
attention_flops(const ts_attn_matcher *m, int64_t dv, int64_t *flops)
{
    const ts_op_entry *e = ts_op_lookup("aten.scaled_dot_product_attention");
    ts_op_call c;
    ts_op_result r;
    ts_error err;
    if (e == NULL || e->formula == NULL) {
        return TS_EINVAL;
    }
    memset(&c, 0, sizeof c);
    c.nargs = 6;
    for (int i = 0; i < 3; i++) {
        ts_shape *s = &c.args[i].tensor;
        c.args[i].kind = TS_ARG_TENSOR;
        s->ndim = m->nlead + 2;
        s->dense = true;
        s->dtype = TS_DTYPE_FLOAT;
        memcpy(s->dims, m->lead, (size_t)m->nlead * sizeof(int64_t));
        s->dims[m->nlead] = i == 0 ? m->t : m->s;
        s->dims[m->nlead + 1] = i == 2 ? dv : m->dq;
    }
    c.args[3].kind = TS_ARG_NONE;
    if (m->masked) {
        c.args[3].kind = TS_ARG_TENSOR;
        c.args[3].tensor.ndim = 2;
        c.args[3].tensor.dense = true;
        c.args[3].tensor.dtype = TS_DTYPE_FLOAT;
        c.args[3].tensor.dims[0] = m->t;
        c.args[3].tensor.dims[1] = m->s;
    }
    c.args[4].kind = TS_ARG_REAL;
    c.args[4].r = m->dropout ? 0.5 : 0.0;
    c.args[5].kind = TS_ARG_BOOL;
    ts_error_clear(&err);
    int rc = e->formula(&c, &r, &err);
    *flops = r.flops;
    return rc;
}

/* ---- the backward of a grouped forward --------------------------------- */

static bool
same_seen(const ts_attn_seen *e, const ts_attn_matcher *m, int64_t dv)
{
    if (e->nlead != m->nlead || e->t != m->t || e->s != m->s || e->dq != m->dq
        || e->dv != dv || e->factor != m->factor || e->masked != m->masked
        || e->dropout != m->dropout) {
        return false;
    }
    for (int i = 0; i < m->nlead; i++) {
        if (e->lead[i] != m->lead[i]) {
            return false;
        }
    }
    return true;
}

/* Remembers a grouped forward until its backward: one more of its shapes
 * (a table of the distinct ones; when it is full, this forward's backward
 * is counted operator by operator). */
static void
remember(ts_attn_matcher *m, int64_t dv)
{
    ts_attn_seen *e;
    for (int i = 0; i < m->nseen; i++) {
        if (same_seen(&m->seen[i], m, dv)) {
            m->seen[i].count++;
            return;
        }
    }
    if (m->nseen == TS_ATTN_MAX_SEEN) {
        return;
    }
    e = &m->seen[m->nseen++];
    memset(e, 0, sizeof *e);
    e->nlead = m->nlead;
    memcpy(e->lead, m->lead, sizeof e->lead);
    e->batch = m->batch;
    e->t = m->t;
    e->s = m->s;
    e->dq = m->dq;
    e->dv = dv;
    e->factor = m->factor;
    e->masked = m->masked;
    e->dropout = m->dropout;
    e->count = 1;
}

static bool
batch_3(const ts_shape *x, int64_t batch, int64_t a, int64_t b)
{
    return x != NULL && x->ndim == 3 && x->dims[0] == batch && x->dims[1] == a
           && x->dims[2] == b;
}

static bool
lead_2(const ts_attn_seen *e, const ts_shape *x, int64_t a, int64_t b)
{
    if (x == NULL || x->ndim != e->nlead + 2 || x->dims[e->nlead] != a
        || x->dims[e->nlead + 1] != b) {
        return false;
    }
    for (int i = 0; i < e->nlead; i++) {
        if (x->dims[i] != e->lead[i]) {
            return false;
        }
    }
    return true;
}

/* The step of a backward of `e` that `role`/`args` would be, given the
 * steps seen; 0 when it is none. */
static unsigned
bw_step(const ts_attn_seen *e,
        unsigned seen,
        ts_attn_role role,
        const ts_op_call *args)
{
    const ts_shape *a = tensor_arg(args, 0), *b = tensor_arg(args, 1);
    bool products_in = (seen & (BW_DV | BW_DP)) == (BW_DV | BW_DP);
    bool ds = (seen & BW_DS) != 0;
    bool grads = (seen & (BW_DKT | BW_DQ)) == (BW_DKT | BW_DQ);
    switch (role) {
        case TS_ATTN_ROLE_BMM:
            if (!ds) {
                if (!(seen & BW_DV) && batch_3(a, e->batch, e->s, e->t)
                    && batch_3(b, e->batch, e->t, e->dv)) {
                    return BW_DV;
                }
                if (!(seen & BW_DP) && batch_3(a, e->batch, e->t, e->dv)
                    && batch_3(b, e->batch, e->dv, e->s)) {
                    return BW_DP;
                }
                return 0;
            }
            if (!(seen & BW_DKT) && batch_3(a, e->batch, e->dq, e->t)
                && batch_3(b, e->batch, e->t, e->s)) {
                return BW_DKT;
            }
            if (!(seen & BW_DQ) && batch_3(a, e->batch, e->t, e->s)
                && batch_3(b, e->batch, e->s, e->dq)) {
                return BW_DQ;
            }
            return 0;
        case TS_ATTN_ROLE_DROPOUT_MUL:
            return e->dropout && products_in && !ds && !(seen & BW_DROPOUT)
                           && lead_2(e, a, e->t, e->s)
                           && lead_2(e, b, e->t, e->s)
                       ? BW_DROPOUT
                       : 0;
        case TS_ATTN_ROLE_SOFTMAX_BW:
            return products_in && !ds
                           && (!e->dropout || (seen & BW_DROPOUT) != 0)
                           && lead_2(e, a, e->t, e->s)
                           && lead_2(e, b, e->t, e->s) && args->nargs >= 3
                           && args->args[2].kind == TS_ARG_INT
                           && (args->args[2].i == -1
                               || args->args[2].i == e->nlead + 1)
                       ? BW_DS
                       : 0;
        case TS_ATTN_ROLE_SCALE:
            if (!grads || !scalar_arg(args, 1)
                || scalar_value(args, 1) != e->factor) {
                return 0;
            }
            if (!(seen & BW_MK) && lead_2(e, a, e->dq, e->s)) {
                return BW_MK;
            }
            return !(seen & BW_MQ) && lead_2(e, a, e->t, e->dq) ? BW_MQ : 0;
        default:
            return 0;
    }
}

/* A sum of a grouped-query call's key or value gradient over the query
 * heads of each key/value head: sum((B, Hk, G, S, D), [2], keepdim) with
 * Hk * G = Hq. The key/value heads into *hk, or 0 when it is not one. */
static unsigned
bw_group_sum(const ts_attn_seen *e,
             unsigned seen,
             const ts_op_call *args,
             int64_t *hk)
{
    const ts_shape *a = tensor_arg(args, 0);
    const ts_op_arg *dims = args->nargs >= 2 ? &args->args[1] : NULL;
    unsigned step;
    if (!(seen & BW_DS) || e->nlead != 2 || a == NULL || a->ndim != 5
        || dims == NULL || dims->kind != TS_ARG_INTS || dims->nints != 1
        || dims->ints[0] != 2 || a->dims[0] != e->lead[0]
        || a->dims[1] * a->dims[2] != e->lead[1] || a->dims[2] < 2
        || a->dims[3] != e->s || (*hk != 0 && *hk != a->dims[1])) {
        return 0;
    }
    step = a->dims[4] == e->dq && !(seen & BW_SUM_K)   ? BW_SUM_K
           : a->dims[4] == e->dv && !(seen & BW_SUM_V) ? BW_SUM_V
                                                       : 0;
    if (step != 0) {
        *hk = a->dims[1];
    }
    return step;
}

/* The forward whose backward `role`/`args` may start, or -1. */
static int
bw_start(const ts_attn_matcher *m, ts_attn_role role, const ts_op_call *args)
{
    if (role != TS_ATTN_ROLE_BMM) {
        return -1;
    }
    for (int i = 0; i < m->nseen; i++) {
        if (m->seen[i].count > 0 && bw_step(&m->seen[i], 0, role, args) != 0) {
            return i;
        }
    }
    return -1;
}

/* The convention's backward (the formula of the CPU kernel's backward
 * packet) for the shapes of `e`, with hk key/value heads. */
static int
backward_flops(const ts_attn_seen *e, int64_t hk, int64_t *flops)
{
    const ts_op_entry *entry = ts_op_lookup(
        "aten._scaled_dot_product_flash_attention_for_cpu_backward");
    int64_t b = 1, hq = e->lead[e->nlead - 1];
    ts_op_call c;
    ts_op_result r;
    ts_error err;
    int rc;
    if (entry == NULL || entry->formula == NULL) {
        return TS_EINVAL;
    }
    for (int i = 0; i + 1 < e->nlead; i++) {
        if (!ts_mul(b, e->lead[i], &b)) {
            return TS_EOVERFLOW;
        }
    }
    if (e->nlead == 1) {
        b = e->lead[0];
        hq = 1;
    }
    memset(&c, 0, sizeof c);
    c.nargs = 10;
    /* grad_out, query, key, value, out: (B, H, L, D) */
    for (int i = 0; i < 5; i++) {
        ts_shape *x = &c.args[i].tensor;
        bool kv = i == 2 || i == 3;
        c.args[i].kind = TS_ARG_TENSOR;
        x->ndim = 4;
        x->dense = true;
        x->dtype = TS_DTYPE_FLOAT;
        x->dims[0] = b;
        x->dims[1] = kv && hk > 0 ? hk : hq;
        x->dims[2] = kv ? e->s : e->t;
        x->dims[3] = i == 1 || i == 2 ? e->dq : e->dv;
    }
    c.args[5].kind = TS_ARG_NONE; /* logsumexp */
    c.args[6].kind = TS_ARG_REAL;
    c.args[6].r = e->dropout ? 0.5 : 0.0;
    c.args[7].kind = TS_ARG_BOOL;
    c.args[8].kind = TS_ARG_NONE;
    if (e->masked) {
        c.args[8].kind = TS_ARG_TENSOR;
        c.args[8].tensor.ndim = 2;
        c.args[8].tensor.dense = true;
        c.args[8].tensor.dtype = TS_DTYPE_FLOAT;
        c.args[8].tensor.dims[0] = e->t;
        c.args[8].tensor.dims[1] = e->s;
    }
    c.args[9].kind = TS_ARG_NONE;
    ts_error_clear(&err);
    rc = entry->formula(&c, &r, &err);
    *flops = r.flops;
    return rc != TS_OK ? rc : r.incomplete ? TS_EINVAL : TS_OK;
}

/* Records the backward held back as one call of the attention's backward,
 * `call` last. */
static int
bw_complete(ts_attn_matcher *m,
            const ts_attn_sink *sink,
            const ts_counted_call *call)
{
    ts_attn_seen *e = &m->seen[m->bw_seen];
    int64_t flops = 0;
    ts_counted_call first = m->pending[0];
    int rc = backward_flops(e, m->bw_hk, &flops);
    if (rc != TS_OK) {
        /* no convention for these shapes: as themselves */
        rc = ts_attn_flush(m, sink);
        return rc == TS_OK ? ts_attn_record(sink, call) : rc;
    }
    rc = record_as(sink, sink->backward_id, &first, flops);
    for (int i = 0; i < m->npending && rc == TS_OK; i++) {
        rc = add_matrix(sink, &m->pending[i]);
    }
    if (rc == TS_OK) {
        rc = add_matrix(sink, call);
    }
    e->count--;
    reset_sequence(m);
    return rc;
}

/* Feeds one call to the backward being matched: held back (TS_OK and
 * *taken), recorded with the calls held back as one backward (the last
 * step), or not taken (*taken false: the caller flushes). */
static int
bw_feed(ts_attn_matcher *m,
        const ts_attn_sink *sink,
        ts_attn_role role,
        const ts_op_call *args,
        const ts_counted_call *call,
        bool *taken)
{
    const ts_attn_seen *e = &m->seen[m->bw_seen];
    int64_t hk = m->bw_hk;
    unsigned step = role == TS_ATTN_ROLE_SUM
                        ? bw_group_sum(e, m->bw_steps, args, &hk)
                        : bw_step(e, m->bw_steps, role, args);
    unsigned done = BW_DV | BW_DP | BW_DS | BW_DKT | BW_DQ | BW_MK | BW_MQ;
    *taken = false;
    if (step == 0 || call->layer != m->pending[0].layer
        || call->phase != m->pending[0].phase
        || m->npending == TS_ATTN_MAX_PENDING) {
        return TS_OK;
    }
    *taken = true;
    m->bw_steps |= step;
    m->bw_hk = hk;
    if ((m->bw_steps & done) == done) {
        return bw_complete(m, sink, call);
    }
    m->pending[m->npending++] = *call;
    return TS_OK;
}

static int
complete(ts_attn_matcher *m,
         const ts_attn_sink *sink,
         const ts_op_call *args,
         const ts_counted_call *call)
{
    int64_t flops = 0;
    ts_counted_call first = m->pending[0];
    int rc = attention_flops(m, tensor_arg(args, 1)->dims[2], &flops);
    if (rc != TS_OK) {
        /* no convention for these shapes (an overflow): as themselves */
        rc = ts_attn_flush(m, sink);
        return rc == TS_OK ? ts_attn_record(sink, call) : rc;
    }
    rc = record_as(sink, sink->attention_id, &first, flops);
    for (int i = 0; i < m->npending && rc == TS_OK; i++) {
        rc = add_matrix(sink, &m->pending[i]);
    }
    if (rc == TS_OK) {
        rc = add_matrix(sink, call);
    }
    remember(m, tensor_arg(args, 1)->dims[2]);
    reset_sequence(m);
    return rc;
}

static void
hold(ts_attn_matcher *m, const ts_counted_call *call)
{
    m->pending[m->npending++] = *call;
}

int
ts_attn_feed(ts_attn_matcher *m,
             const ts_attn_sink *sink,
             ts_attn_role role,
             const ts_op_call *args,
             const ts_counted_call *call)
{
    int next, rc, seen;
    if (m->state == BACKWARD) {
        bool taken;
        rc = bw_feed(m, sink, role, args, call, &taken);
        if (rc != TS_OK || taken) {
            return rc;
        }
        /* not this backward after all: what was held back, as itself */
        rc = ts_attn_flush(m, sink);
        if (rc != TS_OK) {
            return rc;
        }
    }
    else if (m->state != IDLE) {
        bool same_layer = call->layer == m->pending[0].layer
                          && call->phase == m->pending[0].phase;
        if (same_layer && completes(m, role, args)) {
            return complete(m, sink, args, call);
        }
        next = same_layer && m->npending < TS_ATTN_MAX_PENDING
                   ? advance(m, role, args)
                   : -1;
        if (next >= 0) {
            m->state = next;
            hold(m, call);
            return TS_OK;
        }
        /* not the math path after all: what was held back, as itself */
        rc = ts_attn_flush(m, sink);
        if (rc != TS_OK) {
            return rc;
        }
    }
    if (role == TS_ATTN_ROLE_SCALE && start(m, args)) {
        hold(m, call);
        return TS_OK;
    }
    seen = bw_start(m, role, args);
    if (seen >= 0) {
        m->state = BACKWARD;
        m->bw_seen = seen;
        m->bw_steps = bw_step(&m->seen[seen], 0, role, args);
        m->bw_hk = 0;
        hold(m, call);
        return TS_OK;
    }
    return ts_attn_record(sink, call);
}
