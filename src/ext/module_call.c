/* The parts of a module call the formulas need beyond the first input and
 * output tensors, and the masks token dependencies read (module_call.h). */
#include <string.h>

#include "module_call.h"

/* Finds a call argument by position or keyword. Borrowed or NULL. */
static PyObject *
call_arg(tsx_state *st,
         PyObject *args,
         PyObject *kwargs,
         Py_ssize_t pos,
         const char *name)
{
    PyObject *v = NULL;
    if (args != NULL && PyTuple_GET_SIZE(args) > pos) {
        return PyTuple_GET_ITEM(args, pos);
    }
    if (kwargs != NULL && PyDict_Check(kwargs)) {
        v = tsx_dict_get(st, kwargs, name);
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
    PyObject *key = call_arg(st, args, kwargs, 1, "key");
    PyObject *value = call_arg(st, args, kwargs, 2, "value");
    PyObject *kpm = call_arg(st, args, kwargs, 3, "key_padding_mask");
    PyObject *mask = call_arg(st, args, kwargs, 5, "attn_mask");
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
ref_arg(tsx_state *st, PyObject *args, PyObject *kwargs, const arg_ref *ref)
{
    return ref->pos < 0 ? NULL
                        : call_arg(st, args, kwargs, ref->pos, ref->name);
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
                  ref_arg(st, args, kwargs, &sig->second),
                  &call->second,
                  &call->has_second)
        < 0) {
        return -1;
    }
    for (int i = 0; i < TS_TF_MASK_COUNT; i++) {
        if (arg_numel(st,
                      ref_arg(st, args, kwargs, &sig->masks[i]),
                      &call->tf_mask[i],
                      &call->tf_mask_numel[i])
            < 0) {
            return -1;
        }
    }
    for (int i = 0; i < TS_TF_SEQ_COUNT; i++) {
        call->tf_causal[i] =
            ref_arg(st, args, kwargs, &sig->causal[i]) == Py_True;
    }
    return 0;
}

/* MultiheadAttention(query, key, value, key_padding_mask, need_weights,
 * attn_mask, average_attn_weights, is_causal) and the Transformer family's
 * masks by role. */
static int
fill_tokens_call(tsx_state *st,
                 const ts_module_desc *desc,
                 PyObject *args,
                 PyObject *kwargs,
                 ts_token_call *tokens)
{
    if (desc->kind == TS_MOD_MHA) {
        PyObject *query = call_arg(st, args, kwargs, 0, "query");
        PyObject *key = call_arg(st, args, kwargs, 1, "key");
        PyObject *value = call_arg(st, args, kwargs, 2, "value");
        tokens->key_is_query = key != NULL && key == query;
        tokens->value_is_query = value != NULL && value == query;
        tokens->value_is_key = value != NULL && value == key;
        tokens->is_causal =
            call_arg(st, args, kwargs, 7, "is_causal") == Py_True;
        if (tsx_read_mask(st,
                          call_arg(st, args, kwargs, 5, "attn_mask"),
                          &tokens->attn_mask)
                < 0
            || tsx_read_mask(st,
                             call_arg(st, args, kwargs, 3, "key_padding_mask"),
                             &tokens->key_padding_mask)
                   < 0) {
            return -1;
        }
        return 0;
    }
    const tf_signature *sig =
        &tf_signatures[desc->kind - TS_MOD_TRANSFORMER_ENCODER_LAYER];
    for (int i = 0; i < TS_TF_MASK_COUNT; i++) {
        if (tsx_read_mask(st,
                          ref_arg(st, args, kwargs, &sig->masks[i]),
                          &tokens->tf_masks[i])
            < 0) {
            return -1;
        }
    }
    return 0;
}

int
tsx_fill_tokens(tsx_state *st,
                const ts_module_desc *desc,
                PyObject *args,
                PyObject *kwargs,
                ts_token_call *tokens)
{
    memset(tokens, 0, sizeof *tokens);
    if (!ts_token_kind_supported(desc->kind)) {
        return 0;
    }
    return fill_tokens_call(st, desc, args, kwargs, tokens);
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
        st, args, kwargs, 1, desc->kind == TS_MOD_BILINEAR ? "input2" : "x2");
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
                  call_arg(st, args, kwargs, 1, "offsets"),
                  &present,
                  &call->aux_numel)
        < 0) {
        return -1;
    }
    if (arg_numel(st,
                  call_arg(st, args, kwargs, 2, "per_sample_weights"),
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
