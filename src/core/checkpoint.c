/* Checkpoint inspection's entry points (torchscan/checkpoint.h): the
 * format is recognised from the first bytes, the reader of that format
 * fills a ck_set, and ckpt_report.c builds the report. */
#include <stdlib.h>
#include <string.h>

#include "ckpt_internal.h"
#include "torchscan/checkpoint.h"

typedef enum {
    CK_UNKNOWN,
    CK_SAFETENSORS,
    CK_INDEX,
    CK_TORCH_ZIP,
    CK_TORCH_LEGACY,
} ck_format;

static bool
is_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The format of a file from its first (up to 16) bytes and its size. */
static ck_format
detect(const uint8_t *head, size_t n, uint64_t size)
{
    size_t i = 0;
    (void)size;
    if (n >= 4 && head[0] == 'P' && head[1] == 'K'
        && ((head[2] == 3 && head[3] == 4)
            || (head[2] == 5 && head[3] == 6))) {
        return CK_TORCH_ZIP;
    }
    if (ck_is_torch_legacy(head, n)) {
        return CK_TORCH_LEGACY;
    }
    if (n >= 9 && head[8] == '{') {
        return CK_SAFETENSORS; /* the reader checks the header length */
    }
    while (i < n && is_space(head[i])) {
        i++;
    }
    if (i < n && head[i] == '{') {
        return CK_INDEX;
    }
    return CK_UNKNOWN;
}

static int
unknown_format(const ck_source *src,
               const uint8_t *head,
               size_t n,
               ts_error *err)
{
    char hex[3 * 8 + 1] = "";
    for (size_t i = 0; i < n && i < 8; i++) {
        snprintf(
            hex + (i ? 3 * i - 1 : 0), 4, "%s%02x", i ? " " : "", head[i]);
    }
    return ts_error_set(err,
                        TS_EFORMAT,
                        "%s: not a checkpoint TorchScan reads (safetensors, "
                        "a sharded safetensors index, a PyTorch zip or "
                        "legacy file, GGUF): %s%s",
                        src->name,
                        n == 0 ? "the file is empty" : "it begins with ",
                        hex);
}

/* Reads one source (dir: where an index's shards are; NULL: not read). */
static json_t *
inspect(const ck_source *src, const char *dir, ts_error *err)
{
    uint8_t head[16];
    size_t n = src->size < sizeof head ? (size_t)src->size : sizeof head;
    ck_set set;
    json_t *report = NULL;
    int rc;
    if (ck_read(src, 0, head, n, "the first bytes", err) != TS_OK
        || ck_set_init(&set, err) != TS_OK) {
        return NULL;
    }
    switch (detect(head, n, src->size)) {
        case CK_SAFETENSORS:
            set.format = "safetensors";
            set.method = "safetensors_header";
            rc = ck_read_safetensors(&set, src, err);
            break;
        case CK_INDEX:
            set.format = "safetensors_sharded";
            set.method = "safetensors_header";
            rc = ck_read_safetensors_index(&set, src, dir, err);
            break;
        case CK_TORCH_ZIP:
            set.format = "pytorch_zip";
            set.method = "pickle_symbolic";
            rc = ck_read_torch_zip(&set, src, err);
            break;
        case CK_TORCH_LEGACY:
            set.format = "pytorch_legacy";
            set.method = "pickle_symbolic";
            rc = ck_read_torch_legacy(&set, src, err);
            break;
        default:
            rc = unknown_format(src, head, n, err);
            break;
    }
    if (rc == TS_OK) {
        report = ck_report(&set, err);
    }
    ck_set_clear(&set);
    return report;
}

json_t *
ts_checkpoint_inspect(const char *path, ts_error *err)
{
    ck_source src;
    const char *slash = strrchr(path, '/');
    char *dir;
    json_t *report;
    if (ck_open(&src, NULL, path, err) != TS_OK) {
        return NULL;
    }
    if (slash == NULL) {
        dir = malloc(2);
        if (dir != NULL) {
            memcpy(dir, ".", 2);
        }
    }
    else {
        size_t len = slash == path ? 1 : (size_t)(slash - path);
        dir = malloc(len + 1);
        if (dir != NULL) {
            memcpy(dir, path, len);
            dir[len] = '\0';
        }
    }
    if (dir == NULL) {
        ck_close(&src);
        ts_error_set(err, TS_ENOMEM, "out of memory");
        return NULL;
    }
    report = inspect(&src, dir, err);
    free(dir);
    ck_close(&src);
    return report;
}

json_t *
ts_checkpoint_inspect_memory(const void *data,
                             size_t size,
                             const char *name,
                             ts_error *err)
{
    ck_source src;
    memset(&src, 0, sizeof src);
    src.name = name != NULL ? name : "<memory>";
    src.mem = data != NULL ? data : (const uint8_t *)"";
    src.fd = -1;
    src.size = data != NULL ? size : 0;
    return inspect(&src, NULL, err);
}
