/* Operator formulas of the operators detection, segmentation, video and
 * optical-flow models run (TorchScan extensions of torchscan_flops_v1):
 * rounding, the comparison-based selections (sort, topk, unique, nonzero,
 * non-maximum suppression), bilinear and bicubic sampling (grid_sampler_2d,
 * upsample_bicubic2d), and torchvision's operators (torchvision::nms,
 * roi_align, roi_pool, ps_roi_align, ps_roi_pool, deform_conv2d).
 *
 * Conventions (docs/operator-flops.md shows them with each entry):
 *  - comparison-based operators count comparisons at a stated complexity,
 *    the nominal cost of the algorithm on the call's shapes: a sort of n
 *    keys n*ceil(log2 n), a top-k selection n comparisons per level of a
 *    k-element heap; integer and boolean keys count nothing, as integer
 *    arithmetic does;
 *  - sampling operators count the interpolation arithmetic of torchvision's
 *    and ATen's CPU kernels, with every sample point counted, also those a
 *    kernel skips because they fall outside the feature map (a data-
 *    dependent saving); index and bounds bookkeeping is integer work;
 *  - where the work itself depends on tensor values (roi_pool's bin sizes,
 *    an adaptive sampling ratio), the count is a lower bound marked
 *    incomplete, with the reason in the diagnostic.
 */
#include "op_formulas_internal.h"

static const char MSG_ADAPTIVE_SAMPLING[] =
    "sampling_ratio <= 0 takes ceil(roi size / pooled size) samples per bin "
    "from each ROI's coordinates (tensor values), which shapes do not give; "
    "counted with the fewest samples a bin can take (1, or 0 when aligned)";
static const char MSG_ROI_POOL_BINS[] =
    "each bin visits the feature-map elements its ROI covers, and the ROIs' "
    "coordinates are tensor values, which shapes do not give; the "
    "per-element work of the bins is not counted";

/* ceil(log2 n) for n >= 1; 0 for n <= 1. */
static int64_t
ceil_log2(int64_t n)
{
    int64_t levels = 0;
    while (levels < 63 && ((int64_t)1 << levels) < n) {
        levels++;
    }
    return levels;
}

/* floor(log2 k) + 1: the levels of a binary heap of k elements; 0 for k = 0.
 */
static int64_t
heap_levels(int64_t k)
{
    int64_t levels = 0;
    while (k > 0) {
        levels++;
        k >>= 1;
    }
    return levels;
}

/* The size of `self` along the dim argument at dim_index (default -1); 1 for
 * a 0-D tensor. */
static int
dim_width(const ts_op_call *call,
          const ts_shape *x,
          int dim_index,
          int64_t *width,
          ts_error *err)
{
    int dim = 0;
    int rc;
    if (x->ndim == 0) {
        *width = 1;
        return TS_OK;
    }
    if (!given(arg_at(call, dim_index))) {
        *width = x->dims[x->ndim - 1];
        return TS_OK;
    }
    rc = wrap_dim(arg_at(call, dim_index), x->ndim, &dim, err);
    if (rc == TS_OK) {
        *width = x->dims[dim];
    }
    return rc;
}

static int
int_at(
    const ts_op_call *call, int i, const char *name, int64_t *v, ts_error *err)
{
    const ts_op_arg *a = arg_at(call, i);
    if (a->kind != TS_ARG_INT) {
        return ts_error_set(
            err, TS_EUNSUPPORTED, "The %s argument must be an int.", name);
    }
    *v = a->i;
    return TS_OK;
}

/* A tensor argument of a given rank. */
static int
tensor_of_rank(const ts_op_call *call,
               int i,
               int ndim,
               const char *name,
               const ts_shape **s,
               ts_error *err)
{
    *s = tensor_at(call, i);
    if (*s == NULL || (*s)->ndim != ndim) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The formula needs %s as a %d-D tensor.",
                            name,
                            ndim);
    }
    return TS_OK;
}

/* ---- rounding and remainders ------------------------------------------- */

/* round: one rounding per output element; round(decimals=d != 0) scales by
 * 10^d, rounds and scales back (3). */
int
ts_opf_round(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    const ts_op_arg *d = arg_at(call, 1);
    int64_t cost = 1;
    if (given(d)) {
        if (d->kind != TS_ARG_INT) {
            result_clear(out);
            return ts_error_set(
                err, TS_EUNSUPPORTED, "The decimals argument must be an int.");
        }
        cost = d->i != 0 ? 3 : 1;
    }
    return per_output(call, DT_LEAVES, cost, out, err);
}

/* remainder: a - b*floor(a/b), a divide, a floor, a multiply and a subtract
 * per output element. */
int
ts_opf_remainder(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 4, out, err);
}

/* floor_divide: floor(a / b), a divide and a rounding per output element.
 * Integer operands (index arithmetic, such as a Mixture-of-Experts router's
 * token index // top_k) count 0. */
int
ts_opf_floor_divide(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_output(call, DT_LEAVES, 2, out, err);
}

/* histc(input, bins, min, max): each element's bin, (x - min) * bins /
 * (max - min), is an index that addresses a counter, and each count is an
 * integer increment: index work, which the convention excludes as it
 * excludes a lookup's index (upsample_nearest, embedding). It counts 0 for
 * floating and integer inputs alike, so that a Mixture-of-Experts router,
 * which histograms float expert ids on CPU and integer ids on CUDA (and
 * meta), counts the same on every device. Listed in by_operator with 0. */
int
ts_opf_histc(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    result_clear(out);
    return check_tensors(call, err);
}

/* ---- comparison-based selections --------------------------------------- */

/* sort: N*ceil(log2 n) comparisons, n = the size along dim (N/n rows of n
 * keys). sort.stable has the keyword-only `stable` before dim. */
int
ts_opf_sort(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    int64_t width = 0;
    bool count;
    int dim_index =
        overload_is(call, "stable") || overload_is(call, "values_stable") ? 2
                                                                          : 1;
    int rc = supp_begin(call, DT_SELF, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = dim_width(call, x, dim_index, &width, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_mul(&c, c_numel(&c, x), ceil_log2(width)), out, err);
}

/* topk(k): every one of the n keys of a row is compared once per level of a
 * k-element heap: N*(floor(log2 k) + 1); k = 0 counts 0. */
int
ts_opf_topk(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    int64_t width = 0, k = 0;
    bool count;
    int rc = supp_begin(call, DT_SELF, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = count_at(call, 1, "k", &k, err);
    }
    if (rc == TS_OK) {
        rc = dim_width(call, x, 2, &width, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (k > width) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "k (%lld) is larger than the dimension (%lld).",
                            (long long)k,
                            (long long)width);
    }
    return finish(&c, c_mul(&c, c_numel(&c, x), heap_levels(k)), out, err);
}

/* _unique2: a sort of the N flattened keys (N*ceil(log2 N)) and a
 * comparison of each adjacent pair (N - 1); inverse indices and counts are
 * integer work. */
int
ts_opf_unique(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    int64_t n;
    bool count;
    int rc = supp_begin(call, DT_SELF, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc != TS_OK) {
        return rc;
    }
    n = c_numel(&c, x);
    return finish(
        &c, c_add(&c, c_mul(&c, n, ceil_log2(n)), max0(n - 1)), out, err);
}

/* torchvision::nms(dets (N, 4), scores (N,), iou_threshold), as the CPU
 * kernel: sort the scores (N*ceil(log2 N)), box areas (2 subtracts and a
 * multiply each: 3N), then the IoU test of every pair of sorted boxes, as if
 * no box were suppressed (the kernel skips the rows and columns of
 * suppressed boxes, a saving that depends on the boxes' values): 4 max/min
 * for the intersection, 2 subtracts and 2 clamps for its sides, a multiply
 * for its area, 2 adds/subtracts and a divide for the IoU, a comparison with
 * the threshold: 13 per pair, N*(N - 1)/2 pairs. */
int
ts_opf_nms(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *dets;
    int64_t n, pairs, flops;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = tensor_of_rank(call, 0, 2, "dets", &dets, err);
    if (rc != TS_OK) {
        return rc;
    }
    n = dets->dims[0];
    pairs = n > 1 ? c_mul(&c, n, n - 1) / 2 : 0;
    flops = c_add(&c, c_mul(&c, n, ceil_log2(n)), c_mul(&c, 3, n));
    flops = c_add(&c, flops, c_mul(&c, 13, pairs));
    return finish(&c, flops, out, err);
}

/* ---- ROI sampling (torchvision) ---------------------------------------- */

/* The sample points per bin of roi_align/ps_roi_align: sampling_ratio^2, or
 * a lower bound (marked incomplete) when it is adaptive. */
static int64_t
samples_per_bin(calc *c,
                int64_t sampling_ratio,
                bool aligned,
                ts_op_result *out)
{
    if (sampling_ratio > 0) {
        return c_mul(c, sampling_ratio, sampling_ratio);
    }
    out->incomplete = true;
    out->incomplete_message = MSG_ADAPTIVE_SAMPLING;
    return aligned ? 0 : 1;
}

/* The pooled size arguments at 3 and 4. */
static int
pooled_size(const ts_op_call *call, int64_t *ph, int64_t *pw, ts_error *err)
{
    int rc = count_at(call, 3, "pooled_height", ph, err);
    return rc == TS_OK ? count_at(call, 4, "pooled_width", pw, err) : rc;
}

/* torchvision::roi_align(input (B, C, H, W), rois (K, 5), spatial_scale,
 * pooled_height, pooled_width, sampling_ratio, aligned) -> (K, C, ph, pw).
 * The CPU kernel computes each sample point's four bilinear weights once for
 * all channels (2 fractional offsets, 2 complements, 4 products: 8), then per
 * channel and sample 4 multiplies and 4 adds (8), and one divide per output
 * element by the sample count: K*ph*pw*S*(8 + 8*C) + K*C*ph*pw, S = samples
 * per bin (sampling_ratio^2). */
int
ts_opf_roi_align(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x, *rois;
    int64_t ph = 0, pw = 0, ratio = 0, s, points, bins, flops;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = tensor_of_rank(call, 0, 4, "input", &x, err);
    if (rc == TS_OK) {
        rc = tensor_of_rank(call, 1, 2, "rois", &rois, err);
    }
    if (rc == TS_OK) {
        rc = pooled_size(call, &ph, &pw, err);
    }
    if (rc == TS_OK) {
        rc = int_at(call, 5, "sampling_ratio", &ratio, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    s = samples_per_bin(&c, ratio, flag_at(call, 6, false), out);
    bins = c_mul(&c, c_mul(&c, rois->dims[0], ph), pw);
    points = c_mul(&c, bins, s);
    flops = c_mul(&c, points, c_add(&c, 8, c_mul(&c, 8, x->dims[1])));
    flops = c_add(&c, flops, c_mul(&c, bins, x->dims[1]));
    if (bins == 0 || x->dims[1] == 0) {
        /* no output element: exactly 0, whatever the sampling */
        result_clear(out);
    }
    return finish(&c, flops, out, err);
}

/* torchvision::ps_roi_align(input (B, C, H, W), rois (K, 5), spatial_scale,
 * pooled_height, pooled_width, sampling_ratio) -> (K, C/(ph*pw), ph, pw):
 * every output element reads its own input channel, so each sample's
 * bilinear weights are computed for it (8), the four taps weighted and
 * summed (7) and accumulated (1), and the sum divided by the sample count:
 * out*(16*S + 1). */
int
ts_opf_ps_roi_align(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x, *rois, *y;
    int64_t ph = 0, pw = 0, ratio = 0, s;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = tensor_of_rank(call, 0, 4, "input", &x, err);
    if (rc == TS_OK) {
        rc = tensor_of_rank(call, 1, 2, "rois", &rois, err);
    }
    if (rc == TS_OK) {
        rc = pooled_size(call, &ph, &pw, err);
    }
    if (rc == TS_OK) {
        rc = int_at(call, 5, "sampling_ratio", &ratio, err);
    }
    if (rc == TS_OK) {
        rc = need_output(call, &y, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    /* no aligned argument: the kernel always offsets by half a pixel and
     * does not widen empty ROIs, so a bin may take 0 samples */
    s = samples_per_bin(&c, ratio, true, out);
    if (c_numel(&c, y) == 0) {
        result_clear(out);
    }
    return finish(&c,
                  c_mul(&c, c_numel(&c, y), c_add(&c, c_mul(&c, 16, s), 1)),
                  out,
                  err);
}

/* torchvision::roi_pool and ps_roi_pool: each bin takes the max (roi_pool)
 * or the mean (ps_roi_pool) of the feature-map elements its ROI covers; how
 * many depends on the ROI coordinates, which are tensor values. Counted 0, a
 * lower bound marked incomplete. */
int
ts_opf_roi_pool(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    const ts_shape *x, *rois;
    int64_t ph = 0, pw = 0;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = tensor_of_rank(call, 0, 4, "input", &x, err);
    if (rc == TS_OK) {
        rc = tensor_of_rank(call, 1, 2, "rois", &rois, err);
    }
    if (rc == TS_OK) {
        rc = pooled_size(call, &ph, &pw, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    out->flops = 0;
    /* no bin at all: exactly 0 */
    if (rois->dims[0] != 0 && x->dims[1] != 0 && ph != 0 && pw != 0) {
        out->incomplete = true;
        out->incomplete_message = MSG_ROI_POOL_BINS;
    }
    return TS_OK;
}

/* torchvision::deform_conv2d(input (B, Cin, H, W), weight (Cout, Cin/g, kh,
 * kw), offset, mask, bias, strides, paddings, dilations, groups,
 * offset_groups, use_mask) -> (B, Cout, Ho, Wo), as the CPU kernel:
 * deformable im2col fills B*Cin*kh*kw*Ho*Wo columns, each at a position
 * shifted by its offsets (2 adds) and bilinearly interpolated (2 fractional
 * offsets, 2 complements, 4 weight products, 4 multiplies and 3 adds: 15),
 * times its mask value with use_mask (1); then the grouped matrix product
 * counted as aten.convolution's FlopCounterMode count (2 per multiply-add)
 * and the bias add the kernel always makes (B*Cout*Ho*Wo). */
int
ts_opf_deform_conv2d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x, *w, *y;
    int64_t spatial, columns, window, flops;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = tensor_of_rank(call, 0, 4, "input", &x, err);
    if (rc == TS_OK) {
        rc = tensor_of_rank(call, 1, 4, "weight", &w, err);
    }
    if (rc == TS_OK) {
        rc = need_output(call, &y, err);
    }
    if (rc == TS_OK && y->ndim != 4) {
        rc = ts_error_set(
            err, TS_EUNSUPPORTED, "The output must be a 4-D tensor.");
    }
    if (rc != TS_OK) {
        return rc;
    }
    spatial = c_mul(&c, y->dims[2], y->dims[3]);
    window = c_mul(&c, w->dims[2], w->dims[3]);
    columns = c_mul(
        &c, c_mul(&c, c_mul(&c, x->dims[0], x->dims[1]), window), spatial);
    flops = c_mul(&c, columns, 17 + (flag_at(call, 13, false) ? 1 : 0));
    /* 2 * B * Cout * (Cin/g) * kh * kw * Ho * Wo */
    flops = c_add(&c,
                  flops,
                  c_mul(&c,
                        c_mul(&c, c_mul(&c, 2, y->dims[0]), w->dims[0]),
                        c_mul(&c, c_mul(&c, w->dims[1], window), spatial)));
    flops = c_add(&c, flops, c_numel(&c, y));
    return finish(&c, flops, out, err);
}

/* ---- grid sampling and bicubic upsampling (ATen) ----------------------- */

/* aten.grid_sampler_2d(input (N, C, H, W), grid (N, Ho, Wo, 2),
 * interpolation_mode, padding_mode, align_corners), as the CPU kernel: per
 * grid point, its two coordinates unnormalized (a multiply-add each: 4),
 * padded (per coordinate pair: zeros 0, border 4 clamps, reflection 18: per
 * axis |x - min|, fmod, floor of a division, the reflected side and 2
 * clamps), once for bilinear and nearest and for each of the 16 taps of
 * bicubic; bilinear: 8 for the four weights and 7 per channel (4 products, 3
 * adds); nearest: 2 roundings and a lookup; bicubic: 2 floors, 2 fractions
 * and 2*25 for the cubic coefficients of both axes, and 35 per channel (five
 * 4-tap cubic interpolations of 7). */
int
ts_opf_grid_sampler_2d(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err)
{
    calc c = {false};
    const ts_shape *x, *grid;
    int64_t mode = 0, padding = 0, pad_cost, taps, point, per_channel;
    int64_t points, flops;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = tensor_of_rank(call, 0, 4, "input", &x, err);
    if (rc == TS_OK) {
        rc = tensor_of_rank(call, 1, 4, "grid", &grid, err);
    }
    if (rc == TS_OK) {
        rc = int_at(call, 2, "interpolation_mode", &mode, err);
    }
    if (rc == TS_OK) {
        rc = int_at(call, 3, "padding_mode", &padding, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    switch (padding) {
        case 0:
            pad_cost = 0;
            break;
        case 1:
            pad_cost = 4;
            break;
        case 2:
            pad_cost = 18;
            break;
        default:
            return ts_error_set(err,
                                TS_EUNSUPPORTED,
                                "Unknown grid_sampler padding_mode %lld.",
                                (long long)padding);
    }
    switch (mode) {
        case 0: /* bilinear */
            taps = 1;
            point = 8;
            per_channel = 7;
            break;
        case 1: /* nearest */
            taps = 1;
            point = 2;
            per_channel = 0;
            break;
        case 2: /* bicubic */
            taps = 16;
            point = 54;
            per_channel = 35;
            break;
        default:
            return ts_error_set(err,
                                TS_EUNSUPPORTED,
                                "Unknown grid_sampler interpolation_mode "
                                "%lld.",
                                (long long)mode);
    }
    points = c_mul(&c, c_mul(&c, grid->dims[0], grid->dims[1]), grid->dims[2]);
    flops = c_mul(&c, points, 4 + taps * pad_cost + point);
    flops = c_add(
        &c, flops, c_mul(&c, c_mul(&c, points, x->dims[1]), per_channel));
    return finish(&c, flops, out, err);
}

/* upsample_bicubic2d: 4 cubic interpolations along a row and one along the
 * column, 4 multiplies and 3 adds each: 35 per output element (coefficients
 * and indices are per output row or column, as for upsample_bilinear2d). */
int
ts_opf_upsample_bicubic2d(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err)
{
    return per_output(call, DT_LEAVES, 35, out, err);
}
