/* SPDX-License-Identifier: MIT */
/* An I/O-free incremental parser for Server-Sent Events streams (WHATWG HTML "event stream
 * interpretation"): feed it bytes as they arrive, in any split, and it calls back once per
 * dispatched event. Line and event sizes are bounded so that a hostile server cannot make it
 * allocate without limit.
 *
 *   retry: 3000\n          -> parser->retry_ms = 3000 (no event)
 *   \n
 *   id: 1045\r\n           -> last event id "1045" (kept for later events, as the spec says)
 *   event: inbox_updated\r -> type
 *   data: {"a":1}\n        -> data lines, joined with "\n"
 *   : comment\n            -> ignored
 *   \n                     -> dispatch {id "1045", event "inbox_updated", data "{\"a\":1}"}
 */
#ifndef ROOST_PROTO_SSE_H
#define ROOST_PROTO_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Return codes of sse_parser_feed. */
enum sse_rc {
    SSE_OK = 0,
    SSE_ELINE = -1,    /* a line is longer than max_line_bytes: the stream is unusable */
    SSE_EEVENT = -2,   /* an event's data is larger than max_event_bytes */
    SSE_ENOMEM = -3,   /* out of memory */
    SSE_ESTOPPED = -4, /* the callback asked to stop */
};

/* One dispatched event. Every pointer is borrowed and valid only during the callback; the strings
 * are NUL-terminated and their lengths exclude the NUL (data may itself contain NUL bytes). */
struct sse_event {
    const char *id; /* the last event id ("" when none was ever set) */
    size_t id_len;
    const char *event; /* the type: "message" when the event named none */
    size_t event_len;
    const char *data; /* data lines joined with "\n", without the final newline */
    size_t data_len;
    int64_t retry_ms; /* the last retry: value seen so far, -1 when none */
};

/* Returns 0 to continue, anything else to stop (sse_parser_feed then returns SSE_ESTOPPED). */
typedef int (*sse_event_fn)(void *ctx, const struct sse_event *ev);

/* Buffers grow on demand up to their maxima. */
struct sse_buf {
    char *p;
    size_t len;
    size_t cap;
};

struct sse_parser {
    size_t max_line_bytes;
    size_t max_event_bytes;
    struct sse_buf line;    /* the current, unterminated line */
    struct sse_buf data;    /* data of the event being built */
    struct sse_buf event;   /* its type */
    struct sse_buf id;      /* last event id (persists across events) */
    bool has_data;          /* a data field was seen since the last dispatch */
    bool after_cr;          /* the last byte was CR: a following LF belongs to it */
    bool bom_checked;       /* the first bytes of the stream were checked for a UTF-8 BOM */
    unsigned char bom_seen; /* BOM bytes matched so far at stream start */
    int64_t retry_ms;       /* last valid retry: field, -1 when none */
    int error;              /* sticky: once failed, every feed returns it */
};

/* Limits used when 0 is passed: a 64 KiB line, a 1 MiB event. */
#define SSE_DEFAULT_MAX_LINE_BYTES ((size_t)64 * 1024)
#define SSE_DEFAULT_MAX_EVENT_BYTES ((size_t)1024 * 1024)

/* Prepares a parser (no allocation yet). 0 means the default for either limit. */
void sse_parser_init(struct sse_parser *p, size_t max_line_bytes, size_t max_event_bytes);
/* Frees its buffers; the parser may be initialised again. */
void sse_parser_cleanup(struct sse_parser *p);
/* Forgets everything of the current stream except the limits, the last event id and retry (a
 * reconnection starts a new stream; the spec keeps both across reconnections). */
void sse_parser_reset_stream(struct sse_parser *p);

/* Parses len bytes of the stream, calling cb for each complete event. Returns SSE_OK, or an
 * sse_rc error; errors are sticky (the stream must be dropped and a new one parsed after
 * sse_parser_reset_stream). Not thread-safe: one parser per stream. */
int sse_parser_feed(struct sse_parser *p, const char *buf, size_t len, sse_event_fn cb, void *ctx);

#endif
