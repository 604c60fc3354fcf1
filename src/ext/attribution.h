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

/* Adds the tensors of a module's own dict (`tensors`: its _parameters or
 * _buffers, or another iterable) to an attribution; `seen` holds every
 * tensor attributed so far, `once` (or NULL) those of this subtree. */
int tsx_attribute_tensors(tsx_state *st,
                          tsx_ptrset *seen,
                          PyObject *tensors,
                          bool params,
                          ts_attribution *a,
                          tsx_ptrset *once);
/* Adds the parameters (pass 0) or buffers (pass 1) of a module's subtree,
 * each tensor once, to an attribution. */
int tsx_attribute_subtree(tsx_state *st,
                          tsx_ptrset *seen,
                          PyObject *module,
                          int pass,
                          tsx_ptrset *modules,
                          tsx_ptrset *tensors,
                          ts_attribution *a);
/* Model totals over unique parameters and buffers (every module's own
 * _parameters, then every module's own _buffers, in module order: what
 * parameters()/buffers() yield), and the devices and dtypes (sets of str)
 * they live on. 0, or -1 with an exception. */
int tsx_model_totals(tsx_state *st,
                     PyObject *root,
                     ts_model_totals *t,
                     PyObject *devices,
                     PyObject *dtypes);

#endif
