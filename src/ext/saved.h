/* saved.c: the bytes a forward saves for backward, measured on real
 * tensors with PyTorch's saved-tensor hooks (crawl_module's
 * saved_activations=True). The pack hook reads the storage of each tensor
 * autograd saves and feeds the engine's accumulator (saved_bytes.h: the
 * storage dedupe, the exclusion of parameters and buffers, the per-layer
 * sums) with the innermost layer call; the unpack hook gives the tensor back
 * unchanged.
 *
 * The pack hook returns the tensor detached (the same storage, no autograd
 * history) and the unpack hook gives it back unchanged: PyTorch's
 * SavedVariable wraps what unpack returns with the saved grad_fn and
 * requires_grad (as torch.autograd.graph.save_on_cpu does). Returning the
 * tensor itself would leak a tensor saved as an output of its own operator
 * (ReLU saves its result): it would hold, through its autograd node, a
 * strong reference to itself that Python's collector cannot see. Detached,
 * nothing is kept by the run, and a graph that outlives the crawl can still
 * be backpropagated (double backward included).
 *
 * Reusable pieces: tsx_saved_measure measures one real tensor into any
 * accumulator (a memory simulator running on real tensors calls it with its
 * own layer numbering); a simulator on fake or meta storages calls the
 * engine's ts_saved_add directly with its own storage identities. */
#ifndef TSX_SAVED_H
#define TSX_SAVED_H

#include "state.h"
#include "torchscan/session.h"

/* The diagnostic code of a saved tensor whose storage cannot be read. */
#define TSX_SAVED_UNMEASURED "unmeasured_saved_tensor"

/* One crawl's pack hook: the accumulator it feeds (the session's) and the
 * session whose innermost call it attributes to. Zeroed is closed. */
typedef struct tsx_saved_run {
    ts_session *session; /* borrowed; NULL: closed */
    ts_saved *acc;       /* the session's accumulator; NULL: closed */
    PyObject *counter;   /* borrowed: the operator counter attached, paused
                            while the hook detaches; NULL: none */
} tsx_saved_run;

/* The identity and size of a tensor's storage: the address of its
 * StorageImpl (`untyped_storage()._cdata`) and its `nbytes()`. 1 when read,
 * 0 when the tensor has no readable storage (sparse, a wrapper subclass:
 * *why is a new reference to the exception, for a diagnostic), -1 with an
 * exception for an interrupt (a BaseException that is not an Exception) or
 * a broken value. */
int tsx_saved_storage(tsx_state *st,
                      PyObject *tensor,
                      uint64_t *storage,
                      int64_t *nbytes,
                      PyObject **why);

/* Excludes the storages of `module`'s parameters and buffers
 * (module.parameters() and module.buffers(): the whole tree) from `acc`.
 * Tensors without a readable storage are skipped. 0, or -1 with an
 * exception. */
int tsx_saved_exclude_module(tsx_state *st, ts_saved *acc, PyObject *module);

/* Measures one tensor saved while `layer` was the innermost call into
 * `acc`: its storage counted once (ts_saved_add), or an unmeasured tensor;
 * for the first unmeasured tensor of a layer, an unmeasured_saved_tensor
 * diagnostic goes to `diagnostics` (may be NULL). 0, or -1 with an
 * exception (an interrupt, an engine status). */
int tsx_saved_measure(tsx_state *st,
                      ts_saved *acc,
                      ts_session *diagnostics,
                      PyObject *tensor,
                      int layer);

/* Opens a run on `session`, whose accumulator (ts_session_enable_saved)
 * it feeds; `counter` (borrowed, may be NULL: kept alive by the caller
 * while the run is open) is paused while the pack hook detaches, so that
 * the hook's own aten.detach is not counted as the model's. */
void tsx_saved_open(tsx_saved_run *run,
                    ts_session *session,
                    PyObject *counter);

/* The pack hook's body: measures `tensor` for the session's innermost call
 * and returns it detached (new reference), or NULL with an exception
 * (RuntimeError for a closed run: no crawl is installed). */
PyObject *tsx_saved_pack(tsx_state *st, tsx_saved_run *run, PyObject *tensor);

/* The unpack hook's body: `packed` itself (new reference). */
PyObject *tsx_saved_unpack(PyObject *packed);

/* Closes the run: the pack hook measures nothing more. */
void tsx_saved_release(tsx_saved_run *run);

#endif
