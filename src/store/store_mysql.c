/* SPDX-License-Identifier: MIT */
/* The MySQL/MariaDB backend of the store (mysql://USER:PASS@HOST:PORT/DB): one connection per
 * struct store, every statement prepared once and cached on the backend struct, sessions at READ
 * COMMITTED with autocommit on (writes run in the caller's explicit START TRANSACTION; each read
 * outside one is a single statement, so it sees one consistent snapshot). Semantics mirror
 * store_sqlite.c; the differences are locking: the agent row lock orders seqs (DESIGN §4.2),
 * claims use SKIP LOCKED, and deadlocks/lock wait timeouts become ROOST_ERETRY. */
#include "store/store_mysql.h"

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ids.h"
#include "common/timeutil.h"
#include "store/migrations.h"

#include "common/banned.h"

#define EVCOLS                                                                                     \
    "event_id, agent_id, seq, status, priority, correlation_id, payload, created_at, "             \
    "available_at, expires_at, lease_token, consumer, claimed_at, claim_expires_at, attempts, "    \
    "timeouts, nacks, last_error, completed_at"
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
    " COALESCE(a.last_seen_at, 0)"
#define EVCOLS_I                                                                                   \
    "i.event_id, i.agent_id, i.seq, i.status, i.priority, i.correlation_id, i.payload, "           \
    "i.created_at, i.available_at, i.expires_at, i.lease_token, i.consumer, i.claimed_at, "        \
    "i.claim_expires_at, i.attempts, i.timeouts, i.nacks, i.last_error, i.completed_at"

#define RETENTION_AGENT_PAGE 64
#define PARAM_MAX 16
#define TAIL_PAGE 1000
#define TAIL_GAP_BATCH 16
#define TAIL_GAPS_MAX 4096
/* How far below the end of the log a starting tailer looks for ids still uncommitted. */
#define TAIL_START_WINDOW 1000
/* roost_changes rows older than this go with retention; a tailer is never this far behind. */
#define CHANGES_KEEP_MS (10 * 60 * 1000)
/* Attempts for one statement outside a transaction (a lost connection, a deadlock). */
#define AUTOCOMMIT_TRIES 3
/* Commit markers (my_commit): kept an hour (a resolution takes seconds), pruned by each
 * connection every MARKER_PRUNE_EVERY commits, at most MARKER_PRUNE_LIMIT rows at a time; a lost
 * commit answer is resolved for at most RESOLVE_MS before it is reported as unknown. */
#define MARKER_LEN 16
#define MARKER_KEEP_MS (60 * 60 * 1000)
#define MARKER_PRUNE_EVERY 1024
#define MARKER_PRUNE_LIMIT 4096
#define RESOLVE_MS 30000

enum stmt_id {
    S_TENANT_FIND,
    S_TENANT_ENSURE,
    S_AGENT_LOCK,
    S_IDEM_FIND,
    S_SEQ_ALLOC,
    S_INBOX_INSERT,
    S_STATE_PATCH,
    S_CHANGE,
    S_AGENT_HEAD,
    S_READ,
    S_CLAIM_SELECT,
    S_CLAIM_UPDATE,
    S_EVENT_FIND,
    S_ACK,
    S_RELEASE_UPDATE,
    S_EXTEND_UPDATE,
    S_RELEASE_ALL_SELECT,
    S_RELEASE_ALL_ANY_SELECT,
    S_RELEASE_ALL_UPDATE,
    S_STATE_GET,
    S_SCAV_SELECT,
    S_SCAV_UPDATE,
    S_PROMOTE_SELECT,
    S_PROMOTE_UPDATE,
    S_EXPIRE,
    S_RET_AGENTS,
    S_RET_LOCK_AGENT,
    S_RET_ROWS,
    S_EVENT_BY_SEQ,
    S_RET_DELETE,
    S_RET_PURGED,
    S_CHANGES_OLD,
    S_ACK_AVAIL,
    S_SEEN,
    S_AGENTS_BY_DEPTH,
    S_AGENTS_BY_AGE,
    S_EVENT_GET,
    S_PURGE_ONE,
    S_PURGE_AGENT,
    S_PURGE_ALL,
    S_MET_PENDING,
    S_MET_SCHEDULED,
    S_MET_CLAIMED,
    S_MET_QUARANTINED,
    S_MET_AGENTS,
    S_CHANGES_PRUNE,
    S_QLIST_ALL,
    S_QLIST_AGENT,
    S_REQ_FIND,
    S_REQ_UPDATE,
    S_AGENTS_LIST,
    S_KEY_ADD,
    S_KEY_GET,
    S_KEY_LIST,
    S_KEY_REVOKE,
    S_NONCE_EXPIRED_DELETE,
    S_NONCE_INSERT,
    S_NONCE_PRUNE,
    S_MIG_CHECK,
    S_MIG_RECORD,
    S_TAIL_MAX,
    S_TAIL_SCAN,
    S_TAIL_GAPS,
    S_COUNT
};

/* MySQL placeholders are positional: the comment before each statement lists its parameters. */
static const char *const stmt_sql[S_COUNT] = {
    /* tenant */
    [S_TENANT_FIND] = "SELECT 1 FROM tenants WHERE tenant_id = ?",
    /* tenant, now */
    [S_TENANT_ENSURE] = "INSERT IGNORE INTO tenants (tenant_id, created_at) VALUES (?, ?)",
    /* tenant, agent, now, now: creates or row-locks the agent without moving next_seq. */
    [S_AGENT_LOCK] = "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
                     " VALUES (?, ?, 1, ?, ?) ON DUPLICATE KEY UPDATE next_seq = next_seq",
    /* tenant, agent, key */
    [S_IDEM_FIND] = "SELECT event_id, seq FROM inbox"
                    " WHERE tenant_id = ? AND agent_id = ? AND idempotency_key = ?",
    /* tenant, agent, now, now: allocates the seq under the agent's row lock (DESIGN §4.2), in one
     * round trip: LAST_INSERT_ID(expr) hands the new next_seq back as the statement's insert id. */
    [S_SEQ_ALLOC] = "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
                    " VALUES (?, ?, LAST_INSERT_ID(2), ?, ?) ON DUPLICATE KEY UPDATE"
                    " next_seq = LAST_INSERT_ID(next_seq + 1), updated_at = VALUES(updated_at)",
    /* the 12 columns in order */
    [S_INBOX_INSERT] = "INSERT INTO inbox (tenant_id, agent_id, seq, event_id, status, priority,"
                       " correlation_id, idempotency_key, payload, created_at, available_at,"
                       " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    /* patch, seq, now, tenant, agent */
    [S_STATE_PATCH] = "UPDATE agents SET state = JSON_COMPACT(JSON_MERGE_PATCH(state, ?)),"
                      " state_cursor = ?, updated_at = ? WHERE tenant_id = ? AND agent_id = ?",
    /* tenant, agent, head, now */
    [S_CHANGE] = "INSERT INTO roost_changes (tenant_id, agent_id, head, at_ms, origin)"
                 " VALUES (?, ?, ?, ?, ?)",
    /* tenant, agent */
    [S_AGENT_HEAD] = "SELECT next_seq - 1, purged_through_seq FROM agents"
                     " WHERE tenant_id = ? AND agent_id = ?",
    /* after, tenant, agent, limit: head, watermark and the page in one statement (one snapshot). */
    [S_READ] = "SELECT a.next_seq - 1, a.purged_through_seq, " EVCOLS_I
               " FROM agents a LEFT JOIN inbox i ON i.tenant_id = a.tenant_id"
               " AND i.agent_id = a.agent_id AND i.seq > ?"
               " WHERE a.tenant_id = ? AND a.agent_id = ? ORDER BY i.seq LIMIT ?",
    /* tenant, agent, now, limit: an exact-match walk of inbox_claim in claim order; rows another
     * claimer holds are skipped, not waited for. */
    [S_CLAIM_SELECT] = "SELECT " EVCOLS " FROM inbox"
                       " WHERE tenant_id = ? AND agent_id = ? AND status = 1"
                       " AND (expires_at IS NULL OR expires_at > ?)"
                       " ORDER BY priority DESC, seq ASC LIMIT ? FOR UPDATE SKIP LOCKED",
    /* token, consumer, now, claim_expires_at, tenant, agent, seq */
    [S_CLAIM_UPDATE] = "UPDATE inbox SET status = 2, lease_token = ?, consumer = ?, claimed_at = ?,"
                       " claim_expires_at = ?, attempts = attempts + 1"
                       " WHERE tenant_id = ? AND agent_id = ? AND seq = ? AND status = 1",
    /* event_id, tenant, agent */
    [S_EVENT_FIND] = "SELECT seq, status, lease_token, attempts, claimed_at, claim_expires_at"
                     " FROM inbox WHERE event_id = ? AND tenant_id = ? AND agent_id = ?",
    /* now, event_id, tenant, agent, token */
    [S_ACK] = "UPDATE inbox SET status = 3, payload = NULL, completed_at = ?"
              " WHERE event_id = ? AND tenant_id = ? AND agent_id = ? AND status = 2"
              " AND lease_token = ?",
    /* status, available_at, nack, error, tenant, agent, seq, token */
    [S_RELEASE_UPDATE] = "UPDATE inbox SET status = ?, available_at = ?, nacks = nacks + ?,"
                         " last_error = COALESCE(?, last_error), lease_token = NULL,"
                         " claim_expires_at = NULL WHERE tenant_id = ? AND agent_id = ?"
                         " AND seq = ? AND status = 2 AND lease_token = ?",
    /* claim_expires_at, tenant, agent, seq, token */
    [S_EXTEND_UPDATE] = "UPDATE inbox SET claim_expires_at = ?"
                        " WHERE tenant_id = ? AND agent_id = ? AND seq = ? AND status = 2"
                        " AND lease_token = ?",
    /* tenant, agent, consumer: the leases are locked first and then released by primary key, so
     * the update never takes locks on the claim index range. */
    [S_RELEASE_ALL_SELECT] = "SELECT seq FROM inbox WHERE tenant_id = ? AND agent_id = ?"
                             " AND status = 2 AND consumer = ? FOR UPDATE",
    [S_RELEASE_ALL_ANY_SELECT] = "SELECT seq FROM inbox WHERE tenant_id = ? AND agent_id = ?"
                                 " AND status = 2 FOR UPDATE",
    /* tenant, agent, seq */
    [S_RELEASE_ALL_UPDATE] = "UPDATE inbox SET status = 1, lease_token = NULL,"
                             " claim_expires_at = NULL"
                             " WHERE tenant_id = ? AND agent_id = ? AND seq = ? AND status = 2",
    /* tenant, agent */
    [S_STATE_GET] = "SELECT state, GREATEST(state_cursor, purged_through_seq) FROM agents"
                    " WHERE tenant_id = ? AND agent_id = ?",
    /* now, limit */
    [S_SCAV_SELECT] = "SELECT tenant_id, agent_id, seq, lease_token, attempts FROM inbox"
                      " WHERE status = 2 AND claim_expires_at <= ?"
                      " ORDER BY claim_expires_at LIMIT ?",
    /* status, tenant, agent, seq, token, now: conditional on the lease read, so an ack or release
     * that won the race is never overwritten. */
    [S_SCAV_UPDATE] = "UPDATE inbox SET status = ?, timeouts = timeouts + 1, lease_token = NULL,"
                      " claim_expires_at = NULL WHERE tenant_id = ? AND agent_id = ? AND seq = ?"
                      " AND status = 2 AND lease_token = ? AND claim_expires_at <= ?",
    /* now, limit */
    [S_PROMOTE_SELECT] = "SELECT tenant_id, agent_id, seq FROM inbox"
                         " WHERE status = 0 AND available_at <= ?"
                         " ORDER BY available_at LIMIT ? FOR UPDATE SKIP LOCKED",
    /* tenant, agent, seq */
    [S_PROMOTE_UPDATE] = "UPDATE inbox SET status = 1"
                         " WHERE tenant_id = ? AND agent_id = ? AND seq = ? AND status = 0",
    /* now, now, limit */
    [S_EXPIRE] = "UPDATE inbox SET status = 5, completed_at = ?"
                 " WHERE status IN (0, 1) AND expires_at <= ? LIMIT ?",
    /* tenant, agent, limit */
    [S_RET_AGENTS] = "SELECT tenant_id, agent_id FROM agents WHERE (tenant_id, agent_id) > (?, ?)"
                     " ORDER BY tenant_id, agent_id LIMIT ?",
    /* tenant, agent, limit */
    /* tenant, agent */
    [S_RET_LOCK_AGENT] = "SELECT 1 FROM agents WHERE tenant_id = ? AND agent_id = ?"
                         " FOR UPDATE SKIP LOCKED",
    [S_RET_ROWS] = "SELECT seq, status, completed_at, created_at FROM inbox"
                   " WHERE tenant_id = ? AND agent_id = ? ORDER BY seq LIMIT ?",
    /* tenant, agent, seq */
    [S_EVENT_BY_SEQ] = "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ? AND agent_id = ?"
                       " AND seq = ?",
    /* tenant, agent, seq */
    [S_RET_DELETE] = "DELETE FROM inbox WHERE tenant_id = ? AND agent_id = ? AND seq <= ?",
    /* seq, tenant, agent */
    [S_RET_PURGED] = "UPDATE agents SET purged_through_seq = GREATEST(purged_through_seq, ?)"
                     " WHERE tenant_id = ? AND agent_id = ?",
    /* cut, limit */
    [S_CHANGES_OLD] = "SELECT COALESCE(MIN(id), 0), COALESCE(MAX(id), -1) FROM (SELECT id FROM"
                      " roost_changes WHERE at_ms < ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)"
                      " AS old",
    /* low id, high id, cut */
    [S_CHANGES_PRUNE] = "DELETE FROM roost_changes WHERE id BETWEEN ? AND ? AND at_ms < ?",
    /* tenant, after_agent, after_seq, limit */
    [S_QLIST_ALL] = "SELECT " EVCOLS " FROM inbox"
                    " WHERE tenant_id = ? AND status = 4 AND (agent_id, seq) > (?, ?)"
                    " ORDER BY agent_id, seq LIMIT ?",
    /* tenant, agent, seq bound, limit */
    [S_QLIST_AGENT] = "SELECT " EVCOLS " FROM inbox"
                      " WHERE tenant_id = ? AND status = 4 AND agent_id = ? AND seq > ?"
                      " ORDER BY seq LIMIT ?",
    /* event_id, tenant */
    [S_REQ_FIND] = "SELECT agent_id, status FROM inbox WHERE event_id = ? AND tenant_id = ?",
    /* now, now, event_id, tenant: a requeued event whose TTL has passed would expire again at
     * once, so its TTL is dropped. */
    [S_REQ_UPDATE] = "UPDATE inbox SET status = 1, attempts = 0, lease_token = NULL,"
                     " claim_expires_at = NULL, completed_at = NULL,"
                     " expires_at = CASE WHEN expires_at <= ? THEN NULL ELSE expires_at END,"
                     " available_at = ? WHERE event_id = ? AND tenant_id = ? AND status IN (4, 5)",
    /* tenant, after_agent, limit */
    [S_AGENTS_LIST] = "SELECT " AGENT_STATS_COLS " FROM agents a"
                      " WHERE a.tenant_id = ? AND a.agent_id > ? ORDER BY a.agent_id LIMIT ?",
    /* tenant, limit, offset */
    [S_AGENTS_BY_DEPTH] = "SELECT " AGENT_STATS_COLS " FROM agents a WHERE a.tenant_id = ?"
                          " ORDER BY pending DESC, a.agent_id LIMIT ? OFFSET ?",
    [S_AGENTS_BY_AGE] = "SELECT " AGENT_STATS_COLS " FROM agents a WHERE a.tenant_id = ?"
                        " ORDER BY oldest IS NULL, oldest, a.agent_id LIMIT ? OFFSET ?",
    /* event_id, tenant: the acked row's available_at, for the delivery-latency histogram */
    [S_ACK_AVAIL] = "SELECT available_at FROM inbox WHERE event_id = ? AND tenant_id = ?",
    /* now, tenant, agent, now: at most one write a minute per agent */
    [S_SEEN] = "UPDATE agents SET last_seen_at = ? WHERE tenant_id = ? AND agent_id = ?"
               " AND (last_seen_at IS NULL OR last_seen_at <= ? - 60000)",
    /* tenant, event_id */
    [S_EVENT_GET] = "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ? AND event_id = ?",
    [S_PURGE_ONE] = "DELETE FROM inbox WHERE tenant_id = ? AND event_id = ? AND status = 4",
    /* tenant, agent, limit */
    [S_PURGE_AGENT] = "DELETE FROM inbox WHERE tenant_id = ? AND agent_id = ? AND status = 4"
                      " ORDER BY seq LIMIT ?",
    /* tenant, limit */
    [S_PURGE_ALL] = "DELETE FROM inbox WHERE tenant_id = ? AND status = 4"
                    " ORDER BY agent_id, seq LIMIT ?",
    /* Metrics: each reads one status's rows through inbox_status (migration 0002), never the
     * completed history. */
    [S_MET_PENDING] = "SELECT tenant_id, count(*), COALESCE(min(available_at), 0) FROM inbox"
                      " WHERE status = 1 GROUP BY tenant_id",
    [S_MET_SCHEDULED] = "SELECT tenant_id, count(*), 0 FROM inbox WHERE status = 0"
                        " GROUP BY tenant_id",
    [S_MET_CLAIMED] = "SELECT tenant_id, count(*), COALESCE(min(claimed_at), 0) FROM inbox"
                      " WHERE status = 2 GROUP BY tenant_id",
    [S_MET_QUARANTINED] = "SELECT tenant_id, count(*), 0 FROM inbox WHERE status = 4"
                          " GROUP BY tenant_id",
    /* limit */
    [S_MET_AGENTS] = "SELECT tenant_id, agent_id, count(*) AS n FROM inbox WHERE status = 1"
                     " GROUP BY tenant_id, agent_id ORDER BY n DESC, tenant_id, agent_id LIMIT ?",
    /* tenant, key_id, agent, alg, material, now */
    [S_KEY_ADD] = "INSERT INTO `keys` (tenant_id, key_id, agent_id, alg, material, created_at)"
                  " VALUES (?, ?, ?, ?, ?, ?)",
    /* tenant, key_id */
    [S_KEY_GET] = "SELECT key_id, agent_id, alg, created_at, revoked_at, material FROM `keys`"
                  " WHERE tenant_id = ? AND key_id = ?",
    /* tenant, after, limit */
    [S_KEY_LIST] = "SELECT key_id, agent_id, alg, created_at, revoked_at FROM `keys`"
                   " WHERE tenant_id = ? AND key_id > ? ORDER BY key_id LIMIT ?",
    /* now, tenant, key_id (CLIENT_FOUND_ROWS: an already revoked key still counts as matched) */
    [S_KEY_REVOKE] = "UPDATE `keys` SET revoked_at = COALESCE(revoked_at, ?)"
                     " WHERE tenant_id = ? AND key_id = ?",
    /* tenant, key_id, nonce, now */
    [S_NONCE_EXPIRED_DELETE] = "DELETE FROM nonces WHERE tenant_id = ? AND key_id = ?"
                               " AND nonce = ? AND expires_at <= ?",
    /* tenant, key_id, nonce, expires_at */
    [S_NONCE_INSERT] = "INSERT INTO nonces (tenant_id, key_id, nonce, expires_at)"
                       " VALUES (?, ?, ?, ?)",
    /* now, limit */
    [S_NONCE_PRUNE] = "DELETE FROM nonces WHERE expires_at <= ? LIMIT ?",
    /* version */
    [S_MIG_CHECK] = "SELECT 1 FROM schema_migrations WHERE version = ?",
    /* version, name */
    [S_MIG_RECORD] = "INSERT INTO schema_migrations (version, name, applied_at)"
                     " VALUES (?, ?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED))",
    [S_TAIL_MAX] = "SELECT COALESCE(MAX(id), 0) FROM roost_changes",
    /* after, limit */
    [S_TAIL_SCAN] = "SELECT id, tenant_id, agent_id, head, origin FROM roost_changes WHERE id > ?"
                    " ORDER BY id LIMIT ?",
    /* TAIL_GAP_BATCH ids (-1 pads) */
    [S_TAIL_GAPS] = "SELECT id, tenant_id, agent_id, head, origin FROM roost_changes"
                    " WHERE id IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

struct mysql_store {
    struct store base; /* first: struct store * and struct mysql_store * convert */
    MYSQL *db;
    MYSQL_STMT *stmts[S_COUNT];
    struct store_mysql_url url;
    unsigned lock_wait_s;
    bool in_tx;                /* START TRANSACTION sent, no COMMIT/ROLLBACK yet */
    bool tx_aborted;           /* the server rolled the whole transaction back (deadlock) */
    bool lost;                 /* the connection dropped: reopen before the next statement */
    int64_t connected_mono_ms; /* when this connection opened (did the server restart since?) */
    uint64_t commits;          /* commits sent on this struct (paces the marker prune) */
    /* The last tenant seen committed: tenant rows are never deleted, so it needs no check. */
    char known_tenant[STORE_ID_MAX + 1];
    int64_t origin; /* store_options.origin */
    /* agents.last_seen_at is written at most once a minute per agent; this connection remembers
     * when it last wrote it, so most claims skip that statement (one round trip each). */
    struct seen_slot {
        uint64_t key;
        int64_t at_ms;
    } seen[64];
    uint64_t affected;
    uint64_t insert_id;
    unsigned last_errno; /* server code of the last failure (ER_DUP_ENTRY is an answer here) */
    char err[512];
};

static _Thread_local char open_err[512];

const char *store_mysql_open_error(void)
{
    return open_err;
}

static struct mysql_store *backend(struct store *st)
{
    return (struct mysql_store *)st;
}

/* ---- URL ---- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Percent-decodes src[0..len) into dst (cap bytes with the NUL); -1 when malformed or too long. */
static int pct_decode(const char *src, size_t len, char *dst, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)src[i];
        if (c == '%') {
            int hi = i + 2 < len ? hexval(src[i + 1]) : -1;
            int lo = i + 2 < len ? hexval(src[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                return -1;
            }
            c = hi * 16 + lo;
            i += 2;
            if (c == 0) {
                return -1;
            }
        }
        if (o + 1 >= cap) {
            return -1;
        }
        dst[o++] = (char)c;
    }
    dst[o] = '\0';
    return 0;
}

int store_mysql_url_parse(const char *url, struct store_mysql_url *out)
{
    static const char prefix[] = "mysql://";
    memset(out, 0, sizeof *out);
    if (url == NULL || strncmp(url, prefix, sizeof prefix - 1) != 0) {
        return ROOST_EINVAL;
    }
    const char *p = url + sizeof prefix - 1;
    const char *query = strchr(p, '?');
    const char *end = query != NULL ? query : p + strlen(p);
    /* The last '@' ends the user info (an unencoded '@' in a password still parses). */
    const char *at = NULL;
    for (const char *c = p; c < end; c++) {
        if (*c == '@') {
            at = c;
        }
    }
    const char *host = p;
    if (at != NULL) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *user_end = colon != NULL ? colon : at;
        if (pct_decode(p, (size_t)(user_end - p), out->user, sizeof out->user) != 0) {
            return ROOST_EINVAL;
        }
        if (colon != NULL &&
            pct_decode(colon + 1, (size_t)(at - colon - 1), out->pass, sizeof out->pass) != 0) {
            return ROOST_EINVAL;
        }
        host = at + 1;
    }
    const char *slash = memchr(host, '/', (size_t)(end - host));
    if (slash == NULL || slash + 1 >= end) {
        return ROOST_EINVAL; /* the database is required */
    }
    const char *host_end = slash;
    const char *port = NULL;
    if (host[0] == '[') {
        const char *close = memchr(host, ']', (size_t)(slash - host));
        if (close == NULL) {
            return ROOST_EINVAL;
        }
        if (close + 1 < slash && close[1] == ':') {
            port = close + 2;
        } else if (close + 1 != slash) {
            return ROOST_EINVAL;
        }
        if (pct_decode(host + 1, (size_t)(close - host - 1), out->host, sizeof out->host) != 0) {
            return ROOST_EINVAL;
        }
    } else {
        const char *colon = memchr(host, ':', (size_t)(slash - host));
        if (colon != NULL) {
            port = colon + 1;
            host_end = colon;
        }
        if (pct_decode(host, (size_t)(host_end - host), out->host, sizeof out->host) != 0) {
            return ROOST_EINVAL;
        }
    }
    if (port != NULL) {
        unsigned long v = 0;
        if (port == slash) {
            return ROOST_EINVAL;
        }
        for (const char *c = port; c < slash; c++) {
            if (*c < '0' || *c > '9' || (v = v * 10 + (unsigned long)(*c - '0')) > 65535) {
                return ROOST_EINVAL;
            }
        }
        out->port = (unsigned)v;
    }
    if (pct_decode(slash + 1, (size_t)(end - slash - 1), out->db, sizeof out->db) != 0) {
        return ROOST_EINVAL;
    }
    while (query != NULL && query[1] != '\0') {
        const char *kv = query + 1;
        const char *amp = strchr(kv, '&');
        const char *kv_end = amp != NULL ? amp : kv + strlen(kv);
        static const char sock[] = "socket=";
        static const char rc_[] = "isolation=read-committed";
        static const char rr_[] = "isolation=repeatable-read";
        size_t kl = (size_t)(kv_end - kv);
        if (kl > sizeof sock - 1 && strncmp(kv, sock, sizeof sock - 1) == 0) {
            if (pct_decode(kv + sizeof sock - 1, kl - (sizeof sock - 1), out->socket,
                           sizeof out->socket) != 0) {
                return ROOST_EINVAL;
            }
        } else if (kl == sizeof rc_ - 1 && strncmp(kv, rc_, kl) == 0) {
            out->repeatable_read = false;
        } else if (kl == sizeof rr_ - 1 && strncmp(kv, rr_, kl) == 0) {
            out->repeatable_read = true;
        } else {
            return ROOST_EINVAL;
        }
        query = amp;
    }
    if (out->host[0] == '\0' && out->socket[0] == '\0') {
        return ROOST_EINVAL;
    }
    return ROOST_OK;
}

/* ---- errors and statements ---- */

static bool conn_lost_code(unsigned e)
{
    return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST || e == CR_SERVER_LOST_EXTENDED ||
           e == CR_CONNECTION_ERROR || e == CR_CONN_HOST_ERROR || e == ER_CONNECTION_KILLED ||
           e == CR_COMMANDS_OUT_OF_SYNC;
}

/* Records the failure detail and maps the server code: a deadlock (the server rolled the whole
 * transaction back) or lock wait timeout → ROOST_ERETRY, which the caller answers by rolling back
 * and replaying its transaction; a lost connection → ROOST_ERETRY too (the next statement
 * reconnects); out of memory → ROOST_ENOMEM; anything else → ROOST_ESTORE. */
static int fail_code(struct mysql_store *b, unsigned e, const char *msg, const char *what)
{
    snprintf(b->err, sizeof b->err, "%s: %s (mysql %u)", what, msg, e);
    b->last_errno = e;
    if (e == ER_LOCK_DEADLOCK) {
        if (b->in_tx) {
            b->tx_aborted = true;
        }
        return ROOST_ERETRY;
    }
    if (e == ER_LOCK_WAIT_TIMEOUT) {
        return ROOST_ERETRY;
    }
    if (conn_lost_code(e)) {
        b->lost = true;
        return ROOST_ERETRY;
    }
    if (e == CR_OUT_OF_MEMORY || e == ER_OUTOFMEMORY || e == ER_OUT_OF_RESOURCES) {
        return ROOST_ENOMEM;
    }
    return ROOST_ESTORE;
}

static int fail_db(struct mysql_store *b, const char *what)
{
    return fail_code(b, mysql_errno(b->db), mysql_error(b->db), what);
}

static void close_stmts(struct mysql_store *b)
{
    for (int i = 0; i < S_COUNT; i++) {
        if (b->stmts[i] != NULL) {
            mysql_stmt_close(b->stmts[i]);
            b->stmts[i] = NULL;
        }
    }
}

/* Opens the connection with the session settings every statement here relies on. */
static MYSQL *connect_db(const struct store_mysql_url *u, unsigned lock_wait_s, char *err,
                         size_t errlen)
{
    MYSQL *db = mysql_init(NULL);
    if (db == NULL) {
        snprintf(err, errlen, "mysql_init: out of memory");
        return NULL;
    }
    char init[512];
    /* READ COMMITTED: no gap locks on the claim index (they block concurrent inserts), and
     * locking reads after a row lock see the latest commit (the idempotency check). Measured with
     * bench/mysql_isolation (2 producers, 2 claimers, one agent, MariaDB 10.11, 2 cores): on a
     * drained queue REPEATABLE READ halved publish and claim throughput (825/s vs 1789/s) and
     * doubled median publish latency; with a backlog its worst publish wait was 5x longer. */
    snprintf(init, sizeof init,
             "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,"
             "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION',"
             " SESSION tx_isolation = '%s', SESSION autocommit = 1,"
             " SESSION innodb_lock_wait_timeout = %u",
             u->repeatable_read ? "REPEATABLE-READ" : "READ-COMMITTED", lock_wait_s);
    unsigned connect_s = 10, io_s = 60;
    mysql_optionsv(db, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
    mysql_optionsv(db, MYSQL_OPT_READ_TIMEOUT, &io_s);
    mysql_optionsv(db, MYSQL_OPT_WRITE_TIMEOUT, &io_s);
    mysql_optionsv(db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    mysql_optionsv(db, MYSQL_INIT_COMMAND, init);
    bool sock = u->socket[0] != '\0';
    /* CLIENT_FOUND_ROWS: affected rows count matched rows, as SQLite's changes() does.
     * CLIENT_MULTI_STATEMENTS: the commit marker travels with its COMMIT (my_commit). */
    if (mysql_real_connect(db, sock ? NULL : u->host, u->user, u->pass, u->db, u->port,
                           sock ? u->socket : NULL,
                           CLIENT_FOUND_ROWS | CLIENT_MULTI_STATEMENTS) == NULL) {
        snprintf(err, errlen, "connect to %.200s/%.64s: %.200s (mysql %u)",
                 sock ? u->socket : u->host, u->db, mysql_error(db), mysql_errno(db));
        mysql_close(db);
        return NULL;
    }
    return db;
}

/* Reopens a dropped connection (outside a transaction only: the server already rolled an open
 * one back, and the caller must hear about that through ROOST_ERETRY). */
static int conn_ready(struct mysql_store *b)
{
    if (!b->lost) {
        return b->tx_aborted ? ROOST_ERETRY : ROOST_OK;
    }
    if (b->in_tx) {
        return ROOST_ERETRY;
    }
    close_stmts(b);
    if (b->db != NULL) {
        mysql_close(b->db);
        b->db = NULL;
    }
    b->db = connect_db(&b->url, b->lock_wait_s, b->err, sizeof b->err);
    if (b->db == NULL) {
        return ROOST_EUNAVAILABLE;
    }
    b->connected_mono_ms = time_mono_ms();
    b->lost = false;
    return ROOST_OK;
}

/* Runs a text statement that returns no rows. */
static int exec_text(struct mysql_store *b, const char *sql)
{
    int rc = conn_ready(b);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (mysql_real_query(b->db, sql, strlen(sql)) != 0) {
        return fail_db(b, sql);
    }
    MYSQL_RES *res = mysql_store_result(b->db);
    if (res != NULL) {
        mysql_free_result(res);
    }
    return ROOST_OK;
}

enum { P_NULL, P_INT, P_TEXT };
struct prm {
    int type;
    int64_t i;
    const char *s;
};
#define PI(v)                                                                                      \
    {                                                                                              \
        .type = P_INT, .i = (v)                                                                    \
    }
/* A text parameter; a NULL pointer binds SQL NULL. */
#define PS(v)                                                                                      \
    {                                                                                              \
        .type = (v) != NULL ? P_TEXT : P_NULL, .s = (v)                                            \
    }
/* An integer where 0 means "none" (NULL), as expires_at. */
#define PIN(v)                                                                                     \
    {                                                                                              \
        .type = (v) != 0 ? P_INT : P_NULL, .i = (v)                                                \
    }

/* A fetched result: every cell as NUL-terminated text (NULL for SQL NULL), row-major. */
struct rows {
    size_t n, cols, cap;
    char **cell;
    /* A byte budget on the rows kept (store_budget_take over column budget_col; max_bytes 0 =
     * none): fetching stops before the first row over it and sets `cut`; the rest of the result
     * is discarded unread into memory, so a page of large payloads never sits in memory whole. */
    size_t max_bytes, used;
    unsigned budget_col;
    bool cut;
};

/* Frees the cells and keeps the budget settings (q() clears `out` before every attempt). */
static void rows_free(struct rows *r)
{
    for (size_t i = 0; i < r->n * r->cols; i++) {
        free(r->cell[i]);
    }
    free(r->cell);
    size_t max_bytes = r->max_bytes;
    unsigned col = r->budget_col;
    memset(r, 0, sizeof *r);
    r->max_bytes = max_bytes;
    r->budget_col = col;
}

static const char *cell(const struct rows *r, size_t row, size_t col)
{
    return r->cell[row * r->cols + col];
}

static int64_t cell_i64(const struct rows *r, size_t row, size_t col)
{
    const char *v = cell(r, row, col);
    return v != NULL ? strtoll(v, NULL, 10) : 0;
}

static void cell_copy(const struct rows *r, size_t row, size_t col, char *dst, size_t cap)
{
    const char *v = cell(r, row, col);
    snprintf(dst, cap, "%s", v != NULL ? v : "");
}

static int cell_dup(const struct rows *r, size_t row, size_t col, char **out)
{
    const char *v = cell(r, row, col);
    *out = NULL;
    if (v == NULL) {
        return ROOST_OK;
    }
    /* malloc + memcpy, not strdup: ASan's strdup interceptor (GCC 12) copies into a failed
     * allocation instead of returning NULL, which the asan run of test_response_budget (memory
     * capped) hit here, where payloads are copied. */
    size_t n = strlen(v) + 1;
    if ((*out = malloc(n)) == NULL) {
        return ROOST_ENOMEM;
    }
    memcpy(*out, v, n);
    return ROOST_OK;
}

/* Fetches every row of the executed statement into out (text cells). */
static int fetch_all(struct mysql_store *b, MYSQL_STMT *s, unsigned nf, struct rows *out)
{
    MYSQL_BIND rb[32];
    char buf[32][64];
    unsigned long len[32];
    my_bool isnull[32], trunc[32];
    if (nf > 32) {
        snprintf(b->err, sizeof b->err, "result has %u columns", nf);
        return ROOST_EINTERNAL;
    }
    memset(rb, 0, sizeof rb);
    for (unsigned c = 0; c < nf; c++) {
        rb[c].buffer_type = MYSQL_TYPE_STRING;
        rb[c].buffer = buf[c];
        rb[c].buffer_length = sizeof buf[c];
        rb[c].length = &len[c];
        rb[c].is_null = &isnull[c];
        rb[c].error = &trunc[c];
    }
    if (mysql_stmt_bind_result(s, rb) != 0) {
        return fail_code(b, mysql_stmt_errno(s), mysql_stmt_error(s), "bind result");
    }
    out->cols = nf;
    for (;;) {
        int f = mysql_stmt_fetch(s);
        if (f == MYSQL_NO_DATA) {
            return ROOST_OK;
        }
        if (f == 1) {
            return fail_code(b, mysql_stmt_errno(s), mysql_stmt_error(s), "fetch");
        }
        if (out->max_bytes != 0 && out->budget_col < nf) {
            size_t bytes = isnull[out->budget_col] ? 0 : len[out->budget_col];
            if (!store_budget_take(&out->used, out->n, bytes, out->max_bytes)) {
                out->cut = true;
                return ROOST_OK; /* the caller's mysql_stmt_free_result drops the rest */
            }
        }
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 16;
            char **grown = realloc(out->cell, cap * nf * sizeof *grown);
            if (grown == NULL) {
                return ROOST_ENOMEM;
            }
            out->cell = grown;
            out->cap = cap;
        }
        char **row = &out->cell[out->n * nf];
        memset(row, 0, nf * sizeof *row);
        out->n++;
        for (unsigned c = 0; c < nf; c++) {
            if (isnull[c]) {
                continue;
            }
            char *v = malloc(len[c] + 1);
            if (v == NULL) {
                return ROOST_ENOMEM;
            }
            if (len[c] < sizeof buf[c]) {
                memcpy(v, buf[c], len[c]);
            } else {
                /* Longer than the inline buffer (payloads): fetch the whole column. */
                MYSQL_BIND one;
                unsigned long l2 = 0;
                memset(&one, 0, sizeof one);
                one.buffer_type = MYSQL_TYPE_STRING;
                one.buffer = v;
                one.buffer_length = len[c] + 1;
                one.length = &l2;
                if (mysql_stmt_fetch_column(s, &one, c, 0) != 0) {
                    free(v);
                    return fail_code(b, mysql_stmt_errno(s), mysql_stmt_error(s), "fetch column");
                }
            }
            v[len[c]] = '\0';
            row[c] = v;
        }
    }
}

/* Prepares (once), binds, executes statement `id`; rows go to out when it is not NULL. Outside a
 * transaction a statement is its own unit of work, so a lost connection or deadlock is retried
 * here (after reconnecting); inside one the caller must replay the whole transaction. */
static int q(struct mysql_store *b, enum stmt_id id, const struct prm *p, size_t np,
             struct rows *out)
{
    int rc = ROOST_OK;
    for (int attempt = 0; attempt < AUTOCOMMIT_TRIES; attempt++) {
        if (out != NULL) {
            rows_free(out);
        }
        if ((rc = conn_ready(b)) != ROOST_OK) {
            return rc;
        }
        MYSQL_STMT *s = b->stmts[id];
        if (s == NULL) {
            if ((s = mysql_stmt_init(b->db)) == NULL) {
                return ROOST_ENOMEM;
            }
            if (mysql_stmt_prepare(s, stmt_sql[id], strlen(stmt_sql[id])) != 0) {
                rc = fail_code(b, mysql_stmt_errno(s), mysql_stmt_error(s), stmt_sql[id]);
                mysql_stmt_close(s);
                goto retry;
            }
            b->stmts[id] = s;
        }
        if (mysql_stmt_param_count(s) != np || np > PARAM_MAX) {
            snprintf(b->err, sizeof b->err, "%s: %zu parameters bound", stmt_sql[id], np);
            return ROOST_EINTERNAL;
        }
        MYSQL_BIND bind[PARAM_MAX];
        unsigned long lens[PARAM_MAX];
        memset(bind, 0, sizeof bind);
        for (size_t i = 0; i < np; i++) {
            if (p[i].type == P_INT) {
                bind[i].buffer_type = MYSQL_TYPE_LONGLONG;
                bind[i].buffer = (void *)&p[i].i;
            } else if (p[i].type == P_TEXT) {
                lens[i] = (unsigned long)strlen(p[i].s);
                bind[i].buffer_type = MYSQL_TYPE_STRING;
                bind[i].buffer = (void *)p[i].s;
                bind[i].buffer_length = lens[i];
                bind[i].length = &lens[i];
            } else {
                bind[i].buffer_type = MYSQL_TYPE_NULL;
            }
        }
        if ((np > 0 && mysql_stmt_bind_param(s, bind) != 0) || mysql_stmt_execute(s) != 0) {
            rc = fail_code(b, mysql_stmt_errno(s), mysql_stmt_error(s), stmt_sql[id]);
            goto retry;
        }
        b->affected = mysql_stmt_affected_rows(s);
        b->insert_id = mysql_stmt_insert_id(s);
        unsigned nf = mysql_stmt_field_count(s);
        if (nf > 0) {
            struct rows scratch = {0};
            rc = fetch_all(b, s, nf, out != NULL ? out : &scratch);
            rows_free(&scratch);
            mysql_stmt_free_result(s);
            if (rc != ROOST_OK) {
                goto retry;
            }
        }
        return ROOST_OK;
    retry:
        if (rc != ROOST_ERETRY || b->in_tx) {
            return rc;
        }
    }
    return rc;
}

#define Q(b, id, params, out) q((b), (id), (params), sizeof(params) / sizeof((params)[0]), (out))

static enum store_status status_of_int(int64_t v)
{
    return v >= STORE_SCHEDULED && v <= STORE_EXPIRED ? (enum store_status)v : STORE_QUARANTINED;
}

/* Fills ev from row `r` whose EVCOLS start at column `c0`. */
static int row_to_event(const struct rows *rs, size_t r, size_t c0, struct store_event *ev)
{
    cell_copy(rs, r, c0 + 0, ev->event_id, sizeof ev->event_id);
    cell_copy(rs, r, c0 + 1, ev->agent_id, sizeof ev->agent_id);
    ev->seq = cell_i64(rs, r, c0 + 2);
    ev->status = status_of_int(cell_i64(rs, r, c0 + 3));
    ev->priority = (int)cell_i64(rs, r, c0 + 4);
    ev->created_at_ms = cell_i64(rs, r, c0 + 7);
    ev->available_at_ms = cell_i64(rs, r, c0 + 8);
    ev->expires_at_ms = cell_i64(rs, r, c0 + 9);
    cell_copy(rs, r, c0 + 10, ev->lease_token, sizeof ev->lease_token);
    cell_copy(rs, r, c0 + 11, ev->consumer, sizeof ev->consumer);
    ev->claimed_at_ms = cell_i64(rs, r, c0 + 12);
    ev->claim_expires_at_ms = cell_i64(rs, r, c0 + 13);
    ev->attempts = (int)cell_i64(rs, r, c0 + 14);
    ev->timeouts = (int)cell_i64(rs, r, c0 + 15);
    ev->nacks = (int)cell_i64(rs, r, c0 + 16);
    ev->completed_at_ms = cell_i64(rs, r, c0 + 18);
    if (cell_dup(rs, r, c0 + 5, &ev->correlation_id) != ROOST_OK ||
        cell_dup(rs, r, c0 + 6, &ev->payload) != ROOST_OK ||
        cell_dup(rs, r, c0 + 17, &ev->last_error) != ROOST_OK) {
        store_event_cleanup(ev);
        return ROOST_ENOMEM;
    }
    return ROOST_OK;
}

static int push_row(const struct rows *rs, size_t r, size_t c0, struct store_events *list)
{
    struct store_event *ev = store_events_push(list);
    if (ev == NULL) {
        return ROOST_ENOMEM;
    }
    if (row_to_event(rs, r, c0, ev) != ROOST_OK) {
        list->len--;
        return ROOST_ENOMEM;
    }
    return ROOST_OK;
}

static int agent_head(struct mysql_store *b, const char *tenant_id, const char *agent_id,
                      int64_t *head, int64_t *purged)
{
    struct rows rs = {0};
    struct prm p[] = {PS(tenant_id), PS(agent_id)};
    int rc = Q(b, S_AGENT_HEAD, p, &rs);
    if (rc == ROOST_OK) {
        *head = rs.n > 0 ? cell_i64(&rs, 0, 0) : 0;
        if (purged != NULL) {
            *purged = rs.n > 0 ? cell_i64(&rs, 0, 1) : 0;
        }
    }
    rows_free(&rs);
    return rc;
}

/* Records a change for the tailers of every node (in this transaction) and the local touch. */
static int change(struct mysql_store *b, const char *tenant_id, const char *agent_id, int64_t head,
                  int64_t now_ms, struct store_touches *touches)
{
    struct prm p[] = {PS(tenant_id), PS(agent_id), PI(head), PI(now_ms), PI(b->origin)};
    int rc = Q(b, S_CHANGE, p, NULL);
    if (rc == ROOST_OK && touches != NULL) {
        rc = store_touches_add(touches, tenant_id, agent_id, head);
    }
    return rc;
}

/* change() with the agent's current head. */
static int touch(struct mysql_store *b, const char *tenant_id, const char *agent_id, int64_t now_ms,
                 struct store_touches *touches)
{
    int64_t head;
    int rc = agent_head(b, tenant_id, agent_id, &head, NULL);
    return rc != ROOST_OK ? rc : change(b, tenant_id, agent_id, head, now_ms, touches);
}

/* ---- lifecycle ---- */

static int my_open(const char *url, const struct store_options *opt, struct store **out)
{
    *out = NULL;
    open_err[0] = '\0';
    struct mysql_store *b = calloc(1, sizeof *b);
    if (b == NULL) {
        return ROOST_ENOMEM;
    }
    b->base.ops = &store_mysql_ops;
    if (store_mysql_url_parse(url, &b->url) != ROOST_OK) {
        snprintf(open_err, sizeof open_err,
                 "expected mysql://USER[:PASS]@HOST[:PORT]/DB[?socket=PATH]");
        free(b);
        return ROOST_EINVAL;
    }
    b->origin = opt->origin;
    int wait_ms = opt->busy_timeout_ms > 0 ? opt->busy_timeout_ms : 5000;
    b->lock_wait_s = (unsigned)(wait_ms + 999) / 1000;
    b->db = connect_db(&b->url, b->lock_wait_s, open_err, sizeof open_err);
    if (b->db == NULL) {
        free(b);
        return ROOST_EUNAVAILABLE;
    }
    b->connected_mono_ms = time_mono_ms();
    snprintf(b->err, sizeof b->err, "no error");
    *out = &b->base;
    return ROOST_OK;
}

static void my_close(struct store *st)
{
    struct mysql_store *b = backend(st);
    if (b == NULL) {
        return;
    }
    close_stmts(b);
    if (b->db != NULL) {
        mysql_close(b->db);
    }
    free(b);
}

static const char *my_errmsg(struct store *st)
{
    return backend(st)->err;
}

/* False while the server is unreachable; reconnects when it is back. */
static bool my_ping(struct store *st)
{
    struct mysql_store *b = backend(st);
    if (!b->lost && mysql_ping(b->db) != 0) {
        fail_db(b, "ping");
        b->lost = true;
    }
    if (b->in_tx) {
        return !b->lost;
    }
    return conn_ready(b) == ROOST_OK;
}

/* Runs a text query whose first column of the first row is an integer (-1 for NULL/no row). */
static int text_int(struct mysql_store *b, const char *sql, int64_t *v)
{
    int rc = conn_ready(b);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (mysql_real_query(b->db, sql, strlen(sql)) != 0) {
        return fail_db(b, sql);
    }
    MYSQL_RES *res = mysql_store_result(b->db);
    if (res == NULL) {
        return fail_db(b, sql);
    }
    MYSQL_ROW row = mysql_fetch_row(res);
    *v = row != NULL && row[0] != NULL ? strtoll(row[0], NULL, 10) : -1;
    mysql_free_result(res);
    return ROOST_OK;
}

/* True when `piece` holds more than whitespace and "--" comment lines. */
static bool has_sql(const char *piece, size_t len)
{
    size_t i = 0;
    while (i < len) {
        while (i < len &&
               (piece[i] == ' ' || piece[i] == '\t' || piece[i] == '\r' || piece[i] == '\n')) {
            i++;
        }
        if (i + 1 < len && piece[i] == '-' && piece[i + 1] == '-') {
            while (i < len && piece[i] != '\n') {
                i++;
            }
            continue;
        }
        return i < len;
    }
    return false;
}

/* Runs one migration file: statements separated by lines that are exactly "-- statement". */
static int run_migration(struct mysql_store *b, const struct store_migration *m)
{
    static const char marker[] = "-- statement";
    const char *sql = m->sql;
    size_t start = 0, pos = 0, n = strlen(sql);
    while (pos <= n) {
        const char *nl = memchr(sql + pos, '\n', n - pos);
        size_t line_end = nl != NULL ? (size_t)(nl - sql) : n;
        size_t ll = line_end - pos;
        while (ll > 0 && (sql[pos + ll - 1] == '\r' || sql[pos + ll - 1] == ' ')) {
            ll--;
        }
        bool is_marker = ll == sizeof marker - 1 && memcmp(sql + pos, marker, ll) == 0;
        if (is_marker || nl == NULL) {
            size_t piece_end = is_marker ? pos : n;
            if (has_sql(sql + start, piece_end - start)) {
                if (mysql_real_query(b->db, sql + start, piece_end - start) != 0) {
                    char what[128];
                    snprintf(what, sizeof what, "migration %s", m->name);
                    return fail_db(b, what);
                }
                MYSQL_RES *res = mysql_store_result(b->db);
                if (res != NULL) {
                    mysql_free_result(res);
                }
            }
            start = line_end + 1;
        }
        if (nl == NULL) {
            break;
        }
        pos = line_end + 1;
    }
    return ROOST_OK;
}

/* Applies the embedded migrations not yet recorded. DDL commits implicitly in MySQL, so the
 * cross-process exclusion is a named lock, not a transaction. */
static int my_migrate(struct store *st)
{
    struct mysql_store *b = backend(st);
    int64_t got = -1;
    int rc = text_int(b, "SELECT GET_LOCK('roost_migrate', 30)", &got);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (got != 1) {
        snprintf(b->err, sizeof b->err, "migrate: another process holds roost_migrate");
        return ROOST_ERETRY;
    }
    rc = exec_text(b, "CREATE TABLE IF NOT EXISTS schema_migrations (version INT NOT NULL PRIMARY"
                      " KEY, name VARCHAR(255) NOT NULL, applied_at BIGINT NOT NULL)"
                      " ENGINE = InnoDB");
    for (size_t i = 0; rc == ROOST_OK && i < store_migrations_mysql_count; i++) {
        const struct store_migration *m = &store_migrations_mysql[i];
        struct rows rs = {0};
        struct prm check[] = {PI(m->version)};
        if ((rc = Q(b, S_MIG_CHECK, check, &rs)) != ROOST_OK) {
            break;
        }
        bool applied = rs.n > 0;
        rows_free(&rs);
        if (applied) {
            continue;
        }
        if ((rc = run_migration(b, m)) != ROOST_OK) {
            break;
        }
        struct prm rec[] = {PI(m->version), PS(m->name)};
        rc = Q(b, S_MIG_RECORD, rec, NULL);
    }
    int64_t released;
    text_int(b, "SELECT RELEASE_LOCK('roost_migrate')", &released);
    return rc;
}

/* ---- transactions ---- */

static int my_begin(struct store *st)
{
    struct mysql_store *b = backend(st);
    if (b->in_tx) {
        snprintf(b->err, sizeof b->err, "begin: a transaction is already open");
        return ROOST_EINTERNAL;
    }
    b->tx_aborted = false;
    int rc = exec_text(b, "START TRANSACTION");
    if (rc == ROOST_OK) {
        b->in_tx = true;
    }
    return rc;
}

/* ---- the commit whose answer was lost ----
 *
 * Every COMMIT goes out in one round trip with the insert of a fresh marker row:
 *
 *     INSERT INTO roost_commit_markers (marker) VALUES (x'<16 bytes>'); COMMIT
 *
 * The server stops a multi-statement at its first error, so the COMMIT runs only after the marker
 * is in: the transaction committed exactly when its marker row exists. When the answer does not
 * arrive (the connection dropped, or COMMIT failed in an unexpected way), the writer reconnects
 * and inserts the same marker itself, with fenced = 1, in autocommit:
 *   - it goes in: the transaction did not commit, and now never will (its own INSERT would fail
 *     as a duplicate, so its COMMIT cannot run) → ROOST_ERETRY: the group replays;
 *   - duplicate, fenced = 0: the transaction committed → ROOST_OK;
 *   - duplicate, fenced = 1: a fence of ours whose answer was lost too → not committed.
 * While the old session still holds its marker uncommitted, the fence waits for that row lock, so
 * it never races the old session. The old connection is KILLed first so that its locks go at
 * once rather than when the server notices the drop (the fence, not the KILL, is what makes the
 * answer right). Cost: no round trip, one small insert into an append-ordered key per commit. */

/* Writes the marker (6 bytes of `ms` big-endian, then 10 random bytes, or zeros when `random` is
 * false: the lowest marker of that millisecond) as 32 hex digits. */
static int marker_hex(int64_t ms, bool random, char hex[2 * MARKER_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char m[MARKER_LEN] = {0};
    for (int i = 0; i < 6; i++) {
        m[i] = (unsigned char)((uint64_t)ms >> (8 * (5 - i)));
    }
    if (random && ids_random(m + 6, MARKER_LEN - 6) != 0) {
        return ROOST_EINTERNAL;
    }
    for (int i = 0; i < MARKER_LEN; i++) {
        hex[2 * i] = digits[m[i] >> 4];
        hex[2 * i + 1] = digits[m[i] & 15];
    }
    hex[2 * MARKER_LEN] = '\0';
    return ROOST_OK;
}

/* Sends marker + COMMIT (every MARKER_PRUNE_EVERY-th time also the prune of old markers, which
 * runs after the COMMIT in autocommit and whose result does not matter). ROOST_OK: committed.
 * *unknown: the outcome must be resolved. Otherwise the marker insert failed on a live
 * connection: the COMMIT did not run and the transaction is still open (the caller rolls back). */
static int send_commit(struct mysql_store *b, const char *hex, bool *unknown)
{
    char sql[320];
    int n = snprintf(sql, sizeof sql,
                     "INSERT INTO roost_commit_markers (marker) VALUES (x'%s'); COMMIT", hex);
    if (++b->commits % MARKER_PRUNE_EVERY == 0) {
        char cut[2 * MARKER_LEN + 1];
        if (marker_hex(time_now_ms() - MARKER_KEEP_MS, false, cut) == ROOST_OK) {
            n += snprintf(sql + n, sizeof sql - (size_t)n,
                          "; DELETE FROM roost_commit_markers WHERE marker < x'%s' LIMIT %d", cut,
                          MARKER_PRUNE_LIMIT);
        }
    }
    *unknown = false;
    if (mysql_real_query(b->db, sql, (unsigned long)n) != 0) {
        unsigned e = mysql_errno(b->db);
        int rc = fail_db(b, "commit marker");
        /* Lost while sending or before the first answer: the server may have run it all. */
        *unknown = conn_lost_code(e);
        return rc;
    }
    int next = mysql_next_result(b->db); /* the COMMIT's answer */
    if (next != 0) {
        if (next > 0) {
            fail_db(b, "commit");
        } else {
            snprintf(b->err, sizeof b->err, "commit: no answer to COMMIT");
        }
        *unknown = true;
        return ROOST_EUNAVAILABLE;
    }
    /* Committed. Whatever follows is the prune: drain it; a lost connection shows next time. */
    while (mysql_more_results(b->db)) {
        next = mysql_next_result(b->db);
        if (next > 0) {
            fail_db(b, "commit marker prune");
            break;
        }
        MYSQL_RES *res = mysql_store_result(b->db);
        if (res != NULL) {
            mysql_free_result(res);
        }
    }
    return ROOST_OK;
}

/* KILLs the connection whose commit answer was lost, when it is still there as a session of our
 * user on our database and the server has been up since it opened (after a restart, or on
 * another server after a failover, the id may name someone else's session). Uptime counts whole
 * seconds, hence one second of slack: at worst another roostd session of this database, made by
 * a server that restarted within that second, loses its connection, which it survives. Failures
 * are ignored: the KILL only frees the old session's locks early. */
static void kill_old(struct mysql_store *b, unsigned long old_id, int64_t old_connected_ms)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %lu"
             " AND USER = SUBSTRING_INDEX(USER(), '@', 1) AND DB <=> DATABASE()"
             " AND (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
             " WHERE VARIABLE_NAME = 'UPTIME') * 1000 + 1000 >= %lld",
             old_id, (long long)(time_mono_ms() - old_connected_ms));
    int64_t same = 0;
    if (text_int(b, sql, &same) != ROOST_OK || same != 1) {
        return;
    }
    snprintf(sql, sizeof sql, "KILL CONNECTION %lu", old_id);
    if (mysql_real_query(b->db, sql, strlen(sql)) != 0 && mysql_errno(b->db) != ER_NO_SUCH_THREAD) {
        fail_db(b, "kill the connection that lost its commit answer");
    }
}

/* Learns whether the transaction with marker `hex` committed (see above): ROOST_OK it did,
 * ROOST_ERETRY it did not and never will, ROOST_EUNAVAILABLE the server stayed out of reach for
 * RESOLVE_MS, so nobody knows yet. */
static int resolve_commit(struct mysql_store *b, unsigned long old_id, int64_t old_connected_ms,
                          const char *hex)
{
    int64_t deadline = time_mono_ms() + RESOLVE_MS;
    long wait_ms = 20;
    bool killed = false;
    char sql[160];
    for (;;) {
        if (conn_ready(b) == ROOST_OK) {
            if (!killed) {
                kill_old(b, old_id, old_connected_ms);
                killed = true;
            }
            snprintf(sql, sizeof sql,
                     "INSERT INTO roost_commit_markers (marker, fenced) VALUES (x'%s', 1)", hex);
            if (!b->lost && mysql_real_query(b->db, sql, strlen(sql)) == 0) {
                snprintf(b->err, sizeof b->err,
                         "commit: the connection dropped before it committed");
                return ROOST_ERETRY;
            }
            if (!b->lost && mysql_errno(b->db) == ER_DUP_ENTRY) {
                int64_t fenced = -1;
                snprintf(sql, sizeof sql,
                         "SELECT fenced FROM roost_commit_markers WHERE marker = x'%s'", hex);
                if (text_int(b, sql, &fenced) == ROOST_OK && fenced == 0) {
                    return ROOST_OK;
                }
                if (fenced == 1) {
                    snprintf(b->err, sizeof b->err,
                             "commit: the connection dropped before it committed");
                    return ROOST_ERETRY;
                }
            } else if (!b->lost) {
                fail_db(b, "commit fence");
            }
        }
        if (time_mono_ms() >= deadline) {
            break;
        }
        struct timespec ts = {0, wait_ms * 1000000L};
        nanosleep(&ts, NULL);
        wait_ms = wait_ms < 500 ? wait_ms * 2 : 1000;
    }
    char why[sizeof b->err];
    snprintf(why, sizeof why, "%s", b->err);
    snprintf(b->err, sizeof b->err, "commit: answer lost, outcome unknown after %d s (%.400s)",
             RESOLVE_MS / 1000, why);
    return ROOST_EUNAVAILABLE;
}

/* ROOST_OK: committed. ROOST_ERETRY: certainly not committed (the caller replays). Another error:
 * not committed, transaction still open (the caller rolls back), except ROOST_EUNAVAILABLE after
 * a lost answer that could not be resolved. */
static int my_commit(struct store *st)
{
    struct mysql_store *b = backend(st);
    if (b->tx_aborted || b->lost) {
        /* COMMIT now would commit an empty autocommit session and hide the loss. */
        snprintf(b->err, sizeof b->err, "commit: the transaction was rolled back by the server");
        return ROOST_ERETRY;
    }
    char hex[2 * MARKER_LEN + 1];
    if (marker_hex(time_now_ms(), true, hex) != ROOST_OK) {
        snprintf(b->err, sizeof b->err, "commit: no random bytes for the marker");
        return ROOST_EINTERNAL;
    }
    bool unknown = false;
    int rc = send_commit(b, hex, &unknown);
    if (!unknown) {
        if (rc == ROOST_OK) {
            b->in_tx = false;
        }
        return rc;
    }
    /* A connection in an unknown state is never used again: the server rolls back whatever it
     * still holds when it goes. */
    unsigned long old_id = mysql_thread_id(b->db);
    b->in_tx = false;
    b->lost = true;
    return resolve_commit(b, old_id, b->connected_mono_ms, hex);
}

static int my_rollback(struct store *st)
{
    struct mysql_store *b = backend(st);
    b->in_tx = false;
    bool aborted = b->tx_aborted;
    b->tx_aborted = false;
    if (b->lost || aborted) {
        /* Nothing open on the server (a deadlock rolled it back); ROLLBACK is harmless anyway. */
        return b->lost ? ROOST_OK : exec_text(b, "ROLLBACK");
    }
    return exec_text(b, "ROLLBACK");
}

static int my_savepoint(struct store *st)
{
    return exec_text(backend(st), "SAVEPOINT roost_req");
}

static int my_savepoint_release(struct store *st)
{
    return exec_text(backend(st), "RELEASE SAVEPOINT roost_req");
}

static int my_savepoint_rollback(struct store *st)
{
    struct mysql_store *b = backend(st);
    int rc = exec_text(b, "ROLLBACK TO SAVEPOINT roost_req");
    return rc != ROOST_OK ? rc : exec_text(b, "RELEASE SAVEPOINT roost_req");
}

/* ---- publish ---- */

static int str_cmp(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

static int publish_one(struct mysql_store *b, const struct store_publish_req *req,
                       const struct store_publish_item *it, const char *agent_id,
                       struct store_published *o, struct store_touches *changes)
{
    struct rows rs = {0};
    int rc;
    memset(o, 0, sizeof *o);
    snprintf(o->agent_id, sizeof o->agent_id, "%s", agent_id);
    if (it->idempotency_key != NULL) {
        /* Lock the agent first: a concurrent publish with the same key then waits here and finds
         * this one's row, instead of both inserting and one failing on the unique index. */
        struct prm lk[] = {PS(req->tenant_id), PS(agent_id), PI(req->now_ms), PI(req->now_ms)};
        if ((rc = Q(b, S_AGENT_LOCK, lk, NULL)) != ROOST_OK) {
            return rc;
        }
        struct prm p[] = {PS(req->tenant_id), PS(agent_id), PS(it->idempotency_key)};
        if ((rc = Q(b, S_IDEM_FIND, p, &rs)) != ROOST_OK) {
            return rc;
        }
        if (rs.n > 0) {
            cell_copy(&rs, 0, 0, o->event_id, sizeof o->event_id);
            o->seq = cell_i64(&rs, 0, 1);
            o->duplicate = true;
            rows_free(&rs);
            return ROOST_OK;
        }
        rows_free(&rs);
    }
    struct prm alloc[] = {PS(req->tenant_id), PS(agent_id), PI(req->now_ms), PI(req->now_ms)};
    if ((rc = Q(b, S_SEQ_ALLOC, alloc, NULL)) != ROOST_OK) {
        return rc;
    }
    if (b->insert_id < 2) {
        snprintf(b->err, sizeof b->err, "publish: sequence allocation returned %llu",
                 (unsigned long long)b->insert_id);
        return ROOST_ESTORE;
    }
    o->seq = (int64_t)b->insert_id - 1;
    if (ids_event_id(req->now_ms, o->event_id) != 0) {
        snprintf(b->err, sizeof b->err, "publish: no randomness for the event id");
        return ROOST_EINTERNAL;
    }
    bool scheduled = it->available_at_ms > req->now_ms;
    struct prm ins[] = {
        PS(req->tenant_id),
        PS(agent_id),
        PI(o->seq),
        PS(o->event_id),
        PI(scheduled ? STORE_SCHEDULED : STORE_PENDING),
        PI(it->priority),
        PS(it->correlation_id),
        PS(it->idempotency_key),
        PS(it->payload != NULL ? it->payload : "{}"),
        PI(req->now_ms),
        PI(scheduled ? it->available_at_ms : req->now_ms),
        PIN(it->expires_at_ms),
    };
    if ((rc = Q(b, S_INBOX_INSERT, ins, NULL)) != ROOST_OK) {
        return rc;
    }
    if (it->state_patch != NULL) {
        struct prm pp[] = {PS(it->state_patch), PI(o->seq), PI(req->now_ms), PS(req->tenant_id),
                           PS(agent_id)};
        if ((rc = Q(b, S_STATE_PATCH, pp, NULL)) != ROOST_OK) {
            return rc;
        }
    }
    return store_touches_add(changes, req->tenant_id, agent_id, o->seq);
}

/* Creates the tenant row when missing. A plain read first: INSERT IGNORE on an existing row takes
 * a shared lock every publisher of the tenant would hold until its commit. */
static int tenant_ensure(struct mysql_store *b, const char *tenant_id, int64_t now_ms)
{
    if (strcmp(b->known_tenant, tenant_id) == 0) {
        return ROOST_OK;
    }
    struct rows rs = {0};
    struct prm fp[] = {PS(tenant_id)};
    int rc = Q(b, S_TENANT_FIND, fp, &rs);
    bool found = rc == ROOST_OK && rs.n > 0;
    rows_free(&rs);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (found) {
        snprintf(b->known_tenant, sizeof b->known_tenant, "%s", tenant_id);
        return ROOST_OK;
    }
    struct prm tp[] = {PS(tenant_id), PI(now_ms)};
    return Q(b, S_TENANT_ENSURE, tp, NULL);
}

/* Recipients of an item are handled in sorted agent_id order (the lock order of DESIGN §4.2); a
 * request with several items first locks all its agents in one sorted pass, so two fan-outs never
 * wait on each other in a cycle. A recipient listed twice gets one row. */
static int my_publish(struct store *st, const struct store_publish_req *req,
                      struct store_published *out, struct store_touches *touches)
{
    struct mysql_store *b = backend(st);
    struct store_touches changes = {0};
    struct store_recipient *order = NULL;
    const char **all = NULL;
    size_t order_cap = 0, base = 0;
    int rc = tenant_ensure(b, req->tenant_id, req->now_ms);
    if (rc != ROOST_OK) {
        goto out;
    }
    if (req->n_items > 1) {
        size_t total = 0;
        for (size_t i = 0; i < req->n_items; i++) {
            total += req->items[i].n_recipients;
        }
        if ((all = malloc((total ? total : 1) * sizeof *all)) == NULL) {
            rc = ROOST_ENOMEM;
            goto out;
        }
        size_t k = 0;
        for (size_t i = 0; i < req->n_items; i++) {
            for (size_t j = 0; j < req->items[i].n_recipients; j++) {
                all[k++] = req->items[i].recipients[j];
            }
        }
        qsort(all, total, sizeof *all, str_cmp);
        for (size_t j = 0; j < total; j++) {
            if (j > 0 && strcmp(all[j - 1], all[j]) == 0) {
                continue;
            }
            struct prm lk[] = {PS(req->tenant_id), PS(all[j]), PI(req->now_ms), PI(req->now_ms)};
            if ((rc = Q(b, S_AGENT_LOCK, lk, NULL)) != ROOST_OK) {
                goto out;
            }
        }
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
            if ((rc = publish_one(b, req, it, order[k].agent_id, o, &changes)) != ROOST_OK) {
                goto out;
            }
        }
        base += n;
    }
    /* One change row per agent, with its highest new head. */
    for (size_t i = 0; i < changes.len && rc == ROOST_OK; i++) {
        const struct store_touch *t = &changes.items[i];
        rc = change(b, t->tenant_id, t->agent_id, t->head, req->now_ms, touches);
    }
out:
    store_touches_cleanup(&changes);
    free(order);
    free(all);
    return rc;
}

/* ---- reads ---- */

/* Seqs above purged_through_seq are dense (allocation and row commit together; retention deletes
 * prefixes only), so a missing seq in the page is a transaction that already released the agent's
 * row lock but is not yet visible to new snapshots: InnoDB releases locks before the commit becomes
 * visible, and under load the next publisher's row shows first (test_mysql_store's
 * producers/follower test caught it). The page stops before the hole and the head is capped
 * there, as a snapshot taken a moment earlier would show; that commit's touch comes after it. */
static int my_inbox_read(struct store *st, const char *tenant_id, const char *agent_id,
                         int64_t after_cursor, size_t limit, size_t max_bytes,
                         struct store_inbox_page *page)
{
    struct mysql_store *b = backend(st);
    /* Column 8 is i.payload (two head columns, then EVCOLS_I). */
    struct rows rs = {.max_bytes = max_bytes, .budget_col = 8};
    page->has_more = false;
    page->next_cursor = after_cursor;
    page->head = 0;
    page->oldest_cursor = 0;
    int64_t lim = limit > 100000 ? 100001 : (int64_t)limit + 1;
    struct prm p[] = {PI(after_cursor), PS(tenant_id), PS(agent_id), PI(lim)};
    int rc = Q(b, S_READ, p, &rs);
    if (rc != ROOST_OK || rs.n == 0) {
        goto out;
    }
    page->head = cell_i64(&rs, 0, 0);
    page->oldest_cursor = cell_i64(&rs, 0, 1);
    if (after_cursor < page->oldest_cursor) {
        rc = ROOST_EGONE;
        goto out;
    }
    int64_t expect = after_cursor + 1;
    size_t r = 0;
    for (; r < rs.n; r++) {
        if (cell(&rs, r, 2) == NULL) {
            break; /* the agent without events (the LEFT JOIN's empty side) */
        }
        if (cell_i64(&rs, r, 4) != expect) {
            page->head = expect - 1; /* a commit not yet visible: stop before it */
            break;
        }
        expect++;
        if (limit == 0) {
            break;
        }
        if (r == limit) {
            page->has_more = true;
            break;
        }
        if ((rc = push_row(&rs, r, 2, &page->events)) != ROOST_OK) {
            goto out;
        }
        page->next_cursor = page->events.items[page->events.len - 1].seq;
    }
    if (rc == ROOST_OK && rs.cut && r == rs.n && limit > 0) {
        page->has_more = true; /* every row kept was used: the page ended at the byte budget */
    }
    if (rc == ROOST_OK && !page->has_more && limit > 0 && page->head > expect - 1) {
        /* Fewer rows than the head promises: the next one is not visible yet either. */
        page->head = expect - 1;
    }
out:
    rows_free(&rs);
    return rc;
}

static int my_state_get(struct store *st, const char *tenant_id, const char *agent_id, char **state,
                        int64_t *cursor)
{
    struct mysql_store *b = backend(st);
    struct rows rs = {0};
    *state = NULL;
    *cursor = 0;
    struct prm p[] = {PS(tenant_id), PS(agent_id)};
    int rc = Q(b, S_STATE_GET, p, &rs);
    if (rc == ROOST_OK && rs.n > 0) {
        *cursor = cell_i64(&rs, 0, 1);
        rc = cell_dup(&rs, 0, 0, state);
    }
    if (rc == ROOST_OK && *state == NULL && (*state = strdup("{}")) == NULL) {
        rc = ROOST_ENOMEM;
    }
    rows_free(&rs);
    return rc;
}

static int my_head(struct store *st, const char *tenant_id, const char *agent_id, int64_t *head)
{
    return agent_head(backend(st), tenant_id, agent_id, head, NULL);
}

/* ---- leases ---- */

static int my_claim(struct store *st, const char *tenant_id, const char *agent_id, size_t limit,
                    size_t max_bytes, int64_t lease_s, const char *consumer, int64_t now_ms,
                    struct store_events *out, bool *has_more)
{
    struct mysql_store *b = backend(st);
    /* Column 6 is the payload (EVCOLS). Rows past the budget stay locked by this transaction
     * until it ends, but are not updated: no lease, no attempt. */
    struct rows rs = {.max_bytes = max_bytes, .budget_col = 6};
    if (has_more != NULL) {
        *has_more = false;
    }
    if (limit == 0) {
        return ROOST_OK;
    }
    struct prm p[] = {PS(tenant_id), PS(agent_id), PI(now_ms),
                      PI(limit > 100000 ? 100000 : (int64_t)limit)};
    int rc = Q(b, S_CLAIM_SELECT, p, &rs);
    if (rc != ROOST_OK) {
        goto out;
    }
    if (has_more != NULL) {
        *has_more = rs.cut || rs.n == limit;
    }
    /* The rows are locked by this transaction, so each update by primary key matches. */
    for (size_t r = 0; r < rs.n; r++) {
        char token[STORE_LEASE_TOKEN_LEN + 1];
        if (ids_lease_token(token) != 0) {
            snprintf(b->err, sizeof b->err, "claim: no randomness for the lease token");
            rc = ROOST_EINTERNAL;
            goto out;
        }
        const char *who = consumer != NULL ? consumer : "";
        int64_t seq = cell_i64(&rs, r, 2);
        struct prm up[] = {PS(token),     PS(who),      PI(now_ms), PI(now_ms + lease_s * 1000),
                           PS(tenant_id), PS(agent_id), PI(seq)};
        if ((rc = Q(b, S_CLAIM_UPDATE, up, NULL)) != ROOST_OK) {
            goto out;
        }
        if (b->affected != 1) {
            continue;
        }
        if ((rc = push_row(&rs, r, 0, out)) != ROOST_OK) {
            goto out;
        }
        struct store_event *ev = &out->items[out->len - 1];
        ev->status = STORE_CLAIMED;
        snprintf(ev->lease_token, sizeof ev->lease_token, "%s", token);
        snprintf(ev->consumer, sizeof ev->consumer, "%s", who);
        ev->claimed_at_ms = now_ms;
        ev->claim_expires_at_ms = now_ms + lease_s * 1000;
        ev->attempts++;
    }
    /* The agent was seen (admin view): at most one write a minute per agent. */
    uint64_t key = 1469598103934665603ULL;
    for (const char *c = tenant_id; *c != '\0'; c++) {
        key = (key ^ (unsigned char)*c) * 1099511628211ULL;
    }
    key = (key ^ '/') * 1099511628211ULL;
    for (const char *c = agent_id; *c != '\0'; c++) {
        key = (key ^ (unsigned char)*c) * 1099511628211ULL;
    }
    struct seen_slot *slot = &b->seen[key % (sizeof b->seen / sizeof b->seen[0])];
    if (slot->key != key || now_ms - slot->at_ms >= 60000) {
        struct prm sp[] = {PI(now_ms), PS(tenant_id), PS(agent_id), PI(now_ms)};
        if ((rc = Q(b, S_SEEN, sp, NULL)) == ROOST_OK) {
            slot->key = key;
            slot->at_ms = now_ms;
        }
    }
out:
    rows_free(&rs);
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

static int lease_find(struct mysql_store *b, const char *tenant_id, const char *agent_id,
                      const char *event_id, struct lease_row *row)
{
    struct rows rs = {0};
    struct prm p[] = {PS(event_id), PS(tenant_id), PS(agent_id)};
    int rc = Q(b, S_EVENT_FIND, p, &rs);
    if (rc == ROOST_OK && rs.n == 0) {
        rc = ROOST_EEVENTNOTFOUND;
    }
    if (rc == ROOST_OK) {
        row->seq = cell_i64(&rs, 0, 0);
        row->status = (int)cell_i64(&rs, 0, 1);
        cell_copy(&rs, 0, 2, row->lease_token, sizeof row->lease_token);
        row->attempts = (int)cell_i64(&rs, 0, 3);
        row->claimed_at_ms = cell_i64(&rs, 0, 4);
        row->claim_expires_at_ms = cell_i64(&rs, 0, 5);
    }
    rows_free(&rs);
    return rc;
}

static bool token_eq(const struct lease_row *row, const char *lease_token)
{
    return lease_token != NULL && row->lease_token[0] != '\0' &&
           strcmp(row->lease_token, lease_token) == 0;
}

static int my_ack(struct store *st, const char *tenant_id, const char *agent_id,
                  const char *event_id, const char *lease_token, int64_t now_ms,
                  int64_t *available_at_ms)
{
    struct mysql_store *b = backend(st);
    struct lease_row row;
    if (available_at_ms != NULL) {
        *available_at_ms = 0;
    }
    struct prm p[] = {PI(now_ms), PS(event_id), PS(tenant_id), PS(agent_id), PS(lease_token)};
    int rc = Q(b, S_ACK, p, NULL);
    if (rc == ROOST_OK && b->affected == 1 && available_at_ms != NULL) {
        /* No UPDATE … RETURNING in MariaDB: the row is ours (locked) until COMMIT. */
        struct rows rs = {0};
        struct prm ap[] = {PS(event_id), PS(tenant_id)};
        if ((rc = Q(b, S_ACK_AVAIL, ap, &rs)) == ROOST_OK && rs.n == 1) {
            *available_at_ms = cell_i64(&rs, 0, 0);
        }
        rows_free(&rs);
        return rc;
    }
    if (rc != ROOST_OK || b->affected == 1) {
        return rc;
    }
    /* Nothing changed: tell a repeated ack, a stale token and an unknown event apart. */
    if ((rc = lease_find(b, tenant_id, agent_id, event_id, &row)) != ROOST_OK) {
        return rc;
    }
    return row.status == STORE_COMPLETED && token_eq(&row, lease_token) ? ROOST_OK
                                                                        : ROOST_ELEASEMISMATCH;
}

static int my_release(struct store *st, const char *tenant_id, const char *agent_id,
                      const char *event_id, const char *lease_token,
                      enum store_release_reason reason, int64_t delay_s, const char *error,
                      int max_attempts, int64_t now_ms, struct store_touches *touches,
                      enum store_status *new_status)
{
    struct mysql_store *b = backend(st);
    struct lease_row row;
    int rc = lease_find(b, tenant_id, agent_id, event_id, &row);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (row.status != STORE_CLAIMED || !token_eq(&row, lease_token)) {
        return ROOST_ELEASEMISMATCH;
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
    struct prm p[] = {PI(to),        PI(available_at), PI(nack),    PS(error),
                      PS(tenant_id), PS(agent_id),     PI(row.seq), PS(lease_token)};
    if ((rc = Q(b, S_RELEASE_UPDATE, p, NULL)) != ROOST_OK) {
        return rc;
    }
    if (b->affected != 1) {
        return ROOST_ELEASEMISMATCH;
    }
    if (new_status != NULL) {
        *new_status = to;
    }
    return to == STORE_PENDING ? touch(b, tenant_id, agent_id, now_ms, touches) : ROOST_OK;
}

static int my_extend(struct store *st, const char *tenant_id, const char *agent_id,
                     const char *event_id, const char *lease_token, int64_t lease_s,
                     int64_t max_total_s, int64_t now_ms, int64_t *claim_expires_at_ms)
{
    struct mysql_store *b = backend(st);
    struct lease_row row;
    int rc = lease_find(b, tenant_id, agent_id, event_id, &row);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (row.status != STORE_CLAIMED || !token_eq(&row, lease_token) ||
        row.claim_expires_at_ms <= now_ms) {
        return ROOST_ELEASEMISMATCH;
    }
    int64_t want = now_ms + lease_s * 1000;
    int64_t cap = row.claimed_at_ms + max_total_s * 1000;
    int64_t next = want < cap ? want : cap;
    if (next <= row.claim_expires_at_ms) {
        if (claim_expires_at_ms != NULL) {
            *claim_expires_at_ms = row.claim_expires_at_ms;
        }
        return ROOST_ELEASECAP;
    }
    struct prm p[] = {PI(next), PS(tenant_id), PS(agent_id), PI(row.seq), PS(lease_token)};
    if ((rc = Q(b, S_EXTEND_UPDATE, p, NULL)) != ROOST_OK) {
        return rc;
    }
    if (b->affected != 1) {
        return ROOST_ELEASEMISMATCH;
    }
    if (claim_expires_at_ms != NULL) {
        *claim_expires_at_ms = next;
    }
    return ROOST_OK;
}

/* consumer NULL releases every lease of the agent; "" those claimed without a consumer id. */
static int my_release_all(struct store *st, const char *tenant_id, const char *agent_id,
                          const char *consumer, int64_t now_ms, size_t *released,
                          struct store_touches *touches)
{
    struct mysql_store *b = backend(st);
    struct rows rs = {0};
    int rc;
    *released = 0;
    if (consumer != NULL) {
        struct prm p[] = {PS(tenant_id), PS(agent_id), PS(consumer)};
        rc = Q(b, S_RELEASE_ALL_SELECT, p, &rs);
    } else {
        struct prm p[] = {PS(tenant_id), PS(agent_id)};
        rc = Q(b, S_RELEASE_ALL_ANY_SELECT, p, &rs);
    }
    for (size_t r = 0; rc == ROOST_OK && r < rs.n; r++) {
        struct prm up[] = {PS(tenant_id), PS(agent_id), PI(cell_i64(&rs, r, 0))};
        if ((rc = Q(b, S_RELEASE_ALL_UPDATE, up, NULL)) == ROOST_OK) {
            *released += (size_t)b->affected;
        }
    }
    if (rc == ROOST_OK && *released > 0) {
        rc = touch(b, tenant_id, agent_id, now_ms, touches);
    }
    rows_free(&rs);
    return rc;
}

/* ---- scheduler ---- */

static int my_scavenge(struct store *st, int64_t now_ms, int max_attempts, size_t limit,
                       size_t *count, size_t *quarantined, struct store_touches *touches)
{
    struct mysql_store *b = backend(st);
    struct store_touches agents = {0};
    struct rows rs = {0};
    *count = 0;
    *quarantined = 0;
    if (limit == 0) {
        return ROOST_OK;
    }
    struct prm p[] = {PI(now_ms), PI(limit > 100000 ? 100000 : (int64_t)limit)};
    int rc = Q(b, S_SCAV_SELECT, p, &rs);
    for (size_t r = 0; rc == ROOST_OK && r < rs.n; r++) {
        /* attempts cannot change while the lease read holds, so the target is decided here. */
        int64_t attempts = cell_i64(&rs, r, 4);
        int to = max_attempts > 0 && attempts >= max_attempts ? STORE_QUARANTINED : STORE_PENDING;
        struct prm up[] = {PI(to),
                           PS(cell(&rs, r, 0)),
                           PS(cell(&rs, r, 1)),
                           PI(cell_i64(&rs, r, 2)),
                           PS(cell(&rs, r, 3)),
                           PI(now_ms)};
        if ((rc = Q(b, S_SCAV_UPDATE, up, NULL)) != ROOST_OK || b->affected != 1) {
            continue; /* the lease moved on since we read it */
        }
        (*count)++;
        if (to == STORE_QUARANTINED) {
            (*quarantined)++;
        } else {
            rc = store_touches_add(&agents, cell(&rs, r, 0), cell(&rs, r, 1), 0);
        }
    }
    for (size_t i = 0; rc == ROOST_OK && i < agents.len; i++) {
        rc = touch(b, agents.items[i].tenant_id, agents.items[i].agent_id, now_ms, touches);
    }
    store_touches_cleanup(&agents);
    rows_free(&rs);
    return rc;
}

static int my_promote_due(struct store *st, int64_t now_ms, size_t limit, size_t *count,
                          struct store_touches *touches)
{
    struct mysql_store *b = backend(st);
    struct store_touches agents = {0};
    struct rows rs = {0};
    *count = 0;
    if (limit == 0) {
        return ROOST_OK;
    }
    struct prm p[] = {PI(now_ms), PI(limit > 100000 ? 100000 : (int64_t)limit)};
    int rc = Q(b, S_PROMOTE_SELECT, p, &rs);
    for (size_t r = 0; rc == ROOST_OK && r < rs.n; r++) {
        struct prm up[] = {PS(cell(&rs, r, 0)), PS(cell(&rs, r, 1)), PI(cell_i64(&rs, r, 2))};
        if ((rc = Q(b, S_PROMOTE_UPDATE, up, NULL)) != ROOST_OK || b->affected != 1) {
            continue;
        }
        (*count)++;
        rc = store_touches_add(&agents, cell(&rs, r, 0), cell(&rs, r, 1), 0);
    }
    for (size_t i = 0; rc == ROOST_OK && i < agents.len; i++) {
        rc = touch(b, agents.items[i].tenant_id, agents.items[i].agent_id, now_ms, touches);
    }
    store_touches_cleanup(&agents);
    rows_free(&rs);
    return rc;
}

static int my_expire(struct store *st, int64_t now_ms, size_t limit, size_t *count)
{
    struct mysql_store *b = backend(st);
    *count = 0;
    if (limit == 0) {
        return ROOST_OK;
    }
    struct prm p[] = {PI(now_ms), PI(now_ms), PI(limit > 100000 ? 100000 : (int64_t)limit)};
    int rc = Q(b, S_EXPIRE, p, NULL);
    if (rc == ROOST_OK) {
        *count = (size_t)b->affected;
    }
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

static int retain_agent(struct mysql_store *b, const struct store_retention_req *req,
                        const struct agent_ref *a, size_t budget, struct doomed *rows,
                        size_t *deleted, size_t *archived)
{
    struct rows rs = {0};
    size_t n = 0;
    *deleted = 0;
    /* Several nodes run retention at once: the agent row lock makes one of them own this agent
     * until its COMMIT, and the others pass it by (SKIP LOCKED) instead of archiving the same rows
     * again. A publisher holding the lock just defers the agent to the next round. */
    struct prm lp[] = {PS(a->tenant_id), PS(a->agent_id)};
    int rc = Q(b, S_RET_LOCK_AGENT, lp, &rs);
    bool owned = rc == ROOST_OK && rs.n == 1;
    rows_free(&rs);
    if (rc != ROOST_OK || !owned) {
        return rc;
    }
    struct prm p[] = {PS(a->tenant_id), PS(a->agent_id), PI((int64_t)budget)};
    rc = Q(b, S_RET_ROWS, p, &rs);
    if (rc != ROOST_OK) {
        return rc;
    }
    for (size_t r = 0; r < rs.n; r++) {
        int status = (int)cell_i64(&rs, r, 1);
        if (!store_retention_deletable(req, (enum store_status)status, cell_i64(&rs, r, 2),
                                       cell_i64(&rs, r, 3))) {
            break; /* the prefix ends at the first row that must stay */
        }
        rows[n].seq = cell_i64(&rs, r, 0);
        rows[n].archive = status != STORE_COMPLETED;
        n++;
    }
    rows_free(&rs);
    if (n == 0) {
        return ROOST_OK;
    }
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].archive || req->archive == NULL) {
            continue;
        }
        struct store_event ev;
        memset(&ev, 0, sizeof ev);
        struct prm ep[] = {PS(a->tenant_id), PS(a->agent_id), PI(rows[i].seq)};
        if ((rc = Q(b, S_EVENT_BY_SEQ, ep, &rs)) != ROOST_OK) {
            return rc;
        }
        if (rs.n == 0) {
            rows_free(&rs);
            continue;
        }
        rc = row_to_event(&rs, 0, 0, &ev);
        rows_free(&rs);
        if (rc != ROOST_OK) {
            return rc;
        }
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
    struct prm dp[] = {PS(a->tenant_id), PS(a->agent_id), PI(through)};
    if ((rc = Q(b, S_RET_DELETE, dp, NULL)) != ROOST_OK) {
        return rc;
    }
    struct prm wp[] = {PI(through), PS(a->tenant_id), PS(a->agent_id)};
    if ((rc = Q(b, S_RET_PURGED, wp, NULL)) != ROOST_OK) {
        return rc;
    }
    *deleted = n;
    return ROOST_OK;
}

/* Walks the agents in (tenant, agent) order inside one savepoint, so a failing archive callback
 * leaves every row and watermark as it was; also prunes the tailers' change log. */
static int my_retention(struct store *st, const struct store_retention_req *req,
                        struct store_retention_result *res)
{
    struct mysql_store *b = backend(st);
    struct agent_ref *agents = NULL;
    struct doomed *rows = NULL;
    struct agent_ref after = {{0}, {0}};
    struct rows rs = {0};
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
    int rc = exec_text(b, "SAVEPOINT roost_retention");
    if (rc != ROOST_OK) {
        goto out;
    }
    struct prm pp[] = {PI(req->now_ms - CHANGES_KEEP_MS), PI((int64_t)req->batch)};
    /* Old change rows go in a batch this node locks first (SKIP LOCKED): a node pruning at the
     * same time takes the next batch instead of waiting for this one's COMMIT. */
    if ((rc = Q(b, S_CHANGES_OLD, pp, &rs)) != ROOST_OK) {
        goto fail;
    }
    struct prm dp[] = {PI(rs.n ? cell_i64(&rs, 0, 0) : 0), PI(rs.n ? cell_i64(&rs, 0, 1) : -1),
                       PI(req->now_ms - CHANGES_KEEP_MS)};
    rows_free(&rs);
    if ((rc = Q(b, S_CHANGES_PRUNE, dp, NULL)) != ROOST_OK) {
        goto fail;
    }
    for (;;) {
        struct prm ap[] = {PS(after.tenant_id), PS(after.agent_id), PI(RETENTION_AGENT_PAGE)};
        if ((rc = Q(b, S_RET_AGENTS, ap, &rs)) != ROOST_OK) {
            goto fail;
        }
        size_t n = rs.n < RETENTION_AGENT_PAGE ? rs.n : RETENTION_AGENT_PAGE;
        for (size_t i = 0; i < n; i++) {
            cell_copy(&rs, i, 0, agents[i].tenant_id, sizeof agents[i].tenant_id);
            cell_copy(&rs, i, 1, agents[i].agent_id, sizeof agents[i].agent_id);
        }
        rows_free(&rs);
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
    rc = exec_text(b, "RELEASE SAVEPOINT roost_retention");
    goto out;
fail:
    if (rc != ROOST_ERETRY) {
        exec_text(b, "ROLLBACK TO SAVEPOINT roost_retention");
        exec_text(b, "RELEASE SAVEPOINT roost_retention");
    }
    memset(res, 0, sizeof *res);
out:
    rows_free(&rs);
    free(agents);
    free(rows);
    return rc;
}

/* ---- admin ---- */

static int my_quarantine_list(struct store *st, const char *tenant_id, const char *agent_id,
                              const char *after_agent, int64_t after_seq, size_t limit,
                              struct store_events *out, bool *has_more)
{
    struct mysql_store *b = backend(st);
    struct rows rs = {0};
    bool one_agent = agent_id != NULL && agent_id[0] != '\0';
    const char *after = after_agent != NULL ? after_agent : "";
    int64_t lim = limit > 100000 ? 100001 : (int64_t)limit + 1;
    int rc;
    *has_more = false;
    if (limit == 0) {
        return ROOST_OK;
    }
    if (one_agent) {
        /* One agent: the (agent_id, seq) position reduces to a seq bound. */
        int c = strcmp(after, agent_id);
        int64_t bound = c < 0 ? -1 : c == 0 ? after_seq : INT64_MAX;
        struct prm p[] = {PS(tenant_id), PS(agent_id), PI(bound), PI(lim)};
        rc = Q(b, S_QLIST_AGENT, p, &rs);
    } else {
        struct prm p[] = {PS(tenant_id), PS(after), PI(after_seq), PI(lim)};
        rc = Q(b, S_QLIST_ALL, p, &rs);
    }
    for (size_t r = 0; rc == ROOST_OK && r < rs.n; r++) {
        if (r == limit) {
            *has_more = true;
            break;
        }
        rc = push_row(&rs, r, 0, out);
    }
    rows_free(&rs);
    return rc;
}

static int my_requeue(struct store *st, const char *tenant_id, const char *event_id, int64_t now_ms,
                      struct store_touches *touches)
{
    struct mysql_store *b = backend(st);
    struct rows rs = {0};
    char agent_id[STORE_ID_MAX + 1];
    struct prm p[] = {PS(event_id), PS(tenant_id)};
    int rc = Q(b, S_REQ_FIND, p, &rs);
    if (rc != ROOST_OK) {
        goto out;
    }
    if (rs.n == 0) {
        rc = ROOST_EEVENTNOTFOUND;
        goto out;
    }
    cell_copy(&rs, 0, 0, agent_id, sizeof agent_id);
    int64_t status = cell_i64(&rs, 0, 1);
    if (status != STORE_QUARANTINED && status != STORE_EXPIRED) {
        rc = ROOST_ESTATE;
        goto out;
    }
    struct prm up[] = {PI(now_ms), PI(now_ms), PS(event_id), PS(tenant_id)};
    if ((rc = Q(b, S_REQ_UPDATE, up, NULL)) != ROOST_OK) {
        goto out;
    }
    if (b->affected != 1) {
        rc = ROOST_ESTATE; /* changed since we read it */
        goto out;
    }
    rc = touch(b, tenant_id, agent_id, now_ms, touches);
out:
    rows_free(&rs);
    return rc;
}

static int my_agents_list(struct store *st, const char *tenant_id, enum store_agents_sort sort,
                          const char *after_agent, int64_t offset, size_t limit, int64_t now_ms,
                          struct store_agent_stats *out, size_t *n, bool *has_more)
{
    struct mysql_store *b = backend(st);
    struct rows rs = {0};
    (void)now_ms;
    *n = 0;
    *has_more = false;
    if (limit == 0) {
        return ROOST_OK;
    }
    int64_t lim = limit > 100000 ? 100001 : (int64_t)limit + 1;
    int rc;
    if (sort == STORE_SORT_AGENT) {
        struct prm p[] = {PS(tenant_id), PS(after_agent != NULL ? after_agent : ""), PI(lim)};
        rc = Q(b, S_AGENTS_LIST, p, &rs);
    } else {
        struct prm p[] = {PS(tenant_id), PI(lim), PI(offset < 0 ? 0 : offset)};
        rc = Q(b, sort == STORE_SORT_DEPTH ? S_AGENTS_BY_DEPTH : S_AGENTS_BY_AGE, p, &rs);
    }
    for (size_t r = 0; rc == ROOST_OK && r < rs.n; r++) {
        if (*n == limit) {
            *has_more = true;
            break;
        }
        struct store_agent_stats *a = &out[(*n)++];
        memset(a, 0, sizeof *a);
        cell_copy(&rs, r, 0, a->agent_id, sizeof a->agent_id);
        a->head = cell_i64(&rs, r, 1);
        a->purged_through_seq = cell_i64(&rs, r, 2);
        a->pending = cell_i64(&rs, r, 3);
        a->scheduled = cell_i64(&rs, r, 4);
        a->claimed = cell_i64(&rs, r, 5);
        a->quarantined = cell_i64(&rs, r, 6);
        a->oldest_pending_ms = cell_i64(&rs, r, 7);
        a->last_seen_ms = cell_i64(&rs, r, 8);
    }
    rows_free(&rs);
    return rc;
}

static int my_event_get(struct store *st, const char *tenant_id, const char *event_id,
                        struct store_event *out)
{
    struct mysql_store *b = backend(st);
    struct rows rs = {0};
    struct store_events one = {0};
    struct prm p[] = {PS(tenant_id), PS(event_id)};
    int rc = Q(b, S_EVENT_GET, p, &rs);
    if (rc == ROOST_OK && rs.n == 0) {
        rc = ROOST_EEVENTNOTFOUND;
    }
    if (rc == ROOST_OK && (rc = push_row(&rs, 0, 0, &one)) == ROOST_OK) {
        *out = one.items[0]; /* moves the heap members */
        one.len = 0;
    }
    store_events_cleanup(&one);
    rows_free(&rs);
    return rc;
}

static int my_quarantine_purge(struct store *st, const char *tenant_id, const char *agent_id,
                               const char *event_id, size_t limit, size_t *purged)
{
    struct mysql_store *b = backend(st);
    int64_t lim = limit > 100000 ? 100000 : (int64_t)limit;
    int rc;
    *purged = 0;
    if (event_id != NULL) {
        struct prm p[] = {PS(tenant_id), PS(event_id)};
        rc = Q(b, S_PURGE_ONE, p, NULL);
    } else if (agent_id != NULL) {
        struct prm p[] = {PS(tenant_id), PS(agent_id), PI(lim)};
        rc = Q(b, S_PURGE_AGENT, p, NULL);
    } else {
        struct prm p[] = {PS(tenant_id), PI(lim)};
        rc = Q(b, S_PURGE_ALL, p, NULL);
    }
    if (rc != ROOST_OK) {
        return rc;
    }
    *purged = (size_t)b->affected;
    if (event_id != NULL && *purged == 0) {
        /* Tell an unknown event from one in another status. */
        struct rows rs = {0};
        struct prm p[] = {PS(event_id), PS(tenant_id)};
        if ((rc = Q(b, S_REQ_FIND, p, &rs)) == ROOST_OK) {
            rc = rs.n == 1 ? ROOST_ESTATE : ROOST_EEVENTNOTFOUND;
        }
        rows_free(&rs);
    }
    return rc;
}

/* Four grouped reads, one per status, then the top agents. They run as separate statements
 * (READ COMMITTED outside a transaction), so totals may straddle a commit: gauges refreshed every
 * second tolerate that, and no query holds a snapshot open across the others. */
static int my_metrics_snapshot(struct store *st, int64_t now_ms,
                               struct store_metrics_snapshot *snap)
{
    struct mysql_store *b = backend(st);
    static const int by_status[] = {S_MET_PENDING, S_MET_SCHEDULED, S_MET_CLAIMED,
                                    S_MET_QUARANTINED};
    static const enum store_status statuses[] = {STORE_PENDING, STORE_SCHEDULED, STORE_CLAIMED,
                                                 STORE_QUARANTINED};
    struct rows rs = {0};
    int rc = ROOST_OK;
    (void)now_ms;
    snap->n_tenants = snap->n_agents = 0;
    snap->truncated = false;
    for (size_t k = 0; k < sizeof by_status / sizeof by_status[0] && rc == ROOST_OK; k++) {
        if ((rc = q(b, by_status[k], NULL, 0, &rs)) != ROOST_OK) {
            break;
        }
        for (size_t r = 0; r < rs.n; r++) {
            const char *tid = cell(&rs, r, 0);
            store_metrics_add(snap, tid != NULL ? tid : "", statuses[k], cell_i64(&rs, r, 1),
                              cell_i64(&rs, r, 2));
        }
        rows_free(&rs);
    }
    store_metrics_sort_tenants(snap);
    if (rc == ROOST_OK && snap->max_agents > 0) {
        struct prm p[] = {PI((int64_t)snap->max_agents)};
        if ((rc = Q(b, S_MET_AGENTS, p, &rs)) == ROOST_OK) {
            for (size_t r = 0; r < rs.n && snap->n_agents < snap->max_agents; r++) {
                struct store_metrics_agent *a = &snap->agents[snap->n_agents++];
                cell_copy(&rs, r, 0, a->tenant_id, sizeof a->tenant_id);
                cell_copy(&rs, r, 1, a->agent_id, sizeof a->agent_id);
                a->pending = cell_i64(&rs, r, 2);
            }
        }
        rows_free(&rs);
    }
    return rc;
}

/* ---- signature keys and nonces ---- */

static int my_key_add(struct store *st, const char *tenant_id, const struct store_key *key,
                      int64_t now_ms)
{
    struct mysql_store *b = backend(st);
    struct prm p[] = {PS(tenant_id),
                      PS(key->key_id),
                      PS(key->agent_id),
                      PS(key->alg),
                      PS(key->material != NULL ? key->material : ""),
                      PI(now_ms)};
    int rc = Q(b, S_KEY_ADD, p, NULL);
    /* A duplicate key rolls back only the statement (InnoDB), the transaction goes on. */
    if (rc == ROOST_ESTORE && b->last_errno == ER_DUP_ENTRY) {
        rc = ROOST_EKEYEXISTS;
    }
    return rc;
}

/* Fills the metadata columns (0..4) of a key row. */
static void row_to_key(const struct rows *rs, size_t r, struct store_key *k)
{
    cell_copy(rs, r, 0, k->key_id, sizeof k->key_id);
    cell_copy(rs, r, 1, k->agent_id, sizeof k->agent_id);
    cell_copy(rs, r, 2, k->alg, sizeof k->alg);
    k->created_at_ms = cell_i64(rs, r, 3);
    k->revoked_at_ms = cell_i64(rs, r, 4);
    k->material = NULL;
}

static int my_key_get(struct store *st, const char *tenant_id, const char *key_id,
                      struct store_key *out)
{
    struct mysql_store *b = backend(st);
    struct rows rs = {0};
    memset(out, 0, sizeof *out);
    struct prm p[] = {PS(tenant_id), PS(key_id)};
    int rc = Q(b, S_KEY_GET, p, &rs);
    if (rc == ROOST_OK && rs.n == 0) {
        rc = ROOST_EKEYNOTFOUND;
    }
    if (rc == ROOST_OK) {
        row_to_key(&rs, 0, out);
        rc = cell_dup(&rs, 0, 5, &out->material);
        if (rc == ROOST_OK && out->material == NULL) {
            rc = ROOST_ESTORE;
        }
    }
    rows_free(&rs);
    return rc;
}

static int my_key_list(struct store *st, const char *tenant_id, const char *after_key, size_t limit,
                       struct store_key *out, size_t *n, bool *has_more)
{
    struct mysql_store *b = backend(st);
    struct rows rs = {0};
    *n = 0;
    *has_more = false;
    if (limit == 0) {
        return ROOST_OK;
    }
    int64_t lim = limit > 100000 ? 100001 : (int64_t)limit + 1;
    struct prm p[] = {PS(tenant_id), PS(after_key != NULL ? after_key : ""), PI(lim)};
    int rc = Q(b, S_KEY_LIST, p, &rs);
    for (size_t r = 0; rc == ROOST_OK && r < rs.n; r++) {
        if (*n == limit) {
            *has_more = true;
            break;
        }
        struct store_key *k = &out[(*n)++];
        memset(k, 0, sizeof *k);
        row_to_key(&rs, r, k);
    }
    rows_free(&rs);
    return rc;
}

static int my_key_revoke(struct store *st, const char *tenant_id, const char *key_id,
                         int64_t now_ms)
{
    struct mysql_store *b = backend(st);
    struct prm p[] = {PI(now_ms), PS(tenant_id), PS(key_id)};
    int rc = Q(b, S_KEY_REVOKE, p, NULL);
    if (rc == ROOST_OK && b->affected == 0) {
        rc = ROOST_EKEYNOTFOUND;
    }
    return rc;
}

/* An expired row is deleted first; then the insert either wins or meets a live row (a concurrent
 * claim of the same nonce on another node waits on its row lock, then sees the duplicate). */
static int my_nonce_claim(struct store *st, const char *tenant_id, const char *key_id,
                          const char *nonce, int64_t expires_at_ms, int64_t now_ms)
{
    struct mysql_store *b = backend(st);
    struct prm del[] = {PS(tenant_id), PS(key_id), PS(nonce), PI(now_ms)};
    int rc = Q(b, S_NONCE_EXPIRED_DELETE, del, NULL);
    if (rc != ROOST_OK) {
        return rc;
    }
    struct prm ins[] = {PS(tenant_id), PS(key_id), PS(nonce), PI(expires_at_ms)};
    rc = Q(b, S_NONCE_INSERT, ins, NULL);
    if (rc == ROOST_ESTORE && b->last_errno == ER_DUP_ENTRY) {
        rc = ROOST_ENONCEREUSED;
    }
    return rc;
}

static int my_nonce_prune(struct store *st, int64_t now_ms, size_t limit, size_t *count)
{
    struct mysql_store *b = backend(st);
    *count = 0;
    if (limit == 0) {
        return ROOST_OK;
    }
    struct prm p[] = {PI(now_ms), PI(limit > 100000 ? 100000 : (int64_t)limit)};
    int rc = Q(b, S_NONCE_PRUNE, p, NULL);
    if (rc == ROOST_OK) {
        *count = (size_t)b->affected;
    }
    return rc;
}

/* ---- tailer ---- */

static int gap_add(struct store_tail_pos *pos, int64_t id, int64_t now_ms)
{
    if (pos->n_gaps == TAIL_GAPS_MAX) {
        /* Bounded: the oldest gap is the one least likely to fill. */
        memmove(pos->gaps, pos->gaps + 1, (pos->n_gaps - 1) * sizeof *pos->gaps);
        pos->n_gaps--;
    }
    if (pos->n_gaps == pos->cap_gaps) {
        size_t cap = pos->cap_gaps ? pos->cap_gaps * 2 : 16;
        struct store_tail_gap *grown = realloc(pos->gaps, cap * sizeof *grown);
        if (grown == NULL) {
            return ROOST_ENOMEM;
        }
        pos->gaps = grown;
        pos->cap_gaps = cap;
    }
    pos->gaps[pos->n_gaps++] = (struct store_tail_gap){.id = id, .since_ms = now_ms};
    return ROOST_OK;
}

static int tail_row(const struct mysql_store *b, const struct rows *rs, size_t r,
                    struct store_touches *touches)
{
    const char *t = cell(rs, r, 1), *a = cell(rs, r, 2);
    if (t == NULL || a == NULL || (b->origin != 0 && cell_i64(rs, r, 4) == b->origin)) {
        return ROOST_OK; /* our own commit: pinged when it committed */
    }
    return store_touches_add(touches, t, a, cell_i64(rs, r, 3));
}

/* Re-checks the open gaps (ids passed over while their transaction was still open), then reads
 * what committed above the high mark; ids skipped there become gaps. Every statement runs in
 * autocommit at READ COMMITTED, so each sees the latest commits. */
static int my_tail(struct store *st, struct store_tail_pos *pos, int64_t now_ms,
                   struct store_touches *touches)
{
    struct mysql_store *b = backend(st);
    struct rows rs = {0};
    int rc = ROOST_OK;
    if (b->in_tx) {
        snprintf(b->err, sizeof b->err, "tail: must run outside a transaction");
        return ROOST_EINTERNAL;
    }
    if (!pos->started) {
        /* Start at the end of the log; ids just below it that are not committed yet belong to
         * transactions still open, so they start out as gaps rather than as seen. */
        if ((rc = q(b, S_TAIL_MAX, NULL, 0, &rs)) != ROOST_OK) {
            rows_free(&rs);
            return rc;
        }
        int64_t end = rs.n > 0 ? cell_i64(&rs, 0, 0) : 0;
        rows_free(&rs);
        int64_t from = end > TAIL_START_WINDOW ? end - TAIL_START_WINDOW : 0;
        struct prm p[] = {PI(from), PI(TAIL_START_WINDOW)};
        if ((rc = Q(b, S_TAIL_SCAN, p, &rs)) != ROOST_OK) {
            rows_free(&rs);
            return rc;
        }
        int64_t next = from + 1;
        for (size_t r = 0; r < rs.n && rc == ROOST_OK; r++) {
            int64_t id = cell_i64(&rs, r, 0);
            for (; next < id && rc == ROOST_OK; next++) {
                rc = gap_add(pos, next, now_ms);
            }
            next = id + 1;
        }
        rows_free(&rs);
        pos->high = next - 1 > end ? next - 1 : end;
        pos->started = rc == ROOST_OK;
        return rc;
    }
    /* Gaps too old to fill any more (rolled back, or pruned) are dropped. */
    size_t keep = 0;
    for (size_t i = 0; i < pos->n_gaps; i++) {
        if (now_ms - pos->gaps[i].since_ms < STORE_TAIL_GAP_MS) {
            pos->gaps[keep++] = pos->gaps[i];
        }
    }
    pos->n_gaps = keep;
    for (size_t i = 0; i < pos->n_gaps && rc == ROOST_OK; i += TAIL_GAP_BATCH) {
        struct prm p[TAIL_GAP_BATCH];
        for (size_t k = 0; k < TAIL_GAP_BATCH; k++) {
            p[k] = (struct prm)PI(i + k < pos->n_gaps ? pos->gaps[i + k].id : -1);
        }
        if ((rc = q(b, S_TAIL_GAPS, p, TAIL_GAP_BATCH, &rs)) != ROOST_OK) {
            break;
        }
        for (size_t r = 0; r < rs.n && rc == ROOST_OK; r++) {
            rc = tail_row(b, &rs, r, touches);
            int64_t id = cell_i64(&rs, r, 0);
            for (size_t k = i; k < i + TAIL_GAP_BATCH && k < pos->n_gaps; k++) {
                if (pos->gaps[k].id == id) {
                    pos->gaps[k].id = 0; /* filled: compacted away below */
                }
            }
        }
        rows_free(&rs);
    }
    keep = 0;
    for (size_t i = 0; i < pos->n_gaps; i++) {
        if (pos->gaps[i].id != 0) {
            pos->gaps[keep++] = pos->gaps[i];
        }
    }
    pos->n_gaps = keep;
    for (;;) {
        struct prm p[] = {PI(pos->high), PI(TAIL_PAGE)};
        if (rc != ROOST_OK || (rc = Q(b, S_TAIL_SCAN, p, &rs)) != ROOST_OK) {
            break;
        }
        for (size_t r = 0; r < rs.n && rc == ROOST_OK; r++) {
            int64_t id = cell_i64(&rs, r, 0);
            for (int64_t g = pos->high + 1; g < id && rc == ROOST_OK; g++) {
                rc = gap_add(pos, g, now_ms);
            }
            if (id > pos->high) {
                pos->high = id;
            }
            if (rc == ROOST_OK) {
                rc = tail_row(b, &rs, r, touches);
            }
        }
        bool full = rs.n == TAIL_PAGE;
        rows_free(&rs);
        if (!full) {
            break;
        }
    }
    rows_free(&rs);
    return rc;
}

const struct store_ops store_mysql_ops = {
    .scheme = "mysql",
    .open = my_open,
    .close = my_close,
    .migrate = my_migrate,
    .errmsg = my_errmsg,
    .ping = my_ping,
    .begin = my_begin,
    .commit = my_commit,
    .rollback = my_rollback,
    .savepoint = my_savepoint,
    .savepoint_release = my_savepoint_release,
    .savepoint_rollback = my_savepoint_rollback,
    .publish = my_publish,
    .inbox_read = my_inbox_read,
    .claim = my_claim,
    .ack = my_ack,
    .release = my_release,
    .extend = my_extend,
    .release_all = my_release_all,
    .state_get = my_state_get,
    .head = my_head,
    .scavenge = my_scavenge,
    .promote_due = my_promote_due,
    .expire = my_expire,
    .retention = my_retention,
    .quarantine_list = my_quarantine_list,
    .requeue = my_requeue,
    .agents_list = my_agents_list,
    .event_get = my_event_get,
    .quarantine_purge = my_quarantine_purge,
    .metrics_snapshot = my_metrics_snapshot,
    .tail = my_tail,
    .key_add = my_key_add,
    .key_get = my_key_get,
    .key_list = my_key_list,
    .key_revoke = my_key_revoke,
    .nonce_claim = my_nonce_claim,
    .nonce_prune = my_nonce_prune,
};
