/* Which parameters and buffers a layer call holds (each tensor is
 * attributed to the first call that meets it; later calls mark it shared)
 * and the model totals over every unique tensor (attribution.h). Module
 * dicts are read in C: the Python generators cost tens of microseconds per
 * call. */
#include "fail.h"
#include "attribution.h"

/* ---- a pointer set holding strong references ---------------------------- */


void
tsx_ptrset_clear(tsx_ptrset *set)
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

int
tsx_ptrset_add(tsx_ptrset *set, PyObject *obj)
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

/* ---- what this rank holds of sharded tensors -----------------------------
 */

/* The DTensor whose local shard this rank holds for tensor `t`, registered
 * as `name` on `module` (borrowed; NULL when it is not sharded): `t` itself
 * when it is a DTensor, else the shard FSDP2 keeps while `t` is the full
 * parameter it gathered for a forward. -1 with an exception. */
static int
shard_of(const tsx_local *loc,
         PyObject *module,
         PyObject *name,
         PyObject *t,
         PyObject **shard)
{
    PyObject *key, *inner;
    *shard = NULL;
    if (loc->dtensor != NULL
        && PyObject_TypeCheck(t, (PyTypeObject *)loc->dtensor)) {
        *shard = t;
        return 0;
    }
    if (loc->shards == NULL || module == NULL || name == NULL) {
        return 0;
    }
    key = PyLong_FromVoidPtr(module);
    inner = key ? PyDict_GetItemWithError(loc->shards, key) : NULL;
    Py_XDECREF(key);
    *shard = inner ? PyDict_GetItemWithError(inner, name) : NULL;
    return *shard == NULL && PyErr_Occurred() ? -1 : 0;
}

/* The elements and bytes of `t` that this rank holds: its local shard when
 * it is sharded, else all of it (numel, info). */
static int
local_counts(tsx_state *st,
             const tsx_local *loc,
             PyObject *module,
             PyObject *name,
             PyObject *t,
             long long numel,
             const tsx_dtype *info,
             long long *local_numel,
             int64_t *local_bytes)
{
    PyObject *shard, *local, *n = NULL, *dtype = NULL;
    const tsx_dtype *local_info = NULL;
    *local_numel = numel;
    *local_bytes = numel * info->itemsize;
    if (shard_of(loc, module, name, t, &shard) < 0) {
        return -1;
    }
    if (shard == NULL) {
        return 0;
    }
    local = tsx_getattr(st, shard, "_local_tensor");
    if (local == NULL) {
        PyErr_Clear(); /* not a DTensor after all: all of it is here */
        return 0;
    }
    n = PyObject_CallMethodNoArgs(local, st->s_numel);
    dtype = n ? PyObject_GetAttr(local, st->s_dtype) : NULL;
    local_info = dtype ? tsx_dtype_info(st, dtype) : NULL;
    if (local_info != NULL) {
        *local_numel = PyLong_AsLongLong(n);
        *local_bytes = *local_numel * local_info->itemsize;
    }
    Py_DECREF(local);
    Py_XDECREF(n);
    Py_XDECREF(dtype);
    return local_info == NULL || (*local_numel == -1 && PyErr_Occurred()) ? -1
                                                                          : 0;
}

/* Adds one tensor's local counts to a row's or the model's local sums. */
static void
add_local(int64_t *params_sum,
          int64_t *param_bytes,
          int64_t *buffer_elements,
          int64_t *buffer_bytes,
          bool params,
          long long numel,
          int64_t bytes)
{
    *(params ? params_sum : buffer_elements) += numel;
    *(params ? param_bytes : buffer_bytes) += bytes;
}

/* Reads one FSDP2 parameter (an FSDPParam): its shard under the name it has
 * on each module that holds it. Anything missing is skipped: these are
 * FSDP2's internals, read best-effort (a later release that renames them
 * leaves parameters FSDP2 has gathered counted whole). */
static int
map_fsdp_param(tsx_state *st, PyObject *shards, PyObject *fsdp_param)
{
    PyObject *sharded = tsx_getattr(st, fsdp_param, "sharded_param");
    PyObject *info =
        sharded ? tsx_getattr(st, fsdp_param, "_module_info") : NULL;
    PyObject *owners[2] = {NULL, NULL}, *names[2] = {NULL, NULL};
    int rc = 0;
    if (info == NULL) {
        PyErr_Clear();
        Py_XDECREF(sharded);
        return 0;
    }
    /* (module, param_name), then (shared_modules, shared_param_names) */
    owners[0] = tsx_getattr(st, info, "module");
    names[0] = owners[0] ? tsx_getattr(st, info, "param_name") : NULL;
    owners[1] = names[0] ? tsx_getattr(st, info, "shared_modules") : NULL;
    names[1] = owners[1] ? tsx_getattr(st, info, "shared_param_names") : NULL;
    PyErr_Clear();
    for (int k = 0; rc == 0 && k < 2 && names[k] != NULL; k++) {
        PyObject *mods =
            k == 0 ? PyTuple_Pack(1, owners[0]) : PySequence_Tuple(owners[k]);
        PyObject *keys =
            k == 0 ? PyTuple_Pack(1, names[0]) : PySequence_Tuple(names[k]);
        if (mods == NULL || keys == NULL) {
            PyErr_Clear();
        }
        for (Py_ssize_t i = 0;
             mods != NULL && keys != NULL && i < PyTuple_GET_SIZE(mods)
             && i < PyTuple_GET_SIZE(keys);
             i++) {
            PyObject *key = PyLong_FromVoidPtr(PyTuple_GET_ITEM(mods, i));
            PyObject *inner =
                key ? PyDict_GetItemWithError(shards, key) : NULL;
            if (inner == NULL && key != NULL && !PyErr_Occurred()) {
                inner = PyDict_New();
                if (inner == NULL || PyDict_SetItem(shards, key, inner) < 0) {
                    Py_XDECREF(inner);
                    inner = NULL;
                }
                else {
                    Py_DECREF(inner); /* the map holds it */
                }
            }
            if (inner == NULL
                || PyDict_SetItem(inner, PyTuple_GET_ITEM(keys, i), sharded)
                       < 0) {
                rc = -1;
            }
            Py_XDECREF(key);
        }
        Py_XDECREF(mods);
        Py_XDECREF(keys);
    }
    for (int k = 0; k < 2; k++) {
        Py_XDECREF(owners[k]);
        Py_XDECREF(names[k]);
    }
    Py_DECREF(info);
    Py_DECREF(sharded);
    return rc;
}

/* The FSDP2 parameters of one module that fully_shard wrapped (its state's
 * parameter groups), into `shards`. */
static int
map_fsdp_module(tsx_state *st, PyObject *shards, PyObject *module)
{
    PyObject *get_state, *state, *groups;
    int rc = 0;
    if (tsx_optional_attr(st, module, "_get_fsdp_state", &get_state) < 0) {
        PyErr_Clear();
        return 0;
    }
    if (get_state == NULL) {
        return 0; /* not a module fully_shard wrapped */
    }
    state = PyObject_CallNoArgs(get_state);
    Py_DECREF(get_state);
    groups = state ? tsx_getattr(st, state, "_fsdp_param_groups") : NULL;
    Py_XDECREF(state);
    if (groups == NULL || !PyList_Check(groups)) {
        PyErr_Clear();
        Py_XDECREF(groups);
        return 0;
    }
    for (Py_ssize_t g = 0; rc == 0 && g < PyList_GET_SIZE(groups); g++) {
        PyObject *params =
            tsx_getattr(st, PyList_GET_ITEM(groups, g), "fsdp_params");
        if (params == NULL || !PyList_Check(params)) {
            PyErr_Clear();
            Py_XDECREF(params);
            continue;
        }
        for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(params); i++) {
            rc = map_fsdp_param(st, shards, PyList_GET_ITEM(params, i));
        }
        Py_DECREF(params);
    }
    Py_DECREF(groups);
    return rc;
}

int
tsx_local_init(tsx_state *st, tsx_local *loc, PyObject *modules)
{
    memset(loc, 0, sizeof *loc);
    loc->on = true;
    loc->dtensor = Py_XNewRef(tsx_dtensor_class(st));
    if (PyErr_Occurred()) {
        return -1;
    }
    if (loc->dtensor == NULL) {
        return 0; /* no DTensor in this process: nothing is sharded */
    }
    loc->shards = PyDict_New();
    if (loc->shards == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(modules); i++) {
        if (map_fsdp_module(
                st, loc->shards, PySequence_Fast_GET_ITEM(modules, i))
            < 0) {
            return -1;
        }
    }
    if (PyDict_GET_SIZE(loc->shards) == 0) {
        Py_CLEAR(loc->shards);
    }
    return 0;
}

void
tsx_local_clear(tsx_local *loc)
{
    Py_CLEAR(loc->dtensor);
    Py_CLEAR(loc->shards);
}

int
tsx_local_traverse(tsx_local *loc, visitproc visit, void *arg)
{
    Py_VISIT(loc->dtensor);
    Py_VISIT(loc->shards);
    return 0;
}

/* Adds one tensor to the attribution (the first time it is seen);
 * `module` and `name` say where it is registered (NULL when unknown). */
static int
attribute_tensor(tsx_state *st,
                 tsx_ptrset *seen,
                 PyObject *t,
                 bool params,
                 ts_attribution *a,
                 const tsx_local *loc,
                 PyObject *module,
                 PyObject *name)
{
    const tsx_dtype *info;
    long long numel, local_numel;
    int64_t local_bytes;
    bool trainable;
    int added;
    if (t == Py_None) {
        return 0;
    }
    added = tsx_ptrset_add(seen, t);
    if (added <= 0) {
        if (added == 0) {
            *(params ? &a->param_shared : &a->buffer_shared) = true;
        }
        return added;
    }
    if (tensor_counts(st, t, params, &numel, &info, &trainable) < 0) {
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
    if (loc != NULL && loc->on) {
        if (local_counts(st,
                         loc,
                         module,
                         name,
                         t,
                         numel,
                         info,
                         &local_numel,
                         &local_bytes)
            < 0) {
            return -1;
        }
        add_local(&a->local_params,
                  &a->local_param_bytes,
                  &a->local_buffer_elements,
                  &a->local_buffer_bytes,
                  params,
                  local_numel,
                  local_bytes);
    }
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

/* Calls fn(ctx, name, t) for each value of a module's own tensor dict
 * (name: its key), or of another iterable (a ScriptModule's mapping; name
 * NULL), None entries included. */
static int
each_tensor(PyObject *tensors,
            int (*fn)(void *, PyObject *, PyObject *),
            void *ctx)
{
    PyObject *iter, *t, *key;
    Py_ssize_t pos = 0;
    if (PyDict_Check(tensors)) {
        while (PyDict_Next(tensors, &pos, &key, &t)) {
            /* reading a tensor may run Python code that edits the dict */
            int rc;
            Py_INCREF(t);
            Py_INCREF(key);
            rc = fn(ctx, key, t);
            Py_DECREF(key);
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
        int rc = fn(ctx, NULL, t);
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
    tsx_state *st;
    tsx_ptrset *seen; /* every tensor attributed so far in the crawl */
    bool params;
    ts_attribution *a;
    tsx_ptrset *once; /* a subtree lists each tensor once; or NULL */
    const tsx_local *loc;
    PyObject *module; /* whose tensors are walked (borrowed) */
} attribution_walk;

static int
attribute_one(void *ctx, PyObject *name, PyObject *t)
{
    attribution_walk *w = ctx;
    int rc =
        (w->once != NULL && t != Py_None) ? tsx_ptrset_add(w->once, t) : 1;
    return rc > 0 ? attribute_tensor(
               w->st, w->seen, t, w->params, w->a, w->loc, w->module, name)
                  : rc;
}

int
tsx_attribute_tensors(tsx_state *st,
                      tsx_ptrset *seen,
                      PyObject *tensors,
                      bool params,
                      ts_attribution *a,
                      tsx_ptrset *once,
                      const tsx_local *loc,
                      PyObject *module)
{
    attribution_walk w = {st, seen, params, a, once, loc, module};
    return each_tensor(tensors, attribute_one, &w);
}

/* Calls fn(ctx, t) for the parameters (pass 0) or buffers (pass 1) of a
 * module and of all its descendants, in the order module.parameters() /
 * buffers() list them (each module once), read from the modules' own
 * dicts: the Python generators cost tens of microseconds per call. */
static int
each_subtree_tensor(tsx_state *st,
                    PyObject *module,
                    int pass,
                    tsx_ptrset *modules,
                    int depth,
                    attribution_walk *w)
{
    PyObject *own, *children, *key, *value;
    Py_ssize_t pos = 0;
    int rc = tsx_ptrset_add(modules, module);
    if (rc <= 0) {
        return rc; /* met before (0), or an error */
    }
    if (depth > 10000) {
        tsx_fail(PyExc_RecursionError, "module tree is too deep");
        return -1;
    }
    if (tsx_optional_attr(st, module, pass ? "_buffers" : "_parameters", &own)
        < 0) {
        return -1;
    }
    w->module = module;
    rc = own != NULL ? each_tensor(own, attribute_one, w) : 0;
    Py_XDECREF(own);
    children = rc == 0 ? tsx_child_dict(st, module) : NULL;
    if (children == NULL) {
        return -1;
    }
    while (rc == 0 && PyDict_Next(children, &pos, &key, &value)) {
        if (value != Py_None) {
            /* reading a tensor may run Python code that edits the dict */
            Py_INCREF(value);
            rc = each_subtree_tensor(st, value, pass, modules, depth + 1, w);
            Py_DECREF(value);
        }
    }
    Py_DECREF(children);
    return rc < 0 ? -1 : 0;
}

int
tsx_attribute_subtree(tsx_state *st,
                      tsx_ptrset *seen,
                      PyObject *module,
                      int pass,
                      tsx_ptrset *modules,
                      tsx_ptrset *tensors,
                      ts_attribution *a,
                      const tsx_local *loc)
{
    attribution_walk w = {st, seen, pass == 0, a, tensors, loc, module};
    return each_subtree_tensor(st, module, pass, modules, 0, &w);
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

typedef struct totals_walk {
    tsx_state *st;
    ts_model_totals *totals;
    PyObject *devices, *dtypes;
    tsx_ptrset seen;
    bool params;
    const tsx_local *loc;
    PyObject *module; /* whose tensors are walked (borrowed) */
} totals_walk;

/* Counts one model tensor, the first time the walk meets it. Everything is
 * read now, at report time: a forward may have changed a tensor since its
 * layer's attribution read it (requires_grad_(), .data = ...), and the
 * totals describe the model as parameters()/buffers() show it now. */
static int
total_one(void *ctx, PyObject *name, PyObject *x)
{
    totals_walk *w = ctx;
    tsx_state *st = w->st;
    ts_model_totals *t = w->totals;
    PyObject *device;
    const tsx_dtype *info;
    long long numel, local_numel;
    int64_t local_bytes;
    bool trainable;
    int rc, added = x != Py_None ? tsx_ptrset_add(&w->seen, x) : 0;
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
    if (rc == 0 && t->local) {
        rc = local_counts(st,
                          w->loc,
                          w->module,
                          name,
                          x,
                          numel,
                          info,
                          &local_numel,
                          &local_bytes);
        add_local(&t->local_params,
                  &t->local_param_bytes,
                  &t->local_buffer_elements,
                  &t->local_buffer_bytes,
                  w->params,
                  local_numel,
                  local_bytes);
    }
    return rc;
}

/* Appends the modules of a tree to `list`, each once, in the order of
 * named_modules(). */
static int
collect_modules(tsx_state *st,
                PyObject *module,
                tsx_ptrset *seen,
                PyObject *list,
                int depth)
{
    PyObject *children, *key, *value;
    Py_ssize_t pos = 0;
    int rc = tsx_ptrset_add(seen, module);
    if (rc <= 0) {
        return rc; /* met before (0), or an error */
    }
    if (depth > 10000) {
        tsx_fail(PyExc_RecursionError, "module tree is too deep");
        return -1;
    }
    children =
        PyList_Append(list, module) == 0 ? tsx_child_dict(st, module) : NULL;
    if (children == NULL) {
        return -1;
    }
    rc = 0;
    while (rc == 0 && PyDict_Next(children, &pos, &key, &value)) {
        if (value != Py_None) {
            /* reading _modules may run Python code that edits the dict */
            Py_INCREF(value);
            rc = collect_modules(st, value, seen, list, depth + 1);
            Py_DECREF(value);
        }
    }
    Py_DECREF(children);
    return rc < 0 ? -1 : 0;
}

int
tsx_model_totals(tsx_state *st,
                 PyObject *root,
                 ts_model_totals *t,
                 PyObject *devices,
                 PyObject *dtypes,
                 const tsx_local *loc)
{
    totals_walk w = {st, t, devices, dtypes, {NULL, 0, 0}, true, loc, NULL};
    int rc = 0;
    memset(t, 0, sizeof *t);
    t->local = loc != NULL && loc->on;
    /* the tree as it is now: a forward may have added or removed
     * submodules since the crawl listed them */
    tsx_ptrset seen = {NULL, 0, 0};
    PyObject *modules = PyList_New(0);
    rc = modules != NULL ? collect_modules(st, root, &seen, modules, 0) : -1;
    tsx_ptrset_clear(&seen);
    for (int pass = 0; rc == 0 && pass < 2; pass++) {
        const char *attr = pass == 0 ? "_parameters" : "_buffers";
        w.params = pass == 0;
        for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(modules); i++) {
            PyObject *own = tsx_getattr(st, PyList_GET_ITEM(modules, i), attr);
            if (own == NULL) {
                PyErr_Clear(); /* not a module with tensors of its own */
                continue;
            }
            w.module = PyList_GET_ITEM(modules, i);
            rc = each_tensor(own, total_one, &w);
            Py_DECREF(own);
        }
    }
    Py_XDECREF(modules);
    tsx_ptrset_clear(&w.seen);
    return rc;
}
