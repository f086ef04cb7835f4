/* SPDX-License-Identifier: MIT */
/* The commit whose answer is lost, on PostgreSQL (doc/POSTGRES.md): roostd talks to PostgreSQL
 * through a loopback proxy (tests/harness/tcp_proxy.c, PostgreSQL mode) that breaks the
 * connection exactly at a COMMIT:
 *   - COMMIT sent, answer dropped: txid_status says committed; the publish is answered 201 and
 *     exactly one event exists; the same idempotency key again finds it (200); an ack answers 200;
 *   - COMMIT never sent: txid_status says aborted; the group is replayed (201, one event); with
 *     the server side of the dead connection held open (its transaction and locks too), the old
 *     backend is terminated, so the replay does not wait on its locks;
 *   - every COMMIT cut: 503 + Retry-After and no trace; the retry after the proxy heals makes the
 *     one event (publish) or completes it (ack).
 * argv[1] is the URL of the test server (ctest fixture postgres); the test runs in a schema of its
 * own. */
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "harness/tcp_proxy.h"
#include "pg/pg_testutil.h"

#include "common/banned.h"

static char db_url[1024];
static struct tcp_proxy *proxy;
static struct roostd d;
static char *tok;

/* An integer from one SQL query (taken, freed here) on the real server, not through the proxy;
 * -1 on failure. */
static long long sql_int(char *sql)
{
    PGconn *db = pg_testutil_connect(db_url);
    long long v = -1;
    if (db != NULL) {
        PGresult *res = PQexec(db, sql);
        if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
            v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        } else {
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

static void test_publish_commit_not_sent(void)
{
    char id[31];
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_NOT_SENT, 1);
    CHECK_EQ(publish("lost.b", NULL, id, NULL), 201);
    CHECK_EQ(tcp_proxy_cuts(proxy), cuts + 1);
    CHECK_EQ(events_of("lost.b"), 1);
}

/* The server never hears that the client went: the old backend keeps its transaction open and
 * the agent row locked, and txid_status says "in progress" until it is terminated. */
static void test_publish_commit_not_sent_held(void)
{
    char id[31];
    CHECK_EQ(publish("lost.c", NULL, id, NULL), 201);
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_NOT_SENT_HOLD, 1);
    int64_t t0 = h_now_ms();
    CHECK_EQ(publish("lost.c", NULL, id, NULL), 201);
    /* Without the termination the replay would wait for the lock until lock_timeout (10 s). */
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
    CHECK_EQ(status_of(id), 3); /* completed */
    CHECK_EQ(h_ack(d.http, tok, "ack.a", id, lease), 200);
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
    tcp_proxy_arm(proxy, TCP_PROXY_PASS, 0);
    CHECK_EQ(status_of(id), 2); /* still claimed */
    CHECK_EQ(h_ack(d.http, tok, "ack.b", id, lease), 200);
    CHECK_EQ(status_of(id), 3);
    free(lease);
}

int main(int argc, char **argv)
{
    h_init();
    if (argc < 2) {
        fprintf(stderr, "usage: %s POSTGRES_URL (a server of scripts/postgres_test.sh)\n", argv[0]);
        return 2;
    }
    if (pg_testutil_fresh_schema(argv[1], "commit", db_url, sizeof db_url) != 0) {
        CHECK(!"fresh schema");
        return h_summary();
    }
    /* postgres://USER:PASS@HOST:PORT/DB?…: the same URL with HOST:PORT the proxy's. */
    const char *at = strrchr(db_url, '@');
    const char *colon = at ? strchr(at, ':') : NULL;
    const char *slash = colon ? strchr(colon, '/') : NULL;
    char host[64];
    if (!slash || (size_t)(colon - at - 1) >= sizeof host) {
        CHECK(!"a postgres://USER:PASS@HOST:PORT/DB URL");
        return h_summary();
    }
    snprintf(host, sizeof host, "%.*s", (int)(colon - at - 1), at + 1);
    proxy = tcp_proxy_start_pg(host, (int)strtol(colon + 1, NULL, 10));
    if (proxy == NULL) {
        CHECK(!"proxy started");
        return h_summary();
    }
    char *store = h_fmt("store.url=%.*s127.0.0.1:%d%s&sslmode=disable", (int)(at + 1 - db_url),
                        db_url, tcp_proxy_port(proxy), slash);
    /* One writer, and the scheduler's first ticks are its only other commits: they run before
     * the first publish below, so every cut lands on a commit of the test. */
    const char *sets[] = {store, "store.writers=1", "scavenger.interval_ms=3600000",
                          "retention.interval_ms=86400000", NULL};
    if (roostd_start(&d, NULL, sets) != 0) {
        CHECK(!"roostd started");
    } else {
        tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
        char id[31];
        CHECK_EQ(publish("warm.up", NULL, id, NULL), 201);
        RUN(test_publish_answer_lost);
        RUN(test_publish_commit_not_sent);
        RUN(test_publish_commit_not_sent_held);
        RUN(test_publish_never_commits);
        RUN(test_ack_answer_lost);
        RUN(test_ack_never_commits);
        if (check_failed) {
            roostd_print_log(&d);
        }
        CHECK_EQ(roostd_stop(&d), 0);
        roostd_remove_dir(&d);
        free(tok);
    }
    free(store);
    tcp_proxy_stop(proxy);
    pg_testutil_drop_schema(db_url);
    return h_summary();
}
