/* op_resolve.c: which operator a dispatch-mode call is (the process-wide
 * cache of resolved OpOverloads in the module state) and what its
 * arguments and outputs are, as the plain ts_op_call the engine's formulas
 * take. The operator counter reads every aten call through these. */
#ifndef TSX_OP_RESOLVE_H
#define TSX_OP_RESOLVE_H

#include "state.h"
#include "torchscan/attention_match.h"
#include "torchscan/op_formulas.h"

/* One resolved operator overload (process-wide cache in the module
 * state). */
typedef struct op_slot {
    PyObject *func;     /* OpOverload (strong); NULL = empty slot */
    PyObject *op;       /* func._op: the builtin that runs the kernel */
    PyObject *packet;   /* func.overloadpacket (custom_mapping key) */
    PyObject *names;    /* tuple of schema argument names */
    PyObject *overload; /* overload name ("Tensor", "default") */
    char *name;         /* packet name, "aten.add" */
    const ts_op_entry *entry;
    int index;         /* dense index, stable across cache growth */
    ts_attn_role role; /* its part in SDPA's math path, if any */
    bool skip;         /* size/stride queries: NotImplemented */
    bool silent;       /* metadata queries run unrecorded */
    bool decomposable; /* has a CompositeImplicitAutograd kernel */
    bool hop;          /* a HigherOrderOperator ("higher_order.cond") */
    bool inplace;      /* an in-place packet ("aten.add_") */
    int match_code;    /* ts_match_op_code of the packet */
} op_slot;

struct tsx_op_cache {
    op_slot *slots;
    size_t cap, size;
};

/* The slot of OpOverload (or HigherOrderOperator) `func`: a pointer lookup
 * once resolved, else resolved now and cached. NULL with an exception. */
op_slot *tsx_op_lookup(tsx_state *st, PyObject *func);

/* Describes an aten call (positional `args`, `kwargs` matched by the
 * schema's argument names, the output `out`) into `call`. 0, or -1 with an
 * exception. */
int tsx_op_fill_call(tsx_state *st,
                     const op_slot *s,
                     PyObject *args,
                     PyObject *kwargs,
                     PyObject *out,
                     ts_op_call *call);

/* A copy of a cached slot with its own references (running the operator
 * can re-enter the counter and grow, so move, the cache); `name` stays
 * owned by the cache, which never frees names while the module lives.
 * tsx_op_slot_clear drops the copy's references. */
void tsx_op_slot_copy(op_slot *dst, const op_slot *src);
void tsx_op_slot_clear(op_slot *s);

/* The cache in the module state (module teardown, GC). */
void tsx_op_cache_free(tsx_state *st);
int tsx_op_cache_traverse(tsx_state *st, visitproc visit, void *arg);

#endif
