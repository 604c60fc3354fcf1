/* The operator counter (counter.h): the C body of a TorchDispatchMode
 * subclass.
 *
 * Hot path per aten call: a pointer lookup of the OpOverload, the call of
 * the operator itself, a read of the shapes the formula needs, the formula,
 * and two additions. Everything that needs strings (packet names, schemas,
 * decomposability) is resolved once per overload object and kept for the
 * life of the module, so every new counter starts warm. */
#include "fail.h"
#include "counter.h"
#include "memsim.h"
#include "op_resolve.h"
#include "phase.h"

#include "torchscan/attention_match.h"

#include <math.h>
#include <stddef.h>

typedef struct tsx_counter {
    PyObject_HEAD
    tsx_state *st;
    ts_opstats *stats;
    int *ids; /* opstats id per slot index, -1 until first seen */
    size_t nids;
    PyObject *custom;    /* {packet: formula} snapshot or NULL */
    PyObject *owner;     /* what owns `session` (a Crawl; strong) or NULL */
    ts_session *session; /* the layer calls operators are attributed to */
    int paused;          /* > 0: run operators without counting them */
    /* SDPA's math path grouped into one attention (attention_match.h) */
    ts_attn_matcher match;
    int attention_id; /* opstats id of aten.scaled_dot_product_attention */
    int backward_id;  /* and of its backward's listing */
    /* > 0: inside a DTensor operator, whose local operators are counted
     * (dtensor_region) */
    int dtensor_depth;
    /* inside it, operators on fake tensors are DTensor's sharding
     * propagation (metadata), run uncounted; unless the DTensor's own local
     * tensors are fake (a fake-tensor analysis of a sharded model) */
    bool skip_fake;
    /* phases (phase.h): optimizer steps open (the global step hooks call
     * _optimizer_step_pre/_post), and of the operator being counted, its
     * phase and the layer that phase attributes it to (read_phase) */
    int optimizer_depth;
    ts_phase phase;
    int phase_layer;
    /* estimate_memory's simulation (memsim.h), NULL when not simulating:
     * composite operators then run whole (decomposing them would show
     * allocations their kernels do not make) */
    tsx_memsim *mem;
} tsx_counter;

/* This counter's statistics id of a resolved operator. */
static int
counter_id(tsx_counter *c, const op_slot *s)
{
    if ((size_t)s->index >= c->nids) {
        size_t n = c->nids ? c->nids : 64;
        while (n <= (size_t)s->index) {
            n *= 2;
        }
        int *ids = PyMem_Realloc(c->ids, n * sizeof(int));
        if (ids == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = c->nids; i < n; i++) {
            ids[i] = -1;
        }
        c->ids = ids;
        c->nids = n;
    }
    if (c->ids[s->index] < 0) {
        int id = ts_opstats_intern(c->stats, s->name);
        if (id < 0) {
            tsx_raise_status(id, NULL);
            return -1;
        }
        c->ids[s->index] = id;
    }
    return c->ids[s->index];
}

/* What the crawl's matcher keeps of an operator a matchable module call
 * ran (module_match.h): its code, its torchscan_flops_v1 count by the
 * table's own formula (a caller's custom_mapping only counts operators the
 * table has no formula for), and its first arguments and outputs. */
static int
record_op(tsx_counter *c,
          const op_slot *s,
          const ts_op_call *call,
          ts_opcall_kind kind,
          const ts_op_result *res,
          bool custom)
{
    ts_match_op op;
    int nargs =
        call->nargs < TS_MATCH_MAX_ARGS ? call->nargs : TS_MATCH_MAX_ARGS;
    int rc;
    memset(&op, 0, offsetof(ts_match_op, args));
    op.code = s->match_code;
    op.inplace = s->inplace;
    op.counted = kind == TS_OPCALL_IGNORED
                 || (kind == TS_OPCALL_COUNTED
                     && (!res->incomplete || s->entry == NULL
                         || (s->entry->flags & TS_OPF_ATTENTION) != 0));
    op.flops = kind == TS_OPCALL_COUNTED ? res->flops : 0;
    if (custom && s->entry != NULL && s->entry->formula != NULL) {
        ts_op_result own;
        ts_error err;
        memset(&own, 0, sizeof own);
        ts_error_clear(&err);
        op.counted =
            s->entry->formula(call, &own, &err) == TS_OK && !own.incomplete;
        op.flops = own.flops;
    }
    op.nargs = nargs;
    memcpy(op.args, call->args, (size_t)nargs * sizeof op.args[0]);
    for (int i = 0; i < nargs; i++) {
        if (op.args[i].kind == TS_ARG_STR) {
            /* the text is borrowed from the call: only gelu's approximate
             * is kept, as a flag */
            op.args[i].i = strcmp(op.args[i].str, "tanh") == 0;
            op.args[i].str = NULL;
        }
    }
    op.nouts = call->nouts < 2 ? call->nouts : 2;
    memcpy(op.outs, call->outs, (size_t)op.nouts * sizeof op.outs[0]);
    rc = ts_session_record_op(c->session, &op);
    if (rc != TS_OK) {
        tsx_raise_status(rc, NULL);
        return -1;
    }
    return 0;
}

/* Where this counter records: its statistics, its crawl's layers. */
static ts_attn_sink
sink_of(tsx_counter *c)
{
    ts_attn_sink sink = {
        c->stats, c->session, c->attention_id, c->backward_id};
    return sink;
}

/* Records the calls the attention matcher holds back. 0, or -1 with an
 * exception. */
static int
flush_attention(tsx_counter *c)
{
    ts_attn_sink sink = sink_of(c);
    int rc = ts_attn_flush(&c->match, &sink);
    if (rc != TS_OK) {
        tsx_raise_status(rc, NULL);
        return -1;
    }
    return 0;
}

/* A complete count of a built-in formula: through the attention matcher,
 * which may hold it back (SDPA's math path) or list a forward attention
 * kernel as the attention it computes. */
static int
record_counted(tsx_counter *c,
               const op_slot *s,
               int id,
               const ts_op_call *call,
               const ts_op_result *res)
{
    ts_attn_sink sink = sink_of(c);
    ts_counted_call cc;
    int rc;
    cc.id = id;
    cc.layer = c->session ? ts_session_current_layer(c->session) : -1;
    cc.phase = c->phase;
    cc.phase_layer = c->phase_layer;
    cc.flops = res->flops;
    cc.matrix_flops =
        (s->entry->flags & TS_OPF_MATRIX) != 0 ? res->matrix_flops : -1;
    if ((s->entry->flags & TS_OPF_SDPA_FORWARD) != 0) {
        rc = ts_attn_record_kernel(&c->match, &sink, &cc);
    }
    else if ((s->entry->flags & TS_OPF_SDPA_BACKWARD) != 0) {
        rc = ts_attn_record_backward_kernel(&c->match, &sink, &cc);
    }
    else if (s->role != TS_ATTN_ROLE_NONE || c->match.npending > 0) {
        rc = ts_attn_feed(&c->match, &sink, s->role, call, &cc);
    }
    else {
        rc = ts_attn_record(&sink, &cc);
    }
    if (rc != TS_OK) {
        tsx_raise_status(rc, NULL);
        return -1;
    }
    return 0;
}

/* The phase of the operator being counted, and the layer that phase
 * attributes it to: the innermost call, or, for a backward operator
 * outside every call, the call whose forward created the autograd node the
 * engine runs. 0, or -1 with an exception. */
static int
read_phase(tsx_counter *c)
{
    int layer = c->session ? ts_session_current_layer(c->session) : -1;
    if (tsx_phase_now(c->st, c->optimizer_depth, &c->phase) < 0) {
        return -1;
    }
    if (c->phase == TS_PHASE_BACKWARD && layer < 0 && c->session != NULL) {
        uint64_t seq;
        if (tsx_phase_node_seq(c->st, &seq) < 0) {
            return -1;
        }
        layer = ts_session_layer_of_seq(c->session, seq);
    }
    c->phase_layer = layer;
    return 0;
}

static int
count(tsx_counter *c,
      const op_slot *s,
      PyObject *custom,
      PyObject *args,
      PyObject *kwargs,
      PyObject *out)
{
    ts_opcall_kind kind;
    ts_op_result res;
    ts_op_call call;
    char message[TS_ERROR_MESSAGE_SIZE];
    ts_error err;
    bool filled = false;
    bool record = c->session != NULL && ts_session_wants_ops(c->session);
    int rc;

    memset(&res, 0, sizeof res);
    message[0] = '\0';
    if (read_phase(c) < 0) {
        return -1;
    }
    if (custom != NULL) {
        rc = tsx_run_formula(c->st,
                             custom,
                             args,
                             kwargs,
                             out,
                             &res.flops,
                             message,
                             sizeof message);
        if (rc < 0) {
            return -1;
        }
        kind = rc == 0 ? TS_OPCALL_COUNTED : TS_OPCALL_UNSUPPORTED;
    }
    else if (s->entry != NULL && s->entry->formula != NULL) {
        if (tsx_op_fill_call(c->st, s, args, kwargs, out, &call) < 0) {
            return -1;
        }
        filled = true;
        ts_error_clear(&err);
        rc = s->entry->formula(&call, &res, &err);
        if (rc == TS_OK) {
            kind = TS_OPCALL_COUNTED;
            /* A supplemental formula's own reason for a lower bound names
             * its diagnostic (native ones keep the shared wording). */
            if (res.incomplete && res.incomplete_message != NULL
                && (s->entry->flags & TS_OPF_NATIVE) == 0) {
                snprintf(
                    message, sizeof message, "%s", res.incomplete_message);
            }
        }
        else {
            kind = TS_OPCALL_UNSUPPORTED;
            snprintf(message,
                     sizeof message,
                     "%s",
                     err.message[0] ? err.message
                                    : "the formula cannot count this call");
        }
    }
    else if (s->entry != NULL && s->entry->ignore_reason != NULL) {
        kind = TS_OPCALL_IGNORED;
    }
    else {
        kind = TS_OPCALL_UNCOUNTED;
    }
    int id = counter_id(c, s);
    if (id < 0) {
        return -1;
    }
    if (kind == TS_OPCALL_COUNTED && custom == NULL && !res.incomplete
        && (s->entry->flags & TS_OPF_COLLECTIVE) == 0) {
        /* (a collective's bytes are recorded below) */
        if (record && record_op(c, s, &call, kind, &res, false) < 0) {
            return -1;
        }
        return record_counted(c, s, id, &call, &res);
    }
    /* Ignored calls (views, copies) run inside SDPA's math path too; any
     * other call ends what the matcher holds back. */
    if (kind != TS_OPCALL_IGNORED && c->match.npending > 0
        && flush_attention(c) < 0) {
        return -1;
    }
    rc = ts_opstats_record_in(c->stats,
                              c->phase,
                              id,
                              kind,
                              res.flops,
                              res.incomplete,
                              message,
                              s->entry ? s->entry->ignore_reason : NULL);
    if (rc == TS_EOVERFLOW) {
        kind = TS_OPCALL_UNSUPPORTED; /* noted, not counted */
    }
    else if (rc != TS_OK) {
        tsx_raise_status(rc, NULL);
        return -1;
    }
    if (custom == NULL && s->entry != NULL
        && (s->entry->flags & TS_OPF_COLLECTIVE) != 0) {
        /* a collective's bytes moved; unknown (-1) when it was refused */
        rc = ts_opstats_record_bytes(
            c->stats, id, kind == TS_OPCALL_COUNTED ? res.bytes_moved : -1);
        if (rc != TS_OK && rc != TS_EOVERFLOW) {
            tsx_raise_status(rc, NULL);
            return -1;
        }
    }
    if (record
        && ((!filled
             && tsx_op_fill_call(c->st, s, args, kwargs, out, &call) < 0)
            || record_op(c, s, &call, kind, &res, custom != NULL) < 0)) {
        return -1;
    }
    if (kind == TS_OPCALL_COUNTED && custom == NULL
        && (s->entry->flags & TS_OPF_MATRIX) != 0) {
        rc = ts_opstats_add_matrix(c->stats, id, res.matrix_flops);
        if (rc != TS_OK) {
            tsx_raise_status(rc, NULL);
            return -1;
        }
    }
    if (c->session != NULL && kind != TS_OPCALL_IGNORED) {
        ts_session_add_layer_op(c->session,
                                ts_session_current_layer(c->session),
                                kind == TS_OPCALL_COUNTED ? res.flops : 0,
                                kind == TS_OPCALL_COUNTED && !res.incomplete);
        ts_session_add_phase_op(c->session,
                                c->phase_layer,
                                c->phase,
                                kind == TS_OPCALL_COUNTED ? res.flops : 0,
                                kind == TS_OPCALL_COUNTED && !res.incomplete);
    }
    return 0;
}

/* Calls fn(*args, **kwargs) with this mode pushed again (inside
 * __torch_dispatch__ PyTorch has popped it). */
static PyObject *
call_in_mode(tsx_counter *c, PyObject *fn, PyObject *args, PyObject *kwargs)
{
    PyObject *self = (PyObject *)c, *r, *exit_r, *exc;
    r = PyObject_CallMethodNoArgs(self, c->st->s_enter);
    if (r == NULL) {
        return NULL;
    }
    Py_DECREF(r);
    r = PyObject_Call(fn, args, kwargs);
    exc = tsx_fetch();
    exit_r = PyObject_CallMethod(
        self, "__exit__", "OOO", Py_None, Py_None, Py_None);
    if (exit_r == NULL) {
        Py_XDECREF(r);
        Py_XDECREF(exc);
        return NULL;
    }
    Py_DECREF(exit_r);
    if (exc != NULL) {
        tsx_restore(exc);
    }
    return r;
}

/* Calls func.decompose(*args, **kwargs) with this mode pushed again. */
static PyObject *
decompose(tsx_counter *c, PyObject *func, PyObject *args, PyObject *kwargs)
{
    PyObject *meth = PyObject_GetAttr(func, c->st->s_decompose);
    PyObject *r = meth ? call_in_mode(c, meth, args, kwargs) : NULL;
    Py_XDECREF(meth);
    return r;
}

/* The truth of torch.cond's predicate when it has a concrete value (a
 * plain CPU/CUDA tensor, a bool or an int): 0 or 1; 2 when it has none (a
 * fake, meta or subclass tensor, a symbolic bool); -1 with an exception. */
static int
concrete_truth(tsx_state *st, PyObject *pred)
{
    if (PyBool_Check(pred) || PyLong_CheckExact(pred)) {
        return PyObject_IsTrue(pred);
    }
    if (!Py_IS_TYPE(pred, (PyTypeObject *)st->tensor_type)
        && !Py_IS_TYPE(pred, (PyTypeObject *)st->parameter_type)) {
        return 2;
    }
    PyObject *meta = PyObject_GetAttr(pred, st->s_is_meta);
    if (meta == NULL) {
        return -1;
    }
    int is_meta = PyObject_IsTrue(meta);
    Py_DECREF(meta);
    return is_meta != 0 ? (is_meta < 0 ? -1 : 2) : PyObject_IsTrue(pred);
}

/* A higher-order operator. torch.cond with a concrete predicate runs the
 * branch it selects with this mode pushed again, so the operators of that
 * branch are counted (what eager execution runs; FlopCounterMode counts
 * the larger branch instead). Any other one, or a cond whose predicate has
 * no value, runs below this mode as PyTorch would run it without us, and
 * is reported as uncounted: what it ran is missing from the total. */
static PyObject *
run_higher_order(tsx_counter *c, op_slot *s, PyObject *args, PyObject *kwargs)
{
    if (c->paused == 0 && strcmp(s->name, "higher_order.cond") == 0
        && PyTuple_GET_SIZE(args) == 4
        && (kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0)
        && (PyTuple_Check(PyTuple_GET_ITEM(args, 3))
            || PyList_Check(PyTuple_GET_ITEM(args, 3)))) {
        int truth = concrete_truth(c->st, PyTuple_GET_ITEM(args, 0));
        if (truth < 0) {
            return NULL;
        }
        if (truth < 2) {
            PyObject *operands = PySequence_Tuple(PyTuple_GET_ITEM(args, 3));
            PyObject *out =
                operands ? call_in_mode(
                    c, PyTuple_GET_ITEM(args, truth ? 1 : 2), operands, NULL)
                         : NULL;
            Py_XDECREF(operands);
            return out;
        }
    }
    /* With this mode popped, torch.compile would trace the operator's
     * Python implementation (HOPs compile themselves in eager mode): the
     * mode's `_call_outside_dynamo` runs it as PyTorch runs a Python
     * __torch_dispatch__, with frame evaluation off. */
    size_t first = c->session ? ts_session_layer_count(c->session) : 0;
    PyObject *out = PyObject_CallMethodObjArgs((PyObject *)c,
                                               c->st->s_call_outside_dynamo,
                                               s->func,
                                               args,
                                               kwargs ? kwargs : Py_None,
                                               NULL);
    if (out != NULL && c->paused == 0
        && count(c, s, NULL, args, kwargs, out) < 0) {
        Py_CLEAR(out);
    }
    /* Module calls made inside it ran operators we did not see: their
     * operator FLOPs are lower bounds, not zeros. */
    for (size_t i = first; c->session != NULL && c->paused == 0
                           && i < ts_session_layer_count(c->session);
         i++) {
        ts_session_add_layer_op(c->session, (int)i, 0, false);
        ts_session_add_phase_op(c->session, (int)i, c->phase, 0, false);
    }
    return out;
}


/* Whether one of the dispatch's `types` is a subclass of `cls` (NULL: no
 * such class exists in this process). Plain tensors and parameters are
 * answered without a lookup. */
static bool
types_include(tsx_state *st, PyObject *types, PyObject *cls)
{
    if (cls == NULL || types == NULL || !PyTuple_Check(types)) {
        return false;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types); i++) {
        PyObject *t = PyTuple_GET_ITEM(types, i);
        if (t != st->tensor_type && t != st->parameter_type && PyType_Check(t)
            && PyType_IsSubtype((PyTypeObject *)t, (PyTypeObject *)cls)) {
            return true;
        }
    }
    return false;
}

/* Whether some rank-local tensor of a DTensor argument is fake. */
static int
local_tensors_fake(PyObject *args, PyObject *dtensor, PyObject *fake)
{
    if (fake == NULL) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i), *local;
        int is_fake;
        if (!PyObject_TypeCheck(a, (PyTypeObject *)dtensor)) {
            continue;
        }
        local = PyObject_GetAttrString(a, "_local_tensor");
        if (local == NULL) {
            PyErr_Clear();
            return 0;
        }
        is_fake = PyObject_TypeCheck(local, (PyTypeObject *)fake);
        Py_DECREF(local);
        return is_fake;
    }
    return 0;
}

/* An operator on DTensors (tensor parallelism, FSDP2): counted on the
 * local shapes each rank runs, not on the global ones. The operator runs
 * with this mode pushed again; meeting it again there, the mode declines
 * it (NotImplemented), so DTensor's own dispatch runs it and the local
 * operators and collectives it dispatches reach this mode and are counted.
 * *handled is false when the call is none of this region's business. */
static PyObject *
dtensor_region(tsx_counter *c,
               PyObject *func,
               PyObject *types,
               PyObject *args,
               PyObject *kwargs,
               bool *handled)
{
    PyObject *dtensor, *fake, *out;
    bool skip_fake;
    *handled = false;
    if (PyTuple_GET_SIZE(types) == 0
        || (PyTuple_GET_SIZE(types) == 1
            && PyTuple_GET_ITEM(types, 0) == c->st->tensor_type)) {
        return NULL; /* the hot path: plain tensors */
    }
    dtensor = tsx_dtensor_class(c->st);
    if (!types_include(c->st, types, dtensor)) {
        if (c->dtensor_depth > 0 && c->skip_fake) {
            fake = tsx_fake_tensor_class(c->st);
            if (types_include(c->st, types, fake)) {
                *handled = true; /* sharding propagation: not work */
                return PyObject_Call(func, args, kwargs);
            }
        }
        return NULL;
    }
    *handled = true;
    if (c->dtensor_depth > 0) {
        return Py_NewRef(Py_NotImplemented); /* DTensor's dispatch runs it */
    }
    fake = tsx_fake_tensor_class(c->st);
    skip_fake = !local_tensors_fake(args, dtensor, fake);
    c->dtensor_depth++;
    c->skip_fake = skip_fake;
    out = call_in_mode(c, func, args, kwargs ? kwargs : NULL);
    c->dtensor_depth--;
    return out;
}

static PyObject *
counter_dispatch(tsx_counter *c,
                 PyObject *const *argv,
                 Py_ssize_t nargs,
                 PyObject *kwnames)
{
    PyObject *func, *types, *args = NULL, *kwargs = NULL, *out;
    PyObject *custom = NULL;
    bool handled;
    op_slot s;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs >= 3) {
        args = argv[2];
    }
    if (nargs >= 4) {
        kwargs = argv[3];
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(k, "args") == 0) {
            args = argv[nargs + i];
        }
        else if (PyUnicode_CompareWithASCIIString(k, "kwargs") == 0) {
            kwargs = argv[nargs + i];
        }
    }
    if (nargs < 2) {
        tsx_fail(PyExc_TypeError,
                 "__torch_dispatch__(func, types, args, kwargs)");
        return NULL;
    }
    func = argv[0];
    types = argv[1];
    if (args == NULL || !PyTuple_Check(args)) {
        tsx_fail(PyExc_TypeError, "dispatch args must be a tuple");
        return NULL;
    }
    if (kwargs == Py_None || (kwargs != NULL && !PyDict_Check(kwargs))) {
        kwargs = NULL;
    }
    {
        op_slot *found = tsx_op_lookup(c->st, func);
        if (found == NULL) {
            return NULL;
        }
        tsx_op_slot_copy(&s, found);
    }
    if (s.hop) {
        out = run_higher_order(c, &s, args, kwargs);
        goto done;
    }
    if (s.skip) {
        out = Py_NewRef(Py_NotImplemented);
        goto done;
    }
    if (c->paused > 0) {
        out = PyObject_Call(s.op, args, kwargs);
        goto done;
    }
    if (PyTuple_Check(types)) {
        out = dtensor_region(c, func, types, args, kwargs, &handled);
        if (handled || out != NULL || PyErr_Occurred()) {
            goto done;
        }
    }
    if (c->custom != NULL) {
        custom = PyDict_GetItemWithError(c->custom, s.packet);
        if (custom == NULL && PyErr_Occurred()) {
            out = NULL;
            goto done;
        }
        Py_XINCREF(custom);
    }
    if (custom == NULL && s.silent) {
        /* a caller's formula for the packet still counts it */
        out = PyObject_Call(s.op, args, kwargs);
        goto done;
    }
    if (custom == NULL && s.decomposable && c->mem == NULL
        && (s.entry == NULL
            || (s.entry->formula == NULL && s.entry->ignore_reason == NULL))) {
        out = decompose(c, func, args, kwargs);
        if (out == NULL || out != Py_NotImplemented) {
            goto done;
        }
        Py_DECREF(out);
    }
    out = PyObject_Call(s.op, args, kwargs);
    if (out != NULL && count(c, &s, custom, args, kwargs, out) < 0) {
        Py_CLEAR(out);
    }
    /* count() read the phase and layer of this operator */
    if (out != NULL && c->mem != NULL
        && tsx_memsim_op(
               c->mem, s.name, c->phase, c->phase_layer, args, kwargs, out)
               < 0) {
        Py_CLEAR(out);
    }
done:
    Py_XDECREF(custom);
    tsx_op_slot_clear(&s);
    return out;
}

static PyObject *
counter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    tsx_state *st = tsx_state_of_type(type, counter_new);
    tsx_counter *c;
    if (st == NULL) {
        return NULL;
    }
    c = (tsx_counter *)type->tp_alloc(type, 0);
    if (c == NULL) {
        return NULL;
    }
    c->st = st;
    ts_attn_matcher_init(&c->match);
    c->stats = ts_opstats_new();
    c->attention_id = c->stats != NULL ? ts_opstats_intern(
                          c->stats, "aten.scaled_dot_product_attention")
                                       : TS_ENOMEM;
    c->backward_id =
        c->attention_id >= 0 ? ts_opstats_intern(
            c->stats, "aten.scaled_dot_product_attention_backward")
                             : TS_ENOMEM;
    if (c->attention_id < 0 || c->backward_id < 0) {
        Py_DECREF(c);
        return tsx_raise_status(TS_ENOMEM, NULL);
    }
    return (PyObject *)c;
}

static PyObject *
counter_configure(tsx_counter *c, PyObject *custom)
{
    if (custom == Py_None) {
        Py_CLEAR(c->custom);
        Py_RETURN_NONE;
    }
    if (!PyDict_Check(custom)) {
        tsx_fail(PyExc_TypeError, "custom_mapping must be a dict");
        return NULL;
    }
    Py_XSETREF(c->custom, PyDict_Copy(custom));
    if (c->custom == NULL) {
        return NULL;
    }
    Py_RETURN_NONE;
}

int
tsx_counter_attach(tsx_state *st,
                   PyObject *counter,
                   ts_session *session,
                   PyObject *owner)
{
    tsx_counter *c = (tsx_counter *)counter;
    if (!PyObject_TypeCheck(counter, st->counter_type)) {
        tsx_fail(PyExc_TypeError, "counter must be a Counter or None");
        return -1;
    }
    /* What the matcher holds back belongs to the layers of the session it
     * ran in. Recording complete counts allocates nothing, so this fails
     * only when noting an overflowing sum runs out of memory; the counter
     * is attached (or detached) all the same. */
    int rc = flush_attention(c);
    Py_XSETREF(c->owner, session != NULL ? Py_XNewRef(owner) : NULL);
    if (c->session != NULL && c->session != session) {
        ts_session_set_clock(c->session, NULL, NULL);
    }
    c->session = session;
    if (session != NULL) {
        /* backward operators find their layer by the node's number */
        ts_session_set_clock(session, tsx_phase_clock, st);
    }
    return rc;
}

void
tsx_counter_pause(PyObject *counter, bool paused)
{
    if (counter != NULL && counter != Py_None) {
        ((tsx_counter *)counter)->paused += paused ? 1 : -1;
    }
}

json_t *
tsx_counter_flop_report(PyObject *counter, const char *torch_version)
{
    tsx_counter *c = (tsx_counter *)counter;
    json_t *report;
    if (flush_attention(c) < 0) {
        return NULL;
    }
    report =
        ts_opstats_report(c->stats, torch_version, TS_OPERATOR_METHOD, NULL);
    if (report == NULL) {
        tsx_raise_status(TS_ENOMEM, NULL);
    }
    return report;
}

/* A global optimizer step pre-hook (optimizer, args, kwargs): one more
 * step open, whose operators are the optimizer phase. */
static PyObject *
counter_step_pre(tsx_counter *c, PyObject *args)
{
    /* the simulation learns which storages are gradients and state */
    if (c->mem != NULL && PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0
        && tsx_memsim_name_optimizer(c->mem, PyTuple_GET_ITEM(args, 0)) < 0) {
        return NULL;
    }
    c->optimizer_depth++;
    Py_RETURN_NONE;
}

/* Its post-hook: that step closed. */
static PyObject *
counter_step_post(tsx_counter *c, PyObject *args)
{
    if (c->optimizer_depth > 0) {
        c->optimizer_depth--;
    }
    /* state made by this step (the first step's moments) */
    if (c->mem != NULL && PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0
        && tsx_memsim_name_optimizer(c->mem, PyTuple_GET_ITEM(args, 0)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* _simulate_memory(): starts a simulation (memsim.h) whose storages'
 * weak references call self._storage_freed. */
static PyObject *
counter_simulate(tsx_counter *c, PyObject *unused)
{
    PyObject *callback;
    tsx_memsim *m;
    if (c->mem != NULL) {
        return tsx_fail(PyExc_RuntimeError, "already simulating memory");
    }
    callback = PyObject_GetAttrString((PyObject *)c, "_storage_freed");
    if (callback == NULL) {
        return NULL;
    }
    m = tsx_memsim_new(c->st, callback);
    Py_DECREF(callback);
    if (m == NULL) {
        return NULL;
    }
    c->mem = m;
    Py_RETURN_NONE;
}

static PyObject *
counter_storage_freed(tsx_counter *c, PyObject *ref)
{
    if (c->mem != NULL && tsx_memsim_freed(c->mem, ref) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* _memory_name(obj, kind): names the parameters and gradients of a
 * module (kind 0) or of an optimizer, with its state (kind 1). */
static PyObject *
counter_memory_name(tsx_counter *c, PyObject *args)
{
    PyObject *obj;
    int kind, rc;
    if (!PyArg_ParseTuple(args, "Oi:_memory_name", &obj, &kind)) {
        return NULL;
    }
    if (c->mem == NULL) {
        return tsx_fail(PyExc_RuntimeError, "not simulating memory");
    }
    rc = kind == 0 ? tsx_memsim_name_module(c->mem, obj)
                   : tsx_memsim_name_optimizer(c->mem, obj);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* _memory_report(timeline, attention, torch_version) -> dict: the
 * MemoryReport of the simulation so far, layers named by the session the
 * counter is attached to. */
static PyObject *
counter_memory_report(tsx_counter *c, PyObject *args)
{
    json_t *r;
    PyObject *result;
    int timeline;
    const char *attention, *version;
    if (!PyArg_ParseTuple(args, "pss", &timeline, &attention, &version)) {
        return NULL;
    }
    if (c->mem == NULL) {
        return tsx_fail(PyExc_RuntimeError, "not simulating memory");
    }
    r = tsx_memsim_report(
        c->mem, c->session, timeline != 0, attention, version);
    if (r == NULL) {
        return NULL;
    }
    result = tsx_from_json(c->st, r);
    json_decref(r);
    return result;
}

/* _memory_end(): drops the simulation and its weak references. */
static PyObject *
counter_memory_end(tsx_counter *c, PyObject *unused)
{
    tsx_memsim *m = c->mem;
    c->mem = NULL;
    tsx_memsim_free(m);
    Py_RETURN_NONE;
}

static PyObject *
counter_report(tsx_counter *c, PyObject *args)
{
    const char *torch_version, *method;
    PyObject *by_module = Py_None, *by_phase = Py_None, *result;
    json_t *jbm = NULL, *jbp = NULL, *report;
    if (!PyArg_ParseTuple(args,
                          "ss|OO:_report",
                          &torch_version,
                          &method,
                          &by_module,
                          &by_phase)) {
        return NULL;
    }
    if (flush_attention(c) < 0) {
        return NULL;
    }
    if (by_module != Py_None) {
        jbm = tsx_to_json(by_module, "by_module");
        if (jbm == NULL) {
            return NULL;
        }
    }
    if (by_phase != Py_None) {
        jbp = tsx_to_json(by_phase, "by_phase");
        if (jbp == NULL) {
            json_decref(jbm);
            return NULL;
        }
    }
    report =
        ts_opstats_report_phased(c->stats, torch_version, method, jbm, jbp);
    if (report == NULL) {
        return tsx_raise_status(TS_ENOMEM, NULL);
    }
    result = tsx_from_json(c->st, report);
    json_decref(report);
    return result;
}

static int
counter_traverse(tsx_counter *c, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(c));
    Py_VISIT(c->custom);
    Py_VISIT(c->owner);
    return tsx_memsim_traverse(c->mem, visit, arg);
}

static int
counter_clear(tsx_counter *c)
{
    Py_CLEAR(c->custom);
    Py_CLEAR(c->owner);
    c->session = NULL;
    if (c->mem != NULL) {
        tsx_memsim *m = c->mem;
        c->mem = NULL;
        tsx_memsim_free(m);
    }
    return 0;
}

static void
counter_dealloc(tsx_counter *c)
{
    PyTypeObject *tp = Py_TYPE(c);
    PyObject_GC_UnTrack(c);
    counter_clear(c);
    PyMem_Free(c->ids);
    ts_opstats_free(c->stats);
    tp->tp_free(c);
    Py_DECREF(tp);
}

static PyMethodDef counter_methods[] = {
    {"__torch_dispatch__",
     (PyCFunction)(void (*)(void))counter_dispatch,
     METH_FASTCALL | METH_KEYWORDS,
     "Runs one aten operator and counts its FLOPs."},
    {"_configure",
     (PyCFunction)counter_configure,
     METH_O,
     "_configure(custom_mapping or None)"},
    {"_report",
     (PyCFunction)counter_report,
     METH_VARARGS,
     "_report(torch_version, method, by_module=None, by_phase=None) -> "
     "FlopReport"},
    {"_optimizer_step_pre",
     (PyCFunction)counter_step_pre,
     METH_VARARGS,
     "A global optimizer step pre-hook: its operators are the optimizer "
     "phase."},
    {"_optimizer_step_post",
     (PyCFunction)counter_step_post,
     METH_VARARGS,
     "A global optimizer step post-hook."},
    {"_simulate_memory",
     (PyCFunction)counter_simulate,
     METH_NOARGS,
     "_simulate_memory(): simulate tensor memory from now on."},
    {"_storage_freed",
     (PyCFunction)counter_storage_freed,
     METH_O,
     "The callback of a storage's weak reference."},
    {"_memory_name",
     (PyCFunction)counter_memory_name,
     METH_VARARGS,
     "_memory_name(module_or_optimizer, kind): names parameters, "
     "gradients, optimizer state."},
    {"_memory_report",
     (PyCFunction)counter_memory_report,
     METH_VARARGS,
     "_memory_report(timeline, attention, torch_version) -> MemoryReport"},
    {"_memory_end",
     (PyCFunction)counter_memory_end,
     METH_NOARGS,
     "_memory_end(): drop the simulation."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot counter_slots[] = {
    {Py_tp_new, counter_new},
    {Py_tp_dealloc, counter_dealloc},
    {Py_tp_traverse, counter_traverse},
    {Py_tp_clear, counter_clear},
    {Py_tp_methods, counter_methods},
    {Py_tp_doc, "C base of torchscan's operator-counting dispatch mode."},
    {0, NULL},
};

PyType_Spec tsx_counter_spec = {
    .name = "torchscan._engine.Counter",
    .basicsize = sizeof(tsx_counter),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .slots = counter_slots,
};
