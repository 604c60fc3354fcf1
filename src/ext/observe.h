/* observe.c: what one module call of a crawl records: its layer record,
 * the parameters and buffers it holds, its input and output metadata, the
 * modes its formulas follow, its handler's estimates and its formulas.
 * The hooks and forward wrappers (hooks.c) call tsx_call_begin and
 * tsx_call_end. */
#ifndef TSX_OBSERVE_H
#define TSX_OBSERVE_H

#include "attribution.h"
#include "handlers.h"
#include "module_call.h"
#include "module_desc.h"
#include "saved.h"

/* One module of the crawl. */
typedef struct module_entry {
    PyObject *module;        /* strong */
    PyObject *params;        /* module._parameters (strong) or NULL: recurse */
    PyObject *buffers;       /* module._buffers (strong) or NULL: recurse */
    PyTypeObject *type;      /* class when the crawl began (borrowed) */
    PyObject *hook_dicts[5]; /* the dicts our hooks were inserted into */
    PyObject *hook_ids[2];   /* pre and post hook ids */
    PyObject *dict;          /* wrapped: the module's __dict__ (strong) */
    PyObject *prev_forward;  /* wrapped: its own "forward" entry, or NULL */
    PyObject *wrapper;       /* wrapped: the wrapper put there (strong) */
    bool wrap;               /* observed through a forward wrapper */
    PyObject *estimate;      /* custom handler callback (strong) or NULL */
    PyObject *identity;      /* its "<module>.<qualname>" */
    unsigned owns;           /* its subtree_metrics, as estimate bits */
    unsigned builtin_owns;   /* estimates our own formulas own (subtree) */
} module_entry;

/* What a pre-hook leaves for its post-hook. */
typedef struct open_call {
    PyObject *handled; /* the exception being handled when the call began */
    ts_shape input;    /* first input tensor, for the formulas */
    int layer;         /* the layer record of this call */
    int module;        /* the module called */
    bool has_input;
    bool training; /* the module's mode when its forward began */
} open_call;

/* The crawl object (Python type Crawl, crawl.c). Its C data is here, with
 * what one module call records, because the hooks (hooks.c) and the crawl
 * (crawl.c) above both read it. */
typedef struct tsx_crawl {
    PyObject_HEAD
    tsx_state *st;
    /* how module descriptions are read (refresh_module, after the crawl
     * was built: no memo) */
    tsx_desc_reader reader;
    ts_session *session;
    PyObject *root;
    module_entry *modules;
    size_t nmodules;
    PyObject *all;         /* every module, deduplicated, in pre-order */
    PyObject *flags;       /* saved training flags, parallel to `all` */
    PyObject *handles;     /* RemovableHandles (public-API fallback only) */
    PyObject *counter;     /* attached operator counter or NULL */
    PyObject *handlers;    /* {type: ModuleHandler} snapshot or NULL */
    PyObject *module_call; /* the ModuleCall class handlers receive */
    tsx_ptrset seen;       /* tensors attributed so far */
    open_call *opened;     /* the calls whose post-hook has not run yet */
    size_t opened_cap, open;
    bool full, installed;
    PyObject *claims; /* keys this crawl put in st->observed (hooks.c) */
    Py_ssize_t nclaims;
    unsigned long thread; /* the installing thread: calls made by other
                             threads meanwhile are not this crawl's */
    bool expanded_root;   /* an nn.Transformer root a handler expanded */
    size_t handler_calls; /* handler callbacks run so far */
    tsx_local local;      /* this rank's part of sharded tensors (Crawl's
                             local=True, inside a process group) */
    tsx_saved_run saved;  /* saved-tensor hooks (Crawl's saved=True), open
                             while installed */
} tsx_crawl;

/* The module at position i of the crawl's pre-order list (borrowed). */
static inline PyObject *
tsx_crawl_module_at(tsx_crawl *c, Py_ssize_t i)
{
    return PyTuple_GET_ITEM(PyList_GET_ITEM(c->all, i), 1);
}

/* A module call begins: attribution, input metadata, a layer record.
 * `hooked`: observed by a pre-hook (the post-hook then infers a failure
 * from the exception being handled). 0, or -1 with an exception. */
int tsx_call_begin(
    tsx_crawl *c, int index, PyObject *args, PyObject *kwargs, bool hooked);
/* A module call ends, with its output, or failed (its forward raised; a
 * negative `failed_or_infer` infers it as an always-called post-hook
 * must). 0, or -1 with an exception. */
int tsx_call_end(tsx_crawl *c,
                 int index,
                 PyObject *args,
                 PyObject *kwargs,
                 PyObject *output,
                 int failed_or_infer);
/* Closes the calls still open (uninstall). */
void tsx_calls_clear(tsx_crawl *c);

#endif
