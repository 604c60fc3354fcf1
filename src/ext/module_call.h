/* module_call.c: the parts of one module call that a family's formulas
 * need beyond the first input and output tensors (attention inputs and
 * masks, recurrent states, second inputs, bag offsets), and what the token
 * dependencies of attention and Transformer calls need (their masks). */
#ifndef TSX_MODULE_CALL_H
#define TSX_MODULE_CALL_H

#include "masks.h"
#include "torchscan/module_formulas.h"

/* 0, or -1 with an exception. */
int tsx_fill_call(tsx_state *st,
                  const ts_module_desc *desc,
                  PyObject *args,
                  PyObject *kwargs,
                  PyObject *output,
                  ts_module_call *call);

/* The masks, causal hint and argument identities of a native attention
 * call, or the masks of a native Transformer call (whose hints
 * tsx_fill_call reads), for its token dependencies. `tokens` is cleared
 * first. 0, or -1 with an exception. */
int tsx_fill_tokens(tsx_state *st,
                    const ts_module_desc *desc,
                    PyObject *args,
                    PyObject *kwargs,
                    ts_token_call *tokens);

#endif
