/* The page model of an AnalysisReport rendering (render_model.h): checks,
 * the union module tree, per-view groups of recorded contributions, derived
 * subtotals, the map geometry, the comparison with withheld execution
 * deltas, and per-call operator FLOPs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_model.h"
#include "text_buf.h"
#include "torchscan/diff.h"
#include "torchscan/report_check.h"


static const struct {
    const char *name, *label, *metric;
} view_specs[RP_VIEWS] = {
    {"module_flops", "Module FLOPs", "module_flops"},
    {"macs", "MACs", "macs"},
    {"dmas", "DMAs", "dmas"},
    {"parameters", "Attributed parameters", NULL},
    {"parameter_bytes", "Attributed parameter bytes", NULL},
};

int
rp_view_index(const char *metric)
{
    for (int v = 0; v < RP_VIEWS; v++) {
        if (strcmp(view_specs[v].name, metric) == 0) {
            return v;
        }
    }
    return -1;
}

/* ---- sums --------------------------------------------------------------- */

void
rp_sum_add(rp_sum *sum, const rp_sum *value)
{
    if (value->status == RP_ABSENT) {
        return;
    }
    if (sum->status == RP_ABSENT) {
        *sum = *value;
        return;
    }
    if (sum->status != value->status || sum->status == TS_PARTIAL) {
        sum->status = TS_PARTIAL;
    }
    if (!sum->real && !value->real) {
        int64_t total;
        if (ts_add(sum->i, value->i, &total)) {
            sum->i = total;
            return;
        }
    }
    sum->r = rp_sum_double(sum) + rp_sum_double(value);
    sum->real = true;
}

double
rp_sum_double(const rp_sum *sum)
{
    if (sum->status == RP_ABSENT) {
        return 0.0;
    }
    return sum->real ? sum->r : (double)sum->i;
}

static rp_sum
sum_of_number(uint8_t status, const json_t *number)
{
    rp_sum s = {status, false, 0, 0.0};
    if (json_is_integer(number)) {
        s.i = json_integer_value(number);
    }
    else if (json_is_real(number)) {
        s.real = true;
        s.r = json_real_value(number);
    }
    return s;
}

rp_sum
rp_sum_of_metric(const json_t *metric)
{
    rp_sum absent = {RP_ABSENT, false, 0, 0.0};
    int status = metric != NULL ? ts_metric_status(metric) : -1;
    if (status < 0) {
        return absent;
    }
    return sum_of_number((uint8_t)status,
                         json_object_get(metric, "known_value"));
}

/* The value a layer row records for a view (see rp_row). */
static rp_sum
rp_row_value(const json_t *layer, int view, const json_t **metric)
{
    rp_sum absent = {RP_ABSENT, false, 0, 0.0};
    const json_t *params = json_object_get(layer, "parameters");
    *metric = NULL;
    if (view_specs[view].metric != NULL) {
        *metric = json_object_get(json_object_get(layer, "metrics"),
                                  view_specs[view].metric);
        return rp_sum_of_metric(*metric);
    }
    if (!json_is_object(params)) {
        return absent;
    }
    if (view == RP_VIEW_PARAMETER_BYTES) {
        return sum_of_number(TS_COMPLETE, json_object_get(params, "bytes"));
    }
    {
        rp_sum s =
            sum_of_number(TS_COMPLETE, json_object_get(params, "trainable"));
        rp_sum f =
            sum_of_number(TS_COMPLETE, json_object_get(params, "frozen"));
        rp_sum_add(&s, &f);
        return s;
    }
}

/* ---- nodes -------------------------------------------------------------- */

size_t
rp_node_find(const rp_page *page, const char *path)
{
    const json_t *i = json_object_get(page->index, path);
    return i != NULL ? (size_t)json_integer_value(i) : RP_NONE;
}

static int
push_call(rp_node *node, int side, size_t layer)
{
    if (node->ncalls[side] == node->capcalls[side]) {
        size_t cap = node->capcalls[side] ? 2 * node->capcalls[side] : 2;
        size_t *grown = realloc(node->calls[side], cap * sizeof *grown);
        if (grown == NULL) {
            return TS_ENOMEM;
        }
        node->calls[side] = grown;
        node->capcalls[side] = cap;
    }
    node->calls[side][node->ncalls[side]++] = layer;
    return TS_OK;
}

/* The node of `path`, created with its ancestors when missing. */
static size_t
node_for(rp_page *page, const char *path)
{
    size_t found = rp_node_find(page, path), parent = RP_NONE;
    const char *dot;
    rp_node *node;
    if (found != RP_NONE) {
        return found;
    }
    if (path[0] != '\0') {
        char *up;
        dot = strrchr(path, '.');
        up = strndup(path, dot != NULL ? (size_t)(dot - path) : 0);
        if (up == NULL) {
            return RP_NONE;
        }
        parent = node_for(page, up);
        free(up);
        if (parent == RP_NONE) {
            return RP_NONE;
        }
    }
    if (page->nnodes == page->capnodes) {
        size_t cap = page->capnodes ? 2 * page->capnodes : 64;
        rp_node *grown = realloc(page->nodes, cap * sizeof *grown);
        if (grown == NULL) {
            return RP_NONE;
        }
        page->nodes = grown;
        page->capnodes = cap;
    }
    node = &page->nodes[page->nnodes];
    memset(node, 0, sizeof *node);
    node->path = strdup(path);
    if (node->path == NULL
        || json_object_set_new(
               page->index, path, json_integer((json_int_t)page->nnodes))
               != 0) {
        free(node->path);
        return RP_NONE;
    }
    dot = strrchr(node->path, '.');
    node->name = dot != NULL ? dot + 1 : node->path;
    node->type = "";
    node->parent = parent;
    node->first_child = node->last_child = node->next_sibling = RP_NONE;
    node->depth = parent == RP_NONE ? 0 : page->nodes[parent].depth + 1;
    if (parent != RP_NONE) {
        rp_node *p = &page->nodes[parent];
        if (p->last_child == RP_NONE) {
            p->first_child = page->nnodes;
        }
        else {
            page->nodes[p->last_child].next_sibling = page->nnodes;
        }
        p->last_child = page->nnodes;
    }
    return page->nnodes++;
}

/* Reads every row's value for every view once. */
static int
read_rows(rp_page *page)
{
    for (int side = 0; side < 2; side++) {
        size_t n = json_array_size(page->layers[side]);
        for (int v = 0; v < RP_VIEWS; v++) {
            page->values[side][v] = calloc(n + 1, sizeof(rp_sum));
            page->metrics[side][v] = calloc(n + 1, sizeof(json_t *));
            if (page->values[side][v] == NULL
                || page->metrics[side][v] == NULL) {
                return TS_ENOMEM;
            }
            for (size_t i = 0; i < n; i++) {
                page->values[side][v][i] =
                    rp_row_value(json_array_get(page->layers[side], i),
                                 v,
                                 &page->metrics[side][v][i]);
            }
        }
    }
    return TS_OK;
}

/* Deepest module path a page draws: far beyond real models (whose nesting
 * is tens of modules), small enough that a hostile report cannot make the
 * union tree quadratic in memory. */
#define RP_MAX_PATH_DEPTH 1000

static int
build_nodes(rp_page *page, ts_error *err)
{
    if (node_for(page, "") == RP_NONE) {
        return TS_ENOMEM;
    }
    for (int side = 0; side < 2; side++) {
        const json_t *layers = page->layers[side];
        for (size_t i = 0; i < json_array_size(layers); i++) {
            const json_t *layer = json_array_get(layers, i);
            const char *path =
                json_string_value(json_object_get(layer, "path"));
            size_t n, depth = 0;
            for (const char *c = path; *c; c++) {
                depth += *c == '.' ? 1 : 0;
            }
            if (depth >= RP_MAX_PATH_DEPTH) {
                ts_error_set(err,
                             TS_EFORMAT,
                             "%s: layers[%zu].path: more than %d modules "
                             "deep, deeper than a page draws",
                             side == 0 ? "report" : "before",
                             i,
                             RP_MAX_PATH_DEPTH);
                return TS_EFORMAT;
            }
            n = node_for(page, path);
            const char *type =
                json_string_value(json_object_get(layer, "type"));
            if (n == RP_NONE || push_call(&page->nodes[n], side, i) != TS_OK) {
                return TS_ENOMEM;
            }
            if (page->nodes[n].type[0] == '\0' && type != NULL) {
                page->nodes[n].type = type;
            }
        }
    }
    return TS_OK;
}

/* ---- groups ------------------------------------------------------------- */

static void
free_group(rp_group *g)
{
    for (int side = 0; side < 2; side++) {
        free(g->own[side]);
        free(g->sub[side]);
    }
    free(g->width);
    free(g->x);
}

/* The group of (method, unit, scope) in view v, added when new; NULL when
 * out of memory. */
static rp_group *
group_for(rp_page *page,
          rp_view *view,
          const char *method,
          const char *unit,
          const char *scope,
          bool unscaled)
{
    rp_group *g;
    for (size_t i = 0; i < view->ngroups; i++) {
        g = &view->groups[i];
        if (g->unscaled == unscaled && strcmp(g->method, method) == 0
            && strcmp(g->unit, unit) == 0 && strcmp(g->scope, scope) == 0) {
            return g;
        }
    }
    g = realloc(view->groups, (view->ngroups + 1) * sizeof *g);
    if (g == NULL) {
        return NULL;
    }
    view->groups = g;
    g = &view->groups[view->ngroups];
    memset(g, 0, sizeof *g);
    g->method = method;
    g->unit = unit;
    g->scope = scope;
    g->unscaled = unscaled;
    snprintf(g->id, sizeof g->id, "g%zu", view->ngroups);
    view->ngroups++;
    for (int side = 0; side < 2; side++) {
        g->own[side] = calloc(page->nnodes, sizeof(rp_sum));
        g->sub[side] = calloc(page->nnodes, sizeof(rp_sum));
    }
    g->width = calloc(page->nnodes, sizeof(double));
    g->x = calloc(page->nnodes, sizeof(double));
    if (g->own[0] == NULL || g->own[1] == NULL || g->sub[0] == NULL
        || g->sub[1] == NULL || g->width == NULL || g->x == NULL) {
        return NULL; /* freed with the view */
    }
    for (int side = 0; side < 2; side++) {
        for (size_t n = 0; n < page->nnodes; n++) {
            g->own[side][n].status = RP_ABSENT;
            g->sub[side][n].status = RP_ABSENT;
        }
    }
    return g;
}

/* The owner a row names for the view's metric, when covered. */
static const json_t *
owner_of(const json_t *layer, int view)
{
    if (view_specs[view].metric == NULL) {
        return NULL;
    }
    return json_object_get(json_object_get(layer, "metric_owners"),
                           view_specs[view].metric);
}

int
rp_rail_kind(const rp_page *page, const rp_group *group, size_t n)
{
    const rp_sum *own = &group->own[0][n];
    double width = rp_sum_double(own) * group->scale;
    if (group->unscaled || own->status == RP_ABSENT) {
        return -1;
    }
    if (own->status == TS_UNAVAILABLE
        || (own->status == TS_PARTIAL && width == 0.0)) {
        return RP_RAIL_UNKNOWN;
    }
    if (own->status == TS_COMPLETE && width == 0.0) {
        /* a parent's zero record is its children's business */
        return page->nodes[n].first_child == RP_NONE ? RP_RAIL_ZERO : -1;
    }
    if (width > 0.0 && width < RP_SMALL_SHARE * RP_MAP_WIDTH) {
        return RP_RAIL_SMALL;
    }
    return -1;
}

/* Derived subtotals (children after parents in node order) and the union
 * geometry: a node's width is its larger own value plus its children's
 * widths; the unscaled group counts its leaves. */
static void
layout_group(rp_page *page, rp_group *g)
{
    double total;
    for (size_t n = page->nnodes; n-- > 0;) {
        const rp_node *node = &page->nodes[n];
        double own = 0.0;
        for (int side = 0; side < 2; side++) {
            rp_sum_add(&g->sub[side][n], &g->own[side][n]);
            if (node->parent != RP_NONE) {
                rp_sum_add(&g->sub[side][node->parent], &g->sub[side][n]);
            }
            if (g->unscaled) {
                own = g->own[side][n].status != RP_ABSENT ? 1.0 : own;
            }
            else if (rp_sum_double(&g->own[side][n]) > own) {
                own = rp_sum_double(&g->own[side][n]);
            }
        }
        g->width[n] += own;
        if (node->parent != RP_NONE) {
            g->width[node->parent] += g->width[n];
        }
    }
    total = g->width[0];
    g->scale = total > 0.0 ? RP_MAP_WIDTH / total : 0.0;
    for (size_t n = 0; n < page->nnodes; n++) {
        const rp_node *node = &page->nodes[n];
        double cursor = g->x[n];
        for (size_t c = node->first_child; c != RP_NONE;
             c = page->nodes[c].next_sibling) {
            g->x[c] = cursor;
            cursor += g->width[c] * g->scale;
        }
        g->width[n] *= g->scale;
        if (g->width[n] >= RP_MIN_TILE_WIDTH) {
            g->tiles++;
            if (node->depth + 1 > g->rows) {
                g->rows = node->depth + 1;
            }
        }
    }
}

/* Fills the groups of one view from the rows of both sides. */
static int
build_view(rp_page *page, int v)
{
    rp_view *view = &page->views[v];
    view->name = view_specs[v].name;
    view->label = view_specs[v].label;
    view->cover = calloc(page->nnodes, sizeof *view->cover);
    if (view->cover == NULL) {
        return TS_ENOMEM;
    }
    for (size_t n = 0; n < page->nnodes; n++) {
        const rp_node *node = &page->nodes[n];
        bool recorded = false;
        for (int side = 0; side < 2; side++) {
            for (size_t k = 0; k < node->ncalls[side]; k++) {
                const json_t *layer =
                    json_array_get(page->layers[side], node->calls[side][k]);
                const json_t *metric, *owner = owner_of(layer, v);
                rp_sum value =
                    rp_row(page, side, v, node->calls[side][k], &metric);
                rp_group *g;
                if (owner != NULL) {
                    if (side == 0 && view->cover[n].path == NULL) {
                        view->cover[n].path = rp_text(owner, "path");
                        view->cover[n].call_index = json_integer_value(
                            json_object_get(owner, "call_index"));
                        view->ncovered++;
                    }
                    recorded = true;
                    continue;
                }
                if (value.status == RP_ABSENT) {
                    continue;
                }
                recorded = true;
                if (metric != NULL) {
                    g = group_for(page,
                                  view,
                                  rp_text(metric, "method"),
                                  rp_text(metric, "unit"),
                                  rp_text(metric, "scope"),
                                  false);
                }
                else {
                    g = group_for(
                        page,
                        view,
                        "first_use_attribution",
                        v == RP_VIEW_PARAMETERS ? "parameters" : "bytes",
                        "module_call_new",
                        false);
                }
                if (g == NULL) {
                    return TS_ENOMEM;
                }
                rp_sum_add(&g->own[side][n], &value);
            }
        }
        if (!recorded && node->first_child == RP_NONE) {
            rp_sum one = {TS_UNAVAILABLE, false, 0, 0.0};
            rp_group *g = group_for(page, view, "", "", "", true);
            if (g == NULL) {
                return TS_ENOMEM;
            }
            for (int side = 0; side < 2; side++) {
                if (node->ncalls[side] > 0) {
                    g->own[side][n] = one;
                }
            }
        }
    }
    for (size_t i = 0; i < view->ngroups; i++) {
        rp_group *g = &view->groups[i];
        layout_group(page, g);
        for (size_t n = 0; n < page->nnodes; n++) {
            int kind = rp_rail_kind(page, g, n);
            if (kind >= 0) {
                g->nrail[kind]++;
            }
        }
    }
    return TS_OK;
}

/* ---- comparison --------------------------------------------------------- */

static const char *const storage_totals[] = {
    "parameters",
    "trainable_parameters",
    "frozen_parameters",
    "parameter_bytes",
    "buffer_elements",
    "buffer_bytes",
};

static bool
is_storage(const char *name)
{
    for (size_t i = 0; i < sizeof storage_totals / sizeof *storage_totals;
         i++) {
        if (strcmp(storage_totals[i], name) == 0) {
            return true;
        }
    }
    return false;
}

/* The reasons execution deltas are withheld: the inputs or a recorded
 * context value differ or are missing (analysis_mode absent reads "full"). */
static int
withheld_reasons(rp_page *page)
{
    static const char *const keys[] = {"torch_version",
                                       "torchscan_version",
                                       "python_version",
                                       "execution_mode",
                                       "devices",
                                       "dtypes",
                                       "analysis_mode"};
    const json_t *ca = json_object_get(page->report, "context");
    const json_t *cb = json_object_get(page->before, "context");
    const json_t *ia = json_object_get(page->report, "inputs");
    const json_t *ib = json_object_get(page->before, "inputs");
    page->withheld = json_array();
    if (page->withheld == NULL) {
        return TS_ENOMEM;
    }
    if (ia == NULL || ib == NULL || !ts_json_equal(ia, ib)) {
        if (json_array_append_new(page->withheld, json_string("inputs"))) {
            return TS_ENOMEM;
        }
    }
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        const json_t *a = json_object_get(ca, keys[k]);
        const json_t *b = json_object_get(cb, keys[k]);
        bool same;
        if (strcmp(keys[k], "analysis_mode") == 0) {
            const char *sa = a != NULL ? json_string_value(a) : "full";
            const char *sb = b != NULL ? json_string_value(b) : "full";
            same = sa != NULL && sb != NULL && strcmp(sa, sb) == 0;
        }
        else {
            same = a != NULL && b != NULL && ts_json_equal(a, b);
        }
        if (!same
            && json_array_append_new(page->withheld, json_string(keys[k]))) {
            return TS_ENOMEM;
        }
    }
    return TS_OK;
}

/* Marks one metric diff withheld: unavailable, no delta, the reason. */
static int
withhold(json_t *diff, const char *reason)
{
    return json_object_set_new(diff, "status", json_string("unavailable"))
                   || json_object_set_new(diff, "delta", json_null())
                   || json_object_set_new(diff, "reason", json_string(reason))
               ? TS_ENOMEM
               : TS_OK;
}

static int
build_comparison(rp_page *page, ts_error *err)
{
    char reason[512] = "not comparable: ";
    json_t *changed, *totals, *diff, *layer;
    const char *name;
    size_t i;
    int rc;
    page->comparison = ts_compare_reports(page->before, page->report, err);
    if (page->comparison == NULL) {
        return err != NULL && err->code != TS_OK ? err->code : TS_ENOMEM;
    }
    if ((rc = withheld_reasons(page)) != TS_OK
        || json_array_size(page->withheld) == 0) {
        return rc;
    }
    for (i = 0; i < json_array_size(page->withheld); i++) {
        if (i > 0) {
            strncat(reason, ", ", sizeof reason - strlen(reason) - 1);
        }
        strncat(reason,
                json_string_value(json_array_get(page->withheld, i)),
                sizeof reason - strlen(reason) - 1);
    }
    totals = json_object_get(page->comparison, "totals");
    json_object_foreach(totals, name, diff)
    {
        if (!is_storage(name) && withhold(diff, reason) != TS_OK) {
            return TS_ENOMEM;
        }
    }
    changed = json_object_get(json_object_get(page->comparison, "layers"),
                              "changed");
    json_array_foreach(changed, i, layer)
    {
        json_object_foreach(json_object_get(layer, "metrics"), name, diff)
        {
            if (withhold(diff, reason) != TS_OK) {
                return TS_ENOMEM;
            }
        }
    }
    return TS_OK;
}

/* ---- operator FLOPs per module ---------------------------------------------
 */

/* Self FLOPs of each row, and inclusive ones per module path: the self
 * FLOPs of all calls of the path and of every path under it. (Per call,
 * inclusive values cannot be told from a report: a row's depth is its
 * path's, so a shared module called inside another one's forward looks
 * the same as one called after it.) */
static int
build_operator_flops(rp_page *page)
{
    const json_t *layers = page->layers[0];
    size_t n = json_array_size(layers);
    page->op_self = calloc(n + 1, sizeof *page->op_self);
    page->op_incl = calloc(page->nnodes + 1, sizeof *page->op_incl);
    if (page->op_self == NULL || page->op_incl == NULL) {
        return TS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        page->op_self[i] = rp_sum_of_metric(json_object_get(
            json_object_get(json_array_get(layers, i), "metrics"),
            "operator_flops"));
    }
    for (size_t k = 0; k < page->nnodes; k++) {
        page->op_incl[k].status = RP_ABSENT;
    }
    for (size_t k = page->nnodes; k-- > 0;) {
        const rp_node *node = &page->nodes[k];
        for (size_t c = 0; c < node->ncalls[0]; c++) {
            rp_sum_add(&page->op_incl[k], &page->op_self[node->calls[0][c]]);
        }
        if (node->parent != RP_NONE) {
            rp_sum_add(&page->op_incl[node->parent], &page->op_incl[k]);
        }
    }
    return TS_OK;
}

/* ---- suggestions -------------------------------------------------------- */

static bool
is_compute_diagnostic(const json_t *d)
{
    static const char *const metrics[] = {
        "module_flops", "macs", "dmas", "operator_flops"};
    const char *metric = json_string_value(json_object_get(d, "metric"));
    for (size_t i = 0; metric != NULL && i < 4; i++) {
        if (strcmp(metric, metrics[i]) == 0) {
            return true;
        }
    }
    return false;
}

static int
add_suggestion(rp_page *page,
               const char *path,
               int64_t call_index,
               const char *href,
               ts_text_buf *fact,
               const char *experiment)
{
    json_t *s;
    if (fact->failed || fact->data == NULL) {
        free(fact->data);
        return TS_ENOMEM;
    }
    s = json_pack("{s:s,s:I,s:s,s:s,s:s}",
                  "path",
                  path,
                  "call_index",
                  (json_int_t)call_index,
                  "href",
                  href,
                  "fact",
                  fact->data,
                  "experiment",
                  experiment);
    free(fact->data);
    return s != NULL && json_array_append_new(page->suggestions, s) == 0
               ? TS_OK
               : TS_ENOMEM;
}

/* The row with the largest complete value of view v (first on ties). */
static size_t
largest_row(const rp_page *page, int v, rp_sum *best)
{
    size_t found = RP_NONE;
    for (size_t i = 0; i < json_array_size(page->layers[0]); i++) {
        const json_t *metric;
        rp_sum value = rp_row(page, 0, v, i, &metric);
        if (value.status == TS_COMPLETE && rp_sum_double(&value) > 0
            && (found == RP_NONE
                || rp_sum_double(&value) > rp_sum_double(best))) {
            found = i;
            *best = value;
        }
    }
    return found;
}

static int
build_suggestions(rp_page *page)
{
    static const char *const views[] = {"module_flops", "parameters"};
    const json_t *diagnostics = json_object_get(page->report, "diagnostics");
    size_t ncompute = 0, first = RP_NONE;
    page->suggestions = json_array();
    if (page->suggestions == NULL) {
        return TS_ENOMEM;
    }
    for (int k = 0; k < 2; k++) {
        int v = rp_view_index(views[k]);
        rp_sum best = {RP_ABSENT, false, 0, 0.0};
        size_t row = largest_row(page, v, &best);
        const json_t *layer = json_array_get(page->layers[0], row);
        const char *path = rp_text(layer, "path");
        int64_t call =
            json_integer_value(json_object_get(layer, "call_index"));
        ts_text_buf fact = {NULL, 0, 0, false};
        char href[48];
        int rc;
        if (row == RP_NONE) {
            continue;
        }
        snprintf(href, sizeof href, "#call-%zu", row);
        ts_text_put(&fact, "Recorded fact: ");
        ts_text_put(&fact, path[0] != '\0' ? path : "(model)");
        ts_text_put(&fact,
                    k == 0 ? " has the largest complete module FLOPs "
                             "of any call"
                           : " newly attributes the most parameters "
                             "of any call");
        {
            char number[64];
            snprintf(number,
                     sizeof number,
                     best.real ? " (%.6g %s)." : " (%.0f %s).",
                     rp_sum_double(&best),
                     k == 0 ? "FLOPs" : "parameters");
            ts_text_put(&fact, number);
        }
        rc = add_suggestion(
            page,
            path,
            call,
            href,
            &fact,
            k == 0 ? "Experiment to try: benchmark latency with "
                     "measure_latency before and after changing this "
                     "module; FLOPs do not establish latency."
                   : "Experiment to try: measure peak memory with "
                     "measure_peak_memory; static parameter bytes are not "
                     "measured peak memory.");
        if (rc != TS_OK) {
            return rc;
        }
    }
    for (size_t i = 0; i < json_array_size(diagnostics); i++) {
        if (is_compute_diagnostic(json_array_get(diagnostics, i))) {
            first = ncompute++ == 0 ? i : first;
        }
    }
    if (ncompute > 0) {
        const json_t *d = json_array_get(diagnostics, first);
        ts_text_buf fact = {NULL, 0, 0, false};
        char href[48], count[96];
        snprintf(href, sizeof href, "#diagnostic-%zu", first);
        snprintf(count,
                 sizeof count,
                 "Recorded fact: %zu compute diagnostic%s, the first ",
                 ncompute,
                 ncompute == 1 ? "" : "s");
        ts_text_put(&fact, count);
        ts_text_put(&fact, rp_text(d, "code"));
        ts_text_put(&fact, ", leave FLOPs incomplete.");
        return add_suggestion(
            page,
            rp_text(d, "path"),
            0,
            href,
            &fact,
            "Experiment to try: supply the missing formulas with "
            "measure_flops(custom_mapping=...) for operators, or "
            "crawl_module(custom_modules=...) for modules, then analyse "
            "again.");
    }
    return TS_OK;
}

/* ---- the page ----------------------------------------------------------- */

void
rp_page_free(rp_page *page)
{
    for (int v = 0; v < RP_VIEWS; v++) {
        for (size_t i = 0; i < page->views[v].ngroups; i++) {
            free_group(&page->views[v].groups[i]);
        }
        free(page->views[v].groups);
        free(page->views[v].cover);
    }
    for (int side = 0; side < 2; side++) {
        for (int v = 0; v < RP_VIEWS; v++) {
            free(page->values[side][v]);
            free((void *)page->metrics[side][v]);
        }
    }
    for (size_t n = 0; n < page->nnodes; n++) {
        free(page->nodes[n].path);
        free(page->nodes[n].calls[0]);
        free(page->nodes[n].calls[1]);
    }
    free(page->nodes);
    free(page->op_self);
    free(page->op_incl);
    json_decref(page->index);
    json_decref(page->comparison);
    json_decref(page->withheld);
    json_decref(page->suggestions);
    memset(page, 0, sizeof *page);
}

int
rp_page_build(rp_page *page,
              const json_t *report,
              const json_t *before,
              ts_error *err)
{
    int rc;
    const char *mode;
    memset(page, 0, sizeof *page);
    if ((rc = ts_analysis_report_check_display(report, "report", err)) != TS_OK
        || (before != NULL
            && (rc = ts_analysis_report_check_display(before, "before", err))
                   != TS_OK)) {
        return rc;
    }
    page->report = report;
    page->before = before;
    page->layers[0] = json_object_get(report, "layers");
    page->layers[1] = json_object_get(before, "layers");
    mode = json_string_value(
        json_object_get(json_object_get(report, "context"), "analysis_mode"));
    page->structure = mode != NULL && strcmp(mode, "structure") == 0;
    page->index = json_object();
    rc = page->index != NULL ? TS_OK : TS_ENOMEM;
    if (rc == TS_OK && before != NULL) {
        rc = build_comparison(page, err);
    }
    if (rc == TS_OK) {
        rc = read_rows(page);
    }
    if (rc == TS_OK) {
        rc = build_nodes(page, err);
    }
    for (int v = 0; rc == TS_OK && v < RP_VIEWS; v++) {
        rc = build_view(page, v);
    }
    if (rc == TS_OK) {
        rc = build_operator_flops(page);
    }
    if (rc == TS_OK) {
        rc = build_suggestions(page);
    }
    if (rc != TS_OK) {
        if (rc == TS_ENOMEM) {
            ts_error_set(err, TS_ENOMEM, "out of memory rendering a report");
        }
        rp_page_free(page);
    }
    return rc;
}
