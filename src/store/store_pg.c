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
    b->changes.n = b->changes.ret_mark;
    store_pg_exec(b, "ROLLBACK TO SAVEPOINT roost_retention; RELEASE SAVEPOINT roost_retention");
    return rc;
}

/* Opens the pass's savepoint; the change-log rows queued from here on are the pass's. */
static int pg_retention_begin(struct store *st)
{
    struct pg_store *b = store_pg_backend(st);
    b->changes.ret_mark = b->changes.n;
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

/* Without news from the listener the log is still read this often (a safety net). */
#define TAIL_QUIET_SCAN_MS 1000

/* The change log (store_changes.c), read only after news: no statement while the nodes are
 * quiet. Without a listener (the server refused it) every call reads, as a polling tailer. */
int store_pg_tail(struct store *st, struct store_tail_pos *pos, int64_t now_ms,
                  struct store_touches *touches)
{
    struct pg_store *b = store_pg_backend(st);
    if (b->in_tx) {
        snprintf(b->err, sizeof b->err, "tail: must run outside a transaction");
        return ROOST_EINTERNAL;
    }
    uint64_t wakes = 0;
    bool listening = store_pg_listener_poll(b->listener, &wakes);
    if (pos->started && listening && wakes == pos->wakes && now_ms >= pos->scanned_ms &&
        now_ms - pos->scanned_ms < TAIL_QUIET_SCAN_MS) {
        return ROOST_OK;
    }
    pos->wakes = wakes;
    pos->scanned_ms = now_ms;
    return store_changes_tail(st, pos, now_ms, b->origin, touches);
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
