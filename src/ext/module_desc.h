/* module_desc.c: what the engine's formulas need to know about a native
 * module: its hyperparameters, read once per crawl through the module
 * readers of callbacks.c, one reader per family (family_readers, next to
 * the core's ts_mf_families). A subclass that replaced the native forward
 * is not described as native. */
#ifndef TSX_MODULE_DESC_H
#define TSX_MODULE_DESC_H

#include "module_family.h"

/* A native Transformer stack reads its layers' descriptions, each layer
 * its sub-layers', and the crawl then reads every one of those modules
 * again for its own row: the memo keeps each read (pointer-keyed). It
 * belongs to one crawl's construction (crawl.c). */
typedef struct tsx_desc_memo {
    PyObject **keys; /* borrowed: the model holds its modules */
    ts_module_desc *descs;
    size_t n, cap;
} tsx_desc_memo;

/* 1 and a copy of the memoized description, or 0. */
int tsx_desc_memo_get(const tsx_desc_memo *memo,
                      PyObject *module,
                      ts_module_desc *out);
/* 0, or -1 with an exception. */
int tsx_desc_memo_put(tsx_desc_memo *memo,
                      PyObject *module,
                      const ts_module_desc *desc);
void tsx_desc_memo_clear(tsx_desc_memo *memo);

/* How descriptions are read. */
typedef struct tsx_desc_reader {
    tsx_state *st;
    tsx_desc_memo *memo; /* the crawl's while it is built, or NULL */
    /* 0 when `value`, a module's instance "forward", is a crawl's wrapper
     * of the class's own forward; 1 for any other value (a patch). The
     * wrappers are hooks.c's (a higher layer), so the crawl passes its
     * tsx_is_patched_forward in. */
    int (*is_patched_forward)(tsx_state *st, PyObject *value);
} tsx_desc_reader;

/* Reads the hyperparameters of a native module into *desc. A module whose
 * attributes do not read like its family's (an Exception, a wrong type)
 * becomes TS_MOD_UNKNOWN; 0, or -1 with an interrupt (a BaseException
 * that is not an Exception) that propagates. */
int tsx_module_desc(const tsx_desc_reader *reader,
                    PyObject *module,
                    const native_class *native,
                    PyObject *native_type,
                    ts_module_desc *desc);
/* Reads the modes of a native Transformer's attention blocks and dropouts
 * into `d` (they decide which dropouts count); a stack whose layers'
 * modes differ is refused. 0, or -1 with an exception set. */
int tsx_transformer_modes(tsx_state *st, PyObject *module, ts_module_desc *d);
#endif
