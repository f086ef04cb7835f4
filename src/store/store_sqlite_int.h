/* SPDX-License-Identifier: MIT */
/* Inside the SQLite backend: the connection struct, the statement ids and the driver glue
 * (store_sqlite_conn.c) that store_sqlite.c's statements run through. Internal to src/store/. */
#ifndef ROOST_STORE_SQLITE_INT_H
#define ROOST_STORE_SQLITE_INT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "store/store.h"
#include "store/store_sql.h"
#include "store/store_stmt.h"

/* Registers the VFS that writes a transaction's WAL frames in one call (store_sqlite_walbuf.c) and
 * returns its name, or NULL (then the default VFS serves). */
const char *store_sqlite_walbuf_register(void);

/* Checkpoints (store_sqlite_ckpt.c, synchronous=NORMAL stores): a commit that leaves the WAL at
 * SQLITE_CKPT_PAGES pages or more (SQLite's automatic checkpoint's default) hands a checkpoint to
 * the connection's checkpoint thread; at SQLITE_CKPT_INLINE_PAGES (32 MiB of 4 KiB pages) it
 * checkpoints itself. */
#define SQLITE_CKPT_PAGES 1000
#define SQLITE_CKPT_INLINE_PAGES 8000

struct sqlite_ckpt;
struct sqlite_ckpt_stats {
    unsigned long long handed;       /* checkpoints handed to the thread */
    unsigned long long background;   /* checkpoints the thread ran */
    unsigned long long inline_ckpts; /* checkpoints run by the committing connection */
};

enum stmt_id {
    S_BEGIN,
    S_BEGIN_READ,
    S_COMMIT,
    S_ROLLBACK,
    S_SAVEPOINT,
    S_SAVEPOINT_RELEASE,
    S_SAVEPOINT_ROLLBACK,
    S_RET_SAVEPOINT,
    S_RET_RELEASE,
    S_RET_ROLLBACK,
    S_COUNT
};

/* The SQL of each statement (store_sqlite.c). */
extern const char *const store_sqlite_sql[S_COUNT];

struct sqlite_store {
    struct store base; /* first: struct store * and struct sqlite_store * convert */
    sqlite3 *db;
    sqlite3_stmt *stmts[S_COUNT];
    /* The statements of descriptors (store_stmt.h) this connection ran: cache maps each to its
     * index in run[0..n_run). */
    struct store_stmt_cache cache;
    sqlite3_stmt **run;
    size_t n_run;
    char err[512];
    struct sqlite_ckpt *ckpt; /* store_sqlite_ckpt_start; NULL: SQLite's own checkpoints */
};

static inline struct sqlite_store *store_sqlite_backend(struct store *st)
{
    return (struct sqlite_store *)st;
}

/* Moves b's checkpoints to a thread of its own (started at the first one) that opens `path` with
 * synchronous=NORMAL (the store's setting: only NORMAL stores call this). ROOST_OK or ROOST_ENOMEM
 * (then SQLite's automatic checkpoint stays). Stop joins the thread; call it before closing b->db.
 */
int store_sqlite_ckpt_start(struct sqlite_store *b, const char *path);
void store_sqlite_ckpt_stop(struct sqlite_store *b);
/* The counts of b's checkpoints so far (all zero without a checkpoint thread). */
void store_sqlite_ckpt_stats(struct sqlite_store *b, struct sqlite_ckpt_stats *out);

/* The dialect primitives the shared lifecycle calls (store_sqlite.c). */
extern const struct store_dialect store_sqlite_dialect;

/* Records the failure detail and maps the driver code: busy/locked → ROOST_ERETRY (the caller
 * retries the transaction), out of memory → ROOST_ENOMEM, an I/O error or a full disk →
 * ROOST_EUNAVAILABLE (retryable; nothing was committed), anything else → ROOST_ESTORE. */
int store_sqlite_fail(struct sqlite_store *b, int src, const char *what);
/* Returns the cached statement `id`, reset and with its bindings cleared. */
int store_sqlite_prep(struct sqlite_store *b, enum stmt_id id, sqlite3_stmt **out);
/* Every operation ends here: a statement left mid-step would pin a WAL snapshot (and a stale view
 * for the next autocommit read on this connection). */
void store_sqlite_reset_all(struct sqlite_store *b);
/* 1 = a row, 0 = done, < 0 = a roost error. */
int store_sqlite_step(struct sqlite_store *b, sqlite3_stmt *s);
/* Runs a statement that returns no rows (or whose rows are ignored). */
int store_sqlite_run(struct sqlite_store *b, sqlite3_stmt *s);
int store_sqlite_exec_id(struct sqlite_store *b, enum stmt_id id);
/* The current row of s, for the shared decoders of store_sql.h. */
struct store_row store_sqlite_row(sqlite3_stmt *s);

static inline int store_sqlite_col_dup(sqlite3_stmt *s, int i, char **out)
{
    struct store_row row = store_sqlite_row(s);
    return store_row_dup(&row, i, out);
}

/* Fills ev from a row selected with EVCOLS starting at column 0. */
static inline int store_sqlite_row_to_event(sqlite3_stmt *s, struct store_event *ev)
{
    struct store_row row = store_sqlite_row(s);
    return store_row_event(&row, ev);
}

/* Appends the current row (EVCOLS) to list. */
static inline int store_sqlite_push_row(sqlite3_stmt *s, struct store_events *list)
{
    struct store_row row = store_sqlite_row(s);
    return store_row_push_event(&row, list);
}

/* Opens a read transaction when none is open, so several statements share one snapshot;
 * store_sqlite_read_end closes what it opened and resets every statement. */
int store_sqlite_read_begin(struct sqlite_store *b, bool *opened);
int store_sqlite_read_end(struct sqlite_store *b, bool opened, int rc);

/* The dialect's statement runner (store_sqlite_query.c): struct store_dialect.run, and the
 * close that finalizes what it prepared. */
int store_sqlite_run_stmt(struct store *st, const struct store_stmt *d, const struct store_param *p,
                          size_t np, struct store_run_opts *o, store_row_fn on_row, void *arg,
                          int64_t *changed);
void store_sqlite_run_close(struct sqlite_store *b);

/* The connection's vtable entries (store_sqlite_conn.c). */
int store_sqlite_open(const char *url, const struct store_options *opt, struct store **out);
void store_sqlite_close(struct store *st);
const char *store_sqlite_errmsg(struct store *st);
bool store_sqlite_ping(struct store *st);
int store_sqlite_migrate(struct store *st);
int store_sqlite_begin(struct store *st);
int store_sqlite_commit(struct store *st);
int store_sqlite_rollback(struct store *st);
int store_sqlite_savepoint(struct store *st);
int store_sqlite_savepoint_release(struct store *st);
int store_sqlite_savepoint_rollback(struct store *st);

static inline void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v == NULL) {
        sqlite3_bind_null(s, i);
    } else {
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    }
}

static inline void bind_i64_or_null(sqlite3_stmt *s, int i, int64_t v)
{
    if (v == 0) {
        sqlite3_bind_null(s, i);
    } else {
        sqlite3_bind_int64(s, i, v);
    }
}

/* Copies a text column into a fixed array, truncating; a NULL column gives "". */
static inline void col_copy(sqlite3_stmt *s, int i, char *dst, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(dst, cap, "%s", t != NULL ? (const char *)t : "");
}

/* The dialect's shorthand (store_sqlite.c): every operation ends with a reset; each primitive
 * prepares, steps and counts the rows its statement changed. */
static inline void sq_done(struct store *st)
{
    store_sqlite_reset_all(store_sqlite_backend(st));
}

static inline void sq_set_error(struct store *st, const char *msg)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    snprintf(b->err, sizeof b->err, "%s", msg);
}

/* Prepares statement `id` of the store into *s; the primitives start here. */
static inline int stmt(struct store *st, enum stmt_id id, sqlite3_stmt **s)
{
    return store_sqlite_prep(store_sqlite_backend(st), id, s);
}

static inline int step(struct store *st, sqlite3_stmt *s)
{
    return store_sqlite_step(store_sqlite_backend(st), s);
}

/* Runs s; *changed when it changed exactly one row. */
static inline int run_one(struct store *st, sqlite3_stmt *s, bool *changed)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    int rc = store_sqlite_run(b, s);
    *changed = rc == ROOST_OK && sqlite3_changes(b->db) == 1;
    return rc;
}

/* Runs s; *count = the rows it changed. */
static inline int run_count(struct store *st, sqlite3_stmt *s, size_t *count)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    int rc = store_sqlite_run(b, s);
    *count = rc == ROOST_OK ? (size_t)sqlite3_changes(b->db) : 0;
    return rc;
}

#endif
