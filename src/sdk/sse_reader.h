/* SPDX-License-Identifier: MIT */
/* The SDK's one reader of the SSE wake-up stream (GET /api/v1/agents/{agent}/subscribe): libcurl
 * streaming on a client's connection into the src/proto/sse.c parser, one callback per event.
 * roost_subscribe() reads one stream with it; the agent loop reconnects it with backoff. Not
 * installed. */
#ifndef ROOST_SDK_SSE_READER_H
#define ROOST_SDK_SSE_READER_H

#include <stdbool.h>

#include "proto/sse.h"
#include "roost/roost_client.h"

/* A stream silent for this long is dead (roostd's heartbeat is 30 s by default). */
#define SDK_SSE_IDLE_TIMEOUT_S 75L
/* Largest event (its data lines joined) the reader accepts; lines use the parser's default. */
#define SDK_SSE_MAX_EVENT_BYTES ((size_t)64 * 1024)
/* An error answer's body is kept up to this size for the error mapping. */
#define SDK_SSE_MAX_ERROR_BODY ((size_t)16 * 1024)

struct sdk_sse_reader {
    /* Called for every event with its type and the cursor_hint of its data (-1 when none);
     * non-zero ends the read with ROOST_OK. */
    roost_ping_fn on_ping;
    /* Optional: called once per read when the first bytes of a 200 answer arrive. */
    void (*on_open)(void *ctx);
    void *ctx;
    /* A stream silent for this many seconds counts as broken (set by init, may be changed). The
     * connect timeout is the client's (roost_client_set_timeouts). */
    long idle_timeout_s;
    /* Kept across reads: the last event id and the server's retry: belong to the stream, not to
     * one connection (parser.retry_ms: -1 until the server sends one). */
    struct sse_parser parser;
    /* The last sdk_sse_reader_read(): */
    bool sent;   /* the request went out (false: it could not be built or signed) */
    bool opened; /* the server answered 200 and the stream was read */
};

void sdk_sse_reader_init(struct sdk_sse_reader *r, roost_ping_fn on_ping,
                         void (*on_open)(void *ctx), void *ctx);
void sdk_sse_reader_cleanup(struct sdk_sse_reader *r);

/* Opens agent_id's stream on c's connection (c's token, signing key, CA file, connect timeout,
 * and abort flag: a set flag ends the read within about a second) and feeds it to the parser
 * until on_ping returns non-zero (then ROOST_OK) or the stream ends. Returns ROOST_ECONNECT
 * (could not connect, closed, silent for idle_timeout_s, aborted), the mapped error of a
 * non-200 answer, ROOST_EPROTO (the stream broke the parser's limits), or before sending
 * (r->sent false) ROOST_EAGENTID, ROOST_EINVAL (URL too long), ROOST_ENOMEM, ROOST_EINTERNAL
 * (libcurl refused an option) or a signing error.
 * c's error details describe the failure. Blocks; c can make no other call meanwhile. */
int sdk_sse_reader_read(struct sdk_sse_reader *r, struct roost_client *c, const char *agent_id);

#endif
