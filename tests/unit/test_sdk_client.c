/* SPDX-License-Identifier: MIT */
/* Unit tests of libroost that need no roostd: URL and path building, the error mapping, argument
 * checks, the transport against a scripted loopback HTTP peer (parsing, caps, ECONNECT, the SSE
 * reader of roost_subscribe), and the token mint round trip checked with jwt_decode +
 * jwt_verify_eddsa. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/check.h"
#include "proto/jwt.h"
#include "roost/roost.h"
#include "sdk/sdk.h"

#include "common/banned.h"

/* ---- a scripted HTTP peer: answers each connection with the next canned response ---------- */

#define FAKE_MAX 8

struct fake_server {
    int lfd;
    int port;
    pthread_t thread;
    const char *responses[FAKE_MAX]; /* full HTTP responses, one per connection */
    size_t n;
    char requests[FAKE_MAX][8192]; /* what each connection sent (head + body, truncated) */
};

/* Reads one request: the head up to the blank line, then Content-Length bytes of body. */
static void read_request(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    long body = -1;
    while (len + 1 < cap) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
        buf[len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (end == NULL) {
            continue;
        }
        if (body < 0) {
            char *cl = strstr(buf, "\r\nContent-Length:");
            body = cl != NULL && cl < end ? strtol(cl + 17, NULL, 10) : 0;
        }
        if (len >= (size_t)(end + 4 - buf) + (size_t)body) {
            break;
        }
    }
    buf[len] = '\0';
}

static void *fake_run(void *arg)
{
    struct fake_server *f = arg;
    for (size_t i = 0; i < f->n; i++) {
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0) {
            break;
        }
        read_request(fd, f->requests[i], sizeof f->requests[i]);
        const char *r = f->responses[i];
        size_t off = 0, len = strlen(r);
        while (off < len) {
            ssize_t n = write(fd, r + off, len - off);
            if (n <= 0) {
                break;
            }
            off += (size_t)n;
        }
        close(fd);
    }
    return NULL;
}

static int fake_start(struct fake_server *f)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(f->lfd, 8) != 0 || getsockname(f->lfd, (struct sockaddr *)&sa, &sl) != 0) {
        return -1;
    }
    f->port = ntohs(sa.sin_port);
    return pthread_create(&f->thread, NULL, fake_run, f) == 0 ? 0 : -1;
}

static void fake_stop(struct fake_server *f)
{
    pthread_join(f->thread, NULL);
    close(f->lfd);
}

/* A complete HTTP/1.1 response with the given status line and JSON body (static buffer pool). */
static const char *http_response(int status, const char *extra_headers, const char *body)
{
    static char pool[FAKE_MAX][16384];
    static int next;
    char *buf = pool[next++ % FAKE_MAX];
    snprintf(buf, sizeof pool[0],
             "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
             "Connection: close\r\nX-Request-Id: req-%d\r\n%s\r\n%s",
             status, strlen(body), status, extra_headers, body);
    return buf;
}

static char *client_url(int port)
{
    static char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
    return url;
}

/* ---- URL and path building ---------------------------------------------------------------- */

static void test_sdk_url_normalize(void)
{
    char *u = NULL;
    CHECK_EQ(sdk_url_normalize("127.0.0.1:8080", &u), ROOST_OK);
    CHECK_STREQ(u, "http://127.0.0.1:8080");
    free(u);
    CHECK_EQ(sdk_url_normalize("http://h:1///", &u), ROOST_OK);
    CHECK_STREQ(u, "http://h:1");
    free(u);
    CHECK_EQ(sdk_url_normalize("HTTPS://roost.example/prefix/", &u), ROOST_OK);
    CHECK_STREQ(u, "HTTPS://roost.example/prefix");
    free(u);
    CHECK_EQ(sdk_url_normalize("ftp://h", &u), ROOST_EINVAL);
    CHECK(u == NULL);
    CHECK_EQ(sdk_url_normalize("", &u), ROOST_EINVAL);
    CHECK_EQ(sdk_url_normalize("http://", &u), ROOST_EINVAL);
    CHECK_EQ(sdk_url_normalize("http:///x", &u), ROOST_EINVAL);
    CHECK_EQ(sdk_url_normalize("http://a b", &u), ROOST_EINVAL);
    CHECK_EQ(sdk_url_normalize("http://a\r\nX: y", &u), ROOST_EINVAL);
    CHECK_EQ(sdk_url_normalize(NULL, &u), ROOST_EINVAL);
    char big[SDK_MAX_URL_BYTES + 16];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big, "http://", 7);
    CHECK_EQ(sdk_url_normalize(big, &u), ROOST_EINVAL);
}

static void test_sdk_escape_keeps_only_unreserved(void)
{
    struct dynbuf s;
    dynbuf_init(&s, SDK_MAX_URL_BYTES * 4);
    sdk_add_escaped(&s, "aZ09-._~ /?#%&=+\xc3\xa9");
    CHECK_EQ(sdk_buf_rc(&s), ROOST_OK);
    CHECK_STREQ(s.s, "aZ09-._~%20%2F%3F%23%25%26%3D%2B%C3%A9");
    dynbuf_cleanup(&s);
}

/* The path builders' buffer is a dynbuf (test_dynbuf covers it); its error reads as a roost_rc. */
static void test_sdk_buf_rc_reports_the_limit(void)
{
    struct dynbuf s;
    dynbuf_init(&s, 8);
    dynbuf_adds(&s, "12345678");
    CHECK_EQ(sdk_buf_rc(&s), ROOST_OK);
    dynbuf_adds(&s, "9");
    CHECK_EQ(sdk_buf_rc(&s), ROOST_EINVAL);
    dynbuf_adds(&s, ""); /* stays failed */
    CHECK_EQ(sdk_buf_rc(&s), ROOST_EINVAL);
    dynbuf_cleanup(&s);
}

static void test_sdk_paths_validate_and_escape(void)
{
    struct dynbuf s;
    dynbuf_init(&s, SDK_MAX_URL_BYTES * 4);
    CHECK_EQ(sdk_path_agent(&s, "agent-1.x_Y", "/inbox"), ROOST_OK);
    CHECK_STREQ(s.s, "/api/v1/agents/agent-1.x_Y/inbox");
    dynbuf_cleanup(&s);

    const char *bad[] = {"", "a/b", "a:b", "a b", "../x?y", "\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dynbuf_init(&s, SDK_MAX_URL_BYTES * 4);
        CHECK_EQ(sdk_path_agent(&s, bad[i], "/inbox"), ROOST_EAGENTID);
        dynbuf_cleanup(&s);
    }
    char longid[130];
    memset(longid, 'a', 129);
    longid[129] = '\0';
    dynbuf_init(&s, SDK_MAX_URL_BYTES * 4);
    CHECK_EQ(sdk_path_agent(&s, longid, ""), ROOST_EAGENTID);
    dynbuf_cleanup(&s);
    dynbuf_init(&s, SDK_MAX_URL_BYTES * 4);
    CHECK_EQ(sdk_path_agent(&s, NULL, ""), ROOST_EAGENTID);
    dynbuf_cleanup(&s);

    dynbuf_init(&s, SDK_MAX_URL_BYTES * 4);
    CHECK_EQ(sdk_path_event(&s, "a1", "evt_01/../x", "ack"), ROOST_OK);
    CHECK_STREQ(s.s, "/api/v1/agents/a1/inbox/evt_01%2F..%2Fx/ack");
    dynbuf_cleanup(&s);
    dynbuf_init(&s, SDK_MAX_URL_BYTES * 4);
    CHECK_EQ(sdk_path_event(&s, "a1", "", "ack"), ROOST_EEVENTID);
    dynbuf_cleanup(&s);
}

/* ---- error mapping ------------------------------------------------------------------------ */

static void test_sdk_error_codes_round_trip(void)
{
    /* Every row of the table: the server renders {"error":{"code"}} with its status; the SDK
     * must map it back to the first row carrying that code. */
    for (int rc = -1; rc >= -(int)ROOST_POS_COUNT_; rc--) {
        char body[256];
        snprintf(body, sizeof body, "{\"error\":{\"code\":\"%s\",\"message\":\"m%d\"}}",
                 roost_err_code(rc), -rc);
        int status = roost_err_http_status(rc) != 0 ? roost_err_http_status(rc) : 500;
        struct sdk_error e;
        sdk_error_from_response(status, body, strlen(body), &e);
        CHECK_EQ(e.rc, roost_err_from_code(roost_err_code(rc)));
        CHECK_STREQ(e.code, roost_err_code(rc));
        char want[16];
        snprintf(want, sizeof want, "m%d", -rc);
        CHECK_STREQ(e.message, want);
    }
    CHECK_EQ(roost_err_from_code("lease_mismatch"), ROOST_ELEASEMISMATCH);
    CHECK_EQ(roost_err_from_code("cursor_expired"), ROOST_EGONE);
}

static void test_sdk_error_gone_carries_oldest_cursor(void)
{
    const char *body = "{\"error\":{\"code\":\"cursor_expired\",\"message\":\"too old\","
                       "\"resync\":\"/api/v1/agents/a1/state\",\"oldest_cursor\":42}}";
    struct sdk_error e;
    sdk_error_from_response(410, body, strlen(body), &e);
    CHECK_EQ(e.rc, ROOST_EGONE);
    CHECK_EQ(e.oldest_cursor, 42);
    CHECK_STREQ(e.message, "too old");
}

static void test_sdk_error_falls_back_on_status(void)
{
    struct sdk_error e;
    const char *unknown = "{\"error\":{\"code\":\"brand_new_code\",\"message\":\"x\\u001b[31m\"}}";
    sdk_error_from_response(409, unknown, strlen(unknown), &e);
    CHECK_EQ(e.rc, ROOST_ESTATE);
    CHECK_STREQ(e.code, "brand_new_code"); /* the server's word is still reported */
    CHECK_STREQ(e.message, "x?[31m");      /* no terminal escapes from a hostile server */
    sdk_error_from_response(503, "<html>busy</html>", 17, &e);
    CHECK_EQ(e.rc, ROOST_EUNAVAILABLE);
    CHECK_STREQ(e.message, "HTTP 503");
    sdk_error_from_response(404, NULL, 0, &e);
    CHECK_EQ(e.rc, ROOST_ENOTFOUND);
    CHECK_EQ(e.oldest_cursor, -1);
    sdk_error_from_response(418, "{}", 2, &e);
    CHECK_EQ(e.rc, ROOST_EPROTO);
    sdk_error_from_response(500, "{\"error\":\"flat\"}", 16, &e);
    CHECK_EQ(e.rc, ROOST_EINTERNAL);
    CHECK_EQ(sdk_rc_from_status(401), ROOST_EUNAUTHENTICATED);
    CHECK_EQ(sdk_rc_from_status(403), ROOST_EFORBIDDEN);
    CHECK_EQ(sdk_rc_from_status(429), ROOST_ERATELIMIT);
    CHECK_EQ(sdk_rc_from_status(413), ROOST_ETOOLARGE);
}

/* ---- client argument checks (no I/O) ------------------------------------------------------ */

static void test_sdk_client_new_rejects_bad_args(void)
{
    struct roost_client *c = (struct roost_client *)1;
    CHECK_EQ(roost_client_new(&c, "gopher://x", NULL), ROOST_EINVAL);
    CHECK(c == NULL);
    CHECK_EQ(roost_client_new(&c, "http://x", "tok\r\nX-Evil: 1"), ROOST_EINVAL);
    CHECK_EQ(roost_client_new(NULL, "http://x", NULL), ROOST_EINVAL);
    CHECK_EQ(roost_client_new(&c, NULL, NULL), ROOST_EINVAL);
    CHECK(roost_client_errmsg(NULL) != NULL);
    roost_client_free(NULL);

    CHECK_EQ(roost_client_new(&c, "localhost:1", "t0k"), ROOST_OK);
    CHECK_STREQ(roost_client_errmsg(c), "");
    CHECK_EQ(roost_client_set_timeouts(c, -1, 0), ROOST_EINVAL);
    CHECK_EQ(roost_client_set_timeouts(c, 500, 2000), ROOST_OK);
    CHECK_EQ(roost_client_set_max_response_bytes(c, 10), ROOST_EINVAL);
    CHECK_EQ(roost_client_set_token(c, "new token"), ROOST_EINVAL);
    CHECK_EQ(roost_client_set_token(c, NULL), ROOST_OK);
    CHECK_EQ(roost_client_oldest_cursor(c), -1);
    roost_client_free(c);
}

static void test_sdk_calls_check_args_before_io(void)
{
    struct roost_client *c = NULL;
    /* Port 1 on loopback: nothing listens, but none of these calls may get that far. */
    CHECK_EQ(roost_client_new(&c, "http://127.0.0.1:1", "t"), ROOST_OK);
    struct roost_events *evs = (struct roost_events *)1;
    CHECK_EQ(roost_inbox_read(c, "bad/agent", 0, 10, 0, &evs), ROOST_EAGENTID);
    CHECK(evs == NULL);
    CHECK(strstr(roost_client_errmsg(c), "agent_id") != NULL);
    CHECK_STREQ(roost_client_errcode(c), "invalid_agent_id");
    CHECK_EQ(roost_inbox_read(c, "a1", -1, 10, 0, &evs), ROOST_ECURSOR);
    CHECK_EQ(roost_inbox_claim(c, "a1", -1, 0, 0, NULL, &evs), ROOST_ELIMIT);
    CHECK_EQ(roost_event_ack(c, "a1", "evt_x", NULL), ROOST_ELEASETOKEN);
    CHECK_EQ(roost_event_ack(c, "a1", "", "lt_x"), ROOST_EEVENTID);
    CHECK_EQ(roost_event_release(c, "a1", "evt_x", "lt_x", -5, ROOST_RELEASE_DEFAULT, NULL),
             ROOST_EDELAY);
    CHECK_EQ(roost_event_release(c, "a1", "evt_x", "lt_x", 0, (enum roost_release_reason)9, NULL),
             ROOST_EREASON);
    CHECK_EQ(roost_events_ack(c, "a1", NULL, 0, NULL), ROOST_EACKS);

    struct roost_message m;
    roost_message_init(&m);
    CHECK_EQ(roost_publish(c, &m, &evs), ROOST_ERECIPIENTS);
    const char *to[] = {"a1", "a2"};
    m.recipients = to;
    m.n_recipients = 2;
    m.payload = "[1,2]";
    CHECK_EQ(roost_publish(c, &m, &evs), ROOST_EPAYLOAD);
    m.payload = "{\"a\":";
    CHECK_EQ(roost_publish(c, &m, &evs), ROOST_EPAYLOAD);
    m.payload = "{}";
    m.priority = 101;
    CHECK_EQ(roost_publish(c, &m, &evs), ROOST_EPRIORITY);
    m.priority = 0;
    m.state_patch = "7";
    CHECK_EQ(roost_publish(c, &m, &evs), ROOST_ESTATEPATCH);
    m.state_patch = NULL;
    m.delay_s = 5;
    m.available_at = "2030-01-01T00:00:00.000Z";
    CHECK_EQ(roost_publish(c, &m, &evs), ROOST_EAVAILABLEAT);
    m.available_at = NULL;
    const char *bad_to[] = {"ok", "not ok"};
    m.recipients = bad_to;
    CHECK_EQ(roost_publish(c, &m, &evs), ROOST_EAGENTID);
    CHECK_EQ(roost_publish_batch(c, &m, 0, &evs), ROOST_EBATCH);
    CHECK_EQ(roost_publish_json(c, "not json", &evs), ROOST_EJSON);
    CHECK_EQ(roost_client_request(c, "TRACE", "/x", NULL, NULL, NULL), ROOST_EINVAL);
    CHECK_EQ(roost_client_request(c, "GET", "no-slash", NULL, NULL, NULL), ROOST_EINVAL);

    enum roost_release_reason r = ROOST_RELEASE_DEFAULT;
    CHECK_EQ(roost_release_reason_parse("poison", &r), ROOST_OK);
    CHECK_EQ(r, ROOST_RELEASE_POISON);
    CHECK_EQ(roost_release_reason_parse("later", &r), ROOST_EREASON);
    CHECK_STREQ(roost_release_reason_name(ROOST_RELEASE_SHUTDOWN), "shutdown");
    CHECK(roost_release_reason_name(ROOST_RELEASE_DEFAULT) == NULL);
    roost_client_free(c);
}

/* ---- transport against a scripted peer ---------------------------------------------------- */

static void test_sdk_connect_failure_is_econnect(void)
{
    /* A port that was just free: bind, learn it, close, then connect → refused. */
    struct fake_server f;
    memset(&f, 0, sizeof f);
    CHECK_EQ(fake_start(&f), 0); /* n == 0: the thread exits at once */
    fake_stop(&f);
    struct roost_client *c = NULL;
    CHECK_EQ(roost_client_new(&c, client_url(f.port), "t"), ROOST_OK);
    char *state = NULL;
    CHECK_EQ(roost_state_get(c, "a1", &state, NULL), ROOST_ECONNECT);
    CHECK(state == NULL);
    CHECK_EQ(roost_client_http_status(c), 0);
    CHECK(strstr(roost_client_errmsg(c), "127.0.0.1") != NULL);
    CHECK_STREQ(roost_client_errcode(c), "connect_failed");
    roost_client_free(c);
}

static void test_sdk_inbox_read_parses_events(void)
{
    struct fake_server f;
    memset(&f, 0, sizeof f);
    f.responses[0] = http_response(
        200, "",
        "{\"events\":[{\"event_id\":\"evt_01HZZZZZZZZZZZZZZZZZZZZZZZ\",\"agent_id\":\"a1\","
        "\"sequence_number\":7,\"status\":\"pending\",\"priority\":3,\"correlation_id\":null,"
        "\"payload\":{\"task\":\"x\",\"n\":[1,2]},\"created_at\":\"2026-12-02T18:35:06.123Z\","
        "\"available_at\":\"2026-12-02T18:35:06.123Z\",\"expires_at\":null,\"future\":true}],"
        "\"next_cursor\":7,\"has_more\":true}");
    f.responses[1] = http_response(
        410, "",
        "{\"error\":{\"code\":\"cursor_expired\",\"message\":\"gone\",\"oldest_cursor\":100}}");
    f.n = 2;
    CHECK_EQ(fake_start(&f), 0);
    struct roost_client *c = NULL;
    CHECK_EQ(roost_client_new(&c, client_url(f.port), "tok.en"), ROOST_OK);
    struct roost_events *evs = NULL;
    CHECK_EQ(roost_inbox_read(c, "a1", 6, 5, 0, &evs), ROOST_OK);
    CHECK(strncmp(f.requests[0], "GET /api/v1/agents/a1/inbox?after_cursor=6&limit=5 HTTP/1.1",
                  59) == 0);
    CHECK(strstr(f.requests[0], "\r\nAuthorization: Bearer tok.en\r\n") != NULL);
    CHECK_EQ(roost_client_http_status(c), 200);
    CHECK_STREQ(roost_client_request_id(c), "req-200");
    if (evs != NULL && evs->count == 1) {
        struct roost_event *e = evs->items[0];
        CHECK_STREQ(e->event_id, "evt_01HZZZZZZZZZZZZZZZZZZZZZZZ");
        CHECK_STREQ(e->agent_id, "a1");
        CHECK_EQ(e->sequence_number, 7);
        CHECK_EQ(e->priority, 3);
        CHECK(e->correlation_id == NULL);
        CHECK(e->expires_at == NULL);
        CHECK(e->lease_token == NULL);
        CHECK_STREQ(e->payload, "{\"task\":\"x\",\"n\":[1,2]}");
        CHECK(strstr(e->json, "\"future\":true") != NULL);
        CHECK_EQ(evs->next_cursor, 7);
        CHECK(evs->has_more);
        CHECK_EQ(evs->head, -1); /* not sent by this peer */
    } else {
        CHECK(evs != NULL && evs->count == 1); /* one event expected */
    }
    roost_events_free(evs);

    CHECK_EQ(roost_inbox_read(c, "a1", 3, 0, 0, &evs), ROOST_EGONE);
    CHECK(evs == NULL);
    CHECK_EQ(roost_client_oldest_cursor(c), 100);
    CHECK_STREQ(roost_client_errmsg(c), "gone");
    CHECK_STREQ(roost_client_errcode(c), "cursor_expired");
    CHECK(strstr(roost_client_last_body(c, NULL), "oldest_cursor") != NULL);
    roost_client_free(c);
    fake_stop(&f);
}

static void test_sdk_claim_ack_and_batch(void)
{
    struct fake_server f;
    memset(&f, 0, sizeof f);
    f.responses[0] = http_response(
        200, "",
        "{\"events\":[{\"event_id\":\"evt_A\",\"agent_id\":\"a1\",\"sequence_number\":1,"
        "\"payload\":{},\"lease_token\":\"lt_1\",\"claim_expires_at\":\"2026-12-02T18:36:06.000Z\","
        "\"attempts\":2}]}");
    f.responses[1] =
        http_response(409, "", "{\"error\":{\"code\":\"lease_mismatch\",\"message\":\"stale\"}}");
    f.responses[2] = http_response(
        200, "",
        "{\"results\":[{\"event_id\":\"evt_B\",\"error\":{\"code\":\"event_not_found\","
        "\"message\":\"no\"}},{\"event_id\":\"evt_A\",\"status\":\"completed\"}]}");
    f.responses[3] =
        http_response(429, "Retry-After: 7\r\n",
                      "{\"error\":{\"code\":\"too_many_requests\",\"message\":\"slow\"}}");
    f.n = 4;
    CHECK_EQ(fake_start(&f), 0);
    struct roost_client *c = NULL;
    CHECK_EQ(roost_client_new(&c, client_url(f.port), "t"), ROOST_OK);
    struct roost_events *evs = NULL;
    CHECK_EQ(roost_inbox_claim(c, "a1", 5, 30, 0, "host:42", &evs), ROOST_OK);
    CHECK(strncmp(f.requests[0], "POST /api/v1/agents/a1/inbox/claim HTTP/1.1", 43) == 0);
    CHECK(strstr(f.requests[0], "{\"limit\":5,\"lease_s\":30,\"consumer\":\"host:42\"}") != NULL);
    CHECK(strstr(f.requests[0], "Content-Type: application/json") != NULL);
    if (evs != NULL && evs->count == 1) {
        CHECK_STREQ(evs->items[0]->lease_token, "lt_1");
        CHECK_EQ(evs->items[0]->attempts, 2);
        CHECK_STREQ(evs->items[0]->claim_expires_at, "2026-12-02T18:36:06.000Z");
    } else {
        CHECK(evs != NULL && evs->count == 1); /* one claimed event expected */
    }
    roost_events_free(evs);

    CHECK_EQ(roost_event_ack(c, "a1", "evt_A", "lt_0"), ROOST_ELEASEMISMATCH);
    CHECK(strncmp(f.requests[1], "POST /api/v1/agents/a1/inbox/evt_A/ack HTTP/1.1", 47) == 0);
    CHECK(strstr(f.requests[1], "{\"lease_token\":\"lt_0\"}") != NULL);
    CHECK_EQ(roost_client_http_status(c), 409);

    struct roost_ack acks[2] = {{"evt_A", "lt_1", 99}, {"evt_B", "lt_2", 99}};
    size_t failed = 99;
    CHECK_EQ(roost_events_ack(c, "a1", acks, 2, &failed), ROOST_OK);
    CHECK_EQ(acks[0].rc, ROOST_OK); /* matched by event_id, not position */
    CHECK_EQ(acks[1].rc, ROOST_EEVENTNOTFOUND);
    CHECK_EQ(failed, 1);

    char *state = NULL;
    CHECK_EQ(roost_state_get(c, "a1", &state, NULL), ROOST_ERATELIMIT);
    CHECK_EQ(roost_client_retry_after_s(c), 7);
    roost_client_free(c);
    fake_stop(&f);
}

static void test_sdk_response_is_capped_and_checked(void)
{
    static char big[12000];
    int n = snprintf(big, sizeof big,
                     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     "\r\n{\"state\":{\"k\":\"");
    memset(big + n, 'x', sizeof big - (size_t)n - 8);
    memcpy(big + sizeof big - 8, "\"},\"cur", 8);
    big[sizeof big - 1] = '\0';
    struct fake_server f;
    memset(&f, 0, sizeof f);
    f.responses[0] = big; /* no Content-Length: the cap must hold while streaming */
    f.responses[1] = http_response(200, "", "[1,2,3]");
    f.responses[2] = http_response(200, "", "{\"state\":{\"a\":1},\"cursor\":\"nine\"}");
    f.responses[3] = http_response(200, "", "{\"state\":{\"a\":{\"b\":true}},\"cursor\":9}");
    f.n = 4;
    CHECK_EQ(fake_start(&f), 0);
    struct roost_client *c = NULL;
    CHECK_EQ(roost_client_new(&c, client_url(f.port), "t"), ROOST_OK);
    CHECK_EQ(roost_client_set_max_response_bytes(c, 4096), ROOST_OK);
    char *state = NULL;
    int64_t cursor = -1;
    CHECK_EQ(roost_state_get(c, "a1", &state, &cursor), ROOST_EPROTO);
    CHECK(strstr(roost_client_errmsg(c), "4096") != NULL);
    CHECK_EQ(roost_state_get(c, "a1", &state, &cursor), ROOST_EPROTO);
    CHECK_EQ(roost_state_get(c, "a1", &state, &cursor), ROOST_EPROTO);
    CHECK(state == NULL);
    CHECK_EQ(roost_state_get(c, "a1", &state, &cursor), ROOST_OK);
    CHECK_STREQ(state, "{\"a\":{\"b\":true}}");
    CHECK_EQ(cursor, 9);
    roost_free(state);
    roost_client_free(c);
    fake_stop(&f);
}

/* ---- the SSE reader (roost_subscribe) ------------------------------------------------------ */

struct pings {
    char events[4][32];
    int64_t hints[4];
    int n;
    int stop_after; /* 0: never ask to stop */
};

static int on_ping(const char *event, int64_t cursor_hint, void *ctx)
{
    struct pings *p = ctx;
    if (p->n < 4) {
        snprintf(p->events[p->n], sizeof p->events[0], "%s", event);
        p->hints[p->n] = cursor_hint;
    }
    p->n++;
    return p->stop_after > 0 && p->n >= p->stop_after;
}

static void test_sdk_subscribe_reads_pings_and_maps_errors(void)
{
    static const char stream[] =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        "retry: 3000\n\n"
        "event: heartbeat\ndata: {\"cursor_hint\":4}\n\n"
        "event: inbox_updated\ndata: {}\n\n";
    struct fake_server f;
    memset(&f, 0, sizeof f);
    f.responses[0] = stream;
    f.responses[1] = stream;
    f.responses[2] = http_response(
        401, "", "{\"error\":{\"code\":\"unauthenticated\",\"message\":\"token expired\"}}");
    /* An error answer without a body is still an error answer, not a closed stream. */
    f.responses[3] = "HTTP/1.1 503 X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    f.n = 4;
    CHECK_EQ(fake_start(&f), 0);
    struct roost_client *c = NULL;
    CHECK_EQ(roost_client_new(&c, client_url(f.port), "tok.en"), ROOST_OK);

    struct pings p = {.n = 0};
    CHECK_EQ(roost_subscribe(c, "a1", on_ping, &p), ROOST_ECONNECT);
    CHECK(strstr(roost_client_errmsg(c), "closed by the server") != NULL);
    CHECK(strncmp(f.requests[0], "GET /api/v1/agents/a1/subscribe HTTP/1.1", 40) == 0);
    CHECK(strstr(f.requests[0], "\r\nAccept: text/event-stream\r\n") != NULL);
    CHECK(strstr(f.requests[0], "\r\nAuthorization: Bearer tok.en\r\n") != NULL);
    CHECK_EQ(p.n, 2);
    CHECK_STREQ(p.events[0], "heartbeat");
    CHECK_EQ(p.hints[0], 4);
    CHECK_STREQ(p.events[1], "inbox_updated");
    CHECK_EQ(p.hints[1], -1);

    struct pings once = {.stop_after = 1};
    CHECK_EQ(roost_subscribe(c, "a1", on_ping, &once), ROOST_OK);
    CHECK_EQ(once.n, 1);

    CHECK_EQ(roost_subscribe(c, "a1", on_ping, &p), ROOST_EUNAUTHENTICATED);
    CHECK_EQ(roost_client_http_status(c), 401);
    CHECK_STREQ(roost_client_errmsg(c), "token expired");
    CHECK_EQ(roost_subscribe(c, "a1", on_ping, &p), ROOST_EUNAVAILABLE);
    CHECK_EQ(roost_client_http_status(c), 503);
    CHECK_EQ(p.n, 2); /* no event from an error answer */
    CHECK_EQ(roost_subscribe(c, "bad/agent", on_ping, &p), ROOST_EAGENTID);
    roost_client_free(c);
    fake_stop(&f);
}

static void test_sdk_json_dump_keeps_numbers_short_and_exact(void)
{
    json_error_t err;
    json_t *v = json_loads("{\"a\":0.1,\"b\":2.5e-7,\"c\":[1,\"x\"]}", 0, &err);
    char *text = sdk_json_dump(v);
    CHECK_STREQ(text, "{\"a\":0.1,\"b\":2.5e-7,\"c\":[1,\"x\"]}");
    free(text);
    json_decref(v);
    /* A value that needs 17 digits makes the whole document fall back to exact output. */
    v = json_loads("{\"b\":0.30000000000000004}", 0, &err);
    text = sdk_json_dump(v);
    CHECK_STREQ(text, "{\"b\":0.30000000000000004}");
    free(text);
    json_decref(v);
}

static void test_sdk_publish_sends_the_message(void)
{
    struct fake_server f;
    memset(&f, 0, sizeof f);
    f.responses[0] = http_response(201, "",
                                   "{\"events\":[{\"event_id\":\"evt_1\",\"agent_id\":\"a1\","
                                   "\"sequence_number\":4},{\"event_id\":\"evt_2\",\"agent_id\":"
                                   "\"a2\",\"sequence_number\":9}]}");
    f.responses[1] = http_response(200, "",
                                   "{\"events\":[{\"event_id\":\"evt_1\",\"agent_id\":\"a1\","
                                   "\"sequence_number\":4}]}");
    f.n = 2;
    CHECK_EQ(fake_start(&f), 0);
    struct roost_client *c = NULL;
    CHECK_EQ(roost_client_new(&c, client_url(f.port), "t"), ROOST_OK);
    const char *to[] = {"a1", "a2"};
    struct roost_message m;
    roost_message_init(&m);
    m.recipients = to;
    m.n_recipients = 2;
    m.payload = "{\"x\":0.1}";
    m.priority = -3;
    m.idempotency_key = "k1";
    m.delay_s = 60;
    m.state_patch = "{\"seen\":true}";
    struct roost_events *res = NULL;
    CHECK_EQ(roost_publish(c, &m, &res), ROOST_OK);
    CHECK(strncmp(f.requests[0], "POST /api/v1/events HTTP/1.1", 28) == 0);
    CHECK(strstr(f.requests[0], "{\"recipients\":[\"a1\",\"a2\"],\"payload\":{\"x\":0.1},"
                                "\"priority\":-3,\"delay_s\":60,\"idempotency_key\":\"k1\","
                                "\"state_patch\":{\"seen\":true}}") != NULL);
    CHECK(res != NULL && res->count == 2 && !res->duplicate);
    if (res != NULL && res->count == 2) {
        CHECK_STREQ(res->items[1]->agent_id, "a2");
        CHECK_EQ(res->items[1]->sequence_number, 9);
    }
    roost_events_free(res);
    res = NULL;
    CHECK_EQ(roost_publish_json(c, "{\"recipients\":[\"a1\"],\"idempotency_key\":\"k1\"}", &res),
             ROOST_OK);
    CHECK(strstr(f.requests[1], "\r\n\r\n{\"recipients\":[\"a1\"],\"idempotency_key\":\"k1\"}") !=
          NULL);
    CHECK(res != NULL && res->duplicate);
    roost_events_free(res);
    roost_client_free(c);
    fake_stop(&f);
}

/* ---- token mint --------------------------------------------------------------------------- */

static int write_key(EVP_PKEY *key, char *path, size_t pathlen)
{
    snprintf(path, pathlen, "/tmp/roost_test_key_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        return -1;
    }
    FILE *fp = fdopen(fd, "w");
    int ok = fp != NULL && PEM_write_PrivateKey(fp, key, NULL, NULL, 0, NULL, NULL) == 1;
    if (fp != NULL) {
        fclose(fp);
    }
    return ok ? 0 : -1;
}

static void test_sdk_token_mint_round_trip(void)
{
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    EVP_PKEY *other = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    char path[64], ec_path[64];
    CHECK(key != NULL && other != NULL && ec != NULL);
    CHECK_EQ(write_key(key, path, sizeof path), 0);
    CHECK_EQ(write_key(ec, ec_path, sizeof ec_path), 0);

    char *tok = NULL;
    CHECK_EQ(roost_token_mint(path, "t1", "alice", "agent:a1:consume tenant:admin", 3600, &tok),
             ROOST_OK);
    CHECK(tok != NULL);
    struct jwt_parts p;
    memset(&p, 0, sizeof p);
    if (tok != NULL && jwt_decode(tok, strlen(tok), &p) == 0) {
        CHECK_EQ(jwt_verify_eddsa(&p, key), 0);
        CHECK_EQ(jwt_verify_eddsa(&p, other), -1);
        CHECK_STREQ(json_string_value(json_object_get(p.header, "alg")), "EdDSA");
        CHECK_STREQ(json_string_value(json_object_get(p.claims, "tenant")), "t1");
        CHECK_STREQ(json_string_value(json_object_get(p.claims, "sub")), "alice");
        CHECK_STREQ(json_string_value(json_object_get(p.claims, "scope")),
                    "agent:a1:consume tenant:admin");
        json_int_t iat = json_integer_value(json_object_get(p.claims, "iat"));
        json_int_t exp = json_integer_value(json_object_get(p.claims, "exp"));
        CHECK(iat > 1700000000);
        CHECK_EQ(exp - iat, 3600);
        jwt_parts_cleanup(&p);
    } else {
        CHECK(tok != NULL && jwt_decode(tok, strlen(tok), &p) == 0); /* must decode */
    }
    roost_free(tok);

    char err[256];
    tok = NULL;
    CHECK_EQ(roost_token_mint_ex("/nonexistent/key.pem", "t1", "s", "x", 60, &tok, err, sizeof err),
             ROOST_EIO);
    CHECK(strstr(err, "/nonexistent/key.pem") != NULL);
    CHECK(tok == NULL);
    CHECK_EQ(roost_token_mint_ex(ec_path, "t1", "s", "x", 60, &tok, err, sizeof err), ROOST_EIO);
    CHECK(strstr(err, "Ed25519") != NULL);
    CHECK_EQ(roost_token_mint(path, "bad tenant", "s", "x", 60, &tok), ROOST_EINVAL);
    CHECK_EQ(roost_token_mint(path, "t1", "", "x", 60, &tok), ROOST_EINVAL);
    CHECK_EQ(roost_token_mint(path, "t1", "s", "", 60, &tok), ROOST_EINVAL);
    CHECK_EQ(roost_token_mint(path, "t1", "s", "x", 0, &tok), ROOST_EINVAL);
    CHECK_EQ(roost_token_mint(path, "t1", "s", "x", ROOST_TOKEN_MAX_TTL_S + 1, &tok), ROOST_EINVAL);
    CHECK(tok == NULL);
    unlink(path);
    unlink(ec_path);
    EVP_PKEY_free(key);
    EVP_PKEY_free(other);
    EVP_PKEY_free(ec);
}

static void test_sdk_version(void)
{
    CHECK_STREQ(roost_version(), ROOST_VERSION);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", ROOST_SDK_VERSION_MAJOR, ROOST_SDK_VERSION_MINOR,
             ROOST_SDK_VERSION_PATCH);
    CHECK_STREQ(roost_version(), want);
}

int main(void)
{
    RUN(test_sdk_url_normalize);
    RUN(test_sdk_escape_keeps_only_unreserved);
    RUN(test_sdk_buf_rc_reports_the_limit);
    RUN(test_sdk_paths_validate_and_escape);
    RUN(test_sdk_error_codes_round_trip);
    RUN(test_sdk_error_gone_carries_oldest_cursor);
    RUN(test_sdk_error_falls_back_on_status);
    RUN(test_sdk_client_new_rejects_bad_args);
    RUN(test_sdk_calls_check_args_before_io);
    RUN(test_sdk_connect_failure_is_econnect);
    RUN(test_sdk_inbox_read_parses_events);
    RUN(test_sdk_claim_ack_and_batch);
    RUN(test_sdk_response_is_capped_and_checked);
    RUN(test_sdk_subscribe_reads_pings_and_maps_errors);
    RUN(test_sdk_json_dump_keeps_numbers_short_and_exact);
    RUN(test_sdk_publish_sends_the_message);
    RUN(test_sdk_token_mint_round_trip);
    RUN(test_sdk_version);
    return check_summary();
}
