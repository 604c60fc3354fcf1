/* Private to src/core: the one style sheet of every rendered page (the
 * analysis page, its SVG and the benchmark page): colours as variables with
 * light and dark themes (the reader's preference, or the page's theme
 * switch), the map and rail, and a print style sheet. */
#ifndef TORCHSCAN_RENDER_STYLE_H
#define TORCHSCAN_RENDER_STYLE_H

extern const char rs_style[];
/* The smaller sheet of a standalone SVG. */
extern const char rs_svg_style[];

#endif /* TORCHSCAN_RENDER_STYLE_H */
