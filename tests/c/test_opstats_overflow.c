/* Operator statistics at their edges: a total that overflows while each
 * operator's sum fits, a refusal message repeated (noted once), incomplete
 * calls with and without a reason, invalid ids, phases and kinds, a
 * collective byte total that overflows, an ignored call without a reason
 * and the optimizer phase alone. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "torchscan/opstats.h"

static const json_t *
diagnostic(const json_t *r, size_t k)
{
    return json_array_get(json_object_get(r, "diagnostics"), k);
}

static void
test_sums_and_notes(void)
{
    ts_opstats *ops = ts_opstats_new();
    int a = ts_opstats_intern(ops, "aten.a");
    int b = ts_opstats_intern(ops, "aten.b");
    int c = ts_opstats_intern(ops, "aten.c");
    int v = ts_opstats_intern(ops, "aten.view");
    json_t *r;
    /* a holds INT64_MAX - 5; b's 10 fits b but not the total */
    CHECK_EQ_INT(
        ts_opstats_record(
            ops, a, TS_OPCALL_COUNTED, INT64_MAX - 5, false, NULL, NULL),
        TS_OK);
    CHECK_EQ_INT(
        ts_opstats_record(ops, b, TS_OPCALL_COUNTED, 10, false, NULL, NULL),
        TS_EOVERFLOW);
    CHECK_EQ_INT(ts_opstats_total(ops), INT64_MAX - 5);
    /* the same refusal twice for c: one note */
    CHECK_EQ_INT(
        ts_opstats_record(
            ops, c, TS_OPCALL_UNSUPPORTED, 0, false, "no sparse", NULL),
        TS_OK);
    CHECK_EQ_INT(
        ts_opstats_record(
            ops, c, TS_OPCALL_UNSUPPORTED, 0, false, "no sparse", NULL),
        TS_OK);
    /* a incomplete without a message, then with one: the first reason
     * given is kept */
    CHECK_EQ_INT(
        ts_opstats_record(ops, a, TS_OPCALL_COUNTED, 0, true, NULL, NULL),
        TS_OK);
    CHECK_EQ_INT(
        ts_opstats_record(ops, a, TS_OPCALL_COUNTED, 0, true, "", NULL),
        TS_OK);
    CHECK_EQ_INT(ts_opstats_record(
                     ops, a, TS_OPCALL_COUNTED, 0, true, "reason one", NULL),
                 TS_OK);
    CHECK_EQ_INT(ts_opstats_record(
                     ops, a, TS_OPCALL_COUNTED, 0, true, "reason two", NULL),
                 TS_OK);
    /* ignored without a reason */
    CHECK_EQ_INT(
        ts_opstats_record(ops, v, TS_OPCALL_IGNORED, 0, false, NULL, NULL),
        TS_OK);
    /* invalid id, phase and kind */
    CHECK_EQ_INT(
        ts_opstats_record(ops, 99, TS_OPCALL_COUNTED, 1, false, NULL, NULL),
        TS_EINVAL);
    CHECK_EQ_INT(
        ts_opstats_record_in(
            ops, (ts_phase)7, a, TS_OPCALL_COUNTED, 1, false, NULL, NULL),
        TS_EINVAL);
    CHECK_EQ_INT(
        ts_opstats_record(ops, a, (ts_opcall_kind)99, 1, false, NULL, NULL),
        TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_record_bytes(ops, -1, 8), TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_add_matrix(ops, 42, 8), TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_phase_total(ops, (ts_phase)9), 0);
    CHECK(!ts_opstats_has_phases(ops));
    r = ts_opstats_report(ops, "2.13.0", "m", NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        const json_t *total = json_object_get(r, "total");
        const json_t *ignored = json_object_get(
            json_object_get(r, "ignored_operators"), "aten.view");
        size_t n = json_array_size(json_object_get(r, "diagnostics"));
        size_t refused = 0, incomplete = 0;
        const char *incomplete_message = NULL;
        CHECK_EQ_STR(json_string_value(json_object_get(total, "status")),
                     "partial");
        CHECK_EQ_INT(json_integer_value(json_object_get(total, "known_value")),
                     INT64_MAX - 5);
        CHECK_EQ_STR(json_string_value(json_object_get(ignored, "reason")),
                     "");
        for (size_t k = 0; k < n; k++) {
            const char *code =
                json_string_value(json_object_get(diagnostic(r, k), "code"));
            const char *op = json_string_value(
                json_object_get(diagnostic(r, k), "operator"));
            if (strcmp(code, "unsupported_operator_formula") == 0) {
                refused++;
            }
            if (strcmp(code, "incomplete_operator_formula") == 0
                && strcmp(op, "aten.a") == 0) {
                incomplete++;
                incomplete_message = json_string_value(
                    json_object_get(diagnostic(r, k), "message"));
            }
        }
        /* b's overflow and c's refusal, once each */
        CHECK_EQ_INT(refused, 2);
        CHECK_EQ_INT(incomplete, 1);
        CHECK(incomplete_message != NULL
              && strstr(incomplete_message, "(reason one)") != NULL);
    }
    json_decref(r);
    ts_opstats_free(ops);
}

static void
test_collectives_and_phases(void)
{
    ts_opstats *ops = ts_opstats_new();
    int ar = ts_opstats_intern(ops, "c10d.allreduce_");
    int ag = ts_opstats_intern(ops, "c10d.allgather_");
    int mm = ts_opstats_intern(ops, "aten.mm");
    json_t *r;
    /* the per-operator sums fit, the total does not */
    CHECK_EQ_INT(ts_opstats_record_bytes(ops, ar, INT64_MAX - 1), TS_OK);
    CHECK_EQ_INT(ts_opstats_record_bytes(ops, ag, 4), TS_EOVERFLOW);
    /* only the optimizer phase besides the forward */
    CHECK_EQ_INT(ts_opstats_record_in(ops,
                                      TS_PHASE_OPTIMIZER,
                                      mm,
                                      TS_OPCALL_COUNTED,
                                      12,
                                      false,
                                      NULL,
                                      NULL),
                 TS_OK);
    CHECK(ts_opstats_has_phases(ops));
    CHECK_EQ_INT(ts_opstats_phase_total(ops, TS_PHASE_OPTIMIZER), 12);
    CHECK_EQ_INT(ts_opstats_phase_total(ops, TS_PHASE_BACKWARD), 0);
    r = ts_opstats_report_phased(ops, "2.13.0", "m", NULL, NULL);
    CHECK(r != NULL);
    if (r != NULL) {
        const json_t *bytes = json_object_get(r, "collective_bytes");
        const json_t *phases = json_object_get(r, "phases");
        CHECK_EQ_STR(json_string_value(json_object_get(bytes, "status")),
                     "partial");
        CHECK_EQ_INT(json_integer_value(json_object_get(bytes, "known_value")),
                     INT64_MAX - 1);
        CHECK_EQ_INT(json_integer_value(json_object_get(
                         json_object_get(json_object_get(r, "collectives"),
                                         "c10d.allgather_"),
                         "calls")),
                     1);
        CHECK_EQ_INT(json_integer_value(json_object_get(
                         json_object_get(json_object_get(phases, "optimizer"),
                                         "by_operator"),
                         "aten.mm")),
                     12);
        CHECK_EQ_INT(json_object_size(json_object_get(
                         json_object_get(phases, "backward"), "by_operator")),
                     0);
    }
    json_decref(r);
    ts_opstats_free(ops);
}

int
main(void)
{
    test_sums_and_notes();
    test_collectives_and_phases();
    return ts_test_report();
}
