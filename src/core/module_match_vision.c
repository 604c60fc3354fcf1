/* The signatures of vision pipelines (module_match_internal.h): coordinate
 * grids (anchors, default boxes), resampling (normalize, resize and batch
 * images; paste masks; upsample features), region pooling, data-dependent
 * post-processing (box decoding, top-k, non-maximum suppression) and
 * correlation volumes sampled at given points (RAFT). Each reads the whole
 * call (a detection model's post-processing loops over its detections) and
 * counts every operator by one rule: interpolations by the module view's
 * Upsample convention, matrix products by the module convention, every
 * other operator as torchscan_flops_v1 counts it. Conventions:
 * docs/module-formulas.md, "Blocks matched by their operators". */
#include "module_match_internal.h"

#define CLS(c) (1u << (c))

/* Whether some operator of the call has code `code`, or class `cls`. */
static bool
any_code(const ts_match_call *call, int code)
{
    for (size_t i = 0; i < call->nops; i++) {
        if (call->ops[i].code == code) {
            return true;
        }
    }
    return false;
}

static bool
any_class(const ts_match_call *call, op_class cls)
{
    for (size_t i = 0; i < call->nops; i++) {
        if (class_of(&call->ops[i]) == cls) {
            return true;
        }
    }
    return false;
}

static bool
is_pool(int code)
{
    return code == M_AVG_POOL2D || code == M_MAX_POOL2D
           || code == M_MAX_POOL2D_WITH_INDICES
           || code == M_ADAPTIVE_AVG_POOL2D
           || code == M_ADAPTIVE_AVG_POOL2D_IMPL;
}

/* An interpolation: upsample_* by the Upsample family's formulas on the
 * operator's shapes (the module view's convention: (2n - 1) FLOPs, n MACs
 * and (n + 1) DMAs per output for n neighbours, nearest 0, 0 and 2), so a
 * block that resizes counts as nn.Upsample does; grid_sampler_2d, which no
 * torch.nn family computes, as torchscan_flops_v1 counts it. */
static bool
add_interp(calc *c, const ts_match_op *op, tally *t)
{
    ts_module_desc d;
    ts_module_estimates est;
    memset(&d, 0, sizeof d);
    d.kind = TS_MOD_UPSAMPLE;
    switch (op->code) {
        case M_UPSAMPLE_NEAREST1D:
        case M_UPSAMPLE_NEAREST2D:
        case M_UPSAMPLE_NEAREST3D:
        case M_UPSAMPLE_NEAREST_EXACT1D:
        case M_UPSAMPLE_NEAREST_EXACT2D:
        case M_UPSAMPLE_NEAREST_EXACT3D:
            d.upsample_mode = TS_UPSAMPLE_NEAREST;
            break;
        case M_UPSAMPLE_LINEAR1D:
            d.upsample_mode = TS_UPSAMPLE_LINEAR;
            break;
        case M_UPSAMPLE_BILINEAR2D:
            d.upsample_mode = TS_UPSAMPLE_BILINEAR;
            break;
        case M_UPSAMPLE_BICUBIC2D:
            d.upsample_mode = TS_UPSAMPLE_BICUBIC;
            break;
        case M_UPSAMPLE_TRILINEAR3D:
            d.upsample_mode = TS_UPSAMPLE_TRILINEAR;
            break;
        default:
            t->flops = c_add(c, t->flops, op->flops);
            t->dmas = c_add(c, t->dmas, traffic(c, op));
            return true;
    }
    if (!family(&d, tensor(op, 0), out0(op), &est)
        || est.flops.kind != TS_EST_COMPLETE
        || est.macs.kind != TS_EST_COMPLETE || est.dmas.kind != TS_EST_COMPLETE
        || est.flops.value.is_real || est.macs.value.is_real
        || est.dmas.value.is_real) {
        return false;
    }
    t->flops = c_add(c, t->flops, est.flops.value.i);
    t->macs = c_add(c, t->macs, est.macs.value.i);
    t->dmas = c_add(c, t->dmas, est.dmas.value.i);
    return true;
}

/* Counts every operator of the call. `classes`: the computing classes the
 * signature accepts (bits CLS(OPC_...)); views, copies, creations, values
 * read back, child calls and lookups (index) are always accepted; `pools`:
 * pooling layers too. false when an operator is refused or has no count. */
static bool
count_whole(ops_view *v, unsigned classes, bool pools, tally *t)
{
    const ts_match_call *call = v->call;
    calc *c = &v->c;
    memset(t, 0, sizeof *t);
    if (!v->all_counted) {
        return false;
    }
    for (size_t i = 0; i < call->nops; i++) {
        const ts_match_op *op = &call->ops[i];
        op_class cls = class_of(op);
        switch (cls) {
            case OPC_VIEW:
            case OPC_CHILD:
                continue;
            case OPC_COPY:
                t->dmas = c_add(c, t->dmas, c_mul(c, 2, c_numel(c, out0(op))));
                continue;
            case OPC_CREATE:
                t->dmas = c_add(c, t->dmas, c_numel(c, out0(op)));
                continue;
            case OPC_READBACK:
                t->dmas = c_add(c, t->dmas, 1); /* one value read */
                continue;
            case OPC_LAYER:
                if (op->code != M_INDEX && !(pools && is_pool(op->code))) {
                    return false; /* convolutions, norms: not this block's */
                }
                break;
            default:
                if (!(classes & CLS(cls))) {
                    return false;
                }
        }
        if (cls == OPC_MATMUL) {
            if (!add_product(c, op, t)) {
                return false;
            }
        }
        else if (cls == OPC_INTERP) {
            if (!add_interp(c, op, t)) {
                return false;
            }
        }
        else {
            t->flops = c_add(c, t->flops, op->flops);
            t->dmas = c_add(c, t->dmas, traffic(c, op));
        }
    }
    return true;
}

/* A grid of coordinates built from positions (arange, linspace) by
 * elementwise arithmetic, with views and copies: anchors (torchvision's
 * AnchorGenerator), default boxes (DefaultBoxGenerator). The operators as
 * torchscan_flops_v1 counts them; nothing accumulates. */
bool
ts_mm_sig_grid(ops_view *v, ts_match_result *r)
{
    tally t;
    if (!v->call->leaf
        || !(any_code(v->call, M_ARANGE) || any_code(v->call, M_LINSPACE))
        || !count_whole(v, CLS(OPC_ELEMENTWISE), false, &t)) {
        return false;
    }
    set_tally(v, &t, r, false);
    return true;
}

/* Images or features resampled: interpolations (upsample_*,
 * grid_sampler_2d) with elementwise steps and copies around them
 * (torchvision's GeneralizedRCNNTransform normalizes, resizes and pads images
 * into a batch; a detection model pastes its masks into the image; a
 * segmentation model or a feature pyramid resizes its features). */
bool
ts_mm_sig_resample(ops_view *v, ts_match_result *r)
{
    tally t;
    if (!any_class(v->call, OPC_INTERP)
        || !count_whole(
            v, CLS(OPC_ELEMENTWISE) | CLS(OPC_INTERP), false, &t)) {
        return false;
    }
    set_tally(v, &t, r, false);
    return true;
}

/* Region pooling (torchvision's roi_align, roi_pool and their
 * position-sensitive forms) with what assigns the regions to levels
 * (elementwise arithmetic, selections, lookups): MultiScaleRoIAlign. */
bool
ts_mm_sig_roi_pool(ops_view *v, ts_match_result *r)
{
    tally t;
    if (!any_class(v->call, OPC_ROI)
        || !count_whole(v,
                        CLS(OPC_ELEMENTWISE) | CLS(OPC_ROI) | CLS(OPC_SELECT)
                            | CLS(OPC_REDUCE),
                        false,
                        &t)) {
        return false;
    }
    set_tally(v, &t, r, false);
    return true;
}

/* Data-dependent post-processing: a selection whose result depends on the
 * values (non-maximum suppression, top-k, sort, nonzero, unique, masked
 * select) with the arithmetic around it (box decoding, scores, clipping,
 * heatmap decoding): a detection model's proposal filtering and
 * detections. No matrix product, convolution or norm. */
bool
ts_mm_sig_postprocess(ops_view *v, ts_match_result *r)
{
    tally t;
    if (!(any_class(v->call, OPC_SELECT) || any_code(v->call, M_TOPK)
          || any_code(v->call, M_SORT))
        || !count_whole(v,
                        CLS(OPC_ELEMENTWISE) | CLS(OPC_ACT) | CLS(OPC_REDUCE)
                            | CLS(OPC_SELECT) | CLS(OPC_INTERP)
                            | CLS(OPC_OTHER),
                        false,
                        &t)) {
        return false;
    }
    set_tally(v, &t, r, false);
    return true;
}

/* The all-pairs correlation of two feature maps, a batched product
 * (B, N, C) x (B, C, M), pooled into a pyramid and sampled at given points
 * (grid_sampler_2d): RAFT's correlation block, which its model runs as
 * methods (build_pyramid, index_pyramid), with the rest of what the model
 * computes itself (flow updates, upsampling). */
bool
ts_mm_sig_correlation(ops_view *v, ts_match_result *r)
{
    const ts_match_call *call = v->call;
    tally t;
    bool volume = false;
    for (size_t i = 0; i < call->nops && !volume; i++) {
        const ts_match_op *op = &call->ops[i];
        const ts_shape *a = tensor(op, 0), *b = tensor(op, 1);
        volume = (op->code == M_BMM || op->code == M_MATMUL) && a != NULL
                 && b != NULL && a->ndim == 3 && b->ndim == 3
                 && a->dims[2] == b->dims[1] && a->dims[1] > 1
                 && b->dims[2] > 1;
    }
    if (!volume || !any_code(call, M_GRID_SAMPLER_2D)
        || !count_whole(v,
                        CLS(OPC_ELEMENTWISE) | CLS(OPC_ACT) | CLS(OPC_REDUCE)
                            | CLS(OPC_INTERP) | CLS(OPC_MATMUL),
                        true,
                        &t)) {
        return false;
    }
    set_tally(v, &t, r, false);
    return true;
}
