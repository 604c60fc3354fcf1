/* The native signatures of the block matcher (module_match_internal.h):
 * operators that are exactly what a torch.nn class dispatches, answered
 * with that family's formulas. */
#include "module_match_internal.h"

/* ---- native signatures: a torch.nn family's own operators --------------- */

/* No operator but aliases: the module returns its input (drop-path and
 * stochastic depth in eval). Identity's formulas. */
bool
ts_mm_sig_identity(ops_view *v, ts_match_result *r)
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
bool
ts_mm_sig_layout(ops_view *v, ts_match_result *r)
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
bool
ts_mm_sig_activation(ops_view *v, ts_match_result *r)
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
bool
ts_mm_sig_norm(ops_view *v, ts_match_result *r)
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
bool
ts_mm_sig_rmsnorm(ops_view *v, ts_match_result *r)
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
bool
ts_mm_sig_linear(ops_view *v, ts_match_result *r)
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
bool
ts_mm_sig_conv(ops_view *v, ts_match_result *r)
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
bool
ts_mm_sig_pool(ops_view *v, ts_match_result *r)
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
bool
ts_mm_sig_embedding(ops_view *v, ts_match_result *r)
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
bool
ts_mm_sig_weight_norm(ops_view *v, ts_match_result *r)
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
