/* Module formulas: FLOPs, MACs, DMAs and receptive field of one module call.
 *
 * Every family is one row of `ts_mf_families` (indexed by ts_module_kind)
 * holding small formula functions; a NULL slot means "no formula" and yields
 * the reference's "Module type not supported" outcome. Counting conventions
 * are those of contract section 2.1 (and, for the families beyond the
 * reference, docs/module-formulas.md).
 *
 * This file holds the shared helpers, the family table and the dispatch; the
 * formulas live in module_formulas_{dense,spatial,pointwise,sequence}.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "module_formulas_internal.h"

/* ---- shared helpers ---------------------------------------------------- */

/* Keeps the first failure of a metric: a composite formula (Transformer)
 * keeps evaluating after a sub-formula fails, and the first reason is the
 * one that explains the outcome. */
void
ts_mf_fail(ts_estimate *e, const char *fmt, ...)
{
    va_list ap;
    if (e->kind == TS_EST_ERROR) {
        return;
    }
    va_start(ap, fmt);
    e->kind = TS_EST_ERROR;
    e->value = ts_int(0);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

ts_number
ts_mf_ratio(int64_t num, int64_t den)
{
    if (num % den == 0) {
        return ts_int(num / den);
    }
    return ts_real((double)num / (double)den);
}

int64_t
ts_mf_prod_dims(fctx *x, const ts_shape *s, int from, int to)
{
    int64_t total = 1;
    for (int i = from < 0 ? 0 : from; i < to && i < s->ndim; i++) {
        total = mul(x, total, s->dims[i]);
    }
    return total;
}

/* PyTorch accepts dim in [-ndim, ndim) (a scalar behaves as 1-D). */
bool
ts_mf_wrap_dim(int64_t dim, int ndim, int *out, ts_estimate *e)
{
    int64_t span = ndim > 0 ? ndim : 1;
    if (dim < -span || dim >= span) {
        fail(e,
             "IndexError: dim %lld is out of range for %d dimensions",
             (long long)dim,
             ndim);
        return false;
    }
    *out = (int)(dim < 0 ? dim + span : dim);
    return true;
}

/* Nominal kernel volume K: an int kernel stands for k in every spatial
 * axis (k^rank), as PyTorch expands it, whatever the tensor's batching. */
int64_t
ts_mf_kernel_volume(fctx *x)
{
    const ts_module_desc *d = x->d;
    int64_t k = 1;
    for (int i = 0; i < d->rank; i++) {
        k = mul(x, k, d->kernel_is_int ? d->kernel[0] : d->kernel[i]);
    }
    return k;
}

static int64_t
gcd64(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Exact adaptive-pooling visits: PyTorch's window i spans
 * [floor(iL/O), ceil((i+1)L/O)), and these lengths sum to L + O - gcd(L, O)
 * per axis; axes multiply, and every leading (batch, channel) slice repeats
 * the pattern. Area upsampling is the same computation. */
int64_t
ts_mf_adaptive_visits(fctx *x, int rank, ts_estimate *e)
{
    const ts_shape *in = &x->c->input;
    const ts_shape *out = &x->c->output;
    if (rank < 1 || in->ndim < rank || out->ndim != in->ndim) {
        fail(e,
             "ValueError: adaptive pooling expects input and output of equal "
             "rank with %d spatial axes",
             rank);
        return 0;
    }
    int lead = out->ndim - rank;
    int64_t visits = ts_mf_prod_dims(x, out, 0, lead);
    for (int i = lead; i < out->ndim; i++) {
        int64_t len = in->dims[i];
        int64_t outs = out->dims[i];
        int64_t axis = sub(x, add(x, len, outs), gcd64(len, outs));
        visits = mul(x, visits, axis);
    }
    return visits;
}

int64_t
ts_mf_sub_count(fctx *x,
                count_fn fn,
                const ts_module_desc *d,
                const ts_module_call *c,
                ts_estimate *e)
{
    fctx y = {.d = d, .c = c};
    if (!ts_shape_numel(&c->input, &y.n)
        || !ts_shape_numel(&c->output, &y.o)) {
        x->k.overflow = true;
        return 0;
    }
    int64_t value = fn(&y, e);
    x->k.overflow |= y.k.overflow;
    return value;
}

/* Data movement and layout modules do no arithmetic; activations and dropout
 * do no multiply-accumulate. */
int64_t
ts_mf_zero(fctx *x, ts_estimate *e)
{
    (void)x;
    (void)e;
    return 0;
}

/* Elementwise and dense-per-position modules see one position, keep the
 * grid and add no padding. */
void
ts_mf_rf_pointwise(fctx *x, ts_number trio[3], ts_estimate *e)
{
    (void)x;
    (void)e;
    trio[0] = ts_int(1);
    trio[1] = ts_int(1);
    trio[2] = ts_int(0);
}

/* Window d*(k-1)+1, stride and padding of the first spatial axis (the
 * reference's sequential-path convention), for convolutions and pooling. */
void
ts_mf_rf_window(fctx *x, ts_number trio[3], bool dilated)
{
    const ts_module_desc *d = x->d;
    int64_t k = d->kernel[0];
    if (dilated) {
        k = add(x, mul(x, d->dilation[0], sub(x, k, 1)), 1);
    }
    trio[0] = ts_int(k);
    trio[1] = ts_int(d->stride[0]);
    trio[2] = ts_int(d->padding[0]);
}

/* Token mixers (attention, recurrences, Transformers), group statistics and
 * layout changes have no spatial window: the trio does not apply, and no
 * diagnostic is due (contract 1.10, `not_applicable`). */
void
ts_mf_rf_not_applicable(fctx *x, ts_number trio[3], ts_estimate *e)
{
    (void)x;
    (void)trio;
    e->kind = TS_EST_NOT_APPLICABLE;
}

/* ---- the family table -------------------------------------------------- */

/* Pointwise rows: {flops per element, input reads per element, scalars read
 * once, always writes O, reads its parameters}.
 *
 * v0.2 activations: ReLU compares with 0; ReLU6 clamps twice; LeakyReLU
 * takes max and min with 0, scales one part and adds; Sigmoid negates,
 * exponentiates, adds 1 and divides; ELU compares, exponentiates, subtracts
 * 1, scales, selects and adds; Tanh takes two exponentials (reading the
 * input for each), a sum, a difference and a division. Dropout reads p like
 * ELU/LeakyReLU read alpha/slope; in place they write nothing back.
 *
 * Newer activations (contract 2.1, equal to torchscan_flops_v1 operator
 * costs): Hardtanh and Threshold compare and select (2); Hardshrink compares
 * twice and selects (3); Softsign takes abs, adds 1, divides (3);
 * Hardsigmoid adds, clamps twice, scales (4); PReLU and RReLU (eval) are
 * LeakyReLU's 4; Hardswish is Hardsigmoid times x (5); Softshrink compares
 * twice, shifts and selects (5); CELU, SELU, LogSigmoid, Softplus and
 * Tanhshrink cost 7 (ELU-like or exp/log1p chains; Tanhshrink is tanh 6 + a
 * subtraction); Mish is x * tanh(softplus(x)) (10); SiLU is x * sigmoid (5).
 * They read N and always write O (the contract's N + O, in place too);
 * PReLU also reads its weights. */
#define PW_(f, r, s, w, p) \
    {                      \
        f, r, s, w, p      \
    }
#define NO_PW_ PW_(0, 0, 0, false, false)
#define NEW_ACT_(f) PW_(f, 1, 0, true, false)
#define ACT_ ts_mf_flops_pointwise, ts_mf_zero, ts_mf_dmas_pointwise
#define RF_PW_ ts_mf_rf_pointwise
#define RF_NA_ ts_mf_rf_not_applicable

/* clang-format off */
const family ts_mf_families[TS_MOD_KIND_COUNT] = {
    [TS_MOD_UNKNOWN] = {"unknown", false, false, false, NO_PW_,
        NULL, NULL, NULL, NULL},
    [TS_MOD_IDENTITY] = {"identity", false, false, false, NO_PW_,
        ts_mf_zero, ts_mf_zero, ts_mf_dmas_identity, RF_PW_},
    [TS_MOD_FLATTEN] = {"flatten", false, false, false, NO_PW_,
        ts_mf_zero, ts_mf_zero, ts_mf_dmas_copy_in, RF_PW_},
    [TS_MOD_LINEAR] = {"linear", false, false, false, NO_PW_,
        ts_mf_flops_linear, ts_mf_macs_linear, ts_mf_dmas_linear, RF_PW_},
    [TS_MOD_RELU] = {"relu", false, false, false, PW_(1, 1, 0, false, false),
        ACT_, RF_PW_},
    [TS_MOD_ELU] = {"elu", false, false, false, PW_(6, 1, 1, false, false),
        ACT_, RF_PW_},
    [TS_MOD_LEAKYRELU] = {"leakyrelu", false, false, false,
        PW_(4, 1, 1, false, false), ACT_, RF_PW_},
    [TS_MOD_RELU6] = {"relu6", false, false, false,
        PW_(2, 1, 0, false, false), ACT_, RF_PW_},
    [TS_MOD_TANH] = {"tanh", false, false, false, PW_(6, 2, 0, false, false),
        ACT_, RF_PW_},
    [TS_MOD_SIGMOID] = {"sigmoid", false, false, false,
        PW_(4, 1, 0, false, false), ACT_, RF_PW_},
    [TS_MOD_CONV] = {"conv", true, false, false, NO_PW_,
        ts_mf_flops_conv, ts_mf_macs_conv, ts_mf_dmas_conv, ts_mf_rf_conv},
    [TS_MOD_CONVTRANSPOSE] = {"convtranspose", true, false, false, NO_PW_,
        ts_mf_flops_convtranspose, ts_mf_macs_convtranspose,
        ts_mf_dmas_convtranspose, ts_mf_rf_convtranspose},
    [TS_MOD_BATCHNORM] = {"batchnorm", false, false, false, NO_PW_,
        ts_mf_flops_batchnorm, ts_mf_macs_batchnorm, ts_mf_dmas_batchnorm,
        RF_PW_},
    /* max pooling counts its comparisons as MACs too */
    [TS_MOD_MAXPOOL] = {"maxpool", true, false, false, NO_PW_,
        ts_mf_flops_maxpool, ts_mf_flops_maxpool, ts_mf_dmas_maxpool,
        ts_mf_rf_pool},
    [TS_MOD_AVGPOOL] = {"avgpool", true, false, false, NO_PW_,
        ts_mf_flops_avgpool, ts_mf_macs_avgpool, ts_mf_dmas_avgpool,
        ts_mf_rf_pool},
    [TS_MOD_ADAPTIVE_MAXPOOL] = {"adaptive_maxpool", true, false, false,
        NO_PW_, ts_mf_flops_adaptive_max, ts_mf_flops_adaptive_max,
        ts_mf_dmas_adaptive, ts_mf_rf_adaptive},
    [TS_MOD_ADAPTIVE_AVGPOOL] = {"adaptive_avgpool", true, false, false,
        NO_PW_, ts_mf_flops_adaptive_avg, ts_mf_macs_adaptive_avg,
        ts_mf_dmas_adaptive, ts_mf_rf_adaptive},
    [TS_MOD_DROPOUT] = {"dropout", false, false, false,
        PW_(0, 1, 1, false, false),
        ts_mf_flops_dropout, ts_mf_zero, ts_mf_dmas_pointwise, RF_PW_},
    /* LayerNorm normalizes over whole feature rows: no grid window. v0.2's
     * module_rf did not list it ("not supported", a diagnostic on every
     * model with a LayerNorm); the newest handling is unknown (contract
     * 2.1), so it follows its siblings GroupNorm and RMSNorm. */
    [TS_MOD_LAYERNORM] = {"layernorm", false, false, false, NO_PW_,
        ts_mf_flops_layernorm, ts_mf_macs_layernorm, ts_mf_dmas_layernorm,
        RF_NA_},
    [TS_MOD_MHA] = {"mha", false, false, true, NO_PW_,
        ts_mf_flops_mha, ts_mf_macs_mha, ts_mf_dmas_mha, RF_NA_},

    [TS_MOD_HARDTANH] = {"hardtanh", false, false, false, NEW_ACT_(2),
        ACT_, RF_PW_},
    [TS_MOD_THRESHOLD] = {"threshold", false, false, false, NEW_ACT_(2),
        ACT_, RF_PW_},
    [TS_MOD_HARDSHRINK] = {"hardshrink", false, false, false, NEW_ACT_(3),
        ACT_, RF_PW_},
    [TS_MOD_SOFTSIGN] = {"softsign", false, false, false, NEW_ACT_(3),
        ACT_, RF_PW_},
    [TS_MOD_HARDSIGMOID] = {"hardsigmoid", false, false, false, NEW_ACT_(4),
        ACT_, RF_PW_},
    [TS_MOD_PRELU] = {"prelu", false, false, false,
        PW_(4, 1, 0, true, true), ACT_, RF_PW_},
    [TS_MOD_RRELU] = {"rrelu", false, false, false, NEW_ACT_(4),
        ts_mf_flops_rrelu, ts_mf_zero, ts_mf_dmas_pointwise, RF_PW_},
    [TS_MOD_HARDSWISH] = {"hardswish", false, false, false, NEW_ACT_(5),
        ACT_, RF_PW_},
    [TS_MOD_SOFTSHRINK] = {"softshrink", false, false, false, NEW_ACT_(5),
        ACT_, RF_PW_},
    [TS_MOD_CELU] = {"celu", false, false, false, NEW_ACT_(7), ACT_, RF_PW_},
    [TS_MOD_SELU] = {"selu", false, false, false, NEW_ACT_(7), ACT_, RF_PW_},
    [TS_MOD_LOGSIGMOID] = {"logsigmoid", false, false, false, NEW_ACT_(7),
        ACT_, RF_PW_},
    [TS_MOD_SOFTPLUS] = {"softplus", false, false, false, NEW_ACT_(7),
        ACT_, RF_PW_},
    [TS_MOD_TANHSHRINK] = {"tanhshrink", false, false, false, NEW_ACT_(7),
        ACT_, RF_PW_},
    [TS_MOD_MISH] = {"mish", false, false, false, NEW_ACT_(10),
        ACT_, RF_PW_},
    /* GELU: 5 (exact, erf) or 14 (tanh approximation) per element */
    [TS_MOD_GELU] = {"gelu", false, false, false, NEW_ACT_(5),
        ts_mf_flops_gelu, ts_mf_zero, ts_mf_dmas_pointwise, RF_PW_},
    [TS_MOD_SILU] = {"silu", false, false, false, NEW_ACT_(5),
        ACT_, RF_PW_},
    /* Softmax family: per-element and per-row costs live in
     * module_formulas_pointwise.c (softmax_costs) */
    [TS_MOD_SOFTMAX] = {"softmax", false, false, false, NO_PW_,
        ts_mf_flops_softmax, ts_mf_zero, ts_mf_dmas_softmax, RF_PW_},
    [TS_MOD_SOFTMAX2D] = {"softmax2d", false, false, false, NO_PW_,
        ts_mf_flops_softmax, ts_mf_zero, ts_mf_dmas_softmax, RF_PW_},
    [TS_MOD_LOGSOFTMAX] = {"logsoftmax", false, false, false, NO_PW_,
        ts_mf_flops_softmax, ts_mf_zero, ts_mf_dmas_softmax, RF_PW_},
    [TS_MOD_SOFTMIN] = {"softmin", false, false, false, NO_PW_,
        ts_mf_flops_softmax, ts_mf_zero, ts_mf_dmas_softmax, RF_PW_},
    /* GLU halves one axis: its receptive field is not a grid window */
    [TS_MOD_GLU] = {"glu", false, false, false, NEW_ACT_(0),
        ts_mf_flops_glu, ts_mf_zero, ts_mf_dmas_pointwise, RF_NA_},
    [TS_MOD_GROUPNORM] = {"groupnorm", false, false, false, NO_PW_,
        ts_mf_flops_groupnorm, ts_mf_macs_norm, ts_mf_dmas_groupnorm, RF_NA_},
    [TS_MOD_RMSNORM] = {"rmsnorm", false, false, false, NO_PW_,
        ts_mf_flops_rmsnorm, ts_mf_macs_norm, ts_mf_dmas_rmsnorm, RF_NA_},
    [TS_MOD_EMBEDDING] = {"embedding", false, false, false, NO_PW_,
        ts_mf_zero, ts_mf_zero, ts_mf_dmas_embedding, RF_NA_},
    [TS_MOD_UNFLATTEN] = {"unflatten", false, false, false, NO_PW_,
        ts_mf_zero, ts_mf_zero, ts_mf_zero, RF_NA_},
    [TS_MOD_PIXEL_SHUFFLE] = {"pixel_shuffle", false, false, false, NO_PW_,
        ts_mf_zero, ts_mf_zero, ts_mf_dmas_copy_out, RF_NA_},
    [TS_MOD_CHANNEL_SHUFFLE] = {"channel_shuffle", false, false, false,
        NO_PW_, ts_mf_zero, ts_mf_zero, ts_mf_dmas_copy_out, RF_NA_},
    [TS_MOD_UNFOLD] = {"unfold", false, false, false, NO_PW_,
        ts_mf_zero, ts_mf_zero, ts_mf_dmas_copy_out, RF_NA_},
    [TS_MOD_PAD] = {"pad", false, false, false, NO_PW_,
        ts_mf_zero, ts_mf_zero, ts_mf_dmas_copy_out, RF_NA_},
    [TS_MOD_CONSTANT_PAD] = {"constant_pad", false, false, false, NO_PW_,
        ts_mf_zero, ts_mf_zero, ts_mf_dmas_constant_pad, RF_NA_},
    [TS_MOD_UPSAMPLE] = {"upsample", false, false, false, NO_PW_,
        ts_mf_flops_upsample, ts_mf_macs_upsample, ts_mf_dmas_upsample,
        RF_NA_},
    [TS_MOD_TRANSFORMER_ENCODER_LAYER] = {"transformer_encoder_layer", false,
        false, true, NO_PW_, ts_mf_flops_transformer, ts_mf_macs_transformer,
        ts_mf_dmas_transformer, RF_NA_},
    [TS_MOD_TRANSFORMER_DECODER_LAYER] = {"transformer_decoder_layer", false,
        true, true, NO_PW_, ts_mf_flops_transformer, ts_mf_macs_transformer,
        ts_mf_dmas_transformer, RF_NA_},
    [TS_MOD_TRANSFORMER_ENCODER] = {"transformer_encoder", false, false, true,
        NO_PW_, ts_mf_flops_transformer, ts_mf_macs_transformer,
        ts_mf_dmas_transformer, RF_NA_},
    [TS_MOD_TRANSFORMER_DECODER] = {"transformer_decoder", false, true, true,
        NO_PW_, ts_mf_flops_transformer, ts_mf_macs_transformer,
        ts_mf_dmas_transformer, RF_NA_},
    [TS_MOD_TRANSFORMER] = {"transformer", false, true, true, NO_PW_,
        ts_mf_flops_transformer, ts_mf_macs_transformer,
        ts_mf_dmas_transformer, RF_NA_},

    [TS_MOD_EMBEDDING_BAG] = {"embedding_bag", false, false, false, NO_PW_,
        ts_mf_flops_embedding_bag, ts_mf_macs_embedding_bag,
        ts_mf_dmas_embedding_bag, RF_NA_},
    [TS_MOD_RNN] = {"rnn", false, true, false, NO_PW_,
        ts_mf_flops_rnn, ts_mf_macs_rnn, ts_mf_dmas_rnn, RF_NA_},
    [TS_MOD_RNN_CELL] = {"rnn_cell", false, false, false, NO_PW_,
        ts_mf_flops_rnn_cell, ts_mf_macs_rnn_cell, ts_mf_dmas_rnn_cell,
        RF_NA_},
    /* instance statistics span the whole grid: no window */
    [TS_MOD_INSTANCENORM] = {"instancenorm", true, false, false, NO_PW_,
        ts_mf_flops_instancenorm, ts_mf_macs_instancenorm,
        ts_mf_dmas_instancenorm, RF_NA_},
    /* LRN mixes channels only: spatially pointwise */
    [TS_MOD_LOCAL_RESPONSE_NORM] = {"local_response_norm", false, false,
        false, NO_PW_, ts_mf_flops_lrn, ts_mf_macs_lrn, ts_mf_dmas_lrn,
        RF_PW_},
    [TS_MOD_BILINEAR] = {"bilinear", false, true, false, NO_PW_,
        ts_mf_flops_bilinear, ts_mf_macs_bilinear, ts_mf_dmas_bilinear,
        RF_PW_},
    [TS_MOD_COSINE_SIMILARITY] = {"cosine_similarity", false, true, false,
        NO_PW_, ts_mf_flops_cosine, ts_mf_macs_cosine,
        ts_mf_dmas_two_inputs, RF_NA_},
    [TS_MOD_PAIRWISE_DISTANCE] = {"pairwise_distance", false, true, false,
        NO_PW_, ts_mf_flops_pairwise, ts_mf_macs_pairwise,
        ts_mf_dmas_two_inputs, RF_NA_},
    /* Fold accumulates overlaps: its adds are its MACs (as pooling's) */
    [TS_MOD_FOLD] = {"fold", false, false, false, NO_PW_,
        ts_mf_flops_fold, ts_mf_flops_fold, ts_mf_dmas_read_write, RF_NA_},
    [TS_MOD_FEATURE_DROPOUT] = {"feature_dropout", false, false, false,
        PW_(0, 1, 1, false, false),
        ts_mf_flops_dropout, ts_mf_zero, ts_mf_dmas_pointwise, RF_PW_},
    [TS_MOD_ALPHA_DROPOUT] = {"alpha_dropout", false, false, false,
        PW_(0, 1, 1, false, false),
        ts_mf_flops_alpha_dropout, ts_mf_zero, ts_mf_dmas_pointwise, RF_PW_},
    /* unpooling scatters: the reference's upsampling trio (-k, 1/s, 0) */
    [TS_MOD_MAXUNPOOL] = {"maxunpool", true, false, false, NO_PW_,
        ts_mf_zero, ts_mf_zero, ts_mf_dmas_maxunpool, ts_mf_rf_convtranspose},
    [TS_MOD_LPPOOL] = {"lppool", true, false, false, NO_PW_,
        ts_mf_flops_lppool, ts_mf_macs_lppool, ts_mf_dmas_avgpool,
        ts_mf_rf_pool},
};
/* clang-format on */

/* ---- dispatch ---------------------------------------------------------- */

static void
set_unsupported(ts_estimate *e, const fctx *x)
{
    const char *name = x->c->type_name != NULL ? x->c->type_name : "?";
    e->kind = TS_EST_UNSUPPORTED;
    e->value = ts_int(0);
    if (x->d->refusal != NULL) {
        /* a native class whose forward is not the one its formula
         * describes: the reference's message, and why */
        snprintf(e->message,
                 sizeof e->message,
                 "Module type not supported: %s (%s)",
                 name,
                 x->d->refusal);
        return;
    }
    snprintf(
        e->message, sizeof e->message, "Module type not supported: %s", name);
}

static bool
shape_valid(const ts_shape *s)
{
    if (s->ndim < 0 || s->ndim > TS_MAX_DIMS) {
        return false;
    }
    for (int i = 0; i < s->ndim; i++) {
        if (s->dims[i] < 0) {
            return false;
        }
    }
    return true;
}

/* Formulas need concrete shapes of real, dense, strided tensors: complex,
 * nested and sparse calls are refused as the reference refuses them
 * (NotImplementedError). */
static bool
check_tensor(const ts_shape *s, const char *what, ts_estimate *e)
{
    if (!shape_valid(s)) {
        fail(e, "ValueError: %s has an invalid shape", what);
        return false;
    }
    if (!s->dense) {
        fail(e,
             "NotImplementedError: module formulas need a dense strided %s "
             "(not nested or sparse)",
             what);
        return false;
    }
    if (s->dtype == TS_DTYPE_COMPLEX) {
        fail(e, "NotImplementedError: module formulas need a real %s", what);
        return false;
    }
    return true;
}

/* The verdict shared by every metric of the call: the binding accepted the
 * configuration, tensors present and usable, element counts known, spatial
 * rank in range. */
static bool
precheck(fctx *x, const family *f, ts_estimate *e)
{
    const ts_module_call *c = x->c;
    if (x->d->refusal != NULL) {
        fail(e, "NotImplementedError: %s", x->d->refusal);
        return false;
    }
    if (!c->has_input || !c->has_output) {
        fail(e,
             "ValueError: the module call exposes no %s tensor",
             c->has_input ? "output" : "input");
        return false;
    }
    if (!check_tensor(&c->input, "input", e)
        || !check_tensor(&c->output, "output", e)) {
        return false;
    }
    if (x->d->kind == TS_MOD_MHA
        && (!check_tensor(&c->key, "key", e)
            || !check_tensor(&c->value, "value", e))) {
        return false;
    }
    if (f->second) {
        if (!c->has_second) {
            fail(e, "ValueError: the module call exposes no second tensor");
            return false;
        }
        if (!check_tensor(&c->second, "second input", e)) {
            return false;
        }
    }
    if (!ts_shape_numel(&c->input, &x->n)
        || !ts_shape_numel(&c->output, &x->o)) {
        fail(e, "OverflowError: tensor element count exceeds int64");
        return false;
    }
    if (f->spatial && (x->d->rank < 1 || x->d->rank > 3)) {
        fail(e, "ValueError: spatial rank %d is not 1, 2 or 3", x->d->rank);
        return false;
    }
    return true;
}

/* A missing formula outranks any problem with the call (the reference warns
 * "not supported" without looking at tensors); a failed verdict is shared
 * by every metric; only then does the formula run, under a fresh overflow
 * flag. */
static void
run_count(count_fn fn,
          const char *metric,
          fctx *x,
          const ts_estimate *verdict,
          ts_estimate *e)
{
    if (fn == NULL) {
        set_unsupported(e, x);
        return;
    }
    if (verdict->kind != TS_EST_COMPLETE) {
        *e = *verdict;
        return;
    }
    x->k.overflow = false;
    e->kind = TS_EST_COMPLETE;
    e->message[0] = '\0';
    int64_t value = fn(x, e);
    if (e->kind != TS_EST_COMPLETE) {
        return;
    }
    if (x->k.overflow) {
        fail(e,
             "OverflowError: %s of %s exceed the int64 range",
             metric,
             x->c->type_name != NULL ? x->c->type_name : "?");
        return;
    }
    if (value < 0) {
        /* sizes no module built by torch.nn has (a negative size, an empty
         * kernel) or shapes its call cannot have: a count, never */
        fail(e,
             "ValueError: %s of %s come out negative (%lld): the module's "
             "sizes and its call's shapes disagree",
             metric,
             x->c->type_name != NULL ? x->c->type_name : "?",
             (long long)value);
        return;
    }
    e->value = ts_int(value);
}

/* The trio is computed together and shares one outcome, so that the
 * caller can emit a single diagnostic for it. */
static void
run_rf(rf_fn fn, fctx *x, const ts_estimate *verdict, ts_module_estimates *out)
{
    ts_estimate status = {TS_EST_COMPLETE, {false, 0, 0.0}, ""};
    ts_number trio[3] = {ts_int(0), ts_int(0), ts_int(0)};
    if (fn == NULL) {
        set_unsupported(&status, x);
    }
    else if (fn == ts_mf_rf_not_applicable) {
        /* no spatial window whatever the call: never an error */
        fn(x, trio, &status);
    }
    else if (verdict->kind != TS_EST_COMPLETE) {
        status = *verdict;
    }
    else {
        x->k.overflow = false;
        fn(x, trio, &status);
        if (status.kind == TS_EST_COMPLETE && x->k.overflow) {
            fail(&status,
                 "OverflowError: receptive field of %s exceeds "
                 "the int64 range",
                 x->c->type_name != NULL ? x->c->type_name : "?");
        }
    }
    ts_estimate *slots[3] = {&out->rf, &out->stride, &out->padding};
    for (int i = 0; i < 3; i++) {
        *slots[i] = status;
        slots[i]->value = status.kind == TS_EST_COMPLETE ? trio[i] : ts_int(0);
    }
}

int
ts_module_estimate(const ts_module_desc *desc,
                   const ts_module_call *call,
                   ts_module_estimates *out)
{
    if (desc == NULL || call == NULL || out == NULL) {
        return TS_EINVAL;
    }
    memset(out, 0, sizeof *out);
    ts_estimate verdict = {TS_EST_COMPLETE, {false, 0, 0.0}, ""};
    if ((unsigned)desc->kind >= TS_MOD_KIND_COUNT) {
        fail(&verdict, "ValueError: invalid module kind %d", (int)desc->kind);
        out->flops = out->macs = out->dmas = verdict;
        out->rf = out->stride = out->padding = verdict;
        return TS_EINVAL;
    }
    const family *f = &ts_mf_families[desc->kind];
    fctx x = {.d = desc, .c = call};
    precheck(&x, f, &verdict);
    run_count(f->flops, "FLOPs", &x, &verdict, &out->flops);
    run_count(f->macs, "MACs", &x, &verdict, &out->macs);
    run_count(f->dmas, "DMAs", &x, &verdict, &out->dmas);
    run_rf(f->rf, &x, &verdict, out);
    return TS_OK;
}

const char *
ts_module_kind_name(ts_module_kind kind)
{
    if ((unsigned)kind >= TS_MOD_KIND_COUNT) {
        return "invalid";
    }
    return ts_mf_families[kind].name;
}

bool
ts_module_kind_owns_subtree(ts_module_kind kind)
{
    if ((unsigned)kind >= TS_MOD_KIND_COUNT) {
        return false;
    }
    return ts_mf_families[kind].subtree;
}
