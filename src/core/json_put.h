/* Private to src/core: JSON text written straight into a text buffer (the
 * writer behind ts_json_text, for pages that embed JSON). */
#ifndef TORCHSCAN_JSON_PUT_H
#define TORCHSCAN_JSON_PUT_H

#include "text_buf.h"

#include <jansson.h>
#include <stdbool.h>

/* Appends `value` (NULL: null) as ts_json_text writes it with `indent`.
 * With `script`, & < > U+2028 U+2029 inside strings are written as \u
 * escapes: the same JSON value, and text that cannot end an HTML script
 * element or a JavaScript line. */
void ts_json_put(ts_text_buf *b, const json_t *value, int indent, bool script);

#endif
