/* SPDX-License-Identifier: MIT */
/* The request object (see request.h): its life from accept to answer, the one function that
 * writes every reply (headers, body, the access log line, the drain bookkeeping), and the strict
 * query and body parameter parsers. */
#include "server/request.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <time.h>

#include "common/ids.h"
#include "common/jsonutil.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/timeutil.h"
#include "server/access_log.h"
#include "server/config.h"
#include "server/listener.h"
#include "server/metrics.h"
#include "server/routes.h"
#include "server/runtime.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

/* ---- the explanation of the next error ---- */

/* What the parameter helpers below (or request_explain) refused last on this thread: the rule in
 * words ("lease_s must be an integer between 1 and 43200") and its details as JSON ({"param",
 * "min","max"}). An error reply of the same code without a message of its own carries them, so a
 * handler that answers with the helper's code needs no text of its own. Handlers run on the loop
 * thread and answer a refusal at once; every request start and every error reply clears it, so it
 * never outlives its request. */
static _Thread_local struct {
    int rc;
    json_t *detail;
    char message[256];
} refusal;

static void refusal_clear(void)
{
    refusal.rc = ROOST_OK;
    json_decref(refusal.detail);
    refusal.detail = NULL;
}

static void refusal_vset(int rc, json_t *detail, const char *fmt, va_list ap)
{
    refusal_clear();
    refusal.rc = rc;
    refusal.detail = detail;
    vsnprintf(refusal.message, sizeof refusal.message, fmt, ap);
}

void request_refusal_take(struct request_refusal *out)
{
    out->rc = refusal.rc;
    out->detail = refusal.detail;
    memcpy(out->message, refusal.message, sizeof out->message);
    refusal.rc = ROOST_OK;
    refusal.detail = NULL;
}

void request_refusal_put(struct request_refusal *r)
{
    refusal_clear();
    refusal.rc = r->rc;
    refusal.detail = r->detail;
    memcpy(refusal.message, r->message, sizeof refusal.message);
    r->rc = ROOST_OK;
    r->detail = NULL;
}

void request_explain(int rc, json_t *detail, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    refusal_vset(rc, detail, fmt, ap);
    va_end(ap);
}

/* Records a value of `param` outside [min, max] (or not an integer at all). */
static void refusal_range(int rc, const char *param, int64_t min, int64_t max)
{
    json_t *detail = json_pack("{s:s, s:I, s:I}", "param", param, "min", (json_int_t)min, "max",
                               (json_int_t)max);
    if (max == INT64_MAX) {
        request_explain(rc, detail, "%s must be an integer >= %lld", param, (long long)min);
    } else {
        request_explain(rc, detail, "%s must be an integer between %lld and %lld", param,
                        (long long)min, (long long)max);
    }
}

/* ---- request lifecycle ---- */

/* Ended requests kept for the next ones, per thread (requests live on the loop thread). A request
 * is ~17 KiB: malloc serves that from its large bins, and every such allocation first
 * consolidates the small freed chunks of the last request (~3k instructions). REQUEST_SPARE
 * covers the requests a busy loop has in flight at once; more are allocated and freed. */
#define REQUEST_SPARE 32
/* Under AddressSanitizer every request is freed, so a use after its end is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define REQUEST_RECYCLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REQUEST_RECYCLE 0
#endif
#endif
#ifndef REQUEST_RECYCLE
#define REQUEST_RECYCLE 1
#endif
static _Thread_local struct request *spare[REQUEST_SPARE];
static _Thread_local size_t n_spare;

struct request *request_new(struct runtime *rt, struct evhttp_request *req)
{
    /* All zero but the principal's scope array (~17 KiB of it): auth fills what it uses. */
    struct request *rq = n_spare > 0 ? spare[--n_spare] : malloc(sizeof *rq);
    if (!rq) {
        return NULL;
    }
    size_t p0 = offsetof(struct request, principal), p1 = p0 + sizeof rq->principal;
    memset(rq, 0, p0);
    auth_principal_clear(&rq->principal);
    memset((char *)rq + p1, 0, sizeof *rq - p1);
    rq->rt = rt;
    rq->req = req;
    rq->start_ms = time_mono_ms();
    rq->start_us = time_mono_us();
    /* 128 random bits: a counter would let anyone measure every tenant's request rate. */
    unsigned char raw[16];
    if (ids_random(raw, sizeof raw) != 0) {
        free(rq);
        return NULL;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof raw; i++) {
        rq->id[2 * i] = hex[raw[i] >> 4];
        rq->id[2 * i + 1] = hex[raw[i] & 0xf];
    }
    rq->id[2 * sizeof raw] = '\0';
    refusal_clear();
    runtime_hold(rt);
    return rq;
}

static void request_free(struct request *rq)
{
    if (rq->op_free && rq->op) {
        rq->op_free(rq->op);
    }
    if (rq->sig_free && rq->sig) {
        rq->sig_free(rq->sig);
    }
    json_decref(rq->body);
    json_decref(rq->reply_filter_arg);
    if (rq->query) {
        evhttp_clear_headers(rq->query);
        free(rq->query);
    }
    if (REQUEST_RECYCLE && n_spare < REQUEST_SPARE) {
        spare[n_spare++] = rq;
    } else {
        free(rq);
    }
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

bool request_addr_is_loopback(const struct sockaddr *sa)
{
    if (sa == NULL) {
        return false;
    }
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}

bool request_peer_is_loopback(const struct request *rq)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(rq->req);
    return evcon != NULL && request_addr_is_loopback(evhttp_connection_get_addr(evcon));
}

void *request_op_new(struct request *rq, size_t size, void (*free_fn)(void *))
{
    void *op = calloc(1, size);
    if (op == NULL) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return NULL;
    }
    rq->op = op;
    rq->op_free = free_fn;
    return op;
}

const char *request_job_kind(const struct request *rq)
{
    return rq->route != NULL ? rq->route->job : NULL;
}

const char *request_route_name(const struct request *rq)
{
    return rq->route_name ? rq->route_name : "-";
}

/* The access log line's pieces: key and value (at most 128 bytes each, as every id here). */
static size_t put_str(char *f, size_t n, const char *key, const char *value)
{
    size_t k = strlen(key), v = strnlen(value, 128);
    memcpy(f + n, key, k);
    memcpy(f + n + k, value, v);
    return n + k + v;
}

/* v in decimal with at least `width` digits (zeros in front); a '-' first when negative. */
static size_t put_int(char *f, size_t n, int64_t v, int width)
{
    char d[24];
    int i = 0;
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    do {
        d[i++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0 || i < width);
    if (v < 0) {
        f[n++] = '-';
    }
    while (i > 0) {
        f[n++] = d[--i];
    }
    return n;
}

/* Counts the answer and writes the access log line: never the query string (it may carry an
 * access_token), never a body. */
static void request_account(struct request *rq, int status)
{
    int64_t dur_us = time_mono_us() - rq->start_us;
    /* Unrouted requests share one label, so hostile paths cannot grow the label set. */
    const char *route = request_route_name(rq);
    metrics_http(rq->rt->metrics, strcmp(route, "-") == 0 ? "unmatched" : route, status,
                 (double)dur_us / 1e6);
    if (rq->pseudo_route && status < 400) {
        return; /* health checks and scrapes would drown the log */
    }
    /* Written without printf (~3k instructions per request): the same text as "req_id=%s
     * method=%s route=%s status=%d duration_ms=%lld.%03lld tenant=%s agent=%s", the duration
     * being %.3f of dur_us / 1000. Every part is bounded (ids are at most 128 bytes). */
    char f[640];
    size_t n = 0;
    n = put_str(f, n, "req_id=", rq->id);
    n = put_str(f, n, " method=", method_name(evhttp_request_get_command(rq->req)));
    n = put_str(f, n, " route=", route);
    n = put_str(f, n, " status=", "");
    n = put_int(f, n, status, 1);
    n = put_str(f, n, " duration_ms=", "");
    n = put_int(f, n, dur_us / 1000, 1);
    f[n++] = '.';
    n = put_int(f, n, dur_us % 1000, 3);
    n = put_str(f, n, " tenant=", rq->principal.tenant_id[0] ? rq->principal.tenant_id : "-");
    n = put_str(f, n, " agent=", rq->agent_id[0] ? rq->agent_id : "-");
    f[n] = '\0';
    access_log_add(rq->rt->access_log, status >= 500 ? LOG_ERROR : LOG_INFO, f, n);
}

/* evhttp frees a "Connection: close" connection once its answer is written: only then may a
 * draining server leave the loop (leaving earlier would discard answers still buffered). */
static void on_drained_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    runtime_release(arg);
}

/* Called before a reply is queued: while draining, the loop must wait for it to be written. */
static void watch_drain_close(struct request *rq)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(rq->req);
    if (rq->rt->draining && evcon) {
        runtime_hold(rq->rt);
        listener_set_closecb(evcon, on_drained_close, rq->rt);
    }
}

/* Ends a request after its reply was queued. */
static void request_end(struct request *rq)
{
    struct runtime *rt = rq->rt;
    request_free(rq);
    runtime_release(rt);
}

void request_detach(struct request *rq)
{
    /* A stream that started counts as answered 200 (its own log line says "stream opened"). */
    metrics_http(rq->rt->metrics, request_route_name(rq), 200,
                 (double)(time_mono_us() - rq->start_us) / 1e6);
    request_end(rq);
}

/* The Date header evhttp would add to an HTTP/1.1 answer (last, after ours), from text made
 * once a second instead of once per answer (~3k instructions: gmtime and a snprintf). No
 * handler sets a Date of its own. */
static void add_date(const struct evhttp_request *req, struct evkeyvalq *out)
{
    static _Thread_local time_t date_s = -1;
    static _Thread_local char date[64];
    if (req->major != 1 || req->minor < 1) {
        return;
    }
    time_t now = time(NULL);
    if (now != date_s) {
        struct tm tm;
        if (gmtime_r(&now, &tm) == NULL || evutil_date_rfc1123(date, sizeof date, &tm) < 0) {
            return; /* evhttp adds its own */
        }
        date_s = now;
    }
    evhttp_add_header(out, "Date", date);
}

/* Every reply goes through here: the common headers, the body (borrowed, may be NULL), the
 * access log line and the drain bookkeeping. The caller set Content-Type (and any other
 * header of its own). */
static void send_reply(struct request *rq, int status, struct evbuffer *body, bool close_conn)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(rq->req);
    evhttp_add_header(out, "X-Request-Id", rq->id);
    /* Which roostd answered: `roost version` shows it beside the client's. */
    if (evhttp_find_header(out, "X-Roost-Version") == NULL) {
        evhttp_add_header(out, "X-Roost-Version", ROOST_VERSION);
    }
    if (close_conn || rq->rt->draining) {
        evhttp_add_header(out, "Connection", "close");
    }
    add_date(rq->req, out);
    watch_drain_close(rq);
    evhttp_send_reply(rq->req, status, NULL, body);
    request_account(rq, status);
    request_end(rq);
}

static int dump_to_evbuffer(const char *buffer, size_t size, void *data)
{
    return evbuffer_add(data, buffer, size);
}

/* The answer when a reply could not be built (out of memory): an honest 500, never a 200 with an
 * empty body, from a static text so it needs no more than the buffer that carries it (and goes
 * out without a body when even that fails). */
static void reply_render_failed(struct request *rq, bool close_conn)
{
    static const char text[] = "{\"error\":{\"code\":\"out_of_memory\","
                               "\"message\":\"out of memory: the answer could not be built\"}}\n";
    struct evkeyvalq *out = evhttp_request_get_output_headers(rq->req);
    evhttp_remove_header(out, "Content-Type");
    evhttp_add_header(out, "Content-Type", "application/json");
    evhttp_add_header(out, "Cache-Control", "no-store");
    struct evbuffer *buf = evbuffer_new();
    if (buf && evbuffer_add_reference(buf, text, sizeof text - 1, NULL, NULL) != 0) {
        evbuffer_free(buf);
        buf = NULL;
    }
    log_error("reply failed", "req_id=%s error=out_of_memory", rq->id);
    send_reply(rq, roost_err_http_status(ROOST_ENOMEM), buf, close_conn);
    if (buf) {
        evbuffer_free(buf);
    }
}

/* Sends `buf` (a complete JSON text, taken over; NULL = it could not be built) and a newline. */
static void reply_json_text(struct request *rq, int status, struct evbuffer *buf, bool close_conn)
{
    if (rq->reply_filter != NULL && buf != NULL) {
        struct evbuffer *(*filter)(struct request *, int *, struct evbuffer *) = rq->reply_filter;
        rq->reply_filter = NULL;
        buf = filter(rq, &status, buf);
    }
    if (buf == NULL || evbuffer_add(buf, "\n", 1) != 0) {
        if (buf) {
            evbuffer_free(buf);
        }
        reply_render_failed(rq, close_conn);
        return;
    }
    struct evkeyvalq *out = evhttp_request_get_output_headers(rq->req);
    evhttp_add_header(out, "Content-Type", "application/json");
    evhttp_add_header(out, "Cache-Control", "no-store");
    send_reply(rq, status, buf, close_conn);
    evbuffer_free(buf);
}

/* Renders body (stolen; NULL = it could not be built) straight into the reply buffer. */
static void reply_json(struct request *rq, int status, json_t *body, bool close_conn)
{
    struct evbuffer *buf = body ? evbuffer_new() : NULL;
    /* Most answers fit the stack buffer: one append instead of one per token of the dump. */
    char small[2048];
    size_t n = buf ? json_dumpb(body, small, sizeof small, JSON_COMPACT) : 0;
    if (buf && (n == 0 || n > sizeof small
                    ? json_dump_callback(body, dump_to_evbuffer, buf, JSON_COMPACT) != 0
                    : evbuffer_add(buf, small, n) != 0)) {
        evbuffer_free(buf);
        buf = NULL;
    }
    json_decref(body);
    reply_json_text(rq, status, buf, close_conn);
}

void request_reply_rendered(struct request *rq, int rc, struct evbuffer **page)
{
    if (rc != ROOST_OK) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    struct evbuffer *out = *page;
    *page = NULL;
    request_reply_json_text(rq, 200, out);
}

void request_reply_json_text(struct request *rq, int status, struct evbuffer *body)
{
    reply_json_text(rq, status, body, false);
}

void request_reply_json(struct request *rq, int status, json_t *body)
{
    reply_json(rq, status, body, false);
}

static json_t *error_body(int rc, const char *message, json_t *extra)
{
    if (message == NULL && refusal.rc == rc && rc != ROOST_OK) {
        message = refusal.message;
        if (refusal.detail != NULL && extra != NULL) {
            json_object_update(refusal.detail, extra);
            json_decref(extra);
            extra = NULL;
        }
        if (refusal.detail != NULL) {
            extra = refusal.detail;
            refusal.detail = NULL;
        }
    }
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
    } else if ((status == 429 || status == 503) && !evhttp_find_header(out, "Retry-After")) {
        evhttp_add_header(out, "Retry-After", "1"); /* unless the handler knows better */
    }
    json_t *body = error_body(rc, message, extra);
    refusal_clear();
    reply_json(rq, status, body, close_conn);
}

void request_set_retry_after(struct request *rq, int64_t wait_s)
{
    char after[24];
    snprintf(after, sizeof after, "%lld", (long long)wait_s);
    evhttp_add_header(evhttp_request_get_output_headers(rq->req), "Retry-After", after);
}

bool request_query_only(struct request *rq, const char *const *known)
{
    for (struct evkeyval *kv = rq->query ? rq->query->tqh_first : NULL; kv;
         kv = kv->next.tqe_next) {
        bool ok = false;
        for (const char *const *k = known; k != NULL && *k; k++) {
            ok = ok || strcmp(*k, kv->key) == 0;
        }
        if (!ok) {
            request_reply_error(rq, ROOST_EQUERY, "unknown query parameter",
                                json_pack("{s:s}", "param", kv->key));
            return false;
        }
    }
    return true;
}

void request_reply_error(struct request *rq, int rc, const char *message, json_t *extra)
{
    reply_error_ex(rq, rc, message, extra, false);
}

void request_reply_error_close(struct request *rq, int rc, const char *message)
{
    reply_error_ex(rq, rc, message, NULL, true);
}

void request_reply_text(struct request *rq, int status, const char *text)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(rq->req);
    if (evhttp_find_header(out, "Content-Type") == NULL) {
        evhttp_add_header(out, "Content-Type", "text/plain; charset=utf-8");
    }
    struct evbuffer *buf = evbuffer_new();
    if (buf) {
        evbuffer_add(buf, text, strlen(text));
    }
    send_reply(rq, status, buf, false);
    if (buf) {
        evbuffer_free(buf);
    }
}

void request_reply_empty(struct request *rq, int status)
{
    send_reply(rq, status, NULL, false);
}

void request_reply_buffer(struct request *rq, int status, const char *content_type,
                          struct evbuffer *body)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(rq->req);
    evhttp_add_header(out, "Content-Type", content_type);
    if (evhttp_find_header(out, "Cache-Control") == NULL) {
        evhttp_add_header(out, "Cache-Control", "no-store");
    }
    send_reply(rq, status, body, false);
}

/* ---- parameters ---- */

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
                *rc = ROOST_EQUERYREPEAT;
                request_explain(*rc, json_pack("{s:s}", "param", name),
                                "query parameter '%s' is given more than once: give it once", name);
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
        return rc;
    }
    if (v == NULL) {
        *out = def;
        return ROOST_OK;
    }
    /* Strict decimal: an optional '-', digits, nothing else ('+' is refused too). */
    int64_t x;
    if (v[0] == '+' || strutil_parse_i64(v, strlen(v), min, max, &x) != 0) {
        refusal_range(bad_rc, name, min, max);
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
    json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;
    if (!json_is_integer(v) || x < min || x > max) {
        refusal_range(bad_rc, name, min, max);
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

bool request_query_has_nul(const char *query)
{
    for (const char *p = query; (p = strchr(p, '%')) != NULL; p++) {
        if (p[1] == '0' && p[2] == '0') {
            return true;
        }
    }
    return false;
}

int request_parse_query(struct request *rq)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(rq->req);
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!query) {
        return ROOST_OK;
    }
    /* evhttp decodes %00 into a NUL that ends the C string: "limit=1%00x" would read as 1. */
    if (request_query_has_nul(query)) {
        return ROOST_EQUERY;
    }
    rq->query = calloc(1, sizeof *rq->query);
    if (!rq->query) {
        return ROOST_ENOMEM;
    }
    TAILQ_INIT(rq->query);
    if (evhttp_parse_query_str(query, rq->query) != 0) {
        return ROOST_EQUERY;
    }
    return ROOST_OK;
}

bool request_content_type_is_json(const char *ct)
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

static bool content_type_is_form(const char *ct)
{
    size_t n = strlen("application/x-www-form-urlencoded");
    return ct != NULL && strncasecmp(ct, "application/x-www-form-urlencoded", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/* An OAuth form body as a JSON object of strings. A parameter given twice is refused (RFC 6749
 * §3.1), as is a NUL (evhttp would cut the value there). */
static int form_to_json(const char *data, size_t len, json_t **out)
{
    *out = NULL;
    char *text = malloc(len + 1);
    if (text == NULL) {
        return ROOST_ENOMEM;
    }
    memcpy(text, data, len);
    text[len] = '\0';
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    int rc = ROOST_OK;
    if (strlen(text) != len || request_query_has_nul(text)) {
        rc = ROOST_EINVAL;
    } else if (evhttp_parse_query_str(text, &q) != 0) {
        rc = ROOST_EINVAL;
    } else if ((*out = json_object()) == NULL) {
        rc = ROOST_ENOMEM;
    }
    for (struct evkeyval *kv = TAILQ_FIRST(&q); rc == ROOST_OK && kv; kv = TAILQ_NEXT(kv, next)) {
        json_t *v = json_string(kv->value);
        if (v == NULL) {
            rc = ROOST_EINVAL; /* not UTF-8 */
        } else if (json_object_get(*out, kv->key) != NULL) {
            json_decref(v);
            rc = ROOST_EQUERYREPEAT;
        } else if (json_object_set_new(*out, kv->key, v) != 0) {
            rc = ROOST_ENOMEM;
        }
    }
    evhttp_clear_headers(&q);
    free(text);
    if (rc != ROOST_OK) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

/* A body parsed on a worker (request_read_body_then). */
struct body_parse {
    struct job job;
    struct request *rq;
    const char *data; /* the request's input buffer, made contiguous on the loop */
    size_t len, max_depth;
    json_t *body;
    void (*cont)(struct request *rq, int rc);
};

static int run_parse(struct job *job, struct store *st)
{
    (void)st;
    struct body_parse *p = (struct body_parse *)job;
    json_decref(p->body);
    p->body = NULL;
    return jsonutil_parse_object(p->data, p->len, p->max_depth, &p->body);
}

static void done_parse(struct job *job)
{
    struct body_parse *p = (struct body_parse *)job;
    struct request *rq = p->rq;
    void (*cont)(struct request *, int) = p->cont;
    int rc = job->rc;
    rq->body = p->body;
    free(p);
    cont(rq, rc);
}

/* The checks of a body before it is parsed, and where it is: ROOST_OK with *data and *len (*data
 * NULL: an empty body, already {} in rq->body), or the refusal. *form: an OAuth form, not JSON. */
static int body_check(struct request *rq, bool optional, const char **data, size_t *len, bool *form)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(rq->req);
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(rq->req), "Content-Type");
    *data = NULL;
    *len = evbuffer_get_length(in);
    if (*len == 0) {
        if (optional) {
            rq->body = json_object();
            return rq->body ? ROOST_OK : ROOST_ENOMEM;
        }
        return ROOST_EJSON;
    }
    if (*len > (size_t)rq->rt->cfg->limits_max_body_bytes) {
        return ROOST_ETOOLARGE;
    }
    *form = rq->route != NULL && rq->route->form && content_type_is_form(ct);
    if (!*form && !request_content_type_is_json(ct)) {
        return ROOST_EMEDIATYPE;
    }
    *data = (const char *)evbuffer_pullup(in, -1);
    return *data ? ROOST_OK : ROOST_ENOMEM;
}

void request_submit_bulk(struct request *rq, struct job *job,
                         int (*run)(struct job *, struct store *), void (*done)(struct job *),
                         const char *name)
{
    *job = (struct job){.run = run,
                        .done = done,
                        .scan = true,
                        .name = name,
                        .tenant = workers_tenant_key(rq->principal.tenant_id)};
    workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), job);
}

void request_read_body_then(struct request *rq, bool optional,
                            void (*cont)(struct request *rq, int rc))
{
    const char *data;
    size_t len;
    bool form = false;
    int rc = body_check(rq, optional, &data, &len, &form);
    struct body_parse *p = NULL;
    if (rc == ROOST_OK && data != NULL && !form && len > REQUEST_BODY_OFF_LOOP_BYTES &&
        rq->principal.tenant_id[0] != '\0' && (p = calloc(1, sizeof *p)) != NULL) {
        /* The loop touches neither the request nor its input buffer until done_parse. */
        *p = (struct body_parse){.rq = rq,
                                 .data = data,
                                 .len = len,
                                 .max_depth = (size_t)rq->rt->cfg->limits_max_json_depth,
                                 .cont = cont};
        request_submit_bulk(rq, &p->job, run_parse, done_parse, "parse_body");
        return;
    }
    if (rc == ROOST_OK && data != NULL) {
        rc = form ? form_to_json(data, len, &rq->body)
                  : jsonutil_parse_object(data, len, (size_t)rq->rt->cfg->limits_max_json_depth,
                                          &rq->body);
    }
    cont(rq, rc);
}

/* ---- parameters as the route declaration bounds them (routes.c) ---- */

/* The declared parameter, or NULL (logged: a handler reads what its route does not declare). */
static const struct route_param *declared(const struct request *rq, enum route_param_in in,
                                          const char *name)
{
    const struct route_param *p = route_param_find(rq->route, in, name);
    if (p == NULL) {
        log_error("undeclared parameter", "route=%s param=%s", request_route_name(rq), name);
    }
    return p;
}

/* The JSON key of a declared body field: the part after "[]." of "acks[].event_id". */
static const char *field_key(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? dot + 1 : name;
}

int request_param_int(struct request *rq, const char *name, int64_t def, int bad_rc, int64_t *out)
{
    const struct route_param *p = declared(rq, RP_QUERY, name);
    if (p == NULL) {
        return ROOST_EINTERNAL;
    }
    return request_query_int(rq, name, p->min, route_param_max(p, rq->rt->cfg), def, bad_rc, out);
}

const char *request_param_str(struct request *rq, const char *name, int *rc)
{
    const struct route_param *p = declared(rq, RP_QUERY, name);
    if (p == NULL) {
        *rc = ROOST_EINTERNAL;
        return NULL;
    }
    return request_query_str(rq, name, rc);
}

int body_param_int(struct request *rq, const json_t *obj, const char *name, int64_t def, int bad_rc,
                   int64_t *out)
{
    const struct route_param *p = declared(rq, RP_BODY, name);
    if (p == NULL) {
        return ROOST_EINTERNAL;
    }
    return body_int(obj, field_key(name), p->min, route_param_max(p, rq->rt->cfg), def, bad_rc,
                    out);
}

int body_param_str(struct request *rq, const json_t *obj, const char *name, int bad_rc,
                   const char **out)
{
    const struct route_param *p = declared(rq, RP_BODY, name);
    if (p == NULL) {
        *out = NULL;
        return ROOST_EINTERNAL;
    }
    int rc = body_str(obj, field_key(name), (size_t)route_param_max(p, rq->rt->cfg), bad_rc, out);
    if (rc == ROOST_OK && *out != NULL && strlen(*out) < (size_t)p->min) {
        *out = NULL;
        return bad_rc;
    }
    return rc;
}

int body_param_only(const struct request *rq, const json_t *obj, const char *prefix,
                    const char **bad)
{
    size_t plen = strlen(prefix);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value)
    {
        (void)value;
        bool ok = false;
        for (size_t i = 0;
             !ok && rq->route != NULL && i < ROUTE_MAX_PARAMS && rq->route->params[i].name != NULL;
             i++) {
            const struct route_param *p = &rq->route->params[i];
            const char *n = p->name;
            ok = p->in == RP_BODY && strncmp(n, prefix, plen) == 0 &&
                 (plen == 0 || n[plen] == '.') && strcmp(n + plen + (plen ? 1 : 0), key) == 0;
        }
        if (!ok) {
            *bad = key;
            return ROOST_EUNKNOWNFIELD;
        }
    }
    return ROOST_OK;
}
