/* An emitter (torchscan/emit.h) that fails its N-th callback: it passes
 * every other callback to a JSON builder's emitter, and the N-th returns
 * -1 without reaching it. fault_loop() drives a writer with N = 1, 2, ...
 * until a run makes fewer than N callbacks: every run with a failed
 * callback must return non-zero, the complete run 0 with a tree equal to
 * the one a plain builder gets. */
#ifndef TS_TEST_FAIL_EMITTER_H
#define TS_TEST_FAIL_EMITTER_H

#include "harness.h"
#include "torchscan/emit.h"

typedef struct fail_emitter {
    ts_emitter inner;
    long calls, fail_at;
} fail_emitter;

static int
fe_step(fail_emitter *f)
{
    return ++f->calls == f->fail_at ? -1 : 0;
}

#define FE_PASS(call)      \
    fail_emitter *f = ctx; \
    if (fe_step(f) != 0) { \
        return -1;         \
    }                      \
    return f->inner.call

static int
fe_begin_object(void *ctx)
{
    FE_PASS(begin_object(f->inner.ctx));
}
static int
fe_end_object(void *ctx)
{
    FE_PASS(end_object(f->inner.ctx));
}
static int
fe_begin_array(void *ctx)
{
    FE_PASS(begin_array(f->inner.ctx));
}
static int
fe_end_array(void *ctx)
{
    FE_PASS(end_array(f->inner.ctx));
}
static int
fe_key(void *ctx, const char *key)
{
    FE_PASS(key(f->inner.ctx, key));
}
static int
fe_string(void *ctx, const char *value)
{
    FE_PASS(string(f->inner.ctx, value));
}
static int
fe_integer(void *ctx, int64_t value)
{
    FE_PASS(integer(f->inner.ctx, value));
}
static int
fe_real(void *ctx, double value)
{
    FE_PASS(real(f->inner.ctx, value));
}
static int
fe_boolean(void *ctx, bool value)
{
    FE_PASS(boolean(f->inner.ctx, value));
}
static int
fe_null(void *ctx)
{
    FE_PASS(null(f->inner.ctx));
}
static int
fe_tree(void *ctx, const json_t *value)
{
    FE_PASS(tree(f->inner.ctx, value));
}

/* A writer: 0 on success, non-zero when the emitter failed. */
typedef int (*fault_writer)(const ts_emitter *e, void *arg);

static long fault_runs, fault_writers;

static void
fault_loop(const char *name, fault_writer write, void *arg)
{
    ts_json_builder *b = ts_json_builder_new();
    ts_emitter plain;
    json_t *expected = NULL;
    long n;
    if (b == NULL) {
        CHECK(b != NULL);
        return;
    }
    ts_json_builder_emitter(b, &plain);
    CHECK_EQ_INT(write(&plain, arg), 0);
    expected = ts_json_builder_take(b);
    ts_json_builder_free(b);
    CHECK(expected != NULL);
    fault_writers++;
    for (n = 1;; n++) {
        fail_emitter f;
        ts_emitter e = {&f,
                        fe_begin_object,
                        fe_end_object,
                        fe_begin_array,
                        fe_end_array,
                        fe_key,
                        fe_string,
                        fe_integer,
                        fe_real,
                        fe_boolean,
                        fe_null,
                        fe_tree};
        int rc;
        b = ts_json_builder_new();
        if (b == NULL) {
            break;
        }
        ts_json_builder_emitter(b, &f.inner);
        f.calls = 0;
        f.fail_at = n;
        rc = write(&e, arg);
        if (f.calls < n) { /* nothing failed */
            json_t *got = rc == 0 ? ts_json_builder_take(b) : NULL;
            CHECK_EQ_INT(rc, 0);
            CHECK(got != NULL && json_equal(got, expected));
            json_decref(got);
            ts_json_builder_free(b);
            break;
        }
        fault_runs++;
        if (rc == 0) {
            fprintf(stderr,
                    "%s: callback %ld failed, the writer said 0\n",
                    name,
                    n);
        }
        CHECK(rc != 0);
        ts_json_builder_free(b);
    }
    json_decref(expected);
}

#endif /* TS_TEST_FAIL_EMITTER_H */
