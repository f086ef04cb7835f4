/* SPDX-License-Identifier: MIT */
/* libroost agent loop: everything an agent process needs to work its inbox without losing work
 * (DESIGN §7). It claims events under leases and runs a handler for each, on `concurrency`
 * threads; it keeps a local SQLite state file (cursor, processed event ids, outstanding leases,
 * connection state), pulls before streaming, listens to the SSE wake-up pings, falls back to
 * long-poll claims while the stream is down, extends leases at half-life, batches acks, releases
 * failures with exponential backoff, never runs a handler twice for an event it already handled
 * (a lost ack is repeated instead), resynchronises from GET …/state on 410, and on stop releases
 * what it holds. doc/AGENT.md describes the loop in detail. */
#ifndef ROOST_AGENT_H
#define ROOST_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roost/roost_client.h"
#include "roost/roost_error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct roost_agent;

/* What a handler decided about one event. */
enum roost_agent_result {
    ROOST_AGENT_ACK = 0,         /* done: recorded as processed, then acked (batched) */
    ROOST_AGENT_RELEASE = 1,     /* failed: released (transient) with exponential backoff delay */
    ROOST_AGENT_RETRY_LATER = 2, /* try again later, no penalty: released (reason shutdown) with
                                    a delay of 1 s doubling per attempt up to 300 s (or the
                                    outcome's retry_after_s); from attempt tempfail_max on it
                                    counts as a failure (reason transient) toward the server's
                                    claim.max_attempts, so a handler that only ever says "later"
                                    ends quarantined */
    ROOST_AGENT_QUARANTINE = 3   /* never retry: released with reason poison */
};
/* The older name of ROOST_AGENT_RETRY_LATER (it no longer releases without a delay). */
#define ROOST_AGENT_RELEASE_NOW ROOST_AGENT_RETRY_LATER

/* Bytes of ROOST_AGENT_OUTCOME.error, its NUL included. */
#define ROOST_AGENT_ERROR_MAX 2048

/* What a handler of the roost_agent_handler_ex_fn kind may tell besides its result. The agent
 * zeroes it before each call. */
struct roost_agent_outcome {
    /* For ROOST_AGENT_RELEASE and ROOST_AGENT_RETRY_LATER: the earliest retry, in seconds
     * (1..31536000), instead of the agent's own backoff; 0: the agent's backoff. */
    int64_t retry_after_s;
    /* Why it failed (NUL-terminated, any bytes: what is not printable UTF-8 is replaced): sent
     * as the release's error text, which the server keeps as the event's last_error (the
     * quarantine views show it), and logged. "" for none. */
    char error[ROOST_AGENT_ERROR_MAX];
};

/* Called once per claimed event on one of the agent's worker threads (so concurrently with itself
 * when concurrency > 1). `ev` (with payload, lease_token, attempts, ...) is borrowed for the call.
 * Returns an enum roost_agent_result; any other value counts as ROOST_AGENT_RELEASE. The lease is
 * extended in the background while it runs. Must not call roost_agent_free(); may call
 * roost_agent_stop(). */
typedef int (*roost_agent_handler_fn)(const struct roost_event *ev, void *ctx);

/* A handler that may also fill *out (a retry delay, an error text): otherwise as
 * roost_agent_handler_fn. `out` is borrowed for the call. */
typedef int (*roost_agent_handler_ex_fn)(const struct roost_event *ev,
                                         struct roost_agent_outcome *out, void *ctx);

/* Called after a 410 (the agent's cursor is older than the server's retention): `state_json` is
 * the agent's state document (borrowed, compact JSON object) and `cursor` the position it is
 * consistent with; the agent continues from there. Runs on the thread that called
 * roost_agent_run(). */
typedef void (*roost_agent_state_fn)(const char *state_json, int64_t cursor, void *ctx);

/* Connection state of the agent. */
enum roost_agent_conn {
    ROOST_AGENT_CONN_STARTING = 0, /* roost_agent_run() has not connected yet */
    ROOST_AGENT_CONN_STREAMING,    /* SSE stream open: woken by pings */
    ROOST_AGENT_CONN_POLLING,      /* stream down, server reachable: long-poll claims */
    ROOST_AGENT_CONN_OFFLINE,      /* server unreachable: retrying with backoff */
    ROOST_AGENT_CONN_STOPPED       /* roost_agent_run() returned (or the process died, see
                                      roost_agent_status_read) */
};

/* "starting", "streaming", "polling", "offline", "stopped" ("unknown" otherwise). */
ROOST_EXPORT const char *roost_agent_conn_name(enum roost_agent_conn conn);

/* Called on every change of the connection state, from any of the agent's threads (never
 * concurrently with itself). Must not block for long. */
typedef void (*roost_agent_conn_fn)(enum roost_agent_conn conn, void *ctx);

/* Called for notable happenings (recovery, resync, failures), one line of text, from any of the
 * agent's threads (never concurrently with itself). Optional; without it the agent is silent. */
typedef void (*roost_agent_log_fn)(const char *line, void *ctx);

/* Options of roost_agent_new(). Initialise with roost_agent_options_init(); every pointer is
 * borrowed for the duration of roost_agent_new() (copied), except the contexts. */
struct roost_agent_options {
    const char *server_url; /* required: as roost_client_new() */
    const char *token;      /* required (unless token_cb): needs agent:<id>:consume */
    const char *agent_id;   /* required: [A-Za-z0-9._-]{1,128} */
    const char *state_dir;  /* required: created (0700) when missing; holds agent.db, agent.lock */
    const char *consumer;   /* [A-Za-z0-9._:-]{1,128}; NULL: "<hostname>-<pid>" */
    const char *ca_file;    /* optional PEM bundle for https */
    int concurrency;        /* handlers running at once, 1..256; 0: 1 */
    int lease_s;            /* lease per claim, 1..43200; 0: 60 */
    int poll_ceiling_s;     /* adaptive poll backoff ceiling, 1..86400; 0: 300 */
    int long_poll_s;        /* wait_s of long-poll claims while SSE is down, 0..30 (0: 25) */
    int processed_max;      /* processed-id set: most ids kept, 16..10000000; 0: 100000 */
    int64_t processed_max_age_s;    /* and their age, >= 60; 0: 7 days */
    roost_agent_handler_fn handler; /* this or handler_ex is required (not both) */
    void *handler_ctx;              /* passed to handler or handler_ex */
    roost_agent_state_fn on_state;  /* optional: 410 resync */
    roost_agent_conn_fn on_conn;    /* optional */
    roost_agent_log_fn on_log;      /* optional */
    void *cb_ctx;                   /* passed to on_state, on_conn, on_log */
    /* Optional RFC 9421 request signing (see roost_client_set_signing_key): when
     * signing_key_file is set, every request of the agent (claims, acks, extends, releases,
     * state, the SSE stream) is signed with it. signing_key_file: a key file path, PEM text or
     * "base64:"+secret; key_id: required with it; key_alg: NULL to imply it from a PEM key.
     * A key that cannot be loaded makes roost_agent_new fail with that function's codes
     * (ROOST_EKEYID, ROOST_EKEYALG, ROOST_EKEYMATERIAL, ROOST_EIO). */
    const char *signing_key_file;
    const char *key_id;
    const char *key_alg;
    roost_agent_handler_ex_fn handler_ex; /* instead of handler */
    int tempfail_max; /* ROOST_AGENT_RETRY_LATER counts nothing below this attempt, 1..1000;
                         0: 10 */
    /* Optional: supplies the token before every request of the agent (see
     * roost_client_set_token_callback), so an agent outlives its tokens when their issuer
     * rotates them. Called from several of the agent's threads at once: it must be
     * thread-safe. `token`, when also set, is used until the callback first answers. */
    roost_token_fn token_cb;
    void *token_cb_arg;
    /* While streaming, the agent also pulls on its own every stream_resync_s seconds, in case a
     * ping was lost on the way, 1..86400; 0: 60. */
    int stream_resync_s;
    /* Optional: supplies a signing key that rotates (see roost_client_set_signing_key_callback;
     * a logged-in device's: roost_device_signing_key with the roost_device as arg), asked after
     * token_cb before every request. Thread-safe, as token_cb. */
    roost_signing_key_fn signing_key_cb;
    void *signing_key_cb_arg;
};

/* Sets every field to its default (zero/NULL). */
ROOST_EXPORT void roost_agent_options_init(struct roost_agent_options *opts);

/* Creates an agent: validates the options, creates the state directory, takes its lock and opens
 * (or creates) the state file. No network I/O happens here.
 * Returns ROOST_OK and *out, or ROOST_EINVAL (NULL argument, missing or out-of-range option, a
 * server URL or token roost_client_new refuses), ROOST_EAGENTID, ROOST_ECONSUMER, ROOST_ESTATE
 * (another process holds the state dir's lock, or the state file belongs to another agent id),
 * ROOST_EIO (the state dir or file cannot be created or opened), ROOST_ENOMEM, ROOST_EINTERNAL.
 * Thread-safe. */
ROOST_EXPORT int roost_agent_new(struct roost_agent **out, const struct roost_agent_options *opts);

/* Runs the loop on the calling thread until roost_agent_stop(): first releases the leases a
 * crashed previous run left in the state file, then pulls, streams, polls, handles (see the file
 * comment). Network failures are never fatal: the agent retries with backoff. On stop it stops
 * claiming, gives back (reason shutdown) what it claimed but did not start, waits for running
 * handlers to return, flushes acks and releases everything still held by its consumer id
 * (release-all). Returns ROOST_OK after a stop, ROOST_EINVAL (NULL, or run called twice),
 * ROOST_EUNAUTHENTICATED / ROOST_EFORBIDDEN (the token is refused: retrying cannot help) or
 * another 401 error (the request signature is refused: ROOST_EKEYREVOKED, ROOST_ESIGMISSING, ...),
 * ROOST_EIO (the state file cannot be written), ROOST_ENOMEM, ROOST_EINTERNAL (a thread could not
 * be started). Call at most once per agent. */
ROOST_EXPORT int roost_agent_run(struct roost_agent *a);

/* Asks roost_agent_run() to stop and return. Async-signal-safe (one atomic store and one write(2)
 * to a pipe): call it from a SIGINT/SIGTERM handler, a handler callback or any thread. Idempotent;
 * a stop before roost_agent_run() makes run skip everything but the final release-all. */
ROOST_EXPORT void roost_agent_stop(struct roost_agent *a);

/* Frees the agent, closing the state file and releasing the lock. Call only when
 * roost_agent_run() is not running (it returned, or was never called). NULL is a no-op. */
ROOST_EXPORT void roost_agent_free(struct roost_agent *a);

/* A snapshot of the agent's state. */
struct roost_agent_status {
    enum roost_agent_conn conn;
    int64_t cursor;       /* inbox position synced to (the head at the last sync), 0 at first */
    int64_t last_sync_ms; /* Unix ms of the last successful exchange with roostd, 0: never */
    int64_t outstanding_leases; /* leases claimed and not yet acked/released */
    int64_t processed_ids;      /* size of the processed-id set */
    int64_t handled;            /* handler runs in this process (0 from roost_agent_status_read) */
    int64_t acked;              /* acks confirmed by the server in this process (idem) */
    int64_t released; /* releases confirmed in this process, quarantines excluded (idem) */
    int64_t pid;      /* process that last ran the agent */
    bool running;     /* that process still holds the state dir's lock */
    char agent_id[129];
    char consumer[129];
    int64_t quarantined; /* releases the server answered "quarantined" in this process: a
                          * handler's quarantine, or a failure that used the last attempt (idem) */
};

/* Fills *out from a live agent. Thread-safe. Returns ROOST_OK or ROOST_EINVAL. */
ROOST_EXPORT int roost_agent_status(struct roost_agent *a, struct roost_agent_status *out);

/* Reads the status another process left in state_dir (read-only; works while it runs).
 * `running` tells whether an agent currently holds the directory's lock; when none does, conn is
 * ROOST_AGENT_CONN_STOPPED whatever was recorded. Returns ROOST_OK, ROOST_EINVAL, ROOST_EIO (no
 * state file there, or it cannot be read), ROOST_ENOMEM. */
ROOST_EXPORT int roost_agent_status_read(const char *state_dir, struct roost_agent_status *out);

#ifdef __cplusplus
}
#endif
#endif
