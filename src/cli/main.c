/* The `torchscan` command: works on saved reports without Python or torch.
 *
 *   torchscan table REPORT.json [--max-depth N] [--wrap mid|end|none]
 *                                [--receptive-field]
 *   torchscan compare BEFORE.json AFTER.json
 *
 * A file may hold one report or a collection of them ({"name": report, ...},
 * as `python -m torchscan demo` writes): `table` prints each under its name,
 * `compare` pairs them by name.
 *
 * Every report is checked first (torchscan/report_check.h): a bad one is
 * refused with a message naming the file, the report's name in a collection
 * and where inside it, as "torchscan: a.json: cnn: layers[3].depth: ...".
 *
 * Exit status: 0 on success, 1 on a bad report or an output error, 2 on bad
 * usage (unknown option, a --max-depth deeper than the model). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/diff.h"
#include "torchscan/json_text.h"
#include "torchscan/report_check.h"
#include "torchscan/table.h"

static int
usage(void)
{
    fputs(
        "usage: torchscan table REPORT.json [--max-depth N] "
        "[--wrap mid|end|none] [--receptive-field]\n"
        "       torchscan compare BEFORE.json AFTER.json\n",
        stderr);
    return 2;
}

static json_t *
load(const char *path)
{
    json_error_t error;
    json_t *report = json_load_file(path, JSON_REJECT_DUPLICATES, &error);
    if (report == NULL) {
        /* an integer past 2^63 is refused by jansson: "too big integer" */
        fprintf(stderr,
                "torchscan: %s:%d:%d: %s%s\n",
                path,
                error.line,
                error.column,
                error.text,
                strstr(error.text, "too big") != NULL
                    ? " (integers must fit in 64 bits)"
                    : "");
    }
    return report;
}

/* A collection: an object without "layers" whose members are all objects
 * with "layers". Anything else is read as one report. */
static bool
is_collection(const json_t *doc)
{
    const char *key;
    json_t *value;
    if (!json_is_object(doc) || json_object_get(doc, "layers") != NULL
        || json_object_size(doc) == 0) {
        return false;
    }
    json_object_foreach((json_t *)doc, key, value)
    {
        if (!json_is_object(value)
            || json_object_get(value, "layers") == NULL) {
            return false;
        }
    }
    return true;
}

/* The check of one report; `name` is its key in a collection, or NULL.
 * Prints the problem and returns false when the report is bad. */
static bool
check_report(const json_t *report, const char *file, const char *name)
{
    char where[512];
    ts_error err;
    if (name != NULL) {
        snprintf(where, sizeof where, "%s: %s", file, name);
    }
    else {
        snprintf(where, sizeof where, "%s", file);
    }
    ts_error_clear(&err);
    if (ts_analysis_report_check(report, where, &err) != TS_OK) {
        fprintf(stderr, "torchscan: %s\n", err.message);
        return false;
    }
    return true;
}

/* Checks a document: one report, or each report of a collection. */
static bool
check_document(const json_t *doc, const char *file)
{
    const char *key;
    json_t *report;
    if (!is_collection(doc)) {
        return check_report(doc, file, NULL);
    }
    json_object_foreach((json_t *)doc, key, report)
    {
        if (!check_report(report, file, key)) {
            return false;
        }
    }
    return true;
}

/* Flushes stdout; 1 with a message when anything written to it was lost. */
static int
finish_output(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fputs("torchscan: cannot write the output\n", stderr);
        return 1;
    }
    return rc;
}

static int
print_table(const json_t *report,
            const char *name,
            const ts_table_options *opt)
{
    ts_error err;
    char *text;
    ts_error_clear(&err);
    text = ts_format_summary(report, opt, &err);
    if (text == NULL) {
        if (name != NULL) {
            fprintf(stderr, "torchscan: %s: %s\n", name, err.message);
        }
        else {
            fprintf(stderr, "torchscan: %s\n", err.message);
        }
        /* a --max-depth deeper than the model is a usage error */
        return err.code == TS_EINVAL ? 2 : 1;
    }
    if (name != NULL) {
        printf("== %s ==\n", name);
    }
    puts(text);
    free(text);
    return 0;
}

static int
cmd_table(int argc, char **argv)
{
    ts_table_options opt = {TS_WRAP_MID, false, false, -1};
    const char *path = NULL;
    json_t *doc;
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--max-depth") == 0 && i + 1 < argc) {
            const char *arg = argv[++i];
            char *end;
            long v = strtol(arg, &end, 10);
            if (end == arg || *end != '\0' || arg[0] == '-' || arg[0] == '+'
                || v < 0 || v > INT_MAX) {
                fputs("torchscan: --max-depth is a non-negative integer\n",
                      stderr);
                return 2;
            }
            opt.max_depth = (int)v;
        }
        else if (strcmp(argv[i], "--wrap") == 0 && i + 1 < argc) {
            const char *w = argv[++i];
            if (strcmp(w, "mid") == 0) {
                opt.wrap_mode = TS_WRAP_MID;
            }
            else if (strcmp(w, "end") == 0) {
                opt.wrap_mode = TS_WRAP_END;
            }
            else if (strcmp(w, "none") == 0) {
                opt.wrap_mode = TS_WRAP_NONE;
            }
            else {
                fputs("torchscan: --wrap is mid, end or none\n", stderr);
                return 2;
            }
        }
        else if (strcmp(argv[i], "--receptive-field") == 0) {
            opt.receptive_field = true;
        }
        else if (path == NULL && argv[i][0] != '-') {
            path = argv[i];
        }
        else {
            return usage();
        }
    }
    if (path == NULL) {
        return usage();
    }
    doc = load(path);
    if (doc == NULL) {
        return 1;
    }
    if (!check_document(doc, path)) {
        json_decref(doc);
        return 1;
    }
    if (is_collection(doc)) {
        const char *key;
        json_t *report;
        bool first = true;
        json_object_foreach(doc, key, report)
        {
            if (!first) {
                putchar('\n');
            }
            first = false;
            rc = print_table(report, key, &opt);
            if (rc != 0) {
                break;
            }
        }
    }
    else {
        rc = print_table(doc, NULL, &opt);
    }
    json_decref(doc);
    return finish_output(rc);
}

/* The comparison of two reports, or of two collections name by name. */
static json_t *
compare(const json_t *before, const json_t *after)
{
    ts_error err;
    json_t *diff;
    bool collections = is_collection(before);
    if (collections != is_collection(after)) {
        fputs(
            "torchscan: one file holds a collection of reports, the other "
            "a single report\n",
            stderr);
        return NULL;
    }
    ts_error_clear(&err);
    if (!collections) {
        diff = ts_compare_reports(before, after, &err);
        if (diff == NULL) {
            fprintf(stderr, "torchscan: %s\n", err.message);
        }
        return diff;
    }
    const char *key;
    json_t *report;
    if (json_object_size(before) != json_object_size(after)) {
        fputs("torchscan: the collections hold different reports\n", stderr);
        return NULL;
    }
    diff = json_object();
    json_object_foreach((json_t *)before, key, report)
    {
        const json_t *other = json_object_get(after, key);
        json_t *one;
        if (other == NULL) {
            fprintf(stderr, "torchscan: %s is in only one collection\n", key);
            json_decref(diff);
            return NULL;
        }
        one = ts_compare_reports(report, other, &err);
        if (one == NULL || json_object_set_new(diff, key, one) != 0) {
            fprintf(stderr,
                    "torchscan: %s: %s\n",
                    key,
                    one == NULL ? err.message : "out of memory");
            json_decref(diff);
            return NULL;
        }
    }
    return diff;
}

static int
cmd_compare(int argc, char **argv)
{
    json_t *before, *after, *diff = NULL;
    int rc = 1;
    if (argc != 2) {
        return usage();
    }
    before = load(argv[0]);
    after = before ? load(argv[1]) : NULL;
    if (after != NULL && check_document(before, argv[0])
        && check_document(after, argv[1])) {
        diff = compare(before, after);
    }
    if (diff != NULL) {
        /* the text json.dumps(diff, indent=2) gives */
        char *text = ts_json_text(diff, 2);
        if (text != NULL) {
            puts(text);
            free(text);
            rc = 0;
        }
        else {
            fputs("torchscan: out of memory\n", stderr);
        }
    }
    json_decref(before);
    json_decref(after);
    json_decref(diff);
    return finish_output(rc);
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        return usage();
    }
    if (strcmp(argv[1], "table") == 0) {
        return cmd_table(argc - 2, argv + 2);
    }
    if (strcmp(argv[1], "compare") == 0) {
        return cmd_compare(argc - 2, argv + 2);
    }
    return usage();
}
