/* attention_match.c's recording paths test_attention_match.c leaves out:
 * counts past int64 (noted by the statistics, the layer made partial, with
 * and without a session), refused operator ids from a record and from
 * both kernels, calls without matrix products, and role names. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/attention_match.h"

static ts_counted_call
counted(int id, int layer, int64_t flops, int64_t matrix)
{
    ts_counted_call c;
    c.id = id;
    c.layer = layer;
    c.phase = TS_PHASE_FORWARD;
    c.phase_layer = layer;
    c.flops = flops;
    c.matrix_flops = matrix;
    return c;
}

static void
test_overflow_with_session(void)
{
    ts_session *s = ts_session_new(true);
    ts_opstats *stats = ts_opstats_new();
    ts_attn_sink sink;
    int m = ts_session_add_module(s, "att", "Attn", NULL, false);
    int l = ts_session_begin_call(
        s, m, json_pack("{s:[], s:{}}", "args", "kwargs"), NULL);
    sink.stats = stats;
    sink.session = s;
    sink.attention_id =
        ts_opstats_intern(stats, "aten.scaled_dot_product_attention");
    sink.backward_id =
        ts_opstats_intern(stats, "aten.scaled_dot_product_attention_backward");
    int bmm = ts_opstats_intern(stats, "aten.bmm");
    ts_counted_call c = counted(bmm, l, INT64_MAX, 7);
    CHECK_EQ_INT(ts_attn_record(&sink, &c), TS_OK);
    /* one more FLOP does not fit: noted, not an error */
    c.flops = 1;
    CHECK_EQ_INT(ts_attn_record(&sink, &c), TS_OK);
    CHECK_EQ_INT(ts_opstats_total(stats), INT64_MAX);
    json_t *by_path = ts_session_op_flops_by_path(s);
    CHECK_EQ_INT(json_integer_value(json_object_get(by_path, "att")),
                 INT64_MAX);
    json_decref(by_path);
    /* the layer's forward FLOPs are partial now */
    json_t *phases = ts_session_phase_layers(s);
    json_t *row = json_array_get(
        json_object_get(json_object_get(phases, "forward"), "layers"), 0);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(row, "operator_flops"), "status")),
                 "partial");
    json_decref(phases);
    /* both matrix counts were added (7 twice) */
    json_t *r = ts_opstats_report(stats, "2.13.0", "m", NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(r, "matrix_product_flops"), "aten.bmm")),
                 14);
    json_decref(r);
    ts_session_end_call(s, m, json_pack("{s:s}", "kind", "none"), false, NULL);
    ts_opstats_free(stats);
    ts_session_free(s);
}

static void
test_refused_ids(void)
{
    ts_opstats *stats = ts_opstats_new();
    ts_attn_sink sink = {stats, NULL, 50, 51};
    ts_attn_matcher m;
    int bmm = ts_opstats_intern(stats, "aten.bmm");
    ts_counted_call c = counted(bmm, -1, 10, -1);
    ts_attn_matcher_init(&m);
    /* without a session; no matrix products */
    CHECK_EQ_INT(ts_attn_record(&sink, &c), TS_OK);
    c.flops = INT64_MAX;
    CHECK_EQ_INT(ts_attn_record(&sink, &c), TS_OK); /* noted overflow */
    c.id = 99;
    CHECK_EQ_INT(ts_attn_record(&sink, &c), TS_EINVAL);
    /* the kernels' ids are not interned: refused */
    c = counted(bmm, -1, 10, 4);
    CHECK_EQ_INT(ts_attn_record_kernel(&m, &sink, &c), TS_EINVAL);
    CHECK_EQ_INT(ts_attn_record_backward_kernel(&m, &sink, &c), TS_EINVAL);
    sink.attention_id = ts_opstats_intern(stats, "aten.sdpa");
    sink.backward_id = ts_opstats_intern(stats, "aten.sdpa_bw");
    CHECK_EQ_INT(ts_attn_record_kernel(&m, &sink, &c), TS_OK);
    CHECK_EQ_INT(ts_attn_record_backward_kernel(&m, &sink, &c), TS_OK);
    json_t *r = ts_opstats_report(stats, "2.13.0", "m", NULL);
    json_t *by_op = json_object_get(r, "by_operator");
    CHECK_EQ_INT(json_integer_value(json_object_get(by_op, "aten.bmm")), 10);
    CHECK_EQ_INT(json_integer_value(json_object_get(by_op, "aten.sdpa")), 10);
    CHECK_EQ_INT(json_integer_value(json_object_get(by_op, "aten.sdpa_bw")),
                 10);
    /* the kernels' matrix counts are kept under the call's own id */
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(r, "matrix_product_flops"), "aten.bmm")),
                 8);
    json_decref(r);
    ts_opstats_free(stats);
}

static void
test_roles(void)
{
    CHECK_EQ_INT(ts_attn_role_of(NULL), TS_ATTN_ROLE_NONE);
    CHECK_EQ_INT(ts_attn_role_of("aten.mm.default"), TS_ATTN_ROLE_NONE);
    CHECK_EQ_INT(ts_attn_role_of("aten.bmm.default"), TS_ATTN_ROLE_BMM);
    CHECK_EQ_INT(ts_attn_role_of("aten.add_.Tensor"), TS_ATTN_ROLE_ADD);
    CHECK_EQ_INT(ts_attn_role_of("aten._safe_softmax.default"),
                 TS_ATTN_ROLE_SOFTMAX);
}

int
main(void)
{
    test_overflow_with_session();
    test_refused_ids();
    test_roles();
    return ts_test_report();
}
