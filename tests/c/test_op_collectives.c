/* Tests for torch.distributed's collectives: the formulas of
 * src/core/op_formulas_collectives.c through the operator table (0 FLOPs,
 * bytes moved by torchscan_collective_bytes_v1) and their bytes in the
 * FlopReport (src/core/opstats.c: collectives, collective_bytes).
 *
 * The calls are built as the binding builds them from what torch 2.13
 * dispatches (schemas in the comments); every byte count is worked out by
 * hand from the shapes: elements x element size.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "torchscan/op_formulas.h"
#include "torchscan/opstats.h"

static ts_shape
shape2(int64_t a, int64_t b, int itemsize)
{
    ts_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = 2;
    s.dims[0] = a;
    s.dims[1] = b;
    s.dtype = TS_DTYPE_FLOAT;
    s.dense = true;
    s.itemsize = itemsize;
    return s;
}

static ts_op_arg *
add_arg(ts_op_call *c, ts_arg_kind kind)
{
    ts_op_arg *a = &c->args[c->nargs++];
    memset(a, 0, sizeof *a);
    a->kind = kind;
    return a;
}

static void
arg_tensor(ts_op_call *c, ts_shape s)
{
    add_arg(c, TS_ARG_TENSOR)->tensor = s;
}

/* A list of `n` tensors of shape s (c10d's Tensor[], or a flattened
 * Tensor[][]). */
static void
arg_tensors(ts_op_call *c, ts_shape s, int n)
{
    ts_op_arg *a = add_arg(c, TS_ARG_TENSORS);
    int64_t numel = s.dims[0] * s.dims[1];
    a->tensor = s;
    a->ntensors = n;
    a->numel_sum = numel * n;
}

static void
arg_int(ts_op_call *c, int64_t v)
{
    add_arg(c, TS_ARG_INT)->i = v;
}

static void
arg_other(ts_op_call *c)
{
    add_arg(c, TS_ARG_OTHER);
}

static void
out_shape(ts_op_call *c, ts_shape s)
{
    c->outs[c->nouts++] = s;
}

/* Runs the table's formula of `name`: TS_OK with flops and bytes, or the
 * formula's status. */
static int
run(const char *name, const ts_op_call *c, int64_t *flops, int64_t *bytes)
{
    const ts_op_entry *e = ts_op_lookup(name);
    ts_op_result r;
    ts_error err;
    int rc;
    CHECK(e != NULL);
    if (e == NULL) {
        return TS_EINVAL;
    }
    CHECK(e->flags == TS_OPF_COLLECTIVE);
    memset(&r, 0, sizeof r);
    r.flops = -1;
    r.bytes_moved = -1;
    ts_error_clear(&err);
    rc = e->formula(c, &r, &err);
    *flops = r.flops;
    *bytes = r.bytes_moved;
    return rc;
}

static void
test_process_group_operators(void)
{
    ts_op_call c;
    int64_t flops, bytes;

    /* dist.all_reduce(t), t float32 (4, 8): c10d::allreduce_(Tensor[]
     * tensors, ProcessGroup, ReduceOp, Tensor? sparse_indices, ...) ->
     * (Tensor[], Work); the binding cannot describe the outputs (a list
     * inside a tuple, a Work). 4*8*4 = 128 bytes, 0 FLOPs whatever the
     * reduction. */
    memset(&c, 0, sizeof c);
    arg_tensors(&c, shape2(4, 8, 4), 1);
    arg_other(&c);
    arg_other(&c);
    add_arg(&c, TS_ARG_NONE);
    c.nouts = 2;
    c.outs[0].ndim = -1;
    c.outs[1].ndim = -1;
    CHECK_EQ_INT(run("c10d.allreduce_", &c, &flops, &bytes), TS_OK);
    CHECK_EQ_INT(flops, 0);
    CHECK_EQ_INT(bytes, 128);

    /* dist.all_gather(list of 4, t) on 4 ranks, t bf16 (2, 3):
     * c10d::allgather_(Tensor[][] output_tensors, Tensor[] input_tensors,
     * ...). The output lists flattened: 4 tensors of 6 elements x 2 bytes =
     * 48 bytes, larger than the 12-byte input. */
    memset(&c, 0, sizeof c);
    arg_tensors(&c, shape2(2, 3, 2), 4);
    arg_tensors(&c, shape2(2, 3, 2), 1);
    arg_other(&c);
    CHECK_EQ_INT(run("c10d.allgather_", &c, &flops, &bytes), TS_OK);
    CHECK_EQ_INT(bytes, 48);

    /* all_gather_into_tensor(out (8, 4), in (2, 4)) on 4 ranks:
     * c10d::_allgather_base_(Tensor output, Tensor input, ...): 32 floats =
     * 128 bytes. */
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(8, 4, 4));
    arg_tensor(&c, shape2(2, 4, 4));
    arg_other(&c);
    CHECK_EQ_INT(run("c10d._allgather_base_", &c, &flops, &bytes), TS_OK);
    CHECK_EQ_INT(bytes, 128);

    /* reduce_scatter_tensor(out (2, 4), in (8, 4)): the input, 128 bytes. */
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(2, 4, 4));
    arg_tensor(&c, shape2(8, 4, 4));
    CHECK_EQ_INT(run("c10d._reduce_scatter_base_", &c, &flops, &bytes), TS_OK);
    CHECK_EQ_INT(bytes, 128);

    /* dist.gather on a non-root rank: the output list is empty, its own
     * input (3, 3) float64 = 72 bytes is what it sent. */
    memset(&c, 0, sizeof c);
    arg_tensors(&c, shape2(3, 3, 8), 0);
    arg_tensors(&c, shape2(3, 3, 8), 1);
    CHECK_EQ_INT(run("c10d.gather_", &c, &flops, &bytes), TS_OK);
    CHECK_EQ_INT(bytes, 72);

    /* a barrier's one-element tensor is a token: 0 bytes */
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(1, 1, 4));
    CHECK_EQ_INT(run("c10d.barrier", &c, &flops, &bytes), TS_OK);
    CHECK_EQ_INT(flops, 0);
    CHECK_EQ_INT(bytes, 0);
    CHECK_EQ_INT(run("c10d.monitored_barrier_", &c, &flops, &bytes), TS_OK);
    CHECK_EQ_INT(bytes, 0);

    /* all_to_all_single(out (4, 4), in (4, 4)), int64: 128 bytes */
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(4, 4, 8));
    arg_tensor(&c, shape2(4, 4, 8));
    CHECK_EQ_INT(run("c10d.alltoall_base_", &c, &flops, &bytes), TS_OK);
    CHECK_EQ_INT(bytes, 128);
}

static void
test_functional_operators(void)
{
    ts_op_call c;
    int64_t flops, bytes;

    /* RowwiseParallel's partial sum: _c10d_functional::all_reduce(Tensor
     * input (2, 4) float32, str reduce_op, Any group_name) -> Tensor: 32
     * bytes. */
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(2, 4, 4));
    add_arg(&c, TS_ARG_STR);
    add_arg(&c, TS_ARG_STR);
    out_shape(&c, shape2(2, 4, 4));
    CHECK_EQ_INT(run("_c10d_functional.all_reduce", &c, &flops, &bytes),
                 TS_OK);
    CHECK_EQ_INT(flops, 0);
    CHECK_EQ_INT(bytes, 32);
    /* the in-place packet shares the formula */
    CHECK_EQ_INT(run("_c10d_functional.all_reduce_", &c, &flops, &bytes),
                 TS_OK);
    CHECK_EQ_INT(bytes, 32);

    /* all_gather_into_tensor(Tensor input (3, 4), int group_size 4, ...):
     * the output (12, 4) float32 = 192 bytes. */
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(3, 4, 4));
    arg_int(&c, 4);
    add_arg(&c, TS_ARG_STR);
    out_shape(&c, shape2(12, 4, 4));
    CHECK_EQ_INT(
        run("_c10d_functional.all_gather_into_tensor", &c, &flops, &bytes),
        TS_OK);
    CHECK_EQ_INT(bytes, 192);
    /* from group_size alone when the output is not described */
    c.nouts = 0;
    CHECK_EQ_INT(
        run("_c10d_functional.all_gather_into_tensor", &c, &flops, &bytes),
        TS_OK);
    CHECK_EQ_INT(bytes, 192);

    /* coalesced all-gather of 6 inputs (2, 2) float16 on 2 ranks: the
     * binding describes at most TS_OP_MAX_OUTS (4) outputs of (4, 2), 64
     * bytes; group_size gives all of them: 6 * 4 elements * 2 ranks * 2
     * bytes = 96. */
    memset(&c, 0, sizeof c);
    arg_tensors(&c, shape2(2, 2, 2), 6);
    arg_int(&c, 2);
    add_arg(&c, TS_ARG_STR);
    for (int i = 0; i < TS_OP_MAX_OUTS; i++) {
        out_shape(&c, shape2(4, 2, 2));
    }
    CHECK_EQ_INT(run("_c10d_functional.all_gather_into_tensor_coalesced",
                     &c,
                     &flops,
                     &bytes),
                 TS_OK);
    CHECK_EQ_INT(bytes, 96);

    /* reduce_scatter_tensor(input (8, 2), "sum", 4, group): the input, 64
     * bytes (the output (2, 2) is a quarter of it) */
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(8, 2, 4));
    add_arg(&c, TS_ARG_STR);
    arg_int(&c, 4);
    add_arg(&c, TS_ARG_STR);
    out_shape(&c, shape2(2, 2, 4));
    CHECK_EQ_INT(
        run("_c10d_functional.reduce_scatter_tensor", &c, &flops, &bytes),
        TS_OK);
    CHECK_EQ_INT(bytes, 64);

    /* a coalesced all_reduce's outputs together: 3 outputs (1, 4) = 48 */
    memset(&c, 0, sizeof c);
    arg_tensors(&c, shape2(1, 4, 4), 3);
    add_arg(&c, TS_ARG_STR);
    add_arg(&c, TS_ARG_STR);
    for (int i = 0; i < 3; i++) {
        out_shape(&c, shape2(1, 4, 4));
    }
    CHECK_EQ_INT(
        run("_c10d_functional.all_reduce_coalesced", &c, &flops, &bytes),
        TS_OK);
    CHECK_EQ_INT(bytes, 48);

    /* DTensor's shard-to-shard redistribution */
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(4, 6, 4));
    arg_int(&c, 0);
    arg_int(&c, 1);
    out_shape(&c, shape2(8, 3, 4));
    CHECK_EQ_INT(run("_dtensor.shard_dim_alltoall", &c, &flops, &bytes),
                 TS_OK);
    CHECK_EQ_INT(bytes, 96);
}

static void
test_refusals(void)
{
    ts_op_call c;
    int64_t flops, bytes;

    /* a symbolic size: no bytes, refused (never a guess) */
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(2, 4, 4));
    c.args[0].tensor.ndim = -1;
    CHECK_EQ_INT(run("_c10d_functional.all_reduce", &c, &flops, &bytes),
                 TS_EUNSUPPORTED);
    /* an unknown element size */
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(2, 4, 0));
    CHECK_EQ_INT(run("c10d.broadcast_", &c, &flops, &bytes), TS_EUNSUPPORTED);
    /* an element count that does not fit */
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(INT64_MAX / 2, 4, 4));
    CHECK_EQ_INT(run("c10d.broadcast_", &c, &flops, &bytes), TS_EOVERFLOW);
    memset(&c, 0, sizeof c);
    arg_tensor(&c, shape2(INT64_MAX / 8, 1, 2));
    arg_int(&c, 8);
    CHECK_EQ_INT(
        run("_c10d_functional.all_gather_into_tensor", &c, &flops, &bytes),
        TS_EOVERFLOW);

    /* bookkeeping and FSDP's copies are ignored, not counted */
    CHECK(ts_op_lookup("_c10d_functional.wait_tensor")->formula == NULL);
    CHECK(ts_op_lookup("_c10d_functional._wrap_tensor_autograd")->formula
          == NULL);
    CHECK_EQ_STR(ts_op_lookup("fsdp.all_gather_copy_in")->ignore_reason,
                 "Data movement is excluded from FLOPs.");
    CHECK_EQ_STR(ts_op_lookup("fsdp.split_with_sizes_copy")->ignore_reason,
                 "Data movement is excluded from FLOPs.");
}

static void
test_flop_report(void)
{
    ts_opstats *s = ts_opstats_new();
    json_t *report, *collectives, *moved, *total;
    int mm, ar, bar;
    CHECK(s != NULL);
    if (s == NULL) {
        return;
    }
    mm = ts_opstats_intern(s, "aten.mm");
    ar = ts_opstats_intern(s, "c10d.allreduce_");
    bar = ts_opstats_intern(s, "c10d.barrier");

    /* without a collective, the FlopReport is as before */
    CHECK_EQ_INT(
        ts_opstats_record(s, mm, TS_OPCALL_COUNTED, 100, false, NULL, NULL),
        TS_OK);
    report = ts_opstats_report(s, "2.13", "m", NULL);
    CHECK(report != NULL && json_object_get(report, "collectives") == NULL);
    CHECK(json_object_get(report, "collective_bytes") == NULL);
    json_decref(report);

    /* two all_reduces (128 + 64 bytes) and a barrier: counted at 0 FLOPs */
    CHECK_EQ_INT(
        ts_opstats_record(s, ar, TS_OPCALL_COUNTED, 0, false, NULL, NULL),
        TS_OK);
    CHECK_EQ_INT(ts_opstats_record_bytes(s, ar, 128), TS_OK);
    CHECK_EQ_INT(
        ts_opstats_record(s, ar, TS_OPCALL_COUNTED, 0, false, NULL, NULL),
        TS_OK);
    CHECK_EQ_INT(ts_opstats_record_bytes(s, ar, 64), TS_OK);
    CHECK_EQ_INT(
        ts_opstats_record(s, bar, TS_OPCALL_COUNTED, 0, false, NULL, NULL),
        TS_OK);
    CHECK_EQ_INT(ts_opstats_record_bytes(s, bar, 0), TS_OK);
    CHECK_EQ_INT(ts_opstats_record_bytes(s, 99, 0), TS_EINVAL);
    report = ts_opstats_report(s, "2.13", "m", NULL);
    CHECK(report != NULL);
    total = json_object_get(report, "total");
    CHECK_EQ_STR(json_string_value(json_object_get(total, "status")),
                 "complete");
    CHECK_EQ_INT(json_integer_value(json_object_get(total, "value")), 100);
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(report, "by_operator"), "c10d.allreduce_")),
        0);
    collectives = json_object_get(report, "collectives");
    CHECK_EQ_INT(json_object_size(collectives), 2);
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(collectives, "c10d.allreduce_"), "calls")),
        2);
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(collectives, "c10d.allreduce_"), "bytes_moved")),
        192);
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(collectives, "c10d.barrier"), "bytes_moved")),
        0);
    moved = json_object_get(report, "collective_bytes");
    CHECK_EQ_STR(json_string_value(json_object_get(moved, "status")),
                 "complete");
    CHECK_EQ_INT(json_integer_value(json_object_get(moved, "value")), 192);
    CHECK_EQ_STR(json_string_value(json_object_get(moved, "unit")), "bytes");
    CHECK_EQ_STR(json_string_value(json_object_get(moved, "scope")),
                 "workload");
    CHECK_EQ_STR(json_string_value(json_object_get(moved, "method")),
                 TS_COLLECTIVE_CONVENTION);
    json_decref(report);

    /* a call whose bytes are unknown (refused formula): partial, the known
     * bytes a lower bound */
    CHECK_EQ_INT(ts_opstats_record_bytes(s, ar, -1), TS_OK);
    report = ts_opstats_report(s, "2.13", "m", NULL);
    moved = json_object_get(report, "collective_bytes");
    CHECK_EQ_STR(json_string_value(json_object_get(moved, "status")),
                 "partial");
    CHECK_EQ_INT(json_integer_value(json_object_get(moved, "known_value")),
                 192);
    CHECK(json_is_null(json_object_get(moved, "value")));
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(
                         collectives = json_object_get(report, "collectives"),
                         "c10d.allreduce_"),
                     "calls")),
                 3);
    json_decref(report);

    /* an overflowing sum keeps what fit */
    CHECK_EQ_INT(ts_opstats_record_bytes(s, ar, INT64_MAX), TS_EOVERFLOW);
    report = ts_opstats_report(s, "2.13", "m", NULL);
    moved = json_object_get(report, "collective_bytes");
    CHECK_EQ_INT(json_integer_value(json_object_get(moved, "known_value")),
                 192);
    json_decref(report);
    ts_opstats_free(s);
}

int
main(void)
{
    test_process_group_operators();
    test_functional_operators();
    test_refusals();
    test_flop_report();
    return ts_test_report();
}
