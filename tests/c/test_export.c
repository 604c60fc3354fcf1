/* Per-layer exports (torchscan/export.h): CSV, Markdown and folded stacks of
 * tests/c/export_report.json, a report that passes the report check and
 * holds what the formats must handle: repeated calls of one module, a
 * partial row, an unavailable row, a subtree estimate whose covered child
 * holds no module_flops, a real value, and text that needs quoting or
 * escaping. Every expected text is written out by hand from the fixture. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/export.h"
#include "torchscan/report_check.h"

static json_t *
fixture(void)
{
    json_error_t jerr;
    json_t *report =
        json_load_file(TS_SOURCE_ROOT "/tests/c/export_report.json", 0, &jerr);
    if (report == NULL) {
        fprintf(stderr, "export_report.json: %s\n", jerr.text);
    }
    return report;
}

static char *export(const json_t *report,
                    ts_export_format format,
                    int metric,
                    ts_export_stats *stats)
{
    ts_export_options opt = {format, metric};
    ts_error err;
    char *text;
    ts_error_clear(&err);
    text = ts_export_report(report, &opt, stats, &err);
    if (text == NULL) {
        fprintf(stderr, "export failed: %s\n", err.message);
    }
    return text;
}

static void
test_names(void)
{
    CHECK_EQ_INT(ts_export_metric_parse("module_flops"),
                 TS_EXPORT_MODULE_FLOPS);
    CHECK_EQ_INT(ts_export_metric_parse("parameter_bytes"),
                 TS_EXPORT_PARAMETER_BYTES);
    CHECK_EQ_INT(ts_export_metric_parse("flops"), -1);
    CHECK_EQ_INT(ts_export_metric_parse(NULL), -1);
    CHECK_EQ_STR(ts_export_metric_name(TS_EXPORT_OPERATOR_FLOPS),
                 "operator_flops");
    CHECK(ts_export_metric_name(TS_EXPORT_NMETRICS) == NULL);
    CHECK(ts_export_metric_name(-1) == NULL);
    CHECK_EQ_INT(ts_export_format_parse("folded"), TS_EXPORT_FOLDED);
    CHECK_EQ_INT(ts_export_format_parse("json"), -1);
    CHECK_EQ_STR(ts_export_format_name(TS_EXPORT_MARKDOWN), "markdown");
    CHECK(ts_export_format_name(3) == NULL);
}

static void
test_folded(const json_t *report)
{
    ts_export_stats stats;
    char *text = export(report, TS_EXPORT_FOLDED, -1, &stats);
    /* module_flops: the two calls of features.0 summed (100 + 100); the
     * partial ReLU marked; blk's subtree estimate (30) stands for blk.a,
     * which holds none; head (unavailable) left out; 2.6 rounded to 3; the
     * root and features hold no module_flops of their own. */
    CHECK_EQ_STR(text,
                 "net;features;features.0 200\n"
                 "net;features;features.1 [partial] 7\n"
                 "net;blk 30\n"
                 "net;odd%3Bx%25y 3\n");
    CHECK_EQ_INT(stats.rows, 5);
    CHECK_EQ_INT(stats.left_out, 1);
    CHECK_EQ_INT(stats.without, 3);
    CHECK_EQ_INT(stats.rounded, 1);
    CHECK_EQ_INT(stats.partial, 1);
    free(text);

    /* operator_flops: every row holds them (the parents' own operators);
     * features and blk ran none themselves (complete 0: nothing drawn) */
    text = export(report, TS_EXPORT_FOLDED, TS_EXPORT_OPERATOR_FLOPS, &stats);
    CHECK_EQ_STR(text,
                 "net 5\n"
                 "net;features;features.0 200\n"
                 "net;features;features.1 [partial] 7\n"
                 "net;blk;blk.a 30\n"
                 "net;head 2\n"
                 "net;odd%3Bx%25y 1\n");
    CHECK_EQ_INT(stats.left_out, 0);
    CHECK_EQ_INT(stats.without, 0);
    free(text);

    /* parameters: attributed once, to the first call (features.0 call 1 is
     * shared and adds 0) */
    text = export(report, TS_EXPORT_FOLDED, TS_EXPORT_PARAMETERS, &stats);
    CHECK_EQ_STR(text, "net;features;features.0 12\nnet;blk;blk.a 6\n");
    free(text);
    text = export(report, TS_EXPORT_FOLDED, TS_EXPORT_PARAMETER_BYTES, NULL);
    CHECK_EQ_STR(text, "net;features;features.0 48\nnet;blk;blk.a 24\n");
    free(text);

    /* dmas: 70 + 70, the partial 3; blk holds none, head is unavailable */
    text = export(report, TS_EXPORT_FOLDED, TS_EXPORT_DMAS, &stats);
    CHECK_EQ_STR(text,
                 "net;features;features.0 140\n"
                 "net;features;features.1 [partial] 3\n");
    CHECK_EQ_INT(stats.left_out, 1);
    free(text);
}

static void
test_csv(const json_t *report)
{
    ts_export_stats stats;
    char *text = export(report, TS_EXPORT_CSV, TS_EXPORT_MODULE_FLOPS, &stats);
    CHECK_EQ_STR(text,
                 "path,type,call_index,depth,module_flops_status,"
                 "module_flops_value,module_flops_known_value\r\n"
                 ",Net,0,0,,,\r\n"
                 "features,Sequential,0,1,,,\r\n"
                 "features.0,Conv2d,0,2,complete,100,100\r\n"
                 "features.1,ReLU,0,2,partial,,7\r\n"
                 "features.0,Conv2d,1,2,complete,100,100\r\n"
                 "blk,Block,0,1,complete,30,30\r\n"
                 "blk.a,Linear,0,2,,,\r\n"
                 "head,Linear,0,1,unavailable,,\r\n"
                 "odd;x%y,\"T|\"\"q\"\",\",0,1,complete,2.6,2.6\r\n");
    CHECK_EQ_INT(stats.rows, 9);
    CHECK_EQ_INT(stats.partial, 1);
    free(text);

    text = export(report, TS_EXPORT_CSV, TS_EXPORT_PARAMETERS, NULL);
    CHECK(text != NULL
          && strstr(text, "\r\nfeatures.0,Conv2d,0,2,complete,12,12\r\n")
                 != NULL);
    CHECK(text != NULL
          && strstr(text, "\r\nfeatures.0,Conv2d,1,2,complete,0,0\r\n")
                 != NULL);
    free(text);

    /* every metric: 4 + 6 * 3 columns */
    text = export(report, TS_EXPORT_CSV, -1, NULL);
    CHECK(text != NULL
          && strncmp(text,
                     "path,type,call_index,depth,module_flops_status,"
                     "module_flops_value,module_flops_known_value,"
                     "macs_status,macs_value,macs_known_value,dmas_status,",
                     118)
                 == 0);
    if (text != NULL) {
        size_t commas = 0;
        for (const char *p = text; *p != '\r'; p++) {
            commas += *p == ',';
        }
        CHECK_EQ_INT(commas, 4 + 6 * 3 - 1);
        CHECK(strstr(text,
                     "\r\nfeatures.1,ReLU,0,2,partial,,7,complete,0,0,"
                     "partial,,3,partial,,7,complete,0,0,complete,0,0\r\n")
              != NULL);
    }
    free(text);
}

static void
test_markdown(const json_t *report)
{
    char *text = export(report, TS_EXPORT_MARKDOWN, TS_EXPORT_MACS, NULL);
    CHECK_EQ_STR(text,
                 "| path | type | call_index | depth | macs |\n"
                 "| --- | --- | ---: | ---: | ---: |\n"
                 "|  | Net | 0 | 0 |  |\n"
                 "| features | Sequential | 0 | 1 |  |\n"
                 "| features.0 | Conv2d | 0 | 2 | 50 |\n"
                 "| features.1 | ReLU | 0 | 2 | 0 |\n"
                 "| features.0 | Conv2d | 1 | 2 | 50 |\n"
                 "| blk | Block | 0 | 1 |  |\n"
                 "| blk.a | Linear | 0 | 2 | 4 |\n"
                 "| head | Linear | 0 | 1 | unavailable |\n"
                 "| odd;x%y | T\\|\"q\", | 0 | 1 | 1.0 |\n");
    free(text);
    text = export(report, TS_EXPORT_MARKDOWN, TS_EXPORT_DMAS, NULL);
    CHECK(text != NULL
          && strstr(text, "| features.1 | ReLU | 0 | 2 | >= 3 (partial) |\n")
                 != NULL);
    free(text);
}

static void
test_escapes_and_errors(void)
{
    ts_export_options opt = {TS_EXPORT_FOLDED, TS_EXPORT_MODULE_FLOPS};
    ts_error err;
    char *text;
    json_t *odd =
        json_pack("{s:[{s:s, s:i, s:s, s:s, s:{s:{s:s, s:i, s:i}}}]}",
                  "layers",
                  "path",
                  "",
                  "call_index",
                  0,
                  "name",
                  "a\nb_*|<",
                  "type",
                  "T",
                  "metrics",
                  "module_flops",
                  "status",
                  "complete",
                  "value",
                  4,
                  "known_value",
                  4);
    json_t *big = json_pack(
        "{s:[{s:s, s:i, s:{s:{s:s, s:I, s:I}}},"
        "{s:s, s:i, s:{s:{s:s, s:I, s:I}}}]}",
        "layers",
        "path",
        "x",
        "call_index",
        0,
        "metrics",
        "module_flops",
        "status",
        "complete",
        "value",
        (json_int_t)INT64_MAX,
        "known_value",
        (json_int_t)INT64_MAX,
        "path",
        "x",
        "call_index",
        1,
        "metrics",
        "module_flops",
        "status",
        "complete",
        "value",
        (json_int_t)INT64_MAX,
        "known_value",
        (json_int_t)INT64_MAX);
    json_t *empty = json_pack("{s:[]}", "layers");
    json_t *no_layers = json_object();
    ts_error_clear(&err);

    /* a control character in the root's name is %XX; the rest is kept */
    text = ts_export_report(odd, &opt, NULL, &err);
    CHECK_EQ_STR(text, "a%0Ab_*|< 4\n");
    free(text);
    opt.format = TS_EXPORT_MARKDOWN;
    text = ts_export_report(odd, &opt, NULL, &err);
    CHECK(text != NULL && strstr(text, "\n|  | T | 0 |  | 4 |\n") != NULL);
    free(text);
    json_object_set_new(json_array_get(json_object_get(odd, "layers"), 0),
                        "path",
                        json_string("a|b\\c\nd_e*f[g]<h>&`"));
    text = ts_export_report(odd, &opt, NULL, &err);
    CHECK(text != NULL
          && strstr(text,
                    "\n| a\\|b\\\\c&#x0A;d\\_e\\*f\\[g\\]\\<h\\>\\&\\` | T |")
                 != NULL);
    free(text);
    opt.format = TS_EXPORT_CSV;
    text = ts_export_report(odd, &opt, NULL, &err);
    CHECK(
        text != NULL
        && strstr(text, "\r\n\"a|b\\c\nd_e*f[g]<h>&`\",T,0,,complete,4,4\r\n")
               != NULL);
    free(text);

    opt.format = TS_EXPORT_FOLDED;
    CHECK(ts_export_report(big, &opt, NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EOVERFLOW);
    text = ts_export_report(empty, &opt, NULL, &err);
    CHECK_EQ_STR(text, "");
    free(text);
    CHECK(ts_export_report(no_layers, &opt, NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK(ts_export_report(empty, NULL, NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    opt.metric = TS_EXPORT_NMETRICS;
    CHECK(ts_export_report(empty, &opt, NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    json_decref(odd);
    json_decref(big);
    json_decref(empty);
    json_decref(no_layers);
}

int
main(void)
{
    json_t *report = fixture();
    ts_error err;
    CHECK(report != NULL);
    if (report != NULL) {
        ts_error_clear(&err);
        /* the fixture is a report the CLI would accept */
        CHECK_EQ_INT(ts_analysis_report_check(report, "fixture", &err), TS_OK);
        test_folded(report);
        test_csv(report);
        test_markdown(report);
        json_decref(report);
    }
    test_names();
    test_escapes_and_errors();
    return ts_test_report();
}
