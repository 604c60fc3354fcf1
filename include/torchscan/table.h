/* The summary table of an AnalysisReport (contract 5.1), and the text
 * rules it applies, one value at a time: TorchScan 0.2.0's torchscan.utils
 * helpers (format_name, wrap_string, format_s, unit_scale, format_line_str,
 * aggregate_info), which the binding exposes. */
#ifndef TORCHSCAN_TABLE_H
#define TORCHSCAN_TABLE_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TS_WRAP_MID = 0,
    TS_WRAP_END = 1,
    TS_WRAP_NONE = 2,
    /* any other mode of 0.2.0's wrap_string: refused only when a text
     * needs shortening (the table's options never hold it) */
    TS_WRAP_UNKNOWN = 3,
} ts_wrap_mode;

typedef struct ts_table_options {
    ts_wrap_mode wrap_mode;
    bool receptive_field;
    bool effective_rf_stats; /* only with receptive_field */
    int max_depth;           /* < 0: all rows */
} ts_table_options;

/* Formats the table (no trailing newline). Returns a malloc'd string owned by
 * the caller (free()), or NULL with err set: TS_EINVAL when max_depth is
 * deeper than the model ("max_depth cannot be higher than module depth"),
 * TS_EFORMAT when the report lacks a required field. */
char *ts_format_summary(const json_t *report,
                        const ts_table_options *options,
                        ts_error *err);

/* ---- the table's text rules, one value at a time ----
 *
 * Text is UTF-8 with its length (NUL bytes allowed), measured in code
 * points as Python measures a str; a lone surrogate in the three bytes of
 * Python's "surrogatepass" counts as one. Each function writes a malloc'd,
 * NUL-terminated text into *out (the caller frees out->data) and returns
 * TS_OK, or a TS_E* status with err set and out->data NULL. */

typedef struct ts_table_text {
    char *data;
    size_t len;
} ts_table_text;

/* What wrap_string cuts at and marks the cut with (the table's: "." and
 * "[...]"). The delimiter is not empty. */
typedef struct ts_wrap_marks {
    const char *delimiter;
    size_t delimiter_len;
    const char *wrap;
    size_t wrap_len;
} ts_wrap_marks;

/* format_name(name, depth): the Layer cell, "├─name" at depth 1 and
 * "|    " * (depth - 1) + "└─name" deeper. TS_EINVAL for a negative depth,
 * TS_ENOMEM when the text would not fit in memory. */
int ts_table_format_name(const char *name,
                         size_t len,
                         int64_t depth,
                         ts_table_text *out,
                         ts_error *err);

/* wrap_string(s, max_len, delimiter, wrap, mode): s when it has at most
 * max_len code points or mode is TS_WRAP_NONE; "end": s[:max_len - len(wrap)]
 * + wrap; "mid": s[:max_len - len(tail)] + tail, tail = wrap + "." + the
 * part after the last delimiter (all of s without one). Python's slice
 * rules apply to a negative stop. TS_EINVAL for a negative max_len, an
 * empty delimiter, or TS_WRAP_UNKNOWN when s needs shortening ("received
 * an unexpected value of argument `mode`"). */
int ts_table_wrap_string(const char *s,
                         size_t len,
                         int64_t max_len,
                         const ts_wrap_marks *marks,
                         ts_wrap_mode mode,
                         ts_table_text *out,
                         ts_error *err);

/* format_s(s, min_w, max_w): s padded with spaces to min_w code points,
 * then cut to max_w; a negative width means none. */
int ts_table_format_s(const char *s,
                      size_t len,
                      int64_t min_w,
                      int64_t max_w,
                      ts_table_text *out,
                      ts_error *err);

/* unit_scale(value): the largest of 1e12 ("T"), 1e9 ("G"), 1e6 ("M") and
 * 1e3 ("k") that a finite value reaches (0.2.0 tests value // factor > 0).
 * Returns true and sets *divisor and *prefix when one is reached; false
 * (1.0 and "") for smaller, negative, NaN and infinite values, which 0.2.0
 * returns unscaled. */
bool ts_table_unit_scale(double value, double *divisor, const char **prefix);

/* format_line_str(layer, col_w, wrap_mode, receptive_field,
 * effective_rf_stats): the cells of one report layer's row, as the table
 * shows them: Layer (its name wrapped to col_w[0] + 3, or 100 without a
 * width, by `mode`), Type, Output Shape (end-wrapped to col_w[2], or 100),
 * Param #, Trainable, then the receptive field with `receptive_field` and
 * the effective stride and padding with both flags; each cell padded and
 * cut to its col_w (negative: neither). Fills cells[0..*count-1] (each
 * malloc'd; free them with ts_table_texts_free, also after an error).
 * TS_EFORMAT for a layer without the fields its row shows, TS_EINVAL for a
 * negative depth or TS_WRAP_UNKNOWN when the name needs shortening. */
int ts_table_line(const json_t *layer,
                  const int64_t col_w[8],
                  ts_wrap_mode mode,
                  bool receptive_field,
                  bool effective_rf_stats,
                  ts_table_text cells[8],
                  int *count,
                  ts_error *err);

/* Frees the `count` texts (NULL data is skipped) and clears them. */
void ts_table_texts_free(ts_table_text *texts, int count);

/* aggregate_info(report, max_depth): a new report object (owned by the
 * caller) holding the same members as `report` (shared references), whose
 * "layers" keeps only the layers of depth <= max_depth. TS_EINVAL ("max_depth
 * must be non-negative.") for a negative max_depth and, when the report has
 * layers, for a depth that none of them has ("The `max_depth` argument
 * cannot be higher than module depth."); TS_EFORMAT for a report without a
 * "layers" list or a layer without an integer depth. */
json_t *ts_table_limit_depth(const json_t *report,
                             int64_t max_depth,
                             ts_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_TABLE_H */
