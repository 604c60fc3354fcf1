/* module_formulas.c dispatch paths test_module_formulas.c leaves out:
 * missing arguments, kinds out of range, calls without a type name, a
 * native class the binding refused (with its reason), invalid shapes, and
 * counts past int64 or below zero. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/module_formulas.h"

static ts_shape
shape2(int64_t a, int64_t b)
{
    ts_shape s = {2, {a, b}, TS_DTYPE_FLOAT, true, 4};
    return s;
}

static ts_module_desc
linear(int64_t in, int64_t out)
{
    ts_module_desc d;
    memset(&d, 0, sizeof d);
    d.kind = TS_MOD_LINEAR;
    d.in_features = in;
    d.out_features = out;
    d.has_weight = true;
    return d;
}

static void
test_dispatch(void)
{
    ts_module_desc d = linear(4, 2);
    ts_module_call c;
    ts_module_estimates e;
    memset(&c, 0, sizeof c);
    c.has_input = c.has_output = true;
    c.input = shape2(3, 4);
    c.output = shape2(3, 2);
    CHECK_EQ_INT(ts_module_estimate(NULL, &c, &e), TS_EINVAL);
    CHECK_EQ_INT(ts_module_estimate(&d, NULL, &e), TS_EINVAL);
    CHECK_EQ_INT(ts_module_estimate(&d, &c, NULL), TS_EINVAL);
    d.kind = (ts_module_kind)TS_MOD_KIND_COUNT;
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_EINVAL);
    CHECK_EQ_INT(e.rf.kind, TS_EST_ERROR);
    CHECK(strstr(e.flops.message, "ValueError: invalid module kind") != NULL);
    CHECK_EQ_STR(ts_module_kind_name((ts_module_kind)-1), "invalid");
    CHECK(!ts_module_kind_owns_subtree((ts_module_kind)999));

    /* no formula, no type name: "?" */
    d.kind = TS_MOD_UNKNOWN;
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.flops.kind, TS_EST_UNSUPPORTED);
    CHECK_EQ_STR(e.flops.message, "Module type not supported: ?");
    CHECK_EQ_STR(e.padding.message, "Module type not supported: ?");
    /* a class the binding refused: without a formula "not supported" with
     * the reason (a missing formula outranks the call), with one the
     * refusal is the verdict of every metric */
    d.refusal = "a subclass overrides forward";
    c.type_name = "MyModule";
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.macs.kind, TS_EST_UNSUPPORTED);
    CHECK_EQ_STR(e.macs.message,
                 "Module type not supported: MyModule (a subclass overrides "
                 "forward)");
    d = linear(4, 2);
    d.refusal = "a subclass overrides forward";
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.macs.kind, TS_EST_ERROR);
    CHECK_EQ_STR(e.macs.message,
                 "NotImplementedError: a subclass overrides forward");
    CHECK_EQ_STR(e.stride.message,
                 "NotImplementedError: a subclass overrides forward");
    /* Linear(4, 2) on (3, 4): 6 outputs * (2 * 4 - 1) = 42 FLOPs */
    d.refusal = NULL;
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.flops.kind, TS_EST_COMPLETE);
    CHECK_EQ_INT(e.flops.value.i, 42);
    /* a shape past TS_MAX_DIMS or with a negative size */
    c.input.ndim = TS_MAX_DIMS + 1;
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.flops.kind, TS_EST_ERROR);
    CHECK(strstr(e.flops.message, "has an invalid shape") != NULL);
    c.input = shape2(3, -4);
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.dmas.kind, TS_EST_ERROR);
}

static void
test_out_of_range(void)
{
    ts_module_estimates e;
    ts_module_call c;
    memset(&c, 0, sizeof c);
    c.has_input = c.has_output = true;
    /* Linear(2^31, 2^31) on (2^31, 2^31): 2^62 outputs * (2^32 - 1)
     * FLOPs is past int64 */
    ts_module_desc d = linear(INT64_C(1) << 31, INT64_C(1) << 31);
    c.input = shape2(INT64_C(1) << 31, INT64_C(1) << 31);
    c.output = shape2(INT64_C(1) << 31, INT64_C(1) << 31);
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.flops.kind, TS_EST_ERROR);
    CHECK_EQ_STR(e.flops.message,
                 "OverflowError: FLOPs of ? exceed the int64 range");
}

/* A 2-layer RNN(4, 3) on (5, 2, 4): rows = 40 / 4 = 10. Training adds the
 * dropout between the layers, counted as nn.Dropout counts it on the
 * (L - 1) * rows * dirs * H = 30 elements it drops: 2 * 30 for 0 < p < 1,
 * 30 for p = 1, nothing in eval. A mode past the table or an input size
 * that does not divide the input is refused. */
static void
test_rnn_dropout(void)
{
    ts_module_desc d;
    ts_module_call c;
    ts_module_estimates eval_e, e;
    memset(&d, 0, sizeof d);
    memset(&c, 0, sizeof c);
    d.kind = TS_MOD_RNN;
    d.rnn_mode = TS_RNN_TANH;
    d.input_size = 4;
    d.hidden_size = 3;
    d.num_layers = 2;
    d.has_bias = true;
    d.p = 0.5;
    c.type_name = "RNN";
    c.has_input = c.has_output = true;
    c.input = (ts_shape){3, {5, 2, 4}, TS_DTYPE_FLOAT, true, 4};
    c.output = (ts_shape){3, {5, 2, 3}, TS_DTYPE_FLOAT, true, 4};
    c.has_second = true;
    c.second = (ts_shape){3, {2, 2, 3}, TS_DTYPE_FLOAT, true, 4};
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &eval_e), TS_OK);
    CHECK_EQ_INT(eval_e.flops.kind, TS_EST_COMPLETE);
    d.training = true;
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.flops.value.i - eval_e.flops.value.i, 60);
    d.p = 1.0;
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.flops.value.i - eval_e.flops.value.i, 30);
    d.p = 0.0;
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.flops.value.i, eval_e.flops.value.i);
    d.rnn_mode = (ts_rnn_mode)99;
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.flops.kind, TS_EST_ERROR);
    CHECK_EQ_STR(e.flops.message,
                 "ValueError: recurrent module geometry does not match its "
                 "input");
    d.rnn_mode = TS_RNN_TANH;
    d.input_size = 3; /* 40 is no multiple of 3 */
    CHECK_EQ_INT(ts_module_estimate(&d, &c, &e), TS_OK);
    CHECK_EQ_INT(e.macs.kind, TS_EST_ERROR);
}

int
main(void)
{
    test_rnn_dropout();
    test_dispatch();
    test_out_of_range();
    return ts_test_report();
}
