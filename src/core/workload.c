/* Workload report totals and the terminal summary (contract 1.12, 5.2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/workload.h"

#include "record_util.h"
#include "text_buf.h"

#define FAIL(err, code, ...) (ts_error_set((err), (code), __VA_ARGS__), (code))

typedef struct total_spec {
    const char *name;
    unsigned flag;
    const char *unit; /* NULL: "<work_unit>/s" */
    const char *scope;
    const char *label;
} total_spec;

static const total_spec totals_table[] = {
    {"first_call_latency",
     TS_WORKLOAD_LATENCY,
     "seconds",
     "first_call",
     "First call"},
    {"latency",
     TS_WORKLOAD_LATENCY,
     "seconds",
     "warmed_block_average",
     "Latency (block median)"},
    {"latency_iqr",
     TS_WORKLOAD_LATENCY,
     "seconds",
     "warmed_block_average",
     "Latency IQR"},
    {"throughput",
     TS_WORKLOAD_THROUGHPUT,
     NULL,
     "warmed_blocks",
     "Throughput"},
    {"operator_flops",
     TS_WORKLOAD_FLOPS,
     "FLOPs",
     "workload",
     "Operator FLOPs"},
    {"peak_memory",
     TS_WORKLOAD_MEMORY,
     "bytes",
     "workload",
     "PyTorch peak memory"},
    {"process_peak_rss",
     TS_WORKLOAD_RSS,
     "bytes",
     "child_process_lifetime",
     "Process peak RSS"},
    /* present only when requested (ts_workload_achieved adds them) */
    {"achieved_flops",
     TS_WORKLOAD_ACHIEVED,
     "FLOPs/s",
     "warmed_block_average",
     "Achieved FLOP/s (operator FLOPs / latency)"},
    {"flops_utilization",
     TS_WORKLOAD_ACHIEVED,
     "fraction",
     "warmed_block_average",
     "FLOP/s utilization (of the declared peak)"},
};
#define NTOTALS (sizeof totals_table / sizeof totals_table[0])

json_t *
ts_workload_totals(const json_t *measured,
                   unsigned selected,
                   const char *work_unit,
                   const char *memory_scope,
                   const char *memory_method,
                   ts_error *err)
{
    json_t *result = NULL;
    json_t *totals = json_object();
    char *rate_unit = NULL;
    size_t len = work_unit != NULL ? strlen(work_unit) : 0;
    if (work_unit == NULL) {
        ts_error_set(err, TS_EINVAL, "work_unit is required");
        goto cleanup;
    }
    rate_unit = malloc(len + 3);
    if (totals == NULL || rate_unit == NULL) {
        goto nomem;
    }
    memcpy(rate_unit, work_unit, len);
    memcpy(rate_unit + len, "/s", 3);
    for (size_t i = 0; i < NTOTALS; i++) {
        const total_spec *spec = &totals_table[i];
        const json_t *have =
            measured != NULL ? json_object_get(measured, spec->name) : NULL;
        const char *unit = spec->unit != NULL ? spec->unit : rate_unit;
        const char *scope = spec->scope;
        const char *method = "unavailable";
        json_t *metric;
        if (spec->flag == TS_WORKLOAD_ACHIEVED) {
            continue; /* ts_workload_achieved */
        }
        if (!(selected & spec->flag)) {
            method = "not_requested";
        }
        else if (have != NULL) {
            if (!json_is_object(have)) {
                ts_error_set(
                    err, TS_EFORMAT, "totals.%s must be a metric", spec->name);
                goto cleanup;
            }
            if (json_object_set_new(totals, spec->name, json_deep_copy(have))
                != 0) {
                goto nomem;
            }
            continue;
        }
        else if (spec->flag == TS_WORKLOAD_MEMORY && memory_scope != NULL
                 && memory_method != NULL) {
            scope = memory_scope;
            method = memory_method;
        }
        metric = ts_metric_new(TS_UNAVAILABLE, ts_int(0), unit, scope, method);
        if (metric == NULL
            || json_object_set_new(totals, spec->name, metric) != 0) {
            goto nomem;
        }
    }
    result = totals;
    totals = NULL;
    goto cleanup;
nomem:
    ts_error_set(err, TS_ENOMEM, "out of memory");
cleanup:
    json_decref(totals);
    free(rate_unit);
    return result;
}

/* ---- achieved FLOP/s ---- */

/* Why `metric` (a total) gives no number for achieved FLOP/s, or NULL when
 * it gives one (*value). */
static const char *
why_not(const json_t *metric, const char *what, double *value)
{
    const char *status = json_string_value(json_object_get(metric, "status"));
    const char *method = json_string_value(json_object_get(metric, "method"));
    const json_t *v = json_object_get(metric, "value");
    bool flops = strcmp(what, "flops") == 0;
    if (!json_is_object(metric)) {
        return flops ? "operator FLOPs were not measured"
                     : "latency was not measured";
    }
    if (method != NULL && strcmp(method, "not_requested") == 0) {
        return flops ? "operator FLOPs were not measured (select \"flops\")"
                     : "latency was not measured (select \"latency\")";
    }
    if (status != NULL && strcmp(status, "partial") == 0) {
        return flops ? "operator FLOPs are partial, a lower bound (see the "
                       "flops diagnostics)"
                     : "latency is partial";
    }
    if (status == NULL || strcmp(status, "complete") != 0
        || !(json_is_integer(v) || json_is_real(v))) {
        return flops ? "operator FLOPs are unavailable (see diagnostics)"
                     : "latency is unavailable (see diagnostics)";
    }
    *value = json_is_integer(v) ? (double)json_integer_value(v)
                                : json_real_value(v);
    if (!flops && !(*value > 0.0)) {
        return "latency is not a positive number of seconds";
    }
    return NULL;
}

/* totals[name] = a complete value, or unavailable with its diagnostic. */
static int
set_achieved(json_t *totals,
             json_t *diagnostics,
             const total_spec *spec,
             const char *method,
             const char *reason,
             double value)
{
    char message[320];
    json_t *metric =
        ts_metric_new(reason == NULL ? TS_COMPLETE : TS_UNAVAILABLE,
                      ts_real(reason == NULL ? value : 0.0),
                      spec->unit,
                      spec->scope,
                      reason == NULL ? method : "unavailable");
    if (metric == NULL || json_object_set_new(totals, spec->name, metric)) {
        return TS_ENOMEM;
    }
    if (reason == NULL) {
        return TS_OK;
    }
    snprintf(
        message, sizeof message, "%s is unavailable: %s.", spec->name, reason);
    return ts_diagnostic_append(diagnostics,
                                "measurement_unavailable",
                                spec->name,
                                NULL,
                                NULL,
                                message)
               ? TS_ENOMEM
               : TS_OK;
}

int
ts_workload_achieved(json_t *totals,
                     double peak_flops,
                     json_t *diagnostics,
                     ts_error *err)
{
    double flops = 0.0, latency = 0.0, achieved = 0.0;
    const char *reason;
    char both[200];
    int rc;
    if (!json_is_object(totals) || !json_is_array(diagnostics)) {
        return FAIL(err,
                    TS_EFORMAT,
                    "achieved FLOP/s needs an object of totals and a list "
                    "of diagnostics");
    }
    if (peak_flops != 0.0 && !(isfinite(peak_flops) && peak_flops > 0.0)) {
        return FAIL(err,
                    TS_EINVAL,
                    "peak_flops must be a positive finite number of FLOP/s, "
                    "got %g",
                    peak_flops);
    }
    {
        const char *no_flops = why_not(
            json_object_get(totals, "operator_flops"), "flops", &flops);
        const char *no_latency =
            why_not(json_object_get(totals, "latency"), "latency", &latency);
        reason = no_flops != NULL ? no_flops : no_latency;
        if (no_flops != NULL && no_latency != NULL) {
            snprintf(both, sizeof both, "%s; %s", no_flops, no_latency);
            reason = both;
        }
    }
    if (reason == NULL) {
        achieved = flops / latency;
        if (!isfinite(achieved)) {
            reason = "operator FLOPs / latency is not a finite number";
        }
    }
    rc = set_achieved(totals,
                      diagnostics,
                      &totals_table[NTOTALS - 2],
                      "operator_flops_over_latency",
                      reason,
                      achieved);
    if (rc == TS_OK && peak_flops > 0.0) {
        rc = set_achieved(totals,
                          diagnostics,
                          &totals_table[NTOTALS - 1],
                          "achieved_over_declared_peak",
                          reason,
                          reason == NULL ? achieved / peak_flops : 0.0);
    }
    if (rc != TS_OK) {
        return FAIL(err, rc, "out of memory");
    }
    return TS_OK;
}

/* ---- text ---- */

bool
ts_format_grouped(double value, char *buf, size_t size)
{
    char plain[400];
    const char *digits = plain;
    const char *dot;
    size_t int_len;
    size_t tail;
    size_t n = 0;
    int len = snprintf(plain, sizeof plain, "%.3f", value);
    if (len < 0 || (size_t)len >= sizeof plain || size == 0) {
        return false;
    }
    if (*digits == '-') {
        buf[n++] = '-';
        digits++;
    }
    dot = strchr(digits, '.');
    int_len = dot != NULL ? (size_t)(dot - digits) : strlen(digits);
    for (size_t i = 0; i < int_len; i++) {
        if (i > 0 && (int_len - i) % 3 == 0) {
            if (n + 1 >= size) {
                return false;
            }
            buf[n++] = ',';
        }
        if (n + 1 >= size) {
            return false;
        }
        buf[n++] = digits[i];
    }
    tail = strlen(digits + int_len);
    if (n + tail + 1 > size) {
        return false;
    }
    memcpy(buf + n, digits + int_len, tail + 1);
    return true;
}

typedef ts_text_buf text_buf;

static void
put_n(text_buf *t, const char *text, size_t len)
{
    ts_text_put_n(t, text, len);
}

static void
put(text_buf *t, const char *text)
{
    ts_text_put(t, text);
}

static bool
is_number(const json_t *v)
{
    return json_is_integer(v) || json_is_real(v);
}

static double
number_of(const json_t *v)
{
    return json_is_integer(v) ? (double)json_integer_value(v)
                              : json_real_value(v);
}

const char *
ts_display_unit(const char *unit, double value, double *scale)
{
    *scale = 1.0;
    if (unit == NULL) {
        return "";
    }
    if (strcmp(unit, "seconds") == 0 && isfinite(value * 1000.0)) {
        *scale = 1000.0;
        return "ms";
    }
    if (strcmp(unit, "bytes") == 0) {
        *scale = 1.0 / (1024.0 * 1024.0);
        return "MiB";
    }
    return unit;
}

/* "0.449 ms", "0.094 MiB", "1,048,576.000 FLOPs" */
static void
put_quantity(text_buf *t, const json_t *number, const char *unit)
{
    char digits[512];
    double scale;
    const char *shown = ts_display_unit(unit, number_of(number), &scale);
    if (!ts_format_grouped(number_of(number) * scale, digits, sizeof digits)) {
        t->failed = true;
        return;
    }
    put(t, digits);
    put(t, " ");
    put(t, shown);
}

static const char *
scope_label(const char *scope)
{
    if (strcmp(scope, "pytorch_tensor_bytes") == 0) {
        return "PyTorch tracked CPU tensors";
    }
    if (strcmp(scope, "pytorch_reserved_bytes") == 0) {
        return "PyTorch device allocator";
    }
    if (strcmp(scope, "child_process_lifetime") == 0) {
        return "fresh child process lifetime";
    }
    return scope;
}

static void
put_metric(text_buf *t, const total_spec *spec, const json_t *metric)
{
    const char *status = json_string_value(json_object_get(metric, "status"));
    const char *unit = json_string_value(json_object_get(metric, "unit"));
    const char *scope = json_string_value(json_object_get(metric, "scope"));
    const char *method = json_string_value(json_object_get(metric, "method"));
    const json_t *value = json_object_get(metric, "value");
    const json_t *known = json_object_get(metric, "known_value");
    bool available = false;
    put(t, "\n  ");
    put(t, spec->label);
    put(t, ": ");
    if (status != NULL && strcmp(status, "complete") == 0
        && is_number(value)) {
        put_quantity(t, value, unit);
        available = true;
    }
    else if (status != NULL && strcmp(status, "partial") == 0
             && is_number(known)) {
        put(t, "partial (known lower bound: ");
        put_quantity(t, known, unit);
        put(t, ")");
        available = true;
    }
    else if (method != NULL && strcmp(method, "not_requested") == 0) {
        put(t, "unavailable (not requested)");
    }
    else {
        put(t, "unavailable (see diagnostics)");
    }
    if (available && scope != NULL
        && (spec->flag == TS_WORKLOAD_MEMORY
            || spec->flag == TS_WORKLOAD_RSS)) {
        put(t, "\n    Scope: ");
        put(t, scope_label(scope));
    }
}

/* The phases of a training step under the Operator FLOPs line, when the
 * FlopReport has them:
 *     forward: 204.000 FLOPs
 *     backward: 275.000 FLOPs
 *     optimizer: 92.000 FLOPs */
static void
put_phases(text_buf *t, const json_t *flops)
{
    static const char *const names[] = {"forward", "backward", "optimizer"};
    static const total_spec phase_specs[] = {
        {"forward", TS_WORKLOAD_FLOPS, "FLOPs", "workload", "  forward"},
        {"backward", TS_WORKLOAD_FLOPS, "FLOPs", "workload", "  backward"},
        {"optimizer", TS_WORKLOAD_FLOPS, "FLOPs", "workload", "  optimizer"},
    };
    const json_t *phases = json_object_get(flops, "phases");
    if (!json_is_object(phases)) {
        return;
    }
    for (size_t i = 0; i < 3; i++) {
        const json_t *total =
            json_object_get(json_object_get(phases, names[i]), "total");
        if (json_is_object(total)) {
            put_metric(t, &phase_specs[i], total);
        }
    }
}

/* The Profiler line's status, with "_" shown as " ". It says what the
 * report holds. An attached profile is "complete", or "partial" when it has
 * diagnostics (measure_workload's rule for context.profile_status), whatever
 * profile_status says: a profile attached by the caller after
 * measure_latency has no profile_status, and one attached to a
 * measure_workload report made without profile=True keeps "not_requested".
 * Without a profile the line shows profile_status ("not_requested" when
 * absent), and a status that claims a profile says it is not attached. */
static void
put_profile_status(text_buf *t, const json_t *report)
{
    const json_t *profile = json_object_get(report, "profile");
    const char *status = json_string_value(
        json_object_get(json_object_get(report, "context"), "profile_status"));
    bool attached = json_is_object(profile);
    if (attached) {
        status = json_array_size(json_object_get(profile, "diagnostics")) > 0
                     ? "partial"
                     : "complete";
    }
    else if (status == NULL) {
        status = "not_requested";
    }
    for (const char *c = status; *c; c++) {
        put_n(t, *c == '_' ? " " : c, 1);
    }
    if (!attached
        && (strcmp(status, "complete") == 0
            || strcmp(status, "partial") == 0)) {
        put(t, ", but no profile is attached to this report");
    }
}

char *
ts_workload_summary(const json_t *report, ts_error *err)
{
    text_buf t = {NULL, 0, 0, false};
    const json_t *context = json_object_get(report, "context");
    const json_t *totals = json_object_get(report, "totals");
    const json_t *diagnostics = json_object_get(report, "diagnostics");
    const char *device = json_string_value(json_object_get(context, "device"));
    const json_t *threads = json_object_get(context, "num_threads");
    char *result = NULL;
    char count[32];
    if (!json_is_object(report) || !json_is_object(totals)) {
        ts_error_set(
            err, TS_EFORMAT, "a benchmark report needs an object 'totals'");
        goto cleanup;
    }
    put(&t, "Workload on ");
    put(&t, device != NULL ? device : "unknown device");
    put(&t, " (");
    if (json_is_integer(threads)) {
        snprintf(count,
                 sizeof count,
                 "%lld",
                 (long long)json_integer_value(threads));
        put(&t, count);
    }
    else {
        put(&t, "?");
    }
    put(&t, " PyTorch threads)");
    for (size_t i = 0; i < NTOTALS; i++) {
        const json_t *metric = json_object_get(totals, totals_table[i].name);
        if (json_is_object(metric)) {
            put_metric(&t, &totals_table[i], metric);
            if (totals_table[i].flag == TS_WORKLOAD_FLOPS) {
                put_phases(&t, json_object_get(report, "operator_flops"));
            }
        }
    }
    put(&t, "\n  Profiler: ");
    put_profile_status(&t, report);
    put(&t, " (separate instrumented pass)");
    for (size_t i = 0; i < json_array_size(diagnostics); i++) {
        const json_t *d = json_array_get(diagnostics, i);
        const char *metric = json_string_value(json_object_get(d, "metric"));
        const char *message = json_string_value(json_object_get(d, "message"));
        put(&t, "\n  ");
        put(&t, metric != NULL ? metric : "?");
        put(&t, ": ");
        put(&t, message != NULL ? message : "");
    }
    if (t.failed || t.data == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        goto cleanup;
    }
    result = t.data;
    t.data = NULL;
cleanup:
    free(t.data);
    return result;
}
