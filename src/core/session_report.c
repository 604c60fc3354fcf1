/* The AnalysisReport of a crawl session (session.h), written through an
 * emitter from the session's records: layer rows, the model totals and
 * their aggregation, diagnostics; and the per-module operator FLOPs that
 * the session's FlopReport carries. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"
#include "torchscan/emit.h"

static const char *const estimate_units[N_ESTIMATES] = {
    "FLOPs", "MACs", "DMAs", "elements", "elements", "elements"};

typedef struct path_sum {
    const char *path;
    int64_t flops;
} path_sum;

static int
compare_path_sums(const void *a, const void *b)
{
    return strcmp(((const path_sum *)a)->path, ((const path_sum *)b)->path);
}

/* A layer's operator FLOPs: its own (phase < 0) or one phase's. */
static int64_t
layer_flops(const layer_record *l, int phase)
{
    return phase < 0 ? l->op_flops : l->phase_flops[phase];
}

/* {path: operator FLOPs} (phase < 0) or that phase's. */
static json_t *
flops_by_path(const ts_session *session, int phase)
{
    json_t *by_path = json_object();
    path_sum *sums =
        calloc(session->nmodules ? session->nmodules : 1, sizeof(path_sum));
    bool *called = calloc(session->nmodules ? session->nmodules : 1, 1);
    size_t n = 0;
    if (by_path == NULL || sums == NULL || called == NULL) {
        goto error;
    }
    /* Sum per module (module order), then emit sorted by path. */
    for (size_t m = 0; m < session->nmodules; m++) {
        sums[m].path = session->modules[m].path;
    }
    for (size_t i = 0; i < session->nlayers; i++) {
        const layer_record *l = &session->layers[i];
        called[l->module] = true;
        if (!ts_add(sums[l->module].flops,
                    layer_flops(l, phase),
                    &sums[l->module].flops)) {
            sums[l->module].flops = INT64_MAX;
        }
    }
    for (size_t m = 0; m < session->nmodules; m++) {
        if (called[m]) {
            sums[n++] = sums[m];
        }
    }
    if (n > 1) {
        qsort(sums, n, sizeof *sums, compare_path_sums);
    }
    for (size_t k = 0; k < n; k++) {
        if (json_object_set_new(
                by_path, sums[k].path, json_integer(sums[k].flops))) {
            goto error;
        }
    }
    free(sums);
    free(called);
    return by_path;
error:
    free(sums);
    free(called);
    json_decref(by_path);
    return NULL;
}

json_t *
ts_session_op_flops_by_path(const ts_session *session)
{
    return flops_by_path(session, -1);
}

/* The method of saved_activation_bytes: PyTorch's saved-tensor hooks. */
#define SAVED_METHOD "torch.autograd.graph.saved_tensors_hooks"

json_t *
ts_session_saved_layers(const ts_session *session, const char *scope)
{
    const ts_saved *acc = session->saved;
    ts_saved_totals totals;
    json_t *rows = acc != NULL ? json_array() : NULL, *total;
    for (size_t i = 0; rows != NULL && i < session->nlayers; i++) {
        const layer_record *l = &session->layers[i];
        json_t *metric = ts_metric_new(
            ts_saved_layer_unmeasured(acc, (int)i) ? TS_PARTIAL : TS_COMPLETE,
            ts_int(ts_saved_layer_bytes(acc, (int)i)),
            "bytes",
            "module_call_self",
            SAVED_METHOD);
        if (metric == NULL
            || json_array_append_new(
                rows,
                json_pack("{s:s, s:i, s:o}",
                          "path",
                          session->modules[l->module].path,
                          "call_index",
                          (int)l->call_index,
                          "saved_activation_bytes",
                          metric))) {
            json_decref(rows);
            return NULL;
        }
    }
    if (rows == NULL) {
        return NULL;
    }
    ts_saved_get_totals(acc, &totals);
    total = ts_metric_new(totals.unmeasured ? TS_PARTIAL : TS_COMPLETE,
                          ts_int(totals.bytes),
                          "bytes",
                          scope,
                          SAVED_METHOD);
    if (total == NULL) {
        json_decref(rows);
        return NULL;
    }
    /* "o" steals both, also on failure */
    return json_pack("{s:o, s:o}", "layers", rows, "total", total);
}

/* [{path, call_index, operator_flops}] of one phase, in call order. */
static json_t *
phase_rows(const ts_session *session, int phase)
{
    json_t *rows = json_array();
    for (size_t i = 0; rows != NULL && i < session->nlayers; i++) {
        const layer_record *l = &session->layers[i];
        json_t *metric = ts_metric_new(
            l->phase_incomplete[phase] ? TS_PARTIAL : TS_COMPLETE,
            ts_int(l->phase_flops[phase]),
            "FLOPs",
            "module_call_self",
            TS_OPERATOR_METHOD);
        if (metric == NULL
            || json_array_append_new(
                rows,
                json_pack("{s:s, s:i, s:o}",
                          "path",
                          session->modules[l->module].path,
                          "call_index",
                          (int)l->call_index,
                          "operator_flops",
                          metric))) {
            json_decref(rows);
            return NULL;
        }
    }
    return rows;
}

json_t *
ts_session_phase_layers(const ts_session *session)
{
    json_t *out = json_object();
    for (int p = 0; out != NULL && p < TS_PHASE_COUNT; p++) {
        json_t *by_module = flops_by_path(session, p);
        json_t *rows = by_module ? phase_rows(session, p) : NULL;
        json_t *entry;
        if (rows == NULL) {
            json_decref(by_module);
            json_decref(out);
            return NULL;
        }
        /* "o" steals both, also on failure */
        entry =
            json_pack("{s:o, s:o}", "by_module", by_module, "layers", rows);
        if (json_object_set_new(out, ts_phase_name((ts_phase)p), entry)) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}


#define TRY_EMIT(expr)     \
    do {                   \
        if ((expr) != 0) { \
            return -1;     \
        }                  \
    } while (0)

static int
emit_number(const ts_emitter *e, ts_number n)
{
    return n.is_real ? e->real(e->ctx, n.r) : e->integer(e->ctx, n.i);
}

/* One MetricResult, obeying the status invariants. */
static int
emit_metric(const ts_emitter *e,
            ts_status status,
            ts_number value,
            const char *unit,
            const char *scope,
            const char *method)
{
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "status"));
    TRY_EMIT(e->string(e->ctx, ts_status_name(status)));
    TRY_EMIT(e->key(e->ctx, "value"));
    TRY_EMIT(status == TS_COMPLETE ? emit_number(e, value) : e->null(e->ctx));
    TRY_EMIT(e->key(e->ctx, "known_value"));
    TRY_EMIT(status == TS_UNAVAILABLE ? e->null(e->ctx)
                                      : emit_number(e, value));
    TRY_EMIT(e->key(e->ctx, "unit"));
    TRY_EMIT(e->string(e->ctx, unit));
    TRY_EMIT(e->key(e->ctx, "scope"));
    TRY_EMIT(e->string(e->ctx, scope));
    TRY_EMIT(e->key(e->ctx, "method"));
    TRY_EMIT(e->string(e->ctx, method));
    return e->end_object(e->ctx);
}

static int
emit_int_member(const ts_emitter *e, const char *key, int64_t value)
{
    TRY_EMIT(e->key(e->ctx, key));
    return e->integer(e->ctx, value);
}

/* A row's depth: 0 for the root (empty path), else one more than the dots
 * in its path. */
static int
path_depth(const char *path)
{
    int depth = 0;
    if (path[0] != '\0') {
        depth = 1;
        for (const char *p = path; *p; p++) {
            depth += *p == '.';
        }
    }
    return depth;
}

/* "output": the output metadata, or {kind: failed} for a forward that
 * raised, {kind: pending} for a call that never ended. */
static int
emit_layer_output(const ts_emitter *e, const layer_record *layer)
{
    TRY_EMIT(e->key(e->ctx, "output"));
    if (layer->output != NULL) {
        return e->tree(e->ctx, layer->output);
    }
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "kind"));
    TRY_EMIT(e->string(e->ctx, layer->failed ? "failed" : "pending"));
    return e->end_object(e->ctx);
}

/* "parameters" and "buffers": the tensors this call was the first to use;
 * with `local`, the part of them this rank holds. */
static int
emit_attribution(const ts_emitter *e, const ts_attribution *a, bool local)
{
    TRY_EMIT(e->key(e->ctx, "parameters"));
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(emit_int_member(e, "trainable", a->trainable));
    TRY_EMIT(emit_int_member(e, "frozen", a->frozen));
    TRY_EMIT(emit_int_member(e, "bytes", a->param_bytes));
    TRY_EMIT(e->key(e->ctx, "shared"));
    TRY_EMIT(e->boolean(e->ctx, a->param_shared));
    if (local) {
        TRY_EMIT(emit_int_member(e, "local_elements", a->local_params));
        TRY_EMIT(emit_int_member(e, "local_bytes", a->local_param_bytes));
    }
    TRY_EMIT(e->end_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "buffers"));
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(emit_int_member(e, "elements", a->buffer_elements));
    TRY_EMIT(emit_int_member(e, "bytes", a->buffer_bytes));
    TRY_EMIT(e->key(e->ctx, "shared"));
    TRY_EMIT(e->boolean(e->ctx, a->buffer_shared));
    if (local) {
        TRY_EMIT(
            emit_int_member(e, "local_elements", a->local_buffer_elements));
        TRY_EMIT(emit_int_member(e, "local_bytes", a->local_buffer_bytes));
    }
    return e->end_object(e->ctx);
}

/* "metrics": the call itself, the estimates it has a slot for and, in full
 * mode, the operator FLOPs it ran itself. */
static int
emit_layer_metrics(const ts_emitter *e,
                   const ts_session *session,
                   const layer_record *layer)
{
    TRY_EMIT(e->key(e->ctx, "metrics"));
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "calls"));
    TRY_EMIT(emit_metric(
        e, TS_COMPLETE, ts_int(1), "calls", "module_call", "pytorch_hook"));
    for (int i = 0; i < N_ESTIMATES; i++) {
        const metric_slot *slot = &layer->estimates[i];
        if (!(layer->present & (1u << i))) {
            continue;
        }
        TRY_EMIT(e->key(e->ctx, estimate_names[i]));
        TRY_EMIT(emit_metric(e,
                             slot->status,
                             slot->value,
                             estimate_units[i],
                             slot->subtree ? "subtree" : "module_call",
                             slot->method));
    }
    if (session->full) {
        /* The operators this call ran itself; the rows sum to the total. */
        TRY_EMIT(e->key(e->ctx, "operator_flops"));
        TRY_EMIT(emit_metric(e,
                             layer->op_incomplete ? TS_PARTIAL : TS_COMPLETE,
                             ts_int(layer->op_flops),
                             "FLOPs",
                             "module_call_self",
                             TS_OPERATOR_METHOD));
    }
    if (session->saved != NULL) {
        /* The storages this call saved for backward first (saved_bytes.h) */
        int index = (int)(layer - session->layers);
        TRY_EMIT(e->key(e->ctx, "saved_activation_bytes"));
        TRY_EMIT(emit_metric(
            e,
            ts_saved_layer_unmeasured(session->saved, index) ? TS_PARTIAL
                                                             : TS_COMPLETE,
            ts_int(ts_saved_layer_bytes(session->saved, index)),
            "bytes",
            "module_call_self",
            SAVED_METHOD));
    }
    return e->end_object(e->ctx);
}

/* "metric_ownership": which estimates a handler supplied, and for what
 * scope. */
static int
emit_metric_ownership(const ts_emitter *e, const layer_record *layer)
{
    TRY_EMIT(e->key(e->ctx, "metric_ownership"));
    TRY_EMIT(e->begin_object(e->ctx));
    for (int i = 0; i < N_ESTIMATES; i++) {
        if (layer->handled & (1u << i)) {
            TRY_EMIT(e->key(e->ctx, estimate_names[i]));
            TRY_EMIT(e->string(
                e->ctx,
                layer->estimates[i].subtree ? "subtree" : "module_call"));
        }
    }
    return e->end_object(e->ctx);
}

/* "metric_owners": the estimates an enclosing call's handler includes, each
 * with that call's {path, call_index}. */
static int
emit_metric_owners(const ts_emitter *e,
                   const ts_session *session,
                   const layer_record *layer)
{
    TRY_EMIT(e->key(e->ctx, "metric_owners"));
    TRY_EMIT(e->begin_object(e->ctx));
    for (int i = 0; i < N_ESTIMATES; i++) {
        if (layer->covered & (1u << i)) {
            const layer_record *o = &session->layers[layer->owner[i]];
            TRY_EMIT(e->key(e->ctx, estimate_names[i]));
            TRY_EMIT(e->begin_object(e->ctx));
            TRY_EMIT(e->key(e->ctx, "path"));
            TRY_EMIT(e->string(e->ctx, session->modules[o->module].path));
            TRY_EMIT(emit_int_member(e, "call_index", o->call_index));
            TRY_EMIT(e->end_object(e->ctx));
        }
    }
    return e->end_object(e->ctx);
}

/* One row of "layers". */
static int
emit_layer(const ts_emitter *e,
           const ts_session *session,
           const layer_record *layer,
           bool local)
{
    const module_record *m = &session->modules[layer->module];
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "path"));
    TRY_EMIT(e->string(e->ctx, m->path));
    TRY_EMIT(emit_int_member(e, "call_index", layer->call_index));
    TRY_EMIT(e->key(e->ctx, "name"));
    TRY_EMIT(e->string(e->ctx, m->name));
    TRY_EMIT(emit_int_member(e, "depth", path_depth(m->path)));
    TRY_EMIT(e->key(e->ctx, "type"));
    TRY_EMIT(e->string(e->ctx, m->type_name));
    TRY_EMIT(e->key(e->ctx, "input"));
    TRY_EMIT(e->tree(e->ctx, layer->input));
    TRY_EMIT(emit_layer_output(e, layer));
    TRY_EMIT(emit_attribution(e, &layer->attribution, local));
    TRY_EMIT(emit_layer_metrics(e, session, layer));
    if (layer->tokens != NULL) {
        TRY_EMIT(e->key(e->ctx, "token_dependencies"));
        TRY_EMIT(e->tree(e->ctx, layer->tokens));
    }
    if (layer->handled) {
        TRY_EMIT(emit_metric_ownership(e, layer));
    }
    if (layer->covered) {
        TRY_EMIT(emit_metric_owners(e, session, layer));
    }
    return e->end_object(e->ctx);
}

/* One estimate summed over the rows that have it (contract 1.2): complete
 * when every row is, partial when any lower bound is known. Integer rows
 * add exactly; a real row (a caller handler's 0.5) makes the sum real. An
 * int64 overflow, or a real sum that is not finite, makes it unavailable,
 * with its own diagnostic. */
#define METHOD_TEXT 512

typedef struct aggregate {
    ts_status status;
    ts_number value;
    bool overflow;
    char method[METHOD_TEXT];
} aggregate;

static void
aggregate_estimate(const ts_session *session, int which, aggregate *out)
{
    int64_t known = 0;
    double real = 0.0;
    size_t rows = 0, known_rows = 0;
    bool all_complete = true, any_real = false;
    const char *methods[8];
    size_t nmethods = 0;
    const size_t size = METHOD_TEXT;
    char *method = out->method;
    out->overflow = false;
    for (size_t i = 0; i < session->nlayers; i++) {
        const layer_record *l = &session->layers[i];
        const metric_slot *slot;
        size_t j;
        if (!(l->present & (1u << which))) {
            continue;
        }
        slot = &l->estimates[which];
        rows++;
        all_complete &= slot->status == TS_COMPLETE;
        if (slot->status != TS_UNAVAILABLE) {
            known_rows++;
            if (slot->value.is_real) {
                any_real = true;
                real += slot->value.r;
            }
            else {
                out->overflow |= !ts_add(known, slot->value.i, &known);
            }
        }
        for (j = 0; j < nmethods && strcmp(methods[j], slot->method) != 0;
             j++) {
        }
        if (j == nmethods && nmethods < 8) {
            methods[nmethods++] = slot->method;
        }
    }
    if (nmethods <= 1) {
        snprintf(method, size, "%s", nmethods ? methods[0] : MODULE_METHOD);
    }
    else {
        /* Several methods contributed: name them all, sorted. */
        size_t len;
        for (size_t x = 1; x < nmethods; x++) {
            for (size_t y = x; y > 0 && strcmp(methods[y - 1], methods[y]) > 0;
                 y--) {
                const char *t = methods[y];
                methods[y] = methods[y - 1];
                methods[y - 1] = t;
            }
        }
        len = (size_t)snprintf(method, size, "sum_module_estimates[");
        for (size_t j = 0; j < nmethods && len < size; j++) {
            len += (size_t)snprintf(
                method + len, size - len, "%s%s", j ? ", " : "", methods[j]);
        }
        if (len < size) {
            snprintf(method + len, size - len, "]");
        }
    }
    if (rows == 0 || out->overflow) {
        out->status = TS_UNAVAILABLE;
    }
    else if (all_complete) {
        out->status = TS_COMPLETE;
    }
    else {
        out->status = known_rows ? TS_PARTIAL : TS_UNAVAILABLE;
    }
    out->value = any_real ? ts_real((double)known + real) : ts_int(known);
    if (any_real && !isfinite(out->value.r)) {
        out->overflow = true; /* no JSON number */
        out->status = TS_UNAVAILABLE;
    }
}

/* The diagnostic of a total whose sum left the int64 or float range. */
static int
emit_overflow_diagnostic(const ts_emitter *e, int which)
{
    static const char *const messages[N_SUMMED] = {
        "OverflowError: the module_flops total exceeds the int64 or float "
        "range",
        "OverflowError: the macs total exceeds the int64 or float range",
        "OverflowError: the dmas total exceeds the int64 or float range",
    };
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "code"));
    TRY_EMIT(e->string(e->ctx, "module_metric_error"));
    TRY_EMIT(e->key(e->ctx, "severity"));
    TRY_EMIT(e->string(e->ctx, "warning"));
    TRY_EMIT(e->key(e->ctx, "metric"));
    TRY_EMIT(e->string(e->ctx, estimate_names[which]));
    TRY_EMIT(e->key(e->ctx, "message"));
    TRY_EMIT(e->string(e->ctx, messages[which]));
    return e->end_object(e->ctx);
}

static int
emit_model_metric(const ts_emitter *e,
                  const char *name,
                  int64_t value,
                  const char *unit)
{
    TRY_EMIT(e->key(e->ctx, name));
    return emit_metric(
        e, TS_COMPLETE, ts_int(value), unit, "model", "pytorch");
}

/* The part of the model this rank holds (inside a process group). */
#define LOCAL_SCOPE "rank"
#define LOCAL_METHOD "pytorch_local_shard"

static int
emit_local_metric(const ts_emitter *e,
                  const char *name,
                  int64_t value,
                  const char *unit)
{
    TRY_EMIT(e->key(e->ctx, name));
    return emit_metric(
        e, TS_COMPLETE, ts_int(value), unit, LOCAL_SCOPE, LOCAL_METHOD);
}

int
ts_session_emit_report(const ts_session *session,
                       const ts_emitter *e,
                       const json_t *context,
                       const json_t *inputs,
                       const ts_model_totals *totals,
                       const json_t *flop_report)
{
    const json_t *flop_diags = json_object_get(flop_report, "diagnostics");
    aggregate sums[N_SUMMED] = {0}; /* outlive the emission (text) */
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(emit_int_member(e, "schema_version", 1));
    TRY_EMIT(e->key(e->ctx, "context"));
    TRY_EMIT(e->begin_object(e->ctx));
    {
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)context, key, value)
        {
            TRY_EMIT(e->key(e->ctx, key));
            TRY_EMIT(e->tree(e->ctx, value));
        }
    }
    if (!session->full) {
        TRY_EMIT(e->key(e->ctx, "analysis_mode"));
        TRY_EMIT(e->string(e->ctx, "structure"));
    }
    TRY_EMIT(e->end_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "inputs"));
    TRY_EMIT(e->tree(e->ctx, inputs));
    TRY_EMIT(e->key(e->ctx, "layers"));
    TRY_EMIT(e->begin_array(e->ctx));
    for (size_t i = 0; i < session->nlayers; i++) {
        TRY_EMIT(emit_layer(e, session, &session->layers[i], totals->local));
    }
    TRY_EMIT(e->end_array(e->ctx));
    TRY_EMIT(e->key(e->ctx, "operator_flops"));
    TRY_EMIT(e->tree(e->ctx, flop_report));
    TRY_EMIT(e->key(e->ctx, "totals"));
    TRY_EMIT(e->begin_object(e->ctx));
    TRY_EMIT(emit_model_metric(
        e, "parameters", totals->trainable + totals->frozen, "elements"));
    TRY_EMIT(emit_model_metric(
        e, "trainable_parameters", totals->trainable, "elements"));
    TRY_EMIT(
        emit_model_metric(e, "frozen_parameters", totals->frozen, "elements"));
    TRY_EMIT(
        emit_model_metric(e, "parameter_bytes", totals->param_bytes, "bytes"));
    TRY_EMIT(emit_model_metric(
        e, "buffer_elements", totals->buffer_elements, "elements"));
    TRY_EMIT(
        emit_model_metric(e, "buffer_bytes", totals->buffer_bytes, "bytes"));
    if (totals->local) {
        TRY_EMIT(emit_local_metric(
            e, "local_parameters", totals->local_params, "elements"));
        TRY_EMIT(emit_local_metric(
            e, "local_parameter_bytes", totals->local_param_bytes, "bytes"));
        TRY_EMIT(emit_local_metric(e,
                                   "local_buffer_elements",
                                   totals->local_buffer_elements,
                                   "elements"));
        TRY_EMIT(emit_local_metric(
            e, "local_buffer_bytes", totals->local_buffer_bytes, "bytes"));
    }
    for (int i = 0; i < N_SUMMED; i++) {
        TRY_EMIT(e->key(e->ctx, estimate_names[i]));
        if (session->full) {
            aggregate_estimate(session, i, &sums[i]);
            TRY_EMIT(emit_metric(e,
                                 sums[i].status,
                                 sums[i].value,
                                 estimate_units[i],
                                 "forward",
                                 sums[i].method));
        }
        else {
            TRY_EMIT(emit_metric(e,
                                 TS_UNAVAILABLE,
                                 ts_int(0),
                                 estimate_units[i],
                                 "forward",
                                 "not_requested"));
        }
        if (i == 0) {
            const json_t *moved =
                json_object_get(flop_report, "collective_bytes");
            TRY_EMIT(e->key(e->ctx, "operator_flops"));
            TRY_EMIT(e->tree(e->ctx, json_object_get(flop_report, "total")));
            if (moved != NULL) {
                /* the forward ran collectives (torch.distributed) */
                TRY_EMIT(e->key(e->ctx, "collective_bytes"));
                TRY_EMIT(e->tree(e->ctx, moved));
            }
        }
    }
    if (session->saved != NULL) {
        ts_saved_totals saved;
        ts_saved_get_totals(session->saved, &saved);
        TRY_EMIT(e->key(e->ctx, "saved_activation_bytes"));
        TRY_EMIT(emit_metric(e,
                             saved.unmeasured ? TS_PARTIAL : TS_COMPLETE,
                             ts_int(saved.bytes),
                             "bytes",
                             "forward",
                             SAVED_METHOD));
    }
    TRY_EMIT(e->end_object(e->ctx));
    TRY_EMIT(e->key(e->ctx, "diagnostics"));
    TRY_EMIT(e->begin_array(e->ctx));
    for (size_t i = 0; i < json_array_size(session->diagnostics); i++) {
        TRY_EMIT(e->tree(e->ctx, json_array_get(session->diagnostics, i)));
    }
    for (int i = 0; session->full && i < N_SUMMED; i++) {
        if (sums[i].overflow) {
            TRY_EMIT(emit_overflow_diagnostic(e, i));
        }
    }
    for (size_t i = 0; i < json_array_size(flop_diags); i++) {
        TRY_EMIT(e->tree(e->ctx, json_array_get(flop_diags, i)));
    }
    TRY_EMIT(e->end_array(e->ctx));
    return e->end_object(e->ctx);
}

json_t *
ts_session_report(ts_session *session,
                  json_t *context,
                  json_t *inputs,
                  const ts_model_totals *totals,
                  json_t *flop_report,
                  const char *torch_version,
                  ts_error *err)
{
    ts_json_builder *b = ts_json_builder_new();
    json_t *report = NULL;
    ts_emitter e;
    if (flop_report == NULL) {
        flop_report = ts_flop_report_not_requested(torch_version);
    }
    if (b != NULL && context != NULL && inputs != NULL
        && flop_report != NULL) {
        ts_json_builder_emitter(b, &e);
        if (ts_session_emit_report(
                session, &e, context, inputs, totals, flop_report)
            == 0) {
            report = ts_json_builder_take(b);
        }
    }
    if (report == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory building the report");
    }
    ts_json_builder_free(b);
    json_decref(context);
    json_decref(inputs);
    json_decref(flop_report);
    return report;
}
