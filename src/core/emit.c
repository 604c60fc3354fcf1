/* The jansson emitter, and tree replay for any emitter. */
#include <stdlib.h>
#include <string.h>

#include "torchscan/emit.h"

int
ts_emit_tree(const ts_emitter *e, const json_t *v)
{
    switch (json_typeof(v)) {
        case JSON_OBJECT: {
            const char *key;
            json_t *item;
            if (e->begin_object(e->ctx)) {
                return -1;
            }
            json_object_foreach((json_t *)v, key, item)
            {
                if (e->key(e->ctx, key) || ts_emit_tree(e, item)) {
                    return -1;
                }
            }
            return e->end_object(e->ctx);
        }
        case JSON_ARRAY:
            if (e->begin_array(e->ctx)) {
                return -1;
            }
            for (size_t i = 0; i < json_array_size(v); i++) {
                if (ts_emit_tree(e, json_array_get(v, i))) {
                    return -1;
                }
            }
            return e->end_array(e->ctx);
        case JSON_STRING:
            return e->string(e->ctx, json_string_value(v));
        case JSON_INTEGER:
            return e->integer(e->ctx, json_integer_value(v));
        case JSON_REAL:
            return e->real(e->ctx, json_real_value(v));
        case JSON_TRUE:
            return e->boolean(e->ctx, true);
        case JSON_FALSE:
            return e->boolean(e->ctx, false);
        case JSON_NULL:
        default:
            return e->null(e->ctx);
    }
}

#define MAX_DEPTH 256

struct ts_json_builder {
    json_t *stack[MAX_DEPTH]; /* open containers */
    char *keys[MAX_DEPTH];    /* pending member name per open object */
    int depth;
    json_t *result;
    bool failed;
};

ts_json_builder *
ts_json_builder_new(void)
{
    return calloc(1, sizeof(ts_json_builder));
}

void
ts_json_builder_free(ts_json_builder *b)
{
    if (b == NULL) {
        return;
    }
    for (int i = 0; i < b->depth; i++) {
        json_decref(b->stack[i]);
        free(b->keys[i]);
    }
    json_decref(b->result);
    free(b);
}

/* Places a finished value (stolen) in the open container or as result. */
static int
place(ts_json_builder *b, json_t *value)
{
    json_t *top;
    if (value == NULL || b->failed) {
        json_decref(value);
        b->failed = true;
        return -1;
    }
    if (b->depth == 0) {
        if (b->result != NULL) {
            json_decref(value);
            b->failed = true;
            return -1;
        }
        b->result = value;
        return 0;
    }
    top = b->stack[b->depth - 1];
    if (json_is_array(top)) {
        if (json_array_append_new(top, value)) {
            b->failed = true;
            return -1;
        }
        return 0;
    }
    if (b->keys[b->depth - 1] == NULL) {
        /* a member without a key: refused, and not kept */
        json_decref(value);
        b->failed = true;
        return -1;
    }
    if (json_object_set_new(top, b->keys[b->depth - 1], value)) {
        b->failed = true;
        return -1;
    }
    free(b->keys[b->depth - 1]);
    b->keys[b->depth - 1] = NULL;
    return 0;
}

static int
open_container(ts_json_builder *b, json_t *container)
{
    if (container == NULL || b->depth == MAX_DEPTH || b->failed) {
        json_decref(container);
        b->failed = true;
        return -1;
    }
    b->stack[b->depth] = container;
    b->keys[b->depth] = NULL;
    b->depth++;
    return 0;
}

static int
close_container(ts_json_builder *b)
{
    json_t *done;
    if (b->depth == 0 || b->failed) {
        b->failed = true;
        return -1;
    }
    b->depth--;
    done = b->stack[b->depth];
    free(b->keys[b->depth]);
    b->keys[b->depth] = NULL;
    return place(b, done);
}

static int
jb_begin_object(void *ctx)
{
    return open_container(ctx, json_object());
}

static int
jb_begin_array(void *ctx)
{
    return open_container(ctx, json_array());
}

static int
jb_end(void *ctx)
{
    return close_container(ctx);
}

static int
jb_key(void *ctx, const char *key)
{
    ts_json_builder *b = ctx;
    size_t n;
    if (b->depth == 0 || !json_is_object(b->stack[b->depth - 1])
        || b->failed) {
        b->failed = true;
        return -1;
    }
    n = strlen(key) + 1;
    free(b->keys[b->depth - 1]);
    b->keys[b->depth - 1] = malloc(n);
    if (b->keys[b->depth - 1] == NULL) {
        b->failed = true;
        return -1;
    }
    memcpy(b->keys[b->depth - 1], key, n);
    return 0;
}

static int
jb_string(void *ctx, const char *value)
{
    return place(ctx, json_string(value));
}

static int
jb_integer(void *ctx, int64_t value)
{
    return place(ctx, json_integer((json_int_t)value));
}

static int
jb_real(void *ctx, double value)
{
    return place(ctx, json_real(value));
}

static int
jb_boolean(void *ctx, bool value)
{
    return place(ctx, json_boolean(value));
}

static int
jb_null(void *ctx)
{
    return place(ctx, json_null());
}

static int
jb_tree(void *ctx, const json_t *value)
{
    return place(ctx, json_deep_copy(value));
}

void
ts_json_builder_emitter(ts_json_builder *b, ts_emitter *e)
{
    e->ctx = b;
    e->begin_object = jb_begin_object;
    e->end_object = jb_end;
    e->begin_array = jb_begin_array;
    e->end_array = jb_end;
    e->key = jb_key;
    e->string = jb_string;
    e->integer = jb_integer;
    e->real = jb_real;
    e->boolean = jb_boolean;
    e->null = jb_null;
    e->tree = jb_tree;
}

json_t *
ts_json_builder_take(ts_json_builder *b)
{
    json_t *result;
    if (b->failed || b->depth != 0) {
        return NULL;
    }
    result = b->result;
    b->result = NULL;
    return result;
}
