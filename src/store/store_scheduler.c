/* SPDX-License-Identifier: MIT */
/* The scheduler's passes (store_ops.h), written once (DESIGN §4.4–4.5): scavenge (expired leases
 * back to pending or to quarantine at max attempts), promote (due scheduled rows to pending),
 * expire (rows past their TTL) and retention (each agent's deletable prefix, archived, deleted,
 * the watermark moved, and a change log's old rows pruned), each deciding here with its
 * statements in every dialect beside it. The pass's savepoint (retention_begin/end) is the
 * dialect's: transaction mechanics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

/* Pages of agents the retention pass loads at a time. */
#define RETENTION_AGENT_PAGE 64

static const struct store_dialect *dialect(struct store *st)
{
    return st->dialect;
}

static void row_copy(struct store_row *row, int col, char *dst, size_t cap)
{
    const char *v = row->text(row, col);
    snprintf(dst, cap, "%s", v != NULL ? v : "");
}

/* ---- scavenge ---- */

/* now, limit: claimed rows whose lease expired, oldest expiry first. MySQL walks inbox_lease
 * (lease_expires_at is claim_expires_at while claimed). */
STORE_STMT(SCAVENGE_SELECT,
           "SELECT tenant_id, agent_id, seq, lease_token, attempts, consumer FROM inbox"
           " WHERE status = " ST_CLAIMED " AND claim_expires_at <= ?"
           " ORDER BY claim_expires_at LIMIT ?",
           "SELECT tenant_id, agent_id, seq, lease_token, attempts, consumer FROM inbox"
           " WHERE lease_expires_at <= ? ORDER BY lease_expires_at LIMIT ?",
           "SELECT tenant_id, agent_id, seq, lease_token, attempts, consumer FROM inbox"
           " WHERE status = " ST_CLAIMED " AND claim_expires_at <= ?"
           " ORDER BY claim_expires_at LIMIT ?");

static int on_lease_ref(void *arg, struct store_row *row)
{
    struct store_lease_ref *r = store_lease_refs_push(arg);
    if (r == NULL) {
        return ROOST_ENOMEM;
    }
    row_copy(row, 0, r->tenant_id, sizeof r->tenant_id);
    row_copy(row, 1, r->agent_id, sizeof r->agent_id);
    r->seq = row->i64(row, 2);
    row_copy(row, 3, r->lease_token, sizeof r->lease_token);
    r->attempts = (int)row->i64(row, 4);
    row_copy(row, 5, r->consumer, sizeof r->consumer);
    return ROOST_OK;
}

static int scavenge_select(struct store *st, int64_t now_ms, int64_t limit,
                           struct store_lease_refs *out)
{
    struct store_param p[] = {ARG_I(now_ms), ARG_I(limit)};
    return store_run(st, SCAVENGE_SELECT, p, on_lease_ref, out, NULL);
}

/* status, tenant, agent, seq, token, now: conditional on the lease read, so an ack or release
 * that won the race is never overwritten. */
STORE_STMT_SAME(SCAVENGE_UPDATE,
                "UPDATE inbox SET status = ?, timeouts = timeouts + 1, lease_token = NULL,"
                " claim_expires_at = NULL WHERE tenant_id = ? AND agent_id = ? AND seq = ?"
                " AND status = " ST_CLAIMED " AND lease_token = ? AND claim_expires_at <= ?");

static int scavenge_update(struct store *st, const struct store_lease_ref *r, enum store_status to,
                           int64_t now_ms, bool *changed)
{
    struct store_param p[] = {ARG_I(to),     ARG_T(r->tenant_id),   ARG_T(r->agent_id),
                              ARG_I(r->seq), ARG_T(r->lease_token), ARG_I(now_ms)};
    int64_t n = 0;
    int rc = store_run(st, SCAVENGE_UPDATE, p, NULL, NULL, &n);
    *changed = rc == ROOST_OK && n == 1;
    return rc;
}

/* ---- promote and expire: two shapes ---- */

/* With one writer (STORE_CAP_SINGLE_WRITER) one set-based UPDATE waits on nobody: now, limit. */
STORE_STMT_ONLY(PROMOTE, STORE_SQL_SQLITE,
                "UPDATE inbox SET status = " ST_PENDING " WHERE rowid IN (SELECT rowid FROM inbox"
                " WHERE status = " ST_SCHEDULED " AND available_at <= ? ORDER BY available_at"
                " LIMIT ?) RETURNING tenant_id, agent_id");
STORE_STMT_ONLY(EXPIRE, STORE_SQL_SQLITE,
                "UPDATE inbox SET status = " ST_EXPIRED ", completed_at = ?1 WHERE rowid IN"
                " (SELECT rowid FROM inbox WHERE status IN (" ST_SCHEDULED ", " ST_PENDING
                ") AND expires_at <= ?1 LIMIT ?2)");
/* With other writers the due rows are read without locks, then updated by primary key, each
 * update conditional on the row's state (another node may have moved it). MySQL: a plain read
 * of inbox_due_at (due_at is available_at while scheduled) and inbox_ttl (ttl_at is expires_at
 * while scheduled or pending): a locking read of a range also locks, for an instant, the record
 * just past its end, and a claim must never SKIP a pending row for that. now, limit; then tenant,
 * agent, seq (promote) or now, tenant, agent, seq, now (expire). */
STORE_STMT_ONLY2(PROMOTE_SELECT, STORE_SQL_MYSQL,
                 "SELECT tenant_id, agent_id, seq FROM inbox WHERE due_at <= ?"
                 " ORDER BY due_at LIMIT ?",
                 STORE_SQL_PG,
                 "SELECT tenant_id, agent_id, seq FROM inbox WHERE status = " ST_SCHEDULED
                 " AND available_at <= ? ORDER BY available_at LIMIT ?");
#define PROMOTE_UPDATE_SQL                                                                         \
    "UPDATE inbox SET status = " ST_PENDING " WHERE tenant_id = ? AND agent_id = ?"                \
    " AND seq = ? AND status = " ST_SCHEDULED
STORE_STMT_ONLY2(PROMOTE_UPDATE, STORE_SQL_MYSQL, PROMOTE_UPDATE_SQL, STORE_SQL_PG,
                 PROMOTE_UPDATE_SQL);
STORE_STMT_ONLY2(EXPIRE_SELECT, STORE_SQL_MYSQL,
                 "SELECT tenant_id, agent_id, seq FROM inbox WHERE ttl_at <= ?"
                 " ORDER BY ttl_at LIMIT ?",
                 STORE_SQL_PG,
                 "SELECT tenant_id, agent_id, seq FROM inbox WHERE status IN (" ST_SCHEDULED
                 ", " ST_PENDING ") AND expires_at <= ? ORDER BY expires_at LIMIT ?");
#define EXPIRE_UPDATE_SQL                                                                          \
    "UPDATE inbox SET status = " ST_EXPIRED ", completed_at = ?"                                   \
    " WHERE tenant_id = ? AND agent_id = ? AND seq = ?"                                            \
    " AND status IN (" ST_SCHEDULED ", " ST_PENDING ") AND expires_at <= ?"
STORE_STMT_ONLY2(EXPIRE_UPDATE, STORE_SQL_MYSQL, EXPIRE_UPDATE_SQL, STORE_SQL_PG,
                 EXPIRE_UPDATE_SQL);

/* Rows (tenant, agent[, seq]) of a read, to update one by one after it. */
struct row_keys {
    struct store_lease_refs keys; /* tenant_id, agent_id, seq */
    size_t *count;                /* PROMOTE: rows changed */
    struct store_touches *agents; /* PROMOTE: their agents */
};

static int on_key(void *arg, struct store_row *row)
{
    struct row_keys *k = arg;
    struct store_lease_ref *r = store_lease_refs_push(&k->keys);
    if (r == NULL) {
        return ROOST_ENOMEM;
    }
    row_copy(row, 0, r->tenant_id, sizeof r->tenant_id);
    row_copy(row, 1, r->agent_id, sizeof r->agent_id);
    r->seq = row->i64(row, 2);
    return ROOST_OK;
}

static int on_promoted(void *arg, struct store_row *row)
{
    struct row_keys *k = arg;
    char tenant_id[STORE_ID_MAX + 1], agent_id[STORE_ID_MAX + 1];
    row_copy(row, 0, tenant_id, sizeof tenant_id);
    row_copy(row, 1, agent_id, sizeof agent_id);
    (*k->count)++;
    return store_touches_add(k->agents, tenant_id, agent_id, 0);
}

/* Up to `limit` due scheduled rows become pending; their agents go into `agents`. */
static int promote(struct store *st, int64_t now_ms, int64_t limit, size_t *count,
                   struct store_touches *agents)
{
    struct row_keys k = {.count = count, .agents = agents};
    struct store_param p[] = {ARG_I(now_ms), ARG_I(limit)};
    if (store_dialect_has(dialect(st), STORE_CAP_SINGLE_WRITER)) {
        return store_run(st, PROMOTE, p, on_promoted, &k, NULL);
    }
    int rc = store_run(st, PROMOTE_SELECT, p, on_key, &k, NULL);
    for (size_t i = 0; rc == ROOST_OK && i < k.keys.len; i++) {
        const struct store_lease_ref *r = &k.keys.items[i];
        struct store_param up[] = {ARG_T(r->tenant_id), ARG_T(r->agent_id), ARG_I(r->seq)};
        int64_t n = 0;
        if ((rc = store_run(st, PROMOTE_UPDATE, up, NULL, NULL, &n)) != ROOST_OK || n != 1) {
            continue;
        }
        (*count)++;
        rc = store_touches_add(agents, r->tenant_id, r->agent_id, 0);
    }
    free(k.keys.items);
    return rc;
}

/* Up to `limit` pending/scheduled rows past expires_at become expired. */
static int expire(struct store *st, int64_t now_ms, int64_t limit, size_t *count)
{
    struct row_keys k = {0};
    struct store_param p[] = {ARG_I(now_ms), ARG_I(limit)};
    int64_t n = 0;
    if (store_dialect_has(dialect(st), STORE_CAP_SINGLE_WRITER)) {
        int rc = store_run(st, EXPIRE, p, NULL, NULL, &n);
        *count = rc == ROOST_OK ? (size_t)n : 0;
        return rc;
    }
    int rc = store_run(st, EXPIRE_SELECT, p, on_key, &k, NULL);
    *count = 0;
    for (size_t i = 0; rc == ROOST_OK && i < k.keys.len; i++) {
        const struct store_lease_ref *r = &k.keys.items[i];
        struct store_param up[] = {ARG_I(now_ms), ARG_T(r->tenant_id), ARG_T(r->agent_id),
                                   ARG_I(r->seq), ARG_I(now_ms)};
        if ((rc = store_run(st, EXPIRE_UPDATE, up, NULL, NULL, &n)) == ROOST_OK && n == 1) {
            (*count)++;
        }
    }
    free(k.keys.items);
    return rc;
}

/* ---- retention ---- */

/* tenant, agent, limit: the agents after (tenant, agent) in that order. */
STORE_STMT_SAME(RETENTION_AGENTS,
                "SELECT tenant_id, agent_id FROM agents WHERE (tenant_id, agent_id) > (?, ?)"
                " ORDER BY tenant_id, agent_id LIMIT ?");

struct agent_page {
    struct store_agent_ref *out;
    size_t n, cap;
};

static int on_agent(void *arg, struct store_row *row)
{
    struct agent_page *pg = arg;
    if (pg->n == pg->cap) {
        return ROOST_OK;
    }
    row_copy(row, 0, pg->out[pg->n].tenant_id, sizeof pg->out[pg->n].tenant_id);
    row_copy(row, 1, pg->out[pg->n].agent_id, sizeof pg->out[pg->n].agent_id);
    pg->n++;
    return ROOST_OK;
}

static int retention_agents(struct store *st, const struct store_agent_ref *after, int64_t limit,
                            struct store_agent_ref *out, size_t *n)
{
    struct agent_page pg = {.out = out, .cap = (size_t)limit};
    struct store_param p[] = {ARG_T(after->tenant_id), ARG_T(after->agent_id), ARG_I(limit)};
    int rc = store_run(st, RETENTION_AGENTS, p, on_agent, &pg, NULL);
    *n = pg.n;
    return rc;
}

/* tenant, agent. With other writers (no STORE_CAP_SINGLE_WRITER) several nodes run retention at
 * once: the agent row lock makes one of them own this agent until its COMMIT, and the others
 * pass it by (SKIP LOCKED) instead of archiving the same rows again. A publisher holding the
 * lock just defers the agent to the next round. */
#define RETENTION_LOCK_SQL                                                                         \
    "SELECT 1 FROM agents WHERE tenant_id = ? AND agent_id = ? FOR UPDATE SKIP LOCKED"
STORE_STMT_ONLY2(RETENTION_LOCK, STORE_SQL_MYSQL, RETENTION_LOCK_SQL, STORE_SQL_PG,
                 RETENTION_LOCK_SQL);

static int on_count(void *arg, struct store_row *row)
{
    (void)row;
    (*(size_t *)arg)++;
    return ROOST_OK;
}

static int retention_lock(struct store *st, const struct store_agent_ref *a, bool *owned)
{
    size_t n = 0;
    struct store_param p[] = {ARG_T(a->tenant_id), ARG_T(a->agent_id)};
    int rc = store_run(st, RETENTION_LOCK, p, on_count, &n, NULL);
    *owned = rc == ROOST_OK && n == 1;
    return rc;
}

/* tenant, agent, limit: the agent's first rows in seq order. */
STORE_STMT_SAME(RETENTION_ROWS, "SELECT seq, status, completed_at, created_at FROM inbox"
                                " WHERE tenant_id = ? AND agent_id = ? ORDER BY seq LIMIT ?");

struct ret_rows {
    struct store_retention_row *rows;
    size_t n, cap;
};

static int on_ret_row(void *arg, struct store_row *row)
{
    struct ret_rows *rr = arg;
    if (rr->n == rr->cap) {
        return ROOST_OK;
    }
    struct store_retention_row *r = &rr->rows[rr->n++];
    r->seq = row->i64(row, 0);
    r->status = store_status_of(row->i64(row, 1));
    r->completed_at_ms = row->i64(row, 2);
    r->created_at_ms = row->i64(row, 3);
    return ROOST_OK;
}

static int retention_rows(struct store *st, const struct store_agent_ref *a, int64_t limit,
                          struct store_retention_row *rows, size_t *n)
{
    struct ret_rows rr = {.rows = rows, .cap = (size_t)limit};
    struct store_param p[] = {ARG_T(a->tenant_id), ARG_T(a->agent_id), ARG_I(limit)};
    int rc = store_run(st, RETENTION_ROWS, p, on_ret_row, &rr, NULL);
    *n = rr.n;
    return rc;
}

/* tenant, agent, seq: one full row, to archive. */
STORE_STMT_SAME(EVENT_BY_SEQ,
                "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ? AND agent_id = ? AND seq = ?");

struct one_event {
    struct store_event *ev;
    bool found;
};

static int on_event(void *arg, struct store_row *row)
{
    struct one_event *one = arg;
    if (one->found) {
        return ROOST_OK;
    }
    int rc = store_row_event(row, one->ev);
    one->found = rc == ROOST_OK;
    return rc;
}

static int event_by_seq(struct store *st, const char *tenant_id, const char *agent_id, int64_t seq,
                        struct store_event *ev, bool *found)
{
    struct one_event one = {.ev = ev};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(seq)};
    int rc = store_run(st, EVENT_BY_SEQ, p, on_event, &one, NULL);
    if (rc != ROOST_OK && one.found) {
        store_event_cleanup(ev);
        one.found = false;
    }
    *found = one.found;
    return rc;
}

/* tenant, agent, through: the deletable prefix. */
STORE_STMT_SAME(RETENTION_DELETE,
                "DELETE FROM inbox WHERE tenant_id = ? AND agent_id = ? AND seq <= ?");
/* through, tenant, agent: purged_through_seq = max(purged_through_seq, through). */
STORE_STMT(RETENTION_WATERMARK,
           "UPDATE agents SET purged_through_seq = max(purged_through_seq, ?)"
           " WHERE tenant_id = ? AND agent_id = ?",
           "UPDATE agents SET purged_through_seq = GREATEST(purged_through_seq, ?)"
           " WHERE tenant_id = ? AND agent_id = ?",
           "UPDATE agents SET purged_through_seq = GREATEST(purged_through_seq, ?)"
           " WHERE tenant_id = ? AND agent_id = ?");

/* Deletes the agent's rows with seq <= through and moves its watermark there. */
static int retention_delete(struct store *st, const struct store_agent_ref *a, int64_t through)
{
    struct store_param p[] = {ARG_T(a->tenant_id), ARG_T(a->agent_id), ARG_I(through)};
    struct store_param w[] = {ARG_I(through), ARG_T(a->tenant_id), ARG_T(a->agent_id)};
    int rc = store_run(st, RETENTION_DELETE, p, NULL, NULL, NULL);
    return rc != ROOST_OK ? rc : store_run(st, RETENTION_WATERMARK, w, NULL, NULL, NULL);
}

/* ---- the operations ---- */

/* Touches every agent of `agents` (deduplicated) with its current head. */
static int touch_all(struct store *st, const struct store_touches *agents, int64_t now_ms,
                     struct store_touches *touches)
{
    int rc = ROOST_OK;
    for (size_t i = 0; rc == ROOST_OK && i < agents->len; i++) {
        rc =
            store_touch(st, agents->items[i].tenant_id, agents->items[i].agent_id, now_ms, touches);
    }
    return rc;
}

/* The attempts an expired lease may have used before it quarantines (store_scavenge_limits). */
static int scavenge_max_attempts(const struct store_scavenge_limits *lim,
                                 const struct store_lease_ref *r)
{
    if (lim->consumer != NULL && strcmp(r->consumer, lim->consumer) == 0) {
        return lim->consumer_max_attempts;
    }
    return lim->max_attempts;
}

int store_scheduler_scavenge(struct store *st, int64_t now_ms,
                             const struct store_scavenge_limits *lim, size_t limit, size_t *count,
                             size_t *quarantined, struct store_touches *touches)
{
    struct store_lease_refs rows = {0};
    struct store_touches agents = {0};
    *count = 0;
    *quarantined = 0;
    if (limit == 0) {
        return store_op_done(st, ROOST_OK);
    }
    int rc = scavenge_select(st, now_ms, store_limit(limit), &rows);
    for (size_t i = 0; rc == ROOST_OK && i < rows.len; i++) {
        const struct store_lease_ref *r = &rows.items[i];
        /* attempts only moves with a new claim, which changes the token the update is
         * conditional on: the target decided from this read holds if the update matches. */
        enum store_status to = store_lease_exhausted(r->attempts, scavenge_max_attempts(lim, r))
                                   ? STORE_QUARANTINED
                                   : STORE_PENDING;
        bool changed = false;
        if ((rc = scavenge_update(st, r, to, now_ms, &changed)) != ROOST_OK || !changed) {
            continue; /* the lease moved on since we read it */
        }
        (*count)++;
        if (to == STORE_QUARANTINED) {
            (*quarantined)++;
        } else {
            rc = store_touches_add(&agents, r->tenant_id, r->agent_id, 0);
        }
    }
    if (rc == ROOST_OK) {
        rc = touch_all(st, &agents, now_ms, touches);
    }
    store_touches_cleanup(&agents);
    free(rows.items);
    return store_op_done(st, rc);
}

int store_scheduler_promote_due(struct store *st, int64_t now_ms, size_t limit, size_t *count,
                                struct store_touches *touches)
{
    struct store_touches agents = {0};
    *count = 0;
    if (limit == 0) {
        return store_op_done(st, ROOST_OK);
    }
    int rc = promote(st, now_ms, store_limit(limit), count, &agents);
    if (rc == ROOST_OK) {
        rc = touch_all(st, &agents, now_ms, touches);
    }
    store_touches_cleanup(&agents);
    return store_op_done(st, rc);
}

int store_scheduler_expire(struct store *st, int64_t now_ms, size_t limit, size_t *count)
{
    *count = 0;
    if (limit == 0) {
        return store_op_done(st, ROOST_OK);
    }
    return store_op_done(st, expire(st, now_ms, store_limit(limit), count));
}

/* ---- retention ---- */

/* Deletes the deletable prefix of one agent's rows, at most `budget` rows, archiving the
 * unfinished ones first; the watermark moves to the prefix's last seq, so purged_through_seq
 * stays exact (DESIGN §4.5). rows has room for `budget`. */
static int retain_agent(struct store *st, const struct store_retention_req *req,
                        const struct store_agent_ref *a, size_t budget,
                        struct store_retention_row *rows, size_t *deleted, size_t *archived)
{
    const struct store_dialect *d = dialect(st);
    size_t n = 0, keep = 0;
    *deleted = 0;
    if (!store_dialect_has(d, STORE_CAP_SINGLE_WRITER)) {
        bool owned = false;
        int rc = retention_lock(st, a, &owned);
        if (rc != ROOST_OK || !owned) {
            return rc;
        }
    }
    int rc = retention_rows(st, a, store_limit(budget), rows, &n);
    if (rc != ROOST_OK) {
        return rc;
    }
    /* The prefix ends at the first row that must stay. */
    while (keep < n && store_retention_deletable(req, rows[keep].status, rows[keep].completed_at_ms,
                                                 rows[keep].created_at_ms)) {
        keep++;
    }
    if (keep == 0) {
        return ROOST_OK;
    }
    for (size_t i = 0; req->archive != NULL && i < keep; i++) {
        /* A completed row has nothing left worth keeping (its payload is gone). */
        if (rows[i].status == STORE_COMPLETED) {
            continue;
        }
        struct store_event ev;
        bool found = false;
        memset(&ev, 0, sizeof ev);
        rc = event_by_seq(st, a->tenant_id, a->agent_id, rows[i].seq, &ev, &found);
        if (rc != ROOST_OK) {
            return rc;
        }
        if (!found) {
            continue;
        }
        int cb = req->archive(req->archive_ctx, a->tenant_id, &ev);
        store_event_cleanup(&ev);
        if (cb != 0) {
            char msg[STORE_ID_MAX * 2 + 96];
            snprintf(msg, sizeof msg, "retention: archiving %s/%s seq %lld failed (%d)",
                     a->tenant_id, a->agent_id, (long long)rows[i].seq, cb);
            return store_op_fail(st, ROOST_EIO, msg);
        }
        (*archived)++;
    }
    int64_t through = rows[keep - 1].seq;
    if ((rc = retention_delete(st, a, through)) != ROOST_OK) {
        return rc;
    }
    *deleted = keep;
    return ROOST_OK;
}

/* roost_changes rows older than this go with retention; a tailer is never this far behind. */
#define CHANGES_KEEP_MS (10 * 60 * 1000)

/* cut, limit: the range of the oldest change rows nobody else is pruning (SKIP LOCKED: a node
 * pruning at the same time takes the next batch instead of waiting for this one's COMMIT); then
 * low id, high id, cut. */
#define CHANGES_OLD_SQL                                                                            \
    "SELECT COALESCE(MIN(id), 0), COALESCE(MAX(id), -1) FROM (SELECT id FROM roost_changes"        \
    " WHERE at_ms < ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED) AS old"
#define CHANGES_PRUNE_SQL "DELETE FROM roost_changes WHERE id BETWEEN ? AND ? AND at_ms < ?"
STORE_STMT_ONLY2(CHANGES_OLD, STORE_SQL_MYSQL, CHANGES_OLD_SQL, STORE_SQL_PG, CHANGES_OLD_SQL);
STORE_STMT_ONLY2(CHANGES_PRUNE, STORE_SQL_MYSQL, CHANGES_PRUNE_SQL, STORE_SQL_PG,
                 CHANGES_PRUNE_SQL);

struct id_range {
    int64_t lo, hi;
};

static int on_id_range(void *arg, struct store_row *row)
{
    struct id_range *r = arg;
    r->lo = row->i64(row, 0);
    r->hi = row->i64(row, 1);
    return ROOST_OK;
}

/* A change log (STORE_CAP_CHANGE_LOG) is pruned with retention, in the pass's savepoint. */
static int changes_prune(struct store *st, int64_t now_ms, size_t batch)
{
    struct id_range r = {0, -1};
    struct store_param op[] = {ARG_I(now_ms - CHANGES_KEEP_MS), ARG_I(store_limit(batch))};
    int rc = store_run(st, CHANGES_OLD, op, on_id_range, &r, NULL);
    if (rc != ROOST_OK) {
        return rc;
    }
    struct store_param dp[] = {ARG_I(r.lo), ARG_I(r.hi), ARG_I(now_ms - CHANGES_KEEP_MS)};
    return store_run(st, CHANGES_PRUNE, dp, NULL, NULL, NULL);
}

/* Walks the agents in (tenant, agent) order inside one savepoint, so a failing archive callback
 * leaves every row and watermark as it was. */
int store_scheduler_retention(struct store *st, const struct store_retention_req *req,
                              struct store_retention_result *res)
{
    const struct store_dialect *d = dialect(st);
    struct store_agent_ref *agents = NULL, after;
    struct store_retention_row *rows = NULL;
    memset(res, 0, sizeof *res);
    memset(&after, 0, sizeof after);
    if (req->batch == 0) {
        return store_op_done(st, ROOST_OK);
    }
    agents = malloc(RETENTION_AGENT_PAGE * sizeof *agents);
    rows = req->batch > SIZE_MAX / sizeof *rows ? NULL : malloc(req->batch * sizeof *rows);
    if (agents == NULL || rows == NULL) {
        free(agents);
        free(rows);
        return store_op_done(st, ROOST_ENOMEM);
    }
    int rc = d->retention_begin(st);
    if (rc != ROOST_OK) {
        goto out;
    }
    if (store_dialect_has(d, STORE_CAP_CHANGE_LOG)) {
        rc = changes_prune(st, req->now_ms, req->batch);
    }
    for (; rc == ROOST_OK;) {
        size_t n = 0;
        if ((rc = retention_agents(st, &after, RETENTION_AGENT_PAGE, agents, &n)) != ROOST_OK) {
            break;
        }
        for (size_t i = 0; rc == ROOST_OK && i < n && !res->more; i++) {
            size_t budget = req->batch - res->deleted, deleted = 0;
            rc = retain_agent(st, req, &agents[i], budget, rows, &deleted, &res->archived);
            res->deleted += deleted;
            res->more = res->deleted == req->batch;
        }
        if (rc != ROOST_OK || res->more || n < RETENTION_AGENT_PAGE) {
            break;
        }
        after = agents[n - 1];
    }
    rc = d->retention_end(st, rc);
    if (rc != ROOST_OK) {
        memset(res, 0, sizeof *res);
    }
out:
    free(agents);
    free(rows);
    return store_op_done(st, rc);
}
