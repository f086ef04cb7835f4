/* SPDX-License-Identifier: MIT */
/* One HTTP request as the routes see it, its one reply path and its parameter helpers. The router
 * (router.c) creates it and fills it in; a handler always ends it with one request_reply_*() (or
 * hands its connection over with request_detach()). Loop thread only. */
#ifndef ROOST_SERVER_REQUEST_H
#define ROOST_SERVER_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/auth.h"
#include "store/store.h"

struct evbuffer;
struct job;
struct evhttp_request;
struct evkeyvalq;
struct route;
struct runtime;
struct sigcheck;
struct sockaddr;

struct request {
    struct runtime *rt;
    struct evhttp_request *req;
    char id[33]; /* X-Request-Id: 32 hex digits of 128 random bits */
    int64_t start_ms;
    int64_t start_us;          /* monotonic, for the duration histogram */
    const struct route *route; /* the router's table entry (router.c), NULL when unrouted */
    const char *route_name;    /* its name, or "healthz", "readyz", ...; NULL before routing */
    bool pseudo_route;         /* a route outside the table: successes are not logged */
    struct auth_principal principal;
    char agent_id[STORE_ID_MAX + 1];
    char event_id[STORE_EVENT_ID_LEN + 1];
    char key_id[STORE_ID_MAX + 1]; /* {key} of /admin/keys/{key}/... */
    struct sigcheck *sig;          /* signature check state (sigverify.c), NULL when none */
    void (*sig_free)(struct sigcheck *sig); /* frees sig when the request ends */
    json_t *body; /* parsed body object; NULL when the route takes none or it was empty */
    struct evkeyvalq *query;
    void *op;                  /* the handler's state while a job is in flight */
    void (*op_free)(void *op); /* frees op when the request ends */
    /* roostd's /mcp runs a REST handler for a tool call (api_mcp.c): when set, the request's
     * JSON answer (its status and complete text, taken over) goes through reply_filter once,
     * which returns the text to send instead (NULL: it could not be built) and may change the
     * status. reply_filter_arg is its argument (released with json_decref at request end). */
    struct evbuffer *(*reply_filter)(struct request *rq, int *status, struct evbuffer *body);
    json_t *reply_filter_arg;
};

/* The handler preamble, written once: a zeroed op of `size` bytes that the request holds from
 * now on (rq->op; `free_fn` frees it when the request ends). NULL after answering 500
 * out_of_memory. */
void *request_op_new(struct request *rq, size_t size, void (*free_fn)(void *));

/* A new request for evhttp's `req`, with its id and start time, held in rt's in-flight count
 * until it ends. NULL when out of memory. */
struct request *request_new(struct runtime *rt, struct evhttp_request *req);

/* True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. sa may be NULL (false). */
bool request_addr_is_loopback(const struct sockaddr *sa);
/* True when the request's peer connected over loopback (the TCP peer, not any forwarded-for
 * header: a reverse proxy on the same host counts as loopback). */
bool request_peer_is_loopback(const struct request *rq);

/* The router's name of the request's route ("-" before routing): the label of logs, metrics and
 * store jobs. */
const char *request_route_name(const struct request *rq);
/* The store job kind of the request's route (routes.c), the op label of store metrics; NULL
 * ("other") when it declares none. */
const char *request_job_kind(const struct request *rq);
/* Ends a request whose connection now belongs to someone else (an SSE stream): frees it and
 * leaves the in-flight count without sending anything. */
void request_detach(struct request *rq);

/* Sends a JSON body (stolen) with `status` and ends the request. A body that cannot be rendered
 * (NULL, out of memory) is answered 500 out_of_memory instead, never an empty 200. */
void request_reply_json(struct request *rq, int status, json_t *body);
/* Sends a complete JSON text (taken over; NULL = it could not be built, answered as above) with
 * `status` and ends the request. */
void request_reply_json_text(struct request *rq, int status, struct evbuffer *body);
/* The answer of a job that rendered its page on a worker: the error of rc, else 200 with *page
 * (taken: *page is NULL after; NULL = it could not be built, answered 500). */
void request_reply_rendered(struct request *rq, int rc, struct evbuffer **page);
/* Sends the error body of `rc` ({"error":{"code","message",...extra}}) and ends the request.
 * message NULL = the table's message; extra (stolen, may be NULL) is merged into "error". */
void request_reply_error(struct request *rq, int rc, const char *message, json_t *extra);
/* The explanation request_explain and the parameter helpers left on this thread, moved out of
 * it: checks run on a worker take it there, and their done() puts it back on the loop thread
 * before answering, so the reply explains as if they had run on the loop. */
struct request_refusal {
    int rc;
    json_t *detail;
    char message[256];
};
void request_refusal_take(struct request_refusal *out);
void request_refusal_put(struct request_refusal *r);
/* Tells the client when to come back (Retry-After: wait_s) on the error reply that follows: a
 * rate limit's answer. */
void request_set_retry_after(struct request *rq, int64_t wait_s);
/* The same, then closes the connection: after a framing error nothing more can be trusted. */
void request_reply_error_close(struct request *rq, int rc, const char *message);
/* Explains the next error reply of code `rc` that brings no message of its own: printf-style
 * text, and `detail` (stolen, may be NULL) merged into "error". For a refusal found deep in a
 * handler ("the token lacks the scope agent:a1:publish") whose caller answers with the code only.
 * Loop thread; forgotten when the request ends. */
void request_explain(int rc, json_t *detail, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sends a text/plain body (unless a Content-Type was set already) and ends the request. */
void request_reply_text(struct request *rq, int status, const char *text);
/* Sends `body` (borrowed; drained) as `content_type`, not cached unless the handler set a
 * Cache-Control of its own, and ends the request. */
/* An answer without a body (204: a CORS preflight). */
void request_reply_empty(struct request *rq, int status);

void request_reply_buffer(struct request *rq, int status, const char *content_type,
                          struct evbuffer *body);

/* Query parameters, strictly parsed: decimal integers only, range-checked, a repeated name is an
 * error. Absent → *out = def and ROOST_OK. Otherwise ROOST_OK, `bad_rc` (out of range, not an
 * integer) or ROOST_EQUERYREPEAT (repeated). A refusal is remembered: an error reply of that code
 * without a message of its own names the parameter and its rule ("limit must be an integer
 * between 1 and 1000", +"param", "min", "max"). */
int request_query_int(struct request *rq, const char *name, int64_t min, int64_t max, int64_t def,
                      int bad_rc, int64_t *out);
/* NULL when absent; sets *rc = ROOST_EQUERYREPEAT when repeated (remembered as above). */
const char *request_query_str(struct request *rq, const char *name, int *rc);
/* True when a query string has a percent-encoded NUL (%00), which the decoder would turn into a
 * string end: such a query is refused, never truncated. */
bool request_query_has_nul(const char *query);
/* Refuses (400 unknown query parameter, naming it) a query with a parameter not in `known`
 * (NULL-ended; NULL: none allowed). True when every parameter is known; false after the reply. */
bool request_query_only(struct request *rq, const char *const *known);
/* Parses the query string into rq->query. ROOST_OK, ROOST_ENOMEM or ROOST_EQUERY. */
int request_parse_query(struct request *rq);
/* A JSON body of more bytes than this, from an authenticated tenant, is parsed on a worker: the
 * scan readers (workers.h), in turn with the tenant's other bulk jobs and at their lower CPU
 * priority. Parsing a 1 MiB body held the loop thread 3-19 ms, every other tenant's requests
 * waiting behind it. */
#define REQUEST_BODY_OFF_LOOP_BYTES (64 * 1024)
/* Runs a request's bulk work (a big body's parse, a big batch's checks) on the scan readers, in
 * turn with the tenant's scans and at their priority, never on the loop: fills job's run, done,
 * name and tenant, and submits it. The request must not be touched until done runs. */
void request_submit_bulk(struct request *rq, struct job *job,
                         int (*run)(struct job *, struct store *), void (*done)(struct job *),
                         const char *name);
/* Reads the JSON object body (or a form route's form, as an object of strings) into rq->body,
 * then runs cont(rq, rc) on the loop thread: at once, or for a JSON body over
 * REQUEST_BODY_OFF_LOOP_BYTES once a worker has parsed it (a job named "parse_body" in
 * roost_store_op_duration_seconds). rc: ROOST_OK; for an empty body {} when `optional`, else
 * ROOST_EJSON; ROOST_ETOOLARGE, ROOST_EMEDIATYPE, ROOST_ENOMEM or the parser's error. */
void request_read_body_then(struct request *rq, bool optional,
                            void (*cont)(struct request *rq, int rc));

/* The same, with the bounds of the route's declaration (routes.c: min, max or its configuration
 * key) for parameter `name`. A name the route does not declare is ROOST_EINTERNAL (and logged):
 * a handler reads only what the declaration, and so the OpenAPI document, describes. */
int request_param_int(struct request *rq, const char *name, int64_t def, int bad_rc, int64_t *out);
const char *request_param_str(struct request *rq, const char *name, int *rc);
/* Body fields the same way; `name` is the declared name ("limit", "acks[].event_id": the key of
 * each item of acks). A string must have the declared min..max bytes. */
int body_param_int(struct request *rq, const json_t *obj, const char *name, int64_t def, int bad_rc,
                   int64_t *out);
int body_param_str(struct request *rq, const json_t *obj, const char *name, int bad_rc,
                   const char **out);
/* ROOST_EUNKNOWNFIELD (the key in *bad) when obj has a key the route does not declare among its
 * body fields under `prefix` ("" for the body itself, "acks[]" for each item of acks). */
int body_param_only(const struct request *rq, const json_t *obj, const char *prefix,
                    const char **bad);

/* True for "application/json", optionally with "; charset=utf-8" (any case). */
bool request_content_type_is_json(const char *ct);

/* Body fields. Absent or null → default/NULL and ROOST_OK; wrong type or range → bad_rc (body_int
 * remembers it, as request_query_int does). */
int body_int(const json_t *body, const char *name, int64_t min, int64_t max, int64_t def,
             int bad_rc, int64_t *out);
int body_str(const json_t *body, const char *name, size_t max_len, int bad_rc, const char **out);
/* ROOST_EUNKNOWNFIELD (with the name in *bad) when body has a key not in the NULL-ended list. */
int body_only_fields(const json_t *body, const char *const *allowed, const char **bad);

#endif
