/* SPDX-License-Identifier: MIT */
/* The HTTP front on evhttp: the listening socket, framing checks evhttp does not make, the router
 * (one table), authentication and scope checks in one place, body and query parsing, and replies.
 * Handlers get a validated `struct request` and always end it with request_reply_*(). */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h> /* request version: no accessor in 2.1 */
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/ids.h"
#include "common/jsonutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "server/http.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/sigverify.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

#define MAX_HEADER_COUNT 100

enum body_rule {
    BODY_NONE,     /* GET: a body is ignored */
    BODY_REQUIRED, /* POST with parameters: a JSON object is required */
    BODY_OPTIONAL, /* POST without parameters: an empty body (no Content-Type) is accepted */
};

struct route {
    enum evhttp_cmd_type method;
    const char *pattern; /* literal segments, {agent} and {event} */
    const char *name;    /* for logs and metrics */
    enum auth_action action;
    enum body_rule body;
    void (*handler)(struct request *rq);
};

static const struct route routes[] = {
    {EVHTTP_REQ_POST, "/api/v1/events", "publish", AUTH_PUBLISH, BODY_REQUIRED, api_publish},
    {EVHTTP_REQ_GET, "/api/v1/agents/{agent}/inbox", "inbox_read", AUTH_READ, BODY_NONE,
     api_inbox_read},
    {EVHTTP_REQ_POST, "/api/v1/agents/{agent}/inbox/claim", "claim", AUTH_CONSUME, BODY_REQUIRED,
     api_inbox_claim},
    {EVHTTP_REQ_POST, "/api/v1/agents/{agent}/inbox/ack", "ack_batch", AUTH_CONSUME, BODY_REQUIRED,
     api_events_ack},
    {EVHTTP_REQ_POST, "/api/v1/agents/{agent}/inbox/release-all", "release_all", AUTH_CONSUME,
     BODY_OPTIONAL, api_release_all},
    {EVHTTP_REQ_POST, "/api/v1/agents/{agent}/inbox/{event}/ack", "ack", AUTH_CONSUME,
     BODY_REQUIRED, api_event_ack},
    {EVHTTP_REQ_POST, "/api/v1/agents/{agent}/inbox/{event}/release", "release", AUTH_CONSUME,
     BODY_REQUIRED, api_event_release},
    {EVHTTP_REQ_POST, "/api/v1/agents/{agent}/inbox/{event}/extend", "extend", AUTH_CONSUME,
     BODY_REQUIRED, api_event_extend},
    {EVHTTP_REQ_GET, "/api/v1/agents/{agent}/state", "state", AUTH_READ, BODY_NONE, api_state_get},
    {EVHTTP_REQ_GET, "/api/v1/agents/{agent}/subscribe", "subscribe", AUTH_READ, BODY_NONE,
     api_subscribe},
    {EVHTTP_REQ_GET, "/api/v1/admin/agents", "admin_agents", AUTH_ADMIN, BODY_NONE,
     api_admin_agents},
    {EVHTTP_REQ_GET, "/api/v1/admin/quarantine", "admin_quarantine", AUTH_ADMIN, BODY_NONE,
     api_admin_quarantine},
    {EVHTTP_REQ_POST, "/api/v1/admin/quarantine/{event}/requeue", "admin_requeue", AUTH_ADMIN,
     BODY_OPTIONAL, api_admin_requeue},
    /* Before {event}: a literal segment wins over the placeholder. */
    {EVHTTP_REQ_POST, "/api/v1/admin/quarantine/purge", "admin_purge", AUTH_ADMIN, BODY_OPTIONAL,
     api_admin_purge},
    {EVHTTP_REQ_GET, "/api/v1/admin/quarantine/{event}", "admin_quarantine_inspect", AUTH_ADMIN,
     BODY_NONE, api_admin_quarantine_inspect},
    {EVHTTP_REQ_POST, "/api/v1/admin/quarantine/{event}/purge", "admin_purge_event", AUTH_ADMIN,
     BODY_OPTIONAL, api_admin_purge},
    {EVHTTP_REQ_GET, "/api/v1/admin/stats", "admin_stats", AUTH_ADMIN, BODY_NONE, api_admin_stats},
    {EVHTTP_REQ_POST, "/api/v1/admin/keys", "admin_keys_add", AUTH_ADMIN, BODY_REQUIRED,
     api_admin_keys_add},
    {EVHTTP_REQ_GET, "/api/v1/admin/keys", "admin_keys_list", AUTH_ADMIN, BODY_NONE,
     api_admin_keys_list},
    {EVHTTP_REQ_POST, "/api/v1/admin/keys/{key}/revoke", "admin_keys_revoke", AUTH_ADMIN,
     BODY_OPTIONAL, api_admin_keys_revoke},
};

/* ---- request lifecycle ---- */

static void request_free(struct request *rq)
{
    if (rq->op_free && rq->op) {
        rq->op_free(rq->op);
    }
    sigcheck_free(rq->sig);
    json_decref(rq->body);
    if (rq->query) {
        evhttp_clear_headers(rq->query);
        free(rq->query);
    }
    free(rq);
}

static const char *method_name(enum evhttp_cmd_type m)
{
    switch (m) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    default:
        return "OTHER";
    }
}

const char *request_route_name(const struct request *rq)
{
    return rq->route ? rq->route->name : rq->pseudo_route ? rq->pseudo_route : "-";
}

/* Counts the answer and writes the access log line: never the query string (it may carry an
 * access_token), never a body. */
static void request_account(struct request *rq, int status)
{
    int64_t dur_us = time_mono_us() - rq->start_us;
    /* Unrouted requests share one label, so hostile paths cannot grow the label set. */
    const char *route = request_route_name(rq);
    metrics_http(rq->srv->metrics, strcmp(route, "-") == 0 ? "unmatched" : route, status,
                 (double)dur_us / 1e6);
    if (rq->pseudo_route != NULL && status < 400) {
        return; /* health checks and scrapes would drown the log */
    }
    log_line(status >= 500 ? LOG_ERROR : LOG_INFO, "request",
             "req_id=%s method=%s route=%s status=%d duration_ms=%.3f tenant=%s agent=%s", rq->id,
             method_name(evhttp_request_get_command(rq->req)), route, status,
             (double)dur_us / 1000.0, rq->principal.tenant_id[0] ? rq->principal.tenant_id : "-",
             rq->agent_id[0] ? rq->agent_id : "-");
}

/* evhttp frees a "Connection: close" connection once its answer is written: only then may a
 * draining server leave the loop (leaving earlier would discard answers still buffered). */
static void on_drained_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    struct server *srv = arg;
    srv->closing--;
    server_drain_check(srv);
}

/* Called before a reply is queued: while draining, the loop must wait for it to be written. */
static void watch_drain_close(struct request *rq)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(rq->req);
    if (rq->srv->draining && evcon) {
        rq->srv->closing++;
        evhttp_connection_set_closecb(evcon, on_drained_close, rq->srv);
    }
}

/* Ends a request after its reply was queued. */
static void request_end(struct request *rq)
{
    struct server *srv = rq->srv;
    request_free(rq);
    srv->inflight--;
    server_drain_check(srv);
}

void request_detach(struct request *rq)
{
    /* A stream that started counts as answered 200 (its own log line says "stream opened"). */
    metrics_http(rq->srv->metrics, request_route_name(rq), 200,
                 (double)(time_mono_us() - rq->start_us) / 1e6);
    request_end(rq);
}

/* Every reply goes through here: headers, body (taken over; NULL = none), the access log line,
 * and the drain check. */
static void send_reply(struct request *rq, int status, struct evbuffer *body, bool close_conn)
{
    struct server *srv = rq->srv;
    struct evkeyvalq *out = evhttp_request_get_output_headers(rq->req);
    evhttp_add_header(out, "Content-Type", "application/json");
    evhttp_add_header(out, "X-Request-Id", rq->id);
    evhttp_add_header(out, "Cache-Control", "no-store");
    if (close_conn || srv->draining) {
        evhttp_add_header(out, "Connection", "close");
    }
    watch_drain_close(rq);
    evhttp_send_reply(rq->req, status, NULL, body);
    if (body) {
        evbuffer_free(body);
    }
    request_account(rq, status);
    request_end(rq);
}

static int dump_to_evbuffer(const char *buffer, size_t size, void *data)
{
    return evbuffer_add(data, buffer, size);
}

/* body's compact text and a newline in a new buffer, or NULL when out of memory. */
static struct evbuffer *render_json(const json_t *body)
{
    struct evbuffer *buf = body ? evbuffer_new() : NULL;
    if (buf && (json_dump_callback(body, dump_to_evbuffer, buf, JSON_COMPACT) != 0 ||
                evbuffer_add(buf, "\n", 1) != 0)) {
        evbuffer_free(buf);
        buf = NULL;
    }
    return buf;
}

/* The answer when a reply could not be built: an honest 500 (never a 200 with an empty body),
 * from a static body, so it needs no more than the buffer that carries it. */
static void reply_render_failed(struct request *rq, bool close_conn)
{
    static const char text[] = "{\"error\":{\"code\":\"out_of_memory\","
                               "\"message\":\"out of memory: the answer could not be built\"}}\n";
    struct evbuffer *buf = evbuffer_new();
    if (buf && evbuffer_add_reference(buf, text, sizeof text - 1, NULL, NULL) != 0) {
        evbuffer_free(buf);
        buf = NULL;
    }
    log_error("reply failed", "req_id=%s error=out_of_memory", rq->id);
    send_reply(rq, roost_err_http_status(ROOST_ENOMEM), buf, close_conn);
}

void request_reply_json(struct request *rq, int status, json_t *body)
{
    struct evbuffer *buf = render_json(body);
    json_decref(body);
    if (buf == NULL) {
        reply_render_failed(rq, false);
        return;
    }
    send_reply(rq, status, buf, false);
}

void request_reply_buffer(struct request *rq, int status, struct evbuffer *body)
{
    if (body == NULL || evbuffer_add(body, "\n", 1) != 0) {
        if (body) {
            evbuffer_free(body);
        }
        reply_render_failed(rq, false);
        return;
    }
    send_reply(rq, status, body, false);
}

static json_t *error_body(int rc, const char *message, json_t *extra)
{
    json_t *err = json_pack("{s:s, s:s}", "code", roost_err_code(rc), "message",
                            message ? message : roost_strerror(rc));
    if (err && extra) {
        json_object_update(err, extra);
    }
    json_decref(extra);
    return json_pack("{s:o*}", "error", err);
}

static void reply_error_ex(struct request *rq, int rc, const char *message, json_t *extra,
                           bool close_conn)
{
    int status = roost_err_http_status(rc);
    if (status < 400) {
        status = 500;
    }
    struct evkeyvalq *out = evhttp_request_get_output_headers(rq->req);
    if (status == 401) {
        evhttp_add_header(out, "WWW-Authenticate", "Bearer realm=\"roost\"");
    } else if (status == 429 || status == 503) {
        evhttp_add_header(out, "Retry-After", "1");
    }
    json_t *body = error_body(rc, message, extra);
    struct evbuffer *buf = render_json(body);
    json_decref(body);
    if (buf == NULL) {
        reply_render_failed(rq, close_conn);
        return;
    }
    send_reply(rq, status, buf, close_conn);
}

void request_reply_error(struct request *rq, int rc, const char *message, json_t *extra)
{
    reply_error_ex(rq, rc, message, extra, false);
}

/* ---- parameters ---- */

/* Strict decimal: optional '-', 1..19 digits, no overflow. */
static bool parse_i64(const char *s, int64_t *out)
{
    if (s == NULL || *s == '\0') {
        return false;
    }
    bool neg = *s == '-';
    const char *p = s + neg;
    if (*p == '\0') {
        return false;
    }
    uint64_t v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || p - s > 20) {
            return false;
        }
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    if (v > (uint64_t)INT64_MAX) {
        return false;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

const char *request_query_str(struct request *rq, const char *name, int *rc)
{
    *rc = ROOST_OK;
    if (!rq->query) {
        return NULL;
    }
    const char *found = NULL;
    for (struct evkeyval *kv = rq->query->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strcmp(kv->key, name) == 0) {
            if (found) {
                *rc = ROOST_EQUERY;
                return NULL;
            }
            found = kv->value;
        }
    }
    return found;
}

int request_query_int(struct request *rq, const char *name, int64_t min, int64_t max, int64_t def,
                      int bad_rc, int64_t *out)
{
    int rc;
    const char *v = request_query_str(rq, name, &rc);
    if (rc != ROOST_OK) {
        return bad_rc;
    }
    if (v == NULL) {
        *out = def;
        return ROOST_OK;
    }
    int64_t x;
    if (!parse_i64(v, &x) || x < min || x > max) {
        return bad_rc;
    }
    *out = x;
    return ROOST_OK;
}

int body_int(const json_t *body, const char *name, int64_t min, int64_t max, int64_t def,
             int bad_rc, int64_t *out)
{
    json_t *v = body ? json_object_get(body, name) : NULL;
    if (v == NULL || json_is_null(v)) {
        *out = def;
        return ROOST_OK;
    }
    /* Integers only: 1.0, "1" and true are type errors, not coerced. */
    if (!json_is_integer(v)) {
        return bad_rc;
    }
    json_int_t x = json_integer_value(v);
    if (x < min || x > max) {
        return bad_rc;
    }
    *out = x;
    return ROOST_OK;
}

int body_str(const json_t *body, const char *name, size_t max_len, int bad_rc, const char **out)
{
    json_t *v = body ? json_object_get(body, name) : NULL;
    *out = NULL;
    if (v == NULL || json_is_null(v)) {
        return ROOST_OK;
    }
    if (!json_is_string(v)) {
        return bad_rc;
    }
    size_t len = json_string_length(v);
    if (len == 0 || len > max_len) {
        return bad_rc;
    }
    *out = json_string_value(v);
    return ROOST_OK;
}

int body_only_fields(const json_t *body, const char *const *allowed, const char **bad)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)body, key, value)
    {
        (void)value;
        bool ok = false;
        for (const char *const *a = allowed; *a; a++) {
            if (strcmp(*a, key) == 0) {
                ok = true;
                break;
            }
        }
        if (!ok) {
            *bad = key;
            return ROOST_EUNKNOWNFIELD;
        }
    }
    return ROOST_OK;
}

static json_t *time_json(int64_t ms)
{
    if (ms <= 0) {
        return json_null();
    }
    char buf[TIME_RFC3339_LEN + 1];
    time_format_rfc3339(ms, buf);
    return json_string(buf);
}

/* The members of an event object before its payload, and after it (times, claim and audit
 * fields): event_to_json joins them around the parsed payload, event_json_append around the
 * stored payload text. NULL when out of memory. */
static json_t *event_head(const struct store_event *ev)
{
    return json_pack("{s:s, s:s, s:I, s:s, s:i, s:s?}", "event_id", ev->event_id, "agent_id",
                     ev->agent_id, "sequence_number", (json_int_t)ev->seq, "status",
                     store_status_name(ev->status), "priority", ev->priority, "correlation_id",
                     ev->correlation_id);
}

static json_t *event_tail(const struct store_event *ev, bool with_claim, bool with_audit)
{
    json_t *o =
        json_pack("{s:o, s:o, s:o}", "created_at", time_json(ev->created_at_ms), "available_at",
                  time_json(ev->available_at_ms), "expires_at", time_json(ev->expires_at_ms));
    if (!o) {
        return NULL;
    }
    int bad = 0;
    if (with_claim) {
        bad |= json_object_set_new(o, "lease_token", json_string(ev->lease_token));
        bad |= json_object_set_new(o, "claim_expires_at", time_json(ev->claim_expires_at_ms));
        bad |= json_object_set_new(o, "attempts", json_integer(ev->attempts));
    }
    if (with_audit) {
        bad |= json_object_set_new(o, "attempts", json_integer(ev->attempts));
        bad |= json_object_set_new(o, "timeouts", json_integer(ev->timeouts));
        bad |= json_object_set_new(o, "nacks", json_integer(ev->nacks));
        bad |= json_object_set_new(o, "last_error",
                                   ev->last_error ? json_string(ev->last_error) : json_null());
        bad |= json_object_set_new(o, "completed_at", time_json(ev->completed_at_ms));
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *event_to_json(const struct store_event *ev, bool with_claim, bool with_audit)
{
    json_t *o = event_head(ev);
    json_t *tail = event_tail(ev, with_claim, with_audit);
    json_t *payload = ev->payload ? json_loads(ev->payload, JSON_DECODE_ANY, NULL) : json_null();
    bool ok = o && tail && payload;
    if (!ok) {
        json_decref(payload);
    }
    /* json_object_set_new takes the payload over even when it fails. */
    if (!ok || json_object_set_new(o, "payload", payload) != 0 ||
        json_object_update(o, tail) != 0) {
        json_decref(o);
        o = NULL;
    }
    json_decref(tail);
    return o;
}

/* Appends the compact text of obj to out, without its last byte (the closing brace) when
 * `open_end`, without its first (the opening brace) otherwise. ROOST_OK or ROOST_ENOMEM. */
static int append_members(struct evbuffer *out, const json_t *obj, bool open_end)
{
    char small[1024];
    size_t n = json_dumpb(obj, small, sizeof small, JSON_COMPACT);
    char *text = small;
    if (n < 2) {
        return ROOST_ENOMEM; /* json_dumpb answers 0 when it could not allocate */
    }
    if (n > sizeof small) {
        if ((text = malloc(n)) == NULL || json_dumpb(obj, text, n, JSON_COMPACT) != n) {
            free(text);
            return ROOST_ENOMEM;
        }
    }
    int rc = evbuffer_add(out, open_end ? text : text + 1, n - 1) == 0 ? ROOST_OK : ROOST_ENOMEM;
    if (text != small) {
        free(text);
    }
    return rc;
}

int event_json_append(struct evbuffer *out, const struct store_event *ev, bool with_claim,
                      bool with_audit)
{
    /* {head members,"payload":<stored text>,tail members}: the payload is validated JSON text
     * (publish checked it), written as stored. Parsing it again only to print it cost a copy of
     * every payload in jansson objects, and jansson 2.14's lexer overruns the heap when an
     * allocation fails inside a string (lex_save ignores the failed append, so the copy loop of
     * lex_scan_string never meets the closing quote). */
    json_t *head = event_head(ev);
    json_t *tail = event_tail(ev, with_claim, with_audit);
    const char *payload = ev->payload ? ev->payload : "null";
    int rc = ROOST_ENOMEM;
    if (head && tail && append_members(out, head, true) == ROOST_OK &&
        evbuffer_add(out, ",\"payload\":", 11) == 0 &&
        evbuffer_add(out, payload, strlen(payload)) == 0 && evbuffer_add(out, ",", 1) == 0) {
        rc = append_members(out, tail, false);
    }
    json_decref(head);
    json_decref(tail);
    return rc;
}

struct evbuffer *events_json_new(const struct store_events *list, bool with_claim, bool with_audit,
                                 size_t max_bytes, size_t *n_out)
{
    struct evbuffer *out = evbuffer_new();
    size_t n = 0;
    if (!out || evbuffer_add(out, "{\"events\":[", 11) != 0) {
        goto fail;
    }
    for (; n < list->len; n++) {
        const struct store_event *ev = &list->items[n];
        /* The store's rule, over the bytes rendered so far. */
        size_t used = evbuffer_get_length(out);
        if (!store_budget_take(&used, n, ev->payload ? strlen(ev->payload) : 0, max_bytes)) {
            break;
        }
        if ((n > 0 && evbuffer_add(out, ",", 1) != 0) ||
            event_json_append(out, ev, with_claim, with_audit) != ROOST_OK) {
            goto fail;
        }
    }
    if (evbuffer_add(out, "]", 1) != 0) {
        goto fail;
    }
    *n_out = n;
    return out;
fail:
    if (out) {
        evbuffer_free(out);
    }
    return NULL;
}

/* ---- framing checks evhttp leaves to us ---- */

static int count_header(struct evkeyvalq *h, const char *name, const char **value)
{
    int n = 0;
    for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strcasecmp(kv->key, name) == 0) {
            if (value) {
                *value = kv->value;
            }
            n++;
        }
    }
    return n;
}

/* Returns 0 when the request's framing and headers are acceptable, else the HTTP status to
 * answer (the connection is then closed: after a framing error nothing more can be trusted). */
static int check_framing(struct evhttp_request *req, const char **why)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    int n_headers = 0;
    for (struct evkeyval *kv = in->tqh_first; kv; kv = kv->next.tqe_next) {
        n_headers++;
        for (const char *p = kv->key; *p; p++) {
            if (*p == ' ' || *p == '\t') {
                *why = "whitespace in a header name";
                return 400;
            }
        }
        for (const char *p = kv->value; *p; p++) {
            if (*p == '\r' || *p == '\n' || ((unsigned char)*p < 0x20 && *p != '\t')) {
                *why = "control character in a header value";
                return 400;
            }
        }
    }
    if (n_headers > MAX_HEADER_COUNT) {
        *why = "too many header fields";
        return 431;
    }
    const char *host = NULL, *cl = NULL, *te = NULL;
    int n_cl = count_header(in, "Content-Length", &cl);
    int n_te = count_header(in, "Transfer-Encoding", &te);
    int n_host = count_header(in, "Host", &host);
    char major = req->major, minor = req->minor;
    if (n_cl > 1 || (n_cl == 1 && n_te > 0)) {
        *why = "ambiguous message framing (Content-Length with Transfer-Encoding, or repeated)";
        return 400;
    }
    /* No Transfer-Encoding at all, chunked included: evhttp's chunk parser is lenient (it takes
     * "0x" sizes and a missing CRLF after chunk data), a parser differential behind any proxy.
     * Every Roost client sends Content-Length; RFC 9112 6.3 lets a server insist on it. */
    if (n_te > 0) {
        *why = "Transfer-Encoding is not accepted: send the body with Content-Length";
        return 400;
    }
    if (n_cl == 1) {
        for (const char *p = cl; *p; p++) {
            if (*p < '0' || *p > '9') {
                *why = "Content-Length must be digits";
                return 400;
            }
        }
    }
    if (n_host > 1 || (major == 1 && minor >= 1 && n_host == 0)) {
        *why = "exactly one Host header is required";
        return 400;
    }
    const char *uri = evhttp_request_get_uri(req);
    if (uri == NULL || uri[0] != '/') {
        *why = "only origin-form request targets are served";
        return 400;
    }
    return 0;
}

/* ---- routing ---- */

enum match { MATCH_NO, MATCH_YES };

/* A path segment captured by a {name} of a pattern, raw (not NUL-terminated). */
struct capture {
    const char *p;
    size_t len;
};

/* Matches `path` (no query) against a pattern, capturing {agent}, {event} and {key} raw. */
static enum match route_match(const char *pattern, const char *path, struct capture *agent,
                              struct capture *event, struct capture *key)
{
    const char *p = pattern, *s = path;
    while (*p && *s) {
        if (*p != '/' || *s != '/') {
            return MATCH_NO;
        }
        p++;
        s++;
        const char *pe = strchr(p, '/');
        size_t plen = pe ? (size_t)(pe - p) : strlen(p);
        const char *se = strchr(s, '/');
        size_t slen = se ? (size_t)(se - s) : strlen(s);
        if (plen == 7 && memcmp(p, "{agent}", 7) == 0) {
            *agent = (struct capture){s, slen};
        } else if (plen == 7 && memcmp(p, "{event}", 7) == 0) {
            *event = (struct capture){s, slen};
        } else if (plen == 5 && memcmp(p, "{key}", 5) == 0) {
            *key = (struct capture){s, slen};
        } else if (plen != slen || memcmp(p, s, plen) != 0) {
            return MATCH_NO;
        }
        p += plen;
        s += slen;
    }
    return (*p == '\0' && *s == '\0') ? MATCH_YES : MATCH_NO;
}

static bool content_type_is_json(const char *ct)
{
    if (!ct) {
        return false;
    }
    size_t n = strlen("application/json");
    if (strncasecmp(ct, "application/json", n) != 0) {
        return false;
    }
    const char *rest = ct + n;
    while (*rest == ' ') {
        rest++;
    }
    if (*rest == '\0') {
        return true;
    }
    if (*rest != ';') {
        return false;
    }
    rest++;
    while (*rest == ' ') {
        rest++;
    }
    return strncasecmp(rest, "charset=utf-8", 13) == 0 && rest[13] == '\0';
}

static void reply_plain(struct request *rq, int status, const char *text)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(rq->req);
    if (evhttp_find_header(out, "Content-Type") == NULL) {
        evhttp_add_header(out, "Content-Type", "text/plain; charset=utf-8");
    }
    evhttp_add_header(out, "X-Request-Id", rq->id);
    if (rq->srv->draining) {
        evhttp_add_header(out, "Connection", "close");
    }
    struct evbuffer *buf = evbuffer_new();
    if (buf) {
        evbuffer_add(buf, text, strlen(text));
    }
    watch_drain_close(rq);
    evhttp_send_reply(rq->req, status, NULL, buf);
    if (buf) {
        evbuffer_free(buf);
    }
    request_account(rq, status);
    request_end(rq);
}

/* Constant time over the expected length: the token's bytes must not leak through timing. */
static bool token_equal(const char *got, const char *want)
{
    size_t n = strlen(want), m = strlen(got);
    unsigned char diff = (unsigned char)(n != m);
    for (size_t i = 0; i < n; i++) {
        diff |= (unsigned char)(want[i] ^ (i < m ? got[i] : 0));
    }
    return diff == 0;
}

/* GET /metrics: Prometheus text from counters and the last snapshot; no store access here. */
static void metrics_endpoint(struct request *rq)
{
    struct server *srv = rq->srv;
    const char *want = srv->cfg->metrics_token;
    if (evhttp_request_get_command(rq->req) != EVHTTP_REQ_GET) {
        reply_plain(rq, 405, "method not allowed\n");
        return;
    }
    if (want != NULL && want[0] != '\0') {
        const char *authz =
            evhttp_find_header(evhttp_request_get_input_headers(rq->req), "Authorization");
        if (authz == NULL || strncmp(authz, "Bearer ", 7) != 0 || !token_equal(authz + 7, want)) {
            evhttp_add_header(evhttp_request_get_output_headers(rq->req), "WWW-Authenticate",
                              "Bearer realm=\"roost-metrics\"");
            reply_plain(rq, 401, "unauthorized\n");
            return;
        }
    }
    struct evbuffer *buf = evbuffer_new();
    if (buf == NULL || metrics_render(srv->metrics, srv, buf) != 0) {
        if (buf) {
            evbuffer_free(buf);
        }
        reply_plain(rq, 503, "out of memory\n");
        return;
    }
    struct evkeyvalq *out = evhttp_request_get_output_headers(rq->req);
    evhttp_add_header(out, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    evhttp_add_header(out, "Cache-Control", "no-store");
    evhttp_add_header(out, "X-Request-Id", rq->id);
    if (srv->draining) {
        evhttp_add_header(out, "Connection", "close");
    }
    watch_drain_close(rq);
    evhttp_send_reply(rq->req, 200, NULL, buf);
    evbuffer_free(buf);
    request_account(rq, 200);
    request_end(rq);
}

/* Reads and validates the body for routes that take one. Returns ROOST_OK or an error code. */
static int read_body(struct request *rq, const char **bad_field)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(rq->req);
    size_t len = evbuffer_get_length(in);
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(rq->req), "Content-Type");
    *bad_field = NULL;
    if (len == 0) {
        if (rq->route->body == BODY_OPTIONAL) {
            rq->body = json_object();
            return rq->body ? ROOST_OK : ROOST_ENOMEM;
        }
        return ROOST_EJSON;
    }
    if (len > (size_t)rq->srv->cfg->limits_max_body_bytes) {
        return ROOST_ETOOLARGE;
    }
    if (!content_type_is_json(ct)) {
        return ROOST_EMEDIATYPE;
    }
    const char *data = (const char *)evbuffer_pullup(in, -1);
    if (!data) {
        return ROOST_ENOMEM;
    }
    return jsonutil_parse_object(data, len, (size_t)rq->srv->cfg->limits_max_json_depth, &rq->body);
}

/* /readyz asks every store (shard) at once; the last answer replies. */
struct ready_op {
    struct request *rq;
    size_t pending, failed;
    struct ready_ping {
        struct job job;
        struct ready_op *op;
    } pings[];
};

static int run_ready(struct job *job, struct store *st)
{
    (void)job;
    return st->ops->ping(st) ? ROOST_OK : ROOST_EUNAVAILABLE;
}

static void done_ready(struct job *job)
{
    struct ready_op *op = ((struct ready_ping *)job)->op;
    op->failed += job->rc != ROOST_OK;
    if (--op->pending == 0) {
        reply_plain(op->rq, op->failed == 0 ? 200 : 503,
                    op->failed == 0 ? "ready\n" : "store unreachable\n");
    }
}

/* /healthz: the process answers. /readyz: the store answers a query through the worker pool
 * (so a stuck pool shows too) and the server is not draining. */
static void health(struct request *rq, bool ready)
{
    struct server *srv = rq->srv;
    if (!ready) {
        reply_plain(rq, 200, "ok\n");
        return;
    }
    if (srv->draining) {
        reply_plain(rq, 503, "draining\n");
        return;
    }
    struct ready_op *op = calloc(1, sizeof *op + srv->n_shards * sizeof op->pings[0]);
    if (!op) {
        reply_plain(rq, 503, "out of memory\n");
        return;
    }
    op->rq = rq;
    op->pending = srv->n_shards;
    rq->op = op;
    rq->op_free = free;
    for (size_t i = 0; i < srv->n_shards; i++) {
        op->pings[i].op = op;
        op->pings[i].job =
            (struct job){.run = run_ready, .done = done_ready, .write = false, .name = "ready"};
        workers_submit(srv->shards[i].workers, &op->pings[i].job);
    }
}

/* Browsers' EventSource cannot send headers: subscribe also takes ?access_token=. Returns
 * "Bearer <token>" (caller frees) or NULL. Query strings are never logged. */
static char *bearer_from_query(const struct evhttp_uri *uri)
{
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    if (!query || strlen(query) > 2 * 8192 || evhttp_parse_query_str(query, &q) != 0) {
        evhttp_clear_headers(&q);
        return NULL;
    }
    const char *token = evhttp_find_header(&q, "access_token");
    char *out = NULL;
    if (token && strlen(token) <= 8192) {
        size_t n = strlen(token) + sizeof "Bearer ";
        if ((out = malloc(n)) != NULL) {
            snprintf(out, n, "Bearer %s", token);
        }
    }
    evhttp_clear_headers(&q);
    return out;
}

static void dispatch_content(struct request *rq);

static void dispatch(struct evhttp_request *req, void *arg)
{
    struct server *srv = arg;
    struct request *rq = calloc(1, sizeof *rq);
    if (!rq) {
        evhttp_send_error(req, 503, "out of memory");
        return;
    }
    rq->srv = srv;
    rq->req = req;
    rq->start_ms = time_mono_ms();
    rq->start_us = time_mono_us();
    srv->inflight++;
    srv->request_serial++;
    snprintf(rq->id, sizeof rq->id, "%08llx%08llx",
             (unsigned long long)(time_now_ms() / 1000) & 0xffffffffULL,
             (unsigned long long)srv->request_serial & 0xffffffffULL);

    const char *why = NULL;
    int status = check_framing(req, &why);
    if (status != 0) {
        reply_error_ex(rq, status == 431 ? ROOST_EHEADERS : ROOST_EFRAMING, why, NULL, true);
        return;
    }
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path || path[0] != '/') {
        reply_error_ex(rq, ROOST_EINVAL, "malformed request target", NULL, true);
        return;
    }
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    if (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0) {
        rq->pseudo_route = path[1] == 'r' ? "readyz" : "healthz";
        health(rq, path[1] == 'r');
        return;
    }
    if (strcmp(path, "/metrics") == 0) {
        rq->pseudo_route = "metrics";
        metrics_endpoint(rq);
        return;
    }
    if (srv->draining) {
        request_reply_error(rq, ROOST_ESHUTDOWN, NULL, NULL);
        return;
    }

    if (strcmp(path, "/api/v1/keys/server") == 0) {
        rq->pseudo_route = "server_keys";
        if (method != EVHTTP_REQ_GET) {
            request_reply_error(rq, ROOST_EMETHOD, NULL, NULL);
        } else {
            api_server_keys(rq);
        }
        return;
    }

    struct capture cagent = {0}, cevent = {0}, ckey = {0};
    bool path_known = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        /* A failed match may have set the placeholders: only the chosen route's count. */
        cagent = cevent = ckey = (struct capture){0};
        if (route_match(routes[i].pattern, path, &cagent, &cevent, &ckey) == MATCH_YES) {
            path_known = true;
            if (routes[i].method == method) {
                rq->route = &routes[i];
                break;
            }
        }
    }
    if (!rq->route) {
        request_reply_error(rq, path_known ? ROOST_EMETHOD : ROOST_ENOTFOUND, NULL, NULL);
        return;
    }

    /* Authentication before anything about the request's content is revealed. */
    const char *authz = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    char *query_bearer = NULL;
    if (!authz && rq->route->handler == api_subscribe) {
        authz = query_bearer = bearer_from_query(uri);
    }
    int auth_rc = auth_authenticate(srv->auth, authz, time_now_ms(), &rq->principal);
    free(query_bearer);
    if (auth_rc != ROOST_OK) {
        memset(&rq->principal, 0, sizeof rq->principal);
        request_reply_error(rq, ROOST_EUNAUTHENTICATED, NULL, NULL);
        return;
    }
    const char *agent = cagent.p, *event = cevent.p;
    size_t agent_len = cagent.len, event_len = cevent.len;
    if (agent) {
        if (!ids_valid_name(agent, agent_len)) {
            request_reply_error(rq, ROOST_EAGENTID, NULL, NULL);
            return;
        }
        memcpy(rq->agent_id, agent, agent_len);
        rq->agent_id[agent_len] = '\0';
    }
    if (event) {
        if (!ids_valid_event_id(event, event_len)) {
            request_reply_error(rq, ROOST_EEVENTID, NULL, NULL);
            return;
        }
        memcpy(rq->event_id, event, event_len);
        rq->event_id[event_len] = '\0';
    }
    if (ckey.p) {
        if (!ids_valid_name(ckey.p, ckey.len)) {
            request_reply_error(rq, ROOST_EKEYID, NULL, NULL);
            return;
        }
        memcpy(rq->key_id, ckey.p, ckey.len);
        rq->key_id[ckey.len] = '\0';
    }
    /* Publish checks its recipients itself; every other route names its agent in the path. */
    if (rq->route->action != AUTH_PUBLISH &&
        !auth_allows(&rq->principal, rq->route->action, agent ? rq->agent_id : NULL)) {
        request_reply_error(rq, ROOST_EFORBIDDEN, NULL, NULL);
        return;
    }
    /* A signature binds the token (it covers Authorization), so it is checked after it and
     * before anything about the content is looked at. The policy covers the agent routes and
     * publish; operator routes rely on their tokens (DESIGN §6.2). */
    bool policy_route = agent != NULL || rq->route->action == AUTH_PUBLISH;
    if (sigverify_needed(rq, policy_route)) {
        sigverify_start(rq, dispatch_content);
        return;
    }
    dispatch_content(rq);
}

/* The rest of dispatch once the request is authenticated (and its signature verified): query,
 * body, handler. */
static void dispatch_content(struct request *rq)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(rq->req);
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (query) {
        rq->query = calloc(1, sizeof *rq->query);
        if (!rq->query) {
            request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
            return;
        }
        TAILQ_INIT(rq->query);
        if (evhttp_parse_query_str(query, rq->query) != 0) {
            request_reply_error(rq, ROOST_EQUERY, NULL, NULL);
            return;
        }
    }
    if (rq->route->body != BODY_NONE) {
        const char *bad = NULL;
        int rc = read_body(rq, &bad);
        if (rc != ROOST_OK) {
            request_reply_error(rq, rc, NULL, NULL);
            return;
        }
    }
    rq->route->handler(rq);
}

/* ---- listening ---- */

/* accept(2) failing with EMFILE/ENFILE leaves the connection in the backlog, so the listener would
 * fire again at once and spin the loop: pause accepting for a moment instead, and say so (at most
 * once a second). Connections already open are unaffected; new ones wait in the backlog. */
#define ACCEPT_PAUSE_MS 100

static void accept_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct server *srv = arg;
    if (srv->bound != NULL) {
        evconnlistener_enable(evhttp_bound_socket_get_listener(srv->bound));
    }
}

/* The listener's callback argument is evhttp's own, so the error callback finds the server here;
 * roostd runs one server per process. */
static struct server *accept_owner;

static void accept_failed(struct evconnlistener *listener, void *arg)
{
    (void)arg;
    int err = EVUTIL_SOCKET_ERROR();
    struct server *srv = accept_owner;
    static int64_t last_warn_ms;
    int64_t now = time_now_ms();
    if (now - last_warn_ms >= 1000) {
        last_warn_ms = now;
        log_warn("accept failed, pausing new connections", "error=\"%s\" pause_ms=%d",
                 evutil_socket_error_to_string(err), ACCEPT_PAUSE_MS);
    }
    if (srv != NULL && srv->accept_resume != NULL) {
        evconnlistener_disable(listener);
        struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};
        evtimer_add(srv->accept_resume, &tv);
    }
}

static int open_listener(const char *listen_spec, evutil_socket_t *fd_out, char *host_out,
                         size_t host_len, int *port_out, char *err, size_t errlen)
{
    char host[256];
    const char *colon = strrchr(listen_spec, ':');
    if (!colon || colon == listen_spec || (size_t)(colon - listen_spec) >= sizeof host) {
        snprintf(err, errlen, "listen: expected HOST:PORT, got '%s'", listen_spec);
        return -1;
    }
    memcpy(host, listen_spec, (size_t)(colon - listen_spec));
    host[colon - listen_spec] = '\0';
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host) - 2);
        host[strlen(host) - 2] = '\0';
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, colon + 1, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "listen: cannot resolve '%s': %s", listen_spec, gai_strerror(gai));
        return -1;
    }
    evutil_socket_t fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 4096) != 0 ||
        evutil_make_socket_nonblocking(fd) != 0) {
        snprintf(err, errlen, "listen on %s: %s", listen_spec, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    int port = 0;
    if (ss.ss_family == AF_INET) {
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    /* A wildcard address is reached through loopback in the printed URL. */
    if (strcmp(host, "0.0.0.0") == 0 || host[0] == '\0') {
        snprintf(host_out, host_len, "127.0.0.1");
    } else if (strcmp(host, "::") == 0) {
        snprintf(host_out, host_len, "[::1]");
    } else if (strchr(host, ':')) {
        snprintf(host_out, host_len, "[%s]", host);
    } else {
        snprintf(host_out, host_len, "%.*s", (int)(host_len - 1), host);
    }
    *fd_out = fd;
    *port_out = port;
    return 0;
}

/* ---- built-in TLS ---- */

/* evhttp asks for each accepted connection's bufferevent here: an OpenSSL one in the accepting
 * state (evhttp sets the socket on it afterwards). Everything above it, SSE included, is
 * unchanged. */
static struct bufferevent *tls_bevcb(struct event_base *base, void *arg)
{
    SSL_CTX *ctx = arg;
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL) {
        return NULL;
    }
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (bev == NULL) {
        SSL_free(ssl);
        return NULL;
    }
    /* Clients that close without close_notify (most of them) are not errors. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

static void tls_error(char *err, size_t errlen, const char *what, const char *file)
{
    unsigned long e = ERR_get_error();
    char detail[256];
    ERR_error_string_n(e, detail, sizeof detail);
    ERR_clear_error();
    snprintf(err, errlen, "%s %s: %s", what, file, e ? detail : "failed");
}

/* TLS 1.2+ with the library's default ciphers; the certificate chain and key come from PEM files
 * read once at start (a renewed certificate needs a restart). */
static int tls_setup(struct server *srv, char *err, size_t errlen)
{
    const struct config *cfg = srv->cfg;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        snprintf(err, errlen, "tls: cannot create the TLS context");
        return -1;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert_file) != 1) {
        tls_error(err, errlen, "tls.cert_file", cfg->tls_cert_file);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key_file, SSL_FILETYPE_PEM) != 1) {
        tls_error(err, errlen, "tls.key_file", cfg->tls_key_file);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "tls.key_file %s does not match tls.cert_file %s", cfg->tls_key_file,
                 cfg->tls_cert_file);
        goto fail;
    }
    srv->tls_ctx = ctx;
    evhttp_set_bevcb(srv->http, tls_bevcb, ctx);
    return 0;
fail:
    SSL_CTX_free(ctx);
    return -1;
}

int http_start(struct server *srv, char *err, size_t errlen)
{
    srv->http = evhttp_new(srv->base);
    if (!srv->http) {
        snprintf(err, errlen, "evhttp_new failed");
        return -1;
    }
    evhttp_set_max_body_size(srv->http, (ev_ssize_t)srv->cfg->limits_max_body_bytes);
    evhttp_set_max_headers_size(srv->http, (ev_ssize_t)srv->cfg->limits_max_header_bytes);
    evhttp_set_timeout(srv->http, (int)srv->cfg->http_timeout_s);
    evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                              EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                              EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_default_content_type(srv->http, "application/json");
    evhttp_set_gencb(srv->http, dispatch, srv);
    bool tls = srv->cfg->tls_cert_file[0] != '\0';
    if (tls && tls_setup(srv, err, errlen) != 0) {
        return -1;
    }
    evutil_socket_t fd;
    char host[48];
    int port;
    if (open_listener(srv->cfg->listen, &fd, host, sizeof host, &port, err, errlen) != 0) {
        return -1;
    }
    srv->bound = evhttp_accept_socket_with_handle(srv->http, fd);
    if (!srv->bound) {
        close(fd);
        snprintf(err, errlen, "evhttp_accept_socket failed");
        return -1;
    }
    srv->accept_resume = evtimer_new(srv->base, accept_resume, srv);
    if (srv->accept_resume == NULL) {
        snprintf(err, errlen, "evtimer_new failed");
        return -1;
    }
    accept_owner = srv;
    evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(srv->bound), accept_failed);
    snprintf(srv->base_url, sizeof srv->base_url, "%s://%s:%d", tls ? "https" : "http", host, port);
    return 0;
}

void http_stop_accepting(struct server *srv)
{
    if (srv->accept_resume) {
        event_free(srv->accept_resume);
        srv->accept_resume = NULL;
    }
    accept_owner = NULL;
    if (srv->bound) {
        evhttp_del_accept_socket(srv->http, srv->bound);
        srv->bound = NULL;
    }
}

void http_free(struct server *srv)
{
    if (srv->http) {
        evhttp_free(srv->http);
        srv->http = NULL;
    }
    /* After the connections: each SSL holds a reference to the context anyway. */
    if (srv->tls_ctx) {
        SSL_CTX_free(srv->tls_ctx);
        srv->tls_ctx = NULL;
    }
}
