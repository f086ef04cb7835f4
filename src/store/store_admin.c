/* SPDX-License-Identifier: MIT */
/* Admin and stats (store_ops.h), written once: event reads, the quarantine's list, requeue and
 * purge, each operation with its statements in every dialect beside it. */
#include <stdio.h>
#include <string.h>

#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

static int on_event(void *arg, struct store_row *row)
{
    return store_row_push_event(row, arg);
}

STORE_STMT(EVENT_GET, "SELECT " EVCOLS " FROM inbox WHERE event_id = ?2 AND tenant_id = ?1",
           "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ? AND event_id = ?",
           "SELECT " EVCOLS " FROM inbox WHERE event_id = ?2 AND tenant_id = ?1");

int store_admin_event_get(struct store *st, const char *tenant_id, const char *event_id,
                          struct store_event *out)
{
    struct store_events one = {0};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(event_id)};
    int rc = store_run(st, EVENT_GET, p, on_event, &one, NULL);
    if (rc == ROOST_OK && one.len == 0) {
        rc = ROOST_EEVENTNOTFOUND;
    }
    if (rc == ROOST_OK) {
        *out = one.items[0]; /* moves the heap members */
        one.len = 0;
    }
    store_events_cleanup(&one);
    return rc;
}

#define CORRELATION_LIMIT_MAX 1000

/* SQLite walks the partial index inbox_correlation (tenant, correlation, agent, seq); MariaDB
 * inbox_correlation (correlation_id), whose entries end with the primary key (tenant, agent,
 * seq), so the tenant match and the order come from the index too. */
STORE_STMT(EVENTS_BY_CORRELATION,
           "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ?2 AND correlation_id = ?1"
           " AND (agent_id > ?3 OR (agent_id = ?3 AND seq > ?5)) ORDER BY agent_id, seq LIMIT ?6",
           "SELECT " EVCOLS " FROM inbox FORCE INDEX (inbox_correlation) WHERE correlation_id = ?"
           " AND tenant_id = ? AND (agent_id > ? OR (agent_id = ? AND seq > ?))"
           " ORDER BY agent_id, seq LIMIT ?",
           "SELECT " EVCOLS " FROM inbox WHERE correlation_id = ?1 AND tenant_id = ?2"
           " AND (agent_id, seq) > (?3, ?5) ORDER BY agent_id, seq LIMIT ?6");

struct page {
    struct store_events *out;
    size_t limit, n;
    bool has_more;
};

static int on_page_event(void *arg, struct store_row *row)
{
    struct page *pg = arg;
    if (pg->n == pg->limit) {
        pg->has_more = true;
        return ROOST_OK;
    }
    pg->n++;
    return store_row_push_event(row, pg->out);
}

int store_admin_events_by_correlation(struct store *st, const char *tenant_id,
                                      const char *correlation_id, const char *after_agent,
                                      int64_t after_seq, size_t limit, struct store_events *out,
                                      bool *has_more)
{
    *has_more = false;
    size_t n = correlation_id != NULL ? strlen(correlation_id) : 0;
    if (n == 0 || n > STORE_SHORT_TEXT_MAX || limit == 0 || limit > CORRELATION_LIMIT_MAX ||
        after_agent == NULL) {
        return ROOST_EINVAL;
    }
    struct page pg = {.out = out, .limit = limit};
    /* In MySQL's order (positional); SQLite's text numbers them and leaves ?4 (the repeat) unused.
     */
    struct store_param p[] = {ARG_T(correlation_id), ARG_T(tenant_id), ARG_T(after_agent),
                              ARG_T(after_agent),    ARG_I(after_seq), ARG_I((int64_t)limit + 1)};
    int rc = store_run(st, EVENTS_BY_CORRELATION, p, on_page_event, &pg, NULL);
    *has_more = rc == ROOST_OK && pg.has_more;
    return rc;
}

/* ---- the quarantine: list, requeue, purge ---- */

/* event_id, tenant: the event's agent and status (any status). */
STORE_STMT_SAME(EVENT_LOCATE,
                "SELECT agent_id, status FROM inbox WHERE event_id = ? AND tenant_id = ?");

struct located {
    char *agent_id; /* STORE_ID_MAX + 1 */
    enum store_status *status;
    bool found;
};

static int on_located(void *arg, struct store_row *row)
{
    struct located *l = arg;
    const char *agent = row->text(row, 0);
    snprintf(l->agent_id, STORE_ID_MAX + 1, "%s", agent != NULL ? agent : "");
    *l->status = store_status_of(row->i64(row, 1));
    l->found = true;
    return ROOST_OK;
}

/* The event's agent and status; *found false when the tenant has no such id. */
static int event_locate(struct store *st, const char *tenant_id, const char *event_id,
                        char agent_id[STORE_ID_MAX + 1], enum store_status *status, bool *found)
{
    struct located l = {.agent_id = agent_id, .status = status};
    struct store_param p[] = {ARG_T(event_id), ARG_T(tenant_id)};
    int rc = store_run(st, EVENT_LOCATE, p, on_located, &l, NULL);
    *found = rc == ROOST_OK && l.found;
    return rc;
}

/* now, now, event_id, tenant: a quarantined or expired event back to pending (attempts 0, lease
 * cleared). A requeued event whose TTL has passed would expire again at once: its TTL is
 * dropped. */
STORE_STMT(REQUEUE_UPDATE,
           "UPDATE inbox SET status = " ST_PENDING ", attempts = 0, lease_token = NULL,"
           " claim_expires_at = NULL, completed_at = NULL, available_at = ?1,"
           " expires_at = CASE WHEN expires_at <= ?1 THEN NULL ELSE expires_at END"
           " WHERE event_id = ?3 AND tenant_id = ?4 AND status IN (" ST_QUARANTINED ", " ST_EXPIRED
           ")",
           "UPDATE inbox SET status = " ST_PENDING ", attempts = 0, lease_token = NULL,"
           " claim_expires_at = NULL, completed_at = NULL,"
           " expires_at = CASE WHEN expires_at <= ? THEN NULL ELSE expires_at END,"
           " available_at = ? WHERE event_id = ? AND tenant_id = ? AND status IN (" ST_QUARANTINED
           ", " ST_EXPIRED ")",
           "UPDATE inbox SET status = " ST_PENDING ", attempts = 0, lease_token = NULL,"
           " claim_expires_at = NULL, completed_at = NULL, available_at = ?1,"
           " expires_at = CASE WHEN expires_at <= ?1 THEN NULL ELSE expires_at END"
           " WHERE event_id = ?3 AND tenant_id = ?4 AND status IN (" ST_QUARANTINED ", " ST_EXPIRED
           ")");

static int requeue_update(struct store *st, const char *tenant_id, const char *event_id,
                          int64_t now_ms, bool *changed)
{
    struct store_param p[] = {ARG_I(now_ms), ARG_I(now_ms), ARG_T(event_id), ARG_T(tenant_id)};
    int64_t n = 0;
    int rc = store_run(st, REQUEUE_UPDATE, p, NULL, NULL, &n);
    *changed = rc == ROOST_OK && n == 1;
    return rc;
}

/* The tenant's quarantine in (agent_id, seq) order after a position: tenant, after_agent,
 * after_agent, after_seq, limit. MySQL walks inbox_open: ready_priority is NULL on every
 * quarantined row, so (agent_id, ready_priority DESC, seq) is (agent_id, seq) order with no sort
 * step, and "ready_priority IS NULL" pins that key part for a range on seq. */
STORE_STMT(QUARANTINE_ALL,
           "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ?1 AND status = " ST_QUARANTINED
           " AND (agent_id, seq) > (?2, ?4) ORDER BY agent_id, seq LIMIT ?5",
           "SELECT " EVCOLS " FROM inbox WHERE open_state = " ST_QUARANTINED
           " AND tenant_id = ? AND agent_id >= ? AND (agent_id > ? OR seq > ?)"
           " ORDER BY agent_id, ready_priority DESC, seq LIMIT ?",
           "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ?1 AND status = " ST_QUARANTINED
           " AND (agent_id, seq) > (?2, ?4) ORDER BY agent_id, seq LIMIT ?5");
/* One agent after a seq bound (the operation reduces the position to it), no sort: tenant,
 * agent, seq bound, limit. */
STORE_STMT(QUARANTINE_AGENT,
           "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ? AND status = " ST_QUARANTINED
           " AND agent_id = ? AND seq > ? ORDER BY seq LIMIT ?",
           "SELECT " EVCOLS " FROM inbox WHERE open_state = " ST_QUARANTINED
           " AND tenant_id = ? AND agent_id = ? AND ready_priority IS NULL AND seq > ?"
           " ORDER BY seq LIMIT ?",
           "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ? AND status = " ST_QUARANTINED
           " AND agent_id = ? AND seq > ? ORDER BY seq LIMIT ?");

/* Appends up to `limit` quarantined rows of the tenant in (agent_id, seq) order after
 * (after_agent, after_seq); with agent_id (not NULL), that agent's rows with seq > after_seq. */
static int quarantine_select(struct store *st, const char *tenant_id, const char *agent_id,
                             const char *after_agent, int64_t after_seq, int64_t limit,
                             struct store_events *out)
{
    if (agent_id != NULL) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(after_seq),
                                  ARG_I(limit)};
        return store_run(st, QUARANTINE_AGENT, p, on_event, out, NULL);
    }
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(after_agent), ARG_T(after_agent),
                              ARG_I(after_seq), ARG_I(limit)};
    return store_run(st, QUARANTINE_ALL, p, on_event, out, NULL);
}

/* Purges: tenant, event_id; tenant, agent, limit; tenant, limit. */
STORE_STMT(PURGE_ONE,
           "DELETE FROM inbox WHERE event_id = ?2 AND tenant_id = ?1"
           " AND status = " ST_QUARANTINED,
           "DELETE FROM inbox WHERE tenant_id = ? AND event_id = ? AND status = " ST_QUARANTINED,
           "DELETE FROM inbox WHERE event_id = ?2 AND tenant_id = ?1"
           " AND status = " ST_QUARANTINED);
STORE_STMT(PURGE_AGENT,
           "DELETE FROM inbox WHERE rowid IN (SELECT rowid FROM inbox"
           " WHERE tenant_id = ? AND agent_id = ? AND status = " ST_QUARANTINED " LIMIT ?)",
           "DELETE FROM inbox WHERE open_state = " ST_QUARANTINED
           " AND tenant_id = ? AND agent_id = ? ORDER BY ready_priority DESC, seq LIMIT ?",
           "DELETE FROM inbox WHERE ctid = ANY(ARRAY(SELECT ctid FROM inbox WHERE tenant_id = ?"
           " AND agent_id = ? AND status = " ST_QUARANTINED
           " LIMIT ?)) AND status = " ST_QUARANTINED);
STORE_STMT(PURGE_ALL,
           "DELETE FROM inbox WHERE rowid IN (SELECT rowid FROM inbox"
           " WHERE tenant_id = ? AND status = " ST_QUARANTINED " LIMIT ?)",
           "DELETE FROM inbox WHERE open_state = " ST_QUARANTINED " AND tenant_id = ?"
           " ORDER BY agent_id, ready_priority DESC, seq LIMIT ?",
           "DELETE FROM inbox WHERE ctid = ANY(ARRAY(SELECT ctid FROM inbox WHERE tenant_id = ?"
           " AND status = " ST_QUARANTINED " LIMIT ?)) AND status = " ST_QUARANTINED);

/* Before a purge: each agent's gaps_through_seq raised to its highest quarantined seq in the
 * purge's scope (tenant, event_id; tenant, agent; tenant), so the rows deleted leave gaps a cursor
 * read knows are gone for good (store_inbox.c). Every seq below a quarantined one committed long
 * before it was claimed and quarantined, so no commit still on its way hides under the mark. */
#define GAPS_MARK_SQLITE(where)                                                                    \
    "UPDATE agents SET gaps_through_seq = max(gaps_through_seq, q.m) FROM (SELECT tenant_id,"      \
    " agent_id, MAX(seq) AS m FROM inbox WHERE " where " AND status = " ST_QUARANTINED             \
    " GROUP BY tenant_id, agent_id) AS q WHERE agents.tenant_id = q.tenant_id"                     \
    " AND agents.agent_id = q.agent_id"
#define GAPS_MARK_MYSQL(where)                                                                     \
    "UPDATE agents a JOIN (SELECT tenant_id, agent_id, MAX(seq) AS m FROM inbox WHERE " where      \
    " GROUP BY tenant_id, agent_id) q ON a.tenant_id = q.tenant_id AND a.agent_id = q.agent_id"    \
    " SET a.gaps_through_seq = GREATEST(a.gaps_through_seq, q.m)"
#define GAPS_MARK_PG(where)                                                                        \
    "UPDATE agents a SET gaps_through_seq = GREATEST(a.gaps_through_seq, q.m) FROM (SELECT"        \
    " tenant_id, agent_id, MAX(seq) AS m FROM inbox WHERE " where " AND status = " ST_QUARANTINED  \
    " GROUP BY tenant_id, agent_id) q WHERE a.tenant_id = q.tenant_id AND a.agent_id = q.agent_id"
STORE_STMT(GAPS_MARK_ONE, GAPS_MARK_SQLITE("tenant_id = ? AND event_id = ?"),
           GAPS_MARK_MYSQL("tenant_id = ? AND event_id = ? AND status = " ST_QUARANTINED),
           GAPS_MARK_PG("tenant_id = ? AND event_id = ?"));
STORE_STMT(GAPS_MARK_AGENT, GAPS_MARK_SQLITE("tenant_id = ? AND agent_id = ?"),
           GAPS_MARK_MYSQL("open_state = " ST_QUARANTINED " AND tenant_id = ? AND agent_id = ?"),
           GAPS_MARK_PG("tenant_id = ? AND agent_id = ?"));
STORE_STMT(GAPS_MARK_ALL, GAPS_MARK_SQLITE("tenant_id = ?"),
           GAPS_MARK_MYSQL("open_state = " ST_QUARANTINED " AND tenant_id = ?"),
           GAPS_MARK_PG("tenant_id = ?"));

/* Deletes quarantined rows: the event, or up to `limit` of the agent (or of the tenant when
 * agent_id is NULL). */
static int quarantine_delete(struct store *st, const char *tenant_id, const char *agent_id,
                             const char *event_id, int64_t limit, size_t *purged)
{
    int64_t n = 0;
    int rc;
    if (event_id != NULL) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(event_id)};
        if ((rc = store_run(st, GAPS_MARK_ONE, p, NULL, NULL, NULL)) == ROOST_OK) {
            rc = store_run(st, PURGE_ONE, p, NULL, NULL, &n);
        }
    } else if (agent_id != NULL) {
        struct store_param mark[] = {ARG_T(tenant_id), ARG_T(agent_id)};
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(limit)};
        if ((rc = store_run(st, GAPS_MARK_AGENT, mark, NULL, NULL, NULL)) == ROOST_OK) {
            rc = store_run(st, PURGE_AGENT, p, NULL, NULL, &n);
        }
    } else {
        struct store_param mark[] = {ARG_T(tenant_id)};
        struct store_param p[] = {ARG_T(tenant_id), ARG_I(limit)};
        if ((rc = store_run(st, GAPS_MARK_ALL, mark, NULL, NULL, NULL)) == ROOST_OK) {
            rc = store_run(st, PURGE_ALL, p, NULL, NULL, &n);
        }
    }
    *purged = rc == ROOST_OK ? (size_t)n : 0;
    return rc;
}

int store_admin_quarantine_list(struct store *st, const char *tenant_id, const char *agent_id,
                                const char *after_agent, int64_t after_seq, size_t limit,
                                struct store_events *out, bool *has_more)
{
    const char *after = after_agent != NULL ? after_agent : "";
    bool one_agent = agent_id != NULL && agent_id[0] != '\0';
    size_t before = out->len;
    *has_more = false;
    if (limit == 0) {
        return store_op_done(st, ROOST_OK);
    }
    if (one_agent) {
        /* One agent: the (agent_id, seq) position reduces to a seq bound, so the walk of that
         * agent's rows needs no sort. */
        int c = strcmp(after, agent_id);
        after_seq = c < 0 ? -1 : c == 0 ? after_seq : INT64_MAX;
    }
    int rc = quarantine_select(st, tenant_id, one_agent ? agent_id : NULL, after, after_seq,
                               store_limit_page(limit), out);
    /* The one row past the page only says that more follow. */
    while (rc == ROOST_OK && out->len - before > limit) {
        store_event_cleanup(&out->items[--out->len]);
        *has_more = true;
    }
    return store_op_done(st, rc);
}

int store_admin_requeue(struct store *st, const char *tenant_id, const char *event_id,
                        int64_t now_ms, struct store_touches *touches)
{
    char agent_id[STORE_ID_MAX + 1];
    enum store_status status;
    bool found = false, changed = false;
    int rc = event_locate(st, tenant_id, event_id, agent_id, &status, &found);
    if (rc == ROOST_OK && !found) {
        rc = ROOST_EEVENTNOTFOUND;
    } else if (rc == ROOST_OK && status != STORE_QUARANTINED && status != STORE_EXPIRED) {
        rc = ROOST_ESTATE;
    }
    if (rc == ROOST_OK) {
        rc = requeue_update(st, tenant_id, event_id, now_ms, &changed);
    }
    if (rc == ROOST_OK && !changed) {
        rc = ROOST_ESTATE; /* changed since we read it */
    }
    if (rc == ROOST_OK) {
        rc = store_touch(st, tenant_id, agent_id, now_ms, touches);
    }
    return store_op_done(st, rc);
}

int store_admin_quarantine_purge(struct store *st, const char *tenant_id, const char *agent_id,
                                 const char *event_id, size_t limit, size_t *purged)
{
    *purged = 0;
    int rc = quarantine_delete(st, tenant_id, event_id != NULL ? NULL : agent_id, event_id,
                               store_limit(limit), purged);
    if (rc == ROOST_OK && event_id != NULL && *purged == 0) {
        /* Tell an unknown event from one in another status. */
        char agent[STORE_ID_MAX + 1];
        enum store_status status;
        bool found = false;
        rc = event_locate(st, tenant_id, event_id, agent, &status, &found);
        if (rc == ROOST_OK) {
            rc = found ? ROOST_ESTATE : ROOST_EEVENTNOTFOUND;
        }
    }
    return store_op_done(st, rc);
}
