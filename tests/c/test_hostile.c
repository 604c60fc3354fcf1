/* Hostile inputs, systematically: every checkpoint seed of
 * tests/fuzz/checkpoints/ cut at every length and with every byte changed
 * (four ways), fed to each reader; every member of a valid AnalysisReport
 * removed or given a value of another type. The expectations hold for
 * every input: a reader returns a report or an error with a status and a
 * message, never both nor neither; a proper prefix of a safetensors or
 * zip file is refused (each keeps something it needs at its end), and of
 * a GGUF file every prefix that cuts into its tensor data; a report the
 * checker refuses is refused with TS_EFORMAT and a message that starts with
 * the caller's name for it and names the member edited (or the row that holds
 * it); every edited report, accepted or not, goes through the table, the
 * page, the exports, the comparison with the original, the diff of the
 * totals and the gathering without a crash, each either succeeding or saying
 * why. Under valgrind (TORCHSCAN_TEST_VALGRIND) the cuts and byte
 * changes take every 7th position and the edits every 13th. */
#include <stdlib.h>

#include "ckpt_internal.h"
#include "harness.h"
#include "torchscan/checkpoint.h"
#include "torchscan/benchmark.h"
#include "torchscan/diff.h"
#include "torchscan/export.h"
#include "torchscan/gather.h"
#include "torchscan/render.h"
#include "torchscan/report_check.h"
#include "torchscan/table.h"
#include "torchscan/workload.h"

#ifndef TS_SOURCE_ROOT
#define TS_SOURCE_ROOT "."
#endif

static int stride = 1;

static unsigned char *
load_file(const char *name, size_t *size)
{
    char path[512];
    FILE *f;
    unsigned char *buf = NULL;
    long n = 0;
    snprintf(path, sizeof path, "%s/%s", TS_SOURCE_ROOT, name);
    f = fopen(path, "rb");
    if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0
        && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) != NULL
        && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (f != NULL) {
        fclose(f);
    }
    *size = (size_t)n;
    if (buf == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
    }
    CHECK(buf != NULL);
    return buf;
}

/* ---- checkpoints ------------------------------------------------------- */

static long reads, refused, accepted, inconsistent;
/* what an accepted report is also matched against: an AnalysisReport and
 * a state dict of a tensor each reader's seeds hold none of */
static json_t *against[2];

/* One read: a report xor an error; a report goes through the table (all
 * depths and depth 1), the match against itself and the page. Returns
 * whether it was accepted. */
static int
read_one(const unsigned char *data, size_t size, int reader)
{
    ts_error err;
    json_t *report;
    int ok;
    ts_error_clear(&err);
    report = reader < 0 ? ts_checkpoint_inspect_memory(data, size, "x", &err)
                        : ck_inspect_memory_as(data, size, reader, &err);
    reads++;
    if (report == NULL) {
        ok = err.code < 0 && err.message[0] != '\0';
        refused++;
    }
    else {
        json_t *match;
        char *text;
        ok = err.code == 0;
        accepted++;
        ts_error_clear(&err);
        text = ts_checkpoint_table(report, -1, &err);
        ok = ok && (text != NULL) == (err.code == 0);
        free(text);
        free(ts_checkpoint_table(report, 1, &err));
        ts_error_clear(&err);
        match = ts_checkpoint_match(report, report, &err);
        ok = ok && (match != NULL) == (err.code == 0);
        if (match != NULL) {
            free(ts_checkpoint_match_text(match, &err));
        }
        json_decref(match);
        for (int a = 0; a < 2 && against[a] != NULL; a++) {
            ts_error_clear(&err);
            match = ts_checkpoint_match(report, against[a], &err);
            ok = ok && (match != NULL) == (err.code == 0);
            if (match != NULL) {
                free(ts_checkpoint_match_text(match, &err));
            }
            json_decref(match);
        }
        ts_error_clear(&err);
        text = ts_checkpoint_render(report, "T", "html", &err);
        ok = ok && (text != NULL) == (err.code == 0);
        free(text);
        free(ts_checkpoint_render(report, "T", "svg", &err));
        json_decref(report);
    }
    if (!ok) {
        inconsistent++;
    }
    return report != NULL;
}

typedef struct seed {
    const char *file;
    int reader; /* its own reader */
    /* the shortest prefix accepted, the whole file where 0: every proper
     * prefix is refused; -1 where a prefix may be either */
    long shortest;
} seed;

static void
hostile_checkpoint(const seed *s)
{
    size_t size, n;
    unsigned char *data = load_file(s->file, &size);
    unsigned char *copy;
    long prefixes_accepted = 0;
    static const int changes[] = {0x00, 0xff, 0x7f, 0x01};
    if (data == NULL) {
        return;
    }
    copy = malloc(size);
    CHECK(copy != NULL);
    if (copy == NULL) {
        free(data);
        return;
    }
    /* the seed itself: accepted by its reader and by the sniffing one */
    CHECK(read_one(data, size, s->reader));
    CHECK(read_one(data, size, -1));
    /* every other reader on it: no crash, one answer */
    for (int r = 0; r <= 4; r++) {
        if (r != s->reader) {
            read_one(data, size, r);
        }
    }
    /* every proper prefix (a copy of its own, so a read past it is a
     * fault under ASan and valgrind) */
    for (n = 0; n < size; n += (size_t)stride) {
        unsigned char *cut = malloc(n + 1);
        if (cut == NULL) {
            break;
        }
        memcpy(cut, data, n);
        if (read_one(cut, n, s->reader)) {
            prefixes_accepted++;
            if (s->shortest >= 0 && (long)n < s->shortest) {
                fprintf(stderr, "%s: prefix of %zu accepted\n", s->file, n);
            }
        }
        read_one(cut, n, -1);
        free(cut);
    }
    if (s->shortest == 0) {
        CHECK_EQ_INT(prefixes_accepted, 0);
    }
    else if (s->shortest > 0) {
        long expected = 0;
        for (n = 0; n < size; n += (size_t)stride) {
            expected += (long)n >= s->shortest;
        }
        CHECK_EQ_INT(prefixes_accepted, expected);
    }
    /* every byte changed to 0x00, 0xff, 0x7f, and xor 0x01 */
    for (n = 0; n < size; n += (size_t)stride) {
        for (size_t c = 0; c < sizeof changes / sizeof changes[0]; c++) {
            memcpy(copy, data, size);
            copy[n] = c == 3 ? (unsigned char)(data[n] ^ 1)
                             : (unsigned char)changes[c];
            if (copy[n] != data[n]) {
                read_one(copy, size, s->reader);
            }
        }
    }
    printf("%-44s %6zu bytes\n", s->file, size);
    free(copy);
    free(data);
}

/* ---- reports ----------------------------------------------------------- */

static long edits, edits_refused, edits_accepted, misnamed;

static void gather_with(const json_t *report, const json_t *original);

/* The consumers of a report the checker accepted: each gives a result or
 * an error, consistently. */
static void
consume(const json_t *report, const json_t *original)
{
    ts_error err;
    char *text;
    json_t *diff;
    ts_table_options topt = {0};
    ts_export_options eopt = {0};
    int ok = 1;
    topt.max_depth = -1;
    ts_error_clear(&err);
    text = ts_format_summary(report, &topt, &err);
    ok = ok && (text != NULL) == (err.code == 0);
    free(text);
    ts_error_clear(&err);
    text = ts_render_analysis(report, NULL, "E", "macs", "html", &err);
    ok = ok && (text != NULL) == (err.code == 0);
    free(text);
    ts_error_clear(&err);
    text = ts_render_analysis(report, original, "E", "macs", "svg", &err);
    ok = ok && (text != NULL) == (err.code == 0);
    free(text);
    eopt.format = ts_export_format_parse("csv");
    eopt.metric = ts_export_metric_parse("module_flops");
    ts_error_clear(&err);
    text = ts_export_report(report, &eopt, NULL, &err);
    ok = ok && (text != NULL) == (err.code == 0);
    free(text);
    ts_error_clear(&err);
    diff = ts_compare_reports(original, report, &err);
    ok = ok && (diff != NULL) == (err.code == 0);
    json_decref(diff);
    if (!ok) {
        inconsistent++;
    }
    gather_with(report, original);
}

/* A BenchmarkReport or BenchmarkComparison edited: validation, the
 * comparison with the original, the page, the verdict, the summary and
 * the gathering each give a result or an error, consistently; a report
 * validation refuses is refused with TS_EINVAL and a message. */
static long bench_edits, bench_refused;

static void
try_bench_edit(json_t *root,
               const json_t *original,
               const char *path,
               const char *key)
{
    ts_error err;
    json_t *diffs = NULL, *cmp;
    char *text;
    int rc, ok = 1;
    (void)path;
    (void)key;
    bench_edits++;
    ts_error_clear(&err);
    rc = ts_benchmark_validate(root, "before", &err);
    if (rc != TS_OK) {
        bench_refused++;
        CHECK(rc == TS_EINVAL && err.code == rc && err.message[0] != '\0');
    }
    ts_error_clear(&err);
    rc = ts_benchmark_prepare(original, root, &diffs, &err);
    ok = ok && (rc == TS_OK) == (err.code == 0);
    if (rc == TS_OK) {
        ts_error_clear(&err);
        cmp = ts_benchmark_comparison(original, root, diffs, true, &err);
        ok = ok && (cmp != NULL) == (err.code == 0);
        json_decref(cmp);
    }
    ts_error_clear(&err);
    text = ts_render_benchmark_html(root, "B", &err);
    ok = ok && (text != NULL) == (err.code == 0);
    free(text);
    ts_error_clear(&err);
    text = ts_render_verdict(root, &err);
    ok = ok && (text != NULL) == (err.code == 0);
    free(text);
    ts_error_clear(&err);
    text = ts_workload_summary(root, &err);
    ok = ok && (text != NULL) == (err.code == 0);
    free(text);
    if (!ok) {
        inconsistent++;
    }
    gather_with(root, original);
}

/* Does message name the edited member: the key itself, or the path of
 * the object that holds it (a row, a metric)? */
static int
names_where(const char *message, const char *path, const char *key)
{
    char holder[512];
    const char *dot;
    if (strstr(message, key) != NULL || strstr(message, path) != NULL) {
        return 1;
    }
    if (strstr(message, "duplicate layer call (") != NULL) {
        return 1; /* names the call by its path and index, as Python's */
    }
    /* the holder's path and each of its ancestors but the root, as the
     * messages write them ("report: layers[2].metrics: ...") */
    snprintf(holder, sizeof holder, "%s", path + strlen("report."));
    for (;;) {
        dot = strrchr(holder, '.');
        if (dot == NULL || (strrchr(holder, '[') > dot)) {
            dot = strrchr(holder, '[');
        }
        if (dot == NULL || dot == holder) {
            return 0;
        }
        holder[dot - holder] = '\0';
        if (strstr(message, holder) != NULL) {
            return 1;
        }
    }
}

typedef void (*try_fn)(json_t *root,
                       const json_t *original,
                       const char *path,
                       const char *key);

/* gathering the original with the edited one, and the edited one's
 * shape: a result or an error */
static void
gather_with(const json_t *report, const json_t *original)
{
    ts_error err;
    json_t *reports = json_pack("[OO]", original, report);
    json_t *ranks = json_pack("[ii]", 0, 1), *g;
    ts_error_clear(&err);
    g = ts_gather_reports(reports, ranks, true, &err);
    if ((g != NULL) != (err.code == 0)) {
        inconsistent++;
    }
    json_decref(g);
    ts_error_clear(&err);
    g = ts_gather_shape(report, &err);
    if ((g != NULL) != (err.code == 0)) {
        inconsistent++;
    }
    json_decref(g);
    json_decref(reports);
    json_decref(ranks);
}

static void
try_edit(json_t *root,
         const json_t *original,
         const char *path,
         const char *key)
{
    ts_error err;
    int rc;
    ts_error_clear(&err);
    rc = ts_analysis_report_check_display(root, "report", &err);
    edits++;
    {
        /* the totals compared whatever they hold: a diff or an error */
        ts_error derr;
        json_t *d;
        ts_error_clear(&derr);
        d = ts_diff_metrics(json_object_get(original, "totals"),
                            json_object_get(root, "totals"),
                            &derr);
        if ((d != NULL) != (derr.code == 0)) {
            inconsistent++;
        }
        json_decref(d);
    }
    if (rc == TS_OK) {
        edits_accepted++;
        consume(root, original);
        return;
    }
    edits_refused++;
    consume(root, original); /* each consumer: a result or an error */
    CHECK_EQ_INT(rc, TS_EFORMAT);
    CHECK(strncmp(err.message, "report", 6) == 0);
    if (!names_where(err.message, path, key)) {
        misnamed++;
        fprintf(stderr, "edit of %s: %s\n", path, err.message);
    }
}

static const char *const replacements[] = {
    "null",
    "\"x\"",
    "-1",
    "1.5",
    "true",
    "[]",
    "{}",
    "4611686018427387904",
};

/* Edits every member of node (and of each value below it) in place,
 * checking the whole report each time, and puts it back. */
/* Text no page may show, or that is no UTF-8 at all (stored with
 * json_stringn_nocheck, as a report read back may hold it). */
static const char *const hostile_texts[] = {
    "\x01",
    "\x7f",
    "\xc2\x85",
    "\xef\xbf\xbe",
    "\xef\xb7\x90",
    "\xf0\x9f\x98\x80",
    "\xff",
    "\xc3",
    "\xe2\x82",
    "<script>&'\"",
    "",
};

/* Under valgrind every 13th edit is tried. */
static long edit_serial, edit_stride = 1;

static void
walk(try_fn try_it,
     json_t *root,
     const json_t *original,
     json_t *node,
     const char *path)
{
    char sub[512];
    if (json_is_object(node)) {
        const char *key;
        json_t *value;
        void *iter = json_object_iter(node);
        /* the keys first: the iteration may not survive the edits */
        size_t count = json_object_size(node), i = 0;
        char **keys = calloc(count + 1, sizeof *keys);
        if (keys == NULL) {
            return;
        }
        for (; iter != NULL && i < count;
             iter = json_object_iter_next(node, iter)) {
            keys[i++] = strdup(json_object_iter_key(iter));
        }
        for (i = 0; i < count; i++) {
            key = keys[i];
            if (key == NULL) {
                continue;
            }
            snprintf(sub, sizeof sub, "%s.%s", path, key);
            value = json_incref(json_object_get(node, key));
            json_object_del(node, key);
            if (edit_serial++ % edit_stride == 0) {
                try_it(root, original, sub, key);
            }
            for (size_t r = 0; r < sizeof replacements / sizeof *replacements;
                 r++) {
                json_object_set_new(
                    node,
                    key,
                    json_loads(replacements[r], JSON_DECODE_ANY, NULL));
                if (edit_serial++ % edit_stride == 0) {
                    try_it(root, original, sub, key);
                }
            }
            for (size_t r = 0;
                 json_is_string(value)
                 && r < sizeof hostile_texts / sizeof *hostile_texts;
                 r++) {
                json_object_set_new(
                    node,
                    key,
                    json_stringn_nocheck(hostile_texts[r],
                                         strlen(hostile_texts[r])));
                if (edit_serial++ % edit_stride == 0) {
                    try_it(root, original, sub, key);
                }
            }
            json_object_set(node, key, value);
            walk(try_it, root, original, value, sub);
            json_decref(value);
            free(keys[i]);
        }
        free(keys);
    }
    else if (json_is_array(node)) {
        size_t n = json_array_size(node);
        for (size_t i = 0; i < n; i++) {
            char key[32];
            json_t *value = json_incref(json_array_get(node, i));
            snprintf(key, sizeof key, "[%zu]", i);
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            for (size_t r = 0; r < sizeof replacements / sizeof *replacements;
                 r++) {
                json_array_set_new(
                    node,
                    i,
                    json_loads(replacements[r], JSON_DECODE_ANY, NULL));
                if (edit_serial++ % edit_stride == 0) {
                    try_it(root, original, sub, key);
                }
            }
            json_array_set(node, i, value);
            walk(try_it, root, original, value, sub);
            json_decref(value);
        }
    }
}

/* ---- checkpoint headers, member by member --------------------------------
 * A safetensors header and a sharded index are JSON: each member of them
 * is edited as a report's are (walk above), the file rebuilt around it
 * and read; an index is read from a directory that holds its two shards. */

static const unsigned char *st_data; /* the seed's tensor data */
static size_t st_data_size;
static char st_dir[64];
static long header_edits, header_refused;

static void
try_st_header(json_t *root,
              const json_t *original,
              const char *path,
              const char *key)
{
    char *header = json_dumps(root, JSON_COMPACT);
    size_t n = header != NULL ? strlen(header) : 0;
    unsigned char *file = malloc(8 + n + st_data_size + 1);
    (void)original;
    (void)path;
    (void)key;
    if (header != NULL && file != NULL) {
        for (int i = 0; i < 8; i++) {
            file[i] = (unsigned char)((uint64_t)n >> (8 * i));
        }
        memcpy(file + 8, header, n);
        memcpy(file + 8 + n, st_data, st_data_size);
        header_edits++;
        header_refused += !read_one(file, 8 + n + st_data_size, 0);
    }
    free(file);
    free(header);
}

static int
write_bytes(const char *dir, const char *name, const void *data, size_t n)
{
    char path[256];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL) {
        return 0;
    }
    n = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && n;
}

/* A shard holding one F32 tensor of `count` elements. */
static int
write_shard(const char *name, const char *tensor, int count)
{
    char header[128];
    unsigned char file[256] = {0};
    int n = snprintf(header,
                     sizeof header,
                     "{\"%s\":{\"dtype\":\"F32\",\"shape\":[%d],"
                     "\"data_offsets\":[0,%d]}}",
                     tensor,
                     count,
                     4 * count);
    file[0] = (unsigned char)n;
    memcpy(file + 8, header, (size_t)n);
    return write_bytes(st_dir, name, file, 8 + (size_t)n + 4 * (size_t)count);
}

static void
try_index(json_t *root,
          const json_t *original,
          const char *path,
          const char *key)
{
    char *text = json_dumps(root, JSON_COMPACT);
    char file[128];
    ts_error err;
    json_t *report;
    (void)original;
    (void)path;
    (void)key;
    if (text == NULL
        || !write_bytes(
            st_dir, "model.safetensors.index.json", text, strlen(text))) {
        free(text);
        return;
    }
    free(text);
    snprintf(file, sizeof file, "%s/model.safetensors.index.json", st_dir);
    ts_error_clear(&err);
    report = ts_checkpoint_inspect(file, &err);
    header_edits++;
    if (report == NULL) {
        header_refused++;
        if (!(err.code < 0 && err.message[0] != '\0')) {
            inconsistent++;
        }
    }
    else {
        if (err.code != 0) {
            inconsistent++;
        }
        json_decref(report);
    }
}

static void
hostile_headers(void)
{
    size_t size, n = 0;
    unsigned char *data = load_file(
        "tests/fuzz/checkpoints/safetensors/kinds.safetensors", &size);
    json_t *header, *original, *index;
    ts_error err;
    char file[128];
    if (data == NULL) {
        return;
    }
    for (int i = 0; i < 8; i++) {
        n |= (size_t)data[i] << (8 * i);
    }
    header = json_loadb((const char *)data + 8, n, 0, NULL);
    CHECK(header != NULL);
    st_data = data + 8 + n;
    st_data_size = size - 8 - n;
    if (header != NULL) {
        original = json_deep_copy(header);
        walk(try_st_header, header, original, header, "header");
        CHECK(json_equal(header, original));
        json_decref(original);
        json_decref(header);
    }
    free(data);
    /* the index beside its shards: read whole first */
    snprintf(st_dir, sizeof st_dir, "/tmp/ts_hostile_XXXXXX");
    CHECK(mkdtemp(st_dir) != NULL);
    CHECK(write_shard("model-00001-of-00002.safetensors", "a", 3));
    CHECK(write_shard("model-00002-of-00002.safetensors", "b.c", 4));
    index = json_pack("{s:{s:i}, s:{s:s, s:s}}",
                      "metadata",
                      "total_size",
                      28,
                      "weight_map",
                      "a",
                      "model-00001-of-00002.safetensors",
                      "b.c",
                      "model-00002-of-00002.safetensors");
    original = json_deep_copy(index);
    try_index(index, original, "", "");
    snprintf(file, sizeof file, "%s/model.safetensors.index.json", st_dir);
    {
        /* the index and its shards agree: read whole */
        json_t *whole = ts_checkpoint_inspect(file, &err);
        CHECK(whole != NULL);
        if (whole == NULL) {
            fprintf(stderr, "index: %s\n", err.message);
        }
        json_decref(whole);
    }
    walk(try_index, index, original, index, "index");
    json_decref(original);
    json_decref(index);
    remove(file);
    snprintf(file, sizeof file, "%s/model-00001-of-00002.safetensors", st_dir);
    remove(file);
    snprintf(file, sizeof file, "%s/model-00002-of-00002.safetensors", st_dir);
    remove(file);
    remove(st_dir);
    printf("header and index edits: %ld (%ld refused)\n",
           header_edits,
           header_refused);
}

static void
hostile_report(const char *file, try_fn try_it)
{
    json_error_t jerr;
    char path[512];
    json_t *report, *original;
    ts_error err;
    long before = edits + bench_edits;
    snprintf(path, sizeof path, "%s/%s", TS_SOURCE_ROOT, file);
    report = json_load_file(path, 0, &jerr);
    CHECK(report != NULL);
    if (report == NULL) {
        return;
    }
    original = json_deep_copy(report);
    if (try_it == try_edit) {
        CHECK_EQ_INT(ts_analysis_report_check_display(report, "report", &err),
                     TS_OK);
    }
    walk(try_it, report, original, report, "report");
    /* put back as it was */
    CHECK(json_equal(report, original));
    printf("%-44s %6ld edits\n", file, edits + bench_edits - before);
    json_decref(original);
    json_decref(report);
}

int
main(void)
{
    static const seed seeds[] = {
        {"tests/fuzz/checkpoints/safetensors/small.safetensors", 0, 0},
        {"tests/fuzz/checkpoints/safetensors/one.safetensors", 0, 0},
        {"tests/fuzz/checkpoints/index/model.safetensors.index.json", 1, -1},
        {"tests/fuzz/checkpoints/torch_zip/small.pt", 2, 0},
        {"tests/fuzz/checkpoints/torch_zip/nested.pt", 2, 0},
        {"tests/fuzz/checkpoints/torch_legacy/small.pt", 3, -1},
        /* its last tensor's data ends at byte 338, then 14 bytes of padding
         * to the alignment of 32 that a reader does not need */
        {"tests/fuzz/checkpoints/gguf/small.gguf", 4, 338},
        /* generated by tests/fuzz/checkpoints/make_seeds.py */
        {"tests/fuzz/checkpoints/safetensors/kinds.safetensors", 0, 0},
        {"tests/fuzz/checkpoints/torch_zip/kinds.pt", 2, 0},
        {"tests/fuzz/checkpoints/torch_legacy/kinds.pt", 3, -1},
        {"tests/fuzz/checkpoints/torch_legacy/proto2.pt", 3, -1},
        {"tests/fuzz/checkpoints/gguf/kinds.gguf", 4, 802}, /* 14 padding */
        {"tests/fuzz/checkpoints/gguf/kinds_v2.gguf", 4, 802},
    };
    static const char *const reports[] = {
        "tests/c/report_check_valid.json",
        "tests/golden/partial.json",
        "tests/golden/structure.json",
    };
    static const char *const benchmarks[] = {
        "tests/fuzz/corpus/benchmark.single.json",
        "tests/fuzz/corpus/benchmark.comparison.json",
        /* measure_workload of Sequential(Linear(8, 4), ReLU()) with every
         * metric and the profile */
        "tests/fuzz/corpus/benchmark.workload.json",
    };
    if (getenv("TORCHSCAN_TEST_VALGRIND") != NULL) {
        stride = 7;
        edit_stride = 13;
    }
    against[0] =
        json_load_file(TS_SOURCE_ROOT "/tests/golden/structure.json", 0, NULL);
    against[1] = json_pack("{s:s, s:[{s:s, s:[i,i], s:s}]}",
                           "report_type",
                           "state_dict",
                           "tensors",
                           "name",
                           "model.layers.0.w",
                           "shape",
                           2,
                           3,
                           "dtype",
                           "torch.float32");
    CHECK(against[0] != NULL && against[1] != NULL);
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        hostile_checkpoint(&seeds[i]);
    }

    printf("checkpoint reads: %ld (%ld refused, %ld accepted)\n",
           reads,
           refused,
           accepted);
    hostile_headers();
    for (size_t i = 0; i < sizeof reports / sizeof reports[0]; i++) {
        hostile_report(reports[i], try_edit);
    }
    for (size_t i = 0; i < sizeof benchmarks / sizeof benchmarks[0]; i++) {
        hostile_report(benchmarks[i], try_bench_edit);
    }
    printf(
        "report edits: %ld (%ld refused, %ld accepted), %ld refusals "
        "not naming the member\n",
        edits,
        edits_refused,
        edits_accepted,
        misnamed);
    printf("benchmark edits: %ld (%ld refused by validation)\n",
           bench_edits,
           bench_refused);
    json_decref(against[0]);
    json_decref(against[1]);
    CHECK_EQ_INT(misnamed, 0);
    CHECK_EQ_INT(inconsistent, 0);
    return ts_test_report();
}
