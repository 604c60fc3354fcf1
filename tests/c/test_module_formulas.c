/* Module formulas pinned to hand-derived numbers (contract section 2.1).
 *
 * Each case writes its arithmetic next to the expected value, so a failure
 * points at the convention, not only at the number. N = input elements,
 * O = output elements, P = parameter elements, K = kernel volume. */
#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "torchscan/module_formulas.h"

/* ---- builders ---------------------------------------------------------- */

static ts_shape
shape_of(int ndim, const int64_t *dims)
{
    ts_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        s.dims[i] = dims[i];
    }
    s.dtype = TS_DTYPE_FLOAT;
    s.dense = true;
    return s;
}

#define DIMS_(...) ((const int64_t[]){__VA_ARGS__})
#define SHAPE(...)                                               \
    shape_of((int)(sizeof DIMS_(__VA_ARGS__) / sizeof(int64_t)), \
             DIMS_(__VA_ARGS__))

static ts_module_desc
desc_of(ts_module_kind kind)
{
    ts_module_desc d;
    memset(&d, 0, sizeof d);
    d.kind = kind;
    return d;
}

static ts_module_call
call_of(const char *type_name, ts_shape in, ts_shape out)
{
    ts_module_call c;
    memset(&c, 0, sizeof c);
    c.type_name = type_name;
    c.has_input = true;
    c.has_output = true;
    c.input = in;
    c.output = out;
    return c;
}

/* ---- near misses, systematically ------------------------------------------
 * Every call these tests estimate is also estimated after each of these
 * edits: each size of the description set to 0, -1 or one more, each flag
 * flipped, the rank changed; the input, output, key, value and second
 * tensor reshaped, retyped or taken away. Each answer must be TS_OK with
 * every estimate of a known kind, a complete FLOP, MAC or DMA count >= 0,
 * a refused one with its message, and the same twice. */

static long sweep_calls, sweep_complete;

static bool
estimate_ok(const ts_estimate *e, bool counted)
{
    switch (e->kind) {
        case TS_EST_COMPLETE:
            return !counted
                   || (e->value.is_real ? e->value.r >= 0 : e->value.i >= 0);
        case TS_EST_UNSUPPORTED:
        case TS_EST_ERROR:
            return e->message[0] != '\0';
        case TS_EST_NOT_APPLICABLE:
            return true;
        default:
            return false;
    }
}

static void
estimate_one(const ts_module_desc *d, const ts_module_call *c)
{
    ts_module_estimates a, b;
    memset(&a, 0xA5, sizeof a);
    memset(&b, 0x5A, sizeof b);
    CHECK_EQ_INT(ts_module_estimate(d, c, &a), TS_OK);
    CHECK_EQ_INT(ts_module_estimate(d, c, &b), TS_OK);
    sweep_calls++;
    sweep_complete += a.flops.kind == TS_EST_COMPLETE;
    CHECK(estimate_ok(&a.flops, true) && estimate_ok(&a.macs, true)
          && estimate_ok(&a.dmas, true) && estimate_ok(&a.rf, false)
          && estimate_ok(&a.stride, false) && estimate_ok(&a.padding, false));
    CHECK(a.flops.kind == b.flops.kind && a.flops.value.i == b.flops.value.i
          && a.macs.value.i == b.macs.value.i
          && a.dmas.value.i == b.dmas.value.i);
}

static void
edit_shape(ts_shape *s, int how)
{
    if (s->ndim > TS_MAX_DIMS) {
        s->ndim = TS_MAX_DIMS; /* a guard test's rank: cut to the most */
        return;
    }
    if (how == 0 && s->ndim > 0) {
        s->dims[s->ndim - 1] += 1;
    }
    else if (how == 1 && s->ndim > 0) {
        s->dims[0] = 0;
    }
    else if (how == 2 && s->ndim > 0) {
        s->ndim -= 1;
    }
    else if (how == 3 && s->ndim >= 0 && s->ndim < TS_MAX_DIMS) {
        s->dims[s->ndim++] = 3;
    }
    else if (how == 4) {
        s->dtype = TS_DTYPE_COMPLEX;
    }
    else if (how == 5) {
        s->dense = false;
    }
}

#define I64_FIELD(f) offsetof(ts_module_desc, f)
static const size_t i64_fields[] = {
    I64_FIELD(in_features),    I64_FIELD(out_features),
    I64_FIELD(in_channels),    I64_FIELD(out_channels),
    I64_FIELD(groups),         I64_FIELD(kernel[0]),
    I64_FIELD(kernel[1]),      I64_FIELD(stride[0]),
    I64_FIELD(padding[0]),     I64_FIELD(dilation[0]),
    I64_FIELD(num_features),   I64_FIELD(normalized_numel),
    I64_FIELD(embed_dim),      I64_FIELD(num_heads),
    I64_FIELD(kdim),           I64_FIELD(vdim),
    I64_FIELD(param_numel),    I64_FIELD(dim),
    I64_FIELD(num_groups),     I64_FIELD(size),
    I64_FIELD(embedding_dim),  I64_FIELD(pad[0]),
    I64_FIELD(output_size[0]), I64_FIELD(input_size),
    I64_FIELD(hidden_size),    I64_FIELD(num_layers),
    I64_FIELD(proj_size),      I64_FIELD(in2_features),
};
static const size_t bool_fields[] = {
    I64_FIELD(training),
    I64_FIELD(inplace),
    I64_FIELD(has_weight),
    I64_FIELD(has_bias),
    I64_FIELD(padding_is_string),
    I64_FIELD(kernel_is_int),
    I64_FIELD(ceil_mode),
    I64_FIELD(return_indices),
    I64_FIELD(count_include_pad),
    I64_FIELD(has_dilation),
    I64_FIELD(track_running_stats),
    I64_FIELD(has_running_mean),
    I64_FIELD(has_running_var),
    I64_FIELD(momentum_is_none),
    I64_FIELD(batch_first),
    I64_FIELD(has_in_proj_bias),
    I64_FIELD(has_out_proj_bias),
    I64_FIELD(add_bias_kv),
    I64_FIELD(add_zero_attn),
};
#undef I64_FIELD

static void
sweep(const ts_module_desc *d0, const ts_module_call *c0)
{
    ts_module_desc d;
    ts_module_call c;
    static const int64_t values[] = {0, -1, 1};
#define RESET() (d = *d0, c = *c0)
    for (size_t f = 0; f < sizeof i64_fields / sizeof *i64_fields; f++) {
        for (int v = 0; v < 3; v++) {
            int64_t *field;
            RESET();
            field = (int64_t *)((char *)&d + i64_fields[f]);
            *field = v == 2 ? *field + 1 : values[v];
            estimate_one(&d, &c);
        }
    }
    for (size_t f = 0; f < sizeof bool_fields / sizeof *bool_fields; f++) {
        bool *field;
        RESET();
        field = (bool *)((char *)&d + bool_fields[f]);
        *field = !*field;
        estimate_one(&d, &c);
    }
    for (int r = 0; r <= 4; r++) {
        RESET();
        d.rank = r;
        estimate_one(&d, &c);
    }
    RESET();
    c.has_input = false;
    estimate_one(&d, &c);
    RESET();
    c.has_output = false;
    estimate_one(&d, &c);
    RESET();
    c.has_second = !c.has_second;
    estimate_one(&d, &c);
    for (int how = 0; how < 6; how++) {
        ts_shape *shapes[] = {
            &c.input, &c.output, &c.key, &c.value, &c.second};
        for (int k = 0; k < 5; k++) {
            RESET();
            edit_shape(shapes[k], how);
            estimate_one(&d, &c);
        }
    }
#undef RESET
}

static ts_module_estimates
estimate(const ts_module_desc *d, const ts_module_call *c)
{
    ts_module_estimates est;
    sweep(d, c);
    memset(&est, 0xA5, sizeof est); /* the engine must overwrite all */
    CHECK_EQ_INT(ts_module_estimate(d, c, &est), TS_OK);
    return est;
}

static ts_module_desc
conv_desc(ts_module_kind kind,
          int rank,
          int64_t cin,
          int64_t cout,
          int64_t groups,
          const int64_t *k)
{
    ts_module_desc d = desc_of(kind);
    d.rank = rank;
    d.in_channels = cin;
    d.out_channels = cout;
    d.groups = groups;
    d.has_weight = true;
    d.has_bias = true;
    for (int i = 0; i < rank; i++) {
        d.kernel[i] = k[i];
        d.stride[i] = 1;
        d.dilation[i] = 1;
    }
    return d;
}

static ts_module_desc
pool_desc(ts_module_kind kind, int rank, int64_t k)
{
    ts_module_desc d = desc_of(kind);
    d.rank = rank;
    d.kernel_is_int = true;
    d.has_dilation = kind == TS_MOD_MAXPOOL;
    for (int i = 0; i < rank; i++) {
        d.kernel[i] = k;
        d.stride[i] = k;
        d.dilation[i] = kind == TS_MOD_MAXPOOL ? 1 : 0;
    }
    return d;
}

/* ---- checks ------------------------------------------------------------ */

#define CHECK_COUNT(est, expected)                 \
    do {                                           \
        CHECK_EQ_INT((est).kind, TS_EST_COMPLETE); \
        CHECK(!(est).value.is_real);               \
        CHECK_EQ_INT((est).value.i, (expected));   \
    } while (0)

#define CHECK_COUNTS(est, fl, mc, dm) \
    do {                              \
        CHECK_COUNT((est).flops, fl); \
        CHECK_COUNT((est).macs, mc);  \
        CHECK_COUNT((est).dmas, dm);  \
    } while (0)

#define CHECK_RF(est, r, s, p)         \
    do {                               \
        CHECK_COUNT((est).rf, r);      \
        CHECK_COUNT((est).stride, s);  \
        CHECK_COUNT((est).padding, p); \
    } while (0)

#define CHECK_ERROR(est, prefix)                                    \
    do {                                                            \
        CHECK_EQ_INT((est).kind, TS_EST_ERROR);                     \
        CHECK(strncmp((est).message, prefix, strlen(prefix)) == 0); \
    } while (0)

/* The counts fail; a trio that has no window stays not applicable. */
#define CHECK_COUNTS_ERROR_NA(est, prefix)                       \
    do {                                                         \
        CHECK_ERROR((est).flops, prefix);                        \
        CHECK_ERROR((est).macs, prefix);                         \
        CHECK_ERROR((est).dmas, prefix);                         \
        CHECK_EQ_INT((est).rf.kind, TS_EST_NOT_APPLICABLE);      \
        CHECK_EQ_INT((est).stride.kind, TS_EST_NOT_APPLICABLE);  \
        CHECK_EQ_INT((est).padding.kind, TS_EST_NOT_APPLICABLE); \
    } while (0)

#define CHECK_ALL_ERROR(est, prefix)        \
    do {                                    \
        CHECK_ERROR((est).flops, prefix);   \
        CHECK_ERROR((est).macs, prefix);    \
        CHECK_ERROR((est).dmas, prefix);    \
        CHECK_ERROR((est).rf, prefix);      \
        CHECK_ERROR((est).stride, prefix);  \
        CHECK_ERROR((est).padding, prefix); \
    } while (0)

#define CHECK_UNSUPPORTED(est, msg)                   \
    do {                                              \
        CHECK_EQ_INT((est).kind, TS_EST_UNSUPPORTED); \
        CHECK_EQ_INT((est).value.i, 0);               \
        CHECK_EQ_STR((est).message, msg);             \
    } while (0)

/* ---- Identity, Flatten ------------------------------------------------- */

static void
test_identity_flatten(void)
{
    /* (2,3,4): N = 24. Identity reads N; Flatten reads and writes 2N = 48. */
    ts_module_desc d = desc_of(TS_MOD_IDENTITY);
    ts_module_call c = call_of("Identity", SHAPE(2, 3, 4), SHAPE(2, 3, 4));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 24);
    CHECK_RF(est, 1, 1, 0);

    d = desc_of(TS_MOD_FLATTEN);
    c = call_of("Flatten", SHAPE(2, 3, 4), SHAPE(2, 12));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 48);
    CHECK_RF(est, 1, 1, 0);
}

/* ---- Linear ------------------------------------------------------------ */

static void
test_linear(void)
{
    /* Linear(4, 2) on (2,4) -> (2,2): O = 4, P = 4*2 + 2 = 10.
     * FLOPs = O*(2*4 - 1) + O*1 = 28 + 4 = 32; MACs = 4*4 = 16;
     * DMAs = N + P + O = 8 + 10 + 4 = 22. */
    ts_module_desc d = desc_of(TS_MOD_LINEAR);
    d.in_features = 4;
    d.out_features = 2;
    d.has_weight = d.has_bias = true;
    d.param_numel = 10;
    ts_module_call c = call_of("Linear", SHAPE(2, 4), SHAPE(2, 2));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 32, 16, 22);
    CHECK_RF(est, 1, 1, 0);

    /* Linear(3, 5, bias=False) on (2,7,3) -> (2,7,5): N = 42, O = 70,
     * P = 15. FLOPs = 70*(6 - 1) = 350; MACs = 3*70 = 210;
     * DMAs = 42 + 15 + 70 = 127. */
    d.in_features = 3;
    d.out_features = 5;
    d.has_bias = false;
    d.param_numel = 15;
    c = call_of("Linear", SHAPE(2, 7, 3), SHAPE(2, 7, 5));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 350, 210, 127);

    /* Linear(0, 3) on (2,0) -> (2,3): the dot product is empty, max(0, -1)
     * = 0, only the bias adds remain: FLOPs = 6; MACs = 0; P = 3;
     * DMAs = 0 + 3 + 6 = 9. */
    d.in_features = 0;
    d.out_features = 3;
    d.has_bias = true;
    d.param_numel = 3;
    c = call_of("Linear", SHAPE(2, 0), SHAPE(2, 3));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 6, 0, 9);

    /* in_features -1 (no nn.Linear has it) on (2,4) -> (2,2): MACs would be
     * -1*4 = -4 (a count before, as the near-miss sweep found); refused */
    d.in_features = -1;
    d.out_features = 2;
    d.param_numel = 10;
    c = call_of("Linear", SHAPE(2, 4), SHAPE(2, 2));
    est = estimate(&d, &c);
    CHECK_EQ_INT(est.macs.kind, TS_EST_ERROR);
    CHECK(strstr(est.macs.message, "MACs of Linear come out negative (-4)")
          != NULL);
}

/* ---- activations ------------------------------------------------------- */

static void
check_activation(ts_module_kind kind,
                 const char *name,
                 bool inplace,
                 int64_t flops,
                 int64_t dmas)
{
    ts_module_desc d = desc_of(kind);
    d.inplace = inplace;
    ts_module_call c = call_of(name, SHAPE(2, 4), SHAPE(2, 4));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, flops, 0, dmas);
    CHECK_RF(est, 1, 1, 0);
}

static void
test_activations(void)
{
    /* (2,4): N = O = 8.
     * ReLU: N = 8; DMAs N + O = 16 (in place: 8).
     * ELU: 6N = 48; DMAs N + 1 + O = 17 (in place: 9).
     * LeakyReLU: 4N = 32; DMAs 17 (in place: 9).
     * ReLU6: 2N = 16; DMAs 16.
     * Tanh: 6N = 48; DMAs 2N + O = 24.
     * Sigmoid: 4N = 32; DMAs N + O = 16. */
    check_activation(TS_MOD_RELU, "ReLU", false, 8, 16);
    check_activation(TS_MOD_RELU, "ReLU", true, 8, 8);
    check_activation(TS_MOD_ELU, "ELU", false, 48, 17);
    check_activation(TS_MOD_ELU, "ELU", true, 48, 9);
    check_activation(TS_MOD_LEAKYRELU, "LeakyReLU", false, 32, 17);
    check_activation(TS_MOD_LEAKYRELU, "LeakyReLU", true, 32, 9);
    check_activation(TS_MOD_RELU6, "ReLU6", false, 16, 16);
    check_activation(TS_MOD_RELU6, "ReLU6", true, 16, 8);
    check_activation(TS_MOD_TANH, "Tanh", false, 48, 24);
    check_activation(TS_MOD_SIGMOID, "Sigmoid", false, 32, 16);
}

/* ---- Conv -------------------------------------------------------------- */

static void
test_conv(void)
{
    /* Contract pin: Conv2d(3, 8, 3) on (1,3,32,32) -> (1,8,30,30).
     * O = 8*900 = 7200; terms = (3/1)*9 = 27; P = 8*3*9 + 8 = 224.
     * FLOPs = 7200*(2*27 - 1 + 1) = 388,800; MACs = 7200*27 = 194,400;
     * DMAs = 3*9*7200/1 + 224 + 7200 = 194,400 + 7424 = 201,824. */
    ts_module_desc d = conv_desc(TS_MOD_CONV, 2, 3, 8, 1, DIMS_(3, 3));
    d.param_numel = 224;
    ts_module_call c =
        call_of("Conv2d", SHAPE(1, 3, 32, 32), SHAPE(1, 8, 30, 30));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 388800, 194400, 201824);
    CHECK_RF(est, 3, 1, 0);

    /* Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2,
     * bias=False) on (2,4,10) -> (2,6,4): O = 48; terms = (4/2)*3 = 6;
     * P = 6*2*3 = 36. FLOPs = 48*(12 - 1) = 528; MACs = 48*6 = 288;
     * DMAs = 4*3*48/2 + 36 + 48 = 288 + 84 = 372.
     * rf: 2*(3 - 1) + 1 = 5, stride 2, padding 1. */
    d = conv_desc(TS_MOD_CONV, 1, 4, 6, 2, DIMS_(3));
    d.has_bias = false;
    d.stride[0] = 2;
    d.padding[0] = 1;
    d.dilation[0] = 2;
    d.param_numel = 36;
    c = call_of("Conv1d", SHAPE(2, 4, 10), SHAPE(2, 6, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 528, 288, 372);
    CHECK_RF(est, 5, 2, 1);

    /* Conv3d(2, 4, (1,2,3)) on (1,2,3,4,5) -> (1,4,3,3,3): O = 108;
     * terms = 2*6 = 12; P = 4*2*6 + 4 = 52. FLOPs = 108*(24 - 1 + 1) =
     * 2592; MACs = 108*12 = 1296; DMAs = 2*6*108 + 52 + 108 = 1456.
     * rf uses the first spatial axis only: (1, 1, 0). */
    d = conv_desc(TS_MOD_CONV, 3, 2, 4, 1, DIMS_(1, 2, 3));
    d.param_numel = 52;
    c = call_of("Conv3d", SHAPE(1, 2, 3, 4, 5), SHAPE(1, 4, 3, 3, 3));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 2592, 1296, 1456);
    CHECK_RF(est, 1, 1, 0);

    /* Empty batch: (0,3,32,32) -> (0,8,30,30): O = 0, so FLOPs = MACs =
     * 0; DMAs still read the parameters once: 0 + 224 + 0 = 224. */
    d = conv_desc(TS_MOD_CONV, 2, 3, 8, 1, DIMS_(3, 3));
    d.param_numel = 224;
    c = call_of("Conv2d", SHAPE(0, 3, 32, 32), SHAPE(0, 8, 30, 30));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 224);

    /* Depthwise Conv2d(4096, 4096, 3, padding=1, groups=4096) on
     * (2^19,4096,512,512): O = 2^19*2^12*2^18 = 2^49, Cin*K*O = 9*2^61
     * passes int64 but the DMAs do not: (4096/4096)*9*2^49 + P + O with
     * P = 4096*9 + 4096 = 40,960 gives 10*2^49 + 40,960. */
    d = conv_desc(TS_MOD_CONV, 2, 4096, 4096, 4096, DIMS_(3, 3));
    d.padding[0] = d.padding[1] = 1;
    d.param_numel = 40960;
    c = call_of("Conv2d",
                SHAPE(INT64_C(1) << 19, 4096, 512, 512),
                SHAPE(INT64_C(1) << 19, 4096, 512, 512));
    est = estimate(&d, &c);
    CHECK_COUNT(est.dmas, 10 * (INT64_C(1) << 49) + 40960);

    /* Channels that groups do not divide (a mutated module) keep the
     * reference's floor of the whole product: Cin = 5, groups = 2, K = 3,
     * O = 2*4*4 = 32: floor(5*3*32/2) = 240 = 2*3*32 + floor(1*3*32/2). */
    d = conv_desc(TS_MOD_CONV, 1, 5, 4, 2, DIMS_(3));
    d.param_numel = 0;
    c = call_of("Conv1d", SHAPE(2, 5, 6), SHAPE(2, 4, 4));
    est = estimate(&d, &c);
    CHECK_COUNT(est.dmas, 240 + 0 + 32);

    /* A mutated Conv2d (in_channels 1, groups 4, kernel 3x3) on an output
     * of O = 2^60 elements: 9*2^60 passes int64, the window
     * floor(1*9*2^60/4) = 9*2^58 does not; P = 0: 9*2^58 + 2^60. */
    d = conv_desc(TS_MOD_CONV, 2, 1, 4, 4, DIMS_(3, 3));
    d.param_numel = 0;
    c = call_of("Conv2d",
                SHAPE(INT64_C(1) << 40, 1, 4, 4),
                SHAPE(INT64_C(1) << 40, 4, 1 << 9, 1 << 9));
    est = estimate(&d, &c);
    CHECK_COUNT(est.dmas, 9 * (INT64_C(1) << 58) + (INT64_C(1) << 60));

    /* groups = 0 cannot come from PyTorch; it must not divide by zero. */
    d.groups = 0;
    c = call_of("Conv2d", SHAPE(1, 3, 32, 32), SHAPE(1, 8, 30, 30));
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "ValueError: ");
    CHECK_ERROR(est.macs, "ValueError: ");
    CHECK_ERROR(est.dmas, "ValueError: ");
    CHECK_RF(est, 3, 1, 0);

    /* A spatial rank outside 1..3 is a binding error, reported per call. */
    d = conv_desc(TS_MOD_CONV, 2, 3, 8, 1, DIMS_(3, 3));
    d.rank = 0;
    est = estimate(&d, &c);
    CHECK_ALL_ERROR(est, "ValueError: spatial rank");
}

static void
test_convtranspose(void)
{
    /* ConvTranspose2d(3, 1, 2, stride=2) on (1,3,2,2) -> (1,1,4,4):
     * N = 12, O = 16, P = 3*1*4 + 1 = 13.
     * FLOPs (dense scatter) = 2*12*(1/1)*4 + 16*1 = 96 + 16 = 112;
     * MACs = 12*1*4 = 48;
     * DMAs = 5*2 + 3*4*16/1 + 13 + 16 = 10 + 192 + 29 = 231.
     * rf = (-2, 1/2, 0). */
    ts_module_desc d =
        conv_desc(TS_MOD_CONVTRANSPOSE, 2, 3, 1, 1, DIMS_(2, 2));
    d.stride[0] = d.stride[1] = 2;
    d.param_numel = 13;
    ts_module_call c =
        call_of("ConvTranspose2d", SHAPE(1, 3, 2, 2), SHAPE(1, 1, 4, 4));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 112, 48, 231);
    CHECK_COUNT(est.rf, -2);
    CHECK_EQ_INT(est.stride.kind, TS_EST_COMPLETE);
    CHECK(est.stride.value.is_real);
    CHECK_EQ_REAL(est.stride.value.r, 0.5);
    CHECK_COUNT(est.padding, 0);

    /* ConvTranspose1d(4, 6, 3, stride=3, groups=2, bias=False) on (1,4,5)
     * -> (1,6,15): N = 20, O = 90, Cout/groups = 3, P = 4*3*3 = 36.
     * FLOPs = 2*20*3*3 = 360; MACs = 20*3*3 = 180;
     * DMAs = 5*1 + 4*3*90/2 + 36 + 90 = 5 + 540 + 126 = 671.
     * rf = (-3, 1/3, 0). */
    d = conv_desc(TS_MOD_CONVTRANSPOSE, 1, 4, 6, 2, DIMS_(3));
    d.has_bias = false;
    d.stride[0] = 3;
    d.param_numel = 36;
    c = call_of("ConvTranspose1d", SHAPE(1, 4, 5), SHAPE(1, 6, 15));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 360, 180, 671);
    CHECK_COUNT(est.rf, -3);
    CHECK(est.stride.value.is_real);
    CHECK_EQ_REAL(est.stride.value.r, 1.0 / 3.0);

    /* Stride 1: 1/1 is integral and stays an integer. */
    d.stride[0] = 1;
    c = call_of("ConvTranspose1d", SHAPE(1, 4, 5), SHAPE(1, 6, 7));
    est = estimate(&d, &c);
    CHECK_RF(est, -3, 1, 0);
}

/* ---- BatchNorm --------------------------------------------------------- */

static ts_module_desc
bn_desc(int64_t c)
{
    ts_module_desc d = desc_of(TS_MOD_BATCHNORM);
    d.num_features = c;
    d.has_weight = d.has_bias = true;
    d.track_running_stats = true;
    d.has_running_mean = d.has_running_var = true;
    return d;
}

static void
test_batchnorm(void)
{
    /* BatchNorm2d(2), eval, affine, on (1,2,3,3): N = 18, C = 2, A = 2.
     * FLOPs = 2N + 2C + AN = 36 + 4 + 36 = 76; MACs = N*(1+1) = 36;
     * DMAs = N + 1 (eps) + 2C (running) + 2C (affine) + 1 (momentum) + O
     * = 18 + 1 + 4 + 4 + 1 + 18 = 46. */
    ts_module_desc d = bn_desc(2);
    ts_module_call c =
        call_of("BatchNorm2d", SHAPE(1, 2, 3, 3), SHAPE(1, 2, 3, 3));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 76, 36, 46);
    CHECK_RF(est, 1, 1, 0);

    /* Training with tracked statistics: batch statistics add 4N = 72 and
     * the running updates C*(3 + 5) = 16: FLOPs = 76 + 72 + 16 = 164.
     * MACs: M = 1*9 elements per channel: 36 + 2*(9-1) + 2*(18-1) + 4*2
     * = 36 + 16 + 34 + 8 = 94. DMAs add the update 1 + 2C = 5: 51. */
    d.training = true;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 164, 94, 51);

    /* Eval without running statistics (track_running_stats=False) and
     * without affine: batch statistics are used, A = 0.
     * FLOPs = 36 + 4 + 0 + 72 = 112; MACs = 18;
     * DMAs = 18 + 1 + 0 + 0 + 1 + 18 = 38; momentum=None drops 1: 37. */
    d = bn_desc(2);
    d.has_weight = d.has_bias = false;
    d.track_running_stats = false;
    d.has_running_mean = d.has_running_var = false;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 112, 18, 38);
    d.momentum_is_none = true;
    est = estimate(&d, &c);
    CHECK_COUNT(est.dmas, 37);

    /* Peer comparison D: BatchNorm2d(64) eval on (1,64,112,112):
     * N = 802,816: 4N + 2*64 = 3,211,264 + 128 = 3,211,392. */
    d = bn_desc(64);
    c = call_of("BatchNorm2d", SHAPE(1, 64, 112, 112), SHAPE(1, 64, 112, 112));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 3211392);

    /* Empty batch: FLOPs and MACs 0; DMAs keep the constant reads:
     * 0 + 1 + 4 + 4 + 1 + 0 = 10. */
    d = bn_desc(2);
    c = call_of("BatchNorm2d", SHAPE(0, 2, 3, 3), SHAPE(0, 2, 3, 3));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 10);
}

/* ---- pooling ----------------------------------------------------------- */

struct pool_case {
    int rank;
    ts_shape in, out;
    int64_t visits, outputs;
};

static void
test_fixed_pooling(void)
{
    /* Contract pooling table, fixed rows: kernel 2 on 2 channels of side
     * 8; visits = O*K.
     * rank 1: (1,2,8) -> (1,2,4): O = 8, K = 2, visits 16.
     * rank 2: (1,2,8,8) -> (1,2,4,4): O = 32, K = 4, visits 128.
     * rank 3: (1,2,8,8,8) -> (1,2,4,4,4): O = 128, K = 8, visits 1024.
     * Max: FLOPs = MACs = visits - O; DMAs = visits + O.
     * Avg: FLOPs = visits; MACs = visits + O*(rank-1); DMAs = visits + O. */
    const struct pool_case cases[] = {
        {1, SHAPE(1, 2, 8), SHAPE(1, 2, 4), 16, 8},
        {2, SHAPE(1, 2, 8, 8), SHAPE(1, 2, 4, 4), 128, 32},
        {3, SHAPE(1, 2, 8, 8, 8), SHAPE(1, 2, 4, 4, 4), 1024, 128},
    };
    /* hand values: max (8, 24), (96, 160), (896, 1152);
     * avg MACs 16, 128 + 32 = 160, 1024 + 256 = 1280 */
    const int64_t max_flops[] = {8, 96, 896};
    const int64_t dmas[] = {24, 160, 1152};
    const int64_t avg_macs[] = {16, 160, 1280};
    for (int i = 0; i < 3; i++) {
        const struct pool_case *pc = &cases[i];
        CHECK_EQ_INT(pc->visits - pc->outputs, max_flops[i]);
        ts_module_desc d = pool_desc(TS_MOD_MAXPOOL, pc->rank, 2);
        ts_module_call c = call_of("MaxPoolNd", pc->in, pc->out);
        ts_module_estimates est = estimate(&d, &c);
        CHECK_COUNTS(est, max_flops[i], max_flops[i], dmas[i]);
        CHECK_RF(est, 2, 2, 0);

        d = pool_desc(TS_MOD_AVGPOOL, pc->rank, 2);
        c = call_of("AvgPoolNd", pc->in, pc->out);
        est = estimate(&d, &c);
        CHECK_COUNTS(est, pc->visits, avg_macs[i], dmas[i]);
        CHECK_RF(est, 2, 2, 0);
    }

    /* Contract pin: unbatched MaxPool2d((2,), return_indices=True) on
     * (2,4,4) -> (2,2,2). PyTorch expands the 1-tuple to (2,2): K = 4,
     * O = 8. FLOPs = MACs = 8*3 = 24; DMAs = 8*(4 + 1 + 1) = 48. */
    ts_module_desc d = pool_desc(TS_MOD_MAXPOOL, 2, 2);
    d.kernel_is_int = false;
    d.return_indices = true;
    ts_module_call c = call_of("MaxPool2d", SHAPE(2, 4, 4), SHAPE(2, 2, 2));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 24, 24, 48);

    /* An int kernel stands for k^rank even if only kernel[0] is filled. */
    d.kernel_is_int = true;
    d.kernel[1] = 0;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 24, 24, 48);

    /* MaxPool2d(3, stride=2, padding=1, dilation=2) on (1,1,9,9) ->
     * (1,1,4,4): O = 16, K = 9. FLOPs = 16*8 = 128; DMAs = 16*10 = 160.
     * rf = 2*(3-1) + 1 = 5, stride 2, padding 1. */
    d = pool_desc(TS_MOD_MAXPOOL, 2, 3);
    d.stride[0] = d.stride[1] = 2;
    d.padding[0] = d.padding[1] = 1;
    d.dilation[0] = d.dilation[1] = 2;
    c = call_of("MaxPool2d", SHAPE(1, 1, 9, 9), SHAPE(1, 1, 4, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 128, 128, 160);
    CHECK_RF(est, 5, 2, 1);

    /* AvgPool2d(3, stride=2, padding=1) on (1,1,9,9) -> (1,1,5,5): O = 25,
     * K = 9. FLOPs = 225; MACs = 25*(8 + 2) = 250; DMAs = 25*10 = 250.
     * No dilation attribute: rf = (3, 2, 1). */
    d = pool_desc(TS_MOD_AVGPOOL, 2, 3);
    d.stride[0] = d.stride[1] = 2;
    d.padding[0] = d.padding[1] = 1;
    c = call_of("AvgPool2d", SHAPE(1, 1, 9, 9), SHAPE(1, 1, 5, 5));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 225, 250, 250);
    CHECK_RF(est, 3, 2, 1);
}

static void
test_adaptive_pooling(void)
{
    /* Contract pooling table, adaptive rows. Per axis visits are
     * L + O - gcd(L, O): 5->3: 7; 7->2: 8; 4->3: 6; times 2 channels.
     * rank 1: (1,2,5) -> (1,2,3): visits 2*7 = 14, O = 6.
     * rank 2: (1,2,5,7) -> (1,2,3,2): visits 2*7*8 = 112, O = 12.
     * rank 3: (1,2,5,7,4) -> (1,2,3,2,3): visits 2*7*8*6 = 672, O = 36.
     * Max: FLOPs = MACs = visits - O = 8, 100, 636;
     *      DMAs = visits + O = 20, 124, 708 (+O with indices).
     * Avg: FLOPs = visits; MACs = visits + O*(rank-1) = 14, 124, 744. */
    const struct pool_case cases[] = {
        {1, SHAPE(1, 2, 5), SHAPE(1, 2, 3), 14, 6},
        {2, SHAPE(1, 2, 5, 7), SHAPE(1, 2, 3, 2), 112, 12},
        {3, SHAPE(1, 2, 5, 7, 4), SHAPE(1, 2, 3, 2, 3), 672, 36},
    };
    const int64_t max_flops[] = {8, 100, 636};
    const int64_t dmas[] = {20, 124, 708};
    const int64_t avg_macs[] = {14, 124, 744};
    /* legacy rf on the last axis: s = ceil(L/O), k = s, p = (L - k*s)/2:
     * 5->3: s = 2, p = (5-4)/2 = 0.5; 7->2: s = 4, p = (7-16)/2 = -4.5;
     * 4->3: s = 2, p = 0 */
    const int64_t rf_s[] = {2, 4, 2};
    const double rf_p[] = {0.5, -4.5, 0.0};
    for (int i = 0; i < 3; i++) {
        const struct pool_case *pc = &cases[i];
        ts_module_desc d = desc_of(TS_MOD_ADAPTIVE_MAXPOOL);
        d.rank = pc->rank;
        ts_module_call c = call_of("AdaptiveMaxPoolNd", pc->in, pc->out);
        ts_module_estimates est = estimate(&d, &c);
        CHECK_EQ_INT(pc->visits - pc->outputs, max_flops[i]);
        CHECK_COUNTS(est, max_flops[i], max_flops[i], dmas[i]);
        CHECK_COUNT(est.rf, rf_s[i]);
        CHECK_COUNT(est.stride, rf_s[i]);
        if (i == 2) {
            CHECK_COUNT(est.padding, 0);
        }
        else {
            CHECK(est.padding.value.is_real);
            CHECK_EQ_REAL(est.padding.value.r, rf_p[i]);
        }

        d.return_indices = true;
        est = estimate(&d, &c);
        CHECK_COUNT(est.dmas, dmas[i] + pc->outputs);

        d = desc_of(TS_MOD_ADAPTIVE_AVGPOOL);
        d.rank = pc->rank;
        c = call_of("AdaptiveAvgPoolNd", pc->in, pc->out);
        est = estimate(&d, &c);
        CHECK_COUNTS(est, pc->visits, avg_macs[i], dmas[i]);
    }

    /* Global average pooling AdaptiveAvgPool2d(1) on (1,3,4,6): every
     * element is visited once (4 + 1 - 1 = 4, 6 + 1 - 1 = 6): visits = 72
     * = N; MACs = 72 + 3*1 = 75; DMAs = 75. rf: s = k = 6,
     * p = (6 - 36)/2 = -15 (integral, so an integer). */
    ts_module_desc d = desc_of(TS_MOD_ADAPTIVE_AVGPOOL);
    d.rank = 2;
    ts_module_call c =
        call_of("AdaptiveAvgPool2d", SHAPE(1, 3, 4, 6), SHAPE(1, 3, 1, 1));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 72, 75, 75);
    CHECK_RF(est, 6, 6, -15);

    /* Unbatched (C, L): the spatial axis is the last one. (2,5) -> (2,3):
     * visits 2*7 = 14 as in the batched rank-1 row. */
    d.rank = 1;
    c = call_of("AdaptiveAvgPool1d", SHAPE(2, 5), SHAPE(2, 3));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 14);

    /* Upsampling through adaptive pooling, 2 -> 3: windows [0,1), [0,2),
     * [1,2): 4 visits = 2 + 3 - 1. */
    c = call_of("AdaptiveAvgPool1d", SHAPE(1, 1, 2), SHAPE(1, 1, 3));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 4);

    /* Empty output axis: the legacy rf divides by it. */
    c = call_of("AdaptiveAvgPool1d", SHAPE(1, 1, 2), SHAPE(1, 1, 0));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 0);
    CHECK_ERROR(est.rf, "ZeroDivisionError: ");
    CHECK_ERROR(est.padding, "ZeroDivisionError: ");

    /* Mismatched ranks cannot be pooled. */
    c = call_of("AdaptiveAvgPool1d", SHAPE(1, 1, 2), SHAPE(1, 2));
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "ValueError: ");
}

/* ---- Dropout ----------------------------------------------------------- */

static void
test_dropout(void)
{
    /* (2,4): N = O = 8. Eval: FLOPs 0 (contract; v0.2 counted N);
     * DMAs = N + 1 + O = 17. */
    ts_module_desc d = desc_of(TS_MOD_DROPOUT);
    d.p = 0.5;
    ts_module_call c = call_of("Dropout", SHAPE(2, 4), SHAPE(2, 4));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 17);
    CHECK_RF(est, 1, 1, 0);

    /* Training: 0 < p < 1 -> 2N = 16; p = 1 -> N = 8; p = 0 -> 0. */
    d.training = true;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 16);
    d.p = 1.0;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 8);
    d.p = 0.0;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 0);

    /* In place: no output write, DMAs = 8 + 1 = 9. */
    d.inplace = true;
    est = estimate(&d, &c);
    CHECK_COUNT(est.dmas, 9);
}

/* ---- LayerNorm --------------------------------------------------------- */

static void
test_layernorm(void)
{
    /* LayerNorm(4) on (2,4): N = 8, R = 8/4 = 2, A = 2, P = 8.
     * FLOPs = 6N + 2R + AN = 48 + 4 + 16 = 68; MACs = N*(1+1) = 16;
     * DMAs = 4N + 5R + 1 + P + 2N = 32 + 10 + 1 + 8 + 16 = 67. */
    ts_module_desc d = desc_of(TS_MOD_LAYERNORM);
    d.normalized_numel = 4;
    d.normalized_ndim = 1;
    d.has_weight = d.has_bias = true;
    d.param_numel = 8;
    ts_module_call c = call_of("LayerNorm", SHAPE(2, 4), SHAPE(2, 4));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 68, 16, 67);
    /* v0.2's module_rf did not list LayerNorm (unsupported, with a
     * diagnostic); like GroupNorm and RMSNorm it has no grid window: the
     * trio is not applicable, without a diagnostic. */
    CHECK_EQ_INT(est.rf.kind, TS_EST_NOT_APPLICABLE);
    CHECK_EQ_INT(est.stride.kind, TS_EST_NOT_APPLICABLE);
    CHECK_EQ_INT(est.padding.kind, TS_EST_NOT_APPLICABLE);

    /* LayerNorm((3,4), bias=False) on (2,3,4): N = 24, R = 2, A = 1,
     * P = 12. FLOPs = 144 + 4 + 24 = 172; MACs = 48;
     * DMAs = 96 + 10 + 1 + 12 + 48 = 167. */
    d.normalized_numel = 12;
    d.normalized_ndim = 2;
    d.has_bias = false;
    d.param_numel = 12;
    c = call_of("LayerNorm", SHAPE(2, 3, 4), SHAPE(2, 3, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 172, 48, 167);

    /* elementwise_affine=False: A = 0, P = 0. FLOPs = 144 + 4 = 148;
     * MACs = 24; DMAs = 96 + 10 + 1 = 107. */
    d.has_weight = false;
    d.param_numel = 0;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 148, 24, 107);

    /* Empty batch (0,3,4): R = 0; FLOPs = MACs = 0; DMAs = 1. */
    c = call_of("LayerNorm", SHAPE(0, 3, 4), SHAPE(0, 3, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 1);

    /* normalized_shape with no elements: rows are empty, refused. */
    d.normalized_numel = 0;
    c = call_of("LayerNorm", SHAPE(2, 0), SHAPE(2, 0));
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "NotImplementedError: ");
    CHECK_COUNT(est.macs, 0);
    CHECK_ERROR(est.dmas, "NotImplementedError: ");
}

/* ---- MultiheadAttention ------------------------------------------------ */

static ts_module_desc
mha_desc(int64_t e, int64_t h, int64_t params)
{
    ts_module_desc d = desc_of(TS_MOD_MHA);
    d.embed_dim = e;
    d.num_heads = h;
    d.kdim = d.vdim = e;
    d.has_in_proj_bias = d.has_out_proj_bias = true;
    d.param_numel = params;
    return d;
}

static ts_module_call
mha_call(ts_shape q, ts_shape k, ts_shape v, ts_shape out)
{
    ts_module_call c = call_of("MultiheadAttention", q, out);
    c.key = k;
    c.value = v;
    return c;
}

static void
test_mha(void)
{
    /* Self-attention, E = 4, H = 2 (D = 2), B = 1, T = S = 3, seq-first
     * (3,1,4). P = 3*16 + 12 + 16 + 4 = 80.
     * FLOPs: projections 3 * (3*4*(2*4 - 1 + 1)) = 3*96 = 288;
     *   rows BHT = 6, scores A = BHTS = 18;
     *   query scale BHTD = 12; QK^T A*(2D-1) = 54; softmax BHT(5S-2) =
     *   6*13 = 78; weights*V BHTD(2S-1) = 6*2*5 = 60;
     *   out_proj 3*4*(2*4 - 1 + 1) = 96. Total 588; averaged weights
     *   returned add A: 606. (v0.2 gave 577: softmax 3S-1 and a +1.)
     * MACs = 2BTE^2 + BSE(K+V) + 2BTSE = 96 + 96 + 72 = 264.
     * DMAs = I + P + 7Q + 4J + 10A + 4R with I = 36, Q = J = 12:
     *   36 + 80 + 84 + 48 + 180 + 24 = 452; averaged weights add
     *   A + BTS = 18 + 9: 479. */
    ts_module_desc d = mha_desc(4, 2, 80);
    ts_module_call c = mha_call(
        SHAPE(3, 1, 4), SHAPE(3, 1, 4), SHAPE(3, 1, 4), SHAPE(3, 1, 4));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 588, 264, 452);
    CHECK_EQ_INT(est.rf.kind, TS_EST_NOT_APPLICABLE);
    CHECK_EQ_INT(est.stride.kind, TS_EST_NOT_APPLICABLE);
    CHECK_EQ_INT(est.padding.kind, TS_EST_NOT_APPLICABLE);

    c.has_weights_output = true;
    c.weights_ndim = 3;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 606, 264, 479);

    /* Per-head weights (average_attn_weights=False, ndim 4) add nothing. */
    c.weights_ndim = 4;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 588, 264, 452);

    /* batch_first (1,3,4) gives the same numbers. */
    d.batch_first = true;
    c = mha_call(
        SHAPE(1, 3, 4), SHAPE(1, 3, 4), SHAPE(1, 3, 4), SHAPE(1, 3, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 588, 264, 452);

    /* Both masks: key_padding_mask (1,3) and attn_mask (3,3).
     * FLOPs + 2A = 588 + 36 = 624;
     * DMAs + (3 + 2A) + (9 + 2A) = 452 + 39 + 45 = 536. */
    c.has_key_padding_mask = true;
    c.key_padding_mask_numel = 3;
    c.has_attn_mask = true;
    c.attn_mask_numel = 9;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 624, 264, 536);

    /* Training with attention dropout 0.1: as nn.Dropout, 2A = 36 more
     * FLOPs: 588 + 36 = 624 (masks off). */
    c.has_key_padding_mask = c.has_attn_mask = false;
    d.training = true;
    d.attn_dropout = 0.1;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 624);
    d.training = false;

    /* Cross-attention T = 2, S = 3: q (2,1,4), k = v (3,1,4).
     * FLOPs: projections 2*4*8 + 2*(3*4*8) = 64 + 192 = 256; BHT = 4,
     *   A = 12; scale 8; QK^T 36; softmax 4*13 = 52; weights*V 4*2*5 =
     *   40; out_proj 2*4*8 = 64. Total 456.
     * MACs = 2*2*16 + 3*4*8 + 2*2*3*4 = 64 + 96 + 48 = 208.
     * DMAs = (8 + 12 + 12) + 80 + 7*8 + 4*12 + 10*12 + 4*4
     *   = 32 + 80 + 56 + 48 + 120 + 16 = 352. */
    d = mha_desc(4, 2, 80);
    c = mha_call(
        SHAPE(2, 1, 4), SHAPE(3, 1, 4), SHAPE(3, 1, 4), SHAPE(2, 1, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 456, 208, 352);

    /* kdim = 6, vdim = 5: k (3,1,6), v (3,1,5); P = 16 + 24 + 20 + 12 + 16
     * + 4 = 92. FLOPs: q 64, k 3*4*12 = 144, v 3*4*10 = 120, rest as
     * above 8 + 36 + 52 + 40 + 64 = 200: total 528.
     * MACs = 64 + 3*4*(6+5) + 48 = 64 + 132 + 48 = 244.
     * DMAs = (8 + 18 + 15) + 92 + 56 + 48 + 120 + 16 = 373. */
    d = mha_desc(4, 2, 92);
    d.kdim = 6;
    d.vdim = 5;
    c = mha_call(
        SHAPE(2, 1, 4), SHAPE(3, 1, 6), SHAPE(3, 1, 5), SHAPE(2, 1, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 528, 244, 373);

    /* Empty batch (3,0,4): FLOPs count 0; MACs and DMAs refuse empty
     * calls. */
    d = mha_desc(4, 2, 80);
    c = mha_call(
        SHAPE(3, 0, 4), SHAPE(3, 0, 4), SHAPE(3, 0, 4), SHAPE(3, 0, 4));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 0);
    CHECK_ERROR(est.macs, "NotImplementedError: ");
    CHECK_ERROR(est.dmas, "NotImplementedError: ");

    /* Empty source S = 0: q (3,2,4), k = v (0,2,4). The rows exist but
     * are empty, so softmax and weights*V cost 0 (not 5S-2 and 2S-1 < 0):
     * q_proj 6*4*8 = 192, scale 12*2 = 24, out_proj 192: 408. */
    c = mha_call(
        SHAPE(3, 2, 4), SHAPE(0, 2, 4), SHAPE(0, 2, 4), SHAPE(3, 2, 4));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 408);

    /* Unbatched (3,4) and add_bias_kv are not modelled. */
    c = mha_call(SHAPE(3, 4), SHAPE(3, 4), SHAPE(3, 4), SHAPE(3, 4));
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "NotImplementedError: ");
    CHECK_ERROR(est.macs, "NotImplementedError: ");
    CHECK_ERROR(est.dmas, "NotImplementedError: ");
    CHECK_EQ_INT(est.rf.kind, TS_EST_NOT_APPLICABLE);

    d.add_bias_kv = true;
    c = mha_call(
        SHAPE(3, 1, 4), SHAPE(3, 1, 4), SHAPE(3, 1, 4), SHAPE(3, 1, 4));
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "NotImplementedError: ");
    d.add_bias_kv = false;
    d.add_zero_attn = true;
    est = estimate(&d, &c);
    CHECK_ERROR(est.macs, "NotImplementedError: ");

    /* A complex key is refused like a complex query. */
    d.add_zero_attn = false;
    c.key.dtype = TS_DTYPE_COMPLEX;
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "NotImplementedError: ");
}

/* ---- newer pointwise activations (contract 2.1 pinned table) ----------- */

#define CHECK_NOT_APPLICABLE(est)                                \
    do {                                                         \
        CHECK_EQ_INT((est).rf.kind, TS_EST_NOT_APPLICABLE);      \
        CHECK_EQ_INT((est).stride.kind, TS_EST_NOT_APPLICABLE);  \
        CHECK_EQ_INT((est).padding.kind, TS_EST_NOT_APPLICABLE); \
    } while (0)

static void
test_newer_activations(void)
{
    /* Contract table on a (2,4) input: N = O = 8, DMAs N + O = 16 (PReLU
     * adds its single weight: 17). FLOPs = cost * N. Module FLOPs equal the
     * torchscan_flops_v1 operator FLOPs of the same call. */
    const struct {
        ts_module_kind kind;
        const char *name;
        int64_t flops, dmas;
    } rows[] = {
        {TS_MOD_HARDTANH, "Hardtanh", 16, 16},
        {TS_MOD_HARDSIGMOID, "Hardsigmoid", 32, 16},
        {TS_MOD_HARDSWISH, "Hardswish", 40, 16},
        {TS_MOD_MISH, "Mish", 80, 16},
        {TS_MOD_SOFTPLUS, "Softplus", 56, 16},
        {TS_MOD_CELU, "CELU", 56, 16},
        {TS_MOD_SELU, "SELU", 56, 16},
        {TS_MOD_LOGSIGMOID, "LogSigmoid", 56, 16},
        {TS_MOD_TANHSHRINK, "Tanhshrink", 56, 16},
        {TS_MOD_PRELU, "PReLU", 32, 17},
        {TS_MOD_HARDSHRINK, "Hardshrink", 24, 16},
        {TS_MOD_SOFTSIGN, "Softsign", 24, 16},
        {TS_MOD_SOFTSHRINK, "Softshrink", 40, 16},
        {TS_MOD_THRESHOLD, "Threshold", 16, 16},
        {TS_MOD_RRELU, "RReLU", 32, 16},
        /* GELU exact 5N, SiLU 5N */
        {TS_MOD_GELU, "GELU", 40, 16},
        {TS_MOD_SILU, "SiLU", 40, 16},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ts_module_desc d = desc_of(rows[i].kind);
        d.param_numel = rows[i].kind == TS_MOD_PRELU ? 1 : 0;
        ts_module_call c = call_of(rows[i].name, SHAPE(2, 4), SHAPE(2, 4));
        ts_module_estimates est = estimate(&d, &c);
        CHECK_COUNTS(est, rows[i].flops, 0, rows[i].dmas);
        CHECK_RF(est, 1, 1, 0);

        /* in place still writes (contract: N + O) */
        d.inplace = true;
        est = estimate(&d, &c);
        CHECK_COUNT(est.dmas, rows[i].dmas);

        /* a zero batch gives 0 everywhere, PReLU's weight reads too */
        c = call_of(rows[i].name, SHAPE(0, 4), SHAPE(0, 4));
        est = estimate(&d, &c);
        CHECK_COUNTS(est, 0, 0, 0);
    }

    /* PReLU(num_parameters=4) on (2,4,3): N = 24, FLOPs 96, DMAs 24 + 24 +
     * 4 = 52. */
    ts_module_desc d = desc_of(TS_MOD_PRELU);
    d.param_numel = 4;
    ts_module_call c = call_of("PReLU", SHAPE(2, 4, 3), SHAPE(2, 4, 3));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 96, 0, 52);

    /* GELU(approximate='tanh'): 14N = 112. */
    d = desc_of(TS_MOD_GELU);
    d.approximate_tanh = true;
    c = call_of("GELU", SHAPE(2, 4), SHAPE(2, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 112, 0, 16);

    /* RReLU in training samples slopes: refused, as by the operator
     * convention. */
    d = desc_of(TS_MOD_RRELU);
    d.training = true;
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "NotImplementedError: ");
    CHECK_COUNT(est.dmas, 16);

    /* GLU on (2,4) halving the last axis -> (2,2): O = 4, FLOPs 5*O = 20;
     * DMAs N + O = 12; the trio is not applicable. */
    d = desc_of(TS_MOD_GLU);
    c = call_of("GLU", SHAPE(2, 4), SHAPE(2, 2));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 20, 0, 12);
    CHECK_NOT_APPLICABLE(est);
}

/* ---- Softmax family ---------------------------------------------------- */

static void
test_softmax(void)
{
    /* (2,4) over dim -1: N = 8, R = 2.
     * Softmax 5N - 2R = 36, DMAs 8N + 4R = 72;
     * LogSoftmax 4N - R = 30, DMAs 8N + 6R = 76;
     * Softmin N + 5N - 2R = 44, DMAs 10N + 4R = 88. */
    const struct {
        ts_module_kind kind;
        const char *name;
        int64_t flops, dmas;
    } rows[] = {
        {TS_MOD_SOFTMAX, "Softmax", 36, 72},
        {TS_MOD_LOGSOFTMAX, "LogSoftmax", 30, 76},
        {TS_MOD_SOFTMIN, "Softmin", 44, 88},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ts_module_desc d = desc_of(rows[i].kind);
        d.dim = -1;
        ts_module_call c = call_of(rows[i].name, SHAPE(2, 4), SHAPE(2, 4));
        ts_module_estimates est = estimate(&d, &c);
        CHECK_COUNTS(est, rows[i].flops, 0, rows[i].dmas);
        CHECK_RF(est, 1, 1, 0);
        c = call_of(rows[i].name, SHAPE(0, 4), SHAPE(0, 4));
        est = estimate(&d, &c);
        CHECK_COUNTS(est, 0, 0, 0);
    }

    /* Softmax2d on (2,4,2,2): softmax over the 4 channels, N = 32, R = 8:
     * 5*32 - 16 = 144 (contract); DMAs 256 + 32 = 288. Unbatched (4,2,2):
     * R = 4: 80 - 8 = 72. A 5-D input is refused as PyTorch refuses it. */
    ts_module_desc d = desc_of(TS_MOD_SOFTMAX2D);
    ts_module_call c =
        call_of("Softmax2d", SHAPE(2, 4, 2, 2), SHAPE(2, 4, 2, 2));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 144, 0, 288);
    c = call_of("Softmax2d", SHAPE(4, 2, 2), SHAPE(4, 2, 2));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 72);
    c = call_of("Softmax2d", SHAPE(1, 2, 4, 2, 2), SHAPE(1, 2, 4, 2, 2));
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "ValueError: ");

    /* dim=None picks torch's legacy dim: 1 for 2-D (R = 2: 36), 0 for 3-D:
     * (2,3,4) over dim 0, R = 12: 5*24 - 24 = 96. */
    d = desc_of(TS_MOD_SOFTMAX);
    d.dim_is_none = true;
    c = call_of("Softmax", SHAPE(2, 4), SHAPE(2, 4));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 36);
    c = call_of("Softmax", SHAPE(2, 3, 4), SHAPE(2, 3, 4));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 96);

    /* Softmax(dim=1) on (2,3,4): R = 8: 120 - 16 = 104. */
    d.dim_is_none = false;
    d.dim = 1;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 104);

    /* A dim outside the tensor is PyTorch's IndexError. */
    d.dim = 3;
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "IndexError: ");
}

/* ---- GroupNorm, RMSNorm, InstanceNorm, LocalResponseNorm ---------------- */

static void
test_group_rms_norm(void)
{
    /* GroupNorm(2, 4) on (1,4,3): N = 12, B*groups = R = 2, A = 2, P = 8.
     * FLOPs (6 + 2)N + 2R = 96 + 4 = 100 (= native_group_norm);
     * MACs N(1 + W) = 24; DMAs 4N + 5R + 1 + P + 2N = 48 + 10 + 1 + 8 + 24
     * = 91. The trio is not applicable. */
    ts_module_desc d = desc_of(TS_MOD_GROUPNORM);
    d.num_groups = 2;
    d.has_weight = d.has_bias = true;
    d.param_numel = 8;
    ts_module_call c = call_of("GroupNorm", SHAPE(1, 4, 3), SHAPE(1, 4, 3));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 100, 24, 91);
    CHECK_NOT_APPLICABLE(est);

    /* affine=False: 6N + 2R = 76; MACs 12; DMAs 48 + 10 + 1 = 59. */
    d.has_weight = d.has_bias = false;
    d.param_numel = 0;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 76, 12, 59);

    /* Empty groups (a zero-length spatial axis with a batch) are refused;
     * an empty batch counts 0 FLOPs. */
    c = call_of("GroupNorm", SHAPE(1, 4, 0), SHAPE(1, 4, 0));
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "NotImplementedError: ");
    c = call_of("GroupNorm", SHAPE(0, 4, 3), SHAPE(0, 4, 3));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 0);

    /* RMSNorm(4) on (1,3,4): N = 12, R = 3, W = 1, P = 4.
     * FLOPs (3 + 1)N + 2R = 48 + 6 = 54 (= the decomposed operators);
     * MACs 24; DMAs 3N + 4R + 1 + (2N + P) = 36 + 12 + 1 + 28 = 77. */
    d = desc_of(TS_MOD_RMSNORM);
    d.has_weight = true;
    d.normalized_numel = 4;
    d.param_numel = 4;
    c = call_of("RMSNorm", SHAPE(1, 3, 4), SHAPE(1, 3, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 54, 24, 77);
    CHECK_NOT_APPLICABLE(est);

    /* elementwise_affine=False: 3N + 2R = 42; MACs 12; DMAs 49. */
    d.has_weight = false;
    d.param_numel = 0;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 42, 12, 49);

    d.normalized_numel = 0;
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "NotImplementedError: RMSNorm rows are empty");
}

static void
test_instance_lrn(void)
{
    /* InstanceNorm2d(4, affine=True) on (1,4,3,3): N = 36, instances R =
     * B*C = 4, A = 2, P = 8, instance statistics.
     * FLOPs as native_batch_norm over R channels: 2N + 2R + AN + 4N = 72 +
     * 8 + 72 + 144 = 296; MACs N(1 + W) = 72; DMAs (GroupNorm staging with
     * R instances) 4N + 5R + 1 + P + 2N = 144 + 20 + 1 + 8 + 72 = 245. */
    ts_module_desc d = desc_of(TS_MOD_INSTANCENORM);
    d.rank = 2;
    d.num_features = 4;
    d.has_weight = d.has_bias = true;
    d.param_numel = 8;
    ts_module_call c =
        call_of("InstanceNorm2d", SHAPE(1, 4, 3, 3), SHAPE(1, 4, 3, 3));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 296, 72, 245);
    CHECK_NOT_APPLICABLE(est);

    /* track_running_stats in eval normalizes with running statistics:
     * 2N + 2R + AN = 152; DMAs as BatchNorm eval over C = 4 channels:
     * N + 1 + 2C + 2C + [momentum] + O = 36 + 1 + 8 + 8 + 1 + 36 = 90. */
    d.track_running_stats = d.has_running_mean = d.has_running_var = true;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 152, 72, 90);

    /* InstanceNorm1d(4) unbatched on (4,5): R = 4, N = 20, no affine:
     * 2N + 2R + 4N = 40 + 8 + 80 = 128; MACs 20; DMAs 80 + 20 + 1 = 101. */
    d = desc_of(TS_MOD_INSTANCENORM);
    d.rank = 1;
    d.num_features = 4;
    c = call_of("InstanceNorm1d", SHAPE(4, 5), SHAPE(4, 5));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 128, 20, 101);
    c = call_of("InstanceNorm1d", SHAPE(0, 4, 5), SHAPE(0, 4, 5));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 0);

    /* LocalResponseNorm(2) on (1,4,3,3): N = 36. FLOPs (size + 5)N = 252
     * (square, window average of 2, scale, shift, power, divide); MACs
     * size*N = 72; DMAs (size + 1)N + O = 108 + 36 = 144; pointwise
     * spatially. */
    d = desc_of(TS_MOD_LOCAL_RESPONSE_NORM);
    d.size = 2;
    c = call_of("LocalResponseNorm", SHAPE(1, 4, 3, 3), SHAPE(1, 4, 3, 3));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 252, 72, 144);
    CHECK_RF(est, 1, 1, 0);
}

/* ---- layout modules, Upsample ------------------------------------------ */

static void
check_layout(ts_module_desc d,
             const char *name,
             ts_shape in,
             ts_shape out,
             int64_t dmas)
{
    ts_module_call c = call_of(name, in, out);
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, dmas);
    CHECK_NOT_APPLICABLE(est);
}

static void
test_layout(void)
{
    /* Embedding(10, 4) on indices (1,3) -> (1,3,4): N = 3, O = 12:
     * N + 2O = 27. */
    check_layout(desc_of(TS_MOD_EMBEDDING),
                 "Embedding",
                 SHAPE(1, 3),
                 SHAPE(1, 3, 4),
                 27);
    ts_module_desc d = desc_of(TS_MOD_EMBEDDING);
    d.refusal = "Embedding with max_norm renormalizes rows";
    ts_module_call c = call_of("Embedding", SHAPE(1, 3), SHAPE(1, 3, 4));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS_ERROR_NA(est, "NotImplementedError: Embedding with max_norm");

    /* Unflatten: a view, 0 DMAs. */
    check_layout(desc_of(TS_MOD_UNFLATTEN),
                 "Unflatten",
                 SHAPE(1, 4),
                 SHAPE(1, 2, 2),
                 0);
    /* PixelShuffle(2) (1,4,2,2) -> (1,1,4,4) and PixelUnshuffle back:
     * O = 16, 2O = 32. ChannelShuffle(2) on (1,4,2,2): 32. */
    check_layout(desc_of(TS_MOD_PIXEL_SHUFFLE),
                 "PixelShuffle",
                 SHAPE(1, 4, 2, 2),
                 SHAPE(1, 1, 4, 4),
                 32);
    check_layout(desc_of(TS_MOD_PIXEL_SHUFFLE),
                 "PixelUnshuffle",
                 SHAPE(1, 1, 4, 4),
                 SHAPE(1, 4, 2, 2),
                 32);
    check_layout(desc_of(TS_MOD_CHANNEL_SHUFFLE),
                 "ChannelShuffle",
                 SHAPE(1, 4, 2, 2),
                 SHAPE(1, 4, 2, 2),
                 32);
    /* Unfold(2) on (1,2,3,3) -> (1,8,4): O = 32, 2O = 64. */
    check_layout(desc_of(TS_MOD_UNFOLD),
                 "Unfold",
                 SHAPE(1, 2, 3, 3),
                 SHAPE(1, 8, 4),
                 64);
    /* ReflectionPad2d(1) on (1,2,3,3) -> (1,2,5,5): 2O = 100; the same
     * for replication and circular pads. */
    check_layout(desc_of(TS_MOD_PAD),
                 "ReflectionPad2d",
                 SHAPE(1, 2, 3, 3),
                 SHAPE(1, 2, 5, 5),
                 100);

    /* ZeroPad2d(1) on (1,2,3,3): no crop, N + O = 18 + 50 = 68. */
    d = desc_of(TS_MOD_CONSTANT_PAD);
    d.pad_count = 4;
    for (int i = 0; i < 4; i++) {
        d.pad[i] = 1;
    }
    check_layout(d, "ZeroPad2d", SHAPE(1, 2, 3, 3), SHAPE(1, 2, 5, 5), 68);
    /* ConstantPad2d((-1, 1, 0, 2)) on (1,2,3,3) -> (1,2,5,3): the last
     * axis keeps 3 - 1 = 2 input columns, so 1*2*3*2 = 12 reads + O = 30:
     * 42. ConstantPad1d((-1, 2)) on (1,2,3) -> (1,2,4): 4 + 8 = 12. */
    d.pad[0] = -1;
    d.pad[1] = 1;
    d.pad[2] = 0;
    d.pad[3] = 2;
    check_layout(d, "ConstantPad2d", SHAPE(1, 2, 3, 3), SHAPE(1, 2, 5, 3), 42);
    d.pad_count = 2;
    d.pad[1] = 2;
    check_layout(d, "ConstantPad1d", SHAPE(1, 2, 3), SHAPE(1, 2, 4), 12);
    /* cropping a whole axis away reads nothing: (-3, 0) on (1,2,3) ->
     * (1,2,0): 0 + 0 */
    d.pad[1] = 0;
    d.pad[0] = -3;
    check_layout(d, "ConstantPad1d", SHAPE(1, 2, 3), SHAPE(1, 2, 0), 0);
    /* a padding longer than the input's dims is malformed */
    d.pad_count = 6;
    c = call_of("ConstantPad3d", SHAPE(2, 3), SHAPE(2, 3));
    est = estimate(&d, &c);
    CHECK_ERROR(est.dmas, "ValueError: ");
}

static void
test_upsample(void)
{
    /* (1,2,3,3) -> (1,2,6,6): O = 72.
     * nearest: 0, 0, 2O = 144; bilinear (n = 4): (2n-1)O = 504, nO = 288,
     * (n+1)O = 360; bicubic (n = 16): 2232, 1152, 1224. */
    const struct {
        ts_upsample_mode mode;
        int64_t flops, macs, dmas;
    } rows[] = {
        {TS_UPSAMPLE_NEAREST, 0, 0, 144},
        {TS_UPSAMPLE_BILINEAR, 504, 288, 360},
        {TS_UPSAMPLE_BICUBIC, 2232, 1152, 1224},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ts_module_desc d = desc_of(TS_MOD_UPSAMPLE);
        d.upsample_mode = rows[i].mode;
        ts_module_call c =
            call_of("Upsample", SHAPE(1, 2, 3, 3), SHAPE(1, 2, 6, 6));
        ts_module_estimates est = estimate(&d, &c);
        CHECK_COUNTS(est, rows[i].flops, rows[i].macs, rows[i].dmas);
        CHECK_NOT_APPLICABLE(est);
    }

    /* linear (n = 2) on (1,2,3) -> (1,2,6): O = 12: 36, 24, 36.
     * trilinear (n = 8) on (1,2,3,3,3) -> (1,2,6,6,6): O = 432: 15*432 =
     * 6480, 3456, 3888. */
    ts_module_desc d = desc_of(TS_MOD_UPSAMPLE);
    d.upsample_mode = TS_UPSAMPLE_LINEAR;
    ts_module_call c = call_of("Upsample", SHAPE(1, 2, 3), SHAPE(1, 2, 6));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 36, 24, 36);
    d.upsample_mode = TS_UPSAMPLE_TRILINEAR;
    c = call_of("Upsample", SHAPE(1, 2, 3, 3, 3), SHAPE(1, 2, 6, 6, 6));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 6480, 3456, 3888);

    /* area is adaptive average pooling: (1,2,5,7) -> (1,2,3,2) visits
     * 2*7*8 = 112 (contract table), O = 12: FLOPs 112, MACs 112 + 12*1 =
     * 124, DMAs 124. */
    d.upsample_mode = TS_UPSAMPLE_AREA;
    c = call_of("Upsample", SHAPE(1, 2, 5, 7), SHAPE(1, 2, 3, 2));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 112, 124, 124);
}

/* ---- EmbeddingBag, Bilinear, similarity, distance ---------------------- */

static void
test_embedding_bag(void)
{
    /* EmbeddingBag(10, 4, mode='mean') on (2,3) -> (2,4): N = 6 indices,
     * D = 4, 24 gathered elements, O = 8. FLOPs (24 - 8) adds + 8
     * divisions = 24; MACs the same; DMAs 6 + 24 + 8 = 38. */
    ts_module_desc d = desc_of(TS_MOD_EMBEDDING_BAG);
    d.embedding_dim = 4;
    d.bag_mode = TS_BAG_MEAN;
    ts_module_call c = call_of("EmbeddingBag", SHAPE(2, 3), SHAPE(2, 4));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 24, 24, 38);
    CHECK_NOT_APPLICABLE(est);

    /* mode='sum', 1-D input (6,) with offsets (2,) and per_sample_weights
     * (6,): FLOPs 16 adds + 24 products = 40; MACs 24 (one per gathered
     * element); DMAs 6 + 2 + 24 + 6 + 8 = 46. */
    d.bag_mode = TS_BAG_SUM;
    c = call_of("EmbeddingBag", SHAPE(6), SHAPE(2, 4));
    c.aux_numel = 2;
    c.has_per_sample_weights = true;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 40, 24, 46);

    /* mode='max' without weights: 16 comparisons; DMAs 6 + 2 + 24 + 8 =
     * 40. */
    d.bag_mode = TS_BAG_MAX;
    c.has_per_sample_weights = false;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 16, 16, 40);
}

static ts_module_call
two_input_call(const char *name, ts_shape a, ts_shape b, ts_shape out)
{
    ts_module_call c = call_of(name, a, out);
    c.has_second = true;
    c.second = b;
    return c;
}

static void
test_bilinear_similarity(void)
{
    /* Bilinear(3, 4, 5) on (2,3), (2,4) -> (2,5): O = 10, P = 60 + 5.
     * Per output: 2*3*4 + 3 - 1 = 26, + bias = 27: FLOPs 270;
     * MACs O*(3*4 + 3) = 150; DMAs 6 + 8 + 65 + 10 = 89; rf (1, 1, 0). */
    ts_module_desc d = desc_of(TS_MOD_BILINEAR);
    d.in_features = 3;
    d.in2_features = 4;
    d.out_features = 5;
    d.has_weight = d.has_bias = true;
    d.param_numel = 65;
    ts_module_call c =
        two_input_call("Bilinear", SHAPE(2, 3), SHAPE(2, 4), SHAPE(2, 5));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 270, 150, 89);
    CHECK_RF(est, 1, 1, 0);
    c.has_second = false;
    est = estimate(&d, &c);
    CHECK_ALL_ERROR(est, "ValueError: ");

    /* CosineSimilarity(dim=1) on (2,4), (2,4) -> (2,): N = Nb = 8, O = 2.
     * FLOPs: norms 2*8 + 2*8, clamps 2 + 2, divisions 8 + 8, product 8,
     * sum 8 - 2: 66 = 8Nb + O (= the operator view); MACs 3Nb = 24; DMAs
     * 8 + 8 + 2 = 18. */
    d = desc_of(TS_MOD_COSINE_SIMILARITY);
    d.dim = 1;
    c = two_input_call("CosineSimilarity", SHAPE(2, 4), SHAPE(2, 4), SHAPE(2));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 66, 24, 18);
    CHECK_NOT_APPLICABLE(est);

    /* Broadcast (2,4) with (1,4): PyTorch expands both to Nb = 8 first,
     * so FLOPs stay 8Nb + O = 66 and MACs 3Nb = 24; the logical reads are
     * the inputs' own elements: DMAs 8 + 4 + 2 = 14. */
    c = two_input_call("CosineSimilarity", SHAPE(2, 4), SHAPE(1, 4), SHAPE(2));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 66, 24, 14);
    c = two_input_call("CosineSimilarity", SHAPE(2, 4), SHAPE(3, 4), SHAPE(2));
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "ValueError: ");
    d.dim = 2; /* dim must address an axis of the 2-D broadcast */
    c = two_input_call("CosineSimilarity", SHAPE(2, 4), SHAPE(2, 4), SHAPE(2));
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "IndexError: ");

    /* PairwiseDistance(p=2) on (2,4), (2,4) -> (2,): difference and eps
     * shift 2*8, norm 2*8: 32 (= the operator view); MACs 8; DMAs 18.
     * p = 1 or inf: 16 + 16 - 2 = 30; p = 3: 16 + 3*8 = 40. */
    d = desc_of(TS_MOD_PAIRWISE_DISTANCE);
    d.norm_p = 2.0;
    c = two_input_call("PairwiseDistance", SHAPE(2, 4), SHAPE(2, 4), SHAPE(2));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 32, 8, 18);
    d.norm_p = 1.0;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 30);
    d.norm_p = INFINITY;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 30);
    d.norm_p = 3.0;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 40);
}

/* ---- Fold, Dropout variants, MaxUnpool, LPPool ------------------------- */

static void
test_fold(void)
{
    /* Fold((3,3), 2) on (1,8,4) -> (1,2,3,3): 2x2 blocks of stride 1 on
     * each axis of length 3; contributions per position 1, 2, 1 (sum 4,
     * 3 covered). Adds per channel 4*4 - 3*3 = 7; 2 channels: 14. MACs
     * the same; DMAs N + O = 32 + 18 = 50. */
    ts_module_desc d = desc_of(TS_MOD_FOLD);
    d.rank = 2;
    for (int i = 0; i < 2; i++) {
        d.output_size[i] = 3;
        d.kernel[i] = 2;
        d.stride[i] = 1;
        d.dilation[i] = 1;
    }
    ts_module_call c = call_of("Fold", SHAPE(1, 8, 4), SHAPE(1, 2, 3, 3));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 14, 14, 50);
    CHECK_NOT_APPLICABLE(est);

    /* kernel 3, padding 1, output 3: 3 blocks per axis; position 0 gets
     * offsets 0, 1 (2), position 1 all three (3), position 2 two (2): sum 7,
     * 3 covered: 49 - 9 = 40 adds on one channel (unbatched (9, 9) ->
     * (1,3,3)). */
    for (int i = 0; i < 2; i++) {
        d.kernel[i] = 3;
        d.padding[i] = 1;
    }
    c = call_of("Fold", SHAPE(9, 9), SHAPE(1, 3, 3));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 40);

    /* Non-overlapping blocks (kernel 2, stride 2, output 4): nothing to
     * add. */
    for (int i = 0; i < 2; i++) {
        d.output_size[i] = 4;
        d.kernel[i] = 2;
        d.stride[i] = 2;
        d.padding[i] = 0;
    }
    c = call_of("Fold", SHAPE(1, 4, 4), SHAPE(1, 1, 4, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 32);

    d.stride[0] = 0;
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "ValueError: ");
}

static void
test_dropout_variants(void)
{
    /* Dropout2d(0.5) on (1,2,3,3): eval 0; DMAs N + 1 + O = 37 (in place
     * 19); training 2N = 36. */
    ts_module_desc d = desc_of(TS_MOD_FEATURE_DROPOUT);
    d.p = 0.5;
    ts_module_call c =
        call_of("Dropout2d", SHAPE(1, 2, 3, 3), SHAPE(1, 2, 3, 3));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 37);
    CHECK_RF(est, 1, 1, 0);
    d.inplace = true;
    est = estimate(&d, &c);
    CHECK_COUNT(est.dmas, 19);
    d.training = true;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 36);

    /* AlphaDropout on (2,3): eval 0 and 6 + 1 + 6 = 13 DMAs; training is
     * refused. */
    d = desc_of(TS_MOD_ALPHA_DROPOUT);
    d.p = 0.5;
    c = call_of("AlphaDropout", SHAPE(2, 3), SHAPE(2, 3));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 13);
    d.training = true;
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "NotImplementedError: ");
}

static void
test_unpool_lppool(void)
{
    /* MaxUnpool2d(2) on values (1,2,2,2) -> (1,2,4,4): N = 8, O = 32.
     * No arithmetic; DMAs values and indices 2N + O = 48; rf (-2, 1/2,
     * 0) as for upsampling. */
    ts_module_desc d = desc_of(TS_MOD_MAXUNPOOL);
    d.rank = 2;
    d.kernel[0] = d.kernel[1] = 2;
    d.stride[0] = d.stride[1] = 2;
    ts_module_call c =
        call_of("MaxUnpool2d", SHAPE(1, 2, 2, 2), SHAPE(1, 2, 4, 4));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 48);
    CHECK_COUNT(est.rf, -2);
    CHECK(est.stride.value.is_real);
    CHECK_EQ_REAL(est.stride.value.r, 0.5);

    /* LPPool2d(2, 2) on (1,2,4,4) -> (1,2,2,2): O = 8, K = 4. FLOPs 2K per
     * output = 64 (powers, adds, root); MACs O(K - 1) = 24; DMAs O(K + 1)
     * = 40; rf (2, 2, 0). */
    d = pool_desc(TS_MOD_LPPOOL, 2, 2);
    d.norm_p = 2.0;
    c = call_of("LPPool2d", SHAPE(1, 2, 4, 4), SHAPE(1, 2, 2, 2));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 64, 24, 40);
    CHECK_RF(est, 2, 2, 0);

    /* LPPool1d(3, 2) on (1,2,4) -> (1,2,2): O = 4, K = 2: 16, 4, 12. */
    d = pool_desc(TS_MOD_LPPOOL, 1, 2);
    c = call_of("LPPool1d", SHAPE(1, 2, 4), SHAPE(1, 2, 2));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 16, 4, 12);
}

/* ---- recurrent modules (beyond the reference) -------------------------- */

static ts_module_desc
rnn_desc(ts_rnn_mode mode, int64_t in, int64_t hidden, int64_t layers)
{
    ts_module_desc d = desc_of(TS_MOD_RNN);
    d.rnn_mode = mode;
    d.input_size = in;
    d.hidden_size = hidden;
    d.num_layers = layers;
    d.has_bias = true;
    return d;
}

static ts_module_call
rnn_call(ts_shape in, ts_shape out, ts_shape h_n, int64_t c_n)
{
    ts_module_call c = call_of("RNN", in, out);
    c.has_second = true;
    c.second = h_n;
    c.aux_numel = c_n;
    return c;
}

static void
test_rnn(void)
{
    /* RNN(4, 3) on (5,2,4) seq-first: rows = N / input_size = 40 / 4 = 10.
     * Per row: gate matmuls 2*3*4 + 2*3*3 = 42, biases 2*3 = 6, ih + hh 3,
     * tanh 6*3 = 18: 69 -> FLOPs 690 (the operator view, addmm without the
     * bias adds, is 630). MACs 3*(4 + 3) = 21 per row: 210.
     * P = 12 + 9 + 3 + 3 = 27; h_n (1,2,3) = 6.
     * DMAs = P + rows*(4 + 3) + 2*6 = 27 + 70 + 12 = 109. */
    ts_module_desc d = rnn_desc(TS_RNN_TANH, 4, 3, 1);
    d.param_numel = 27;
    ts_module_call c =
        rnn_call(SHAPE(5, 2, 4), SHAPE(5, 2, 3), SHAPE(1, 2, 3), 0);
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 690, 210, 109);
    CHECK_NOT_APPLICABLE(est);

    /* nonlinearity='relu': relu costs 1 instead of 6: 69 - 15 = 54 per row:
     * 540. */
    d.rnn_mode = TS_RNN_RELU;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 540);

    /* LSTM(4, 3, num_layers=2, bidirectional, batch_first) on (2,5,4):
     * rows 10, 2 directions; G = 4H = 12.
     * Layer 0 (in 4): 2*12*4 + 2*12*3 + 2*12 + 3*(8 + 24) = 96 + 72 + 24 +
     *   96 = 288 per row; layer 1 (in 2*3 = 6): 144 + 72 + 24 + 96 = 336.
     * FLOPs = 10*2*(288 + 336) = 12480.
     * MACs = 10*2*(12*7 + 12*9) = 20*192 = 3840.
     * P = 2*(48 + 36 + 24) + 2*(72 + 36 + 24) = 216 + 264 = 480;
     * traffic 20*((4 + 3) + (6 + 3)) = 320; h_n = c_n = (4,2,3) = 24.
     * DMAs = 480 + 320 + 48 + 48 = 896. */
    d = rnn_desc(TS_RNN_LSTM, 4, 3, 2);
    d.bidirectional = true;
    d.param_numel = 480;
    c = rnn_call(SHAPE(2, 5, 4), SHAPE(2, 5, 6), SHAPE(4, 2, 3), 24);
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 12480, 3840, 896);

    /* LSTM(4, 3, proj_size=2) on (5,1,4): rows 5, recurrent width R = 2.
     * Per row: 2*12*4 + 2*12*2 + 24 + 96 + projection 2*3*2 = 96 + 48 + 24
     * + 96 + 12 = 276: FLOPs 1380. MACs 12*6 + 3*2 = 78 per row: 390.
     * P = 48 + 24 + 24 + 6 = 102; h_n (1,1,2) = 2, c_n (1,1,3) = 3.
     * DMAs = 102 + 5*(4 + 2) + 4 + 6 = 142. */
    d = rnn_desc(TS_RNN_LSTM, 4, 3, 1);
    d.proj_size = 2;
    d.param_numel = 102;
    c = rnn_call(SHAPE(5, 1, 4), SHAPE(5, 1, 2), SHAPE(1, 1, 2), 3);
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 1380, 390, 142);

    /* GRU(4, 3, bias=False) on (1,2,4): rows 2, G = 9. Per row 2*9*4 +
     * 2*9*3 + 3*(7 + 14) = 72 + 54 + 63 = 189: 378; MACs 9*7 per row. */
    d = rnn_desc(TS_RNN_GRU, 4, 3, 1);
    d.has_bias = false;
    c = rnn_call(SHAPE(1, 2, 4), SHAPE(1, 2, 3), SHAPE(1, 2, 3), 0);
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 378);
    CHECK_COUNT(est.macs, 2 * 9 * 7);

    /* Training with inter-layer dropout 0.5: 2-layer RNN(4, 3) on (5,2,4):
     * layer 0 69, layer 1 (in 3) 2*3*3 + 18 + 6 + 3 + 18 = 63 per row ->
     * 10*132 = 1320, plus dropout on layer 0's output 2*10*3 = 60: 1380. */
    d = rnn_desc(TS_RNN_TANH, 4, 3, 2);
    d.training = true;
    d.p = 0.5;
    c = rnn_call(SHAPE(5, 2, 4), SHAPE(5, 2, 3), SHAPE(2, 2, 3), 0);
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 1380);

    /* A width that does not divide the input is inconsistent; a missing
     * h_n leaves the call without its second tensor. */
    d = rnn_desc(TS_RNN_TANH, 3, 3, 1);
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "ValueError: ");
    CHECK_ERROR(est.macs, "ValueError: ");
    CHECK_ERROR(est.dmas, "ValueError: ");
    d = rnn_desc(TS_RNN_TANH, 4, 3, 1);
    c.has_second = false;
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "ValueError: ");

    /* Cells: LSTMCell(4, 3) on (2,4) -> h' (2,3): rows 2, 288 per row:
     * 576; MACs 2*84 = 168; P = 108; DMAs N + P + h' + h + c + c' =
     * 8 + 108 + 6 + 3*6 = 140. RNNCell(4, 3) unbatched (4,): 69; DMAs
     * 4 + 27 + 3 + 3 = 37. GRUCell(4, 3) on (1,4): 2*9*7 + 18 + 63 = 207. */
    d = desc_of(TS_MOD_RNN_CELL);
    d.rnn_mode = TS_RNN_LSTM;
    d.input_size = 4;
    d.hidden_size = 3;
    d.has_bias = true;
    d.param_numel = 108;
    c = call_of("LSTMCell", SHAPE(2, 4), SHAPE(2, 3));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 576, 168, 140);
    CHECK_NOT_APPLICABLE(est);
    d.rnn_mode = TS_RNN_TANH;
    d.param_numel = 27;
    c = call_of("RNNCell", SHAPE(4), SHAPE(3));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 69, 21, 37);
    d.rnn_mode = TS_RNN_GRU;
    c = call_of("GRUCell", SHAPE(1, 4), SHAPE(1, 3));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 207);
}

/* ---- native Transformer family (contract pinned table) ---------------- */

/* The tiny configuration of the contract: E = 4, H = 2 (D = 2),
 * dim_feedforward F = 8, biases everywhere. Attention P = 3*16 + 12 + 16 +
 * 4 = 80; linear1 P = 32 + 8 = 40; linear2 P = 32 + 4 = 36; LayerNorm P =
 * 8. */
static ts_attention_desc
tiny_attention(void)
{
    ts_attention_desc a;
    memset(&a, 0, sizeof a);
    a.embed_dim = 4;
    a.num_heads = 2;
    a.kdim = a.vdim = 4;
    a.has_in_proj_bias = a.has_out_proj_bias = true;
    a.param_numel = 80;
    return a;
}

static ts_norm_desc
tiny_norm(void)
{
    ts_norm_desc n;
    memset(&n, 0, sizeof n);
    n.kind = TS_NORM_LAYERNORM;
    n.has_weight = n.has_bias = true;
    n.normalized_numel = 4;
    n.param_numel = 8;
    return n;
}

static ts_transformer_layer_desc
tiny_layer(bool decoder)
{
    ts_transformer_layer_desc l;
    memset(&l, 0, sizeof l);
    l.count = 1;
    l.decoder = decoder;
    l.activation = TS_ACT_RELU;
    l.self_attn = tiny_attention();
    if (decoder) {
        l.cross_attn = tiny_attention();
    }
    l.linear1 = (ts_linear_desc){4, 8, true, 40};
    l.linear2 = (ts_linear_desc){8, 4, true, 36};
    for (int i = 0; i < (decoder ? 3 : 2); i++) {
        l.norm[i] = tiny_norm();
    }
    return l;
}

static ts_module_desc
tiny_transformer(ts_module_kind kind)
{
    ts_module_desc d = desc_of(kind);
    bool encoder = kind == TS_MOD_TRANSFORMER_ENCODER_LAYER
                   || kind == TS_MOD_TRANSFORMER_ENCODER
                   || kind == TS_MOD_TRANSFORMER;
    bool decoder = kind == TS_MOD_TRANSFORMER_DECODER_LAYER
                   || kind == TS_MOD_TRANSFORMER_DECODER
                   || kind == TS_MOD_TRANSFORMER;
    if (encoder) {
        d.transformer.encoder = tiny_layer(false);
    }
    if (decoder) {
        d.transformer.decoder = tiny_layer(true);
    }
    if (kind == TS_MOD_TRANSFORMER) {
        d.transformer.encoder_norm = tiny_norm();
        d.transformer.decoder_norm = tiny_norm();
    }
    return d;
}

static void
test_transformer_pinned(void)
{
    /* Encoder layer on src (3,1,4): N = 12, hidden 3*8 = 24, R = 3 rows.
     * MACs: self-attention 264 (contract) + 2BTEF = 2*3*4*8 = 192 + two
     *   LayerNorms N(1+W) = 2*24 = 48: 504.
     * DMAs: self-attention 452 (contract) + linear1 N + P + O = 12 + 40 +
     *   24 = 76 + ReLU 24 + 24 = 48 + linear2 24 + 36 + 12 = 72 + two
     *   residual adds 3N each = 72 + two LayerNorms (4N + 5R + 1 + P + 2N
     *   = 48 + 15 + 1 + 8 + 24 = 96) = 192: 912.
     * FLOPs: self-attention 588 + linear1 3*8*(2*4 - 1 + 1) = 192 + ReLU 24
     *   + linear2 3*4*(2*8 - 1 + 1) = 192 + residuals 2*12 = 24 + two
     *   LayerNorms (6N + 2R + 2N = 72 + 6 + 24 = 102) = 204: 1224. */
    ts_module_desc d = tiny_transformer(TS_MOD_TRANSFORMER_ENCODER_LAYER);
    ts_module_call c =
        call_of("TransformerEncoderLayer", SHAPE(3, 1, 4), SHAPE(3, 1, 4));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 1224, 504, 912);
    CHECK_NOT_APPLICABLE(est);

    /* Decoder layer on tgt (2,1,4) with memory (3,1,4): N = 8, hidden 16.
     * MACs: self-attention (L = 2) 2*2*16 + 2*4*8 + 2*2*2*4 = 64 + 64 + 32
     *   = 160 + cross-attention (T = 2, S = 3) 208 (contract) + 2*2*4*8 =
     *   128 + three LayerNorms 3*16 = 48: 544.
     * DMAs: self-attention I = 24, P = 80, 7Q = 56, 4J = 32, A = 8 -> 80,
     *   R = 4 -> 16: 288; cross-attention 352 (contract); linear1 8 + 40 +
     *   16 = 64; ReLU 32; linear2 16 + 36 + 8 = 60; residuals 3*24 = 72;
     *   LayerNorms 3*(32 + 10 + 1 + 8 + 16) = 201: 1069.
     * FLOPs: self-attention 344, cross-attention 456, linear1 2*8*8 = 128,
     *   ReLU 16, linear2 2*4*16 = 128, residuals 24, LayerNorms 3*(48 + 4 +
     *   16) = 204: 1300. */
    d = tiny_transformer(TS_MOD_TRANSFORMER_DECODER_LAYER);
    c = call_of("TransformerDecoderLayer", SHAPE(2, 1, 4), SHAPE(2, 1, 4));
    c.has_second = true;
    c.second = SHAPE(3, 1, 4);
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 1300, 544, 1069);

    /* Full one-layer nn.Transformer, src (3,1,4), tgt (2,1,4), final
     * norms: encoder 504/912 + its norm (24 MACs, 96 DMAs) + decoder
     * 544/1069 + its norm (16, 67): MACs 1088, DMAs 2144 (contract).
     * FLOPs 1224 + 102 + 1300 + 68 = 2694 (contract; v0.2's MHA terms gave
     * 2635). */
    d = tiny_transformer(TS_MOD_TRANSFORMER);
    c = call_of("Transformer", SHAPE(3, 1, 4), SHAPE(2, 1, 4));
    c.has_second = true;
    c.second = SHAPE(2, 1, 4);
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 2694, 1088, 2144);
    CHECK_NOT_APPLICABLE(est);

    /* batch_first gives the same numbers on (1,3,4) / (1,2,4). */
    d.transformer.encoder.self_attn.batch_first = true;
    d.transformer.decoder.self_attn.batch_first = true;
    d.transformer.decoder.cross_attn.batch_first = true;
    c = call_of("Transformer", SHAPE(1, 3, 4), SHAPE(1, 2, 4));
    c.has_second = true;
    c.second = SHAPE(1, 2, 4);
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 2694, 1088, 2144);
}

static void
test_transformer_variants(void)
{
    /* TransformerEncoder of 2 layers with a final LayerNorm on (3,1,4):
     * 2*1224 + 102 = 2550 FLOPs; 2*504 + 24 = 1032 MACs; 2*912 + 96 = 1920
     * DMAs. */
    ts_module_desc d = tiny_transformer(TS_MOD_TRANSFORMER_ENCODER);
    d.transformer.encoder.count = 2;
    d.transformer.encoder_norm = tiny_norm();
    ts_module_call c =
        call_of("TransformerEncoder", SHAPE(3, 1, 4), SHAPE(3, 1, 4));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_COUNTS(est, 2550, 1032, 1920);

    /* An Identity final norm costs nothing: 2448, 1008, 1824. */
    d.transformer.encoder_norm.kind = TS_NORM_IDENTITY;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 2448, 1008, 1824);

    /* TransformerDecoder of one layer, no final norm: the decoder layer. */
    d = tiny_transformer(TS_MOD_TRANSFORMER_DECODER);
    c = call_of("TransformerDecoder", SHAPE(2, 1, 4), SHAPE(2, 1, 4));
    c.has_second = true;
    c.second = SHAPE(3, 1, 4);
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 1300, 544, 1069);
    c.has_second = false;
    est = estimate(&d, &c);
    CHECK_COUNTS_ERROR_NA(est, "ValueError: ");

    /* Exact GELU costs 5 per hidden element instead of 1: the encoder
     * layer gains 4*24 = 96 FLOPs (1320); MACs and DMAs unchanged. */
    d = tiny_transformer(TS_MOD_TRANSFORMER_ENCODER_LAYER);
    d.transformer.encoder.activation = TS_ACT_GELU;
    c = call_of("TransformerEncoderLayer", SHAPE(3, 1, 4), SHAPE(3, 1, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 1320, 504, 912);

    /* Masks: src_mask (3,3) and src_key_padding_mask (1,3), A = B*H*T*S =
     * 18: FLOPs + 2A = 1260; DMAs + (9 + 2A) + (3 + 2A) = 912 + 84 = 996. */
    d.transformer.encoder.activation = TS_ACT_RELU;
    c.tf_mask[TS_TF_SRC_MASK] = true;
    c.tf_mask_numel[TS_TF_SRC_MASK] = 9;
    c.tf_mask[TS_TF_SRC_KEY_PADDING_MASK] = true;
    c.tf_mask_numel[TS_TF_SRC_KEY_PADDING_MASK] = 3;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 1260, 504, 996);

    /* A per-head mask (B*H, T, S) = 18 elements is native too: +9 DMAs. */
    c.tf_mask_numel[TS_TF_SRC_MASK] = 18;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 1260, 504, 1005);

    /* A mask of another size is not a native mask: MACs and DMAs refuse,
     * FLOPs still count it. */
    c.tf_mask_numel[TS_TF_SRC_MASK] = 4;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 1260);
    CHECK_ERROR(est.macs, "NotImplementedError: ");
    CHECK_ERROR(est.dmas, "NotImplementedError: ");

    /* A causal hint without an explicit mask: MACs and DMAs refuse. */
    memset(c.tf_mask, 0, sizeof c.tf_mask);
    c.tf_causal[TS_TF_SRC] = true;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 1224);
    CHECK_ERROR(est.macs, "NotImplementedError: a causal hint");
    c.tf_causal[TS_TF_SRC] = false;

    /* Encoder padding masks with enable_nested_tensor. */
    d = tiny_transformer(TS_MOD_TRANSFORMER_ENCODER);
    d.transformer.enable_nested_tensor = true;
    c.tf_mask[TS_TF_SRC_KEY_PADDING_MASK] = true;
    c.tf_mask_numel[TS_TF_SRC_KEY_PADDING_MASK] = 3;
    est = estimate(&d, &c);
    CHECK_ERROR(est.dmas, "NotImplementedError: encoder padding masks");
    d.transformer.enable_nested_tensor = false;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 1242, 504, 951);

    /* Dropout p = 0.1 everywhere; each sub-layer's own mode decides
     * whether it runs. All in training: FLOPs add the attention dropout
     * 2A = 36, the feed-forward dropout 2*24 = 48 and dropout1/2 2*12
     * each = 48: 1224 + 132 = 1356. MACs and DMAs are eval-only. */
    d = tiny_transformer(TS_MOD_TRANSFORMER_ENCODER_LAYER);
    d.training = true;
    d.transformer.encoder.self_attn.dropout = 0.1;
    d.transformer.encoder.self_attn.training = true;
    for (int i = 0; i < 3; i++) {
        d.transformer.encoder.dropout[i] = 0.1;
        d.transformer.encoder.dropout_training[i] = true;
    }
    memset(c.tf_mask, 0, sizeof c.tf_mask);
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 1356);
    CHECK_ERROR(est.macs, "NotImplementedError: ");

    /* MC dropout: the layer in eval, only dropout1 (12 elements) in
     * training: 1224 + 24; MACs and DMAs still refuse. */
    d.training = false;
    d.transformer.encoder.self_attn.training = false;
    d.transformer.encoder.dropout_training[0] = false;
    d.transformer.encoder.dropout_training[2] = false;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 1248);
    CHECK_ERROR(est.dmas, "NotImplementedError: ");

    /* A layer in training whose sub-layers are all in eval runs no
     * dropout: 1224 FLOPs. */
    d.training = true;
    d.transformer.encoder.dropout_training[1] = false;
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 1224);

    /* Refusals from the binding (custom activation, non-native
     * sub-layers) make every metric a NotImplementedError. */
    d = tiny_transformer(TS_MOD_TRANSFORMER_ENCODER_LAYER);
    d.refusal =
        "Transformer estimates support the ReLU or exact GELU "
        "activation only";
    est = estimate(&d, &c);
    CHECK_COUNTS_ERROR_NA(est, "NotImplementedError: Transformer estimates");

    /* Unbatched (3,4) is not modelled; an empty batch counts 0 FLOPs and
     * refuses MACs. */
    d.refusal = NULL;
    c = call_of("TransformerEncoderLayer", SHAPE(3, 4), SHAPE(3, 4));
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "NotImplementedError: ");
    c = call_of("TransformerEncoderLayer", SHAPE(3, 0, 4), SHAPE(3, 0, 4));
    est = estimate(&d, &c);
    CHECK_COUNT(est.flops, 0);
    CHECK_ERROR(est.macs, "NotImplementedError: ");

    /* The kinds whose estimates cover their subtree. */
    CHECK(ts_module_kind_owns_subtree(TS_MOD_MHA));
    CHECK(ts_module_kind_owns_subtree(TS_MOD_TRANSFORMER));
    CHECK(ts_module_kind_owns_subtree(TS_MOD_TRANSFORMER_ENCODER_LAYER));
    CHECK(!ts_module_kind_owns_subtree(TS_MOD_LINEAR));
    CHECK(!ts_module_kind_owns_subtree(TS_MOD_KIND_COUNT));
}

/* ---- unsupported, invalid and refused calls ---------------------------- */

static void
test_unknown(void)
{
    ts_module_desc d = desc_of(TS_MOD_UNKNOWN);
    ts_module_call c = call_of("Bilinear", SHAPE(2, 4), SHAPE(2, 3));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_UNSUPPORTED(est.flops, "Module type not supported: Bilinear");
    CHECK_UNSUPPORTED(est.macs, "Module type not supported: Bilinear");
    CHECK_UNSUPPORTED(est.dmas, "Module type not supported: Bilinear");
    CHECK_UNSUPPORTED(est.rf, "Module type not supported: Bilinear");
    CHECK_UNSUPPORTED(est.stride, "Module type not supported: Bilinear");
    CHECK_UNSUPPORTED(est.padding, "Module type not supported: Bilinear");

    /* Unsupported wins over a missing tensor: there is no formula at all. */
    c.has_output = false;
    est = estimate(&d, &c);
    CHECK_UNSUPPORTED(est.flops, "Module type not supported: Bilinear");
}

static void
test_refused_inputs(void)
{
    ts_module_desc d = desc_of(TS_MOD_RELU);
    ts_module_call c = call_of("ReLU", SHAPE(2, 4), SHAPE(2, 4));

    c.input.dtype = TS_DTYPE_COMPLEX;
    ts_module_estimates est = estimate(&d, &c);
    CHECK_ALL_ERROR(est, "NotImplementedError: ");

    c.input.dtype = TS_DTYPE_FLOAT;
    c.input.dense = false; /* sparse or nested */
    est = estimate(&d, &c);
    CHECK_ALL_ERROR(est, "NotImplementedError: ");

    c.input.dense = true;
    c.has_input = false;
    est = estimate(&d, &c);
    CHECK_ALL_ERROR(est, "ValueError: ");

    c.has_input = true;
    c.output.dims[0] = -1;
    est = estimate(&d, &c);
    CHECK_ALL_ERROR(est, "ValueError: ");

    /* Integer tensors are real: Identity on an int64 tensor is counted. */
    d = desc_of(TS_MOD_IDENTITY);
    c = call_of("Identity", SHAPE(2, 4), SHAPE(2, 4));
    c.input.dtype = c.output.dtype = TS_DTYPE_INT;
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 8);

    /* Empty batch: activations count 0 everywhere. */
    d = desc_of(TS_MOD_ELU);
    c = call_of("ELU", SHAPE(0, 4), SHAPE(0, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 1); /* ELU still reads alpha once */
    d = desc_of(TS_MOD_RELU);
    c = call_of("ReLU", SHAPE(0, 4), SHAPE(0, 4));
    est = estimate(&d, &c);
    CHECK_COUNTS(est, 0, 0, 0);
}

static void
test_overflow(void)
{
    /* Linear with 2^40 outputs of 2^40 features: 2^80 MACs. */
    ts_module_desc d = desc_of(TS_MOD_LINEAR);
    d.in_features = (int64_t)1 << 40;
    d.out_features = (int64_t)1 << 40;
    ts_module_call c = call_of(
        "Linear", SHAPE(1, (int64_t)1 << 40), SHAPE(1, (int64_t)1 << 40));
    ts_module_estimates est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "OverflowError: ");
    CHECK_ERROR(est.macs, "OverflowError: ");
    CHECK_COUNT(est.dmas, ((int64_t)1 << 41)); /* N + 0 + O fits */

    /* A shape whose element count overflows. */
    d = desc_of(TS_MOD_RELU);
    c = call_of("ReLU", SHAPE((int64_t)1 << 40, (int64_t)1 << 40), SHAPE(1));
    est = estimate(&d, &c);
    CHECK_ALL_ERROR(est, "OverflowError: ");

    /* ReLU6 on 2^62 elements: 2N overflows, N + O overflows too. */
    d = desc_of(TS_MOD_RELU6);
    c = call_of("ReLU6", SHAPE((int64_t)1 << 62), SHAPE((int64_t)1 << 62));
    est = estimate(&d, &c);
    CHECK_ERROR(est.flops, "OverflowError: FLOPs of ReLU6");
    CHECK_COUNT(est.macs, 0);
    CHECK_ERROR(est.dmas, "OverflowError: DMAs of ReLU6");
}

static void
test_api(void)
{
    ts_module_desc d = desc_of(TS_MOD_RELU);
    ts_module_call c = call_of("ReLU", SHAPE(2, 4), SHAPE(2, 4));
    ts_module_estimates est;
    CHECK_EQ_INT(ts_module_estimate(NULL, &c, &est), TS_EINVAL);
    CHECK_EQ_INT(ts_module_estimate(&d, NULL, &est), TS_EINVAL);
    CHECK_EQ_INT(ts_module_estimate(&d, &c, NULL), TS_EINVAL);

    d.kind = TS_MOD_KIND_COUNT;
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &est), TS_EINVAL);
    CHECK_ERROR(est.flops, "ValueError: ");
    CHECK_ERROR(est.padding, "ValueError: ");

    /* A NULL type name still yields a well-formed message. */
    d = desc_of(TS_MOD_UNKNOWN);
    c.type_name = NULL;
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &est), TS_OK);
    CHECK_UNSUPPORTED(est.flops, "Module type not supported: ?");

    /* Every kind has a non-empty name, and no two kinds share one. */
    const char *names[TS_MOD_KIND_COUNT];
    bool named = true;
    bool distinct = true;
    for (int i = 0; i < TS_MOD_KIND_COUNT; i++) {
        names[i] = ts_module_kind_name((ts_module_kind)i);
        if (names[i] == NULL || names[i][0] == '\0') {
            named = false;
            continue;
        }
        for (int j = 0; j < i; j++) {
            if (names[j] != NULL && strcmp(names[i], names[j]) == 0) {
                distinct = false;
            }
        }
    }
    CHECK(named);
    CHECK(distinct);
    CHECK_EQ_STR(ts_module_kind_name(TS_MOD_LINEAR), "linear");
    CHECK_EQ_STR(ts_module_kind_name(TS_MOD_MHA), "mha");
    CHECK_EQ_STR(ts_module_kind_name(TS_MOD_KIND_COUNT), "invalid");
}

int
main(void)
{
    test_identity_flatten();
    test_linear();
    test_activations();
    test_conv();
    test_convtranspose();
    test_batchnorm();
    test_fixed_pooling();
    test_adaptive_pooling();
    test_dropout();
    test_layernorm();
    test_mha();
    test_newer_activations();
    test_softmax();
    test_group_rms_norm();
    test_instance_lrn();
    test_layout();
    test_upsample();
    test_embedding_bag();
    test_bilinear_similarity();
    test_fold();
    test_dropout_variants();
    test_unpool_lppool();
    test_rnn();
    test_transformer_pinned();
    test_transformer_variants();
    test_unknown();
    test_refused_inputs();
    test_overflow();
    test_api();
    printf("near misses: %ld calls estimated (%ld with complete FLOPs)\n",
           sweep_calls,
           sweep_complete);
    return ts_test_report();
}
