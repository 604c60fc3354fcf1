/* Native operator formulas: torch.utils.flop_counter (FlopCounterMode) of
 * torch 2.13 replicated count for count, quirks included, because contract
 * 1.4 takes the counts of matrix products, convolutions and fused attention
 * from FlopCounterMode (table flag TS_OPF_NATIVE).
 */
#include "op_formulas_internal.h"

/* ==== native formulas (FlopCounterMode parity) ========================== */

/* mm_flop: m*n*2*k, two 2-D operands with equal inner dimensions. */
static int
mm_core(calc *c,
        const ts_shape *a,
        const ts_shape *b,
        int64_t *flops,
        ts_error *err)
{
    if (a == NULL || b == NULL || a->ndim != 2 || b->ndim != 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The matrix product formula needs two 2-D "
                            "tensors.");
    }
    if (a->dims[1] != b->dims[0]) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Matrix product inner dimensions differ (%lld "
                            "and %lld).",
                            (long long)a->dims[1],
                            (long long)b->dims[0]);
    }
    *flops =
        c_mul(c, c_mul(c, c_mul(c, a->dims[0], b->dims[1]), 2), a->dims[1]);
    return TS_OK;
}

static int
bmm_core(calc *c,
         const ts_shape *a,
         const ts_shape *b,
         int64_t *flops,
         ts_error *err)
{
    if (a == NULL || b == NULL || a->ndim != 3 || b->ndim != 3) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The batched matrix product formula needs two "
                            "3-D tensors.");
    }
    if (a->dims[0] != b->dims[0] || a->dims[2] != b->dims[1]) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Batched matrix product batch or inner "
                            "dimensions differ.");
    }
    *flops = bmm_count(c, a->dims[0], a->dims[1], a->dims[2], b->dims[2]);
    return TS_OK;
}

/* Shared body of mm/addmm/_scaled_mm (mat_first = index of the first
 * matrix) and bmm/baddbmm. */
static int
matmul_formula(const ts_op_call *call,
               int first,
               bool batched,
               ts_op_result *out,
               ts_error *err)
{
    calc c = {false};
    int64_t flops = 0;
    int rc = native_begin(call, out, err);
    if (rc != TS_OK) {
        return rc;
    }
    rc = batched ? bmm_core(&c,
                            tensor_at(call, first),
                            tensor_at(call, first + 1),
                            &flops,
                            err)
                 : mm_core(&c,
                           tensor_at(call, first),
                           tensor_at(call, first + 1),
                           &flops,
                           err);
    if (rc != TS_OK) {
        return rc;
    }
    return native_finish(call, &c, flops, out, err);
}

int
ts_opf_mm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return matmul_formula(call, 0, false, out, err);
}

/* addmm counts mat1 @ mat2 only: FlopCounterMode leaves out the bias add
 * and the beta/alpha scaling. */
int
ts_opf_addmm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return matmul_formula(call, 1, false, out, err);
}

int
ts_opf_bmm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return matmul_formula(call, 0, true, out, err);
}

int
ts_opf_baddbmm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return matmul_formula(call, 1, true, out, err);
}

/* conv_flop_count: prod(conv_shape) * prod(filter) * batch * c_out * c_in
 * * 2, where conv_shape is the output's spatial size (the input's when
 * transposed) and (c_out, c_in, *filter) = w. For a grouped convolution
 * w[1] is c_in/groups, and FlopCounterMode uses it as it is: we do too. */
static int
conv_core(calc *c,
          const ts_shape *x,
          const ts_shape *w,
          const ts_shape *y,
          bool transposed,
          int64_t *flops,
          ts_error *err)
{
    const ts_shape *spatial = transposed ? x : y;
    int64_t n;
    if (x == NULL || w == NULL || x->ndim < 1 || w->ndim < 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The convolution formula needs a batched input "
                            "and a weight with at least two dimensions.");
    }
    if (spatial == NULL) {
        return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_NEEDS_OUTPUT);
    }
    /* Python's shape[2:] is empty (product 1) on shorter shapes. */
    n = spatial->ndim > 2 ? c_prod(c, spatial->dims + 2, spatial->ndim - 2)
                          : 1;
    n = c_mul(c, n, c_prod(c, w->dims + 2, w->ndim - 2));
    n = c_mul(c, n, x->dims[0]);
    n = c_mul(c, n, w->dims[0]);
    n = c_mul(c, n, w->dims[1]);
    *flops = c_mul(c, n, 2);
    return TS_OK;
}

/* FlopCounterMode's conv_flop reads `transposed` as the 7th positional
 * argument (index 6) of every operator it is registered for. */
static int
conv_forward(const ts_op_call *call,
             int transposed_index,
             ts_op_result *out,
             ts_error *err)
{
    calc c = {false};
    int64_t flops = 0;
    bool transposed;
    int rc = native_begin(call, out, err);
    if (rc != TS_OK) {
        return rc;
    }
    transposed =
        transposed_index >= 0 && flag_at(call, transposed_index, false);
    rc = conv_core(&c,
                   tensor_at(call, 0),
                   tensor_at(call, 1),
                   out_at(call, 0),
                   transposed,
                   &flops,
                   err);
    if (rc != TS_OK) {
        return rc;
    }
    return native_finish(call, &c, flops, out, err);
}

/* convolution, _convolution, convolution_overrideable: index 6 is
 * `transposed`. */
int
ts_opf_convolution(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return conv_forward(call, 6, out, err);
}

/* cudnn_convolution has no `transposed` argument: index 6 is `benchmark`,
 * and FlopCounterMode reads it as `transposed` anyway (with benchmark=True
 * it counts the input's spatial size). Parity means copying that. */
int
ts_opf_cudnn_convolution(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err)
{
    return conv_forward(call, 6, out, err);
}

/* _slow_conv2d_forward(self, weight, kernel_size, bias, stride, padding)
 * has six arguments; FlopCounterMode registers conv_flop for it, which then
 * raises TypeError for the missing `transposed`. There is no FlopCounterMode
 * number to match, so we count what conv_flop means for a forward (not
 * transposed) convolution. */
int
ts_opf_slow_conv2d_forward(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    return conv_forward(call, -1, out, err);
}

static ts_shape
swap01(const ts_shape *s)
{
    ts_shape t = *s;
    t.dims[0] = s->dims[1];
    t.dims[1] = s->dims[0];
    return t;
}

/* conv_backward_flop: grad_input is a convolution of grad_output with the
 * weight in the opposite direction; grad_weight is a convolution of the
 * input with grad_output with batch and channels swapped. FlopCounterMode
 * takes the gradients' shapes from the outputs; grad_input always has the
 * input's shape and grad_weight the weight's, so we read those from the
 * arguments and do not depend on how outputs that output_mask leaves
 * undefined are packed into outs. */
int
ts_opf_convolution_backward(const ts_op_call *call,
                            ts_op_result *out,
                            ts_error *err)
{
    calc c = {false};
    int64_t flops = 0, part = 0;
    const ts_shape *go = tensor_at(call, 0);
    const ts_shape *x = tensor_at(call, 1);
    const ts_shape *w = tensor_at(call, 2);
    const ts_op_arg *mask = arg_at(call, 10);
    bool transposed = flag_at(call, 7, false);
    int rc = native_begin(call, out, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (go == NULL || x == NULL || w == NULL || go->ndim < 2 || x->ndim < 2
        || w->ndim < 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "convolution_backward needs grad_output, input "
                            "and weight tensors with at least two "
                            "dimensions.");
    }
    if (mask->kind != TS_ARG_INTS || mask->nints < 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "convolution_backward needs output_mask as a "
                            "list of booleans.");
    }
    if (mask->ints[0] != 0) {
        rc = conv_core(&c, go, w, x, !transposed, &part, err);
        if (rc != TS_OK) {
            return rc;
        }
        flops = c_add(&c, flops, part);
    }
    if (mask->ints[1] != 0) {
        ts_shape tgo = swap01(go), tx = swap01(x), tw = swap01(w);
        if (transposed) {
            rc = conv_core(&c, &tgo, &tx, &tw, false, &part, err);
        }
        else {
            rc = conv_core(&c, &tx, &tgo, &tw, false, &part, err);
        }
        if (rc != TS_OK) {
            return rc;
        }
        flops = c_add(&c, flops, part);
    }
    return native_finish(call, &c, flops, out, err);
}
