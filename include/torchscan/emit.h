/* A streaming writer of JSON-shaped values. The engine writes reports
 * through it, so the binding can build Python objects directly (no JSON
 * tree in between) while C callers get a jansson tree (ts_json_emitter).
 *
 * Calls follow the value grammar: begin_object, then for each member key()
 * and one value, then end_object; begin_array, values, end_array. Every
 * callback returns 0 or -1 (the emitter keeps its own error state).
 *
 * Text passed to key() and string(), and trees passed to tree(), stay
 * valid and unchanged until the whole emission ends: an emitter may
 * remember text by its address (the Python builder does, for text that is
 * not on the stack). */
#ifndef TORCHSCAN_EMIT_H
#define TORCHSCAN_EMIT_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_emitter {
    void *ctx;
    int (*begin_object)(void *ctx);
    int (*end_object)(void *ctx);
    int (*begin_array)(void *ctx);
    int (*end_array)(void *ctx);
    /* a member name inside an object */
    int (*key)(void *ctx, const char *key);
    int (*string)(void *ctx, const char *value);
    int (*integer)(void *ctx, int64_t value);
    int (*real)(void *ctx, double value);
    int (*boolean)(void *ctx, bool value);
    int (*null)(void *ctx);
    /* a whole tree at once (metadata, diagnostics); borrowed */
    int (*tree)(void *ctx, const json_t *value);
} ts_emitter;

/* Writes a jansson tree through any emitter (the generic `tree`). */
int ts_emit_tree(const ts_emitter *e, const json_t *value);

/* An emitter that builds a jansson tree. */
typedef struct ts_json_builder ts_json_builder;

/* New builder; NULL on allocation failure. Free with ts_json_builder_free. */
ts_json_builder *ts_json_builder_new(void);
void ts_json_builder_free(ts_json_builder *b);

/* Fills *e with this builder's callbacks. */
void ts_json_builder_emitter(ts_json_builder *b, ts_emitter *e);

/* The finished value (new reference), or NULL when the calls were
 * incomplete or an allocation failed. */
json_t *ts_json_builder_take(ts_json_builder *b);

#ifdef __cplusplus
}
#endif

#endif
