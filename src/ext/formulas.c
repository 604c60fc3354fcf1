/* The module formulas of one call, outside a crawl (formulas.h): the
 * module is described by the crawl's readers (module_desc.c), the call by
 * its first input and output tensors and the family's extra parts
 * (module_call.c), and the engine's ts_module_estimate answers, as it does
 * for a crawl's layer. */
#include "formulas.h"

static const char *const kind_names[] = {
    "complete", "unsupported", "error", "not_applicable"};

/* (kind, value, message) of one estimate; a new reference or NULL. */
static PyObject *
estimate_tuple(const ts_estimate *e)
{
    PyObject *value;
    if (e->kind == TS_EST_COMPLETE) {
        value = e->value.is_real ? PyFloat_FromDouble(e->value.r)
                                 : PyLong_FromLongLong(e->value.i);
    }
    else {
        value = Py_NewRef(Py_None);
    }
    if (value == NULL) {
        return NULL;
    }
    return Py_BuildValue("(sNs)", kind_names[e->kind], value, e->message);
}

/* The description of `module` as the crawl reads it, with the modes of
 * this call (the module's own training flag; a Transformer's sub-layers'). */
static int
describe_module(tsx_state *st, PyObject *module, ts_module_desc *desc)
{
    PyObject *native_type = NULL;
    const native_class *native = tsx_native_of(st, module, &native_type);
    tsx_desc_reader reader = {st, NULL, tsx_is_patched_forward};
    int training;
    if (tsx_module_desc(&reader, module, native, native_type, desc) < 0) {
        return -1;
    }
    if (desc->param_numel < 0) {
        desc->param_numel = 0; /* still lazy: count what exists */
    }
    training = tsx_attr_true(st, module, "training");
    if (training < 0) {
        return -1;
    }
    desc->training = training;
    if (desc->kind >= TS_MOD_TRANSFORMER_ENCODER_LAYER
        && desc->kind <= TS_MOD_TRANSFORMER) {
        return tsx_transformer_modes(st, module, desc);
    }
    return 0;
}

/* module_estimates(module, args, kwargs, output) -> {"module_flops": (kind,
 * value, message), "macs", "dmas", "receptive_field", "effective_stride",
 * "effective_padding"}, or None when the call exposes no input or no
 * output tensor. */
PyObject *
tsx_engine_module_estimates(PyObject *module, PyObject *args)
{
    tsx_state *st = tsx_get_state(module);
    PyObject *mod, *call_args, *call_kwargs, *output, *tname = NULL;
    PyObject *result = NULL;
    json_t *meta = NULL;
    ts_module_desc desc;
    ts_module_call call;
    ts_module_estimates est;
    int rc;
    if (!PyArg_ParseTuple(args,
                          "OO!O!O:module_estimates",
                          &mod,
                          &PyTuple_Type,
                          &call_args,
                          &PyDict_Type,
                          &call_kwargs,
                          &output)) {
        return NULL;
    }
    memset(&desc, 0, sizeof desc);
    memset(&call, 0, sizeof call);
    if (describe_module(st, mod, &desc) < 0) {
        goto done;
    }
    meta = tsx_describe_call(
        st, call_args, call_kwargs, &call.input, &call.has_input);
    if (meta == NULL) {
        goto done;
    }
    json_decref(meta);
    meta = tsx_describe(st, output, &call.output, &call.has_output);
    if (meta == NULL) {
        goto done;
    }
    if (!call.has_input || !call.has_output) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (tsx_fill_call(st, &desc, call_args, call_kwargs, output, &call) < 0) {
        goto done;
    }
    tname = PyType_GetName(Py_TYPE(mod));
    call.type_name = tname != NULL ? PyUnicode_AsUTF8(tname) : NULL;
    if (call.type_name == NULL) {
        goto done;
    }
    rc = ts_module_estimate(&desc, &call, &est);
    if (rc != TS_OK) {
        tsx_raise_status(rc, NULL);
        goto done;
    }
    result = Py_BuildValue("{sNsNsNsNsNsN}",
                           "module_flops",
                           estimate_tuple(&est.flops),
                           "macs",
                           estimate_tuple(&est.macs),
                           "dmas",
                           estimate_tuple(&est.dmas),
                           "receptive_field",
                           estimate_tuple(&est.rf),
                           "effective_stride",
                           estimate_tuple(&est.stride),
                           "effective_padding",
                           estimate_tuple(&est.padding));
done:
    json_decref(meta);
    Py_XDECREF(tname);
    return result;
}
