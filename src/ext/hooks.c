/* The crawl's observers (hooks.h): the Hook type (forward pre-hooks,
 * always-called forward hooks and forward wrappers, all C callables),
 * their installation and removal, and the save and restore of training
 * flags. What a call records is observe.c's. */
#include "fail.h"
#include "hooks.h"

#include <stddef.h>
#include <structmember.h>

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
        tsx_fail(PyExc_TypeError,
                 "torchscan hook called with unexpected arguments");
        return NULL;
    }
    if (h->crawl == NULL || !h->crawl->installed
        || h->crawl->thread != PyThread_get_thread_ident()) {
        /* a deep copy's, left behind by a caller, or another thread's call */
        Py_RETURN_NONE;
    }
    PyObject *hargs = PyTuple_Check(args[1]) ? args[1] : NULL;
    PyObject *hkwargs = PyDict_Check(args[2]) ? args[2] : NULL;
    rc = post ? tsx_call_end(h->crawl, h->module, hargs, hkwargs, args[3], -1)
              : tsx_call_begin(h->crawl, h->module, hargs, hkwargs, true);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The forward wrapper: begin, the wrapped forward, end (also when it
 * raises: the exception propagates unchanged). After uninstall (a caller
 * kept the attribute), and for calls of another thread, it only forwards. */
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
        tsx_fail(PyExc_RuntimeError, "torchscan wrapper was cleared");
        return NULL;
    }
    if (c == NULL || !c->installed
        || c->thread != PyThread_get_thread_ident()) {
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
    if (tsx_call_begin(c, h->module, targs, tkwargs, false) < 0) {
        goto done;
    }
    out = PyObject_Vectorcall(h->forward, args, nargsf, kwnames);
    if (out == NULL) {
        PyObject *exc = tsx_fetch();
        if (tsx_call_end(c, h->module, targs, tkwargs, NULL, 1) < 0) {
            PyErr_Clear(); /* the forward's exception wins */
        }
        if (exc != NULL) {
            tsx_restore(exc);
        }
        else if (!PyErr_Occurred()) {
            tsx_fail(PyExc_SystemError,
                     "forward returned NULL without an exception");
        }
    }
    else if (tsx_call_end(c, h->module, targs, tkwargs, out, 0) < 0) {
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
            tsx_fail(PyExc_RuntimeError, "torchscan wrapper was cleared");
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

/* Keeps the first error of an uninstall (the others are dropped). */
static void
keep_first(PyObject **first)
{
    if (PyErr_Occurred()) {
        if (*first == NULL) {
            *first = tsx_fetch();
        }
        PyErr_Clear();
    }
}

/* Puts back what was there before the wrapper, less the wrappers of crawls
 * that ended meanwhile (crawls of one module in two threads can end in any
 * order); a forward the caller set meanwhile stays. */
static void
remove_wrapper(tsx_crawl *c, module_entry *e, PyObject **first)
{
    tsx_state *st = c->st;
    if (e->wrapper != NULL) {
        PyObject *now = PyDict_GetItemWithError(e->dict, st->s_forward);
        PyObject *prev = e->prev_forward;
        while (prev != NULL && Py_IS_TYPE(prev, st->hook_type)
               && (((tsx_hook *)prev)->crawl == NULL
                   || !((tsx_hook *)prev)->crawl->installed)) {
            prev = ((tsx_hook *)prev)->patched ? ((tsx_hook *)prev)->forward
                                               : NULL;
        }
        if (now == e->wrapper) {
            (void)(prev != NULL ? PyDict_SetItem(e->dict, st->s_forward, prev)
                                : PyDict_DelItem(e->dict, st->s_forward));
        }
        keep_first(first);
    }
    Py_CLEAR(e->wrapper);
    Py_CLEAR(e->prev_forward);
    Py_CLEAR(e->dict);
    e->wrap = false;
}

/* Deletes the hooks install_fast inserted into the module's hook dicts. */
static void
remove_hooks(module_entry *e, PyObject **first)
{
    for (int k = 0; k < 5; k++) {
        PyObject *id = e->hook_ids[k < 2 ? 0 : 1];
        if (e->hook_dicts[k] != NULL && id != NULL
            && PyObject_DelItem(e->hook_dicts[k], id) < 0) {
            if (PyErr_ExceptionMatches(PyExc_KeyError)) {
                PyErr_Clear();
            }
            keep_first(first);
        }
        Py_CLEAR(e->hook_dicts[k]);
    }
    Py_CLEAR(e->hook_ids[0]);
    Py_CLEAR(e->hook_ids[1]);
}

/* Removes the hooks of the public-API fallback (install_public). A
 * RemovableHandle.remove() that fails part-way (the hook deleted, its
 * with_kwargs or always_call entry not) is called once more: it deletes
 * only what is still there. The first error is kept. */
static void
remove_handles(tsx_crawl *c, PyObject **first)
{
    Py_ssize_t n = PyList_GET_SIZE(c->handles);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *handle = PyList_GET_ITEM(c->handles, i);
        PyObject *r = PyObject_CallMethodNoArgs(handle, c->st->s_remove);
        if (r == NULL) {
            keep_first(first);
            r = PyObject_CallMethodNoArgs(handle, c->st->s_remove);
        }
        Py_XDECREF(r);
        keep_first(first);
    }
    if (PyList_SetSlice(c->handles, 0, n, NULL) < 0) {
        PyErr_Clear();
    }
}

/* Restores the training flags that changed. A flag that lives in the
 * instance dict (every plain nn.Module) is written there by the generic
 * setter: no Python code (nn.Module.__setattr__) runs, so a Ctrl-C cannot
 * land between two modules and leave one in eval. Elsewhere (TorchScript
 * keeps it in the C++ module, a property may hold it) the module's own
 * setter writes it. A flag install did not save (it failed while saving
 * them) is left alone. */
static void
restore_flags(tsx_crawl *c, PyObject **first)
{
    tsx_state *st = c->st;
    if (c->flags == NULL) {
        return;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(c->flags); i++) {
        PyObject *m = tsx_crawl_module_at(c, i);
        PyObject *saved = PyList_GET_ITEM(c->flags, i);
        PyObject *now = saved ? PyObject_GetAttr(m, st->s_training) : NULL;
        if (saved != NULL && now != saved) {
            PyErr_Clear();
            if ((flag_in_dict(st, m)
                     ? PyObject_GenericSetAttr(m, st->s_training, saved)
                     : PyObject_SetAttr(m, st->s_training, saved))
                < 0) {
                keep_first(first);
            }
        }
        Py_XDECREF(now);
    }
    Py_CLEAR(c->flags);
}

/* Ends this crawl's claims on its modules: the keys it inserted, kept in
 * c->claims, so that nothing is allocated here (a claim left behind would
 * refuse every later crawl of the model). */
static void
release_modules(tsx_crawl *c)
{
    PyObject *observed = c->st->observed;
    for (Py_ssize_t i = 0; c->claims != NULL && i < c->nclaims; i++) {
        PyObject *key = PyList_GET_ITEM(c->claims, i);
        PyObject *owner = PyDict_GetItemWithError(observed, key);
        if (owner != NULL
            && PyLong_AsVoidPtr(PyTuple_GET_ITEM(owner, 0)) == (void *)c) {
            (void)PyDict_DelItem(observed, key);
        }
        PyErr_Clear(); /* a key that is there: neither lookup nor delete
                          can fail */
    }
    Py_CLEAR(c->claims);
    c->nclaims = 0;
}

/* The error of a module another crawl observes; `path` is the module's
 * path in this crawl ("" for its root). */
static void
refuse_observed(PyObject *owner, PyObject *path)
{
    unsigned long thread = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(owner, 1));
    PyObject *where = PyErr_Occurred() ? NULL
                      : thread == PyThread_get_thread_ident()
                          ? PyUnicode_FromString("in this thread")
                          : PyUnicode_FromFormat("in thread %lu", thread);
    PyObject *at = where == NULL ? NULL
                   : PyUnicode_GET_LENGTH(path)
                       ? PyUnicode_FromFormat(", at its submodule %R", path)
                       : PyUnicode_FromString("");
    if (at != NULL) {
        tsx_fail(PyExc_RuntimeError,
                 "module is already observed by another TorchScan call "
                 "(%U%U): calls on one model, or on models that share "
                 "submodules, must not overlap; run them one after "
                 "another, or give each thread its own copy "
                 "(copy.deepcopy)",
                 where,
                 at);
    }
    Py_XDECREF(where);
    Py_XDECREF(at);
}

/* Claims every module of the crawl, or refuses when another installed
 * crawl (this thread's or another's) observes one of them: two sets of
 * hooks and two saved training flags on one module would mix both calls'
 * records and leave the flags of whichever ended last. 0, or -1 with an
 * exception (the claims made so far are in c->claims for
 * release_modules). */
static int
claim_modules(tsx_crawl *c)
{
    Py_ssize_t n = PyList_GET_SIZE(c->all);
    PyObject *owner = Py_BuildValue("(Nk)", PyLong_FromVoidPtr(c), c->thread);
    int rc;
    c->nclaims = 0;
    c->claims = owner != NULL ? PyList_New(n) : NULL;
    rc = c->claims != NULL ? 0 : -1;
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *entry = PyList_GET_ITEM(c->all, i);
        PyObject *key = PyLong_FromVoidPtr(PyTuple_GET_ITEM(entry, 1));
        PyObject *other =
            key ? PyDict_SetDefault(c->st->observed, key, owner) : NULL;
        if (other == owner) {
            /* the list holds the key; the empty slots are NULL */
            PyList_SET_ITEM(c->claims, c->nclaims++, key);
            continue;
        }
        if (other != NULL) {
            refuse_observed(other, PyTuple_GET_ITEM(entry, 0));
        }
        Py_XDECREF(key);
        rc = -1;
    }
    Py_XDECREF(owner);
    return rc;
}

void
tsx_hooks_release(tsx_crawl *c)
{
    PyObject *exc = tsx_fetch();
    release_modules(c);
    if (exc != NULL) {
        tsx_restore(exc);
    }
}

int
tsx_hooks_uninstall(tsx_crawl *c)
{
    PyObject *exc = tsx_fetch();
    PyObject *first = NULL;
    for (size_t i = 0; i < c->nmodules; i++) {
        remove_wrapper(c, &c->modules[i], &first);
        remove_hooks(&c->modules[i], &first);
    }
    remove_handles(c, &first);
    restore_flags(c, &first);
    release_modules(c);
    tsx_calls_clear(c);
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
            if (tsx_optional_attr(
                    c->st, c->modules[i].module, hook_dict_names[k], &d)
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
    next = tsx_getattr(c->st, c->st->removable_handle, "next_id");
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
            e->hook_dicts[k] =
                tsx_getattr(c->st, e->module, hook_dict_names[k]);
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

/* Deletes the entries of `hook` from a module's tables after its
 * registration failed part-way: register_forward_(pre_)hook may have
 * inserted it before it failed (the with_kwargs or always_call entry, the
 * handle), or the handle may have been lost when keeping it failed. Best
 * effort, with the registration's error kept: a hook left behind is inert
 * once the crawl is uninstalled. */
static void
unregister_partial(tsx_crawl *c, PyObject *module, PyObject *hook, int post)
{
    static const char *const extra[2][2] = {
        {"_forward_pre_hooks_with_kwargs", NULL},
        {"_forward_hooks_with_kwargs", "_forward_hooks_always_called"}};
    PyObject *exc = tsx_fetch();
    PyObject *table =
        tsx_getattr(c->st, module, hook_dict_names[post ? 2 : 0]);
    PyObject *items = table ? PyMapping_Items(table) : NULL;
    for (Py_ssize_t i = 0; items != NULL && i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        PyObject *key = PyTuple_GET_ITEM(item, 0);
        if (PyTuple_GET_ITEM(item, 1) != hook) {
            continue;
        }
        (void)PyObject_DelItem(table, key);
        for (int k = 0; k < 2 && extra[post][k] != NULL; k++) {
            PyObject *d = tsx_getattr(c->st, module, extra[post][k]);
            if (d != NULL) {
                (void)PyObject_DelItem(d, key);
                Py_DECREF(d);
            }
        }
        PyErr_Clear();
    }
    PyErr_Clear();
    Py_XDECREF(items);
    Py_XDECREF(table);
    if (exc != NULL) {
        tsx_restore(exc);
    }
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
            if (rc < 0 && hook != NULL) {
                unregister_partial(c, c->modules[i].module, hook, post);
            }
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

/* Saves every module's flag, hooked or not, so that eval() is undone. An
 * observing install (measure_flops(modules=...)) changes no flag and
 * restores none: the workload's own train()/eval() stays. eval() on a
 * model that is already in eval mode changes nothing. */
static int
save_flags_and_evaluate(tsx_crawl *c, bool evaluate)
{
    tsx_state *st = c->st;
    bool any_training = false;
    c->flags = PyList_New(evaluate ? PyList_GET_SIZE(c->all) : 0);
    if (c->flags == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(c->flags); i++) {
        PyObject *flag =
            PyObject_GetAttr(tsx_crawl_module_at(c, i), st->s_training);
        if (flag == NULL) {
            return -1;
        }
        any_training |= flag != Py_False;
        PyList_SET_ITEM(c->flags, i, flag);
    }
    if (any_training && evaluate) {
        PyObject *r = PyObject_CallMethodNoArgs(c->root, st->s_eval);
        if (r == NULL) {
            return -1;
        }
        Py_DECREF(r);
    }
    return 0;
}

int
tsx_hooks_install(tsx_crawl *c, bool evaluate)
{
    int rc;
    c->installed = true;
    c->thread = PyThread_get_thread_ident();
    if (claim_modules(c) < 0 || save_flags_and_evaluate(c, evaluate) < 0) {
        return -1;
    }
    rc = install_wrappers(c);
    if (rc == 0) {
        rc = install_fast(c);
    }
    if (rc == 1) {
        rc = install_public(c);
    }
    return rc < 0 ? -1 : 0;
}
