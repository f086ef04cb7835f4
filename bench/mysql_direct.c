/* SPDX-License-Identifier: MIT */
/* mysql_direct: the "plain SKIP LOCKED loop" peer of BENCHMARKS.md on MariaDB/MySQL, the same full
 * cycle as roost_load and sqlite_direct without HTTP, one connection per thread, prepared
 * statements, READ COMMITTED (like roostd's MySQL store; --isolation rr for REPEATABLE READ).
 *
 *   producers: INSERT one ~100-byte row per autocommit transaction
 *   consumers: BEGIN; SELECT id, payload … WHERE agent = ? AND status = 0 ORDER BY id LIMIT 10
 *              FOR UPDATE SKIP LOCKED; UPDATE … SET status = 1 WHERE id IN (…); COMMIT; then
 *              UPDATE … SET status = 2 WHERE id = ? per row, each in its own autocommit
 *              transaction (or all in one transaction with --batch-ack)
 *
 * Durability is the server's (innodb_flush_log_at_trx_commit; scripts/bench_mysql.sh starts a
 * private MariaDB at 1). The loops, the counting and the wait of a consumer that finds nothing
 * (a per-agent condition signalled after each commit, in-process notification) are the peers'
 * one driver's (bench_peer.h); this file is its MariaDB backend. A deadlock (1213) or lock wait
 * timeout (1205) rolls back and retries; both are counted, as are the server's Innodb_deadlocks /
 * Innodb_row_lock_waits over the run.
 *
 *   mysql_direct --url mysql://USER:PASS@HOST:PORT/DB [options]
 *
 * With --hop URL every statement group (an insert, a claim transaction, an ack) first makes one
 * HTTP round trip to the server at URL (bench/null_server: a publish answered from memory): the
 * loop with an HTTP front's hop in front of each request, the least a server between the clients
 * and this loop adds (doc/BENCHMARKS.md, "The ideal durable server").
 *
 * Latency is publish start → ack commit, from the time stored in the payload. Output: one
 * "RESULT key=value …" line, the same keys as roost_load and sqlite_direct. Creates the table
 * bench_direct_queue in DB (dropped first with --fresh). */
#include <errno.h>
#include <getopt.h>
#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_http.h"
#include "bench_peer.h"
#include "store/store_mysql.h"

#include "common/banned.h"

#define MAX_LIMIT 100
#define PAYLOAD_CAP 1024
#define ER_LOCK_WAIT_TIMEOUT_ 1205
#define ER_LOCK_DEADLOCK_ 1213

struct opts {
    const char *url;
    struct bench_drive_opts d; /* --producers … --payload-bytes */
    bool repeatable_read;
};

static struct opts g;
static struct store_mysql_url g_url;
static struct bench_node g_hop; /* --hop: host[0] is '\0' without it */

/* One hop: a publish to the --hop server, answered 201. 0, or -1 (counted as an error). */
static int hop(struct bench_conn *c)
{
    static const char body[] = "{\"recipients\":[\"hop\"],\"payload\":{\"n\":1}}";
    int status = 0;
    const char *resp;
    size_t resp_len;
    if (g_hop.host[0] == '\0') {
        return 0;
    }
    if (bench_http_post(c, "/api/v1/events", body, sizeof body - 1, &status, &resp, &resp_len) !=
            0 ||
        status != 201) {
        fprintf(stderr, "mysql_direct: hop: %s\n", status ? "not 201" : strerror(errno));
        return -1;
    }
    return 0;
}

static atomic_ulong g_deadlocks, g_lock_timeouts;

static const char *schema[] = {
    "CREATE TABLE IF NOT EXISTS bench_direct_queue ("
    "  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
    "  agent VARCHAR(64) NOT NULL,"
    "  status TINYINT NOT NULL DEFAULT 0," /* 0 pending, 1 claimed, 2 done */
    "  payload TEXT NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  claimed_at BIGINT NULL,"
    "  done_at BIGINT NULL,"
    "  KEY queue_pending (agent, status, id)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
};

static void die_db(MYSQL *db, const char *what)
{
    fprintf(stderr, "mysql_direct: %s: %s\n", what, db ? mysql_error(db) : "no connection");
    exit(1);
}

static MYSQL *connect_db(void)
{
    MYSQL *db = mysql_init(NULL);
    if (!db) {
        die_db(NULL, "mysql_init");
    }
    unsigned int timeout_s = 30;
    mysql_optionsv(db, MYSQL_OPT_CONNECT_TIMEOUT, &timeout_s);
    mysql_optionsv(db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    const char *sock = g_url.socket[0] ? g_url.socket : NULL;
    if (!mysql_real_connect(db, sock ? NULL : g_url.hosts[0].name, g_url.user, g_url.pass, g_url.db,
                            g_url.hosts[0].port, sock, 0)) {
        die_db(db, "connect");
    }
    const char *iso = g.repeatable_read ? "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
                                        : "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";
    if (mysql_query(db, iso) != 0) {
        die_db(db, iso);
    }
    return db;
}

static MYSQL_STMT *prepare(MYSQL *db, const char *sql)
{
    MYSQL_STMT *st = mysql_stmt_init(db);
    if (!st || mysql_stmt_prepare(st, sql, strlen(sql)) != 0) {
        die_db(db, sql);
    }
    return st;
}

static int64_t now_ms(void)
{
    return (int64_t)time(NULL) * 1000;
}

/* Counts a deadlock / lock wait timeout (retried by the caller); true when errno is one. */
static bool count_lock_error(unsigned int err)
{
    if (err == ER_LOCK_DEADLOCK_) {
        atomic_fetch_add(&g_deadlocks, 1);
        return true;
    }
    if (err == ER_LOCK_WAIT_TIMEOUT_) {
        atomic_fetch_add(&g_lock_timeouts, 1);
        return true;
    }
    return false;
}

/* A worker's connection, statements and hop connection: the backend of the driver
 * (bench_peer.h). */
struct mconn {
    MYSQL *db;
    MYSQL_STMT *ins;    /* INSERT one row */
    MYSQL_STMT *select; /* SELECT … FOR UPDATE SKIP LOCKED */
    MYSQL_STMT *claim;  /* UPDATE … status = 1 WHERE id IN (?, … ?): `limit` placeholders */
    MYSQL_STMT *done;   /* UPDATE … status = 2 WHERE id = ? AND status = 1 */
    struct bench_conn hop;
};

static void *my_open(enum bench_role role, int idx)
{
    (void)idx;
    struct mconn *c = calloc(1, sizeof *c);
    if (!c) {
        return NULL;
    }
    mysql_thread_init();
    c->db = connect_db();
    bench_conn_init(&c->hop, &g_hop, NULL, 30);
    if (role == BENCH_PRODUCER) {
        c->ins = prepare(c->db, "INSERT INTO bench_direct_queue (agent, payload, created_at) "
                                "VALUES (?, ?, ?)");
        return c;
    }
    c->select = prepare(c->db, "SELECT id, payload FROM bench_direct_queue WHERE agent = ? AND "
                               "status = 0 ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED");
    char claim_sql[256 + 4 * MAX_LIMIT];
    size_t off = (size_t)snprintf(claim_sql, sizeof claim_sql,
                                  "UPDATE bench_direct_queue SET status = 1, claimed_at = ? "
                                  "WHERE id IN (");
    for (int i = 0; i < g.d.limit; i++) {
        off += (size_t)snprintf(claim_sql + off, sizeof claim_sql - off, "%s?", i ? "," : "");
    }
    snprintf(claim_sql + off, sizeof claim_sql - off, ")");
    c->claim = prepare(c->db, claim_sql);
    c->done = prepare(c->db, "UPDATE bench_direct_queue SET status = 2, done_at = ? "
                             "WHERE id = ? AND status = 1");
    return c;
}

static void my_close(void *p)
{
    struct mconn *c = p;
    bench_conn_free(&c->hop);
    MYSQL_STMT *sts[] = {c->ins, c->select, c->claim, c->done};
    for (size_t i = 0; i < sizeof sts / sizeof sts[0]; i++) {
        if (sts[i]) {
            mysql_stmt_close(sts[i]);
        }
    }
    mysql_close(c->db);
    free(c);
    mysql_thread_end();
}

static int my_publish(void *p, struct bench_agent *a, const char *payload, int len)
{
    struct mconn *c = p;
    if (hop(&c->hop) != 0) {
        return BENCH_FAIL;
    }
    unsigned long agent_len = (unsigned long)strlen(a->name), payload_len = (unsigned long)len;
    long long created = now_ms();
    MYSQL_BIND b[3];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_STRING;
    b[0].buffer = a->name;
    b[0].length = &agent_len;
    b[1].buffer_type = MYSQL_TYPE_STRING;
    b[1].buffer = (char *)payload;
    b[1].length = &payload_len;
    b[2].buffer_type = MYSQL_TYPE_LONGLONG;
    b[2].buffer = &created;
    if (mysql_stmt_bind_param(c->ins, b) != 0 || mysql_stmt_execute(c->ins) != 0) {
        if (count_lock_error(mysql_stmt_errno(c->ins))) {
            return BENCH_RETRY;
        }
        bench_report("mysql_direct: insert: %s", mysql_stmt_error(c->ins));
        return BENCH_FAIL;
    }
    return BENCH_OK;
}

/* One claim transaction. Returns the number of rows claimed (out filled), 0 when none,
 * BENCH_RETRY on a deadlock or lock wait timeout (rolled back, counted), BENCH_FAIL on another
 * error. */
static int claim_batch(struct mconn *s, const char *agent, struct bench_event *out)
{
    MYSQL *db = s->db;
    if (mysql_query(db, "BEGIN") != 0) {
        return count_lock_error(mysql_errno(db)) ? BENCH_RETRY : BENCH_FAIL;
    }
    /* parameters: agent, limit */
    char a[64];
    unsigned long a_len = (unsigned long)snprintf(a, sizeof a, "%s", agent);
    int limit = g.d.limit;
    MYSQL_BIND p[2];
    memset(p, 0, sizeof p);
    p[0].buffer_type = MYSQL_TYPE_STRING;
    p[0].buffer = a;
    p[0].length = &a_len;
    p[1].buffer_type = MYSQL_TYPE_LONG;
    p[1].buffer = &limit;
    long long id = 0;
    char payload[PAYLOAD_CAP];
    unsigned long payload_len = 0;
    MYSQL_BIND r[2];
    memset(r, 0, sizeof r);
    r[0].buffer_type = MYSQL_TYPE_LONGLONG;
    r[0].buffer = &id;
    r[1].buffer_type = MYSQL_TYPE_STRING;
    r[1].buffer = payload;
    r[1].buffer_length = sizeof payload - 1;
    r[1].length = &payload_len;
    int n = 0;
    if (mysql_stmt_bind_param(s->select, p) != 0 || mysql_stmt_execute(s->select) != 0 ||
        mysql_stmt_bind_result(s->select, r) != 0 || mysql_stmt_store_result(s->select) != 0) {
        goto stmt_fail;
    }
    for (;;) {
        int f = mysql_stmt_fetch(s->select);
        if (f == MYSQL_NO_DATA) {
            break;
        }
        if (f != 0 && f != MYSQL_DATA_TRUNCATED) {
            goto stmt_fail;
        }
        if (n < g.d.limit) {
            out[n].id = id;
            size_t pl = payload_len < sizeof payload - 1 ? payload_len : sizeof payload - 1;
            if (bench_payload_time(payload, pl, &out[n].t_ns) != 0) {
                out[n].t_ns = bench_now_ns();
            }
            n++;
        }
    }
    mysql_stmt_free_result(s->select);
    if (n > 0) {
        long long claim_ids[MAX_LIMIT + 1];
        long long claimed_at = now_ms();
        MYSQL_BIND c[MAX_LIMIT + 1];
        memset(c, 0, sizeof(MYSQL_BIND) * (size_t)(g.d.limit + 1));
        c[0].buffer_type = MYSQL_TYPE_LONGLONG;
        c[0].buffer = &claimed_at;
        for (int i = 0; i < g.d.limit; i++) {
            claim_ids[i] = out[i < n ? i : n - 1].id; /* pad with the last id */
            c[i + 1].buffer_type = MYSQL_TYPE_LONGLONG;
            c[i + 1].buffer = &claim_ids[i];
        }
        if (mysql_stmt_bind_param(s->claim, c) != 0 || mysql_stmt_execute(s->claim) != 0) {
            MYSQL_STMT *st = s->claim;
            unsigned int err = mysql_stmt_errno(st);
            mysql_rollback(db);
            if (count_lock_error(err)) {
                return BENCH_RETRY;
            }
            fprintf(stderr, "mysql_direct: claim update: %s\n", mysql_stmt_error(st));
            return BENCH_FAIL;
        }
    }
    if (mysql_commit(db) != 0) {
        unsigned int err = mysql_errno(db);
        mysql_rollback(db);
        return count_lock_error(err) ? BENCH_RETRY : BENCH_FAIL;
    }
    return n;

stmt_fail : {
    unsigned int err = mysql_stmt_errno(s->select);
    char msg[256];
    snprintf(msg, sizeof msg, "%s", mysql_stmt_error(s->select));
    mysql_stmt_free_result(s->select);
    mysql_rollback(db);
    if (count_lock_error(err)) {
        return BENCH_RETRY;
    }
    fprintf(stderr, "mysql_direct: claim select: %s\n", msg);
    return BENCH_FAIL;
}
}

/* Marks one row done. BENCH_OK, BENCH_RETRY (lock error) or BENCH_FAIL. */
static int ack_one(MYSQL_STMT *done, int64_t id)
{
    long long done_at = now_ms(), row = id;
    MYSQL_BIND b[2];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONGLONG;
    b[0].buffer = &done_at;
    b[1].buffer_type = MYSQL_TYPE_LONGLONG;
    b[1].buffer = &row;
    if (mysql_stmt_bind_param(done, b) != 0 || mysql_stmt_execute(done) != 0) {
        if (count_lock_error(mysql_stmt_errno(done))) {
            return BENCH_RETRY;
        }
        fprintf(stderr, "mysql_direct: ack: %s\n", mysql_stmt_error(done));
        return BENCH_FAIL;
    }
    if (mysql_stmt_affected_rows(done) != 1) {
        fprintf(stderr, "mysql_direct: ack of %lld changed %llu rows\n", row,
                (unsigned long long)mysql_stmt_affected_rows(done));
        return BENCH_FAIL;
    }
    return 0;
}

static int my_claim(void *p, struct bench_agent *a, int limit, struct bench_event *out)
{
    struct mconn *c = p;
    (void)limit; /* the claim statement has g.d.limit placeholders */
    return hop(&c->hop) == 0 ? claim_batch(c, a->name, out) : BENCH_FAIL;
}

static int my_ack(void *p, struct bench_agent *a, const struct bench_event *ev)
{
    struct mconn *c = p;
    (void)a;
    return hop(&c->hop) == 0 ? ack_one(c->done, ev->id) : BENCH_FAIL;
}

/* Every row of the claim done in one transaction. */
static int my_ack_batch(void *p, struct bench_agent *a, const struct bench_event *evs, int n)
{
    struct mconn *c = p;
    (void)a;
    if (hop(&c->hop) != 0) {
        return BENCH_FAIL;
    }
    int rc = mysql_query(c->db, "BEGIN") == 0 ? BENCH_OK : BENCH_FAIL;
    for (int i = 0; rc == BENCH_OK && i < n; i++) {
        rc = ack_one(c->done, evs[i].id);
    }
    if (rc == BENCH_OK && mysql_commit(c->db) != 0) {
        rc = count_lock_error(mysql_errno(c->db)) ? BENCH_RETRY : BENCH_FAIL;
    }
    if (rc != BENCH_OK) {
        mysql_rollback(c->db);
    }
    return rc;
}

static const struct bench_backend mysql_backend = {
    .tool = "mysql_direct",
    .open = my_open,
    .close = my_close,
    .publish = my_publish,
    .claim = my_claim,
    .ack = my_ack,
    .ack_batch = my_ack_batch,
};

/* SHOW GLOBAL STATUS value of `name`, or -1. */
static long long global_status(MYSQL *db, const char *name)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SHOW GLOBAL STATUS LIKE '%s'", name);
    if (mysql_query(db, sql) != 0) {
        return -1;
    }
    MYSQL_RES *res = mysql_store_result(db);
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    long long v = row && row[1] ? strtoll(row[1], NULL, 10) : -1;
    mysql_free_result(res);
    return v;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mysql_direct --url mysql://USER:PASS@HOST[:PORT]/DB [options]\n"
            "  --url URL             server and database (?socket=PATH for a unix socket)\n"
            "  --fresh               drop the table bench_direct_queue first\n"
            "  --hop URL             one HTTP round trip to URL before each request\n"
            "  --producers P         inserting threads (default 2)\n"
            "  --consumers C         claiming threads (default 2)\n"
            "  --agents A            agents shared by both sides (default C)\n"
            "  --seconds S           measurement window (default 10)\n"
            "  --warmup W            warm-up before the window (default 2)\n"
            "  --batch-ack           mark a claimed batch done in one transaction\n"
            "  --limit L             claim limit (default 10, at most 100)\n"
            "  --payload-bytes B     payload size (default 100)\n"
            "  --rate N              pace producers to N events/s in total (default: closed loop)\n"
            "  --isolation rc|rr     READ COMMITTED (default) or REPEATABLE READ\n");
}

int main(int argc, char **argv)
{
    enum { O_URL = 256, O_FRESH, O_ISO, O_HOP };
    static const struct option opts[] = {
        {"url", required_argument, NULL, O_URL},
        {"hop", required_argument, NULL, O_HOP},
        {"fresh", no_argument, NULL, O_FRESH},
        {"isolation", required_argument, NULL, O_ISO},
        BENCH_DRIVE_OPTIONS, /* --producers … --payload-bytes */
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool fresh = false;
    bench_drive_defaults(&g.d);
    const struct bench_drive_bounds bounds = {1, 100000, MAX_LIMIT};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (bench_drive_option(&g.d, &bounds, c, optarg)) {
            continue;
        }
        switch (c) {
        case O_HOP:
            if (bench_node_parse(optarg, &g_hop) != 0) {
                fprintf(stderr, "mysql_direct: --hop http://HOST:PORT\n");
                return 2;
            }
            break;
        case O_URL:
            g.url = optarg;
            break;
        case O_FRESH:
            fresh = true;
            break;
        case O_ISO:
            if (strcmp(optarg, "rc") == 0) {
                g.repeatable_read = false;
            } else if (strcmp(optarg, "rr") == 0) {
                g.repeatable_read = true;
            } else {
                fprintf(stderr, "mysql_direct: --isolation must be rc or rr\n");
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!g.url || optind < argc) {
        usage(stderr);
        return 2;
    }
    if (store_mysql_url_parse(g.url, &g_url) != 0) {
        fprintf(stderr, "mysql_direct: bad URL (mysql://USER:PASS@HOST[:PORT]/DB)\n");
        return 2;
    }
    if (g.d.agents == 0) {
        g.d.agents = g.d.consumers;
    }
    if (mysql_library_init(0, NULL, NULL) != 0) {
        fprintf(stderr, "mysql_direct: mysql_library_init failed\n");
        return 1;
    }
    MYSQL *setup = connect_db();
    if (fresh && mysql_query(setup, "DROP TABLE IF EXISTS bench_direct_queue") != 0) {
        die_db(setup, "drop");
    }
    for (size_t i = 0; i < sizeof schema / sizeof schema[0]; i++) {
        if (mysql_query(setup, schema[i]) != 0) {
            die_db(setup, "schema");
        }
    }
    long long dl0 = global_status(setup, "Innodb_deadlocks");
    long long lw0 = global_status(setup, "Innodb_row_lock_waits");

    struct bench_result *total = calloc(1, sizeof *total);
    if (!total || bench_drive(&mysql_backend, &g.d, total) != 0) {
        return 1;
    }
    long long dl1 = global_status(setup, "Innodb_deadlocks");
    long long lw1 = global_status(setup, "Innodb_row_lock_waits");
    char extra[256];
    snprintf(extra, sizeof extra,
             "isolation=%s deadlocks=%lu lock_wait_timeouts=%lu innodb_deadlocks=%lld "
             "innodb_row_lock_waits=%lld server_version=%s",
             g.repeatable_read ? "rr" : "rc", atomic_load(&g_deadlocks),
             atomic_load(&g_lock_timeouts), dl0 >= 0 && dl1 >= 0 ? dl1 - dl0 : -1,
             lw0 >= 0 && lw1 >= 0 ? lw1 - lw0 : -1, mysql_get_server_info(setup));
    bench_print_result("mysql_direct", "mysql", extra, g.d.producers, g.d.consumers, g.d.agents,
                       g.d.batch_ack, 0, g.d.warmup_s, g.d.seconds, total);
    mysql_close(setup);
    mysql_library_end();
    free(total);
    return 0;
}
