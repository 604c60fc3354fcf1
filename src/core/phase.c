/* The phases of a training step (phase.h): the classification rule and the
 * map from autograd sequence numbers to layer calls. */
#include <stdlib.h>

#include "torchscan/core.h"
#include "torchscan/phase.h"

const char *
ts_phase_name(ts_phase phase)
{
    switch (phase) {
        case TS_PHASE_FORWARD:
            return "forward";
        case TS_PHASE_BACKWARD:
            return "backward";
        case TS_PHASE_OPTIMIZER:
            return "optimizer";
        default:
            return NULL;
    }
}

ts_phase
ts_phase_classify(int optimizer_depth, int64_t graph_task_id)
{
    if (optimizer_depth > 0) {
        return TS_PHASE_OPTIMIZER;
    }
    return graph_task_id >= 0 ? TS_PHASE_BACKWARD : TS_PHASE_FORWARD;
}

void
ts_phase_marks_init(ts_phase_marks *m)
{
    m->seq = NULL;
    m->layer = NULL;
    m->n = m->cap = 0;
    m->unordered = false;
}

void
ts_phase_marks_free(ts_phase_marks *m)
{
    free(m->seq);
    free(m->layer);
    ts_phase_marks_init(m);
}

int
ts_phase_marks_add(ts_phase_marks *m, uint64_t seq, int layer)
{
    if (m->n > 0 && seq <= m->seq[m->n - 1]) {
        if (seq < m->seq[m->n - 1]) {
            m->unordered = true;
        }
        m->layer[m->n - 1] = layer; /* the later mark wins */
        return TS_OK;
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        uint64_t *seqs = realloc(m->seq, cap * sizeof *seqs);
        int *layers;
        if (seqs == NULL) {
            return TS_ENOMEM;
        }
        m->seq = seqs;
        layers = realloc(m->layer, cap * sizeof *layers);
        if (layers == NULL) {
            return TS_ENOMEM;
        }
        m->layer = layers;
        m->cap = cap;
    }
    m->seq[m->n] = seq;
    m->layer[m->n] = layer;
    m->n++;
    return TS_OK;
}

int
ts_phase_marks_find(const ts_phase_marks *m, uint64_t seq)
{
    size_t lo = 0, hi = m->n;
    if (m->unordered || seq == TS_PHASE_NO_SEQ || m->n == 0
        || seq < m->seq[0]) {
        return -1;
    }
    /* the last mark at or before seq */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->seq[mid] <= seq) {
            lo = mid;
        }
        else {
            hi = mid;
        }
    }
    return m->layer[lo];
}
