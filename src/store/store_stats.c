/* SPDX-License-Identifier: MIT */
/* Stats (store_ops.h), written once: the agents listing and the metrics snapshot, each with its
 * statements in every dialect beside it. */
#include <stdio.h>

#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

/* ---- the agents listing ---- */

/* The counts through the status each dialect indexes: SQLite's and PostgreSQL's partial indexes
 * by status;
 * MariaDB's state columns of migration 0007 (inbox_open for pending, scheduled and quarantined,
 * inbox_lease for claimed, or the agent's primary-key range, whichever the optimizer finds
 * smaller). */
#define MY_AGENT_STATS_COLS                                                                        \
    AGENT_STATS_COLS_BY("i.open_state = " ST_PENDING, "i.open_state = " ST_SCHEDULED,              \
                        "i.lease_expires_at IS NOT NULL", "i.open_state = " ST_QUARANTINED)

/* tenant, after_agent, limit */
STORE_STMT(AGENTS_LIST,
           "SELECT " AGENT_STATS_COLS " FROM agents a"
           " WHERE a.tenant_id = ? AND a.agent_id > ? ORDER BY a.agent_id LIMIT ?",
           "SELECT " MY_AGENT_STATS_COLS " FROM agents a"
           " WHERE a.tenant_id = ? AND a.agent_id > ? ORDER BY a.agent_id LIMIT ?",
           "SELECT " AGENT_STATS_COLS " FROM agents a"
           " WHERE a.tenant_id = ? AND a.agent_id > ? ORDER BY a.agent_id LIMIT ?");
/* tenant, limit, offset */
STORE_STMT(AGENTS_BY_DEPTH,
           "SELECT " AGENT_STATS_COLS " FROM agents a WHERE a.tenant_id = ?"
           " ORDER BY pending DESC, a.agent_id LIMIT ? OFFSET ?",
           "SELECT " MY_AGENT_STATS_COLS " FROM agents a WHERE a.tenant_id = ?"
           " ORDER BY pending DESC, a.agent_id LIMIT ? OFFSET ?",
           "SELECT " AGENT_STATS_COLS " FROM agents a WHERE a.tenant_id = ?"
           " ORDER BY pending DESC, a.agent_id LIMIT ? OFFSET ?");
/* tenant, limit, offset */
STORE_STMT(AGENTS_BY_AGE,
           "SELECT " AGENT_STATS_COLS " FROM agents a WHERE a.tenant_id = ?"
           " ORDER BY oldest IS NULL, oldest, a.agent_id LIMIT ? OFFSET ?",
           "SELECT " MY_AGENT_STATS_COLS " FROM agents a WHERE a.tenant_id = ?"
           " ORDER BY oldest IS NULL, oldest, a.agent_id LIMIT ? OFFSET ?",
           /* PostgreSQL sorts by an output column only by its bare name */
           "SELECT " AGENT_STATS_COLS " FROM agents a WHERE a.tenant_id = ?"
           " ORDER BY oldest NULLS LAST, a.agent_id LIMIT ? OFFSET ?");

struct agents_page {
    struct store_agent_stats *out;
    size_t limit, *n;
    bool *has_more;
};

static int on_agent(void *arg, struct store_row *row)
{
    struct agents_page *pg = arg;
    if (*pg->n == pg->limit) {
        *pg->has_more = true;
        return STORE_ROW_STOP;
    }
    store_row_agent_stats(row, &pg->out[(*pg->n)++]);
    return ROOST_OK;
}

int store_stats_agents_list(struct store *st, const char *tenant_id, enum store_agents_sort sort,
                            const char *after_agent, int64_t offset, size_t limit, int64_t now_ms,
                            struct store_agent_stats *out, size_t *n, bool *has_more)
{
    struct agents_page pg = {.out = out, .limit = limit, .n = n, .has_more = has_more};
    int64_t lim = store_limit_page(limit);
    int rc;
    (void)now_ms;
    *n = 0;
    *has_more = false;
    if (limit == 0) {
        return store_op_done(st, ROOST_OK);
    }
    if (sort == STORE_SORT_AGENT) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(after_agent != NULL ? after_agent : ""),
                                  ARG_I(lim)};
        rc = store_run(st, AGENTS_LIST, p, on_agent, &pg, NULL);
    } else {
        /* A ranking reads every agent of the tenant: bounded in time (ROOST_ESCANBUDGET past it),
         * since it holds a connection other tenants' reads wait for. */
        struct store_run_opts o = {.max_ms = st->admin_scan_ms};
        struct store_param p[] = {ARG_T(tenant_id), ARG_I(lim), ARG_I(offset < 0 ? 0 : offset)};
        rc = st->dialect->run(st, sort == STORE_SORT_DEPTH ? &AGENTS_BY_DEPTH : &AGENTS_BY_AGE, p,
                              3, &o, on_agent, &pg, NULL);
    }
    return store_op_done(st, rc);
}

/* ---- the metrics snapshot ---- */

/* One read per status, each over the index that holds that status's rows only, so the completed
 * history is never read: SQLite's partial indexes (migration 0005; INDEXED BY because the planner
 * may rather walk the primary key, every row, to get tenant order for free); MariaDB's state
 * columns (migration 0007: inbox_open and inbox_lease cover them); PostgreSQL's partial
 * indexes. */
STORE_STMT(MET_PENDING,
           "SELECT tenant_id, count(*), min(available_at) FROM inbox"
           " INDEXED BY inbox_claim WHERE status = " ST_PENDING " GROUP BY tenant_id",
           "SELECT tenant_id, count(*), COALESCE(min(available_at), 0) FROM inbox"
           " WHERE open_state = " ST_PENDING " GROUP BY tenant_id",
           "SELECT tenant_id, count(*), COALESCE(min(available_at), 0) FROM inbox"
           " WHERE status = " ST_PENDING " GROUP BY tenant_id");
STORE_STMT(MET_SCHEDULED,
           "SELECT tenant_id, count(*), 0 FROM inbox INDEXED BY inbox_due"
           " WHERE status = " ST_SCHEDULED " GROUP BY tenant_id",
           "SELECT tenant_id, count(*), 0 FROM inbox"
           " WHERE open_state = " ST_SCHEDULED " GROUP BY tenant_id",
           "SELECT tenant_id, count(*), 0 FROM inbox WHERE status = " ST_SCHEDULED
           " GROUP BY tenant_id");
STORE_STMT(MET_CLAIMED,
           "SELECT tenant_id, count(*), min(claimed_at) FROM inbox"
           " INDEXED BY inbox_scavenge WHERE status = " ST_CLAIMED " GROUP BY tenant_id",
           "SELECT tenant_id, count(*), COALESCE(min(claimed_at), 0) FROM inbox"
           " WHERE lease_expires_at IS NOT NULL GROUP BY tenant_id",
           "SELECT tenant_id, count(*), COALESCE(min(claimed_at), 0) FROM inbox"
           " WHERE status = " ST_CLAIMED " GROUP BY tenant_id");
STORE_STMT(MET_QUARANTINED,
           "SELECT tenant_id, count(*), 0 FROM inbox INDEXED BY inbox_quarantine"
           " WHERE status = " ST_QUARANTINED " GROUP BY tenant_id",
           "SELECT tenant_id, count(*), 0 FROM inbox"
           " WHERE open_state = " ST_QUARANTINED " GROUP BY tenant_id",
           "SELECT tenant_id, count(*), 0 FROM inbox WHERE status = " ST_QUARANTINED
           " GROUP BY tenant_id");
/* limit */
STORE_STMT(MET_AGENTS,
           "SELECT tenant_id, agent_id, count(*) AS n FROM inbox INDEXED BY inbox_claim"
           " WHERE status = " ST_PENDING " GROUP BY tenant_id, agent_id"
           " ORDER BY n DESC, tenant_id, agent_id LIMIT ?",
           "SELECT tenant_id, agent_id, count(*) AS n FROM inbox WHERE open_state = " ST_PENDING
           " GROUP BY tenant_id, agent_id ORDER BY n DESC, tenant_id, agent_id LIMIT ?",
           "SELECT tenant_id, agent_id, count(*) AS n FROM inbox WHERE status = " ST_PENDING
           " GROUP BY tenant_id, agent_id ORDER BY n DESC, tenant_id, agent_id LIMIT ?");

struct met_status {
    struct store_metrics_snapshot *snap;
    enum store_status status;
};

static int on_met_status(void *arg, struct store_row *row)
{
    struct met_status *ms = arg;
    const char *tid = row->text(row, 0);
    store_metrics_add(ms->snap, tid != NULL ? tid : "", ms->status, row->i64(row, 1),
                      row->i64(row, 2));
    return ROOST_OK;
}

static int on_met_agent(void *arg, struct store_row *row)
{
    struct store_metrics_snapshot *snap = arg;
    if (snap->n_agents >= snap->max_agents) {
        return STORE_ROW_STOP;
    }
    struct store_metrics_agent *a = &snap->agents[snap->n_agents++];
    const char *t = row->text(row, 0), *ag = row->text(row, 1);
    snprintf(a->tenant_id, sizeof a->tenant_id, "%s", t != NULL ? t : "");
    snprintf(a->agent_id, sizeof a->agent_id, "%s", ag != NULL ? ag : "");
    a->pending = row->i64(row, 2);
    return ROOST_OK;
}

/* Four grouped reads, one per status, then the top agents. A dialect with a snapshot across
 * statements (read_begin) runs them in one; without, each is its own (READ COMMITTED), so totals
 * may straddle a commit: gauges refreshed every second tolerate that, and no query holds a
 * snapshot open across the others. */
int store_stats_metrics_snapshot(struct store *st, int64_t now_ms,
                                 struct store_metrics_snapshot *snap)
{
    static const struct store_stmt *const by_status[] = {&MET_PENDING, &MET_SCHEDULED, &MET_CLAIMED,
                                                         &MET_QUARANTINED};
    static const enum store_status statuses[] = {STORE_PENDING, STORE_SCHEDULED, STORE_CLAIMED,
                                                 STORE_QUARANTINED};
    const struct store_dialect *d = st->dialect;
    bool opened = false;
    (void)now_ms;
    snap->n_tenants = snap->n_agents = 0;
    snap->truncated = false;
    int rc = d->read_begin != NULL ? d->read_begin(st, &opened) : ROOST_OK;
    if (rc != ROOST_OK) {
        return store_op_done(st, rc);
    }
    for (size_t k = 0; k < sizeof by_status / sizeof by_status[0] && rc == ROOST_OK; k++) {
        struct met_status ms = {.snap = snap, .status = statuses[k]};
        rc = d->run(st, by_status[k], NULL, 0, NULL, on_met_status, &ms, NULL);
    }
    if (rc == ROOST_OK) {
        store_metrics_sort_tenants(snap);
    }
    if (rc == ROOST_OK && snap->max_agents > 0) {
        struct store_param p[] = {ARG_I(store_limit(snap->max_agents))};
        rc = store_run(st, MET_AGENTS, p, on_met_agent, snap, NULL);
    }
    if (d->read_end != NULL) {
        rc = d->read_end(st, opened, rc);
    }
    return store_op_done(st, rc);
}
