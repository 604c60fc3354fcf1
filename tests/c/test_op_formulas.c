/* Tests for the operator formulas: src/core/op_formulas*.c and the table in
 * src/core/op_table.c.
 *
 * Native (FlopCounterMode) numbers were obtained with torch 2.13 in
 * /work/main/.venv/bin/python with this prelude:
 *
 *   import torch; from torch.utils.flop_counter import FlopCounterMode, \
 *       flop_registry, conv_flop_count; aten = torch.ops.aten
 *   r = torch.randn; m = lambda *s: torch.empty(*s, device="meta")
 *   def fc(f):
 *       with FlopCounterMode(display=False) as c: f()
 *       return c.get_total_flops()
 *
 * and the expression quoted next to each number. Operators without a CPU
 * kernel were counted by calling their registered formula,
 * flop_registry[aten.X](...), on meta tensors. Supplemental numbers are
 * derived by hand from contract 2.2; the arithmetic is in the comments.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "op_calls.h"
#include "torchscan/op_formulas.h"

#ifndef TS_SOURCE_ROOT
#define TS_SOURCE_ROOT "."
#endif

#define F TS_DTYPE_FLOAT
#define CX TS_DTYPE_COMPLEX
#define I TS_DTYPE_INT
#define B TS_DTYPE_BOOL

/* ---- running formulas --------------------------------------------------- */

static ts_op_result result;
static ts_error error;

/* ---- near misses, systematically ------------------------------------------
 * Every call a test runs is also run after each of these edits: each
 * argument made absent, None, of another kind, its tensor reshaped, of
 * another dtype or not dense, its ints or number changed; arguments cut
 * off; outputs taken away or reshaped. The formulas' guards refuse most
 * of them; whatever a formula answers must be well formed: TS_OK with
 * every field of the result written (a count >= 0, matrix FLOPs >= 0 (not
 * bounded by the count: the raw attention kernels' are FlopCounterMode's
 * own reading of the arguments), an incomplete count with its message
 * and a complete one without), or a negative status with err set to it and a
 * message; the same both times it is asked. */

static long sweep_runs, sweep_refused;
static const char *sweep_name;

static void
sweep_one(ts_op_formula formula, const ts_op_call *c)
{
    ts_op_result a, b;
    ts_error ea, eb;
    int rc, again;
    for (int k = 0; k < 2; k++) {
        ts_op_result *r = k == 0 ? &a : &b;
        r->flops = -12345;
        r->matrix_flops = -54321;
        r->incomplete = true;
        r->incomplete_message = "poison";
    }
    ts_error_clear(&ea);
    ts_error_clear(&eb);
    rc = formula(c, &a, &ea);
    again = formula(c, &b, &eb);
    sweep_runs++;
    CHECK(rc == again);
    if (rc != TS_OK) {
        sweep_refused++;
        CHECK(rc < 0 && ea.code == rc && ea.message[0] != '\0'
              && strcmp(ea.message, eb.message) == 0);
        return;
    }
    CHECK(a.flops >= 0 && a.matrix_flops >= 0 && a.flops == b.flops
          && a.matrix_flops == b.matrix_flops);
}

static void
reshape(ts_shape *s, int how)
{
    if (s->ndim > TS_MAX_DIMS) {
        s->ndim = TS_MAX_DIMS; /* a guard test's rank: cut to the most */
        return;
    }
    switch (how) {
        case 0:
            if (s->ndim > 0) {
                s->dims[s->ndim - 1] += 1;
            }
            break;
        case 1:
            if (s->ndim > 0) {
                s->ndim -= 1;
            }
            break;
        case 2:
            if (s->ndim >= 0 && s->ndim < TS_MAX_DIMS) {
                s->dims[s->ndim++] = 2;
            }
            break;
        case 3:
            s->dtype = CX;
            break;
        case 4:
            s->dtype = s->dtype == I ? F : I;
            break;
        case 5:
            s->dtype = B;
            break;
        case 6:
            s->dense = false;
            break;
        default:
            if (s->ndim > 0) {
                s->dims[0] = 0;
            }
            break;
    }
}

#define RESHAPES 8

static void
sweep(ts_op_formula formula, const ts_op_call *orig)
{
    ts_op_call c;
#define RESET() memcpy(&c, orig, sizeof c)
    for (int i = 0; i < orig->nargs; i++) {
        ts_op_arg *a = &c.args[i];
        RESET();
        a->kind = TS_ARG_ABSENT;
        sweep_one(formula, &c);
        RESET();
        a->kind = TS_ARG_NONE;
        sweep_one(formula, &c);
        RESET();
        a->kind = a->kind == TS_ARG_TENSOR ? TS_ARG_INT : TS_ARG_TENSOR;
        sweep_one(formula, &c);
        RESET();
        a->kind = a->kind == TS_ARG_INTS ? TS_ARG_REAL : TS_ARG_INTS;
        sweep_one(formula, &c);
        RESET();
        a->i += 1;
        a->r = a->r * 2 + 0.5;
        for (int k = 0; k < a->nints; k++) {
            a->ints[k] += 1;
        }
        sweep_one(formula, &c);
        RESET();
        a->i = -1;
        a->nints = a->nints > 0 ? a->nints - 1 : 0;
        sweep_one(formula, &c);
        for (int how = 0; how < RESHAPES; how++) {
            if (orig->args[i].kind == TS_ARG_TENSOR
                || orig->args[i].kind == TS_ARG_TENSORS) {
                RESET();
                reshape(&a->tensor, how);
                sweep_one(formula, &c);
            }
        }
        RESET();
        c.nargs = i;
        sweep_one(formula, &c);
    }
    RESET();
    c.nouts = 0;
    sweep_one(formula, &c);
    for (int o = 0; o < orig->nouts; o++) {
        for (int how = 0; how < RESHAPES; how++) {
            RESET();
            reshape(&c.outs[o], how);
            sweep_one(formula, &c);
        }
    }
    RESET();
    c.overload = c.overload == NULL ? "out" : NULL;
    sweep_one(formula, &c);
#undef RESET
}

/* Runs the packet's formula on a poisoned result, so that the tests also
 * check that every field is written. */
static int
run(const char *name, const ts_op_call *c)
{
    const ts_op_entry *e = ts_op_lookup(name);
    if (e != NULL && e->formula != NULL) {
        sweep_name = name;
        sweep(e->formula, c);
    }
    ts_error_clear(&error);
    result.flops = -12345;
    result.matrix_flops = -54321;
    result.incomplete = true;
    result.incomplete_message = "poison";
    if (e == NULL || e->formula == NULL) {
        fprintf(stderr, "no formula for %s\n", name);
        return -100;
    }
    return e->formula(c, &result, &error);
}

#define CHECK_FLOPS(name, call, expected)          \
    do {                                           \
        CHECK_EQ_INT(run((name), &(call)), TS_OK); \
        CHECK_EQ_INT(result.flops, (expected));    \
    } while (0)

/* A complete count: no incomplete diagnostic. */
#define CHECK_EXACT(name, call, expected)         \
    do {                                          \
        CHECK_FLOPS((name), (call), (expected));  \
        CHECK(!result.incomplete);                \
        CHECK(result.incomplete_message == NULL); \
    } while (0)

#define CHECK_FAILS(name, call, status, fragment)              \
    do {                                                       \
        CHECK_EQ_INT(run((name), &(call)), (status));          \
        CHECK_EQ_INT(error.code, (status));                    \
        CHECK(strstr(error.message, (fragment)) != NULL);      \
        if (strstr(error.message, (fragment)) == NULL) {       \
            fprintf(stderr, "  message: %s\n", error.message); \
        }                                                      \
    } while (0)

#define CHECK_UNSUPPORTED(name, call, fragment) \
    CHECK_FAILS((name), (call), TS_EUNSUPPORTED, (fragment))

static const char COMPLEX_MSG[] = "inside complex arithmetic";
static const char REAL_ONLY[] = "real arithmetic only";
static const char LAYOUT[] = "dense strided tensors";

/* ==== the table ========================================================== */

static void
test_table(void)
{
    const ts_op_entry *t = NULL;
    size_t n = ts_op_table(&t);
    size_t ignored = 0, native = 0, attention = 0, supplemental = 0;
    size_t extension = 0, collective = 0;

    CHECK(t != NULL);
    if (t == NULL) {
        return;
    }
    CHECK_EQ_INT(ts_op_table(NULL), n);
    for (size_t i = 0; i < n; i++) {
        /* Strictly increasing: sorted for the binary search and free of
         * duplicates. */
        if (i > 0) {
            CHECK(strcmp(t[i - 1].name, t[i].name) < 0);
        }
        CHECK(strncmp(t[i].name, "aten.", 5) == 0
              || strncmp(t[i].name, "profiler.", 9) == 0
              || strncmp(t[i].name, "torchvision.", 12) == 0
              || strncmp(t[i].name, "c10d.", 5) == 0
              || strncmp(t[i].name, "_c10d_functional.", 17) == 0
              || strncmp(t[i].name, "_c10d_functional_autograd.", 26) == 0
              || strncmp(t[i].name, "_dtensor.", 9) == 0
              || strncmp(t[i].name, "fsdp.", 5) == 0);
        CHECK((t[i].formula == NULL) != (t[i].ignore_reason == NULL));
        CHECK(ts_op_lookup(t[i].name) == &t[i]);
        if ((t[i].flags & TS_OPF_EXTENSION) != 0) {
            extension++;
        }
        if (t[i].formula == NULL) {
            ignored++;
            /* Ignored entries are either the contract's or ours. */
            CHECK((t[i].flags & ~(unsigned)TS_OPF_EXTENSION) == 0);
            CHECK(t[i].formula_text == NULL);
            continue;
        }
        CHECK(t[i].formula_text != NULL && t[i].formula_text[0] != '\0');
        /* Every convention TorchScan adds is documented with its
         * derivation (docs/operator-flops.md shows the notes). */
        if ((t[i].flags & TS_OPF_EXTENSION) != 0) {
            CHECK((t[i].flags & TS_OPF_NATIVE) == 0);
            CHECK(t[i].notes != NULL && t[i].notes[0] != '\0');
            if (t[i].notes == NULL) {
                fprintf(stderr, "  undocumented %s\n", t[i].name);
            }
        }
        if ((t[i].flags & TS_OPF_COLLECTIVE) != 0) {
            /* torch.distributed's: their own convention, documented */
            collective++;
            CHECK(t[i].flags == TS_OPF_COLLECTIVE);
            CHECK(t[i].notes != NULL && t[i].notes[0] != '\0');
        }
        if ((t[i].flags & TS_OPF_ATTENTION) != 0) {
            attention++;
            /* every attention formula lists its products apart */
            CHECK((t[i].flags & TS_OPF_MATRIX) != 0);
            CHECK(strstr(t[i].name, "attention") != NULL);
        }
        /* FlopCounterMode's packets list their matrix products */
        if ((t[i].flags & TS_OPF_NATIVE) != 0) {
            CHECK((t[i].flags & TS_OPF_MATRIX) != 0);
        }
        if ((t[i].flags & TS_OPF_NATIVE) != 0) {
            native++;
        }
        else {
            supplemental++;
        }
    }
    /* Contract ignore list: 16 views + 10 data movement + 3 allocation + 9
     * creation = 38; ours: 11 views (with _conj, view_as_real/complex),
     * 20 data movement, 3 allocation, 5 creation (with
     * _efficientzerotensor), 24 random (bernoulli(_), rand(_like),
     * randn(_like), randint(_like), randperm, normal(_), normal_functional,
     * uniform(_), exponential_, geometric_, cauchy_, log_normal_, random_,
     * multinomial, poisson, binomial, _standard_gamma, _sample_dirichlet),
     * 3 profiler annotations = 66; then 5 more creation operators (eye,
     * linspace, logspace, tril_indices, triu_indices) and one error check
     * (_linalg_check_errors) = 72; then 6 around torch.distributed's
     * collectives: _c10d_functional's wait_tensor and _wrap_tensor_autograd
     * (bookkeeping), FSDP2's all_gather_copy_in, chunk_cat, copy_ and
     * split_with_sizes_copy (data movement). */
    CHECK_EQ_INT(ignored, 116);
    CHECK_EQ_STR(ts_op_lookup("aten.linspace")->ignore_reason,
                 "Tensor creation is excluded from FLOPs.");
    CHECK_EQ_STR(ts_op_lookup("aten._linalg_check_errors")->ignore_reason,
                 "Checks a linear-algebra result for errors: no arithmetic.");
    CHECK_EQ_STR(ts_op_lookup("aten.randn")->ignore_reason,
                 "Random number generation is excluded from FLOPs.");
    CHECK_EQ_STR(ts_op_lookup("profiler._record_function_exit")->ignore_reason,
                 "Profiler annotation: no arithmetic.");
    /* FlopCounterMode's 21 aten packets (its other two keys are the
     * flex_attention higher-order operators). */
    CHECK_EQ_INT(native, 21);
    /* attention convention: the 10 FlopCounterMode packets, the CPU
     * kernel and its backward, the overrideable kernel and its backward,
     * and the composite scaled_dot_product_attention */
    CHECK_EQ_INT(attention, 15);
    /* 110 contract 2.2 packets and 195 extensions with formulas (with
     * cudnn_ and miopen_batch_norm(_backward)): 171, then 24 for vision
     * models (floor, ceil, trunc, round, log2, remainder and their in-place
     * packets, sort, topk, _unique2, nonzero, grid_sampler_2d,
     * upsample_bicubic2d, and torchvision's nms, roi_align, roi_pool,
     * ps_roi_align, ps_roi_pool, deform_conv2d). */
    /* then 5 for Mixture-of-Experts routers and wav2vec2: histc,
     * floor_divide(_), _weight_norm_interface(_backward). */
    /* then 3 for attention: the overrideable kernel and its backward, the
     * composite aten.scaled_dot_product_attention. */
    /* and 40 collectives of torch.distributed (torchscan_collective_bytes_v1):
     * 20 of c10d, 16 of _c10d_functional, 3 of _c10d_functional_autograd,
     * _dtensor.shard_dim_alltoall. */
    CHECK_EQ_INT(collective, 40);
    CHECK_EQ_INT(supplemental, 313 + 40);
    CHECK_EQ_INT(extension, 195 + 72 + 5 + 3 + 6);
    CHECK_EQ_INT(n, ignored + native + supplemental);
    CHECK_EQ_INT(n, 490);

    CHECK(ts_op_lookup(NULL) == NULL);
    CHECK(ts_op_lookup("") == NULL);
    CHECK(ts_op_lookup("aten.mm.default") == NULL); /* packets only */
    CHECK(ts_op_lookup("aten.sinc") == NULL);
    CHECK(ts_op_lookup("aten.aaa") == NULL);
    CHECK(ts_op_lookup("zzz") == NULL);
    CHECK(
        ts_op_lookup("aten._scaled_dot_product_flash_attention_for_cpu")->flags
        == (TS_OPF_ATTENTION | TS_OPF_MATRIX | TS_OPF_SDPA_FORWARD));
}

static void
check_ignored(const char *names, const char *reason)
{
    char buf[64];
    const char *p = names;
    while (*p != '\0') {
        size_t len = strcspn(p, " ");
        const ts_op_entry *e;
        snprintf(buf, sizeof buf, "aten.%.*s", (int)len, p);
        e = ts_op_lookup(buf);
        CHECK(e != NULL);
        if (e != NULL) {
            CHECK(e->formula == NULL);
            CHECK_EQ_STR(e->ignore_reason, reason);
        }
        else {
            fprintf(stderr, "  missing %s\n", buf);
        }
        p += len;
        p += strspn(p, " ");
    }
}

static void
test_ignored(void)
{
    check_ignored(
        "_unsafe_view alias as_strided detach expand narrow permute "
        "select slice squeeze squeeze_ t transpose unbind "
        "unsqueeze view",
        "Metadata-only tensor view.");
    check_ignored(
        "_to_copy cat clone contiguous copy_ split "
        "split_with_sizes to fill_ zero_",
        "Data movement is excluded from FLOPs.");
    check_ignored("empty empty_strided empty_like",
                  "Tensor allocation is excluded from FLOPs.");
    check_ignored(
        "full full_like lift_fresh lift_fresh_copy ones ones_like "
        "scalar_tensor zeros zeros_like",
        "Tensor creation is excluded from FLOPs.");
    /* The same categories for operators the contract does not name. */
    check_ignored(
        "as_strided_ transpose_ t_ unsqueeze_ detach_ _reshape_alias "
        "diagonal unfold",
        "Metadata-only tensor view.");
    check_ignored(
        "stack repeat constant_pad_nd select_backward slice_backward "
        "_local_scalar_dense unsafe_split unsafe_split_with_sizes flip roll "
        "select_scatter slice_scatter reflection_pad1d reflection_pad2d "
        "reflection_pad3d replication_pad1d replication_pad2d "
        "replication_pad3d _foreach_copy_ _foreach_zero_",
        "Data movement is excluded from FLOPs.");
    check_ignored("new_empty new_empty_strided empty_permuted",
                  "Tensor allocation is excluded from FLOPs.");
    check_ignored("new_ones new_zeros new_full arange",
                  "Tensor creation is excluded from FLOPs.");
    check_ignored("bernoulli bernoulli_",
                  "Random number generation is excluded from FLOPs.");
    CHECK((ts_op_lookup("aten.bernoulli_")->flags & TS_OPF_EXTENSION) != 0);
    CHECK(ts_op_lookup("aten.cat")->flags == 0);
}

/* ==== native: matrix products ============================================ */

static void
test_matmul(void)
{
    ts_op_call c;

    /* fc(lambda: aten.mm(r(3,4), r(4,5))) -> 120; 2*3*5*4 = 120 */
    c = call_new();
    a_tensor(&c, F, "3,4");
    a_tensor(&c, F, "4,5");
    o_tensor(&c, F, "3,5");
    CHECK_EXACT("aten.mm", c, 120);

    /* Integer matmuls count too: the dtype guards are supplemental-only. */
    c.args[0].tensor.dtype = I;
    c.args[1].tensor.dtype = I;
    c.outs[0].dtype = I;
    CHECK_EXACT("aten.mm", c, 120);

    /* fc(lambda: aten.mm(r(3,4).to(torch.complex64), r(4,5).to(...)))
     * -> 120, and the reference flags it incomplete. */
    c.args[0].tensor.dtype = CX;
    c.args[1].tensor.dtype = CX;
    c.outs[0].dtype = CX;
    CHECK_FLOPS("aten.mm", c, 120);
    CHECK(result.incomplete);
    CHECK(result.incomplete_message != NULL
          && strstr(result.incomplete_message, COMPLEX_MSG) != NULL);

    /* A complex output alone stands for a complex out_dtype argument. */
    c.args[0].tensor.dtype = F;
    c.args[1].tensor.dtype = F;
    CHECK_FLOPS("aten.mm", c, 120);
    CHECK(result.incomplete);

    /* mm.out(self, mat2, *, out): the out tensor is an argument. */
    c = call_new();
    a_tensor(&c, F, "3,4");
    a_tensor(&c, F, "4,5");
    a_tensor(&c, F, "3,5");
    o_tensor(&c, F, "3,5");
    CHECK_EXACT("aten.mm", c, 120);

    c = call_new();
    a_tensor(&c, F, "3,4");
    a_tensor(&c, F, "5,5");
    CHECK_UNSUPPORTED("aten.mm", c, "inner dimensions differ");
    c = call_new();
    a_tensor(&c, F, "2,3,4");
    a_tensor(&c, F, "4,5");
    CHECK_UNSUPPORTED("aten.mm", c, "2-D");

    /* Sparse operands bypass even native formulas in the reference. */
    c = call_new();
    a_tensor(&c, F, "3,4");
    a_tensor(&c, F, "4,5");
    c.args[0].tensor.dense = false;
    CHECK_UNSUPPORTED("aten.mm", c, LAYOUT);

    /* 2^31 * 2^31 * 2 * 2^31 = 2^94 does not fit. */
    c = call_new();
    a_tensor(&c, F, "2147483648,2147483648");
    a_tensor(&c, F, "2147483648,2147483648");
    CHECK_FAILS("aten.mm", c, TS_EOVERFLOW, "64-bit");

    /* fc(lambda: aten.addmm(r(5), r(3,4), r(4,5))) -> 120 (bias free) */
    c = call_new();
    a_tensor(&c, F, "5");
    a_tensor(&c, F, "3,4");
    a_tensor(&c, F, "4,5");
    a_real(&c, 0.5); /* beta */
    a_int(&c, 2);    /* alpha */
    o_tensor(&c, F, "3,5");
    CHECK_EXACT("aten.addmm", c, 120);

    /* fc(lambda: aten.bmm(r(2,3,4), r(2,4,5))) -> 240; 2*2*3*5*4 */
    c = call_new();
    a_tensor(&c, F, "2,3,4");
    a_tensor(&c, F, "2,4,5");
    o_tensor(&c, F, "2,3,5");
    CHECK_EXACT("aten.bmm", c, 240);
    c.args[1].tensor.dims[0] = 3;
    CHECK_UNSUPPORTED("aten.bmm", c, "batch or inner");

    /* fc(lambda: aten.baddbmm(r(2,3,5), r(2,3,4), r(2,4,5))) -> 240 */
    c = call_new();
    a_tensor(&c, F, "2,3,5");
    a_tensor(&c, F, "2,3,4");
    a_tensor(&c, F, "2,4,5");
    o_tensor(&c, F, "2,3,5");
    CHECK_EXACT("aten.baddbmm", c, 240);

    /* flop_registry[aten._scaled_mm](m(16,32), m(32,8), m(1), m(1),
     *     out_val=m(16,8)) -> 8192; 2*16*8*32 */
    c = call_new();
    a_tensor(&c, TS_DTYPE_OTHER, "16,32");
    a_tensor(&c, TS_DTYPE_OTHER, "32,8");
    a_tensor(&c, F, "1");
    a_tensor(&c, F, "1");
    o_tensor(&c, F, "16,8");
    CHECK_EXACT("aten._scaled_mm", c, 8192);
}

/* ==== native: convolutions =============================================== */

/* convolution(input, weight, bias, stride, padding, dilation, transposed,
 * output_padding, groups) */
static ts_op_call
conv_call(const char *x, const char *w, bool transposed, const char *y)
{
    ts_op_call c = call_new();
    a_tensor(&c, F, x);
    a_tensor(&c, F, w);
    a_none(&c);
    a_ints(&c, "1,1");
    a_ints(&c, "0,0");
    a_ints(&c, "1,1");
    a_bool(&c, transposed);
    a_ints(&c, "0,0");
    a_int(&c, 1);
    o_tensor(&c, F, y);
    return c;
}

static void
test_convolution(void)
{
    ts_op_call c;

    /* fc(lambda: aten.convolution(r(2,3,8,8), r(4,3,3,3), None, [1,1],
     *     [0,0], [1,1], False, [0,0], 1)) -> 15552
     * = 36 (6x6 out) * 9 (3x3) * 2 (batch) * 4 * 3 * 2 */
    c = conv_call("2,3,8,8", "4,3,3,3", false, "2,4,6,6");
    CHECK_EXACT("aten.convolution", c, 15552);
    CHECK_EXACT("aten.convolution_overrideable", c, 15552);

    /* Grouped: fc(lambda: aten.convolution(r(2,4,8,8), r(6,2,3,3), r(6),
     *     [1,1], [0,0], [1,1], False, [0,0], 2)) -> 15552
     * = 36 * 9 * 2 * 6 * 2 (w[1] = c_in/groups, groups not applied) * 2 */
    c = conv_call("2,4,8,8", "6,2,3,3", false, "2,6,6,6");
    c.args[2].kind = TS_ARG_TENSOR;
    c.args[2].tensor = shape(F, "6");
    c.args[8].i = 2;
    CHECK_EXACT("aten.convolution", c, 15552);

    /* Transposed: fc(lambda: aten.convolution(r(2,4,5,5), r(4,3,3,3), None,
     *     [1,1], [0,0], [1,1], True, [0,0], 1)) -> 10800
     * = 25 (5x5 *input*) * 9 * 2 * 4 * 3 * 2 */
    c = conv_call("2,4,5,5", "4,3,3,3", true, "2,3,7,7");
    CHECK_EXACT("aten.convolution", c, 10800);

    /* 1-D: fc(lambda: aten.convolution(r(2,3,10), r(5,3,4), None, [1], [0],
     *     [1], False, [0], 1)) -> 1680 = 7 * 4 * 2 * 5 * 3 * 2 */
    c = conv_call("2,3,10", "5,3,4", false, "2,5,7");
    CHECK_EXACT("aten.convolution", c, 1680);

    /* fc(lambda: aten._convolution(r(2,3,8,8), r(4,3,3,3), None, [2,2],
     *     [1,1], [1,1], False, [0,0], 1, False, False, True, True))
     * -> 6912 = 16 (4x4 out) * 9 * 2 * 4 * 3 * 2 */
    c = conv_call("2,3,8,8", "4,3,3,3", false, "2,4,4,4");
    a_bool(&c, false);
    a_bool(&c, false);
    a_bool(&c, true);
    a_bool(&c, true);
    CHECK_EXACT("aten._convolution", c, 6912);

    /* Without an output shape a forward convolution cannot be counted. */
    c = conv_call("2,3,8,8", "4,3,3,3", false, "2,4,6,6");
    c.nouts = 0;
    CHECK_UNSUPPORTED("aten.convolution", c, "output shape");
    c = conv_call("2,3,8,8", "4", false, "2,4,6,6");
    CHECK_UNSUPPORTED("aten.convolution", c, "weight");

    /* Complex convolution: counted, flagged incomplete. */
    c = conv_call("2,3,8,8", "4,3,3,3", false, "2,4,6,6");
    c.args[0].tensor.dtype = CX;
    CHECK_FLOPS("aten.convolution", c, 15552);
    CHECK(result.incomplete);

    /* cudnn_convolution(self, weight, padding, stride, dilation, groups,
     * benchmark, deterministic, allow_tf32); FlopCounterMode reads
     * benchmark as transposed:
     * flop_registry[aten.cudnn_convolution](m(2,3,8,8), m(4,3,3,3), [0,0],
     *     [1,1], [1,1], 1, B, False, False, out_val=m(2,4,6,6))
     * -> 15552 for B=False, 27648 for B=True (= 64 (8x8 input) * 9 * 2 *
     * 4 * 3 * 2). */
    c = call_new();
    a_tensor(&c, F, "2,3,8,8");
    a_tensor(&c, F, "4,3,3,3");
    a_ints(&c, "0,0");
    a_ints(&c, "1,1");
    a_ints(&c, "1,1");
    a_int(&c, 1);
    a_bool(&c, false);
    a_bool(&c, false);
    a_bool(&c, false);
    o_tensor(&c, F, "2,4,6,6");
    CHECK_EXACT("aten.cudnn_convolution", c, 15552);
    c.args[6].i = 1;
    CHECK_EXACT("aten.cudnn_convolution", c, 27648);

    /* _slow_conv2d_forward(self, weight, kernel_size, bias, stride,
     * padding): fc(lambda: aten._slow_conv2d_forward(r(2,3,8,8),
     * r(4,3,3,3), [3,3], None, [1,1], [0,0])) raises TypeError in
     * FlopCounterMode; conv_flop_count([2,3,8,8], [4,3,3,3], [2,4,6,6])
     * -> 15552 is what its formula means for a forward convolution. */
    c = call_new();
    a_tensor(&c, F, "2,3,8,8");
    a_tensor(&c, F, "4,3,3,3");
    a_ints(&c, "3,3");
    a_none(&c);
    a_ints(&c, "1,1");
    a_ints(&c, "0,0");
    o_tensor(&c, F, "2,4,6,6");
    CHECK_EXACT("aten._slow_conv2d_forward", c, 15552);
}

/* convolution_backward(grad_output, input, weight, bias_sizes, stride,
 * padding, dilation, transposed, output_padding, groups, output_mask) */
static ts_op_call
conv_bwd_call(const char *go,
              const char *x,
              const char *w,
              bool transposed,
              int64_t groups,
              const char *mask)
{
    ts_op_call c = call_new();
    a_tensor(&c, F, go);
    a_tensor(&c, F, x);
    a_tensor(&c, F, w);
    a_none(&c);
    a_ints(&c, "1,1");
    a_ints(&c, "0,0");
    a_ints(&c, "1,1");
    a_bool(&c, transposed);
    a_ints(&c, "0,0");
    a_int(&c, groups);
    a_ints(&c, mask);
    o_tensor(&c, F, x);
    o_tensor(&c, F, w);
    o_tensor(&c, F, "");
    return c;
}

static void
test_convolution_backward(void)
{
    ts_op_call c;

    /* go=r(2,4,6,6); x=r(2,3,8,8); w=r(4,3,3,3)
     * fc(lambda: aten.convolution_backward(go, x, w, [4], [1,1], [0,0],
     *     [1,1], False, [0,0], 1, MASK))
     * MASK [T,T,F] -> 31104, [T,F,F] -> 15552, [F,T,T] -> 15552,
     * [F,F,T] -> 0.
     * grad_input: 36 (go 6x6) * 9 * 2 * 4 * 3 * 2 = 15552;
     * grad_weight: batch x[1]=3, conv 3x3=9, filter go 6x6=36,
     * c_out go[1]=4, c_in go[0]=2: 9 * 36 * 3 * 4 * 2 * 2 = 15552. */
    c = conv_bwd_call("2,4,6,6", "2,3,8,8", "4,3,3,3", false, 1, "1,1,0");
    CHECK_EXACT("aten.convolution_backward", c, 31104);
    c = conv_bwd_call("2,4,6,6", "2,3,8,8", "4,3,3,3", false, 1, "1,0,0");
    CHECK_EXACT("aten.convolution_backward", c, 15552);
    c = conv_bwd_call("2,4,6,6", "2,3,8,8", "4,3,3,3", false, 1, "0,1,1");
    CHECK_EXACT("aten.convolution_backward", c, 15552);
    c = conv_bwd_call("2,4,6,6", "2,3,8,8", "4,3,3,3", false, 1, "0,0,1");
    CHECK_EXACT("aten.convolution_backward", c, 0);

    /* Transposed, go=r(2,3,7,7); x=r(2,4,5,5); w=r(4,3,3,3), True:
     * [T,T,F] -> 21600, [T,F,F] -> 10800, [F,T,F] -> 10800.
     * grad_input: 25 (input 5x5) * 9 * 2 * 4 * 3 * 2 = 10800;
     * grad_weight: batch go[1]=3, conv 9, filter x 5x5=25, c_out x[1]=4,
     * c_in x[0]=2: 9 * 25 * 3 * 4 * 2 * 2 = 10800. */
    c = conv_bwd_call("2,3,7,7", "2,4,5,5", "4,3,3,3", true, 1, "1,1,0");
    CHECK_EXACT("aten.convolution_backward", c, 21600);
    c = conv_bwd_call("2,3,7,7", "2,4,5,5", "4,3,3,3", true, 1, "1,0,0");
    CHECK_EXACT("aten.convolution_backward", c, 10800);
    c = conv_bwd_call("2,3,7,7", "2,4,5,5", "4,3,3,3", true, 1, "0,1,0");
    CHECK_EXACT("aten.convolution_backward", c, 10800);

    /* Grouped, go=r(2,6,6,6); x=r(2,4,8,8); w=r(6,2,3,3), groups 2,
     * [T,T,F] -> 46656 = 15552 (36*9*2*6*2*2) + 31104 (9*36*4*6*2*2). */
    c = conv_bwd_call("2,6,6,6", "2,4,8,8", "6,2,3,3", false, 2, "1,1,0");
    CHECK_EXACT("aten.convolution_backward", c, 46656);

    /* The count does not depend on how outputs are packed: the binding
     * marks None outputs (output_mask false) with ndim -1, and may give
     * none at all. */
    c.outs[2].ndim = -1;
    c.outs[2].dense = false;
    c.outs[2].dtype = TS_DTYPE_OTHER;
    CHECK_EXACT("aten.convolution_backward", c, 46656);
    c.outs[0].ndim = -1;
    CHECK_EXACT("aten.convolution_backward", c, 46656);
    c.nouts = 0;
    CHECK_EXACT("aten.convolution_backward", c, 46656);

    c.args[10].kind = TS_ARG_OTHER;
    CHECK_UNSUPPORTED("aten.convolution_backward", c, "output_mask");
}

/* ==== attention: one convention for every kernel ========================
 * The attention convention (op_formulas_attention.c): rows = B*Hq*T,
 * scores = rows*S, forward 2*scores*(Dq + Dv) + scores*(6 + masks +
 * 2*[dropout]) - 2*rows, backward 2*scores*(3*Dq + 2*Dv) + scores*(6 +
 * masks + 2*[dropout]) + rows*(2*Dv - 1) + (Hq - Hk)*B*S*(Dq + Dv). The
 * matrix products (matrix_flops) are FlopCounterMode's count, quoted from
 *   flop_registry[aten._scaled_dot_product_efficient_attention](q, k, v,
 *       None, out_val=None)
 * and the same for the flash and cuDNN packets (q=m(2,8,5,16),
 * k=m(2,2,7,16), v=m(2,2,7,12): 31360 for each), and their backward
 * (go=m(2,8,5,12): 80640). test_attention_match.c feeds the same calls'
 * math path (mul, bmm, _safe_softmax, bmm) to the operator counter's
 * matcher and checks that it counts what every kernel here counts. */

#define CHECK_MATRIX(expected) CHECK_EQ_INT(result.matrix_flops, (expected))

/* Where a kernel keeps is_causal, the mask/bias and dropout_p (-1: it has
 * none). */
typedef struct kernel_layout {
    const char *name;
    bool backward;
    int mask, dropout, causal;
} kernel_layout;

static const kernel_layout forward_kernels[] = {
    {"aten._scaled_dot_product_flash_attention_for_cpu", false, 5, 3, 4},
    {"aten._scaled_dot_product_flash_attention", false, -1, 3, 4},
    {"aten._scaled_dot_product_efficient_attention", false, 3, 5, 6},
    {"aten._scaled_dot_product_cudnn_attention", false, 3, 5, 6},
    {"aten._scaled_dot_product_fused_attention_overrideable", false, 3, 4, 5},
    {"aten.scaled_dot_product_attention", false, 3, 4, 5},
};

static const kernel_layout backward_kernels[] = {
    {"aten._scaled_dot_product_flash_attention_for_cpu_backward",
     true,
     8,
     6,
     7},
    {"aten._scaled_dot_product_flash_attention_backward", true, -1, 10, 11},
    {"aten._scaled_dot_product_efficient_attention_backward", true, 4, 9, 11},
    {"aten._scaled_dot_product_cudnn_attention_backward", true, 8, 13, 14},
    {"aten._scaled_dot_product_fused_attention_overrideable_backward",
     true,
     4,
     12,
     13},
};

#define N_FORWARD (int)(sizeof forward_kernels / sizeof forward_kernels[0])
#define N_BACKWARD (int)(sizeof backward_kernels / sizeof backward_kernels[0])

/* One call of a kernel: q, k, v (and grad_out for a backward) in place,
 * every other argument None, then the flags asked for. */
static ts_op_call
kernel_call(const kernel_layout *k,
            const char *q,
            const char *key,
            const char *v,
            const char *grad_out,
            bool causal,
            bool mask,
            double dropout)
{
    ts_op_call c = call_new();
    int first = k->backward ? 1 : 0;
    int n = 3 + first;
    n = k->mask >= n ? k->mask + 1 : n;
    n = k->dropout >= n ? k->dropout + 1 : n;
    n = k->causal >= n ? k->causal + 1 : n;
    while (c.nargs < n) {
        a_none(&c);
    }
    if (k->backward) {
        c.args[0].kind = TS_ARG_TENSOR;
        c.args[0].tensor = shape(F, grad_out);
    }
    c.args[first].kind = TS_ARG_TENSOR;
    c.args[first].tensor = shape(F, q);
    c.args[first + 1].kind = TS_ARG_TENSOR;
    c.args[first + 1].tensor = shape(F, key);
    c.args[first + 2].kind = TS_ARG_TENSOR;
    c.args[first + 2].tensor = shape(F, v);
    c.args[k->causal].kind = TS_ARG_BOOL;
    c.args[k->causal].i = causal;
    c.args[k->dropout].kind = TS_ARG_REAL;
    c.args[k->dropout].r = dropout;
    if (mask && k->mask >= 0) {
        c.args[k->mask].kind = TS_ARG_TENSOR;
        c.args[k->mask].tensor = shape(F, "5,7");
    }
    return c;
}

static void
test_sdpa(void)
{
    ts_op_call c;

    /* q (2,8,5,16), k (2,2,7,16), v (2,2,7,12) (GQA 4:1): rows = 80,
     * scores = 560. Products 2*560*28 = 31360 (FlopCounterMode's),
     * scaling 560, softmax 5*560 - 2*80 = 2640: 34560 = 31360 + 3360 -
     * 160, the same for every forward kernel; a causal mask +560, a mask
     * +560, dropout +1120. */
    for (int i = 0; i < N_FORWARD; i++) {
        const kernel_layout *k = &forward_kernels[i];
        c = kernel_call(
            k, "2,8,5,16", "2,2,7,16", "2,2,7,12", NULL, false, false, 0.0);
        CHECK_EXACT(k->name, c, 34560);
        CHECK_MATRIX(31360);
        CHECK((ts_op_lookup(k->name)->flags & TS_OPF_ATTENTION) != 0);
        CHECK((ts_op_lookup(k->name)->flags & TS_OPF_MATRIX) != 0);
        c = kernel_call(
            k, "2,8,5,16", "2,2,7,16", "2,2,7,12", NULL, true, false, 0.0);
        CHECK_EXACT(k->name, c, 35120);
        CHECK_MATRIX(31360);
        c = kernel_call(
            k, "2,8,5,16", "2,2,7,16", "2,2,7,12", NULL, true, false, 0.1);
        CHECK_EXACT(k->name, c, 36240);
        if (k->mask >= 0) {
            c = kernel_call(
                k, "2,8,5,16", "2,2,7,16", "2,2,7,12", NULL, true, true, 0.0);
            CHECK_EXACT(k->name, c, 35680);
            c = kernel_call(
                k, "2,8,5,16", "2,2,7,16", "2,2,7,12", NULL, false, true, 0.0);
            CHECK_EXACT(k->name, c, 35120);
        }
        /* Empty queries or keys: 0, products too. */
        c = kernel_call(
            k, "2,8,0,16", "2,2,7,16", "2,2,7,12", NULL, false, false, 0.0);
        CHECK_EXACT(k->name, c, 0);
        CHECK_MATRIX(0);
        c = kernel_call(
            k, "2,8,5,16", "2,2,0,16", "2,2,0,12", NULL, false, false, 0.0);
        CHECK_EXACT(k->name, c, 0);
        /* Complex operands: counted as real ones, a lower bound. */
        c = kernel_call(
            k, "2,8,5,16", "2,2,7,16", "2,2,7,12", NULL, false, false, 0.0);
        c.args[0].tensor.dtype = CX;
        CHECK_FLOPS(k->name, c, 34560);
        CHECK(result.incomplete && result.incomplete_message != NULL
              && strstr(result.incomplete_message, COMPLEX_MSG) != NULL);
    }
    /* Forward kernels are listed as the attention they compute. */
    for (int i = 0; i < N_FORWARD - 1; i++) {
        CHECK((ts_op_lookup(forward_kernels[i].name)->flags
               & TS_OPF_SDPA_FORWARD)
              != 0);
    }
    CHECK((ts_op_lookup("aten.scaled_dot_product_attention")->flags
           & TS_OPF_SDPA_FORWARD)
          == 0);

    /* Shape rules of the 4-D kernels. */
    for (int i = 0; i < N_FORWARD - 1; i++) {
        const char *name = forward_kernels[i].name;
        c = call_new();
        a_tensor(&c, F, "2,8,5,16");
        a_tensor(&c, F, "2,3,7,16");
        a_tensor(&c, F, "2,3,7,12");
        CHECK_UNSUPPORTED(name, c, "a multiple of key/value heads");
        c.args[1].tensor.dims[1] = 0;
        c.args[2].tensor.dims[1] = 0;
        CHECK_UNSUPPORTED(name, c, "a multiple of key/value heads");
        c = call_new();
        a_tensor(&c, F, "2,8,5,16");
        a_tensor(&c, F, "2,2,7,16");
        a_tensor(&c, F, "2,2,6,12");
        CHECK_UNSUPPORTED(name, c, "lengths");
        c.args[2].tensor.dims[2] = 7;
        c.args[1].tensor.dims[3] = 8;
        CHECK_UNSUPPORTED(name, c, "widths");
        c = call_new();
        a_tensor(&c, F, "8,5,16");
        a_tensor(&c, F, "2,2,7,16");
        a_tensor(&c, F, "2,2,7,12");
        CHECK_UNSUPPORTED(name, c, "4-D query");
        c = call_new();
        a_tensor(&c, F, "2,8,5,16");
        a_tensor(&c, F, "2,2,7,16");
        a_tensor(&c, F, "2,2,7,12");
        c.args[0].tensor.dense = false;
        CHECK_UNSUPPORTED(name, c, LAYOUT);
    }

    /* The composite operator takes any rank >= 2: rows are the query's
     * leading elements. q (3,5,16), k (3,7,16), v (3,7,12): rows 15,
     * scores 105: 2*105*28 + 6*105 - 30 = 5880 + 630 - 30 = 6480. */
    c = call_new();
    a_tensor(&c, F, "3,5,16");
    a_tensor(&c, F, "3,7,16");
    a_tensor(&c, F, "3,7,12");
    CHECK_EXACT("aten.scaled_dot_product_attention", c, 6480);
    CHECK_MATRIX(5880);
    c.args[2].tensor.dims[1] = 6;
    CHECK_UNSUPPORTED("aten.scaled_dot_product_attention", c, "(..., S, Dv)");
}

static void
test_sdpa_backward(void)
{
    ts_op_call c;

    /* grad_out (2,8,5,12) and q, k, v as in test_sdpa: products
     * 2*560*(48 + 24) = 80640 (FlopCounterMode's), recomputed P and dS
     * 6*560 = 3360, rowsum(dO*O) 80*(24 - 1) = 1840, dK/dV summed over the
     * 4 query heads of each KV head (8 - 2)*2*7*(16 + 12) = 2352:
     * 88192 for every backward kernel; causal +560, dropout +1120. */
    for (int i = 0; i < N_BACKWARD; i++) {
        const kernel_layout *k = &backward_kernels[i];
        c = kernel_call(k,
                        "2,8,5,16",
                        "2,2,7,16",
                        "2,2,7,12",
                        "2,8,5,12",
                        false,
                        false,
                        0.0);
        CHECK_EXACT(k->name, c, 88192);
        CHECK_MATRIX(80640);
        CHECK((ts_op_lookup(k->name)->flags & TS_OPF_SDPA_FORWARD) == 0);
        c = kernel_call(k,
                        "2,8,5,16",
                        "2,2,7,16",
                        "2,2,7,12",
                        "2,8,5,12",
                        true,
                        false,
                        0.2);
        CHECK_EXACT(k->name, c, 88192 + 560 + 1120);
        if (k->mask >= 0) {
            c = kernel_call(k,
                            "2,8,5,16",
                            "2,2,7,16",
                            "2,2,7,12",
                            "2,8,5,12",
                            false,
                            true,
                            0.0);
            CHECK_EXACT(k->name, c, 88192 + 560);
        }
        /* grad_out must be shaped like the output */
        c = kernel_call(k,
                        "2,8,5,16",
                        "2,2,7,16",
                        "2,2,7,12",
                        "2,8,5,16",
                        false,
                        false,
                        0.0);
        CHECK_UNSUPPORTED(k->name, c, "grad_out");
        c = kernel_call(k,
                        "2,8,5,16",
                        "2,2,7,16",
                        "2,2,7,12",
                        "2,4,5,12",
                        false,
                        false,
                        0.0);
        CHECK_UNSUPPORTED(k->name, c, "grad_out");
    }
}

static void
test_raw_attention_kernels(void)
{
    ts_op_call c;

    /* Dense (batch, seq, heads, dim) inputs: q (2,6,4,16), k (2,3,4,16),
     * v (2,3,4,8): B = 2, T = 6, Hq = Hk = 4, S = 3: rows = 48, scores =
     * 144: products 2*144*24 = 6912, scaling and softmax 6*144 - 96:
     * 7680. matrix_flops is FlopCounterMode's count, which reads the
     * shapes as (b, h, s, d):
     *   flop_registry[aten._flash_attention_forward](q, k, v, None, None,
     *       6, 3, 0.0, False, False) -> 9216
     *   flop_registry[aten._efficient_attention_forward](q, k, v, None,
     *       None, None, None, None, 0.0, 0) -> 9216
     * = 2 * 2 * 6 * 4 * 4 * (16 + 8). */
    c = call_new();
    a_tensor(&c, F, "2,6,4,16");
    a_tensor(&c, F, "2,3,4,16");
    a_tensor(&c, F, "2,3,4,8");
    a_none(&c); /* cum_seq_q */
    a_none(&c);
    a_int(&c, 6);
    a_int(&c, 3);
    a_real(&c, 0.0);
    a_bool(&c, false);
    a_bool(&c, false);
    CHECK_EXACT("aten._flash_attention_forward", c, 7680);
    CHECK_MATRIX(9216);
    /* causal +144; a left window +144; ALiBi slopes +288; dropout +288 */
    c.args[8].i = 1;
    CHECK_EXACT("aten._flash_attention_forward", c, 7824);
    a_none(&c);    /* scale */
    a_int(&c, 2);  /* window_size_left */
    a_int(&c, -1); /* window_size_right: none */
    a_none(&c);    /* seqused_k */
    a_tensor(&c, F, "4");
    CHECK_EXACT("aten._flash_attention_forward", c, 7824 + 144 + 288);
    c.args[7].r = 0.1;
    CHECK_EXACT("aten._flash_attention_forward", c, 7824 + 144 + 288 + 288);
    c.args[3].kind = TS_ARG_TENSOR;
    c.args[3].tensor = shape(I, "3");
    CHECK_UNSUPPORTED("aten._flash_attention_forward", c, "Variable-length");

    c = call_new();
    a_tensor(&c, F, "2,6,4,16");
    a_tensor(&c, F, "2,3,4,16");
    a_tensor(&c, F, "2,3,4,8");
    a_none(&c); /* bias */
    a_none(&c); /* cu_seqlens_q */
    a_none(&c);
    a_none(&c);
    a_none(&c);
    a_real(&c, 0.0);
    a_int(&c, 0);
    CHECK_EXACT("aten._efficient_attention_forward", c, 7680);
    CHECK_MATRIX(9216);
    /* custom_mask_type 1 (causal) +144; a bias +144 */
    c.args[9].i = 1;
    CHECK_EXACT("aten._efficient_attention_forward", c, 7824);
    c.args[3].kind = TS_ARG_TENSOR;
    c.args[3].tensor = shape(F, "2,4,6,3");
    CHECK_EXACT("aten._efficient_attention_forward", c, 7968);
    c.args[4].kind = TS_ARG_TENSOR;
    c.args[4].tensor = shape(I, "3");
    CHECK_UNSUPPORTED(
        "aten._efficient_attention_forward", c, "Variable-length");
    /* FlopCounterMode's reading needs T a multiple of S (it raises
     * otherwise): the products are then the true ones, rows 40, scores
     * 120. */
    c = call_new();
    a_tensor(&c, F, "2,5,4,16");
    a_tensor(&c, F, "2,3,4,16");
    a_tensor(&c, F, "2,3,4,8");
    CHECK_EXACT(
        "aten._efficient_attention_forward", c, 2 * 120 * 24 + 6 * 120 - 80);
    CHECK_MATRIX(2 * 120 * 24);

    /* go (2,6,4,8): products 2*144*(48 + 16) = 18432, 6*144 = 864,
     * rowsum 48*(16 - 1) = 720, no grouped heads: 20016; causal +144.
     * flop_registry[aten._flash_attention_backward](go, q, k, v,
     *     m(2,6,4,8), m(1), None, None, 6, 3, 0.0, False, None, None)
     * -> 24576
     * flop_registry[aten._efficient_attention_backward](go, q, k, v, None,
     *     m(2,6,4,8), None, None, 6, 3, m(1), 0.0, m(1), m(1), 0, False)
     * -> 24576
     * = 2 * (2*6) * 4 * 4 * (3*16 + 2*8). */
    c = call_new();
    a_tensor(&c, F, "2,6,4,8");
    a_tensor(&c, F, "2,6,4,16");
    a_tensor(&c, F, "2,3,4,16");
    a_tensor(&c, F, "2,3,4,8");
    a_tensor(&c, F, "2,6,4,8"); /* out */
    a_tensor(&c, F, "1");       /* logsumexp */
    a_none(&c);                 /* cum_seq_q */
    a_none(&c);
    a_int(&c, 6);
    a_int(&c, 3);
    a_real(&c, 0.0);
    a_bool(&c, true);
    CHECK_EXACT("aten._flash_attention_backward", c, 20016 + 144);
    CHECK_MATRIX(24576);
    c.args[6].kind = TS_ARG_TENSOR;
    c.args[6].tensor = shape(I, "3");
    CHECK_UNSUPPORTED("aten._flash_attention_backward", c, "Variable-length");

    c = call_new();
    a_tensor(&c, F, "2,6,4,8");
    a_tensor(&c, F, "2,6,4,16");
    a_tensor(&c, F, "2,3,4,16");
    a_tensor(&c, F, "2,3,4,8");
    a_none(&c);                 /* bias */
    a_tensor(&c, F, "2,6,4,8"); /* out */
    a_none(&c);                 /* cu_seqlens_q */
    a_none(&c);
    a_int(&c, 6);
    a_int(&c, 3);
    CHECK_EXACT("aten._efficient_attention_backward", c, 20016);
    CHECK_MATRIX(24576);
    c.args[6].kind = TS_ARG_TENSOR;
    c.args[6].tensor = shape(I, "3");
    CHECK_UNSUPPORTED(
        "aten._efficient_attention_backward", c, "Variable-length");
}

/* ==== supplemental: guards =============================================== */

/* add.Tensor(self, other, *, alpha) with (2,3) operands and output. */
static ts_op_call
binary_call(ts_dtype_class a, ts_dtype_class b, ts_dtype_class y)
{
    ts_op_call c = call_new();
    a_tensor(&c, a, "2,3");
    a_tensor(&c, b, "2,3");
    o_tensor(&c, y, "2,3");
    return c;
}

static void
test_guards(void)
{
    ts_op_call c;

    /* Integer and boolean arithmetic counts 0, silently. */
    c = binary_call(I, I, I);
    CHECK_EXACT("aten.add", c, 0);
    c = binary_call(B, B, B);
    CHECK_EXACT("aten.mul", c, 0);
    /* A Python float makes the call floating: 6 outputs. */
    c = call_new();
    a_tensor(&c, I, "2,3");
    a_real(&c, 0.5);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.mul", c, 6);

    /* Complex tensors or scalars: unsupported, before the integer rule. */
    c = binary_call(CX, F, CX);
    CHECK_UNSUPPORTED("aten.add", c, REAL_ONLY);
    c = call_new();
    a_tensor(&c, I, "2,3");
    a_complex(&c);
    o_tensor(&c, CX, "2,3");
    CHECK_UNSUPPORTED("aten.mul", c, REAL_ONLY);

    /* Nested or sparse operands: unsupported, before anything else. */
    c = binary_call(I, I, I);
    c.args[1].tensor.dense = false;
    CHECK_UNSUPPORTED("aten.add", c, LAYOUT);

    /* A TENSORS argument is judged by its first tensor. */
    c = call_new();
    c.args[0].kind = TS_ARG_TENSORS;
    c.args[0].ntensors = 2;
    c.args[0].tensor = shape(F, "2,3");
    c.args[0].tensor.dense = false;
    c.nargs = 1;
    o_tensor(&c, F, "2,3");
    CHECK_UNSUPPORTED("aten.relu", c, LAYOUT);

    /* Malformed shapes and a missing output. */
    c = binary_call(F, F, F);
    c.args[0].tensor.dims[1] = -3;
    CHECK_UNSUPPORTED("aten.add", c, "malformed");
    c = binary_call(F, F, F);
    c.outs[0].ndim = TS_MAX_DIMS + 1;
    CHECK_UNSUPPORTED("aten.add", c, "malformed");
    /* ndim -1: the binding could not read a concrete shape. */
    c = binary_call(F, F, F);
    c.args[1].tensor.ndim = -1;
    CHECK_UNSUPPORTED("aten.add", c, "no concrete shape");
    c = binary_call(F, F, F);
    c.outs[0].ndim = -1;
    CHECK_UNSUPPORTED("aten.add", c, "output shape");
    /* Nested tensors arrive as ndim -1 and not dense: a layout issue. */
    c = binary_call(F, F, F);
    c.args[0].tensor.ndim = -1;
    c.args[0].tensor.dense = false;
    CHECK_UNSUPPORTED("aten.add", c, LAYOUT);
    c = binary_call(F, F, F);
    c.nouts = 0;
    CHECK_UNSUPPORTED("aten.add", c, "output shape");

    /* (2^32, 2^32) has 2^64 elements. */
    c = call_new();
    a_tensor(&c, F, "4294967296,4294967296");
    o_tensor(&c, F, "");
    CHECK_FAILS("aten.sum", c, TS_EOVERFLOW, "64-bit");
}

/* ==== supplemental: elementwise ========================================== */

static void
test_add_div(void)
{
    static const char *const names[] = {
        "aten.add", "aten.add_", "aten.sub", "aten.sub_"};
    ts_op_call c;

    for (int i = 0; i < 4; i++) {
        /* out*(1 + [alpha != 1]): 6*1 = 6 and 6*2 = 12 */
        c = binary_call(F, F, F);
        CHECK_EXACT(names[i], c, 6);
        a_int(&c, 2);
        CHECK_EXACT(names[i], c, 12);
    }
    c = binary_call(F, F, F);
    a_real(&c, 1.0); /* 1.0 == 1 */
    CHECK_EXACT("aten.add", c, 6);
    c.args[2].kind = TS_ARG_BOOL; /* True == 1 */
    c.args[2].i = 1;
    CHECK_EXACT("aten.add", c, 6);
    c.args[2].kind = TS_ARG_REAL;
    c.args[2].r = -0.5;
    CHECK_EXACT("aten.add", c, 12);
    c.nargs = 2;
    a_other(&c);
    CHECK_UNSUPPORTED("aten.add", c, "alpha");
    /* add.out(self, other, *, alpha, out): alpha absent, out at index 3. */
    c = binary_call(F, F, F);
    a_absent(&c);
    a_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.add", c, 6);
    /* add.Scalar(self, Scalar other, Scalar alpha) */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_int(&c, 3);
    a_int(&c, 3);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.sub", c, 12);

    /* True division promotes: int / int counts out = 6. */
    c = binary_call(I, I, F);
    CHECK_EXACT("aten.div", c, 6);
    CHECK_EXACT("aten.div_", c, 6);
    /* div.out: index 2 is the out tensor, not a rounding mode. */
    a_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.div", c, 6);
    /* rounding_mode=None is true division. */
    c = binary_call(F, F, F);
    a_none(&c);
    CHECK_EXACT("aten.div", c, 6);
    /* Rounded: integer operands stay integer work (0); floating ones are
     * unsupported. */
    c = binary_call(I, I, I);
    a_str(&c, "floor");
    CHECK_EXACT("aten.div", c, 0);
    c = binary_call(F, F, F);
    a_str(&c, "trunc");
    CHECK_UNSUPPORTED("aten.div_", c, "Rounded division");
}

static void
test_unit_ops(void)
{
    static const char *const ones[] = {
        "aten.mul",          "aten.mul_",       "aten.neg",
        "aten.relu",         "aten.relu_",      "aten.exp",
        "aten.sqrt",         "aten.rsqrt",      "aten.masked_fill",
        "aten.masked_fill_", "aten.where",      "aten.abs",
        "aten.abs_",         "aten.sin",        "aten.sin_",
        "aten.cos",          "aten.cos_",       "aten.log",
        "aten.log_",         "aten.reciprocal", "aten.reciprocal_",
        "aten.clamp_min",    "aten.clamp_min_", "aten.clamp_max",
        "aten.clamp_max_",   "aten.maximum",    "aten.minimum",
    };
    ts_op_call c;

    /* 1 per output element: (2,3) -> 6. */
    for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++) {
        c = call_new();
        a_tensor(&c, B, "2,3");
        a_tensor(&c, F, "2,3");
        a_tensor(&c, F, "1");
        o_tensor(&c, F, "2,3");
        if (strncmp(ones[i], "aten.masked_fill", 16) == 0) {
            c.args[0].tensor.dtype = F;
            c.args[1].tensor.dtype = B;
        }
        CHECK_EXACT(ones[i], c, 6);
    }

    /* exp, sqrt and rsqrt promote integers; sin does not. */
    c = call_new();
    a_tensor(&c, I, "2,3");
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.exp", c, 6);
    CHECK_EXACT("aten.sqrt", c, 6);
    CHECK_EXACT("aten.rsqrt", c, 6);
    CHECK_EXACT("aten.sin", c, 0);
    CHECK_EXACT("aten.sigmoid", c, 0);

    /* masked_fill follows its input, not the fill value. */
    c = call_new();
    a_tensor(&c, I, "2,3");
    a_tensor(&c, B, "2,3");
    a_real(&c, 0.5);
    o_tensor(&c, I, "2,3");
    CHECK_EXACT("aten.masked_fill", c, 0);

    /* where.self on integers is integer work; where(condition) alone is an
     * index query. */
    c = call_new();
    a_tensor(&c, B, "2,3");
    a_tensor(&c, I, "2,3");
    a_tensor(&c, I, "2,3");
    o_tensor(&c, I, "2,3");
    CHECK_EXACT("aten.where", c, 0);
    c = call_new();
    a_tensor(&c, F, "2,3");
    o_tensor(&c, I, "4");
    CHECK_UNSUPPORTED("aten.where", c, "indices");
    c.args[0].tensor.dtype = B;
    CHECK_EXACT("aten.where", c, 0);
}

static void
test_clamp_addc(void)
{
    ts_op_call c;

    /* clamp(self, min, max): out*([min] + [max]) with out = 6. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_real(&c, -1.0);
    a_none(&c);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.clamp", c, 6);
    c.args[2].kind = TS_ARG_INT;
    CHECK_EXACT("aten.clamp_", c, 12);
    c.args[1].kind = TS_ARG_NONE;
    c.args[2].kind = TS_ARG_NONE;
    CHECK_EXACT("aten.clamp", c, 0);
    /* clamp.Tensor with one tensor bound and max absent: 6 */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.clamp", c, 6);

    /* addcmul(self, t1, t2, *, value): out*(2 + [value != 1]);
     * 6*2 = 12, 6*3 = 18. */
    static const char *const addc[] = {
        "aten.addcmul", "aten.addcmul_", "aten.addcdiv", "aten.addcdiv_"};
    for (int i = 0; i < 4; i++) {
        c = call_new();
        a_tensor(&c, F, "2,3");
        a_tensor(&c, F, "2,3");
        a_tensor(&c, F, "1,3");
        o_tensor(&c, F, "2,3");
        CHECK_EXACT(addc[i], c, 12);
        a_real(&c, 0.5);
        CHECK_EXACT(addc[i], c, 18);
        a_tensor(&c, F, "2,3"); /* addcmul.out's out slot */
        CHECK_EXACT(addc[i], c, 18);
    }
    /* The tensor operands set the dtype, not the value scalar. */
    c = call_new();
    a_tensor(&c, I, "2,3");
    a_tensor(&c, I, "2,3");
    a_tensor(&c, I, "2,3");
    a_real(&c, 0.5);
    o_tensor(&c, I, "2,3");
    CHECK_EXACT("aten.addcmul", c, 0);
}

static void
test_activations(void)
{
    ts_op_call c = call_new();
    a_tensor(&c, F, "2,3");
    o_tensor(&c, F, "2,3");

    /* (2,3) output: sigmoid 4*6, tanh 6*6, silu 5*6. */
    CHECK_EXACT("aten.sigmoid", c, 24);
    CHECK_EXACT("aten.sigmoid_", c, 24);
    CHECK_EXACT("aten.tanh", c, 36);
    CHECK_EXACT("aten.tanh_", c, 36);
    CHECK_EXACT("aten.silu", c, 30);
    CHECK_EXACT("aten.silu_", c, 30);
    /* gelu: 5*6 exact, 14*6 tanh. */
    CHECK_EXACT("aten.gelu", c, 30);
    a_str(&c, "none");
    CHECK_EXACT("aten.gelu", c, 30);
    c.args[1].str = "tanh";
    CHECK_EXACT("aten.gelu_", c, 84);
    c.args[1].str = "fast";
    CHECK_UNSUPPORTED("aten.gelu", c, "'none' and 'tanh'");

    /* glu(self (4,6), dim=-1) -> (4,3): 5 * 12 = 60 output-based. */
    c = call_new();
    a_tensor(&c, F, "4,6");
    a_int(&c, -1);
    o_tensor(&c, F, "4,3");
    CHECK_EXACT("aten.glu", c, 60);

    /* pow(self (2,3), 2): 6 (contract 2.2). Other integer exponents cost
     * their square-and-multiply count per output element, floor(log2 |n|)
     * + popcount(|n|) - 1, plus a reciprocal when n < 0:
     * 3 -> 1 + 2 - 1 = 2 (12); 4 -> 2 + 1 - 1 = 2 (12); 7 -> 2 + 3 - 1 = 4
     * (24); 1 and 0 -> 0 (a copy and a fill); -1 -> 1 (6); -2 -> 2 (12);
     * +-0.5 are a (reciprocal) square root, 1 (6). */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_int(&c, 2);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.pow", c, 6);
    c.args[1].kind = TS_ARG_REAL;
    c.args[1].r = 2.0;
    CHECK_EXACT("aten.pow_", c, 6);
    c.args[1].r = 3.0; /* gelu_new's x^3 */
    CHECK_EXACT("aten.pow", c, 12);
    c.args[1].r = 1.0; /* pow_backward of x^2 computes x^1 */
    CHECK_EXACT("aten.pow", c, 0);
    c.args[1].r = 0.5;
    CHECK_EXACT("aten.pow", c, 6);
    c.args[1].r = -0.5;
    CHECK_EXACT("aten.pow", c, 6);
    c.args[1].r = 2.5;
    CHECK_UNSUPPORTED("aten.pow", c, "integers or +/-0.5");
    c.args[1].r = INFINITY;
    CHECK_UNSUPPORTED("aten.pow", c, "integers or +/-0.5");
    c.args[1].r = 1e300; /* integral, but beyond exact doubles */
    CHECK_UNSUPPORTED("aten.pow", c, "integers or +/-0.5");
    c.args[1].kind = TS_ARG_INT;
    c.args[1].i = 3;
    CHECK_EXACT("aten.pow", c, 12);
    c.args[1].i = 4;
    CHECK_EXACT("aten.pow", c, 12);
    c.args[1].i = 7;
    CHECK_EXACT("aten.pow", c, 24);
    c.args[1].i = 0;
    CHECK_EXACT("aten.pow", c, 0);
    c.args[1].i = -1;
    CHECK_EXACT("aten.pow", c, 6);
    c.args[1].i = -2;
    CHECK_EXACT("aten.pow", c, 12);
    /* INT64_MIN: |n| = 2^63: 63 squarings + 1 - 1, + 1 reciprocal = 64. */
    c.args[1].i = INT64_MIN;
    CHECK_EXACT("aten.pow", c, 6 * 64);
    c.args[1].kind = TS_ARG_TENSOR; /* pow.Tensor_Tensor */
    c.args[1].tensor = shape(F, "");
    CHECK_UNSUPPORTED("aten.pow", c, "integers or +/-0.5");
    c.args[1].kind = TS_ARG_COMPLEX;
    CHECK_UNSUPPORTED("aten.pow", c, REAL_ONLY);
    /* Integer powers are integer work, whatever the exponent. */
    c.args[0].tensor.dtype = I;
    c.args[1].kind = TS_ARG_INT;
    c.outs[0].dtype = I;
    CHECK_EXACT("aten.pow", c, 0);
}

static void
test_per_input_table(void)
{
    static const struct {
        const char *name;
        int64_t cost;
    } table[] = {
        {"aten.hardtanh", 2},     {"aten.hardtanh_", 2},
        {"aten.threshold", 2},    {"aten.threshold_", 2},
        {"aten.hardshrink", 3},   {"aten.leaky_relu", 4},
        {"aten.leaky_relu_", 4},  {"aten.hardsigmoid", 4},
        {"aten.hardsigmoid_", 4}, {"aten._prelu_kernel", 4},
        {"aten.prelu", 4},        {"aten.hardswish", 5},
        {"aten.hardswish_", 5},   {"aten.softshrink", 5},
        {"aten.softplus", 7},     {"aten.celu", 7},
        {"aten.celu_", 7},        {"aten.log_sigmoid_forward", 7},
        {"aten.mish", 10},        {"aten.mish_", 10},
    };
    ts_op_call c;

    /* (2,4) input, N = 8: the contract pins Hardtanh/ReLU6 16,
     * Threshold 16, Hardshrink 24, LeakyReLU/Hardsigmoid/PReLU 32,
     * Hardswish/Softshrink 40, Softplus/CELU/LogSigmoid 56, Mish 80. */
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        c = call_new();
        a_tensor(&c, F, "2,4");
        a_real(&c, 0.25);
        /* Outputs are ignored: log_sigmoid_forward returns a buffer too. */
        o_tensor(&c, F, "2,4");
        o_tensor(&c, F, "0");
        CHECK_EXACT(table[i].name, c, 8 * table[i].cost);
    }

    /* elu(self, alpha, scale, input_scale): (6 + [scale != 1] +
     * [input_scale != 1]) * 8 = 48 (contract pin), 56, 64. */
    c = call_new();
    a_tensor(&c, F, "2,4");
    o_tensor(&c, F, "2,4");
    CHECK_EXACT("aten.elu", c, 48);
    a_real(&c, 1.5);
    a_real(&c, 1.0507);
    CHECK_EXACT("aten.elu", c, 56);
    a_real(&c, 2.0);
    CHECK_EXACT("aten.elu_", c, 64);
    c.args[3].kind = TS_ARG_INT;
    c.args[3].i = 1;
    CHECK_EXACT("aten.elu_", c, 56);

    /* rrelu_with_noise(self, noise, lower, upper, training): eval 4*8 = 32
     * (contract pin), training unsupported. */
    c = call_new();
    a_tensor(&c, F, "2,4");
    a_tensor(&c, F, "2,4");
    a_real(&c, 0.125);
    a_real(&c, 1.0 / 3.0);
    a_bool(&c, false);
    o_tensor(&c, F, "2,4");
    CHECK_EXACT("aten.rrelu_with_noise", c, 32);
    CHECK_EXACT("aten.rrelu_with_noise_", c, 32);
    c.args[4].i = 1;
    CHECK_UNSUPPORTED("aten.rrelu_with_noise", c, "evaluation calls only");
    c.nargs = 2; /* training defaults to False */
    CHECK_EXACT("aten.rrelu_with_noise", c, 32);
}

/* ==== supplemental: reductions =========================================== */

static ts_op_call
reduce_call(const char *x, const char *y)
{
    ts_op_call c = call_new();
    a_tensor(&c, F, x);
    o_tensor(&c, F, y);
    return c;
}

static void
test_reductions(void)
{
    ts_op_call c;

    /* sum (2,3,4) over dim 1 -> (2,4): 24 - 8 = 16; over all: 24 - 1. */
    c = reduce_call("2,3,4", "2,4");
    a_ints(&c, "1");
    CHECK_EXACT("aten.sum", c, 16);
    c = reduce_call("2,3,4", "");
    CHECK_EXACT("aten.sum", c, 23);
    /* Empty input into 3 outputs: max(0, 0 - 3) = 0. */
    c = reduce_call("0,3", "3");
    CHECK_EXACT("aten.sum", c, 0);
    /* The output dtype decides (dtype=, then out=, then input). */
    c = reduce_call("2,3,4", "");
    c.args[0].tensor.dtype = I;
    c.outs[0].dtype = I;
    CHECK_EXACT("aten.sum", c, 0);
    c.outs[0].dtype = F; /* sum(int, dtype=float) */
    CHECK_EXACT("aten.sum", c, 23);
    c.args[0].tensor.dtype = F;
    c.outs[0].dtype = I; /* sum(float, dtype=int64) */
    CHECK_EXACT("aten.sum", c, 0);
    c.outs[0].dtype = CX;
    CHECK_UNSUPPORTED("aten.sum", c, REAL_ONLY);

    /* mean: sum + out: 16 + 8 = 24; 23 + 1 = 24. */
    c = reduce_call("2,3,4", "2,4");
    a_ints(&c, "1");
    CHECK_EXACT("aten.mean", c, 24);
    c = reduce_call("2,3,4", "");
    CHECK_EXACT("aten.mean", c, 24);
    c = reduce_call("0,3", "3");
    CHECK_UNSUPPORTED("aten.mean", c, "nonempty reduction rows");
    c = reduce_call("0,3", "0");
    CHECK_EXACT("aten.mean", c, 0);

    /* cumsum (3,4): dim 1 (width 4): 12 - 3 = 9; dim 0 (width 3):
     * 12 - 4 = 8; dim -1 as dim 1. */
    c = reduce_call("3,4", "3,4");
    a_int(&c, 1);
    CHECK_EXACT("aten.cumsum", c, 9);
    c.args[1].i = -1;
    CHECK_EXACT("aten.cumsum_", c, 9);
    c.args[1].i = 0;
    CHECK_EXACT("aten.cumsum", c, 8);
    c.args[1].i = 2;
    CHECK_UNSUPPORTED("aten.cumsum", c, "out of range");
    c.args[1].kind = TS_ARG_STR;
    c.args[1].str = "N";
    CHECK_UNSUPPORTED("aten.cumsum", c, "named");
    /* 0-D input: width 1, 1 - 1 = 0. Empty dim: 0. */
    c = reduce_call("", "");
    a_int(&c, 0);
    CHECK_EXACT("aten.cumsum", c, 0);
    c = reduce_call("3,0", "3,0");
    a_int(&c, 1);
    CHECK_EXACT("aten.cumsum", c, 0);
    /* cumsum(int, dtype=float): the float output stands for dtype=. */
    c = reduce_call("3,4", "3,4");
    a_int(&c, 1);
    c.args[0].tensor.dtype = I;
    CHECK_EXACT("aten.cumsum", c, 9);
    c.outs[0].dtype = I;
    CHECK_EXACT("aten.cumsum", c, 0);
    /* cumsum(float, dtype=torch.int32), a Mixture-of-Experts router's
     * offsets on CPU: the adds are integer, 0 (the meta/CUDA call, with
     * integer input and output, counts 0 too). */
    c = reduce_call("4", "4");
    a_int(&c, 0);
    c.outs[0].dtype = I;
    CHECK_EXACT("aten.cumsum", c, 0);
}

static void
test_extremum(void)
{
    static const char *const names[] = {"aten.max", "aten.min"};
    ts_op_call c;

    for (int i = 0; i < 2; i++) {
        /* max.dim(self (3,4), 1) -> values (3), indices (3): 12 - 3 = 9 */
        c = reduce_call("3,4", "3");
        a_int(&c, 1);
        o_tensor(&c, I, "3");
        CHECK_EXACT(names[i], c, 9);
        /* max(self): 12 - 1 = 11 */
        c = reduce_call("3,4", "");
        CHECK_EXACT(names[i], c, 11);
        /* max.other(self, other): elementwise, 12 */
        c = reduce_call("3,4", "3,4");
        a_tensor(&c, F, "3,4");
        CHECK_EXACT(names[i], c, 12);
        /* ... also with a 0-D other broadcast to (3,4). */
        c.args[1].tensor = shape(F, "");
        CHECK_EXACT(names[i], c, 12);
        /* max.unary_out(self, *, out): a reduction, 11, told apart by the
         * overload name or, without it, by the 0-D result. */
        c = reduce_call("3,4", "");
        a_tensor(&c, F, "");
        CHECK_EXACT(names[i], c, 11);
        c.overload = "unary_out";
        CHECK_EXACT(names[i], c, 11);
        /* All 0-D: other(self, other) is 1 comparison. */
        c = reduce_call("", "");
        a_tensor(&c, F, "");
        c.overload = "other";
        CHECK_EXACT(names[i], c, 1);
        c.overload = NULL;
        CHECK_EXACT(names[i], c, 1);
        c.overload = "unary_out";
        CHECK_EXACT(names[i], c, 0);
    }
}

static void
test_norms(void)
{
    static const char *const names[] = {"aten.norm",
                                        "aten.linalg_vector_norm"};
    ts_op_call c;

    for (int i = 0; i < 2; i++) {
        /* order 2 (default, None, 2, 2.0) over (3,4): 2*12 = 24 */
        c = reduce_call("3,4", "");
        CHECK_EXACT(names[i], c, 24);
        a_none(&c);
        CHECK_EXACT(names[i], c, 24);
        c.args[1].kind = TS_ARG_INT;
        c.args[1].i = 2;
        CHECK_EXACT(names[i], c, 24);
        c.args[1].kind = TS_ARG_REAL;
        c.args[1].r = 2.0;
        CHECK_EXACT(names[i], c, 24);
        /* order inf over all: 24 - 1 = 23; -inf the same */
        c.args[1].r = INFINITY;
        CHECK_EXACT(names[i], c, 23);
        c.args[1].r = -INFINITY;
        CHECK_EXACT(names[i], c, 23);
        c.args[1].r = 3.0;
        CHECK_UNSUPPORTED(names[i], c, "orders 1, 2");
        c.args[1].kind = TS_ARG_STR;
        c.args[1].str = "fro";
        CHECK_UNSUPPORTED(names[i], c, "orders 1, 2");
        /* order 1 over dim 1 -> (3): 24 - 3 = 21 */
        c = reduce_call("3,4", "3");
        a_int(&c, 1);
        a_ints(&c, "1");
        CHECK_EXACT(names[i], c, 21);
    }
    /* norm(int, dtype=float): the float output stands for dtype=. */
    c = reduce_call("3,4", "");
    c.args[0].tensor.dtype = I;
    CHECK_EXACT("aten.norm", c, 24);
}

static void
test_products(void)
{
    ts_op_call c;

    /* dot (5)x(5): 2*5 = 10; mv (3,4)x(4): 2*12 = 24 */
    c = call_new();
    a_tensor(&c, F, "5");
    a_tensor(&c, F, "5");
    o_tensor(&c, F, "");
    CHECK_EXACT("aten.dot", c, 10);
    CHECK_EXACT("aten.vdot", c, 10);
    c = call_new();
    a_tensor(&c, F, "3,4");
    a_tensor(&c, F, "4");
    o_tensor(&c, F, "3");
    CHECK_EXACT("aten.mv", c, 24);
    c.args[0].tensor.dtype = CX;
    CHECK_UNSUPPORTED("aten.mv", c, REAL_ONLY);

    /* _grouped_mm (6,4) rows x (2,4,5) experts: 2*24*5 = 240 */
    c = call_new();
    a_tensor(&c, F, "6,4");
    a_tensor(&c, F, "2,4,5");
    a_tensor(&c, I, "2");
    o_tensor(&c, F, "6,5");
    CHECK_EXACT("aten._grouped_mm", c, 240);
    c.args[1].tensor = shape(F, "2,5,5");
    CHECK_UNSUPPORTED("aten._grouped_mm", c, "shared dimension");
    /* batched experts (2,6,4) x (2,4,5): 2*48*5 = 480; group counts must
     * match */
    c.args[0].tensor = shape(F, "2,6,4");
    c.args[1].tensor = shape(F, "2,4,5");
    CHECK_EXACT("aten._grouped_mm", c, 480);
    c.args[1].tensor = shape(F, "3,4,5");
    CHECK_UNSUPPORTED("aten._grouped_mm", c, "group count");
    /* the experts' weight gradient X^T (4, 6) @ dY (6, 5), the 6 rows
     * ragged by offs: every row in one group: 2*4*6*5 = 240 */
    c.args[0].tensor = shape(F, "4,6");
    c.args[1].tensor = shape(F, "6,5");
    CHECK_EXACT("aten._grouped_mm", c, 240);
    /* 3-D x 2-D, N ragged: (2,6,4) x (4,10): each group (6,4)@(4,N_g),
     * sum N_g = 10: 2*6*4*10 = 480 */
    c.args[0].tensor = shape(F, "2,6,4");
    c.args[1].tensor = shape(F, "4,10");
    CHECK_EXACT("aten._grouped_mm", c, 480);
    c.args[1].tensor = shape(F, "4");
    CHECK_UNSUPPORTED("aten._grouped_mm", c, "2-D or 3-D");
}

/* ==== supplemental: softmax and norms ==================================== */

static void
test_softmax(void)
{
    ts_op_call c;

    /* (2,4), dim -1: N = 8, R = 2: softmax 5*8 - 2*2 = 36, log-softmax
     * 4*8 - 2 = 30 (contract pins), safe softmax 36 + 2*8 = 52. */
    c = reduce_call("2,4", "2,4");
    a_int(&c, -1);
    a_bool(&c, false);
    CHECK_EXACT("aten._softmax", c, 36);
    CHECK_EXACT("aten._log_softmax", c, 30);
    c.args[2].kind = TS_ARG_NONE; /* _safe_softmax's dtype */
    CHECK_EXACT("aten._safe_softmax", c, 52);
    /* Softmax2d on (2,4,2,2), dim -3: N = 32, R = 8: 160 - 16 = 144
     * (contract pin). */
    c = reduce_call("2,4,2,2", "2,4,2,2");
    a_int(&c, -3);
    a_bool(&c, false);
    CHECK_EXACT("aten._softmax", c, 144);
    /* Empty rows or batches count 0. */
    c = reduce_call("0,4", "0,4");
    a_int(&c, 1);
    a_bool(&c, false);
    CHECK_EXACT("aten._softmax", c, 0);
    c = reduce_call("3,0", "3,0");
    a_int(&c, 1);
    a_bool(&c, false);
    CHECK_EXACT("aten._softmax", c, 0);
    /* 0-D: a row of width 1: 5 - 2 = 3. */
    c = reduce_call("", "");
    a_int(&c, 0);
    a_bool(&c, false);
    CHECK_EXACT("aten._softmax", c, 3);
}

static void
test_layer_group_rms_norm(void)
{
    ts_op_call c;

    /* native_layer_norm(input (2,3,4), [4], weight, bias, eps): N = 24,
     * R = 6: 6*24 + 2*6 + 2*24 = 204; weight only 180; none 156. */
    c = call_new();
    a_tensor(&c, F, "2,3,4");
    a_ints(&c, "4");
    a_tensor(&c, F, "4");
    a_tensor(&c, F, "4");
    a_real(&c, 1e-5);
    o_tensor(&c, F, "2,3,4");
    o_tensor(&c, F, "2,3,1");
    o_tensor(&c, F, "2,3,1");
    CHECK_EXACT("aten.native_layer_norm", c, 204);
    c.args[3].kind = TS_ARG_NONE;
    CHECK_EXACT("aten.native_layer_norm", c, 180);
    c.args[2].kind = TS_ARG_NONE;
    CHECK_EXACT("aten.native_layer_norm", c, 156);
    /* normalized_shape [3,4]: R = 2: 144 + 4 = 148 */
    c.args[1].nints = 2;
    c.args[1].ints[0] = 3;
    c.args[1].ints[1] = 4;
    CHECK_EXACT("aten.native_layer_norm", c, 148);
    c.args[1].ints[1] = 0;
    CHECK_UNSUPPORTED("aten.native_layer_norm", c, "nonempty normalized row");

    /* native_group_norm(input (2,6,4), weight, bias, N=2, C=6, HxW=4,
     * group=3, eps): N = 48: 6*48 + 2*2*3 + 2*48 = 396. */
    c = call_new();
    a_tensor(&c, F, "2,6,4");
    a_tensor(&c, F, "6");
    a_tensor(&c, F, "6");
    a_int(&c, 2);
    a_int(&c, 6);
    a_int(&c, 4);
    a_int(&c, 3);
    a_real(&c, 1e-5);
    o_tensor(&c, F, "2,6,4");
    CHECK_EXACT("aten.native_group_norm", c, 396);
    c.args[1].kind = TS_ARG_NONE;
    c.args[2].kind = TS_ARG_NONE;
    CHECK_EXACT("aten.native_group_norm", c, 300); /* 288 + 12 */
    c.args[0].tensor = shape(F, "2,6,0");
    CHECK_UNSUPPORTED("aten.native_group_norm", c, "nonempty normalized");
    c.args[0].tensor = shape(F, "2,6,4");
    c.args[6].kind = TS_ARG_NONE;
    CHECK_UNSUPPORTED("aten.native_group_norm", c, "group");

    /* rms_norm(input (2,3,4), [4], weight (4), eps): (3+1)*24 + 2*6 = 108;
     * without weight 3*24 + 12 = 84; [3,4] no weight: 72 + 2*2 = 76. */
    c = call_new();
    a_tensor(&c, F, "2,3,4");
    a_ints(&c, "4");
    a_tensor(&c, F, "4");
    a_none(&c);
    o_tensor(&c, F, "2,3,4");
    CHECK_EXACT("aten.rms_norm", c, 108);
    CHECK_EXACT("aten._fused_rms_norm", c, 108);
    c.args[2].kind = TS_ARG_NONE;
    CHECK_EXACT("aten.rms_norm", c, 84);
    c.nargs = 2;
    CHECK_EXACT("aten.rms_norm", c, 84);
    c.args[1].nints = 2;
    c.args[1].ints[0] = 3;
    c.args[1].ints[1] = 4;
    CHECK_EXACT("aten.rms_norm", c, 76);
    c.args[1].ints[0] = 2; /* trailing dims are (3,4) */
    CHECK_UNSUPPORTED("aten.rms_norm", c, "matching nonempty");
    c = call_new();
    a_tensor(&c, F, "2,3,4");
    a_ints(&c, "4");
    a_tensor(&c, F, "2,2");
    o_tensor(&c, F, "2,3,4");
    CHECK_UNSUPPORTED("aten.rms_norm", c, "matching weight");
    c.args[1].nints = 0;
    CHECK_UNSUPPORTED("aten.rms_norm", c, "matching nonempty");
}

/* (input, weight, bias, running_mean, running_var, training, ...) */
static ts_op_call
batch_norm_call(bool training)
{
    ts_op_call c = call_new();
    a_tensor(&c, F, "2,3,4,4");
    a_tensor(&c, F, "3");
    a_tensor(&c, F, "3");
    a_tensor(&c, F, "3");
    a_tensor(&c, F, "3");
    a_bool(&c, training);
    a_real(&c, 0.1);
    a_real(&c, 1e-5);
    o_tensor(&c, F, "2,3,4,4");
    o_tensor(&c, F, "3");
    o_tensor(&c, F, "3");
    return c;
}

static void
test_batch_norm(void)
{
    ts_op_call c;

    /* Input (2,3,4,4): N = 96, C = 3.
     * eval, affine: 2*96 + 2*3 + 2*96 = 390;
     * training with both running stats: 390 + 4*96 + 3*(3 + 5) = 798;
     * training with running_var only: 390 + 384 + 3*5 = 789;
     * training without running stats: 390 + 384 = 774. */
    c = batch_norm_call(false);
    CHECK_EXACT("aten.native_batch_norm", c, 390);
    CHECK_EXACT("aten._native_batch_norm_legit", c, 390);
    /* cudnn_batch_norm and miopen_batch_norm take native_batch_norm's
     * arguments (exponential_average_factor for momentum). */
    CHECK_EXACT("aten.cudnn_batch_norm", c, 390);
    CHECK_EXACT("aten.miopen_batch_norm", c, 390);
    c = batch_norm_call(true);
    CHECK_EXACT("aten.native_batch_norm", c, 798);
    CHECK_EXACT("aten._native_batch_norm_legit", c, 798);
    CHECK_EXACT("aten.cudnn_batch_norm", c, 798);
    c.args[3].kind = TS_ARG_NONE;
    CHECK_EXACT("aten.native_batch_norm", c, 789);
    c.args[4].kind = TS_ARG_NONE;
    CHECK_EXACT("aten.native_batch_norm", c, 774);
    /* Without affine, eval: 2*96 + 6 = 198. */
    c = batch_norm_call(false);
    c.args[1].kind = TS_ARG_NONE;
    c.args[2].kind = TS_ARG_NONE;
    CHECK_EXACT("aten.native_batch_norm", c, 198);

    /* _native_batch_norm_legit.no_stats(input, weight, bias, training,
     * momentum, eps): 774 in training, 390 in eval. */
    c = call_new();
    a_tensor(&c, F, "2,3,4,4");
    a_tensor(&c, F, "3");
    a_tensor(&c, F, "3");
    a_bool(&c, true);
    a_real(&c, 0.1);
    a_real(&c, 1e-5);
    o_tensor(&c, F, "2,3,4,4");
    CHECK_EXACT("aten._native_batch_norm_legit", c, 774);
    c.args[3].i = 0;
    CHECK_EXACT("aten._native_batch_norm_legit", c, 390);
    c.args[3].i = 1;
    c.overload = "no_stats";
    CHECK_EXACT("aten._native_batch_norm_legit", c, 774);

    /* _native_batch_norm_legit_no_training(input, weight, bias,
     * running_mean, running_var, momentum, eps): eval, 390. */
    c = call_new();
    a_tensor(&c, F, "2,3,4,4");
    a_tensor(&c, F, "3");
    a_tensor(&c, F, "3");
    a_tensor(&c, F, "3");
    a_tensor(&c, F, "3");
    a_real(&c, 0.1);
    a_real(&c, 1e-5);
    o_tensor(&c, F, "2,3,4,4");
    CHECK_EXACT("aten._native_batch_norm_legit_no_training", c, 390);

    c = batch_norm_call(true);
    c.args[0].tensor = shape(F, "0,3,4,4");
    CHECK_UNSUPPORTED("aten.native_batch_norm", c, "Empty native BatchNorm");
    c.args[0].tensor = shape(F, "3");
    CHECK_UNSUPPORTED("aten.native_batch_norm", c, "channel");
}

/* ==== supplemental: pooling ============================================== */

static void
test_pooling(void)
{
    ts_op_call c;

    /* max_pool2d_with_indices(self (1,2,4,4), [2,2]) -> (1,2,2,2) values
     * and indices: O = 8, K = 4: 8*3 = 24. A single kernel value stands
     * for k^2 (the contract's unbatched MaxPool2d((2,)) pin is 24). */
    c = call_new();
    a_tensor(&c, F, "1,2,4,4");
    a_ints(&c, "2,2");
    o_tensor(&c, F, "1,2,2,2");
    o_tensor(&c, I, "1,2,2,2");
    CHECK_EXACT("aten.max_pool2d_with_indices", c, 24);
    c.args[1].nints = 1;
    CHECK_EXACT("aten.max_pool2d_with_indices", c, 24);
    c.args[0].tensor = shape(F, "2,4,4"); /* unbatched */
    c.outs[0] = shape(F, "2,2,2");
    CHECK_EXACT("aten.max_pool2d_with_indices", c, 24);
    /* kernel [3,2] with a (1,2,2,3) output: O = 12, K = 6: 12*5 = 60 */
    c = call_new();
    a_tensor(&c, F, "1,2,4,4");
    a_ints(&c, "3,2");
    o_tensor(&c, F, "1,2,2,3");
    CHECK_EXACT("aten.max_pool2d_with_indices", c, 60);
    c.args[1].kind = TS_ARG_OTHER;
    CHECK_UNSUPPORTED("aten.max_pool2d_with_indices", c, "kernel_size");
    /* an empty window has no K - 1 comparisons: (0 - 1) * 12 = -12 before */
    c.args[1].kind = TS_ARG_INTS;
    c.args[1].ints[0] = 0;
    CHECK_UNSUPPORTED("aten.max_pool2d_with_indices", c, "must be positive");
    CHECK_EXACT("aten.avg_pool2d", c, 0); /* 0 adds and divisions */

    /* avg_pool2d(self (1,2,4,4), [2,2]) -> (1,2,2,2): O*K = 8*4 = 32 */
    c = call_new();
    a_tensor(&c, F, "1,2,4,4");
    a_ints(&c, "2,2");
    o_tensor(&c, F, "1,2,2,2");
    CHECK_EXACT("aten.avg_pool2d", c, 32);

    /* 3-D, kernel [2] -> K = 2^3 = 8, (1,1,4,4,4) -> (1,1,2,2,2), O = 8:
     * max 8*7 = 56, avg 8*8 = 64. */
    c = call_new();
    a_tensor(&c, F, "1,1,4,4,4");
    a_ints(&c, "2");
    o_tensor(&c, F, "1,1,2,2,2");
    o_tensor(&c, I, "1,1,2,2,2");
    CHECK_EXACT("aten.max_pool3d_with_indices", c, 56);
    CHECK_EXACT("aten.avg_pool3d", c, 64);
    c.args[1].kind = TS_ARG_INT; /* a bare int kernel is a cube too */
    c.args[1].i = 2;
    CHECK_EXACT("aten.avg_pool3d", c, 64);

    /* Adaptive (1,1,5,7) -> (1,1,2,3): per axis L + O - gcd(L, O):
     * 5 + 2 - 1 = 6 (windows [0,3) and [2,5)), 7 + 3 - 1 = 9 (three windows
     * of 3): visits 54; avg 54, max 54 - 6 = 48. */
    c = call_new();
    a_tensor(&c, F, "1,1,5,7");
    a_ints(&c, "2,3");
    o_tensor(&c, F, "1,1,2,3");
    o_tensor(&c, I, "1,1,2,3");
    CHECK_EXACT("aten._adaptive_avg_pool2d", c, 54);
    CHECK_EXACT("aten.adaptive_max_pool2d", c, 48);
    /* an empty input axis (1,1,0,7) has no window for the 6 outputs:
     * 0 visits - 6 = -6 FLOPs before */
    c.args[0].tensor = shape(F, "1,1,0,7");
    CHECK_UNSUPPORTED("aten.adaptive_max_pool2d", c, "shapes disagree");
    /* (2,1,4,4,4) -> (2,1,2,2,2): 4 + 2 - 2 = 4 per axis, 2 * 4^3 = 128
     * visits; avg 128, max 128 - 16 = 112. */
    c = call_new();
    a_tensor(&c, F, "2,1,4,4,4");
    a_ints(&c, "2,2,2");
    o_tensor(&c, F, "2,1,2,2,2");
    o_tensor(&c, I, "2,1,2,2,2");
    CHECK_EXACT("aten._adaptive_avg_pool3d", c, 128);
    CHECK_EXACT("aten.adaptive_max_pool3d", c, 112);
    /* Global pooling (1,3,7,7) -> (1,3,1,1): 7 + 1 - 1 = 7 per axis,
     * 3 * 49 = 147 visits: avg 147, max 147 - 3 = 144. */
    c = call_new();
    a_tensor(&c, F, "1,3,7,7");
    a_ints(&c, "1,1");
    o_tensor(&c, F, "1,3,1,1");
    o_tensor(&c, I, "1,3,1,1");
    CHECK_EXACT("aten._adaptive_avg_pool2d", c, 147);
    CHECK_EXACT("aten.adaptive_max_pool2d", c, 144);
    /* Empty input: L = 0 gives 0 + O - O = 0 visits. */
    c = call_new();
    a_tensor(&c, F, "1,3,0,7");
    a_ints(&c, "2,2");
    o_tensor(&c, F, "1,3,2,2");
    CHECK_EXACT("aten._adaptive_avg_pool2d", c, 0);
    c = call_new();
    a_tensor(&c, F, "7");
    a_ints(&c, "2,2");
    o_tensor(&c, F, "2,2");
    CHECK_UNSUPPORTED("aten._adaptive_avg_pool2d", c, "pooled dimensions");
}

/* ==== supplemental: attention ============================================ */

static void
test_cpu_attention(void)
{
    const char *name = "aten._scaled_dot_product_flash_attention_for_cpu";
    ts_op_call c;

    /* Contract 2.2's example shapes: q (1,2,3,4), k (1,1,5,4), v (1,1,5,6)
     * (GQA 2:1): rows = 1*2*3 = 6, scores = 6*5 = 30: 2*30*(4+6) + 30 +
     * 5*30 - 2*6 = 600 + 30 + 150 - 12 = 768; causal + 30 = 798; and a
     * mask + 30 = 828. Dropout (which the contract refuses) 2 per score:
     * + 60. */
    c = call_new();
    a_tensor(&c, F, "1,2,3,4");
    a_tensor(&c, F, "1,1,5,4");
    a_tensor(&c, F, "1,1,5,6");
    o_tensor(&c, F, "1,2,3,6");
    o_tensor(&c, F, "1,2,3");
    CHECK_EXACT(name, c, 768);
    CHECK_MATRIX(600);
    CHECK(ts_op_lookup(name)->flags
          == (TS_OPF_ATTENTION | TS_OPF_MATRIX | TS_OPF_SDPA_FORWARD));
    a_real(&c, 0.0);
    a_bool(&c, true);
    CHECK_EXACT(name, c, 798);
    a_tensor(&c, B, "3,5");
    CHECK_EXACT(name, c, 828);
    c.args[4].i = 0;
    CHECK_EXACT(name, c, 798);
    c.args[3].r = 0.1;
    CHECK_EXACT(name, c, 858);
    CHECK_MATRIX(600);
}

/* _native_multi_head_attention(query, key, value, embed_dim, num_head,
 * qkv_weight, qkv_bias, proj_weight, proj_bias, mask, need_weights,
 * average_attn_weights, mask_type) */
static void
test_native_mha(void)
{
    ts_op_call c = call_new();

    /* Counted as nn.MultiheadAttention's other path counts the same call.
     * B = 1, L = 3, E = 4, H = 2: projections 8*1*3*16 = 384; BLE = 12;
     * 4*1*9*4 = 144; rows = 6, scores = 18: softmax 5*18 - 2*6 = 78.
     * With returned weights (the default), the path that returns them:
     * query scaled BLE, averaged weights + 18: 384 + 12 + 144 + 78 + 18 =
     * 636 (the contract's formula); per-head weights 618; a mask, added
     * inside baddbmm there (which counts its product only), adds nothing.
     * Without returned weights the attention convention: the attention of
     * q (1,2,3,2) over k, v (1,2,3,2), rows 6, scores 18, is 2*18*4 + 6*18
     * - 12 = 240, as aten._scaled_dot_product_flash_attention_for_cpu
     * counts it: 384 + 240 = 624; a mask + 18 = 642. Products 384 + 144 =
     * 528. */
    a_tensor(&c, F, "1,3,4");
    a_tensor(&c, F, "1,3,4");
    a_tensor(&c, F, "1,3,4");
    a_int(&c, 4);
    a_int(&c, 2);
    a_tensor(&c, F, "12,4");
    a_tensor(&c, F, "12");
    a_tensor(&c, F, "4,4");
    a_tensor(&c, F, "4");
    o_tensor(&c, F, "1,3,4");
    o_tensor(&c, F, "1,3,3");
    CHECK_EXACT("aten._native_multi_head_attention", c, 636);
    CHECK_MATRIX(528);
    a_none(&c);
    a_bool(&c, false);
    CHECK_EXACT("aten._native_multi_head_attention", c, 624);
    CHECK_MATRIX(528);
    c.args[10].i = 1;
    a_bool(&c, false); /* per-head weights: no averaging */
    CHECK_EXACT("aten._native_multi_head_attention", c, 618);
    c.args[11].i = 1;
    c.args[9].kind = TS_ARG_TENSOR;
    c.args[9].tensor = shape(B, "3,3");
    CHECK_EXACT("aten._native_multi_head_attention", c, 636);
    c.args[10].i = 0;
    CHECK_EXACT("aten._native_multi_head_attention", c, 642);
    {
        /* the attention of the weightless call, as the CPU kernel counts
         * it */
        ts_op_call a = call_new();
        a_tensor(&a, F, "1,2,3,2");
        a_tensor(&a, F, "1,2,3,2");
        a_tensor(&a, F, "1,2,3,2");
        CHECK_EXACT(
            "aten._scaled_dot_product_flash_attention_for_cpu", a, 240);
    }
    /* B = 2: the other path's input projection is mm and a bias add on the
     * transposed input (3BLE = 72). BLE = 24: projections 768, products
     * 288, rows 12, scores 36: softmax 156; without weights + 36 (scale):
     * 768 + 72 + 288 + 156 + 36 = 1320; with averaged weights 768 + 72 +
     * 288 + 156 + 24 + 36 = 1344. */
    c.args[9].kind = TS_ARG_NONE;
    for (int i = 0; i < 3; i++) {
        c.args[i].tensor = shape(F, "2,3,4");
    }
    CHECK_EXACT("aten._native_multi_head_attention", c, 1320);
    CHECK_MATRIX(768 + 288);
    c.args[10].i = 1;
    CHECK_EXACT("aten._native_multi_head_attention", c, 1344);
    c.args[10].i = 0;
    for (int i = 0; i < 3; i++) {
        c.args[i].tensor = shape(F, "1,3,4");
    }

    /* Cross-attention or mismatched widths have no convention. */
    c.args[1].tensor.dims[1] = 5;
    c.args[2].tensor.dims[1] = 5;
    CHECK_UNSUPPORTED(
        "aten._native_multi_head_attention", c, "self-attention");
    c.args[1].tensor.dims[1] = 3;
    c.args[2].tensor.dims[1] = 3;
    c.args[3].i = 8;
    CHECK_UNSUPPORTED(
        "aten._native_multi_head_attention", c, "self-attention");
    c.args[3].i = 4;
    c.args[4].kind = TS_ARG_NONE;
    CHECK_UNSUPPORTED("aten._native_multi_head_attention", c, "num_head");
}

/* _transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight,
 * qkv_bias, proj_weight, proj_bias, use_gelu, norm_first, eps,
 * norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
 * ffn_bias_1, ffn_weight_2, ffn_bias_2, mask, mask_type) */
static ts_op_call
encoder_call(bool use_gelu)
{
    ts_op_call c = call_new();
    a_tensor(&c, F, "1,3,4");
    a_int(&c, 4);
    a_int(&c, 2);
    a_tensor(&c, F, "12,4");
    a_tensor(&c, F, "12");
    a_tensor(&c, F, "4,4");
    a_tensor(&c, F, "4");
    a_bool(&c, use_gelu);
    a_bool(&c, false);
    a_real(&c, 1e-5);
    for (int i = 0; i < 4; i++) {
        a_tensor(&c, F, "4");
    }
    a_tensor(&c, F, "8,4");
    a_tensor(&c, F, "8");
    a_tensor(&c, F, "4,8");
    a_tensor(&c, F, "4");
    o_tensor(&c, F, "1,3,4");
    return c;
}

static void
test_encoder_layer(void)
{
    const char *name = "aten._transformer_encoder_layer_fwd";
    ts_op_call c = encoder_call(false);

#if TS_OP_MAX_ARGS >= 20
    /* src (1,3,4), E = 4, H = 2, ffn_weight_1 (8,4): attention without
     * weights 624 (test_native_mha); rows = 3, hidden = 3*8 = 24:
     * 4*24*4 = 384; ReLU 24; 18*12 = 216; 4*3 = 12:
     * 624 + 384 + 24 + 216 + 12 = 1260. GELU: 5*24 = 120 instead of 24:
     * 1356. A mask adds one per score (18): 1278. Products: the
     * attention's 528 and the feed-forward's 384. */
    CHECK_EXACT(name, c, 1260);
    CHECK_MATRIX(912);
    c = encoder_call(true);
    CHECK_EXACT(name, c, 1356);
    c = encoder_call(false);
    a_tensor(&c, B, "3,3");
    a_int(&c, 0);
    CHECK_EXACT(name, c, 1278);
    c.args[18].kind = TS_ARG_NONE;
    CHECK_EXACT(name, c, 1260);
#else
    /* The mask is argument 18, past what the call struct can hold. */
    CHECK_UNSUPPORTED(name, c, "TS_OP_MAX_ARGS");
#endif
    c = encoder_call(false);
    c.nargs = 17;
    CHECK_UNSUPPORTED(name, c, "first 18 arguments");
}

/* ==== extensions: elementwise ============================================ */

static void
test_extension_elementwise(void)
{
    ts_op_call c;

    /* eq(self (2,3), 0.5): one comparison per output element: 6. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_real(&c, 0.5);
    o_tensor(&c, B, "2,3");
    CHECK_EXACT("aten.eq", c, 6);
    CHECK_EXACT("aten.gt_", c, 6);
    CHECK_EXACT("aten.le", c, 6);
    /* Integer comparisons are integer work: 0. */
    c = call_new();
    a_tensor(&c, I, "2,3");
    a_int(&c, 2);
    o_tensor(&c, B, "2,3");
    CHECK_EXACT("aten.ge", c, 0);
    CHECK_EXACT("aten.lt", c, 0);

    /* bitwise_and on booleans: 0; the complex guard still applies. */
    c = call_new();
    a_tensor(&c, B, "4");
    a_tensor(&c, B, "4");
    o_tensor(&c, B, "4");
    CHECK_EXACT("aten.bitwise_and", c, 0);
    CHECK_EXACT("aten.bitwise_not_", c, 0);
    c.args[1].kind = TS_ARG_COMPLEX;
    CHECK_UNSUPPORTED("aten.bitwise_or", c, REAL_ONLY);

    /* all(F (2,3)): a test against zero per element: 6; boolean input 0;
     * any.dim(F (2,3), 1): still 6 (input elements). */
    c = call_new();
    a_tensor(&c, F, "2,3");
    o_tensor(&c, B, "");
    CHECK_EXACT("aten.all", c, 6);
    c.args[0].tensor.dtype = B;
    CHECK_EXACT("aten.all", c, 0);
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_int(&c, 1);
    o_tensor(&c, B, "2");
    CHECK_EXACT("aten.any", c, 6);

    /* lerp(self (2,3), end (2,3), 0.5): subtract, multiply, add: 18. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    a_real(&c, 0.5);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.lerp", c, 18);
    CHECK_EXACT("aten.lerp_", c, 18);
    c.args[2].kind = TS_ARG_TENSOR; /* lerp.Tensor */
    c.args[2].tensor = shape(F, "2,3");
    CHECK_EXACT("aten.lerp", c, 18);

    /* rsub(self (2,3), 1.0, alpha=2): as sub, 2 per output: 12. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_real(&c, 1.0);
    a_int(&c, 2);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.rsub", c, 12);

    /* erf of an integer tensor promotes to floating: 4. */
    c = call_new();
    a_tensor(&c, I, "4");
    o_tensor(&c, F, "4");
    CHECK_EXACT("aten.erf", c, 4);
    CHECK_EXACT("aten.exp_", c, 4);

    /* tril(F (3,3)): one selection per element, 9; boolean masks 0. */
    c = call_new();
    a_tensor(&c, F, "3,3");
    o_tensor(&c, F, "3,3");
    CHECK_EXACT("aten.tril", c, 9);
    CHECK_EXACT("aten.triu_", c, 9);
    c.args[0].tensor.dtype = B;
    c.outs[0].dtype = B;
    CHECK_EXACT("aten.triu", c, 0);

    /* native_dropout(self (2,3), p, train): mask multiply and scale, 12;
     * train=False returns the input: 0; train=None means training. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_real(&c, 0.1);
    a_bool(&c, true);
    o_tensor(&c, F, "2,3");
    o_tensor(&c, B, "2,3");
    CHECK_EXACT("aten.native_dropout", c, 12);
    c.args[2].i = 0;
    CHECK_EXACT("aten.native_dropout", c, 0);
    c.args[2].kind = TS_ARG_NONE;
    CHECK_EXACT("aten.native_dropout", c, 12);
    /* native_dropout_backward(grad (2,3), mask, scale): 2 per output. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_tensor(&c, B, "2,3");
    a_real(&c, 1.0 / 0.9);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.native_dropout_backward", c, 12);
}

/* (grad_output (2,3), saved (2,3)) -> (2,3): cost * 6. */
static void
check_gradient(const char *name, int64_t cost)
{
    ts_op_call c = call_new();
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    o_tensor(&c, F, "2,3");
    CHECK_EXACT(name, c, cost * 6);
    if (result.flops != cost * 6) {
        fprintf(stderr, "  %s\n", name);
    }
}

static void
test_activation_backward(void)
{
    ts_op_call c;

    check_gradient("aten.threshold_backward", 1);
    check_gradient("aten.hardtanh_backward", 2);
    check_gradient("aten.hardsigmoid_backward", 3);
    check_gradient("aten.hardswish_backward", 5);
    check_gradient("aten.leaky_relu_backward", 2);
    check_gradient("aten.sigmoid_backward", 3);
    check_gradient("aten.tanh_backward", 3);
    check_gradient("aten.gelu_backward", 11);

    /* gelu_backward(grad, self, *, approximate): exact 11, tanh 23 per
     * element (the CPU kernel's expressions, see op_formulas_elementwise.c):
     * 66 and 138 for (2,3). */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    a_str(&c, "none");
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.gelu_backward", c, 66);
    c.args[2].str = "tanh";
    CHECK_EXACT("aten.gelu_backward", c, 138);
    c.args[2].str = "erf";
    CHECK_UNSUPPORTED("aten.gelu_backward", c, "approximations");
    /* Half-precision gradients are floating too; integers cannot occur. */
    c.args[2].str = "none";
    c.args[0].kind = TS_ARG_COMPLEX;
    CHECK_UNSUPPORTED("aten.gelu_backward", c, REAL_ONLY);
}

/* ==== extensions: layer gradients ======================================== */

static void
test_softmax_backward(void)
{
    ts_op_call c;

    /* _softmax_backward_data(grad (2,3,4), y, dim -1, input_dtype):
     * N = 24, rows of 4: R = 6: 4N - R = 90; along dim 1 (width 3,
     * R = 8): 88. */
    c = call_new();
    a_tensor(&c, F, "2,3,4");
    a_tensor(&c, F, "2,3,4");
    a_int(&c, -1);
    a_other(&c);
    c.args[3].tensor.dtype = F; /* a torch.dtype argument */
    o_tensor(&c, F, "2,3,4");
    CHECK_EXACT("aten._softmax_backward_data", c, 90);
    CHECK_EXACT("aten._log_softmax_backward_data", c, 90);
    c.args[2].i = 1;
    CHECK_EXACT("aten._softmax_backward_data", c, 88);
    c.args[2].i = 3;
    CHECK_UNSUPPORTED("aten._softmax_backward_data", c, "out of range");
}

static void
batch_norm_backward_call(ts_op_call *c,
                         bool weight,
                         bool train,
                         const char *mask)
{
    *c = call_new();
    a_tensor(c, F, "2,3,4,4"); /* grad_out */
    a_tensor(c, F, "2,3,4,4"); /* input: N = 96, C = 3 */
    if (weight) {
        a_tensor(c, F, "3");
    }
    else {
        a_none(c);
    }
    a_tensor(c, F, "3"); /* running_mean */
    a_tensor(c, F, "3"); /* running_var */
    a_tensor(c, F, "3"); /* save_mean */
    a_tensor(c, F, "3"); /* save_invstd */
    a_bool(c, train);
    a_real(c, 1e-5);
    a_ints(c, mask);
    o_tensor(c, F, "2,3,4,4");
    o_tensor(c, F, "3");
    o_tensor(c, F, "3");
}

static void
test_norm_backward(void)
{
    const char *bn = "aten.native_batch_norm_backward";
    const char *ln = "aten.native_layer_norm_backward";
    ts_op_call c;

    /* N = 96, C = 3. x^ and sum(dy x^): 2N + 2N - C = 381; sum(dy):
     * N - C = 93; training grad_input: 4N + (2 + [weight])C = 384 + 9 =
     * 393. All three gradients, training, weighted: 867. */
    batch_norm_backward_call(&c, true, true, "1,1,1");
    CHECK_EXACT(bn, c, 381 + 93 + 393);
    /* Evaluation grad_input: N + (3 + [weight])C = 96 + 12 = 108;
     * grad_weight needs x^ (381), grad_bias sum(dy) (93): 582. */
    batch_norm_backward_call(&c, true, false, "1,1,1");
    CHECK_EXACT(bn, c, 381 + 93 + 108);
    /* Training grad_input alone still needs both sums: 381 + 93 + 384 +
     * 2*3 = 864 without a weight. */
    batch_norm_backward_call(&c, false, true, "1,0,0");
    CHECK_EXACT(bn, c, 864);
    /* Evaluation grad_input alone: 96 + 3*3 = 105. */
    batch_norm_backward_call(&c, false, false, "1,0,0");
    CHECK_EXACT(bn, c, 105);
    /* grad_weight alone: 381; nothing wanted: 0. */
    batch_norm_backward_call(&c, true, true, "0,1,0");
    CHECK_EXACT(bn, c, 381);
    batch_norm_backward_call(&c, true, true, "0,0,0");
    CHECK_EXACT(bn, c, 0);
    /* The mask is required. */
    batch_norm_backward_call(&c, true, true, "1,1");
    CHECK_UNSUPPORTED(bn, c, "output_mask");
    /* Empty input: nothing to do. */
    batch_norm_backward_call(&c, true, true, "1,1,1");
    c.args[1].tensor = shape(F, "0,3,4,4");
    CHECK_EXACT(bn, c, 0);

    /* cudnn_batch_norm_backward(input, grad_output, weight, running_mean,
     * running_var, save_mean, save_var, epsilon, reserveSpace) follows a
     * training forward and returns all three gradients: the 867 above.
     * miopen's has no reserveSpace. */
    c = call_new();
    a_tensor(&c, F, "2,3,4,4");
    a_tensor(&c, F, "2,3,4,4");
    a_tensor(&c, F, "3");
    a_tensor(&c, F, "3");
    a_tensor(&c, F, "3");
    a_tensor(&c, F, "3");
    a_tensor(&c, F, "3");
    a_real(&c, 1e-5);
    a_tensor(&c, I, "16");
    o_tensor(&c, F, "2,3,4,4");
    o_tensor(&c, F, "3");
    o_tensor(&c, F, "3");
    CHECK_EXACT("aten.cudnn_batch_norm_backward", c, 867);
    c.nargs--;
    CHECK_EXACT("aten.miopen_batch_norm_backward", c, 867);
    c.args[0].tensor = shape(F, "0,3,4,4");
    CHECK_EXACT("aten.cudnn_batch_norm_backward", c, 0);
    c.args[0].tensor = shape(F, "3");
    CHECK_UNSUPPORTED("aten.cudnn_batch_norm_backward", c, "channel");

    /* native_layer_norm_backward(grad (2,3,8), input, [8], mean, rstd,
     * weight, bias, mask): N = 48, W = 8. x^ 2N = 96; grad_input
     * (7 + 1)N = 384; grad_weight 2N - W = 88; grad_bias N - W = 40:
     * 608. */
    c = call_new();
    a_tensor(&c, F, "2,3,8");
    a_tensor(&c, F, "2,3,8");
    a_ints(&c, "8");
    a_tensor(&c, F, "2,3,1");
    a_tensor(&c, F, "2,3,1");
    a_tensor(&c, F, "8");
    a_tensor(&c, F, "8");
    a_ints(&c, "1,1,1");
    o_tensor(&c, F, "2,3,8");
    CHECK_EXACT(ln, c, 608);
    /* grad_input alone without a weight: 96 + 7*48 = 432. */
    c.args[5].kind = TS_ARG_NONE;
    c.args[7].ints[1] = 0;
    c.args[7].ints[2] = 0;
    CHECK_EXACT(ln, c, 432);
    /* weight and bias gradients: 96 + 88 + 40 = 224; bias alone 40. */
    c.args[7].ints[0] = 0;
    c.args[7].ints[1] = 1;
    c.args[7].ints[2] = 1;
    CHECK_EXACT(ln, c, 224);
    c.args[7].ints[1] = 0;
    CHECK_EXACT(ln, c, 40);
    c.args[2].ints[0] = 0;
    CHECK_UNSUPPORTED(ln, c, "nonempty normalized row");
}

static void
test_pool_backward(void)
{
    ts_op_call c;

    /* max_pool2d_with_indices_backward(grad (1,2,4,4), self (1,2,8,8),
     * ...): one add per gradient element, 32. */
    c = call_new();
    a_tensor(&c, F, "1,2,4,4");
    a_tensor(&c, F, "1,2,8,8");
    a_ints(&c, "2,2");
    o_tensor(&c, F, "1,2,8,8");
    CHECK_EXACT("aten.max_pool2d_with_indices_backward", c, 32);
    CHECK_EXACT("aten.adaptive_max_pool2d_backward", c, 32);
    /* avg_pool2d_backward with a 3x3 window: 32 * (9 + 1) = 320. */
    c.args[2].ints[0] = 3;
    c.args[2].ints[1] = 3;
    CHECK_EXACT("aten.avg_pool2d_backward", c, 320);
    /* avg_pool3d_backward(grad (1,1,2,2,2), self, [2]): the single value
     * is a 2x2x2 cube: 8 * (8 + 1) = 72. */
    c = call_new();
    a_tensor(&c, F, "1,1,2,2,2");
    a_tensor(&c, F, "1,1,4,4,4");
    a_ints(&c, "2");
    o_tensor(&c, F, "1,1,4,4,4");
    CHECK_EXACT("aten.avg_pool3d_backward", c, 72);
    c.args[2].kind = TS_ARG_STR;
    CHECK_UNSUPPORTED("aten.avg_pool3d_backward", c, "kernel_size");

    /* _adaptive_avg_pool2d_backward(grad (1,2,2,3), self (1,2,5,7)): the
     * forward's visits 2 * (5 + 2 - 1) * (7 + 3 - 1) = 108, plus a
     * division per output: 108 + 12 = 120. */
    c = call_new();
    a_tensor(&c, F, "1,2,2,3");
    a_tensor(&c, F, "1,2,5,7");
    o_tensor(&c, F, "1,2,5,7");
    CHECK_EXACT("aten._adaptive_avg_pool2d_backward", c, 120);
    c = call_new();
    a_tensor(&c, F, "1,2,5,7");
    a_ints(&c, "2,3");
    o_tensor(&c, F, "1,2,2,3");
    CHECK_EXACT("aten._adaptive_avg_pool2d", c, 108);
}

static void
test_losses(void)
{
    ts_op_call c;

    /* nll_loss_forward(self (4,10), target (4), weight, reduction,
     * ignore_index), T = 4: negate per target (4), sum T - 1 (3), mean
     * divides once: 8; weighted: + 4 weight multiplies + 3 weight adds:
     * 15; sum: 7; none: 4. */
    c = call_new();
    a_tensor(&c, F, "4,10");
    a_tensor(&c, I, "4");
    a_none(&c);
    a_int(&c, 1);
    a_int(&c, -100);
    o_tensor(&c, F, "");
    o_tensor(&c, F, "");
    CHECK_EXACT("aten.nll_loss_forward", c, 8);
    c.args[2].kind = TS_ARG_TENSOR;
    c.args[2].tensor = shape(F, "10");
    CHECK_EXACT("aten.nll_loss_forward", c, 15);
    c.args[2].kind = TS_ARG_NONE;
    c.args[3].i = 2;
    CHECK_EXACT("aten.nll_loss_forward", c, 7);
    c.args[3].i = 0;
    CHECK_EXACT("aten.nll_loss_forward", c, 4);
    c.args[3].i = 3;
    CHECK_UNSUPPORTED("aten.nll_loss_forward", c, "reduction");
    /* nll_loss2d_forward(self (2,5,3,3), target (2,3,3)): T = 18, mean:
     * 18 + 17 + 1 = 36. */
    c = call_new();
    a_tensor(&c, F, "2,5,3,3");
    a_tensor(&c, I, "2,3,3");
    a_none(&c);
    a_int(&c, 1);
    a_int(&c, -100);
    CHECK_EXACT("aten.nll_loss2d_forward", c, 36);

    /* nll_loss_backward(grad, self (4,10), target (4), weight, reduction,
     * ignore_index, total_weight): T*(1 + [weight] + [mean]): mean 8,
     * weighted mean 12, weighted sum 8. */
    c = call_new();
    a_tensor(&c, F, "");
    a_tensor(&c, F, "4,10");
    a_tensor(&c, I, "4");
    a_none(&c);
    a_int(&c, 1);
    a_int(&c, -100);
    a_tensor(&c, F, "");
    o_tensor(&c, F, "4,10");
    CHECK_EXACT("aten.nll_loss_backward", c, 8);
    c.args[3].kind = TS_ARG_TENSOR;
    c.args[3].tensor = shape(F, "10");
    CHECK_EXACT("aten.nll_loss_backward", c, 12);
    c.args[4].i = 2;
    CHECK_EXACT("aten.nll_loss2d_backward", c, 8);

    /* mse_loss(self (2,3), target): 2N = 12, + N - 1 = 5 and a division
     * for the default mean: 18; none: 12; sum: 17. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    o_tensor(&c, F, "");
    CHECK_EXACT("aten.mse_loss", c, 18);
    a_int(&c, 0);
    CHECK_EXACT("aten.mse_loss", c, 12);
    c.args[2].i = 2;
    CHECK_EXACT("aten.mse_loss", c, 17);
    /* mse_loss_backward(grad, self (2,3), target, reduction): 3N = 18. */
    c = call_new();
    a_tensor(&c, F, "");
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    a_int(&c, 1);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.mse_loss_backward", c, 18);
}

static void
test_upsample(void)
{
    ts_op_call c;

    /* upsample_bilinear2d(self (1,2,3,3), [6,6], False) -> 72 outputs *
     * 9 = 648; linear1d 16 outputs * 3 = 48; trilinear3d 8 * 21 = 168. */
    c = call_new();
    a_tensor(&c, F, "1,2,3,3");
    a_ints(&c, "6,6");
    a_bool(&c, false);
    o_tensor(&c, F, "1,2,6,6");
    CHECK_EXACT("aten.upsample_bilinear2d", c, 648);
    CHECK_EXACT("aten.upsample_nearest2d", c, 0);
    CHECK_EXACT("aten._upsample_nearest_exact2d", c, 0);
    c = call_new();
    a_tensor(&c, F, "1,2,4");
    a_ints(&c, "8");
    a_bool(&c, false);
    o_tensor(&c, F, "1,2,8");
    CHECK_EXACT("aten.upsample_linear1d", c, 48);
    c = call_new();
    a_tensor(&c, F, "1,1,1,1,1");
    a_ints(&c, "2,2,2");
    a_bool(&c, false);
    o_tensor(&c, F, "1,1,2,2,2");
    CHECK_EXACT("aten.upsample_trilinear3d", c, 168);

    /* Gradients per grad_output element: 2^rank * (rank + 1) = 4, 12, 32;
     * bilinear (1,2,6,6): 72 * 12 = 864. */
    c = call_new();
    a_tensor(&c, F, "1,2,6,6");
    a_ints(&c, "6,6");
    a_ints(&c, "1,2,3,3");
    a_bool(&c, false);
    o_tensor(&c, F, "1,2,3,3");
    CHECK_EXACT("aten.upsample_bilinear2d_backward", c, 864);
    CHECK_EXACT("aten.upsample_linear1d_backward", c, 72 * 4);
    CHECK_EXACT("aten.upsample_trilinear3d_backward", c, 72 * 32);
    /* Nearest: the 72 gradients summed into 18 sources: 54 adds. */
    CHECK_EXACT("aten.upsample_nearest2d_backward", c, 54);
    c.nouts = 0;
    CHECK_UNSUPPORTED("aten.upsample_nearest2d_backward", c, "output");
}

static void
test_lookups(void)
{
    ts_op_call c;

    /* embedding(weight (10,4), indices (2,3)): a lookup, 0, even for
     * complex tables (no arithmetic); layouts are still checked. */
    c = call_new();
    a_tensor(&c, F, "10,4");
    a_tensor(&c, I, "2,3");
    o_tensor(&c, F, "2,3,4");
    CHECK_EXACT("aten.embedding", c, 0);
    CHECK_EXACT("aten.gather", c, 0);
    CHECK_EXACT("aten.index_select", c, 0);
    c.args[0].tensor.dtype = CX;
    CHECK_EXACT("aten.embedding", c, 0);
    c.args[0].tensor.dense = false;
    CHECK_UNSUPPORTED("aten.embedding", c, LAYOUT);
    /* index(self (5,4), [idx (3)]): 0. */
    c = call_new();
    a_tensor(&c, F, "5,4");
    a_tensors(&c, I, "3");
    o_tensor(&c, F, "3,4");
    CHECK_EXACT("aten.index", c, 0);

    /* embedding_dense_backward(grad (2,3,4), indices, 10, -1, False): one
     * add per gradient element, 24; scale_grad_by_freq doubles it. */
    c = call_new();
    a_tensor(&c, F, "2,3,4");
    a_tensor(&c, I, "2,3");
    a_int(&c, 10);
    a_int(&c, -1);
    a_bool(&c, false);
    o_tensor(&c, F, "10,4");
    CHECK_EXACT("aten.embedding_dense_backward", c, 24);
    c.args[4].i = 1;
    CHECK_EXACT("aten.embedding_dense_backward", c, 48);

    /* index_put(self (16,16), [idx (2,5)], values (2,5,16), True): the
     * gradient of x[idx]: one add per value, 160; without accumulate 0;
     * values broadcast to a higher rank: unsupported. */
    c = call_new();
    a_tensor(&c, F, "16,16");
    a_tensors(&c, I, "2,5");
    a_tensor(&c, F, "2,5,16");
    a_bool(&c, true);
    o_tensor(&c, F, "16,16");
    CHECK_EXACT("aten.index_put", c, 160);
    CHECK_EXACT("aten.index_put_", c, 160);
    CHECK_EXACT("aten._index_put_impl_", c, 160);
    c.args[3].i = 0;
    CHECK_EXACT("aten.index_put", c, 0);
    c.args[3].i = 1;
    c.args[2].tensor = shape(F, "16");
    CHECK_UNSUPPORTED("aten.index_put", c, "full rank");

    /* scatter_add(self (3,4), 1, index (3,2), src (3,2)): 6 adds; plain
     * scatter 0; scatter(reduce="multiply") 6; other reduce values
     * unsupported. */
    c = call_new();
    a_tensor(&c, F, "3,4");
    a_int(&c, 1);
    a_tensor(&c, I, "3,2");
    a_tensor(&c, F, "3,2");
    o_tensor(&c, F, "3,4");
    CHECK_EXACT("aten.scatter_add", c, 6);
    CHECK_EXACT("aten.scatter", c, 0);
    a_str(&c, "multiply");
    CHECK_EXACT("aten.scatter_", c, 6);
    c.args[4].str = "mean";
    CHECK_UNSUPPORTED("aten.scatter", c, "reduce");
}

/* mkldnn_rnn_layer(input (6,2,16), weight0 (64,16), weight1 (64,R),
 * weight2 (64), weight3 (64), hx_, cx_, reverse, batch_sizes, mode,
 * hidden_size 16, num_layers, has_biases, bidirectional, batch_first,
 * train) */
static ts_op_call
lstm_call(const char *w_hh, int64_t mode)
{
    ts_op_call c = call_new();
    a_tensor(&c, F, "6,2,16");
    a_tensor(&c, F, "64,16");
    a_tensor(&c, F, w_hh);
    a_tensor(&c, F, "64");
    a_tensor(&c, F, "64");
    a_tensor(&c, F, "2,16");
    a_tensor(&c, F, "2,16");
    a_bool(&c, false);
    a_ints(&c, "");
    a_int(&c, mode);
    a_int(&c, 16);
    a_int(&c, 2);
    a_bool(&c, true);
    a_bool(&c, false);
    a_bool(&c, true);
    a_bool(&c, true);
    return c;
}

static void
test_lstm(void)
{
    const char *fwd = "aten.mkldnn_rnn_layer";
    const char *bwd = "aten.mkldnn_rnn_layer_backward";
    ts_op_call c = lstm_call("64,16", 2);

    /* rows = 6*2 = 12, I = R = H = 16: per row 8H(I + R) = 4096 (the two
     * gate products, = 2*64*16 + 2*64*16 as addmm counts them), gate sum
     * 4H = 64, biases 8H = 128, cell 28H = 448: 4736; * 12 = 56832. */
    CHECK_EXACT(fwd, c, 12 * 4736);
    c.args[12].i = 0; /* no biases: - 128 per row */
    CHECK_EXACT(fwd, c, 12 * 4608);
    /* A projection (R = 8): 8*16*24 + 640 = 3712 per row. */
    c = lstm_call("64,8", 2);
    CHECK_EXACT(fwd, c, 12 * 3712);
    /* GRU and plain RNN modes have no formula here. */
    c = lstm_call("64,16", 3);
    CHECK_UNSUPPORTED(fwd, c, "LSTM layers");
    c = lstm_call("48,16", 2);
    CHECK_UNSUPPORTED(fwd, c, "(4H, I)");

    /* mkldnn_rnn_layer_backward(input, weight1..4, hx_, cx_tmp, output,
     * hy_, cy_, grad_output, grad_hy, grad_cy, reverse, mode, hidden_size,
     * num_layers, has_biases, train, bidirectional, batch_sizes,
     * batch_first, workspace): per row 16H(I + R) = 8192, cell and gate
     * gradients 23H = 368, bias gradient 4H = 64: 8624; * 12 = 103488. */
    c = call_new();
    a_tensor(&c, F, "6,2,16");
    a_tensor(&c, F, "64,16");
    a_tensor(&c, F, "64,16");
    a_tensor(&c, F, "64");
    a_tensor(&c, F, "64");
    a_tensor(&c, F, "2,16");
    a_tensor(&c, F, "2,16");
    a_tensor(&c, F, "6,2,16");
    a_tensor(&c, F, "2,16");
    a_tensor(&c, F, "2,16");
    a_tensor(&c, F, "6,2,16");
    a_none(&c);
    a_none(&c);
    a_bool(&c, false);
    a_int(&c, 2);
    a_int(&c, 16);
    a_int(&c, 2);
    a_bool(&c, true);
    a_bool(&c, true);
    a_bool(&c, false);
    a_ints(&c, "");
    a_bool(&c, true);
    a_tensor(&c, F, "100");
    CHECK_EXACT(bwd, c, 12 * 8624);
    c.args[17].i = 0;
    CHECK_EXACT(bwd, c, 12 * 8560);
    c.args[14].i = 1;
    CHECK_UNSUPPORTED(bwd, c, "LSTM layers");
}

static void
test_cpu_attention_backward(void)
{
    const char *name =
        "aten._scaled_dot_product_flash_attention_for_cpu_backward";
    ts_op_call c;

    /* grad_out (1,2,3,6), q (1,2,3,4), k (1,1,5,4), v (1,1,5,6) (GQA 2:1):
     * rows = 6, scores = 30, Dq = 4, Dv = 6:
     *   five products 2*30*(3*4 + 2*6) = 1440 (FlopCounterMode's SDPA
     *   backward count for these shapes),
     *   scale, subtract, exp and dS (2) and its scale: 6*30 = 180,
     *   D = rowsum(dO*O): 6*(2*6 - 1) = 66,
     *   dK/dV group sums: (2 - 1)*1*5*(4 + 6) = 50:
     * 1736; causal + 30; and a mask + 30. */
    c = call_new();
    a_tensor(&c, F, "1,2,3,6");
    a_tensor(&c, F, "1,2,3,4");
    a_tensor(&c, F, "1,1,5,4");
    a_tensor(&c, F, "1,1,5,6");
    a_tensor(&c, F, "1,2,3,6");
    a_tensor(&c, F, "1,2,3");
    a_real(&c, 0.0);
    a_bool(&c, false);
    o_tensor(&c, F, "1,2,3,4");
    o_tensor(&c, F, "1,1,5,4");
    o_tensor(&c, F, "1,1,5,6");
    CHECK_EXACT(name, c, 1736);
    CHECK_MATRIX(1440);
    CHECK(ts_op_lookup(name)->flags
          == (TS_OPF_EXTENSION | TS_OPF_ATTENTION | TS_OPF_MATRIX
              | TS_OPF_SDPA_BACKWARD));
    c.args[7].i = 1;
    CHECK_EXACT(name, c, 1766);
    a_tensor(&c, F, "3,5");
    CHECK_EXACT(name, c, 1796);
    /* dropout: the mask on dP and on the recomputed P, 2 per score */
    c.args[6].r = 0.1;
    CHECK_EXACT(name, c, 1856);
    c.args[6].r = 0.0;
    c.args[0].tensor.dims[3] = 4; /* grad_out must match the output */
    CHECK_UNSUPPORTED(name, c, "grad_out shaped like the output");
}

static void
test_more_gradients(void)
{
    ts_op_call c;

    /* elu_backward(grad (2,3), alpha, scale, input_scale, is_result,
     * self_or_result): 7 per element from the input (42), 6 from the
     * result (36). */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_real(&c, 1.0);
    a_real(&c, 1.0);
    a_real(&c, 1.0);
    a_bool(&c, false);
    a_tensor(&c, F, "2,3");
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.elu_backward", c, 42);
    c.args[4].i = 1;
    CHECK_EXACT("aten.elu_backward", c, 36);

    /* (grad (2,3), x (2,3), ...) -> (2,3): softplus 7, log_sigmoid 8,
     * hard/softshrink 2, sgn 1 per element. */
    check_gradient("aten.softplus_backward", 7);
    check_gradient("aten.log_sigmoid_backward", 8);
    check_gradient("aten.hardshrink_backward", 2);
    check_gradient("aten.softshrink_backward", 2);

    /* _prelu_kernel_backward(grad (2,3), x (2,3), weight (1)) -> a pair:
     * 3 per input element, 18. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "1");
    o_tensor(&c, F, "2,3");
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten._prelu_kernel_backward", c, 18);

    /* glu_backward(grad (4,3), x (4,6), -1): 9 per grad element, 108. */
    c = call_new();
    a_tensor(&c, F, "4,3");
    a_tensor(&c, F, "4,6");
    a_int(&c, -1);
    o_tensor(&c, F, "4,6");
    CHECK_EXACT("aten.glu_backward", c, 108);

    /* sgn (2,3): 6; complex sgn divides by the magnitude: unsupported. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.sgn", c, 6);
    CHECK_EXACT("aten.sign_", c, 6);
    c.args[0].tensor.dtype = CX;
    CHECK_UNSUPPORTED("aten.sgn", c, REAL_ONLY);

    /* xlogy(x (4), y (4)): 4 per element, integers promote: 16. */
    c = call_new();
    a_tensor(&c, I, "4");
    a_tensor(&c, I, "4");
    o_tensor(&c, F, "4");
    CHECK_EXACT("aten.xlogy", c, 16);

    /* native_group_norm_backward(grad (2,4,3,3), input, mean, rstd, weight
     * (4), N 2, C 4, HxW 9, group 2, mask): N = 72: x^ 144, grad_input
     * (7 + 1)*72 = 576, grad_weight 2*72 - 4 = 140, grad_bias 72 - 4 = 68:
     * 928; grad_input alone without a weight: 144 + 7*72 = 648. */
    c = call_new();
    a_tensor(&c, F, "2,4,3,3");
    a_tensor(&c, F, "2,4,3,3");
    a_tensor(&c, F, "2,2");
    a_tensor(&c, F, "2,2");
    a_tensor(&c, F, "4");
    a_int(&c, 2);
    a_int(&c, 4);
    a_int(&c, 9);
    a_int(&c, 2);
    a_ints(&c, "1,1,1");
    o_tensor(&c, F, "2,4,3,3");
    CHECK_EXACT("aten.native_group_norm_backward", c, 928);
    c.args[4].kind = TS_ARG_NONE;
    c.args[9].ints[1] = 0;
    c.args[9].ints[2] = 0;
    CHECK_EXACT("aten.native_group_norm_backward", c, 648);
    c.args[6].kind = TS_ARG_OTHER;
    CHECK_UNSUPPORTED("aten.native_group_norm_backward", c, "C argument");
}

static void
test_more_reductions(void)
{
    ts_op_call c;

    /* amax(x (2,3,4), [2]) -> (2,3): 24 - 6 = 18 comparisons. */
    c = call_new();
    a_tensor(&c, F, "2,3,4");
    a_ints(&c, "2");
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.amax", c, 18);
    CHECK_EXACT("aten.amin", c, 18);
    /* logsumexp: 4N = 96; var: 4N = 96; std: 4N + O = 102. */
    CHECK_EXACT("aten.logsumexp", c, 96);
    CHECK_EXACT("aten.var", c, 96);
    CHECK_EXACT("aten.std", c, 102);
    o_tensor(&c, F, "2,3"); /* var_mean / std_mean return the mean too */
    CHECK_EXACT("aten.var_mean", c, 96);
    CHECK_EXACT("aten.std_mean", c, 102);
    /* argmax(x (2,3,4)) -> 0-D int64: 23 comparisons. */
    c = call_new();
    a_tensor(&c, F, "2,3,4");
    o_tensor(&c, I, "");
    CHECK_EXACT("aten.argmax", c, 23);
    c.args[0].tensor.dtype = I;
    CHECK_EXACT("aten.argmax", c, 0);
}

static void
test_more_losses(void)
{
    ts_op_call c;

    /* binary_cross_entropy(p (2,3), t, weight, reduction): 9 per element
     * (54), mean adds 5 + 1: 60; weighted 10*6 + 6 = 66; none 54. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    a_none(&c);
    a_int(&c, 1);
    o_tensor(&c, F, "");
    CHECK_EXACT("aten.binary_cross_entropy", c, 60);
    c.args[2].kind = TS_ARG_TENSOR;
    c.args[2].tensor = shape(F, "2,3");
    CHECK_EXACT("aten.binary_cross_entropy", c, 66);
    c.args[2].kind = TS_ARG_NONE;
    c.args[3].i = 0;
    CHECK_EXACT("aten.binary_cross_entropy", c, 54);

    /* binary_cross_entropy_backward(grad, p (2,3), t, weight, reduction):
     * (6 + [weight] + [mean]) * 6: mean 42, none 36. */
    c = call_new();
    a_tensor(&c, F, "");
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    a_none(&c);
    a_int(&c, 1);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.binary_cross_entropy_backward", c, 42);
    c.args[4].i = 0;
    CHECK_EXACT("aten.binary_cross_entropy_backward", c, 36);

    /* binary_cross_entropy_with_logits(x (2,3), t, weight, pos_weight,
     * reduction): 10*6 + 6 (mean) = 66; with pos_weight 13*6 + 6 = 84;
     * and a weight 14*6 + 6 = 90; none: 60. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    a_none(&c);
    a_none(&c);
    a_int(&c, 1);
    o_tensor(&c, F, "");
    CHECK_EXACT("aten.binary_cross_entropy_with_logits", c, 66);
    c.args[3].kind = TS_ARG_TENSOR;
    c.args[3].tensor = shape(F, "3");
    CHECK_EXACT("aten.binary_cross_entropy_with_logits", c, 84);
    c.args[2].kind = TS_ARG_TENSOR;
    c.args[2].tensor = shape(F, "2,3");
    CHECK_EXACT("aten.binary_cross_entropy_with_logits", c, 90);
    c.args[2].kind = TS_ARG_NONE;
    c.args[3].kind = TS_ARG_NONE;
    c.args[4].i = 0;
    CHECK_EXACT("aten.binary_cross_entropy_with_logits", c, 60);

    /* smooth_l1_loss / huber_loss(x (2,3), t, reduction, beta): 8*6 + 6
     * (mean) = 54; their gradients 7 per element: 42. */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    a_int(&c, 1);
    a_real(&c, 1.0);
    o_tensor(&c, F, "");
    CHECK_EXACT("aten.smooth_l1_loss", c, 54);
    CHECK_EXACT("aten.huber_loss", c, 54);
    c = call_new();
    a_tensor(&c, F, "");
    a_tensor(&c, F, "2,3");
    a_tensor(&c, F, "2,3");
    a_int(&c, 1);
    a_real(&c, 1.0);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.smooth_l1_loss_backward", c, 42);
    CHECK_EXACT("aten.huber_loss_backward", c, 42);
}

static void
test_embedding_bag(void)
{
    const char *fwd = "aten._embedding_bag";
    const char *bwd = "aten._embedding_bag_backward";
    ts_op_call c;

    /* _embedding_bag(weight (10,4), indices (6), offsets (2), False, mode,
     * ...) -> bags (2,4): 6 rows of 4 = 24 looked-up elements reduced into
     * 8: 16 adds (sum, max); mean + 8 divisions: 24; per_sample_weights
     * + 24 multiplies: 40. */
    c = call_new();
    a_tensor(&c, F, "10,4");
    a_tensor(&c, I, "6");
    a_tensor(&c, I, "2");
    a_bool(&c, false);
    a_int(&c, 0);
    a_bool(&c, false);
    a_none(&c);
    o_tensor(&c, F, "2,4");
    CHECK_EXACT(fwd, c, 16);
    CHECK_EXACT("aten._embedding_bag_forward_only", c, 16);
    c.args[4].i = 1;
    CHECK_EXACT(fwd, c, 24);
    c.args[4].i = 0;
    c.args[6].kind = TS_ARG_TENSOR;
    c.args[6].tensor = shape(F, "6");
    CHECK_EXACT(fwd, c, 40);
    c.args[4].i = 3;
    CHECK_UNSUPPORTED(fwd, c, "mode 0");

    /* _embedding_bag_backward(grad (2,4), indices (6), offsets,
     * offset2bag, bag_size, maximum_indices, 10, scale_grad_by_freq, mode,
     * sparse, per_sample_weights, padding_idx): sum 24 adds; mean + 8
     * divisions: 32; max: 8; sum with per_sample_weights: 48. */
    c = call_new();
    a_tensor(&c, F, "2,4");
    a_tensor(&c, I, "6");
    a_tensor(&c, I, "2");
    a_tensor(&c, I, "6");
    a_tensor(&c, I, "2");
    a_tensor(&c, I, "2,4");
    a_int(&c, 10);
    a_bool(&c, false);
    a_int(&c, 0);
    a_bool(&c, false);
    a_none(&c);
    a_int(&c, -1);
    o_tensor(&c, F, "10,4");
    CHECK_EXACT(bwd, c, 24);
    c.args[8].i = 1;
    CHECK_EXACT(bwd, c, 32);
    c.args[8].i = 2;
    CHECK_EXACT(bwd, c, 8);
    c.args[8].i = 0;
    c.args[10].kind = TS_ARG_TENSOR;
    c.args[10].tensor = shape(F, "6");
    CHECK_EXACT(bwd, c, 48);
}

/* ==== extensions: optimizers ============================================= */

static void
test_foreach(void)
{
    ts_op_call c;

    /* _foreach_add.List(self [(2,3), (4)], other, alpha=2): 10 elements *
     * 2 = 20; alpha 1 (or absent): 10. */
    c = call_new();
    a_tensors(&c, F, "2,3;4");
    a_tensors(&c, F, "2,3;4");
    a_int(&c, 2);
    CHECK_EXACT("aten._foreach_add", c, 20);
    CHECK_EXACT("aten._foreach_sub_", c, 20);
    c.args[2].i = 1;
    CHECK_EXACT("aten._foreach_add_", c, 10);
    /* Scalar_out(self, scalar, *, out): the list at index 2 is out=. */
    c = call_new();
    a_tensors(&c, F, "2,3;4");
    a_real(&c, 1.5);
    a_tensors(&c, F, "2,3;4");
    CHECK_EXACT("aten._foreach_add", c, 10);
    CHECK_EXACT("aten._foreach_mul_", c, 10);
    CHECK_EXACT("aten._foreach_div_", c, 10);
    CHECK_EXACT("aten._foreach_maximum_", c, 10);
    CHECK_EXACT("aten._foreach_lerp_", c, 30);
    /* Unary: sqrt 10. */
    c = call_new();
    a_tensors(&c, F, "2,3;4");
    CHECK_EXACT("aten._foreach_sqrt", c, 10);
    CHECK_EXACT("aten._foreach_neg_", c, 10);
    CHECK_EXACT("aten._foreach_abs_", c, 10); /* Adamax */
    /* An empty list: 0. */
    c = call_new();
    a_ints(&c, "");
    CHECK_EXACT("aten._foreach_sqrt", c, 0);
    /* Integer lists (step counters kept as ints): integer work, 0. */
    c = call_new();
    a_tensors(&c, I, "1;1");
    a_int(&c, 1);
    CHECK_EXACT("aten._foreach_add_", c, 0);
    /* A list whose shapes the binding could not read. */
    c = call_new();
    a_other(&c);
    a_tensors(&c, F, "2");
    c.args[0].kind = TS_ARG_TENSORS;
    c.args[0].numel_sum = -1;
    c.args[0].tensor = shape(F, "2");
    CHECK_UNSUPPORTED("aten._foreach_sqrt", c, "list of tensors");

    /* _foreach_addcdiv_.Scalar(self, t1, t2, value=0.5): 3 per element,
     * 30; value 1: 20; per-tensor scalars (ScalarList, Tensor): 30. */
    c = call_new();
    a_tensors(&c, F, "2,3;4");
    a_tensors(&c, F, "2,3;4");
    a_tensors(&c, F, "2,3;4");
    a_real(&c, 0.5);
    CHECK_EXACT("aten._foreach_addcdiv_", c, 30);
    c.args[3].r = 1.0;
    CHECK_EXACT("aten._foreach_addcmul_", c, 20);
    c.args[3].kind = TS_ARG_OTHER; /* [0.1, 0.2] */
    CHECK_EXACT("aten._foreach_addcdiv_", c, 30);
    c.args[3].kind = TS_ARG_TENSOR;
    c.args[3].tensor = shape(F, "2");
    CHECK_EXACT("aten._foreach_addcmul", c, 30);
    c.args[3].kind = TS_ARG_COMPLEX;
    CHECK_UNSUPPORTED("aten._foreach_addcmul", c, REAL_ONLY);

    /* _foreach_norm(self [(2,3), (4)], ord): order 2 (default) 2N = 20;
     * order 1 or inf 2N - 2 tensors = 18; order 3 unsupported. */
    c = call_new();
    a_tensors(&c, F, "2,3;4");
    CHECK_EXACT("aten._foreach_norm", c, 20);
    a_int(&c, 1);
    CHECK_EXACT("aten._foreach_norm", c, 18);
    c.args[1].kind = TS_ARG_REAL;
    c.args[1].r = INFINITY;
    CHECK_EXACT("aten._foreach_norm", c, 18);
    c.args[1].r = 3.0;
    CHECK_UNSUPPORTED("aten._foreach_norm", c, "orders 1, 2");
}

/* _fused_sgd_(self, grads, momentum_buffer_list, *, weight_decay,
 * momentum, lr, dampening, nesterov, maximize, is_first_step, grad_scale,
 * found_inf) over 10 parameter elements. */
static ts_op_call
sgd_call(double wd, double momentum, bool nesterov, bool first)
{
    ts_op_call c = call_new();
    a_tensors(&c, F, "2,3;4");
    a_tensors(&c, F, "2,3;4");
    a_tensors(&c, F, "2,3;4");
    a_real(&c, wd);
    a_real(&c, momentum);
    a_real(&c, 0.01);
    a_real(&c, 0.0);
    a_bool(&c, nesterov);
    a_bool(&c, false);
    a_bool(&c, first);
    a_none(&c);
    a_none(&c);
    return c;
}

/* _fused_adam(w)_(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
 * state_steps, *, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
 * grad_scale, found_inf) over 10 parameter elements. */
static ts_op_call
adam_call(double wd, bool amsgrad)
{
    ts_op_call c = call_new();
    for (int i = 0; i < 5; i++) {
        a_tensors(&c, F, "2,3;4");
    }
    a_tensors(&c, F, ";");
    a_real(&c, 1e-3);
    a_real(&c, 0.9);
    a_real(&c, 0.999);
    a_real(&c, wd);
    a_real(&c, 1e-8);
    a_bool(&c, amsgrad);
    a_bool(&c, false);
    a_none(&c);
    a_none(&c);
    return c;
}

static void
test_fused_optimizers(void)
{
    ts_op_call c;

    /* SGD per element as the for-loop: weight decay add (alpha = wd) 2,
     * momentum mul 1 + add (alpha = 1 - dampening = 1) 1, parameter
     * update (alpha = -lr) 2: 6 * 10 = 60. */
    c = sgd_call(1e-4, 0.9, false, false);
    CHECK_EXACT("aten._fused_sgd_", c, 60);
    /* First step: the buffer is a copy of grad: 4 * 10 = 40. */
    c = sgd_call(1e-4, 0.9, false, true);
    CHECK_EXACT("aten._fused_sgd_", c, 40);
    /* Nesterov: grad.add(buf, alpha=momentum) 2 more: 80. */
    c = sgd_call(1e-4, 0.9, true, false);
    CHECK_EXACT("aten._fused_sgd_", c, 80);
    /* Plain SGD: the update only, 20; dampening adds 1 per element. */
    c = sgd_call(0.0, 0.0, false, false);
    CHECK_EXACT("aten._fused_sgd_", c, 20);
    c = sgd_call(0.0, 0.9, false, false);
    c.args[6].r = 0.1;
    CHECK_EXACT("aten._fused_sgd_", c, 50);
    /* maximize and grad_scale: one operation each per element. */
    c = sgd_call(0.0, 0.0, false, false);
    c.args[8].i = 1;
    c.args[10].kind = TS_ARG_TENSOR;
    c.args[10].tensor = shape(F, "");
    CHECK_EXACT("aten._fused_sgd_", c, 40);
    /* tensor_lr overload: a tensor lr counts as != -1. */
    c = sgd_call(0.0, 0.0, false, false);
    c.args[5].kind = TS_ARG_TENSOR;
    c.args[5].tensor = shape(F, "");
    CHECK_EXACT("aten._fused_sgd_", c, 20);
    c.args[4].kind = TS_ARG_STR;
    CHECK_UNSUPPORTED("aten._fused_sgd_", c, "momentum");

    /* AdamW per element: lerp 3, mul 1 + addcmul (value 0.001) 3, sqrt,
     * div, add eps 3, addcdiv 3, decoupled decay 1: 14 * 10 = 140. Adam's
     * L2 decay is grad.add(param, alpha=wd): 2: 150. */
    c = adam_call(0.01, false);
    CHECK_EXACT("aten._fused_adamw_", c, 140);
    CHECK_EXACT("aten._fused_adam_", c, 150);
    c = adam_call(0.0, false);
    CHECK_EXACT("aten._fused_adamw_", c, 130);
    CHECK_EXACT("aten._fused_adam_", c, 130);
    c = adam_call(0.01, true); /* amsgrad: maximum, 1 more */
    CHECK_EXACT("aten._fused_adamw_", c, 150);
    c = adam_call(0.0, false);
    c.args[8].r = 0.0; /* beta2 = 0: addcmul value 1, 1 fewer */
    CHECK_EXACT("aten._fused_adam_", c, 120);
    c.args[0].tensor.dtype = CX;
    CHECK_UNSUPPORTED("aten._fused_adam_", c, REAL_ONLY);
}

/* ==== documentation ====================================================== */

/* ==== vision: rounding, selections, torchvision operators ================ */

static const char ADAPTIVE_MSG[] = "sampling_ratio <= 0";

/* A complete count with no diagnostic, or a lower bound whose reason names
 * the data the count misses. */
#define CHECK_LOWER_BOUND(name, call, expected, fragment)                \
    do {                                                                 \
        CHECK_FLOPS((name), (call), (expected));                         \
        CHECK(result.incomplete);                                        \
        CHECK(result.incomplete_message != NULL                          \
              && strstr(result.incomplete_message, (fragment)) != NULL); \
    } while (0)

static void
test_rounding(void)
{
    ts_op_call c;

    /* floor/ceil/trunc/round/log2 on (2,3): one operation per output, 6 */
    c = call_new();
    a_tensor(&c, F, "2,3");
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.floor", c, 6);
    CHECK_EXACT("aten.floor_", c, 6);
    CHECK_EXACT("aten.ceil", c, 6);
    CHECK_EXACT("aten.ceil_", c, 6);
    CHECK_EXACT("aten.trunc", c, 6);
    CHECK_EXACT("aten.trunc_", c, 6);
    CHECK_EXACT("aten.round", c, 6);
    CHECK_EXACT("aten.round_", c, 6);
    CHECK_EXACT("aten.log2", c, 6);
    CHECK_EXACT("aten.log2_", c, 6);
    /* integer inputs: no floating-point work */
    c = call_new();
    a_tensor(&c, I, "2,3");
    o_tensor(&c, I, "2,3");
    CHECK_EXACT("aten.floor", c, 0);
    CHECK_EXACT("aten.round", c, 0);
    /* round(decimals=2): x*100, round, /100 per element: 3*6 = 18;
     * decimals=0 is plain rounding, 6 */
    c = call_new();
    a_tensor(&c, F, "2,3");
    a_int(&c, 2);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.round", c, 18);
    c.args[1].i = 0;
    CHECK_EXACT("aten.round", c, 6);
    c.args[1].kind = TS_ARG_REAL;
    CHECK_UNSUPPORTED("aten.round", c, "decimals argument must be an int");

    /* remainder a - b*floor(a/b), 4 per output: (4,5) -> 80 */
    c = call_new();
    a_tensor(&c, F, "4,5");
    a_tensor(&c, F, "4,5");
    o_tensor(&c, F, "4,5");
    CHECK_EXACT("aten.remainder", c, 80);
    CHECK_EXACT("aten.remainder_", c, 80);
    /* index arithmetic: an integer tensor % an int counts 0; % 2.5 is
     * floating: 4*6 = 24 */
    c = call_new();
    a_tensor(&c, I, "2,3");
    a_int(&c, 3);
    o_tensor(&c, I, "2,3");
    CHECK_EXACT("aten.remainder", c, 0);
    c = call_new();
    a_tensor(&c, I, "2,3");
    a_real(&c, 2.5);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.remainder", c, 24);
}

static void
test_selections(void)
{
    ts_op_call c;

    /* sort (3,8) along the last dim: 3 rows * 8 * ceil(log2 8) = 3*8*3 =
     * 72; along dim 0: 8 rows * 3 * ceil(log2 3) = 8*3*2 = 48 */
    c = call_new();
    a_tensor(&c, F, "3,8");
    o_tensor(&c, F, "3,8");
    o_tensor(&c, I, "3,8");
    CHECK_EXACT("aten.sort", c, 72);
    a_int(&c, 0);
    CHECK_EXACT("aten.sort", c, 48);
    a_bool(&c, true); /* descending changes nothing */
    CHECK_EXACT("aten.sort", c, 48);
    /* sort.stable(self, *, stable, dim, descending): dim at 2 */
    c = call_new();
    c.overload = "stable";
    a_tensor(&c, F, "3,8");
    a_bool(&c, true);
    a_int(&c, 0);
    o_tensor(&c, F, "3,8");
    o_tensor(&c, I, "3,8");
    CHECK_EXACT("aten.sort", c, 48);
    /* 5 keys: 5 * ceil(log2 5) = 5*3 = 15; one key or a 0-D tensor: 0 */
    c = call_new();
    a_tensor(&c, F, "5");
    CHECK_EXACT("aten.sort", c, 15);
    c = call_new();
    a_tensor(&c, F, "4,1");
    CHECK_EXACT("aten.sort", c, 0);
    c = call_new();
    a_tensor(&c, F, "");
    CHECK_EXACT("aten.sort", c, 0);
    /* integer keys count nothing; a dim out of range is refused */
    c = call_new();
    a_tensor(&c, I, "3,8");
    CHECK_EXACT("aten.sort", c, 0);
    c = call_new();
    a_tensor(&c, F, "3,8");
    a_int(&c, 2);
    CHECK_UNSUPPORTED("aten.sort", c, "out of range");

    /* topk on (2,10): k=1 -> 20 * 1 level = 20 (a max: n comparisons per
     * row); k=3 -> 2 levels, 40; k=4 -> 3 levels, 60; k=0 -> 0 */
    c = call_new();
    a_tensor(&c, F, "2,10");
    a_int(&c, 1);
    o_tensor(&c, F, "2,1");
    o_tensor(&c, I, "2,1");
    CHECK_EXACT("aten.topk", c, 20);
    c.args[1].i = 3;
    CHECK_EXACT("aten.topk", c, 40);
    c.args[1].i = 4;
    CHECK_EXACT("aten.topk", c, 60);
    c.args[1].i = 0;
    CHECK_EXACT("aten.topk", c, 0);
    c.args[1].i = 11;
    CHECK_UNSUPPORTED("aten.topk", c, "larger than the dimension");
    /* along dim 0 of (4,5), k=2: 20 keys * 2 levels = 40 */
    c = call_new();
    a_tensor(&c, F, "4,5");
    a_int(&c, 2);
    a_int(&c, 0);
    CHECK_EXACT("aten.topk", c, 40);
    c = call_new();
    a_tensor(&c, I, "4,5");
    a_int(&c, 2);
    CHECK_EXACT("aten.topk", c, 0);

    /* _unique2 of 10 keys: 10 * ceil(log2 10) + 9 = 40 + 9 = 49; one key:
     * 0; integer labels (the detection heads' case): 0 */
    c = call_new();
    a_tensor(&c, F, "2,5");
    CHECK_EXACT("aten._unique2", c, 49);
    c = call_new();
    a_tensor(&c, F, "1");
    CHECK_EXACT("aten._unique2", c, 0);
    c = call_new();
    a_tensor(&c, I, "10");
    CHECK_EXACT("aten._unique2", c, 0);

    /* nonzero: a comparison per floating element, (3,4) -> 12; a boolean
     * mask counts 0 */
    c = call_new();
    a_tensor(&c, F, "3,4");
    o_tensor(&c, I, "5,2");
    CHECK_EXACT("aten.nonzero", c, 12);
    c = call_new();
    a_tensor(&c, B, "3,4");
    o_tensor(&c, I, "5,2");
    CHECK_EXACT("aten.nonzero", c, 0);

    /* nms of 5 boxes: sort 5*ceil(log2 5) = 15, areas 3*5 = 15, 10 pairs *
     * 13 = 130: 160. One box: its area, 3. No box: 0. */
    c = call_new();
    a_tensor(&c, F, "5,4");
    a_tensor(&c, F, "5");
    a_real(&c, 0.5);
    o_tensor(&c, I, "3");
    CHECK_EXACT("torchvision.nms", c, 160);
    c.args[0].tensor.dims[0] = 1;
    CHECK_EXACT("torchvision.nms", c, 3);
    c.args[0].tensor.dims[0] = 0;
    CHECK_EXACT("torchvision.nms", c, 0);
    /* 1000 boxes: 1000*10 + 3000 + 13*499500 = 6,506,500 */
    c.args[0].tensor.dims[0] = 1000;
    CHECK_EXACT("torchvision.nms", c, 6506500);
    c = call_new();
    a_tensor(&c, F, "5");
    a_tensor(&c, F, "5");
    a_real(&c, 0.5);
    CHECK_UNSUPPORTED("torchvision.nms", c, "dets as a 2-D tensor");
}

static void
test_roi_ops(void)
{
    ts_op_call c;

    /* roi_align(input (2,4,8,8), rois (3,5), 0.25, 7, 7, sampling_ratio=2,
     * aligned=False): 3*7*7 = 147 bins, 4 samples each: 588 points; per
     * point 8 weight ops + 8 per channel * 4 channels = 40: 23,520; one
     * divide per output 147*4 = 588: 24,108 */
    c = call_new();
    a_tensor(&c, F, "2,4,8,8");
    a_tensor(&c, F, "3,5");
    a_real(&c, 0.25);
    a_int(&c, 7);
    a_int(&c, 7);
    a_int(&c, 2);
    a_bool(&c, false);
    o_tensor(&c, F, "3,4,7,7");
    CHECK_EXACT("torchvision.roi_align", c, 24108);
    /* adaptive sampling: at least 1 sample per bin (147*40 + 588 = 6,468),
     * marked incomplete; aligned=True: at least 0 (the divides, 588) */
    c.args[5].i = 0;
    CHECK_LOWER_BOUND("torchvision.roi_align", c, 6468, ADAPTIVE_MSG);
    c.args[5].i = -1;
    c.args[6].i = 1;
    CHECK_LOWER_BOUND("torchvision.roi_align", c, 588, ADAPTIVE_MSG);
    /* no ROI: exactly 0 */
    c.args[1].tensor.dims[0] = 0;
    CHECK_EXACT("torchvision.roi_align", c, 0);
    c.args[1].tensor.dims[0] = 3;
    c.args[3].kind = TS_ARG_REAL;
    CHECK_UNSUPPORTED("torchvision.roi_align", c, "pooled_height");

    /* ps_roi_align(input (1,18,6,6), rois (2,5), 1.0, 3, 3, 2) -> (2,2,3,3):
     * 36 outputs * (16*4 + 1) = 2,340; adaptive: 36 divides at least */
    c = call_new();
    a_tensor(&c, F, "1,18,6,6");
    a_tensor(&c, F, "2,5");
    a_real(&c, 1.0);
    a_int(&c, 3);
    a_int(&c, 3);
    a_int(&c, 2);
    o_tensor(&c, F, "2,2,3,3");
    o_tensor(&c, I, "2,2,3,3");
    CHECK_EXACT("torchvision.ps_roi_align", c, 2340);
    c.args[5].i = 0;
    CHECK_LOWER_BOUND("torchvision.ps_roi_align", c, 36, ADAPTIVE_MSG);

    /* roi_pool/ps_roi_pool: bin sizes are data; 0, a lower bound, unless
     * there is no bin */
    c = call_new();
    a_tensor(&c, F, "1,4,8,8");
    a_tensor(&c, F, "3,5");
    a_real(&c, 0.5);
    a_int(&c, 2);
    a_int(&c, 2);
    o_tensor(&c, F, "3,4,2,2");
    o_tensor(&c, I, "3,4,2,2");
    CHECK_LOWER_BOUND(
        "torchvision.roi_pool", c, 0, "coordinates are tensor values");
    CHECK_LOWER_BOUND(
        "torchvision.ps_roi_pool", c, 0, "coordinates are tensor values");
    c.args[1].tensor.dims[0] = 0;
    CHECK_EXACT("torchvision.roi_pool", c, 0);
}

static void
test_deform_grid_bicubic(void)
{
    ts_op_call c;

    /* deform_conv2d(input (2,4,6,6), weight (6,2,3,3) (2 groups), offset
     * (2,18,4,4), mask (2,9,4,4), bias (6), stride 1, pad 0, dilation 1,
     * groups 2, offset_groups 1, use_mask) -> (2,6,4,4).
     * columns 2*4*9*16 = 1,152, each 2 + 15 + 1 (mask) = 18: 20,736;
     * products 2*2*6*2*9*16 = 6,912 (as a (2,4,6,6) conv with the same
     * weight under FlopCounterMode); bias 2*6*16 = 192: 27,840.
     * Without the mask: 1,152*17 = 19,584 -> 26,688. */
    c = call_new();
    a_tensor(&c, F, "2,4,6,6");
    a_tensor(&c, F, "6,2,3,3");
    a_tensor(&c, F, "2,18,4,4");
    a_tensor(&c, F, "2,9,4,4");
    a_tensor(&c, F, "6");
    for (int i = 0; i < 2; i++) {
        a_int(&c, 1);
    }
    for (int i = 0; i < 2; i++) {
        a_int(&c, 0);
    }
    for (int i = 0; i < 2; i++) {
        a_int(&c, 1);
    }
    a_int(&c, 2);
    a_int(&c, 1);
    a_bool(&c, true);
    o_tensor(&c, F, "2,6,4,4");
    CHECK_EXACT("torchvision.deform_conv2d", c, 27840);
    c.args[13].i = 0;
    CHECK_EXACT("torchvision.deform_conv2d", c, 26688);
    c.nouts = 0;
    CHECK_UNSUPPORTED("torchvision.deform_conv2d", c, "output");

    /* grid_sampler_2d(input (2,3,5,5), grid (2,4,6,2)): 48 points.
     * bilinear, zeros: 48*(4 + 8) + 48*3*7 = 576 + 1,008 = 1,584;
     * nearest, border: 48*(4 + 4 + 2) = 480;
     * bicubic, reflection: 48*(4 + 16*18 + 54) + 48*3*35 = 16,608 + 5,040
     * = 21,648; bicubic, zeros: 48*58 + 5,040 = 7,824 */
    c = call_new();
    a_tensor(&c, F, "2,3,5,5");
    a_tensor(&c, F, "2,4,6,2");
    a_int(&c, 0);
    a_int(&c, 0);
    a_bool(&c, true);
    o_tensor(&c, F, "2,3,4,6");
    CHECK_EXACT("aten.grid_sampler_2d", c, 1584);
    c.args[2].i = 1;
    c.args[3].i = 1;
    CHECK_EXACT("aten.grid_sampler_2d", c, 480);
    c.args[2].i = 2;
    c.args[3].i = 2;
    CHECK_EXACT("aten.grid_sampler_2d", c, 21648);
    c.args[3].i = 0;
    CHECK_EXACT("aten.grid_sampler_2d", c, 7824);
    c.args[2].i = 3;
    CHECK_UNSUPPORTED("aten.grid_sampler_2d", c, "interpolation_mode");
    c.args[2].i = 0;
    c.args[3].i = 3;
    CHECK_UNSUPPORTED("aten.grid_sampler_2d", c, "padding_mode");

    /* upsample_bicubic2d to (1,2,4,4): 32 outputs * 35 = 1,120 */
    c = call_new();
    a_tensor(&c, F, "1,2,2,2");
    a_ints(&c, "4,4");
    a_bool(&c, false);
    o_tensor(&c, F, "1,2,4,4");
    CHECK_EXACT("aten.upsample_bicubic2d", c, 1120);
}

static char *
read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long size;
    if (f == NULL) {
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0
        && fseek(f, 0, SEEK_SET) == 0) {
        text = malloc((size_t)size + 1);
        if (text != NULL) {
            size_t got = fread(text, 1, (size_t)size, f);
            text[got] = '\0';
        }
    }
    fclose(f);
    return text;
}

static void
test_docs(void)
{
    char *generated = ts_op_docs_markdown();
    char *checked_in = read_file(TS_SOURCE_ROOT "/docs/operator-flops.md");
    CHECK(generated != NULL);
    CHECK(checked_in != NULL);
    if (generated != NULL && checked_in != NULL) {
        CHECK(strcmp(generated, checked_in) == 0);
        if (strcmp(generated, checked_in) != 0) {
            fprintf(stderr,
                    "  docs/operator-flops.md is stale: regenerate it with "
                    "torchscan-op-docs > docs/operator-flops.md\n");
        }
    }
    if (generated != NULL) {
        /* One row per packet group; in-place variants share a row. */
        CHECK(strstr(generated, "| `aten.add`, `aten.add_` |") != NULL);
        CHECK(strstr(generated, "| `aten.mm` | `2*m*n*k (FlopCounterMode)` |")
              != NULL);
        CHECK(strstr(generated, "`aten.embedding`") != NULL);
        CHECK(strstr(generated, "490 operator packets") != NULL);
        CHECK(strstr(generated,
                     "| `c10d.allreduce_` | `0; bytes_moved = the reduced "
                     "tensor(s)` | torchscan_collective_bytes_v1")
              != NULL);
        CHECK(strstr(generated, "| `torchvision.nms` |") != NULL);
    }
    free(generated);
    free(checked_in);
}

/* Operators of Mixture-of-Experts routers (transformers' grouped-mm
 * experts: sort, perm // top_k, histc, cumsum) and of wav2vec2's
 * weight-normalised positional convolution. Hand arithmetic. */
static void
test_moe_and_weight_norm(void)
{
    ts_op_call c;

    /* floor_divide: divide and floor, 2 per output: (4,5) -> 40 */
    c = call_new();
    a_tensor(&c, F, "4,5");
    a_tensor(&c, F, "4,5");
    o_tensor(&c, F, "4,5");
    CHECK_EXACT("aten.floor_divide", c, 40);
    CHECK_EXACT("aten.floor_divide_", c, 40);
    /* perm // num_top_k on int64 indices: index arithmetic, 0; an integer
     * tensor // 2.5 is floating: 2*6 = 12 */
    c = call_new();
    a_tensor(&c, I, "16");
    a_int(&c, 2);
    o_tensor(&c, I, "16");
    CHECK_EXACT("aten.floor_divide", c, 0);
    c = call_new();
    a_tensor(&c, I, "2,3");
    a_real(&c, 2.5);
    o_tensor(&c, F, "2,3");
    CHECK_EXACT("aten.floor_divide", c, 12);

    /* histc(expert ids (16,), bins=4, min=0, max=3): index work, 0 for
     * float ids (CPU) and integer ids (CUDA, meta) alike; a sparse input is
     * refused like any other formula's. */
    c = call_new();
    a_tensor(&c, F, "16");
    a_int(&c, 4);
    a_int(&c, 0);
    a_int(&c, 3);
    o_tensor(&c, F, "4");
    CHECK_EXACT("aten.histc", c, 0);
    c.args[0].tensor.dtype = I;
    c.outs[0].dtype = I;
    CHECK_EXACT("aten.histc", c, 0);
    c.args[0].tensor.dense = false;
    CHECK_UNSUPPORTED("aten.histc", c, "dense strided");

    /* _weight_norm_interface(v (32,8,16), g (1,1,16), dim=2), wav2vec2's
     * positional convolution: N = 4096, R = 16 norms of 256 elements.
     * Norms 2N = 8192 (4096 squares, 4096 - 16 adds, 16 roots), g / norm
     * 16, v * (g / norm) 4096: 12304 = 3N + R. */
    c = call_new();
    a_tensor(&c, F, "32,8,16");
    a_tensor(&c, F, "1,1,16");
    a_int(&c, 2);
    o_tensor(&c, F, "32,8,16");
    o_tensor(&c, F, "1,1,16");
    CHECK_EXACT("aten._weight_norm_interface", c, 12304);
    /* dim 0: 32 norms, 12288 + 32; dim -1: one norm of the whole tensor,
     * 12288 + 1; dim absent is 0 (schema default) */
    c.args[2].i = 0;
    CHECK_EXACT("aten._weight_norm_interface", c, 12320);
    c.args[2].i = -1;
    CHECK_EXACT("aten._weight_norm_interface", c, 12289);
    c.nargs = 2;
    CHECK_EXACT("aten._weight_norm_interface", c, 12320);
    c.nargs = 3;
    c.args[2].i = 3;
    CHECK_UNSUPPORTED("aten._weight_norm_interface", c, "out of range");
    c.args[2].kind = TS_ARG_REAL;
    CHECK_UNSUPPORTED("aten._weight_norm_interface", c, "must be an int");
    /* an empty weight: 0 (no norm to take) */
    c = call_new();
    a_tensor(&c, F, "0,8");
    a_tensor(&c, F, "0,1");
    a_int(&c, 0);
    CHECK_EXACT("aten._weight_norm_interface", c, 0);

    /* _weight_norm_interface_backward(grad_w, saved_v, saved_g,
     * saved_norms, dim=2) on the same shapes: s = sum(grad_w*v) per row
     * 2*4096 - 16 = 8176, grad_g = s/norm 16, a = g/norm 16,
     * b = a*grad_g/norm 32, grad_v = a*grad_w - b*v 3*4096 = 12288:
     * 20528 = 5N + 3R. */
    c = call_new();
    a_tensor(&c, F, "32,8,16");
    a_tensor(&c, F, "32,8,16");
    a_tensor(&c, F, "1,1,16");
    a_tensor(&c, F, "1,1,16");
    a_int(&c, 2);
    o_tensor(&c, F, "32,8,16");
    o_tensor(&c, F, "1,1,16");
    CHECK_EXACT("aten._weight_norm_interface_backward", c, 20528);
    c.args[4].i = -1;
    CHECK_EXACT("aten._weight_norm_interface_backward", c, 20483);
}

/* Every formula of the table on generic calls, each swept as above: no
 * argument; one to four float tensors of shape (2, 3, 4, 5), an int and a
 * list of ints after them; the output of the first's shape. */
static void
test_generic_calls(void)
{
    const ts_op_entry *entries;
    size_t n = ts_op_table(&entries);
    ts_shape t = {4, {2, 3, 4, 5}, F, true, 4};
    for (size_t e = 0; e < n; e++) {
        if (entries[e].formula == NULL) {
            continue;
        }
        for (int k = 0; k <= 4; k++) {
            ts_op_call c;
            memset(&c, 0, sizeof c);
            for (int a = 0; a < k; a++) {
                c.args[a].kind = TS_ARG_TENSOR;
                c.args[a].tensor = t;
            }
            c.nargs = k;
            if (k > 0) {
                c.args[c.nargs].kind = TS_ARG_INT;
                c.args[c.nargs++].i = 1;
                c.args[c.nargs].kind = TS_ARG_INTS;
                c.args[c.nargs].nints = 2;
                c.args[c.nargs].ints[0] = 1;
                c.args[c.nargs++].ints[1] = 1;
                c.nouts = 1;
                c.outs[0] = t;
            }
            sweep_name = entries[e].name;
            sweep_one(entries[e].formula, &c);
            sweep(entries[e].formula, &c);
        }
    }
}

int
main(void)
{
    test_table();
    test_ignored();
    test_matmul();
    test_convolution();
    test_convolution_backward();
    test_sdpa();
    test_sdpa_backward();
    test_raw_attention_kernels();
    test_guards();
    test_add_div();
    test_unit_ops();
    test_clamp_addc();
    test_activations();
    test_per_input_table();
    test_reductions();
    test_extremum();
    test_norms();
    test_products();
    test_softmax();
    test_layer_group_rms_norm();
    test_batch_norm();
    test_pooling();
    test_cpu_attention();
    test_native_mha();
    test_encoder_layer();
    test_extension_elementwise();
    test_activation_backward();
    test_softmax_backward();
    test_norm_backward();
    test_pool_backward();
    test_losses();
    test_upsample();
    test_lookups();
    test_lstm();
    test_cpu_attention_backward();
    test_foreach();
    test_more_gradients();
    test_more_reductions();
    test_more_losses();
    test_embedding_bag();
    test_fused_optimizers();
    test_rounding();
    test_selections();
    test_roi_ops();
    test_deform_grid_bicubic();
    test_moe_and_weight_norm();
    test_docs();
    test_generic_calls();
    printf("near misses: %ld formula runs (%ld refused)\n",
           sweep_runs,
           sweep_refused);
    return ts_test_report();
}
