/* Peak of allocation events. */
#include <stdbool.h>

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

    /* 64 addresses 1 MiB apart (one hash bucket for a low-bit hash),
     * allocated and freed in a pseudo-random interleaving, with frees of
     * unknown blocks mixed in: the table must agree with a direct count. */
    {
        enum {
            ADDRS = 64,
            EVENTS = 4000
        };
        static ts_mem_event mixed[EVENTS];
        int64_t size_of[ADDRS] = {0};
        bool alive[ADDRS] = {false};
        int64_t expect_live = 0, expect_peak = 0;
        uint64_t state = 12345;
        for (int i = 0; i < EVENTS; i++) {
            state = state * 6364136223846793005u + 1442695040888963407u;
            int a = (int)((state >> 33) % ADDRS);
            uint64_t ptr = 0x7f0000000000u + ((uint64_t)a << 20);
            if (alive[a]) {
                mixed[i] = (ts_mem_event){i, -size_of[a], ptr, 0};
                alive[a] = false;
                expect_live -= size_of[a];
            }
            else if ((state >> 20) % 7 == 0) {
                /* a free of a block from before the window */
                mixed[i] = (ts_mem_event){i, -999, ptr + 8, 0};
            }
            else {
                size_of[a] = 1 + (int64_t)((state >> 40) % 1000);
                mixed[i] = (ts_mem_event){i, size_of[a], ptr, 0};
                alive[a] = true;
                expect_live += size_of[a];
            }
            if (expect_live > expect_peak) {
                expect_peak = expect_live;
            }
        }
        CHECK_EQ_INT(ts_memory_peak(mixed, EVENTS, &peak), TS_OK);
        CHECK_EQ_INT(peak, expect_peak);
    }

    /* One address reused 200,000 times: 64 bytes at most. */
    {
        enum {
            PAIRS = 200000
        };
        static ts_mem_event reuse[2 * PAIRS];
        for (int i = 0; i < PAIRS; i++) {
            reuse[2 * i] = (ts_mem_event){2 * i, 64, 0xA0, 0};
            reuse[2 * i + 1] = (ts_mem_event){2 * i + 1, -64, 0xA0, 0};
        }
        CHECK_EQ_INT(ts_memory_peak(reuse, 2 * PAIRS, &peak), TS_OK);
        CHECK_EQ_INT(peak, 64);
    }

    ts_mem_event big[] = {{1, INT64_MAX, 0xA0, 0}, {2, 1, 0xB0, 0}};
    CHECK_EQ_INT(ts_memory_peak(big, 2, &peak), TS_EOVERFLOW);
    CHECK_EQ_INT(ts_memory_peak(NULL, 0, &peak), TS_OK);
    CHECK_EQ_INT(peak, 0);
    return ts_test_report();
}
