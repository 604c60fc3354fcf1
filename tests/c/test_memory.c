/* Peak of allocation events. */
#include "harness.h"
#include "torchscan/memory.h"

int
main(void)
{
    /* +100 @1, +50 @2, -100 @3, +80 @4, -50 @5, -80 @6: live bytes go
     * 100, 150, 50, 130, 80, 0 -> peak 150. Given out of order. */
    ts_mem_event ev[] = {
        {4, 80}, {1, 100}, {6, -80}, {2, 50}, {5, -50}, {3, -100}};
    int64_t peak = -1;
    CHECK_EQ_INT(ts_memory_peak(ev, 6, &peak), TS_OK);
    CHECK_EQ_INT(peak, 150);
    CHECK_EQ_INT(ev[0].time_ns, 1);

    /* Same timestamp: the free is applied first (64 -> 0 -> 64, not 128). */
    ts_mem_event same[] = {{1, 64}, {2, 64}, {2, -64}};
    CHECK_EQ_INT(ts_memory_peak(same, 3, &peak), TS_OK);
    CHECK_EQ_INT(peak, 64);

    /* Frees of tensors allocated before the window never go below zero in
     * the peak: the peak starts at 0. */
    ts_mem_event frees[] = {{1, -10}, {2, 4}};
    CHECK_EQ_INT(ts_memory_peak(frees, 2, &peak), TS_OK);
    CHECK_EQ_INT(peak, 0);

    ts_mem_event big[] = {{1, INT64_MAX}, {2, 1}};
    CHECK_EQ_INT(ts_memory_peak(big, 2, &peak), TS_EOVERFLOW);
    CHECK_EQ_INT(ts_memory_peak(NULL, 0, &peak), TS_OK);
    CHECK_EQ_INT(peak, 0);
    return ts_test_report();
}
