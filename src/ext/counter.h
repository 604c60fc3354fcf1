/* counter.c: the operator counter, the C body of a TorchDispatchMode
 * subclass (Python type Counter; torchscan.flops._OperatorCounter derives
 * from it). Which operator a call is, and its arguments: op_resolve.h. */
#ifndef TSX_COUNTER_H
#define TSX_COUNTER_H

#include "callbacks.h"
#include "torchscan/op_formulas.h"
#include "torchscan/session.h"

extern PyType_Spec tsx_counter_spec;

/* Suspends counting (handler estimates run inside the forward; their
 * tensor work is not the model's). `counter` may be NULL or None. */
void tsx_counter_pause(PyObject *counter, bool paused);
/* Attributes the operators `counter` counts to the layer calls of
 * `session` (NULL: detaches), keeping `owner` (the object that owns the
 * session, a Crawl) alive meanwhile; first records, in the session they
 * ran in, the calls its attention matcher held back. 0, or -1 with
 * TypeError when `counter` is not a Counter, or with MemoryError when
 * recording them ran out of memory (the counter is attached or detached
 * all the same). This is the crawl's C interface to the counter: no Python
 * method is called. */
int tsx_counter_attach(tsx_state *st,
                       PyObject *counter,
                       ts_session *session,
                       PyObject *owner);
/* The FlopReport of a Counter as a JSON tree (new reference), or NULL
 * with an exception. */
json_t *tsx_counter_flop_report(PyObject *counter, const char *torch_version);

#endif
