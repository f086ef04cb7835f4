/* SPDX-License-Identifier: MIT */
/* The files compiled into roostd (api_static.c): /sdk/roost.js and the /ui dashboard are served
 * without a token, with their content type, a strong ETag (If-None-Match → 304 without a body),
 * X-Roost-Version, nosniff; roost.js for any origin, the dashboard under a self-only CSP. HEAD
 * answers without a body; unknown files are 404, other methods 405. */
#include <stdlib.h>

#include "harness/harness.h"

#include "common/banned.h"

static struct roostd D;

static void test_static_roost_js(void)
{
    struct h_response r;
    char etag[128], v[256];
    CHECK(h_request(D.http, "GET", "/sdk/roost.js", NULL, NULL, 0, NULL, &r) == 0);
    CHECK_EQ(r.status, 200);
    CHECK_STREQ(h_header(&r, "Content-Type", v, sizeof v), "text/javascript; charset=utf-8");
    CHECK_STREQ(h_header(&r, "Cache-Control", v, sizeof v), "no-cache");
    CHECK_STREQ(h_header(&r, "X-Content-Type-Options", v, sizeof v), "nosniff");
    CHECK_STREQ(h_header(&r, "Access-Control-Allow-Origin", v, sizeof v), "*");
    CHECK_STREQ(h_header(&r, "X-Roost-Version", v, sizeof v), ROOST_VERSION);
    CHECK(h_header(&r, "ETag", etag, sizeof etag) != NULL && etag[0] == '"');
    char *want = h_fmt("export const VERSION = '%s';", ROOST_VERSION);
    CHECK(r.body && strstr(r.body, want) != NULL);
    CHECK(r.body && strstr(r.body, "export default Roost;") != NULL);
    free(want);
    h_response_cleanup(&r);

    /* Revalidation: the same ETag is 304 without a body; a list naming it too; another is 200. */
    char *lists[] = {h_fmt("If-None-Match: %s", etag), h_fmt("If-None-Match: \"x\", W/%s", etag)};
    for (size_t i = 0; i < 2; i++) {
        char *hdr = lists[i];
        struct h_req_opts o = {.extra_header = hdr};
        CHECK(h_request(D.http, "GET", "/sdk/roost.js", NULL, NULL, 0, &o, &r) == 0);
        CHECK_EQ(r.status, 304);
        CHECK_EQ(r.body_len, 0);
        CHECK_STREQ(h_header(&r, "ETag", v, sizeof v), etag);
        h_response_cleanup(&r);
        free(hdr);
    }
    struct h_req_opts other = {.extra_header = "If-None-Match: \"0123\""};
    CHECK(h_request(D.http, "GET", "/sdk/roost.js", NULL, NULL, 0, &other, &r) == 0);
    CHECK_EQ(r.status, 200);
    CHECK(r.body_len > 1000);
    h_response_cleanup(&r);

    /* HEAD: the headers, no body (read until roostd closes). */
    static const char head[] =
        "HEAD /sdk/roost.js HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    struct raw_reply rr;
    CHECK_EQ(raw_exchange(&D, head, sizeof head - 1, 0, 5000, &rr), 0);
    CHECK(rr.closed && !rr.timed_out);
    CHECK(rr.buf && strncmp(rr.buf, "HTTP/1.1 200 ", 13) == 0);
    const char *end = rr.buf ? strstr(rr.buf, "\r\n\r\n") : NULL;
    CHECK(end != NULL && end[4] == '\0'); /* nothing after the head */
    raw_reply_cleanup(&rr);
}

static void test_static_dashboard(void)
{
    struct h_response r;
    char v[512];
    const char *paths[] = {"/ui", "/ui/", "/ui/index.html"};
    for (size_t i = 0; i < 3; i++) {
        CHECK(h_request(D.http, "GET", paths[i], NULL, NULL, 0, NULL, &r) == 0);
        CHECK_EQ(r.status, 200);
        CHECK_STREQ(h_header(&r, "Content-Type", v, sizeof v), "text/html; charset=utf-8");
        CHECK(h_header(&r, "Content-Security-Policy", v, sizeof v) != NULL &&
              strstr(v, "script-src 'self'") && strstr(v, "frame-ancestors 'none'"));
        CHECK(h_header(&r, "Access-Control-Allow-Origin", v, sizeof v) == NULL);
        CHECK(r.body && strstr(r.body, "<script type=\"module\" src=\"/ui/app.js\">") != NULL);
        h_response_cleanup(&r);
    }
    CHECK(h_request(D.http, "GET", "/ui/app.js", NULL, NULL, 0, NULL, &r) == 0);
    CHECK_EQ(r.status, 200);
    CHECK(r.body && strstr(r.body, "import Roost from '/sdk/roost.js';") != NULL);
    h_response_cleanup(&r);
    CHECK(h_request(D.http, "GET", "/ui/style.css", NULL, NULL, 0, NULL, &r) == 0);
    CHECK_EQ(r.status, 200);
    CHECK_STREQ(h_header(&r, "Content-Type", v, sizeof v), "text/css; charset=utf-8");
    h_response_cleanup(&r);
}

static void test_static_refusals(void)
{
    const char *missing[] = {"/sdk/", "/sdk/nope.js", "/ui/nope", "/ui/app.js/x", "/uix", "/sdk"};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        json_t *out = NULL;
        long st = h_callj(D.http, "GET", NULL, NULL, &out, "%s", missing[i]);
        CHECK_EQ(st, 404);
        if (st != 404) {
            fprintf(stderr, "  %s answered %ld\n", missing[i], st);
        }
        json_decref(out);
    }
    json_t *out = NULL;
    CHECK_EQ(h_callj(D.http, "POST", NULL, json_object(), &out, "/ui"), 405);
    CHECK_STREQ(h_error_code(out), "method_not_allowed");
    json_decref(out);
}

int main(void)
{
    h_init();
    if (!roostd_start_checked(&D, NULL, NULL)) {
        return h_summary();
    }
    RUN(test_static_roost_js);
    RUN(test_static_dashboard);
    RUN(test_static_refusals);
    roostd_finish(&D);
    return h_summary();
}
