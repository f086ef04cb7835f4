/* SPDX-License-Identifier: MIT */
/* Several roostd nodes on one MariaDB (DESIGN §8.3), each test on a database of its own:
 *   - a publish on node 2 pings a subscriber on node 1, and so does a release (the tailer);
 *   - an application's own transaction with CALL roost_publish pings once committed, and a
 *     rolled-back one leaves no row and pings nobody;
 *   - consumers on both nodes claim disjoint sets and together complete every event;
 *   - node 2 SIGKILLed holding leases: they expire and node 1's consumers get the work;
 *   - MariaDB stopped and started again under load: /readyz says 503 during the outage, the
 *     nodes reconnect, every publish answered 201 exists and no refused one does, and every
 *     event is completed exactly once.
 * argv[1] is the URL of the shared test server (ctest fixture); the outage test starts a
 * MariaDB of its own with scripts/mariadb_test.sh, so it cannot disturb tests running beside it. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness/harness.h"
#include "harness/sse_client.h"
#include "mysql/mysql_testutil.h"

#include "common/banned.h"

#define N_EVENTS 200

static const char *const node_sets[] = {"scavenger.interval_ms=200", "tail.interval_ms=50", NULL};

/* Starts node 1 on a fresh database, then node 2 on the same one. */
static bool start_pair(struct roostd *n1, struct roostd *n2)
{
    if (roostd_start(n1, NULL, node_sets) != 0) {
        return false;
    }
    char *same_db = h_fmt("store.url=%s", roostd_store_url(n1));
    const char *sets[] = {same_db, node_sets[0], node_sets[1], NULL};
    int rc = roostd_start(n2, NULL, sets);
    free(same_db);
    return rc == 0;
}

static void stop_pair(struct roostd *n1, struct roostd *n2)
{
    roostd_finish(n2);
    roostd_finish(n1); /* drops the database */
}

/* ---- pings cross nodes ---- */

static int app_exec(void *db, const char *sql)
{
    return (int)mysql_testutil_exec(db, sql);
}

static void test_cluster_pings_cross_nodes(void)
{
    struct roostd n1, n2;
    if (!start_pair(&n1, &n2)) {
        CHECK(!"two nodes started");
        return;
    }
    char *tok = h_token(&n1, "t1", "agent:*:consume agent:*:publish");
    struct sse s;
    CHECK(subscribe(&s, &n1, tok, "x.a", 0));

    /* The token key lives in each node's data dir: mint with node 2's key for node 2. */
    char *tok2 = h_token(&n2, "t1", "agent:*:consume agent:*:publish");
    CHECK_EQ(h_publish(n2.http, tok2, "x.a", NULL, NULL, NULL), 1);
    CHECK(expect_ping(&s, 1, 3000));

    /* A release on node 2 moves no head but makes work claimable: node 1's subscriber hears. */
    json_t *c = h_claim(n2.http, tok2, "x.a", 1, 30, NULL);
    CHECK_EQ(json_array_size(c), 1);
    json_t *rel = json_pack("{s:s}", "lease_token", h_str(h_at(c, 0), "lease_token"));
    CHECK_EQ(h_callj(n2.http, "POST", tok2, rel, NULL, "/api/v1/agents/x.a/inbox/%s/release",
                     h_str(h_at(c, 0), "event_id")),
             200);
    json_decref(c);
    CHECK(expect_ping(&s, 1, 3000));

    /* An application's transaction: business row + CALL roost_publish, committed → a ping;
     * rolled back → no row and no ping. */
    MYSQL *app = mysql_testutil_connect(roostd_store_url(&n1));
    CHECK(app != NULL);
    if (app != NULL) {
        static const struct app_tx_sql q = {
            .create = "CREATE TABLE orders (id INT PRIMARY KEY)",
            .begin = "START TRANSACTION",
            .insert1 = "INSERT INTO orders VALUES (1)",
            .publish1 = "CALL roost_publish('t1', 'x.a', '{\"order\": 1}', 0, NULL, NULL, 0, 0,"
                        " @id, @seq)",
            .commit = "COMMIT",
            .insert2 = "INSERT INTO orders VALUES (2)",
            .publish2 = "CALL roost_publish('t1', 'x.a', '{\"order\": 2}', 0, NULL, NULL, 0, 0,"
                        " @id, @seq)",
            .rollback = "ROLLBACK"};
        app_transaction_pings(&s, &n1, tok, 1, app_exec, app, &q, 3000, 700);
        mysql_close(app);
    }
    sse_close(&s);
    free(tok);
    free(tok2);
    stop_pair(&n1, &n2);
}

/* ---- consumers on both nodes ---- */

struct consumer {
    struct roostd *node;
    char *tok;
    char name[16];
    atomic_int *stop;
    json_t *ids; /* event ids this consumer acked */
    int ack_failures;
};

static void *consume(void *arg)
{
    struct consumer *c = arg;
    struct h_client *http = h_client_new(c->node->url);
    int idle = 0;
    while (!atomic_load(c->stop) && idle < 50) {
        json_t *batch = h_claim(http, c->tok, "work", 5, 30, c->name);
        if (batch == NULL || json_array_size(batch) == 0) {
            json_decref(batch);
            idle++;
            h_sleep_ms(20);
            continue;
        }
        idle = 0;
        for (size_t i = 0; i < json_array_size(batch); i++) {
            json_t *ev = json_array_get(batch, i);
            if (h_ack(http, c->tok, "work", h_str(ev, "event_id"), h_str(ev, "lease_token")) ==
                200) {
                json_array_append_new(c->ids, json_string(h_str(ev, "event_id")));
            } else {
                c->ack_failures++;
            }
        }
        json_decref(batch);
    }
    h_client_free(http);
    return NULL;
}

/* Runs two consumers per node until the agent is drained; returns every acked id. */
static json_t *drain_with_four(struct roostd *n1, struct roostd *n2, char *tok1, char *tok2,
                               int *ack_failures)
{
    atomic_int stop = 0;
    struct consumer cs[4];
    pthread_t th[4];
    json_t *all = json_object();
    for (int i = 0; i < 4; i++) {
        cs[i] = (struct consumer){.node = i < 2 ? n1 : n2,
                                  .tok = i < 2 ? tok1 : tok2,
                                  .stop = &stop,
                                  .ids = json_array()};
        snprintf(cs[i].name, sizeof cs[i].name, "c%d", i);
        pthread_create(&th[i], NULL, consume, &cs[i]);
    }
    *ack_failures = 0;
    int dup = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        *ack_failures += cs[i].ack_failures;
        for (size_t k = 0; k < json_array_size(cs[i].ids); k++) {
            const char *id = json_string_value(json_array_get(cs[i].ids, k));
            dup += json_object_get(all, id) != NULL;
            json_object_set_new(all, id, json_integer(i));
        }
        json_decref(cs[i].ids);
    }
    CHECK_EQ(dup, 0);
    return all;
}

static void test_cluster_claims_disjoint_across_nodes(void)
{
    struct roostd n1, n2;
    if (!start_pair(&n1, &n2)) {
        CHECK(!"two nodes started");
        return;
    }
    char *tok1 = h_token(&n1, "t1", "agent:*:consume agent:*:publish");
    char *tok2 = h_token(&n2, "t1", "agent:*:consume agent:*:publish");
    for (int i = 0; i < N_EVENTS; i++) {
        struct roostd *n = i % 2 ? &n2 : &n1;
        CHECK_EQ(h_publish(n->http, i % 2 ? tok2 : tok1, "work", NULL, NULL, NULL), i + 1);
    }
    int ack_failures;
    json_t *acked = drain_with_four(&n1, &n2, tok1, tok2, &ack_failures);
    CHECK_EQ(json_object_size(acked), N_EVENTS);
    CHECK_EQ(ack_failures, 0);
    /* Both nodes did work. */
    int per_node[2] = {0, 0};
    const char *id;
    json_t *who;
    json_object_foreach(acked, id, who)
    {
        per_node[json_integer_value(who) / 2]++;
    }
    CHECK(per_node[0] > 0 && per_node[1] > 0);
    json_decref(acked);
    free(tok1);
    free(tok2);
    stop_pair(&n1, &n2);
}

/* ---- a node killed holding leases ---- */

/* How many of the agent's first 100 events are pending (-1: the read failed). */
static int count_pending(struct roostd *n, const char *tok, const char *agent)
{
    long st = 0;
    json_t *page = h_inbox(n->http, tok, agent, 0, 100, &st);
    json_t *events = json_object_get(page, "events"), *ev;
    size_t i;
    int pending = st == 200 ? 0 : -1;
    json_array_foreach(events, i, ev)
    {
        pending += pending >= 0 && strcmp(h_str(ev, "status"), "pending") == 0;
    }
    json_decref(page);
    return pending;
}

static void show_inbox(struct roostd *n, const char *tok, const char *agent)
{
    long st = 0;
    json_t *page = h_inbox(n->http, tok, agent, 0, 100, &st);
    char *text = page ? json_dumps(page, JSON_COMPACT) : NULL;
    fprintf(stderr, "inbox of %s (status %ld): %s\n", agent, st, text ? text : "-");
    free(text);
    json_decref(page);
}

static void test_cluster_killed_node_leases_expire(void)
{
    struct roostd n1, n2;
    if (!start_pair(&n1, &n2)) {
        CHECK(!"two nodes started");
        return;
    }
    char *tok1 = h_token(&n1, "t1", "agent:*:consume agent:*:publish");
    char *tok2 = h_token(&n2, "t1", "agent:*:consume agent:*:publish");
    for (int i = 0; i < 10; i++) {
        CHECK_EQ(h_publish(n1.http, tok1, "k.a", NULL, NULL, NULL), i + 1);
    }
    json_t *held = h_claim(n2.http, tok2, "k.a", 10, 2, "doomed");
    CHECK_EQ(json_array_size(held), 10);
    json_decref(held);
    roostd_kill(&n2);
    roostd_remove_dir(&n2); /* the data dir only: n2's store URL names n1's database */
    /* Node 1's scavenger returns the expired leases. The wait only reads: a claim made while
     * waiting would hold what it took, and its events would come back a lease later, on a
     * third attempt. Then one claim gets all ten, each on its second. */
    bool ok;
    H_WAIT_UNTIL(ok, 10000, count_pending(&n1, tok1, "k.a") == 10);
    CHECK(ok);
    json_t *again = h_claim(n1.http, tok1, "k.a", 10, 30, "heir");
    CHECK_EQ(json_array_size(again), 10);
    if (json_array_size(again) != 10) {
        show_inbox(&n1, tok1, "k.a"); /* each event's status and attempts, for the failure */
    }
    for (size_t i = 0; i < json_array_size(again); i++) {
        json_t *ev = json_array_get(again, i);
        CHECK_EQ(h_int(ev, "attempts"), 2);
        CHECK_EQ(h_ack(n1.http, tok1, "k.a", h_str(ev, "event_id"), h_str(ev, "lease_token")), 200);
    }
    json_decref(again);
    free(tok1);
    free(tok2);
    roostd_finish(&n1);
}

/* ---- the database restarted under load ---- */

struct producer {
    struct roostd *node;
    char *tok;
    atomic_int *stop;
    atomic_int published; /* 2xx answers: those events exist (read by the main thread live) */
    atomic_int refused;   /* 503s during the outage */
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    struct h_client *http = h_client_new(p->node->url);
    while (!atomic_load(p->stop)) {
        json_t *body = json_pack("{s:[s], s:{}}", "recipients", "work", "payload");
        long st = h_callj(http, "POST", p->tok, body, NULL, "/api/v1/events");
        if (st == 201) {
            atomic_fetch_add(&p->published, 1);
        } else {
            atomic_fetch_add(&p->refused, 1);
            h_sleep_ms(50);
        }
    }
    h_client_free(http);
    return NULL;
}

static int ready_status(struct roostd *n)
{
    long st = 0;
    http_request(n->http, "GET", "/readyz", NULL, NULL, &st, NULL);
    return (int)st;
}

static void test_cluster_database_restart_under_load(void)
{
    char dir[128];
    snprintf(dir, sizeof dir, "/tmp/roost-outage-%d", (int)getpid());
    char *start = h_fmt("'%s/scripts/mariadb_test.sh' start '%s' >/dev/null", TESTS_DIR "/..", dir);
    char *pause = h_fmt("'%s/scripts/mariadb_test.sh' pause '%s'", TESTS_DIR "/..", dir);
    char *resume =
        h_fmt("'%s/scripts/mariadb_test.sh' resume '%s' >/dev/null", TESTS_DIR "/..", dir);
    char *stop = h_fmt("'%s/scripts/mariadb_test.sh' stop '%s'", TESTS_DIR "/..", dir);
    char *url_path = h_fmt("%s/url", dir), *base = NULL;
    size_t len;
    CHECK_EQ(system(start), 0);
    CHECK_EQ(h_read_file(url_path, &base, &len), 0);
    if (base == NULL) {
        goto out;
    }
    base[strcspn(base, "\r\n")] = '\0';
    setenv("ROOST_TEST_MYSQL_URL", base, 1);
    struct roostd n1, n2;
    if (!start_pair(&n1, &n2)) {
        CHECK(!"two nodes started");
        goto out;
    }
    char *tok1 = h_token(&n1, "t1", "agent:*:consume agent:*:publish");
    char *tok2 = h_token(&n2, "t1", "agent:*:consume agent:*:publish");
    atomic_int stop_load = 0;
    struct producer ps[2] = {{.node = &n1, .tok = tok1, .stop = &stop_load},
                             {.node = &n2, .tok = tok2, .stop = &stop_load}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&th[i], NULL, produce, &ps[i]);
    }
    h_sleep_ms(500);
    CHECK_EQ(system(pause), 0); /* the outage */
    bool ok;
    H_WAIT_UNTIL(ok, 10000, ready_status(&n1) == 503 && ready_status(&n2) == 503);
    CHECK(ok);
    h_sleep_ms(1000);
    CHECK_EQ(system(resume), 0);
    H_WAIT_UNTIL(ok, 20000, ready_status(&n1) == 200 && ready_status(&n2) == 200);
    CHECK(ok);
    /* Load goes on after the outage: publishes succeed again on both nodes. */
    int before[2] = {atomic_load(&ps[0].published), atomic_load(&ps[1].published)};
    H_WAIT_UNTIL(ok, 10000,
                 atomic_load(&ps[0].published) > before[0] + 10 &&
                     atomic_load(&ps[1].published) > before[1] + 10);
    CHECK(ok);
    atomic_store(&stop_load, 1);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
    }
    int published = ps[0].published + ps[1].published;
    printf("outage: %d published, %d refused while the database was down\n", published,
           ps[0].refused + ps[1].refused);

    /* Every event that was acknowledged exists once, in order, with no gap... */
    long st = 0;
    json_t *page = h_inbox(n1.http, tok1, "work", 0, 1000, &st);
    CHECK_EQ(st, 200);
    int64_t head = h_int(page, "head");
    json_decref(page);
    /* Answers are true although connections died mid-COMMIT: a publish whose COMMIT was lost
     * waits until the writer learns the outcome (doc/MYSQL.md), so a refused publish wrote
     * nothing and an acknowledged one exists. (Which requests are refused, if any, depends on
     * where each was when the server went: one caught in its COMMIT waits instead.) */
    CHECK_EQ(head, published);
    /* ...and consumers on both nodes complete each exactly once. */
    int ack_failures;
    json_t *acked = drain_with_four(&n1, &n2, tok1, tok2, &ack_failures);
    CHECK_EQ((int64_t)json_object_size(acked), head);
    CHECK_EQ(ack_failures, 0);
    json_decref(acked);
    free(tok1);
    free(tok2);
    stop_pair(&n1, &n2);
out:
    CHECK_EQ(system(stop), 0);
    free(base);
    free(url_path);
    free(start);
    free(pause);
    free(resume);
    free(stop);
}

int main(int argc, char **argv)
{
    h_init();
    if (argc < 2) {
        fprintf(stderr, "usage: %s MYSQL_URL (a server of scripts/mariadb_test.sh)\n", argv[0]);
        return 2;
    }
    /* The harness gives each first node a fresh database on this server. */
    setenv("ROOST_TEST_MYSQL_URL", argv[1], 1);
    RUN(test_cluster_pings_cross_nodes);
    RUN(test_cluster_claims_disjoint_across_nodes);
    RUN(test_cluster_killed_node_leases_expire);
    RUN(test_cluster_database_restart_under_load);
    return h_summary();
}
