/* The native families of torch.nn classes (native_classes: class ->
 * family kind, the binding's side of docs/module-formulas.md's class
 * index) and the module tree helpers (module_family.h). */
#include "module_family.h"

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
tsx_native_of(tsx_state *st, PyObject *module, PyObject **native_type)
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
        modname = tsx_getattr(st, cls, "__module__");
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
        || tsx_optional_attr(st, module, "_parameters", &params) < 0) {
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
            if (v < 0 && PyErr_Occurred() && tsx_user_failed(NULL) < 0) {
                Py_DECREF(params);
                return -1; /* an interrupt */
            }
            if (v < 0) {
                w->lazy = true;
            }
            else {
                w->total += v;
            }
        }
    }
    Py_XDECREF(params);
    children = tsx_child_dict(st, module);
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

int
tsx_param_numel(tsx_state *st, PyObject *module, int64_t *numel)
{
    param_walk w = {NULL, 0, 0, 0, false};
    int rc = walk_params(st, module, &w, 0);
    PyMem_Free(w.seen);
    /* a module whose tensors cannot be counted counts as lazy */
    if (rc < 0 && tsx_user_failed(NULL) < 0) {
        return -1;
    }
    *numel = rc < 0 || w.lazy ? -1 : w.total;
    return 0;
}

/* ---- module tree
 * ------------------------------------------------------------ */

int
tsx_is_native_named(tsx_state *st, PyObject *obj, const char *qualname)
{
    PyObject *q = PyType_GetQualName(Py_TYPE(obj));
    PyObject *m =
        q ? tsx_getattr(st, (PyObject *)Py_TYPE(obj), "__module__") : NULL;
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
tsx_child_dict(tsx_state *st, PyObject *module)
{
    PyObject *children;
    if (tsx_optional_attr(st, module, "_modules", &children) < 0) {
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
tsx_has_children(tsx_state *st, PyObject *module)
{
    PyObject *children = tsx_child_dict(st, module), *key, *value;
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
