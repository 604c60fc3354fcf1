/* libFuzzer targets over the checkpoint readers, one per reader: the
 * input is read by the reader FUZZ_READER names whatever its first bytes
 * (0 safetensors, 1 a sharded safetensors index, 2 torch.save zip, 3
 * legacy torch.save, 4 GGUF; ck_inspect_memory_as), then the report goes
 * through the text table and the match against itself. Built and run by
 * `make fuzz` (clang-14, -fsanitize=fuzzer,address,undefined) once per
 * reader, with the seeds of tests/fuzz/checkpoints/<reader>/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "ckpt_internal.h"
#include "torchscan/checkpoint.h"

#ifndef FUZZ_READER
#define FUZZ_READER 0
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_error err;
    json_t *report, *match;
    ts_error_clear(&err);
    report = ck_inspect_memory_as(data, size, FUZZ_READER, &err);
    if (report == NULL) {
        return 0;
    }
    free(ts_checkpoint_table(report, -1, &err));
    free(ts_checkpoint_table(report, 1, &err));
    match = ts_checkpoint_match(report, report, &err);
    if (match != NULL) {
        free(ts_checkpoint_match_text(match, &err));
    }
    json_decref(match);
    json_decref(report);
    return 0;
}
