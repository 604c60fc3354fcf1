/* report_check.c: the validators of AnalysisReports and FlopReports read
 * back (report_check.h): diagnostics, context, operator FLOPs and their
 * phases, layer rows, duplicate calls and ownership, the whole report.
 * The checker and the field checks they share are in checker.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"
#include "torchscan/diff.h"

/* ---- diagnostics, context, operator_flops ------------------------------- */

static int
diagnostics_check(checker *c, const json_t *diagnostics)
{
    int rc = chk_list(c, diagnostics);
    for (size_t k = 0; rc == TS_OK && k < json_array_size(diagnostics); k++) {
        const json_t *d = json_array_get(diagnostics, k);
        const char *severity =
            json_string_value(json_object_get(d, "severity"));
        size_t saved = push_index(c, k);
        char buf[64];
        if ((rc = chk_object(c, d, "a Diagnostic object")) != TS_OK
            || (rc = chk_member_str(c, d, "code", false)) != TS_OK) {
            return rc;
        }
        if (severity == NULL
            || (strcmp(severity, "warning") != 0
                && strcmp(severity, "error") != 0)) {
            const json_t *value = json_object_get(d, "severity");
            push_key(c, "severity");
            return chk_fail(c,
                            "expected 'warning' or 'error', got %s",
                            value == NULL ? "nothing" : GOT(value, buf));
        }
        if ((rc = chk_member_str(c, d, "metric", true)) != TS_OK
            || (rc = chk_member_str(c, d, "message", true)) != TS_OK
            || (rc = chk_member_str(c, d, "path", true)) != TS_OK
            || (rc = chk_member_str(c, d, "operator", true)) != TS_OK) {
            return rc;
        }
        pop(c, saved);
    }
    return rc;
}

/* An optional member: runs check on it when the object has it. */
#define OPTIONAL_MEMBER(c, object, key, call)                     \
    do {                                                          \
        const json_t *member_ = json_object_get((object), (key)); \
        if (member_ != NULL) {                                    \
            size_t saved_ = push_key((c), (key));                 \
            int rc_ = call((c), member_);                         \
            if (rc_ != TS_OK) {                                   \
                return rc_;                                       \
            }                                                     \
            pop((c), saved_);                                     \
        }                                                         \
    } while (0)

static int
str_list_check(checker *c, const json_t *list)
{
    int rc = chk_list(c, list);
    for (size_t k = 0; rc == TS_OK && k < json_array_size(list); k++) {
        const json_t *item = json_array_get(list, k);
        if (!json_is_string(item)) {
            char buf[64];
            push_index(c, k);
            return chk_fail(c, "expected a str, got %s", GOT(item, buf));
        }
    }
    return rc;
}

static int
context_check(checker *c, const json_t *context)
{
    int rc = chk_object(c, context, "an object");
    if (rc != TS_OK) {
        return rc;
    }
    OPTIONAL_MEMBER(c, context, "devices", str_list_check);
    OPTIONAL_MEMBER(c, context, "dtypes", str_list_check);
    return TS_OK;
}

static int
inputs_check(checker *c, const json_t *inputs)
{
    return chk_object(c, inputs, "an object");
}

/* {key: non-negative int} */
static int
counts_check(checker *c, const json_t *counts)
{
    const char *key;
    const json_t *value;
    int rc = chk_object(c, counts, "an object");
    if (rc != TS_OK) {
        return rc;
    }
    json_object_foreach((json_t *)counts, key, value)
    {
        size_t saved = push_key(c, key);
        if ((rc = chk_count(c, value)) != TS_OK) {
            return rc;
        }
        pop(c, saved);
    }
    return TS_OK;
}

static int
ignored_check(checker *c, const json_t *ignored)
{
    const char *key;
    const json_t *value;
    int rc = chk_object(c, ignored, "an object");
    if (rc != TS_OK) {
        return rc;
    }
    json_object_foreach((json_t *)ignored, key, value)
    {
        size_t saved = push_key(c, key);
        if ((rc = chk_object(c, value, "an object {calls, reason}")) != TS_OK
            || (rc = chk_member_count(c, value, "calls")) != TS_OK
            || (rc = chk_member_str(c, value, "reason", false)) != TS_OK) {
            return rc;
        }
        pop(c, saved);
    }
    return TS_OK;
}

/* The known value of a MetricResult already checked (0 when none). */
static int64_t
known_of(const json_t *metric)
{
    const json_t *v = json_object_get(metric, "known_value");
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static bool
is_partial(const json_t *metric)
{
    const char *status = json_string_value(json_object_get(metric, "status"));
    return status != NULL && strcmp(status, "partial") == 0;
}

/* The sum of {key: int} (checked counts); false when it overflows. */
static bool
sum_counts(const json_t *counts, int64_t *sum)
{
    const char *key;
    const json_t *value;
    *sum = 0;
    json_object_foreach((json_t *)counts, key, value)
    {
        if (!ts_add(*sum, (int64_t)json_integer_value(value), sum)) {
            return false;
        }
    }
    return true;
}

/* One phase's layer rows: [{path, call_index, operator_flops}]. */
static int
phase_layers_check(checker *c, const json_t *rows)
{
    int rc = chk_list(c, rows);
    for (size_t k = 0; rc == TS_OK && k < json_array_size(rows); k++) {
        const json_t *row = json_array_get(rows, k);
        size_t saved = push_index(c, k), inner;
        if ((rc = chk_object(c,
                             row,
                             "an object {path, call_index, "
                             "operator_flops}"))
                != TS_OK
            || (rc = chk_member_str(c, row, "path", false)) != TS_OK
            || (rc = chk_member_count(c, row, "call_index")) != TS_OK) {
            return rc;
        }
        inner = push_key(c, "operator_flops");
        if ((rc = chk_metric(c, json_object_get(row, "operator_flops")))
            != TS_OK) {
            return rc;
        }
        pop(c, inner);
        pop(c, saved);
    }
    return rc;
}

/* One phase {total, by_operator, by_module, layers}: its by_operator add
 * up to its total. */
static int
phase_check(checker *c, const json_t *phase)
{
    const json_t *total = json_object_get(phase, "total");
    int64_t sum;
    size_t saved;
    int rc = chk_object(c,
                        phase,
                        "an object {total, by_operator, "
                        "by_module, layers}");
    if (rc != TS_OK) {
        return rc;
    }
    saved = push_key(c, "total");
    if ((rc = chk_metric(c, total)) != TS_OK) {
        return rc;
    }
    if (chk_is_negative(json_object_get(total, "known_value"))) {
        push_key(c, "known_value");
        return chk_fail(c, "a cost cannot be negative");
    }
    pop(c, saved);
    saved = push_key(c, "by_operator");
    if ((rc = counts_check(c, json_object_get(phase, "by_operator")))
        != TS_OK) {
        return rc;
    }
    if (!sum_counts(json_object_get(phase, "by_operator"), &sum)
        || sum != known_of(total)) {
        return chk_fail(c, "must add up to the phase's total");
    }
    pop(c, saved);
    saved = push_key(c, "by_module");
    if ((rc = counts_check(c, json_object_get(phase, "by_module"))) != TS_OK) {
        return rc;
    }
    pop(c, saved);
    saved = push_key(c, "layers");
    if ((rc = phase_layers_check(c, json_object_get(phase, "layers")))
        != TS_OK) {
        return rc;
    }
    pop(c, saved);
    return TS_OK;
}

/* "phases" {forward, backward, optimizer}: each a phase, their totals
 * adding up to the report's, partial exactly when one of them is. */
static int
phases_check(checker *c, const json_t *flops, const json_t *phases)
{
    static const char *const names[] = {"forward", "backward", "optimizer"};
    const json_t *total = json_object_get(flops, "total");
    int64_t sum = 0;
    bool any_partial = false;
    int rc = chk_object(c,
                        phases,
                        "an object {forward, backward, "
                        "optimizer}");
    if (rc != TS_OK) {
        return rc;
    }
    if (json_object_size(phases) != 3) {
        return chk_fail(c, "expected exactly forward, backward and optimizer");
    }
    for (int i = 0; i < 3; i++) {
        const json_t *phase = json_object_get(phases, names[i]);
        size_t saved = push_key(c, names[i]);
        if ((rc = phase_check(c, phase)) != TS_OK) {
            return rc;
        }
        pop(c, saved);
        any_partial |= is_partial(json_object_get(phase, "total"));
        if (!ts_add(sum, known_of(json_object_get(phase, "total")), &sum)) {
            return chk_fail(c, "the phases' totals overflow");
        }
    }
    if (sum != known_of(total)) {
        return chk_fail(c, "the phases' totals must add up to total");
    }
    if (any_partial != is_partial(total)) {
        return chk_fail(
            c, "total must be partial exactly when a phase's total is");
    }
    return TS_OK;
}

static int
flop_report_check(checker *c, const json_t *flops)
{
    const json_t *total;
    size_t saved;
    int rc = chk_object(c, flops, "a FlopReport object");
    if (rc != TS_OK || (rc = chk_schema_version(c, flops)) != TS_OK) {
        return rc;
    }
    OPTIONAL_MEMBER(c, flops, "context", inputs_check);
    total = json_object_get(flops, "total");
    saved = push_key(c, "total");
    if ((rc = chk_metric(c, total)) != TS_OK) {
        return rc;
    }
    if (chk_is_negative(json_object_get(total, "known_value"))) {
        push_key(c, "known_value");
        return chk_fail(c, "a cost cannot be negative");
    }
    pop(c, saved);
    OPTIONAL_MEMBER(c, flops, "by_operator", counts_check);
    OPTIONAL_MEMBER(c, flops, "matrix_product_flops", counts_check);
    OPTIONAL_MEMBER(c, flops, "by_module", counts_check);
    OPTIONAL_MEMBER(c, flops, "ignored_operators", ignored_check);
    OPTIONAL_MEMBER(c, flops, "diagnostics", diagnostics_check);
    if (json_object_get(flops, "phases") != NULL) {
        saved = push_key(c, "phases");
        if ((rc = phases_check(c, flops, json_object_get(flops, "phases")))
            != TS_OK) {
            return rc;
        }
        pop(c, saved);
    }
    return TS_OK;
}

/* ---- layers ------------------------------------------------------------- */

static int
path_check(checker *c, const json_t *path)
{
    const char *s = json_string_value(path);
    char buf[64];
    if (s == NULL) {
        return chk_fail(c,
                        "expected a str, got %s",
                        path == NULL ? "nothing" : GOT(path, buf));
    }
    if (s[0] == '\0') {
        return TS_OK; /* the root */
    }
    for (const char *p = s;; p++) {
        bool starts = p == s || p[-1] == '.';
        if ((*p == '.' || *p == '\0') && starts) {
            return chk_fail(c,
                            "a module path has an empty component, got %s",
                            GOT(path, buf));
        }
        if (*p == '\0') {
            break;
        }
    }
    return TS_OK;
}

static int
parameters_check(checker *c, const json_t *parameters)
{
    int rc = chk_object(c, parameters, "an object");
    if (rc != TS_OK || (rc = chk_member_count(c, parameters, "trainable"))
        || (rc = chk_member_count(c, parameters, "frozen"))
        || (rc = chk_member_count(c, parameters, "bytes"))) {
        return rc;
    }
    if (!json_is_boolean(json_object_get(parameters, "shared"))) {
        push_key(c, "shared");
        return chk_fail(c, "expected a bool");
    }
    return TS_OK;
}

static int
buffers_check(checker *c, const json_t *buffers)
{
    int rc = chk_object(c, buffers, "an object");
    if (rc != TS_OK || (rc = chk_member_count(c, buffers, "elements"))
        || (rc = chk_member_count(c, buffers, "bytes"))) {
        return rc;
    }
    if (!json_is_boolean(json_object_get(buffers, "shared"))) {
        push_key(c, "shared");
        return chk_fail(c, "expected a bool");
    }
    return TS_OK;
}

static int
ownership_check(checker *c, const json_t *ownership)
{
    const char *key;
    const json_t *value;
    int rc = chk_object(c, ownership, "an object");
    if (rc != TS_OK) {
        return rc;
    }
    json_object_foreach((json_t *)ownership, key, value)
    {
        const char *scope = json_string_value(value);
        if (scope == NULL
            || (strcmp(scope, "module_call") != 0
                && strcmp(scope, "subtree") != 0)) {
            char buf[64];
            push_key(c, key);
            return chk_fail(c,
                            "expected 'module_call' or 'subtree', got %s",
                            GOT(value, buf));
        }
    }
    return TS_OK;
}

static int
owners_shape_check(checker *c, const json_t *owners)
{
    const char *key;
    const json_t *owner;
    int rc = chk_object(c, owners, "an object");
    if (rc != TS_OK) {
        return rc;
    }
    json_object_foreach((json_t *)owners, key, owner)
    {
        size_t saved = push_key(c, key);
        if ((rc = chk_object(c, owner, "an Owner object {path, call_index}"))
                != TS_OK
            || (rc = chk_member_str(c, owner, "path", false)) != TS_OK
            || (rc = chk_member_count(c, owner, "call_index")) != TS_OK) {
            return rc;
        }
        pop(c, saved);
    }
    return TS_OK;
}

static int
layer_check(checker *c, const json_t *layer)
{
    size_t saved;
    int rc = chk_object(c, layer, "a LayerReport object");
    if (rc != TS_OK) {
        return rc;
    }
    saved = push_key(c, "path");
    if ((rc = path_check(c, json_object_get(layer, "path"))) != TS_OK) {
        return rc;
    }
    pop(c, saved);
    if ((rc = chk_member_count(c, layer, "call_index")) != TS_OK) {
        return rc;
    }
    if (json_object_get(layer, "depth") != NULL
        && (rc = chk_member_count(c, layer, "depth")) != TS_OK) {
        return rc;
    }
    saved = push_key(c, "metrics");
    if ((rc = chk_metrics(c, json_object_get(layer, "metrics"))) != TS_OK) {
        return rc;
    }
    pop(c, saved);
    OPTIONAL_MEMBER(c, layer, "parameters", parameters_check);
    OPTIONAL_MEMBER(c, layer, "buffers", buffers_check);
    OPTIONAL_MEMBER(c, layer, "metric_ownership", ownership_check);
    OPTIONAL_MEMBER(c, layer, "metric_owners", owners_shape_check);
    return TS_OK;
}

/* ---- layer calls: duplicates and ownership ------------------------------ */

typedef struct call_key {
    const char *path;
    json_int_t call_index;
    size_t position;
} call_key;

static int
compare_keys(const void *pa, const void *pb)
{
    const call_key *a = pa;
    const call_key *b = pb;
    int order = strcmp(a->path, b->path);
    if (order == 0) {
        order =
            (a->call_index > b->call_index) - (a->call_index < b->call_index);
    }
    if (order == 0) {
        order = (a->position > b->position) - (a->position < b->position);
    }
    return order;
}

/* The row of (path, call_index), or SIZE_MAX. */
static size_t
find_row(const call_key *keys, size_t n, const char *path, json_int_t index)
{
    call_key probe = {path, index, 0};
    size_t lo = 0;
    size_t hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int order = strcmp(keys[mid].path, probe.path);
        if (order == 0) {
            order = (keys[mid].call_index > index)
                    - (keys[mid].call_index < index);
        }
        if (order < 0) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo < n && strcmp(keys[lo].path, path) == 0
                   && keys[lo].call_index == index
               ? keys[lo].position
               : SIZE_MAX;
}

static int
duplicates_check(checker *c, const call_key *keys, size_t n)
{
    size_t repeat = SIZE_MAX;
    /* The first repeat in report order is the earliest-placed second
     * element of any run of equal keys. */
    for (size_t k = 1; k < n; k++) {
        if (strcmp(keys[k - 1].path, keys[k].path) == 0
            && keys[k - 1].call_index == keys[k].call_index
            && (repeat == SIZE_MAX
                || keys[k].position < keys[repeat].position)) {
            repeat = k;
        }
    }
    if (repeat != SIZE_MAX) {
        char repr[192];
        chk_repr(repr, sizeof repr, keys[repeat].path);
        return ts_error_set(c->err,
                            TS_EFORMAT,
                            "%s contains duplicate layer call (%s, "
                            "%" JSON_INTEGER_FORMAT ")",
                            c->where,
                            repr,
                            keys[repeat].call_index);
    }
    return TS_OK;
}

/* For each covered metric: the owner row exists, is not the row itself,
 * lists the metric in metric_ownership, and the covered row lacks it. */
static int
owners_check(checker *c,
             const json_t *layers,
             const call_key *keys,
             size_t n,
             size_t *owner_of,
             const char *metric_name)
{
    unsigned char *state;
    for (size_t k = 0; k < n; k++) {
        const json_t *layer = json_array_get(layers, k);
        const json_t *owner = json_object_get(
            json_object_get(layer, "metric_owners"), metric_name);
        size_t row;
        owner_of[k] = SIZE_MAX;
        if (owner == NULL) {
            continue;
        }
        push_key(c, "layers");
        push_index(c, k);
        if (json_object_get(json_object_get(layer, "metrics"), metric_name)
            != NULL) {
            push_key(c, "metrics");
            push_key(c, metric_name);
            return chk_fail(c,
                            "a metric covered by metric_owners cannot also be "
                            "on the covered row");
        }
        push_key(c, "metric_owners");
        push_key(c, metric_name);
        row =
            find_row(keys,
                     n,
                     json_string_value(json_object_get(owner, "path")),
                     json_integer_value(json_object_get(owner, "call_index")));
        if (row == SIZE_MAX) {
            return chk_fail(c, "names no row of layers");
        }
        if (row == k) {
            return chk_fail(c, "names the row itself");
        }
        if (json_object_get(json_object_get(json_array_get(layers, row),
                                            "metric_ownership"),
                            metric_name)
            == NULL) {
            return chk_fail(c,
                            "names layers[%zu], whose metric_ownership lacks "
                            "the metric",
                            row);
        }
        pop(c, 0);
        owner_of[k] = row;
    }
    /* owner_of is a functional graph: find a cycle with three colours. */
    state = calloc(n, 1);
    if (state == NULL) {
        return ts_error_set(c->err, TS_ENOMEM, "out of memory");
    }
    for (size_t start = 0; start < n; start++) {
        size_t k = start;
        while (k != SIZE_MAX && state[k] == 0) {
            state[k] = 1;
            k = owner_of[k];
        }
        if (k != SIZE_MAX && state[k] == 1) {
            free(state);
            push_key(c, "layers");
            push_index(c, k);
            push_key(c, "metric_owners");
            push_key(c, metric_name);
            return chk_fail(c, "the owners of this metric form a cycle");
        }
        for (k = start; k != SIZE_MAX && state[k] == 1; k = owner_of[k]) {
            state[k] = 2;
        }
    }
    free(state);
    return TS_OK;
}

static int
calls_check(checker *c, const json_t *layers)
{
    static const char *const owned[] = {
        "module_flops",
        "macs",
        "dmas",
        "receptive_field",
        "effective_stride",
        "effective_padding",
    };
    size_t n = json_array_size(layers);
    call_key *keys;
    size_t *owner_of;
    int rc = TS_OK;
    bool any_owners = false;
    if (n == 0) {
        return TS_OK;
    }
    keys = calloc(n, sizeof *keys);
    owner_of = calloc(n, sizeof *owner_of);
    if (keys == NULL || owner_of == NULL) {
        free(keys);
        free(owner_of);
        return ts_error_set(c->err, TS_ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        const json_t *layer = json_array_get(layers, k);
        keys[k].path = json_string_value(json_object_get(layer, "path"));
        keys[k].call_index =
            json_integer_value(json_object_get(layer, "call_index"));
        keys[k].position = k;
        any_owners |= json_object_get(layer, "metric_owners") != NULL;
    }
    qsort(keys, n, sizeof *keys, compare_keys);
    rc = duplicates_check(c, keys, n);
    if (rc == TS_OK && any_owners) {
        /* every metric name a row's metric_owners holds */
        for (size_t m = 0; rc == TS_OK && m < sizeof owned / sizeof owned[0];
             m++) {
            rc = owners_check(c, layers, keys, n, owner_of, owned[m]);
        }
        for (size_t k = 0; rc == TS_OK && k < n; k++) {
            const char *name;
            const json_t *owner;
            json_object_foreach(
                json_object_get(json_array_get(layers, k), "metric_owners"),
                name,
                owner)
            {
                bool known = false;
                for (size_t m = 0; m < sizeof owned / sizeof owned[0]; m++) {
                    known |= strcmp(name, owned[m]) == 0;
                }
                if (!known) {
                    /* a metric outside the estimates: its own pass */
                    rc = owners_check(c, layers, keys, n, owner_of, name);
                    if (rc != TS_OK) {
                        break;
                    }
                }
            }
        }
    }
    free(keys);
    free(owner_of);
    return rc;
}

/* ---- the report --------------------------------------------------------- */

static int
report_check(const json_t *report,
             const char *where,
             bool display_text,
             ts_error *err)
{
    checker c;
    const json_t *layers;
    const json_t *flops;
    int rc;
    checker_init(&c, where, err);
    c.display_text = display_text;
    if (!json_is_object(report)) {
        return chk_fail(&c, "an AnalysisReport is a JSON object");
    }
    if ((rc = chk_data(&c, report)) != TS_OK
        || (rc = chk_schema_version(&c, report)) != TS_OK) {
        return rc;
    }
    OPTIONAL_MEMBER(&c, report, "context", context_check);
    OPTIONAL_MEMBER(&c, report, "inputs", inputs_check);
    OPTIONAL_MEMBER(&c, report, "diagnostics", diagnostics_check);
    layers = json_object_get(report, "layers");
    push_key(&c, "layers");
    if ((rc = chk_list(&c, layers)) != TS_OK) {
        return rc;
    }
    for (size_t k = 0; k < json_array_size(layers); k++) {
        size_t saved = push_index(&c, k);
        if ((rc = layer_check(&c, json_array_get(layers, k))) != TS_OK) {
            return rc;
        }
        pop(&c, saved);
    }
    pop(&c, 0);
    push_key(&c, "totals");
    if ((rc = chk_metrics(&c, json_object_get(report, "totals"))) != TS_OK) {
        return rc;
    }
    pop(&c, 0);
    flops = json_object_get(report, "operator_flops");
    if (flops != NULL) {
        const json_t *total = json_object_get(
            json_object_get(report, "totals"), "operator_flops");
        push_key(&c, "operator_flops");
        if ((rc = flop_report_check(&c, flops)) != TS_OK) {
            return rc;
        }
        pop(&c, 0);
        if (total != NULL
            && !ts_json_equal(total, json_object_get(flops, "total"))) {
            push_key(&c, "totals");
            push_key(&c, "operator_flops");
            return chk_fail(&c, "must match operator_flops.total");
        }
    }
    return calls_check(&c, layers);
}

int
ts_flop_report_check(const json_t *flops, const char *where, ts_error *err)
{
    checker c;
    checker_init(&c, where, err);
    return flop_report_check(&c, flops);
}

int
ts_analysis_report_check(const json_t *report,
                         const char *where,
                         ts_error *err)
{
    return report_check(report, where, false, err);
}

int
ts_analysis_report_check_display(const json_t *report,
                                 const char *where,
                                 ts_error *err)
{
    return report_check(report, where, true, err);
}
