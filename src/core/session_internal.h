/* Private to the crawl session's two files: session.c records modules and
 * calls into these structs (plain data, no JSON per hook call) and
 * session_report.c writes the AnalysisReport from them.
 */
#ifndef TORCHSCAN_SESSION_INTERNAL_H
#define TORCHSCAN_SESSION_INTERNAL_H

#include "torchscan/module_match.h"
#include "torchscan/phase.h"
#include "torchscan/saved_bytes.h"
#include "torchscan/session.h"

/* The method of the built-in module formulas. */
#define MODULE_METHOD "torchscan_module_formula"

typedef struct module_record {
    char *path;
    char *type_name;
    const char *name; /* the row name: last path part; root: type, lowered */
    ts_module_desc desc;
    bool metric_leaf;
    bool handler; /* a custom handler estimates this module */
    /* a library class without a formula: its calls record their operators
     * and are matched against the signatures (module_match.h) */
    bool matchable;
    int32_t calls;
} module_record;

/* The six module estimates, in report order. */
enum {
    N_ESTIMATES = 6,
    N_SUMMED = 3, /* the first three have model totals */
    /* token dependencies come with the receptive field: the call that
     * answers it (or owns it for a subtree) answers for them */
    RF_BIT = 1u << 3
};
static const char *const estimate_names[N_ESTIMATES] = {"module_flops",
                                                        "macs",
                                                        "dmas",
                                                        "receptive_field",
                                                        "effective_stride",
                                                        "effective_padding"};

/* One estimate of one call, kept as plain data until the report is
 * written (no JSON per hook call). Methods are static strings. */
typedef struct metric_slot {
    ts_status status;
    ts_number value;
    const char *method; /* static, or `owned` */
    char *owned;        /* a handler's method string (malloc'd) */
    bool subtree;       /* scope "subtree" (else "module_call") */
} metric_slot;

typedef struct layer_record {
    int module;
    int32_t call_index;
    json_t *input;
    json_t *output; /* NULL while pending */
    ts_attribution attribution;
    int64_t op_flops;
    size_t ops_start; /* session->ops recorded before this call began */
    uint8_t present;  /* estimates with a slot (bit i: estimate_names[i]) */
    uint8_t handled;  /* estimates a handler supplied (metric_ownership) */
    uint8_t owns;     /* estimates this call owns for its whole subtree */
    uint8_t covered;  /* estimates an enclosing call owns */
    bool failed;
    bool op_incomplete;
    int owner[N_ESTIMATES]; /* covering layer per covered estimate */
    metric_slot estimates[N_ESTIMATES];
    /* native attention and Transformer rows: the TokenDependency and its
     * unsupported_token_dependencies diagnostic (strong references; NULL
     * when none) */
    json_t *tokens;
    json_t *token_diagnostic;
    /* operator FLOPs per phase (ts_session_add_phase_op) */
    int64_t phase_flops[TS_PHASE_COUNT];
    bool phase_incomplete[TS_PHASE_COUNT];
} layer_record;

/* Module paths and type names (session.c: session_text). */
struct text_chunk;

struct ts_session {
    bool full;
    struct text_chunk *texts;
    module_record *modules;
    size_t nmodules, modules_cap;
    layer_record *layers;
    size_t nlayers, layers_cap;
    int *stack;
    size_t depth, stack_cap;
    /* operators of the open matchable calls, innermost last (a call's own
     * operators follow its ops_start once its children ended) */
    ts_match_op *ops;
    size_t nops, ops_cap;
    json_t *diagnostics;
    /* the autograd sequence number of each change of the innermost call
     * (ts_session_set_clock), which joins backward operators to layers */
    uint64_t (*clock)(void *ctx);
    void *clock_ctx;
    ts_phase_marks marks;
    /* bytes saved for backward per layer call (saved_bytes.h): NULL unless
     * ts_session_enable_saved asked for them */
    ts_saved *saved;
};

#endif /* TORCHSCAN_SESSION_INTERNAL_H */
