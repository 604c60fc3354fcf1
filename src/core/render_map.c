/* The module cost map (render_map.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render_map.h"
#include "render_text.h"

#define TOP_PAD 2.0

double
rm_height(const rp_group *group)
{
    return group->rows * RP_ROW_HEIGHT + 2 * TOP_PAD;
}

bool
rm_removed(const rp_page *page, const rp_group *group, size_t n)
{
    return page->before != NULL && page->nodes[n].ncalls[0] == 0
           && page->nodes[n].ncalls[1] > 0
           && group->sub[1][n].status != RP_ABSENT;
}

/* The label text, not escaped. */
static void
label_text(ts_text_buf *b, const rp_page *page, size_t n)
{
    const rp_node *node = &page->nodes[n];
    size_t calls = node->ncalls[0] > 0 ? node->ncalls[0] : node->ncalls[1];
    ts_text_put(b, node->parent == RP_NONE ? "(model)" : node->name);
    if (calls > 1) {
        ts_text_printf(b, " ×%zu calls", calls);
    }
}

void
rm_label(ts_text_buf *b, const rp_page *page, size_t n)
{
    ts_text_buf label = {NULL, 0, 0, false};
    label_text(&label, page, n);
    b->failed |= label.failed;
    ts_text_put_escaped(b, label.data);
    free(label.data);
}

void
rm_group_key(ts_text_buf *b, const rp_group *g)
{
    if (g->unscaled) {
        ts_text_put(b, "no_recorded_measurement · structural · unscaled");
        return;
    }
    ts_text_put_escaped(b, g->method);
    ts_text_put(b, " · ");
    ts_text_put_escaped(b, g->unit);
    ts_text_put(b, " · ");
    ts_text_put_escaped(b, g->scope);
}

void
rm_subtotal_text(
    ts_text_buf *b, const rp_group *group, size_t n, int side, rm_mode mode)
{
    if (group->unscaled) {
        ts_text_put(b,
                    group->sub[side][n].status == RP_ABSENT
                        ? "not recorded"
                        : "structural · unscaled");
        return;
    }
    if (mode == RM_SVG) {
        rt_status_short(b, &group->sub[side][n], group->unit);
    }
    else {
        rt_status_text(b, &group->sub[side][n], group->unit);
    }
}

/* The diverging class of a compared tile, or NULL when the change is not
 * known (either side incomplete). */
static const char *
change_class(const rp_group *group, size_t n)
{
    static const char *const up[] = {"same", "up1", "up2", "up3"};
    static const char *const down[] = {"same", "down1", "down2", "down3"};
    const rp_sum *a = &group->sub[0][n], *b = &group->sub[1][n];
    double va, vb, r;
    int level;
    if (a->status == RP_ABSENT && b->status == TS_COMPLETE) {
        return "down3";
    }
    if (b->status == RP_ABSENT && a->status == TS_COMPLETE) {
        return "up3";
    }
    if (a->status != TS_COMPLETE || b->status != TS_COMPLETE) {
        return NULL;
    }
    va = rp_sum_double(a);
    vb = rp_sum_double(b);
    if (va == vb) {
        return "same";
    }
    r = (va - vb) / (va > vb ? va : vb);
    level = fabs(r) < 0.1 ? 1 : fabs(r) < 0.5 ? 2 : 3;
    return r > 0 ? up[level] : down[level];
}

/* The tile text, cut to what fits `width` (about 6.5 units a character,
 * counted in code points), then escaped. */
static void
fitted_label(ts_text_buf *b, const rp_page *page, size_t n, double width)
{
    ts_text_buf label = {NULL, 0, 0, false};
    size_t fit = width > 8 ? (size_t)((width - 8) / 7.5) : 0, count = 0, i;
    label_text(&label, page, n);
    b->failed |= label.failed;
    if (label.data == NULL || fit < 3) {
        free(label.data);
        return;
    }
    for (i = 0; label.data[i] != '\0'; i++) {
        if (((unsigned char)label.data[i] & 0xC0) != 0x80
            && count++ == fit - 1) {
            break;
        }
    }
    if (label.data[i] != '\0') {
        label.data[i] = '\0'; /* i is the start of a character */
        ts_text_put_escaped(b, label.data);
        ts_text_put(b, "…");
    }
    else {
        ts_text_put_escaped(b, label.data);
    }
    free(label.data);
}

static const char *const depth_class[] = {"d0", "d1", "d2", "d3", "d4", "d5"};

/* <rect class="box CLS" .../> for the tile itself ("box" marks the
 * focusable outline), <rect class="CLS" .../> for bars and hatching. */
static void
rect(ts_text_buf *b, const char *cls, double x, double y, double w, double h)
{
    bool box = strncmp(cls, "bar-", 4) != 0 && strcmp(cls, "hatch") != 0;
    ts_text_put(b, box ? "<rect class=\"box " : "<rect class=\"");
    ts_text_put(b, cls);
    ts_text_put(b, "\" x=\"");
    rt_fixed2(b, x);
    ts_text_put(b, "\" y=\"");
    rt_fixed2(b, y);
    ts_text_put(b, "\" width=\"");
    rt_fixed2(b, w);
    ts_text_put(b, "\" height=\"");
    rt_fixed2(b, h);
    ts_text_put(b, "\"/>");
}

static void
tile(ts_text_buf *b,
     const rp_page *page,
     int v,
     size_t gi,
     size_t n,
     rm_mode mode,
     double y0)
{
    const rp_group *g = &page->views[v].groups[gi];
    const rp_node *node = &page->nodes[n];
    double x = g->x[n], w = g->width[n];
    double y = y0 + TOP_PAD + node->depth * RP_ROW_HEIGHT;
    double h = RP_ROW_HEIGHT - 2;
    /* deltas drawn only where they are not withheld: never per module for
     * parameters (attribution follows call order), and not for execution
     * metrics whose context differs */
    bool compare = page->before != NULL && v < RP_VIEW_PARAMETERS
                   && json_array_size(page->withheld) == 0;
    const char *cls = compare ? change_class(g, n) : NULL;
    bool hatched =
        g->sub[0][n].status == TS_PARTIAL
        || (page->before != NULL && g->sub[1][n].status == TS_PARTIAL);
    size_t first = node->ncalls[0] > 0 ? node->calls[0][0] : RP_NONE;
    ts_text_put(b, "<a class=\"tile\" tabindex=\"0\" href=\"#");
    if (mode == RM_SVG) {
        ts_text_put(b, "inspector-");
        ts_text_put(b, g->id);
        ts_text_put(b, "-");
        ts_text_put_int(b, (int64_t)n);
    }
    else if (first != RP_NONE) {
        ts_text_put(b, "call-");
        ts_text_put_int(b, (int64_t)first);
    }
    else if (node->ncalls[1] > 0) {
        ts_text_put(b, "before-call-");
        ts_text_put_int(b, (int64_t)node->calls[1][0]);
    }
    else {
        ts_text_put(b, "tree-");
        ts_text_put_int(b, (int64_t)n);
    }
    ts_text_put(b, "\" data-node=\"");
    ts_text_put_int(b, (int64_t)n);
    ts_text_put(b, "\" data-subtotal=\"");
    rm_subtotal_text(b, g, n, 0, mode);
    if (page->before != NULL) {
        ts_text_put(b, "\" data-before=\"Before subtree: ");
        rm_subtotal_text(b, g, n, 1, mode);
        ts_text_put(b, " · After subtree: ");
        rm_subtotal_text(b, g, n, 0, mode);
    }
    ts_text_put(b, "\" aria-label=\"");
    ts_text_put_escaped(b, node->parent == RP_NONE ? "(model)" : node->path);
    ts_text_put(b, ": ");
    rm_subtotal_text(b, g, n, 0, mode);
    ts_text_put(b, "\">");
    rect(b, cls != NULL ? cls : depth_class[node->depth % 6], x, y, w, h);
    if (compare) {
        double half = (h - 6) / 2;
        rect(b,
             "bar-before",
             x,
             y + h - 2 * half - 2,
             g->unscaled ? 0.0 : rp_sum_double(&g->sub[1][n]) * g->scale,
             half);
        rect(b,
             "bar-after",
             x,
             y + h - half - 1,
             g->unscaled ? 0.0 : rp_sum_double(&g->sub[0][n]) * g->scale,
             half);
    }
    if (hatched) {
        rect(b, "hatch", x, y, w, h);
    }
    ts_text_put(b, "<text x=\"");
    rt_fixed2(b, x + 4);
    ts_text_put(b, "\" y=\"");
    rt_fixed2(b, y + 18);
    ts_text_put(b, "\">");
    fitted_label(b, page, n, w);
    ts_text_put(b, "</text><title>");
    ts_text_put_escaped(b, node->parent == RP_NONE ? "(model)" : node->path);
    ts_text_put(b, " · ");
    rm_subtotal_text(b, g, n, 0, mode);
    if (node->ncalls[0] > 1) {
        ts_text_printf(b, " · ×%zu calls", node->ncalls[0]);
    }
    if (hatched) {
        ts_text_put(b, " · full value unknown");
    }
    if (mode == RM_SVG) {
        ts_text_put(b, " Call evidence: [");
        for (size_t k = 0; k < node->ncalls[0]; k++) {
            if (k > 0) {
                ts_text_put(b, ",");
            }
            rt_json_esc(b, json_array_get(page->layers[0], node->calls[0][k]));
        }
        ts_text_put(b, "]");
    }
    ts_text_put(b, "</title></a>\n");
}

void
rm_tiles(ts_text_buf *b,
         const rp_page *page,
         int v,
         size_t g,
         rm_mode mode,
         double y0)
{
    const rp_group *group = &page->views[v].groups[g];
    for (size_t n = 0; n < page->nnodes; n++) {
        if (group->width[n] >= RP_MIN_TILE_WIDTH) {
            tile(b, page, v, g, n, mode, y0);
        }
    }
}
