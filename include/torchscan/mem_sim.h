/* A model of tensor memory over one workload call (estimate_memory): the
 * storages the workload's operators create, how many bytes each holds, and
 * when each is freed, replayed as a sequence of events. Nothing is read
 * from an allocator: the binding (src/ext/memsim.c) tells the simulator
 * what PyTorch's dispatcher and the storages' lifetimes say.
 *
 *   alloc      an operator's output has a storage not seen before (views
 *              share their base's; in-place ops return a known one);
 *   resize     a known storage now holds another number of bytes;
 *   free       the last reference to a storage went;
 *   existing   a storage that existed before the call (parameters, the
 *              inputs): it is resident from the start until freed, and is
 *              never part of the workload's own bytes.
 *
 * peak_bytes: the largest sum of the bytes of storages the workload
 * allocated and still holds (the scope of measure_peak_memory on CPU:
 * bytes released that were allocated before the call do not lower it);
 * resident_peak_bytes: the largest sum of everything live, existing
 * storages included. Storages are keyed by a caller's 64-bit key (the
 * binding: the storage object's address), unique among live storages.
 *
 * Ownership: a ts_memsim is created by ts_memsim_new and freed by
 * ts_memsim_free; strings passed in are copied. */
#ifndef TORCHSCAN_MEM_SIM_H
#define TORCHSCAN_MEM_SIM_H

#include "torchscan/core.h"
#include "torchscan/phase.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a storage is. The binding names parameters, gradients and
 * optimizer state; the others follow from when a storage was allocated:
 * activation (forward), temporary (backward, optimizer), other (existing
 * before the call and not named: inputs, buffers), workspace (a kernel's
 * own buffer, ts_memsim_workspace). */
typedef enum {
    TS_MEM_UNSET = 0,
    TS_MEM_PARAMETER,
    TS_MEM_GRADIENT,
    TS_MEM_OPTIMIZER_STATE,
    TS_MEM_ACTIVATION,
    TS_MEM_TEMPORARY,
    TS_MEM_OTHER,
    TS_MEM_WORKSPACE,
} ts_mem_role;

#define TS_MEM_ROLE_COUNT 8

/* "parameter", "gradient", "optimizer_state", "activation", "temporary",
 * "other", "workspace"; NULL for TS_MEM_UNSET and any other value. */
const char *ts_mem_role_name(ts_mem_role role);

typedef struct ts_memsim ts_memsim;

/* A new, empty simulator, NULL when out of memory. */
ts_memsim *ts_memsim_new(void);
void ts_memsim_free(ts_memsim *sim);

/* Opens an operator: events until the next call belong to it. `name`
 * (copied, interned) is the aten overload ("aten.mm.default"), `layer`
 * the layer call it runs in (-1: none). TS_OK or TS_ENOMEM. */
int ts_memsim_op(ts_memsim *sim, const char *name, ts_phase phase, int layer);

/* Whether `key` is a live storage. */
bool ts_memsim_known(const ts_memsim *sim, uint64_t key);

/* Observes a storage of `bytes` bytes on `device` (copied, interned):
 * unknown -> allocated now by the current operator (existing: false) or
 * resident since before the call (existing: true, no event); known with
 * another size -> a resize event; known, same size -> nothing. TS_OK,
 * TS_EINVAL (negative bytes), TS_EOVERFLOW, TS_ENOMEM. */
int ts_memsim_observe(ts_memsim *sim,
                      uint64_t key,
                      int64_t bytes,
                      const char *device,
                      bool existing);

/* The current operator's kernel held a buffer of `bytes` on `device`
 * while it ran, beside its outputs (already observed), and freed it before
 * returning: an allocation and a free of a storage of its own, role
 * workspace. TS_OK, TS_EINVAL (negative bytes), TS_EOVERFLOW, TS_ENOMEM. */
int ts_memsim_workspace(ts_memsim *sim, int64_t bytes, const char *device);

/* The last reference to storage `key` went (an unknown key is ignored:
 * TS_OK). TS_OK or TS_ENOMEM. */
int ts_memsim_release(ts_memsim *sim, uint64_t key);

/* Names what the live storage `key` is (parameter, gradient, optimizer
 * state); a storage keeps the first name it is given. TS_OK, or
 * TS_EINVAL for an unknown key or a role the simulator infers itself. */
int ts_memsim_set_role(ts_memsim *sim, uint64_t key, ts_mem_role role);

/* Live bytes now: the workload's own (allocated during the call) and all
 * (existing storages included). */
int64_t ts_memsim_live_bytes(const ts_memsim *sim, bool resident);

/* Identity of a layer for the report: its path and call index; 0, or -1
 * when the layer is unknown (the report then holds null, as without a
 * function). */
typedef int (*ts_memsim_layer_fn)(void *ctx,
                                  int layer,
                                  const char **path,
                                  int32_t *call_index);

/* The simulation as a JSON object (new reference; NULL on allocation
 * failure):
 *   peak_bytes, resident_peak_bytes       integers
 *   peak, resident_peak                   {event, op_index, operator,
 *       phase, layer: {path, call_index} | null, bytes, resident_bytes,
 *       composition: {role: bytes live then}, allocated_composition:
 *       {role: bytes of the workload's own live then}, by_device}
 *       (null when no event happened)
 *   existing_bytes                        resident before the call
 *   allocated_bytes, freed_bytes, operators, storages, events
 *   phases: {phase: {operators, allocated_bytes, peak_bytes,
 *            resident_peak_bytes, resident_peak}} (peaks reached inside
 *            that phase; resident_peak as above, null when the phase had
 *            no event)
 *   timeline: [{op_index, operator, phase, layer, storage, role, device,
 *       delta, bytes, resident_bytes}] when `timeline`. */
json_t *ts_memsim_report(const ts_memsim *sim,
                         bool timeline,
                         ts_memsim_layer_fn layer_fn,
                         void *layer_ctx);

/* What a MemoryReport says besides the simulation (memory_report.c). */
typedef struct ts_memory_report_info {
    const char *torch_version;
    const char *attention; /* "as_run" or "fused" */
    int64_t unobserved;    /* tensors whose storage could not be read */
    /* {layers, total} of ts_session_saved_layers (saved-tensor hooks), or
     * NULL when activations were not measured; the report takes it over,
     * also on failure */
    json_t *saved;
} ts_memory_report_info;

/* The MemoryReport of estimate_memory (new reference; NULL on allocation
 * failure):
 *   schema_version 1, context {torch_version, method, scope, attention}
 *   totals: peak_bytes, resident_peak_bytes (MetricResults in bytes,
 *       method "torchscan_memory_simulation"): unavailable with a
 *       measurement_unavailable diagnostic each when no operator ran,
 *       partial with an unobserved_storage diagnostic each when a tensor's
 *       storage could not be read, complete otherwise; with `saved`, also
 *       saved_activation_bytes (its total; partial with an
 *       unmeasured_saved_tensor diagnostic) and layers (its rows)
 *   diagnostics
 *   and the members of ts_memsim_report but its two peak integers, plus
 *   unobserved. */
json_t *ts_memory_report(const ts_memsim *sim,
                         bool timeline,
                         ts_memsim_layer_fn layer_fn,
                         void *layer_ctx,
                         const ts_memory_report_info *info);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_MEM_SIM_H */
