/* Library blocks matched by their operators (module_match.h): the table of
 * operators the signatures know, the signatures in matching order, and the
 * estimates each one gives. Conventions: docs/module-formulas.md, "Blocks
 * matched by their operators".
 *
 * Two kinds of signature. A *native* signature recognizes exactly the
 * operators a torch.nn class dispatches (an RMSNorm, a LayerNorm, an
 * activation, a Linear, a convolution, an Embedding) and answers with that
 * family's formulas (module_formulas.h). A *structural* signature recognizes
 * a structure with a convention of its own (an attention core, a rotary
 * embedding, a Mixture-of-Experts router or expert bank, a chain of
 * elementwise operators) and counts the call by one rule: matrix products by
 * the module convention (2K - 1 operations per output, Linear's), attention
 * cores by MultiheadAttention's terms, and every other operator as
 * torchscan_flops_v1 counts it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "torchscan/module_match.h"

#define METHOD_PREFIX "torchscan_module_formula:signature_"

/* ---- the operators ------------------------------------------------------ */

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
    OPC_CHILD,       /* not an operator: a child module's call */
} op_class;

/* Codes in the table's (sorted) order: code - 1 is the row. */
enum {
    M_NONE = TS_MOP_OTHER,
    M_ADAPTIVE_AVG_POOL2D_IMPL,
    M_GROUPED_MM,
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
    M_UNSAFE_VIEW,
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
    M_LOG,
    M_LOG1P,
    M_LOG_SIGMOID_FORWARD,
    M_LOGICAL_AND,
    M_LOGICAL_NOT,
    M_LOGICAL_OR,
    M_LT,
    M_MASKED_FILL,
    M_MASKED_SCATTER,
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
    M_TRUNC,
    M_UNBIND,
    M_UNFOLD,
    M_UNSQUEEZE,
    M_VAR,
    M_VIEW,
    M_VIEW_AS_COMPLEX,
    M_VIEW_AS_REAL,
    M_WHERE,
    M_ZEROS,
    M_ZEROS_LIKE,
    M_COUNT
};

typedef struct op_info {
    const char *name; /* out-of-place packet name */
    int code;
    op_class cls;
    ts_module_kind kind; /* OPC_ACT: the family it computes */
} op_info;

/* Sorted by strcmp (binary search); tests/c/test_module_match.c checks the
 * order and that every row's code is its position + 1. */
static const op_info op_table[] = {
    {"aten._adaptive_avg_pool2d", M_ADAPTIVE_AVG_POOL2D_IMPL, OPC_LAYER, 0},
    {"aten._grouped_mm", M_GROUPED_MM, OPC_MATMUL, 0},
    {"aten._log_softmax", M_LOG_SOFTMAX, OPC_ACT, TS_MOD_LOGSOFTMAX},
    {"aten._native_batch_norm_legit", M_NATIVE_BATCH_NORM_LEGIT, OPC_LAYER, 0},
    {"aten._native_batch_norm_legit_no_training",
     M_NATIVE_BATCH_NORM_LEGIT_NO_TRAINING,
     OPC_LAYER,
     0},
    {"aten._prelu_kernel", M_PRELU_KERNEL, OPC_ACT, TS_MOD_PRELU},
    {"aten._reshape_alias", M_RESHAPE_ALIAS, OPC_VIEW, 0},
    {"aten._safe_softmax", M_SAFE_SOFTMAX, OPC_ACT, TS_MOD_SOFTMAX},
    {"aten._scaled_dot_product_cudnn_attention",
     M_SCALED_DOT_PRODUCT_CUDNN_ATTENTION,
     OPC_SDPA,
     0},
    {"aten._scaled_dot_product_efficient_attention",
     M_SCALED_DOT_PRODUCT_EFFICIENT_ATTENTION,
     OPC_SDPA,
     0},
    {"aten._scaled_dot_product_flash_attention",
     M_SCALED_DOT_PRODUCT_FLASH_ATTENTION,
     OPC_SDPA,
     0},
    {"aten._scaled_dot_product_flash_attention_for_cpu",
     M_SCALED_DOT_PRODUCT_FLASH_ATTENTION_FOR_CPU,
     OPC_SDPA,
     0},
    {"aten._softmax", M_SOFTMAX, OPC_ACT, TS_MOD_SOFTMAX},
    {"aten._to_copy", M_TO_COPY, OPC_COPY, 0},
    {"aten._unsafe_view", M_UNSAFE_VIEW, OPC_VIEW, 0},
    {"aten._weight_norm_interface", M_WEIGHT_NORM_INTERFACE, OPC_LAYER, 0},
    {"aten.abs", M_ABS, OPC_ELEMENTWISE, 0},
    {"aten.adaptive_avg_pool2d", M_ADAPTIVE_AVG_POOL2D, OPC_LAYER, 0},
    {"aten.add", M_ADD, OPC_ELEMENTWISE, 0},
    {"aten.addcdiv", M_ADDCDIV, OPC_ELEMENTWISE, 0},
    {"aten.addcmul", M_ADDCMUL, OPC_ELEMENTWISE, 0},
    {"aten.addmm", M_ADDMM, OPC_MATMUL, 0},
    {"aten.alias", M_ALIAS, OPC_VIEW, 0},
    {"aten.all", M_ALL, OPC_REDUCE, 0},
    {"aten.amax", M_AMAX, OPC_REDUCE, 0},
    {"aten.amin", M_AMIN, OPC_REDUCE, 0},
    {"aten.any", M_ANY, OPC_REDUCE, 0},
    {"aten.arange", M_ARANGE, OPC_CREATE, 0},
    {"aten.argmax", M_ARGMAX, OPC_REDUCE, 0},
    {"aten.argmin", M_ARGMIN, OPC_REDUCE, 0},
    {"aten.as_strided", M_AS_STRIDED, OPC_VIEW, 0},
    {"aten.avg_pool2d", M_AVG_POOL2D, OPC_LAYER, 0},
    {"aten.baddbmm", M_BADDBMM, OPC_MATMUL, 0},
    {"aten.bitwise_and", M_BITWISE_AND, OPC_ELEMENTWISE, 0},
    {"aten.bitwise_not", M_BITWISE_NOT, OPC_ELEMENTWISE, 0},
    {"aten.bitwise_or", M_BITWISE_OR, OPC_ELEMENTWISE, 0},
    {"aten.bmm", M_BMM, OPC_MATMUL, 0},
    {"aten.cat", M_CAT, OPC_COPY, 0},
    {"aten.ceil", M_CEIL, OPC_ELEMENTWISE, 0},
    {"aten.celu", M_CELU, OPC_ACT, TS_MOD_CELU},
    {"aten.chunk", M_CHUNK, OPC_VIEW, 0},
    {"aten.clamp", M_CLAMP, OPC_ELEMENTWISE, 0},
    {"aten.clamp_max", M_CLAMP_MAX, OPC_ELEMENTWISE, 0},
    {"aten.clamp_min", M_CLAMP_MIN, OPC_ELEMENTWISE, 0},
    {"aten.clone", M_CLONE, OPC_COPY, 0},
    {"aten.constant_pad_nd", M_CONSTANT_PAD_ND, OPC_COPY, 0},
    {"aten.contiguous", M_CONTIGUOUS, OPC_COPY, 0},
    {"aten.convolution", M_CONVOLUTION, OPC_LAYER, 0},
    {"aten.copy", M_COPY, OPC_COPY, 0},
    {"aten.cos", M_COS, OPC_ELEMENTWISE, 0},
    {"aten.cumsum", M_CUMSUM, OPC_REDUCE, 0},
    {"aten.detach", M_DETACH, OPC_VIEW, 0},
    {"aten.diagonal", M_DIAGONAL, OPC_VIEW, 0},
    {"aten.div", M_DIV, OPC_ELEMENTWISE, 0},
    {"aten.elu", M_ELU, OPC_ACT, TS_MOD_ELU},
    {"aten.embedding", M_EMBEDDING, OPC_LAYER, 0},
    {"aten.empty", M_EMPTY, OPC_CREATE, 0},
    {"aten.empty_like", M_EMPTY_LIKE, OPC_CREATE, 0},
    {"aten.empty_strided", M_EMPTY_STRIDED, OPC_CREATE, 0},
    {"aten.eq", M_EQ, OPC_ELEMENTWISE, 0},
    {"aten.erf", M_ERF, OPC_ELEMENTWISE, 0},
    {"aten.exp", M_EXP, OPC_ELEMENTWISE, 0},
    {"aten.expand", M_EXPAND, OPC_VIEW, 0},
    {"aten.expand_as", M_EXPAND_AS, OPC_VIEW, 0},
    {"aten.expm1", M_EXPM1, OPC_ELEMENTWISE, 0},
    {"aten.fill", M_FILL, OPC_CREATE, 0},
    {"aten.flip", M_FLIP, OPC_COPY, 0},
    {"aten.floor", M_FLOOR, OPC_ELEMENTWISE, 0},
    {"aten.floor_divide", M_FLOOR_DIVIDE, OPC_ELEMENTWISE, 0},
    {"aten.fmod", M_FMOD, OPC_ELEMENTWISE, 0},
    {"aten.full", M_FULL, OPC_CREATE, 0},
    {"aten.full_like", M_FULL_LIKE, OPC_CREATE, 0},
    {"aten.gather", M_GATHER, OPC_COPY, 0},
    {"aten.ge", M_GE, OPC_ELEMENTWISE, 0},
    {"aten.gelu", M_GELU, OPC_ACT, TS_MOD_GELU},
    {"aten.glu", M_GLU, OPC_ACT, TS_MOD_GLU},
    {"aten.gt", M_GT, OPC_ELEMENTWISE, 0},
    {"aten.hardshrink", M_HARDSHRINK, OPC_ACT, TS_MOD_HARDSHRINK},
    {"aten.hardsigmoid", M_HARDSIGMOID, OPC_ACT, TS_MOD_HARDSIGMOID},
    {"aten.hardswish", M_HARDSWISH, OPC_ACT, TS_MOD_HARDSWISH},
    {"aten.hardtanh", M_HARDTANH, OPC_ACT, TS_MOD_HARDTANH},
    {"aten.histc", M_HISTC, OPC_REDUCE, 0},
    {"aten.index", M_INDEX, OPC_LAYER, 0},
    {"aten.index_put", M_INDEX_PUT, OPC_COPY, 0},
    {"aten.index_select", M_INDEX_SELECT, OPC_COPY, 0},
    {"aten.le", M_LE, OPC_ELEMENTWISE, 0},
    {"aten.leaky_relu", M_LEAKY_RELU, OPC_ACT, TS_MOD_LEAKYRELU},
    {"aten.lift_fresh", M_LIFT_FRESH, OPC_CREATE, 0},
    {"aten.lift_fresh_copy", M_LIFT_FRESH_COPY, OPC_CREATE, 0},
    {"aten.linalg_vector_norm", M_LINALG_VECTOR_NORM, OPC_REDUCE, 0},
    {"aten.log", M_LOG, OPC_ELEMENTWISE, 0},
    {"aten.log1p", M_LOG1P, OPC_ELEMENTWISE, 0},
    {"aten.log_sigmoid_forward",
     M_LOG_SIGMOID_FORWARD,
     OPC_ACT,
     TS_MOD_LOGSIGMOID},
    {"aten.logical_and", M_LOGICAL_AND, OPC_ELEMENTWISE, 0},
    {"aten.logical_not", M_LOGICAL_NOT, OPC_ELEMENTWISE, 0},
    {"aten.logical_or", M_LOGICAL_OR, OPC_ELEMENTWISE, 0},
    {"aten.lt", M_LT, OPC_ELEMENTWISE, 0},
    {"aten.masked_fill", M_MASKED_FILL, OPC_ELEMENTWISE, 0},
    {"aten.masked_scatter", M_MASKED_SCATTER, OPC_COPY, 0},
    {"aten.matmul", M_MATMUL, OPC_MATMUL, 0},
    {"aten.max", M_MAX, OPC_REDUCE, 0},
    {"aten.max_pool2d", M_MAX_POOL2D, OPC_LAYER, 0},
    {"aten.max_pool2d_with_indices", M_MAX_POOL2D_WITH_INDICES, OPC_LAYER, 0},
    {"aten.maximum", M_MAXIMUM, OPC_ELEMENTWISE, 0},
    {"aten.mean", M_MEAN, OPC_REDUCE, 0},
    {"aten.min", M_MIN, OPC_REDUCE, 0},
    {"aten.minimum", M_MINIMUM, OPC_ELEMENTWISE, 0},
    {"aten.mish", M_MISH, OPC_ACT, TS_MOD_MISH},
    {"aten.mm", M_MM, OPC_MATMUL, 0},
    {"aten.movedim", M_MOVEDIM, OPC_VIEW, 0},
    {"aten.mul", M_MUL, OPC_ELEMENTWISE, 0},
    {"aten.narrow", M_NARROW, OPC_VIEW, 0},
    {"aten.native_batch_norm", M_NATIVE_BATCH_NORM, OPC_LAYER, 0},
    {"aten.native_group_norm", M_NATIVE_GROUP_NORM, OPC_LAYER, 0},
    {"aten.native_layer_norm", M_NATIVE_LAYER_NORM, OPC_LAYER, 0},
    {"aten.ne", M_NE, OPC_ELEMENTWISE, 0},
    {"aten.neg", M_NEG, OPC_ELEMENTWISE, 0},
    {"aten.new_empty", M_NEW_EMPTY, OPC_CREATE, 0},
    {"aten.new_full", M_NEW_FULL, OPC_CREATE, 0},
    {"aten.new_ones", M_NEW_ONES, OPC_CREATE, 0},
    {"aten.new_zeros", M_NEW_ZEROS, OPC_CREATE, 0},
    {"aten.norm", M_NORM, OPC_REDUCE, 0},
    {"aten.ones", M_ONES, OPC_CREATE, 0},
    {"aten.ones_like", M_ONES_LIKE, OPC_CREATE, 0},
    {"aten.permute", M_PERMUTE, OPC_VIEW, 0},
    {"aten.pow", M_POW, OPC_ELEMENTWISE, 0},
    {"aten.prelu", M_PRELU, OPC_ACT, TS_MOD_PRELU},
    {"aten.prod", M_PROD, OPC_REDUCE, 0},
    {"aten.rand", M_RAND, OPC_CREATE, 0},
    {"aten.randn", M_RANDN, OPC_CREATE, 0},
    {"aten.reciprocal", M_RECIPROCAL, OPC_ELEMENTWISE, 0},
    {"aten.relu", M_RELU, OPC_ACT, TS_MOD_RELU},
    {"aten.relu6", M_RELU6, OPC_ACT, TS_MOD_RELU6},
    {"aten.remainder", M_REMAINDER, OPC_ELEMENTWISE, 0},
    {"aten.repeat", M_REPEAT, OPC_COPY, 0},
    {"aten.roll", M_ROLL, OPC_COPY, 0},
    {"aten.round", M_ROUND, OPC_ELEMENTWISE, 0},
    {"aten.rsqrt", M_RSQRT, OPC_ELEMENTWISE, 0},
    {"aten.scalar_tensor", M_SCALAR_TENSOR, OPC_CREATE, 0},
    {"aten.scatter", M_SCATTER, OPC_COPY, 0},
    {"aten.select", M_SELECT, OPC_VIEW, 0},
    {"aten.selu", M_SELU, OPC_ACT, TS_MOD_SELU},
    {"aten.sigmoid", M_SIGMOID, OPC_ACT, TS_MOD_SIGMOID},
    {"aten.sign", M_SIGN, OPC_ELEMENTWISE, 0},
    {"aten.silu", M_SILU, OPC_ACT, TS_MOD_SILU},
    {"aten.sin", M_SIN, OPC_ELEMENTWISE, 0},
    {"aten.slice", M_SLICE, OPC_VIEW, 0},
    {"aten.softplus", M_SOFTPLUS, OPC_ACT, TS_MOD_SOFTPLUS},
    {"aten.softshrink", M_SOFTSHRINK, OPC_ACT, TS_MOD_SOFTSHRINK},
    {"aten.sort", M_SORT, OPC_REDUCE, 0},
    {"aten.split", M_SPLIT, OPC_VIEW, 0},
    {"aten.split_with_sizes", M_SPLIT_WITH_SIZES, OPC_VIEW, 0},
    {"aten.sqrt", M_SQRT, OPC_ELEMENTWISE, 0},
    {"aten.square", M_SQUARE, OPC_ELEMENTWISE, 0},
    {"aten.squeeze", M_SQUEEZE, OPC_VIEW, 0},
    {"aten.stack", M_STACK, OPC_COPY, 0},
    {"aten.std", M_STD, OPC_REDUCE, 0},
    {"aten.sub", M_SUB, OPC_ELEMENTWISE, 0},
    {"aten.sum", M_SUM, OPC_REDUCE, 0},
    {"aten.t", M_T, OPC_VIEW, 0},
    {"aten.tanh", M_TANH, OPC_ACT, TS_MOD_TANH},
    {"aten.threshold", M_THRESHOLD, OPC_ACT, TS_MOD_THRESHOLD},
    {"aten.topk", M_TOPK, OPC_REDUCE, 0},
    {"aten.transpose", M_TRANSPOSE, OPC_VIEW, 0},
    {"aten.trunc", M_TRUNC, OPC_ELEMENTWISE, 0},
    {"aten.unbind", M_UNBIND, OPC_VIEW, 0},
    {"aten.unfold", M_UNFOLD, OPC_VIEW, 0},
    {"aten.unsqueeze", M_UNSQUEEZE, OPC_VIEW, 0},
    {"aten.var", M_VAR, OPC_REDUCE, 0},
    {"aten.view", M_VIEW, OPC_VIEW, 0},
    {"aten.view_as_complex", M_VIEW_AS_COMPLEX, OPC_VIEW, 0},
    {"aten.view_as_real", M_VIEW_AS_REAL, OPC_VIEW, 0},
    {"aten.where", M_WHERE, OPC_ELEMENTWISE, 0},
    {"aten.zeros", M_ZEROS, OPC_CREATE, 0},
    {"aten.zeros_like", M_ZEROS_LIKE, OPC_CREATE, 0},
};

#define N_OPS (sizeof op_table / sizeof op_table[0])

int
ts_match_op_code(const char *packet_name)
{
    char name[96];
    size_t len, lo = 0, hi = N_OPS;
    if (packet_name == NULL) {
        return TS_MOP_OTHER;
    }
    len = strlen(packet_name);
    if (len == 0 || len >= sizeof name) {
        return TS_MOP_OTHER;
    }
    memcpy(name, packet_name, len + 1);
    if (name[len - 1] == '_') {
        name[len - 1] = '\0'; /* in place: the out-of-place packet */
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, op_table[mid].name);
        if (c == 0) {
            return op_table[mid].code;
        }
        if (c < 0) {
            hi = mid;
        }
        else {
            lo = mid + 1;
        }
    }
    return TS_MOP_OTHER;
}

const char *
ts_match_op_name(int code)
{
    return code > 0 && (size_t)code <= N_OPS ? op_table[code - 1].name : NULL;
}

static const op_info *
info_of(const ts_match_op *op)
{
    static const op_info other = {"", TS_MOP_OTHER, OPC_OTHER, TS_MOD_UNKNOWN};
    if (op->code <= 0 || (size_t)op->code > N_OPS) {
        return &other;
    }
    return &op_table[op->code - 1];
}

static op_class
class_of(const ts_match_op *op)
{
    return op->code == TS_MOP_CHILD ? OPC_CHILD : info_of(op)->cls;
}

/* ---- checked arithmetic and operator helpers ---------------------------- */

/* A sticky overflow flag: Python integers never overflow, so an int64
 * overflow makes the estimates an OverflowError rather than a wrong count. */
typedef struct calc {
    bool overflow;
} calc;

static int64_t
c_add(calc *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!ts_add(a, b, &r)) {
        c->overflow = true;
        return 0;
    }
    return r;
}

static int64_t
c_mul(calc *c, int64_t a, int64_t b)
{
    int64_t r;
    if (!ts_mul(a, b, &r)) {
        c->overflow = true;
        return 0;
    }
    return r;
}

static int64_t
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

static const ts_op_arg *
arg(const ts_match_op *op, int i)
{
    static const ts_op_arg absent = {TS_ARG_ABSENT};
    return i < op->nargs ? &op->args[i] : &absent;
}

/* Argument i as a tensor shape, or NULL. */
static const ts_shape *
tensor(const ts_match_op *op, int i)
{
    const ts_op_arg *a = arg(op, i);
    return a->kind == TS_ARG_TENSOR && a->tensor.ndim >= 0 ? &a->tensor : NULL;
}

static const ts_shape *
out0(const ts_match_op *op)
{
    return op->nouts > 0 && op->outs[0].ndim >= 0 ? &op->outs[0] : NULL;
}

/* A Python number argument (int, float or bool) into *v. */
static bool
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

static bool
flag_arg(const ts_match_op *op, int i, bool otherwise)
{
    const ts_op_arg *a = arg(op, i);
    return a->kind == TS_ARG_BOOL || a->kind == TS_ARG_INT ? a->i != 0
                                                           : otherwise;
}

/* A scalar operand: a Python number or a tensor of one element. */
static bool
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

static int64_t
numel_or(const ts_shape *s, int64_t otherwise)
{
    int64_t n;
    return s != NULL && ts_shape_numel(s, &n) ? n : otherwise;
}

/* Elements an operator reads (every tensor argument) and writes. */
static int64_t
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

/* ---- estimates ------------------------------------------------------------
 */

static void
set_count(ts_estimate *e, calc *c, int64_t value)
{
    memset(e, 0, sizeof *e);
    if (c->overflow) {
        e->kind = TS_EST_ERROR;
        snprintf(e->message,
                 sizeof e->message,
                 "OverflowError: the block's counts exceed the int64 range");
        return;
    }
    e->kind = TS_EST_COMPLETE;
    e->value = ts_int(value);
}

/* Adds `extra` to a complete integer estimate (a family formula's). */
static void
add_extra(ts_estimate *e, int64_t extra)
{
    int64_t r;
    if (e->kind != TS_EST_COMPLETE || e->value.is_real || extra == 0) {
        return;
    }
    if (!ts_add(e->value.i, extra, &r)) {
        e->kind = TS_EST_ERROR;
        snprintf(e->message,
                 sizeof e->message,
                 "OverflowError: the block's counts exceed the int64 range");
        return;
    }
    e->value = ts_int(r);
}

static void
set_trio(ts_module_estimates *est, ts_est_kind kind, int64_t rf)
{
    ts_estimate *slots[3] = {&est->rf, &est->stride, &est->padding};
    int64_t values[3] = {rf, 1, 0};
    for (int i = 0; i < 3; i++) {
        memset(slots[i], 0, sizeof *slots[i]);
        slots[i]->kind = kind;
        slots[i]->value = ts_int(kind == TS_EST_COMPLETE ? values[i] : 0);
    }
}

/* The estimates of a family's formulas on the given shapes. */
static bool
family(ts_module_desc *desc,
       const ts_shape *input,
       const ts_shape *output,
       ts_module_estimates *est)
{
    ts_module_call call;
    if (input == NULL || output == NULL) {
        return false;
    }
    memset(&call, 0, sizeof call);
    call.type_name = ts_module_kind_name(desc->kind);
    call.has_input = call.has_output = true;
    call.input = *input;
    call.output = *output;
    return ts_module_estimate(desc, &call, est) == TS_OK;
}

/* ---- the call's operators, sorted out once ------------------------------ */

#define MAX_SIGNIFICANT 512

typedef struct ops_view {
    const ts_match_call *call;
    /* the operators that compute (not views, copies or creations) */
    const ts_match_op *sig[MAX_SIGNIFICANT];
    size_t n;
    size_t views, copies, creations, aliases;
    size_t children; /* child calls among the operators (composites) */
    /* elements copies write (a copy reads and writes each: 2 DMAs) */
    int64_t copied;
    bool all_counted; /* torchscan_flops_v1 counts every operator */
    calc c;
} ops_view;

static bool
sort_out(const ts_match_call *call, ops_view *v)
{
    memset(v, 0, sizeof *v);
    v->call = call;
    v->all_counted = true;
    for (size_t i = 0; i < call->nops; i++) {
        const ts_match_op *op = &call->ops[i];
        v->all_counted &= op->counted;
        switch (class_of(op)) {
            case OPC_VIEW:
                v->views++;
                v->aliases += op->code == M_ALIAS || op->code == M_DETACH;
                break;
            case OPC_COPY:
                v->copies++;
                v->copied = c_add(&v->c, v->copied, c_numel(&v->c, out0(op)));
                break;
            case OPC_CREATE:
                v->creations++;
                break;
            case OPC_CHILD:
                v->children++;
                break;
            default:
                if (v->n == MAX_SIGNIFICANT) {
                    return false;
                }
                v->sig[v->n++] = op;
        }
    }
    return true;
}

static bool
is(const ops_view *v, size_t i, int code)
{
    return i < v->n && v->sig[i]->code == code;
}

/* ---- native signatures: a torch.nn family's own operators --------------- */

/* No operator but aliases: the module returns its input (drop-path and
 * stochastic depth in eval). Identity's formulas. */
static bool
sig_identity(ops_view *v, ts_match_result *r)
{
    ts_module_desc d;
    const ts_match_call *call = v->call;
    if (!call->leaf || v->aliases != call->nops || !call->has_input
        || !call->has_output
        || numel_or(&call->input, -1) != numel_or(&call->output, -2)) {
        return false;
    }
    memset(&d, 0, sizeof d);
    d.kind = TS_MOD_IDENTITY;
    return family(&d, &call->input, &call->output, &r->estimates);
}

/* Views, copies and creations only: a layout module (permutes, window
 * partitions, casts). 0 FLOPs and MACs; each copy reads and writes every
 * element it moves, a creation writes its elements. */
static bool
sig_layout(ops_view *v, ts_match_result *r)
{
    calc *c = &v->c;
    int64_t dmas = c_mul(c, 2, v->copied);
    if (!v->call->leaf || v->n != 0 || v->call->nops == 0 || !v->all_counted) {
        return false;
    }
    for (size_t i = 0; i < v->call->nops; i++) {
        const ts_match_op *op = &v->call->ops[i];
        if (class_of(op) == OPC_CREATE) {
            dmas = c_add(c, dmas, c_numel(c, out0(op)));
        }
    }
    set_count(&r->estimates.flops, c, 0);
    set_count(&r->estimates.macs, c, 0);
    set_count(&r->estimates.dmas, c, dmas);
    set_trio(&r->estimates, TS_EST_NOT_APPLICABLE, 0);
    return true;
}

/* One activation or softmax of a torch.nn family (GELUActivation,
 * SiLUActivation, timm's GELU and Sigmoid): that family's formulas on the
 * operator's shapes. */
static bool
sig_activation(ops_view *v, ts_match_result *r)
{
    const ts_match_op *op;
    const op_info *info;
    ts_module_desc d;
    if (!v->call->leaf || v->n != 1 || class_of(v->sig[0]) != OPC_ACT) {
        return false;
    }
    op = v->sig[0];
    info = info_of(op);
    memset(&d, 0, sizeof d);
    d.kind = info->kind;
    d.inplace = op->inplace;
    switch (op->code) {
        case M_GELU:
            d.approximate_tanh =
                arg(op, 1)->kind == TS_ARG_STR && arg(op, 1)->i == 1;
            break;
        case M_SOFTMAX:
        case M_SAFE_SOFTMAX:
        case M_LOG_SOFTMAX:
            if (arg(op, 1)->kind != TS_ARG_INT) {
                return false;
            }
            d.dim = arg(op, 1)->i;
            break;
        case M_GLU:
            d.dim = arg(op, 1)->kind == TS_ARG_INT ? arg(op, 1)->i : -1;
            break;
        case M_PRELU:
        case M_PRELU_KERNEL:
            if (tensor(op, 1) == NULL) {
                return false;
            }
            d.param_numel = numel_or(tensor(op, 1), 0);
            d.has_weight = true;
            break;
        case M_HARDTANH: {
            double lo = -1.0, hi = 1.0;
            (void)number(op, 1, &lo);
            (void)number(op, 2, &hi);
            d.kind = lo == 0.0 && hi == 6.0 ? TS_MOD_RELU6 : TS_MOD_HARDTANH;
            break;
        }
        default:
            break;
    }
    if (!family(&d, tensor(op, 0), out0(op), &r->estimates)) {
        return false;
    }
    add_extra(&r->estimates.dmas, c_mul(&v->c, 2, v->copied));
    return true;
}

/* A native normalization operator: LayerNorm (timm's LayerNorm and
 * LayerNorm2d, torchvision's LayerNorm2d), GroupNorm, BatchNorm in eval. */
static bool
sig_norm(ops_view *v, ts_match_result *r)
{
    const ts_match_op *op;
    const ts_shape *x, *w, *b;
    ts_module_desc d;
    if (v->n != 1) {
        return false;
    }
    op = v->sig[0];
    x = tensor(op, 0);
    w = tensor(op, 1);
    b = tensor(op, 2);
    memset(&d, 0, sizeof d);
    switch (op->code) {
        case M_NATIVE_LAYER_NORM: {
            const ts_op_arg *shape = arg(op, 1);
            w = tensor(op, 2);
            b = tensor(op, 3);
            if (shape->kind != TS_ARG_INTS || shape->nints < 1) {
                return false;
            }
            d.kind = TS_MOD_LAYERNORM;
            d.normalized_numel = 1;
            for (int i = 0; i < shape->nints; i++) {
                d.normalized_numel =
                    c_mul(&v->c, d.normalized_numel, shape->ints[i]);
            }
            d.normalized_ndim = shape->nints;
            break;
        }
        case M_NATIVE_GROUP_NORM:
            if (arg(op, 6)->kind != TS_ARG_INT) {
                return false;
            }
            d.kind = TS_MOD_GROUPNORM;
            d.num_groups = arg(op, 6)->i;
            break;
        case M_NATIVE_BATCH_NORM_LEGIT_NO_TRAINING:
        case M_NATIVE_BATCH_NORM_LEGIT:
        case M_NATIVE_BATCH_NORM:
            if (x == NULL || x->ndim < 3 || x->ndim > 5
                || tensor(op, 3) == NULL || tensor(op, 4) == NULL
                || (op->code != M_NATIVE_BATCH_NORM_LEGIT_NO_TRAINING
                    && flag_arg(op, 5, true))) {
                return false; /* batch statistics: not an eval BatchNorm */
            }
            d.kind = TS_MOD_BATCHNORM;
            d.rank = x->ndim - 2;
            d.num_features = x->dims[1];
            d.track_running_stats = true;
            d.has_running_mean = d.has_running_var = true;
            break;
        default:
            return false;
    }
    d.has_weight = w != NULL;
    d.has_bias = b != NULL;
    d.param_numel = c_add(&v->c, numel_or(w, 0), numel_or(b, 0));
    if (v->c.overflow || !family(&d, x, out0(op), &r->estimates)) {
        return false;
    }
    add_extra(&r->estimates.dmas, c_mul(&v->c, 2, v->copied));
    return true;
}

/* x.pow(2).mean(-1, keepdim=True), + eps, rsqrt, x * that, then the weight
 * (w * y, or (1 + w) * y as Gemma's): exactly nn.RMSNorm's operators, so
 * its formulas; the (1 + w) offset adds P FLOPs (and 2P DMAs). */
static bool
sig_rmsnorm(ops_view *v, ts_match_result *r)
{
    const ts_match_op *pow_op, *mean, *last;
    const ts_shape *x, *w = NULL;
    const ts_op_arg *dims;
    ts_module_desc d;
    double exponent = 0.0;
    int64_t n, rows, width;
    bool offset = false;
    size_t i;
    if (!v->call->leaf || v->n < 5 || v->n > 7 || !is(v, 0, M_POW)
        || !is(v, 1, M_MEAN) || !is(v, 2, M_ADD) || !is(v, 3, M_RSQRT)
        || !is(v, 4, M_MUL)) {
        return false;
    }
    pow_op = v->sig[0];
    mean = v->sig[1];
    x = tensor(pow_op, 0);
    dims = arg(mean, 1);
    if (x == NULL || x->ndim < 1 || !number(pow_op, 1, &exponent)
        || exponent != 2.0 || dims->kind != TS_ARG_INTS || dims->nints != 1
        || (dims->ints[0] != -1 && dims->ints[0] != x->ndim - 1)
        || !flag_arg(mean, 2, false) || !scalar_operand(v->sig[2], 1)) {
        return false;
    }
    n = numel_or(x, -1);
    width = x->dims[x->ndim - 1];
    rows = numel_or(out0(mean), -1);
    if (n < 0 || width <= 0 || rows * width != n
        || numel_or(out0(v->sig[4]), -1) != n) {
        return false;
    }
    i = 5;
    if (v->n == 7 && is(v, 5, M_ADD) && scalar_operand(v->sig[5], 1)) {
        offset = true; /* 1 + w */
        w = tensor(v->sig[5], 0);
        i = 6;
    }
    if (i < v->n) {
        last = v->sig[i];
        if (!is(v, i, M_MUL) || i + 1 != v->n
            || numel_or(out0(last), -1) != n) {
            return false;
        }
        if (!offset) {
            const ts_shape *a = tensor(last, 0), *b = tensor(last, 1);
            w = a != NULL && a->ndim == 1 ? a : b;
        }
        if (w == NULL || w->ndim != 1 || w->dims[0] != width) {
            return false;
        }
    }
    else if (v->n != 5) {
        return false;
    }
    memset(&d, 0, sizeof d);
    d.kind = TS_MOD_RMSNORM;
    d.normalized_numel = width;
    d.normalized_ndim = 1;
    d.has_weight = w != NULL;
    d.param_numel = w != NULL ? width : 0;
    if (!family(&d, x, out0(v->sig[v->n - 1]), &r->estimates)) {
        return false;
    }
    if (offset) {
        add_extra(&r->estimates.flops, width);
        add_extra(&r->estimates.dmas, c_mul(&v->c, 2, width));
        r->signature = "rmsnorm_offset_weight";
    }
    add_extra(&r->estimates.dmas, c_mul(&v->c, 2, v->copied));
    return true;
}

/* One matrix product with a weight: addmm(b, x, w), mm(x, w), or mm(x, w)
 * + b. GPT-2's Conv1D stores the weight as (in, out), timm's Linear
 * subclasses call F.linear: Linear's formulas with in and out read from the
 * product. */
static bool
sig_linear(ops_view *v, ts_match_result *r)
{
    const ts_match_op *mm;
    const ts_shape *x, *w, *b = NULL;
    ts_module_desc d;
    if (v->n < 1 || v->n > 2) {
        return false;
    }
    mm = v->sig[0];
    if (mm->code == M_ADDMM && v->n == 1) {
        b = tensor(mm, 0);
        x = tensor(mm, 1);
        w = tensor(mm, 2);
        if (b == NULL || b->ndim > 1) {
            return false;
        }
    }
    else if (mm->code == M_MM) {
        x = tensor(mm, 0);
        w = tensor(mm, 1);
        if (v->n == 2) {
            const ts_match_op *bias = v->sig[1];
            b = tensor(bias, 1);
            if (bias->code != M_ADD || b == NULL || b->ndim != 1
                || numel_or(out0(bias), -1) != numel_or(out0(mm), -2)) {
                return false;
            }
        }
    }
    else {
        return false;
    }
    if (x == NULL || w == NULL || x->ndim != 2 || w->ndim != 2
        || x->dims[1] != w->dims[0]
        || (b != NULL && numel_or(b, -1) != w->dims[1])) {
        return false;
    }
    memset(&d, 0, sizeof d);
    d.kind = TS_MOD_LINEAR;
    d.in_features = w->dims[0];
    d.out_features = w->dims[1];
    d.has_weight = true;
    d.has_bias = b != NULL;
    d.param_numel = c_add(&v->c, numel_or(w, 0), numel_or(b, 0));
    if (v->c.overflow
        || !family(&d, x, out0(v->sig[v->n - 1]), &r->estimates)) {
        return false;
    }
    add_extra(&r->estimates.dmas, c_mul(&v->c, 2, v->copied));
    return true;
}

/* A convolution, alone or after an explicit constant pad (timm's
 * Conv2dSame, torchvision's padded convolutions): the Conv formulas on the
 * convolution's shapes; the pad is a copy, and its left padding of the
 * first spatial axis joins the receptive field's padding. */
static bool
sig_conv(ops_view *v, ts_match_result *r)
{
    const ts_match_op *op, *pad = NULL;
    const ts_shape *x, *w, *b;
    const ts_op_arg *st, *pd, *dl;
    ts_module_desc d;
    int rank;
    if (v->n != 1 || v->sig[0]->code != M_CONVOLUTION) {
        return false;
    }
    op = v->sig[0];
    x = tensor(op, 0);
    w = tensor(op, 1);
    b = tensor(op, 2);
    st = arg(op, 3);
    pd = arg(op, 4);
    dl = arg(op, 5);
    if (x == NULL || w == NULL || flag_arg(op, 6, true)
        || arg(op, 8)->kind != TS_ARG_INT || st->kind != TS_ARG_INTS
        || pd->kind != TS_ARG_INTS || dl->kind != TS_ARG_INTS) {
        return false; /* transposed, or unreadable */
    }
    rank = w->ndim - 2;
    if (rank < 1 || rank > 3 || x->ndim < rank + 1) {
        return false;
    }
    memset(&d, 0, sizeof d);
    d.kind = TS_MOD_CONV;
    d.rank = rank;
    d.groups = arg(op, 8)->i;
    d.in_channels = c_mul(&v->c, w->dims[1], d.groups);
    d.out_channels = w->dims[0];
    for (int i = 0; i < rank; i++) {
        d.kernel[i] = w->dims[2 + i];
        d.stride[i] = st->ints[st->nints == rank ? i : 0];
        d.padding[i] = pd->ints[pd->nints == rank ? i : 0];
        d.dilation[i] = dl->ints[dl->nints == rank ? i : 0];
    }
    if (st->nints < 1 || pd->nints < 1 || dl->nints < 1) {
        return false;
    }
    for (size_t i = 0; i < v->call->nops; i++) {
        if (v->call->ops[i].code == M_CONSTANT_PAD_ND) {
            if (pad != NULL) {
                return false;
            }
            pad = &v->call->ops[i];
        }
    }
    if (pad != NULL) {
        const ts_op_arg *amounts = arg(pad, 1);
        /* pairs from the last axis backwards: the first spatial axis is
         * pair rank - 1 */
        if (amounts->kind != TS_ARG_INTS || amounts->nints != 2 * rank) {
            return false;
        }
        d.padding[0] += amounts->ints[2 * (rank - 1)];
    }
    d.has_weight = true;
    d.has_bias = b != NULL;
    d.param_numel = c_add(&v->c, numel_or(w, 0), numel_or(b, 0));
    if (v->c.overflow || !family(&d, x, out0(op), &r->estimates)) {
        return false;
    }
    add_extra(&r->estimates.dmas, c_mul(&v->c, 2, v->copied));
    return true;
}

/* Pooling by a native operator: a global average as mean() over the
 * trailing 1-3 axes (timm's FastAdaptiveAvgPool; AdaptiveAvgPool's formulas
 * with an output of ones), max_pool2d (torchvision's LastLevelMaxPool),
 * avg_pool2d, adaptive_avg_pool2d. */
static bool
sig_pool(ops_view *v, ts_match_result *r)
{
    const ts_match_op *op;
    const ts_shape *x;
    ts_shape out;
    ts_module_desc d;
    if (v->n != 1) {
        return false;
    }
    op = v->sig[0];
    x = tensor(op, 0);
    if (x == NULL || out0(op) == NULL) {
        return false;
    }
    memset(&d, 0, sizeof d);
    out = *out0(op);
    switch (op->code) {
        case M_MEAN: {
            /* the spatial axes, trailing (NCHW) or not (timm's NHWC
             * pooling): the formula sees them moved last, in order */
            const ts_op_arg *dims = arg(op, 1);
            bool pooled[TS_MAX_DIMS] = {false};
            ts_shape in = *x;
            int rank = dims->kind == TS_ARG_INTS ? dims->nints : 0, k = 0;
            if (rank < 1 || rank > 3 || x->ndim < rank + 1) {
                return false;
            }
            for (int i = 0; i < rank; i++) {
                int64_t dim = dims->ints[i] < 0 ? dims->ints[i] + x->ndim
                                                : dims->ints[i];
                if (dim < 1 || dim >= x->ndim || pooled[dim]) {
                    return false; /* the batch axis, or a repeated one */
                }
                pooled[dim] = true;
            }
            for (int pass = 0; pass < 2; pass++) {
                for (int i = 0; i < x->ndim; i++) {
                    if (pooled[i] == (pass == 1)) {
                        in.dims[k] = x->dims[i];
                        out.dims[k] = pass == 1 ? 1 : x->dims[i];
                        k++;
                    }
                }
            }
            out.ndim = x->ndim;
            d.kind = TS_MOD_ADAPTIVE_AVGPOOL;
            d.rank = rank;
            if (!family(&d, &in, &out, &r->estimates)) {
                return false;
            }
            add_extra(&r->estimates.dmas, c_mul(&v->c, 2, v->copied));
            return true;
        }
        case M_MAX_POOL2D:
        case M_MAX_POOL2D_WITH_INDICES:
        case M_AVG_POOL2D: {
            const ts_op_arg *k = arg(op, 1), *st = arg(op, 2),
                            *pd = arg(op, 3);
            bool max = op->code != M_AVG_POOL2D;
            const ts_op_arg *dl = max ? arg(op, 4) : NULL;
            if (k->kind != TS_ARG_INTS || k->nints < 1 || k->nints > 2) {
                return false;
            }
            d.kind = max ? TS_MOD_MAXPOOL : TS_MOD_AVGPOOL;
            d.rank = 2;
            d.kernel_is_int = k->nints == 1;
            for (int i = 0; i < 2; i++) {
                d.kernel[i] = k->ints[k->nints == 2 ? i : 0];
                /* stride defaults to the kernel (an empty list) */
                d.stride[i] = st->kind == TS_ARG_INTS && st->nints > 0
                                  ? st->ints[st->nints == 2 ? i : 0]
                                  : d.kernel[i];
                d.padding[i] = pd->kind == TS_ARG_INTS && pd->nints > 0
                                   ? pd->ints[pd->nints == 2 ? i : 0]
                                   : 0;
                d.dilation[i] =
                    dl != NULL && dl->kind == TS_ARG_INTS && dl->nints > 0
                        ? dl->ints[dl->nints == 2 ? i : 0]
                        : 1;
            }
            d.has_dilation = max;
            d.ceil_mode = flag_arg(op, max ? 5 : 4, false);
            d.count_include_pad = !max && flag_arg(op, 5, true);
            if (!max && arg(op, 6)->kind == TS_ARG_INT) {
                return false; /* a divisor_override: not AvgPool's division */
            }
            break;
        }
        case M_ADAPTIVE_AVG_POOL2D:
        case M_ADAPTIVE_AVG_POOL2D_IMPL:
            d.kind = TS_MOD_ADAPTIVE_AVGPOOL;
            d.rank = 2;
            break;
        default:
            return false;
    }
    if (!family(&d, x, &out, &r->estimates)) {
        return false;
    }
    add_extra(&r->estimates.dmas, c_mul(&v->c, 2, v->copied));
    return true;
}

/* A row lookup (embedding, or weight[indices]), optionally times a scalar
 * (scaled word embeddings): Embedding's formulas; the scale adds one FLOP
 * and two DMAs per output element. */
static bool
sig_embedding(ops_view *v, ts_match_result *r)
{
    const ts_match_op *op, *scale = NULL;
    const ts_shape *w, *idx;
    ts_module_desc d;
    int64_t o;
    if (v->n < 1 || v->n > 2) {
        return false;
    }
    op = v->sig[0];
    w = tensor(op, 0);
    if (op->code == M_EMBEDDING) {
        idx = tensor(op, 1);
    }
    else if (op->code == M_INDEX && arg(op, 1)->kind == TS_ARG_TENSORS
             && arg(op, 1)->ntensors == 1) {
        idx = &arg(op, 1)->tensor;
        if (idx->ndim < 0 || idx->dtype != TS_DTYPE_INT) {
            return false;
        }
    }
    else {
        return false;
    }
    if (w == NULL || w->ndim != 2 || idx == NULL) {
        return false;
    }
    o = numel_or(out0(op), -1);
    if (v->n == 2) {
        scale = v->sig[1];
        if (scale->code != M_MUL || numel_or(out0(scale), -2) != o
            || !(scalar_operand(scale, 1) || scalar_operand(scale, 0))) {
            return false;
        }
    }
    memset(&d, 0, sizeof d);
    d.kind = TS_MOD_EMBEDDING;
    d.embedding_dim = w->dims[1];
    d.has_weight = true;
    d.param_numel = numel_or(w, 0);
    if (!family(&d, idx, out0(op), &r->estimates)) {
        return false;
    }
    if (scale != NULL) {
        add_extra(&r->estimates.flops, o);
        add_extra(&r->estimates.dmas, c_mul(&v->c, 2, o));
        r->signature = "scaled_embedding";
    }
    add_extra(&r->estimates.dmas, c_mul(&v->c, 2, v->copied));
    return true;
}

/* torch.nn.utils.parametrizations.weight_norm's parametrization (wav2vec2's
 * positional convolution): w = g * v / ||v||, the norm taken over every
 * axis but `dim`, one per slice of g's C elements. Per slice: K squares and
 * K - 1 additions, a square root, g / ||v||; then one product per element:
 * 3N + C FLOPs, N MACs (the squares accumulate), 2N + C DMAs (v and g read,
 * w written). */
static bool
sig_weight_norm(ops_view *v, ts_match_result *r)
{
    const ts_match_op *op;
    calc *c = &v->c;
    int64_t n, slices;
    if (!v->call->leaf || v->n != 1
        || v->sig[0]->code != M_WEIGHT_NORM_INTERFACE) {
        return false;
    }
    op = v->sig[0];
    n = numel_or(tensor(op, 0), -1);
    slices = numel_or(tensor(op, 1), -1);
    if (n < 0 || slices <= 0 || n % slices != 0) {
        return false;
    }
    set_count(&r->estimates.flops, c, c_add(c, c_mul(c, 3, n), slices));
    set_count(&r->estimates.macs, c, n);
    set_count(
        &r->estimates.dmas,
        c,
        c_add(c, c_add(c, c_mul(c, 2, n), slices), c_mul(c, 2, v->copied)));
    set_trio(&r->estimates, TS_EST_NOT_APPLICABLE, 0);
    return true;
}

/* ---- structural signatures: one counting rule --------------------------- */

/* The counts of a structural signature. */
typedef struct tally {
    int64_t flops, macs, dmas;
    size_t cores;    /* attention cores counted */
    size_t products; /* matrix products outside cores */
} tally;

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

/* The unfused attention core that eager attention runs: QK^T (a bmm to
 * (BH, T, S)), steps on the scores, a softmax over S, then weights x V (a
 * bmm from (BH, T, S)). Marks the core's operators in `member` and fills
 * *a; false when ops[first] does not start one. Other elementwise steps on
 * the scores (soft-capping) stay unmarked: they are counted as operators. */
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
    double scale = 1.0;
    bool softmax = false, unknown_scale = false;
    size_t i;
    if (qk->code != M_BMM || q == NULL || k == NULL || s == NULL
        || s->ndim != 3) {
        return false;
    }
    scores = numel_or(s, -1);
    memset(a, 0, sizeof *a);
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
                member[i] = true;
                continue;
            }
            step = score_step_of(op, scores, &f);
            if (step == SCORE_REFUSE) {
                return false;
            }
            if (step == SCORE_SCALE) {
                unknown_scale |= isnan(f);
                scale *= isnan(f) ? 1.0 : f;
                member[i] = true;
            }
            else if (step == SCORE_MASK) {
                const ts_shape *m = mask_operand(op, scores);
                a->masks++;
                a->mask_elements = c_add(c, a->mask_elements, numel_or(m, 0));
                member[i] = true;
            }
            continue;
        }
        if (op->code != M_BMM) {
            op_class cls = class_of(op);
            if (cls == OPC_VIEW || cls == OPC_COPY || cls == OPC_CREATE
                || cls == OPC_CHILD) {
                continue; /* a child's dropout does its own work */
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
    member[first] = member[i] = true;
    a->rows = c_mul(c, s->dims[0], s->dims[1]);
    a->s = s->dims[2];
    a->d = q->dims[2];
    a->dv = v->dims[2];
    a->q = c_numel(c, q);
    a->k = c_numel(c, k);
    a->v = c_numel(c, v);
    a->out = c_numel(c, out0(wv));
    a->scaled = unknown_scale || scale != 1.0;
    return true;
}

/* A matrix product outside an attention core, by the module convention:
 * K products and K - 1 additions per output (2K - 1), plus the bias add
 * of addmm/baddbmm; K MACs per output. */
static bool
add_product(calc *c, const ts_match_op *op, tally *t)
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

static void
set_tally(ops_view *v, const tally *t, ts_match_result *r, bool pointwise)
{
    set_count(&r->estimates.flops, &v->c, t->flops);
    set_count(&r->estimates.macs, &v->c, t->macs);
    set_count(&r->estimates.dmas, &v->c, t->dmas);
    set_trio(
        &r->estimates, pointwise ? TS_EST_COMPLETE : TS_EST_NOT_APPLICABLE, 1);
}

static bool
has_code(const ops_view *v, int code)
{
    for (size_t i = 0; i < v->n; i++) {
        if (v->sig[i]->code == code) {
            return true;
        }
    }
    return false;
}

/* Rotary embedding tables: positions times inverse frequencies (a mul, or a
 * product with K = 1), cos and sin, optional scalings, concatenations. The
 * operators as torchscan_flops_v1 counts them, the outer product at one
 * FLOP per product whichever kernel forms it; no MACs (nothing
 * accumulates). */
static bool
sig_rotary(ops_view *v, ts_match_result *r)
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
static bool
sig_pointwise(ops_view *v, ts_match_result *r)
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
static bool
sig_router(ops_view *v, ts_match_result *r)
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
static bool
sig_attention(ops_view *v, ts_match_result *r)
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
static bool
sig_experts(ops_view *v, ts_match_result *r)
{
    tally t;
    if (!has_code(v, M_GROUPED_MM) || !tally_call(v, false, &t)) {
        return false;
    }
    set_tally(v, &t, r, false);
    return true;
}

/* ---- matching ------------------------------------------------------------
 */

typedef bool (*signature_fn)(ops_view *v, ts_match_result *r);

typedef struct signature {
    const char *name;
    const char *method;
    signature_fn match;
    bool composite; /* also tried on modules with children */
} signature;

#define SIG(name, fn, composite)                \
    {                                           \
        name, METHOD_PREFIX name, fn, composite \
    }

/* In matching order: the native signatures first (exact operator lists),
 * then the structures. A module with children tries only what a block
 * computes with its own weights while its children do the rest: one native
 * layer (timm's BatchNormAct2d normalizes, its child activates), attention
 * cores, expert banks. The other glue of composites (residual additions,
 * gating products) is not counted in the module view, as for every
 * composite module. */
static const signature signatures[] = {
    SIG("identity", sig_identity, false),
    SIG("layout", sig_layout, false),
    SIG("activation", sig_activation, false),
    SIG("norm", sig_norm, true),
    SIG("rmsnorm", sig_rmsnorm, false),
    SIG("linear", sig_linear, true),
    SIG("conv", sig_conv, true),
    SIG("pool", sig_pool, true),
    SIG("embedding", sig_embedding, true),
    SIG("weight_norm", sig_weight_norm, false),
    SIG("rotary_embedding", sig_rotary, false),
    SIG("pointwise", sig_pointwise, false),
    SIG("moe_router", sig_router, false),
    SIG("attention", sig_attention, true),
    SIG("moe_experts", sig_experts, true),
};

#define N_SIGNATURES (sizeof signatures / sizeof signatures[0])

/* Method strings of the signatures that rename themselves. */
static const char *
method_of(const char *name, const char *fallback)
{
    static const char *const renamed[][2] = {
        {"rmsnorm_offset_weight", METHOD_PREFIX "rmsnorm_offset_weight"},
        {"scaled_embedding", METHOD_PREFIX "scaled_embedding"},
    };
    for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++) {
        if (strcmp(name, renamed[i][0]) == 0) {
            return renamed[i][1];
        }
    }
    return fallback;
}

/* Work a library composite computes itself that no signature recognized:
 * matrix products, attention kernels, convolutions, norms or lookups. Its
 * glue (residual additions, gating products) is not counted anywhere in the
 * module view; these would be silently missing. */
static bool
uncovered_work(const ops_view *v)
{
    for (size_t i = 0; i < v->n; i++) {
        op_class cls = class_of(v->sig[i]);
        if ((cls == OPC_MATMUL || cls == OPC_SDPA || cls == OPC_LAYER)
            && v->sig[i]->code != M_INDEX) {
            return true;
        }
    }
    return false;
}

int
ts_match_call_estimates(const ts_match_call *call, ts_match_result *out)
{
    ops_view v;
    if (call == NULL || out == NULL || (call->nops > 0 && call->ops == NULL)) {
        return TS_EINVAL;
    }
    memset(out, 0, sizeof *out);
    if (!sort_out(call, &v)) {
        out->uncovered = !call->leaf;
        return 0;
    }
    for (size_t i = 0; i < N_SIGNATURES; i++) {
        const signature *s = &signatures[i];
        if (!call->leaf && !s->composite) {
            continue;
        }
        memset(out, 0, sizeof *out);
        out->signature = s->name;
        v.c.overflow = false;
        if (s->match(&v, out)) {
            out->method = method_of(out->signature, s->method);
            return 1;
        }
    }
    memset(out, 0, sizeof *out);
    out->uncovered = !call->leaf && uncovered_work(&v);
    return 0;
}

const char *
ts_match_signature_name(size_t i)
{
    return i < N_SIGNATURES ? signatures[i].name : NULL;
}
