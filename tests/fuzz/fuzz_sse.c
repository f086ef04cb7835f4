/* SPDX-License-Identifier: MIT */
/* libFuzzer target for src/proto/sse.c, the SSE parser of libroost's agent loop (it reads whatever
 * a server or a proxy in between sends). Invariant: feeding the stream whole and one byte at a
 * time yields the same events and the same result, so chunk boundaries never change meaning. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "proto/sse.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A running digest of every event seen (FNV-1a over the fields and their lengths). */
struct digest {
    uint64_t h;
    size_t n;
};

static void mix(struct digest *d, const char *p, size_t len)
{
    d->h = hash_fnv1a(d->h, p, len);
    d->h = hash_fnv1a(d->h, &len, sizeof len);
}

static int on_event(void *ctx, const struct sse_event *ev)
{
    struct digest *d = ctx;
    mix(d, ev->id, ev->id_len);
    mix(d, ev->event, ev->event_len);
    mix(d, ev->data, ev->data_len);
    mix(d, (const char *)&ev->retry_ms, sizeof ev->retry_ms);
    d->n++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Small limits so the error paths are reached too. */
    struct sse_parser whole, bytes;
    struct digest dw = {HASH_FNV1A_INIT, 0}, db = dw;
    sse_parser_init(&whole, 256, 1024);
    sse_parser_init(&bytes, 256, 1024);
    int rw = sse_parser_feed(&whole, (const char *)data, size, on_event, &dw);
    int rb = SSE_OK;
    for (size_t i = 0; i < size && rb == SSE_OK; i++) {
        rb = sse_parser_feed(&bytes, (const char *)data + i, 1, on_event, &db);
    }
    if (rw != rb || dw.n != db.n || dw.h != db.h) {
        abort();
    }
    sse_parser_cleanup(&whole);
    sse_parser_cleanup(&bytes);
    return 0;
}
