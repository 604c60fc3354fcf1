/* JSON text as Python's json module writes it (see torchscan/json_text.h). */
#include "torchscan/json_text.h"

#include "json_put.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef ts_text_buf out_buf;

static void
put_n(out_buf *b, const char *s, size_t n)
{
    ts_text_put_n(b, s, n);
}

static void
put(out_buf *b, const char *s)
{
    ts_text_put(b, s);
}

void
ts_format_json_real(double value, char out[TS_JSON_REAL_SIZE])
{
    char buf[40], digits[24] = {0};
    size_t n = 0, k = 0;
    int exponent, point;
    const char *c;
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buf, sizeof buf, "%.*e", precision - 1, value);
        if (strtod(buf, NULL) == value) {
            break;
        }
    }
    c = buf; /* "-d.ddde+XX" */
    if (*c == '-') {
        out[k++] = *c++;
    }
    for (; *c != '\0' && *c != 'e' && n < sizeof digits; c++) {
        if (*c != '.') {
            digits[n++] = *c;
        }
    }
    exponent = *c == 'e' ? (int)strtol(c + 1, NULL, 10) : 0;
    point = exponent + 1; /* digits before the decimal point */
    if (point > -4 && point <= 16) {
        if (point <= 0) {
            out[k++] = '0';
            out[k++] = '.';
            for (int i = 0; i < -point; i++) {
                out[k++] = '0';
            }
            memcpy(out + k, digits, n);
            k += n;
        }
        else {
            for (size_t i = 0; i < (size_t)point; i++) {
                out[k++] = i < n ? digits[i] : '0';
            }
            out[k++] = '.';
            if ((size_t)point >= n) {
                out[k++] = '0';
            }
            else {
                memcpy(out + k, digits + point, n - (size_t)point);
                k += n - (size_t)point;
            }
        }
        out[k] = '\0';
    }
    else {
        out[k++] = digits[0];
        if (n > 1) {
            out[k++] = '.';
            memcpy(out + k, digits + 1, n - 1);
            k += n - 1;
        }
        snprintf(out + k,
                 TS_JSON_REAL_SIZE - k,
                 "e%c%02d",
                 exponent < 0 ? '-' : '+',
                 exponent < 0 ? -exponent : exponent);
    }
}

/* What put_string does with each byte: copy it, escape it always, escape it
 * in ASCII mode (non-ASCII), escape it in a script island (& < >), or look
 * further (0xE2 starts U+2028 and U+2029, which end a line in JavaScript). */
enum {
    COPY,
    ESCAPE,
    HIGH,
    HTML,
    E2
};

#define C COPY
#define X ESCAPE
#define H HIGH
#define T HTML
#define E E2
/* clang-format off */
static const unsigned char byte_class[256] = {
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,  /* 0x00 */
    X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X,  /* 0x10 */
    C, C, X, C, C, C, T, C, C, C, C, C, C, C, C, C,  /* 0x20 */
    C, C, C, C, C, C, C, C, C, C, C, C, T, C, T, C,  /* 0x30 */
    C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C,  /* 0x40 */
    C, C, C, C, C, C, C, C, C, C, C, C, X, C, C, C,  /* 0x50 */
    C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C,  /* 0x60 */
    C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, H,  /* 0x70 */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0x80 */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0x90 */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xA0 */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xB0 */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xC0 */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xD0 */
    H, H, E, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xE0 */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xF0 */
};
/* clang-format on */
#undef C
#undef X
#undef H
#undef T
#undef E

/* Writes the escape of the character at `p` (`width` bytes of it are
 * returned through `width`). */
static void
put_escape(out_buf *b,
           const unsigned char *p,
           const unsigned char *end,
           size_t *width)
{
    char esc[16];
    unsigned char ch = *p;
    uint32_t cp;
    *width = 1;
    switch (ch) {
        case '"':
            put(b, "\\\"");
            return;
        case '\\':
            put(b, "\\\\");
            return;
        case '\n':
            put(b, "\\n");
            return;
        case '\r':
            put(b, "\\r");
            return;
        case '\t':
            put(b, "\\t");
            return;
        case '\b':
            put(b, "\\b");
            return;
        case '\f':
            put(b, "\\f");
            return;
        default:
            break;
    }
    if (ch < 0x80) {
        snprintf(esc, sizeof esc, "\\u%04x", ch);
        put(b, esc);
        return;
    }
    *width = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : 2;
    cp = ch & (*width == 4 ? 0x07u : *width == 3 ? 0x0Fu : 0x1Fu);
    for (size_t i = 1; i < *width && p + i < end; i++) {
        cp = (cp << 6) | (p[i] & 0x3Fu);
    }
    if (cp >= 0x10000) {
        cp -= 0x10000;
        snprintf(esc,
                 sizeof esc,
                 "\\u%04x\\u%04x",
                 (unsigned)(0xD800 + (cp >> 10)),
                 (unsigned)(0xDC00 + (cp & 0x3FF)));
    }
    else {
        snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
    }
    put(b, esc);
}

/* A JSON string literal of valid UTF-8 `s` (`len` bytes), escaped as
 * Python's json module escapes it; `ascii` escapes every non-ASCII
 * character, `script` also & < > U+2028 U+2029 (the same JSON value, safe
 * inside an HTML script element). */
static void
put_string(out_buf *b, const char *s, size_t len, bool ascii, bool script)
{
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *end = p + len;
    const unsigned char *run = p;
    put_n(b, "\"", 1);
    while (p < end) {
        size_t width;
        while (p < end && byte_class[*p] == COPY) {
            p++;
        }
        if (p == end) {
            break;
        }
        switch (byte_class[*p]) {
            case COPY:
                p++;
                continue;
            case HIGH:
                if (!ascii) {
                    p++;
                    continue;
                }
                break;
            case HTML:
                if (!script) {
                    p++;
                    continue;
                }
                break;
            case E2:
                if (!ascii
                    && !(script && end - p >= 3 && p[1] == 0x80
                         && (p[2] == 0xA8 || p[2] == 0xA9))) {
                    p++;
                    continue;
                }
                break;
            default:
                break;
        }
        put_n(b, (const char *)run, (size_t)(p - run));
        put_escape(b, p, end, &width);
        p += width;
        run = p;
    }
    put_n(b, (const char *)run, (size_t)(p - run));
    put_n(b, "\"", 1);
}

static void
put_newline(out_buf *b, int indent, int level)
{
    put(b, "\n");
    for (int i = 0; i < indent * level && !b->failed; i++) {
        put(b, " ");
    }
}

static void
put_value(out_buf *b, const json_t *value, int indent, int level, bool script)
{
    char text[TS_JSON_REAL_SIZE];
    bool pretty = indent >= 0;
    switch (json_typeof(value)) {
        case JSON_OBJECT: {
            const char *key;
            size_t key_len;
            json_t *item;
            bool first = true;
            if (json_object_size(value) == 0) {
                put(b, "{}");
                return;
            }
            put(b, "{");
            json_object_keylen_foreach((json_t *)value, key, key_len, item)
            {
                put(b, first ? "" : ",");
                first = false;
                if (pretty) {
                    put_newline(b, indent, level + 1);
                }
                put_string(b, key, key_len, pretty, script);
                put(b, pretty ? ": " : ":");
                put_value(b, item, indent, level + 1, script);
            }
            if (pretty) {
                put_newline(b, indent, level);
            }
            put(b, "}");
            return;
        }
        case JSON_ARRAY:
            if (json_array_size(value) == 0) {
                put(b, "[]");
                return;
            }
            put(b, "[");
            for (size_t i = 0; i < json_array_size(value); i++) {
                put(b, i ? "," : "");
                if (pretty) {
                    put_newline(b, indent, level + 1);
                }
                put_value(
                    b, json_array_get(value, i), indent, level + 1, script);
            }
            if (pretty) {
                put_newline(b, indent, level);
            }
            put(b, "]");
            return;
        case JSON_STRING:
            put_string(b,
                       json_string_value(value),
                       json_string_length(value),
                       pretty,
                       script);
            return;
        case JSON_INTEGER:
            ts_text_put_int(b, json_integer_value(value));
            return;
        case JSON_REAL:
            ts_format_json_real(json_real_value(value), text);
            put(b, text);
            return;
        case JSON_TRUE:
            put(b, "true");
            return;
        case JSON_FALSE:
            put(b, "false");
            return;
        case JSON_NULL:
        default:
            put(b, "null");
            return;
    }
}

void
ts_json_put(ts_text_buf *b, const json_t *value, int indent, bool script)
{
    if (value == NULL) {
        put(b, "null");
    }
    else {
        put_value(b, value, indent, 0, script);
    }
}

char *
ts_json_text(const json_t *value, int indent)
{
    out_buf b = {NULL, 0, 0, false};
    ts_json_put(&b, value, indent, false);
    if (b.failed) {
        free(b.data);
        return NULL;
    }
    return b.data;
}
