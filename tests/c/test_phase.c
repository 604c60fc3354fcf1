/* The phases of a training step: names, the classification rule, and the
 * map from autograd sequence numbers to layer calls. */
#include "harness.h"
#include "torchscan/core.h"
#include "torchscan/phase.h"

static void
test_names_and_rule(void)
{
    CHECK_EQ_STR(ts_phase_name(TS_PHASE_FORWARD), "forward");
    CHECK_EQ_STR(ts_phase_name(TS_PHASE_BACKWARD), "backward");
    CHECK_EQ_STR(ts_phase_name(TS_PHASE_OPTIMIZER), "optimizer");
    CHECK(ts_phase_name((ts_phase)TS_PHASE_COUNT) == NULL);
    /* outside the engine and every step: forward */
    CHECK_EQ_INT(ts_phase_classify(0, -1), TS_PHASE_FORWARD);
    /* graph task 0 is a real task (the first backward of the process) */
    CHECK_EQ_INT(ts_phase_classify(0, 0), TS_PHASE_BACKWARD);
    CHECK_EQ_INT(ts_phase_classify(0, 7), TS_PHASE_BACKWARD);
    CHECK_EQ_INT(ts_phase_classify(1, -1), TS_PHASE_OPTIMIZER);
    /* a step inside the backward (optimizer in a grad hook) */
    CHECK_EQ_INT(ts_phase_classify(2, 3), TS_PHASE_OPTIMIZER);
}

static void
test_marks(void)
{
    ts_phase_marks m;
    ts_phase_marks_init(&m);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 0), -1);
    /* root call 0 begins at seq 10, child 1 at 12, ends at 15, root at 20 */
    CHECK_EQ_INT(ts_phase_marks_add(&m, 10, 0), TS_OK);
    CHECK_EQ_INT(ts_phase_marks_add(&m, 12, 1), TS_OK);
    CHECK_EQ_INT(ts_phase_marks_add(&m, 15, 0), TS_OK);
    CHECK_EQ_INT(ts_phase_marks_add(&m, 20, -1), TS_OK);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 9), -1);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 10), 0);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 11), 0);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 12), 1);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 14), 1);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 15), 0);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 19), 0);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 20), -1);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 1000), -1);
    /* an AccumulateGrad node */
    CHECK_EQ_INT(ts_phase_marks_find(&m, TS_PHASE_NO_SEQ), -1);
    /* a call that created no node: its begin and end share a number, the
     * later mark wins */
    CHECK_EQ_INT(ts_phase_marks_add(&m, 30, 2), TS_OK);
    CHECK_EQ_INT(ts_phase_marks_add(&m, 30, -1), TS_OK);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 30), -1);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 19), 0);
    /* many marks: the array grows */
    for (int i = 0; i < 1000; i++) {
        CHECK_EQ_INT(ts_phase_marks_add(&m, 100 + (uint64_t)i * 2, i), TS_OK);
    }
    CHECK_EQ_INT(ts_phase_marks_find(&m, 101), 0);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 100 + 2 * 777 + 1), 777);
    /* a mark that goes backwards: no answer rather than a wrong one */
    CHECK_EQ_INT(ts_phase_marks_add(&m, 5, 3), TS_OK);
    CHECK(m.unordered);
    CHECK_EQ_INT(ts_phase_marks_find(&m, 101), -1);
    ts_phase_marks_free(&m);
    CHECK_EQ_INT((int)m.n, 0);
    ts_phase_marks_free(&m); /* twice is fine */
}

int
main(void)
{
    test_names_and_rule();
    test_marks();
    return ts_test_report();
}
