/* SPDX-License-Identifier: MIT */
/* Two roostd nodes on one PostgreSQL schema (issue 32), wake-ups through LISTEN/NOTIFY:
 *   - a publish on node 2 pings a subscriber on node 1 (node 2's COMMIT notifies, node 1's
 *     listener hears it and its tailer reads the change log);
 *   - an application's transaction with roost_publish(): committed → a ping on node 1;
 *     rolled back → no row and no ping;
 *   - every listening connection terminated (pg_terminate_backend) and events published before
 *     the listeners are back: node 1 reconnects, catches up from the change log, and its
 *     subscriber hears of the last event; no committed event is missing from its inbox.
 * argv[1] is the URL of the shared test server (ctest fixture postgres); each test runs on a
 * schema of its own. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/timeutil.h"
#include "harness/harness.h"
#include "harness/sse_client.h"
#include "pg/pg_testutil.h"

#include "common/banned.h"

static const char *g_server;
static char g_store[1024];

static bool start_pair(struct roostd *n1, struct roostd *n2, const char *name)
{
    char schema_url[900];
    if (pg_testutil_fresh_schema(g_server, name, schema_url, sizeof schema_url) != 0) {
        return false;
    }
    /* Other tests share the server: this test's connections carry a name of their own. */
    snprintf(g_store, sizeof g_store, "%s&application_name=roost_nodes_%d", schema_url,
             (int)getpid());
    char *url = h_fmt("store.url=%s", g_store);
    const char *sets[] = {url, "tail.interval_ms=50", "scavenger.interval_ms=200", NULL};
    bool ok = roostd_start(n1, NULL, sets) == 0 && roostd_start(n2, NULL, sets) == 0;
    free(url);
    return ok;
}

static void stop_pair(struct roostd *n1, struct roostd *n2)
{
    roostd_finish(n2);
    roostd_finish(n1);
    pg_testutil_drop_schema(g_store);
}

/* Runs a query returning one integer; -1 on failure. */
static long long query_int(PGconn *db, const char *sql)
{
    PGresult *res = PQexec(db, sql);
    long long v = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1
                      ? strtoll(PQgetvalue(res, 0, 0), NULL, 10)
                      : -1;
    if (v < 0) {
        printf("query %s: %s\n", sql, PQerrorMessage(db));
    }
    PQclear(res);
    return v;
}

static int app_exec(void *db, const char *sql)
{
    return pg_testutil_exec(db, sql);
}

/* This test's listening connections (its application_name, set in start_pair). */
#define LISTENERS                                                                                  \
    " FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'"          \
    " AND application_name = current_setting('application_name')"

static void test_pg_nodes_notify_pings_cross_nodes(void)
{
    struct roostd n1, n2;
    if (!start_pair(&n1, &n2, "pings")) {
        CHECK(!"two nodes started");
        return;
    }
    char *tok = h_token(&n1, "t1", "agent:*:consume agent:*:publish");
    char *tok2 = h_token(&n2, "t1", "agent:*:consume agent:*:publish");
    struct sse s;
    CHECK(subscribe(&s, &n1, tok, "x.a", 0));
    CHECK_EQ(h_publish(n2.http, tok2, "x.a", NULL, NULL, NULL), 1);
    CHECK(expect_ping(&s, 1, 5000));

    /* An application's transaction: business row + roost_publish(), committed → a ping on
     * node 1; rolled back → no row and no ping. */
    PGconn *app = pg_testutil_connect(g_store);
    CHECK(app != NULL);
    if (app != NULL) {
        static const struct app_tx_sql q = {
            .create = "CREATE TABLE public_orders (id INT PRIMARY KEY)",
            .begin = "BEGIN",
            .insert1 = "INSERT INTO public_orders VALUES (1)",
            .publish1 = "SELECT * FROM roost_publish('t1', 'x.a', '{\"order\": 1}', 0, NULL,"
                        " NULL, 0, 0)",
            .commit = "COMMIT",
            .insert2 = "INSERT INTO public_orders VALUES (2)",
            .publish2 = "SELECT * FROM roost_publish('t1', 'x.a', '{\"order\": 2}', 0, NULL,"
                        " NULL, 0, 0)",
            .rollback = "ROLLBACK"};
        app_transaction_pings(&s, &n1, tok, 1, app_exec, app, &q, 5000, 1500);
        /* Each node listens on one connection. */
        CHECK_EQ(query_int(app, "SELECT count(*)" LISTENERS), 2);
        PQfinish(app);
    }
    sse_close(&s);
    free(tok);
    free(tok2);
    stop_pair(&n1, &n2);
}

#define BURST 25

static void test_pg_nodes_listener_killed_catches_up(void)
{
    struct roostd n1, n2;
    if (!start_pair(&n1, &n2, "killed")) {
        CHECK(!"two nodes started");
        return;
    }
    char *tok = h_token(&n1, "t1", "agent:*:consume agent:*:publish");
    char *tok2 = h_token(&n2, "t1", "agent:*:consume agent:*:publish");
    PGconn *admin = pg_testutil_connect(g_store);
    struct sse s;
    CHECK(admin != NULL);
    CHECK(subscribe(&s, &n1, tok, "x.b", 0));
    CHECK_EQ(h_publish(n2.http, tok2, "x.b", NULL, NULL, NULL), 1);
    CHECK(expect_ping(&s, 1, 5000));
    if (admin != NULL) {
        /* Both listeners go; the burst commits while nobody listens, so its notifications are
         * lost for good: only the catch-up from the change log can tell node 1. */
        CHECK_EQ(query_int(admin, "SELECT count(pg_terminate_backend(pid))" LISTENERS), 2);
        int64_t t0 = time_mono_ms();
        for (int i = 0; i < BURST; i++) {
            CHECK_EQ(h_publish(n2.http, tok2, "x.b", NULL, NULL, NULL), 2 + i);
        }
        CHECK(wait_ping(&s, 1 + BURST, h_patience(10000)));
        printf("# caught up %d events %lld ms after the listeners were terminated\n", BURST,
               (long long)(time_mono_ms() - t0));
        /* Listening again, one connection per node. */
        long long n = 0;
        for (int i = 0; i < 500 && n != 2; i++) {
            usleep(10000);
            n = query_int(admin, "SELECT count(*)" LISTENERS);
        }
        CHECK_EQ(n, 2);
        /* And pings flow through NOTIFY again. */
        CHECK_EQ(h_publish(n2.http, tok2, "x.b", NULL, NULL, NULL), 2 + BURST);
        CHECK(wait_ping(&s, 2 + BURST, 5000));
        /* No committed event is missing from node 1's inbox, in order. */
        long st = 0;
        json_t *page = h_inbox(n1.http, tok, "x.b", 0, 100, &st);
        CHECK_EQ(st, 200);
        json_t *evs = json_object_get(page, "events");
        CHECK_EQ(json_array_size(evs), 2 + BURST);
        for (size_t i = 0; i < json_array_size(evs); i++) {
            CHECK_EQ(h_int(h_at(evs, i), "sequence_number"), (long long)i + 1);
        }
        json_decref(page);
        PQfinish(admin);
    }
    sse_close(&s);
    free(tok);
    free(tok2);
    stop_pair(&n1, &n2);
}

int main(int argc, char **argv)
{
    h_init();
    if (argc < 2) {
        fprintf(stderr, "usage: %s POSTGRES_URL (a server of scripts/postgres_test.sh)\n", argv[0]);
        return 2;
    }
    g_server = argv[1];
    RUN(test_pg_nodes_notify_pings_cross_nodes);
    RUN(test_pg_nodes_listener_killed_catches_up);
    return h_summary();
}
