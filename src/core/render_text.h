/* Private to src/core: the text pieces the analysis page and its SVG share
 * (render_html.c, render_svg.c): escaped output, grouped and compact
 * numbers, and the status sentences of contract 4.1:
 *   complete    "complete · 1,234 FLOPs"
 *   partial     "partial · at least 1,234 FLOPs (lower bound; full value
 *                unknown)"
 *   unavailable "unavailable · unknown"
 *   deltas      "complete · +12 FLOPs", "partial · delta unknown (requires
 *                two complete measurements)", "unavailable · not
 *                comparable: <reasons>". */
#ifndef TORCHSCAN_RENDER_TEXT_H
#define TORCHSCAN_RENDER_TEXT_H

#include "render_model.h"
#include "text_buf.h"

/* A coordinate with two decimals, exactly as printf("%.2f") writes it
 * ("12.50", "-0.25"); printf runs only for values near a rounding half. */
void rt_fixed2(ts_text_buf *b, double value);
/* Caller text with & < > " ' as character references (HTML and XML). */
void rt_esc(ts_text_buf *b, const char *text);
/* A number with thousands separators ("1,234", "-5"); reals as Python's
 * repr writes them. */
void rt_grouped(ts_text_buf *b, const rp_sum *value);
/* A short form for cards and tiles: "388.8 k", "1.25 G", "12". */
void rt_compact(ts_text_buf *b, double value);
/* The status sentence of a sum in `unit` (escaped); "not recorded" when
 * absent. */
void rt_status_text(ts_text_buf *b, const rp_sum *value, const char *unit);
/* The SVG's shorter form (contract 4.2): complete as above, partial
 * "partial · ≥ 1,234 FLOPs · full value unknown". */
void rt_status_short(ts_text_buf *b, const rp_sum *value, const char *unit);
/* The status sentence of a MetricResult (escaped). */
void rt_metric_text(ts_text_buf *b, const json_t *metric);
/* The delta sentence of a metric diff {status, delta, before, after
 * [, reason]} (escaped). */
void rt_delta_text(ts_text_buf *b, const json_t *diff);
/* A value as JSON text inside a <script type="application/json"> element:
 * & < > U+2028 U+2029 written as \uXXXX, so no sequence can close the
 * element or break a script. */
void rt_json_island(ts_text_buf *b, const json_t *value);
/* A value as compact JSON text, escaped for element content (& < >; not
 * for an attribute). */
void rt_json_esc(ts_text_buf *b, const json_t *value);

#endif /* TORCHSCAN_RENDER_TEXT_H */
