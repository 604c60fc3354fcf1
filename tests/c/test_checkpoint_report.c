/* The checkpoint report's consumers on reports built here: the module
 * tree's order (numeric components with leading zeros, prefixes), the
 * text table (negative and unknown counts, long shared lists, refused
 * globals, partial totals), the module-level match against an
 * AnalysisReport and the storage map's refusals and deep trees. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "torchscan/checkpoint.h"

static unsigned char *
safetensors(const char *header, size_t data, size_t *size)
{
    size_t n = strlen(header);
    unsigned char *buf = calloc(8 + n + data + 1, 1);
    for (int i = 0; i < 8; i++) {
        buf[i] = (unsigned char)((uint64_t)n >> (8 * i));
    }
    memcpy(buf + 8, header, n);
    *size = 8 + n + data;
    return buf;
}

static json_t *
inspect_st(const char *header, size_t data, ts_error *err)
{
    size_t size;
    unsigned char *buf = safetensors(header, data, &size);
    json_t *report;
    ts_error_clear(err);
    report = ts_checkpoint_inspect_memory(buf, size, "m.safetensors", err);
    free(buf);
    return report;
}

static json_t *
parse(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (v == NULL) {
        fprintf(stderr, "bad test JSON: %s (line %d)\n", jerr.text, jerr.line);
    }
    return v;
}

static const char *
module_path(const json_t *r, size_t k)
{
    return json_string_value(json_object_get(
        json_array_get(json_object_get(r, "modules"), k), "path"));
}

static void
test_module_order(void)
{
    ts_error err;
    /* one byte each; m.09 and m.9 are the same number (file order),
     * before m.10; digits before letters; "m.a" before "m.ab" */
    json_t *r = inspect_st(
        "{\"m.ab.x\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [0, 1]}, "
        "\"m.10.x\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [1, 2]}, "
        "\"m.9.x\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [2, 3]}, "
        "\"m.09.x\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [3, 4]}, "
        "\"m.a.x\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [4, 5]}, "
        "\"m.a\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [5, 6]}}",
        6,
        &err);
    CHECK(r != NULL);
    if (r == NULL) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    CHECK_EQ_INT(json_array_size(json_object_get(r, "modules")), 7);
    CHECK_EQ_STR(module_path(r, 0), "");
    CHECK_EQ_STR(module_path(r, 1), "m");
    /* 9 and 09: equal as numbers, so in the order of their tensors */
    CHECK_EQ_STR(module_path(r, 2), "m.9");
    CHECK_EQ_STR(module_path(r, 3), "m.09");
    CHECK_EQ_STR(module_path(r, 4), "m.10");
    CHECK_EQ_STR(module_path(r, 5), "m.a");
    CHECK_EQ_STR(module_path(r, 6), "m.ab");
    /* m.a holds its own tensor "m.a" (under m) and m.a.x: 1 byte */
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_array_get(json_object_get(r, "modules"), 5), "bytes")),
        1);
    CHECK_EQ_INT(
        json_integer_value(json_object_get(
            json_array_get(json_object_get(r, "modules"), 1), "tensors")),
        6);
    json_decref(r);
}

static void
test_table_of_hand_report(void)
{
    ts_error err;
    char *text;
    /* counts negative and unknown, a storage shared by ten tensors,
     * an allowed and a refused global, partial totals, diagnostics */
    json_t *r = parse(
        "{\"report_type\": \"checkpoint\", \"format\": \"pytorch_zip\","
        " \"files\": [{\"name\": \"a.pt\", \"format\": \"pytorch_zip\","
        " \"bytes\": 1234567, \"header_bytes\": null, \"tensors\": -1234}],"
        " \"modules\": [{\"path\": \"\", \"depth\": 0, \"tensors\": 10,"
        " \"elements\": 10, \"bytes\": 40}],"
        " \"dtypes\": [],"
        " \"shared\": [{\"storage\": \"0\", \"relation\": \"views\","
        " \"tensors\": [\"t0\", \"t1\", \"t2\", \"t3\", \"t4\", \"t5\","
        " \"t6\", \"t7\", \"t8\", \"t9\"]}],"
        " \"globals\": [{\"name\": \"torch.Size\", \"allowed\": true},"
        " {\"name\": \"os.system\", \"allowed\": false},"
        " {\"name\": \"x.y\", \"allowed\": false}],"
        " \"totals\": {\"tensors\": {\"status\": \"partial\","
        " \"value\": null, \"known_value\": 10},"
        " \"elements\": {\"status\": \"complete\", \"value\": 10}},"
        " \"diagnostics\": [{\"code\": \"c1\", \"message\": \"m1\"},"
        " {\"code\": \"c2\", \"message\": \"m2\"}]}");
    text = ts_checkpoint_table(r, -1, &err);
    CHECK(text != NULL);
    if (text != NULL) {
        CHECK(strstr(text,
                     "a.pt  pytorch_zip  1,234,567 bytes, header ?, "
                     "-1,234 tensors\n")
              != NULL);
        CHECK(strstr(text,
                     "  storage 0 (views): t0, t1, t2, t3, t4, t5, t6, t7 "
                     "... (10 in all)\n")
              != NULL);
        CHECK(strstr(text,
                     "allowlist (named, never imported or called):\n"
                     "  os.system\n  x.y\n")
              != NULL);
        CHECK(strstr(text, "torch.Size") == NULL);
        CHECK(strstr(text, "tensors        >=            10  (partial)\n")
              != NULL);
        /* missing totals: "?" with an empty status */
        CHECK(strstr(text, "file_bytes     >=             ?  ()\n") != NULL);
        CHECK(strstr(text, "\nDiagnostics:\n  c1: m1\n  c2: m2\n") != NULL);
    }
    free(text);
    json_decref(r);
    /* refusals */
    r = parse("{\"report_type\": \"checkpoint\", \"modules\": []}");
    CHECK(ts_checkpoint_table(r, -1, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    json_decref(r);
    r = parse("{\"report_type\": \"checkpoint\", \"totals\": {}}");
    CHECK(ts_checkpoint_table(r, -1, &err) == NULL);
    json_decref(r);
    r = parse(
        "{\"report_type\": \"analysis\", \"totals\": {},"
        " \"modules\": []}");
    CHECK(ts_checkpoint_table(r, -1, &err) == NULL);
    json_decref(r);
    r = parse("{\"totals\": {}, \"modules\": []}");
    CHECK(ts_checkpoint_table(r, -1, &err) == NULL);
    json_decref(r);
    r = parse("[1]");
    CHECK(ts_checkpoint_table(r, -1, &err) == NULL);
    CHECK_EQ_STR(err.message,
                 "not a checkpoint report (report_type \"checkpoint\" with "
                 "modules and totals)");
    json_decref(r);
}

static void
test_module_match(void)
{
    ts_error err;
    json_t *r = inspect_st(
        "{\"enc.w\": {\"dtype\": \"F32\", \"shape\": [2, 3], "
        "\"data_offsets\": [0, 24]}, "
        "\"enc.b\": {\"dtype\": \"F32\", \"shape\": [3], "
        "\"data_offsets\": [24, 36]}, "
        "\"dec.w\": {\"dtype\": \"F32\", \"shape\": [4], "
        "\"data_offsets\": [36, 52]}, "
        "\"extra.w\": {\"dtype\": \"F32\", \"shape\": [1], "
        "\"data_offsets\": [52, 56]}}",
        56,
        &err);
    /* an AnalysisReport's layers: enc has 6 + 3 = 9 (matches), dec 5
     * (the checkpoint 4), head 7 (missing); the root "" sums them */
    json_t *analysis = parse(
        "{\"report_type\": \"analysis\", \"layers\": ["
        " {\"path\": \"\", \"parameters\": {\"trainable\": 0, \"frozen\": 0}},"
        " {\"path\": \"enc\", \"parameters\": {\"trainable\": 6,"
        " \"frozen\": 3}},"
        " {\"path\": \"dec\", \"parameters\": {\"trainable\": 4},"
        " \"buffers\": {\"elements\": 1}},"
        " {\"path\": \"head\", \"parameters\": {\"trainable\": 7}},"
        " {\"path\": \"empty\"}]}");
    json_t *m;
    char *text;
    CHECK(r != NULL && analysis != NULL);
    m = ts_checkpoint_match(r, analysis, &err);
    CHECK(m != NULL);
    if (m == NULL) {
        fprintf(stderr, "%s\n", err.message);
        json_decref(r);
        json_decref(analysis);
        return;
    }
    CHECK_EQ_STR(json_string_value(json_object_get(m, "level")), "module");
    CHECK(json_is_false(json_object_get(m, "matches")));
    /* "" : 9 + 5 + 7 = 21 expected, 14 in the checkpoint: mismatched;
     * enc matched; dec mismatched; head missing; extra unexpected */
    CHECK_EQ_INT(json_integer_value(json_object_get(m, "matched")), 1);
    CHECK_EQ_INT(json_array_size(json_object_get(m, "missing")), 1);
    CHECK_EQ_INT(json_array_size(json_object_get(m, "mismatched")), 2);
    CHECK_EQ_INT(json_array_size(json_object_get(m, "unexpected")), 1);
    text = ts_checkpoint_match_text(m, &err);
    CHECK_EQ_STR(text,
                 "does not match (module level): 1 matched, 1 missing, 1 "
                 "unexpected, 2 mismatched\n"
                 "missing:\n"
                 "  head: 7 expected\n"
                 "unexpected:\n"
                 "  extra: 1 elements in the checkpoint\n"
                 "mismatched:\n"
                 "  (checkpoint): 14 elements in the checkpoint, 21 "
                 "expected\n"
                 "  dec: 4 elements in the checkpoint, 5 expected\n");
    free(text);
    json_decref(m);
    /* refusals */
    {
        json_t *bad = parse("{\"layers\": [{\"path\": 3}]}");
        CHECK(ts_checkpoint_match(r, bad, &err) == NULL);
        CHECK_EQ_STR(err.message, "against: layers[0].path: expected text");
        json_decref(bad);
        bad = parse("{\"report_type\": \"state_dict\", \"tensors\": 3}");
        CHECK(ts_checkpoint_match(r, bad, &err) == NULL);
        CHECK_EQ_STR(err.message, "against: tensors: expected a list");
        json_decref(bad);
        bad = parse(
            "{\"report_type\": \"state_dict\", \"tensors\": "
            "[{\"name\": \"a\"}]}");
        CHECK(ts_checkpoint_match(r, bad, &err) == NULL);
        CHECK_EQ_STR(err.message,
                     "against: tensors[0]: expected {name, shape, dtype}");
        json_decref(bad);
        bad = parse("{\"report_type\": \"other\"}");
        CHECK(ts_checkpoint_match(r, bad, &err) == NULL);
        CHECK(strstr(err.message, "against: expected an AnalysisReport")
              != NULL);
        CHECK(ts_checkpoint_match(bad, r, &err) == NULL);
        CHECK(strstr(err.message, "report: expected a checkpoint report")
              != NULL);
        json_decref(bad);
        bad = parse(
            "{\"report_type\": \"checkpoint\", \"tensors\": [],"
            " \"modules\": 1}");
        CHECK(ts_checkpoint_match(bad, r, &err) == NULL);
        json_decref(bad);
        bad = parse(
            "{\"report_type\": \"checkpoint\", \"tensors\": 1,"
            " \"modules\": []}");
        CHECK(ts_checkpoint_match(bad, r, &err) == NULL);
        json_decref(bad);
        /* a report whose tensor rows are malformed */
        bad = parse(
            "{\"report_type\": \"checkpoint\", \"tensors\": "
            "[{\"name\": \"a\", \"shape\": 1}], \"modules\": []}");
        CHECK(ts_checkpoint_match(bad, r, &err) == NULL);
        CHECK_EQ_STR(err.message,
                     "report: tensors[0]: expected {name, shape, dtype}");
        json_decref(bad);
    }
    /* tensor level: the report against itself, with a repeated name in
     * `against` (the first counts) */
    {
        json_t *want = parse(
            "{\"report_type\": \"state_dict\", \"tensors\": ["
            " {\"name\": \"enc.w\", \"shape\": [2, 3], \"dtype\": \"x\"},"
            " {\"name\": \"enc.w\", \"shape\": [9], \"dtype\": \"x\"},"
            " {\"name\": \"enc.b\", \"shape\": [3]},"
            " {\"name\": \"dec.w\", \"shape\": [4]},"
            " {\"name\": \"extra.w\", \"shape\": [1]}]}");
        m = ts_checkpoint_match(r, want, &err);
        CHECK(m != NULL && json_is_true(json_object_get(m, "matches")));
        CHECK_EQ_INT(json_integer_value(json_object_get(m, "matched")), 4);
        text = ts_checkpoint_match_text(m, &err);
        CHECK_EQ_STR(text,
                     "matches (tensor level): 4 matched, 0 missing, 0 "
                     "unexpected, 0 mismatched\n");
        free(text);
        json_decref(m);
        json_decref(want);
    }
    /* match text: hand-made entries with a shape that is no list */
    {
        json_t *hand = parse(
            "{\"report_type\": \"checkpoint_match\", \"level\": \"tensor\","
            " \"matches\": false, \"matched\": 0, \"missing\": [],"
            " \"unexpected\": [{\"name\": \"u\", \"shape\": 5, \"dtype\":"
            " \"torch.float32\"}], \"mismatched\": []}");
        text = ts_checkpoint_match_text(hand, &err);
        CHECK_EQ_STR(text,
                     "does not match (tensor level): 0 matched, 0 missing, 1 "
                     "unexpected, 0 mismatched\n"
                     "unexpected:\n"
                     "  u: ? torch.float32 in the checkpoint\n");
        free(text);
        json_decref(hand);
        hand = parse("{\"report_type\": \"checkpoint\"}");
        CHECK(ts_checkpoint_match_text(hand, &err) == NULL);
        CHECK_EQ_STR(err.message, "not a checkpoint match result");
        json_decref(hand);
    }
    json_decref(r);
    json_decref(analysis);
}

static void
test_render(void)
{
    ts_error err;
    char *out;
    /* a tensor 14 components deep: rows stop at 12 */
    json_t *r = inspect_st(
        "{\"a.b.c.d.e.f.g.h.i.j.k.l.m.n.w\": {\"dtype\": \"F32\", \"shape\": "
        "[1], \"data_offsets\": [0, 4]}, "
        "\"z\": {\"dtype\": \"F32\", \"shape\": [0], "
        "\"data_offsets\": [4, 4]}}",
        4,
        &err);
    CHECK(r != NULL);
    out = ts_checkpoint_render(r, "T<1>", "svg", &err);
    CHECK(out != NULL);
    if (out != NULL) {
        /* 12 rows of 22 px + 30: height 294 */
        CHECK(strstr(out, "height=\"294\"") != NULL);
        CHECK(strstr(out, "<title>T&lt;1&gt;</title>") != NULL);
        /* the prefix at depth 11 (a...k) is drawn, depth 12 is not */
        CHECK(strstr(out, "a.b.c.d.e.f.g.h.i.j.k: 4 bytes") != NULL);
        CHECK(strstr(out, "a.b.c.d.e.f.g.h.i.j.k.l: 4 bytes") == NULL);
    }
    free(out);
    CHECK(ts_checkpoint_render(r, "T", NULL, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EINVAL);
    CHECK(ts_checkpoint_render(r, "T", "pdf", &err) == NULL);
    CHECK_EQ_STR(err.message, "format is html or svg");
    json_decref(r);
    {
        /* a root that is not at depth 0; no modules; not a checkpoint */
        json_t *bad = parse(
            "{\"report_type\": \"checkpoint\", \"modules\": "
            "[{\"path\": \"\", \"depth\": 1}]}");
        CHECK(ts_checkpoint_render(bad, "T", "svg", &err) == NULL);
        CHECK_EQ_INT(err.code, TS_EFORMAT);
        json_decref(bad);
        bad = parse("{\"report_type\": \"checkpoint\", \"modules\": []}");
        CHECK(ts_checkpoint_render(bad, "T", "svg", &err) == NULL);
        json_decref(bad);
        bad = parse(
            "{\"report_type\": \"diff\", \"modules\": "
            "[{\"path\": \"\", \"depth\": 0}]}");
        CHECK(ts_checkpoint_render(bad, "T", "svg", &err) == NULL);
        json_decref(bad);
        /* html of a report without totals: the table refuses it */
        bad = parse(
            "{\"report_type\": \"checkpoint\", \"modules\": "
            "[{\"path\": \"\", \"depth\": 0, \"bytes\": 0}]}");
        CHECK(ts_checkpoint_render(bad, "T", "html", &err) == NULL);
        CHECK_EQ_INT(err.code, TS_EFORMAT);
        /* svg of it: zero bytes, no boxes but the frame */
        out = ts_checkpoint_render(bad, "T", "svg", &err);
        CHECK(out != NULL && strstr(out, "<rect") == NULL);
        free(out);
        json_decref(bad);
        /* bytes unknown (null) under a known root */
        bad = parse(
            "{\"report_type\": \"checkpoint\", \"modules\": ["
            "{\"path\": \"\", \"depth\": 0, \"bytes\": 8},"
            " {\"path\": \"q\", \"depth\": 1, \"bytes\": null}]}");
        out = ts_checkpoint_render(bad, "T", "svg", &err);
        CHECK(out != NULL && strstr(out, "<title>q") == NULL
              && strstr(out, "<title>(checkpoint): 8 bytes") != NULL);
        free(out);
        json_decref(bad);
    }
}

/* Module-level matching on hand-made documents: a module row without a
 * path is a malformed report (it was refused as out of memory), counts
 * that are not integers count 0, "encx" is not under "enc", a prefix
 * longer than 4 KiB. */
static void
test_module_match_edges(void)
{
    ts_error err;
    json_t *m;
    json_t *report = parse(
        "{\"report_type\": \"checkpoint\", \"tensors\": [], \"modules\": ["
        "{\"path\": \"\", \"elements\": 12}, {\"path\": \"enc\", "
        "\"elements\": 5}, {\"path\": \"encx\", \"elements\": 7}]}");
    json_t *analysis = parse(
        "{\"layers\": [{\"path\": \"\"}, {\"path\": \"enc\", \"parameters\":"
        " {\"trainable\": 5, \"frozen\": \"3\"}}, {\"path\": \"encx\","
        " \"parameters\": {\"trainable\": 7}}]}");
    json_t *bad;
    char *long_path;
    m = ts_checkpoint_match(report, analysis, &err);
    CHECK(m != NULL);
    if (m != NULL) {
        /* "": 5 + 7 = 12, enc 5 (not encx's 7, "3" counts 0), encx 7 */
        CHECK(json_is_true(json_object_get(m, "matches")));
        CHECK_EQ_INT(json_integer_value(json_object_get(m, "matched")), 3);
    }
    json_decref(m);
    bad = parse(
        "{\"report_type\": \"checkpoint\", \"tensors\": [],"
        " \"modules\": [{\"elements\": 1}]}");
    CHECK(ts_checkpoint_match(bad, analysis, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    CHECK_EQ_STR(err.message, "report: modules[0].path: expected text");
    json_decref(bad);
    /* no tensors list; layers that are no list; no tensors in against */
    bad = parse("{\"report_type\": \"checkpoint\", \"modules\": []}");
    CHECK(ts_checkpoint_match(bad, analysis, &err) == NULL);
    CHECK(strstr(err.message, "report: expected a checkpoint report") != NULL);
    json_decref(bad);
    bad = parse("{\"layers\": 5}");
    CHECK(ts_checkpoint_match(report, bad, &err) == NULL);
    CHECK(strstr(err.message, "against: expected an AnalysisReport") != NULL);
    json_decref(bad);
    bad = parse("{\"report_type\": \"state_dict\"}");
    CHECK(ts_checkpoint_match(report, bad, &err) == NULL);
    CHECK_EQ_STR(err.message, "against: tensors: expected a list");
    json_decref(bad);
    /* a checkpoint prefix of 5,000 bytes under "": unexpected (its parent
     * is cut at 4 KiB, which still names no layer) */
    long_path = calloc(5001 + 2, 1);
    memset(long_path, 'p', 5000);
    memcpy(long_path + 5000, ".q", 3);
    bad = json_pack("{s:s, s:[], s:[{s:s, s:i}, {s:s, s:i}]}",
                    "report_type",
                    "checkpoint",
                    "tensors",
                    "modules",
                    "path",
                    "",
                    "elements",
                    12,
                    "path",
                    long_path,
                    "elements",
                    0);
    m = ts_checkpoint_match(bad, analysis, &err);
    CHECK(m != NULL);
    if (m != NULL) {
        /* enc and encx are missing from this report; the long prefix's
         * parent (cut) is no layer: not listed as unexpected */
        CHECK_EQ_INT(json_array_size(json_object_get(m, "missing")), 2);
        CHECK_EQ_INT(json_array_size(json_object_get(m, "unexpected")), 0);
    }
    json_decref(m);
    json_decref(bad);
    free(long_path);
    json_decref(report);
    json_decref(analysis);
}

/* A second table: two files, a module name too long to widen the column,
 * a depth limit of 0, a global without "allowed", shapes that are lists. */
static void
test_table_edges(void)
{
    ts_error err;
    char *text;
    char name[100];
    json_t *r;
    memset(name, 'n', 90);
    name[90] = '\0';
    r = json_pack(
        "{s:s, s:s, s:[{s:s}, {s:s}], s:[{s:s, s:i}, {s:s, s:i}, "
        "{s:s, s:i}], s:[{s:s}], s:{}}",
        "report_type",
        "checkpoint",
        "format",
        "safetensors_sharded",
        "files",
        "name",
        "a",
        "name",
        "b",
        "modules",
        "path",
        "",
        "depth",
        0,
        "path",
        name,
        "depth",
        1,
        "path",
        "ab",
        "depth",
        1,
        "globals",
        "name",
        "os.system",
        "totals");
    text = ts_checkpoint_table(r, 0, &err);
    CHECK(text != NULL);
    if (text != NULL) {
        CHECK(strncmp(text, "Checkpoint (safetensors_sharded): 2 files\n", 42)
              == 0);
        /* depth 0 only: the long name is neither shown nor widening */
        CHECK(strstr(text, "nnnnnnnnnn") == NULL);
        CHECK(strstr(text,
                     "\nModule"
                     "                     "
                     "Tensors")
              != NULL);
        CHECK(strstr(text, "  os.system\n") != NULL);
    }
    free(text);
    text = ts_checkpoint_table(r, -1, &err);
    CHECK(text != NULL && strstr(text, name) != NULL);
    free(text);
    json_decref(r);
    {
        json_t *m = parse(
            "{\"report_type\": \"checkpoint_match\", \"level\": \"tensor\","
            " \"matches\": false, \"matched\": 0, \"missing\": [{\"name\":"
            " \"a\", \"expected_shape\": [2, 3], \"expected_dtype\": \"f\"}],"
            " \"unexpected\": [], \"mismatched\": [{\"name\": \"b\", "
            "\"shape\":"
            " [], \"dtype\": \"g\", \"expected_shape\": [1], "
            "\"expected_dtype\":"
            " \"g\"}]}");
        text = ts_checkpoint_match_text(m, &err);
        CHECK_EQ_STR(text,
                     "does not match (tensor level): 0 matched, 1 missing, 0 "
                     "unexpected, 1 mismatched\n"
                     "missing:\n"
                     "  a: [2, 3] f expected\n"
                     "mismatched:\n"
                     "  b: [] g in the checkpoint, [1] g expected\n");
        free(text);
        json_decref(m);
        m = parse("{\"level\": \"module\"}");
        CHECK(ts_checkpoint_match_text(m, &err) == NULL);
        json_decref(m);
    }
    /* the storage map of a report without a report_type */
    r = parse("{\"modules\": [{\"path\": \"\", \"depth\": 0}]}");
    CHECK(ts_checkpoint_render(r, "T", "svg", &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    json_decref(r);
}

/* Components equal as numbers keep their tensors' order: x.1, x.01,
 * x.001 (file order), then x.2, then x.10, x.010. */
static void
test_numeric_ties(void)
{
    ts_error err;
    static const char *const want[] = {
        "", "x", "x.1", "x.01", "x.001", "x.2", "x.10", "x.010"};
    json_t *r = inspect_st(
        "{\"x.10.w\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [0, 1]}, "
        "\"x.1.w\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [1, 2]}, "
        "\"x.01.w\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [2, 3]}, "
        "\"x.2.w\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [3, 4]}, "
        "\"x.001.w\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [4, 5]}, "
        "\"x.010.w\": {\"dtype\": \"U8\", \"shape\": [1], "
        "\"data_offsets\": [5, 6]}}",
        6,
        &err);
    CHECK(r != NULL);
    if (r == NULL) {
        return;
    }
    CHECK_EQ_INT(json_array_size(json_object_get(r, "modules")), 8);
    for (size_t k = 0; k < 8; k++) {
        CHECK_EQ_STR(module_path(r, k), want[k]);
    }
    json_decref(r);
}

/* Documents the table, the map and the match refuse, one member at a
 * time; a map row without bytes is not drawn. */
static void
test_refusals(void)
{
    ts_error err;
    json_t *r;
    char *out;
    static const char *const tables[] = {
        "{\"report_type\": \"checkpoint\", \"modules\": 5, \"totals\": {}}",
        "{\"report_type\": \"checkpoint\", \"modules\": [], \"totals\": 5}",
        "{\"report_type\": 5, \"modules\": [], \"totals\": {}}",
    };
    CHECK(ts_checkpoint_table(NULL, -1, &err) == NULL);
    CHECK_EQ_INT(err.code, TS_EFORMAT);
    for (size_t k = 0; k < sizeof tables / sizeof *tables; k++) {
        r = parse(tables[k]);
        CHECK(ts_checkpoint_table(r, -1, &err) == NULL);
        CHECK_EQ_STR(err.message,
                     "not a checkpoint report (report_type \"checkpoint\" "
                     "with modules and totals)");
        json_decref(r);
    }
    r = parse("{\"report_type\": \"checkpoint\", \"tensors\": []}");
    CHECK(ts_checkpoint_match(r, r, &err) == NULL);
    CHECK(strstr(err.message, "report: expected a checkpoint report") != NULL);
    json_decref(r);
    r = parse(
        "{\"report_type\": \"checkpoint\", \"modules\": ["
        "{\"path\": \"\", \"depth\": 0, \"bytes\": 8},"
        " {\"path\": \"nb\", \"depth\": 1}]}");
    out = ts_checkpoint_render(r, "T", "svg", &err);
    CHECK(out != NULL && strstr(out, "<title>nb") == NULL
          && strstr(out, "<title>(checkpoint): 8 bytes") != NULL);
    free(out);
    json_decref(r);
}

int
main(void)
{
    test_module_order();
    test_table_of_hand_report();
    test_module_match();
    test_render();
    test_module_match_edges();
    test_table_edges();
    test_numeric_ties();
    test_refusals();
    return ts_test_report();
}
