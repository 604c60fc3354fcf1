/* Private to src/core: the module cost map of one (view, group), drawn the
 * same way in the HTML page and the standalone SVG (contract 4.1, 4.2):
 * rows are module depth, a tile's width is its union subtotal on the
 * group's scale, repeated calls share one tile ("xN calls"), partial tiles
 * are hatched, unknown values are never drawn (they are on the rail). With
 * a comparison each tile holds a before and an after bar on the common
 * scale and is coloured by the sign and size of the change (a diverging
 * scale). */
#ifndef TORCHSCAN_RENDER_MAP_H
#define TORCHSCAN_RENDER_MAP_H

#include "render_model.h"
#include "text_buf.h"

typedef enum {
    RM_HTML, /* tiles link to the call details (#call-i) */
    RM_SVG,  /* tiles link to their inspector; titles hold call evidence */
} rm_mode;

/* The tiles of view v, group g, as SVG elements whose top row starts at
 * user unit y0. */
void rm_tiles(ts_text_buf *b,
              const rp_page *page,
              int v,
              size_t g,
              rm_mode mode,
              double y0);

/* The height in user units of the map's rows. */
double rm_height(const rp_group *group);

/* A node's label on its tile: its last path component ("(model)" for the
 * root) and " ×N calls" for repeated calls. */
void rm_label(ts_text_buf *b, const rp_page *page, size_t n);

/* A group's name (escaped): "method · unit · scope", or
 * "no_recorded_measurement · structural · unscaled". */
void rm_group_key(ts_text_buf *b, const rp_group *g);

/* The text of a node's subtotal in a group on one side (escaped): the
 * status sentence (the SVG's shorter form in RM_SVG), or "structural ·
 * unscaled" for the synthetic group. */
void rm_subtotal_text(
    ts_text_buf *b, const rp_group *group, size_t n, int side, rm_mode mode);

/* True when node n has calls only in the before report and a value in
 * the group there (a removed module of a comparison). */
bool rm_removed(const rp_page *page, const rp_group *group, size_t n);

#endif /* TORCHSCAN_RENDER_MAP_H */
