/* SPDX-License-Identifier: MIT */
/* The SQLite dialect (sqlite://PATH, struct store_dialect): its facts and capabilities, the
 * transaction statements, and the driver's entries (store_sqlite_conn.c: statements prepared once
 * and cached). Every operation's SQL is in its subject file (store_ops.h), SQLite's column beside
 * the others. */
#include "store/store_sqlite.h"
#include "store/store_sqlite_int.h"

#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

const char *const store_sqlite_sql[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_BEGIN_READ] = "BEGIN DEFERRED",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    /* Requests inside one group-commit transaction run one after another, so one name is enough. */
    [S_SAVEPOINT] = "SAVEPOINT roost_req",
    [S_SAVEPOINT_RELEASE] = "RELEASE roost_req",
    [S_SAVEPOINT_ROLLBACK] = "ROLLBACK TO roost_req",
    [S_RET_SAVEPOINT] = "SAVEPOINT roost_retention",
    [S_RET_RELEASE] = "RELEASE roost_retention",
    [S_RET_ROLLBACK] = "ROLLBACK TO roost_retention",
};

static int sq_retention_begin(struct store *st)
{
    return store_sqlite_exec_id(store_sqlite_backend(st), S_RET_SAVEPOINT);
}

static int sq_retention_end(struct store *st, int rc)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    if (rc == ROOST_OK) {
        return store_sqlite_exec_id(b, S_RET_RELEASE);
    }
    store_sqlite_reset_all(b); /* a statement mid-step would keep the rollback from running */
    store_sqlite_exec_id(b, S_RET_ROLLBACK);
    store_sqlite_exec_id(b, S_RET_RELEASE);
    return rc;
}

/* A unique key refused the last statement. */
static bool sq_dup_key(struct store *st)
{
    int e = sqlite3_extended_errcode(store_sqlite_backend(st)->db);
    return e == SQLITE_CONSTRAINT_UNIQUE || e == SQLITE_CONSTRAINT_PRIMARYKEY;
}

/* A read of several statements sees one snapshot: a read transaction, unless one is open. */
static int sq_read_begin(struct store *st, bool *opened)
{
    return store_sqlite_read_begin(store_sqlite_backend(st), opened);
}

static int sq_read_end(struct store *st, bool opened, int rc)
{
    return store_sqlite_read_end(store_sqlite_backend(st), opened, rc);
}

const struct store_dialect store_sqlite_dialect = {
    .scheme = "sqlite",
    .default_file = "roost.db",
    .open = store_sqlite_open,
    .open_error = store_sqlite_open_error,
    .close = store_sqlite_close,
    .migrate = store_sqlite_migrate,
    .errmsg = store_sqlite_errmsg,
    .ping = store_sqlite_ping,
    .begin = store_sqlite_begin,
    .commit = store_sqlite_commit,
    .rollback = store_sqlite_rollback,
    .savepoint = store_sqlite_savepoint,
    .savepoint_release = store_sqlite_savepoint_release,
    .savepoint_rollback = store_sqlite_savepoint_rollback,
    .tail = NULL,
    .read_begin = sq_read_begin,
    .read_end = sq_read_end,
    .done = sq_done,
    .set_error = sq_set_error,
    .sql_col = STORE_SQL_SQLITE,
    .caps = STORE_CAP_SINGLE_WRITER | STORE_CAP_UPSERT_WHERE | STORE_CAP_PUBLISH_ROWS_AS_BATCH |
            STORE_CAP_CLAIM_ALL | STORE_CAP_MERGE_PATCH,
    .dup_key = sq_dup_key,
    .retention_begin = sq_retention_begin,
    .retention_end = sq_retention_end,
    .run = store_sqlite_run_stmt,
};
