/* Layer bookkeeping, aggregation, the AnalysisReport and the strict
 * message on it. */
#include "fail_emitter.h"
#include "harness.h"
#include "torchscan/opstats.h"
#include "torchscan/session.h"
#include "torchscan/token_deps.h"

/* Every report these tests make is also written through an emitter that
 * fails each of its callbacks in turn (fail_emitter.h): each failure is
 * reported, and the complete run writes the report ts_session_report
 * makes. */
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

static json_t *
report_checked(ts_session *s,
               json_t *context,
               json_t *inputs,
               const ts_model_totals *totals,
               json_t *flop_report,
               const char *torch_version,
               ts_error *err)
{
    json_t *stub = NULL;
    emit_args a = {s, context, inputs, flop_report, totals};
    if (flop_report == NULL) {
        /* structure mode writes the not_requested stub */
        stub = ts_flop_report_not_requested(torch_version);
        a.flops = stub;
    }
    if (context != NULL && inputs != NULL && a.flops != NULL) {
        fault_loop("session report", write_report, &a);
    }
    json_decref(stub);
    return ts_session_report(
        s, context, inputs, totals, flop_report, torch_version, err);
}

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
call_meta(json_t *arg)
{
    return json_pack("{s:[o], s:{}}", "args", arg, "kwargs");
}

static ts_shape
shape2(int64_t a, int64_t b)
{
    ts_shape s = {2, {a, b}, TS_DTYPE_FLOAT, true, 4};
    return s;
}

/* Sequential(Linear(4, 2), Mystery()) on a (2, 4) input. */
static void
test_crawl_report(void)
{
    ts_session *s = ts_session_new(true);
    ts_module_desc lin = {0};
    ts_module_call call = {0};
    ts_attribution attr = {0};
    ts_model_totals totals = {10, 0, 40, 0, 0, false, 0, 0, 0, 0};
    ts_opstats *ops = ts_opstats_new();
    json_t *report, *layers, *tot, *diags;
    int root, l0, l1, layer;
    ts_error err;

    lin.kind = TS_MOD_LINEAR;
    lin.in_features = 4;
    lin.out_features = 2;
    lin.has_bias = true;
    lin.has_weight = true;
    root = ts_session_add_module(s, "", "Sequential", NULL, false);
    l0 = ts_session_add_module(s, "0", "Linear", &lin, true);
    l1 = ts_session_add_module(s, "1", "Mystery", NULL, true);
    CHECK_EQ_INT(root, 0);
    CHECK_EQ_INT(ts_session_module_count(s), 3);

    CHECK_EQ_INT(
        ts_session_begin_call(s, root, call_meta(tensor_meta(2, 4)), NULL), 0);
    attr.trainable = 10;
    attr.param_bytes = 40;
    layer = ts_session_begin_call(s, l0, call_meta(tensor_meta(2, 4)), &attr);
    CHECK_EQ_INT(layer, 1);
    CHECK_EQ_INT(ts_session_current_layer(s), 1);
    ts_session_add_layer_op(s, layer, 16, true);
    call.type_name = "Linear";
    call.has_input = call.has_output = true;
    call.input = shape2(2, 4);
    call.output = shape2(2, 2);
    CHECK_EQ_INT(ts_session_end_call(s, l0, tensor_meta(2, 2), false, &call),
                 1);
    CHECK_EQ_INT(ts_session_current_layer(s), 0);

    /* an unknown leaf: partial module metrics, never a silent zero */
    ts_session_begin_call(s, l1, call_meta(tensor_meta(2, 2)), NULL);
    call.type_name = "Mystery";
    call.input = shape2(2, 2);
    CHECK_EQ_INT(ts_session_end_call(s, l1, tensor_meta(2, 2), false, &call),
                 2);
    /* closing a module that is not open is refused */
    CHECK_EQ_INT(ts_session_end_call(s, l1, NULL, false, NULL), TS_EINVAL);
    CHECK_EQ_INT((int)ts_session_layer_count(s), 3);
    CHECK_EQ_INT(ts_session_end_call(s, root, tensor_meta(2, 2), false, NULL),
                 0);

    ts_opstats_record(ops,
                      ts_opstats_intern(ops, "aten.addmm"),
                      TS_OPCALL_COUNTED,
                      16,
                      false,
                      NULL,
                      NULL);
    report = report_checked(s,
                            json_object(),
                            json_pack("{s:s}", "source", "generated"),
                            &totals,
                            ts_opstats_report(ops, "2.13.0", "m", NULL),
                            "2.13.0",
                            &err);
    CHECK(report != NULL);
    layers = json_object_get(report, "layers");
    CHECK_EQ_INT(json_array_size(layers), 3);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(layers, 0), "name")),
        "sequential");
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_array_get(layers, 1), "depth")),
                 1);
    /* Linear(4, 2) on (2, 4): O = 4 outputs, 4 * (2*4 - 1) + 4 = 32 */
    json_t *mf = json_object_get(
        json_object_get(json_array_get(layers, 1), "metrics"), "module_flops");
    CHECK_EQ_INT(json_integer_value(json_object_get(mf, "value")), 32);
    /* the 16 operator FLOPs recorded inside the Linear call, and none in
     * the root's own work */
    json_t *of =
        json_object_get(json_object_get(json_array_get(layers, 1), "metrics"),
                        "operator_flops");
    CHECK_EQ_INT(json_integer_value(json_object_get(of, "value")), 16);
    CHECK_EQ_STR(json_string_value(json_object_get(of, "scope")),
                 "module_call_self");
    of = json_object_get(json_object_get(json_array_get(layers, 0), "metrics"),
                         "operator_flops");
    CHECK_EQ_INT(json_integer_value(json_object_get(of, "value")), 0);
    tot = json_object_get(report, "totals");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(tot, "module_flops"), "status")),
                 "partial");
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(tot, "module_flops"), "known_value")),
                 32);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(tot, "parameters"), "value")),
                 10);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(tot, "operator_flops"), "value")),
                 16);
    diags = json_object_get(report, "diagnostics");
    CHECK(json_array_size(diags) >= 3); /* flops, macs, dmas of Mystery */
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(diags, 0), "code")),
        "unsupported_module_metric");
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(diags, 0), "path")),
        "1");

    char *message = NULL;
    CHECK(ts_report_incomplete(report, &message));
    CHECK(message != NULL
          && strstr(message, "Analysis is incomplete for: ") == message);
    CHECK(message != NULL && strstr(message, "module_flops") != NULL);
    free(message);
    /* outside a process group: no local counts, no collective bytes */
    CHECK(json_object_get(tot, "local_parameters") == NULL);
    CHECK(json_object_get(tot, "collective_bytes") == NULL);
    CHECK(json_object_get(
              json_object_get(json_array_get(layers, 1), "parameters"),
              "local_elements")
          == NULL);
    json_decref(report);

    /* inside one: this rank holds 6 of the Linear's 10 parameters (a
     * shard), and the forward all-reduced 8 floats */
    totals.local = true;
    totals.local_params = 6;
    totals.local_param_bytes = 24;
    ts_opstats_record(ops,
                      ts_opstats_intern(ops, "c10d.allreduce_"),
                      TS_OPCALL_COUNTED,
                      0,
                      false,
                      NULL,
                      NULL);
    ts_opstats_record_bytes(
        ops, ts_opstats_intern(ops, "c10d.allreduce_"), 32);
    report = report_checked(s,
                            json_object(),
                            json_pack("{s:s}", "source", "generated"),
                            &totals,
                            ts_opstats_report(ops, "2.13.0", "m", NULL),
                            "2.13.0",
                            &err);
    CHECK(report != NULL);
    tot = json_object_get(report, "totals");
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(tot, "local_parameters"), "value")),
                 6);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(tot, "local_parameters"), "scope")),
                 "rank");
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(tot, "local_parameter_bytes"), "value")),
                 24);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(tot, "local_buffer_elements"), "value")),
                 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(tot, "collective_bytes"), "value")),
                 32);
    layers = json_object_get(report, "layers");
    /* the row's attribution was recorded without local counts: 0 */
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(json_array_get(layers, 1), "parameters"),
                     "local_elements")),
                 0);
    CHECK(
        json_object_get(json_object_get(json_array_get(layers, 1), "buffers"),
                        "local_bytes")
        != NULL);
    json_decref(report);
    ts_opstats_free(ops);
    ts_session_free(s);
}

static void
test_failed_call_and_structure(void)
{
    ts_session *s = ts_session_new(false);
    ts_model_totals totals = {0};
    ts_error err;
    int m = ts_session_add_module(s, "", "Net", NULL, true);
    ts_session_begin_call(
        s, m, call_meta(json_pack("{s:s}", "kind", "none")), NULL);
    CHECK_EQ_INT(ts_session_end_call(s, m, NULL, true, NULL), 0);
    json_t *report = report_checked(
        s, json_object(), json_object(), &totals, NULL, "2.13.0", &err);
    json_t *layer = json_array_get(json_object_get(report, "layers"), 0);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(layer, "output"), "kind")),
                 "failed");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_array_get(json_object_get(report, "diagnostics"), 0),
                     "code")),
                 "module_forward_error");
    /* structure mode: compute totals not requested, analysis_mode set */
    CHECK_EQ_STR(
        json_string_value(json_object_get(
            json_object_get(json_object_get(report, "totals"), "macs"),
            "method")),
        "not_requested");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(report, "context"), "analysis_mode")),
                 "structure");
    CHECK_EQ_INT(json_object_size(json_object_get(layer, "metrics")), 1);
    char *message = NULL;
    /* the module_forward_error diagnostic alone makes it incomplete */
    CHECK(ts_report_incomplete(report, &message));
    CHECK_EQ_STR(message, "Analysis is incomplete for: calls.");
    free(message);
    json_decref(report);
    ts_session_free(s);
}

static uint64_t fake_seq;

static uint64_t
fake_clock(void *ctx)
{
    (void)ctx;
    return fake_seq;
}

/* Per-phase layer FLOPs and the sequence-number map that joins backward
 * operators to the layer calls that created their nodes. */
static void
test_phase_layers(void)
{
    ts_session *s = ts_session_new(true);
    int root = ts_session_add_module(s, "", "Net", NULL, false);
    int lin = ts_session_add_module(s, "fc", "Mystery", NULL, true);
    int l_root, l_fc0, l_fc1;
    json_t *out, *bw, *rows;
    fake_seq = 5;
    ts_session_set_clock(s, fake_clock, NULL);
    l_root =
        ts_session_begin_call(s, root, call_meta(tensor_meta(2, 4)), NULL);
    fake_seq = 6; /* the root's own node 5 */
    l_fc0 = ts_session_begin_call(s, lin, call_meta(tensor_meta(2, 4)), NULL);
    fake_seq = 8; /* nodes 6, 7 */
    ts_session_end_call(s, lin, tensor_meta(2, 4), false, NULL);
    l_fc1 = ts_session_begin_call(s, lin, call_meta(tensor_meta(2, 4)), NULL);
    fake_seq = 9; /* node 8 */
    ts_session_end_call(s, lin, tensor_meta(2, 4), false, NULL);
    ts_session_end_call(s, root, tensor_meta(2, 4), false, NULL);
    fake_seq = 10; /* node 9: the loss, outside every call */
    CHECK_EQ_INT(ts_session_layer_of_seq(s, 4), -1);
    CHECK_EQ_INT(ts_session_layer_of_seq(s, 5), l_root);
    CHECK_EQ_INT(ts_session_layer_of_seq(s, 6), l_fc0);
    CHECK_EQ_INT(ts_session_layer_of_seq(s, 7), l_fc0);
    CHECK_EQ_INT(ts_session_layer_of_seq(s, 8), l_fc1);
    CHECK_EQ_INT(ts_session_layer_of_seq(s, 9), -1);
    CHECK_EQ_INT(ts_session_layer_of_seq(s, TS_PHASE_NO_SEQ), -1);
    ts_session_add_phase_op(s, l_fc0, TS_PHASE_FORWARD, 40, true);
    ts_session_add_phase_op(s, l_fc0, TS_PHASE_BACKWARD, 80, true);
    ts_session_add_phase_op(s, l_fc1, TS_PHASE_BACKWARD, 8, false);
    ts_session_add_phase_op(s, -1, TS_PHASE_BACKWARD, 1000, true);
    ts_session_add_phase_op(s, l_fc1, (ts_phase)TS_PHASE_COUNT, 1, true);
    out = ts_session_phase_layers(s);
    bw = json_object_get(out, "backward");
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_object_get(bw, "by_module"), "fc")),
                 88);
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_object_get(bw, "by_module"), "")),
                 0);
    rows = json_object_get(bw, "layers");
    CHECK_EQ_INT(json_array_size(rows), 3);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(rows, 2), "path")),
        "fc");
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_array_get(rows, 2), "call_index")),
                 1);
    CHECK_EQ_STR(
        json_string_value(json_object_get(
            json_object_get(json_array_get(rows, 2), "operator_flops"),
            "status")),
        "partial");
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(json_array_get(rows, 1), "operator_flops"),
            "value")),
        80);
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(out, "forward"), "by_module"),
            "fc")),
        40);
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(out, "optimizer"), "by_module"),
            "fc")),
        0);
    json_decref(out);
    ts_session_free(s);
}

/* A handler on the root owns module_flops for its subtree. */
static void
test_ownership(void)
{
    ts_session *s = ts_session_new(true);
    ts_module_desc lin = {0};
    ts_module_call call = {0};
    ts_model_totals totals = {0};
    ts_error err;
    lin.kind = TS_MOD_LINEAR;
    lin.in_features = 4;
    lin.out_features = 2;
    lin.has_bias = true;
    int root = ts_session_add_module(s, "", "Net", NULL, false);
    int child = ts_session_add_module(s, "fc", "Linear", &lin, true);
    ts_session_set_module_handler(s, root, true);
    int l0 = ts_session_begin_owned_call(
        s, root, call_meta(tensor_meta(1, 4)), NULL, 1u /* module_flops */);
    int l1 =
        ts_session_begin_call(s, child, call_meta(tensor_meta(1, 4)), NULL);
    CHECK_EQ_INT(ts_session_layer_covered(s, l1), 1);
    CHECK_EQ_INT(ts_session_layer_covered(s, l0), 0);
    call.has_input = call.has_output = true;
    call.input = shape2(1, 4);
    call.output = shape2(1, 2);
    ts_session_end_call(s, child, tensor_meta(1, 2), false, &call);
    CHECK_EQ_INT(ts_session_set_estimate(
                     s, l0, 0, TS_COMPLETE, ts_int(99), true, "custom:x"),
                 TS_OK);
    ts_session_end_call(s, root, tensor_meta(1, 2), false, NULL);
    json_t *r = report_checked(
        s, json_object(), json_object(), &totals, NULL, "2.13.0", &err);
    json_t *rl = json_array_get(json_object_get(r, "layers"), 0);
    json_t *cl = json_array_get(json_object_get(r, "layers"), 1);
    json_t *m0 =
        json_object_get(json_object_get(rl, "metrics"), "module_flops");
    CHECK_EQ_INT(json_integer_value(json_object_get(m0, "value")), 99);
    CHECK_EQ_STR(json_string_value(json_object_get(m0, "scope")), "subtree");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(rl, "metric_ownership"), "module_flops")),
                 "subtree");
    /* the child keeps the estimates nobody owns, not the covered one */
    CHECK(json_object_get(json_object_get(cl, "metrics"), "module_flops")
          == NULL);
    /* Linear(4, 2) on (1, 4): 2 outputs * 4 inputs = 8 MACs */
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(cl, "metrics"), "macs"), "value")),
        8);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(json_object_get(cl, "metric_owners"),
                                     "module_flops"),
                     "path")),
                 "");
    /* per path: the operator FLOPs of each module's own calls (none here) */
    json_t *by_path = ts_session_op_flops_by_path(s);
    CHECK_EQ_INT(json_object_size(by_path), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(by_path, "fc")), 0);
    json_decref(by_path);
    /* totals: the owner's estimate alone, named by its method */
    json_t *t = json_object_get(json_object_get(r, "totals"), "module_flops");
    CHECK_EQ_INT(json_integer_value(json_object_get(t, "value")), 99);
    CHECK_EQ_STR(json_string_value(json_object_get(t, "method")), "custom:x");
    json_decref(r);
    ts_session_free(s);
}

static ts_shape
shape3(int64_t a, int64_t b, int64_t c)
{
    ts_shape s = {3, {a, b, c}, TS_DTYPE_FLOAT, true, 4};
    return s;
}

/* token_dependencies: on a native attention row that answers its receptive
 * field; unavailable (no diagnostic of its own) when its forward failed;
 * dropped with its diagnostic when an enclosing call takes the receptive
 * field over after the fact. */
static void
test_token_dependencies(void)
{
    ts_session *s = ts_session_new(true);
    ts_module_desc mha = {0};
    ts_module_call call = {0};
    ts_token_call tokens;
    ts_model_totals totals = {0};
    ts_error err;
    json_t *report, *layers, *diags, *tk;
    memset(&tokens, 0, sizeof tokens);
    mha.kind = TS_MOD_MHA;
    mha.embed_dim = 4;
    mha.num_heads = 2;
    mha.kdim = mha.vdim = 4;
    int root = ts_session_add_module(s, "", "Net", NULL, false);
    int attn =
        ts_session_add_module(s, "attn", "MultiheadAttention", &mha, true);
    call.has_input = call.has_output = true;
    call.input = call.output = call.key = call.value = shape3(3, 1, 4);
    call.tokens = &tokens;
    tokens.key_is_query = tokens.value_is_query = tokens.value_is_key = true;

    int l0 =
        ts_session_begin_call(s, root, call_meta(tensor_meta(3, 4)), NULL);
    /* layer 1: all-to-all */
    int l1 =
        ts_session_begin_call(s, attn, call_meta(tensor_meta(3, 4)), NULL);
    CHECK(ts_session_layer_wants_tokens(s, l1));
    CHECK(!ts_session_layer_wants_tokens(s, l0)); /* not a native row */
    CHECK_EQ_INT(ts_session_end_call(s, attn, tensor_meta(3, 4), false, &call),
                 l1);
    /* layer 2: padding that excludes a key */
    tokens.key_padding_mask.present = tokens.key_padding_mask.read = true;
    tokens.key_padding_mask.excludes = true;
    tokens.key_padding_mask.shape = shape2(1, 3);
    tokens.key_padding_mask.shape.dtype = TS_DTYPE_BOOL;
    int l2 =
        ts_session_begin_call(s, attn, call_meta(tensor_meta(3, 4)), NULL);
    ts_session_end_call(s, attn, tensor_meta(3, 4), false, &call);
    /* layer 3: its forward raised */
    int l3 =
        ts_session_begin_call(s, attn, call_meta(tensor_meta(3, 4)), NULL);
    ts_session_end_call(s, attn, NULL, true, NULL);
    ts_session_end_call(s, root, tensor_meta(3, 4), false, NULL);
    CHECK_EQ_INT(l2, 2);
    CHECK_EQ_INT(l3, 3);

    report = report_checked(
        s, json_object(), json_object(), &totals, NULL, "2.13.0", &err);
    layers = json_object_get(report, "layers");
    diags = json_object_get(report, "diagnostics");
    CHECK(json_object_get(json_array_get(layers, 0), "token_dependencies")
          == NULL);
    tk = json_object_get(json_array_get(layers, 1), "token_dependencies");
    CHECK_EQ_STR(json_string_value(json_object_get(tk, "status")), "complete");
    CHECK_EQ_STR(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(tk, "sources"), 0),
                            "relation"),
            "kind")),
        "all");
    tk = json_object_get(json_array_get(layers, 2), "token_dependencies");
    CHECK_EQ_STR(json_string_value(json_object_get(tk, "status")),
                 "unavailable");
    tk = json_object_get(json_array_get(layers, 3), "token_dependencies");
    CHECK_EQ_STR(json_string_value(json_object_get(tk, "status")),
                 "unavailable");
    CHECK_EQ_INT(json_array_size(json_object_get(tk, "sources")), 0);
    /* the padding diagnostic, then the failed forward's */
    CHECK_EQ_INT(json_array_size(diags), 2);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(diags, 0), "code")),
        "unsupported_token_dependencies");
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(diags, 0), "metric")),
        "token_dependencies");
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(diags, 0), "path")),
        "attn");
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(diags, 1), "code")),
        "module_forward_error");
    json_decref(report);
    ts_session_free(s);

    /* a parent takes the receptive field after its child recorded token
     * dependencies and their diagnostic: both go */
    s = ts_session_new(true);
    root = ts_session_add_module(s, "", "Net", NULL, false);
    attn = ts_session_add_module(s, "attn", "MultiheadAttention", &mha, true);
    ts_session_set_module_handler(s, root, true);
    l0 = ts_session_begin_call(s, root, call_meta(tensor_meta(3, 4)), NULL);
    l1 = ts_session_begin_call(s, attn, call_meta(tensor_meta(3, 4)), NULL);
    ts_session_end_call(s, attn, tensor_meta(3, 4), false, &call);
    CHECK_EQ_INT(ts_session_own_retroactively(s, l0, 1u << 3), TS_OK);
    CHECK(!ts_session_layer_wants_tokens(s, l1));
    ts_session_end_call(s, root, tensor_meta(3, 4), false, NULL);
    report = report_checked(
        s, json_object(), json_object(), &totals, NULL, "2.13.0", &err);
    layers = json_object_get(report, "layers");
    CHECK(json_object_get(json_array_get(layers, 1), "token_dependencies")
          == NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(report, "diagnostics")), 0);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(json_object_get(json_array_get(layers, 1),
                                                     "metric_owners"),
                                     "receptive_field"),
                     "path")),
                 "");
    json_decref(report);
    ts_session_free(s);

    /* structure mode: no token analysis */
    s = ts_session_new(false);
    attn = ts_session_add_module(s, "", "MultiheadAttention", &mha, true);
    l0 = ts_session_begin_call(s, attn, call_meta(tensor_meta(3, 4)), NULL);
    CHECK(!ts_session_layer_wants_tokens(s, l0));
    ts_session_end_call(s, attn, tensor_meta(3, 4), false, &call);
    report = report_checked(
        s, json_object(), json_object(), &totals, NULL, "2.13.0", &err);
    CHECK(json_object_get(json_array_get(json_object_get(report, "layers"), 0),
                          "token_dependencies")
          == NULL);
    json_decref(report);
    ts_session_free(s);
}

int
main(void)
{
    test_ownership();
    test_crawl_report();
    test_failed_call_and_structure();
    test_phase_layers();
    test_token_dependencies();
    printf(
        "session reports written through failing emitters: %ld, "
        "callbacks failed: %ld\n",
        fault_writers,
        fault_runs);
    return ts_test_report();
}
