/* Core types shared by every part of the TorchScan engine.
 *
 * The engine is plain C11 and never includes Python.h. Reports are JSON
 * value trees (jansson's json_t): the binding converts them to Python
 * objects once, the CLI reads and writes them as files.
 *
 * Conventions: functions return TS_OK (0) or a negative TS_E* status and
 * write details into a caller-owned ts_error. Arguments are borrowed unless
 * a declaration says otherwise; results of *_new functions are owned by the
 * caller and released with the matching *_free.
 */
#ifndef TORCHSCAN_CORE_H
#define TORCHSCAN_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    TS_OK = 0,
    TS_ENOMEM = -1,       /* allocation failed */
    TS_EINVAL = -2,       /* bad argument (message names it) */
    TS_EUNSUPPORTED = -3, /* no formula/convention for this input */
    TS_EOVERFLOW = -4,    /* arithmetic overflow in a count */
    TS_EFORMAT = -5,      /* malformed report or file */
    TS_EMEASURE = -6,     /* a measurement gave an unusable figure */
    TS_EIO = -7,          /* a file could not be opened or read */
};

#define TS_ERROR_MESSAGE_SIZE 512

typedef struct ts_error {
    int code;
    char message[TS_ERROR_MESSAGE_SIZE];
} ts_error;

/* Clears err (may be NULL). */
void ts_error_clear(ts_error *err);

/* Sets err->code and a printf-style message; returns code. err may be NULL. */
int ts_error_set(ts_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- metric results ---------------------------------------------------- */

typedef enum {
    TS_COMPLETE = 0,
    TS_PARTIAL = 1,
    TS_UNAVAILABLE = 2,
} ts_status;

/* "complete" / "partial" / "unavailable". */
const char *ts_status_name(ts_status status);

/* Parses a status name; returns -1 when unknown. */
int ts_status_parse(const char *name);

/* A number that is either an exact integer or a real. */
typedef struct ts_number {
    bool is_real;
    int64_t i;
    double r;
} ts_number;

static inline ts_number
ts_int(int64_t value)
{
    ts_number n = {false, value, 0.0};
    return n;
}

static inline ts_number
ts_real(double value)
{
    ts_number n = {true, 0, value};
    return n;
}

/* Builds a MetricResult object {status, value, known_value, unit, scope,
 * method} obeying the invariants: complete -> value == known_value;
 * partial -> value null, known_value is the lower bound; unavailable -> both
 * null (the number is ignored). Returns a new reference, NULL on allocation
 * failure or a non-finite real. */
json_t *ts_metric_new(ts_status status,
                      ts_number known,
                      const char *unit,
                      const char *scope,
                      const char *method);

/* Reads a MetricResult's status; -1 when the object is not one. */
int ts_metric_status(const json_t *metric);

/* strict mode: true when a report has any diagnostic or any total that is
 * not complete and not not_requested. *message (malloc'd, caller frees;
 * NULL when an allocation failed) is "Analysis is incomplete for: a, b." */
bool ts_report_incomplete(const json_t *report, char **message);

/* ---- checked integer arithmetic ---------------------------------------- */

/* Each returns false on overflow, leaving *out unspecified. */
static inline bool
ts_mul(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static inline bool
ts_add(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* ---- tensor shapes ------------------------------------------------------ */

#define TS_MAX_DIMS 12

typedef enum {
    TS_DTYPE_FLOAT = 0, /* any real floating point */
    TS_DTYPE_COMPLEX = 1,
    TS_DTYPE_INT = 2, /* integer */
    TS_DTYPE_BOOL = 3,
    TS_DTYPE_OTHER = 4, /* quantized, bits, unknown */
} ts_dtype_class;

/* What a formula may know about a tensor: its shape (all dims concrete),
 * the class of its dtype, and whether it is a plain dense strided tensor. */
typedef struct ts_shape {
    int ndim;
    int64_t dims[TS_MAX_DIMS];
    ts_dtype_class dtype;
    bool dense;   /* strided layout, not nested, not sparse */
    int itemsize; /* bytes per element; 0 when unknown (collectives' bytes) */
} ts_shape;

/* Product of dims (1 for a scalar); false on overflow. */
bool ts_shape_numel(const ts_shape *shape, int64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_CORE_H */
