/* libFuzzer target over the path every saved report takes: JSON text ->
 * jansson (as the `torchscan` command reads files) -> the report check ->
 * compare_reports, the summary table, Python-style JSON text, the
 * analysis page renderer (HTML, SVG, before/after) and the per-layer
 * exports (CSV, Markdown, folded stacks), which read only checked reports;
 * and any JSON -> the benchmark page (render_report's validation, the
 * summary and the SVG pictures of the timed blocks). Built and run by
 * `make fuzz` (clang-14,
 * -fsanitize=fuzzer,address,undefined); seeds in tests/fuzz/corpus/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "torchscan/diff.h"
#include "torchscan/export.h"
#include "torchscan/json_text.h"
#include "torchscan/render.h"
#include "torchscan/report_check.h"
#include "torchscan/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    ts_error err;
    json_t *report =
        json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (report == NULL) {
        return 0;
    }
    ts_error_clear(&err);
    if (ts_analysis_report_check(report, "fuzz", &err) == TS_OK) {
        static const ts_table_options options[2] = {
            {TS_WRAP_MID, false, false, -1},
            {TS_WRAP_END, true, true, 1},
        };
        json_t *diff = ts_compare_reports(report, report, &err);
        char *text = diff != NULL ? ts_json_text(diff, 2) : NULL;
        free(text);
        json_decref(diff);
        for (int k = 0; k < 2; k++) {
            free(ts_format_summary(report, &options[k], &err));
        }
        free(ts_render_analysis(report, NULL, "t", "macs", "html", &err));
        free(ts_render_analysis(report, NULL, "t", "dmas", "svg", &err));
        free(ts_render_analysis(
            report, report, "t", "module_flops", "html", &err));
        /* every export format: every metric in the tables, and the folded
         * stacks of each metric */
        for (int f = TS_EXPORT_CSV; f <= TS_EXPORT_FOLDED; f++) {
            for (int m = -1; m < TS_EXPORT_NMETRICS; m++) {
                ts_export_options opt = {(ts_export_format)f, m};
                free(ts_export_report(report, &opt, NULL, &err));
            }
        }
    }
    else {
        (void)ts_json_data_check(report, "fuzz", &err);
    }
    free(ts_render_benchmark_html(report, "fuzz", &err));
    json_decref(report);
    return 0;
}
