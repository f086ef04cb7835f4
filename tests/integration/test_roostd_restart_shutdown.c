/* SPDX-License-Identifier: MIT */
/* roostd's own lifecycle: nothing is lost across a graceful restart (SIGTERM, exit 0, start again
 * on the same data dir), nor across SIGKILL in the middle of a publishing load (every event
 * acknowledged with 201 before the kill is there afterwards, with no sequence gap), and SIGTERM
 * answers a pending long poll at once instead of waiting for its deadline. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "harness/harness.h"

#include "common/banned.h"

static const char *const sets[] = {"scavenger.interval_ms=50", NULL};

static void test_roostd_restart_keeps_everything(void)
{
    struct roostd d;
    if (!roostd_start_checked(&d, NULL, sets)) {
        return;
    }
    char *tok = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    char ids[20][31];
    for (int i = 0; i < 20; i++) {
        h_publish(d.http, tok, "life.a", json_pack("{s:i}", "i", i), NULL, ids[i]);
    }
    h_publish(d.http, tok, "life.a", NULL, json_pack("{s:{s:s}}", "state_patch", "k", "v"), NULL);
    json_t *claimed = h_claim(d.http, tok, "life.a", 5, 600, "c1");
    CHECK_EQ(json_array_size(claimed), 5);
    CHECK_EQ(h_ack(d.http, tok, "life.a", h_str(h_at(claimed, 0), "event_id"),
                   h_str(h_at(claimed, 0), "lease_token")),
             200);
    long st;
    json_t *before = h_inbox(d.http, tok, "life.a", 0, 100, &st);
    CHECK_EQ(st, 200);
    char dir[256];
    snprintf(dir, sizeof dir, "%s", d.dir);
    CHECK_EQ(roostd_stop(&d), 0);
    free(tok);

    if (roostd_start(&d, dir, sets) != 0) {
        CHECK(!"roostd restarted");
        json_decref(before);
        json_decref(claimed);
        return;
    }
    /* Same key file: a token minted now is as good as before. */
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    json_t *after = h_inbox(d.http, tok, "life.a", 0, 100, &st);
    CHECK_EQ(st, 200);
    CHECK(json_equal(before, after));
    CHECK_EQ(h_int(after, "head"), 21);
    json_t *evs = json_object_get(after, "events");
    for (int i = 0; i < 20 && i < (int)json_array_size(evs); i++) {
        CHECK_STREQ(h_str(h_at(evs, (size_t)i), "event_id"), ids[i]);
    }
    json_decref(after);
    json_decref(before);
    /* Leases survive too: the claimed ones are still held by their tokens. */
    CHECK_EQ(h_ack(d.http, tok, "life.a", h_str(h_at(claimed, 1), "event_id"),
                   h_str(h_at(claimed, 1), "lease_token")),
             200);
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/agents/life.a/state"), 200);
    CHECK_STREQ(h_str(json_object_get(res, "state"), "k"), "v");
    json_decref(res);
    /* The sequence continues where it stopped. */
    CHECK_EQ(h_publish(d.http, tok, "life.a", NULL, NULL, NULL), 22);
    json_decref(claimed);
    free(tok);
    roostd_finish(&d);
}

/* ---- SIGKILL mid-load ---- */

#define KILL_PRODUCERS 4
#define KILL_MAX_PER 5000

struct killer_producer {
    const char *url;
    const char *tok;
    char (*ids)[31];
    int acked;
    atomic_int *total;
};

static void *produce_until_failure(void *arg)
{
    struct killer_producer *p = arg;
    struct h_client *c = h_client_new(p->url);
    while (p->acked < KILL_MAX_PER) {
        char id[31];
        int64_t seq = h_publish(c, p->tok, "kill.a", json_pack("{s:i}", "n", p->acked), NULL, id);
        if (seq <= 0) {
            break; /* the daemon is gone: everything acknowledged so far must survive */
        }
        memcpy(p->ids[p->acked], id, sizeof id);
        p->acked++;
        atomic_fetch_add(p->total, 1);
    }
    h_client_free(c);
    return NULL;
}

static void test_roostd_sigkill_mid_load_loses_nothing_acknowledged(void)
{
    struct roostd d;
    static const char *const full[] = {"scavenger.interval_ms=50", "store.synchronous=full", NULL};
    if (!roostd_start_checked(&d, NULL, full)) {
        return;
    }
    char *tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    atomic_int total = 0;
    struct killer_producer prod[KILL_PRODUCERS];
    pthread_t th[KILL_PRODUCERS];
    for (int i = 0; i < KILL_PRODUCERS; i++) {
        prod[i] = (struct killer_producer){.url = d.url, .tok = tok, .total = &total};
        prod[i].ids = calloc(KILL_MAX_PER, sizeof *prod[i].ids);
        pthread_create(&th[i], NULL, produce_until_failure, &prod[i]);
    }
    bool ok;
    H_WAIT_UNTIL(ok, 30000, atomic_load(&total) >= 300);
    CHECK(ok);
    char dir[256];
    snprintf(dir, sizeof dir, "%s", d.dir);
    roostd_kill(&d); /* while the producers are still publishing */
    for (int i = 0; i < KILL_PRODUCERS; i++) {
        pthread_join(th[i], NULL);
    }
    int acked = atomic_load(&total);
    CHECK(acked >= 300);
    CHECK(acked < KILL_PRODUCERS * KILL_MAX_PER); /* the kill did land mid-load */

    if (roostd_start(&d, dir, sets) != 0) {
        CHECK(!"roostd restarted after SIGKILL");
    } else {
        /* Read the whole inbox back: gap-free from 1 to the head. */
        size_t cap = (size_t)acked + 1000, n = 0;
        char(*seen)[31] = calloc(cap, sizeof *seen);
        int64_t cursor = 0, gaps = 0;
        for (;;) {
            long st;
            json_t *page = h_inbox(d.http, tok, "kill.a", cursor, 1000, &st);
            CHECK_EQ(st, 200);
            json_t *evs = json_object_get(page, "events");
            for (size_t i = 0; i < json_array_size(evs) && n < cap; i++) {
                int64_t seq = h_int(h_at(evs, i), "sequence_number");
                gaps += seq != cursor + 1;
                cursor = seq;
                snprintf(seen[n++], 31, "%s", h_str(h_at(evs, i), "event_id"));
            }
            bool more = json_is_true(json_object_get(page, "has_more"));
            json_decref(page);
            if (st != 200 || !more) {
                break;
            }
        }
        CHECK_EQ(gaps, 0);
        CHECK(n >= (size_t)acked);
        int missing = 0;
        for (int p = 0; p < KILL_PRODUCERS; p++) {
            for (int i = 0; i < prod[p].acked; i++) {
                bool found = false;
                for (size_t k = 0; k < n && !found; k++) {
                    found = strcmp(seen[k], prod[p].ids[i]) == 0;
                }
                missing += !found;
            }
        }
        CHECK_EQ(missing, 0);
        free(seen);
        CHECK_EQ(roostd_stop(&d), 0);
    }
    for (int i = 0; i < KILL_PRODUCERS; i++) {
        free(prod[i].ids);
    }
    free(tok);
    roostd_remove_dir(&d);
}

/* ---- SIGTERM with a long poll pending ---- */

struct poller {
    const char *url;
    const char *tok;
    long status;
    int64_t elapsed_ms;
};

static void *long_poll(void *arg)
{
    struct poller *p = arg;
    struct h_client *c = h_client_new(p->url);
    struct h_response r;
    h_request(c, "GET", "/api/v1/agents/term.a/inbox?wait_s=20", p->tok, NULL, 0, NULL, &r);
    p->status = r.status;
    p->elapsed_ms = r.elapsed_ms;
    h_response_cleanup(&r);
    h_client_free(c);
    return NULL;
}

static void test_roostd_sigterm_answers_long_polls_and_exits_0(void)
{
    struct roostd d;
    static const char *const term_sets[] = {"claim.max_wait_s=20", NULL};
    if (!roostd_start_checked(&d, NULL, term_sets)) {
        return;
    }
    char *tok = h_token(&d, "t1", "agent:*:consume");
    struct poller p = {.url = d.url, .tok = tok};
    pthread_t th;
    pthread_create(&th, NULL, long_poll, &p);
    /* Give the poll time to park; whether it did or not, it must not outlive SIGTERM by much. */
    h_sleep_ms(300);
    int64_t t0 = h_now_ms();
    CHECK_EQ(roostd_stop(&d), 0);
    CHECK(h_now_ms() - t0 < 5000);
    pthread_join(th, NULL);
    CHECK(p.elapsed_ms < 10000);
    CHECK(p.status == 200 || p.status == 503 || p.status == -1);
    if (p.elapsed_ms >= 250) {
        /* It was pending at the server when SIGTERM came: answered with what it had. */
        CHECK_EQ(p.status, 200);
    }
    free(tok);
    roostd_remove_dir(&d);
}

int main(void)
{
    h_init();
    RUN(test_roostd_restart_keeps_everything);
    RUN(test_roostd_sigkill_mid_load_loses_nothing_acknowledged);
    RUN(test_roostd_sigterm_answers_long_polls_and_exits_0);
    return h_summary();
}
