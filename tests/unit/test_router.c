/* SPDX-License-Identifier: MIT */
/* Unit tests of src/server/router.c without a running daemon: route matching (literal segments,
 * {agent}/{event}/{key} captures, a literal winning over a placeholder, 404 for an unknown path and
 * 405 for a known path with another method), the framing checks evhttp leaves to us (Host,
 * Content-Length, Transfer-Encoding, header names, values and count, origin-form targets) and the
 * JSON media type rule of request bodies. */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <string.h>
#include <sys/queue.h>

#include "harness/check.h"
#include "roost/roost_error.h"
#include "server/api.h"
#include "server/request.h"
#include "server/router.h"

#include "common/banned.h"

/* Matches and returns the route's name ("404", "405" when refused), filling caps. */
static const char *match(enum evhttp_cmd_type method, const char *path, struct route_captures *caps)
{
    const struct route *route = (const struct route *)1; /* must be reset by router_match */
    int rc = router_match(method, path, &route, caps);
    if (rc == ROOST_OK) {
        return route ? route->name : "(null route)";
    }
    if (route != NULL) {
        return "(route left set)";
    }
    return rc == ROOST_ENOTFOUND ? "404" : rc == ROOST_EMETHOD ? "405" : "(other error)";
}

static int capture_is(struct capture c, const char *want)
{
    return c.p != NULL && c.len == strlen(want) && memcmp(c.p, want, c.len) == 0;
}

static void test_router_matches_literal_routes(void)
{
    struct route_captures caps;
    CHECK_STREQ(match(EVHTTP_REQ_POST, "/api/v1/events", &caps), "publish");
    CHECK(caps.agent.p == NULL && caps.event.p == NULL && caps.key.p == NULL);
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/admin/stats", &caps), "admin_stats");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/admin/keys", &caps), "admin_keys_list");
    CHECK_STREQ(match(EVHTTP_REQ_POST, "/api/v1/admin/keys", &caps), "admin_keys_add");
}

static void test_router_captures_path_params(void)
{
    struct route_captures caps;
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/agents/agent-7/inbox", &caps), "inbox_read");
    CHECK(capture_is(caps.agent, "agent-7"));
    CHECK(caps.event.p == NULL);

    CHECK_STREQ(match(EVHTTP_REQ_POST, "/api/v1/agents/a1/inbox/01HZX/ack", &caps), "ack");
    CHECK(capture_is(caps.agent, "a1"));
    CHECK(capture_is(caps.event, "01HZX"));

    CHECK_STREQ(match(EVHTTP_REQ_POST, "/api/v1/agents/a1/inbox/ev/extend", &caps), "extend");
    CHECK(capture_is(caps.event, "ev"));

    CHECK_STREQ(match(EVHTTP_REQ_POST, "/api/v1/admin/keys/k-1/revoke", &caps),
                "admin_keys_revoke");
    CHECK(capture_is(caps.key, "k-1"));
    CHECK(caps.agent.p == NULL);

    /* An empty segment is captured empty: the dispatcher's id check refuses it. */
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/agents//state", &caps), "state");
    CHECK(caps.agent.p != NULL && caps.agent.len == 0);
}

static void test_router_literal_wins_over_placeholder(void)
{
    struct route_captures caps;
    CHECK_STREQ(match(EVHTTP_REQ_POST, "/api/v1/agents/a1/inbox/claim", &caps), "claim");
    CHECK(caps.event.p == NULL);
    CHECK_STREQ(match(EVHTTP_REQ_POST, "/api/v1/agents/a1/inbox/ack", &caps), "ack_batch");
    CHECK_STREQ(match(EVHTTP_REQ_POST, "/api/v1/admin/quarantine/purge", &caps), "admin_purge");
    CHECK(caps.event.p == NULL);
    /* With another method the literal route does not match, the placeholder one does. */
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/admin/quarantine/purge", &caps),
                "admin_quarantine_inspect");
    CHECK(capture_is(caps.event, "purge"));
    CHECK_STREQ(match(EVHTTP_REQ_POST, "/api/v1/admin/quarantine/e1/purge", &caps),
                "admin_purge_event");
    CHECK(capture_is(caps.event, "e1"));
}

static void test_router_unknown_path_is_404(void)
{
    struct route_captures caps;
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/nothing", &caps), "404");
    CHECK_STREQ(match(EVHTTP_REQ_POST, "/api/v1/events/", &caps), "404");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/agents/a1/inbox/claim/more", &caps), "404");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/agents/a1", &caps), "404");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/", &caps), "404");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/API/v1/events", &caps), "404");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/healthz/x", &caps), "404");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/sdk/a/b", &caps), "404");
    CHECK_EQ(roost_err_http_status(ROOST_ENOTFOUND), 404);
}

static void test_router_known_path_other_method_is_405(void)
{
    struct route_captures caps;
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/events", &caps), "405");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/agents/a1/inbox/claim", &caps), "405");
    CHECK_STREQ(match(EVHTTP_REQ_POST, "/api/v1/agents/a1/state", &caps), "405");
    CHECK_STREQ(match(EVHTTP_REQ_DELETE, "/api/v1/admin/keys", &caps), "405");
    CHECK_STREQ(match(EVHTTP_REQ_HEAD, "/api/v1/agents/a1/subscribe", &caps), "405");
    CHECK_EQ(roost_err_http_status(ROOST_EMETHOD), 405);
}

static void test_router_routes_name_their_handlers(void)
{
    struct route_captures caps;
    const struct route *r = NULL;
    CHECK_EQ(router_match(EVHTTP_REQ_GET, "/api/v1/agents/a/subscribe", &r, &caps), ROOST_OK);
    CHECK(r != NULL && r->handler == api_subscribe && r->action == AUTH_READ &&
          r->body == BODY_NONE);
    CHECK_EQ(router_match(EVHTTP_REQ_POST, "/api/v1/agents/a/inbox/release-all", &r, &caps),
             ROOST_OK);
    CHECK(r != NULL && r->handler == api_release_all && r->action == AUTH_CONSUME &&
          r->body == BODY_OPTIONAL);
    CHECK_EQ(router_match(EVHTTP_REQ_POST, "/api/v1/events", &r, &caps), ROOST_OK);
    CHECK(r != NULL && r->handler == api_publish && r->action == AUTH_PUBLISH &&
          r->body == BODY_REQUIRED);
    CHECK_EQ(router_match(EVHTTP_REQ_GET, "/api/v1/admin/agents", &r, &caps), ROOST_OK);
    CHECK(r != NULL && r->handler == api_admin_agents && r->action == AUTH_ADMIN);
}

/* ---- framing ---- */

struct headers {
    struct evkeyvalq q;
};

static void headers_init(struct headers *h)
{
    TAILQ_INIT(&h->q);
}

static void headers_add(struct headers *h, const char *name, const char *value)
{
    if (evhttp_add_header(&h->q, name, value) != 0) {
        CHECK(!"evhttp_add_header refused the header");
    }
}

static int framing(struct headers *h, int major, int minor, const char *uri, const char **why)
{
    *why = NULL;
    int status = router_check_framing(&h->q, major, minor, uri, why);
    evhttp_clear_headers(&h->q);
    headers_init(h);
    return status;
}

static void test_framing_accepts_a_plain_request(void)
{
    struct headers h;
    const char *why;
    headers_init(&h);
    headers_add(&h, "Host", "roost.example");
    headers_add(&h, "Content-Length", "17");
    headers_add(&h, "Content-Type", "application/json");
    CHECK_EQ(framing(&h, 1, 1, "/api/v1/events", &why), 0);
    CHECK(why == NULL);
    /* HTTP/1.0 needs no Host. */
    CHECK_EQ(framing(&h, 1, 0, "/healthz", &why), 0);
}

static void test_framing_host_rules(void)
{
    struct headers h;
    const char *why;
    headers_init(&h);
    CHECK_EQ(framing(&h, 1, 1, "/", &why), 400);
    CHECK_STREQ(why, "exactly one Host header is required");
    headers_add(&h, "Host", "a");
    headers_add(&h, "host", "b");
    CHECK_EQ(framing(&h, 1, 1, "/", &why), 400);
}

static void test_framing_body_length_rules(void)
{
    struct headers h;
    const char *why;
    headers_init(&h);
    headers_add(&h, "Host", "a");
    headers_add(&h, "Content-Length", "5");
    headers_add(&h, "Transfer-Encoding", "chunked");
    CHECK_EQ(framing(&h, 1, 1, "/", &why), 400);
    CHECK(why != NULL && strstr(why, "ambiguous") != NULL);

    headers_add(&h, "Host", "a");
    headers_add(&h, "Content-Length", "5");
    headers_add(&h, "Content-Length", "5");
    CHECK_EQ(framing(&h, 1, 1, "/", &why), 400);

    headers_add(&h, "Host", "a");
    headers_add(&h, "Transfer-Encoding", "chunked");
    CHECK_EQ(framing(&h, 1, 1, "/", &why), 400);
    CHECK(why != NULL && strstr(why, "Transfer-Encoding") != NULL);

    headers_add(&h, "Host", "a");
    headers_add(&h, "Content-Length", "+5");
    CHECK_EQ(framing(&h, 1, 1, "/", &why), 400);
    CHECK_STREQ(why, "Content-Length must be digits");
}

static void test_framing_header_names_values_and_count(void)
{
    struct headers h;
    const char *why;
    headers_init(&h);
    headers_add(&h, "Host", "a");
    headers_add(&h, "X Bad", "v");
    CHECK_EQ(framing(&h, 1, 1, "/", &why), 400);
    CHECK_STREQ(why, "whitespace in a header name");

    headers_add(&h, "Host", "a");
    headers_add(&h, "X-Ctl", "a\001b");
    CHECK_EQ(framing(&h, 1, 1, "/", &why), 400);
    CHECK_STREQ(why, "control character in a header value");

    headers_add(&h, "Host", "a");
    headers_add(&h, "X-Tab", "a\tb"); /* a tab is allowed */
    CHECK_EQ(framing(&h, 1, 1, "/", &why), 0);

    headers_add(&h, "Host", "a");
    for (int i = 0; i < 99; i++) {
        headers_add(&h, "X-N", "1");
    }
    CHECK_EQ(framing(&h, 1, 1, "/", &why), 0); /* 100 fields */
    headers_add(&h, "Host", "a");
    for (int i = 0; i < 100; i++) {
        headers_add(&h, "X-N", "1");
    }
    CHECK_EQ(framing(&h, 1, 1, "/", &why), 431); /* 101 fields */
    CHECK_STREQ(why, "too many header fields");
}

/* The value check goes eight bytes at a time: a control byte at every position of a long value
 * is found, tabs anywhere are not one, and neither are DEL and bytes >= 0x80. */
static void test_framing_control_byte_at_any_position(void)
{
    struct headers h;
    const char *why;
    headers_init(&h);
    char v[41];
    for (size_t at = 0; at < sizeof v - 1; at++) {
        static const unsigned char bad[] = {0x01, 0x08, 0x0b, 0x1f};
        for (size_t k = 0; k < sizeof bad; k++) {
            memset(v, 'a', sizeof v - 1);
            v[sizeof v - 1] = '\0';
            v[at] = (char)bad[k];
            if (at > 0) {
                v[at - 1] = '\t'; /* a tab before it must not hide it */
            }
            headers_add(&h, "Host", "a");
            headers_add(&h, "X-Ctl", v);
            CHECK_EQ(framing(&h, 1, 1, "/", &why), 400);
            CHECK_STREQ(why, "control character in a header value");
        }
        memset(v, 'a', sizeof v - 1);
        v[at] = '\t';
        v[(at + 7) % (sizeof v - 1)] = (char)0x7f;
        v[(at + 13) % (sizeof v - 1)] = (char)0x80;
        v[(at + 21) % (sizeof v - 1)] = (char)0xff;
        v[(at + 29) % (sizeof v - 1)] = ' ';
        headers_add(&h, "Host", "a");
        headers_add(&h, "X-Ok", v);
        CHECK_EQ(framing(&h, 1, 1, "/", &why), 0);
    }
}

static void test_framing_origin_form_only(void)
{
    struct headers h;
    const char *why;
    headers_init(&h);
    headers_add(&h, "Host", "a");
    CHECK_EQ(framing(&h, 1, 1, "http://a/api/v1/events", &why), 400);
    CHECK_STREQ(why, "only origin-form request targets are served");
    headers_add(&h, "Host", "a");
    CHECK_EQ(framing(&h, 1, 1, "*", &why), 400);
    headers_add(&h, "Host", "a");
    CHECK_EQ(framing(&h, 1, 1, NULL, &why), 400);
}

static void test_request_json_media_type(void)
{
    CHECK(request_content_type_is_json("application/json"));
    CHECK(request_content_type_is_json("application/json; charset=utf-8"));
    CHECK(request_content_type_is_json("Application/JSON;charset=UTF-8"));
    CHECK(!request_content_type_is_json(NULL));
    CHECK(!request_content_type_is_json("application/jsonx"));
    CHECK(!request_content_type_is_json("application/json; charset=latin1"));
    CHECK(!request_content_type_is_json("text/plain"));
}

/* The operational routes, the public files and the server keys are declared like the others. */
static void test_router_operational_routes_are_declared(void)
{
    struct route_captures caps;
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/healthz", &caps), "healthz");
    CHECK_STREQ(match(EVHTTP_REQ_HEAD, "/healthz", &caps), "healthz");
    CHECK_STREQ(match(EVHTTP_REQ_POST, "/healthz", &caps), "405");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/readyz", &caps), "readyz");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/metrics", &caps), "metrics");
    CHECK_STREQ(match(EVHTTP_REQ_HEAD, "/metrics", &caps), "405");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/keys/server", &caps), "server_keys");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/api/v1/openapi.json", &caps), "openapi");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/ui", &caps), "static");
    CHECK_STREQ(match(EVHTTP_REQ_GET, "/ui/app.js", &caps), "static");
    CHECK(capture_is(caps.file, "app.js"));
    CHECK_STREQ(match(EVHTTP_REQ_HEAD, "/sdk/roost.js", &caps), "static");
    CHECK(capture_is(caps.file, "roost.js"));
}

/* What the declaration must hold for the router, the metrics and the OpenAPI check: a handler
 * and a name per route, no (method, pattern) twice, bounds in order, parameter names unique. */
static void test_routes_declaration_is_consistent(void)
{
    CHECK(router_routes_count >= 40);
    for (size_t i = 0; i < router_routes_count; i++) {
        const struct route *r = &router_routes[i];
        CHECK(r->handler != NULL && r->name != NULL && r->pattern[0] == '/');
        CHECK(!(r->auth == ROUTE_AUTH_NONE && r->signed_policy));
        for (size_t k = i + 1; k < router_routes_count; k++) {
            CHECK(!(router_routes[k].method == r->method &&
                    strcmp(router_routes[k].pattern, r->pattern) == 0));
        }
        for (size_t a = 0; a < ROUTE_MAX_PARAMS && r->params[a].name; a++) {
            const struct route_param *p = &r->params[a];
            CHECK(p->cfg != RP_CFG_NONE || p->type == RP_OBJECT || p->type == RP_ANY ||
                  p->min <= p->max);
            CHECK(p->in == RP_QUERY || r->body != BODY_NONE);
            CHECK(route_param_find(r, p->in, p->name) == p);
        }
    }
}

int main(void)
{
    RUN(test_router_matches_literal_routes);
    RUN(test_router_captures_path_params);
    RUN(test_router_literal_wins_over_placeholder);
    RUN(test_router_unknown_path_is_404);
    RUN(test_router_known_path_other_method_is_405);
    RUN(test_router_routes_name_their_handlers);
    RUN(test_router_operational_routes_are_declared);
    RUN(test_routes_declaration_is_consistent);
    RUN(test_framing_accepts_a_plain_request);
    RUN(test_framing_host_rules);
    RUN(test_framing_body_length_rules);
    RUN(test_framing_header_names_values_and_count);
    RUN(test_framing_control_byte_at_any_position);
    RUN(test_framing_origin_form_only);
    RUN(test_request_json_media_type);
    return check_summary();
}
