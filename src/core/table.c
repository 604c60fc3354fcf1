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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/table.h"

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

static const char wrap_marker[] = "[...]";
#define WRAP_MARKER_CHARS 5
/* UTF-8 of the box-drawing characters U+251C, U+2514 and U+2500. */
#define TREE_BRANCH "\xe2\x94\x9c\xe2\x94\x80"
#define TREE_LAST "\xe2\x94\x94\xe2\x94\x80"

/* ---- growable string ---- */

typedef struct sbuf {
    char *data;
    size_t len;
    size_t cap;
} sbuf;

static int
sb_reserve(sbuf *sb, size_t extra, ts_error *err)
{
    size_t need;
    size_t cap;
    char *grown;
    if (extra > SIZE_MAX - sb->len - 1) {
        return FAIL(err, TS_ENOMEM, "summary table too large");
    }
    need = sb->len + extra + 1;
    if (need <= sb->cap) {
        return TS_OK;
    }
    cap = sb->cap == 0 ? 64 : sb->cap;
    while (cap < need) {
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    }
    grown = realloc(sb->data, cap);
    if (grown == NULL) {
        return FAIL(err, TS_ENOMEM, "out of memory");
    }
    sb->data = grown;
    sb->cap = cap;
    return TS_OK;
}

static int
sb_append(sbuf *sb, const char *text, size_t len, ts_error *err)
{
    int rc = sb_reserve(sb, len, err);
    if (rc != TS_OK) {
        return rc;
    }
    if (len > 0) {
        memcpy(sb->data + sb->len, text, len);
    }
    sb->len += len;
    sb->data[sb->len] = '\0';
    return TS_OK;
}

static int
sb_puts(sbuf *sb, const char *text, ts_error *err)
{
    return sb_append(sb, text, strlen(text), err);
}

static int
sb_repeat(sbuf *sb, const char *unit, size_t count, ts_error *err)
{
    size_t unit_len = strlen(unit);
    for (size_t i = 0; i < count; i++) {
        int rc = sb_append(sb, unit, unit_len, err);
        if (rc != TS_OK) {
            return rc;
        }
    }
    return TS_OK;
}

static int sb_printf(sbuf *sb, ts_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int
sb_printf(sbuf *sb, ts_error *err, const char *fmt, ...)
{
    char small[128];
    char *big = NULL;
    int n;
    int rc;
    va_list ap;
    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return FAIL(err, TS_EINVAL, "cannot format summary text");
    }
    if ((size_t)n < sizeof small) {
        return sb_append(sb, small, (size_t)n, err);
    }
    /* Only "%.2f" of a huge real gets here (up to ~310 digits). */
    big = malloc((size_t)n + 1);
    if (big == NULL) {
        return FAIL(err, TS_ENOMEM, "out of memory");
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rc = sb_append(sb, big, (size_t)n, err);
    free(big);
    return rc;
}

/* ---- UTF-8 code points ----
 * Python slices and pads by code point; a continuation byte (10xxxxxx) never
 * starts one. */

static size_t
utf8_count(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            count++;
        }
    }
    return count;
}

/* Byte offset where code point k starts (n when k is past the end). */
static size_t
utf8_offset(const char *s, size_t n, size_t k)
{
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (seen == k) {
                return i;
            }
            seen++;
        }
    }
    return n;
}

/* Appends Python's s[:stop] (stop may be negative). */
static int
append_head(sbuf *out, const char *s, size_t n, long long stop, ts_error *err)
{
    size_t chars = utf8_count(s, n);
    size_t keep;
    if (stop >= 0) {
        keep = (unsigned long long)stop < chars ? (size_t)stop : chars;
    }
    else {
        unsigned long long drop = (unsigned long long)(-(stop + 1)) + 1;
        keep = drop < chars ? chars - (size_t)drop : 0;
    }
    return sb_append(out, s, utf8_offset(s, n, keep), err);
}

/* The reference's wrap_string: appends s, shortened to max_len code points
 * with "[...]" ("end") or "[...]." + the last dotted part ("mid"). A bad mode
 * is only an error when a wrap is needed, as in the reference. */
static int
append_wrapped(sbuf *out,
               const char *s,
               size_t n,
               size_t max_len,
               ts_wrap_mode mode,
               ts_error *err)
{
    size_t chars = utf8_count(s, n);
    int rc;
    if (chars <= max_len || mode == TS_WRAP_NONE) {
        return sb_append(out, s, n, err);
    }
    if (mode == TS_WRAP_END) {
        rc = append_head(
            out, s, n, (long long)max_len - WRAP_MARKER_CHARS, err);
        return rc != TS_OK ? rc : sb_puts(out, wrap_marker, err);
    }
    if (mode == TS_WRAP_MID) {
        /* rpartition: the whole string when there is no dot. */
        size_t start = n;
        size_t tail_chars;
        while (start > 0 && s[start - 1] != '.') {
            start--;
        }
        /* "[...]." + the last part. */
        tail_chars = WRAP_MARKER_CHARS + 1 + utf8_count(s + start, n - start);
        rc = append_head(
            out, s, n, (long long)max_len - (long long)tail_chars, err);
        if (rc == TS_OK) {
            rc = sb_puts(out, wrap_marker, err);
        }
        if (rc == TS_OK) {
            rc = sb_append(out, ".", 1, err);
        }
        return rc != TS_OK ? rc : sb_append(out, s + start, n - start, err);
    }
    return FAIL(
        err, TS_EINVAL, "received an unexpected value of argument `mode`");
}

/* Appends s padded with spaces and cut to exactly width code points. */
static int
append_cell(sbuf *out, const char *s, size_t n, size_t width, ts_error *err)
{
    size_t chars = utf8_count(s, n);
    int rc = sb_append(out, s, utf8_offset(s, n, width), err);
    if (rc == TS_OK && chars < width) {
        rc = sb_repeat(out, " ", width - chars, err);
    }
    return rc;
}

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

/* Appends n with thousands separators, like Python's f"{n:,}". */
static int
append_grouped(sbuf *out, long long n, ts_error *err)
{
    char digits[32];
    unsigned long long magnitude =
        n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
    int len = snprintf(digits, sizeof digits, "%llu", magnitude);
    int rc = n < 0 ? sb_append(out, "-", 1, err) : TS_OK;
    for (int i = 0; rc == TS_OK && i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0) {
            rc = sb_append(out, ",", 1, err);
        }
        if (rc == TS_OK) {
            rc = sb_append(out, digits + i, 1, err);
        }
    }
    return rc;
}

/* The reference's _shape_text: tensors as Python tuples, containers by their
 * brackets, anything else by its kind. */
static int
append_shape(sbuf *out, const json_t *meta, int level, ts_error *err)
{
    const json_t *kind = json_object_get(meta, "kind");
    const char *name = json_string_value(kind);
    const json_t *items;
    size_t i;
    int rc = TS_OK;
    if (level > MAX_META_DEPTH) {
        return FAIL(err, TS_EFORMAT, "output metadata is nested too deeply");
    }
    if (!json_is_object(meta)) {
        return FAIL(err, TS_EFORMAT, "output metadata is not an object");
    }
    if (kind == NULL || json_is_null(kind)) {
        /* str(None), what the reference prints for a missing kind. */
        return sb_puts(out, "None", err);
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
        rc = sb_append(out, "(", 1, err);
        json_array_foreach(shape, i, dim)
        {
            if (rc != TS_OK) {
                break;
            }
            if (!json_is_integer(dim)) {
                return FAIL(
                    err, TS_EFORMAT, "tensor shape holds a non-integer");
            }
            rc = sb_printf(out,
                           err,
                           i > 0 ? ", %lld" : "%lld",
                           (long long)json_integer_value(dim));
        }
        /* A one-element tuple prints as "(n,)". */
        if (rc == TS_OK && json_array_size(shape) == 1) {
            rc = sb_append(out, ",", 1, err);
        }
        return rc != TS_OK ? rc : sb_append(out, ")", 1, err);
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
        rc = sb_append(out, brackets, 1, err);
        json_array_foreach(items, i, item)
        {
            if (rc == TS_OK && i > 0) {
                rc = sb_append(out, ", ", 2, err);
            }
            if (rc != TS_OK) {
                break;
            }
            if (brackets[0] == '{') {
                item = json_object_get(item, "value");
                if (item == NULL) {
                    return FAIL(err, TS_EFORMAT, "mapping item lacks 'value'");
                }
            }
            rc = append_shape(out, item, level + 1, err);
        }
        return rc != TS_OK ? rc : sb_append(out, brackets + 1, 1, err);
    }
    return sb_append(out, name, json_string_length(kind), err);
}

/* Appends the "{v:.0f}" of a receptive-field metric, or "?" without one. */
static int
append_rf(sbuf *out, const json_t *metrics, const char *key, ts_error *err)
{
    const json_t *metric = json_object_get(metrics, key);
    const json_t *status;
    const json_t *value;
    if (metric == NULL) {
        return sb_append(out, "?", 1, err);
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
        return sb_append(out, "?", 1, err);
    }
    if (!json_is_number(value)) {
        return FAIL(err, TS_EFORMAT, "metric '%s' value is not a number", key);
    }
    /* Python formats an int with 'f' through float() too. */
    return sb_printf(out, err, "%.0f", json_number_value(value));
}

/* One displayed row: the unwrapped text of every column. */
typedef struct row {
    sbuf cells[NCOLS];
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
    snprintf(where, sizeof where, "report layer %zu", index);
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
    snprintf(where, sizeof where, "report layer %zu parameters", index);
    if ((rc = get_int(params, "trainable", where, &f->trainable, err)) != TS_OK
        || (rc = get_int(params, "frozen", where, &f->frozen, err)) != TS_OK) {
        return rc;
    }
    snprintf(where, sizeof where, "report layer %zu buffers", index);
    return get_int(buffers, "elements", where, &f->buffer_elements, err);
}

/* The Layer cell: the tree prefix ("├─" at depth 1, "|    " per extra
 * level then "└─") and the row name. */
static int
append_layer_name(sbuf *cell,
                  long long depth,
                  const json_t *name,
                  ts_error *err)
{
    int rc = TS_OK;
    if (depth == 1) {
        rc = sb_puts(cell, TREE_BRANCH, err);
    }
    else if (depth != 0) {
        rc =
            sb_repeat(cell, "|    ", depth > 1 ? (size_t)(depth - 1) : 0, err);
        if (rc == TS_OK) {
            rc = sb_puts(cell, TREE_LAST, err);
        }
    }
    return rc != TS_OK ? rc
                       : sb_append(cell,
                                   json_string_value(name),
                                   json_string_length(name),
                                   err);
}

/* The Param # cell (parameters and buffers, grouped) and the Trainable
 * cell. */
static int
append_param_cells(row *out, const row_fields *f, size_t index, ts_error *err)
{
    long long params_total;
    long long total;
    int rc;
    if (__builtin_add_overflow(f->trainable, f->frozen, &params_total)
        || __builtin_add_overflow(params_total, f->buffer_elements, &total)) {
        return FAIL(err,
                    TS_EOVERFLOW,
                    "report layer %zu parameter count overflows",
                    index);
    }
    if ((rc = append_grouped(&out->cells[3], total, err)) != TS_OK) {
        return rc;
    }
    /* "-" is decided on parameters alone: buffers do not train. */
    return sb_puts(&out->cells[4],
                   params_total == 0  ? "-"
                   : f->trainable > 0 ? "True"
                                      : "False",
                   err);
}

/* The unwrapped text of every column of report layer `index`. */
static int
build_row(row *out, const json_t *layer, size_t index, ts_error *err)
{
    row_fields f;
    int rc = read_row_fields(layer, index, &f, err);
    if (rc == TS_OK) {
        rc = append_layer_name(&out->cells[0], f.depth, f.name, err);
    }
    if (rc == TS_OK) {
        rc = sb_append(&out->cells[1],
                       json_string_value(f.type),
                       json_string_length(f.type),
                       err);
    }
    if (rc == TS_OK) {
        rc = append_shape(&out->cells[2], f.output, 0, err);
    }
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
    return rc;
}

/* Appends one column's text for a row: wrapped as the reference does, then
 * padded and cut to width. */
static int
append_column(sbuf *out,
              const sbuf *cell,
              int column,
              size_t width,
              ts_wrap_mode mode,
              sbuf *scratch,
              ts_error *err)
{
    int rc;
    if (column != 0 && column != 2) {
        return append_cell(out, cell->data, cell->len, width, err);
    }
    scratch->len = 0;
    rc = column == 0
             ? append_wrapped(
                 scratch, cell->data, cell->len, width + 3, mode, err)
             : append_wrapped(
                 scratch, cell->data, cell->len, width, TS_WRAP_END, err);
    return rc != TS_OK
               ? rc
               : append_cell(out, scratch->data, scratch->len, width, err);
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
append_count_line(sbuf *out,
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
    rc = sb_printf(out, err, "\n%s: ", label);
    return rc != TS_OK ? rc : append_grouped(out, n, err);
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
append_total_line(sbuf *out,
                  const char *label,
                  const json_t *totals,
                  const char *key,
                  ts_error *err)
{
    const json_t *metric;
    const json_t *status;
    const json_t *value;
    const json_t *unit;
    const char *prefix = "";
    double scaled;
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
        return sb_printf(out, err, "\n%s: unavailable", label);
    }
    unit = json_object_get(metric, "unit");
    if (!json_is_number(value) || !json_is_string(unit)) {
        return FAIL(err,
                    TS_EFORMAT,
                    "total '%s' lacks a numeric value or a unit",
                    key);
    }
    /* The reference tests val // 1e12 > 0 and so on, i.e. val >= 1e12. */
    scaled = json_number_value(value);
    if (scaled >= 1e12) {
        scaled /= 1e12;
        prefix = "T";
    }
    else if (scaled >= 1e9) {
        scaled /= 1e9;
        prefix = "G";
    }
    else if (scaled >= 1e6) {
        scaled /= 1e6;
        prefix = "M";
    }
    else if (scaled >= 1e3) {
        scaled /= 1e3;
        prefix = "k";
    }
    return sb_printf(out,
                     err,
                     "\n%s: %s%.2f %s%s",
                     label,
                     complete ? "" : "known ",
                     scaled,
                     prefix,
                     json_string_value(unit));
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

static int
append_footer(sbuf *out,
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
    if (rc == TS_OK) {
        rc = sb_puts(out, "\n", err);
    }
    if (rc == TS_OK) {
        rc = sb_repeat(out, "-", line_length, err);
    }
    if (rc == TS_OK) {
        rc = sb_printf(out,
                       err,
                       "\nModel size (params + buffers): %.2f Mb\n",
                       (param_bytes + buffer_bytes) / (1024.0 * 1024.0));
    }
    if (rc == TS_OK) {
        rc = sb_repeat(out, "-", line_length, err);
    }
    for (size_t i = 0;
         rc == TS_OK && i < sizeof total_lines / sizeof *total_lines;
         i++) {
        if (!total_lines[i].optional
            || json_object_get(totals, total_lines[i].key) != NULL) {
            rc = append_total_line(
                out, total_lines[i].label, totals, total_lines[i].key, err);
        }
    }
    if (rc == TS_OK && diagnostic_count > 0) {
        rc = sb_printf(out,
                       err,
                       "\nDiagnostics: %zu (inspect report['diagnostics'])",
                       diagnostic_count);
    }
    if (rc == TS_OK) {
        rc = sb_puts(out, "\n", err);
    }
    return rc != TS_OK ? rc : sb_repeat(out, "_", line_length, err);
}

/* ---- the table ---- */

/* Applies max_depth like the reference's aggregate_info: the depth must be
 * one that some row has (so a too-deep value is refused), and rows deeper
 * than it are hidden. Fills keep[], one flag per layer. */
static int
select_rows(const json_t *layers, int max_depth, bool *keep, ts_error *err)
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
               sbuf *scratch,
               ts_error *err)
{
    for (int c = 0; c < NCOLS; c++) {
        widths[c] = strlen(headers[c]);
    }
    for (size_t r = 0; r < row_count; r++) {
        for (int c = 0; c < NCOLS; c++) {
            const sbuf *cell = &rows[r].cells[c];
            size_t chars;
            if (c == 0 || c == 2) {
                int rc;
                scratch->len = 0;
                rc = append_wrapped(scratch,
                                    cell->data,
                                    cell->len,
                                    MEASURE_WIDTH,
                                    c == 0 ? TS_WRAP_MID : TS_WRAP_END,
                                    err);
                if (rc != TS_OK) {
                    return rc;
                }
                chars = utf8_count(scratch->data, scratch->len);
            }
            else {
                chars = utf8_count(cell->data, cell->len);
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
static int
append_table_head(sbuf *out,
                  const size_t widths[NCOLS],
                  int ncols,
                  size_t line_length,
                  ts_error *err)
{
    int rc = sb_repeat(out, "_", line_length, err);
    if (rc == TS_OK) {
        rc = sb_puts(out, "\n", err);
    }
    for (int c = 0; rc == TS_OK && c < ncols; c++) {
        if (c > 0) {
            rc = sb_repeat(out, " ", MARGIN, err);
        }
        if (rc == TS_OK) {
            rc = append_cell(
                out, headers[c], strlen(headers[c]), widths[c], err);
        }
    }
    if (rc == TS_OK) {
        rc = sb_puts(out, "\n", err);
    }
    return rc != TS_OK ? rc : sb_repeat(out, "=", line_length, err);
}

/* One line per row, each column wrapped, padded and cut to its width. */
static int
append_rows(sbuf *out,
            const row *rows,
            size_t row_count,
            const size_t widths[NCOLS],
            int ncols,
            ts_wrap_mode mode,
            sbuf *scratch,
            ts_error *err)
{
    int rc = TS_OK;
    for (size_t r = 0; rc == TS_OK && r < row_count; r++) {
        rc = sb_puts(out, "\n", err);
        for (int c = 0; rc == TS_OK && c < ncols; c++) {
            if (c > 0) {
                rc = sb_repeat(out, " ", MARGIN, err);
            }
            if (rc == TS_OK) {
                rc = append_column(
                    out, &rows[r].cells[c], c, widths[c], mode, scratch, err);
            }
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
    sbuf out = {NULL, 0, 0};
    sbuf scratch = {NULL, 0, 0};
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
        rc = append_table_head(&out, widths, ncols, line_length, err);
    }
    if (rc == TS_OK) {
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
        rc = sb_puts(&out, "\n", err);
    }
    if (rc == TS_OK) {
        rc = sb_repeat(&out, "=", line_length, err);
    }
    if (rc == TS_OK) {
        rc = append_footer(&out, totals, diagnostics, line_length, err);
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
