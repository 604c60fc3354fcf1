/* Tests for src/core/attention_match.c: scaled_dot_product_attention's math
 * path grouped into one attention.
 *
 * Each sequence below is what the dispatcher runs for one
 * F.scaled_dot_product_attention call on meta tensors (torch 2.13, printed
 * by a TorchDispatchMode that logs every call; views, expands and copies
 * are ignored operators and are not fed): the calls are counted by their
 * own formulas from the operator table and fed to the matcher, and the
 * attention it records must equal what every fused kernel counts for the
 * same call (test_op_formulas.c's hand arithmetic), while aten.bmm keeps
 * FlopCounterMode's count of the two products in matrix_product_flops.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "op_calls.h"
#include "torchscan/attention_match.h"

#define F TS_DTYPE_FLOAT
#define BOOL TS_DTYPE_BOOL

/* ---- a counter in miniature ----------------------------------------------
 */

static size_t nlogged; /* the calls fed since the fixture began */
static int replaying;  /* a replay's fixtures keep the log */

typedef struct fixture {
    ts_opstats *stats;
    ts_session *session;
    ts_attn_sink sink;
    ts_attn_matcher m;
    int layer;
} fixture;

static void
fixture_init(fixture *f, ts_session *session)
{
    f->stats = ts_opstats_new();
    f->session = session;
    f->sink.stats = f->stats;
    f->sink.session = session;
    f->sink.attention_id =
        ts_opstats_intern(f->stats, "aten.scaled_dot_product_attention");
    f->sink.backward_id = ts_opstats_intern(
        f->stats, "aten.scaled_dot_product_attention_backward");
    ts_attn_matcher_init(&f->m);
    f->layer = -1;
    if (!replaying) {
        nlogged = 0;
    }
}

/* ---- near misses, systematically ------------------------------------------
 * Every sequence a test feeds is logged, and replayed when its report is
 * made after each of these edits: one call dropped, repeated, swapped
 * with the next, one of its tensors reshaped (a size changed, a dim
 * dropped) or a number argument changed. A replay feeds what its
 * formulas count (a call no formula counts is skipped, as the counter
 * leaves it to the unsupported path); every feed, record and flush must
 * return TS_OK, and the report must hold a total equal to the sum of its
 * operators (a sequence is grouped into one attention or counted operator
 * by operator, never both nor neither). */

#define LOG_MAX 64
static struct {
    const char *overload;
    ts_op_call call;
} logged[LOG_MAX];
static long replays, replay_failures;

static void feed(fixture *f, const char *overload, const ts_op_call *call);

/* Feeds like feed() below without checks; the first status not TS_OK. */
static int
feed_quiet(fixture *f, const char *overload, const ts_op_call *call)
{
    char packet[128];
    const char *dot = strrchr(overload, '.');
    const ts_op_entry *e;
    ts_op_result r;
    ts_error err;
    ts_counted_call cc;
    snprintf(packet, sizeof packet, "%.*s", (int)(dot - overload), overload);
    e = ts_op_lookup(packet);
    ts_error_clear(&err);
    if (e == NULL || e->formula == NULL || e->formula(call, &r, &err) != TS_OK
        || r.incomplete) {
        return TS_OK;
    }
    cc.id = ts_opstats_intern(f->stats, packet);
    cc.layer = -1;
    cc.phase = TS_PHASE_FORWARD;
    cc.phase_layer = -1;
    cc.flops = r.flops;
    cc.matrix_flops = (e->flags & TS_OPF_MATRIX) != 0 ? r.matrix_flops : -1;
    if ((e->flags & TS_OPF_SDPA_FORWARD) != 0) {
        return ts_attn_record_kernel(&f->m, &f->sink, &cc);
    }
    if ((e->flags & TS_OPF_SDPA_BACKWARD) != 0) {
        return ts_attn_record_backward_kernel(&f->m, &f->sink, &cc);
    }
    return ts_attn_feed(&f->m, &f->sink, ts_attn_role_of(overload), call, &cc);
}

/* Replays the log with call `skip` left out, `twice` fed twice, `swap`
 * exchanged with the next (-1: none), and `edited` standing for call
 * `at`. */
static void
replay(long skip, long twice, long swap, long at, const ts_op_call *edited)
{
    fixture f;
    json_t *r;
    int rc = TS_OK;
    int64_t sum = 0;
    const char *name;
    json_t *value;
    fixture_init(&f, NULL);
    for (size_t k = 0; rc == TS_OK && k < nlogged; k++) {
        size_t i = k;
        if ((long)k == swap && k + 1 < nlogged) {
            i = k + 1;
        }
        else if (swap >= 0 && (long)k == swap + 1) {
            i = k - 1;
        }
        if ((long)i == skip) {
            continue;
        }
        for (int n = (long)i == twice ? 2 : 1; rc == TS_OK && n > 0; n--) {
            rc = feed_quiet(&f,
                            logged[i].overload,
                            (long)i == at ? edited : &logged[i].call);
        }
    }
    if (rc == TS_OK) {
        rc = ts_attn_flush(&f.m, &f.sink);
    }
    r = rc == TS_OK ? ts_opstats_report(f.stats, "2.13.0", "m", NULL) : NULL;
    json_object_foreach(json_object_get(r, "by_operator"), name, value)
    {
        sum += (int64_t)json_integer_value(value);
    }
    replays++;
    if (rc != TS_OK || r == NULL
        || sum
               != (int64_t)json_integer_value(
                   json_object_get(json_object_get(r, "total"), "value"))) {
        replay_failures++;
    }
    json_decref(r);
    ts_opstats_free(f.stats);
}

static void
replay_edits(void)
{
    replaying = 1;
    for (long i = 0; i < (long)nlogged; i++) {
        replay(i, -1, -1, -1, NULL);
        replay(-1, i, -1, -1, NULL);
        replay(-1, -1, i, -1, NULL);
        for (int a = 0; a < logged[i].call.nargs; a++) {
            for (int how = 0; how < 3; how++) {
                ts_op_call c = logged[i].call;
                ts_op_arg *arg = &c.args[a];
                if (how == 0 && arg->kind == TS_ARG_TENSOR
                    && arg->tensor.ndim > 0) {
                    arg->tensor.dims[arg->tensor.ndim - 1] += 1;
                }
                else if (how == 1 && arg->kind == TS_ARG_TENSOR
                         && arg->tensor.ndim > 0) {
                    arg->tensor.ndim -= 1;
                }
                else if (how == 2
                         && (arg->kind == TS_ARG_REAL
                             || arg->kind == TS_ARG_INT)) {
                    arg->r = arg->r * 2 + 1;
                    arg->i += 1;
                }
                else {
                    continue;
                }
                replay(-1, -1, -1, i, &c);
            }
        }
        if (logged[i].call.nouts > 0) {
            ts_op_call c = logged[i].call;
            c.outs[0].dims[0] += 1;
            replay(-1, -1, -1, i, &c);
        }
    }
    replaying = 0;
    nlogged = 0;
}

/* Counts `call` with the packet's formula and feeds it, as the operator
 * counter does with a complete count of a built-in formula. */
static void
feed(fixture *f, const char *overload, const ts_op_call *call)
{
    char packet[128];
    const char *dot = strrchr(overload, '.');
    const ts_op_entry *e;
    ts_op_result r;
    ts_error err;
    ts_counted_call cc;
    snprintf(packet, sizeof packet, "%.*s", (int)(dot - overload), overload);
    e = ts_op_lookup(packet);
    CHECK(e != NULL && e->formula != NULL);
    if (e == NULL || e->formula == NULL) {
        return;
    }
    if (nlogged < LOG_MAX) {
        logged[nlogged].overload = overload;
        logged[nlogged++].call = *call;
    }
    ts_error_clear(&err);
    CHECK_EQ_INT(e->formula(call, &r, &err), TS_OK);
    CHECK(!r.incomplete);
    cc.id = ts_opstats_intern(f->stats, packet);
    cc.layer = f->layer;
    cc.phase = TS_PHASE_FORWARD;
    cc.phase_layer = f->layer;
    cc.flops = r.flops;
    cc.matrix_flops = (e->flags & TS_OPF_MATRIX) != 0 ? r.matrix_flops : -1;
    if ((e->flags & TS_OPF_SDPA_FORWARD) != 0) {
        CHECK_EQ_INT(ts_attn_record_kernel(&f->m, &f->sink, &cc), TS_OK);
    }
    else if ((e->flags & TS_OPF_SDPA_BACKWARD) != 0) {
        CHECK_EQ_INT(ts_attn_record_backward_kernel(&f->m, &f->sink, &cc),
                     TS_OK);
    }
    else {
        CHECK_EQ_INT(
            ts_attn_feed(
                &f->m, &f->sink, ts_attn_role_of(overload), call, &cc),
            TS_OK);
    }
}

static json_t *
report(fixture *f)
{
    replay_edits();
    CHECK_EQ_INT(ts_attn_flush(&f->m, &f->sink), TS_OK);
    return ts_opstats_report(f->stats, "2.13.0", "m", NULL);
}

static int64_t
get(json_t *r, const char *map, const char *name)
{
    json_t *v = json_object_get(json_object_get(r, map), name);
    return v != NULL ? (int64_t)json_integer_value(v) : -1;
}

static int64_t
total(json_t *r)
{
    return (int64_t)json_integer_value(
        json_object_get(json_object_get(r, "total"), "value"));
}

/* ---- the math path ---------------------------------------------------------
 */

typedef struct attn_case {
    const char *q, *kt, *scores, *bmm_a, *bmm_b, *bmm_out;
    const char *p_a, *v_b, *out;
    const char *mask2d; /* (T, S) */
    bool causal, mask, dropout;
} attn_case;

/* q (2,8,5,16) over k (2,2,7,16), v (2,2,7,12) expanded to 8 heads (the
 * expansion is views and a clone: ignored): the shapes each call sees. */
static attn_case
gqa_case(void)
{
    attn_case a = {"2,8,5,16",
                   "2,8,16,7",
                   "2,8,5,7",
                   "16,5,16",
                   "16,16,7",
                   "16,5,7",
                   "16,5,7",
                   "16,7,12",
                   "16,5,12",
                   "5,7",
                   false,
                   false,
                   false};
    return a;
}

static void
run_math_path(fixture *f, const attn_case *a)
{
    ts_op_call c;
    /* query * sqrt(scale) */
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a->q);
    a_real(&c, 0.5);
    o_tensor(&c, F, a->q);
    feed(f, "aten.mul.Scalar", &c);
    if (a->causal) {
        /* ones(T, S, bool).tril(), then where(mask, 0, -inf) */
        memset(&c, 0, sizeof c);
        a_tensor(&c, BOOL, a->mask2d);
        o_tensor(&c, BOOL, a->mask2d);
        feed(f, "aten.tril.default", &c);
        memset(&c, 0, sizeof c);
        a_tensor(&c, BOOL, a->mask2d);
        a_tensor(&c, F, "");
        a_tensor(&c, F, "");
        o_tensor(&c, F, a->mask2d);
        feed(f, "aten.where.self", &c);
    }
    /* key^T * sqrt(scale) */
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a->kt);
    a_real(&c, 0.5);
    o_tensor(&c, F, a->kt);
    feed(f, "aten.mul.Scalar", &c);
    /* matmul: bmm of the flattened batch */
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a->bmm_a);
    a_tensor(&c, F, a->bmm_b);
    o_tensor(&c, F, a->bmm_out);
    feed(f, "aten.bmm.default", &c);
    if (a->causal || a->mask) {
        memset(&c, 0, sizeof c);
        a_tensor(&c, F, a->scores);
        a_tensor(&c, F, a->mask2d);
        o_tensor(&c, F, a->scores);
        feed(f, "aten.add.Tensor", &c);
    }
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a->scores);
    a_int(&c, -1);
    o_tensor(&c, F, a->scores);
    feed(f, "aten._safe_softmax.default", &c);
    if (a->dropout) {
        /* empty_like, bernoulli_ (ignored), mask.div_(1 - p), attn * mask */
        memset(&c, 0, sizeof c);
        a_tensor(&c, F, a->scores);
        a_real(&c, 0.9);
        o_tensor(&c, F, a->scores);
        feed(f, "aten.div_.Scalar", &c);
        memset(&c, 0, sizeof c);
        a_tensor(&c, F, a->scores);
        a_tensor(&c, F, a->scores);
        o_tensor(&c, F, a->scores);
        feed(f, "aten.mul.Tensor", &c);
    }
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a->p_a);
    a_tensor(&c, F, a->v_b);
    o_tensor(&c, F, a->out);
    feed(f, "aten.bmm.default", &c);
}

/* The count of a fused kernel for the same call, by its own formula. */
static int64_t
kernel_count(bool causal, bool mask, bool dropout)
{
    const ts_op_entry *e =
        ts_op_lookup("aten._scaled_dot_product_flash_attention_for_cpu");
    ts_op_call c;
    ts_op_result r;
    ts_error err;
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "2,8,5,16");
    a_tensor(&c, F, "2,2,7,16");
    a_tensor(&c, F, "2,2,7,12");
    a_real(&c, dropout ? 0.1 : 0.0);
    c.args[c.nargs].kind = TS_ARG_BOOL;
    c.args[c.nargs++].i = causal;
    if (mask) {
        a_tensor(&c, F, "5,7");
    }
    ts_error_clear(&err);
    CHECK_EQ_INT(e->formula(&c, &r, &err), TS_OK);
    return r.flops;
}

static void
test_math_path_counts_as_the_kernels(void)
{
    static const struct {
        bool causal, mask, dropout;
        int64_t expected; /* test_op_formulas.c's hand arithmetic */
    } variants[] = {
        {false, false, false, 34560},
        {true, false, false, 35120},
        {false, true, false, 35120},
        {false, false, true, 35680},
        {true, false, true, 36240},
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        fixture f;
        attn_case a = gqa_case();
        a.causal = variants[i].causal;
        a.mask = variants[i].mask;
        a.dropout = variants[i].dropout;
        fixture_init(&f, NULL);
        run_math_path(&f, &a);
        CHECK_EQ_INT(f.m.npending, 0); /* completed by the second bmm */
        json_t *r = report(&f);
        /* one attention, counted as every kernel counts it */
        CHECK_EQ_INT(json_object_size(json_object_get(r, "by_operator")), 1);
        CHECK_EQ_INT(
            get(r, "by_operator", "aten.scaled_dot_product_attention"),
            variants[i].expected);
        CHECK_EQ_INT(total(r), variants[i].expected);
        CHECK_EQ_INT(
            variants[i].expected,
            kernel_count(
                variants[i].causal, variants[i].mask, variants[i].dropout));
        /* the two products where FlopCounterMode counts them: 2*560*28 */
        CHECK_EQ_INT(
            json_object_size(json_object_get(r, "matrix_product_flops")), 1);
        CHECK_EQ_INT(get(r, "matrix_product_flops", "aten.bmm"), 31360);
        json_decref(r);
        ts_opstats_free(f.stats);
    }
}

/* Operator by operator, the same call counts 38192 without a mask: q and
 * k^T scaled (1280 + 1792), the products (17920 + 13440) and
 * _safe_softmax's 5*560 - 160 + 2*560 = 3760. The matcher gives the
 * convention's 34560 instead; a sequence it does not recognise keeps the
 * per-operator count. */
static void
test_broken_sequences_count_operator_by_operator(void)
{
    fixture f;
    attn_case a = gqa_case();
    ts_op_call c;
    json_t *r;

    /* the math path without its second product: ends in a sum */
    fixture_init(&f, NULL);
    a.p_a = "16,5,6"; /* a bmm that is not p @ v */
    a.v_b = "16,6,12";
    run_math_path(&f, &a);
    r = report(&f);
    CHECK_EQ_INT(get(r, "by_operator", "aten.scaled_dot_product_attention"),
                 -1);
    CHECK_EQ_INT(get(r, "by_operator", "aten.mul"), 1280 + 1792);
    CHECK_EQ_INT(get(r, "by_operator", "aten._safe_softmax"), 3760);
    CHECK_EQ_INT(get(r, "by_operator", "aten.bmm"),
                 17920 + 2 * 16 * 5 * 12 * 6);
    CHECK_EQ_INT(get(r, "matrix_product_flops", "aten.bmm"),
                 17920 + 2 * 16 * 5 * 12 * 6);
    json_decref(r);
    ts_opstats_free(f.stats);

    /* a scaled tensor followed by anything else: recorded, in order */
    fixture_init(&f, NULL);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "2,3,4");
    a_real(&c, 2.0);
    o_tensor(&c, F, "2,3,4");
    feed(&f, "aten.mul.Scalar", &c);
    CHECK_EQ_INT(f.m.npending, 1);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "2,3,4");
    o_tensor(&c, F, "2,3,4");
    feed(&f, "aten.relu.default", &c);
    CHECK_EQ_INT(f.m.npending, 0);
    r = report(&f);
    CHECK_EQ_INT(get(r, "by_operator", "aten.mul"), 24);
    CHECK_EQ_INT(get(r, "by_operator", "aten.relu"), 24);
    CHECK_EQ_INT(total(r), 48);
    json_decref(r);
    ts_opstats_free(f.stats);

    /* a 2-D or tensor-scalar-less mul never starts a sequence; a second
     * scaled tensor that is not k^T starts again from itself */
    fixture_init(&f, NULL);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "3,4");
    a_real(&c, 2.0);
    o_tensor(&c, F, "3,4");
    feed(&f, "aten.mul.Scalar", &c);
    CHECK_EQ_INT(f.m.npending, 0);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "2,8,5,16");
    a_real(&c, 2.0);
    o_tensor(&c, F, "2,8,5,16");
    feed(&f, "aten.mul.Scalar", &c);
    feed(&f, "aten.mul.Scalar", &c);
    CHECK_EQ_INT(f.m.npending, 1);
    r = report(&f);
    CHECK_EQ_INT(get(r, "by_operator", "aten.mul"), 12 + 2 * 1280);
    json_decref(r);
    ts_opstats_free(f.stats);

    /* eager attention: softmax instead of _safe_softmax is not SDPA */
    fixture_init(&f, NULL);
    a = gqa_case();
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a.q);
    a_real(&c, 0.5);
    o_tensor(&c, F, a.q);
    feed(&f, "aten.mul.Scalar", &c);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a.kt);
    a_real(&c, 0.5);
    o_tensor(&c, F, a.kt);
    feed(&f, "aten.mul.Scalar", &c);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a.bmm_a);
    a_tensor(&c, F, a.bmm_b);
    o_tensor(&c, F, a.bmm_out);
    feed(&f, "aten.bmm.default", &c);
    CHECK_EQ_INT(f.m.npending, 3);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a.scores);
    a_int(&c, -1);
    c.args[c.nargs].kind = TS_ARG_BOOL;
    c.args[c.nargs++].i = 0;
    o_tensor(&c, F, a.scores);
    feed(&f, "aten._softmax.default", &c);
    CHECK_EQ_INT(f.m.npending, 0);
    r = report(&f);
    CHECK_EQ_INT(get(r, "by_operator", "aten._softmax"), 5 * 560 - 160);
    CHECK_EQ_INT(total(r), 1280 + 1792 + 17920 + 5 * 560 - 160);
    json_decref(r);
    ts_opstats_free(f.stats);
}

/* Back to back calls, 3-D inputs, and forward kernels listed as the
 * attention they compute. */
static void
test_sequences_and_kernels(void)
{
    fixture f;
    attn_case a = gqa_case();
    attn_case flat = {"8,5,16",
                      "8,16,7",
                      "8,5,7",
                      "8,5,16",
                      "8,16,7",
                      "8,5,7",
                      "8,5,7",
                      "8,7,12",
                      "8,5,12",
                      "5,7",
                      false,
                      false,
                      false};
    ts_op_call c;
    json_t *r;

    fixture_init(&f, NULL);
    run_math_path(&f, &a);
    a.causal = true;
    run_math_path(&f, &a);
    /* q (8,5,16) over k (8,7,16), v (8,7,12): rows 40, scores 280:
     * 2*280*28 + 6*280 - 80 = 15680 + 1680 - 80 = 17280 */
    run_math_path(&f, &flat);
    /* the CPU kernel of the first call */
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "2,8,5,16");
    a_tensor(&c, F, "2,2,7,16");
    a_tensor(&c, F, "2,2,7,12");
    feed(&f, "aten._scaled_dot_product_flash_attention_for_cpu.default", &c);
    r = report(&f);
    CHECK_EQ_INT(get(r, "by_operator", "aten.scaled_dot_product_attention"),
                 34560 + 35120 + 17280 + 34560);
    CHECK_EQ_INT(json_object_size(json_object_get(r, "by_operator")), 1);
    CHECK_EQ_INT(get(r, "matrix_product_flops", "aten.bmm"),
                 2 * 31360 + 15680);
    CHECK_EQ_INT(get(r,
                     "matrix_product_flops",
                     "aten._scaled_dot_product_flash_attention_for_cpu"),
                 31360);
    json_decref(r);
    ts_opstats_free(f.stats);
}

/* ---- the backward of the math path ----------------------------------------
 */

/* The sums of dK and dV over the 4 query heads of each key/value head. */
static void
group_sums(fixture *f)
{
    ts_op_call c;
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "2,2,4,7,16");
    a_ints(&c, "2");
    c.args[c.nargs].kind = TS_ARG_BOOL;
    c.args[c.nargs++].i = 1;
    o_tensor(&c, F, "2,2,1,7,16");
    feed(f, "aten.sum.dim_IntList", &c);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "2,2,4,7,12");
    a_ints(&c, "2");
    c.args[c.nargs].kind = TS_ARG_BOOL;
    c.args[c.nargs++].i = 1;
    o_tensor(&c, F, "2,2,1,7,12");
    feed(f, "aten.sum.dim_IntList", &c);
}

/* What autograd runs for the backward of gqa_case's math path (torch 2.13,
 * printed as above; views, transposes, detaches and the copies of
 * accumulated gradients are ignored operators and are not fed): dV, dP,
 * [dropout], dS, dK^T, dQ, k^T's and q's scale, the sums of dK and dV over
 * the 4 query heads of each key/value head. `leave`: 1 leaves dV out, 2
 * runs the sums after q's scale. */
static void
run_math_backward(fixture *f, const attn_case *a, double factor, int leave)
{
    ts_op_call c;
    if (!(leave & 1)) {
        memset(&c, 0, sizeof c);
        a_tensor(&c, F, "16,7,5");
        a_tensor(&c, F, "16,5,12");
        o_tensor(&c, F, "16,7,12");
        feed(f, "aten.bmm.default", &c);
    }
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "16,5,12");
    a_tensor(&c, F, "16,12,7");
    o_tensor(&c, F, "16,5,7");
    feed(f, "aten.bmm.default", &c);
    if (a->dropout) {
        memset(&c, 0, sizeof c);
        a_tensor(&c, F, a->scores);
        a_tensor(&c, F, a->scores);
        o_tensor(&c, F, a->scores);
        feed(f, "aten.mul.Tensor", &c);
    }
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a->scores);
    a_tensor(&c, F, a->scores);
    a_int(&c, -1);
    o_tensor(&c, F, a->scores);
    feed(f, "aten._softmax_backward_data.default", &c);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "16,16,5");
    a_tensor(&c, F, "16,5,7");
    o_tensor(&c, F, "16,16,7");
    feed(f, "aten.bmm.default", &c);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "16,5,7");
    a_tensor(&c, F, "16,7,16");
    o_tensor(&c, F, "16,5,16");
    feed(f, "aten.bmm.default", &c);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a->kt);
    a_real(&c, factor);
    o_tensor(&c, F, a->kt);
    feed(f, "aten.mul.Scalar", &c);
    if (!(leave & 2)) {
        group_sums(f);
    }
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a->q);
    a_real(&c, factor);
    o_tensor(&c, F, a->q);
    feed(f, "aten.mul.Scalar", &c);
    if (leave & 2) {
        group_sums(f);
    }
}

/* The CPU backward kernel's count for gqa_case, by its own formula. */
static int64_t
kernel_backward_count(bool causal, bool mask, bool dropout)
{
    const ts_op_entry *e = ts_op_lookup(
        "aten._scaled_dot_product_flash_attention_for_cpu_backward");
    ts_op_call c;
    ts_op_result r;
    ts_error err;
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "2,8,5,12");
    a_tensor(&c, F, "2,8,5,16");
    a_tensor(&c, F, "2,2,7,16");
    a_tensor(&c, F, "2,2,7,12");
    a_tensor(&c, F, "2,8,5,12");
    a_tensor(&c, F, "2,8,5");
    a_real(&c, dropout ? 0.1 : 0.0);
    c.args[c.nargs].kind = TS_ARG_BOOL;
    c.args[c.nargs++].i = causal;
    if (mask) {
        a_tensor(&c, F, "5,7");
    }
    ts_error_clear(&err);
    CHECK_EQ_INT(e->formula(&c, &r, &err), TS_OK);
    return r.flops;
}

/* rows 80, scores 560: the five products 2*560*(3*16 + 2*12) = 80640,
 * 6 per score 3360, rowsum(dO*O) 80*(2*12 - 1) = 1840, the group sums
 * (8 - 2)*2*7*(16 + 12) = 2352; a mask 560 more, dropout 2*560 more.
 * Operator by operator the math path runs 70304: four products
 * 2*13440 + 2*17920, dS 4*560 - 80, the scales 1792 + 1280 and the sums
 * 1344 + 1008. */
#define BACKWARD 88192

static void
test_backward_counts_as_the_kernels(void)
{
    static const struct {
        bool causal, mask, dropout;
        int64_t forward, backward;
    } variants[] = {
        {false, false, false, 34560, BACKWARD},
        {true, false, false, 35120, BACKWARD + 560},
        {false, true, false, 35120, BACKWARD + 560},
        {false, false, true, 35680, BACKWARD + 1120},
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        fixture f;
        attn_case a = gqa_case();
        json_t *r;
        a.causal = variants[i].causal;
        a.mask = variants[i].mask;
        a.dropout = variants[i].dropout;
        fixture_init(&f, NULL);
        run_math_path(&f, &a);
        run_math_backward(&f, &a, 0.5, 0);
        CHECK_EQ_INT(f.m.npending, 0); /* completed by q's scale */
        r = report(&f);
        CHECK_EQ_INT(json_object_size(json_object_get(r, "by_operator")), 2);
        CHECK_EQ_INT(
            get(r, "by_operator", "aten.scaled_dot_product_attention"),
            variants[i].forward);
        CHECK_EQ_INT(get(r,
                         "by_operator",
                         "aten.scaled_dot_product_attention_backward"),
                     variants[i].backward);
        CHECK_EQ_INT(
            variants[i].backward,
            kernel_backward_count(
                variants[i].causal, variants[i].mask, variants[i].dropout));
        CHECK_EQ_INT(total(r), variants[i].forward + variants[i].backward);
        /* the six products where FlopCounterMode counts them */
        CHECK_EQ_INT(get(r, "matrix_product_flops", "aten.bmm"),
                     31360 + 2 * 13440 + 2 * 17920);
        json_decref(r);
        ts_opstats_free(f.stats);
    }
}

/* Backwards that are not a grouped forward's: operator by operator. */
static void
test_backward_unmatched(void)
{
    fixture f;
    attn_case a = gqa_case();
    json_t *r;

    /* no forward was grouped (a fused kernel ran, or eager code) */
    fixture_init(&f, NULL);
    run_math_backward(&f, &a, 0.5, 0);
    r = report(&f);
    CHECK_EQ_INT(
        get(r, "by_operator", "aten.scaled_dot_product_attention_backward"),
        -1);
    CHECK_EQ_INT(total(r), 70304);
    json_decref(r);
    ts_opstats_free(f.stats);

    /* a scale other than the forward's */
    fixture_init(&f, NULL);
    run_math_path(&f, &a);
    run_math_backward(&f, &a, 0.25, 0);
    r = report(&f);
    CHECK_EQ_INT(total(r), 34560 + 70304);
    json_decref(r);
    ts_opstats_free(f.stats);

    /* only q's gradient (no dV): not the whole backward */
    fixture_init(&f, NULL);
    run_math_path(&f, &a);
    run_math_backward(&f, &a, 0.5, 1);
    r = report(&f);
    CHECK_EQ_INT(total(r), 34560 + 70304 - 13440);
    json_decref(r);
    ts_opstats_free(f.stats);

    /* two forwards, three backwards: the third is not grouped */
    fixture_init(&f, NULL);
    run_math_path(&f, &a);
    run_math_path(&f, &a);
    for (int i = 0; i < 3; i++) {
        run_math_backward(&f, &a, 0.5, 0);
    }
    r = report(&f);
    CHECK_EQ_INT(
        get(r, "by_operator", "aten.scaled_dot_product_attention_backward"),
        2 * BACKWARD);
    CHECK_EQ_INT(total(r), 2 * 34560 + 2 * BACKWARD + 70304);
    json_decref(r);
    ts_opstats_free(f.stats);

    /* sums that come after q's scale are counted as themselves: the total
     * is the same, the grouped backward lacks the group term */
    fixture_init(&f, NULL);
    run_math_path(&f, &a);
    run_math_backward(&f, &a, 0.5, 2);
    r = report(&f);
    CHECK_EQ_INT(
        get(r, "by_operator", "aten.scaled_dot_product_attention_backward"),
        BACKWARD - 2352 - 2 * 80 * 0);
    json_decref(r);
    ts_opstats_free(f.stats);

    /* the forwards stay remembered across a flush */
    fixture_init(&f, NULL);
    run_math_path(&f, &a);
    CHECK_EQ_INT(ts_attn_flush(&f.m, &f.sink), TS_OK);
    run_math_backward(&f, &a, 0.5, 0);
    r = report(&f);
    CHECK_EQ_INT(
        get(r, "by_operator", "aten.scaled_dot_product_attention_backward"),
        BACKWARD);
    json_decref(r);
    ts_opstats_free(f.stats);
}

/* A fused backward kernel is listed as the attention's backward too. */
static void
test_backward_kernels(void)
{
    fixture f;
    ts_op_call c;
    json_t *r;
    fixture_init(&f, NULL);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, "2,8,5,12");
    a_tensor(&c, F, "2,8,5,16");
    a_tensor(&c, F, "2,2,7,16");
    a_tensor(&c, F, "2,2,7,12");
    a_tensor(&c, F, "2,8,5,12");
    a_tensor(&c, F, "2,8,5");
    a_real(&c, 0.0);
    c.args[c.nargs].kind = TS_ARG_BOOL;
    c.args[c.nargs++].i = 0;
    feed(&f,
         "aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
         &c);
    r = report(&f);
    CHECK_EQ_INT(
        get(r, "by_operator", "aten.scaled_dot_product_attention_backward"),
        BACKWARD);
    CHECK_EQ_INT(json_object_size(json_object_get(r, "by_operator")), 1);
    CHECK_EQ_INT(
        get(r,
            "matrix_product_flops",
            "aten._scaled_dot_product_flash_attention_for_cpu_backward"),
        80640);
    json_decref(r);
    ts_opstats_free(f.stats);
}

/* Calls are attributed to the layer that ran them; a sequence that crosses
 * a layer boundary is not one attention. */
static void
test_layers(void)
{
    ts_session *s = ts_session_new(false);
    fixture f;
    attn_case a = gqa_case();
    int root = ts_session_add_module(s, "", "Net", NULL, false);
    int attn = ts_session_add_module(s, "attn", "Attention", NULL, true);
    ts_op_call c;
    json_t *by_path;

    fixture_init(&f, s);
    f.layer = ts_session_begin_call(
        s, root, json_pack("{s:[], s:{}}", "args", "kwargs"), NULL);
    memset(&c, 0, sizeof c);
    a_tensor(&c, F, a.q);
    a_real(&c, 0.5);
    o_tensor(&c, F, a.q);
    feed(&f, "aten.mul.Scalar", &c); /* held back, in the root */
    f.layer = ts_session_begin_call(
        s, attn, json_pack("{s:[], s:{}}", "args", "kwargs"), NULL);
    run_math_path(&f, &a); /* the root's mul is flushed first */
    CHECK(ts_session_end_call(
              s, attn, json_pack("{s:s}", "kind", "none"), false, NULL)
          >= 0);
    CHECK_EQ_INT(ts_attn_flush(&f.m, &f.sink), TS_OK);
    by_path = ts_session_op_flops_by_path(s);
    CHECK_EQ_INT(json_integer_value(json_object_get(by_path, "attn")), 34560);
    CHECK_EQ_INT(json_integer_value(json_object_get(by_path, "")), 1280);
    json_decref(by_path);
    ts_opstats_free(f.stats);
    ts_session_free(s);
}

static void
test_roles(void)
{
    CHECK_EQ_INT(ts_attn_role_of("aten.mul.Scalar"), TS_ATTN_ROLE_SCALE);
    CHECK_EQ_INT(ts_attn_role_of("aten.mul.Tensor"), TS_ATTN_ROLE_DROPOUT_MUL);
    CHECK_EQ_INT(ts_attn_role_of("aten.bmm.default"), TS_ATTN_ROLE_BMM);
    CHECK_EQ_INT(ts_attn_role_of("aten.add_.Tensor"), TS_ATTN_ROLE_ADD);
    CHECK_EQ_INT(ts_attn_role_of("aten._safe_softmax.default"),
                 TS_ATTN_ROLE_SOFTMAX);
    CHECK_EQ_INT(ts_attn_role_of("aten._softmax_backward_data.default"),
                 TS_ATTN_ROLE_SOFTMAX_BW);
    CHECK_EQ_INT(ts_attn_role_of("aten.sum.dim_IntList"), TS_ATTN_ROLE_SUM);
    CHECK_EQ_INT(ts_attn_role_of("aten.bmm.out"), TS_ATTN_ROLE_NONE);
    CHECK_EQ_INT(ts_attn_role_of("aten.mul"), TS_ATTN_ROLE_NONE);
    CHECK_EQ_INT(ts_attn_role_of(NULL), TS_ATTN_ROLE_NONE);
}

int
main(void)
{
    test_roles();
    test_math_path_counts_as_the_kernels();
    test_broken_sequences_count_operator_by_operator();
    test_sequences_and_kernels();
    test_backward_counts_as_the_kernels();
    test_backward_unmatched();
    test_backward_kernels();
    test_layers();
    printf("near misses: %ld sequences replayed, %ld failed\n",
           replays,
           replay_failures);
    CHECK_EQ_INT(replay_failures, 0);
    return ts_test_report();
}
