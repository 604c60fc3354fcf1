/* The `torchscan` command: works on saved reports without Python or torch.
 *
 *   torchscan table REPORT.json [--max-depth N] [--wrap mid|end|none]
 *                                [--receptive-field]
 *   torchscan compare BEFORE.json AFTER.json
 *
 * Exit status: 0 on success, 1 on a bad report, 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/diff.h"
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
        fprintf(
            stderr, "torchscan: %s:%d: %s\n", path, error.line, error.text);
    }
    return report;
}

static int
cmd_table(int argc, char **argv)
{
    ts_table_options opt = {TS_WRAP_MID, false, false, -1};
    const char *path = NULL;
    json_t *report;
    char *text;
    ts_error err;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--max-depth") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end != '\0' || v < 0 || v > 1000000) {
                fputs("torchscan: --max-depth needs a non-negative integer\n",
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
    report = load(path);
    if (report == NULL) {
        return 1;
    }
    ts_error_clear(&err);
    text = ts_format_summary(report, &opt, &err);
    json_decref(report);
    if (text == NULL) {
        fprintf(stderr, "torchscan: %s\n", err.message);
        return 1;
    }
    puts(text);
    free(text);
    return 0;
}

static int
cmd_compare(int argc, char **argv)
{
    json_t *before, *after, *diff;
    ts_error err;
    int rc = 1;
    if (argc != 2) {
        return usage();
    }
    before = load(argv[0]);
    after = before ? load(argv[1]) : NULL;
    if (after == NULL) {
        json_decref(before);
        return 1;
    }
    ts_error_clear(&err);
    diff = ts_compare_reports(before, after, &err);
    if (diff == NULL) {
        fprintf(stderr, "torchscan: %s\n", err.message);
    }
    else if (json_dumpf(diff, stdout, JSON_INDENT(2)) == 0) {
        putchar('\n');
        rc = 0;
    }
    json_decref(before);
    json_decref(after);
    json_decref(diff);
    return rc;
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
