/* Token dependencies of native attention and Transformer calls (contract
 * 1.1, TokenDependency): which positions of each input sequence an output
 * position depends on. A relation is one of four kinds, for output
 * position i:
 *   all            source positions 0 .. limit-1
 *   same_position  position i only
 *   prefix         positions 0 .. min(i+1, limit)-1
 *   none           no position
 * and output positions before `first` depend on nothing.
 *
 * The binding describes the call (shapes, and for each mask argument a
 * summary of its values: ts_mask_scan over a host buffer, or nothing when
 * the values cannot be read, as on the meta device); the functions below
 * decide the relations from that description alone. Conventions and the
 * reasons a call is refused: docs/report-schema.md (TokenDependency).
 */
#ifndef TORCHSCAN_TOKEN_DEPS_H
#define TORCHSCAN_TOKEN_DEPS_H

#include "torchscan/core.h"
#include "torchscan/module_formulas.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The method string of every TokenDependency. */
#define TS_TOKEN_METHOD "torchscan_token_dependency_v1"

/* ---- masks ---------------------------------------------------------------
 */

/* Element types a mask is read in (PyTorch accepts bool and floating
 * masks). */
typedef enum {
    TS_MASK_BOOL = 0,
    TS_MASK_FLOAT16,
    TS_MASK_BFLOAT16,
    TS_MASK_FLOAT32,
    TS_MASK_FLOAT64,
} ts_mask_dtype;

/* A strided view of a mask's elements in host memory (borrowed). */
typedef struct ts_mask_buffer {
    const void *data; /* the element at index (0, ..., 0) */
    ts_mask_dtype dtype;
    int ndim; /* 0 .. TS_MAX_DIMS */
    int64_t dims[TS_MAX_DIMS];
    int64_t strides[TS_MAX_DIMS]; /* in elements, non-negative */
} ts_mask_buffer;

/* What one mask argument of a call holds, as far as the relations care. An
 * entry excludes its position when it is True (bool) or -inf (float);
 * False and finite entries only reweight. */
typedef struct ts_mask_info {
    bool present;   /* the argument was passed and is not None */
    ts_shape shape; /* ndim -1: not a tensor, or a symbolic size */
    bool read;      /* the fields below were read from its values */
    bool excludes;  /* some entry excludes its position */
    bool nonfinite; /* some float entry is NaN or +inf */
    /* ndim >= 2, and an entry (..., i, j) excludes exactly when j > i
     * (PyTorch's canonical causal mask, in every leading slice) */
    bool causal;
} ts_mask_info;

/* Reads the values of `buf` into info->read, excludes, nonfinite and
 * causal (the other fields are left as they are). Returns TS_OK, or
 * TS_EINVAL for a NULL argument, an ndim out of range, a negative size or
 * stride, or an unknown dtype. */
int ts_mask_scan(const ts_mask_buffer *buf, ts_mask_info *info);

/* ---- the call ------------------------------------------------------------
 */

/* What a native attention or Transformer call passed beyond the shapes of
 * ts_module_call (which also holds the Transformer family's causal hints,
 * tf_causal). Filled by the binding; zeroed means "no mask, no hint". */
typedef struct ts_token_call {
    /* MultiheadAttention */
    ts_mask_info attn_mask, key_padding_mask;
    bool is_causal; /* is_causal=True */
    /* which arguments are the same tensor object */
    bool key_is_query, value_is_query, value_is_key;
    /* Transformer family, by role */
    ts_mask_info tf_masks[TS_TF_MASK_COUNT];
} ts_token_call;

/* ---- relations -----------------------------------------------------------
 */

typedef enum {
    TS_TOKEN_NONE = 0,
    TS_TOKEN_SAME_POSITION,
    TS_TOKEN_PREFIX,
    TS_TOKEN_ALL,
} ts_token_kind;

/* One relation from `out_len` output positions to `src_len` source
 * positions. Canonical form (what the functions below return): kind NONE
 * has limit 0 and first 0; same_position has limit src_len; prefix and
 * all have as limit 1 + the last source position any output depends on;
 * first is the first output position with a dependency. */
typedef struct ts_token_relation {
    ts_token_kind kind;
    int64_t limit;
    int64_t first;
} ts_token_relation;

/* The canonical form of `r` (lengths >= 0). */
ts_token_relation ts_token_canonical(ts_token_relation r,
                                     int64_t out_len,
                                     int64_t src_len);

/* Output position i depends on the union of what `a` and `b` give it (two
 * relations to the same source). Returns false when the union is not one
 * of the four kinds; *out is then unspecified. */
bool ts_token_union(const ts_token_relation *a,
                    const ts_token_relation *b,
                    int64_t out_len,
                    int64_t src_len,
                    ts_token_relation *out);

/* Output position i depends on every source position that `inner` gives
 * the middle positions `outer` gives i: outer maps out_len outputs to
 * mid_len middle positions, inner maps those to src_len sources. Returns
 * false when the result is not one of the four kinds. */
bool ts_token_compose(const ts_token_relation *outer,
                      const ts_token_relation *inner,
                      int64_t out_len,
                      int64_t mid_len,
                      int64_t src_len,
                      ts_token_relation *out);

/* Names of the kinds in reports ("all", "same_position", "prefix",
 * "none"). */
const char *ts_token_kind_name(ts_token_kind kind);

/* ---- the result ----------------------------------------------------------
 */

/* Argument names of sources, as bits of ts_token_source.arguments. */
enum {
    TS_TOKEN_ARG_QUERY = 1u << 0,
    TS_TOKEN_ARG_KEY = 1u << 1,
    TS_TOKEN_ARG_VALUE = 1u << 2,
    TS_TOKEN_ARG_SRC = 1u << 3,
    TS_TOKEN_ARG_TGT = 1u << 4,
    TS_TOKEN_ARG_MEMORY = 1u << 5,
};

#define TS_TOKEN_MAX_SOURCES 3

typedef struct ts_token_source {
    unsigned arguments; /* TS_TOKEN_ARG_* bits, listed in that order */
    int sequence_axis;
    int64_t length;
    ts_token_relation relation; /* canonical */
} ts_token_source;

typedef struct ts_token_result {
    bool complete;
    int output_axis; /* complete only */
    int64_t output_length;
    int nsources;
    ts_token_source sources[TS_TOKEN_MAX_SOURCES];
    /* unavailable: why, for the unsupported_token_dependencies diagnostic
     * (empty: no diagnostic, as for a forward that failed) */
    char message[TS_EST_MESSAGE_SIZE];
} ts_token_result;

/* Whether calls of this kind carry token dependencies:
 * MultiheadAttention and the five native Transformer kinds. */
bool ts_token_kind_supported(ts_module_kind kind);

/* Decides the relations of one call of a native attention or Transformer
 * module: `call` as the formulas get it (call->tokens may be NULL: no mask,
 * no hint) and `desc` the module. Never fails as a whole: an unsupported
 * call gives out->complete false with a message. Returns TS_OK, or
 * TS_EINVAL when an argument is NULL or the kind has no relations. */
int ts_token_dependencies(const ts_module_desc *desc,
                          const ts_module_call *call,
                          ts_token_result *out);

/* The TokenDependency object of a result: a new reference, NULL on
 * allocation failure. */
json_t *ts_token_result_json(const ts_token_result *result);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_TOKEN_DEPS_H */
