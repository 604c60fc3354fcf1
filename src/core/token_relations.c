/* Token relations (token_deps.h): the summary of a mask's values and the
 * four relation kinds with their union and composition. The relations of
 * each call are built from them in token_deps.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "torchscan/token_deps.h"

/* ---- masks ---------------------------------------------------------------
 */

typedef enum {
    ENTRY_KEEP = 0, /* False or finite: reweights at most */
    ENTRY_EXCLUDE,  /* True or -inf */
    ENTRY_NONFINITE /* NaN or +inf */
} entry_class;

/* An IEEE half or bfloat16 from its bits: exponent all ones is an infinity
 * (mantissa 0) or a NaN. */
static entry_class
classify_16(uint16_t bits, int mantissa_bits)
{
    unsigned exponent_mask =
        bits >> mantissa_bits & ((1u << (15 - mantissa_bits)) - 1u);
    unsigned mantissa = bits & ((1u << mantissa_bits) - 1u);
    if (exponent_mask != (1u << (15 - mantissa_bits)) - 1u) {
        return ENTRY_KEEP;
    }
    if (mantissa != 0) {
        return ENTRY_NONFINITE;
    }
    return bits & 0x8000u ? ENTRY_EXCLUDE : ENTRY_NONFINITE;
}

static entry_class
classify_real(double v)
{
    if (isnan(v)) {
        return ENTRY_NONFINITE;
    }
    if (isinf(v)) {
        return v < 0 ? ENTRY_EXCLUDE : ENTRY_NONFINITE;
    }
    return ENTRY_KEEP;
}

/* Elements are copied out (memcpy): the buffer owes no alignment. */
static entry_class
classify(const unsigned char *p, ts_mask_dtype dtype)
{
    uint16_t half;
    float f;
    double d;
    switch (dtype) {
        case TS_MASK_BOOL:
            return *p ? ENTRY_EXCLUDE : ENTRY_KEEP;
        case TS_MASK_FLOAT16:
            memcpy(&half, p, sizeof half);
            return classify_16(half, 10);
        case TS_MASK_BFLOAT16:
            memcpy(&half, p, sizeof half);
            return classify_16(half, 7);
        case TS_MASK_FLOAT32:
            memcpy(&f, p, sizeof f);
            return classify_real((double)f);
        case TS_MASK_FLOAT64:
        default:
            memcpy(&d, p, sizeof d);
            return classify_real(d);
    }
}

static int64_t
mask_itemsize(ts_mask_dtype dtype)
{
    switch (dtype) {
        case TS_MASK_BOOL:
            return 1;
        case TS_MASK_FLOAT16:
        case TS_MASK_BFLOAT16:
            return 2;
        case TS_MASK_FLOAT32:
            return 4;
        case TS_MASK_FLOAT64:
            return 8;
        default:
            return 0;
    }
}

int
ts_mask_scan(const ts_mask_buffer *buf, ts_mask_info *info)
{
    int64_t index[TS_MAX_DIMS] = {0};
    int64_t itemsize, extent = 0, off = 0;
    int ndim;
    if (buf == NULL || info == NULL || buf->ndim < 0 || buf->ndim > TS_MAX_DIMS
        || (itemsize = mask_itemsize(buf->dtype)) == 0) {
        return TS_EINVAL;
    }
    ndim = buf->ndim;
    /* the farthest element must be addressable in bytes */
    for (int d = 0; d < ndim; d++) {
        int64_t span;
        if (buf->dims[d] < 0 || buf->strides[d] < 0) {
            return TS_EINVAL;
        }
        if (buf->dims[d] > 0
            && (!ts_mul(buf->dims[d] - 1, buf->strides[d], &span)
                || !ts_add(extent, span, &extent))) {
            return TS_EINVAL;
        }
    }
    if (!ts_mul(extent, itemsize, &extent)) {
        return TS_EINVAL;
    }
    info->read = true;
    info->excludes = false;
    info->nonfinite = false;
    info->causal = ndim >= 2;
    for (int d = 0; d < ndim; d++) {
        if (buf->dims[d] == 0) {
            return TS_OK; /* no element: nothing excluded */
        }
    }
    if (buf->data == NULL) {
        return TS_EINVAL;
    }
    for (;;) {
        const unsigned char *p =
            (const unsigned char *)buf->data + off * itemsize;
        entry_class c = classify(p, buf->dtype);
        int d;
        if (c == ENTRY_NONFINITE) {
            /* refused whatever else the mask holds */
            info->nonfinite = true;
            info->causal = false;
            return TS_OK;
        }
        info->excludes |= c == ENTRY_EXCLUDE;
        if (info->causal
            && (c == ENTRY_EXCLUDE) != (index[ndim - 1] > index[ndim - 2])) {
            info->causal = false;
        }
        for (d = ndim - 1; d >= 0; d--) {
            off += buf->strides[d];
            if (++index[d] < buf->dims[d]) {
                break;
            }
            off -= buf->strides[d] * buf->dims[d];
            index[d] = 0;
        }
        if (d < 0) {
            return TS_OK;
        }
    }
}

/* ---- relations -----------------------------------------------------------
 * A relation gives each output position i an interval of source positions
 * [lo, hi) (empty when hi <= lo). Unions and compositions are computed
 * exactly at a few probe positions and the result fitted to one of the
 * four kinds; the fit is checked at every probe. Every interval end is a
 * piecewise affine function of i (slope 0 or 1) whose breaks lie at the
 * operands' first positions, limits and lengths, so probing each of those,
 * with its neighbours, checks the whole range. */

static int64_t
min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t
max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

typedef struct span {
    int64_t lo, hi;
} span;

static const span empty_span = {0, 0};

static bool
span_empty(span s)
{
    return s.hi <= s.lo;
}

static bool
span_equal(span a, span b)
{
    return span_empty(a) ? span_empty(b) : a.lo == b.lo && a.hi == b.hi;
}

/* The source interval output position i depends on. */
static span
rel_at(const ts_token_relation *r, int64_t i, int64_t src_len)
{
    span s = empty_span;
    if (r->kind == TS_TOKEN_NONE || i < r->first) {
        return s;
    }
    switch (r->kind) {
        case TS_TOKEN_SAME_POSITION:
            s.lo = min64(i, src_len);
            s.hi = min64(i + 1, src_len);
            break;
        case TS_TOKEN_PREFIX:
            s.hi = min64(min64(i + 1, r->limit), src_len);
            break;
        case TS_TOKEN_ALL:
            s.hi = min64(r->limit, src_len);
            break;
        default:
            break;
    }
    return span_empty(s) ? empty_span : s;
}

const char *
ts_token_kind_name(ts_token_kind kind)
{
    switch (kind) {
        case TS_TOKEN_SAME_POSITION:
            return "same_position";
        case TS_TOKEN_PREFIX:
            return "prefix";
        case TS_TOKEN_ALL:
            return "all";
        case TS_TOKEN_NONE:
        default:
            return "none";
    }
}

ts_token_relation
ts_token_canonical(ts_token_relation r, int64_t out_len, int64_t src_len)
{
    static const ts_token_relation none = {TS_TOKEN_NONE, 0, 0};
    int64_t reach; /* outputs with a dependency end before it */
    r.first = max64(r.first, 0);
    switch (r.kind) {
        case TS_TOKEN_SAME_POSITION:
            r.limit = src_len;
            reach = min64(out_len, src_len);
            break;
        case TS_TOKEN_PREFIX:
            r.limit = min64(min64(r.limit, out_len), src_len);
            reach = out_len;
            break;
        case TS_TOKEN_ALL:
            r.limit = min64(r.limit, src_len);
            reach = out_len;
            break;
        default:
            return none;
    }
    return r.limit <= 0 || r.first >= reach ? none : r;
}

/* The exact interval of a union or composition at output position i;
 * false where it is not an interval. */
typedef bool (*truth_fn)(const void *ctx, int64_t i, span *out);

enum {
    MAX_MARKS = 8,
    MAX_PROBES = 3 * (MAX_MARKS + 2)
};

static int
compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Every mark and its neighbours, plus both ends, inside [0, out_len),
 * sorted without repeats. */
static int
probes(const int64_t *marks, int nmarks, int64_t out_len, int64_t *out)
{
    int64_t all[MAX_PROBES];
    int n = 0, kept = 0;
    for (int m = 0; m < nmarks + 2; m++) {
        int64_t v = m < nmarks ? marks[m] : m == nmarks ? 0 : out_len - 1;
        for (int64_t dv = -1; dv <= 1; dv++) {
            if (v > INT64_MIN + 1 && v < INT64_MAX - 1 && v + dv >= 0
                && v + dv < out_len) {
                all[n++] = v + dv;
            }
        }
    }
    qsort(all, (size_t)n, sizeof all[0], compare_i64);
    for (int k = 0; k < n; k++) {
        if (kept == 0 || all[k] != out[kept - 1]) {
            out[kept++] = all[k];
        }
    }
    return kept;
}

/* Fits the truth to a kind, `preferred` first: the first output position
 * with a dependency and the farthest source position are read from the
 * truth, and the candidate must give the truth at every probe. */
static bool
fit(truth_fn truth,
    const void *ctx,
    const int64_t *marks,
    int nmarks,
    int64_t out_len,
    int64_t src_len,
    ts_token_kind preferred,
    ts_token_relation *out)
{
    int64_t at[MAX_PROBES];
    span want[MAX_PROBES];
    int n = probes(marks, nmarks, out_len, at);
    int first = -1;
    const ts_token_kind order[4] = {
        preferred, TS_TOKEN_SAME_POSITION, TS_TOKEN_PREFIX, TS_TOKEN_ALL};
    for (int k = 0; k < n; k++) {
        if (!truth(ctx, at[k], &want[k])) {
            return false;
        }
        if (first < 0 && !span_empty(want[k])) {
            first = k;
        }
    }
    if (first < 0) {
        ts_token_relation none = {TS_TOKEN_NONE, 0, 0};
        *out = none;
        return true;
    }
    for (int c = 0; c < 4; c++) {
        ts_token_relation cand = {order[c], want[n - 1].hi, at[first]};
        bool ok = true;
        if (order[c] == TS_TOKEN_NONE) {
            continue;
        }
        cand = ts_token_canonical(cand, out_len, src_len);
        for (int k = 0; k < n && ok; k++) {
            ok = span_equal(rel_at(&cand, at[k], src_len), want[k]);
        }
        if (ok) {
            *out = cand;
            return true;
        }
    }
    return false;
}

typedef struct pair_ctx {
    const ts_token_relation *a, *b;
    int64_t mid_len, src_len;
} pair_ctx;

static bool
union_at(const void *ctx, int64_t i, span *out)
{
    const pair_ctx *p = ctx;
    span x = rel_at(p->a, i, p->src_len);
    span y = rel_at(p->b, i, p->src_len);
    if (span_empty(x) || span_empty(y)) {
        *out = span_empty(x) ? y : x;
        return true;
    }
    if (x.lo > y.hi || y.lo > x.hi) {
        return false; /* a gap: not an interval */
    }
    out->lo = min64(x.lo, y.lo);
    out->hi = max64(x.hi, y.hi);
    return true;
}

static ts_token_kind
max_kind(ts_token_kind a, ts_token_kind b)
{
    return a > b ? a : b;
}

bool
ts_token_union(const ts_token_relation *a,
               const ts_token_relation *b,
               int64_t out_len,
               int64_t src_len,
               ts_token_relation *out)
{
    pair_ctx ctx = {a, b, 0, src_len};
    int64_t marks[] = {
        a->first, b->first, a->limit, b->limit, src_len, src_len - 1};
    if (a->kind == TS_TOKEN_NONE || b->kind == TS_TOKEN_NONE) {
        *out = ts_token_canonical(
            a->kind == TS_TOKEN_NONE ? *b : *a, out_len, src_len);
        return true;
    }
    return fit(union_at,
               &ctx,
               marks,
               (int)(sizeof marks / sizeof marks[0]),
               out_len,
               src_len,
               max_kind(a->kind, b->kind),
               out);
}

/* outer gives output i the middle interval [a, b); inner gives each middle
 * position j an interval whose ends do not decrease with j and that touch
 * for consecutive j, so their union is one interval. */
static bool
compose_at(const void *ctx, int64_t i, span *out)
{
    const pair_ctx *p = ctx;
    span mid = rel_at(p->a, i, p->mid_len);
    int64_t from = max64(mid.lo, p->b->first);
    *out = empty_span;
    if (span_empty(mid) || p->b->kind == TS_TOKEN_NONE || from >= mid.hi) {
        return true;
    }
    if (p->b->kind == TS_TOKEN_SAME_POSITION) {
        out->lo = min64(from, p->src_len);
        out->hi = min64(mid.hi, p->src_len);
    }
    else {
        out->hi = rel_at(p->b, mid.hi - 1, p->src_len).hi;
    }
    if (span_empty(*out)) {
        *out = empty_span;
    }
    return true;
}

bool
ts_token_compose(const ts_token_relation *outer,
                 const ts_token_relation *inner,
                 int64_t out_len,
                 int64_t mid_len,
                 int64_t src_len,
                 ts_token_relation *out)
{
    pair_ctx ctx = {outer, inner, mid_len, src_len};
    int64_t marks[] = {outer->first,
                       outer->limit,
                       inner->first,
                       inner->limit,
                       mid_len,
                       src_len,
                       mid_len - 1,
                       src_len - 1};
    if (outer->kind == TS_TOKEN_NONE || inner->kind == TS_TOKEN_NONE) {
        ts_token_relation none = {TS_TOKEN_NONE, 0, 0};
        *out = none;
        return true;
    }
    return fit(compose_at,
               &ctx,
               marks,
               (int)(sizeof marks / sizeof marks[0]),
               out_len,
               src_len,
               max_kind(outer->kind, inner->kind),
               out);
}
