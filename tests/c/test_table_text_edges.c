/* table_text.c refusals and edges test_table_text.c leaves out: missing
 * or empty wrap marks, negative lengths and depths, an unknown wrap mode
 * on a text that needs shortening, a delimiter longer than the text, and
 * widths or names too large to allocate. Expected texts are Python's
 * slicing of the reference's wrap_string. (No test asks for a width that
 * passes the size check: malloc of such a size aborts under ASan.) */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "torchscan/table.h"

static void
test_wrap(void)
{
    ts_table_text out = {NULL, 0};
    ts_error err;
    const ts_wrap_marks marks = {"::::::::::::", 12, "[", 1};
    const ts_wrap_marks empty = {"", 0, "[", 1};
    CHECK_EQ_INT(
        ts_table_wrap_string("abc", 3, 2, NULL, TS_WRAP_MID, &out, &err),
        TS_EINVAL);
    CHECK_EQ_STR(err.message, "delimiter must be a non-empty str.");
    CHECK_EQ_INT(
        ts_table_wrap_string("abc", 3, 2, &empty, TS_WRAP_MID, &out, &err),
        TS_EINVAL);
    CHECK_EQ_INT(
        ts_table_wrap_string("abc", 3, -1, &marks, TS_WRAP_MID, &out, &err),
        TS_EINVAL);
    CHECK_EQ_STR(err.message, "max_len must be >= 0, got -1.");
    CHECK_EQ_INT(ts_table_wrap_string(
                     "abcdefghij", 10, 6, &marks, TS_WRAP_UNKNOWN, &out, &err),
                 TS_EINVAL);
    CHECK_EQ_STR(err.message,
                 "received an unexpected value of argument `mode`");
    /* an unknown mode is fine when nothing needs shortening */
    CHECK_EQ_INT(
        ts_table_wrap_string("abc", 3, 6, &marks, TS_WRAP_UNKNOWN, &out, &err),
        TS_OK);
    CHECK_EQ_STR(out.data, "abc");
    free(out.data);
    /* the delimiter is longer than the text: the tail is the whole text,
     * s[:6 - 1 - 1 - 10] = s[:-6] = "abcd" */
    CHECK_EQ_INT(ts_table_wrap_string(
                     "abcdefghij", 10, 6, &marks, TS_WRAP_MID, &out, &err),
                 TS_OK);
    CHECK_EQ_STR(out.data, "abcd[.abcdefghij");
    free(out.data);
    /* END: s[:6 - 1] + "[" */
    CHECK_EQ_INT(ts_table_wrap_string(
                     "abcdefghij", 10, 6, &marks, TS_WRAP_END, &out, &err),
                 TS_OK);
    CHECK_EQ_STR(out.data, "abcde[");
    free(out.data);
}

static void
test_sizes(void)
{
    ts_table_text out = {NULL, 0};
    ts_error err;
    CHECK_EQ_INT(ts_table_format_name("a", 1, -2, &out, &err), TS_EINVAL);
    CHECK_EQ_STR(err.message, "depth must be >= 0, got -2.");
    CHECK_EQ_INT(ts_table_format_name("a", SIZE_MAX - 2, 1, &out, &err),
                 TS_ENOMEM);
    CHECK_EQ_STR(err.message, "the text would be too large");
    CHECK_EQ_INT(ts_table_format_name("a", 1, INT64_MAX, &out, &err),
                 TS_ENOMEM);
    /* min 4, max 2: cut to 2 */
    CHECK_EQ_INT(ts_table_format_s("abc", 3, 4, 2, &out, &err), TS_OK);
    CHECK_EQ_STR(out.data, "ab");
    free(out.data);
    /* min 2, max 5: padded to... nothing, "abc" is wider than 2 */
    CHECK_EQ_INT(ts_table_format_s("abc", 3, 2, 5, &out, &err), TS_OK);
    CHECK_EQ_STR(out.data, "abc");
    free(out.data);
    /* min 6, max 5: padded to 5 */
    CHECK_EQ_INT(ts_table_format_s("abc", 3, 6, 5, &out, &err), TS_OK);
    CHECK_EQ_STR(out.data, "abc  ");
    free(out.data);
    /* 100 spaces of padding (more than one 64-space chunk) */
    CHECK_EQ_INT(ts_table_format_s("", 0, 100, -1, &out, &err), TS_OK);
    CHECK_EQ_INT(out.len, 100);
    CHECK(out.data != NULL && strspn(out.data, " ") == 100);
    free(out.data);
}

int
main(void)
{
    test_wrap();
    test_sizes();
    return ts_test_report();
}
