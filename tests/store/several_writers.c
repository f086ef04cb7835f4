/* SPDX-License-Identifier: MIT */
/* Store tests every dialect with several writers shares (several_writers.h): producers, claimers
 * and retention on separate connections to one database, run by test_store_mysql and
 * test_store_pg on their own servers. */
#include "store/several_writers.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_sql.h"

#include "common/banned.h"

struct store *several_open(const char *url)
{
    struct store *st = NULL;
    const char *err = NULL;
    struct store_options opt = {.busy_timeout_ms = 10000};
    int rc = store_open(url, &opt, &st, &err);
    if (rc != ROOST_OK) {
        printf("store_open(%s): %s: %s\n", url, roost_err_name(rc), err != NULL ? err : "");
        return NULL;
    }
    return st;
}

/* Publishes one event to one agent in its own transaction, replaying it on ROOST_ERETRY as the
 * server's writer does. */
int several_publish_retry(struct store *st, const char *agent, const char *idem, int64_t now,
                          struct store_published *out)
{
    const char *r[] = {agent};
    struct store_publish_item item = {
        .recipients = r, .n_recipients = 1, .payload = "{\"k\":1}", .idempotency_key = idem};
    struct store_publish_req req = {.tenant_id = TA, .items = &item, .n_items = 1, .now_ms = now};
    int rc = ROOST_ERETRY;
    for (int attempt = 0; attempt < 100 && rc == ROOST_ERETRY; attempt++) {
        rc = st->ops->begin(st);
        if (rc == ROOST_OK) {
            rc = st->ops->publish(st, &req, out, NULL);
            rc = rc == ROOST_OK ? st->ops->commit(st) : rc;
            if (rc != ROOST_OK) {
                st->ops->rollback(st);
            }
        }
    }
    return rc;
}

bool several_touched(const struct store_touches *t, const char *agent, int64_t head)
{
    for (size_t i = 0; i < t->len; i++) {
        if (strcmp(t->items[i].agent_id, agent) == 0 && strcmp(t->items[i].tenant_id, TA) == 0) {
            return head < 0 || t->items[i].head == head;
        }
    }
    return false;
}

/* ---- (a) 8 producers, one cursor reader: every event exactly once, in order ---- */

#define PRODUCERS 8
#define PER_PRODUCER 200

struct producer {
    const char *url;
    bool batched; /* through publish_batch, four requests per transaction */
    int errors;
};

/* Four publish requests in one transaction through publish_batch (the server's group commit
 * path: one multi-row insert), replayed on ROOST_ERETRY: to hot; to cold and hot; to hot; to hot
 * twice (one row). Each adds 4 rows to hot, whose seqs must follow request order. */
static int publish_batch_retry(struct store *st)
{
    const char *r0[] = {"hot"}, *r1[] = {"cold", "hot"}, *r3[] = {"hot", "hot"};
    const char *const *rs[] = {r0, r1, r0, r3};
    size_t ns[] = {1, 2, 1, 2};
    struct store_publish_item items[4];
    struct store_publish_req reqs[4];
    struct store_published outs[4][2];
    struct store_touches touches[4];
    struct store_publish_entry entries[4];
    memset(touches, 0, sizeof touches);
    for (int k = 0; k < 4; k++) {
        items[k] = (struct store_publish_item){
            .recipients = rs[k], .n_recipients = ns[k], .payload = "{\"b\":1}"};
        reqs[k] = (struct store_publish_req){
            .tenant_id = TA, .items = &items[k], .n_items = 1, .now_ms = T0};
        entries[k] =
            (struct store_publish_entry){.req = &reqs[k], .out = outs[k], .touches = &touches[k]};
    }
    int rc = ROOST_ERETRY;
    for (int attempt = 0; attempt < 100 && rc == ROOST_ERETRY; attempt++) {
        rc = st->ops->begin(st);
        if (rc == ROOST_OK) {
            rc = st->ops->publish_batch(st, entries, 4);
            for (int k = 0; rc == ROOST_OK && k < 4; k++) {
                rc = entries[k].rc;
            }
            rc = rc == ROOST_OK ? st->ops->commit(st) : rc;
            if (rc != ROOST_OK) {
                st->ops->rollback(st);
            }
        }
    }
    if (rc == ROOST_OK) {
        int64_t s = outs[0][0].seq;
        bool in_order = outs[1][1].seq == s + 1 && outs[2][0].seq == s + 2 &&
                        outs[3][0].seq == s + 3 && outs[3][1].seq == s + 3 &&
                        strcmp(outs[1][0].agent_id, "cold") == 0 &&
                        several_touched(&touches[3], "hot", s + 3);
        rc = in_order ? ROOST_OK : ROOST_EINTERNAL;
    }
    for (int k = 0; k < 4; k++) {
        store_touches_cleanup(&touches[k]);
    }
    return rc;
}

static void *producer_main(void *p)
{
    struct producer *w = p;
    struct store *st = several_open(w->url);
    if (st == NULL) {
        w->errors++;
        return NULL;
    }
    for (int i = 0; w->batched && i < PER_PRODUCER / 4; i++) {
        int rc = publish_batch_retry(st);
        if (rc != ROOST_OK) {
            printf("batch producer: %s: %s\n", roost_err_name(rc), st->ops->errmsg(st));
            w->errors++;
            break;
        }
    }
    for (int i = 0; !w->batched && i < PER_PRODUCER; i++) {
        struct store_published out;
        int rc = several_publish_retry(st, "hot", NULL, T0, &out);
        if (rc != ROOST_OK) {
            printf("producer: %s: %s\n", roost_err_name(rc), st->ops->errmsg(st));
            w->errors++;
            break;
        }
    }
    store_close(st);
    return NULL;
}

struct follower {
    const char *url;
    atomic_int *done;
    int64_t seen;
    int errors;
};

static void *follower_main(void *p)
{
    struct follower *r = p;
    struct store *st = several_open(r->url);
    if (st == NULL) {
        r->errors++;
        return NULL;
    }
    int64_t cursor = 0;
    bool final_pass = false;
    for (;;) {
        bool done = atomic_load(r->done) != 0;
        struct store_inbox_page page;
        memset(&page, 0, sizeof page);
        int rc = st->ops->inbox_read(st, TA, "hot", cursor, 50, 0, &page);
        if (rc != ROOST_OK) {
            printf("follower: %s: %s\n", roost_err_name(rc), st->ops->errmsg(st));
            r->errors++;
            break;
        }
        for (size_t i = 0; i < page.events.len; i++) {
            if (page.events.items[i].seq != cursor + 1 && r->errors++ < 5) {
                printf("follower: after %lld got %lld\n", (long long)cursor,
                       (long long)page.events.items[i].seq);
            }
            cursor = page.events.items[i].seq;
            r->seen++;
        }
        if (page.head < cursor) {
            r->errors++;
        }
        bool empty = page.events.len == 0;
        store_events_cleanup(&page.events);
        if (empty && final_pass) {
            break;
        }
        final_pass = done && empty ? true : done;
        if (empty && !done) {
            sched_yield();
        }
    }
    store_close(st);
    return NULL;
}

void several_producers_no_gaps(const char *url, bool batched)
{
    pthread_t prod[PRODUCERS], reader;
    struct producer args[PRODUCERS];
    atomic_int done = 0;
    struct follower f = {.url = url, .done = &done};
    CHECK(pthread_create(&reader, NULL, follower_main, &f) == 0);
    for (int i = 0; i < PRODUCERS; i++) {
        /* Batched: half the producers, the other half one request per transaction. */
        args[i] = (struct producer){.url = url, .batched = batched && i % 2 == 0};
        CHECK(pthread_create(&prod[i], NULL, producer_main, &args[i]) == 0);
    }
    int errors = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        pthread_join(prod[i], NULL);
        errors += args[i].errors;
    }
    atomic_store(&done, 1);
    pthread_join(reader, NULL);
    CHECK(errors == 0);
    CHECK(f.errors == 0);
    CHECK(f.seen == PRODUCERS * PER_PRODUCER);
}

/* ---- (a') store producers and applications calling roost_publish, mixed: still no gaps ---- */

struct app_producer {
    const char *url;
    several_app_fn app;
    int errors;
};

static void *app_producer_main(void *p)
{
    struct app_producer *w = p;
    w->errors = w->app(w->url, SEVERAL_PER_APP);
    return NULL;
}

#define APP_PRODUCERS 4

void several_mixed_producers_no_gaps(const char *url, several_app_fn app)
{
    pthread_t prod[PRODUCERS], apps[APP_PRODUCERS], reader;
    struct producer args[PRODUCERS];
    struct app_producer app_args[APP_PRODUCERS];
    atomic_int done = 0;
    struct follower f = {.url = url, .done = &done};
    struct store *tailer = several_open(url);
    struct store_tail_pos pos = {0};
    struct store_touches t = {0};
    CHECK(tailer != NULL);
    if (tailer == NULL) {
        return;
    }
    CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0, &t), ROOST_OK);
    CHECK(pthread_create(&reader, NULL, follower_main, &f) == 0);
    for (int i = 0; i < PRODUCERS / 2; i++) {
        args[i] = (struct producer){.url = url};
        CHECK(pthread_create(&prod[i], NULL, producer_main, &args[i]) == 0);
    }
    for (int i = 0; i < APP_PRODUCERS; i++) {
        app_args[i] = (struct app_producer){.url = url, .app = app};
        CHECK(pthread_create(&apps[i], NULL, app_producer_main, &app_args[i]) == 0);
    }
    int errors = 0;
    for (int i = 0; i < PRODUCERS / 2; i++) {
        pthread_join(prod[i], NULL);
        errors += args[i].errors;
    }
    for (int i = 0; i < APP_PRODUCERS; i++) {
        pthread_join(apps[i], NULL);
        errors += app_args[i].errors;
    }
    atomic_store(&done, 1);
    pthread_join(reader, NULL);
    CHECK(errors == 0);
    CHECK(f.errors == 0);
    int64_t total = (PRODUCERS / 2) * PER_PRODUCER + APP_PRODUCERS * SEVERAL_PER_APP;
    CHECK(f.seen == total);
    /* Every commit is in the change log; the tailer ends at the final head. */
    CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0, &t), ROOST_OK);
    CHECK(several_touched(&t, "hot", total));
    store_touches_cleanup(&t);
    store_tail_pos_cleanup(&pos);
    store_close(tailer);
}

/* ---- (b) 4 competing claimers (and a producer still publishing): disjoint claims ---- */

#define CLAIMERS 4
#define PRELOADED 300
#define LATE 200
#define TOTAL_EVENTS (PRELOADED + LATE)

struct claimer {
    const char *url;
    atomic_int *claimed_total;
    atomic_int *producer_done;
    char (*ids)[STORE_EVENT_ID_LEN + 1];
    size_t n;
    int errors;
};

static void *claimer_main(void *p)
{
    struct claimer *c = p;
    struct store *st = several_open(c->url);
    if (st == NULL) {
        c->errors++;
        return NULL;
    }
    int idle = 0;
    while (atomic_load(c->claimed_total) < TOTAL_EVENTS && idle < 20000) {
        struct store_events evs = {0};
        int rc = st->ops->begin(st);
        if (rc == ROOST_OK) {
            rc = st->ops->claim(st, TA, "work", 7, 0, 60, "c", T0, &evs, NULL);
            rc = rc == ROOST_OK ? st->ops->commit(st) : rc;
            if (rc != ROOST_OK) {
                st->ops->rollback(st);
            }
        }
        if (rc == ROOST_ERETRY) {
            store_events_cleanup(&evs);
            continue;
        }
        if (rc != ROOST_OK) {
            printf("claimer: %s: %s\n", roost_err_name(rc), st->ops->errmsg(st));
            c->errors++;
            store_events_cleanup(&evs);
            break;
        }
        idle = evs.len == 0 ? idle + 1 : 0;
        for (size_t i = 0; i < evs.len && c->n < TOTAL_EVENTS; i++) {
            memcpy(c->ids[c->n++], evs.items[i].event_id, STORE_EVENT_ID_LEN + 1);
            /* Ack in its own transaction, as an SDK would after the work. */
            int arc = ROOST_ERETRY;
            for (int a = 0; a < 50 && arc == ROOST_ERETRY; a++) {
                arc = st->ops->begin(st);
                if (arc == ROOST_OK) {
                    arc = st->ops->ack(st, TA, "work", evs.items[i].event_id,
                                       evs.items[i].lease_token, T0, NULL);
                    arc = arc == ROOST_OK ? st->ops->commit(st) : arc;
                    if (arc != ROOST_OK) {
                        st->ops->rollback(st);
                    }
                }
            }
            if (arc != ROOST_OK) {
                c->errors++;
            }
        }
        atomic_fetch_add(c->claimed_total, (int)evs.len);
        store_events_cleanup(&evs);
        if (evs.len == 0) {
            sched_yield();
        }
    }
    store_close(st);
    return NULL;
}

struct late_producer {
    const char *url;
    atomic_int *done;
    int errors;
};

static void *late_producer_main(void *p)
{
    struct late_producer *lp = p;
    struct store *st = several_open(lp->url);
    for (int i = 0; st != NULL && i < LATE; i++) {
        struct store_published out;
        if (several_publish_retry(st, "work", NULL, T0, &out) != ROOST_OK) {
            lp->errors++;
            break;
        }
    }
    if (st == NULL) {
        lp->errors++;
    }
    store_close(st);
    atomic_store(lp->done, 1);
    return NULL;
}

static int id_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

void several_claimers_disjoint(const char *url)
{
    struct store *st = several_open(url);
    CHECK(st != NULL);
    if (st == NULL) {
        return;
    }
    for (int i = 0; i < PRELOADED; i++) {
        struct store_published out;
        CHECK_RC(st, several_publish_retry(st, "work", NULL, T0, &out), ROOST_OK);
    }
    atomic_int claimed = 0, producer_done = 0;
    struct claimer cs[CLAIMERS];
    pthread_t th[CLAIMERS], prod;
    struct late_producer lp = {.url = url, .done = &producer_done};
    CHECK(pthread_create(&prod, NULL, late_producer_main, &lp) == 0);
    for (int i = 0; i < CLAIMERS; i++) {
        cs[i] = (struct claimer){.url = url,
                                 .claimed_total = &claimed,
                                 .producer_done = &producer_done,
                                 .ids = calloc(TOTAL_EVENTS, STORE_EVENT_ID_LEN + 1)};
        CHECK(pthread_create(&th[i], NULL, claimer_main, &cs[i]) == 0);
    }
    pthread_join(prod, NULL);
    CHECK(lp.errors == 0);
    char(*all)[STORE_EVENT_ID_LEN + 1] = calloc(TOTAL_EVENTS * CLAIMERS, STORE_EVENT_ID_LEN + 1);
    size_t n = 0;
    int errors = 0;
    for (int i = 0; i < CLAIMERS; i++) {
        pthread_join(th[i], NULL);
        errors += cs[i].errors;
        CHECK(cs[i].n > 0); /* every claimer got a share: SKIP LOCKED spreads the work */
        memcpy(all[n], cs[i].ids, cs[i].n * sizeof all[0]);
        n += cs[i].n;
        free(cs[i].ids);
    }
    CHECK(errors == 0);
    CHECK(n == TOTAL_EVENTS);
    qsort(all, n, sizeof all[0], id_cmp);
    int dups = 0;
    for (size_t i = 1; i < n; i++) {
        dups += strcmp(all[i - 1], all[i]) == 0;
    }
    CHECK(dups == 0);
    free(all);
    /* Nothing left to claim, and every event is completed. */
    struct store_events left = {0};
    CHECK_RC(st, st->ops->begin(st), ROOST_OK);
    CHECK_RC(st, st->ops->claim(st, TA, "work", 100, 0, 60, "c", T0, &left, NULL), ROOST_OK);
    CHECK_RC(st, st->ops->commit(st), ROOST_OK);
    CHECK(left.len == 0);
    store_events_cleanup(&left);
    struct store_agent_stats stats[2];
    size_t na = 0;
    bool more = false;
    CHECK_RC(st, st->ops->agents_list(st, TA, STORE_SORT_AGENT, "", 0, 2, T0, stats, &na, &more),
             ROOST_OK);
    CHECK(na == 1 && stats[0].head == TOTAL_EVENTS && stats[0].pending == 0 &&
          stats[0].claimed == 0);
    store_close(st);
}

/* ---- two nodes running retention at once archive each row once ---- */

static int count_archived(void *ctx, const char *tenant_id, const struct store_event *ev)
{
    (void)tenant_id;
    (void)ev;
    (*(int *)ctx)++;
    return 0;
}

void several_retention_archives_once(const char *url)
{
    struct store *a = several_open(url), *b = several_open(url);
    if (a == NULL || b == NULL) {
        CHECK(!"connections");
        goto out;
    }
    struct store_published o;
    for (int i = 0; i < 20; i++) {
        CHECK_RC(a, several_publish_retry(a, i % 2 ? "ret1" : "ret2", NULL, T0, &o), ROOST_OK);
    }
    /* 40 days later everything is past retention.max_age_s and gets archived. */
    int n_a = 0, n_b = 0;
    struct store_retention_req ra = {.now_ms = T0 + 40LL * 86400 * 1000,
                                     .completed_s = 86400,
                                     .max_age_s = 30 * 86400,
                                     .batch = 100,
                                     .archive = count_archived,
                                     .archive_ctx = &n_a};
    struct store_retention_req rb = ra;
    rb.archive_ctx = &n_b;
    struct store_retention_result res_a, res_b;
    CHECK_RC(a, a->ops->begin(a), ROOST_OK);
    CHECK_RC(a, a->ops->retention(a, &ra, &res_a), ROOST_OK);
    /* Node A has not committed: node B passes its agents by instead of archiving them too. */
    CHECK_RC(b, b->ops->begin(b), ROOST_OK);
    CHECK_RC(b, b->ops->retention(b, &rb, &res_b), ROOST_OK);
    CHECK_RC(b, b->ops->commit(b), ROOST_OK);
    CHECK_RC(a, a->ops->commit(a), ROOST_OK);
    CHECK(res_a.deleted == 20 && n_a == 20);
    CHECK(res_b.deleted == 0 && n_b == 0);
    /* And once A has committed, there is nothing left for anyone. */
    n_b = 0;
    CHECK_RC(b, b->ops->begin(b), ROOST_OK);
    CHECK_RC(b, b->ops->retention(b, &rb, &res_b), ROOST_OK);
    CHECK_RC(b, b->ops->commit(b), ROOST_OK);
    CHECK(res_b.deleted == 0 && n_b == 0);
out:
    store_close(a);
    store_close(b);
}
