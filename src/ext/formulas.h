/* formulas.c: the module function behind torchscan.modules: the module
 * formulas of one call given by the caller, outside any crawl (module.c
 * lists it in its method table). */
#ifndef TSX_FORMULAS_H
#define TSX_FORMULAS_H

#include "hooks.h"
#include "module_call.h"

PyObject *tsx_engine_module_estimates(PyObject *module, PyObject *args);

#endif
