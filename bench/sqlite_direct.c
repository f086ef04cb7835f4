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
 * SQLite's own locking instead. A consumer that finds nothing waits on a per-agent condition
 * variable that producers signal after their commit (in-process notification, like roostd's long
 * poll). Latency is publish start → done commit, from the time stored in the payload. Output: one
 * "RESULT key=value …" line, the same keys as roost_load. */
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
    int producers;
    int consumers;
    int agents;
    double seconds;
    double warmup;
    bool batch_ack;
    bool busy_timeout;
    int limit;
    int payload_bytes;
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

static void *producer_main(void *arg)
{
    struct bench_worker *w = arg;
    sqlite3 *db = open_db();
    sqlite3_stmt *ins =
        prepare(db, "INSERT INTO inbox(agent, payload, created_at) VALUES (?1, ?2, ?3)");
    char payload[1024];
    for (uint64_t k = 0; !atomic_load_explicit(&bench_stop, memory_order_relaxed); k++) {
        struct bench_agent *a = &bench_agents[((uint64_t)w->idx + k) % (uint64_t)g.agents];
        int64_t s = bench_now_ns();
        int plen = bench_payload(payload, sizeof payload, s, (size_t)g.payload_bytes);
        sqlite3_bind_text(ins, 1, a->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, payload, plen, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 3, (sqlite3_int64)(time(NULL) * 1000));
        write_lock();
        int rc = step_done(ins);
        write_unlock();
        int64_t e = bench_now_ns();
        if (rc != 0) {
            w->res.errors++;
            fprintf(stderr, "sqlite_direct: insert: %s\n", sqlite3_errmsg(db));
            continue;
        }
        count_work(e, 1, 1);
        pthread_mutex_lock(&a->mu);
        a->version++;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->mu);
        if (bench_in_window(e)) {
            w->res.published++;
            hist_add(&w->res.publish_rtt, e - s);
        }
    }
    sqlite3_finalize(ins);
    sqlite3_close(db);
    return NULL;
}

static void *consumer_main(void *arg)
{
    struct bench_worker *w = arg;
    struct bench_agent *a = &bench_agents[w->idx % g.agents];
    sqlite3 *db = open_db();
    sqlite3_stmt *claim =
        prepare(db, "UPDATE inbox SET status = 1, lease_token = ?1, claimed_at = ?2 WHERE id IN "
                    "(SELECT id FROM inbox WHERE agent = ?3 AND status = 0 ORDER BY id LIMIT ?4) "
                    "RETURNING id, payload");
    sqlite3_stmt *done = prepare(db, "UPDATE inbox SET status = 2, done_at = ?1 "
                                     "WHERE id = ?2 AND lease_token = ?3 AND status = 1");
    sqlite3_stmt *begin = prepare(db, "BEGIN IMMEDIATE");
    sqlite3_stmt *commit = prepare(db, "COMMIT");
    sqlite3_stmt *rollback = prepare(db, "ROLLBACK");
    int64_t *ids = calloc((size_t)g.limit, sizeof *ids);
    int64_t *ts = calloc((size_t)g.limit, sizeof *ts);
    if (!ids || !ts) {
        fprintf(stderr, "sqlite_direct: out of memory\n");
        exit(1);
    }
    uint64_t serial = 0;
    char token[40];
    while (!atomic_load_explicit(&bench_stop, memory_order_relaxed)) {
        pthread_mutex_lock(&a->mu);
        uint64_t seen = a->version;
        pthread_mutex_unlock(&a->mu);

        snprintf(token, sizeof token, "lt_%d_%llu", w->idx, (unsigned long long)++serial);
        sqlite3_bind_text(claim, 1, token, -1, SQLITE_STATIC);
        sqlite3_bind_int64(claim, 2, (sqlite3_int64)(time(NULL) * 1000));
        sqlite3_bind_text(claim, 3, a->name, -1, SQLITE_STATIC);
        sqlite3_bind_int(claim, 4, g.limit);
        int n = 0, rc;
        write_lock();
        while ((rc = sqlite3_step(claim)) == SQLITE_ROW) {
            if (n >= g.limit) {
                continue; /* cannot happen (LIMIT ?4); step on so the statement completes */
            }
            ids[n] = sqlite3_column_int64(claim, 0);
            const char *p = (const char *)sqlite3_column_text(claim, 1);
            if (!p || bench_payload_time(p, (size_t)sqlite3_column_bytes(claim, 1), &ts[n]) != 0) {
                ts[n] = bench_now_ns();
            }
            n++;
        }
        sqlite3_reset(claim);
        write_unlock();
        if (rc != SQLITE_DONE) {
            w->res.errors++;
            fprintf(stderr, "sqlite_direct: claim: %s\n", sqlite3_errmsg(db));
            continue;
        }
        count_work(bench_now_ns(), 1, 1);
        if (n == 0) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_nsec += 100 * 1000 * 1000;
            if (dl.tv_nsec >= 1000000000) {
                dl.tv_sec++;
                dl.tv_nsec -= 1000000000;
            }
            pthread_mutex_lock(&a->mu);
            while (a->version == seen && !atomic_load(&bench_stop)) {
                if (pthread_cond_timedwait(&a->cond, &a->mu, &dl) == ETIMEDOUT) {
                    break;
                }
            }
            pthread_mutex_unlock(&a->mu);
            continue;
        }
        if (bench_in_window(bench_now_ns())) {
            w->res.claims++;
        }
        if (g.batch_ack) {
            int64_t s = bench_now_ns();
            write_lock();
            bool ok = step_done(begin) == 0;
            for (int i = 0; ok && i < n; i++) {
                sqlite3_bind_int64(done, 1, (sqlite3_int64)(time(NULL) * 1000));
                sqlite3_bind_int64(done, 2, ids[i]);
                sqlite3_bind_text(done, 3, token, -1, SQLITE_STATIC);
                ok = step_done(done) == 0 && sqlite3_changes(db) == 1;
            }
            ok = ok && step_done(commit) == 0;
            if (!ok) {
                step_done(rollback);
            }
            write_unlock();
            int64_t e = bench_now_ns();
            if (!ok) {
                w->res.errors++;
                fprintf(stderr, "sqlite_direct: batch done: %s\n", sqlite3_errmsg(db));
                continue;
            }
            count_work(e, (unsigned long)n + 2, 1);
            if (bench_in_window(e)) {
                hist_add(&w->res.ack_rtt, e - s);
                for (int i = 0; i < n; i++) {
                    w->res.acked++;
                    hist_add(&w->res.latency, e - ts[i]);
                }
            }
        } else {
            for (int i = 0; i < n; i++) {
                int64_t s = bench_now_ns();
                sqlite3_bind_int64(done, 1, (sqlite3_int64)(time(NULL) * 1000));
                sqlite3_bind_int64(done, 2, ids[i]);
                sqlite3_bind_text(done, 3, token, -1, SQLITE_STATIC);
                write_lock();
                bool ok = step_done(done) == 0 && sqlite3_changes(db) == 1;
                write_unlock();
                int64_t e = bench_now_ns();
                if (!ok) {
                    w->res.errors++;
                    fprintf(stderr, "sqlite_direct: done: %s\n", sqlite3_errmsg(db));
                    continue;
                }
                count_work(e, 1, 1);
                if (bench_in_window(e)) {
                    w->res.acked++;
                    hist_add(&w->res.latency, e - ts[i]);
                    hist_add(&w->res.ack_rtt, e - s);
                }
            }
        }
    }
    free(ids);
    free(ts);
    sqlite3_finalize(claim);
    sqlite3_finalize(done);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    sqlite3_finalize(rollback);
    sqlite3_close(db);
    return NULL;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: sqlite_direct --db PATH [options]\n"
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
                 "  --busy-timeout        let SQLite's busy handler serialise writers instead of "
                 "a mutex\n");
}

int main(int argc, char **argv)
{
    enum {
        O_DB = 256,
        O_FRESH,
        O_SYNC,
        O_P,
        O_C,
        O_A,
        O_SEC,
        O_WARM,
        O_BATCH,
        O_LIMIT,
        O_PAYLOAD,
        O_BUSY
    };
    static const struct option opts[] = {
        {"db", required_argument, NULL, O_DB},
        {"fresh", no_argument, NULL, O_FRESH},
        {"synchronous", required_argument, NULL, O_SYNC},
        {"producers", required_argument, NULL, O_P},
        {"consumers", required_argument, NULL, O_C},
        {"agents", required_argument, NULL, O_A},
        {"seconds", required_argument, NULL, O_SEC},
        {"warmup", required_argument, NULL, O_WARM},
        {"batch-ack", no_argument, NULL, O_BATCH},
        {"limit", required_argument, NULL, O_LIMIT},
        {"payload-bytes", required_argument, NULL, O_PAYLOAD},
        {"busy-timeout", no_argument, NULL, O_BUSY},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool fresh = false;
    g.synchronous = "full";
    g.producers = 2;
    g.consumers = 2;
    g.seconds = 10;
    g.warmup = 2;
    g.limit = 10;
    g.payload_bytes = 100;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
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
        case O_P:
            g.producers = (int)bench_parse_num("--producers", optarg, 1, 1024);
            break;
        case O_C:
            g.consumers = (int)bench_parse_num("--consumers", optarg, 1, 1024);
            break;
        case O_A:
            g.agents = (int)bench_parse_num("--agents", optarg, 1, 100000);
            break;
        case O_SEC:
            g.seconds = bench_parse_num("--seconds", optarg, 0.1, 86400);
            break;
        case O_WARM:
            g.warmup = bench_parse_num("--warmup", optarg, 0, 86400);
            break;
        case O_BATCH:
            g.batch_ack = true;
            break;
        case O_LIMIT:
            g.limit = (int)bench_parse_num("--limit", optarg, 1, 1000);
            break;
        case O_PAYLOAD:
            g.payload_bytes = (int)bench_parse_num("--payload-bytes", optarg, 16, 900);
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
    if (g.agents == 0) {
        g.agents = g.consumers;
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
    if (!total || bench_peer_run("sqlite_direct", g.producers, g.consumers, g.agents, g.warmup,
                                 g.seconds, producer_main, consumer_main, total) != 0) {
        return 1;
    }
    char extra[256];
    double cycles = total->acked ? (double)total->acked : 1.0;
    snprintf(extra, sizeof extra,
             "synchronous=%s journal_mode=wal writers=%s sqlite_version=%s stmts_per_cycle=%.2f "
             "commits_per_cycle=%.2f",
             g.synchronous, g.busy_timeout ? "busy_timeout" : "mutex", sqlite3_libversion(),
             (double)atomic_load(&g_stmts) / cycles, (double)atomic_load(&g_commits) / cycles);
    bench_print_result("sqlite_direct", "sqlite", extra, g.producers, g.consumers, g.agents,
                       g.batch_ack, 0, g.warmup, g.seconds, total);
    sqlite3_close(setup);
    free(total);
    return 0;
}
