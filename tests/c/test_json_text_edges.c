/* json_text.c: Python's repr() of floats at the edges of its fixed and
 * exponent forms, and json.dumps' escapes (\b, \f, other control
 * characters, non-ASCII and astral characters as surrogate pairs with
 * indent, raw without). Expected texts are what CPython 3 prints. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/json_text.h"

static void
check_real(double value, const char *expected)
{
    char out[TS_JSON_REAL_SIZE];
    ts_format_json_real(value, out);
    CHECK_EQ_STR(out, expected);
}

static void
test_reals(void)
{
    check_real(1e16, "1e+16");
    check_real(1e-5, "1e-05");
    check_real(0.0001, "0.0001");
    check_real(123.0, "123.0");
    check_real(-0.5, "-0.5");
    check_real(0.1, "0.1");
    check_real(1.5e300, "1.5e+300");
    check_real(5e-324, "5e-324");
    check_real(1234567890123456.0, "1234567890123456.0");
    check_real(12345678901234567.0, "1.2345678901234568e+16");
    check_real(1.7976931348623157e308, "1.7976931348623157e+308");
    check_real(-2.5e-7, "-2.5e-07");
}

static void
test_strings(void)
{
    /* {"k\u00e9": "a\b\f\x01\u00e9\U0001F600\u2028"} */
    json_t *v = json_pack(
        "{s:s}", "k\xc3\xa9", "a\b\f\x01\xc3\xa9\xf0\x9f\x98\x80\xe2\x80\xa8");
    char *pretty = ts_json_text(v, 2);
    char *compact = ts_json_text(v, -1);
    /* json.dumps(v, indent=2) */
    CHECK_EQ_STR(pretty,
                 "{\n  \"k\\u00e9\": "
                 "\"a\\b\\f\\u0001\\u00e9\\ud83d\\ude00\\u2028\"\n}");
    /* json.dumps(v, separators=(",", ":"), ensure_ascii=False) */
    CHECK_EQ_STR(compact,
                 "{\"k\xc3\xa9\":\"a\\b\\f\\u0001\xc3\xa9\xf0\x9f\x98\x80"
                 "\xe2\x80\xa8\"}");
    free(pretty);
    free(compact);
    json_decref(v);
    /* empty containers, nested lists, reals and literals with indent 0 */
    v = json_pack("{s:{}, s:[[], [f, b, n]]}", "a", "b", 2.0, 0);
    pretty = ts_json_text(v, 0);
    CHECK_EQ_STR(
        pretty,
        "{\n\"a\": {},\n\"b\": [\n[],\n[\n2.0,\nfalse,\nnull\n]\n]\n}");
    free(pretty);
    json_decref(v);
}

int
main(void)
{
    test_reals();
    test_strings();
    return ts_test_report();
}
