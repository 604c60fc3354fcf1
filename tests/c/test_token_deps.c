/* Token dependencies (token_deps.h: token_relations.c and token_deps.c):
 * mask summaries, the relation algebra and the relations of attention and
 * Transformer calls. Expected relations are worked out by hand from the
 * contract's definitions (1.1): output i of attention mixes the values of
 * the keys it sees, and depends on its query and those keys only where it
 * sees two or more. */
#include <stdlib.h>

#include "harness.h"
#include "torchscan/token_deps.h"

/* ---- near misses, systematically ------------------------------------------
 * Every call these tests decide is also decided after each of these
 * edits: a tensor (input, key, value, second, output) reshaped, retyped
 * or taken away, each mask present or not, read or not, excluding,
 * causal, non-finite, reshaped, the hints and the same-tensor flags
 * flipped, batch_first flipped. Each answer must be TS_OK (TS_EINVAL for
 * a kind without relations), well formed
 * (a complete result has an output length >= 0 and 0..MAX sources, and
 * its JSON is an object) and the same twice. */

static long sweep_calls, sweep_complete;

static void
decide_one(const ts_module_desc *d, const ts_module_call *c)
{
    ts_token_result a, b;
    json_t *j;
    int rc = ts_token_dependencies(d, c, &a);
    /* a kind without relations is refused whatever the call */
    int want = ts_token_kind_supported(d->kind) ? TS_OK : TS_EINVAL;
    CHECK_EQ_INT(rc, want);
    CHECK_EQ_INT(ts_token_dependencies(d, c, &b), want);
    sweep_calls++;
    if (rc != TS_OK) {
        return;
    }
    CHECK(a.complete == b.complete && a.nsources == b.nsources
          && strcmp(a.message, b.message) == 0);
    if (a.complete) {
        sweep_complete++;
        CHECK(a.output_length >= 0 && a.nsources >= 0
              && a.nsources <= TS_TOKEN_MAX_SOURCES);
    }
    j = ts_token_result_json(&a);
    CHECK(json_is_object(j));
    json_decref(j);
}

static void
edit_shape(ts_shape *s, int how)
{
    if (s->ndim > TS_MAX_DIMS) {
        s->ndim = TS_MAX_DIMS; /* a guard test's rank: cut to the most */
        return;
    }
    if (how == 0 && s->ndim > 0) {
        s->dims[s->ndim - 1] += 1;
    }
    else if (how == 1 && s->ndim > 0) {
        s->dims[0] += 1;
    }
    else if (how == 2 && s->ndim > 0) {
        s->ndim -= 1;
    }
    else if (how == 3) {
        s->dtype = s->dtype == TS_DTYPE_FLOAT ? TS_DTYPE_INT : TS_DTYPE_FLOAT;
    }
    else if (how == 4) {
        s->dense = !s->dense;
    }
    else if (how == 5 && s->ndim > 0 && s->ndim < TS_MAX_DIMS) {
        s->dims[s->ndim++] = 2;
    }
}

static void
edit_mask(ts_mask_info *m, int how)
{
    switch (how) {
        case 0:
            m->present = !m->present;
            break;
        case 1:
            m->read = !m->read;
            break;
        case 2:
            m->excludes = !m->excludes;
            break;
        case 3:
            m->causal = !m->causal;
            break;
        case 4:
            m->nonfinite = !m->nonfinite;
            break;
        case 5:
            m->shape.ndim = -1;
            break;
        default:
            edit_shape(&m->shape, how - 6);
            break;
    }
}

static void
sweep(const ts_module_desc *d0, const ts_module_call *c0)
{
    ts_module_desc d = *d0;
    ts_module_call c;
    ts_token_call t, t0;
    memset(&t0, 0, sizeof t0);
    if (c0->tokens != NULL) {
        t0 = *c0->tokens;
    }
#define RESET() (c = *c0, t = t0, c.tokens = &t, d = *d0)
    RESET();
    c.tokens = NULL;
    decide_one(&d, &c);
    RESET();
    d.batch_first = !d.batch_first;
    decide_one(&d, &c);
    RESET();
    c.has_input = false;
    decide_one(&d, &c);
    RESET();
    c.has_second = !c.has_second;
    decide_one(&d, &c);
    for (int how = 0; how < 6; how++) {
        ts_shape *shapes[] = {
            &c.input, &c.key, &c.value, &c.second, &c.output};
        for (int k = 0; k < 5; k++) {
            RESET();
            edit_shape(shapes[k], how);
            decide_one(&d, &c);
        }
    }
    for (int i = 0; i < TS_TF_SEQ_COUNT; i++) {
        RESET();
        c.tf_causal[i] = !c.tf_causal[i];
        decide_one(&d, &c);
    }
    RESET();
    t.is_causal = !t.is_causal;
    decide_one(&d, &c);
    RESET();
    t.key_is_query = !t.key_is_query;
    decide_one(&d, &c);
    RESET();
    t.value_is_query = !t.value_is_query;
    decide_one(&d, &c);
    RESET();
    t.value_is_key = !t.value_is_key;
    decide_one(&d, &c);
    for (int how = 0; how < 12; how++) {
        RESET();
        edit_mask(&t.attn_mask, how);
        decide_one(&d, &c);
        RESET();
        edit_mask(&t.key_padding_mask, how);
        decide_one(&d, &c);
        for (int i = 0; i < TS_TF_MASK_COUNT; i++) {
            RESET();
            edit_mask(&t.tf_masks[i], how);
            decide_one(&d, &c);
        }
    }
#undef RESET
}

static int
decide(const ts_module_desc *d, const ts_module_call *c, ts_token_result *r)
{
    if (d != NULL && c != NULL && r != NULL) {
        sweep(d, c);
    }
    return ts_token_dependencies(d, c, r);
}

static ts_token_relation
rel(ts_token_kind kind, int64_t limit, int64_t first)
{
    ts_token_relation r = {kind, limit, first};
    return r;
}

#define CHECK_REL(r, kind_, limit_, first_) \
    do {                                    \
        CHECK_EQ_INT((r).kind, (kind_));    \
        CHECK_EQ_INT((r).limit, (limit_));  \
        CHECK_EQ_INT((r).first, (first_));  \
    } while (0)

/* ---- masks ---------------------------------------------------------------
 */

static ts_mask_buffer
buffer2(const void *data, ts_mask_dtype dtype, int64_t rows, int64_t cols)
{
    ts_mask_buffer b;
    memset(&b, 0, sizeof b);
    b.data = data;
    b.dtype = dtype;
    b.ndim = 2;
    b.dims[0] = rows;
    b.dims[1] = cols;
    b.strides[0] = cols;
    b.strides[1] = 1;
    return b;
}

static void
test_mask_scan_bool(void)
{
    /* generate_square_subsequent_mask(3) as bool: True above the diagonal */
    const unsigned char causal[9] = {0, 1, 1, 0, 0, 1, 0, 0, 0};
    const unsigned char none[9] = {0};
    const unsigned char irregular[9] = {0, 1, 1, 0, 0, 1, 1, 0, 0};
    const unsigned char padding[3] = {0, 0, 1};
    ts_mask_buffer b = buffer2(causal, TS_MASK_BOOL, 3, 3);
    ts_mask_info info;
    memset(&info, 0, sizeof info);
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.read && info.excludes && info.causal && !info.nonfinite);

    b.data = none;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.read && !info.excludes && !info.causal);

    b.data = irregular;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.excludes && !info.causal);

    /* the causal buffer read transposed: exclusions below the diagonal */
    b.data = causal;
    b.strides[0] = 1;
    b.strides[1] = 3;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.excludes && !info.causal);

    /* expanded to (batch * heads, 3, 3) with a zero stride: every slice
     * is causal */
    b.ndim = 3;
    b.dims[0] = 4;
    b.dims[1] = b.dims[2] = 3;
    b.strides[0] = 0;
    b.strides[1] = 3;
    b.strides[2] = 1;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.excludes && info.causal);

    /* a 1-D key padding mask has no causal pattern */
    b.data = padding;
    b.ndim = 1;
    b.dims[0] = 3;
    b.strides[0] = 1;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.excludes && !info.causal);

    /* no element: nothing excluded */
    b = buffer2(NULL, TS_MASK_BOOL, 0, 3);
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.read && !info.excludes);
}

static void
test_mask_scan_float(void)
{
    float causal[4] = {0.0f, -INFINITY, 0.5f, -1e9f};
    double wide[4] = {0.0, -INFINITY, 0.0, 0.0};
    float finite[4] = {0.0f, -1e30f, 3.0f, 0.0f};
    float nan_mask[4] = {0.0f, NAN, 0.0f, 0.0f};
    float inf_mask[4] = {0.0f, INFINITY, 0.0f, 0.0f};
    /* half: 0, -inf, 0, 0 / +inf / NaN; bfloat16 the same */
    uint16_t half[4] = {0x0000, 0xFC00, 0x3C00, 0x0000};
    uint16_t half_inf[4] = {0x0000, 0x7C00, 0x0000, 0x0000};
    uint16_t half_nan[4] = {0x0000, 0x7E00, 0x0000, 0x0000};
    uint16_t bf16[4] = {0x0000, 0xFF80, 0x3F80, 0x0000};
    uint16_t bf16_nan[4] = {0x0000, 0x7FC0, 0x0000, 0x0000};
    ts_mask_buffer b = buffer2(causal, TS_MASK_FLOAT32, 2, 2);
    ts_mask_info info;
    memset(&info, 0, sizeof info);

    /* -inf exactly above the diagonal; finite values elsewhere */
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.excludes && info.causal && !info.nonfinite);
    b.data = wide;
    b.dtype = TS_MASK_FLOAT64;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.excludes && info.causal);
    /* a very negative finite value only reweights */
    b.data = finite;
    b.dtype = TS_MASK_FLOAT32;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(!info.excludes && !info.causal && !info.nonfinite);
    b.data = nan_mask;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.nonfinite && !info.causal);
    b.data = inf_mask;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.nonfinite);

    b.dtype = TS_MASK_FLOAT16;
    b.data = half;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.excludes && info.causal && !info.nonfinite);
    b.data = half_inf;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.nonfinite);
    b.data = half_nan;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.nonfinite);
    b.dtype = TS_MASK_BFLOAT16;
    b.data = bf16;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.excludes && info.causal && !info.nonfinite);
    b.data = bf16_nan;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.nonfinite);
}

static void
test_mask_scan_invalid(void)
{
    unsigned char one = 0;
    ts_mask_buffer b = buffer2(&one, TS_MASK_BOOL, 1, 1);
    ts_mask_info info;
    memset(&info, 0, sizeof info);
    CHECK_EQ_INT(ts_mask_scan(NULL, &info), TS_EINVAL);
    CHECK_EQ_INT(ts_mask_scan(&b, NULL), TS_EINVAL);
    b.strides[1] = -1;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    b = buffer2(&one, TS_MASK_BOOL, 1, 1);
    b.ndim = TS_MAX_DIMS + 1;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    b = buffer2(&one, (ts_mask_dtype)42, 1, 1);
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    /* the farthest element's byte offset overflows */
    b = buffer2(&one, TS_MASK_FLOAT64, 3, 1);
    b.strides[0] = INT64_MAX / 2;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_EINVAL);
    /* a scalar mask: one element */
    b = buffer2(&one, TS_MASK_BOOL, 1, 1);
    b.ndim = 0;
    CHECK_EQ_INT(ts_mask_scan(&b, &info), TS_OK);
    CHECK(info.read && !info.excludes && !info.causal);
}

/* ---- relations ------------------------------------------------------------
 */

static void
test_canonical(void)
{
    /* prefix: the farthest source position any of 3 outputs reaches is 2 */
    CHECK_REL(ts_token_canonical(rel(TS_TOKEN_PREFIX, 9, 0), 3, 5),
              TS_TOKEN_PREFIX,
              3,
              0);
    CHECK_REL(
        ts_token_canonical(rel(TS_TOKEN_ALL, 9, 1), 3, 5), TS_TOKEN_ALL, 5, 1);
    CHECK_REL(ts_token_canonical(rel(TS_TOKEN_SAME_POSITION, 0, 2), 4, 4),
              TS_TOKEN_SAME_POSITION,
              4,
              2);
    /* no output position reaches first */
    CHECK_REL(ts_token_canonical(rel(TS_TOKEN_SAME_POSITION, 3, 3), 3, 3),
              TS_TOKEN_NONE,
              0,
              0);
    CHECK_REL(ts_token_canonical(rel(TS_TOKEN_ALL, 0, 0), 3, 3),
              TS_TOKEN_NONE,
              0,
              0);
    CHECK_EQ_STR(ts_token_kind_name(TS_TOKEN_SAME_POSITION), "same_position");
    CHECK_EQ_STR(ts_token_kind_name(TS_TOKEN_PREFIX), "prefix");
    CHECK_EQ_STR(ts_token_kind_name(TS_TOKEN_ALL), "all");
    CHECK_EQ_STR(ts_token_kind_name(TS_TOKEN_NONE), "none");
}

static void
test_union(void)
{
    ts_token_relation a, b, out;
    /* {i} with [0, 4): [0, 4) */
    a = rel(TS_TOKEN_SAME_POSITION, 4, 0);
    b = rel(TS_TOKEN_ALL, 4, 0);
    CHECK(ts_token_union(&a, &b, 4, 4, &out));
    CHECK_REL(out, TS_TOKEN_ALL, 4, 0);
    /* causal query (from 1) with causal key (from 1): prefix from 1 */
    a = rel(TS_TOKEN_SAME_POSITION, 4, 1);
    b = rel(TS_TOKEN_PREFIX, 4, 1);
    CHECK(ts_token_union(&a, &b, 4, 4, &out));
    CHECK_REL(out, TS_TOKEN_PREFIX, 4, 1);
    /* ... and with the value (from 0): output 0 gets {0} = [0, 1) */
    b.first = 0;
    CHECK(ts_token_union(&a, &b, 4, 4, &out));
    CHECK_REL(out, TS_TOKEN_PREFIX, 4, 0);
    /* {i} from 0 with [0, 4) from 1: output 0 gets {0}, output 1 [0, 4):
     * no kind says that */
    a = rel(TS_TOKEN_SAME_POSITION, 4, 0);
    b = rel(TS_TOKEN_ALL, 4, 1);
    CHECK(!ts_token_union(&a, &b, 4, 4, &out));
    /* {0} with {i} from 2: output 2 gets {0, 2}, not an interval */
    a = rel(TS_TOKEN_ALL, 1, 0);
    b = rel(TS_TOKEN_SAME_POSITION, 4, 2);
    CHECK(!ts_token_union(&a, &b, 4, 4, &out));
    /* none is the unit */
    a = rel(TS_TOKEN_NONE, 0, 0);
    b = rel(TS_TOKEN_PREFIX, 9, 0);
    CHECK(ts_token_union(&a, &b, 2, 5, &out));
    CHECK_REL(out, TS_TOKEN_PREFIX, 2, 0);
}

static void
test_compose(void)
{
    ts_token_relation a, b, out;
    /* every output sees middle 0..2, each middle j sees sources 0..j:
     * sources 0..2 of 5 */
    a = rel(TS_TOKEN_ALL, 3, 0);
    b = rel(TS_TOKEN_PREFIX, 3, 0);
    CHECK(ts_token_compose(&a, &b, 3, 3, 5, &out));
    CHECK_REL(out, TS_TOKEN_ALL, 3, 0);
    /* prefix of a prefix */
    a = rel(TS_TOKEN_PREFIX, 4, 0);
    b = rel(TS_TOKEN_PREFIX, 4, 0);
    CHECK(ts_token_compose(&a, &b, 4, 4, 4, &out));
    CHECK_REL(out, TS_TOKEN_PREFIX, 4, 0);
    /* a query relation from 1 on top of all */
    a = rel(TS_TOKEN_SAME_POSITION, 4, 1);
    b = rel(TS_TOKEN_ALL, 6, 0);
    CHECK(ts_token_compose(&a, &b, 4, 4, 6, &out));
    CHECK_REL(out, TS_TOKEN_ALL, 6, 1);
    /* the identity on the inside */
    a = rel(TS_TOKEN_PREFIX, 4, 1);
    b = rel(TS_TOKEN_SAME_POSITION, 4, 0);
    CHECK(ts_token_compose(&a, &b, 4, 4, 4, &out));
    CHECK_REL(out, TS_TOKEN_PREFIX, 4, 1);
    /* all of {j} for j >= 2: sources 2..3 for every output, a suffix */
    a = rel(TS_TOKEN_ALL, 4, 0);
    b = rel(TS_TOKEN_SAME_POSITION, 4, 2);
    CHECK(!ts_token_compose(&a, &b, 4, 4, 4, &out));
    /* none on either side */
    a = rel(TS_TOKEN_NONE, 0, 0);
    b = rel(TS_TOKEN_ALL, 4, 0);
    CHECK(ts_token_compose(&a, &b, 4, 4, 4, &out));
    CHECK_REL(out, TS_TOKEN_NONE, 0, 0);
    CHECK(ts_token_compose(&b, &a, 4, 4, 4, &out));
    CHECK_REL(out, TS_TOKEN_NONE, 0, 0);
}

/* ---- MultiheadAttention
 * ----------------------------------------------------- */

static ts_shape
seq(int64_t a, int64_t b, int64_t c)
{
    ts_shape s = {3, {a, b, c}, TS_DTYPE_FLOAT, true, 4};
    return s;
}

static ts_module_desc
mha_desc(bool batch_first)
{
    ts_module_desc d;
    memset(&d, 0, sizeof d);
    d.kind = TS_MOD_MHA;
    d.embed_dim = 4;
    d.num_heads = 2;
    d.kdim = d.vdim = 4;
    d.batch_first = batch_first;
    return d;
}

/* (L, N, E) query of length t and key/value of length s, batch 2. */
static ts_module_call
mha_call(int64_t t, int64_t s, const ts_token_call *tokens)
{
    ts_module_call c;
    memset(&c, 0, sizeof c);
    c.has_input = c.has_output = true;
    c.input = c.output = seq(t, 2, 4);
    c.key = c.value = seq(s, 2, 4);
    c.tokens = tokens;
    return c;
}

/* A mask read from its values. */
static ts_mask_info
mask2(int64_t rows, int64_t cols, bool excludes, bool causal)
{
    ts_mask_info m;
    memset(&m, 0, sizeof m);
    m.present = m.read = true;
    m.shape.ndim = 2;
    m.shape.dims[0] = rows;
    m.shape.dims[1] = cols;
    m.shape.dtype = TS_DTYPE_BOOL;
    m.shape.dense = true;
    m.excludes = excludes;
    m.causal = causal;
    return m;
}

static char *
dump(const ts_token_result *r)
{
    json_t *j = ts_token_result_json(r);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return text;
}

/* The relation part of every source, as one compact text. */
static char *
dump_sources(const ts_token_result *r)
{
    json_t *j = ts_token_result_json(r);
    char *text =
        j ? json_dumps(json_object_get(j, "sources"), JSON_COMPACT) : NULL;
    json_decref(j);
    return text;
}

#define CHECK_SOURCES(result, expected)        \
    do {                                       \
        char *ts_text_ = dump_sources(result); \
        CHECK_EQ_STR(ts_text_, expected);      \
        free(ts_text_);                        \
    } while (0)

static void
check_refused(const ts_token_result *r, const char *needle, int line)
{
    char *text = dump(r);
    if (!r->complete && strstr(r->message, needle) != NULL && text != NULL
        && strcmp(text,
                  "{\"status\":\"unavailable\",\"scope\":\"module_call\","
                  "\"method\":\"torchscan_token_dependency_v1\","
                  "\"assumptions\":[],\"sources\":[]}")
               == 0) {
        ts_test_passed++;
    }
    else {
        ts_test_failed++;
        fprintf(stderr,
                "%s:%d: expected refusal containing \"%s\", got \"%s\" %s\n",
                __FILE__,
                line,
                needle,
                r->message,
                text ? text : "(null)");
    }
    free(text);
}

#define CHECK_REFUSED(result, needle) check_refused(result, needle, __LINE__)

static void
test_mha_self_attention(void)
{
    ts_module_desc d = mha_desc(false);
    ts_token_call tk;
    ts_module_call c;
    ts_token_result r;
    char *text;
    memset(&tk, 0, sizeof tk);
    tk.key_is_query = tk.value_is_query = tk.value_is_key = true;
    c = mha_call(3, 3, &tk);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK(r.complete);
    text = dump(&r);
    CHECK_EQ_STR(
        text,
        "{\"status\":\"complete\",\"scope\":\"module_call\",\"method\":"
        "\"torchscan_token_dependency_v1\",\"assumptions\":[\"Relations are "
        "structural: they hold for generic parameter and input values; "
        "particular values (a zero weight, a saturated softmax) can remove "
        "a listed dependency but never add one.\",\"Every batch element and "
        "attention head follows the same relation: mask entries that are "
        "True or -inf exclude their position, False and finite entries only "
        "reweight it.\",\"Position-wise parts (projections, feed-forward "
        "layers, activations, residual additions, dropout, LayerNorm over "
        "the model width) keep each position's dependencies; only attention "
        "mixes positions.\"],\"output\":{\"sequence_axis\":0,\"length\":3},"
        "\"sources\":[{\"arguments\":[\"query\",\"key\",\"value\"],"
        "\"sequence_axis\":0,\"length\":3,\"relation\":{\"kind\":\"all\"}}]}");
    free(text);

    /* causal: output i sees keys 0..i; output 0 sees one key, so only its
     * value counts, which query and key (from 1) leave to the value */
    tk.attn_mask = mask2(3, 3, true, true);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(&r,
                  "[{\"arguments\":[\"query\",\"key\",\"value\"],"
                  "\"sequence_axis\":0,\"length\":3,\"relation\":{\"kind\":"
                  "\"prefix\"}}]");

    /* batch_first: the sequence is axis 1 */
    d = mha_desc(true);
    c.input = c.output = c.key = c.value = seq(2, 3, 4);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK(r.complete);
    CHECK_EQ_INT(r.output_axis, 1);
    CHECK_EQ_INT(r.output_length, 3);
    CHECK_SOURCES(&r,
                  "[{\"arguments\":[\"query\",\"key\",\"value\"],"
                  "\"sequence_axis\":1,\"length\":3,\"relation\":{\"kind\":"
                  "\"prefix\"}}]");
}

static void
test_mha_separate_arguments(void)
{
    ts_module_desc d = mha_desc(false);
    ts_token_call tk;
    ts_module_call c;
    ts_token_result r;
    memset(&tk, 0, sizeof tk);
    /* three tensors: query i alone, every key and value */
    c = mha_call(2, 5, &tk);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(
        &r,
        "[{\"arguments\":[\"query\"],\"sequence_axis\":0,\"length\":2,"
        "\"relation\":{\"kind\":\"same_position\"}},{\"arguments\":[\"key\"],"
        "\"sequence_axis\":0,\"length\":5,\"relation\":{\"kind\":\"all\"}},"
        "{\"arguments\":[\"value\"],\"sequence_axis\":0,\"length\":5,"
        "\"relation\":{\"kind\":\"all\"}}]");

    /* causal 2x5: output 0 sees key 0 alone, output 1 keys 0..1; keys 2..4
     * are never seen (limit 2) */
    tk.value_is_key = true;
    tk.attn_mask = mask2(2, 5, true, true);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(
        &r,
        "[{\"arguments\":[\"query\"],\"sequence_axis\":0,\"length\":2,"
        "\"relation\":{\"kind\":\"same_position\",\"first_position\":1}},"
        "{\"arguments\":[\"key\",\"value\"],\"sequence_axis\":0,\"length\":5,"
        "\"relation\":{\"kind\":\"prefix\",\"limit\":2}}]");

    /* key and value apart under the same mask */
    tk.value_is_key = false;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(
        &r,
        "[{\"arguments\":[\"query\"],\"sequence_axis\":0,\"length\":2,"
        "\"relation\":{\"kind\":\"same_position\",\"first_position\":1}},"
        "{\"arguments\":[\"key\"],\"sequence_axis\":0,\"length\":5,"
        "\"relation\":{\"kind\":\"prefix\",\"limit\":2,\"first_position\":1}"
        "},{\"arguments\":[\"value\"],\"sequence_axis\":0,\"length\":5,"
        "\"relation\":{\"kind\":\"prefix\",\"limit\":2}}]");

    /* a single key: the softmax is 1, query and key do not matter */
    memset(&tk, 0, sizeof tk);
    c = mha_call(3, 1, &tk);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(
        &r,
        "[{\"arguments\":[\"query\"],\"sequence_axis\":0,\"length\":3,"
        "\"relation\":{\"kind\":\"none\"}},{\"arguments\":[\"key\"],"
        "\"sequence_axis\":0,\"length\":1,\"relation\":{\"kind\":\"none\"}},"
        "{\"arguments\":[\"value\"],\"sequence_axis\":0,\"length\":1,"
        "\"relation\":{\"kind\":\"all\"}}]");

    /* query is key, value apart */
    tk.key_is_query = true;
    c = mha_call(4, 4, &tk);
    tk.attn_mask = mask2(4, 4, true, true);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(
        &r,
        "[{\"arguments\":[\"query\",\"key\"],\"sequence_axis\":0,\"length\":"
        "4,\"relation\":{\"kind\":\"prefix\",\"first_position\":1}},{"
        "\"arguments\":[\"value\"],\"sequence_axis\":0,\"length\":4,"
        "\"relation\":{\"kind\":\"prefix\"}}]");
}

static void
test_mha_masks(void)
{
    ts_module_desc d = mha_desc(false);
    ts_token_call tk;
    ts_module_call c;
    ts_token_result r;
    memset(&tk, 0, sizeof tk);
    tk.key_is_query = tk.value_is_query = tk.value_is_key = true;
    c = mha_call(3, 3, &tk);

    /* padding: (batch, source length); all False only reweights */
    tk.key_padding_mask = mask2(2, 3, false, false);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK(r.complete);
    tk.key_padding_mask.excludes = true;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "key_padding_mask excludes positions");
    tk.key_padding_mask.excludes = false;
    tk.key_padding_mask.nonfinite = true;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "key_padding_mask holds NaN or +inf");
    tk.key_padding_mask.nonfinite = false;
    tk.key_padding_mask.read = false;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "the values of key_padding_mask cannot be read");
    tk.key_padding_mask = mask2(3, 2, false, false);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "key_padding_mask is not of shape");
    memset(&tk.key_padding_mask, 0, sizeof tk.key_padding_mask);

    /* an attention mask without exclusions, or with irregular ones */
    tk.attn_mask = mask2(3, 3, false, false);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK(r.complete);
    tk.attn_mask.excludes = true;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "attn_mask excludes positions other than those of");
    tk.attn_mask.shape.dtype = TS_DTYPE_INT;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "attn_mask is neither bool nor floating point");
    tk.attn_mask = mask2(3, 3, false, false);
    tk.attn_mask.nonfinite = true;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "attn_mask holds NaN or +inf");

    /* (batch * heads, t, s) = (4, 3, 3) */
    tk.attn_mask = mask2(3, 3, true, true);
    tk.attn_mask.shape.ndim = 3;
    tk.attn_mask.shape.dims[0] = 4;
    tk.attn_mask.shape.dims[1] = tk.attn_mask.shape.dims[2] = 3;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK(r.complete);
    CHECK_EQ_INT(r.sources[0].relation.kind, TS_TOKEN_PREFIX);
    tk.attn_mask.shape.dims[0] = 3;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "attn_mask is not of shape");

    /* is_causal: a hint PyTorch trusts; its mask must be the canonical
     * one when the values are known */
    tk.is_causal = true;
    tk.attn_mask = mask2(3, 3, true, true);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_EQ_INT(r.sources[0].relation.kind, TS_TOKEN_PREFIX);
    tk.attn_mask = mask2(3, 3, false, false);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "is_causal=True but attn_mask is not the canonical");
    memset(&tk.attn_mask, 0, sizeof tk.attn_mask);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "is_causal=True without attn_mask");
    /* unknown values (meta): the hint decides; without it, refused */
    tk.attn_mask = mask2(3, 3, false, false);
    tk.attn_mask.read = false;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK(r.complete);
    CHECK_EQ_INT(r.sources[0].relation.kind, TS_TOKEN_PREFIX);
    tk.is_causal = false;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "the values of attn_mask cannot be read");
}

static void
test_mha_refused_calls(void)
{
    ts_module_desc d = mha_desc(false);
    ts_module_call c = mha_call(3, 3, NULL);
    ts_token_result r;
    /* no tokens description: no mask, no hint */
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK(r.complete);
    CHECK_EQ_INT(r.nsources, 3);
    d.add_zero_attn = true;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "add_bias_kv and add_zero_attn");
    d = mha_desc(false);
    c.input.ndim = 2; /* unbatched */
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "needs batched, non-empty, real, dense 3-D");
    c = mha_call(3, 0, NULL); /* no key */
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "needs batched");
    c = mha_call(3, 3, NULL);
    c.input.dtype = TS_DTYPE_COMPLEX;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "needs batched");
    c = mha_call(3, 3, NULL);
    c.value.dims[0] = 4;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "needs batched");
    CHECK(strncmp(r.message, "Token dependencies unavailable: ", 32) == 0);
    /* kinds without relations, NULL arguments */
    d.kind = TS_MOD_LINEAR;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_EINVAL);
    CHECK_EQ_INT(decide(NULL, &c, &r), TS_EINVAL);
    CHECK(ts_token_kind_supported(TS_MOD_MHA));
    CHECK(ts_token_kind_supported(TS_MOD_TRANSFORMER));
    CHECK(!ts_token_kind_supported(TS_MOD_LINEAR));
}

/* ---- the Transformer family
 * ------------------------------------------------- */

static ts_transformer_layer_desc
layer_desc(bool decoder, int64_t count)
{
    ts_transformer_layer_desc l;
    ts_attention_desc a;
    memset(&l, 0, sizeof l);
    memset(&a, 0, sizeof a);
    a.embed_dim = a.kdim = a.vdim = 4;
    a.num_heads = 2;
    a.batch_first = true;
    l.count = count;
    l.decoder = decoder;
    l.self_attn = a;
    if (decoder) {
        l.cross_attn = a;
    }
    for (int i = 0; i < 3; i++) {
        l.norm[i].kind = TS_NORM_LAYERNORM;
        l.norm[i].normalized_numel = 4;
    }
    return l;
}

static ts_module_desc
tf_desc(ts_module_kind kind, int64_t enc_layers, int64_t dec_layers)
{
    ts_module_desc d;
    memset(&d, 0, sizeof d);
    d.kind = kind;
    if (enc_layers > 0) {
        d.transformer.encoder = layer_desc(false, enc_layers);
    }
    if (dec_layers > 0) {
        d.transformer.decoder = layer_desc(true, dec_layers);
    }
    return d;
}

/* batch_first calls: (1, length, 4) */
static ts_module_call
tf_call(int64_t first_len, int64_t second_len, const ts_token_call *tokens)
{
    ts_module_call c;
    memset(&c, 0, sizeof c);
    c.has_input = c.has_output = true;
    c.input = c.output = seq(1, first_len, 4);
    if (second_len > 0) {
        c.has_second = true;
        c.second = seq(1, second_len, 4);
    }
    c.tokens = tokens;
    return c;
}

static void
test_encoder(void)
{
    ts_module_desc d = tf_desc(TS_MOD_TRANSFORMER_ENCODER_LAYER, 1, 0);
    ts_token_call tk;
    ts_module_call c;
    ts_token_result r;
    memset(&tk, 0, sizeof tk);
    c = tf_call(3, 0, &tk);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK(r.complete);
    CHECK_EQ_INT(r.output_axis, 1);
    CHECK_EQ_INT(r.output_length, 3);
    CHECK_SOURCES(&r,
                  "[{\"arguments\":[\"src\"],\"sequence_axis\":1,\"length\":"
                  "3,\"relation\":{\"kind\":\"all\"}}]");
    /* src_mask causal */
    tk.tf_masks[TS_TF_SRC_MASK] = mask2(3, 3, true, true);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(&r,
                  "[{\"arguments\":[\"src\"],\"sequence_axis\":1,\"length\":"
                  "3,\"relation\":{\"kind\":\"prefix\"}}]");
    /* a stack of 4 causal layers stays a prefix */
    d = tf_desc(TS_MOD_TRANSFORMER_ENCODER, 4, 0);
    d.transformer.encoder_norm.kind = TS_NORM_LAYERNORM;
    d.transformer.encoder_norm.normalized_numel = 4;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_EQ_INT(r.sources[0].relation.kind, TS_TOKEN_PREFIX);
    /* the stack's mask is called `mask` */
    tk.tf_masks[TS_TF_SRC_MASK].excludes = false;
    tk.tf_masks[TS_TF_SRC_MASK].causal = false;
    c.tf_causal[TS_TF_SRC] = true;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "is_causal=True but mask is not the canonical");
    c.tf_causal[TS_TF_SRC] = false;
    /* padding that excludes tokens */
    tk.tf_masks[TS_TF_SRC_MASK] = mask2(3, 3, false, false);
    tk.tf_masks[TS_TF_SRC_KEY_PADDING_MASK] = mask2(1, 3, true, false);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "src_key_padding_mask excludes positions");
    memset(&tk, 0, sizeof tk);
    /* a width-1 LayerNorm: the final norm's output is constant */
    d.transformer.encoder_norm.normalized_numel = 1;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "a LayerNorm of width 1");
    d.transformer.encoder_norm.normalized_numel = 12;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "normalizes more than the model width");
    d.transformer.encoder_norm.kind = TS_NORM_IDENTITY;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK(r.complete);
    /* a module the formulas refuse keeps its reason */
    d.refusal = "Transformer estimates need identical stacked layers";
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "need identical stacked layers");
    d = tf_desc(TS_MOD_TRANSFORMER_ENCODER_LAYER, 1, 0);
    d.transformer.encoder.self_attn.add_bias_kv = true;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "add_bias_kv");
    /* sequence first (batch_first=False): (3, 1, 4) */
    d = tf_desc(TS_MOD_TRANSFORMER_ENCODER_LAYER, 1, 0);
    d.transformer.encoder.self_attn.batch_first = false;
    c.input = seq(3, 1, 4);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(&r,
                  "[{\"arguments\":[\"src\"],\"sequence_axis\":0,\"length\":"
                  "3,\"relation\":{\"kind\":\"all\"}}]");
}

static void
test_decoder(void)
{
    ts_module_desc d = tf_desc(TS_MOD_TRANSFORMER_DECODER_LAYER, 0, 1);
    ts_token_call tk;
    ts_module_call c;
    ts_token_result r;
    memset(&tk, 0, sizeof tk);
    /* tgt of 2, memory of 5, tgt_mask causal: tgt prefix, memory all */
    c = tf_call(2, 5, &tk);
    tk.tf_masks[TS_TF_TGT_MASK] = mask2(2, 2, true, true);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK(r.complete);
    CHECK_EQ_INT(r.output_length, 2);
    CHECK_SOURCES(
        &r,
        "[{\"arguments\":[\"tgt\"],\"sequence_axis\":1,\"length\":2,"
        "\"relation\":{\"kind\":\"prefix\"}},{\"arguments\":[\"memory\"],"
        "\"sequence_axis\":1,\"length\":5,\"relation\":{\"kind\":\"all\"}}]");
    /* memory_mask causal (2x5): target i sees memory 0..i */
    tk.tf_masks[TS_TF_MEMORY_MASK] = mask2(2, 5, true, true);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(
        &r,
        "[{\"arguments\":[\"tgt\"],\"sequence_axis\":1,\"length\":2,"
        "\"relation\":{\"kind\":\"prefix\"}},{\"arguments\":[\"memory\"],"
        "\"sequence_axis\":1,\"length\":5,\"relation\":{\"kind\":\"prefix\","
        "\"limit\":2}}]");
    /* two layers without a tgt mask: the second layer's self-attention
     * spreads the first one's memory 0..1 to every target */
    d = tf_desc(TS_MOD_TRANSFORMER_DECODER, 0, 2);
    memset(&tk.tf_masks[TS_TF_TGT_MASK], 0, sizeof(ts_mask_info));
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(
        &r,
        "[{\"arguments\":[\"tgt\"],\"sequence_axis\":1,\"length\":2,"
        "\"relation\":{\"kind\":\"all\"}},{\"arguments\":[\"memory\"],"
        "\"sequence_axis\":1,\"length\":5,\"relation\":{\"kind\":\"all\","
        "\"limit\":2}}]");
    /* hints name the decoder's arguments */
    memset(&tk, 0, sizeof tk);
    c.tf_causal[TS_TF_MEMORY] = true;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "memory_is_causal=True without memory_mask");
    c.tf_causal[TS_TF_MEMORY] = false;
    tk.tf_masks[TS_TF_MEMORY_KEY_PADDING_MASK] = mask2(1, 5, true, false);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "memory_key_padding_mask excludes positions");
    /* without memory */
    c = tf_call(2, 0, NULL);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "need batched, non-empty, real, dense 3-D inputs");
}

static void
test_transformer(void)
{
    ts_module_desc d = tf_desc(TS_MOD_TRANSFORMER, 1, 1);
    ts_token_call tk;
    ts_module_call c;
    ts_token_result r;
    memset(&tk, 0, sizeof tk);
    /* nn.Transformer(src of 3, tgt of 2): output follows tgt */
    c = tf_call(3, 2, &tk);
    tk.tf_masks[TS_TF_TGT_MASK] = mask2(2, 2, true, true);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK(r.complete);
    CHECK_EQ_INT(r.output_length, 2);
    CHECK_SOURCES(
        &r,
        "[{\"arguments\":[\"tgt\"],\"sequence_axis\":1,\"length\":2,"
        "\"relation\":{\"kind\":\"prefix\"}},{\"arguments\":[\"src\"],"
        "\"sequence_axis\":1,\"length\":3,\"relation\":{\"kind\":\"all\"}}]");
    /* causal src and memory masks: target i sees memory 0..i, memory j
     * depends on src 0..j */
    tk.tf_masks[TS_TF_SRC_MASK] = mask2(3, 3, true, true);
    tk.tf_masks[TS_TF_MEMORY_MASK] = mask2(2, 3, true, true);
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(
        &r,
        "[{\"arguments\":[\"tgt\"],\"sequence_axis\":1,\"length\":2,"
        "\"relation\":{\"kind\":\"prefix\"}},{\"arguments\":[\"src\"],"
        "\"sequence_axis\":1,\"length\":3,\"relation\":{\"kind\":\"prefix\","
        "\"limit\":2}}]");
    /* causal src alone: every target sees all memory, hence all src */
    memset(&tk.tf_masks[TS_TF_MEMORY_MASK], 0, sizeof(ts_mask_info));
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_SOURCES(
        &r,
        "[{\"arguments\":[\"tgt\"],\"sequence_axis\":1,\"length\":2,"
        "\"relation\":{\"kind\":\"prefix\"}},{\"arguments\":[\"src\"],"
        "\"sequence_axis\":1,\"length\":3,\"relation\":{\"kind\":\"all\"}}]");
    /* the hint of nn.Transformer's encoder is src_is_causal */
    c.tf_causal[TS_TF_SRC] = true;
    tk.tf_masks[TS_TF_SRC_MASK].excludes = false;
    tk.tf_masks[TS_TF_SRC_MASK].causal = false;
    CHECK_EQ_INT(decide(&d, &c, &r), TS_OK);
    CHECK_REFUSED(&r, "src_is_causal=True but src_mask");
}

int
main(void)
{
    test_mask_scan_bool();
    test_mask_scan_float();
    test_mask_scan_invalid();
    test_canonical();
    test_union();
    test_compose();
    test_mha_self_attention();
    test_mha_separate_arguments();
    test_mha_masks();
    test_mha_refused_calls();
    test_encoder();
    test_decoder();
    test_transformer();
    printf("near misses: %ld calls decided (%ld complete)\n",
           sweep_calls,
           sweep_complete);
    return ts_test_report();
}
