/* Checkpoint inspection: what is in a weights file, without PyTorch and
 * without executing anything. `torchscan inspect` and
 * torchscan.inspect_checkpoint use it.
 *
 * Formats, recognised by their content (never by the file name):
 *   safetensors        8-byte little-endian header length, JSON header,
 *                      data; a sharded checkpoint is read through its
 *                      index (`model.safetensors.index.json`: a JSON object
 *                      whose `weight_map` names each tensor's shard, a
 *                      plain file name beside the index).
 *   pytorch_zip        torch.save's zip archive (data.pkl + data/N storage
 *                      entries, STORED, Zip64 and an archive prefix
 *                      accepted): the pickle is read by a symbolic machine
 *                      that never imports or calls anything.
 *   pytorch_legacy     torch.save(..., _use_new_zipfile_serialization=
 *                      False): pickles followed by the storages.
 *   gguf               GGUF v2 and v3: metadata key-values, tensor infos,
 *                      every ggml type with its block size, alignment.
 *
 * Every count, size and offset read from a file is checked against the
 * file's size and for overflow before use, and no allocation is sized by
 * the file without a bound. A truncated, malformed or unknown file is
 * refused with TS_EFORMAT and a message naming the file and where (a byte
 * offset, an entry, a tensor); a file that cannot be opened or read gives
 * TS_EIO. Only headers are read: the tensors' data is never loaded (the
 * legacy format's storage sizes excepted: 8 bytes per storage).
 *
 * The report (`report_type` "checkpoint", `schema_version` 1), a JSON
 * object:
 *   format       "safetensors", "safetensors_sharded", "pytorch_zip",
 *                "pytorch_legacy" or "gguf"
 *   files[]      {name (base name, never a path), format, bytes,
 *                header_bytes, tensors, tensor_bytes}: one per file read
 *                (the index, then each shard, for a sharded checkpoint)
 *   metadata     the format's metadata: safetensors' __metadata__ (text),
 *                the index's `metadata`, GGUF's key-values (arrays longer
 *                than 64 items are summarised as {type, length})
 *   tensors[]    {name, dtype, shape, elements, bytes, file, offset} in the
 *                file's order; `bytes` is null when the dtype is unknown;
 *                pickle formats add storage (key), storage_offset and
 *                stride. dtype is torch's name ("torch.bfloat16") for the
 *                formats torch reads, the ggml type name ("Q4_K") for GGUF
 *   storages[]   pickle formats: {key, dtype, elements, bytes, file,
 *                offset, location, tensors: [names]}
 *   shared[]     storages that more than one tensor uses: {storage,
 *                tensors, relation}: "tied" when every tensor is the same
 *                view (shape, stride, offset), "views" otherwise
 *   modules[]    the tensors per module prefix as a tree in preorder:
 *                {path, depth, tensors, elements, bytes}, path "" the
 *                whole checkpoint; components compared as numbers where
 *                both are (layers.2 before layers.10); a prefix counts the
 *                tensors under it, each by its own elements and bytes
 *                (tied tensors count in each place they are named)
 *   dtypes[]     {dtype, tensors, elements, bytes}, sorted by dtype
 *   globals[]    pickle formats: every global the pickle names, {name,
 *                allowed, uses}; allowed is true for the globals
 *                torch.load(weights_only=True) allows in torch 2.13
 *   totals       MetricResults: tensors, elements, tensor_bytes (the
 *                tensors' own data, tied tensors counted each time),
 *                stored_bytes (the data the file holds: unique storages)
 *                and file_bytes; partial when something was not
 *                understood (an unknown dtype, a disallowed global)
 *   diagnostics[] Diagnostic objects, codes: checkpoint_unsafe_global (a
 *                global outside the allowlist: named, never called),
 *                checkpoint_unknown_dtype, checkpoint_unreferenced_bytes
 *                (data bytes no tensor covers), checkpoint_index_mismatch
 *                (a sharded index and its shards disagree),
 *                checkpoint_unknown_object (a pickle value that is not a
 *                tensor, container or number). */
#ifndef TORCHSCAN_CHECKPOINT_H
#define TORCHSCAN_CHECKPOINT_H

#include "torchscan/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The report of the checkpoint at `path` (a file of any format above, or a
 * sharded safetensors index). Returns a new reference, or NULL with err
 * set: TS_EIO (open or read failed), TS_EFORMAT (the message says where),
 * TS_ENOMEM. */
json_t *ts_checkpoint_inspect(const char *path, ts_error *err);

/* The same for `size` bytes in memory, read as the file `name` (a base
 * name, for messages). A sharded index read this way reports only the
 * index (its shards are not opened). For tests and fuzzing. */
json_t *ts_checkpoint_inspect_memory(const void *data,
                                     size_t size,
                                     const char *name,
                                     ts_error *err);

/* The text table of a checkpoint report: the files, the module tree (to
 * `max_depth`, < 0 for all), the dtype breakdown, shared storages,
 * globals outside the allowlist and the diagnostics. Returns a malloc'd
 * string (caller frees), NULL with err set (TS_EFORMAT for a report that
 * is not a checkpoint report, TS_ENOMEM). */
char *ts_checkpoint_table(const json_t *report, int max_depth, ts_error *err);

/* Do the tensors of a checkpoint report match a model? `against` is one of
 *   - a checkpoint report (the model's own checkpoint, or a state dict
 *     described as {"report_type": "state_dict", "tensors": [{name, shape,
 *     dtype}]}): matched key by key;
 *   - an AnalysisReport: matched module by module, each layer path's own
 *     parameters and buffers (elements) against the checkpoint tensors
 *     directly under that prefix (the report holds no parameter names).
 * The result (`report_type` "checkpoint_match", schema_version 1):
 *   {level: "tensor"|"module", matches: bool, matched: N,
 *    missing: [...], unexpected: [...], mismatched: [...]} where tensor
 *   entries are {name, shape, expected_shape, dtype, expected_dtype} and
 *   module entries {path, elements, expected_elements}. Returns a new
 *   reference or NULL with err set (TS_EFORMAT: an input is not one of
 *   those shapes). */
json_t *ts_checkpoint_match(const json_t *report,
                            const json_t *against,
                            ts_error *err);

/* The text of a match result: one line saying whether it matches, then
 * the missing, unexpected and mismatched entries, one a line. Returns a
 * malloc'd string or NULL with err set (TS_EFORMAT, TS_ENOMEM). */
char *ts_checkpoint_match_text(const json_t *match, ts_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TORCHSCAN_CHECKPOINT_H */
