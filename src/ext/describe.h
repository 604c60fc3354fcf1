/* describe.c: metadata of Python values (contract 1.1): tensors' shapes,
 * dtypes and devices, and the structure of containers, never values. */
#ifndef TSX_DESCRIBE_H
#define TSX_DESCRIBE_H

#include "convert.h"

const tsx_dtype *tsx_dtype_info(tsx_state *st, PyObject *dtype);
int tsx_is_tensor(tsx_state *st, PyObject *obj);
/* Metadata tree of a value (contract 1.1 privacy rules). When `first` is not
 * NULL and *found is false, the first tensor met fills *first. */
json_t *tsx_describe(tsx_state *st,
                     PyObject *value,
                     ts_shape *first,
                     bool *found);
/* {"args": [...], "kwargs": {...}}; kwargs may be NULL. */
json_t *tsx_describe_call(tsx_state *st,
                          PyObject *args,
                          PyObject *kwargs,
                          ts_shape *first,
                          bool *found);
/* Shape, dtype class and density of a tensor; -1 with an exception on
 * failure; 0 with shape->ndim = -1 when a dimension is symbolic. */
int tsx_tensor_shape(tsx_state *st, PyObject *tensor, ts_shape *shape);
/* operator.index(value), except that a SymInt gives its hint without adding
 * a guard (TypeError when it has none). New reference, or NULL with an
 * exception. */
PyObject *tsx_number_index(tsx_state *st, PyObject *value);
/* Frees the CPU tensor metadata cache (module teardown). */
void tsx_meta_cache_free(tsx_state *st);

#endif
