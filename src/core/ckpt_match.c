/* Does a checkpoint match a model (ts_checkpoint_match)? Key by key
 * against another checkpoint report or a state dict's description; module
 * by module against an AnalysisReport, whose rows hold element counts but
 * no parameter names. */
#include <stdlib.h>
#include <string.h>

#include "torchscan/checkpoint.h"

#define FAIL_NOMEM(err) ts_error_set((err), TS_ENOMEM, "out of memory")

static const char *
type_of(const json_t *doc)
{
    const char *t = json_string_value(json_object_get(doc, "report_type"));
    return t != NULL ? t : "";
}

/* name -> tensor row of a tensors list (the first of a repeated name). */
static json_t *
by_name(const json_t *tensors, const char *what, ts_error *err)
{
    json_t *map = json_object();
    size_t i;
    json_t *t;
    if (map == NULL) {
        FAIL_NOMEM(err);
        return NULL;
    }
    json_array_foreach(tensors, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (name == NULL || !json_is_array(json_object_get(t, "shape"))) {
            ts_error_set(err,
                         TS_EFORMAT,
                         "%s: tensors[%zu]: expected {name, shape, dtype}",
                         what,
                         i);
            json_decref(map);
            return NULL;
        }
        if (json_object_get(map, name) == NULL
            && json_object_set(map, name, t) != 0) {
            FAIL_NOMEM(err);
            json_decref(map);
            return NULL;
        }
    }
    return map;
}

static json_t *
result_new(const char *level)
{
    return json_pack("{s:i, s:s, s:s, s:b, s:i, s:[], s:[], s:[]}",
                     "schema_version",
                     1,
                     "report_type",
                     "checkpoint_match",
                     "level",
                     level,
                     "matches",
                     0,
                     "matched",
                     0,
                     "missing",
                     "unexpected",
                     "mismatched");
}

static bool
finish(json_t *result, size_t matched)
{
    bool ok = json_array_size(json_object_get(result, "missing")) == 0
              && json_array_size(json_object_get(result, "unexpected")) == 0
              && json_array_size(json_object_get(result, "mismatched")) == 0;
    return json_object_set_new(result, "matches", json_boolean(ok)) == 0
           && json_object_set_new(
                  result, "matched", json_integer((json_int_t)matched))
                  == 0;
}

static bool
append(json_t *result, const char *list, json_t *item)
{
    return item != NULL
           && json_array_append_new(json_object_get(result, list), item) == 0;
}

static json_t *
tensor_entry(const char *name, const json_t *have, const json_t *want)
{
    json_t *e = json_pack("{s:s}", "name", name);
    if (e == NULL) {
        return NULL;
    }
    if ((have != NULL
         && (json_object_set(e, "shape", json_object_get(have, "shape"))
             || json_object_set(e, "dtype", json_object_get(have, "dtype"))))
        || (want != NULL
            && (json_object_set(
                    e, "expected_shape", json_object_get(want, "shape"))
                || json_object_set(
                    e, "expected_dtype", json_object_get(want, "dtype"))))) {
        json_decref(e);
        return NULL;
    }
    return e;
}

static json_t *
match_tensors(const json_t *report, const json_t *against, ts_error *err)
{
    const json_t *have_list = json_object_get(report, "tensors");
    const json_t *want_list = json_object_get(against, "tensors");
    json_t *have, *want, *result;
    size_t i, matched = 0;
    json_t *t;
    if (!json_is_array(want_list)) {
        ts_error_set(err, TS_EFORMAT, "against: tensors: expected a list");
        return NULL;
    }
    if ((have = by_name(have_list, "report", err)) == NULL) {
        return NULL;
    }
    if ((want = by_name(want_list, "against", err)) == NULL) {
        json_decref(have);
        return NULL;
    }
    result = result_new("tensor");
    if (result == NULL) {
        goto nomem;
    }
    json_array_foreach(want_list, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const json_t *h = json_object_get(have, name);
        if (json_object_get(want, name) != t) {
            continue; /* a repeated name */
        }
        if (h == NULL) {
            if (!append(result, "missing", tensor_entry(name, NULL, t))) {
                goto nomem;
            }
        }
        else if (!json_equal(json_object_get(h, "shape"),
                             json_object_get(t, "shape"))) {
            if (!append(result, "mismatched", tensor_entry(name, h, t))) {
                goto nomem;
            }
        }
        else {
            matched++;
        }
    }
    json_array_foreach(have_list, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (json_object_get(have, name) == t
            && json_object_get(want, name) == NULL
            && !append(result, "unexpected", tensor_entry(name, t, NULL))) {
            goto nomem;
        }
    }
    if (!finish(result, matched)) {
        goto nomem;
    }
    json_decref(have);
    json_decref(want);
    return result;
nomem:
    FAIL_NOMEM(err);
    json_decref(result);
    json_decref(have);
    json_decref(want);
    return NULL;
}

/* ---- module level: an AnalysisReport ---- */

static int64_t
int_at(const json_t *obj, const char *a, const char *b)
{
    const json_t *v = json_object_get(json_object_get(obj, a), b);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* True when path is `prefix` or lies under it. */
static bool
under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    return n == 0
           || (strncmp(path, prefix, n) == 0
               && (path[n] == '\0' || path[n] == '.'));
}

/* The parent of a dotted path ("" for a top-level one) into buf. */
static const char *
parent_of(const char *path, char *buf, size_t size)
{
    const char *dot = strrchr(path, '.');
    size_t n = dot != NULL ? (size_t)(dot - path) : 0;
    if (n >= size) {
        n = size - 1;
    }
    memcpy(buf, path, n);
    buf[n] = '\0';
    return buf;
}

static json_t *
module_entry(const char *path, const json_t *have, int64_t want)
{
    json_t *e = json_pack("{s:s}", "path", path);
    if (e == NULL) {
        return NULL;
    }
    if ((have != NULL
         && json_object_set(e, "elements", json_object_get(have, "elements")))
        || (want >= 0
            && json_object_set_new(
                e, "expected_elements", json_integer(want)))) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* Each layer path's subtree (parameters and buffers of its rows and the
 * rows under it) against the checkpoint's elements under that prefix. */
static json_t *
match_modules(const json_t *report, const json_t *analysis, ts_error *err)
{
    const json_t *layers = json_object_get(analysis, "layers");
    const json_t *modules = json_object_get(report, "modules");
    json_t *ck = json_object(), *paths = json_object(), *result = NULL;
    size_t i, j, matched = 0;
    json_t *row, *m;
    if (ck == NULL || paths == NULL) {
        goto nomem;
    }
    json_array_foreach(modules, i, m)
    {
        const char *path = json_string_value(json_object_get(m, "path"));
        if (path == NULL) {
            ts_error_set(err,
                         TS_EFORMAT,
                         "report: modules[%zu].path: expected text",
                         i);
            goto fail;
        }
        if (json_object_set(ck, path, m) != 0) {
            goto nomem;
        }
    }
    json_array_foreach(layers, i, row)
    {
        const char *path = json_string_value(json_object_get(row, "path"));
        if (path == NULL) {
            ts_error_set(err,
                         TS_EFORMAT,
                         "against: layers[%zu].path: expected text",
                         i);
            goto fail;
        }
        if (json_object_set_new(paths, path, json_true()) != 0) {
            goto nomem;
        }
    }
    if ((result = result_new("module")) == NULL) {
        goto nomem;
    }
    {
        const char *path;
        json_t *unused;
        json_object_foreach(paths, path, unused)
        {
            int64_t want = 0;
            const json_t *have = json_object_get(ck, path);
            json_array_foreach(layers, j, row)
            {
                const char *p =
                    json_string_value(json_object_get(row, "path"));
                if (under(p, path)) {
                    want += int_at(row, "parameters", "trainable")
                            + int_at(row, "parameters", "frozen")
                            + int_at(row, "buffers", "elements");
                }
            }
            if (have == NULL) {
                if (want > 0
                    && !append(
                        result, "missing", module_entry(path, NULL, want))) {
                    goto nomem;
                }
                continue;
            }
            if (json_integer_value(json_object_get(have, "elements"))
                != want) {
                if (!append(result,
                            "mismatched",
                            module_entry(path, have, want))) {
                    goto nomem;
                }
            }
            else {
                matched++;
            }
        }
    }
    /* checkpoint prefixes the model does not have: the highest ones */
    json_array_foreach(modules, i, m)
    {
        const char *path = json_string_value(json_object_get(m, "path"));
        char parent[4096];
        if (json_object_get(paths, path) == NULL
            && json_object_get(paths, parent_of(path, parent, sizeof parent))
                   != NULL
            && !append(result, "unexpected", module_entry(path, m, -1))) {
            goto nomem;
        }
    }
    if (!finish(result, matched)) {
        goto nomem;
    }
    json_decref(ck);
    json_decref(paths);
    return result;
nomem:
    FAIL_NOMEM(err);
fail:
    json_decref(ck);
    json_decref(paths);
    json_decref(result);
    return NULL;
}

json_t *
ts_checkpoint_match(const json_t *report, const json_t *against, ts_error *err)
{
    const char *type = type_of(against);
    if (strcmp(type_of(report), "checkpoint") != 0
        || !json_is_array(json_object_get(report, "tensors"))
        || !json_is_array(json_object_get(report, "modules"))) {
        ts_error_set(err,
                     TS_EFORMAT,
                     "report: expected a checkpoint report (report_type "
                     "\"checkpoint\")");
        return NULL;
    }
    if (strcmp(type, "checkpoint") == 0 || strcmp(type, "state_dict") == 0) {
        return match_tensors(report, against, err);
    }
    if (json_is_array(json_object_get(against, "layers"))) {
        return match_modules(report, against, err);
    }
    ts_error_set(err,
                 TS_EFORMAT,
                 "against: expected an AnalysisReport, a checkpoint report or "
                 "a state_dict description ({\"report_type\": "
                 "\"state_dict\", \"tensors\": [...]})");
    return NULL;
}
