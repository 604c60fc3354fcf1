/* json_data_check.c: text and nesting of any JSON value a page may show
 * (ts_json_data_check, report_check.h), shared by the report checks. */
#include "checker.h"

/* ---- JSON data ---------------------------------------------------------- */

/* Text a report may hold: no NUL (a C string would be cut short) and no
 * surrogate. Text for display (`display`, the render rule) also holds no
 * control character but tab, CR and LF, and no U+FFFE/U+FFFF. Reports the
 * crawl writes can hold those: a module name or a user exception message
 * is any Python str, so a report read back keeps them. */
static const char *
text_problem(const char *s, size_t len, bool display)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t k = 0; k < len; k++) {
        unsigned char ch = p[k];
        if (ch >= 0x20 && ch < 0x7f) {
            continue; /* printable ASCII, nearly all of a report */
        }
        if (ch == 0) {
            return "a NUL character";
        }
        if (ch == 0xed && k + 1 < len && p[k + 1] >= 0xa0) {
            return "a surrogate";
        }
        if (!display) {
            continue;
        }
        if ((ch < 0x20 && ch != '\t' && ch != '\r' && ch != '\n')
            || ch == 0x7f) {
            return "a control character";
        }
        if (ch == 0xc2 && k + 1 < len && p[k + 1] >= 0x80
            && p[k + 1] <= 0x9f) {
            return "a control character";
        }
        if (ch == 0xef && k + 2 < len && p[k + 1] == 0xbf
            && (p[k + 2] == 0xbe || p[k + 2] == 0xbf)) {
            return "a non-character (U+FFFE or U+FFFF)";
        }
    }
    return NULL;
}

/* The walk of data_check keeps the steps to the value it looks at (a key or
 * an index per level) and writes the path only for a message. */
typedef struct data_walk {
    struct {
        const char *key; /* NULL: the step is `index` */
        size_t index;
    } steps[CHK_MAX_DEPTH + 1];
    bool display;
    int depth;           /* of the value with the problem */
    const char *problem; /* NULL: nested too deeply */
    bool in_key;
} data_walk;

static bool
walk_value(data_walk *w, const json_t *value, int depth)
{
    if (depth > CHK_MAX_DEPTH) {
        w->depth = depth;
        w->problem = NULL;
        return false;
    }
    if (json_is_string(value)) {
        w->problem = text_problem(
            json_string_value(value), json_string_length(value), w->display);
        w->depth = depth;
        w->in_key = false;
        return w->problem == NULL;
    }
    if (json_is_array(value)) {
        for (size_t k = 0; k < json_array_size(value); k++) {
            w->steps[depth].key = NULL;
            w->steps[depth].index = k;
            if (!walk_value(w, json_array_get(value, k), depth + 1)) {
                return false;
            }
        }
        return true;
    }
    if (json_is_object(value)) {
        /* json_object_iter takes a non-const pointer but only reads. */
        for (void *it = json_object_iter((json_t *)value); it != NULL;
             it = json_object_iter_next((json_t *)value, it)) {
            const char *key = json_object_iter_key(it);
            w->problem =
                text_problem(key, json_object_iter_key_len(it), w->display);
            if (w->problem != NULL) {
                w->depth = depth;
                w->in_key = true;
                return false;
            }
            w->steps[depth].key = key;
            if (!walk_value(w, json_object_iter_value(it), depth + 1)) {
                return false;
            }
        }
    }
    return true;
}

int
chk_data(checker *c, const json_t *value)
{
    data_walk w;
    w.display = c->display_text;
    if (walk_value(&w, value, 0)) {
        return TS_OK;
    }
    for (int k = 0; k < w.depth && k <= CHK_MAX_DEPTH; k++) {
        if (w.steps[k].key != NULL) {
            push_key(c, w.steps[k].key);
        }
        else {
            push_index(c, w.steps[k].index);
        }
    }
    if (w.problem == NULL) {
        return chk_fail(
            c, "nested too deeply (more than %d levels)", CHK_MAX_DEPTH);
    }
    return chk_fail(
        c, w.in_key ? "a key holds %s" : "text holds %s", w.problem);
}

int
ts_json_data_check(const json_t *value, const char *where, ts_error *err)
{
    checker c;
    checker_init(&c, where, err);
    c.display_text = true;
    return chk_data(&c, value);
}
