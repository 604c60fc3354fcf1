/* ts_render_analysis (torchscan/render.h): checks the arguments, builds the
 * page model, hands it to the HTML or SVG emitter. */
#include <string.h>

#include "render_analysis.h"
#include "table_text.h"
#include "torchscan/render.h"
#include "torchscan/report_check.h"


char *
ts_render_analysis(const json_t *report,
                   const json_t *before,
                   const char *title,
                   const char *metric,
                   const char *format,
                   ts_error *err)
{
    rp_page page;
    json_t *title_text;
    char *out;
    int view = metric != NULL ? rp_view_index(metric) : -1, rc;
    bool svg = format != NULL && strcmp(format, "svg") == 0;
    if (format == NULL || (!svg && strcmp(format, "html") != 0)) {
        ts_error_set(err, TS_EINVAL, "format must be 'html' or 'svg'");
        return NULL;
    }
    if (view < 0) {
        ts_error_set(
            err,
            TS_EINVAL,
            "metric must be one of module_flops, macs, dmas, parameters, "
            "parameter_bytes");
        return NULL;
    }
    if (title == NULL || !ts_utf8_valid(title, strlen(title))) {
        ts_error_set(err, TS_EINVAL, "title must be valid UTF-8 text");
        return NULL;
    }
    if ((title_text = json_string(title)) == NULL) {
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    rc = ts_json_data_check(title_text, "title", err);
    json_decref(title_text);
    if (rc != TS_OK && err != NULL) {
        err->code = TS_EINVAL; /* a bad argument, not a bad report */
    }
    if (rc != TS_OK || rp_page_build(&page, report, before, err) != TS_OK) {
        return NULL;
    }
    out = svg ? rsv_page(&page, title, view, err)
              : rh_page(&page, title, view, err);
    rp_page_free(&page);
    return out;
}
