/* Bytes saved for backward per layer call (saved_bytes.c): the storage
 * dedupe and the per-layer-call sums behind crawl_module's
 * saved_activation_bytes, with no Python and no torch. A storage is keyed
 * by an opaque 64-bit identity (the binding uses the address of the
 * tensor's StorageImpl, kept alive while the accumulator is in use, so that
 * no address is reused) and counted once, in full (its nbytes), for the
 * layer call that saved it first. Storages declared excluded (a model's
 * parameters and buffers) count nothing. A saved tensor whose storage
 * cannot be read is counted as unmeasured: the layer's bytes, and the
 * total, are then lower bounds.
 *
 * Layers are indices of the caller's layer records (a ts_session's, or a
 * memory simulator's own numbering); -1 means "outside every layer call".
 * Any caller that sees saved storages (the crawl's pack hook on real
 * tensors, a simulator on fake or meta storages) feeds the same
 * accumulator and gets the same numbers.
 */
#ifndef TORCHSCAN_SAVED_BYTES_H
#define TORCHSCAN_SAVED_BYTES_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_saved ts_saved;

/* A new, empty accumulator owned by the caller; NULL on allocation
 * failure. */
ts_saved *ts_saved_new(void);

/* Frees it (NULL is a no-op). */
void ts_saved_free(ts_saved *saved);

/* Declares `storage` excluded (a parameter's or buffer's storage): later
 * saves of it count nothing. A storage already counted stays counted.
 * Returns TS_OK or TS_ENOMEM. */
int ts_saved_exclude(ts_saved *saved, uint64_t storage);

/* One tensor saved for backward, whose storage `storage` holds `nbytes`
 * bytes (the whole storage, whatever part of it the tensor views), saved
 * while `layer` was the innermost layer call (-1: none). Returns 1 when
 * the storage was counted now (first save, not excluded), 0 when it was
 * already counted or is excluded, or a negative status: TS_EINVAL (nbytes
 * or layer negative, layer below -1), TS_ENOMEM, TS_EOVERFLOW (a sum left
 * the int64 range; nothing is added). */
int ts_saved_add(ts_saved *saved, uint64_t storage, int64_t nbytes, int layer);

/* One saved tensor whose storage could not be read (a sparse tensor, a
 * wrapper subclass): it cannot be deduplicated and counts no bytes, but
 * makes `layer`'s sum and the total lower bounds. Returns 1 when it is the
 * first unmeasured tensor of that layer (the caller's cue for one
 * diagnostic), 0 otherwise, or TS_EINVAL / TS_ENOMEM. */
int ts_saved_add_unmeasured(ts_saved *saved, int layer);

/* Per layer: bytes of the storages first saved in that call, and the
 * unmeasured saved tensors (0 for a layer never seen, or -1 for outside
 * every call). */
int64_t ts_saved_layer_bytes(const ts_saved *saved, int layer);
int64_t ts_saved_layer_unmeasured(const ts_saved *saved, int layer);

/* The layer a counted storage was attributed to: >= -1, or -2 when the
 * storage was never counted (unknown or excluded). */
int ts_saved_owner(const ts_saved *saved, uint64_t storage);

/* Totals: every counted storage's bytes (layers and outside), the
 * unmeasured tensors, the saves seen (every ts_saved_add call that
 * returned >= 0, duplicates and excluded ones included) and the distinct
 * storages counted. */
typedef struct ts_saved_totals {
    int64_t bytes;
    int64_t unmeasured;
    int64_t saves;
    int64_t storages;
} ts_saved_totals;

void ts_saved_get_totals(const ts_saved *saved, ts_saved_totals *out);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_SAVED_BYTES_H */
