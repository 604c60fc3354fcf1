/* Module formulas pinned to hand-derived numbers (contract section 2.1).
 *
 * Each case writes its arithmetic next to the expected value, so a failure
 * points at the convention, not only at the number. N = input elements,
 * O = output elements, P = parameter elements, K = kernel volume. */
#include <limits.h>
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

static ts_module_estimates
estimate(const ts_module_desc *d, const ts_module_call *c)
{
    ts_module_estimates est;
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
    /* v0.2's module_rf does not list LayerNorm. */
    CHECK_UNSUPPORTED(est.rf, "Module type not supported: LayerNorm");
    CHECK_UNSUPPORTED(est.stride, "Module type not supported: LayerNorm");
    CHECK_UNSUPPORTED(est.padding, "Module type not supported: LayerNorm");

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
    test_unknown();
    test_refused_inputs();
    test_overflow();
    test_api();
    return ts_test_report();
}
