/* SPDX-License-Identifier: MIT */
/* The daemon as one object: the event loop, the HTTP front (http.c), the store workers, auth, the
 * long-poll waiters and the scheduler. Everything here lives on the loop thread unless noted. */
#ifndef ROOST_SERVER_H
#define ROOST_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/auth.h"
#include "server/config.h"
#include "store/store.h"

struct event_base;
struct evbuffer;
struct evhttp;
struct evhttp_request;
struct evhttp_bound_socket;
struct workers;
struct waiters;
struct scheduler;
struct sse_hub;
struct metrics;
struct sigcheck;

/* One store (a database) with its threads and its scheduler: the default one (store.url) and one
 * per store.tenant.* entry (DESIGN §8.3: tenants mapped to shards by configuration). */
struct shard {
    const char *tenant_id; /* NULL: the default store; borrowed from the config */
    const char *url;
    struct workers *workers;
    struct scheduler *sched;
};

struct server {
    struct config *cfg;
    const struct config_source *source; /* how cfg was built; SIGHUP rebuilds from it */
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    struct event *accept_resume; /* re-enables accepting after EMFILE (http.c) */
    struct shard *shards;        /* shards[0] is the default store */
    size_t n_shards;
    struct auth *auth;
    struct waiters *waiters;
    struct sse_hub *sse;
    struct metrics *metrics;
    struct ssl_ctx_st *tls_ctx; /* SSL_CTX of built-in HTTPS (tls.cert_file), or NULL */
    struct event *sig_term, *sig_int, *sig_hup;
    char base_url[80];
    bool draining;
    size_t inflight;         /* requests accepted and not yet answered */
    size_t closing;          /* answered while draining, connection not yet flushed and closed */
    uint64_t request_serial; /* for request ids */
    struct evp_pkey_st *sign_key; /* roostd's Ed25519 signing key (sigverify.c) */
    char *sign_jwks;              /* its public JWK Set, served at /api/v1/keys/server */
    char sign_kid[64];
};

/* Starts listening and every component. Writes the ready file (if any) last. `source` (borrowed,
 * must outlive the server) is re-read on SIGHUP to reload the auth keys. */
int server_start(struct server *srv, struct config *cfg, const struct config_source *source,
                 const char *ready_file, char *err, size_t errlen);
/* SIGHUP: rebuilds the config from its sources, takes every reloadable key (doc/CONFIG.md) and
 * swaps in a new auth (keys, issuer, audience, empty token cache). On any error nothing changes
 * and the error is logged. Loop thread only. Returns 0 or -1. */
int server_reload(struct server *srv);
/* Runs the loop until SIGTERM/SIGINT has drained every in-flight request. */
int server_run(struct server *srv);
void server_cleanup(struct server *srv);

/* The workers of the store holding `tenant_id`'s data. */
struct workers *server_workers(struct server *srv, const char *tenant_id);

/* While draining: ends the loop once every request is answered and every answer written. */
void server_drain_check(struct server *srv);

/* After COMMIT: wake long-pollers (and, later, SSE subscribers) of every touched agent. */
void server_notify(struct server *srv, const struct store_touches *touches);

/* ---- one HTTP request (http.c) ---- */

struct request {
    struct server *srv;
    struct evhttp_request *req;
    char id[24];
    int64_t start_ms;
    int64_t start_us; /* monotonic, for the duration histogram */
    const struct route *route;
    const char *pseudo_route; /* "healthz", "readyz", "metrics": routes outside the table */
    struct auth_principal principal;
    char agent_id[STORE_ID_MAX + 1];
    char event_id[STORE_EVENT_ID_LEN + 1];
    char key_id[STORE_ID_MAX + 1]; /* {key} of /admin/keys/{key}/... */
    struct sigcheck *sig;          /* signature check state (sigverify.c), NULL when none */
    json_t *body; /* parsed body object; NULL when the route takes none or it was empty */
    struct evkeyvalq *query;
    void *op;                  /* the handler's state while a job is in flight */
    void (*op_free)(void *op); /* frees op when the request ends */
};

/* The router's name of the request's route ("-" before routing): the label of logs, metrics and
 * store jobs. */
const char *request_route_name(const struct request *rq);
/* Ends a request whose connection now belongs to someone else (an SSE stream): frees it and
 * leaves the in-flight count without sending anything. */
void request_detach(struct request *rq);
/* Sends a JSON body (stolen) with `status` and ends the request. A body that cannot be rendered
 * (NULL, out of memory) is answered 500 out_of_memory instead, never an empty 200. */
void request_reply_json(struct request *rq, int status, json_t *body);
/* Sends a complete JSON text (taken over; NULL = it could not be built, answered as above) with
 * `status` and ends the request. */
void request_reply_buffer(struct request *rq, int status, struct evbuffer *body);
/* Sends the error body of `rc` ({"error":{"code","message",...extra}}) and ends the request.
 * message NULL = the table's message; extra (stolen, may be NULL) is merged into "error". */
void request_reply_error(struct request *rq, int rc, const char *message, json_t *extra);

/* Query parameters, strictly parsed: decimal integers only, range-checked, a repeated name is an
 * error. Absent → *out = def and ROOST_OK. Otherwise ROOST_OK or `bad_rc`. */
int request_query_int(struct request *rq, const char *name, int64_t min, int64_t max, int64_t def,
                      int bad_rc, int64_t *out);
/* NULL when absent; sets *rc = ROOST_EQUERY when repeated. */
const char *request_query_str(struct request *rq, const char *name, int *rc);

/* Body fields. Absent or null → default/NULL and ROOST_OK; wrong type or range → bad_rc. */
int body_int(const json_t *body, const char *name, int64_t min, int64_t max, int64_t def,
             int bad_rc, int64_t *out);
int body_str(const json_t *body, const char *name, size_t max_len, int bad_rc, const char **out);
/* ROOST_EUNKNOWNFIELD (with the name in *bad) when body has a key not in the NULL-ended list. */
int body_only_fields(const json_t *body, const char *const *allowed, const char **bad);

/* Event object as the API shows it (its payload parsed: for single events). NULL when out of
 * memory. */
json_t *event_to_json(const struct store_event *ev, bool with_claim, bool with_audit);
/* Appends the same object as text to out, its payload written as stored (never re-parsed).
 * ROOST_OK or ROOST_ENOMEM (out then ends in a partial object: discard it). */
int event_json_append(struct evbuffer *out, const struct store_event *ev, bool with_claim,
                      bool with_audit);
/* A new buffer holding `{"events":[…]` (the caller appends its other members and the closing
 * brace) with the events of `list` in order, stopping before the event that would take the
 * buffer past max_bytes (0 = no budget; never before the first). *n gets how many it holds.
 * NULL when out of memory. Lists whose events the store already held to a budget (a claim's
 * leases must all reach the client) pass 0. */
struct evbuffer *events_json_new(const struct store_events *list, bool with_claim, bool with_audit,
                                 size_t max_bytes, size_t *n);

/* ---- routes (api_*.c) ---- */

void api_publish(struct request *rq);
void api_inbox_read(struct request *rq);
void api_inbox_claim(struct request *rq);
void api_event_ack(struct request *rq);
void api_events_ack(struct request *rq);
void api_event_release(struct request *rq);
void api_event_extend(struct request *rq);
void api_release_all(struct request *rq);
void api_state_get(struct request *rq);
void api_admin_agents(struct request *rq);
void api_admin_quarantine(struct request *rq);
void api_admin_requeue(struct request *rq);
void api_admin_quarantine_inspect(struct request *rq);
void api_admin_purge(struct request *rq);
void api_admin_stats(struct request *rq);
void api_subscribe(struct request *rq);
void api_admin_keys_add(struct request *rq);
void api_admin_keys_list(struct request *rq);
void api_admin_keys_revoke(struct request *rq);
/* GET /api/v1/keys/server: no authentication. */
void api_server_keys(struct request *rq);

#endif
