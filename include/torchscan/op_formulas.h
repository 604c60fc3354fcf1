/* Operator formulas: FLOPs of one aten operator call, keyed by operator
 * packet name ("aten.mm"). In-place and out= overloads share their packet's
 * entry. The table is sorted static data (op_table.c).
 *
 * Counting convention: torchscan_flops_v1 (contract 2.2); matmul and
 * convolution formulas equal PyTorch's FlopCounterMode, and so do the
 * matrix products of fused attention (ts_op_result.matrix_flops), to which
 * the attention convention adds scaling, softmax, masking and dropout.
 */
#ifndef TORCHSCAN_OP_FORMULAS_H
#define TORCHSCAN_OP_FORMULAS_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TS_ARG_ABSENT = 0, /* not passed (schema default applies) */
    TS_ARG_NONE,
    TS_ARG_TENSOR,
    TS_ARG_INT,
    TS_ARG_REAL,
    TS_ARG_BOOL,
    TS_ARG_INTS,    /* list/tuple of ints (sizes, dims, strides) */
    TS_ARG_TENSORS, /* list/tuple of tensors (or None entries) */
    TS_ARG_STR,
    TS_ARG_COMPLEX,
    TS_ARG_OTHER
} ts_arg_kind;

#define TS_OP_MAX_ARGS 24
#define TS_OP_MAX_OUTS 4

typedef struct ts_op_arg {
    ts_arg_kind kind;
    ts_shape tensor; /* TENSOR; TENSORS: the first tensor */
    int64_t i;       /* INT, BOOL (0/1) */
    double r;        /* REAL */
    int nints;       /* INTS */
    int64_t ints[TS_MAX_DIMS];
    int ntensors;      /* TENSORS: number of tensors */
    int64_t numel_sum; /* TENSORS: total elements */
    const char *str;   /* STR (borrowed, valid during the call) */
} ts_op_arg;

/* One operator call, arguments in schema order (keyword-only arguments are
 * placed at their schema position; absent ones are TS_ARG_ABSENT). */
typedef struct ts_op_call {
    int nargs;
    ts_op_arg args[TS_OP_MAX_ARGS];
    int nouts;
    ts_shape outs[TS_OP_MAX_OUTS];
    /* The OpOverload's overload name ("default", "out", "unary_out", ...),
     * borrowed; NULL when unknown. Only used where argument kinds alone
     * cannot tell overloads apart (aten.max.unary_out vs aten.max.other). */
    const char *overload;
} ts_op_call;

typedef struct ts_op_result {
    int64_t flops;
    /* The part of the call's work that is matrix products, counted as
     * FlopCounterMode counts them (2 per multiply-add): `flops` itself for
     * its matrix, convolution and attention packets (TS_OPF_MATRIX), the
     * products alone for formulas that add more work to them (fused
     * attention, the fused transformer kernels), 0 for every other formula.
     * FlopReport.matrix_product_flops sums it per packet, so that parity
     * with FlopCounterMode stays checkable. */
    int64_t matrix_flops;
    /* counted, but the count leaves work out (complex arithmetic):
     * diagnostic incomplete_operator_formula */
    bool incomplete;
    /* When incomplete: the diagnostic's message (static string). NULL
     * otherwise. */
    const char *incomplete_message;
    /* A collective (TS_OPF_COLLECTIVE): the bytes it moved by the
     * torchscan_collective_bytes_v1 convention; 0 for other operators. */
    int64_t bytes_moved;
} ts_op_result;

/* Returns TS_OK with *out filled; TS_EUNSUPPORTED with err's message when
 * the call has no convention (diagnostic unsupported_operator_formula); or
 * TS_EOVERFLOW. */
typedef int (*ts_op_formula)(const ts_op_call *call,
                             ts_op_result *out,
                             ts_error *err);

enum {
    TS_OPF_NATIVE = 1u << 0, /* FlopCounterMode has this formula */
    /* Fused attention counted by the attention convention: the matrix
     * products (FlopCounterMode's count) plus scaling, softmax, masking and
     * dropout (docs/operator-flops.md, "Attention"). */
    TS_OPF_ATTENTION = 1u << 1,
    /* A convention TorchScan adds to torchscan_flops_v1 for an operator
     * that contract 2.2 (or its ignore list) does not name: gradients,
     * losses, optimizers, lookups. Documented per entry (notes). */
    TS_OPF_EXTENSION = 1u << 2,
    /* The call's matrix products are listed in matrix_product_flops (set on
     * every packet whose formula counts matrix products). */
    TS_OPF_MATRIX = 1u << 3,
    /* A forward scaled-dot-product attention kernel: by_operator lists it as
     * the attention call it computes, aten.scaled_dot_product_attention
     * (matrix_product_flops keeps the kernel's own name). */
    TS_OPF_SDPA_FORWARD = 1u << 4,
    /* A collective of torch.distributed (c10d, _c10d_functional): 0 FLOPs
     * (the reduction arithmetic runs inside the communication backend), and
     * its bytes moved in ts_op_result.bytes_moved by the convention
     * torchscan_collective_bytes_v1 (TS_COLLECTIVE_CONVENTION). */
    TS_OPF_COLLECTIVE = 1u << 5,
    /* A backward scaled-dot-product attention kernel: by_operator lists it
     * as aten.scaled_dot_product_attention_backward, the name the math
     * path's gradients are grouped under too (matrix_product_flops keeps
     * the kernel's own name). */
    TS_OPF_SDPA_BACKWARD = 1u << 6,
};

/* The name of the bytes-moved convention of collectives. */
#define TS_COLLECTIVE_CONVENTION "torchscan_collective_bytes_v1"

typedef struct ts_op_entry {
    const char *name;          /* packet name, e.g. "aten.addmm" */
    ts_op_formula formula;     /* NULL when ignored */
    const char *ignore_reason; /* non-NULL for excluded operators */
    unsigned flags;
    const char *formula_text; /* for the docs, e.g. "2*m*n*k"; NULL when
                                 ignored */
    /* For the docs: how the formula was derived, guards, shared variants;
     * NULL when the formula text says it all. */
    const char *notes;
} ts_op_entry;

/* Looks a packet name up (binary search). NULL when unknown. */
const ts_op_entry *ts_op_lookup(const char *packet_name);

/* The whole table, sorted by name; returns its length. */
size_t ts_op_table(const ts_op_entry **entries);

/* docs/operator-flops.md as generated from the table: a new NUL-terminated
 * string owned by the caller (free()), or NULL when out of memory. */
char *ts_op_docs_markdown(void);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_OP_FORMULAS_H */
