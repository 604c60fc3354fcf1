/* The crawl (crawl.h): Crawl(module, full, handlers, module_call) builds
 * the module table once (paths, families and hyperparameters, handlers);
 * install() puts the observers on (hooks.c) and attaches the operator
 * counter through its C interface (counter.h); uninstall() takes them off;
 * report() assembles the AnalysisReport (the engine writes it straight
 * into Python objects, convert.c). Python's torchscan.crawler holds a
 * Crawl; the engine's per-crawl record is its ts_session. */
#include "fail.h"
#include "crawl.h"

#include "torchscan/emit.h"

/* named_modules() in C: pre-order, each module once (first path wins),
 * None children skipped. Appends (path, module) pairs to `out`. */
static int
walk_modules(tsx_state *st,
             PyObject *module,
             PyObject *prefix,
             tsx_ptrset *memo,
             PyObject *out,
             int depth)
{
    PyObject *children, *key, *value, *pair;
    Py_ssize_t pos = 0;
    int added = tsx_ptrset_add(memo, module);
    if (added <= 0) {
        return added;
    }
    if (depth > 10000) {
        tsx_fail(PyExc_RecursionError, "module tree is too deep");
        return -1;
    }
    pair = PyTuple_Pack(2, prefix, module);
    if (pair == NULL || PyList_Append(out, pair) < 0) {
        Py_XDECREF(pair);
        return -1;
    }
    Py_DECREF(pair);
    children = tsx_child_dict(st, module);
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
        rc = path ? walk_modules(st, value, path, memo, out, depth + 1) : -1;
        Py_XDECREF(path);
        if (rc < 0) {
            Py_DECREF(children);
            return -1;
        }
    }
    Py_DECREF(children);
    return 0;
}


/* What the construction of a crawl keeps while it runs: the descriptions
 * read so far (a native Transformer reads its sub-layers', which get rows
 * of their own too) and the types resolved so far. It lives on the stack of
 * crawl_new, for one crawl; nothing of it is in the module state. */
typedef struct type_memo {
    PyTypeObject *type; /* borrowed: alive while the model holds it */
    const native_class *native;
    PyObject *native_type;
    PyObject *handler; /* borrowed from the handlers dict, or NULL */
    bool library;      /* a class of an imported model library */
} type_memo;

typedef struct crawl_build {
    tsx_desc_memo descs;
    tsx_desc_reader reader; /* reads with `descs` */
    type_memo types[64];
    size_t ntypes;
    unsigned libraries; /* model libraries imported (library_prefixes) */
} crawl_build;

/* The model libraries whose blocks are matched by their operators
 * (module_match.h). A library that is not imported has no module in the
 * model, so the crawl looks for classes only of those that are. A class
 * matches when its __module__ is the name itself or starts with it and a
 * dot. */
static const char *const libraries[] = {
    "transformers",
    "torchvision",
    "timm",
    /* torch's own parametrizations (weight_norm) and quantization stubs
     * (identities until a model is converted) have no torch.nn family */
    "torch.nn.utils.parametrizations",
    "torch.ao.quantization",
};
#define N_LIBRARIES (sizeof libraries / sizeof libraries[0])

/* Which libraries sys.modules holds (bits of `libraries`): once per crawl,
 * a few dictionary lookups. 0 or more, or -1 with an exception (a failed
 * lookup is not a library that is absent). */
static long
imported_libraries(void)
{
    PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
    long found = 0;
    for (size_t i = 0; i < N_LIBRARIES && found >= 0; i++) {
        PyObject *key = PyUnicode_FromString(libraries[i]), *m = NULL;
        if (key != NULL) {
            m = PyDict_GetItemWithError(modules, key); /* borrowed */
            Py_DECREF(key);
        }
        if (m != NULL) {
            found |= 1L << i;
        }
        else if (PyErr_Occurred()) {
            found = -1;
        }
    }
    return found;
}

/* Whether `type` itself is defined in one of the imported libraries (its
 * __module__ is "<library>." something). A subclass defined elsewhere is
 * not: its forward may do other work. 1 or 0 (a class without a
 * __module__, or one that is not text UTF-8 can hold, is no library's), -1
 * with an exception on other errors (out of memory, a raising metaclass
 * property). */
static int
library_class(tsx_state *st, PyTypeObject *type, unsigned imported)
{
    PyObject *module;
    const char *name;
    int found = 0, has;
    if (imported == 0) {
        return 0;
    }
    has = tsx_optional_attr(st, (PyObject *)type, "__module__", &module);
    if (has <= 0) {
        return has;
    }
    name = PyUnicode_Check(module) ? PyUnicode_AsUTF8(module) : NULL;
    for (size_t i = 0; name != NULL && i < N_LIBRARIES && !found; i++) {
        size_t len = strlen(libraries[i]);
        found = (imported & (1u << i)) && strncmp(name, libraries[i], len) == 0
                && (name[len] == '.' || name[len] == '\0');
    }
    if (name == NULL && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            PyErr_Clear(); /* a lone surrogate: no library's name */
        }
        else {
            found = -1;
        }
    }
    Py_DECREF(module);
    return found;
}

/* A module's native family and handler, resolved once per type (models
 * repeat a few types many times). 0, or -1 with an exception. */
static int
resolve_type(tsx_crawl *c, crawl_build *b, PyObject *module, type_memo *out)
{
    PyObject *handler = NULL;
    int library;
    for (size_t i = 0; i < b->ntypes; i++) {
        if (b->types[i].type == Py_TYPE(module)) {
            *out = b->types[i];
            return 0;
        }
    }
    out->type = Py_TYPE(module);
    out->native = tsx_native_of(c->st, module, &out->native_type);
    library = c->full ? library_class(c->st, out->type, b->libraries) : 0;
    if (library < 0) {
        return -1;
    }
    out->library = library != 0;
    if (c->handlers != NULL) {
        if (tsx_handler_match(c->handlers, Py_TYPE(module), &handler) < 0) {
            return -1;
        }
        Py_XDECREF(handler); /* the snapshot dict keeps it alive */
    }
    out->handler = handler;
    if (b->ntypes < 64) {
        b->types[b->ntypes++] = *out;
    }
    return 0;
}

/* A module's description: read once per crawl (full mode), or only its
 * kind (structure mode runs no formula: no hyperparameters to read). */
static int
describe_module(tsx_crawl *c,
                crawl_build *b,
                PyObject *module,
                const type_memo *t,
                ts_module_desc *desc)
{
    if (!c->full) {
        memset(desc, 0, sizeof *desc);
        desc->kind = t->native ? t->native->kind : TS_MOD_UNKNOWN;
        return 0;
    }
    if (tsx_desc_memo_get(&b->descs, module, desc)) {
        return 0;
    }
    return tsx_module_desc(
        &b->reader, module, t->native, t->native_type, desc);
}

/* The handler's callback, identity and subtree_metrics on a module. */
static int
attach_handler(tsx_crawl *c, int index, PyObject *handler)
{
    module_entry *e = &c->modules[index];
    e->estimate = tsx_getattr(c->st, handler, "estimate");
    e->identity =
        e->estimate ? tsx_handler_identity(c->st, e->estimate) : NULL;
    if (e->identity == NULL
        || tsx_handler_owns(c->st, handler, &e->owns) < 0) {
        return -1;
    }
    ts_session_set_module_handler(c->session, index, true);
    return 0;
}

static int
add_module(tsx_crawl *c,
           crawl_build *b,
           PyObject *path,
           PyObject *module,
           bool atomic_root)
{
    ts_module_desc desc;
    type_memo t;
    PyObject *tname = NULL;
    Py_ssize_t psize = 0;
    const char *p = PyUnicode_AsUTF8AndSize(path, &psize);
    int children, index;
    bool recurse, leaf;
    module_entry *e;
    if (p == NULL) {
        return -1;
    }
    if (strlen(p) != (size_t)psize) {
        /* report paths are C strings: "a\0b" would become "a" */
        tsx_fail(
            PyExc_ValueError, "module name %R contains a NUL character", path);
        return -1;
    }
    if (resolve_type(c, b, module, &t) < 0
        || describe_module(c, b, module, &t, &desc) < 0) {
        return -1;
    }
    children = tsx_has_children(c->st, module);
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
        tsx_raise_status(index, NULL);
        return -1;
    }
    e = &c->modules[index];
    e->module = Py_NewRef(module);
    e->type = Py_TYPE(module);
    if (t.handler != NULL && c->full
        && attach_handler(c, index, t.handler) < 0) {
        return -1;
    }
    if (t.library && desc.kind == TS_MOD_UNKNOWN
        && (t.handler == NULL || !children)) {
        /* a library block without a formula: its operators are matched. A
         * caller's handler always wins: on a leaf the signature answers
         * only what the handler omits (as a formula would); a composite
         * with a handler delegates the rest to its children */
        ts_session_set_module_matchable(c->session, index, true);
    }
    if (c->full && recurse) {
        /* built-in inclusive estimates: children are covered */
        e->builtin_owns = TS_ALL_ESTIMATES;
    }
    if (!recurse) {
        e->params = tsx_getattr(c->st, module, "_parameters");
        e->buffers = e->params ? tsx_getattr(c->st, module, "_buffers") : NULL;
        if (e->buffers == NULL) {
            return -1;
        }
    }
    return 0;
}

/* An nn.Transformer root is analysed as one atomic call, unless a caller
 * handler matches one of its descendants: then every module is hooked,
 * and the root's boundary is settled after the forward. 1 atomic, 0 not,
 * -1 with an exception. */
static int
atomic_root(tsx_crawl *c)
{
    bool atomic = tsx_is_native_named(c->st, c->root, "Transformer");
    if (atomic && c->handlers != NULL && c->full) {
        for (Py_ssize_t i = 1; i < PyList_GET_SIZE(c->all) && atomic; i++) {
            PyObject *h = NULL;
            int found = tsx_handler_match(
                c->handlers, Py_TYPE(tsx_crawl_module_at(c, i)), &h);
            Py_XDECREF(h);
            if (found < 0) {
                return -1;
            }
            atomic = found == 0;
        }
        c->expanded_root = !atomic;
    }
    return atomic;
}

/* The module table: every module of the tree, or the atomic root alone. */
static int
build_modules(tsx_crawl *c, crawl_build *b, PyObject *empty)
{
    tsx_ptrset memo = {NULL, 0, 0};
    int atomic, rc = walk_modules(c->st, c->root, empty, &memo, c->all, 0);
    tsx_ptrset_clear(&memo);
    if (rc < 0) {
        return -1;
    }
    c->modules = PyMem_Calloc((size_t)PyList_GET_SIZE(c->all) + 1,
                              sizeof(module_entry));
    if (c->modules == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if ((atomic = atomic_root(c)) < 0) {
        return -1;
    }
    if (atomic) {
        c->nmodules = 1;
        return add_module(c, b, empty, c->root, true);
    }
    c->nmodules = (size_t)PyList_GET_SIZE(c->all);
    for (size_t i = 0; i < c->nmodules; i++) {
        PyObject *pair = PyList_GET_ITEM(c->all, (Py_ssize_t)i);
        if (add_module(c,
                       b,
                       PyTuple_GET_ITEM(pair, 0),
                       PyTuple_GET_ITEM(pair, 1),
                       i == 0 && c->expanded_root)
            < 0) {
            return -1;
        }
    }
    if (c->expanded_root) {
        /* its descendants answer first; ownership is settled after */
        c->modules[0].builtin_owns = 0;
    }
    return 0;
}

/* Fills a new crawl: 0, or -1 with an exception. */
static int
crawl_init(tsx_crawl *c,
           tsx_state *st,
           PyObject *root,
           int full,
           PyObject *handlers,
           PyObject *module_call,
           int match)
{
    crawl_build b;
    PyObject *empty;
    long imported;
    int rc = -1;
    memset(&b, 0, sizeof b);
    c->st = st;
    c->full = full;
    c->root = Py_NewRef(root);
    c->reader.st = st;
    c->reader.memo = NULL;
    c->reader.is_patched_forward = tsx_is_patched_forward;
    b.reader = c->reader;
    b.reader.memo = &b.descs;
    imported = full && match ? imported_libraries() : 0;
    if (imported < 0) {
        return -1;
    }
    b.libraries = (unsigned)imported;
    if (handlers != Py_None) {
        if (!PyDict_Check(handlers) || module_call == Py_None) {
            tsx_fail(PyExc_TypeError,
                     "handlers must be a dict, with module_call");
            return -1;
        }
        c->handlers = Py_NewRef(handlers);
        c->module_call = Py_NewRef(module_call);
    }
    c->session = ts_session_new(full);
    c->all = PyList_New(0);
    c->handles = PyList_New(0);
    empty = PyUnicode_FromString("");
    if (c->session == NULL && !PyErr_Occurred()) {
        tsx_raise_status(TS_ENOMEM, NULL);
    }
    if (c->session != NULL && c->all != NULL && c->handles != NULL
        && empty != NULL) {
        rc = build_modules(c, &b, empty);
    }
    Py_XDECREF(empty);
    tsx_desc_memo_clear(&b.descs);
    return rc;
}

static PyObject *
crawl_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"module",
                             "full",
                             "handlers",
                             "module_call",
                             "local",
                             "match",
                             "saved",
                             NULL};
    PyObject *root, *handlers = Py_None, *module_call = Py_None;
    int full = 1, local = 0, match = 1, saved = 0, gc_was_enabled, rc;
    tsx_crawl *c;
    tsx_state *st = tsx_state_of_type(type, crawl_new);
    if (st == NULL
        || !PyArg_ParseTupleAndKeywords(args,
                                        kwds,
                                        "O|pOOp$pp:Crawl",
                                        kwlist,
                                        &root,
                                        &full,
                                        &handlers,
                                        &module_call,
                                        &local,
                                        &match,
                                        &saved)) {
        return NULL;
    }
    c = (tsx_crawl *)type->tp_alloc(type, 0);
    if (c == NULL) {
        return NULL;
    }
    /* The walk allocates a few objects per module, none in a cycle: a
     * collection of the (large) torch heap in the middle helps nobody. */
    gc_was_enabled = PyGC_Disable();
    rc = crawl_init(c, st, root, full, handlers, module_call, match);
    if (gc_was_enabled) {
        PyGC_Enable();
    }
    if (rc == 0 && local) {
        /* the modules' own (path, module) pairs, as the crawl lists them */
        PyObject *modules = PyList_New(0);
        for (Py_ssize_t i = 0; modules != NULL && i < PyList_GET_SIZE(c->all);
             i++) {
            if (PyList_Append(modules, tsx_crawl_module_at(c, i)) < 0) {
                Py_CLEAR(modules);
            }
        }
        rc = modules != NULL ? tsx_local_init(st, &c->local, modules) : -1;
        Py_XDECREF(modules);
    }
    if (rc == 0 && saved) {
        /* bytes saved for backward: parameters and buffers excluded, as
         * the model holds them now */
        int status = ts_session_enable_saved(c->session);
        if (status != TS_OK) {
            tsx_raise_status(status, NULL);
            rc = -1;
        }
        else {
            rc = tsx_saved_exclude_module(
                st, ts_session_saved(c->session), root);
        }
    }
    if (rc < 0) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

/* ---- install / uninstall ------------------------------------------------ */

/* Removes the observers, restores the flags and detaches the counter. */
static int
uninstall(tsx_crawl *c)
{
    int rc = tsx_hooks_uninstall(c);
    /* the pack hook measures nothing more */
    tsx_saved_release(&c->saved);
    if (c->counter != NULL) {
        /* attached by install, so a Counter; detaching records what its
         * attention matcher held back (fails only out of memory, and
         * detaches all the same) */
        if (tsx_counter_attach(c->st, c->counter, NULL, NULL) < 0 && rc == 0) {
            rc = -1;
        }
        Py_CLEAR(c->counter);
    }
    return rc;
}

static PyObject *
crawl_install(tsx_crawl *c, PyObject *args)
{
    PyObject *counter;
    int evaluate = 1;
    if (!PyArg_ParseTuple(args, "O|p:install", &counter, &evaluate)) {
        return NULL;
    }
    if (c->installed) {
        tsx_fail(PyExc_RuntimeError, "the crawl is already installed");
        return NULL;
    }
    if (tsx_hooks_install(c, evaluate) < 0
        || (counter != Py_None
            && tsx_counter_attach(c->st, counter, c->session, (PyObject *)c)
                   < 0)) {
        uninstall(c);
        return NULL;
    }
    c->counter = counter != Py_None ? Py_NewRef(counter) : NULL;
    if (ts_session_saved(c->session) != NULL) {
        tsx_saved_open(&c->saved, c->session, c->counter);
    }
    Py_RETURN_NONE;
}

/* saved_pack(tensor) and saved_unpack(handle): the saved-tensor hooks of a
 * crawl made with saved=True (saved.h). */
static PyObject *
crawl_saved_pack(tsx_crawl *c, PyObject *tensor)
{
    return tsx_saved_pack(c->st, &c->saved, tensor);
}

static PyObject *
crawl_saved_unpack(tsx_crawl *c, PyObject *packed)
{
    (void)c;
    return tsx_saved_unpack(packed);
}

static PyObject *
crawl_uninstall(tsx_crawl *c, PyObject *unused)
{
    if (uninstall(c) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- the report ----------------------------------------------------------
 */

static PyObject *
sorted_list(PyObject *set)
{
    PyObject *list = PySequence_List(set);
    if (list != NULL && PyList_Sort(list) < 0) {
        Py_CLEAR(list);
    }
    return list;
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
        tsx_fail(PyExc_TypeError, "counter must be a Counter or None");
        return NULL;
    }
    version = PyUnicode_AsUTF8(torch_version);
    devices = PySet_New(NULL);
    dtypes = PySet_New(NULL);
    if (version == NULL || devices == NULL || dtypes == NULL
        || tsx_model_totals(
               c->st, c->root, &totals, devices, dtypes, &c->local)
               < 0) {
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
            tsx_raise_status(TS_ENOMEM, NULL);
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
        return tsx_raise_status(TS_ENOMEM, NULL);
    }
    result = tsx_from_json(c->st, by_path);
    json_decref(by_path);
    return result;
}

static PyObject *
crawl_by_phase(tsx_crawl *c, PyObject *unused)
{
    json_t *by_phase = ts_session_phase_layers(c->session);
    PyObject *result;
    if (by_phase == NULL) {
        return tsx_raise_status(TS_ENOMEM, NULL);
    }
    result = tsx_from_json(c->st, by_phase);
    json_decref(by_phase);
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
    tsx_local_traverse(&c->local, visit, arg);
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
    if (c->claims != NULL) {
        tsx_hooks_release(c);
    }
    Py_CLEAR(c->root);
    Py_CLEAR(c->all);
    Py_CLEAR(c->flags);
    Py_CLEAR(c->handles);
    Py_CLEAR(c->counter);
    Py_CLEAR(c->handlers);
    Py_CLEAR(c->module_call);
    tsx_local_clear(&c->local);
    tsx_saved_release(&c->saved);
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
    tsx_calls_clear(c);
    crawl_clear(c);
    PyMem_Free(c->modules);
    PyMem_Free(c->opened);
    tsx_ptrset_clear(&c->seen);
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
    {"operator_flops_by_phase",
     (PyCFunction)crawl_by_phase,
     METH_NOARGS,
     "operator_flops_by_phase() -> {phase: {by_module, layers}}: each "
     "phase's operator FLOPs per module path and per layer call"},
    {"saved_pack",
     (PyCFunction)crawl_saved_pack,
     METH_O,
     "saved_pack(tensor) -> tensor.detach(): the pack hook of saved=True "
     "(measures the tensor's storage for the innermost layer call)"},
    {"saved_unpack",
     (PyCFunction)crawl_saved_unpack,
     METH_O,
     "saved_unpack(packed) -> packed, unchanged (autograd restores its "
     "grad_fn)"},
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
    {Py_tp_doc,
     "Crawl(module, full=True, handlers=None, module_call=None, *, "
     "match=True, saved=False): one analysis of a module; match=False turns "
     "off the matching of library blocks by their operators (for "
     "benchmarks); saved=True measures the bytes saved for backward per "
     "layer call (saved_pack/saved_unpack are the hooks)."},
    {0, NULL},
};

PyType_Spec tsx_crawl_spec = {
    .name = "torchscan._engine.Crawl",
    .basicsize = sizeof(tsx_crawl),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = crawl_slots,
};
