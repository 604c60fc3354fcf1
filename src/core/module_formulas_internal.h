/* Private to the module-formula files: the call context, checked
 * arithmetic, the family table type and the formula functions each file
 * contributes to the table in module_formulas.c.
 *
 * All arithmetic goes through checked helpers that set a sticky overflow
 * flag: Python integers never overflow, so an int64 overflow here must
 * surface as an error rather than as a wrong count.
 */
#ifndef TORCHSCAN_MODULE_FORMULAS_INTERNAL_H
#define TORCHSCAN_MODULE_FORMULAS_INTERNAL_H

#include "calc.h"
#include "torchscan/module_formulas.h"

/* ---- call context and checked arithmetic ------------------------------- */

typedef struct fctx {
    const ts_module_desc *d;
    const ts_module_call *c;
    int64_t n; /* input elements (N) */
    int64_t o; /* output elements (O) */
    calc k;    /* the checked arithmetic's sticky overflow flag */
} fctx;

/* calc.h's operations on the call's flag: they return 0 and set it instead
 * of wrapping; the dispatcher turns a set flag into one OverflowError for
 * the metric. */
static inline int64_t
mul(fctx *x, int64_t a, int64_t b)
{
    return c_mul(&x->k, a, b);
}

static inline int64_t
add(fctx *x, int64_t a, int64_t b)
{
    return c_add(&x->k, a, b);
}

static inline int64_t
sub(fctx *x, int64_t a, int64_t b)
{
    return c_sub(&x->k, a, b);
}

static inline int64_t
sum_terms(fctx *x, const int64_t *terms, size_t count)
{
    int64_t total = 0;
    for (size_t i = 0; i < count; i++) {
        total = add(x, total, terms[i]);
    }
    return total;
}

static inline int64_t
prod_terms(fctx *x, const int64_t *terms, size_t count)
{
    return c_prod(&x->k, terms, (int)count);
}

/* SUM(x, a, b, ...) and PROD(x, a, b, ...): checked n-ary sum and product.
 * sizeof does not evaluate its operand, so each term is evaluated once. */
#define TERMS_(...) ((const int64_t[]){__VA_ARGS__})
#define COUNT_(...) (sizeof TERMS_(__VA_ARGS__) / sizeof(int64_t))
#define SUM(x, ...) sum_terms((x), TERMS_(__VA_ARGS__), COUNT_(__VA_ARGS__))
#define PROD(x, ...) prod_terms((x), TERMS_(__VA_ARGS__), COUNT_(__VA_ARGS__))

static inline int64_t
flag(bool b)
{
    return b ? 1 : 0;
}

static inline int64_t
max0(int64_t v)
{
    return v > 0 ? v : 0;
}

/* Exact division that treats an empty divisor as "no rows": callers use it
 * for row counts, where a zero-length axis means an empty tensor. */
static inline int64_t
div0(int64_t num, int64_t den)
{
    return den == 0 ? 0 : num / den;
}

/* Formats "<ExceptionType>: <text>", the shape of module_metric_error
 * messages, into an estimate. */
void ts_mf_fail(ts_estimate *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
#define fail ts_mf_fail

/* A ratio as the reference's true division gives it: exact integers stay
 * integers, anything else is the real quotient. */
ts_number ts_mf_ratio(int64_t num, int64_t den);

/* Parameter elements P, as module.parameters() yields them: the binding
 * reads them so that parametrized or subclassed weights count as stored. */
static inline int64_t
params(const fctx *x)
{
    return x->d->param_numel;
}

/* Product of the first `count` dims of a shape (checked). */
int64_t ts_mf_prod_dims(fctx *x, const ts_shape *s, int from, int to);

/* A dim argument wrapped into [0, ndim) as PyTorch wraps it; false (with a
 * ValueError/IndexError in e) when out of range. */
bool ts_mf_wrap_dim(int64_t dim, int ndim, int *out, ts_estimate *e);

/* Nominal kernel volume K (int kernels stand for k in every axis). */
int64_t ts_mf_kernel_volume(fctx *x);

/* Exact adaptive-pooling visits over the last `rank` axes. */
int64_t ts_mf_adaptive_visits(fctx *x, int rank, ts_estimate *e);

/* ---- the family table -------------------------------------------------- */

typedef int64_t (*count_fn)(fctx *x, ts_estimate *e);
typedef void (*rf_fn)(fctx *x, ts_number trio[3], ts_estimate *e);

/* Per-element constants of the pointwise activations. */
typedef struct pointwise {
    int64_t flops;   /* operations per input element */
    int64_t reads;   /* input reads per element */
    int64_t scalars; /* scalar parameters read once (alpha, slope, p) */
    bool writes;     /* always writes O, even in place (newer activations) */
    bool weights;    /* reads its parameters (PReLU) */
} pointwise;

typedef struct family {
    const char *name;
    bool spatial; /* needs desc->rank in 1..3 */
    bool second;  /* needs call->second (a second input tensor) */
    bool subtree; /* the estimates cover the module's children */
    pointwise pw;
    count_fn flops, macs, dmas; /* NULL: no formula ("not supported") */
    rf_fn rf;                   /* NULL: no formula ("not supported") */
} family;

extern const family ts_mf_families[TS_MOD_KIND_COUNT];

/* Runs one family's count function on a sub-call (a Transformer's
 * attention, linear or norm), sharing the caller's overflow flag and error
 * slot. Element counts come from the sub-call's shapes. */
int64_t ts_mf_sub_count(fctx *x,
                        count_fn fn,
                        const ts_module_desc *d,
                        const ts_module_call *c,
                        ts_estimate *e);

/* ---- formula functions, by file ---------------------------------------- */

/* shared (module_formulas.c) */
int64_t ts_mf_zero(fctx *x, ts_estimate *e);
void ts_mf_rf_pointwise(fctx *x, ts_number trio[3], ts_estimate *e);
void ts_mf_rf_not_applicable(fctx *x, ts_number trio[3], ts_estimate *e);
void ts_mf_rf_window(fctx *x, ts_number trio[3], bool dilated);

/* module_formulas_dense.c: Linear, Bilinear, Conv, ConvTranspose and the
 * normalizations */
int64_t ts_mf_flops_linear(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_linear(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_linear(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_bilinear(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_bilinear(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_bilinear(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_conv(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_conv(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_conv(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_convtranspose(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_convtranspose(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_convtranspose(fctx *x, ts_estimate *e);
void ts_mf_rf_conv(fctx *x, ts_number trio[3], ts_estimate *e);
void ts_mf_rf_convtranspose(fctx *x, ts_number trio[3], ts_estimate *e);
int64_t ts_mf_flops_batchnorm(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_batchnorm(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_batchnorm(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_layernorm(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_layernorm(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_layernorm(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_groupnorm(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_norm(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_groupnorm(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_rmsnorm(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_rmsnorm(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_instancenorm(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_instancenorm(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_instancenorm(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_lrn(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_lrn(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_lrn(fctx *x, ts_estimate *e);

/* module_formulas_spatial.c: pooling, unpooling, upsampling, fold, layout
 * and embedding */
int64_t ts_mf_flops_maxpool(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_maxpool(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_avgpool(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_avgpool(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_avgpool(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_adaptive_max(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_adaptive_avg(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_adaptive_avg(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_adaptive(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_lppool(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_lppool(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_maxunpool(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_upsample(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_upsample(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_upsample(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_fold(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_read_write(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_identity(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_copy_in(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_copy_out(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_constant_pad(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_embedding(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_embedding_bag(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_embedding_bag(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_embedding_bag(fctx *x, ts_estimate *e);
void ts_mf_rf_pool(fctx *x, ts_number trio[3], ts_estimate *e);
void ts_mf_rf_adaptive(fctx *x, ts_number trio[3], ts_estimate *e);

/* module_formulas_pointwise.c: activations, softmax, dropout, distances */
int64_t ts_mf_flops_pointwise(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_pointwise(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_rrelu(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_gelu(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_glu(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_softmax(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_softmax(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_dropout(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_alpha_dropout(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_cosine(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_cosine(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_two_inputs(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_pairwise(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_pairwise(fctx *x, ts_estimate *e);

/* module_formulas_sequence.c: attention, recurrent and Transformer
 * families */
int64_t ts_mf_flops_mha(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_mha(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_mha(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_rnn(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_rnn(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_rnn(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_rnn_cell(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_rnn_cell(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_rnn_cell(fctx *x, ts_estimate *e);
int64_t ts_mf_flops_transformer(fctx *x, ts_estimate *e);
int64_t ts_mf_macs_transformer(fctx *x, ts_estimate *e);
int64_t ts_mf_dmas_transformer(fctx *x, ts_estimate *e);

#endif /* TORCHSCAN_MODULE_FORMULAS_INTERNAL_H */
