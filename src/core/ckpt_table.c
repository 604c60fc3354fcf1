/* The text table of a checkpoint report (ts_checkpoint_table): what
 * `torchscan inspect` prints. It reads the report as JSON, so a report
 * saved with --json prints the same table. */
#include <stdlib.h>
#include <string.h>

#include "text_buf.h"
#include "torchscan/checkpoint.h"

/* An integer with thousands separators, or "?" for null. */
static void
put_count(ts_text_buf *b, const json_t *v, int width)
{
    char digits[32], out[48];
    size_t len, o = 0;
    int pad;
    if (!json_is_integer(v)) {
        snprintf(out, sizeof out, "?");
    }
    else {
        long long x = (long long)json_integer_value(v);
        bool neg = x < 0;
        snprintf(digits,
                 sizeof digits,
                 "%llu",
                 neg ? 0ULL - (unsigned long long)x : (unsigned long long)x);
        len = strlen(digits);
        if (neg) {
            out[o++] = '-';
        }
        for (size_t i = 0; i < len; i++) {
            if (i > 0 && (len - i) % 3 == 0) {
                out[o++] = ',';
            }
            out[o++] = digits[i];
        }
        out[o] = '\0';
    }
    pad = width - (int)strlen(out);
    for (int i = 0; i < pad; i++) {
        ts_text_put(b, " ");
    }
    ts_text_put(b, out);
}

static const char *
text_of(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s != NULL ? s : "";
}

/* The last component of a dotted path. */
static const char *
last_component(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot != NULL ? dot + 1 : path;
}

static void
put_padded(ts_text_buf *b, const char *text, int width)
{
    int len = (int)strlen(text);
    ts_text_put(b, text);
    for (int i = len; i < width; i++) {
        ts_text_put(b, " ");
    }
}

static void
files_section(ts_text_buf *b, const json_t *report)
{
    const json_t *files = json_object_get(report, "files");
    size_t i;
    json_t *f;
    ts_text_printf(b,
                   "Checkpoint (%s): %zu file%s\n",
                   text_of(report, "format"),
                   json_array_size(files),
                   json_array_size(files) == 1 ? "" : "s");
    json_array_foreach(files, i, f)
    {
        ts_text_put(b, "  ");
        ts_text_put(b, text_of(f, "name"));
        ts_text_put(b, "  ");
        ts_text_put(b, text_of(f, "format"));
        ts_text_put(b, "  ");
        put_count(b, json_object_get(f, "bytes"), 0);
        ts_text_put(b, " bytes, header ");
        put_count(b, json_object_get(f, "header_bytes"), 0);
        ts_text_put(b, ", ");
        put_count(b, json_object_get(f, "tensors"), 0);
        ts_text_put(b, " tensors\n");
    }
}

static void
modules_section(ts_text_buf *b, const json_t *report, int max_depth)
{
    const json_t *modules = json_object_get(report, "modules");
    int width = 24;
    size_t i;
    json_t *m;
    json_array_foreach(modules, i, m)
    {
        int depth = (int)json_integer_value(json_object_get(m, "depth"));
        int w = 2 * depth + (int)strlen(last_component(text_of(m, "path")));
        if ((max_depth < 0 || depth <= max_depth) && w > width && w < 80) {
            width = w;
        }
    }
    ts_text_put(b, "\n");
    put_padded(b, "Module", width);
    ts_text_put(b, "   Tensors         Elements            Bytes\n");
    json_array_foreach(modules, i, m)
    {
        int depth = (int)json_integer_value(json_object_get(m, "depth"));
        const char *path = text_of(m, "path");
        char name[96];
        if (max_depth >= 0 && depth > max_depth) {
            continue;
        }
        snprintf(name,
                 sizeof name,
                 "%*s%s",
                 2 * (depth < 30 ? depth : 30),
                 "",
                 depth == 0 ? "(checkpoint)" : last_component(path));
        put_padded(b, name, width);
        put_count(b, json_object_get(m, "tensors"), 10);
        put_count(b, json_object_get(m, "elements"), 17);
        put_count(b, json_object_get(m, "bytes"), 17);
        ts_text_put(b, "\n");
    }
}

static void
dtypes_section(ts_text_buf *b, const json_t *report)
{
    size_t i;
    json_t *d;
    ts_text_put(b, "\n");
    put_padded(b, "Dtype", 24);
    ts_text_put(b, "   Tensors         Elements            Bytes\n");
    json_array_foreach(json_object_get(report, "dtypes"), i, d)
    {
        put_padded(b, text_of(d, "dtype"), 24);
        put_count(b, json_object_get(d, "tensors"), 10);
        put_count(b, json_object_get(d, "elements"), 17);
        put_count(b, json_object_get(d, "bytes"), 17);
        ts_text_put(b, "\n");
    }
}

static void
shared_section(ts_text_buf *b, const json_t *report)
{
    const json_t *shared = json_object_get(report, "shared");
    size_t i, k;
    json_t *s, *name;
    if (json_array_size(shared) == 0) {
        return;
    }
    ts_text_put(b, "\nShared storages:\n");
    json_array_foreach(shared, i, s)
    {
        ts_text_printf(b,
                       "  storage %s (%s):",
                       text_of(s, "storage"),
                       text_of(s, "relation"));
        json_array_foreach(json_object_get(s, "tensors"), k, name)
        {
            if (k == 8) {
                ts_text_printf(b,
                               " ... (%zu in all)",
                               json_array_size(json_object_get(s, "tensors")));
                break;
            }
            ts_text_put(b, k ? ", " : " ");
            ts_text_put(b, json_string_value(name));
        }
        ts_text_put(b, "\n");
    }
}

static void
globals_section(ts_text_buf *b, const json_t *report)
{
    size_t i;
    json_t *g;
    bool any = false;
    json_array_foreach(json_object_get(report, "globals"), i, g)
    {
        if (json_is_true(json_object_get(g, "allowed"))) {
            continue;
        }
        if (!any) {
            ts_text_put(b,
                        "\nGlobals outside torch.load(weights_only=True)'s "
                        "allowlist (named, never imported or called):\n");
            any = true;
        }
        ts_text_printf(b, "  %s\n", text_of(g, "name"));
    }
}

static void
totals_section(ts_text_buf *b, const json_t *report)
{
    static const char *const keys[] = {
        "tensors", "elements", "tensor_bytes", "stored_bytes", "file_bytes"};
    const json_t *totals = json_object_get(report, "totals");
    ts_text_put(b, "\n");
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const json_t *m = json_object_get(totals, keys[k]);
        const char *status = text_of(m, "status");
        put_padded(b, keys[k], 14);
        if (strcmp(status, "complete") == 0) {
            put_count(b, json_object_get(m, "value"), 17);
        }
        else {
            ts_text_put(b, " >= ");
            put_count(b, json_object_get(m, "known_value"), 13);
        }
        ts_text_printf(b, "  (%s)\n", status);
    }
}

static void
diagnostics_section(ts_text_buf *b, const json_t *report)
{
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(report, "diagnostics"), i, d)
    {
        if (i == 0) {
            ts_text_put(b, "\nDiagnostics:\n");
        }
        ts_text_printf(
            b, "  %s: %s\n", text_of(d, "code"), text_of(d, "message"));
    }
}

char *
ts_checkpoint_table(const json_t *report, int max_depth, ts_error *err)
{
    ts_text_buf b = {0};
    const char *type =
        json_string_value(json_object_get(report, "report_type"));
    if (!json_is_object(report) || type == NULL
        || strcmp(type, "checkpoint") != 0
        || !json_is_array(json_object_get(report, "modules"))
        || !json_is_object(json_object_get(report, "totals"))) {
        ts_error_set(err,
                     TS_EFORMAT,
                     "not a checkpoint report (report_type \"checkpoint\" "
                     "with modules and totals)");
        return NULL;
    }
    files_section(&b, report);
    modules_section(&b, report, max_depth);
    dtypes_section(&b, report);
    shared_section(&b, report);
    globals_section(&b, report);
    totals_section(&b, report);
    diagnostics_section(&b, report);
    if (b.failed || b.data == NULL) {
        free(b.data);
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    return b.data;
}

/* [2, 3] as "[2, 3]"; anything else as "?". */
static void
put_shape(ts_text_buf *b, const json_t *shape)
{
    size_t i;
    json_t *d;
    if (!json_is_array(shape)) {
        ts_text_put(b, "?");
        return;
    }
    ts_text_put(b, "[");
    json_array_foreach(shape, i, d)
    {
        ts_text_printf(
            b, "%s%lld", i ? ", " : "", (long long)json_integer_value(d));
    }
    ts_text_put(b, "]");
}

static void
put_entry(ts_text_buf *b, const json_t *e, bool module)
{
    ts_text_put(b, "  ");
    if (module) {
        const char *path = text_of(e, "path");
        ts_text_put(b, path[0] ? path : "(checkpoint)");
        if (json_object_get(e, "elements") != NULL) {
            ts_text_put(b, ": ");
            put_count(b, json_object_get(e, "elements"), 0);
            ts_text_put(b, " elements in the checkpoint");
        }
        if (json_object_get(e, "expected_elements") != NULL) {
            ts_text_put(b, json_object_get(e, "elements") ? ", " : ": ");
            put_count(b, json_object_get(e, "expected_elements"), 0);
            ts_text_put(b, " expected");
        }
    }
    else {
        ts_text_put(b, text_of(e, "name"));
        if (json_object_get(e, "shape") != NULL) {
            ts_text_put(b, ": ");
            put_shape(b, json_object_get(e, "shape"));
            ts_text_printf(b, " %s in the checkpoint", text_of(e, "dtype"));
        }
        if (json_object_get(e, "expected_shape") != NULL) {
            ts_text_put(b, json_object_get(e, "shape") ? ", " : ": ");
            put_shape(b, json_object_get(e, "expected_shape"));
            ts_text_printf(b, " %s expected", text_of(e, "expected_dtype"));
        }
    }
    ts_text_put(b, "\n");
}

char *
ts_checkpoint_match_text(const json_t *match, ts_error *err)
{
    static const char *const lists[] = {"missing", "unexpected", "mismatched"};
    ts_text_buf b = {0};
    const char *type =
        json_string_value(json_object_get(match, "report_type"));
    bool module;
    if (type == NULL || strcmp(type, "checkpoint_match") != 0) {
        ts_error_set(err, TS_EFORMAT, "not a checkpoint match result");
        return NULL;
    }
    module = strcmp(text_of(match, "level"), "module") == 0;
    ts_text_printf(
        &b,
        "%s (%s level): %lld matched, %zu missing, %zu "
        "unexpected, %zu mismatched\n",
        json_is_true(json_object_get(match, "matches")) ? "matches"
                                                        : "does not match",
        text_of(match, "level"),
        (long long)json_integer_value(json_object_get(match, "matched")),
        json_array_size(json_object_get(match, "missing")),
        json_array_size(json_object_get(match, "unexpected")),
        json_array_size(json_object_get(match, "mismatched")));
    for (size_t k = 0; k < 3; k++) {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(match, lists[k]), i, e)
        {
            if (i == 0) {
                ts_text_printf(&b, "%s:\n", lists[k]);
            }
            put_entry(&b, e, module);
        }
    }
    if (b.failed || b.data == NULL) {
        free(b.data);
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    return b.data;
}
