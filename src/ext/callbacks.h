/* callbacks.c: the only place the binding runs user code, and the one rule
 * for what that code raises or returns (docs/architecture.md, "User code
 * and errors"):
 *   - an Exception (MemoryError included) becomes the site's diagnostic;
 *   - any other BaseException (KeyboardInterrupt, SystemExit,
 *     GeneratorExit, a custom one) propagates: the function returns -1 with
 *     it set, and the crawl's uninstall removes every hook and restores
 *     every training flag on the way out;
 *   - a value of the wrong type is the site's diagnostic too.
 * The sites: custom operator formulas (custom_mapping), custom module
 * handlers' estimates (custom_modules), and module readers (hyperparameters
 * of native-family modules, which a subclass may make properties). */
#ifndef TSX_CALLBACKS_H
#define TSX_CALLBACKS_H

#include "describe.h"

/* After user code failed (an exception is set): 1 when it is an Exception,
 * which is cleared (its object in *exc, a new reference, when exc is not
 * NULL); -1 when it is another BaseException, left set. */
int tsx_user_failed(PyObject **exc);

/* str(exc) into buf (empty when str() fails; that error is dropped). */
void tsx_exception_text(PyObject *exc, char *buf, size_t size);

/* What a number returned by user code is. One conversion for every site:
 * ints and integer-likes (numpy integers, SymInts, integer tensors), floats
 * and float-likes (numpy floats, one-element tensors); Python, numpy and
 * tensor truth values are not numbers. */
typedef enum tsx_number_kind {
    TSX_NUMBER_INT,       /* out->i (may be negative) */
    TSX_NUMBER_REAL,      /* out->r (may be negative, NaN or infinite) */
    TSX_NUMBER_TOO_LARGE, /* an integer above the 64-bit range */
    TSX_NUMBER_TOO_SMALL, /* an integer below it */
    TSX_NUMBER_BOOL,      /* a truth value */
    TSX_NUMBER_NONE,      /* not a number */
} tsx_number_kind;

/* The kind of `value` (>= 0) with *out set, or -1 with an interrupt set
 * (an Exception raised by a conversion means "not that kind"). */
int tsx_user_number(tsx_state *st, PyObject *value, ts_number *out);

/* Runs a custom operator formula (custom_mapping) on an aten call: 0 with
 * *flops, 1 with *message set (an unsupported_operator_formula diagnostic:
 * it raised an Exception or did not return a whole non-negative count),
 * -1 with an exception (an interrupt). */
int tsx_run_formula(tsx_state *st,
                    PyObject *formula,
                    PyObject *args,
                    PyObject *kwargs,
                    PyObject *out,
                    int64_t *flops,
                    char *message,
                    size_t size);

/* Calls a module handler's estimate(call): 0 with *result (new reference),
 * 1 with *message set ("<identity>: <type>: <text>", a
 * custom_handler_error), -1 with an exception (an interrupt). */
int tsx_run_estimate(PyObject *estimate,
                     PyObject *call,
                     const char *identity,
                     PyObject **result,
                     char *message,
                     size_t size);

/* ---- module readers ------------------------------------------------------
 * Attributes of a module, as the native family's forward reads them. Each
 * returns -1 with an exception set when the attribute is missing, of the
 * wrong type or its property raised; the reader of a whole description
 * then applies tsx_user_failed (module_desc.c). */

/* getattr for nn.Module attributes (new reference, or NULL). */
PyObject *tsx_module_attr(tsx_state *st, PyObject *obj, const char *name);
int tsx_attr_int(tsx_state *st, PyObject *obj, const char *name, int64_t *out);
int tsx_attr_real(tsx_state *st, PyObject *obj, const char *name, double *out);
/* 1 when the attribute is truthy, 0 when falsy, -1 on error. */
int tsx_attr_true(tsx_state *st, PyObject *obj, const char *name);
/* 1 when the attribute exists and is not None, 0 when not, -1 on error. */
int tsx_attr_present(tsx_state *st, PyObject *obj, const char *name);
/* 1 when the module has a parameter `name` that is not None. */
int tsx_param_present(tsx_state *st, PyObject *module, const char *name);
/* An int, or a tuple of ints (a shorter one repeats its last entry), into
 * out[rank]; *is_int tells an int, *is_string (when not NULL) a str. */
int tsx_attr_tuple(tsx_state *st,
                   PyObject *obj,
                   const char *name,
                   int rank,
                   int64_t *out,
                   bool *is_int,
                   bool *is_string);
/* A str attribute's position in `names` (NULL terminated) or -1 when not
 * listed; returns -1 on error, else 0. */
int tsx_attr_choice(tsx_state *st,
                    PyObject *obj,
                    const char *name,
                    const char *const *names,
                    int *index);
/* An int attribute that may be None (*none). */
int tsx_attr_int_or_none(
    tsx_state *st, PyObject *obj, const char *name, int64_t *out, bool *none);

#endif
