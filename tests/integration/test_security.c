/* SPDX-License-Identifier: MIT */
/* Issue 13 against the real roostd: request ids that reveal nothing, database files only the
 * owner can read, /metrics kept to loopback without a token, tenant labels dropped on request,
 * slow and greedy clients cut off while others are answered, NUL and odd versions in a request
 * head refused, and streams ended when their token expires. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/harness.h"
#include "harness/sse_client.h"

#include "common/banned.h"

static struct roostd d;
static char *tok;

static bool is_hex(const char *s)
{
    for (; *s; s++) {
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) {
            return false;
        }
    }
    return true;
}

/* Item 7: 128 random bits, not a node-wide counter that anyone can sample. */
static void test_request_id_is_random(void)
{
    char ids[3][64];
    for (int i = 0; i < 3; i++) {
        struct h_response r;
        CHECK(h_request(d.http, "GET", "/healthz", NULL, NULL, 0, NULL, &r) == 0);
        CHECK(h_header(&r, "X-Request-Id", ids[i], sizeof ids[i]) != NULL);
        h_response_cleanup(&r);
        CHECK_EQ(strlen(ids[i]), 32);
        CHECK(is_hex(ids[i]));
    }
    /* Consecutive ids share no prefix a counter (or a clock) would give them. */
    CHECK(strncmp(ids[0], ids[1], 16) != 0);
    CHECK(strncmp(ids[1], ids[2], 16) != 0);
}

static int file_mode(const char *name)
{
    char *path = h_fmt("%s/%s", d.dir, name);
    struct stat st;
    int mode = stat(path, &st) == 0 ? (int)(st.st_mode & 0777) : -1;
    free(path);
    return mode;
}

/* Item 8: the database and its -wal and -shm are 0600 although the data dir was 0755 and the
 * umask 022, and the open data dir is named in the startup log. */
static void test_store_db_files_are_private(void)
{
    CHECK(h_publish(d.http, tok, "sec.perm", json_pack("{s:i}", "n", 1), NULL, NULL) > 0);
    CHECK_EQ(file_mode("roost.db"), 0600);
    CHECK_EQ(file_mode("roost.db-wal"), 0600);
    CHECK_EQ(file_mode("roost.db-shm"), 0600);
    CHECK_EQ(roostd_log_count(&d, "data dir is open to other users"), 1);
}

/* Item 3: without metrics.token, /metrics is for loopback peers only, and the log says so. */
static void test_metrics_loopback_only_without_token(void)
{
    CHECK_EQ(roostd_log_count(&d, "metrics served to loopback peers only"), 1);
    struct h_response r;
    CHECK(h_request(d.http, "GET", "/metrics", NULL, NULL, 0, NULL, &r) == 0);
    CHECK_EQ(r.status, 200);
    h_response_cleanup(&r);
}

/* A local IPv4 address that is not loopback (a connection to it comes from it), or false. */
static bool non_loopback_addr(char *buf, size_t len)
{
    struct ifaddrs *ifs = NULL;
    bool found = false;
    if (getifaddrs(&ifs) != 0) {
        return false;
    }
    for (struct ifaddrs *i = ifs; i != NULL && !found; i = i->ifa_next) {
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)i->ifa_addr;
            if ((ntohl(in->sin_addr.s_addr) >> 24) != 127) {
                found = inet_ntop(AF_INET, &in->sin_addr, buf, (socklen_t)len) != NULL;
            }
        }
    }
    freeifaddrs(ifs);
    return found;
}

static const char scrape[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/* Item 3 with a peer that is not loopback (this host's own non-loopback address), and
 * metrics.tenant_labels=off: no tenant or agent name in the scrape, the sums still there. */
static void test_metrics_remote_refused_and_labels_off(void)
{
    struct roostd m;
    const char *sets[] = {"--listen=0.0.0.0:0", "metrics.tenant_labels=off",
                          "metrics.refresh_ms=100", NULL};
    if (roostd_start(&m, NULL, sets) != 0) {
        CHECK(false);
        return;
    }
    char *t = h_token(&m, "secret-tenant", "agent:*:consume agent:*:publish tenant:admin");
    CHECK(h_publish(m.http, t, "hidden.agent", json_pack("{s:i}", "n", 1), NULL, NULL) > 0);
    char addr[64];
    if (non_loopback_addr(addr, sizeof addr)) {
        struct roostd remote = m;
        snprintf(remote.host, sizeof remote.host, "%s", addr);
        struct raw_reply rr;
        CHECK(raw_exchange(&remote, scrape, sizeof scrape - 1, 1, 5000, &rr) == 0);
        CHECK_EQ(rr.status[0], 403);
        CHECK(strstr(rr.buf, "roost_") == NULL);
        raw_reply_cleanup(&rr);
    } else {
        fprintf(stderr, "note: no non-loopback IPv4 address here; remote /metrics not tried\n");
    }
    bool ok;
    struct raw_reply rr = {0};
    H_WAIT_UNTIL(
        ok, 5000,
        (raw_reply_cleanup(&rr), raw_exchange(&m, scrape, sizeof scrape - 1, 1, 5000, &rr) == 0 &&
                                     strstr(rr.buf, "\nroost_inbox_pending 1\n") != NULL));
    CHECK(ok);
    CHECK_EQ(rr.status[0], 200);
    CHECK(strstr(rr.buf, "secret-tenant") == NULL);
    CHECK(strstr(rr.buf, "hidden.agent") == NULL);
    CHECK(strstr(rr.buf, "tenant=") == NULL);
    raw_reply_cleanup(&rr);
    free(t);
    roostd_finish(&m);
}

/* Item 9: a stream ends at its token's exp with a last event: token_expired, then closes. */
static void test_sse_stream_ends_at_token_exp(void)
{
    json_int_t now = (json_int_t)time(NULL);
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "tenant", "t1", "sub", "short", "scope",
                               "agent:*:read", "iat", now, "exp", now + 2);
    char *t = h_token_claims(&d, claims);
    json_decref(claims);
    struct sse s;
    int64_t t0 = h_now_ms();
    CHECK_EQ(sse_open(&s, &d, "/api/v1/agents/sec.stream/subscribe", t, NULL, 0), 200);
    struct sse_ev ev;
    int skipped = 0;
    CHECK_EQ(sse_next_named(&s, "token_expired", &ev, 6000, &skipped), 1);
    int64_t waited = h_now_ms() - t0;
    /* exp has second resolution: between 1 and 2 s after the open, never much later. */
    CHECK(waited >= 900 && waited < 4000);
    CHECK_EQ(sse_next(&s, &ev, 3000), -1); /* and the stream is over */
    sse_close(&s);
    free(t);
}

struct raw_case {
    const char *label;
    char *req;
    size_t len; /* 0: strlen(req) */
    int want;
};

/* Item 6: a NUL in a header value or the request line, a percent-encoded NUL in the query and
 * a malformed HTTP-version are refused with 400 (RFC 9110 5.5), never truncated and accepted. */
static void test_http_nul_and_version_refused(void)
{
    char *authz = h_fmt("Authorization: Bearer %s", tok);
    struct raw_case cases[6];
    size_t n = 0;
    /* Built with explicit lengths: the NULs are part of the bytes sent. */
    char *a = h_fmt("GET /api/v1/agents/sec.nul/inbox HTTP/1.1\r\nHost: x\r\n%sX\r\n\r\n", authz);
    char *nul = strstr(a, "X\r\n\r\n");
    *nul = '\0'; /* "Bearer <token>\0\r\n" */
    cases[n++] = (struct raw_case){"nul in Authorization", a, strlen(a) + 5, 400};
    cases[n++] = (struct raw_case){
        "limit=1%00",
        h_fmt("GET /api/v1/agents/sec.nul/inbox?limit=1%%00 HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n",
              authz),
        0, 400};
    char *v = h_fmt("GET /healthz HTTP/1.1X\r\nHost: x\r\n\r\n");
    *strchr(v, 'X') = '\0';
    cases[n++] =
        (struct raw_case){"HTTP/1.1\\0", v, strlen(v) + 1 + strlen("\r\nHost: x\r\n\r\n"), 400};
    cases[n++] =
        (struct raw_case){"HTTP/01.1", h_fmt("GET /healthz HTTP/01.1\r\nHost: x\r\n\r\n"), 0, 400};
    cases[n++] = (struct raw_case){
        "control: the same read",
        h_fmt("GET /api/v1/agents/sec.nul/inbox?limit=1 HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n", authz),
        0, 200};
    cases[n++] = (struct raw_case){"control: healthz",
                                   h_fmt("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 0, 200};
    for (size_t i = 0; i < n; i++) {
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].req);
        struct raw_reply r;
        CHECK_CASE(cases[i].label, raw_exchange(&d, cases[i].req, len, 1, 5000, &r) == 0);
        CHECK_CASE(cases[i].label, r.n_responses >= 1 && r.status[0] == cases[i].want);
        raw_reply_cleanup(&r);
        free(cases[i].req);
    }
    /* On a kept-alive connection, after a request with a body: the next head is checked too. */
    const char body[] = "{}";
    char *pipe = h_fmt("POST /api/v1/agents/sec.nul/inbox/release-all HTTP/1.1\r\nHost: x\r\n%s\r\n"
                       "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n%s"
                       "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: bX\r\n\r\n",
                       authz, body);
    size_t plen = strlen(pipe);
    pipe[plen - 5] = '\0'; /* "X-A: b\0\r\n" */
    struct raw_reply r;
    CHECK(raw_exchange(&d, pipe, plen, 2, 5000, &r) == 0);
    CHECK_EQ(r.n_responses, 2);
    CHECK_EQ(r.status[0], 200);
    CHECK_EQ(r.status[1], 400);
    raw_reply_cleanup(&r);
    free(pipe);
    free(authz);
}

static int raw_connect(const char *host, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &sa.sin_addr);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Waits up to timeout_ms for the peer to close: true when it did (EOF or reset). */
static bool wait_closed(int fd, int timeout_ms)
{
    int64_t deadline = h_now_ms() + timeout_ms;
    char buf[512];
    for (;;) {
        int left = (int)(deadline - h_now_ms());
        if (left <= 0) {
            return false;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, left) > 0) {
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n <= 0) {
                return true;
            }
        }
    }
}

/* One request on an open connection; the status of the answer, or -1. */
static int raw_get(int fd, const char *path)
{
    char *req = h_fmt("GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
    ssize_t sent = send(fd, req, strlen(req), MSG_NOSIGNAL);
    free(req);
    char buf[4096];
    size_t got = 0;
    int64_t deadline = h_now_ms() + 5000;
    while (got < sizeof buf - 1 && h_now_ms() < deadline && sent > 0) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0) {
            continue;
        }
        ssize_t n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
        buf[got] = '\0';
        if (strstr(buf, "\r\n\r\n") != NULL) {
            int status = -1;
            return sscanf(buf, "HTTP/1.1 %d", &status) == 1 ? status : -1;
        }
    }
    return -1;
}

/* Item 5: a request head trickled a byte every 1.5 s is cut off by http.header_timeout_s (2 s)
 * while another client is answered at once. */
static void test_http_slow_head_closed(void)
{
    struct roostd m;
    const char *sets[] = {"http.header_timeout_s=2", NULL};
    if (roostd_start(&m, NULL, sets) != 0) {
        CHECK(false);
        return;
    }
    static const char head[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    int fd = raw_connect(m.host, m.port);
    CHECK(fd >= 0);
    int64_t t0 = h_now_ms();
    bool closed = false;
    int other = -1;
    for (size_t i = 0; fd >= 0 && i < sizeof head - 1 && !closed; i++) {
        if (send(fd, head + i, 1, MSG_NOSIGNAL) != 1) {
            closed = true;
            break;
        }
        if (i == 0) {
            /* Meanwhile another client is served. */
            int fd2 = raw_connect(m.host, m.port);
            other = fd2 >= 0 ? raw_get(fd2, "/healthz") : -1;
            if (fd2 >= 0) {
                close(fd2);
            }
        }
        closed = wait_closed(fd, 1500);
        if (h_now_ms() - t0 > 8000) {
            break;
        }
    }
    int64_t waited = h_now_ms() - t0;
    CHECK(closed);
    CHECK(waited >= 1500 && waited < 5000);
    CHECK_EQ(other, 200);
    CHECK(roostd_log_count(&m, "request head too slow") >= 1);
    if (fd >= 0) {
        close(fd);
    }
    roostd_finish(&m);
}

/* Item 5: with http.max_conns_per_addr=4 the fifth connection from one address is refused, while
 * the open ones, other addresses, and (once one closed) the same address again are served. */
static void test_http_conns_per_addr_capped(void)
{
    struct roostd m;
    const char *sets[] = {"--listen=0.0.0.0:0", "http.max_conns_per_addr=4", NULL};
    if (roostd_start(&m, NULL, sets) != 0) {
        CHECK(false);
        return;
    }
    int fds[4];
    for (int i = 0; i < 4; i++) {
        fds[i] = raw_connect("127.0.0.1", m.port);
        CHECK(fds[i] >= 0);
    }
    /* The connections are counted once accepted: a request on each proves that. */
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(raw_get(fds[i], "/healthz"), 200);
    }
    int extra = raw_connect("127.0.0.1", m.port);
    CHECK(extra >= 0);
    char buf[256] = "";
    struct pollfd p = {.fd = extra, .events = POLLIN};
    ssize_t n = poll(&p, 1, 5000) > 0 ? recv(extra, buf, sizeof buf - 1, 0) : -1;
    CHECK(n >= 0);
    buf[n > 0 ? n : 0] = '\0';
    CHECK(n == 0 || strncmp(buf, "HTTP/1.1 503", 12) == 0);
    CHECK(wait_closed(extra, 5000));
    close(extra);
    CHECK_EQ(raw_get(fds[0], "/healthz"), 200); /* the others keep being answered */
    char addr[64];
    if (non_loopback_addr(addr, sizeof addr)) {
        int fd = raw_connect(addr, m.port);
        CHECK_EQ(fd >= 0 ? raw_get(fd, "/healthz") : -1, 200);
        if (fd >= 0) {
            close(fd);
        }
    }
    CHECK(roostd_log_count(&m, "too many from one address") >= 1);
    close(fds[1]);
    bool ok;
    int again = -1;
    H_WAIT_UNTIL(ok, 5000,
                 ((again >= 0 ? close(again) : 0), (again = raw_connect("127.0.0.1", m.port)),
                  again >= 0 && raw_get(again, "/healthz") == 200));
    CHECK(ok);
    if (again >= 0) {
        close(again);
    }
    for (int i = 0; i < 4; i++) {
        if (i != 1 && fds[i] >= 0) {
            close(fds[i]);
        }
    }
    roostd_finish(&m);
}

/* A positive decimal Retry-After. */
static bool atoi_ok(const char *s)
{
    long v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (*s - '0');
    }
    return *s == '\0' && v >= 1;
}

/* Item 4: with sse.max_per_tenant left at its default, one tenant gets a tenth of sse.max_total
 * (here 2 of 20) and another tenant still gets streams; a publish whose fan-out would write more
 * than limits.max_publish_bytes is refused with 413. */
static void test_quota_tenant_streams_and_fanout_bytes(void)
{
    struct roostd m;
    const char *sets[] = {"sse.max_total=20", "limits.max_publish_bytes=100000",
                          "limits.publish_rows_per_s=5", NULL};
    if (roostd_start(&m, NULL, sets) != 0) {
        CHECK(false);
        return;
    }
    char *ta = h_token(&m, "ta", "agent:*:read agent:*:publish");
    char *tb = h_token(&m, "tb", "agent:*:read");
    struct sse s[4];
    CHECK_EQ(sse_open(&s[0], &m, "/api/v1/agents/q1/subscribe", ta, NULL, 0), 200);
    CHECK_EQ(sse_open(&s[1], &m, "/api/v1/agents/q2/subscribe", ta, NULL, 0), 200);
    CHECK_EQ(sse_open(&s[2], &m, "/api/v1/agents/q3/subscribe", ta, NULL, 0), 429);
    char ra[16];
    CHECK(sse_header(&s[2], "Retry-After", ra, sizeof ra) != NULL);
    CHECK(s[2].body != NULL && strstr(s[2].body, "max_per_tenant") != NULL);
    CHECK_EQ(sse_open(&s[3], &m, "/api/v1/agents/q1/subscribe", tb, NULL, 0), 200);
    for (int i = 0; i < 4; i++) {
        sse_close(&s[i]);
    }

    char big[1001];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    json_t *recips = json_array();
    for (int i = 0; i < 200; i++) {
        char *name = h_fmt("fan.%d", i);
        json_array_append_new(recips, json_string(name));
        free(name);
    }
    /* 200 recipients x ~1 KB: about 200 KB written, over the 100 KB budget. */
    json_t *res = NULL;
    long st = h_callj(m.http, "POST", ta,
                      json_pack("{s:O, s:{s:s}}", "recipients", recips, "payload", "p", big), &res,
                      "/api/v1/events");
    CHECK_EQ(st, 413);
    CHECK_STREQ(h_error_code(res), "payload_too_large");
    json_decref(res);
    /* 50 of them (about 50 KB) pass. */
    while (json_array_size(recips) > 50) {
        json_array_remove(recips, 0);
    }
    res = NULL;
    st = h_callj(m.http, "POST", ta,
                 json_pack("{s:O, s:{s:s}}", "recipients", recips, "payload", "p", big), &res,
                 "/api/v1/events");
    CHECK_EQ(st, 201);
    json_decref(res);
    json_decref(recips);

    /* limits.publish_rows_per_s=5 (bursts of 10): requests of ten rows drain the bucket faster
     * than it refills, so one of them soon answers 429 with Retry-After (counted in requests, not
     * timed: a machine slow enough to refill ten rows between every two requests would need 2 s
     * per request, twenty times over), while another tenant publishes. */
    char *tr = h_token(&m, "tr", "agent:*:publish");
    json_t *ten = json_array();
    for (int i = 0; i < 10; i++) {
        char *name = h_fmt("rate.%d", i);
        json_array_append_new(ten, json_string(name));
        free(name);
    }
    json_t *ten_req = json_pack("{s:o}", "recipients", ten);
    char *ten_body = json_dumps(ten_req, JSON_COMPACT);
    json_decref(ten_req);
    struct h_response r = {0};
    bool limited = false;
    for (int i = 0; i < 20 && !limited; i++) {
        h_response_cleanup(&r);
        CHECK(h_request(m.http, "POST", "/api/v1/events", tr, ten_body, strlen(ten_body), NULL,
                        &r) == 0);
        CHECK(r.status == 201 || r.status == 429);
        limited = r.status == 429;
        CHECK(i > 0 || r.status == 201); /* a full bucket takes the first ten */
    }
    free(ten_body);
    CHECK(limited);
    char ra2[16];
    CHECK(h_header(&r, "Retry-After", ra2, sizeof ra2) != NULL && atoi_ok(ra2));
    h_response_cleanup(&r);
    char *tc = h_token(&m, "tc", "agent:*:publish");
    CHECK(h_publish(m.http, tc, "rate.other", json_pack("{}"), NULL, NULL) > 0);
    free(tc);
    free(tr);
    free(ta);
    free(tb);
    roostd_finish(&m);
}

int main(void)
{
    h_init();
    umask(022);
    char dir[] = "/tmp/roost-sec-XXXXXX";
    if (mkdtemp(dir) == NULL || chmod(dir, 0755) != 0) {
        return 1;
    }
    const char *sets[] = {NULL};
    if (roostd_start(&d, dir, sets) != 0) {
        return 1;
    }
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    RUN(test_request_id_is_random);
    RUN(test_store_db_files_are_private);
    RUN(test_metrics_loopback_only_without_token);
    RUN(test_sse_stream_ends_at_token_exp);
    RUN(test_http_nul_and_version_refused);
    RUN(test_http_slow_head_closed);
    RUN(test_http_conns_per_addr_capped);
    RUN(test_quota_tenant_streams_and_fanout_bytes);
    RUN(test_metrics_remote_refused_and_labels_off);
    free(tok);
    roostd_finish(&d);
    return h_summary();
}
