/* SPDX-License-Identifier: MIT */
/* MariaDB-only store tests, the cases the conformance suite (tests/store) cannot express: several
 * connections at once (producers, claimers, a cursor reader), applications writing through CALL
 * roost_publish in their own transactions, the tailer under out-of-order commits, deadlocks, a
 * connection killed under the store, the server going away, concurrent migrations and retention.
 * Each test gets its own database on the server of the URL given as argv[1]
 * (scripts/mariadb_test.sh). The URL parser's tests need no server: tests/unit. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/check.h"
#include "mysql/mysql_testutil.h"
#include "store/several_writers.h"
#include "store/store.h"
#include "store/store_sql.h"

#include "common/banned.h"

/* ---- several connections: the tests every dialect with several writers shares ---- */

static void test_store_mysql_concurrent_producers_no_gaps(const char *url)
{
    several_producers_no_gaps(url, false);
}

/* The same through the group-commit path (publish_batch: several requests' rows in one multi-row
 * insert, seqs allocated per agent by one upsert) beside single publishes. */
static void test_store_mysql_batched_producers_no_gaps(const char *url)
{
    several_producers_no_gaps(url, true);
}

/* Applications publish with CALL roost_publish in transactions of their own. */
static int app_publishes(const char *url, int n)
{
    MYSQL *db = mysql_testutil_connect(url);
    int errors = 0;
    for (int i = 0; db != NULL && i < n; i++) {
        for (int attempt = 0;; attempt++) {
            if (mysql_query(db, "START TRANSACTION") == 0 &&
                mysql_query(db, "CALL roost_publish('" TA "', 'hot', '{\"app\": true}', 0, NULL,"
                                " NULL, 0, 0, @id, @seq)") == 0 &&
                mysql_query(db, "COMMIT") == 0) {
                break;
            }
            unsigned e = mysql_errno(db);
            mysql_query(db, "ROLLBACK");
            if ((e != 1213 && e != 1205) || attempt == 100) {
                printf("app producer: %s (%u)\n", mysql_error(db), e);
                errors++;
                break;
            }
        }
    }
    if (db == NULL) {
        errors = n;
    }
    mysql_close(db);
    return errors;
}

static void test_store_mysql_mixed_producers_no_gaps(const char *url)
{
    several_mixed_producers_no_gaps(url, app_publishes);
}

static void test_store_mysql_competing_claimers_disjoint(const char *url)
{
    several_claimers_disjoint(url);
}

static void test_store_mysql_concurrent_retention_archives_once(const char *url)
{
    several_retention_archives_once(url);
}

/* ---- (c) an application's transaction: business row + CALL roost_publish ---- */

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

/* Runs `SELECT @id, @seq` on db into id/seq. */
static int out_params(MYSQL *db, char *id, size_t cap, long long *seq)
{
    if (mysql_query(db, "SELECT @id, @seq") != 0) {
        printf("select out params: %s\n", mysql_error(db));
        return -1;
    }
    MYSQL_RES *res = mysql_store_result(db);
    MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
    int rc = row != NULL && row[0] != NULL && row[1] != NULL ? 0 : -1;
    if (rc == 0) {
        snprintf(id, cap, "%s", row[0]);
        *seq = strtoll(row[1], NULL, 10);
    }
    if (res != NULL) {
        mysql_free_result(res);
    }
    return rc;
}

static void test_store_mysql_application_transaction_publish(const char *url)
{
    struct store *st = several_open(url);
    MYSQL *app = mysql_testutil_connect(url);
    CHECK(st != NULL && app != NULL);
    if (st == NULL || app == NULL) {
        store_close(st);
        if (app != NULL) {
            mysql_close(app);
        }
        return;
    }
    struct store_tail_pos pos = {0};
    struct store_touches t = {0};
    CHECK(st->ops->tail != NULL);
    CHECK_RC(st, st->ops->tail(st, &pos, T0, &t), ROOST_OK); /* starts at the log's end */
    CHECK(t.len == 0);
    CHECK(mysql_testutil_exec(app, "CREATE TABLE orders (id INT PRIMARY KEY) ENGINE=InnoDB") == 0);

    /* Commit: the business row and the event become visible together. */
    CHECK(mysql_testutil_exec(app, "START TRANSACTION") == 0);
    CHECK(mysql_testutil_exec(app, "INSERT INTO orders VALUES (1)") == 0);
    CHECK(mysql_testutil_exec(app, "CALL roost_publish('" TA "', 'app', '{\"order\": 1}', 5,"
                                   " 'corr-1', 'order-1', 0, 0, @id, @seq)") == 0);
    char id[64] = "";
    long long seq = 0;
    CHECK(out_params(app, id, sizeof id, &seq) == 0);
    CHECK(seq == 1 && valid_event_id(id));
    struct store_inbox_page page;
    memset(&page, 0, sizeof page);
    CHECK_RC(st, st->ops->inbox_read(st, TA, "app", 0, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 0); /* not committed yet */
    store_events_cleanup(&page.events);
    CHECK(mysql_testutil_exec(app, "COMMIT") == 0);

    memset(&page, 0, sizeof page);
    CHECK_RC(st, st->ops->inbox_read(st, TA, "app", 0, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 1 && page.head == 1);
    if (page.events.len == 1) {
        struct store_event *ev = &page.events.items[0];
        CHECK(strcmp(ev->event_id, id) == 0 && ev->status == STORE_PENDING && ev->priority == 5);
        CHECK(ev->payload != NULL && strcmp(ev->payload, "{\"order\":1}") == 0);
        CHECK(ev->correlation_id != NULL && strcmp(ev->correlation_id, "corr-1") == 0);
        CHECK(ev->expires_at_ms == 0 && ev->created_at_ms > T0);
    }
    store_events_cleanup(&page.events);
    CHECK_RC(st, st->ops->tail(st, &pos, T0, &t), ROOST_OK);
    CHECK(t.len == 1 && several_touched(&t, "app", 1));
    store_touches_cleanup(&t);

    /* The same idempotency key returns the existing event and writes nothing. */
    CHECK(mysql_testutil_exec(app, "CALL roost_publish('" TA "', 'app', '{}', 0, NULL,"
                                   " 'order-1', 0, 0, @id, @seq)") == 0);
    char id2[64] = "";
    long long seq2 = 0;
    CHECK(out_params(app, id2, sizeof id2, &seq2) == 0);
    CHECK(strcmp(id, id2) == 0 && seq2 == 1);
    int64_t head = -1;
    CHECK_RC(st, st->ops->head(st, TA, "app", &head), ROOST_OK);
    CHECK(head == 1);

    /* Rollback: no business row, no event, no change for the tailer. */
    CHECK(mysql_testutil_exec(app, "START TRANSACTION") == 0);
    CHECK(mysql_testutil_exec(app, "INSERT INTO orders VALUES (2)") == 0);
    CHECK(mysql_testutil_exec(app, "CALL roost_publish('" TA "', 'app2', '{\"order\": 2}', 0,"
                                   " NULL, NULL, 0, 0, @id, @seq)") == 0);
    CHECK(mysql_testutil_exec(app, "ROLLBACK") == 0);
    CHECK_RC(st, st->ops->head(st, TA, "app2", &head), ROOST_OK);
    CHECK(head == 0);
    CHECK_RC(st, st->ops->tail(st, &pos, T0, &t), ROOST_OK);
    CHECK(t.len == 0);
    CHECK(mysql_query(app, "SELECT count(*) FROM orders") == 0);
    MYSQL_RES *res = mysql_store_result(app);
    MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
    CHECK(row != NULL && strcmp(row[0], "1") == 0);
    if (res != NULL) {
        mysql_free_result(res);
    }

    /* A delayed event is scheduled; a bad payload is refused. */
    CHECK(mysql_testutil_exec(app, "CALL roost_publish('" TA "', 'app', '{}', 0, NULL, NULL,"
                                   " 60000, 1000, @id, @seq)") == 0);
    memset(&page, 0, sizeof page);
    CHECK_RC(st, st->ops->inbox_read(st, TA, "app", 1, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 1 && page.events.items[0].status == STORE_SCHEDULED &&
          page.events.items[0].available_at_ms == page.events.items[0].created_at_ms + 60000 &&
          page.events.items[0].expires_at_ms == page.events.items[0].created_at_ms + 1000);
    store_events_cleanup(&page.events);
    CHECK(mysql_query(app, "CALL roost_publish('" TA "', 'app', '[1]', 0, NULL, NULL, 0, 0, @id,"
                           " @seq)") != 0);
    store_tail_pos_cleanup(&pos);
    store_touches_cleanup(&t);
    mysql_close(app);
    store_close(st);
}

/* ---- (d) the tailer misses nothing when commits come out of id order ---- */

static void test_store_mysql_tail_out_of_order_commits(const char *url)
{
    struct store *tailer = several_open(url), *a = several_open(url), *b = several_open(url);
    MYSQL *app = mysql_testutil_connect(url);
    CHECK(tailer != NULL && a != NULL && b != NULL && app != NULL);
    if (tailer == NULL || a == NULL || b == NULL || app == NULL) {
        goto out;
    }
    struct store_tail_pos pos = {0};
    struct store_touches t = {0};
    struct store_published out;
    /* The tenant row exists (committed) before the transactions race. */
    CHECK_RC(a, several_publish_retry(a, "other", NULL, T0, &out), ROOST_OK);
    CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0, &t), ROOST_OK);

    /* roostd writes its change rows with its COMMIT, so an open roostd transaction holds no
     * change id (no gap); an application transaction around CALL roost_publish does: it takes the
     * lower id and holds it open while b commits a later one. */
    const char *ra[] = {"held"}, *rb[] = {"fast"};
    struct store_publish_item ia = {.recipients = ra, .n_recipients = 1, .payload = "{}"};
    struct store_publish_item ib = {.recipients = rb, .n_recipients = 1, .payload = "{}"};
    struct store_publish_req qa = {.tenant_id = TA, .items = &ia, .n_items = 1, .now_ms = T0};
    struct store_publish_req qb = {.tenant_id = TA, .items = &ib, .n_items = 1, .now_ms = T0};
#define APP_SLOW "CALL roost_publish('" TA "', 'slow', '{}', 0, NULL, NULL, 0, 0, @id, @seq)"
    CHECK(mysql_testutil_exec(app, "START TRANSACTION") == 0);
    CHECK(mysql_testutil_exec(app, APP_SLOW) == 0);
    CHECK_RC(a, a->ops->begin(a), ROOST_OK);
    CHECK_RC(a, a->ops->publish(a, &qa, &out, NULL), ROOST_OK);
    CHECK_RC(b, b->ops->begin(b), ROOST_OK);
    CHECK_RC(b, b->ops->publish(b, &qb, &out, NULL), ROOST_OK);
    CHECK_RC(b, b->ops->commit(b), ROOST_OK);

    CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0 + 10, &t), ROOST_OK);
    CHECK(t.len == 1 && several_touched(&t, "fast", 1) && !several_touched(&t, "slow", -1));
    CHECK(pos.n_gaps == 1);
    store_touches_cleanup(&t);
    CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0 + 20, &t), ROOST_OK);
    CHECK(t.len == 0);

    CHECK(mysql_testutil_exec(app, "COMMIT") == 0);
    CHECK_RC(a, a->ops->commit(a), ROOST_OK);
    CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0 + 30, &t), ROOST_OK);
    CHECK(t.len == 2 && several_touched(&t, "slow", 1) && several_touched(&t, "held", 1));
    CHECK(pos.n_gaps == 0);
    store_touches_cleanup(&t);

    /* A tailer that starts while a transaction is open below the end of the log still gets it. */
    struct store_tail_pos late = {0};
    CHECK(mysql_testutil_exec(app, "START TRANSACTION") == 0);
    CHECK(mysql_testutil_exec(app, APP_SLOW) == 0);
    CHECK_RC(b, b->ops->begin(b), ROOST_OK);
    CHECK_RC(b, b->ops->publish(b, &qb, &out, NULL), ROOST_OK);
    CHECK_RC(b, b->ops->commit(b), ROOST_OK);
    CHECK_RC(tailer, tailer->ops->tail(tailer, &late, T0 + 31, &t), ROOST_OK);
    CHECK(t.len == 0 && late.n_gaps == 1);
    CHECK(mysql_testutil_exec(app, "COMMIT") == 0);
    CHECK_RC(tailer, tailer->ops->tail(tailer, &late, T0 + 32, &t), ROOST_OK);
    CHECK(t.len == 1 && several_touched(&t, "slow", 2) && late.n_gaps == 0);
    store_touches_cleanup(&t);
    store_tail_pos_cleanup(&late);
    CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0 + 33, &t), ROOST_OK);
    CHECK(t.len == 2 && several_touched(&t, "slow", 2) && several_touched(&t, "fast", 2));
    store_touches_cleanup(&t);

    /* A rolled-back transaction leaves a gap that is given up after STORE_TAIL_GAP_MS; a roostd
     * transaction rolled back leaves none. */
    CHECK(mysql_testutil_exec(app, "START TRANSACTION") == 0);
    CHECK(mysql_testutil_exec(app, APP_SLOW) == 0);
    CHECK(mysql_testutil_exec(app, "ROLLBACK") == 0);
    CHECK_RC(a, a->ops->begin(a), ROOST_OK);
    CHECK_RC(a, a->ops->publish(a, &qa, &out, NULL), ROOST_OK);
    CHECK_RC(a, a->ops->rollback(a), ROOST_OK);
    CHECK_RC(b, b->ops->begin(b), ROOST_OK);
    CHECK_RC(b, b->ops->publish(b, &qb, &out, NULL), ROOST_OK);
    CHECK_RC(b, b->ops->commit(b), ROOST_OK);
    CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0 + 40, &t), ROOST_OK);
    CHECK(t.len == 1 && several_touched(&t, "fast", 3) && pos.n_gaps == 1);
    store_touches_cleanup(&t);
    CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0 + 40 + STORE_TAIL_GAP_MS, &t), ROOST_OK);
    CHECK(t.len == 0 && pos.n_gaps == 0);
#undef APP_SLOW

    /* Other touch-producing ops write the log too: a release back to pending. */
    struct store_events evs = {0};
    CHECK_RC(a, a->ops->begin(a), ROOST_OK);
    CHECK_RC(a, a->ops->claim(a, TA, "fast", 1, 0, 60, "", T0, &evs, NULL), ROOST_OK);
    CHECK_RC(a, a->ops->commit(a), ROOST_OK);
    CHECK(evs.len == 1);
    if (evs.len == 1) {
        CHECK_RC(a, a->ops->begin(a), ROOST_OK);
        CHECK_RC(a,
                 a->ops->release(a, TA, "fast", evs.items[0].event_id, evs.items[0].lease_token,
                                 STORE_RELEASE_TRANSIENT, 0, NULL, 5, T0, NULL, NULL),
                 ROOST_OK);
        CHECK_RC(a, a->ops->commit(a), ROOST_OK);
        CHECK_RC(tailer, tailer->ops->tail(tailer, &pos, T0 + 50 + STORE_TAIL_GAP_MS, &t),
                 ROOST_OK);
        CHECK(t.len == 1 && several_touched(&t, "fast", 3));
    }
    store_events_cleanup(&evs);
    store_touches_cleanup(&t);
    store_tail_pos_cleanup(&pos);

    /* Retention prunes the change log (rows older than 10 minutes), in bounded batches. */
    struct store_retention_req rq = {
        .now_ms = T0 + 11 * 60 * 1000, .completed_s = 7 * 86400, .max_age_s = 0, .batch = 100};
    struct store_retention_result rr;
    CHECK_RC(a, a->ops->begin(a), ROOST_OK);
    CHECK_RC(a, a->ops->retention(a, &rq, &rr), ROOST_OK);
    CHECK_RC(a, a->ops->commit(a), ROOST_OK);
    CHECK(mysql_query(app, "SELECT count(*) FROM roost_changes WHERE at_ms <= 1700000000100") == 0);
    MYSQL_RES *res = mysql_store_result(app);
    MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
    CHECK(row != NULL && strcmp(row[0], "0") == 0);
    if (res != NULL) {
        mysql_free_result(res);
    }
out:
    if (app != NULL) {
        mysql_close(app);
    }
    store_close(a);
    store_close(b);
    store_close(tailer);
}

/* ---- a connection killed under the store: reconnect, never crash ---- */

static void kill_others(MYSQL *admin, const char *db)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '%s' AND ID <> "
             "CONNECTION_ID()",
             db);
    CHECK(mysql_query(admin, sql) == 0);
    MYSQL_RES *res = mysql_store_result(admin);
    MYSQL_ROW row;
    while (res != NULL && (row = mysql_fetch_row(res)) != NULL) {
        snprintf(sql, sizeof sql, "KILL CONNECTION %s", row[0]);
        mysql_query(admin, sql);
    }
    if (res != NULL) {
        mysql_free_result(res);
    }
}

static void test_store_mysql_lost_connection_reconnects(const char *url)
{
    struct store *st = several_open(url);
    MYSQL *admin = mysql_testutil_connect(url);
    CHECK(st != NULL && admin != NULL);
    if (st == NULL || admin == NULL) {
        goto out;
    }
    char db[128];
    const char *slash = strrchr(url, '/');
    snprintf(db, sizeof db, "%s", slash + 1);
    struct store_published out;
    CHECK_RC(st, several_publish_retry(st, "k", NULL, T0, &out), ROOST_OK);

    /* Outside a transaction: the next read reconnects by itself. */
    kill_others(admin, db);
    int64_t head = -1;
    CHECK_RC(st, st->ops->head(st, TA, "k", &head), ROOST_OK);
    CHECK(head == 1);

    /* Inside one: the transaction is gone, the caller hears ROOST_ERETRY and replays it. */
    const char *r[] = {"k"};
    struct store_publish_item item = {.recipients = r, .n_recipients = 1, .payload = "{}"};
    struct store_publish_req req = {.tenant_id = TA, .items = &item, .n_items = 1, .now_ms = T0};
    CHECK_RC(st, st->ops->begin(st), ROOST_OK);
    CHECK_RC(st, st->ops->publish(st, &req, &out, NULL), ROOST_OK);
    kill_others(admin, db);
    int rc = st->ops->publish(st, &req, &out, NULL);
    CHECK(rc == ROOST_ERETRY);
    CHECK(st->ops->commit(st) == ROOST_ERETRY);
    CHECK_RC(st, st->ops->rollback(st), ROOST_OK);
    CHECK(st->ops->ping(st));
    CHECK_RC(st, several_publish_retry(st, "k", NULL, T0, &out), ROOST_OK);
    CHECK(out.seq == 2);
    kill_others(admin, db);
    CHECK(st->ops->ping(st)); /* ping reconnects when the server is up */
out:
    if (admin != NULL) {
        mysql_close(admin);
    }
    store_close(st);
}

/* ---- a deadlock: the victim's whole transaction is gone, and the store says so ---- */

struct blocked_publish {
    struct store *st;
    const char *agent;
    int rc;
};

static int publish_in_tx(struct store *st, const char *agent)
{
    const char *r[] = {agent};
    struct store_publish_item item = {.recipients = r, .n_recipients = 1, .payload = "{}"};
    struct store_publish_req req = {.tenant_id = TA, .items = &item, .n_items = 1, .now_ms = T0};
    struct store_published out;
    return st->ops->publish(st, &req, &out, NULL);
}

static void *blocked_publish_main(void *p)
{
    struct blocked_publish *bp = p;
    bp->rc = publish_in_tx(bp->st, bp->agent);
    return NULL;
}

static void test_store_mysql_deadlock_surfaces_as_retry(const char *url)
{
    struct store *a = several_open(url), *b = several_open(url);
    CHECK(a != NULL && b != NULL);
    if (a == NULL || b == NULL) {
        goto out;
    }
    struct store_published out;
    CHECK_RC(a, several_publish_retry(a, "d1", NULL, T0, &out),
             ROOST_OK); /* tenant and agents exist */
    CHECK_RC(a, several_publish_retry(a, "d2", NULL, T0, &out), ROOST_OK);
    CHECK_RC(a, a->ops->begin(a), ROOST_OK);
    CHECK_RC(a, publish_in_tx(a, "d1"), ROOST_OK);
    CHECK_RC(b, b->ops->begin(b), ROOST_OK);
    CHECK_RC(b, publish_in_tx(b, "d2"), ROOST_OK);
    struct blocked_publish bp = {.st = b, .agent = "d1"};
    pthread_t th;
    /* Whichever of the two crossing requests comes first waits for the other's lock; the second
     * closes the cycle, and InnoDB picks a victim. */
    CHECK(pthread_create(&th, NULL, blocked_publish_main, &bp) == 0);
    int rc_a = publish_in_tx(a, "d2");
    pthread_join(th, NULL);
    CHECK((rc_a == ROOST_ERETRY) != (bp.rc == ROOST_ERETRY));
    CHECK(rc_a == ROOST_OK || bp.rc == ROOST_OK);
    struct store *victim = rc_a == ROOST_ERETRY ? a : b, *winner = victim == a ? b : a;
    /* The victim's earlier work is gone too: it must not commit (that would hide the loss), and
     * nothing more runs in the dead transaction. */
    CHECK(victim->ops->savepoint(victim) == ROOST_ERETRY);
    CHECK(victim->ops->commit(victim) == ROOST_ERETRY);
    CHECK_RC(victim, victim->ops->rollback(victim), ROOST_OK);
    CHECK_RC(winner, winner->ops->commit(winner), ROOST_OK);
    /* Replayed as a unit, as the server's writer does on ROOST_ERETRY. */
    CHECK_RC(victim, victim->ops->begin(victim), ROOST_OK);
    CHECK_RC(victim, publish_in_tx(victim, "d1"), ROOST_OK);
    CHECK_RC(victim, publish_in_tx(victim, "d2"), ROOST_OK);
    CHECK_RC(victim, victim->ops->commit(victim), ROOST_OK);
    int64_t h1 = -1, h2 = -1;
    CHECK_RC(a, a->ops->head(a, TA, "d1", &h1), ROOST_OK);
    CHECK_RC(a, a->ops->head(a, TA, "d2", &h2), ROOST_OK);
    CHECK(h1 == 3 && h2 == 3);
out:
    store_close(a);
    store_close(b);
}

/* ---- the server goes away: ping is false, operations fail cleanly ---- */

static void test_store_mysql_server_down_ping_false(const char *url)
{
    (void)url; /* this test stops a server, so it starts one of its own */
    char dir[128], cmd[512], own[1024] = "";
    snprintf(dir, sizeof dir, "/tmp/roost-mdown-%ld", (long)getpid());
    snprintf(cmd, sizeof cmd, "'%s' start '%s'", MARIADB_TEST_SH, dir);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (p == NULL) {
        return;
    }
    if (fgets(own, sizeof own, p) == NULL) {
        own[0] = '\0';
    }
    CHECK(pclose(p) == 0);
    own[strcspn(own, "\n")] = '\0';
    struct store *st = own[0] != '\0' ? several_open(own) : NULL;
    CHECK(st != NULL);
    if (st != NULL) {
        CHECK_RC(st, st->ops->migrate(st), ROOST_OK);
        struct store_published out;
        CHECK_RC(st, several_publish_retry(st, "z", NULL, T0, &out), ROOST_OK);
        CHECK(st->ops->ping(st));
    }
    snprintf(cmd, sizeof cmd, "'%s' stop '%s'", MARIADB_TEST_SH, dir);
    CHECK(system(cmd) == 0);
    if (st != NULL) {
        CHECK(!st->ops->ping(st));
        CHECK(!st->ops->ping(st));
        int64_t head = -1;
        int rc = st->ops->head(st, TA, "z", &head);
        CHECK(rc == ROOST_EUNAVAILABLE || rc == ROOST_ERETRY);
        CHECK(st->ops->begin(st) == ROOST_EUNAVAILABLE);
        CHECK_RC(st, st->ops->rollback(st), ROOST_OK);
        store_close(st);
    }
}

/* ---- several processes start at once: migrations apply exactly once ---- */

#define MIGRATORS 4

struct migrator {
    const char *url;
    int rc;
};

static void *migrator_main(void *p)
{
    struct migrator *m = p;
    struct store *st = several_open(m->url);
    m->rc = st != NULL ? st->ops->migrate(st) : ROOST_ECONNECT;
    if (m->rc != ROOST_OK && st != NULL) {
        printf("migrate: %s: %s\n", roost_err_name(m->rc), st->ops->errmsg(st));
    }
    store_close(st);
    return NULL;
}

static void test_store_mysql_concurrent_migrate_applies_once(const char *url)
{
    char fresh[1024];
    CHECK(mysql_testutil_fresh_db(url, "migrate_race", fresh, sizeof fresh) == 0);
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
    MYSQL *db = mysql_testutil_connect(fresh);
    CHECK(db != NULL);
    if (db != NULL) {
        /* Every migration recorded once: as many rows as distinct versions, starting at 1. */
        CHECK(mysql_query(db, "SELECT count(*) = count(DISTINCT version), min(version)"
                              " FROM schema_migrations") == 0);
        MYSQL_RES *res = mysql_store_result(db);
        MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
        CHECK(row != NULL && strcmp(row[0], "1") == 0 && strcmp(row[1], "1") == 0);
        if (res != NULL) {
            mysql_free_result(res);
        }
        mysql_close(db);
    }
    struct store *st = several_open(fresh);
    struct store_published out;
    CHECK(st != NULL && several_publish_retry(st, "m", NULL, T0, &out) == ROOST_OK && out.seq == 1);
    store_close(st);
    mysql_testutil_drop_db(fresh);
}

/* ---- migration 0007 fills the state columns of existing rows, and runs again cleanly ---- */

#define T0_SQL "1700000000000" /* T0 in SQL */

/* The state columns of every row of agent "bf", "seq:open_state,ready_priority,lease_expires_at,
 * due_at,ttl_at;" in seq order (NULL as "-"), into out. */
static void state_columns(MYSQL *db, char *out, size_t cap)
{
    out[0] = '\0';
    if (mysql_query(db, "SELECT seq, open_state, ready_priority, lease_expires_at - " T0_SQL
                        ", due_at - " T0_SQL ", ttl_at - " T0_SQL
                        " FROM inbox WHERE agent_id = 'bf' ORDER BY seq") != 0) {
        printf("state columns: %s\n", mysql_error(db));
        return;
    }
    MYSQL_RES *res = mysql_store_result(db);
    MYSQL_ROW row;
    size_t len = 0;
    while (res != NULL && (row = mysql_fetch_row(res)) != NULL) {
        len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s:%s,%s,%s,%s,%s;", row[0],
                                row[1] ? row[1] : "-", row[2] ? row[2] : "-", row[3] ? row[3] : "-",
                                row[4] ? row[4] : "-", row[5] ? row[5] : "-");
    }
    if (res != NULL) {
        mysql_free_result(res);
    }
}

static void test_store_mysql_migration_0007_backfills(const char *url)
{
    struct store *st = several_open(url);
    MYSQL *db = mysql_testutil_connect(url);
    CHECK(st != NULL && db != NULL);
    if (st == NULL || db == NULL) {
        store_close(st);
        if (db != NULL) {
            mysql_close(db);
        }
        return;
    }
    /* The schema as 0006 left it (with the claim index), rows in every state, 0007 not applied. */
    CHECK(mysql_testutil_exec(
              db, "ALTER TABLE inbox DROP INDEX inbox_open, DROP INDEX inbox_lease,"
                  " DROP INDEX inbox_due_at, DROP INDEX inbox_ttl, DROP COLUMN open_state,"
                  " DROP COLUMN ready_priority, DROP COLUMN lease_expires_at, DROP COLUMN due_at,"
                  " DROP COLUMN ttl_at,"
                  " ADD INDEX inbox_claim (tenant_id, agent_id, status, priority DESC, seq)") == 0);
    CHECK(mysql_testutil_exec(db, "DELETE FROM schema_migrations WHERE version = 7") == 0);
    CHECK(mysql_testutil_exec(db, "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at,"
                                  " updated_at) VALUES ('" TA "', 'bf', 8, 0, 0)") == 0);
    /* seq 1 completed, 2 pending, 3 pending at priority 5, 4 scheduled, 5 claimed (lease until
     * T0 + 1000), 6 quarantined, 7 pending with a TTL (T0 + 500). The statuses come from
     * store_sql.h, so this also checks the numbers 0007's generated columns were written with. */
    CHECK(mysql_testutil_exec(
              db, "INSERT INTO inbox (tenant_id, agent_id, seq, event_id, status, priority,"
                  " created_at, available_at, expires_at, claimed_at, claim_expires_at,"
                  " lease_token, attempts) VALUES"
                  " ('" TA "', 'bf', 1, 'evt_bf1', " ST_COMPLETED ", 0, " T0_SQL ", " T0_SQL
                  ", NULL, " T0_SQL ", " T0_SQL " + 1000, 'tok1', 1),"
                  " ('" TA "', 'bf', 2, 'evt_bf2', " ST_PENDING ", 0, " T0_SQL ", " T0_SQL
                  ", NULL, NULL, NULL, NULL, 0),"
                  " ('" TA "', 'bf', 3, 'evt_bf3', " ST_PENDING ", 5, " T0_SQL ", " T0_SQL
                  " + 1, NULL, NULL, NULL, NULL, 0),"
                  " ('" TA "', 'bf', 4, 'evt_bf4', " ST_SCHEDULED ", 0, " T0_SQL ", " T0_SQL
                  " + 60000, NULL, NULL, NULL, NULL, 0),"
                  " ('" TA "', 'bf', 5, 'evt_bf5', " ST_CLAIMED ", 0, " T0_SQL ", " T0_SQL
                  ", NULL, " T0_SQL ", " T0_SQL " + 1000, 'tok5', 1),"
                  " ('" TA "', 'bf', 6, 'evt_bf6', " ST_QUARANTINED ", 0, " T0_SQL ", " T0_SQL
                  ", NULL, NULL, NULL, NULL, 3),"
                  " ('" TA "', 'bf', 7, 'evt_bf7', " ST_PENDING ", 0, " T0_SQL ", " T0_SQL
                  ", " T0_SQL " + 500, NULL, NULL, NULL, 0)") == 0);

    /* Applied, then applied again as after an interruption: the same columns either way. */
    static const char want[] = "1:-,-,-,-,-;2:" ST_PENDING ",0,-,-,-;3:" ST_PENDING ",5,-,-,-;"
                               "4:" ST_SCHEDULED ",-,-,60000,-;5:-,-,1000,-,-;"
                               "6:" ST_QUARANTINED ",-,-,-,-;7:" ST_PENDING ",0,-,-,500;";
    char got[512];
    CHECK_RC(st, st->ops->migrate(st), ROOST_OK);
    state_columns(db, got, sizeof got);
    CHECK_STREQ(got, want);
    CHECK(mysql_testutil_exec(db, "DELETE FROM schema_migrations WHERE version = 7") == 0);
    CHECK_RC(st, st->ops->migrate(st), ROOST_OK);
    state_columns(db, got, sizeof got);
    CHECK_STREQ(got, want);
    CHECK(mysql_query(db,
                      "SELECT count(*) FROM information_schema.statistics WHERE table_schema ="
                      " DATABASE() AND table_name = 'inbox' AND index_name IN ('inbox_claim',"
                      " 'inbox_scavenge', 'inbox_due', 'inbox_expiry', 'inbox_status_seq')") == 0);
    MYSQL_RES *res = mysql_store_result(db);
    MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
    CHECK(row != NULL && strcmp(row[0], "0") == 0);
    if (res != NULL) {
        mysql_free_result(res);
    }

    /* Every reader finds the old rows through the new indexes. */
    struct store_metrics_tenant tenants[2];
    struct store_metrics_snapshot snap = {.tenants = tenants, .max_tenants = 2};
    CHECK_RC(st, st->ops->metrics_snapshot(st, T0, &snap), ROOST_OK);
    CHECK(snap.n_tenants == 1);
    if (snap.n_tenants == 1) {
        CHECK(tenants[0].pending == 3 && tenants[0].scheduled == 1 && tenants[0].claimed == 1 &&
              tenants[0].quarantined == 1 && tenants[0].oldest_pending_ms == T0 &&
              tenants[0].oldest_claimed_ms == T0);
    }
    struct store_events evs = {0};
    bool more = false;
    CHECK_RC(st, st->ops->quarantine_list(st, TA, NULL, "", 0, 10, &evs, &more), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].seq == 6);
    store_events_cleanup(&evs);
    size_t n = 0, q = 0;
    CHECK_RC(st, st->ops->begin(st), ROOST_OK);
    CHECK_RC(st, st->ops->claim(st, TA, "bf", 10, 0, 30, "c", T0 + 100, &evs, &more), ROOST_OK);
    CHECK(evs.len == 3 && evs.items[0].seq == 3 && evs.items[1].seq == 2 && evs.items[2].seq == 7);
    store_events_cleanup(&evs);
    struct store_touches touched = {0};
    const struct store_scavenge_limits lim = {.max_attempts = 10};
    CHECK_RC(st, st->ops->scavenge(st, T0 + 2000, &lim, 10, &n, &q, &touched), ROOST_OK);
    CHECK(n == 1 && q == 0); /* seq 5's lease; the three just claimed run to T0 + 30100 */
    CHECK_RC(st, st->ops->promote_due(st, T0 + 60000, 10, &n, &touched), ROOST_OK);
    CHECK(n == 1);
    CHECK_RC(st, st->ops->commit(st), ROOST_OK);
    store_touches_cleanup(&touched);
    state_columns(db, got, sizeof got);
    CHECK_STREQ(got, "1:-,-,-,-,-;2:-,-,30100,-,-;3:-,-,30100,-,-;4:" ST_PENDING ",0,-,-,-;"
                     "5:" ST_PENDING ",0,-,-,-;6:" ST_QUARANTINED ",-,-,-,-;7:-,-,30100,-,-;");
    mysql_close(db);
    store_close(st);
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
    TEST(test_store_mysql_concurrent_producers_no_gaps),
    TEST(test_store_mysql_batched_producers_no_gaps),
    TEST(test_store_mysql_mixed_producers_no_gaps),
    TEST(test_store_mysql_competing_claimers_disjoint),
    TEST(test_store_mysql_application_transaction_publish),
    TEST(test_store_mysql_tail_out_of_order_commits),
    TEST(test_store_mysql_lost_connection_reconnects),
    TEST(test_store_mysql_deadlock_surfaces_as_retry),
    TEST(test_store_mysql_server_down_ping_false),
    TEST(test_store_mysql_concurrent_migrate_applies_once),
    TEST(test_store_mysql_migration_0007_backfills),
    TEST(test_store_mysql_concurrent_retention_archives_once),
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s mysql://URL [TEST_NAME_SUBSTRING]\n", argv[0]);
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
        if (mysql_testutil_fresh_db(argv[1], check_test + 17, url, sizeof url) != 0 ||
            (st = several_open(url)) == NULL || st->ops->migrate(st) != ROOST_OK) {
            check_fail(__FILE__, __LINE__, "fixture setup failed%s%s", st ? ": " : "",
                       st ? st->ops->errmsg(st) : "");
        } else {
            tests[i].fn(url);
        }
        store_close(st);
        mysql_testutil_drop_db(url);
        check_end(failed_before);
    }
    return check_summary();
}
