/* Timing statistics of measure_latency (contract 1.8): the block-size rule
 * and the median / IQR / throughput arithmetic over measured blocks. The
 * timing loop itself lives in the binding (src/ext/timing.c); everything it
 * computes from the clock readings is here, so it can be tested in C.
 */
#ifndef TORCHSCAN_STATS_H
#define TORCHSCAN_STATS_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Method strings of the timing totals: our own loop, not
 * torch.utils.benchmark.Timer, so the names say so. */
#define TS_FIRST_CALL_METHOD "synchronized_monotonic_clock"
#define TS_TIMER_METHOD "torchscan_blocked_timer"

/* The most calls one block may hold (torch.utils.benchmark's cap). */
#define TS_AUTORANGE_MAX_NUMBER INT64_C(2147483647)

/* A calibration block aims at this fraction of min_run_time, so that a
 * measurement of min_run_time holds about ten blocks. */
#define TS_AUTORANGE_BLOCK_FRACTION 0.1

/* The block-size rule. A calibration block of `number` calls took
 * `seconds`. Returns true when `number` is final: the block took at least
 * `target` seconds, or `number` reached TS_AUTORANGE_MAX_NUMBER. Otherwise
 * returns false and sets *next to number * (target / seconds) * 1.25
 * (rounded up), but at least 2x and at most 10x `number`, capped at
 * TS_AUTORANGE_MAX_NUMBER. A non-positive or non-finite `seconds` grows by
 * 10x. */
bool ts_autorange_next(int64_t number,
                       double seconds,
                       double target,
                       int64_t *next);

/* The q-quantile (0 <= q <= 1) of n >= 1 ascending values with linear
 * interpolation between closest ranks (torch.quantile's default, which
 * torch.utils.benchmark's Measurement uses). */
double ts_quantile_sorted(const double *sorted, size_t n, double q);

typedef struct ts_timing_summary {
    double median; /* seconds per call: median of the block averages */
    double p25, p75;
    double iqr;           /* p75 - p25 */
    double total_seconds; /* sum of the raw block times */
    int64_t measured_calls;
    double throughput; /* work_units / (total_seconds / measured_calls) */
} ts_timing_summary;

/* Summarizes `n` >= 1 raw block times (seconds, `number` >= 1 calls each).
 * TS_EMEASURE "Timing must produce positive finite durations." when a block
 * time is not a positive finite number; TS_EMEASURE "Throughput must be
 * positive and finite; adjust work_units." when the throughput is not;
 * TS_EINVAL for bad arguments; TS_EOVERFLOW when number * n overflows;
 * TS_ENOMEM. */
int ts_timing_summarize(const double *blocks,
                        size_t n,
                        int64_t number,
                        double work_units,
                        ts_timing_summary *out,
                        ts_error *err);

/* The timing part of a BenchmarkReport:
 *   {"totals": {first_call_latency, latency, latency_iqr, throughput},
 *    "measurement": {number_per_run, raw_times_seconds, measured_calls}}
 * The throughput unit is "<work_unit>/s". Returns a new reference, or NULL
 * with err set (the errors of ts_timing_summarize; TS_EMEASURE also for a
 * first call that is not a positive finite duration). */
json_t *ts_timing_report(double first_call_seconds,
                         const double *blocks,
                         size_t n,
                         int64_t number,
                         double work_units,
                         const char *work_unit,
                         ts_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_STATS_H */
