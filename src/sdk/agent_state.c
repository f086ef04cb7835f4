/* SPDX-License-Identifier: MIT */
/* The agent's state file (agent_state.h): schema, the meta keys, the processed-id set with its
 * pruning, the lease records, the directory lock, and roost_agent_status_read() for another
 * process. The file is written before the network learns about it: a lease is stored before its
 * handler runs and a processed id before its ack is sent. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/timeutil.h"
#include "sdk/agent_state.h"

#include "common/banned.h"

/* Every AGENT_STATE_PRUNE_EVERY processed ids, the set is pruned by age and count. */
#define AGENT_STATE_PRUNE_EVERY 256
/* How long a statement waits for the file's lock (roost agent status reads it concurrently). */
#define AGENT_STATE_BUSY_TIMEOUT_MS ROOST_BUSY_TIMEOUT_MS

static const char schema_sql[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;" /* WAL + NORMAL survives a process crash, which is our case */
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS processed(event_id TEXT PRIMARY KEY, at_ms INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS processed_at ON processed(at_ms);"
    "CREATE TABLE IF NOT EXISTS leases(event_id TEXT PRIMARY KEY, lease_token TEXT NOT NULL,"
    " claimed_ms INTEGER NOT NULL);";

/* One statement with up to two text and one integer parameter; the SQLITE_DONE / SQLITE_ROW of
 * its first step folded into 0, anything else -1. Call with st->mu held. */
static int db_exec(sqlite3 *db, const char *sql, const char *t1, const char *t2, int64_t i3)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        return -1;
    }
    int n = sqlite3_bind_parameter_count(st);
    if (n >= 1) {
        sqlite3_bind_text(st, 1, t1, -1, SQLITE_TRANSIENT);
    }
    if (n >= 2) {
        sqlite3_bind_text(st, 2, t2, -1, SQLITE_TRANSIENT);
    }
    if (n >= 3) {
        sqlite3_bind_int64(st, 3, i3);
    }
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

static int meta_set(sqlite3 *db, const char *key, const char *value)
{
    return db_exec(db,
                   "INSERT INTO meta(key,value) VALUES(?,?) ON CONFLICT(key) DO UPDATE SET "
                   "value=excluded.value",
                   key, value, 0);
}

static int meta_set_int(sqlite3 *db, const char *key, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return meta_set(db, key, buf);
}

/* Copies meta[key] into buf ("" when absent). */
static void meta_get(sqlite3 *db, const char *key, char *buf, size_t len)
{
    buf[0] = '\0';
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key=?", -1, &st, NULL) != SQLITE_OK) {
        return;
    }
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *v = sqlite3_column_text(st, 0);
        snprintf(buf, len, "%s", v != NULL ? (const char *)v : "");
    }
    sqlite3_finalize(st);
}

static int64_t meta_get_int(sqlite3 *db, const char *key)
{
    char buf[32];
    meta_get(db, key, buf, sizeof buf);
    return buf[0] != '\0' ? strtoll(buf, NULL, 10) : 0;
}

static int64_t db_count(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t n = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return n;
}

/* Opens (creating unless readonly) DIR/agent.db. Returns a roost_rc. */
static int db_open(const char *dir, bool readonly, sqlite3 **out)
{
    *out = NULL;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/agent.db", dir) >= sizeof path) {
        return ROOST_EINVAL;
    }
    sqlite3 *db = NULL;
    int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return ROOST_EIO;
    }
    sqlite3_busy_timeout(db, AGENT_STATE_BUSY_TIMEOUT_MS);
    if (!readonly && sqlite3_exec(db, schema_sql, NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return ROOST_EIO;
    }
    *out = db;
    return ROOST_OK;
}

static int make_dir(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        return S_ISDIR(sb.st_mode) ? ROOST_OK : ROOST_EIO;
    }
    return mkdir(dir, 0700) == 0 || errno == EEXIST ? ROOST_OK : ROOST_EIO;
}

/* Opens (creating) DIR/agent.lock, the file the running agent holds an exclusive flock on. */
static int lock_open(const char *dir, int *fd_out)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/agent.lock", dir) >= sizeof path) {
        return ROOST_EINVAL;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        return ROOST_EIO;
    }
    *fd_out = fd;
    return ROOST_OK;
}

void agent_state_init(struct agent_state *st, int processed_max, int64_t processed_max_age_s)
{
    memset(st, 0, sizeof *st);
    st->lock_fd = -1;
    st->processed_max = processed_max;
    st->processed_max_age_s = processed_max_age_s;
    pthread_mutex_init(&st->mu, NULL);
}

void agent_state_cleanup(struct agent_state *st)
{
    if (st->db != NULL) {
        sqlite3_close(st->db);
        st->db = NULL;
    }
    if (st->lock_fd >= 0) {
        close(st->lock_fd); /* releases the flock */
        st->lock_fd = -1;
    }
    pthread_mutex_destroy(&st->mu);
}

/* Whether the agent process that last ran on DIR (the pid it recorded) is gone. */
static bool recorded_owner_gone(const char *dir)
{
    sqlite3 *db = NULL;
    if (db_open(dir, true, &db) != ROOST_OK) {
        return false;
    }
    int64_t pid = meta_get_int(db, "pid");
    sqlite3_close(db);
    return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Takes the dir's lock. A process the previous agent forked (a command's supervisor, before it
 * closes what it inherited) holds the lock a moment after that agent is SIGKILLed: while the
 * agent that recorded its pid is gone, wait for it (up to 5 s) instead of refusing a restart. A
 * live agent on the dir is refused at once. */
static int lock_take(int fd, const char *dir)
{
    for (int waited_ms = 0;; waited_ms += 20) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            return ROOST_OK;
        }
        if (errno != EWOULDBLOCK) {
            return ROOST_EIO;
        }
        if (waited_ms >= 5000 || !recorded_owner_gone(dir)) {
            return ROOST_ESTATE;
        }
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    }
}

int agent_state_open(struct agent_state *st, const char *dir, const char *agent_id)
{
    int rc;
    if ((rc = make_dir(dir)) != ROOST_OK || (rc = lock_open(dir, &st->lock_fd)) != ROOST_OK ||
        (rc = lock_take(st->lock_fd, dir)) != ROOST_OK) {
        return rc;
    }
    if ((rc = db_open(dir, false, &st->db)) != ROOST_OK) {
        return rc;
    }
    char stored[160];
    meta_get(st->db, "agent_id", stored, sizeof stored);
    if (stored[0] != '\0' && strcmp(stored, agent_id) != 0) {
        return ROOST_ESTATE; /* one state dir per agent id: its cursor means nothing elsewhere */
    }
    if (stored[0] == '\0' && meta_set(st->db, "agent_id", agent_id) != 0) {
        return ROOST_EIO;
    }
    return ROOST_OK;
}

void agent_state_load(struct agent_state *st, int64_t *cursor, int64_t *last_sync_ms,
                      int64_t *leases)
{
    pthread_mutex_lock(&st->mu);
    *cursor = meta_get_int(st->db, "cursor");
    *last_sync_ms = meta_get_int(st->db, "last_sync_ms");
    *leases = db_count(st->db, "SELECT count(*) FROM leases");
    pthread_mutex_unlock(&st->mu);
}

void agent_state_save_meta(struct agent_state *st, enum roost_agent_conn conn, int64_t cursor,
                           int64_t last_sync_ms)
{
    pthread_mutex_lock(&st->mu);
    sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL);
    meta_set(st->db, "conn", roost_agent_conn_name(conn));
    meta_set_int(st->db, "cursor", cursor);
    meta_set_int(st->db, "last_sync_ms", last_sync_ms);
    sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
    pthread_mutex_unlock(&st->mu);
}

void agent_state_owner_get(struct agent_state *st, char *buf, size_t len)
{
    pthread_mutex_lock(&st->mu);
    meta_get(st->db, "consumer", buf, len);
    pthread_mutex_unlock(&st->mu);
}

void agent_state_owner_set(struct agent_state *st, const char *consumer, int64_t pid)
{
    pthread_mutex_lock(&st->mu);
    sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL);
    meta_set(st->db, "consumer", consumer);
    meta_set_int(st->db, "pid", pid);
    sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
    pthread_mutex_unlock(&st->mu);
}

bool agent_state_processed_contains(struct agent_state *st, const char *event_id)
{
    pthread_mutex_lock(&st->mu);
    sqlite3_stmt *q = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(st->db, "SELECT 1 FROM processed WHERE event_id=?", -1, &q, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(q, 1, event_id, -1, SQLITE_STATIC);
        found = sqlite3_step(q) == SQLITE_ROW;
    }
    sqlite3_finalize(q);
    pthread_mutex_unlock(&st->mu);
    return found;
}

/* Drops processed ids older than the age limit, then all but the newest processed_max. Call
 * with st->mu held. */
static void processed_prune(struct agent_state *st, int64_t now)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(st->db, "DELETE FROM processed WHERE at_ms < ?", -1, &q, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_int64(q, 1, now - st->processed_max_age_s * 1000);
        sqlite3_step(q);
    }
    sqlite3_finalize(q);
    q = NULL;
    if (sqlite3_prepare_v2(st->db,
                           "DELETE FROM processed WHERE event_id IN (SELECT event_id FROM "
                           "processed ORDER BY at_ms DESC LIMIT -1 OFFSET ?)",
                           -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, st->processed_max);
        sqlite3_step(q);
    }
    sqlite3_finalize(q);
}

int agent_state_processed_add(struct agent_state *st, const char *event_id)
{
    pthread_mutex_lock(&st->mu);
    int64_t now = time_now_ms();
    int rc = -1;
    sqlite3_stmt *ins = NULL;
    if (sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO processed(event_id,at_ms) VALUES(?,?)",
                           -1, &ins, NULL) == SQLITE_OK) {
        sqlite3_bind_text(ins, 1, event_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 2, now);
        rc = sqlite3_step(ins) == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(ins);
    if (rc == 0 && ++st->inserts_since_prune >= AGENT_STATE_PRUNE_EVERY) {
        st->inserts_since_prune = 0;
        processed_prune(st, now);
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int64_t agent_state_processed_count(struct agent_state *st)
{
    pthread_mutex_lock(&st->mu);
    int64_t n = db_count(st->db, "SELECT count(*) FROM processed");
    pthread_mutex_unlock(&st->mu);
    return n;
}

int agent_state_leases_store(struct agent_state *st, const struct roost_events *evs)
{
    pthread_mutex_lock(&st->mu);
    int rc = sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
    sqlite3_stmt *q = NULL;
    if (rc == 0 && sqlite3_prepare_v2(st->db,
                                      "INSERT OR REPLACE INTO leases(event_id,lease_token,"
                                      "claimed_ms) VALUES(?,?,?)",
                                      -1, &q, NULL) != SQLITE_OK) {
        rc = -1;
    }
    int64_t now = time_now_ms();
    for (size_t i = 0; rc == 0 && i < evs->count; i++) {
        const struct roost_event *ev = evs->items[i];
        sqlite3_reset(q);
        sqlite3_bind_text(q, 1, ev->event_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, ev->lease_token != NULL ? ev->lease_token : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 3, now);
        rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(q);
    rc = sqlite3_exec(st->db, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK &&
                 rc == 0
             ? 0
             : -1;
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int agent_state_leases_list(struct agent_state *st, bool processed, struct agent_state_lease *rows,
                            int max)
{
    static const char *const sql[2] = {
        "SELECT event_id, lease_token FROM leases LIMIT ?",
        "SELECT l.event_id, l.lease_token FROM leases l JOIN processed p ON "
        "p.event_id = l.event_id LIMIT ?",
    };
    pthread_mutex_lock(&st->mu);
    sqlite3_stmt *q = NULL;
    int n = 0;
    if (sqlite3_prepare_v2(st->db, sql[processed ? 1 : 0], -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_int(q, 1, max);
        while (n < max && sqlite3_step(q) == SQLITE_ROW) {
            snprintf(rows[n].event_id, sizeof rows[n].event_id, "%s",
                     (const char *)sqlite3_column_text(q, 0));
            snprintf(rows[n].lease_token, sizeof rows[n].lease_token, "%s",
                     (const char *)sqlite3_column_text(q, 1));
            n++;
        }
    }
    sqlite3_finalize(q);
    pthread_mutex_unlock(&st->mu);
    return n;
}

void agent_state_lease_forget(struct agent_state *st, const char *event_id)
{
    pthread_mutex_lock(&st->mu);
    db_exec(st->db, "DELETE FROM leases WHERE event_id=?", event_id, NULL, 0);
    pthread_mutex_unlock(&st->mu);
}

void agent_state_leases_clear(struct agent_state *st)
{
    pthread_mutex_lock(&st->mu);
    db_exec(st->db, "DELETE FROM leases", NULL, NULL, 0);
    pthread_mutex_unlock(&st->mu);
}

int64_t agent_state_leases_count(struct agent_state *st)
{
    pthread_mutex_lock(&st->mu);
    int64_t n = db_count(st->db, "SELECT count(*) FROM leases");
    pthread_mutex_unlock(&st->mu);
    return n;
}

/* ---- status of another process ---------------------------------------------------------- */

static int conn_parse(const char *s)
{
    if (s == NULL || s[0] == '\0') {
        return ROOST_AGENT_CONN_STARTING; /* nothing recorded yet */
    }
    for (int c = ROOST_AGENT_CONN_STARTING; c <= ROOST_AGENT_CONN_STOPPED; c++) {
        if (strcmp(s, roost_agent_conn_name((enum roost_agent_conn)c)) == 0) {
            return c;
        }
    }
    return ROOST_AGENT_CONN_STOPPED;
}

int roost_agent_status_read(const char *state_dir, struct roost_agent_status *out)
{
    if (state_dir == NULL || out == NULL) {
        return ROOST_EINVAL;
    }
    memset(out, 0, sizeof *out);
    char path[4096];
    struct stat sb;
    if ((size_t)snprintf(path, sizeof path, "%s/agent.db", state_dir) >= sizeof path) {
        return ROOST_EINVAL;
    }
    if (stat(path, &sb) != 0) {
        return ROOST_EIO;
    }
    sqlite3 *db = NULL;
    int rc = db_open(state_dir, true, &db);
    if (rc != ROOST_OK) {
        return rc;
    }
    char buf[160];
    meta_get(db, "conn", buf, sizeof buf);
    out->conn = (enum roost_agent_conn)conn_parse(buf);
    out->cursor = meta_get_int(db, "cursor");
    out->last_sync_ms = meta_get_int(db, "last_sync_ms");
    out->pid = meta_get_int(db, "pid");
    out->outstanding_leases = db_count(db, "SELECT count(*) FROM leases");
    out->processed_ids = db_count(db, "SELECT count(*) FROM processed");
    meta_get(db, "agent_id", out->agent_id, sizeof out->agent_id);
    meta_get(db, "consumer", out->consumer, sizeof out->consumer);
    sqlite3_close(db);
    /* The running agent holds an exclusive flock for its whole life; a crashed one does not. */
    int fd = -1;
    if (lock_open(state_dir, &fd) == ROOST_OK) {
        if (flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
            out->running = true;
        }
        close(fd);
    }
    if (!out->running) {
        out->conn = ROOST_AGENT_CONN_STOPPED;
    }
    return ROOST_OK;
}
