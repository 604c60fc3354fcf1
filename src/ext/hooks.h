/* hooks.c: the observer objects of a crawl (Python type Hook, internal)
 * and their installation: forward wrappers by default, forward pre-hooks
 * and always-called forward hooks where a wrapper cannot observe; the
 * save and restore of training flags. */
#ifndef TSX_HOOKS_H
#define TSX_HOOKS_H

#include "observe.h"

extern PyType_Spec tsx_hook_spec;

/* 0 when `value`, a module's instance "forward", is a crawl's wrapper of
 * the class's own forward; 1 for any other value (a patch). */
int tsx_is_patched_forward(tsx_state *st, PyObject *value);
/* Saves the training flags and switches the model to eval (when
 * `evaluate`), then wraps or hooks every module. 0, or -1 with an
 * exception (the caller uninstalls). */
int tsx_hooks_install(tsx_crawl *c, bool evaluate);
/* Removes every wrapper and hook and restores the training flags; keeps
 * going on errors and reports the first one (an exception already set
 * wins). 0, or -1 with an exception. */
int tsx_hooks_uninstall(tsx_crawl *c);
/* Ends the claims of an installed crawl that is freed without uninstall
 * (its model went away with it); keeps the exception being handled. */
void tsx_hooks_release(tsx_crawl *c);

#endif
