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
#include "store/several_writers.h"
#include "store/store.h"
#include "store/store_sql.h"

#include "common/banned.h"

/* ---- several connections: the tests every dialect with several writers shares ---- */

static void test_store_pg_concurrent_producers_no_gaps(const char *url)
{
    several_producers_no_gaps(url, false);
}

/* The same through the group-commit path (publish_batch: several requests' rows in one multi-row
 * insert) beside single publishes. */
static void test_store_pg_batched_producers_no_gaps(const char *url)
{
    several_producers_no_gaps(url, true);
}

/* Applications publish with roost_publish() in transactions of their own. */
static int app_publishes(const char *url, int n)
{
    PGconn *db = pg_testutil_connect(url);
    int errors = 0;
    for (int i = 0; db != NULL && i < n; i++) {
        for (int attempt = 0;; attempt++) {
            PGresult *res = PQexec(db, "BEGIN; SELECT event_id FROM roost_publish('" TA "', 'hot',"
                                       " '{\"app\": true}', 0, NULL, NULL, 0, 0); COMMIT");
            bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
            const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
            bool retry = !ok && state != NULL &&
                         (strcmp(state, "40P01") == 0 || strcmp(state, "40001") == 0);
            PQclear(res);
            if (ok) {
                break;
            }
            PQclear(PQexec(db, "ROLLBACK"));
            if (!retry || attempt == 100) {
                printf("app producer: %s\n", PQerrorMessage(db));
                errors++;
                break;
            }
        }
    }
    if (db == NULL) {
        errors = n;
    }
    PQfinish(db);
    return errors;
}

static void test_store_pg_mixed_producers_no_gaps(const char *url)
{
    several_mixed_producers_no_gaps(url, app_publishes);
}

static void test_store_pg_competing_claimers_disjoint(const char *url)
{
    several_claimers_disjoint(url);
}

static void test_store_pg_concurrent_retention_archives_once(const char *url)
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
    struct store *st = several_open(url), *tailer = several_open(url);
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
    CHECK(several_touched(&t, "app", 1));
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
    struct store *st = several_open(url);
    PGconn *admin = pg_testutil_connect(url);
    CHECK(st != NULL && admin != NULL);
    if (st == NULL || admin == NULL) {
        goto out;
    }
    struct store_published out;
    CHECK_RC(st, several_publish_retry(st, "k", NULL, T0, &out), ROOST_OK);

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
    CHECK_RC(st, several_publish_retry(st, "k", NULL, T0, &out), ROOST_OK);
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
    struct store *st = several_open(url);
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
    struct store *st = several_open(m->url);
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
    struct store *st = several_open(fresh);
    struct store_published out;
    CHECK(st != NULL && several_publish_retry(st, "m", NULL, T0, &out) == ROOST_OK && out.seq == 1);
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
    TEST(test_store_pg_mixed_producers_no_gaps),
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
            (st = several_open(url)) == NULL || st->ops->migrate(st) != ROOST_OK) {
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
