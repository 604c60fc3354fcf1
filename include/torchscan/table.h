/* The summary table of an AnalysisReport (contract 5.1). */
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

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_TABLE_H */
