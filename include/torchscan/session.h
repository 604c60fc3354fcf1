/* A crawl session: the module table and one record per module call (layer),
 * fed by the binding's hooks and dispatch mode (session.c), and the
 * AnalysisReport written from them (session_report.c). Module formulas,
 * attribution, estimate ownership, aggregation and report assembly happen
 * here. The crawl's operator counter keeps its statistics in opstats.h
 * (included: the report embeds their FlopReport).
 */
#ifndef TORCHSCAN_SESSION_H
#define TORCHSCAN_SESSION_H

#include "torchscan/core.h"
#include "torchscan/module_formulas.h"
#include "torchscan/module_match.h"
#include "torchscan/phase.h"
#include "torchscan/saved_bytes.h"
#include "torchscan/op_formulas.h"
#include "torchscan/opstats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- recording (session.c) --------------------------------------------- */

typedef struct ts_session ts_session;

/* A new, empty session owned by the caller; NULL on allocation failure.
 * full: compute module formulas (full mode) or only structure. */
ts_session *ts_session_new(bool full);

/* Frees the session with every record, text and metadata tree it owns
 * (NULL is a no-op). */
void ts_session_free(ts_session *session);

/* Adds a module; `path` and `type_name` are copied. `metric_leaf` selects the
 * modules whose formulas run. Returns the module index or a negative
 * status. */
int ts_session_add_module(ts_session *session,
                          const char *path,
                          const char *type_name,
                          const ts_module_desc *desc,
                          bool metric_leaf);

/* Modules added so far. */
size_t ts_session_module_count(const ts_session *session);

/* A module's description, borrowed from the session: valid until the next
 * ts_session_add_module. `module` must be an index that call returned. */
const ts_module_desc *ts_session_module_desc(const ts_session *session,
                                             int module);

/* Whether the module was added as a metric leaf (`module` as above). */
bool ts_session_module_is_leaf(const ts_session *session, int module);

/* Marks a module as estimated by a custom handler: a failed call of it
 * gets its uncovered estimates as unavailable (forward_failed). */
void ts_session_set_module_handler(ts_session *session,
                                   int module,
                                   bool handler);

/* Marks a module as matchable: a model library's class without a formula
 * of its own, whose calls record the operators they run
 * (ts_session_record_op) and take the estimates of the signature those
 * operators match (module_match.h; a leaf that matches none stays
 * unsupported). */
void ts_session_set_module_matchable(ts_session *session,
                                     int module,
                                     bool matchable);

/* Replaces a module's type name (copied; NULL keeps it) and description: a
 * lazy module becomes its concrete class, with its real sizes, in its first
 * call; a module switched to training gets the training formulas.
 * Returns TS_OK or TS_ENOMEM/TS_EINVAL. */
int ts_session_update_module(ts_session *session,
                             int module,
                             const char *type_name,
                             const ts_module_desc *desc);

/* Parameter/buffer attribution of one call (counted by the binding: tensors
 * seen for the first time in execution order). */
typedef struct ts_attribution {
    int64_t trainable, frozen, param_bytes;
    int64_t buffer_elements, buffer_bytes;
    bool param_shared, buffer_shared;
    /* The part this rank holds of sharded tensors (a DTensor's local shard,
     * FSDP2's shard of a parameter it unsharded for the call), all of any
     * other tensor; written as local_elements/local_bytes when the model
     * totals say `local` (inside a torch.distributed process group). */
    int64_t local_params, local_param_bytes;
    int64_t local_buffer_elements, local_buffer_bytes;
} ts_attribution;

/* Opens a call of `module`: appends a layer record (pre-hook order) and
 * makes it the innermost active call. `input` (stolen) is the
 * {"args": [...], "kwargs": {...}} metadata. Returns the layer index or a
 * negative status. */
int ts_session_begin_call(ts_session *session,
                          int module,
                          json_t *input,
                          const ts_attribution *attribution);

/* The six module estimates as bits, in report order: module_flops, macs,
 * dmas, receptive_field, effective_stride, effective_padding. */
#define TS_ALL_ESTIMATES 0x3Fu

/* As ts_session_begin_call, for a call whose handler owns the estimates in
 * `owns` (bits) for its whole subtree: calls it encloses are covered for
 * them (the outermost owner wins) and get metric_owners entries. */
int ts_session_begin_owned_call(ts_session *session,
                                int module,
                                json_t *input,
                                const ts_attribution *attribution,
                                unsigned owns);

/* Estimates (bits) an enclosing owner covers for this layer. */
unsigned ts_session_layer_covered(const ts_session *session, int layer);

/* Whether ending this open call will record token dependencies (full mode,
 * a native attention or Transformer metric leaf whose receptive field the
 * built-in estimates answer: no enclosing owner covers it and no handler
 * supplied it). The binding then reads the call's masks into
 * ts_module_call.tokens (token_deps.h). */
bool ts_session_layer_wants_tokens(const ts_session *session, int layer);

/* Stores a handler-supplied estimate `which` (0-5) on a layer: the layer's
 * metric_ownership gets it; `method` is copied; `subtree` selects scope
 * "subtree" (else "module_call"). Formulas do not replace it. */
int ts_session_set_estimate(ts_session *session,
                            int layer,
                            int which,
                            ts_status status,
                            ts_number value,
                            bool subtree,
                            const char *method);

/* An nn.Transformer root that a caller handler expanded (it matched a
 * descendant that ran): module_flops, macs and dmas become unavailable
 * (method and diagnostic expanded_atomic_boundary). */
int ts_session_mark_expanded_boundary(ts_session *session, int layer);

/* Makes the open call `layer` own `mask` for its whole subtree after the
 * fact: the estimates its descendants recorded for those bits are dropped
 * and they get metric_owners (with the receptive field, their token
 * dependencies and those dependencies' diagnostics go too). Bits the layer
 * already holds an estimate for (a handler supplied it for the call alone) or
 * that an enclosing owner covers are left out. Call before the layer's own
 * end_call. */
int ts_session_own_retroactively(ts_session *session,
                                 int layer,
                                 unsigned mask);

/* Appends a diagnostic {code, severity "warning", metric, path, message};
 * path is the layer's module path (none when layer < 0). */
int ts_session_add_diagnostic(ts_session *session,
                              const char *code,
                              const char *metric,
                              int layer,
                              const char *message);

/* Asks for the bytes saved for backward per layer call: the session owns
 * an accumulator (saved_bytes.h) whose layers are this session's layer
 * indices, and the report gets LayerReport.metrics.saved_activation_bytes
 * and totals.saved_activation_bytes. TS_OK or TS_ENOMEM. */
int ts_session_enable_saved(ts_session *session);

/* That accumulator (borrowed, owned by the session), NULL when not asked
 * for. The binding feeds it with ts_session_current_layer(). */
ts_saved *ts_session_saved(ts_session *session);

/* Innermost active layer (-1 when none). Operator flops are attributed to
 * it. */
int ts_session_current_layer(const ts_session *session);

/* The module path and call index of layer record `layer` (borrowed, valid
 * while the session lives): 0, or -1 for no such record. */
int ts_session_layer_identity(const ts_session *session,
                              int layer,
                              const char **path,
                              int32_t *call_index);

/* Layer records so far (the index the next call will get). */
size_t ts_session_layer_count(const ts_session *session);

/* Closes the innermost active call of `module`. `output` (stolen) is the
 * output metadata; failed marks a forward that raised (its output becomes
 * {"kind": "failed"} and a module_forward_error diagnostic is emitted).
 * `call` (may be NULL when the call exposed no input/output tensor) feeds
 * the module formulas of metric leaves in full mode, and the token
 * dependencies of native attention and Transformer rows (see
 * ts_session_layer_wants_tokens; a failed call's are unavailable without a
 * diagnostic of their own). Returns the layer index or a negative status
 * (TS_EINVAL when `module` is not the innermost active call). */
int ts_session_end_call(ts_session *session,
                        int module,
                        json_t *output,
                        bool failed,
                        const ts_module_call *call);

/* Attributes one operator call to a layer record (the call's own work, its
 * child module calls excluded): `flops` are added; `complete` false marks
 * the layer's operator FLOPs as a lower bound (an uncounted or refused
 * operator ran in it). Ignored when layer < 0. */
void ts_session_add_layer_op(ts_session *session,
                             int layer,
                             int64_t flops,
                             bool complete);

/* The phases of a training step (phase.h). `clock` (NULL: none) returns
 * the autograd engine's next sequence number; with one, the session marks
 * it now and whenever the innermost call changes (a call begins or ends),
 * so that ts_session_layer_of_seq can name the layer call whose forward
 * created an autograd node. `ctx` is passed to it, borrowed. */
void ts_session_set_clock(ts_session *session,
                          uint64_t (*clock)(void *ctx),
                          void *ctx);

/* The layer whose call created the autograd node of sequence number `seq`
 * (its innermost open call then), or -1: created outside every call, an
 * AccumulateGrad node (TS_PHASE_NO_SEQ), or no clock was set. */
int ts_session_layer_of_seq(const ts_session *session, uint64_t seq);

/* Attributes one operator call of phase `phase` to a layer record: the
 * per-phase counterpart of ts_session_add_layer_op (which the binding
 * still calls for the innermost call; LayerReport.operator_flops and
 * FlopReport.by_module keep their meaning). Backward operators go to the
 * layer call whose forward created their node. Ignored when layer < 0. */
void ts_session_add_phase_op(ts_session *session,
                             int layer,
                             ts_phase phase,
                             int64_t flops,
                             bool complete);

/* {phase name: {by_module: {path: FLOPs of that phase summed over the
 * module's calls}, layers: [{path, call_index, operator_flops}]}} for the
 * three phases: every layer call in call order, its operator_flops a
 * MetricResult (FLOPs, scope module_call_self, torchscan_dispatch_counter;
 * partial when an operator of that phase in it was not counted). New
 * reference, NULL on allocation failure. */
json_t *ts_session_phase_layers(const ts_session *session);

/* {layers: [{path, call_index, saved_activation_bytes}], total} of a
 * session with saved-tensor bytes enabled (ts_session_enable_saved): every
 * layer call in call order, its saved_activation_bytes the MetricResult of
 * the AnalysisReport's rows (bytes, module_call_self, saved-tensor hooks;
 * partial when a tensor saved in it was unmeasured), total the same
 * metric over the whole run with scope `scope`. New reference; NULL on
 * allocation failure or when saved bytes are not enabled. */
json_t *ts_session_saved_layers(const ts_session *session, const char *scope);

/* Whether the innermost active call records its operators (full mode, a
 * matchable module): the binding then describes each operator for
 * ts_session_record_op. */
bool ts_session_wants_ops(const ts_session *session);

/* Appends an operator the innermost active call ran (copied; its layer is
 * set here). Returns TS_OK or TS_ENOMEM. */
int ts_session_record_op(ts_session *session, const ts_match_op *op);

/* ---- the AnalysisReport (session_report.c) ------------------------------ */

/* {path: operator FLOPs} of every module that was called: the operators
 * its calls ran themselves (children excluded), summed over its calls,
 * sorted by path. New reference, NULL on allocation failure. */
json_t *ts_session_op_flops_by_path(const ts_session *session);

/* Model-level facts gathered by the binding after the forward. */
typedef struct ts_model_totals {
    int64_t trainable, frozen, param_bytes, buffer_elements, buffer_bytes;
    /* local: the report records what this rank holds (rows' local_elements
     * and local_bytes, totals' local_parameters, local_parameter_bytes,
     * local_buffer_elements, local_buffer_bytes), with these sums */
    bool local;
    int64_t local_params, local_param_bytes;
    int64_t local_buffer_elements, local_buffer_bytes;
} ts_model_totals;

/* Assembles the AnalysisReport. `context` and `inputs` are stolen (context
 * gets analysis_mode in structure mode); `flop_report` is stolen (a
 * FlopReport, or NULL in structure mode for the not_requested stub).
 * Returns a new reference or NULL with err set. */
json_t *ts_session_report(ts_session *session,
                          json_t *context,
                          json_t *inputs,
                          const ts_model_totals *totals,
                          json_t *flop_report,
                          const char *torch_version,
                          ts_error *err);

/* Writes the AnalysisReport through an emitter (everything borrowed).
 * `flop_report` is a FlopReport (the not_requested stub in structure
 * mode). Returns 0, or -1 when the emitter failed. */
struct ts_emitter;
int ts_session_emit_report(const ts_session *session,
                           const struct ts_emitter *emitter,
                           const json_t *context,
                           const json_t *inputs,
                           const ts_model_totals *totals,
                           const json_t *flop_report);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_SESSION_H */
