/* Reports of several ranks (gather.h): the shape each rank posts before the
 * reports travel, the check that the ranks agree, and the GatheredReport:
 * for every metric, the per-rank values with min, median, max (and the rank
 * of each) and the sum over the ranks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/emit.h"
#include "torchscan/gather.h"
#include "torchscan/op_formulas.h"
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

static int
compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A JSON value into the digest, canonically: a tag per type, objects by
 * sorted key. Written here, not by json_dumps: jansson 2.14's dumper
 * drops bytes of a string whose buffer cannot grow and still returns a
 * text (tests/c/test_alloc_failures.c, "gather shape"), which made a
 * failed allocation a silently different shape. TS_OK or TS_ENOMEM. */
static int
digest_json(digest *d, const json_t *value)
{
    char text[40];
    switch (json_typeof(value)) {
        case JSON_OBJECT: {
            size_t n = json_object_size(value), k = 0;
            const char **names;
            const char *key;
            json_t *member;
            int rc = TS_OK;
            digest_str(d, "{");
            if (n == 0) {
                break;
            }
            names = malloc(n * sizeof *names);
            if (names == NULL) {
                return TS_ENOMEM;
            }
            json_object_foreach((json_t *)value, key, member)
            {
                names[k++] = key;
            }
            qsort(names, n, sizeof *names, compare_names);
            for (size_t i = 0; rc == TS_OK && i < n; i++) {
                digest_str(d, names[i]);
                rc = digest_json(d, json_object_get(value, names[i]));
            }
            free(names);
            if (rc != TS_OK) {
                return rc;
            }
            break;
        }
        case JSON_ARRAY: {
            size_t i;
            json_t *item;
            digest_str(d, "[");
            json_array_foreach((json_t *)value, i, item)
            {
                if (digest_json(d, item) != TS_OK) {
                    return TS_ENOMEM;
                }
            }
            break;
        }
        case JSON_STRING:
            digest_str(d, "s");
            digest_bytes(
                d, json_string_value(value), json_string_length(value));
            digest_bytes(d, "\x1f", 1);
            return TS_OK;
        case JSON_INTEGER:
            digest_str(d, "i");
            digest_int(d, json_integer_value(value));
            return TS_OK;
        case JSON_REAL:
            snprintf(text, sizeof text, "r%.17g", json_real_value(value));
            digest_str(d, text);
            return TS_OK;
        case JSON_TRUE:
            digest_str(d, "t");
            return TS_OK;
        case JSON_FALSE:
            digest_str(d, "f");
            return TS_OK;
        default:
            digest_str(d, "n");
            return TS_OK;
    }
    digest_str(d, "end"); /* of an object or array */
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

/* Every MetricResult of a {name: MetricResult} object, by name. TS_OK or
 * TS_ENOMEM. */
static int
digest_metrics(digest *d, const char *prefix, const json_t *metrics)
{
    const char **names;
    size_t n = json_object_size(metrics), k = 0;
    const char *key;
    json_t *value;
    if (n == 0) {
        return TS_OK;
    }
    names = malloc(n * sizeof *names);
    if (names == NULL) {
        return TS_ENOMEM;
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
    return TS_OK;
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

/* The model: its type and each layer call's identity and global counts.
 * TS_OK or TS_ENOMEM. */
static int
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
        if (digest_metrics(metrics, prefix, json_object_get(layer, "metrics"))
            != TS_OK) {
            return TS_ENOMEM;
        }
    }
    return TS_OK;
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
    if (digest_metrics(&metrics, "totals", json_object_get(report, "totals"))
        != TS_OK) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    if (flops != NULL) {
        digest_str(&metrics, "operator_flops");
        digest_metric(&metrics, "total", json_object_get(flops, "total"));
    }
    if ((strcmp(kind, "AnalysisReport") == 0
         && digest_layers(&model, &metrics, report) != TS_OK)
        || (inputs != NULL && digest_json(&input, inputs) != TS_OK)) {
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

/* The GatheredReport is written through an emitter: straight into Python
 * objects for the binding (a 385-row report gives ~800 RankStats; a
 * jansson tree in between doubled the time), into a jansson tree for C
 * callers (ts_gather_reports). */

#define TRY(expr)          \
    do {                   \
        if ((expr) != 0) { \
            return -1;     \
        }                  \
    } while (0)

typedef struct gather_ctx {
    const ts_emitter *e;
    const json_t *ranks;
    ts_error *err;
    const json_t *zero; /* the count of a rank that has none */
} gather_ctx;

/* One rank's metric, as RankStats reads it. */
typedef struct rank_metric {
    int status;          /* TS_COMPLETE, ..., or -1 (the rank has none) */
    const json_t *value; /* a number when complete */
    const json_t *known; /* a number unless unavailable */
} rank_metric;

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

static int
emit_number_of(const ts_emitter *e, const json_t *num)
{
    if (json_is_integer(num)) {
        return e->integer(e->ctx, json_integer_value(num));
    }
    return num != NULL && json_is_real(num)
               ? e->real(e->ctx, json_real_value(num))
               : e->null(e->ctx);
}

/* {value, rank} of one rank's value. */
static int
emit_ranked(const gather_ctx *g, const char *key, const ranked *r)
{
    const ts_emitter *e = g->e;
    TRY(e->key(e->ctx, key));
    TRY(e->begin_object(e->ctx));
    TRY(e->key(e->ctx, "value"));
    TRY(emit_number_of(e, r->num));
    TRY(e->key(e->ctx, "rank"));
    TRY(e->integer(e->ctx, rank_at(g->ranks, r->pos)));
    return e->end_object(e->ctx);
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
 * otherwise. */
static int
emit_sum(const ts_emitter *e, const ranked *values, size_t n)
{
    int64_t total = 0;
    double real = 0.0;
    bool exact = true;
    for (size_t i = 0; i < n; i++) {
        real += values[i].v;
        exact = exact && json_is_integer(values[i].num)
                && ts_add(total, json_integer_value(values[i].num), &total);
    }
    return exact ? e->integer(e->ctx, total) : e->real(e->ctx, real);
}

/* One RankStats (gather.h). `sorted` is scratch room for n entries. */
static int
emit_stats(const gather_ctx *g,
           const rank_metric *m,
           size_t n,
           const char *unit,
           const char *scope,
           const char *method,
           ranked *sorted)
{
    const ts_emitter *e = g->e;
    size_t complete = 0, with_number = 0;
    for (size_t i = 0; i < n; i++) {
        with_number += m[i].known != NULL && json_is_number(m[i].known);
        if (m[i].status == TS_COMPLETE && m[i].value != NULL
            && json_is_number(m[i].value)) {
            sorted[complete].v = json_number_value(m[i].value);
            sorted[complete].num = m[i].value;
            sorted[complete].pos = i;
            complete++;
        }
    }
    TRY(e->begin_object(e->ctx));
    TRY(e->key(e->ctx, "unit"));
    TRY(e->string(e->ctx, unit));
    TRY(e->key(e->ctx, "scope"));
    TRY(e->string(e->ctx, scope));
    TRY(e->key(e->ctx, "method"));
    TRY(e->string(e->ctx, method));
    TRY(e->key(e->ctx, "status"));
    TRY(e->string(e->ctx,
                  complete == n && n > 0
                      ? "complete"
                      : (with_number ? "partial" : "unavailable")));
    for (int k = 0; k < 2; k++) {
        TRY(e->key(e->ctx, k == 0 ? "values" : "known_values"));
        TRY(e->begin_array(e->ctx));
        for (size_t i = 0; i < n; i++) {
            const json_t *v =
                k == 0 ? (m[i].status == TS_COMPLETE ? m[i].value : NULL)
                       : m[i].known;
            TRY(v != NULL && json_is_number(v) ? emit_number_of(e, v)
                                               : e->null(e->ctx));
        }
        TRY(e->end_array(e->ctx));
    }
    if (complete == n && n > 0) {
        const ranked *least = &sorted[0], *most = &sorted[0];
        ranked lo, hi;
        for (size_t i = 1; i < n; i++) {
            /* strict: among equal values, the lowest rank */
            least = sorted[i].v < least->v ? &sorted[i] : least;
            most = sorted[i].v > most->v ? &sorted[i] : most;
        }
        lo = *least;
        hi = *most;
        qsort(sorted, n, sizeof *sorted, compare_ranked);
        TRY(emit_ranked(g, "min", &lo));
        TRY(emit_ranked(g, "median", &sorted[(n - 1) / 2]));
        TRY(emit_ranked(g, "max", &hi));
        TRY(e->key(e->ctx, "sum"));
        TRY(summable(unit) ? emit_sum(e, sorted, n) : e->null(e->ctx));
    }
    else {
        static const char *const none[] = {"min", "median", "max", "sum"};
        for (size_t k = 0; k < 4; k++) {
            TRY(e->key(e->ctx, none[k]));
            TRY(e->null(e->ctx));
        }
    }
    return e->end_object(e->ctx);
}

/* The sorted, distinct keys of `objects[i]` (objects or NULL): a malloc'd
 * array of borrowed names (*count of them), or NULL when out of memory
 * (an empty union is a 1-slot array with *count 0). */
static const char **
key_union(const json_t *const *objects, size_t n, size_t *count)
{
    size_t total = 0, k = 0, kept = 0;
    const char **names;
    const char *key;
    json_t *value;
    for (size_t i = 0; i < n; i++) {
        total += json_object_size(objects[i]);
    }
    names = malloc((total ? total : 1) * sizeof *names);
    if (names == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        json_object_foreach((json_t *)objects[i], key, value)
        {
            names[k++] = key;
        }
    }
    qsort(names, k, sizeof *names, compare_names);
    for (size_t i = 0; i < k; i++) {
        if (kept == 0 || strcmp(names[kept - 1], names[i]) != 0) {
            names[kept++] = names[i];
        }
    }
    *count = kept;
    return names;
}

/* Scratch room for one metric over n ranks. */
typedef struct scratch {
    rank_metric *m;
    ranked *sorted;
    const json_t **col; /* each rank's MetricResult of one metric */
} scratch;

static int
scratch_init(scratch *s, size_t n)
{
    s->m = calloc(n ? n : 1, sizeof *s->m);
    s->sorted = calloc(n ? n : 1, sizeof *s->sorted);
    s->col = calloc(n ? n : 1, sizeof *s->col);
    return s->m != NULL && s->sorted != NULL && s->col != NULL ? TS_OK
                                                               : TS_ENOMEM;
}

static void
scratch_clear(scratch *s)
{
    free(s->m);
    free(s->sorted);
    free(s->col);
}

static int
fail(const gather_ctx *g, int code, const char *what, const char *field)
{
    if (code == TS_ENOMEM) {
        ts_error_set(g->err, TS_ENOMEM, "out of memory");
    }
    else {
        ts_error_set(g->err,
                     TS_EINVAL,
                     "gather_reports: metric '%s' has incompatible %s "
                     "across ranks",
                     what,
                     field);
    }
    return -1;
}

/* The RankStats of one metric: sc->col[i] is rank i's MetricResult (NULL:
 * the rank has none, read as unavailable). `what` names it in errors. */
static int
emit_metric_stats(const gather_ctx *g, size_t n, const char *what, scratch *sc)
{
    static const char *const fields[] = {"unit", "scope", "method"};
    const json_t *first = NULL;
    const char *text[3];
    for (size_t i = 0; i < n && first == NULL; i++) {
        first = sc->col[i];
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *metric = sc->col[i];
        for (size_t f = 0; metric != NULL && f < 3; f++) {
            if (!json_equal(json_object_get(metric, fields[f]),
                            json_object_get(first, fields[f]))) {
                return fail(g, TS_EINVAL, what, fields[f]);
            }
        }
        sc->m[i].status = metric != NULL ? ts_metric_status(metric) : -1;
        sc->m[i].value = json_object_get(metric, "value");
        sc->m[i].known = json_object_get(metric, "known_value");
    }
    for (size_t f = 0; f < 3; f++) {
        text[f] = json_string_value(json_object_get(first, fields[f]));
        text[f] = text[f] != NULL ? text[f] : "";
    }
    return emit_stats(g, sc->m, n, text[0], text[1], text[2], sc->sorted);
}

/* {name: RankStats} of the ranks' {name: MetricResult} objects. */
static int
emit_stats_object(const gather_ctx *g,
                  const json_t *const *objects,
                  size_t n,
                  const char *what,
                  scratch *sc)
{
    const ts_emitter *e = g->e;
    size_t count = 0;
    const char **names = key_union(objects, n, &count);
    char where[512];
    int rc;
    if (names == NULL) {
        return fail(g, TS_ENOMEM, what, NULL);
    }
    rc = e->begin_object(e->ctx);
    for (size_t k = 0; rc == 0 && k < count; k++) {
        for (size_t i = 0; i < n; i++) {
            sc->col[i] = json_object_get(objects[i], names[k]);
        }
        snprintf(where, sizeof where, "%s.%s", what, names[k]);
        rc = e->key(e->ctx, names[k]) != 0
                     || emit_metric_stats(g, n, where, sc) != 0
                 ? -1
                 : 0;
    }
    free(names);
    return rc != 0 ? -1 : e->end_object(e->ctx);
}

/* {name: RankStats} of per-operator counts ({op: int}, or {op: {field:
 * int}} with `field`): complete counts, 0 where a rank has none. */
static int
emit_stats_counts(const gather_ctx *g,
                  const json_t *const *objects,
                  size_t n,
                  const char *field,
                  const char *unit,
                  const char *method,
                  scratch *sc)
{
    const ts_emitter *e = g->e;
    size_t count = 0;
    const char **names = key_union(objects, n, &count);
    int rc;
    if (names == NULL) {
        return fail(g, TS_ENOMEM, "", NULL);
    }
    rc = e->begin_object(e->ctx);
    for (size_t k = 0; rc == 0 && k < count; k++) {
        for (size_t i = 0; i < n; i++) {
            const json_t *own = json_object_get(objects[i], names[k]);
            const json_t *v =
                field != NULL ? json_object_get(own, field) : own;
            sc->m[i].status = TS_COMPLETE;
            sc->m[i].value = sc->m[i].known = json_is_integer(v) ? v : g->zero;
        }
        rc = e->key(e->ctx, names[k]) != 0
                     || emit_stats(
                            g, sc->m, n, unit, "workload", method, sc->sorted)
                            != 0
                 ? -1
                 : 0;
    }
    free(names);
    return rc != 0 ? -1 : e->end_object(e->ctx);
}

/* "operator_flops": total, collective_bytes, by_operator, collectives. */
static int
emit_flops(const gather_ctx *g,
           const json_t *const *flops,
           size_t n,
           scratch *sc)
{
    const ts_emitter *e = g->e;
    const json_t **part = calloc(n ? n : 1, sizeof *part);
    const char *method = json_string_value(
        json_object_get(json_object_get(flops[0], "total"), "method"));
    bool moved = false;
    int rc;
    if (part == NULL) {
        return fail(g, TS_ENOMEM, "", NULL);
    }
    for (size_t i = 0; i < n; i++) {
        moved |= json_object_get(flops[i], "collective_bytes") != NULL;
    }
    rc = e->begin_object(e->ctx);
    for (int f = 0; rc == 0 && f < (moved ? 2 : 1); f++) {
        const char *name = f == 0 ? "total" : "collective_bytes";
        for (size_t i = 0; i < n; i++) {
            sc->col[i] = json_object_get(flops[i], name);
        }
        rc =
            e->key(e->ctx, name) != 0 || emit_metric_stats(g, n, name, sc) != 0
                ? -1
                : 0;
    }
    for (size_t i = 0; i < n; i++) {
        part[i] = json_object_get(flops[i], "by_operator");
    }
    if (rc == 0) {
        rc = e->key(e->ctx, "by_operator") != 0
                     || emit_stats_counts(g,
                                          part,
                                          n,
                                          NULL,
                                          "FLOPs",
                                          method != NULL ? method : "",
                                          sc)
                            != 0
                 ? -1
                 : 0;
    }
    if (rc == 0 && moved) {
        for (size_t i = 0; i < n; i++) {
            part[i] = json_object_get(flops[i], "collectives");
        }
        rc = e->key(e->ctx, "collectives") != 0
                     || emit_stats_counts(g,
                                          part,
                                          n,
                                          "bytes_moved",
                                          "bytes",
                                          TS_COLLECTIVE_CONVENTION,
                                          sc)
                            != 0
                 ? -1
                 : 0;
    }
    free(part);
    return rc != 0 ? -1 : e->end_object(e->ctx);
}

/* "layers": each layer call's metrics over the ranks (the ranks agree on
 * the layer calls: ts_gather_check compared their digests). */
static int
emit_layers(const gather_ctx *g, const json_t *reports, scratch *sc)
{
    const ts_emitter *e = g->e;
    size_t n = json_array_size(reports);
    const json_t *layers0 =
        json_object_get(json_array_get(reports, 0), "layers");
    const json_t **metrics = calloc(n ? n : 1, sizeof *metrics);
    char what[512];
    int rc;
    if (metrics == NULL) {
        return fail(g, TS_ENOMEM, "", NULL);
    }
    rc = e->begin_array(e->ctx);
    for (size_t l = 0; rc == 0 && l < json_array_size(layers0); l++) {
        const json_t *layer = json_array_get(layers0, l);
        const char *path = json_string_value(json_object_get(layer, "path"));
        for (size_t i = 0; i < n; i++) {
            const json_t *own = json_array_get(
                json_object_get(json_array_get(reports, i), "layers"), l);
            metrics[i] = json_object_get(own, "metrics");
        }
        snprintf(
            what, sizeof what, "layers[%zu](%s).metrics", l, path ? path : "");
        rc = e->begin_object(e->ctx) != 0 || e->key(e->ctx, "path") != 0
                     || e->string(e->ctx, path != NULL ? path : "") != 0
                     || e->key(e->ctx, "call_index") != 0
                     || e->integer(e->ctx,
                                   json_integer_value(
                                       json_object_get(layer, "call_index")))
                            != 0
                     || e->key(e->ctx, "metrics") != 0
                     || emit_stats_object(g, metrics, n, what, sc) != 0
                     || e->end_object(e->ctx) != 0
                 ? -1
                 : 0;
    }
    free(metrics);
    return rc != 0 ? -1 : e->end_array(e->ctx);
}

int
ts_gather_emit(const json_t *reports,
               const json_t *ranks,
               bool with_reports,
               const ts_emitter *e,
               ts_error *err)
{
    size_t n = json_array_size(reports);
    const json_t **parts = NULL;
    const char *kind = report_kind(json_array_get(reports, 0));
    ts_error own_err;
    gather_ctx g;
    scratch sc = {NULL, NULL, NULL};
    bool flops_everywhere = true;
    int rc = -1;
    /* the emitter's failure is told apart from a failure set here by
     * err->code below: start from a clear one, the caller's or our own */
    if (err == NULL) {
        err = &own_err;
    }
    ts_error_clear(err);
    g = (gather_ctx){e, ranks, err, NULL};
    if (!json_is_array(reports) || n == 0 || kind == NULL) {
        return ts_error_set(
            err, TS_EINVAL, "reports must be a non-empty list of reports");
    }
    if (!json_is_array(ranks)) {
        /* the context lists them: without them the writer would fail as
         * if out of memory */
        return ts_error_set(
            err, TS_EINVAL, "ranks must be the list of the reports' ranks");
    }
    for (size_t i = 0; i < n; i++) {
        const char *own = report_kind(json_array_get(reports, i));
        if (own == NULL || strcmp(own, kind) != 0) {
            return ts_error_set(err,
                                TS_EINVAL,
                                "gather_reports: the reports disagree in "
                                "kind (rank %lld)",
                                (long long)rank_at(ranks, i));
        }
    }
    parts = calloc(n, sizeof *parts);
    g.zero = json_integer(0);
    if (parts == NULL || g.zero == NULL || scratch_init(&sc, n) != TS_OK) {
        fail(&g, TS_ENOMEM, "", NULL);
        goto done;
    }
    if (e->begin_object(e->ctx) || e->key(e->ctx, "schema_version")
        || e->integer(e->ctx, 1) || e->key(e->ctx, "context")
        || e->begin_object(e->ctx) || e->key(e->ctx, "method")
        || e->string(e->ctx, TS_GATHER_METHOD) || e->key(e->ctx, "report_type")
        || e->string(e->ctx, kind) || e->key(e->ctx, "world_size")
        || e->integer(e->ctx, (int64_t)n) || e->key(e->ctx, "ranks")
        || e->tree(e->ctx, ranks) || e->end_object(e->ctx)
        || (with_reports
            && (e->key(e->ctx, "reports") || e->tree(e->ctx, reports)))) {
        goto emitter;
    }
    if (strcmp(kind, "FlopReport") != 0) {
        for (size_t i = 0; i < n; i++) {
            parts[i] = json_object_get(json_array_get(reports, i), "totals");
        }
        if (e->key(e->ctx, "totals")
            || emit_stats_object(&g, parts, n, "totals", &sc)) {
            goto emitter;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(reports, i);
        parts[i] = strcmp(kind, "FlopReport") == 0
                       ? r
                       : json_object_get(r, "operator_flops");
        flops_everywhere &= parts[i] != NULL;
    }
    if (flops_everywhere
        && (e->key(e->ctx, "operator_flops")
            || emit_flops(&g, parts, n, &sc))) {
        goto emitter;
    }
    if (strcmp(kind, "AnalysisReport") == 0
        && (e->key(e->ctx, "layers") || emit_layers(&g, reports, &sc))) {
        goto emitter;
    }
    if (e->end_object(e->ctx)) {
        goto emitter;
    }
    rc = TS_OK;
    goto done;
emitter:
    if (err->code == TS_OK) {
        /* the emitter's own failure (out of memory building the value) */
        ts_error_set(err, TS_ENOMEM, "out of memory writing the report");
    }
done:
    json_decref((json_t *)g.zero);
    scratch_clear(&sc);
    free(parts);
    return rc == TS_OK ? TS_OK : err->code;
}

json_t *
ts_gather_reports(const json_t *reports,
                  const json_t *ranks,
                  bool with_reports,
                  ts_error *err)
{
    ts_json_builder *b = ts_json_builder_new();
    json_t *out = NULL;
    ts_emitter e;
    if (b == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    ts_json_builder_emitter(b, &e);
    if (ts_gather_emit(reports, ranks, with_reports, &e, err) == TS_OK) {
        out = ts_json_builder_take(b);
        if (out == NULL) {
            ts_error_set(err, TS_ENOMEM, "out of memory");
        }
    }
    ts_json_builder_free(b);
    return out;
}
