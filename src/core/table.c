/* The summary table of an AnalysisReport (contract 5.1).
 *
 * The text must match the reference's format_info byte for byte, so the
 * rules below mirror its quirks on purpose: widths are counted in Unicode
 * code points (Python len()), a name is wrapped to its column width + 3 and
 * then cut to the width, and column widths are measured as if every optional
 * column were shown. All strings in jansson values are valid UTF-8, which the
 * code-point helpers rely on.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table_text.h"

/* ts_error_set returns its code; spelling the code out as the value lets the
 * static analyzer see that an error path never yields TS_OK. */
#define FAIL(err, code, ...) (ts_error_set((err), (code), __VA_ARGS__), (code))

#define NCOLS 8
#define MARGIN 4
/* Width used when measuring cells before the column widths are known. */
#define MEASURE_WIDTH 100
/* Output metadata deeper than this is malformed (jansson's parser stops at
 * 2048 levels; a tree built in memory could be deeper or even cyclic). */
#define MAX_META_DEPTH 1024
/* Deepest layer a report may hold: far beyond any model Python can call
 * (its recursion limit), small enough to print. */
#define MAX_LAYER_DEPTH 100000

static const char *const headers[NCOLS] = {
    "Layer",
    "Type",
    "Output Shape",
    "Param #",
    "Trainable",
    "Receptive field",
    "Effective stride",
    "Effective padding",
};
static const size_t max_widths[NCOLS] = {27, 20, 25, 15, 9, 15, 16, 17};

/* ---- report access ---- */

/* Python int(x) of a JSON number: integers as-is, reals truncated. */
static int
number_to_int(const json_t *value, long long *out)
{
    if (json_is_integer(value)) {
        *out = json_integer_value(value);
        return 0;
    }
    if (json_is_real(value)) {
        double r = trunc(json_real_value(value));
        /* 2^63 is the first double that no long long can hold. */
        if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0)) {
            return -1;
        }
        *out = (long long)r;
        return 0;
    }
    return -1;
}

static int
get_int(const json_t *obj,
        const char *key,
        const char *where,
        long long *out,
        ts_error *err)
{
    const json_t *value = json_object_get(obj, key);
    if (value == NULL) {
        return FAIL(err, TS_EFORMAT, "%s lacks '%s'", where, key);
    }
    if (number_to_int(value, out) != 0) {
        return FAIL(
            err, TS_EFORMAT, "%s field '%s' is not an integer", where, key);
    }
    return TS_OK;
}

static int
get_string(const json_t *obj,
           const char *key,
           const char *where,
           const json_t **out,
           ts_error *err)
{
    *out = json_object_get(obj, key);
    if (!json_is_string(*out)) {
        return FAIL(err, TS_EFORMAT, "%s lacks string '%s'", where, key);
    }
    return TS_OK;
}

static void
put_json_string(ts_text_buf *out, const json_t *text)
{
    ts_text_put_n(out, json_string_value(text), json_string_length(text));
}

/* The reference's _shape_text: tensors as Python tuples, containers by their
 * brackets, anything else by its kind. */
static int
append_shape(ts_text_buf *out, const json_t *meta, int level, ts_error *err)
{
    const json_t *kind = json_object_get(meta, "kind");
    const char *name = json_string_value(kind);
    const json_t *items;
    size_t i;
    if (level > MAX_META_DEPTH) {
        return FAIL(err, TS_EFORMAT, "output metadata is nested too deeply");
    }
    if (!json_is_object(meta)) {
        return FAIL(err, TS_EFORMAT, "output metadata is not an object");
    }
    if (kind == NULL || json_is_null(kind)) {
        /* str(None), what the reference prints for a missing kind. */
        ts_text_put(out, "None");
        return TS_OK;
    }
    if (name == NULL) {
        return FAIL(err, TS_EFORMAT, "output metadata 'kind' is not a string");
    }
    if (strcmp(name, "tensor") == 0) {
        const json_t *shape = json_object_get(meta, "shape");
        const json_t *dim;
        if (!json_is_array(shape)) {
            return FAIL(err, TS_EFORMAT, "tensor metadata lacks 'shape'");
        }
        ts_text_put_n(out, "(", 1);
        json_array_foreach(shape, i, dim)
        {
            if (!json_is_integer(dim)) {
                return FAIL(
                    err, TS_EFORMAT, "tensor shape holds a non-integer");
            }
            if (i > 0) {
                ts_text_put_n(out, ", ", 2);
            }
            ts_text_put_int(out, (int64_t)json_integer_value(dim));
        }
        /* A one-element tuple prints as "(n,)". */
        ts_text_put(out, json_array_size(shape) == 1 ? ",)" : ")");
        return TS_OK;
    }
    if (strcmp(name, "tuple") == 0 || strcmp(name, "list") == 0
        || strcmp(name, "mapping") == 0) {
        const json_t *item;
        const char *brackets = name[0] == 't'   ? "()"
                               : name[0] == 'l' ? "[]"
                                                : "{}";
        items = json_object_get(meta, "items");
        if (!json_is_array(items)) {
            return FAIL(err, TS_EFORMAT, "%s metadata lacks 'items'", name);
        }
        ts_text_put_n(out, brackets, 1);
        json_array_foreach(items, i, item)
        {
            int rc;
            if (i > 0) {
                ts_text_put_n(out, ", ", 2);
            }
            if (brackets[0] == '{') {
                item = json_object_get(item, "value");
                if (item == NULL) {
                    return FAIL(err, TS_EFORMAT, "mapping item lacks 'value'");
                }
            }
            rc = append_shape(out, item, level + 1, err);
            if (rc != TS_OK) {
                return rc;
            }
        }
        ts_text_put_n(out, brackets + 1, 1);
        return TS_OK;
    }
    put_json_string(out, kind);
    return TS_OK;
}

/* Appends the "{v:.0f}" of a receptive-field metric, or "?" without one. */
static int
append_rf(ts_text_buf *out,
          const json_t *metrics,
          const char *key,
          ts_error *err)
{
    const json_t *metric = json_object_get(metrics, key);
    const json_t *status;
    const json_t *value;
    if (metric == NULL) {
        ts_text_put_n(out, "?", 1);
        return TS_OK;
    }
    status = json_object_get(metric, "status");
    if (!json_is_string(status)) {
        return FAIL(err, TS_EFORMAT, "metric '%s' lacks 'status'", key);
    }
    value = json_object_get(metric,
                            strcmp(json_string_value(status), "complete") == 0
                                ? "value"
                                : "known_value");
    if (value == NULL) {
        return FAIL(err, TS_EFORMAT, "metric '%s' lacks its value", key);
    }
    if (json_is_null(value)) {
        ts_text_put_n(out, "?", 1);
        return TS_OK;
    }
    if (!json_is_number(value)) {
        return FAIL(err, TS_EFORMAT, "metric '%s' value is not a number", key);
    }
    /* Python formats an int with 'f' through float() too. */
    ts_text_printf(out, "%.0f", json_number_value(value));
    return TS_OK;
}

/* One displayed row: the unwrapped text of every column. */
typedef struct row {
    ts_text_buf cells[NCOLS];
} row;

static void
rows_free(row *rows, size_t count)
{
    if (rows == NULL) {
        return;
    }
    for (size_t r = 0; r < count; r++) {
        for (int c = 0; c < NCOLS; c++) {
            free(rows[r].cells[c].data);
        }
    }
    free(rows);
}

/* TS_ENOMEM when a row's cell ran out of memory. */
static int
row_status(const row *r, ts_error *err)
{
    for (int c = 0; c < NCOLS; c++) {
        if (r->cells[c].failed) {
            return FAIL(err, TS_ENOMEM, "out of memory");
        }
    }
    return TS_OK;
}

/* What a row shows of one report layer. */
typedef struct row_fields {
    const json_t *name;
    const json_t *type;
    const json_t *output;
    const json_t *metrics;
    long long depth;
    long long trainable;
    long long frozen;
    long long buffer_elements;
} row_fields;

/* A single layer (format_line_str) has no index in a report. */
#define LONE_LAYER SIZE_MAX

/* "report layer <index><suffix>", or "layer<suffix>" for a lone layer. */
static void
layer_where(char *where, size_t size, size_t index, const char *suffix)
{
    if (index == LONE_LAYER) {
        snprintf(where, size, "layer%s", suffix);
    }
    else {
        snprintf(where, size, "report layer %zu%s", index, suffix);
    }
}

/* Reads and checks the fields of report layer `index` that its row shows.
 * TS_OK, or TS_EFORMAT naming the layer and what is wrong. */
static int
read_row_fields(const json_t *layer,
                size_t index,
                row_fields *f,
                ts_error *err)
{
    char where[48];
    const json_t *params = json_object_get(layer, "parameters");
    const json_t *buffers = json_object_get(layer, "buffers");
    int rc;
    f->metrics = json_object_get(layer, "metrics");
    layer_where(where, sizeof where, index, "");
    if ((rc = get_string(layer, "name", where, &f->name, err)) != TS_OK
        || (rc = get_string(layer, "type", where, &f->type, err)) != TS_OK
        || (rc = get_int(layer, "depth", where, &f->depth, err)) != TS_OK) {
        return rc;
    }
    if (f->depth > MAX_LAYER_DEPTH) {
        /* its tree prefix alone would take depth * 5 bytes */
        return FAIL(err,
                    TS_EFORMAT,
                    "%s: depth %lld is beyond %d",
                    where,
                    f->depth,
                    MAX_LAYER_DEPTH);
    }
    f->output = json_object_get(layer, "output");
    if (f->output == NULL || !json_is_object(params)
        || !json_is_object(buffers) || !json_is_object(f->metrics)) {
        return FAIL(err,
                    TS_EFORMAT,
                    "%s lacks 'output', 'parameters', 'buffers' or 'metrics'",
                    where);
    }
    layer_where(where, sizeof where, index, " parameters");
    if ((rc = get_int(params, "trainable", where, &f->trainable, err)) != TS_OK
        || (rc = get_int(params, "frozen", where, &f->frozen, err)) != TS_OK) {
        return rc;
    }
    layer_where(where, sizeof where, index, " buffers");
    return get_int(buffers, "elements", where, &f->buffer_elements, err);
}

/* The Param # cell (parameters and buffers, grouped) and the Trainable
 * cell. */
static int
append_param_cells(row *out, const row_fields *f, size_t index, ts_error *err)
{
    long long params_total;
    long long total;
    if (__builtin_add_overflow(f->trainable, f->frozen, &params_total)
        || __builtin_add_overflow(params_total, f->buffer_elements, &total)) {
        char where[48];
        layer_where(where, sizeof where, index, "");
        return FAIL(err, TS_EOVERFLOW, "%s parameter count overflows", where);
    }
    ts_put_grouped(&out->cells[3], total);
    /* "-" is decided on parameters alone: buffers do not train. */
    ts_text_put(&out->cells[4],
                params_total == 0  ? "-"
                : f->trainable > 0 ? "True"
                                   : "False");
    return TS_OK;
}

/* The unwrapped text of every column of report layer `index`. A lone
 * layer (format_line_str's) must not have a negative depth, which 0.2.0's
 * format_name refuses; the table prints one as 0.2.0's format_info does. */
static int
build_row(row *out, const json_t *layer, size_t index, ts_error *err)
{
    row_fields f;
    int rc = read_row_fields(layer, index, &f, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (index == LONE_LAYER && f.depth < 0) {
        return FAIL(
            err, TS_EINVAL, "layer depth must be >= 0, got %lld.", f.depth);
    }
    ts_put_layer_name(&out->cells[0],
                      json_string_value(f.name),
                      json_string_length(f.name),
                      f.depth);
    put_json_string(&out->cells[1], f.type);
    rc = append_shape(&out->cells[2], f.output, 0, err);
    if (rc == TS_OK) {
        rc = append_param_cells(out, &f, index, err);
    }
    if (rc == TS_OK) {
        rc = append_rf(&out->cells[5], f.metrics, "receptive_field", err);
    }
    if (rc == TS_OK) {
        rc = append_rf(&out->cells[6], f.metrics, "effective_stride", err);
    }
    if (rc == TS_OK) {
        rc = append_rf(&out->cells[7], f.metrics, "effective_padding", err);
    }
    return rc != TS_OK ? rc : row_status(out, err);
}

/* Appends one column's text for a row: the name wrapped to name_len by
 * `mode` and the shape end-wrapped to shape_len, as the reference does,
 * then every cell padded and cut to width (negative: neither). */
static int
append_column(ts_text_buf *out,
              const ts_text_buf *cell,
              int column,
              int64_t width,
              int64_t wrap_len,
              ts_wrap_mode mode,
              ts_text_buf *scratch,
              ts_error *err)
{
    int rc;
    if (column != 0 && column != 2) {
        ts_put_cell(out, cell->data, cell->len, width, width);
        return TS_OK;
    }
    scratch->len = 0;
    rc = ts_put_wrapped(scratch,
                        cell->data,
                        cell->len,
                        wrap_len,
                        column == 0 ? mode : TS_WRAP_END,
                        &ts_table_default_marks,
                        err);
    if (rc == TS_OK && scratch->failed) {
        rc = FAIL(err, TS_ENOMEM, "out of memory");
    }
    if (rc == TS_OK) {
        ts_put_cell(out, scratch->data, scratch->len, width, width);
    }
    return rc;
}

/* ---- footer ---- */

static int
get_total(const json_t *totals,
          const char *key,
          const json_t **metric,
          ts_error *err)
{
    *metric = json_object_get(totals, key);
    if (!json_is_object(*metric)) {
        return FAIL(err, TS_EFORMAT, "report totals lack '%s'", key);
    }
    return TS_OK;
}

/* int(totals[key]["value"] or 0), grouped. */
static int
append_count_line(ts_text_buf *out,
                  const char *label,
                  const json_t *totals,
                  const char *key,
                  ts_error *err)
{
    const json_t *metric;
    const json_t *value;
    long long n = 0;
    int rc = get_total(totals, key, &metric, err);
    if (rc != TS_OK) {
        return rc;
    }
    value = json_object_get(metric, "value");
    if (value == NULL) {
        return FAIL(err, TS_EFORMAT, "total '%s' lacks 'value'", key);
    }
    if (!json_is_null(value) && number_to_int(value, &n) != 0) {
        return FAIL(
            err, TS_EFORMAT, "total '%s' value is not an integer", key);
    }
    ts_text_printf(out, "\n%s: ", label);
    ts_put_grouped(out, n);
    return TS_OK;
}

/* float(totals[key]["value"] or 0). */
static int
total_real(const json_t *totals, const char *key, double *out, ts_error *err)
{
    const json_t *metric;
    const json_t *value;
    int rc = get_total(totals, key, &metric, err);
    if (rc != TS_OK) {
        return rc;
    }
    value = json_object_get(metric, "value");
    if (value == NULL || !(json_is_null(value) || json_is_number(value))) {
        return FAIL(err, TS_EFORMAT, "total '%s' lacks a numeric value", key);
    }
    *out = json_is_null(value) ? 0.0 : json_number_value(value);
    return TS_OK;
}

/* "<label>: [known ]X.XX <SI prefix><unit>" or "<label>: unavailable". */
static int
append_total_line(ts_text_buf *out,
                  const char *label,
                  const json_t *totals,
                  const char *key,
                  ts_error *err)
{
    const json_t *metric;
    const json_t *status;
    const json_t *value;
    const json_t *unit;
    const char *prefix;
    double divisor;
    bool complete;
    int rc = get_total(totals, key, &metric, err);
    if (rc != TS_OK) {
        return rc;
    }
    status = json_object_get(metric, "status");
    if (!json_is_string(status)) {
        return FAIL(err, TS_EFORMAT, "total '%s' lacks 'status'", key);
    }
    complete = strcmp(json_string_value(status), "complete") == 0;
    value = json_object_get(metric, complete ? "value" : "known_value");
    if (value == NULL) {
        return FAIL(err, TS_EFORMAT, "total '%s' lacks its value", key);
    }
    if (json_is_null(value)) {
        ts_text_printf(out, "\n%s: unavailable", label);
        return TS_OK;
    }
    unit = json_object_get(metric, "unit");
    if (!json_is_number(value) || !json_is_string(unit)) {
        return FAIL(err,
                    TS_EFORMAT,
                    "total '%s' lacks a numeric value or a unit",
                    key);
    }
    ts_table_unit_scale(json_number_value(value), &divisor, &prefix);
    ts_text_printf(out,
                   "\n%s: %s%.2f %s%s",
                   label,
                   complete ? "" : "known ",
                   json_number_value(value) / divisor,
                   prefix,
                   json_string_value(unit));
    return TS_OK;
}

/* Footer lines in order; the operator line is optional (structure-mode and
 * older reports may lack operator FLOPs). */
static const struct {
    const char *label;
    const char *key;
} count_lines[] = {
    {"Trainable params", "trainable_parameters"},
    {"Non-trainable params", "frozen_parameters"},
    {"Total params", "parameters"},
};
static const struct {
    const char *label;
    const char *key;
    bool optional;
} total_lines[] = {
    {"Module-formula forward FLOPs", "module_flops", false},
    {"Multiply-Accumulations", "macs", false},
    {"Direct memory accesses", "dmas", false},
    {"Operator forward FLOPs", "operator_flops", true},
};

static void
put_rule(ts_text_buf *out, char c, size_t length)
{
    for (size_t i = 0; i < length && !out->failed; i++) {
        ts_text_put_n(out, &c, 1);
    }
}

static int
append_footer(ts_text_buf *out,
              const json_t *totals,
              const json_t *diagnostics,
              size_t line_length,
              ts_error *err)
{
    double param_bytes = 0.0;
    double buffer_bytes = 0.0;
    size_t diagnostic_count = json_array_size(diagnostics);
    int rc = TS_OK;
    for (size_t i = 0;
         rc == TS_OK && i < sizeof count_lines / sizeof *count_lines;
         i++) {
        rc = append_count_line(
            out, count_lines[i].label, totals, count_lines[i].key, err);
    }
    if (rc == TS_OK) {
        rc = total_real(totals, "parameter_bytes", &param_bytes, err);
    }
    if (rc == TS_OK) {
        rc = total_real(totals, "buffer_bytes", &buffer_bytes, err);
    }
    if (rc != TS_OK) {
        return rc;
    }
    ts_text_put_n(out, "\n", 1);
    put_rule(out, '-', line_length);
    ts_text_printf(out,
                   "\nModel size (params + buffers): %.2f Mb\n",
                   (param_bytes + buffer_bytes) / (1024.0 * 1024.0));
    put_rule(out, '-', line_length);
    for (size_t i = 0;
         rc == TS_OK && i < sizeof total_lines / sizeof *total_lines;
         i++) {
        if (!total_lines[i].optional
            || json_object_get(totals, total_lines[i].key) != NULL) {
            rc = append_total_line(
                out, total_lines[i].label, totals, total_lines[i].key, err);
        }
    }
    if (rc != TS_OK) {
        return rc;
    }
    if (diagnostic_count > 0) {
        ts_text_printf(out,
                       "\nDiagnostics: %zu (inspect report['diagnostics'])",
                       diagnostic_count);
    }
    ts_text_put_n(out, "\n", 1);
    put_rule(out, '_', line_length);
    return TS_OK;
}

/* ---- the table ---- */

/* Applies max_depth like the reference's aggregate_info: the depth must be
 * one that some row has (so a too-deep value is refused), and rows deeper
 * than it are hidden. Fills keep[], one flag per layer. */
static int
select_rows(const json_t *layers, int64_t max_depth, bool *keep, ts_error *err)
{
    size_t count = json_array_size(layers);
    bool depth_seen = false;
    for (size_t i = 0; i < count; i++) {
        char where[48];
        long long depth;
        int rc;
        snprintf(where, sizeof where, "report layer %zu", i);
        rc = get_int(json_array_get(layers, i), "depth", where, &depth, err);
        if (rc != TS_OK) {
            return rc;
        }
        keep[i] = max_depth < 0 || depth <= max_depth;
        depth_seen = depth_seen || depth == max_depth;
    }
    if (max_depth >= 0 && count > 0 && !depth_seen) {
        return FAIL(
            err,
            TS_EINVAL,
            "The `max_depth` argument cannot be higher than module depth.");
    }
    return TS_OK;
}

/* Builds the rows that max_depth keeps, in report order, into rows[] (one
 * slot per layer, zeroed by the caller); *count says how many. */
static int
build_rows(const json_t *layers,
           int max_depth,
           row *rows,
           size_t *count,
           ts_error *err)
{
    size_t layer_count = json_array_size(layers);
    bool *keep = calloc(layer_count > 0 ? layer_count : 1, sizeof *keep);
    int rc;
    *count = 0;
    if (keep == NULL) {
        return FAIL(err, TS_ENOMEM, "out of memory");
    }
    rc = select_rows(layers, max_depth, keep, err);
    for (size_t i = 0; rc == TS_OK && i < layer_count; i++) {
        if (keep[i]) {
            rc = build_row(
                &rows[(*count)++], json_array_get(layers, i), i, err);
        }
    }
    free(keep);
    return rc;
}

/* Widths are measured on every column, with the name mid-wrapped and the
 * shape end-wrapped at MEASURE_WIDTH, whatever the options; a column is at
 * least as wide as its header. */
static int
measure_widths(const row *rows,
               size_t row_count,
               size_t widths[NCOLS],
               ts_text_buf *scratch,
               ts_error *err)
{
    for (int c = 0; c < NCOLS; c++) {
        widths[c] = strlen(headers[c]);
    }
    for (size_t r = 0; r < row_count; r++) {
        for (int c = 0; c < NCOLS; c++) {
            const ts_text_buf *cell = &rows[r].cells[c];
            size_t chars;
            if (c == 0 || c == 2) {
                int rc;
                scratch->len = 0;
                rc = ts_put_wrapped(scratch,
                                    cell->data,
                                    cell->len,
                                    MEASURE_WIDTH,
                                    c == 0 ? TS_WRAP_MID : TS_WRAP_END,
                                    &ts_table_default_marks,
                                    err);
                if (rc != TS_OK) {
                    return rc;
                }
                if (scratch->failed) {
                    return FAIL(err, TS_ENOMEM, "out of memory");
                }
                chars = ts_utf8_chars(scratch->data, scratch->len);
            }
            else {
                chars = ts_utf8_chars(cell->data, cell->len);
            }
            if (chars > widths[c]) {
                widths[c] = chars;
            }
        }
    }
    return TS_OK;
}

/* Caps the widths of the `ncols` shown columns and returns the length of
 * a line: the widths and the margins between them. */
static size_t
fit_widths(size_t widths[NCOLS], int ncols)
{
    size_t line_length = 0;
    for (int c = 0; c < ncols; c++) {
        if (widths[c] > max_widths[c]) {
            widths[c] = max_widths[c];
        }
        line_length += widths[c] + (c > 0 ? MARGIN : 0);
    }
    return line_length;
}

/* The head of the table: a rule of "_", the column headers and a rule of
 * "=". */
static void
append_table_head(ts_text_buf *out,
                  const size_t widths[NCOLS],
                  int ncols,
                  size_t line_length)
{
    put_rule(out, '_', line_length);
    ts_text_put_n(out, "\n", 1);
    for (int c = 0; c < ncols; c++) {
        if (c > 0) {
            ts_text_put_n(out, "    ", MARGIN);
        }
        ts_put_cell(out,
                    headers[c],
                    strlen(headers[c]),
                    (int64_t)widths[c],
                    (int64_t)widths[c]);
    }
    ts_text_put_n(out, "\n", 1);
    put_rule(out, '=', line_length);
}

/* One line per row, each column wrapped, padded and cut to its width. */
static int
append_rows(ts_text_buf *out,
            const row *rows,
            size_t row_count,
            const size_t widths[NCOLS],
            int ncols,
            ts_wrap_mode mode,
            ts_text_buf *scratch,
            ts_error *err)
{
    int rc = TS_OK;
    for (size_t r = 0; rc == TS_OK && r < row_count; r++) {
        ts_text_put_n(out, "\n", 1);
        for (int c = 0; rc == TS_OK && c < ncols; c++) {
            int64_t width = (int64_t)widths[c];
            if (c > 0) {
                ts_text_put_n(out, "    ", MARGIN);
            }
            rc = append_column(out,
                               &rows[r].cells[c],
                               c,
                               width,
                               c == 0 ? width + 3 : width,
                               mode,
                               scratch,
                               err);
        }
    }
    return rc;
}

char *
ts_format_summary(const json_t *report,
                  const ts_table_options *options,
                  ts_error *err)
{
    static const ts_table_options defaults = {TS_WRAP_MID, false, false, -1};
    const json_t *layers = json_object_get(report, "layers");
    const json_t *totals = json_object_get(report, "totals");
    const json_t *diagnostics = json_object_get(report, "diagnostics");
    size_t layer_count;
    row *rows;
    size_t row_count = 0;
    size_t widths[NCOLS];
    int ncols;
    size_t line_length = 0;
    ts_text_buf out = {NULL, 0, 0, false};
    ts_text_buf scratch = {NULL, 0, 0, false};
    char *result = NULL;
    int rc;

    ts_error_clear(err);
    if (options == NULL) {
        options = &defaults;
    }
    if (!json_is_array(layers) || !json_is_object(totals)
        || !json_is_array(diagnostics)) {
        ts_error_set(err,
                     TS_EFORMAT,
                     "report lacks 'layers', 'totals' or 'diagnostics'");
        return NULL;
    }
    layer_count = json_array_size(layers);
    rows = calloc(layer_count > 0 ? layer_count : 1, sizeof *rows);
    if (rows == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    ncols = !options->receptive_field      ? 5
            : !options->effective_rf_stats ? 6
                                           : NCOLS;
    rc = build_rows(layers, options->max_depth, rows, &row_count, err);
    if (rc == TS_OK) {
        rc = measure_widths(rows, row_count, widths, &scratch, err);
    }
    if (rc == TS_OK) {
        line_length = fit_widths(widths, ncols);
        append_table_head(&out, widths, ncols, line_length);
        rc = append_rows(&out,
                         rows,
                         row_count,
                         widths,
                         ncols,
                         options->wrap_mode,
                         &scratch,
                         err);
    }
    if (rc == TS_OK) {
        ts_text_put_n(&out, "\n", 1);
        put_rule(&out, '=', line_length);
        rc = append_footer(&out, totals, diagnostics, line_length, err);
    }
    if (rc == TS_OK && out.failed) {
        rc = FAIL(err, TS_ENOMEM, "out of memory");
    }
    if (rc == TS_OK) {
        result = out.data;
        out.data = NULL;
    }
    free(out.data);
    free(scratch.data);
    rows_free(rows, layer_count);
    return result;
}

/* ---- one row, and a depth-limited view ---- */

int
ts_table_line(const json_t *layer,
              const int64_t col_w[8],
              ts_wrap_mode mode,
              bool receptive_field,
              bool effective_rf_stats,
              ts_table_text cells[8],
              int *count,
              ts_error *err)
{
    row r;
    ts_text_buf scratch = {NULL, 0, 0, false};
    int ncols = !receptive_field ? 5 : !effective_rf_stats ? 6 : NCOLS;
    int rc;
    memset(&r, 0, sizeof r);
    memset(cells, 0, NCOLS * sizeof *cells);
    *count = 0;
    ts_error_clear(err);
    if (!json_is_object(layer)) {
        return FAIL(err, TS_EFORMAT, "layer is not an object");
    }
    rc = build_row(&r, layer, LONE_LAYER, err);
    for (int c = 0; rc == TS_OK && c < ncols; c++) {
        /* without widths, the name wraps at 100 and the shape at 100 */
        int64_t wrap_len = col_w[c] < 0 ? MEASURE_WIDTH
                           : c == 0     ? col_w[c] + 3
                                        : col_w[c];
        ts_text_buf cell = {NULL, 0, 0, false};
        rc = append_column(
            &cell, &r.cells[c], c, col_w[c], wrap_len, mode, &scratch, err);
        if (rc == TS_OK && cell.failed) {
            rc = FAIL(err, TS_ENOMEM, "out of memory");
        }
        if (rc == TS_OK && cell.data == NULL) {
            cell.data = calloc(1, 1);
            if (cell.data == NULL) {
                rc = FAIL(err, TS_ENOMEM, "out of memory");
            }
        }
        cells[c].data = cell.data;
        cells[c].len = cell.len;
        *count = c + 1;
    }
    for (int c = 0; c < NCOLS; c++) {
        free(r.cells[c].data);
    }
    free(scratch.data);
    if (rc != TS_OK) {
        ts_table_texts_free(cells, *count);
        *count = 0;
    }
    return rc;
}

json_t *
ts_table_limit_depth(const json_t *report, int64_t max_depth, ts_error *err)
{
    const json_t *layers = json_object_get(report, "layers");
    size_t count = json_array_size(layers);
    json_t *view = NULL;
    json_t *kept = NULL;
    bool *keep = NULL;
    int rc;
    ts_error_clear(err);
    if (!json_is_object(report) || !json_is_array(layers)) {
        ts_error_set(err, TS_EFORMAT, "report lacks a 'layers' list");
        return NULL;
    }
    if (max_depth < 0) {
        ts_error_set(err, TS_EINVAL, "max_depth must be non-negative.");
        return NULL;
    }
    keep = calloc(count > 0 ? count : 1, sizeof *keep);
    view = json_copy((json_t *)report);
    kept = json_array();
    /* jansson's shallow copy skips a member it cannot set: a view short of
     * members would be a different report, so that is out of memory too */
    if (keep == NULL || view == NULL || kept == NULL
        || json_object_size(view) != json_object_size(report)) {
        rc = FAIL(err, TS_ENOMEM, "out of memory");
    }
    else {
        rc = select_rows(layers, max_depth, keep, err);
    }
    for (size_t i = 0; rc == TS_OK && i < count; i++) {
        if (keep[i] && json_array_append(kept, json_array_get(layers, i))) {
            rc = FAIL(err, TS_ENOMEM, "out of memory");
        }
    }
    if (rc == TS_OK && json_object_set(view, "layers", kept)) {
        rc = FAIL(err, TS_ENOMEM, "out of memory");
    }
    free(keep);
    json_decref(kept);
    if (rc != TS_OK) {
        json_decref(view);
        return NULL;
    }
    return view;
}
