/* SPDX-License-Identifier: MIT */
/* pg_direct: the PostgreSQL peers of BENCHMARKS.md, the same full cycle as roost_load,
 * sqlite_direct and mysql_direct without HTTP, one libpq connection per thread, prepared
 * statements, READ COMMITTED (PostgreSQL's default), synchronous_commit as the server has it
 * (scripts/postgres_test.sh keeps it on: every COMMIT waits for its WAL flush).
 *
 * --mode loop (default), the plain SKIP LOCKED loop as a PostgreSQL user writes it:
 *   producers: INSERT one ~100-byte row per autocommit transaction
 *   consumers: UPDATE … SET status = 1 WHERE id IN (SELECT id … WHERE agent = $1 AND status = 0
 *              ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING id, payload (one
 *              statement, one transaction); then UPDATE … SET status = 2 WHERE id = $1 per row,
 *              each its own transaction (or all in one with --batch-ack)
 * --mode pgmq, the pgmq extension's queue shape written out in SQL (no extension needed): one
 *   table per queue (here per agent) with a visibility timeout instead of a status,
 *   send = INSERT (vt = now), read = UPDATE … SET vt = now + 30 s, read_ct = read_ct + 1 WHERE
 *   msg_id IN (SELECT … WHERE vt <= now ORDER BY msg_id LIMIT $1 FOR UPDATE SKIP LOCKED)
 *   RETURNING, ack = pgmq.delete (DELETE … WHERE msg_id = $1).
 *
 * The loops, the counting and the wait of a consumer that finds nothing (a per-agent condition
 * signalled after each commit, in-process notification) are the peers' one driver's
 * (bench_peer.h); this file is its PostgreSQL backend. A serialization failure or deadlock
 * (SQLSTATE 40001 / 40P01) is retried and counted.
 *
 *   pg_direct --url postgres://USER:PASS@HOST:PORT/DB [options]
 *
 * Latency is publish start → ack commit, from the time stored in the payload. Output: one
 * "RESULT key=value …" line with the keys of roost_load, plus the server's commits per cycle
 * (pg_stat_database.xact_commit) and the dead tuples left in the queue tables. Creates its
 * tables in DB (dropped first with --fresh). */
#include <errno.h>
#include <getopt.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_peer.h"

#include "common/banned.h"

#define MAX_LIMIT 100

enum mode { MODE_LOOP, MODE_PGMQ };

struct opts {
    const char *url;
    enum mode mode;
    struct bench_drive_opts d; /* --producers … --payload-bytes */
};

static struct opts g;
static atomic_ulong g_conflicts;

static void die_conn(PGconn *db, const char *what)
{
    fprintf(stderr, "pg_direct: %s: %s\n", what, db ? PQerrorMessage(db) : "no connection");
    exit(1);
}

/* Runs one utility statement; exits on failure. */
static void exec_or_die(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        fprintf(stderr, "pg_direct: %s: %s\n", sql, PQresultErrorMessage(r));
        exit(1);
    }
    PQclear(r);
}

static PGconn *connect_db(void)
{
    PGconn *db = PQconnectdb(g.url);
    if (!db || PQstatus(db) != CONNECTION_OK) {
        die_conn(db, "connect");
    }
    /* "table does not exist, skipping" and the like are not results. */
    exec_or_die(db, "SET client_min_messages = warning");
    return db;
}

static void prepare_or_die(PGconn *db, const char *name, const char *sql)
{
    PGresult *r = PQprepare(db, name, sql, 0, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "pg_direct: prepare %s: %s\n", name, PQresultErrorMessage(r));
        exit(1);
    }
    PQclear(r);
}

/* The table of an agent's queue in pgmq mode: one per queue, as pgmq makes them. */
static void queue_table(int agent, char *out, size_t cap)
{
    snprintf(out, cap, "bench_pgmq_q_%d", agent);
}

/* Statement names per agent in pgmq mode (each agent has its own table). */
static void stmt_name(const char *what, const struct bench_agent *a, char *out, size_t cap)
{
    snprintf(out, cap, "%s_%d", what, (int)(a - bench_agents));
}

static void prepare_statements(PGconn *db)
{
    if (g.mode == MODE_LOOP) {
        prepare_or_die(
            db, "send",
            "INSERT INTO bench_pg_queue (agent, payload, created_at) VALUES ($1, $2, $3)");
        prepare_or_die(db, "read",
                       "UPDATE bench_pg_queue SET status = 1, claimed_at = $3 WHERE id IN ("
                       "SELECT id FROM bench_pg_queue WHERE agent = $1 AND status = 0 "
                       "ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING id, payload");
        prepare_or_die(db, "ack",
                       "UPDATE bench_pg_queue SET status = 2, done_at = $1 WHERE id = $2 AND "
                       "status = 1");
        return;
    }
    for (int i = 0; i < bench_n_agents; i++) {
        char t[64], name[64], sql[512];
        queue_table(i, t, sizeof t);
        stmt_name("send", &bench_agents[i], name, sizeof name);
        snprintf(sql, sizeof sql, "INSERT INTO %s (vt, message) VALUES (clock_timestamp(), $1)", t);
        prepare_or_die(db, name, sql);
        stmt_name("read", &bench_agents[i], name, sizeof name);
        snprintf(sql, sizeof sql,
                 "UPDATE %s SET vt = clock_timestamp() + interval '30 seconds', "
                 "read_ct = read_ct + 1 WHERE msg_id IN (SELECT msg_id FROM %s WHERE vt <= "
                 "clock_timestamp() ORDER BY msg_id LIMIT $1 FOR UPDATE SKIP LOCKED) "
                 "RETURNING msg_id, message",
                 t, t);
        prepare_or_die(db, name, sql);
        stmt_name("ack", &bench_agents[i], name, sizeof name);
        snprintf(sql, sizeof sql, "DELETE FROM %s WHERE msg_id = $1", t);
        prepare_or_die(db, name, sql);
    }
}

static int64_t now_ms(void)
{
    return (int64_t)time(NULL) * 1000;
}

/* A result's outcome: 0 success, -1 a conflict to retry (counted), -2 another error. */
static int outcome(PGresult *r, ExecStatusType want, const char *what)
{
    if (PQresultStatus(r) == want) {
        return 0;
    }
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (state && (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0)) {
        atomic_fetch_add(&g_conflicts, 1);
        return -1;
    }
    fprintf(stderr, "pg_direct: %s: %s\n", what, PQresultErrorMessage(r));
    return -2;
}

/* A worker's connection, its statements prepared: the backend of the driver (bench_peer.h). */
static void *pg_open(enum bench_role role, int idx)
{
    (void)role;
    (void)idx;
    PGconn *db = connect_db();
    prepare_statements(db);
    return db;
}

static void pg_close(void *c)
{
    PQfinish(c);
}

static int pg_publish(void *c, struct bench_agent *a, const char *payload, int len)
{
    PGconn *db = c;
    (void)len;
    char created[32];
    PGresult *r;
    if (g.mode == MODE_LOOP) {
        snprintf(created, sizeof created, "%lld", (long long)now_ms());
        const char *p[3] = {a->name, payload, created};
        r = PQexecPrepared(db, "send", 3, p, NULL, NULL, 0);
    } else {
        char name[64];
        stmt_name("send", a, name, sizeof name);
        const char *p[1] = {payload};
        r = PQexecPrepared(db, name, 1, p, NULL, NULL, 0);
    }
    int rc = outcome(r, PGRES_COMMAND_OK, "send");
    PQclear(r);
    return rc;
}

/* One claim (a single statement: its own transaction). Returns the number of rows claimed
 * (out filled), 0 when none, BENCH_RETRY on a conflict, BENCH_FAIL on another error. */
static int pg_claim(void *c, struct bench_agent *a, int max, struct bench_event *out)
{
    PGconn *db = c;
    char limit[16], claimed[32], name[64];
    snprintf(limit, sizeof limit, "%d", max);
    PGresult *r;
    if (g.mode == MODE_LOOP) {
        snprintf(claimed, sizeof claimed, "%lld", (long long)now_ms());
        const char *p[3] = {a->name, limit, claimed};
        r = PQexecPrepared(db, "read", 3, p, NULL, NULL, 0);
    } else {
        stmt_name("read", a, name, sizeof name);
        const char *p[1] = {limit};
        r = PQexecPrepared(db, name, 1, p, NULL, NULL, 0);
    }
    int rc = outcome(r, PGRES_TUPLES_OK, "read");
    int n = 0;
    if (rc == 0) {
        for (int i = 0; i < PQntuples(r) && n < max; i++) {
            out[n].id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
            const char *pl = PQgetvalue(r, i, 1);
            if (bench_payload_time(pl, (size_t)PQgetlength(r, i, 1), &out[n].t_ns) != 0) {
                out[n].t_ns = bench_now_ns();
            }
            n++;
        }
    }
    PQclear(r);
    return rc == 0 ? n : rc;
}

/* Completes one message: BENCH_OK, BENCH_RETRY (conflict) or BENCH_FAIL. */
static int ack_one(PGconn *db, struct bench_agent *a, int64_t id)
{
    char row[32], done[32], name[64];
    snprintf(row, sizeof row, "%lld", (long long)id);
    PGresult *r;
    if (g.mode == MODE_LOOP) {
        snprintf(done, sizeof done, "%lld", (long long)now_ms());
        const char *p[2] = {done, row};
        r = PQexecPrepared(db, "ack", 2, p, NULL, NULL, 0);
    } else {
        stmt_name("ack", a, name, sizeof name);
        const char *p[1] = {row};
        r = PQexecPrepared(db, name, 1, p, NULL, NULL, 0);
    }
    int rc = outcome(r, PGRES_COMMAND_OK, "ack");
    if (rc == 0 && strcmp(PQcmdTuples(r), "1") != 0) {
        fprintf(stderr, "pg_direct: ack of %lld changed %s rows\n", (long long)id, PQcmdTuples(r));
        rc = -2;
    }
    PQclear(r);
    return rc;
}

static int pg_ack(void *c, struct bench_agent *a, const struct bench_event *ev)
{
    return ack_one(c, a, ev->id);
}

/* Acks a claimed batch in one transaction: BENCH_OK, BENCH_RETRY (conflict, rolled back) or
 * BENCH_FAIL. */
static int pg_ack_batch(void *c, struct bench_agent *a, const struct bench_event *evs, int n)
{
    PGconn *db = c;
    PGresult *r = PQexec(db, "BEGIN");
    int rc = outcome(r, PGRES_COMMAND_OK, "begin");
    PQclear(r);
    for (int i = 0; rc == 0 && i < n; i++) {
        rc = ack_one(db, a, evs[i].id);
    }
    r = PQexec(db, rc == 0 ? "COMMIT" : "ROLLBACK");
    int end = outcome(r, PGRES_COMMAND_OK, "commit");
    PQclear(r);
    return rc != 0 ? rc : end;
}

static const struct bench_backend pg_backend = {
    .open = pg_open,
    .close = pg_close,
    .publish = pg_publish,
    .claim = pg_claim,
    .ack = pg_ack,
    .ack_batch = pg_ack_batch,
};

/* Creates the tables of the mode (dropping them first when `fresh`). */
static void make_schema(PGconn *db, bool fresh)
{
    char sql[1024];
    if (g.mode == MODE_LOOP) {
        if (fresh) {
            exec_or_die(db, "DROP TABLE IF EXISTS bench_pg_queue");
        }
        exec_or_die(db, "CREATE TABLE IF NOT EXISTS bench_pg_queue ("
                        "  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                        "  agent TEXT NOT NULL,"
                        "  status SMALLINT NOT NULL DEFAULT 0," /* 0 pending, 1 claimed, 2 done */
                        "  payload TEXT NOT NULL,"
                        "  created_at BIGINT NOT NULL,"
                        "  claimed_at BIGINT NULL,"
                        "  done_at BIGINT NULL)");
        exec_or_die(db, "CREATE INDEX IF NOT EXISTS bench_pg_queue_pending "
                        "ON bench_pg_queue (agent, status, id)");
        return;
    }
    for (int i = 0; i < g.d.agents; i++) {
        char t[64];
        queue_table(i, t, sizeof t);
        if (fresh) {
            snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", t);
            exec_or_die(db, sql);
        }
        /* pgmq's queue table and its vt index (pgmq.create). */
        snprintf(sql, sizeof sql,
                 "CREATE TABLE IF NOT EXISTS %s ("
                 "  msg_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                 "  read_ct INT NOT NULL DEFAULT 0,"
                 "  enqueued_at TIMESTAMPTZ NOT NULL DEFAULT now(),"
                 "  vt TIMESTAMPTZ NOT NULL,"
                 "  message JSONB)",
                 t);
        exec_or_die(db, sql);
        snprintf(sql, sizeof sql, "CREATE INDEX IF NOT EXISTS %s_vt_idx ON %s (vt ASC)", t, t);
        exec_or_die(db, sql);
    }
}

/* One number from a query returning one row and one column, or -1. */
static long long query_number(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    long long v = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
        v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    }
    PQclear(r);
    return v;
}

static long long commits(PGconn *db)
{
    return query_number(db, "SELECT xact_commit FROM pg_stat_database WHERE datname = "
                            "current_database()");
}

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: pg_direct --url postgres://USER:PASS@HOST[:PORT]/DB [options]\n"
        "  --url URL             server and database (any libpq connection string)\n"
        "  --mode loop|pgmq      the plain SKIP LOCKED loop (default) or pgmq's shape\n"
        "  --fresh               drop the mode's tables first\n"
        "  --producers P         inserting threads (default 2)\n"
        "  --consumers C         claiming threads (default 2)\n"
        "  --agents A            agents (queues) shared by both sides (default C)\n"
        "  --seconds S           measurement window (default 10)\n"
        "  --warmup W            warm-up before the window (default 2)\n"
        "  --batch-ack           complete a claimed batch in one transaction\n"
        "  --limit L             claim limit (default 10, at most 100)\n"
        "  --payload-bytes B     payload size (default 100)\n"
        "  --rate N              pace producers to N events/s in total (default: closed loop)\n");
}

int main(int argc, char **argv)
{
    enum { O_URL = 256, O_MODE, O_FRESH };
    static const struct option opts[] = {
        {"url", required_argument, NULL, O_URL},
        {"mode", required_argument, NULL, O_MODE},
        {"fresh", no_argument, NULL, O_FRESH},
        BENCH_DRIVE_OPTIONS, /* --producers … --payload-bytes */
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool fresh = false;
    bench_drive_defaults(&g.d);
    const struct bench_drive_bounds bounds = {1, 10000, MAX_LIMIT};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (bench_drive_option(&g.d, &bounds, c, optarg)) {
            continue;
        }
        switch (c) {
        case O_URL:
            g.url = optarg;
            break;
        case O_MODE:
            if (strcmp(optarg, "loop") == 0) {
                g.mode = MODE_LOOP;
            } else if (strcmp(optarg, "pgmq") == 0) {
                g.mode = MODE_PGMQ;
            } else {
                fprintf(stderr, "pg_direct: --mode must be loop or pgmq\n");
                return 2;
            }
            break;
        case O_FRESH:
            fresh = true;
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
    if (g.d.agents == 0) {
        g.d.agents = g.d.consumers;
    }
    PGconn *setup = connect_db();
    make_schema(setup, fresh);
    long long commits0 = commits(setup);

    struct bench_backend backend = pg_backend;
    backend.tool = g.mode == MODE_LOOP ? "pg_loop" : "pg_pgmq";
    struct bench_result *total = calloc(1, sizeof *total);
    if (!total || bench_drive(&backend, &g.d, total) != 0) {
        return 1;
    }
    /* pg_stat counters are sent by each backend when its transaction ends and read from a
     * snapshot: a fresh transaction sees what the (now closed) workers reported. */
    exec_or_die(setup, "SELECT pg_stat_clear_snapshot()");
    long long commits1 = commits(setup);
    long long dead = query_number(
        setup, g.mode == MODE_LOOP
                   ? "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE relname "
                     "= 'bench_pg_queue'"
                   : "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE relname "
                     "LIKE 'bench\\_pgmq\\_q\\_%'");
    char extra[256];
    snprintf(extra, sizeof extra,
             "mode=%s conflicts=%lu commits=%lld dead_tuples=%lld "
             "server_version=%d",
             g.mode == MODE_LOOP ? "loop" : "pgmq", atomic_load(&g_conflicts),
             commits0 >= 0 && commits1 >= 0 ? commits1 - commits0 : -1, dead,
             PQserverVersion(setup));
    bench_print_result(g.mode == MODE_LOOP ? "pg_loop" : "pg_pgmq", "postgres", extra,
                       g.d.producers, g.d.consumers, g.d.agents, g.d.batch_ack, 0, g.d.warmup_s,
                       g.d.seconds, total);
    PQfinish(setup);
    free(total);
    return 0;
}
