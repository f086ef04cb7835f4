/* SPDX-License-Identifier: MIT */
/* GET /api/v1/agents/{agent}/inbox/peek against the real roostd (SQLite, and MariaDB as
 * test_inbox_peek_mysql): it shows the event the next claim then takes (priority, then sequence),
 * skips scheduled, expired and claimed events, changes nothing (a peek twice is the same answer,
 * the claim after it counts attempt 1), answers {"event":null} when nothing is claimable, and
 * keeps the agent routes' rules: 401 without a token, 403 without the agent's read scope, 404 and
 * 405 beside the route, 400 for a query parameter, tenants apart. */
#include <stdlib.h>

#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;
static char *tok; /* tenant t1: consume, publish and read on every agent */

/* GET …/inbox/peek; returns the status, *event gets the "event" member (new reference, json
 * null when nothing is claimable) or NULL when the answer has none. */
static long peek(const char *token, const char *agent, json_t **event)
{
    json_t *res = NULL;
    long st = h_callj(d.http, "GET", token, NULL, &res, "/api/v1/agents/%s/inbox/peek", agent);
    json_t *ev = res != NULL ? json_object_get(res, "event") : NULL;
    *event = ev != NULL ? json_incref(ev) : NULL;
    json_decref(res);
    return st;
}

/* The agent's event `event_id` as the inbox read shows it (new reference), or NULL. */
static json_t *read_event(const char *agent, const char *event_id)
{
    long st;
    json_t *page = h_inbox(d.http, tok, agent, 0, 100, &st), *found = NULL;
    json_t *evs = json_object_get(page, "events");
    for (size_t i = 0; i < json_array_size(evs); i++) {
        const char *id = h_str(h_at(evs, i), "event_id");
        if (id != NULL && strcmp(id, event_id) == 0) {
            found = json_incref(h_at(evs, i));
        }
    }
    json_decref(page);
    return found;
}

/* A string member, "" when absent. */
static const char *str_or_empty(const json_t *obj, const char *key)
{
    const char *s = h_str(obj, key);
    return s != NULL ? s : "";
}

static void publish(const char *agent, int n, int priority, json_t *extra, char *id)
{
    json_t *x = extra != NULL ? extra : json_object();
    json_object_set_new(x, "priority", json_integer(priority));
    CHECK(h_publish(d.http, tok, agent, json_pack("{s:i}", "n", n), x, id) > 0);
}

static void test_peek_nothing_claimable_is_event_null(void)
{
    json_t *ev = NULL;
    CHECK_EQ(peek(tok, "pk.never", &ev), 200);
    CHECK(json_is_null(ev));
    json_decref(ev);
}

/* Peek, then claim one: the same event every time, in priority then sequence order, until the
 * inbox is empty; each peek twice gives the same answer and the claim counts attempt 1. */
static void test_peek_is_what_the_next_claim_takes(void)
{
    static const struct {
        int n, priority;
    } pubs[] = {{1, 0}, {2, 5}, {3, 5}, {4, -3}, {5, 100}, {6, 0}};
    static const int order[] = {5, 2, 3, 1, 6, 4}; /* by priority desc, then seq */
    for (size_t i = 0; i < sizeof pubs / sizeof pubs[0]; i++) {
        publish("pk.order", pubs[i].n, pubs[i].priority, NULL, NULL);
    }
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        json_t *ev = NULL, *again = NULL;
        CHECK_EQ(peek(tok, "pk.order", &ev), 200);
        CHECK(json_is_object(ev));
        CHECK_EQ(h_int(json_object_get(ev, "payload"), "n"), order[i]);
        CHECK_STREQ(h_str(ev, "status"), "pending");
        CHECK_STREQ(h_str(ev, "agent_id"), "pk.order");
        /* No lease: nothing was claimed. */
        CHECK(json_object_get(ev, "lease_token") == NULL);
        CHECK(json_object_get(ev, "claim_expires_at") == NULL);
        CHECK(json_object_get(ev, "attempts") == NULL);
        /* Nothing changed: the same answer again, and the inbox read's own object. */
        CHECK_EQ(peek(tok, "pk.order", &again), 200);
        CHECK(json_equal(ev, again));
        json_t *read = read_event("pk.order", str_or_empty(ev, "event_id"));
        CHECK(read != NULL && json_equal(ev, read));
        json_decref(read);
        json_decref(again);

        json_t *evs = h_claim(d.http, tok, "pk.order", 1, 30, NULL);
        CHECK_EQ(json_array_size(evs), 1);
        CHECK_STREQ(h_str(h_at(evs, 0), "event_id"), h_str(ev, "event_id"));
        CHECK_EQ(h_int(h_at(evs, 0), "attempts"), 1); /* peeks counted no attempt */
        json_decref(evs);
        json_decref(ev);
    }
    json_t *ev = NULL;
    CHECK_EQ(peek(tok, "pk.order", &ev), 200);
    CHECK(json_is_null(ev)); /* all claimed */
    json_decref(ev);
    json_t *evs = h_claim(d.http, tok, "pk.order", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 0);
    json_decref(evs);
}

/* A claimed, a scheduled (delay) and an expired (TTL) event rank above the one pending event:
 * peek and claim both pass over them. A released event is claimable again and peek shows it. */
static void test_peek_skips_scheduled_expired_claimed(void)
{
    char claimed[31], ttl[31], plain[31];
    publish("pk.skip", 1, 90, NULL, claimed);
    json_t *evs = h_claim(d.http, tok, "pk.skip", 1, 60, NULL);
    CHECK_STREQ(h_str(h_at(evs, 0), "event_id"), claimed);
    char lease[40];
    snprintf(lease, sizeof lease, "%s", str_or_empty(h_at(evs, 0), "lease_token"));
    json_decref(evs);
    publish("pk.skip", 2, 100, json_pack("{s:i}", "delay_s", 3600), NULL);
    publish("pk.skip", 3, 50, json_pack("{s:i}", "ttl_s", 1), ttl);
    publish("pk.skip", 4, 0, NULL, plain);

    /* Until the TTL passes, the TTL event is next. */
    bool expired = false;
    json_t *ev = NULL;
    CHECK_EQ(peek(tok, "pk.skip", &ev), 200);
    const char *first = h_str(ev, "event_id");
    CHECK(first != NULL && (strcmp(first, ttl) == 0 || strcmp(first, plain) == 0));
    json_decref(ev);
    json_t *r = NULL;
    H_WAIT_UNTIL(expired, 10000,
                 (json_decref(r), r = read_event("pk.skip", ttl),
                  r != NULL && strcmp(str_or_empty(r, "status"), "expired") == 0));
    json_decref(r);
    CHECK(expired);

    ev = NULL;
    CHECK_EQ(peek(tok, "pk.skip", &ev), 200);
    CHECK_STREQ(h_str(ev, "event_id"), plain);
    json_decref(ev);
    evs = h_claim(d.http, tok, "pk.skip", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1); /* the plain one only */
    CHECK_STREQ(h_str(h_at(evs, 0), "event_id"), plain);
    json_decref(evs);
    ev = NULL;
    CHECK_EQ(peek(tok, "pk.skip", &ev), 200);
    CHECK(json_is_null(ev));
    json_decref(ev);

    /* The first claim's event, released, is pending again: peek shows it, with attempt 1 kept
     * (the next claim makes it 2). */
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "POST", tok,
                     json_pack("{s:s,s:s}", "lease_token", lease, "reason", "shutdown"), &res,
                     "/api/v1/agents/pk.skip/inbox/%s/release", claimed),
             200);
    json_decref(res);
    ev = NULL;
    CHECK_EQ(peek(tok, "pk.skip", &ev), 200);
    CHECK_STREQ(h_str(ev, "event_id"), claimed);
    CHECK_STREQ(h_str(ev, "status"), "pending");
    json_decref(ev);
    evs = h_claim(d.http, tok, "pk.skip", 1, 30, NULL);
    CHECK_STREQ(h_str(h_at(evs, 0), "event_id"), claimed);
    CHECK_EQ(h_int(h_at(evs, 0), "attempts"), 2);
    json_decref(evs);
}

static void test_peek_auth_and_route(void)
{
    publish("pk.auth", 1, 0, NULL, NULL);
    json_t *ev = NULL, *res = NULL;
    /* 401 without a token or with a bad one. */
    CHECK_EQ(peek(NULL, "pk.auth", &ev), 401);
    json_decref(ev);
    CHECK_EQ(peek("not-a-token", "pk.auth", &ev), 401);
    json_decref(ev);
    /* The agent's read scope (or consume, which includes it) is needed. */
    char *t_read = h_token(&d, "t1", "agent:pk.auth:read");
    char *t_other = h_token(&d, "t1", "agent:pk.other:read agent:pk.other:consume");
    char *t_pub = h_token(&d, "t1", "agent:*:publish");
    char *t_consume = h_token(&d, "t1", "agent:pk.*:consume");
    CHECK_EQ(peek(t_read, "pk.auth", &ev), 200);
    CHECK_EQ(h_int(json_object_get(ev, "payload"), "n"), 1);
    json_decref(ev);
    CHECK_EQ(peek(t_consume, "pk.auth", &ev), 200);
    CHECK(json_is_object(ev));
    json_decref(ev);
    h_expect_error(d.http, "GET", t_other, NULL, 403, "forbidden",
                   "/api/v1/agents/pk.auth/inbox/peek");
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", t_pub, NULL, &res, "/api/v1/agents/pk.auth/inbox/peek"), 403);
    json_decref(res);
    /* Tenants apart: another tenant's agent of the same name has nothing. */
    char *t2 = h_token(&d, "t2", "agent:*:read");
    CHECK_EQ(peek(t2, "pk.auth", &ev), 200);
    CHECK(json_is_null(ev));
    json_decref(ev);
    /* Beside the route: 404 for a longer path, 405 for POST, 400 for a query parameter or a bad
     * agent id. */
    h_expect_error(d.http, "GET", tok, NULL, 404, "not_found",
                   "/api/v1/agents/pk.auth/inbox/peek/x");
    h_expect_error(d.http, "POST", tok, json_object(), 405, "method_not_allowed",
                   "/api/v1/agents/pk.auth/inbox/peek");
    h_expect_error(d.http, "GET", tok, NULL, 400, "invalid_query",
                   "/api/v1/agents/pk.auth/inbox/peek?limit=2");
    h_expect_error(d.http, "GET", tok, NULL, 400, "invalid_agent_id",
                   "/api/v1/agents/bad%%20agent/inbox/peek");
    /* Still unclaimed after all of it. */
    json_t *evs = h_claim(d.http, tok, "pk.auth", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    CHECK_EQ(h_int(h_at(evs, 0), "attempts"), 1);
    json_decref(evs);
    free(t_read);
    free(t_other);
    free(t_pub);
    free(t_consume);
    free(t2);
}

int main(void)
{
    h_init();
    static const char *const sets[] = {"scavenger.interval_ms=50", "store.synchronous=normal",
                                       NULL};
    if (!roostd_start_checked(&d, NULL, sets)) {
        return h_summary();
    }
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish agent:*:read");
    RUN(test_peek_nothing_claimable_is_event_null);
    RUN(test_peek_is_what_the_next_claim_takes);
    RUN(test_peek_skips_scheduled_expired_claimed);
    RUN(test_peek_auth_and_route);
    free(tok);
    roostd_finish(&d);
    return h_summary();
}
