/* A growable text buffer (see text_buf.h). */
#include "text_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
ts_text_reserve(ts_text_buf *b, size_t extra)
{
    char *grown;
    if (b->failed || b->len + 1 + extra <= b->cap) {
        return;
    }
    if (extra > SIZE_MAX - b->len - 1) {
        b->failed = true;
        return;
    }
    grown = realloc(b->data, b->len + 1 + extra);
    if (grown == NULL) {
        b->failed = true;
        return;
    }
    b->data = grown;
    b->cap = b->len + 1 + extra;
}

void
ts_text_put_grow(ts_text_buf *b, const char *text, size_t len)
{
    if (b->failed) {
        return;
    }
    if (len > SIZE_MAX - b->len - 1) {
        b->failed = true;
        return;
    }
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *grown;
        while (cap < b->len + len + 1) {
            cap = cap > SIZE_MAX / 2 ? b->len + len + 1 : cap * 2;
        }
        grown = realloc(b->data, cap);
        if (grown == NULL) {
            b->failed = true;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, text, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void
ts_text_put_escaped(ts_text_buf *b, const char *text)
{
    const char *start = text;
    if (text == NULL) {
        return;
    }
    for (const char *c = text; *c; c++) {
        const char *ref = NULL;
        switch (*c) {
            case '&':
                ref = "&amp;";
                break;
            case '<':
                ref = "&lt;";
                break;
            case '>':
                ref = "&gt;";
                break;
            case '"':
                ref = "&quot;";
                break;
            case '\'':
                ref = "&#x27;";
                break;
            default:
                break;
        }
        if (ref != NULL) {
            ts_text_put_n(b, start, (size_t)(c - start));
            ts_text_put(b, ref);
            start = c + 1;
        }
    }
    ts_text_put(b, start);
}

void
ts_text_printf(ts_text_buf *b, const char *fmt, ...)
{
    char small[128];
    va_list args;
    int len;
    if (b->failed) {
        return;
    }
    va_start(args, fmt);
    len = vsnprintf(small, sizeof small, fmt, args);
    va_end(args);
    if (len < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)len < sizeof small) {
        ts_text_put_n(b, small, (size_t)len);
        return;
    }
    {
        char *big = malloc((size_t)len + 1);
        if (big == NULL) {
            b->failed = true;
            return;
        }
        va_start(args, fmt);
        vsnprintf(big, (size_t)len + 1, fmt, args);
        va_end(args);
        ts_text_put_n(b, big, (size_t)len);
        free(big);
    }
}

void
ts_text_put_int(ts_text_buf *b, int64_t value)
{
    char digits[24];
    size_t i = sizeof digits;
    uint64_t mag = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    do {
        digits[--i] = (char)('0' + mag % 10);
        mag /= 10;
    } while (mag > 0);
    if (value < 0) {
        digits[--i] = '-';
    }
    ts_text_put_n(b, digits + i, sizeof digits - i);
}
