/* JSON text as Python's json module writes it.
 *
 * jansson prints reals with 17 significant digits ("0.10000000000000001")
 * and escapes with upper-case hex; reports read by people and compared with
 * what Python writes need the same text as json.dumps. */
#ifndef TORCHSCAN_JSON_TEXT_H
#define TORCHSCAN_JSON_TEXT_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Room for any text of ts_format_json_real, NUL included. */
#define TS_JSON_REAL_SIZE 48

/* A finite double as Python's repr() and json.dumps() write it: the
 * shortest digits that read back to the same value, positional from 1e-4
 * up to 1e16 ("0.1", "1000000000000000.0", "-0.0"), else with an exponent
 * of at least two digits ("1e+16", "5.5e-08"). */
void ts_format_json_real(double value, char out[TS_JSON_REAL_SIZE]);

/* The JSON text of `value`, objects in their stored order:
 *  - indent < 0: json.dumps(value, separators=(",", ":"),
 *    ensure_ascii=False), on one line;
 *  - indent >= 0: json.dumps(value, indent=indent), ASCII only.
 * Returns a malloc'd string (caller frees), or NULL when out of memory. */
char *ts_json_text(const json_t *value, int indent);

#ifdef __cplusplus
}
#endif

#endif
