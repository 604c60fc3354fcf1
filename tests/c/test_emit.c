/* The jansson emitter (torchscan/emit.h): a tree replayed through it comes
 * back equal, and each misuse (a member without a name, a name outside an
 * object, a close without an open, two top-level values, nesting past 256,
 * taking an unfinished document) fails and sticks. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "torchscan/emit.h"

static void
test_round_trip(void)
{
    json_error_t jerr;
    json_t *tree = json_loads(
        "{\"a\": [1, -2.5, \"x\", true, false, null],"
        " \"b\": {\"c\": {}}, \"d\": []}",
        0,
        &jerr);
    ts_json_builder *b = ts_json_builder_new();
    ts_emitter e;
    json_t *back;
    CHECK(tree != NULL && b != NULL);
    ts_json_builder_emitter(b, &e);
    CHECK_EQ_INT(ts_emit_tree(&e, tree), 0);
    back = ts_json_builder_take(b);
    CHECK(back != NULL && json_equal(back, tree));
    /* taken once: nothing left */
    CHECK(ts_json_builder_take(b) == NULL);
    /* a tree value placed by the emitter's tree callback, beside others */
    CHECK_EQ_INT(e.begin_array(e.ctx), 0);
    CHECK_EQ_INT(e.tree(e.ctx, tree), 0);
    CHECK_EQ_INT(e.integer(e.ctx, 7), 0);
    CHECK_EQ_INT(e.end_array(e.ctx), 0);
    json_decref(back);
    back = ts_json_builder_take(b);
    CHECK(back != NULL && json_array_size(back) == 2
          && json_equal(json_array_get(back, 0), tree)
          && json_integer_value(json_array_get(back, 1)) == 7);
    json_decref(back);
    ts_json_builder_free(b);
    json_decref(tree);
}

/* A fresh builder, its emitter in *e. */
static ts_json_builder *
fresh(ts_emitter *e)
{
    ts_json_builder *b = ts_json_builder_new();
    ts_json_builder_emitter(b, e);
    return b;
}

static void
test_misuse(void)
{
    ts_emitter e;
    ts_json_builder *b;
    json_error_t jerr;
    json_t *tree;
    /* a member without a name */
    b = fresh(&e);
    CHECK_EQ_INT(e.begin_object(e.ctx), 0);
    CHECK_EQ_INT(e.string(e.ctx, "v"), -1);
    /* the failure sticks: a correct sequence now fails too */
    CHECK_EQ_INT(e.key(e.ctx, "k"), -1);
    CHECK_EQ_INT(e.begin_array(e.ctx), -1);
    CHECK_EQ_INT(e.end_object(e.ctx), -1);
    CHECK(ts_json_builder_take(b) == NULL);
    ts_json_builder_free(b);
    /* a name at the top and inside an array */
    b = fresh(&e);
    CHECK_EQ_INT(e.key(e.ctx, "k"), -1);
    ts_json_builder_free(b);
    b = fresh(&e);
    CHECK_EQ_INT(e.begin_array(e.ctx), 0);
    CHECK_EQ_INT(e.key(e.ctx, "k"), -1);
    ts_json_builder_free(b);
    /* a close without an open; two top-level values */
    b = fresh(&e);
    CHECK_EQ_INT(e.end_array(e.ctx), -1);
    ts_json_builder_free(b);
    b = fresh(&e);
    CHECK_EQ_INT(e.boolean(e.ctx, true), 0);
    CHECK_EQ_INT(e.null(e.ctx), -1);
    CHECK(ts_json_builder_take(b) == NULL);
    ts_json_builder_free(b);
    /* a name given twice: the second names the member */
    b = fresh(&e);
    CHECK_EQ_INT(e.begin_object(e.ctx), 0);
    CHECK_EQ_INT(e.key(e.ctx, "first"), 0);
    CHECK_EQ_INT(e.key(e.ctx, "second"), 0);
    CHECK_EQ_INT(e.real(e.ctx, 0.5), 0);
    /* unfinished: nothing to take; freed with its open object and a
     * pending name */
    CHECK(ts_json_builder_take(b) == NULL);
    CHECK_EQ_INT(e.key(e.ctx, "pending"), 0);
    ts_json_builder_free(b);
    b = fresh(&e);
    CHECK_EQ_INT(e.begin_object(e.ctx), 0);
    CHECK_EQ_INT(e.key(e.ctx, "second"), 0);
    CHECK_EQ_INT(e.real(e.ctx, 0.5), 0);
    CHECK_EQ_INT(e.end_object(e.ctx), 0);
    {
        json_t *got = ts_json_builder_take(b);
        CHECK(got != NULL && json_object_size(got) == 1
              && json_real_value(json_object_get(got, "second")) == 0.5);
        json_decref(got);
    }
    ts_json_builder_free(b);
    /* 256 open arrays, then one more */
    b = fresh(&e);
    for (int k = 0; k < 256; k++) {
        CHECK_EQ_INT(e.begin_array(e.ctx), 0);
    }
    CHECK_EQ_INT(e.begin_array(e.ctx), -1);
    ts_json_builder_free(b);
    ts_json_builder_free(NULL);
    /* replaying a tree into a failed builder fails at each kind */
    tree = json_loads("{\"a\": [1]}", 0, &jerr);
    b = fresh(&e);
    CHECK_EQ_INT(e.end_array(e.ctx), -1);
    CHECK_EQ_INT(ts_emit_tree(&e, tree), -1);
    CHECK_EQ_INT(ts_emit_tree(&e, json_object_get(tree, "a")), -1);
    ts_json_builder_free(b);
    /* a builder that already holds a top-level value: the object is
     * built, then cannot be placed */
    b = fresh(&e);
    CHECK_EQ_INT(e.integer(e.ctx, 1), 0);
    CHECK_EQ_INT(ts_emit_tree(&e, tree), -1);
    ts_json_builder_free(b);
    json_decref(tree);
}

int
main(void)
{
    test_round_trip();
    test_misuse();
    return ts_test_report();
}
