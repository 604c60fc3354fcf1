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
#include "module_match_internal.h"

/* ---- the operators ------------------------------------------------------ */


/* Sorted by strcmp (binary search); tests/c/test_module_match.c checks the
 * order and that every row's code is its position + 1. */
static const op_info op_table[] = {
    {"aten._adaptive_avg_pool2d", M_ADAPTIVE_AVG_POOL2D_IMPL, OPC_LAYER, 0},
    {"aten._grouped_mm", M_GROUPED_MM, OPC_MATMUL, 0},
    {"aten._local_scalar_dense", M_LOCAL_SCALAR_DENSE, OPC_READBACK, 0},
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
    {"aten._unique2", M_UNIQUE2, OPC_SELECT, 0},
    {"aten._unsafe_view", M_UNSAFE_VIEW, OPC_VIEW, 0},
    {"aten._upsample_nearest_exact1d",
     M_UPSAMPLE_NEAREST_EXACT1D,
     OPC_INTERP,
     0},
    {"aten._upsample_nearest_exact2d",
     M_UPSAMPLE_NEAREST_EXACT2D,
     OPC_INTERP,
     0},
    {"aten._upsample_nearest_exact3d",
     M_UPSAMPLE_NEAREST_EXACT3D,
     OPC_INTERP,
     0},
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
    {"aten.grid_sampler_2d", M_GRID_SAMPLER_2D, OPC_INTERP, 0},
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
    {"aten.linspace", M_LINSPACE, OPC_CREATE, 0},
    {"aten.log", M_LOG, OPC_ELEMENTWISE, 0},
    {"aten.log1p", M_LOG1P, OPC_ELEMENTWISE, 0},
    {"aten.log2", M_LOG2, OPC_ELEMENTWISE, 0},
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
    {"aten.masked_select", M_MASKED_SELECT, OPC_SELECT, 0},
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
    {"aten.nonzero", M_NONZERO, OPC_SELECT, 0},
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
    {"aten.rsub", M_RSUB, OPC_ELEMENTWISE, 0},
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
    {"aten.tril", M_TRIL, OPC_ELEMENTWISE, 0},
    {"aten.triu", M_TRIU, OPC_ELEMENTWISE, 0},
    {"aten.trunc", M_TRUNC, OPC_ELEMENTWISE, 0},
    {"aten.unbind", M_UNBIND, OPC_VIEW, 0},
    {"aten.unfold", M_UNFOLD, OPC_VIEW, 0},
    {"aten.unique_consecutive", M_UNIQUE_CONSECUTIVE, OPC_SELECT, 0},
    {"aten.unique_dim", M_UNIQUE_DIM, OPC_SELECT, 0},
    {"aten.unsqueeze", M_UNSQUEEZE, OPC_VIEW, 0},
    {"aten.upsample_bicubic2d", M_UPSAMPLE_BICUBIC2D, OPC_INTERP, 0},
    {"aten.upsample_bilinear2d", M_UPSAMPLE_BILINEAR2D, OPC_INTERP, 0},
    {"aten.upsample_linear1d", M_UPSAMPLE_LINEAR1D, OPC_INTERP, 0},
    {"aten.upsample_nearest1d", M_UPSAMPLE_NEAREST1D, OPC_INTERP, 0},
    {"aten.upsample_nearest2d", M_UPSAMPLE_NEAREST2D, OPC_INTERP, 0},
    {"aten.upsample_nearest3d", M_UPSAMPLE_NEAREST3D, OPC_INTERP, 0},
    {"aten.upsample_trilinear3d", M_UPSAMPLE_TRILINEAR3D, OPC_INTERP, 0},
    {"aten.var", M_VAR, OPC_REDUCE, 0},
    {"aten.view", M_VIEW, OPC_VIEW, 0},
    {"aten.view_as_complex", M_VIEW_AS_COMPLEX, OPC_VIEW, 0},
    {"aten.view_as_real", M_VIEW_AS_REAL, OPC_VIEW, 0},
    {"aten.where", M_WHERE, OPC_ELEMENTWISE, 0},
    {"aten.zeros", M_ZEROS, OPC_CREATE, 0},
    {"aten.zeros_like", M_ZEROS_LIKE, OPC_CREATE, 0},
    {"torchvision.nms", M_NMS, OPC_SELECT, 0},
    {"torchvision.ps_roi_align", M_PS_ROI_ALIGN, OPC_ROI, 0},
    {"torchvision.ps_roi_pool", M_PS_ROI_POOL, OPC_ROI, 0},
    {"torchvision.roi_align", M_ROI_ALIGN, OPC_ROI, 0},
    {"torchvision.roi_pool", M_ROI_POOL, OPC_ROI, 0},
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

const op_info *
ts_mm_info_of(const ts_match_op *op)
{
    static const op_info other = {"", TS_MOP_OTHER, OPC_OTHER, TS_MOD_UNKNOWN};
    if (op->code <= 0 || (size_t)op->code > N_OPS) {
        return &other;
    }
    return &op_table[op->code - 1];
}

op_class
ts_mm_class_of(const ts_match_op *op)
{
    return op->code == TS_MOP_CHILD ? OPC_CHILD : info_of(op)->cls;
}

/* ---- estimates ------------------------------------------------------------
 */

void
ts_mm_set_count(ts_estimate *e, calc *c, int64_t value)
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
void
ts_mm_add_extra(ts_estimate *e, int64_t extra)
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

void
ts_mm_set_trio(ts_module_estimates *est, ts_est_kind kind, int64_t rf)
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
bool
ts_mm_family(ts_module_desc *desc,
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

/* Sorts a call's operators out once. Calls longer than the signatures'
 * window (a detection model's post-processing loops over its detections)
 * keep their first MAX_SIGNIFICANT computing operators in sig[] and are
 * marked truncated: only the signatures that read the whole call try them. */
static void
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
            case OPC_READBACK:
                v->readbacks++;
                break;
            default:
                if (v->n == MAX_SIGNIFICANT) {
                    v->truncated = true;
                    break;
                }
                v->sig[v->n++] = op;
        }
    }
}


/* ---- matching ------------------------------------------------------------
 */

typedef bool (*signature_fn)(ops_view *v, ts_match_result *r);

typedef struct signature {
    const char *name;
    const char *method;
    signature_fn match;
    bool composite; /* also tried on modules with children */
    bool streams;   /* reads the whole call, not only v->sig (also tried on
                       truncated calls) */
} signature;

#define SIG(name, fn, composite)                       \
    {                                                  \
        name, METHOD_PREFIX name, fn, composite, false \
    }
#define SIG_STREAM(name, fn, composite)               \
    {                                                 \
        name, METHOD_PREFIX name, fn, composite, true \
    }

/* In matching order: the native signatures first (exact operator lists),
 * then the structures. A module with children tries only what a block
 * computes with its own weights while its children do the rest: one native
 * layer (timm's BatchNormAct2d normalizes, its child activates), attention
 * cores, expert banks. The other glue of composites (residual additions,
 * gating products) is not counted in the module view, as for every
 * composite module. */
static const signature signatures[] = {
    SIG("identity", ts_mm_sig_identity, false),
    SIG("layout", ts_mm_sig_layout, false),
    SIG("activation", ts_mm_sig_activation, false),
    SIG("norm", ts_mm_sig_norm, true),
    SIG("rmsnorm", ts_mm_sig_rmsnorm, false),
    SIG("linear", ts_mm_sig_linear, true),
    SIG("conv", ts_mm_sig_conv, true),
    SIG("pool", ts_mm_sig_pool, true),
    SIG("embedding", ts_mm_sig_embedding, true),
    SIG("weight_norm", ts_mm_sig_weight_norm, false),
    SIG("rotary_embedding", ts_mm_sig_rotary, false),
    SIG("pointwise", ts_mm_sig_pointwise, false),
    SIG("moe_router", ts_mm_sig_router, false),
    SIG("attention", ts_mm_sig_attention, true),
    SIG("moe_experts", ts_mm_sig_experts, true),
    SIG_STREAM("grid", ts_mm_sig_grid, false),
    SIG_STREAM("resample", ts_mm_sig_resample, true),
    SIG_STREAM("roi_pool", ts_mm_sig_roi_pool, true),
    SIG_STREAM("postprocess", ts_mm_sig_postprocess, true),
    SIG_STREAM("correlation", ts_mm_sig_correlation, true),
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
 * matrix products, attention kernels, convolutions, norms, interpolations
 * or region pooling (lookups aside). Its glue (residual additions, gating
 * products) is not counted anywhere in the module view; these would be
 * silently missing. */
static bool
uncovered_work(const ts_match_call *call)
{
    for (size_t i = 0; i < call->nops; i++) {
        op_class cls = class_of(&call->ops[i]);
        if ((cls == OPC_MATMUL || cls == OPC_SDPA || cls == OPC_LAYER
             || cls == OPC_INTERP || cls == OPC_ROI)
            && call->ops[i].code != M_INDEX) {
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
    sort_out(call, &v);
    for (size_t i = 0; i < N_SIGNATURES; i++) {
        const signature *s = &signatures[i];
        if ((!call->leaf && !s->composite) || (v.truncated && !s->streams)) {
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
    out->uncovered = !call->leaf && uncovered_work(call);
    return 0;
}

const char *
ts_match_signature_name(size_t i)
{
    return i < N_SIGNATURES ? signatures[i].name : NULL;
}
