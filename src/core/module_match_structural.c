/* The structural signatures of the block matcher
 * (module_match_internal.h): attention cores, rotary tables, pointwise
 * chains, Mixture-of-Experts routers and expert banks, counted by one rule
 * (products by the module convention, attention cores by
 * MultiheadAttention's terms, every other operator as torchscan_flops_v1
 * counts it). */
#include "module_match_internal.h"

/* ---- structural signatures: one counting rule --------------------------- */

/* One attention core by MultiheadAttention's terms (docs/module-formulas.md):
 * R = rows (batch * heads * target length), S source length, D the q/k
 * width, Dv the v width; `scaled` when a scale other than 1 applies;
 * `masks` applied to the scores, reading `mask_elements`. */
typedef struct core_shape {
    int64_t rows, s, d, dv;
    int64_t q, k, v, out; /* elements */
    int masks;
    int64_t mask_elements;
    bool scaled;
    bool child_softmax; /* a child module (nn.Softmax) normalizes: its own
                           row counts the softmax */
} core_shape;

static void
add_core(calc *c, const core_shape *a, tally *t)
{
    int64_t scores = c_mul(c, a->rows, a->s);
    int64_t f = 0;
    if (a->scaled) {
        f = c_mul(c, a->rows, a->d); /* the query scale */
    }
    if (a->s > 0) {
        f = c_add(c, f, c_mul(c, scores, 2 * a->d - 1)); /* QK^T */
        f = c_add(c, f, c_mul(c, scores, a->masks));     /* masks */
        if (!a->child_softmax) {
            f = c_add(c, f, c_mul(c, a->rows, 5 * a->s - 2)); /* softmax */
        }
        f = c_add(c, f, c_mul(c, c_mul(c, a->rows, a->dv), 2 * a->s - 1));
    }
    t->flops = c_add(c, t->flops, f);
    t->macs = c_add(c, t->macs, c_mul(c, scores, a->d + a->dv));
    /* q, k, v and the masks read, the output written; the scores written
     * by QK^T, read and written by the softmax (unless a child's), read by
     * weights x V */
    t->dmas = c_add(c, t->dmas, a->q + a->k + a->v + a->out);
    t->dmas = c_add(
        c,
        t->dmas,
        c_add(
            c, a->mask_elements, c_mul(c, a->child_softmax ? 2 : 4, scores)));
    t->cores++;
}

/* A fused scaled-dot-product attention kernel: q (B, Hq, T, D), k (B, Hkv,
 * S, D), v (B, Hkv, S, Dv). Argument positions differ per kernel. */
static bool
fused_core(calc *c, const ts_match_op *op, core_shape *a)
{
    int mask_at = -1, dropout_at, causal_at, scale_at;
    const ts_shape *q = tensor(op, 0), *k = tensor(op, 1), *v = tensor(op, 2);
    const ts_shape *mask;
    double p = 0.0, scale = 0.0;
    switch (op->code) {
        case M_SCALED_DOT_PRODUCT_FLASH_ATTENTION_FOR_CPU:
            dropout_at = 3, causal_at = 4, mask_at = 5, scale_at = 6;
            break;
        case M_SCALED_DOT_PRODUCT_FLASH_ATTENTION:
            dropout_at = 3, causal_at = 4, scale_at = 6;
            break;
        case M_SCALED_DOT_PRODUCT_EFFICIENT_ATTENTION:
            mask_at = 3, dropout_at = 5, causal_at = 6, scale_at = 7;
            break;
        case M_SCALED_DOT_PRODUCT_CUDNN_ATTENTION:
            mask_at = 3, dropout_at = 5, causal_at = 6, scale_at = 8;
            break;
        default:
            return false;
    }
    if (q == NULL || k == NULL || v == NULL || q->ndim != 4 || k->ndim != 4
        || v->ndim != 4 || out0(op) == NULL
        || (number(op, dropout_at, &p) && p != 0.0)) {
        return false; /* dropout: training attention is not modelled */
    }
    memset(a, 0, sizeof *a);
    a->rows = c_mul(c, c_mul(c, q->dims[0], q->dims[1]), q->dims[2]);
    a->s = k->dims[2];
    a->d = q->dims[3];
    a->dv = v->dims[3];
    a->q = c_numel(c, q);
    a->k = c_numel(c, k);
    a->v = c_numel(c, v);
    a->out = c_numel(c, out0(op));
    mask = mask_at >= 0 ? tensor(op, mask_at) : NULL;
    if (mask != NULL) {
        a->masks++;
        a->mask_elements = c_numel(c, mask);
    }
    a->masks += flag_arg(op, causal_at, false);
    /* the default scale 1/sqrt(D), or a given one other than 1 */
    a->scaled = !number(op, scale_at, &scale) || scale != 1.0;
    return true;
}

/* An operator between QK^T and the softmax. */
typedef enum {
    SCORE_SKIP = 0, /* a view, copy or creation: counted as such */
    SCORE_SCALE,    /* the scores times or divided by a scalar */
    SCORE_MASK,     /* the scores plus a mask, or masked by one */
    SCORE_OTHER,    /* another elementwise step on the scores (soft-capping),
                       or work on other tensors (a mask being built):
                       counted as the operators count */
    SCORE_REFUSE,   /* a product, a reduction, or a non-elementwise step on
                       the scores: not an attention core */
} score_step;

static score_step
score_step_of(const ts_match_op *op, int64_t scores, double *factor)
{
    double f;
    op_class cls = class_of(op);
    bool on_scores = numel_or(out0(op), -1) == scores;
    if (cls == OPC_VIEW || cls == OPC_COPY || cls == OPC_CREATE
        || op->code == M_INDEX || op->code == M_EMBEDDING) {
        return SCORE_SKIP; /* a lookup: a bias or mask being gathered */
    }
    if (cls == OPC_MATMUL || cls == OPC_SDPA || cls == OPC_REDUCE
        || (on_scores && cls != OPC_ELEMENTWISE && cls != OPC_ACT)) {
        return SCORE_REFUSE;
    }
    if (!on_scores) {
        return SCORE_OTHER; /* work on something else (a mask being built) */
    }
    if ((op->code == M_MUL || op->code == M_DIV)
        && (number(op, 1, &f) || (op->code == M_MUL && number(op, 0, &f)))) {
        *factor = op->code == M_DIV ? 1.0 / f : f;
        return SCORE_SCALE;
    }
    if ((op->code == M_MUL || op->code == M_DIV) && scalar_operand(op, 1)) {
        *factor = NAN; /* a scale held in a tensor: its value is unknown */
        return SCORE_SCALE;
    }
    if (op->code == M_ADD || op->code == M_SUB || op->code == M_MASKED_FILL
        || op->code == M_WHERE) {
        return SCORE_MASK;
    }
    return SCORE_OTHER;
}

/* The mask operand of a SCORE_MASK step. */
static const ts_shape *
mask_operand(const ts_match_op *op, int64_t scores)
{
    switch (op->code) {
        case M_MASKED_FILL:
            return tensor(op, 1);
        case M_WHERE:
            return tensor(op, 0);
        default:
            return numel_or(tensor(op, 0), -1) == scores ? tensor(op, 1)
                                                         : tensor(op, 0);
    }
}

/* The operators of one core, marked in `member` only when the core is
 * recognized. */
typedef struct core_marks {
    size_t at[128];
    size_t n;
} core_marks;

static bool
mark(core_marks *m, size_t i)
{
    if (m->n == sizeof m->at / sizeof m->at[0]) {
        return false;
    }
    m->at[m->n++] = i;
    return true;
}

/* Operators that build a mask before the product (the causal mask of
 * SDPA's math path: ones, tril, where between constants). */
static bool
mask_building(const ts_match_op *op)
{
    op_class cls = class_of(op);
    return cls == OPC_VIEW || cls == OPC_COPY || cls == OPC_CREATE
           || op->code == M_TRIL || op->code == M_TRIU
           || (op->code == M_WHERE && scalar_operand(op, 1)
               && scalar_operand(op, 2));
}

/* q and k^T scaled before QK^T, as SDPA's math path does (q * sqrt(scale),
 * k^T * sqrt(scale)): the two products by a scalar of those shapes just
 * before the product, with views, copies and mask building between. Both
 * are the core's scale (*factor, their product); one alone is not (Whisper
 * scales its query itself: an operator of the block). */
static bool
prescaled(const ts_match_call *call,
          size_t first,
          const ts_shape *q,
          const ts_shape *k,
          core_marks *m,
          double *factor)
{
    int64_t nq = numel_or(q, -1), nk = numel_or(k, -1);
    bool found_q = false, found_k = false;
    double fq = 1.0, fk = 1.0;
    size_t before = m->n;
    for (size_t j = first; j-- > 0 && !(found_q && found_k);) {
        const ts_match_op *op = &call->ops[j];
        const ts_shape *o = out0(op);
        double f;
        if (op->code == M_MUL && number(op, 1, &f) && o != NULL
            && o->ndim >= 3) {
            int64_t rows = o->dims[o->ndim - 2], cols = o->dims[o->ndim - 1];
            int64_t n = numel_or(o, -2);
            if (!found_k && n == nk && rows == k->dims[1]
                && cols == k->dims[2]) {
                found_k = mark(m, j);
                fk = f;
                continue;
            }
            if (!found_q && n == nq && rows == q->dims[1]
                && cols == q->dims[2]) {
                found_q = mark(m, j);
                fq = f;
                continue;
            }
        }
        if (!mask_building(op)) {
            break;
        }
    }
    if (!(found_q && found_k)) {
        m->n = before;
        return false;
    }
    *factor = fq * fk;
    return true;
}

/* What SDPA's math path (a prescaled core) did for its own sake before
 * QK^T, which the fused kernels do inside. */
typedef struct math_path {
    int64_t causal; /* the elements of the is_causal mask it built (ones,
                       tril, where); 0: none */
    int64_t groups; /* query heads per key/value head it repeated k and v
                       for (enable_gqa: a copy to (B, Hkv, g, S, D)) */
    bool cast;      /* q, k and v cast to float (half, bfloat16) */
    /* the fused kernels write their output in q's layout when q is not
     * contiguous ((B, T, H, D) for heads split by a view and a transpose),
     * contiguous (B, H, T, D) otherwise; the math path shows which: it
     * copies a non-contiguous q for QK^T, unless B or H is 1 (any layout
     * folds to (B H, T, D) then: taken as not contiguous, the common
     * case) */
    bool q_strided;
} math_path;

/* Marks the math path's own operators from the casts before the first
 * scaling (ops[from]) to QK^T (ops[first]) as the core's, and fills *mp.
 * q: QK^T's first operand, (B H, T, D). false when the marks are full. */
static bool
math_path_internals(const ts_match_call *call,
                    size_t from,
                    size_t first,
                    const ts_shape *q,
                    core_marks *m,
                    math_path *mp)
{
    size_t casts = 0;
    memset(mp, 0, sizeof *mp);
    mp->groups = 1;
    /* for half and bfloat16 it computes in float: q, k and v cast just
     * before q's scaling, q's cast first */
    while (casts < 3 && casts < from
           && call->ops[from - casts - 1].code == M_TO_COPY) {
        casts++;
    }
    if (casts > 0
        && numel_or(out0(&call->ops[from - casts]), -1)
               == numel_or(tensor(&call->ops[from], 0), -2)) {
        from -= casts;
        mp->cast = true;
    }
    else {
        casts = 0; /* the block's own copies */
    }
    {
        const ts_shape *scaled = out0(&call->ops[from + casts]);
        mp->q_strided = scaled != NULL && scaled->ndim == 4
                        && (scaled->dims[0] == 1 || scaled->dims[1] == 1);
    }
    for (size_t j = from; j < first; j++) {
        const ts_match_op *op = &call->ops[j];
        const ts_shape *o = out0(op);
        if (op->code == M_MUL) {
            continue; /* a scaling, marked by prescaled */
        }
        if (op->code == M_WHERE) {
            mp->causal = numel_or(o, 0);
        }
        if (j >= from + casts && class_of(op) == OPC_COPY && o != NULL) {
            if (o->ndim == 5 && o->dims[2] > 1) {
                mp->groups = o->dims[2];
            }
            else if (o->ndim == 4 && numel_or(o, -1) == numel_or(q, -2)
                     && o->dims[2] == q->dims[1] && o->dims[3] == q->dims[2]) {
                mp->q_strided = true; /* q copied for the product */
            }
        }
        if (!mark(m, j)) {
            return false;
        }
    }
    return true;
}

/* The unfused attention core that eager attention runs: QK^T (a bmm to
 * (BH, T, S)), steps on the scores, a softmax over S, then weights x V (a
 * bmm from (BH, T, S)); q and k^T may be scaled before the product (SDPA's
 * math path). Marks the core's operators in `member` and fills *a; false
 * (nothing marked) when ops[first] does not start one. Other elementwise
 * steps on the scores (soft-capping) stay unmarked: they are counted as
 * operators. */
static bool
eager_core(calc *c,
           const ts_match_call *call,
           size_t first,
           bool *member,
           core_shape *a)
{
    const ts_match_op *qk = &call->ops[first], *wv;
    const ts_shape *q = tensor(qk, 0), *k = tensor(qk, 1), *s = out0(qk);
    const ts_shape *v;
    int64_t scores;
    double scale = 1.0, factor = 1.0;
    bool softmax = false, unknown_scale = false, prescale = false;
    math_path mp = {0, 1, false, false};
    core_marks marks;
    size_t i;
    if (qk->code != M_BMM || q == NULL || k == NULL || s == NULL
        || s->ndim != 3 || q->ndim != 3 || k->ndim != 3) {
        return false;
    }
    scores = numel_or(s, -1);
    memset(a, 0, sizeof *a);
    marks.n = 0;
    if (prescaled(call, first, q, k, &marks, &factor)) {
        size_t from = marks.at[0] < marks.at[1] ? marks.at[0] : marks.at[1];
        scale *= factor;
        prescale = true;
        if (!math_path_internals(call, from, first, q, &marks, &mp)) {
            return false;
        }
    }
    for (i = first + 1; i < call->nops; i++) {
        const ts_match_op *op = &call->ops[i];
        double f = 1.0;
        if (!softmax && op->code == TS_MOP_CHILD) {
            /* a child module's call: an nn.Softmax over the scores
             * normalizes them (its row counts it); any other child does its
             * own work */
            if (op->args[0].i == TS_MOD_SOFTMAX
                && numel_or(out0(op), -1) == scores) {
                softmax = true;
                a->child_softmax = true;
            }
            continue;
        }
        if (!softmax) {
            score_step step;
            if ((op->code == M_SOFTMAX || op->code == M_SAFE_SOFTMAX)
                && numel_or(tensor(op, 0), -1) == scores
                && arg(op, 1)->kind == TS_ARG_INT
                && (arg(op, 1)->i == -1
                    || arg(op, 1)->i == tensor(op, 0)->ndim - 1)) {
                softmax = true;
                if (!mark(&marks, i)) {
                    return false;
                }
                continue;
            }
            step = score_step_of(op, scores, &f);
            if (step == SCORE_REFUSE) {
                return false;
            }
            if (step == SCORE_SCALE) {
                unknown_scale |= isnan(f);
                scale *= isnan(f) ? 1.0 : f;
                if (!mark(&marks, i)) {
                    return false;
                }
            }
            else if (step == SCORE_MASK) {
                const ts_shape *m = mask_operand(op, scores);
                a->masks++;
                if (mp.causal > 0 && numel_or(m, 0) == mp.causal) {
                    mp.causal = 0; /* is_causal's: the kernel reads none */
                }
                else {
                    a->mask_elements =
                        c_add(c, a->mask_elements, numel_or(m, 0));
                }
                if (!mark(&marks, i)) {
                    return false;
                }
            }
            else if (prescale && step == SCORE_SKIP && !mark(&marks, i)) {
                return false;
            }
            continue;
        }
        if (op->code != M_BMM) {
            op_class cls = class_of(op);
            if (cls == OPC_VIEW || cls == OPC_COPY || cls == OPC_CREATE
                || cls == OPC_CHILD) {
                /* a child's dropout does its own work */
                if (prescale && cls != OPC_CHILD && !mark(&marks, i)) {
                    return false;
                }
                continue;
            }
            return false; /* dropout or anything else between */
        }
        break;
    }
    if (!softmax || i == call->nops) {
        return false;
    }
    wv = &call->ops[i];
    v = tensor(wv, 1);
    if (numel_or(tensor(wv, 0), -1) != scores || v == NULL || v->ndim != 3
        || out0(wv) == NULL || v->dims[1] != s->dims[2]) {
        return false;
    }
    if (!mark(&marks, first) || !mark(&marks, i)) {
        return false;
    }
    if (prescale) {
        /* After weights x V the math path casts its output back (when it
         * cast q, k and v), and its output is (B, H, T, Dv) where the fused
         * kernels write q's layout: the block's transpose back is a view
         * there, and its copy for a reshape the math path's own (when q was
         * not contiguous). */
        int64_t out = numel_or(out0(wv), -1);
        bool cast = mp.cast, layout = mp.q_strided;
        for (size_t j = i + 1; j < call->nops && (cast || layout); j++) {
            const ts_match_op *op = &call->ops[j];
            op_class cls = class_of(op);
            bool sized = numel_or(out0(op), -2) == out;
            if (cls == OPC_COPY && sized && cast && op->code == M_TO_COPY) {
                cast = false;
            }
            else if (cls == OPC_COPY && sized && layout
                     && op->code != M_TO_COPY) {
                layout = false;
            }
            else if (cls == OPC_VIEW || op->code == M_TO_COPY) {
                continue; /* the block's own cast keeps the layout */
            }
            else {
                break;
            }
            if (!mark(&marks, j)) {
                return false;
            }
        }
    }
    for (size_t j = 0; j < marks.n; j++) {
        member[marks.at[j]] = true;
    }
    a->rows = c_mul(c, s->dims[0], s->dims[1]);
    a->s = s->dims[2];
    a->d = q->dims[2];
    a->dv = v->dims[2];
    a->q = c_numel(c, q);
    a->k = c_numel(c, k);
    a->v = c_numel(c, v);
    if (a->k % mp.groups == 0 && a->v % mp.groups == 0) {
        /* the fused kernels read k and v before the repeat */
        a->k /= mp.groups;
        a->v /= mp.groups;
    }
    a->out = c_numel(c, out0(wv));
    a->scaled = unknown_scale || scale != 1.0;
    return true;
}

/* A matrix product outside an attention core, by the module convention:
 * K products and K - 1 additions per output (2K - 1), plus the bias add
 * of addmm/baddbmm; K MACs per output. */
bool
ts_mm_add_product(calc *c, const ts_match_op *op, tally *t)
{
    const ts_shape *a;
    int64_t k, o = numel_or(out0(op), -1);
    bool bias = false;
    switch (op->code) {
        case M_MM:
        case M_BMM:
        case M_MATMUL:
        case M_GROUPED_MM:
            a = tensor(op, 0);
            break;
        case M_ADDMM:
        case M_BADDBMM:
            a = tensor(op, 1);
            bias = true;
            break;
        default:
            return false;
    }
    if (a == NULL || a->ndim < 1 || o < 0) {
        return false;
    }
    k = a->dims[a->ndim - 1];
    if (o > 0 && k > 0) {
        t->flops = c_add(c, t->flops, c_mul(c, o, 2 * k - 1 + (bias ? 1 : 0)));
        t->macs = c_add(c, t->macs, c_mul(c, o, k));
    }
    t->dmas = c_add(c, t->dmas, traffic(c, op));
    t->products++;
    return true;
}

/* A where() between two constants builds a mask: a selection, no
 * arithmetic (the model builds its other masks outside any block). */
static bool
mask_preparation(const ts_match_op *op)
{
    return op->code == M_WHERE && scalar_operand(op, 1)
           && scalar_operand(op, 2);
}

/* Counts every operator of the call by the structural rule. `cores`:
 * attention cores are recognized (else a fused kernel refuses the match).
 * false when an operator has no count. */
static bool
tally_call(ops_view *v, bool cores, tally *t)
{
    const ts_match_call *call = v->call;
    calc *c = &v->c;
    bool member[1024];
    memset(t, 0, sizeof *t);
    if (call->nops > sizeof member || !v->all_counted) {
        return false;
    }
    memset(member, 0, call->nops * sizeof member[0]);
    for (size_t i = 0; cores && i < call->nops; i++) {
        core_shape a;
        if (!member[i] && eager_core(c, call, i, member, &a)) {
            add_core(c, &a, t);
        }
    }
    for (size_t i = 0; i < call->nops; i++) {
        const ts_match_op *op = &call->ops[i];
        core_shape a;
        if (member[i]) {
            continue;
        }
        switch (class_of(op)) {
            case OPC_VIEW:
            case OPC_CHILD:
            case OPC_READBACK:
                break;
            case OPC_COPY:
                t->dmas = c_add(c, t->dmas, c_mul(c, 2, c_numel(c, out0(op))));
                break;
            case OPC_CREATE:
                t->dmas = c_add(c, t->dmas, c_numel(c, out0(op)));
                break;
            case OPC_SDPA:
                if (!cores || !fused_core(c, op, &a)) {
                    return false;
                }
                add_core(c, &a, t);
                break;
            case OPC_MATMUL:
                if (!add_product(c, op, t)) {
                    return false;
                }
                break;
            default:
                if (mask_preparation(op)) {
                    t->dmas = c_add(c, t->dmas, traffic(c, op));
                    break;
                }
                t->flops = c_add(c, t->flops, op->flops);
                t->dmas = c_add(c, t->dmas, traffic(c, op));
        }
    }
    return true;
}

void
ts_mm_set_tally(ops_view *v,
                const tally *t,
                ts_match_result *r,
                bool pointwise)
{
    set_count(&r->estimates.flops, &v->c, t->flops);
    set_count(&r->estimates.macs, &v->c, t->macs);
    set_count(&r->estimates.dmas, &v->c, t->dmas);
    set_trio(
        &r->estimates, pointwise ? TS_EST_COMPLETE : TS_EST_NOT_APPLICABLE, 1);
}


/* Rotary embedding tables: positions times inverse frequencies (a mul, or a
 * product with K = 1), cos and sin, optional scalings, concatenations. The
 * operators as torchscan_flops_v1 counts them, the outer product at one
 * FLOP per product whichever kernel forms it; no MACs (nothing
 * accumulates). */
bool
ts_mm_sig_rotary(ops_view *v, ts_match_result *r)
{
    tally t;
    calc *c = &v->c;
    size_t products = 0;
    if (!v->call->leaf || !has_code(v, M_COS) || !has_code(v, M_SIN)
        || !v->all_counted) {
        return false;
    }
    memset(&t, 0, sizeof t);
    for (size_t i = 0; i < v->n; i++) {
        const ts_match_op *op = v->sig[i];
        op_class cls = class_of(op);
        if (cls == OPC_MATMUL) {
            const ts_shape *a = tensor(op, op->code == M_ADDMM ? 1 : 0);
            if (a == NULL || a->ndim < 1 || a->dims[a->ndim - 1] != 1
                || op->code == M_ADDMM || op->code == M_BADDBMM) {
                return false;
            }
            t.flops = c_add(c, t.flops, numel_or(out0(op), 0));
            products++;
        }
        else if (cls == OPC_ELEMENTWISE) {
            t.flops = c_add(c, t.flops, op->flops);
        }
        else {
            return false;
        }
        t.dmas = c_add(c, t.dmas, traffic(c, op));
    }
    if (products > 1) {
        return false;
    }
    t.dmas = c_add(c, t.dmas, c_mul(c, 2, v->copied));
    set_tally(v, &t, r, false);
    return true;
}

/* A chain of elementwise operators over the input (NewGELUActivation,
 * GELUTanh, QuickGELU, hand-written Swish): the operators as
 * torchscan_flops_v1 counts them, no MACs, DMAs N + O as for the native
 * activations, a pointwise receptive field. */
bool
ts_mm_sig_pointwise(ops_view *v, ts_match_result *r)
{
    const ts_match_call *call = v->call;
    tally t;
    int64_t n, o;
    if (!call->leaf || v->n == 0 || !v->all_counted || !call->has_input
        || !call->has_output) {
        return false;
    }
    n = numel_or(&call->input, -1);
    o = numel_or(&call->output, -2);
    if (n != o || n < 0) {
        return false;
    }
    memset(&t, 0, sizeof t);
    for (size_t i = 0; i < v->n; i++) {
        const ts_match_op *op = v->sig[i];
        op_class cls = class_of(op);
        if ((cls != OPC_ELEMENTWISE && cls != OPC_ACT) || op->code == M_SOFTMAX
            || op->code == M_SAFE_SOFTMAX || op->code == M_LOG_SOFTMAX
            || op->code == M_GLU || numel_or(out0(op), -1) > n) {
            return false;
        }
        t.flops = c_add(&v->c, t.flops, op->flops);
    }
    t.dmas = c_add(&v->c, n, o);
    set_tally(v, &t, r, true);
    return true;
}

/* A Mixture-of-Experts router: a product of the tokens with the router
 * weights, a softmax (or sigmoid), the top-k experts per token and their
 * normalisation. */
bool
ts_mm_sig_router(ops_view *v, ts_match_result *r)
{
    tally t;
    if (!has_code(v, M_TOPK) || !tally_call(v, false, &t) || t.products == 0) {
        return false;
    }
    set_tally(v, &t, r, false);
    return true;
}

/* A block that owns attention cores: the cores by MultiheadAttention's
 * terms, everything else it computes itself (rotary application, position
 * biases, the query scale, cache concatenations) as the operators count. */
bool
ts_mm_sig_attention(ops_view *v, ts_match_result *r)
{
    tally t;
    if (!tally_call(v, true, &t) || t.cores == 0) {
        return false;
    }
    set_tally(v, &t, r, false);
    return true;
}

/* A Mixture-of-Experts expert bank that multiplies tokens by stacked
 * expert weights itself (grouped matrix products), with the routing
 * bookkeeping (sorts, histograms, gathers and scatters) around them. */
bool
ts_mm_sig_experts(ops_view *v, ts_match_result *r)
{
    tally t;
    if (!has_code(v, M_GROUPED_MM) || !tally_call(v, false, &t)) {
        return false;
    }
    set_tally(v, &t, r, false);
    return true;
}
