/* The bottom layer of the binding (torchscan._engine): the module state
 * and the interned names it owns.
 *
 * Layers of src/ext, bottom to top; a file calls only files below it
 * (tools/check_ext_layers.py checks it on the object files; the table is in
 * docs/architecture.md):
 *   state        module state, interned names, exception fetch/restore
 *   convert      report/JSON -> Python objects; engine status -> exception
 *   describe     metadata of Python values (tensors, dtypes, containers)
 *   callbacks    the only place user code runs: custom formulas, module
 *                handlers' estimates, module readers
 *   module_family  native families (the class table), the module tree
 *   module_desc  one reader per module family (hyperparameters)
 *   masks        mask arguments of attention and Transformer calls: shape
 *                and the engine's summary of their values
 *   module_call  the parts of a module call the formulas need
 *   phase        the phase of the running operator (autograd engine,
 *                sequence numbers; the rule is the core's phase.h)
 *   memsim       estimate_memory's storages, weak references and roles
 *   op_resolve   which operator a call is (the resolved-overload cache)
 *                and its arguments as the formulas' ts_op_call
 *   counter      the operator counter (Python type Counter)
 *   saved        bytes saved for backward (saved-tensor hooks' bodies)
 *   handlers     custom module handlers: matching, normalising results
 *   attribution  parameter/buffer attribution and model totals
 *   observe      what a module call records (begin/end of a layer call)
 *   hooks        observer objects (Hook), install/uninstall, flags
 *   crawl        the crawl (Python type Crawl) and its report
 *   reports, tables, checkpoints, formulas   module functions
 *   progress     the progress line of long measurements (a terminal)
 *   timing, measure   module functions
 *   module       the module definition and method table (the top)
 * Where this differs from a first sketch, and why: describe sits below
 * callbacks (formulas receive shapes and numbers are converted with its
 * tensor helpers); the module descriptions are three files (modules.c was
 * 1,866 lines: class table, family readers, call fillers); the counter sits
 * below handlers (a handler's estimate runs with counting paused); the
 * crawl's C data and per-call recording (observe) sit below the hooks that
 * call them, and the Crawl type above both. Each layer has its own header,
 * which includes only lower ones. */
#ifndef TSX_STATE_H
#define TSX_STATE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "torchscan/core.h"

#define TSX_MAX_DTYPES 64
#define TSX_NAME_SLOTS 512

/* What the binding caches about a torch.dtype object (dtypes are
 * singletons, so the object pointer is the key). */
typedef struct tsx_dtype {
    PyObject *dtype;   /* strong reference */
    PyObject *name;    /* "torch.float32" */
    json_t *json_name; /* the same text as a JSON string */
    ts_dtype_class cls;
    int64_t itemsize;
} tsx_dtype;

/* One interned name, by the address of the C string it was made from. */
typedef struct tsx_name_slot {
    const char *key;
    const char *text; /* name's own UTF-8 */
    PyObject *name;   /* strong */
} tsx_name_slot;

typedef struct tsx_state {
    PyObject *tensor_type;    /* torch.Tensor */
    PyObject *parameter_type; /* torch.nn.Parameter */
    PyObject *strided;        /* torch.strided */
    PyObject *mapping_abc;    /* collections.abc.Mapping */
    PyObject *has_kernel; /* torch._C._dispatch_has_kernel_for_dispatch_key */
    PyObject *dtype_type; /* torch.dtype */
    PyObject *removable_handle; /* torch.utils.hooks.RemovableHandle */
    PyObject *script_module;    /* torch.jit.ScriptModule */
    PyObject *encoder_layer;    /* torch.nn.TransformerEncoderLayer */
    PyObject *sequential;       /* torch.nn.Sequential */
    PyObject *nn_module_mod;    /* the module torch.nn.modules.module */
    PyObject *hop_type;         /* torch._ops.HigherOrderOperator */
    /* the phase readers (phase.c): torch._C._current_graph_task_id,
     * torch._C._current_autograd_node, torch._C._autograd._get_sequence_nr */
    PyObject *graph_task_id, *autograd_node, *sequence_nr;
    PyTypeObject *crawl_type; /* the types (module.c creates them) */
    PyTypeObject *hook_type;
    PyTypeObject *counter_type;
    /* interned attribute names */
    PyObject *s_shape, *s_dtype, *s_device, *s_requires_grad, *s_is_nested,
        *s_layout, *s_numel, *s_training, *s_op, *s_overloadpacket, *s_schema,
        *s_arguments, *s_name, *s_decompose, *s_enter, *s_eval, *s_remove,
        *s_register_pre, *s_register_post, *s_always_call,
        *s_is_floating_point, *s_is_complex, *s_itemsize, *s_forward,
        *s_is_cpu, *s_cpu, *s_is_meta, *s_call_outside_dynamo, *s_getattribute,
        *s_forward_hooks, *s_global_forward_hooks, *s_sequence_nr;
    PyObject *object_getattribute; /* object.__getattribute__ (borrowed) */
    /* nn.Module.__getattr__ as its class dictionary holds it (callbacks.c's
     * module reader; strong, read on first use) */
    PyObject *module_getattr;
    tsx_dtype dtypes[TSX_MAX_DTYPES];
    int ndtypes;
    tsx_name_slot names[TSX_NAME_SLOTS]; /* tsx_name */
    struct tsx_op_cache *op_cache;     /* resolved operators (op_resolve.c) */
    json_t *j_tensor, *j_cpu;          /* shared metadata strings */
    struct tsx_meta_cache *meta_cache; /* CPU tensor metadata (describe.c) */
    struct tsx_strings *strings;       /* report vocabulary (convert.c) */
    struct tsx_pybuilder *spare_builder; /* kept between reports */
    /* The modules installed crawls observe, {address: (crawl address,
     * thread ident)} (hooks.c): a second crawl of any of them is refused
     * while the first is installed, in any thread. */
    PyObject *observed;
} tsx_state;

tsx_state *tsx_get_state(PyObject *module);
/* The state of the module that created `type` or its closest base made by
 * this module whose tp_new is `own_new` (Counter is subclassed in Python).
 * NULL with an exception when none. */
tsx_state *tsx_state_of_type(PyTypeObject *type, newfunc own_new);
/* Imports and interned names of a new module state: 0, or -1 with an
 * exception. */
int tsx_state_init(tsx_state *st);
/* Routes jansson's allocations through a malloc that a test can fail
 * (process-wide, once; frees stay free()). */
void tsx_json_alloc_init(void);
/* _json_nomemory(n): the n-th jansson allocation from now fails (n >= 1),
 * once; 0 turns it off. Returns how many were still to go. A test hook,
 * as _testcapi.set_nomemory is for Python's allocator. */
PyObject *tsx_engine_json_nomemory(PyObject *module, PyObject *arg);
/* Releases what tsx_state_init and tsx_name filled (the layers free their
 * own caches first: module.c's clear). */
void tsx_state_clear(tsx_state *st);
int tsx_state_traverse(tsx_state *st, visitproc visit, void *arg);

/* The interned str of a C string, kept in the module state (a new
 * reference), or NULL with an exception. Attribute lookups with an interned
 * name hit CPython's type attribute cache, which is keyed by the name
 * object's address: a fresh str (PyObject_GetAttrString) misses it and
 * walks the whole MRO on every call. */
PyObject *tsx_name(tsx_state *st, const char *name);

/* torch.distributed's DTensor class, or FakeTensor's, when a module that
 * defines it has been imported (borrowed from that module); NULL, without
 * an exception, when none was: nothing is imported, and a class nobody
 * imported has no instances. */
PyObject *tsx_dtensor_class(tsx_state *st);
PyObject *tsx_fake_tensor_class(tsx_state *st);

/* PyObject_GetAttrString with an interned name. */
static inline PyObject *
tsx_getattr(tsx_state *st, PyObject *obj, const char *name)
{
    PyObject *n = tsx_name(st, name), *v;
    if (n == NULL) {
        return NULL;
    }
    v = PyObject_GetAttr(obj, n);
    Py_DECREF(n);
    return v;
}

/* PyDict_GetItemString with an interned name (borrowed; NULL when missing
 * or on error, with the exception state as it was). */
static inline PyObject *
tsx_dict_get(tsx_state *st, PyObject *dict, const char *name)
{
    PyObject *type, *value, *tb, *n, *v = NULL;
    PyErr_Fetch(&type, &value, &tb);
    n = tsx_name(st, name);
    if (n != NULL) {
        v = PyDict_GetItemWithError(dict, n);
        Py_DECREF(n);
    }
    PyErr_Restore(type, value, tb);
    return v;
}

/* Looks an attribute up; *out is NULL (return 0) when it does not exist,
 * -1 with an exception on other errors, 1 when found. */
static inline int
tsx_optional_attr(tsx_state *st,
                  PyObject *obj,
                  const char *name,
                  PyObject **out)
{
    *out = tsx_getattr(st, obj, name);
    if (*out != NULL) {
        return 1;
    }
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

/* The raised exception as one object (3.11-compatible form of
 * PyErr_GetRaisedException); NULL when none. */
static inline PyObject *
tsx_fetch(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (type == NULL) {
        return NULL;
    }
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL) {
        PyException_SetTraceback(value, tb);
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
}

/* Raises `exc` again (steals the reference). */
static inline void
tsx_restore(PyObject *exc)
{
    PyObject *type = Py_NewRef((PyObject *)Py_TYPE(exc));
    PyObject *tb = PyException_GetTraceback(exc);
    PyErr_Restore(type, exc, tb);
}

#endif
