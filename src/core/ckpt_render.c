/* The storage map of a checkpoint report (ts_checkpoint_render): an
 * icicle of the module prefixes, one row per depth, each prefix as wide as
 * the bytes of the tensors under it; `torchscan render` draws it. The
 * picture is a function of the report alone (no clock, no randomness):
 * the same report gives the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "text_buf.h"
#include "torchscan/checkpoint.h"

#define MAP_WIDTH 960.0
#define ROW_HEIGHT 22.0
#define MAX_ROWS 12

static const char *const fills[] = {
    "#4e79a7", "#59a14f", "#9c755f", "#f28e2b", "#76b7b2", "#b07aa1"};

static const char *
text_of(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s != NULL ? s : "";
}

static void
svg(ts_text_buf *b, const json_t *report, const char *title)
{
    const json_t *modules = json_object_get(report, "modules");
    const json_t *root = json_array_get(modules, 0);
    double total = (double)json_integer_value(json_object_get(root, "bytes"));
    double cursor[MAX_ROWS + 1] = {0};
    int rows = 1;
    size_t i;
    json_t *m;
    json_array_foreach(modules, i, m)
    {
        int depth = (int)json_integer_value(json_object_get(m, "depth"));
        if (depth < MAX_ROWS && depth + 1 > rows) {
            rows = depth + 1;
        }
    }
    ts_text_printf(b,
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" "
                   "viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
                   "role=\"img\" font-family=\"sans-serif\" font-size=\"11\">"
                   "\n<title>",
                   MAP_WIDTH,
                   ROW_HEIGHT * rows + 30,
                   MAP_WIDTH,
                   ROW_HEIGHT * rows + 30);
    ts_text_put_escaped(b, title);
    ts_text_put(b, "</title>\n<text x=\"4\" y=\"16\" font-size=\"13\">");
    ts_text_put_escaped(b, title);
    ts_text_printf(b,
                   ": storage by module prefix (%s, %lld bytes)</text>\n",
                   text_of(report, "format"),
                   (long long)total);
    json_array_foreach(modules, i, m)
    {
        int depth = (int)json_integer_value(json_object_get(m, "depth"));
        const json_t *bytes = json_object_get(m, "bytes");
        const char *path = text_of(m, "path");
        const char *dot = strrchr(path, '.');
        double x, w, y;
        if (depth >= MAX_ROWS || !json_is_integer(bytes) || total <= 0) {
            continue;
        }
        x = cursor[depth];
        w = (double)json_integer_value(bytes) / total * MAP_WIDTH;
        cursor[depth] += w;
        cursor[depth + 1] = x; /* its children start where it does */
        if (w < 0.5) {
            continue; /* too thin to draw: still in the totals */
        }
        y = 24 + ROW_HEIGHT * depth;
        ts_text_printf(b, "<g><title>%s", depth == 0 ? "(checkpoint)" : "");
        ts_text_put_escaped(b, path);
        ts_text_printf(
            b,
            ": %lld bytes, %lld tensors, %lld elements</title>"
            "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" "
            "height=\"%.0f\" fill=\"%s\" stroke=\"#fff\"/>",
            (long long)json_integer_value(bytes),
            (long long)json_integer_value(json_object_get(m, "tensors")),
            (long long)json_integer_value(json_object_get(m, "elements")),
            x,
            y,
            w,
            ROW_HEIGHT - 2,
            fills[depth % 6]);
        if (w > 40) {
            const char *label = depth == 0    ? "(checkpoint)"
                                : dot != NULL ? dot + 1
                                              : path;
            size_t fit = (size_t)(w / 6.5);
            char cut[128];
            snprintf(
                cut, sizeof cut, "%.*s", (int)(fit < 120 ? fit : 120), label);
            ts_text_printf(b,
                           "<text x=\"%.2f\" y=\"%.0f\" fill=\"#fff\">",
                           x + 3,
                           y + 14);
            ts_text_put_escaped(b, cut);
            ts_text_put(b, "</text>");
        }
        ts_text_put(b, "</g>\n");
    }
    ts_text_put(b, "</svg>\n");
}

char *
ts_checkpoint_render(const json_t *report,
                     const char *title,
                     const char *format,
                     ts_error *err)
{
    ts_text_buf b = {0};
    const char *type =
        json_string_value(json_object_get(report, "report_type"));
    const json_t *root = json_array_get(json_object_get(report, "modules"), 0);
    bool html;
    if (format == NULL
        || (strcmp(format, "svg") != 0 && strcmp(format, "html") != 0)) {
        ts_error_set(err, TS_EINVAL, "format is html or svg");
        return NULL;
    }
    if (type == NULL || strcmp(type, "checkpoint") != 0 || root == NULL
        || json_integer_value(json_object_get(root, "depth")) != 0) {
        ts_error_set(err,
                     TS_EFORMAT,
                     "not a checkpoint report (report_type \"checkpoint\" "
                     "with modules)");
        return NULL;
    }
    html = strcmp(format, "html") == 0;
    if (html) {
        char *table = ts_checkpoint_table(report, 3, err);
        if (table == NULL) {
            return NULL;
        }
        ts_text_put(&b,
                    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                    "<meta charset=\"utf-8\">\n"
                    "<meta http-equiv=\"Content-Security-Policy\" "
                    "content=\"default-src 'none'; style-src "
                    "'unsafe-inline'\">\n<title>");
        ts_text_put_escaped(&b, title);
        ts_text_put(&b,
                    "</title>\n<style>body{font-family:sans-serif;margin:"
                    "1em}pre{font-size:12px}</style>\n</head>\n<body>\n"
                    "<h1>");
        ts_text_put_escaped(&b, title);
        ts_text_put(&b, "</h1>\n");
        svg(&b, report, title);
        ts_text_put(&b, "<pre>");
        ts_text_put_escaped(&b, table);
        ts_text_put(&b, "</pre>\n</body>\n</html>\n");
        free(table);
    }
    else {
        svg(&b, report, title);
    }
    if (b.failed || b.data == NULL) {
        free(b.data);
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    return b.data;
}
