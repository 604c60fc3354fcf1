/* compare_benchmarks: report validation, context matching and the
 * comparison object. Values are compared with Python's == semantics
 * (ts_json_equal), so a report that went through JSON compares like the
 * dict it came from. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/benchmark.h"
#include "torchscan/diff.h"

#define FAIL(err, code, ...) (ts_error_set((err), (code), __VA_ARGS__), (code))

static const char *const timing_metrics[] = {
    "first_call_latency", "latency", "latency_iqr", "throughput"};
#define NTIMING (sizeof timing_metrics / sizeof timing_metrics[0])

static const char *const context_keys[] = {
    "device",
    "device_name",
    "processor",
    "machine",
    "platform",
    "torch_version",
    "torchscan_version",
    "python_version",
    "cuda_version",
    "work_units",
    "work_unit",
    "inputs_source",
};
#define NCONTEXT (sizeof context_keys / sizeof context_keys[0])

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

/* The MetricResult invariants of contract 1.1. */
static bool
valid_metric(const json_t *m)
{
    const char *status = json_string_value(json_object_get(m, "status"));
    const json_t *value = json_object_get(m, "value");
    const json_t *known = json_object_get(m, "known_value");
    if (!json_is_object(m) || status == NULL || value == NULL || known == NULL
        || !json_is_string(json_object_get(m, "unit"))
        || !json_is_string(json_object_get(m, "scope"))
        || !json_is_string(json_object_get(m, "method"))) {
        return false;
    }
    if (strcmp(status, "complete") == 0) {
        return is_number(value) && is_number(known)
               && ts_json_equal(value, known);
    }
    if (strcmp(status, "partial") == 0) {
        return json_is_null(value) && is_number(known);
    }
    if (strcmp(status, "unavailable") == 0) {
        return json_is_null(value) && json_is_null(known);
    }
    return false;
}

/* Every total is a valid MetricResult. */
static int
validate_metrics(const json_t *totals, const char *which, ts_error *err)
{
    const char *key;
    const json_t *value;
    /* json_object_foreach takes a non-const object but only reads. */
    json_object_foreach((json_t *)totals, key, value)
    {
        if (!valid_metric(value)) {
            return FAIL(err,
                        TS_EINVAL,
                        "Benchmark report '%s' has an invalid MetricResult: "
                        "totals.%s.",
                        which,
                        key);
        }
    }
    return TS_OK;
}

/* The timing totals are present, in seconds (throughput in work units per
 * second), and positive (the IQR non-negative) where they have a value. */
static int
validate_timing(const json_t *totals,
                const char *work_unit,
                const char *which,
                ts_error *err)
{
    for (size_t i = 0; i < NTIMING; i++) {
        const json_t *m = json_object_get(totals, timing_metrics[i]);
        const json_t *value;
        const char *unit;
        bool is_rate = strcmp(timing_metrics[i], "throughput") == 0;
        bool unit_ok;
        if (m == NULL) {
            return FAIL(err,
                        TS_EINVAL,
                        "Benchmark report '%s' lacks totals.%s.",
                        which,
                        timing_metrics[i]);
        }
        unit = json_string_value(json_object_get(m, "unit"));
        if (is_rate) {
            size_t n = work_unit != NULL ? strlen(work_unit) : 0;
            unit_ok = work_unit != NULL && strncmp(unit, work_unit, n) == 0
                      && strcmp(unit + n, "/s") == 0;
        }
        else {
            unit_ok = strcmp(unit, "seconds") == 0;
        }
        if (!unit_ok) {
            return FAIL(err,
                        TS_EINVAL,
                        "Invalid benchmark timing unit for totals.%s in '%s': "
                        "'%.100s'.",
                        timing_metrics[i],
                        which,
                        unit);
        }
        value = json_object_get(m, "value");
        if (is_number(value)
            && (strcmp(timing_metrics[i], "latency_iqr") == 0
                    ? !(number_of(value) >= 0.0)
                    : !(number_of(value) > 0.0))) {
            return FAIL(err,
                        TS_EINVAL,
                        "Invalid benchmark timing value for totals.%s in "
                        "'%s'.",
                        timing_metrics[i],
                        which);
        }
    }
    return TS_OK;
}

/* Every workload total counts something (seconds, bytes, FLOPs): a
 * negative one is invalid, and deltas of non-negative ones cannot
 * overflow. */
static int
validate_non_negative(const json_t *totals, const char *which, ts_error *err)
{
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)totals, key, value)
    {
        const json_t *v = json_object_get(value, "value");
        const json_t *known = json_object_get(value, "known_value");
        if ((is_number(v) && !(number_of(v) >= 0.0))
            || (is_number(known) && !(number_of(known) >= 0.0))) {
            return FAIL(err,
                        TS_EINVAL,
                        "Invalid benchmark value for totals.%s in '%s': "
                        "negative.",
                        key,
                        which);
        }
    }
    return TS_OK;
}

int
ts_benchmark_validate(const json_t *report, const char *which, ts_error *err)
{
    const json_t *totals = json_object_get(report, "totals");
    const json_t *context = json_object_get(report, "context");
    const json_t *version = json_object_get(report, "schema_version");
    int rc;
    if (!json_is_object(report)) {
        return FAIL(
            err, TS_EINVAL, "Benchmark report '%s' must be an object.", which);
    }
    if (!json_is_integer(version) || json_integer_value(version) != 1) {
        return FAIL(err,
                    TS_EINVAL,
                    "Benchmark report '%s' has an unsupported schema_version "
                    "(expected 1).",
                    which);
    }
    if (!json_is_object(context)
        || !json_is_object(json_object_get(report, "inputs"))
        || !json_is_object(json_object_get(report, "measurement"))) {
        return FAIL(err,
                    TS_EINVAL,
                    "Benchmark report '%s' needs the objects context, inputs "
                    "and measurement.",
                    which);
    }
    if (!json_is_object(totals)) {
        return FAIL(err,
                    TS_EINVAL,
                    "Benchmark report '%s' needs an object 'totals'.",
                    which);
    }
    rc = validate_metrics(totals, which, err);
    if (rc == TS_OK) {
        rc = validate_timing(
            totals,
            json_string_value(json_object_get(context, "work_unit")),
            which,
            err);
    }
    return rc != TS_OK ? rc : validate_non_negative(totals, which, err);
}

int
ts_benchmark_prepare(const json_t *before,
                     const json_t *after,
                     json_t **diffs,
                     ts_error *err)
{
    const json_t *bc;
    const json_t *ac;
    const char *source;
    int rc;
    *diffs = NULL;
    if ((rc = ts_benchmark_validate(before, "before", err)) != TS_OK
        || (rc = ts_benchmark_validate(after, "after", err)) != TS_OK) {
        return rc;
    }
    bc = json_object_get(before, "context");
    ac = json_object_get(after, "context");
    for (size_t i = 0; i < NCONTEXT; i++) {
        const json_t *b = json_object_get(bc, context_keys[i]);
        const json_t *a = json_object_get(ac, context_keys[i]);
        if (b == NULL || a == NULL || !ts_json_equal(b, a)) {
            return FAIL(err,
                        TS_EINVAL,
                        "Benchmark contexts differ or are missing: %s.",
                        context_keys[i]);
        }
    }
    source = json_string_value(json_object_get(bc, "inputs_source"));
    if (source == NULL || strcmp(source, "caller_supplied") != 0
        || !ts_json_equal(json_object_get(before, "inputs"),
                          json_object_get(after, "inputs"))) {
        return FAIL(err,
                    TS_EINVAL,
                    "Comparisons require matching caller-supplied input "
                    "metadata.");
    }
    *diffs = ts_diff_metrics(json_object_get(before, "totals"),
                             json_object_get(after, "totals"),
                             err);
    if (*diffs == NULL) {
        return err != NULL && err->code != TS_OK ? err->code : TS_EINVAL;
    }
    return TS_OK;
}

/* "faster" / "slower" / "within_variability" / "unavailable" */
static const char *
latency_change(const json_t *diffs, const json_t *before, const json_t *after)
{
    const json_t *delta =
        json_object_get(json_object_get(diffs, "latency"), "delta");
    const json_t *b =
        json_object_get(json_object_get(before, "totals"), "latency_iqr");
    const json_t *a =
        json_object_get(json_object_get(after, "totals"), "latency_iqr");
    const char *bs = json_string_value(json_object_get(b, "status"));
    const char *as = json_string_value(json_object_get(a, "status"));
    double d;
    double spread;
    if (!is_number(delta) || bs == NULL || as == NULL
        || strcmp(bs, "complete") != 0 || strcmp(as, "complete") != 0) {
        return "unavailable";
    }
    d = number_of(delta);
    spread = fmax(number_of(json_object_get(b, "value")),
                  number_of(json_object_get(a, "value")));
    if (fabs(d) <= spread) {
        return "within_variability";
    }
    return d < 0.0 ? "faster" : "slower";
}

static int
compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* {key: {"before", "after"}} for every context key whose values differ,
 * over the sorted union of keys. */
static json_t *
context_changes(const json_t *bc, const json_t *ac)
{
    size_t n = json_object_size(bc) + json_object_size(ac);
    const char **keys = NULL;
    size_t k = 0;
    const char *key;
    const json_t *value;
    json_t *out = json_object();
    json_t *result = NULL;
    if (out == NULL) {
        goto cleanup;
    }
    if ((keys = calloc(n + 1, sizeof *keys)) == NULL) {
        goto cleanup;
    }
    json_object_foreach((json_t *)bc, key, value)
    {
        keys[k++] = key;
    }
    json_object_foreach((json_t *)ac, key, value)
    {
        if (json_object_get(bc, key) == NULL) {
            keys[k++] = key;
        }
    }
    if (k > 1) {
        qsort(keys, k, sizeof *keys, compare_strings);
    }
    for (size_t i = 0; i < k; i++) {
        const json_t *b = json_object_get(bc, keys[i]);
        const json_t *a = json_object_get(ac, keys[i]);
        json_t *change;
        if (ts_json_equal(b, a)) {
            continue;
        }
        change = json_pack("{s:O, s:O}",
                           "before",
                           b != NULL ? b : json_null(),
                           "after",
                           a != NULL ? a : json_null());
        if (change == NULL || json_object_set_new(out, keys[i], change) != 0) {
            goto cleanup;
        }
    }
    result = out;
    out = NULL;
cleanup:
    free(keys);
    json_decref(out);
    return result;
}

json_t *
ts_benchmark_comparison(const json_t *before,
                        const json_t *after,
                        json_t *diffs,
                        bool check_passed,
                        ts_error *err)
{
    json_t *result = NULL;
    json_t *out = NULL;
    json_t *changes = NULL;
    const char *key;
    json_t *entry;
    if (!json_is_object(diffs)) {
        ts_error_set(
            err, TS_EINVAL, "comparison needs the diffs of the totals");
        goto cleanup;
    }
    if (!check_passed) {
        /* A failed output check withholds every gain and loss; the
         * measurements themselves stay in before/after and in each diff. */
        json_object_foreach(diffs, key, entry)
        {
            if (json_object_set_new(
                    entry, "status", json_string("unavailable"))
                || json_object_set_new(entry, "delta", json_null())) {
                goto nomem;
            }
        }
    }
    changes = context_changes(json_object_get(before, "context"),
                              json_object_get(after, "context"));
    out = json_object();
    if (changes == NULL || out == NULL
        || json_object_set_new(out, "schema_version", json_integer(1))
        || json_object_set_new(
            out, "report_type", json_string("benchmark_comparison"))
        || json_object_set_new(out, "before", json_deep_copy(before))
        || json_object_set_new(out, "after", json_deep_copy(after))
        || json_object_set(out, "totals", diffs)
        || json_object_set_new(out,
                               "output_check",
                               json_string(check_passed ? "passed" : "failed"))
        || json_object_set_new(
            out,
            "latency_change",
            json_string(latency_change(diffs, before, after)))
        || json_object_set(out, "context_changes", changes)) {
        goto nomem;
    }
    result = out;
    out = NULL;
    goto cleanup;
nomem:
    ts_error_set(err, TS_ENOMEM, "out of memory");
cleanup:
    json_decref(out);
    json_decref(changes);
    json_decref(diffs);
    return result;
}
