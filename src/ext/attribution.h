/* attribution.c: parameters and buffers of layer calls, and model totals. */
#ifndef TSX_ATTRIBUTION_H
#define TSX_ATTRIBUTION_H

#include "module_family.h"
#include "torchscan/session.h"

/* A set of objects by address, holding strong references. */
typedef struct tsx_ptrset {
    PyObject **slots;
    size_t cap, size;
} tsx_ptrset;

/* Adds obj; returns 1 when added, 0 when present, -1 on memory error. */
int tsx_ptrset_add(tsx_ptrset *set, PyObject *obj);
void tsx_ptrset_clear(tsx_ptrset *set);

/* How the part of each tensor this rank holds is read (inside a
 * torch.distributed process group): a DTensor's local shard; for a
 * parameter FSDP2 gathered whole for a forward, the shard it keeps
 * (`shards`: {address of a module: {name: sharded DTensor}}, read from
 * FSDP2's state when the crawl is built). */
typedef struct tsx_local {
    bool on;           /* record local counts at all */
    PyObject *dtensor; /* the DTensor class (strong) or NULL */
    PyObject *shards;  /* FSDP2's shards (strong) or NULL */
} tsx_local;

/* Turns local counting on for the modules of a crawl (a list or tuple).
 * 0, or -1 with an exception (tsx_local_clear releases either way). */
int tsx_local_init(tsx_state *st, tsx_local *loc, PyObject *modules);
void tsx_local_clear(tsx_local *loc);
int tsx_local_traverse(tsx_local *loc, visitproc visit, void *arg);

/* Adds the tensors of a module's own dict (`tensors`: its _parameters or
 * _buffers, or another iterable) to an attribution; `seen` holds every
 * tensor attributed so far, `once` (or NULL) those of this subtree.
 * `loc` (or NULL) and `module` (whose dict it is) give the local counts. */
int tsx_attribute_tensors(tsx_state *st,
                          tsx_ptrset *seen,
                          PyObject *tensors,
                          bool params,
                          ts_attribution *a,
                          tsx_ptrset *once,
                          const tsx_local *loc,
                          PyObject *module);
/* Adds the parameters (pass 0) or buffers (pass 1) of a module's subtree,
 * each tensor once, to an attribution. */
int tsx_attribute_subtree(tsx_state *st,
                          tsx_ptrset *seen,
                          PyObject *module,
                          int pass,
                          tsx_ptrset *modules,
                          tsx_ptrset *tensors,
                          ts_attribution *a,
                          const tsx_local *loc);
/* Model totals over unique parameters and buffers (every module's own
 * _parameters, then every module's own _buffers, in module order: what
 * parameters()/buffers() yield), and the devices and dtypes (sets of str)
 * they live on; with `loc` on, the local sums too (t->local). 0, or -1
 * with an exception. */
int tsx_model_totals(tsx_state *st,
                     PyObject *root,
                     ts_model_totals *t,
                     PyObject *devices,
                     PyObject *dtypes,
                     const tsx_local *loc);

#endif
