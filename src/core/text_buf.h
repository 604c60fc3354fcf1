/* Private to src/core: a growable NUL-terminated text buffer, shared by the
 * writers of text (JSON, HTML, summaries, operator docs). A failed
 * allocation sticks: later appends do nothing and the writer reports
 * out-of-memory once at the end. */
#ifndef TORCHSCAN_TEXT_BUF_H
#define TORCHSCAN_TEXT_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ts_text_buf {
    char *data; /* malloc'd, NUL-terminated once anything was appended */
    size_t len, cap;
    bool failed;
} ts_text_buf;

/* Makes room for `extra` more bytes in one allocation (so that a text too
 * large for memory fails at once, before anything is written). */
void ts_text_reserve(ts_text_buf *b, size_t extra);

/* Appends `len` bytes of `text`. */
void ts_text_put_n(ts_text_buf *b, const char *text, size_t len);

/* Appends a NUL-terminated string. */
void ts_text_put(ts_text_buf *b, const char *text);

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
