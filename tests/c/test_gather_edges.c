/* gather.c refusals test_gather.c leaves out: statuses that are not a
 * list or not statuses, a failed rank's error with missing or foreign
 * types (ranks named by position when no ranks are given), shapes without
 * a kind, disagreeing dst, and report lists of no kind or mixed kinds. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/gather.h"

static json_t *
parse(const char *text)
{
    json_error_t error;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &error);
    if (v == NULL) {
        fprintf(stderr, "bad fixture %s: %s\n", text, error.text);
    }
    return v;
}

/* ts_gather_check on `statuses` (JSON text) and `ranks` (NULL: none);
 * the status, the exception type and the message. */
static int
check(const char *statuses, const char *ranks, char *type, ts_error *err)
{
    json_t *s = parse(statuses);
    json_t *r = ranks != NULL ? parse(ranks) : NULL;
    int rc = ts_gather_check(s, r, type, 32, err);
    json_decref(s);
    json_decref(r);
    return rc;
}

static void
test_check(void)
{
    char type[32];
    ts_error err;
    CHECK_EQ_INT(check("{}", NULL, type, &err), TS_EFORMAT);
    CHECK_EQ_STR(err.message, "statuses must be a non-empty list");
    CHECK_EQ_STR(type, "ValueError");
    CHECK_EQ_INT(check("[]", NULL, type, &err), TS_EFORMAT);
    CHECK_EQ_INT(check("[{\"ok\":{}}, 1]", NULL, type, &err), TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "the status of rank 1 is not a gather_reports status");
    CHECK_EQ_INT(check("[{\"ok\":{}}, {\"ok\":3}]", "[4, 7]", type, &err),
                 TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "the status of rank 7 is not a gather_reports status");
    /* a rank's error: its type when TypeError or ValueError, else
     * RuntimeError; a missing type reads "Error" */
    CHECK_EQ_INT(
        check("[{\"ok\":{}}, {\"error\":{}}]", "[0, \"x\"]", type, &err),
        TS_EINVAL);
    CHECK_EQ_STR(type, "RuntimeError");
    CHECK_EQ_STR(err.message, "gather_reports failed on rank 1: Error: ");
    CHECK_EQ_INT(check("[{\"error\":{\"type\":\"KeyError\",\"message\":"
                       "\"k\"}}]",
                       NULL,
                       type,
                       &err),
                 TS_EINVAL);
    CHECK_EQ_STR(type, "RuntimeError");
    CHECK_EQ_STR(err.message, "gather_reports failed on rank 0: KeyError: k");
    CHECK_EQ_INT(check("[{\"error\":{\"type\":\"TypeError\",\"message\":"
                       "\"t\"}}]",
                       NULL,
                       type,
                       &err),
                 TS_EINVAL);
    CHECK_EQ_STR(type, "TypeError");
    CHECK_EQ_INT(
        check("[{\"error\":{\"type\":\"ValueError\"}}]", NULL, type, &err),
        TS_EINVAL);
    CHECK_EQ_STR(type, "ValueError");
    CHECK_EQ_STR(err.message, "gather_reports failed on rank 0: ValueError: ");
    /* shapes without a kind */
    CHECK_EQ_INT(check("[{\"ok\":{\"kind\":\"AnalysisReport\"},\"dst\":0}, "
                       "{\"ok\":{},\"dst\":0}]",
                       NULL,
                       type,
                       &err),
                 TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "gather_reports: the ranks' reports disagree in shape: rank "
                 "1 passed a ?, rank 0 an AnalysisReport");
    CHECK_EQ_INT(check("[{\"ok\":{},\"dst\":1}, "
                       "{\"ok\":{\"kind\":\"FlopReport\"},\"dst\":1}]",
                       NULL,
                       type,
                       &err),
                 TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "gather_reports: the ranks' reports disagree in shape: rank "
                 "1 passed a FlopReport, rank 0 a ?");
    /* dst differs */
    CHECK_EQ_INT(check("[{\"ok\":{},\"dst\":0}, {\"ok\":{},\"dst\":2}]",
                       "[0, 1]",
                       type,
                       &err),
                 TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "gather_reports: the ranks disagree on dst: rank 1 passed "
                 "dst=2, rank 0 dst=0");
    /* one rank alone always agrees with itself */
    CHECK_EQ_INT(
        check("[{\"ok\":{\"kind\":\"FlopReport\"}}]", NULL, type, &err),
        TS_OK);
}

static void
test_reports_kinds(void)
{
    ts_error err;
    json_t *r = parse("[{}]");
    CHECK(ts_gather_reports(r, NULL, false, &err) == NULL);
    CHECK_EQ_STR(err.message, "reports must be a non-empty list of reports");
    json_decref(r);
    r = parse("[]");
    CHECK(ts_gather_reports(r, NULL, false, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    json_decref(r);
    r = parse("{\"layers\":[]}");
    CHECK(ts_gather_reports(r, NULL, false, &err) == NULL);
    json_decref(r);
    /* an AnalysisReport, then a FlopReport and a BenchmarkReport */
    r = parse("[{\"layers\":[]}, {\"by_operator\":{},\"total\":{}}]");
    json_t *ranks = parse("[3, 9]");
    CHECK(ts_gather_reports(r, ranks, false, &err) == NULL);
    json_decref(ranks);
    CHECK_EQ_STR(err.message,
                 "gather_reports: the reports disagree in kind (rank 9)");
    json_decref(r);
    r = parse("[{\"measurement\":{}}, {\"by_operator\":{}}]");
    ranks = parse("[\"a\", \"b\"]"); /* not ints: named by position */
    CHECK(ts_gather_reports(r, ranks, false, &err) == NULL);
    CHECK_EQ_STR(err.message,
                 "gather_reports: the reports disagree in kind (rank 1)");
    json_decref(ranks);
    /* no ranks: refused as such (the writer used to fail as if out of
     * memory) */
    CHECK(ts_gather_reports(r, NULL, false, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message, "ranks must be the list of the reports' ranks");
    json_decref(r);
    /* a report of no kind has no shape */
    r = parse("{\"by_operator\":{}}");
    CHECK(ts_gather_shape(r, &err) == NULL);
    CHECK_EQ_STR(err.message,
                 "report must be an AnalysisReport (crawl_module), a "
                 "FlopReport (measure_flops) or a BenchmarkReport "
                 "(measure_latency, measure_workload)");
    json_decref(r);
    CHECK(ts_gather_shape(NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
}

#define TOTAL(v)                                                  \
    "{\"status\":\"complete\",\"value\":" v ",\"known_value\":" v \
    ",\"unit\":\"FLOPs\",\"scope\":\"workload\",\"method\":\"m\"}"

/* A FlopReport's fields are checked before its shape is taken. */
static void
test_flop_report_fields(void)
{
    static const struct {
        const char *report, *message;
    } cases[] = {
        {"{\"schema_version\":2,\"total\":" TOTAL("1") ",\"by_operator\":{}}",
         "report: schema_version must be 1"},
        {"{\"schema_version\":1,\"total\":{},\"by_operator\":{}}", NULL},
        {"{\"schema_version\":1,\"total\":" TOTAL(
             "1") ",\"by_operator\":{\"aten.mm\":1.5}}",
         "report: report.by_operator.aten.mm is not an int"},
        {"{\"schema_version\":1,\"total\":" TOTAL(
             "1") ",\"by_operator\":{},\"collectives\":{\"c10d.allreduce_\":"
                  "{\"calls\":1,\"bytes_moved\":\"8\"}}}",
         "report: report.collectives.c10d.allreduce_.bytes_moved is not an "
         "int"},
        {"{\"schema_version\":1,\"total\":" TOTAL(
             "1") ",\"by_operator\":{},\"collective_bytes\":{\"status\":1}}",
         NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ts_error err;
        json_t *r = parse(cases[k].report);
        CHECK(ts_gather_shape(r, &err) == NULL);
        CHECK_EQ_INT(err.code, TS_EFORMAT);
        if (cases[k].message != NULL) {
            CHECK_EQ_STR(err.message, cases[k].message);
        }
        else {
            /* the MetricResult check names the member */
            CHECK(strncmp(err.message, "report: report.", 15) == 0);
        }
        json_decref(r);
    }
    /* valid, with collectives */
    ts_error err;
    json_t *r = parse("{\"schema_version\":1,\"total\":" TOTAL(
        "8") ",\"by_operator\":{\"aten.mm\":8},\"collectives\":"
             "{\"c10d.allreduce_\":{\"calls\":1,\"bytes_moved\":"
             "16}},\"collective_bytes\":" TOTAL("16") "}");
    json_t *shape = ts_gather_shape(r, &err);
    CHECK(shape != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(shape, "kind")),
                 "FlopReport");
    json_decref(shape);
    json_decref(r);
}

/* Two FlopReports whose totals are complete and partial, ints and
 * reals: RankStats statuses, values and sums. */
static void
test_flop_stats(void)
{
    static const char *const totals[] = {
        TOTAL("8"),
        TOTAL("2.5"),
        "{\"status\":\"partial\",\"value\":null,\"known_value\":3,"
        "\"unit\":\"FLOPs\",\"scope\":\"workload\",\"method\":\"m\"}",
        "{\"status\":\"unavailable\",\"value\":null,\"known_value\":"
        "null,\"unit\":\"FLOPs\",\"scope\":\"workload\",\"method\":\"m\"}"};
    char text[1024];
    ts_error err;
    json_t *ranks = parse("[4, 6]");
    json_t *g[4][4];
    for (int a = 0; a < 4; a++) {
        for (int b = 0; b < 4; b++) {
            snprintf(text,
                     sizeof text,
                     "[{\"schema_version\":1,\"total\":%s,\"by_operator\":"
                     "{\"aten.mm\":8}},{\"schema_version\":1,\"total\":%s,"
                     "\"by_operator\":{\"aten.mm\":2}}]",
                     totals[a],
                     totals[b]);
            json_t *r = parse(text);
            g[a][b] = ts_gather_reports(r, ranks, false, &err);
            CHECK(g[a][b] != NULL);
            json_decref(r);
        }
    }
#define TOT(a, b) \
    json_object_get(json_object_get(g[a][b], "operator_flops"), "total")
    /* 8 and 2.5: complete, a real sum 10.5, min 2.5 on rank 6 */
    CHECK_EQ_STR(json_string_value(json_object_get(TOT(0, 1), "status")),
                 "complete");
    CHECK_EQ_REAL(json_real_value(json_object_get(TOT(0, 1), "sum")), 10.5);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(TOT(0, 1), "min"), "rank")),
                 6);
    /* 8 and 8: an exact int sum 16 */
    CHECK(json_is_integer(json_object_get(TOT(0, 0), "sum")));
    CHECK_EQ_INT(json_integer_value(json_object_get(TOT(0, 0), "sum")), 16);
    /* 8 and a partial 3: partial, values [8, null], known [8, 3], no sum */
    CHECK_EQ_STR(json_string_value(json_object_get(TOT(0, 2), "status")),
                 "partial");
    CHECK(
        json_is_null(json_array_get(json_object_get(TOT(0, 2), "values"), 1)));
    CHECK_EQ_INT(json_integer_value(json_array_get(
                     json_object_get(TOT(0, 2), "known_values"), 1)),
                 3);
    CHECK(json_is_null(json_object_get(TOT(0, 2), "sum")));
    CHECK(json_is_null(json_object_get(TOT(0, 2), "min")));
    /* nothing known anywhere: unavailable */
    CHECK_EQ_STR(json_string_value(json_object_get(TOT(3, 3), "status")),
                 "unavailable");
    /* by_operator counts are complete: 8 + 2 */
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_object_get(
                json_object_get(json_object_get(g[3][3], "operator_flops"),
                                "by_operator"),
                "aten.mm"),
            "sum")),
        10);
#undef TOT
    for (int a = 0; a < 4; a++) {
        for (int b = 0; b < 4; b++) {
            json_decref(g[a][b]);
        }
    }
    json_decref(ranks);
}

int
main(void)
{
    test_flop_stats();
    test_flop_report_fields();
    test_check();
    test_reports_kinds();
    return ts_test_report();
}
