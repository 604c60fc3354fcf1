/* compare_reports (contract 1.5): matches layer calls and metrics of two
 * reports and diffs them. Pure: the inputs are only read, every value copied
 * into the result is a deep copy, and every list or map in the result is in
 * sorted order so that equal inputs give byte-identical JSON.
 *
 * Equality and ordering follow the reference's Python semantics: names sort
 * by code point (strcmp on UTF-8 gives the same order), and numbers compare
 * by value across int, float and bool (1 == 1.0 == true).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/diff.h"
#include "torchscan/report_check.h"

/* ts_error_set returns its code; spelling the code out as the value lets the
 * static analyzer see that an error path never yields TS_OK. */
#define FAIL(err, code, ...) (ts_error_set((err), (code), __VA_ARGS__), (code))

/* ---- Python-style equality and repr ---- */

/* Reads a JSON number or boolean the way Python sees it. */
static bool
py_number(const json_t *value, bool *is_real, long long *i, double *r)
{
    if (json_is_integer(value)) {
        *is_real = false;
        *i = json_integer_value(value);
        return true;
    }
    if (json_is_boolean(value)) {
        *is_real = false;
        *i = json_is_true(value) ? 1 : 0;
        return true;
    }
    if (json_is_real(value)) {
        *is_real = true;
        *r = json_real_value(value);
        return true;
    }
    return false;
}

/* Python's exact int == float comparison. */
static bool
int_equals_real(long long i, double r)
{
    /* 2^63 is the first double no long long can hold. */
    if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0)
        || r != trunc(r)) {
        return false;
    }
    return (long long)r == i;
}

/* Python's == on the objects json.loads would build; NULL is None (as
 * dict.get returns for a missing key). */
static bool
py_equal(const json_t *a, const json_t *b)
{
    bool a_real;
    bool b_real;
    long long ai = 0;
    long long bi = 0;
    double ar = 0.0;
    double br = 0.0;
    if (a == NULL || b == NULL) {
        return (a == NULL || json_is_null(a))
               && (b == NULL || json_is_null(b));
    }
    if (py_number(a, &a_real, &ai, &ar) && py_number(b, &b_real, &bi, &br)) {
        if (!a_real && !b_real) {
            return ai == bi;
        }
        if (a_real && b_real) {
            return ar == br;
        }
        return a_real ? int_equals_real(bi, ar) : int_equals_real(ai, br);
    }
    if (json_typeof(a) != json_typeof(b)) {
        return false;
    }
    if (json_is_string(a)) {
        return json_string_length(a) == json_string_length(b)
               && memcmp(json_string_value(a),
                         json_string_value(b),
                         json_string_length(a))
                      == 0;
    }
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) {
            return false;
        }
        for (size_t k = 0; k < json_array_size(a); k++) {
            if (!py_equal(json_array_get(a, k), json_array_get(b, k))) {
                return false;
            }
        }
        return true;
    }
    if (json_is_object(a)) {
        /* json_object_iter takes a non-const pointer but only reads. */
        void *it = json_object_iter((json_t *)a);
        if (json_object_size(a) != json_object_size(b)) {
            return false;
        }
        for (; it != NULL; it = json_object_iter_next((json_t *)a, it)) {
            const json_t *other = json_object_get(b, json_object_iter_key(it));
            if (other == NULL
                || !py_equal(json_object_iter_value(it), other)) {
                return false;
            }
        }
        return true;
    }
    return true; /* null == null */
}

/* Writes Python's repr() of a str into buf (truncated to size): single
 * quotes unless the text holds one and no double quote; control characters
 * escaped. Only used in error messages. */
static void
py_repr(char *buf, size_t size, const char *s)
{
    char quote =
        strchr(s, '\'') != NULL && strchr(s, '"') == NULL ? '"' : '\'';
    size_t n = 0;
    if (size < 3) {
        if (size > 0) {
            buf[0] = '\0';
        }
        return;
    }
    buf[n++] = quote;
    for (; *s != '\0' && n + 6 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\' || c == (unsigned char)quote) {
            buf[n++] = '\\';
            buf[n++] = (char)c;
        }
        else if (c == '\n' || c == '\r' || c == '\t') {
            buf[n++] = '\\';
            buf[n++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        }
        else if (c < 0x20 || c == 0x7f) {
            n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
        }
        else {
            buf[n++] = (char)c;
        }
    }
    buf[n++] = quote;
    buf[n] = '\0';
}

/* ---- metric diffs ---- */

static int
metric_status(const json_t *metric,
              const char *name,
              const char **status,
              ts_error *err)
{
    *status = json_string_value(json_object_get(metric, "status"));
    if (*status == NULL) {
        char repr[128];
        py_repr(repr, sizeof repr, name);
        return FAIL(err, TS_EFORMAT, "metric %s lacks 'status'", repr);
    }
    return TS_OK;
}

/* after.value - before.value: an int when both are ints, else a real. */
static int
metric_delta(const json_t *before,
             const json_t *after,
             const char *name,
             json_t **delta,
             ts_error *err)
{
    char repr[128];
    bool b_real;
    bool a_real;
    long long bi = 0;
    long long ai = 0;
    double br = 0.0;
    double ar = 0.0;
    long long diff;
    py_repr(repr, sizeof repr, name);
    if (!py_number(json_object_get(before, "value"), &b_real, &bi, &br)
        || !py_number(json_object_get(after, "value"), &a_real, &ai, &ar)) {
        return FAIL(err,
                    TS_EFORMAT,
                    "metric %s is complete without a numeric value",
                    repr);
    }
    if (!a_real && !b_real) {
        if (__builtin_sub_overflow(ai, bi, &diff)) {
            return FAIL(
                err, TS_EOVERFLOW, "delta of metric %s overflows", repr);
        }
        *delta = json_integer(diff);
    }
    else {
        double value = (a_real ? ar : (double)ai) - (b_real ? br : (double)bi);
        if (!isfinite(value)) {
            return FAIL(
                err, TS_EOVERFLOW, "delta of metric %s is not finite", repr);
        }
        *delta = json_real(value);
    }
    return *delta != NULL ? TS_OK
                          : ts_error_set(err, TS_ENOMEM, "out of memory");
}

/* *entry = {status, delta, before, after} for one metric; either side may be
 * NULL (absent). */
static int
diff_metric(const json_t *before,
            const json_t *after,
            const char *name,
            json_t **entry,
            ts_error *err)
{
    const char *status = "unavailable";
    const char *before_status = NULL;
    const char *after_status = NULL;
    json_t *delta = NULL;
    json_t *out = NULL;
    int rc = TS_OK;
    *entry = NULL;
    if (before != NULL && after != NULL) {
        if ((rc = metric_status(before, name, &before_status, err)) != TS_OK
            || (rc = metric_status(after, name, &after_status, err))
                   != TS_OK) {
            goto cleanup;
        }
        if (strcmp(before_status, "unavailable") == 0
            || strcmp(after_status, "unavailable") == 0) {
            status = "unavailable";
        }
        else if (strcmp(before_status, "partial") == 0
                 || strcmp(after_status, "partial") == 0) {
            status = "partial";
        }
        else {
            status = "complete";
            rc = metric_delta(before, after, name, &delta, err);
            if (rc != TS_OK) {
                goto cleanup;
            }
        }
    }
    out = json_object();
    if (out == NULL || json_object_set_new(out, "status", json_string(status))
        || json_object_set_new(
            out, "delta", delta != NULL ? json_incref(delta) : json_null())
        || json_object_set_new(
            out,
            "before",
            before != NULL ? json_deep_copy(before) : json_null())
        || json_object_set_new(
            out,
            "after",
            after != NULL ? json_deep_copy(after) : json_null())) {
        rc = FAIL(err, TS_ENOMEM, "out of memory");
        goto cleanup;
    }
    *entry = out;
    out = NULL;
cleanup:
    json_decref(out);
    json_decref(delta);
    return rc;
}

static int
compare_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of obj, sorted; *keys is malloc'd (NULL when obj is empty). */
static int
sorted_keys(const json_t *obj,
            const char ***keys,
            size_t *count,
            ts_error *err)
{
    size_t n = json_object_size(obj);
    size_t k = 0;
    *keys = NULL;
    *count = 0;
    if (n == 0) {
        return TS_OK;
    }
    *keys = calloc(n, sizeof **keys);
    if (*keys == NULL) {
        return FAIL(err, TS_ENOMEM, "out of memory");
    }
    /* json_object_iter takes a non-const pointer but only reads. */
    for (void *it = json_object_iter((json_t *)obj); it != NULL && k < n;
         it = json_object_iter_next((json_t *)obj, it)) {
        (*keys)[k++] = json_object_iter_key(it);
    }
    qsort(*keys, k, sizeof **keys, compare_keys);
    *count = k;
    return TS_OK;
}

static const char *const compat_fields[] = {"unit", "scope", "method"};

/* *diffs = the diff of two metric maps over the sorted union of names; with
 * changed_only, names whose two results are equal are skipped. */
static int
diff_metric_maps(const json_t *before,
                 const json_t *after,
                 bool changed_only,
                 json_t **diffs,
                 ts_error *err)
{
    const char **before_keys = NULL;
    const char **after_keys = NULL;
    size_t before_count = 0;
    size_t after_count = 0;
    size_t bi = 0;
    size_t ai = 0;
    json_t *out = NULL;
    int rc;
    *diffs = NULL;
    if (!json_is_object(before) || !json_is_object(after)) {
        rc = FAIL(err, TS_EFORMAT, "metrics and totals must be objects");
        goto cleanup;
    }
    if ((rc = sorted_keys(before, &before_keys, &before_count, err)) != TS_OK
        || (rc = sorted_keys(after, &after_keys, &after_count, err))
               != TS_OK) {
        goto cleanup;
    }
    out = json_object();
    if (out == NULL) {
        rc = FAIL(err, TS_ENOMEM, "out of memory");
        goto cleanup;
    }
    while (bi < before_count || ai < after_count) {
        const char *name = NULL;
        const json_t *b = NULL;
        const json_t *a = NULL;
        json_t *entry;
        int order = bi == before_count ? 1
                    : ai == after_count
                        ? -1
                        : strcmp(before_keys[bi], after_keys[ai]);
        if (order <= 0) {
            name = before_keys[bi++];
            b = json_object_get(before, name);
        }
        if (order >= 0) {
            name = after_keys[ai++];
            a = json_object_get(after, name);
        }
        if (changed_only && py_equal(b, a)) {
            continue;
        }
        if (b != NULL && a != NULL) {
            if (!json_is_object(b) || !json_is_object(a)) {
                rc = FAIL(err, TS_EFORMAT, "metric results must be objects");
                goto cleanup;
            }
            for (size_t f = 0; f < 3; f++) {
                if (!py_equal(json_object_get(b, compat_fields[f]),
                              json_object_get(a, compat_fields[f]))) {
                    char repr[128];
                    py_repr(repr, sizeof repr, name);
                    rc = FAIL(err,
                              TS_EINVAL,
                              "metric %s has incompatible %s",
                              repr,
                              compat_fields[f]);
                    goto cleanup;
                }
            }
        }
        if ((rc = diff_metric(b, a, name, &entry, err)) != TS_OK) {
            goto cleanup;
        }
        if (json_object_set_new(out, name, entry) != 0) {
            rc = FAIL(err, TS_ENOMEM, "out of memory");
            goto cleanup;
        }
    }
    *diffs = out;
    out = NULL;
    rc = TS_OK;
cleanup:
    json_decref(out);
    free(before_keys);
    free(after_keys);
    return rc;
}

json_t *
ts_diff_metrics(const json_t *before, const json_t *after, ts_error *err)
{
    json_t *diffs = NULL;
    ts_error_clear(err);
    diff_metric_maps(before, after, false, &diffs, err);
    return diffs;
}

/* ---- layer calls ---- */

typedef struct layer_call {
    const char *path;
    json_int_t call_index;
    size_t position; /* index in report["layers"] */
    const json_t *layer;
} layer_call;

static int
compare_calls(const void *pa, const void *pb)
{
    const layer_call *a = pa;
    const layer_call *b = pb;
    int order = strcmp(a->path, b->path);
    if (order != 0) {
        return order;
    }
    if (a->call_index != b->call_index) {
        return a->call_index < b->call_index ? -1 : 1;
    }
    /* Ties (duplicates) keep report order so the error names the first
     * repeat, as the reference's single pass does. */
    return (a->position > b->position) - (a->position < b->position);
}

/* Collects and sorts the (path, call_index) of every layer; refuses a
 * repeated key. *calls is malloc'd. */
static int
collect_calls(const json_t *report,
              const char *side,
              layer_call **calls,
              size_t *count,
              ts_error *err)
{
    const json_t *layers = json_object_get(report, "layers");
    size_t n;
    size_t repeat = 0;
    bool repeated = false;
    *calls = NULL;
    *count = 0;
    if (!json_is_array(layers)) {
        return FAIL(err, TS_EFORMAT, "%s report lacks 'layers'", side);
    }
    n = json_array_size(layers);
    if (n == 0) {
        return TS_OK;
    }
    *calls = calloc(n, sizeof **calls);
    if (*calls == NULL) {
        return FAIL(err, TS_ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        const json_t *layer = json_array_get(layers, k);
        const json_t *path = json_object_get(layer, "path");
        const json_t *index = json_object_get(layer, "call_index");
        if (!json_is_string(path) || !json_is_integer(index)) {
            return FAIL(err,
                        TS_EFORMAT,
                        "%s report layer %zu lacks 'path' or "
                        "'call_index'",
                        side,
                        k);
        }
        (*calls)[k].path = json_string_value(path);
        (*calls)[k].call_index = json_integer_value(index);
        (*calls)[k].position = k;
        (*calls)[k].layer = layer;
    }
    qsort(*calls, n, sizeof **calls, compare_calls);
    *count = n;
    /* The first repeat in report order is the earliest-placed second
     * element of any run of equal keys. */
    for (size_t k = 1; k < n; k++) {
        const layer_call *prev = &(*calls)[k - 1];
        const layer_call *cur = &(*calls)[k];
        if (strcmp(prev->path, cur->path) == 0
            && prev->call_index == cur->call_index
            && (!repeated || cur->position < (*calls)[repeat].position)) {
            repeat = k;
            repeated = true;
        }
    }
    if (repeated) {
        char repr[256];
        py_repr(repr, sizeof repr, (*calls)[repeat].path);
        return FAIL(
            err,
            TS_EINVAL,
            "%s contains duplicate layer call (%s, %" JSON_INTEGER_FORMAT ")",
            side,
            repr,
            (*calls)[repeat].call_index);
    }
    return TS_OK;
}

/* Copies a layer field into out when the layer has it. */
static int
copy_field(json_t *out, const json_t *layer, const char *key)
{
    const json_t *value = json_object_get(layer, key);
    return value == NULL
               ? 0
               : json_object_set_new(out, key, json_deep_copy(value));
}

/* Appends {path, call_index, metrics[, token_dependencies]} of a call. */
static int
append_snapshot(json_t *list, const layer_call *call, ts_error *err)
{
    json_t *out = NULL;
    int rc = TS_OK;
    if (json_object_get(call->layer, "metrics") == NULL) {
        rc = FAIL(err, TS_EFORMAT, "layer %s lacks 'metrics'", call->path);
        goto cleanup;
    }
    out = json_object();
    if (out == NULL
        || json_object_set_new(out, "path", json_string(call->path))
        || json_object_set_new(
            out, "call_index", json_integer(call->call_index))
        || copy_field(out, call->layer, "metrics")
        || copy_field(out, call->layer, "token_dependencies")
        || json_array_append(list, out)) {
        rc = FAIL(err, TS_ENOMEM, "out of memory");
        goto cleanup;
    }
cleanup:
    json_decref(out);
    return rc;
}

/* Appends the changed-layer entry of a call present in both reports, unless
 * nothing changed. */
static int
append_changed(json_t *list,
               const layer_call *before,
               const layer_call *after,
               ts_error *err)
{
    const json_t *before_tokens =
        json_object_get(before->layer, "token_dependencies");
    const json_t *after_tokens =
        json_object_get(after->layer, "token_dependencies");
    bool tokens_differ = !py_equal(before_tokens, after_tokens);
    json_t *metrics = NULL;
    json_t *tokens = NULL;
    json_t *out = NULL;
    int rc = diff_metric_maps(json_object_get(before->layer, "metrics"),
                              json_object_get(after->layer, "metrics"),
                              true,
                              &metrics,
                              err);
    if (rc != TS_OK || (json_object_size(metrics) == 0 && !tokens_differ)) {
        goto cleanup;
    }
    out = json_object();
    if (out == NULL
        || json_object_set_new(out, "path", json_string(after->path))
        || json_object_set_new(
            out, "call_index", json_integer(after->call_index))
        || json_object_set(out, "metrics", metrics)) {
        rc = FAIL(err, TS_ENOMEM, "out of memory");
        goto cleanup;
    }
    /* Token relations carry no number, so a change shows both sides. */
    if (tokens_differ) {
        tokens = json_object();
        if (tokens == NULL
            || json_object_set_new(tokens,
                                   "before",
                                   before_tokens != NULL
                                       ? json_deep_copy(before_tokens)
                                       : json_null())
            || json_object_set_new(tokens,
                                   "after",
                                   after_tokens != NULL
                                       ? json_deep_copy(after_tokens)
                                       : json_null())
            || json_object_set(out, "token_dependencies", tokens)) {
            rc = FAIL(err, TS_ENOMEM, "out of memory");
            goto cleanup;
        }
    }
    if (json_array_append(list, out) != 0) {
        rc = FAIL(err, TS_ENOMEM, "out of memory");
    }
cleanup:
    json_decref(out);
    json_decref(tokens);
    json_decref(metrics);
    return rc;
}

/* ---- reports ---- */

static int
check_schema(const json_t *before,
             const json_t *after,
             json_int_t *version,
             ts_error *err)
{
    const json_t *b = json_object_get(before, "schema_version");
    const json_t *a = json_object_get(after, "schema_version");
    if (!json_is_integer(b)) {
        /* refused by the check, which names the side and the value */
        return ts_analysis_report_check(before, "before", err);
    }
    if (!json_is_integer(a)) {
        return ts_analysis_report_check(after, "after", err);
    }
    *version = json_integer_value(b);
    if (*version != json_integer_value(a)) {
        return FAIL(err,
                    TS_EINVAL,
                    "schema versions differ: %" JSON_INTEGER_FORMAT
                    " != %" JSON_INTEGER_FORMAT,
                    *version,
                    json_integer_value(a));
    }
    if (*version != 1) {
        return FAIL(err,
                    TS_EINVAL,
                    "unsupported schema version: %" JSON_INTEGER_FORMAT,
                    *version);
    }
    return TS_OK;
}

/* The order of two layer calls by (path, call_index). */
static int
call_order(const layer_call *before, const layer_call *after)
{
    int order = strcmp(before->path, after->path);
    if (order == 0) {
        json_int_t b = before->call_index;
        json_int_t a = after->call_index;
        order = (b > a) - (b < a);
    }
    return order;
}

/* Both sides are sorted by (path, call_index) with unique keys: one merge
 * pass yields added, removed and common (changed) calls in sorted order. */
static int
merge_calls(const layer_call *before_calls,
            size_t before_count,
            const layer_call *after_calls,
            size_t after_count,
            json_t *added,
            json_t *removed,
            json_t *changed,
            ts_error *err)
{
    size_t bi = 0;
    size_t ai = 0;
    int rc = TS_OK;
    while (rc == TS_OK && (bi < before_count || ai < after_count)) {
        int order;
        if (bi == before_count) {
            order = 1;
        }
        else if (ai == after_count) {
            order = -1;
        }
        else {
            order = call_order(&before_calls[bi], &after_calls[ai]);
        }
        if (order < 0) {
            rc = append_snapshot(removed, &before_calls[bi++], err);
        }
        else if (order > 0) {
            rc = append_snapshot(added, &after_calls[ai++], err);
        }
        else {
            rc = append_changed(
                changed, &before_calls[bi++], &after_calls[ai++], err);
        }
    }
    return rc;
}

json_t *
ts_compare_reports(const json_t *before, const json_t *after, ts_error *err)
{
    layer_call *before_calls = NULL;
    layer_call *after_calls = NULL;
    size_t before_count = 0;
    size_t after_count = 0;
    json_int_t version = 0;
    json_t *added = NULL;
    json_t *removed = NULL;
    json_t *changed = NULL;
    json_t *totals = NULL;
    json_t *out = NULL;
    json_t *result = NULL;

    ts_error_clear(err);
    if (!json_is_object(before) || !json_is_object(after)) {
        ts_error_set(err, TS_EINVAL, "reports must be JSON objects");
        goto cleanup;
    }
    /* both reports are checked whole before any arithmetic */
    if (check_schema(before, after, &version, err) != TS_OK
        || ts_analysis_report_check(before, "before", err) != TS_OK
        || ts_analysis_report_check(after, "after", err) != TS_OK
        || collect_calls(before, "before", &before_calls, &before_count, err)
               != TS_OK
        || collect_calls(after, "after", &after_calls, &after_count, err)
               != TS_OK) {
        goto cleanup;
    }
    added = json_array();
    removed = json_array();
    changed = json_array();
    if (added == NULL || removed == NULL || changed == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        goto cleanup;
    }
    if (merge_calls(before_calls,
                    before_count,
                    after_calls,
                    after_count,
                    added,
                    removed,
                    changed,
                    err)
            != TS_OK
        || diff_metric_maps(json_object_get(before, "totals"),
                            json_object_get(after, "totals"),
                            false,
                            &totals,
                            err)
               != TS_OK) {
        goto cleanup;
    }
    out = json_pack("{s:I, s:O, s:{s:O, s:O, s:O}}",
                    "schema_version",
                    (json_int_t)version,
                    "totals",
                    totals,
                    "layers",
                    "added",
                    added,
                    "removed",
                    removed,
                    "changed",
                    changed);
    if (out == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        goto cleanup;
    }
    result = out;
cleanup:
    json_decref(totals);
    json_decref(added);
    json_decref(removed);
    json_decref(changed);
    free(before_calls);
    free(after_calls);
    return result;
}

bool
ts_json_equal(const json_t *a, const json_t *b)
{
    return py_equal(a, b);
}
