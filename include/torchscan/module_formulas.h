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
    TS_MOD_KIND_COUNT
} ts_module_kind;

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
} ts_module_desc;

/* One call of the module. `input` is the first tensor of the ordered inputs,
 * `output` the first tensor of the output. */
typedef struct ts_module_call {
    const char *type_name; /* class __name__, for messages */
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

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_MODULE_FORMULAS_H */
