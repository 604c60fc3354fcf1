/* diff.c paths the fixtures of test_diff.c leave out: Python's == on the
 * objects json.loads builds (bool/int/float mixes, containers), Python's
 * repr() of metric names in error messages, and the refusals of
 * ts_diff_metrics (missing status, non-numeric values, overflowing or
 * non-finite deltas, incompatible fields, non-object metrics). The
 * expected values are what Python prints for the same objects. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/diff.h"

static json_t *
load(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (v == NULL) {
        fprintf(stderr, "bad fixture %s: %s\n", text, e.text);
    }
    return v;
}

/* Python's a == b for json.loads(a_text) and json.loads(b_text). */
static bool
equal_texts(const char *a_text, const char *b_text)
{
    json_t *a = load(a_text);
    json_t *b = load(b_text);
    bool eq = ts_json_equal(a, b);
    json_decref(a);
    json_decref(b);
    return eq;
}

static void
test_python_equality(void)
{
    /* True == 1, False == 0, True != 2 */
    CHECK(equal_texts("true", "1"));
    CHECK(equal_texts("0", "false"));
    CHECK(!equal_texts("true", "2"));
    CHECK(equal_texts("true", "1.0"));
    /* 1 == 1.0, 1 != 1.5, 1.5 == 1.5 */
    CHECK(equal_texts("1", "1.0"));
    CHECK(equal_texts("1.0", "1"));
    CHECK(!equal_texts("1", "1.5"));
    CHECK(!equal_texts("1.5", "1"));
    CHECK(equal_texts("1.5", "1.5"));
    /* 2.0**63 is no int64; 1e300 neither; -2.0**63 is */
    CHECK(!equal_texts("9223372036854775807", "9.2233720368547758e18"));
    CHECK(!equal_texts("1", "1e300"));
    CHECK(equal_texts("-9223372036854775808", "-9.2233720368547758e18"));
    CHECK(!equal_texts("-1", "-1e300"));
    /* types differ: "1" != 1, [] != {}, null != 0 */
    CHECK(!equal_texts("\"1\"", "1"));
    CHECK(!equal_texts("[]", "{}"));
    CHECK(!equal_texts("null", "0"));
    CHECK(equal_texts("null", "null"));
    /* strings with an embedded NUL compare by length and bytes */
    CHECK(!equal_texts("\"a\\u0000b\"", "\"a\\u0000c\""));
    CHECK(!equal_texts("\"ab\"", "\"abc\""));
    CHECK(equal_texts("\"a\\u0000b\"", "\"a\\u0000b\""));
    /* lists: length, element; [1, true] == [1.0, 1] */
    CHECK(!equal_texts("[1, 2]", "[1]"));
    CHECK(!equal_texts("[1, 2]", "[1, 3]"));
    CHECK(equal_texts("[1, true]", "[1.0, 1]"));
    /* dicts: size, missing key, differing value, equal */
    CHECK(!equal_texts("{\"a\": 1}", "{\"a\": 1, \"b\": 2}"));
    CHECK(!equal_texts("{\"a\": 1}", "{\"b\": 1}"));
    CHECK(!equal_texts("{\"a\": 1}", "{\"a\": 2}"));
    CHECK(equal_texts("{\"a\": [1], \"b\": {}}", "{\"b\": {}, \"a\": [1.0]}"));
    /* a missing value (None) equals JSON null and nothing else */
    json_t *null = json_null();
    json_t *one = json_integer(1);
    CHECK(ts_json_equal(NULL, NULL));
    CHECK(ts_json_equal(NULL, null));
    CHECK(ts_json_equal(null, NULL));
    CHECK(!ts_json_equal(NULL, one));
    CHECK(!ts_json_equal(one, NULL));
    json_decref(one);
}

/* ts_diff_metrics on two one-metric maps; returns the error code and
 * leaves the message in err. */
static int
diff_one(const char *before, const char *after, json_t **out, ts_error *err)
{
    json_t *b = load(before);
    json_t *a = load(after);
    json_t *d = ts_diff_metrics(b, a, err);
    json_decref(b);
    json_decref(a);
    if (out != NULL) {
        *out = d;
    }
    else {
        json_decref(d);
    }
    return d != NULL ? TS_OK : err->code;
}

#define M(status, value) \
    "{\"status\":\"" status "\",\"value\":" value ",\"unit\":\"FLOPs\"}"

static void
test_metric_refusals(void)
{
    ts_error err;
    json_t *d = NULL;

    /* names in messages are Python reprs */
    CHECK_EQ_INT(diff_one("{\"it's\": {\"value\": 1}}",
                          "{\"it's\": {\"value\": 1}}",
                          NULL,
                          &err),
                 TS_EFORMAT);
    CHECK_EQ_STR(err.message, "metric \"it's\" lacks 'status'");
    CHECK_EQ_INT(diff_one("{\"q\\\"'\": {\"value\": 1}}",
                          "{\"q\\\"'\": {\"value\": 1}}",
                          NULL,
                          &err),
                 TS_EFORMAT);
    CHECK_EQ_STR(err.message, "metric 'q\"\\'' lacks 'status'");
    CHECK_EQ_INT(diff_one("{\"a\\\\b\\n\\r\\t\\u0001\\u007f\": {}}",
                          "{\"a\\\\b\\n\\r\\t\\u0001\\u007f\": {}}",
                          NULL,
                          &err),
                 TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "metric 'a\\\\b\\n\\r\\t\\x01\\x7f' lacks 'status'");

    /* a name longer than the message buffer is cut, still quoted */
    {
        char name[301];
        char before[400];
        memset(name, 'n', 300);
        name[300] = '\0';
        snprintf(before, sizeof before, "{\"%s\": {}}", name);
        CHECK_EQ_INT(diff_one(before, before, NULL, &err), TS_EFORMAT);
        CHECK(strncmp(err.message, "metric 'nnnn", 12) == 0);
        /* 128-byte repr: quote, 121 characters, quote */
        CHECK(strstr(err.message, "n' lacks 'status'") != NULL);
        CHECK_EQ_INT(strlen(err.message),
                     strlen("metric ") + 123 + strlen(" lacks 'status'"));
    }

    /* complete on both sides without a number */
    CHECK_EQ_INT(diff_one("{\"f\": " M("complete", "\"1\"") "}",
                          "{\"f\": " M("complete", "1") "}",
                          NULL,
                          &err),
                 TS_EFORMAT);
    CHECK_EQ_STR(err.message,
                 "metric 'f' is complete without a numeric value");
    CHECK_EQ_INT(diff_one("{\"f\": " M("complete", "1") "}",
                          "{\"f\": " M("complete", "null") "}",
                          NULL,
                          &err),
                 TS_EFORMAT);
    /* int64 delta overflow: (2**63 - 1) - (-1) */
    CHECK_EQ_INT(diff_one("{\"f\": " M("complete", "-1") "}",
                          "{\"f\": " M("complete", "9223372036854775807") "}",
                          NULL,
                          &err),
                 TS_EOVERFLOW);
    CHECK_EQ_STR(err.message, "delta of metric 'f' overflows");
    /* 1.7e308 - (-1.7e308) is inf */
    CHECK_EQ_INT(diff_one("{\"f\": " M("complete", "-1.7e308") "}",
                          "{\"f\": " M("complete", "1.7e308") "}",
                          NULL,
                          &err),
                 TS_EOVERFLOW);
    CHECK_EQ_STR(err.message, "delta of metric 'f' is not finite");

    /* metric results and maps must be objects */
    CHECK_EQ_INT(diff_one("{\"f\": 1}", "{\"f\": 1}", NULL, &err), TS_EFORMAT);
    CHECK_EQ_STR(err.message, "metric results must be objects");
    CHECK_EQ_INT(diff_one("[]", "{}", NULL, &err), TS_EFORMAT);
    CHECK_EQ_STR(err.message, "metrics and totals must be objects");
    CHECK_EQ_INT(diff_one("{}", "[]", NULL, &err), TS_EFORMAT);
    /* unit, scope and method must agree */
    CHECK_EQ_INT(
        diff_one("{\"f\": {\"status\": \"complete\", \"value\": 1, \"scope\": "
                 "\"a\"}}",
                 "{\"f\": {\"status\": \"complete\", \"value\": 1, \"scope\": "
                 "\"b\"}}",
                 NULL,
                 &err),
        TS_EINVAL);
    CHECK_EQ_STR(err.message, "metric 'f' has incompatible scope");
    CHECK_EQ_INT(diff_one("{\"f\": {\"status\": \"complete\", \"value\": 1, "
                          "\"method\": \"x\"}}",
                          "{\"f\": {\"status\": \"complete\", \"value\": 1}}",
                          NULL,
                          &err),
                 TS_EINVAL);
    CHECK_EQ_STR(err.message, "metric 'f' has incompatible method");

    /* statuses: unavailable wins, then partial; deltas mix int and real */
    CHECK_EQ_INT(
        diff_one(
            "{\"a\": " M("unavailable", "0") ", \"b\": " M(
                "partial",
                "3") ", \"c\": " M("complete",
                                   "2") ", \"d\": " M("complete",
                                                      "2.5") ", \"e\": " M("co"
                                                                           "mp"
                                                                           "le"
                                                                           "t"
                                                                           "e",
                                                                           "tr"
                                                                           "u"
                                                                           "e") "}",
            "{\"a\": " M("complete", "5") ", \"b\": " M(
                "complete",
                "4") ", \"c\": " M("complete",
                                   "2.5") ", \"d\": " M("complete",
                                                        "1") ", \"e\": " M("co"
                                                                           "mp"
                                                                           "le"
                                                                           "t"
                                                                           "e",
                                                                           "3") "}",
            &d,
            &err),
        TS_OK);
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_object_get(d, "a"), "status")),
        "unavailable");
    CHECK(json_is_null(json_object_get(json_object_get(d, "a"), "delta")));
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_object_get(d, "b"), "status")),
        "partial");
    CHECK(json_is_null(json_object_get(json_object_get(d, "b"), "delta")));
    /* 2.5 - 2 = 0.5, 1 - 2.5 = -1.5, 3 - True = 2 */
    CHECK_EQ_REAL(
        json_real_value(json_object_get(json_object_get(d, "c"), "delta")),
        0.5);
    CHECK_EQ_REAL(
        json_real_value(json_object_get(json_object_get(d, "d"), "delta")),
        -1.5);
    CHECK(json_is_integer(json_object_get(json_object_get(d, "e"), "delta")));
    CHECK_EQ_INT(
        json_integer_value(json_object_get(json_object_get(d, "e"), "delta")),
        2);
    json_decref(d);

    /* one side only: unavailable, with the other side null */
    CHECK_EQ_INT(diff_one("{\"x\": " M("complete", "1") "}",
                          "{\"y\": " M("complete", "2") "}",
                          &d,
                          &err),
                 TS_OK);
    CHECK_EQ_INT(json_object_size(d), 2);
    CHECK(json_is_null(json_object_get(json_object_get(d, "x"), "after")));
    CHECK(json_is_null(json_object_get(json_object_get(d, "y"), "before")));
    CHECK_EQ_STR(
        json_string_value(json_object_get(json_object_get(d, "y"), "status")),
        "unavailable");
    json_decref(d);
    /* two empty maps: an empty diff */
    CHECK_EQ_INT(diff_one("{}", "{}", &d, &err), TS_OK);
    CHECK_EQ_INT(json_object_size(d), 0);
    json_decref(d);
}

int
main(void)
{
    test_python_equality();
    test_metric_refusals();
    return ts_test_report();
}
