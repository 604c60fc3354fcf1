/* opstats.c paths test_opstats.c leaves out: refused ids, phases and
 * kinds, sums past int64 (noted once per message), repeated and distinct
 * refusals, incomplete formulas with and without a reason, ignored calls
 * without one, higher-order operators, matrix and collective byte sums
 * that saturate or go partial. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/opstats.h"

static const char *
diag_message(json_t *report, const char *code, const char *op)
{
    json_t *d = json_object_get(report, "diagnostics");
    for (size_t i = 0; i < json_array_size(d); i++) {
        json_t *x = json_array_get(d, i);
        if (strcmp(json_string_value(json_object_get(x, "code")), code) == 0
            && strcmp(json_string_value(json_object_get(x, "operator")), op)
                   == 0) {
            return json_string_value(json_object_get(x, "message"));
        }
    }
    return NULL;
}

static int
count_code(json_t *report, const char *code)
{
    json_t *d = json_object_get(report, "diagnostics");
    int n = 0;
    for (size_t i = 0; i < json_array_size(d); i++) {
        n += strcmp(json_string_value(
                        json_object_get(json_array_get(d, i), "code")),
                    code)
             == 0;
    }
    return n;
}

static void
test_refusals_and_sums(void)
{
    ts_opstats *s = ts_opstats_new();
    int mm = ts_opstats_intern(s, "aten.mm");
    int add = ts_opstats_intern(s, "aten.add");
    int fft = ts_opstats_intern(s, "aten.fft_r2c");
    int cond = ts_opstats_intern(s, "higher_order.cond");
    int t = ts_opstats_intern(s, "aten.t");
    int ar = ts_opstats_intern(s, "c10d.allreduce_");

    CHECK_EQ_INT(
        ts_opstats_record(s, -1, TS_OPCALL_COUNTED, 1, false, NULL, NULL),
        TS_EINVAL);
    CHECK_EQ_INT(
        ts_opstats_record(s, 99, TS_OPCALL_COUNTED, 1, false, NULL, NULL),
        TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_record_in(s,
                                      (ts_phase)TS_PHASE_COUNT,
                                      mm,
                                      TS_OPCALL_COUNTED,
                                      1,
                                      false,
                                      NULL,
                                      NULL),
                 TS_EINVAL);
    CHECK_EQ_INT(
        ts_opstats_record(s, mm, (ts_opcall_kind)42, 1, false, NULL, NULL),
        TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_phase_total(s, (ts_phase)7), 0);

    /* INT64_MAX, then 1 more twice: both refused, one note */
    CHECK_EQ_INT(ts_opstats_record(
                     s, mm, TS_OPCALL_COUNTED, INT64_MAX, false, NULL, NULL),
                 TS_OK);
    CHECK_EQ_INT(
        ts_opstats_record(s, mm, TS_OPCALL_COUNTED, 1, false, NULL, NULL),
        TS_EOVERFLOW);
    CHECK_EQ_INT(
        ts_opstats_record(s, add, TS_OPCALL_COUNTED, 1, false, NULL, NULL),
        TS_EOVERFLOW); /* the total is full too */
    CHECK_EQ_INT(
        ts_opstats_record(s, mm, TS_OPCALL_COUNTED, 1, false, NULL, NULL),
        TS_EOVERFLOW);
    CHECK_EQ_INT(ts_opstats_total(s), INT64_MAX);
    /* refusals: the same message once, another message again */
    CHECK_EQ_INT(ts_opstats_record(
                     s, fft, TS_OPCALL_UNSUPPORTED, 0, false, "odd", NULL),
                 TS_OK);
    CHECK_EQ_INT(ts_opstats_record(
                     s, fft, TS_OPCALL_UNSUPPORTED, 0, false, "odd", NULL),
                 TS_OK);
    CHECK_EQ_INT(ts_opstats_record(
                     s, fft, TS_OPCALL_UNSUPPORTED, 0, false, "even", NULL),
                 TS_OK);
    CHECK_EQ_INT(
        ts_opstats_record(s, cond, TS_OPCALL_UNCOUNTED, 0, false, NULL, NULL),
        TS_OK);
    CHECK_EQ_INT(
        ts_opstats_record(s, t, TS_OPCALL_IGNORED, 0, false, NULL, NULL),
        TS_OK);
    /* matrix products: refused arguments, a saturating sum */
    CHECK_EQ_INT(ts_opstats_add_matrix(s, mm, -1), TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_add_matrix(s, 77, 1), TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_add_matrix(s, -1, 1), TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_add_matrix(s, mm, INT64_MAX), TS_OK);
    CHECK_EQ_INT(ts_opstats_add_matrix(s, mm, 5), TS_OK);
    /* collective bytes: unknown (-1) makes the total partial; a sum past
     * int64 is refused */
    CHECK_EQ_INT(ts_opstats_record_bytes(s, 77, 4), TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_record_bytes(s, -2, 4), TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_record_bytes(s, ar, 16), TS_OK);
    CHECK_EQ_INT(ts_opstats_record_bytes(s, ar, -1), TS_OK);
    CHECK_EQ_INT(ts_opstats_record_bytes(s, ar, INT64_MAX), TS_EOVERFLOW);

    json_t *r = ts_opstats_report(s, "2.13.0", "m", NULL);
    CHECK(r != NULL);
    CHECK_EQ_STR(diag_message(r, "unsupported_operator_formula", "aten.mm"),
                 "The operator's FLOPs no longer fit in a signed 64-bit sum; "
                 "this call is not counted.");
    /* mm's note, add's note, fft's two */
    CHECK_EQ_INT(count_code(r, "unsupported_operator_formula"), 4);
    CHECK_EQ_STR(diag_message(r, "uncounted_operator", "higher_order.cond"),
                 "higher_order.cond was observed 1 time(s): a higher-order "
                 "operator whose inner operators TorchScan cannot observe "
                 "ran uncounted.");
    CHECK_EQ_STR(
        json_string_value(json_object_get(
            json_object_get(json_object_get(r, "ignored_operators"), "aten.t"),
            "reason")),
        "");
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(r, "ignored_operators"), "aten.t"),
            "calls")),
        1);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(r, "matrix_product_flops"), "aten.mm")),
                 INT64_MAX);
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(r, "total"), "status")),
                 "partial");
    json_t *cb = json_object_get(r, "collective_bytes");
    CHECK_EQ_STR(json_string_value(json_object_get(cb, "status")), "partial");
    CHECK_EQ_INT(json_integer_value(json_object_get(cb, "known_value")), 16);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(json_object_get(r, "collectives"),
                                     "c10d.allreduce_"),
                     "calls")),
                 3);
    json_decref(r);
    ts_opstats_free(s);
}

static void
test_incomplete_notes(void)
{
    ts_opstats *s = ts_opstats_new();
    int a = ts_opstats_intern(s, "aten.a");
    int b = ts_opstats_intern(s, "aten.b");
    int c = ts_opstats_intern(s, "aten.c");
    CHECK_EQ_INT(ts_opstats_intern(s, "aten.a"), a);
    /* a: a reason, kept from the first call; b: none; c: an empty one */
    ts_opstats_record(s, a, TS_OPCALL_COUNTED, 2, true, "first", NULL);
    ts_opstats_record(s, a, TS_OPCALL_COUNTED, 3, true, "second", NULL);
    ts_opstats_record(s, b, TS_OPCALL_COUNTED, 4, true, NULL, NULL);
    ts_opstats_record(s, c, TS_OPCALL_COUNTED, 5, true, "", NULL);
    ts_opstats_record_in(
        s, TS_PHASE_BACKWARD, c, TS_OPCALL_COUNTED, 6, false, NULL, NULL);
    CHECK(ts_opstats_has_phases(s));
    CHECK_EQ_INT(ts_opstats_phase_total(s, TS_PHASE_FORWARD), 14);
    CHECK_EQ_INT(ts_opstats_phase_total(s, TS_PHASE_BACKWARD), 6);
    json_t *r = ts_opstats_report(s, "2.13.0", "m", NULL);
    CHECK_EQ_STR(diag_message(r, "incomplete_operator_formula", "aten.a"),
                 "aten.a was counted with a formula that leaves work out "
                 "(first); the count is a lower bound.");
    CHECK_EQ_STR(diag_message(r, "incomplete_operator_formula", "aten.b"),
                 "aten.b was counted with a formula that leaves work out "
                 "(complex arithmetic); the count is a lower bound.");
    CHECK_EQ_STR(diag_message(r, "incomplete_operator_formula", "aten.c"),
                 "aten.c was counted with a formula that leaves work out "
                 "(complex arithmetic); the count is a lower bound.");
    /* 2 + 3 + 4 + 5 + 6 */
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(r, "total"), "known_value")),
                 20);
    json_decref(r);
    ts_opstats_free(s);
}

int
main(void)
{
    test_refusals_and_sums();
    test_incomplete_notes();
    return ts_test_report();
}
