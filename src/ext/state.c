/* The module state of torchscan._engine: what it imports from torch once,
 * the interned names, and their release. The caches of the layers above
 * (resolved operators, tensor metadata, report strings) hang off the state
 * too; each layer frees its own (module.c's clear calls them). */
#include <stdatomic.h>

#include "fail.h"
#include "state.h"

/* ---- jansson's allocations, for failure injection ---- */

/* Allocations left before the one that fails; 0: none fails. jansson runs
 * without the GIL too (checkpoint readers): atomic. */
static atomic_long json_countdown = 0;

static void *
json_alloc(size_t size)
{
    long left = atomic_load(&json_countdown);
    while (left > 0) {
        if (atomic_compare_exchange_weak(&json_countdown, &left, left - 1)) {
            if (left == 1) {
                return NULL;
            }
            break;
        }
    }
    return malloc(size);
}

void
tsx_json_alloc_init(void)
{
    static atomic_bool done = false;
    bool expected = false;
    /* before anything of the engine allocates; jansson's frees stay free()
     * so that text the engine frees with free() matches */
    if (atomic_compare_exchange_strong(&done, &expected, true)) {
        json_set_alloc_funcs(json_alloc, free);
    }
}

PyObject *
tsx_engine_json_nomemory(PyObject *module, PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    (void)module;
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 0) {
        return tsx_fail(PyExc_ValueError, "n must be >= 0");
    }
    return PyLong_FromLong(atomic_exchange(&json_countdown, n));
}

#define INTERN(field, text)                           \
    do {                                              \
        st->field = PyUnicode_InternFromString(text); \
        if (st->field == NULL) {                      \
            return -1;                                \
        }                                             \
    } while (0)

/* Interned names by the address of the C string, checked by content (a
 * caller may pass a buffer whose address is later reused, with other text:
 * that slot is then replaced). */
PyObject *
tsx_name(tsx_state *st, const char *name)
{
    tsx_name_slot *table = st->names;
    uintptr_t h = (uintptr_t)name;
    size_t slot;
    PyObject *s;
    h ^= h >> 9;
    slot = h & (TSX_NAME_SLOTS - 1);
    for (unsigned probe = 0; probe < 8; probe++) {
        size_t i = (h + probe) & (TSX_NAME_SLOTS - 1);
        if (table[i].key == NULL) {
            slot = i;
            break;
        }
        if (table[i].key == name) {
            if (strcmp(table[i].text, name) == 0) {
                return Py_NewRef(table[i].name);
            }
            slot = i;
            break;
        }
    }
    s = PyUnicode_InternFromString(name);
    if (s != NULL) {
        const char *text = PyUnicode_AsUTF8(s);
        if (text == NULL) {
            Py_DECREF(s);
            return NULL;
        }
        Py_XSETREF(table[slot].name, Py_NewRef(s));
        table[slot].key = name;
        table[slot].text = text;
    }
    return s;
}

/* The class `name` of the first of `modules` that is imported (borrowed
 * from the module; NULL when none is, without an exception). Nothing is
 * imported: a class nobody imported has no instances. */
static PyObject *
imported_class(tsx_state *st,
               const char *const *modules,
               size_t n,
               const char *name)
{
    for (size_t i = 0; i < n; i++) {
        PyObject *key = tsx_name(st, modules[i]);
        PyObject *mod = key ? PyImport_GetModule(key) : NULL;
        PyObject *cls;
        Py_XDECREF(key);
        if (mod == NULL) {
            PyErr_Clear();
            continue;
        }
        cls = tsx_getattr(st, mod, name);
        Py_DECREF(mod);
        if (cls == NULL) {
            PyErr_Clear();
            continue;
        }
        Py_DECREF(cls); /* the module keeps it */
        return PyType_Check(cls) ? cls : NULL;
    }
    return NULL;
}

static const char *const dtensor_modules[] = {
    "torch.distributed.tensor", /* torch >= 2.5 */
    "torch.distributed._tensor",
};
static const char *const fake_modules[] = {
    "torch._subclasses.fake_tensor",
};

PyObject *
tsx_dtensor_class(tsx_state *st)
{
    return imported_class(st,
                          dtensor_modules,
                          sizeof dtensor_modules / sizeof dtensor_modules[0],
                          "DTensor");
}

PyObject *
tsx_fake_tensor_class(tsx_state *st)
{
    return imported_class(st,
                          fake_modules,
                          sizeof fake_modules / sizeof fake_modules[0],
                          "FakeTensor");
}

tsx_state *
tsx_get_state(PyObject *module)
{
    return (tsx_state *)PyModule_GetState(module);
}

tsx_state *
tsx_state_of_type(PyTypeObject *type, newfunc own_new)
{
    /* The first class of the MRO that this module created: a heap type
     * with a module whose tp_new is ours (a Python subclass inherits
     * tp_new but has no module). */
    PyObject *mro = type->tp_mro;
    for (Py_ssize_t i = 0; mro != NULL && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE)
            && ((PyHeapTypeObject *)t)->ht_module != NULL
            && t->tp_new == own_new) {
            return tsx_get_state(((PyHeapTypeObject *)t)->ht_module);
        }
    }
    tsx_fail(PyExc_TypeError,
             "%.100s is not a torchscan._engine type",
             type->tp_name);
    return NULL;
}

static PyObject *
import_attr(const char *module, const char *attr)
{
    PyObject *m = PyImport_ImportModule(module);
    PyObject *a = m ? PyObject_GetAttrString(m, attr) : NULL;
    Py_XDECREF(m);
    return a;
}

static int
import_torch(tsx_state *st)
{
    if ((st->tensor_type = import_attr("torch", "Tensor")) == NULL
        || (st->parameter_type = import_attr("torch.nn", "Parameter")) == NULL
        || (st->strided = import_attr("torch", "strided")) == NULL
        || (st->dtype_type = import_attr("torch", "dtype")) == NULL
        || (st->removable_handle =
                import_attr("torch.utils.hooks", "RemovableHandle"))
               == NULL
        || (st->script_module = import_attr("torch.jit", "ScriptModule"))
               == NULL
        || (st->encoder_layer =
                import_attr("torch.nn", "TransformerEncoderLayer"))
               == NULL
        || (st->sequential = import_attr("torch.nn", "Sequential")) == NULL
        || (st->nn_module_mod = import_attr("torch.nn.modules", "module"))
               == NULL
        || (st->mapping_abc = import_attr("collections.abc", "Mapping"))
               == NULL
        || (st->hop_type = import_attr("torch._ops", "HigherOrderOperator"))
               == NULL
        || (st->has_kernel = import_attr(
                "torch._C", "_dispatch_has_kernel_for_dispatch_key"))
               == NULL
        || (st->graph_task_id =
                import_attr("torch._C", "_current_graph_task_id"))
               == NULL
        || (st->autograd_node =
                import_attr("torch._C", "_current_autograd_node"))
               == NULL
        || (st->sequence_nr =
                import_attr("torch._C._autograd", "_get_sequence_nr"))
               == NULL) {
        return -1;
    }
    return 0;
}

/* The interned names of the state, for tsx_state_clear. */
static PyObject **
interned(tsx_state *st, size_t i)
{
    PyObject **fields[] = {
        &st->s_shape,
        &st->s_dtype,
        &st->s_device,
        &st->s_requires_grad,
        &st->s_is_nested,
        &st->s_layout,
        &st->s_numel,
        &st->s_training,
        &st->s_op,
        &st->s_overloadpacket,
        &st->s_schema,
        &st->s_arguments,
        &st->s_name,
        &st->s_decompose,
        &st->s_enter,
        &st->s_eval,
        &st->s_remove,
        &st->s_register_pre,
        &st->s_register_post,
        &st->s_always_call,
        &st->s_is_floating_point,
        &st->s_is_complex,
        &st->s_itemsize,
        &st->s_forward,
        &st->s_is_cpu,
        &st->s_cpu,
        &st->s_is_meta,
        &st->s_call_outside_dynamo,
        &st->s_getattribute,
        &st->s_forward_hooks,
        &st->s_global_forward_hooks,
        &st->s_sequence_nr,
        NULL,
    };
    return fields[i];
}

int
tsx_state_init(tsx_state *st)
{
    if (import_torch(st) < 0) {
        return -1;
    }
    INTERN(s_shape, "shape");
    INTERN(s_dtype, "dtype");
    INTERN(s_device, "device");
    INTERN(s_requires_grad, "requires_grad");
    INTERN(s_is_nested, "is_nested");
    INTERN(s_layout, "layout");
    INTERN(s_numel, "numel");
    INTERN(s_training, "training");
    INTERN(s_op, "_op");
    INTERN(s_overloadpacket, "overloadpacket");
    INTERN(s_schema, "_schema");
    INTERN(s_arguments, "arguments");
    INTERN(s_name, "name");
    INTERN(s_decompose, "decompose");
    INTERN(s_enter, "__enter__");
    INTERN(s_eval, "eval");
    INTERN(s_remove, "remove");
    INTERN(s_register_pre, "register_forward_pre_hook");
    INTERN(s_register_post, "register_forward_hook");
    INTERN(s_always_call, "always_call");
    INTERN(s_is_floating_point, "is_floating_point");
    INTERN(s_is_complex, "is_complex");
    INTERN(s_itemsize, "itemsize");
    INTERN(s_forward, "forward");
    INTERN(s_is_cpu, "is_cpu");
    INTERN(s_cpu, "cpu");
    INTERN(s_is_meta, "is_meta");
    INTERN(s_call_outside_dynamo, "_call_outside_dynamo");
    INTERN(s_getattribute, "__getattribute__");
    INTERN(s_forward_hooks, "_forward_hooks");
    INTERN(s_global_forward_hooks, "_global_forward_hooks");
    INTERN(s_sequence_nr, "_sequence_nr");
    /* lives as long as the object type */
    st->object_getattribute =
        _PyType_Lookup(&PyBaseObject_Type, st->s_getattribute);
    st->observed = PyDict_New();
    if (st->observed == NULL) {
        return -1;
    }
    st->j_tensor = json_string("tensor");
    st->j_cpu = json_string("cpu");
    if (st->j_tensor == NULL || st->j_cpu == NULL) {
        PyErr_NoMemory(); /* jansson allocates without Python */
        return -1;
    }
    return 0;
}

int
tsx_state_traverse(tsx_state *st, visitproc visit, void *arg)
{
    Py_VISIT(st->tensor_type);
    Py_VISIT(st->parameter_type);
    Py_VISIT(st->strided);
    Py_VISIT(st->dtype_type);
    Py_VISIT(st->removable_handle);
    Py_VISIT(st->script_module);
    Py_VISIT(st->encoder_layer);
    Py_VISIT(st->sequential);
    Py_VISIT(st->nn_module_mod);
    Py_VISIT(st->mapping_abc);
    Py_VISIT(st->hop_type);
    Py_VISIT(st->has_kernel);
    Py_VISIT(st->graph_task_id);
    Py_VISIT(st->autograd_node);
    Py_VISIT(st->sequence_nr);
    Py_VISIT(st->crawl_type);
    Py_VISIT(st->observed);
    Py_VISIT(st->hook_type);
    Py_VISIT(st->counter_type);
    Py_VISIT(st->module_getattr);
    for (int i = 0; i < st->ndtypes; i++) {
        Py_VISIT(st->dtypes[i].dtype);
        Py_VISIT(st->dtypes[i].name);
    }
    return 0;
}

void
tsx_state_clear(tsx_state *st)
{
    for (size_t i = 0; interned(st, i) != NULL; i++) {
        Py_CLEAR(*interned(st, i));
    }
    for (size_t i = 0; i < TSX_NAME_SLOTS; i++) {
        Py_CLEAR(st->names[i].name);
        st->names[i].key = st->names[i].text = NULL;
    }
    Py_CLEAR(st->tensor_type);
    Py_CLEAR(st->parameter_type);
    Py_CLEAR(st->strided);
    Py_CLEAR(st->dtype_type);
    Py_CLEAR(st->removable_handle);
    Py_CLEAR(st->script_module);
    Py_CLEAR(st->encoder_layer);
    Py_CLEAR(st->sequential);
    Py_CLEAR(st->nn_module_mod);
    Py_CLEAR(st->mapping_abc);
    Py_CLEAR(st->hop_type);
    Py_CLEAR(st->has_kernel);
    Py_CLEAR(st->graph_task_id);
    Py_CLEAR(st->autograd_node);
    Py_CLEAR(st->sequence_nr);
    Py_CLEAR(st->crawl_type);
    Py_CLEAR(st->observed);
    Py_CLEAR(st->hook_type);
    Py_CLEAR(st->counter_type);
    Py_CLEAR(st->module_getattr);
    for (int i = 0; i < st->ndtypes; i++) {
        Py_CLEAR(st->dtypes[i].dtype);
        Py_CLEAR(st->dtypes[i].name);
        json_decref(st->dtypes[i].json_name);
        st->dtypes[i].json_name = NULL;
    }
    json_decref(st->j_tensor);
    json_decref(st->j_cpu);
    st->j_tensor = st->j_cpu = NULL;
    st->ndtypes = 0;
}
