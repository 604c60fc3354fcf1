/* The phases of a training step: forward, backward and optimizer, told
 * apart by what PyTorch says about the operator that is running, never by
 * guessing from operator names.
 *
 *   optimizer  the operator runs inside torch.optim.Optimizer.step: between
 *              a global optimizer step pre-hook and its post-hook
 *              (torch.optim.optimizer.register_optimizer_step_pre_hook /
 *              register_optimizer_step_post_hook), nested steps counted;
 *   backward   otherwise, the autograd engine runs it: the current graph
 *              task (torch._C._current_graph_task_id() >= 0), which covers
 *              every node's apply (AccumulateGrad included), tensor and
 *              module backward hooks, and the engine's final callbacks;
 *   forward    everything else the workload runs: the model's forward, the
 *              loss, zero_grad, data preparation.
 *
 * An optimizer step run inside the backward (a post-accumulate-grad hook
 * that steps) is optimizer work: the step is the more specific fact.
 *
 * The binding reads the two facts per operator (src/ext/phase.c); this
 * file holds the rule and a map from autograd sequence numbers to the
 * layer calls that created the nodes, which joins backward operators to the
 * layer call whose forward they differentiate.
 */
#ifndef TORCHSCAN_PHASE_H
#define TORCHSCAN_PHASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TS_PHASE_FORWARD = 0,
    TS_PHASE_BACKWARD = 1,
    TS_PHASE_OPTIMIZER = 2,
} ts_phase;

#define TS_PHASE_COUNT 3

/* "forward", "backward", "optimizer"; NULL for any other value. */
const char *ts_phase_name(ts_phase phase);

/* The phase of an operator: `optimizer_depth` optimizer steps are open
 * (pre-hook seen, post-hook not yet), `graph_task_id` is the autograd
 * engine's current graph task (negative outside the engine). */
ts_phase ts_phase_classify(int optimizer_depth, int64_t graph_task_id);

/* The autograd sequence number of a node that no layer call created:
 * AccumulateGrad nodes carry UINT64_MAX (they run as soon as they are
 * ready), and anything past the last mark. */
#define TS_PHASE_NO_SEQ UINT64_MAX

/* A step function from autograd sequence numbers (a thread-local counter
 * that autograd increments for each node it creates) to layer indices:
 * mark (seq, layer) whenever the innermost layer call changes (a call
 * begins, a call ends); a node of sequence number s was created inside the
 * layer of the last mark at or before s. Caller-owned, zeroed by
 * ts_phase_marks_init, freed by ts_phase_marks_free. */
typedef struct ts_phase_marks {
    uint64_t *seq;
    int *layer;
    size_t n, cap;
    /* a mark went backwards (layer calls in several threads): lookups
     * answer -1 from then on */
    bool unordered;
} ts_phase_marks;

void ts_phase_marks_init(ts_phase_marks *m);
void ts_phase_marks_free(ts_phase_marks *m);

/* Marks that from sequence number `seq` on, nodes belong to `layer` (-1:
 * none). A later mark at the same number replaces the earlier one. TS_OK
 * or TS_ENOMEM. */
int ts_phase_marks_add(ts_phase_marks *m, uint64_t seq, int layer);

/* The layer whose call created the node of sequence number `seq`, or -1
 * (none: created outside every layer call, an AccumulateGrad node,
 * TS_PHASE_NO_SEQ, or unordered marks). */
int ts_phase_marks_find(const ts_phase_marks *m, uint64_t seq);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_PHASE_H */
