/* Profile rows: sort key, stable ties, limit, device time. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/profile.h"

static const char *
op_at(const json_t *rows, size_t i)
{
    return json_string_value(
        json_object_get(json_array_get(rows, i), "operator"));
}

int
main(void)
{
    json_t *shapes = json_pack("[[i,i],[i,i]]", 3, 4, 4, 3);
    ts_profile_row rows[] = {
        {"aten::add", 2, NULL, 0.001, true, 0.004, 16, 0},
        {"aten::mm", 1, shapes, 0.003, true, 0.002, 36, 0},
        {"aten::sin", 1, NULL, 0.001, false, 0.0, -8, 0},
        {"[memory]", 1, NULL, 0.0, true, 0.001, -36, 0},
    };
    ts_error err;
    json_t *out;
    json_t *row;
    char *text;

    /* CPU order: mm 3 ms, then add and sin tie at 1 ms (input order), then
     * [memory]; limit 3 drops the last. */
    out = ts_profile_rows(rows, 4, 3, false, &err);
    CHECK(out != NULL);
    CHECK_EQ_INT(json_array_size(out), 3);
    CHECK_EQ_STR(op_at(out, 0), "aten::mm");
    CHECK_EQ_STR(op_at(out, 1), "aten::add");
    CHECK_EQ_STR(op_at(out, 2), "aten::sin");
    row = json_array_get(out, 0);
    text = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
    CHECK_EQ_STR(text,
                 "{\"operator\":\"aten::mm\",\"calls\":1,"
                 "\"input_shapes\":[[3,4],[4,3]],"
                 "\"cpu_self_seconds\":0.0030000000000000001,"
                 "\"device_self_seconds\":null,\"cpu_net_bytes\":36}");
    free(text);
    json_decref(out);

    /* Device order: add 4 ms, mm 2 ms, [memory] 1 ms, sin (unknown: 0). */
    out = ts_profile_rows(rows, 4, 20, true, &err);
    CHECK_EQ_INT(json_array_size(out), 4);
    CHECK_EQ_STR(op_at(out, 0), "aten::add");
    CHECK_EQ_STR(op_at(out, 1), "aten::mm");
    CHECK_EQ_STR(op_at(out, 2), "[memory]");
    CHECK_EQ_STR(op_at(out, 3), "aten::sin");
    CHECK_EQ_REAL(json_real_value(json_object_get(json_array_get(out, 0),
                                                  "device_self_seconds")),
                  0.004);
    CHECK(json_is_null(
        json_object_get(json_array_get(out, 3), "device_self_seconds")));
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_array_get(out, 3), "cpu_net_bytes")),
                 -8);
    json_decref(out);

    out = ts_profile_rows(NULL, 0, 20, false, &err);
    CHECK(out != NULL && json_array_size(out) == 0);
    json_decref(out);

    rows[0].cpu_self_seconds = NAN;
    CHECK(ts_profile_rows(rows, 4, 20, false, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    json_decref(shapes);
    return ts_test_report();
}
