/* memsim.c: the memory simulator's side of the operator counter
 * (estimate_memory). It turns what the dispatcher shows into the core's
 * storage events (mem_sim.h): an operator's output tensors' untyped
 * storages (keyed by the storage object's address: views share their
 * base's object, in-place ops return a known one), input storages not seen
 * before as existing (resident from the start), and a free when a
 * storage's last reference goes: a weak reference to the storage object
 * whose callback is the counter's _storage_freed (PyTorch keeps a
 * storage's Python object alive while the storage lives, so the callback
 * runs exactly when the storage is freed; MemTracker relies on the same).
 * It names parameters, gradients and optimizer state from the modules and
 * optimizers it is shown. */
#ifndef TSX_MEMSIM_H
#define TSX_MEMSIM_H

#include "state.h"
#include "torchscan/mem_sim.h"
#include "torchscan/session.h"

typedef struct tsx_memsim tsx_memsim;

/* A new simulation whose weak references call `callback` (strong; a bound
 * method of the counter) with the dead weak reference. NULL with an
 * exception. */
tsx_memsim *tsx_memsim_new(tsx_state *st, PyObject *callback);
/* Drops the weak references (no callback runs afterwards) and frees it. */
void tsx_memsim_free(tsx_memsim *m);
int tsx_memsim_traverse(tsx_memsim *m, visitproc visit, void *arg);

/* One operator ran: `name` the overload ("aten.mm.default"), its phase and
 * layer (-1 none); input storages not seen before are existing, output
 * storages not seen before are allocated by it. 0, or -1 with an
 * exception. */
int tsx_memsim_op(tsx_memsim *m,
                  const char *name,
                  ts_phase phase,
                  int layer,
                  PyObject *args,
                  PyObject *kwargs,
                  PyObject *out);

/* The weak reference `ref` died: its storage was freed. 0, or -1 with an
 * exception. */
int tsx_memsim_freed(tsx_memsim *m, PyObject *ref);

/* Names the storages of `root`'s parameters (recursively, as
 * root.parameters()) and their gradients, when root is an nn.Module. 0 or
 * -1 with an exception. */
int tsx_memsim_name_module(tsx_memsim *m, PyObject *root);
/* Names an optimizer's parameters, their gradients and its state tensors
 * (optimizer.param_groups, optimizer.state). 0 or -1 with an exception. */
int tsx_memsim_name_optimizer(tsx_memsim *m, PyObject *optimizer);

/* The MemoryReport (ts_memory_report) with layers named by `session`
 * (NULL: numbers only) and, when its crawl measured saved activations,
 * their totals and layer rows. New reference or NULL with an exception. */
json_t *tsx_memsim_report(tsx_memsim *m,
                          ts_session *session,
                          bool timeline,
                          const char *attention,
                          const char *torch_version);

#endif
