/* SPDX-License-Identifier: MIT */
/* Webhook endpoints and the attempt log (store_webhooks.h), once for every backend: each
 * operation here, its statements beside it in every dialect (store_stmt.h), run through the
 * dialect's prepared-statement cache. */
#include "store/store_webhooks.h"

#include <stdio.h>
#include <string.h>

#include "common/ids.h"
#include "store/store_lifecycle.h"
#include "store/store_sql.h"

#include "common/banned.h"

#define EPCOLS                                                                                     \
    "tenant_id, endpoint_id, agent_id, url, status, coalesce(disabled_reason, ''), created_at,"    \
    " updated_at, coalesce(failing_since, 0)"
#define ATCOLS                                                                                     \
    "endpoint_id, attempt_id, agent_id, event_id, at, attempt, status_code, latency_ms,"           \
    " error_class, coalesce(response_head, '')"

/* An agent has one endpoint (the unique key endpoints_agent): the insert then changes nothing. */
STORE_STMT(
    EP_ADD,
    "INSERT INTO endpoints (tenant_id, endpoint_id, agent_id, url, secret, status, created_at,"
    " updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT DO NOTHING",
    "INSERT IGNORE INTO endpoints (tenant_id, endpoint_id, agent_id, url, secret, status,"
    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?)",
    "INSERT INTO endpoints (tenant_id, endpoint_id, agent_id, url, secret, status, created_at,"
    " updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT DO NOTHING");
STORE_STMT_SAME(EP_GET,
                "SELECT " EPCOLS ", secret FROM endpoints WHERE tenant_id = ? AND endpoint_id = ?");
STORE_STMT_SAME(EP_LIST, "SELECT " EPCOLS " FROM endpoints WHERE tenant_id = ? AND endpoint_id > ?"
                         " ORDER BY endpoint_id LIMIT ?");
STORE_STMT_SAME(EP_LIST_AGENT,
                "SELECT " EPCOLS " FROM endpoints WHERE tenant_id = ? AND agent_id = ?"
                " AND endpoint_id > ? ORDER BY endpoint_id LIMIT ?");
STORE_STMT_SAME(EP_DELETE, "DELETE FROM endpoints WHERE tenant_id = ? AND endpoint_id = ?");
STORE_STMT_SAME(EP_DELETE_AGENT,
                "DELETE FROM endpoints WHERE tenant_id = ? AND endpoint_id = ? AND agent_id = ?");
STORE_STMT_SAME(AT_DELETE_ENDPOINT,
                "DELETE FROM webhook_attempts WHERE tenant_id = ? AND endpoint_id = ?");
STORE_STMT_SAME(EP_SET_STATUS,
                "UPDATE endpoints SET status = ?, disabled_reason = ?, updated_at = ?,"
                " failing_since = CASE WHEN ? = 0 THEN NULL ELSE failing_since END"
                " WHERE tenant_id = ? AND endpoint_id = ?");
STORE_STMT_SAME(EP_ACTIVE,
                "SELECT " EPCOLS ", secret FROM endpoints WHERE status = 0"
                " AND (tenant_id, endpoint_id) > (?, ?) ORDER BY tenant_id, endpoint_id LIMIT ?");
STORE_STMT_SAME(EP_OK,
                "UPDATE endpoints SET failing_since = NULL WHERE tenant_id = ? AND endpoint_id = ?"
                " AND failing_since IS NOT NULL");
STORE_STMT_SAME(EP_FAIL,
                "UPDATE endpoints SET failing_since = ? WHERE tenant_id = ? AND endpoint_id = ?"
                " AND failing_since IS NULL");
/* Conditional on the run having lasted long enough, so concurrent nodes disable it once. */
STORE_STMT_SAME(EP_FAIL_DISABLE,
                "UPDATE endpoints SET status = 1, disabled_reason = 'failing', updated_at = ?"
                " WHERE tenant_id = ? AND endpoint_id = ? AND status = 0 AND failing_since <= ?");
STORE_STMT_SAME(
    AT_ADD, "INSERT INTO webhook_attempts (tenant_id, endpoint_id, attempt_id, agent_id, event_id,"
            " at, attempt, status_code, latency_ms, error_class, response_head)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
STORE_STMT_SAME(AT_LIST,
                "SELECT " ATCOLS " FROM webhook_attempts WHERE tenant_id = ? AND endpoint_id = ?"
                " AND attempt_id > ? ORDER BY attempt_id LIMIT ?");
STORE_STMT_SAME(AT_LIST_EVENT,
                "SELECT " ATCOLS " FROM webhook_attempts WHERE tenant_id = ? AND event_id = ?"
                " AND endpoint_id = ? AND attempt_id > ? ORDER BY attempt_id LIMIT ?");
STORE_STMT(
    AT_PRUNE,
    "DELETE FROM webhook_attempts WHERE (tenant_id, endpoint_id, attempt_id) IN"
    " (SELECT tenant_id, endpoint_id, attempt_id FROM webhook_attempts WHERE at < ? LIMIT ?)",
    "DELETE FROM webhook_attempts WHERE at < ? ORDER BY at LIMIT ?",
    "DELETE FROM webhook_attempts WHERE ctid = ANY(ARRAY(SELECT ctid FROM webhook_attempts"
    " WHERE at < ? LIMIT ?)) AND at < ?1");

static void copy_col(struct store_row *row, int col, char *dst, size_t cap)
{
    const char *t = row->text(row, col);
    snprintf(dst, cap, "%s", t != NULL ? t : "");
}

static void row_endpoint(struct store_row *row, struct store_endpoint *e, bool with_secret)
{
    memset(e, 0, sizeof *e);
    copy_col(row, 0, e->tenant_id, sizeof e->tenant_id);
    copy_col(row, 1, e->endpoint_id, sizeof e->endpoint_id);
    copy_col(row, 2, e->agent_id, sizeof e->agent_id);
    copy_col(row, 3, e->url, sizeof e->url);
    e->status = row->i64(row, 4) == 0 ? STORE_ENDPOINT_ACTIVE : STORE_ENDPOINT_DISABLED;
    copy_col(row, 5, e->disabled_reason, sizeof e->disabled_reason);
    e->created_at_ms = row->i64(row, 6);
    e->updated_at_ms = row->i64(row, 7);
    e->failing_since_ms = row->i64(row, 8);
    if (with_secret) {
        copy_col(row, 9, e->secret, sizeof e->secret);
    }
}

static void row_attempt(struct store_row *row, struct store_attempt *a)
{
    memset(a, 0, sizeof *a);
    copy_col(row, 0, a->endpoint_id, sizeof a->endpoint_id);
    copy_col(row, 1, a->attempt_id, sizeof a->attempt_id);
    copy_col(row, 2, a->agent_id, sizeof a->agent_id);
    copy_col(row, 3, a->event_id, sizeof a->event_id);
    a->at_ms = row->i64(row, 4);
    a->attempt = (int)row->i64(row, 5);
    a->status_code = (int)row->i64(row, 6);
    a->latency_ms = row->i64(row, 7);
    copy_col(row, 8, a->error_class, sizeof a->error_class);
    copy_col(row, 9, a->response_head, sizeof a->response_head);
}

/* A page being filled: rows past `limit` only set has_more. */
struct page {
    void *out;
    size_t limit, n;
    bool has_more, with_secret;
};

static int on_endpoint(void *arg, struct store_row *row)
{
    struct page *pg = arg;
    if (pg->n == pg->limit) {
        pg->has_more = true;
        return ROOST_OK;
    }
    row_endpoint(row, &((struct store_endpoint *)pg->out)[pg->n++], pg->with_secret);
    return ROOST_OK;
}

static int on_attempt(void *arg, struct store_row *row)
{
    struct page *pg = arg;
    if (pg->n == pg->limit) {
        pg->has_more = true;
        return ROOST_OK;
    }
    row_attempt(row, &((struct store_attempt *)pg->out)[pg->n++]);
    return ROOST_OK;
}

static int new_id(int64_t now_ms, const char *prefix, char *out, size_t cap)
{
    char evt[IDS_EVENT_ID_LEN + 1];
    if (ids_event_id(now_ms, evt) != 0) {
        return ROOST_EINTERNAL;
    }
    snprintf(out, cap, "%s%s", prefix, evt + 4); /* the ULID after "evt_" */
    return ROOST_OK;
}

int store_endpoint_new_id(int64_t now_ms, char out[STORE_ENDPOINT_ID_LEN + 1])
{
    return new_id(now_ms, "ep_", out, STORE_ENDPOINT_ID_LEN + 1);
}

int store_attempt_new_id(int64_t now_ms, char out[STORE_ATTEMPT_ID_LEN + 1])
{
    return new_id(now_ms, "att_", out, STORE_ATTEMPT_ID_LEN + 1);
}

int store_endpoint_add(struct store *st, const struct store_endpoint *e, int64_t now_ms)
{
    struct store_param p[] = {ARG_T(e->tenant_id), ARG_T(e->endpoint_id), ARG_T(e->agent_id),
                              ARG_T(e->url),       ARG_T(e->secret),      ARG_I(now_ms),
                              ARG_I(now_ms)};
    int64_t changed = 0;
    int rc = store_run(st, EP_ADD, p, NULL, NULL, &changed);
    return rc == ROOST_OK && changed == 0 ? ROOST_EENDPOINTEXISTS : rc;
}

int store_endpoint_get(struct store *st, const char *tenant_id, const char *endpoint_id,
                       struct store_endpoint *out)
{
    struct page pg = {.out = out, .limit = 1, .with_secret = true};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(endpoint_id)};
    memset(out, 0, sizeof *out);
    int rc = store_run(st, EP_GET, p, on_endpoint, &pg, NULL);
    return rc == ROOST_OK && pg.n == 0 ? ROOST_EENDPOINTNOTFOUND : rc;
}

int store_endpoint_list(struct store *st, const char *tenant_id, const char *agent_id,
                        const char *after, size_t limit, struct store_endpoint *out, size_t *n,
                        bool *has_more)
{
    struct page pg = {.out = out, .limit = limit};
    const char *from = after != NULL ? after : "";
    int rc = ROOST_OK;
    if (limit > 0 && agent_id != NULL) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_T(from),
                                  ARG_I(store_limit_page(limit))};
        rc = store_run(st, EP_LIST_AGENT, p, on_endpoint, &pg, NULL);
    } else if (limit > 0) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(from), ARG_I(store_limit_page(limit))};
        rc = store_run(st, EP_LIST, p, on_endpoint, &pg, NULL);
    }
    *n = pg.n;
    *has_more = pg.has_more;
    return rc;
}

int store_endpoint_delete(struct store *st, const char *tenant_id, const char *agent_id,
                          const char *endpoint_id)
{
    int64_t changed = 0;
    int rc;
    if (agent_id != NULL) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(endpoint_id), ARG_T(agent_id)};
        rc = store_run(st, EP_DELETE_AGENT, p, NULL, NULL, &changed);
    } else {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(endpoint_id)};
        rc = store_run(st, EP_DELETE, p, NULL, NULL, &changed);
    }
    if (rc != ROOST_OK) {
        return rc;
    }
    if (changed == 0) {
        return ROOST_EENDPOINTNOTFOUND;
    }
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(endpoint_id)};
    return store_run(st, AT_DELETE_ENDPOINT, p, NULL, NULL, NULL);
}

int store_endpoint_set_status(struct store *st, const char *tenant_id, const char *endpoint_id,
                              enum store_endpoint_status status, const char *reason, int64_t now_ms)
{
    char why[STORE_WH_REASON_MAX + 1];
    snprintf(why, sizeof why, "%s", reason != NULL ? reason : "");
    bool active = status == STORE_ENDPOINT_ACTIVE;
    struct store_param p[] = {ARG_I(active ? 0 : 1), ARG_T(active ? NULL : why),
                              ARG_I(now_ms),         ARG_I(active ? 0 : 1),
                              ARG_T(tenant_id),      ARG_T(endpoint_id)};
    int64_t changed = 0;
    int rc = store_run(st, EP_SET_STATUS, p, NULL, NULL, &changed);
    return rc == ROOST_OK && changed == 0 ? ROOST_EENDPOINTNOTFOUND : rc;
}

int store_endpoints_active(struct store *st, const char *after_tenant, const char *after_id,
                           size_t limit, struct store_endpoint *out, size_t *n)
{
    struct page pg = {.out = out, .limit = limit, .with_secret = true};
    int rc = ROOST_OK;
    if (limit > 0) {
        struct store_param p[] = {ARG_T(after_tenant != NULL ? after_tenant : ""),
                                  ARG_T(after_id != NULL ? after_id : ""),
                                  ARG_I(store_limit(limit))};
        rc = store_run(st, EP_ACTIVE, p, on_endpoint, &pg, NULL);
    }
    *n = pg.n;
    return rc;
}

int store_endpoint_result(struct store *st, const char *tenant_id, const char *endpoint_id, bool ok,
                          int64_t now_ms, int64_t disable_after_ms, bool *disabled)
{
    int64_t changed = 0;
    int rc;
    if (disabled != NULL) {
        *disabled = false;
    }
    if (ok) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(endpoint_id)};
        return store_run(st, EP_OK, p, NULL, NULL, NULL);
    }
    struct store_param f[] = {ARG_I(now_ms), ARG_T(tenant_id), ARG_T(endpoint_id)};
    if ((rc = store_run(st, EP_FAIL, f, NULL, NULL, NULL)) != ROOST_OK || disable_after_ms <= 0) {
        return rc;
    }
    struct store_param d[] = {ARG_I(now_ms), ARG_T(tenant_id), ARG_T(endpoint_id),
                              ARG_I(now_ms - disable_after_ms)};
    rc = store_run(st, EP_FAIL_DISABLE, d, NULL, NULL, &changed);
    if (rc == ROOST_OK && disabled != NULL) {
        *disabled = changed > 0;
    }
    return rc;
}

int store_attempt_add(struct store *st, const char *tenant_id, const struct store_attempt *a)
{
    struct store_param p[] = {ARG_T(tenant_id),
                              ARG_T(a->endpoint_id),
                              ARG_T(a->attempt_id),
                              ARG_T(a->agent_id),
                              ARG_T(a->event_id),
                              ARG_I(a->at_ms),
                              ARG_I(a->attempt),
                              ARG_I(a->status_code),
                              ARG_I(a->latency_ms),
                              ARG_T(a->error_class),
                              ARG_T(a->response_head[0] != '\0' ? a->response_head : NULL)};
    return store_run(st, AT_ADD, p, NULL, NULL, NULL);
}

int store_attempt_list(struct store *st, const char *tenant_id, const char *endpoint_id,
                       const char *event_id, const char *after, size_t limit,
                       struct store_attempt *out, size_t *n, bool *has_more)
{
    struct page pg = {.out = out, .limit = limit};
    const char *from = after != NULL ? after : "";
    int rc = ROOST_OK;
    if (limit > 0 && event_id != NULL) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(event_id), ARG_T(endpoint_id),
                                  ARG_T(from), ARG_I(store_limit_page(limit))};
        rc = store_run(st, AT_LIST_EVENT, p, on_attempt, &pg, NULL);
    } else if (limit > 0) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(endpoint_id), ARG_T(from),
                                  ARG_I(store_limit_page(limit))};
        rc = store_run(st, AT_LIST, p, on_attempt, &pg, NULL);
    }
    *n = pg.n;
    *has_more = pg.has_more;
    return rc;
}

int store_attempt_prune(struct store *st, int64_t before_ms, size_t limit, size_t *count)
{
    int64_t changed = 0;
    *count = 0;
    if (limit == 0) {
        return ROOST_OK;
    }
    struct store_param p[] = {ARG_I(before_ms), ARG_I(store_limit(limit))};
    int rc = store_run(st, AT_PRUNE, p, NULL, NULL, &changed);
    if (rc == ROOST_OK) {
        *count = (size_t)changed;
    }
    return rc;
}
