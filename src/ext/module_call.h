/* module_call.c: the parts of one module call that a family's formulas
 * need beyond the first input and output tensors (attention inputs and
 * masks, recurrent states, second inputs, bag offsets). */
#ifndef TSX_MODULE_CALL_H
#define TSX_MODULE_CALL_H

#include "describe.h"
#include "torchscan/module_formulas.h"

/* 0, or -1 with an exception. */
int tsx_fill_call(tsx_state *st,
                  const ts_module_desc *desc,
                  PyObject *args,
                  PyObject *kwargs,
                  PyObject *output,
                  ts_module_call *call);

#endif
