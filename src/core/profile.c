/* Sorting and limiting the operator rows of a profile. */
#include <math.h>
#include <stdlib.h>

#include "torchscan/profile.h"

#define FAIL(err, code, ...) (ts_error_set((err), (code), __VA_ARGS__), (code))

static double
row_key(const ts_profile_row *row, bool device)
{
    if (!device) {
        return row->cpu_self_seconds;
    }
    return row->has_device_time ? row->device_self_seconds : 0.0;
}

static int
compare_cpu(const void *a, const void *b)
{
    const ts_profile_row *x = a;
    const ts_profile_row *y = b;
    double kx = row_key(x, false);
    double ky = row_key(y, false);
    if (kx != ky) {
        return kx > ky ? -1 : 1;
    }
    return (x->order > y->order) - (x->order < y->order);
}

static int
compare_device(const void *a, const void *b)
{
    const ts_profile_row *x = a;
    const ts_profile_row *y = b;
    double kx = row_key(x, true);
    double ky = row_key(y, true);
    if (kx != ky) {
        return kx > ky ? -1 : 1;
    }
    return (x->order > y->order) - (x->order < y->order);
}

static json_t *
row_json(const ts_profile_row *row, bool device)
{
    json_t *obj = json_object();
    json_t *shapes = row->input_shapes != NULL
                         ? json_deep_copy(row->input_shapes)
                         : json_array();
    json_t *device_time = device && row->has_device_time
                              ? json_real(row->device_self_seconds)
                              : json_null();
    if (obj == NULL || shapes == NULL || device_time == NULL
        || json_object_set_new(obj, "operator", json_string(row->op))
        || json_object_set_new(obj, "calls", json_integer(row->calls))
        || json_object_set(obj, "input_shapes", shapes)
        || json_object_set_new(
            obj, "cpu_self_seconds", json_real(row->cpu_self_seconds))
        || json_object_set(obj, "device_self_seconds", device_time)
        || json_object_set_new(
            obj, "cpu_net_bytes", json_integer(row->cpu_net_bytes))) {
        json_decref(obj);
        obj = NULL;
    }
    json_decref(shapes);
    json_decref(device_time);
    return obj;
}

json_t *
ts_profile_rows(ts_profile_row *rows,
                size_t n,
                size_t limit,
                bool device_time_supported,
                ts_error *err)
{
    json_t *result = NULL;
    json_t *out = NULL;
    size_t keep = n < limit ? n : limit;
    if (rows == NULL && n > 0) {
        ts_error_set(err, TS_EINVAL, "profile rows are missing");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(rows[i].cpu_self_seconds)
            || (rows[i].has_device_time
                && !isfinite(rows[i].device_self_seconds))) {
            ts_error_set(err, TS_EINVAL, "profile times must be finite");
            goto cleanup;
        }
        rows[i].order = i;
    }
    if (n > 1) {
        qsort(rows,
              n,
              sizeof *rows,
              device_time_supported ? compare_device : compare_cpu);
    }
    out = json_array();
    if (out == NULL) {
        goto nomem;
    }
    for (size_t i = 0; i < keep; i++) {
        if (json_array_append_new(out,
                                  row_json(&rows[i], device_time_supported))
            != 0) {
            goto nomem;
        }
    }
    result = out;
    out = NULL;
    goto cleanup;
nomem:
    ts_error_set(err, TS_ENOMEM, "out of memory");
cleanup:
    json_decref(out);
    return result;
}
