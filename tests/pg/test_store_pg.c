/* SPDX-License-Identifier: MIT */
/* PostgreSQL-only store tests, the cases the conformance suite (tests/store) cannot express:
 * several connections at once (producers, claimers, a cursor reader), the connection killed
 * under the store (pg_terminate_backend), a COMMIT whose answer is lost, concurrent migrations and
 * retention, applications publishing with roost_publish() in their own transactions. Each test
 * gets its own schema on the server of the URL given as argv[1] (scripts/postgres_test.sh). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/check.h"
#include "pg/pg_testutil.h"
#include "store/store.h"
#include "store/store_sql.h"

#include "common/banned.h"

#define T0 1700000000000LL
#define TA "tenant-a"

/* A store call's return code, with the store's error detail on failure. */
#define CHECK_RC(st, expr, want)                                                                   \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ == (want)) {                                                                       \
            check_pass();                                                                          \
        } else {                                                                                   \
            check_fail(__FILE__, __LINE__, "%s = %s, want %s (%s)", #expr, roost_err_name(rc_),    \
                       roost_err_name(want), (st)->ops->errmsg(st));                               \
        }                                                                                          \
    } while (0)

static struct store *open_conn(const char *url)
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
static int publish_retry(struct store *st, const char *agent, const char *idem, int64_t now,
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

static bool touched(const struct store_touches *t, const char *agent, int64_t head);

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
                        touched(&touches[3], "hot", s + 3);
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
    struct store *st = open_conn(w->url);
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
        int rc = publish_retry(st, "hot", NULL, T0, &out);
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
    struct store *st = open_conn(r->url);
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

static void producers_no_gaps(const char *url, bool batched)
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

static void test_store_pg_concurrent_producers_no_gaps(const char *url)
{
    producers_no_gaps(url, false);
}

/* The same through the group-commit path (publish_batch: several requests' rows in one multi-row
 * insert, seqs allocated per agent by one upsert) beside single publishes. */
static void test_store_pg_batched_producers_no_gaps(const char *url)
{
    producers_no_gaps(url, true);
}

/* ---- (a') store producers and applications calling roost_publish, mixed: still no gaps ---- */

#define APP_PRODUCERS 4

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
    struct store *st = open_conn(c->url);
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
    struct store *st = open_conn(lp->url);
    for (int i = 0; st != NULL && i < LATE; i++) {
        struct store_published out;
        if (publish_retry(st, "work", NULL, T0, &out) != ROOST_OK) {
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

static void test_store_pg_competing_claimers_disjoint(const char *url)
{
    struct store *st = open_conn(url);
    CHECK(st != NULL);
    if (st == NULL) {
        return;
    }
    for (int i = 0; i < PRELOADED; i++) {
        struct store_published out;
        CHECK_RC(st, publish_retry(st, "work", NULL, T0, &out), ROOST_OK);
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

/* ---- (c) an application's transaction: business row + CALL roost_publish ---- */

static bool touched(const struct store_touches *t, const char *agent, int64_t head)
{
    for (size_t i = 0; i < t->len; i++) {
        if (strcmp(t->items[i].agent_id, agent) == 0 && strcmp(t->items[i].tenant_id, TA) == 0) {
            return head < 0 || t->items[i].head == head;
        }
    }
    return false;
}

/* ---- two nodes running retention at once archive each row once ---- */

static int count_archived(void *ctx, const char *tenant_id, const struct store_event *ev)
{
    (void)tenant_id;
    (void)ev;
    (*(int *)ctx)++;
    return 0;
}

static void test_store_pg_concurrent_retention_archives_once(const char *url)
{
    struct store *a = open_conn(url), *b = open_conn(url);
    if (a == NULL || b == NULL) {
        CHECK(!"connections");
        goto out;
    }
    struct store_published o;
    for (int i = 0; i < 20; i++) {
        CHECK_RC(a, publish_retry(a, i % 2 ? "ret1" : "ret2", NULL, T0, &o), ROOST_OK);
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

static bool valid_event_id(const char *s)
{
    static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    if (s == NULL || strlen(s) != STORE_EVENT_ID_LEN || strncmp(s, "evt_", 4) != 0) {
        return false;
    }
    for (size_t i = 4; i < STORE_EVENT_ID_LEN; i++) {
        if (strchr(alphabet, s[i]) == NULL) {
            return false;
        }
    }
    return s[4] <= '7'; /* a 48-bit timestamp: the first char carries 3 bits */
}

/* Runs `SELECT * FROM roost_publish(args)` on db: 0 with the event id and seq, else -1 (the
 * error printed unless quiet). */
static int app_publish(PGconn *db, const char *args, char *id, size_t cap, long long *seq,
                       bool quiet)
{
    char sql[1024];
    snprintf(sql, sizeof sql, "SELECT event_id, seq FROM roost_publish(%s)", args);
    PGresult *res = PQexec(db, sql);
    int rc = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 ? 0 : -1;
    if (rc == 0) {
        snprintf(id, cap, "%s", PQgetvalue(res, 0, 0));
        *seq = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    } else if (!quiet) {
        printf("roost_publish: %s\n", PQerrorMessage(db));
    }
    PQclear(res);
    return rc;
}

/* An application's transaction: its business row and roost_publish commit together, and the
 * tailer of another connection hears of it; a rollback leaves neither and tells nobody. */
static void test_store_pg_application_transaction_publish(const char *url)
{
    struct store *st = open_conn(url), *tailer = open_conn(url);
    PGconn *app = pg_testutil_connect(url);
    CHECK(st != NULL && tailer != NULL && app != NULL);
    if (st == NULL || tailer == NULL || app == NULL) {
        goto out;
    }
    struct store_tail_pos pos = {0};
    struct store_touches t = {0};
    CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0, &t), ROOST_OK);
    CHECK_EQ(pg_testutil_exec(app, "CREATE TABLE orders (id INT PRIMARY KEY)"), 0);
    CHECK_EQ(pg_testutil_exec(app, "BEGIN"), 0);
    CHECK_EQ(pg_testutil_exec(app, "INSERT INTO orders VALUES (1)"), 0);
    char id[64] = "", id2[64] = "";
    long long seq = 0, seq2 = 0;
    CHECK_EQ(app_publish(app, "'tenant-a', 'app', '{\"order\": 1}', 0, 'corr-1', 'k-1', 0, 0", id,
                         sizeof id, &seq, false),
             0);
    CHECK(valid_event_id(id) && seq == 1);
    /* The same key again in the same transaction: the first event, nothing written. */
    CHECK_EQ(app_publish(app, "'tenant-a', 'app', '{\"order\": 9}', 0, NULL, 'k-1', 0, 0", id2,
                         sizeof id2, &seq2, false),
             0);
    CHECK(strcmp(id, id2) == 0 && seq2 == 1);
    /* Not committed yet: invisible to the store. */
    int64_t head = -1;
    CHECK_RC(st, st->ops->head(st, TA, "app", &head), ROOST_OK);
    CHECK(head == 0);
    CHECK_EQ(pg_testutil_exec(app, "COMMIT"), 0);
    struct store_event ev;
    bool found = false;
    found = st->ops->event_get(st, TA, id, &ev) == ROOST_OK;
    CHECK(found && ev.seq == 1 && ev.status == STORE_PENDING && ev.payload != NULL &&
          strcmp(ev.payload, "{\"order\": 1}") == 0 && ev.correlation_id != NULL &&
          strcmp(ev.correlation_id, "corr-1") == 0);
    if (found) {
        store_event_cleanup(&ev);
    }
    for (int i = 0; i < 500 && t.len == 0; i++) {
        usleep(i > 0 ? 10000 : 0);
        CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0, &t), ROOST_OK);
    }
    CHECK(touched(&t, "app", 1));
    store_touches_cleanup(&t);

    /* Rolled back: no row, no seq taken, and nothing for the tailer. */
    CHECK_EQ(pg_testutil_exec(app, "BEGIN"), 0);
    CHECK_EQ(pg_testutil_exec(app, "INSERT INTO orders VALUES (2)"), 0);
    CHECK_EQ(app_publish(app, "'tenant-a', 'app', '{\"order\": 2}', 0, NULL, NULL, 0, 0", id,
                         sizeof id, &seq, false),
             0);
    CHECK(seq == 2);
    CHECK_EQ(pg_testutil_exec(app, "ROLLBACK"), 0);
    CHECK_RC(st, st->ops->head(st, TA, "app", &head), ROOST_OK);
    CHECK(head == 1);
    CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0 + 5000, &t), ROOST_OK);
    CHECK(t.len == 0);

    /* Scheduled and expiring; bad arguments raise and the caller's transaction decides. */
    CHECK_EQ(app_publish(app, "'tenant-a', 'app', '{}', 5, NULL, NULL, 60000, 120000", id,
                         sizeof id, &seq, false),
             0);
    found = st->ops->event_get(st, TA, id, &ev) == ROOST_OK;
    CHECK(found && ev.seq == 2 && ev.status == STORE_SCHEDULED && ev.priority == 5 &&
          ev.expires_at_ms == ev.created_at_ms + 120000 &&
          ev.available_at_ms == ev.created_at_ms + 60000);
    if (found) {
        store_event_cleanup(&ev);
    }
    CHECK(app_publish(app, "'tenant-a', 'app', '[1]', 0, NULL, NULL, 0, 0", id, sizeof id, &seq,
                      true) != 0);
    CHECK(strstr(PQerrorMessage(app), "payload must be a JSON object") != NULL);
    CHECK(app_publish(app, "'tenant a', 'app', '{}', 0, NULL, NULL, 0, 0", id, sizeof id, &seq,
                      true) != 0);
    CHECK(app_publish(app, "'tenant-a', 'app', '{}', 101, NULL, NULL, 0, 0", id, sizeof id, &seq,
                      true) != 0);
    store_tail_pos_cleanup(&pos);
out:
    PQfinish(app);
    store_close(st);
    store_close(tailer);
}

/* ---- the connection killed under the store ---- */

/* Terminates the other sessions of this test (its application_name: other tests share the
 * server). */
static void kill_others(PGconn *admin)
{
    pg_testutil_exec(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                            " AND application_name = current_setting('application_name')");
}

static void test_store_pg_lost_connection_reconnects(const char *schema_url)
{
    char url[1100];
    snprintf(url, sizeof url, "%s&application_name=roost_lost_%d", schema_url, (int)getpid());
    struct store *st = open_conn(url);
    PGconn *admin = pg_testutil_connect(url);
    CHECK(st != NULL && admin != NULL);
    if (st == NULL || admin == NULL) {
        goto out;
    }
    struct store_published out;
    CHECK_RC(st, publish_retry(st, "k", NULL, T0, &out), ROOST_OK);

    /* Outside a transaction: the next read reconnects by itself. */
    kill_others(admin);
    int64_t head = -1;
    CHECK_RC(st, st->ops->head(st, TA, "k", &head), ROOST_OK);
    CHECK(head == 1);

    /* Inside one: the transaction is gone, the caller hears ROOST_ERETRY and replays it. */
    const char *r[] = {"k"};
    struct store_publish_item item = {.recipients = r, .n_recipients = 1, .payload = "{}"};
    struct store_publish_req req = {.tenant_id = TA, .items = &item, .n_items = 1, .now_ms = T0};
    CHECK_RC(st, st->ops->begin(st), ROOST_OK);
    CHECK_RC(st, st->ops->publish(st, &req, &out, NULL), ROOST_OK);
    kill_others(admin);
    int rc = st->ops->publish(st, &req, &out, NULL);
    CHECK(rc == ROOST_ERETRY);
    CHECK(st->ops->commit(st) == ROOST_ERETRY);
    CHECK_RC(st, st->ops->rollback(st), ROOST_OK);
    CHECK(st->ops->ping(st));
    CHECK_RC(st, publish_retry(st, "k", NULL, T0, &out), ROOST_OK);
    CHECK(out.seq == 2);
    kill_others(admin);
    CHECK(st->ops->ping(st)); /* ping reconnects when the server is up */
out:
    PQfinish(admin);
    store_close(st);
}

/* A transaction that failed inside (an error the caller went on after) is never reported as
 * committed: PostgreSQL answers the COMMIT of a failed transaction with ROLLBACK. */
static void test_store_pg_failed_transaction_never_commits(const char *url)
{
    struct store *st = open_conn(url);
    CHECK(st != NULL);
    if (st == NULL) {
        return;
    }
    const char *r[] = {"f"};
    struct store_publish_item item = {.recipients = r, .n_recipients = 1, .payload = "{}"};
    struct store_publish_req req = {.tenant_id = TA, .items = &item, .n_items = 1, .now_ms = T0};
    struct store_published out;
    CHECK_RC(st, st->ops->begin(st), ROOST_OK);
    CHECK_RC(st, st->ops->publish(st, &req, &out, NULL), ROOST_OK);
    /* Bytes that are not UTF-8: the server refuses the row, and the transaction is aborted. */
    item.payload = "{\"x\":\"\xff\"}";
    CHECK(st->ops->publish(st, &req, &out, NULL) == ROOST_ESTORE);
    CHECK(st->ops->commit(st) != ROOST_OK);
    st->ops->rollback(st);
    int64_t head = -1;
    CHECK_RC(st, st->ops->head(st, TA, "f", &head), ROOST_OK);
    CHECK(head == 0);
    store_close(st);
}

/* ---- concurrent migrations apply each file once ---- */

#define MIGRATORS 4

struct migrator {
    const char *url;
    int rc;
};

static void *migrator_main(void *p)
{
    struct migrator *m = p;
    struct store *st = open_conn(m->url);
    m->rc = st != NULL ? st->ops->migrate(st) : ROOST_ECONNECT;
    if (m->rc != ROOST_OK && st != NULL) {
        printf("migrate: %s: %s\n", roost_err_name(m->rc), st->ops->errmsg(st));
    }
    store_close(st);
    return NULL;
}

static void test_store_pg_concurrent_migrate_applies_once(const char *url)
{
    char fresh[1024];
    CHECK(pg_testutil_fresh_schema(url, "migrate_race", fresh, sizeof fresh) == 0);
    struct migrator ms[MIGRATORS];
    pthread_t th[MIGRATORS];
    for (int i = 0; i < MIGRATORS; i++) {
        ms[i] = (struct migrator){.url = fresh};
        CHECK(pthread_create(&th[i], NULL, migrator_main, &ms[i]) == 0);
    }
    for (int i = 0; i < MIGRATORS; i++) {
        pthread_join(th[i], NULL);
        CHECK(ms[i].rc == ROOST_OK);
    }
    PGconn *db = pg_testutil_connect(fresh);
    CHECK(db != NULL);
    if (db != NULL) {
        PGresult *res = PQexec(db, "SELECT count(*) = count(DISTINCT version), min(version)"
                                   " FROM schema_migrations");
        CHECK(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
              strcmp(PQgetvalue(res, 0, 0), "t") == 0 && strcmp(PQgetvalue(res, 0, 1), "1") == 0);
        PQclear(res);
        PQfinish(db);
    }
    struct store *st = open_conn(fresh);
    struct store_published out;
    CHECK(st != NULL && publish_retry(st, "m", NULL, T0, &out) == ROOST_OK && out.seq == 1);
    store_close(st);
    pg_testutil_drop_schema(fresh);
}

/* ---- runner ---- */

struct test {
    const char *name;
    void (*fn)(const char *url);
};

#define TEST(fn)                                                                                   \
    {                                                                                              \
#fn, fn                                                                                    \
    }

static const struct test tests[] = {
    TEST(test_store_pg_concurrent_producers_no_gaps),
    TEST(test_store_pg_batched_producers_no_gaps),
    TEST(test_store_pg_competing_claimers_disjoint),
    TEST(test_store_pg_application_transaction_publish),
    TEST(test_store_pg_lost_connection_reconnects),
    TEST(test_store_pg_failed_transaction_never_commits),
    TEST(test_store_pg_concurrent_migrate_applies_once),
    TEST(test_store_pg_concurrent_retention_archives_once),
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s postgres://URL [TEST_NAME_SUBSTRING]\n", argv[0]);
        return 2;
    }
    const char *only = argc > 2 ? argv[2] : NULL;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (only != NULL && strstr(tests[i].name, only) == NULL) {
            continue;
        }
        char url[1024];
        int failed_before = check_begin(tests[i].name);
        struct store *st = NULL;
        if (pg_testutil_fresh_schema(argv[1], check_test + 14, url, sizeof url) != 0 ||
            (st = open_conn(url)) == NULL || st->ops->migrate(st) != ROOST_OK) {
            check_fail(__FILE__, __LINE__, "fixture setup failed%s%s", st ? ": " : "",
                       st ? st->ops->errmsg(st) : "");
        } else {
            tests[i].fn(url);
        }
        store_close(st);
        pg_testutil_drop_schema(url);
        check_end(failed_before);
    }
    return check_summary();
}
