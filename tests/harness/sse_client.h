/* SPDX-License-Identifier: MIT */
/* A raw SSE client for the integration tests: GET …/subscribe over a plain socket, with the
 * chunked transfer encoding and the SSE framing decoded here (no library in between), so tests
 * see exactly what roostd sent. */
#ifndef ROOST_TEST_SSE_CLIENT_H
#define ROOST_TEST_SSE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/harness.h"

struct sse {
    int fd;
    int status;    /* 0 until the status line was read */
    char *headers; /* the header block (status line included), NUL-terminated */
    char *raw;     /* bytes received and not yet decoded */
    size_t raw_len, raw_cap;
    char *body; /* the decoded body */
    size_t body_len, body_cap, body_off;
    size_t content_length; /* non-chunked answers (errors) */
    bool chunked;
    bool ended;       /* the terminating chunk was received */
    bool closed;      /* EOF or reset */
    bool bad_framing; /* a chunk that does not parse */
    size_t n_bytes;   /* everything received */
};

struct sse_ev {
    char event[32]; /* "" for a block without event: (retry:) */
    char data[256];
    bool has_id, has_retry, has_data;
    int64_t id, retry;
    bool unknown_field;
};

void sse_close(struct sse *s);

/* Connects and sends the request. rcvbuf > 0 shrinks the receive buffer first (a slow reader's
 * window fills quickly). extra: more header lines, each ending in \r\n, or NULL. */
int sse_connect(struct sse *s, const struct roostd *d, const char *path, const char *token,
                const char *extra, int rcvbuf);

/* A header's value (first match, case-insensitive name) into buf, or NULL. */
const char *sse_header(const struct sse *s, const char *name, char *buf, size_t len);

/* Connects and reads the status line and headers (and, for an error, the whole body). Returns
 * the status, or -1. */
int sse_open(struct sse *s, const struct roostd *d, const char *path, const char *token,
             const char *extra, int rcvbuf);

/* The next event block: 1, 0 when none came within timeout_ms, -1 when the stream ended. */
int sse_next(struct sse *s, struct sse_ev *ev, int timeout_ms);

/* The next event named `name`, skipping others (heartbeats); counts what was skipped. */
int sse_next_named(struct sse *s, const char *name, struct sse_ev *ev, int timeout_ms,
                   int *skipped);

/* data is exactly {"cursor_hint":head}: a data-less ping, nothing else. */
bool data_is_hint(const struct sse_ev *ev, int64_t head);

/* The next inbox_updated (heartbeats skipped) is the ping for `head`. */
bool expect_ping(struct sse *s, int64_t head, int timeout_ms);

/* Reads pings until the one for `head` (earlier heads skipped). */
bool wait_ping(struct sse *s, int64_t head, int timeout_ms);

/* Opens a stream and consumes retry: and the connect-time event (inbox_updated for head). */
bool subscribe(struct sse *s, const struct roostd *d, const char *tok, const char *agent,
               int64_t head);

/* An application's transaction on the store's own database, as a subscriber of agent x.a of
 * tenant t1 on node n sees it: its business row and a publish through the database's
 * roost_publish committed together (a ping for head + 1, the event in n's inbox), then the same
 * rolled back (no row, no ping within quiet_ms). The SQL is the server's: the table made first,
 * then begin, insert and publish of order 1, commit, begin, insert and publish of order 2,
 * rollback; exec runs one statement on the application's connection db (0 = done). */
struct app_tx_sql {
    const char *create, *begin, *insert1, *publish1, *commit, *insert2, *publish2, *rollback;
};
void app_transaction_pings(struct sse *s, const struct roostd *n, const char *tok, int64_t head,
                           int (*exec)(void *db, const char *sql), void *db,
                           const struct app_tx_sql *q, int ping_ms, int quiet_ms);

/* Waits up to timeout_ms for bytes and decodes them. >0 bytes read, 0 timeout, -1 closed. */
int sse_fill(struct sse *s, int timeout_ms);

#endif
