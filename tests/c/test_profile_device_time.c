/* Profile rows sorted by device time (rows without one count 0, ties keep
 * their order), limited, and a non-finite device time refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "torchscan/profile.h"

static void
test_device_order(void)
{
    ts_error err;
    ts_profile_row rows[4];
    json_t *out;
    memset(rows, 0, sizeof rows);
    rows[0].op = "a";
    rows[0].cpu_self_seconds = 9.0;
    rows[1].op = "b";
    rows[1].has_device_time = true;
    rows[1].device_self_seconds = 0.5;
    rows[2].op = "c";
    rows[2].has_device_time = true;
    rows[2].device_self_seconds = 2.0;
    rows[3].op = "d";
    rows[3].cpu_self_seconds = 1.0;
    /* c (2.0), b (0.5), then a and d (no device time: 0) in input order;
     * three kept */
    out = ts_profile_rows(rows, 4, 3, true, &err);
    CHECK(out != NULL && json_array_size(out) == 3);
    if (out != NULL) {
        CHECK_EQ_STR(json_string_value(
                         json_object_get(json_array_get(out, 0), "operator")),
                     "c");
        CHECK_EQ_STR(json_string_value(
                         json_object_get(json_array_get(out, 1), "operator")),
                     "b");
        CHECK_EQ_STR(json_string_value(
                         json_object_get(json_array_get(out, 2), "operator")),
                     "a");
        CHECK_EQ_REAL(json_real_value(json_object_get(json_array_get(out, 0),
                                                      "device_self_seconds")),
                      2.0);
        CHECK(json_is_null(
            json_object_get(json_array_get(out, 2), "device_self_seconds")));
    }
    json_decref(out);
    /* a device time that is not finite */
    memset(rows, 0, sizeof rows);
    rows[0].op = "a";
    rows[0].has_device_time = true;
    rows[0].device_self_seconds = NAN;
    CHECK(ts_profile_rows(rows, 1, 1, true, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message, "profile times must be finite");
    CHECK(ts_profile_rows(NULL, 2, 2, false, &err) == NULL);
    CHECK_EQ_STR(err.message, "profile rows are missing");
}

int
main(void)
{
    test_device_order();
    return ts_test_report();
}
