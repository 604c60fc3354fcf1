/* memory_report.c: the MemoryReport of estimate_memory (mem_sim.h) around
 * the simulation's own object: statuses, diagnostics, context and the
 * saved activations measured beside it. */
#include "torchscan/core.h"
#include "torchscan/mem_sim.h"

#include <stdio.h>

#define METHOD "torchscan_memory_simulation"
#define SCOPE                                                     \
    "a model of tensor storage bytes from the operators PyTorch " \
    "dispatched; not a measured peak (no allocator rounding, "    \
    "fragmentation, kernel workspaces or communication buffers)"

static const char *const peak_metric[2] = {"peak_bytes",
                                           "resident_peak_bytes"};
/* what each total covers: storages the dispatcher shows, never an
 * allocator's reading */
static const char *const peak_scope[2] = {"simulated_workload_tensor_bytes",
                                          "simulated_resident_tensor_bytes"};

static int
diagnose(json_t *diagnostics,
         const char *code,
         const char *metric,
         const char *message)
{
    return json_array_append_new(diagnostics,
                                 json_pack("{s:s, s:s, s:s, s:s}",
                                           "code",
                                           code,
                                           "severity",
                                           "warning",
                                           "metric",
                                           metric,
                                           "message",
                                           message));
}

/* totals.peak_bytes and resident_peak_bytes (taken out of `sim`), with
 * their diagnostics. 0, or -1 on allocation failure. */
static int
peak_totals(json_t *sim,
            int64_t unobserved,
            json_t *totals,
            json_t *diagnostics)
{
    json_int_t operators =
        json_integer_value(json_object_get(sim, "operators"));
    ts_status status = operators == 0   ? TS_UNAVAILABLE
                       : unobserved > 0 ? TS_PARTIAL
                                        : TS_COMPLETE;
    char message[160];
    snprintf(message,
             sizeof message,
             "%lld tensor(s) had no readable storage (sparse, nested or "
             "subclass tensors); their bytes are not counted",
             (long long)unobserved);
    for (int i = 0; i < 2; i++) {
        json_int_t bytes =
            json_integer_value(json_object_get(sim, peak_metric[i]));
        if (json_object_set_new(
                totals,
                peak_metric[i],
                ts_metric_new(
                    status, ts_int(bytes), "bytes", peak_scope[i], METHOD))
                != 0
            || json_object_del(sim, peak_metric[i]) != 0) {
            return -1;
        }
        if (status == TS_UNAVAILABLE
            && diagnose(diagnostics,
                        "measurement_unavailable",
                        peak_metric[i],
                        "no operator ran under the simulator (nothing was "
                        "dispatched in this thread)")
                   != 0) {
            return -1;
        }
        if (status == TS_PARTIAL
            && diagnose(
                   diagnostics, "unobserved_storage", peak_metric[i], message)
                   != 0) {
            return -1;
        }
    }
    return 0;
}

/* totals.saved_activation_bytes and layers from `saved` ({layers,
 * total}). */
static int
saved_totals(json_t *report,
             const json_t *saved,
             json_t *totals,
             json_t *diagnostics)
{
    json_t *total = json_object_get(saved, "total");
    if (json_object_set(totals, "saved_activation_bytes", total) != 0
        || json_object_set(report, "layers", json_object_get(saved, "layers"))
               != 0) {
        return -1;
    }
    if (ts_metric_status(total) == TS_PARTIAL
        && diagnose(diagnostics,
                    "unmeasured_saved_tensor",
                    "saved_activation_bytes",
                    "a tensor autograd saved has no readable storage: its "
                    "bytes are not counted, saved_activation_bytes is a "
                    "lower bound")
               != 0) {
        return -1;
    }
    return 0;
}

json_t *
ts_memory_report(const ts_memsim *sim,
                 bool timeline,
                 ts_memsim_layer_fn layer_fn,
                 void *layer_ctx,
                 const ts_memory_report_info *info)
{
    json_t *body = ts_memsim_report(sim, timeline, layer_fn, layer_ctx);
    json_t *totals = json_object(), *diagnostics = json_array();
    json_t *report = json_pack("{s:i, s:{s:s, s:s, s:s, s:s}}",
                               "schema_version",
                               1,
                               "context",
                               "torch_version",
                               info->torch_version,
                               "method",
                               METHOD,
                               "scope",
                               SCOPE,
                               "attention",
                               info->attention);
    if (body == NULL || totals == NULL || diagnostics == NULL || report == NULL
        || json_object_set_new(
               body, "unobserved", json_integer((json_int_t)info->unobserved))
               != 0
        || peak_totals(body, info->unobserved, totals, diagnostics) != 0
        || json_object_set(report, "totals", totals) != 0
        || json_object_set(report, "diagnostics", diagnostics) != 0
        || (info->saved != NULL
            && saved_totals(report, info->saved, totals, diagnostics) != 0)
        || json_object_update(report, body) != 0) {
        json_decref(report);
        report = NULL;
    }
    json_decref(body);
    json_decref(totals);
    json_decref(diagnostics);
    json_decref(info->saved);
    return report;
}
