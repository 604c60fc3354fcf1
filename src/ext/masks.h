/* masks.c: what the token relations of an attention or Transformer call
 * need of a mask argument (token_deps.h): its shape and, when its values
 * can be read on the host, the engine's summary of them (ts_mask_scan).
 * Nothing of the values is kept. */
#ifndef TSX_MASKS_H
#define TSX_MASKS_H

#include "describe.h"
#include "torchscan/token_deps.h"

/* Fills *out for the argument `value` (borrowed; NULL or None: not
 * passed). Values are read only from plain tensors (torch.Tensor or
 * nn.Parameter, dense, bool or floating point, not meta): a tensor
 * subclass's values may be computed by its own code, and a meta or fake
 * tensor has none. A tensor on another device is copied to the host where
 * no dispatch mode sees the copy; a copy that fails with an Exception
 * leaves the values unread. 0, or -1 with an exception (an interrupt, or a
 * failure to read the shape). */
int tsx_read_mask(tsx_state *st, PyObject *value, ts_mask_info *out);

#endif
