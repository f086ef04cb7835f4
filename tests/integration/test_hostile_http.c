/* SPDX-License-Identifier: MIT */
/* Hostile HTTP against the real roostd (tests/data/hostile/cases.tsv): every applicable H case
 * sent byte-exact over a raw socket, the P (ids in paths) and Q (query parameters) cases, and
 * many idle connections. Never a 5xx, never a crash; smuggled requests are never processed.
 *
 * Each raw H case is sent twice: byte-exact, and with a bearer token inserted after the request
 * line (and the body's "cursor" renamed to "wait_s", the claim field of the same length), so the
 * cases whose expected answer needs the request to get past authentication are meaningful too. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;
static char *tok_a1; /* agent:a1:consume only */
static char *tok_all;

#define MAXW 4

struct hcase {
    const char *id;
    const char *file;
    int want[MAXW];      /* acceptable statuses of the first response, byte-exact */
    int want_auth[MAXW]; /* the same with a token inserted */
    bool must_close;     /* the server must close the connection after its answer */
    int responses;       /* exact number of responses (0 = 1) */
    const char *choice;  /* where cases.tsv allows two answers: ours, and why */
};

/* clang-format off */
static const struct hcase hcases[] = {
    {"H01", "cl-te-both", {400}, {400}, true, 1, NULL},
    {"H02", "cl-duplicate-differing", {400}, {400}, true, 1, NULL},
    {"H03", "cl-duplicate-same", {400}, {400}, true, 1,
     "reject: any repeated Content-Length is refused, identical or not"},
    {"H04", "cl-list-value", {400}, {400}, true, 1, "reject, as H03"},
    {"H05", "cl-plus-sign", {400}, {400}, true, 1, NULL},
    {"H06", "cl-negative", {400}, {400}, true, 1, NULL},
    {"H07", "cl-hex", {400}, {400}, true, 1, NULL},
    {"H08", "cl-overflow", {400, 413}, {400, 413}, true, 1,
     "413 from evhttp: the value saturates (never wraps to 12) and exceeds the body cap"},
    {"H09", "cl-huge-declared", {413}, {413}, true, 1, NULL},
    {"H10", "te-not-chunked-last", {400}, {400}, true, 1, NULL},
    {"H11", "te-unknown", {400}, {400}, true, 1, "400 (not 501)"},
    {"H12", "te-obfuscated-space", {400}, {400}, true, 1, NULL},
    {"H13", "te-http10", {400}, {400}, true, 1, NULL},
    {"H14", "chunk-size-overflow", {400, 413}, {400, 413}, true, 1,
     "413 from evhttp: the chunk size exceeds the body cap"},
    {"H15", "chunk-size-0x-prefix", {400}, {400}, true, 1,
     "chunked request bodies are refused altogether (evhttp's chunk parser is lenient)"},
    {"H16", "chunk-missing-crlf", {400}, {400}, true, 1, "refused as H15"},
    {"H17", "chunk-ext-huge", {400, 413}, {400, 413}, true, 1,
     "413 from evhttp: the chunk line exceeds the body cap before roostd sees the request"},
    {"H18", "space-before-colon", {400}, {400}, true, 1, NULL},
    {"H19", "obs-fold", {401}, {200}, false, 1,
     "accept: evhttp replaces the fold with SP, which RFC 9112 5.2 allows as the alternative"},
    {"H20", "bare-lf", {401}, {200}, false, 1, "accept: RFC 9112 2.2 MAY accept a bare LF"},
    {"H21", "bare-cr-in-header", {400}, {400}, true, 1, NULL},
    {"H22", "nul-in-header", {400}, {400}, true, 1,
     "refused from the raw head: evhttp 2.1 alone would cut the value at the NUL"},
    {"H23", "underscore-content-length", {401}, {200}, false, 1, NULL},
    {"H24", "missing-host", {400}, {400}, true, 1, NULL},
    {"H25", "duplicate-host", {400}, {400}, true, 1, NULL},
    {"H26", "absolute-form-host-mismatch", {400}, {400}, true, 1, "400 for any absolute form"},
    {"H27", "request-line-too-long", {400, 414}, {400, 414}, true, 1,
     "400 from evhttp (its own limit answer, not 414)"},
    {"H28", "header-too-large", {400, 431}, {400, 431}, true, 1,
     "400 from evhttp (its own limit answer, not 431)"},
    {"H29", "too-many-headers", {431}, {431}, true, 1, NULL},
    {"H30", "invalid-method", {400, 501}, {400, 501}, true, 1, "501 from evhttp"},
    {"H31", "http-version-garbage", {400, 505}, {400, 505}, true, 1, "400 from evhttp"},
    {"H32", "expect-100-oversize", {413}, {413}, true, 1, NULL},
    {"H33", "wrong-content-type", {401}, {415}, false, 1, NULL},
    {"H34", "pipelined-second-request-smuggle", {401}, {200}, false, 2, NULL},
};
/* clang-format on */

static bool status_in(int st, const int *want)
{
    for (int i = 0; i < MAXW && want[i]; i++) {
        if (want[i] == st) {
            return true;
        }
    }
    return false;
}

static char *load_raw(const char *name, size_t *len)
{
    char *path = h_fmt("%s/data/hostile/http/%s.raw", TESTS_DIR, name);
    char *data = NULL;
    if (h_read_file(path, &data, len) != 0) {
        fprintf(stderr, "cannot read %s\n", path);
    }
    free(path);
    return data;
}

/* Renames the body field "cursor" to "wait_s" (same length: framing is unchanged). */
static void cursor_to_wait_s(char *data, size_t len)
{
    for (size_t i = 0; i + 8 <= len; i++) {
        if (memcmp(data + i, "\"cursor\"", 8) == 0) {
            memcpy(data + i, "\"wait_s\"", 8);
        }
    }
}

static void run_hcase(const struct hcase *c, bool with_token)
{
    size_t len = 0;
    char *raw = load_raw(c->file, &len);
    CHECK_CASE(c->id, raw != NULL);
    if (!raw) {
        return;
    }
    char *req = raw;
    if (with_token) {
        cursor_to_wait_s(raw, len);
        char *hdr = h_fmt("Authorization: Bearer %s", tok_a1);
        req = raw_insert_header(raw, len, hdr, &len);
        free(hdr);
    }
    int n = c->responses ? c->responses : 1;
    struct raw_reply r;
    char label[64];
    snprintf(label, sizeof label, "%s %s%s", c->id, c->file, with_token ? " +token" : "");
    /* Read until close when a close is required; after a pipelined pair, wait a little for a
     * smuggled third answer that must not come. */
    CHECK_CASE(label, raw_exchange(&d, req, len,
                                   c->must_close ? 0
                                   : n > 1       ? n + 1
                                                 : n,
                                   c->must_close ? 5000 : 1000, &r) == 0);
    const int *want = with_token ? c->want_auth : c->want;
    CHECK_CASE(label, r.n_responses >= 1);
    if (r.n_responses >= 1) {
        CHECK_CASE(label, status_in(r.status[0], want));
    }
    for (int i = 0; i < r.n_responses; i++) {
        CHECK_CASE(label, r.status[i] < 500 || r.status[i] == 501 || r.status[i] == 505);
        CHECK_CASE(label, r.status[i] != 100); /* never "100 Continue" for a refused body */
    }
    CHECK_CASE(label, r.n_responses == n);
    if (c->must_close) {
        CHECK_CASE(label, r.closed && !r.timed_out);
    }
    if (check_failed && (r.n_responses != n || (r.n_responses && !status_in(r.status[0], want)))) {
        fprintf(stderr, "  [%s] got %d responses, first %d, closed=%d; reply: %.300s\n", label,
                r.n_responses, r.n_responses ? r.status[0] : 0, r.closed, r.buf ? r.buf : "");
    }
    if (c->choice && !with_token) {
        printf("%s: %s\n", c->id, c->choice);
    }
    raw_reply_cleanup(&r);
    if (req != raw) {
        free(req);
    }
    free(raw);
}

static void test_http_raw_cases(void)
{
    for (size_t i = 0; i < sizeof hcases / sizeof hcases[0]; i++) {
        run_hcase(&hcases[i], false);
        run_hcase(&hcases[i], true);
    }
}

/* The details of a few cases beyond their status. */
static void test_http_smuggling_details(void)
{
    /* H01: the embedded "GET /admin" is never answered, and the connection is closed. */
    size_t len;
    char *raw = load_raw("cl-te-both", &len);
    struct raw_reply r;
    raw_exchange(&d, raw, len, 0, 5000, &r);
    CHECK_EQ(r.n_responses, 1);
    CHECK(r.closed);
    raw_reply_cleanup(&r);
    free(raw);

    /* H34: the pipelined second request is authenticated on its own: the first request's token
     * does not carry over (401), and it is answered exactly once. */
    raw = load_raw("pipelined-second-request-smuggle", &len);
    cursor_to_wait_s(raw, len);
    char *hdr = h_fmt("Authorization: Bearer %s", tok_all);
    char *req = raw_insert_header(raw, len, hdr, &len);
    raw_exchange(&d, req, len, 3, 1500, &r);
    CHECK_EQ(r.n_responses, 2);
    CHECK_EQ(r.status[0], 200);
    CHECK_EQ(r.status[1], 401);
    raw_reply_cleanup(&r);
    free(req);
    free(hdr);
    free(raw);

    /* H32: a final 413 instead of "100 Continue", before any body byte was sent. */
    raw = load_raw("expect-100-oversize", &len);
    raw_exchange(&d, raw, len, 0, 5000, &r);
    CHECK(strstr(r.buf, "100 Continue") == NULL);
    CHECK_EQ(r.n_responses, 1);
    CHECK_EQ(r.status[0], 413);
    raw_reply_cleanup(&r);
    free(raw);

    /* A chunked body is refused even when it is well-formed: Content-Length is required. */
    static const char chunked[] = "POST /api/v1/agents/a1/inbox/claim HTTP/1.1\r\n"
                                  "Host: localhost\r\nContent-Type: application/json\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    hdr = h_fmt("Authorization: Bearer %s", tok_all);
    req = raw_insert_header(chunked, sizeof chunked - 1, hdr, &len);
    raw_exchange(&d, req, len, 0, 5000, &r);
    CHECK_EQ(r.n_responses, 1);
    CHECK_EQ(r.status[0], 400);
    CHECK(strstr(r.buf, "\"bad_request_framing\"") != NULL);
    CHECK(r.closed);
    raw_reply_cleanup(&r);
    free(req);
    free(hdr);
}

/* ---- P: ids in paths ---- */

struct pcase {
    const char *id;
    const char *method;
    const char *path;
    int want[MAXW];
    const char *code; /* expected error code, or NULL */
};

#define EV "/api/v1/agents/a1/inbox/"

/* clang-format off */
static const struct pcase pcases[] = {
    {"P01", "GET", "/api/v1/agents/../../etc/passwd/inbox", {404}, "not_found"},
    {"P02", "GET", "/api/v1/agents/..%2f..%2fetc%2fpasswd/inbox", {400}, "invalid_agent_id"},
    {"P03", "GET", "/api/v1/agents/%252e%252e%252f/inbox", {400}, "invalid_agent_id"},
    {"P04", "GET", "/api/v1/agents/a1%00.json/inbox", {400}, "invalid_agent_id"},
    {"P05", "GET", "/api/v1/agents/%c0%af/inbox", {400}, "invalid_agent_id"},
    {"P06", "GET", "/api/v1/agents/a1\\..\\b/inbox", {400}, NULL},
    {"P07a", "GET", "/api/v1/agents/a1/./inbox", {404}, "not_found"},
    {"P07b", "GET", "/api/v1/agents/a1//inbox", {404}, "not_found"},
    {"P07c", "GET", "/api/v1//agents/a1/inbox", {404}, "not_found"},
    {"P07d", "GET", "/api/v1/agents/a1/inbox/", {404}, "not_found"},
    {"P07e", "GET", "/api/v1/agents/%61%31/inbox", {400}, "invalid_agent_id"},
    {"P08", "POST", EV "1'%20OR%20'1'='1/ack", {400}, "invalid_event_id"},
    {"P09", "POST", EV "1;DROP%20TABLE%20inbox;--/ack", {400}, "invalid_event_id"},
    {"P10", "POST", EV "1%20UNION%20SELECT%20password%20FROM%20users/ack", {400}, "invalid_event_id"},
    {"P11", "POST", EV "99999999999999999999999/ack", {400}, "invalid_event_id"},
    {"P12a", "POST", EV "-1/ack", {400}, "invalid_event_id"},
    {"P12b", "POST", EV "0/ack", {400}, "invalid_event_id"},
    {"P12c", "POST", EV "evt_81ARZ3NDEKTSV4RRFFQ69G5FAV/ack", {400}, "invalid_event_id"},
    {"P12d", "POST", EV "evt_01arz3ndektsv4rrffq69g5fav/ack", {400}, "invalid_event_id"},
    {"P15", "GET", "/api/v1/agents//inbox", {400}, "invalid_agent_id"},
    {"P16a", "GET", "/api/v1/agents/%D0%B01/inbox", {400}, "invalid_agent_id"},
    {"P16b", "GET", "/api/v1/agents/\xD0\xB0" "1/inbox", {400}, NULL},
};
/* clang-format on */

static void send_path(const char *method, const char *path, const char *token, struct raw_reply *r)
{
    static const char body[] = "{\"lease_token\":\"lt_00000000000000000000000000\"}";
    bool post = strcmp(method, "POST") == 0;
    char *auth = token ? h_fmt("Authorization: Bearer %s\r\n", token) : h_fmt("%s", "");
    char *req = post ? h_fmt("%s %s HTTP/1.1\r\nHost: localhost\r\n%sContent-Type: "
                             "application/json\r\nContent-Length: %zu\r\n\r\n%s",
                             method, path, auth, sizeof body - 1, body)
                     : h_fmt("%s %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n", method, path, auth);
    raw_exchange(&d, req, strlen(req), 1, 3000, r);
    free(req);
    free(auth);
}

static void test_http_path_cases(void)
{
    for (size_t i = 0; i < sizeof pcases / sizeof pcases[0]; i++) {
        const struct pcase *c = &pcases[i];
        struct raw_reply r;
        send_path(c->method, c->path, tok_all, &r);
        CHECK_CASE(c->id, r.n_responses == 1 && status_in(r.status[0], c->want));
        if (c->code) {
            char *needle = h_fmt("\"code\":\"%s\"", c->code);
            CHECK_CASE(c->id, strstr(r.buf, needle) != NULL);
            free(needle);
        }
        if (r.n_responses != 1 || !status_in(r.status[0], c->want)) {
            fprintf(stderr, "  [%s] %.300s\n", c->id, r.buf);
        }
        raw_reply_cleanup(&r);
        /* Without a token nothing is ever served, whatever the path looks like. */
        send_path(c->method, c->path, NULL, &r);
        CHECK_CASE(c->id, r.n_responses == 1 && r.status[0] >= 400 && r.status[0] < 500);
        raw_reply_cleanup(&r);
    }
    /* P13: agent ids are at most 128 characters. */
    char long_id[301];
    memset(long_id, 'a', 300);
    long_id[300] = '\0';
    json_t *res = NULL;
    h_expect_error(d.http, "GET", tok_all, NULL, 400, "invalid_agent_id", "/api/v1/agents/%s/inbox",
                   long_id);
    long_id[129] = '\0';
    CHECK_EQ(h_callj(d.http, "GET", tok_all, NULL, NULL, "/api/v1/agents/%s/inbox", long_id), 400);
    long_id[128] = '\0';
    CHECK_EQ(h_callj(d.http, "GET", tok_all, NULL, NULL, "/api/v1/agents/%s/inbox", long_id), 200);
    /* After the injection attempts the inbox works as before (P08–P10: nothing was run). */
    char id[31];
    CHECK_EQ(h_publish(d.http, tok_all, "a1", NULL, NULL, id), 1);
    json_t *evs = h_claim(d.http, tok_all, "a1", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    CHECK_EQ(h_ack(d.http, tok_all, "a1", id, h_str(h_at(evs, 0), "lease_token")), 200);
    json_decref(evs);
    /* Unknown routes and methods. */
    h_expect_error(d.http, "GET", tok_all, NULL, 404, "not_found", "/api/v2/agents/a1/inbox");
    h_expect_error(d.http, "DELETE", tok_all, NULL, 405, "method_not_allowed",
                   "/api/v1/agents/a1/inbox");
    res = NULL;
    CHECK_EQ(h_callj(d.http, "PUT", tok_all, json_pack("{}"), &res, "/api/v1/events"), 405);
    json_decref(res);
}

/* ---- Q: query parameters ---- */

struct qcase {
    const char *id;
    const char *query; /* after "/api/v1/agents/q.a/inbox?" */
    int want;
    const char *code;
};

/* clang-format off */
static const struct qcase qcases[] = {
    {"Q01", "limit=-1", 400, "invalid_limit"},
    {"Q02", "limit=0", 400, "invalid_limit"},
    {"Q03", "limit=1000000000", 400, "invalid_limit"}, /* refused, never clamped */
    {"Q03b", "limit=1001", 400, "invalid_limit"},
    {"Q03c", "limit=1000", 200, NULL},
    {"Q04", "limit=99999999999999999999", 400, "invalid_limit"},
    {"Q05a", "limit=abc", 400, "invalid_limit"},
    {"Q05b", "limit=1.5", 400, "invalid_limit"},
    {"Q05c", "limit=1e3", 400, "invalid_limit"},
    {"Q05d", "limit=", 400, "invalid_limit"},
    {"Q05e", "limit=%201", 400, "invalid_limit"},
    {"Q05f", "limit=%2B1", 400, "invalid_limit"},
    {"Q05g", "limit=0x10", 400, "invalid_limit"},
    {"Q06", "limit=1&limit=2", 400, "repeated_query_parameter"}, /* repeated names are refused */
    {"Q07", "after_cursor=-1", 400, "invalid_cursor"},
    {"Q08", "after_cursor=garbage", 400, "invalid_cursor"},
    {"Q08b", "after_cursor=1;2", 400, "invalid_cursor"},
    {"Q08c", "after_cursor=9223372036854775808", 400, "invalid_cursor"},
    {"Q08d", "after_cursor=0&after_cursor=0", 400, "repeated_query_parameter"},
    {"Qw1", "wait_s=31", 400, "invalid_wait_s"},
    {"Qw2", "wait_s=-1", 400, "invalid_wait_s"},
    {"Qu1", "foo=1", 400, "invalid_query"},
    {"Qu2", "after_cursor=0&is_admin=true", 400, "invalid_query"},
    {"Qn1", "limit=1%00", 400, "invalid_query"}, /* never read as limit=1 */
    {"Qn2", "after_cursor=0%00junk", 400, "invalid_query"},
    {"Qok", "after_cursor=0&limit=5&wait_s=0", 200, NULL},
};
/* clang-format on */

static void test_http_query_cases(void)
{
    for (size_t i = 0; i < sizeof qcases / sizeof qcases[0]; i++) {
        const struct qcase *c = &qcases[i];
        json_t *res = NULL;
        long st =
            h_callj(d.http, "GET", tok_all, NULL, &res, "/api/v1/agents/q.a/inbox?%s", c->query);
        CHECK_CASE(c->id, st == c->want);
        if (c->code) {
            CHECK_CASE(c->id, h_error_code(res) && strcmp(h_error_code(res), c->code) == 0);
        }
        if (st != c->want) {
            fprintf(stderr, "  [%s] status %ld\n", c->id, st);
        }
        json_decref(res);
    }
    /* Q12: a 4 KiB cursor. */
    char big[4097];
    memset(big, '7', 4096);
    big[4096] = '\0';
    json_t *res = NULL;
    h_expect_error(d.http, "GET", tok_all, NULL, 400, "invalid_cursor",
                   "/api/v1/agents/q.a/inbox?after_cursor=%s", big);
    /* Admin queries are as strict. */
    h_expect_error(d.http, "GET", tok_all, NULL, 400, "invalid_page_token",
                   "/api/v1/admin/quarantine?next=%%21%%21");
    h_expect_error(d.http, "GET", tok_all, NULL, 400, "invalid_agent_id",
                   "/api/v1/admin/quarantine?agent_id=bad%%20id");
    h_expect_error(d.http, "GET", tok_all, NULL, 400, "invalid_limit",
                   "/api/v1/admin/agents?limit=0");
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok_all, NULL, &res, "/api/v1/admin/agents?next=YQ&next=Yg"),
             400);
    json_decref(res);
}

/* ---- H35/H36: stalled clients (http.timeout_s = 2 here) ---- */

static void test_http_stalled_clients_are_closed(void)
{
    /* A header section that stops arriving, and a body that stops short of its length: both
     * connections are closed by the idle timeout, without an answer or with a 408. Covered: a
     * client that goes quiet. Not covered: one that trickles a byte before every timeout (evhttp
     * 2.1 has an inactivity timeout only, no header or body deadline). */
    static const char *const stalled[] = {
        "GET /api/v1/agents/a1/inbox HTTP/1.1\r\nHost: localhost\r\nX-Slow: a",
        "POST /api/v1/agents/a1/inbox/claim HTTP/1.1\r\nHost: localhost\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"limit\":",
    };
    for (size_t i = 0; i < sizeof stalled / sizeof stalled[0]; i++) {
        struct raw_reply r;
        int64_t t0 = h_now_ms();
        raw_exchange(&d, stalled[i], strlen(stalled[i]), 0, 8000, &r);
        CHECK_CASE(i == 0 ? "H35" : "H36", r.closed && !r.timed_out);
        CHECK_CASE(i == 0 ? "H35" : "H36", h_now_ms() - t0 >= 1500);
        CHECK_CASE(i == 0 ? "H35" : "H36", r.n_responses == 0 || r.status[0] == 408);
        raw_reply_cleanup(&r);
    }
}

/* ---- H37: many idle connections ---- */

static void test_http_many_idle_connections(void)
{
    enum { N = 1000 };
    int *fds = calloc(N, sizeof *fds);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d.port)};
    inet_pton(AF_INET, d.host, &sa.sin_addr);
    int opened = 0;
    for (int i = 0; i < N; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[i] < 0 || connect(fds[i], (struct sockaddr *)&sa, sizeof sa) != 0) {
            break;
        }
        opened++;
    }
    CHECK_EQ(opened, N);
    /* The daemon still answers others promptly. */
    struct h_client *c = h_client_new(d.url);
    struct h_response r;
    h_request(c, "GET", "/healthz", NULL, NULL, 0, NULL, &r);
    CHECK_EQ(r.status, 200);
    CHECK(r.elapsed_ms < 10000);
    h_response_cleanup(&r);
    long st;
    json_t *page = h_inbox(c, tok_all, "a1", 0, 10, &st);
    CHECK_EQ(st, 200);
    json_decref(page);
    h_client_free(c);
    for (int i = 0; i < opened; i++) {
        close(fds[i]);
    }
    free(fds);
}

int main(void)
{
    h_init();
    static const char *const sets[] = {"store.synchronous=normal", "http.timeout_s=2",
                                       "claim.max_wait_s=1", NULL};
    if (!roostd_start_checked(&d, NULL, sets)) {
        return h_summary();
    }
    tok_a1 = h_token(&d, "t1", "agent:a1:consume");
    tok_all = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    RUN(test_http_raw_cases);
    RUN(test_http_smuggling_details);
    RUN(test_http_path_cases);
    RUN(test_http_query_cases);
    RUN(test_http_stalled_clients_are_closed);
    RUN(test_http_many_idle_connections);
    /* After all of that the daemon is alive, answers, and shuts down cleanly. */
    CHECK(roostd_alive(&d));
    long st = 0;
    http_request(d.http, "GET", "/healthz", NULL, NULL, &st, NULL);
    CHECK_EQ(st, 200);
    free(tok_a1);
    free(tok_all);
    roostd_finish(&d);
    return h_summary();
}
