/* ts_mask_scan refusals test_token_deps.c leaves out: missing arguments,
 * ranks and dtypes out of range, negative sizes or strides, extents whose
 * byte offset overflows, no data, and an empty mask (read, nothing
 * excluded). */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/token_deps.h"

static ts_mask_buffer
buffer2(const void *data, int64_t rows, int64_t cols)
{
    ts_mask_buffer b;
    memset(&b, 0, sizeof b);
    b.data = data;
    b.dtype = TS_MASK_BOOL;
    b.ndim = 2;
    b.dims[0] = rows;
    b.dims[1] = cols;
    b.strides[0] = cols;
    b.strides[1] = 1;
    return b;
}

static void
test_scan_refusals(void)
{
    static const unsigned char causal[9] = {0, 1, 1, 0, 0, 1, 0, 0, 0};
    ts_mask_info info;
    ts_mask_buffer b = buffer2(causal, 3, 3);
    CHECK_EQ_INT(ts_mask_scan(NULL, &info), TS_EINVAL);
    CHECK_EQ_INT(ts_mask_scan(&b, NULL), TS_EINVAL);
    b.ndim = -1;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    b.ndim = TS_MAX_DIMS + 1;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    b = buffer2(causal, 3, 3);
    b.dtype = (ts_mask_dtype)99;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    b = buffer2(causal, 3, 3);
    b.dims[1] = -3;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    b = buffer2(causal, 3, 3);
    b.strides[0] = -3;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    /* (2^62) * 4 overflows the span of one dim */
    b = buffer2(causal, 5, 3);
    b.strides[0] = INT64_C(1) << 62;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    /* two spans of 2^62 each overflow their sum */
    b = buffer2(causal, 2, 2);
    b.strides[0] = INT64_MAX / 2 + 1;
    b.strides[1] = INT64_MAX / 2 + 1;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    /* an extent of 2^61 float64 elements is 2^64 bytes */
    b = buffer2(causal, 2, 1);
    b.dtype = TS_MASK_FLOAT64;
    b.strides[0] = INT64_C(1) << 61;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    /* elements but no data */
    b = buffer2(NULL, 3, 3);
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    /* no element: read, nothing excluded, causal by rank, even without
     * data */
    b = buffer2(NULL, 0, 3);
    memset(&info, 0xff, sizeof info);
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.read);
    CHECK(!info.excludes);
    CHECK(!info.nonfinite);
    CHECK(info.causal);
    /* the canonical causal mask */
    b = buffer2(causal, 3, 3);
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.excludes && info.causal && !info.nonfinite);
}

int
main(void)
{
    test_scan_refusals();
    return ts_test_report();
}
