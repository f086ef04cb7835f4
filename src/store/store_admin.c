/* SPDX-License-Identifier: MIT */
/* Admin and stats reads (store_ops.h), written once: each operation with its statements in every
 * dialect beside it. */
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
           "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ? AND event_id = ?");

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
           " ORDER BY agent_id, seq LIMIT ?");

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
