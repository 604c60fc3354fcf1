/* One attention call, whichever kernel ran: the operator counter's grouping
 * of scaled_dot_product_attention's math decomposition.
 *
 * torch.nn.functional.scaled_dot_product_attention is a composite operator:
 * a dispatch mode never sees the call itself (except under inference_mode),
 * only what it decomposed into. On CPU and CUDA that is one fused kernel,
 * counted by the attention convention (op_formulas_attention.c) and listed
 * as aten.scaled_dot_product_attention; on meta tensors, and wherever no
 * fused kernel applies (dropout on CPU, unequal query and value widths,
 * 3-D inputs), it is the math path:
 *
 *   mul.Scalar(q, sqrt(scale))              [tril, where: a causal mask]
 *   mul.Scalar(k^T, sqrt(scale))            (after grouped-query expansion)
 *   bmm(q, k^T)                             [add: the mask]
 *   _safe_softmax(scores, -1)               [div_.Scalar, mul.Tensor: dropout]
 *   bmm(p, v)
 *
 * which does different arithmetic for the same attention. The matcher below
 * holds back the counted calls of such a sequence while it matches, and
 * when the second product completes it, records them as one call of
 * aten.scaled_dot_product_attention counted by the convention (the
 * formula of that packet, on the shapes the sequence gave), so that the
 * call counts the same on CPU, CUDA and meta. The products keep their own
 * operator's entry in matrix_product_flops (aten.bmm), which is what
 * FlopCounterMode counts for them. A sequence that stops matching is
 * recorded call by call, exactly as without the matcher; only
 * _safe_softmax's decomposition, which nothing but this path emits, is
 * recognised (eager attention code that calls softmax is not an SDPA call
 * and is counted operator by operator).
 *
 * The backward of a grouped forward runs, in the order autograd gives it
 * (the nodes of one SDPA call are newer than those of its inputs), the
 * gradients from the saved probabilities:
 *
 *   bmm(p^T, dO), bmm(dO, v^T)              dV, dP (either order)
 *   [mul.Tensor(dP, mask): dropout]
 *   _softmax_backward_data(dP, p, -1)       dS
 *   bmm(q^T, dS), bmm(dS, k)                dK^T, dQ (either order)
 *   mul.Scalar(dK^T, sqrt(scale))           [sum.dim_IntList: dK, dV of a
 *   mul.Scalar(dQ, sqrt(scale))              grouped-query call]
 *
 * The matcher holds such a sequence back when its shapes and scale are
 * those of a forward it grouped, and records it as one backward of the
 * attention, counted by the convention's backward (the formula of the CPU
 * kernel's backward packet) and listed, as every fused backward kernel, as
 * aten.scaled_dot_product_attention_backward: a training step counts the
 * same whichever path ran. The products keep their aten.bmm entries in
 * matrix_product_flops.
 */
#ifndef TORCHSCAN_ATTENTION_MATCH_H
#define TORCHSCAN_ATTENTION_MATCH_H

#include "torchscan/op_formulas.h"
#include "torchscan/opstats.h"
#include "torchscan/phase.h"
#include "torchscan/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an operator overload can be in the math path. */
typedef enum {
    TS_ATTN_ROLE_NONE = 0,
    TS_ATTN_ROLE_SCALE,       /* aten.mul.Scalar */
    TS_ATTN_ROLE_TRIL,        /* aten.tril.default */
    TS_ATTN_ROLE_WHERE,       /* aten.where.self */
    TS_ATTN_ROLE_BMM,         /* aten.bmm.default */
    TS_ATTN_ROLE_ADD,         /* aten.add.Tensor, aten.add_.Tensor */
    TS_ATTN_ROLE_SOFTMAX,     /* aten._safe_softmax.default */
    TS_ATTN_ROLE_DROPOUT_DIV, /* aten.div_.Scalar */
    TS_ATTN_ROLE_DROPOUT_MUL, /* aten.mul.Tensor */
    TS_ATTN_ROLE_SOFTMAX_BW,  /* aten._softmax_backward_data.default */
    TS_ATTN_ROLE_SUM,         /* aten.sum.dim_IntList */
} ts_attn_role;

/* The role of an overload by its full name ("aten.mul.Scalar"); NONE for
 * NULL or any other name. */
ts_attn_role ts_attn_role_of(const char *overload_name);

/* One counted call, as the counter would record it. */
typedef struct ts_counted_call {
    int id;               /* opstats id of its packet */
    int layer;            /* session layer it is attributed to, or -1 */
    ts_phase phase;       /* its phase (phase.h) */
    int phase_layer;      /* the layer its phase attributes it to
                             (ts_session_add_phase_op), or -1 */
    int64_t flops;        /* its formula's count (complete) */
    int64_t matrix_flops; /* its matrix products, or -1 when its packet
                             lists none (not TS_OPF_MATRIX) */
} ts_counted_call;

/* Where calls are recorded: the statistics, the layers (NULL when no crawl
 * observes the calls), and the ids in `stats` (ts_opstats_intern) of
 * aten.scaled_dot_product_attention and of the name every SDPA backward is
 * listed under, aten.scaled_dot_product_attention_backward. All
 * borrowed. */
typedef struct ts_attn_sink {
    ts_opstats *stats;
    ts_session *session;
    int attention_id;
    int backward_id;
} ts_attn_sink;

#define TS_ATTN_MAX_PENDING 16
#define TS_ATTN_MAX_SEEN 32

/* A math-path attention whose forward was grouped, remembered until its
 * backward (same shapes, same scale factor) is grouped in turn. */
typedef struct ts_attn_seen {
    int nlead;
    int64_t lead[TS_MAX_DIMS];
    int64_t batch, t, s, dq, dv;
    double factor; /* the square root of the scale, applied to q and k */
    bool masked, dropout;
    int count; /* forwards not yet matched by a backward */
} ts_attn_seen;

/* The matcher's state: a caller-owned struct, zeroed by
 * ts_attn_matcher_init; nothing to free. */
typedef struct ts_attn_matcher {
    int state;
    int npending;
    ts_counted_call pending[TS_ATTN_MAX_PENDING];
    /* the forward sequence being matched */
    int nlead;                  /* query dims before (T, Dq) */
    int64_t lead[TS_MAX_DIMS];  /* those dims */
    int64_t batch;              /* their product: the bmm batch */
    int64_t t, s, dq, causal_s; /* queries, keys, width, causal mask's S */
    double factor;              /* q's scale factor */
    bool causal_tril, masked, dropout_div, dropout;
    /* the backward sequence being matched: its forward (in seen), the
     * steps seen (bits), the key/value heads its group sums gave */
    int bw_seen;
    unsigned bw_steps;
    int64_t bw_hk;
    /* the grouped forwards awaiting their backward (kept by flushes) */
    int nseen;
    ts_attn_seen seen[TS_ATTN_MAX_SEEN];
} ts_attn_matcher;

void ts_attn_matcher_init(ts_attn_matcher *m);

/* Records `call` (with arguments `args`, role `role`) in `sink`, now or
 * later: a call that may belong to the math path is held back; one that
 * completes it is recorded with the calls held back as one attention; one
 * that breaks it is recorded after the calls held back, each as itself.
 * Only complete counts of built-in formulas may be fed (others: flush
 * first, then record them). TS_OK, or the first error of
 * ts_opstats_record / ts_opstats_add_matrix (TS_ENOMEM, TS_EINVAL); a sum
 * that would overflow is recorded as ts_opstats_record does (the call is
 * noted unsupported, its layer partial) and is not an error. */
int ts_attn_feed(ts_attn_matcher *m,
                 const ts_attn_sink *sink,
                 ts_attn_role role,
                 const ts_op_call *args,
                 const ts_counted_call *call);

/* Records the calls held back, each as itself, and resets the sequence
 * being matched (before a call that is not fed, before the statistics or
 * layers are read, and when the sink changes); the forwards awaiting their
 * backward are kept. Same statuses as ts_attn_feed. */
int ts_attn_flush(ts_attn_matcher *m, const ts_attn_sink *sink);

/* Records one call as itself (what the counter does for calls it does not
 * feed). Same statuses as ts_attn_feed. */
int ts_attn_record(const ts_attn_sink *sink, const ts_counted_call *call);

/* Records a forward attention kernel's call (TS_OPF_SDPA_FORWARD) as the
 * attention it computes: its flops under sink->attention_id, its matrix
 * products under its own id. Flushes the matcher first. Same statuses as
 * ts_attn_feed. */
int ts_attn_record_kernel(ts_attn_matcher *m,
                          const ts_attn_sink *sink,
                          const ts_counted_call *call);

/* Records a backward attention kernel's call (TS_OPF_SDPA_BACKWARD) under
 * sink->backward_id, its matrix products under its own id. Flushes the
 * matcher first. Same statuses as ts_attn_feed. */
int ts_attn_record_backward_kernel(ts_attn_matcher *m,
                                   const ts_attn_sink *sink,
                                   const ts_counted_call *call);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_ATTENTION_MATCH_H */
