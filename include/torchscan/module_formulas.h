/* Module formulas: FLOPs, MACs, DMAs and receptive field of one module call,
 * computed from a plain description of the module (filled once per module by
 * the binding) and of the call (shapes read in the hooks).
 *
 * Conventions are those of the TorchScan contract, section 2.1, and are
 * written down in docs/module-formulas.md.
 */
#ifndef TORCHSCAN_MODULE_FORMULAS_H
#define TORCHSCAN_MODULE_FORMULAS_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Module families with a formula. TS_MOD_UNKNOWN has none: its metrics are
 * partial with a zero lower bound ("Module type not supported: X"). */
typedef enum {
    TS_MOD_UNKNOWN = 0,
    TS_MOD_IDENTITY,
    TS_MOD_FLATTEN,
    TS_MOD_LINEAR,
    TS_MOD_RELU,
    TS_MOD_ELU,
    TS_MOD_LEAKYRELU,
    TS_MOD_RELU6,
    TS_MOD_TANH,
    TS_MOD_SIGMOID,
    TS_MOD_CONV,          /* Conv1d/2d/3d (rank 1-3) */
    TS_MOD_CONVTRANSPOSE, /* ConvTranspose1d/2d/3d */
    TS_MOD_BATCHNORM,     /* BatchNorm1d/2d/3d, SyncBatchNorm, lazy */
    TS_MOD_MAXPOOL,       /* MaxPool1d/2d/3d */
    TS_MOD_AVGPOOL,       /* AvgPool1d/2d/3d */
    TS_MOD_ADAPTIVE_MAXPOOL,
    TS_MOD_ADAPTIVE_AVGPOOL,
    TS_MOD_DROPOUT, /* exact nn.Dropout */
    TS_MOD_LAYERNORM,
    TS_MOD_MHA, /* nn.MultiheadAttention */
    /* Newer pointwise activations (contract 2.1, POINTWISE_TYPES): a fixed
     * cost per input element, no MACs, DMAs N + O. */
    TS_MOD_HARDTANH,
    TS_MOD_THRESHOLD,
    TS_MOD_HARDSHRINK,
    TS_MOD_SOFTSIGN,
    TS_MOD_HARDSIGMOID,
    TS_MOD_PRELU,
    TS_MOD_RRELU, /* eval only */
    TS_MOD_HARDSWISH,
    TS_MOD_SOFTSHRINK,
    TS_MOD_CELU,
    TS_MOD_SELU,
    TS_MOD_LOGSIGMOID,
    TS_MOD_SOFTPLUS,
    TS_MOD_TANHSHRINK,
    TS_MOD_MISH,
    TS_MOD_GELU, /* approximate 'none' or 'tanh' */
    TS_MOD_SILU,
    /* Softmax family: costs per element and per normalized row */
    TS_MOD_SOFTMAX,
    TS_MOD_SOFTMAX2D,
    TS_MOD_LOGSOFTMAX,
    TS_MOD_SOFTMIN,
    /* Non-pointwise primitives */
    TS_MOD_GLU,
    TS_MOD_GROUPNORM,
    TS_MOD_RMSNORM,
    /* Layout types (LAYOUT_TYPES) */
    TS_MOD_EMBEDDING,
    TS_MOD_UNFLATTEN,
    TS_MOD_PIXEL_SHUFFLE, /* PixelShuffle and PixelUnshuffle */
    TS_MOD_CHANNEL_SHUFFLE,
    TS_MOD_UNFOLD,
    TS_MOD_PAD,          /* reflection, replication, circular Pad1-3d */
    TS_MOD_CONSTANT_PAD, /* ConstantPad1-3d, ZeroPad1-3d */
    TS_MOD_UPSAMPLE,     /* Upsample, UpsamplingNearest2d/Bilinear2d */
    /* Native Transformer family (exact native types, unchanged forwards) */
    TS_MOD_TRANSFORMER_ENCODER_LAYER,
    TS_MOD_TRANSFORMER_DECODER_LAYER,
    TS_MOD_TRANSFORMER_ENCODER,
    TS_MOD_TRANSFORMER_DECODER,
    TS_MOD_TRANSFORMER,
    /* Beyond the reference (SPEC 3.4); conventions in
     * docs/module-formulas.md */
    TS_MOD_EMBEDDING_BAG,
    TS_MOD_RNN,      /* RNN, LSTM, GRU (rnn_mode) */
    TS_MOD_RNN_CELL, /* RNNCell, LSTMCell, GRUCell (rnn_mode) */
    TS_MOD_INSTANCENORM,
    TS_MOD_LOCAL_RESPONSE_NORM,
    TS_MOD_BILINEAR,
    TS_MOD_COSINE_SIMILARITY,
    TS_MOD_PAIRWISE_DISTANCE,
    TS_MOD_FOLD,
    TS_MOD_FEATURE_DROPOUT, /* Dropout1d/2d/3d */
    TS_MOD_ALPHA_DROPOUT,   /* AlphaDropout, FeatureAlphaDropout */
    TS_MOD_MAXUNPOOL,
    TS_MOD_LPPOOL,
    TS_MOD_KIND_COUNT
} ts_module_kind;

/* Recurrent cell types of TS_MOD_RNN and TS_MOD_RNN_CELL. */
typedef enum {
    TS_RNN_TANH = 0,
    TS_RNN_RELU,
    TS_RNN_LSTM,
    TS_RNN_GRU,
} ts_rnn_mode;

/* Upsample interpolation modes. */
typedef enum {
    TS_UPSAMPLE_NEAREST = 0, /* nearest and nearest-exact */
    TS_UPSAMPLE_LINEAR,      /* 2 neighbours */
    TS_UPSAMPLE_BILINEAR,    /* 4 */
    TS_UPSAMPLE_TRILINEAR,   /* 8 */
    TS_UPSAMPLE_BICUBIC,     /* 16 */
    TS_UPSAMPLE_AREA,        /* adaptive average pooling */
} ts_upsample_mode;

/* EmbeddingBag reductions. */
typedef enum {
    TS_BAG_SUM = 0,
    TS_BAG_MEAN,
    TS_BAG_MAX,
} ts_bag_mode;

/* ---- native Transformer sub-layers ---------------------------------------
 * A Transformer-family module is described by its sub-layers' hyperparameters
 * (read once by the binding), so that its formulas can reuse the
 * MultiheadAttention, Linear and LayerNorm formulas term by term. A stack
 * (TransformerEncoder/Decoder) holds `count` copies of one layer: the binding
 * refuses stacks whose layers differ. */

typedef struct ts_attention_desc {
    int64_t embed_dim, num_heads, kdim, vdim;
    bool has_in_proj_bias, has_out_proj_bias;
    bool add_bias_kv, add_zero_attn, batch_first;
    double dropout;
    bool training; /* the attention module's mode: its dropout applies */
    int64_t param_numel;
} ts_attention_desc;

typedef struct ts_linear_desc {
    int64_t in_features, out_features;
    bool has_bias;
    int64_t param_numel;
} ts_linear_desc;

typedef enum {
    TS_NORM_NONE = 0, /* no norm (a stack built with norm=None) */
    TS_NORM_IDENTITY,
    TS_NORM_LAYERNORM,
} ts_norm_kind;

typedef struct ts_norm_desc {
    ts_norm_kind kind;
    bool has_weight, has_bias;
    int64_t normalized_numel;
    int64_t param_numel;
} ts_norm_desc;

typedef enum {
    TS_ACT_RELU = 0,
    TS_ACT_GELU, /* exact (erf) GELU */
} ts_activation;

typedef struct ts_transformer_layer_desc {
    int64_t count; /* layers: 1 for a layer, len(layers) for a stack */
    bool decoder;  /* has cross-attention and a third norm */
    bool norm_first;
    ts_activation activation;
    ts_attention_desc self_attn, cross_attn;
    ts_linear_desc linear1, linear2;
    ts_norm_desc norm[3];
    /* p of dropout (feed-forward), dropout1, dropout2, dropout3, and
     * whether each is in training mode (then it applies) */
    double dropout[4];
    bool dropout_training[4];
} ts_transformer_layer_desc;

typedef struct ts_transformer_desc {
    /* encoder layers (count 0: none) and decoder layers */
    ts_transformer_layer_desc encoder, decoder;
    /* the stacks' final norms */
    ts_norm_desc encoder_norm, decoder_norm;
    /* TransformerEncoder.enable_nested_tensor: padding masks are then
     * applied by nested tensors, which the estimates do not model */
    bool enable_nested_tensor;
} ts_transformer_desc;

/* Hyperparameters of one module, read once when the crawl starts. Fields a
 * family does not use are zero. Spatial tuples hold `rank` entries. */
typedef struct ts_module_desc {
    ts_module_kind kind;
    int rank;        /* spatial rank of conv/pool families (1-3) */
    bool training;   /* module.training during the call (crawl: false) */
    bool inplace;    /* activations, dropout */
    bool has_weight; /* linear/conv/norm affine weight present */
    bool has_bias;   /* linear/conv/norm bias present */
    /* Linear */
    int64_t in_features, out_features;
    /* Conv / ConvTranspose */
    int64_t in_channels, out_channels, groups;
    int64_t kernel[3], stride[3], padding[3], dilation[3];
    bool padding_is_string; /* padding='same'/'valid' */
    /* Pooling: kernel/stride/padding/dilation above; kernel_is_int means the
     * module was built with an int kernel (nominal volume k^rank). */
    bool kernel_is_int;
    bool ceil_mode, return_indices, count_include_pad;
    bool has_dilation; /* max pooling carries dilation, avg pooling not */
    /* BatchNorm */
    int64_t num_features;
    bool track_running_stats, has_running_mean, has_running_var;
    bool momentum_is_none;
    /* Dropout */
    double p;
    /* LayerNorm: product and count of normalized_shape */
    int64_t normalized_numel;
    int normalized_ndim;
    /* MultiheadAttention */
    int64_t embed_dim, num_heads, kdim, vdim;
    bool batch_first, has_in_proj_bias, has_out_proj_bias;
    bool add_bias_kv, add_zero_attn;
    double attn_dropout;
    /* Elements of module.parameters() (recursive, each tensor once), read
     * when the parameters are materialized: "P" of the Linear, Conv,
     * ConvTranspose, LayerNorm and MultiheadAttention DMAs. */
    int64_t param_numel;
    /* Set by the binding when the module is of a native family but in a
     * configuration the formulas do not model (a static string, e.g.
     * "Embedding with max_norm renormalizes rows"): every metric is then a
     * NotImplementedError with this text. */
    const char *refusal;
    /* Softmax, LogSoftmax, Softmin, CosineSimilarity: the dim argument
     * (dim_is_none below: Softmax's legacy implicit dim). */
    int64_t dim;
    /* GroupNorm */
    int64_t num_groups;
    /* LocalResponseNorm window; LPPool norm_type and PairwiseDistance p */
    int64_t size;
    double norm_p;
    /* EmbeddingBag */
    int64_t embedding_dim;
    /* ConstantPadNd: (left, right) pairs from the last axis backwards, as
     * the padding tuple of F.pad (pad_count entries) */
    int64_t pad[6];
    /* Fold: output_size per spatial axis (kernel/stride/padding/dilation
     * above, rank 2) */
    int64_t output_size[3];
    /* RNN family */
    int64_t input_size, hidden_size, num_layers, proj_size;
    /* Bilinear (in1_features is in_features) */
    int64_t in2_features;
    /* Native Transformer family */
    ts_transformer_desc transformer;
    ts_upsample_mode upsample_mode;
    ts_bag_mode bag_mode;
    ts_rnn_mode rnn_mode;
    int pad_count;
    bool dim_is_none;
    bool approximate_tanh; /* GELU(approximate='tanh') */
    bool bidirectional;    /* RNN family */
} ts_module_desc;

/* Mask roles of the Transformer family's calls (slots of
 * ts_module_call.tf_mask), and the three sequences whose causal hints
 * (src/tgt/memory is_causal) the call may set. */
typedef enum {
    TS_TF_SRC_MASK = 0,
    TS_TF_TGT_MASK,
    TS_TF_MEMORY_MASK,
    TS_TF_SRC_KEY_PADDING_MASK,
    TS_TF_TGT_KEY_PADDING_MASK,
    TS_TF_MEMORY_KEY_PADDING_MASK,
    TS_TF_MASK_COUNT
} ts_tf_mask;

typedef enum {
    TS_TF_SRC = 0,
    TS_TF_TGT,
    TS_TF_MEMORY,
    TS_TF_SEQ_COUNT
} ts_tf_seq;

struct ts_token_call; /* token_deps.h */

/* One call of the module. `input` is the first tensor of the ordered inputs,
 * `output` the first tensor of the output. */
typedef struct ts_module_call {
    const char *type_name; /* class __name__, for messages */
    /* Native attention and Transformer calls whose token dependencies are
     * wanted: their masks and hints (borrowed; NULL: none passed, or not
     * wanted). The formulas do not read it. */
    const struct ts_token_call *tokens;
    bool has_input, has_output;
    ts_shape input;
    ts_shape output;
    /* MultiheadAttention only: query/key/value (query == input) */
    ts_shape key, value;
    bool has_key_padding_mask, has_attn_mask;
    /* elements of each mask passed (0 when absent); MultiheadAttention DMAs
     * read every mask once */
    int64_t key_padding_mask_numel, attn_mask_numel;
    /* the attention-weights output: present, and its ndim (3 = averaged) */
    bool has_weights_output;
    int weights_ndim;
    /* The second tensor of two-input families: input2 of Bilinear, x2 of
     * CosineSimilarity and PairwiseDistance, memory of the Transformer
     * decoders, tgt of nn.Transformer, h_n of RNN/LSTM/GRU (has_second
     * below). */
    ts_shape second;
    /* LSTM: elements of c_n; EmbeddingBag: elements of offsets (0 when
     * absent) */
    int64_t aux_numel;
    /* Transformer family: elements of each mask passed, by role */
    int64_t tf_mask_numel[TS_TF_MASK_COUNT];
    bool has_second;
    bool has_per_sample_weights; /* EmbeddingBag */
    /* Transformer family: which masks were passed, and the causal hints
     * set to True */
    bool tf_mask[TS_TF_MASK_COUNT];
    bool tf_causal[TS_TF_SEQ_COUNT];
} ts_module_call;

typedef enum {
    TS_EST_COMPLETE = 0,  /* value is the exact count */
    TS_EST_UNSUPPORTED,   /* "Module type not supported: X": partial, known
                             value 0, diagnostic unsupported_module_metric */
    TS_EST_ERROR,         /* the formula cannot apply to this call:
                             unavailable, diagnostic module_metric_error with
                             message "<ExceptionType>: <text>" */
    TS_EST_NOT_APPLICABLE /* unavailable, no diagnostic */
} ts_est_kind;

#define TS_EST_MESSAGE_SIZE 200

typedef struct ts_estimate {
    ts_est_kind kind;
    ts_number value;
    char message[TS_EST_MESSAGE_SIZE];
} ts_estimate;

typedef struct ts_module_estimates {
    ts_estimate flops, macs, dmas;
    /* The receptive-field trio shares one kind; one message. */
    ts_estimate rf, stride, padding;
} ts_module_estimates;

/* Computes every estimate of one call into *out. Never fails as a whole:
 * each metric carries its own kind. Returns TS_OK, or TS_ENOMEM/TS_EINVAL
 * on a programming error (NULL arguments). */
int ts_module_estimate(const ts_module_desc *desc,
                       const ts_module_call *call,
                       ts_module_estimates *out);

/* Name of a kind, for docs and debugging ("linear", "conv", ...). */
const char *ts_module_kind_name(ts_module_kind kind);

/* True for the kinds whose formulas cover a whole subtree: the call's
 * estimates include the work of the module's children (MultiheadAttention
 * and the native Transformer family, contract 1.10 "Built-in handlers").
 * Such a module is a metric boundary: its children's estimates must not be
 * added again (they are owned by it). */
bool ts_module_kind_owns_subtree(ts_module_kind kind);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_MODULE_FORMULAS_H */
