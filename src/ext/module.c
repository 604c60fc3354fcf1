/* torchscan._engine: module state, types and the functions the Python
 * package calls. */
#include "tsx.h"

#include "torchscan/diff.h"
#include "torchscan/memory.h"
#include "torchscan/render.h"
#include "torchscan/table.h"

static struct PyModuleDef engine_def;

/* Interned names by the address of the C string, checked by content (a
 * caller may pass a buffer whose address is later reused, with other text:
 * that slot is then replaced). */
#define NAME_SLOTS 512
static struct {
    const char *key;
    const char *text; /* name's own UTF-8 */
    PyObject *name;
} name_table[NAME_SLOTS];

PyObject *
tsx_name(const char *name)
{
    uintptr_t h = (uintptr_t)name;
    size_t slot;
    PyObject *s;
    h ^= h >> 9;
    slot = h & (NAME_SLOTS - 1);
    for (unsigned probe = 0; probe < 8; probe++) {
        size_t i = (h + probe) & (NAME_SLOTS - 1);
        if (name_table[i].key == NULL) {
            slot = i;
            break;
        }
        if (name_table[i].key == name) {
            if (strcmp(name_table[i].text, name) == 0) {
                return Py_NewRef(name_table[i].name);
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
        Py_XSETREF(name_table[slot].name, Py_NewRef(s));
        name_table[slot].key = name;
        name_table[slot].text = text;
    }
    return s;
}

tsx_state *
tsx_get_state(PyObject *module)
{
    return (tsx_state *)PyModule_GetState(module);
}

tsx_state *
tsx_state_of_type(PyTypeObject *type)
{
    PyObject *module = PyType_GetModuleByDef(type, &engine_def);
    return module ? tsx_get_state(module) : NULL;
}

/* ---- module functions --------------------------------------------------- */

/* (before, after) -> an engine comparison of their JSON forms. */
static PyObject *
compare_pair(PyObject *module,
             PyObject *args,
             const char *format,
             json_t *(*compare)(const json_t *, const json_t *, ts_error *))
{
    PyObject *before, *after, *result = NULL;
    json_t *jb = NULL, *ja = NULL, *diff = NULL;
    ts_error err;
    if (!PyArg_ParseTuple(args, format, &before, &after)) {
        return NULL;
    }
    jb = tsx_to_json(before, "before");
    ja = jb ? tsx_to_json(after, "after") : NULL;
    if (ja == NULL) {
        goto done;
    }
    ts_error_clear(&err);
    diff = compare(jb, ja, &err);
    result =
        diff ? tsx_from_json(tsx_get_state(module), diff) : tsx_raise(&err);
done:
    json_decref(jb);
    json_decref(ja);
    json_decref(diff);
    return result;
}

static PyObject *
engine_compare_reports(PyObject *module, PyObject *args)
{
    return compare_pair(
        module, args, "OO:compare_reports", ts_compare_reports);
}

static PyObject *
engine_diff_metrics(PyObject *module, PyObject *args)
{
    return compare_pair(module, args, "OO:diff_metrics", ts_diff_metrics);
}

static PyObject *
engine_format_summary(PyObject *module, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"report",
                             "wrap_mode",
                             "receptive_field",
                             "effective_rf_stats",
                             "max_depth",
                             NULL};
    PyObject *report, *wrap = Py_None, *depth = NULL, *result = NULL;
    int rf = 0, stats = 0, overflow = 0;
    long long max_depth = -1;
    ts_table_options opt;
    json_t *j = NULL;
    char *text;
    ts_error err;
    if (!PyArg_ParseTupleAndKeywords(args,
                                     kwds,
                                     "O|OppO!:format_summary",
                                     kwlist,
                                     &report,
                                     &wrap,
                                     &rf,
                                     &stats,
                                     &PyLong_Type,
                                     &depth)) {
        return NULL;
    }
    if (depth != NULL) {
        max_depth = PyLong_AsLongLongAndOverflow(depth, &overflow);
        if (max_depth == -1 && PyErr_Occurred()) {
            return NULL;
        }
        /* any depth beyond a C int is deeper than every model: refused as
         * such by the table, not as an OverflowError */
        if (overflow > 0 || max_depth > INT_MAX) {
            max_depth = INT_MAX;
        }
        else if (overflow < 0 || max_depth < 0) {
            max_depth = -1;
        }
    }
    if (wrap == Py_None) {
        opt.wrap_mode = TS_WRAP_NONE;
    }
    else if (PyUnicode_Check(wrap)
             && PyUnicode_CompareWithASCIIString(wrap, "mid") == 0) {
        opt.wrap_mode = TS_WRAP_MID;
    }
    else if (PyUnicode_Check(wrap)
             && PyUnicode_CompareWithASCIIString(wrap, "end") == 0) {
        opt.wrap_mode = TS_WRAP_END;
    }
    else {
        PyErr_SetString(PyExc_ValueError,
                        "wrap_mode must be 'mid', 'end' or None.");
        return NULL;
    }
    opt.receptive_field = rf;
    opt.effective_rf_stats = stats;
    opt.max_depth = (int)max_depth;
    j = tsx_to_json(report, "report");
    if (j == NULL) {
        return NULL;
    }
    ts_error_clear(&err);
    text = ts_format_summary(j, &opt, &err);
    json_decref(j);
    if (text == NULL) {
        return tsx_raise(&err);
    }
    result = PyUnicode_FromString(text);
    free(text);
    return result;
}

static PyObject *
engine_incomplete(PyObject *module, PyObject *report)
{
    json_t *j = tsx_to_json(report, "report");
    char *message = NULL;
    bool incomplete;
    PyObject *result;
    if (j == NULL) {
        return NULL;
    }
    incomplete = ts_report_incomplete(j, &message);
    json_decref(j);
    if (message == NULL) {
        return PyErr_NoMemory();
    }
    result = Py_BuildValue("(Os)", incomplete ? Py_True : Py_False, message);
    free(message);
    return result;
}

/* Appends the CPU allocation events below `node` of a profiler event tree
 * (node.tag == Allocation: node.extra_fields.{ptr, alloc_size, device}),
 * in the order they were recorded. */
static int
collect_allocations(PyObject *roots,
                    PyObject *alloc_tag,
                    ts_mem_event **buf,
                    size_t *n,
                    size_t *cap)
{
    PyObject *stack = PySequence_List(roots);
    int rc = -1;
    if (stack == NULL) {
        return -1;
    }
    /* depth first, in order: children are pushed last to first */
    if (PyList_Reverse(stack) < 0) {
        goto done;
    }
    while (PyList_GET_SIZE(stack) > 0) {
        Py_ssize_t top = PyList_GET_SIZE(stack) - 1;
        PyObject *node = Py_NewRef(PyList_GET_ITEM(stack, top));
        PyObject *tag = NULL, *fields = NULL, *dev = NULL, *type = NULL;
        PyObject *ptr = NULL, *size = NULL, *t = NULL, *kids = NULL;
        int is_alloc, ok = -1;
        if (PyList_SetSlice(stack, top, top + 1, NULL) < 0
            || (tag = tsx_getattr(node, "tag")) == NULL
            || (is_alloc = PyObject_RichCompareBool(tag, alloc_tag, Py_EQ))
                   < 0) {
            goto next;
        }
        if (is_alloc) {
            if ((fields = tsx_getattr(node, "extra_fields")) == NULL
                || (dev = tsx_getattr(fields, "device")) == NULL
                || (type = tsx_getattr(dev, "type")) == NULL
                || (ptr = tsx_getattr(fields, "ptr")) == NULL
                || (size = tsx_getattr(fields, "alloc_size")) == NULL
                || (t = tsx_getattr(node, "start_time_ns")) == NULL) {
                goto next;
            }
            if (PyUnicode_Check(type)
                && PyUnicode_CompareWithASCIIString(type, "cpu") == 0) {
                ts_mem_event ev = {0, 0, 0, 0};
                if (*n == *cap) {
                    size_t grown = *cap ? *cap * 2 : 256;
                    ts_mem_event *p =
                        PyMem_Realloc(*buf, grown * sizeof **buf);
                    if (p == NULL) {
                        PyErr_NoMemory();
                        goto next;
                    }
                    *buf = p;
                    *cap = grown;
                }
                ev.ptr = PyLong_AsUnsignedLongLongMask(ptr);
                ev.bytes = PyLong_AsLongLong(size);
                ev.time_ns = PyLong_AsLongLong(t);
                if (PyErr_Occurred()) {
                    goto next;
                }
                (*buf)[(*n)++] = ev;
            }
        }
        else {
            Py_ssize_t k;
            PyObject *children = tsx_getattr(node, "children");
            kids = children ? PySequence_Fast(children, "children") : NULL;
            Py_XDECREF(children);
            if (kids == NULL) {
                goto next;
            }
            for (k = PySequence_Fast_GET_SIZE(kids) - 1; k >= 0; k--) {
                if (PyList_Append(stack, PySequence_Fast_GET_ITEM(kids, k))
                    < 0) {
                    goto next;
                }
            }
        }
        ok = 0;
    next:
        Py_DECREF(node);
        Py_XDECREF(tag);
        Py_XDECREF(fields);
        Py_XDECREF(dev);
        Py_XDECREF(type);
        Py_XDECREF(ptr);
        Py_XDECREF(size);
        Py_XDECREF(t);
        Py_XDECREF(kids);
        if (ok < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    Py_DECREF(stack);
    return rc;
}

/* Peak of the CPU allocations of a profiler run: (event-tree roots,
 * Allocation tag) -> peak bytes, or None when there was no CPU allocation
 * event. */
static PyObject *
engine_memory_peak(PyObject *module, PyObject *args)
{
    PyObject *roots, *alloc_tag, *result = NULL;
    ts_mem_event *buf = NULL;
    size_t n = 0, cap = 0;
    int64_t peak = 0;
    int rc;
    if (!PyArg_ParseTuple(args, "OO:memory_peak", &roots, &alloc_tag)) {
        return NULL;
    }
    if (collect_allocations(roots, alloc_tag, &buf, &n, &cap) < 0) {
        goto done;
    }
    if (n == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    rc = ts_memory_peak(buf, n, &peak);
    if (rc == TS_EOVERFLOW) {
        PyErr_SetString(PyExc_OverflowError, "memory peak overflows");
    }
    else if (rc != TS_OK) {
        PyErr_NoMemory();
    }
    else {
        result = PyLong_FromLongLong(peak);
    }
done:
    PyMem_Free(buf);
    return result;
}

static PyObject *
engine_describe_call(PyObject *module, PyObject *args)
{
    PyObject *call_args, *call_kwargs, *result;
    json_t *meta;
    if (!PyArg_ParseTuple(args,
                          "O!O!:describe_call",
                          &PyTuple_Type,
                          &call_args,
                          &PyDict_Type,
                          &call_kwargs)) {
        return NULL;
    }
    meta = tsx_describe_call(
        tsx_get_state(module), call_args, call_kwargs, NULL, NULL);
    if (meta == NULL) {
        return NULL;
    }
    result = tsx_from_json(tsx_get_state(module), meta);
    json_decref(meta);
    return result;
}

/* render_benchmark_html(report, title) -> the benchmark HTML page. */
static PyObject *
engine_render_benchmark_html(PyObject *module, PyObject *args)
{
    PyObject *report, *title, *result = NULL;
    const char *title_text;
    Py_ssize_t title_len;
    json_t *j;
    char *html;
    ts_error err;
    if (!PyArg_ParseTuple(args, "OU:render_benchmark_html", &report, &title)) {
        return NULL;
    }
    title_text = PyUnicode_AsUTF8AndSize(title, &title_len);
    if (title_text == NULL || strlen(title_text) != (size_t)title_len) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "title holds invalid text");
        return NULL;
    }
    j = tsx_to_json(report, "report");
    if (j == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "report holds invalid text");
        }
        return NULL;
    }
    ts_error_clear(&err);
    html = ts_render_benchmark_html(j, title_text, &err);
    json_decref(j);
    result = html != NULL ? PyUnicode_FromString(html) : tsx_raise(&err);
    free(html);
    return result;
}

static PyMethodDef engine_methods[] = {
    {"describe_call",
     engine_describe_call,
     METH_VARARGS,
     "describe_call(args, kwargs) -> {'args': [...], 'kwargs': {...}}"},
    {"compare_reports",
     engine_compare_reports,
     METH_VARARGS,
     "compare_reports(before, after) -> ReportDiff (validated in C)."},
    {"diff_metrics",
     engine_diff_metrics,
     METH_VARARGS,
     "diff_metrics(before, after) -> {name: metric diff}."},
    {"format_summary",
     (PyCFunction)(void (*)(void))engine_format_summary,
     METH_VARARGS | METH_KEYWORDS,
     "format_summary(report, wrap_mode='mid', receptive_field=False, "
     "effective_rf_stats=False, max_depth=-1) -> str"},
    {"incomplete",
     engine_incomplete,
     METH_O,
     "incomplete(report) -> (bool, message) for strict mode."},
    {"memory_peak",
     engine_memory_peak,
     METH_VARARGS,
     "memory_peak(event_tree_roots, allocation_tag) -> int | None"},
    {"render_benchmark_html",
     engine_render_benchmark_html,
     METH_VARARGS,
     "render_benchmark_html(report, title) -> HTML page (validated in C)."},
    {NULL, NULL, 0, NULL},
};

/* ---- state -------------------------------------------------------------- */

#define INTERN(field, text)                           \
    do {                                              \
        st->field = PyUnicode_InternFromString(text); \
        if (st->field == NULL) {                      \
            return -1;                                \
        }                                             \
    } while (0)

static PyObject *
import_attr(const char *module, const char *attr)
{
    PyObject *m = PyImport_ImportModule(module);
    PyObject *a = m ? PyObject_GetAttrString(m, attr) : NULL;
    Py_XDECREF(m);
    return a;
}

static int
engine_exec(PyObject *module)
{
    tsx_state *st = tsx_get_state(module);
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
        || (st->nn_module_mod = import_attr("torch.nn.modules", "module"))
               == NULL
        || (st->mapping_abc = import_attr("collections.abc", "Mapping"))
               == NULL
        || (st->hop_type = import_attr("torch._ops", "HigherOrderOperator"))
               == NULL
        || (st->has_kernel = import_attr(
                "torch._C", "_dispatch_has_kernel_for_dispatch_key"))
               == NULL) {
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
    /* lives as long as the object type */
    st->object_getattribute =
        _PyType_Lookup(&PyBaseObject_Type, st->s_getattribute);
    st->j_tensor = json_string("tensor");
    st->j_cpu = json_string("cpu");
    if (st->j_tensor == NULL || st->j_cpu == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    st->crawl_type = (PyTypeObject *)PyType_FromModuleAndSpec(
        module, &tsx_crawl_spec, NULL);
    st->hook_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &tsx_hook_spec, NULL);
    st->counter_type = (PyTypeObject *)PyType_FromModuleAndSpec(
        module, &tsx_counter_spec, NULL);
    if (st->crawl_type == NULL || st->hook_type == NULL
        || st->counter_type == NULL
        || PyModule_AddType(module, st->crawl_type) < 0
        || PyModule_AddType(module, st->counter_type) < 0
        || PyModule_AddStringConstant(
               module, "OPERATOR_METHOD", TS_OPERATOR_METHOD)
               < 0
        || tsx_measure_init(module) < 0) {
        return -1;
    }
    return 0;
}

static int
engine_traverse(PyObject *module, visitproc visit, void *arg)
{
    tsx_state *st = tsx_get_state(module);
    Py_VISIT(st->tensor_type);
    Py_VISIT(st->parameter_type);
    Py_VISIT(st->strided);
    Py_VISIT(st->dtype_type);
    Py_VISIT(st->removable_handle);
    Py_VISIT(st->script_module);
    Py_VISIT(st->encoder_layer);
    Py_VISIT(st->nn_module_mod);
    Py_VISIT(st->mapping_abc);
    Py_VISIT(st->hop_type);
    Py_VISIT(st->has_kernel);
    Py_VISIT(st->crawl_type);
    Py_VISIT(st->hook_type);
    Py_VISIT(st->counter_type);
    for (int i = 0; i < st->ndtypes; i++) {
        Py_VISIT(st->dtypes[i].dtype);
        Py_VISIT(st->dtypes[i].name);
    }
    return tsx_op_cache_traverse(st, visit, arg);
}

static int
engine_clear(PyObject *module)
{
    tsx_state *st = tsx_get_state(module);
    PyObject **strings[] = {
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
    };
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        Py_CLEAR(*strings[i]);
    }
    Py_CLEAR(st->tensor_type);
    Py_CLEAR(st->parameter_type);
    Py_CLEAR(st->strided);
    Py_CLEAR(st->dtype_type);
    Py_CLEAR(st->removable_handle);
    Py_CLEAR(st->script_module);
    Py_CLEAR(st->encoder_layer);
    Py_CLEAR(st->nn_module_mod);
    Py_CLEAR(st->mapping_abc);
    Py_CLEAR(st->hop_type);
    Py_CLEAR(st->has_kernel);
    Py_CLEAR(st->crawl_type);
    Py_CLEAR(st->hook_type);
    Py_CLEAR(st->counter_type);
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
    tsx_op_cache_free(st);
    tsx_meta_cache_free(st);
    tsx_convert_free(st);
    return 0;
}

static void
engine_free(void *module)
{
    engine_clear((PyObject *)module);
}

static PyModuleDef_Slot engine_slots[] = {
    {Py_mod_exec, engine_exec},
    {0, NULL},
};

static struct PyModuleDef engine_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "torchscan._engine",
    .m_doc = "The C engine of TorchScan (internal; use the torchscan API).",
    .m_size = sizeof(tsx_state),
    .m_methods = engine_methods,
    .m_slots = engine_slots,
    .m_traverse = engine_traverse,
    .m_clear = engine_clear,
    .m_free = engine_free,
};

PyMODINIT_FUNC
PyInit__engine(void)
{
    return PyModuleDef_Init(&engine_def);
}
