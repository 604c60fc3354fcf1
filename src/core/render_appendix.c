/* The appendix of the analysis page (contract 4.1, "Measurement
 * interpretation and exact evidence"): how to read it, the authoritative
 * totals, the clickable hierarchy, one details block per module call (and
 * per before call), operator evidence, diagnostics, evidence-linked
 * suggestions, the before/after comparison and the context. */
#include <stdlib.h>
#include <string.h>

#include "render_html.h"
#include "render_map.h"
#include "render_text.h"

/* ---- appendix ----------------------------------------------------------- */

static void
how_to_read(ts_text_buf *b)
{
    ts_text_put(
        b,
        "<section id=\"how-to-read\"><h3>How to read this report</h3>"
        "<ul><li>The map shows the module hierarchy, not a computational "
        "graph: a tile's width is what its calls recorded, and a parent's "
        "width is the subtotal of its own record and its children.</li>"
        "<li>FLOPs do not establish latency; measure it with "
        "measure_latency.</li><li>Static parameter and buffer bytes are "
        "not measured peak memory; measure it with measure_peak_memory."
        "</li><li>Module formulas and operator FLOPs are two methods; "
        "never add or average them.</li></ul>\n<dl><dt>complete</dt><dd>"
        "the value is exact for its method and scope.</dd><dt>partial"
        "</dt><dd>only a lower bound is known (hatched tiles; shown with "
        "≥).</dd><dt>unavailable</dt><dd>no number is known; it is never "
        "drawn as zero and is listed on the rail.</dd></dl></section>\n");
}

/* <tr>name, status sentence, method · scope</tr> of a MetricResult. */
static void
metric_row(ts_text_buf *b, const char *name, const json_t *metric)
{
    ts_text_put(b, "<tr><td>");
    ts_text_put_escaped(b, name);
    ts_text_put(b, "</td><td>");
    rt_metric_text(b, metric);
    ts_text_put(b, "</td><td>");
    ts_text_put_escaped(b, rp_text(metric, "method"));
    ts_text_put(b, " · ");
    ts_text_put_escaped(b, rp_text(metric, "scope"));
    ts_text_put(b, "</td></tr>\n");
}

static void
totals_table(ts_text_buf *b, const rp_page *page)
{
    const char *name;
    json_t *metric;
    ts_text_put(
        b,
        "<section id=\"totals\"><h3>Authoritative model totals</h3>"
        "<table><thead><tr><th>Metric</th><th>Measurement</th><th>Method "
        "and scope</th></tr></thead><tbody>\n");
    json_object_foreach(json_object_get(page->report, "totals"), name, metric)
    {
        metric_row(b, name, metric);
    }
    ts_text_put(b, "</tbody></table></section>\n");
}

static void
hierarchy(ts_text_buf *b, const rp_page *page)
{
    /* iterative pre-order walk: nested <details> for nodes with children */
    size_t n = 0;
    ts_text_put(
        b,
        "<section id=\"hierarchy\" class=\"tree\"><h3>Clickable module "
        "hierarchy</h3>\n<ul>");
    while (n != RP_NONE) {
        const rp_node *node = &page->nodes[n];
        ts_text_put(b, "<li id=\"tree-");
        ts_text_put_int(b, (int64_t)n);
        ts_text_put(b, "\">");
        if (node->first_child != RP_NONE) {
            ts_text_put(b, "<details><summary>");
        }
        rh_node_link(b, page, n);
        ts_text_put(b, " · ");
        ts_text_put_escaped(
            b, node->type[0] != '\0' ? node->type : "unknown type");
        if (node->ncalls[0] > 1) {
            ts_text_printf(b, " · ×%zu calls", node->ncalls[0]);
        }
        if (node->first_child != RP_NONE) {
            ts_text_put(b, "</summary><ul>");
            n = node->first_child;
            continue;
        }
        ts_text_put(b, "</li>");
        while (n != RP_NONE && page->nodes[n].next_sibling == RP_NONE) {
            n = page->nodes[n].parent;
            if (n != RP_NONE) {
                ts_text_put(b, "</ul></details></li>");
            }
        }
        if (n != RP_NONE) {
            n = page->nodes[n].next_sibling;
        }
    }
    ts_text_put(b, "</ul></section>\n");
}

static const char *const compute_metrics[] = {
    "module_flops", "macs", "dmas", "operator_flops"};

static void
path_diagnostics(ts_text_buf *b,
                 const json_t *diagnostics,
                 const char *path,
                 const char *prefix)
{
    for (size_t i = 0; i < json_array_size(diagnostics); i++) {
        const json_t *d = json_array_get(diagnostics, i);
        const char *at = json_string_value(json_object_get(d, "path"));
        if (at != NULL && strcmp(at, path) == 0) {
            ts_text_printf(b,
                           "<p class=\"diag\"><a href=\"#%sdiagnostic-%zu\">",
                           prefix,
                           i);
            ts_text_put_escaped(b, rp_text(d, "code"));
            ts_text_put(b, "</a> ");
            ts_text_put_escaped(b, rp_text(d, "message"));
            ts_text_put(b, "</p>");
        }
    }
}

static void
call_details(ts_text_buf *b, const rp_page *page, int side)
{
    const json_t *report = side == 0 ? page->report : page->before;
    const json_t *layers = page->layers[side];
    const char *prefix = side == 0 ? "" : "before-";
    ts_text_printf(
        b,
        "<section id=\"%scall-details\"><h3>%s</h3>\n",
        prefix,
        side == 0 ? "Module-call details" : "Before module-call details");
    for (size_t i = 0; i < json_array_size(layers); i++) {
        const json_t *layer = json_array_get(layers, i);
        const json_t *metrics = json_object_get(layer, "metrics");
        const json_t *owners = json_object_get(layer, "metric_owners");
        const json_t *params = json_object_get(layer, "parameters");
        const json_t *buffers = json_object_get(layer, "buffers");
        const char *name;
        json_t *metric;
        ts_text_put(b, "<details id=\"");
        ts_text_put(b, prefix);
        ts_text_put(b, "call-");
        ts_text_put_int(b, (int64_t)i);
        ts_text_put(b, "\"><summary>");
        ts_text_put_escaped(b, rp_path_label(rp_text(layer, "path")));
        ts_text_put(b, " · call #");
        ts_text_put_int(
            b, json_integer_value(json_object_get(layer, "call_index")));
        ts_text_put(b, " · ");
        ts_text_put_escaped(b, rp_text(layer, "type"));
        ts_text_put(b, "</summary>\n<p>Input: ");
        rh_shapes(b, json_object_get(layer, "input"), 0);
        ts_text_put(b, " → output: ");
        rh_shapes(b, json_object_get(layer, "output"), 0);
        ts_text_put(b, "</p><pre>{\"input\":");
        rt_json_esc(b, json_object_get(layer, "input"));
        ts_text_put(b, ",\"output\":");
        rt_json_esc(b, json_object_get(layer, "output"));
        ts_text_put(b, "}");
        ts_text_put(b, "</pre>\n<p>");
        if (json_is_object(params)) {
            rp_sum fresh = {TS_COMPLETE, false, 0, 0.0};
            const json_t *m;
            fresh = rp_row(page, side, RP_VIEW_PARAMETERS, i, &m);
            if (rp_sum_double(&fresh) > 0) {
                rt_grouped(b, &fresh);
                ts_text_put(b, " newly attributed parameters (");
                fresh = rp_row(page, side, RP_VIEW_PARAMETER_BYTES, i, &m);
                rt_grouped(b, &fresh);
                ts_text_put(b, " bytes)");
            }
            else {
                ts_text_put(
                    b,
                    json_is_true(json_object_get(params, "shared"))
                        ? "Shared tensors · no new parameter attribution"
                        : "No parameters attributed");
            }
        }
        if (json_is_object(buffers)) {
            ts_text_printf(b,
                           " · buffers: %lld elements, %lld bytes%s",
                           (long long)json_integer_value(
                               json_object_get(buffers, "elements")),
                           (long long)json_integer_value(
                               json_object_get(buffers, "bytes")),
                           json_is_true(json_object_get(buffers, "shared"))
                               ? " (shared)"
                               : "");
        }
        /* one line per metric (a table per call would weigh tens of
         * elements a call on a large model's page) */
        ts_text_put(b, "</p>\n<pre class=\"metrics\">");
        json_object_foreach((json_t *)metrics, name, metric)
        {
            ts_text_put_escaped(b, name);
            ts_text_put(b, ": ");
            rt_metric_text(b, metric);
            ts_text_put(b, " · ");
            ts_text_put_escaped(b, rp_text(metric, "method"));
            ts_text_put(b, " · ");
            ts_text_put_escaped(b, rp_text(metric, "scope"));
            ts_text_put(b, "\n");
        }
        for (size_t k = 0; k < 4; k++) {
            const json_t *owner = json_object_get(owners, compute_metrics[k]);
            if (json_object_get(metrics, compute_metrics[k]) != NULL) {
                continue;
            }
            ts_text_put(b, compute_metrics[k]);
            if (owner != NULL) {
                ts_text_put(b, ": covered · included in ");
                ts_text_put_escaped(b, rp_path_label(rp_text(owner, "path")));
                ts_text_put(b, " · call #");
                ts_text_put_int(
                    b,
                    json_integer_value(json_object_get(owner, "call_index")));
                ts_text_put(b, " inclusive estimate · subtree\n");
            }
            else {
                ts_text_put(b, ": unavailable · unknown · ");
                ts_text_put(
                    b, page->structure ? "not_requested\n" : "not_recorded\n");
            }
        }
        ts_text_put(b, "</pre>");
        path_diagnostics(b,
                         json_object_get(report, "diagnostics"),
                         rp_text(layer, "path"),
                         prefix);
        ts_text_put(b, "</details>\n");
    }
    ts_text_put(b, "</section>\n");
}

static void
operator_evidence(ts_text_buf *b, const rp_page *page)
{
    const json_t *flops = json_object_get(page->report, "operator_flops");
    const char *name;
    json_t *value;
    ts_text_put(b,
                "<section id=\"operator-evidence\"><h3>Operator evidence</h3>"
                "<p>Global count: ");
    rt_metric_text(b,
                   json_object_get(json_object_get(page->report, "totals"),
                                   "operator_flops"));
    ts_text_put(b,
                "</p><table><caption>By operator</caption><thead><tr><th>"
                "Operator</th><th>Known FLOPs</th></tr></thead><tbody>");
    json_object_foreach(json_object_get(flops, "by_operator"), name, value)
    {
        rp_sum s = {TS_COMPLETE, false, json_integer_value(value), 0.0};
        ts_text_put(b, "<tr><td>");
        ts_text_put_escaped(b, name);
        ts_text_put(b, "</td><td class=\"num\">");
        rt_grouped(b, &s);
        ts_text_put(b, " known FLOPs</td></tr>");
    }
    ts_text_put(b,
                "</tbody></table>\n<table><caption>By upstream module label "
                "(known inclusive FLOPs; the labels overlap, do not sum them)"
                "</caption><thead><tr><th>Module</th><th>Known inclusive FLOPs"
                "</th></tr></thead><tbody>");
    json_object_foreach(json_object_get(flops, "by_module"), name, value)
    {
        rp_sum s = {TS_COMPLETE, false, json_integer_value(value), 0.0};
        ts_text_put(b, "<tr><td>");
        ts_text_put_escaped(b, rp_path_label(name));
        ts_text_put(b, "</td><td class=\"num\">");
        rt_grouped(b, &s);
        ts_text_put(b, "</td></tr>");
    }
    ts_text_put(
        b,
        "</tbody></table>\n<table><caption>Explicitly ignored operators"
        "</caption><thead><tr><th>Operator</th><th>Calls</th><th>Reason"
        "</th></tr></thead><tbody>");
    json_object_foreach(
        json_object_get(flops, "ignored_operators"), name, value)
    {
        ts_text_put(b, "<tr><td>");
        ts_text_put_escaped(b, name);
        ts_text_printf(
            b,
            "</td><td class=\"num\">%lld</td><td>",
            (long long)json_integer_value(json_object_get(value, "calls")));
        ts_text_put_escaped(b, rp_text(value, "reason"));
        ts_text_put(b, "</td></tr>");
    }
    ts_text_put(b, "</tbody></table></section>\n");
}

static void
diagnostics(ts_text_buf *b, const json_t *list, const char *prefix)
{
    ts_text_printf(b,
                   "<section id=\"%sdiagnostics\"><h3>%s (%zu)</h3><ul>",
                   prefix,
                   prefix[0] != '\0' ? "Before diagnostics" : "Diagnostics",
                   json_array_size(list));
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *d = json_array_get(list, i);
        ts_text_printf(b, "<li id=\"%sdiagnostic-%zu\">", prefix, i);
        ts_text_put_escaped(b, rp_text(d, "severity"));
        ts_text_put(b, " · ");
        ts_text_put_escaped(b, rp_text(d, "code"));
        if (json_object_get(d, "metric") != NULL) {
            ts_text_put(b, " [");
            ts_text_put_escaped(b, rp_text(d, "metric"));
            ts_text_put(b, "]");
        }
        ts_text_put(b, " ");
        ts_text_put_escaped(b, rp_text(d, "message"));
        if (json_object_get(d, "path") != NULL) {
            ts_text_put(b, " · path ");
            ts_text_put_escaped(b, rp_path_label(rp_text(d, "path")));
        }
        if (json_object_get(d, "operator") != NULL) {
            ts_text_put(b, " · operator ");
            ts_text_put_escaped(b, rp_text(d, "operator"));
        }
        ts_text_put(b, "</li>");
    }
    ts_text_put(b, "</ul></section>\n");
}

static void
suggestions(ts_text_buf *b, const rp_page *page)
{
    ts_text_put(b,
                "<section id=\"suggestions\"><h3>Evidence-linked optimization "
                "suggestions</h3>");
    if (json_array_size(page->suggestions) == 0) {
        ts_text_put(b,
                    "<p>No complete measurement to base a suggestion on.</p>");
    }
    for (size_t i = 0; i < json_array_size(page->suggestions); i++) {
        const json_t *s = json_array_get(page->suggestions, i);
        ts_text_put(b, "<div class=\"suggestion\"><p><a href=\"");
        ts_text_put_escaped(b, rp_text(s, "href"));
        ts_text_put(b, "\">");
        ts_text_put_escaped(b, rp_text(s, "fact"));
        ts_text_put(b, "</a></p><p>");
        ts_text_put_escaped(b, rp_text(s, "experiment"));
        ts_text_put(b, "</p></div>\n");
    }
    ts_text_put(b, "</section>\n");
}

static void
layer_list(ts_text_buf *b, const char *heading, const json_t *list)
{
    ts_text_printf(b, "<h4>%s (%zu)</h4><ul>", heading, json_array_size(list));
    for (size_t i = 0; i < json_array_size(list) && i < 500; i++) {
        const json_t *layer = json_array_get(list, i);
        const char *name;
        json_t *diff;
        ts_text_put(b, "<li>");
        ts_text_put_escaped(b, rp_path_label(rp_text(layer, "path")));
        ts_text_printf(b,
                       " call #%lld",
                       (long long)json_integer_value(
                           json_object_get(layer, "call_index")));
        if (strcmp(heading, "Changed calls") == 0) {
            json_object_foreach(json_object_get(layer, "metrics"), name, diff)
            {
                ts_text_put(b, " · ");
                ts_text_put_escaped(b, name);
                ts_text_put(b, ": ");
                rt_delta_text(b, diff);
            }
        }
        ts_text_put(b, "</li>");
    }
    if (json_array_size(list) > 500) {
        ts_text_printf(
            b, "<li>and %zu more</li>", json_array_size(list) - 500);
    }
    ts_text_put(b, "</ul>");
}

static void
context_table(ts_text_buf *b, const json_t *report, const char *heading)
{
    const char *name;
    json_t *value;
    ts_text_printf(b, "<table><caption>%s</caption><tbody>", heading);
    json_object_foreach(json_object_get(report, "context"), name, value)
    {
        ts_text_put(b, "<tr><th scope=\"row\">");
        ts_text_put_escaped(b, name);
        ts_text_put(b, "</th><td>");
        if (json_is_string(value)) {
            ts_text_put_escaped(b, json_string_value(value));
        }
        else {
            rt_json_esc(b, value);
        }
        ts_text_put(b, "</td></tr>");
    }
    ts_text_put(b, "</tbody></table>\n");
}

static void
comparison(ts_text_buf *b, const rp_page *page)
{
    const json_t *cmp = page->comparison;
    const json_t *layers = json_object_get(cmp, "layers");
    const char *name;
    json_t *diff;
    ts_text_put(b, "<section id=\"comparison\"><h3>Before / after</h3>");
    if (json_array_size(page->withheld) > 0) {
        ts_text_put(b, "<p>Execution deltas are withheld: ");
        rh_string_list(b, page->withheld);
        ts_text_put(
            b,
            " differ or are missing. Storage totals are still compared."
            "</p>");
    }
    ts_text_put(
        b,
        "<table><thead><tr><th>Metric</th><th>Before</th><th>After</th>"
        "<th>Delta</th></tr></thead><tbody>\n");
    json_object_foreach(json_object_get(cmp, "totals"), name, diff)
    {
        const json_t *before = json_object_get(diff, "before");
        const json_t *after = json_object_get(diff, "after");
        ts_text_put(b, "<tr><td>");
        ts_text_put_escaped(b, name);
        ts_text_put(b, "</td><td>");
        if (json_is_object(before)) {
            rt_metric_text(b, before);
        }
        else {
            ts_text_put(b, "not recorded");
        }
        ts_text_put(b, "</td><td>");
        if (json_is_object(after)) {
            rt_metric_text(b, after);
        }
        else {
            ts_text_put(b, "not recorded");
        }
        ts_text_put(b, "</td><td>");
        rt_delta_text(b, diff);
        ts_text_put(b, "</td></tr>\n");
    }
    ts_text_put(b, "</tbody></table>\n");
    layer_list(b, "Added calls", json_object_get(layers, "added"));
    layer_list(b, "Removed calls", json_object_get(layers, "removed"));
    layer_list(b, "Changed calls", json_object_get(layers, "changed"));
    context_table(b, page->before, "Before context");
    context_table(b, page->report, "After context");
    ts_text_put(b, "</section>\n");
}

void
rh_appendix(ts_text_buf *b, const rp_page *page)
{
    ts_text_put(
        b,
        "<details class=\"appendix\" id=\"appendix\"><summary>Measurement "
        "interpretation and exact evidence</summary>\n");
    how_to_read(b);
    totals_table(b, page);
    hierarchy(b, page);
    call_details(b, page, 0);
    if (page->before != NULL) {
        call_details(b, page, 1);
        diagnostics(
            b, json_object_get(page->before, "diagnostics"), "before-");
    }
    operator_evidence(b, page);
    diagnostics(b, json_object_get(page->report, "diagnostics"), "");
    suggestions(b, page);
    if (page->before != NULL) {
        comparison(b, page);
    }
    ts_text_put(b,
                "<section id=\"context\"><h3>Input and measurement context"
                "</h3>");
    context_table(b, page->report, "Context");
    ts_text_put(b, "<pre>");
    rt_json_esc(b, json_object_get(page->report, "inputs"));
    ts_text_put(b, "</pre></section>\n</details>\n");
}
