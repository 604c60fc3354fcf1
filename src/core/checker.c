/* checker.c: the messages of the report validators (where, path, the
 * value got) and their typed fields (checker.h). */
#include <stdarg.h>
#include <stdio.h>

#include "checker.h"
#include "torchscan/json_text.h"

int
chk_fail(checker *c, const char *fmt, ...)
{
    char text[TS_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (c->len > 0) {
        return ts_error_set(
            c->err, TS_EFORMAT, "%s: %s: %s", c->where, c->path, text);
    }
    return ts_error_set(c->err, TS_EFORMAT, "%s: %s", c->where, text);
}

/* Python's repr() of a str, truncated: single quotes unless the text holds
 * one and no double quote; control characters escaped. */
void
chk_repr(char *buf, size_t size, const char *s)
{
    char quote =
        strchr(s, '\'') != NULL && strchr(s, '"') == NULL ? '"' : '\'';
    size_t n = 0;
    buf[n++] = quote;
    for (; *s != '\0' && n + 8 < size; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '\\' || ch == (unsigned char)quote) {
            buf[n++] = '\\';
            buf[n++] = (char)ch;
        }
        else if (ch == '\n' || ch == '\r' || ch == '\t') {
            buf[n++] = '\\';
            buf[n++] = ch == '\n' ? 'n' : ch == '\r' ? 'r' : 't';
        }
        else if (ch < 0x20 || ch == 0x7f) {
            n += (size_t)snprintf(buf + n, size - n, "\\x%02x", ch);
        }
        else {
            buf[n++] = (char)ch;
        }
    }
    if (*s != '\0') {
        buf[n++] = '.';
        buf[n++] = '.';
        buf[n++] = '.';
    }
    buf[n++] = quote;
    buf[n] = '\0';
}

const char *
chk_describe(const json_t *value, char *buf, size_t size)
{
    switch (json_typeof(value)) {
        case JSON_STRING:
            chk_repr(buf, size < 48 ? size : 48, json_string_value(value));
            return buf;
        case JSON_INTEGER:
            snprintf(
                buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(value));
            return buf;
        case JSON_REAL: { /* as Python writes it: 1.0, not 1 */
            char text[TS_JSON_REAL_SIZE];
            ts_format_json_real(json_real_value(value), text);
            snprintf(buf, size, "%s", text);
            return buf;
        }
        case JSON_TRUE:
            return "True";
        case JSON_FALSE:
            return "False";
        case JSON_NULL:
            return "None";
        case JSON_OBJECT:
            return "an object";
        case JSON_ARRAY:
            return "a list";
    }
    return "a value";
}

/* ---- typed fields ------------------------------------------------------- */

/* A non-negative integer (bools are not integers in jansson). */
int
chk_count(checker *c, const json_t *value)
{
    char buf[64];
    if (!json_is_integer(value) || json_integer_value(value) < 0) {
        return chk_fail(c,
                        "expected a non-negative int, got %s",
                        value == NULL ? "nothing" : GOT(value, buf));
    }
    return TS_OK;
}

int
chk_member_count(checker *c, const json_t *object, const char *key)
{
    size_t saved = push_key(c, key);
    int rc = chk_count(c, json_object_get(object, key));
    if (rc == TS_OK) {
        pop(c, saved);
    }
    return rc;
}

/* object[key] is a str (or absent, when optional). */
int
chk_member_str(checker *c,
               const json_t *object,
               const char *key,
               bool optional)
{
    const json_t *value = json_object_get(object, key);
    char buf[64];
    size_t saved;
    if (json_is_string(value) || (optional && value == NULL)) {
        return TS_OK;
    }
    saved = push_key(c, key);
    (void)saved;
    return chk_fail(c,
                    "expected a str, got %s",
                    value == NULL ? "nothing" : GOT(value, buf));
}

int
chk_object(checker *c, const json_t *value, const char *what)
{
    char buf[64];
    if (!json_is_object(value)) {
        return chk_fail(c,
                        "expected %s, got %s",
                        what,
                        value == NULL ? "nothing" : GOT(value, buf));
    }
    return TS_OK;
}

int
chk_list(checker *c, const json_t *value)
{
    char buf[64];
    if (!json_is_array(value)) {
        return chk_fail(c,
                        "expected a list, got %s",
                        value == NULL ? "nothing" : GOT(value, buf));
    }
    return TS_OK;
}

int
chk_schema_version(checker *c, const json_t *object)
{
    const json_t *version = json_object_get(object, "schema_version");
    char buf[64];
    if (!json_is_integer(version) || json_integer_value(version) != 1) {
        size_t saved = push_key(c, "schema_version");
        (void)saved;
        return chk_fail(c,
                        "expected 1, got %s",
                        version == NULL ? "nothing" : GOT(version, buf));
    }
    return TS_OK;
}
