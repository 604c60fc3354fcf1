/* convert.c: JSON trees and engine reports -> Python objects, Python ->
 * JSON, and the one translation of engine statuses into exceptions. */
#ifndef TSX_CONVERT_H
#define TSX_CONVERT_H

#include "state.h"

PyObject *tsx_from_json(tsx_state *st, const json_t *value); /* new ref */
json_t *tsx_to_json(PyObject *obj, const char *what); /* new or NULL+exc */

/* An emitter (torchscan/emit.h) that builds Python objects directly.
 * tsx_pybuilder_new fills *emitter; tsx_pybuilder_finish returns the
 * built value (new reference) or NULL with an exception, and frees the
 * builder in both cases. */
struct ts_emitter;
typedef struct tsx_pybuilder tsx_pybuilder;
tsx_pybuilder *tsx_pybuilder_new(struct ts_emitter *emitter, tsx_state *st);
PyObject *tsx_pybuilder_finish(tsx_pybuilder *builder);
/* Frees the report builders' string table and spare builder (module
 * teardown). */
void tsx_convert_free(tsx_state *st);

/* The only translation of an engine status (TS_E*, torchscan/core.h) into
 * a Python exception; every engine status the binding raises goes through
 * one of these two (tools/check_ext_layers.py checks it):
 *   TS_ENOMEM                  MemoryError
 *   TS_EINVAL, TS_EFORMAT      ValueError
 *   TS_EOVERFLOW               OverflowError
 *   TS_EUNSUPPORTED            NotImplementedError
 *   TS_EIO                     OSError
 *   TS_EMEASURE, other         RuntimeError
 * They return NULL. tsx_raise uses the engine's message; tsx_raise_status
 * uses `message` (NULL: a generic one) for engine functions that return a
 * status or NULL without a ts_error. A TS_OK status raises SystemError (a
 * binding bug: nothing failed). */
PyObject *tsx_raise(const ts_error *err);
PyObject *tsx_raise_status(int status, const char *message);

#endif
