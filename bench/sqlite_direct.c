/* SPDX-License-Identifier: MIT */
/* sqlite_direct: the "direct SQLite, one row per transaction" peer of BENCHMARKS.md, the same
 * full cycle as roost_load without HTTP: WAL, synchronous=FULL (or NORMAL), one connection per
 * thread.
 *
 *   producers: INSERT one row per transaction (autocommit)
 *   consumers: claim up to --limit rows of their agent in one UPDATE … RETURNING, then mark each
 *              row done in its own transaction (or all in one with --batch-ack)
 *
 * Writers are serialised by an in-process mutex (a sensible application's choice: SQLite's busy
 * handler sleeps in steps of milliseconds, which would understate the peer); --busy-timeout uses
 * SQLite's own locking instead. The loops, the counting and the wait of a consumer that finds
 * nothing (a per-agent condition signalled after each commit, in-process notification like
 * roostd's long poll) are the peers' one driver's (bench_peer.h); this file is its SQLite
 * backend. Output: one "RESULT key=value …" line, the same keys as roost_load. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sqlite3.h>
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

struct opts {
    const char *db;
    const char *synchronous;
    struct bench_drive_opts d; /* --producers … --payload-bytes */
    bool busy_timeout;
};

static struct opts g;
static pthread_mutex_t g_write_mu = PTHREAD_MUTEX_INITIALIZER;

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS inbox ("
    "  id INTEGER PRIMARY KEY,"
    "  agent TEXT NOT NULL,"
    "  status INTEGER NOT NULL DEFAULT 0," /* 0 pending, 1 leased, 2 done */
    "  lease_token TEXT,"
    "  payload TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  claimed_at INTEGER,"
    "  done_at INTEGER);"
    "CREATE INDEX IF NOT EXISTS inbox_pending ON inbox(agent, status, id);";

static void die_db(sqlite3 *db, const char *what)
{
    fprintf(stderr, "sqlite_direct: %s: %s\n", what, db ? sqlite3_errmsg(db) : "no connection");
    exit(1);
}

static sqlite3 *open_db(void)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(g.db, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        die_db(db, g.db);
    }
    char sql[200];
    snprintf(sql, sizeof sql,
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA busy_timeout=10000;",
             g.synchronous);
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        die_db(db, "pragmas");
    }
    return db;
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        die_db(db, sql);
    }
    return st;
}

static void write_lock(void)
{
    if (!g.busy_timeout) {
        pthread_mutex_lock(&g_write_mu);
    }
}

static void write_unlock(void)
{
    if (!g.busy_timeout) {
        pthread_mutex_unlock(&g_write_mu);
    }
}

/* Statements stepped and transactions committed inside the measurement window, for the
 * statements and commits per cycle beside roostd's (SQLite keeps no server-wide counters). */
static atomic_ulong g_stmts, g_commits;

static void count_work(int64_t t, unsigned long stmts, unsigned long commits)
{
    if (bench_in_window(t)) {
        atomic_fetch_add(&g_stmts, stmts);
        atomic_fetch_add(&g_commits, commits);
    }
}

/* Steps a write statement to completion; SQLITE_BUSY past the busy timeout counts as an error. */
static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* A worker's connection and statements: the backend of the driver (bench_peer.h). */
struct sconn {
    sqlite3 *db;
    sqlite3_stmt *ins, *claim, *done, *begin, *commit, *rollback;
    int idx;
    uint64_t serial;
};

static void *sq_open(enum bench_role role, int idx)
{
    (void)role;
    struct sconn *c = calloc(1, sizeof *c);
    if (!c) {
        return NULL;
    }
    c->idx = idx;
    c->db = open_db();
    c->ins = prepare(c->db, "INSERT INTO inbox(agent, payload, created_at) VALUES (?1, ?2, ?3)");
    c->claim = prepare(
        c->db, "UPDATE inbox SET status = 1, lease_token = ?1, claimed_at = ?2 WHERE id IN "
               "(SELECT id FROM inbox WHERE agent = ?3 AND status = 0 ORDER BY id LIMIT ?4) "
               "RETURNING id, payload");
    c->done = prepare(c->db, "UPDATE inbox SET status = 2, done_at = ?1 "
                             "WHERE id = ?2 AND lease_token = ?3 AND status = 1");
    c->begin = prepare(c->db, "BEGIN IMMEDIATE");
    c->commit = prepare(c->db, "COMMIT");
    c->rollback = prepare(c->db, "ROLLBACK");
    return c;
}

static void sq_close(void *p)
{
    struct sconn *c = p;
    sqlite3_finalize(c->ins);
    sqlite3_finalize(c->claim);
    sqlite3_finalize(c->done);
    sqlite3_finalize(c->begin);
    sqlite3_finalize(c->commit);
    sqlite3_finalize(c->rollback);
    sqlite3_close(c->db);
    free(c);
}

static int sq_publish(void *p, struct bench_agent *a, const char *payload, int len)
{
    struct sconn *c = p;
    sqlite3_bind_text(c->ins, 1, a->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(c->ins, 2, payload, len, SQLITE_STATIC);
    sqlite3_bind_int64(c->ins, 3, (sqlite3_int64)(time(NULL) * 1000));
    write_lock();
    int rc = step_done(c->ins);
    write_unlock();
    if (rc != 0) {
        bench_report("sqlite_direct: insert: %s", sqlite3_errmsg(c->db));
        return BENCH_FAIL;
    }
    count_work(bench_now_ns(), 1, 1);
    return BENCH_OK;
}

/* One UPDATE … RETURNING leases up to `limit` pending rows of the agent under a fresh token. */
static int sq_claim(void *p, struct bench_agent *a, int limit, struct bench_event *out)
{
    struct sconn *c = p;
    char token[BENCH_KEY_MAX];
    snprintf(token, sizeof token, "lt_%d_%llu", c->idx, (unsigned long long)++c->serial);
    sqlite3_bind_text(c->claim, 1, token, -1, SQLITE_STATIC);
    sqlite3_bind_int64(c->claim, 2, (sqlite3_int64)(time(NULL) * 1000));
    sqlite3_bind_text(c->claim, 3, a->name, -1, SQLITE_STATIC);
    sqlite3_bind_int(c->claim, 4, limit);
    int n = 0, rc;
    write_lock();
    while ((rc = sqlite3_step(c->claim)) == SQLITE_ROW) {
        if (n >= limit) {
            continue; /* cannot happen (LIMIT ?4); step on so the statement completes */
        }
        out[n].id = sqlite3_column_int64(c->claim, 0);
        memcpy(out[n].token, token, sizeof token);
        const char *text = (const char *)sqlite3_column_text(c->claim, 1);
        if (!text || bench_payload_time(text, (size_t)sqlite3_column_bytes(c->claim, 1),
                                        &out[n].t_ns) != 0) {
            out[n].t_ns = bench_now_ns();
        }
        n++;
    }
    sqlite3_reset(c->claim);
    write_unlock();
    if (rc != SQLITE_DONE) {
        bench_report("sqlite_direct: claim: %s", sqlite3_errmsg(c->db));
        return BENCH_FAIL;
    }
    count_work(bench_now_ns(), 1, 1);
    return n;
}

static bool mark_done(struct sconn *c, const struct bench_event *ev)
{
    sqlite3_bind_int64(c->done, 1, (sqlite3_int64)(time(NULL) * 1000));
    sqlite3_bind_int64(c->done, 2, ev->id);
    sqlite3_bind_text(c->done, 3, ev->token, -1, SQLITE_STATIC);
    return step_done(c->done) == 0 && sqlite3_changes(c->db) == 1;
}

static int sq_ack(void *p, struct bench_agent *a, const struct bench_event *ev)
{
    struct sconn *c = p;
    (void)a;
    write_lock();
    bool ok = mark_done(c, ev);
    write_unlock();
    if (!ok) {
        bench_report("sqlite_direct: done: %s", sqlite3_errmsg(c->db));
        return BENCH_FAIL;
    }
    count_work(bench_now_ns(), 1, 1);
    return BENCH_OK;
}

static int sq_ack_batch(void *p, struct bench_agent *a, const struct bench_event *evs, int n)
{
    struct sconn *c = p;
    (void)a;
    write_lock();
    bool ok = step_done(c->begin) == 0;
    for (int i = 0; ok && i < n; i++) {
        ok = mark_done(c, &evs[i]);
    }
    ok = ok && step_done(c->commit) == 0;
    if (!ok) {
        step_done(c->rollback);
    }
    write_unlock();
    if (!ok) {
        bench_report("sqlite_direct: batch done: %s", sqlite3_errmsg(c->db));
        return BENCH_FAIL;
    }
    count_work(bench_now_ns(), (unsigned long)n + 2, 1);
    return BENCH_OK;
}

static const struct bench_backend sqlite_backend = {
    .tool = "sqlite_direct",
    .open = sq_open,
    .close = sq_close,
    .publish = sq_publish,
    .claim = sq_claim,
    .ack = sq_ack,
    .ack_batch = sq_ack_batch,
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sqlite_direct --db PATH [options]\n"
            "  --db PATH             database file (created; removed first with --fresh)\n"
            "  --fresh               delete PATH, PATH-wal and PATH-shm before starting\n"
            "  --synchronous MODE    full (default) or normal\n"
            "  --producers P         inserting threads (default 2)\n"
            "  --consumers C         claiming threads (default 2)\n"
            "  --agents A            agents shared by both sides (default C)\n"
            "  --seconds S           measurement window (default 10)\n"
            "  --warmup W            warm-up before the window (default 2)\n"
            "  --batch-ack           mark a claimed batch done in one transaction\n"
            "  --limit L             claim limit (default 10)\n"
            "  --payload-bytes B     payload size (default 100)\n"
            "  --rate N              pace producers to N events/s in total (default: closed loop)\n"
            "  --busy-timeout        let SQLite's busy handler serialise writers instead of "
            "a mutex\n");
}

int main(int argc, char **argv)
{
    enum { O_DB = 256, O_FRESH, O_SYNC, O_BUSY };
    static const struct option opts[] = {
        {"db", required_argument, NULL, O_DB},
        {"fresh", no_argument, NULL, O_FRESH},
        {"synchronous", required_argument, NULL, O_SYNC},
        {"busy-timeout", no_argument, NULL, O_BUSY},
        BENCH_DRIVE_OPTIONS, /* --producers … --payload-bytes */
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool fresh = false;
    g.synchronous = "full";
    bench_drive_defaults(&g.d);
    const struct bench_drive_bounds bounds = {1, 100000, 1000};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (bench_drive_option(&g.d, &bounds, c, optarg)) {
            continue;
        }
        switch (c) {
        case O_DB:
            g.db = optarg;
            break;
        case O_FRESH:
            fresh = true;
            break;
        case O_SYNC:
            g.synchronous = optarg;
            break;
        case O_BUSY:
            g.busy_timeout = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!g.db || optind < argc) {
        usage(stderr);
        return 2;
    }
    if (strcmp(g.synchronous, "full") != 0 && strcmp(g.synchronous, "normal") != 0) {
        fprintf(stderr, "sqlite_direct: --synchronous must be full or normal\n");
        return 2;
    }
    if (g.d.agents == 0) {
        g.d.agents = g.d.consumers;
    }
    if (fresh) {
        char p[4096];
        unlink(g.db);
        snprintf(p, sizeof p, "%s-wal", g.db);
        unlink(p);
        snprintf(p, sizeof p, "%s-shm", g.db);
        unlink(p);
    }
    sqlite3 *setup = open_db();
    if (sqlite3_exec(setup, schema, NULL, NULL, NULL) != SQLITE_OK) {
        die_db(setup, "schema");
    }

    struct bench_result *total = calloc(1, sizeof *total);
    if (!total || bench_drive(&sqlite_backend, &g.d, total) != 0) {
        return 1;
    }
    char extra[256];
    double cycles = total->acked ? (double)total->acked : 1.0;
    snprintf(extra, sizeof extra,
             "synchronous=%s journal_mode=wal writers=%s sqlite_version=%s stmts_per_cycle=%.2f "
             "commits_per_cycle=%.2f",
             g.synchronous, g.busy_timeout ? "busy_timeout" : "mutex", sqlite3_libversion(),
             (double)atomic_load(&g_stmts) / cycles, (double)atomic_load(&g_commits) / cycles);
    bench_print_result("sqlite_direct", "sqlite", extra, g.d.producers, g.d.consumers, g.d.agents,
                       g.d.batch_ack, 0, g.d.warmup_s, g.d.seconds, total);
    sqlite3_close(setup);
    free(total);
    return 0;
}
