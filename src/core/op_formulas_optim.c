/* Optimizer formulas: the multi-tensor (_foreach_*) operators and the fused
 * SGD/Adam/AdamW kernels, counted per parameter element by the arithmetic
 * of the single-tensor (for-loop) implementation of torch.optim, so that
 * one optimizer step counts the same whichever implementation ran
 * (foreach=False/True, fused=True).
 *
 * A _foreach_* operator applies its scalar counterpart to every tensor of
 * its first list, so it costs the scalar formula's per-element cost times
 * the elements of that list (the other lists have the same shapes).
 */
#include "op_formulas_internal.h"

/* Elements of the tensor list at `index`. An empty list arrives as an empty
 * int list (Python cannot tell them apart). */
static int
list_numel(const ts_op_call *call,
           int index,
           int64_t *numel,
           int64_t *tensors,
           ts_error *err)
{
    const ts_op_arg *a = arg_at(call, index);
    if (a->kind == TS_ARG_INTS && a->nints == 0) {
        *numel = 0;
        *tensors = 0;
        return TS_OK;
    }
    if (a->kind != TS_ARG_TENSORS || a->numel_sum < 0) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "The formula needs argument %d as a list of "
                            "tensors with concrete shapes.",
                            index);
    }
    *numel = a->numel_sum;
    *tensors = a->ntensors;
    return TS_OK;
}

/* cost * elements of the first list, after the guards. */
static int
per_list_element(const ts_op_call *call,
                 int64_t cost,
                 ts_op_result *out,
                 ts_error *err)
{
    calc c = {false};
    int64_t n = 0, tensors = 0;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = list_numel(call, 0, &n, &tensors, err);
    if (rc != TS_OK) {
        return rc;
    }
    return finish(&c, c_mul(&c, cost, n), out, err);
}

/* A Scalar argument that the scalar formula compares with 1 (alpha,
 * value). Absent means the default 1. A per-tensor list or tensor of
 * scalars (ScalarList / Tensor overloads) is applied as a multiply: it
 * counts as != 1. Tensor lists at that position are the out= argument of
 * the *_out overloads that have no such scalar. */
static int
scalar_or_list_not_one(const ts_op_arg *a,
                       const char *name,
                       bool *not_one,
                       ts_error *err)
{
    switch (a->kind) {
        case TS_ARG_ABSENT:
        case TS_ARG_NONE:
        case TS_ARG_TENSORS:
            *not_one = false;
            return TS_OK;
        case TS_ARG_INT:
        case TS_ARG_BOOL:
        case TS_ARG_REAL:
            return scalar_not_one(a, name, not_one, err);
        case TS_ARG_COMPLEX:
            return ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_REAL_ONLY);
        default:
            *not_one = true;
            return TS_OK;
    }
}

/* _foreach_add / _foreach_sub (Scalar, List, ScalarList, Tensor; in-place
 * and out=): out * (1 + [alpha != 1]) as aten.add, alpha at index 2. */
int
ts_opf_foreach_add(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    bool scaled = false;
    int rc = scalar_or_list_not_one(arg_at(call, 2), "alpha", &scaled, err);
    if (rc != TS_OK) {
        result_clear(out);
        return rc;
    }
    return per_list_element(call, 1 + (scaled ? 1 : 0), out, err);
}

/* Unary and binary one-operation foreach operators: mul, div, sqrt, neg,
 * reciprocal, maximum, minimum, clamp_min, clamp_max: 1 per element. */
int
ts_opf_foreach_unit(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_list_element(call, 1, out, err);
}

/* _foreach_lerp: 3 per element, as aten.lerp. */
int
ts_opf_foreach_lerp(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return per_list_element(call, 3, out, err);
}

/* _foreach_addcmul / _foreach_addcdiv: 2 + [value != 1] per element, as
 * aten.addcmul; value at index 3 (a Scalar, or per-tensor scalars). */
int
ts_opf_foreach_addc(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    bool scaled = false;
    int rc = scalar_or_list_not_one(arg_at(call, 3), "value", &scaled, err);
    if (rc != TS_OK) {
        result_clear(out);
        return rc;
    }
    return per_list_element(call, 2 + (scaled ? 1 : 0), out, err);
}

/* _foreach_norm(self, ord=2, dtype): aten.norm per tensor: order 2 squares,
 * sums and takes a root (2N); orders 1 and +-inf reduce each tensor to one
 * value (2N - tensors); other orders are unsupported. */
int
ts_opf_foreach_norm(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    const ts_op_arg *p = arg_at(call, 1);
    int64_t n = 0, tensors = 0;
    bool count, two = false, one_or_inf = false;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    if (!given(p)) {
        two = true;
    }
    else if (p->kind == TS_ARG_INT || p->kind == TS_ARG_BOOL) {
        two = p->i == 2;
        one_or_inf = p->i == 1;
    }
    else if (p->kind == TS_ARG_REAL) {
        two = p->r == 2.0;
        one_or_inf = p->r == 1.0 || isinf(p->r);
    }
    if (!two && !one_or_inf) {
        return ts_error_set(err,
                            TS_EUNSUPPORTED,
                            "Norm FLOPs cover only orders 1, 2, and "
                            "+/-infinity.");
    }
    rc = list_numel(call, 0, &n, &tensors, err);
    if (rc != TS_OK) {
        return rc;
    }
    n = c_mul(&c, n, 2);
    return finish(&c, two ? n : max0(c_sub(&c, n, tensors)), out, err);
}

/* A float hyperparameter (keyword-only, so always passed by the optimizer;
 * a Tensor lr of the tensor_lr overloads reads as `fallback`). */
static int
real_at(const ts_op_call *call,
        int index,
        const char *name,
        double fallback,
        double *value,
        ts_error *err)
{
    const ts_op_arg *a = arg_at(call, index);
    switch (a->kind) {
        case TS_ARG_REAL:
            *value = a->r;
            return TS_OK;
        case TS_ARG_INT:
        case TS_ARG_BOOL:
            *value = (double)a->i;
            return TS_OK;
        case TS_ARG_TENSOR:
            *value = fallback;
            return TS_OK;
        default:
            return ts_error_set(err,
                                TS_EUNSUPPORTED,
                                "The fused optimizer formula needs %s as a "
                                "real number.",
                                name);
    }
}

/* _fused_sgd_(self, grads, momentum_buffer_list, *, weight_decay, momentum,
 * lr, dampening, nesterov, maximize, is_first_step, grad_scale, found_inf),
 * per parameter element as torch.optim.SGD's for-loop computes it:
 *  - maximize: grad = -grad (1); grad_scale: grad / scale (1);
 *  - weight_decay != 0: grad.add(param, alpha=wd): 1 + [wd != 1];
 *  - momentum != 0: after the first step buf.mul_(momentum).add_(grad,
 *    alpha=1-dampening): 2 + [dampening != 0] (the first step copies grad
 *    into the buffer: 0); nesterov: grad.add(buf, alpha=momentum):
 *    1 + [momentum != 1];
 *  - param.add_(grad, alpha=-lr): 1 + [lr != -1] (a tensor lr counts 2). */
int
ts_opf_fused_sgd(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    calc c = {false};
    double wd = 0, momentum = 0, lr = 0, dampening = 0;
    int64_t n = 0, tensors = 0, cost = 0;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = real_at(call, 3, "weight_decay", 0, &wd, err);
    if (rc == TS_OK) {
        rc = real_at(call, 4, "momentum", 0, &momentum, err);
    }
    if (rc == TS_OK) {
        rc = real_at(call, 5, "lr", 0.0, &lr, err);
    }
    if (rc == TS_OK) {
        rc = real_at(call, 6, "dampening", 0, &dampening, err);
    }
    if (rc == TS_OK) {
        rc = list_numel(call, 0, &n, &tensors, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    cost += flag_at(call, 8, false) ? 1 : 0;
    cost += given(arg_at(call, 10)) ? 1 : 0;
    if (wd != 0.0) {
        cost += 1 + (wd != 1.0 ? 1 : 0);
    }
    if (momentum != 0.0) {
        if (!flag_at(call, 9, false)) {
            cost += 2 + (dampening != 0.0 ? 1 : 0);
        }
        if (flag_at(call, 7, false)) {
            cost += 1 + (momentum != 1.0 ? 1 : 0);
        }
    }
    cost += 1 + (lr != -1.0 ? 1 : 0);
    return finish(&c, c_mul(&c, cost, n), out, err);
}

/* _fused_adam_ / _fused_adamw_(self, grads, exp_avgs, exp_avg_sqs,
 * max_exp_avg_sqs, state_steps, *, lr, beta1, beta2, weight_decay, eps,
 * amsgrad, maximize, grad_scale, found_inf), per parameter element as the
 * for-loop Adam computes it:
 *  - exp_avg.lerp_(grad, 1 - beta1): 3;
 *  - exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2):
 *    1 + 2 + [beta2 != 0];
 *  - denom = sqrt(exp_avg_sq) / bias_correction2_sqrt + eps: 3;
 *  - param.addcdiv_(exp_avg, denom, value=-step_size): 3;
 *  - weight decay: AdamW param.mul_(1 - lr*wd) (1), Adam grad.add(param,
 *    alpha=wd) (1 + [wd != 1]);
 *  - amsgrad: maximum(max_exp_avg_sq, exp_avg_sq) (1); maximize: -grad (1);
 *    grad_scale: grad / scale (1).
 * The step counters are incremented by a separate _foreach_add_, and the
 * bias corrections are per-tensor scalars (not per element). */
static int
fused_adam(const ts_op_call *call,
           bool decoupled,
           ts_op_result *out,
           ts_error *err)
{
    calc c = {false};
    double beta2 = 0, wd = 0;
    int64_t n = 0, tensors = 0, cost;
    bool count;
    int rc = supp_begin(call, DT_LEAVES, out, &count, err);
    if (rc != TS_OK || !count) {
        return rc;
    }
    rc = real_at(call, 8, "beta2", 0, &beta2, err);
    if (rc == TS_OK) {
        rc = real_at(call, 9, "weight_decay", 0, &wd, err);
    }
    if (rc == TS_OK) {
        rc = list_numel(call, 0, &n, &tensors, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    cost = 3 + 3 + (beta2 != 0.0 ? 1 : 0) + 3 + 3;
    if (wd != 0.0) {
        cost += decoupled ? 1 : 1 + (wd != 1.0 ? 1 : 0);
    }
    cost += flag_at(call, 11, false) ? 1 : 0;
    cost += flag_at(call, 12, false) ? 1 : 0;
    cost += given(arg_at(call, 13)) ? 1 : 0;
    return finish(&c, c_mul(&c, cost, n), out, err);
}

int
ts_opf_fused_adam(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return fused_adam(call, false, out, err);
}

int
ts_opf_fused_adamw(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    return fused_adam(call, true, out, err);
}
