/* SPDX-License-Identifier: MIT */
/* The API's happy paths against the real roostd: publish (single, batch, fan-out, idempotency),
 * cursor reads, claim / ack / batch ack / release / extend / release-all, state with JSON Merge
 * Patch, the admin views, delays, TTLs, priorities and long polls. One daemon for the file; each
 * test uses its own agent ids. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;
static char *tok; /* tenant t1: consume, publish and admin on every agent */

#define ZERO_TOKEN "lt_00000000000000000000000000"
#define UNKNOWN_EVENT "evt_01ARZ3NDEKTSV4RRFFQ69G5FAV"

static void test_api_healthz(void)
{
    struct h_response r;
    CHECK(h_request(d.http, "GET", "/healthz", NULL, NULL, 0, NULL, &r) == 0);
    CHECK_EQ(r.status, 200);
    char rid[64];
    CHECK(h_header(&r, "X-Request-Id", rid, sizeof rid) != NULL);
    h_response_cleanup(&r);
    CHECK(h_request(d.http, "GET", "/readyz", NULL, NULL, 0, NULL, &r) == 0);
    CHECK_EQ(r.status, 200);
    h_response_cleanup(&r);
}

static void test_api_publish_single(void)
{
    json_t *res = NULL;
    long st = h_callj(d.http, "POST", tok,
                      json_pack("{s:[s], s:{s:i}, s:s}", "recipients", "basic.single", "payload",
                                "n", 1, "correlation_id", "corr-1"),
                      &res, "/api/v1/events");
    CHECK_EQ(st, 201);
    json_t *evs = json_object_get(res, "events");
    CHECK_EQ(json_array_size(evs), 1);
    const char *id = h_str(h_at(evs, 0), "event_id");
    CHECK(id && strlen(id) == 30 && strncmp(id, "evt_", 4) == 0);
    CHECK_STREQ(h_str(h_at(evs, 0), "agent_id"), "basic.single");
    CHECK_EQ(h_int(h_at(evs, 0), "sequence_number"), 1);
    CHECK(json_object_get(h_at(evs, 0), "duplicate") == NULL);
    json_decref(res);
    CHECK_EQ(h_publish(d.http, tok, "basic.single", json_pack("{s:i}", "n", 2), NULL, NULL), 2);

    long s2;
    json_t *page = h_inbox(d.http, tok, "basic.single", 0, 10, &s2);
    CHECK_EQ(s2, 200);
    json_t *e0 = h_at(json_object_get(page, "events"), 0);
    CHECK_EQ(h_int(json_object_get(e0, "payload"), "n"), 1);
    CHECK_STREQ(h_str(e0, "correlation_id"), "corr-1");
    CHECK_STREQ(h_str(e0, "status"), "pending");
    CHECK_EQ(h_int(e0, "priority"), 0);
    CHECK(h_str(e0, "created_at") != NULL);
    CHECK(h_str(e0, "available_at") != NULL);
    CHECK(json_is_null(json_object_get(e0, "expires_at")));
    json_decref(page);
}

static void test_api_publish_batch(void)
{
    json_t *res = NULL;
    json_t *batch =
        json_pack("{s:[{s:[s],s:{s:i}},{s:[s],s:{s:i}},{s:[s],s:{s:i}}]}", "events", "recipients",
                  "basic.batch", "payload", "i", 0, "recipients", "basic.batch", "payload", "i", 1,
                  "recipients", "basic.batch", "payload", "i", 2);
    long st = h_callj(d.http, "POST", tok, batch, &res, "/api/v1/events");
    CHECK_EQ(st, 201);
    json_t *evs = json_object_get(res, "events");
    CHECK_EQ(json_array_size(evs), 3);
    for (size_t i = 0; i < 3; i++) {
        CHECK_EQ(h_int(h_at(evs, i), "sequence_number"), (json_int_t)i + 1);
    }
    CHECK(strcmp(h_str(h_at(evs, 0), "event_id"), h_str(h_at(evs, 1), "event_id")) != 0);
    json_decref(res);
}

/* Two items whose recipients interleave (b, a then a, c): the rows are written in agent order,
 * not request order, and each row keeps the event id and payload its answer names. */
static void test_api_publish_items_interleaved(void)
{
    json_t *res = NULL;
    json_t *body =
        json_pack("{s:[{s:[s,s],s:{s:i}},{s:[s,s],s:{s:i}}]}", "events", "recipients", "mix.b",
                  "mix.a", "payload", "i", 0, "recipients", "mix.a", "mix.c", "payload", "i", 1);
    CHECK_EQ(h_callj(d.http, "POST", tok, body, &res, "/api/v1/events"), 201);
    json_t *evs = json_object_get(res, "events");
    CHECK_EQ(json_array_size(evs), 4);
    for (size_t k = 0; k < json_array_size(evs); k++) {
        json_t *e = h_at(evs, k);
        long st = 0;
        json_t *page = h_inbox(d.http, tok, h_str(e, "agent_id"), 0, 10, &st);
        CHECK_EQ(st, 200);
        json_t *row =
            h_at(json_object_get(page, "events"), (size_t)h_int(e, "sequence_number") - 1);
        CHECK_STREQ(h_str(row, "event_id"), h_str(e, "event_id"));
        CHECK_EQ(h_int(json_object_get(row, "payload"), "i"), (json_int_t)(k / 2));
        json_decref(page);
    }
    json_decref(res);
}

static void test_api_publish_fanout(void)
{
    json_t *res = NULL;
    long st =
        h_callj(d.http, "POST", tok,
                json_pack("{s:[s,s,s], s:{}}", "recipients", "fan.a", "fan.b", "fan.c", "payload"),
                &res, "/api/v1/events");
    CHECK_EQ(st, 201);
    json_t *evs = json_object_get(res, "events");
    CHECK_EQ(json_array_size(evs), 3);
    CHECK_STREQ(h_str(h_at(evs, 0), "agent_id"), "fan.a");
    CHECK_STREQ(h_str(h_at(evs, 1), "agent_id"), "fan.b");
    CHECK_STREQ(h_str(h_at(evs, 2), "agent_id"), "fan.c");
    for (size_t i = 0; i < 3; i++) {
        CHECK_EQ(h_int(h_at(evs, i), "sequence_number"), 1); /* per-agent sequences */
    }
    CHECK(strcmp(h_str(h_at(evs, 0), "event_id"), h_str(h_at(evs, 2), "event_id")) != 0);
    json_decref(res);
    CHECK_EQ(h_publish(d.http, tok, "fan.b", NULL, NULL, NULL), 2);
    CHECK_EQ(h_publish(d.http, tok, "fan.a", NULL, NULL, NULL), 2);
}

static void test_api_idempotency_key_repeat(void)
{
    char id1[31], id2[31];
    json_t *res = NULL;
    CHECK_EQ(
        h_publish(d.http, tok, "idem.a", NULL, json_pack("{s:s}", "idempotency_key", "k-1"), id1),
        1);
    long st = h_callj(d.http, "POST", tok,
                      json_pack("{s:[s], s:{s:i}, s:s}", "recipients", "idem.a", "payload", "x", 9,
                                "idempotency_key", "k-1"),
                      &res, "/api/v1/events");
    CHECK_EQ(st, 200);
    json_t *e0 = h_at(json_object_get(res, "events"), 0);
    snprintf(id2, sizeof id2, "%s", h_str(e0, "event_id") ? h_str(e0, "event_id") : "");
    CHECK_STREQ(id1, id2);
    CHECK(json_is_true(json_object_get(e0, "duplicate")));
    CHECK_EQ(h_int(e0, "sequence_number"), 1);
    json_decref(res);
    /* The key is per agent: another agent gets its own event. */
    CHECK_EQ(
        h_publish(d.http, tok, "idem.b", NULL, json_pack("{s:s}", "idempotency_key", "k-1"), NULL),
        1);
    long s2;
    json_t *page = h_inbox(d.http, tok, "idem.a", 0, 10, &s2);
    CHECK_EQ(json_array_size(json_object_get(page, "events")), 1);
    CHECK_EQ(h_int(page, "head"), 1);
    json_decref(page);
}

static void test_api_cursor_paging(void)
{
    char ids[5][31];
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(h_publish(d.http, tok, "page.a", json_pack("{s:i}", "i", i), NULL, ids[i]), i + 1);
    }
    int64_t cursor = 0;
    int seen = 0;
    for (int round = 0; round < 3; round++) {
        long st;
        json_t *page = h_inbox(d.http, tok, "page.a", cursor, 2, &st);
        CHECK_EQ(st, 200);
        json_t *evs = json_object_get(page, "events");
        size_t n = json_array_size(evs);
        CHECK_EQ(n, round < 2 ? 2 : 1);
        for (size_t i = 0; i < n; i++) {
            CHECK_EQ(h_int(h_at(evs, i), "sequence_number"), seen + 1);
            CHECK_STREQ(h_str(h_at(evs, i), "event_id"), ids[seen]);
            seen++;
        }
        CHECK_EQ(h_int(page, "next_cursor"), seen);
        CHECK(json_is_boolean(json_object_get(page, "has_more")));
        CHECK_EQ(json_is_true(json_object_get(page, "has_more")), round < 2);
        CHECK_EQ(h_int(page, "head"), 5);
        cursor = h_int(page, "next_cursor");
        json_decref(page);
    }
    long st;
    json_t *page = h_inbox(d.http, tok, "page.a", 5, 10, &st);
    CHECK_EQ(st, 200);
    CHECK_EQ(json_array_size(json_object_get(page, "events")), 0);
    CHECK_EQ(h_int(page, "next_cursor"), 5);
    CHECK(json_is_false(json_object_get(page, "has_more")));
    json_decref(page);
    /* A cursor beyond the head never came from next_cursor: 400 naming the head. */
    page = h_inbox(d.http, tok, "page.a", 99, 10, &st);
    CHECK_EQ(st, 400);
    CHECK_STREQ(h_error_code(page), "invalid_cursor");
    CHECK_EQ(h_int(json_object_get(page, "error"), "head"), 5);
    json_decref(page);
}

static void test_api_claim_ack(void)
{
    char id[31];
    CHECK_EQ(h_publish(d.http, tok, "claim.a", json_pack("{s:s}", "job", "x"), NULL, id), 1);
    json_t *evs = h_claim(d.http, tok, "claim.a", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    json_t *e = h_at(evs, 0);
    CHECK_STREQ(h_str(e, "event_id"), id);
    const char *lt = h_str(e, "lease_token");
    CHECK(lt && strlen(lt) == 29 && strncmp(lt, "lt_", 3) == 0);
    CHECK_EQ(h_int(e, "attempts"), 1);
    CHECK(h_str(e, "claim_expires_at") != NULL);
    CHECK_STREQ(h_str(json_object_get(e, "payload"), "job"), "x");
    char lease[40];
    snprintf(lease, sizeof lease, "%s", lt ? lt : "");
    json_decref(evs);

    /* Claimed: nothing more to claim. */
    evs = h_claim(d.http, tok, "claim.a", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 0);
    json_decref(evs);

    json_t *res = NULL;
    long st = h_callj(d.http, "POST", tok, json_pack("{s:s}", "lease_token", lease), &res,
                      "/api/v1/agents/claim.a/inbox/%s/ack", id);
    CHECK_EQ(st, 200);
    CHECK_STREQ(h_str(res, "status"), "completed");
    json_decref(res);
    /* A repeated ack with the last token is 200 (an SDK retrying after a lost answer). */
    CHECK_EQ(h_ack(d.http, tok, "claim.a", id, lease), 200);
    /* Another token is a lease mismatch, and an unknown event is 404. */
    h_expect_error(d.http, "POST", tok, json_pack("{s:s}", "lease_token", ZERO_TOKEN), 409,
                   "lease_mismatch", "/api/v1/agents/claim.a/inbox/%s/ack", id);
    h_expect_error(d.http, "POST", tok, json_pack("{s:s}", "lease_token", lease), 404,
                   "event_not_found", "/api/v1/agents/claim.a/inbox/%s/ack", UNKNOWN_EVENT);

    long s2;
    json_t *page = h_inbox(d.http, tok, "claim.a", 0, 10, &s2);
    json_t *e0 = h_at(json_object_get(page, "events"), 0);
    CHECK_STREQ(h_str(e0, "status"), "completed");
    CHECK(json_is_null(json_object_get(e0, "payload"))); /* payload nulled on completion */
    json_decref(page);
    evs = h_claim(d.http, tok, "claim.a", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 0);
    json_decref(evs);
}

static void test_api_batch_ack_per_item(void)
{
    for (int i = 0; i < 3; i++) {
        h_publish(d.http, tok, "back.a", json_pack("{s:i}", "i", i), NULL, NULL);
    }
    json_t *evs = h_claim(d.http, tok, "back.a", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 3);
    json_t *acks = json_array();
    for (size_t i = 0; i < 3; i++) {
        json_array_append_new(acks,
                              json_pack("{s:s, s:s}", "event_id", h_str(h_at(evs, i), "event_id"),
                                        "lease_token",
                                        i == 1 ? ZERO_TOKEN : h_str(h_at(evs, i), "lease_token")));
    }
    json_array_append_new(
        acks, json_pack("{s:s, s:s}", "event_id", UNKNOWN_EVENT, "lease_token", ZERO_TOKEN));
    json_t *res = NULL;
    long st = h_callj(d.http, "POST", tok, json_pack("{s:o}", "acks", acks), &res,
                      "/api/v1/agents/back.a/inbox/ack");
    CHECK_EQ(st, 200);
    json_t *results = json_object_get(res, "results");
    CHECK_EQ(json_array_size(results), 4);
    CHECK_STREQ(h_str(h_at(results, 0), "status"), "completed");
    CHECK_STREQ(h_str(h_at(results, 0), "event_id"), h_str(h_at(evs, 0), "event_id"));
    CHECK_STREQ(h_error_code(h_at(results, 1)), "lease_mismatch");
    CHECK_STREQ(h_str(h_at(results, 2), "status"), "completed");
    CHECK_STREQ(h_error_code(h_at(results, 3)), "event_not_found");
    json_decref(res);
    /* The mismatched one is still claimed with its real lease and can be acked with it. */
    CHECK_EQ(h_ack(d.http, tok, "back.a", h_str(h_at(evs, 1), "event_id"),
                   h_str(h_at(evs, 1), "lease_token")),
             200);
    /* Repeating the whole batch with the right tokens is all-completed (idempotent acks). */
    acks = json_array();
    for (size_t i = 0; i < 3; i++) {
        json_array_append_new(acks,
                              json_pack("{s:s, s:s}", "event_id", h_str(h_at(evs, i), "event_id"),
                                        "lease_token", h_str(h_at(evs, i), "lease_token")));
    }
    res = NULL;
    CHECK_EQ(h_callj(d.http, "POST", tok, json_pack("{s:o}", "acks", acks), &res,
                     "/api/v1/agents/back.a/inbox/ack"),
             200);
    for (size_t i = 0; i < 3; i++) {
        CHECK_STREQ(h_str(h_at(json_object_get(res, "results"), i), "status"), "completed");
    }
    json_decref(res);
    json_decref(evs);
}

static long release(const char *agent, const char *id, const char *lease, json_t *extra,
                    json_t **out)
{
    json_t *body = json_pack("{s:s}", "lease_token", lease);
    if (extra) {
        json_object_update(body, extra);
        json_decref(extra);
    }
    return h_callj(d.http, "POST", tok, body, out, "/api/v1/agents/%s/inbox/%s/release", agent, id);
}

static void test_api_release_transient_and_shutdown(void)
{
    char id[31];
    h_publish(d.http, tok, "rel.a", NULL, NULL, id);
    json_t *evs = h_claim(d.http, tok, "rel.a", 1, 30, NULL);
    CHECK_EQ(h_int(h_at(evs, 0), "attempts"), 1);
    json_t *res = NULL;
    CHECK_EQ(release("rel.a", id, h_str(h_at(evs, 0), "lease_token"),
                     json_pack("{s:s, s:s}", "reason", "transient", "error", "boom"), &res),
             200);
    CHECK_STREQ(h_str(res, "status"), "released");
    json_decref(res);
    /* Its old token is dead now. */
    CHECK_EQ(h_ack(d.http, tok, "rel.a", id, h_str(h_at(evs, 0), "lease_token")), 409);
    json_decref(evs);
    evs = h_claim(d.http, tok, "rel.a", 1, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    CHECK_STREQ(h_str(h_at(evs, 0), "event_id"), id);
    CHECK_EQ(h_int(h_at(evs, 0), "attempts"), 2);
    CHECK_EQ(release("rel.a", id, h_str(h_at(evs, 0), "lease_token"),
                     json_pack("{s:s}", "reason", "shutdown"), NULL),
             200);
    json_decref(evs);
    evs = h_claim(d.http, tok, "rel.a", 1, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    /* A wrong token changes nothing (fencing), a bad reason is 400. */
    res = NULL;
    CHECK_EQ(release("rel.a", id, ZERO_TOKEN, NULL, &res), 409);
    CHECK_STREQ(h_error_code(res), "lease_mismatch");
    json_decref(res);
    res = NULL;
    CHECK_EQ(release("rel.a", id, h_str(h_at(evs, 0), "lease_token"),
                     json_pack("{s:s}", "reason", "whatever"), &res),
             400);
    CHECK_STREQ(h_error_code(res), "invalid_reason");
    json_decref(res);
    CHECK_EQ(h_ack(d.http, tok, "rel.a", id, h_str(h_at(evs, 0), "lease_token")), 200);
    json_decref(evs);
}

/* An event held back (a delay, available_at): nothing of `agent` to claim now, then `id` alone
 * within timeout_ms, and not before min_ms after t0 (0: no lower bound checked). */
static void check_claimable_later(const char *agent, const char *id, int64_t t0, int64_t min_ms,
                                  int timeout_ms)
{
    json_t *evs = h_claim(d.http, tok, agent, 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 0);
    json_decref(evs);
    bool ok;
    json_t *got = NULL;
    H_WAIT_UNTIL(ok, timeout_ms,
                 (json_decref(got), got = h_claim(d.http, tok, agent, 10, 30, NULL),
                  json_array_size(got) == 1));
    CHECK(ok);
    if (min_ms > 0) {
        CHECK(h_now_ms() - t0 >= min_ms);
    }
    CHECK_STREQ(h_str(h_at(got, 0), "event_id"), id);
    json_decref(got);
}

static void test_api_release_delay_not_claimable_until_due(void)
{
    char id[31];
    h_publish(d.http, tok, "rel.delay", NULL, NULL, id);
    json_t *evs = h_claim(d.http, tok, "rel.delay", 1, 30, NULL);
    int64_t t0 = h_now_ms();
    CHECK_EQ(release("rel.delay", id, h_str(h_at(evs, 0), "lease_token"),
                     json_pack("{s:i}", "delay_s", 1), NULL),
             200);
    json_decref(evs);
    check_claimable_later("rel.delay", id, t0, 900, 5000);
}

static void test_api_release_poison_quarantine_requeue(void)
{
    char id[31];
    h_publish(d.http, tok, "rel.poison", json_pack("{s:s}", "p", "bad"), NULL, id);
    json_t *evs = h_claim(d.http, tok, "rel.poison", 1, 30, NULL);
    CHECK_EQ(release("rel.poison", id, h_str(h_at(evs, 0), "lease_token"),
                     json_pack("{s:s, s:s}", "reason", "poison", "error", "cannot parse"), NULL),
             200);
    json_decref(evs);
    evs = h_claim(d.http, tok, "rel.poison", 1, 30, NULL);
    CHECK_EQ(json_array_size(evs), 0);
    json_decref(evs);

    json_t *res = NULL;
    CHECK_EQ(
        h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/quarantine?agent_id=rel.poison"),
        200);
    json_t *q = json_object_get(res, "events");
    CHECK_EQ(json_array_size(q), 1);
    CHECK_STREQ(h_str(h_at(q, 0), "event_id"), id);
    CHECK_STREQ(h_str(h_at(q, 0), "status"), "quarantined");
    CHECK_STREQ(h_str(h_at(q, 0), "last_error"), "cannot parse");
    CHECK(json_object_get(h_at(q, 0), "nacks") != NULL);
    CHECK(json_object_get(h_at(q, 0), "timeouts") != NULL);
    CHECK(json_object_get(res, "next") != NULL);
    json_decref(res);

    res = NULL;
    CHECK_EQ(h_callj(d.http, "POST", tok, NULL, &res, "/api/v1/admin/quarantine/%s/requeue", id),
             200);
    CHECK_STREQ(h_str(res, "status"), "pending");
    json_decref(res);
    /* Requeueing again: it is no longer quarantined. */
    res = NULL;
    CHECK_EQ(h_callj(d.http, "POST", tok, NULL, &res, "/api/v1/admin/quarantine/%s/requeue", id),
             409);
    json_decref(res);
    evs = h_claim(d.http, tok, "rel.poison", 1, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    CHECK_STREQ(h_str(h_at(evs, 0), "event_id"), id);
    CHECK_EQ(h_int(h_at(evs, 0), "attempts"), 1);
    CHECK_STREQ(h_str(json_object_get(h_at(evs, 0), "payload"), "p"), "bad");
    json_decref(evs);
    h_expect_error(d.http, "POST", tok, NULL, 404, "event_not_found",
                   "/api/v1/admin/quarantine/%s/requeue", UNKNOWN_EVENT);
}

static void test_api_extend(void)
{
    char id[31];
    h_publish(d.http, tok, "ext.a", NULL, NULL, id);
    json_t *evs = h_claim(d.http, tok, "ext.a", 1, 10, NULL);
    const char *lt = h_str(h_at(evs, 0), "lease_token");
    const char *before = h_str(h_at(evs, 0), "claim_expires_at");
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "POST", tok,
                     json_pack("{s:s, s:i}", "lease_token", lt, "lease_s", 600), &res,
                     "/api/v1/agents/ext.a/inbox/%s/extend", id),
             200);
    const char *after = h_str(res, "claim_expires_at");
    /* RFC 3339 UTC with milliseconds: equal lengths compare in time order. */
    CHECK(before && after && strlen(before) == strlen(after) && strcmp(after, before) > 0);
    json_decref(res);
    h_expect_error(d.http, "POST", tok,
                   json_pack("{s:s, s:i}", "lease_token", ZERO_TOKEN, "lease_s", 600), 409,
                   "lease_mismatch", "/api/v1/agents/ext.a/inbox/%s/extend", id);
    h_expect_error(d.http, "POST", tok, json_pack("{s:s, s:i}", "lease_token", lt, "lease_s", 0),
                   400, "invalid_lease_s", "/api/v1/agents/ext.a/inbox/%s/extend", id);
    CHECK_EQ(h_ack(d.http, tok, "ext.a", id, lt), 200);
    json_decref(evs);
}

static void test_api_release_all_by_consumer_only(void)
{
    for (int i = 0; i < 3; i++) {
        h_publish(d.http, tok, "rall.a", json_pack("{s:i}", "i", i), NULL, NULL);
    }
    json_t *c1 = h_claim(d.http, tok, "rall.a", 2, 60, "proc-1");
    json_t *c2 = h_claim(d.http, tok, "rall.a", 1, 60, "proc-2");
    CHECK_EQ(json_array_size(c1), 2);
    CHECK_EQ(json_array_size(c2), 1);
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "POST", tok, json_pack("{s:s}", "consumer", "proc-1"), &res,
                     "/api/v1/agents/rall.a/inbox/release-all"),
             200);
    CHECK_EQ(h_int(res, "released"), 2);
    json_decref(res);
    /* proc-2's lease survives; proc-1's are dead and the events are claimable again. */
    CHECK_EQ(h_ack(d.http, tok, "rall.a", h_str(h_at(c2, 0), "event_id"),
                   h_str(h_at(c2, 0), "lease_token")),
             200);
    CHECK_EQ(h_ack(d.http, tok, "rall.a", h_str(h_at(c1, 0), "event_id"),
                   h_str(h_at(c1, 0), "lease_token")),
             409);
    json_t *again = h_claim(d.http, tok, "rall.a", 10, 60, "proc-3");
    CHECK_EQ(json_array_size(again), 2);
    CHECK_STREQ(h_str(h_at(again, 0), "event_id"), h_str(h_at(c1, 0), "event_id"));
    /* shutdown releases count no attempt against the event... attempts still grow per claim. */
    CHECK_EQ(h_int(h_at(again, 0), "attempts"), 2);
    /* A POST without parameters accepts an empty body without a Content-Type. */
    struct h_req_opts no_ct = {.content_type = ""};
    struct h_response r;
    CHECK(h_request(d.http, "POST", "/api/v1/agents/rall.a/inbox/release-all", tok, "", 0, &no_ct,
                    &r) == 0);
    CHECK_EQ(r.status, 200);
    CHECK_EQ(h_int(r.json, "released"), 0); /* proc-3 holds them; no consumer-less leases */
    h_response_cleanup(&r);
    json_decref(again);
    json_decref(c1);
    json_decref(c2);
}

static void test_api_state_merge_patch(void)
{
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/agents/state.none/state"), 200);
    CHECK(json_is_object(json_object_get(res, "state")));
    CHECK_EQ(json_object_size(json_object_get(res, "state")), 0);
    CHECK_EQ(h_int(res, "cursor"), 0);
    json_decref(res);

    h_publish(d.http, tok, "state.a", NULL,
              json_pack("{s:{s:i, s:{s:i, s:b}, s:s}}", "state_patch", "a", 1, "b", "c", 2, "keep",
                        1, "name", "x"),
              NULL);
    h_publish(d.http, tok, "state.a", NULL,
              json_pack("{s:{s:n, s:{s:n, s:i}}}", "state_patch", "a", "b", "c", "d", 3), NULL);
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/agents/state.a/state"), 200);
    json_t *want = json_pack("{s:{s:b, s:i}, s:s}", "b", "keep", 1, "d", 3, "name", "x");
    CHECK(json_equal(json_object_get(res, "state"), want));
    if (!json_equal(json_object_get(res, "state"), want)) {
        char *got = json_dumps(res, JSON_COMPACT);
        fprintf(stderr, "state: %s\n", got);
        free(got);
    }
    CHECK_EQ(h_int(res, "cursor"), 2);
    json_decref(want);
    json_decref(res);
    /* A state_patch that is not an object is refused. */
    h_expect_error(d.http, "POST", tok,
                   json_pack("{s:[s], s:[i]}", "recipients", "state.a", "state_patch", 1), 400,
                   "invalid_state_patch", "/api/v1/events");
}

/* limits.max_state_bytes (2048 here): a state_patch that would leave the document larger fails the
 * whole publish with 413 state_too_large, and nothing of it is written. */
static void test_api_state_bound(void)
{
    char big[1501];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    json_t *res = NULL;
    CHECK_EQ(
        h_callj(d.http, "POST", tok,
                json_pack("{s:[s], s:{s:s}}", "recipients", "state.big", "state_patch", "a", big),
                &res, "/api/v1/events"),
        201);
    json_decref(res);
    /* Another 1.5 KB would pass 2048; in a batch with another agent's event, neither is written. */
    h_expect_error(d.http, "POST", tok,
                   json_pack("{s:[{s:[s]}, {s:[s], s:{s:s}}]}", "events", "recipients",
                             "state.other", "recipients", "state.big", "state_patch", "b", big),
                   413, "state_too_large", "/api/v1/events");
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/agents/state.big/state"), 200);
    CHECK_EQ(h_int(res, "cursor"), 1);
    CHECK(json_object_get(json_object_get(res, "state"), "b") == NULL);
    CHECK_EQ(strlen(h_str(json_object_get(res, "state"), "a")), sizeof big - 1);
    json_decref(res);
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/agents/state.other/inbox"), 200);
    CHECK_EQ(json_array_size(json_object_get(res, "events")), 0);
    json_decref(res);
    /* Replacing the large value with the new one fits, and the document follows. */
    res = NULL;
    CHECK_EQ(h_callj(d.http, "POST", tok,
                     json_pack("{s:[s], s:{s:n, s:s}}", "recipients", "state.big", "state_patch",
                               "a", "b", big),
                     &res, "/api/v1/events"),
             201);
    json_decref(res);
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/agents/state.big/state"), 200);
    CHECK_EQ(h_int(res, "cursor"), 2);
    CHECK(json_object_get(json_object_get(res, "state"), "a") == NULL);
    CHECK(h_str(json_object_get(res, "state"), "b") != NULL);
    json_decref(res);
}

static void test_api_admin_agents(void)
{
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/agents?limit=1000"), 200);
    json_t *agents = json_object_get(res, "agents");
    json_t *page = NULL;
    for (size_t i = 0; i < json_array_size(agents); i++) {
        if (h_str(h_at(agents, i), "agent_id") &&
            strcmp(h_str(h_at(agents, i), "agent_id"), "page.a") == 0) {
            page = h_at(agents, i);
        }
    }
    CHECK(page != NULL);
    CHECK_EQ(h_int(page, "head"), 5);
    CHECK_EQ(h_int(page, "pending"), 5);
    CHECK(json_array_size(agents) >= 10);
    json_decref(res);
    /* Paging: limit=1 gives a next token that leads to the following agent. */
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/agents?limit=1"), 200);
    CHECK_EQ(json_array_size(json_object_get(res, "agents")), 1);
    const char *next = h_str(res, "next");
    CHECK(next != NULL);
    char first[130];
    snprintf(first, sizeof first, "%s", h_str(h_at(json_object_get(res, "agents"), 0), "agent_id"));
    json_t *res2 = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res2, "/api/v1/admin/agents?limit=1&next=%s",
                     next ? next : ""),
             200);
    const char *second = h_str(h_at(json_object_get(res2, "agents"), 0), "agent_id");
    CHECK(second && strcmp(second, first) > 0);
    json_decref(res2);
    json_decref(res);
}

static char *rfc3339_in(int seconds)
{
    time_t t = time(NULL) + seconds;
    struct tm tm;
    gmtime_r(&t, &tm);
    char buf[40];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
    return h_fmt("%s", buf);
}

static void test_api_delay_and_available_at(void)
{
    char id[31], id2[31];
    int64_t t0 = h_now_ms();
    CHECK_EQ(h_publish(d.http, tok, "delay.a", NULL, json_pack("{s:i}", "delay_s", 1), id), 1);
    long st;
    json_t *page = h_inbox(d.http, tok, "delay.a", 0, 10, &st);
    CHECK_STREQ(h_str(h_at(json_object_get(page, "events"), 0), "status"), "scheduled");
    json_decref(page);
    check_claimable_later("delay.a", id, t0, 900, 5000);

    char *at = rfc3339_in(2);
    CHECK_EQ(h_publish(d.http, tok, "delay.b", NULL, json_pack("{s:s}", "available_at", at), id2),
             1);
    check_claimable_later("delay.b", id2, t0, 0, 6000);
    /* Both at once is ambiguous: 400. */
    h_expect_error(
        d.http, "POST", tok,
        json_pack("{s:[s], s:i, s:s}", "recipients", "delay.c", "delay_s", 1, "available_at", at),
        400, "invalid_available_at", "/api/v1/events");
    free(at);
}

static void test_api_ttl_expires(void)
{
    char id[31];
    CHECK_EQ(h_publish(d.http, tok, "ttl.a", NULL, json_pack("{s:i}", "ttl_s", 1), id), 1);
    long st;
    json_t *page = h_inbox(d.http, tok, "ttl.a", 0, 10, &st);
    CHECK(h_str(h_at(json_object_get(page, "events"), 0), "expires_at") != NULL);
    json_decref(page);
    bool ok;
    page = NULL;
    H_WAIT_UNTIL(
        ok, 5000,
        (json_decref(page), page = h_inbox(d.http, tok, "ttl.a", 0, 10, &st),
         h_str(h_at(json_object_get(page, "events"), 0), "status") &&
             strcmp(h_str(h_at(json_object_get(page, "events"), 0), "status"), "expired") == 0));
    CHECK(ok);
    json_decref(page);
    json_t *evs = h_claim(d.http, tok, "ttl.a", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 0);
    json_decref(evs);
}

static void test_api_priority_order(void)
{
    static const int prios[] = {0, 5, -3, 5, 10};
    json_t *list = json_array();
    for (size_t i = 0; i < 5; i++) {
        json_array_append_new(list, json_pack("{s:[s], s:{s:i}, s:i}", "recipients", "prio.a",
                                              "payload", "i", (int)i, "priority", prios[i]));
    }
    CHECK_EQ(
        h_callj(d.http, "POST", tok, json_pack("{s:o}", "events", list), NULL, "/api/v1/events"),
        201);
    json_t *evs = h_claim(d.http, tok, "prio.a", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 5);
    static const int want_prio[] = {10, 5, 5, 0, -3};
    static const int want_seq[] = {5, 2, 4, 1, 3};
    for (size_t i = 0; i < json_array_size(evs) && i < 5; i++) {
        CHECK_EQ(h_int(h_at(evs, i), "priority"), want_prio[i]);
        CHECK_EQ(h_int(h_at(evs, i), "sequence_number"), want_seq[i]);
    }
    json_decref(evs);
    h_expect_error(d.http, "POST", tok,
                   json_pack("{s:[s], s:i}", "recipients", "prio.b", "priority", 101), 400,
                   "invalid_priority", "/api/v1/events");
}

/* ---- long polls ---- */

struct delayed_publish {
    const char *agent;
    int delay_ms;
    int64_t seq;
};

/* Publishes after a delay from its own connection. The delay only makes the long poll park
 * first in practice; the assertions hold whichever comes first. */
static void *publish_later(void *arg)
{
    struct delayed_publish *p = arg;
    struct h_client *c = h_client_new(d.url);
    h_sleep_ms(p->delay_ms);
    p->seq = h_publish(c, tok, p->agent, json_pack("{s:s}", "wake", "up"), NULL, NULL);
    h_client_free(c);
    return NULL;
}

static void test_api_long_poll_inbox_wakes_on_publish(void)
{
    struct delayed_publish p = {.agent = "lp.inbox", .delay_ms = 300};
    pthread_t th;
    pthread_create(&th, NULL, publish_later, &p);
    struct h_response r;
    CHECK(h_request(d.http, "GET", "/api/v1/agents/lp.inbox/inbox?after_cursor=0&wait_s=30", tok,
                    NULL, 0, NULL, &r) == 0);
    pthread_join(th, NULL);
    CHECK_EQ(p.seq, 1);
    CHECK_EQ(r.status, 200);
    CHECK_EQ(json_array_size(json_object_get(r.json, "events")), 1);
    /* Woken by the commit, not by the 30 s deadline (the gap is wide so that a machine many times
     * slower than usual still tells the two apart). */
    CHECK(r.elapsed_ms < 20000);
    CHECK(r.elapsed_ms >= 200); /* and it did wait: the event did not exist before */
    h_response_cleanup(&r);
}

static void test_api_long_poll_claim_wakes_on_publish(void)
{
    struct delayed_publish p = {.agent = "lp.claim", .delay_ms = 300};
    pthread_t th;
    pthread_create(&th, NULL, publish_later, &p);
    struct h_response r;
    const char *body = "{\"wait_s\":30,\"lease_s\":30}";
    CHECK(h_request(d.http, "POST", "/api/v1/agents/lp.claim/inbox/claim", tok, body, strlen(body),
                    NULL, &r) == 0);
    pthread_join(th, NULL);
    CHECK_EQ(r.status, 200);
    json_t *evs = json_object_get(r.json, "events");
    CHECK_EQ(json_array_size(evs), 1);
    CHECK(h_str(h_at(evs, 0), "lease_token") != NULL);
    CHECK(r.elapsed_ms < 20000);
    CHECK(r.elapsed_ms >= 200);
    h_response_cleanup(&r);
}

static void test_api_long_poll_times_out_empty(void)
{
    struct h_response r;
    CHECK(h_request(d.http, "GET", "/api/v1/agents/lp.none/inbox?wait_s=1", tok, NULL, 0, NULL,
                    &r) == 0);
    CHECK_EQ(r.status, 200);
    CHECK_EQ(json_array_size(json_object_get(r.json, "events")), 0);
    CHECK(r.elapsed_ms >= 900 && r.elapsed_ms < 20000);
    h_response_cleanup(&r);
    /* Another agent's commit does not wake it with someone else's events. */
    struct delayed_publish p = {.agent = "lp.other", .delay_ms = 100};
    pthread_t th;
    pthread_create(&th, NULL, publish_later, &p);
    CHECK(h_request(d.http, "GET", "/api/v1/agents/lp.none/inbox?wait_s=1", tok, NULL, 0, NULL,
                    &r) == 0);
    pthread_join(th, NULL);
    CHECK_EQ(r.status, 200);
    CHECK_EQ(json_array_size(json_object_get(r.json, "events")), 0);
    h_response_cleanup(&r);
}

int main(void)
{
    h_init();
    static const char *const sets[] = {"scavenger.interval_ms=50", "store.synchronous=normal",
                                       "limits.max_state_bytes=2048", NULL};
    if (!roostd_start_checked(&d, NULL, sets)) {
        return h_summary();
    }
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    RUN(test_api_healthz);
    RUN(test_api_publish_single);
    RUN(test_api_publish_batch);
    RUN(test_api_publish_items_interleaved);
    RUN(test_api_publish_fanout);
    RUN(test_api_idempotency_key_repeat);
    RUN(test_api_cursor_paging);
    RUN(test_api_claim_ack);
    RUN(test_api_batch_ack_per_item);
    RUN(test_api_release_transient_and_shutdown);
    RUN(test_api_release_delay_not_claimable_until_due);
    RUN(test_api_release_poison_quarantine_requeue);
    RUN(test_api_extend);
    RUN(test_api_release_all_by_consumer_only);
    RUN(test_api_state_merge_patch);
    RUN(test_api_state_bound);
    RUN(test_api_admin_agents);
    RUN(test_api_delay_and_available_at);
    RUN(test_api_ttl_expires);
    RUN(test_api_priority_order);
    RUN(test_api_long_poll_inbox_wakes_on_publish);
    RUN(test_api_long_poll_claim_wakes_on_publish);
    RUN(test_api_long_poll_times_out_empty);
    free(tok);
    roostd_finish(&d);
    return h_summary();
}
