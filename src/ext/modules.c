/* What the engine's formulas need to know about a module: its native
 * family (the class must keep the native forward), its hyperparameters
 * (read once per crawl), and the shapes of one call beyond the first input
 * and output tensors. */
#include "tsx.h"

/* ---- module descriptions ------------------------------------------------ */


/* Native families whose formulas apply when the forward is unchanged,
 * sorted by strcmp (binary search; a Python test checks the order). A
 * subclass that keeps the native forward (LazyLinear) resolves to its base
 * through the MRO; aliases such as ZeroPad2d and UpsamplingNearest2d are
 * listed so that the docs' class index names them. */
static const native_class native_classes[] = {
    {"AdaptiveAvgPool1d", TS_MOD_ADAPTIVE_AVGPOOL, 1},
    {"AdaptiveAvgPool2d", TS_MOD_ADAPTIVE_AVGPOOL, 2},
    {"AdaptiveAvgPool3d", TS_MOD_ADAPTIVE_AVGPOOL, 3},
    {"AdaptiveMaxPool1d", TS_MOD_ADAPTIVE_MAXPOOL, 1},
    {"AdaptiveMaxPool2d", TS_MOD_ADAPTIVE_MAXPOOL, 2},
    {"AdaptiveMaxPool3d", TS_MOD_ADAPTIVE_MAXPOOL, 3},
    {"AlphaDropout", TS_MOD_ALPHA_DROPOUT, 0},
    {"AvgPool1d", TS_MOD_AVGPOOL, 1},
    {"AvgPool2d", TS_MOD_AVGPOOL, 2},
    {"AvgPool3d", TS_MOD_AVGPOOL, 3},
    {"BatchNorm1d", TS_MOD_BATCHNORM, 1},
    {"BatchNorm2d", TS_MOD_BATCHNORM, 2},
    {"BatchNorm3d", TS_MOD_BATCHNORM, 3},
    {"Bilinear", TS_MOD_BILINEAR, 0},
    {"CELU", TS_MOD_CELU, 0},
    {"ChannelShuffle", TS_MOD_CHANNEL_SHUFFLE, 0},
    {"CircularPad1d", TS_MOD_PAD, 1},
    {"CircularPad2d", TS_MOD_PAD, 2},
    {"CircularPad3d", TS_MOD_PAD, 3},
    {"ConstantPad1d", TS_MOD_CONSTANT_PAD, 1},
    {"ConstantPad2d", TS_MOD_CONSTANT_PAD, 2},
    {"ConstantPad3d", TS_MOD_CONSTANT_PAD, 3},
    {"Conv1d", TS_MOD_CONV, 1},
    {"Conv2d", TS_MOD_CONV, 2},
    {"Conv3d", TS_MOD_CONV, 3},
    {"ConvTranspose1d", TS_MOD_CONVTRANSPOSE, 1},
    {"ConvTranspose2d", TS_MOD_CONVTRANSPOSE, 2},
    {"ConvTranspose3d", TS_MOD_CONVTRANSPOSE, 3},
    {"CosineSimilarity", TS_MOD_COSINE_SIMILARITY, 0},
    {"Dropout", TS_MOD_DROPOUT, 0},
    {"Dropout1d", TS_MOD_FEATURE_DROPOUT, 1},
    {"Dropout2d", TS_MOD_FEATURE_DROPOUT, 2},
    {"Dropout3d", TS_MOD_FEATURE_DROPOUT, 3},
    {"ELU", TS_MOD_ELU, 0},
    {"Embedding", TS_MOD_EMBEDDING, 0},
    {"EmbeddingBag", TS_MOD_EMBEDDING_BAG, 0},
    {"FeatureAlphaDropout", TS_MOD_ALPHA_DROPOUT, 0},
    {"Flatten", TS_MOD_FLATTEN, 0},
    {"Fold", TS_MOD_FOLD, 2},
    {"GELU", TS_MOD_GELU, 0},
    {"GLU", TS_MOD_GLU, 0},
    {"GRU", TS_MOD_RNN, 0},
    {"GRUCell", TS_MOD_RNN_CELL, 0},
    {"GroupNorm", TS_MOD_GROUPNORM, 0},
    {"Hardshrink", TS_MOD_HARDSHRINK, 0},
    {"Hardsigmoid", TS_MOD_HARDSIGMOID, 0},
    {"Hardswish", TS_MOD_HARDSWISH, 0},
    {"Hardtanh", TS_MOD_HARDTANH, 0},
    {"Identity", TS_MOD_IDENTITY, 0},
    {"InstanceNorm1d", TS_MOD_INSTANCENORM, 1},
    {"InstanceNorm2d", TS_MOD_INSTANCENORM, 2},
    {"InstanceNorm3d", TS_MOD_INSTANCENORM, 3},
    {"LPPool1d", TS_MOD_LPPOOL, 1},
    {"LPPool2d", TS_MOD_LPPOOL, 2},
    {"LPPool3d", TS_MOD_LPPOOL, 3},
    {"LSTM", TS_MOD_RNN, 0},
    {"LSTMCell", TS_MOD_RNN_CELL, 0},
    {"LayerNorm", TS_MOD_LAYERNORM, 0},
    {"LeakyReLU", TS_MOD_LEAKYRELU, 0},
    {"Linear", TS_MOD_LINEAR, 0},
    {"LocalResponseNorm", TS_MOD_LOCAL_RESPONSE_NORM, 0},
    {"LogSigmoid", TS_MOD_LOGSIGMOID, 0},
    {"LogSoftmax", TS_MOD_LOGSOFTMAX, 0},
    {"MaxPool1d", TS_MOD_MAXPOOL, 1},
    {"MaxPool2d", TS_MOD_MAXPOOL, 2},
    {"MaxPool3d", TS_MOD_MAXPOOL, 3},
    {"MaxUnpool1d", TS_MOD_MAXUNPOOL, 1},
    {"MaxUnpool2d", TS_MOD_MAXUNPOOL, 2},
    {"MaxUnpool3d", TS_MOD_MAXUNPOOL, 3},
    {"Mish", TS_MOD_MISH, 0},
    {"MultiheadAttention", TS_MOD_MHA, 0},
    {"PReLU", TS_MOD_PRELU, 0},
    {"PairwiseDistance", TS_MOD_PAIRWISE_DISTANCE, 0},
    {"PixelShuffle", TS_MOD_PIXEL_SHUFFLE, 0},
    {"PixelUnshuffle", TS_MOD_PIXEL_SHUFFLE, 0},
    {"RMSNorm", TS_MOD_RMSNORM, 0},
    {"RNN", TS_MOD_RNN, 0},
    {"RNNCell", TS_MOD_RNN_CELL, 0},
    {"RReLU", TS_MOD_RRELU, 0},
    {"ReLU", TS_MOD_RELU, 0},
    {"ReLU6", TS_MOD_RELU6, 0},
    {"ReflectionPad1d", TS_MOD_PAD, 1},
    {"ReflectionPad2d", TS_MOD_PAD, 2},
    {"ReflectionPad3d", TS_MOD_PAD, 3},
    {"ReplicationPad1d", TS_MOD_PAD, 1},
    {"ReplicationPad2d", TS_MOD_PAD, 2},
    {"ReplicationPad3d", TS_MOD_PAD, 3},
    {"SELU", TS_MOD_SELU, 0},
    {"SiLU", TS_MOD_SILU, 0},
    {"Sigmoid", TS_MOD_SIGMOID, 0},
    {"Softmax", TS_MOD_SOFTMAX, 0},
    {"Softmax2d", TS_MOD_SOFTMAX2D, 0},
    {"Softmin", TS_MOD_SOFTMIN, 0},
    {"Softplus", TS_MOD_SOFTPLUS, 0},
    {"Softshrink", TS_MOD_SOFTSHRINK, 0},
    {"Softsign", TS_MOD_SOFTSIGN, 0},
    {"SyncBatchNorm", TS_MOD_BATCHNORM, 0},
    {"Tanh", TS_MOD_TANH, 0},
    {"Tanhshrink", TS_MOD_TANHSHRINK, 0},
    {"Threshold", TS_MOD_THRESHOLD, 0},
    {"Transformer", TS_MOD_TRANSFORMER, 0},
    {"TransformerDecoder", TS_MOD_TRANSFORMER_DECODER, 0},
    {"TransformerDecoderLayer", TS_MOD_TRANSFORMER_DECODER_LAYER, 0},
    {"TransformerEncoder", TS_MOD_TRANSFORMER_ENCODER, 0},
    {"TransformerEncoderLayer", TS_MOD_TRANSFORMER_ENCODER_LAYER, 0},
    {"Unflatten", TS_MOD_UNFLATTEN, 0},
    {"Unfold", TS_MOD_UNFOLD, 0},
    {"Upsample", TS_MOD_UPSAMPLE, 0},
    {"UpsamplingBilinear2d", TS_MOD_UPSAMPLE, 0},
    {"UpsamplingNearest2d", TS_MOD_UPSAMPLE, 0},
    {"ZeroPad1d", TS_MOD_CONSTANT_PAD, 1},
    {"ZeroPad2d", TS_MOD_CONSTANT_PAD, 2},
    {"ZeroPad3d", TS_MOD_CONSTANT_PAD, 3},
    {"_BatchNorm", TS_MOD_BATCHNORM, 0},
};

static const native_class *
find_native(const char *qualname)
{
    size_t lo = 0, hi = sizeof native_classes / sizeof native_classes[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(qualname, native_classes[mid].name);
        if (c == 0) {
            return &native_classes[mid];
        }
        if (c < 0) {
            hi = mid;
        }
        else {
            lo = mid + 1;
        }
    }
    return NULL;
}

static int
starts_with(PyObject *text, const char *prefix)
{
    const char *s = PyUnicode_Check(text) ? PyUnicode_AsUTF8(text) : NULL;
    if (s == NULL) {
        PyErr_Clear();
        return 0;
    }
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The native class this module's formulas come from, or NULL. A subclass
 * counts as native only while it keeps the native forward: an overridden
 * forward does other work, so it is not silently treated as native. */
const native_class *
tsx_native_of(PyObject *module, PyObject **native_type)
{
    PyTypeObject *type = Py_TYPE(module);
    PyObject *mro = type->tp_mro;
    *native_type = NULL;
    if (mro == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyObject *cls = PyTuple_GET_ITEM(mro, i);
        PyObject *modname, *qualname;
        const native_class *found = NULL;
        if (!PyType_Check(cls)) {
            continue;
        }
        modname = tsx_getattr(cls, "__module__");
        if (modname == NULL) {
            PyErr_Clear();
            continue;
        }
        if (starts_with(modname, "torch.nn.modules.")) {
            qualname = PyType_GetQualName((PyTypeObject *)cls);
            if (qualname == NULL) {
                PyErr_Clear();
            }
            else {
                const char *q = PyUnicode_AsUTF8(qualname);
                if (q != NULL) {
                    found = find_native(q);
                }
                else {
                    PyErr_Clear();
                }
                Py_DECREF(qualname);
            }
        }
        Py_DECREF(modname);
        if (found != NULL) {
            *native_type = cls;
            return found;
        }
    }
    return NULL;
}

static int
forward_unchanged(tsx_state *st, PyObject *module, PyObject *native_type)
{
    PyObject *dict = PyObject_GenericGetDict(module, NULL);
    PyObject *mine = NULL, *theirs = NULL;
    int same = 0;
    if (dict == NULL) {
        PyErr_Clear();
    }
    else {
        /* an instance "forward" is a patch, unless it is a crawl's
         * wrapper of the class's own forward */
        PyObject *own = PyDict_GetItemWithError(dict, st->s_forward);
        int patched = own != NULL ? tsx_is_patched_forward(st, own)
                                  : (PyErr_Occurred() ? -1 : 0);
        Py_DECREF(dict);
        if (patched != 0) {
            if (patched < 0) {
                PyErr_Clear();
            }
            return 0;
        }
    }
    mine = PyObject_GetAttr((PyObject *)Py_TYPE(module), st->s_forward);
    theirs = mine ? PyObject_GetAttr(native_type, st->s_forward) : NULL;
    if (theirs == NULL) {
        PyErr_Clear();
    }
    else {
        same = mine == theirs;
    }
    Py_XDECREF(mine);
    Py_XDECREF(theirs);
    return same;
}

/* 1 when the class looks attributes up as nn.Module does: its
 * __getattr__ is nn.Module's and its __getattribute__ is object's (a
 * subclass overriding either decides for itself). Errors read as 0. */
static int
module_lookup(PyTypeObject *type)
{
    /* as the class dictionaries hold them; kept for the process */
    static PyObject *module_getattr, *object_getattribute;
    PyObject *ga = tsx_name("__getattr__");
    PyObject *gab = tsx_name("__getattribute__");
    int yes = 0;
    if (ga != NULL && gab != NULL && module_getattr == NULL) {
        PyObject *nn = PyImport_ImportModule("torch.nn");
        PyObject *cls = nn ? tsx_getattr(nn, "Module") : NULL;
        if (cls != NULL && PyType_Check(cls)) {
            module_getattr =
                Py_XNewRef(_PyType_Lookup((PyTypeObject *)cls, ga));
            object_getattribute =
                Py_XNewRef(_PyType_Lookup(&PyBaseObject_Type, gab));
        }
        Py_XDECREF(cls);
        Py_XDECREF(nn);
    }
    if (ga != NULL && gab != NULL && module_getattr != NULL) {
        yes = _PyType_Lookup(type, ga) == module_getattr
              && _PyType_Lookup(type, gab) == object_getattribute;
    }
    Py_XDECREF(ga);
    Py_XDECREF(gab);
    PyErr_Clear();
    return yes;
}

/* getattr for nn.Module attributes. PyTorch keeps parameters, buffers and
 * submodules in the _parameters, _buffers and _modules dicts and finds them
 * through nn.Module.__getattr__, a Python function reached after the
 * ordinary lookup has failed (an AttributeError raised and cleared). When
 * the class does not define the name, the instance dict and then those
 * three dicts are read directly, in the order nn.Module.__getattr__ uses,
 * for classes that keep nn.Module's lookup; anything else takes the
 * ordinary lookup. New reference, or NULL with an exception. */
static PyObject *
module_attr(PyObject *obj, const char *name)
{
    static const char *const stores[3] = {
        "_parameters", "_buffers", "_modules"};
    PyObject *n = tsx_name(name), *dict, *v = NULL;
    if (n == NULL) {
        return NULL;
    }
    if (_PyType_Lookup(Py_TYPE(obj), n) == NULL && module_lookup(Py_TYPE(obj))
        && (dict = PyObject_GenericGetDict(obj, NULL)) != NULL) {
        v = PyDict_GetItemWithError(dict, n);
        for (int i = 0; v == NULL && !PyErr_Occurred() && i < 3; i++) {
            PyObject *sn = tsx_name(stores[i]);
            PyObject *store = sn ? PyDict_GetItemWithError(dict, sn) : NULL;
            Py_XDECREF(sn);
            if (store != NULL && PyDict_CheckExact(store)) {
                v = PyDict_GetItemWithError(store, n);
            }
        }
        Py_XINCREF(v);
        Py_DECREF(dict);
        if (v != NULL || PyErr_Occurred()) {
            Py_DECREF(n);
            return v;
        }
    }
    PyErr_Clear(); /* no instance dict: the ordinary lookup decides */
    v = PyObject_GetAttr(obj, n);
    Py_DECREF(n);
    return v;
}

static int
attr_int(PyObject *obj, const char *name, int64_t *out)
{
    PyObject *v = module_attr(obj, name);
    long long x;
    if (v == NULL) {
        return -1;
    }
    x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = x;
    return 0;
}

static int
attr_real(PyObject *obj, const char *name, double *out)
{
    PyObject *v = module_attr(obj, name);
    double x;
    if (v == NULL) {
        return -1;
    }
    x = PyFloat_AsDouble(v);
    Py_DECREF(v);
    if (x == -1.0 && PyErr_Occurred()) {
        return -1;
    }
    *out = x;
    return 0;
}

/* 1 when the attribute is truthy, 0 when falsy, -1 on error. */
static int
attr_true(PyObject *obj, const char *name)
{
    PyObject *v = module_attr(obj, name);
    int t;
    if (v == NULL) {
        return -1;
    }
    t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
}

/* 1 when the module has a parameter `name` that is not None. Native
 * families always register weight and bias (None when absent), so the
 * _parameters dict answers without nn.Module.__getattr__. */
static int
param_present(PyObject *module, const char *name)
{
    PyObject *d, *item;
    int present = 0;
    if (tsx_optional_attr(module, "_parameters", &d) < 0) {
        return -1;
    }
    if (d != NULL && PyDict_Check(d)) {
        item = tsx_dict_get(d, name);
        present = item != NULL && item != Py_None;
    }
    Py_XDECREF(d);
    return present;
}

/* 1 when the attribute exists and is not None, 0 when not, -1 on error. */
static int
attr_present(PyObject *obj, const char *name)
{
    PyObject *v = module_attr(obj, name);
    if (v == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(v);
    return v != Py_None;
}

/* Reads an int or a tuple of `rank` ints into out[]. */
static int
attr_tuple(PyObject *obj,
           const char *name,
           int rank,
           int64_t *out,
           bool *is_int,
           bool *is_string)
{
    PyObject *v = module_attr(obj, name);
    int rc = -1;
    if (is_int != NULL) {
        *is_int = false;
    }
    if (is_string != NULL) {
        *is_string = false;
    }
    if (v == NULL) {
        return -1;
    }
    if (PyUnicode_Check(v) && is_string != NULL) {
        *is_string = true;
        rc = 0;
    }
    else if (PyLong_Check(v)) {
        long long x = PyLong_AsLongLong(v);
        if (!(x == -1 && PyErr_Occurred())) {
            for (int i = 0; i < rank; i++) {
                out[i] = x;
            }
            if (is_int != NULL) {
                *is_int = true;
            }
            rc = 0;
        }
    }
    else if (PyTuple_Check(v) || PyList_Check(v)) {
        PyObject *seq = PySequence_Fast(v, "");
        if (seq != NULL) {
            Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
            rc = 0;
            for (int i = 0; i < rank && rc == 0; i++) {
                /* A shorter tuple (MaxPool2d((2,))) repeats its last entry,
                 * as PyTorch's pooling does. */
                PyObject *item =
                    PySequence_Fast_GET_ITEM(seq, i < n ? i : n - 1);
                long long x = n ? PyLong_AsLongLong(item) : 0;
                if (x == -1 && PyErr_Occurred()) {
                    rc = -1;
                }
                out[i] = x;
            }
            Py_DECREF(seq);
        }
    }
    else {
        PyErr_Format(PyExc_TypeError,
                     "unexpected %s of type %.100s",
                     name,
                     Py_TYPE(v)->tp_name);
    }
    Py_DECREF(v);
    return rc;
}

#define TRY(expr)         \
    do {                  \
        if ((expr) < 0) { \
            goto error;   \
        }                 \
    } while (0)


typedef struct param_walk {
    PyObject **seen; /* parameters counted so far (borrowed) */
    size_t n, cap;
    int64_t total;
    bool lazy; /* an unmaterialized parameter */
} param_walk;

/* Adds the parameters of `module` and its children, each tensor once (as
 * parameters() does), walking the _parameters/_modules dicts in C. */
static int
walk_params(tsx_state *st, PyObject *module, param_walk *w, int depth)
{
    PyObject *params, *children, *key, *value;
    Py_ssize_t pos = 0;
    if (depth > 1000
        || tsx_optional_attr(module, "_parameters", &params) < 0) {
        return -1;
    }
    if (params != NULL && PyDict_Check(params)) {
        while (PyDict_Next(params, &pos, &key, &value)) {
            bool dup = false;
            if (value == Py_None) {
                continue;
            }
            for (size_t i = 0; i < w->n && !dup; i++) {
                dup = w->seen[i] == value;
            }
            if (dup) {
                continue;
            }
            if (w->n == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 32;
                PyObject **p = PyMem_Realloc(w->seen, cap * sizeof *p);
                if (p == NULL) {
                    Py_DECREF(params);
                    PyErr_NoMemory();
                    return -1;
                }
                w->seen = p;
                w->cap = cap;
            }
            w->seen[w->n++] = value;
            PyObject *n = PyObject_CallMethodNoArgs(value, st->s_numel);
            long long v = n ? PyLong_AsLongLong(n) : -1;
            Py_XDECREF(n);
            if (v < 0) {
                PyErr_Clear();
                w->lazy = true;
            }
            else {
                w->total += v;
            }
        }
    }
    Py_XDECREF(params);
    children = tsx_child_dict(module);
    if (children == NULL) {
        return -1;
    }
    pos = 0;
    while (PyDict_Next(children, &pos, &key, &value)) {
        if (value != Py_None && walk_params(st, value, w, depth + 1) < 0) {
            Py_DECREF(children);
            return -1;
        }
    }
    Py_DECREF(children);
    return 0;
}

/* Elements of every parameter (recursively); -1 while a lazy module's
 * parameters are not materialized yet. */
int64_t
tsx_param_numel(tsx_state *st, PyObject *module)
{
    param_walk w = {NULL, 0, 0, 0, false};
    int rc = walk_params(st, module, &w, 0);
    PyMem_Free(w.seen);
    PyErr_Clear();
    return rc < 0 || w.lazy ? -1 : w.total;
}

/* Reads a string attribute and sets *index to its position in `names`
 * (NULL terminated), or -1 when the value is not listed (the caller
 * refuses it). Returns -1 on error, else 0. */
static int
attr_choice(PyObject *obj,
            const char *name,
            const char *const *names,
            int *index)
{
    PyObject *v = module_attr(obj, name);
    *index = -1;
    if (v == NULL) {
        return -1;
    }
    for (int i = 0; PyUnicode_Check(v) && names[i] != NULL; i++) {
        if (PyUnicode_CompareWithASCIIString(v, names[i]) == 0) {
            *index = i;
            break;
        }
    }
    Py_DECREF(v);
    return 0;
}

/* Reads an int attribute that may be None (Softmax's legacy dim). */
static int
attr_int_or_none(PyObject *obj, const char *name, int64_t *out, bool *none)
{
    PyObject *v = module_attr(obj, name);
    if (v == NULL) {
        return -1;
    }
    *none = v == Py_None;
    *out = 0;
    if (!*none) {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred()) {
            Py_DECREF(v);
            return -1;
        }
        *out = x;
    }
    Py_DECREF(v);
    return 0;
}

/* normalized_shape of LayerNorm and RMSNorm: its element count. */
static int
read_normalized_shape(PyObject *module, ts_module_desc *d)
{
    int64_t shape[TS_MAX_DIMS];
    PyObject *ns = module_attr(module, "normalized_shape");
    Py_ssize_t n;
    if (ns == NULL) {
        return -1;
    }
    n = PyObject_Length(ns);
    Py_DECREF(ns);
    if (n < 0 || n > TS_MAX_DIMS) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError,
                            "normalized_shape has too many dims");
        }
        return -1;
    }
    if (attr_tuple(module, "normalized_shape", (int)n, shape, NULL, NULL)
        < 0) {
        return -1;
    }
    d->normalized_ndim = (int)n;
    d->normalized_numel = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!ts_mul(d->normalized_numel, shape[i], &d->normalized_numel)) {
            PyErr_SetString(PyExc_OverflowError,
                            "normalized_shape is too large");
            return -1;
        }
    }
    return 0;
}

/* Keeps the first reason a Transformer-family module is refused. */
static void
refuse(ts_module_desc *d, const char *reason)
{
    if (d->refusal == NULL) {
        d->refusal = reason;
    }
}

static const char *const REFUSE_SUBLAYER =
    "Transformer estimates need native sub-layers (MultiheadAttention, "
    "Linear, Dropout, LayerNorm) with unchanged forwards";
static const char *const REFUSE_ACTIVATION =
    "Transformer estimates support the ReLU or exact GELU activation only";

/* The description of `obj` (a child module or an attribute such as
 * `activation`) as the crawl would read it: unknown when not native. */
/* ---- descriptions read once per crawl -------------------------------------
 */

/* A native Transformer stack reads its layers' descriptions, each layer
 * its sub-layers', and the crawl then reads every one of those modules
 * again for its own row: the memo keeps each read (pointer-keyed, only
 * while a crawl is being built). */
struct tsx_desc_memo {
    PyObject **keys; /* borrowed: the model holds its modules */
    ts_module_desc *descs;
    size_t n, cap;
};

int
tsx_desc_memo_get(tsx_state *st, PyObject *module, ts_module_desc *out)
{
    struct tsx_desc_memo *m = st->desc_memo;
    for (size_t i = 0; m != NULL && i < m->n; i++) {
        if (m->keys[i] == module) {
            *out = m->descs[i];
            return 1;
        }
    }
    return 0;
}

int
tsx_desc_memo_put(tsx_state *st, PyObject *module, const ts_module_desc *d)
{
    struct tsx_desc_memo *m = st->desc_memo;
    if (m == NULL) {
        return 0;
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        PyObject **keys = PyMem_Realloc(m->keys, cap * sizeof *keys);
        ts_module_desc *descs =
            keys ? PyMem_Realloc(m->descs, cap * sizeof *descs) : NULL;
        if (keys != NULL) {
            m->keys = keys;
        }
        if (descs == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        m->descs = descs;
        m->cap = cap;
    }
    m->keys[m->n] = module;
    m->descs[m->n] = *d;
    m->n++;
    return 0;
}

int
tsx_desc_memo_begin(tsx_state *st)
{
    st->desc_memo = PyMem_Calloc(1, sizeof(struct tsx_desc_memo));
    if (st->desc_memo == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

void
tsx_desc_memo_end(tsx_state *st)
{
    struct tsx_desc_memo *m = st->desc_memo;
    if (m != NULL) {
        PyMem_Free(m->keys);
        PyMem_Free(m->descs);
        PyMem_Free(m);
        st->desc_memo = NULL;
    }
}

static int
object_desc(tsx_state *st, PyObject *obj, ts_module_desc *out)
{
    PyObject *native_type = NULL;
    const native_class *native;
    if (tsx_desc_memo_get(st, obj, out)) {
        return 0;
    }
    native = tsx_native_of(obj, &native_type);
    if (tsx_module_desc(st, obj, native, native_type, out) < 0) {
        return -1;
    }
    return tsx_desc_memo_put(st, obj, out);
}

/* Reads child `name` and refuses the parent unless it is of kind `want`;
 * a refused child passes its reason on. */
static int
child_desc(tsx_state *st,
           PyObject *module,
           const char *name,
           ts_module_kind want,
           ts_module_desc *parent,
           ts_module_desc *out)
{
    PyObject *child = module_attr(module, name);
    int rc;
    if (child == NULL) {
        return -1;
    }
    rc = object_desc(st, child, out);
    Py_DECREF(child);
    if (rc == 0 && out->refusal != NULL) {
        refuse(parent, out->refusal);
    }
    if (rc == 0 && out->kind != want) {
        refuse(parent, REFUSE_SUBLAYER);
    }
    return rc;
}

static void
attention_of(const ts_module_desc *m, ts_attention_desc *a)
{
    a->embed_dim = m->embed_dim;
    a->num_heads = m->num_heads;
    a->kdim = m->kdim;
    a->vdim = m->vdim;
    a->has_in_proj_bias = m->has_in_proj_bias;
    a->has_out_proj_bias = m->has_out_proj_bias;
    a->add_bias_kv = m->add_bias_kv;
    a->add_zero_attn = m->add_zero_attn;
    a->batch_first = m->batch_first;
    a->dropout = m->attn_dropout;
    a->param_numel = m->param_numel;
}

static void
linear_of(const ts_module_desc *m, ts_linear_desc *l)
{
    l->in_features = m->in_features;
    l->out_features = m->out_features;
    l->has_bias = m->has_bias;
    l->param_numel = m->param_numel;
}

static void
norm_of(const ts_module_desc *m, ts_norm_desc *n)
{
    n->kind = m->kind == TS_MOD_LAYERNORM  ? TS_NORM_LAYERNORM
              : m->kind == TS_MOD_IDENTITY ? TS_NORM_IDENTITY
                                           : TS_NORM_NONE;
    n->has_weight = m->has_weight;
    n->has_bias = m->has_bias;
    n->normalized_numel = m->normalized_numel;
    n->param_numel = m->param_numel;
}

/* The feed-forward activation: F.relu or F.gelu (the strings "relu" and
 * "gelu" resolve to them), or an nn.ReLU / exact nn.GELU module. */
static int
read_activation(tsx_state *st,
                PyObject *layer,
                ts_activation *act,
                ts_module_desc *d)
{
    PyObject *a = module_attr(layer, "activation");
    PyObject *functional =
        a ? PyImport_ImportModule("torch.nn.functional") : NULL;
    PyObject *relu = functional ? tsx_getattr(functional, "relu") : NULL;
    PyObject *gelu = relu ? tsx_getattr(functional, "gelu") : NULL;
    ts_module_desc m;
    int rc = -1;
    if (gelu == NULL) {
        goto done;
    }
    rc = 0;
    if (a == relu || a == gelu) {
        *act = a == relu ? TS_ACT_RELU : TS_ACT_GELU;
    }
    else if ((rc = object_desc(st, a, &m)) == 0) {
        if (m.kind == TS_MOD_RELU) {
            *act = TS_ACT_RELU;
        }
        else if (m.kind == TS_MOD_GELU && !m.approximate_tanh
                 && m.refusal == NULL) {
            *act = TS_ACT_GELU;
        }
        else {
            refuse(d, REFUSE_ACTIVATION);
        }
    }
done:
    Py_XDECREF(a);
    Py_XDECREF(functional);
    Py_XDECREF(relu);
    Py_XDECREF(gelu);
    return rc;
}

/* module.<name>.training: a sub-layer's mode during the call (a forward
 * pre-hook may switch dropouts to training for MC dropout). */
static int
child_training(PyObject *module, const char *name)
{
    PyObject *child = module_attr(module, name);
    int t;
    if (child == NULL) {
        return -1;
    }
    t = attr_true(child, "training");
    Py_DECREF(child);
    return t;
}

/* The modes of a layer's attention blocks and dropouts. */
static int
read_layer_modes(PyObject *layer, ts_transformer_layer_desc *l)
{
    static const char *const attn[2] = {"self_attn", "multihead_attn"};
    static const char *const drops[4] = {
        "dropout", "dropout1", "dropout2", "dropout3"};
    int t;
    for (int i = 0; i < (l->decoder ? 2 : 1); i++) {
        TRY(t = child_training(layer, attn[i]));
        (i ? &l->cross_attn : &l->self_attn)->training = t;
    }
    for (int i = 0; i <= (l->decoder ? 3 : 2); i++) {
        TRY(t = child_training(layer, drops[i]));
        l->dropout_training[i] = t;
    }
    return 0;
error:
    return -1;
}

/* One TransformerEncoderLayer (decoder = false) or TransformerDecoderLayer:
 * the attention blocks, the feed-forward Linear pair, the norms, the
 * dropouts' p and the activation. Their modes are read at each call
 * (tsx_transformer_modes). */
static int
read_transformer_layer(tsx_state *st,
                       PyObject *module,
                       bool decoder,
                       ts_module_desc *d,
                       ts_transformer_layer_desc *l)
{
    static const char *const attn[2] = {"self_attn", "multihead_attn"};
    static const char *const norms[3] = {"norm1", "norm2", "norm3"};
    static const char *const drops[4] = {
        "dropout", "dropout1", "dropout2", "dropout3"};
    int blocks = decoder ? 3 : 2;
    ts_module_desc sub;
    int t;
    memset(l, 0, sizeof *l);
    l->count = 1;
    l->decoder = decoder;
    TRY(t = attr_true(module, "norm_first"));
    l->norm_first = t;
    for (int i = 0; i < (decoder ? 2 : 1); i++) {
        TRY(child_desc(st, module, attn[i], TS_MOD_MHA, d, &sub));
        attention_of(&sub, i ? &l->cross_attn : &l->self_attn);
    }
    TRY(child_desc(st, module, "linear1", TS_MOD_LINEAR, d, &sub));
    linear_of(&sub, &l->linear1);
    TRY(child_desc(st, module, "linear2", TS_MOD_LINEAR, d, &sub));
    linear_of(&sub, &l->linear2);
    for (int i = 0; i < blocks; i++) {
        TRY(child_desc(st, module, norms[i], TS_MOD_LAYERNORM, d, &sub));
        norm_of(&sub, &l->norm[i]);
    }
    for (int i = 0; i <= blocks; i++) {
        TRY(child_desc(st, module, drops[i], TS_MOD_DROPOUT, d, &sub));
        l->dropout[i] = sub.p;
    }
    TRY(read_activation(st, module, &l->activation, d));
    return 0;
error:
    return -1;
}

/* A stack's layers as a new list (NULL with an exception set). */
static PyObject *
stack_layers(PyObject *stack)
{
    PyObject *layers = module_attr(stack, "layers"), *seq = NULL;
    if (layers != NULL && tsx_is_native_named(layers, "ModuleList")) {
        /* a ModuleList iterates its _modules values: no Python calls */
        PyObject *children = tsx_child_dict(layers);
        seq = children ? PyDict_Values(children) : NULL;
        Py_XDECREF(children);
    }
    else if (layers != NULL) {
        seq = PySequence_List(layers);
    }
    Py_XDECREF(layers);
    return seq;
}

/* A TransformerEncoder/Decoder: its layers, which must all read alike
 * (they are clones unless the caller replaced one), and its final norm
 * (LayerNorm, Identity or None). Layer descriptions are compared bytewise:
 * both come from memset-cleared structs. */
static int
read_transformer_stack(tsx_state *st,
                       PyObject *module,
                       bool decoder,
                       ts_module_desc *d,
                       ts_transformer_layer_desc *l,
                       ts_norm_desc *norm)
{
    ts_module_kind want = decoder ? TS_MOD_TRANSFORMER_DECODER_LAYER
                                  : TS_MOD_TRANSFORMER_ENCODER_LAYER;
    PyObject *final = NULL, *seq = stack_layers(module);
    Py_ssize_t n = seq ? PyList_GET_SIZE(seq) : -1;
    ts_module_desc sub;
    int rc = -1;
    if (n < 0) {
        goto done;
    }
    if (n == 0) {
        refuse(d, "Transformer estimates need at least one layer");
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int got = object_desc(st, PyList_GET_ITEM(seq, i), &sub);
        if (got < 0) {
            goto done;
        }
        const ts_transformer_layer_desc *one =
            decoder ? &sub.transformer.decoder : &sub.transformer.encoder;
        if (sub.kind != want) {
            refuse(d, REFUSE_SUBLAYER);
        }
        else if (sub.refusal != NULL) {
            refuse(d, sub.refusal);
        }
        else if (i == 0) {
            memcpy(l, one, sizeof *l);
        }
        else if (memcmp(l, one, sizeof *l) != 0) {
            refuse(d, "Transformer estimates need identical stacked layers");
        }
    }
    l->count = n;
    final = module_attr(module, "norm");
    if (final == NULL) {
        goto done;
    }
    norm->kind = TS_NORM_NONE;
    if (final != Py_None) {
        if (object_desc(st, final, &sub) < 0) {
            goto done;
        }
        if (sub.kind != TS_MOD_LAYERNORM && sub.kind != TS_MOD_IDENTITY) {
            refuse(d,
                   "Transformer estimates support LayerNorm, Identity or "
                   "None final norms");
        }
        norm_of(&sub, norm);
    }
    rc = 0;
done:
    Py_XDECREF(seq);
    Py_XDECREF(final);
    return rc;
}

/* The five native Transformer kinds: layers hold one layer description,
 * stacks `count` copies and a final norm, nn.Transformer both stacks. */
static int
read_transformer(tsx_state *st, PyObject *module, ts_module_desc *d)
{
    ts_transformer_desc *t = &d->transformer;
    ts_module_desc sub;
    int on;
    switch (d->kind) {
        case TS_MOD_TRANSFORMER_ENCODER_LAYER:
            return read_transformer_layer(st, module, false, d, &t->encoder);
        case TS_MOD_TRANSFORMER_DECODER_LAYER:
            return read_transformer_layer(st, module, true, d, &t->decoder);
        case TS_MOD_TRANSFORMER_ENCODER:
            if ((on = attr_true(module, "enable_nested_tensor")) < 0) {
                return -1;
            }
            t->enable_nested_tensor = on;
            return read_transformer_stack(
                st, module, false, d, &t->encoder, &t->encoder_norm);
        case TS_MOD_TRANSFORMER_DECODER:
            return read_transformer_stack(
                st, module, true, d, &t->decoder, &t->decoder_norm);
        case TS_MOD_TRANSFORMER:
            if (child_desc(
                    st, module, "encoder", TS_MOD_TRANSFORMER_ENCODER, d, &sub)
                < 0) {
                return -1;
            }
            memcpy(&t->encoder, &sub.transformer.encoder, sizeof t->encoder);
            t->encoder_norm = sub.transformer.encoder_norm;
            t->enable_nested_tensor = sub.transformer.enable_nested_tensor;
            if (child_desc(
                    st, module, "decoder", TS_MOD_TRANSFORMER_DECODER, d, &sub)
                < 0) {
                return -1;
            }
            memcpy(&t->decoder, &sub.transformer.decoder, sizeof t->decoder);
            t->decoder_norm = sub.transformer.decoder_norm;
            return 0;
        default:
            return 0;
    }
}

static const char *const REFUSE_MODES =
    "Transformer estimates need stacked layers whose sub-layers are in the "
    "same modes";

/* The modes of every layer of a stack, which must agree (one layer
 * description serves them all). */
static int
read_stack_modes(PyObject *stack,
                 ts_module_desc *d,
                 ts_transformer_layer_desc *l)
{
    PyObject *seq = stack_layers(stack);
    ts_transformer_layer_desc one;
    int rc = -1;
    if (seq == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq); i++) {
        memcpy(&one, l, sizeof one);
        if (read_layer_modes(PyList_GET_ITEM(seq, i), &one) < 0) {
            goto done;
        }
        if (i == 0) {
            memcpy(l, &one, sizeof one);
        }
        else if (memcmp(l, &one, sizeof one) != 0) {
            refuse(d, REFUSE_MODES);
        }
    }
    rc = 0;
done:
    Py_DECREF(seq);
    return rc;
}

int
tsx_transformer_modes(PyObject *module, ts_module_desc *d)
{
    ts_transformer_desc *t = &d->transformer;
    PyObject *part = NULL;
    int rc = -1;
    if (d->refusal == REFUSE_MODES) {
        d->refusal = NULL; /* the modes are read afresh */
    }
    if (d->refusal != NULL) {
        return 0; /* refused for its structure: no formula runs */
    }
    switch (d->kind) {
        case TS_MOD_TRANSFORMER_ENCODER_LAYER:
            return read_layer_modes(module, &t->encoder);
        case TS_MOD_TRANSFORMER_DECODER_LAYER:
            return read_layer_modes(module, &t->decoder);
        case TS_MOD_TRANSFORMER_ENCODER:
            return read_stack_modes(module, d, &t->encoder);
        case TS_MOD_TRANSFORMER_DECODER:
            return read_stack_modes(module, d, &t->decoder);
        case TS_MOD_TRANSFORMER:
            if ((part = module_attr(module, "encoder")) != NULL
                && read_stack_modes(part, d, &t->encoder) == 0) {
                Py_DECREF(part);
                if ((part = module_attr(module, "decoder")) != NULL) {
                    rc = read_stack_modes(part, d, &t->decoder);
                }
            }
            Py_XDECREF(part);
            return rc;
        default:
            return 0;
    }
}

int
tsx_module_desc(tsx_state *st,
                PyObject *module,
                const native_class *native,
                PyObject *native_type,
                ts_module_desc *d)
{
    int t;
    memset(d, 0, sizeof *d);
    if (native == NULL) {
        d->kind = TS_MOD_UNKNOWN;
        return 0;
    }
    if (!forward_unchanged(st, module, native_type)) {
        d->kind = TS_MOD_UNKNOWN;
        d->refusal =
            "its forward is not the native class's, which the "
            "formula describes";
        return 0;
    }
    d->kind = native->kind;
    d->rank = native->rank;
    d->param_numel = tsx_param_numel(st, module);
    d->training = false; /* the crawl runs in eval mode */
    TRY(t = param_present(module, "weight"));
    d->has_weight = t;
    TRY(t = param_present(module, "bias"));
    d->has_bias = t;
    switch (d->kind) {
        case TS_MOD_RELU:
        case TS_MOD_ELU:
        case TS_MOD_LEAKYRELU:
        case TS_MOD_RELU6:
            TRY(t = attr_true(module, "inplace"));
            d->inplace = t;
            break;
        case TS_MOD_LINEAR:
            TRY(attr_int(module, "in_features", &d->in_features));
            TRY(attr_int(module, "out_features", &d->out_features));
            break;
        case TS_MOD_CONV:
        case TS_MOD_CONVTRANSPOSE:
            TRY(attr_int(module, "in_channels", &d->in_channels));
            TRY(attr_int(module, "out_channels", &d->out_channels));
            TRY(attr_int(module, "groups", &d->groups));
            if (d->rank == 0) {
                d->rank = 2;
            }
            TRY(attr_tuple(
                module, "kernel_size", d->rank, d->kernel, NULL, NULL));
            TRY(attr_tuple(module, "stride", d->rank, d->stride, NULL, NULL));
            TRY(attr_tuple(module,
                           "padding",
                           d->rank,
                           d->padding,
                           NULL,
                           &d->padding_is_string));
            TRY(attr_tuple(
                module, "dilation", d->rank, d->dilation, NULL, NULL));
            if (d->padding_is_string) {
                /* padding='same' pads d*(k-1)/2 on the left; 'valid' none */
                PyObject *pad = module_attr(module, "padding");
                int same =
                    pad && PyUnicode_Check(pad)
                    && PyUnicode_CompareWithASCIIString(pad, "same") == 0;
                Py_XDECREF(pad);
                for (int i = 0; i < d->rank; i++) {
                    d->padding[i] =
                        same ? d->dilation[i] * (d->kernel[i] - 1) / 2 : 0;
                }
            }
            break;
        case TS_MOD_MAXPOOL:
        case TS_MOD_AVGPOOL:
            TRY(attr_tuple(module,
                           "kernel_size",
                           d->rank,
                           d->kernel,
                           &d->kernel_is_int,
                           NULL));
            TRY(attr_tuple(module, "stride", d->rank, d->stride, NULL, NULL));
            TRY(attr_tuple(
                module, "padding", d->rank, d->padding, NULL, NULL));
            TRY(t = attr_true(module, "ceil_mode"));
            d->ceil_mode = t;
            if (d->kind == TS_MOD_MAXPOOL) {
                TRY(attr_tuple(
                    module, "dilation", d->rank, d->dilation, NULL, NULL));
                TRY(t = attr_true(module, "return_indices"));
                d->return_indices = t;
                d->has_dilation = true;
            }
            else {
                TRY(t = attr_true(module, "count_include_pad"));
                d->count_include_pad = t;
                for (int i = 0; i < d->rank; i++) {
                    d->dilation[i] = 1;
                }
            }
            break;
        case TS_MOD_ADAPTIVE_MAXPOOL:
            TRY(t = attr_true(module, "return_indices"));
            d->return_indices = t;
            break;
        case TS_MOD_BATCHNORM:
        case TS_MOD_INSTANCENORM:
            TRY(attr_int(module, "num_features", &d->num_features));
            TRY(t = attr_true(module, "track_running_stats"));
            d->track_running_stats = t;
            TRY(t = attr_present(module, "running_mean"));
            d->has_running_mean = t;
            TRY(t = attr_present(module, "running_var"));
            d->has_running_var = t;
            TRY(t = attr_present(module, "momentum"));
            d->momentum_is_none = !t;
            break;
        case TS_MOD_DROPOUT:
        case TS_MOD_FEATURE_DROPOUT:
        case TS_MOD_ALPHA_DROPOUT:
            TRY(attr_real(module, "p", &d->p));
            TRY(t = attr_true(module, "inplace"));
            d->inplace = t;
            break;
        case TS_MOD_LAYERNORM:
            TRY(read_normalized_shape(module, d));
            break;
        case TS_MOD_MHA: {
            PyObject *out_proj;
            TRY(attr_int(module, "embed_dim", &d->embed_dim));
            TRY(attr_int(module, "num_heads", &d->num_heads));
            TRY(attr_int(module, "kdim", &d->kdim));
            TRY(attr_int(module, "vdim", &d->vdim));
            TRY(t = attr_true(module, "batch_first"));
            d->batch_first = t;
            TRY(t = attr_present(module, "in_proj_bias"));
            d->has_in_proj_bias = t;
            TRY(t = attr_present(module, "bias_k"));
            d->add_bias_kv = t;
            TRY(t = attr_true(module, "add_zero_attn"));
            d->add_zero_attn = t;
            TRY(attr_real(module, "dropout", &d->attn_dropout));
            out_proj = module_attr(module, "out_proj");
            if (out_proj == NULL) {
                goto error;
            }
            t = attr_present(out_proj, "bias");
            Py_DECREF(out_proj);
            TRY(t);
            d->has_out_proj_bias = t;
            break;
        }
        case TS_MOD_SOFTMAX:
        case TS_MOD_LOGSOFTMAX:
        case TS_MOD_SOFTMIN:
            TRY(attr_int_or_none(module, "dim", &d->dim, &d->dim_is_none));
            break;
        case TS_MOD_COSINE_SIMILARITY:
            TRY(attr_int(module, "dim", &d->dim));
            break;
        case TS_MOD_PAIRWISE_DISTANCE:
            TRY(attr_real(module, "norm", &d->norm_p));
            break;
        case TS_MOD_GELU: {
            static const char *const modes[] = {"none", "tanh", NULL};
            TRY(attr_choice(module, "approximate", modes, &t));
            if (t < 0) {
                refuse(d, "GELU approximate must be 'none' or 'tanh'");
            }
            d->approximate_tanh = t == 1;
            break;
        }
        case TS_MOD_GROUPNORM:
            TRY(attr_int(module, "num_groups", &d->num_groups));
            break;
        case TS_MOD_RMSNORM:
            TRY(read_normalized_shape(module, d));
            break;
        case TS_MOD_LOCAL_RESPONSE_NORM:
            TRY(attr_int(module, "size", &d->size));
            break;
        case TS_MOD_EMBEDDING:
        case TS_MOD_EMBEDDING_BAG: {
            /* sum, mean, max: TS_BAG_* order */
            static const char *const modes[] = {"sum", "mean", "max", NULL};
            TRY(attr_int(module, "embedding_dim", &d->embedding_dim));
            TRY(t = attr_present(module, "max_norm"));
            if (t) {
                /* max_norm renormalizes the looked-up rows in place: work
                 * that depends on the values */
                refuse(d, "Embedding with max_norm renormalizes rows");
            }
            if (d->kind == TS_MOD_EMBEDDING_BAG) {
                TRY(attr_choice(module, "mode", modes, &t));
                if (t < 0) {
                    refuse(d, "EmbeddingBag mode must be sum, mean or max");
                }
                d->bag_mode = t < 0 ? TS_BAG_SUM : (ts_bag_mode)t;
            }
            break;
        }
        case TS_MOD_CONSTANT_PAD: {
            PyObject *pad = module_attr(module, "padding");
            Py_ssize_t n = pad ? PyObject_Length(pad) : -1;
            Py_XDECREF(pad);
            if (n < 0 || n > 6) {
                if (!PyErr_Occurred()) {
                    PyErr_SetString(PyExc_ValueError, "padding is too long");
                }
                goto error;
            }
            TRY(attr_tuple(module, "padding", (int)n, d->pad, NULL, NULL));
            d->pad_count = (int)n;
            break;
        }
        case TS_MOD_UPSAMPLE: {
            static const char *const modes[] = {"nearest",
                                                "nearest-exact",
                                                "linear",
                                                "bilinear",
                                                "trilinear",
                                                "bicubic",
                                                "area",
                                                NULL};
            static const ts_upsample_mode kinds[] = {TS_UPSAMPLE_NEAREST,
                                                     TS_UPSAMPLE_NEAREST,
                                                     TS_UPSAMPLE_LINEAR,
                                                     TS_UPSAMPLE_BILINEAR,
                                                     TS_UPSAMPLE_TRILINEAR,
                                                     TS_UPSAMPLE_BICUBIC,
                                                     TS_UPSAMPLE_AREA};
            TRY(attr_choice(module, "mode", modes, &t));
            if (t < 0) {
                refuse(d, "Upsample mode is not a known interpolation");
            }
            d->upsample_mode = t < 0 ? TS_UPSAMPLE_NEAREST : kinds[t];
            break;
        }
        case TS_MOD_RNN: {
            /* nn.RNNBase.mode, in ts_rnn_mode order */
            static const char *const modes[] = {
                "RNN_TANH", "RNN_RELU", "LSTM", "GRU", NULL};
            TRY(attr_choice(module, "mode", modes, &t));
            if (t < 0) {
                refuse(d, "RNN mode is not RNN_TANH, RNN_RELU, LSTM or GRU");
            }
            d->rnn_mode = t < 0 ? TS_RNN_TANH : (ts_rnn_mode)t;
            TRY(attr_int(module, "input_size", &d->input_size));
            TRY(attr_int(module, "hidden_size", &d->hidden_size));
            TRY(attr_int(module, "num_layers", &d->num_layers));
            TRY(attr_int(module, "proj_size", &d->proj_size));
            TRY(t = attr_true(module, "bidirectional"));
            d->bidirectional = t;
            TRY(t = attr_true(module, "bias"));
            d->has_bias = t;
            TRY(attr_real(module, "dropout", &d->p));
            break;
        }
        case TS_MOD_RNN_CELL: {
            static const char *const nonlinearity[] = {"tanh", "relu", NULL};
            TRY(attr_int(module, "input_size", &d->input_size));
            TRY(attr_int(module, "hidden_size", &d->hidden_size));
            TRY(t = attr_true(module, "bias"));
            d->has_bias = t;
            d->num_layers = 1;
            if (strcmp(native->name, "LSTMCell") == 0) {
                d->rnn_mode = TS_RNN_LSTM;
            }
            else if (strcmp(native->name, "GRUCell") == 0) {
                d->rnn_mode = TS_RNN_GRU;
            }
            else {
                TRY(attr_choice(module, "nonlinearity", nonlinearity, &t));
                if (t < 0) {
                    refuse(d, "RNNCell nonlinearity is not tanh or relu");
                }
                d->rnn_mode = t == 1 ? TS_RNN_RELU : TS_RNN_TANH;
            }
            break;
        }
        case TS_MOD_BILINEAR:
            TRY(attr_int(module, "in1_features", &d->in_features));
            TRY(attr_int(module, "in2_features", &d->in2_features));
            TRY(attr_int(module, "out_features", &d->out_features));
            break;
        case TS_MOD_FOLD:
            TRY(attr_tuple(
                module, "output_size", 2, d->output_size, NULL, NULL));
            TRY(attr_tuple(module, "kernel_size", 2, d->kernel, NULL, NULL));
            TRY(attr_tuple(module, "dilation", 2, d->dilation, NULL, NULL));
            TRY(attr_tuple(module, "padding", 2, d->padding, NULL, NULL));
            TRY(attr_tuple(module, "stride", 2, d->stride, NULL, NULL));
            break;
        case TS_MOD_MAXUNPOOL:
            TRY(attr_tuple(
                module, "kernel_size", d->rank, d->kernel, NULL, NULL));
            TRY(attr_tuple(module, "stride", d->rank, d->stride, NULL, NULL));
            TRY(attr_tuple(
                module, "padding", d->rank, d->padding, NULL, NULL));
            break;
        case TS_MOD_LPPOOL: {
            PyObject *stride;
            TRY(attr_real(module, "norm_type", &d->norm_p));
            TRY(attr_tuple(module,
                           "kernel_size",
                           d->rank,
                           d->kernel,
                           &d->kernel_is_int,
                           NULL));
            TRY(t = attr_true(module, "ceil_mode"));
            d->ceil_mode = t;
            /* stride=None means stride = kernel_size */
            stride = module_attr(module, "stride");
            if (stride == NULL) {
                goto error;
            }
            t = stride == Py_None;
            Py_DECREF(stride);
            if (t) {
                memcpy(d->stride, d->kernel, sizeof d->stride);
            }
            else {
                TRY(attr_tuple(
                    module, "stride", d->rank, d->stride, NULL, NULL));
            }
            break;
        }
        case TS_MOD_TRANSFORMER_ENCODER_LAYER:
        case TS_MOD_TRANSFORMER_DECODER_LAYER:
        case TS_MOD_TRANSFORMER_ENCODER:
        case TS_MOD_TRANSFORMER_DECODER:
        case TS_MOD_TRANSFORMER:
            TRY(read_transformer(st, module, d));
            break;
        default:
            break;
    }
    return 0;
error:
    /* A module whose attributes do not read like its family's has no
     * formula rather than a wrong one. */
    PyErr_Clear();
    memset(d, 0, sizeof *d);
    d->kind = TS_MOD_UNKNOWN;
    return 0;
}


/* ---- call descriptions ----------------------------------------------------
 */

/* Finds a call argument by position or keyword. Borrowed or NULL. */
static PyObject *
call_arg(PyObject *args, PyObject *kwargs, Py_ssize_t pos, const char *name)
{
    PyObject *v = NULL;
    if (args != NULL && PyTuple_GET_SIZE(args) > pos) {
        return PyTuple_GET_ITEM(args, pos);
    }
    if (kwargs != NULL && PyDict_Check(kwargs)) {
        v = tsx_dict_get(kwargs, name);
    }
    return v;
}

/* Elements of a tensor argument; 0 when it is absent or not a tensor. */
static int
arg_numel(tsx_state *st, PyObject *v, bool *present, int64_t *numel)
{
    ts_shape s;
    *present = v != NULL && v != Py_None;
    *numel = 0;
    if (v != NULL && tsx_is_tensor(st, v)) {
        if (tsx_tensor_shape(st, v, &s) < 0) {
            return -1;
        }
        if (s.ndim >= 0 && !ts_shape_numel(&s, numel)) {
            *numel = 0;
        }
    }
    return 0;
}

/* Reads a tensor argument's shape into *shape; *present stays false when
 * the argument is missing or not a tensor. */
static int
arg_shape(tsx_state *st, PyObject *v, ts_shape *shape, bool *present)
{
    *present = false;
    if (v == NULL || !tsx_is_tensor(st, v)) {
        return 0;
    }
    if (tsx_tensor_shape(st, v, shape) < 0) {
        return -1;
    }
    *present = true;
    return 0;
}

typedef int (*fill_fn)(tsx_state *st,
                       const ts_module_desc *desc,
                       PyObject *args,
                       PyObject *kwargs,
                       PyObject *output,
                       ts_module_call *call);

static int
fill_mha_call(tsx_state *st,
              const ts_module_desc *desc,
              PyObject *args,
              PyObject *kwargs,
              PyObject *output,
              ts_module_call *call)
{
    PyObject *key = call_arg(args, kwargs, 1, "key");
    PyObject *value = call_arg(args, kwargs, 2, "value");
    PyObject *kpm = call_arg(args, kwargs, 3, "key_padding_mask");
    PyObject *mask = call_arg(args, kwargs, 5, "attn_mask");
    (void)desc;
    if (key == NULL || value == NULL || !tsx_is_tensor(st, key)
        || !tsx_is_tensor(st, value)) {
        call->has_input = false;
        return 0;
    }
    if (tsx_tensor_shape(st, key, &call->key) < 0
        || tsx_tensor_shape(st, value, &call->value) < 0) {
        return -1;
    }
    if (arg_numel(st,
                  kpm,
                  &call->has_key_padding_mask,
                  &call->key_padding_mask_numel)
            < 0
        || arg_numel(st, mask, &call->has_attn_mask, &call->attn_mask_numel)
               < 0) {
        return -1;
    }
    if (PyTuple_Check(output) && PyTuple_GET_SIZE(output) > 1) {
        PyObject *w = PyTuple_GET_ITEM(output, 1);
        if (tsx_is_tensor(st, w)) {
            ts_shape ws;
            if (tsx_tensor_shape(st, w, &ws) < 0) {
                return -1;
            }
            call->has_weights_output = true;
            call->weights_ndim = ws.ndim;
        }
    }
    return 0;
}

/* Where each Transformer-family forward takes its second sequence, masks
 * and causal hints (position, keyword); position -1: not an argument. */
typedef struct arg_ref {
    Py_ssize_t pos;
    const char *name;
} arg_ref;

typedef struct tf_signature {
    arg_ref second;
    arg_ref masks[TS_TF_MASK_COUNT];
    arg_ref causal[TS_TF_SEQ_COUNT];
} tf_signature;

#define NO_ARG_  \
    {            \
        -1, NULL \
    }
/* TransformerDecoderLayer and TransformerDecoder share one signature. */
#define DECODER_SIGNATURE_                    \
    {                                         \
        {1, "memory"},                        \
            {NO_ARG_,                         \
             {2, "tgt_mask"},                 \
             {3, "memory_mask"},              \
             NO_ARG_,                         \
             {4, "tgt_key_padding_mask"},     \
             {5, "memory_key_padding_mask"}}, \
        {                                     \
            NO_ARG_, {6, "tgt_is_causal"},    \
            {                                 \
                7, "memory_is_causal"         \
            }                                 \
        }                                     \
    }

static const tf_signature tf_signatures[] = {
    [TS_MOD_TRANSFORMER_ENCODER_LAYER - TS_MOD_TRANSFORMER_ENCODER_LAYER] =
        {NO_ARG_,
         {{1, "src_mask"},
          NO_ARG_,
          NO_ARG_,
          {2, "src_key_padding_mask"},
          NO_ARG_,
          NO_ARG_},
         {{3, "is_causal"}, NO_ARG_, NO_ARG_}},
    [TS_MOD_TRANSFORMER_DECODER_LAYER - TS_MOD_TRANSFORMER_ENCODER_LAYER] =
        DECODER_SIGNATURE_,
    [TS_MOD_TRANSFORMER_ENCODER - TS_MOD_TRANSFORMER_ENCODER_LAYER] =
        {NO_ARG_,
         {{1, "mask"},
          NO_ARG_,
          NO_ARG_,
          {2, "src_key_padding_mask"},
          NO_ARG_,
          NO_ARG_},
         {{3, "is_causal"}, NO_ARG_, NO_ARG_}},
    [TS_MOD_TRANSFORMER_DECODER - TS_MOD_TRANSFORMER_ENCODER_LAYER] =
        DECODER_SIGNATURE_,
    [TS_MOD_TRANSFORMER -
        TS_MOD_TRANSFORMER_ENCODER_LAYER] = {{1, "tgt"},
                                             {{2, "src_mask"},
                                              {3, "tgt_mask"},
                                              {4, "memory_mask"},
                                              {5, "src_key_padding_mask"},
                                              {6, "tgt_key_padding_mask"},
                                              {7, "memory_key_padding_mask"}},
                                             {{8, "src_is_causal"},
                                              {9, "tgt_is_causal"},
                                              {10, "memory_is_causal"}}},
};

static PyObject *
ref_arg(PyObject *args, PyObject *kwargs, const arg_ref *ref)
{
    return ref->pos < 0 ? NULL : call_arg(args, kwargs, ref->pos, ref->name);
}

/* The second sequence, every mask's elements and the causal hints that are
 * True (None asks PyTorch to detect a causal mask: not a hint). */
static int
fill_transformer_call(tsx_state *st,
                      const ts_module_desc *desc,
                      PyObject *args,
                      PyObject *kwargs,
                      PyObject *output,
                      ts_module_call *call)
{
    const tf_signature *sig =
        &tf_signatures[desc->kind - TS_MOD_TRANSFORMER_ENCODER_LAYER];
    (void)output;
    if (arg_shape(st,
                  ref_arg(args, kwargs, &sig->second),
                  &call->second,
                  &call->has_second)
        < 0) {
        return -1;
    }
    for (int i = 0; i < TS_TF_MASK_COUNT; i++) {
        if (arg_numel(st,
                      ref_arg(args, kwargs, &sig->masks[i]),
                      &call->tf_mask[i],
                      &call->tf_mask_numel[i])
            < 0) {
            return -1;
        }
    }
    for (int i = 0; i < TS_TF_SEQ_COUNT; i++) {
        call->tf_causal[i] = ref_arg(args, kwargs, &sig->causal[i]) == Py_True;
    }
    return 0;
}

/* RNN/LSTM/GRU return (output, h_n) or (output, (h_n, c_n)): the state
 * sizes give the state traffic whatever the batching or packing. */
static int
fill_rnn_call(tsx_state *st,
              const ts_module_desc *desc,
              PyObject *args,
              PyObject *kwargs,
              PyObject *output,
              ts_module_call *call)
{
    PyObject *state;
    (void)desc;
    (void)args;
    (void)kwargs;
    if (!PyTuple_Check(output) || PyTuple_GET_SIZE(output) < 2) {
        return 0;
    }
    state = PyTuple_GET_ITEM(output, 1);
    if (PyTuple_Check(state) && PyTuple_GET_SIZE(state) == 2) {
        bool present;
        if (arg_numel(
                st, PyTuple_GET_ITEM(state, 1), &present, &call->aux_numel)
            < 0) {
            return -1;
        }
        state = PyTuple_GET_ITEM(state, 0);
    }
    return arg_shape(st, state, &call->second, &call->has_second);
}

/* Bilinear(input1, input2), CosineSimilarity(x1, x2),
 * PairwiseDistance(x1, x2): the second input. */
static int
fill_second_input(tsx_state *st,
                  const ts_module_desc *desc,
                  PyObject *args,
                  PyObject *kwargs,
                  PyObject *output,
                  ts_module_call *call)
{
    PyObject *v = call_arg(
        args, kwargs, 1, desc->kind == TS_MOD_BILINEAR ? "input2" : "x2");
    (void)output;
    return arg_shape(st, v, &call->second, &call->has_second);
}

/* EmbeddingBag(input, offsets=None, per_sample_weights=None). */
static int
fill_embedding_bag_call(tsx_state *st,
                        const ts_module_desc *desc,
                        PyObject *args,
                        PyObject *kwargs,
                        PyObject *output,
                        ts_module_call *call)
{
    bool present;
    int64_t numel;
    (void)desc;
    (void)output;
    if (arg_numel(st,
                  call_arg(args, kwargs, 1, "offsets"),
                  &present,
                  &call->aux_numel)
        < 0) {
        return -1;
    }
    if (arg_numel(st,
                  call_arg(args, kwargs, 2, "per_sample_weights"),
                  &call->has_per_sample_weights,
                  &numel)
        < 0) {
        return -1;
    }
    return 0;
}

/* Families whose formulas need more of the call than the first input and
 * output tensors. */
static const fill_fn call_fillers[TS_MOD_KIND_COUNT] = {
    [TS_MOD_MHA] = fill_mha_call,
    [TS_MOD_TRANSFORMER_ENCODER_LAYER] = fill_transformer_call,
    [TS_MOD_TRANSFORMER_DECODER_LAYER] = fill_transformer_call,
    [TS_MOD_TRANSFORMER_ENCODER] = fill_transformer_call,
    [TS_MOD_TRANSFORMER_DECODER] = fill_transformer_call,
    [TS_MOD_TRANSFORMER] = fill_transformer_call,
    [TS_MOD_RNN] = fill_rnn_call,
    [TS_MOD_BILINEAR] = fill_second_input,
    [TS_MOD_COSINE_SIMILARITY] = fill_second_input,
    [TS_MOD_PAIRWISE_DISTANCE] = fill_second_input,
    [TS_MOD_EMBEDDING_BAG] = fill_embedding_bag_call,
};

int
tsx_fill_call(tsx_state *st,
              const ts_module_desc *desc,
              PyObject *args,
              PyObject *kwargs,
              PyObject *output,
              ts_module_call *call)
{
    fill_fn fill = (unsigned)desc->kind < TS_MOD_KIND_COUNT
                       ? call_fillers[desc->kind]
                       : NULL;
    return fill == NULL ? 0 : fill(st, desc, args, kwargs, output, call);
}

/* ---- module tree
 * ------------------------------------------------------------ */

int
tsx_is_native_named(PyObject *obj, const char *qualname)
{
    PyObject *q = PyType_GetQualName(Py_TYPE(obj));
    PyObject *m =
        q ? tsx_getattr((PyObject *)Py_TYPE(obj), "__module__") : NULL;
    int yes = 0;
    if (m != NULL && PyUnicode_Check(q) && PyUnicode_Check(m)) {
        yes = PyUnicode_CompareWithASCIIString(q, qualname) == 0
              && starts_with(m, "torch.nn.modules.");
    }
    PyErr_Clear();
    Py_XDECREF(q);
    Py_XDECREF(m);
    return yes;
}

/* module._modules, borrowed from a new reference the caller releases. */
PyObject *
tsx_child_dict(PyObject *module)
{
    PyObject *children;
    if (tsx_optional_attr(module, "_modules", &children) < 0) {
        return NULL;
    }
    if (children != NULL && !PyDict_Check(children)) {
        /* a mapping of its own kind (ScriptModule): copied into a dict */
        PyObject *copy = PyDict_New();
        if (copy != NULL && PyDict_Merge(copy, children, 1) < 0) {
            PyErr_Clear(); /* not a mapping after all: no children */
            PyDict_Clear(copy);
        }
        Py_SETREF(children, copy);
    }
    if (children == NULL && !PyErr_Occurred()) {
        children = PyDict_New();
    }
    return children;
}

int
tsx_has_children(PyObject *module)
{
    PyObject *children = tsx_child_dict(module), *key, *value;
    Py_ssize_t pos = 0;
    int found = 0;
    if (children == NULL) {
        return -1;
    }
    while (PyDict_Next(children, &pos, &key, &value)) {
        if (value != Py_None) {
            found = 1;
            break;
        }
    }
    Py_DECREF(children);
    return found;
}
