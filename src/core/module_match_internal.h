/* Private to the three files of the block matcher (module_match.h):
 * module_match.c (the operator table, sorting a call's operators out, the
 * signatures' order and the matching), module_match_native.c (the
 * signatures that answer with a torch.nn family's formulas) and
 * module_match_structural.c (the structures counted by one rule). Shared
 * here: the operator codes and classes, checked arithmetic, readers of
 * recorded arguments, and the estimates' helpers. */
#ifndef TORCHSCAN_MODULE_MATCH_INTERNAL_H
#define TORCHSCAN_MODULE_MATCH_INTERNAL_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calc.h"
#include "torchscan/module_match.h"

#define METHOD_PREFIX "torchscan_module_formula:signature_"

/* What an operator is to the signatures. */
typedef enum {
    OPC_OTHER = 0,
    OPC_VIEW,        /* a view: no data moves */
    OPC_COPY,        /* moves data: clone, casts, cat, padding */
    OPC_CREATE,      /* creates a tensor from sizes or constants */
    OPC_ELEMENTWISE, /* one result per output element */
    OPC_ACT,         /* an activation or softmax of a torch.nn family */
    OPC_REDUCE,      /* reductions, sorts, top-k, histograms */
    OPC_MATMUL,      /* matrix products */
    OPC_SDPA,        /* fused scaled-dot-product attention kernels */
    OPC_LAYER,       /* norms, convolution, lookups */
    OPC_INTERP,      /* interpolation: upsample_*, grid_sampler_2d */
    OPC_ROI,         /* region pooling: torchvision's roi_align, roi_pool */
    OPC_SELECT,      /* data-dependent selection: nms, nonzero, unique */
    OPC_READBACK,    /* a value read back to Python (.item()): no work */
    OPC_CHILD,       /* not an operator: a child module's call */
} op_class;

/* Codes in the table's (sorted) order: code - 1 is the row. */
enum {
    M_NONE = TS_MOP_OTHER,
    M_ADAPTIVE_AVG_POOL2D_IMPL,
    M_GROUPED_MM,
    M_LOCAL_SCALAR_DENSE,
    M_LOG_SOFTMAX,
    M_NATIVE_BATCH_NORM_LEGIT,
    M_NATIVE_BATCH_NORM_LEGIT_NO_TRAINING,
    M_PRELU_KERNEL,
    M_RESHAPE_ALIAS,
    M_SAFE_SOFTMAX,
    M_SCALED_DOT_PRODUCT_CUDNN_ATTENTION,
    M_SCALED_DOT_PRODUCT_EFFICIENT_ATTENTION,
    M_SCALED_DOT_PRODUCT_FLASH_ATTENTION,
    M_SCALED_DOT_PRODUCT_FLASH_ATTENTION_FOR_CPU,
    M_SOFTMAX,
    M_TO_COPY,
    M_UNIQUE2,
    M_UNSAFE_VIEW,
    M_UPSAMPLE_NEAREST_EXACT1D,
    M_UPSAMPLE_NEAREST_EXACT2D,
    M_UPSAMPLE_NEAREST_EXACT3D,
    M_WEIGHT_NORM_INTERFACE,
    M_ABS,
    M_ADAPTIVE_AVG_POOL2D,
    M_ADD,
    M_ADDCDIV,
    M_ADDCMUL,
    M_ADDMM,
    M_ALIAS,
    M_ALL,
    M_AMAX,
    M_AMIN,
    M_ANY,
    M_ARANGE,
    M_ARGMAX,
    M_ARGMIN,
    M_AS_STRIDED,
    M_AVG_POOL2D,
    M_BADDBMM,
    M_BITWISE_AND,
    M_BITWISE_NOT,
    M_BITWISE_OR,
    M_BMM,
    M_CAT,
    M_CEIL,
    M_CELU,
    M_CHUNK,
    M_CLAMP,
    M_CLAMP_MAX,
    M_CLAMP_MIN,
    M_CLONE,
    M_CONSTANT_PAD_ND,
    M_CONTIGUOUS,
    M_CONVOLUTION,
    M_COPY,
    M_COS,
    M_CUMSUM,
    M_DETACH,
    M_DIAGONAL,
    M_DIV,
    M_ELU,
    M_EMBEDDING,
    M_EMPTY,
    M_EMPTY_LIKE,
    M_EMPTY_STRIDED,
    M_EQ,
    M_ERF,
    M_EXP,
    M_EXPAND,
    M_EXPAND_AS,
    M_EXPM1,
    M_FILL,
    M_FLIP,
    M_FLOOR,
    M_FLOOR_DIVIDE,
    M_FMOD,
    M_FULL,
    M_FULL_LIKE,
    M_GATHER,
    M_GE,
    M_GELU,
    M_GLU,
    M_GRID_SAMPLER_2D,
    M_GT,
    M_HARDSHRINK,
    M_HARDSIGMOID,
    M_HARDSWISH,
    M_HARDTANH,
    M_HISTC,
    M_INDEX,
    M_INDEX_PUT,
    M_INDEX_SELECT,
    M_LE,
    M_LEAKY_RELU,
    M_LIFT_FRESH,
    M_LIFT_FRESH_COPY,
    M_LINALG_VECTOR_NORM,
    M_LINSPACE,
    M_LOG,
    M_LOG1P,
    M_LOG2,
    M_LOG_SIGMOID_FORWARD,
    M_LOGICAL_AND,
    M_LOGICAL_NOT,
    M_LOGICAL_OR,
    M_LT,
    M_MASKED_FILL,
    M_MASKED_SCATTER,
    M_MASKED_SELECT,
    M_MATMUL,
    M_MAX,
    M_MAX_POOL2D,
    M_MAX_POOL2D_WITH_INDICES,
    M_MAXIMUM,
    M_MEAN,
    M_MIN,
    M_MINIMUM,
    M_MISH,
    M_MM,
    M_MOVEDIM,
    M_MUL,
    M_NARROW,
    M_NATIVE_BATCH_NORM,
    M_NATIVE_GROUP_NORM,
    M_NATIVE_LAYER_NORM,
    M_NE,
    M_NEG,
    M_NEW_EMPTY,
    M_NEW_FULL,
    M_NEW_ONES,
    M_NEW_ZEROS,
    M_NONZERO,
    M_NORM,
    M_ONES,
    M_ONES_LIKE,
    M_PERMUTE,
    M_POW,
    M_PRELU,
    M_PROD,
    M_RAND,
    M_RANDN,
    M_RECIPROCAL,
    M_RELU,
    M_RELU6,
    M_REMAINDER,
    M_REPEAT,
    M_ROLL,
    M_ROUND,
    M_RSQRT,
    M_RSUB,
    M_SCALAR_TENSOR,
    M_SCATTER,
    M_SELECT,
    M_SELU,
    M_SIGMOID,
    M_SIGN,
    M_SILU,
    M_SIN,
    M_SLICE,
    M_SOFTPLUS,
    M_SOFTSHRINK,
    M_SORT,
    M_SPLIT,
    M_SPLIT_WITH_SIZES,
    M_SQRT,
    M_SQUARE,
    M_SQUEEZE,
    M_STACK,
    M_STD,
    M_SUB,
    M_SUM,
    M_T,
    M_TANH,
    M_THRESHOLD,
    M_TOPK,
    M_TRANSPOSE,
    M_TRIL,
    M_TRIU,
    M_TRUNC,
    M_UNBIND,
    M_UNFOLD,
    M_UNIQUE_CONSECUTIVE,
    M_UNIQUE_DIM,
    M_UNSQUEEZE,
    M_UPSAMPLE_BICUBIC2D,
    M_UPSAMPLE_BILINEAR2D,
    M_UPSAMPLE_LINEAR1D,
    M_UPSAMPLE_NEAREST1D,
    M_UPSAMPLE_NEAREST2D,
    M_UPSAMPLE_NEAREST3D,
    M_UPSAMPLE_TRILINEAR3D,
    M_VAR,
    M_VIEW,
    M_VIEW_AS_COMPLEX,
    M_VIEW_AS_REAL,
    M_WHERE,
    M_ZEROS,
    M_ZEROS_LIKE,
    M_NMS,
    M_PS_ROI_ALIGN,
    M_PS_ROI_POOL,
    M_ROI_ALIGN,
    M_ROI_POOL,
    M_COUNT
};

typedef struct op_info {
    const char *name; /* out-of-place packet name */
    int code;
    op_class cls;
    ts_module_kind kind; /* OPC_ACT: the family it computes */
} op_info;

/* The table row of an operator's code (an empty row for the others), and
 * its class (OPC_CHILD for a child's call). */
const op_info *ts_mm_info_of(const ts_match_op *op);
op_class ts_mm_class_of(const ts_match_op *op);
#define info_of ts_mm_info_of
#define class_of ts_mm_class_of

/* ---- checked arithmetic and operator helpers ---------------------------- */

/* calc, c_add, c_mul: calc.h. c_numel here: 0 for no shape. */

static inline int64_t
c_numel(calc *c, const ts_shape *s)
{
    int64_t n = 0;
    if (s == NULL || s->ndim < 0) {
        return 0;
    }
    if (!ts_shape_numel(s, &n)) {
        c->overflow = true;
        return 0;
    }
    return n;
}

static inline const ts_op_arg *
arg(const ts_match_op *op, int i)
{
    static const ts_op_arg absent = {TS_ARG_ABSENT};
    return i < op->nargs ? &op->args[i] : &absent;
}

/* Argument i as a tensor shape, or NULL. */
static inline const ts_shape *
tensor(const ts_match_op *op, int i)
{
    const ts_op_arg *a = arg(op, i);
    return a->kind == TS_ARG_TENSOR && a->tensor.ndim >= 0 ? &a->tensor : NULL;
}

static inline const ts_shape *
out0(const ts_match_op *op)
{
    return op->nouts > 0 && op->outs[0].ndim >= 0 ? &op->outs[0] : NULL;
}

/* A Python number argument (int, float or bool) into *v. */
static inline bool
number(const ts_match_op *op, int i, double *v)
{
    const ts_op_arg *a = arg(op, i);
    if (a->kind == TS_ARG_REAL) {
        *v = a->r;
        return true;
    }
    if (a->kind == TS_ARG_INT || a->kind == TS_ARG_BOOL) {
        *v = (double)a->i;
        return true;
    }
    return false;
}

static inline bool
flag_arg(const ts_match_op *op, int i, bool otherwise)
{
    const ts_op_arg *a = arg(op, i);
    return a->kind == TS_ARG_BOOL || a->kind == TS_ARG_INT ? a->i != 0
                                                           : otherwise;
}

/* A scalar operand: a Python number or a tensor of one element. */
static inline bool
scalar_operand(const ts_match_op *op, int i)
{
    double v;
    const ts_shape *t = tensor(op, i);
    int64_t n;
    if (number(op, i, &v)) {
        return true;
    }
    return t != NULL && ts_shape_numel(t, &n) && n == 1;
}

static inline int64_t
numel_or(const ts_shape *s, int64_t otherwise)
{
    int64_t n;
    return s != NULL && ts_shape_numel(s, &n) ? n : otherwise;
}

/* Elements an operator reads (every tensor argument) and writes. */
static inline int64_t
traffic(calc *c, const ts_match_op *op)
{
    int64_t total = 0;
    for (int i = 0; i < op->nargs; i++) {
        const ts_op_arg *a = &op->args[i];
        if (a->kind == TS_ARG_TENSOR) {
            total = c_add(c, total, c_numel(c, &a->tensor));
        }
        else if (a->kind == TS_ARG_TENSORS && a->numel_sum > 0) {
            total = c_add(c, total, a->numel_sum);
        }
    }
    for (int i = 0; i < op->nouts && i < 2; i++) {
        total = c_add(c, total, c_numel(c, &op->outs[i]));
    }
    return total;
}

/* ---- estimates (module_match.c) ----------------------------------------- */

/* A complete count, or an OverflowError when `c` overflowed. */
void ts_mm_set_count(ts_estimate *e, calc *c, int64_t value);
/* Adds `extra` to a complete integer estimate (a family formula's). */
void ts_mm_add_extra(ts_estimate *e, int64_t extra);
/* The receptive-field trio: (rf, 1, 0) when complete, else `kind`. */
void ts_mm_set_trio(ts_module_estimates *est, ts_est_kind kind, int64_t rf);
/* The estimates of a family's formulas on the given shapes. */
bool ts_mm_family(ts_module_desc *desc,
                  const ts_shape *input,
                  const ts_shape *output,
                  ts_module_estimates *est);
#define set_count ts_mm_set_count
#define add_extra ts_mm_add_extra
#define set_trio ts_mm_set_trio
#define family ts_mm_family

/* ---- the call's operators, sorted out once ------------------------------ */

#define MAX_SIGNIFICANT 512

typedef struct ops_view {
    const ts_match_call *call;
    /* the operators that compute (not views, copies or creations) */
    const ts_match_op *sig[MAX_SIGNIFICANT];
    size_t n;
    size_t views, copies, creations, aliases;
    size_t readbacks; /* values read back to Python (.item()) */
    bool truncated;   /* more computing operators than sig[] holds */
    size_t children;  /* child calls among the operators (composites) */
    /* elements copies write (a copy reads and writes each: 2 DMAs) */
    int64_t copied;
    bool all_counted; /* torchscan_flops_v1 counts every operator */
    calc c;
} ops_view;

static inline bool
is(const ops_view *v, size_t i, int code)
{
    return i < v->n && v->sig[i]->code == code;
}

static inline bool
has_code(const ops_view *v, int code)
{
    for (size_t i = 0; i < v->n; i++) {
        if (v->sig[i]->code == code) {
            return true;
        }
    }
    return false;
}

/* ---- structural counts (module_match_structural.c) ---------------------- */

/* The counts of a structural signature. */
typedef struct tally {
    int64_t flops, macs, dmas;
    size_t cores;    /* attention cores counted */
    size_t products; /* matrix products outside cores */
} tally;

/* A matrix product outside an attention core by the module convention
 * (2K - 1 per output, + 1 for addmm/baddbmm's bias; K MACs per output);
 * false for an operator that is not one. */
bool ts_mm_add_product(calc *c, const ts_match_op *op, tally *t);
/* The estimates of a tally: FLOPs, MACs, DMAs; the receptive-field trio
 * pointwise (1, 1, 0) or not applicable. */
void ts_mm_set_tally(ops_view *v,
                     const tally *t,
                     ts_match_result *r,
                     bool pointwise);
#define add_product ts_mm_add_product
#define set_tally ts_mm_set_tally

/* ---- the signatures ------------------------------------------------------
 */

/* Each fills *r and returns true when the call's operators are its own. */
bool ts_mm_sig_identity(ops_view *v, ts_match_result *r);
bool ts_mm_sig_layout(ops_view *v, ts_match_result *r);
bool ts_mm_sig_activation(ops_view *v, ts_match_result *r);
bool ts_mm_sig_norm(ops_view *v, ts_match_result *r);
bool ts_mm_sig_rmsnorm(ops_view *v, ts_match_result *r);
bool ts_mm_sig_linear(ops_view *v, ts_match_result *r);
bool ts_mm_sig_conv(ops_view *v, ts_match_result *r);
bool ts_mm_sig_pool(ops_view *v, ts_match_result *r);
bool ts_mm_sig_embedding(ops_view *v, ts_match_result *r);
bool ts_mm_sig_weight_norm(ops_view *v, ts_match_result *r);
bool ts_mm_sig_rotary(ops_view *v, ts_match_result *r);
bool ts_mm_sig_pointwise(ops_view *v, ts_match_result *r);
bool ts_mm_sig_router(ops_view *v, ts_match_result *r);
bool ts_mm_sig_attention(ops_view *v, ts_match_result *r);
bool ts_mm_sig_experts(ops_view *v, ts_match_result *r);
bool ts_mm_sig_grid(ops_view *v, ts_match_result *r);
bool ts_mm_sig_resample(ops_view *v, ts_match_result *r);
bool ts_mm_sig_roi_pool(ops_view *v, ts_match_result *r);
bool ts_mm_sig_postprocess(ops_view *v, ts_match_result *r);
bool ts_mm_sig_correlation(ops_view *v, ts_match_result *r);

#endif
