/* The `torchscan` command: works on saved reports without Python or torch,
 * and measures a command's peak RSS.
 *
 *   torchscan table REPORT.json [--max-depth N] [--wrap mid|end|none]
 *                               [--receptive-field [--effective-rf-stats]]
 *                               [-o FILE]
 *   torchscan compare BEFORE.json AFTER.json [-o FILE]
 *   torchscan export REPORT.json --format csv|markdown|folded [--metric M]
 *                                [--name NAME] [-o FILE]
 *   torchscan render REPORT.json [--format html|svg] [--before B.json]
 *                                [--metric M] [--title T] [--name NAME]
 *                                [-o FILE]
 *   torchscan rss [--timeout S] [-o FILE] [--] COMMAND [ARG...]
 *   torchscan inspect FILE... [--json] [--against MODEL_REPORT.json]
 *                             [--max-depth N] [-o FILE]
 *   torchscan --help | --version;  torchscan COMMAND --help
 *
 * This file is thin on purpose: argv -> engine -> exit status. Each command
 * is one entry of `commands` (its options, its help text) and one cmd_*
 * function; the parser and every --help text are generated from those
 * entries (src/cli/cli.c), so the help cannot name an option the parser
 * refuses. The formats themselves (table, JSON text, exports, the RSS
 * supervision) are the engine's.
 *
 * Every report read is checked first (torchscan/report_check.h): a bad one
 * is refused with a message naming the file, the report's name in a
 * collection and where inside it, as "torchscan: a.json: cnn:
 * layers[3].depth: ...". `-` names standard input for a report and
 * standard output for -o. Data goes to standard output (or -o), messages to
 * standard error. -o FILE is written only once the output is complete, and
 * a regular file is replaced whole or not at all.
 *
 * Exit status: 0 on success, 1 on a bad report or an output error, 2 on bad
 * usage. rss exits with the command's status (see its help). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "torchscan/checkpoint.h"
#include "torchscan/diff.h"
#include "torchscan/export.h"
#include "torchscan/json_text.h"
#include "torchscan/render.h"
#include "torchscan/report_check.h"
#include "torchscan/rss.h"
#include "torchscan/table.h"

#ifndef TS_VERSION
#define TS_VERSION "unknown"
#endif

#define RSS_FAILED 125 /* rss: torchscan itself failed (as GNU timeout) */

/* ---- commands and options ---- */

static int cmd_table(const cli_command *cmd, const cli_args *args);
static int cmd_compare(const cli_command *cmd, const cli_args *args);
static int cmd_export(const cli_command *cmd, const cli_args *args);
static int cmd_render(const cli_command *cmd, const cli_args *args);
static int cmd_rss(const cli_command *cmd, const cli_args *args);
static int cmd_inspect(const cli_command *cmd, const cli_args *args);

#define EXIT_NO_MATCH                                     \
    3 /* inspect --against: the checkpoint does not match \
       */

#define OUTPUT_OPTION                                                  \
    {                                                                  \
        "--output", "-o", "FILE",                                      \
            "write to FILE instead of standard output ('-': standard " \
            "output); a regular file is replaced whole or not at all"  \
    }

#define REPORT_EXITS                                                     \
    "0 done; 1 a bad report, or an output that could not be written; 2 " \
    "bad usage."

/* Index of each command's options in its table (cmd_* read them). */
enum {
    TABLE_MAX_DEPTH,
    TABLE_WRAP,
    TABLE_RF,
    TABLE_RF_STATS,
    TABLE_OUTPUT
};
enum {
    COMPARE_OUTPUT
};
enum {
    EXPORT_FORMAT,
    EXPORT_METRIC,
    EXPORT_NAME,
    EXPORT_OUTPUT
};
enum {
    RENDER_FORMAT,
    RENDER_BEFORE,
    RENDER_METRIC,
    RENDER_TITLE,
    RENDER_NAME,
    RENDER_OUTPUT
};
enum {
    RSS_TIMEOUT,
    RSS_OUTPUT
};
enum {
    INSPECT_JSON,
    INSPECT_AGAINST,
    INSPECT_MAX_DEPTH,
    INSPECT_OUTPUT
};

static const cli_command commands[] = {
    {"table",
     "REPORT.json",
     "print the summary table of a saved report",
     "Prints the summary table of a saved AnalysisReport, as summary() "
     "prints it. A file holding a collection of named reports ({\"name\": "
     "report, ...}, as the demo of the Python package writes) prints each "
     "under "
     "\"== name ==\". REPORT.json may be '-' (standard input). The report "
     "is checked first, as compare_reports checks it.",
     REPORT_EXITS " A --max-depth deeper than the model is bad usage.",
     {
         {"--max-depth", NULL, "N", "print rows up to depth N (0: the root)"},
         {"--wrap",
          NULL,
          "MODE",
          "how long names are cut: mid (default), end or none"},
         {"--receptive-field", NULL, NULL, "add the receptive field column"},
         {"--effective-rf-stats",
          NULL,
          NULL,
          "with --receptive-field, add the effective stride and padding "
          "columns too"},
         OUTPUT_OPTION,
     },
     1,
     1,
     false,
     EXIT_USAGE,
     cmd_table},
    {"compare",
     "BEFORE.json AFTER.json",
     "diff two saved reports (or collections, name by name)",
     "Prints exactly what json.dumps(compare_reports(before, after), "
     "indent=2) gives: the totals and the changed layer metrics, a delta "
     "only where both sides are complete. Two collections of named reports "
     "are compared name by name. One of the files may be '-' (standard "
     "input).",
     REPORT_EXITS,
     {OUTPUT_OPTION},
     2,
     2,
     false,
     EXIT_USAGE,
     cmd_compare},
    {"export",
     "REPORT.json",
     "write a report's layer rows as CSV, Markdown or folded stacks",
     "Writes the layer rows of a saved report for other tools. "
     "REPORT.json may be '-' (standard input).\n"
     "\n"
     "csv: a header, then one line per layer call: path, type, call_index, "
     "depth, and for each metric M the fields M_status, M_value and "
     "M_known_value (M_value only when complete; M_known_value also when "
     "partial, where it is a lower bound). RFC 4180: lines end with CRLF, "
     "fields with a "
     "comma, quote or line break are quoted. A metric the row does not hold "
     "leaves its three fields empty.\n"
     "\n"
     "markdown: the same rows as a Markdown table, one cell per metric: the "
     "value, \">= N (partial)\", \"unavailable\", or empty; markup "
     "characters and | in names are backslash-escaped.\n"
     "\n"
     "folded: flame-graph folded stacks, as flamegraph.pl and speedscope "
     "read them: one line \"ROOT;a;a.b;a.b.c COUNT\" per module path. ROOT "
     "is the root row's name; the other frames are the prefixes of the "
     "path. COUNT is the metric's self (exclusive) cost of that module's "
     "calls: the number its rows record, which is additive. A leaf records "
     "its estimate; a module records only its own work, or its whole "
     "subtree when a handler estimated the subtree (metric_ownership "
     "\"subtree\"), and then the rows it covers record nothing "
     "(metric_owners), so nothing is counted twice; operator_flops are the "
     "operators a call ran itself; parameters are the tensors first met by "
     "a call. So the lines of a complete report sum to its total. A partial "
     "row is written with its lower bound, its last frame marked with the "
     "suffix [partial]; an unavailable row is left out, and the number left "
     "out is "
     "printed on standard error; a complete 0 has nothing to draw and is not "
     "written. Counts are integers (a fractional one is "
     "rounded, and said so); %, ; and control characters in frames are "
     "written %XX.\n"
     "\n"
     "Metrics: module_flops, macs, dmas, operator_flops, parameters, "
     "parameter_bytes. csv and markdown write all of them unless --metric "
     "names one; folded writes --metric, module_flops by default. A file "
     "holding a collection of named reports needs --name.",
     REPORT_EXITS,
     {
         {"--format", NULL, "FORMAT", "csv, markdown or folded (required)"},
         {"--metric",
          NULL,
          "M",
          "the metric to write (folded: default module_flops)"},
         {"--name",
          NULL,
          "NAME",
          "the report to export from a collection of named reports"},
         OUTPUT_OPTION,
     },
     1,
     1,
     false,
     EXIT_USAGE,
     cmd_export},
    {"render",
     "REPORT.json",
     "render a saved report as an offline HTML page or SVG",
     "Writes the page render_report(report, format=..., before=..., "
     "title=..., metric=...) gives, byte for byte: the same C code. An "
     "AnalysisReport renders as one self-contained HTML page (no network "
     "request, every number readable without script) or, with --format "
     "svg, as a standalone SVG of one metric view. --before B.json adds "
     "the comparison with an earlier report (execution deltas withheld, "
     "with reasons, when the inputs or the recorded context differ). A "
     "BenchmarkReport or BenchmarkComparison renders as HTML only. "
     "REPORT.json may be '-' (standard input); a file holding a collection "
     "of named reports needs --name (and a --before collection is read "
     "under the same name). Every report is checked first; a bad one is "
     "refused naming the file and where inside it.",
     REPORT_EXITS,
     {
         {"--format", NULL, "FORMAT", "html (default) or svg"},
         {"--before",
          NULL,
          "FILE",
          "an earlier AnalysisReport to compare with"},
         {"--metric",
          NULL,
          "M",
          "the view shown first (html) or drawn (svg): module_flops "
          "(default), macs, dmas, parameters or parameter_bytes"},
         {"--title",
          NULL,
          "TEXT",
          "the page title (default \"TorchScan analysis\")"},
         {"--name",
          NULL,
          "NAME",
          "the report to render from a collection of named reports"},
         OUTPUT_OPTION,
     },
     1,
     1,
     false,
     EXIT_USAGE,
     cmd_render},
    {"rss",
     "[--] COMMAND [ARG...]",
     "run a command and print its peak resident set size",
     "Runs COMMAND (looked up in PATH) in a new process group under the C "
     "supervision that torchscan.process.measure_peak_rss uses, reaps it "
     "with wait4 and prints its peak resident set size (ru_maxrss) as a "
     "MetricResult in JSON: unit bytes, scope child_process_lifetime, "
     "method wait4.ru_maxrss; status complete when the command ran to its "
     "end (whatever its exit status), partial (a lower bound) when a signal "
     "or the timeout ended it, unavailable when it could not be started. "
     "The command inherits the environment and the standard streams (its "
     "output comes before the JSON; -o keeps them apart). Being its own "
     "process group, it must not read from the terminal. On the timeout, "
     "or SIGINT, SIGTERM or SIGHUP sent to torchscan, the whole process "
     "group is killed and reaped; what is left of the group when the "
     "command ends is killed too. The first operand ends the options.",
     "the command's exit status; 128 + N when signal N ended it (or "
     "interrupted torchscan); 124 on timeout; 126 when the command was "
     "found but could not be run; 127 when it was not found; 125 when "
     "torchscan itself failed (bad usage, an output it could not write).",
     {
         {"--timeout",
          NULL,
          "S",
          "kill the command's process group after S seconds (a positive "
          "number)"},
         OUTPUT_OPTION,
     },
     1,
     -1,
     true,
     RSS_FAILED,
     cmd_rss},
    {"inspect",
     "FILE...",
     "show what a checkpoint file holds, without executing anything",
     "Reads the headers of checkpoint files and prints what they hold: the "
     "files, the tensors per module prefix as a tree, the dtypes (elements "
     "and bytes), shared storages (tied weights, views), pickle globals "
     "outside the allowlist, the totals and diagnostics. Formats, "
     "recognised by content: safetensors, a sharded safetensors index "
     "(model.safetensors.index.json; its shards are read from the same "
     "folder), torch.save files (zip and legacy) and GGUF (v2, v3). Nothing "
     "a file names is ever imported or called: a pickle is read by a "
     "symbolic machine, and a global outside the list torch.load(weights_"
     "only=True) allows is reported by name. Only headers are read, never "
     "the tensors' data. Several files print one table each, under \"== "
     "FILE ==\".\n"
     "\n"
     "--json writes the report (report_type \"checkpoint\") as JSON "
     "instead, or {\"FILE\": report, ...} for several files. --against "
     "MODEL_REPORT.json checks the tensors against a model instead: a "
     "checkpoint report of the model's own checkpoint (or a state_dict "
     "description) name by name, or an AnalysisReport module by module "
     "(elements of each layer path's parameters and buffers), and prints "
     "the missing, unexpected and mismatched entries (the match result as "
     "JSON with --json).",
     "0 done (with --against: the checkpoint matches); 1 a file that cannot "
     "be read, is malformed or of an unknown format (the message says "
     "where), or an output that could not be written; 2 bad usage; 3 with "
     "--against: the checkpoint does not match.",
     {
         {"--json", NULL, NULL, "write the report as JSON"},
         {"--against",
          NULL,
          "FILE",
          "check the tensors against a model report (AnalysisReport, "
          "checkpoint report or state_dict description)"},
         {"--max-depth",
          NULL,
          "N",
          "print module prefixes up to depth N (0: the whole checkpoint)"},
         OUTPUT_OPTION,
     },
     1,
     -1,
     false,
     EXIT_USAGE,
     cmd_inspect},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* ---- table ---- */

static int
parse_depth(const char *arg, int *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(arg, &end, 10);
    if (end == arg || *end != '\0' || arg[0] == '-' || arg[0] == '+'
        || errno != 0 || v < 0 || v > INT_MAX) {
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int
print_table(FILE *out,
            const json_t *report,
            const char *name,
            const ts_table_options *opt)
{
    ts_error err;
    char *text;
    ts_error_clear(&err);
    text = ts_format_summary(report, opt, &err);
    if (text == NULL) {
        if (name != NULL) {
            cli_error("%s: %s", name, err.message);
        }
        else {
            cli_error("%s", err.message);
        }
        /* a --max-depth deeper than the model is a usage error */
        return err.code == TS_EINVAL ? EXIT_USAGE : EXIT_BAD;
    }
    if (name != NULL) {
        fprintf(out, "== %s ==\n", name);
    }
    fputs(text, out);
    fputc('\n', out);
    free(text);
    return 0;
}

static int
cmd_table(const cli_command *cmd, const cli_args *args)
{
    ts_table_options opt = {TS_WRAP_MID, false, false, -1};
    const char *wrap = args->values[TABLE_WRAP];
    const char *path = args->operands[0];
    cli_output out;
    json_t *doc;
    int rc = 0;
    if (args->values[TABLE_MAX_DEPTH] != NULL
        && parse_depth(args->values[TABLE_MAX_DEPTH], &opt.max_depth) != 0) {
        return cli_usage_error(cmd, "--max-depth is a non-negative integer");
    }
    if (wrap != NULL) {
        if (strcmp(wrap, "mid") == 0) {
            opt.wrap_mode = TS_WRAP_MID;
        }
        else if (strcmp(wrap, "end") == 0) {
            opt.wrap_mode = TS_WRAP_END;
        }
        else if (strcmp(wrap, "none") == 0) {
            opt.wrap_mode = TS_WRAP_NONE;
        }
        else {
            return cli_usage_error(cmd, "--wrap is mid, end or none");
        }
    }
    opt.receptive_field = args->values[TABLE_RF] != NULL;
    opt.effective_rf_stats = args->values[TABLE_RF_STATS] != NULL;
    if (opt.effective_rf_stats && !opt.receptive_field) {
        return cli_usage_error(cmd,
                               "--effective-rf-stats needs --receptive-field");
    }
    doc = cli_load_checked(path);
    if (doc == NULL) {
        return EXIT_BAD;
    }
    if (!cli_output_open(&out, args->values[TABLE_OUTPUT])) {
        json_decref(doc);
        return EXIT_BAD;
    }
    errno = 0;
    if (cli_is_collection(doc)) {
        const char *key;
        json_t *report;
        bool first = true;
        json_object_foreach(doc, key, report)
        {
            if (!first) {
                fputc('\n', out.fp);
            }
            first = false;
            rc = print_table(out.fp, report, key, &opt);
            if (rc != 0) {
                break;
            }
        }
    }
    else {
        rc = print_table(out.fp, doc, NULL, &opt);
    }
    json_decref(doc);
    if (rc != 0 && out.fp != stdout) {
        cli_output_discard(&out); /* a file gets all the tables or none */
        return rc;
    }
    return cli_output_commit(&out, rc, EXIT_BAD);
}

/* ---- compare ---- */

/* The comparison of two reports, or of two collections name by name. */
static json_t *
compare(const json_t *before, const json_t *after)
{
    ts_error err;
    json_t *diff;
    bool collections = cli_is_collection(before);
    if (collections != cli_is_collection(after)) {
        cli_error(
            "one file holds a collection of reports, the other a single "
            "report");
        return NULL;
    }
    ts_error_clear(&err);
    if (!collections) {
        diff = ts_compare_reports(before, after, &err);
        if (diff == NULL) {
            cli_error("%s", err.message);
        }
        return diff;
    }
    const char *key;
    json_t *report;
    if (json_object_size(before) != json_object_size(after)) {
        cli_error("the collections hold different reports");
        return NULL;
    }
    diff = json_object();
    json_object_foreach((json_t *)before, key, report)
    {
        const json_t *other = json_object_get(after, key);
        json_t *one;
        if (other == NULL) {
            cli_error("%s is in only one collection", key);
            json_decref(diff);
            return NULL;
        }
        one = ts_compare_reports(report, other, &err);
        if (one == NULL || json_object_set_new(diff, key, one) != 0) {
            cli_error(
                "%s: %s", key, one == NULL ? err.message : "out of memory");
            json_decref(diff);
            return NULL;
        }
    }
    return diff;
}

static int
cmd_compare(const cli_command *cmd, const cli_args *args)
{
    json_t *before, *after = NULL, *diff = NULL;
    char *text = NULL;
    cli_output out;
    int rc = EXIT_BAD;
    if (cli_is_stdin(args->operands[0]) && cli_is_stdin(args->operands[1])) {
        return cli_usage_error(cmd, "only one of the files can be '-'");
    }
    before = cli_load_checked(args->operands[0]);
    after = before != NULL ? cli_load_checked(args->operands[1]) : NULL;
    if (after != NULL) {
        diff = compare(before, after);
    }
    if (diff != NULL) {
        /* the text json.dumps(diff, indent=2) gives */
        text = ts_json_text(diff, 2);
        if (text == NULL) {
            cli_error("out of memory");
        }
    }
    if (text != NULL && cli_output_open(&out, args->values[COMPARE_OUTPUT])) {
        rc = cli_write_text(&out, text, EXIT_BAD);
    }
    free(text);
    json_decref(before);
    json_decref(after);
    json_decref(diff);
    return rc;
}

/* ---- export ---- */

/* The report of `doc` to export: the document, or --name's member of a
 * collection. NULL after a message; *status says which. */
static const json_t *
pick_report(const cli_command *cmd,
            const json_t *doc,
            const char *file,
            const char *name,
            int *status)
{
    const json_t *report;
    *status = EXIT_USAGE;
    if (!cli_is_collection(doc)) {
        if (name != NULL) {
            cli_usage_error(cmd,
                            "--name %s: %s holds a single report, not a "
                            "collection",
                            name,
                            cli_display_name(file));
            return NULL;
        }
        return doc;
    }
    report = name != NULL ? json_object_get(doc, name) : NULL;
    if (report == NULL) {
        const char *key;
        json_t *value;
        char names[256] = "";
        size_t len = 0;
        json_object_foreach((json_t *)doc, key, value)
        {
            int n = snprintf(names + len,
                             sizeof names - len,
                             "%s%s",
                             len > 0 ? ", " : "",
                             key);
            if (n < 0 || (size_t)n >= sizeof names - len) {
                snprintf(names + sizeof names - 5, 5, "...");
                break;
            }
            len += (size_t)n;
        }
        if (name != NULL) {
            cli_usage_error(cmd,
                            "--name %s: %s holds no such report (it holds %s)",
                            name,
                            cli_display_name(file),
                            names);
        }
        else {
            cli_usage_error(
                cmd,
                "%s holds a collection of reports (%s): choose one "
                "with --name",
                cli_display_name(file),
                names);
        }
    }
    return report;
}

/* What the folded stacks left out or changed, on stderr. */
static void
note_folded(const ts_export_stats *stats, const char *metric)
{
    if (stats->left_out > 0) {
        cli_note("export: %zu layer row(s) left out: their %s is unavailable",
                 stats->left_out,
                 metric);
    }
    if (stats->partial > 0) {
        cli_note(
            "export: %zu row(s) with a partial %s (a lower bound) are "
            "marked [partial]",
            stats->partial,
            metric);
    }
    if (stats->rounded > 0) {
        cli_note(
            "export: %zu fractional value(s) rounded to whole numbers "
            "(folded stacks hold integers)",
            stats->rounded);
    }
    if (stats->rows == 0) {
        cli_note("export: no layer row has a number for %s", metric);
    }
}

static int
cmd_export(const cli_command *cmd, const cli_args *args)
{
    ts_export_options opt;
    ts_export_stats stats;
    ts_error err;
    const json_t *report;
    const char *path = args->operands[0];
    const char *format = args->values[EXPORT_FORMAT];
    const char *metric = args->values[EXPORT_METRIC];
    json_t *doc;
    char *text;
    cli_output out;
    int status;
    if (format == NULL) {
        return cli_usage_error(
            cmd, "--format is required (csv, markdown or folded)");
    }
    if (ts_export_format_parse(format) < 0) {
        return cli_usage_error(cmd, "--format is csv, markdown or folded");
    }
    opt.format = (ts_export_format)ts_export_format_parse(format);
    opt.metric = metric != NULL ? ts_export_metric_parse(metric) : -1;
    if (metric != NULL && opt.metric < 0) {
        return cli_usage_error(
            cmd,
            "--metric is module_flops, macs, dmas, "
            "operator_flops, parameters or parameter_bytes");
    }
    doc = cli_load_checked(path);
    if (doc == NULL) {
        return EXIT_BAD;
    }
    report = pick_report(cmd, doc, path, args->values[EXPORT_NAME], &status);
    if (report == NULL) {
        json_decref(doc);
        return status;
    }
    ts_error_clear(&err);
    text = ts_export_report(report, &opt, &stats, &err);
    json_decref(doc);
    if (text == NULL) {
        cli_error("%s: %s", cli_display_name(path), err.message);
        return EXIT_BAD;
    }
    if (!cli_output_open(&out, args->values[EXPORT_OUTPUT])) {
        free(text);
        return EXIT_BAD;
    }
    errno = 0;
    fputs(text, out.fp);
    free(text);
    status = cli_output_commit(&out, 0, EXIT_BAD);
    if (status == 0 && opt.format == TS_EXPORT_FOLDED) {
        note_folded(&stats,
                    ts_export_metric_name(opt.metric < 0 ? 0 : opt.metric));
    }
    return status;
}

/* ---- render ---- */

static const char *const render_metrics[] = {
    "module_flops", "macs", "dmas", "parameters", "parameter_bytes", NULL};

static bool
one_of(const char *text, const char *const *names)
{
    for (; *names != NULL; names++) {
        if (strcmp(text, *names) == 0) {
            return true;
        }
    }
    return false;
}

/* True for a report with the benchmark shape (render_report's rule). */
static bool
is_benchmark(const json_t *doc)
{
    const char *type = json_string_value(json_object_get(doc, "report_type"));
    return (type != NULL && strcmp(type, "benchmark_comparison") == 0)
           || (json_object_get(doc, "totals") != NULL
               && json_object_get(doc, "measurement") != NULL);
}

static int
cmd_render(const cli_command *cmd, const cli_args *args)
{
    const char *path = args->operands[0];
    const char *format = args->values[RENDER_FORMAT];
    const char *metric = args->values[RENDER_METRIC];
    const char *title = args->values[RENDER_TITLE];
    const char *before_path = args->values[RENDER_BEFORE];
    const char *name = args->values[RENDER_NAME];
    const json_t *report, *before = NULL;
    json_t *doc = NULL, *before_doc = NULL;
    char *page = NULL;
    cli_output out;
    ts_error err;
    int status = EXIT_BAD;
    bool bench;
    format = format != NULL ? format : "html";
    metric = metric != NULL ? metric : "module_flops";
    title = title != NULL ? title : "TorchScan analysis";
    if (strcmp(format, "html") != 0 && strcmp(format, "svg") != 0) {
        return cli_usage_error(cmd, "--format is html or svg");
    }
    if (!one_of(metric, render_metrics)) {
        return cli_usage_error(cmd,
                               "--metric is module_flops, macs, dmas, "
                               "parameters or parameter_bytes");
    }
    if (before_path != NULL && cli_is_stdin(before_path)
        && cli_is_stdin(path)) {
        return cli_usage_error(cmd, "only one input may be '-'");
    }
    /* a before report is always an AnalysisReport: checked here, so that a
     * problem in it names its own file */
    if ((doc = cli_load(path)) == NULL
        || (before_path != NULL
            && (before_doc = cli_load_checked(before_path)) == NULL)) {
        goto done;
    }
    /* render_report's order: a report with layers is an analysis */
    bench = json_object_get(doc, "layers") == NULL && is_benchmark(doc);
    if (bench) {
        if (strcmp(format, "html") != 0 || before_doc != NULL) {
            status = cli_usage_error(cmd,
                                     "a benchmark report renders as HTML "
                                     "only, without --before");
            goto done;
        }
        report = doc;
    }
    else if ((report = pick_report(cmd, doc, path, name, &status)) == NULL
             || (before_doc != NULL
                 && (before = pick_report(
                         cmd, before_doc, before_path, name, &status))
                        == NULL)) {
        goto done;
    }
    ts_error_clear(&err);
    page =
        report == doc && json_object_get(doc, "layers") == NULL
                && is_benchmark(doc)
            ? ts_render_benchmark_html(report, title, &err)
            : ts_render_analysis(report, before, title, metric, format, &err);
    if (page == NULL) {
        /* the engine's argument errors (the title) are bad usage */
        status = err.code == TS_EINVAL
                     ? cli_usage_error(cmd, "%s", err.message)
                     : EXIT_BAD;
        if (status == EXIT_BAD) {
            cli_error("%s: %s", cli_display_name(path), err.message);
        }
        goto done;
    }
    if (!cli_output_open(&out, args->values[RENDER_OUTPUT])) {
        goto done;
    }
    errno = 0;
    fputs(page, out.fp);
    status = cli_output_commit(&out, 0, EXIT_BAD);
done:
    free(page);
    json_decref(doc);
    json_decref(before_doc);
    return status;
}

/* ---- rss ---- */

static int
cmd_rss(const cli_command *cmd, const cli_args *args)
{
    double timeout = 0.0;
    const char *timeout_text = args->values[RSS_TIMEOUT];
    ts_rss_result result;
    ts_status status;
    ts_error err;
    json_t *metric;
    char *text;
    cli_output out;
    char **argv;
    int rc;
    if (timeout_text != NULL) {
        char *end;
        errno = 0;
        timeout = strtod(timeout_text, &end);
        if (end == timeout_text || *end != '\0' || errno != 0
            || !isfinite(timeout) || timeout <= 0.0) {
            return cli_usage_error(cmd,
                                   "--timeout needs a positive number of "
                                   "seconds, got '%s'",
                                   timeout_text);
        }
    }
    /* an output that cannot be written is refused before the command runs */
    if (!cli_output_open(&out, args->values[RSS_OUTPUT])) {
        return RSS_FAILED;
    }
    argv = calloc((size_t)args->noperands + 1, sizeof *argv);
    if (argv == NULL) {
        cli_error("out of memory");
        cli_output_discard(&out);
        return RSS_FAILED;
    }
    memcpy(argv, args->operands, (size_t)args->noperands * sizeof *argv);
    fflush(stdout);
    fflush(stderr);
    ts_error_clear(&err);
    rc = ts_rss_supervise(argv, timeout, NULL, 0, &result, &err);
    free(argv);
    if (rc != TS_OK) {
        cli_error("rss: %s", err.message);
        cli_output_discard(&out);
        return RSS_FAILED;
    }
    switch (result.outcome) {
        case TS_RSS_EXITED:
            status = TS_COMPLETE;
            break;
        case TS_RSS_SPAWN_FAILED:
            status = TS_UNAVAILABLE;
            cli_error("rss: %s: %s", args->operands[0], strerror(result.code));
            break;
        case TS_RSS_TIMED_OUT:
            status = TS_PARTIAL;
            cli_error(
                "rss: %s ran past --timeout %s; its process group was "
                "killed",
                args->operands[0],
                timeout_text);
            break;
        case TS_RSS_SIGNALED:
            status = TS_PARTIAL;
            cli_note("rss: %s was ended by signal %d (%s)",
                     args->operands[0],
                     result.code,
                     strsignal(result.code));
            break;
        case TS_RSS_INTERRUPTED:
        default:
            status = TS_PARTIAL;
            cli_error(
                "rss: interrupted by signal %d (%s); the command's "
                "process group was killed",
                result.code,
                strsignal(result.code));
            break;
    }
    metric = ts_metric_new(status,
                           ts_int(result.peak_bytes),
                           "bytes",
                           "child_process_lifetime",
                           "wait4.ru_maxrss");
    text = metric != NULL ? ts_json_text(metric, 2) : NULL;
    json_decref(metric);
    if (text == NULL) {
        cli_error("out of memory");
        cli_output_discard(&out);
        return RSS_FAILED;
    }
    rc = cli_write_text(&out, text, RSS_FAILED);
    free(text);
    return rc != 0 ? rc : ts_rss_exit_status(&result);
}

/* ---- inspect ---- */

/* The text of one file's report, table or match; NULL after a message.
 * *no_match is set when --against found a difference. */
static char *
inspect_one(const char *path,
            const json_t *against,
            bool as_json,
            int max_depth,
            json_t **report_out,
            bool *no_match)
{
    ts_error err;
    json_t *report, *match = NULL;
    char *text = NULL;
    ts_error_clear(&err);
    report = ts_checkpoint_inspect(path, &err);
    if (report == NULL) {
        cli_error("%s", err.message);
        return NULL;
    }
    if (against != NULL) {
        match = ts_checkpoint_match(report, against, &err);
        json_decref(report);
        if (match == NULL) {
            cli_error("--against: %s", err.message);
            return NULL;
        }
        *no_match =
            *no_match || !json_is_true(json_object_get(match, "matches"));
        report = match;
    }
    if (as_json) {
        *report_out = report;
        return NULL;
    }
    text = match != NULL ? ts_checkpoint_match_text(report, &err)
                         : ts_checkpoint_table(report, max_depth, &err);
    json_decref(report);
    if (text == NULL) {
        cli_error("%s: %s", path, err.message);
    }
    return text;
}

static int
cmd_inspect(const cli_command *cmd, const cli_args *args)
{
    bool as_json = args->values[INSPECT_JSON] != NULL, no_match = false;
    const char *against_path = args->values[INSPECT_AGAINST];
    json_t *against = NULL, *all = NULL;
    int max_depth = -1, rc = 0;
    cli_output out;
    if (args->values[INSPECT_MAX_DEPTH] != NULL
        && parse_depth(args->values[INSPECT_MAX_DEPTH], &max_depth) != 0) {
        return cli_usage_error(cmd, "--max-depth is a non-negative integer");
    }
    for (int i = 0; i < args->noperands; i++) {
        if (cli_is_stdin(args->operands[i])) {
            return cli_usage_error(
                cmd, "a checkpoint is read from a file, not standard input");
        }
    }
    if (against_path != NULL && (against = cli_load(against_path)) == NULL) {
        return EXIT_BAD;
    }
    if (as_json && args->noperands > 1 && (all = json_object()) == NULL) {
        cli_error("out of memory");
        json_decref(against);
        return EXIT_BAD;
    }
    if (!cli_output_open(&out, args->values[INSPECT_OUTPUT])) {
        json_decref(against);
        json_decref(all);
        return EXIT_BAD;
    }
    errno = 0;
    for (int i = 0; i < args->noperands && rc == 0; i++) {
        const char *path = args->operands[i];
        json_t *report = NULL;
        char *text =
            inspect_one(path, against, as_json, max_depth, &report, &no_match);
        if (as_json && report != NULL) {
            if (all == NULL) {
                all = report;
            }
            else if (json_object_set_new(all, path, report) != 0) {
                cli_error("out of memory");
                rc = EXIT_BAD;
            }
            continue;
        }
        if (text == NULL) {
            rc = EXIT_BAD;
            break;
        }
        if (args->noperands > 1) {
            fprintf(out.fp, "%s== %s ==\n", i > 0 ? "\n" : "", path);
        }
        fputs(text, out.fp);
        free(text);
    }
    if (rc == 0 && as_json) {
        char *text = all != NULL ? ts_json_text(all, 2) : NULL;
        if (text == NULL) {
            cli_error("out of memory");
            rc = EXIT_BAD;
        }
        else {
            fputs(text, out.fp);
            fputc('\n', out.fp);
            free(text);
        }
    }
    json_decref(against);
    json_decref(all);
    if (rc != 0) {
        if (out.fp != stdout) {
            cli_output_discard(&out); /* all the files or none */
        }
        return rc;
    }
    rc = cli_output_commit(&out, 0, EXIT_BAD);
    return rc == 0 && no_match ? EXIT_NO_MATCH : rc;
}

/* ---- main ---- */

int
main(int argc, char **argv)
{
    const cli_command *cmd = NULL;
    cli_args args;
    int rc;
    if (argc < 2) {
        cli_print_main_help(stderr, commands, NCOMMANDS);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cli_print_main_help(stdout, commands, NCOMMANDS);
        return fflush(stdout) == 0 ? 0 : EXIT_BAD;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        puts("torchscan " TS_VERSION);
        return fflush(stdout) == 0 ? 0 : EXIT_BAD;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            cmd = &commands[i];
        }
    }
    if (cmd == NULL) {
        return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
    }
    rc = cli_parse_args(cmd, argc - 2, argv + 2, &args);
    if (rc == EXIT_HELP) {
        return fflush(stdout) == 0 ? 0 : EXIT_BAD;
    }
    if (rc != 0) {
        return rc;
    }
    return cmd->run(cmd, &args);
}
