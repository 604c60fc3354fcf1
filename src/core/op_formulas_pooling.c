/* Pooling formulas of torchscan_flops_v1: fixed-window and adaptive max and
 * average pooling (contract 2.2), and their gradients (TorchScan
 * extensions, counted like the layer gradients of op_formulas_layers.c: a
 * gradient scattered into a zero-filled buffer counts one add per
 * contribution).
 */
#include "op_formulas_internal.h"

/* Nominal kernel volume K of the kernel_size argument at `index` over
 * `rank` spatial dims (a single value stands for a cube, k^rank). */
static int
kernel_volume(const ts_op_call *call,
              int index,
              int rank,
              calc *c,
              int64_t *volume,
              ts_error *err)
{
    const ts_op_arg *k = arg_at(call, index);
    *volume = 1;
    if (k->kind == TS_ARG_INT || (k->kind == TS_ARG_INTS && k->nints == 1)) {
        int64_t side = k->kind == TS_ARG_INT ? k->i : k->ints[0];
        for (int i = 0; i < rank; i++) {
            *volume = c_mul(c, *volume, side);
        }
    }
    else if (k->kind == TS_ARG_INTS) {
        *volume = c_prod(c, k->ints, k->nints);
    }
    else {
        return ts_error_set(
            err, TS_EUNSUPPORTED, "Pooling FLOPs need kernel_size as ints.");
    }
    if (*volume < 0) {
        return ts_error_set(
            err, TS_EUNSUPPORTED, "Pooling kernel_size must be non-negative.");
    }
    return TS_OK;
}

/* Fixed-window pooling over `rank` spatial dims: K is the nominal kernel
 * volume. Max pooling makes K-1 comparisons per output, average pooling K-1
 * adds and a division. The output is the first result (values, not
 * indices). */
static int
pool_formula(const ts_op_call *call,
             int rank,
             bool maximum,
             ts_op_result *out,
             ts_error *err)
{
    calc c = {false};
    const ts_shape *y;
    int64_t volume = 1;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_output(call, &y, err);
    if (rc == TS_OK) {
        rc = kernel_volume(call, 1, rank, &c, &volume, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (maximum && volume < 1) {
        /* K - 1 comparisons per output: none for an empty window */
        return ts_error_set(
            err, TS_EUNSUPPORTED, "Max pooling kernel_size must be positive.");
    }
    return finish(
        &c,
        c_mul(&c, c_numel(&c, y), maximum ? c_sub(&c, volume, 1) : volume),
        out,
        err);
}

int
ts_opf_max_pool2d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return pool_formula(call, 2, true, out, err);
}

int
ts_opf_max_pool3d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return pool_formula(call, 3, true, out, err);
}

int
ts_opf_avg_pool2d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return pool_formula(call, 2, false, out, err);
}

int
ts_opf_avg_pool3d(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return pool_formula(call, 3, false, out, err);
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

/* Adaptive pooling visits every element of its exact floor/ceil windows;
 * along one axis the windows of L inputs and O outputs cover
 * L + O - gcd(L, O) elements (overlaps included). Visits multiply across
 * axes and leading (batch, channel) dims. `size` is the output_size
 * argument when the call has one (it sets the pooled rank), else NULL. */
static int
adaptive_visits(const ts_shape *x,
                const ts_shape *y,
                const ts_op_arg *size,
                int rank,
                calc *c,
                int64_t *visits,
                ts_error *err)
{
    if (size != NULL && size->kind == TS_ARG_INTS) {
        rank = size->nints;
    }
    if (rank < 1 || x->ndim < rank || y->ndim < rank) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Adaptive pooling FLOPs need input and output "
                            "with the pooled dimensions.");
    }
    *visits = c_prod(c, x->dims, x->ndim - rank);
    for (int i = 0; i < rank; i++) {
        int64_t len = x->dims[x->ndim - rank + i];
        int64_t o = y->dims[y->ndim - rank + i];
        *visits = c_mul(c, *visits, c_sub(c, c_add(c, len, o), gcd64(len, o)));
    }
    return TS_OK;
}

/* Max pooling compares visits - O times, average pooling adds and divides
 * `visits` times. inline: each of the four entry points gets its own copy,
 * as the formulas run once per observed operator call. */
static inline int
adaptive_pool_formula(const ts_op_call *call,
                      int rank,
                      bool maximum,
                      ts_op_result *out,
                      ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    const ts_shape *y;
    int64_t visits = 0;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = need_output(call, &y, err);
    }
    if (rc == TS_OK) {
        rc = adaptive_visits(x, y, arg_at(call, 1), rank, &c, &visits, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (maximum) {
        int64_t outputs = c_numel(&c, y);
        if (!c.overflow && visits < outputs) {
            /* every output is the maximum of a window of >= 1 input */
            return ts_error_set(err,
                                TS_EUNSUPPORTED,
                                "Adaptive max pooling FLOPs need an output "
                                "whose every window holds an input element "
                                "(the input and output shapes disagree).");
        }
        visits = c_sub(&c, visits, outputs);
    }
    return finish(&c, visits, out, err);
}

int
ts_opf_adaptive_max_pool2d(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    return adaptive_pool_formula(call, 2, true, out, err);
}

int
ts_opf_adaptive_max_pool3d(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    return adaptive_pool_formula(call, 3, true, out, err);
}

int
ts_opf_adaptive_avg_pool2d(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    return adaptive_pool_formula(call, 2, false, out, err);
}

int
ts_opf_adaptive_avg_pool3d(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    return adaptive_pool_formula(call, 3, false, out, err);
}

/* ---- pooling gradients ---------------------------------------------------
 * max_pool{2,3}d_with_indices_backward and adaptive_max_pool{2,3}d_backward
 * (grad_output, self, ...): each gradient element is added into the input
 * position its index names: one add per grad_output element. */
int
ts_opf_scatter_grad(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_input(call, 1, out, err);
}

/* avg_pool{2,3}d_backward(grad_output, self, kernel_size, ...): each
 * gradient element is divided by its window's divisor (1) and added into
 * the K positions of its window: K + 1 per grad_output element. */
static int
avg_pool_backward(const ts_op_call *call,
                  int rank,
                  ts_op_result *out,
                  ts_error *err)
{
    calc c = {false};
    const ts_shape *g = tensor_at(call, 0);
    int64_t volume = 1;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(g, "grad_output", err);
    if (rc == TS_OK) {
        rc = kernel_volume(call, 2, rank, &c, &volume, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return finish(
        &c, c_mul(&c, c_numel(&c, g), c_add(&c, volume, 1)), out, err);
}

int
ts_opf_avg_pool2d_backward(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    return avg_pool_backward(call, 2, out, err);
}

int
ts_opf_avg_pool3d_backward(const ts_op_call *call,
                           ts_op_result *out,
                           ts_error *err)
{
    return avg_pool_backward(call, 3, out, err);
}

/* _adaptive_avg_pool{2,3}d_backward(grad_output, self): one division per
 * output window (O) and one add per visit, the forward's visits. */
static int
adaptive_avg_pool_backward(const ts_op_call *call,
                           int rank,
                           ts_op_result *out,
                           ts_error *err)
{
    calc c = {false};
    const ts_shape *g = tensor_at(call, 0);
    const ts_shape *x = tensor_at(call, 1);
    int64_t visits = 0;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(g, "grad_output", err);
    if (rc == TS_OK) {
        rc = need_tensor(x, "the input", err);
    }
    if (rc == TS_OK) {
        rc = adaptive_visits(x, g, NULL, rank, &c, &visits, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_add(&c, visits, c_numel(&c, g)), out, err);
}

int
ts_opf_adaptive_avg_pool2d_backward(const ts_op_call *call,
                                    ts_op_result *out,
                                    ts_error *err)
{
    return adaptive_avg_pool_backward(call, 2, out, err);
}

int
ts_opf_adaptive_avg_pool3d_backward(const ts_op_call *call,
                                    ts_op_result *out,
                                    ts_error *err)
{
    return adaptive_avg_pool_backward(call, 3, out, err);
}
