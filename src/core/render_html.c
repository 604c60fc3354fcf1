/* The HTML page of an AnalysisReport (contract 4.1): emits the page model
 * of render_model.c. Every number is in the HTML, so the page reads with
 * JavaScript off; the one fixed script (render_script.js) only adds map
 * selection, keyboard moves, collapse/zoom/parent/reset, the inspector and
 * the path search. */
#include <stdlib.h>
#include <string.h>

#include "render_analysis.h"
#include "render_html.h"
#include "render_map.h"
#include "render_script.h"
#include "render_style.h"
#include "render_text.h"
#include "torchscan/json_text.h"

/* ---- header and cards --------------------------------------------------- */

/* "(1, 3, 32, 32) torch.float32" for each tensor of a metadata tree. */
void
rh_shapes(ts_text_buf *b, const json_t *meta, int depth)
{
    const char *kind = rp_text(meta, "kind");
    if (depth > 8) {
        return;
    }
    if (strcmp(kind, "tensor") == 0) {
        const json_t *dims = json_object_get(meta, "shape");
        ts_text_put(b, "(");
        for (size_t i = 0; i < json_array_size(dims); i++) {
            const json_t *dim = json_array_get(dims, i);
            ts_text_put(b, i > 0 ? ", " : "");
            if (json_is_integer(dim)) {
                ts_text_put_int(b, json_integer_value(dim));
            }
            else {
                /* a symbolic size */
                ts_text_put_escaped(b, json_string_value(dim));
            }
        }
        ts_text_put(b, ") ");
        ts_text_put_escaped(b, rp_text(meta, "dtype"));
        return;
    }
    if (json_is_array(json_object_get(meta, "args"))) {
        const json_t *args = json_object_get(meta, "args");
        const char *key;
        const json_t *value;
        size_t shown = 0;
        for (size_t i = 0; i < json_array_size(args); i++, shown++) {
            ts_text_put(b, shown > 0 ? "; " : "");
            rh_shapes(b, json_array_get(args, i), depth + 1);
        }
        json_object_foreach(
            (json_t *)json_object_get(meta, "kwargs"), key, value)
        {
            ts_text_put(b, shown++ > 0 ? "; " : "");
            ts_text_put_escaped(b, key);
            ts_text_put(b, "=");
            rh_shapes(b, value, depth + 1);
        }
        if (shown == 0) {
            ts_text_put(b, "none");
        }
        return;
    }
    ts_text_put_escaped(b, kind[0] != '\0' ? kind : "value");
}

void
rh_string_list(ts_text_buf *b, const json_t *list)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        ts_text_put(b, i > 0 ? ", " : "");
        ts_text_put_escaped(b, json_string_value(json_array_get(list, i)));
    }
    if (json_array_size(list) == 0) {
        ts_text_put(b, "none recorded");
    }
}

static void
header(ts_text_buf *b, const rp_page *page, const char *title)
{
    const json_t *context = json_object_get(page->report, "context");
    ts_text_put(
        b,
        "<a class=\"skip\" href=\"#main\">Skip to the report</a>\n"
        "<header>\n<fieldset class=\"theme\"><legend>Theme</legend>"
        "<input type=\"radio\" name=\"theme\" id=\"theme-auto\" checked>"
        "<label for=\"theme-auto\">auto</label> "
        "<input type=\"radio\" name=\"theme\" id=\"theme-light\">"
        "<label for=\"theme-light\">light</label> "
        "<input type=\"radio\" name=\"theme\" id=\"theme-dark\">"
        "<label for=\"theme-dark\">dark</label></fieldset>\n"
        "<p class=\"brand\">TorchScan · schema 1 · offline report</p>\n"
        "<h1>");
    ts_text_put_escaped(b, title);
    ts_text_put(b, "</h1>\n<p class=\"model\">");
    ts_text_put_escaped(b, rp_text(context, "model_type"));
    ts_text_put(b, "</p>\n<p class=\"muted\">Inputs: ");
    rh_shapes(b, json_object_get(page->report, "inputs"), 0);
    ts_text_put(b, " · devices: ");
    rh_string_list(b, json_object_get(context, "devices"));
    ts_text_put(b, " · dtypes: ");
    rh_string_list(b, json_object_get(context, "dtypes"));
    ts_text_put(b, "</p>\n</header>\n");
}

static void
badge(ts_text_buf *b, const json_t *metric)
{
    const char *status = rp_text(metric, "status");
    ts_text_put(b, "<span class=\"badge s-");
    ts_text_put_escaped(b, status);
    ts_text_put(b, "\">");
    ts_text_put_escaped(b, status);
    ts_text_put(b, "</span>");
}

static void
card(ts_text_buf *b, const char *heading, const json_t *metric)
{
    rp_sum value = rp_sum_of_metric(metric);
    ts_text_put(b, "<div class=\"card\"><h2>");
    ts_text_put(b, heading);
    ts_text_put(b, "</h2><p class=\"big\">");
    if (value.status == TS_COMPLETE || value.status == TS_PARTIAL) {
        ts_text_put(b, value.status == TS_PARTIAL ? "≥ " : "");
        rt_compact(b, rp_sum_double(&value));
        ts_text_put(b, " ");
        ts_text_put_escaped(b, rp_text(metric, "unit"));
    }
    else {
        ts_text_put(b, "unknown");
    }
    ts_text_put(b, "</p><p>");
    badge(b, metric);
    ts_text_put(b, " ");
    ts_text_put_escaped(b, rp_text(metric, "method"));
    ts_text_put(b, "</p></div>\n");
}

static void
cards(ts_text_buf *b, const rp_page *page)
{
    const json_t *totals = json_object_get(page->report, "totals");
    ts_text_put(b, "<section class=\"cards\" aria-label=\"Summary\">\n");
    card(b, "Module formulas", json_object_get(totals, "module_flops"));
    card(b, "Unique parameters", json_object_get(totals, "parameters"));
    card(b, "Operator dispatch", json_object_get(totals, "operator_flops"));
    ts_text_put(b, "</section>\n");
}

/* ---- one metric view ---------------------------------------------------- */

void
rh_call_link(ts_text_buf *b, const rp_page *page, int side, size_t row)
{
    const json_t *layer = json_array_get(page->layers[side], row);
    ts_text_put(b, side == 1 ? "<a href=\"#before-call-" : "<a href=\"#call-");
    ts_text_put_int(b, (int64_t)row);
    ts_text_put(b, "\">");
    ts_text_put_escaped(b, rp_path_label(rp_text(layer, "path")));
    ts_text_put(b, "</a> call #");
    ts_text_put_int(b,
                    json_integer_value(json_object_get(layer, "call_index")));
}

void
rh_node_link(ts_text_buf *b, const rp_page *page, size_t n)
{
    const rp_node *node = &page->nodes[n];
    if (node->ncalls[0] > 0) {
        ts_text_put(b, "<a href=\"#call-");
        ts_text_put_int(b, (int64_t)node->calls[0][0]);
    }
    else if (node->ncalls[1] > 0) {
        ts_text_put(b, "<a href=\"#before-call-");
        ts_text_put_int(b, (int64_t)node->calls[1][0]);
    }
    else {
        ts_text_put(b, "<a href=\"#tree-");
        ts_text_put_int(b, (int64_t)n);
    }
    ts_text_put(b, "\">");
    ts_text_put_escaped(b, rp_path_label(node->path));
    ts_text_put(b, "</a>");
}

static void
rail(ts_text_buf *b, const rp_page *page, const rp_view *view, size_t gi)
{
    static const char *const headings[] = {
        "Unknown (unscaled)", "Complete zero", "Small (under 2.5 % width)"};
    const rp_group *g = &view->groups[gi];
    size_t removed = 0;
    for (size_t n = 0; n < page->nnodes; n++) {
        removed += rm_removed(page, g, n) ? 1 : 0;
    }
    if (g->unscaled) {
        return;
    }
    ts_text_printf(
        b,
        "<div class=\"rail\" id=\"rail-%s-%s\"><h4>Not sized by cost"
        "</h4>",
        view->name,
        g->id);
    if (g->nrail[0] + g->nrail[1] + g->nrail[2] + removed == 0) {
        ts_text_put(b,
                    "<p>None: every recorded contribution is sized on the map."
                    "</p></div>\n");
        return;
    }
    for (int kind = 0; kind < 3; kind++) {
        size_t shown = 0;
        if (g->nrail[kind] == 0) {
            continue;
        }
        ts_text_put(b, "<p>");
        ts_text_put(b, headings[kind]);
        ts_text_printf(b, " (%zu)</p><ul>", g->nrail[kind]);
        for (size_t n = 0; n < page->nnodes && shown < RP_RAIL_LIMIT; n++) {
            if (rp_rail_kind(page, g, n) != kind) {
                continue;
            }
            shown++;
            ts_text_put(b, "<li>");
            rh_node_link(b, page, n);
            ts_text_put(b, " · ");
            rt_status_text(b, &g->own[0][n], g->unit);
            ts_text_put(b, "</li>");
        }
        if (g->nrail[kind] > shown) {
            ts_text_printf(
                b,
                "<li>and %zu more (every call is in the module-call "
                "details)</li>",
                g->nrail[kind] - shown);
        }
        ts_text_put(b, "</ul>");
    }
    if (removed > 0) {
        size_t shown = 0;
        ts_text_printf(b, "<p>Removed modules (%zu)</p><ul>", removed);
        for (size_t n = 0; n < page->nnodes && shown < RP_RAIL_LIMIT; n++) {
            if (rm_removed(page, g, n)) {
                shown++;
                ts_text_put(b, "<li>");
                rh_node_link(b, page, n);
                ts_text_put(b, " · before: ");
                rt_status_text(b, &g->sub[1][n], g->unit);
                ts_text_put(b, "</li>");
            }
        }
        if (removed > shown) {
            ts_text_printf(b, "<li>and %zu more</li>", removed - shown);
        }
        ts_text_put(b, "</ul>");
    }
    ts_text_put(b, "</div>\n");
}

static void
map(ts_text_buf *b, const rp_page *page, int v, size_t gi)
{
    const rp_view *view = &page->views[v];
    const rp_group *g = &view->groups[gi];
    double height = rm_height(g);
    ts_text_printf(b,
                   "<figure class=\"cost-map\" id=\"map-%s-%s\" data-key=\"",
                   view->name,
                   g->id);
    rm_group_key(b, g);
    ts_text_put(b, "\"><figcaption>Module cost map · ");
    rm_group_key(b, g);
    ts_text_printf(b,
                   " · %zu tile%s%s</figcaption>\n",
                   g->tiles,
                   g->tiles == 1 ? "" : "s",
                   page->before != NULL ? " · before (upper bar) and after "
                                          "(lower bar) on one scale"
                                        : "");
    ts_text_put(
        b,
        "<div class=\"toolbar\" role=\"toolbar\" aria-label=\"Map "
        "controls\"><button type=\"button\" data-act=\"collapse\" "
        "disabled>Collapse</button><button type=\"button\" "
        "data-act=\"zoom\" disabled>Zoom</button><button type=\"button\" "
        "data-act=\"parent\" disabled>Parent</button><button "
        "type=\"button\" data-act=\"reset\" disabled>Reset</button>"
        "</div>\n");
    ts_text_printf(b,
                   "<svg viewBox=\"0 0 %.0f %.2f\" role=\"group\" "
                   "aria-label=\"Module cost map, %s\">\n",
                   RP_MAP_WIDTH,
                   height > 0 ? height : RP_ROW_HEIGHT,
                   view->label);
    rm_tiles(b, page, v, gi, RM_HTML, 0.0);
    ts_text_put(b, "</svg>\n</figure>\n");
    rail(b, page, view, gi);
}

static void
covered_list(ts_text_buf *b, const rp_page *page, const rp_view *view)
{
    size_t shown = 0;
    if (view->ncovered == 0) {
        return;
    }
    ts_text_printf(b,
                   "<details class=\"covered\"><summary>Covered by inclusive "
                   "estimates (%zu)</summary><ul>",
                   view->ncovered);
    for (size_t n = 0; n < page->nnodes && shown < 500; n++) {
        const rp_cover *c = &view->cover[n];
        size_t owner;
        if (c->path == NULL) {
            continue;
        }
        shown++;
        owner = rp_node_find(page, c->path);
        ts_text_put(b, "<li>");
        rh_node_link(b, page, n);
        ts_text_put(b, " · covered · included in ");
        if (owner != RP_NONE) {
            rh_node_link(b, page, owner);
        }
        ts_text_printf(b,
                       " · call #%lld inclusive estimate</li>",
                       (long long)c->call_index);
    }
    if (view->ncovered > shown) {
        ts_text_printf(b, "<li>and %zu more</li>", view->ncovered - shown);
    }
    ts_text_put(b, "</ul></details>\n");
}

typedef struct ranked_row {
    size_t row;
    double value;
} ranked_row;

static int
by_value(const void *a, const void *b)
{
    const ranked_row *x = a, *y = b;
    if (x->value != y->value) {
        return x->value < y->value ? 1 : -1;
    }
    return x->row < y->row ? -1 : x->row > y->row;
}

/* Leaves the best `limit` of `count` rows (by_value's order) sorted at the
 * front and returns how many there are: one pass, not a sort of every
 * call of a large model for the ten it shows. */
static size_t
top_rows(ranked_row *rows, size_t count, size_t limit)
{
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        ranked_row row = rows[i];
        size_t at;
        if (kept == limit && by_value(&row, &rows[kept - 1]) >= 0) {
            continue;
        }
        at = kept < limit ? kept++ : kept - 1;
        for (; at > 0 && by_value(&row, &rows[at - 1]) < 0; at--) {
            rows[at] = rows[at - 1];
        }
        rows[at] = row;
    }
    return kept;
}

/* True when a row's value for view v falls in group g. */
static bool
in_group(const json_t *metric, const rp_group *g)
{
    if (metric == NULL) {
        return strcmp(g->method, "first_use_attribution") == 0;
    }
    return strcmp(rp_text(metric, "method"), g->method) == 0
           && strcmp(rp_text(metric, "unit"), g->unit) == 0
           && strcmp(rp_text(metric, "scope"), g->scope) == 0;
}

static void
ranked(ts_text_buf *b, const rp_page *page, int v)
{
    const rp_view *view = &page->views[v];
    const json_t *layers = page->layers[0];
    size_t nrows = json_array_size(layers), unranked = 0, shown = 0;
    ranked_row *rows = calloc(nrows + 1, sizeof *rows);
    const json_t *total;
    if (rows == NULL) {
        b->failed = true;
        return;
    }
    ts_text_put(b,
                "<details class=\"ranked\"><summary>Ranked call evidence and "
                "exact values</summary>\n");
    for (size_t gi = 0; gi < view->ngroups; gi++) {
        const rp_group *g = &view->groups[gi];
        size_t count = 0;
        if (g->unscaled) {
            continue;
        }
        for (size_t i = 0; i < nrows; i++) {
            const json_t *metric;
            rp_sum value = rp_row(page, 0, v, i, &metric);
            if (value.status == TS_COMPLETE && in_group(metric, g)) {
                rows[count].row = i;
                rows[count++].value = rp_sum_double(&value);
            }
        }
        count = top_rows(rows, count, RP_RANKED_LIMIT);
        ts_text_put(b, "<h3>");
        rm_group_key(b, g);
        ts_text_put(b, "</h3><ol class=\"ranked\">");
        for (size_t k = 0; k < count; k++) {
            const json_t *metric;
            rp_sum value = rp_row(page, 0, v, rows[k].row, &metric);
            ts_text_put(b, "<li>");
            rh_call_link(b, page, 0, rows[k].row);
            ts_text_printf(
                b,
                " <progress value=\"%.17g\" max=\"%.17g\" "
                "aria-label=\"share of the largest call\"></progress> ",
                rows[k].value,
                rows[0].value > 0 ? rows[0].value : 1.0);
            rt_status_text(b, &value, g->unit);
            ts_text_put(b, "</li>");
        }
        ts_text_put(b, "</ol>\n");
    }
    for (size_t i = 0; i < nrows; i++) {
        const json_t *metric, *layer = json_array_get(layers, i);
        rp_sum value = rp_row(page, 0, v, i, &metric);
        unranked +=
            value.status != TS_COMPLETE
                    && json_object_get(json_object_get(layer, "metric_owners"),
                                       view->name)
                           == NULL
                ? 1
                : 0;
    }
    ts_text_printf(b,
                   "<h3>Unranked incomplete or absent measurements (%zu)</h3>"
                   "<ul class=\"unranked\">",
                   unranked);
    for (size_t i = 0; i < nrows && shown < 100; i++) {
        const json_t *metric, *layer = json_array_get(layers, i);
        rp_sum value = rp_row(page, 0, v, i, &metric);
        if (value.status == TS_COMPLETE
            || json_object_get(json_object_get(layer, "metric_owners"),
                               view->name)
                   != NULL) {
            continue;
        }
        shown++;
        ts_text_put(b, "<li>");
        rh_call_link(b, page, 0, i);
        ts_text_put(b, " · ");
        if (value.status == RP_ABSENT) {
            ts_text_put(b,
                        page->structure
                            ? "unavailable · unknown (not_requested)"
                            : "unavailable · unknown (not_recorded)");
        }
        else {
            rt_metric_text(b, metric);
        }
        ts_text_put(b, "</li>");
    }
    if (unranked > shown) {
        ts_text_printf(b,
                       "<li>and %zu more (every call is in the module-call "
                       "details)</li>",
                       unranked - shown);
    }
    ts_text_put(b, "</ul>\n<p>Authoritative model total: ");
    total =
        json_object_get(json_object_get(page->report, "totals"), view->name);
    if (total != NULL) {
        rt_metric_text(b, total);
        ts_text_put(b, " (");
        ts_text_put_escaped(b, rp_text(total, "method"));
        ts_text_put(b, ", ");
        ts_text_put_escaped(b, rp_text(total, "scope"));
        ts_text_put(b, ")");
    }
    else {
        ts_text_put(b, "not recorded");
    }
    ts_text_put(b, "</p>\n</details>\n");
    free(rows);
}

static void
inspector(ts_text_buf *b, const rp_page *page, int v)
{
    const rp_view *view = &page->views[v];
    const rp_node *root = &page->nodes[0];
    ts_text_printf(b,
                   "<aside class=\"inspector\" aria-labelledby=\"insp-%s\">"
                   "<h3 id=\"insp-%s\">Inspector</h3><div "
                   "class=\"inspector-body\" aria-live=\"polite\">"
                   "<p>(model) · ",
                   view->name,
                   view->name);
    ts_text_put_escaped(b, root->type[0] != '\0' ? root->type : "model");
    ts_text_put(b, "</p>");
    for (size_t gi = 0; gi < view->ngroups; gi++) {
        ts_text_put(b, "<p>");
        rm_group_key(b, &view->groups[gi]);
        ts_text_put(b, ": ");
        rm_subtotal_text(b, &view->groups[gi], 0, 0, RM_HTML);
        ts_text_put(b, "</p>");
    }
    ts_text_put(
        b,
        "<p class=\"note\">Select a tile to inspect a module. Every "
        "call's exact values are in the <a href=\"#call-details\">module"
        "-call details</a>.</p></div></aside>\n");
}

static void
panel(ts_text_buf *b, const rp_page *page, int v)
{
    const rp_view *view = &page->views[v];
    ts_text_printf(b,
                   "<section class=\"metric-panel\" id=\"panel-%s\" "
                   "data-metric=\"%s\" aria-labelledby=\"h-%s\">\n<h2 "
                   "id=\"h-%s\">%s</h2>\n<div class=\"panel-body\"><div "
                   "class=\"maps\">\n",
                   view->name,
                   view->name,
                   view->name,
                   view->name,
                   view->label);
    if (v >= RP_VIEW_PARAMETERS && page->before != NULL) {
        ts_text_put(
            b,
            "<p class=\"note\">Per-module parameter deltas are withheld: "
            "attribution follows call order, so a module's share can "
            "move without a change to it. The totals are compared in "
            "the appendix.</p>\n");
    }
    for (size_t gi = 0; gi < view->ngroups; gi++) {
        map(b, page, v, gi);
    }
    if (view->ngroups == 0) {
        ts_text_put(b, "<p>No module call recorded this measurement.</p>\n");
    }
    covered_list(b, page, view);
    ranked(b, page, v);
    ts_text_put(b, "</div>\n");
    inspector(b, page, v);
    ts_text_put(b, "</div>\n</section>\n");
}

static void
views(ts_text_buf *b, const rp_page *page, int selected)
{
    ts_text_put(
        b,
        "<p class=\"search\" hidden><label for=\"module-search\">Find a "
        "module path</label> <input type=\"search\" id=\"module-search\">"
        " <span id=\"module-search-count\" aria-live=\"polite\"></span>"
        "</p>\n<div class=\"views\">\n<fieldset class=\"view-switch\">"
        "<legend>Metric view</legend>\n");
    for (int v = 0; v < RP_VIEWS; v++) {
        ts_text_printf(b,
                       "<input type=\"radio\" name=\"view\" id=\"view-%s\"%s>"
                       "<label for=\"view-%s\">%s</label>\n",
                       page->views[v].name,
                       v == selected ? " checked" : "",
                       page->views[v].name,
                       page->views[v].label);
    }
    ts_text_put(b, "</fieldset>\n");
    for (int v = 0; v < RP_VIEWS; v++) {
        panel(b, page, v);
    }
    ts_text_put(b, "</div>\n");
}

/* ---- operator FLOPs per module call (beyond the reference) -------------- */

static void
operator_layers(ts_text_buf *b, const rp_page *page)
{
    const json_t *layers = page->layers[0];
    const json_t *total = json_object_get(
        json_object_get(page->report, "totals"), "operator_flops");
    ts_text_put(
        b,
        "<section id=\"operator-layers\"><h2>Operator FLOPs per module "
        "call</h2>\n<p>Observed through PyTorch's dispatcher and joined to "
        "module calls by (path, call_index). Self is what a call ran outside "
        "its child modules; self values add up to the model total: ");
    rt_metric_text(b, total);
    ts_text_put(b,
                ". Inclusive is per module: the self values of all its calls "
                "and of every module under its path (a report cannot tell "
                "per call which calls ran inside which: a shared module "
                "called from another one's forward counts under its own "
                "path). Inclusive values overlap and must not be summed."
                "</p>\n<details><summary>Per-call table</summary><table>"
                "<thead><tr><th>Module call</th><th>Self</th><th>Inclusive "
                "(the module, all calls)</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < json_array_size(layers); i++) {
        const char *path = json_string_value(
            json_object_get(json_array_get(layers, i), "path"));
        size_t n = rp_node_find(page, path != NULL ? path : "");
        ts_text_put(b, "<tr><td>");
        rh_call_link(b, page, 0, i);
        ts_text_put(b, "</td><td>");
        rt_status_text(b, &page->op_self[i], "FLOPs");
        ts_text_put(b, "</td><td>");
        if (n != RP_NONE && page->nodes[n].calls[0][0] == i) {
            rt_status_text(b, &page->op_incl[n], "FLOPs");
        }
        else {
            ts_text_put(b, "as its first call");
        }
        ts_text_put(b, "</td></tr>\n");
    }
    ts_text_put(b, "</tbody></table></details></section>\n");
}

/* ---- data island -------------------------------------------------------- */

static json_t *
indexed(const json_t *diagnostics)
{
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < json_array_size(diagnostics); i++) {
        json_t *d = json_deep_copy(json_array_get(diagnostics, i));
        if (d == NULL
            || json_object_set_new(d, "index", json_integer((json_int_t)i))) {
            json_decref(d);
            json_decref(list);
            return NULL;
        }
        if (json_array_append_new(list, d)) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* A list of indices; NULL when out of memory. */
static json_t *
index_list(const size_t *items, size_t n)
{
    json_t *list = json_array();
    for (size_t k = 0; list != NULL && k < n; k++) {
        if (json_array_append_new(list, json_integer((json_int_t)items[k]))) {
            json_decref(list);
            list = NULL;
        }
    }
    return list;
}

/* maps: {nodes: [[path, parent|null, type, [calls], [before calls]]],
 * views: {name: [{group, method, unit, scope, unscaled, tiles}]}}; NULL
 * when out of memory. (json_object_set_new and json_array_append_new
 * take their value also when they fail, and refuse a NULL one.) */
static json_t *
maps(const rp_page *page)
{
    /* each container is made once its owner exists, and given to it at
     * once (json_object_set_new takes it, also when it fails) */
    json_t *result = json_object();
    json_t *nodes = result != NULL ? json_array() : NULL;
    bool failed = json_object_set_new(result, "nodes", nodes) != 0;
    json_t *views = !failed ? json_object() : NULL;
    failed = failed || json_object_set_new(result, "views", views) != 0;
    for (size_t n = 0; !failed && n < page->nnodes; n++) {
        const rp_node *node = &page->nodes[n];
        json_t *item = json_array();
        failed = item == NULL || json_array_append_new(nodes, item)
                 || json_array_append_new(item, json_string(node->path))
                 || json_array_append_new(
                     item,
                     node->parent == RP_NONE
                         ? json_null()
                         : json_integer((json_int_t)node->parent))
                 || json_array_append_new(item, json_string(node->type))
                 || json_array_append_new(
                     item, index_list(node->calls[0], node->ncalls[0]))
                 || json_array_append_new(
                     item, index_list(node->calls[1], node->ncalls[1]));
    }
    for (int v = 0; !failed && v < RP_VIEWS; v++) {
        const rp_view *view = &page->views[v];
        json_t *groups = json_array();
        failed = json_object_set_new(views, view->name, groups) != 0;
        for (size_t gi = 0; !failed && gi < view->ngroups; gi++) {
            const rp_group *g = &view->groups[gi];
            failed = json_array_append_new(
                groups,
                json_pack("{s:s,s:s,s:s,s:s,s:b,s:I}",
                          "group",
                          g->id,
                          "method",
                          g->unscaled ? "no_recorded_measurement" : g->method,
                          "unit",
                          g->unit,
                          "scope",
                          g->scope,
                          "unscaled",
                          g->unscaled,
                          "tiles",
                          (json_int_t)g->tiles));
        }
    }
    if (failed) {
        json_decref(result);
        return NULL;
    }
    return result;
}

static void
island(ts_text_buf *b, const rp_page *page)
{
    const json_t *before_diagnostics =
        json_object_get(page->before, "diagnostics");
    json_t *data = json_object();
    if (data == NULL
        || json_object_set_new(
            data, "report", json_incref((json_t *)page->report))
        || json_object_set_new(data,
                               "before",
                               page->before != NULL
                                   ? json_incref((json_t *)page->before)
                                   : json_null())
        || json_object_set_new(data,
                               "comparison",
                               page->comparison != NULL
                                   ? json_incref(page->comparison)
                                   : json_null())
        || json_object_set_new(data, "maps", maps(page))
        || json_object_set_new(
            data,
            "diagnostics",
            indexed(json_object_get(page->report, "diagnostics")))
        || json_object_set_new(
            data, "before_diagnostics", indexed(before_diagnostics))
        || json_object_set_new(
            data, "suggestions", json_incref(page->suggestions))) {
        json_decref(data);
        b->failed = true;
        return;
    }
    ts_text_put(b, "<script id=\"torchscan-data\" type=\"application/json\">");
    rt_json_island(b, data);
    ts_text_put(b, "</script>\n");
    json_decref(data);
}

/* ---- the page ----------------------------------------------------------- */

char *
rh_page(const rp_page *page, const char *title, int view, ts_error *err)
{
    ts_text_buf b = {NULL, 0, 0, false};
    ts_text_put(&b,
                "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
                "charset=\"utf-8\">\n<meta name=\"viewport\" "
                "content=\"width=device-width, initial-scale=1\">\n<meta "
                "http-equiv=\"Content-Security-Policy\" content=\"default-src "
                "'none'; style-src 'unsafe-inline'; script-src 'sha256-");
    ts_text_put(&b, rs_script_sha256);
    ts_text_put(&b, "'; base-uri 'none'; form-action 'none'\">\n<title>");
    ts_text_put_escaped(&b, title);
    ts_text_put(&b, "</title>\n<style>");
    ts_text_put(&b, rs_style);
    ts_text_put(&b, "</style>\n</head>\n<body>\n");
    ts_text_put(
        &b,
        "<svg class=\"defs\" width=\"0\" height=\"0\" aria-hidden=\"true\" "
        "focusable=\"false\"><defs><pattern id=\"hatch\" "
        "patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\"><path "
        "d=\"M0 6L6 0\" stroke=\"currentColor\" stroke-width=\"1.2\"/>"
        "</pattern></defs></svg>\n");
    header(&b, page, title);
    ts_text_put(&b, "<main id=\"main\">\n");
    cards(&b, page);
    views(&b, page, view);
    operator_layers(&b, page);
    rh_appendix(&b, page);
    ts_text_put(&b, "</main>\n");
    island(&b, page);
    ts_text_put(&b, "<script>");
    ts_text_put(&b, rs_script);
    ts_text_put(&b, "</script>\n</body>\n</html>\n");
    if (b.failed || b.data == NULL) {
        free(b.data);
        ts_error_set(err, TS_ENOMEM, "out of memory rendering a report");
        return NULL;
    }
    return b.data;
}
