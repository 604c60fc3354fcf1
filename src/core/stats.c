/* Timing statistics of measure_latency: block-size rule, block median,
 * interquartile range and throughput. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/stats.h"

#define FAIL(err, code, ...) (ts_error_set((err), (code), __VA_ARGS__), (code))

static const char durations_message[] =
    "Timing must produce positive finite durations.";
static const char throughput_message[] =
    "Throughput must be positive and finite; adjust work_units.";

bool
ts_autorange_next(int64_t number, double seconds, double target, int64_t *next)
{
    double factor = 10.0;
    double grown;
    if (number >= TS_AUTORANGE_MAX_NUMBER
        || (seconds >= target && number > 0)) {
        *next = number;
        return true;
    }
    if (number < 1) {
        number = 1;
    }
    if (isfinite(seconds) && seconds > 0.0 && isfinite(target)) {
        /* Aim a quarter past the target so that noise rarely costs one more
         * calibration block. */
        factor = target / seconds * 1.25;
        factor = factor < 2.0 ? 2.0 : factor > 10.0 ? 10.0 : factor;
    }
    grown = ceil((double)number * factor);
    *next = grown >= (double)TS_AUTORANGE_MAX_NUMBER ? TS_AUTORANGE_MAX_NUMBER
                                                     : (int64_t)grown;
    return false;
}

double
ts_quantile_sorted(const double *sorted, size_t n, double q)
{
    double position;
    size_t lo;
    size_t hi;
    if (n == 0) {
        return NAN;
    }
    position = q * (double)(n - 1);
    lo = (size_t)floor(position);
    hi = (size_t)ceil(position);
    if (hi >= n) {
        hi = n - 1;
    }
    if (lo >= n) {
        lo = n - 1;
    }
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (position - (double)lo);
}

static int
compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

int
ts_timing_summarize(const double *blocks,
                    size_t n,
                    int64_t number,
                    double work_units,
                    ts_timing_summary *out,
                    ts_error *err)
{
    double *per_call = NULL;
    double total = 0.0;
    double seconds_per_call;
    int64_t calls;
    int rc = TS_OK;
    if (blocks == NULL || out == NULL || n == 0 || number < 1) {
        return FAIL(err, TS_EINVAL, "timing needs at least one block");
    }
    if (n > (size_t)INT64_MAX || !ts_mul(number, (int64_t)n, &calls)) {
        return FAIL(err, TS_EOVERFLOW, "measured call count overflows");
    }
    per_call = malloc(n * sizeof *per_call);
    if (per_call == NULL) {
        return FAIL(err, TS_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(blocks[i]) || blocks[i] <= 0.0) {
            rc = FAIL(err, TS_EMEASURE, "%s", durations_message);
            goto cleanup;
        }
        per_call[i] = blocks[i] / (double)number;
        total += blocks[i];
    }
    qsort(per_call, n, sizeof *per_call, compare_doubles);
    seconds_per_call = total / (double)calls;
    out->median = ts_quantile_sorted(per_call, n, 0.5);
    out->p25 = ts_quantile_sorted(per_call, n, 0.25);
    out->p75 = ts_quantile_sorted(per_call, n, 0.75);
    out->iqr = out->p75 - out->p25;
    out->total_seconds = total;
    out->measured_calls = calls;
    out->throughput = work_units / seconds_per_call;
    if (!isfinite(total) || !(seconds_per_call > 0.0) || !isfinite(out->median)
        || !(out->median > 0.0)) {
        rc = FAIL(err, TS_EMEASURE, "%s", durations_message);
        goto cleanup;
    }
    if (!isfinite(out->throughput) || !(out->throughput > 0.0)) {
        rc = FAIL(err, TS_EMEASURE, "%s", throughput_message);
        goto cleanup;
    }
cleanup:
    free(per_call);
    return rc;
}

/* Sets obj[key] = a new MetricResult; false on allocation failure. */
static bool
set_metric(json_t *obj,
           const char *key,
           double value,
           const char *unit,
           const char *scope,
           const char *method)
{
    json_t *metric =
        ts_metric_new(TS_COMPLETE, ts_real(value), unit, scope, method);
    return metric != NULL && json_object_set_new(obj, key, metric) == 0;
}

json_t *
ts_timing_report(double first_call_seconds,
                 const double *blocks,
                 size_t n,
                 int64_t number,
                 double work_units,
                 const char *work_unit,
                 ts_error *err)
{
    ts_timing_summary summary;
    json_t *result = NULL;
    json_t *report = NULL;
    json_t *totals = NULL;
    json_t *measurement = NULL;
    json_t *raw = NULL;
    char *throughput_unit = NULL;
    size_t unit_len;
    if (work_unit == NULL) {
        ts_error_set(err, TS_EINVAL, "work_unit is required");
        goto cleanup;
    }
    if (!isfinite(first_call_seconds) || first_call_seconds <= 0.0) {
        ts_error_set(err, TS_EMEASURE, "%s", durations_message);
        goto cleanup;
    }
    if (ts_timing_summarize(blocks, n, number, work_units, &summary, err)
        != TS_OK) {
        goto cleanup;
    }
    unit_len = strlen(work_unit);
    throughput_unit = malloc(unit_len + 3);
    report = json_object();
    totals = json_object();
    measurement = json_object();
    raw = json_array();
    if (throughput_unit == NULL || report == NULL || totals == NULL
        || measurement == NULL || raw == NULL) {
        goto nomem;
    }
    memcpy(throughput_unit, work_unit, unit_len);
    memcpy(throughput_unit + unit_len, "/s", 3);
    if (!set_metric(totals,
                    "first_call_latency",
                    first_call_seconds,
                    "seconds",
                    "first_call",
                    TS_FIRST_CALL_METHOD)
        || !set_metric(totals,
                       "latency",
                       summary.median,
                       "seconds",
                       "warmed_block_average",
                       TS_TIMER_METHOD)
        || !set_metric(totals,
                       "latency_iqr",
                       summary.iqr,
                       "seconds",
                       "warmed_block_average",
                       TS_TIMER_METHOD)
        || !set_metric(totals,
                       "throughput",
                       summary.throughput,
                       throughput_unit,
                       "warmed_blocks",
                       TS_TIMER_METHOD)) {
        goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        if (json_array_append_new(raw, json_real(blocks[i])) != 0) {
            goto nomem;
        }
    }
    if (json_object_set_new(
            measurement, "number_per_run", json_integer(number))
        || json_object_set(measurement, "raw_times_seconds", raw)
        || json_object_set_new(measurement,
                               "measured_calls",
                               json_integer(summary.measured_calls))
        || json_object_set(report, "totals", totals)
        || json_object_set(report, "measurement", measurement)) {
        goto nomem;
    }
    result = report;
    report = NULL;
    goto cleanup;
nomem:
    ts_error_set(err, TS_ENOMEM, "out of memory");
cleanup:
    json_decref(report);
    json_decref(totals);
    json_decref(measurement);
    json_decref(raw);
    free(throughput_unit);
    return result;
}
