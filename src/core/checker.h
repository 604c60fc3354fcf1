/* Private to src/core: the checker the validators of reports read back
 * share (report_check.h's functions). It keeps the path of the value it
 * looks at, so that every message names where the problem is:
 * checker.c writes the messages and checks typed fields,
 * json_data_check.c the text and nesting of any JSON value,
 * metric_check.c MetricResults, report_check.c the reports. Every check
 * returns TS_OK or TS_EFORMAT with the message in the checker's error. */
#ifndef TORCHSCAN_CHECKER_H
#define TORCHSCAN_CHECKER_H

#include <stdbool.h>
#include <string.h>

#include "torchscan/report_check.h"

#define CHK_MAX_DEPTH 512
#define CHK_PATH_SIZE 256

typedef struct checker {
    const char *where;
    ts_error *err;
    char path[CHK_PATH_SIZE];
    size_t len;
    /* refuse control characters and non-characters in text (the render
     * rule); reports read back may hold them (see text_problem) */
    bool display_text;
} checker;

static inline void
checker_init(checker *c, const char *where, ts_error *err)
{
    c->where = where != NULL ? where : "report";
    c->err = err;
    c->path[0] = '\0';
    c->len = 0;
    c->display_text = false;
}

/* Appends `len` bytes of `text` to the path; a path that no longer fits
 * ends in "...". (No printf: the check pushes every key of a report.) */
static inline void
chk_append(checker *c, const char *text, size_t len)
{
    if (len >= CHK_PATH_SIZE - c->len) {
        memcpy(c->path + CHK_PATH_SIZE - 4, "...", 4);
        c->len = CHK_PATH_SIZE - 1;
        return;
    }
    memcpy(c->path + c->len, text, len);
    c->len += len;
    c->path[c->len] = '\0';
}

/* Appends ".key" (or "key" at the root) to the path; returns the length
 * to restore. */
static inline size_t
push_key(checker *c, const char *key)
{
    size_t saved = c->len;
    if (c->len > 0) {
        chk_append(c, ".", 1);
    }
    chk_append(c, key, strlen(key));
    return saved;
}

static inline size_t
push_index(checker *c, size_t index)
{
    char text[32];
    size_t i = sizeof text, saved = c->len;
    text[--i] = ']';
    do {
        text[--i] = (char)('0' + index % 10);
        index /= 10;
    } while (index > 0);
    text[--i] = '[';
    chk_append(c, text + i, sizeof text - i);
    return saved;
}

static inline void
pop(checker *c, size_t saved)
{
    c->len = saved;
    c->path[saved] = '\0';
}

/* "<where>: <path>: <text>" (no path at the root); returns TS_EFORMAT. */
int chk_fail(checker *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Python's repr() of a str into buf, truncated with "...". */
void chk_repr(char *buf, size_t size, const char *s);

/* A short description of a value for "got ..." in messages. */
const char *chk_describe(const json_t *value, char *buf, size_t size);
#define GOT(value, buf) chk_describe((value), (buf), sizeof(buf))

/* Typed fields at the current path: a non-negative int (object[key] for
 * chk_member_count), a str (absent allowed when `optional`), an object
 * (`what` names it in the message), a list, schema_version 1. */
int chk_count(checker *c, const json_t *value);
int chk_member_count(checker *c, const json_t *object, const char *key);
int chk_member_str(checker *c,
                   const json_t *object,
                   const char *key,
                   bool optional);
int chk_object(checker *c, const json_t *value, const char *what);
int chk_list(checker *c, const json_t *value);
int chk_schema_version(checker *c, const json_t *object);

/* JSON data at every depth (ts_json_data_check's rule; display text only
 * when c->display_text). */
int chk_data(checker *c, const json_t *value);

/* A MetricResult; {name: MetricResult} (additive metrics non-negative). */
int chk_metric(checker *c, const json_t *metric);
int chk_metrics(checker *c, const json_t *metrics);

/* A number below zero (ints and reals; false for anything else). */
bool chk_is_negative(const json_t *number);

#endif
