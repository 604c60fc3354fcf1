/* The crawl session object: module table, C hook objects, parameter
 * attribution, training-flag save/restore and report assembly. */
#include "tsx.h"

#include "torchscan/emit.h"

#include <stddef.h>
#include <structmember.h>

/* ---- a pointer set holding strong references ---------------------------- */

typedef struct ptrset {
    PyObject **slots;
    size_t cap, size;
} ptrset;

static void
ptrset_clear(ptrset *set)
{
    for (size_t i = 0; i < set->cap; i++) {
        Py_XDECREF(set->slots[i]);
    }
    PyMem_Free(set->slots);
    set->slots = NULL;
    set->cap = set->size = 0;
}

static size_t
ptr_hash(PyObject *p)
{
    uintptr_t x = (uintptr_t)p >> 4;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x ^ (x >> 29));
}

/* Adds obj; returns 1 when added, 0 when present, -1 on memory error. */
static int
ptrset_add(ptrset *set, PyObject *obj)
{
    if ((set->size + 1) * 2 > set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 64;
        PyObject **slots = PyMem_Calloc(cap, sizeof(PyObject *));
        if (slots == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; i < set->cap; i++) {
            PyObject *p = set->slots[i];
            if (p != NULL) {
                size_t j = ptr_hash(p) & (cap - 1);
                while (slots[j] != NULL) {
                    j = (j + 1) & (cap - 1);
                }
                slots[j] = p;
            }
        }
        PyMem_Free(set->slots);
        set->slots = slots;
        set->cap = cap;
    }
    size_t j = ptr_hash(obj) & (set->cap - 1);
    while (set->slots[j] != NULL) {
        if (set->slots[j] == obj) {
            return 0;
        }
        j = (j + 1) & (set->cap - 1);
    }
    set->slots[j] = Py_NewRef(obj);
    set->size++;
    return 1;
}

/* ---- hooks and forward wrappers ----------------------------------------- */

/* A module's calls are observed in one of two ways. By default the crawl
 * puts a wrapper around the module's forward (an instance attribute
 * shadowing the class's method, as PyTorch's `_call_impl` reads
 * `self.forward`): the module keeps PyTorch's hook-free fast call path,
 * which costs several microseconds less per call than the hooked one. A
 * forward pre-hook and an always-called forward hook observe instead the
 * modules whose behaviour depends on having hooks (nn.TransformerEncoderLayer
 * leaves its fused fast path when any hook is attached, so its sub-layers
 * run and get rows, as under per-module hooks), ScriptModules, modules
 * without an instance dict, and modules with forward hooks (see
 * install_wrappers). */
enum hook_kind {
    HOOK_PRE,
    HOOK_POST,
    HOOK_FORWARD
};

typedef struct tsx_hook {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    tsx_crawl *crawl;  /* strong */
    PyObject *forward; /* HOOK_FORWARD: the wrapped callable (strong) */
    int module;
    enum hook_kind kind;
    bool patched; /* HOOK_FORWARD: wraps the instance's own "forward" */
} tsx_hook;

int
tsx_is_patched_forward(tsx_state *st, PyObject *value)
{
    /* a wrapper of a wrapper: two crawls of one module at once */
    while (Py_IS_TYPE(value, st->hook_type)) {
        tsx_hook *h = (tsx_hook *)value;
        if (!h->patched || h->forward == NULL) {
            return 0;
        }
        value = h->forward;
    }
    return 1;
}

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

struct tsx_crawl {
    PyObject_HEAD
    tsx_state *st;
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
    ptrset seen;
    open_call *opened; /* the calls whose post-hook has not run yet */
    size_t opened_cap, open;
    bool full, installed;
    bool expanded_root;   /* an nn.Transformer root a handler expanded */
    size_t handler_calls; /* handler callbacks run so far */
};

ts_session *
tsx_crawl_session(tsx_crawl *crawl)
{
    return crawl->session;
}

/* Reads a tensor's element count and dtype and, for a parameter, whether
 * it is trainable. */
static int
tensor_counts(tsx_state *st,
              PyObject *t,
              bool params,
              long long *numel,
              const tsx_dtype **info,
              bool *trainable)
{
    PyObject *numel_obj = PyObject_CallMethodNoArgs(t, st->s_numel);
    PyObject *dtype = numel_obj ? PyObject_GetAttr(t, st->s_dtype) : NULL;
    PyObject *rg = NULL;
    int rc = -1;
    *info = dtype ? tsx_dtype_info(st, dtype) : NULL;
    rg = (*info && params) ? PyObject_GetAttr(t, st->s_requires_grad) : NULL;
    *numel = numel_obj ? PyLong_AsLongLong(numel_obj) : -1;
    *trainable = rg == Py_True;
    if (*info != NULL && (!params || rg != NULL)
        && !(*numel == -1 && PyErr_Occurred())) {
        rc = 0;
    }
    Py_XDECREF(numel_obj);
    Py_XDECREF(dtype);
    Py_XDECREF(rg);
    return rc;
}

/* Adds one tensor's counts to a row's or the model's sums. */
static void
add_counts(int64_t *trainable_sum,
           int64_t *frozen_sum,
           int64_t *param_bytes,
           int64_t *buffer_elements,
           int64_t *buffer_bytes,
           bool params,
           long long numel,
           const tsx_dtype *info,
           bool trainable)
{
    if (params) {
        *(trainable ? trainable_sum : frozen_sum) += numel;
        *param_bytes += numel * info->itemsize;
    }
    else {
        *buffer_elements += numel;
        *buffer_bytes += numel * info->itemsize;
    }
}

/* Adds one tensor to the attribution (the first time it is seen). */
static int
attribute_tensor(tsx_crawl *c, PyObject *t, bool params, ts_attribution *a)
{
    const tsx_dtype *info;
    long long numel;
    bool trainable;
    int added;
    if (t == Py_None) {
        return 0;
    }
    added = ptrset_add(&c->seen, t);
    if (added <= 0) {
        if (added == 0) {
            *(params ? &a->param_shared : &a->buffer_shared) = true;
        }
        return added;
    }
    if (tensor_counts(c->st, t, params, &numel, &info, &trainable) < 0) {
        return -1;
    }
    add_counts(&a->trainable,
               &a->frozen,
               &a->param_bytes,
               &a->buffer_elements,
               &a->buffer_bytes,
               params,
               numel,
               info,
               trainable);
    return 0;
}

/* An iterator over a mapping's values (a ScriptModule's _parameters is a
 * mapping, not a dict), or over any other iterable. */
static PyObject *
values_iter(PyObject *tensors)
{
    PyObject *values, *iter;
    if (PyDict_Check(tensors)) {
        values = PyDict_Values(tensors);
    }
    else if (!PyObject_HasAttrString(tensors, "values")) {
        return PyObject_GetIter(tensors);
    }
    else {
        values = PyObject_CallMethod(tensors, "values", NULL);
    }
    iter = values ? PyObject_GetIter(values) : NULL;
    Py_XDECREF(values);
    return iter;
}

/* Calls fn(ctx, t) for each value of a module's own tensor dict, or of
 * another iterable (a ScriptModule's mapping), None entries included. */
static int
each_tensor(PyObject *tensors, int (*fn)(void *, PyObject *), void *ctx)
{
    PyObject *iter, *t, *key;
    Py_ssize_t pos = 0;
    if (PyDict_Check(tensors)) {
        while (PyDict_Next(tensors, &pos, &key, &t)) {
            /* reading a tensor may run Python code that edits the dict */
            int rc;
            Py_INCREF(t);
            rc = fn(ctx, t);
            Py_DECREF(t);
            if (rc < 0) {
                return -1;
            }
        }
        return 0;
    }
    iter = values_iter(tensors);
    if (iter == NULL) {
        return -1;
    }
    while ((t = PyIter_Next(iter)) != NULL) {
        int rc = fn(ctx, t);
        Py_DECREF(t);
        if (rc < 0) {
            Py_DECREF(iter);
            return -1;
        }
    }
    Py_DECREF(iter);
    return PyErr_Occurred() ? -1 : 0;
}

typedef struct attribution_walk {
    tsx_crawl *crawl;
    bool params;
    ts_attribution *a;
    ptrset *once; /* a subtree lists each tensor once; or NULL */
} attribution_walk;

static int
attribute_one(void *ctx, PyObject *t)
{
    attribution_walk *w = ctx;
    int rc = (w->once != NULL && t != Py_None) ? ptrset_add(w->once, t) : 1;
    return rc > 0 ? attribute_tensor(w->crawl, t, w->params, w->a) : rc;
}

/* Adds the tensors of a module's own dict, or of an iterable. */
static int
attribute_tensors(tsx_crawl *c,
                  PyObject *tensors,
                  bool params,
                  ts_attribution *a,
                  ptrset *once)
{
    attribution_walk w = {c, params, a, once};
    return each_tensor(tensors, attribute_one, &w);
}

/* Calls fn(ctx, t) for the parameters (pass 0) or buffers (pass 1) of a
 * module and of all its descendants, in the order module.parameters() /
 * buffers() list them (each module once), read from the modules' own
 * dicts: the Python generators cost tens of microseconds per call. */
static int
each_subtree_tensor(PyObject *module,
                    int pass,
                    ptrset *modules,
                    int depth,
                    int (*fn)(void *, PyObject *),
                    void *ctx)
{
    PyObject *own, *children, *key, *value;
    Py_ssize_t pos = 0;
    int rc = ptrset_add(modules, module);
    if (rc <= 0) {
        return rc; /* met before (0), or an error */
    }
    if (depth > 10000) {
        PyErr_SetString(PyExc_RecursionError, "module tree is too deep");
        return -1;
    }
    if (tsx_optional_attr(module, pass ? "_buffers" : "_parameters", &own)
        < 0) {
        return -1;
    }
    rc = own != NULL ? each_tensor(own, fn, ctx) : 0;
    Py_XDECREF(own);
    children = rc == 0 ? tsx_child_dict(module) : NULL;
    if (children == NULL) {
        return -1;
    }
    while (rc == 0 && PyDict_Next(children, &pos, &key, &value)) {
        if (value != Py_None) {
            /* reading a tensor may run Python code that edits the dict */
            Py_INCREF(value);
            rc = each_subtree_tensor(value, pass, modules, depth + 1, fn, ctx);
            Py_DECREF(value);
        }
    }
    Py_DECREF(children);
    return rc < 0 ? -1 : 0;
}

/* Adds the parameters (pass 0) or buffers (pass 1) of a module's subtree,
 * each tensor once, to an attribution. */
static int
attribute_subtree(tsx_crawl *c,
                  PyObject *module,
                  int pass,
                  ptrset *modules,
                  ptrset *tensors,
                  ts_attribution *a)
{
    attribution_walk w = {c, pass == 0, a, tensors};
    return each_subtree_tensor(module, pass, modules, 0, attribute_one, &w);
}

static int refresh_module(tsx_crawl *c, int index);

/* The formulas follow the modes a forward runs in: the crawl runs in eval,
 * but a user's forward pre-hook may switch a submodule to training (MC
 * dropout), also the sub-layers of a native Transformer, and switch them
 * back in a post-hook. They are read when the forward begins, after the
 * user's pre-hooks, into the module's description. */
static int
read_modes(tsx_crawl *c, int index, bool *training)
{
    PyObject *module = c->modules[index].module;
    const ts_module_desc *desc = ts_session_module_desc(c->session, index);
    PyObject *mode = PyObject_GetAttr(module, c->st->s_training);
    int t = mode != NULL ? PyObject_IsTrue(mode) : -1;
    ts_module_desc now;
    Py_XDECREF(mode);
    if (t < 0) {
        return -1;
    }
    *training = t;
    bool transformer = desc->kind >= TS_MOD_TRANSFORMER_ENCODER_LAYER
                       && desc->kind <= TS_MOD_TRANSFORMER;
    if (!transformer && (bool)t == desc->training) {
        return 0; /* the common case: no copy of the description */
    }
    memcpy(&now, desc, sizeof now);
    now.training = t;
    if (transformer && tsx_transformer_modes(module, &now) < 0) {
        return -1;
    }
    if (memcmp(&now, desc, sizeof now) != 0
        && ts_session_update_module(c->session, index, NULL, &now) != TS_OK) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* A module call begins: attribution, input metadata, a layer record.
 * `hooked`: observed by a pre-hook (the post-hook then infers a failure from
 * the exception being handled). */
static int
call_begin(
    tsx_crawl *c, int index, PyObject *args, PyObject *kwargs, bool hooked)
{
    module_entry *e = &c->modules[index];
    ts_attribution a;
    ts_shape first_input;
    bool has_input = false, training = false;
    json_t *input;
    open_call *oc;
    int layer;
    memset(&a, 0, sizeof a);
    if (Py_TYPE(e->module) != e->type) {
        /* a lazy module's own pre-hook just gave it its concrete class */
        e->type = Py_TYPE(e->module);
        if (refresh_module(c, index) < 0) {
            return -1;
        }
    }
    if (e->params != NULL) {
        if (attribute_tensors(c, e->params, true, &a, NULL) < 0
            || attribute_tensors(c, e->buffers, false, &a, NULL) < 0) {
            return -1;
        }
    }
    else {
        for (int pass = 0; pass < 2; pass++) {
            ptrset modules = {NULL, 0, 0}, tensors = {NULL, 0, 0};
            int rc =
                attribute_subtree(c, e->module, pass, &modules, &tensors, &a);
            ptrset_clear(&modules);
            ptrset_clear(&tensors);
            if (rc < 0) {
                return -1;
            }
        }
    }
    if (c->full && ts_session_module_is_leaf(c->session, index)
        && read_modes(c, index, &training) < 0) {
        return -1;
    }
    /* The first tensor of the call (positional arguments, then keyword
     * arguments) is captured here for the formulas of the post-hook.
     * Describing runs Python code (a tensor subclass's __torch_function__,
     * a mapping's items()) that may call modules of this crawl, which use
     * and may move the open-call array: it is only touched afterwards. */
    memset(&first_input, 0, sizeof first_input);
    input = tsx_describe_call(c->st,
                              args,
                              kwargs,
                              c->full ? &first_input : NULL,
                              c->full ? &has_input : NULL);
    if (input == NULL) {
        return -1;
    }
    if (c->open == c->opened_cap) {
        size_t cap = c->opened_cap ? c->opened_cap * 2 : 32;
        open_call *p = PyMem_Realloc(c->opened, cap * sizeof(open_call));
        if (p == NULL) {
            json_decref(input);
            PyErr_NoMemory();
            return -1;
        }
        c->opened = p;
        c->opened_cap = cap;
    }
    layer = ts_session_begin_owned_call(
        c->session, index, input, &a, e->owns | e->builtin_owns);
    if (layer < 0) {
        PyErr_NoMemory();
        return -1;
    }
    oc = &c->opened[c->open];
    oc->input = first_input;
    oc->has_input = has_input;
    oc->layer = layer;
    oc->module = index;
    oc->training = training;
    /* Remember which exception (if any) was being handled when the call
     * began: a post-hook that sees a different one runs in PyTorch's
     * always_call path, after the forward raised. */
    oc->handled = hooked ? PyErr_GetHandledException() : NULL;
    c->open++;
    return 0;
}

/* Reads a module's class and hyperparameters again. */
static int
refresh_module(tsx_crawl *c, int index)
{
    PyObject *module = c->modules[index].module, *native_type = NULL;
    const native_class *native = tsx_native_of(module, &native_type);
    PyObject *tname = PyType_GetName(Py_TYPE(module));
    ts_module_desc desc;
    int rc = -1;
    if (tname != NULL
        && tsx_module_desc(c->st, module, native, native_type, &desc) == 0) {
        if (desc.param_numel < 0) {
            desc.param_numel = 0; /* still lazy: count what exists */
        }
        rc = ts_session_update_module(
            c->session, index, PyUnicode_AsUTF8(tname), &desc);
        if (rc != TS_OK) {
            PyErr_NoMemory();
            rc = -1;
        }
    }
    Py_XDECREF(tname);
    return rc;
}

/* A module call ends, with its output, or failed (its forward raised; a
 * negative `failed` infers it as an always-called post-hook must). */
static int
call_end(tsx_crawl *c,
         int index,
         PyObject *args,
         PyObject *kwargs,
         PyObject *output,
         int failed_or_infer)
{
    tsx_state *st = c->st;
    open_call *oc = NULL;
    bool failed = failed_or_infer > 0;
    const ts_module_desc *desc;
    ts_module_call call;
    json_t *out_meta = NULL;
    int rc;

    /* This module's own call is closed, never another one: a post-hook
     * whose pre-hook never ran (a user pre-hook raised first) finds none.
     * Calls still open above it are closed as failed: their post-hooks
     * never ran (PyTorch skips always_call hooks for a BaseException). */
    for (size_t i = c->open; i-- > 0;) {
        if (c->opened[i].module == index) {
            while (c->open > i + 1) {
                open_call *orphan = &c->opened[--c->open];
                Py_CLEAR(orphan->handled);
                if (ts_session_end_call(
                        c->session, orphan->module, NULL, true, NULL)
                    == TS_ENOMEM) {
                    PyErr_NoMemory();
                    return -1;
                }
            }
            oc = &c->opened[i];
            break;
        }
    }

    if (failed_or_infer < 0) {
        /* PyTorch calls always_call hooks with output None after the
         * forward raised: an exception is then being handled that was not
         * when the call began. */
        PyObject *handled = PyErr_GetHandledException();
        failed = output == Py_None && handled != NULL
                 && handled != (oc ? oc->handled : NULL);
        Py_XDECREF(handled);
    }
    int layer = -1;
    bool began_training = false;
    memset(&call, 0, sizeof call);
    if (oc != NULL) {
        Py_XDECREF(oc->handled);
        call.input = oc->input;
        call.has_input = oc->has_input;
        began_training = oc->training;
        layer = oc->layer;
        c->open--;
    }
    if (c->full && !failed && layer >= 0
        && c->modules[index].estimate != NULL) {
        /* A handler answers first; formulas fill what it left (leaves).
         * Estimates an enclosing owner covers are never asked for. */
        module_entry *e = &c->modules[index];
        tsx_handler_call hc = {
            .session = c->session,
            .layer = layer,
            .requested = TS_ALL_ESTIMATES
                         & ~ts_session_layer_covered(c->session, layer),
            .owns = e->owns,
            .estimate = e->estimate,
            .identity = e->identity,
            .module_call_cls = c->module_call,
            .counter = c->counter,
            .module = e->module,
            .args = args,
            .kwargs = kwargs,
            .output = output,
        };
        if (hc.requested) {
            c->handler_calls += index != 0; /* calls below the root */
            if (tsx_handler_run(&hc) < 0) {
                return -1;
            }
        }
    }
    if (c->expanded_root && index == 0 && layer >= 0 && !failed) {
        /* A handler that ran inside replaces the inclusive formula; if
         * none ran, the formula stands and owns everything below. */
        int rc2 = c->handler_calls
                      ? ts_session_mark_expanded_boundary(c->session, layer)
                      : ts_session_own_retroactively(
                          c->session, layer, TS_ALL_ESTIMATES);
        if (rc2 != TS_OK) {
            PyErr_NoMemory();
            return -1;
        }
    }
    if (!failed) {
        /* the shapes for the formulas (full mode) are read on the way */
        out_meta =
            c->full ? tsx_describe(st, output, &call.output, &call.has_output)
                    : tsx_describe(st, output, NULL, NULL);
        if (out_meta == NULL) {
            return -1;
        }
    }
    if (c->full && !failed && ts_session_module_is_leaf(c->session, index)) {
        desc = ts_session_module_desc(c->session, index);
        if (desc->param_numel < 0) {
            /* A lazy module materialized its parameters (and usually took
             * its concrete class) in this call: read it again. */
            if (refresh_module(c, index) < 0) {
                json_decref(out_meta);
                return -1;
            }
            desc = ts_session_module_desc(c->session, index);
        }
        if (desc->training != began_training) {
            /* this call's mode at its start (a lazy module read again, or a
             * nested call of the same module, changed the description) */
            ts_module_desc now;
            memcpy(&now, desc, sizeof now);
            now.training = began_training;
            if (ts_session_update_module(c->session, index, NULL, &now)
                != TS_OK) {
                json_decref(out_meta);
                PyErr_NoMemory();
                return -1;
            }
            desc = ts_session_module_desc(c->session, index);
        }
        if (call.has_input
            && tsx_fill_call(st, desc, args, kwargs, output, &call) < 0) {
            json_decref(out_meta);
            return -1;
        }
        rc = ts_session_end_call(c->session, index, out_meta, failed, &call);
    }
    else {
        rc = ts_session_end_call(c->session, index, out_meta, failed, NULL);
    }
    if (rc == TS_ENOMEM) {
        PyErr_NoMemory();
        return -1;
    }
    /* TS_EINVAL: a call closed that never opened (hooks installed in the
     * middle of a forward); nothing to record. */
    return 0;
}

static PyObject *
hook_vectorcall(PyObject *self,
                PyObject *const *args,
                size_t nargsf,
                PyObject *kwnames)
{
    tsx_hook *h = (tsx_hook *)self;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    bool post = h->kind == HOOK_POST;
    int rc;
    if (kwnames != NULL || n != (post ? 4 : 3)) {
        PyErr_SetString(PyExc_TypeError,
                        "torchscan hook called with unexpected arguments");
        return NULL;
    }
    if (h->crawl == NULL || !h->crawl->installed) {
        Py_RETURN_NONE; /* a deep copy's, or left behind by a caller */
    }
    PyObject *hargs = PyTuple_Check(args[1]) ? args[1] : NULL;
    PyObject *hkwargs = PyDict_Check(args[2]) ? args[2] : NULL;
    rc = post ? call_end(h->crawl, h->module, hargs, hkwargs, args[3], -1)
              : call_begin(h->crawl, h->module, hargs, hkwargs, true);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The forward wrapper: begin, the wrapped forward, end (also when it
 * raises: the exception propagates unchanged). After uninstall (a caller
 * kept the attribute) it only forwards. */
static PyObject *
forward_vectorcall(PyObject *self,
                   PyObject *const *args,
                   size_t nargsf,
                   PyObject *kwnames)
{
    tsx_hook *h = (tsx_hook *)self;
    tsx_crawl *c = h->crawl;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *targs = NULL, *tkwargs = NULL, *out = NULL;
    if (h->forward == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "torchscan wrapper was cleared");
        return NULL;
    }
    if (c == NULL || !c->installed) {
        return PyObject_Vectorcall(h->forward, args, nargsf, kwnames);
    }
    targs = PyTuple_New(n);
    tkwargs = targs ? PyDict_New() : NULL;
    if (tkwargs == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(targs, i, Py_NewRef(args[i]));
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        if (PyDict_SetItem(tkwargs, PyTuple_GET_ITEM(kwnames, i), args[n + i])
            < 0) {
            goto done;
        }
    }
    if (call_begin(c, h->module, targs, tkwargs, false) < 0) {
        goto done;
    }
    out = PyObject_Vectorcall(h->forward, args, nargsf, kwnames);
    if (out == NULL) {
        PyObject *exc = tsx_fetch();
        if (call_end(c, h->module, targs, tkwargs, NULL, 1) < 0) {
            PyErr_Clear(); /* the forward's exception wins */
        }
        if (exc != NULL) {
            tsx_restore(exc);
        }
        else if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_SystemError,
                            "forward returned NULL without an exception");
        }
    }
    else if (call_end(c, h->module, targs, tkwargs, out, 0) < 0) {
        Py_CLEAR(out);
    }
done:
    Py_XDECREF(targs);
    Py_XDECREF(tkwargs);
    return out;
}

/* A wrapper stands for the forward it wraps: attributes it lacks (__func__,
 * __self__, __name__, ...) are the wrapped callable's, and inspect follows
 * __wrapped__ to the real signature. */
static PyObject *
hook_getattro(PyObject *self, PyObject *name)
{
    tsx_hook *h = (tsx_hook *)self;
    PyObject *r = PyObject_GenericGetAttr(self, name);
    if (r == NULL && h->forward != NULL
        && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        r = PyObject_GetAttr(h->forward, name);
    }
    return r;
}

static int
hook_traverse(tsx_hook *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->crawl);
    Py_VISIT(self->forward);
    return 0;
}

static int
hook_clear(tsx_hook *self)
{
    Py_CLEAR(self->crawl);
    Py_CLEAR(self->forward);
    return 0;
}

static void
hook_dealloc(tsx_hook *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    hook_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* copy.deepcopy of a module during its crawl (a forward may copy a layer)
 * copies its instance dict and hook tables. The copy is not in the module
 * tree, so it is not observed: a wrapper copies as the forward it wraps
 * would (a bound method of the copy), a hook as a hook that does nothing. */
static PyObject *
hook_deepcopy(PyObject *self, PyObject *memo)
{
    tsx_hook *h = (tsx_hook *)self, *inert;
    if (h->kind == HOOK_FORWARD) {
        PyObject *copy, *result = NULL;
        if (h->forward == NULL) {
            PyErr_SetString(PyExc_RuntimeError,
                            "torchscan wrapper was cleared");
            return NULL;
        }
        copy = PyImport_ImportModule("copy");
        if (copy != NULL) {
            result =
                PyObject_CallMethod(copy, "deepcopy", "OO", h->forward, memo);
            Py_DECREF(copy);
        }
        return result;
    }
    inert = PyObject_GC_New(tsx_hook, Py_TYPE(self));
    if (inert == NULL) {
        return NULL;
    }
    inert->vectorcall = hook_vectorcall;
    inert->crawl = NULL;
    inert->forward = NULL;
    inert->module = -1;
    inert->kind = h->kind;
    inert->patched = false;
    PyObject_GC_Track(inert);
    return (PyObject *)inert;
}

static PyMethodDef hook_methods[] = {
    {"__deepcopy__", hook_deepcopy, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef hook_members[] = {
    {"__vectorcalloffset__",
     T_PYSSIZET,
     offsetof(tsx_hook, vectorcall),
     READONLY,
     NULL},
    {"__wrapped__",
     T_OBJECT,
     offsetof(tsx_hook, forward),
     READONLY,
     "the wrapped forward (None for hooks)"},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot hook_slots[] = {
    {Py_tp_dealloc, hook_dealloc},
    {Py_tp_traverse, hook_traverse},
    {Py_tp_clear, hook_clear},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_members, hook_members},
    {Py_tp_methods, hook_methods},
    {Py_tp_getattro, hook_getattro},
    {Py_tp_doc,
     "A forward hook or forward wrapper of one module in a crawl "
     "(internal)."},
    {0, NULL},
};

PyType_Spec tsx_hook_spec = {
    .name = "torchscan._engine.Hook",
    .basicsize = sizeof(tsx_hook),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC
             | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = hook_slots,
};

static PyObject *
hook_new(tsx_crawl *c, int module, enum hook_kind kind, PyObject *forward)
{
    tsx_hook *h = PyObject_GC_New(tsx_hook, c->st->hook_type);
    if (h == NULL) {
        return NULL;
    }
    h->vectorcall =
        kind == HOOK_FORWARD ? forward_vectorcall : hook_vectorcall;
    h->crawl = (tsx_crawl *)Py_NewRef(c);
    h->forward = Py_XNewRef(forward);
    h->module = module;
    h->kind = kind;
    h->patched = false;
    PyObject_GC_Track(h);
    return (PyObject *)h;
}

/* ---- the crawl object --------------------------------------------------- */
/* named_modules() in C: pre-order, each module once (first path wins),
 * None children skipped. Appends (path, module) pairs to `out`. */
static int
walk_modules(
    PyObject *module, PyObject *prefix, ptrset *memo, PyObject *out, int depth)
{
    PyObject *children, *key, *value, *pair;
    Py_ssize_t pos = 0;
    int added = ptrset_add(memo, module);
    if (added <= 0) {
        return added;
    }
    if (depth > 10000) {
        PyErr_SetString(PyExc_RecursionError, "module tree is too deep");
        return -1;
    }
    pair = PyTuple_Pack(2, prefix, module);
    if (pair == NULL || PyList_Append(out, pair) < 0) {
        Py_XDECREF(pair);
        return -1;
    }
    Py_DECREF(pair);
    children = tsx_child_dict(module);
    if (children == NULL) {
        return -1;
    }
    while (PyDict_Next(children, &pos, &key, &value)) {
        PyObject *path;
        int rc;
        if (value == Py_None) {
            continue;
        }
        path = PyUnicode_GET_LENGTH(prefix)
                   ? PyUnicode_FromFormat("%U.%U", prefix, key)
                   : Py_NewRef(key);
        rc = path ? walk_modules(value, path, memo, out, depth + 1) : -1;
        Py_XDECREF(path);
        if (rc < 0) {
            Py_DECREF(children);
            return -1;
        }
    }
    Py_DECREF(children);
    return 0;
}

typedef struct type_memo {
    PyTypeObject *type; /* borrowed: alive while the model holds it */
    const native_class *native;
    PyObject *native_type;
    PyObject *handler; /* borrowed from the handlers dict, or NULL */
} type_memo;

static int
add_module(tsx_crawl *c,
           PyObject *path,
           PyObject *module,
           bool atomic_root,
           type_memo *memo,
           size_t *nmemo)
{
    ts_module_desc desc;
    PyObject *tname = NULL;
    Py_ssize_t psize = 0;
    const char *p = PyUnicode_AsUTF8AndSize(path, &psize);
    const native_class *native = NULL;
    PyObject *native_type = NULL;
    int children, index;
    bool recurse, leaf, cached = false;
    module_entry *e;
    if (p == NULL) {
        return -1;
    }
    if (strlen(p) != (size_t)psize) {
        /* report paths are C strings: "a\0b" would become "a" */
        PyErr_Format(
            PyExc_ValueError, "module name %R contains a NUL character", path);
        return -1;
    }
    /* Models repeat a few types many times: resolve each type once. */
    PyObject *handler = NULL;
    for (size_t i = 0; i < *nmemo; i++) {
        if (memo[i].type == Py_TYPE(module)) {
            native = memo[i].native;
            native_type = memo[i].native_type;
            handler = memo[i].handler;
            cached = true;
            break;
        }
    }
    if (!cached) {
        native = tsx_native_of(module, &native_type);
        if (c->handlers != NULL) {
            if (tsx_handler_match(c->handlers, Py_TYPE(module), &handler)
                < 0) {
                return -1;
            }
            Py_XDECREF(handler); /* the snapshot dict keeps it alive */
        }
        if (*nmemo < 64) {
            memo[*nmemo].type = Py_TYPE(module);
            memo[*nmemo].native = native;
            memo[*nmemo].native_type = native_type;
            memo[*nmemo].handler = handler;
            (*nmemo)++;
        }
    }
    if (!c->full) {
        /* structure mode runs no formula: no hyperparameters to read */
        memset(&desc, 0, sizeof desc);
        desc.kind = native ? native->kind : TS_MOD_UNKNOWN;
    }
    else if (!tsx_desc_memo_get(c->st, module, &desc)
             && tsx_module_desc(c->st, module, native, native_type, &desc)
                    < 0) {
        return -1;
    }
    children = tsx_has_children(module);
    if (children < 0 || (tname = PyType_GetName(Py_TYPE(module))) == NULL) {
        return -1;
    }
    /* Metric leaves: modules without children; the native Transformer
     * family (MultiheadAttention, the layers and stacks), whose built-in
     * estimates own their whole subtree; an atomic nn.Transformer root.
     * Those rows also attribute their children's tensors. */
    recurse = desc.kind == TS_MOD_MHA || ts_module_kind_owns_subtree(desc.kind)
              || atomic_root;
    leaf = !children || recurse;
    index = ts_session_add_module(
        c->session, p, PyUnicode_AsUTF8(tname), &desc, leaf);
    Py_DECREF(tname);
    if (index < 0) {
        PyErr_NoMemory();
        return -1;
    }
    e = &c->modules[index];
    e->module = Py_NewRef(module);
    e->type = Py_TYPE(module);
    if (handler != NULL && c->full) {
        e->estimate = tsx_getattr(handler, "estimate");
        e->identity = e->estimate ? tsx_handler_identity(e->estimate) : NULL;
        if (e->identity == NULL || tsx_handler_owns(handler, &e->owns) < 0) {
            return -1;
        }
        ts_session_set_module_handler(c->session, index, true);
    }
    if (c->full && recurse) {
        /* built-in inclusive estimates: children are covered */
        e->builtin_owns = TS_ALL_ESTIMATES;
    }
    if (!recurse) {
        e->params = tsx_getattr(module, "_parameters");
        e->buffers = e->params ? tsx_getattr(module, "_buffers") : NULL;
        if (e->buffers == NULL) {
            return -1;
        }
    }
    return 0;
}

static PyObject *module_at(tsx_crawl *c, Py_ssize_t i);

static PyObject *
crawl_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {
        "module", "full", "handlers", "module_call", NULL};
    PyObject *root, *empty = NULL, *handlers = Py_None, *module_call = Py_None;
    ptrset memo = {NULL, 0, 0};
    type_memo types[64];
    size_t ntypes = 0;
    int full = 1, gc_was_enabled;
    tsx_crawl *c;
    tsx_state *st = tsx_state_of_type(type);
    if (st == NULL
        || !PyArg_ParseTupleAndKeywords(args,
                                        kwds,
                                        "O|pOO:Crawl",
                                        kwlist,
                                        &root,
                                        &full,
                                        &handlers,
                                        &module_call)) {
        return NULL;
    }
    c = (tsx_crawl *)type->tp_alloc(type, 0);
    if (c == NULL) {
        return NULL;
    }
    /* The walk allocates a few objects per module, none in a cycle: a
     * collection of the (large) torch heap in the middle helps nobody. */
    gc_was_enabled = PyGC_Disable();
    if (tsx_desc_memo_begin(st) < 0) {
        Py_DECREF(c);
        if (gc_was_enabled) {
            PyGC_Enable();
        }
        return NULL;
    }
    c->st = st;
    c->full = full;
    c->root = Py_NewRef(root);
    if (handlers != Py_None) {
        if (!PyDict_Check(handlers) || module_call == Py_None) {
            PyErr_SetString(PyExc_TypeError,
                            "handlers must be a dict, with module_call");
            goto error;
        }
        c->handlers = Py_NewRef(handlers);
        c->module_call = Py_NewRef(module_call);
    }
    c->session = ts_session_new(full);
    c->all = PyList_New(0);
    c->handles = PyList_New(0);
    empty = PyUnicode_FromString("");
    if (c->session == NULL || c->all == NULL || c->handles == NULL
        || empty == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        goto error;
    }
    if (walk_modules(root, empty, &memo, c->all, 0) < 0) {
        goto error;
    }
    c->modules = PyMem_Calloc((size_t)PyList_GET_SIZE(c->all) + 1,
                              sizeof(module_entry));
    if (c->modules == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    /* An nn.Transformer root is analysed as one atomic call, unless a
     * caller handler matches one of its descendants: then every module is
     * hooked, and the root's boundary is settled after the forward. */
    bool atomic = tsx_is_native_named(root, "Transformer");
    if (atomic && c->handlers != NULL && c->full) {
        for (Py_ssize_t i = 1; i < PyList_GET_SIZE(c->all) && atomic; i++) {
            PyObject *h = NULL;
            int found =
                tsx_handler_match(c->handlers, Py_TYPE(module_at(c, i)), &h);
            Py_XDECREF(h);
            if (found < 0) {
                goto error;
            }
            atomic = found == 0;
        }
        c->expanded_root = !atomic;
    }
    if (atomic) {
        c->nmodules = 1;
        if (add_module(c, empty, root, true, types, &ntypes) < 0) {
            goto error;
        }
    }
    else {
        c->nmodules = (size_t)PyList_GET_SIZE(c->all);
        for (size_t i = 0; i < c->nmodules; i++) {
            PyObject *pair = PyList_GET_ITEM(c->all, (Py_ssize_t)i);
            if (add_module(c,
                           PyTuple_GET_ITEM(pair, 0),
                           PyTuple_GET_ITEM(pair, 1),
                           i == 0 && c->expanded_root,
                           types,
                           &ntypes)
                < 0) {
                goto error;
            }
        }
        if (c->expanded_root) {
            /* its descendants answer first; ownership is settled after */
            c->modules[0].builtin_owns = 0;
        }
    }
    ptrset_clear(&memo);
    Py_DECREF(empty);
    tsx_desc_memo_end(st);
    if (gc_was_enabled) {
        PyGC_Enable();
    }
    return (PyObject *)c;
error:
    ptrset_clear(&memo);
    Py_XDECREF(empty);
    tsx_desc_memo_end(st);
    Py_DECREF(c);
    if (gc_was_enabled) {
        PyGC_Enable();
    }
    return NULL;
}

static PyObject *
module_at(tsx_crawl *c, Py_ssize_t i)
{
    return PyTuple_GET_ITEM(PyList_GET_ITEM(c->all, i), 1);
}

/* Whether `module.training` is a plain entry of the instance dict (no
 * data descriptor on the class shadows it). */
static bool
flag_in_dict(tsx_state *st, PyObject *module)
{
    PyObject *descr = _PyType_Lookup(Py_TYPE(module), st->s_training);
    PyObject *dict;
    int found = 0;
    if (descr != NULL && Py_TYPE(descr)->tp_descr_set != NULL) {
        return false;
    }
    dict = PyObject_GenericGetDict(module, NULL);
    if (dict != NULL) {
        found = PyDict_Contains(dict, st->s_training);
        Py_DECREF(dict);
    }
    PyErr_Clear();
    return found == 1;
}

/* Removes hooks and restores training flags; keeps going on errors and
 * reports the first one (an exception already set wins). */
static int
uninstall(tsx_crawl *c)
{
    PyObject *exc = tsx_fetch();
    PyObject *first = NULL;
    Py_ssize_t n;
#define KEEP_FIRST()                 \
    do {                             \
        if (PyErr_Occurred()) {      \
            if (first == NULL) {     \
                first = tsx_fetch(); \
            }                        \
            PyErr_Clear();           \
        }                            \
    } while (0)
    for (size_t i = 0; i < c->nmodules; i++) {
        module_entry *e = &c->modules[i];
        if (e->wrapper != NULL) {
            /* Put back what was there, less the wrappers of crawls that
             * ended meanwhile (crawls of one module in two threads can end
             * in any order); a forward the caller set meanwhile stays. */
            PyObject *now = PyDict_GetItemWithError(e->dict, c->st->s_forward);
            PyObject *prev = e->prev_forward;
            while (prev != NULL && Py_IS_TYPE(prev, c->st->hook_type)
                   && (((tsx_hook *)prev)->crawl == NULL
                       || !((tsx_hook *)prev)->crawl->installed)) {
                prev = ((tsx_hook *)prev)->patched
                           ? ((tsx_hook *)prev)->forward
                           : NULL;
            }
            if (now == e->wrapper) {
                (void)(prev != NULL
                           ? PyDict_SetItem(e->dict, c->st->s_forward, prev)
                           : PyDict_DelItem(e->dict, c->st->s_forward));
            }
            KEEP_FIRST();
        }
        Py_CLEAR(e->wrapper);
        Py_CLEAR(e->prev_forward);
        Py_CLEAR(e->dict);
        e->wrap = false;
        for (int k = 0; k < 5; k++) {
            PyObject *id = e->hook_ids[k < 2 ? 0 : 1];
            if (e->hook_dicts[k] != NULL && id != NULL
                && PyObject_DelItem(e->hook_dicts[k], id) < 0) {
                if (PyErr_ExceptionMatches(PyExc_KeyError)) {
                    PyErr_Clear();
                }
                KEEP_FIRST();
            }
            Py_CLEAR(e->hook_dicts[k]);
        }
        Py_CLEAR(e->hook_ids[0]);
        Py_CLEAR(e->hook_ids[1]);
    }
    n = PyList_GET_SIZE(c->handles);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyObject_CallMethodNoArgs(PyList_GET_ITEM(c->handles, i),
                                                c->st->s_remove);
        Py_XDECREF(r);
        KEEP_FIRST();
    }
    if (PyList_SetSlice(c->handles, 0, n, NULL) < 0) {
        PyErr_Clear();
    }
    if (c->flags != NULL) {
        /* Restore only what changed. A flag that lives in the instance
         * dict (every plain nn.Module) is written there by the generic
         * setter: no Python code (nn.Module.__setattr__) runs, so a Ctrl-C
         * cannot land between two modules and leave one in eval. Elsewhere
         * (TorchScript keeps it in the C++ module, a property may hold it)
         * the module's own setter writes it. A flag install did not save
         * (it failed while saving them) is left alone. */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(c->flags); i++) {
            PyObject *m = module_at(c, i);
            PyObject *saved = PyList_GET_ITEM(c->flags, i);
            PyObject *now =
                saved ? PyObject_GetAttr(m, c->st->s_training) : NULL;
            if (saved != NULL && now != saved) {
                PyErr_Clear();
                if ((flag_in_dict(c->st, m)
                         ? PyObject_GenericSetAttr(m, c->st->s_training, saved)
                         : PyObject_SetAttr(m, c->st->s_training, saved))
                    < 0) {
                    KEEP_FIRST();
                }
            }
            Py_XDECREF(now);
        }
        Py_CLEAR(c->flags);
    }
    while (c->open) {
        Py_XDECREF(c->opened[--c->open].handled);
    }
    if (c->counter != NULL) {
        PyObject *r = PyObject_CallMethod(c->counter, "_attach", "O", Py_None);
        Py_XDECREF(r);
        KEEP_FIRST();
        Py_CLEAR(c->counter);
    }
#undef KEEP_FIRST
    c->installed = false;
    if (exc != NULL) {
        Py_XDECREF(first);
        tsx_restore(exc);
        return -1;
    }
    if (first != NULL) {
        tsx_restore(first);
        return -1;
    }
    return 0;
}

static const char *const hook_dict_names[5] = {
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called"};

/* Inserts the hooks straight into the module's hook dicts, as
 * register_forward_(pre_)hook does, with ids reserved from
 * RemovableHandle.next_id. Returns 0, or 1 when this PyTorch lays its hooks
 * out differently (the caller falls back to the public API), or -1. */
static int
install_fast(tsx_crawl *c)
{
    PyObject *next = NULL, *base = NULL;
    long long first;
    for (size_t i = 0; i < c->nmodules; i++) {
        for (int k = 0; k < 5 && !c->modules[i].wrap; k++) {
            PyObject *d;
            if (tsx_optional_attr(c->modules[i].module, hook_dict_names[k], &d)
                < 0) {
                return -1;
            }
            if (d == NULL || !PyDict_Check(d)) {
                Py_XDECREF(d);
                return 1;
            }
            Py_DECREF(d);
        }
    }
    next = tsx_getattr(c->st->removable_handle, "next_id");
    if (next == NULL || !PyLong_Check(next)) {
        Py_XDECREF(next);
        PyErr_Clear();
        return 1;
    }
    first = PyLong_AsLongLong(next);
    Py_DECREF(next);
    if (first == -1 && PyErr_Occurred()) {
        return -1;
    }
    base = PyLong_FromLongLong(first + 2 * (long long)c->nmodules);
    if (base == NULL
        || PyObject_SetAttrString(c->st->removable_handle, "next_id", base)
               < 0) {
        Py_XDECREF(base);
        return -1;
    }
    Py_DECREF(base);
    for (size_t i = 0; i < c->nmodules; i++) {
        module_entry *e = &c->modules[i];
        if (e->wrap) {
            continue;
        }
        PyObject *pre = hook_new(c, (int)i, HOOK_PRE, NULL);
        PyObject *post = pre ? hook_new(c, (int)i, HOOK_POST, NULL) : NULL;
        int rc = post ? 0 : -1;
        e->hook_ids[0] = PyLong_FromLongLong(first + 2 * (long long)i);
        e->hook_ids[1] = PyLong_FromLongLong(first + 2 * (long long)i + 1);
        for (int k = 0; rc == 0 && k < 5; k++) {
            e->hook_dicts[k] = tsx_getattr(e->module, hook_dict_names[k]);
            if (e->hook_dicts[k] == NULL
                || e->hook_ids[k < 2 ? 0 : 1] == NULL) {
                rc = -1;
                break;
            }
            rc = PyObject_SetItem(e->hook_dicts[k],
                                  e->hook_ids[k < 2 ? 0 : 1],
                                  k == 0   ? pre
                                  : k == 2 ? post
                                           : Py_True);
        }
        Py_XDECREF(pre);
        Py_XDECREF(post);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

static int
install_public(tsx_crawl *c)
{
    tsx_state *st = c->st;
    PyObject *kw = Py_BuildValue("{s:O}", "with_kwargs", Py_True);
    int rc = kw ? 0 : -1;
    for (int post = 0; rc == 0 && post < 2; post++) {
        if (post && PyDict_SetItem(kw, st->s_always_call, Py_True) < 0) {
            rc = -1;
        }
        for (size_t i = 0; rc == 0 && i < c->nmodules; i++) {
            if (c->modules[i].wrap) {
                continue;
            }
            PyObject *hook =
                hook_new(c, (int)i, post ? HOOK_POST : HOOK_PRE, NULL);
            PyObject *meth = hook ? PyObject_GetAttr(c->modules[i].module,
                                                     post ? st->s_register_post
                                                          : st->s_register_pre)
                                  : NULL;
            PyObject *args = meth ? PyTuple_Pack(1, hook) : NULL;
            PyObject *handle = args ? PyObject_Call(meth, args, kw) : NULL;
            rc = handle ? PyList_Append(c->handles, handle) : -1;
            Py_XDECREF(hook);
            Py_XDECREF(meth);
            Py_XDECREF(args);
            Py_XDECREF(handle);
        }
    }
    Py_XDECREF(kw);
    return rc;
}

/* Whether `module.forward` reads the instance dict first, as a wrapper
 * stored there needs: not when the class makes `forward` a data descriptor
 * (a property) or overrides __getattribute__. Those modules get hooks. */
static bool
instance_forward_wins(tsx_state *st, PyTypeObject *tp)
{
    PyObject *attr = _PyType_Lookup(tp, st->s_forward);
    PyObject *getattribute = _PyType_Lookup(tp, st->s_getattribute);
    return (attr == NULL || Py_TYPE(attr)->tp_descr_set == NULL)
           && getattribute == st->object_getattribute;
}

/* Whether a hook table (NULL: none) holds anything: 1, 0, or -1. */
static int
has_hooks(PyObject *table)
{
    return table != NULL ? PyObject_IsTrue(table) : 0;
}

/* Wraps the forward of every module that can be observed that way (see
 * "hooks and forward wrappers" above); the others get hooks after. A
 * wrapper sees what forward returned, before forward hooks replace it, so a
 * module with forward hooks of its own, or any module while global forward
 * hooks exist, gets hooks too: ours run last and see the call's result. */
static int
install_wrappers(tsx_crawl *c)
{
    tsx_state *st = c->st;
    PyObject *global =
        PyObject_GetAttr(st->nn_module_mod, st->s_global_forward_hooks);
    int any_global = global != NULL ? has_hooks(global) : -1;
    Py_XDECREF(global);
    if (any_global != 0) {
        return any_global < 0 ? -1 : 0;
    }
    for (size_t i = 0; i < c->nmodules; i++) {
        module_entry *e = &c->modules[i];
        PyTypeObject *tp = Py_TYPE(e->module);
        PyObject *forward, *own_hooks;
        int rc;
        if (PyType_IsSubtype(tp, (PyTypeObject *)st->encoder_layer)
            || PyType_IsSubtype(tp, (PyTypeObject *)st->script_module)
            || !instance_forward_wins(st, tp)) {
            continue;
        }
        e->dict = PyObject_GenericGetDict(e->module, NULL);
        if (e->dict == NULL || !PyDict_Check(e->dict)) {
            if (e->dict == NULL
                && !PyErr_ExceptionMatches(PyExc_AttributeError)) {
                return -1;
            }
            PyErr_Clear(); /* no instance dict: hooks */
            Py_CLEAR(e->dict);
            continue;
        }
        own_hooks =
            Py_XNewRef(PyDict_GetItemWithError(e->dict, st->s_forward_hooks));
        rc =
            own_hooks != NULL || !PyErr_Occurred() ? has_hooks(own_hooks) : -1;
        Py_XDECREF(own_hooks);
        if (rc != 0) {
            Py_CLEAR(e->dict);
            if (rc < 0) {
                return -1;
            }
            continue;
        }
        e->prev_forward =
            Py_XNewRef(PyDict_GetItemWithError(e->dict, st->s_forward));
        if (e->prev_forward == NULL && PyErr_Occurred()) {
            return -1;
        }
        forward = e->prev_forward != NULL
                      ? Py_NewRef(e->prev_forward)
                      : PyObject_GetAttr(e->module, st->s_forward);
        e->wrapper =
            forward ? hook_new(c, (int)i, HOOK_FORWARD, forward) : NULL;
        Py_XDECREF(forward);
        if (e->wrapper != NULL) {
            ((tsx_hook *)e->wrapper)->patched = e->prev_forward != NULL;
        }
        if (e->wrapper == NULL
            || PyDict_SetItem(e->dict, st->s_forward, e->wrapper) < 0) {
            return -1;
        }
        e->wrap = true;
    }
    return 0;
}

static PyObject *
crawl_install(tsx_crawl *c, PyObject *args)
{
    tsx_state *st = c->st;
    Py_ssize_t n = PyList_GET_SIZE(c->all);
    bool any_training = false;
    PyObject *counter;
    int rc, evaluate = 1;
    if (!PyArg_ParseTuple(args, "O|p:install", &counter, &evaluate)) {
        return NULL;
    }
    if (c->installed) {
        PyErr_SetString(PyExc_RuntimeError, "the crawl is already installed");
        return NULL;
    }
    c->installed = true;
    /* Every module's flag, hooked or not, so that eval() is undone. An
     * observing install (measure_flops(modules=...)) changes no flag and
     * restores none: the workload's own train()/eval() stays. */
    c->flags = PyList_New(evaluate ? n : 0);
    if (c->flags == NULL) {
        goto error;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(c->flags); i++) {
        PyObject *flag = PyObject_GetAttr(module_at(c, i), st->s_training);
        if (flag == NULL) {
            goto error;
        }
        any_training |= flag != Py_False;
        PyList_SET_ITEM(c->flags, i, flag);
    }
    /* eval() on a model that is already in eval mode changes nothing;
     * measure_flops(modules=...) only observes (evaluate false). */
    if (any_training && evaluate) {
        PyObject *r = PyObject_CallMethodNoArgs(c->root, st->s_eval);
        if (r == NULL) {
            goto error;
        }
        Py_DECREF(r);
    }
    rc = install_wrappers(c);
    if (rc == 0) {
        rc = install_fast(c);
    }
    if (rc == 1) {
        rc = install_public(c);
    }
    if (rc < 0) {
        goto error;
    }
    if (counter != Py_None) {
        PyObject *r =
            PyObject_CallMethod(counter, "_attach", "O", (PyObject *)c);
        if (r == NULL) {
            goto error;
        }
        Py_DECREF(r);
        c->counter = Py_NewRef(counter);
    }
    Py_RETURN_NONE;
error:
    uninstall(c);
    return NULL;
}

static PyObject *
crawl_uninstall(tsx_crawl *c, PyObject *unused)
{
    if (uninstall(c) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Adds str(x) to a set. */
static int
add_str(PyObject *set, PyObject *x)
{
    PyObject *s = PyObject_Str(x);
    int rc = s ? PySet_Add(set, s) : -1;
    Py_XDECREF(s);
    return rc;
}

static PyObject *
sorted_list(PyObject *set)
{
    PyObject *list = PySequence_List(set);
    if (list != NULL && PyList_Sort(list) < 0) {
        Py_CLEAR(list);
    }
    return list;
}

typedef struct totals_walk {
    tsx_state *st;
    ts_model_totals *totals;
    PyObject *devices, *dtypes;
    ptrset seen;
    bool params;
} totals_walk;

/* Counts one model tensor, the first time the walk meets it. Everything is
 * read now, at report time: a forward may have changed a tensor since its
 * layer's attribution read it (requires_grad_(), .data = ...), and the
 * totals describe the model as parameters()/buffers() show it now. */
static int
total_one(void *ctx, PyObject *x)
{
    totals_walk *w = ctx;
    tsx_state *st = w->st;
    ts_model_totals *t = w->totals;
    PyObject *device;
    const tsx_dtype *info;
    long long numel;
    bool trainable;
    int rc, added = x != Py_None ? ptrset_add(&w->seen, x) : 0;
    if (added <= 0) {
        return added;
    }
    if (tensor_counts(st, x, w->params, &numel, &info, &trainable) < 0) {
        return -1;
    }
    /* is_cpu spares building and printing a torch.device */
    device = PyObject_GetAttr(x, st->s_is_cpu);
    if (device == Py_True) {
        Py_SETREF(device, Py_NewRef(st->s_cpu));
    }
    else if (device != NULL) {
        Py_SETREF(device, PyObject_GetAttr(x, st->s_device));
    }
    rc = device != NULL && add_str(w->devices, device) == 0
                 && PySet_Add(w->dtypes, info->name) == 0
             ? 0
             : -1;
    Py_XDECREF(device);
    if (rc == 0) {
        add_counts(&t->trainable,
                   &t->frozen,
                   &t->param_bytes,
                   &t->buffer_elements,
                   &t->buffer_bytes,
                   w->params,
                   numel,
                   info,
                   trainable);
    }
    return rc;
}

/* Appends the modules of a tree to `list`, each once, in the order of
 * named_modules(). */
static int
collect_modules(PyObject *module, ptrset *seen, PyObject *list, int depth)
{
    PyObject *children, *key, *value;
    Py_ssize_t pos = 0;
    int rc = ptrset_add(seen, module);
    if (rc <= 0) {
        return rc; /* met before (0), or an error */
    }
    if (depth > 10000) {
        PyErr_SetString(PyExc_RecursionError, "module tree is too deep");
        return -1;
    }
    children =
        PyList_Append(list, module) == 0 ? tsx_child_dict(module) : NULL;
    if (children == NULL) {
        return -1;
    }
    rc = 0;
    while (rc == 0 && PyDict_Next(children, &pos, &key, &value)) {
        if (value != Py_None) {
            /* reading _modules may run Python code that edits the dict */
            Py_INCREF(value);
            rc = collect_modules(value, seen, list, depth + 1);
            Py_DECREF(value);
        }
    }
    Py_DECREF(children);
    return rc < 0 ? -1 : 0;
}

/* Model totals over unique parameters and buffers (every module's own
 * _parameters, then every module's own _buffers, in module order: what
 * parameters()/buffers() yield), and the devices and dtypes they live on. */
static int
model_totals(tsx_crawl *c,
             ts_model_totals *t,
             PyObject *devices,
             PyObject *dtypes)
{
    totals_walk w = {c->st, t, devices, dtypes, {NULL, 0, 0}, true};
    int rc = 0;
    memset(t, 0, sizeof *t);
    /* the tree as it is now: a forward may have added or removed
     * submodules since the crawl listed them */
    ptrset seen = {NULL, 0, 0};
    PyObject *modules = PyList_New(0);
    rc = modules != NULL ? collect_modules(c->root, &seen, modules, 0) : -1;
    ptrset_clear(&seen);
    for (int pass = 0; rc == 0 && pass < 2; pass++) {
        const char *attr = pass == 0 ? "_parameters" : "_buffers";
        w.params = pass == 0;
        for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(modules); i++) {
            PyObject *own = tsx_getattr(PyList_GET_ITEM(modules, i), attr);
            if (own == NULL) {
                PyErr_Clear(); /* not a module with tensors of its own */
                continue;
            }
            rc = each_tensor(own, total_one, &w);
            Py_DECREF(own);
        }
    }
    Py_XDECREF(modules);
    ptrset_clear(&w.seen);
    return rc;
}

/* report(context, source, args, kwargs, counter, torch_version): the
 * AnalysisReport, written by the engine straight into Python objects. */
static PyObject *
crawl_report(tsx_crawl *c, PyObject *args)
{
    PyObject *context, *source, *call_args, *call_kwargs, *counter;
    PyObject *torch_version, *result = NULL;
    PyObject *devices = NULL, *dtypes = NULL, *dl = NULL, *tl = NULL;
    json_t *jctx = NULL, *jin = NULL, *jcall = NULL, *jflops = NULL;
    const char *version;
    ts_model_totals totals;
    ts_emitter e;
    tsx_pybuilder *b;
    if (!PyArg_ParseTuple(args,
                          "O!UO!O!OU:report",
                          &PyDict_Type,
                          &context,
                          &source,
                          &PyTuple_Type,
                          &call_args,
                          &PyDict_Type,
                          &call_kwargs,
                          &counter,
                          &torch_version)) {
        return NULL;
    }
    if (counter != Py_None
        && !PyObject_TypeCheck(counter, c->st->counter_type)) {
        PyErr_SetString(PyExc_TypeError, "counter must be a Counter or None");
        return NULL;
    }
    version = PyUnicode_AsUTF8(torch_version);
    devices = PySet_New(NULL);
    dtypes = PySet_New(NULL);
    if (version == NULL || devices == NULL || dtypes == NULL
        || model_totals(c, &totals, devices, dtypes) < 0) {
        goto done;
    }
    dl = sorted_list(devices);
    tl = dl ? sorted_list(dtypes) : NULL;
    if (tl == NULL || PyDict_SetItemString(context, "devices", dl) < 0
        || PyDict_SetItemString(context, "dtypes", tl) < 0) {
        goto done;
    }
    jctx = tsx_to_json(context, "context");
    jcall = jctx ? tsx_describe_call(c->st, call_args, call_kwargs, NULL, NULL)
                 : NULL;
    if (jcall == NULL) {
        goto done;
    }
    jin = json_pack("{s:s}", "source", PyUnicode_AsUTF8(source));
    if (jin == NULL || json_object_update(jin, jcall)) {
        PyErr_NoMemory();
        goto done;
    }
    jflops = counter != Py_None ? tsx_counter_flop_report(counter, version)
                                : ts_flop_report_not_requested(version);
    if (jflops == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        goto done;
    }
    b = tsx_pybuilder_new(&e, c->st);
    if (b == NULL) {
        goto done;
    }
    ts_session_emit_report(c->session, &e, jctx, jin, &totals, jflops);
    result = tsx_pybuilder_finish(b);
done:
    json_decref(jctx);
    json_decref(jin);
    json_decref(jcall);
    json_decref(jflops);
    Py_XDECREF(devices);
    Py_XDECREF(dtypes);
    Py_XDECREF(dl);
    Py_XDECREF(tl);
    return result;
}

static PyObject *
crawl_by_path(tsx_crawl *c, PyObject *unused)
{
    json_t *by_path = ts_session_op_flops_by_path(c->session);
    PyObject *result;
    if (by_path == NULL) {
        return PyErr_NoMemory();
    }
    result = tsx_from_json(c->st, by_path);
    json_decref(by_path);
    return result;
}

static int
crawl_traverse(tsx_crawl *c, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(c));
    Py_VISIT(c->root);
    Py_VISIT(c->all);
    Py_VISIT(c->flags);
    Py_VISIT(c->handles);
    Py_VISIT(c->counter);
    Py_VISIT(c->handlers);
    Py_VISIT(c->module_call);
    for (size_t i = 0; i < c->nmodules; i++) {
        Py_VISIT(c->modules[i].estimate);
        Py_VISIT(c->modules[i].identity);
        Py_VISIT(c->modules[i].module);
        Py_VISIT(c->modules[i].params);
        Py_VISIT(c->modules[i].buffers);
        Py_VISIT(c->modules[i].dict);
        Py_VISIT(c->modules[i].prev_forward);
        Py_VISIT(c->modules[i].wrapper);
        for (int k = 0; k < 5; k++) {
            Py_VISIT(c->modules[i].hook_dicts[k]);
        }
    }
    return 0;
}

static int
crawl_clear(tsx_crawl *c)
{
    Py_CLEAR(c->root);
    Py_CLEAR(c->all);
    Py_CLEAR(c->flags);
    Py_CLEAR(c->handles);
    Py_CLEAR(c->counter);
    Py_CLEAR(c->handlers);
    Py_CLEAR(c->module_call);
    for (size_t i = 0; i < c->nmodules; i++) {
        Py_CLEAR(c->modules[i].estimate);
        Py_CLEAR(c->modules[i].identity);
        Py_CLEAR(c->modules[i].module);
        Py_CLEAR(c->modules[i].params);
        Py_CLEAR(c->modules[i].buffers);
        Py_CLEAR(c->modules[i].dict);
        Py_CLEAR(c->modules[i].prev_forward);
        Py_CLEAR(c->modules[i].wrapper);
        for (int k = 0; k < 5; k++) {
            Py_CLEAR(c->modules[i].hook_dicts[k]);
        }
        Py_CLEAR(c->modules[i].hook_ids[0]);
        Py_CLEAR(c->modules[i].hook_ids[1]);
    }
    return 0;
}

static void
crawl_dealloc(tsx_crawl *c)
{
    PyTypeObject *tp = Py_TYPE(c);
    PyObject_GC_UnTrack(c);
    while (c->open) {
        Py_XDECREF(c->opened[--c->open].handled);
    }
    crawl_clear(c);
    PyMem_Free(c->modules);
    PyMem_Free(c->opened);
    ptrset_clear(&c->seen);
    ts_session_free(c->session);
    tp->tp_free(c);
    Py_DECREF(tp);
}

/* The deepest row the forward can give: the depth of the deepest observed
 * module (path components; the root is 0). Modules created during the
 * forward may go deeper. */
static PyObject *
crawl_depth(tsx_crawl *c, PyObject *unused)
{
    Py_ssize_t deepest = 0;
    for (size_t i = 0; i < c->nmodules; i++) {
        PyObject *path = PyTuple_GET_ITEM(PyList_GET_ITEM(c->all, i), 0);
        Py_ssize_t n = PyUnicode_GET_LENGTH(path), depth = n > 0;
        Py_ssize_t from = 0, dot;
        while (n > 0
               && (dot = PyUnicode_FindChar(path, '.', from, n, 1)) >= 0) {
            depth++;
            from = dot + 1;
        }
        if (n > 0 && PyErr_Occurred()) {
            return NULL;
        }
        deepest = depth > deepest ? depth : deepest;
    }
    return PyLong_FromSsize_t(deepest);
}

static PyMethodDef crawl_methods[] = {
    {"install",
     (PyCFunction)crawl_install,
     METH_VARARGS,
     "install(counter, evaluate=True): save training flags, switch to eval "
     "(unless evaluate is false), add hooks."},
    {"depth",
     (PyCFunction)crawl_depth,
     METH_NOARGS,
     "depth() -> the depth of the deepest module the forward can call (the "
     "root is 0)"},
    {"operator_flops_by_path",
     (PyCFunction)crawl_by_path,
     METH_NOARGS,
     "operator_flops_by_path() -> {path: operator FLOPs of that module's "
     "own work, summed over its calls}"},
    {"uninstall",
     (PyCFunction)crawl_uninstall,
     METH_NOARGS,
     "uninstall(): remove hooks and restore every training flag."},
    {"report",
     (PyCFunction)crawl_report,
     METH_VARARGS,
     "report(context, source, args, kwargs, counter, torch_version) -> "
     "dict"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot crawl_slots[] = {
    {Py_tp_new, crawl_new},
    {Py_tp_dealloc, crawl_dealloc},
    {Py_tp_traverse, crawl_traverse},
    {Py_tp_clear, crawl_clear},
    {Py_tp_methods, crawl_methods},
    {Py_tp_doc, "Crawl(module, full=True): one analysis of a module."},
    {0, NULL},
};

PyType_Spec tsx_crawl_spec = {
    .name = "torchscan._engine.Crawl",
    .basicsize = sizeof(tsx_crawl),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = crawl_slots,
};
