/* SPDX-License-Identifier: MIT */
/* The router (see router.h). Handlers get a validated `struct request` and always end it with
 * request_reply_*(). */
#include "server/router.h"

#include <event2/http_struct.h> /* request version: no accessor in 2.1 */
#include <event2/keyvalq_struct.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "common/ids.h"
#include "common/timeutil.h"
#include "server/api.h"
#include "server/config.h"
#include "server/cors.h"
#include "server/request.h"
#include "server/runtime.h"
#include "server/sigverify.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

#define MAX_HEADER_COUNT 100

/* ---- routing ---- */

/* Matches `path` (no query) against a pattern, capturing {agent}, {event} and {key} raw. */
static bool pattern_match(const char *pattern, const char *path, struct route_captures *caps)
{
    const char *p = pattern, *s = path;
    while (*p && *s) {
        if (*p != '/' || *s != '/') {
            return false;
        }
        p++;
        s++;
        const char *pe = strchr(p, '/');
        size_t plen = pe ? (size_t)(pe - p) : strlen(p);
        const char *se = strchr(s, '/');
        size_t slen = se ? (size_t)(se - s) : strlen(s);
        if (plen == 7 && memcmp(p, "{agent}", 7) == 0) {
            caps->agent = (struct capture){s, slen};
        } else if (plen == 7 && memcmp(p, "{event}", 7) == 0) {
            caps->event = (struct capture){s, slen};
        } else if (plen == 5 && memcmp(p, "{key}", 5) == 0) {
            caps->key = (struct capture){s, slen};
        } else if (plen == 6 && memcmp(p, "{file}", 6) == 0) {
            caps->file = (struct capture){s, slen};
        } else if (plen != slen || memcmp(p, s, plen) != 0) {
            return false;
        }
        p += plen;
        s += slen;
    }
    return *p == '\0' && *s == '\0';
}

int router_match(enum evhttp_cmd_type method, const char *path, const struct route **route,
                 struct route_captures *caps)
{
    *route = NULL;
    /* The routes of this method first (the first of them that matches is the answer); the
     * others only tell a wrong method (405) from an unknown path (404). */
    for (size_t i = 0; i < router_routes_count; i++) {
        /* A failed match may have set the placeholders: only the chosen route's count. */
        *caps = (struct route_captures){0};
        bool same = router_routes[i].method == method ||
                    (method == EVHTTP_REQ_HEAD && router_routes[i].head);
        if (same && pattern_match(router_routes[i].pattern, path, caps)) {
            *route = &router_routes[i];
            return ROOST_OK;
        }
    }
    for (size_t i = 0; i < router_routes_count; i++) {
        *caps = (struct route_captures){0};
        if (pattern_match(router_routes[i].pattern, path, caps)) {
            *caps = (struct route_captures){0};
            return ROOST_EMETHOD;
        }
    }
    *caps = (struct route_captures){0};
    return ROOST_ENOTFOUND;
}

static const char *method_token(enum evhttp_cmd_type m)
{
    switch (m) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    default:
        return "";
    }
}

/* The Allow field of a 405 (RFC 9110 §15.5.6): the methods of every route whose pattern matches
 * `path`, each once, in table order ("GET, POST"). */
static void allowed_methods(const char *path, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < router_routes_count; i++) {
        struct route_captures caps = {0};
        const char *m = method_token(router_routes[i].method);
        if (!pattern_match(router_routes[i].pattern, path, &caps) || m[0] == '\0' ||
            strstr(buf, m) != NULL) {
            continue;
        }
        int n = snprintf(buf + used, len - used, "%s%s%s", used ? ", " : "", m,
                         router_routes[i].head ? ", HEAD" : "");
        if (n < 0 || (size_t)n >= len - used) {
            break;
        }
        used += (size_t)n;
    }
}

/* Answers 405 with Allow (RFC 9110: a 405 must carry it) and the same list in the body. */
static void reply_method_not_allowed(struct request *rq, const char *allow)
{
    evhttp_add_header(evhttp_request_get_output_headers(rq->req), "Allow", allow);
    char msg[128];
    snprintf(msg, sizeof msg, "method not allowed on this route; it allows %s", allow);
    request_reply_error(rq, ROOST_EMETHOD, msg, json_pack("{s:s}", "allow", allow));
}

/* Answers 401; a token that verified but expired is told when, so its holder knows to renew it. */
static void reply_unauthenticated(struct request *rq, int64_t expired_ms)
{
    if (expired_ms == 0) {
        request_reply_error(rq, ROOST_EUNAUTHENTICATED, NULL, NULL);
        return;
    }
    char when[40], msg[160];
    time_format_rfc3339(expired_ms, when);
    int64_t ago_s = (time_now_ms() - expired_ms) / 1000;
    snprintf(msg, sizeof msg, "the token expired at %s (%lld s ago): get a new one", when,
             (long long)ago_s);
    request_reply_error(
        rq, ROOST_EUNAUTHENTICATED, msg,
        json_pack("{s:s, s:I}", "expired_at", when, "expired_s_ago", (json_int_t)ago_s));
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

/* True when s has a control character other than HTAB (CR and LF included). Eight bytes at a
 * time: the Authorization value alone is ~400 bytes on every request. A word with a byte below
 * 0x20 (the test is exact for "some byte", not for which) is looked at byte by byte. */
static bool has_control(const char *s)
{
    size_t n = strlen(s), i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (((w - 0x2020202020202020ULL) & ~w & 0x8080808080808080ULL) != 0) {
            break;
        }
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 && c != '\t') {
            return true;
        }
    }
    return false;
}

int router_check_framing(struct evkeyvalq *in, int major, int minor, const char *uri,
                         const char **why)
{
    int n_headers = 0;
    for (struct evkeyval *kv = in->tqh_first; kv; kv = kv->next.tqe_next) {
        n_headers++;
        for (const char *p = kv->key; *p; p++) {
            if (*p == ' ' || *p == '\t') {
                *why = "whitespace in a header name";
                return 400;
            }
        }
        if (has_control(kv->value)) {
            *why = "control character in a header value";
            return 400;
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
    if (uri == NULL || uri[0] != '/') {
        *why = "only origin-form request targets are served";
        return 400;
    }
    return 0;
}

/* ---- dispatch ---- */

/* Browsers' EventSource cannot send headers: subscribe also takes ?access_token= (returned as
 * "Bearer <token>") or ?ticket= (returned as is). `prefix` goes before the value. Returns a
 * malloc'd string (caller frees) or NULL when absent or too long. Query strings are never logged.
 */
static char *credential_from_query(const struct evhttp_uri *uri, const char *name,
                                   const char *prefix)
{
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    if (!query || strlen(query) > 2 * 8192 || request_query_has_nul(query) ||
        evhttp_parse_query_str(query, &q) != 0) {
        evhttp_clear_headers(&q);
        return NULL;
    }
    const char *value = evhttp_find_header(&q, name);
    char *out = NULL;
    if (value && strlen(value) <= 8192) {
        size_t n = strlen(prefix) + strlen(value) + 1;
        if ((out = malloc(n)) != NULL) {
            snprintf(out, n, "%s%s", prefix, value);
        }
    }
    evhttp_clear_headers(&q);
    return out;
}

/* ?ticket= on subscribe (auth.h): the agent in the path must be the ticket's. */
static int authenticate_ticket(struct request *rq, const struct evhttp_uri *uri,
                               const struct capture *agent, bool *used)
{
    char *ticket = credential_from_query(uri, "ticket", "");
    char agent_id[ROOST_ID_MAX + 1];
    *used = ticket != NULL;
    if (!ticket) {
        return ROOST_EUNAUTHENTICATED;
    }
    int rc = ROOST_EUNAUTHENTICATED;
    if (agent->p && ids_valid_name(agent->p, agent->len)) {
        memcpy(agent_id, agent->p, agent->len);
        agent_id[agent->len] = '\0';
        rc = auth_ticket_verify(rq->rt->auth, ticket, agent_id, time_now_ms(), &rq->principal);
    }
    free(ticket);
    return rc;
}

static void dispatch_content(struct request *rq);

/* Routes outside the table are named for logs and metrics; their successes are not logged. */
static void set_pseudo_route(struct request *rq, const char *name)
{
    rq->route_name = name;
    rq->pseudo_route = true;
}

/* {key} into rq->key_id; false after answering when it cannot be an id. It is a signing key's
 * id or, on the webhook and source routes, an endpoint's or a source's: an id that cannot exist
 * is simply not found. */
static bool copy_key(struct request *rq, const struct route_captures *caps)
{
    if (caps->key.p == NULL) {
        return true;
    }
    if (!ids_valid_name(caps->key.p, caps->key.len)) {
        enum route_key k = rq->route->key;
        request_reply_error(rq,
                            k == ROUTE_KEY_SIGNING  ? ROOST_EKEYID
                            : k == ROUTE_KEY_DEVICE ? ROOST_EDEVICENOTFOUND
                            : k == ROUTE_KEY_SOURCE ? ROOST_ESOURCENOTFOUND
                                                    : ROOST_EENDPOINTNOTFOUND,
                            NULL, NULL);
        return false;
    }
    memcpy(rq->key_id, caps->key.p, caps->key.len);
    rq->key_id[caps->key.len] = '\0';
    return true;
}

void router_dispatch(struct evhttp_request *req, const char *head_error, void *arg)
{
    struct runtime *rt = arg;
    struct request *rq = request_new(rt, req);
    if (!rq) {
        evhttp_send_error(req, 503, "out of memory");
        return;
    }
    if (head_error != NULL) {
        request_reply_error_close(rq, ROOST_EFRAMING, head_error);
        return;
    }
    const char *why = NULL;
    int status = router_check_framing(evhttp_request_get_input_headers(req), req->major, req->minor,
                                      evhttp_request_get_uri(req), &why);
    if (status != 0) {
        request_reply_error_close(rq, status == 431 ? ROOST_EHEADERS : ROOST_EFRAMING, why);
        return;
    }
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path || path[0] != '/') {
        request_reply_error_close(rq, ROOST_EINVAL, "malformed request target");
        return;
    }
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    /* CORS first (http.cors_origins): a preflight carries no credentials, and every answer
     * below, errors included, must be readable by a listed origin's page. */
    if (cors_apply(rt->cfg->http_cors_origins, method, evhttp_request_get_input_headers(req),
                   evhttp_request_get_output_headers(req))) {
        set_pseudo_route(rq, "preflight");
        request_reply_empty(rq, 204);
        return;
    }
    const struct route *route = NULL;
    struct route_captures caps;
    int match_rc = router_match(method, path, &route, &caps);
    if (match_rc == ROOST_EMETHOD && !rt->draining) {
        char allow[64];
        allowed_methods(path, allow, sizeof allow);
        reply_method_not_allowed(rq, allow);
        return;
    }
    if (match_rc == ROOST_OK && route->draining) {
        /* Unauthenticated routes that answer even while roostd drains (health, files). */
        rq->route = route;
        set_pseudo_route(rq, route->name);
        route->handler(rq);
        return;
    }
    if (rt->draining) {
        request_reply_error(rq, ROOST_ESHUTDOWN, NULL, NULL);
        return;
    }
    if (match_rc != ROOST_OK) {
        request_reply_error(rq, match_rc, NULL, NULL);
        return;
    }
    rq->route = route;
    rq->route_name = route->name;
    if (route->auth == ROUTE_AUTH_NONE) {
        rq->pseudo_route = true;
        if (copy_key(rq, &caps)) {
            dispatch_content(rq);
        }
        return;
    }

    /* Authentication before anything about the request's content is revealed. */
    const char *authz = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    bool by_ticket = false;
    int auth_rc = ROOST_EUNAUTHENTICATED;
    bool stream = rq->route->auth == ROUTE_AUTH_STREAM;
    if (!authz && stream) {
        auth_rc = authenticate_ticket(rq, uri, &caps.agent, &by_ticket);
    }
    if (!by_ticket) {
        char *query_bearer = NULL;
        if (!authz && stream) {
            authz = query_bearer = credential_from_query(uri, "access_token", "Bearer ");
        }
        auth_rc = auth_authenticate(rt->auth, authz, time_now_ms(), &rq->principal);
        free(query_bearer);
    }
    if (auth_rc != ROOST_OK) {
        int64_t expired_ms = rq->principal.exp_ms;
        auth_principal_clear(&rq->principal);
        reply_unauthenticated(rq, expired_ms);
        return;
    }
    const char *agent = caps.agent.p, *event = caps.event.p;
    size_t agent_len = caps.agent.len, event_len = caps.event.len;
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
    if (!copy_key(rq, &caps)) {
        return;
    }
    /* Publish checks its recipients itself; every other route names its agent in the path. */
    if (rq->route->action != AUTH_PUBLISH &&
        !auth_allows(&rq->principal, rq->route->action, agent ? rq->agent_id : NULL)) {
        char scope[AUTH_SCOPE_TEXT_MAX];
        auth_required_scope(rq->route->action, agent ? rq->agent_id : NULL, scope, sizeof scope);
        request_explain(ROOST_EFORBIDDEN, json_pack("{s:s}", "required_scope", scope),
                        "the token lacks the scope %s", scope);
        request_reply_error(rq, ROOST_EFORBIDDEN, NULL, NULL);
        return;
    }
    /* A signature binds the token (it covers Authorization), so it is checked after it and
     * before anything about the content is looked at. The policy covers the agent routes and
     * publish; operator routes rely on their tokens (DESIGN §6.2). */
    /* A subscribe opened with a ticket is outside the policy: the ticket is single-use and bound
     * to its agent (nothing in the request to alter or replay), and asking for it is a POST
     * that the policy covered (mutations or all). So EventSource works under every policy. */
    bool policy_route = rq->route->signed_policy && !by_ticket;
    if (sigverify_needed(rq, policy_route)) {
        sigverify_start(rq, dispatch_content);
        return;
    }
    dispatch_content(rq);
}

/* The rest of dispatch once the request is authenticated (and its signature verified): query,
 * body, handler. */
static void dispatch_handler(struct request *rq, int rc)
{
    if (rc != ROOST_OK) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    rq->route->handler(rq);
}

static void dispatch_content(struct request *rq)
{
    int rc = request_parse_query(rq);
    if (rc == ROOST_OK && rq->route->body != BODY_NONE) {
        request_read_body_then(rq, rq->route->body == BODY_OPTIONAL, dispatch_handler);
        return;
    }
    dispatch_handler(rq, rc);
}
