/* A symbolic pickle machine for torch.save's pickles (protocols 2 to 5).
 *
 * It runs the opcodes PyTorch writes (and the rest of protocols 2-5 that a
 * hand-made pickle may use) on symbolic values: nothing is imported, no
 * callable is ever called. A GLOBAL is a name. REDUCE of a tensor rebuild
 * function (torch._utils._rebuild_tensor_v2 and its kin) builds a tensor
 * value from its arguments; REDUCE of collections.OrderedDict builds a
 * dict; any other REDUCE, NEWOBJ or BUILD builds an opaque object that
 * keeps its arguments (so the tensors inside are still found). Persistent
 * ids ('storage', type, key, location, numel) become storages of the set.
 * Every global is classified against the allowlist of
 * torch.load(weights_only=True) in torch 2.13 (torch/_weights_only_
 * unpickler.py: _get_allowed_globals; the table is in ckpt_torch_names.c);
 * one outside it is reported with a checkpoint_unsafe_global diagnostic
 * and makes the totals partial. The tensors of the result are named by
 * ckpt_pickle_walk.c.
 *
 * Bounds: the stack and the memo hold at most one value per byte of the
 * pickle; a memo index past that is refused; the walk that names tensors
 * stops at depth 256 and after 4,000,000 visits (memo references can make
 * a small pickle describe a huge tree), with a diagnostic. */
#include <stdlib.h>
#include <string.h>

#include "ckpt_pickle_internal.h"
#include "record_util.h"

pv ck_pk_mark = {PV_MARK};

/* ---- errors ---- */

int
ck_pk_fail(pk *p, size_t at, const char *fmt, const char *detail)
{
    return ts_error_set(p->err,
                        TS_EFORMAT,
                        "%s: %s: byte %zu (file byte %llu): %s%s",
                        p->src->name,
                        p->what,
                        at,
                        (unsigned long long)(p->base + at),
                        fmt,
                        detail != NULL ? detail : "");
}

int
ck_pk_nomem(pk *p)
{
    return ts_error_set(p->err, TS_ENOMEM, "out of memory");
}

/* ---- values ---- */

static pv *
pv_new(pk *p, pv_kind kind)
{
    pv *v;
    if (p->nvalues >= p->len + 16) {
        /* more values than bytes: impossible for a real pickle */
        ck_pk_fail(p, p->pos, "more values than the pickle has bytes", NULL);
        return NULL;
    }
    v = calloc(1, sizeof *v);
    if (v == NULL) {
        ck_pk_nomem(p);
        return NULL;
    }
    v->kind = kind;
    v->next_alloc = p->values;
    p->values = v;
    p->nvalues++;
    return v;
}

static int
pv_append(pk *p, pv *to, pv *item)
{
    if (grow((void **)&to->items, &to->cap, to->nitems + 1, sizeof *to->items)
        != TS_OK) {
        return ck_pk_nomem(p);
    }
    to->items[to->nitems++] = item;
    return TS_OK;
}

static void
pk_free_values(pk *p)
{
    pv *v = p->values;
    while (v != NULL) {
        pv *next = v->next_alloc;
        free(v->items);
        free(v->owned);
        free(v);
        v = next;
    }
    p->values = NULL;
}

/* ---- the stack ---- */

static int
push(pk *p, pv *v)
{
    if (v == NULL) {
        return p->err->code != TS_OK ? p->err->code : ck_pk_nomem(p);
    }
    if (grow(
            (void **)&p->stack, &p->cap_stack, p->nstack + 1, sizeof *p->stack)
        != TS_OK) {
        return ck_pk_nomem(p);
    }
    p->stack[p->nstack++] = v;
    return TS_OK;
}

static pv *
pop(pk *p, size_t at)
{
    if (p->nstack == 0 || p->stack[p->nstack - 1] == &ck_pk_mark) {
        ck_pk_fail(p, at, "pop from an empty stack", NULL);
        return NULL;
    }
    return p->stack[--p->nstack];
}

static pv *
top(pk *p, size_t at)
{
    if (p->nstack == 0 || p->stack[p->nstack - 1] == &ck_pk_mark) {
        ck_pk_fail(p, at, "the stack is empty", NULL);
        return NULL;
    }
    return p->stack[p->nstack - 1];
}

/* The index of the topmost mark; -1 after an error. */
static long
find_mark(pk *p, size_t at)
{
    for (size_t k = p->nstack; k > 0; k--) {
        if (p->stack[k - 1] == &ck_pk_mark) {
            return (long)(k - 1);
        }
    }
    ck_pk_fail(p, at, "no mark on the stack", NULL);
    return -1;
}

/* Moves the items above the topmost mark into `into` and pops the mark. */
static int
pop_to_mark(pk *p, size_t at, pv *into)
{
    long m = find_mark(p, at);
    if (m < 0) {
        return TS_EFORMAT;
    }
    for (size_t k = (size_t)m + 1; k < p->nstack; k++) {
        if (into != NULL && pv_append(p, into, p->stack[k]) != TS_OK) {
            return TS_ENOMEM;
        }
    }
    p->nstack = (size_t)m;
    return TS_OK;
}

/* ---- reading ---- */

static const uint8_t *
take(pk *p, size_t n)
{
    const uint8_t *at;
    if (n > p->len - p->pos) {
        p->truncated = true;
        ck_pk_fail(
            p, p->pos, "truncated: the pickle ends inside an opcode", NULL);
        return NULL;
    }
    at = p->data + p->pos;
    p->pos += n;
    return at;
}

/* A line ending with \n (GLOBAL's module and name). */
static const char *
take_line(pk *p, size_t *n)
{
    const uint8_t *start = p->data + p->pos;
    const uint8_t *nl = memchr(start, '\n', p->len - p->pos);
    if (nl == NULL) {
        p->truncated = true;
        ck_pk_fail(
            p, p->pos, "truncated: a GLOBAL line without its end", NULL);
        return NULL;
    }
    *n = (size_t)(nl - start);
    p->pos += *n + 1;
    return (const char *)start;
}

/* Records a use of a global; the first use of one outside the allowlist
 * gets a diagnostic. */
static int
note_global(pk *p, const char *name)
{
    json_t *row = json_object_get(p->global_index, name);
    bool allowed;
    if (row != NULL) {
        json_int_t uses = json_integer_value(json_object_get(row, "uses"));
        return json_object_set_new(row, "uses", json_integer(uses + 1)) == 0
                   ? TS_OK
                   : ck_pk_nomem(p);
    }
    allowed = ck_global_allowed(name);
    row = json_pack(
        "{s:s, s:b, s:i}", "name", name, "allowed", allowed, "uses", 1);
    if (row == NULL || json_object_set(p->global_index, name, row) != 0) {
        json_decref(row);
        return ck_pk_nomem(p);
    }
    if (json_array_append_new(p->set->globals, row) != 0) {
        return ck_pk_nomem(p); /* the index still holds it */
    }
    if (!allowed) {
        p->set->incomplete = true;
        return ck_diagnose(p->set,
                           "checkpoint_unsafe_global",
                           name,
                           p->err,
                           "%s: %s names the global %s, which "
                           "torch.load(weights_only=True) refuses; it was "
                           "not imported or called, and what it would "
                           "build is unknown",
                           p->src->name,
                           p->what,
                           name);
    }
    return TS_OK;
}

static pv *
make_global(pk *p, const char *module, size_t nm, const char *name, size_t nn)
{
    pv *v;
    char *text;
    if (nm > CK_MAX_NAME || nn > CK_MAX_NAME) {
        ck_pk_fail(p, p->pos, "a global name longer than 64 KiB", NULL);
        return NULL;
    }
    if (memchr(module, '\0', nm) != NULL || memchr(name, '\0', nn) != NULL) {
        ck_pk_fail(p, p->pos, "a global name holding NUL", NULL);
        return NULL;
    }
    if (!ck_utf8(module, nm) || !ck_utf8(name, nn)) {
        ck_pk_fail(p, p->pos, "a global name that is not UTF-8 text", NULL);
        return NULL;
    }
    if ((v = pv_new(p, PV_GLOBAL)) == NULL) {
        return NULL;
    }
    module = ck_py3_module(module, &nm);
    text = malloc(nm + nn + 2);
    if (text == NULL) {
        ck_pk_nomem(p);
        return NULL;
    }
    memcpy(text, module, nm);
    text[nm] = '.';
    memcpy(text + nm + 1, name, nn);
    text[nm + nn + 1] = '\0';
    v->owned = text;
    v->s = text;
    v->n = nm + nn + 1;
    if (note_global(p, text) != TS_OK) {
        return NULL;
    }
    return v;
}

/* ---- persistent ids: storages ---- */

static bool
is_str(const pv *v, const char *text)
{
    return v->kind == PV_STR && v->n == strlen(text)
           && memcmp(v->s, text, v->n) == 0;
}

/* ('storage', type, key, location, numel[, view_metadata]) */
static pv *
persistent_load(pk *p, pv *pid, size_t at)
{
    const ck_torch_dtype *dt;
    pv *v, *key, *loc, *numel;
    char keybuf[256];
    json_t *known;
    int s;
    if (pid->kind != PV_TUPLE || pid->nitems < 5
        || !is_str(pid->items[0], "storage")
        || pid->items[1]->kind != PV_GLOBAL || pid->items[2]->kind != PV_STR
        || pid->items[4]->kind != PV_INT || pid->items[4]->i < 0) {
        ck_pk_fail(p,
                   at,
                   "a persistent id that is not ('storage', type, key, "
                   "location, numel)",
                   NULL);
        return NULL;
    }
    key = pid->items[2];
    loc = pid->items[3];
    numel = pid->items[4];
    if (key->n == 0 || key->n >= sizeof keybuf
        || memchr(key->s, '\0', key->n) != NULL) {
        ck_pk_fail(
            p, at, "a storage key that is empty, too long or holds NUL", NULL);
        return NULL;
    }
    if (!ck_utf8(key->s, key->n)) {
        ck_pk_fail(p, at, "a storage key that is not UTF-8 text", NULL);
        return NULL;
    }
    memcpy(keybuf, key->s, key->n);
    keybuf[key->n] = '\0';
    dt = ck_dtype_of_storage(pid->items[1]->s);
    if (dt == NULL) {
        ck_pk_fail(p, at, "an unknown storage type ", pid->items[1]->s);
        return NULL;
    }
    if (pid->nitems > 5 && pid->items[5]->kind != PV_NONE) {
        ck_pk_fail(
            p, at, "storage views (legacy view metadata) are not read", NULL);
        return NULL;
    }
    /* one storage per key */
    known = json_object_get(p->storage_index, keybuf);
    s = known != NULL ? (int)json_integer_value(known) : -1;
    if (s < 0) {
        ck_storage *st;
        int64_t bytes;
        if (!ts_mul(numel->i, dt->itemsize, &bytes)) {
            ck_pk_fail(p, at, "a storage size that overflows", NULL);
            return NULL;
        }
        if ((s = ck_add_storage(p->set, keybuf, p->err)) < 0) {
            return NULL;
        }
        if (json_object_set_new(p->storage_index, keybuf, json_integer(s))
            != 0) {
            ck_pk_nomem(p);
            return NULL;
        }
        st = &p->set->storages[s];
        st->dtype = dt->full;
        st->itemsize = dt->itemsize;
        st->elements = numel->i;
        st->bytes = bytes;
        st->file = p->file;
        if (loc->kind == PV_STR && loc->n < 64 && ck_utf8(loc->s, loc->n)) {
            st->location = malloc(loc->n + 1);
            if (st->location == NULL) {
                ck_pk_nomem(p);
                return NULL;
            }
            memcpy(st->location, loc->s, loc->n);
            st->location[loc->n] = '\0';
        }
    }
    else if (p->set->storages[s].elements != numel->i
             || strcmp(p->set->storages[s].dtype, dt->full) != 0) {
        ck_pk_fail(
            p, at, "storage key used twice with different sizes: ", keybuf);
        return NULL;
    }
    if ((v = pv_new(p, PV_STORAGE)) == NULL) {
        return NULL;
    }
    v->i = s;
    return v;
}

/* ---- REDUCE ---- */

static bool
global_is(const pv *g, const char *name)
{
    return g->kind == PV_GLOBAL && strcmp(g->s, name) == 0;
}

/* _rebuild_tensor(storage, offset, size, stride),
 * _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks),
 * _rebuild_tensor_v3(..., hooks, dtype[, metadata]). */
static pv *
rebuild_tensor(pk *p, pv *args, bool v3, size_t at)
{
    pv *t;
    pv *dtype = NULL;
    if (args->kind != PV_TUPLE || args->nitems < (v3 ? 7 : 4)) {
        ck_pk_fail(
            p, at, "a tensor rebuild call with too few arguments", NULL);
        return NULL;
    }
    if (v3) {
        dtype = args->items[6];
    }
    t = pv_new(p, PV_TENSOR);
    if (t == NULL) {
        return NULL;
    }
    for (int k = 0; k < 4; k++) {
        if (pv_append(p, t, args->items[k]) != TS_OK) {
            return NULL;
        }
    }
    if (pv_append(p, t, dtype != NULL ? dtype : &ck_pk_mark) != TS_OK) {
        return NULL;
    }
    return t;
}

/* _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad) */
static pv *
rebuild_meta(pk *p, pv *args, size_t at)
{
    pv *t;
    if (args->kind != PV_TUPLE || args->nitems < 3) {
        ck_pk_fail(
            p, at, "a meta tensor rebuild with too few arguments", NULL);
        return NULL;
    }
    if ((t = pv_new(p, PV_TENSOR)) == NULL) {
        return NULL;
    }
    /* no storage, offset 0 */
    if (pv_append(p, t, &ck_pk_mark) != TS_OK
        || pv_append(p, t, &ck_pk_mark) != TS_OK
        || pv_append(p, t, args->items[1]) != TS_OK
        || pv_append(p, t, args->items[2]) != TS_OK
        || pv_append(p, t, args->items[0]) != TS_OK) {
        return NULL;
    }
    return t;
}

static pv *reduce(pk *p, pv *callable, pv *args, size_t at, int depth);

static pv *
opaque(pk *p, pv *callable, pv *args)
{
    pv *o = pv_new(p, PV_OBJECT);
    if (o == NULL) {
        return NULL;
    }
    o->type = callable->kind == PV_GLOBAL ? callable->s : "?";
    if (pv_append(p, o, args) != TS_OK) {
        return NULL;
    }
    return o;
}

static pv *
reduce(pk *p, pv *callable, pv *args, size_t at, int depth)
{
    if (global_is(callable, "torch._utils._rebuild_tensor_v2")
        || global_is(callable, "torch._utils._rebuild_tensor")) {
        return rebuild_tensor(p, args, false, at);
    }
    if (global_is(callable, "torch._utils._rebuild_tensor_v3")) {
        return rebuild_tensor(p, args, true, at);
    }
    if (global_is(callable, "torch._utils._rebuild_meta_tensor_no_storage")) {
        return rebuild_meta(p, args, at);
    }
    if (global_is(callable, "torch._utils._rebuild_parameter")
        || global_is(callable, "torch._utils._rebuild_parameter_with_state")
        || global_is(callable, "torch.nn.parameter.Parameter")) {
        if (args->kind == PV_TUPLE && args->nitems >= 1
            && args->items[0]->kind == PV_TENSOR) {
            args->items[0]->parameter = true;
            return args->items[0];
        }
        return opaque(p, callable, args);
    }
    if (global_is(callable, "torch._tensor._rebuild_from_type_v2")
        && args->kind == PV_TUPLE && args->nitems >= 3 && depth < 4) {
        /* (func, type, func's args, state): the tensor func builds */
        return reduce(p, args->items[0], args->items[2], at, depth + 1);
    }
    if (global_is(callable, "collections.OrderedDict")) {
        return pv_new(p, PV_DICT);
    }
    if (global_is(callable, "torch._utils._rebuild_qtensor")
        || global_is(callable, "torch._utils._rebuild_sparse_tensor")
        || global_is(callable, "torch._utils._rebuild_nested_tensor")
        || global_is(callable, "torch._utils._rebuild_wrapper_subclass")
        || global_is(callable,
                     "torch._utils._rebuild_device_tensor_from_numpy")
        || global_is(callable,
                     "torch._utils._rebuild_device_tensor_from_cpu_tensor")) {
        p->set->incomplete = true;
        if (ck_diagnose(p->set,
                        "checkpoint_unknown_object",
                        callable->s,
                        p->err,
                        "%s: %s: a tensor rebuilt by %s (quantized, sparse, "
                        "nested, subclass or device tensors) is not read",
                        p->src->name,
                        p->what,
                        callable->s)
            != TS_OK) {
            return NULL;
        }
    }
    return opaque(p, callable, args);
}

/* ---- the machine ---- */

static int
memo_put(pk *p, uint64_t idx, size_t at)
{
    pv *v = top(p, at);
    if (v == NULL) {
        return TS_EFORMAT;
    }
    if (idx >= p->len + 16) {
        return ck_pk_fail(
            p, at, "a memo index past what the pickle can hold", NULL);
    }
    if (idx >= p->nmemo) {
        size_t n = (size_t)idx + 1;
        pv **m = realloc(p->memo, n * sizeof *m);
        if (m == NULL) {
            return ck_pk_nomem(p);
        }
        memset(m + p->nmemo, 0, (n - p->nmemo) * sizeof *m);
        p->memo = m;
        p->nmemo = n;
    }
    p->memo[idx] = v;
    return TS_OK;
}

static int
memo_get(pk *p, uint64_t idx, size_t at)
{
    if (idx >= p->nmemo || p->memo[idx] == NULL) {
        return ck_pk_fail(p, at, "a memo reference to nothing", NULL);
    }
    return push(p, p->memo[idx]);
}

static pv *
int_value(pk *p, int64_t x)
{
    pv *v = pv_new(p, PV_INT);
    if (v != NULL) {
        v->i = x;
    }
    return v;
}

/* LONG1/LONG4: little-endian two's complement of n bytes. */
static pv *
long_value(pk *p, const uint8_t *b, size_t n)
{
    pv *v;
    if (n > 8) {
        if ((v = pv_new(p, PV_BIGINT)) != NULL) {
            v->s = (const char *)b; /* its bytes, for the legacy magic */
            v->n = n;
        }
        return v;
    }
    if (n == 0) {
        return int_value(p, 0);
    }
    {
        uint64_t u = 0;
        for (size_t k = n; k > 0; k--) {
            u = (u << 8) | b[k - 1];
        }
        if (n < 8 && (b[n - 1] & 0x80)) {
            u |= ~(uint64_t)0 << (8 * n);
        }
        v = int_value(p, (int64_t)u);
    }
    return v;
}

static pv *
text_value(pk *p, pv_kind kind, uint64_t n)
{
    const uint8_t *s;
    pv *v;
    if (n > p->len - p->pos) {
        p->truncated = true;
        ck_pk_fail(
            p, p->pos, "truncated: a string ends past the pickle", NULL);
        return NULL;
    }
    s = take(p, (size_t)n);
    if (s == NULL || (v = pv_new(p, kind)) == NULL) {
        return NULL;
    }
    v->s = (const char *)s;
    v->n = (size_t)n;
    return v;
}

static pv *
tuple_of(pk *p, size_t n, size_t at)
{
    pv *t = pv_new(p, PV_TUPLE);
    if (t == NULL) {
        return NULL;
    }
    if (p->nstack < n) {
        ck_pk_fail(p, at, "a tuple of more items than the stack holds", NULL);
        return NULL;
    }
    for (size_t k = p->nstack - n; k < p->nstack; k++) {
        if (p->stack[k] == &ck_pk_mark) {
            ck_pk_fail(p, at, "a mark inside a tuple", NULL);
            return NULL;
        }
        if (pv_append(p, t, p->stack[k]) != TS_OK) {
            return NULL;
        }
    }
    p->nstack -= n;
    return t;
}

/* Adds items to a container (dict, list, set or an opaque object). */
static int
add_items(pk *p, pv *to, pv **items, size_t n, size_t at, bool pairs)
{
    if (pairs && n % 2 != 0) {
        return ck_pk_fail(p, at, "SETITEMS with an odd number of items", NULL);
    }
    if (to->kind != PV_DICT && to->kind != PV_LIST && to->kind != PV_SET
        && to->kind != PV_OBJECT) {
        return ck_pk_fail(
            p, at, "items added to a value that is no container", NULL);
    }
    for (size_t k = 0; k < n; k++) {
        if (pv_append(p, to, items[k]) != TS_OK) {
            return TS_ENOMEM;
        }
    }
    return TS_OK;
}

/* Runs one opcode; *stop is set at STOP. */
static int
step(pk *p, bool *stop)
{
    size_t at = p->pos;
    const uint8_t *b = take(p, 1);
    pv *v, *w, *x;
    if (b == NULL) {
        return TS_EFORMAT;
    }
    switch (*b) {
        case 0x80: /* PROTO */
            if ((b = take(p, 1)) == NULL) {
                return TS_EFORMAT;
            }
            if (*b < 2 || *b > 5) {
                return ck_pk_fail(p, at, "pickle protocol outside 2..5", NULL);
            }
            return TS_OK;
        case 0x95: /* FRAME */
            return take(p, 8) != NULL ? TS_OK : TS_EFORMAT;
        case '.': /* STOP */
            *stop = true;
            return TS_OK;
        case '(': /* MARK */
            return push(p, &ck_pk_mark);
        case '}':
            return push(p, pv_new(p, PV_DICT));
        case ']':
            return push(p, pv_new(p, PV_LIST));
        case ')':
            return push(p, pv_new(p, PV_TUPLE));
        case 0x8f: /* EMPTY_SET */
            return push(p, pv_new(p, PV_SET));
        case 'N':
            return push(p, pv_new(p, PV_NONE));
        case 0x88: /* NEWTRUE */
        case 0x89: /* NEWFALSE */
            if ((v = pv_new(p, PV_BOOL)) != NULL) {
                v->i = *b == 0x88;
            }
            return push(p, v);
        case 'K': /* BININT1 */
            return (b = take(p, 1)) ? push(p, int_value(p, b[0])) : TS_EFORMAT;
        case 'M': /* BININT2 */
            return (b = take(p, 2)) ? push(p, int_value(p, ck_le16(b)))
                                    : TS_EFORMAT;
        case 'J': /* BININT */
            return (b = take(p, 4))
                       ? push(p, int_value(p, (int32_t)ck_le32(b)))
                       : TS_EFORMAT;
        case 0x8a: { /* LONG1 */
            const uint8_t *digits;
            if ((b = take(p, 1)) == NULL || (digits = take(p, b[0])) == NULL) {
                return TS_EFORMAT;
            }
            return push(p, long_value(p, digits, b[0]));
        }
        case 0x8b: { /* LONG4 */
            uint32_t n;
            if ((b = take(p, 4)) == NULL) {
                return TS_EFORMAT;
            }
            n = ck_le32(b);
            if ((b = take(p, n)) == NULL) {
                return TS_EFORMAT;
            }
            return push(p, long_value(p, b, n));
        }
        case 'G': /* BINFLOAT */
            return take(p, 8) ? push(p, pv_new(p, PV_FLOAT)) : TS_EFORMAT;
        case 'X': /* BINUNICODE */
        case 'B': /* BINBYTES */
        case 'T': /* BINSTRING */
            return (b = take(p, 4)) ? push(
                       p,
                       text_value(
                           p, *(b - 1) == 'B' ? PV_BYTES : PV_STR, ck_le32(b)))
                                    : TS_EFORMAT;
        case 0x8c: /* SHORT_BINUNICODE */
        case 'C':  /* SHORT_BINBYTES */
        case 'U':  /* SHORT_BINSTRING */
            return (b = take(p, 1)) ? push(
                       p,
                       text_value(
                           p, *(b - 1) == 'C' ? PV_BYTES : PV_STR, b[0]))
                                    : TS_EFORMAT;
        case 0x8d: /* BINUNICODE8 */
        case 0x8e: /* BINBYTES8 */
        case 0x96: /* BYTEARRAY8 */
            return (b = take(p, 8))
                       ? push(p,
                              text_value(p,
                                         *(b - 1) == 0x8d ? PV_STR : PV_BYTES,
                                         ck_le64(b)))
                       : TS_EFORMAT;
        case 0x85: /* TUPLE1 */
        case 0x86: /* TUPLE2 */
        case 0x87: /* TUPLE3 */
            return push(p, tuple_of(p, (size_t)(*b - 0x84), at));
        case 't': { /* TUPLE */
            long m = find_mark(p, at);
            if (m < 0 || (v = pv_new(p, PV_TUPLE)) == NULL) {
                return p->err->code;
            }
            if (pop_to_mark(p, at, v) != TS_OK) {
                return p->err->code;
            }
            return push(p, v);
        }
        case 'l': /* LIST */
            if ((v = pv_new(p, PV_LIST)) == NULL
                || pop_to_mark(p, at, v) != TS_OK) {
                return p->err->code;
            }
            return push(p, v);
        case 'd': /* DICT */
            if ((v = pv_new(p, PV_DICT)) == NULL
                || pop_to_mark(p, at, v) != TS_OK) {
                return p->err->code;
            }
            if (v->nitems % 2 != 0) {
                return ck_pk_fail(
                    p, at, "DICT of an odd number of items", NULL);
            }
            return push(p, v);
        case 0x91: /* FROZENSET */
            if ((v = pv_new(p, PV_SET)) == NULL
                || pop_to_mark(p, at, v) != TS_OK) {
                return p->err->code;
            }
            return push(p, v);
        case 'a': /* APPEND */
            if ((w = pop(p, at)) == NULL || (v = top(p, at)) == NULL) {
                return TS_EFORMAT;
            }
            return add_items(p, v, &w, 1, at, false);
        case 's': /* SETITEM */
        {
            pv *kv[2];
            if ((kv[1] = pop(p, at)) == NULL || (kv[0] = pop(p, at)) == NULL
                || (v = top(p, at)) == NULL) {
                return TS_EFORMAT;
            }
            return add_items(p, v, kv, 2, at, true);
        }
        case 'e':  /* APPENDS */
        case 'u':  /* SETITEMS */
        case 0x90: /* ADDITEMS */
        {
            long m = find_mark(p, at);
            int rc;
            if (m < 1 || p->stack[m - 1] == &ck_pk_mark) {
                return m < 0 ? TS_EFORMAT
                             : ck_pk_fail(
                                 p, at, "no container below the mark", NULL);
            }
            rc = add_items(p,
                           p->stack[m - 1],
                           p->stack + m + 1,
                           p->nstack - (size_t)m - 1,
                           at,
                           *b == 'u');
            p->nstack = (size_t)m;
            return rc;
        }
        case 'q': /* BINPUT */
            return (b = take(p, 1)) ? memo_put(p, b[0], at) : TS_EFORMAT;
        case 'r': /* LONG_BINPUT */
            return (b = take(p, 4)) ? memo_put(p, ck_le32(b), at) : TS_EFORMAT;
        case 0x94: /* MEMOIZE */
            return memo_put(p, p->nmemo, at);
        case 'h': /* BINGET */
            return (b = take(p, 1)) ? memo_get(p, b[0], at) : TS_EFORMAT;
        case 'j': /* LONG_BINGET */
            return (b = take(p, 4)) ? memo_get(p, ck_le32(b), at) : TS_EFORMAT;
        case 'c': { /* GLOBAL */
            size_t nm, nn;
            const char *module = take_line(p, &nm), *name;
            if (module == NULL || (name = take_line(p, &nn)) == NULL) {
                return TS_EFORMAT;
            }
            return push(p, make_global(p, module, nm, name, nn));
        }
        case 0x93: /* STACK_GLOBAL */
            if ((w = pop(p, at)) == NULL || (v = pop(p, at)) == NULL) {
                return TS_EFORMAT;
            }
            if (v->kind != PV_STR || w->kind != PV_STR) {
                return ck_pk_fail(p,
                                  at,
                                  "STACK_GLOBAL of values that are not "
                                  "text",
                                  NULL);
            }
            return push(p, make_global(p, v->s, v->n, w->s, w->n));
        case 'Q': /* BINPERSID */
            if ((v = pop(p, at)) == NULL) {
                return TS_EFORMAT;
            }
            return push(p, persistent_load(p, v, at));
        case 'R': /* REDUCE */
            if ((w = pop(p, at)) == NULL || (v = pop(p, at)) == NULL) {
                return TS_EFORMAT;
            }
            return push(p, reduce(p, v, w, at, 0));
        case 0x81: /* NEWOBJ */
            if ((w = pop(p, at)) == NULL || (v = pop(p, at)) == NULL) {
                return TS_EFORMAT;
            }
            return push(p, opaque(p, v, w));
        case 0x92: /* NEWOBJ_EX */
            if ((x = pop(p, at)) == NULL || (w = pop(p, at)) == NULL
                || (v = pop(p, at)) == NULL) {
                return TS_EFORMAT;
            }
            if ((v = opaque(p, v, w)) == NULL || pv_append(p, v, x) != TS_OK) {
                return p->err->code;
            }
            return push(p, v);
        case 'b': /* BUILD */
            if ((w = pop(p, at)) == NULL || (v = top(p, at)) == NULL) {
                return TS_EFORMAT;
            }
            /* state of an object is kept (its tensors are found); a
             * tensor's or dict's state is left */
            if (v->kind == PV_OBJECT) {
                return pv_append(p, v, w);
            }
            return TS_OK;
        case '0': /* POP */
            if (p->nstack == 0) {
                return ck_pk_fail(p, at, "pop from an empty stack", NULL);
            }
            p->nstack--;
            return TS_OK;
        case '1': { /* POP_MARK */
            long m = find_mark(p, at);
            if (m < 0) {
                return TS_EFORMAT;
            }
            p->nstack = (size_t)m;
            return TS_OK;
        }
        case '2': /* DUP */
            return (v = top(p, at)) ? push(p, v) : TS_EFORMAT;
        default: {
            char code[8];
            snprintf(code, sizeof code, "0x%02x", *b);
            return ck_pk_fail(
                p, at, "an opcode this reader does not run: ", code);
        }
    }
}

/* ---- entry point ---- */

int
ck_unpickle(ck_set *set,
            const ck_source *src,
            const char *what,
            const uint8_t *data,
            size_t len,
            uint64_t base,
            int file,
            size_t *end,
            bool *truncated,
            ts_error *err)
{
    pk p;
    bool stop = false;
    int rc = TS_OK;
    memset(&p, 0, sizeof p);
    p.set = set;
    p.src = src;
    p.what = what;
    p.data = data;
    p.len = len;
    p.base = base;
    p.file = file;
    p.err = err;
    p.global_index = json_object();
    p.storage_index = json_object();
    if (p.global_index == NULL || p.storage_index == NULL) {
        json_decref(p.global_index);
        json_decref(p.storage_index);
        return ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    /* the globals already named (an earlier pickle of the file) */
    {
        size_t i;
        json_t *row;
        json_array_foreach(set->globals, i, row)
        {
            if (json_object_set(
                    p.global_index,
                    json_string_value(json_object_get(row, "name")),
                    row)
                != 0) {
                rc = ck_pk_nomem(&p);
                goto done;
            }
        }
    }
    while (!stop) {
        if ((rc = step(&p, &stop)) != TS_OK) {
            goto done;
        }
    }
    if (p.nstack != 1 || p.stack[0] == &ck_pk_mark) {
        rc = ck_pk_fail(&p,
                        p.pos - 1,
                        "STOP with a stack that does not hold "
                        "one value",
                        NULL);
        goto done;
    }
    *end = p.pos;
    rc = ck_pk_name_tensors(&p, p.stack[0]);
done:
    if (truncated != NULL) {
        *truncated = p.truncated;
    }
    free(p.stack);
    free(p.memo);
    pk_free_values(&p);
    json_decref(p.global_index);
    json_decref(p.storage_index);
    return rc;
}

/* The first value of a pickle, for the legacy format's small pickles: an
 * integer (*kind 0), or a list of text keys copied into *keys (*kind 1). */
int
ck_unpickle_value(const ck_source *src,
                  const char *what,
                  const uint8_t *data,
                  size_t len,
                  uint64_t base,
                  ck_pickle_value *out,
                  ts_error *err)
{
    pk p;
    bool stop = false;
    int rc = TS_OK;
    ck_set dummy;
    memset(&p, 0, sizeof p);
    memset(out, 0, sizeof *out);
    if (ck_set_init(&dummy, err) != TS_OK) {
        return err->code;
    }
    p.set = &dummy;
    p.src = src;
    p.what = what;
    p.data = data;
    p.len = len;
    p.base = base;
    p.err = err;
    p.global_index = json_object();
    p.storage_index = json_object();
    if (p.global_index == NULL || p.storage_index == NULL) {
        json_decref(p.global_index);
        json_decref(p.storage_index);
        ck_set_clear(&dummy);
        return ts_error_set(err, TS_ENOMEM, "out of memory");
    }
    while (!stop) {
        if ((rc = step(&p, &stop)) != TS_OK) {
            out->truncated = p.truncated;
            goto done;
        }
    }
    out->end = p.pos;
    if (p.nstack != 1 || p.stack[0] == &ck_pk_mark) {
        rc = ck_pk_fail(&p,
                        p.pos - 1,
                        "STOP with a stack that does not hold "
                        "one value",
                        NULL);
        goto done;
    }
    {
        const pv *v = p.stack[0];
        if (v->kind == PV_INT) {
            out->kind = CK_PICKLED_INT;
            out->i = v->i;
        }
        else if (v->kind == PV_LIST) {
            out->kind = CK_PICKLED_KEYS;
            out->keys = json_array();
            if (out->keys == NULL) {
                rc = ck_pk_nomem(&p);
                goto done;
            }
            for (size_t k = 0; k < v->nitems; k++) {
                const pv *key = v->items[k];
                if (key->kind != PV_STR || !ck_utf8(key->s, key->n)) {
                    rc = ck_pk_fail(&p,
                                    0,
                                    "a storage key list of other than "
                                    "text",
                                    NULL);
                    goto done;
                }
                if (json_array_append_new(out->keys,
                                          json_stringn(key->s, key->n))
                    != 0) {
                    rc = ck_pk_nomem(&p);
                    goto done;
                }
            }
        }
        else {
            out->kind =
                v->kind == PV_BIGINT ? CK_PICKLED_BIGINT : CK_PICKLED_OTHER;
            if (v->kind == PV_BIGINT && v->n <= sizeof out->big) {
                memcpy(out->big, v->s, v->n);
                out->nbig = v->n;
            }
        }
    }
done:
    if (rc != TS_OK) {
        json_decref(out->keys);
        out->keys = NULL;
    }
    free(p.stack);
    free(p.memo);
    pk_free_values(&p);
    json_decref(p.global_index);
    json_decref(p.storage_index);
    ck_set_clear(&dummy);
    return rc;
}
