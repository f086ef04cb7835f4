/* SPDX-License-Identifier: MIT */
/* The agent loop of libroost (include/roost/roost_agent.h, doc/AGENT.md). Threads:
 *
 *   run (the caller)  recovery, cursor sync, claims (long polls while SSE is down) → slots
 *   workers × N       take a queued slot, consult the processed set, run the handler, queue
 *                     the outcome (ack / release) for the keeper
 *   keeper            batched acks, releases, lease extension at half-life (its own client)
 *   sse               GET …/subscribe through libcurl + the SSE parser; pings set need_sync
 *   watcher           blocks on the stop pipe, so roost_agent_stop() stays async-signal-safe
 *
 * Everything shared sits under a->mu with one condition variable (few threads, simple waits).
 * The state file (SQLite, a->db under a->db_mu) is written before the network learns about it:
 * a lease is stored before its handler runs and a processed id before its ack is sent, so a
 * crash at any point leaves enough behind for the next run to release or ack instead of losing
 * or repeating work. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/ids.h"
#include "common/timeutil.h"
#include "proto/sse.h"
#include "roost/roost_agent.h"
#include "sdk/sdk.h"

#include "common/banned.h"

#define AGENT_MAX_CONCURRENCY 256
#define AGENT_ACK_BATCH 100
#define AGENT_SSE_MAX_BACKOFF_MS 30000
#define AGENT_FLUSH_DEADLINE_MS 10000
#define AGENT_PRUNE_EVERY 256
/* A stream silent for this long is dead (roostd's heartbeat is 30 s by default). */
#define AGENT_SSE_IDLE_S 75
/* Safety re-sync while streaming, in case a ping was lost on the way. */
#define AGENT_STREAM_RESYNC_MS 60000

enum slot_state { SLOT_FREE = 0, SLOT_QUEUED, SLOT_RUNNING };

struct slot {
    enum slot_state state;
    struct roost_event *ev;
    int64_t next_extend_ms; /* monotonic */
};

enum action_kind { ACT_ACK, ACT_RELEASE };

/* An outcome waiting to be told to roostd. */
struct action {
    struct action *next;
    enum action_kind kind;
    char *event_id;
    char *lease_token;
    int64_t delay_s;
    enum roost_release_reason reason;
    int tries;
    int64_t not_before_ms; /* monotonic */
};

struct roost_agent {
    /* options (copied) */
    char *server_url, *token, *agent_id, *state_dir, *consumer, *ca_file;
    char *signing_key, *key_id, *key_alg; /* signing_key NULL: requests are not signed */
    struct sdk_signer *signer;            /* loaded from them, for the SSE thread */
    int concurrency, lease_s, poll_ceiling_s, long_poll_s, processed_max;
    int64_t processed_max_age_s;
    roost_agent_handler_fn handler;
    void *handler_ctx;
    roost_agent_state_fn on_state;
    roost_agent_conn_fn on_conn;
    roost_agent_log_fn on_log;
    void *cb_ctx;

    /* state file */
    sqlite3 *db;
    pthread_mutex_t db_mu;
    int lock_fd;
    int inserts_since_prune;

    /* stop */
    atomic_int stop;
    int stop_pipe[2];

    /* shared, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool run_called;
    bool sse_up;
    bool server_ok; /* the last request reached roostd */
    bool contacted; /* any request reached roostd */
    bool need_sync;
    unsigned sse_gen; /* counts successful stream connects */
    int64_t sse_head; /* last head an SSE frame announced, -1 unknown */
    struct slot *slots;
    int n_busy; /* slots not free */
    struct action *act_head, *act_tail;
    int n_actions;
    bool workers_exit, keeper_exit;
    int fatal_rc;
    enum roost_agent_conn conn;
    int64_t cursor;
    int64_t last_sync_ms;
    int64_t last_meta_sync_ms; /* last_sync_ms value last written to the state file */
    int64_t handled, acked, released, outstanding;

    /* callbacks are serialised by cb_mu; conn_notified is what on_conn last heard */
    pthread_mutex_t cb_mu;
    enum roost_agent_conn conn_notified;
    unsigned rng;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static int64_t mono_ms(void)
{
    return time_mono_ms();
}

static void agent_log(struct roost_agent *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void agent_log(struct roost_agent *a, const char *fmt, ...)
{
    if (a->on_log == NULL) {
        return;
    }
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&a->cb_mu);
    a->on_log(line, a->cb_ctx);
    pthread_mutex_unlock(&a->cb_mu);
}

/* A random factor in [0.75, 1.25) applied to a delay, so that many agents restarted together do
 * not retry in lockstep. Call with mu held. */
static int64_t jitter(struct roost_agent *a, int64_t ms)
{
    a->rng = a->rng * 1103515245u + 12345u;
    int64_t pct = 75 + (int64_t)((a->rng >> 16) % 50);
    return ms * pct / 100;
}

static void cond_wait_ms(struct roost_agent *a, int64_t ms)
{
    if (ms <= 0) {
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&a->cond, &a->mu, &ts);
}

static bool stopping(const struct roost_agent *a)
{
    return atomic_load(&a->stop) != 0;
}

/* Errors that say "try again later" rather than "this will never work". */
static bool transient_rc(int rc)
{
    return rc == ROOST_ECONNECT || rc == ROOST_EUNAVAILABLE || rc == ROOST_ERETRY ||
           rc == ROOST_ESHUTDOWN || rc == ROOST_ERATELIMIT || rc == ROOST_EINTERNAL ||
           rc == ROOST_ESTORE || rc == ROOST_EPROTO || rc == ROOST_ENOMEM;
}

/* Every 401/403: a refused token or signature (key revoked, unknown, wrong agent), which a
 * retry cannot fix. Each request is signed afresh, so none of them is transient. */
static bool auth_rc(int rc)
{
    int status = roost_err_http_status(rc);
    return status == 401 || status == 403;
}

const char *roost_agent_conn_name(enum roost_agent_conn conn)
{
    switch (conn) {
    case ROOST_AGENT_CONN_STARTING:
        return "starting";
    case ROOST_AGENT_CONN_STREAMING:
        return "streaming";
    case ROOST_AGENT_CONN_POLLING:
        return "polling";
    case ROOST_AGENT_CONN_OFFLINE:
        return "offline";
    case ROOST_AGENT_CONN_STOPPED:
        return "stopped";
    }
    return "unknown";
}

static int conn_parse(const char *s)
{
    if (s == NULL || s[0] == '\0') {
        return ROOST_AGENT_CONN_STARTING; /* nothing recorded yet */
    }
    for (int c = ROOST_AGENT_CONN_STARTING; c <= ROOST_AGENT_CONN_STOPPED; c++) {
        if (s != NULL && strcmp(s, roost_agent_conn_name((enum roost_agent_conn)c)) == 0) {
            return c;
        }
    }
    return ROOST_AGENT_CONN_STOPPED;
}

/* ---- state file ------------------------------------------------------------------------- */

static const char schema_sql[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;" /* WAL + NORMAL survives a process crash, which is our case */
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS processed(event_id TEXT PRIMARY KEY, at_ms INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS processed_at ON processed(at_ms);"
    "CREATE TABLE IF NOT EXISTS leases(event_id TEXT PRIMARY KEY, lease_token TEXT NOT NULL,"
    " claimed_ms INTEGER NOT NULL);";

/* One statement with up to two text and one integer parameter; returns SQLITE_DONE/ROW code
 * semantics folded into 0 / -1. Call with db_mu held. */
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

/* Writes the connection state, cursor and last sync for `roost agent status`. Call with mu held
 * (db_mu is taken inside: the order is always mu, then db_mu). */
static void persist_meta(struct roost_agent *a)
{
    pthread_mutex_lock(&a->db_mu);
    sqlite3_exec(a->db, "BEGIN", NULL, NULL, NULL);
    meta_set(a->db, "conn", roost_agent_conn_name(a->conn));
    meta_set_int(a->db, "cursor", a->cursor);
    meta_set_int(a->db, "last_sync_ms", a->last_sync_ms);
    sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL);
    pthread_mutex_unlock(&a->db_mu);
    a->last_meta_sync_ms = a->last_sync_ms;
}

static bool processed_contains(struct roost_agent *a, const char *event_id)
{
    pthread_mutex_lock(&a->db_mu);
    sqlite3_stmt *st = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(a->db, "SELECT 1 FROM processed WHERE event_id=?", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, event_id, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&a->db_mu);
    return found;
}

/* Records a handled event before its ack is sent; prunes the set by age and count now and then.
 * Returns 0 or -1 (the state file cannot be written). */
static int processed_add(struct roost_agent *a, const char *event_id)
{
    pthread_mutex_lock(&a->db_mu);
    int64_t now = time_now_ms();
    int rc = -1;
    sqlite3_stmt *ins = NULL;
    if (sqlite3_prepare_v2(a->db, "INSERT OR REPLACE INTO processed(event_id,at_ms) VALUES(?,?)",
                           -1, &ins, NULL) == SQLITE_OK) {
        sqlite3_bind_text(ins, 1, event_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 2, now);
        rc = sqlite3_step(ins) == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(ins);
    if (rc == 0 && ++a->inserts_since_prune >= AGENT_PRUNE_EVERY) {
        a->inserts_since_prune = 0;
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(a->db, "DELETE FROM processed WHERE at_ms < ?", -1, &st, NULL) ==
            SQLITE_OK) {
            sqlite3_bind_int64(st, 1, now - a->processed_max_age_s * 1000);
            sqlite3_step(st);
        }
        sqlite3_finalize(st);
        st = NULL;
        if (sqlite3_prepare_v2(a->db,
                               "DELETE FROM processed WHERE event_id IN (SELECT event_id FROM "
                               "processed ORDER BY at_ms DESC LIMIT -1 OFFSET ?)",
                               -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, a->processed_max);
            sqlite3_step(st);
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&a->db_mu);
    return rc;
}

static void lease_forget(struct roost_agent *a, const char *event_id)
{
    pthread_mutex_lock(&a->db_mu);
    db_exec(a->db, "DELETE FROM leases WHERE event_id=?", event_id, NULL, 0);
    pthread_mutex_unlock(&a->db_mu);
}

/* Stores the leases of a claim in one transaction, before any handler runs. */
static int leases_store(struct roost_agent *a, const struct roost_events *evs)
{
    pthread_mutex_lock(&a->db_mu);
    int rc = sqlite3_exec(a->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
    sqlite3_stmt *st = NULL;
    if (rc == 0 && sqlite3_prepare_v2(a->db,
                                      "INSERT OR REPLACE INTO leases(event_id,lease_token,"
                                      "claimed_ms) VALUES(?,?,?)",
                                      -1, &st, NULL) != SQLITE_OK) {
        rc = -1;
    }
    int64_t now = time_now_ms();
    for (size_t i = 0; rc == 0 && i < evs->count; i++) {
        const struct roost_event *ev = evs->items[i];
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, ev->event_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, ev->lease_token != NULL ? ev->lease_token : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(st);
    rc = sqlite3_exec(a->db, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK &&
                 rc == 0
             ? 0
             : -1;
    pthread_mutex_unlock(&a->db_mu);
    return rc;
}

/* Opens (creating) DIR/agent.db. Returns a roost_rc. */
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
    sqlite3_busy_timeout(db, 5000);
    if (!readonly && sqlite3_exec(db, schema_sql, NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return ROOST_EIO;
    }
    *out = db;
    return ROOST_OK;
}

/* ---- connection state ------------------------------------------------------------------- */

/* Recomputes the connection state; call with mu held. */
static void conn_update(struct roost_agent *a)
{
    enum roost_agent_conn c = a->conn;
    if (c == ROOST_AGENT_CONN_STOPPED) {
        return;
    }
    if (a->sse_up) {
        c = ROOST_AGENT_CONN_STREAMING;
    } else if (!a->contacted && a->server_ok) {
        c = ROOST_AGENT_CONN_STARTING;
    } else {
        c = a->server_ok ? ROOST_AGENT_CONN_POLLING : ROOST_AGENT_CONN_OFFLINE;
    }
    if (c != a->conn) {
        a->conn = c;
        persist_meta(a);
    }
}

/* Tells on_conn about a change; call without mu. */
static void conn_notify(struct roost_agent *a)
{
    pthread_mutex_lock(&a->cb_mu);
    pthread_mutex_lock(&a->mu);
    enum roost_agent_conn c = a->conn;
    pthread_mutex_unlock(&a->mu);
    if (c != a->conn_notified) {
        a->conn_notified = c;
        if (a->on_conn != NULL) {
            a->on_conn(c, a->cb_ctx);
        }
        if (a->on_log != NULL) {
            char line[64];
            snprintf(line, sizeof line, "connection %s", roost_agent_conn_name(c));
            a->on_log(line, a->cb_ctx);
        }
    }
    pthread_mutex_unlock(&a->cb_mu);
}

/* Records the outcome of a request to roostd (mu not held). */
static void note_request(struct roost_agent *a, int rc)
{
    if (rc == ROOST_ECONNECT && stopping(a)) {
        return; /* our own abort of a long poll, not the server's fault */
    }
    pthread_mutex_lock(&a->mu);
    bool reached = rc == ROOST_OK ||
                   !(rc == ROOST_ECONNECT || rc == ROOST_EUNAVAILABLE || rc == ROOST_ESHUTDOWN);
    a->server_ok = reached;
    if (reached) {
        a->contacted = true;
    }
    if (rc == ROOST_OK) {
        a->last_sync_ms = time_now_ms();
        if (a->last_sync_ms - a->last_meta_sync_ms >= 1000) {
            persist_meta(a);
        }
    }
    conn_update(a);
    pthread_mutex_unlock(&a->mu);
    conn_notify(a);
}

/* ---- options and lifecycle -------------------------------------------------------------- */

void roost_agent_options_init(struct roost_agent_options *opts)
{
    if (opts != NULL) {
        memset(opts, 0, sizeof *opts);
    }
}

static int make_dir(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        return S_ISDIR(sb.st_mode) ? ROOST_OK : ROOST_EIO;
    }
    return mkdir(dir, 0700) == 0 || errno == EEXIST ? ROOST_OK : ROOST_EIO;
}

/* Opens DIR/agent.lock; with `exclusive` takes the lock the running agent holds for its life. */
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

void roost_agent_free(struct roost_agent *a)
{
    if (a == NULL) {
        return;
    }
    if (a->db != NULL) {
        sqlite3_close(a->db);
    }
    if (a->lock_fd >= 0) {
        close(a->lock_fd); /* releases the flock */
    }
    for (int i = 0; i < 2; i++) {
        if (a->stop_pipe[i] >= 0) {
            close(a->stop_pipe[i]);
        }
    }
    struct action *x = a->act_head;
    while (x != NULL) {
        struct action *next = x->next;
        free(x->event_id);
        free(x->lease_token);
        free(x);
        x = next;
    }
    if (a->slots != NULL) {
        for (int i = 0; i < a->concurrency; i++) {
            sdk_event_free(a->slots[i].ev);
        }
        free(a->slots);
    }
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&a->db_mu);
    pthread_mutex_destroy(&a->cb_mu);
    pthread_cond_destroy(&a->cond);
    free(a->server_url);
    if (a->token != NULL) {
        memset(a->token, 0, strlen(a->token));
        free(a->token);
    }
    free(a->agent_id);
    free(a->state_dir);
    free(a->consumer);
    free(a->ca_file);
    if (a->signing_key != NULL) {
        OPENSSL_cleanse(a->signing_key, strlen(a->signing_key)); /* may be inline PEM */
        free(a->signing_key);
    }
    free(a->key_id);
    free(a->key_alg);
    sdk_signer_free(a->signer);
    free(a);
}

/* A client with the agent's URL, token, CA and signing key. */
static int agent_client_new(const struct roost_agent *a, struct roost_client **out)
{
    struct roost_client *c = NULL;
    int rc = roost_client_new(&c, a->server_url, a->token);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (a->ca_file != NULL) {
        roost_client_set_ca_file(c, a->ca_file);
    }
    if (a->signing_key != NULL &&
        (rc = roost_client_set_signing_key(c, a->signing_key, a->key_id, a->key_alg)) != ROOST_OK) {
        roost_client_free(c);
        return rc;
    }
    *out = c;
    return ROOST_OK;
}

int roost_agent_new(struct roost_agent **out, const struct roost_agent_options *o)
{
    if (out == NULL) {
        return ROOST_EINVAL;
    }
    *out = NULL;
    if (o == NULL || o->server_url == NULL || o->token == NULL || o->agent_id == NULL ||
        o->state_dir == NULL || o->state_dir[0] == '\0' || o->handler == NULL) {
        return ROOST_EINVAL;
    }
    if (!ids_valid_name(o->agent_id, strlen(o->agent_id))) {
        return ROOST_EAGENTID;
    }
    if (o->consumer != NULL && !ids_valid_consumer(o->consumer, strlen(o->consumer))) {
        return ROOST_ECONSUMER;
    }
    if (o->concurrency < 0 || o->concurrency > AGENT_MAX_CONCURRENCY || o->lease_s < 0 ||
        o->lease_s > 43200 || o->poll_ceiling_s < 0 || o->poll_ceiling_s > 86400 ||
        o->long_poll_s < 0 || o->long_poll_s > 30 ||
        (o->processed_max != 0 && (o->processed_max < 16 || o->processed_max > 10000000)) ||
        (o->processed_max_age_s != 0 && o->processed_max_age_s < 60)) {
        return ROOST_EINVAL;
    }
    /* Let the client validate the URL and token the same way every call does. */
    struct roost_client *probe = NULL;
    int rc = roost_client_new(&probe, o->server_url, o->token);
    roost_client_free(probe);
    if (rc != ROOST_OK) {
        return rc;
    }
    /* The signing key is loaded once here so that a bad key fails now, not in the loop. */
    struct sdk_signer *signer = NULL;
    if (o->signing_key_file != NULL) {
        char err[256];
        if ((rc = sdk_signer_new(o->signing_key_file, o->key_id, o->key_alg, &signer, err,
                                 sizeof err)) != ROOST_OK) {
            return rc;
        }
    }
    struct roost_agent *a = calloc(1, sizeof *a);
    if (a == NULL) {
        sdk_signer_free(signer);
        return ROOST_ENOMEM;
    }
    a->signer = signer;
    a->lock_fd = -1;
    a->stop_pipe[0] = a->stop_pipe[1] = -1;
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->db_mu, NULL);
    pthread_mutex_init(&a->cb_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cond, &ca);
    pthread_condattr_destroy(&ca);
    a->concurrency = o->concurrency != 0 ? o->concurrency : 1;
    a->lease_s = o->lease_s != 0 ? o->lease_s : 60;
    a->poll_ceiling_s = o->poll_ceiling_s != 0 ? o->poll_ceiling_s : 300;
    a->long_poll_s = o->long_poll_s != 0 ? o->long_poll_s : 25;
    a->processed_max = o->processed_max != 0 ? o->processed_max : 100000;
    a->processed_max_age_s = o->processed_max_age_s != 0 ? o->processed_max_age_s : 7 * 86400;
    a->handler = o->handler;
    a->handler_ctx = o->handler_ctx;
    a->on_state = o->on_state;
    a->on_conn = o->on_conn;
    a->on_log = o->on_log;
    a->cb_ctx = o->cb_ctx;
    a->sse_head = -1;
    a->conn = a->conn_notified = ROOST_AGENT_CONN_STARTING;
    a->rng = (unsigned)getpid() ^ (unsigned)time_now_ms();
    char host[64];
    char consumer[160];
    if (o->consumer == NULL) {
        if (gethostname(host, sizeof host) != 0) {
            snprintf(host, sizeof host, "host");
        }
        host[sizeof host - 1] = '\0';
        /* Keep only consumer-id characters of the host name. */
        for (char *p = host; *p != '\0'; p++) {
            if (!ids_valid_consumer(p, 1)) {
                *p = '_';
            }
        }
        snprintf(consumer, sizeof consumer, "%.100s-%ld", host, (long)getpid());
    }
    a->server_url = sdk_strdup(o->server_url);
    a->token = sdk_strdup(o->token);
    a->agent_id = sdk_strdup(o->agent_id);
    a->state_dir = sdk_strdup(o->state_dir);
    a->consumer = sdk_strdup(o->consumer != NULL ? o->consumer : consumer);
    a->ca_file = o->ca_file != NULL ? sdk_strdup(o->ca_file) : NULL;
    if (signer != NULL) {
        a->signing_key = sdk_strdup(o->signing_key_file);
        a->key_id = sdk_strdup(o->key_id);
        a->key_alg = o->key_alg != NULL ? sdk_strdup(o->key_alg) : NULL;
        if (a->signing_key == NULL || a->key_id == NULL ||
            (o->key_alg != NULL && a->key_alg == NULL)) {
            rc = ROOST_ENOMEM;
            goto fail;
        }
    }
    a->slots = calloc((size_t)a->concurrency, sizeof *a->slots);
    if (a->server_url == NULL || a->token == NULL || a->agent_id == NULL || a->state_dir == NULL ||
        a->consumer == NULL || a->slots == NULL || (o->ca_file != NULL && a->ca_file == NULL)) {
        rc = ROOST_ENOMEM;
        goto fail;
    }
    if (pipe(a->stop_pipe) != 0) {
        a->stop_pipe[0] = a->stop_pipe[1] = -1;
        rc = ROOST_EINTERNAL;
        goto fail;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(a->stop_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    fcntl(a->stop_pipe[1], F_SETFL, O_NONBLOCK | fcntl(a->stop_pipe[1], F_GETFL));
    if ((rc = make_dir(a->state_dir)) != ROOST_OK ||
        (rc = lock_open(a->state_dir, &a->lock_fd)) != ROOST_OK) {
        goto fail;
    }
    if (flock(a->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        rc = errno == EWOULDBLOCK ? ROOST_ESTATE : ROOST_EIO;
        goto fail;
    }
    if ((rc = db_open(a->state_dir, false, &a->db)) != ROOST_OK) {
        goto fail;
    }
    char stored[160];
    meta_get(a->db, "agent_id", stored, sizeof stored);
    if (stored[0] != '\0' && strcmp(stored, a->agent_id) != 0) {
        rc = ROOST_ESTATE; /* one state dir per agent id: its cursor means nothing elsewhere */
        goto fail;
    }
    if (stored[0] == '\0' && meta_set(a->db, "agent_id", a->agent_id) != 0) {
        rc = ROOST_EIO;
        goto fail;
    }
    a->cursor = meta_get_int(a->db, "cursor");
    a->last_sync_ms = a->last_meta_sync_ms = meta_get_int(a->db, "last_sync_ms");
    a->outstanding = db_count(a->db, "SELECT count(*) FROM leases");
    *out = a;
    return ROOST_OK;
fail:
    roost_agent_free(a);
    return rc;
}

void roost_agent_stop(struct roost_agent *a)
{
    if (a == NULL) {
        return;
    }
    int saved = errno; /* a signal handler must not change errno */
    atomic_store(&a->stop, 1);
    if (a->stop_pipe[1] >= 0) {
        ssize_t w = write(a->stop_pipe[1], "x", 1);
        (void)w; /* a full pipe already wakes the watcher */
    }
    errno = saved;
}

/* ---- status ----------------------------------------------------------------------------- */

int roost_agent_status(struct roost_agent *a, struct roost_agent_status *out)
{
    if (a == NULL || out == NULL) {
        return ROOST_EINVAL;
    }
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&a->mu);
    out->conn = a->conn;
    out->cursor = a->cursor;
    out->last_sync_ms = a->last_sync_ms;
    out->handled = a->handled;
    out->acked = a->acked;
    out->released = a->released;
    out->outstanding_leases = a->outstanding;
    out->running = a->run_called && a->conn != ROOST_AGENT_CONN_STOPPED;
    pthread_mutex_unlock(&a->mu);
    pthread_mutex_lock(&a->db_mu);
    out->processed_ids = db_count(a->db, "SELECT count(*) FROM processed");
    pthread_mutex_unlock(&a->db_mu);
    out->pid = (int64_t)getpid();
    snprintf(out->agent_id, sizeof out->agent_id, "%s", a->agent_id);
    snprintf(out->consumer, sizeof out->consumer, "%s", a->consumer);
    return ROOST_OK;
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

/* ---- actions (keeper queue) ------------------------------------------------------------- */

/* Queues an outcome; takes the strings. Call with mu held. */
static void action_push(struct roost_agent *a, enum action_kind kind, char *event_id,
                        char *lease_token, int64_t delay_s, enum roost_release_reason reason)
{
    struct action *x = calloc(1, sizeof *x);
    if (x == NULL) {
        /* Without memory the lease simply expires and the event comes back: nothing is lost. */
        free(event_id);
        free(lease_token);
        return;
    }
    x->kind = kind;
    x->event_id = event_id;
    x->lease_token = lease_token;
    x->delay_s = delay_s;
    x->reason = reason;
    if (a->act_tail != NULL) {
        a->act_tail->next = x;
    } else {
        a->act_head = x;
    }
    a->act_tail = x;
    a->n_actions++;
}

static void action_free(struct action *x)
{
    free(x->event_id);
    free(x->lease_token);
    free(x);
}

/* Gives a claimed event back from the run thread's point of view (not started). mu held. */
static void slot_release_unstarted(struct roost_agent *a, struct slot *s)
{
    action_push(a, ACT_RELEASE, s->ev->event_id, s->ev->lease_token, 0, ROOST_RELEASE_SHUTDOWN);
    s->ev->event_id = NULL;
    s->ev->lease_token = NULL;
    sdk_event_free(s->ev);
    s->ev = NULL;
    s->state = SLOT_FREE;
    a->n_busy--;
}

/* ---- workers ---------------------------------------------------------------------------- */

static int64_t failure_delay_s(int attempts)
{
    int64_t d = 1;
    for (int i = 1; i < attempts && d < 300; i++) {
        d *= 2;
    }
    return d < 300 ? d : 300;
}

static void *worker_main(void *arg)
{
    struct roost_agent *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        struct slot *s = NULL;
        for (int i = 0; i < a->concurrency && s == NULL; i++) {
            if (a->slots[i].state == SLOT_QUEUED) {
                s = &a->slots[i];
            }
        }
        if (s == NULL) {
            if (a->workers_exit) {
                break;
            }
            pthread_cond_wait(&a->cond, &a->mu);
            continue;
        }
        s->state = SLOT_RUNNING;
        struct roost_event *ev = s->ev;
        pthread_mutex_unlock(&a->mu);

        int result;
        bool ran = false;
        if (processed_contains(a, ev->event_id)) {
            /* Handled before (its ack was lost): ack again, never run twice. */
            agent_log(a, "event %s already processed: acking without running the handler",
                      ev->event_id);
            result = ROOST_AGENT_ACK;
        } else {
            result = a->handler(ev, a->handler_ctx);
            ran = true;
            if (result == ROOST_AGENT_ACK && processed_add(a, ev->event_id) != 0) {
                agent_log(a, "cannot record event %s as processed: releasing it", ev->event_id);
                result = ROOST_AGENT_RELEASE_NOW;
            }
        }

        pthread_mutex_lock(&a->mu);
        if (ran) {
            a->handled++;
        }
        switch (result) {
        case ROOST_AGENT_ACK:
            action_push(a, ACT_ACK, ev->event_id, ev->lease_token, 0, ROOST_RELEASE_DEFAULT);
            break;
        case ROOST_AGENT_RELEASE_NOW:
            action_push(a, ACT_RELEASE, ev->event_id, ev->lease_token, 0, ROOST_RELEASE_SHUTDOWN);
            break;
        case ROOST_AGENT_QUARANTINE:
            action_push(a, ACT_RELEASE, ev->event_id, ev->lease_token, 0, ROOST_RELEASE_POISON);
            break;
        default:
            action_push(a, ACT_RELEASE, ev->event_id, ev->lease_token,
                        failure_delay_s(ev->attempts), ROOST_RELEASE_TRANSIENT);
            break;
        }
        ev->event_id = NULL;
        ev->lease_token = NULL;
        sdk_event_free(ev);
        s->ev = NULL;
        s->state = SLOT_FREE;
        a->n_busy--;
        pthread_cond_broadcast(&a->cond);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* ---- keeper: acks, releases, extensions -------------------------------------------------- */

struct extend_job {
    char *event_id;
    char *lease_token;
};

/* Handles the server's answer to an action: done (forget the lease) or retry later. mu held. */
static bool action_settle(struct roost_agent *a, struct action *x, int rc, int64_t now)
{
    if (transient_rc(rc)) {
        x->tries++;
        int64_t d = 500;
        for (int i = 1; i < x->tries && d < 5000; i++) {
            d *= 2;
        }
        x->not_before_ms = now + jitter(a, d < 5000 ? d : 5000);
        return false;
    }
    if (rc == ROOST_OK) {
        if (x->kind == ACT_ACK) {
            a->acked++;
        } else {
            a->released++;
        }
    }
    if (a->outstanding > 0) {
        a->outstanding--;
    }
    return true;
}

static void *keeper_main(void *arg)
{
    struct roost_agent *a = arg;
    struct roost_client *c = NULL;
    if (agent_client_new(a, &c) != ROOST_OK) {
        return NULL;
    }
    roost_client_set_timeouts(c, 5000, 10000);
    struct action *batch[AGENT_ACK_BATCH];
    struct roost_ack acks[AGENT_ACK_BATCH];
    struct extend_job ext[AGENT_MAX_CONCURRENCY];
    int64_t flush_deadline = -1;
    int gave_up = 0;
    bool single_acks = false;

    pthread_mutex_lock(&a->mu);
    for (;;) {
        int64_t now = mono_ms();
        if (a->keeper_exit && flush_deadline < 0) {
            flush_deadline = now + AGENT_FLUSH_DEADLINE_MS;
        }
        /* Take up to a batch of ready actions: all acks together, releases one by one. */
        size_t n = 0;
        int64_t next_due = now + 250;
        struct action **pp = &a->act_head, *prev = NULL;
        while (*pp != NULL && n < AGENT_ACK_BATCH) {
            struct action *x = *pp;
            if (x->not_before_ms <= now) {
                *pp = x->next;
                if (a->act_tail == x) {
                    a->act_tail = prev;
                }
                a->n_actions--;
                x->next = NULL;
                batch[n++] = x;
            } else {
                if (x->not_before_ms < next_due) {
                    next_due = x->not_before_ms;
                }
                prev = x;
                pp = &x->next;
            }
        }
        /* Leases at half-life are extended (queued and running alike). */
        size_t n_ext = 0;
        for (int i = 0; i < a->concurrency; i++) {
            struct slot *s = &a->slots[i];
            if (s->state == SLOT_FREE || s->ev == NULL || s->ev->lease_token == NULL) {
                continue;
            }
            if (s->next_extend_ms <= now) {
                ext[n_ext].event_id = sdk_strdup(s->ev->event_id);
                ext[n_ext].lease_token = sdk_strdup(s->ev->lease_token);
                if (ext[n_ext].event_id == NULL || ext[n_ext].lease_token == NULL) {
                    free(ext[n_ext].event_id);
                    free(ext[n_ext].lease_token);
                    continue;
                }
                n_ext++;
                s->next_extend_ms = now + (int64_t)a->lease_s * 500;
            } else if (s->next_extend_ms < next_due) {
                next_due = s->next_extend_ms;
            }
        }
        if (n == 0 && n_ext == 0) {
            if (a->keeper_exit && (a->act_head == NULL || now >= flush_deadline)) {
                break;
            }
            cond_wait_ms(a, next_due - now > 0 ? next_due - now : 1);
            continue;
        }
        pthread_mutex_unlock(&a->mu);

        /* Acks in one request; releases individually. */
        size_t n_acks = 0;
        for (size_t i = 0; i < n; i++) {
            if (batch[i]->kind == ACT_ACK) {
                acks[n_acks].event_id = batch[i]->event_id;
                acks[n_acks].lease_token = batch[i]->lease_token;
                acks[n_acks].rc = ROOST_OK;
                n_acks++;
            }
        }
        int batch_rc = ROOST_OK;
        if (n_acks > 0 && !single_acks) {
            batch_rc = roost_events_ack(c, a->agent_id, acks, n_acks, NULL);
            note_request(a, batch_rc);
            if (auth_rc(batch_rc)) {
                agent_log(a, "acks refused: %s", roost_client_errmsg(c));
            }
            if (batch_rc == ROOST_ENOTFOUND || batch_rc == ROOST_EMETHOD) {
                /* A roostd without the batch route: ack one by one from now on. */
                agent_log(a, "no batch ack route on this server: acking one by one");
                single_acks = true;
            }
        }
        if (n_acks > 0 && single_acks) {
            batch_rc = ROOST_OK;
            for (size_t k = 0; k < n_acks; k++) {
                acks[k].rc = roost_event_ack(c, a->agent_id, acks[k].event_id, acks[k].lease_token);
                note_request(a, acks[k].rc);
            }
        }
        int rel_rc[AGENT_ACK_BATCH];
        for (size_t i = 0, k = 0; i < n; i++) {
            struct action *x = batch[i];
            if (x->kind == ACT_ACK) {
                rel_rc[i] = batch_rc == ROOST_OK ? acks[k].rc : batch_rc;
                k++;
                if (rel_rc[i] != ROOST_OK && !transient_rc(rel_rc[i])) {
                    agent_log(a, "ack of %s refused: %s", x->event_id, roost_err_code(rel_rc[i]));
                }
                continue;
            }
            rel_rc[i] = roost_event_release(c, a->agent_id, x->event_id, x->lease_token, x->delay_s,
                                            x->reason, NULL);
            note_request(a, rel_rc[i]);
            if (rel_rc[i] != ROOST_OK && !transient_rc(rel_rc[i])) {
                agent_log(a, "release of %s refused: %s", x->event_id, roost_err_code(rel_rc[i]));
            }
        }
        int ext_rc[AGENT_MAX_CONCURRENCY];
        for (size_t i = 0; i < n_ext; i++) {
            ext_rc[i] = roost_event_extend(c, a->agent_id, ext[i].event_id, ext[i].lease_token,
                                           a->lease_s, NULL);
            note_request(a, ext_rc[i]);
            if (ext_rc[i] != ROOST_OK && !transient_rc(ext_rc[i])) {
                agent_log(a, "extending the lease of %s failed: %s", ext[i].event_id,
                          roost_err_code(ext_rc[i]));
            }
        }
        /* Settled leases leave the state file before the bookkeeping below. */
        for (size_t i = 0; i < n; i++) {
            if (!transient_rc(rel_rc[i])) {
                lease_forget(a, batch[i]->event_id);
            }
        }

        pthread_mutex_lock(&a->mu);
        now = mono_ms();
        for (size_t i = 0; i < n; i++) {
            struct action *x = batch[i];
            if (action_settle(a, x, rel_rc[i], now)) {
                action_free(x);
            } else if (a->keeper_exit && now >= flush_deadline) {
                /* release-all at the very end still gives these back. */
                gave_up++;
                action_free(x);
            } else {
                if (a->act_tail != NULL) {
                    a->act_tail->next = x;
                } else {
                    a->act_head = x;
                }
                a->act_tail = x;
                a->n_actions++;
            }
        }
        for (size_t i = 0; i < n_ext; i++) {
            if (transient_rc(ext_rc[i])) {
                /* Try again soon: the lease is still running down. */
                for (int j = 0; j < a->concurrency; j++) {
                    struct slot *s = &a->slots[j];
                    if (s->ev != NULL && strcmp(s->ev->event_id, ext[i].event_id) == 0) {
                        s->next_extend_ms = now + 1000;
                    }
                }
            }
            free(ext[i].event_id);
            free(ext[i].lease_token);
        }
        pthread_cond_broadcast(&a->cond);
    }
    pthread_mutex_unlock(&a->mu);
    if (gave_up > 0) {
        agent_log(a, "shutdown: gave up on %d ack(s)/release(s) roostd did not answer", gave_up);
    }
    roost_client_free(c);
    return NULL;
}

/* ---- SSE -------------------------------------------------------------------------------- */

struct sse_ctx {
    struct roost_agent *a;
    CURL *curl;
    struct sse_parser parser;
    bool up;
    long status;
};

/* Extracts cursor_hint from {"cursor_hint":N}; -1 when absent. */
static int64_t parse_hint(const char *data, size_t len)
{
    json_error_t err;
    json_t *j = json_loadb(data, len, 0, &err);
    int64_t v = -1;
    json_t *h = json_object_get(j, "cursor_hint");
    if (json_is_integer(h)) {
        v = (int64_t)json_integer_value(h);
    }
    json_decref(j);
    return v;
}

static int on_sse_event(void *ctx, const struct sse_event *ev)
{
    struct sse_ctx *x = ctx;
    struct roost_agent *a = x->a;
    bool ping = strcmp(ev->event, "inbox_updated") == 0;
    bool beat = strcmp(ev->event, "heartbeat") == 0;
    if (!ping && !beat) {
        return 0;
    }
    int64_t hint = parse_hint(ev->data, ev->data_len);
    pthread_mutex_lock(&a->mu);
    /* A ping always means "pull"; a heartbeat only when it shows a head we have not seen. */
    if (ping || (hint >= 0 && hint != a->sse_head)) {
        a->need_sync = true;
        pthread_cond_broadcast(&a->cond);
    }
    if (hint >= 0) {
        a->sse_head = hint;
    }
    pthread_mutex_unlock(&a->mu);
    return 0;
}

static size_t on_sse_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct sse_ctx *x = userdata;
    struct roost_agent *a = x->a;
    size_t n = size * nmemb;
    if (!x->up) {
        curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->status);
        if (x->status != 200) {
            return 0; /* an error answer, not a stream */
        }
        x->up = true;
        pthread_mutex_lock(&a->mu);
        a->sse_up = true;
        a->server_ok = true;
        a->contacted = true;
        /* Pull on every (re)connect: whatever happened while the stream was down. */
        a->need_sync = true;
        a->sse_gen++;
        a->last_sync_ms = time_now_ms();
        conn_update(a);
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->mu);
        conn_notify(a);
    }
    int rc = sse_parser_feed(&x->parser, ptr, n, on_sse_event, x);
    return rc == SSE_OK ? n : 0;
}

static int on_sse_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                           curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    const struct roost_agent *a = userdata;
    return stopping(a);
}

static void *sse_main(void *arg)
{
    struct roost_agent *a = arg;
    struct sse_ctx x = {.a = a};
    sse_parser_init(&x.parser, 0, 64 * 1024);
    x.curl = curl_easy_init();
    struct sdk_str url, auth;
    sdk_str_init(&url, SDK_MAX_URL_BYTES * 4);
    sdk_str_init(&auth, SDK_MAX_TOKEN_BYTES + 64);
    struct sdk_str path;
    sdk_str_init(&path, 0);
    sdk_path_agent(&path, a->agent_id, "/subscribe");
    char *base = NULL;
    sdk_url_normalize(a->server_url, &base);
    if (base != NULL && path.rc == ROOST_OK) {
        sdk_str_appendz(&url, base);
        sdk_str_appendz(&url, path.data);
    }
    free(base);
    sdk_str_cleanup(&path);
    sdk_str_appendf(&auth, "Authorization: Bearer %s", a->token);
    struct curl_slist *hdrs = NULL;
    if (x.curl == NULL || url.rc != ROOST_OK || auth.rc != ROOST_OK || url.len == 0 ||
        (hdrs = curl_slist_append(hdrs, "Accept: text/event-stream")) == NULL ||
        curl_slist_append(hdrs, auth.data) == NULL) {
        agent_log(a, "cannot set up the SSE stream: polling only");
        goto out;
    }
    int64_t backoff = 1000;
    while (!stopping(a)) {
        /* Each connection attempt is signed afresh: a nonce is good for one request only. */
        struct curl_slist *signed_hdrs = NULL;
        if (a->signer != NULL) {
            char err[256];
            if ((signed_hdrs = curl_slist_append(NULL, "Accept: text/event-stream")) == NULL ||
                curl_slist_append(signed_hdrs, auth.data) == NULL ||
                sdk_signer_headers(a->signer, "GET", url.data, a->token, NULL, 0, &signed_hdrs, err,
                                   sizeof err) != ROOST_OK) {
                curl_slist_free_all(signed_hdrs);
                agent_log(a, "cannot sign the SSE request: polling only");
                break;
            }
        }
        curl_easy_reset(x.curl);
        curl_easy_setopt(x.curl, CURLOPT_URL, url.data);
        curl_easy_setopt(x.curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(x.curl, CURLOPT_HTTPHEADER, signed_hdrs != NULL ? signed_hdrs : hdrs);
        curl_easy_setopt(x.curl, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(x.curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        curl_easy_setopt(x.curl, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(x.curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(x.curl, CURLOPT_LOW_SPEED_TIME, (long)AGENT_SSE_IDLE_S);
        curl_easy_setopt(x.curl, CURLOPT_USERAGENT, "libroost/" ROOST_VERSION);
        curl_easy_setopt(x.curl, CURLOPT_WRITEFUNCTION, on_sse_data);
        curl_easy_setopt(x.curl, CURLOPT_WRITEDATA, &x);
        curl_easy_setopt(x.curl, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(x.curl, CURLOPT_XFERINFOFUNCTION, on_sse_progress);
        curl_easy_setopt(x.curl, CURLOPT_XFERINFODATA, a);
        if (a->ca_file != NULL) {
            curl_easy_setopt(x.curl, CURLOPT_CAINFO, a->ca_file);
        }
        sse_parser_reset_stream(&x.parser);
        x.up = false;
        x.status = 0;
        CURLcode cc = curl_easy_perform(x.curl);
        if (x.status == 0) {
            curl_easy_getinfo(x.curl, CURLINFO_RESPONSE_CODE, &x.status);
        }
        curl_easy_setopt(x.curl, CURLOPT_HTTPHEADER, NULL);
        curl_slist_free_all(signed_hdrs);
        pthread_mutex_lock(&a->mu);
        bool was_up = x.up;
        a->sse_up = false;
        if (!stopping(a)) {
            conn_update(a); /* (while stopping, the next state is "stopped") */
        }
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->mu);
        conn_notify(a);
        if (stopping(a)) {
            break;
        }
        if (was_up) {
            backoff = 1000; /* it worked until now: reconnect soon */
            agent_log(a, "SSE stream ended (%s): reconnecting", curl_easy_strerror(cc));
        } else {
            agent_log(a, "SSE connect failed (HTTP %ld, %s): polling meanwhile", x.status,
                      curl_easy_strerror(cc));
        }
        /* The server's retry: is a floor (bounded, so a hostile value cannot stall us). */
        int64_t floor_ms =
            x.parser.retry_ms > 0 && x.parser.retry_ms < 60000 ? x.parser.retry_ms : 0;
        pthread_mutex_lock(&a->mu);
        int64_t wait = jitter(a, backoff > floor_ms ? backoff : floor_ms);
        int64_t until = mono_ms() + wait;
        while (!stopping(a) && mono_ms() < until) {
            cond_wait_ms(a, until - mono_ms());
        }
        pthread_mutex_unlock(&a->mu);
        backoff = backoff * 2 < AGENT_SSE_MAX_BACKOFF_MS ? backoff * 2 : AGENT_SSE_MAX_BACKOFF_MS;
    }
out:
    curl_slist_free_all(hdrs);
    if (x.curl != NULL) {
        curl_easy_cleanup(x.curl);
    }
    if (auth.data != NULL) {
        memset(auth.data, 0, auth.len);
    }
    sdk_str_cleanup(&auth);
    sdk_str_cleanup(&url);
    sse_parser_cleanup(&x.parser);
    return NULL;
}

/* ---- stop watcher ----------------------------------------------------------------------- */

static void *watcher_main(void *arg)
{
    struct roost_agent *a = arg;
    /* The read end blocks (only the write end, used from signal handlers, is non-blocking). */
    while (!stopping(a)) {
        char b[16];
        ssize_t r = read(a->stop_pipe[0], b, sizeof b);
        if (r == 0 || (r < 0 && errno != EINTR)) {
            break;
        }
    }
    pthread_mutex_lock(&a->mu);
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* ---- the run thread --------------------------------------------------------------------- */

/* Sleeps up to ms (stop-aware). mu not held. */
static void pause_ms(struct roost_agent *a, int64_t ms)
{
    pthread_mutex_lock(&a->mu);
    int64_t until = mono_ms() + ms;
    while (!stopping(a) && mono_ms() < until) {
        cond_wait_ms(a, until - mono_ms());
    }
    pthread_mutex_unlock(&a->mu);
}

/* Releases what a crashed previous run left: every lease of its consumer id (release-all), then
 * each lease still recorded in the state file. Retries until done or stopped. */
static int recover(struct roost_agent *a, struct roost_client *c)
{
    char old[160];
    pthread_mutex_lock(&a->db_mu);
    meta_get(a->db, "consumer", old, sizeof old);
    pthread_mutex_unlock(&a->db_mu);
    int64_t backoff = 1000;
    while (!stopping(a)) {
        int rc = ROOST_OK;
        if (old[0] != '\0') {
            int64_t n = 0;
            rc = roost_inbox_release_all(c, a->agent_id, old, &n);
            note_request(a, rc);
            if (rc == ROOST_OK && n > 0) {
                agent_log(a, "recovery: released %" PRId64 " lease(s) of the previous run (%s)", n,
                          old);
            }
        }
        /* Leases recorded individually (a claim without consumer, or another consumer id). */
        pthread_mutex_lock(&a->db_mu);
        sqlite3_stmt *st = NULL;
        char ids[64][64], toks[64][64];
        int n = 0;
        if (sqlite3_prepare_v2(a->db, "SELECT event_id, lease_token FROM leases LIMIT 64", -1, &st,
                               NULL) == SQLITE_OK) {
            while (n < 64 && sqlite3_step(st) == SQLITE_ROW) {
                snprintf(ids[n], sizeof ids[n], "%s", (const char *)sqlite3_column_text(st, 0));
                snprintf(toks[n], sizeof toks[n], "%s", (const char *)sqlite3_column_text(st, 1));
                n++;
            }
        }
        sqlite3_finalize(st);
        pthread_mutex_unlock(&a->db_mu);
        for (int i = 0; rc == ROOST_OK && i < n; i++) {
            int r = roost_event_release(c, a->agent_id, ids[i], toks[i], 0, ROOST_RELEASE_SHUTDOWN,
                                        NULL);
            note_request(a, r);
            if (transient_rc(r) || auth_rc(r)) {
                rc = r;
                break;
            }
            /* Released now, or already gone (acked, expired, re-claimed): forget it. */
            lease_forget(a, ids[i]);
        }
        if (rc == ROOST_OK && n == 64) {
            continue; /* more rows */
        }
        if (rc == ROOST_OK) {
            break;
        }
        if (auth_rc(rc)) {
            agent_log(a, "recovery refused: %s", roost_client_errmsg(c));
            return rc;
        }
        agent_log(a, "recovery: %s; retrying", roost_client_errmsg(c));
        pthread_mutex_lock(&a->mu);
        int64_t w = jitter(a, backoff);
        pthread_mutex_unlock(&a->mu);
        pause_ms(a, w);
        backoff = backoff * 2 < (int64_t)a->poll_ceiling_s * 1000
                      ? backoff * 2
                      : (int64_t)a->poll_ceiling_s * 1000;
    }
    pthread_mutex_lock(&a->db_mu);
    sqlite3_exec(a->db, "BEGIN", NULL, NULL, NULL);
    meta_set(a->db, "consumer", a->consumer);
    meta_set_int(a->db, "pid", (int64_t)getpid());
    sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL);
    int64_t left = db_count(a->db, "SELECT count(*) FROM leases");
    pthread_mutex_unlock(&a->db_mu);
    pthread_mutex_lock(&a->mu);
    a->outstanding = left;
    pthread_mutex_unlock(&a->mu);
    return ROOST_OK;
}

/* Follows the cursor up to the head (read-only inbox reads); on 410 fetches the state, hands it
 * to on_state and continues from its cursor. Returns the last rc. */
static int cursor_sync(struct roost_agent *a, struct roost_client *c)
{
    pthread_mutex_lock(&a->mu);
    int64_t cursor = a->cursor, head = a->sse_head;
    pthread_mutex_unlock(&a->mu);
    if (head >= 0 && cursor >= head) {
        return ROOST_OK; /* the stream told us there is nothing new to read */
    }
    int rc = ROOST_OK;
    for (int page = 0; page < 64 && !stopping(a); page++) {
        struct roost_events *evs = NULL;
        /* The claims deliver the work; the read only checks that the cursor is still kept
         * (else 410) and learns the head, so one event per read is enough. */
        rc = roost_inbox_read(c, a->agent_id, cursor, 1, 0, &evs);
        note_request(a, rc);
        if (rc == ROOST_EGONE) {
            char *state = NULL;
            int64_t scur = 0;
            int64_t oldest = roost_client_oldest_cursor(c);
            rc = roost_state_get(c, a->agent_id, &state, &scur);
            note_request(a, rc);
            if (rc != ROOST_OK) {
                break;
            }
            agent_log(a,
                      "cursor %" PRId64 " expired (oldest kept %" PRId64
                      "): resynced from state, continuing at cursor %" PRId64,
                      cursor, oldest, scur);
            if (a->on_state != NULL) {
                pthread_mutex_lock(&a->cb_mu);
                a->on_state(state, scur, a->cb_ctx);
                pthread_mutex_unlock(&a->cb_mu);
            }
            roost_free(state);
            cursor = scur;
            continue;
        }
        if (rc == ROOST_ECURSOR) {
            /* Our cursor is beyond the head: roostd's store was restored from an older backup.
             * Read again from the start (a 410 then resyncs from the state). */
            agent_log(a, "cursor %" PRId64 " is beyond the server's head: reading from 0", cursor);
            cursor = 0;
            rc = ROOST_OK;
            continue;
        }
        if (rc != ROOST_OK) {
            roost_events_free(evs);
            break;
        }
        bool more = evs->has_more;
        if (evs->head >= 0) {
            cursor = evs->head > cursor ? evs->head : cursor;
            more = false;
        } else {
            cursor = evs->next_cursor; /* a server that does not tell its head: page along */
        }
        roost_events_free(evs);
        if (!more) {
            break;
        }
    }
    pthread_mutex_lock(&a->mu);
    if (cursor != a->cursor) {
        a->cursor = cursor;
        persist_meta(a);
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

/* Claims up to `free_slots` events (long-polling wait_s) and queues them on slots.
 * *n_out gets the count. */
static int claim_into_slots(struct roost_agent *a, struct roost_client *c, int free_slots,
                            int wait_s, int *n_out)
{
    *n_out = 0;
    struct roost_events *evs = NULL;
    int rc = roost_inbox_claim(c, a->agent_id, free_slots, a->lease_s, wait_s, a->consumer, &evs);
    note_request(a, rc);
    if (rc != ROOST_OK || evs->count == 0) {
        roost_events_free(evs);
        return rc;
    }
    if (leases_store(a, evs) != 0) {
        /* Without a record we could not clean up after a crash: give them back at once. */
        agent_log(a, "cannot write the state file: releasing %zu claimed event(s)", evs->count);
        for (size_t i = 0; i < evs->count; i++) {
            roost_event_release(c, a->agent_id, evs->items[i]->event_id, evs->items[i]->lease_token,
                                0, ROOST_RELEASE_SHUTDOWN, NULL);
        }
        roost_events_free(evs);
        return ROOST_EIO;
    }
    pthread_mutex_lock(&a->mu);
    int64_t now = mono_ms();
    size_t k = 0;
    for (int i = 0; i < a->concurrency && k < evs->count; i++) {
        struct slot *s = &a->slots[i];
        if (s->state != SLOT_FREE) {
            continue;
        }
        s->ev = evs->items[k];
        evs->items[k] = NULL;
        k++;
        s->state = SLOT_QUEUED;
        s->next_extend_ms = now + (int64_t)a->lease_s * 500;
        a->n_busy++;
        a->outstanding++;
    }
    /* Only the run thread fills slots and it claimed no more than were free. */
    for (; k < evs->count; k++) {
        struct roost_event *ev = evs->items[k];
        action_push(a, ACT_RELEASE, ev->event_id, ev->lease_token, 0, ROOST_RELEASE_SHUTDOWN);
        ev->event_id = NULL;
        ev->lease_token = NULL;
        a->outstanding++;
    }
    *n_out = (int)evs->count;
    if (evs->has_more) {
        a->need_sync = true; /* a byte budget may have cut the batch short: claim again */
    }
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mu);
    roost_events_free(evs);
    return ROOST_OK;
}

static void main_loop(struct roost_agent *a, struct roost_client *c)
{
    int64_t poll_delay = 1000;
    int64_t next_poll_at = 0;
    int64_t retry_at = 0; /* after a failure nothing is sent before this (monotonic) */
    int64_t last_sync_at = mono_ms();
    unsigned seen_gen = 0;
    pthread_mutex_lock(&a->mu);
    a->need_sync = true;
    while (!stopping(a) && a->fatal_rc == ROOST_OK) {
        int64_t now = mono_ms();
        int free_slots = a->concurrency - a->n_busy;
        bool sse = a->sse_up;
        if (a->sse_gen != seen_gen) {
            /* The stream (re)connected: the server is back, whatever our backoff says. */
            seen_gen = a->sse_gen;
            retry_at = 0;
            poll_delay = 1000;
        }
        if (sse && now - last_sync_at >= AGENT_STREAM_RESYNC_MS) {
            a->need_sync = true;
        }
        bool sync = a->need_sync;
        bool act = free_slots > 0 && now >= retry_at && (sync || (!sse && now >= next_poll_at));
        if (!act) {
            int64_t wait;
            if (free_slots <= 0) {
                wait = 1000; /* a finishing worker wakes us earlier */
            } else if (now < retry_at) {
                wait = retry_at - now;
            } else if (sse) {
                wait = AGENT_STREAM_RESYNC_MS - (now - last_sync_at);
            } else {
                wait = next_poll_at - now;
            }
            cond_wait_ms(a, wait > 0 ? wait : 1);
            continue;
        }
        a->need_sync = false;
        pthread_mutex_unlock(&a->mu);

        int rc = ROOST_OK;
        if (sync) {
            rc = cursor_sync(a, c);
            last_sync_at = mono_ms();
        }
        int got = 0;
        /* A sync claims at once; otherwise (stream down) the claim is the long poll. */
        int wait_s = sync ? 0 : a->long_poll_s;
        int64_t t0 = mono_ms();
        if (rc == ROOST_OK || rc == ROOST_EGONE || !transient_rc(rc)) {
            rc = claim_into_slots(a, c, free_slots, wait_s, &got);
        }
        int64_t took = mono_ms() - t0;

        pthread_mutex_lock(&a->mu);
        now = mono_ms();
        if (auth_rc(rc)) {
            a->fatal_rc = rc;
            pthread_mutex_unlock(&a->mu);
            agent_log(a, "the server refuses the token: %s", roost_client_errmsg(c));
            pthread_mutex_lock(&a->mu);
            break;
        }
        if (rc == ROOST_OK) {
            retry_at = 0;
        }
        if (rc == ROOST_EWAIT && wait_s > 0) {
            /* This roostd allows shorter long polls (claim.max_wait_s): ask for less. */
            a->long_poll_s = wait_s / 2;
            next_poll_at = now;
            continue;
        }
        if (rc == ROOST_OK && got > 0) {
            poll_delay = 1000;
            next_poll_at = now;
            if (got >= free_slots) {
                a->need_sync = true; /* there may be more: claim again once a slot frees */
            }
        } else if (rc == ROOST_OK) {
            /* Nothing there. A long poll that really waited can be repeated at once; a quick
             * empty answer (a sync, or a server that does not long-poll) backs off. */
            if (sync || took >= (int64_t)wait_s * 500) {
                next_poll_at = now; /* (while streaming, the next pull waits for a ping) */
            } else {
                next_poll_at = now + jitter(a, poll_delay);
                poll_delay = poll_delay * 2 < (int64_t)a->poll_ceiling_s * 1000
                                 ? poll_delay * 2
                                 : (int64_t)a->poll_ceiling_s * 1000;
            }
        } else {
            /* Unreachable or failing: adaptive backoff, reset by any success. */
            next_poll_at = retry_at = now + jitter(a, poll_delay);
            int64_t ra = roost_client_retry_after_s(c);
            if ((rc == ROOST_ERATELIMIT || rc == ROOST_EUNAVAILABLE || rc == ROOST_ESHUTDOWN) &&
                ra > 0 && ra <= 3600 && now + ra * 1000 > retry_at) {
                next_poll_at = retry_at = now + ra * 1000; /* the server said when */
            }
            poll_delay = poll_delay * 2 < (int64_t)a->poll_ceiling_s * 1000
                             ? poll_delay * 2
                             : (int64_t)a->poll_ceiling_s * 1000;
            if (sync) {
                a->need_sync = true; /* retry the sync when the poll timer fires */
            }
            if (rc == ROOST_EIO) {
                a->fatal_rc = ROOST_EIO;
            }
        }
    }
    pthread_mutex_unlock(&a->mu);
}

int roost_agent_run(struct roost_agent *a)
{
    if (a == NULL) {
        return ROOST_EINVAL;
    }
    pthread_mutex_lock(&a->mu);
    if (a->run_called) {
        pthread_mutex_unlock(&a->mu);
        return ROOST_EINVAL;
    }
    a->run_called = true;
    pthread_mutex_unlock(&a->mu);

    struct roost_client *c = NULL;
    int rc = agent_client_new(a, &c);
    if (rc != ROOST_OK) {
        return rc;
    }
    roost_client_set_timeouts(c, 10000, 30000);
    c->abort_flag = &a->stop;

    pthread_t watcher, keeper, sse, *workers = calloc((size_t)a->concurrency, sizeof *workers);
    int n_workers = 0;
    bool have_watcher = false, have_keeper = false, have_sse = false;
    if (workers == NULL) {
        roost_client_free(c);
        return ROOST_ENOMEM;
    }
    have_watcher = pthread_create(&watcher, NULL, watcher_main, a) == 0;
    if (!have_watcher) {
        rc = ROOST_EINTERNAL;
        goto out;
    }
    rc = recover(a, c);
    if (rc != ROOST_OK || stopping(a)) {
        goto out;
    }
    have_keeper = pthread_create(&keeper, NULL, keeper_main, a) == 0;
    for (; have_keeper && n_workers < a->concurrency; n_workers++) {
        if (pthread_create(&workers[n_workers], NULL, worker_main, a) != 0) {
            break;
        }
    }
    have_sse =
        have_keeper && n_workers == a->concurrency && pthread_create(&sse, NULL, sse_main, a) == 0;
    if (!have_sse) {
        rc = ROOST_EINTERNAL;
        goto out;
    }
    main_loop(a, c);
    pthread_mutex_lock(&a->mu);
    rc = a->fatal_rc;
    pthread_mutex_unlock(&a->mu);
out:
    /* Shutdown: give back what never started, let running handlers finish, flush the keeper. */
    roost_agent_stop(a);
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < a->concurrency; i++) {
        if (a->slots[i].state == SLOT_QUEUED) {
            slot_release_unstarted(a, &a->slots[i]);
        }
    }
    a->workers_exit = true;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i < n_workers; i++) {
        pthread_join(workers[i], NULL);
    }
    pthread_mutex_lock(&a->mu);
    a->keeper_exit = true;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mu);
    if (have_keeper) {
        pthread_join(keeper, NULL);
    }
    if (have_sse) {
        pthread_join(sse, NULL);
    }
    if (have_watcher) {
        pthread_join(watcher, NULL);
    }
    /* Last: whatever this consumer still holds (an ack the keeper gave up on, say). */
    c->abort_flag = NULL;
    roost_client_set_timeouts(c, 5000, 10000);
    int64_t released = 0;
    if (!auth_rc(rc) &&
        roost_inbox_release_all(c, a->agent_id, a->consumer, &released) == ROOST_OK) {
        if (released > 0) {
            agent_log(a, "shutdown: released %" PRId64 " lease(s)", released);
        }
        pthread_mutex_lock(&a->db_mu);
        db_exec(a->db, "DELETE FROM leases", NULL, NULL, 0);
        pthread_mutex_unlock(&a->db_mu);
    }
    pthread_mutex_lock(&a->mu);
    a->conn = ROOST_AGENT_CONN_STOPPED;
    a->outstanding = 0;
    persist_meta(a);
    pthread_mutex_unlock(&a->mu);
    conn_notify(a);
    free(workers);
    roost_client_free(c);
    return rc;
}
