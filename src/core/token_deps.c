/* Token dependencies of native attention and Transformer calls
 * (token_deps.h): the relations of MultiheadAttention and of the
 * Transformer layers, stacks and nn.Transformer, built with the relation
 * algebra of token_relations.c, and their TokenDependency objects. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "torchscan/token_deps.h"

/* ---- attention -----------------------------------------------------------
 */

/* One attention call with t queries and s keys, without exclusions or
 * with the canonical causal mask (query i sees keys j <= i). Output i
 * mixes the values of the keys it sees; it depends on its query and on
 * those keys only where it sees two or more: a softmax over one key is 1
 * whatever the scores. */
static void
attention_relations(int64_t t,
                    int64_t s,
                    bool causal,
                    ts_token_relation *query,
                    ts_token_relation *key,
                    ts_token_relation *value)
{
    ts_token_relation v = {causal ? TS_TOKEN_PREFIX : TS_TOKEN_ALL, s, 0};
    ts_token_relation k = v;
    ts_token_relation q = {TS_TOKEN_SAME_POSITION, t, 0};
    if (causal) {
        /* query 0 sees key 0 alone */
        k.first = 1;
        q.first = 1;
    }
    if (s < 2) {
        k.kind = TS_TOKEN_NONE;
        q.kind = TS_TOKEN_NONE;
    }
    *value = ts_token_canonical(v, t, s);
    *key = ts_token_canonical(k, t, s);
    *query = ts_token_canonical(q, t, t);
}

/* ---- the calls -----------------------------------------------------------
 */

static const char *const assumption_sentences[3] = {
    "Relations are structural: they hold for generic parameter and input "
    "values; particular values (a zero weight, a saturated softmax) can "
    "remove a listed dependency but never add one.",
    "Every batch element and attention head follows the same relation: "
    "mask entries that are True or -inf exclude their position, False and "
    "finite entries only reweight it.",
    "Position-wise parts (projections, feed-forward layers, activations, "
    "residual additions, dropout, LayerNorm over the model width) keep each "
    "position's dependencies; only attention mixes positions.",
};

static bool refuse(ts_token_result *out, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Marks the result unavailable with its reason; returns false. */
static bool
refuse(ts_token_result *out, const char *fmt, ...)
{
    static const char prefix[] = "Token dependencies unavailable: ";
    const size_t start = sizeof prefix - 1;
    size_t end;
    va_list args;
    memcpy(out->message, prefix, start);
    va_start(args, fmt);
    vsnprintf(out->message + start, sizeof out->message - start, fmt, args);
    va_end(args);
    end = strlen(out->message);
    if (end + 1 < sizeof out->message) {
        out->message[end] = '.';
        out->message[end + 1] = '\0';
    }
    out->complete = false;
    return false;
}

/* A batched (3-D), non-empty, real, dense sequence tensor. */
static bool
sequence_ok(const ts_shape *s)
{
    if (s->ndim != 3 || !s->dense || s->dtype != TS_DTYPE_FLOAT) {
        return false;
    }
    for (int d = 0; d < 3; d++) {
        if (s->dims[d] <= 0) {
            return false;
        }
    }
    return true;
}

static bool
mask_dtype_ok(const ts_mask_info *m)
{
    return m->shape.dtype == TS_DTYPE_BOOL || m->shape.dtype == TS_DTYPE_FLOAT;
}

/* One attention block's masks and causal hint. */
typedef struct attention_masks {
    const ts_mask_info *attn, *padding; /* NULL: not an argument */
    const char *attn_name, *padding_name, *hint_name;
    bool hint;
} attention_masks;

/* Geometry of one attention block. */
typedef struct attention_geom {
    int64_t batch, heads, t, s;
} attention_geom;

static bool
padding_ok(const attention_masks *am,
           const attention_geom *g,
           ts_token_result *out)
{
    const ts_mask_info *m = am->padding;
    const char *name = am->padding_name;
    if (m == NULL || !m->present) {
        return true;
    }
    if (m->shape.ndim != 2 || m->shape.dims[0] != g->batch
        || m->shape.dims[1] != g->s) {
        return refuse(out, "%s is not of shape (batch, source length)", name);
    }
    if (!mask_dtype_ok(m)) {
        return refuse(out, "%s is neither bool nor floating point", name);
    }
    if (!m->read) {
        return refuse(out,
                      "the values of %s cannot be read (a meta or fake "
                      "tensor, or a tensor subclass)",
                      name);
    }
    if (m->nonfinite) {
        return refuse(out, "%s holds NaN or +inf", name);
    }
    if (m->excludes) {
        return refuse(out,
                      "%s excludes positions (True or -inf entries): "
                      "padding is not modelled",
                      name);
    }
    return true;
}

/* Whether the block is causal (true in *causal) or free of exclusions;
 * false with the result refused otherwise. */
static bool
attention_masking(const attention_masks *am,
                  const attention_geom *g,
                  bool *causal,
                  ts_token_result *out)
{
    const ts_mask_info *m = am->attn;
    const char *name = am->attn_name;
    const ts_shape *s = m != NULL ? &m->shape : NULL;
    *causal = false;
    if (!padding_ok(am, g, out)) {
        return false;
    }
    if (m == NULL || !m->present) {
        return !am->hint
               || refuse(out, "%s=True without %s", am->hint_name, name);
    }
    int64_t slices = 0;
    if (!((s->ndim == 2
           || (s->ndim == 3 && ts_mul(g->batch, g->heads, &slices)
               && s->dims[0] == slices))
          && s->dims[s->ndim - 2] == g->t && s->dims[s->ndim - 1] == g->s)) {
        return refuse(out,
                      "%s is not of shape (target length, source length) or "
                      "(batch * heads, target length, source length)",
                      name);
    }
    if (!mask_dtype_ok(m)) {
        return refuse(out, "%s is neither bool nor floating point", name);
    }
    if (!m->read) {
        /* PyTorch's own contract: a wrong hint gives wrong results */
        *causal = am->hint;
        return am->hint
               || refuse(out,
                         "the values of %s cannot be read (a meta or fake "
                         "tensor, or a tensor subclass) and %s is not True",
                         name,
                         am->hint_name);
    }
    if (m->nonfinite) {
        return refuse(out, "%s holds NaN or +inf", name);
    }
    if (m->causal && m->excludes) {
        *causal = true;
        return true;
    }
    if (am->hint && !m->causal) {
        return refuse(out,
                      "%s=True but %s is not the canonical causal mask",
                      am->hint_name,
                      name);
    }
    return !m->excludes
           || refuse(out,
                     "%s excludes positions other than those of the "
                     "canonical causal mask (True or -inf exactly above the "
                     "diagonal)",
                     name);
}

static void
add_source(ts_token_result *out,
           unsigned arguments,
           int axis,
           int64_t length,
           ts_token_relation relation)
{
    ts_token_source *src = &out->sources[out->nsources++];
    src->arguments = arguments;
    src->sequence_axis = axis;
    src->length = length;
    src->relation = relation;
}

static const ts_token_call no_tokens;

static bool
algebra_failed(ts_token_result *out)
{
    return refuse(out,
                  "the relations of this call are not all, same_position, "
                  "prefix or none");
}

/* MultiheadAttention(query, key, value): arguments that are one tensor
 * form one source, whose relation is the union of theirs. */
static void
mha_tokens(const ts_module_desc *d,
           const ts_module_call *c,
           const ts_token_call *tk,
           ts_token_result *out)
{
    int axis = d->batch_first ? 1 : 0;
    attention_masks am = {&tk->attn_mask,
                          &tk->key_padding_mask,
                          "attn_mask",
                          "key_padding_mask",
                          "is_causal",
                          tk->is_causal};
    attention_geom g;
    ts_token_relation rel[3];
    int64_t len[3];
    unsigned bits[3] = {
        TS_TOKEN_ARG_QUERY, TS_TOKEN_ARG_KEY, TS_TOKEN_ARG_VALUE};
    int group[3] = {0, tk->key_is_query ? 0 : 1, 2};
    bool causal;
    if (!c->has_input || !sequence_ok(&c->input) || !sequence_ok(&c->key)
        || !sequence_ok(&c->value)
        || c->value.dims[axis] != c->key.dims[axis]) {
        refuse(out,
               "MultiheadAttention needs batched, non-empty, real, dense 3-D "
               "query, key and value");
        return;
    }
    if (d->add_bias_kv || d->add_zero_attn) {
        refuse(out,
               "add_bias_kv and add_zero_attn attend to key positions that "
               "are not inputs");
        return;
    }
    g.batch = c->input.dims[1 - axis];
    g.heads = d->num_heads;
    g.t = c->input.dims[axis];
    g.s = c->key.dims[axis];
    if (!attention_masking(&am, &g, &causal, out)) {
        return;
    }
    attention_relations(g.t, g.s, causal, &rel[0], &rel[1], &rel[2]);
    len[0] = g.t;
    len[1] = len[2] = g.s;
    group[2] = tk->value_is_query ? 0 : tk->value_is_key ? group[1] : 2;
    out->complete = true;
    out->output_axis = axis;
    out->output_length = g.t;
    for (int a = 0; a < 3; a++) {
        ts_token_relation merged = rel[a];
        unsigned arguments = 0;
        if (group[a] != a) {
            continue; /* listed with an earlier argument */
        }
        for (int b = a; b < 3; b++) {
            if (group[b] != a) {
                continue;
            }
            arguments |= bits[b];
            if (b != a
                && !ts_token_union(&merged, &rel[b], g.t, len[a], &merged)) {
                algebra_failed(out);
                return;
            }
        }
        add_source(out, arguments, axis, len[a], merged);
    }
}

/* ---- the Transformer family ---------------------------------------------
 */

/* The argument names of one kind's masks and hints, in messages. */
typedef struct tf_names {
    const char *mask[TS_TF_MASK_COUNT];
    const char *hint[TS_TF_SEQ_COUNT];
} tf_names;

static const tf_names layer_names = {
    {"src_mask",
     "tgt_mask",
     "memory_mask",
     "src_key_padding_mask",
     "tgt_key_padding_mask",
     "memory_key_padding_mask"},
    {"is_causal", "tgt_is_causal", "memory_is_causal"}};
static const tf_names encoder_names = {
    {"mask",
     "tgt_mask",
     "memory_mask",
     "src_key_padding_mask",
     "tgt_key_padding_mask",
     "memory_key_padding_mask"},
    {"is_causal", "tgt_is_causal", "memory_is_causal"}};
static const tf_names transformer_names = {
    {"src_mask",
     "tgt_mask",
     "memory_mask",
     "src_key_padding_mask",
     "tgt_key_padding_mask",
     "memory_key_padding_mask"},
    {"src_is_causal", "tgt_is_causal", "memory_is_causal"}};

/* What one call of the family holds: each sequence's length and the
 * relations of its attention blocks. */
typedef struct tf_call {
    const ts_module_call *c;
    const ts_token_call *tk;
    const tf_names *names;
    int64_t batch;
    ts_token_relation enc_self; /* src -> src */
    ts_token_relation dec_self; /* tgt -> tgt */
    ts_token_relation cross_q;  /* tgt -> tgt (the query) */
    ts_token_relation cross_kv; /* tgt -> memory */
} tf_call;

/* A LayerNorm keeps positions apart only over the model width, and a
 * width of 1 makes its output constant. */
static bool
norm_ok(const ts_norm_desc *n, int64_t width, ts_token_result *out)
{
    if (n->kind != TS_NORM_LAYERNORM) {
        return true;
    }
    if (n->normalized_numel == 1) {
        return refuse(out,
                      "a LayerNorm of width 1 gives a constant output that "
                      "depends on no position");
    }
    return n->normalized_numel == width
           || refuse(out, "a LayerNorm normalizes more than the model width");
}

/* A stack's (or a layer's) sub-layers: attention without extra key
 * positions, norms over the model width. */
static bool
stack_ok(const ts_transformer_layer_desc *l,
         const ts_norm_desc *final_norm,
         ts_token_result *out)
{
    int64_t width = l->self_attn.embed_dim;
    if (l->count <= 0) {
        return true;
    }
    if (l->self_attn.add_bias_kv || l->self_attn.add_zero_attn
        || (l->decoder
            && (l->cross_attn.add_bias_kv || l->cross_attn.add_zero_attn))) {
        return refuse(out,
                      "add_bias_kv and add_zero_attn attend to key positions "
                      "that are not inputs");
    }
    for (int i = 0; i < (l->decoder ? 3 : 2); i++) {
        if (!norm_ok(&l->norm[i], width, out)) {
            return false;
        }
    }
    return norm_ok(final_norm, width, out);
}

/* The relation of one attention block of the call: self-attention gives
 * the union of its query, key and value relations (one tensor), cross
 * attention its query relation and the union of its key and value ones
 * (memory). */
static bool
tf_block(tf_call *x,
         const ts_attention_desc *a,
         int64_t t,
         int64_t s,
         ts_tf_mask mask,
         ts_tf_mask padding,
         ts_tf_seq hint,
         ts_token_relation *self_or_query,
         ts_token_relation *kv,
         ts_token_result *out)
{
    attention_masks am = {&x->tk->tf_masks[mask],
                          &x->tk->tf_masks[padding],
                          x->names->mask[mask],
                          x->names->mask[padding],
                          x->names->hint[hint],
                          x->c->tf_causal[hint]};
    attention_geom g = {x->batch, a->num_heads, t, s};
    ts_token_relation q, k, v;
    bool causal;
    if (!attention_masking(&am, &g, &causal, out)) {
        return false;
    }
    attention_relations(t, s, causal, &q, &k, &v);
    if (!ts_token_union(&k, &v, t, s, &k)) {
        return algebra_failed(out);
    }
    if (kv != NULL) {
        *self_or_query = q;
        *kv = k;
        return true;
    }
    return ts_token_union(&q, &k, t, t, self_or_query) || algebra_failed(out);
}

enum {
    TF_MAX_SOURCES = 2
};

static bool
relation_equal(const ts_token_relation *a, const ts_token_relation *b)
{
    return a->kind == b->kind && a->limit == b->limit && a->first == b->first;
}

/* `count` encoder layers on x (length `len`), for each source s of length
 * src_len[s]: x + SelfAttention(x), then position-wise parts. */
static bool
run_encoder(const tf_call *x,
            int64_t count,
            int64_t len,
            int nsrc,
            const int64_t *src_len,
            ts_token_relation *dep)
{
    for (int64_t layer = 0; layer < count; layer++) {
        bool changed = false;
        for (int s = 0; s < nsrc; s++) {
            ts_token_relation through, next;
            if (!ts_token_compose(
                    &x->enc_self, &dep[s], len, len, src_len[s], &through)
                || !ts_token_union(
                    &dep[s], &through, len, src_len[s], &next)) {
                return false;
            }
            changed |= !relation_equal(&next, &dep[s]);
            dep[s] = next;
        }
        if (!changed) {
            break; /* every later layer gives the same */
        }
    }
    return true;
}

/* `count` decoder layers on x (length t) attending to memory (length s):
 * x1 = x + SelfAttention(x), x2 = x1 + CrossAttention(x1, memory), then
 * position-wise parts. mem[s] is the memory's relation to source s. */
static bool
run_decoder(const tf_call *x,
            int64_t count,
            int64_t t,
            int64_t s,
            int nsrc,
            const int64_t *src_len,
            const ts_token_relation *mem,
            ts_token_relation *dep)
{
    for (int64_t layer = 0; layer < count; layer++) {
        bool changed = false;
        for (int k = 0; k < nsrc; k++) {
            int64_t n = src_len[k];
            ts_token_relation through, x1, from_query, from_memory, next;
            if (!ts_token_compose(&x->dec_self, &dep[k], t, t, n, &through)
                || !ts_token_union(&dep[k], &through, t, n, &x1)
                || !ts_token_compose(&x->cross_q, &x1, t, t, n, &from_query)
                || !ts_token_compose(
                    &x->cross_kv, &mem[k], t, s, n, &from_memory)
                || !ts_token_union(&x1, &from_query, t, n, &next)
                || !ts_token_union(&next, &from_memory, t, n, &next)) {
                return false;
            }
            changed |= !relation_equal(&next, &dep[k]);
            dep[k] = next;
        }
        if (!changed) {
            break;
        }
    }
    return true;
}

static const ts_token_relation no_relation = {TS_TOKEN_NONE, 0, 0};

static ts_token_relation
identity(int64_t len)
{
    ts_token_relation r = {TS_TOKEN_SAME_POSITION, len, 0};
    return ts_token_canonical(r, len, len);
}

/* The five native Transformer kinds: an encoder part on src, a decoder
 * part on tgt attending to memory (the encoder's output inside
 * nn.Transformer). */
static void
tf_tokens(const ts_module_desc *d,
          const ts_module_call *c,
          const ts_token_call *tk,
          ts_token_result *out)
{
    const ts_transformer_desc *t = &d->transformer;
    bool has_enc = t->encoder.count > 0, has_dec = t->decoder.count > 0;
    bool whole = d->kind == TS_MOD_TRANSFORMER;
    int enc_axis = t->encoder.self_attn.batch_first ? 1 : 0;
    int dec_axis = t->decoder.self_attn.batch_first ? 1 : 0;
    /* src: the first input of encoders and of nn.Transformer; tgt: the
     * first input of decoders, the second of nn.Transformer; memory: the
     * second input of decoders */
    const ts_shape *src = &c->input;
    const ts_shape *tgt = whole ? &c->second : &c->input;
    const ts_shape *memory = &c->second;
    tf_call x;
    int64_t len_src = 0, len_tgt = 0, len_mem = 0;
    int64_t lens[TF_MAX_SOURCES];
    ts_token_relation dep[TF_MAX_SOURCES], mem[TF_MAX_SOURCES];
    memset(&x, 0, sizeof x);
    x.c = c;
    x.tk = tk;
    x.names = &layer_names;
    if (d->kind == TS_MOD_TRANSFORMER_ENCODER) {
        x.names = &encoder_names;
    }
    else if (whole) {
        x.names = &transformer_names;
    }
    if (d->refusal != NULL) {
        refuse(out, "%s", d->refusal);
        return;
    }
    if (!c->has_input || !sequence_ok(&c->input)
        || (has_dec && (!c->has_second || !sequence_ok(&c->second)))) {
        refuse(out,
               "Transformer layers need batched, non-empty, real, dense 3-D "
               "inputs");
        return;
    }
    if ((has_enc && !stack_ok(&t->encoder, &t->encoder_norm, out))
        || (has_dec && !stack_ok(&t->decoder, &t->decoder_norm, out))) {
        return;
    }
    if (has_enc) {
        len_src = src->dims[enc_axis];
        x.batch = src->dims[1 - enc_axis];
        if (!tf_block(&x,
                      &t->encoder.self_attn,
                      len_src,
                      len_src,
                      TS_TF_SRC_MASK,
                      TS_TF_SRC_KEY_PADDING_MASK,
                      TS_TF_SRC,
                      &x.enc_self,
                      NULL,
                      out)) {
            return;
        }
    }
    if (has_dec) {
        len_tgt = tgt->dims[dec_axis];
        len_mem = whole ? len_src : memory->dims[dec_axis];
        x.batch = tgt->dims[1 - dec_axis];
        if (!tf_block(&x,
                      &t->decoder.self_attn,
                      len_tgt,
                      len_tgt,
                      TS_TF_TGT_MASK,
                      TS_TF_TGT_KEY_PADDING_MASK,
                      TS_TF_TGT,
                      &x.dec_self,
                      NULL,
                      out)
            || !tf_block(&x,
                         &t->decoder.cross_attn,
                         len_tgt,
                         len_mem,
                         TS_TF_MEMORY_MASK,
                         TS_TF_MEMORY_KEY_PADDING_MASK,
                         TS_TF_MEMORY,
                         &x.cross_q,
                         &x.cross_kv,
                         out)) {
            return;
        }
    }
    out->complete = true;
    if (!has_dec) {
        /* encoders: one source, src */
        lens[0] = len_src;
        dep[0] = identity(len_src);
        if (!run_encoder(&x, t->encoder.count, len_src, 1, lens, dep)) {
            algebra_failed(out);
            return;
        }
        out->output_axis = enc_axis;
        out->output_length = len_src;
        add_source(out, TS_TOKEN_ARG_SRC, enc_axis, len_src, dep[0]);
        return;
    }
    /* decoders: tgt, then memory (nn.Transformer: src, through the
     * encoder) */
    lens[0] = len_tgt;
    lens[1] = len_mem;
    dep[0] = identity(len_tgt);
    dep[1] = no_relation;
    mem[0] = no_relation;
    mem[1] = identity(len_mem);
    if (whole
        && !run_encoder(&x, t->encoder.count, len_src, 1, &lens[1], &mem[1])) {
        algebra_failed(out);
        return;
    }
    if (!run_decoder(
            &x, t->decoder.count, len_tgt, len_mem, 2, lens, mem, dep)) {
        algebra_failed(out);
        return;
    }
    out->output_axis = dec_axis;
    out->output_length = len_tgt;
    add_source(out, TS_TOKEN_ARG_TGT, dec_axis, len_tgt, dep[0]);
    add_source(out,
               whole ? TS_TOKEN_ARG_SRC : TS_TOKEN_ARG_MEMORY,
               whole ? enc_axis : dec_axis,
               len_mem,
               dep[1]);
}

bool
ts_token_kind_supported(ts_module_kind kind)
{
    return kind == TS_MOD_MHA
           || (kind >= TS_MOD_TRANSFORMER_ENCODER_LAYER
               && kind <= TS_MOD_TRANSFORMER);
}

int
ts_token_dependencies(const ts_module_desc *desc,
                      const ts_module_call *call,
                      ts_token_result *out)
{
    const ts_token_call *tk;
    if (desc == NULL || call == NULL || out == NULL
        || !ts_token_kind_supported(desc->kind)) {
        return TS_EINVAL;
    }
    memset(out, 0, sizeof *out);
    tk = call->tokens != NULL ? call->tokens : &no_tokens;
    if (desc->kind == TS_MOD_MHA) {
        mha_tokens(desc, call, tk, out);
    }
    else {
        tf_tokens(desc, call, tk, out);
    }
    if (!out->complete) {
        out->nsources = 0;
    }
    return TS_OK;
}

/* ---- JSON ----------------------------------------------------------------
 */

static json_t *
relation_json(const ts_token_relation *r, int64_t src_len)
{
    json_t *obj = json_object();
    if (obj == NULL
        || json_object_set_new(
            obj, "kind", json_string(ts_token_kind_name(r->kind)))) {
        json_decref(obj);
        return NULL;
    }
    if ((r->kind == TS_TOKEN_PREFIX || r->kind == TS_TOKEN_ALL)
        && r->limit < src_len
        && json_object_set_new(obj, "limit", json_integer(r->limit))) {
        json_decref(obj);
        return NULL;
    }
    if (r->kind != TS_TOKEN_NONE && r->first > 0
        && json_object_set_new(
            obj, "first_position", json_integer(r->first))) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

static const char *const argument_names[] = {
    "query", "key", "value", "src", "tgt", "memory"};

static json_t *
source_json(const ts_token_source *s)
{
    json_t *arguments = json_array();
    json_t *obj = json_object();
    json_t *relation = relation_json(&s->relation, s->length);
    bool ok = arguments != NULL && obj != NULL && relation != NULL;
    for (unsigned b = 0; ok && b < 6; b++) {
        if (s->arguments & (1u << b)) {
            ok = json_array_append_new(arguments,
                                       json_string(argument_names[b]))
                 == 0;
        }
    }
    ok = ok && json_object_set(obj, "arguments", arguments) == 0
         && json_object_set_new(
                obj, "sequence_axis", json_integer(s->sequence_axis))
                == 0
         && json_object_set_new(obj, "length", json_integer(s->length)) == 0
         && json_object_set(obj, "relation", relation) == 0;
    json_decref(arguments);
    json_decref(relation);
    if (!ok) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

json_t *
ts_token_result_json(const ts_token_result *r)
{
    json_t *obj = json_object();
    json_t *assumptions = json_array();
    json_t *sources = json_array();
    json_t *output = NULL;
    bool ok =
        obj != NULL && assumptions != NULL && sources != NULL && r != NULL;
    ok = ok
         && json_object_set_new(
                obj,
                "status",
                json_string(r->complete ? "complete" : "unavailable"))
                == 0
         && json_object_set_new(obj, "scope", json_string("module_call")) == 0
         && json_object_set_new(obj, "method", json_string(TS_TOKEN_METHOD))
                == 0;
    for (int i = 0; ok && r->complete && i < 3; i++) {
        ok = json_array_append_new(assumptions,
                                   json_string(assumption_sentences[i]))
             == 0;
    }
    ok = ok && json_object_set(obj, "assumptions", assumptions) == 0;
    if (ok && r->complete) {
        output = json_pack("{s:i, s:I}",
                           "sequence_axis",
                           r->output_axis,
                           "length",
                           (json_int_t)r->output_length);
        ok = output != NULL && json_object_set(obj, "output", output) == 0;
    }
    for (int i = 0; ok && r->complete && i < r->nsources; i++) {
        ok = json_array_append_new(sources, source_json(&r->sources[i])) == 0;
    }
    ok = ok && json_object_set(obj, "sources", sources) == 0;
    json_decref(assumptions);
    json_decref(sources);
    json_decref(output);
    if (!ok) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}
