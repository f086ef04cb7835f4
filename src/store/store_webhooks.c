/* SPDX-License-Identifier: MIT */
/* Webhook endpoints and the attempt log (store_webhooks.h), once for every backend: each
 * operation here, its statement beside it in both dialects ({SQLite, MySQL}), run through the
 * dialect's query primitive. */
#include "store/store_webhooks.h"

#include <stdio.h>
#include <string.h>

#include "common/ids.h"
#include "store/store_lifecycle.h"
#include "store/store_sql.h"

#include "common/banned.h"

struct sql2 {
    const char *sqlite, *mysql;
};
#define SAME(text)                                                                                 \
    {                                                                                              \
        text, text                                                                                 \
    }

#define EPCOLS                                                                                     \
    "tenant_id, endpoint_id, agent_id, url, status, coalesce(disabled_reason, ''), created_at,"    \
    " updated_at, coalesce(failing_since, 0)"
#define ATCOLS                                                                                     \
    "endpoint_id, attempt_id, agent_id, event_id, at, attempt, status_code, latency_ms,"           \
    " error_class, coalesce(response_head, '')"

/* An agent has one endpoint (the unique key endpoints_agent): the insert then changes nothing. */
static const struct sql2 EP_ADD = {
    "INSERT INTO endpoints (tenant_id, endpoint_id, agent_id, url, secret, status, created_at,"
    " updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT DO NOTHING",
    "INSERT IGNORE INTO endpoints (tenant_id, endpoint_id, agent_id, url, secret, status,"
    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?)"};
static const struct sql2 EP_GET =
    SAME("SELECT " EPCOLS ", secret FROM endpoints WHERE tenant_id = ? AND endpoint_id = ?");
static const struct sql2 EP_LIST =
    SAME("SELECT " EPCOLS " FROM endpoints WHERE tenant_id = ? AND endpoint_id > ?"
         " ORDER BY endpoint_id LIMIT ?");
static const struct sql2 EP_LIST_AGENT =
    SAME("SELECT " EPCOLS " FROM endpoints WHERE tenant_id = ? AND agent_id = ?"
         " AND endpoint_id > ? ORDER BY endpoint_id LIMIT ?");
static const struct sql2 EP_DELETE =
    SAME("DELETE FROM endpoints WHERE tenant_id = ? AND endpoint_id = ?");
static const struct sql2 EP_DELETE_AGENT =
    SAME("DELETE FROM endpoints WHERE tenant_id = ? AND endpoint_id = ? AND agent_id = ?");
static const struct sql2 AT_DELETE_ENDPOINT =
    SAME("DELETE FROM webhook_attempts WHERE tenant_id = ? AND endpoint_id = ?");
static const struct sql2 EP_SET_STATUS =
    SAME("UPDATE endpoints SET status = ?, disabled_reason = ?, updated_at = ?,"
         " failing_since = CASE WHEN ? = 0 THEN NULL ELSE failing_since END"
         " WHERE tenant_id = ? AND endpoint_id = ?");
static const struct sql2 EP_ACTIVE =
    SAME("SELECT " EPCOLS ", secret FROM endpoints WHERE status = 0"
         " AND (tenant_id, endpoint_id) > (?, ?) ORDER BY tenant_id, endpoint_id LIMIT ?");
static const struct sql2 EP_OK =
    SAME("UPDATE endpoints SET failing_since = NULL WHERE tenant_id = ? AND endpoint_id = ?"
         " AND failing_since IS NOT NULL");
static const struct sql2 EP_FAIL =
    SAME("UPDATE endpoints SET failing_since = ? WHERE tenant_id = ? AND endpoint_id = ?"
         " AND failing_since IS NULL");
/* Conditional on the run having lasted long enough, so concurrent nodes disable it once. */
static const struct sql2 EP_FAIL_DISABLE =
    SAME("UPDATE endpoints SET status = 1, disabled_reason = 'failing', updated_at = ?"
         " WHERE tenant_id = ? AND endpoint_id = ? AND status = 0 AND failing_since <= ?");
static const struct sql2 AT_ADD =
    SAME("INSERT INTO webhook_attempts (tenant_id, endpoint_id, attempt_id, agent_id, event_id,"
         " at, attempt, status_code, latency_ms, error_class, response_head)"
         " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
static const struct sql2 AT_LIST =
    SAME("SELECT " ATCOLS " FROM webhook_attempts WHERE tenant_id = ? AND endpoint_id = ?"
         " AND attempt_id > ? ORDER BY attempt_id LIMIT ?");
static const struct sql2 AT_LIST_EVENT =
    SAME("SELECT " ATCOLS " FROM webhook_attempts WHERE tenant_id = ? AND event_id = ?"
         " AND endpoint_id = ? AND attempt_id > ? ORDER BY attempt_id LIMIT ?");
static const struct sql2 AT_PRUNE = {
    "DELETE FROM webhook_attempts WHERE (tenant_id, endpoint_id, attempt_id) IN"
    " (SELECT tenant_id, endpoint_id, attempt_id FROM webhook_attempts WHERE at < ? LIMIT ?)",
    "DELETE FROM webhook_attempts WHERE at < ? ORDER BY at LIMIT ?"};

#define PT(v)                                                                                      \
    {                                                                                              \
        .type = (v) != NULL ? STORE_P_TEXT : STORE_P_NULL, .s = (v)                                \
    }
#define PI(v)                                                                                      \
    {                                                                                              \
        .type = STORE_P_INT, .i = (v)                                                              \
    }

static int query(struct store *st, const struct sql2 *sql, const struct store_param *p, size_t np,
                 store_row_fn on_row, void *arg, int64_t *changed)
{
    const char *text = strcmp(st->ops->scheme, "mysql") == 0 ? sql->mysql : sql->sqlite;
    int rc = st->dialect->query(st, text, p, np, on_row, arg, changed);
    if (st->dialect->done != NULL) {
        st->dialect->done(st);
    }
    return rc;
}
#define Q(st, sql, params, on_row, arg, changed)                                                   \
    query((st), &(sql), (params), sizeof(params) / sizeof((params)[0]), (on_row), (arg), (changed))

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
    struct store_param p[] = {PT(e->tenant_id), PT(e->endpoint_id), PT(e->agent_id), PT(e->url),
                              PT(e->secret),    PI(now_ms),         PI(now_ms)};
    int64_t changed = 0;
    int rc = Q(st, EP_ADD, p, NULL, NULL, &changed);
    return rc == ROOST_OK && changed == 0 ? ROOST_EENDPOINTEXISTS : rc;
}

int store_endpoint_get(struct store *st, const char *tenant_id, const char *endpoint_id,
                       struct store_endpoint *out)
{
    struct page pg = {.out = out, .limit = 1, .with_secret = true};
    struct store_param p[] = {PT(tenant_id), PT(endpoint_id)};
    memset(out, 0, sizeof *out);
    int rc = Q(st, EP_GET, p, on_endpoint, &pg, NULL);
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
        struct store_param p[] = {PT(tenant_id), PT(agent_id), PT(from),
                                  PI(store_limit_page(limit))};
        rc = Q(st, EP_LIST_AGENT, p, on_endpoint, &pg, NULL);
    } else if (limit > 0) {
        struct store_param p[] = {PT(tenant_id), PT(from), PI(store_limit_page(limit))};
        rc = Q(st, EP_LIST, p, on_endpoint, &pg, NULL);
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
        struct store_param p[] = {PT(tenant_id), PT(endpoint_id), PT(agent_id)};
        rc = Q(st, EP_DELETE_AGENT, p, NULL, NULL, &changed);
    } else {
        struct store_param p[] = {PT(tenant_id), PT(endpoint_id)};
        rc = Q(st, EP_DELETE, p, NULL, NULL, &changed);
    }
    if (rc != ROOST_OK) {
        return rc;
    }
    if (changed == 0) {
        return ROOST_EENDPOINTNOTFOUND;
    }
    struct store_param p[] = {PT(tenant_id), PT(endpoint_id)};
    return Q(st, AT_DELETE_ENDPOINT, p, NULL, NULL, NULL);
}

int store_endpoint_set_status(struct store *st, const char *tenant_id, const char *endpoint_id,
                              enum store_endpoint_status status, const char *reason, int64_t now_ms)
{
    char why[STORE_WH_REASON_MAX + 1];
    snprintf(why, sizeof why, "%s", reason != NULL ? reason : "");
    bool active = status == STORE_ENDPOINT_ACTIVE;
    struct store_param p[] = {PI(active ? 0 : 1), PT(active ? NULL : why), PI(now_ms),
                              PI(active ? 0 : 1), PT(tenant_id),           PT(endpoint_id)};
    int64_t changed = 0;
    int rc = Q(st, EP_SET_STATUS, p, NULL, NULL, &changed);
    return rc == ROOST_OK && changed == 0 ? ROOST_EENDPOINTNOTFOUND : rc;
}

int store_endpoints_active(struct store *st, const char *after_tenant, const char *after_id,
                           size_t limit, struct store_endpoint *out, size_t *n)
{
    struct page pg = {.out = out, .limit = limit, .with_secret = true};
    int rc = ROOST_OK;
    if (limit > 0) {
        struct store_param p[] = {PT(after_tenant != NULL ? after_tenant : ""),
                                  PT(after_id != NULL ? after_id : ""), PI(store_limit(limit))};
        rc = Q(st, EP_ACTIVE, p, on_endpoint, &pg, NULL);
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
        struct store_param p[] = {PT(tenant_id), PT(endpoint_id)};
        return Q(st, EP_OK, p, NULL, NULL, NULL);
    }
    struct store_param f[] = {PI(now_ms), PT(tenant_id), PT(endpoint_id)};
    if ((rc = Q(st, EP_FAIL, f, NULL, NULL, NULL)) != ROOST_OK || disable_after_ms <= 0) {
        return rc;
    }
    struct store_param d[] = {PI(now_ms), PT(tenant_id), PT(endpoint_id),
                              PI(now_ms - disable_after_ms)};
    rc = Q(st, EP_FAIL_DISABLE, d, NULL, NULL, &changed);
    if (rc == ROOST_OK && disabled != NULL) {
        *disabled = changed > 0;
    }
    return rc;
}

int store_attempt_add(struct store *st, const char *tenant_id, const struct store_attempt *a)
{
    struct store_param p[] = {PT(tenant_id),
                              PT(a->endpoint_id),
                              PT(a->attempt_id),
                              PT(a->agent_id),
                              PT(a->event_id),
                              PI(a->at_ms),
                              PI(a->attempt),
                              PI(a->status_code),
                              PI(a->latency_ms),
                              PT(a->error_class),
                              PT(a->response_head[0] != '\0' ? a->response_head : NULL)};
    return Q(st, AT_ADD, p, NULL, NULL, NULL);
}

int store_attempt_list(struct store *st, const char *tenant_id, const char *endpoint_id,
                       const char *event_id, const char *after, size_t limit,
                       struct store_attempt *out, size_t *n, bool *has_more)
{
    struct page pg = {.out = out, .limit = limit};
    const char *from = after != NULL ? after : "";
    int rc = ROOST_OK;
    if (limit > 0 && event_id != NULL) {
        struct store_param p[] = {PT(tenant_id), PT(event_id), PT(endpoint_id), PT(from),
                                  PI(store_limit_page(limit))};
        rc = Q(st, AT_LIST_EVENT, p, on_attempt, &pg, NULL);
    } else if (limit > 0) {
        struct store_param p[] = {PT(tenant_id), PT(endpoint_id), PT(from),
                                  PI(store_limit_page(limit))};
        rc = Q(st, AT_LIST, p, on_attempt, &pg, NULL);
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
    struct store_param p[] = {PI(before_ms), PI(store_limit(limit))};
    int rc = Q(st, AT_PRUNE, p, NULL, NULL, &changed);
    if (rc == ROOST_OK) {
        *count = (size_t)changed;
    }
    return rc;
}
