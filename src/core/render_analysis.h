/* Private to src/core: the two emitters of the analysis page model
 * (render_model.h). `view` is the index of the selected metric view. Each
 * returns a malloc'd string, or NULL with err set (out of memory). */
#ifndef TORCHSCAN_RENDER_ANALYSIS_H
#define TORCHSCAN_RENDER_ANALYSIS_H

#include "render_model.h"

/* The HTML page (contract 4.1). */
char *rh_page(const rp_page *page, const char *title, int view, ts_error *err);
/* The standalone SVG (contract 4.2). */
char *rsv_page(const rp_page *page,
               const char *title,
               int view,
               ts_error *err);

#endif /* TORCHSCAN_RENDER_ANALYSIS_H */
