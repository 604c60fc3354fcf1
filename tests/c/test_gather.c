/* Tests for src/core/gather.c: the shape of a report, the check that the
 * ranks agree, and the statistics of the gathered report. Every expected
 * number is worked out by hand in the comments. */
#include <stdlib.h>
#include <string.h>

#include "fail_emitter.h"
#include "harness.h"
#include "torchscan/gather.h"

/* Every gathering these tests make is also written through an emitter
 * that fails each of its callbacks in turn (fail_emitter.h), with and
 * without the reports, and each report through ts_emit_tree. */
typedef struct gather_args {
    const json_t *reports, *ranks;
    bool with_reports;
} gather_args;

static int
write_gather(const ts_emitter *e, void *arg)
{
    gather_args *a = arg;
    ts_error err;
    return ts_gather_emit(a->reports, a->ranks, a->with_reports, e, &err);
}

static int
write_tree(const ts_emitter *e, void *arg)
{
    return ts_emit_tree(e, arg);
}

/* An emitter's failure is TS_ENOMEM whatever err held before the call
 * (a status read from an uncleared err before: its garbage returned). */
static void
test_emit_failure_status(const json_t *reports, const json_t *ranks)
{
    fail_emitter f;
    ts_emitter e = {&f,
                    fe_begin_object,
                    fe_end_object,
                    fe_begin_array,
                    fe_end_array,
                    fe_key,
                    fe_string,
                    fe_integer,
                    fe_real,
                    fe_boolean,
                    fe_null,
                    fe_tree};
    ts_json_builder *b = ts_json_builder_new();
    ts_error err;
    if (b == NULL) {
        return;
    }
    ts_json_builder_emitter(b, &f.inner);
    f.calls = 0;
    f.fail_at = 1;
    memset(&err, 0x7f, sizeof err);
    err.message[sizeof err.message - 1] = '\0';
    CHECK_EQ_INT(ts_gather_emit(reports, ranks, true, &e, &err), TS_ENOMEM);
    CHECK_EQ_INT(err.code, TS_ENOMEM);
    f.calls = 0;
    CHECK_EQ_INT(ts_gather_emit(reports, ranks, true, &e, NULL), TS_ENOMEM);
    ts_json_builder_free(b);
}

static json_t *
gather_checked(const json_t *reports,
               const json_t *ranks,
               bool with_reports,
               ts_error *err)
{
    json_t *g = ts_gather_reports(reports, ranks, with_reports, err);
    if (g != NULL) {
        gather_args a = {reports, ranks, with_reports};
        size_t i;
        json_t *r;
        test_emit_failure_status(reports, ranks);
        fault_loop("gather", write_gather, &a);
        a.with_reports = !with_reports;
        fault_loop("gather", write_gather, &a);
        json_array_foreach((json_t *)reports, i, r)
        {
            fault_loop("tree", write_tree, r);
        }
    }
    return g;
}

static json_t *
metric(const char *status, double value, const char *unit)
{
    ts_status s =
        strcmp(status, "complete") == 0
            ? TS_COMPLETE
            : (strcmp(status, "partial") == 0 ? TS_PARTIAL : TS_UNAVAILABLE);
    ts_number n = value == (double)(int64_t)value ? ts_int((int64_t)value)
                                                  : ts_real(value);
    return ts_metric_new(s, n, unit, "workload", "m");
}

/* A FlopReport of `flops` FLOPs (aten.mm), with an all_reduce of `bytes`
 * when bytes >= 0. */
static json_t *
flop_report(int64_t flops, int64_t bytes)
{
    json_t *r = json_pack("{s:i, s:{}, s:o, s:{}, s:{s:I}, s:{}, s:[]}",
                          "schema_version",
                          1,
                          "context",
                          "total",
                          ts_metric_new(TS_COMPLETE,
                                        ts_int(flops),
                                        "FLOPs",
                                        "workload",
                                        "torchscan_dispatch_counter"),
                          "by_module",
                          "by_operator",
                          "aten.mm",
                          (json_int_t)flops,
                          "ignored_operators",
                          "diagnostics");
    if (bytes >= 0) {
        json_object_set_new(json_object_get(r, "by_operator"),
                            "c10d.allreduce_",
                            json_integer(0));
        json_object_set_new(r,
                            "collectives",
                            json_pack("{s:{s:i, s:I}}",
                                      "c10d.allreduce_",
                                      "calls",
                                      1,
                                      "bytes_moved",
                                      (json_int_t)bytes));
        json_object_set_new(
            r, "collective_bytes", metric("complete", (double)bytes, "bytes"));
    }
    return r;
}

/* A BenchmarkReport whose latency is `latency` seconds. */
static json_t *
benchmark_report(double latency, const char *latency_status)
{
    return json_pack("{s:i, s:{}, s:{s:s}, s:{s:o, s:o}, s:{}}",
                     "schema_version",
                     1,
                     "context",
                     "inputs",
                     "kind",
                     "none",
                     "totals",
                     "latency",
                     metric(latency_status, latency, "seconds"),
                     "throughput",
                     metric("complete", 1.0 / latency, "calls/s"),
                     "measurement");
}

/* An AnalysisReport of Sequential(Linear(in, 4)) on a (2, in) input, with
 * `flops` operator FLOPs in the Linear's row. */
static json_t *
analysis_report(int in, int64_t flops)
{
    json_t *input = json_pack("{s:[{s:s, s:[i, i], s:s, s:s, s:b}], s:{}}",
                              "args",
                              "kind",
                              "tensor",
                              "shape",
                              2,
                              in,
                              "dtype",
                              "torch.float32",
                              "device",
                              "cpu",
                              "requires_grad",
                              0,
                              "kwargs");
    json_t *row0 = json_pack(
        "{s:s, s:i, s:s, s:i, s:s, s:O, s:{s:s}, s:{s:i, s:i, s:i, s:b}, "
        "s:{s:i, s:i, s:b}, s:{s:o, s:o}}",
        "path",
        "",
        "call_index",
        0,
        "name",
        "sequential",
        "depth",
        0,
        "type",
        "Sequential",
        "input",
        input,
        "output",
        "kind",
        "none",
        "parameters",
        "trainable",
        0,
        "frozen",
        0,
        "bytes",
        0,
        "shared",
        0,
        "buffers",
        "elements",
        0,
        "bytes",
        0,
        "shared",
        0,
        "metrics",
        "calls",
        ts_metric_new(
            TS_COMPLETE, ts_int(1), "calls", "module_call", "pytorch_hook"),
        "operator_flops",
        ts_metric_new(TS_COMPLETE,
                      ts_int(0),
                      "FLOPs",
                      "module_call_self",
                      "torchscan_dispatch_counter"));
    json_t *row1 = json_pack(
        "{s:s, s:i, s:s, s:i, s:s, s:O, s:{s:s}, s:{s:i, s:i, s:i, s:b}, "
        "s:{s:i, s:i, s:b}, s:{s:o, s:o}}",
        "path",
        "0",
        "call_index",
        0,
        "name",
        "0",
        "depth",
        1,
        "type",
        "Linear",
        "input",
        input,
        "output",
        "kind",
        "none",
        "parameters",
        "trainable",
        4 * in + 4,
        "frozen",
        0,
        "bytes",
        16 * in + 16,
        "shared",
        0,
        "buffers",
        "elements",
        0,
        "bytes",
        0,
        "shared",
        0,
        "metrics",
        "calls",
        ts_metric_new(
            TS_COMPLETE, ts_int(1), "calls", "module_call", "pytorch_hook"),
        "operator_flops",
        ts_metric_new(TS_COMPLETE,
                      ts_int(flops),
                      "FLOPs",
                      "module_call_self",
                      "torchscan_dispatch_counter"));
    json_t *report = json_pack(
        "{s:i, s:{s:s}, s:{s:s}, s:[o, o], s:o, s:{s:o, s:o}, s:[]}",
        "schema_version",
        1,
        "context",
        "model_type",
        "torch.nn.Sequential",
        "inputs",
        "source",
        "provided",
        "layers",
        row0,
        row1,
        "operator_flops",
        flop_report(flops, -1),
        "totals",
        "parameters",
        ts_metric_new(
            TS_COMPLETE, ts_int(4 * in + 4), "elements", "model", "pytorch"),
        "operator_flops",
        ts_metric_new(TS_COMPLETE,
                      ts_int(flops),
                      "FLOPs",
                      "workload",
                      "torchscan_dispatch_counter"),
        "diagnostics");
    json_object_update(json_object_get(report, "inputs"), input);
    json_decref(input);
    return report;
}

static json_t *
ok_status(const json_t *shape, int dst)
{
    return json_pack("{s:i, s:O}", "dst", dst, "ok", (json_t *)shape);
}

static void
test_shapes(void)
{
    ts_error err;
    json_t *a = analysis_report(3, 24), *b = analysis_report(3, 48);
    json_t *c = analysis_report(5, 40), *sa, *sb, *sc, *sf, *bad;

    ts_error_clear(&err);
    sa = ts_gather_shape(a, &err);
    sb = ts_gather_shape(b, &err);
    sc = ts_gather_shape(c, &err);
    sf = ts_gather_shape(json_object_get(a, "operator_flops"), &err);
    CHECK(sa != NULL && sb != NULL && sc != NULL && sf != NULL);
    if (sa == NULL || sf == NULL) {
        fprintf(stderr, "  %s\n", err.message);
        return;
    }
    CHECK_EQ_STR(json_string_value(json_object_get(sa, "kind")),
                 "AnalysisReport");
    CHECK_EQ_STR(json_string_value(json_object_get(sf, "kind")), "FlopReport");
    CHECK(json_is_null(json_object_get(sf, "layers")));
    CHECK_EQ_INT(strlen(json_string_value(json_object_get(sa, "layers"))), 16);
    /* the same model and inputs, other numbers: the same shape */
    CHECK(json_equal(sa, sb));
    /* a wider Linear: other parameter counts and inputs */
    CHECK(!json_equal(json_object_get(sa, "layers"),
                      json_object_get(sc, "layers")));
    CHECK(!json_equal(json_object_get(sa, "inputs"),
                      json_object_get(sc, "inputs")));

    /* not a report, or not a valid one */
    bad = json_pack("{s:s}", "not", "a report");
    CHECK(ts_gather_shape(bad, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK(strstr(err.message, "AnalysisReport (crawl_module)") != NULL);
    json_decref(bad);
    json_object_set_new(
        json_object_get(json_object_get(a, "totals"), "parameters"),
        "status",
        json_string("weird"));
    ts_error_clear(&err);
    CHECK(ts_gather_shape(a, &err) == NULL);
    CHECK(err.code == TS_EFORMAT);
    CHECK(strstr(err.message, "totals.parameters.status") != NULL);

    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(sa);
    json_decref(sb);
    json_decref(sc);
    json_decref(sf);
}

static void
test_check(void)
{
    ts_error err;
    char type[32];
    json_t *a = analysis_report(3, 24), *c = analysis_report(5, 40);
    json_t *sa = ts_gather_shape(a, &err), *sc = ts_gather_shape(c, &err);
    json_t *sf = ts_gather_shape(json_object_get(a, "operator_flops"), &err);
    json_t *ranks = json_pack("[i, i, i]", 4, 5, 6); /* a subgroup */
    json_t *statuses;

    statuses = json_pack(
        "[o, o, o]", ok_status(sa, 4), ok_status(sa, 4), ok_status(sa, 4));
    CHECK_EQ_INT(ts_gather_check(statuses, ranks, type, sizeof type, &err),
                 TS_OK);
    json_decref(statuses);

    /* the third rank's model differs: named by its global rank */
    statuses = json_pack(
        "[o, o, o]", ok_status(sa, 4), ok_status(sa, 4), ok_status(sc, 4));
    CHECK_EQ_INT(ts_gather_check(statuses, ranks, type, sizeof type, &err),
                 TS_EINVAL);
    CHECK_EQ_STR(type, "ValueError");
    CHECK_EQ_STR(err.message,
                 "gather_reports: the ranks' reports disagree in shape: rank "
                 "6's layer calls (module paths, types and parameter counts) "
                 "differ from rank 4's: a different model?");
    json_decref(statuses);

    /* another kind */
    statuses = json_pack(
        "[o, o, o]", ok_status(sa, 4), ok_status(sf, 4), ok_status(sa, 4));
    CHECK_EQ_INT(ts_gather_check(statuses, ranks, type, sizeof type, &err),
                 TS_EINVAL);
    CHECK(strstr(err.message,
                 "rank 5 passed a FlopReport, rank 4 an AnalysisReport")
          != NULL);
    json_decref(statuses);

    /* dst disagrees */
    statuses = json_pack(
        "[o, o, o]", ok_status(sa, 4), ok_status(sa, 5), ok_status(sa, 4));
    CHECK_EQ_INT(ts_gather_check(statuses, ranks, type, sizeof type, &err),
                 TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "gather_reports: the ranks disagree on dst: rank 5 passed "
                 "dst=5, rank 4 dst=4");
    json_decref(statuses);

    /* a rank's own error wins over any disagreement, with its type; an
     * unknown type reads RuntimeError */
    statuses = json_pack("[o, o, {s:{s:s, s:s}}]",
                         ok_status(sa, 4),
                         ok_status(sc, 4),
                         "error",
                         "type",
                         "TypeError",
                         "message",
                         "dst must be an int");
    CHECK_EQ_INT(ts_gather_check(statuses, ranks, type, sizeof type, &err),
                 TS_EINVAL);
    CHECK_EQ_STR(type, "TypeError");
    CHECK_EQ_STR(err.message,
                 "gather_reports failed on rank 6: TypeError: dst must be an "
                 "int");
    json_decref(statuses);
    statuses = json_pack(
        "[{s:{s:s, s:s}}]", "error", "type", "MemoryError", "message", "");
    CHECK_EQ_INT(ts_gather_check(statuses, ranks, type, sizeof type, &err),
                 TS_EINVAL);
    CHECK_EQ_STR(type, "RuntimeError");
    json_decref(statuses);

    /* not statuses at all */
    statuses = json_pack("[{s:i}]", "dst", 0);
    CHECK_EQ_INT(ts_gather_check(statuses, ranks, type, sizeof type, &err),
                 TS_EFORMAT);
    json_decref(statuses);
    statuses = json_array();
    CHECK_EQ_INT(ts_gather_check(statuses, ranks, type, sizeof type, &err),
                 TS_EFORMAT);
    json_decref(statuses);

    json_decref(ranks);
    json_decref(a);
    json_decref(c);
    json_decref(sa);
    json_decref(sc);
    json_decref(sf);
}

static json_int_t
rank_of(const json_t *stats, const char *which)
{
    return json_integer_value(
        json_object_get(json_object_get(stats, which), "rank"));
}

static double
value_of(const json_t *stats, const char *which)
{
    return json_number_value(
        json_object_get(json_object_get(stats, which), "value"));
}

static void
test_statistics(void)
{
    ts_error err;
    json_t *ranks = json_pack("[i, i, i, i]", 0, 1, 2, 3), *reports, *g;
    const json_t *total, *mm, *moved, *latency, *rate;

    /* FLOPs 300, 100, 400, 100: min 100 at rank 1 (the lower of the two),
     * sorted (100 r1, 100 r3, 300 r0, 400 r2): lower median index 1 = 100
     * at rank 3, max 400 at rank 2, sum 900. Rank 3 ran no all_reduce: 0
     * bytes there; 64 + 64 + 32 = 160 bytes moved. */
    reports = json_pack("[o, o, o, o]",
                        flop_report(300, 64),
                        flop_report(100, 64),
                        flop_report(400, 32),
                        flop_report(100, -1));
    ts_error_clear(&err);
    g = gather_checked(reports, ranks, true, &err);
    CHECK(g != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(
                     json_object_get(g, "context"), "report_type")),
                 "FlopReport");
    CHECK(json_equal(json_object_get(g, "reports"), reports));
    total = json_object_get(json_object_get(g, "operator_flops"), "total");
    CHECK_EQ_STR(json_string_value(json_object_get(total, "status")),
                 "complete");
    CHECK_EQ_INT(rank_of(total, "min"), 1);
    CHECK_EQ_INT(value_of(total, "min"), 100);
    CHECK_EQ_INT(rank_of(total, "median"), 3);
    CHECK_EQ_INT(value_of(total, "median"), 100);
    CHECK_EQ_INT(rank_of(total, "max"), 2);
    CHECK_EQ_INT(value_of(total, "max"), 400);
    CHECK_EQ_INT(json_integer_value(json_object_get(total, "sum")), 900);
    CHECK_EQ_INT(json_integer_value(
                     json_array_get(json_object_get(total, "values"), 2)),
                 400);
    mm = json_object_get(
        json_object_get(json_object_get(g, "operator_flops"), "by_operator"),
        "aten.mm");
    CHECK_EQ_INT(json_integer_value(json_object_get(mm, "sum")), 900);
    moved = json_object_get(
        json_object_get(json_object_get(g, "operator_flops"), "collectives"),
        "c10d.allreduce_");
    CHECK_EQ_INT(json_integer_value(json_object_get(moved, "sum")), 160);
    CHECK_EQ_INT(rank_of(moved, "min"), 3);
    CHECK_EQ_INT(value_of(moved, "min"), 0);
    CHECK_EQ_STR(json_string_value(json_object_get(moved, "unit")), "bytes");
    /* the ranks' collective_bytes totals: rank 3 has none, so not complete */
    moved = json_object_get(json_object_get(g, "operator_flops"),
                            "collective_bytes");
    CHECK_EQ_STR(json_string_value(json_object_get(moved, "status")),
                 "partial");
    CHECK(json_is_null(json_object_get(moved, "median")));
    CHECK(json_is_null(json_object_get(moved, "sum")));
    CHECK(json_is_null(
        json_array_get(json_object_get(moved, "known_values"), 3)));
    json_decref(g);
    json_decref(reports);

    /* latencies 0.5, 0.25, 0.75, 1.0 s: the slowest is rank 3, the median
     * of 0.25 (r1), 0.5 (r0), 0.75 (r2), 1.0 (r3) is 0.5 at rank 0; seconds
     * and rates have no sum. */
    reports = json_pack("[o, o, o, o]",
                        benchmark_report(0.5, "complete"),
                        benchmark_report(0.25, "complete"),
                        benchmark_report(0.75, "complete"),
                        benchmark_report(1.0, "complete"));
    g = gather_checked(reports, ranks, true, &err);
    CHECK(g != NULL);
    latency = json_object_get(json_object_get(g, "totals"), "latency");
    CHECK_EQ_INT(rank_of(latency, "max"), 3);
    CHECK_EQ_REAL(value_of(latency, "max"), 1.0);
    CHECK_EQ_INT(rank_of(latency, "median"), 0);
    CHECK_EQ_REAL(value_of(latency, "median"), 0.5);
    CHECK_EQ_INT(rank_of(latency, "min"), 1);
    CHECK(json_is_null(json_object_get(latency, "sum")));
    rate = json_object_get(json_object_get(g, "totals"), "throughput");
    CHECK_EQ_INT(rank_of(rate, "min"), 3); /* the slowest rank's rate */
    CHECK(json_is_null(json_object_get(rate, "sum")));
    CHECK(json_object_get(g, "operator_flops") == NULL);
    CHECK(json_object_get(g, "layers") == NULL);
    json_decref(g);
    json_decref(reports);

    /* one rank's latency unavailable: partial, no statistics */
    reports = json_pack("[o, o]",
                        benchmark_report(0.5, "complete"),
                        benchmark_report(0.5, "unavailable"));
    json_array_remove(ranks, 3);
    json_array_remove(ranks, 2);
    g = gather_checked(reports, ranks, true, &err);
    latency = json_object_get(json_object_get(g, "totals"), "latency");
    CHECK_EQ_STR(json_string_value(json_object_get(latency, "status")),
                 "partial");
    CHECK(json_is_null(json_object_get(latency, "min")));
    CHECK(json_is_null(json_array_get(json_object_get(latency, "values"), 1)));
    json_decref(g);
    json_decref(reports);

    /* an odd count: the middle one; layer calls of AnalysisReports */
    reports = json_pack("[o, o, o]",
                        analysis_report(3, 24),
                        analysis_report(3, 12),
                        analysis_report(3, 36));
    json_array_append_new(ranks, json_integer(2));
    g = gather_checked(reports, ranks, true, &err);
    CHECK(g != NULL);
    total = json_object_get(json_object_get(g, "totals"), "operator_flops");
    CHECK_EQ_INT(rank_of(total, "median"), 0);
    CHECK_EQ_INT(value_of(total, "median"), 24);
    CHECK_EQ_INT(json_integer_value(json_object_get(total, "sum")), 72);
    {
        const json_t *layers = json_object_get(g, "layers");
        const json_t *row = json_array_get(layers, 1);
        CHECK_EQ_INT(json_array_size(layers), 2);
        CHECK_EQ_STR(json_string_value(json_object_get(row, "path")), "0");
        CHECK_EQ_INT(json_integer_value(json_object_get(
                         json_object_get(json_object_get(row, "metrics"),
                                         "operator_flops"),
                         "sum")),
                     72);
        CHECK_EQ_INT(rank_of(json_object_get(json_object_get(row, "metrics"),
                                             "operator_flops"),
                             "max"),
                     2);
    }
    json_decref(g);

    /* a metric whose unit differs across ranks is refused */
    json_object_set_new(
        json_object_get(json_object_get(json_array_get(reports, 2), "totals"),
                        "parameters"),
        "unit",
        json_string("bytes"));
    CHECK(gather_checked(reports, ranks, true, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "gather_reports: metric 'totals.parameters' has "
                 "incompatible unit across ranks");
    json_decref(reports);

    /* reports of different kinds are refused */
    reports = json_pack(
        "[o, o]", flop_report(1, -1), benchmark_report(1, "complete"));
    CHECK(gather_checked(reports, ranks, true, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    json_decref(reports);
    json_decref(ranks);
}

int
main(void)
{
    test_shapes();
    test_check();
    test_statistics();
    printf(
        "gatherings and trees written through failing emitters: %ld, "
        "callbacks failed: %ld\n",
        fault_writers,
        fault_runs);
    return ts_test_report();
}
