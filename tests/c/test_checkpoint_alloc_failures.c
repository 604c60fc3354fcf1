/* Allocation-failure injection (as tests/c/test_alloc_failures.c) on the
 * checkpoint inputs built by checkpoint_build.h, which reach code the seed
 * files do not: every pickle opcode and rebuild call, a legacy file, GGUF
 * arrays and strings, an index read from memory, safetensors metadata,
 * module-level matching, the text table of a hand-made report and the
 * storage map. For each entry, the run with the N-th allocation failing is
 * made for every N until a run makes fewer than N allocations: each
 * failing run must report TS_ENOMEM (or survive with the same result); none
 * may crash, and under `make asan` none may leak. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "checkpoint_build.h"
#include "torchscan/checkpoint.h"
#include "torchscan/json_text.h"

static long alloc_count;
static long fail_at;

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *ptr, size_t size);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *ptr, size_t size);
char *__wrap_strdup(const char *s);

static int
must_fail(void)
{
    return fail_at > 0 && ++alloc_count == fail_at;
}

void *
__wrap_malloc(size_t size)
{
    return must_fail() ? NULL : __real_malloc(size);
}

void *
__wrap_calloc(size_t n, size_t size)
{
    return must_fail() ? NULL : __real_calloc(n, size);
}

void *
__wrap_realloc(void *ptr, size_t size)
{
    return must_fail() ? NULL : __real_realloc(ptr, size);
}

char *
__wrap_strdup(const char *s)
{
    return must_fail() ? NULL : __real_strdup(s);
}

/* jansson's parser is not injected (see test_alloc_failures.c: its own
 * failure paths misbehave in jansson 2.14). */
static int parsing;

json_t *__real_json_loadb(const char *buffer,
                          size_t buflen,
                          size_t flags,
                          json_error_t *error);
json_t *__wrap_json_loadb(const char *buffer,
                          size_t buflen,
                          size_t flags,
                          json_error_t *error);

json_t *
__wrap_json_loadb(const char *buffer,
                  size_t buflen,
                  size_t flags,
                  json_error_t *error)
{
    json_t *value;
    parsing++;
    value = __real_json_loadb(buffer, buflen, flags, error);
    parsing--;
    return value;
}

static void *
json_alloc(size_t size)
{
    return parsing ? __real_malloc(size) : __wrap_malloc(size);
}

/* ---- inputs, built before any injection ---- */

typedef struct input {
    bytes zip_rich, zip_calls, legacy, gguf, st;
    json_t *report, *analysis, *state_dict, *hand, *deep;
} input;

static void
zip_of(bytes *z, const bytes *pk, const size_t *sizes, size_t nsizes)
{
    static const char *const names[] = {"arch/data/0", "arch/data/1"};
    zent e[3];
    zopts o;
    memset(e, 0, sizeof e);
    memset(&o, 0, sizeof o);
    e[0].name = "arch/data.pkl";
    e[0].data = pk->d;
    e[0].size = pk->n;
    for (size_t k = 0; k < nsizes; k++) {
        e[k + 1].name = names[k];
        e[k + 1].data = zeros;
        e[k + 1].size = sizes[k];
    }
    zip_file(z, e, nsizes + 1, &o);
}

static void
legacy_of(bytes *f, const bytes *pk)
{
    static const unsigned char magic[] = {0x80,
                                          0x02,
                                          0x8a,
                                          0x0a,
                                          0x6c,
                                          0xfc,
                                          0x9c,
                                          0x46,
                                          0xf9,
                                          0x20,
                                          0x6a,
                                          0xa8,
                                          0x50,
                                          0x19,
                                          '.'};
    put(f, magic, sizeof magic);
    put(f, "\x80\x02M\xe9\x03.", 6);
    put(f, "\x80\x02}.", 4);
    put(f, pk->d, pk->n);
    put(f,
        "\x80\x02(\x8c\x01"
        "0l.",
        8);
    le(f, 6, 8);
    put(f, zeros, 24 + 3); /* 3 bytes after the storage */
}

static void
gguf_of(bytes *b)
{
    uint64_t d8[1] = {8}, d32[1] = {32}, d3[1] = {3};
    g_head(b, 3, 3, 4);
    g_key(b, "general.name", 8);
    g_str(b, "tiny", 4);
    g_key(b, "tokens", 9); /* 70 strings: summarised */
    le(b, 8, 4);
    le(b, 70, 8);
    for (int k = 0; k < 70; k++) {
        g_str(b, "t", 1);
    }
    g_key(b, "nested", 9); /* [[1, 2]] of uint8 */
    le(b, 9, 4);
    le(b, 1, 8);
    le(b, 0, 4);
    le(b, 2, 8);
    le(b, 1, 1);
    le(b, 2, 1);
    g_key(b, "bad", 8);
    g_str(b, "\xff", 1);
    g_tensor(b, "blk.0.w", 1, d8, 0, 0);
    g_tensor(b, "blk.0.q", 1, d32, 2, 32);
    g_tensor(b, "blk.1.u", 1, d3, 4, 64);
    g_data(b, 32, 64);
}

static json_t *
parse(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    CHECK(v != NULL);
    return v;
}

/* ---- entries: the result as text (real allocator), NULL on error ---- */

typedef char *(*entry_fn)(const input *in, int *code);

static char *
as_text(json_t *value)
{
    char *text = NULL, *copy = NULL;
    long saved = fail_at;
    if (value == NULL) {
        return NULL;
    }
    fail_at = 0;
    text = ts_json_text(value, -1);
    json_decref(value);
    fail_at = saved;
    if (text != NULL) {
        copy = __real_malloc(strlen(text) + 1);
        if (copy != NULL) {
            strcpy(copy, text);
        }
        free(text);
    }
    return copy;
}

static char *
keep(char *text)
{
    char *copy = NULL;
    if (text != NULL) {
        copy = __real_malloc(strlen(text) + 1);
        if (copy != NULL) {
            strcpy(copy, text);
        }
        free(text);
    }
    return copy;
}

static char last_message[sizeof(((ts_error *)0)->message)];

static char *
inspect_bytes(const bytes *b, int *code)
{
    ts_error err;
    json_t *r;
    ts_error_clear(&err);
    r = ts_checkpoint_inspect_memory(b->d, b->n, "f", &err);
    *code = err.code;
    snprintf(last_message, sizeof last_message, "%s", err.message);
    return as_text(r);
}

static char *
e_zip_rich(const input *in, int *code)
{
    return inspect_bytes(&in->zip_rich, code);
}

static char *
e_zip_calls(const input *in, int *code)
{
    return inspect_bytes(&in->zip_calls, code);
}

static char *
e_legacy(const input *in, int *code)
{
    return inspect_bytes(&in->legacy, code);
}

static char *
e_gguf(const input *in, int *code)
{
    return inspect_bytes(&in->gguf, code);
}

static char *
e_safetensors(const input *in, int *code)
{
    return inspect_bytes(&in->st, code);
}

static char *
e_index(const input *in, int *code)
{
    static const char text[] =
        "{\"metadata\": {\"total_size\": 8}, \"weight_map\": "
        "{\"a\": \"s1.safetensors\", \"b\": \"s2.safetensors\", "
        "\"c\": \"s1.safetensors\"}}";
    ts_error err;
    json_t *r;
    (void)in;
    ts_error_clear(&err);
    r = ts_checkpoint_inspect_memory(text, sizeof text - 1, "i", &err);
    *code = err.code;
    return as_text(r);
}

static char *
match_and_text(const json_t *report, const json_t *against, int *code)
{
    ts_error err;
    json_t *m;
    char *text = NULL;
    ts_error_clear(&err);
    m = ts_checkpoint_match(report, against, &err);
    if (m != NULL) {
        text = ts_checkpoint_match_text(m, &err);
        json_decref(m);
    }
    *code = err.code;
    return keep(text);
}

static char *
e_match_modules(const input *in, int *code)
{
    return match_and_text(in->report, in->analysis, code);
}

static char *
e_match_tensors(const input *in, int *code)
{
    return match_and_text(in->report, in->state_dict, code);
}

static char *
e_table(const input *in, int *code)
{
    ts_error err;
    char *text;
    ts_error_clear(&err);
    text = ts_checkpoint_table(in->hand, -1, &err);
    *code = err.code;
    return keep(text);
}

static char *
e_render(const input *in, int *code)
{
    ts_error err;
    char *text;
    ts_error_clear(&err);
    text = ts_checkpoint_render(in->deep, "T", "html", &err);
    *code = err.code;
    return keep(text);
}

/* ---- files on disk: a zip by plain name (read from the working
 * directory) and a sharded index by path ---- */

static char tmpdir[64];

static void
write_file(const char *name, const void *data, size_t n)
{
    char path[256];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f != NULL) {
        CHECK(fwrite(data, 1, n, f) == n);
        fclose(f);
    }
}

static char *
inspect_path(const char *path, int *code)
{
    ts_error err;
    json_t *r;
    ts_error_clear(&err);
    r = ts_checkpoint_inspect(path, &err);
    *code = err.code;
    snprintf(last_message, sizeof last_message, "%s", err.message);
    return as_text(r);
}

static char *
e_file_by_name(const input *in, int *code)
{
    (void)in;
    return inspect_path("m.pt", code);
}

static char *
e_index_on_disk(const input *in, int *code)
{
    char path[256];
    (void)in;
    snprintf(path, sizeof path, "%s/i.json", tmpdir);
    return inspect_path(path, code);
}

static void
write_files(const input *in)
{
    static const char s1[] =
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
        "\"data_offsets\": [0, 8]}, "
        "\"x\": {\"dtype\": \"F16\", \"shape\": [2], "
        "\"data_offsets\": [8, 12]}}";
    static const char s2[] =
        "{\"b\": {\"dtype\": \"I64\", \"shape\": [1], "
        "\"data_offsets\": [0, 8]}}";
    static const char index[] =
        "{\"metadata\": {\"total_size\": 99}, \"weight_map\": "
        "{\"a\": \"s1.safetensors\", \"b\": \"s1.safetensors\", "
        "\"y\": \"s2.safetensors\"}}";
    bytes b = {0};
    write_file("m.pt", in->zip_rich.d, in->zip_rich.n);
    le(&b, sizeof s1 - 1, 8);
    put(&b, s1, sizeof s1 - 1);
    put(&b, zeros, 12);
    write_file("s1.safetensors", b.d, b.n);
    b.n = 0;
    le(&b, sizeof s2 - 1, 8);
    put(&b, s2, sizeof s2 - 1);
    put(&b, zeros, 8);
    write_file("s2.safetensors", b.d, b.n);
    free(b.d);
    write_file("i.json", index, sizeof index - 1);
}

static void
remove_files(void)
{
    static const char *const names[] = {
        "m.pt", "s1.safetensors", "s2.safetensors", "i.json"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[k]);
        remove(path);
    }
    rmdir(tmpdir);
}

static long sites;

static void
inject(const char *name, entry_fn fn, const input *in)
{
    char *expected;
    int code = TS_OK;
    long n;
    fail_at = 0;
    expected = fn(in, &code);
    CHECK(expected != NULL);
    if (expected == NULL) {
        fprintf(stderr, "%s: fails without injection (%d)\n", name, code);
        return;
    }
    for (n = 1;; n++) {
        char *got;
        alloc_count = 0;
        fail_at = n;
        code = TS_OK;
        got = fn(in, &code);
        fail_at = 0;
        if (alloc_count < n) {
            CHECK(got != NULL && strcmp(got, expected) == 0);
            free(got);
            break;
        }
        sites++;
        if (got == NULL) {
            if (code != TS_ENOMEM) {
                CHECK_EQ_INT(code, TS_ENOMEM);
                fprintf(
                    stderr, "%s: allocation %ld: %s\n", name, n, last_message);
            }
        }
        else {
            if (strcmp(got, expected) != 0) {
                CHECK(!"a run that survived a failure gave another result");
                fprintf(stderr, "%s: allocation %ld\n", name, n);
            }
            free(got);
        }
    }
    printf("%-20s %5ld allocations, each failed once\n", name, n - 1);
    free(expected);
}

int
main(void)
{
    input in;
    static const struct {
        const char *name;
        entry_fn fn;
    } entries[] = {
        {"zip, every opcode", e_zip_rich},
        {"zip, rebuild calls", e_zip_calls},
        {"legacy", e_legacy},
        {"gguf", e_gguf},
        {"safetensors", e_safetensors},
        {"index in memory", e_index},
        {"match modules", e_match_modules},
        {"match tensors", e_match_tensors},
        {"table", e_table},
        {"render html", e_render},
        {"file by name", e_file_by_name},
        {"index on disk", e_index_on_disk},
    };
    char cwd[4096];
    memset(&in, 0, sizeof in);
    json_set_alloc_funcs(json_alloc, free);
    {
        bytes pk = {0};
        const size_t rich_sizes[2] = {16, 8}, calls_sizes[1] = {24};
        rich_pickle(&pk);
        zip_of(&in.zip_rich, &pk, rich_sizes, 2);
        free(pk.d);
        memset(&pk, 0, sizeof pk);
        calls_pickle(&pk);
        zip_of(&in.zip_calls, &pk, calls_sizes, 1);
        free(pk.d);
        memset(&pk, 0, sizeof pk);
        w_pickle(&pk);
        legacy_of(&in.legacy, &pk);
        free(pk.d);
    }
    gguf_of(&in.gguf);
    {
        static const char header[] =
            "{\"__metadata__\": {\"format\": \"pt\", \"note\": \"x\"}, "
            "\"enc.w\": {\"dtype\": \"F32\", \"shape\": [2, 3], "
            "\"data_offsets\": [0, 24]}, "
            "\"enc.e\": {\"dtype\": \"F32\", \"shape\": [0], "
            "\"data_offsets\": [24, 24]}, "
            "\"dec.w\": {\"dtype\": \"BF16\", \"shape\": [4], "
            "\"data_offsets\": [24, 32]}, "
            "\"extra.w\": {\"dtype\": \"F32\", \"shape\": [1], "
            "\"data_offsets\": [32, 36]}}";
        ts_error err;
        le(&in.st, sizeof header - 1, 8);
        put(&in.st, header, sizeof header - 1);
        put(&in.st, zeros, 40);
        in.report = ts_checkpoint_inspect_memory(in.st.d, in.st.n, "m", &err);
        CHECK(in.report != NULL);
    }
    in.analysis = parse(
        "{\"report_type\": \"analysis\", \"layers\": ["
        " {\"path\": \"\"},"
        " {\"path\": \"enc\", \"parameters\": {\"trainable\": 6}},"
        " {\"path\": \"dec\", \"parameters\": {\"trainable\": 5}},"
        " {\"path\": \"head\", \"parameters\": {\"trainable\": 7}}]}");
    in.state_dict = parse(
        "{\"report_type\": \"state_dict\", \"tensors\": ["
        " {\"name\": \"enc.w\", \"shape\": [2, 3], \"dtype\": \"f\"},"
        " {\"name\": \"dec.w\", \"shape\": [5], \"dtype\": \"f\"},"
        " {\"name\": \"head.w\", \"shape\": [7], \"dtype\": \"f\"}]}");
    in.hand = parse(
        "{\"report_type\": \"checkpoint\", \"format\": \"pytorch_zip\","
        " \"files\": [{\"name\": \"a.pt\", \"format\": \"pytorch_zip\","
        " \"bytes\": 1234567, \"header_bytes\": null, \"tensors\": 3}],"
        " \"modules\": [{\"path\": \"\", \"depth\": 0, \"tensors\": 10,"
        " \"elements\": 10, \"bytes\": 40}, {\"path\": \"a\", \"depth\": 1,"
        " \"tensors\": 10, \"elements\": 10, \"bytes\": 40}],"
        " \"dtypes\": [{\"dtype\": \"torch.float32\", \"tensors\": 10,"
        " \"elements\": 10, \"bytes\": 40}],"
        " \"shared\": [{\"storage\": \"0\", \"relation\": \"views\","
        " \"tensors\": [\"t0\", \"t1\", \"t2\", \"t3\", \"t4\", \"t5\","
        " \"t6\", \"t7\", \"t8\", \"t9\"]}],"
        " \"globals\": [{\"name\": \"os.system\", \"allowed\": false}],"
        " \"totals\": {\"tensors\": {\"status\": \"partial\","
        " \"value\": null, \"known_value\": 10}},"
        " \"diagnostics\": [{\"code\": \"c1\", \"message\": \"m1\"}]}");
    {
        ts_error err;
        bytes deep = {0};
        static const char header[] =
            "{\"a.b.c.d.e.f.g.h.i.j.k.l.m.n.w\": {\"dtype\": \"F32\", "
            "\"shape\": [1], \"data_offsets\": [0, 4]}, "
            "\"z.w\": {\"dtype\": \"F32\", \"shape\": [1], "
            "\"data_offsets\": [4, 8]}}";
        le(&deep, sizeof header - 1, 8);
        put(&deep, header, sizeof header - 1);
        put(&deep, zeros, 8);
        in.deep = ts_checkpoint_inspect_memory(deep.d, deep.n, "d", &err);
        CHECK(in.deep != NULL);
        free(deep.d);
    }
    snprintf(
        tmpdir, sizeof tmpdir, "/tmp/ts_checkpoint_alloc_failures_XXXXXX");
    CHECK(mkdtemp(tmpdir) != NULL && getcwd(cwd, sizeof cwd) != NULL);
    write_files(&in);
    CHECK(chdir(tmpdir) == 0);
    if (in.report != NULL && in.analysis != NULL && in.state_dict != NULL
        && in.hand != NULL && in.deep != NULL) {
        for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
            inject(entries[i].name, entries[i].fn, &in);
        }
    }
    CHECK(chdir(cwd) == 0);
    remove_files();
    printf("allocation sites failed: %ld\n", sites);
    free(in.zip_rich.d);
    free(in.zip_calls.d);
    free(in.legacy.d);
    free(in.gguf.d);
    free(in.st.d);
    json_decref(in.report);
    json_decref(in.analysis);
    json_decref(in.state_dict);
    json_decref(in.hand);
    json_decref(in.deep);
    return ts_test_report();
}
