/* phase.c: what PyTorch says about the operator that is running now, read
 * for the phases of a training step (the rule is the core's phase.h): the
 * autograd engine's current graph task and node, and its sequence-number
 * clock. Any dispatch mode of the binding calls these (the operator
 * counter does, per operator); the open optimizer steps are counted by the
 * mode itself, between global optimizer step hooks that
 * python/torchscan/_phases.py registers around the workload. */
#ifndef TSX_PHASE_H
#define TSX_PHASE_H

#include "state.h"
#include "torchscan/phase.h"

/* The phase of the operator running now in this thread, with
 * `optimizer_depth` optimizer steps open (ts_phase_classify). 0, or -1
 * with an exception. */
int tsx_phase_now(tsx_state *st, int optimizer_depth, ts_phase *phase);

/* The autograd sequence number of the node the engine is running in this
 * thread: TS_PHASE_NO_SEQ when none (a hook run after the graph, the
 * engine's final callbacks) or an AccumulateGrad node. 0, or -1 with an
 * exception. */
int tsx_phase_node_seq(tsx_state *st, uint64_t *seq);

/* The engine's next sequence number in this thread: the clock of
 * ts_session_set_clock (`st` is the tsx_state). It cannot report an error:
 * one is cleared and TS_PHASE_NO_SEQ returned, which leaves the session's
 * map without answers rather than wrong ones. */
uint64_t tsx_phase_clock(void *st);

#endif
