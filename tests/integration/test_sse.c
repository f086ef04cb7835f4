/* SPDX-License-Identifier: MIT */
/* GET /api/v1/agents/{agent}/subscribe over raw sockets, with the chunked transfer encoding and
 * the SSE framing decoded here (no library in between): headers, retry:, the immediate
 * inbox_updated carrying the head as id:, Last-Event-ID, heartbeats, a data-less ping after every
 * commit that makes work claimable (publish, release, requeue, lease expiry, a delayed event
 * becoming due) and none for a rolled-back batch, coalescing for a subscriber that does not read,
 * the slow-subscriber drop, the 429 limits, authentication and scopes (header and ?access_token=),
 * tenant and agent isolation, a fan-out to many streams, SIGTERM ending every stream cleanly. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/harness.h"
#include "harness/sse_client.h"

#include "common/banned.h"

static long post(struct roostd *d, const char *tok, json_t *body, json_t **out, const char *path)
{
    return h_callj(d->http, "POST", tok, body, out, "%s", path);
}

/* ---- the main daemon: precise tests (heartbeat 1 h, so no heartbeat interleaves) ---- */

static struct roostd D;
static char *TOK; /* t1: consume, publish, admin on every agent */

static void test_sse_framing_headers_retry_and_initial_ping(void)
{
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(h_publish(D.http, TOK, "fr.a", NULL, NULL, NULL), i + 1);
    }
    struct sse s;
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/fr.a/subscribe", TOK, NULL, 0), 200);
    char v[128];
    CHECK(strncmp(s.headers, "HTTP/1.1 200 OK\r\n", 17) == 0);
    CHECK_STREQ(sse_header(&s, "Content-Type", v, sizeof v), "text/event-stream");
    CHECK_STREQ(sse_header(&s, "Cache-Control", v, sizeof v), "no-cache");
    CHECK_STREQ(sse_header(&s, "X-Accel-Buffering", v, sizeof v), "no");
    CHECK_STREQ(sse_header(&s, "Transfer-Encoding", v, sizeof v), "chunked");
    CHECK(sse_header(&s, "Content-Length", v, sizeof v) == NULL);
    CHECK(sse_header(&s, "X-Request-Id", v, sizeof v) != NULL);
    CHECK_STREQ(sse_header(&s, "Access-Control-Allow-Origin", v, sizeof v), "*");
    CHECK(s.chunked);
    /* The exact bytes: retry first, then the head at once, each its own block. */
    int64_t deadline = h_now_ms() + 5000;
    const char *want = "retry: 3000\n\nid: 3\nevent: inbox_updated\ndata: {\"cursor_hint\":3}\n\n";
    while (s.body_len < strlen(want) && h_now_ms() < deadline && !s.closed) {
        sse_fill(&s, 100);
    }
    CHECK_EQ(s.body_len, strlen(want));
    CHECK_STREQ(s.body, want);
    CHECK(!s.bad_framing && !s.ended && !s.closed);
    struct sse_ev ev;
    CHECK_EQ(sse_next(&s, &ev, 1000), 1);
    CHECK(ev.has_retry && ev.retry == 3000 && !ev.has_data && ev.event[0] == '\0');
    CHECK_EQ(sse_next(&s, &ev, 1000), 1);
    CHECK_STREQ(ev.event, "inbox_updated");
    CHECK(ev.has_id && ev.id == 3);
    CHECK(data_is_hint(&ev, 3));
    /* A publish: the new head, once. */
    CHECK_EQ(
        h_publish(D.http, TOK, "fr.a", json_pack("{s:s}", "big", "secret payload"), NULL, NULL), 4);
    CHECK(expect_ping(&s, 4, 5000));
    CHECK(strstr(s.body, "secret") == NULL); /* data-less: the payload never travels */
    CHECK_EQ(sse_next(&s, &ev, 200), 0);     /* nothing more (not a wait: a "nothing came" check) */
    sse_close(&s);

    /* An agent that never received anything: head 0, still announced at once. */
    CHECK(subscribe(&s, &D, TOK, "fr.empty", 0));
    sse_close(&s);
}

static void test_sse_last_event_id(void)
{
    for (int i = 0; i < 5; i++) {
        h_publish(D.http, TOK, "leid.a", NULL, NULL, NULL);
    }
    struct sse s;
    struct sse_ev ev;
    /* Equal to the head: nothing new, so a heartbeat (with the head), not an inbox_updated. */
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/leid.a/subscribe", TOK, "Last-Event-ID: 5\r\n", 0),
             200);
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK(ev.has_retry);
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK_STREQ(ev.event, "heartbeat");
    CHECK(!ev.has_id);
    CHECK(data_is_hint(&ev, 5));
    /* The next commit is a ping as usual. */
    h_publish(D.http, TOK, "leid.a", NULL, NULL, NULL);
    CHECK(expect_ping(&s, 6, 5000));
    sse_close(&s);

    /* Below the head: an immediate inbox_updated with the head. */
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/leid.a/subscribe", TOK, "Last-Event-ID: 2\r\n", 0),
             200);
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK(ev.has_retry);
    CHECK(expect_ping(&s, 6, 5000));
    sse_close(&s);

    /* Beyond the head (another node's id, a restored database): the head as a heartbeat; the
     * next commit still pings. */
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/leid.a/subscribe", TOK, "Last-Event-ID: 99\r\n", 0),
             200);
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK_STREQ(ev.event, "heartbeat");
    CHECK(data_is_hint(&ev, 6));
    h_publish(D.http, TOK, "leid.a", NULL, NULL, NULL);
    CHECK(expect_ping(&s, 7, 5000));
    sse_close(&s);

    /* Not a number: ignored (ids are opaque to EventSource), so the head is announced. */
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/leid.a/subscribe", TOK, "Last-Event-ID: x7\r\n", 0),
             200);
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK(expect_ping(&s, 7, 5000));
    sse_close(&s);
}

/* release, requeue, lease expiry and a delayed event becoming due each make work claimable
 * without moving the head: each must still ping (with the head), after its commit. */
static void test_sse_ping_after_every_claimable_transition(void)
{
    struct sse s;
    char id1[31];
    json_t *res = NULL;

    /* release (transient, no delay) */
    CHECK_EQ(h_publish(D.http, TOK, "tr.rel", NULL, NULL, id1), 1);
    CHECK(subscribe(&s, &D, TOK, "tr.rel", 1));
    json_t *c = h_claim(D.http, TOK, "tr.rel", 1, 60, "c1");
    CHECK_EQ(json_array_size(c), 1);
    long st = h_callj(D.http, "POST", TOK,
                      json_pack("{s:s, s:s}", "lease_token", h_str(h_at(c, 0), "lease_token"),
                                "reason", "transient"),
                      NULL, "/api/v1/agents/tr.rel/inbox/%s/release", id1);
    CHECK_EQ(st, 200);
    CHECK(expect_ping(&s, 1, 5000));
    json_decref(c);
    sse_close(&s);

    /* requeue: poison-release (quarantine: nothing claimable, so no ping), then requeue. A
     * marker publish proves the quarantine did not ping: the next ping is the marker's. */
    CHECK_EQ(h_publish(D.http, TOK, "tr.rq", NULL, NULL, id1), 1);
    CHECK(subscribe(&s, &D, TOK, "tr.rq", 1));
    c = h_claim(D.http, TOK, "tr.rq", 1, 60, "c1");
    CHECK_EQ(json_array_size(c), 1);
    st = h_callj(D.http, "POST", TOK,
                 json_pack("{s:s, s:s}", "lease_token", h_str(h_at(c, 0), "lease_token"), "reason",
                           "poison"),
                 NULL, "/api/v1/agents/tr.rq/inbox/%s/release", id1);
    CHECK_EQ(st, 200);
    json_decref(c);
    CHECK_EQ(h_publish(D.http, TOK, "tr.rq", NULL, NULL, NULL), 2);
    CHECK(expect_ping(&s, 2, 5000));
    c = h_claim(D.http, TOK, "tr.rq", 1, 60, "c1"); /* the marker: nothing else is pending */
    CHECK_EQ(json_array_size(c), 1);
    CHECK_EQ(h_int(h_at(c, 0), "sequence_number"), 2);
    CHECK_EQ(h_ack(D.http, TOK, "tr.rq", h_str(h_at(c, 0), "event_id"),
                   h_str(h_at(c, 0), "lease_token")),
             200);
    json_decref(c);
    st = h_callj(D.http, "POST", TOK, NULL, &res, "/api/v1/admin/quarantine/%s/requeue", id1);
    CHECK_EQ(st, 200);
    json_decref(res);
    CHECK(expect_ping(&s, 2, 5000));
    c = h_claim(D.http, TOK, "tr.rq", 1, 60, "c1");
    CHECK_EQ(json_array_size(c), 1);
    CHECK_STREQ(h_str(h_at(c, 0), "event_id"), id1);
    json_decref(c);
    sse_close(&s);

    /* lease expiry: the scavenger (every 50 ms) returns a 1 s lease to pending */
    CHECK_EQ(h_publish(D.http, TOK, "tr.lease", NULL, NULL, id1), 1);
    CHECK(subscribe(&s, &D, TOK, "tr.lease", 1));
    int64_t t0 = h_now_ms();
    c = h_claim(D.http, TOK, "tr.lease", 1, 1, "c1");
    CHECK_EQ(json_array_size(c), 1);
    json_decref(c);
    CHECK(expect_ping(&s, 1, 10000));
    CHECK(h_now_ms() - t0 >= 500); /* it was the expiry, not the claim */
    c = h_claim(D.http, TOK, "tr.lease", 1, 60, "c1");
    CHECK_EQ(json_array_size(c), 1);
    CHECK_EQ(h_int(h_at(c, 0), "attempts"), 2);
    json_decref(c);
    sse_close(&s);

    /* a delayed event: pinged at commit (the head moved: cursor readers see it), and again when
     * it becomes due and claimable */
    CHECK(subscribe(&s, &D, TOK, "tr.delay", 0));
    t0 = h_now_ms();
    CHECK_EQ(h_publish(D.http, TOK, "tr.delay", NULL, json_pack("{s:i}", "delay_s", 1), id1), 1);
    CHECK(expect_ping(&s, 1, 5000));
    c = h_claim(D.http, TOK, "tr.delay", 1, 60, "c1");
    CHECK_EQ(json_array_size(c), 0); /* not yet due */
    json_decref(c);
    CHECK(expect_ping(&s, 1, 10000));
    CHECK(h_now_ms() - t0 >= 500);
    c = h_claim(D.http, TOK, "tr.delay", 1, 60, "c1");
    CHECK_EQ(json_array_size(c), 1);
    json_decref(c);
    sse_close(&s);
}

/* A batch whose 3rd event is invalid rolls back as a whole: no row, no ping. Had it pinged, the
 * ping would carry head 2; the next ping must be the valid publish's head 1, then 2. */
static void test_sse_rejected_batch_pings_nobody(void)
{
    struct sse s, other;
    CHECK(subscribe(&s, &D, TOK, "rb.a", 0));
    CHECK(subscribe(&other, &D, TOK, "rb.b", 0));
    json_t *res = NULL;
    long st = post(&D, TOK,
                   json_pack("{s:[{s:[s], s:{}}, {s:[s,s], s:{}}, {s:[s], s:{}, s:i}]}", "events",
                             "recipients", "rb.a", "payload", "recipients", "rb.a", "rb.b",
                             "payload", "recipients", "rb.a", "payload", "priority", 1000),
                   &res, "/api/v1/events");
    CHECK_EQ(st, 400);
    json_decref(res);
    long ist;
    json_t *inbox = h_inbox(D.http, TOK, "rb.a", 0, 10, &ist);
    CHECK_EQ(json_array_size(json_object_get(inbox, "events")), 0);
    json_decref(inbox);
    CHECK_EQ(h_publish(D.http, TOK, "rb.a", NULL, NULL, NULL), 1);
    CHECK_EQ(h_publish(D.http, TOK, "rb.b", NULL, NULL, NULL), 1);
    struct sse_ev ev;
    /* The very next event on each stream (no heartbeat can interleave at 30 s). */
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK(strcmp(ev.event, "inbox_updated") == 0 && ev.id == 1 && data_is_hint(&ev, 1));
    CHECK_EQ(sse_next(&other, &ev, 5000), 1);
    CHECK(strcmp(ev.event, "inbox_updated") == 0 && ev.id == 1 && data_is_hint(&ev, 1));
    CHECK_EQ(h_publish(D.http, TOK, "rb.a", NULL, NULL, NULL), 2);
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK(strcmp(ev.event, "inbox_updated") == 0 && ev.id == 2 && data_is_hint(&ev, 2));

    /* A batch rejected inside the store (a recipient this token may not publish to) too. */
    char *narrow = h_token(&D, "t1", "agent:rb.a:publish");
    st = post(&D, narrow,
              json_pack("{s:[{s:[s], s:{}}, {s:[s], s:{}}]}", "events", "recipients", "rb.a",
                        "payload", "recipients", "rb.b", "payload"),
              &res, "/api/v1/events");
    CHECK(st == 403 || st == 400);
    json_decref(res);
    free(narrow);
    CHECK_EQ(h_publish(D.http, TOK, "rb.a", NULL, NULL, NULL), 3);
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK(strcmp(ev.event, "inbox_updated") == 0 && ev.id == 3 && data_is_hint(&ev, 3));
    sse_close(&s);
    sse_close(&other);
}

/* A subscriber that does not read while 500 commits happen holds one pending head: when it
 * reads again it gets a few events (what fit in the socket buffers, then the newest head), the
 * last carrying the final head — not 500. */
static void test_sse_coalescing(void)
{
    struct sse s;
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/co.a/subscribe", TOK, NULL, 2048), 200);
    enum { N = 500 };
    for (int i = 1; i <= N; i++) {
        if (h_publish(D.http, TOK, "co.a", NULL, NULL, NULL) != i) {
            CHECK(!"publish");
            break;
        }
    }
    int n_pings = 0;
    int64_t last = -1;
    struct sse_ev ev;
    int64_t deadline = h_now_ms() + 15000;
    while (last != N && h_now_ms() < deadline) {
        int r = sse_next(&s, &ev, (int)(deadline - h_now_ms()));
        if (r != 1) {
            break;
        }
        if (strcmp(ev.event, "inbox_updated") == 0) {
            CHECK(ev.id > last); /* increasing, never a stale head after a newer one */
            n_pings++;
            last = ev.id;
            CHECK(data_is_hint(&ev, ev.id));
        }
    }
    CHECK_EQ(last, N);
    printf("coalescing: %d pings for %d commits (%zu bytes)\n", n_pings, N, s.n_bytes);
    CHECK(n_pings < N / 4);
    CHECK_EQ(sse_next(&s, &ev, 300), 0); /* nothing after the final head */
    sse_close(&s);
}

static void test_sse_auth_and_scopes(void)
{
    struct sse s;
    char v[64];
    /* No token, a bad token: 401 with a Bearer challenge. */
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/au.a/subscribe", NULL, NULL, 0), 401);
    CHECK(sse_header(&s, "WWW-Authenticate", v, sizeof v) != NULL);
    sse_close(&s);
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/au.a/subscribe", "not.a.jwt", NULL, 0), 401);
    sse_close(&s);
    /* A token whose signature does not verify. */
    char *tampered = h_fmt("%sx", TOK);
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/au.a/subscribe", tampered, NULL, 0), 401);
    sse_close(&s);
    /* Scopes: read (or consume) of that agent; publish-only or another agent's read is 403. */
    char *pub = h_token(&D, "t1", "agent:*:publish");
    char *other = h_token(&D, "t1", "agent:au.b:read agent:au.a.*:read");
    char *read = h_token(&D, "t1", "agent:au.a:read");
    char *prefix = h_token(&D, "t1", "agent:au.*:read");
    char *consume = h_token(&D, "t1", "agent:au.a:consume");
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/au.a/subscribe", pub, NULL, 0), 403);
    sse_close(&s);
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/au.a/subscribe", other, NULL, 0), 403);
    sse_close(&s);
    CHECK(subscribe(&s, &D, read, "au.a", 0));
    sse_close(&s);
    CHECK(subscribe(&s, &D, prefix, "au.a", 0));
    sse_close(&s);
    CHECK(subscribe(&s, &D, consume, "au.a", 0));
    sse_close(&s);
    /* ?access_token= (EventSource cannot send headers): works, and only a valid one. */
    char *path = h_fmt("/api/v1/agents/au.a/subscribe?access_token=%s", read);
    CHECK_EQ(sse_open(&s, &D, path, NULL, NULL, 0), 200);
    struct sse_ev ev;
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK(expect_ping(&s, 0, 5000));
    h_publish(D.http, TOK, "au.a", NULL, NULL, NULL);
    CHECK(expect_ping(&s, 1, 5000));
    sse_close(&s);
    free(path);
    path = h_fmt("/api/v1/agents/au.a/subscribe?access_token=%sx", read);
    CHECK_EQ(sse_open(&s, &D, path, NULL, NULL, 0), 401);
    sse_close(&s);
    free(path);
    path = h_fmt("/api/v1/agents/au.a/subscribe?access_token=%s", pub);
    CHECK_EQ(sse_open(&s, &D, path, NULL, NULL, 0), 403);
    sse_close(&s);
    free(path);
    /* Only subscribe takes a query token. */
    path = h_fmt("/api/v1/agents/au.a/state?access_token=%s", read);
    CHECK_EQ(sse_open(&s, &D, path, NULL, NULL, 0), 401);
    sse_close(&s);
    free(path);
    /* Unknown query parameters are refused, not ignored. */
    CHECK_EQ(sse_open(&s, &D, "/api/v1/agents/au.a/subscribe?after=3", read, NULL, 0), 400);
    sse_close(&s);
    /* The query token never reaches the log. */
    CHECK(roostd_log_count(&D, read) == 0);
    free(pub);
    free(other);
    free(read);
    free(prefix);
    free(consume);
    free(tampered);
}

/* A publish to tenant A's agent x pings A's subscribers of x only: not B's subscriber of x,
 * not A's subscriber of y. Heads differ so a stray ping would show. */
static void test_sse_isolation(void)
{
    char *a_tok = h_token(&D, "iso-a", "agent:*:consume agent:*:publish");
    char *b_tok = h_token(&D, "iso-b", "agent:*:consume agent:*:publish");
    for (int i = 0; i < 5; i++) {
        h_publish(D.http, a_tok, "x", NULL, NULL, NULL);
    }
    struct sse ax, ax2, ay, bx;
    CHECK(subscribe(&ax, &D, a_tok, "x", 5));
    CHECK(subscribe(&ax2, &D, a_tok, "x", 5));
    CHECK(subscribe(&ay, &D, a_tok, "y", 0));
    CHECK(subscribe(&bx, &D, b_tok, "x", 0));
    CHECK_EQ(h_publish(D.http, a_tok, "x", NULL, NULL, NULL), 6);
    CHECK(expect_ping(&ax, 6, 5000));
    CHECK(expect_ping(&ax2, 6, 5000));
    /* Markers on the others: their next event must be their own head 1, not 6. */
    CHECK_EQ(h_publish(D.http, b_tok, "x", NULL, NULL, NULL), 1);
    CHECK_EQ(h_publish(D.http, a_tok, "y", NULL, NULL, NULL), 1);
    struct sse_ev ev;
    CHECK_EQ(sse_next(&bx, &ev, 5000), 1);
    CHECK(ev.id == 1 && data_is_hint(&ev, 1));
    CHECK_EQ(sse_next(&ay, &ev, 5000), 1);
    CHECK(ev.id == 1 && data_is_hint(&ev, 1));
    /* And B's and y's publishes did not reach A's x. */
    CHECK_EQ(h_publish(D.http, a_tok, "x", NULL, NULL, NULL), 7);
    CHECK_EQ(sse_next(&ax, &ev, 5000), 1);
    CHECK(ev.id == 7 && data_is_hint(&ev, 7));
    sse_close(&ax);
    sse_close(&ax2);
    sse_close(&ay);
    sse_close(&bx);
    free(a_tok);
    free(b_tok);
}

/* Many streams on one agent all receive a fan-out publish. */
static void test_sse_many_streams(void)
{
    enum { N = 300 };
    struct sse *s = calloc(N, sizeof *s);
    int opened = 0;
    for (int i = 0; i < N; i++) {
        if (!subscribe(&s[i], &D, TOK, "many.a", 0)) {
            break;
        }
        opened++;
    }
    CHECK_EQ(opened, N);
    CHECK_EQ(h_publish(D.http, TOK, "many.a", NULL, NULL, NULL), 1);
    int got = 0;
    for (int i = 0; i < opened; i++) {
        got += expect_ping(&s[i], 1, 10000);
    }
    CHECK_EQ(got, N);
    for (int i = 0; i < opened; i++) {
        sse_close(&s[i]);
    }
    free(s);
}

/* ---- limits: per agent, per tenant, global → 429 + Retry-After; closing frees at once ---- */

static bool limited(struct roostd *d, const char *tok, const char *agent, const char *what)
{
    struct sse s;
    char *path = h_fmt("/api/v1/agents/%s/subscribe", agent);
    int st = sse_open(&s, d, path, tok, NULL, 0);
    char v[32];
    json_t *j = s.body ? json_loads(s.body, 0, NULL) : NULL;
    bool ok = st == 429 && sse_header(&s, "Retry-After", v, sizeof v) != NULL &&
              strtol(v, NULL, 10) >= 1 && h_error_code(j) != NULL &&
              strstr(json_string_value(json_object_get(json_object_get(j, "error"), "message")),
                     what) != NULL;
    if (!ok) {
        fprintf(stderr, "  expected 429 (%s) for %s, got %d %s\n", what, agent, st,
                s.body ? s.body : "");
    }
    json_decref(j);
    free(path);
    sse_close(&s);
    return ok;
}

static void test_sse_limits(void)
{
    static const char *const sets[] = {"sse.max_per_agent=2", "sse.max_per_tenant=3",
                                       "sse.max_total=5", NULL};
    struct roostd d;
    if (!roostd_start_checked(&d, NULL, sets)) {
        return;
    }
    char *t1 = h_token(&d, "t1", "agent:*:read");
    char *t2 = h_token(&d, "t2", "agent:*:read");
    char *t3 = h_token(&d, "t3", "agent:*:read");
    struct sse a1, a2, b, c, t2a, t2b;
    CHECK(subscribe(&a1, &d, t1, "a", 0));
    CHECK(subscribe(&a2, &d, t1, "a", 0));
    CHECK(limited(&d, t1, "a", "max_per_agent"));
    CHECK(subscribe(&b, &d, t1, "b", 0));
    CHECK(limited(&d, t1, "c", "max_per_tenant"));
    CHECK(subscribe(&t2a, &d, t2, "a", 0)); /* another tenant's "a": its own count */
    CHECK(subscribe(&t2b, &d, t2, "b", 0)); /* 5 open: the node is full */
    CHECK(limited(&d, t3, "z", "max_total"));
    /* A client that goes away is noticed at once (no write needed): its slot frees. */
    sse_close(&a1);
    bool ok;
    H_WAIT_UNTIL(ok, 5000, roostd_log_count(&d, "stream closed") >= 1);
    CHECK(ok);
    CHECK(subscribe(&a1, &d, t1, "a", 0));
    sse_close(&t2a);
    H_WAIT_UNTIL(ok, 5000, roostd_log_count(&d, "stream closed") >= 2);
    CHECK(ok);
    CHECK(subscribe(&c, &d, t3, "z", 0));
    /* Connections that close before their stream starts never count. */
    for (int i = 0; i < 50; i++) {
        struct sse x;
        if (sse_connect(&x, &d, "/api/v1/agents/a/subscribe", t1, NULL, 0) == 0) {
            sse_close(&x);
        }
    }
    sse_close(&a1);
    sse_close(&a2);
    sse_close(&b);
    sse_close(&c);
    sse_close(&t2b);
    /* Every slot frees again (polled: the closes are noticed asynchronously): 5 streams. */
    struct sse all[5];
    for (int i = 0; i < 5; i++) {
        const char *tok = i < 2 ? t1 : i < 4 ? t2 : t3;
        int64_t deadline = h_now_ms() + 5000;
        while (!(ok = subscribe(&all[i], &d, tok, i % 2 ? "p" : "q", 0)) && h_now_ms() < deadline) {
            sse_close(&all[i]);
            h_sleep_ms(10);
        }
        CHECK(ok);
    }
    for (int i = 0; i < 5; i++) {
        sse_close(&all[i]);
    }
    CHECK(ok);
    roostd_finish(&d);
    free(t1);
    free(t2);
    free(t3);
}

/* ---- heartbeats (sse.heartbeat_s=1) and the slow-subscriber drop ---- */

static void test_sse_heartbeat(void)
{
    static const char *const sets[] = {"sse.heartbeat_s=1", NULL};
    struct roostd d;
    if (!roostd_start_checked(&d, NULL, sets)) {
        return;
    }
    char *tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    h_publish(d.http, tok, "hb.a", NULL, NULL, NULL);
    struct sse s;
    CHECK(subscribe(&s, &d, tok, "hb.a", 1));
    struct sse_ev ev;
    int64_t t0 = h_now_ms();
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK_STREQ(ev.event, "heartbeat");
    CHECK(!ev.has_id && data_is_hint(&ev, 1));
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK_STREQ(ev.event, "heartbeat");
    CHECK(data_is_hint(&ev, 1));
    int64_t two = h_now_ms() - t0;
    CHECK(two >= 500 && two < 5000); /* two heartbeats: about 1 s apart, not a burst */
    /* The head moves: ping, then heartbeats carry the new head. */
    h_publish(d.http, tok, "hb.a", NULL, NULL, NULL);
    CHECK(expect_ping(&s, 2, 5000));
    CHECK_EQ(sse_next(&s, &ev, 5000), 1);
    CHECK_STREQ(ev.event, "heartbeat");
    CHECK(data_is_hint(&ev, 2));
    /* The idle timeout (http.timeout_s) never ends a heartbeating stream. */
    CHECK(!s.closed && !s.ended);
    sse_close(&s);
    free(tok);
    roostd_finish(&d);
}

/* A subscriber that never reads: once its receive window is full and a little is unsent, its
 * writes stall and newer pings coalesce (the server keeps one event for it, never a backlog);
 * stuck for sse.stall_timeout_s, it is dropped (log line; the client, reading at last, finds the
 * data, then the server's close, without the terminating chunk of a clean end). A reading
 * subscriber of the same agent is unaffected. */
static void test_sse_slow_subscriber_dropped(void)
{
    static const char *const sets[] = {"sse.heartbeat_s=1", "sse.stall_timeout_s=2", NULL};
    struct roostd d;
    if (!roostd_start_checked(&d, NULL, sets)) {
        return;
    }
    char *tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    struct sse slow, good;
    CHECK_EQ(sse_open(&slow, &d, "/api/v1/agents/slow.a/subscribe", tok, NULL, 2048), 200);
    CHECK(subscribe(&good, &d, tok, "slow.a", 0));
    /* At least 300 commits (~18 KB of pings: far more than the slow reader's window), paced by
     * the good reader so each one really is written to both rather than coalesced away, and on
     * until the drop: how soon the window fills depends on the host's load, not on this test. */
    enum { N_MIN = 300 };
    int64_t head = 0, deadline = h_now_ms() + 60000;
    bool dropped = false, paced = true;
    while ((head < N_MIN || !dropped) && h_now_ms() < deadline) {
        head = h_publish(d.http, tok, "slow.a", NULL, NULL, NULL);
        paced = paced && head > 0 && wait_ping(&good, head, 5000);
        dropped =
            dropped || (head % 10 == 0 && roostd_log_count(&d, "sse subscriber dropped") >= 1);
    }
    const int64_t N = head;
    CHECK(paced);
    CHECK(N >= N_MIN);
    CHECK(dropped);
    CHECK(roostd_log_count(&d, "reason=stalled") >= 1);
    /* The slow client reads at last: what was sent, then the server's close. */
    struct sse_ev ev;
    int r, n_pings = 0;
    int64_t last = -1;
    int n_read = 0; /* bounded: a stream that was never dropped would go on with heartbeats */
    while (n_read++ < 10000 && (r = sse_next(&slow, &ev, 10000)) == 1) {
        if (strcmp(ev.event, "inbox_updated") == 0) {
            n_pings++;
            last = ev.id;
        }
    }
    printf("slow subscriber: %d pings received of %lld commits before the drop\n", n_pings,
           (long long)N);
    CHECK_EQ(r, -1);
    CHECK(slow.closed);
    CHECK(!slow.ended); /* dropped, not ended cleanly */
    CHECK(!slow.bad_framing);
    CHECK(last <= head);
    CHECK(n_pings < N / 4);
    sse_close(&slow);
    /* The reader kept up and still does. */
    CHECK_EQ(h_publish(d.http, tok, "slow.a", NULL, NULL, NULL), N + 1);
    CHECK(expect_ping(&good, N + 1, 5000));
    CHECK(!good.closed);
    sse_close(&good);
    free(tok);
    roostd_finish(&d);
}

/* ---- shutdown ---- */

static void test_sse_sigterm_ends_streams(void)
{
    struct roostd d;
    if (!roostd_start_checked(&d, NULL, NULL)) {
        return;
    }
    char *tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    enum { N = 5 };
    struct sse s[N];
    for (int i = 0; i < N; i++) {
        CHECK(subscribe(&s[i], &d, tok, i % 2 ? "bye.a" : "bye.b", 0));
    }
    int64_t t0 = h_now_ms();
    CHECK_EQ(roostd_stop(&d), 0);
    CHECK(h_now_ms() - t0 < 5000); /* streams do not hold the shutdown */
    for (int i = 0; i < N; i++) {
        struct sse_ev ev;
        CHECK_EQ(sse_next(&s[i], &ev, 5000), -1);
        CHECK(s[i].ended); /* the terminating chunk */
        CHECK(!s[i].bad_framing);
        int64_t deadline = h_now_ms() + 5000;
        while (!s[i].closed && h_now_ms() < deadline) {
            sse_fill(&s[i], 100);
        }
        CHECK(s[i].closed); /* then EOF */
        CHECK_EQ(s[i].raw_len, 0);
        sse_close(&s[i]);
    }
    CHECK(roostd_log_count(&d, "stream closed") >= N);
    free(tok);
    roostd_remove_dir(&d);
}

int main(void)
{
    h_init();
    /* No heartbeat can interleave with the "very next event" checks. */
    static const char *const sets[] = {"scavenger.interval_ms=50", "sse.max_per_agent=1000",
                                       "sse.heartbeat_s=3600", NULL};
    if (!roostd_start_checked(&D, NULL, sets)) {
        return h_summary();
    }
    TOK = h_token(&D, "t1", "agent:*:consume agent:*:publish tenant:admin");
    RUN(test_sse_framing_headers_retry_and_initial_ping);
    RUN(test_sse_last_event_id);
    RUN(test_sse_ping_after_every_claimable_transition);
    RUN(test_sse_rejected_batch_pings_nobody);
    RUN(test_sse_coalescing);
    RUN(test_sse_auth_and_scopes);
    RUN(test_sse_isolation);
    RUN(test_sse_many_streams);
    free(TOK);
    roostd_finish(&D);
    RUN(test_sse_limits);
    RUN(test_sse_heartbeat);
    RUN(test_sse_slow_subscriber_dropped);
    RUN(test_sse_sigterm_ends_streams);
    return h_summary();
}
