/* module_family.c: which native family a module belongs to (the class
 * table), and the module tree: children, parameter counts. */
#ifndef TSX_MODULE_FAMILY_H
#define TSX_MODULE_FAMILY_H

#include "callbacks.h"
#include "torchscan/module_formulas.h"

typedef struct native_class {
    const char *name; /* class __qualname__ in torch.nn.modules.* */
    ts_module_kind kind;
    int rank;
} native_class;

/* The native family a module's formulas come from, or NULL; a subclass
 * counts only while it keeps the native forward (module_desc.c checks).
 * *native_type (borrowed) is the matching class. */
const native_class *tsx_native_of(tsx_state *st,
                                  PyObject *module,
                                  PyObject **native_type);
/* Elements of every parameter into *numel: -1 while lazy parameters are
 * unmaterialized (or unreadable). 0, or -1 with an interrupt. */
int tsx_param_numel(tsx_state *st, PyObject *module, int64_t *numel);
/* True for an instance of torch.nn's class `qualname` itself. */
int tsx_is_native_named(tsx_state *st, PyObject *obj, const char *qualname);
/* module._modules (new reference; an empty dict when absent). */
PyObject *tsx_child_dict(tsx_state *st, PyObject *module);
/* 1 when the module has a child module, 0 when not, -1 on error. */
int tsx_has_children(tsx_state *st, PyObject *module);

#endif
