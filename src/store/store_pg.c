/* SPDX-License-Identifier: MIT */
/* The PostgreSQL dialect (struct store_dialect): its facts and capabilities, the driver's entries
 * (store_pg_conn.c: connection, statements, transactions, the lost COMMIT answer) and the
 * change-log tailer. Every operation's SQL is in its subject file (store_ops.h), PostgreSQL's
 * column beside the others. */
#include "store/store_pg.h"
#include "store/store_pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

#define PG STORE_SQL_PG

/* ---- the tailer ---- */

STORE_STMT_ONLY(PG_TAIL_MAX, PG, "SELECT COALESCE(MAX(id), 0) FROM roost_changes");
STORE_STMT_ONLY(PG_TAIL_SCAN, PG,
                "SELECT id, tenant_id, agent_id, head, origin FROM roost_changes WHERE id > ?"
                " ORDER BY id LIMIT ?");
/* ids as an array literal ('{4,7}') */
STORE_STMT_ONLY(PG_TAIL_GAPS, PG,
                "SELECT id, tenant_id, agent_id, head, origin FROM roost_changes"
                " WHERE id = ANY(?::bigint[])");

/* ---- row callbacks ---- */

struct i64s {
    int64_t v[2];
    bool found;
};

/* The first column of a row. */
static int row_i64s(void *arg, struct store_row *row)
{
    struct i64s *o = arg;
    o->v[0] = row->i64(row, 0);
    o->found = true;
    return ROOST_OK;
}

/* ---- the dialect: agents and touches ---- */

static void pg_error_set(struct store *st, const char *msg)
{
    struct pg_store *b = store_pg_backend(st);
    snprintf(b->err, sizeof b->err, "%s", msg);
}

/* Records the change for the other nodes (written in this transaction's COMMIT round trip). */
static int pg_change_log(struct store *st, const char *tenant_id, const char *agent_id,
                         int64_t head, int64_t now_ms)
{
    return store_pg_change(store_pg_backend(st), tenant_id, agent_id, head, now_ms);
}

/* ---- retention ---- */

static int pg_retention_end(struct store *st, int rc)
{
    struct pg_store *b = store_pg_backend(st);
    if (rc == ROOST_OK) {
        return store_pg_exec(b, "RELEASE SAVEPOINT roost_retention");
    }
    b->n_changes = b->changes_ret_mark;
    store_pg_exec(b, "ROLLBACK TO SAVEPOINT roost_retention; RELEASE SAVEPOINT roost_retention");
    return rc;
}

/* Opens the pass's savepoint; the change-log rows queued from here on are the pass's. */
static int pg_retention_begin(struct store *st)
{
    struct pg_store *b = store_pg_backend(st);
    b->changes_ret_mark = b->n_changes;
    return store_pg_exec(b, "SAVEPOINT roost_retention");
}

static int64_t pg_insert_id(struct store *st)
{
    return store_pg_backend(st)->returned;
}

/* A unique key refused the last statement. */
static bool pg_dup_key(struct store *st)
{
    return strcmp(store_pg_backend(st)->sqlstate, "23505") == 0;
}

/* ---- the tailer ---- */

#define TAIL_PAGE 1000
#define TAIL_GAP_BATCH 64
#define TAIL_GAPS_MAX 4096
/* How far below the end of the log a starting tailer looks for ids still uncommitted. */
#define TAIL_START_WINDOW 1000
/* Without news from the listener the log is still read this often (a safety net). */
#define TAIL_QUIET_SCAN_MS 1000

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

/* Walks rows of roost_changes in id order: ids passed over become gaps (unless filling), each
 * row is a touch unless this process wrote it (pinged at its commit). */
struct tail_rows {
    struct pg_store *b;
    struct store_tail_pos *pos;
    struct store_touches *touches;
    int64_t now_ms;
    int64_t next; /* the id expected next (scan), 0 when rows fill gaps */
    size_t n;
    bool no_touch; /* the start: rows only mark what is committed */
};

static int row_tail(void *arg, struct store_row *row)
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
        (t->b->origin != 0 && row->i64(row, 4) == t->b->origin)) {
        return rc;
    }
    return store_touches_add(t->touches, tenant, agent, row->i64(row, 3));
}

/* Re-checks the open gaps (ids passed over while their transaction was still open), then reads
 * what committed above the high mark; ids skipped there become gaps. Every statement runs in
 * autocommit at READ COMMITTED, so each sees the latest commits. */
int store_pg_tail(struct store *st, struct store_tail_pos *pos, int64_t now_ms,
                  struct store_touches *touches)
{
    struct pg_store *b = store_pg_backend(st);
    if (b->in_tx) {
        snprintf(b->err, sizeof b->err, "tail: must run outside a transaction");
        return ROOST_EINTERNAL;
    }
    /* Nothing to read without news: no statement while the nodes are quiet. Without a listener
     * (the server refused it) every call reads, as a polling tailer. */
    uint64_t wakes = 0;
    bool listening = store_pg_listener_poll(b->listener, &wakes);
    if (pos->started && listening && wakes == pos->wakes && now_ms >= pos->scanned_ms &&
        now_ms - pos->scanned_ms < TAIL_QUIET_SCAN_MS) {
        return ROOST_OK;
    }
    pos->wakes = wakes;
    pos->scanned_ms = now_ms;
    struct tail_rows t = {.b = b, .pos = pos, .touches = touches, .now_ms = now_ms};
    int rc;
    if (!pos->started) {
        /* Start at the end of the log; ids just below it not committed yet belong to open
         * transactions, so they start out as gaps rather than as seen. */
        struct i64s end = {0};
        if ((rc = store_run0(st, PG_TAIL_MAX, row_i64s, &end, NULL)) != ROOST_OK) {
            return rc;
        }
        int64_t from = end.v[0] > TAIL_START_WINDOW ? end.v[0] - TAIL_START_WINDOW : 0;
        t.next = from + 1;
        t.no_touch = true;
        struct store_param p[] = {ARG_I(from), ARG_I(TAIL_START_WINDOW)};
        if ((rc = store_run(st, PG_TAIL_SCAN, p, row_tail, &t, NULL)) != ROOST_OK) {
            return rc;
        }
        pos->high = t.next - 1 > end.v[0] ? t.next - 1 : end.v[0];
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
        char ids[TAIL_GAP_BATCH * 22 + 3];
        size_t len = 0;
        ids[len++] = '{';
        for (size_t k = i; k < i + TAIL_GAP_BATCH && k < pos->n_gaps; k++) {
            len += (size_t)snprintf(ids + len, sizeof ids - len, "%s%lld", k > i ? "," : "",
                                    (long long)pos->gaps[k].id);
        }
        snprintf(ids + len, sizeof ids - len, "}");
        struct store_param p[] = {ARG_T(ids)};
        t.next = 0;
        rc = store_run(st, PG_TAIL_GAPS, p, row_tail, &t, NULL);
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
        rc = store_run(st, PG_TAIL_SCAN, p, row_tail, &t, NULL);
        if (t.next - 1 > pos->high) {
            pos->high = t.next - 1;
        }
        if (t.n < TAIL_PAGE) {
            break;
        }
    }
    return rc;
}

const struct store_dialect store_pg_dialect = {
    .scheme = "postgres",
    .scheme_alias = "postgresql",
    .open = store_pg_open,
    .open_error = store_pg_open_error,
    .close = store_pg_close,
    .migrate = store_pg_migrate,
    .errmsg = store_pg_errmsg,
    .ping = store_pg_ping,
    .begin = store_pg_begin,
    .commit = store_pg_commit,
    .rollback = store_pg_rollback,
    .savepoint = store_pg_savepoint,
    .savepoint_release = store_pg_savepoint_release,
    .savepoint_rollback = store_pg_savepoint_rollback,
    .tail = store_pg_tail,
    .done = NULL,
    .set_error = pg_error_set,
    .sql_col = STORE_SQL_PG,
    .caps = STORE_CAP_CHANGE_LOG | STORE_CAP_UPSERT_WHERE | STORE_CAP_CLAIM_ALL |
            STORE_CAP_ROUND_TRIP | STORE_CAP_INSERT_ID | STORE_CAP_ARRAY_PARAMS,
    .insert_id = pg_insert_id,
    .dup_key = pg_dup_key,
    .change_log = pg_change_log,
    .retention_begin = pg_retention_begin,
    .retention_end = pg_retention_end,
    .run = store_pg_run,
};
