/* What the `torchscan` command's files share (src/cli/main.c holds the
 * commands, src/cli/cli.c the machinery): the command and option tables,
 * the parser and help generated from them, messages, reading checked
 * reports and writing outputs. Not an engine header: the CLI's own. */
#ifndef TORCHSCAN_CLI_H
#define TORCHSCAN_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "torchscan/core.h"

#define EXIT_BAD 1     /* a bad report, an output that could not be written */
#define EXIT_USAGE 2   /* bad usage */
#define EXIT_HELP (-1) /* --help was printed: exit 0 */

/* ---- messages ---- */

/* "torchscan: <message>" on stderr, for errors. The prefix is coloured
 * only on a terminal, never with NO_COLOR set (to anything but "") or
 * TERM=dumb. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The same prefix, never coloured: information beside the data. */
void cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- commands and options ---- */

typedef struct cli_option {
    const char *name;    /* "--max-depth" */
    const char *alias;   /* "-o", or NULL */
    const char *metavar; /* the value's name; NULL for a flag */
    const char *help;
} cli_option;

#define CLI_MAX_OPTIONS 8

/* What the parser found: each option's value by its index in the command's
 * table (NULL: not given; "" for a flag), and the operands. */
typedef struct cli_args {
    const char *values[CLI_MAX_OPTIONS];
    char **operands;
    int noperands;
} cli_args;

typedef struct cli_command cli_command;
struct cli_command {
    const char *name;
    const char *operands; /* the synopsis after the options */
    const char *summary;  /* one line, for torchscan --help */
    const char *text;     /* the help's description; \n\n: a paragraph */
    const char *exits;    /* the help's exit-status paragraph */
    cli_option options[CLI_MAX_OPTIONS]; /* ended by a NULL name */
    int min_operands, max_operands;      /* max < 0: any number */
    bool rest_is_operands; /* the first operand ends the options (rss) */
    int usage_status;      /* exit status of bad usage */
    int (*run)(const cli_command *cmd, const cli_args *args);
};

/* Parses argv (the words after the command's name) into *out. Returns 0,
 * EXIT_HELP after printing the command's help on stdout, or the command's
 * usage status after a message. --opt VALUE and --opt=VALUE are both
 * accepted, -h/--help everywhere; `--` ends the options; '-' is an
 * operand. */
int cli_parse_args(const cli_command *cmd,
                   int argc,
                   char **argv,
                   cli_args *out);

/* The help of the whole tool: usage, the commands' summaries, the common
 * rules (stdin/stdout, colour, exit status). */
void cli_print_main_help(FILE *out, const cli_command *commands, size_t n);

/* Prints the message and a usage hint; returns the usage status of `cmd`
 * (EXIT_USAGE when cmd is NULL). */
int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- input ---- */

/* '-': standard input. */
bool cli_is_stdin(const char *path);

/* The name of an input in messages ("<stdin>" for '-'). */
const char *cli_display_name(const char *path);

/* A collection of named reports: an object without "layers" whose members
 * are all objects with "layers". */
bool cli_is_collection(const json_t *doc);

/* Reads a JSON file ('-': stdin), unchecked. NULL after a message naming
 * the file, the line and column (an integer past 2^63 says so). */
json_t *cli_load(const char *path);

/* Reads a file ('-': stdin) and checks it with ts_analysis_report_check
 * (each report of a collection). NULL after a message naming the file, the
 * report's name in a collection and where. */
json_t *cli_load_checked(const char *path);

/* ---- output ---- */

/* Where a command's data goes: standard output, a file written directly
 * (a pipe, a device), or a temporary file beside a regular file that
 * replaces it when complete (links followed, permissions kept). */
typedef struct cli_output {
    const char *path; /* as given; NULL for standard output */
    FILE *fp;
    char *tmp;    /* the temporary file, renamed to target */
    char *target; /* the file it replaces */
} cli_output;

/* Opens the output (NULL or '-': stdout); false after a message. Nothing
 * of an existing file is touched before cli_output_commit. The temporary
 * file is close-on-exec. */
bool cli_output_open(cli_output *o, const char *path);

/* Removes what an unfinished output left. */
void cli_output_discard(cli_output *o);

/* Flushes the output and puts a temporary file in place. Returns rc, or
 * failed_status with a message when the data could not be written (a
 * replaced file is then left as it was). */
int cli_output_commit(cli_output *o, int rc, int failed_status);

/* Writes `text` and a newline, then commits. */
int cli_write_text(cli_output *o, const char *text, int failed_status);

#endif /* TORCHSCAN_CLI_H */
