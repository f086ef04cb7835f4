/* SPDX-License-Identifier: MIT */
/* The change log of the dialects with several writers (store_changes.h): the queued rows of a
 * transaction and the tailer. roost_changes ids become visible out of order (DESIGN §4.2's problem
 * again), hence the gaps of struct store_tail_pos. */
#include "store/store_changes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_lifecycle.h"
#include "store/store_sql.h"

#include "common/banned.h"

/* Room for one more of n items of elem bytes in *items (capacity *cap, doubled from 16). */
static int room(void **items, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap) {
        return ROOST_OK;
    }
    size_t grown_cap = *cap ? *cap * 2 : 16;
    void *grown = realloc(*items, grown_cap * elem);
    if (grown == NULL) {
        return ROOST_ENOMEM;
    }
    *items = grown;
    *cap = grown_cap;
    return ROOST_OK;
}

int store_changes_add(struct store_changes *c, const char *tenant_id, const char *agent_id,
                      int64_t head, int64_t at_ms)
{
    size_t from = c->mark > c->ret_mark ? c->mark : c->ret_mark;
    for (size_t i = from; i < c->n; i++) {
        struct store_change *r = &c->rows[i];
        if (strcmp(r->agent_id, agent_id) == 0 && strcmp(r->tenant_id, tenant_id) == 0) {
            r->head = head > r->head ? head : r->head;
            r->at_ms = at_ms > r->at_ms ? at_ms : r->at_ms;
            return ROOST_OK;
        }
    }
    if (room((void **)&c->rows, c->n, &c->cap, sizeof *c->rows) != ROOST_OK) {
        return ROOST_ENOMEM;
    }
    struct store_change *r = &c->rows[c->n++];
    snprintf(r->tenant_id, sizeof r->tenant_id, "%s", tenant_id);
    snprintf(r->agent_id, sizeof r->agent_id, "%s", agent_id);
    r->head = head;
    r->at_ms = at_ms;
    return ROOST_OK;
}

void store_changes_free(struct store_changes *c)
{
    free(c->rows);
    memset(c, 0, sizeof *c);
}

void store_changes_sql(struct dynbuf *sb, const struct store_change *rows, size_t n, int64_t origin,
                       const char *head_sql, store_quote_fn quote, void *arg)
{
    if (n == 0) {
        return;
    }
    dynbuf_adds(sb, "INSERT INTO roost_changes (tenant_id, agent_id, head, at_ms, origin) VALUES ");
    for (size_t i = 0; i < n; i++) {
        dynbuf_adds(sb, i > 0 ? ", (" : "(");
        quote(sb, arg, rows[i].tenant_id);
        dynbuf_adds(sb, ", ");
        quote(sb, arg, rows[i].agent_id);
        if (head_sql != NULL) {
            dynbuf_addf(sb, ", %s", head_sql);
        } else {
            dynbuf_addf(sb, ", %lld", (long long)rows[i].head);
        }
        dynbuf_addf(sb, ", %lld, %lld)", (long long)rows[i].at_ms, (long long)origin);
    }
    dynbuf_adds(sb, "; ");
}

/* ---- the tailer ---- */

#define TAIL_PAGE 1000
#define TAIL_GAP_BATCH 16
#define TAIL_GAPS_MAX 4096
/* How far below the end of the log a starting tailer looks for ids still uncommitted. */
#define TAIL_START_WINDOW 1000

#define TAIL_MAX_SQL "SELECT COALESCE(MAX(id), 0) FROM roost_changes"
STORE_STMT_ONLY2(TAIL_MAX, STORE_SQL_MYSQL, TAIL_MAX_SQL, STORE_SQL_PG, TAIL_MAX_SQL);
/* after, limit */
#define TAIL_SCAN_SQL                                                                              \
    "SELECT id, tenant_id, agent_id, head, origin FROM roost_changes WHERE id > ?"                 \
    " ORDER BY id LIMIT ?"
STORE_STMT_ONLY2(TAIL_SCAN, STORE_SQL_MYSQL, TAIL_SCAN_SQL, STORE_SQL_PG, TAIL_SCAN_SQL);
/* TAIL_GAP_BATCH ids (-1 pads) */
#define TAIL_GAPS_SQL                                                                              \
    "SELECT id, tenant_id, agent_id, head, origin FROM roost_changes"                              \
    " WHERE id IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
STORE_STMT_ONLY2(TAIL_GAPS, STORE_SQL_MYSQL, TAIL_GAPS_SQL, STORE_SQL_PG, TAIL_GAPS_SQL);

static int gap_add(struct store_tail_pos *pos, int64_t id, int64_t now_ms)
{
    if (pos->n_gaps == TAIL_GAPS_MAX) {
        /* Bounded: the oldest gap is the one least likely to fill. */
        memmove(pos->gaps, pos->gaps + 1, (pos->n_gaps - 1) * sizeof *pos->gaps);
        pos->n_gaps--;
    }
    if (room((void **)&pos->gaps, pos->n_gaps, &pos->cap_gaps, sizeof *pos->gaps) != ROOST_OK) {
        return ROOST_ENOMEM;
    }
    pos->gaps[pos->n_gaps++] = (struct store_tail_gap){.id = id, .since_ms = now_ms};
    return ROOST_OK;
}

static int on_end(void *arg, struct store_row *row)
{
    *(int64_t *)arg = row->i64(row, 0);
    return ROOST_OK;
}

/* Walks rows of roost_changes in id order: ids passed over become gaps (unless filling), each
 * row is a touch unless this process wrote it (pinged at its commit). */
struct tail_rows {
    struct store_tail_pos *pos;
    struct store_touches *touches;
    int64_t origin;
    int64_t now_ms;
    int64_t next; /* the id expected next (scan), 0 when rows fill gaps */
    size_t n;
    bool no_touch; /* the start: rows only mark what is committed */
};

static int on_tail_row(void *arg, struct store_row *row)
{
    struct tail_rows *t = arg;
    int64_t id = row->i64(row, 0);
    int rc = ROOST_OK;
    t->n++;
    if (t->next > 0) {
        for (; t->next < id && rc == ROOST_OK; t->next++) {
            rc = gap_add(t->pos, t->next, t->now_ms);
        }
        t->next = id + 1;
    } else {
        for (size_t k = 0; k < t->pos->n_gaps; k++) {
            if (t->pos->gaps[k].id == id) {
                t->pos->gaps[k].id = 0; /* filled: compacted away */
            }
        }
    }
    const char *tenant = row->text(row, 1), *agent = row->text(row, 2);
    if (rc != ROOST_OK || t->no_touch || tenant == NULL || agent == NULL ||
        (t->origin != 0 && row->i64(row, 4) == t->origin)) {
        return rc;
    }
    return store_touches_add(t->touches, tenant, agent, row->i64(row, 3));
}

/* Every statement runs in autocommit at READ COMMITTED, so each sees the latest commits. */
int store_changes_tail(struct store *st, struct store_tail_pos *pos, int64_t now_ms, int64_t origin,
                       struct store_touches *touches)
{
    struct tail_rows t = {.pos = pos, .touches = touches, .origin = origin, .now_ms = now_ms};
    int rc;
    if (!pos->started) {
        /* Start at the end of the log; ids just below it not committed yet belong to open
         * transactions, so they start out as gaps rather than as seen. */
        int64_t end = 0;
        if ((rc = store_run0(st, TAIL_MAX, on_end, &end, NULL)) != ROOST_OK) {
            return rc;
        }
        int64_t from = end > TAIL_START_WINDOW ? end - TAIL_START_WINDOW : 0;
        t.next = from + 1;
        t.no_touch = true;
        struct store_param p[] = {ARG_I(from), ARG_I(TAIL_START_WINDOW)};
        if ((rc = store_run(st, TAIL_SCAN, p, on_tail_row, &t, NULL)) != ROOST_OK) {
            return rc;
        }
        pos->high = t.next - 1 > end ? t.next - 1 : end;
        pos->started = true;
        return ROOST_OK;
    }
    /* Gaps too old to fill any more (rolled back, or pruned) are dropped. */
    size_t keep = 0;
    for (size_t i = 0; i < pos->n_gaps; i++) {
        if (now_ms - pos->gaps[i].since_ms < STORE_TAIL_GAP_MS) {
            pos->gaps[keep++] = pos->gaps[i];
        }
    }
    pos->n_gaps = keep;
    rc = ROOST_OK;
    for (size_t i = 0; i < pos->n_gaps && rc == ROOST_OK; i += TAIL_GAP_BATCH) {
        struct store_param p[TAIL_GAP_BATCH];
        for (size_t k = 0; k < TAIL_GAP_BATCH; k++) {
            p[k] = (struct store_param)ARG_I(i + k < pos->n_gaps ? pos->gaps[i + k].id : -1);
        }
        t.next = 0;
        rc = store_run(st, TAIL_GAPS, p, on_tail_row, &t, NULL);
    }
    keep = 0;
    for (size_t i = 0; i < pos->n_gaps; i++) {
        if (pos->gaps[i].id != 0) {
            pos->gaps[keep++] = pos->gaps[i];
        }
    }
    pos->n_gaps = keep;
    while (rc == ROOST_OK) {
        t.next = pos->high + 1;
        t.n = 0;
        struct store_param p[] = {ARG_I(pos->high), ARG_I(TAIL_PAGE)};
        rc = store_run(st, TAIL_SCAN, p, on_tail_row, &t, NULL);
        if (t.next - 1 > pos->high) {
            pos->high = t.next - 1;
        }
        if (t.n < TAIL_PAGE) {
            break;
        }
    }
    return rc;
}
