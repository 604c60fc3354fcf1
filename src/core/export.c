/* Per-layer exports of an AnalysisReport: CSV, Markdown, folded stacks
 * (see torchscan/export.h for the formats and the self-cost rule). */
#include "torchscan/export.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_buf.h"
#include "torchscan/json_text.h"

#define FAIL(err, code, ...) (ts_error_set((err), (code), __VA_ARGS__), (code))

static const char *const metric_names[TS_EXPORT_NMETRICS] = {
    "module_flops",
    "macs",
    "dmas",
    "operator_flops",
    "parameters",
    "parameter_bytes",
};

static const char *const format_names[] = {"csv", "markdown", "folded"};
#define NFORMATS (sizeof format_names / sizeof format_names[0])

const char *
ts_export_metric_name(int metric)
{
    return metric >= 0 && metric < TS_EXPORT_NMETRICS ? metric_names[metric]
                                                      : NULL;
}

int
ts_export_metric_parse(const char *name)
{
    for (int i = 0; name != NULL && i < TS_EXPORT_NMETRICS; i++) {
        if (strcmp(name, metric_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

const char *
ts_export_format_name(int format)
{
    return format >= 0 && (size_t)format < NFORMATS ? format_names[format]
                                                    : NULL;
}

int
ts_export_format_parse(const char *name)
{
    for (size_t i = 0; name != NULL && i < NFORMATS; i++) {
        if (strcmp(name, format_names[i]) == 0) {
            return (int)i;
        }
    }
    return -1;
}

/* ---- reading one row's metric ---------------------------------------- */

/* A row's number for one metric. */
typedef struct cell {
    bool present;     /* the row holds the metric */
    ts_status status; /* when present */
    ts_number number; /* complete: the value; partial: the known value */
} cell;

static int
read_number(const json_t *value, ts_number *out)
{
    if (json_is_integer(value)) {
        *out = ts_int(json_integer_value(value));
        return TS_OK;
    }
    if (json_is_real(value)) {
        *out = ts_real(json_real_value(value));
        return TS_OK;
    }
    return TS_EFORMAT;
}

/* An int member of `object` >= 0, or -1 when absent or not one. */
static int64_t
count_member(const json_t *object, const char *key)
{
    const json_t *value = json_object_get(object, key);
    return json_is_integer(value) && json_integer_value(value) >= 0
               ? json_integer_value(value)
               : -1;
}

static int
read_cell(
    const json_t *row, size_t index, int metric, cell *out, ts_error *err)
{
    memset(out, 0, sizeof *out);
    if (metric == TS_EXPORT_PARAMETERS
        || metric == TS_EXPORT_PARAMETER_BYTES) {
        const json_t *params = json_object_get(row, "parameters");
        int64_t a, b, sum;
        if (params == NULL) {
            return TS_OK;
        }
        if (metric == TS_EXPORT_PARAMETERS) {
            a = count_member(params, "trainable");
            b = count_member(params, "frozen");
        }
        else {
            a = count_member(params, "bytes");
            b = 0;
        }
        if (a < 0 || b < 0 || !ts_add(a, b, &sum)) {
            return FAIL(err,
                        TS_EFORMAT,
                        "layers[%zu].parameters: expected non-negative "
                        "counts whose sum fits 64 bits",
                        index);
        }
        out->present = true;
        out->status = TS_COMPLETE;
        out->number = ts_int(sum);
        return TS_OK;
    }
    const json_t *metrics = json_object_get(row, "metrics");
    const json_t *result = json_object_get(metrics, metric_names[metric]);
    int status;
    if (result == NULL) {
        return TS_OK;
    }
    status = ts_metric_status(result);
    if (status < 0
        || (status != TS_UNAVAILABLE
            && read_number(json_object_get(result, "known_value"),
                           &out->number)
                   != TS_OK)) {
        return FAIL(err,
                    TS_EFORMAT,
                    "layers[%zu].metrics.%s: not a MetricResult",
                    index,
                    metric_names[metric]);
    }
    out->present = true;
    out->status = (ts_status)status;
    return TS_OK;
}

static void
put_number(ts_text_buf *b, ts_number n)
{
    char text[TS_JSON_REAL_SIZE];
    if (n.is_real) {
        ts_format_json_real(n.r, text);
    }
    else {
        snprintf(text, sizeof text, "%" PRId64, n.i);
    }
    ts_text_put(b, text);
}

/* ---- the fields every format shows ------------------------------------- */

typedef struct row_info {
    const char *path;
    const char *type;   /* "" when absent */
    int64_t call_index; /* >= 0 */
    int64_t depth;      /* -1 when absent */
} row_info;

static int
read_row(const json_t *layers, size_t index, row_info *out, ts_error *err)
{
    const json_t *row = json_array_get(layers, index);
    const json_t *path = json_object_get(row, "path");
    const json_t *type = json_object_get(row, "type");
    if (!json_is_object(row) || !json_is_string(path)
        || count_member(row, "call_index") < 0) {
        return FAIL(err,
                    TS_EFORMAT,
                    "layers[%zu]: expected a layer with path and call_index",
                    index);
    }
    out->path = json_string_value(path);
    out->type = json_is_string(type) ? json_string_value(type) : "";
    out->call_index = count_member(row, "call_index");
    out->depth = count_member(row, "depth");
    return TS_OK;
}

static void
put_int(ts_text_buf *b, int64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRId64, value);
    ts_text_put(b, text);
}

/* ---- CSV (RFC 4180) --------------------------------------------------- */

static void
put_csv_field(ts_text_buf *b, const char *text)
{
    if (strpbrk(text, ",\"\r\n") == NULL) {
        ts_text_put(b, text);
        return;
    }
    ts_text_put(b, "\"");
    for (const char *p = text; *p != '\0'; p++) {
        ts_text_put_n(b, p, 1);
        if (*p == '"') {
            ts_text_put(b, "\"");
        }
    }
    ts_text_put(b, "\"");
}

static void
put_csv_cell(ts_text_buf *b, const cell *c)
{
    if (!c->present) {
        ts_text_put(b, ",,,");
        return;
    }
    ts_text_put(b, ",");
    ts_text_put(b, ts_status_name(c->status));
    ts_text_put(b, ",");
    if (c->status == TS_COMPLETE) {
        put_number(b, c->number);
    }
    ts_text_put(b, ",");
    if (c->status != TS_UNAVAILABLE) {
        put_number(b, c->number);
    }
}

/* ---- Markdown ----------------------------------------------------------- */

static void
put_markdown_text(ts_text_buf *b, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0';
         p++) {
        if (*p < 0x20 || *p == 0x7f) {
            char ref[8];
            snprintf(ref, sizeof ref, "&#x%02X;", *p);
            ts_text_put(b, ref);
            continue;
        }
        if (strchr("\\|`*_<>[]&", *p) != NULL) {
            ts_text_put(b, "\\");
        }
        ts_text_put_n(b, (const char *)p, 1);
    }
}

static void
put_markdown_cell(ts_text_buf *b, const cell *c)
{
    ts_text_put(b, " ");
    if (!c->present) {
        /* nothing of its own: an empty cell */
    }
    else if (c->status == TS_COMPLETE) {
        put_number(b, c->number);
    }
    else if (c->status == TS_PARTIAL) {
        ts_text_put(b, ">= ");
        put_number(b, c->number);
        ts_text_put(b, " (partial)");
    }
    else {
        ts_text_put(b, "unavailable");
    }
    ts_text_put(b, " |");
}

/* The rows of a table (csv or markdown), metric `only` or every metric. */
static int
write_table(const json_t *layers,
            ts_export_format format,
            int only,
            ts_text_buf *b,
            ts_export_stats *stats,
            ts_error *err)
{
    int first = only < 0 ? 0 : only;
    int last = only < 0 ? TS_EXPORT_NMETRICS - 1 : only;
    bool csv = format == TS_EXPORT_CSV;
    ts_text_put(b,
                csv ? "path,type,call_index,depth"
                    : "| path | type | "
                      "call_index | depth |");
    for (int m = first; m <= last; m++) {
        if (csv) {
            const char *suffixes[] = {"_status", "_value", "_known_value"};
            for (size_t s = 0; s < 3; s++) {
                ts_text_put(b, ",");
                ts_text_put(b, metric_names[m]);
                ts_text_put(b, suffixes[s]);
            }
        }
        else {
            ts_text_put(b, " ");
            ts_text_put(b, metric_names[m]);
            ts_text_put(b, " |");
        }
    }
    if (!csv) {
        ts_text_put(b, "\n| --- | --- | ---: | ---: |");
        for (int m = first; m <= last; m++) {
            ts_text_put(b, " ---: |");
        }
    }
    ts_text_put(b, csv ? "\r\n" : "\n");
    for (size_t i = 0; i < json_array_size(layers); i++) {
        const json_t *row = json_array_get(layers, i);
        row_info info;
        int rc = read_row(layers, i, &info, err);
        if (rc != TS_OK) {
            return rc;
        }
        if (csv) {
            put_csv_field(b, info.path);
            ts_text_put(b, ",");
            put_csv_field(b, info.type);
            ts_text_put(b, ",");
        }
        else {
            ts_text_put(b, "| ");
            put_markdown_text(b, info.path);
            ts_text_put(b, " | ");
            put_markdown_text(b, info.type);
            ts_text_put(b, " | ");
        }
        put_int(b, info.call_index);
        ts_text_put(b, csv ? "," : " | ");
        if (info.depth >= 0) {
            put_int(b, info.depth);
        }
        ts_text_put(b, csv ? "" : " |");
        for (int m = first; m <= last; m++) {
            cell c;
            rc = read_cell(row, i, m, &c, err);
            if (rc != TS_OK) {
                return rc;
            }
            stats->partial += c.present && c.status == TS_PARTIAL;
            if (csv) {
                put_csv_cell(b, &c);
            }
            else {
                put_markdown_cell(b, &c);
            }
        }
        ts_text_put(b, csv ? "\r\n" : "\n");
        stats->rows++;
    }
    return TS_OK;
}

/* ---- folded stacks --------------------------------------------------------
 */

typedef struct stack_entry {
    char *stack;
    int64_t value;
    size_t first; /* index of the first row with this stack */
} stack_entry;

static void
put_frame(ts_text_buf *b, const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '%' || c == ';' || c < 0x20 || c == 0x7f) {
            char hex[4];
            snprintf(hex, sizeof hex, "%%%02X", c);
            ts_text_put(b, hex);
        }
        else {
            ts_text_put_n(b, text + i, 1);
        }
    }
}

/* The root frame: the root row's name, else its type, else "model". */
static const char *
root_frame(const json_t *layers)
{
    for (size_t i = 0; i < json_array_size(layers); i++) {
        const json_t *row = json_array_get(layers, i);
        const char *path = json_string_value(json_object_get(row, "path"));
        const char *name = json_string_value(json_object_get(row, "name"));
        const char *type = json_string_value(json_object_get(row, "type"));
        if (path == NULL || path[0] != '\0') {
            continue;
        }
        if (name != NULL && name[0] != '\0') {
            return name;
        }
        if (type != NULL && type[0] != '\0') {
            return type;
        }
        break;
    }
    return "model";
}

/* The stack of a row: root;a;a.b;a.b.c, " [partial]" on the last frame. */
static char *
build_stack(const char *root, const char *path, bool partial)
{
    ts_text_buf b = {NULL, 0, 0, false};
    put_frame(&b, root, strlen(root));
    for (size_t i = 0; path[0] != '\0'; i++) {
        if (path[i] == '.' || path[i] == '\0') {
            ts_text_put(&b, ";");
            put_frame(&b, path, i);
            if (path[i] == '\0') {
                break;
            }
        }
    }
    if (partial) {
        ts_text_put(&b, " [partial]");
    }
    if (b.failed) {
        free(b.data);
        return NULL;
    }
    return b.data;
}

/* A row's number as a whole count for the stacks. */
static int
whole_count(ts_number n, int64_t *out, bool *rounded)
{
    double r;
    if (!n.is_real) {
        *out = n.i;
        return TS_OK;
    }
    r = nearbyint(n.r);
    /* 2^63 is the first double past INT64_MAX */
    if (!(r >= 0.0 && r < 9223372036854775808.0)) {
        return TS_EOVERFLOW;
    }
    *rounded = r != n.r;
    *out = (int64_t)r;
    return TS_OK;
}

static int
by_stack(const void *a, const void *b)
{
    const stack_entry *x = a, *y = b;
    int c = strcmp(x->stack, y->stack);
    if (c != 0) {
        return c;
    }
    return x->first < y->first ? -1 : x->first > y->first;
}

static int
by_first(const void *a, const void *b)
{
    const stack_entry *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Sums the entries of each stack into its first entry; returns how many
 * entries are left (sorted back in the order of first rows). */
static int
merge_stacks(stack_entry *entries, size_t n, size_t *kept, ts_error *err)
{
    size_t out = 0;
    qsort(entries, n, sizeof *entries, by_stack);
    for (size_t i = 0; i < n; i++) {
        if (out > 0 && strcmp(entries[out - 1].stack, entries[i].stack) == 0) {
            if (!ts_add(entries[out - 1].value,
                        entries[i].value,
                        &entries[out - 1].value)) {
                return FAIL(err,
                            TS_EOVERFLOW,
                            "the rows of stack %s sum past 2^63 - 1",
                            entries[i].stack);
            }
            free(entries[i].stack);
            entries[i].stack = NULL;
            continue;
        }
        entries[out++] = entries[i];
        if (out - 1 != i) {
            entries[i].stack = NULL;
        }
    }
    qsort(entries, out, sizeof *entries, by_first);
    *kept = out;
    return TS_OK;
}

static int
write_folded(const json_t *layers,
             int metric,
             ts_text_buf *b,
             ts_export_stats *stats,
             ts_error *err)
{
    size_t nrows = json_array_size(layers), n = 0, kept = 0;
    stack_entry *entries = calloc(nrows ? nrows : 1, sizeof *entries);
    const char *root = root_frame(layers);
    int rc = TS_OK;
    if (entries == NULL) {
        return FAIL(err, TS_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < nrows && rc == TS_OK; i++) {
        row_info info;
        cell c;
        bool rounded = false;
        rc = read_row(layers, i, &info, err);
        if (rc == TS_OK) {
            rc = read_cell(json_array_get(layers, i), i, metric, &c, err);
        }
        if (rc != TS_OK) {
            break;
        }
        if (!c.present) {
            stats->without++;
            continue;
        }
        if (c.status == TS_UNAVAILABLE) {
            stats->left_out++;
            continue;
        }
        if (whole_count(c.number, &entries[n].value, &rounded) != TS_OK) {
            rc = FAIL(err,
                      TS_EOVERFLOW,
                      "layers[%zu].%s does not fit a 64-bit count",
                      i,
                      metric_names[metric]);
            break;
        }
        stats->rounded += rounded;
        if (c.status == TS_COMPLETE && entries[n].value == 0) {
            continue; /* no cost to draw */
        }
        stats->partial += c.status == TS_PARTIAL;
        stats->rows++;
        entries[n].first = i;
        entries[n].stack =
            build_stack(root, info.path, c.status == TS_PARTIAL);
        if (entries[n++].stack == NULL) {
            rc = FAIL(err, TS_ENOMEM, "out of memory");
        }
    }
    if (rc == TS_OK) {
        rc = merge_stacks(entries, n, &kept, err);
    }
    for (size_t i = 0; rc == TS_OK && i < kept; i++) {
        ts_text_put(b, entries[i].stack);
        ts_text_put(b, " ");
        put_int(b, entries[i].value);
        ts_text_put(b, "\n");
    }
    for (size_t i = 0; i < n; i++) {
        free(entries[i].stack);
    }
    free(entries);
    return rc;
}

char *
ts_export_report(const json_t *report,
                 const ts_export_options *options,
                 ts_export_stats *stats,
                 ts_error *err)
{
    ts_text_buf b = {NULL, 0, 0, false};
    ts_export_stats local;
    const json_t *layers = json_object_get(report, "layers");
    int rc;
    if (stats == NULL) {
        stats = &local;
    }
    memset(stats, 0, sizeof *stats);
    if (options == NULL || ts_export_format_name(options->format) == NULL
        || options->metric >= TS_EXPORT_NMETRICS) {
        ts_error_set(err, TS_EINVAL, "unknown export format or metric");
        return NULL;
    }
    if (!json_is_array(layers)) {
        ts_error_set(err, TS_EFORMAT, "layers: expected a list");
        return NULL;
    }
    if (options->format == TS_EXPORT_FOLDED) {
        rc = write_folded(
            layers,
            options->metric < 0 ? TS_EXPORT_MODULE_FLOPS : options->metric,
            &b,
            stats,
            err);
    }
    else {
        rc = write_table(
            layers, options->format, options->metric, &b, stats, err);
    }
    if (rc == TS_OK && b.data == NULL && !b.failed) {
        ts_text_put(&b, ""); /* nothing written: an empty string */
        b.failed = b.data == NULL;
    }
    if (rc == TS_OK && b.failed) {
        rc = FAIL(err, TS_ENOMEM, "out of memory");
    }
    if (rc != TS_OK) {
        free(b.data);
        return NULL;
    }
    return b.data;
}
