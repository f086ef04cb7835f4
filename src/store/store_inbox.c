/* SPDX-License-Identifier: MIT */
/* Inbox and cursor reads (store_ops.h), written once: each operation with its statements in
 * every dialect beside it. */
#include <string.h>

#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

/* The first row of a one-row read: moved into *out (the caller cleans it up). */
struct one_event {
    struct store_event *out;
    bool found;
};

static int on_one_event(void *arg, struct store_row *row)
{
    struct one_event *one = arg;
    if (one->found) {
        return ROOST_OK;
    }
    int rc = store_row_event(row, one->out);
    one->found = rc == ROOST_OK;
    return rc;
}

/* The claim's candidate read (claim_select) without its lock: the same rows in the same order,
 * the first one only. */
STORE_STMT(INBOX_PEEK,
           "SELECT " EVCOLS
           " FROM inbox WHERE tenant_id = ? AND agent_id = ? AND status = " ST_PENDING
           " AND (expires_at IS NULL OR expires_at > ?) ORDER BY priority DESC, seq ASC LIMIT 1",
           "SELECT " EVCOLS " FROM inbox FORCE INDEX (inbox_open) WHERE open_state = " ST_PENDING
           " AND tenant_id = ? AND agent_id = ? AND (expires_at IS NULL OR expires_at > ?)"
           " ORDER BY ready_priority DESC, seq ASC LIMIT 1",
           "SELECT " EVCOLS
           " FROM inbox WHERE tenant_id = ? AND agent_id = ? AND status = " ST_PENDING
           " AND (expires_at IS NULL OR expires_at > ?) ORDER BY priority DESC, seq ASC LIMIT 1");

int store_inbox_peek(struct store *st, const char *tenant_id, const char *agent_id, int64_t now_ms,
                     struct store_event *out, bool *found)
{
    struct one_event one = {.out = out};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(now_ms)};
    memset(out, 0, sizeof *out);
    int rc = store_run(st, INBOX_PEEK, p, on_one_event, &one, NULL);
    if (rc != ROOST_OK && one.found) {
        store_event_cleanup(out);
        memset(out, 0, sizeof *out);
        one.found = false;
    }
    *found = one.found;
    return rc;
}

/* The state document is the same for every cursor in [state_cursor, head]; the lowest of those a
 * reader can continue from without 410 is max(state_cursor, purged_through_seq). */
STORE_STMT(STATE_GET,
           "SELECT state, max(state_cursor, purged_through_seq) FROM agents"
           " WHERE tenant_id = ? AND agent_id = ?",
           "SELECT state, GREATEST(state_cursor, purged_through_seq) FROM agents"
           " WHERE tenant_id = ? AND agent_id = ?",
           "SELECT state, GREATEST(state_cursor, purged_through_seq) FROM agents"
           " WHERE tenant_id = ? AND agent_id = ?");

struct state_row {
    char **state;
    int64_t *cursor;
};

static int on_state(void *arg, struct store_row *row)
{
    struct state_row *sr = arg;
    *sr->cursor = row->i64(row, 1);
    return store_row_dup(row, 0, sr->state);
}

int store_inbox_state_get(struct store *st, const char *tenant_id, const char *agent_id,
                          char **state, int64_t *cursor)
{
    struct state_row sr = {.state = state, .cursor = cursor};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id)};
    *state = NULL;
    *cursor = 0;
    int rc = store_run(st, STATE_GET, p, on_state, &sr, NULL);
    if (rc == ROOST_OK && *state == NULL && (*state = strdup("{}")) == NULL) {
        rc = ROOST_ENOMEM;
    }
    return rc;
}

/* ---- the inbox page ---- */

/* The columns of an event joined to its agent row (the page of a read without a snapshot). */
#define EVCOLS_I                                                                                   \
    "i.event_id, i.agent_id, i.seq, i.status, i.priority, i.correlation_id, i.payload, "           \
    "i.created_at, i.available_at, i.expires_at, i.lease_token, i.consumer, i.claimed_at, "        \
    "i.claim_expires_at, i.attempts, i.timeouts, i.nacks, i.last_error, i.completed_at"

/* tenant, agent, after, limit: the page, with the head read apart in the same snapshot. Column
 * 6 is the payload (EVCOLS). */
STORE_STMT_SAME(INBOX_PAGE, "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ? AND agent_id = ?"
                            " AND seq > ? ORDER BY seq LIMIT ?");
/* after, tenant, agent, limit: head, watermark, purge mark and the page in one statement (one
 * snapshot); an agent without events is one row whose event columns are NULL. Column 9 is the
 * payload. */
STORE_STMT_SAME(INBOX_PAGE_HEAD,
                "SELECT a.next_seq - 1, a.purged_through_seq, a.gaps_through_seq, " EVCOLS_I
                " FROM agents a LEFT JOIN inbox i ON i.tenant_id = a.tenant_id"
                " AND i.agent_id = a.agent_id AND i.seq > ?"
                " WHERE a.tenant_id = ? AND a.agent_id = ? ORDER BY i.seq LIMIT ?");

struct page_read {
    struct store_inbox_page *page;
    size_t limit;
    int64_t after_cursor;
    int64_t expect;       /* the next seq the page should hold */
    int64_t gaps_through; /* seqs up to here without a row were purged (INBOX_PAGE_HEAD) */
    bool with_head;       /* INBOX_PAGE_HEAD: the head and watermark lead every row */
    bool holes;           /* STORE_CAP_LATE_VISIBILITY */
    bool stopped;         /* the page ended before the rows did */
    size_t rows;          /* rows seen */
};

/* Moves the expected seq over the gap before `seq` as far as the gaps are purged ones. */
static void skip_purged(struct page_read *pr, int64_t seq)
{
    if (pr->expect <= pr->gaps_through) {
        pr->expect = seq < pr->gaps_through + 1 ? seq : pr->gaps_through + 1;
    }
}

static int on_page_row(void *arg, struct store_row *row)
{
    struct page_read *pr = arg;
    struct store_inbox_page *page = pr->page;
    if (pr->with_head) {
        if (pr->rows++ == 0) {
            page->head = row->i64(row, 0);
            page->oldest_cursor = row->i64(row, 1);
            pr->gaps_through = row->i64(row, 2);
            if (store_cursor_gone(pr->after_cursor, page->oldest_cursor)) {
                return ROOST_EGONE;
            }
        }
        if (row->text(row, 3) == NULL) {
            pr->stopped = true; /* the agent without events (the LEFT JOIN's empty side) */
            return STORE_ROW_STOP;
        }
    }
    row->c0 = pr->with_head ? 3 : 0;
    int64_t seq = row->i64(row, row->c0 + 2);
    if (pr->holes) {
        skip_purged(pr, seq);
    }
    if (pr->holes && seq != pr->expect) {
        page->head = pr->expect - 1; /* a commit not yet visible: stop before it */
        pr->stopped = true;
        return STORE_ROW_STOP;
    }
    pr->expect++;
    if (pr->limit == 0) {
        pr->stopped = true;
        return STORE_ROW_STOP;
    }
    if (page->events.len == pr->limit) {
        page->has_more = true;
        pr->stopped = true;
        return STORE_ROW_STOP;
    }
    int rc = store_row_push_event(row, &page->events);
    if (rc == ROOST_OK) {
        page->next_cursor = seq;
    }
    return rc;
}

/* A dialect that holds a snapshot across statements (read_begin) reads the head, then the page;
 * one without reads both in one statement. Where commits can show out of seq order
 * (STORE_CAP_LATE_VISIBILITY), seqs above the watermark are dense (allocation and row commit
 * together; retention deletes prefixes only; a purge of quarantined rows raises the agent's
 * gaps_through_seq over the seqs it deletes), so a missing seq above that mark is a transaction
 * that released the agent's row lock but is not yet visible: the page stops before the hole and
 * the head is capped there, as a snapshot taken a moment earlier would show; that commit's touch
 * comes after it (test_store_mysql's producers/follower test). Such dialects read without
 * read_begin, so the mark comes in the page's one statement. */
int store_inbox_read(struct store *st, const char *tenant_id, const char *agent_id,
                     int64_t after_cursor, size_t limit, size_t max_bytes,
                     struct store_inbox_page *page)
{
    const struct store_dialect *d = st->dialect;
    struct page_read pr = {.page = page,
                           .limit = limit,
                           .after_cursor = after_cursor,
                           .expect = after_cursor + 1,
                           .with_head = d->read_begin == NULL,
                           .holes = store_dialect_has(d, STORE_CAP_LATE_VISIBILITY)};
    struct store_run_opts o = {.max_bytes = max_bytes, .budget_col = pr.with_head ? 9 : 6};
    int64_t lim = store_limit_page(limit);
    int rc;
    page->has_more = false;
    page->next_cursor = after_cursor;
    page->head = 0;
    page->oldest_cursor = 0;
    if (pr.with_head) {
        struct store_param p[] = {ARG_I(after_cursor), ARG_T(tenant_id), ARG_T(agent_id),
                                  ARG_I(lim)};
        rc = store_run_opt(st, INBOX_PAGE_HEAD, p, &o, on_page_row, &pr, NULL);
    } else {
        bool opened = false;
        int64_t purged = 0;
        if ((rc = d->read_begin(st, &opened)) != ROOST_OK) {
            return store_op_done(st, rc);
        }
        rc = store_agent_head(st, tenant_id, agent_id, &page->head, &purged);
        page->oldest_cursor = purged;
        if (rc == ROOST_OK && store_cursor_gone(after_cursor, purged)) {
            rc = ROOST_EGONE;
        }
        if (rc == ROOST_OK && limit > 0) {
            struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(after_cursor),
                                      ARG_I(lim)};
            rc = store_run_opt(st, INBOX_PAGE, p, &o, on_page_row, &pr, NULL);
        }
        rc = d->read_end(st, opened, rc);
    }
    if (rc == ROOST_OK && o.cut && !pr.stopped && limit > 0) {
        page->has_more = true; /* every row kept was used: the page ended at the byte budget */
    }
    if (rc == ROOST_OK && pr.holes && !page->has_more && limit > 0 && page->head > pr.expect - 1) {
        /* Fewer rows than the head promises: past the purged ones, the next one is not visible
         * yet either. */
        skip_purged(&pr, page->head + 1);
        page->head = pr.expect - 1;
    }
    return store_op_done(st, rc);
}
