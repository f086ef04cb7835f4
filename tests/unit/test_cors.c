/* SPDX-License-Identifier: MIT */
/* Unit tests of src/server/cors.c: which http.cors_origins values are accepted, which Origin
 * headers match, and the headers cors_apply() adds for each kind of request. */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "harness/check.h"
#include "server/cors.h"

#include "common/banned.h"

static void test_cors_validate(void)
{
    static const char *const good[] = {"",
                                       "http://localhost:5173",
                                       "https://app.example",
                                       " https://a.example , http://b.test:80",
                                       "http://127.0.0.1:8080",
                                       "http://[::1]:3000",
                                       "HTTPS://App.Example",
                                       NULL};
    static const char *const bad[] = {"*",
                                      "app.example",
                                      "https://app.example/",
                                      "https://app.example/path",
                                      "ftp://app.example",
                                      "https://",
                                      "https://*.example",
                                      "http://localhost:",
                                      "http://localhost:51x",
                                      "https://a.example,null",
                                      "http://[::1",
                                      "http://user@host",
                                      NULL};
    char err[256];
    for (size_t i = 0; good[i] != NULL; i++) {
        CHECK_CASE(good[i], cors_validate(good[i], err, sizeof err) == 0);
    }
    for (size_t i = 0; bad[i] != NULL; i++) {
        err[0] = '\0';
        CHECK_CASE(bad[i], cors_validate(bad[i], err, sizeof err) == -1);
        CHECK_CASE(bad[i], strstr(err, "http.cors_origins") != NULL);
    }
}

static void test_cors_origin_listed(void)
{
    const char *list = "https://app.example, http://localhost:5173";
    CHECK(cors_origin_listed(list, "https://app.example"));
    CHECK(cors_origin_listed(list, "http://localhost:5173"));
    CHECK(cors_origin_listed(list, "HTTPS://APP.EXAMPLE"));
    CHECK(!cors_origin_listed(list, "http://app.example"));       /* another scheme */
    CHECK(!cors_origin_listed(list, "https://app.example:443"));  /* not as serialized */
    CHECK(!cors_origin_listed(list, "https://app.example.evil")); /* no prefix match */
    CHECK(!cors_origin_listed(list, "https://app.exampl"));
    CHECK(!cors_origin_listed(list, "http://localhost:51730"));
    CHECK(!cors_origin_listed(list, "null"));
    CHECK(!cors_origin_listed(list, ""));
    CHECK(!cors_origin_listed(list, NULL));
    CHECK(!cors_origin_listed("", "https://app.example"));
}

static int count(const struct evkeyvalq *h, const char *name)
{
    int n = 0;
    for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next) {
        n += strcasecmp(kv->key, name) == 0;
    }
    return n;
}

static void test_cors_apply(void)
{
    const char *list = "https://app.example";
    struct evkeyvalq in, out;
    TAILQ_INIT(&in);
    TAILQ_INIT(&out);

    /* No list: nothing at all, a preflight included. */
    evhttp_add_header(&in, "Origin", "https://app.example");
    evhttp_add_header(&in, "Access-Control-Request-Method", "POST");
    CHECK(!cors_apply("", EVHTTP_REQ_OPTIONS, &in, &out));
    CHECK(out.tqh_first == NULL);

    /* A listed preflight. */
    CHECK(cors_apply(list, EVHTTP_REQ_OPTIONS, &in, &out));
    CHECK_STREQ(evhttp_find_header(&out, "Access-Control-Allow-Origin"), "https://app.example");
    CHECK_STREQ(evhttp_find_header(&out, "Vary"), "Origin");
    CHECK_STREQ(evhttp_find_header(&out, "Access-Control-Allow-Methods"), "GET, POST, DELETE");
    const char *ah = evhttp_find_header(&out, "Access-Control-Allow-Headers");
    CHECK(ah != NULL && strstr(ah, "Authorization") && strstr(ah, "Content-Type") &&
          strstr(ah, "Signature-Input") && strstr(ah, "Content-Digest") &&
          strstr(ah, "Idempotency-Key") && strstr(ah, "Last-Event-ID"));
    CHECK_STREQ(evhttp_find_header(&out, "Access-Control-Max-Age"), "600");
    evhttp_clear_headers(&out);

    /* OPTIONS without Access-Control-Request-Method is no preflight. */
    evhttp_remove_header(&in, "Access-Control-Request-Method");
    CHECK(!cors_apply(list, EVHTTP_REQ_OPTIONS, &in, &out));
    evhttp_clear_headers(&out);

    /* A listed simple request: the origin, the exposed headers, no preflight headers. */
    CHECK(!cors_apply(list, EVHTTP_REQ_GET, &in, &out));
    CHECK_STREQ(evhttp_find_header(&out, "Access-Control-Allow-Origin"), "https://app.example");
    const char *eh = evhttp_find_header(&out, "Access-Control-Expose-Headers");
    CHECK(eh != NULL && strstr(eh, "Retry-After") && strstr(eh, "X-Request-Id"));
    CHECK(evhttp_find_header(&out, "Access-Control-Allow-Methods") == NULL);
    CHECK(evhttp_find_header(&out, "Access-Control-Allow-Credentials") == NULL);
    CHECK_EQ(count(&out, "Access-Control-Allow-Origin"), 1);
    evhttp_clear_headers(&out);

    /* An unlisted origin, or none: only Vary. */
    evhttp_clear_headers(&in);
    evhttp_add_header(&in, "Origin", "https://evil.example");
    evhttp_add_header(&in, "Access-Control-Request-Method", "POST");
    CHECK(!cors_apply(list, EVHTTP_REQ_OPTIONS, &in, &out));
    CHECK_EQ(count(&out, "Vary"), 1);
    CHECK(evhttp_find_header(&out, "Access-Control-Allow-Origin") == NULL);
    CHECK(evhttp_find_header(&out, "Access-Control-Allow-Methods") == NULL);
    evhttp_clear_headers(&out);
    evhttp_clear_headers(&in);
    CHECK(!cors_apply(list, EVHTTP_REQ_GET, &in, &out));
    CHECK_EQ(count(&out, "Vary"), 1);
    CHECK_EQ(count(&out, "Access-Control-Allow-Origin"), 0);
    evhttp_clear_headers(&out);
}

int main(void)
{
    RUN(test_cors_validate);
    RUN(test_cors_origin_listed);
    RUN(test_cors_apply);
    return check_summary();
}
