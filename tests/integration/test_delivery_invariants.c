/* SPDX-License-Identifier: MIT */
/* DESIGN §4.4 invariants against the real roostd, each tried hard: no gaps for a cursor reader
 * under 8 concurrent producers (2), fencing after lease expiry and re-claim (3), atomic batches
 * (4), exact 410 at the retention watermark (5), and expiry → quarantine → requeue (1). The
 * scavenger and retention run every 50 ms; completed rows are purged at once. */
#include <pthread.h>
#include <stdlib.h>

#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;
static char *tok;

#define ZERO_TOKEN "lt_00000000000000000000000000"

/* ---- (2) no gaps under concurrent producers ---- */

#define PRODUCERS 8
#define PER_PRODUCER 200
#define TOTAL (PRODUCERS * PER_PRODUCER)

struct producer {
    int index;
    char ids[PER_PRODUCER][31];
    int64_t seqs[PER_PRODUCER];
    int failures;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    struct h_client *c = h_client_new(d.url);
    for (int i = 0; i < PER_PRODUCER; i++) {
        p->seqs[i] = h_publish(c, tok, "gap.a", json_pack("{s:i, s:i}", "p", p->index, "i", i),
                               NULL, p->ids[i]);
        if (p->seqs[i] <= 0) {
            p->failures++;
        }
    }
    h_client_free(c);
    return NULL;
}

static void test_delivery_no_gaps_under_concurrent_producers(void)
{
    static struct producer prod[PRODUCERS];
    static char seen[TOTAL + 1][31];
    pthread_t th[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        prod[i].index = i;
        pthread_create(&th[i], NULL, produce, &prod[i]);
    }
    /* The reader follows next_cursor while the producers run, long-polling when caught up. */
    int64_t cursor = 0;
    int n_seen = 0, out_of_order = 0, bad_status = 0;
    int64_t deadline = h_now_ms() + 90000;
    while (n_seen < TOTAL && h_now_ms() < deadline) {
        json_t *res = NULL;
        long st = h_callj(d.http, "GET", tok, NULL, &res,
                          "/api/v1/agents/gap.a/inbox?after_cursor=%lld&limit=100&wait_s=2",
                          (long long)cursor);
        if (st != 200) {
            bad_status++;
            json_decref(res);
            break;
        }
        json_t *evs = json_object_get(res, "events");
        for (size_t i = 0; i < json_array_size(evs); i++) {
            int64_t seq = h_int(h_at(evs, i), "sequence_number");
            if (seq != cursor + 1 || seq > TOTAL) {
                out_of_order++;
                continue;
            }
            snprintf(seen[seq], sizeof seen[seq], "%s", h_str(h_at(evs, i), "event_id"));
            cursor = seq;
            n_seen++;
        }
        if (json_array_size(evs)) {
            CHECK_EQ(h_int(res, "next_cursor"), cursor);
        }
        json_decref(res);
    }
    for (int i = 0; i < PRODUCERS; i++) {
        pthread_join(th[i], NULL);
    }
    CHECK_EQ(bad_status, 0);
    CHECK_EQ(out_of_order, 0);
    CHECK_EQ(n_seen, TOTAL);
    int failures = 0, mismatched = 0;
    for (int p = 0; p < PRODUCERS; p++) {
        failures += prod[p].failures;
        for (int i = 0; i < PER_PRODUCER; i++) {
            int64_t seq = prod[p].seqs[i];
            if (seq < 1 || seq > TOTAL || strcmp(seen[seq], prod[p].ids[i]) != 0) {
                mismatched++;
            }
        }
    }
    /* Every acknowledged publish was seen exactly once, at the seq it was given. */
    CHECK_EQ(failures, 0);
    CHECK_EQ(mismatched, 0);
    long st;
    json_t *tail = h_inbox(d.http, tok, "gap.a", TOTAL, 10, &st);
    CHECK_EQ(st, 200);
    CHECK_EQ(h_int(tail, "head"), TOTAL);
    CHECK_EQ(json_array_size(json_object_get(tail, "events")), 0);
    json_decref(tail);
}

/* ---- (3) fencing ---- */

static const char *status_of_first(json_t *page)
{
    return h_str(h_at(json_object_get(page, "events"), 0), "status");
}

static void test_delivery_fencing_after_expiry_and_reclaim(void)
{
    char id[31], old_lease[40], new_lease[40];
    h_publish(d.http, tok, "fence.a", NULL, NULL, id);
    json_t *evs = h_claim(d.http, tok, "fence.a", 1, 1, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    snprintf(old_lease, sizeof old_lease, "%s", h_str(h_at(evs, 0), "lease_token"));
    json_decref(evs);

    /* The scavenger returns the expired lease to pending; the old token is dead at once. */
    bool ok;
    long st;
    json_t *page = NULL;
    H_WAIT_UNTIL(ok, 5000,
                 (json_decref(page), page = h_inbox(d.http, tok, "fence.a", 0, 1, &st),
                  status_of_first(page) && strcmp(status_of_first(page), "pending") == 0));
    CHECK(ok);
    json_decref(page);
    h_expect_error(d.http, "POST", tok, json_pack("{s:s}", "lease_token", old_lease), 409,
                   "lease_mismatch", "/api/v1/agents/fence.a/inbox/%s/ack", id);

    evs = h_claim(d.http, tok, "fence.a", 1, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    CHECK_STREQ(h_str(h_at(evs, 0), "event_id"), id);
    CHECK_EQ(h_int(h_at(evs, 0), "attempts"), 2);
    snprintf(new_lease, sizeof new_lease, "%s", h_str(h_at(evs, 0), "lease_token"));
    json_decref(evs);
    CHECK(strcmp(old_lease, new_lease) != 0);

    /* The late holder can neither ack, extend nor release; the new holder is untouched. */
    h_expect_error(d.http, "POST", tok, json_pack("{s:s}", "lease_token", old_lease), 409,
                   "lease_mismatch", "/api/v1/agents/fence.a/inbox/%s/ack", id);
    CHECK_EQ(h_callj(d.http, "POST", tok,
                     json_pack("{s:s, s:i}", "lease_token", old_lease, "lease_s", 60), NULL,
                     "/api/v1/agents/fence.a/inbox/%s/extend", id),
             409);
    CHECK_EQ(h_callj(d.http, "POST", tok, json_pack("{s:s}", "lease_token", old_lease), NULL,
                     "/api/v1/agents/fence.a/inbox/%s/release", id),
             409);
    CHECK_EQ(h_ack(d.http, tok, "fence.a", id, new_lease), 200);
    /* After completion the old token still cannot "re-ack" it (409, or 404 once retention,
     * which runs every 50 ms here, has deleted the completed row). */
    long late = h_ack(d.http, tok, "fence.a", id, old_lease);
    CHECK(late == 409 || late == 404);
}

/* ---- (4) atomic batches ---- */

static void test_delivery_atomic_batch_rejected_whole(void)
{
    h_publish(d.http, tok, "atom.a", NULL, NULL, NULL);
    h_publish(d.http, tok, "atom.a", NULL, NULL, NULL);
    long st;
    json_t *before = h_inbox(d.http, tok, "atom.a", 0, 100, &st);
    CHECK_EQ(h_int(before, "head"), 2);

    /* The third event is invalid (priority out of range): nothing of the batch is written. */
    json_t *res = NULL;
    json_t *batch =
        json_pack("{s:[{s:[s]}, {s:[s,s]}, {s:[s], s:i}]}", "events", "recipients", "atom.a",
                  "recipients", "atom.a", "atom.b", "recipients", "atom.a", "priority", 1000);
    CHECK_EQ(h_callj(d.http, "POST", tok, batch, &res, "/api/v1/events"), 400);
    CHECK_STREQ(h_error_code(res), "invalid_priority");
    CHECK_EQ(h_int(json_object_get(res, "error"), "index"), 2);
    json_decref(res);
    /* Same with a bad recipient and with a payload that is not an object. */
    res = NULL;
    batch = json_pack("{s:[{s:[s]}, {s:[s]}, {s:[s]}]}", "events", "recipients", "atom.a",
                      "recipients", "atom.b", "recipients", "no spaces allowed");
    h_expect_error(d.http, "POST", tok, batch, 400, "invalid_recipients", "/api/v1/events");
    res = NULL;
    batch = json_pack("{s:[{s:[s]}, {s:[s]}, {s:[s], s:[]}]}", "events", "recipients", "atom.a",
                      "recipients", "atom.b", "recipients", "atom.a", "payload");
    h_expect_error(d.http, "POST", tok, batch, 400, "invalid_payload", "/api/v1/events");

    json_t *after = h_inbox(d.http, tok, "atom.a", 0, 100, &st);
    CHECK_EQ(st, 200);
    CHECK_EQ(h_int(after, "head"), 2);
    CHECK(json_equal(before, after));
    json_decref(after);
    after = h_inbox(d.http, tok, "atom.b", 0, 100, &st);
    CHECK_EQ(h_int(after, "head"), 0);
    CHECK_EQ(json_array_size(json_object_get(after, "events")), 0);
    json_decref(after);
    json_decref(before);
    /* The next good publish continues the sequence without a hole. */
    CHECK_EQ(h_publish(d.http, tok, "atom.a", NULL, NULL, NULL), 3);
}

/* ---- (5) exact 410 ---- */

static void test_delivery_exact_410_at_retention_watermark(void)
{
    for (int i = 0; i < 8; i++) {
        h_publish(d.http, tok, "ret.a", json_pack("{s:i}", "i", i + 1), NULL, NULL);
    }
    json_t *evs = h_claim(d.http, tok, "ret.a", 5, 60, NULL);
    CHECK_EQ(json_array_size(evs), 5);
    /* Complete seq 5 first, then 1..3; seq 4 goes back to pending and blocks the prefix, so the
     * watermark must stop at exactly 3 and seq 5 must survive although it is completed. */
    for (size_t i = 0; i < json_array_size(evs); i++) {
        json_t *e = h_at(evs, i);
        if (h_int(e, "sequence_number") == 5) {
            CHECK_EQ(h_ack(d.http, tok, "ret.a", h_str(e, "event_id"), h_str(e, "lease_token")),
                     200);
        }
    }
    for (size_t i = 0; i < json_array_size(evs); i++) {
        json_t *e = h_at(evs, i);
        int64_t seq = h_int(e, "sequence_number");
        if (seq <= 3) {
            CHECK_EQ(h_ack(d.http, tok, "ret.a", h_str(e, "event_id"), h_str(e, "lease_token")),
                     200);
        } else if (seq == 4) {
            CHECK_EQ(h_callj(d.http, "POST", tok,
                             json_pack("{s:s}", "lease_token", h_str(e, "lease_token")), NULL,
                             "/api/v1/agents/ret.a/inbox/%s/release", h_str(e, "event_id")),
                     200);
        }
    }
    json_decref(evs);

    bool ok;
    long st = 0;
    json_t *res = NULL;
    /* Retention may run between the acks: wait until the watermark reached the last acked seq
     * (it only moves forward and never passes the pending seq 4). */
    H_WAIT_UNTIL(ok, 10000,
                 (json_decref(res), res = h_inbox(d.http, tok, "ret.a", 0, 100, &st),
                  st == 410 && h_int(json_object_get(res, "error"), "oldest_cursor") == 3));
    CHECK(ok);
    CHECK_STREQ(h_error_code(res), "cursor_expired");
    json_t *err = json_object_get(res, "error");
    CHECK_EQ(h_int(err, "oldest_cursor"), 3);
    CHECK_STREQ(h_str(err, "resync"), "/api/v1/agents/ret.a/state");
    json_decref(res);

    /* Every cursor below the watermark is 410 … */
    for (int64_t c = 0; c < 3; c++) {
        res = h_inbox(d.http, tok, "ret.a", c, 100, &st);
        CHECK_EQ(st, 410);
        CHECK_EQ(h_int(json_object_get(res, "error"), "oldest_cursor"), 3);
        json_decref(res);
    }
    /* … and the watermark itself gets the rest, completed seq 5 included. */
    res = h_inbox(d.http, tok, "ret.a", 3, 100, &st);
    CHECK_EQ(st, 200);
    json_t *rest = json_object_get(res, "events");
    CHECK_EQ(json_array_size(rest), 5);
    for (size_t i = 0; i < json_array_size(rest); i++) {
        CHECK_EQ(h_int(h_at(rest, i), "sequence_number"), (json_int_t)i + 4);
    }
    CHECK_STREQ(h_str(h_at(rest, 1), "status"), "completed");
    CHECK_STREQ(h_str(h_at(rest, 0), "status"), "pending");
    json_decref(res);
    res = h_inbox(d.http, tok, "ret.a", 4, 100, &st);
    CHECK_EQ(st, 200);
    json_decref(res);
    /* The resync target gives a cursor the agent can continue from without another 410: the
     * state was never patched, so that is the watermark itself. */
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/agents/ret.a/state"), 200);
    int64_t resume = h_int(res, "cursor");
    CHECK_EQ(resume, 3);
    json_decref(res);
    res = h_inbox(d.http, tok, "ret.a", resume, 100, &st);
    CHECK_EQ(st, 200);
    json_decref(res);
}

/* ---- (1) expiry → quarantine → requeue ---- */

static bool quarantined_count(const char *agent, size_t want, json_t **out)
{
    json_decref(*out);
    *out = NULL;
    h_callj(d.http, "GET", tok, NULL, out, "/api/v1/admin/quarantine?agent_id=%s", agent);
    return json_array_size(json_object_get(*out, "events")) == want;
}

static void test_delivery_expiry_quarantine_requeue(void)
{
    char id[31];
    h_publish(d.http, tok, "quar.a", json_pack("{s:s}", "keep", "me"), NULL, id);
    json_t *evs = h_claim(d.http, tok, "quar.a", 1, 1, NULL);
    CHECK_EQ(h_int(h_at(evs, 0), "attempts"), 1);
    json_decref(evs);
    /* Second attempt, also left to expire: attempts reach claim.max_attempts = 2. */
    bool ok;
    evs = NULL;
    H_WAIT_UNTIL(ok, 5000,
                 (json_decref(evs), evs = h_claim(d.http, tok, "quar.a", 1, 1, NULL),
                  json_array_size(evs) == 1));
    CHECK(ok);
    CHECK_EQ(h_int(h_at(evs, 0), "attempts"), 2);
    json_decref(evs);
    json_t *q = NULL;
    H_WAIT_UNTIL(ok, 5000, quarantined_count("quar.a", 1, &q));
    CHECK(ok);
    json_t *qe = h_at(json_object_get(q, "events"), 0);
    CHECK_STREQ(h_str(qe, "event_id"), id);
    CHECK_STREQ(h_str(qe, "status"), "quarantined");
    CHECK_EQ(h_int(qe, "attempts"), 2);
    CHECK_EQ(h_int(qe, "timeouts"), 2);
    json_decref(q);
    /* Kept, not lost, not claimable. */
    evs = h_claim(d.http, tok, "quar.a", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 0);
    json_decref(evs);
    long st;
    json_t *page = h_inbox(d.http, tok, "quar.a", 0, 10, &st);
    CHECK_STREQ(status_of_first(page), "quarantined");
    json_decref(page);

    CHECK_EQ(h_callj(d.http, "POST", tok, NULL, NULL, "/api/v1/admin/quarantine/%s/requeue", id),
             200);
    evs = h_claim(d.http, tok, "quar.a", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    CHECK_STREQ(h_str(h_at(evs, 0), "event_id"), id);
    CHECK_EQ(h_int(h_at(evs, 0), "sequence_number"), 1);
    CHECK_EQ(h_int(h_at(evs, 0), "attempts"), 1);
    CHECK_STREQ(h_str(json_object_get(h_at(evs, 0), "payload"), "keep"), "me");
    CHECK_EQ(h_ack(d.http, tok, "quar.a", id, h_str(h_at(evs, 0), "lease_token")), 200);
    json_decref(evs);
    q = NULL;
    CHECK(quarantined_count("quar.a", 0, &q));
    json_decref(q);
}

int main(void)
{
    h_init();
    static const char *const sets[] = {"scavenger.interval_ms=50", "retention.completed_s=0",
                                       "retention.interval_ms=50", "claim.max_attempts=2",
                                       "store.synchronous=normal", NULL};
    if (!roostd_start_checked(&d, NULL, sets)) {
        return h_summary();
    }
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    RUN(test_delivery_no_gaps_under_concurrent_producers);
    RUN(test_delivery_fencing_after_expiry_and_reclaim);
    RUN(test_delivery_atomic_batch_rejected_whole);
    RUN(test_delivery_exact_410_at_retention_watermark);
    RUN(test_delivery_expiry_quarantine_requeue);
    free(tok);
    roostd_finish(&d);
    return h_summary();
}
