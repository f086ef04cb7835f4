/* SPDX-License-Identifier: MIT */
/* Inbound webhook deliveries through database faults (issue 31, doc/INGEST.md). roostd on a
 * MariaDB of this test's own (scripts/mariadb_test.sh, so the fixture's server, which other tests
 * share, is never stopped), reached through a loopback proxy (tests/harness/tcp_proxy.c) that
 * breaks the connection at a COMMIT. Every delivery is signed by npm standardwebhooks
 * (tests/js/ingest_sign.mjs) and sent as a sender sends it, retried until a 2xx:
 *   - the COMMIT's answer lost: 200 (roostd resolves the outcome), one event; the sender's retry
 *     is the same event (duplicate: true); receipts: one accepted, one duplicate;
 *   - every COMMIT cut: 503 with Retry-After, no event and no receipt; the retry after the
 *     proxy heals makes the one event;
 *   - roostd's answer lost on the way to the sender: the retry finds the one event;
 *   - (straight to MariaDB, no proxy) MariaDB, then roostd, SIGKILLed while a delivery waits inside
 * its transaction (on the agent's row, locked by another connection) and started again: the
 * sender's retries make exactly one event (the delivery roostd was killed under got no answer at
 * all), and each delivery that got a 2xx before the crash is still there after it. argv[1], the
 * fixture's URL, is not used. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/harness.h"
#include "harness/tcp_proxy.h"
#include "mysql/mysql_testutil.h"

#include "common/banned.h"

/* A sender retries this long (times the harness patience, 6 by default) before it gives up:
 * within ingest.tolerance_s (300 s) of its signed timestamp. */
#define SENDER_PATIENCE_MS 40000

static char db_dir[128];
static char db_url[512];
static struct tcp_proxy *proxy;
static struct roostd d;
static char source_id[64];
static char secret[128];

/* An integer from one SQL query (taken, freed here) on the real server; -1 on failure. */
static long long sql_int(char *sql)
{
    long long v = mysql_testutil_int(db_url, sql);
    free(sql);
    return v;
}

/* Events in the inbox for one delivery id (the payload names it; the correlation id is it). */
static long long events_of(const char *delivery_id)
{
    return sql_int(h_fmt("SELECT count(*) FROM inbox WHERE correlation_id = '%s'", delivery_id));
}

static long long receipts_of(const char *delivery_id, const char *outcome)
{
    return sql_int(h_fmt("SELECT count(*) FROM ingest_receipts WHERE delivery_id = '%s' AND"
                         " outcome = '%s'",
                         delivery_id, outcome));
}

/* One delivery as its sender sends it: the body and the headers npm standardwebhooks made. */
struct delivery {
    char id[64];
    char *body;
    char *lines[8]; /* "Name: value", NULL-ended */
};

static void delivery_cleanup(struct delivery *dv)
{
    free(dv->body);
    for (size_t i = 0; dv->lines[i] != NULL; i++) {
        free(dv->lines[i]);
    }
    memset(dv, 0, sizeof *dv);
}

/* Signs `id` with the source's secret through tests/js/ingest_sign.mjs. 0 or -1. */
static int sign(struct delivery *dv, const char *id)
{
    memset(dv, 0, sizeof *dv);
    snprintf(dv->id, sizeof dv->id, "%s", id);
    dv->body = h_fmt("{\"type\":\"response.completed\",\"data\":{\"id\":\"resp_%s\"}}", id);
    char *file = h_fmt("%s/body-%s.json", d.dir, id);
    FILE *f = fopen(file, "w");
    if (f == NULL || fputs(dv->body, f) < 0 || fclose(f) != 0) {
        free(file);
        return -1;
    }
    char *cmd = h_fmt("node '%s/js/ingest_sign.mjs' standard-webhooks '%s' '%s' '%s'", TESTS_DIR,
                      secret, file, id);
    FILE *p = popen(cmd, "r");
    char out[4096];
    size_t n = p != NULL ? fread(out, 1, sizeof out - 1, p) : 0;
    int rc = p != NULL && pclose(p) == 0 ? 0 : -1;
    out[n] = '\0';
    free(cmd);
    free(file);
    json_t *h = rc == 0 ? json_loads(out, 0, NULL) : NULL;
    const char *k;
    json_t *v;
    size_t i = 0;
    json_object_foreach(h, k, v)
    {
        if (i + 1 < sizeof dv->lines / sizeof dv->lines[0]) {
            dv->lines[i++] = h_fmt("%s: %s", k, json_string_value(v));
        }
    }
    json_decref(h);
    return i == 3 ? 0 : -1;
}

/* POSTs the delivery to base (roostd, or a proxy in front of it). The status (-1: no answer);
 * *event_id (31 bytes) the event's id when there is one; *dup whether it was a duplicate. */
static long deliver(struct h_client *c, const struct delivery *dv, char *event_id, bool *dup,
                    struct h_response *keep)
{
    char *path = h_fmt("/ingest/%s", source_id);
    struct h_req_opts o = {.headers = (const char *const *)dv->lines};
    struct h_response r = {0};
    if (h_request(c, "POST", path, NULL, dv->body, strlen(dv->body), &o, &r) != 0) {
        r.status = -1;
    }
    free(path);
    json_t *e0 = h_at(json_object_get(r.json, "events"), 0);
    if (event_id != NULL) {
        snprintf(event_id, 31, "%s", e0 && h_str(e0, "event_id") ? h_str(e0, "event_id") : "");
    }
    if (dup != NULL) {
        *dup = json_is_true(json_object_get(r.json, "duplicate"));
    }
    long status = r.status;
    if (keep != NULL) {
        *keep = r;
    } else {
        h_response_cleanup(&r);
    }
    return status;
}

static void test_commit_answer_lost(void)
{
    struct delivery dv;
    char first[31], again[31];
    bool dup = true;
    if (sign(&dv, "lost-1") != 0) {
        CHECK(!"signed by npm standardwebhooks");
        return;
    }
    int cuts = tcp_proxy_cuts(proxy);
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_ANSWER_LOST, 1);
    CHECK_EQ(deliver(d.http, &dv, first, &dup, NULL), 200);
    CHECK(!dup);
    CHECK_EQ(tcp_proxy_cuts(proxy), cuts + 1);
    CHECK_EQ(events_of("lost-1"), 1);
    /* A sender that timed out meanwhile retries: the same event. */
    CHECK_EQ(deliver(d.http, &dv, again, &dup, NULL), 200);
    CHECK(dup);
    CHECK_STREQ(again, first);
    CHECK_EQ(events_of("lost-1"), 1);
    CHECK_EQ(receipts_of("lost-1", "accepted"), 1);
    CHECK_EQ(receipts_of("lost-1", "duplicate"), 1);
    delivery_cleanup(&dv);
}

static void test_commit_never_made(void)
{
    struct delivery dv;
    struct h_response r = {0};
    char id[31], again[31];
    bool dup = true;
    if (sign(&dv, "cut-1") != 0) {
        CHECK(!"signed by npm standardwebhooks");
        return;
    }
    tcp_proxy_arm(proxy, TCP_PROXY_COMMIT_NOT_SENT, 1000);
    CHECK_EQ(deliver(d.http, &dv, id, &dup, &r), 503);
    char ra[16];
    CHECK(h_header(&r, "Retry-After", ra, sizeof ra) != NULL);
    h_response_cleanup(&r);
    tcp_proxy_arm(proxy, TCP_PROXY_PASS, 0);
    CHECK_EQ(events_of("cut-1"), 0);
    CHECK_EQ(
        sql_int(h_fmt("SELECT count(*) FROM ingest_receipts WHERE delivery_id = '%s'", "cut-1")),
        0);
    CHECK_EQ(deliver(d.http, &dv, id, &dup, NULL), 200);
    CHECK(!dup);
    CHECK_EQ(deliver(d.http, &dv, again, &dup, NULL), 200);
    CHECK(dup);
    CHECK_STREQ(again, id);
    CHECK_EQ(events_of("cut-1"), 1);
    delivery_cleanup(&dv);
}

/* The COMMIT went through, the sender never heard: its retry gets the same event. */
static void test_http_answer_lost(void)
{
    struct delivery dv;
    char id[31];
    bool dup = false;
    struct tcp_proxy *http = tcp_proxy_start(d.host, d.port, false);
    if (http == NULL || sign(&dv, "http-1") != 0) {
        CHECK(!"http proxy started, delivery signed");
        tcp_proxy_stop(http);
        return;
    }
    char *base = h_fmt("http://127.0.0.1:%d", tcp_proxy_port(http));
    struct h_client *c = h_client_new(base);
    tcp_proxy_arm(http, TCP_PROXY_ANSWER_LOST, 1);
    CHECK_EQ(deliver(c, &dv, id, &dup, NULL), -1);
    CHECK_EQ(tcp_proxy_cuts(http), 1);
    CHECK_EQ(events_of("http-1"), 1);
    CHECK_EQ(deliver(c, &dv, id, &dup, NULL), 200);
    CHECK(dup);
    CHECK_EQ(events_of("http-1"), 1);
    h_client_free(c);
    free(base);
    tcp_proxy_stop(http);
    delivery_cleanup(&dv);
}

/* A sender on its own thread: retries one delivery until a 2xx (or its patience ends). */
struct sender {
    pthread_t thread;
    const struct delivery *dv;
    long first_status; /* the answer to the first try (-1: none) */
    bool acked;
    int tries;
};

static void *sender_run(void *arg)
{
    struct sender *s = arg;
    char url[sizeof d.url];
    snprintf(url, sizeof url, "%s", d.url); /* a restarted roostd listens on the same port */
    struct h_client *c = h_client_new(url);
    int64_t deadline = h_now_ms() + h_patience(SENDER_PATIENCE_MS);
    s->first_status = 0;
    while (!s->acked && h_now_ms() < deadline) {
        long st = deliver(c, s->dv, NULL, NULL, NULL);
        if (s->tries++ == 0) {
            s->first_status = st;
        }
        s->acked = st >= 200 && st < 300;
        if (!s->acked) {
            h_sleep_ms(200); /* a sender's back-off, not a synchronisation */
        }
    }
    h_client_free(c);
    return NULL;
}

static const char *roostd_sets[8]; /* roostd's settings, NULL-ended (main) */

enum crash { CRASH_DATABASE, CRASH_ROOSTD };

/* SIGKILLs MariaDB and starts it again on the same data and port. */
static void crash_database(void)
{
    char *pid_path = h_fmt("%s/mysqld.pid", db_dir), *pid_text = NULL;
    size_t len;
    CHECK_EQ(h_read_file(pid_path, &pid_text, &len), 0);
    pid_t pid = pid_text != NULL ? (pid_t)strtol(pid_text, NULL, 10) : 0;
    CHECK(pid > 0);
    if (pid > 0) {
        CHECK_EQ(kill(pid, SIGKILL), 0);
        bool gone;
        H_WAIT_UNTIL(gone, 30000, kill(pid, 0) != 0);
        CHECK(gone);
    }
    char *resume =
        h_fmt("'%s/../scripts/mariadb_test.sh' resume '%s' >/dev/null", TESTS_DIR, db_dir);
    CHECK_EQ(system(resume), 0);
    free(resume);
    free(pid_text);
    free(pid_path);
}

/* SIGKILLs roostd and starts it again on the same data dir and port (where the sender retries). */
static void crash_roostd(MYSQL **locker)
{
    char dir[256], listen[64];
    snprintf(dir, sizeof dir, "%s", d.dir);
    snprintf(listen, sizeof listen, "listen=127.0.0.1:%d", d.port);
    roostd_kill(&d);
    mysql_close(*locker); /* the dead roostd's transaction was rolled back; the row is free */
    *locker = NULL;
    const char *sets[sizeof roostd_sets / sizeof roostd_sets[0] + 1];
    size_t n = 0;
    for (; roostd_sets[n] != NULL; n++) {
        sets[n] = roostd_sets[n];
    }
    sets[n++] = listen;
    sets[n] = NULL;
    CHECK_EQ(roostd_start(&d, dir, sets), 0);
}

/* A delivery caught inside its transaction (waiting on the agent's row, which another connection
 * holds) when MariaDB or roostd is SIGKILLed, then started again; its sender retries until a 2xx.
 * Exactly one event, and the deliveries answered 200 before the crash are all there after it. */
static void held_through(enum crash what)
{
    enum { BEFORE = 5 };
    const char *tag = what == CRASH_DATABASE ? "dbcrash" : "roostdcrash";
    struct delivery before[BEFORE], held;
    char id[64];
    snprintf(id, sizeof id, "%s-held", tag);
    bool signed_all = sign(&held, id) == 0;
    for (int i = 0; i < BEFORE; i++) {
        snprintf(id, sizeof id, "%s-before-%d", tag, i);
        signed_all = sign(&before[i], id) == 0 && signed_all;
    }
    if (!signed_all) {
        CHECK(!"signed by npm standardwebhooks");
        return;
    }
    for (int i = 0; i < BEFORE; i++) {
        CHECK_EQ(deliver(d.http, &before[i], NULL, NULL, NULL), 200);
    }
    MYSQL *locker = mysql_testutil_connect(db_url);
    CHECK(locker != NULL);
    if (locker == NULL) {
        return;
    }
    CHECK_EQ(mysql_testutil_exec(locker, "BEGIN"), 0);
    CHECK_EQ(mysql_testutil_exec(locker, "SELECT * FROM agents WHERE tenant_id = 't1' AND"
                                         " agent_id = 'crashy' FOR UPDATE"),
             0);
    struct sender s = {.dv = &held};
    CHECK_EQ(pthread_create(&s.thread, NULL, sender_run, &s), 0);
    /* roostd's publish waiting on the locked row: its INSERT INTO agents under way in the
     * processlist. innodb_trx alone misses it: a transaction whose first write waits for a lock
     * is not listed there as LOCK WAIT until it has written (seen under load). */
    bool waiting;
    H_WAIT_UNTIL(waiting, 30000,
                 sql_int(h_fmt("SELECT count(*) FROM information_schema.processlist WHERE"
                               " command IN ('Query', 'Execute') AND info LIKE '%s'",
                               "INSERT INTO agents%")) >= 1);
    CHECK(waiting);
    if (what == CRASH_DATABASE) {
        crash_database();
        mysql_close(locker);
    } else {
        crash_roostd(&locker);
    }
    CHECK_EQ(pthread_join(s.thread, NULL), 0);
    printf("%s: the held delivery's first answer %ld, %d tries\n", tag, s.first_status, s.tries);
    CHECK(s.acked);
    if (what == CRASH_ROOSTD) {
        CHECK_EQ(s.first_status, -1); /* it was in flight: the kill cut it unanswered */
    }
    CHECK_EQ(events_of(held.id), 1);
    CHECK_EQ(receipts_of(held.id, "accepted"), 1);
    for (int i = 0; i < BEFORE; i++) {
        CHECK_EQ(events_of(before[i].id), 1);
        delivery_cleanup(&before[i]);
    }
    delivery_cleanup(&held);
}

static void test_database_crash_mid_delivery(void)
{
    held_through(CRASH_DATABASE);
}

static void test_roostd_crash_mid_delivery(void)
{
    held_through(CRASH_ROOSTD);
}

/* A source of tenant t1 for agent "crashy" (standard-webhooks: roostd makes the whsec_ secret). */
static int add_source(void)
{
    char *tok = h_token(&d, "t1", "tenant:admin");
    json_t *out = NULL;
    long st = h_callj(d.http, "POST", tok,
                      json_pack("{s:s, s:s, s:[s]}", "name", "openai", "scheme",
                                "standard-webhooks", "agents", "crashy"),
                      &out, "/api/v1/admin/sources");
    free(tok);
    const char *id = h_str(out, "source_id"), *sec = h_str(out, "secret");
    int rc = st == 201 && id != NULL && sec != NULL ? 0 : -1;
    if (rc == 0) {
        snprintf(source_id, sizeof source_id, "%s", id);
        snprintf(secret, sizeof secret, "%s", sec);
    }
    json_decref(out);
    return rc;
}

int main(void)
{
    h_init();
    const char *tmp = getenv("TMPDIR");
    snprintf(db_dir, sizeof db_dir, "%s/roost-ingestdb-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(db_dir) == NULL) {
        CHECK(!"mkdtemp");
        return h_summary();
    }
    char *start = h_fmt("'%s/../scripts/mariadb_test.sh' start '%s' >/dev/null", TESTS_DIR, db_dir);
    char *stop = h_fmt("'%s/../scripts/mariadb_test.sh' stop '%s'", TESTS_DIR, db_dir);
    char *url_path = h_fmt("%s/url", db_dir), *base = NULL;
    size_t len;
    CHECK_EQ(system(start), 0);
    CHECK_EQ(h_read_file(url_path, &base, &len), 0);
    if (base != NULL) {
        base[strcspn(base, "\r\n")] = '\0';
    }
    if (base == NULL || mysql_testutil_fresh_db(base, "ingest", db_url, sizeof db_url) != 0) {
        CHECK(!"a database on the private server");
        goto out;
    }
    char host[64], store[600];
    int port;
    if (mysql_testutil_host(db_url, host, sizeof host, &port) != 0 ||
        (proxy = tcp_proxy_start(host, port, true)) == NULL ||
        mysql_testutil_via(db_url, tcp_proxy_port(proxy), store, sizeof store) != 0) {
        CHECK(!"a proxy in front of the database");
        goto out;
    }
    /* One writer, and the scheduler's first ticks are its only other commits: every cut lands
     * on a commit of the test. */
    const char *sets[] = {store,
                          "store.writers=1",
                          "scavenger.interval_ms=3600000",
                          "retention.interval_ms=86400000",
                          "ingest.rate_per_s=0",
                          NULL};
    memcpy(roostd_sets, sets, sizeof sets);
    if (roostd_start(&d, NULL, sets) != 0) {
        CHECK(!"roostd started");
        goto out;
    }
    if (add_source() != 0) {
        CHECK(!"source added");
    } else {
        RUN(test_commit_answer_lost);
        RUN(test_commit_never_made);
        RUN(test_http_answer_lost);
    }
    /* The crashes need no proxy: roostd again on the same data dir, straight to MariaDB. */
    char dir[256], direct[600];
    snprintf(dir, sizeof dir, "%s", d.dir);
    snprintf(direct, sizeof direct, "store.url=%s", db_url);
    roostd_sets[0] = direct;
    CHECK_EQ(roostd_stop(&d), 0);
    if (source_id[0] != '\0' && roostd_start(&d, dir, roostd_sets) == 0) {
        RUN(test_database_crash_mid_delivery);
        RUN(test_roostd_crash_mid_delivery);
    }
    if (check_failed) {
        roostd_print_log(&d);
    }
    CHECK_EQ(roostd_stop(&d), 0);
    roostd_remove_dir(&d);
out:
    tcp_proxy_stop(proxy);
    CHECK_EQ(system(stop), 0);
    free(base);
    free(url_path);
    free(start);
    free(stop);
    return h_summary();
}
