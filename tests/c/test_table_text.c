/* The table's text rules one value at a time (table_text.c): TorchScan
 * 0.2.0's format_name, wrap_string, format_s and unit_scale. Every expected
 * text is derived by hand from 0.2.0's Python, written beside it:
 *   format_name: name if depth == 0; "├─" + name if depth == 1; else
 *                "|    " * (depth - 1) + "└─" + name
 *   wrap_string: s if mode is None or len(s) <= max_len; "end": tail =
 *                wrap; "mid": tail = wrap + "." + s.rpartition(delim)[2];
 *                s[:max_len - len(tail)] + tail
 *   format_s:    s.ljust(min_w)[:max_w]
 *   unit_scale:  the first of 1e12 "T", 1e9 "G", 1e6 "M", 1e3 "k" with
 *                val // factor > 0 */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "table_text.h"
#include "torchscan/table.h"

/* UTF-8 of U+251C U+2500 ("├─") and U+2514 U+2500 ("└─"). */
#define BRANCH "\xe2\x94\x9c\xe2\x94\x80"
#define LAST "\xe2\x94\x94\xe2\x94\x80"

static const ts_wrap_marks marks = {".", 1, "[...]", 5};

static void
check_text(int rc, ts_table_text *t, const char *expected, size_t len)
{
    CHECK_EQ_INT(rc, TS_OK);
    CHECK(t->data != NULL && t->len == len
          && memcmp(t->data, expected, len) == 0 && t->data[len] == '\0');
    if (t->data != NULL && (t->len != len || memcmp(t->data, expected, len))) {
        fprintf(stderr, "  got \"%.*s\"\n", (int)t->len, t->data);
    }
    free(t->data);
    t->data = NULL;
}

#define CHECK_TEXT(rc, t, expected) \
    check_text((rc), (t), (expected), sizeof(expected) - 1)

static int
name(const char *s, int64_t depth, ts_table_text *t, ts_error *err)
{
    return ts_table_format_name(s, strlen(s), depth, t, err);
}

static int
wrap(const char *s,
     int64_t max_len,
     ts_wrap_mode mode,
     ts_table_text *t,
     ts_error *err)
{
    return ts_table_wrap_string(s, strlen(s), max_len, &marks, mode, t, err);
}

static int
cell(const char *s,
     int64_t min_w,
     int64_t max_w,
     ts_table_text *t,
     ts_error *err)
{
    return ts_table_format_s(s, strlen(s), min_w, max_w, t, err);
}

static void
test_format_name(void)
{
    ts_table_text t;
    ts_error err;
    CHECK_TEXT(name("a.b", 0, &t, &err), &t, "a.b");
    CHECK_TEXT(name("a.b", 1, &t, &err), &t, BRANCH "a.b");
    CHECK_TEXT(name("a.b", 2, &t, &err), &t, "|    " LAST "a.b");
    CHECK_TEXT(name("a.b", 3, &t, &err), &t, "|    |    " LAST "a.b");
    CHECK_TEXT(name("", 0, &t, &err), &t, "");
    /* a NUL inside the name is kept (the length is given) */
    CHECK_TEXT(
        ts_table_format_name("a\0b", 3, 1, &t, &err), &t, BRANCH "a\0b");
    CHECK_EQ_INT(name("a", -1, &t, &err), TS_EINVAL);
    CHECK(t.data == NULL);
    CHECK_EQ_STR(err.message, "depth must be >= 0, got -1.");
    /* 5 bytes per level past SIZE_MAX: refused before anything is written */
    CHECK_EQ_INT(name("a", INT64_MAX, &t, &err), TS_ENOMEM);
    CHECK(t.data == NULL);
}

static void
test_wrap_string(void)
{
    ts_table_text t;
    ts_error err;
    ts_wrap_marks arrow = {"::", 2, "~", 1};
    /* 19 characters into 12: "end" keeps 12 - 5 = 7 */
    CHECK_TEXT(wrap("features.block.conv", 12, TS_WRAP_END, &t, &err),
               &t,
               "feature[...]");
    /* "mid": tail "[...]" "." "conv" is 10, so 2 are kept */
    CHECK_TEXT(wrap("features.block.conv", 12, TS_WRAP_MID, &t, &err),
               &t,
               "fe[...].conv");
    CHECK_TEXT(wrap("features.block.conv", 12, TS_WRAP_NONE, &t, &err),
               &t,
               "features.block.conv");
    /* fits: returned whole, whatever the mode */
    CHECK_TEXT(wrap("short", 5, TS_WRAP_UNKNOWN, &t, &err), &t, "short");
    /* a negative stop counts from the end: "mid" of "abcdefgh.xyz" into 6:
     * tail "[...].xyz" is 9, s[:-3] = "abcdefgh." */
    CHECK_TEXT(wrap("abcdefgh.xyz", 6, TS_WRAP_MID, &t, &err),
               &t,
               "abcdefgh.[...].xyz");
    /* no delimiter: the last part is all of s; tail 12: s[:4 - 12] = "" */
    CHECK_TEXT(wrap("abcdef", 4, TS_WRAP_MID, &t, &err), &t, "[...].abcdef");
    /* "end" into 2: s[:-3] of "abcdef" is "abc" */
    CHECK_TEXT(wrap("abcdef", 2, TS_WRAP_END, &t, &err), &t, "abc[...]");
    /* other marks: tail "~" "." "c" is 3 (the "." is always a dot), the
     * last part follows the last "::"; s[:5 - 3] = "a:" */
    CHECK_TEXT(
        ts_table_wrap_string("a::b::c", 7, 5, &arrow, TS_WRAP_MID, &t, &err),
        &t,
        "a:~.c");
    /* code points, not bytes: "блок.слой" (9) into 8, "end": 3 kept */
    CHECK_TEXT(wrap("\xd0\xb1\xd0\xbb\xd0\xbe\xd0\xba.\xd1\x81\xd0\xbb\xd0\xbe"
                    "\xd0\xb9",
                    8,
                    TS_WRAP_END,
                    &t,
                    &err),
               &t,
               "\xd0\xb1\xd0\xbb\xd0\xbe[...]");
    /* a lone surrogate (Python's surrogatepass: ED A0 80) is one code
     * point: "\ud800abcdef" (7) into 6, "end": 1 kept */
    CHECK_TEXT(wrap("\xed\xa0\x80"
                    "abcdef",
                    6,
                    TS_WRAP_END,
                    &t,
                    &err),
               &t,
               "\xed\xa0\x80[...]");

    CHECK_EQ_INT(wrap("features.block.conv", 5, TS_WRAP_UNKNOWN, &t, &err),
                 TS_EINVAL);
    CHECK(t.data == NULL);
    CHECK_EQ_STR(err.message,
                 "received an unexpected value of argument `mode`");
    CHECK_EQ_INT(wrap("abc", -1, TS_WRAP_END, &t, &err), TS_EINVAL);
    arrow.delimiter_len = 0;
    CHECK_EQ_INT(
        ts_table_wrap_string("abc", 3, 1, &arrow, TS_WRAP_MID, &t, &err),
        TS_EINVAL);
    CHECK_EQ_STR(err.message, "delimiter must be a non-empty str.");
}

static void
test_format_s(void)
{
    ts_table_text t;
    ts_error err;
    CHECK_TEXT(cell("abc", 5, 2, &t, &err), &t, "ab");
    CHECK_TEXT(cell("abc", 5, -1, &t, &err), &t, "abc  ");
    CHECK_TEXT(cell("abcdef", -1, 4, &t, &err), &t, "abcd");
    CHECK_TEXT(cell("abc", -1, -1, &t, &err), &t, "abc");
    CHECK_TEXT(cell("abc", 4, 4, &t, &err), &t, "abc ");
    /* padded to 6, then cut to 5 */
    CHECK_TEXT(cell("ab", 6, 5, &t, &err), &t, "ab   ");
    CHECK_TEXT(cell("", 0, 0, &t, &err), &t, "");
    /* 70 spaces: more than one chunk of padding */
    {
        char expected[72];
        memset(expected, ' ', 70);
        expected[0] = 'x';
        expected[70] = '\0';
        CHECK_EQ_INT(cell("x", 70, -1, &t, &err), TS_OK);
        CHECK(t.len == 70 && strcmp(t.data, expected) == 0);
        free(t.data);
    }
    /* code points: "ёж" is 2 */
    CHECK_TEXT(
        cell("\xd1\x91\xd0\xb6", 3, -1, &t, &err), &t, "\xd1\x91\xd0\xb6 ");
    CHECK_TEXT(cell("\xd1\x91\xd0\xb6", -1, 1, &t, &err), &t, "\xd1\x91");
    /* (a width no allocation can hold fails at its one allocation, before
     * anything is written: tests/python/test_table_text.py checks it,
     * outside AddressSanitizer, which aborts on such a request) */
}

static void
test_unit_scale(void)
{
    static const struct {
        double value;
        double divisor;
        const char *prefix;
    } cases[] = {
        {0.5, 1.0, ""},
        {999.0, 1.0, ""},
        {999.9999999999999, 1.0, ""},
        {1000.0, 1e3, "k"},
        {2.5e6, 1e6, "M"},
        {3e9, 1e9, "G"},
        {4e12, 1e12, "T"},
        {5e15, 1e12, "T"},
        {-5000.0, 1.0, ""},
        {0.0, 1.0, ""},
    };
    double divisor;
    const char *prefix;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        bool scaled = ts_table_unit_scale(cases[i].value, &divisor, &prefix);
        CHECK(scaled == (cases[i].prefix[0] != '\0'));
        CHECK_EQ_REAL(divisor, cases[i].divisor);
        CHECK_EQ_STR(prefix, cases[i].prefix);
    }
    /* float("inf") // 1e12 and NaN // 1e12 are NaN: never > 0 */
    CHECK(!ts_table_unit_scale(INFINITY, &divisor, &prefix));
    CHECK(!ts_table_unit_scale(NAN, &divisor, &prefix));
    CHECK_EQ_STR(prefix, "");
}

/* Well-formed UTF-8 (RFC 3629), as jansson takes a string: render's title
 * check tells a bad text from a failed allocation with it. */
static void
test_utf8_valid(void)
{
    static const struct {
        const char *text;
        bool valid;
    } cases[] = {
        {"", true},
        {"plain", true},
        {"caf\xc3\xa9", true},       /* U+00E9 */
        {"\xe2\x82\xac", true},      /* U+20AC */
        {"\xf0\x9f\x98\x80", true},  /* U+1F600 */
        {"\xf4\x8f\xbf\xbf", true},  /* U+10FFFF, the last */
        {"\xc0\x80", false},         /* overlong NUL */
        {"\xc1\xbf", false},         /* overlong */
        {"\xe0\x80\x80", false},     /* overlong */
        {"\xf0\x80\x80\x80", false}, /* overlong */
        {"\xed\xa0\x80", false},     /* surrogate U+D800 */
        {"\xf4\x90\x80\x80", false}, /* past U+10FFFF */
        {"\xf5\x80\x80\x80", false}, /* no such lead byte */
        {"\x80", false},             /* a stray continuation */
        {"\xe2\x82", false},         /* cut short */
        {"a\xc3(", false},           /* continuation missing */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_EQ_INT(ts_utf8_valid(cases[i].text, strlen(cases[i].text)),
                     cases[i].valid);
    }
}

int
main(void)
{
    test_utf8_valid();
    test_format_name();
    test_wrap_string();
    test_format_s();
    test_unit_scale();
    return ts_test_report();
}
