/* SPDX-License-Identifier: MIT */
/* The commit whose answer is lost (doc/MYSQL.md, doc/POSTGRES.md), on MariaDB or PostgreSQL
 * (argv[1], a server of scripts/mariadb_test.sh or scripts/postgres_test.sh; the test runs in a
 * database or schema of its own): roostd talks to the server through a loopback proxy
 * (tests/harness/tcp_proxy.c, in the server's protocol) that breaks the connection exactly at a
 * COMMIT:
 *   - COMMIT sent, answer dropped: the publish is answered 201 and exactly one event exists; the
 *     same idempotency key again finds it (200), never a second one; without a key (MariaDB: the
 *     whole publish travels with its COMMIT) the 201 carries the row's seq; an ack answers 200
 * (MariaDB: a lone ack's UPDATE travels with its COMMIT, and runs again on the answer's loss); a
 * claim answers its events and tokens, which ack (MariaDB: a lone claim's UPDATE travels with the
 *     marker and COMMIT); its COMMIT never sent, the replay claims the event once; the same
 *     for a long-polling claim handed its event by a publish (both in one transaction);
 *   - COMMIT never sent: roostd proves it did not commit and replays the group (201, one event;
 *     MariaDB: the lost transaction's marker fenced); with the server side of the dead connection
 *     held open (its locks too), the old session is KILLed (PostgreSQL: the backend terminated),
 *     so the replay does not wait on them;
 *   - every COMMIT cut: 503 + Retry-After and no trace; the retry after the proxy heals makes the
 *     one event (publish) or completes it (ack); a long-polling claim handed such a publish's
 *     event goes on waiting, and gets the retried publish's event;
 *   - libroost in front of an HTTP answer that is lost: roost_publish retries with the
 *     idempotency key it generated, and one event exists; so does `roost publish`;
 *   - MariaDB: markers older than an hour are pruned by the writer, the recent ones kept. */
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "harness/tcp_proxy.h"
#include "mysql/mysql_testutil.h"
#include "pg/pg_testutil.h"
#include "roost/roost.h"

#include "common/banned.h"

static char db_url[1024];
static char store_url[1100]; /* db_url through the proxy */
static bool pg;              /* the server is PostgreSQL (else MariaDB) */
static struct tcp_proxy *proxy;
static struct roostd d;
static char *tok;

/* An integer from one SQL query (taken, freed here) on the real server, not through the proxy;
 * -1 on failure. */
static long long sql_int(char *sql)
{
    long long v = -1;
    if (!pg) {
        v = mysql_testutil_int(db_url, sql);
    } else {
        PGconn *db = pg_testutil_connect(db_url);
        PGresult *res = db != NULL ? PQexec(db, sql) : NULL;
        if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
            v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        } else if (db != NULL) {
            fprintf(stderr, "%s: %s\n", sql, PQerrorMessage(db));
        }
        PQclear(res);
        PQfinish(db);
    }
    free(sql);
    return v;
}

static long long events_of(const char *agent)
{
    return sql_int(h_fmt("SELECT count(*) FROM inbox WHERE agent_id = '%s'", agent));
}

static long long status_of(const char *event_id)
{
    return sql_int(h_fmt("SELECT status FROM inbox WHERE event_id = '%s'", event_id));
}

/* POST /api/v1/events with one event; returns the status, *event_id (31 bytes) the id. */
static long publish(const char *agent, const char *key, char *event_id, struct h_response *out)
{
    json_t *ev = json_pack("{s:[s], s:{s:s}}", "recipients", agent, "payload", "k", "v");
    if (key) {
        json_object_set_new(ev, "idempotency_key", json_string(key));
    }
    char *body = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    struct h_response r = {0};
    h_request(d.http, "POST", "/api/v1/events", tok, body, strlen(body), NULL, &r);
    free(body);
    json_t *e0 = h_at(json_object_get(r.json, "events"), 0);
    snprintf(event_id, 31, "%s", e0 && h_str(e0, "event_id") ? h_str(e0, "event_id") : "");
    long status = r.status;
    if (out) {
        *out = r;
    } else {
        h_response_cleanup(&r);
    }
    return status;
}

static void test_publish_answer_lost(void)
{
    char id[31], again[31];
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_ANSWER_LOST, 1);
    CHECK_EQ(publish("lost.a", "key-1", id, NULL), 201);
    CHECK_EQ(tcp_proxy_cuts(proxy), cuts + 1);
    CHECK_EQ(events_of("lost.a"), 1);
    CHECK_EQ(sql_int(h_fmt("SELECT count(*) FROM inbox WHERE event_id = '%s'", id)), 1);
    /* The client retries anyway: the key finds the one event. */
    CHECK_EQ(publish("lost.a", "key-1", again, NULL), 200);
    CHECK_STREQ(again, id);
    CHECK_EQ(events_of("lost.a"), 1);
}

/* A publish without a key (MariaDB: sent whole with its COMMIT, its seq taken from the answer):
 * the answer lost, the seq is read back, and the 201 carries the row's own seq. */
static void test_publish_keyless_answer_lost(void)
{
    char id[31];
    struct h_response r = {0};
    CHECK_EQ(publish("lost.e", NULL, id, NULL), 201);
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_ANSWER_LOST, 1);
    CHECK_EQ(publish("lost.e", NULL, id, &r), 201);
    CHECK_EQ(tcp_proxy_cuts(proxy), cuts + 1);
    CHECK_EQ(events_of("lost.e"), 2);
    json_t *e0 = h_at(json_object_get(r.json, "events"), 0);
    long long seq = json_integer_value(json_object_get(e0, "sequence_number"));
    CHECK_EQ(seq, 2);
    CHECK_EQ(sql_int(h_fmt("SELECT seq FROM inbox WHERE event_id = '%s'", id)), seq);
    h_response_cleanup(&r);
}

static void test_publish_commit_not_sent(void)
{
    char id[31];
    int cuts = tcp_proxy_cuts(proxy);
#define FENCED_SQL "SELECT count(*) FROM roost_commit_markers WHERE fenced = %d"
    long long fenced = pg ? 0 : sql_int(h_fmt(FENCED_SQL, 1));
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_NOT_SENT, 1);
    CHECK_EQ(publish("lost.b", NULL, id, NULL), 201);
    CHECK_EQ(tcp_proxy_cuts(proxy), cuts + 1);
    CHECK_EQ(events_of("lost.b"), 1);
    /* MariaDB: the resolver fenced the lost transaction's marker before replaying the group
     * (PostgreSQL asks txid_status instead). */
    if (!pg) {
        CHECK_EQ(sql_int(h_fmt(FENCED_SQL, 1)), fenced + 1);
    }
}

/* The server never hears that the client went: the old session keeps the agent row locked
 * (PostgreSQL: its transaction open, txid_status "in progress" until it is terminated). With an
 * idempotency key the row is written before the COMMIT's query on MariaDB too. */
static void test_publish_commit_not_sent_held(void)
{
    char id[31];
    CHECK_EQ(publish("lost.c", "held-1", id, NULL), 201);
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_NOT_SENT_HOLD, 1);
    int64_t t0 = h_now_ms();
    CHECK_EQ(publish("lost.c", "held-2", id, NULL), 201);
    /* Without the KILL (termination) every replay would wait innodb_lock_wait_timeout (5 s;
     * lock_timeout, 10 s) on that lock. */
    CHECK(h_now_ms() - t0 < 5000);
    CHECK_EQ(tcp_proxy_cuts(proxy), cuts + 1);
    CHECK_EQ(events_of("lost.c"), 2);
}

static void test_publish_never_commits(void)
{
    char id[31], retried[31], again[31];
    struct h_response r = {0};
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_NOT_SENT, 1000);
    CHECK_EQ(publish("lost.d", "key-2", id, &r), 503);
    char ra[16];
    CHECK(h_header(&r, "Retry-After", ra, sizeof ra) != NULL);
    h_response_cleanup(&r);
    tcp_proxy_arm(proxy, TCP_PROXY_PASS, 0);
    CHECK_EQ(events_of("lost.d"), 0);
    CHECK_EQ(publish("lost.d", "key-2", retried, NULL), 201);
    CHECK_EQ(publish("lost.d", "key-2", again, NULL), 200);
    CHECK_STREQ(again, retried);
    CHECK_EQ(events_of("lost.d"), 1);
}

/* Publishes one event to `agent` and claims it: *event_id and *lease (caller frees) set. */
static bool claimed(const char *agent, char *event_id, char **lease)
{
    char id[31];
    if (publish(agent, NULL, id, NULL) != 201) {
        return false;
    }
    json_t *c = h_claim(d.http, tok, agent, 1, 60, NULL);
    bool ok = json_array_size(c) == 1;
    if (ok) {
        snprintf(event_id, 31, "%s", h_str(h_at(c, 0), "event_id"));
        *lease = strdup(h_str(h_at(c, 0), "lease_token"));
    }
    json_decref(c);
    return ok;
}

/* MariaDB: the single ack cut last went as one query, its UPDATE and the COMMIT (a lone ack's
 * one round trip, store_mysql_exec_sb_commit), so the cut took the UPDATE's answer too. */
static void ack_rode(void)
{
    char last[64];
    tcp_proxy_last_cut(proxy, last, sizeof last);
    if (!pg) {
        CHECK(strstr(last, "UPDATE inbox") != NULL); /* after a reconnect: SET autocommit = 0; … */
    }
}

static void test_ack_answer_lost(void)
{
    char id[31];
    char *lease = NULL;
    if (!claimed("ack.a", id, &lease)) {
        CHECK(!"published and claimed");
        return;
    }
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_ANSWER_LOST, 1);
    CHECK_EQ(h_ack(d.http, tok, "ack.a", id, lease), 200);
    CHECK_EQ(tcp_proxy_cuts(proxy), cuts + 1);
    ack_rode(); /* so it committed, its answer lost, and ran again: the repeated-ack rule */
    CHECK_EQ(status_of(id), 3); /* completed */
    CHECK_EQ(h_ack(d.http, tok, "ack.a", id, lease), 200);
    /* A stale token alone in its group: its UPDATE and COMMIT changed nothing, the lookup after
     * them tells why. */
    CHECK_EQ(h_ack(d.http, tok, "ack.a", id, "lt_00000000000000000000000000"), 409);
    CHECK_EQ(status_of(id), 3);
    free(lease);
}

static void test_ack_never_commits(void)
{
    char id[31];
    char *lease = NULL;
    if (!claimed("ack.b", id, &lease)) {
        CHECK(!"published and claimed");
        return;
    }
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_NOT_SENT, 1000);
    CHECK_EQ(h_ack(d.http, tok, "ack.b", id, lease), 503);
    CHECK(tcp_proxy_cuts(proxy) > cuts + 1); /* the group was replayed, and cut each time */
    ack_rode();                              /* so its UPDATE never reached the server either */
    tcp_proxy_arm(proxy, TCP_PROXY_PASS, 0);
    CHECK_EQ(status_of(id), 2); /* still claimed */
    CHECK_EQ(h_ack(d.http, tok, "ack.b", id, lease), 200);
    CHECK_EQ(status_of(id), 3);
    free(lease);
}

/* A claim alone in its group: MariaDB sends its UPDATE (and the check of its row count) with the
 * marker and COMMIT. Its answer lost, the marker says it committed: the claim's events and
 * tokens are the answer, and the token acks. */
static void test_claim_answer_lost(void)
{
    char id[31], last[64];
    CHECK_EQ(publish("claim.a", NULL, id, NULL), 201);
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_ANSWER_LOST, 1);
    json_t *c = h_claim(d.http, tok, "claim.a", 1, 60, NULL);
    CHECK_EQ(tcp_proxy_cuts(proxy), cuts + 1);
    tcp_proxy_last_cut(proxy, last, sizeof last);
    if (!pg) {
        CHECK(strstr(last, "UPDATE inbox SET status = 2") != NULL);
    }
    CHECK_EQ(json_array_size(c), 1);
    CHECK_STREQ(h_str(h_at(c, 0), "event_id"), id);
    CHECK_EQ(status_of(id), 2); /* claimed */
    const char *lease = h_str(h_at(c, 0), "lease_token");
    CHECK_EQ(h_ack(d.http, tok, "claim.a", id, lease ? lease : ""), 200);
    CHECK_EQ(status_of(id), 3);
    json_decref(c);
}

/* Its COMMIT (and so its UPDATE) never sent: nothing was claimed, the group replays and claims
 * the event once, under the token answered. */
static void test_claim_commit_not_sent(void)
{
    char id[31];
    CHECK_EQ(publish("claim.b", NULL, id, NULL), 201);
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_NOT_SENT, 1);
    json_t *c = h_claim(d.http, tok, "claim.b", 1, 60, NULL);
    CHECK_EQ(tcp_proxy_cuts(proxy), cuts + 1);
    CHECK_EQ(json_array_size(c), 1);
    CHECK_EQ(sql_int(h_fmt("SELECT attempts FROM inbox WHERE event_id = '%s'", id)), 1);
    const char *lease = h_str(h_at(c, 0), "lease_token");
    CHECK_EQ(h_ack(d.http, tok, "claim.b", id, lease ? lease : ""), 200);
    CHECK_EQ(status_of(id), 3);
    json_decref(c);
}

/* The same through `roost publish` (no --idempotency-key): exit 0 and one event. */
static void test_cli_retry_after_cut(void)
{
    struct tcp_proxy *http = tcp_proxy_start(d.host, d.port, false);
    if (http == NULL) {
        CHECK(!"http proxy started");
        return;
    }
    tcp_proxy_arm(http, TCP_PROXY_ANSWER_LOST, 1);
    char *cmd = h_fmt("'%s' publish --server http://127.0.0.1:%d --token '%s' --agent cli.a"
                      " --payload '{\"n\":1}' --compact >/dev/null",
                      ROOST_CLI_BIN, tcp_proxy_port(http), tok);
    CHECK_EQ(system(cmd), 0);
    CHECK_EQ(tcp_proxy_cuts(http), 1);
    CHECK_EQ(events_of("cli.a"), 1);
    free(cmd);
    tcp_proxy_stop(http);
}

/* Every writer connection prunes markers older than an hour once every 1024 commits: an old
 * marker goes, the recent ones stay. */
static void test_markers_pruned(void)
{
    long long recent = sql_int(h_fmt("SELECT count(*) FROM roost_commit_markers"));
    MYSQL *db = mysql_testutil_connect(db_url);
    CHECK(db != NULL);
    if (db == NULL) {
        return;
    }
    /* Two hours ago in the first 6 bytes (Unix ms, big endian). */
    CHECK_EQ(mysql_testutil_exec(db, "INSERT INTO roost_commit_markers (marker) VALUES"
                                     " (CONCAT(UNHEX(LPAD(HEX(CAST(UNIX_TIMESTAMP(NOW(3)) * 1000"
                                     " AS UNSIGNED) - 7200000), 12, '0')), RANDOM_BYTES(10)))"),
             0);
    mysql_close(db);
    char id[31];
    int ok = 0;
    for (int i = 0; i < 1024; i++) {
        ok += publish("prune.a", NULL, id, NULL) == 201;
    }
    CHECK_EQ(ok, 1024);
    CHECK_EQ(sql_int(h_fmt("SELECT count(*) FROM roost_commit_markers WHERE marker <"
                           " UNHEX(LPAD(HEX(CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS UNSIGNED)"
                           " - 3600000), 12, '0'))")),
             0);
    CHECK(sql_int(h_fmt("SELECT count(*) FROM roost_commit_markers")) >= recent + 1024);
}

/* A publish to an agent with a long-polling claim parked hands its event to that claim (workers.h,
 * followers): the claim's UPDATE shares the publish's transaction, and on MariaDB travels with
 * its COMMIT. Whether that COMMIT's answer is lost (the marker says it committed) or the COMMIT is
 * never sent (the group replays), the claim answers the event under one lease (attempts 1), and
 * the token acks. */
static void claim_with_publish(const char *agent, enum tcp_proxy_cut cut)
{
    struct h_waiting_claim c = {.url = d.url, .token = tok, .agent = agent, .wait_s = 30};
    h_claim_start(&c);
    CHECK(h_wait_parked(d.http, 1));
    double handed = h_metric(d.http, "roost_claims_with_publish_total");
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm(proxy, cut, 1);
    char id[31], last[64];
    CHECK_EQ(publish(agent, NULL, id, NULL), 201);
    h_claim_join(&c);
    CHECK_EQ(tcp_proxy_cuts(proxy), cuts + 1);
    tcp_proxy_last_cut(proxy, last, sizeof last);
    if (!pg) {
        CHECK(strstr(last, "UPDATE inbox SET status = 2") != NULL);
    }
    CHECK_EQ(h_metric(d.http, "roost_claims_with_publish_total") - handed, 1);
    CHECK_EQ(c.status, 200);
    CHECK_STREQ(c.event_id, id);
    CHECK_EQ(c.attempts, 1);
    CHECK_EQ(events_of(agent), 1);
    CHECK_EQ(status_of(id), 2); /* claimed */
    CHECK_EQ(h_ack(d.http, tok, agent, id, c.lease_token), 200);
    CHECK_EQ(status_of(id), 3);
}

static void test_claim_with_publish_answer_lost(void)
{
    claim_with_publish("follow.a", TCP_PROXY_COMMIT_ANSWER_LOST);
}

static void test_claim_with_publish_commit_not_sent(void)
{
    claim_with_publish("follow.b", TCP_PROXY_COMMIT_NOT_SENT);
}

/* MariaDB: the publish's group never commits (every COMMIT carrying the claim's UPDATE is cut):
 * the publish answers 503, and the claim is not answered with that failure: it runs on its own,
 * finds nothing and waits again, and the publish retried after the proxy heals reaches it. */
static void test_claim_with_publish_never_commits(void)
{
    struct h_waiting_claim c = {.url = d.url, .token = tok, .agent = "follow.c", .wait_s = 30};
    h_claim_start(&c);
    CHECK(h_wait_parked(d.http, 1));
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm_only(proxy, TCP_PROXY_COMMIT_NOT_SENT, 1000, "UPDATE inbox SET status = 2");
    char id[31];
    CHECK_EQ(publish("follow.c", "key-3", id, NULL), 503);
    CHECK(tcp_proxy_cuts(proxy) > cuts + 1); /* the group was replayed, and cut each time */
    CHECK(h_wait_parked(d.http, 1));         /* parked again after its own run */
    tcp_proxy_arm(proxy, TCP_PROXY_PASS, 0);
    CHECK_EQ(events_of("follow.c"), 0);
    CHECK_EQ(publish("follow.c", "key-3", id, NULL), 201);
    h_claim_join(&c);
    CHECK_EQ(c.status, 200);
    CHECK_STREQ(c.event_id, id);
    CHECK_EQ(c.attempts, 1);
    CHECK_EQ(h_ack(d.http, tok, "follow.c", id, c.lease_token), 200);
}

/* MariaDB: a node that starts while its database cannot answer the migration step (here the
 * answer to its migration lock lost and the connection cut, as when a Galera node that was paused
 * answers causal reads with a lock wait timeout) tries again on a new connection for up to
 * store.failover_timeout_s instead of exiting. */
static void test_start_migration_answer_lost(void)
{
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm_only(proxy, TCP_PROXY_COMMIT_ANSWER_LOST, 1, "GET_LOCK('roost_migrate'");
    struct roostd n;
    const char *sets[] = {store_url, "store.writers=1", NULL};
    CHECK_EQ(roostd_start(&n, NULL, sets), 0);
    tcp_proxy_arm(proxy, TCP_PROXY_PASS, 0);
    CHECK_EQ(tcp_proxy_cuts(proxy), cuts + 1);
    CHECK_EQ(roostd_stop(&n), 0);
    CHECK_EQ(roostd_log_count(&n, "store migrations failed, trying again"), 1);
    roostd_remove_dir(&n);
}

/* libroost behind a proxy that loses roostd's first answer: the publish committed, the client
 * saw a cut connection, and its retry (same generated key) finds the event instead of adding one.
 */
static void test_sdk_retry_after_cut(void)
{
    struct tcp_proxy *http = tcp_proxy_start(d.host, d.port, false);
    if (http == NULL) {
        CHECK(!"http proxy started");
        return;
    }
    char *base = h_fmt("http://127.0.0.1:%d", tcp_proxy_port(http));
    struct roost_client *c = NULL;
    CHECK_EQ(roost_client_new(&c, base, tok), ROOST_OK);
    const char *to[] = {"sdk.a"};
    struct roost_message m;
    roost_message_init(&m);
    m.recipients = to;
    m.n_recipients = 1;
    m.payload = "{\"n\":1}";
    tcp_proxy_arm(http, TCP_PROXY_ANSWER_LOST, 1);
    struct roost_events *out = NULL;
    CHECK_EQ(roost_publish(c, &m, &out), ROOST_OK);
    CHECK_EQ(tcp_proxy_cuts(http), 1);
    CHECK(out != NULL && out->count == 1 && out->duplicate);
    CHECK_EQ(events_of("sdk.a"), 1);
    CHECK_EQ(sql_int(h_fmt("SELECT count(*) FROM inbox WHERE agent_id = '%s'"
                           " AND idempotency_key IS NOT NULL",
                           "sdk.a")),
             1);
    roost_events_free(out);
    roost_client_free(c);
    free(base);
    tcp_proxy_stop(http);
}

int main(int argc, char **argv)
{
    h_init();
    if (argc < 2) {
        fprintf(stderr, "usage: %s MYSQL_URL|POSTGRES_URL (a test server of scripts/)\n", argv[0]);
        return 2;
    }
    pg = strncmp(argv[1], "postgres", 8) == 0;
    if ((pg ? pg_testutil_fresh_schema(argv[1], "commit", db_url, sizeof db_url)
            : mysql_testutil_fresh_db(argv[1], "commit", db_url, sizeof db_url)) != 0) {
        CHECK(!"fresh database");
        return h_summary();
    }
    /* The same URL with HOST:PORT the proxy's (the helpers read any SCHEME://USER:PASS@HOST:PORT/
     * form). */
    char host[64];
    char *store = store_url;
    int port;
    if (mysql_testutil_host(db_url, host, sizeof host, &port) != 0 ||
        (proxy = pg ? tcp_proxy_start_pg(host, port) : tcp_proxy_start(host, port, true)) == NULL ||
        mysql_testutil_via(db_url, tcp_proxy_port(proxy), store, sizeof store_url) != 0) {
        CHECK(!"a proxy in front of the database");
        tcp_proxy_stop(proxy);
        return h_summary();
    }
    if (pg) {
        snprintf(store + strlen(store), sizeof store_url - strlen(store), "&sslmode=disable");
    }
    /* One writer, and the scheduler's first ticks are its only other commits: they run before
     * the first publish below, so every cut lands on a commit of the test. */
    const char *sets[] = {store, "store.writers=1", "scavenger.interval_ms=3600000",
                          "retention.interval_ms=86400000", NULL};
    if (roostd_start_checked(&d, NULL, sets)) {
        tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
        char id[31];
        CHECK_EQ(publish("warm.up", NULL, id, NULL), 201);
        RUN(test_publish_answer_lost);
        RUN(test_publish_keyless_answer_lost);
        RUN(test_publish_commit_not_sent);
        RUN(test_publish_commit_not_sent_held);
        RUN(test_publish_never_commits);
        RUN(test_ack_answer_lost);
        RUN(test_ack_never_commits);
        RUN(test_claim_answer_lost);
        RUN(test_claim_commit_not_sent);
        RUN(test_claim_with_publish_answer_lost);
        RUN(test_claim_with_publish_commit_not_sent);
        if (!pg) {
            RUN(test_claim_with_publish_never_commits);
        }
        RUN(test_sdk_retry_after_cut);
        RUN(test_cli_retry_after_cut);
        if (!pg) {
            RUN(test_markers_pruned);
            RUN(test_start_migration_answer_lost);
        }
        if (check_failed) {
            roostd_print_log(&d);
        }
        roostd_finish(&d);
        free(tok);
    }
    tcp_proxy_stop(proxy);
    if (pg) {
        pg_testutil_drop_schema(db_url);
    } else {
        mysql_testutil_drop_db(db_url);
    }
    return h_summary();
}
