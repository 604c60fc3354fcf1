/* Operator statistics: interning, the four kinds of calls and the
 * FlopReport with its diagnostics. */
#include "harness.h"
#include "torchscan/opstats.h"

static void
test_opstats(void)
{
    ts_opstats *ops = ts_opstats_new();
    int sin_id = ts_opstats_intern(ops, "aten.sin");
    int mm = ts_opstats_intern(ops, "aten.mm");
    int view = ts_opstats_intern(ops, "aten.view");
    CHECK_EQ_INT(ts_opstats_intern(ops, "aten.sin"), sin_id);
    ts_opstats_record(ops, mm, TS_OPCALL_COUNTED, 48, false, NULL, NULL);
    ts_opstats_record(ops, mm, TS_OPCALL_COUNTED, 48, false, NULL, NULL);
    ts_opstats_record(ops, sin_id, TS_OPCALL_UNCOUNTED, 0, false, NULL, NULL);
    ts_opstats_record(ops,
                      view,
                      TS_OPCALL_IGNORED,
                      0,
                      false,
                      NULL,
                      "Metadata-only tensor view.");
    CHECK_EQ_INT(ts_opstats_total(ops), 96);
    json_t *r = ts_opstats_report(ops, "2.13.0", "m", NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(r, "by_operator"), "aten.mm")),
                 96);
    CHECK(json_object_get(json_object_get(r, "by_operator"), "aten.sin")
          == NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(json_object_get(r, "ignored_operators"),
                                     "aten.view"),
                     "calls")),
                 1);
    json_t *d = json_array_get(json_object_get(r, "diagnostics"), 0);
    CHECK_EQ_STR(json_string_value(json_object_get(d, "code")),
                 "uncounted_operator");
    CHECK_EQ_STR(json_string_value(json_object_get(d, "operator")),
                 "aten.sin");
    CHECK_EQ_STR(json_string_value(json_object_get(d, "message")),
                 "aten.sin was observed 1 time(s), but no FLOP formula is "
                 "registered.");
    json_t *total = json_object_get(r, "total");
    CHECK_EQ_STR(json_string_value(json_object_get(total, "status")),
                 "partial");
    CHECK_EQ_INT(json_integer_value(json_object_get(total, "known_value")),
                 96);
    json_decref(r);

    /* repeated refusals of one operator give one diagnostic */
    int pw = ts_opstats_intern(ops, "aten.pow");
    ts_opstats_record(ops, pw, TS_OPCALL_UNSUPPORTED, 0, false, "exp 3", NULL);
    ts_opstats_record(ops, pw, TS_OPCALL_UNSUPPORTED, 0, false, "exp 3", NULL);
    r = ts_opstats_report(ops, "2.13.0", "m", NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(r, "diagnostics")), 2);
    json_decref(r);
    ts_opstats_free(ops);

    /* a call whose flops would overflow a sum is noted, not counted */
    ops = ts_opstats_new();
    int big = ts_opstats_intern(ops, "aten.mm");
    CHECK_EQ_INT(
        ts_opstats_record(
            ops, big, TS_OPCALL_COUNTED, INT64_MAX - 5, false, NULL, NULL),
        TS_OK);
    CHECK_EQ_INT(
        ts_opstats_record(ops, big, TS_OPCALL_COUNTED, 6, false, NULL, NULL),
        TS_EOVERFLOW);
    CHECK_EQ_INT(ts_opstats_total(ops), INT64_MAX - 5);
    r = ts_opstats_report(ops, "2.13.0", "m", NULL);
    total = json_object_get(r, "total");
    CHECK_EQ_STR(json_string_value(json_object_get(total, "status")),
                 "partial");
    CHECK_EQ_INT(json_integer_value(json_object_get(total, "known_value")),
                 INT64_MAX - 5);
    CHECK_EQ_INT(json_array_size(json_object_get(r, "diagnostics")), 1);
    json_decref(r);
    ts_opstats_free(ops);

    r = ts_flop_report_not_requested("2.13.0");
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(r, "total"), "method")),
                 "not_requested");
    json_decref(r);
}

/* Diagnostics come in three groups: uncounted operators sorted by name,
 * refused formulas in first-seen order, then incomplete formulas sorted by
 * name; an operator with a refused call is not also reported uncounted. */
static void
test_diagnostic_order(void)
{
    ts_opstats *ops = ts_opstats_new();
    int zeta = ts_opstats_intern(ops, "aten.zeta");
    int cond = ts_opstats_intern(ops, "higher_order.cond");
    int sdpa = ts_opstats_intern(ops, "aten._scaled_dot_product_x");
    int pw = ts_opstats_intern(ops, "aten.pow");
    int abs_id = ts_opstats_intern(ops, "aten.abs");
    int bmm = ts_opstats_intern(ops, "aten.bmm");
    ts_opstats_record(ops, zeta, TS_OPCALL_UNCOUNTED, 0, false, NULL, NULL);
    ts_opstats_record(ops, zeta, TS_OPCALL_UNCOUNTED, 0, false, NULL, NULL);
    ts_opstats_record(ops, cond, TS_OPCALL_UNCOUNTED, 0, false, NULL, NULL);
    ts_opstats_record(ops, bmm, TS_OPCALL_UNSUPPORTED, 0, false, "b", NULL);
    ts_opstats_record(ops, pw, TS_OPCALL_UNSUPPORTED, 0, false, "p", NULL);
    ts_opstats_record(ops, pw, TS_OPCALL_UNCOUNTED, 0, false, NULL, NULL);
    ts_opstats_record(ops, sdpa, TS_OPCALL_COUNTED, 10, true, NULL, NULL);
    ts_opstats_record(ops, abs_id, TS_OPCALL_COUNTED, 3, true, NULL, NULL);
    json_t *r = ts_opstats_report(ops, "2.13.0", "m", NULL);
    json_t *d = json_object_get(r, "diagnostics");
    static const char *const codes[6] = {"uncounted_operator",
                                         "uncounted_operator",
                                         "unsupported_operator_formula",
                                         "unsupported_operator_formula",
                                         "incomplete_operator_formula",
                                         "incomplete_operator_formula"};
    static const char *const names[6] = {"aten.zeta",
                                         "higher_order.cond",
                                         "aten.bmm",
                                         "aten.pow",
                                         "aten._scaled_dot_product_x",
                                         "aten.abs"};
    CHECK_EQ_INT(json_array_size(d), 6);
    for (size_t i = 0; i < 6 && i < json_array_size(d); i++) {
        json_t *item = json_array_get(d, i);
        CHECK_EQ_STR(json_string_value(json_object_get(item, "code")),
                     codes[i]);
        CHECK_EQ_STR(json_string_value(json_object_get(item, "operator")),
                     names[i]);
        CHECK_EQ_STR(json_string_value(json_object_get(item, "metric")),
                     "flops");
    }
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(d, 0), "message")),
        "aten.zeta was observed 2 time(s), but no FLOP formula is "
        "registered.");
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(d, 1), "message")),
        "higher_order.cond was observed 1 time(s): a higher-order "
        "operator whose inner operators TorchScan cannot observe "
        "ran uncounted.");
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(d, 2), "message")),
        "b");
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(d, 5), "message")),
        "aten.abs was counted with a formula that leaves work out "
        "(complex arithmetic); the count is a lower bound.");
    json_t *by_op = json_object_get(r, "by_operator");
    CHECK_EQ_INT(json_object_size(by_op), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(by_op, "aten.abs")), 3);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(r, "total"), "known_value")),
                 13);
    json_decref(r);

    /* nothing observed: a complete zero, and by_module kept as given */
    ts_opstats_free(ops);
    ops = ts_opstats_new();
    r = ts_opstats_report(ops, "2.13.0", "m", json_pack("{s:I}", "a", 1));
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(r, "total"), "status")),
                 "complete");
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_object_get(r, "by_module"), "a")),
                 1);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(r, "context"), "counting_convention")),
                 "torchscan_flops_v1");
    json_decref(r);
    ts_opstats_free(ops);
}

/* A formula's own reason for a lower bound names the diagnostic: the first
 * incomplete call's, copied; complete calls and later reasons change
 * nothing. */
static void
test_incomplete_reason(void)
{
    ts_opstats *ops = ts_opstats_new();
    int pool = ts_opstats_intern(ops, "torchvision.roi_pool");
    char reason[32] = "bins are data";
    CHECK_EQ_INT(
        ts_opstats_record(ops, pool, TS_OPCALL_COUNTED, 5, false, "x", NULL),
        TS_OK);
    CHECK_EQ_INT(
        ts_opstats_record(ops, pool, TS_OPCALL_COUNTED, 0, true, reason, NULL),
        TS_OK);
    reason[0] = 'X'; /* the statistics keep their own copy */
    CHECK_EQ_INT(ts_opstats_record(
                     ops, pool, TS_OPCALL_COUNTED, 0, true, "other", NULL),
                 TS_OK);
    json_t *r = ts_opstats_report(ops, "2.14.1", "m", NULL);
    json_t *d = json_object_get(r, "diagnostics");
    CHECK_EQ_INT(json_array_size(d), 1);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_array_get(d, 0), "message")),
        "torchvision.roi_pool was counted with a formula that leaves work "
        "out (bins are data); the count is a lower bound.");
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(r, "total"), "status")),
                 "partial");
    json_decref(r);
    ts_opstats_free(ops);
}

/* matrix_product_flops: the products added per operator, listed (also
 * with 0) once added, whether or not the operator's calls were counted
 * under its own name; empty otherwise. */
static void
test_matrix_products(void)
{
    ts_opstats *ops = ts_opstats_new();
    int bmm = ts_opstats_intern(ops, "aten.bmm");
    int kernel =
        ts_opstats_intern(ops, "aten._scaled_dot_product_flash_attention");
    int attn = ts_opstats_intern(ops, "aten.scaled_dot_product_attention");
    int add = ts_opstats_intern(ops, "aten.add");
    json_t *r = ts_opstats_report(ops, "2.13.0", "m", NULL);
    CHECK(json_is_object(json_object_get(r, "matrix_product_flops")));
    CHECK_EQ_INT(json_object_size(json_object_get(r, "matrix_product_flops")),
                 0);
    json_decref(r);
    /* a bmm counted as itself, one grouped into an attention (its products
     * only), a kernel listed as the attention it computes */
    ts_opstats_record(ops, bmm, TS_OPCALL_COUNTED, 40, false, NULL, NULL);
    CHECK_EQ_INT(ts_opstats_add_matrix(ops, bmm, 40), TS_OK);
    CHECK_EQ_INT(ts_opstats_add_matrix(ops, bmm, 24), TS_OK);
    ts_opstats_record(ops, attn, TS_OPCALL_COUNTED, 100, false, NULL, NULL);
    CHECK_EQ_INT(ts_opstats_add_matrix(ops, kernel, 0), TS_OK);
    ts_opstats_record(ops, add, TS_OPCALL_COUNTED, 6, false, NULL, NULL);
    CHECK_EQ_INT(ts_opstats_add_matrix(ops, -1, 1), TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_add_matrix(ops, 99, 1), TS_EINVAL);
    CHECK_EQ_INT(ts_opstats_add_matrix(ops, bmm, -1), TS_EINVAL);
    r = ts_opstats_report(ops, "2.13.0", "m", NULL);
    json_t *m = json_object_get(r, "matrix_product_flops");
    CHECK_EQ_INT(json_object_size(m), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "aten.bmm")), 64);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     m, "aten._scaled_dot_product_flash_attention")),
                 0);
    json_t *by_op = json_object_get(r, "by_operator");
    CHECK_EQ_INT(json_object_size(by_op), 3);
    CHECK(json_object_get(by_op, "aten._scaled_dot_product_flash_attention")
          == NULL);
    CHECK_EQ_INT(ts_opstats_total(ops), 146);
    json_decref(r);
    /* a sum past INT64_MAX stays there */
    CHECK_EQ_INT(ts_opstats_add_matrix(ops, add, INT64_MAX), TS_OK);
    CHECK_EQ_INT(ts_opstats_add_matrix(ops, add, 5), TS_OK);
    r = ts_opstats_report(ops, "2.13.0", "m", NULL);
    CHECK(json_integer_value(json_object_get(
              json_object_get(r, "matrix_product_flops"), "aten.add"))
          == INT64_MAX);
    json_decref(r);
    ts_opstats_free(ops);
    /* the structure-mode stub has the field, empty */
    r = ts_flop_report_not_requested("2.13.0");
    CHECK_EQ_INT(json_object_size(json_object_get(r, "matrix_product_flops")),
                 0);
    CHECK(json_is_object(json_object_get(r, "matrix_product_flops")));
    json_decref(r);
}

/* Calls recorded in phases: each phase's sums and status, their sum the
 * total; no "phases" in a forward-only report. */
static void
test_phases(void)
{
    ts_opstats *ops = ts_opstats_new();
    int mm = ts_opstats_intern(ops, "aten.mm");
    int add = ts_opstats_intern(ops, "aten.add_");
    int sin_id = ts_opstats_intern(ops, "aten.sin");
    json_t *r, *phases, *p;
    ts_opstats_record(ops, mm, TS_OPCALL_COUNTED, 48, false, NULL, NULL);
    r = ts_opstats_report(ops, "2.13.0", "m", NULL);
    CHECK(json_object_get(r, "phases") == NULL);
    CHECK(!ts_opstats_has_phases(ops));
    json_decref(r);
    CHECK_EQ_INT(ts_opstats_record_in(ops,
                                      TS_PHASE_BACKWARD,
                                      mm,
                                      TS_OPCALL_COUNTED,
                                      96,
                                      false,
                                      NULL,
                                      NULL),
                 TS_OK);
    ts_opstats_record_in(ops,
                         TS_PHASE_OPTIMIZER,
                         add,
                         TS_OPCALL_COUNTED,
                         10,
                         false,
                         NULL,
                         NULL);
    ts_opstats_record_in(ops,
                         TS_PHASE_BACKWARD,
                         sin_id,
                         TS_OPCALL_UNCOUNTED,
                         0,
                         false,
                         NULL,
                         NULL);
    CHECK_EQ_INT(ts_opstats_record_in(ops,
                                      (ts_phase)TS_PHASE_COUNT,
                                      mm,
                                      TS_OPCALL_COUNTED,
                                      1,
                                      false,
                                      NULL,
                                      NULL),
                 TS_EINVAL);
    CHECK(ts_opstats_has_phases(ops));
    CHECK_EQ_INT(ts_opstats_total(ops), 154);
    CHECK_EQ_INT(ts_opstats_phase_total(ops, TS_PHASE_FORWARD), 48);
    CHECK_EQ_INT(ts_opstats_phase_total(ops, TS_PHASE_BACKWARD), 96);
    CHECK_EQ_INT(ts_opstats_phase_total(ops, TS_PHASE_OPTIMIZER), 10);
    r = ts_opstats_report_phased(ops,
                                 "2.13.0",
                                 "m",
                                 NULL,
                                 json_pack("{s:{s:{s:i}, s:[]}}",
                                           "backward",
                                           "by_module",
                                           "0",
                                           96,
                                           "layers"));
    phases = json_object_get(r, "phases");
    CHECK_EQ_INT(json_object_size(phases), 3);
    p = json_object_get(phases, "forward");
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(p, "total"), "status")),
                 "complete");
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_object_get(p, "total"), "value")),
                 48);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(p, "by_operator"), "aten.mm")),
                 48);
    CHECK_EQ_INT(json_object_size(json_object_get(p, "by_module")), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(p, "layers")), 0);
    p = json_object_get(phases, "backward");
    /* the uncounted aten.sin ran in the backward: that phase is partial */
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(p, "total"), "status")),
                 "partial");
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(p, "total"), "known_value")),
                 96);
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_object_get(p, "by_module"), "0")),
                 96);
    CHECK(json_object_get(json_object_get(p, "by_operator"), "aten.add_")
          == NULL);
    p = json_object_get(phases, "optimizer");
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(p, "total"), "status")),
                 "complete");
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(p, "by_operator"), "aten.add_")),
                 10);
    CHECK_EQ_STR(json_string_value(
                     json_object_get(json_object_get(r, "total"), "status")),
                 "partial");
    json_decref(r);
    ts_opstats_free(ops);

    /* an ignored call alone makes a phase present, with 0 and complete */
    ops = ts_opstats_new();
    add = ts_opstats_intern(ops, "aten.detach");
    ts_opstats_record_in(ops,
                         TS_PHASE_BACKWARD,
                         add,
                         TS_OPCALL_IGNORED,
                         0,
                         false,
                         NULL,
                         "Metadata-only tensor view.");
    r = ts_opstats_report(ops, "2.13.0", "m", NULL);
    p = json_object_get(json_object_get(r, "phases"), "backward");
    CHECK_EQ_INT(json_integer_value(
                     json_object_get(json_object_get(p, "total"), "value")),
                 0);
    CHECK_EQ_INT(json_object_size(json_object_get(p, "by_operator")), 0);
    json_decref(r);
    ts_opstats_free(ops);
}

int
main(void)
{
    test_opstats();
    test_phases();
    test_matrix_products();
    test_diagnostic_order();
    test_incomplete_reason();
    return ts_test_report();
}
