/* Private to src/core: the text rules of the summary table (contract 5.1),
 * which are also TorchScan 0.2.0's torchscan.utils helpers (format_name,
 * wrap_string, format_s, unit_scale). table.c applies them to whole
 * reports; table_text.c also exposes them one value at a time (table.h's
 * ts_table_* functions, behind torchscan.utils).
 *
 * Text is UTF-8 given with its length (it may hold NUL bytes) and is
 * measured, padded and cut in code points, as Python measures a str. A lone
 * surrogate encoded in three bytes (Python's "surrogatepass") is one code
 * point like any other: a continuation byte (10xxxxxx) never starts one. */
#ifndef TORCHSCAN_TABLE_TEXT_H
#define TORCHSCAN_TABLE_TEXT_H

#include "text_buf.h"
#include "torchscan/table.h"

/* The marks of the reference's wrap_string defaults: "[...]" and ".". */
extern const ts_wrap_marks ts_table_default_marks;

/* Code points in s[0:n]. */
size_t ts_utf8_chars(const char *s, size_t n);

/* true when s[0:n] is well-formed UTF-8 (RFC 3629: no overlong forms,
 * surrogates or code points past U+10FFFF), as jansson requires of a
 * string: a caller tells a bad text from a failed allocation with it. */
bool ts_utf8_valid(const char *s, size_t n);

/* Byte offset where code point k starts (n when k is past the end). */
size_t ts_utf8_offset(const char *s, size_t n, size_t k);

/* Appends wrap_string(s, max_len, marks, mode): s itself when it has at
 * most max_len code points or mode is TS_WRAP_NONE, else its head and
 * marks->wrap ("end") or marks->wrap + "." + the part after the last
 * marks->delimiter ("mid"), max_len code points in all when the tail fits.
 * TS_EINVAL ("received an unexpected value of argument `mode`") for
 * TS_WRAP_UNKNOWN when s needs shortening; TS_OK otherwise. */
int ts_put_wrapped(ts_text_buf *out,
                   const char *s,
                   size_t n,
                   int64_t max_len,
                   ts_wrap_mode mode,
                   const ts_wrap_marks *marks,
                   ts_error *err);

/* Appends format_s(s, min_w, max_w): s padded with spaces to min_w code
 * points, then cut to max_w (a negative width: none). */
void ts_put_cell(
    ts_text_buf *out, const char *s, size_t n, int64_t min_w, int64_t max_w);

/* Appends format_name(name, depth): the name at depth 0, "├─" + name at
 * depth 1, "|    " * (depth - 1) + "└─" + name deeper (and, as in 0.2.0,
 * "└─" + name for a negative depth). The caller bounds depth. */
void ts_put_layer_name(ts_text_buf *out,
                       const char *name,
                       size_t n,
                       int64_t depth);

/* Appends n with thousands separators, as Python's f"{n:,}". */
void ts_put_grouped(ts_text_buf *out, long long n);

#endif /* TORCHSCAN_TABLE_TEXT_H */
