/* A growable text buffer (see text_buf.h). */
#include "text_buf.h"

#include <stdlib.h>
#include <string.h>

void
ts_text_put_n(ts_text_buf *b, const char *text, size_t len)
{
    if (b->failed) {
        return;
    }
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *grown;
        while (cap < b->len + len + 1) {
            cap *= 2;
        }
        grown = realloc(b->data, cap);
        if (grown == NULL) {
            b->failed = true;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, text, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void
ts_text_put(ts_text_buf *b, const char *text)
{
    ts_text_put_n(b, text, strlen(text));
}
