/* Private to src/core: the page model of an AnalysisReport rendering
 * (contract 1.13, 4.1, 4.2). render_model.c validates the report(s) and
 * builds this model with a deterministic layout; render_html.c and
 * render_svg.c only emit it, so the HTML map and the SVG map share one
 * geometry.
 *
 * The model:
 *  - nodes: one per module path of the report, and of `before` when given
 *    (the union tree), ancestors before descendants, children in the order
 *    their first call appears. Repeated calls of a path share one node
 *    (one tile, "xN calls"). Node 0 is the root "" (synthetic when no
 *    layer has the empty path).
 *  - views: the five metric views (module_flops, macs, dmas, parameters,
 *    parameter_bytes). Each view splits the recorded contributions into
 *    groups, one per (method, unit, scope) of the layer rows' values, plus
 *    a synthetic group "no_recorded_measurement" of the leaves with no
 *    value and no owner. A group has a map: per node the own contribution
 *    and the derived subtotal on each side, and the geometry of its tile.
 *  - sides: 0 is the report, 1 is `before` (only with a comparison). */
#ifndef TORCHSCAN_RENDER_MODEL_H
#define TORCHSCAN_RENDER_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "torchscan/core.h"

#define RP_NONE ((size_t)-1)
#define RP_VIEWS 5
/* The views in rp_view_index order: the three compute views, then the
 * parameter views, which count first-use attributions. */
enum {
    RP_VIEW_MODULE_FLOPS,
    RP_VIEW_MACS,
    RP_VIEW_DMAS,
    RP_VIEW_PARAMETERS,
    RP_VIEW_PARAMETER_BYTES
};
/* Width of a map in user units (the SVG viewBox width). */
#define RP_MAP_WIDTH 960.0
#define RP_ROW_HEIGHT 30.0
/* Contributions narrower than this share of the map go on the rail. */
#define RP_SMALL_SHARE 0.025
/* Tiles narrower than this are not drawn (their values stay in the
 * appendix and on the rail). */
#define RP_MIN_TILE_WIDTH 0.5
/* Rail entries listed per kind before "and N more". */
#define RP_RAIL_LIMIT 40
#define RP_RANKED_LIMIT 10

/* A status of a contribution or a subtotal; RP_ABSENT when nothing was
 * recorded. The others are ts_status values. */
enum {
    RP_ABSENT = 3
};

/* A sum of recorded values: the known part (a lower bound unless the status
 * is complete). Integers stay exact until they overflow int64, then the sum
 * continues as a double. */
typedef struct rp_sum {
    uint8_t status; /* TS_COMPLETE, TS_PARTIAL, TS_UNAVAILABLE, RP_ABSENT */
    bool real;
    int64_t i;
    double r;
} rp_sum;

typedef struct rp_node {
    char *path;       /* owned */
    const char *name; /* last component of path (inside path) */
    const char *type; /* the first call's type, or "" */
    size_t parent;    /* RP_NONE for the root */
    size_t first_child, last_child, next_sibling;
    int depth; /* path components */
    size_t ncalls[2], capcalls[2];
    size_t *calls[2]; /* layer indices on each side, report order */
} rp_node;

/* A metric owner a node's rows name for a view (metric_owners). */
typedef struct rp_cover {
    const char *path; /* NULL when not covered */
    int64_t call_index;
} rp_cover;

/* The kinds of rail entries (rp_rail_kind). */
enum {
    RP_RAIL_UNKNOWN,
    RP_RAIL_ZERO,
    RP_RAIL_SMALL
};

typedef struct rp_group {
    const char *method, *unit, *scope; /* borrowed; "" for the synthetic */
    bool unscaled;                     /* no_recorded_measurement */
    char id[16];                       /* "g0", "g1", ... unique per view */
    rp_sum *own[2];                    /* per node, per side */
    rp_sum *sub[2];                    /* derived subtotals */
    double *width, *x;                 /* geometry per node (union) */
    double scale;                      /* user units per value unit */
    int rows;                          /* map height in rows */
    size_t tiles;                      /* nodes drawn */
    size_t nrail[3];                   /* rail entries per kind */
} rp_group;

typedef struct rp_view {
    const char *name;  /* "module_flops" ... */
    const char *label; /* "Module FLOPs" ... */
    size_t ngroups;
    rp_group *groups;
    rp_cover *cover; /* per node (side 0) */
    size_t ncovered;
} rp_view;

typedef struct rp_page {
    const json_t *report, *before; /* borrowed; before may be NULL */
    const json_t *layers[2];       /* the layer lists */
    size_t nnodes, capnodes;
    rp_node *nodes;
    json_t *index; /* path -> node index (a jansson object as a map) */
    rp_view views[RP_VIEWS];
    bool structure; /* context.analysis_mode == "structure" */
    /* with before: compare_reports with withheld execution deltas */
    json_t *comparison;
    json_t *withheld; /* list of str: why execution deltas are withheld */
    /* evidence-linked suggestions: [{path, call_index, href, fact,
     * experiment}] */
    json_t *suggestions;
    /* each row's value per side and view (rp_row_value, read once) */
    rp_sum *values[2][RP_VIEWS];
    const json_t **metrics[2][RP_VIEWS];
    /* operator FLOPs per layer row of the report: self, inclusive */
    rp_sum *op_self, *op_incl;
} rp_page;

/* Validates report (and before, when not NULL) as contract 1.13 says, then
 * builds the model. Returns TS_OK, TS_EFORMAT/TS_EINVAL with err naming
 * where, or TS_ENOMEM. On failure the page holds nothing to free. */
int rp_page_build(rp_page *page,
                  const json_t *report,
                  const json_t *before,
                  ts_error *err);
void rp_page_free(rp_page *page);

/* The view index of a metric name, or -1. */
int rp_view_index(const char *metric);

/* Adds one value to a sum (status rules of a lower bound: complete stays
 * complete only when both are; an unknown part makes it partial). */
void rp_sum_add(rp_sum *sum, const rp_sum *value);
/* The known part as a double (for geometry). */
double rp_sum_double(const rp_sum *sum);
/* A sum from a MetricResult (absent for NULL). */
rp_sum rp_sum_of_metric(const json_t *metric);


/* The rail kind of node n's own contribution in a scaled group: unknown
 * (unavailable, or partial with no known part), complete zero, or small
 * (narrower than RP_SMALL_SHARE of the map); -1 when it is not on the
 * rail. */
int rp_rail_kind(const rp_page *page, const rp_group *group, size_t n);

/* The value row `row` on `side` records for view v: its MetricResult's
 * (set in *metric) for the compute views; a complete count of newly
 * attributed parameters or bytes for the parameter views (*metric NULL).
 * Absent when the row records none. Read once by rp_page_build. */
static inline rp_sum
rp_row(const rp_page *page, int side, int v, size_t row, const json_t **metric)
{
    *metric = page->metrics[side][v][row];
    return page->values[side][v][row];
}

/* obj[key] when it is a string, else "". */
static inline const char *
rp_text(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s != NULL ? s : "";
}

/* How a page names a module path: "(model)" for the root "". */
static inline const char *
rp_path_label(const char *path)
{
    return path[0] != '\0' ? path : "(model)";
}

/* A node's index by path, or RP_NONE. */
size_t rp_node_find(const rp_page *page, const char *path);

#endif /* TORCHSCAN_RENDER_MODEL_H */
