/* The machinery of the `torchscan` command (see cli.h): messages, the
 * parser and the help generated from the command tables, reading checked
 * reports, writing outputs. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "torchscan/report_check.h"

/* ---- messages ---- */

/* Colour only for a terminal, never with NO_COLOR set to anything but ""
 * (no-color.org) or TERM=dumb; it marks the "torchscan:" prefix of error
 * messages, nothing else. */
static bool
use_colour(void)
{
    static int cached = -1;
    if (cached < 0) {
        const char *no_colour = getenv("NO_COLOR");
        const char *term = getenv("TERM");
        cached = isatty(STDERR_FILENO)
                 && (no_colour == NULL || no_colour[0] == '\0')
                 && !(term != NULL && strcmp(term, "dumb") == 0);
    }
    return cached != 0;
}

static void
message(bool error, const char *fmt, va_list args)
{
    if (error && use_colour()) {
        fputs("\033[1;31mtorchscan:\033[0m ", stderr);
    }
    else {
        fputs("torchscan: ", stderr);
    }
    vfprintf(stderr, fmt, args);
    fputc('\n', stderr);
}

void
cli_error(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    message(true, fmt, args);
    va_end(args);
}

void
cli_note(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    message(false, fmt, args);
    va_end(args);
}

static const cli_option help_option = {
    "--help", "-h", NULL, "print this help and exit"};

static size_t
count_options(const cli_command *cmd)
{
    size_t n = 0;
    while (n < CLI_MAX_OPTIONS && cmd->options[n].name != NULL) {
        n++;
    }
    return n;
}

/* ---- help ---- */

/* Prints `text` wrapped at 79 columns, each line indented by `indent`
 * (the first line by `first`, already written when first < 0). */
static void
print_wrapped(FILE *out, const char *text, int first, int indent)
{
    int column = first < 0 ? -first : first;
    bool line_start = true;
    if (first > 0) {
        fprintf(out, "%*s", first, "");
    }
    while (*text != '\0') {
        size_t word = strcspn(text, " \n");
        if (!line_start && column + 1 + (int)word > 79) {
            fprintf(out, "\n%*s", indent, "");
            column = indent;
            line_start = true;
        }
        if (!line_start) {
            fputc(' ', out);
            column++;
        }
        fwrite(text, 1, word, out);
        column += (int)word;
        line_start = false;
        text += word;
        if (*text == '\n') {
            /* a paragraph break */
            while (*text == '\n') {
                fputc('\n', out);
                text++;
            }
            fprintf(out, "%*s", indent, "");
            column = indent;
            line_start = true;
        }
        while (*text == ' ') {
            text++;
        }
    }
    fputc('\n', out);
}

static void
print_synopsis(FILE *out, const cli_command *cmd, const char *lead)
{
    fprintf(
        out, "%s torchscan %s [options] %s\n", lead, cmd->name, cmd->operands);
}

static int
option_label(char *buf, size_t size, const cli_option *opt)
{
    return snprintf(buf,
                    size,
                    "%s%s%s%s%s",
                    opt->alias != NULL ? opt->alias : "",
                    opt->alias != NULL ? ", " : "    ",
                    opt->name,
                    opt->metavar != NULL ? " " : "",
                    opt->metavar != NULL ? opt->metavar : "");
}

static void
print_option(FILE *out, const cli_option *opt)
{
    char label[64];
    int len = option_label(label, sizeof label, opt);
    fprintf(out, "  %s", label);
    if (len + 2 > 24) {
        fputc('\n', out);
        print_wrapped(out, opt->help, 26, 26);
    }
    else {
        fprintf(out, "%*s", 26 - 2 - len, "");
        print_wrapped(out, opt->help, -26, 26);
    }
}

static void
print_command_help(const cli_command *cmd)
{
    size_t n = count_options(cmd);
    print_synopsis(stdout, cmd, "usage:");
    fputc('\n', stdout);
    print_wrapped(stdout, cmd->text, 0, 0);
    fputs("\noptions:\n", stdout);
    for (size_t i = 0; i < n; i++) {
        print_option(stdout, &cmd->options[i]);
    }
    print_option(stdout, &help_option);
    fputs("\nexit status: ", stdout);
    print_wrapped(stdout, cmd->exits, -13, 0);
}

void
cli_print_main_help(FILE *out, const cli_command *commands, size_t ncommands)
{
    fputs(
        "usage: torchscan COMMAND [options] ...\n"
        "       torchscan COMMAND --help\n"
        "       torchscan --help | --version\n\n",
        out);
    print_wrapped(
        out,
        "Works on reports saved by the torchscan Python package (json.dump "
        "of crawl_module/summary reports, or collections {\"name\": report, "
        "...}) without Python or torch, and measures the peak RSS of a "
        "command.",
        0,
        0);
    fputs("\ncommands:\n", out);
    for (size_t i = 0; i < ncommands; i++) {
        fprintf(out, "  %-10s%s\n", commands[i].name, commands[i].summary);
    }
    fputc('\n', out);
    print_wrapped(
        out,
        "'-' as a report file reads standard input; -o - (the default) "
        "writes standard output. Data goes to standard output, messages to "
        "standard error. The only colour is the \"torchscan:\" prefix of "
        "error messages, on a terminal, never with NO_COLOR set or "
        "TERM=dumb.",
        0,
        0);
    fputc('\n', out);
    print_wrapped(out,
                  "exit status: 0 done; 1 a bad report, or an output that "
                  "could not be written; 2 bad usage. rss exits with the "
                  "command's status: see torchscan rss --help.",
                  0,
                  0);
}

int
cli_usage_error(const cli_command *cmd, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    message(true, fmt, args);
    va_end(args);
    if (cmd != NULL) {
        print_synopsis(stderr, cmd, "usage:");
        fprintf(stderr, "Try 'torchscan %s --help'.\n", cmd->name);
        return cmd->usage_status;
    }
    fputs("Try 'torchscan --help'.\n", stderr);
    return EXIT_USAGE;
}

/* ---- the parser ---- */

static int
find_option(const cli_command *cmd, const char *name, size_t len)
{
    size_t n = count_options(cmd);
    for (size_t i = 0; i < n; i++) {
        const cli_option *opt = &cmd->options[i];
        if ((strlen(opt->name) == len && strncmp(opt->name, name, len) == 0)
            || (opt->alias != NULL && strlen(opt->alias) == len
                && strncmp(opt->alias, name, len) == 0)) {
            return (int)i;
        }
    }
    return -1;
}

/* Parses argv (the words after the command's name) into *out. Returns 0,
 * EXIT_HELP after printing the help, or the command's usage status after
 * a message. --opt VALUE and --opt=VALUE are both accepted; `--` ends the
 * options; '-' is an operand. */
int
cli_parse_args(const cli_command *cmd, int argc, char **argv, cli_args *out)
{
    bool options_done = false;
    memset(out, 0, sizeof *out);
    out->operands = argv;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *eq;
        size_t len;
        int k;
        if (options_done || arg[0] != '-' || strcmp(arg, "-") == 0) {
            argv[out->noperands++] = argv[i];
            if (cmd->rest_is_operands) {
                options_done = true;
            }
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            options_done = true;
            continue;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_command_help(cmd);
            return EXIT_HELP;
        }
        eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
        len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
        k = find_option(cmd, arg, len);
        if (k < 0) {
            return cli_usage_error(
                cmd, "%s: unknown option %.*s", cmd->name, (int)len, arg);
        }
        if (cmd->options[k].metavar == NULL) {
            if (eq != NULL) {
                return cli_usage_error(cmd,
                                       "%s: %s takes no value",
                                       cmd->name,
                                       cmd->options[k].name);
            }
            out->values[k] = "";
        }
        else if (eq != NULL) {
            out->values[k] = eq + 1;
        }
        else if (i + 1 < argc) {
            out->values[k] = argv[++i];
        }
        else {
            return cli_usage_error(cmd,
                                   "%s: %s needs a value (%s)",
                                   cmd->name,
                                   cmd->options[k].name,
                                   cmd->options[k].metavar);
        }
    }
    if (out->noperands < cmd->min_operands
        || (cmd->max_operands >= 0 && out->noperands > cmd->max_operands)) {
        return cli_usage_error(cmd,
                               "%s: expected %s, got %d operand(s)",
                               cmd->name,
                               cmd->operands,
                               out->noperands);
    }
    return 0;
}

/* ---- input ---- */

bool
cli_is_stdin(const char *path)
{
    return strcmp(path, "-") == 0;
}

/* The name of an input in messages. */
const char *
cli_display_name(const char *path)
{
    return cli_is_stdin(path) ? "<stdin>" : path;
}

/* jansson reads through this in large chunks (json_loadf and
 * json_load_file read a character at a time). */
static size_t
read_chunk(void *buffer, size_t size, void *data)
{
    size_t n = fread(buffer, 1, size, (FILE *)data);
    return n == 0 && ferror((FILE *)data) ? (size_t)-1 : n;
}

json_t *
cli_load(const char *path)
{
    json_error_t error;
    json_t *report;
    FILE *in = cli_is_stdin(path) ? stdin : fopen(path, "rb");
    if (in == NULL) {
        cli_error("%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    report =
        json_load_callback(read_chunk, in, JSON_REJECT_DUPLICATES, &error);
    if (in != stdin) {
        fclose(in);
    }
    if (report == NULL) {
        /* an integer past 2^63 is refused by jansson: "too big integer" */
        cli_error("%s:%d:%d: %s%s",
                  cli_display_name(path),
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
bool
cli_is_collection(const json_t *doc)
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
        snprintf(where, sizeof where, "%s: %s", cli_display_name(file), name);
    }
    else {
        snprintf(where, sizeof where, "%s", cli_display_name(file));
    }
    ts_error_clear(&err);
    if (ts_analysis_report_check(report, where, &err) != TS_OK) {
        cli_error("%s", err.message);
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
    if (!cli_is_collection(doc)) {
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

/* Loads and checks a document; NULL after a message. */
json_t *
cli_load_checked(const char *path)
{
    json_t *doc = cli_load(path);
    if (doc != NULL && !check_document(doc, path)) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* ---- output ---- */

/* Opens the output; false after a message. Nothing of an existing file is
 * touched before output_commit. */
bool
cli_output_open(cli_output *o, const char *path)
{
    struct stat st;
    char *dir_copy = NULL;
    mode_t mode;
    int fd;
    memset(o, 0, sizeof *o);
    if (path == NULL || cli_is_stdin(path)) {
        o->fp = stdout;
        return true;
    }
    o->path = path;
    if (path[0] == '\0') {
        cli_error("-o needs a file name ('-' for standard output)");
        return false;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        cli_error("cannot write %s: it is a directory", path);
        return false;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* a pipe or a device: written as it is */
        o->fp = fopen(path, "w");
        if (o->fp == NULL) {
            cli_error("cannot write %s: %s", path, strerror(errno));
            return false;
        }
        return true;
    }
    if (stat(path, &st) == 0) {
        /* links followed: the file they name is replaced, not the link */
        o->target = realpath(path, NULL);
        mode = st.st_mode & 07777;
        if (o->target == NULL) {
            cli_error("cannot write %s: %s", path, strerror(errno));
            return false;
        }
    }
    else {
        mode_t mask = umask(0);
        umask(mask);
        o->target = strdup(path);
        mode = 0666 & ~mask;
    }
    if (o->target != NULL) {
        dir_copy = strdup(o->target);
    }
    if (dir_copy != NULL) {
        const char *dir = dirname(dir_copy);
        size_t size = strlen(dir) + sizeof "/.torchscan-XXXXXX";
        o->tmp = malloc(size);
        if (o->tmp != NULL) {
            snprintf(o->tmp, size, "%s/.torchscan-XXXXXX", dir);
        }
    }
    free(dir_copy);
    if (o->tmp == NULL) {
        cli_error("out of memory");
        free(o->target);
        return false;
    }
    /* close-on-exec: a command that rss runs never holds it */
    fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd < 0) {
        cli_error("cannot write %s: %s", path, strerror(errno));
        free(o->tmp);
        free(o->target);
        return false;
    }
    if (fchmod(fd, mode) != 0 || (o->fp = fdopen(fd, "w")) == NULL) {
        cli_error("cannot write %s: %s", path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        free(o->tmp);
        free(o->target);
        return false;
    }
    return true;
}

/* Removes what an unfinished output left. */
void
cli_output_discard(cli_output *o)
{
    if (o->fp != NULL && o->fp != stdout) {
        fclose(o->fp);
    }
    if (o->tmp != NULL) {
        unlink(o->tmp);
    }
    free(o->tmp);
    free(o->target);
    memset(o, 0, sizeof *o);
}

/* Finishes the output: flushes it and puts a temporary file in place.
 * Returns rc, or EXIT_BAD with a message when the data could not be
 * written (then a replaced file is left as it was). */
int
cli_output_commit(cli_output *o, int rc, int failed_status)
{
    bool ok = fflush(o->fp) == 0 && !ferror(o->fp);
    if (o->fp != stdout) {
        ok = fclose(o->fp) == 0 && ok;
        o->fp = NULL;
    }
    if (ok && o->tmp != NULL && rename(o->tmp, o->target) == 0) {
        free(o->tmp);
        o->tmp = NULL;
    }
    else if (o->tmp != NULL) {
        ok = false;
    }
    if (!ok) {
        cli_error("cannot write %s%s%s",
                  o->path != NULL ? o->path : "the output",
                  errno != 0 ? ": " : "",
                  errno != 0 ? strerror(errno) : "");
        rc = failed_status;
    }
    cli_output_discard(o);
    return rc;
}

/* Writes `text` and a newline, then commits. */
int
cli_write_text(cli_output *o, const char *text, int failed_status)
{
    errno = 0;
    fputs(text, o->fp);
    fputc('\n', o->fp);
    return cli_output_commit(o, 0, failed_status);
}
