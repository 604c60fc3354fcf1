/* Built-in estimates of library blocks matched by their operators.
 *
 * A module of a model library (transformers, torchvision, timm) whose class
 * has no formula of its own is recognized by what its call computes: the
 * aten operators the call ran itself (its children's excluded), with their
 * shapes. When they are exactly the operators a native torch.nn class
 * dispatches for the same shapes (an RMSNorm, an activation, a Linear, a
 * LayerNorm, an Embedding, ...), the call takes that family's formulas; when
 * they hold a structure whose convention is written down (an attention core,
 * a rotary embedding, a Mixture-of-Experts router or expert bank, a chain of
 * elementwise operators), it takes that convention. Anything else is not
 * matched, and the module stays unsupported. Conventions:
 * docs/module-formulas.md, "Blocks matched by their operators".
 */
#ifndef TORCHSCAN_MODULE_MATCH_H
#define TORCHSCAN_MODULE_MATCH_H

#include "torchscan/module_formulas.h"
#include "torchscan/op_formulas.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operator codes the signatures name; 0 (TS_MOP_OTHER) for the others.
 * TS_MOP_CHILD is not an operator: a child module's call, which the session
 * records where it happened among its parent's operators (its output in
 * outs[0], its torch.nn family, or TS_MOD_UNKNOWN, in args[0].i). Its work
 * is its own row's; an attention core may take its softmax from it
 * (timm's WindowAttention calls an nn.Softmax child). */
enum {
    TS_MOP_OTHER = 0,
    TS_MOP_CHILD = -1
};

/* The matcher's code of an operator packet ("aten.add"; an in-place packet
 * "aten.add_" has its out-of-place packet's code), or TS_MOP_OTHER. */
int ts_match_op_code(const char *packet_name);

/* The packet name of a code ("aten.add"), NULL for TS_MOP_OTHER and codes
 * past the table: the table is sorted by name and code c is its row c - 1
 * (tests check both). */
const char *ts_match_op_name(int code);

/* Arguments kept per operator: the signatures read no argument past it. */
#define TS_MATCH_MAX_ARGS 10

/* One operator a module call ran itself, as the crawl recorded it. String
 * arguments are not kept (their .str is NULL), except the approximate= of
 * gelu, kept as .i (1 for "tanh", 0 otherwise). */
typedef struct ts_match_op {
    int code;     /* ts_match_op_code of its packet */
    int layer;    /* the session's bookkeeping: the call it ran in */
    bool inplace; /* an in-place packet ("aten.sigmoid_") */
    /* Whether torchscan_flops_v1 has a count for this call (a formula that
     * accepted it, or an exclusion such as a view or a copy): `flops` is
     * that count (0 for an excluded operator). */
    bool counted;
    int64_t flops;
    int nargs;
    ts_op_arg args[TS_MATCH_MAX_ARGS];
    int nouts;
    ts_shape outs[2];
} ts_match_op;

/* One module call to match. */
typedef struct ts_match_call {
    const ts_match_op *ops; /* the operators it ran itself, in order */
    size_t nops;
    bool leaf; /* the module has no child module */
    /* its first input and output tensors (leaves; absent: no match for the
     * signatures that need them) */
    bool has_input, has_output;
    ts_shape input, output;
} ts_match_call;

typedef struct ts_match_result {
    const char *signature; /* "rmsnorm", "attention", ... (static) */
    const char *method;    /* "torchscan_module_formula:signature_<name>" */
    ts_module_estimates estimates;
    /* No match, on a module with children whose own operators compute what
     * the module view counts (matrix products, attention kernels,
     * convolutions, norms): that work would be missing, so the module is
     * unsupported. (The glue of composites, such as residual additions, is
     * not counted in the module view.) */
    bool uncovered;
} ts_match_result;

/* Matches a call against the signatures, in order: 1 with *out filled, 0
 * when none matched (out->uncovered says whether that leaves work
 * uncounted), or TS_EINVAL for NULL arguments. */
int ts_match_call_estimates(const ts_match_call *call, ts_match_result *out);

/* The name of signature i in matching order (static), NULL past the
 * last. */
const char *ts_match_signature_name(size_t i);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_MODULE_MATCH_H */
