/* Reports of several ranks (gather.h): the shape each rank posts before the
 * reports travel, the check that the ranks agree, and the GatheredReport:
 * for every metric, the per-rank values with min, median, max (and the rank
 * of each) and the sum over the ranks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/gather.h"
#include "torchscan/report_check.h"

/* ---- the shape of a report ---------------------------------------------- */

static const char *
report_kind(const json_t *report)
{
    if (!json_is_object(report)) {
        return NULL;
    }
    if (json_is_array(json_object_get(report, "layers"))) {
        return "AnalysisReport";
    }
    if (json_is_object(json_object_get(report, "measurement"))) {
        return "BenchmarkReport";
    }
    if (json_is_object(json_object_get(report, "by_operator"))
        && json_is_object(json_object_get(report, "total"))) {
        return "FlopReport";
    }
    return NULL;
}

/* FNV-1a, 64 bits, over a canonical text: fields end with a unit
 * separator so that ("ab", "c") and ("a", "bc") differ. */
typedef struct digest {
    uint64_t h;
} digest;

static void
digest_bytes(digest *d, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        d->h ^= (unsigned char)s[i];
        d->h *= 0x100000001b3ull;
    }
}

static void
digest_str(digest *d, const char *s)
{
    digest_bytes(d, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
    digest_bytes(d, "\x1f", 1);
}

static void
digest_int(digest *d, json_int_t v)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)v);
    digest_str(d, text);
}

static json_t *
digest_text(const digest *d)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)d->h);
    return json_string(hex);
}

/* A JSON value's canonical text (sorted keys, compact) into the digest.
 * TS_OK or TS_ENOMEM. */
static int
digest_json(digest *d, const json_t *value)
{
    char *text = json_dumps(value,
                            JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY
                                | JSON_REAL_PRECISION(17));
    if (text == NULL) {
        return TS_ENOMEM;
    }
    digest_str(d, text);
    free(text);
    return TS_OK;
}

/* A metric's name, unit, scope and method. */
static void
digest_metric(digest *d, const char *name, const json_t *metric)
{
    digest_str(d, name);
    digest_str(d, json_string_value(json_object_get(metric, "unit")));
    digest_str(d, json_string_value(json_object_get(metric, "scope")));
    digest_str(d, json_string_value(json_object_get(metric, "method")));
}

static int
compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every MetricResult of a {name: MetricResult} object, by name. */
static void
digest_metrics(digest *d, const char *prefix, const json_t *metrics)
{
    const char **names;
    size_t n = json_object_size(metrics), k = 0;
    const char *key;
    json_t *value;
    if (n == 0) {
        return;
    }
    names = malloc(n * sizeof *names);
    if (names == NULL) {
        digest_str(d, "?"); /* the shape still differs from a good one */
        return;
    }
    json_object_foreach((json_t *)metrics, key, value)
    {
        names[k++] = key;
    }
    qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; i < n; i++) {
        digest_str(d, prefix);
        digest_metric(d, names[i], json_object_get(metrics, names[i]));
    }
    free(names);
}

/* Checks the MetricResults of a {name: MetricResult} object. */
static int
check_metrics(const json_t *metrics, const char *what, ts_error *err)
{
    const char *key;
    json_t *value;
    char where[256];
    if (!json_is_object(metrics)) {
        return ts_error_set(
            err, TS_EFORMAT, "report: %s is not an object", what);
    }
    json_object_foreach((json_t *)metrics, key, value)
    {
        int rc;
        snprintf(where, sizeof where, "report: %s.%s", what, key);
        if ((rc = ts_metric_result_check(value, where, err)) != TS_OK) {
            return rc;
        }
    }
    return TS_OK;
}

/* The FlopReport fields a gathered report reads: total, by_operator counts,
 * collectives, collective_bytes. */
static int
check_flop_report(const json_t *flops, const char *what, ts_error *err)
{
    char where[128];
    const json_t *by_op = json_object_get(flops, "by_operator");
    const json_t *moved = json_object_get(flops, "collectives");
    const char *key;
    json_t *value;
    int rc;
    snprintf(where, sizeof where, "report: %s.total", what);
    if ((rc = ts_metric_result_check(
             json_object_get(flops, "total"), where, err))
        != TS_OK) {
        return rc;
    }
    if (!json_is_object(by_op)) {
        return ts_error_set(
            err, TS_EFORMAT, "report: %s.by_operator is not an object", what);
    }
    json_object_foreach((json_t *)by_op, key, value)
    {
        if (!json_is_integer(value)) {
            return ts_error_set(err,
                                TS_EFORMAT,
                                "report: %s.by_operator.%s is not an int",
                                what,
                                key);
        }
    }
    if (moved != NULL) {
        json_object_foreach((json_t *)moved, key, value)
        {
            if (!json_is_integer(json_object_get(value, "bytes_moved"))) {
                return ts_error_set(
                    err,
                    TS_EFORMAT,
                    "report: %s.collectives.%s.bytes_moved is not an int",
                    what,
                    key);
            }
        }
    }
    if (json_object_get(flops, "collective_bytes") != NULL) {
        snprintf(where, sizeof where, "report: %s.collective_bytes", what);
        return ts_metric_result_check(
            json_object_get(flops, "collective_bytes"), where, err);
    }
    return TS_OK;
}

/* Validates a report of `kind` before it is gathered. */
static int
check_report(const json_t *report, const char *kind, ts_error *err)
{
    const json_t *flops = json_object_get(report, "operator_flops");
    int rc;
    if (strcmp(kind, "AnalysisReport") == 0) {
        rc = ts_analysis_report_check(report, "report", err);
        if (rc == TS_OK && flops != NULL) {
            rc = check_flop_report(flops, "operator_flops", err);
        }
        return rc;
    }
    if (!json_is_integer(json_object_get(report, "schema_version"))
        || json_integer_value(json_object_get(report, "schema_version"))
               != 1) {
        return ts_error_set(
            err, TS_EFORMAT, "report: schema_version must be 1");
    }
    if (strcmp(kind, "FlopReport") == 0) {
        return check_flop_report(report, "report", err);
    }
    rc = check_metrics(json_object_get(report, "totals"), "totals", err);
    if (rc == TS_OK && flops != NULL) {
        rc = check_flop_report(flops, "operator_flops", err);
    }
    return rc;
}

/* The model: its type and each layer call's identity and global counts. */
static void
digest_layers(digest *model, digest *metrics, const json_t *report)
{
    const json_t *layers = json_object_get(report, "layers");
    size_t i;
    json_t *layer;
    digest_str(model,
               json_string_value(json_object_get(
                   json_object_get(report, "context"), "model_type")));
    json_array_foreach((json_t *)layers, i, layer)
    {
        const json_t *params = json_object_get(layer, "parameters");
        const json_t *buffers = json_object_get(layer, "buffers");
        const char *path = json_string_value(json_object_get(layer, "path"));
        char prefix[64];
        digest_str(model, path);
        digest_int(model,
                   json_integer_value(json_object_get(layer, "call_index")));
        digest_str(model, json_string_value(json_object_get(layer, "type")));
        digest_int(model,
                   json_integer_value(json_object_get(params, "trainable")));
        digest_int(model,
                   json_integer_value(json_object_get(params, "frozen")));
        digest_int(model,
                   json_integer_value(json_object_get(buffers, "elements")));
        snprintf(prefix, sizeof prefix, "layer %zu", i);
        digest_metrics(metrics, prefix, json_object_get(layer, "metrics"));
    }
}

json_t *
ts_gather_shape(const json_t *report, ts_error *err)
{
    const char *kind = report_kind(report);
    const json_t *inputs, *flops;
    digest model = {0xcbf29ce484222325ull}, input = {0xcbf29ce484222325ull};
    digest metrics = {0xcbf29ce484222325ull};
    json_t *shape;
    if (kind == NULL) {
        ts_error_set(err,
                     TS_EINVAL,
                     "report must be an AnalysisReport (crawl_module), a "
                     "FlopReport (measure_flops) or a BenchmarkReport "
                     "(measure_latency, measure_workload)");
        return NULL;
    }
    if (check_report(report, kind, err) != TS_OK) {
        return NULL;
    }
    inputs = json_object_get(report, "inputs");
    flops = strcmp(kind, "FlopReport") == 0
                ? report
                : json_object_get(report, "operator_flops");
    digest_str(&metrics, kind);
    digest_metrics(&metrics, "totals", json_object_get(report, "totals"));
    if (flops != NULL) {
        digest_str(&metrics, "operator_flops");
        digest_metric(&metrics, "total", json_object_get(flops, "total"));
    }
    if (strcmp(kind, "AnalysisReport") == 0) {
        digest_layers(&model, &metrics, report);
    }
    if (inputs != NULL && digest_json(&input, inputs) != TS_OK) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    shape = json_pack("{s:s, s:o, s:o, s:o}",
                      "kind",
                      kind,
                      "layers",
                      strcmp(kind, "AnalysisReport") == 0 ? digest_text(&model)
                                                          : json_null(),
                      "inputs",
                      inputs != NULL ? digest_text(&input) : json_null(),
                      "metrics",
                      digest_text(&metrics));
    if (shape == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    return shape;
}

/* ---- the ranks agree ---------------------------------------------------- */

static json_int_t
rank_at(const json_t *ranks, size_t i)
{
    const json_t *r = json_array_get(ranks, i);
    return json_is_integer(r) ? json_integer_value(r) : (json_int_t)i;
}

/* The first field on which a shape differs from the reference one, with
 * its message (two ranks to fill in); NULL when they agree. */
static const char *
shape_difference(const json_t *shape, const json_t *first)
{
    static const struct {
        const char *field, *text;
    } fields[] = {
        {"layers",
         "rank %lld's layer calls (module paths, types and parameter counts) "
         "differ from rank %lld's: a different model?"},
        {"inputs",
         "rank %lld's inputs (shapes, dtypes, structure) differ from rank "
         "%lld's"},
        {"metrics",
         "rank %lld's metrics differ from rank %lld's in name, unit, scope or "
         "method"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (!json_equal(json_object_get(shape, fields[i].field),
                        json_object_get(first, fields[i].field))) {
            return fields[i].text;
        }
    }
    return NULL;
}

static const char *
article(const char *kind)
{
    return kind[0] == 'A' ? "an" : "a";
}

int
ts_gather_check(const json_t *statuses,
                const json_t *ranks,
                char *type,
                size_t size,
                ts_error *err)
{
    size_t n = json_array_size(statuses);
    const json_t *first = NULL, *first_dst = NULL;
    snprintf(type, size, "%s", "ValueError");
    if (!json_is_array(statuses) || n == 0) {
        return ts_error_set(
            err, TS_EFORMAT, "statuses must be a non-empty list");
    }
    /* a rank that failed first: its error is everyone's */
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(statuses, i);
        const json_t *error = json_object_get(s, "error");
        if (!json_is_object(s)
            || (error == NULL && !json_is_object(json_object_get(s, "ok")))) {
            return ts_error_set(err,
                                TS_EFORMAT,
                                "the status of rank %lld is not a "
                                "gather_reports status",
                                (long long)rank_at(ranks, i));
        }
        if (error != NULL) {
            const char *t = json_string_value(json_object_get(error, "type"));
            const char *m =
                json_string_value(json_object_get(error, "message"));
            snprintf(type,
                     size,
                     "%s",
                     t != NULL
                             && (strcmp(t, "TypeError") == 0
                                 || strcmp(t, "ValueError") == 0)
                         ? t
                         : "RuntimeError");
            return ts_error_set(err,
                                TS_EINVAL,
                                "gather_reports failed on rank %lld: %s: %s",
                                (long long)rank_at(ranks, i),
                                t != NULL ? t : "Error",
                                m != NULL ? m : "");
        }
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(statuses, i);
        const json_t *shape = json_object_get(s, "ok");
        const json_t *dst = json_object_get(s, "dst");
        const char *kind = json_string_value(json_object_get(shape, "kind"));
        const char *first_kind;
        const char *differs;
        long long rank = (long long)rank_at(ranks, i);
        long long first_rank = (long long)rank_at(ranks, 0);
        if (first == NULL) {
            first = shape;
            first_dst = dst;
            continue;
        }
        if (!json_equal(dst, first_dst)) {
            return ts_error_set(
                err,
                TS_EINVAL,
                "gather_reports: the ranks disagree on dst: rank %lld passed "
                "dst=%lld, rank %lld dst=%lld",
                rank,
                (long long)json_integer_value(dst),
                first_rank,
                (long long)json_integer_value(first_dst));
        }
        first_kind = json_string_value(json_object_get(first, "kind"));
        if (kind == NULL || first_kind == NULL
            || strcmp(kind, first_kind) != 0) {
            kind = kind != NULL ? kind : "?";
            first_kind = first_kind != NULL ? first_kind : "?";
            return ts_error_set(err,
                                TS_EINVAL,
                                "gather_reports: the ranks' reports disagree "
                                "in shape: rank %lld passed %s %s, rank %lld "
                                "%s %s",
                                rank,
                                article(kind),
                                kind,
                                first_rank,
                                article(first_kind),
                                first_kind);
        }
        differs = shape_difference(shape, first);
        if (differs != NULL) {
            char text[256];
            snprintf(text, sizeof text, differs, rank, first_rank);
            return ts_error_set(err,
                                TS_EINVAL,
                                "gather_reports: the ranks' reports disagree "
                                "in shape: %s",
                                text);
        }
    }
    return TS_OK;
}

/* ---- the gathered report ------------------------------------------------ */

typedef struct ranked {
    double v;
    const json_t *num; /* the rank's value, as it was */
    size_t pos;        /* position in the group */
} ranked;

static int
compare_ranked(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->v != y->v) {
        return x->v < y->v ? -1 : 1;
    }
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

static json_t *
value_at(const ranked *r, const json_t *ranks)
{
    return json_pack("{s:O, s:I}",
                     "value",
                     (json_t *)r->num,
                     "rank",
                     (json_int_t)rank_at(ranks, r->pos));
}

/* Units whose sum over the ranks means something (counts), unlike
 * seconds and rates. */
static bool
summable(const char *unit)
{
    size_t n = strlen(unit);
    return strcmp(unit, "seconds") != 0
           && !(n >= 2 && strcmp(unit + n - 2, "/s") == 0);
}

/* The sum of the values: exact while they are integers that fit, a real
 * otherwise. NULL on allocation failure. */
static json_t *
sum_of(const ranked *values, size_t n)
{
    int64_t total = 0;
    double real = 0.0;
    bool exact = true;
    for (size_t i = 0; i < n; i++) {
        real += values[i].v;
        exact = exact && json_is_integer(values[i].num)
                && ts_add(total, json_integer_value(values[i].num), &total);
    }
    return exact ? json_integer(total) : json_real(real);
}

/* RankStats of one metric over the ranks; `metrics[i]` is rank i's
 * MetricResult (NULL: the rank has none, read as unavailable). */
static json_t *
rank_stats(const json_t *const *metrics,
           size_t n,
           const json_t *ranks,
           const char *where,
           ts_error *err)
{
    static const char *const fields[] = {"unit", "scope", "method"};
    const json_t *first = NULL;
    json_t *out = NULL, *values = NULL, *known = NULL;
    ranked *sorted = NULL;
    size_t complete = 0, with_number = 0;
    for (size_t i = 0; i < n && first == NULL; i++) {
        first = metrics[i];
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t f = 0; metrics[i] != NULL && f < 3; f++) {
            if (!json_equal(json_object_get(metrics[i], fields[f]),
                            json_object_get(first, fields[f]))) {
                ts_error_set(err,
                             TS_EINVAL,
                             "gather_reports: metric '%s' has incompatible %s "
                             "across ranks",
                             where,
                             fields[f]);
                return NULL;
            }
        }
    }
    values = json_array();
    known = json_array();
    sorted = calloc(n ? n : 1, sizeof *sorted);
    if (values == NULL || known == NULL || sorted == NULL) {
        goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_object_get(metrics[i], "value");
        const json_t *k = json_object_get(metrics[i], "known_value");
        int status = metrics[i] != NULL ? ts_metric_status(metrics[i]) : -1;
        if (json_array_append(
                values, v && json_is_number(v) ? (json_t *)v : json_null())
            || json_array_append(
                known, k && json_is_number(k) ? (json_t *)k : json_null())) {
            goto nomem;
        }
        with_number += k != NULL && json_is_number(k);
        if (status == TS_COMPLETE && v != NULL && json_is_number(v)) {
            sorted[complete].v = json_number_value(v);
            sorted[complete].num = v;
            sorted[complete].pos = i;
            complete++;
        }
    }
    out = json_pack(
        "{s:O, s:O, s:O, s:s, s:o, s:o}",
        "unit",
        json_object_get(first, "unit"),
        "scope",
        json_object_get(first, "scope"),
        "method",
        json_object_get(first, "method"),
        "status",
        complete == n ? "complete" : (with_number ? "partial" : "unavailable"),
        "values",
        values,
        "known_values",
        known);
    values = known = NULL;
    if (out == NULL) {
        goto nomem;
    }
    if (complete == n && n > 0) {
        const char *unit = json_string_value(json_object_get(first, "unit"));
        const ranked *least = &sorted[0], *most = &sorted[0];
        for (size_t i = 1; i < n; i++) {
            /* strict: among equal values, the lowest rank */
            least = sorted[i].v < least->v ? &sorted[i] : least;
            most = sorted[i].v > most->v ? &sorted[i] : most;
        }
        json_t *lo = value_at(least, ranks), *hi = value_at(most, ranks);
        qsort(sorted, n, sizeof *sorted, compare_ranked);
        if (json_object_set_new(out, "min", lo)
            || json_object_set_new(
                out, "median", value_at(&sorted[(n - 1) / 2], ranks))
            || json_object_set_new(out, "max", hi)
            || json_object_set_new(out,
                                   "sum",
                                   unit != NULL && summable(unit)
                                       ? sum_of(sorted, n)
                                       : json_null())) {
            goto nomem;
        }
    }
    else if (json_object_set_new(out, "min", json_null())
             || json_object_set_new(out, "median", json_null())
             || json_object_set_new(out, "max", json_null())
             || json_object_set_new(out, "sum", json_null())) {
        goto nomem;
    }
    free(sorted);
    return out;
nomem:
    ts_error_set(err, TS_ENOMEM, "out of memory");
    json_decref(values);
    json_decref(known);
    json_decref(out);
    free(sorted);
    return NULL;
}

/* The sorted union of the keys of `objects[i]` (each an object or NULL),
 * as a JSON array of strings. */
static json_t *
key_union(const json_t *const *objects, size_t n)
{
    json_t *seen = json_object(), *keys = json_array();
    const char *key;
    json_t *value;
    for (size_t i = 0; seen != NULL && keys != NULL && i < n; i++) {
        json_object_foreach((json_t *)objects[i], key, value)
        {
            if (json_object_get(seen, key) == NULL
                && (json_object_set(seen, key, json_true())
                    || json_array_append_new(keys, json_string(key)))) {
                json_decref(keys);
                keys = NULL;
                break;
            }
        }
    }
    json_decref(seen);
    if (keys != NULL && json_array_size(keys) > 1) {
        /* an insertion sort of the few names: operators, metrics */
        for (size_t i = 1; i < json_array_size(keys); i++) {
            for (size_t j = i;
                 j > 0
                 && strcmp(json_string_value(json_array_get(keys, j - 1)),
                           json_string_value(json_array_get(keys, j)))
                        > 0;
                 j--) {
                json_t *a = json_incref(json_array_get(keys, j - 1));
                json_array_set(keys, j - 1, json_array_get(keys, j));
                json_array_set_new(keys, j, a);
            }
        }
    }
    return keys;
}

/* {name: RankStats} of the ranks' {name: MetricResult} objects. */
static json_t *
stats_object(const json_t *const *objects,
             size_t n,
             const json_t *ranks,
             const char *what,
             ts_error *err)
{
    json_t *keys = key_union(objects, n), *out = json_object();
    const json_t **metrics = calloc(n ? n : 1, sizeof *metrics);
    size_t k;
    json_t *name;
    char where[512];
    if (keys == NULL || out == NULL || metrics == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        goto error;
    }
    json_array_foreach(keys, k, name)
    {
        const char *key = json_string_value(name);
        json_t *stats;
        for (size_t i = 0; i < n; i++) {
            metrics[i] = json_object_get(objects[i], key);
        }
        snprintf(where, sizeof where, "%s.%s", what, key);
        stats = rank_stats(metrics, n, ranks, where, err);
        if (stats == NULL || json_object_set_new(out, key, stats)) {
            if (stats != NULL) {
                ts_error_set(err, TS_ENOMEM, "out of memory");
            }
            goto error;
        }
    }
    json_decref(keys);
    free(metrics);
    return out;
error:
    json_decref(keys);
    json_decref(out);
    free(metrics);
    return NULL;
}

/* {name: RankStats} of per-operator counts ({op: int}, or {op: {field:
 * int}} with `field`): complete counts, 0 where a rank has none. */
static json_t *
stats_counts(const json_t *const *objects,
             size_t n,
             const char *field,
             const char *unit,
             const char *method,
             const json_t *ranks,
             const char *what,
             ts_error *err)
{
    json_t **wrapped = calloc(n ? n : 1, sizeof *wrapped);
    json_t *out = NULL;
    const char *key;
    json_t *value;
    bool failed = wrapped == NULL;
    for (size_t i = 0; !failed && i < n; i++) {
        wrapped[i] = json_object();
        failed = wrapped[i] == NULL;
    }
    /* every rank's counts as complete MetricResults, missing ones as 0 */
    for (size_t i = 0; !failed && i < n; i++) {
        json_object_foreach((json_t *)objects[i], key, value)
        {
            for (size_t j = 0; !failed && j < n; j++) {
                const json_t *own = json_object_get(objects[j], key);
                json_int_t count = json_integer_value(
                    field != NULL ? json_object_get(own, field) : own);
                if (json_object_get(wrapped[j], key) != NULL) {
                    continue;
                }
                failed = json_object_set_new(
                    wrapped[j],
                    key,
                    ts_metric_new(
                        TS_COMPLETE, ts_int(count), unit, "workload", method));
            }
        }
    }
    if (!failed) {
        out =
            stats_object((const json_t *const *)wrapped, n, ranks, what, err);
    }
    else {
        ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    for (size_t i = 0; wrapped != NULL && i < n; i++) {
        json_decref(wrapped[i]);
    }
    free(wrapped);
    return out;
}

/* "operator_flops": total, collective_bytes, by_operator, collectives. */
static json_t *
gather_flops(const json_t *const *flops,
             size_t n,
             const json_t *ranks,
             ts_error *err)
{
    const json_t **part = calloc(n ? n : 1, sizeof *part);
    const char *method = json_string_value(
        json_object_get(json_object_get(flops[0], "total"), "method"));
    json_t *out = json_object(), *item = NULL;
    bool moved = false;
    if (part == NULL || out == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        goto error;
    }
    for (size_t i = 0; i < n; i++) {
        moved |= json_object_get(flops[i], "collective_bytes") != NULL;
    }
    /* total (and collective_bytes) as metrics of the FlopReports */
    for (int f = 0; f < 2; f++) {
        const char *name = f == 0 ? "total" : "collective_bytes";
        const json_t **metrics = part;
        if (f == 1 && !moved) {
            break;
        }
        for (size_t i = 0; i < n; i++) {
            metrics[i] = json_object_get(flops[i], name);
        }
        item = rank_stats(metrics, n, ranks, name, err);
        if (item == NULL || json_object_set_new(out, name, item)) {
            goto error;
        }
    }
    for (size_t i = 0; i < n; i++) {
        part[i] = json_object_get(flops[i], "by_operator");
    }
    item = stats_counts(part,
                        n,
                        NULL,
                        "FLOPs",
                        method != NULL ? method : "",
                        ranks,
                        "operator_flops.by_operator",
                        err);
    if (item == NULL || json_object_set_new(out, "by_operator", item)) {
        goto error;
    }
    if (moved) {
        for (size_t i = 0; i < n; i++) {
            part[i] = json_object_get(flops[i], "collectives");
        }
        item = stats_counts(part,
                            n,
                            "bytes_moved",
                            "bytes",
                            "torchscan_collective_bytes_v1",
                            ranks,
                            "operator_flops.collectives",
                            err);
        if (item == NULL || json_object_set_new(out, "collectives", item)) {
            goto error;
        }
    }
    free(part);
    return out;
error:
    free(part);
    json_decref(out);
    return NULL;
}

/* "layers": each layer call's metrics over the ranks (the ranks agree on
 * the layer calls: ts_gather_check compared their digests). */
static json_t *
gather_layers(const json_t *reports, const json_t *ranks, ts_error *err)
{
    size_t n = json_array_size(reports);
    const json_t *layers0 =
        json_object_get(json_array_get(reports, 0), "layers");
    const json_t **metrics = calloc(n ? n : 1, sizeof *metrics);
    json_t *out = json_array();
    char what[512];
    if (metrics == NULL || out == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        goto error;
    }
    for (size_t l = 0; l < json_array_size(layers0); l++) {
        const json_t *layer = json_array_get(layers0, l);
        json_t *stats, *row;
        for (size_t i = 0; i < n; i++) {
            const json_t *own = json_array_get(
                json_object_get(json_array_get(reports, i), "layers"), l);
            metrics[i] = json_object_get(own, "metrics");
        }
        snprintf(what,
                 sizeof what,
                 "layers[%zu](%s).metrics",
                 l,
                 json_string_value(json_object_get(layer, "path")));
        stats = stats_object(metrics, n, ranks, what, err);
        if (stats == NULL) {
            goto error;
        }
        row = json_pack("{s:O, s:O, s:o}",
                        "path",
                        json_object_get(layer, "path"),
                        "call_index",
                        json_object_get(layer, "call_index"),
                        "metrics",
                        stats);
        if (row == NULL || json_array_append_new(out, row)) {
            ts_error_set(err, TS_ENOMEM, "out of memory");
            goto error;
        }
    }
    free(metrics);
    return out;
error:
    free(metrics);
    json_decref(out);
    return NULL;
}

json_t *
ts_gather_reports(const json_t *reports,
                  const json_t *ranks,
                  bool with_reports,
                  ts_error *err)
{
    size_t n = json_array_size(reports);
    const json_t **parts = NULL;
    const char *kind = report_kind(json_array_get(reports, 0));
    json_t *out = NULL, *item;
    bool flops_everywhere = true;
    if (!json_is_array(reports) || n == 0 || kind == NULL) {
        ts_error_set(
            err, TS_EINVAL, "reports must be a non-empty list of reports");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const char *own = report_kind(json_array_get(reports, i));
        if (own == NULL || strcmp(own, kind) != 0) {
            ts_error_set(err,
                         TS_EINVAL,
                         "gather_reports: the reports disagree in kind (rank "
                         "%lld)",
                         (long long)rank_at(ranks, i));
            return NULL;
        }
    }
    parts = calloc(n, sizeof *parts);
    out = json_pack("{s:i, s:{s:s, s:s, s:I, s:O}}",
                    "schema_version",
                    1,
                    "context",
                    "method",
                    TS_GATHER_METHOD,
                    "report_type",
                    kind,
                    "world_size",
                    (json_int_t)n,
                    "ranks",
                    (json_t *)ranks);
    if (out != NULL && with_reports
        && json_object_set(out, "reports", (json_t *)reports)) {
        json_decref(out);
        out = NULL;
    }
    if (parts == NULL || out == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        goto error;
    }
    if (strcmp(kind, "FlopReport") != 0) {
        for (size_t i = 0; i < n; i++) {
            parts[i] = json_object_get(json_array_get(reports, i), "totals");
        }
        item = stats_object(parts, n, ranks, "totals", err);
        if (item == NULL || json_object_set_new(out, "totals", item)) {
            goto error;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(reports, i);
        parts[i] = strcmp(kind, "FlopReport") == 0
                       ? r
                       : json_object_get(r, "operator_flops");
        flops_everywhere &= parts[i] != NULL;
    }
    if (flops_everywhere) {
        item = gather_flops(parts, n, ranks, err);
        if (item == NULL || json_object_set_new(out, "operator_flops", item)) {
            goto error;
        }
    }
    if (strcmp(kind, "AnalysisReport") == 0) {
        item = gather_layers(reports, ranks, err);
        if (item == NULL || json_object_set_new(out, "layers", item)) {
            goto error;
        }
    }
    free(parts);
    return out;
error:
    if (err->code == TS_OK) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    free(parts);
    json_decref(out);
    return NULL;
}
