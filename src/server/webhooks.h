/* SPDX-License-Identifier: MIT */
/* Webhooks for server agents (DESIGN §6.3): a wake-up plus delivery over the same inbox, never a
 * second source of truth. Three parts:
 *   webhooks_sign.c  the Standard Webhooks secret and signature, Content-Digest and roostd's RFC
 *                    9421 signature of a delivery, the retry schedule (pure, any thread);
 *   webhooks_http.c  the one way roostd talks to an endpoint: libcurl with the destination filter
 *                    (ssrf.h) checked on every connect, https only, no redirects;
 *   webhooks.c       the dispatcher: per store, a thread with its own connection and a libcurl
 *                    multi handle that claims on the agent's behalf, POSTs, acks or releases with
 *                    backoff, logs each attempt; never on the I/O loop.
 * A delivery (POST of the event object, no lease token):
 *   webhook-id: evt_…            webhook-timestamp: 1700000000
 *   webhook-signature: v1,<base64 HMAC-SHA256(secret key, "id.timestamp.body")>
 *   content-digest: sha-256=:…:  signature-input / signature: roostd's Ed25519 key (keyid = the
 *   kid of /api/v1/keys/server) over @method @authority @path content-digest content-type
 *   webhook-id webhook-timestamp. */
#ifndef ROOST_SERVER_WEBHOOKS_H
#define ROOST_SERVER_WEBHOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/ssrf.h"
#include "server/webhooks_config.h"
#include "store/store_webhooks.h"

struct config;
struct metrics;
struct server_key;
struct store_options;

/* ---- webhooks_sign.c ---- */

#define WEBHOOKS_SECRET_MIN_BYTES 24
#define WEBHOOKS_SECRET_MAX_BYTES 64

/* Decodes a "whsec_<base64>" secret into key[WEBHOOKS_SECRET_MAX_BYTES]. ROOST_OK or
 * ROOST_EWEBHOOKSECRET (not that form, or not 24..64 bytes). */
int webhooks_secret_key(const char *secret, unsigned char *key, size_t *key_len);
/* v1,<base64 HMAC-SHA256(key, "id.timestamp.body")> into out (at least 64 bytes). */
int webhooks_sign_v1(const unsigned char *key, size_t key_len, const char *msg_id, int64_t ts,
                     const char *body, size_t body_len, char *out, size_t cap);
/* Lowercase hex HMAC-SHA256(key, challenge) into out (65 bytes): the verification answer. */
void webhooks_challenge_answer(const unsigned char *key, size_t key_len, const char *challenge,
                               char out[65]);

/* The headers of one delivery, each a full "Name: value" line for libcurl. */
#define WEBHOOKS_N_HEADERS 8
struct webhooks_headers {
    char *lines[WEBHOOKS_N_HEADERS];
    size_t n;
};
void webhooks_headers_cleanup(struct webhooks_headers *h);
/* roostd's signing identity: the server key and its kid (borrowed). */
struct webhooks_signer {
    struct evp_pkey_st *pkey;
    char kid[128];
};
/* Loads the kid from the key's JWK Set. ROOST_OK or ROOST_EINTERNAL. */
int webhooks_signer_init(struct webhooks_signer *s, const struct server_key *k);
/* Builds every header of a POST of body to url: Content-Type, the Standard Webhooks trio,
 * Content-Digest and Signature-Input/Signature. ROOST_OK, ROOST_EWEBHOOKURL, ROOST_ENOMEM or
 * ROOST_EINTERNAL; on failure h is left clean. */
int webhooks_headers_build(const struct webhooks_signer *signer, const unsigned char *key,
                           size_t key_len, const char *url, const char *msg_id, int64_t ts,
                           const char *body, size_t body_len, struct webhooks_headers *h);

/* ---- webhooks_http.c ---- */

/* What a request may reach and trust (copied from the config at start; immutable after). */
struct webhooks_net {
    struct ssrf_filter filter;
    char ca_file[1024]; /* "" = the system CAs only */
    long connect_timeout_ms;
};

/* Fills net from the config (webhooks.allow_cidrs, webhooks.ca_file,
 * webhooks.connect_timeout_ms). 0, or -1 with err set. */
int webhooks_net_init(struct webhooks_net *net, const struct config *cfg, char *err, size_t errlen);

/* Checks a registration URL: an absolute https URL (ROOST_EHTTPSREQUIRED for any other scheme,
 * ROOST_EWEBHOOKURL when malformed or longer than STORE_URL_MAX, or carrying credentials or a
 * fragment) whose host resolves only to addresses the filter allows (ROOST_EDESTFORBIDDEN naming
 * the first refused one in why; a name that does not resolve is ROOST_EDESTFORBIDDEN too).
 * Blocking (getaddrinfo): never on the I/O loop. */
int webhooks_url_check(const struct webhooks_net *net, const char *url, char *why, size_t whylen);

/* The outcome of one POST. */
struct webhooks_result {
    long status; /* HTTP status, 0 = no answer */
    int64_t latency_ms;
    const char *error_class; /* "ok", "http_status", "redirect", "gone", "timeout", "connect",
                                "destination_forbidden", "tls", "error" (static) */
    char head[STORE_WH_HEAD_MAX + 1]; /* the first bytes of the answer */
    char *body;                       /* the answer (at most 64 KiB), NUL-terminated, or NULL */
    size_t body_len;
};
void webhooks_result_cleanup(struct webhooks_result *r);

/* One POST in flight (owned by whoever made it). */
struct webhooks_call;
/* Prepares a POST of body (copied) with the headers (taken over) to url, through the filter, no
 * redirects, https only, timeout_ms overall; a GET when body is NULL (body_len 0). NULL when out
 * of memory. */
struct webhooks_call *webhooks_call_new(const struct webhooks_net *net, const char *url,
                                        struct webhooks_headers *headers, const char *body,
                                        size_t body_len, long timeout_ms);
/* Its libcurl easy handle, for a multi handle (CURL *). */
void *webhooks_call_easy(struct webhooks_call *c);
/* After the transfer finished with curl code `code` (CURLcode): fills *r. */
void webhooks_call_finish(struct webhooks_call *c, int code, struct webhooks_result *r);
void webhooks_call_free(struct webhooks_call *c);
/* Runs a call to the end on this thread (blocking): the verification challenge. */
void webhooks_call_run(struct webhooks_call *c, struct webhooks_result *r);

/* The verification challenge of DESIGN §6.3 (blocking, timeout_ms): POSTs
 * {"type":"endpoint.verification","challenge":"<random base64url>"} signed like a delivery and
 * expects 200 {"challenge_response":"<hex HMAC-SHA256(key, challenge)>"}. ROOST_OK, or
 * ROOST_EVERIFYFAILED with the reason in why. */
int webhooks_verify_endpoint(const struct webhooks_net *net, const struct webhooks_signer *signer,
                             const char *url, const char *secret, long timeout_ms, char *why,
                             size_t whylen);

/* ---- webhooks.c: the dispatcher ---- */

struct webhooks;
/* Starts the dispatcher of one store (`url`): its own connection and thread. The config values
 * are copied (not reloadable); signer and metrics must outlive it (metrics may be NULL).
 * NULL with err set on failure. */
struct webhooks *webhooks_start(const struct config *cfg, const char *url,
                                const struct store_options *opt,
                                const struct webhooks_signer *signer, struct metrics *metrics,
                                char *err, size_t errlen);
/* Loop thread (any thread): a commit changed what the agent may claim (runtime_notify). Queues a
 * wake of the dispatcher when the agent has an active endpoint it knows of; cheap otherwise (a
 * lock and a binary search). NULL is a no-op. */
void webhooks_notify(struct webhooks *w, const char *tenant_id, const char *agent_id);
/* Any thread: an endpoint was registered, enabled, disabled or deleted through this node; the
 * dispatcher reads the endpoint list again at once. NULL is a no-op. */
void webhooks_reload(struct webhooks *w);
/* Stops the thread (deliveries in flight are abandoned: their leases expire and they are
 * delivered again later), closes the connection. NULL is a no-op. */
void webhooks_stop(struct webhooks *w);

#endif
