/* Private to src/core: the pictures of a benchmark page (render.c), inline
 * SVG without script.
 *
 * A BenchmarkReport's timed blocks (measurement.raw_times_seconds, each of
 * measurement.number_per_run calls) are drawn as per-call times, the values
 * whose median and interquartile range are totals.latency and
 * totals.latency_iqr:
 *   - a strip: one mark per block along a time axis, with the IQR box (25th
 *     to 75th percentile of the blocks) and the median line (the report's
 *     latency);
 *   - a run-order plot: x = the block's place in the run, y = its per-call
 *     time, with the median as a horizontal line, so warm-up drift and
 *     outliers show.
 * A BenchmarkComparison draws its baseline and candidate on one common time
 * axis in both figures: baseline blocks are circles, candidate blocks
 * squares (a legend names them), so the two read apart without colour.
 *
 * A report is drawn only when its latency and latency IQR are complete and
 * its blocks reproduce them (the same median and IQR arithmetic as
 * measure_latency, within a relative 1e-9): an unavailable, partial or
 * inconsistent figure is never drawn as a value, and the page says why in
 * text instead. Each figure has role="img", an aria-label and a <title>
 * that give its median and IQR (or, for the run-order plot, the first,
 * last, fastest and slowest blocks), a caption, and is followed by its
 * numbers in a table. Geometry is computed here, written with fixed
 * precision: the same report gives the same bytes. */
#ifndef TORCHSCAN_RENDER_PLOT_H
#define TORCHSCAN_RENDER_PLOT_H

#include "torchscan/core.h"
#include "text_buf.h"

/* Appends the page section "Timed blocks" (<section>...</section>) for a
 * BenchmarkReport (`candidate` NULL) or for a comparison's baseline and
 * candidate reports. The reports must have passed ts_benchmark_validate.
 * An allocation failure sets b->failed (the page writer reports it). */
void ts_render_timing_section(ts_text_buf *b,
                              const json_t *report,
                              const json_t *candidate);

#endif /* TORCHSCAN_RENDER_PLOT_H */
