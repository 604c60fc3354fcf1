/* checkpoints.c: the module functions of torchscan._engine behind
 * torchscan.inspect_checkpoint, match_checkpoint and format_checkpoint
 * (module.c lists them in its method table). They convert arguments and
 * results; the readers and the matching are the engine's
 * (torchscan/checkpoint.h). */
#ifndef TSX_CHECKPOINTS_H
#define TSX_CHECKPOINTS_H

#include "convert.h"

/* inspect_checkpoint(path: str | bytes | os.PathLike) -> report dict */
PyObject *tsx_engine_inspect_checkpoint(PyObject *module, PyObject *path);
/* format_checkpoint(report, max_depth) -> the table text */
PyObject *tsx_engine_format_checkpoint(PyObject *module, PyObject *args);
/* match_checkpoint(report, against) -> the match result */
PyObject *tsx_engine_match_checkpoint(PyObject *module, PyObject *args);

#endif
