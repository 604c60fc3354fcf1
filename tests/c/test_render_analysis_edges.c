/* Analysis pages (render_analysis.c and the render_html/render_appendix/
 * render_svg/render_model files under it) on generated reports larger
 * than the hand-made one of test_render_analysis.c: rails and lists past
 * their limits ("and N more"), removed modules and calls of a comparison,
 * totals recorded on one side only, inputs and context keys that withhold
 * execution deltas, shapes of nested and symbolic inputs, parameters and
 * buffers in the appendix, real-valued metrics, and paths too deep for a
 * page. The counts in the expected texts are the generators' own sizes. */
#include <stdlib.h>

#include "harness.h"
#include "render_model.h"
#include "torchscan/render.h"

static json_t *
metric(const char *status, double value, bool real, const char *unit)
{
    json_t *v =
        strcmp(status, "complete") == 0
            ? (real ? json_real(value) : json_integer((json_int_t)value))
            : json_null();
    json_t *k = strcmp(status, "unavailable") == 0 ? json_null()
                : real                             ? json_real(value)
                       : json_integer((json_int_t)value);
    return json_pack("{s:s, s:o, s:o, s:s, s:s, s:s}",
                     "status",
                     status,
                     "value",
                     v,
                     "known_value",
                     k,
                     "unit",
                     unit,
                     "scope",
                     "module_call",
                     "method",
                     "torchscan_module_formula");
}

static json_t *
tensor(json_t *shape)
{
    return json_pack("{s:s, s:o, s:s, s:s, s:b}",
                     "kind",
                     "tensor",
                     "shape",
                     shape,
                     "dtype",
                     "torch.float32",
                     "device",
                     "cpu",
                     "requires_grad",
                     0);
}

/* An empty report: context, inputs, root row "" (no module_flops). */
static json_t *
new_report(const char *torch_version)
{
    json_t *r = json_pack(
        "{s:i, s:{s:[s], s:[s], s:s, s:s, s:s, s:s}, s:{s:[], s:{}}, s:[], "
        "s:{}, s:[]}",
        "schema_version",
        1,
        "context",
        "devices",
        "cpu",
        "dtypes",
        "torch.float32",
        "torch_version",
        torch_version,
        "torchscan_version",
        "v",
        "python_version",
        "p",
        "execution_mode",
        "e",
        "inputs",
        "args",
        "kwargs",
        "layers",
        "totals",
        "diagnostics");
    return r;
}

/* Appends a row; `flops` NULL records no module_flops. Params and
 * buffers are given. Returns the row (borrowed). */
static json_t *
add_row(json_t *r,
        const char *path,
        int call_index,
        int depth,
        json_t *flops,
        int params,
        int buffers)
{
    json_t *row = json_pack(
        "{s:s, s:i, s:s, s:i, s:s, s:{s:[], s:{}}, s:{s:s}, "
        "s:{s:i, s:i, s:i, s:b}, s:{s:i, s:i, s:b}, s:{}}",
        "path",
        path,
        "call_index",
        call_index,
        "name",
        path,
        "depth",
        depth,
        "type",
        "Mod",
        "input",
        "args",
        "kwargs",
        "output",
        "kind",
        "none",
        "parameters",
        "trainable",
        params,
        "frozen",
        0,
        "bytes",
        4 * params,
        "shared",
        0,
        "buffers",
        "elements",
        buffers,
        "bytes",
        4 * buffers,
        "shared",
        0,
        "metrics");
    if (flops != NULL) {
        json_object_set_new(
            json_object_get(row, "metrics"), "module_flops", flops);
    }
    json_array_append_new(json_object_get(r, "layers"), row);
    return row;
}

static void
set_total(json_t *r, const char *name, json_t *m)
{
    json_object_set_new(json_object_get(r, "totals"), name, m);
}

static size_t
count(const char *text, const char *part)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, part)) != NULL; p++) {
        n++;
    }
    return n;
}

static void
expect_in(const char *page, const char *part)
{
    if (page == NULL || strstr(page, part) == NULL) {
        fprintf(stderr, "page lacks: %s\n", part);
        CHECK(0);
    }
    else {
        CHECK(1);
    }
}

/* 50 children without a value: the unknown rail shows 40 and says how
 * many more; the unranked list shows them all (under 100). */
static void
test_long_rail(void)
{
    json_t *r = new_report("t");
    ts_error err;
    char path[16];
    add_row(r, "", 0, 0, NULL, 0, 0);
    for (int i = 0; i < 50; i++) {
        snprintf(path, sizeof path, "u%02d", i);
        add_row(r, path, 0, 1, metric("unavailable", 0, false, "FLOPs"), 0, 0);
    }
    add_row(r, "k", 0, 1, metric("complete", 8, false, "FLOPs"), 0, 0);
    set_total(r, "module_flops", metric("partial", 8, false, "FLOPs"));
    char *html =
        ts_render_analysis(r, NULL, "t", "module_flops", "html", &err);
    CHECK(html != NULL);
    /* 50 unknown, 40 listed */
    expect_in(html, "and 10 more (every call is in the module-call details)");
    expect_in(html, "Unranked incomplete or absent measurements (51)");
    free(html);
    char *svg = ts_render_analysis(r, NULL, "t", "module_flops", "svg", &err);
    CHECK(svg != NULL && strncmp(svg, "<svg ", 5) == 0);
    free(svg);
    /* 150 rows without a value: the unranked list stops at 100 */
    for (int i = 50; i < 150; i++) {
        snprintf(path, sizeof path, "u%03d", i);
        add_row(r, path, 0, 1, NULL, 0, 0);
    }
    html = ts_render_analysis(r, NULL, "t", "module_flops", "html", &err);
    CHECK(html != NULL);
    /* 151 unranked: root + 50 unavailable + 100 absent; 100 shown */
    expect_in(html, "Unranked incomplete or absent measurements (151)");
    expect_in(html,
              "<li>and 51 more (every call is in the module-call "
              "details)</li>");
    free(html);
    json_decref(r);
}

/* A comparison: 45 modules removed (a rail of 40 and "and 5 more"), one
 * added, one changed; inputs differ, so execution deltas are withheld;
 * a total recorded only before. */
static void
test_comparison_removed(void)
{
    json_t *before = new_report("t");
    json_t *after = new_report("t");
    ts_error err;
    char path[16];
    add_row(before, "", 0, 0, NULL, 0, 0);
    add_row(after, "", 0, 0, NULL, 0, 0);
    for (int i = 0; i < 45; i++) {
        snprintf(path, sizeof path, "gone%02d", i);
        add_row(
            before, path, 0, 1, metric("complete", 2, false, "FLOPs"), 1, 0);
    }
    add_row(
        before, "keep", 0, 1, metric("complete", 10, false, "FLOPs"), 3, 1);
    add_row(after, "keep", 0, 1, metric("complete", 12, false, "FLOPs"), 3, 1);
    add_row(after, "new", 0, 1, metric("complete", 4, false, "FLOPs"), 0, 2);
    set_total(before, "module_flops", metric("complete", 100, false, "FLOPs"));
    set_total(after, "module_flops", metric("complete", 16, false, "FLOPs"));
    set_total(before, "macs", metric("complete", 50, false, "MACs"));
    /* inputs: a tensor with a symbolic size and a nested kwarg */
    json_array_append_new(
        json_object_get(json_object_get(after, "inputs"), "args"),
        tensor(json_pack("[s, i]", "s0", 4)));
    json_object_set_new(
        json_object_get(json_object_get(after, "inputs"), "kwargs"),
        "mask",
        tensor(json_pack("[i]", 4)));
    /* context: a non-string value */
    json_object_set_new(
        json_object_get(after, "context"), "num_threads", json_integer(4));
    char *html =
        ts_render_analysis(after, before, "cmp", "module_flops", "html", &err);
    CHECK(html != NULL);
    if (html == NULL) {
        fprintf(stderr, "%s\n", err.message);
    }
    expect_in(html, "Removed modules (45)");
    expect_in(html, "<li>and 5 more</li>");
    expect_in(html, "Removed calls (45)");
    expect_in(html, "Added calls (1)");
    expect_in(html, "Execution deltas are withheld: ");
    expect_in(html, "inputs");
    expect_in(html, "(s0, 4) torch.float32; mask=(4) torch.float32");
    expect_in(html, "<a href=\"#before-call-1\">");
    /* macs: recorded before only */
    expect_in(html, "not recorded");
    CHECK(html != NULL && count(html, "#before-call-") >= 45);
    free(html);
    char *svg =
        ts_render_analysis(after, before, "cmp", "parameters", "svg", &err);
    CHECK(svg != NULL && strncmp(svg, "<svg ", 5) == 0);
    free(svg);
    /* parameter bytes and buffers */
    html = ts_render_analysis(
        after, before, "cmp", "parameter_bytes", "html", &err);
    CHECK(html != NULL);
    free(html);
    json_decref(before);
    json_decref(after);
}

/* Real-valued estimates add up as reals; a path deeper than a page can
 * hold is refused. */
static void
test_reals_and_depth(void)
{
    json_t *r = new_report("t");
    ts_error err;
    char path[2100];
    add_row(r, "", 0, 0, NULL, 0, 0);
    add_row(r, "a", 0, 1, metric("complete", 1.5, true, "FLOPs"), 0, 0);
    add_row(r, "b", 0, 1, metric("complete", 2.25, true, "FLOPs"), 0, 0);
    set_total(r, "module_flops", metric("complete", 3.75, true, "FLOPs"));
    char *html =
        ts_render_analysis(r, NULL, "t", "module_flops", "html", &err);
    CHECK(html != NULL);
    expect_in(html, "3.75");
    free(html);
    json_decref(r);

    /* a.a.a... with 1000 dots: 1001 modules deep */
    r = new_report("t");
    add_row(r, "", 0, 0, NULL, 0, 0);
    path[0] = 'a';
    for (int d = 1; d <= 1000; d++) {
        path[2 * d - 1] = '.';
        path[2 * d] = 'a';
    }
    path[2001] = '\0';
    add_row(r, path, 0, 1001, NULL, 0, 0);
    html = ts_render_analysis(r, NULL, "t", "module_flops", "html", &err);
    CHECK(html == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "report: layers[1].path: more than 1000 modules deep, "
                 "deeper than a page draws");
    json_decref(r);
}

/* Operator evidence (by operator, by module label, ignored operators),
 * shared parameters and buffers, and rows covered by the root's
 * inclusive estimate. */
static void
test_evidence_and_covered(void)
{
    json_t *r = new_report("t");
    ts_error err;
    json_t *root =
        add_row(r, "", 0, 0, metric("complete", 40, false, "FLOPs"), 0, 0);
    json_object_set_new(root,
                        "metric_ownership",
                        json_pack("{s:s}", "module_flops", "subtree"));
    for (int i = 0; i < 3; i++) {
        char path[8];
        snprintf(path, sizeof path, "c%d", i);
        json_t *row = add_row(r, path, 0, 1, NULL, 0, 2);
        json_object_set_new(row,
                            "metric_owners",
                            json_pack("{s:{s:s, s:i}}",
                                      "module_flops",
                                      "path",
                                      "",
                                      "call_index",
                                      0));
        json_object_set_new(
            json_object_get(row, "parameters"), "shared", json_true());
        json_object_set_new(
            json_object_get(row, "buffers"), "shared", json_true());
    }
    json_t *total = json_pack("{s:s, s:i, s:i, s:s, s:s, s:s}",
                              "status",
                              "complete",
                              "value",
                              1234,
                              "known_value",
                              1234,
                              "unit",
                              "FLOPs",
                              "scope",
                              "workload",
                              "method",
                              "torchscan_dispatch_counter");
    json_object_set_new(
        r,
        "operator_flops",
        json_pack("{s:i, s:O, s:{s:i}, s:{s:i, s:i}, s:{s:{s:i, s:s}}, "
                  "s:[]}",
                  "schema_version",
                  1,
                  "total",
                  total,
                  "by_operator",
                  "aten.mm",
                  1234,
                  "by_module",
                  "",
                  1234,
                  "c0",
                  1000,
                  "ignored_operators",
                  "aten.t",
                  "calls",
                  3,
                  "reason",
                  "view",
                  "diagnostics"));
    set_total(r, "operator_flops", total);
    set_total(r, "module_flops", metric("complete", 40, false, "FLOPs"));
    char *html =
        ts_render_analysis(r, NULL, "t", "module_flops", "html", &err);
    CHECK(html != NULL);
    if (html == NULL) {
        fprintf(stderr, "%s\n", err.message);
    }
    expect_in(html,
              "<tr><td>aten.mm</td><td class=\"num\">1,234 known "
              "FLOPs</td></tr>");
    expect_in(html, "<td class=\"num\">1,000</td>");
    expect_in(html, "<tr><td>aten.t</td><td class=\"num\">3</td><td>view");
    expect_in(html, "Covered by inclusive estimates (3)");
    expect_in(html,
              "Shared tensors · no new parameter attribution · "
              "buffers: 2 elements, 8 bytes (shared)");
    free(html);
    json_decref(r);
}

/* Execution deltas are withheld when the inputs or a recorded context
 * value differ or are missing (analysis_mode absent reads "full");
 * storage totals are still compared. */
static void
test_withheld_keys(void)
{
    json_t *before = new_report("t");
    json_t *after = new_report("t");
    rp_page page;
    ts_error err;
    add_row(before, "", 0, 0, metric("complete", 4, false, "FLOPs"), 2, 0);
    add_row(after, "", 0, 0, metric("complete", 6, false, "FLOPs"), 2, 0);
    set_total(before, "module_flops", metric("complete", 4, false, "FLOPs"));
    set_total(after, "module_flops", metric("complete", 6, false, "FLOPs"));
    set_total(before, "parameters", metric("complete", 2, false, "elements"));
    set_total(after, "parameters", metric("complete", 3, false, "elements"));
    json_object_del(json_object_get(before, "context"), "torch_version");
    json_object_set_new(json_object_get(after, "context"),
                        "devices",
                        json_pack("[s]", "cuda:0"));
    json_object_set_new(json_object_get(after, "context"),
                        "analysis_mode",
                        json_string("full"));
    json_array_append_new(
        json_object_get(json_object_get(after, "inputs"), "args"),
        tensor(json_pack("[i]", 3)));
    ts_error_clear(&err);
    CHECK_EQ_INT(rp_page_build(&page, after, before, &err), TS_OK);
    /* "full" on one side equals the other's absent mode */
    CHECK_EQ_INT(json_array_size(page.withheld), 3);
    CHECK_EQ_STR(json_string_value(json_array_get(page.withheld, 0)),
                 "inputs");
    CHECK_EQ_STR(json_string_value(json_array_get(page.withheld, 1)),
                 "torch_version");
    CHECK_EQ_STR(json_string_value(json_array_get(page.withheld, 2)),
                 "devices");
    json_t *totals = json_object_get(page.comparison, "totals");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(totals, "module_flops"), "reason")),
                 "not comparable: inputs, torch_version, devices");
    CHECK(json_is_null(
        json_object_get(json_object_get(totals, "module_flops"), "delta")));
    /* parameters are storage: 3 - 2 */
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(totals, "parameters"), "delta")),
                 1);
    /* the root's changed call is withheld too */
    json_t *changed =
        json_object_get(json_object_get(page.comparison, "layers"), "changed");
    CHECK_EQ_STR(
        json_string_value(json_object_get(
            json_object_get(
                json_object_get(json_array_get(changed, 0), "metrics"),
                "module_flops"),
            "status")),
        "unavailable");
    rp_page_free(&page);
    /* a structure-mode candidate against a full one */
    json_object_set_new(json_object_get(after, "context"),
                        "analysis_mode",
                        json_string("structure"));
    CHECK_EQ_INT(rp_page_build(&page, after, before, &err), TS_OK);
    CHECK_EQ_INT(json_array_size(page.withheld), 4);
    CHECK_EQ_STR(json_string_value(json_array_get(page.withheld, 3)),
                 "analysis_mode");
    rp_page_free(&page);
    json_decref(before);
    json_decref(after);
}

int
main(void)
{
    test_withheld_keys();
    test_evidence_and_covered();
    test_long_rail();
    test_comparison_removed();
    test_reals_and_depth();
    return ts_test_report();
}
