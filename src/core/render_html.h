/* Private to src/core: what the two files of the analysis HTML page share
 * (render_html.c: the page, its views and the data island;
 * render_appendix.c: the appendix). */
#ifndef TORCHSCAN_RENDER_HTML_H
#define TORCHSCAN_RENDER_HTML_H

#include "render_model.h"
#include "text_buf.h"

/* "(1, 3, 32, 32) torch.float32" for each tensor of a metadata tree,
 * "; " between arguments, "name=" before keyword ones (escaped). */
void rh_shapes(ts_text_buf *b, const json_t *meta, int depth);
/* A list of str, ", " between items; "none recorded" when empty. */
void rh_string_list(ts_text_buf *b, const json_t *list);
/* A link to a call's details: "<a href=#call-i>path</a> call #k". */
void rh_call_link(ts_text_buf *b, const rp_page *page, int side, size_t row);
/* A link to a node's first call (or its place in the hierarchy). */
void rh_node_link(ts_text_buf *b, const rp_page *page, size_t n);
/* The appendix <details> of the page. */
void rh_appendix(ts_text_buf *b, const rp_page *page);

#endif /* TORCHSCAN_RENDER_HTML_H */
