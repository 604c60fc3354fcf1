/* The out-of-line part of record_util.h: the diagnostic object. */
#include "record_util.h"

int
ts_diagnostic_append(json_t *list,
                     const char *code,
                     const char *metric,
                     const char *path,
                     const char *op,
                     const char *message)
{
    json_t *d = json_pack("{s:s, s:s, s:s}",
                          "code",
                          code,
                          "severity",
                          "warning",
                          "metric",
                          metric);
    if (d == NULL) {
        return TS_ENOMEM;
    }
    if ((path != NULL && json_object_set_new(d, "path", json_string(path)))
        || (op != NULL && json_object_set_new(d, "operator", json_string(op)))
        || json_object_set_new(d, "message", json_string(message))) {
        json_decref(d); /* set_new released the value, not the object */
        return TS_ENOMEM;
    }
    /* append_new releases d when it fails */
    return json_array_append_new(list, d) == 0 ? TS_OK : TS_ENOMEM;
}
