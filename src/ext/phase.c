/* The phase readers (phase.h): torch._C._current_graph_task_id,
 * torch._C._current_autograd_node and torch._C._autograd._get_sequence_nr,
 * imported once into the module state. */
#include "phase.h"

/* A Python int as an unsigned 64-bit number; -1 with an exception. */
static int
as_u64(PyObject *v, uint64_t *out)
{
    unsigned long long x;
    if (v == NULL) {
        return -1;
    }
    x = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (uint64_t)x;
    return 0;
}

int
tsx_phase_now(tsx_state *st, int optimizer_depth, ts_phase *phase)
{
    PyObject *task;
    long long id;
    if (optimizer_depth > 0) {
        *phase = TS_PHASE_OPTIMIZER;
        return 0;
    }
    task = PyObject_CallNoArgs(st->graph_task_id);
    if (task == NULL) {
        return -1;
    }
    id = PyLong_AsLongLong(task);
    Py_DECREF(task);
    if (id == -1 && PyErr_Occurred()) {
        return -1;
    }
    *phase = ts_phase_classify(optimizer_depth, (int64_t)id);
    return 0;
}

int
tsx_phase_node_seq(tsx_state *st, uint64_t *seq)
{
    PyObject *node = PyObject_CallNoArgs(st->autograd_node);
    int rc;
    *seq = TS_PHASE_NO_SEQ;
    if (node == NULL) {
        return -1;
    }
    if (node == Py_None) {
        Py_DECREF(node);
        return 0;
    }
    rc = as_u64(PyObject_CallMethodNoArgs(node, st->s_sequence_nr), seq);
    Py_DECREF(node);
    return rc;
}

uint64_t
tsx_phase_clock(void *ctx)
{
    tsx_state *st = ctx;
    uint64_t seq = TS_PHASE_NO_SEQ;
    if (as_u64(PyObject_CallNoArgs(st->sequence_nr), &seq) < 0) {
        PyErr_Clear();
        return TS_PHASE_NO_SEQ;
    }
    return seq;
}
