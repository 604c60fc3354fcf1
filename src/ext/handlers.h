/* handlers.c: custom module handlers (crawl_module(custom_modules=...)):
 * matching a module's class to a handler and normalising what its estimate
 * returns into a layer's estimates and diagnostics (contract 1.10). The
 * estimate itself runs in callbacks.c. */
#ifndef TSX_HANDLERS_H
#define TSX_HANDLERS_H

#include "counter.h"
#include "torchscan/session.h"

/* The handler of the closest class in type's MRO: 1 with a new reference
 * in *handler, 0 when none, -1 on error. */
int tsx_handler_match(PyObject *handlers,
                      PyTypeObject *type,
                      PyObject **handler);
/* The subtree_metrics of a handler as estimate bits. */
int tsx_handler_owns(tsx_state *st, PyObject *handler, unsigned *owns);
/* "<module>.<qualname>" of a callback (new reference). */
PyObject *tsx_handler_identity(tsx_state *st, PyObject *estimate);

typedef struct tsx_handler_call {
    tsx_state *st;
    ts_session *session;
    int layer;
    unsigned requested; /* estimates not covered by an enclosing owner */
    unsigned owns;      /* the handler's subtree_metrics */
    PyObject *estimate, *identity, *module_call_cls;
    PyObject *counter; /* paused while the estimate runs; NULL/None: none */
    PyObject *module, *args, *kwargs, *output; /* borrowed */
} tsx_handler_call;

/* Runs the estimate once and stores its normalised estimates and
 * diagnostics on the layer. 0, or -1 with an exception (an interrupt). */
int tsx_handler_run(const tsx_handler_call *call);

#endif
