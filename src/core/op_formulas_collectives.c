/* Collectives of torch.distributed (c10d's process-group operators,
 * _c10d_functional's functional ones, DTensor's shard_dim_alltoall): 0
 * FLOPs, and the bytes they move by the convention
 * torchscan_collective_bytes_v1.
 *
 * The bytes are the collective's message size as nccl-tests reports it: the
 * reduced or broadcast tensor, the whole gathered output, the whole input a
 * reduce-scatter scatters. One rule gives all of them: the largest buffer of
 * the call, where a list of tensors (a coalesced call, c10d's per-rank
 * lists) counts as the sum of its tensors. A gather's or scatter's root
 * holds every rank's part; another rank only its own, and that is what it
 * moved. The reduction arithmetic (the sums of all_reduce) runs inside the
 * communication backend, not in operators this process dispatches: 0 FLOPs
 * by convention, stated in docs/operator-flops.md.
 */
#include "op_formulas_internal.h"

static const char MSG_COLLECTIVE_SIZE[] =
    "The collective's buffers have no concrete size or element size; its "
    "bytes moved cannot be counted.";

/* Bytes of a tensor with concrete sizes and a known element size. */
static int
shape_bytes(const ts_shape *s, int64_t *bytes, ts_error *err)
{
    int64_t numel;
    if (s->ndim < 0 || s->itemsize <= 0) {
        ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_COLLECTIVE_SIZE);
        return TS_EUNSUPPORTED;
    }
    if (!ts_shape_numel(s, &numel) || !ts_mul(numel, s->itemsize, bytes)) {
        ts_error_set(err, TS_EOVERFLOW, "%s", MSG_OVERFLOW);
        return TS_EOVERFLOW;
    }
    return TS_OK;
}

/* Bytes of an argument that is a tensor or a list of tensors (c10d's lists
 * of lists are flattened by the binding); 0 for any other argument. */
static int
arg_bytes(const ts_op_arg *a, int64_t *bytes, ts_error *err)
{
    *bytes = 0;
    if (a->kind == TS_ARG_TENSOR) {
        return shape_bytes(&a->tensor, bytes, err);
    }
    if (a->kind != TS_ARG_TENSORS || a->ntensors == 0) {
        return TS_OK;
    }
    if (a->numel_sum < 0 || a->tensor.itemsize <= 0) {
        ts_error_set(err, TS_EUNSUPPORTED, "%s", MSG_COLLECTIVE_SIZE);
        return TS_EUNSUPPORTED;
    }
    /* one dtype per collective: the first tensor's element size */
    if (!ts_mul(a->numel_sum, a->tensor.itemsize, bytes)) {
        ts_error_set(err, TS_EOVERFLOW, "%s", MSG_OVERFLOW);
        return TS_EOVERFLOW;
    }
    return TS_OK;
}

/* Every field of a collective's result: 0 FLOPs, none of them matrix
 * products, complete, and the bytes it moved. */
static void
set_no_flops(ts_op_result *out, int64_t bytes_moved)
{
    out->flops = 0;
    out->matrix_flops = 0;
    out->incomplete = false;
    out->incomplete_message = NULL;
    out->bytes_moved = bytes_moved;
}

int
ts_opf_collective(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    int64_t most = 0, outputs = 0, bytes;
    int nargs = clamp_count(call->nargs, TS_OP_MAX_ARGS);
    int nouts = clamp_count(call->nouts, TS_OP_MAX_OUTS);
    int rc;
    for (int i = 0; i < nargs; i++) {
        if ((rc = arg_bytes(&call->args[i], &bytes, err)) != TS_OK) {
            return rc;
        }
        most = bytes > most ? bytes : most;
    }
    /* A functional collective's result (a coalesced call returns a list):
     * the outputs together are one buffer. Entries the binding could not
     * describe (c10d's Work object, a list inside a tuple) are skipped. */
    for (int i = 0; i < nouts; i++) {
        if (call->outs[i].ndim < 0) {
            continue;
        }
        if ((rc = shape_bytes(&call->outs[i], &bytes, err)) != TS_OK) {
            return rc;
        }
        if (!ts_add(outputs, bytes, &outputs)) {
            ts_error_set(err, TS_EOVERFLOW, "%s", MSG_OVERFLOW);
            return TS_EOVERFLOW;
        }
    }
    set_no_flops(out, outputs > most ? outputs : most);
    return TS_OK;
}

int
ts_opf_collective_gather(const ts_op_call *call,
                         ts_op_result *out,
                         ts_error *err)
{
    /* _c10d_functional's all-gathers take (input(s), group_size, ...): the
     * gathered output is group_size times the input, also where the binding
     * describes only the first outputs of a long coalesced list. */
    const ts_op_arg *size = arg_at(call, 1);
    int64_t input, gathered;
    int rc = ts_opf_collective(call, out, err);
    if (rc != TS_OK || size->kind != TS_ARG_INT || size->i < 0) {
        return rc;
    }
    if ((rc = arg_bytes(arg_at(call, 0), &input, err)) != TS_OK) {
        return rc;
    }
    if (!ts_mul(input, size->i, &gathered)) {
        ts_error_set(err, TS_EOVERFLOW, "%s", MSG_OVERFLOW);
        return TS_EOVERFLOW;
    }
    if (gathered > out->bytes_moved) {
        out->bytes_moved = gathered;
    }
    return TS_OK;
}

int
ts_opf_barrier(const ts_op_call *call, ts_op_result *out, ts_error *err)
{
    (void)call;
    (void)err;
    /* the barrier's one-element tensor is a token, not data */
    set_no_flops(out, 0);
    return TS_OK;
}
