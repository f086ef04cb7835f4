/* SPDX-License-Identifier: MIT */
/* The SQLite backend of the store (sqlite://PATH): one connection per struct store, WAL, every
 * statement prepared once and cached on the backend struct (the model is mosquitto's
 * persist-sqlite plugin). agents.next_seq holds the next sequence number to assign, so an
 * agent's head is next_seq - 1 (0 for an agent without a row). */
#include "store/store_sqlite.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "store/migrations.h"

/* The column list every event-returning statement selects, in row_to_event() order. */
#define EVCOLS                                                                                     \
    "event_id, agent_id, seq, status, priority, correlation_id, payload, created_at, "             \
    "available_at, expires_at, lease_token, consumer, claimed_at, claim_expires_at, attempts, "    \
    "timeouts, nacks, last_error, completed_at"

/* Pages of agents the retention pass loads at a time. */
#define RETENTION_AGENT_PAGE 64

enum stmt_id {
    S_BEGIN,
    S_BEGIN_READ,
    S_COMMIT,
    S_ROLLBACK,
    S_SAVEPOINT,
    S_SAVEPOINT_RELEASE,
    S_SAVEPOINT_ROLLBACK,
    S_RET_SAVEPOINT,
    S_RET_RELEASE,
    S_RET_ROLLBACK,
    S_TENANT_ENSURE,
    S_IDEM_FIND,
    S_SEQ_ALLOC,
    S_INBOX_INSERT,
    S_STATE_PATCH,
    S_AGENT_HEAD,
    S_READ,
    S_CLAIM_SELECT,
    S_CLAIM_UPDATE,
    S_EVENT_FIND,
    S_ACK,
    S_RELEASE_UPDATE,
    S_EXTEND_UPDATE,
    S_RELEASE_ALL,
    S_RELEASE_ALL_ANY,
    S_STATE_GET,
    S_SCAV_SELECT,
    S_SCAV_UPDATE,
    S_PROMOTE,
    S_EXPIRE,
    S_RET_AGENTS,
    S_RET_ROWS,
    S_EVENT_BY_SEQ,
    S_RET_DELETE,
    S_RET_PURGED,
    S_QLIST_ALL,
    S_QLIST_AGENT,
    S_REQ_FIND,
    S_REQ_UPDATE,
    S_AGENTS_LIST,
    S_AGENTS_BY_DEPTH,
    S_AGENTS_BY_AGE,
    S_SEEN,
    S_EVENT_GET,
    S_PURGE_ONE,
    S_PURGE_AGENT,
    S_PURGE_ALL,
    S_MET_PENDING,
    S_MET_SCHEDULED,
    S_MET_CLAIMED,
    S_MET_QUARANTINED,
    S_MET_AGENTS,
    S_KEY_ADD,
    S_KEY_GET,
    S_KEY_LIST,
    S_KEY_REVOKE,
    S_NONCE_CLAIM,
    S_NONCE_PRUNE,
    S_COUNT
};

static const char *const stmt_sql[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_BEGIN_READ] = "BEGIN DEFERRED",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    /* Requests inside one group-commit transaction run one after another, so one name is enough. */
    [S_SAVEPOINT] = "SAVEPOINT roost_req",
    [S_SAVEPOINT_RELEASE] = "RELEASE roost_req",
    [S_SAVEPOINT_ROLLBACK] = "ROLLBACK TO roost_req",
    [S_RET_SAVEPOINT] = "SAVEPOINT roost_retention",
    [S_RET_RELEASE] = "RELEASE roost_retention",
    [S_RET_ROLLBACK] = "ROLLBACK TO roost_retention",
    [S_TENANT_ENSURE] = "INSERT OR IGNORE INTO tenants (tenant_id, created_at) VALUES (?1, ?2)",
    [S_IDEM_FIND] = "SELECT event_id, seq FROM inbox"
                    " WHERE tenant_id = ?1 AND agent_id = ?2 AND idempotency_key = ?3",
    /* Allocates the agent's next seq under the write lock of this transaction (DESIGN §4.2). */
    [S_SEQ_ALLOC] = "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
                    " VALUES (?1, ?2, 2, ?3, ?3)"
                    " ON CONFLICT (tenant_id, agent_id) DO UPDATE"
                    " SET next_seq = next_seq + 1, updated_at = excluded.updated_at"
                    " RETURNING next_seq - 1",
    [S_INBOX_INSERT] = "INSERT INTO inbox (tenant_id, agent_id, seq, event_id, status, priority,"
                       " correlation_id, idempotency_key, payload, created_at, available_at,"
                       " expires_at)"
                       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    [S_STATE_PATCH] = "UPDATE agents SET state = json_patch(state, ?3), state_cursor = ?4,"
                      " updated_at = ?5 WHERE tenant_id = ?1 AND agent_id = ?2",
    [S_AGENT_HEAD] = "SELECT next_seq - 1, purged_through_seq FROM agents"
                     " WHERE tenant_id = ?1 AND agent_id = ?2",
    [S_READ] = "SELECT " EVCOLS " FROM inbox"
               " WHERE tenant_id = ?1 AND agent_id = ?2 AND seq > ?3 ORDER BY seq LIMIT ?4",
    /* An exact-match walk of inbox_claim in claim order (no sort step). The payload is read only
     * for its size (the byte budget); the walk stops at the first row over the budget. */
    [S_CLAIM_SELECT] = "SELECT seq, payload FROM inbox"
                       " WHERE tenant_id = ?1 AND agent_id = ?2 AND status = 1"
                       " AND (expires_at IS NULL OR expires_at > ?3)"
                       " ORDER BY priority DESC, seq ASC LIMIT ?4",
    [S_CLAIM_UPDATE] = "UPDATE inbox SET status = 2, lease_token = ?4, consumer = ?5,"
                       " claimed_at = ?6, claim_expires_at = ?7, attempts = attempts + 1"
                       " WHERE tenant_id = ?1 AND agent_id = ?2 AND seq = ?3 AND status = 1"
                       " RETURNING " EVCOLS,
    [S_EVENT_FIND] = "SELECT seq, status, lease_token, attempts, claimed_at, claim_expires_at"
                     " FROM inbox WHERE event_id = ?3 AND tenant_id = ?1 AND agent_id = ?2",
    /* The lease token is kept on completion so a repeated ack can be recognised. */
    [S_ACK] = "UPDATE inbox SET status = 3, payload = NULL, completed_at = ?5"
              " WHERE event_id = ?3 AND tenant_id = ?1 AND agent_id = ?2 AND status = 2"
              " AND lease_token = ?4 RETURNING available_at",
    [S_RELEASE_UPDATE] = "UPDATE inbox SET status = ?5, available_at = ?6, nacks = nacks + ?7,"
                         " last_error = coalesce(?8, last_error), lease_token = NULL,"
                         " claim_expires_at = NULL"
                         " WHERE tenant_id = ?1 AND agent_id = ?2 AND seq = ?3 AND status = 2"
                         " AND lease_token = ?4",
    [S_EXTEND_UPDATE] = "UPDATE inbox SET claim_expires_at = ?5"
                        " WHERE tenant_id = ?1 AND agent_id = ?2 AND seq = ?3 AND status = 2"
                        " AND lease_token = ?4",
    [S_RELEASE_ALL] = "UPDATE inbox SET status = 1, lease_token = NULL, claim_expires_at = NULL"
                      " WHERE tenant_id = ?1 AND agent_id = ?2 AND status = 2 AND consumer = ?3",
    [S_RELEASE_ALL_ANY] = "UPDATE inbox SET status = 1, lease_token = NULL, claim_expires_at = NULL"
                          " WHERE tenant_id = ?1 AND agent_id = ?2 AND status = 2",
    /* The state document is the same for every cursor in [state_cursor, head]; the lowest of
     * those a reader can continue from without 410 is max(state_cursor, purged_through_seq). */
    [S_STATE_GET] = "SELECT state, max(state_cursor, purged_through_seq) FROM agents"
                    " WHERE tenant_id = ?1 AND agent_id = ?2",
    [S_SCAV_SELECT] = "SELECT tenant_id, agent_id, seq, lease_token FROM inbox"
                      " WHERE status = 2 AND claim_expires_at <= ?1"
                      " ORDER BY claim_expires_at LIMIT ?2",
    /* Conditional on the lease read: an ack or release that won the race is never overwritten. */
    [S_SCAV_UPDATE] = "UPDATE inbox"
                      " SET status = CASE WHEN ?5 > 0 AND attempts >= ?5 THEN 4 ELSE 1 END,"
                      " timeouts = timeouts + 1, lease_token = NULL, claim_expires_at = NULL"
                      " WHERE tenant_id = ?1 AND agent_id = ?2 AND seq = ?3 AND status = 2"
                      " AND lease_token = ?4 AND claim_expires_at <= ?6"
                      " RETURNING status",
    [S_PROMOTE] = "UPDATE inbox SET status = 1 WHERE rowid IN (SELECT rowid FROM inbox"
                  " WHERE status = 0 AND available_at <= ?1 ORDER BY available_at LIMIT ?2)"
                  " RETURNING tenant_id, agent_id",
    [S_EXPIRE] = "UPDATE inbox SET status = 5, completed_at = ?1 WHERE rowid IN (SELECT rowid"
                 " FROM inbox WHERE status IN (0, 1) AND expires_at <= ?1 LIMIT ?2)",
    [S_RET_AGENTS] = "SELECT tenant_id, agent_id FROM agents WHERE (tenant_id, agent_id) > (?1, ?2)"
                     " ORDER BY tenant_id, agent_id LIMIT ?3",
    [S_RET_ROWS] = "SELECT seq, status, completed_at, created_at FROM inbox"
                   " WHERE tenant_id = ?1 AND agent_id = ?2 ORDER BY seq LIMIT ?3",
    [S_EVENT_BY_SEQ] = "SELECT " EVCOLS " FROM inbox"
                       " WHERE tenant_id = ?1 AND agent_id = ?2 AND seq = ?3",
    [S_RET_DELETE] = "DELETE FROM inbox WHERE tenant_id = ?1 AND agent_id = ?2 AND seq <= ?3",
    [S_RET_PURGED] = "UPDATE agents SET purged_through_seq = max(purged_through_seq, ?3)"
                     " WHERE tenant_id = ?1 AND agent_id = ?2",
    [S_QLIST_ALL] = "SELECT " EVCOLS " FROM inbox"
                    " WHERE tenant_id = ?1 AND status = 4 AND (agent_id, seq) > (?2, ?3)"
                    " ORDER BY agent_id, seq LIMIT ?4",
    /* One agent: the (agent_id, seq) position reduces to a seq bound, so the walk needs no sort. */
    [S_QLIST_AGENT] = "SELECT " EVCOLS " FROM inbox"
                      " WHERE tenant_id = ?1 AND status = 4 AND agent_id = ?5"
                      " AND seq > CASE WHEN ?2 < ?5 THEN -1 WHEN ?2 = ?5 THEN ?3"
                      " ELSE 9223372036854775807 END ORDER BY seq LIMIT ?4",
    [S_REQ_FIND] = "SELECT agent_id, status FROM inbox WHERE event_id = ?2 AND tenant_id = ?1",
    /* A requeued event whose TTL has passed would expire again at once: its TTL is dropped. */
    [S_REQ_UPDATE] = "UPDATE inbox SET status = 1, attempts = 0, lease_token = NULL,"
                     " claim_expires_at = NULL, completed_at = NULL, available_at = ?3,"
                     " expires_at = CASE WHEN expires_at <= ?3 THEN NULL ELSE expires_at END"
                     " WHERE event_id = ?2 AND tenant_id = ?1 AND status IN (4, 5)",
#define AGENT_STATS_COLS                                                                           \
    "a.agent_id, a.next_seq - 1, a.purged_through_seq,"                                            \
    " (SELECT count(*) FROM inbox i WHERE i.tenant_id = a.tenant_id"                               \
    "  AND i.agent_id = a.agent_id AND i.status = 1) AS pending,"                                  \
    " (SELECT count(*) FROM inbox i WHERE i.tenant_id = a.tenant_id"                               \
    "  AND i.agent_id = a.agent_id AND i.status = 0),"                                             \
    " (SELECT count(*) FROM inbox i WHERE i.tenant_id = a.tenant_id"                               \
    "  AND i.agent_id = a.agent_id AND i.status = 2),"                                             \
    " (SELECT count(*) FROM inbox i WHERE i.tenant_id = a.tenant_id"                               \
    "  AND i.agent_id = a.agent_id AND i.status = 4),"                                             \
    " (SELECT min(available_at) FROM inbox i WHERE i.tenant_id = a.tenant_id"                      \
    "  AND i.agent_id = a.agent_id AND i.status = 1) AS oldest,"                                   \
    " coalesce(a.last_seen_at, 0)"
    [S_AGENTS_LIST] = "SELECT " AGENT_STATS_COLS " FROM agents a"
                      " WHERE a.tenant_id = ?1 AND a.agent_id > ?2 ORDER BY a.agent_id LIMIT ?3",
    [S_AGENTS_BY_DEPTH] = "SELECT " AGENT_STATS_COLS " FROM agents a WHERE a.tenant_id = ?1"
                          " ORDER BY pending DESC, a.agent_id LIMIT ?3 OFFSET ?2",
    [S_AGENTS_BY_AGE] = "SELECT " AGENT_STATS_COLS " FROM agents a WHERE a.tenant_id = ?1"
                        " ORDER BY oldest IS NULL, oldest, a.agent_id LIMIT ?3 OFFSET ?2",
    /* At most one write a minute per agent: the condition makes the common case a no-op. */
    [S_SEEN] = "UPDATE agents SET last_seen_at = ?3 WHERE tenant_id = ?1 AND agent_id = ?2"
               " AND (last_seen_at IS NULL OR last_seen_at <= ?3 - 60000)",
    [S_EVENT_GET] = "SELECT " EVCOLS " FROM inbox WHERE event_id = ?2 AND tenant_id = ?1",
    [S_PURGE_ONE] = "DELETE FROM inbox WHERE event_id = ?2 AND tenant_id = ?1 AND status = 4",
    [S_PURGE_AGENT] = "DELETE FROM inbox WHERE rowid IN (SELECT rowid FROM inbox"
                      " WHERE tenant_id = ?1 AND agent_id = ?2 AND status = 4 LIMIT ?3)",
    [S_PURGE_ALL] = "DELETE FROM inbox WHERE rowid IN (SELECT rowid FROM inbox"
                    " WHERE tenant_id = ?1 AND status = 4 LIMIT ?3)",
    /* Metrics: one walk per status over that status's partial index (0002 for pending), so the
     * completed history is never read; INDEXED BY because the planner would rather walk
     * inbox_claim, every row, to get tenant order for free. */
    [S_MET_PENDING] = "SELECT tenant_id, count(*), min(available_at) FROM inbox"
                      " INDEXED BY inbox_pending WHERE status = 1 GROUP BY tenant_id",
    [S_MET_SCHEDULED] = "SELECT tenant_id, count(*), 0 FROM inbox INDEXED BY inbox_due"
                        " WHERE status = 0 GROUP BY tenant_id",
    [S_MET_CLAIMED] = "SELECT tenant_id, count(*), min(claimed_at) FROM inbox"
                      " INDEXED BY inbox_scavenge WHERE status = 2 GROUP BY tenant_id",
    [S_MET_QUARANTINED] = "SELECT tenant_id, count(*), 0 FROM inbox INDEXED BY inbox_quarantine"
                          " WHERE status = 4 GROUP BY tenant_id",
    [S_MET_AGENTS] = "SELECT tenant_id, agent_id, count(*) AS n FROM inbox INDEXED BY inbox_pending"
                     " WHERE status = 1 GROUP BY tenant_id, agent_id"
                     " ORDER BY n DESC, tenant_id, agent_id LIMIT ?1",
    [S_KEY_ADD] = "INSERT INTO keys (tenant_id, key_id, agent_id, alg, material, created_at)"
                  " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (tenant_id, key_id) DO NOTHING",
    [S_KEY_GET] = "SELECT key_id, agent_id, alg, created_at, revoked_at, material FROM keys"
                  " WHERE tenant_id = ?1 AND key_id = ?2",
    [S_KEY_LIST] = "SELECT key_id, agent_id, alg, created_at, revoked_at FROM keys"
                   " WHERE tenant_id = ?1 AND key_id > ?2 ORDER BY key_id LIMIT ?3",
    [S_KEY_REVOKE] = "UPDATE keys SET revoked_at = coalesce(revoked_at, ?3)"
                     " WHERE tenant_id = ?1 AND key_id = ?2",
    /* A row still inside its window makes the upsert change nothing: that is the replay. */
    [S_NONCE_CLAIM] = "INSERT INTO nonces (tenant_id, key_id, nonce, expires_at)"
                      " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (tenant_id, key_id, nonce)"
                      " DO UPDATE SET expires_at = excluded.expires_at"
                      " WHERE nonces.expires_at <= ?5",
    [S_NONCE_PRUNE] = "DELETE FROM nonces WHERE (tenant_id, key_id, nonce) IN"
                      " (SELECT tenant_id, key_id, nonce FROM nonces WHERE expires_at <= ?1"
                      " LIMIT ?2)",
};

struct sqlite_store {
    struct store base; /* first: struct store * and struct sqlite_store * convert */
    sqlite3 *db;
    sqlite3_stmt *stmts[S_COUNT];
    char err[512];
};

static _Thread_local char open_err[512];

const char *store_sqlite_open_error(void)
{
    return open_err;
}

static struct sqlite_store *backend(struct store *st)
{
    return (struct sqlite_store *)st;
}

/* Records the failure detail and maps the driver code: busy/locked → ROOST_ERETRY (the caller
 * retries the transaction), out of memory → ROOST_ENOMEM, anything else → ROOST_ESTORE. */
static int fail(struct sqlite_store *b, int src, const char *what)
{
    snprintf(b->err, sizeof b->err, "%s: %s (sqlite %d)", what, sqlite3_errmsg(b->db), src);
    switch (src & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return ROOST_ERETRY;
    case SQLITE_NOMEM:
        return ROOST_ENOMEM;
    default:
        return ROOST_ESTORE;
    }
}

/* Returns the cached statement `id`, reset and with its bindings cleared. */
static int prep(struct sqlite_store *b, enum stmt_id id, sqlite3_stmt **out)
{
    *out = NULL;
    if (b->stmts[id] == NULL) {
        int rc = sqlite3_prepare_v3(b->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                    &b->stmts[id], NULL);
        if (rc != SQLITE_OK) {
            return fail(b, rc, stmt_sql[id]);
        }
    } else {
        sqlite3_reset(b->stmts[id]);
        sqlite3_clear_bindings(b->stmts[id]);
    }
    *out = b->stmts[id];
    return ROOST_OK;
}

/* Every operation ends here: a statement left mid-step would pin a WAL snapshot (and a stale view
 * for the next autocommit read on this connection). */
static void reset_all(struct sqlite_store *b)
{
    for (int i = 0; i < S_COUNT; i++) {
        if (b->stmts[i] != NULL) {
            sqlite3_reset(b->stmts[i]);
        }
    }
}

/* 1 = a row, 0 = done, < 0 = a roost error. */
static int step(struct sqlite_store *b, sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        return 1;
    }
    if (rc == SQLITE_DONE) {
        return 0;
    }
    return fail(b, rc, sqlite3_sql(s));
}

/* Runs a statement that returns no rows (or whose rows are ignored). */
static int run(struct sqlite_store *b, sqlite3_stmt *s)
{
    int rc;
    while ((rc = step(b, s)) == 1) {
    }
    return rc;
}

static int exec_id(struct sqlite_store *b, enum stmt_id id)
{
    sqlite3_stmt *s;
    int rc = prep(b, id, &s);
    if (rc == ROOST_OK) {
        rc = run(b, s);
        sqlite3_reset(s);
    }
    return rc;
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v == NULL) {
        sqlite3_bind_null(s, i);
    } else {
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    }
}

static void bind_i64_or_null(sqlite3_stmt *s, int i, int64_t v)
{
    if (v == 0) {
        sqlite3_bind_null(s, i);
    } else {
        sqlite3_bind_int64(s, i, v);
    }
}

/* SQLite takes int limits; callers bound theirs far below this. */
static int64_t sql_limit(size_t n)
{
    return n > (size_t)INT32_MAX ? INT32_MAX : (int64_t)n;
}

/* Copies a text column into a fixed array, truncating; a NULL column gives "". */
static void col_copy(sqlite3_stmt *s, int i, char *dst, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(dst, cap, "%s", t != NULL ? (const char *)t : "");
}

/* Duplicates a text column onto the heap (NULL for a NULL column). */
static int col_dup(sqlite3_stmt *s, int i, char **out)
{
    *out = NULL;
    if (sqlite3_column_type(s, i) == SQLITE_NULL) {
        return ROOST_OK;
    }
    const unsigned char *t = sqlite3_column_text(s, i);
    int n = sqlite3_column_bytes(s, i);
    if (t == NULL || n < 0) {
        return ROOST_ENOMEM;
    }
    char *p = malloc((size_t)n + 1);
    if (p == NULL) {
        return ROOST_ENOMEM;
    }
    memcpy(p, t, (size_t)n);
    p[n] = '\0';
    *out = p;
    return ROOST_OK;
}

static enum store_status col_status(sqlite3_stmt *s, int i)
{
    int v = sqlite3_column_int(s, i);
    return v >= STORE_SCHEDULED && v <= STORE_EXPIRED ? (enum store_status)v : STORE_QUARANTINED;
}

/* Fills ev from a row selected with EVCOLS starting at column 0. */
static int row_to_event(sqlite3_stmt *s, struct store_event *ev)
{
    col_copy(s, 0, ev->event_id, sizeof ev->event_id);
    col_copy(s, 1, ev->agent_id, sizeof ev->agent_id);
    ev->seq = sqlite3_column_int64(s, 2);
    ev->status = col_status(s, 3);
    ev->priority = sqlite3_column_int(s, 4);
    ev->created_at_ms = sqlite3_column_int64(s, 7);
    ev->available_at_ms = sqlite3_column_int64(s, 8);
    ev->expires_at_ms = sqlite3_column_int64(s, 9);
    col_copy(s, 10, ev->lease_token, sizeof ev->lease_token);
    col_copy(s, 11, ev->consumer, sizeof ev->consumer);
    ev->claimed_at_ms = sqlite3_column_int64(s, 12);
    ev->claim_expires_at_ms = sqlite3_column_int64(s, 13);
    ev->attempts = sqlite3_column_int(s, 14);
    ev->timeouts = sqlite3_column_int(s, 15);
    ev->nacks = sqlite3_column_int(s, 16);
    ev->completed_at_ms = sqlite3_column_int64(s, 18);
    if (col_dup(s, 5, &ev->correlation_id) != ROOST_OK || col_dup(s, 6, &ev->payload) != ROOST_OK ||
        col_dup(s, 17, &ev->last_error) != ROOST_OK) {
        store_event_cleanup(ev);
        return ROOST_ENOMEM;
    }
    return ROOST_OK;
}

/* Appends the current row to list. */
static int push_row(sqlite3_stmt *s, struct store_events *list)
{
    struct store_event *ev = store_events_push(list);
    if (ev == NULL) {
        return ROOST_ENOMEM;
    }
    if (row_to_event(s, ev) != ROOST_OK) {
        list->len--;
        return ROOST_ENOMEM;
    }
    return ROOST_OK;
}

/* The agent's head and retention watermark (both 0 for an agent without a row). */
static int agent_head(struct sqlite_store *b, const char *tenant_id, const char *agent_id,
                      int64_t *head, int64_t *purged)
{
    sqlite3_stmt *s;
    int rc = prep(b, S_AGENT_HEAD, &s);
    if (rc != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    rc = step(b, s);
    if (rc < 0) {
        return rc;
    }
    *head = rc == 1 ? sqlite3_column_int64(s, 0) : 0;
    if (purged != NULL) {
        *purged = rc == 1 ? sqlite3_column_int64(s, 1) : 0;
    }
    sqlite3_reset(s);
    return ROOST_OK;
}

static int touch(struct sqlite_store *b, const char *tenant_id, const char *agent_id,
                 struct store_touches *touches)
{
    int64_t head;
    if (touches == NULL) {
        return ROOST_OK;
    }
    int rc = agent_head(b, tenant_id, agent_id, &head, NULL);
    return rc != ROOST_OK ? rc : store_touches_add(touches, tenant_id, agent_id, head);
}

/* ---- lifecycle ---- */

static int exec_pragma(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        snprintf(open_err, sizeof open_err, "%s: %s", sql, msg != NULL ? msg : sqlite3_errstr(rc));
    }
    sqlite3_free(msg);
    return rc;
}

/* Process-wide settings, before SQLite initialises: no global memory statistics (every malloc
 * would take a process-wide mutex; roostd reads none of them). */
static void sqlite_configure(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

static int sq_open(const char *url, const struct store_options *opt, struct store **out)
{
    static const char prefix[] = "sqlite://";
    static pthread_once_t configured = PTHREAD_ONCE_INIT;
    pthread_once(&configured, sqlite_configure);
    *out = NULL;
    open_err[0] = '\0';
    if (strncmp(url, prefix, sizeof prefix - 1) != 0 || url[sizeof prefix - 1] == '\0') {
        snprintf(open_err, sizeof open_err, "expected sqlite://PATH");
        return ROOST_EINVAL;
    }
    const char *path = url + sizeof prefix - 1;
    struct sqlite_store *b = calloc(1, sizeof *b);
    if (b == NULL) {
        return ROOST_ENOMEM;
    }
    b->base.ops = &store_sqlite_ops;
    int rc = sqlite3_open_v2(
        path, &b->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(open_err, sizeof open_err, "%s: %s", path,
                 b->db != NULL ? sqlite3_errmsg(b->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(b->db, 1);
    sqlite3_busy_timeout(b->db, opt->busy_timeout_ms > 0 ? opt->busy_timeout_ms : 5000);
    if ((rc = exec_pragma(b->db, "PRAGMA journal_mode=WAL")) != SQLITE_OK ||
        (rc = exec_pragma(b->db, opt->synchronous_full ? "PRAGMA synchronous=FULL"
                                                       : "PRAGMA synchronous=NORMAL")) !=
            SQLITE_OK ||
        (rc = exec_pragma(b->db, "PRAGMA foreign_keys=OFF")) != SQLITE_OK) {
        goto fail;
    }
    snprintf(b->err, sizeof b->err, "no error");
    *out = &b->base;
    return ROOST_OK;
fail:
    sqlite3_close(b->db);
    free(b);
    return (rc & 0xff) == SQLITE_BUSY ? ROOST_ERETRY : ROOST_ESTORE;
}

static void sq_close(struct store *st)
{
    struct sqlite_store *b = backend(st);
    if (b == NULL) {
        return;
    }
    for (int i = 0; i < S_COUNT; i++) {
        sqlite3_finalize(b->stmts[i]);
    }
    sqlite3_close(b->db);
    free(b);
}

static const char *sq_errmsg(struct store *st)
{
    return backend(st)->err;
}

static bool sq_ping(struct store *st)
{
    return sqlite3_exec(backend(st)->db, "SELECT 1", NULL, NULL, NULL) == SQLITE_OK;
}

static int exec_sql(struct sqlite_store *b, const char *sql, const char *what)
{
    char *msg = NULL;
    int rc = sqlite3_exec(b->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        int out = fail(b, rc, what);
        if (msg != NULL) {
            snprintf(b->err, sizeof b->err, "%s: %s (sqlite %d)", what, msg, rc);
        }
        sqlite3_free(msg);
        return out;
    }
    sqlite3_free(msg);
    return ROOST_OK;
}

/* Applies the embedded migrations not yet recorded, all in one IMMEDIATE transaction: a second
 * process waits on the write lock and then finds them applied. */
static int sq_migrate(struct store *st)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *check = NULL, *record = NULL;
    int rc = exec_sql(b, "BEGIN IMMEDIATE", "migrate: begin");
    if (rc != ROOST_OK) {
        return rc;
    }
    rc = exec_sql(b,
                  "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                  " name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT",
                  "migrate: schema_migrations");
    if (rc != ROOST_OK) {
        goto out;
    }
    int src = sqlite3_prepare_v2(b->db, "SELECT 1 FROM schema_migrations WHERE version = ?1", -1,
                                 &check, NULL);
    if (src == SQLITE_OK) {
        src = sqlite3_prepare_v2(b->db,
                                 "INSERT INTO schema_migrations (version, name, applied_at)"
                                 " VALUES (?1, ?2, CAST(strftime('%s', 'now') AS INTEGER) * 1000)",
                                 -1, &record, NULL);
    }
    if (src != SQLITE_OK) {
        rc = fail(b, src, "migrate: prepare");
        goto out;
    }
    for (size_t i = 0; i < store_migrations_sqlite_count; i++) {
        const struct store_migration *m = &store_migrations_sqlite[i];
        sqlite3_reset(check);
        sqlite3_bind_int(check, 1, m->version);
        rc = step(b, check);
        if (rc < 0) {
            goto out;
        }
        if (rc == 1) {
            rc = ROOST_OK;
            continue;
        }
        if ((rc = exec_sql(b, m->sql, m->name)) != ROOST_OK) {
            goto out;
        }
        sqlite3_reset(record);
        sqlite3_bind_int(record, 1, m->version);
        bind_text(record, 2, m->name);
        if ((rc = run(b, record)) != ROOST_OK) {
            goto out;
        }
    }
    sqlite3_finalize(check);
    sqlite3_finalize(record);
    return exec_sql(b, "COMMIT", "migrate: commit");
out:
    sqlite3_finalize(check);
    sqlite3_finalize(record);
    if (!sqlite3_get_autocommit(b->db)) {
        sqlite3_exec(b->db, "ROLLBACK", NULL, NULL, NULL);
    }
    return rc;
}

/* ---- transactions ---- */

static int sq_begin(struct store *st)
{
    struct sqlite_store *b = backend(st);
    int rc = exec_id(b, S_BEGIN);
    reset_all(b);
    return rc;
}

static int sq_commit(struct store *st)
{
    struct sqlite_store *b = backend(st);
    reset_all(b);
    return exec_id(b, S_COMMIT);
}

static int sq_rollback(struct store *st)
{
    struct sqlite_store *b = backend(st);
    reset_all(b);
    /* SQLite may already have rolled back on its own (for instance after SQLITE_FULL). */
    if (sqlite3_get_autocommit(b->db)) {
        return ROOST_OK;
    }
    return exec_id(b, S_ROLLBACK);
}

static int sq_savepoint(struct store *st)
{
    return exec_id(backend(st), S_SAVEPOINT);
}

static int sq_savepoint_release(struct store *st)
{
    return exec_id(backend(st), S_SAVEPOINT_RELEASE);
}

static int sq_savepoint_rollback(struct store *st)
{
    struct sqlite_store *b = backend(st);
    reset_all(b);
    int rc = exec_id(b, S_SAVEPOINT_ROLLBACK);
    return rc != ROOST_OK ? rc : exec_id(b, S_SAVEPOINT_RELEASE);
}

/* ---- publish ---- */

/* Writes one (item, recipient) row, or finds it again through the idempotency key. */
static int publish_one(struct sqlite_store *b, const struct store_publish_req *req,
                       const struct store_publish_item *it, const char *agent_id,
                       struct store_published *o, struct store_touches *touches)
{
    sqlite3_stmt *s;
    int rc;
    memset(o, 0, sizeof *o);
    snprintf(o->agent_id, sizeof o->agent_id, "%s", agent_id);
    if (it->idempotency_key != NULL) {
        if ((rc = prep(b, S_IDEM_FIND, &s)) != ROOST_OK) {
            return rc;
        }
        bind_text(s, 1, req->tenant_id);
        bind_text(s, 2, agent_id);
        bind_text(s, 3, it->idempotency_key);
        if ((rc = step(b, s)) < 0) {
            return rc;
        }
        if (rc == 1) {
            col_copy(s, 0, o->event_id, sizeof o->event_id);
            o->seq = sqlite3_column_int64(s, 1);
            o->duplicate = true;
            sqlite3_reset(s);
            return ROOST_OK;
        }
    }

    if ((rc = prep(b, S_SEQ_ALLOC, &s)) != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, req->tenant_id);
    bind_text(s, 2, agent_id);
    sqlite3_bind_int64(s, 3, req->now_ms);
    if ((rc = step(b, s)) < 0) {
        return rc;
    }
    if (rc == 0) {
        snprintf(b->err, sizeof b->err, "publish: sequence allocation returned no row");
        return ROOST_ESTORE;
    }
    o->seq = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (ids_event_id(req->now_ms, o->event_id) != 0) {
        snprintf(b->err, sizeof b->err, "publish: no randomness for the event id");
        return ROOST_EINTERNAL;
    }

    bool scheduled = it->available_at_ms > req->now_ms;
    if ((rc = prep(b, S_INBOX_INSERT, &s)) != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, req->tenant_id);
    bind_text(s, 2, agent_id);
    sqlite3_bind_int64(s, 3, o->seq);
    bind_text(s, 4, o->event_id);
    sqlite3_bind_int(s, 5, scheduled ? STORE_SCHEDULED : STORE_PENDING);
    sqlite3_bind_int(s, 6, it->priority);
    bind_text(s, 7, it->correlation_id);
    bind_text(s, 8, it->idempotency_key);
    bind_text(s, 9, it->payload != NULL ? it->payload : "{}");
    sqlite3_bind_int64(s, 10, req->now_ms);
    sqlite3_bind_int64(s, 11, scheduled ? it->available_at_ms : req->now_ms);
    bind_i64_or_null(s, 12, it->expires_at_ms);
    if ((rc = run(b, s)) != ROOST_OK) {
        return rc;
    }

    if (it->state_patch != NULL) {
        if ((rc = prep(b, S_STATE_PATCH, &s)) != ROOST_OK) {
            return rc;
        }
        bind_text(s, 1, req->tenant_id);
        bind_text(s, 2, agent_id);
        bind_text(s, 3, it->state_patch);
        sqlite3_bind_int64(s, 4, o->seq);
        sqlite3_bind_int64(s, 5, req->now_ms);
        if ((rc = run(b, s)) != ROOST_OK) {
            return rc;
        }
    }
    /* Every new row moves the head (cursor readers and long-polls care even about delayed rows). */
    return touches != NULL ? store_touches_add(touches, req->tenant_id, agent_id, o->seq)
                           : ROOST_OK;
}

/* Recipients of an item are handled in sorted agent_id order (the lock order of DESIGN §4.2; on
 * SQLite the IMMEDIATE transaction already holds the one write lock). A recipient listed twice
 * gets one row; both out entries describe it. */
static int sq_publish(struct store *st, const struct store_publish_req *req,
                      struct store_published *out, struct store_touches *touches)
{
    struct sqlite_store *b = backend(st);
    struct store_recipient *order = NULL;
    size_t order_cap = 0, base = 0;
    sqlite3_stmt *s;
    int rc = prep(b, S_TENANT_ENSURE, &s);
    if (rc != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, req->tenant_id);
    sqlite3_bind_int64(s, 2, req->now_ms);
    if ((rc = run(b, s)) != ROOST_OK) {
        goto out;
    }
    for (size_t i = 0; i < req->n_items; i++) {
        const struct store_publish_item *it = &req->items[i];
        size_t n = it->n_recipients;
        if ((rc = store_recipients_sort(it, &order, &order_cap)) != ROOST_OK) {
            goto out;
        }
        for (size_t k = 0; k < n; k++) {
            struct store_published *o = &out[base + order[k].idx];
            if (k > 0 && strcmp(order[k - 1].agent_id, order[k].agent_id) == 0) {
                *o = out[base + order[k - 1].idx];
                continue;
            }
            rc = publish_one(b, req, it, order[k].agent_id, o, touches);
            if (rc != ROOST_OK) {
                goto out;
            }
        }
        base += n;
    }
out:
    free(order);
    reset_all(b);
    return rc;
}

/* ---- reads ---- */

/* Opens a read transaction when none is open, so several statements share one snapshot. */
static int read_begin(struct sqlite_store *b, bool *opened)
{
    *opened = false;
    if (!sqlite3_get_autocommit(b->db)) {
        return ROOST_OK;
    }
    int rc = exec_id(b, S_BEGIN_READ);
    *opened = rc == ROOST_OK;
    return rc;
}

static int read_end(struct sqlite_store *b, bool opened, int rc)
{
    reset_all(b);
    if (opened) {
        int rc2 = exec_id(b, S_COMMIT);
        if (rc2 != ROOST_OK && !sqlite3_get_autocommit(b->db)) {
            exec_id(b, S_ROLLBACK);
        }
        if (rc == ROOST_OK) {
            rc = rc2;
        }
    }
    return rc;
}

static int sq_inbox_read(struct store *st, const char *tenant_id, const char *agent_id,
                         int64_t after_cursor, size_t limit, size_t max_bytes,
                         struct store_inbox_page *page)
{
    struct sqlite_store *b = backend(st);
    bool opened;
    int64_t purged = 0;
    sqlite3_stmt *s;
    page->has_more = false;
    page->next_cursor = after_cursor;
    page->head = 0;
    page->oldest_cursor = 0;
    int rc = read_begin(b, &opened);
    if (rc != ROOST_OK) {
        return rc;
    }
    if ((rc = agent_head(b, tenant_id, agent_id, &page->head, &purged)) != ROOST_OK) {
        goto out;
    }
    page->oldest_cursor = purged;
    if (after_cursor < purged) {
        rc = ROOST_EGONE;
        goto out;
    }
    if (limit == 0) {
        goto out;
    }
    if ((rc = prep(b, S_READ, &s)) != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    sqlite3_bind_int64(s, 3, after_cursor);
    sqlite3_bind_int64(s, 4, sql_limit(limit) + 1);
    size_t got = 0, used = 0;
    while ((rc = step(b, s)) == 1) {
        /* Column 6 is the payload (EVCOLS); SQLite loads it only for the rows stepped on. */
        if (got == limit ||
            !store_budget_take(&used, got, (size_t)sqlite3_column_bytes(s, 6), max_bytes)) {
            page->has_more = true;
            break;
        }
        if ((rc = push_row(s, &page->events)) != ROOST_OK) {
            goto out;
        }
        page->next_cursor = page->events.items[page->events.len - 1].seq;
        got++;
    }
    rc = rc < 0 ? rc : ROOST_OK;
out:
    return read_end(b, opened, rc);
}

static int sq_state_get(struct store *st, const char *tenant_id, const char *agent_id, char **state,
                        int64_t *cursor)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *s;
    *state = NULL;
    *cursor = 0;
    int rc = prep(b, S_STATE_GET, &s);
    if (rc != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    if ((rc = step(b, s)) < 0) {
        goto out;
    }
    if (rc == 1) {
        *cursor = sqlite3_column_int64(s, 1);
        if ((rc = col_dup(s, 0, state)) != ROOST_OK) {
            goto out;
        }
    }
    rc = ROOST_OK;
    if (*state == NULL && (*state = strdup("{}")) == NULL) {
        rc = ROOST_ENOMEM;
    }
out:
    reset_all(b);
    return rc;
}

static int sq_head(struct store *st, const char *tenant_id, const char *agent_id, int64_t *head)
{
    struct sqlite_store *b = backend(st);
    int rc = agent_head(b, tenant_id, agent_id, head, NULL);
    reset_all(b);
    return rc;
}

/* ---- leases ---- */

static int sq_claim(struct store *st, const char *tenant_id, const char *agent_id, size_t limit,
                    size_t max_bytes, int64_t lease_s, const char *consumer, int64_t now_ms,
                    struct store_events *out, bool *has_more)
{
    struct sqlite_store *b = backend(st);
    int64_t *seqs = NULL;
    size_t n = 0, cap = 0, used = 0;
    sqlite3_stmt *s;
    bool more = false;
    int rc = prep(b, S_CLAIM_SELECT, &s);
    if (rc != ROOST_OK || limit == 0) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    sqlite3_bind_int64(s, 3, now_ms);
    sqlite3_bind_int64(s, 4, sql_limit(limit));
    /* Collect first: updating rows under a live index walk of the same index is not defined. */
    while ((rc = step(b, s)) == 1) {
        if (!store_budget_take(&used, n, (size_t)sqlite3_column_bytes(s, 1), max_bytes)) {
            more = true; /* the rest stays pending, untouched */
            break;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            int64_t *grown = realloc(seqs, ncap * sizeof *seqs);
            if (grown == NULL) {
                rc = ROOST_ENOMEM;
                goto out;
            }
            seqs = grown;
            cap = ncap;
        }
        seqs[n++] = sqlite3_column_int64(s, 0);
    }
    if (rc < 0) {
        goto out;
    }
    more = more || n == limit;
    sqlite3_reset(s);
    for (size_t i = 0; i < n; i++) {
        char token[STORE_LEASE_TOKEN_LEN + 1];
        if (ids_lease_token(token) != 0) {
            snprintf(b->err, sizeof b->err, "claim: no randomness for the lease token");
            rc = ROOST_EINTERNAL;
            goto out;
        }
        if ((rc = prep(b, S_CLAIM_UPDATE, &s)) != ROOST_OK) {
            goto out;
        }
        bind_text(s, 1, tenant_id);
        bind_text(s, 2, agent_id);
        sqlite3_bind_int64(s, 3, seqs[i]);
        bind_text(s, 4, token);
        bind_text(s, 5, consumer != NULL ? consumer : "");
        sqlite3_bind_int64(s, 6, now_ms);
        sqlite3_bind_int64(s, 7, now_ms + lease_s * 1000);
        if ((rc = step(b, s)) < 0) {
            goto out;
        }
        if (rc == 1 && (rc = push_row(s, out)) != ROOST_OK) {
            goto out;
        }
        if ((rc = run(b, s)) != ROOST_OK) {
            goto out;
        }
    }
    if ((rc = prep(b, S_SEEN, &s)) != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    sqlite3_bind_int64(s, 3, now_ms);
    rc = run(b, s);
out:
    if (has_more != NULL) {
        *has_more = rc == ROOST_OK && more;
    }
    free(seqs);
    reset_all(b);
    return rc;
}

struct lease_row {
    int64_t seq;
    int status;
    char lease_token[STORE_LEASE_TOKEN_LEN + 1];
    int attempts;
    int64_t claimed_at_ms;
    int64_t claim_expires_at_ms;
};

/* Looks the event up for this tenant and agent: ROOST_EEVENTNOTFOUND when there is none. */
static int lease_find(struct sqlite_store *b, const char *tenant_id, const char *agent_id,
                      const char *event_id, struct lease_row *row)
{
    sqlite3_stmt *s;
    int rc = prep(b, S_EVENT_FIND, &s);
    if (rc != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    bind_text(s, 3, event_id);
    if ((rc = step(b, s)) < 0) {
        return rc;
    }
    if (rc == 0) {
        return ROOST_EEVENTNOTFOUND;
    }
    row->seq = sqlite3_column_int64(s, 0);
    row->status = sqlite3_column_int(s, 1);
    col_copy(s, 2, row->lease_token, sizeof row->lease_token);
    row->attempts = sqlite3_column_int(s, 3);
    row->claimed_at_ms = sqlite3_column_int64(s, 4);
    row->claim_expires_at_ms = sqlite3_column_int64(s, 5);
    sqlite3_reset(s);
    return ROOST_OK;
}

static bool token_eq(const struct lease_row *row, const char *lease_token)
{
    return lease_token != NULL && row->lease_token[0] != '\0' &&
           strcmp(row->lease_token, lease_token) == 0;
}

static int sq_ack(struct store *st, const char *tenant_id, const char *agent_id,
                  const char *event_id, const char *lease_token, int64_t now_ms,
                  int64_t *available_at_ms)
{
    struct sqlite_store *b = backend(st);
    struct lease_row row;
    sqlite3_stmt *s;
    if (available_at_ms != NULL) {
        *available_at_ms = 0;
    }
    int rc = prep(b, S_ACK, &s);
    if (rc != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    bind_text(s, 3, event_id);
    bind_text(s, 4, lease_token);
    sqlite3_bind_int64(s, 5, now_ms);
    if ((rc = step(b, s)) < 0) {
        goto out;
    }
    if (rc == 1) {
        if (available_at_ms != NULL) {
            *available_at_ms = sqlite3_column_int64(s, 0);
        }
        rc = run(b, s);
        goto out;
    }
    /* Nothing changed: tell a repeated ack, a stale token and an unknown event apart. */
    if ((rc = lease_find(b, tenant_id, agent_id, event_id, &row)) != ROOST_OK) {
        goto out;
    }
    rc = row.status == STORE_COMPLETED && token_eq(&row, lease_token) ? ROOST_OK
                                                                      : ROOST_ELEASEMISMATCH;
out:
    reset_all(b);
    return rc;
}

static int sq_release(struct store *st, const char *tenant_id, const char *agent_id,
                      const char *event_id, const char *lease_token,
                      enum store_release_reason reason, int64_t delay_s, const char *error,
                      int max_attempts, int64_t now_ms, struct store_touches *touches,
                      enum store_status *new_status)
{
    struct sqlite_store *b = backend(st);
    struct lease_row row;
    sqlite3_stmt *s;
    int rc = lease_find(b, tenant_id, agent_id, event_id, &row);
    if (rc != ROOST_OK) {
        goto out;
    }
    if (row.status != STORE_CLAIMED || !token_eq(&row, lease_token)) {
        rc = ROOST_ELEASEMISMATCH;
        goto out;
    }
    enum store_status to;
    int nack = reason == STORE_RELEASE_TRANSIENT ? 1 : 0;
    int64_t available_at = now_ms;
    if (reason == STORE_RELEASE_POISON ||
        (reason == STORE_RELEASE_TRANSIENT && max_attempts > 0 && row.attempts >= max_attempts)) {
        to = STORE_QUARANTINED;
    } else if (delay_s > 0) {
        to = STORE_SCHEDULED;
        available_at = now_ms + delay_s * 1000;
    } else {
        to = STORE_PENDING;
    }
    if ((rc = prep(b, S_RELEASE_UPDATE, &s)) != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    sqlite3_bind_int64(s, 3, row.seq);
    bind_text(s, 4, lease_token);
    sqlite3_bind_int(s, 5, to);
    sqlite3_bind_int64(s, 6, available_at);
    sqlite3_bind_int(s, 7, nack);
    bind_text(s, 8, error);
    if ((rc = run(b, s)) != ROOST_OK) {
        goto out;
    }
    if (sqlite3_changes(b->db) != 1) {
        rc = ROOST_ELEASEMISMATCH;
        goto out;
    }
    if (new_status != NULL) {
        *new_status = to;
    }
    if (to == STORE_PENDING) {
        rc = touch(b, tenant_id, agent_id, touches);
    }
out:
    reset_all(b);
    return rc;
}

static int sq_extend(struct store *st, const char *tenant_id, const char *agent_id,
                     const char *event_id, const char *lease_token, int64_t lease_s,
                     int64_t max_total_s, int64_t now_ms, int64_t *claim_expires_at_ms)
{
    struct sqlite_store *b = backend(st);
    struct lease_row row;
    sqlite3_stmt *s;
    int rc = lease_find(b, tenant_id, agent_id, event_id, &row);
    if (rc != ROOST_OK) {
        goto out;
    }
    if (row.status != STORE_CLAIMED || !token_eq(&row, lease_token) ||
        row.claim_expires_at_ms <= now_ms) {
        rc = ROOST_ELEASEMISMATCH;
        goto out;
    }
    int64_t want = now_ms + lease_s * 1000;
    int64_t cap = row.claimed_at_ms + max_total_s * 1000;
    int64_t next = want < cap ? want : cap;
    if (next <= row.claim_expires_at_ms) {
        if (claim_expires_at_ms != NULL) {
            *claim_expires_at_ms = row.claim_expires_at_ms;
        }
        rc = ROOST_ELEASECAP;
        goto out;
    }
    if ((rc = prep(b, S_EXTEND_UPDATE, &s)) != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    sqlite3_bind_int64(s, 3, row.seq);
    bind_text(s, 4, lease_token);
    sqlite3_bind_int64(s, 5, next);
    if ((rc = run(b, s)) != ROOST_OK) {
        goto out;
    }
    if (sqlite3_changes(b->db) != 1) {
        rc = ROOST_ELEASEMISMATCH;
        goto out;
    }
    if (claim_expires_at_ms != NULL) {
        *claim_expires_at_ms = next;
    }
out:
    reset_all(b);
    return rc;
}

/* consumer NULL releases every lease of the agent; "" those claimed without a consumer id. */
static int sq_release_all(struct store *st, const char *tenant_id, const char *agent_id,
                          const char *consumer, int64_t now_ms, size_t *released,
                          struct store_touches *touches)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *s;
    (void)now_ms;
    *released = 0;
    int rc = prep(b, consumer != NULL ? S_RELEASE_ALL : S_RELEASE_ALL_ANY, &s);
    if (rc != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    if (consumer != NULL) {
        bind_text(s, 3, consumer);
    }
    if ((rc = run(b, s)) != ROOST_OK) {
        goto out;
    }
    *released = (size_t)sqlite3_changes(b->db);
    if (*released > 0) {
        rc = touch(b, tenant_id, agent_id, touches);
    }
out:
    reset_all(b);
    return rc;
}

/* ---- scheduler ---- */

struct row_ref {
    char tenant_id[STORE_ID_MAX + 1];
    char agent_id[STORE_ID_MAX + 1];
    int64_t seq;
    char lease_token[STORE_LEASE_TOKEN_LEN + 1];
};

static int sq_scavenge(struct store *st, int64_t now_ms, int max_attempts, size_t limit,
                       size_t *count, size_t *quarantined, struct store_touches *touches)
{
    struct sqlite_store *b = backend(st);
    struct row_ref *rows = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *s;
    *count = 0;
    *quarantined = 0;
    int rc = prep(b, S_SCAV_SELECT, &s);
    if (rc != ROOST_OK || limit == 0) {
        goto out;
    }
    sqlite3_bind_int64(s, 1, now_ms);
    sqlite3_bind_int64(s, 2, sql_limit(limit));
    while ((rc = step(b, s)) == 1) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct row_ref *grown = realloc(rows, ncap * sizeof *rows);
            if (grown == NULL) {
                rc = ROOST_ENOMEM;
                goto out;
            }
            rows = grown;
            cap = ncap;
        }
        struct row_ref *r = &rows[n++];
        col_copy(s, 0, r->tenant_id, sizeof r->tenant_id);
        col_copy(s, 1, r->agent_id, sizeof r->agent_id);
        r->seq = sqlite3_column_int64(s, 2);
        col_copy(s, 3, r->lease_token, sizeof r->lease_token);
    }
    if (rc < 0) {
        goto out;
    }
    sqlite3_reset(s);
    for (size_t i = 0; i < n; i++) {
        struct row_ref *r = &rows[i];
        if ((rc = prep(b, S_SCAV_UPDATE, &s)) != ROOST_OK) {
            goto out;
        }
        bind_text(s, 1, r->tenant_id);
        bind_text(s, 2, r->agent_id);
        sqlite3_bind_int64(s, 3, r->seq);
        bind_text(s, 4, r->lease_token);
        sqlite3_bind_int(s, 5, max_attempts);
        sqlite3_bind_int64(s, 6, now_ms);
        if ((rc = step(b, s)) < 0) {
            goto out;
        }
        if (rc == 0) {
            continue; /* the lease moved on since we read it */
        }
        int to = sqlite3_column_int(s, 0);
        if ((rc = run(b, s)) != ROOST_OK) {
            goto out;
        }
        (*count)++;
        if (to == STORE_QUARANTINED) {
            (*quarantined)++;
        } else if ((rc = touch(b, r->tenant_id, r->agent_id, touches)) != ROOST_OK) {
            goto out;
        }
    }
    rc = ROOST_OK;
out:
    free(rows);
    reset_all(b);
    return rc;
}

static int sq_promote_due(struct store *st, int64_t now_ms, size_t limit, size_t *count,
                          struct store_touches *touches)
{
    struct sqlite_store *b = backend(st);
    struct store_touches agents = {0};
    sqlite3_stmt *s;
    *count = 0;
    int rc = prep(b, S_PROMOTE, &s);
    if (rc != ROOST_OK || limit == 0) {
        goto out;
    }
    sqlite3_bind_int64(s, 1, now_ms);
    sqlite3_bind_int64(s, 2, sql_limit(limit));
    while ((rc = step(b, s)) == 1) {
        char tenant_id[STORE_ID_MAX + 1], agent_id[STORE_ID_MAX + 1];
        col_copy(s, 0, tenant_id, sizeof tenant_id);
        col_copy(s, 1, agent_id, sizeof agent_id);
        (*count)++;
        if ((rc = store_touches_add(&agents, tenant_id, agent_id, 0)) != ROOST_OK) {
            goto out;
        }
    }
    if (rc < 0) {
        goto out;
    }
    sqlite3_reset(s);
    rc = ROOST_OK;
    for (size_t i = 0; i < agents.len && rc == ROOST_OK; i++) {
        rc = touch(b, agents.items[i].tenant_id, agents.items[i].agent_id, touches);
    }
out:
    store_touches_cleanup(&agents);
    reset_all(b);
    return rc;
}

static int sq_expire(struct store *st, int64_t now_ms, size_t limit, size_t *count)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *s;
    *count = 0;
    int rc = prep(b, S_EXPIRE, &s);
    if (rc != ROOST_OK || limit == 0) {
        goto out;
    }
    sqlite3_bind_int64(s, 1, now_ms);
    sqlite3_bind_int64(s, 2, sql_limit(limit));
    if ((rc = run(b, s)) == ROOST_OK) {
        *count = (size_t)sqlite3_changes(b->db);
    }
out:
    reset_all(b);
    return rc;
}

struct agent_ref {
    char tenant_id[STORE_ID_MAX + 1];
    char agent_id[STORE_ID_MAX + 1];
};

struct doomed {
    int64_t seq;
    bool archive;
};

/* Deletes the deletable prefix of one agent's rows, at most `budget` rows. *deleted counts them;
 * the prefix ended early (a row that must stay) when *deleted < budget. */
static int retain_agent(struct sqlite_store *b, const struct store_retention_req *req,
                        const struct agent_ref *a, size_t budget, struct doomed *rows,
                        size_t *deleted, size_t *archived)
{
    sqlite3_stmt *s;
    size_t n = 0;
    *deleted = 0;
    int rc = prep(b, S_RET_ROWS, &s);
    if (rc != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, a->tenant_id);
    bind_text(s, 2, a->agent_id);
    sqlite3_bind_int64(s, 3, sql_limit(budget));
    while ((rc = step(b, s)) == 1) {
        int status = sqlite3_column_int(s, 1);
        if (!store_retention_deletable(req, (enum store_status)status, sqlite3_column_int64(s, 2),
                                       sqlite3_column_int64(s, 3))) {
            break; /* the prefix ends at the first row that must stay */
        }
        rows[n].seq = sqlite3_column_int64(s, 0);
        rows[n].archive = status != STORE_COMPLETED;
        n++;
    }
    if (rc < 0) {
        return rc;
    }
    sqlite3_reset(s);
    if (n == 0) {
        return ROOST_OK;
    }
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].archive || req->archive == NULL) {
            continue;
        }
        struct store_event ev;
        memset(&ev, 0, sizeof ev);
        if ((rc = prep(b, S_EVENT_BY_SEQ, &s)) != ROOST_OK) {
            return rc;
        }
        bind_text(s, 1, a->tenant_id);
        bind_text(s, 2, a->agent_id);
        sqlite3_bind_int64(s, 3, rows[i].seq);
        if ((rc = step(b, s)) < 0) {
            return rc;
        }
        if (rc == 0) {
            continue;
        }
        if ((rc = row_to_event(s, &ev)) != ROOST_OK) {
            return rc;
        }
        sqlite3_reset(s);
        int cb = req->archive(req->archive_ctx, a->tenant_id, &ev);
        store_event_cleanup(&ev);
        if (cb != 0) {
            snprintf(b->err, sizeof b->err, "retention: archiving %s/%s seq %lld failed (%d)",
                     a->tenant_id, a->agent_id, (long long)rows[i].seq, cb);
            return ROOST_EIO;
        }
        (*archived)++;
    }
    int64_t through = rows[n - 1].seq;
    if ((rc = prep(b, S_RET_DELETE, &s)) != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, a->tenant_id);
    bind_text(s, 2, a->agent_id);
    sqlite3_bind_int64(s, 3, through);
    if ((rc = run(b, s)) != ROOST_OK) {
        return rc;
    }
    if ((rc = prep(b, S_RET_PURGED, &s)) != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, a->tenant_id);
    bind_text(s, 2, a->agent_id);
    sqlite3_bind_int64(s, 3, through);
    if ((rc = run(b, s)) != ROOST_OK) {
        return rc;
    }
    *deleted = n;
    return ROOST_OK;
}

/* Walks the agents in (tenant, agent) order; the whole call is one savepoint, so a failing
 * archive callback leaves every row and watermark as it was. */
static int sq_retention(struct store *st, const struct store_retention_req *req,
                        struct store_retention_result *res)
{
    struct sqlite_store *b = backend(st);
    struct agent_ref *agents = NULL;
    struct doomed *rows = NULL;
    struct agent_ref after = {{0}, {0}};
    sqlite3_stmt *s;
    memset(res, 0, sizeof *res);
    if (req->batch == 0) {
        return ROOST_OK;
    }
    agents = malloc(RETENTION_AGENT_PAGE * sizeof *agents);
    rows = req->batch > SIZE_MAX / sizeof *rows ? NULL : malloc(req->batch * sizeof *rows);
    if (agents == NULL || rows == NULL) {
        free(agents);
        free(rows);
        return ROOST_ENOMEM;
    }
    int rc = exec_id(b, S_RET_SAVEPOINT);
    if (rc != ROOST_OK) {
        goto out;
    }
    for (;;) {
        size_t n = 0;
        if ((rc = prep(b, S_RET_AGENTS, &s)) != ROOST_OK) {
            goto fail;
        }
        bind_text(s, 1, after.tenant_id);
        bind_text(s, 2, after.agent_id);
        sqlite3_bind_int(s, 3, RETENTION_AGENT_PAGE);
        while (n < RETENTION_AGENT_PAGE && (rc = step(b, s)) == 1) {
            col_copy(s, 0, agents[n].tenant_id, sizeof agents[n].tenant_id);
            col_copy(s, 1, agents[n].agent_id, sizeof agents[n].agent_id);
            n++;
        }
        if (rc < 0) {
            goto fail;
        }
        sqlite3_reset(s);
        for (size_t i = 0; i < n; i++) {
            size_t budget = req->batch - res->deleted, deleted;
            rc = retain_agent(b, req, &agents[i], budget, rows, &deleted, &res->archived);
            if (rc != ROOST_OK) {
                goto fail;
            }
            res->deleted += deleted;
            if (res->deleted == req->batch) {
                res->more = true;
                goto done;
            }
        }
        if (n < RETENTION_AGENT_PAGE) {
            break;
        }
        after = agents[n - 1];
    }
done:
    rc = exec_id(b, S_RET_RELEASE);
    goto out;
fail:
    reset_all(b);
    exec_id(b, S_RET_ROLLBACK);
    exec_id(b, S_RET_RELEASE);
    memset(res, 0, sizeof *res);
out:
    free(agents);
    free(rows);
    reset_all(b);
    return rc;
}

/* ---- admin ---- */

static int sq_quarantine_list(struct store *st, const char *tenant_id, const char *agent_id,
                              const char *after_agent, int64_t after_seq, size_t limit,
                              struct store_events *out, bool *has_more)
{
    struct sqlite_store *b = backend(st);
    bool one_agent = agent_id != NULL && agent_id[0] != '\0';
    sqlite3_stmt *s;
    size_t got = 0;
    *has_more = false;
    int rc = prep(b, one_agent ? S_QLIST_AGENT : S_QLIST_ALL, &s);
    if (rc != ROOST_OK || limit == 0) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, after_agent != NULL ? after_agent : "");
    sqlite3_bind_int64(s, 3, after_seq);
    sqlite3_bind_int64(s, 4, sql_limit(limit) + 1);
    if (one_agent) {
        bind_text(s, 5, agent_id);
    }
    while ((rc = step(b, s)) == 1) {
        if (got == limit) {
            *has_more = true;
            break;
        }
        if ((rc = push_row(s, out)) != ROOST_OK) {
            goto out;
        }
        got++;
    }
    rc = rc < 0 ? rc : ROOST_OK;
out:
    reset_all(b);
    return rc;
}

static int sq_requeue(struct store *st, const char *tenant_id, const char *event_id, int64_t now_ms,
                      struct store_touches *touches)
{
    struct sqlite_store *b = backend(st);
    char agent_id[STORE_ID_MAX + 1];
    sqlite3_stmt *s;
    int rc = prep(b, S_REQ_FIND, &s);
    if (rc != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, event_id);
    if ((rc = step(b, s)) < 0) {
        goto out;
    }
    if (rc == 0) {
        rc = ROOST_EEVENTNOTFOUND;
        goto out;
    }
    col_copy(s, 0, agent_id, sizeof agent_id);
    int status = sqlite3_column_int(s, 1);
    sqlite3_reset(s);
    if (status != STORE_QUARANTINED && status != STORE_EXPIRED) {
        rc = ROOST_ESTATE;
        goto out;
    }
    if ((rc = prep(b, S_REQ_UPDATE, &s)) != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, event_id);
    sqlite3_bind_int64(s, 3, now_ms);
    if ((rc = run(b, s)) != ROOST_OK) {
        goto out;
    }
    rc = touch(b, tenant_id, agent_id, touches);
out:
    reset_all(b);
    return rc;
}

static int sq_agents_list(struct store *st, const char *tenant_id, enum store_agents_sort sort,
                          const char *after_agent, int64_t offset, size_t limit, int64_t now_ms,
                          struct store_agent_stats *out, size_t *n, bool *has_more)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *s;
    (void)now_ms;
    *n = 0;
    *has_more = false;
    enum stmt_id id = sort == STORE_SORT_DEPTH ? S_AGENTS_BY_DEPTH
                      : sort == STORE_SORT_AGE ? S_AGENTS_BY_AGE
                                               : S_AGENTS_LIST;
    int rc = prep(b, id, &s);
    if (rc != ROOST_OK || limit == 0) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    if (id == S_AGENTS_LIST) {
        bind_text(s, 2, after_agent != NULL ? after_agent : "");
    } else {
        sqlite3_bind_int64(s, 2, offset < 0 ? 0 : offset);
    }
    sqlite3_bind_int64(s, 3, sql_limit(limit) + 1);
    while ((rc = step(b, s)) == 1) {
        if (*n == limit) {
            *has_more = true;
            break;
        }
        struct store_agent_stats *a = &out[(*n)++];
        memset(a, 0, sizeof *a);
        col_copy(s, 0, a->agent_id, sizeof a->agent_id);
        a->head = sqlite3_column_int64(s, 1);
        a->purged_through_seq = sqlite3_column_int64(s, 2);
        a->pending = sqlite3_column_int64(s, 3);
        a->scheduled = sqlite3_column_int64(s, 4);
        a->claimed = sqlite3_column_int64(s, 5);
        a->quarantined = sqlite3_column_int64(s, 6);
        a->oldest_pending_ms = sqlite3_column_int64(s, 7);
        a->last_seen_ms = sqlite3_column_int64(s, 8);
    }
    rc = rc < 0 ? rc : ROOST_OK;
out:
    reset_all(b);
    return rc;
}

static int sq_event_get(struct store *st, const char *tenant_id, const char *event_id,
                        struct store_event *out)
{
    struct sqlite_store *b = backend(st);
    struct store_events one = {0};
    sqlite3_stmt *s;
    int rc = prep(b, S_EVENT_GET, &s);
    if (rc != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, event_id);
    if ((rc = step(b, s)) < 0) {
        goto out;
    }
    if (rc == 0) {
        rc = ROOST_EEVENTNOTFOUND;
        goto out;
    }
    if ((rc = push_row(s, &one)) == ROOST_OK) {
        *out = one.items[0]; /* moves the heap members */
        one.len = 0;
    }
out:
    store_events_cleanup(&one);
    reset_all(b);
    return rc;
}

static int sq_quarantine_purge(struct store *st, const char *tenant_id, const char *agent_id,
                               const char *event_id, size_t limit, size_t *purged)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *s;
    *purged = 0;
    enum stmt_id id = event_id != NULL   ? S_PURGE_ONE
                      : agent_id != NULL ? S_PURGE_AGENT
                                         : S_PURGE_ALL;
    int rc = prep(b, id, &s);
    if (rc != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    if (id == S_PURGE_ONE) {
        bind_text(s, 2, event_id);
    } else {
        if (id == S_PURGE_AGENT) {
            bind_text(s, 2, agent_id);
        }
        sqlite3_bind_int64(s, 3, sql_limit(limit));
    }
    if ((rc = run(b, s)) != ROOST_OK) {
        goto out;
    }
    *purged = (size_t)sqlite3_changes(b->db);
    if (id == S_PURGE_ONE && *purged == 0) {
        /* Tell an unknown event from one in another status. */
        if ((rc = prep(b, S_REQ_FIND, &s)) != ROOST_OK) {
            goto out;
        }
        bind_text(s, 1, tenant_id);
        bind_text(s, 2, event_id);
        rc = step(b, s);
        rc = rc < 0 ? rc : rc == 1 ? ROOST_ESTATE : ROOST_EEVENTNOTFOUND;
    }
out:
    reset_all(b);
    return rc;
}

static int sq_metrics_snapshot(struct store *st, int64_t now_ms,
                               struct store_metrics_snapshot *snap)
{
    struct sqlite_store *b = backend(st);
    static const enum stmt_id by_status[] = {S_MET_PENDING, S_MET_SCHEDULED, S_MET_CLAIMED,
                                             S_MET_QUARANTINED};
    static const enum store_status statuses[] = {STORE_PENDING, STORE_SCHEDULED, STORE_CLAIMED,
                                                 STORE_QUARANTINED};
    sqlite3_stmt *s;
    (void)now_ms;
    snap->n_tenants = snap->n_agents = 0;
    snap->truncated = false;
    /* One read transaction: every query sees the same snapshot. */
    int rc = exec_id(b, S_BEGIN_READ);
    if (rc != ROOST_OK) {
        return rc;
    }
    for (size_t q = 0; q < sizeof by_status / sizeof by_status[0]; q++) {
        if ((rc = prep(b, by_status[q], &s)) != ROOST_OK) {
            goto out;
        }
        while ((rc = step(b, s)) == 1) {
            const unsigned char *tid = sqlite3_column_text(s, 0);
            store_metrics_add(snap, tid ? (const char *)tid : "", statuses[q],
                              sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2));
        }
        if (rc < 0) {
            goto out;
        }
    }
    store_metrics_sort_tenants(snap);
    if (snap->max_agents > 0) {
        if ((rc = prep(b, S_MET_AGENTS, &s)) != ROOST_OK) {
            goto out;
        }
        sqlite3_bind_int64(s, 1, sql_limit(snap->max_agents));
        while (snap->n_agents < snap->max_agents && (rc = step(b, s)) == 1) {
            struct store_metrics_agent *a = &snap->agents[snap->n_agents++];
            col_copy(s, 0, a->tenant_id, sizeof a->tenant_id);
            col_copy(s, 1, a->agent_id, sizeof a->agent_id);
            a->pending = sqlite3_column_int64(s, 2);
        }
        if (rc < 0) {
            goto out;
        }
    }
    rc = ROOST_OK;
out:
    reset_all(b);
    exec_id(b, S_ROLLBACK); /* read-only: ends the snapshot */
    return rc;
}

/* ---- signature keys and nonces ---- */

static int sq_key_add(struct store *st, const char *tenant_id, const struct store_key *key,
                      int64_t now_ms)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *s;
    int rc = prep(b, S_KEY_ADD, &s);
    if (rc != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, key->key_id);
    bind_text(s, 3, key->agent_id);
    bind_text(s, 4, key->alg);
    bind_text(s, 5, key->material != NULL ? key->material : "");
    sqlite3_bind_int64(s, 6, now_ms);
    if ((rc = run(b, s)) == ROOST_OK && sqlite3_changes(b->db) == 0) {
        rc = ROOST_EKEYEXISTS;
    }
out:
    reset_all(b);
    return rc;
}

/* Fills the metadata columns (0..4) of a key row. */
static void row_to_key(sqlite3_stmt *s, struct store_key *k)
{
    col_copy(s, 0, k->key_id, sizeof k->key_id);
    col_copy(s, 1, k->agent_id, sizeof k->agent_id);
    col_copy(s, 2, k->alg, sizeof k->alg);
    k->created_at_ms = sqlite3_column_int64(s, 3);
    k->revoked_at_ms = sqlite3_column_int64(s, 4);
    k->material = NULL;
}

static int sq_key_get(struct store *st, const char *tenant_id, const char *key_id,
                      struct store_key *out)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *s;
    memset(out, 0, sizeof *out);
    int rc = prep(b, S_KEY_GET, &s);
    if (rc != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, key_id);
    if ((rc = step(b, s)) < 0) {
        goto out;
    }
    if (rc == 0) {
        rc = ROOST_EKEYNOTFOUND;
        goto out;
    }
    row_to_key(s, out);
    rc = col_dup(s, 5, &out->material);
    if (rc == ROOST_OK && out->material == NULL) {
        rc = ROOST_ESTORE;
    }
out:
    reset_all(b);
    return rc;
}

static int sq_key_list(struct store *st, const char *tenant_id, const char *after_key, size_t limit,
                       struct store_key *out, size_t *n, bool *has_more)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *s;
    *n = 0;
    *has_more = false;
    int rc = prep(b, S_KEY_LIST, &s);
    if (rc != ROOST_OK || limit == 0) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, after_key != NULL ? after_key : "");
    sqlite3_bind_int64(s, 3, sql_limit(limit) + 1);
    while ((rc = step(b, s)) == 1) {
        if (*n == limit) {
            *has_more = true;
            break;
        }
        struct store_key *k = &out[(*n)++];
        memset(k, 0, sizeof *k);
        row_to_key(s, k);
    }
    rc = rc < 0 ? rc : ROOST_OK;
out:
    reset_all(b);
    return rc;
}

static int sq_key_revoke(struct store *st, const char *tenant_id, const char *key_id,
                         int64_t now_ms)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *s;
    int rc = prep(b, S_KEY_REVOKE, &s);
    if (rc != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, key_id);
    sqlite3_bind_int64(s, 3, now_ms);
    if ((rc = run(b, s)) == ROOST_OK && sqlite3_changes(b->db) == 0) {
        rc = ROOST_EKEYNOTFOUND;
    }
out:
    reset_all(b);
    return rc;
}

static int sq_nonce_claim(struct store *st, const char *tenant_id, const char *key_id,
                          const char *nonce, int64_t expires_at_ms, int64_t now_ms)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *s;
    int rc = prep(b, S_NONCE_CLAIM, &s);
    if (rc != ROOST_OK) {
        goto out;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, key_id);
    bind_text(s, 3, nonce);
    sqlite3_bind_int64(s, 4, expires_at_ms);
    sqlite3_bind_int64(s, 5, now_ms);
    if ((rc = run(b, s)) == ROOST_OK && sqlite3_changes(b->db) == 0) {
        rc = ROOST_ENONCEREUSED;
    }
out:
    reset_all(b);
    return rc;
}

static int sq_nonce_prune(struct store *st, int64_t now_ms, size_t limit, size_t *count)
{
    struct sqlite_store *b = backend(st);
    sqlite3_stmt *s;
    *count = 0;
    int rc = prep(b, S_NONCE_PRUNE, &s);
    if (rc != ROOST_OK || limit == 0) {
        goto out;
    }
    sqlite3_bind_int64(s, 1, now_ms);
    sqlite3_bind_int64(s, 2, sql_limit(limit));
    if ((rc = run(b, s)) == ROOST_OK) {
        *count = (size_t)sqlite3_changes(b->db);
    }
out:
    reset_all(b);
    return rc;
}

const struct store_ops store_sqlite_ops = {
    .scheme = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .migrate = sq_migrate,
    .errmsg = sq_errmsg,
    .ping = sq_ping,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .savepoint = sq_savepoint,
    .savepoint_release = sq_savepoint_release,
    .savepoint_rollback = sq_savepoint_rollback,
    .publish = sq_publish,
    .inbox_read = sq_inbox_read,
    .claim = sq_claim,
    .ack = sq_ack,
    .release = sq_release,
    .extend = sq_extend,
    .release_all = sq_release_all,
    .state_get = sq_state_get,
    .head = sq_head,
    .scavenge = sq_scavenge,
    .promote_due = sq_promote_due,
    .expire = sq_expire,
    .retention = sq_retention,
    .quarantine_list = sq_quarantine_list,
    .requeue = sq_requeue,
    .agents_list = sq_agents_list,
    .event_get = sq_event_get,
    .quarantine_purge = sq_quarantine_purge,
    .metrics_snapshot = sq_metrics_snapshot,
    .key_add = sq_key_add,
    .key_get = sq_key_get,
    .key_list = sq_key_list,
    .key_revoke = sq_key_revoke,
    .nonce_claim = sq_nonce_claim,
    .nonce_prune = sq_nonce_prune,
};
