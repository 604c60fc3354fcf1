/* Session paths the main session tests leave out: index guards of every
 * entry point, renamed and long-named modules, calls that expose no
 * tensor, failed handler rows, matchable composites (child records and
 * uncovered work), retroactive ownership that drops token dependencies,
 * overflowing and mixed-method totals, pending calls and context keys. */
#include "fail_emitter.h"
#include "harness.h"
#include "torchscan/opstats.h"
#include "torchscan/session.h"

static json_t *
tensor_meta(int64_t a, int64_t b)
{
    return json_pack("{s:s, s:[I,I], s:s, s:s, s:b}",
                     "kind",
                     "tensor",
                     "shape",
                     (json_int_t)a,
                     (json_int_t)b,
                     "dtype",
                     "torch.float32",
                     "device",
                     "cpu",
                     "requires_grad",
                     0);
}

static json_t *
call_meta(void)
{
    return json_pack("{s:[o], s:{}}", "args", tensor_meta(2, 4), "kwargs");
}

static ts_shape
shape2(int64_t a, int64_t b)
{
    ts_shape s = {2, {a, b}, TS_DTYPE_FLOAT, true, 4};
    return s;
}

/* Every report here is also written through an emitter that fails each
 * callback in turn (fail_emitter.h). */
typedef struct emit_args {
    ts_session *s;
    json_t *context, *inputs, *flops;
    const ts_model_totals *totals;
} emit_args;

static int
write_report(const ts_emitter *e, void *arg)
{
    emit_args *a = arg;
    return ts_session_emit_report(
        a->s, e, a->context, a->inputs, a->totals, a->flops);
}

/* The report of a session with an empty operator count (full mode) or the
 * structure stub; `context` is stolen. */
static json_t *
report_of(ts_session *s, json_t *context, json_t *flop_report)
{
    ts_model_totals totals = {0};
    ts_error err;
    json_t *inputs = json_object();
    emit_args a = {
        s, context ? context : json_object(), inputs, flop_report, &totals};
    fault_loop("coreb session report", write_report, &a);
    json_t *r = ts_session_report(
        s, a.context, inputs, &totals, flop_report, "2.13.0", &err);
    if (r == NULL) {
        fprintf(stderr, "report failed: %s\n", err.message);
    }
    return r;
}

static json_t *
empty_flops(void)
{
    ts_opstats *ops = ts_opstats_new();
    json_t *r = ts_opstats_report(ops, "2.13.0", "m", NULL);
    ts_opstats_free(ops);
    return r;
}

static json_t *
layer_metric(json_t *report, size_t layer, const char *name)
{
    return json_object_get(
        json_object_get(
            json_array_get(json_object_get(report, "layers"), layer),
            "metrics"),
        name);
}

static const char *
str_of(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* Count of diagnostics with `code` (and `metric` when not NULL). */
static int
count_diags(json_t *report, const char *code, const char *metric)
{
    json_t *d = json_object_get(report, "diagnostics");
    int n = 0;
    for (size_t i = 0; i < json_array_size(d); i++) {
        json_t *x = json_array_get(d, i);
        if (strcmp(str_of(x, "code"), code) == 0
            && (metric == NULL || strcmp(str_of(x, "metric"), metric) == 0)) {
            n++;
        }
    }
    return n;
}

/* Every entry point refuses or ignores an index it never returned. */
static void
test_index_guards(void)
{
    ts_session *s = ts_session_new(true);
    ts_module_desc d = {0};
    const char *path = "unset";
    int32_t call_index = -7;
    int m = ts_session_add_module(s, "a", "Mystery", NULL, true);
    CHECK_EQ_INT(m, 0);

    CHECK_EQ_INT(ts_session_update_module(s, -1, "X", &d), TS_EINVAL);
    CHECK_EQ_INT(ts_session_update_module(s, 1, "X", &d), TS_EINVAL);
    CHECK_EQ_INT(ts_session_begin_call(s, -1, call_meta(), NULL), TS_EINVAL);
    CHECK_EQ_INT(ts_session_begin_call(s, 5, call_meta(), NULL), TS_EINVAL);
    /* no layer yet */
    CHECK_EQ_INT(ts_session_layer_count(s), 0);
    CHECK_EQ_INT(ts_session_current_layer(s), -1);
    CHECK_EQ_INT(ts_session_layer_covered(s, 0), 0);
    CHECK_EQ_INT(ts_session_layer_covered(s, -1), 0);
    CHECK(!ts_session_layer_wants_tokens(s, 0));
    CHECK(!ts_session_layer_wants_tokens(s, -3));
    CHECK_EQ_INT(ts_session_set_estimate(
                     s, 0, 0, TS_COMPLETE, ts_int(1), false, "handler"),
                 TS_EINVAL);
    CHECK_EQ_INT(ts_session_mark_expanded_boundary(s, 0), TS_EINVAL);
    CHECK_EQ_INT(ts_session_mark_expanded_boundary(s, -1), TS_EINVAL);
    CHECK_EQ_INT(ts_session_own_retroactively(s, 0, TS_ALL_ESTIMATES),
                 TS_EINVAL);
    CHECK_EQ_INT(ts_session_own_retroactively(s, -2, 1), TS_EINVAL);
    CHECK_EQ_INT(ts_session_layer_identity(s, 0, &path, &call_index), -1);
    CHECK_EQ_INT(ts_session_layer_identity(s, -1, &path, &call_index), -1);
    CHECK_EQ_STR(path, "unset");
    CHECK_EQ_INT(call_index, -7);
    /* closing a module that was never opened */
    CHECK_EQ_INT(ts_session_end_call(s, m, tensor_meta(1, 1), false, NULL),
                 TS_EINVAL);
    /* ignored: out-of-range modules and layers */
    ts_session_set_module_handler(s, 3, true);
    ts_session_set_module_handler(s, -1, true);
    ts_session_set_module_matchable(s, 3, true);
    ts_session_set_module_matchable(s, -1, true);
    ts_session_add_layer_op(s, 0, 100, true);
    ts_session_add_layer_op(s, -1, 100, true);
    ts_session_add_phase_op(s, 0, TS_PHASE_FORWARD, 100, true);
    ts_session_add_phase_op(s, -1, TS_PHASE_FORWARD, 100, true);
    CHECK(!ts_session_wants_ops(s)); /* nothing open */
    CHECK_EQ_INT(ts_session_record_op(s, &(ts_match_op){0}), TS_OK);

    int l = ts_session_begin_call(s, m, call_meta(), NULL);
    CHECK_EQ_INT(l, 0);
    CHECK_EQ_INT(ts_session_set_estimate(
                     s, 0, -1, TS_COMPLETE, ts_int(1), false, "handler"),
                 TS_EINVAL);
    CHECK_EQ_INT(ts_session_set_estimate(
                     s, 0, 6, TS_COMPLETE, ts_int(1), false, "handler"),
                 TS_EINVAL);
    CHECK_EQ_INT(ts_session_set_estimate(
                     s, 1, 0, TS_COMPLETE, ts_int(1), false, "handler"),
                 TS_EINVAL);
    /* phases past the last are ignored, the known one is added */
    ts_session_add_phase_op(s, 0, (ts_phase)TS_PHASE_COUNT, 7, true);
    ts_session_add_phase_op(s, 0, TS_PHASE_FORWARD, 9, true);
    /* the ignored out-of-range calls above left no operator FLOPs */
    ts_session_add_layer_op(s, 0, 5, true);
    CHECK_EQ_INT(ts_session_end_call(s, m, tensor_meta(2, 2), false, NULL), 0);
    json_t *by_path = ts_session_op_flops_by_path(s);
    CHECK_EQ_INT(json_integer_value(json_object_get(by_path, "a")), 5);
    json_decref(by_path);
    json_t *phases = ts_session_phase_layers(s);
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(phases, "forward"), "by_module"),
            "a")),
        9);
    json_decref(phases);
    CHECK_EQ_INT(ts_session_layer_identity(s, 0, &path, &call_index), 0);
    CHECK_EQ_STR(path, "a");
    CHECK_EQ_INT(call_index, 0);
    /* structure mode never wants tokens */
    ts_session_free(s);
    s = ts_session_new(false);
    ts_module_desc mha = {0};
    mha.kind = TS_MOD_MHA;
    m = ts_session_add_module(s, "att", "MultiheadAttention", &mha, true);
    ts_session_begin_call(s, m, call_meta(), NULL);
    CHECK(!ts_session_layer_wants_tokens(s, 0));
    ts_session_end_call(s, m, tensor_meta(2, 4), false, NULL);
    ts_session_free(s);
}

/* Renamed modules (a lazy module's first call), the root's lower-case row
 * name, and a path longer than one text chunk. */
static void
test_names(void)
{
    ts_session *s = ts_session_new(true);
    ts_module_desc lin = {0};
    char long_path[5001];
    memset(long_path, 'p', sizeof long_path - 1);
    long_path[sizeof long_path - 1] = '\0';
    lin.kind = TS_MOD_LINEAR;
    lin.in_features = 4;
    lin.out_features = 2;
    lin.has_weight = true;
    int root = ts_session_add_module(s, "", "LazyNet", NULL, false);
    int root2 = ts_session_add_module(s, "", "Net2D", NULL, false);
    int deep = ts_session_add_module(s, long_path, "Mystery", NULL, true);
    int leaf = ts_session_add_module(s, "a.b.fc", "LazyLinear", NULL, true);
    CHECK_EQ_INT(deep, 2);
    /* the same type name (or NULL) keeps the name */
    CHECK_EQ_INT(ts_session_update_module(s, leaf, "LazyLinear", &lin), TS_OK);
    CHECK_EQ_INT(ts_session_update_module(s, leaf, NULL, &lin), TS_OK);
    CHECK_EQ_INT(ts_session_update_module(s, leaf, "Linear", &lin), TS_OK);
    CHECK_EQ_INT(ts_session_update_module(s, root, "ConcreteNET", &lin),
                 TS_OK);
    CHECK_EQ_INT(ts_session_module_desc(s, leaf)->out_features, 2);
    CHECK(ts_session_module_is_leaf(s, leaf));
    CHECK(!ts_session_module_is_leaf(s, root));

    ts_session_begin_call(s, root2, call_meta(), NULL);
    ts_session_end_call(s, root2, tensor_meta(2, 4), false, NULL);
    ts_session_begin_call(s, root, call_meta(), NULL);
    ts_session_begin_call(s, deep, call_meta(), NULL);
    ts_session_end_call(s, deep, tensor_meta(2, 4), false, NULL);
    ts_session_begin_call(s, leaf, call_meta(), NULL);
    ts_module_call call = {0};
    call.has_input = call.has_output = true;
    call.input = shape2(2, 4);
    call.output = shape2(2, 2);
    CHECK_EQ_INT(ts_session_end_call(s, leaf, tensor_meta(2, 2), false, &call),
                 3);
    ts_session_end_call(s, root, tensor_meta(2, 2), false, NULL);
    json_t *r = report_of(s, NULL, empty_flops());
    json_t *layers = json_object_get(r, "layers");
    CHECK_EQ_STR(str_of(json_array_get(layers, 0), "name"), "net2d");
    CHECK_EQ_STR(str_of(json_array_get(layers, 1), "name"), "concretenet");
    CHECK_EQ_STR(str_of(json_array_get(layers, 1), "type"), "ConcreteNET");
    CHECK_EQ_STR(str_of(json_array_get(layers, 3), "name"), "fc");
    CHECK_EQ_STR(str_of(json_array_get(layers, 3), "type"), "Linear");
    CHECK_EQ_INT(strlen(str_of(json_array_get(layers, 2), "path")), 5000);
    /* Linear(4, 2) without bias on (2, 4): 4 outputs * (2*4 - 1) = 28 */
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     layer_metric(r, 3, "module_flops"), "value")),
                 28);
    /* the call without tensors: six unavailable estimates, one diagnostic
     * each */
    CHECK_EQ_STR(str_of(layer_metric(r, 2, "macs"), "status"), "unavailable");
    CHECK_EQ_STR(str_of(layer_metric(r, 2, "effective_padding"), "status"),
                 "unavailable");
    CHECK_EQ_INT(count_diags(r, "missing_metric_tensor", NULL), 6);
    CHECK_EQ_INT(count_diags(r, "missing_metric_tensor", "receptive_field"),
                 1);
    json_decref(r);
    ts_session_free(s);
}

/* A handler row whose forward raised: the estimates its handler did not
 * give are forward_failed; an open call is written as pending. */
static void
test_failed_handler_and_pending(void)
{
    ts_session *s = ts_session_new(true);
    int root = ts_session_add_module(s, "", "Net", NULL, false);
    int h = ts_session_add_module(s, "h", "Custom", NULL, false);
    ts_session_set_module_handler(s, h, true);
    ts_session_begin_call(s, root, call_meta(), NULL);
    int l = ts_session_begin_call(s, h, call_meta(), NULL);
    CHECK_EQ_INT(ts_session_set_estimate(
                     s, l, 0, TS_COMPLETE, ts_int(70), false, "my_handler"),
                 TS_OK);
    CHECK_EQ_INT(ts_session_end_call(s, h, NULL, true, NULL), l);
    /* root stays open */
    json_t *r = report_of(
        s, json_pack("{s:s, s:i}", "device", "cpu", "seed", 3), empty_flops());
    CHECK_EQ_STR(
        str_of(json_object_get(json_array_get(json_object_get(r, "layers"), 0),
                               "output"),
               "kind"),
        "pending");
    CHECK_EQ_STR(
        str_of(json_object_get(json_array_get(json_object_get(r, "layers"), 1),
                               "output"),
               "kind"),
        "failed");
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     layer_metric(r, 1, "module_flops"), "value")),
                 70);
    CHECK_EQ_STR(str_of(layer_metric(r, 1, "module_flops"), "method"),
                 "my_handler");
    CHECK_EQ_STR(str_of(layer_metric(r, 1, "macs"), "method"),
                 "forward_failed");
    CHECK_EQ_STR(str_of(layer_metric(r, 1, "macs"), "status"), "unavailable");
    CHECK_EQ_STR(str_of(json_object_get(r, "context"), "device"), "cpu");
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_object_get(r, "context"), "seed")),
                 3);
    CHECK_EQ_INT(count_diags(r, "module_forward_error", "calls"), 1);
    json_decref(r);
    ts_session_free(s);
}

/* A matchable composite records its children's calls and its own
 * operators; a matrix product no signature recognizes leaves it
 * unsupported, with the reason. */
static void
test_matchable_uncovered(void)
{
    ts_session *s = ts_session_new(true);
    ts_module_desc lin = {0};
    lin.kind = TS_MOD_LINEAR;
    lin.in_features = 4;
    lin.out_features = 4;
    lin.has_weight = true;
    int blk = ts_session_add_module(s, "blk", "LibBlock", NULL, false);
    int fc = ts_session_add_module(s, "blk.fc", "Linear", &lin, true);
    ts_session_set_module_matchable(s, blk, true);
    ts_session_begin_call(s, blk, call_meta(), NULL);
    CHECK(ts_session_wants_ops(s));
    ts_match_op op;
    memset(&op, 0, sizeof op);
    op.code = ts_match_op_code("aten.mm");
    CHECK(op.code != TS_MOP_OTHER);
    op.counted = true;
    op.flops = 64;
    op.nouts = 1;
    op.outs[0] = shape2(2, 4);
    CHECK_EQ_INT(ts_session_record_op(s, &op), TS_OK);
    ts_session_begin_call(s, fc, call_meta(), NULL);
    CHECK(!ts_session_wants_ops(s)); /* a Linear is not matchable */
    ts_module_call call = {0};
    call.has_input = call.has_output = true;
    call.input = shape2(2, 4);
    call.output = shape2(2, 4);
    ts_session_end_call(s, fc, tensor_meta(2, 4), false, &call);
    CHECK_EQ_INT(ts_session_end_call(s, blk, tensor_meta(2, 4), false, &call),
                 0);
    json_t *r = report_of(s, NULL, empty_flops());
    json_t *mf = layer_metric(r, 0, "module_flops");
    CHECK_EQ_STR(str_of(mf, "status"), "partial");
    CHECK_EQ_STR(str_of(layer_metric(r, 0, "receptive_field"), "status"),
                 "unavailable");
    json_t *d = json_object_get(r, "diagnostics");
    int found = 0;
    for (size_t i = 0; i < json_array_size(d); i++) {
        const char *msg = str_of(json_array_get(d, i), "message");
        if (strcmp(str_of(json_array_get(d, i), "path"), "blk") == 0
            && strstr(msg, "Module type not supported: LibBlock") != NULL) {
            found++;
        }
    }
    /* flops, macs, dmas and one for the receptive-field trio */
    CHECK_EQ_INT(found, 4);
    /* Linear(4, 4) without bias on (2, 4): 8 * 7 = 56 */
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     layer_metric(r, 1, "module_flops"), "value")),
                 56);
    json_decref(r);
    /* in structure mode the composite matches nothing and wants no ops */
    ts_session_free(s);
    s = ts_session_new(false);
    blk = ts_session_add_module(s, "blk", "LibBlock", NULL, false);
    ts_session_set_module_matchable(s, blk, true);
    ts_session_begin_call(s, blk, call_meta(), NULL);
    CHECK(!ts_session_wants_ops(s));
    CHECK_EQ_INT(ts_session_end_call(s, blk, tensor_meta(2, 4), false, NULL),
                 0);
    CHECK_EQ_INT(ts_session_end_call(s, blk, tensor_meta(2, 4), false, NULL),
                 TS_EINVAL);
    ts_session_free(s);
}

/* An attention leaf whose call exposed no tensors gets unavailable token
 * dependencies with a diagnostic; an owner that takes the receptive field
 * afterwards drops both. */
static void
test_retroactive_tokens(void)
{
    ts_session *s = ts_session_new(true);
    ts_module_desc mha = {0};
    mha.kind = TS_MOD_MHA;
    mha.embed_dim = 4;
    mha.num_heads = 1;
    int root = ts_session_add_module(s, "", "Net", NULL, false);
    int att =
        ts_session_add_module(s, "att", "MultiheadAttention", &mha, true);
    int lr = ts_session_begin_call(s, root, call_meta(), NULL);
    int la = ts_session_begin_call(s, att, call_meta(), NULL);
    CHECK(ts_session_layer_wants_tokens(s, la));
    ts_session_end_call(s, att, tensor_meta(2, 4), false, NULL);
    json_t *r = report_of(s, NULL, empty_flops());
    CHECK_EQ_INT(count_diags(r, "unsupported_token_dependencies", NULL), 1);
    json_decref(r);
    /* the owner takes only what it neither holds nor is covered for */
    CHECK_EQ_INT(ts_session_set_estimate(
                     s, lr, 1, TS_COMPLETE, ts_int(5), false, "handler"),
                 TS_OK);
    CHECK_EQ_INT(ts_session_own_retroactively(s, lr, TS_ALL_ESTIMATES), TS_OK);
    CHECK_EQ_INT(ts_session_layer_covered(s, la), TS_ALL_ESTIMATES & ~2u);
    ts_session_end_call(s, root, tensor_meta(2, 4), false, NULL);
    r = report_of(s, NULL, empty_flops());
    CHECK_EQ_INT(count_diags(r, "unsupported_token_dependencies", NULL), 0);
    CHECK(layer_metric(r, 1, "module_flops") == NULL
          || strcmp(str_of(layer_metric(r, 1, "module_flops"), "status"),
                    "complete")
                 != 0
          || json_object_get(layer_metric(r, 1, "module_flops"), "value")
                 == NULL);
    json_decref(r);
    ts_session_free(s);
}

/* Totals: handler estimates past int64 overflow with a diagnostic each;
 * several methods are named sorted; real values add up; an infinite real
 * makes the total unavailable. */
static void
test_totals_overflow_and_methods(void)
{
    ts_session *s = ts_session_new(true);
    int a = ts_session_add_module(s, "a", "A", NULL, false);
    int b = ts_session_add_module(s, "b", "B", NULL, false);
    int la = ts_session_begin_call(s, a, call_meta(), NULL);
    ts_session_end_call(s, a, tensor_meta(1, 1), false, NULL);
    int lb = ts_session_begin_call(s, b, call_meta(), NULL);
    ts_session_end_call(s, b, tensor_meta(1, 1), false, NULL);
    /* flops: INT64_MAX twice overflows */
    ts_session_set_estimate(
        s, la, 0, TS_COMPLETE, ts_int(INT64_MAX), false, "zeta");
    ts_session_set_estimate(
        s, lb, 0, TS_COMPLETE, ts_int(INT64_MAX), false, "alpha");
    /* macs: 1.5 + 2 (two methods, sorted) */
    ts_session_set_estimate(s, la, 1, TS_COMPLETE, ts_real(1.5), false, "m2");
    ts_session_set_estimate(s, lb, 1, TS_PARTIAL, ts_int(2), false, "m1");
    /* dmas: two finite reals whose sum leaves the double range */
    ts_session_set_estimate(s, la, 2, TS_COMPLETE, ts_real(1e308), false, "m");
    ts_session_set_estimate(s, lb, 2, TS_COMPLETE, ts_real(1e308), false, "m");
    /* operator FLOPs of one layer saturate */
    ts_session_add_layer_op(s, la, INT64_MAX, true);
    ts_session_add_layer_op(s, la, 1, true);
    ts_session_add_phase_op(s, la, TS_PHASE_FORWARD, INT64_MAX, true);
    ts_session_add_phase_op(s, la, TS_PHASE_FORWARD, 1, true);
    json_t *r = report_of(s, NULL, empty_flops());
    json_t *tot = json_object_get(r, "totals");
    CHECK_EQ_STR(str_of(json_object_get(tot, "module_flops"), "status"),
                 "unavailable");
    CHECK_EQ_STR(str_of(json_object_get(tot, "module_flops"), "method"),
                 "sum_module_estimates[alpha, zeta]");
    CHECK_EQ_STR(str_of(json_object_get(tot, "macs"), "status"), "partial");
    CHECK_EQ_REAL(json_number_value(json_object_get(
                      json_object_get(tot, "macs"), "known_value")),
                  3.5);
    CHECK_EQ_STR(str_of(json_object_get(tot, "macs"), "method"),
                 "sum_module_estimates[m1, m2]");
    CHECK_EQ_STR(str_of(json_object_get(tot, "dmas"), "status"),
                 "unavailable");
    CHECK_EQ_INT(count_diags(r, "module_metric_error", "module_flops"), 1);
    CHECK_EQ_INT(count_diags(r, "module_metric_error", "dmas"), 1);
    CHECK_EQ_INT(count_diags(r, "module_metric_error", "macs"), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     layer_metric(r, 0, "operator_flops"), "known_value")),
                 INT64_MAX);
    CHECK_EQ_STR(str_of(layer_metric(r, 0, "operator_flops"), "status"),
                 "partial");
    json_decref(r);
    /* two calls of the same module whose sums overflow: saturated */
    int la2 = ts_session_begin_call(s, a, call_meta(), NULL);
    ts_session_end_call(s, a, tensor_meta(1, 1), false, NULL);
    ts_session_add_layer_op(s, la2, 10, true);
    json_t *by_path = ts_session_op_flops_by_path(s);
    CHECK_EQ_INT(json_object_size(by_path), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(by_path, "a")), INT64_MAX);
    CHECK_EQ_INT(json_integer_value(json_object_get(by_path, "b")), 0);
    json_decref(by_path);
    ts_session_free(s);
}

/* The expanded boundary of an nn.Transformer: three unavailable
 * estimates, each with its diagnostic. */
static void
test_expanded_boundary(void)
{
    ts_session *s = ts_session_new(true);
    int t = ts_session_add_module(s, "tf", "Transformer", NULL, false);
    int l = ts_session_begin_call(s, t, call_meta(), NULL);
    CHECK_EQ_INT(ts_session_mark_expanded_boundary(s, l), TS_OK);
    ts_session_end_call(s, t, tensor_meta(2, 4), false, NULL);
    json_t *r = report_of(s, NULL, empty_flops());
    CHECK_EQ_STR(str_of(layer_metric(r, 0, "dmas"), "method"),
                 "expanded_atomic_boundary");
    CHECK_EQ_INT(count_diags(r, "expanded_atomic_boundary", NULL), 3);
    CHECK_EQ_STR(
        str_of(json_object_get(json_object_get(r, "totals"), "module_flops"),
               "status"),
        "unavailable");
    json_decref(r);
    ts_session_free(s);
}

/* A leaf that owns its built-in estimate writes it with scope subtree;
 * token dependencies are wanted only by uncovered attention leaves; a
 * failed attention call gets unavailable tokens without a diagnostic of
 * their own; a retroactive owner without the receptive field keeps them. */
static void
test_owned_leaf_and_tokens(void)
{
    ts_session *s = ts_session_new(true);
    ts_module_desc lin = {0}, mha = {0};
    lin.kind = TS_MOD_LINEAR;
    lin.in_features = 4;
    lin.out_features = 2;
    lin.has_weight = true;
    lin.has_bias = true;
    mha.kind = TS_MOD_MHA;
    mha.embed_dim = 4;
    mha.num_heads = 1;
    int root = ts_session_add_module(s, "", "Net", NULL, false);
    int fc = ts_session_add_module(s, "fc", "Linear", &lin, true);
    int att =
        ts_session_add_module(s, "att", "MultiheadAttention", &mha, true);
    int att_box =
        ts_session_add_module(s, "box", "MultiheadAttention", &mha, false);
    ts_module_call call = {0};
    call.has_input = call.has_output = true;
    call.input = shape2(2, 4);
    call.output = shape2(2, 2);

    int lr = ts_session_begin_call(s, root, call_meta(), NULL);
    int lf = ts_session_begin_owned_call(s, fc, call_meta(), NULL, 1u);
    CHECK(!ts_session_layer_wants_tokens(s, lf)); /* not attention */
    CHECK_EQ_INT(ts_session_end_call(s, fc, tensor_meta(2, 2), false, &call),
                 lf);
    int lb = ts_session_begin_call(s, att_box, call_meta(), NULL);
    CHECK(!ts_session_layer_wants_tokens(s, lb)); /* not a metric leaf */
    ts_session_end_call(s, att_box, tensor_meta(2, 4), false, NULL);
    int la = ts_session_begin_call(s, att, call_meta(), NULL);
    CHECK(ts_session_layer_wants_tokens(s, la));
    CHECK_EQ_INT(ts_session_end_call(s, att, NULL, true, NULL), la);
    /* an owner of the flops alone: the attention row keeps its tokens */
    CHECK_EQ_INT(ts_session_own_retroactively(s, lr, 1u), TS_OK);
    CHECK_EQ_INT(ts_session_layer_covered(s, la), 1);
    CHECK_EQ_INT(ts_session_layer_covered(s, lf), 1);
    ts_session_end_call(s, root, tensor_meta(2, 2), false, NULL);
    json_t *r = report_of(s, NULL, empty_flops());
    /* Linear(4, 2) with bias on (2, 4): 4 * (2*4 - 1) + 4 = 32, but the
     * root owns the flops now: the row's own estimate is dropped */
    json_t *fl = layer_metric(r, 1, "macs");
    /* 4 outputs * 4 = 16 MACs, still the row's */
    CHECK_EQ_INT(json_integer_value(json_object_get(fl, "value")), 16);
    CHECK_EQ_STR(str_of(fl, "scope"), "module_call");
    CHECK_EQ_STR(str_of(layer_metric(r, 3, "receptive_field"), "method"),
                 "forward_failed");
    CHECK_EQ_INT(count_diags(r, "unsupported_token_dependencies", NULL), 0);
    CHECK_EQ_INT(count_diags(r, "module_forward_error", NULL), 1);
    json_decref(r);
    ts_session_free(s);

    /* the owned leaf alone: its flops estimate covers its subtree */
    s = ts_session_new(true);
    fc = ts_session_add_module(s, "fc", "Linear", &lin, true);
    lf = ts_session_begin_owned_call(s, fc, call_meta(), NULL, 1u);
    ts_session_end_call(s, fc, tensor_meta(2, 2), false, &call);
    r = report_of(s, NULL, empty_flops());
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     layer_metric(r, 0, "module_flops"), "value")),
                 32);
    CHECK_EQ_STR(str_of(layer_metric(r, 0, "module_flops"), "scope"),
                 "subtree");
    CHECK_EQ_STR(str_of(layer_metric(r, 0, "macs"), "scope"), "module_call");
    json_decref(r);
    ts_session_free(s);
}

int
main(void)
{
    test_owned_leaf_and_tokens();
    test_index_guards();
    test_names();
    test_failed_handler_and_pending();
    test_matchable_uncovered();
    test_retroactive_tokens();
    test_totals_overflow_and_methods();
    test_expanded_boundary();
    return ts_test_report();
}
