/* SPDX-License-Identifier: MIT */
/* The SQLite backend's driver glue (sqlite://PATH): opening one connection per struct store in
 * WAL mode, migrations, transactions and savepoints, and the cached-statement helpers every
 * statement of store_sqlite.c runs through (the model is mosquitto's persist-sqlite plugin). */
#include "store/store_ops.h"
#include "store/store_sqlite.h"
#include "store/store_sqlite_int.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/limits.h"
#include "store/migrations.h"
#include "store/store_lifecycle.h"
#include "store/store_sql.h"

#include "common/banned.h"

static _Thread_local char open_err[512];

const char *store_sqlite_open_error(void)
{
    return open_err;
}

int store_sqlite_fail(struct sqlite_store *b, int src, const char *what)
{
    snprintf(b->err, sizeof b->err, "%s: %s (sqlite %d)", what, sqlite3_errmsg(b->db), src);
    switch (src & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return ROOST_ERETRY;
    case SQLITE_NOMEM:
        return ROOST_ENOMEM;
    case SQLITE_IOERR:
    case SQLITE_FULL:
        /* The disk failed us (a failing fsync, a full disk): retryable, 503. A COMMIT that ends
         * here did not commit: WAL frames become visible only once the wal-index header is
         * updated, which SQLite does after the fsync succeeded. */
        return ROOST_EUNAVAILABLE;
    default:
        return ROOST_ESTORE;
    }
}

/* Returns the cached statement `id`, reset and with its bindings cleared. */
int store_sqlite_prep(struct sqlite_store *b, enum stmt_id id, sqlite3_stmt **out)
{
    *out = NULL;
    if (b->stmts[id] == NULL) {
        int rc = sqlite3_prepare_v3(b->db, store_sqlite_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                    &b->stmts[id], NULL);
        if (rc != SQLITE_OK) {
            return store_sqlite_fail(b, rc, store_sqlite_sql[id]);
        }
    } else {
        sqlite3_reset(b->stmts[id]);
        sqlite3_clear_bindings(b->stmts[id]);
    }
    *out = b->stmts[id];
    return ROOST_OK;
}

/* Every operation ends here: a statement left mid-step would pin a WAL snapshot (and a stale view
 * for the next autocommit read on this connection). */
void store_sqlite_reset_all(struct sqlite_store *b)
{
    for (int i = 0; i < S_COUNT; i++) {
        if (b->stmts[i] != NULL) {
            sqlite3_reset(b->stmts[i]);
        }
    }
}

/* 1 = a row, 0 = done, < 0 = a roost error. */
int store_sqlite_step(struct sqlite_store *b, sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        return 1;
    }
    if (rc == SQLITE_DONE) {
        return 0;
    }
    return store_sqlite_fail(b, rc, sqlite3_sql(s));
}

/* Runs a statement that returns no rows (or whose rows are ignored). */
int store_sqlite_run(struct sqlite_store *b, sqlite3_stmt *s)
{
    int rc;
    while ((rc = store_sqlite_step(b, s)) == 1) {
    }
    return rc;
}

int store_sqlite_exec_id(struct sqlite_store *b, enum stmt_id id)
{
    sqlite3_stmt *s;
    int rc = store_sqlite_prep(b, id, &s);
    if (rc == ROOST_OK) {
        rc = store_sqlite_run(b, s);
        sqlite3_reset(s);
    }
    return rc;
}

static int64_t row_i64(struct store_row *row, int col)
{
    return sqlite3_column_int64(row->src, col);
}

static const char *row_text(struct store_row *row, int col)
{
    sqlite3_stmt *s = row->src;
    bool null = sqlite3_column_type(s, col) == SQLITE_NULL;
    const unsigned char *t = sqlite3_column_text(s, col);
    if (t == NULL && !null) {
        row->failed = true;
    }
    return (const char *)t;
}

struct store_row store_sqlite_row(sqlite3_stmt *s)
{
    return (struct store_row){.i64 = row_i64, .text = row_text, .src = s};
}

/* ---- the connection ---- */

static int exec_pragma(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        snprintf(open_err, sizeof open_err, "%s: %s", sql, msg != NULL ? msg : sqlite3_errstr(rc));
    }
    sqlite3_free(msg);
    return rc;
}

/* A transaction keeps its changed pages in memory up to this many (64 MiB of 4 KiB pages, the
 * default limits.max_publish_bytes) before it writes them to the WAL ahead of its COMMIT. Past
 * cache_size (2,000 KiB) SQLite would spill them, and a spilled page changed again is rewritten in
 * place, after which the COMMIT reads back every frame from there on to recompute the WAL's
 * running checksum: the COMMIT of a fan-out of 10,000 rows of 1 KiB read back and rewrote the
 * header of about 2,000 of its 2,700 frames, two more system calls each (doc/BENCHMARKS.md, "Big
 * publishes on SQLite"). Readers change no pages, so only the writer's cache grows, and only for
 * its transaction: once committed, its pages are clean and the cache shrinks back to cache_size. */
#define STORE_SQLITE_SPILL_PAGES "16384"

/* The VFS of every connection (store_sqlite_walbuf.c); NULL (the default one) if it could not be
 * registered. */
static const char *walbuf_vfs;

/* Process-wide settings, before SQLite initialises: no global memory statistics (every malloc
 * would take a process-wide mutex; roostd reads none of them), and the WAL-gathering VFS. */
static void sqlite_configure(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    walbuf_vfs = store_sqlite_walbuf_register();
}

int store_sqlite_open(const char *url, const struct store_options *opt, struct store **out)
{
    static const char prefix[] = "sqlite://";
    static pthread_once_t configured = PTHREAD_ONCE_INIT;
    pthread_once(&configured, sqlite_configure);
    *out = NULL;
    open_err[0] = '\0';
    if (strncmp(url, prefix, sizeof prefix - 1) != 0 || url[sizeof prefix - 1] == '\0') {
        snprintf(open_err, sizeof open_err, "expected sqlite://PATH");
        return ROOST_EINVAL;
    }
    const char *path = url + sizeof prefix - 1;
    struct sqlite_store *b = calloc(1, sizeof *b);
    if (b == NULL) {
        return ROOST_ENOMEM;
    }
    b->base.ops = &store_ops_table;
    b->base.dialect = &store_sqlite_dialect;
    /* The database holds payloads and signing secrets: create it 0600 ourselves (SQLite would
     * use 0644 less the umask), and SQLite gives -wal and -shm the database file's mode. Not a
     * umask around the open: the umask is process-wide and other threads create files too. */
    if (path[0] != ':' && strncmp(path, "file:", 5) != 0) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0) {
            close(fd);
        }
    }
    int rc = sqlite3_open_v2(
        path, &b->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, walbuf_vfs);
    if (rc != SQLITE_OK) {
        snprintf(open_err, sizeof open_err, "%s: %s", path,
                 b->db != NULL ? sqlite3_errmsg(b->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(b->db, 1);
    sqlite3_busy_timeout(b->db,
                         opt->busy_timeout_ms > 0 ? opt->busy_timeout_ms : ROOST_BUSY_TIMEOUT_MS);
    if ((rc = exec_pragma(b->db, "PRAGMA journal_mode=WAL")) != SQLITE_OK ||
        (rc = exec_pragma(b->db, opt->synchronous_full ? "PRAGMA synchronous=FULL"
                                                       : "PRAGMA synchronous=NORMAL")) !=
            SQLITE_OK ||
        (rc = exec_pragma(b->db, "PRAGMA foreign_keys=OFF")) != SQLITE_OK ||
        (rc = exec_pragma(b->db, "PRAGMA cache_spill=" STORE_SQLITE_SPILL_PAGES)) != SQLITE_OK) {
        goto fail;
    }
    /* Under FULL every commit syncs the WAL, and checkpoints beside it made the tenant fairness
     * bench worse, not better (doc/BENCHMARKS.md, "One tenant beside another's attack"): there
     * SQLite keeps its own. */
    if (!opt->synchronous_full && store_sqlite_ckpt_start(b, path) != ROOST_OK) {
        rc = SQLITE_NOMEM;
        goto fail;
    }
    snprintf(b->err, sizeof b->err, "no error");
    *out = &b->base;
    return ROOST_OK;
fail:
    sqlite3_close(b->db);
    free(b);
    return (rc & 0xff) == SQLITE_BUSY ? ROOST_ERETRY : ROOST_ESTORE;
}

void store_sqlite_close(struct store *st)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    if (b == NULL) {
        return;
    }
    for (int i = 0; i < S_COUNT; i++) {
        sqlite3_finalize(b->stmts[i]);
    }
    store_sqlite_run_close(b);
    store_sqlite_ckpt_stop(b);
    sqlite3_close(b->db);
    free(b);
}

const char *store_sqlite_errmsg(struct store *st)
{
    return store_sqlite_backend(st)->err;
}

bool store_sqlite_ping(struct store *st)
{
    return sqlite3_exec(store_sqlite_backend(st)->db, "SELECT 1", NULL, NULL, NULL) == SQLITE_OK;
}

static int exec_sql(struct sqlite_store *b, const char *sql, const char *what)
{
    char *msg = NULL;
    int rc = sqlite3_exec(b->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        int out = store_sqlite_fail(b, rc, what);
        if (msg != NULL) {
            snprintf(b->err, sizeof b->err, "%s: %s (sqlite %d)", what, msg, rc);
        }
        sqlite3_free(msg);
        return out;
    }
    sqlite3_free(msg);
    return ROOST_OK;
}

/* Applies the embedded migrations not yet recorded, all in one IMMEDIATE transaction: a second
 * process waits on the write lock and then finds them applied. */
int store_sqlite_migrate(struct store *st)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    sqlite3_stmt *check = NULL, *record = NULL;
    int rc = exec_sql(b, "BEGIN IMMEDIATE", "migrate: begin");
    if (rc != ROOST_OK) {
        return rc;
    }
    rc = exec_sql(b,
                  "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                  " name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT",
                  "migrate: schema_migrations");
    if (rc != ROOST_OK) {
        goto out;
    }
    int src = sqlite3_prepare_v2(b->db, "SELECT 1 FROM schema_migrations WHERE version = ?1", -1,
                                 &check, NULL);
    if (src == SQLITE_OK) {
        src = sqlite3_prepare_v2(b->db,
                                 "INSERT INTO schema_migrations (version, name, applied_at)"
                                 " VALUES (?1, ?2, CAST(strftime('%s', 'now') AS INTEGER) * 1000)",
                                 -1, &record, NULL);
    }
    if (src != SQLITE_OK) {
        rc = store_sqlite_fail(b, src, "migrate: prepare");
        goto out;
    }
    for (size_t i = 0; i < store_migrations_sqlite_count; i++) {
        const struct store_migration *m = &store_migrations_sqlite[i];
        sqlite3_reset(check);
        sqlite3_bind_int(check, 1, m->version);
        rc = store_sqlite_step(b, check);
        if (rc < 0) {
            goto out;
        }
        if (rc == 1) {
            rc = ROOST_OK;
            continue;
        }
        if ((rc = exec_sql(b, m->sql, m->name)) != ROOST_OK) {
            goto out;
        }
        sqlite3_reset(record);
        sqlite3_bind_int(record, 1, m->version);
        bind_text(record, 2, m->name);
        if ((rc = store_sqlite_run(b, record)) != ROOST_OK) {
            goto out;
        }
    }
    sqlite3_finalize(check);
    sqlite3_finalize(record);
    return exec_sql(b, "COMMIT", "migrate: commit");
out:
    sqlite3_finalize(check);
    sqlite3_finalize(record);
    if (!sqlite3_get_autocommit(b->db)) {
        sqlite3_exec(b->db, "ROLLBACK", NULL, NULL, NULL);
    }
    return rc;
}

/* ---- transactions ---- */

int store_sqlite_begin(struct store *st)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    int rc = store_sqlite_exec_id(b, S_BEGIN);
    store_sqlite_reset_all(b);
    return rc;
}

int store_sqlite_commit(struct store *st)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    store_sqlite_reset_all(b);
    return store_sqlite_exec_id(b, S_COMMIT);
}

int store_sqlite_rollback(struct store *st)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    store_sqlite_reset_all(b);
    /* SQLite may already have rolled back on its own (for instance after SQLITE_FULL). */
    if (sqlite3_get_autocommit(b->db)) {
        return ROOST_OK;
    }
    return store_sqlite_exec_id(b, S_ROLLBACK);
}

int store_sqlite_savepoint(struct store *st)
{
    return store_sqlite_exec_id(store_sqlite_backend(st), S_SAVEPOINT);
}

int store_sqlite_savepoint_release(struct store *st)
{
    return store_sqlite_exec_id(store_sqlite_backend(st), S_SAVEPOINT_RELEASE);
}

int store_sqlite_savepoint_rollback(struct store *st)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    store_sqlite_reset_all(b);
    int rc = store_sqlite_exec_id(b, S_SAVEPOINT_ROLLBACK);
    return rc != ROOST_OK ? rc : store_sqlite_exec_id(b, S_SAVEPOINT_RELEASE);
}

/* ---- reads ---- */

/* Opens a read transaction when none is open, so several statements share one snapshot. */
int store_sqlite_read_begin(struct sqlite_store *b, bool *opened)
{
    *opened = false;
    if (!sqlite3_get_autocommit(b->db)) {
        return ROOST_OK;
    }
    int rc = store_sqlite_exec_id(b, S_BEGIN_READ);
    *opened = rc == ROOST_OK;
    return rc;
}

int store_sqlite_read_end(struct sqlite_store *b, bool opened, int rc)
{
    store_sqlite_reset_all(b);
    if (opened) {
        int rc2 = store_sqlite_exec_id(b, S_COMMIT);
        if (rc2 != ROOST_OK && !sqlite3_get_autocommit(b->db)) {
            store_sqlite_exec_id(b, S_ROLLBACK);
        }
        if (rc == ROOST_OK) {
            rc = rc2;
        }
    }
    return rc;
}
