/* Peak of allocation events. */
#include "harness.h"
#include "torchscan/memory.h"

int
main(void)
{
    /* +100 @1, +50 @2, -100 @3, +80 @4, -50 @5, -80 @6 (blocks A, B, A,
     * C, B, C): live bytes go 100, 150, 50, 130, 80, 0 -> peak 150. Given
     * out of order. */
    ts_mem_event ev[] = {{4, 80, 0xC0, 0},
                         {1, 100, 0xA0, 0},
                         {6, -80, 0xC0, 0},
                         {2, 50, 0xB0, 0},
                         {5, -50, 0xB0, 0},
                         {3, -100, 0xA0, 0}};
    int64_t peak = -1;
    CHECK_EQ_INT(ts_memory_peak(ev, 6, &peak), TS_OK);
    CHECK_EQ_INT(peak, 150);
    CHECK_EQ_INT(ev[0].time_ns, 1);

    /* Same timestamp: the recorded order decides. A freed, then A
     * allocated again: 64 -> 0 -> 64, not 128. */
    ts_mem_event same[] = {
        {1, 64, 0xA0, 0}, {2, -64, 0xA0, 0}, {2, 64, 0xA0, 0}};
    CHECK_EQ_INT(ts_memory_peak(same, 3, &peak), TS_OK);
    CHECK_EQ_INT(peak, 64);
    /* ...and a block allocated and freed within one tick still counts */
    ts_mem_event tick[] = {{1, 64, 0xA0, 0}, {1, -64, 0xA0, 0}};
    CHECK_EQ_INT(ts_memory_peak(tick, 2, &peak), TS_OK);
    CHECK_EQ_INT(peak, 64);

    /* A release of a block allocated before the window (Z, 40 MB made
     * during an earlier profiling session) is not counted: the window's
     * own 20 MB block is its peak, not 0 (-40 + 20 < 0). */
    ts_mem_event frees[] = {{1, -40000000, 0xF0, 0}, {2, 20000000, 0xA0, 0}};
    CHECK_EQ_INT(ts_memory_peak(frees, 2, &peak), TS_OK);
    CHECK_EQ_INT(peak, 20000000);
    /* An allocation at a live block's address (its free was not recorded)
     * replaces it: 10, then 30 (not 40). */
    ts_mem_event again[] = {{1, 10, 0xA0, 0}, {2, 30, 0xA0, 0}};
    CHECK_EQ_INT(ts_memory_peak(again, 2, &peak), TS_OK);
    CHECK_EQ_INT(peak, 30);

    /* Many blocks: 1000 allocations of 8 bytes, then their frees: 8000. */
    ts_mem_event many[2000];
    for (int i = 0; i < 1000; i++) {
        many[i] = (ts_mem_event){i, 8, 0x1000 + 16 * (uint64_t)i, 0};
        many[1000 + i] =
            (ts_mem_event){2000 - i, -8, 0x1000 + 16 * (uint64_t)i, 0};
    }
    CHECK_EQ_INT(ts_memory_peak(many, 2000, &peak), TS_OK);
    CHECK_EQ_INT(peak, 8000);

    ts_mem_event big[] = {{1, INT64_MAX, 0xA0, 0}, {2, 1, 0xB0, 0}};
    CHECK_EQ_INT(ts_memory_peak(big, 2, &peak), TS_EOVERFLOW);
    CHECK_EQ_INT(ts_memory_peak(NULL, 0, &peak), TS_OK);
    CHECK_EQ_INT(peak, 0);
    return ts_test_report();
}
