/* The standalone SVG of an AnalysisReport (contract 4.2): the map of one
 * metric view with the HTML map's geometry, rail cards, one inspector per
 * tile (shown by the :target rule when its tile is followed), static call
 * evidence, suggestion links, diagnostics and an evidence element whose
 * title holds the context, the inputs and the before diagnostics as JSON.
 * No script, image or foreignObject; every link is internal. */
#include <stdlib.h>
#include <string.h>

#include "render_analysis.h"
#include "render_map.h"
#include "render_style.h"
#include "render_text.h"

#define SVG_WIDTH 1000.0
#define MARGIN 20.0
#define LINE 16.0

/* One line of text at (MARGIN, *y); the caller writes the content and
 * closes it with end_line. */
static void
line(ts_text_buf *b, double *y, const char *cls)
{
    *y += cls != NULL && strcmp(cls, "h") == 0 ? LINE + 10 : LINE;
    ts_text_printf(b, "<text x=\"%.0f\" y=\"%.2f\"", MARGIN, *y);
    if (cls != NULL) {
        ts_text_printf(b, " class=\"%s\"", cls);
    }
    ts_text_put(b, ">");
}

static void
maps(ts_text_buf *b, const rp_page *page, int v, double *y)
{
    const rp_view *view = &page->views[v];
    for (size_t gi = 0; gi < view->ngroups; gi++) {
        const rp_group *g = &view->groups[gi];
        line(b, y, "h");
        ts_text_put(b, "Module cost map · ");
        rm_group_key(b, g);
        ts_text_put(b, "</text>\n");
        *y += 6;
        ts_text_printf(
            b,
            "<g id=\"map-%s\" transform=\"translate(%.0f %.2f)\">\n",
            g->id,
            MARGIN,
            *y);
        rm_tiles(b, page, v, gi, RM_SVG, 0.0);
        ts_text_put(b, "</g>\n");
        *y += rm_height(g);
    }
    if (view->ngroups == 0) {
        line(b, y, NULL);
        ts_text_put(b, "No module call recorded this measurement.</text>\n");
    }
}

static void
rail_cards(ts_text_buf *b, const rp_page *page, int v, double *y)
{
    static const char *const kinds[] = {"unknown", "complete zero", "small"};
    const rp_view *view = &page->views[v];
    for (size_t gi = 0; gi < view->ngroups; gi++) {
        const rp_group *g = &view->groups[gi];
        size_t shown = 0, total = 0;
        for (size_t n = 0; n < page->nnodes; n++) {
            int kind = rp_rail_kind(page, g, n);
            bool removed = rm_removed(page, g, n);
            if (kind < 0 && !removed) {
                continue;
            }
            if (++total > RP_RAIL_LIMIT) {
                continue;
            }
            shown++;
            *y += LINE + 6;
            ts_text_printf(
                b,
                "<g class=\"rail-card\"><rect class=\"card\" x=\"%.0f\" "
                "y=\"%.2f\" width=\"%.0f\" height=\"%.0f\" rx=\"3\"/>"
                "<text x=\"%.0f\" y=\"%.2f\">",
                MARGIN,
                *y - LINE + 2,
                SVG_WIDTH - 2 * MARGIN,
                LINE + 4,
                MARGIN + 6,
                *y + 2);
            ts_text_put_escaped(b, rp_path_label(page->nodes[n].path));
            ts_text_put(b, " · ");
            if (removed) {
                ts_text_put(b, "removed · before: ");
                rt_status_short(b, &g->sub[1][n], g->unit);
            }
            else {
                ts_text_put(b, kinds[kind]);
                ts_text_put(b, " · ");
                rt_status_short(b, &g->own[0][n], g->unit);
            }
            ts_text_put(b, " · not sized by cost</text></g>\n");
        }
        if (total > shown) {
            line(b, y, "m");
            ts_text_printf(
                b,
                "and %zu more contributions not sized by cost</text>\n",
                total - shown);
        }
    }
}

static void
inspectors(ts_text_buf *b, const rp_page *page, int v, double *y)
{
    const rp_view *view = &page->views[v];
    double top = *y + 8;
    size_t lines = page->before != NULL ? 6 : 5;
    line(b, y, "h");
    ts_text_put(b, "Inspector (follow a tile)</text>\n");
    for (size_t gi = 0; gi < view->ngroups; gi++) {
        const rp_group *g = &view->groups[gi];
        for (size_t n = 0; n < page->nnodes; n++) {
            const rp_node *node = &page->nodes[n];
            double ly = top + LINE;
            if (g->width[n] < RP_MIN_TILE_WIDTH) {
                continue;
            }
            ts_text_printf(
                b,
                "<g class=\"insp\" id=\"inspector-%s-%zu\"><rect "
                "class=\"card\" x=\"%.0f\" y=\"%.2f\" width=\"%.0f\" "
                "height=\"%.0f\"/>",
                g->id,
                n,
                MARGIN,
                top,
                SVG_WIDTH - 2 * MARGIN,
                lines * LINE + 8);
            ts_text_printf(b, "<text x=\"%.0f\" y=\"%.2f\">", MARGIN + 6, ly);
            ts_text_put_escaped(b, rp_path_label(node->path));
            ts_text_put(b, " · ");
            ts_text_put_escaped(b, node->type);
            ts_text_printf(b,
                           " · %zu call%s</text>",
                           node->ncalls[0],
                           node->ncalls[0] == 1 ? "" : "s");
            ts_text_printf(
                b, "<text x=\"%.0f\" y=\"%.2f\">", MARGIN + 6, ly += LINE);
            ts_text_put(b, "Subtotal: ");
            rm_subtotal_text(b, g, n, 0, RM_SVG);
            ts_text_put(b, "</text>");
            if (page->before != NULL) {
                ts_text_printf(
                    b, "<text x=\"%.0f\" y=\"%.2f\">", MARGIN + 6, ly += LINE);
                ts_text_put(b, "Before subtree: ");
                rm_subtotal_text(b, g, n, 1, RM_SVG);
                ts_text_put(b, " · After subtree: ");
                rm_subtotal_text(b, g, n, 0, RM_SVG);
                ts_text_put(b, "</text>");
            }
            ts_text_printf(
                b, "<text x=\"%.0f\" y=\"%.2f\">", MARGIN + 6, ly += LINE);
            rm_group_key(b, g);
            ts_text_put(b, "</text>");
            if (node->ncalls[0] > 0) {
                ts_text_printf(
                    b,
                    "<a href=\"#call-%zu\" tabindex=\"0\"><text "
                    "x=\"%.0f\" y=\"%.2f\">Call evidence</text></a>",
                    node->calls[0][0],
                    MARGIN + 6,
                    ly + LINE);
            }
            else {
                ts_text_printf(b,
                               "<text x=\"%.0f\" y=\"%.2f\">%s</text>",
                               MARGIN + 6,
                               ly + LINE,
                               node->ncalls[1] > 0
                                   ? "Called in the before report only"
                                   : "No call of its own (a container)");
            }
            ts_text_put(b, "</g>\n");
        }
    }
    *y = top + lines * LINE + 16;
}

static void
call_evidence(ts_text_buf *b, const rp_page *page, int v, double *y)
{
    const json_t *layers = page->layers[0];
    line(b, y, "h");
    ts_text_put(b, "Call evidence</text>\n");
    for (size_t i = 0; i < json_array_size(layers); i++) {
        const json_t *metric, *layer = json_array_get(layers, i);
        const json_t *owner = json_object_get(
            json_object_get(layer, "metric_owners"), page->views[v].name);
        rp_sum value = rp_row(page, 0, v, i, &metric);
        *y += LINE;
        ts_text_printf(
            b, "<text id=\"call-%zu\" x=\"%.0f\" y=\"%.2f\">", i, MARGIN, *y);
        ts_text_put_escaped(b, rp_path_label(rp_text(layer, "path")));
        ts_text_printf(b,
                       " call #%lld · ",
                       (long long)json_integer_value(
                           json_object_get(layer, "call_index")));
        if (owner != NULL) {
            ts_text_put(b, "covered · included in ");
            ts_text_put_escaped(b, rp_path_label(rp_text(owner, "path")));
            ts_text_printf(b,
                           " · call #%lld inclusive estimate",
                           (long long)json_integer_value(
                               json_object_get(owner, "call_index")));
        }
        else if (value.status == RP_ABSENT) {
            size_t n = rp_node_find(page, rp_text(layer, "path"));
            ts_text_put(b,
                        n != RP_NONE && page->nodes[n].first_child != RP_NONE
                            ? "no own record · its subtotal is its children's"
                        : page->structure ? "structural · unscaled"
                                          : "unavailable · unknown");
        }
        else if (value.status == TS_PARTIAL) {
            ts_text_put(b, "partial · ≥ ");
            rt_grouped(b, &value);
            ts_text_put(b, " ");
            ts_text_put_escaped(b,
                                metric != NULL ? rp_text(metric, "unit") : "");
            ts_text_put(b, " · full value unknown");
        }
        else {
            rt_status_text(
                b,
                &value,
                metric != NULL
                    ? rp_text(metric, "unit")
                    : (v == RP_VIEW_PARAMETERS ? "parameters" : "bytes"));
        }
        ts_text_put(b, "</text>\n");
    }
}

static void
diagnostics(ts_text_buf *b,
            const json_t *list,
            const char *prefix,
            const char *heading,
            double *y)
{
    line(b, y, "h");
    ts_text_printf(b, "%s (%zu)</text>\n", heading, json_array_size(list));
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *d = json_array_get(list, i);
        *y += LINE;
        ts_text_printf(b,
                       "<text id=\"%sdiagnostic-%zu\" x=\"%.0f\" y=\"%.2f\">",
                       prefix,
                       i,
                       MARGIN,
                       *y);
        ts_text_put_escaped(b, rp_text(d, "severity"));
        ts_text_put(b, " · ");
        ts_text_put_escaped(b, rp_text(d, "code"));
        ts_text_put(b, " ");
        ts_text_put_escaped(b, rp_text(d, "message"));
        ts_text_put(b, "</text>\n");
    }
}

static void
suggestions(ts_text_buf *b, const rp_page *page, double *y)
{
    line(b, y, "h");
    ts_text_put(b, "Evidence-linked suggestions</text>\n");
    for (size_t i = 0; i < json_array_size(page->suggestions); i++) {
        const json_t *s = json_array_get(page->suggestions, i);
        *y += LINE;
        ts_text_put(b, "<a href=\"");
        ts_text_put_escaped(b, rp_text(s, "href"));
        ts_text_printf(
            b, "\" tabindex=\"0\"><text x=\"%.0f\" y=\"%.2f\">", MARGIN, *y);
        ts_text_put_escaped(b, rp_text(s, "fact"));
        ts_text_put(b, "</text></a>\n");
        line(b, y, "m");
        ts_text_put_escaped(b, rp_text(s, "experiment"));
        ts_text_put(b, "</text>\n");
    }
}

static int
evidence(ts_text_buf *b, const rp_page *page)
{
    json_t *data = json_pack("{s:O?,s:O?,s:O?}",
                             "context",
                             json_object_get(page->report, "context"),
                             "inputs",
                             json_object_get(page->report, "inputs"),
                             "before_diagnostics",
                             page->before != NULL
                                 ? json_object_get(page->before, "diagnostics")
                                 : json_null());
    if (data == NULL) {
        return TS_ENOMEM;
    }
    ts_text_put(b, "<g id=\"svg-evidence\"><title>");
    rt_json_esc(b, data);
    ts_text_put(b, "</title></g>\n");
    json_decref(data);
    return TS_OK;
}

char *
rsv_page(const rp_page *page, const char *title, int view, ts_error *err)
{
    ts_text_buf body = {NULL, 0, 0, false}, b = {NULL, 0, 0, false};
    double y = 8;
    line(&body, &y, "h");
    ts_text_put_escaped(&body, title);
    ts_text_put(&body, " · ");
    ts_text_put(&body, page->views[view].label);
    ts_text_put(&body, "</text>\n");
    line(&body, &y, "m");
    ts_text_put(&body, "TorchScan · schema 1 · ");
    ts_text_put_escaped(
        &body,
        rp_text(json_object_get(page->report, "context"), "model_type"));
    ts_text_put(&body, "</text>\n");
    maps(&body, page, view, &y);
    rail_cards(&body, page, view, &y);
    inspectors(&body, page, view, &y);
    call_evidence(&body, page, view, &y);
    suggestions(&body, page, &y);
    diagnostics(&body,
                json_object_get(page->report, "diagnostics"),
                "",
                "Diagnostics",
                &y);
    if (page->before != NULL) {
        diagnostics(&body,
                    json_object_get(page->before, "diagnostics"),
                    "before-",
                    "Before diagnostics",
                    &y);
    }
    if (evidence(&body, page) != TS_OK) {
        body.failed = true;
    }
    y += 2 * MARGIN;
    ts_text_printf(
        &b,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f "
        "%.2f\" width=\"%.0f\" height=\"%.2f\" role=\"img\" "
        "aria-labelledby=\"svg-title\">\n<title id=\"svg-title\">",
        SVG_WIDTH,
        y,
        SVG_WIDTH,
        y);
    ts_text_put_escaped(&b, title);
    ts_text_put(&b, "</title>\n<style>");
    ts_text_put(&b, rs_svg_style);
    ts_text_put(
        &b,
        "</style>\n<defs><pattern id=\"hatch\" "
        "patternUnits=\"userSpaceOnUse\" "
        "width=\"6\" height=\"6\"><path d=\"M0 6L6 0\" stroke=\"#24292f\" "
        "stroke-width=\"1.2\"/></pattern></defs>\n<rect width=\"100%\" "
        "height=\"100%\" fill=\"#fff\"/>\n");
    if (body.data != NULL) {
        ts_text_put(&b, body.data);
    }
    ts_text_put(&b, "</svg>\n");
    b.failed |= body.failed;
    free(body.data);
    if (b.failed || b.data == NULL) {
        free(b.data);
        ts_error_set(err, TS_ENOMEM, "out of memory rendering a report");
        return NULL;
    }
    return b.data;
}
