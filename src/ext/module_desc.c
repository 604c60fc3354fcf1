/* What the engine's formulas need to know about a native module
 * (module_desc.h): its hyperparameters, one reader per family
 * (family_readers, next to the core's ts_mf_families), Transformer
 * families' sub-layers included. The attribute reads themselves are
 * callbacks.c's module readers (a subclass may make any of them a
 * property). */
#include "fail.h"
#include "module_desc.h"

#define TRY(expr)         \
    do {                  \
        if ((expr) < 0) { \
            return -1;    \
        }                 \
    } while (0)


static int
forward_unchanged(const tsx_desc_reader *r,
                  PyObject *module,
                  PyObject *native_type)
{
    tsx_state *st = r->st;
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
        int patched = own != NULL ? r->is_patched_forward(st, own)
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

/* normalized_shape of LayerNorm and RMSNorm: its element count. */
static int
read_normalized_shape(tsx_state *st, PyObject *module, ts_module_desc *d)
{
    int64_t shape[TS_MAX_DIMS];
    PyObject *ns = tsx_module_attr(st, module, "normalized_shape");
    Py_ssize_t n;
    if (ns == NULL) {
        return -1;
    }
    n = PyObject_Length(ns);
    Py_DECREF(ns);
    if (n < 0 || n > TS_MAX_DIMS) {
        if (!PyErr_Occurred()) {
            tsx_fail(PyExc_ValueError, "normalized_shape has too many dims");
        }
        return -1;
    }
    if (tsx_attr_tuple(
            st, module, "normalized_shape", (int)n, shape, NULL, NULL)
        < 0) {
        return -1;
    }
    d->normalized_ndim = (int)n;
    d->normalized_numel = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!ts_mul(d->normalized_numel, shape[i], &d->normalized_numel)) {
            tsx_raise_status(TS_EOVERFLOW, "normalized_shape is too large");
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

/* ---- descriptions read once per crawl -------------------------------------
 */

int
tsx_desc_memo_get(const tsx_desc_memo *m,
                  PyObject *module,
                  ts_module_desc *out)
{
    for (size_t i = 0; m != NULL && i < m->n; i++) {
        if (m->keys[i] == module) {
            *out = m->descs[i];
            return 1;
        }
    }
    return 0;
}

int
tsx_desc_memo_put(tsx_desc_memo *m, PyObject *module, const ts_module_desc *d)
{
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

void
tsx_desc_memo_clear(tsx_desc_memo *m)
{
    PyMem_Free(m->keys);
    PyMem_Free(m->descs);
    memset(m, 0, sizeof *m);
}

/* The description of `obj` (a child module or an attribute such as
 * `activation`) as the crawl would read it: unknown when not native. */
static int
object_desc(const tsx_desc_reader *r, PyObject *obj, ts_module_desc *out)
{
    tsx_state *st = r->st;
    PyObject *native_type = NULL;
    const native_class *native;
    if (tsx_desc_memo_get(r->memo, obj, out)) {
        return 0;
    }
    native = tsx_native_of(st, obj, &native_type);
    if (tsx_module_desc(r, obj, native, native_type, out) < 0) {
        return -1;
    }
    return tsx_desc_memo_put(r->memo, obj, out);
}

/* Reads child `name` and refuses the parent unless it is of kind `want`;
 * a refused child passes its reason on. */
static int
child_desc(const tsx_desc_reader *r,
           PyObject *module,
           const char *name,
           ts_module_kind want,
           ts_module_desc *parent,
           ts_module_desc *out)
{
    tsx_state *st = r->st;
    PyObject *child = tsx_module_attr(st, module, name);
    int rc;
    if (child == NULL) {
        return -1;
    }
    rc = object_desc(r, child, out);
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
read_activation(const tsx_desc_reader *r,
                PyObject *layer,
                ts_activation *act,
                ts_module_desc *d)
{
    tsx_state *st = r->st;
    PyObject *a = tsx_module_attr(st, layer, "activation");
    PyObject *functional =
        a ? PyImport_ImportModule("torch.nn.functional") : NULL;
    PyObject *relu = functional ? tsx_getattr(st, functional, "relu") : NULL;
    PyObject *gelu = relu ? tsx_getattr(st, functional, "gelu") : NULL;
    ts_module_desc m;
    int rc = -1;
    if (gelu == NULL) {
        goto done;
    }
    rc = 0;
    if (a == relu || a == gelu) {
        *act = a == relu ? TS_ACT_RELU : TS_ACT_GELU;
    }
    else if ((rc = object_desc(r, a, &m)) == 0) {
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
child_training(tsx_state *st, PyObject *module, const char *name)
{
    PyObject *child = tsx_module_attr(st, module, name);
    int t;
    if (child == NULL) {
        return -1;
    }
    t = tsx_attr_true(st, child, "training");
    Py_DECREF(child);
    return t;
}

/* The modes of a layer's attention blocks and dropouts. */
static int
read_layer_modes(tsx_state *st, PyObject *layer, ts_transformer_layer_desc *l)
{
    static const char *const attn[2] = {"self_attn", "multihead_attn"};
    static const char *const drops[4] = {
        "dropout", "dropout1", "dropout2", "dropout3"};
    int t;
    for (int i = 0; i < (l->decoder ? 2 : 1); i++) {
        TRY(t = child_training(st, layer, attn[i]));
        (i ? &l->cross_attn : &l->self_attn)->training = t;
    }
    for (int i = 0; i <= (l->decoder ? 3 : 2); i++) {
        TRY(t = child_training(st, layer, drops[i]));
        l->dropout_training[i] = t;
    }
    return 0;
}

/* One TransformerEncoderLayer (decoder = false) or TransformerDecoderLayer:
 * the attention blocks, the feed-forward Linear pair, the norms, the
 * dropouts' p and the activation. Their modes are read at each call
 * (tsx_transformer_modes). */
static int
read_transformer_layer(const tsx_desc_reader *r,
                       PyObject *module,
                       bool decoder,
                       ts_module_desc *d,
                       ts_transformer_layer_desc *l)
{
    tsx_state *st = r->st;
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
    TRY(t = tsx_attr_true(st, module, "norm_first"));
    l->norm_first = t;
    for (int i = 0; i < (decoder ? 2 : 1); i++) {
        TRY(child_desc(r, module, attn[i], TS_MOD_MHA, d, &sub));
        attention_of(&sub, i ? &l->cross_attn : &l->self_attn);
    }
    TRY(child_desc(r, module, "linear1", TS_MOD_LINEAR, d, &sub));
    linear_of(&sub, &l->linear1);
    TRY(child_desc(r, module, "linear2", TS_MOD_LINEAR, d, &sub));
    linear_of(&sub, &l->linear2);
    for (int i = 0; i < blocks; i++) {
        TRY(child_desc(r, module, norms[i], TS_MOD_LAYERNORM, d, &sub));
        norm_of(&sub, &l->norm[i]);
    }
    for (int i = 0; i <= blocks; i++) {
        TRY(child_desc(r, module, drops[i], TS_MOD_DROPOUT, d, &sub));
        l->dropout[i] = sub.p;
    }
    TRY(read_activation(r, module, &l->activation, d));
    return 0;
}

/* A stack's layers as a new list (NULL with an exception set). */
static PyObject *
stack_layers(tsx_state *st, PyObject *stack)
{
    PyObject *layers = tsx_module_attr(st, stack, "layers"), *seq = NULL;
    if (layers != NULL && tsx_is_native_named(st, layers, "ModuleList")) {
        /* a ModuleList iterates its _modules values: no Python calls */
        PyObject *children = tsx_child_dict(st, layers);
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
read_transformer_stack(const tsx_desc_reader *r,
                       PyObject *module,
                       bool decoder,
                       ts_module_desc *d,
                       ts_transformer_layer_desc *l,
                       ts_norm_desc *norm)
{
    tsx_state *st = r->st;
    ts_module_kind want = decoder ? TS_MOD_TRANSFORMER_DECODER_LAYER
                                  : TS_MOD_TRANSFORMER_ENCODER_LAYER;
    PyObject *final = NULL, *seq = stack_layers(st, module);
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
        int got = object_desc(r, PyList_GET_ITEM(seq, i), &sub);
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
    final = tsx_module_attr(st, module, "norm");
    if (final == NULL) {
        goto done;
    }
    norm->kind = TS_NORM_NONE;
    if (final != Py_None) {
        if (object_desc(r, final, &sub) < 0) {
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
read_transformer(const tsx_desc_reader *r, PyObject *module, ts_module_desc *d)
{
    tsx_state *st = r->st;
    ts_transformer_desc *t = &d->transformer;
    ts_module_desc sub;
    int on;
    switch (d->kind) {
        case TS_MOD_TRANSFORMER_ENCODER_LAYER:
            return read_transformer_layer(r, module, false, d, &t->encoder);
        case TS_MOD_TRANSFORMER_DECODER_LAYER:
            return read_transformer_layer(r, module, true, d, &t->decoder);
        case TS_MOD_TRANSFORMER_ENCODER:
            if ((on = tsx_attr_true(st, module, "enable_nested_tensor")) < 0) {
                return -1;
            }
            t->enable_nested_tensor = on;
            return read_transformer_stack(
                r, module, false, d, &t->encoder, &t->encoder_norm);
        case TS_MOD_TRANSFORMER_DECODER:
            return read_transformer_stack(
                r, module, true, d, &t->decoder, &t->decoder_norm);
        case TS_MOD_TRANSFORMER:
            if (child_desc(
                    r, module, "encoder", TS_MOD_TRANSFORMER_ENCODER, d, &sub)
                < 0) {
                return -1;
            }
            memcpy(&t->encoder, &sub.transformer.encoder, sizeof t->encoder);
            t->encoder_norm = sub.transformer.encoder_norm;
            t->enable_nested_tensor = sub.transformer.enable_nested_tensor;
            if (child_desc(
                    r, module, "decoder", TS_MOD_TRANSFORMER_DECODER, d, &sub)
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
read_stack_modes(tsx_state *st,
                 PyObject *stack,
                 ts_module_desc *d,
                 ts_transformer_layer_desc *l)
{
    PyObject *seq = stack_layers(st, stack);
    ts_transformer_layer_desc one;
    int rc = -1;
    if (seq == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq); i++) {
        memcpy(&one, l, sizeof one);
        if (read_layer_modes(st, PyList_GET_ITEM(seq, i), &one) < 0) {
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
tsx_transformer_modes(tsx_state *st, PyObject *module, ts_module_desc *d)
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
            return read_layer_modes(st, module, &t->encoder);
        case TS_MOD_TRANSFORMER_DECODER_LAYER:
            return read_layer_modes(st, module, &t->decoder);
        case TS_MOD_TRANSFORMER_ENCODER:
            return read_stack_modes(st, module, d, &t->encoder);
        case TS_MOD_TRANSFORMER_DECODER:
            return read_stack_modes(st, module, d, &t->decoder);
        case TS_MOD_TRANSFORMER:
            if ((part = tsx_module_attr(st, module, "encoder")) != NULL
                && read_stack_modes(st, part, d, &t->encoder) == 0) {
                Py_DECREF(part);
                if ((part = tsx_module_attr(st, module, "decoder")) != NULL) {
                    rc = read_stack_modes(st, part, d, &t->decoder);
                }
            }
            Py_XDECREF(part);
            return rc;
        default:
            return 0;
    }
}

/* ---- one reader per module family ------------------------------------------
 * family_readers[] mirrors the core's family table (ts_mf_families in
 * src/core/module_formulas.c, indexed by the same ts_module_kind): each
 * family whose formulas need hyperparameters has one reader here. Adding a
 * family is a row there, a row here (and its classes in native_classes),
 * and a pinned test (tests/c/test_module_formulas.c,
 * tests/python/test_module_families.py). A reader returns 0, or -1 with an
 * exception (tsx_module_desc applies the user-code rule to it). */

typedef int (*family_reader)(const tsx_desc_reader *r,
                             PyObject *m,
                             const native_class *native,
                             ts_module_desc *d);

static int
read_inplace(const tsx_desc_reader *r,
             PyObject *m,
             const native_class *native,
             ts_module_desc *d)
{
    tsx_state *st = r->st;
    int t;
    TRY(t = tsx_attr_true(st, m, "inplace"));
    d->inplace = t;
    return 0;
}

static int
read_linear(const tsx_desc_reader *r,
            PyObject *m,
            const native_class *native,
            ts_module_desc *d)
{
    tsx_state *st = r->st;
    TRY(tsx_attr_int(st, m, "in_features", &d->in_features));
    TRY(tsx_attr_int(st, m, "out_features", &d->out_features));
    return 0;
}

static int
read_conv(const tsx_desc_reader *r,
          PyObject *m,
          const native_class *native,
          ts_module_desc *d)
{
    tsx_state *st = r->st;
    TRY(tsx_attr_int(st, m, "in_channels", &d->in_channels));
    TRY(tsx_attr_int(st, m, "out_channels", &d->out_channels));
    TRY(tsx_attr_int(st, m, "groups", &d->groups));
    if (d->rank == 0) {
        d->rank = 2;
    }
    TRY(tsx_attr_tuple(st, m, "kernel_size", d->rank, d->kernel, NULL, NULL));
    TRY(tsx_attr_tuple(st, m, "stride", d->rank, d->stride, NULL, NULL));
    TRY(tsx_attr_tuple(
        st, m, "padding", d->rank, d->padding, NULL, &d->padding_is_string));
    TRY(tsx_attr_tuple(st, m, "dilation", d->rank, d->dilation, NULL, NULL));
    if (d->padding_is_string) {
        /* padding='same' pads d*(k-1)/2 on the left; 'valid' none */
        PyObject *pad = tsx_module_attr(st, m, "padding");
        int same;
        if (pad == NULL) {
            return -1;
        }
        same = PyUnicode_Check(pad)
               && PyUnicode_CompareWithASCIIString(pad, "same") == 0;
        Py_DECREF(pad);
        for (int i = 0; i < d->rank; i++) {
            d->padding[i] = same ? d->dilation[i] * (d->kernel[i] - 1) / 2 : 0;
        }
    }
    return 0;
}

static int
read_pool(const tsx_desc_reader *r,
          PyObject *m,
          const native_class *native,
          ts_module_desc *d)
{
    tsx_state *st = r->st;
    int t;
    TRY(tsx_attr_tuple(
        st, m, "kernel_size", d->rank, d->kernel, &d->kernel_is_int, NULL));
    TRY(tsx_attr_tuple(st, m, "stride", d->rank, d->stride, NULL, NULL));
    TRY(tsx_attr_tuple(st, m, "padding", d->rank, d->padding, NULL, NULL));
    TRY(t = tsx_attr_true(st, m, "ceil_mode"));
    d->ceil_mode = t;
    if (d->kind == TS_MOD_MAXPOOL) {
        TRY(tsx_attr_tuple(
            st, m, "dilation", d->rank, d->dilation, NULL, NULL));
        TRY(t = tsx_attr_true(st, m, "return_indices"));
        d->return_indices = t;
        d->has_dilation = true;
    }
    else {
        TRY(t = tsx_attr_true(st, m, "count_include_pad"));
        d->count_include_pad = t;
        for (int i = 0; i < d->rank; i++) {
            d->dilation[i] = 1;
        }
    }
    return 0;
}

static int
read_adaptive_maxpool(const tsx_desc_reader *r,
                      PyObject *m,
                      const native_class *native,
                      ts_module_desc *d)
{
    tsx_state *st = r->st;
    int t;
    TRY(t = tsx_attr_true(st, m, "return_indices"));
    d->return_indices = t;
    return 0;
}

static int
read_batchnorm(const tsx_desc_reader *r,
               PyObject *m,
               const native_class *native,
               ts_module_desc *d)
{
    tsx_state *st = r->st;
    int t;
    TRY(tsx_attr_int(st, m, "num_features", &d->num_features));
    TRY(t = tsx_attr_true(st, m, "track_running_stats"));
    d->track_running_stats = t;
    TRY(t = tsx_attr_present(st, m, "running_mean"));
    d->has_running_mean = t;
    TRY(t = tsx_attr_present(st, m, "running_var"));
    d->has_running_var = t;
    TRY(t = tsx_attr_present(st, m, "momentum"));
    d->momentum_is_none = !t;
    return 0;
}

static int
read_dropout(const tsx_desc_reader *r,
             PyObject *m,
             const native_class *native,
             ts_module_desc *d)
{
    tsx_state *st = r->st;
    int t;
    TRY(tsx_attr_real(st, m, "p", &d->p));
    TRY(t = tsx_attr_true(st, m, "inplace"));
    d->inplace = t;
    return 0;
}

static int
read_normalized(const tsx_desc_reader *r,
                PyObject *m,
                const native_class *native,
                ts_module_desc *d)
{
    tsx_state *st = r->st;
    return read_normalized_shape(st, m, d);
}

static int
read_mha(const tsx_desc_reader *r,
         PyObject *m,
         const native_class *native,
         ts_module_desc *d)
{
    tsx_state *st = r->st;
    PyObject *out_proj;
    int t;
    TRY(tsx_attr_int(st, m, "embed_dim", &d->embed_dim));
    TRY(tsx_attr_int(st, m, "num_heads", &d->num_heads));
    TRY(tsx_attr_int(st, m, "kdim", &d->kdim));
    TRY(tsx_attr_int(st, m, "vdim", &d->vdim));
    TRY(t = tsx_attr_true(st, m, "batch_first"));
    d->batch_first = t;
    TRY(t = tsx_attr_present(st, m, "in_proj_bias"));
    d->has_in_proj_bias = t;
    TRY(t = tsx_attr_present(st, m, "bias_k"));
    d->add_bias_kv = t;
    TRY(t = tsx_attr_true(st, m, "add_zero_attn"));
    d->add_zero_attn = t;
    TRY(tsx_attr_real(st, m, "dropout", &d->attn_dropout));
    out_proj = tsx_module_attr(st, m, "out_proj");
    if (out_proj == NULL) {
        return -1;
    }
    t = tsx_attr_present(st, out_proj, "bias");
    Py_DECREF(out_proj);
    TRY(t);
    d->has_out_proj_bias = t;
    return 0;
}

static int
read_softmax(const tsx_desc_reader *r,
             PyObject *m,
             const native_class *native,
             ts_module_desc *d)
{
    tsx_state *st = r->st;
    return tsx_attr_int_or_none(st, m, "dim", &d->dim, &d->dim_is_none);
}

static int
read_cosine_similarity(const tsx_desc_reader *r,
                       PyObject *m,
                       const native_class *native,
                       ts_module_desc *d)
{
    tsx_state *st = r->st;
    return tsx_attr_int(st, m, "dim", &d->dim);
}

static int
read_pairwise_distance(const tsx_desc_reader *r,
                       PyObject *m,
                       const native_class *native,
                       ts_module_desc *d)
{
    tsx_state *st = r->st;
    return tsx_attr_real(st, m, "norm", &d->norm_p);
}

static int
read_gelu(const tsx_desc_reader *r,
          PyObject *m,
          const native_class *native,
          ts_module_desc *d)
{
    tsx_state *st = r->st;
    static const char *const modes[] = {"none", "tanh", NULL};
    int t;
    TRY(tsx_attr_choice(st, m, "approximate", modes, &t));
    if (t < 0) {
        refuse(d, "GELU approximate must be 'none' or 'tanh'");
    }
    d->approximate_tanh = t == 1;
    return 0;
}

static int
read_groupnorm(const tsx_desc_reader *r,
               PyObject *m,
               const native_class *native,
               ts_module_desc *d)
{
    tsx_state *st = r->st;
    return tsx_attr_int(st, m, "num_groups", &d->num_groups);
}

static int
read_local_response_norm(const tsx_desc_reader *r,
                         PyObject *m,
                         const native_class *native,
                         ts_module_desc *d)
{
    tsx_state *st = r->st;
    return tsx_attr_int(st, m, "size", &d->size);
}

static int
read_embedding(const tsx_desc_reader *r,
               PyObject *m,
               const native_class *native,
               ts_module_desc *d)
{
    tsx_state *st = r->st;
    /* sum, mean, max: TS_BAG_* order */
    static const char *const modes[] = {"sum", "mean", "max", NULL};
    int t;
    TRY(tsx_attr_int(st, m, "embedding_dim", &d->embedding_dim));
    TRY(t = tsx_attr_present(st, m, "max_norm"));
    if (t) {
        /* max_norm renormalizes the looked-up rows in place: work that
         * depends on the values */
        refuse(d, "Embedding with max_norm renormalizes rows");
    }
    if (d->kind == TS_MOD_EMBEDDING_BAG) {
        TRY(tsx_attr_choice(st, m, "mode", modes, &t));
        if (t < 0) {
            refuse(d, "EmbeddingBag mode must be sum, mean or max");
        }
        d->bag_mode = t < 0 ? TS_BAG_SUM : (ts_bag_mode)t;
    }
    return 0;
}

static int
read_constant_pad(const tsx_desc_reader *r,
                  PyObject *m,
                  const native_class *native,
                  ts_module_desc *d)
{
    tsx_state *st = r->st;
    PyObject *pad = tsx_module_attr(st, m, "padding");
    Py_ssize_t n = pad ? PyObject_Length(pad) : -1;
    Py_XDECREF(pad);
    if (n < 0 || n > 6) {
        if (!PyErr_Occurred()) {
            tsx_fail(PyExc_ValueError, "padding is too long");
        }
        return -1;
    }
    TRY(tsx_attr_tuple(st, m, "padding", (int)n, d->pad, NULL, NULL));
    d->pad_count = (int)n;
    return 0;
}

static int
read_upsample(const tsx_desc_reader *r,
              PyObject *m,
              const native_class *native,
              ts_module_desc *d)
{
    tsx_state *st = r->st;
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
    int t;
    TRY(tsx_attr_choice(st, m, "mode", modes, &t));
    if (t < 0) {
        refuse(d, "Upsample mode is not a known interpolation");
    }
    d->upsample_mode = t < 0 ? TS_UPSAMPLE_NEAREST : kinds[t];
    return 0;
}

static int
read_rnn(const tsx_desc_reader *r,
         PyObject *m,
         const native_class *native,
         ts_module_desc *d)
{
    tsx_state *st = r->st;
    /* nn.RNNBase.mode, in ts_rnn_mode order */
    static const char *const modes[] = {
        "RNN_TANH", "RNN_RELU", "LSTM", "GRU", NULL};
    int t;
    TRY(tsx_attr_choice(st, m, "mode", modes, &t));
    if (t < 0) {
        refuse(d, "RNN mode is not RNN_TANH, RNN_RELU, LSTM or GRU");
    }
    d->rnn_mode = t < 0 ? TS_RNN_TANH : (ts_rnn_mode)t;
    TRY(tsx_attr_int(st, m, "input_size", &d->input_size));
    TRY(tsx_attr_int(st, m, "hidden_size", &d->hidden_size));
    TRY(tsx_attr_int(st, m, "num_layers", &d->num_layers));
    TRY(tsx_attr_int(st, m, "proj_size", &d->proj_size));
    TRY(t = tsx_attr_true(st, m, "bidirectional"));
    d->bidirectional = t;
    TRY(t = tsx_attr_true(st, m, "bias"));
    d->has_bias = t;
    TRY(tsx_attr_real(st, m, "dropout", &d->p));
    return 0;
}

static int
read_rnn_cell(const tsx_desc_reader *r,
              PyObject *m,
              const native_class *native,
              ts_module_desc *d)
{
    tsx_state *st = r->st;
    static const char *const nonlinearity[] = {"tanh", "relu", NULL};
    int t;
    TRY(tsx_attr_int(st, m, "input_size", &d->input_size));
    TRY(tsx_attr_int(st, m, "hidden_size", &d->hidden_size));
    TRY(t = tsx_attr_true(st, m, "bias"));
    d->has_bias = t;
    d->num_layers = 1;
    if (strcmp(native->name, "LSTMCell") == 0) {
        d->rnn_mode = TS_RNN_LSTM;
    }
    else if (strcmp(native->name, "GRUCell") == 0) {
        d->rnn_mode = TS_RNN_GRU;
    }
    else {
        TRY(tsx_attr_choice(st, m, "nonlinearity", nonlinearity, &t));
        if (t < 0) {
            refuse(d, "RNNCell nonlinearity is not tanh or relu");
        }
        d->rnn_mode = t == 1 ? TS_RNN_RELU : TS_RNN_TANH;
    }
    return 0;
}

static int
read_bilinear(const tsx_desc_reader *r,
              PyObject *m,
              const native_class *native,
              ts_module_desc *d)
{
    tsx_state *st = r->st;
    TRY(tsx_attr_int(st, m, "in1_features", &d->in_features));
    TRY(tsx_attr_int(st, m, "in2_features", &d->in2_features));
    TRY(tsx_attr_int(st, m, "out_features", &d->out_features));
    return 0;
}

static int
read_fold(const tsx_desc_reader *r,
          PyObject *m,
          const native_class *native,
          ts_module_desc *d)
{
    tsx_state *st = r->st;
    TRY(tsx_attr_tuple(st, m, "output_size", 2, d->output_size, NULL, NULL));
    TRY(tsx_attr_tuple(st, m, "kernel_size", 2, d->kernel, NULL, NULL));
    TRY(tsx_attr_tuple(st, m, "dilation", 2, d->dilation, NULL, NULL));
    TRY(tsx_attr_tuple(st, m, "padding", 2, d->padding, NULL, NULL));
    TRY(tsx_attr_tuple(st, m, "stride", 2, d->stride, NULL, NULL));
    return 0;
}

static int
read_maxunpool(const tsx_desc_reader *r,
               PyObject *m,
               const native_class *native,
               ts_module_desc *d)
{
    tsx_state *st = r->st;
    TRY(tsx_attr_tuple(st, m, "kernel_size", d->rank, d->kernel, NULL, NULL));
    TRY(tsx_attr_tuple(st, m, "stride", d->rank, d->stride, NULL, NULL));
    TRY(tsx_attr_tuple(st, m, "padding", d->rank, d->padding, NULL, NULL));
    return 0;
}

static int
read_lppool(const tsx_desc_reader *r,
            PyObject *m,
            const native_class *native,
            ts_module_desc *d)
{
    tsx_state *st = r->st;
    PyObject *stride;
    int t;
    TRY(tsx_attr_real(st, m, "norm_type", &d->norm_p));
    TRY(tsx_attr_tuple(
        st, m, "kernel_size", d->rank, d->kernel, &d->kernel_is_int, NULL));
    TRY(t = tsx_attr_true(st, m, "ceil_mode"));
    d->ceil_mode = t;
    /* stride=None means stride = kernel_size */
    stride = tsx_module_attr(st, m, "stride");
    if (stride == NULL) {
        return -1;
    }
    t = stride == Py_None;
    Py_DECREF(stride);
    if (t) {
        memcpy(d->stride, d->kernel, sizeof d->stride);
        return 0;
    }
    return tsx_attr_tuple(st, m, "stride", d->rank, d->stride, NULL, NULL);
}

static int
read_transformer_family(const tsx_desc_reader *r,
                        PyObject *m,
                        const native_class *native,
                        ts_module_desc *d)
{
    return read_transformer(r, m, d);
}

/* Families without a row read nothing beyond weight, bias and the
 * parameter count. */
static const family_reader family_readers[TS_MOD_KIND_COUNT] = {
    [TS_MOD_LINEAR] = read_linear,
    [TS_MOD_RELU] = read_inplace,
    [TS_MOD_RELU6] = read_inplace,
    [TS_MOD_LEAKYRELU] = read_inplace,
    [TS_MOD_ELU] = read_inplace,
    [TS_MOD_CONV] = read_conv,
    [TS_MOD_CONVTRANSPOSE] = read_conv,
    [TS_MOD_BATCHNORM] = read_batchnorm,
    [TS_MOD_MAXPOOL] = read_pool,
    [TS_MOD_AVGPOOL] = read_pool,
    [TS_MOD_ADAPTIVE_MAXPOOL] = read_adaptive_maxpool,
    [TS_MOD_DROPOUT] = read_dropout,
    [TS_MOD_LAYERNORM] = read_normalized,
    [TS_MOD_MHA] = read_mha,
    [TS_MOD_SOFTMAX] = read_softmax,
    [TS_MOD_LOGSOFTMAX] = read_softmax,
    [TS_MOD_SOFTMIN] = read_softmax,
    [TS_MOD_GELU] = read_gelu,
    [TS_MOD_INSTANCENORM] = read_batchnorm,
    [TS_MOD_GROUPNORM] = read_groupnorm,
    [TS_MOD_RMSNORM] = read_normalized,
    [TS_MOD_LOCAL_RESPONSE_NORM] = read_local_response_norm,
    [TS_MOD_FEATURE_DROPOUT] = read_dropout,
    [TS_MOD_ALPHA_DROPOUT] = read_dropout,
    [TS_MOD_EMBEDDING] = read_embedding,
    [TS_MOD_EMBEDDING_BAG] = read_embedding,
    [TS_MOD_CONSTANT_PAD] = read_constant_pad,
    [TS_MOD_UPSAMPLE] = read_upsample,
    [TS_MOD_COSINE_SIMILARITY] = read_cosine_similarity,
    [TS_MOD_PAIRWISE_DISTANCE] = read_pairwise_distance,
    [TS_MOD_RNN] = read_rnn,
    [TS_MOD_RNN_CELL] = read_rnn_cell,
    [TS_MOD_BILINEAR] = read_bilinear,
    [TS_MOD_FOLD] = read_fold,
    [TS_MOD_MAXUNPOOL] = read_maxunpool,
    [TS_MOD_LPPOOL] = read_lppool,
    [TS_MOD_TRANSFORMER_ENCODER_LAYER] = read_transformer_family,
    [TS_MOD_TRANSFORMER_DECODER_LAYER] = read_transformer_family,
    [TS_MOD_TRANSFORMER_ENCODER] = read_transformer_family,
    [TS_MOD_TRANSFORMER_DECODER] = read_transformer_family,
    [TS_MOD_TRANSFORMER] = read_transformer_family,
};

/* What every native family reads: the parameter count, weight and bias. */
static int
read_common(tsx_state *st, PyObject *module, ts_module_desc *d)
{
    int t;
    TRY(tsx_param_numel(st, module, &d->param_numel));
    d->training = false; /* the crawl runs in eval mode */
    TRY(t = tsx_param_present(st, module, "weight"));
    d->has_weight = t;
    TRY(t = tsx_param_present(st, module, "bias"));
    d->has_bias = t;
    return 0;
}

/* An nn.Sequential (the class itself: a subclass may have its own forward)
 * without children returns its input unchanged: exactly nn.Identity's work,
 * so it takes Identity's formulas. 1, 0, or -1 with an exception. */
static int
empty_sequential(tsx_state *st, PyObject *module)
{
    int children;
    if (!Py_IS_TYPE(module, (PyTypeObject *)st->sequential)) {
        return 0;
    }
    children = tsx_has_children(st, module);
    return children < 0 ? -1 : !children;
}

int
tsx_module_desc(const tsx_desc_reader *r,
                PyObject *module,
                const native_class *native,
                PyObject *native_type,
                ts_module_desc *d)
{
    tsx_state *st = r->st;
    family_reader read;
    memset(d, 0, sizeof *d);
    if (native == NULL) {
        int empty = empty_sequential(st, module);
        d->kind = empty > 0 ? TS_MOD_IDENTITY : TS_MOD_UNKNOWN;
        return empty < 0 ? -1 : 0;
    }
    if (!forward_unchanged(r, module, native_type)) {
        d->kind = TS_MOD_UNKNOWN;
        d->refusal =
            "its forward is not the native class's, which the "
            "formula describes";
        return 0;
    }
    d->kind = native->kind;
    d->rank = native->rank;
    read =
        (unsigned)d->kind < TS_MOD_KIND_COUNT ? family_readers[d->kind] : NULL;
    if (read_common(st, module, d) == 0
        && (read == NULL || read(r, module, native, d) == 0)) {
        return 0;
    }
    /* A module whose attributes do not read like its family's (an Exception
     * from a property, a missing or mistyped attribute) has no formula
     * rather than a wrong one; an interrupt propagates. */
    memset(d, 0, sizeof *d);
    d->kind = TS_MOD_UNKNOWN;
    return tsx_user_failed(NULL) < 0 ? -1 : 0;
}
