/* The text rules of the summary table (table_text.h), which are TorchScan
 * 0.2.0's torchscan.utils helpers, and those helpers one value at a time
 * (table.h). The rules mirror the reference's Python byte for byte: widths
 * in code points, Python's slices for negative stops, its f"{n:,}". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "table_text.h"

const ts_wrap_marks ts_table_default_marks = {".", 1, "[...]", 5};

/* UTF-8 of the box-drawing characters U+251C, U+2514 and U+2500. */
#define TREE_BRANCH "\xe2\x94\x9c\xe2\x94\x80"
#define TREE_LAST "\xe2\x94\x94\xe2\x94\x80"
#define TREE_INDENT "|    "
#define TREE_INDENT_LEN 5
#define TREE_MARK_LEN 6

size_t
ts_utf8_chars(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            count++;
        }
    }
    return count;
}

bool
ts_utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned char c = u[i];
        size_t len = c < 0x80                 ? 1
                     : c >= 0xC2 && c <= 0xDF ? 2
                     : (c & 0xF0) == 0xE0     ? 3
                     : c >= 0xF0 && c <= 0xF4 ? 4
                                              : 0;
        uint32_t cp = len == 1 ? c : c & (0x7F >> len);
        if (len == 0 || n - i < len) {
            return false;
        }
        for (size_t k = 1; k < len; k++) {
            if ((u[i + k] & 0xC0) != 0x80) {
                return false;
            }
            cp = cp << 6 | (u[i + k] & 0x3F);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)))
            || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
            return false;
        }
        i += len;
    }
    return true;
}

size_t
ts_utf8_offset(const char *s, size_t n, size_t k)
{
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (seen == k) {
                return i;
            }
            seen++;
        }
    }
    return n;
}

/* Appends `count` copies of piece[0:len], stopping once an allocation
 * failed (a huge width must not spin on a buffer that no longer grows). */
static void
put_repeat(ts_text_buf *out, const char *piece, size_t len, uint64_t count)
{
    if (count > SIZE_MAX / len) {
        out->failed = true;
        return;
    }
    ts_text_reserve(out, (size_t)(count * len));
    for (uint64_t i = 0; i < count && !out->failed; i++) {
        ts_text_put_n(out, piece, len);
    }
}

/* Appends `count` spaces, 64 at a time. */
static void
put_spaces(ts_text_buf *out, uint64_t count)
{
    static const char spaces[] =
        "                                                                ";
    const size_t chunk = sizeof spaces - 1;
    ts_text_reserve(out, (size_t)count);
    for (; count >= chunk && !out->failed; count -= chunk) {
        ts_text_put_n(out, spaces, chunk);
    }
    ts_text_put_n(out, spaces, (size_t)count);
}

/* Appends Python's s[:stop] (stop may be negative). */
static void
put_head(ts_text_buf *out, const char *s, size_t n, int64_t stop)
{
    size_t chars = ts_utf8_chars(s, n);
    size_t keep;
    if (stop >= 0) {
        keep = (uint64_t)stop < chars ? (size_t)stop : chars;
    }
    else {
        uint64_t drop = (uint64_t)(-(stop + 1)) + 1;
        keep = drop < chars ? chars - (size_t)drop : 0;
    }
    ts_text_put_n(out, s, ts_utf8_offset(s, n, keep));
}

/* Byte offset just past the last `delim` in s (0 without one): where
 * Python's s.rpartition(delim)[2] starts. */
static size_t
last_part(const char *s, size_t n, const char *delim, size_t delim_len)
{
    if (delim_len == 0 || delim_len > n) {
        return 0;
    }
    for (size_t i = n - delim_len + 1; i-- > 0;) {
        if (memcmp(s + i, delim, delim_len) == 0) {
            return i + delim_len;
        }
    }
    return 0;
}

int
ts_put_wrapped(ts_text_buf *out,
               const char *s,
               size_t n,
               int64_t max_len,
               ts_wrap_mode mode,
               const ts_wrap_marks *marks,
               ts_error *err)
{
    size_t chars = ts_utf8_chars(s, n);
    size_t wrap_chars = ts_utf8_chars(marks->wrap, marks->wrap_len);
    if (mode == TS_WRAP_NONE || (max_len >= 0 && chars <= (uint64_t)max_len)) {
        ts_text_put_n(out, s, n);
        return TS_OK;
    }
    if (mode == TS_WRAP_END) {
        put_head(out, s, n, max_len - (int64_t)wrap_chars);
        ts_text_put_n(out, marks->wrap, marks->wrap_len);
        return TS_OK;
    }
    if (mode == TS_WRAP_MID) {
        size_t start = last_part(s, n, marks->delimiter, marks->delimiter_len);
        size_t tail_chars =
            wrap_chars + 1 + ts_utf8_chars(s + start, n - start);
        put_head(out, s, n, max_len - (int64_t)tail_chars);
        ts_text_put_n(out, marks->wrap, marks->wrap_len);
        ts_text_put_n(out, ".", 1);
        ts_text_put_n(out, s + start, n - start);
        return TS_OK;
    }
    return ts_error_set(
        err, TS_EINVAL, "received an unexpected value of argument `mode`");
}

void
ts_put_cell(
    ts_text_buf *out, const char *s, size_t n, int64_t min_w, int64_t max_w)
{
    size_t chars = ts_utf8_chars(s, n);
    size_t keep = chars;
    size_t pad = 0;
    if (min_w >= 0 && (uint64_t)min_w > chars) {
        pad = (size_t)min_w - chars;
    }
    if (max_w >= 0 && (uint64_t)max_w < chars + pad) {
        if ((uint64_t)max_w <= chars) {
            keep = (size_t)max_w;
            pad = 0;
        }
        else {
            pad = (size_t)max_w - chars;
        }
    }
    ts_text_put_n(out, s, ts_utf8_offset(s, n, keep));
    put_spaces(out, pad);
}

void
ts_put_layer_name(ts_text_buf *out, const char *name, size_t n, int64_t depth)
{
    if (depth == 1) {
        ts_text_put(out, TREE_BRANCH);
    }
    else if (depth != 0) {
        put_repeat(out,
                   TREE_INDENT,
                   TREE_INDENT_LEN,
                   depth > 1 ? (uint64_t)depth - 1 : 0);
        ts_text_put(out, TREE_LAST);
    }
    ts_text_put_n(out, name, n);
}

void
ts_put_grouped(ts_text_buf *out, long long n)
{
    char digits[32];
    unsigned long long magnitude =
        n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
    int len = snprintf(digits, sizeof digits, "%llu", magnitude);
    if (n < 0) {
        ts_text_put_n(out, "-", 1);
    }
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0) {
            ts_text_put_n(out, ",", 1);
        }
        ts_text_put_n(out, digits + i, 1);
    }
}

/* ---- one value at a time ---- */

/* Hands the buffer over as *out, or frees it and reports out-of-memory. */
static int
finish(ts_text_buf *b, int rc, ts_table_text *out, ts_error *err)
{
    if (rc == TS_OK && b->failed) {
        rc = ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    if (rc == TS_OK && b->data == NULL) {
        /* nothing was appended: the empty text */
        b->data = calloc(1, 1);
        if (b->data == NULL) {
            rc = ts_error_set(err, TS_ENOMEM, "out of memory");
        }
    }
    if (rc != TS_OK) {
        free(b->data);
        out->data = NULL;
        out->len = 0;
        return rc;
    }
    out->data = b->data;
    out->len = b->len;
    return TS_OK;
}

/* TS_ENOMEM when `count` pieces of `piece` bytes and `extra` more bytes
 * cannot be one text. */
static int
check_size(uint64_t count, size_t piece, size_t extra, ts_error *err)
{
    if (count > (SIZE_MAX - extra - 1) / piece) {
        return ts_error_set(err, TS_ENOMEM, "the text would be too large");
    }
    return TS_OK;
}

int
ts_table_format_name(const char *name,
                     size_t len,
                     int64_t depth,
                     ts_table_text *out,
                     ts_error *err)
{
    ts_text_buf b = {NULL, 0, 0, false};
    int rc = TS_OK;
    ts_error_clear(err);
    if (depth < 0) {
        rc = ts_error_set(
            err, TS_EINVAL, "depth must be >= 0, got %lld.", (long long)depth);
    }
    else if (len > SIZE_MAX - TREE_MARK_LEN - 1) {
        rc = ts_error_set(err, TS_ENOMEM, "the text would be too large");
    }
    else if (depth > 1) {
        rc = check_size(
            (uint64_t)depth - 1, TREE_INDENT_LEN, len + TREE_MARK_LEN, err);
    }
    if (rc == TS_OK) {
        ts_put_layer_name(&b, name, len, depth);
    }
    return finish(&b, rc, out, err);
}

int
ts_table_wrap_string(const char *s,
                     size_t len,
                     int64_t max_len,
                     const ts_wrap_marks *marks,
                     ts_wrap_mode mode,
                     ts_table_text *out,
                     ts_error *err)
{
    ts_text_buf b = {NULL, 0, 0, false};
    int rc = TS_OK;
    ts_error_clear(err);
    if (max_len < 0) {
        rc = ts_error_set(err,
                          TS_EINVAL,
                          "max_len must be >= 0, got %lld.",
                          (long long)max_len);
    }
    else if (marks == NULL || marks->delimiter_len == 0) {
        rc =
            ts_error_set(err, TS_EINVAL, "delimiter must be a non-empty str.");
    }
    else {
        rc = ts_put_wrapped(&b, s, len, max_len, mode, marks, err);
    }
    return finish(&b, rc, out, err);
}

int
ts_table_format_s(const char *s,
                  size_t len,
                  int64_t min_w,
                  int64_t max_w,
                  ts_table_text *out,
                  ts_error *err)
{
    ts_text_buf b = {NULL, 0, 0, false};
    int rc = TS_OK;
    int64_t widest = max_w < 0 || min_w < max_w ? min_w : max_w;
    ts_error_clear(err);
    if (widest > 0) {
        /* refuse a width no text can have before writing any padding */
        rc = check_size((uint64_t)widest, 1, len, err);
    }
    if (rc == TS_OK) {
        ts_put_cell(&b, s, len, min_w, max_w);
    }
    return finish(&b, rc, out, err);
}

bool
ts_table_unit_scale(double value, double *divisor, const char **prefix)
{
    static const struct {
        double factor;
        const char *prefix;
    } scales[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
    /* value // factor > 0 holds exactly when a finite value reaches the
     * factor; Python's floor division of infinity is NaN, never > 0 */
    for (size_t i = 0; isfinite(value) && i < sizeof scales / sizeof *scales;
         i++) {
        if (value >= scales[i].factor) {
            *divisor = scales[i].factor;
            *prefix = scales[i].prefix;
            return true;
        }
    }
    *divisor = 1.0;
    *prefix = "";
    return false;
}

void
ts_table_texts_free(ts_table_text *texts, int count)
{
    for (int i = 0; i < count; i++) {
        free(texts[i].data);
        texts[i].data = NULL;
        texts[i].len = 0;
    }
}
