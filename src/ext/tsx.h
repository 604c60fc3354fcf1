/* Internal declarations of the CPython binding (torchscan._engine). */
#ifndef TSX_H
#define TSX_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "torchscan/core.h"
#include "torchscan/module_formulas.h"
#include "torchscan/op_formulas.h"
#include "torchscan/session.h"

#define TSX_MAX_DTYPES 64

/* What the binding caches about a torch.dtype object (dtypes are
 * singletons, so the object pointer is the key). */
typedef struct tsx_dtype {
    PyObject *dtype;   /* strong reference */
    PyObject *name;    /* "torch.float32" */
    json_t *json_name; /* the same text as a JSON string */
    ts_dtype_class cls;
    int64_t itemsize;
} tsx_dtype;

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
    PyObject *nn_module_mod;    /* the module torch.nn.modules.module */
    PyObject *hop_type;         /* torch._ops.HigherOrderOperator */
    PyTypeObject *crawl_type;
    PyTypeObject *hook_type;
    PyTypeObject *counter_type;
    /* interned attribute names */
    PyObject *s_shape, *s_dtype, *s_device, *s_requires_grad, *s_is_nested,
        *s_layout, *s_numel, *s_training, *s_op, *s_overloadpacket, *s_schema,
        *s_arguments, *s_name, *s_decompose, *s_enter, *s_eval, *s_remove,
        *s_register_pre, *s_register_post, *s_always_call,
        *s_is_floating_point, *s_is_complex, *s_itemsize, *s_forward,
        *s_is_cpu, *s_cpu, *s_is_meta, *s_call_outside_dynamo, *s_getattribute,
        *s_forward_hooks, *s_global_forward_hooks;
    PyObject *object_getattribute; /* object.__getattribute__ (borrowed) */
    tsx_dtype dtypes[TSX_MAX_DTYPES];
    int ndtypes;
    struct tsx_op_cache *op_cache;       /* resolved operators (dispatch.c) */
    json_t *j_tensor, *j_cpu;            /* shared metadata strings */
    struct tsx_desc_memo *desc_memo;     /* while a crawl is being built */
    struct tsx_meta_cache *meta_cache;   /* CPU tensor metadata (describe.c) */
    struct tsx_strings *strings;         /* report vocabulary (convert.c) */
    struct tsx_pybuilder *spare_builder; /* kept between reports */
} tsx_state;

tsx_state *tsx_get_state(PyObject *module);
tsx_state *tsx_state_of_type(PyTypeObject *type);

/* convert.c: JSON trees <-> Python objects. */
PyObject *tsx_from_json(tsx_state *st, const json_t *value); /* new ref */
json_t *tsx_to_json(PyObject *obj, const char *what); /* new or NULL+exc */
/* An emitter (torchscan/emit.h) that builds Python objects directly.
 * tsx_pybuilder_new fills *emitter; tsx_pybuilder_finish returns the
 * built value (new reference) or NULL with an exception, and frees the
 * builder in both cases. */
struct ts_emitter;
typedef struct tsx_pybuilder tsx_pybuilder;
tsx_pybuilder *tsx_pybuilder_new(struct ts_emitter *emitter, tsx_state *st);
/* Frees the report builders' string table and spare builder (module
 * teardown). */
void tsx_convert_free(tsx_state *st);
PyObject *tsx_pybuilder_finish(tsx_pybuilder *builder);

/* The FlopReport of a counter as a JSON tree (new reference), or NULL with
 * an exception (dispatch.c). */
json_t *tsx_counter_flop_report(PyObject *counter, const char *torch_version);

/* Raises the Python exception matching an engine status (ValueError for
 * TS_EINVAL/TS_EFORMAT, MemoryError, OverflowError, NotImplementedError);
 * returns NULL. */
PyObject *tsx_raise(const ts_error *err);

/* describe.c: metadata and shapes. */
const tsx_dtype *tsx_dtype_info(tsx_state *st, PyObject *dtype);
int tsx_is_tensor(tsx_state *st, PyObject *obj);
/* Metadata tree of a value (contract 1.1 privacy rules). When `first` is not
 * NULL and *found is false, the first tensor met fills *first. */
json_t *tsx_describe(tsx_state *st,
                     PyObject *value,
                     ts_shape *first,
                     bool *found);
/* {"args": [...], "kwargs": {...}}; kwargs may be NULL. */
json_t *tsx_describe_call(tsx_state *st,
                          PyObject *args,
                          PyObject *kwargs,
                          ts_shape *first,
                          bool *found);
/* Shape, dtype class and density of a tensor; -1 with an exception on
 * failure; 0 with shape->ndim = -1 when a dimension is symbolic. */
int tsx_tensor_shape(tsx_state *st, PyObject *tensor, ts_shape *shape);

/* dispatch.c: the process-wide cache of resolved operator overloads */
void tsx_op_cache_free(tsx_state *st);
void tsx_meta_cache_free(tsx_state *st);
int tsx_op_cache_traverse(tsx_state *st, visitproc visit, void *arg);

/* dispatch.c: suspends counting (handler callbacks run inside the forward;
 * their tensor work is not the model's). `counter` may be NULL/None. */
void tsx_counter_pause(PyObject *counter, bool paused);

/* handlers.c: custom module handlers. */
/* The handler of the closest class in type's MRO: 1 with a new reference
 * in *handler, 0 when none, -1 on error. */
int tsx_handler_match(PyObject *handlers,
                      PyTypeObject *type,
                      PyObject **handler);
/* The subtree_metrics of a handler as estimate bits. */
int tsx_handler_owns(PyObject *handler, unsigned *owns);
/* "<module>.<qualname>" of a callback (new reference). */
PyObject *tsx_handler_identity(PyObject *estimate);

typedef struct tsx_handler_call {
    ts_session *session;
    int layer;
    unsigned requested; /* estimates not covered by an enclosing owner */
    unsigned owns;      /* the handler's subtree_metrics */
    PyObject *estimate, *identity, *module_call_cls, *counter;
    PyObject *module, *args, *kwargs, *output; /* borrowed */
} tsx_handler_call;

/* Runs the callback once and stores its normalised estimates and
 * diagnostics on the layer. 0, or -1 with an exception (interrupts). */
int tsx_handler_run(const tsx_handler_call *call);

/* modules.c: module descriptions. */
typedef struct native_class {
    const char *name; /* class __qualname__ in torch.nn.modules.* */
    ts_module_kind kind;
    int rank;
} native_class;

/* The native family a module's formulas come from, or NULL; a subclass
 * counts only while it keeps the native forward. *native_type (borrowed)
 * is the matching class. */
const native_class *tsx_native_of(PyObject *module, PyObject **native_type);
/* Reads the hyperparameters of a native module (never fails on odd
 * attributes: the module becomes TS_MOD_UNKNOWN); -1 on memory errors. */
/* Reads the modes of a native Transformer's attention blocks and dropouts
 * into `d` (they decide which dropouts count); a stack whose layers'
 * modes differ is refused. 0, or -1 with an exception set. */
int tsx_transformer_modes(PyObject *module, ts_module_desc *d);
int tsx_module_desc(tsx_state *st,
                    PyObject *module,
                    const native_class *native,
                    PyObject *native_type,
                    ts_module_desc *desc);
/* Elements of every parameter; -1 while lazy parameters are unmaterialized. */
int64_t tsx_param_numel(tsx_state *st, PyObject *module);
/* Fills the family-specific parts of a call (attention inputs and masks,
 * recurrent states, second inputs, bag offsets). */
int tsx_fill_call(tsx_state *st,
                  const ts_module_desc *desc,
                  PyObject *args,
                  PyObject *kwargs,
                  PyObject *output,
                  ts_module_call *call);
/* Module descriptions read once per crawl construction (begin/end around
 * it): get returns 1 and copies a memoized description, put stores one. */
int tsx_desc_memo_begin(tsx_state *st);
void tsx_desc_memo_end(tsx_state *st);
int tsx_desc_memo_get(tsx_state *st, PyObject *module, ts_module_desc *out);
int tsx_desc_memo_put(tsx_state *st,
                      PyObject *module,
                      const ts_module_desc *desc);

/* True for an instance of torch.nn's class `qualname` itself. */
int tsx_is_native_named(PyObject *obj, const char *qualname);
/* module._modules (new reference; an empty dict when absent). */
PyObject *tsx_child_dict(PyObject *module);
/* 1 when the module has a child module, 0 when not, -1 on error. */
int tsx_has_children(PyObject *module);

/* crawl.c / dispatch.c types */
extern PyType_Spec tsx_crawl_spec;
extern PyType_Spec tsx_hook_spec;
/* 0 when `value`, a module's instance "forward", is a crawl's wrapper of the
 * class's own forward; 1 for any other value (a patch). */
int tsx_is_patched_forward(tsx_state *st, PyObject *value);
extern PyType_Spec tsx_counter_spec;

/* The session a counter attributes operators to (NULL when none). */
typedef struct tsx_crawl tsx_crawl;
ts_session *tsx_crawl_session(tsx_crawl *crawl);

/* timing.c: the measure_latency loop; measure.c: the other workload
 * measurement functions, added to the module by tsx_measure_init. */
PyObject *tsx_time_workload(PyObject *module, PyObject *args, PyObject *kwds);
int tsx_measure_init(PyObject *module);


/* module.c: the interned str of a C string, kept for the life of the
 * process (a new reference), or NULL with an exception. Attribute lookups with
 * an interned name hit CPython's type attribute cache, which is keyed by the
 * name object's address: a fresh str (PyObject_GetAttrString) misses it
 * and walks the whole MRO on every call. */
PyObject *tsx_name(const char *name);

/* PyObject_GetAttrString with an interned name. */
static inline PyObject *
tsx_getattr(PyObject *obj, const char *name)
{
    PyObject *n = tsx_name(name), *v;
    if (n == NULL) {
        return NULL;
    }
    v = PyObject_GetAttr(obj, n);
    Py_DECREF(n);
    return v;
}

/* describe.c: operator.index(value), except that a SymInt gives its hint
 * without adding a guard (TypeError when it has none). New reference, or
 * NULL with an exception. */
PyObject *tsx_number_index(PyObject *value);

/* PyDict_GetItemString with an interned name (borrowed; NULL when missing
 * or on error, with the exception state as it was). */
static inline PyObject *
tsx_dict_get(PyObject *dict, const char *name)
{
    PyObject *type, *value, *tb, *n, *v = NULL;
    PyErr_Fetch(&type, &value, &tb);
    n = tsx_name(name);
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
tsx_optional_attr(PyObject *obj, const char *name, PyObject **out)
{
    *out = tsx_getattr(obj, name);
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

static inline void
tsx_restore(PyObject *exc)
{
    PyObject *type = Py_NewRef((PyObject *)Py_TYPE(exc));
    PyObject *tb = PyException_GetTraceback(exc);
    PyErr_Restore(type, exc, tb);
}

#endif
