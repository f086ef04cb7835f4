/* SPDX-License-Identifier: MIT */
/* CORS through the real roostd (http.cors_origins): the header matrix a browser sees for a
 * listed origin, an unlisted one and none, on preflights, API answers (errors included), the
 * static files and both kinds of SSE stream (?ticket= and ?access_token=); a SIGHUP changes the
 * list; and without a list nothing changes (OPTIONS is 405, the stream keeps "*"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "harness/harness.h"
#include "harness/sse_client.h"

#include "common/banned.h"

#define APP "http://app.test:5173"
#define EVIL "http://evil.test:5173"

static struct roostd D;
static char *TOK; /* t1: agent:c.*:read, publish, consume */

/* One request over a raw socket (Connection: close): the whole answer in *r. */
static void exchange(struct roostd *d, const char *method, const char *path, const char *headers,
                     struct raw_reply *r)
{
    char *req = h_fmt("%s %s HTTP/1.1\r\nHost: %s:%d\r\n%sConnection: close\r\n\r\n", method, path,
                      d->host, d->port, headers ? headers : "");
    CHECK_EQ(raw_exchange(d, req, strlen(req), 0, 10000, r), 0);
    free(req);
}

/* The header block of an answer (up to the blank line), for matching. */
static int count_header(const char *buf, const char *name)
{
    int n = 0;
    size_t len = strlen(name);
    /* A raw answer ends its head with a blank line; sse.headers is the head alone. */
    const char *end = buf ? strstr(buf, "\r\n\r\n") : NULL;
    if (buf && !end) {
        end = buf + strlen(buf);
    }
    for (const char *p = buf; p && end && (p = strstr(p, "\r\n")) != NULL && p < end; p += 2) {
        if (strncasecmp(p + 2, name, len) == 0 && p[2 + len] == ':') {
            n++;
        }
    }
    return n;
}

/* The value of a header (first match) in a raw answer, copied to buf, or NULL. */
static const char *header_value(const char *buf, const char *name, char *out, size_t outlen)
{
    size_t len = strlen(name);
    const char *end = buf ? strstr(buf, "\r\n\r\n") : NULL;
    for (const char *p = buf; p && end && (p = strstr(p, "\r\n")) != NULL && p < end; p += 2) {
        if (strncasecmp(p + 2, name, len) == 0 && p[2 + len] == ':') {
            const char *v = p + 3 + len;
            while (*v == ' ') {
                v++;
            }
            const char *e = strstr(v, "\r\n");
            size_t n = (size_t)(e - v) < outlen - 1 ? (size_t)(e - v) : outlen - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return out;
        }
    }
    return NULL;
}

static void test_cors_preflight_listed(void)
{
    /* What Chromium sends before a publish with a signature, and before a ticket request. */
    static const char *const paths[] = {"/api/v1/events", "/api/v1/agents/c.a/subscribe/ticket",
                                        "/api/v1/agents/c.a/inbox/claim",
                                        "/api/v1/agents/c.a/callbacks/ep_x", NULL};
    for (size_t i = 0; paths[i] != NULL; i++) {
        struct raw_reply r;
        exchange(&D, "OPTIONS", paths[i],
                 "Origin: " APP "\r\nAccess-Control-Request-Method: POST\r\n"
                 "Access-Control-Request-Headers: authorization,content-type,idempotency-key,"
                 "signature,signature-input,content-digest\r\n",
                 &r);
        char v[512];
        CHECK_CASE(paths[i], r.n_responses == 1 && r.status[0] == 204);
        CHECK_CASE(paths[i], header_value(r.buf, "Access-Control-Allow-Origin", v, sizeof v) &&
                                 strcmp(v, APP) == 0);
        CHECK_CASE(paths[i], count_header(r.buf, "Access-Control-Allow-Origin") == 1);
        CHECK_CASE(paths[i], header_value(r.buf, "Vary", v, sizeof v) && strcmp(v, "Origin") == 0);
        CHECK_CASE(paths[i], header_value(r.buf, "Access-Control-Allow-Methods", v, sizeof v) &&
                                 strstr(v, "POST") && strstr(v, "GET") && strstr(v, "DELETE"));
        const char *ah = header_value(r.buf, "Access-Control-Allow-Headers", v, sizeof v);
        CHECK_CASE(paths[i], ah && strstr(ah, "Authorization") && strstr(ah, "Content-Type") &&
                                 strstr(ah, "Signature") && strstr(ah, "Signature-Input") &&
                                 strstr(ah, "Content-Digest") && strstr(ah, "Idempotency-Key") &&
                                 strstr(ah, "Last-Event-ID"));
        CHECK_CASE(paths[i], header_value(r.buf, "Access-Control-Max-Age", v, sizeof v) &&
                                 strtol(v, NULL, 10) > 0);
        CHECK_CASE(paths[i], count_header(r.buf, "Access-Control-Allow-Credentials") == 0);
        CHECK_CASE(paths[i],
                   count_header(r.buf, "Content-Length") == 0 ||
                       (header_value(r.buf, "Content-Length", v, sizeof v) && strcmp(v, "0") == 0));
        raw_reply_cleanup(&r);
    }
}

static void test_cors_preflight_unlisted(void)
{
    static const char *const origins[] = {EVIL, "http://app.test", "https://app.test:5173", "null",
                                          NULL};
    for (size_t i = 0; origins[i] != NULL; i++) {
        struct raw_reply r;
        char *h = h_fmt("Origin: %s\r\nAccess-Control-Request-Method: POST\r\n"
                        "Access-Control-Request-Headers: authorization\r\n",
                        origins[i]);
        exchange(&D, "OPTIONS", "/api/v1/events", h, &r);
        free(h);
        /* Routed as any OPTIONS: 405 (with Allow), no CORS header but Vary. */
        CHECK_CASE(origins[i], r.n_responses == 1 && r.status[0] == 405);
        CHECK_CASE(origins[i], count_header(r.buf, "Access-Control-Allow-Origin") == 0);
        CHECK_CASE(origins[i], count_header(r.buf, "Access-Control-Allow-Methods") == 0);
        CHECK_CASE(origins[i], count_header(r.buf, "Access-Control-Allow-Headers") == 0);
        CHECK_CASE(origins[i], count_header(r.buf, "Vary") == 1);
        raw_reply_cleanup(&r);
    }
}

/* Answers to listed origins carry the origin and the exposed headers; others only Vary. */
static void test_cors_answers(void)
{
    char *auth = h_fmt("Authorization: Bearer %s\r\n", TOK);
    struct {
        const char *label, *method, *path, *origin;
        bool with_token;
        int status;
        bool allowed;
    } cases[] = {
        {"inbox listed", "GET", "/api/v1/agents/c.a/inbox?after_cursor=0&limit=1", APP, true, 200,
         true},
        {"inbox unlisted", "GET", "/api/v1/agents/c.a/inbox?after_cursor=0&limit=1", EVIL, true,
         200, false},
        {"inbox no origin", "GET", "/api/v1/agents/c.a/inbox?after_cursor=0&limit=1", NULL, true,
         200, false},
        {"401 listed", "GET", "/api/v1/agents/c.a/inbox?after_cursor=0&limit=1", APP, false, 401,
         true},
        {"403 listed", "GET", "/api/v1/agents/other/inbox?after_cursor=0&limit=1", APP, true, 403,
         true},
        {"404 listed", "GET", "/api/v1/nothing", APP, true, 404, true},
        {"roost.js listed", "GET", "/sdk/roost.js", APP, false, 200, true},
        {"healthz listed", "GET", "/healthz", APP, false, 200, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *h =
            h_fmt("%s%s%s%s", cases[i].with_token ? auth : "", cases[i].origin ? "Origin: " : "",
                  cases[i].origin ? cases[i].origin : "", cases[i].origin ? "\r\n" : "");
        struct raw_reply r;
        exchange(&D, cases[i].method, cases[i].path, h, &r);
        free(h);
        char v[256];
        const char *l = cases[i].label;
        CHECK_CASE(l, r.n_responses == 1 && r.status[0] == cases[i].status);
        CHECK_CASE(l, count_header(r.buf, "Vary") >= 1);
        if (cases[i].allowed) {
            CHECK_CASE(l, count_header(r.buf, "Access-Control-Allow-Origin") == 1);
            CHECK_CASE(l, header_value(r.buf, "Access-Control-Allow-Origin", v, sizeof v) &&
                              strcmp(v, APP) == 0);
            CHECK_CASE(l, header_value(r.buf, "Access-Control-Expose-Headers", v, sizeof v) &&
                              strstr(v, "Retry-After") && strstr(v, "X-Request-Id"));
        } else {
            CHECK_CASE(l, count_header(r.buf, "Access-Control-Allow-Origin") == 0);
            CHECK_CASE(l, count_header(r.buf, "Access-Control-Expose-Headers") == 0);
        }
        if (check_failed) {
            fprintf(stderr, "  [%s] %.600s\n", l, r.buf ? r.buf : "");
        }
        raw_reply_cleanup(&r);
    }
    free(auth);
    /* roost.js is public code: any other origin may import it ("*"), never both values. */
    struct raw_reply r;
    exchange(&D, "GET", "/sdk/roost.js", "Origin: " EVIL "\r\n", &r);
    char v[64];
    CHECK(r.n_responses == 1 && r.status[0] == 200);
    CHECK_EQ(count_header(r.buf, "Access-Control-Allow-Origin"), 1);
    CHECK(header_value(r.buf, "Access-Control-Allow-Origin", v, sizeof v) && strcmp(v, "*") == 0);
    raw_reply_cleanup(&r);
}

/* Both stream credentials work cross-origin, with exactly one Allow-Origin (never "*" beside
 * it); an unlisted origin's stream opens (EventSource sends no preflight) but the browser may not
 * read it: no Allow-Origin. */
static void test_cors_streams(void)
{
    json_t *out = NULL;
    long st = h_callj(D.http, "POST", TOK, NULL, &out, "/api/v1/agents/c.a/subscribe/ticket");
    CHECK_EQ(st, 201);
    const char *ticket = h_str(out, "ticket");
    char *paths[3];
    paths[0] = h_fmt("/api/v1/agents/c.a/subscribe?ticket=%s", ticket ? ticket : "x");
    paths[1] = h_fmt("/api/v1/agents/c.a/subscribe?access_token=%s", TOK);
    paths[2] = h_fmt("/api/v1/agents/c.a/subscribe?access_token=%s", TOK);
    const char *origins[3] = {APP, APP, EVIL};
    for (int i = 0; i < 3; i++) {
        struct sse s;
        char *extra = h_fmt("Origin: %s\r\n", origins[i]);
        CHECK_EQ(sse_open(&s, &D, paths[i], NULL, extra, 0), 200);
        free(extra);
        char v[256];
        if (i < 2) { /* APP */
            CHECK(sse_header(&s, "Access-Control-Allow-Origin", v, sizeof v) &&
                  strcmp(v, APP) == 0);
            CHECK_EQ(count_header(s.headers, "Access-Control-Allow-Origin"), 1);
        } else {
            CHECK_EQ(count_header(s.headers, "Access-Control-Allow-Origin"), 0);
        }
        struct sse_ev ev;
        int skipped = 0;
        CHECK_EQ(sse_next_named(&s, "inbox_updated", &ev, 5000, &skipped), 1);
        sse_close(&s);
        free(paths[i]);
    }
    json_decref(out);
}

/* SIGHUP: the list is reloadable. A bad value is refused and the old list stays. */
static void test_cors_reload(struct roostd *d, const char *conf)
{
    FILE *fp = fopen(conf, "w");
    CHECK(fp != NULL);
    if (!fp) {
        return;
    }
    fprintf(fp, "http.cors_origins = " EVIL "\n");
    fclose(fp);
    CHECK(roostd_hup_and_wait(d, "config reloaded"));
    struct raw_reply r;
    exchange(d, "OPTIONS", "/api/v1/events",
             "Origin: " EVIL "\r\nAccess-Control-Request-Method: POST\r\n", &r);
    CHECK(r.n_responses == 1 && r.status[0] == 204);
    raw_reply_cleanup(&r);
    exchange(d, "OPTIONS", "/api/v1/events",
             "Origin: " APP "\r\nAccess-Control-Request-Method: POST\r\n", &r);
    CHECK(r.n_responses == 1 && r.status[0] == 405);
    raw_reply_cleanup(&r);
}

/* No list (the default): OPTIONS is 405 as before, no Vary, the stream answers "*". */
static void test_cors_off(void)
{
    struct roostd d;
    static const char *const sets[] = {NULL};
    if (!roostd_start_checked(&d, NULL, sets)) {
        return;
    }
    struct raw_reply r;
    exchange(&d, "OPTIONS", "/api/v1/events",
             "Origin: " APP "\r\nAccess-Control-Request-Method: POST\r\n", &r);
    CHECK(r.n_responses == 1 && r.status[0] == 405);
    CHECK_EQ(count_header(r.buf, "Access-Control-Allow-Origin"), 0);
    CHECK_EQ(count_header(r.buf, "Vary"), 0);
    raw_reply_cleanup(&r);
    char *tok = h_token(&d, "t1", "agent:c.*:read");
    char *path = h_fmt("/api/v1/agents/c.a/subscribe?access_token=%s", tok);
    struct sse s;
    CHECK_EQ(sse_open(&s, &d, path, NULL, "Origin: " APP "\r\n", 0), 200);
    char v[64];
    CHECK(sse_header(&s, "Access-Control-Allow-Origin", v, sizeof v) && strcmp(v, "*") == 0);
    sse_close(&s);
    free(path);
    free(tok);
    roostd_finish(&d);
}

/* A malformed list keeps roostd from starting, naming the key. */
static void test_cors_bad_value(void)
{
    struct roostd d;
    static const char *const sets[] = {"http.cors_origins=https://app.example/", NULL};
    CHECK(roostd_start(&d, NULL, sets) != 0);
}

int main(void)
{
    h_init();
    char *dir = h_fmt("%s", "/tmp/roost-cors-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    char *conf = h_fmt("%s/roostd.conf", dir);
    FILE *fp = fopen(conf, "w");
    CHECK(fp != NULL);
    if (fp) {
        fprintf(fp, "http.cors_origins = " APP ", http://localhost:5173\n");
        fclose(fp);
    }
    char *conf_opt = h_fmt("--config=%s", conf);
    const char *sets[] = {conf_opt, NULL};
    if (!roostd_start_checked(&D, NULL, sets)) {
        return h_summary();
    }
    TOK = h_token(&D, "t1", "agent:c.*:read agent:c.*:publish agent:c.*:consume");
    RUN(test_cors_preflight_listed);
    RUN(test_cors_preflight_unlisted);
    RUN(test_cors_answers);
    RUN(test_cors_streams);
    test_cors_reload(&D, conf);
    free(TOK);
    roostd_finish(&D);
    RUN(test_cors_off);
    RUN(test_cors_bad_value);
    unlink(conf);
    rmdir(dir);
    free(conf);
    free(conf_opt);
    free(dir);
    return h_summary();
}
