/* What one module call of a crawl records (observe.h). */
#include "observe.h"

/* Raises for an engine status of the session (convert.c translates). */
static int
session_failed(int status)
{
    tsx_raise_status(status, NULL);
    return -1;
}

/* Reads a module's class and hyperparameters again. */
static int
refresh_module(tsx_crawl *c, int index)
{
    tsx_state *st = c->st;
    PyObject *module = c->modules[index].module, *native_type = NULL;
    const native_class *native = tsx_native_of(st, module, &native_type);
    PyObject *tname = PyType_GetName(Py_TYPE(module));
    ts_module_desc desc;
    int rc = -1;
    if (tname != NULL
        && tsx_module_desc(&c->reader, module, native, native_type, &desc)
               == 0) {
        if (desc.param_numel < 0) {
            desc.param_numel = 0; /* still lazy: count what exists */
        }
        rc = ts_session_update_module(
            c->session, index, PyUnicode_AsUTF8(tname), &desc);
        if (rc != TS_OK) {
            rc = session_failed(rc);
        }
    }
    Py_XDECREF(tname);
    return rc;
}

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
    int t = mode != NULL ? PyObject_IsTrue(mode) : -1, rc;
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
    if (transformer && tsx_transformer_modes(c->st, module, &now) < 0) {
        return -1;
    }
    if (memcmp(&now, desc, sizeof now) != 0
        && (rc = ts_session_update_module(c->session, index, NULL, &now))
               != TS_OK) {
        return session_failed(rc);
    }
    return 0;
}

/* The parameters and buffers a call of module `index` holds: its own, or
 * its whole subtree's for a metric leaf with children. */
static int
attribute_call(tsx_crawl *c, module_entry *e, ts_attribution *a)
{
    if (e->params != NULL) {
        if (tsx_attribute_tensors(c->st,
                                  &c->seen,
                                  e->params,
                                  true,
                                  a,
                                  NULL,
                                  &c->local,
                                  e->module)
                < 0
            || tsx_attribute_tensors(c->st,
                                     &c->seen,
                                     e->buffers,
                                     false,
                                     a,
                                     NULL,
                                     &c->local,
                                     e->module)
                   < 0) {
            return -1;
        }
        return 0;
    }
    for (int pass = 0; pass < 2; pass++) {
        tsx_ptrset modules = {NULL, 0, 0}, tensors = {NULL, 0, 0};
        int rc = tsx_attribute_subtree(c->st,
                                       &c->seen,
                                       e->module,
                                       pass,
                                       &modules,
                                       &tensors,
                                       a,
                                       &c->local);
        tsx_ptrset_clear(&modules);
        tsx_ptrset_clear(&tensors);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* A free slot on the open-call stack, or NULL with an exception. */
static open_call *
push_open_call(tsx_crawl *c)
{
    if (c->open == c->opened_cap) {
        size_t cap = c->opened_cap ? c->opened_cap * 2 : 32;
        open_call *p = PyMem_Realloc(c->opened, cap * sizeof(open_call));
        if (p == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        c->opened = p;
        c->opened_cap = cap;
    }
    return &c->opened[c->open];
}

int
tsx_call_begin(
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
    if (attribute_call(c, e, &a) < 0) {
        return -1;
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
    oc = push_open_call(c);
    if (oc == NULL) {
        json_decref(input);
        return -1;
    }
    /* A caller handler's row owns upfront only what its subtree_metrics
     * declare: the built-in inclusive estimates take over afterwards, for
     * what the handler did not supply (settle_builtin_owner). */
    layer = ts_session_begin_owned_call(
        c->session,
        index,
        input,
        &a,
        e->owns | (e->estimate != NULL ? 0u : e->builtin_owns));
    if (layer < 0) {
        return session_failed(layer);
    }
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

/* This module's own open call, or NULL: a post-hook whose pre-hook never
 * ran (a user pre-hook raised first) finds none. Calls still open above it
 * are closed as failed: their post-hooks never ran (PyTorch skips
 * always_call hooks for a BaseException). -1 with an exception. */
static int
find_open_call(tsx_crawl *c, int index, open_call **found)
{
    *found = NULL;
    for (size_t i = c->open; i-- > 0;) {
        if (c->opened[i].module != index) {
            continue;
        }
        while (c->open > i + 1) {
            open_call *orphan = &c->opened[--c->open];
            int rc;
            Py_CLEAR(orphan->handled);
            rc = ts_session_end_call(
                c->session, orphan->module, NULL, true, NULL);
            if (rc == TS_ENOMEM) {
                return session_failed(rc);
            }
        }
        *found = &c->opened[i];
        break;
    }
    return 0;
}

/* A handler answers first; formulas fill what it left (leaves). Estimates
 * an enclosing owner covers are never asked for. */
static int
run_handler(tsx_crawl *c,
            int index,
            int layer,
            PyObject *args,
            PyObject *kwargs,
            PyObject *output)
{
    module_entry *e = &c->modules[index];
    tsx_handler_call hc = {
        .st = c->st,
        .session = c->session,
        .layer = layer,
        .requested =
            TS_ALL_ESTIMATES & ~ts_session_layer_covered(c->session, layer),
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
    if (!hc.requested) {
        return 0;
    }
    c->handler_calls += index != 0; /* calls below the root */
    return tsx_handler_run(&hc);
}

/* A caller handler ran on a module whose built-in estimates are inclusive
 * (native Transformer family): the built-in answers the estimates the
 * handler did not supply, and those take ownership of the descendants'
 * estimates retroactively (contract 1.3, step 3). What the handler supplied
 * stays its own, and the descendants keep theirs for it. */
static int
settle_builtin_owner(tsx_crawl *c, int index, int layer)
{
    int rc = ts_session_own_retroactively(
        c->session, layer, c->modules[index].builtin_owns);
    return rc != TS_OK ? session_failed(rc) : 0;
}

/* An nn.Transformer root that a handler expanded: a handler that ran
 * inside replaces the inclusive formula; if none ran, the formula stands
 * and owns everything below. */
static int
settle_expanded_root(tsx_crawl *c, int layer)
{
    int rc = c->handler_calls
                 ? ts_session_mark_expanded_boundary(c->session, layer)
                 : ts_session_own_retroactively(
                     c->session, layer, TS_ALL_ESTIMATES);
    return rc != TS_OK ? session_failed(rc) : 0;
}

/* The description a leaf's formulas use for this call: read again when a
 * lazy module materialized its parameters in it, and in the mode the call
 * began in. Borrowed from the session, or NULL with an exception. */
static const ts_module_desc *
leaf_desc(tsx_crawl *c, int index, bool began_training)
{
    const ts_module_desc *desc = ts_session_module_desc(c->session, index);
    int rc;
    if (desc->param_numel < 0) {
        /* A lazy module materialized its parameters (and usually took its
         * concrete class) in this call: read it again. */
        if (refresh_module(c, index) < 0) {
            return NULL;
        }
        desc = ts_session_module_desc(c->session, index);
    }
    if (desc->training != began_training) {
        /* this call's mode at its start (a lazy module read again, or a
         * nested call of the same module, changed the description) */
        ts_module_desc now;
        memcpy(&now, desc, sizeof now);
        now.training = began_training;
        rc = ts_session_update_module(c->session, index, NULL, &now);
        if (rc != TS_OK) {
            session_failed(rc);
            return NULL;
        }
        desc = ts_session_module_desc(c->session, index);
    }
    return desc;
}

/* Records the end of a successful call: output metadata and, on a leaf in
 * full mode, the formulas' inputs (and the masks of a native attention or
 * Transformer call whose token dependencies are wanted). Takes `call` as
 * begun. */
static int
record_output(tsx_crawl *c,
              int index,
              int layer,
              PyObject *args,
              PyObject *kwargs,
              PyObject *output,
              bool began_training,
              ts_module_call *call)
{
    const ts_module_desc *desc;
    bool formulas = c->full && ts_session_module_is_leaf(c->session, index);
    ts_token_call tokens;
    int rc;
    /* the shapes for the formulas (full mode) are read on the way */
    json_t *out_meta =
        c->full ? tsx_describe(c->st, output, &call->output, &call->has_output)
                : tsx_describe(c->st, output, NULL, NULL);
    if (out_meta == NULL) {
        return -1;
    }
    if (formulas) {
        desc = leaf_desc(c, index, began_training);
        if (desc == NULL
            || (call->has_input
                && tsx_fill_call(c->st, desc, args, kwargs, output, call)
                       < 0)) {
            json_decref(out_meta);
            return -1;
        }
        if (call->has_input
            && ts_session_layer_wants_tokens(c->session, layer)) {
            if (tsx_fill_tokens(c->st, desc, args, kwargs, &tokens) < 0) {
                json_decref(out_meta);
                return -1;
            }
            call->tokens = &tokens;
        }
    }
    rc = ts_session_end_call(
        c->session, index, out_meta, false, formulas ? call : NULL);
    /* TS_EINVAL: a call closed that never opened (hooks installed in the
     * middle of a forward); nothing to record. */
    return rc == TS_ENOMEM ? session_failed(rc) : 0;
}

int
tsx_call_end(tsx_crawl *c,
             int index,
             PyObject *args,
             PyObject *kwargs,
             PyObject *output,
             int failed_or_infer)
{
    open_call *oc = NULL;
    bool failed = failed_or_infer > 0, began_training = false;
    ts_module_call call;
    int layer = -1, rc;

    if (find_open_call(c, index, &oc) < 0) {
        return -1;
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
    memset(&call, 0, sizeof call);
    if (oc != NULL) {
        Py_XDECREF(oc->handled);
        call.input = oc->input;
        call.has_input = oc->has_input;
        began_training = oc->training;
        layer = oc->layer;
        c->open--;
    }
    if (c->full && !failed && layer >= 0 && c->modules[index].estimate != NULL
        && (run_handler(c, index, layer, args, kwargs, output) < 0
            || (c->modules[index].builtin_owns
                && settle_builtin_owner(c, index, layer) < 0))) {
        return -1;
    }
    if (c->expanded_root && index == 0 && layer >= 0 && !failed
        && settle_expanded_root(c, layer) < 0) {
        return -1;
    }
    if (!failed) {
        return record_output(
            c, index, layer, args, kwargs, output, began_training, &call);
    }
    rc = ts_session_end_call(c->session, index, NULL, true, NULL);
    /* TS_EINVAL: a call closed that never opened; nothing to record. */
    return rc == TS_ENOMEM ? session_failed(rc) : 0;
}

void
tsx_calls_clear(tsx_crawl *c)
{
    while (c->open) {
        Py_XDECREF(c->opened[--c->open].handled);
    }
}
