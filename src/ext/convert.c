/* JSON value trees <-> Python objects (reports are built straight into
 * Python objects through an emitter), and the one translation of engine
 * statuses into exceptions (convert.h has the table). */
#include <math.h>
#include <pthread.h>

#include "convert.h"

#include "torchscan/emit.h"

/* Reports repeat a small vocabulary (keys, statuses, units, dtypes): one
 * str object per distinct short text instead of one per occurrence, whose
 * hash Python then computes once. Open addressing on an FNV-1a hash of the
 * bytes; when the probed slots are all taken, the first is replaced. The
 * table lives in the module state, across conversions. */
#define STR_CACHE_SIZE 512
#define STR_CACHE_MAX_LEN 40

typedef struct str_slot {
    PyObject *obj;    /* strong, or NULL: free slot */
    const char *utf8; /* obj's own UTF-8 buffer */
    size_t len;
    uint32_t hash;
} str_slot;

/* Shared JSON subtrees (the engine shares one record between the layer
 * calls that saw the same kind of tensor) are converted once per
 * conversion; later occurrences are deep copies of that first result, which
 * clone dict key tables instead of hashing every key again. */
#define TREE_MEMO_SIZE 256

typedef struct tree_slot {
    json_t *json;  /* strong: its address cannot be reused meanwhile */
    PyObject *obj; /* strong */
} tree_slot;

struct tsx_strings {
    str_slot items[STR_CACHE_SIZE];
};

/* Within one conversion the text it reads does not move or change (JSON
 * trees are held; emitter text stays valid until the emission ends, see
 * torchscan/emit.h): text met again at the same address is the same str,
 * found without hashing or comparing its bytes. Direct-mapped. */
#define ADDR_MEMO_BITS 10
#define ADDR_MEMO_SIZE (1u << ADDR_MEMO_BITS)

typedef struct addr_slot {
    const char *text;
    PyObject *obj; /* strong */
} addr_slot;

typedef struct str_cache {
    struct tsx_strings *strings;  /* the module state's */
    uintptr_t stack_lo, stack_hi; /* see thread_stack */
    tree_slot trees[TREE_MEMO_SIZE];
    addr_slot addrs[ADDR_MEMO_SIZE];
} str_cache;

static void
strings_clear(struct tsx_strings *strings)
{
    for (size_t i = 0; i < STR_CACHE_SIZE; i++) {
        Py_CLEAR(strings->items[i].obj);
    }
}

static void pybuilder_free(tsx_pybuilder *b);

void
tsx_convert_free(tsx_state *st)
{
    pybuilder_free(st->spare_builder);
    st->spare_builder = NULL;
    if (st->strings != NULL) {
        strings_clear(st->strings);
        PyMem_Free(st->strings);
        st->strings = NULL;
    }
}

/* A conversion's cache, with the state's string table. */
static str_cache *
str_cache_new(tsx_state *st)
{
    str_cache *cache;
    if (st->strings == NULL) {
        st->strings = PyMem_Calloc(1, sizeof(struct tsx_strings));
        if (st->strings == NULL) {
            return NULL;
        }
    }
    cache = PyMem_Calloc(1, sizeof(str_cache));
    if (cache != NULL) {
        cache->strings = st->strings;
    }
    return cache;
}

/* Forgets what one conversion remembered (its trees and text addresses). */
static void
str_cache_reset(str_cache *cache)
{
    for (size_t i = 0; i < TREE_MEMO_SIZE; i++) {
        json_decref(cache->trees[i].json);
        cache->trees[i].json = NULL;
        Py_CLEAR(cache->trees[i].obj);
    }
    for (size_t i = 0; i < ADDR_MEMO_SIZE; i++) {
        cache->addrs[i].text = NULL;
        Py_CLEAR(cache->addrs[i].obj);
    }
}

static void
str_cache_free(str_cache *cache)
{
    if (cache == NULL) {
        return;
    }
    str_cache_reset(cache);
    PyMem_Free(cache);
}

/* A copy of a converted tree: new dicts and lists all the way down, shared
 * immutable leaves (str, int, float, bool, None). */
static PyObject *
deep_copy(PyObject *obj)
{
    PyObject *copy;
    if (PyDict_CheckExact(obj)) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        copy = PyDict_Copy(obj);
        while (copy != NULL && PyDict_Next(obj, &pos, &key, &value)) {
            if (PyDict_CheckExact(value) || PyList_CheckExact(value)) {
                PyObject *inner = deep_copy(value);
                if (inner == NULL || PyDict_SetItem(copy, key, inner) < 0) {
                    Py_XDECREF(inner);
                    Py_CLEAR(copy);
                    break;
                }
                Py_DECREF(inner);
            }
        }
        return copy;
    }
    if (PyList_CheckExact(obj)) {
        Py_ssize_t n = PyList_GET_SIZE(obj);
        copy = PyList_New(n);
        for (Py_ssize_t i = 0; copy != NULL && i < n; i++) {
            PyObject *item = PyList_GET_ITEM(obj, i);
            item = (PyDict_CheckExact(item) || PyList_CheckExact(item))
                       ? deep_copy(item)
                       : Py_NewRef(item);
            if (item == NULL) {
                Py_CLEAR(copy);
                break;
            }
            PyList_SET_ITEM(copy, i, item);
        }
        return copy;
    }
    return Py_NewRef(obj);
}

static PyObject *
cached_str(str_cache *cache, const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    str_slot *slot = NULL;
    if (cache == NULL || len > STR_CACHE_MAX_LEN) {
        return PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "strict");
    }
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    }
    for (uint32_t probe = 0; probe < 8; probe++) {
        str_slot *at =
            &cache->strings->items[(h + probe) & (STR_CACHE_SIZE - 1)];
        if (at->obj == NULL) {
            slot = at;
            break;
        }
        if (at->hash == h && at->len == len && memcmp(at->utf8, s, len) == 0) {
            return Py_NewRef(at->obj);
        }
    }
    if (slot == NULL) {
        slot = &cache->strings->items[h & (STR_CACHE_SIZE - 1)];
        Py_CLEAR(slot->obj);
    }
    slot->obj = PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "strict");
    slot->utf8 = slot->obj ? PyUnicode_AsUTF8(slot->obj) : NULL;
    if (slot->utf8 == NULL) {
        Py_CLEAR(slot->obj);
        return NULL;
    }
    slot->len = len;
    slot->hash = h;
    return Py_NewRef(slot->obj);
}

/* This thread's stack, [lo, hi); lo == hi when it cannot be known. Text
 * on the stack is a frame's buffer whose address another call may reuse
 * with other text during the same conversion: it is never remembered by
 * address, whatever emit.h promises. */
static void
thread_stack(uintptr_t *lo, uintptr_t *hi)
{
    static _Thread_local uintptr_t known_lo, known_hi;
    static _Thread_local bool known;
    if (!known) {
        known = true;
#if defined(__GLIBC__)
        pthread_attr_t attr;
        void *addr;
        size_t size;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
                known_lo = (uintptr_t)addr;
                known_hi = (uintptr_t)addr + size;
            }
            pthread_attr_destroy(&attr);
        }
#endif
    }
    *lo = known_lo;
    *hi = known_hi;
}

/* The str of text that stays put during this conversion; `len` is its
 * length, or -1 when it is NUL-terminated (measured on a miss only). */
static PyObject *
text_str(str_cache *cache, const char *s, Py_ssize_t len)
{
    /* Fibonacci hashing: literals a few bytes apart land far apart */
    uint64_t h = (uint64_t)(uintptr_t)s * 0x9E3779B97F4A7C15ull;
    addr_slot *slot = &cache->addrs[h >> (64 - ADDR_MEMO_BITS)];
    PyObject *obj;
    if (slot->text == s) {
        return Py_NewRef(slot->obj);
    }
    obj = cached_str(cache, s, len < 0 ? strlen(s) : (size_t)len);
    /* text on the stack, or with the stack unknown, is found by content */
    if (obj != NULL && cache->stack_lo != cache->stack_hi
        && (uintptr_t)s - cache->stack_lo
               >= cache->stack_hi - cache->stack_lo) {
        Py_XSETREF(slot->obj, Py_NewRef(obj));
        slot->text = s;
    }
    return obj;
}

static PyObject *from_json(const json_t *value, str_cache *cache);

static int pyb_tree(void *ctx, const json_t *value);

PyObject *
tsx_from_json(tsx_state *st, const json_t *value)
{
    ts_emitter e;
    tsx_pybuilder *b = tsx_pybuilder_new(&e, st);
    if (b == NULL) {
        return NULL;
    }
    pyb_tree(b, value);
    return tsx_pybuilder_finish(b);
}

static PyObject *convert_json(const json_t *value, str_cache *cache);

static PyObject *
from_json(const json_t *value, str_cache *cache)
{
    tree_slot *slot = NULL;
    PyObject *result;
    if (cache != NULL && value->refcount > 1
        && (json_is_object(value) || json_is_array(value))) {
        uintptr_t h = (uintptr_t)value >> 4;
        slot = &cache->trees[(h ^ (h >> 8)) % TREE_MEMO_SIZE];
        if (slot->json == value) {
            return deep_copy(slot->obj);
        }
    }
    result = convert_json(value, cache);
    if (slot != NULL && result != NULL) {
        json_decref(slot->json);
        Py_XSETREF(slot->obj, Py_NewRef(result));
        slot->json = json_incref((json_t *)value);
    }
    return result;
}

static PyObject *
convert_json(const json_t *value, str_cache *cache)
{
    PyObject *result = NULL;
    switch (json_typeof(value)) {
        case JSON_OBJECT: {
            const char *key;
            size_t key_len;
            json_t *item;
            result = PyDict_New();
            if (result == NULL) {
                return NULL;
            }
            json_object_keylen_foreach((json_t *)value, key, key_len, item)
            {
                PyObject *v = from_json(item, cache);
                PyObject *k =
                    v ? text_str(cache, key, (Py_ssize_t)key_len) : NULL;
                int rc = (k && v) ? PyDict_SetItem(result, k, v) : -1;
                Py_XDECREF(k);
                Py_XDECREF(v);
                if (rc < 0) {
                    Py_CLEAR(result);
                    return NULL;
                }
            }
            return result;
        }
        case JSON_ARRAY: {
            size_t n = json_array_size(value);
            result = PyList_New((Py_ssize_t)n);
            if (result == NULL) {
                return NULL;
            }
            for (size_t i = 0; i < n; i++) {
                PyObject *v = from_json(json_array_get(value, i), cache);
                if (v == NULL) {
                    Py_CLEAR(result);
                    return NULL;
                }
                PyList_SET_ITEM(result, (Py_ssize_t)i, v);
            }
            return result;
        }
        case JSON_STRING:
            return text_str(cache,
                            json_string_value(value),
                            (Py_ssize_t)json_string_length(value));
        case JSON_INTEGER:
            return PyLong_FromLongLong(json_integer_value(value));
        case JSON_REAL:
            return PyFloat_FromDouble(json_real_value(value));
        case JSON_TRUE:
            Py_RETURN_TRUE;
        case JSON_FALSE:
            Py_RETURN_FALSE;
        case JSON_NULL:
        default:
            Py_RETURN_NONE;
    }
}

/* Python -> JSON remembers where it is (a key or an index per level, no
 * text) and writes the path only when it refuses a value, so that the
 * refusal names where it is, as the engine's report check does:
 * "before: layers[1].metrics.macs.value: an integer outside the 64-bit
 * range". */
#define CONV_PATH_SIZE 256
#define CONV_MAX_DEPTH 200

typedef struct conv_frame {
    const char *key; /* an object member, or NULL for a list index */
    Py_ssize_t index;
} conv_frame;

/* Reports repeat leaves (statuses, operator and class names, small counts):
 * a conversion shares one JSON value per short text (a table by content)
 * and per small integer.
 * JSON leaves are never changed in place by the engine, so a shared leaf
 * reads as its copies would, and the tree costs fewer allocations. */
#define LEAF_MEMO_SIZE 512 /* a power of two */
#define LEAF_TEXT_MAX 64   /* longer texts are not shared */
#define SMALL_INT_MAX 1024 /* 0 ... SMALL_INT_MAX - 1 are shared */

typedef struct conv_ctx {
    const char *what;
    conv_frame frames[CONV_MAX_DEPTH + 1];
    json_t *texts[LEAF_MEMO_SIZE]; /* strong, NULL until met */
    json_t *ints[SMALL_INT_MAX];   /* strong, NULL until met */
} conv_ctx;

/* The path of the first `depth` levels ("" at the top), as subscripts
 * without brackets around keys; "..." when it does not fit. */
static void
conv_path(const conv_ctx *c, int depth, char path[CONV_PATH_SIZE])
{
    size_t len = 0;
    path[0] = '\0';
    for (int d = 0; d < depth; d++) {
        size_t room = CONV_PATH_SIZE - len;
        const conv_frame *f = &c->frames[d];
        int n = f->key != NULL
                    ? snprintf(path + len, room, d == 0 ? "%s" : ".%s", f->key)
                    : snprintf(path + len, room, "[%zd]", f->index);
        if (n < 0 || (size_t)n >= room) {
            memcpy(path + CONV_PATH_SIZE - 4, "...", 4);
            return;
        }
        len += (size_t)n;
    }
}

/* Raises type with "<what>: <path>: <problem>" (no path at the top). */
static json_t *
conv_fail(const conv_ctx *c, int depth, PyObject *type, const char *problem)
{
    char path[CONV_PATH_SIZE];
    conv_path(c, depth, path);
    if (path[0] != '\0') {
        PyErr_Format(type, "%s: %s: %s", c->what, path, problem);
    }
    else {
        PyErr_Format(type, "%s: %s", c->what, problem);
    }
    return NULL;
}

static json_t *to_json(PyObject *obj, conv_ctx *c, int depth);

/* A new JSON leaf, or NULL with MemoryError when jansson could not make it
 * (jansson sets no Python exception). */
static json_t *
leaf_or_nomemory(json_t *leaf)
{
    return leaf != NULL ? leaf : (json_t *)PyErr_NoMemory();
}

static json_t *
int_to_json(PyObject *obj, conv_ctx *c, int depth)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (overflow) {
        return conv_fail(c,
                         depth,
                         PyExc_ValueError,
                         "an integer outside the 64-bit range (past 2^63)");
    }
    if (v >= 0 && v < SMALL_INT_MAX) {
        json_t **slot = &c->ints[v];
        if (*slot == NULL && (*slot = json_integer(v)) == NULL) {
            return (json_t *)PyErr_NoMemory();
        }
        return json_incref(*slot);
    }
    return leaf_or_nomemory(json_integer(v));
}

static json_t *
text_to_json(PyObject *obj, conv_ctx *c, int depth)
{
    Py_ssize_t size;
    json_t *result;
    size_t slot = 0;
    const char *s = PyUnicode_AsUTF8AndSize(obj, &size);
    if (s == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeError)) {
            PyErr_Clear();
            return conv_fail(
                c, depth, PyExc_ValueError, "invalid text (a surrogate)");
        }
        return NULL;
    }
    if (memchr(s, '\0', (size_t)size) != NULL) {
        /* the engine reads text as C strings: it would be cut short */
        return conv_fail(
            c, depth, PyExc_ValueError, "text with a NUL character");
    }
    if (size <= LEAF_TEXT_MAX) {
        uint32_t hash = 2166136261u; /* FNV-1a */
        const json_t *seen;
        for (Py_ssize_t k = 0; k < size; k++) {
            hash = (hash ^ (unsigned char)s[k]) * 16777619u;
        }
        slot = hash & (LEAF_MEMO_SIZE - 1);
        seen = c->texts[slot];
        if (seen != NULL && json_string_length(seen) == (size_t)size
            && memcmp(json_string_value(seen), s, (size_t)size) == 0) {
            return json_incref((json_t *)seen);
        }
    }
    /* Python's UTF-8 of a str without surrogates is valid UTF-8 */
    result = json_stringn_nocheck(s, (size_t)size);
    if (result == NULL) {
        return (json_t *)PyErr_NoMemory();
    }
    if (size <= LEAF_TEXT_MAX) {
        json_decref(c->texts[slot]);
        c->texts[slot] = json_incref(result);
    }
    return result;
}

static json_t *
dict_to_json(PyObject *obj, conv_ctx *c, int depth)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    json_t *result = json_object();
    if (result == NULL) {
        return (json_t *)PyErr_NoMemory();
    }
    while (PyDict_Next(obj, &pos, &key, &value)) {
        Py_ssize_t size;
        const char *k;
        json_t *v = NULL;
        if (!PyUnicode_Check(key)) {
            char path[CONV_PATH_SIZE];
            conv_path(c, depth, path);
            PyErr_Format(PyExc_ValueError,
                         "%s%s%s: a non-string key (%.100s)",
                         c->what,
                         path[0] != '\0' ? ": " : "",
                         path,
                         Py_TYPE(key)->tp_name);
            json_decref(result);
            return NULL;
        }
        k = PyUnicode_AsUTF8AndSize(key, &size);
        if (k == NULL && PyErr_ExceptionMatches(PyExc_UnicodeError)) {
            PyErr_Clear();
            conv_fail(c,
                      depth,
                      PyExc_ValueError,
                      "a key with invalid text (a surrogate)");
        }
        else if (k != NULL && memchr(k, '\0', (size_t)size) != NULL) {
            conv_fail(
                c, depth, PyExc_ValueError, "a key with a NUL character");
            k = NULL;
        }
        if (k != NULL) {
            c->frames[depth].key = k;
            v = to_json(value, c, depth + 1);
        }
        if (v == NULL
            || json_object_setn_new_nocheck(result, k, (size_t)size, v)) {
            if (v != NULL && !PyErr_Occurred()) {
                PyErr_NoMemory();
            }
            json_decref(result);
            return NULL;
        }
    }
    return result;
}

static json_t *
list_to_json(PyObject *obj, conv_ctx *c, int depth)
{
    PyObject *seq = PySequence_Fast(obj, "");
    json_t *result;
    Py_ssize_t n;
    if (seq == NULL) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    result = json_array();
    for (Py_ssize_t i = 0; result != NULL && i < n; i++) {
        json_t *v;
        c->frames[depth].key = NULL;
        c->frames[depth].index = i;
        v = to_json(PySequence_Fast_GET_ITEM(seq, i), c, depth + 1);
        if (v == NULL || json_array_append_new(result, v)) {
            if (v != NULL && !PyErr_Occurred()) {
                PyErr_NoMemory();
            }
            json_decref(result);
            result = NULL;
        }
    }
    Py_DECREF(seq);
    if (result == NULL && !PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    return result;
}

static json_t *
to_json(PyObject *obj, conv_ctx *c, int depth)
{
    if (depth >= CONV_MAX_DEPTH) {
        return conv_fail(
            c, depth, PyExc_ValueError, "nested too deeply (or cyclic)");
    }
    if (obj == Py_None) {
        return json_null();
    }
    if (PyBool_Check(obj)) {
        return json_boolean(obj == Py_True);
    }
    if (PyLong_Check(obj)) {
        return int_to_json(obj, c, depth);
    }
    if (PyFloat_Check(obj)) {
        double d = PyFloat_AS_DOUBLE(obj);
        if (!isfinite(d)) {
            return conv_fail(c,
                             depth,
                             PyExc_ValueError,
                             "a non-finite number (NaN or infinity)");
        }
        return leaf_or_nomemory(json_real(d));
    }
    if (PyUnicode_Check(obj)) {
        return text_to_json(obj, c, depth);
    }
    if (PyDict_Check(obj)) {
        return dict_to_json(obj, c, depth);
    }
    if (PyList_Check(obj) || PyTuple_Check(obj)) {
        return list_to_json(obj, c, depth);
    }
    {
        char path[CONV_PATH_SIZE];
        conv_path(c, depth, path);
        PyErr_Format(PyExc_ValueError,
                     "%s%s%s: a non-JSON value of type %.100s",
                     c->what,
                     path[0] != '\0' ? ": " : "",
                     path,
                     Py_TYPE(obj)->tp_name);
    }
    return NULL;
}

json_t *
tsx_to_json(PyObject *obj, const char *what)
{
    conv_ctx *c = PyMem_Calloc(1, sizeof *c);
    json_t *result;
    if (c == NULL) {
        return (json_t *)PyErr_NoMemory();
    }
    c->what = what;
    result = to_json(obj, c, 0);
    for (size_t k = 0; k < LEAF_MEMO_SIZE; k++) {
        json_decref(c->texts[k]);
    }
    for (size_t k = 0; k < SMALL_INT_MAX; k++) {
        json_decref(c->ints[k]);
    }
    PyMem_Free(c);
    return result;
}

PyObject *
tsx_raise_status(int status, const char *message)
{
    PyObject *type = PyExc_RuntimeError;
    switch (status) {
        case TS_OK:
            PyErr_SetString(PyExc_SystemError,
                            "torchscan raised for an engine success");
            return NULL;
        case TS_ENOMEM:
            return PyErr_NoMemory();
        case TS_EINVAL:
        case TS_EFORMAT:
            type = PyExc_ValueError;
            break;
        case TS_EOVERFLOW:
            type = PyExc_OverflowError;
            break;
        case TS_EUNSUPPORTED:
            type = PyExc_NotImplementedError;
            break;
        case TS_EIO:
            type = PyExc_OSError;
            break;
        default:
            break;
    }
    PyErr_SetString(type,
                    message != NULL && message[0] ? message : "engine error");
    return NULL;
}

PyObject *
tsx_raise(const ts_error *err)
{
    return tsx_raise_status(err->code, err->message);
}

/* ---- an emitter that builds Python objects directly ------------------- */

#define PYB_MAX_DEPTH 256

/* Open containers keep their items on one stack (a dict's keys and values
 * alternate) and are built when they close: lists at their final size, and
 * dicts with all their items known, which the record memo needs.
 *
 * Reports repeat whole records (a metric of the same value in many rows,
 * empty parameter counts): a dict whose values are all leaves (str, int,
 * bool, None: no containers) is remembered by the identity of its keys and
 * values, and a later equal one is built as a copy of it, which clones the
 * key table instead of inserting each item. Integers are memoized by value
 * during the build, so that equal numbers are the same object. */
#define RECORD_MEMO_SIZE 256
#define RECORD_MAX_ITEMS 16 /* keys and values */
#define INT_MEMO_SIZE 256

typedef struct record_slot {
    PyObject *dict; /* strong */
    size_t nitems;
    PyObject *items[RECORD_MAX_ITEMS]; /* borrowed from dict */
} record_slot;

typedef struct int_slot {
    int64_t value;
    PyObject *obj; /* strong */
} int_slot;

struct tsx_pybuilder {
    tsx_state *st;
    str_cache *cache;
    record_slot records[RECORD_MEMO_SIZE];
    int_slot ints[INT_MEMO_SIZE];
    PyObject **items; /* owned references */
    size_t nitems, cap;
    size_t base[PYB_MAX_DEPTH]; /* first item of each open container */
    bool is_dict[PYB_MAX_DEPTH];
    bool has_key[PYB_MAX_DEPTH]; /* a dict's pending key is on the stack */
    int depth;
    PyObject *result;
    bool failed; /* a Python exception is set */
    int gc_was_enabled;
};

static int
pyb_fail(tsx_pybuilder *b, const char *message)
{
    if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_RuntimeError, message);
    }
    b->failed = true;
    return -1;
}

static int
pyb_push(tsx_pybuilder *b, PyObject *obj)
{
    if (b->nitems == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        PyObject **items = PyMem_Realloc(b->items, cap * sizeof *items);
        if (items == NULL) {
            Py_DECREF(obj);
            PyErr_NoMemory();
            b->failed = true;
            return -1;
        }
        b->items = items;
        b->cap = cap;
    }
    b->items[b->nitems++] = obj;
    return 0;
}

/* Places a new value (stolen) into the open container or as result. */
static int
pyb_place(tsx_pybuilder *b, PyObject *value)
{
    if (value == NULL || b->failed) {
        Py_XDECREF(value);
        b->failed = true;
        return -1;
    }
    if (b->depth == 0) {
        Py_XSETREF(b->result, value);
        return 0;
    }
    if (b->is_dict[b->depth - 1]) {
        if (!b->has_key[b->depth - 1]) {
            Py_DECREF(value);
            return pyb_fail(b, "malformed report stream");
        }
        b->has_key[b->depth - 1] = false;
    }
    return pyb_push(b, value);
}

static int
pyb_open(tsx_pybuilder *b, bool is_dict)
{
    if (b->failed || b->depth == PYB_MAX_DEPTH) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RecursionError, "report nested too deeply");
        }
        b->failed = true;
        return -1;
    }
    b->base[b->depth] = b->nitems;
    b->is_dict[b->depth] = is_dict;
    b->has_key[b->depth] = false;
    b->depth++;
    return 0;
}

/* The memo slot of a leaf-only dict of `n` items at `items`, or NULL when
 * it holds a container or is too large to remember. */
static record_slot *
record_slot_of(tsx_pybuilder *b, PyObject **items, size_t n)
{
    uint64_t h = n;
    if (n > RECORD_MAX_ITEMS) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (PyDict_CheckExact(items[i]) || PyList_CheckExact(items[i])) {
            return NULL;
        }
        h = (h ^ (uint64_t)(uintptr_t)items[i]) * 0x100000001B3ull;
    }
    return &b->records[(h ^ (h >> 29)) % RECORD_MEMO_SIZE];
}

/* The container of the items above `base`, which it takes over. */
static PyObject *
pyb_build(tsx_pybuilder *b, size_t base, bool is_dict)
{
    size_t n = b->nitems - base;
    PyObject *container;
    if (is_dict) {
        record_slot *slot = record_slot_of(b, &b->items[base], n);
        if (slot != NULL && slot->dict != NULL && slot->nitems == n
            && memcmp(slot->items, &b->items[base], n * sizeof(PyObject *))
                   == 0) {
            container = PyDict_Copy(slot->dict);
            for (size_t i = base; i < b->nitems; i++) {
                Py_DECREF(b->items[i]);
            }
            b->nitems = base;
            return container;
        }
        /* sized for its items: a row's dicts outgrow PyDict_New's table
         * (callgrind: -1.5% of structure mode's overhead on (a)) */
        container = _PyDict_NewPresized((Py_ssize_t)(n / 2));
        for (size_t i = base; container != NULL && i + 1 < b->nitems; i += 2) {
            if (PyDict_SetItem(container, b->items[i], b->items[i + 1]) < 0) {
                Py_CLEAR(container);
            }
        }
        if (slot != NULL && container != NULL) {
            /* the dict holds the items the slot points at */
            Py_XSETREF(slot->dict, Py_NewRef(container));
            slot->nitems = n;
            memcpy(slot->items, &b->items[base], n * sizeof(PyObject *));
        }
        for (size_t i = base; i < b->nitems; i++) {
            Py_DECREF(b->items[i]);
        }
    }
    else {
        container = PyList_New((Py_ssize_t)n);
        for (size_t i = base; i < b->nitems; i++) {
            if (container != NULL) {
                PyList_SET_ITEM(
                    container, (Py_ssize_t)(i - base), b->items[i]);
            }
            else {
                Py_DECREF(b->items[i]);
            }
        }
    }
    b->nitems = base;
    return container;
}

static int
pyb_close(void *ctx)
{
    tsx_pybuilder *b = ctx;
    int d;
    if (b->depth == 0 || b->failed) {
        b->failed = true;
        return -1;
    }
    d = --b->depth;
    if (b->has_key[d]) {
        return pyb_fail(b, "malformed report stream");
    }
    return pyb_place(b, pyb_build(b, b->base[d], b->is_dict[d]));
}

static int
pyb_begin_object(void *ctx)
{
    return pyb_open(ctx, true);
}

static int
pyb_begin_array(void *ctx)
{
    return pyb_open(ctx, false);
}

static int
pyb_key(void *ctx, const char *key)
{
    tsx_pybuilder *b = ctx;
    if (b->depth == 0 || b->failed || !b->is_dict[b->depth - 1]
        || b->has_key[b->depth - 1]) {
        return pyb_fail(b, "malformed report stream");
    }
    PyObject *k = text_str(b->cache, key, -1);
    if (k == NULL) {
        b->failed = true;
        return -1;
    }
    if (pyb_push(b, k) < 0) {
        return -1;
    }
    b->has_key[b->depth - 1] = true;
    return 0;
}

static int
pyb_string(void *ctx, const char *value)
{
    tsx_pybuilder *b = ctx;
    return pyb_place(b, text_str(b->cache, value, -1));
}

static int
pyb_integer(void *ctx, int64_t value)
{
    tsx_pybuilder *b = ctx;
    int_slot *slot = &b->ints[((uint64_t)value * 0x9E3779B97F4A7C15ull) >> 56];
    if (slot->obj == NULL || slot->value != value) {
        PyObject *obj = PyLong_FromLongLong(value);
        if (obj == NULL) {
            return pyb_place(b, NULL);
        }
        Py_XSETREF(slot->obj, obj);
        slot->value = value;
    }
    return pyb_place(b, Py_NewRef(slot->obj));
}

static int
pyb_real(void *ctx, double value)
{
    return pyb_place(ctx, PyFloat_FromDouble(value));
}

static int
pyb_boolean(void *ctx, bool value)
{
    return pyb_place(ctx, PyBool_FromLong(value));
}

static int
pyb_null(void *ctx)
{
    return pyb_place(ctx, Py_NewRef(Py_None));
}

static int
pyb_tree(void *ctx, const json_t *value)
{
    tsx_pybuilder *b = ctx;
    return pyb_place(b, from_json(value, b->cache));
}

/* Builders are large (their memo tables) and one is in use at a time: the
 * state keeps one between reports, emptied, instead of allocating and
 * clearing a new one for every report. */
tsx_pybuilder *
tsx_pybuilder_new(ts_emitter *e, tsx_state *st)
{
    tsx_pybuilder *b = st->spare_builder;
    if (b != NULL) {
        st->spare_builder = NULL;
    }
    else {
        b = PyMem_Calloc(1, sizeof(tsx_pybuilder));
        if (b == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        b->st = st;
        b->cache = str_cache_new(st);
        if (b->cache == NULL) {
            PyMem_Free(b);
            PyErr_NoMemory();
            return NULL;
        }
    }
    thread_stack(&b->cache->stack_lo, &b->cache->stack_hi);
    /* Thousands of fresh containers, none in a cycle: no collection of
     * the torch heap while they are built. */
    b->gc_was_enabled = PyGC_Disable();
    e->ctx = b;
    e->begin_object = pyb_begin_object;
    e->end_object = pyb_close;
    e->begin_array = pyb_begin_array;
    e->end_array = pyb_close;
    e->key = pyb_key;
    e->string = pyb_string;
    e->integer = pyb_integer;
    e->real = pyb_real;
    e->boolean = pyb_boolean;
    e->null = pyb_null;
    e->tree = pyb_tree;
    return b;
}

/* Drops everything a build holds; the builder can serve again. */
static void
pybuilder_reset(tsx_pybuilder *b)
{
    for (size_t i = 0; i < b->nitems; i++) {
        Py_DECREF(b->items[i]);
    }
    b->nitems = 0;
    b->depth = 0;
    b->failed = false;
    for (size_t i = 0; i < RECORD_MEMO_SIZE; i++) {
        Py_CLEAR(b->records[i].dict);
        b->records[i].nitems = 0;
    }
    for (size_t i = 0; i < INT_MEMO_SIZE; i++) {
        Py_CLEAR(b->ints[i].obj);
    }
    Py_CLEAR(b->result);
    str_cache_reset(b->cache);
}

static void
pybuilder_free(tsx_pybuilder *b)
{
    if (b == NULL) {
        return;
    }
    pybuilder_reset(b);
    PyMem_Free(b->items);
    str_cache_free(b->cache);
    PyMem_Free(b);
}

PyObject *
tsx_pybuilder_finish(tsx_pybuilder *b)
{
    PyObject *result = NULL;
    if (!b->failed && b->depth == 0 && b->result != NULL) {
        result = b->result;
        b->result = NULL;
    }
    else if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_RuntimeError, "incomplete report stream");
    }
    pybuilder_reset(b);
    if (b->gc_was_enabled) {
        PyGC_Enable();
    }
    if (b->st->spare_builder == NULL) {
        b->st->spare_builder = b;
    }
    else {
        pybuilder_free(b);
    }
    return result;
}
