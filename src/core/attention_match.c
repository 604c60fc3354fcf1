/* The math path of scaled_dot_product_attention grouped back into one
 * attention call (attention_match.h). A small state machine over the
 * counted calls, in the order the dispatcher ran them: it holds calls back
 * while they can still be the decomposition, and either records them as one
 * attention (the formula of aten.scaled_dot_product_attention) or, at the
 * first call that does not fit, as themselves. */
#include <string.h>

#include "torchscan/attention_match.h"

enum {
    IDLE = 0,  /* nothing held back */
    AFTER_Q,   /* q scaled; maybe the causal mask */
    AFTER_K,   /* k^T scaled */
    AFTER_QK,  /* scores = q @ k^T */
    AFTER_ADD, /* mask added */
    AFTER_SM,  /* probabilities; maybe dropout */
};

static const struct {
    const char *name;
    ts_attn_role role;
} roles[] = {
    {"aten._safe_softmax.default", TS_ATTN_ROLE_SOFTMAX},
    {"aten.add.Tensor", TS_ATTN_ROLE_ADD},
    {"aten.add_.Tensor", TS_ATTN_ROLE_ADD},
    {"aten.bmm.default", TS_ATTN_ROLE_BMM},
    {"aten.div_.Scalar", TS_ATTN_ROLE_DROPOUT_DIV},
    {"aten.mul.Scalar", TS_ATTN_ROLE_SCALE},
    {"aten.mul.Tensor", TS_ATTN_ROLE_DROPOUT_MUL},
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

/* ---- recording ---------------------------------------------------------- */

static int
record_as(const ts_attn_sink *sink, int id, int layer, int64_t flops)
{
    int rc = ts_opstats_record(
        sink->stats, id, TS_OPCALL_COUNTED, flops, false, NULL, NULL);
    if (rc == TS_EOVERFLOW) {
        /* noted unsupported by the statistics; the layer is partial */
        if (sink->session != NULL) {
            ts_session_add_layer_op(sink->session, layer, 0, false);
        }
        return TS_OK;
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (sink->session != NULL) {
        ts_session_add_layer_op(sink->session, layer, flops, true);
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
    int rc = record_as(sink, call->id, call->layer, call->flops);
    return rc == TS_OK ? add_matrix(sink, call) : rc;
}

int
ts_attn_flush(ts_attn_matcher *m, const ts_attn_sink *sink)
{
    int rc = TS_OK;
    for (int i = 0; i < m->npending && rc == TS_OK; i++) {
        rc = ts_attn_record(sink, &m->pending[i]);
    }
    ts_attn_matcher_init(m);
    return rc;
}

int
ts_attn_record_kernel(ts_attn_matcher *m,
                      const ts_attn_sink *sink,
                      const ts_counted_call *call)
{
    int rc = ts_attn_flush(m, sink);
    if (rc == TS_OK) {
        rc = record_as(sink, sink->attention_id, call->layer, call->flops);
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
    ts_attn_matcher_init(m);
    m->nlead = q->ndim - 2;
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

static int
complete(ts_attn_matcher *m,
         const ts_attn_sink *sink,
         const ts_op_call *args,
         const ts_counted_call *call)
{
    int64_t flops = 0;
    int layer = m->pending[0].layer;
    int rc = attention_flops(m, tensor_arg(args, 1)->dims[2], &flops);
    if (rc != TS_OK) {
        /* no convention for these shapes (an overflow): as themselves */
        rc = ts_attn_flush(m, sink);
        return rc == TS_OK ? ts_attn_record(sink, call) : rc;
    }
    rc = record_as(sink, sink->attention_id, layer, flops);
    for (int i = 0; i < m->npending && rc == TS_OK; i++) {
        rc = add_matrix(sink, &m->pending[i]);
    }
    if (rc == TS_OK) {
        rc = add_matrix(sink, call);
    }
    ts_attn_matcher_init(m);
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
    int next, rc;
    if (m->state != IDLE) {
        bool same_layer = call->layer == m->pending[0].layer;
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
    return ts_attn_record(sink, call);
}
