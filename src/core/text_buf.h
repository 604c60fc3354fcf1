/* Private to src/core: a growable NUL-terminated text buffer, shared by the
 * writers of text (JSON, HTML, summaries, operator docs). A failed
 * allocation sticks: later appends do nothing and the writer reports
 * out-of-memory once at the end. */
#ifndef TORCHSCAN_TEXT_BUF_H
#define TORCHSCAN_TEXT_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct ts_text_buf {
    char *data; /* malloc'd, NUL-terminated once anything was appended */
    size_t len, cap;
    bool failed;
} ts_text_buf;

/* Makes room for `extra` more bytes in one allocation (so that a text too
 * large for memory fails at once, before anything is written). */
void ts_text_reserve(ts_text_buf *b, size_t extra);

/* Appends `len` bytes of `text` when the buffer must grow first (the slow
 * path of ts_text_put_n). */
void ts_text_put_grow(ts_text_buf *b, const char *text, size_t len);

/* Appends `len` bytes of `text`. Inline: the page and JSON writers append
 * millions of short pieces, most of which fit the buffer as it is. */
static inline void
ts_text_put_n(ts_text_buf *b, const char *text, size_t len)
{
    if (!b->failed && len < b->cap - b->len) { /* cap > len always holds */
        memcpy(b->data + b->len, text, len);
        b->len += len;
        b->data[b->len] = '\0';
        return;
    }
    ts_text_put_grow(b, text, len);
}

/* Appends a NUL-terminated string. */
static inline void
ts_text_put(ts_text_buf *b, const char *text)
{
    ts_text_put_n(b, text, strlen(text));
}

/* Appends `text` (NULL appends nothing) with & < > " ' replaced by HTML
 * character references: safe in HTML and SVG text and attribute values. */
void ts_text_put_escaped(ts_text_buf *b, const char *text);

/* Appends a decimal integer (without printf: the page writers emit
 * millions). */
void ts_text_put_int(ts_text_buf *b, int64_t value);

/* Appends printf-formatted text. Numbers are formatted by the C library in
 * the "C" locale's notation (the engine never calls setlocale). */
void ts_text_printf(ts_text_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
