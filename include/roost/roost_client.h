/* SPDX-License-Identifier: MIT */
/* libroost client: one connection context to a roostd (HTTP keep-alive, bearer token, timeouts,
 * last-error detail) and the synchronous calls of the REST API v1 (DESIGN §5): publish, cursor
 * read, claim/ack/release/extend, state sync and the operator calls. */
#ifndef ROOST_CLIENT_H
#define ROOST_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roost/roost_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Conventions of every function in this header
 * --------------------------------------------
 * Return value: ROOST_OK (0) or a negative roost_rc from roost_error.h.
 *   - A server error answer ({"error":{"code":...}}) is mapped back through roost_err_from_code()
 *     (an unknown code falls back to the HTTP status: 400 ROOST_EINVAL, 401
 *     ROOST_EUNAUTHENTICATED, 403 ROOST_EFORBIDDEN, 404 ROOST_ENOTFOUND, 409 ROOST_ESTATE, 410
 *     ROOST_EGONE, 413 ROOST_ETOOLARGE, 429 ROOST_ERATELIMIT, 503 ROOST_EUNAVAILABLE, other 5xx
 *     ROOST_EINTERNAL, anything else ROOST_EPROTO).
 *   - ROOST_ECONNECT: the server could not be reached, the connection broke or the request timed
 *     out. The request may or may not have been applied.
 *   - ROOST_EPROTO: the server answered something that is not the documented JSON (wrong type,
 *     missing field, larger than the response cap, ...).
 *   - ROOST_EINVAL: a bad argument, detected before anything was sent (NULL where a value is
 *     required, a value out of range). ROOST_EAGENTID for an agent id that does not match
 *     [A-Za-z0-9._-]{1,128}.
 *   - ROOST_ENOMEM: out of memory. The SDK never aborts the process.
 *   After any error, roost_client_errmsg() describes it and roost_client_errcode() names it.
 * Ownership: every `const char *` argument is borrowed for the duration of the call. Every result
 *   delivered through an out-parameter belongs to the caller and is released with the matching
 *   _free function (or roost_free() for plain strings). Out-parameters are set to NULL / 0 on
 *   error, so freeing them unconditionally is always safe.
 * Threads: a struct roost_client is NOT thread-safe; use one client per thread (each has its own
 *   connection). Different clients may be used concurrently. Results are independent of the
 *   client and may be passed between threads.
 * Retries: roost_publish, roost_publish_batch and roost_publish_json retry a request that failed
 *   with ROOST_ECONNECT, ROOST_ERETRY, ROOST_EUNAVAILABLE, ROOST_ESHUTDOWN or ROOST_ERATELIMIT up
 *   to 3 more times (waits of 100, 200, 400 ms, or the server's Retry-After, at most 2 s), always
 *   with the same body. roost_publish and roost_publish_batch give every message without an
 *   idempotency_key a generated one ("rk_" + a ULID), so a retry after a lost answer returns the
 *   events of the first attempt (duplicate set) instead of publishing them twice;
 *   roost_publish_json retries only when every event of the body has its own key. Every other
 *   call is one HTTP request. Acks are idempotent on the server, so an ack that failed with
 *   ROOST_ECONNECT or a 503 may simply be repeated.
 * Structures returned by the SDK (struct roost_event, struct roost_events, ...) are allocated by
 *   libroost only: never allocate, copy by value or embed them, since later versions may append
 *   fields. The input structures struct roost_message and struct roost_ack are the caller's
 *   (initialise a message with roost_message_init()).
 * A NULL client gives ROOST_EINVAL (there is then no error message to read).
 */

struct roost_client;

/* ---- client lifecycle --------------------------------------------------------------------- */

/* Creates a client for `server_url` ("http://host:port", "https://host/prefix"; a bare
 * "host:port" means http://host:port; trailing slashes are ignored) authenticating with the
 * bearer `token` (may be NULL: only unauthenticated routes will work). No I/O happens here.
 * Defaults: connect timeout 10 s, request timeout 30 s (plus the wait_s of a long poll), response
 * cap 64 MiB.
 * Returns ROOST_OK and *out, ROOST_EINVAL (NULL out or url, unsupported scheme, url longer than
 * 2048 bytes or with spaces/control characters, a token that is not one line of printable ASCII
 * of at most 8192 bytes), ROOST_ENOMEM, ROOST_EINTERNAL (libcurl could not initialise).
 * Thread-safe (the first call initialises libcurl once per process). */
ROOST_EXPORT int roost_client_new(struct roost_client **out, const char *server_url,
                                  const char *token);

/* Closes the connection and frees the client. NULL is a no-op. */
ROOST_EXPORT void roost_client_free(struct roost_client *c);

/* Replaces the bearer token (NULL removes it), for example after refreshing an expiring token.
 * Returns ROOST_OK, ROOST_EINVAL (c NULL, token longer than 8192 bytes or containing a control
 * character), ROOST_ENOMEM (the old token is kept). */
ROOST_EXPORT int roost_client_set_token(struct roost_client *c, const char *token);

/* Supplies the bearer token for a client: writes the current token, NUL-terminated, into buf
 * (cap bytes, the NUL included) and returns ROOST_OK, or returns a negative roost error code
 * (the client then keeps the token it had). ROOST_EUNAUTHENTICATED says the credentials behind
 * the tokens were refused for good (a revoked device): the request then fails with it without
 * being sent. `arg` is the one given with the callback. */
typedef int (*roost_token_fn)(void *arg, char *buf, size_t cap);

/* Makes the client ask fn for its token before every request (and every SSE connection), so
 * that a token rotated by its issuer (a file rewritten, a credential helper) is picked up
 * without a new client; fn should answer from a cache and fetch anew only when the token has
 * changed or nears its expiry. A token fn answers that roost_client_new would refuse is ignored.
 * fn runs on the thread making the request; one fn given to several clients (the agent's) must
 * be thread-safe. NULL fn: the token stays as set. Returns ROOST_OK or ROOST_EINVAL (c NULL). */
ROOST_EXPORT int roost_client_set_token_callback(struct roost_client *c, roost_token_fn fn,
                                                 void *arg);

/* Sets the connection-establishment timeout and the per-request timeout in milliseconds (0 keeps
 * the current value). A long poll (wait_s > 0) gets request_timeout_ms + wait_s * 1000.
 * Returns ROOST_OK or ROOST_EINVAL (c NULL, negative value). */
ROOST_EXPORT int roost_client_set_timeouts(struct roost_client *c, long connect_timeout_ms,
                                           long request_timeout_ms);

/* Caps the size of a response body (default 64 MiB; at least 4096). A larger answer fails with
 * ROOST_EPROTO without being buffered. Returns ROOST_OK or ROOST_EINVAL. */
ROOST_EXPORT int roost_client_set_max_response_bytes(struct roost_client *c, size_t max_bytes);

/* Trusts the CA certificates of a PEM bundle for https:// servers (NULL: the system store).
 * Returns ROOST_OK, ROOST_EINVAL, ROOST_ENOMEM. */
ROOST_EXPORT int roost_client_set_ca_file(struct roost_client *c, const char *ca_pem_path);

/* Signs every later request of this client per RFC 9421 (doc/API.md "Request signatures"):
 * each gets a Content-Digest (sha-256) when it has a body, and Signature-Input / Signature under
 * label sig1 covering "@method" "@path" "@query" (only when the URL has a query) "@authority"
 * "content-digest" (only with a body) "authorization" (only with a token), with created = now,
 * expires = now + 60, a fresh random nonce (128 bits, base64url), keyid = key_id and alg. The
 * Host header is set to the @authority signed (host[:port] of the server URL, lowercase, default
 * port omitted), so a proxy in front of roostd must preserve Host. The SSE stream of
 * roost_subscribe() is signed too.
 *   signing_key: PEM text of a private key (it contains "-----BEGIN "), "base64:" followed by an
 *     HMAC secret, or the path of a file holding either (at most 16 KiB; for hmac-sha256 the file
 *     holds the secret in base64, the form `roost keys add --secret-file` registers). NULL
 *     removes the key: requests are no longer signed (key_id and alg are then ignored).
 *   key_id: the keyid registered on the server, [A-Za-z0-9._-]{1,128}.
 *   alg: "ed25519", "ecdsa-p256-sha256", "rsa-pss-sha512", "rsa-v1_5-sha256" or "hmac-sha256";
 *     NULL: implied by a PEM key (Ed25519 → ed25519, P-256 → ecdsa-p256-sha256, RSA →
 *     rsa-pss-sha512); required for hmac-sha256 (secret of 32..1024 bytes).
 * The key is read and checked (one trial signature) here; the file is not read again. Strings
 * are borrowed for the call; the client keeps its own copy of the key, wiped when replaced or
 * freed. Same thread rules as every call on the client.
 * Returns ROOST_OK (the previous key, if any, is replaced), ROOST_EINVAL (c NULL),
 * ROOST_EKEYID (bad key_id), ROOST_EKEYALG (unknown alg, or a key type no alg fits),
 * ROOST_EKEYMATERIAL (not a PEM private key / a base64 secret of 32..1024 bytes, larger than
 * 16 KiB, or the key cannot sign with alg, e.g. a public key), ROOST_EIO (the file cannot be
 * opened or read), ROOST_ENOMEM. On error the previous key stays in force and
 * roost_client_errmsg() says why. Later requests can fail with ROOST_EINTERNAL (signing failed,
 * e.g. no random bytes) before anything is sent; a server refusal of the signature is 401
 * (ROOST_ESIGINVALID, ROOST_EKEYUNKNOWN, ROOST_EKEYREVOKED, ROOST_EKEYWRONGAGENT, ...). */
ROOST_EXPORT int roost_client_set_signing_key(struct roost_client *c, const char *signing_key,
                                              const char *key_id, const char *alg);

/* Supplies a request-signing key that rotates (a logged-in device's: roost_device_signing_key).
 * Asked right after the token callback before every request: *gen holds the generation of the
 * key the client has (0: none); fn returns ROOST_OK leaving *gen alone while that key is
 * current, or writes the current key (as roost_client_set_signing_key's signing_key: PEM text or
 * "base64:"+secret), its key_id and alg, each NUL-terminated within its cap, and sets *gen to its
 * generation; the client then signs with it. Any other answer keeps the key the client had.
 * Thread rules as roost_token_fn. */
typedef int (*roost_signing_key_fn)(void *arg, uint64_t *gen, char *key, size_t key_cap,
                                    char *key_id, size_t id_cap, char *alg, size_t alg_cap);

/* Makes the client ask fn for its signing key before every request (NULL fn: the key stays as
 * set). Returns ROOST_OK or ROOST_EINVAL (c NULL). */
ROOST_EXPORT int roost_client_set_signing_key_callback(struct roost_client *c,
                                                       roost_signing_key_fn fn, void *arg);

/* ---- last call details (valid until the next call on the same client) --------------------- */

/* Human-readable description of the last error: the server's message, or the transport /
 * parsing failure. "" after a success. Never NULL (also for c == NULL). Borrowed. */
ROOST_EXPORT const char *roost_client_errmsg(const struct roost_client *c);

/* Stable snake_case code of the last error as the server sent it (it may be a code this SDK
 * version does not know), or roost_err_code() of a client-side error; "" after a success.
 * Never NULL. Borrowed. */
ROOST_EXPORT const char *roost_client_errcode(const struct roost_client *c);

/* HTTP status of the last response, 0 when no response was received. */
ROOST_EXPORT int roost_client_http_status(const struct roost_client *c);

/* X-Request-Id of the last response ("" when absent). Quote it when reporting a server problem.
 * Borrowed, never NULL. */
ROOST_EXPORT const char *roost_client_request_id(const struct roost_client *c);

/* roostd's version as the last response gave it (X-Roost-Version), "" when it did not. Borrowed,
 * never NULL. */
ROOST_EXPORT const char *roost_client_server_version(const struct roost_client *c);

/* Raw body of the last response (success or error), NUL-terminated; *len_out (optional) gets its
 * length. "" when there was none. Borrowed: valid until the next call on this client. */
ROOST_EXPORT const char *roost_client_last_body(const struct roost_client *c, size_t *len_out);

/* After ROOST_EGONE (cursor_expired): the oldest cursor the server still keeps, as given in the
 * error's "oldest_cursor"; -1 when unknown. Resync with roost_state_get() and continue from the
 * state's cursor. */
ROOST_EXPORT int64_t roost_client_oldest_cursor(const struct roost_client *c);

/* After ROOST_ERATELIMIT / ROOST_EUNAVAILABLE: the server's Retry-After in seconds, -1 when
 * absent. */
ROOST_EXPORT int64_t roost_client_retry_after_s(const struct roost_client *c);

/* ---- results ------------------------------------------------------------------------------ */

/* One event as the server describes it. Strings are NUL-terminated copies; a field the server
 * sent as null or did not send is NULL (strings) or 0 (numbers) unless stated. Times are RFC 3339
 * UTC strings with milliseconds ("2026-12-02T18:35:06.123Z"). */
struct roost_event {
    char *event_id;          /* "evt_" + ULID */
    char *agent_id;          /* recipient */
    int64_t sequence_number; /* per-agent cursor position */
    char *status; /* "pending", "scheduled", "claimed", "completed", "quarantined", ... */
    int priority; /* -100..100 */
    char *correlation_id;
    char *payload; /* compact JSON text of the payload object (NULL once completed) */
    char *created_at;
    char *available_at;
    char *expires_at;
    /* claim fields (roost_inbox_claim) */
    char *lease_token;      /* present the token on ack / release / extend */
    char *claim_expires_at; /* the lease ends here unless extended */
    int attempts;           /* claims so far, this one included */
    /* quarantine views (roost_admin_quarantine_list) */
    int timeouts;
    int nacks;
    char *last_error;
    /* the whole event object as compact JSON, including fields this SDK does not model */
    char *json;
};

/* A list of events plus the paging data of the call that produced it. */
struct roost_events {
    struct roost_event **items; /* items[0..count) */
    size_t count;
    int64_t next_cursor; /* roost_inbox_read: pass as after_cursor next time */
    bool has_more;       /* roost_inbox_read: more events are available right now;
                            roost_inbox_claim: the batch ended at limit or at the server's
                            byte budget (limits.max_response_bytes): claim again at once */
    char *next_page;     /* admin lists: opaque token of the next page, NULL on the last page */
    bool duplicate;      /* roost_publish*: every row was an idempotent repeat (HTTP 200) */
    int64_t head;        /* roost_inbox_read: the agent's head when the server tells it, else -1 */
};

/* Frees a list and all its events. NULL is a no-op. */
ROOST_EXPORT void roost_events_free(struct roost_events *evs);

/* Frees a string returned by libroost (roost_state_get, roost_token_mint, ...). NULL is a no-op. */
ROOST_EXPORT void roost_free(void *p);

/* ---- publish (producer) ------------------------------------------------------------------- */

/* One event to publish: one row per recipient (fan-out). Initialise with roost_message_init()
 * and set what you need; unset fields take the server's defaults. Every pointer is borrowed. */
struct roost_message {
    const char *const *recipients; /* agent ids, n_recipients >= 1 */
    size_t n_recipients;
    const char *payload;         /* JSON object text; NULL means {} */
    int priority;                /* -100..100, default 0 */
    const char *correlation_id;  /* optional */
    const char *idempotency_key; /* a repeat returns the original event(s); NULL: generated */
    int64_t delay_s;             /* > 0: becomes available after this many seconds */
    const char *available_at;    /* RFC 3339 alternative to delay_s (NULL: unset) */
    int64_t ttl_s;               /* > 0: expires this many seconds after publish */
    const char *expires_at;      /* RFC 3339 alternative to ttl_s (NULL: unset) */
    const char *state_patch;     /* JSON Merge Patch object applied to each recipient's state */
};

/* Zeroes *m (every field unset). */
ROOST_EXPORT void roost_message_init(struct roost_message *m);

/* Publishes one message. On success *out lists the rows created (event_id, agent_id,
 * sequence_number only), one per recipient; (*out)->duplicate is true when every row was an
 * idempotent repeat (also when a retry found the events its lost first attempt had made).
 * Errors: see the conventions. Checked locally, before sending:
 * ROOST_EPAYLOAD / ROOST_ESTATEPATCH (payload / state_patch is not a JSON object),
 * ROOST_EJSONDEPTH (nested deeper than 512), ROOST_EAGENTID (a bad recipient),
 * ROOST_ERECIPIENTS (none), ROOST_EPRIORITY (outside -100..100), ROOST_EAVAILABLEAT /
 * ROOST_EEXPIRESAT (negative, or both forms given). Then every error of the server's validation
 * (ROOST_EPAYLOADTOOLARGE, ROOST_EIDEMKEY, ROOST_EFORBIDDEN, ...). */
ROOST_EXPORT int roost_publish(struct roost_client *c, const struct roost_message *msg,
                               struct roost_events **out);

/* Publishes n messages in one transaction (all or nothing). Same results and errors as
 * roost_publish; ROOST_EBATCH when n is 0. */
ROOST_EXPORT int roost_publish_batch(struct roost_client *c, const struct roost_message *msgs,
                                     size_t n, struct roost_events **out);

/* Publishes a ready-made request body: one event object or {"events":[...]} (DESIGN §5.2),
 * sent as is after a local check that it is a JSON object. Same results and errors. */
ROOST_EXPORT int roost_publish_json(struct roost_client *c, const char *body_json,
                                    struct roost_events **out);

/* ---- inbox (agent) ------------------------------------------------------------------------ */

/* Cursor sync: the events of `agent_id` with sequence_number > after_cursor, in order. Mutates
 * nothing. limit 1..1000 (0: server default 10); wait_s > 0 long-polls up to that many seconds
 * when there is nothing yet (server maximum claim.max_wait_s, default 30).
 * On success *out holds the events, next_cursor and has_more.
 * ROOST_EGONE: after_cursor is older than retention; roost_client_oldest_cursor() tells the
 * oldest kept cursor; resync with roost_state_get(). Also ROOST_ECURSOR, ROOST_ELIMIT, ROOST_EWAIT
 * (400 from the server for values out of range), ROOST_EINVAL for negative arguments. */
ROOST_EXPORT int roost_inbox_read(struct roost_client *c, const char *agent_id,
                                  int64_t after_cursor, int limit, int wait_s,
                                  struct roost_events **out);

/* Peek: the event the next roost_inbox_claim() of `agent_id` would take (highest priority, then
 * lowest sequence_number; pending, available, unexpired), payload included, without claiming it:
 * no lease, no attempt counted, nothing changed, so another consumer may claim it first. Needs
 * the agent's read scope. On success *out holds that one event (count 1, no lease fields) or
 * none (count 0) when nothing is claimable; free it with roost_events_free(). Errors: see the
 * conventions (ROOST_EAGENTID, ROOST_EFORBIDDEN, ...). */
ROOST_EXPORT int roost_inbox_peek(struct roost_client *c, const char *agent_id,
                                  struct roost_events **out);

/* Claims up to `limit` events (0: server default 10) under a lease of lease_s seconds (0: server
 * default, lease.default_s), waiting up to wait_s seconds when none is available (0: answer at
 * once). `consumer` (optional, [A-Za-z0-9._:-]{1,128}) names this process so that
 * roost_inbox_release_all() releases only its leases. An empty list is a success. Every returned
 * event carries lease_token, claim_expires_at and attempts. */
ROOST_EXPORT int roost_inbox_claim(struct roost_client *c, const char *agent_id, int limit,
                                   int lease_s, int wait_s, const char *consumer,
                                   struct roost_events **out);

/* Completes a claimed event. ROOST_ELEASEMISMATCH (409) when the token is not the current lease
 * (it expired and the event was claimed again), ROOST_ESTATE when the event is not claimed,
 * ROOST_EEVENTNOTFOUND when there is no such event. Repeating a successful ack is ROOST_OK. */
ROOST_EXPORT int roost_event_ack(struct roost_client *c, const char *agent_id, const char *event_id,
                                 const char *lease_token);

/* One item of a batch ack: event_id and lease_token are inputs (borrowed), rc the output. */
struct roost_ack {
    const char *event_id;
    const char *lease_token;
    int rc; /* ROOST_OK when completed, else the item's error (ROOST_ELEASEMISMATCH, ...) */
};

/* Acks n events in one request. Returns ROOST_OK when the server processed the batch — each
 * acks[i].rc then tells that item's outcome and *n_failed (optional) counts the items whose rc is
 * not ROOST_OK — or an error for the whole request (then every acks[i].rc is that error).
 * ROOST_EACKS when n is 0 or the server's limits.max_batch is exceeded. */
ROOST_EXPORT int roost_events_ack(struct roost_client *c, const char *agent_id,
                                  struct roost_ack *acks, size_t n, size_t *n_failed);

/* Why an event is given back. */
enum roost_release_reason {
    ROOST_RELEASE_DEFAULT = 0, /* let the server decide (transient) */
    ROOST_RELEASE_TRANSIENT,   /* a failure worth retrying: counts a nack */
    ROOST_RELEASE_SHUTDOWN,    /* this process is stopping: counts nothing */
    ROOST_RELEASE_POISON       /* never retry: quarantine now */
};

/* Wire name of a reason ("transient", ...; NULL for ROOST_RELEASE_DEFAULT or unknown values). */
ROOST_EXPORT const char *roost_release_reason_name(enum roost_release_reason reason);
/* Parses a wire name. Returns ROOST_OK or ROOST_EREASON. */
ROOST_EXPORT int roost_release_reason_parse(const char *name, enum roost_release_reason *out);

/* Gives a claimed event back (NACK): it becomes claimable again after delay_s seconds (0: at
 * once). error_text (optional, <= 4096 bytes) is recorded as the event's last_error. Errors as
 * roost_event_ack, plus ROOST_EDELAY, ROOST_EREASON, ROOST_EERRORTEXT. */
ROOST_EXPORT int roost_event_release(struct roost_client *c, const char *agent_id,
                                     const char *event_id, const char *lease_token, int64_t delay_s,
                                     enum roost_release_reason reason, const char *error_text);

/* Extends a lease to now + lease_s. *claim_expires_at_out (optional) gets the new end (RFC 3339,
 * free with roost_free). Errors as roost_event_ack, plus ROOST_ELEASE, and ROOST_ELEASECAP when
 * the lease would pass lease.max_total_s since the claim. */
ROOST_EXPORT int roost_event_extend(struct roost_client *c, const char *agent_id,
                                    const char *event_id, const char *lease_token, int lease_s,
                                    char **claim_expires_at_out);

/* Releases (reason shutdown) every lease `consumer` holds on the agent's inbox; NULL consumer
 * releases the leases claimed without a consumer id. *released_out (optional) gets the count. */
ROOST_EXPORT int roost_inbox_release_all(struct roost_client *c, const char *agent_id,
                                         const char *consumer, int64_t *released_out);

/* Full state sync: *state_json_out gets the agent's state document (compact JSON object text,
 * free with roost_free; "{}" for an agent whose state was never written) and *cursor_out
 * (optional) the cursor it is consistent with: continue cursor reads from there. */
ROOST_EXPORT int roost_state_get(struct roost_client *c, const char *agent_id,
                                 char **state_json_out, int64_t *cursor_out);

/* ---- wake-up stream ------------------------------------------------------------------------ */

/* Called for each event of the stream: `event` is "inbox_updated" (new or claimable work: pull)
 * or "heartbeat" (nothing new unless the hint moved), `cursor_hint` the agent's head (-1 when the
 * data carried none). Return 0 to keep listening, anything else to end roost_subscribe(). */
typedef int (*roost_ping_fn)(const char *event, int64_t cursor_hint, void *ctx);

/* Opens GET /api/v1/agents/{agent}/subscribe (DESIGN §5.1) on the client's connection and calls
 * on_ping for every event until on_ping returns non-zero (then ROOST_OK) or the stream ends:
 * ROOST_ECONNECT when it could not be opened or was closed/broken (a stream silent for 75 s
 * counts as broken: roostd sends a heartbeat every 30 s), the mapped error of a non-200 answer
 * (ROOST_EUNAUTHENTICATED, ROOST_EFORBIDDEN, ROOST_ERATELIMIT, ...), ROOST_EPROTO when the
 * stream breaks the parser's limits (64 KiB lines and events). Blocks the calling thread; the
 * client can make no other call meanwhile (use a second client to pull from on_ping). Reconnect
 * with backoff after an error; roost_agent_run() does all of that for you. */
ROOST_EXPORT int roost_subscribe(struct roost_client *c, const char *agent_id,
                                 roost_ping_fn on_ping, void *ctx);

/* ---- operator API (token scope tenant:admin) ---------------------------------------------- */

/* Lists quarantined events of the tenant, optionally of one agent (agent_id NULL: all), at most
 * `limit` (0: server default) per page, starting at page token `page` (NULL: first page).
 * (*out)->next_page is the next page's token, NULL on the last page. Events carry timeouts,
 * nacks and last_error. ROOST_EPAGE for a malformed page token. */
ROOST_EXPORT int roost_admin_quarantine_list(struct roost_client *c, const char *agent_id,
                                             int limit, const char *page,
                                             struct roost_events **out);

/* Puts a quarantined event back to pending (same event id, attempts reset by the server).
 * ROOST_EEVENTNOTFOUND, ROOST_ESTATE when it is not quarantined. */
ROOST_EXPORT int roost_admin_quarantine_requeue(struct roost_client *c, const char *event_id);

/* One agent of the operator's agent list. Counters the server did not send are -1. */
struct roost_agent_info {
    char *agent_id;
    int64_t head; /* highest committed sequence number */
    int64_t pending;
    int64_t scheduled;
    int64_t claimed;
    int64_t quarantined;
    char *json; /* the whole object, compact, including fields this SDK does not model */
};

struct roost_agents {
    struct roost_agent_info **items; /* items[0..count) */
    size_t count;
    char *next_page; /* opaque token of the next page, NULL on the last page */
};

/* Lists the tenant's agents with their counters, paginated like roost_admin_quarantine_list. */
ROOST_EXPORT int roost_admin_agents_list(struct roost_client *c, int limit, const char *page,
                                         struct roost_agents **out);

/* As roost_admin_agents_list, in another order: sort "agent" (NULL: the default), "depth"
 * (most pending first) or "age" (oldest pending first). Page tokens belong to their order.
 * Each agent's json also carries oldest_pending_age_s, subscribers and last_seen_at. */
ROOST_EXPORT int roost_admin_agents_list_sorted(struct roost_client *c, const char *sort, int limit,
                                                const char *page, struct roost_agents **out);

/* One quarantined event with payload, attempts, timeouts, nacks and last_error: *json_out gets
 * the event object (compact JSON, free with roost_free). ROOST_EEVENTNOTFOUND when there is no
 * such event in the quarantine. */
ROOST_EXPORT int roost_admin_quarantine_inspect(struct roost_client *c, const char *event_id,
                                                char **json_out);

/* Deletes quarantined events for good: one (event_id), one agent's (agent_id), or all of the
 * tenant's (both NULL), at most `limit` per call (0: server default 1000; ignored for one
 * event). *purged_out (optional) gets the count, *more_out (optional) whether to call again.
 * ROOST_EEVENTNOTFOUND / ROOST_ESTATE for a named event that is unknown / not quarantined. */
ROOST_EXPORT int roost_admin_quarantine_purge(struct roost_client *c, const char *agent_id,
                                              const char *event_id, int limit, int64_t *purged_out,
                                              bool *more_out);

/* Puts quarantined events back to pending (a dead-letter redrive): one agent's (agent_id) or all
 * of the tenant's (NULL), oldest first, at most `limit` per call (0: server default 100, at most
 * 1000). *requeued_out (optional) gets the count, *more_out (optional) whether quarantined events
 * remain past the limit (call again). ROOST_ELIMIT, ROOST_EAGENTID. */
ROOST_EXPORT int roost_admin_quarantine_requeue_all(struct roost_client *c, const char *agent_id,
                                                    int limit, int64_t *requeued_out,
                                                    bool *more_out);

/* The tenant's totals (pending, scheduled, claimed, quarantined, oldest ages, subscribers) as of
 * the server's last metrics snapshot: *json_out gets the object (free with roost_free).
 * ROOST_EUNAVAILABLE right after the server started. */
ROOST_EXPORT int roost_admin_stats(struct roost_client *c, char **json_out);

/* One event of the tenant in any status ("what happened to event X?"): *json_out gets the event
 * object with payload, status, attempts, timeouts, nacks, last_error, consumer, claimed_at,
 * completed_at and, while claimed, its lease (the token shortened, consumer, expiry). Free it with
 * roost_free. ROOST_EEVENTNOTFOUND when the tenant has no such event (or retention removed it),
 * ROOST_EEVENTID for a malformed id. */
ROOST_EXPORT int roost_admin_event_get(struct roost_client *c, const char *event_id,
                                       char **json_out);
/* The tenant's events published with this correlation_id (1..256 bytes), any agent and status,
 * by agent then sequence number, without payloads: *json_out gets {"events":[...],"next":TOKEN|
 * null} (each event as roost_admin_event_get shows it). limit 0 = the server's default (20; at
 * most 100); page = the previous answer's "next" or NULL. ROOST_ECORRELATION, ROOST_ELIMIT,
 * ROOST_EPAGE. */
ROOST_EXPORT int roost_admin_events_find(struct roost_client *c, const char *correlation_id,
                                         int limit, const char *page, char **json_out);

/* Registers a request-signing key (doc/API.md "Signature keys"): key_id [A-Za-z0-9._-]{1,128},
 * agent_id an agent id or "*" (a producer key, for publish), alg as roost_client_set_signing_key,
 * and exactly one of public_key_pem (PEM text of the public key) or secret_b64 (hmac-sha256:
 * base64 of 32..1024 bytes). *json_out (optional; free with roost_free) gets the key's metadata
 * {"key_id","agent_id","alg","created_at","revoked_at"}. Checked locally: ROOST_EKEYID,
 * ROOST_EAGENTID, ROOST_EKEYALG (alg NULL or empty), ROOST_EKEYMATERIAL (both or neither
 * material, not UTF-8). From the server: ROOST_EKEYEXISTS (409), ROOST_EKEYMATERIAL,
 * ROOST_EKEYALG, ROOST_EFORBIDDEN (no tenant:admin), and the conventions' errors. */
ROOST_EXPORT int roost_admin_key_add(struct roost_client *c, const char *key_id,
                                     const char *agent_id, const char *alg,
                                     const char *public_key_pem, const char *secret_b64,
                                     char **json_out);

/* Lists the tenant's signing keys (metadata only), `limit` per page (0: server default),
 * starting at page token `page` (NULL: first page). *json_out (required; roost_free) gets
 * {"keys":[...],"next":TOKEN|null}. ROOST_EINVAL (json_out NULL, negative limit), ROOST_EPAGE
 * (empty or over-long page token), and the conventions' errors. */
ROOST_EXPORT int roost_admin_keys_list(struct roost_client *c, int limit, const char *page,
                                       char **json_out);

/* Revokes a signing key: requests signed with it are refused (401 key_revoked) from now on.
 * Revoking again keeps the first revocation time. *json_out (optional; roost_free) gets the key
 * with revoked_at. ROOST_EKEYID (checked locally), ROOST_EKEYNOTFOUND (404: no such key in this
 * tenant), and the conventions' errors. */
ROOST_EXPORT int roost_admin_key_revoke(struct roost_client *c, const char *key_id,
                                        char **json_out);

/* Frees an agent list. NULL is a no-op. */
ROOST_EXPORT void roost_agents_free(struct roost_agents *agents);

/* ---- escape hatch ------------------------------------------------------------------------- */

/* Sends one request to an API route this SDK has no function for yet. method is "GET", "POST",
 * "PUT", "DELETE" or "PATCH"; path_and_query starts with "/" and is sent as is (escape it
 * yourself); body_json (optional) must be a JSON object. On a 2xx answer returns ROOST_OK and
 * *response_out (optional) gets the body (free with roost_free); other answers are mapped to
 * errors as for every call, and the error body stays readable through roost_client_last_body().
 * *status_out (optional) gets the HTTP status in both cases. */
ROOST_EXPORT int roost_client_request(struct roost_client *c, const char *method,
                                      const char *path_and_query, const char *body_json,
                                      int *status_out, char **response_out);

#ifdef __cplusplus
}
#endif
#endif
