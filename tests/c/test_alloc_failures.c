/* Allocation-failure injection: every entry point survives the failure of
 * any one allocation.
 *
 * The test binary is linked with -Wl,--wrap for malloc, calloc, realloc
 * and strdup (meson.build), so every allocation the engine's objects make
 * comes through the wrappers below; jansson's go through the same counter
 * by json_set_alloc_funcs. For each entry point, the run with the N-th
 * allocation failing is made for N = 1, 2, ... until a run makes fewer
 * than N allocations: every failing run must return an error (or, where
 * the engine survives the failure, the same result as a run without one);
 * none may crash, and under `make asan` none may leak. Inputs are read
 * before the injection starts. The totals printed at the end are the
 * figures of the closing note. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "torchscan/benchmark.h"
#include "torchscan/checkpoint.h"
#include "torchscan/diff.h"
#include "torchscan/emit.h"
#include "torchscan/export.h"
#include "torchscan/gather.h"
#include "torchscan/json_text.h"
#include "torchscan/mem_sim.h"
#include "torchscan/memory.h"
#include "torchscan/opstats.h"
#include "torchscan/profile.h"
#include "torchscan/render.h"
#include "torchscan/report_check.h"
#include "torchscan/session.h"
#include "torchscan/stats.h"
#include "torchscan/table.h"
#include "torchscan/token_deps.h"
#include "torchscan/workload.h"

/* ---- the injector ------------------------------------------------------ */

static long alloc_count; /* allocations since the run began */
static long fail_at;     /* the allocation that fails (0: none) */
static long failed;      /* allocations failed so far, all runs */

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *ptr, size_t size);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *ptr, size_t size);
char *__wrap_strdup(const char *s);

static int
must_fail(void)
{
    if (fail_at > 0 && ++alloc_count == fail_at) {
        failed++;
        return 1;
    }
    return 0;
}

void *
__wrap_malloc(size_t size)
{
    return must_fail() ? NULL : __real_malloc(size);
}

void *
__wrap_calloc(size_t n, size_t size)
{
    return must_fail() ? NULL : __real_calloc(n, size);
}

void *
__wrap_realloc(void *ptr, size_t size)
{
    return must_fail() ? NULL : __real_realloc(ptr, size);
}

char *
__wrap_strdup(const char *s)
{
    return must_fail() ? NULL : __real_strdup(s);
}

/* jansson's parser is not injected: json_loadb is wrapped (meson.build)
 * so that its allocations go uncounted. Under a failed allocation jansson
 * 2.14's parser frees a pointer it did not allocate (ASan: bad-free inside
 * json_loadb), and its lexer drops a byte of a string whose buffer could
 * not grow instead of failing; neither is the engine's code. Every other
 * allocation of jansson's, building reports and results, is counted. */
static int parsing;

json_t *__real_json_loadb(const char *buffer,
                          size_t buflen,
                          size_t flags,
                          json_error_t *error);
json_t *__wrap_json_loadb(const char *buffer,
                          size_t buflen,
                          size_t flags,
                          json_error_t *error);

json_t *
__wrap_json_loadb(const char *buffer,
                  size_t buflen,
                  size_t flags,
                  json_error_t *error)
{
    json_t *value;
    parsing++;
    value = __real_json_loadb(buffer, buflen, flags, error);
    parsing--;
    return value;
}

static void *
json_alloc(size_t size)
{
    return parsing ? __real_malloc(size) : __wrap_malloc(size);
}

/* ---- entry points -------------------------------------------------------
 * Each runs one call on inputs prepared beforehand and returns its result
 * as text (malloc'd with the real allocator, so that keeping it never
 * counts), or NULL when the call reported an error. */

typedef struct inputs {
    json_t *cnn, *wide, *partial, *subtree, *structure, *bench, *bench_cmp;
    json_t *text_model;
    unsigned char *st; /* a safetensors file */
    size_t st_size;
    unsigned char *seeds[3]; /* torch zip, torch legacy, GGUF */
    size_t seed_sizes[3];
} inputs;

typedef char *(*entry_fn)(const inputs *in);

static char *
keep(char *text)
{
    /* copy with the real allocator, free the engine's copy */
    char *copy = NULL;
    if (text != NULL) {
        size_t n = strlen(text) + 1;
        copy = __real_malloc(n);
        if (copy != NULL) {
            memcpy(copy, text, n);
        }
        free(text);
    }
    return copy;
}

static char *
keep_json(json_t *value)
{
    char *text = NULL;
    if (value != NULL) {
        long saved = fail_at;
        fail_at = 0; /* writing the result down is not the call's work */
        text = keep(ts_json_text(value, -1));
        fail_at = saved;
        json_decref(value);
    }
    return text;
}

static char *
e_json_text(const inputs *in)
{
    return keep(ts_json_text(in->cnn, 2));
}

static char *
e_check(const inputs *in)
{
    ts_error err;
    int rc = ts_analysis_report_check_display(in->subtree, "report", &err);
    return rc == TS_OK ? keep(strdup("ok")) : NULL;
}

static char *
e_table(const inputs *in)
{
    ts_error err;
    ts_table_options options = {0};
    options.max_depth = -1;
    options.receptive_field = true;
    return keep(ts_format_summary(in->cnn, &options, &err));
}

static char *
e_benchmark_compare(const inputs *in)
{
    ts_error err;
    json_t *diffs = NULL;
    if (ts_benchmark_prepare(in->bench, in->bench, &diffs, &err) != TS_OK) {
        return NULL;
    }
    return keep_json(
        ts_benchmark_comparison(in->bench, in->bench, diffs, true, &err));
}

static char *
e_compare(const inputs *in)
{
    ts_error err;
    return keep_json(ts_compare_reports(in->cnn, in->wide, &err));
}

static char *
e_render_html(const inputs *in)
{
    ts_error err;
    return keep(ts_render_analysis(
        in->partial, NULL, "Injected", "module_flops", "html", &err));
}

static char *
e_render_compare(const inputs *in)
{
    ts_error err;
    return keep(
        ts_render_analysis(in->wide, in->cnn, "B", "macs", "html", &err));
}

static char *
e_render_svg(const inputs *in)
{
    ts_error err;
    return keep(ts_render_analysis(
        in->subtree, NULL, "S", "module_flops", "svg", &err));
}

static char *
e_render_structure(const inputs *in)
{
    ts_error err;
    return keep(ts_render_analysis(
        in->structure, NULL, "S", "parameters", "html", &err));
}

static char *
e_export(const inputs *in, int format)
{
    ts_error err;
    ts_export_options options = {0};
    options.format = (ts_export_format)format;
    options.metric = ts_export_metric_parse("module_flops");
    return keep(ts_export_report(in->cnn, &options, NULL, &err));
}

static char *
e_export_csv(const inputs *in)
{
    return e_export(in, ts_export_format_parse("csv"));
}

static char *
e_export_markdown(const inputs *in)
{
    return e_export(in, ts_export_format_parse("markdown"));
}

static char *
e_export_folded(const inputs *in)
{
    return e_export(in, ts_export_format_parse("folded"));
}

static char *
e_benchmark_page(const inputs *in)
{
    ts_error err;
    return keep(ts_render_benchmark_html(in->bench, "Bench", &err));
}

static char *
e_benchmark_comparison_page(const inputs *in)
{
    ts_error err;
    return keep(ts_render_benchmark_html(in->bench_cmp, "Cmp", &err));
}

/* A simulated step: an existing parameter, 300 storages allocated (a
 * map and event lists that grow), every other freed, a gradient named. */
static char *
e_memsim(const inputs *in)
{
    ts_memsim *sim = ts_memsim_new();
    ts_memory_report_info info = {"2.13.0", "as_run", 2, NULL};
    json_t *report = NULL;
    (void)in;
    if (sim == NULL || ts_memsim_observe(sim, 1, 4096, "cpu", true) != TS_OK
        || ts_memsim_set_role(sim, 1, TS_MEM_PARAMETER) != TS_OK) {
        goto done;
    }
    for (uint64_t k = 2; k < 302; k++) {
        if (ts_memsim_op(sim,
                         k % 2 ? "aten.mm.default" : "aten.relu.default",
                         k < 200 ? TS_PHASE_FORWARD : TS_PHASE_BACKWARD,
                         (int)(k % 3) - 1)
                != TS_OK
            || ts_memsim_observe(sim, k, (int64_t)k * 8, "meta", false)
                   != TS_OK
            || (k % 2 == 0 && ts_memsim_release(sim, k - 1) != TS_OK)
            || (k % 50 == 0 && ts_memsim_workspace(sim, 64, "cpu") != TS_OK)) {
            goto done;
        }
    }
    if (ts_memsim_set_role(sim, 300, TS_MEM_GRADIENT) != TS_OK) {
        goto done;
    }
    report = ts_memsim_report(sim, true, NULL, NULL);
    /* the MemoryReport around it: partial totals, saved activations */
    info.saved = json_pack("{s:[], s:{s:s, s:I}}",
                           "layers",
                           "total",
                           "status",
                           "partial",
                           "known_value",
                           (json_int_t)8);
    if (report != NULL && info.saved != NULL) {
        json_decref(report);
        report = ts_memory_report(sim, true, NULL, NULL, &info);
    }
    else {
        json_decref(report); /* a failure before the report is made */
        json_decref(info.saved);
        report = NULL;
    }
done:
    ts_memsim_free(sim);
    return keep_json(report);
}

static json_t *
tensor2(int64_t a, int64_t b)
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
call_args(json_t *arg)
{
    return arg != NULL ? json_pack("{s:[o], s:{}}", "args", arg, "kwargs")
                       : NULL;
}

/* A crawl of Sequential(Linear(4, 2), Mystery()) on a (2, 4) input, as
 * the binding drives the session (test_session.c checks its numbers). */
static char *
e_session(const inputs *in)
{
    ts_session *s = ts_session_new(true);
    ts_opstats *ops = ts_opstats_new();
    ts_module_desc lin = {0};
    ts_module_call call = {0};
    ts_attribution attr = {0};
    ts_model_totals totals = {10, 0, 40, 0, 0, false, 0, 0, 0, 0};
    json_t *report = NULL, *flops;
    ts_error err;
    int root, l0, l1, layer, packet;
    (void)in;
    if (s == NULL || ops == NULL) {
        goto done;
    }
    lin.kind = TS_MOD_LINEAR;
    lin.in_features = 4;
    lin.out_features = 2;
    lin.has_bias = lin.has_weight = true;
    root = ts_session_add_module(s, "", "Sequential", NULL, false);
    l0 = ts_session_add_module(s, "0", "Linear", &lin, true);
    l1 = ts_session_add_module(s, "1", "Mystery", NULL, true);
    if (root < 0 || l0 < 0 || l1 < 0
        || ts_session_begin_call(s, root, call_args(tensor2(2, 4)), NULL)
               < 0) {
        goto done;
    }
    attr.trainable = 10;
    attr.param_bytes = 40;
    layer = ts_session_begin_call(s, l0, call_args(tensor2(2, 4)), &attr);
    if (layer < 0) {
        goto done;
    }
    ts_session_add_layer_op(s, layer, 16, true);
    call.type_name = "Linear";
    call.has_input = call.has_output = true;
    call.input = (ts_shape){2, {2, 4}, TS_DTYPE_FLOAT, true, 4};
    call.output = (ts_shape){2, {2, 2}, TS_DTYPE_FLOAT, true, 4};
    if (ts_session_end_call(s, l0, tensor2(2, 2), false, &call) < 0
        || ts_session_begin_call(s, l1, call_args(tensor2(2, 2)), NULL) < 0) {
        goto done;
    }
    call.type_name = "Mystery";
    call.input = call.output;
    if (ts_session_end_call(s, l1, tensor2(2, 2), false, &call) < 0
        || ts_session_end_call(s, root, tensor2(2, 2), false, NULL) < 0) {
        goto done;
    }
    packet = ts_opstats_intern(ops, "aten.addmm");
    if (packet < 0
        || ts_opstats_record(
               ops, packet, TS_OPCALL_COUNTED, 16, false, NULL, NULL)
               < 0) {
        goto done;
    }
    /* the binding raises when the FlopReport cannot be built (a NULL one
     * stands for "not requested") */
    flops = ts_opstats_report(ops, "2.13.0", "m", NULL);
    if (flops != NULL) {
        report = ts_session_report(s,
                                   json_object(),
                                   json_pack("{s:s}", "source", "generated"),
                                   &totals,
                                   flops,
                                   "2.13.0",
                                   &err);
    }
done:
    ts_opstats_free(ops);
    ts_session_free(s);
    return keep_json(report);
}

/* The session's other paths (test_session_edges.c checks their
 * numbers): a matchable composite whose matrix product no signature
 * recognizes and its child, an owned call, an attention leaf whose call
 * exposed no tensor (token dependencies and their diagnostic), a handler
 * estimate, an owner that takes every estimate afterwards and an expanded
 * boundary. */
static char *
e_session_paths(const inputs *in)
{
    ts_session *s = ts_session_new(true);
    ts_opstats *ops = ts_opstats_new();
    ts_module_desc lin = {0}, mha = {0};
    ts_module_call call = {0};
    ts_model_totals totals = {0};
    json_t *report = NULL, *flops;
    ts_match_op op;
    ts_error err;
    int root, blk, fc, att, lr, la;
    (void)in;
    if (s == NULL || ops == NULL) {
        goto done;
    }
    lin.kind = TS_MOD_LINEAR;
    lin.in_features = lin.out_features = 4;
    lin.has_weight = true;
    mha.kind = TS_MOD_MHA;
    mha.embed_dim = 4;
    mha.num_heads = 1;
    root = ts_session_add_module(s, "", "Net", NULL, false);
    blk = ts_session_add_module(s, "blk", "LibBlock", NULL, false);
    fc = ts_session_add_module(s, "blk.fc", "Linear", &lin, true);
    att = ts_session_add_module(s, "att", "MultiheadAttention", &mha, true);
    if (root < 0 || blk < 0 || fc < 0 || att < 0) {
        goto done;
    }
    ts_session_set_module_matchable(s, blk, true);
    lr = ts_session_begin_call(s, root, call_args(tensor2(2, 4)), NULL);
    if (lr < 0
        || ts_session_begin_call(s, blk, call_args(tensor2(2, 4)), NULL) < 0) {
        goto done;
    }
    memset(&op, 0, sizeof op);
    op.code = ts_match_op_code("aten.mm");
    op.counted = true;
    op.flops = 64;
    op.nouts = 1;
    op.outs[0] = (ts_shape){2, {2, 4}, TS_DTYPE_FLOAT, true, 4};
    call.has_input = call.has_output = true;
    call.input = call.output = op.outs[0];
    if (ts_session_record_op(s, &op) != TS_OK
        || ts_session_begin_owned_call(
               s, fc, call_args(tensor2(2, 4)), NULL, 1u)
               < 0
        || ts_session_end_call(s, fc, tensor2(2, 4), false, &call) < 0
        || ts_session_end_call(s, blk, tensor2(2, 4), false, &call) < 0) {
        goto done;
    }
    la = ts_session_begin_call(s, att, call_args(tensor2(2, 4)), NULL);
    if (la < 0
        || ts_session_set_estimate(
               s, la, 1, TS_COMPLETE, ts_int(5), false, "handler")
               != TS_OK
        || ts_session_end_call(s, att, tensor2(2, 4), false, NULL) < 0
        || ts_session_own_retroactively(s, lr, 0x38u) != TS_OK
        || ts_session_mark_expanded_boundary(s, lr) != TS_OK
        || ts_session_end_call(s, root, tensor2(2, 4), false, NULL) < 0) {
        goto done;
    }
    flops = ts_opstats_report(ops, "2.13.0", "m", NULL);
    if (flops != NULL) {
        report = ts_session_report(
            s, json_object(), json_object(), &totals, flops, "2.13.0", &err);
    }
done:
    ts_opstats_free(ops);
    ts_session_free(s);
    return keep_json(report);
}

/* The per-call views the binding asks a session for: operator FLOPs by
 * path, per phase, and saved bytes per layer call. */
static char *
e_session_views(const inputs *in)
{
    ts_session *s = ts_session_new(true);
    json_t *phases = NULL, *saved = NULL, *by_path = NULL, *out = NULL;
    int mods[3];
    (void)in;
    if (s == NULL || ts_session_enable_saved(s) != TS_OK) {
        goto done;
    }
    mods[0] = ts_session_add_module(s, "", "Net", NULL, false);
    mods[1] = ts_session_add_module(s, "b", "B", NULL, true);
    mods[2] = ts_session_add_module(s, "a", "A", NULL, true);
    if (mods[0] < 0 || mods[1] < 0 || mods[2] < 0
        || ts_session_begin_call(s, mods[0], json_object(), NULL) < 0) {
        goto done;
    }
    for (int k = 1; k < 3; k++) {
        int layer = ts_session_begin_call(s, mods[k], json_object(), NULL);
        if (layer < 0) {
            goto done;
        }
        ts_session_add_layer_op(s, layer, 10 * k, true);
        ts_session_add_phase_op(s, layer, TS_PHASE_BACKWARD, 3 * k, k == 2);
        if (ts_saved_add(ts_session_saved(s), 0x100u + (uint64_t)k, 8, layer)
                < 0
            || ts_session_end_call(s, mods[k], json_object(), false, NULL)
                   < 0) {
            goto done;
        }
    }
    if (ts_session_end_call(s, mods[0], json_object(), false, NULL) < 0) {
        goto done;
    }
    phases = ts_session_phase_layers(s);
    saved = ts_session_saved_layers(s, "forward");
    by_path = ts_session_op_flops_by_path(s);
    if (phases != NULL && saved != NULL && by_path != NULL) {
        out = json_pack("{s:O, s:O, s:O}",
                        "phases",
                        phases,
                        "saved",
                        saved,
                        "by_path",
                        by_path);
    }
done:
    json_decref(phases);
    json_decref(saved);
    json_decref(by_path);
    ts_session_free(s);
    return keep_json(out);
}

/* Bytes saved for backward: 40 layer calls save 300 storages (the table
 * and the layer sums grow past their first sizes), some twice, one
 * parameter excluded, one unmeasured tensor; then the report. */
static char *
e_saved(const inputs *in)
{
    ts_session *s = ts_session_new(false);
    ts_model_totals totals = {0};
    json_t *report = NULL;
    ts_saved *acc;
    ts_error err;
    int root, layer;
    (void)in;
    if (s == NULL || ts_session_enable_saved(s) != TS_OK) {
        goto done;
    }
    acc = ts_session_saved(s);
    root = ts_session_add_module(s, "", "Net", NULL, true);
    if (root < 0 || ts_saved_exclude(acc, 7) != TS_OK) {
        goto done;
    }
    for (int call = 0; call < 40; call++) {
        layer = ts_session_begin_call(s, root, json_object(), NULL);
        if (layer < 0) {
            goto done;
        }
        for (int k = 0; k < 8; k++) {
            uint64_t storage = 0x1000u + (uint64_t)(call * 7 + k) * 64u;
            if (ts_saved_add(acc, storage, 16 + k, layer) < 0
                || ts_saved_add(acc, 7, 100, layer) < 0) {
                goto done;
            }
        }
        if ((call == 3 && ts_saved_add_unmeasured(acc, layer) < 0)
            || ts_session_end_call(s, root, json_object(), false, NULL) < 0) {
            goto done;
        }
    }
    report = ts_session_report(
        s, json_object(), json_object(), &totals, NULL, "2.13.0", &err);
done:
    ts_session_free(s);
    return keep_json(report);
}

/* ---- gathering, emitting, text models, timing ---- */

static char *
gather(json_t *a, json_t *b, bool with_reports)
{
    ts_error err;
    json_t *reports = json_pack("[OO]", a, b),
           *ranks = json_pack("[ii]", 0, 1);
    json_t *g = NULL;
    if (reports != NULL && ranks != NULL) {
        g = ts_gather_reports(reports, ranks, with_reports, &err);
    }
    json_decref(reports);
    json_decref(ranks);
    return keep_json(g);
}

static char *
e_gather_analysis(const inputs *in)
{
    return gather(in->cnn, in->wide, true);
}

static char *
e_gather_text_model(const inputs *in)
{
    return gather(in->text_model, in->text_model, false);
}

static char *
e_gather_flops(const inputs *in)
{
    return gather(json_object_get(in->cnn, "operator_flops"),
                  json_object_get(in->wide, "operator_flops"),
                  true);
}

static char *
e_gather_benchmark(const inputs *in)
{
    return gather(in->bench, in->bench, true);
}

static char *
e_gather_shape(const inputs *in)
{
    ts_error err;
    return keep_json(ts_gather_shape(in->text_model, &err));
}

static char *
e_gather_emit(const inputs *in)
{
    ts_error err;
    ts_emitter e;
    json_t *reports = json_pack("[OO]", in->cnn, in->cnn);
    json_t *ranks = json_pack("[ii]", 0, 1), *g = NULL;
    ts_json_builder *b = ts_json_builder_new();
    if (b != NULL && reports != NULL && ranks != NULL) {
        ts_json_builder_emitter(b, &e);
        if (ts_gather_emit(reports, ranks, true, &e, &err) == TS_OK) {
            g = ts_json_builder_take(b);
        }
    }
    ts_json_builder_free(b);
    json_decref(reports);
    json_decref(ranks);
    return keep_json(g);
}

static char *
e_emit_tree(const inputs *in)
{
    ts_emitter e;
    json_t *value = NULL;
    ts_json_builder *b = ts_json_builder_new();
    if (b != NULL) {
        ts_json_builder_emitter(b, &e);
        if (ts_emit_tree(&e, in->text_model) == TS_OK) {
            value = ts_json_builder_take(b);
        }
    }
    ts_json_builder_free(b);
    return keep_json(value);
}

static char *
e_render_text_model(const inputs *in)
{
    ts_error err;
    return keep(ts_render_analysis(
        in->text_model, NULL, "T", "module_flops", "html", &err));
}

static char *
e_table_text_model(const inputs *in)
{
    ts_error err;
    ts_table_options options = {0};
    options.max_depth = -1;
    return keep(ts_format_summary(in->text_model, &options, &err));
}

static char *
e_compare_text_model(const inputs *in)
{
    ts_error err;
    return keep_json(ts_compare_reports(in->text_model, in->text_model, &err));
}

static char *
e_diff_metrics(const inputs *in)
{
    ts_error err;
    return keep_json(ts_diff_metrics(json_object_get(in->cnn, "totals"),
                                     json_object_get(in->wide, "totals"),
                                     &err));
}

static char *
e_verdict(const inputs *in)
{
    ts_error err;
    return keep(ts_render_verdict(in->bench_cmp, &err));
}

static char *
e_workload_summary(const inputs *in)
{
    ts_error err;
    return keep(ts_workload_summary(in->bench, &err));
}

static char *
e_timing_report(const inputs *in)
{
    ts_error err;
    static const double blocks[] = {0.5, 0.25, 0.75, 0.5, 1.0};
    (void)in;
    return keep_json(
        ts_timing_report(0.1, blocks, 5, 10, 2.0, "images", &err));
}

/* Workload totals from measured ones, then achieved FLOP/s with its
 * utilization and the diagnostics of what is missing. */
static char *
e_workload_totals(const inputs *in)
{
    ts_error err;
    json_t *measured = json_pack(
        "{s:{s:s, s:f, s:f, s:s, s:s, s:s}, s:{s:s, s:I, s:I, s:s, s:s, "
        "s:s}}",
        "latency",
        "status",
        "complete",
        "value",
        0.5,
        "known_value",
        0.5,
        "unit",
        "seconds",
        "scope",
        "warmed_block_average",
        "method",
        "t",
        "operator_flops",
        "status",
        "complete",
        "value",
        (json_int_t)12,
        "known_value",
        (json_int_t)12,
        "unit",
        "FLOPs",
        "scope",
        "workload",
        "method",
        "c");
    json_t *diags = json_array(), *totals = NULL, *out = NULL;
    (void)in;
    if (measured != NULL && diags != NULL) {
        totals =
            ts_workload_totals(measured,
                               TS_WORKLOAD_LATENCY | TS_WORKLOAD_FLOPS
                                   | TS_WORKLOAD_MEMORY | TS_WORKLOAD_ACHIEVED,
                               "samples",
                               "pytorch_tensor_bytes",
                               "tracked",
                               &err);
    }
    if (totals != NULL
        && ts_workload_achieved(totals, 96.0, diags, &err) == TS_OK) {
        out = json_pack("{s:O, s:O}", "totals", totals, "diagnostics", diags);
    }
    json_decref(measured);
    json_decref(diags);
    json_decref(totals);
    return keep_json(out);
}

/* Profile rows sorted by device time and cut to a limit. */
static char *
e_profile_rows(const inputs *in)
{
    ts_error err;
    json_t *shapes = json_pack("[[i, i]]", 2, 3), *out = NULL;
    ts_profile_row rows[3] = {
        {"aten::mm", 2, NULL, 0.5, true, 0.25, 64, 0},
        {"aten::add", 1, NULL, 0.5, true, 0.75, 0, 0},
        {"aten::relu", 4, NULL, 0.1, false, 0.0, 8, 0},
    };
    (void)in;
    rows[0].input_shapes = shapes;
    if (shapes != NULL) {
        out = ts_profile_rows(rows, 3, 2, true, &err);
    }
    json_decref(shapes);
    return keep_json(out);
}

/* The peak of a trace of 100 allocations and their frees. */
static char *
e_memory_peak(const inputs *in)
{
    ts_mem_event ev[200];
    int64_t peak = 0;
    (void)in;
    for (int i = 0; i < 100; i++) {
        ev[i] = (ts_mem_event){i, 8 + i, 0x1000 + 64 * (uint64_t)i, 0};
        ev[100 + i] =
            (ts_mem_event){100 + i, -(8 + i), 0x1000 + 64 * (uint64_t)i, 0};
    }
    if (ts_memory_peak(ev, 200, &peak) != TS_OK) {
        return NULL;
    }
    return keep_json(json_integer(peak));
}

/* A depth-limited view of a report and one row's cells. */
static char *
e_table_view(const inputs *in)
{
    ts_error err;
    ts_table_text cells[8];
    int count = 0;
    const int64_t widths[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    json_t *view = ts_table_limit_depth(in->cnn, 1, &err), *out = NULL;
    if (view != NULL
        && ts_table_line(json_array_get(json_object_get(view, "layers"), 1),
                         widths,
                         TS_WRAP_MID,
                         true,
                         true,
                         cells,
                         &count,
                         &err)
               == TS_OK) {
        out = json_pack("{s:O, s:s, s:s}",
                        "view",
                        view,
                        "name",
                        cells[0].data,
                        "params",
                        cells[3].data);
        ts_table_texts_free(cells, count);
    }
    json_decref(view);
    return keep_json(out);
}

/* A FlopReport with phases, collectives and every kind of diagnostic. */
static char *
e_flops_phased(const inputs *in)
{
    ts_opstats *ops = ts_opstats_new();
    json_t *out = NULL, *phases;
    int mm, fft, cond, ar;
    (void)in;
    if (ops == NULL) {
        return NULL;
    }
    mm = ts_opstats_intern(ops, "aten.mm");
    fft = ts_opstats_intern(ops, "aten.fft_r2c");
    cond = ts_opstats_intern(ops, "higher_order.cond");
    ar = ts_opstats_intern(ops, "c10d.allreduce_");
    if (mm < 0 || fft < 0 || cond < 0 || ar < 0
        || ts_opstats_record_in(ops,
                                TS_PHASE_FORWARD,
                                mm,
                                TS_OPCALL_COUNTED,
                                8,
                                true,
                                "a reason",
                                NULL)
               != TS_OK
        || ts_opstats_record_in(ops,
                                TS_PHASE_BACKWARD,
                                mm,
                                TS_OPCALL_COUNTED,
                                16,
                                false,
                                NULL,
                                NULL)
               != TS_OK
        || ts_opstats_add_matrix(ops, mm, 24) != TS_OK
        || ts_opstats_record(
               ops, fft, TS_OPCALL_UNSUPPORTED, 0, false, "complex", NULL)
               != TS_OK
        || ts_opstats_record(
               ops, cond, TS_OPCALL_UNCOUNTED, 0, false, NULL, NULL)
               != TS_OK
        || ts_opstats_record_bytes(ops, ar, 64) != TS_OK) {
        ts_opstats_free(ops);
        return NULL;
    }
    phases = json_pack(
        "{s:{s:{s:i}, s:[]}}", "forward", "by_module", "", 8, "layers");
    if (phases != NULL) {
        out = ts_opstats_report_phased(ops, "2.13.0", "m", NULL, phases);
    }
    ts_opstats_free(ops);
    return keep_json(out);
}

/* strict mode's message on a partial report, and an escaped text. */
static char *
e_incomplete_and_escape(const inputs *in)
{
    char *message = NULL, *escaped, *out = NULL;
    size_t n;
    if (!ts_report_incomplete(in->partial, &message) || message == NULL) {
        free(message);
        return NULL;
    }
    escaped = ts_html_escape("<a href='x'>&\"</a>");
    if (escaped != NULL) {
        n = strlen(message) + strlen(escaped) + 2;
        out = malloc(n);
        if (out != NULL) {
            snprintf(out, n, "%s|%s", message, escaped);
        }
    }
    free(message);
    free(escaped);
    return keep(out);
}

/* Token dependencies of MultiheadAttention: self-attention under a causal
 * mask (prefix relations) and cross-attention with separate key and value
 * (test_token_deps.c checks the relations), as the report's JSON. */
static char *
e_token_deps(const inputs *in)
{
    ts_module_desc d;
    ts_module_call c;
    ts_token_call tk;
    ts_token_result r;
    ts_shape q = {3, {3, 2, 4}, TS_DTYPE_FLOAT, true, 4};
    ts_shape kv = {3, {5, 2, 4}, TS_DTYPE_FLOAT, true, 4};
    json_t *a = NULL, *b = NULL, *out = NULL;
    (void)in;
    memset(&d, 0, sizeof d);
    memset(&c, 0, sizeof c);
    memset(&tk, 0, sizeof tk);
    d.kind = TS_MOD_MHA;
    d.embed_dim = d.kdim = d.vdim = 4;
    d.num_heads = 2;
    c.has_input = c.has_output = true;
    c.input = c.output = c.key = c.value = q;
    c.tokens = &tk;
    tk.key_is_query = tk.value_is_query = tk.value_is_key = true;
    tk.attn_mask.present = tk.attn_mask.read = true;
    tk.attn_mask.shape = (ts_shape){2, {3, 3}, TS_DTYPE_BOOL, true, 1};
    tk.attn_mask.excludes = tk.attn_mask.causal = true;
    if (ts_token_dependencies(&d, &c, &r) != TS_OK) {
        return NULL;
    }
    a = ts_token_result_json(&r);
    memset(&tk, 0, sizeof tk);
    c.key = c.value = kv;
    if (a != NULL && ts_token_dependencies(&d, &c, &r) == TS_OK) {
        b = ts_token_result_json(&r);
    }
    if (a != NULL && b != NULL) {
        out = json_pack("[O, O]", a, b);
    }
    json_decref(a);
    json_decref(b);
    return keep_json(out);
}

/* ---- checkpoints ---- */

static const char st_header[] =
    "{\"model.layers.10.w\": {\"dtype\": \"BF16\", \"shape\": [2, 3], "
    "\"data_offsets\": [0, 12]}, \"model.layers.2.w\": {\"dtype\": \"F32\", "
    "\"shape\": [2], \"data_offsets\": [12, 20]}, \"lm_head.weight\": "
    "{\"dtype\": \"I8\", \"shape\": [4], \"data_offsets\": [24, 28]}, "
    "\"__metadata__\": {\"format\": \"pt\"}}";

static unsigned char *
make_safetensors(size_t *size)
{
    size_t n = sizeof st_header - 1;
    unsigned char *buf = calloc(8 + n + 28, 1);
    if (buf != NULL) {
        for (int i = 0; i < 8; i++) {
            buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
        }
        memcpy(buf + 8, st_header, n);
    }
    *size = 8 + n + 28;
    return buf;
}

static char *
e_inspect_safetensors(const inputs *in)
{
    ts_error err;
    return keep_json(
        ts_checkpoint_inspect_memory(in->st, in->st_size, "m", &err));
}

/* The report of the file above, made without injection. */
static json_t *
checkpoint_report(const inputs *in)
{
    ts_error err;
    json_t *r;
    long saved = fail_at;
    fail_at = 0;
    r = ts_checkpoint_inspect_memory(in->st, in->st_size, "m", &err);
    fail_at = saved;
    return r;
}

/* A seed file of tests/fuzz/checkpoints/ read into memory. */
static unsigned char *
load_seed(const char *name, size_t *size)
{
    char path[512];
    FILE *f;
    unsigned char *buf = NULL;
    long n;
    snprintf(path,
             sizeof path,
             "%s/tests/fuzz/checkpoints/%s",
             TS_SOURCE_ROOT,
             name);
    f = fopen(path, "rb");
    if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0
        && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) != NULL
        && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (f != NULL) {
        *size = (size_t)n;
        fclose(f);
    }
    CHECK(buf != NULL);
    return buf;
}

static char *
inspect_seed_memory(const inputs *in, int which)
{
    ts_error err;
    return keep_json(ts_checkpoint_inspect_memory(
        in->seeds[which], in->seed_sizes[which], "seed", &err));
}

static char *
e_inspect_torch_zip(const inputs *in)
{
    return inspect_seed_memory(in, 0);
}

static char *
e_inspect_torch_legacy(const inputs *in)
{
    return inspect_seed_memory(in, 1);
}

static char *
e_inspect_gguf(const inputs *in)
{
    return inspect_seed_memory(in, 2);
}

static char *
e_checkpoint_table(const inputs *in)
{
    ts_error err;
    json_t *r = checkpoint_report(in);
    char *text = r != NULL ? ts_checkpoint_table(r, -1, &err) : NULL;
    json_decref(r);
    return keep(text);
}

static char *
e_checkpoint_match(const inputs *in)
{
    ts_error err;
    json_t *r = checkpoint_report(in), *m = NULL;
    char *text = NULL;
    if (r != NULL) {
        m = ts_checkpoint_match(r, in->cnn, &err);
        text = m != NULL ? ts_checkpoint_match_text(m, &err) : NULL;
    }
    json_decref(m);
    json_decref(r);
    return keep(text);
}

static char *
checkpoint_render(const inputs *in, const char *format)
{
    ts_error err;
    json_t *r = checkpoint_report(in);
    char *text = r != NULL ? ts_checkpoint_render(r, "C", format, &err) : NULL;
    json_decref(r);
    return keep(text);
}

static char *
e_checkpoint_render_html(const inputs *in)
{
    return checkpoint_render(in, "html");
}

static char *
e_checkpoint_render_svg(const inputs *in)
{
    return checkpoint_render(in, "svg");
}

/* ---- the loop ----------------------------------------------------------- */

static long entry_points, sites_failed, runs_survived;
/* Under valgrind (TORCHSCAN_TEST_VALGRIND) every 61st allocation fails:
 * the whole loop there would take hours. */
static long stride = 1;

static void
inject(const char *name, entry_fn fn, const inputs *in)
{
    char *expected;
    long n;
    fail_at = 0;
    expected = fn(in);
    CHECK(expected != NULL);
    if (expected == NULL) {
        fprintf(stderr, "%s: fails without injection\n", name);
        return;
    }
    entry_points++;
    for (n = 1;; n += stride) {
        char *got;
        alloc_count = 0;
        fail_at = n;
        got = fn(in);
        fail_at = 0;
        if (alloc_count < n) { /* nothing failed: the run is complete */
            CHECK(got != NULL && strcmp(got, expected) == 0);
            free(got);
            break;
        }
        sites_failed++;
        if (got != NULL) { /* survived the failure: the same result */
            if (strcmp(got, expected) == 0) {
                runs_survived++;
            }
            else {
                CHECK(!"a run that survived a failure gave another result");
                fprintf(stderr, "%s: allocation %ld\n", name, n);
            }
            free(got);
        }
    }
    printf("%-28s %5ld allocations, %s\n",
           name,
           alloc_count,
           stride == 1 ? "each failed once" : "every 61st failed");
    free(expected);
}

static json_t *
load(const char *name)
{
    char path[512];
    json_error_t jerr;
    json_t *value;
    snprintf(path, sizeof path, "%s/%s", TS_SOURCE_ROOT, name);
    value = json_load_file(path, 0, &jerr);
    if (value == NULL) {
        fprintf(stderr, "%s: %s\n", path, jerr.text);
    }
    CHECK(value != NULL);
    return value;
}

int
main(void)
{
    inputs in;
    static const struct {
        const char *name;
        entry_fn fn;
    } entries[] = {
        {"json_text", e_json_text},
        {"analysis_report_check", e_check},
        {"format_summary", e_table},
        {"compare_reports", e_compare},
        {"compare_benchmarks", e_benchmark_compare},
        {"render_analysis html", e_render_html},
        {"render_analysis before=", e_render_compare},
        {"render_analysis svg", e_render_svg},
        {"render_analysis structure", e_render_structure},
        {"export csv", e_export_csv},
        {"export markdown", e_export_markdown},
        {"export folded", e_export_folded},
        {"benchmark page", e_benchmark_page},
        {"benchmark comparison page", e_benchmark_comparison_page},
        {"session report", e_session},
        {"session paths", e_session_paths},
        {"session views", e_session_views},
        {"saved activation bytes", e_saved},
        {"memory simulation", e_memsim},
        {"inspect safetensors", e_inspect_safetensors},
        {"inspect torch zip", e_inspect_torch_zip},
        {"inspect torch legacy", e_inspect_torch_legacy},
        {"inspect gguf", e_inspect_gguf},
        {"checkpoint table", e_checkpoint_table},
        {"checkpoint match", e_checkpoint_match},
        {"checkpoint render html", e_checkpoint_render_html},
        {"checkpoint render svg", e_checkpoint_render_svg},
        {"gather analysis", e_gather_analysis},
        {"gather text model", e_gather_text_model},
        {"gather flops", e_gather_flops},
        {"gather benchmark", e_gather_benchmark},
        {"gather shape", e_gather_shape},
        {"gather emit", e_gather_emit},
        {"emit tree", e_emit_tree},
        {"render text model", e_render_text_model},
        {"format_summary text model", e_table_text_model},
        {"compare text models", e_compare_text_model},
        {"diff metrics", e_diff_metrics},
        {"render verdict", e_verdict},
        {"workload summary", e_workload_summary},
        {"timing report", e_timing_report},
        {"workload totals", e_workload_totals},
        {"profile rows", e_profile_rows},
        {"memory peak", e_memory_peak},
        {"table view", e_table_view},
        {"flops phased", e_flops_phased},
        {"incomplete and escape", e_incomplete_and_escape},
        {"token dependencies", e_token_deps},
    };
    if (getenv("TORCHSCAN_TEST_VALGRIND") != NULL) {
        stride = 61;
    }
    json_set_alloc_funcs(json_alloc, free);
    in.cnn = load("tests/golden/cnn.json");
    in.wide = load("tests/golden/cnn_wide.json");
    in.partial = load("tests/golden/partial.json");
    in.subtree = load("tests/golden/subtree.json");
    in.structure = load("tests/golden/structure.json");
    in.text_model = load("tests/golden/text_model.json");
    in.bench = load("tests/fuzz/corpus/benchmark.single.json");
    in.bench_cmp = load("tests/fuzz/corpus/benchmark.comparison.json");
    in.st = make_safetensors(&in.st_size);
    in.seeds[0] = load_seed("torch_zip/small.pt", &in.seed_sizes[0]);
    in.seeds[1] = load_seed("torch_legacy/small.pt", &in.seed_sizes[1]);
    in.seeds[2] = load_seed("gguf/small.gguf", &in.seed_sizes[2]);
    if (in.cnn && in.wide && in.partial && in.subtree && in.structure
        && in.bench && in.bench_cmp && in.text_model && in.seeds[0]
        && in.seeds[1] && in.seeds[2]) {
        for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
            inject(entries[i].name, entries[i].fn, &in);
        }
    }
    printf(
        "entry points: %ld, allocation sites failed: %ld (%ld runs "
        "survived with the same result), 0 crashes\n",
        entry_points,
        sites_failed,
        runs_survived);
    json_decref(in.cnn);
    json_decref(in.wide);
    json_decref(in.partial);
    json_decref(in.subtree);
    json_decref(in.structure);
    json_decref(in.text_model);
    json_decref(in.bench);
    json_decref(in.bench_cmp);
    free(in.st);
    for (int k = 0; k < 3; k++) {
        free(in.seeds[k]);
    }
    return ts_test_report();
}
