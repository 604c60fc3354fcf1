/* Losses, index lookups and the oneDNN LSTM kernel under torchscan_flops_v1
 * (TorchScan extensions, TS_OPF_EXTENSION): the loss functions and their
 * gradients, lookups that count 0 and the gradients that accumulate them,
 * EmbeddingBag, and nn.LSTM's CPU kernel with its gradient.
 */
#include "op_formulas_internal.h"

/* ---- losses --------------------------------------------------------------
 * reduction: 0 none, 1 mean, 2 sum (at::Reduction); absent means mean. */
static int
reduction_at(const ts_op_call *call, int index, int64_t *mode, ts_error *err)
{
    const ts_op_arg *r = arg_at(call, index);
    /* The schema default of every loss with a default is Mean. */
    if (r->kind == TS_ARG_ABSENT) {
        *mode = 1;
        return TS_OK;
    }
    if (r->kind != TS_ARG_INT || r->i < 0 || r->i > 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Loss FLOPs need reduction as 0 (none), 1 (mean) "
                            "or 2 (sum).");
    }
    *mode = r->i;
    return TS_OK;
}

/* nll_loss{,2d}_forward(self, target, weight, reduction, ignore_index), T
 * targets: picking the target's log-probability is a lookup (0); it is
 * negated (1) and weighted (1 with weight) per target; sum adds T - 1;
 * mean also adds the T - 1 weights when weighted and divides once. Targets
 * equal to ignore_index are counted too: their values are data. */
int
ts_opf_nll_loss(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *target = tensor_at(call, 1);
    bool count, weighted = given(arg_at(call, 2));
    int64_t mode = 0, t, flops;
    int rc = supp_begin(call, DT_SELF, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(target, "the target", err);
    if (rc == TS_OK) {
        rc = reduction_at(call, 3, &mode, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    t = c_numel(&c, target);
    flops = c_mul(&c, t, 1 + (weighted ? 1 : 0));
    if (mode != 0) {
        flops = c_add(&c, flops, max0(t - 1));
    }
    if (mode == 1) {
        flops = c_add(&c, flops, 1 + (weighted ? max0(t - 1) : 0));
    }
    return finish(&c, flops, out, err);
}

/* nll_loss{,2d}_backward(grad_output, self, target, weight, reduction,
 * ignore_index, total_weight): -grad (* weight) (/ total_weight for mean)
 * written at each target position of a zero-filled gradient. */
int
ts_opf_nll_loss_backward(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err)
{
    calc c = {false};
    const ts_shape *target = tensor_at(call, 2);
    bool count, weighted = given(arg_at(call, 3));
    int64_t mode = 0;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(target, "the target", err);
    if (rc == TS_OK) {
        rc = reduction_at(call, 4, &mode, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c,
                  c_mul(&c,
                        c_numel(&c, target),
                        1 + (weighted ? 1 : 0) + (mode == 1 ? 1 : 0)),
                  out,
                  err);
}

/* mse_loss(self, target, reduction): difference and square per element
 * (2N); sum adds N - 1, mean adds N - 1 and divides once. */
int
ts_opf_mse_loss(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    bool count;
    int64_t mode = 0, n, flops;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = reduction_at(call, 2, &mode, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    n = c_numel(&c, x);
    flops = c_mul(&c, 2, n);
    if (mode != 0) {
        flops = c_add(&c, flops, c_add(&c, max0(n - 1), mode == 1 ? 1 : 0));
    }
    return finish(&c, flops, out, err);
}

/* mse_loss_backward(grad, self, target, reduction): (self - target) * norm
 * * grad with norm = 2 (or 2/N for mean, a scalar): 3 per element. */
int
ts_opf_mse_loss_backward(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 1);
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_mul(&c, 3, c_numel(&c, x)), out, err);
}

/* Adds the reduction of a loss over n elements to its elementwise cost:
 * sum n - 1 adds, mean one division more, none nothing. */
static int64_t
loss_reduction(calc *c, int64_t elementwise, int64_t n, int64_t mode)
{
    if (mode == 0) {
        return elementwise;
    }
    return c_add(c, elementwise, c_add(c, max0(n - 1), mode == 1 ? 1 : 0));
}

/* A loss over its input (argument 0) costing `cost` per element, plus
 * `weighted` per element when the tensor at weight_index is given, and
 * its reduction (argument reduction_index). */
static int
elementwise_loss(const ts_op_call *call,
                 int64_t cost,
                 int weight_index,
                 int reduction_index,
                 ts_op_result *out,
                 ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 0);
    int64_t mode = 0, n;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = reduction_at(call, reduction_index, &mode, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (weight_index >= 0 && given(arg_at(call, weight_index))) {
        cost++;
    }
    n = c_numel(&c, x);
    return finish(
        &c, loss_reduction(&c, c_mul(&c, cost, n), n, mode), out, err);
}

/* binary_cross_entropy(p, t, weight, reduction), the CPU kernel's
 * (t - 1) * max(log1p(-p), -100) - t * max(log(p), -100): negate, log1p,
 * max, subtract, multiply, log, max, multiply, subtract: 9 per element,
 * +1 with weight, then the reduction. */
int
ts_opf_binary_cross_entropy(const ts_op_call *call,
                            ts_op_result *out,
                            ts_error *err)
{
    return elementwise_loss(call, 9, 2, 3, out, err);
}

/* binary_cross_entropy_backward(grad, p, t, weight, reduction):
 * grad * (p - t) / max((1 - p) * p, eps): 6 per element, +1 with weight,
 * +1 for mean (the division by N). */
int
ts_opf_binary_cross_entropy_backward(const ts_op_call *call,
                                     ts_op_result *out,
                                     ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 1);
    int64_t mode = 0;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc == TS_OK) {
        rc = reduction_at(call, 4, &mode, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    return finish(
        &c,
        c_mul(&c,
              c_numel(&c, x),
              6 + (given(arg_at(call, 3)) ? 1 : 0) + (mode == 1 ? 1 : 0)),
        out,
        err);
}

/* binary_cross_entropy_with_logits(x, t, weight, pos_weight, reduction):
 * (1 - t) * x - log_sigmoid(x): subtract, multiply, log_sigmoid (7, as
 * log_sigmoid_forward), subtract: 10 per element; pos_weight scales the
 * log-sigmoid term by (pos_weight - 1) * t + 1 (3 more); weight multiplies
 * (1 more); then the reduction. Its gradient runs as ordinary operators. */
int
ts_opf_bce_with_logits(const ts_op_call *call,
                       ts_op_result *out,
                       ts_error *err)
{
    return elementwise_loss(
        call, 10 + (given(arg_at(call, 3)) ? 3 : 0), 2, 4, out, err);
}

/* smooth_l1_loss(x, t, reduction, beta) and huber_loss(x, t, reduction,
 * delta), both branches of z = |x - t| < b ? 0.5*z*z/b (or 0.5*z*z) :
 * z - 0.5*b (or b*(z - 0.5*b)): subtract, abs, comparison, three
 * operations per branch, selection: 8 per element, then the reduction. */
int
ts_opf_smooth_l1_loss(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return elementwise_loss(call, 8, -1, 2, out, err);
}

/* smooth_l1_loss_backward / huber_loss_backward(grad, x, t, reduction, b):
 * d = x - t; d < -b ? -s : d > b ? s : d * s / b (s = grad * norm, norm =
 * 1/N for mean): subtract, two comparisons, a selection, the scaling
 * (2) and the division: 7 per element. */
int
ts_opf_smooth_l1_loss_backward(const ts_op_call *call,
                               ts_op_result *out,
                               ts_error *err)
{
    calc c = {false};
    const ts_shape *x = tensor_at(call, 1);
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(x, "the input", err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_mul(&c, 7, c_numel(&c, x)), out, err);
}

/* ---- lookups -------------------------------------------------------------
 * embedding, gather, index, index_select, nearest upsampling: every output
 * element is an input element that an index selects. Index arithmetic is
 * integer work, so they count 0 -- through an explicit formula, not the
 * ignore list, so that they appear in by_operator next to the gradients
 * that do accumulate (embedding_dense_backward, index_put). Only the layout
 * guard applies: no arithmetic means complex operands change nothing. */
int
ts_opf_lookup(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    result_clear(out);
    return check_tensors(call, err);
}

/* embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
 * scale_grad_by_freq): every gradient row is added into its table row (one
 * add per grad_output element); scale_grad_by_freq divides each by its
 * index's frequency first (one more per element; counting the frequencies
 * is integer work). Rows of padding_idx are counted too: which rows they are
 * is data. */
int
ts_opf_embedding_backward(const ts_op_call *call,
                          ts_op_result *out,
                          ts_error *err)
{
    return per_input(call, flag_at(call, 4, false) ? 2 : 1, out, err);
}

/* index_put(self, indices, values, accumulate), _index_put_impl_ and
 * _unsafe_index_put: without accumulate a scatter of values (data
 * movement, 0); with it, one add per element of values. values must have
 * the full rank of the indexed result (first index's dims plus the
 * unindexed dims of self): values broadcast to a higher rank would hide how
 * many positions are added to, which the shapes alone do not tell. */
int
ts_opf_index_put(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *self = tensor_at(call, 0);
    const ts_op_arg *indices = arg_at(call, 1);
    const ts_shape *values = tensor_at(call, 2);
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count || !flag_at(call, 3, false)) {
        return rc;
    }
    if (self == NULL || values == NULL || indices->kind != TS_ARG_TENSORS
        || indices->ntensors < 1
        || values->ndim
               != indices->tensor.ndim + self->ndim - indices->ntensors) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Accumulating index_put FLOPs need values with "
                            "the full rank of the indexed positions.");
    }
    return finish(&c, c_numel(&c, values), out, err);
}

/* scatter_add(self, dim, index, src): one add per index element. */
int
ts_opf_scatter_add(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *index = tensor_at(call, 2);
    bool count;
    int rc = supp_begin(call, DT_SELF, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_tensor(index, "the index", err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_numel(&c, index), out, err);
}

/* scatter(self, dim, index, src|value, *, reduce): a plain scatter moves
 * data (0); reduce="add" or "multiply" does one operation per index
 * element. */
int
ts_opf_scatter(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    const ts_op_arg *reduce = arg_at(call, 4);
    if (reduce->kind != TS_ARG_STR) {
        return ts_opf_lookup(call, out, err);
    }
    if (reduce->str == NULL
        || (strcmp(reduce->str, "add") != 0
            && strcmp(reduce->str, "multiply") != 0)) {
        result_clear(out);
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "scatter FLOPs cover reduce='add' and "
                            "'multiply' only.");
    }
    return ts_opf_scatter_add(call, out, err);
}

/* ---- oneDNN LSTM layer ---------------------------------------------------
 * mkldnn_rnn_layer runs one direction of one LSTM layer over all time
 * steps (the CPU path of nn.LSTM). Per time step and batch row, with input
 * width I, recurrent width R (= hidden H without projections):
 *  - gates: W_ih x and W_hh h, 2 * 4H * (I + R) with the matmul
 *    convention, their sum 4H, and the two biases 8H when present;
 *  - cell: three sigmoid gates (12H), the tanh candidate (6H),
 *    c = f*c + i*g (3H), h = o * tanh(c) (7H): 28H.
 * The backward pass (mkldnn_rnn_layer_backward) reuses the saved gates:
 *  - dh = dy + dh_next (H), do = dh * tanh(c) (H),
 *    dc = dc_next + dh * o * (1 - tanh(c)^2) (5H),
 *    di, dg, df, dc_prev (4H), sigmoid gate gradients d*s*(1-s) (9H),
 *    tanh gate gradient d*(1-g^2) (3H): 23H;
 *  - the bias gradient sums the gate gradients (4H when biased; the second
 *    bias has the same gradient);
 *  - four matrix products: dx, dW_ih, dh_prev, dW_hh: 16H * (I + R). */
static int
lstm_sizes(const ts_op_call *call,
           int mode_index,
           int hidden_index,
           int64_t *rows,
           int64_t *in,
           int64_t *rec,
           int64_t *hidden,
           ts_error *err)
{
    const ts_shape *x = tensor_at(call, 0);
    const ts_shape *w_ih = tensor_at(call, 1);
    const ts_shape *w_hh = tensor_at(call, 2);
    const ts_op_arg *mode = arg_at(call, mode_index);
    calc c = {false};
    int rc;
    if (mode->kind != TS_ARG_INT || mode->i != 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "oneDNN RNN FLOPs cover LSTM layers (mode 2) "
                            "only.");
    }
    rc = count_at(call, hidden_index, "hidden_size", hidden, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (x == NULL || x->ndim < 1 || w_ih == NULL || w_hh == NULL
        || w_ih->ndim != 2 || w_hh->ndim != 2
        || w_ih->dims[1] != x->dims[x->ndim - 1]
        || w_ih->dims[0] != c_mul(&c, 4, *hidden)
        || w_hh->dims[0] != w_ih->dims[0] || c.overflow) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "LSTM FLOPs need an input of width I and gate "
                            "weights of shapes (4H, I) and (4H, R).");
    }
    *in = w_ih->dims[1];
    *rec = w_hh->dims[1];
    *rows = *in == 0 ? 0 : c_numel(&c, x) / *in;
    return TS_OK;
}

int
ts_opf_mkldnn_lstm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    int64_t rows = 0, in = 0, rec = 0, h = 0, per_row;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = lstm_sizes(call, 9, 10, &rows, &in, &rec, &h, err);
    if (rc != TS_OK) {
        return rc;
    }
    per_row = c_mul(&c, c_mul(&c, 8, h), c_add(&c, in, rec));
    per_row = c_add(
        &c, per_row, c_mul(&c, h, 4 + 28 + (flag_at(call, 12, true) ? 8 : 0)));
    return finish(&c, c_mul(&c, rows, per_row), out, err);
}

int
ts_opf_mkldnn_lstm_backward(const ts_op_call *call,
                            ts_op_result *out,
                            ts_error *err)
{
    calc c = {false};
    int64_t rows = 0, in = 0, rec = 0, h = 0, per_row;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = lstm_sizes(call, 14, 15, &rows, &in, &rec, &h, err);
    if (rc != TS_OK) {
        return rc;
    }
    per_row = c_mul(&c, c_mul(&c, 16, h), c_add(&c, in, rec));
    per_row = c_add(
        &c, per_row, c_mul(&c, h, 23 + (flag_at(call, 17, true) ? 4 : 0)));
    return finish(&c, c_mul(&c, rows, per_row), out, err);
}

/* _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode,
 * sparse, per_sample_weights, include_last_offset, padding_idx) and
 * _embedding_bag_forward_only: L looked-up rows of width D reduced into
 * the B*D outputs: L*D - B*D adds (sum, mean) or comparisons (max), one
 * division per output for mean, one multiply per looked-up element with
 * per_sample_weights (sum mode only). */
int
ts_opf_embedding_bag(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_shape *w = tensor_at(call, 0);
    const ts_shape *indices = tensor_at(call, 1);
    const ts_op_arg *mode = arg_at(call, 4);
    const ts_shape *y;
    int64_t looked_up, o, flops;
    bool count;
    int rc = supp_begin(call, DT_SELF, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = need_output(call, &y, err);
    if (rc == TS_OK && (w == NULL || w->ndim != 2 || indices == NULL)) {
        rc = ts_error_set(err,
                          TS_EUNSUPPORTED,
                          "EmbeddingBag FLOPs need a 2-D weight and the "
                          "indices.");
    }
    if (rc == TS_OK && mode->kind != TS_ARG_ABSENT
        && (mode->kind != TS_ARG_INT || mode->i < 0 || mode->i > 2)) {
        rc = ts_error_set(err,
                          TS_EUNSUPPORTED,
                          "EmbeddingBag FLOPs need mode 0 (sum), 1 (mean) "
                          "or 2 (max).");
    }
    if (rc != TS_OK) {
        return rc;
    }
    looked_up = c_mul(&c, c_numel(&c, indices), w->dims[1]);
    o = c_numel(&c, y);
    flops = max0(c_sub(&c, looked_up, o));
    if (mode->kind == TS_ARG_INT && mode->i == 1) {
        flops = c_add(&c, flops, o);
    }
    if (given(arg_at(call, 6))) {
        flops = c_add(&c, flops, looked_up);
    }
    return finish(&c, flops, out, err);
}

/* _embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size,
 * maximum_indices, num_weights, scale_grad_by_freq, mode, sparse,
 * per_sample_weights, padding_idx): sum and mean add each bag's gradient
 * row into every looked-up row (L*D adds), mean first divides each bag's
 * gradient by its size (one per grad element), per_sample_weights and
 * scale_grad_by_freq scale each added row (L*D each); max adds the
 * gradient at the argmax rows only (one per grad element). */
int
ts_opf_embedding_bag_backward(const ts_op_call *call,
                              ts_op_result *out,
                              ts_error *err)
{
    calc c = {false};
    const ts_shape *g = tensor_at(call, 0);
    const ts_shape *indices = tensor_at(call, 1);
    const ts_op_arg *mode = arg_at(call, 8);
    int64_t looked_up, flops;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (g == NULL || g->ndim != 2 || indices == NULL
        || mode->kind != TS_ARG_INT || mode->i < 0 || mode->i > 2) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "EmbeddingBag gradient FLOPs need a 2-D "
                            "gradient, the indices and mode 0, 1 or 2.");
    }
    if (mode->i == 2) {
        return finish(&c, c_numel(&c, g), out, err);
    }
    looked_up = c_mul(&c, c_numel(&c, indices), g->dims[1]);
    flops = c_mul(&c,
                  looked_up,
                  1 + (given(arg_at(call, 10)) ? 1 : 0)
                      + (flag_at(call, 7, false) ? 1 : 0));
    if (mode->i == 1) {
        flops = c_add(&c, flops, c_numel(&c, g));
    }
    return finish(&c, flops, out, err);
}
