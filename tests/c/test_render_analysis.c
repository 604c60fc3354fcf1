/* The analysis page (render_analysis.c, render_model.c, render_map.c,
 * render_text.c): text pieces against printf and hand-written strings, the
 * page model's tree, groups, subtotals, geometry and rail on a hand-made
 * report whose numbers are chosen to divide the map exactly, withheld
 * comparison reasons, per-call operator FLOPs, and argument errors. */
#include <stdlib.h>

#include "harness.h"
#include "render_model.h"
#include "render_text.h"
#include "torchscan/render.h"

/* A MetricResult literal of the module_formula family. */
#define M(status, value, known)                                             \
    "{\"status\":\"" status "\",\"value\":" value ",\"known_value\":" known \
    ",\"unit\":\"FLOPs\",\"scope\":\"module_call\",\"method\":\"f\"}"
#define OPS(n)                                                 \
    "\"operator_flops\":{\"status\":\"complete\",\"value\":" n \
    ",\"known_value\":" n                                      \
    ",\"unit\":\"FLOPs\",\"scope\":"                           \
    "\"module_call_self\",\"method\":\"c\"}"
#define PARAMS(n)                           \
    "\"parameters\":{\"trainable\":" n      \
    ",\"frozen\":0,\"bytes\":0,\"shared\":" \
    "false}"

/* root "" with children a (30 FLOPs), b (container: b.x 10, b.y unknown),
 * z (complete 0), c (no formula recorded, a leaf), and a second call of a
 * (30 more). Operator FLOPs: a 5, b.x 3, b 1, a again 5. */
static const char report_text[] =
    "{\"schema_version\":1,"
    "\"context\":{\"devices\":[\"cpu\"],\"dtypes\":[\"torch.float32\"],"
    "\"torch_version\":\"t\",\"torchscan_version\":\"v\","
    "\"python_version\":\"p\",\"execution_mode\":\"e\"},"
    "\"inputs\":{\"args\":[],\"kwargs\":{}},"
    "\"layers\":["
    "{\"path\":\"\",\"call_index\":0,\"depth\":0,\"type\":\"Net\","
    "\"metrics\":{" OPS("0") "}," PARAMS("0") "},"
    "{\"path\":\"a\",\"call_index\":0,\"depth\":1,\"type\":\"L\","
    "\"metrics\":{\"module_flops\":" M("complete", "30", "30") "," OPS("5")
    "}," PARAMS("4") "},"
    "{\"path\":\"b\",\"call_index\":0,\"depth\":1,\"type\":\"S\","
    "\"metrics\":{" OPS("1") "}," PARAMS("0") "},"
    "{\"path\":\"b.x\",\"call_index\":0,\"depth\":2,\"type\":\"L\","
    "\"metrics\":{\"module_flops\":" M("complete", "10", "10") "," OPS("3")
    "}," PARAMS("2") "},"
    "{\"path\":\"b.y\",\"call_index\":0,\"depth\":2,\"type\":\"U\","
    "\"metrics\":{\"module_flops\":" M("unavailable", "null", "null") ","
    OPS("0") "}," PARAMS("0") "},"
    "{\"path\":\"z\",\"call_index\":0,\"depth\":1,\"type\":\"Z\","
    "\"metrics\":{\"module_flops\":" M("complete", "0", "0") "," OPS("0")
    "}," PARAMS("0") "},"
    "{\"path\":\"c\",\"call_index\":0,\"depth\":1,\"type\":\"C\","
    "\"metrics\":{" OPS("0") "}," PARAMS("0") "},"
    "{\"path\":\"a\",\"call_index\":1,\"depth\":1,\"type\":\"L\","
    "\"metrics\":{\"module_flops\":" M("complete", "30", "30") "," OPS("5")
    "}," PARAMS("0") "}],"
    "\"totals\":{\"module_flops\":{\"status\":\"partial\",\"value\":null,"
    "\"known_value\":70,\"unit\":\"FLOPs\",\"scope\":\"forward\","
    "\"method\":\"f\"}},"
    "\"diagnostics\":[]}";

static json_t *
report(void)
{
    json_error_t error;
    json_t *r = json_loads(report_text, 0, &error);
    if (r == NULL) {
        fprintf(stderr, "fixture: %s at %d\n", error.text, error.column);
    }
    return r;
}

static char *
text(void (*write)(ts_text_buf *, void *), void *arg)
{
    ts_text_buf b = {NULL, 0, 0, false};
    write(&b, arg);
    return b.data;
}

static void
write_fixed2(ts_text_buf *b, void *arg)
{
    rt_fixed2(b, *(double *)arg);
}

static void
write_int(ts_text_buf *b, void *arg)
{
    ts_text_put_int(b, *(int64_t *)arg);
}

static void
write_grouped(ts_text_buf *b, void *arg)
{
    rt_grouped(b, arg);
}

static void
write_status(ts_text_buf *b, void *arg)
{
    rt_status_text(b, arg, "FLOPs");
}

static void
write_island(ts_text_buf *b, void *arg)
{
    rt_json_island(b, arg);
}

static void
test_numbers(void)
{
    static const double values[] = {0.0,
                                    1.0,
                                    12.5,
                                    0.125,
                                    2.675,
                                    959.999,
                                    960.0,
                                    720.0,
                                    1e-9,
                                    123456.785,
                                    0.005,
                                    0.015,
                                    3.14159,
                                    239.99999,
                                    47.994999};
    static const int64_t ints[] = {
        0, 7, -7, 1000, INT64_MAX, INT64_MIN, -1234567};
    char expected[64];
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        /* printf's digits, also at binary halves (0.125 -> 0.12) and just
         * below them (2.675 -> 2.67) */
        char *got = text(write_fixed2, (void *)&values[i]);
        snprintf(expected, sizeof expected, "%.2f", values[i]);
        CHECK_EQ_STR(got, expected);
        free(got);
    }
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        char *got = text(write_int, (void *)&ints[i]);
        snprintf(expected, sizeof expected, "%" PRId64, ints[i]);
        CHECK_EQ_STR(got, expected);
        free(got);
    }
    {
        rp_sum s = {TS_COMPLETE, false, 1234567, 0.0};
        char *got = text(write_grouped, &s);
        CHECK_EQ_STR(got, "1,234,567");
        free(got);
        s.i = INT64_MIN;
        got = text(write_grouped, &s);
        CHECK_EQ_STR(got, "-9,223,372,036,854,775,808");
        free(got);
        s.i = 0;
        got = text(write_grouped, &s);
        CHECK_EQ_STR(got, "0");
        free(got);
        s.i = -100000;
        got = text(write_grouped, &s);
        CHECK_EQ_STR(got, "-100,000");
        free(got);
        s.i = 999;
        got = text(write_status, &s);
        CHECK_EQ_STR(got, "complete · 999 FLOPs");
        free(got);
        s.status = TS_PARTIAL;
        s.i = 1000;
        got = text(write_status, &s);
        CHECK_EQ_STR(got,
                     "partial · at least 1,000 FLOPs (lower bound; full value "
                     "unknown)");
        free(got);
        s.status = TS_UNAVAILABLE;
        got = text(write_status, &s);
        CHECK_EQ_STR(got, "unavailable · unknown");
        free(got);
    }
}

static void
test_sums(void)
{
    rp_sum a = {TS_COMPLETE, false, 9000000000000000000LL, 0.0};
    rp_sum b = a, part = {TS_PARTIAL, false, 5, 0.0};
    /* past int64: the sum goes on as a double of the true value */
    rp_sum_add(&a, &b);
    CHECK(a.real);
    CHECK_EQ_REAL(rp_sum_double(&a), 1.8e19);
    CHECK_EQ_INT(a.status, TS_COMPLETE);
    /* a lower bound makes the sum one */
    rp_sum_add(&b, &part);
    CHECK_EQ_INT(b.status, TS_PARTIAL);
    CHECK_EQ_INT(b.i, 9000000000000000005LL);
}

static void
test_island_escapes(void)
{
    json_t *value =
        json_pack("{s:s}", "k", "</script>&\xe2\x80\xa8\xe2\x80\xa9");
    char *got = text(write_island, value);
    CHECK_EQ_STR(got,
                 "{\"k\":\"\\u003c/script\\u003e\\u0026\\u2028\\u2029\"}");
    free(got);
    json_decref(value);
}

static void
test_model(void)
{
    json_t *r = report();
    rp_page page;
    ts_error err;
    const rp_view *view;
    const rp_group *g, *none;
    size_t a, b, bx, by, z, c;
    ts_error_clear(&err);
    CHECK(r != NULL);
    CHECK_EQ_INT(rp_page_build(&page, r, NULL, &err), TS_OK);
    CHECK_EQ_INT(page.nnodes, 7);
    a = rp_node_find(&page, "a");
    b = rp_node_find(&page, "b");
    bx = rp_node_find(&page, "b.x");
    by = rp_node_find(&page, "b.y");
    z = rp_node_find(&page, "z");
    c = rp_node_find(&page, "c");
    CHECK_EQ_INT(page.nodes[a].ncalls[0], 2);
    CHECK_EQ_INT(page.nodes[bx].parent, b);
    CHECK_EQ_INT(page.nodes[bx].depth, 2);
    view = &page.views[rp_view_index("module_flops")];
    /* one group of recorded values (f, FLOPs, module_call) and the
     * synthetic group of c, a leaf without a value */
    CHECK_EQ_INT(view->ngroups, 2);
    g = &view->groups[0];
    none = &view->groups[1];
    CHECK_EQ_STR(g->method, "f");
    CHECK(!g->unscaled && none->unscaled);
    /* a: 60 (two calls), b: 10 + unknown (partial), root 70 partial */
    CHECK_EQ_INT(g->sub[0][a].i, 60);
    CHECK_EQ_INT(g->sub[0][a].status, TS_COMPLETE);
    CHECK_EQ_INT(g->sub[0][b].i, 10);
    CHECK_EQ_INT(g->sub[0][b].status, TS_PARTIAL);
    CHECK_EQ_INT(g->sub[0][0].i, 70);
    CHECK_EQ_INT(g->sub[0][0].status, TS_PARTIAL);
    /* 960 units for 70 FLOPs: a 60 -> 822.86, b 10 -> 137.14 at x 822.86 */
    CHECK_EQ_REAL(g->width[0], 960.0);
    CHECK_EQ_REAL(g->width[a], 960.0 * 60 / 70);
    CHECK_EQ_REAL(g->x[b], 960.0 * 60 / 70);
    CHECK_EQ_REAL(g->width[b], 960.0 * 10 / 70);
    CHECK_EQ_REAL(g->x[bx], g->x[b]);
    CHECK_EQ_REAL(g->width[by], 0.0);
    /* the rail: b.y unknown, z a complete zero, b.x small? 137 > 24: no */
    CHECK_EQ_INT(rp_rail_kind(&page, g, by), RP_RAIL_UNKNOWN);
    CHECK_EQ_INT(rp_rail_kind(&page, g, z), RP_RAIL_ZERO);
    CHECK_EQ_INT(rp_rail_kind(&page, g, bx), -1);
    CHECK_EQ_INT(g->nrail[RP_RAIL_UNKNOWN], 1);
    CHECK_EQ_INT(g->nrail[RP_RAIL_ZERO], 1);
    CHECK_EQ_INT(g->nrail[RP_RAIL_SMALL], 0);
    /* tiles: root, a, b, b.x (z, b.y have no width; c is not in g) */
    CHECK_EQ_INT(g->tiles, 4);
    CHECK_EQ_INT(g->rows, 3);
    /* the unscaled group: c alone spans the map */
    CHECK_EQ_REAL(none->width[c], 960.0);
    CHECK_EQ_REAL(none->width[0], 960.0);
    CHECK_EQ_INT(none->tiles, 2);
    /* parameters: 4 + 2 newly attributed, one group */
    view = &page.views[rp_view_index("parameters")];
    CHECK_EQ_INT(view->ngroups, 1);
    CHECK_EQ_INT(view->groups[0].sub[0][0].i, 6);
    /* operator FLOPs: self per row; inclusive per module path (all calls
     * of the path and of the paths under it) */
    CHECK_EQ_INT(page.op_self[2].i, 1);
    CHECK_EQ_INT(page.op_incl[b].i, 1 + 3 + 0);
    CHECK_EQ_INT(page.op_incl[a].i, 5 + 5);
    CHECK_EQ_INT(page.op_incl[0].i, 5 + 1 + 3 + 5);
    CHECK_EQ_INT(page.op_incl[c].i, 0);
    /* suggestions: the largest complete module_flops call (a #0, first on
     * the tie) and the largest parameter call */
    CHECK_EQ_INT(json_array_size(page.suggestions), 2);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_array_get(page.suggestions, 0), "href")),
                 "#call-1");
    rp_page_free(&page);
    json_decref(r);
}

static void
test_withheld(void)
{
    json_t *after = report(), *before = report();
    rp_page page;
    ts_error err;
    json_t *totals;
    ts_error_clear(&err);
    json_object_set_new(
        json_object_get(after, "context"), "torch_version", json_string("u"));
    json_object_set_new(json_object_get(after, "context"),
                        "analysis_mode",
                        json_string("full"));
    CHECK_EQ_INT(rp_page_build(&page, after, before, &err), TS_OK);
    CHECK_EQ_INT(json_array_size(page.withheld), 1);
    CHECK_EQ_STR(json_string_value(json_array_get(page.withheld, 0)),
                 "torch_version");
    totals = json_object_get(page.comparison, "totals");
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(totals, "module_flops"), "reason")),
                 "not comparable: torch_version");
    rp_page_free(&page);
    json_decref(after);
    json_decref(before);
}

static void
test_arguments(void)
{
    json_t *r = report();
    ts_error err;
    char *first, *second;
    ts_error_clear(&err);
    CHECK(ts_render_analysis(r, NULL, "t", "module_flops", "pdf", &err)
          == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK(ts_render_analysis(r, NULL, "t", "operator_flops", "html", &err)
          == NULL);
    CHECK(strstr(err.message, "metric") != NULL);
    CHECK(ts_render_analysis(r, NULL, "a\x1b", "macs", "html", &err) == NULL);
    CHECK(strstr(err.message, "title") != NULL);
    first = ts_render_analysis(r, NULL, "t", "macs", "html", &err);
    second = ts_render_analysis(r, NULL, "t", "macs", "html", &err);
    CHECK(first != NULL && second != NULL && strcmp(first, second) == 0);
    free(first);
    free(second);
    first = ts_render_analysis(r, r, "t", "dmas", "svg", &err);
    CHECK(first != NULL && strncmp(first, "<svg ", 5) == 0);
    free(first);
    json_decref(r);
}

int
main(void)
{
    test_numbers();
    test_sums();
    test_island_escapes();
    test_model();
    test_withheld();
    test_arguments();
    return ts_test_report();
}
