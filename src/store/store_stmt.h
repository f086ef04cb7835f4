/* SPDX-License-Identifier: MIT */
/* A store statement written once: a static descriptor holding its SQL in every dialect, run
 * through the dialect's prepared-statement cache (struct store_dialect's run: prepared once per
 * connection on first use, keyed by the descriptor, reset and rebound on every later call).
 *
 *     STORE_STMT(PEEK,
 *                "SELECT ... ORDER BY priority DESC, seq LIMIT 1",        -- SQLite
 *                "SELECT ... ORDER BY ready_priority DESC, seq LIMIT 1",  -- MySQL/MariaDB
 *                "SELECT ... ORDER BY priority DESC, seq LIMIT 1");       -- PostgreSQL
 *
 * STORE_STMT takes one SQL argument per dialect (a missing one does not compile) and each must be
 * a non-empty string literal (checked at compile time); store_stmt_sql() checks again when the
 * statement is first prepared, so a descriptor built by hand with a NULL column fails there with
 * ROOST_EINTERNAL instead of running. Parameters are positional (`?`, bound in order); SQLite
 * and PostgreSQL text may number them (`?1`, PostgreSQL also `$1`) to use one twice: the
 * PostgreSQL dialect turns `?` into `$n` when it prepares the statement. Internal to src/store/. */
#ifndef ROOST_STORE_STMT_H
#define ROOST_STORE_STMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The SQL columns of a descriptor: one per dialect. A new dialect adds a column here and an
 * argument to STORE_STMT, and the compiler lists every statement still missing its SQL. */
enum store_sql_col { STORE_SQL_SQLITE = 0, STORE_SQL_MYSQL, STORE_SQL_PG, STORE_SQL_COLS };

struct store_stmt {
    const char *name; /* for error messages: the descriptor's identifier */
    const char *sql[STORE_SQL_COLS];
    /* Running it again right after it committed answers the same and changes nothing more (an
     * ack under its lease token: the repeated-ack rule). A transaction of only such statements
     * and reads may simply run again when its COMMIT's answer is lost, so on MySQL it commits
     * without a commit marker (store_mysql_commit). */
    bool rerun;
};

#define STORE_STMT_FLAGGED(var, rerun_ok, sqlite_sql, mysql_sql, pg_sql)                           \
    _Static_assert(sizeof("" sqlite_sql) > 1, #var ": SQLite SQL is empty");                       \
    _Static_assert(sizeof("" mysql_sql) > 1, #var ": MySQL SQL is empty");                         \
    _Static_assert(sizeof("" pg_sql) > 1, #var ": PostgreSQL SQL is empty");                       \
    static const struct store_stmt var = {.name = #var,                                            \
                                          .sql = {[STORE_SQL_SQLITE] = "" sqlite_sql,              \
                                                  [STORE_SQL_MYSQL] = "" mysql_sql,                \
                                                  [STORE_SQL_PG] = "" pg_sql},                     \
                                          .rerun = (rerun_ok)}
#define STORE_STMT(var, sqlite_sql, mysql_sql, pg_sql)                                             \
    STORE_STMT_FLAGGED(var, false, sqlite_sql, mysql_sql, pg_sql)
/* A statement that may run twice (struct store_stmt.rerun). */
#define STORE_STMT_RERUN(var, sqlite_sql, mysql_sql, pg_sql)                                       \
    STORE_STMT_FLAGGED(var, true, sqlite_sql, mysql_sql, pg_sql)
/* A statement of one branch of an operation keyed by a capability (struct store_dialect.caps),
 * which only the dialects of that branch run: SQL in column `col` only. Another dialect running it
 * fails with ROOST_EINTERNAL (store_stmt_sql), which the conformance suite would show. */
#define STORE_STMT_ONLY(var, col, text)                                                            \
    _Static_assert(sizeof("" text) > 1, #var ": SQL is empty");                                    \
    static const struct store_stmt var = {.name = #var, .sql = {[col] = "" text}}
/* The same for a branch two dialects take (MySQL and PostgreSQL: several writers), each with its
 * own text. */
#define STORE_STMT_ONLY2(var, col_a, sql_a, col_b, sql_b)                                          \
    _Static_assert(sizeof("" sql_a) > 1, #var ": SQL is empty");                                   \
    _Static_assert(sizeof("" sql_b) > 1, #var ": SQL is empty");                                   \
    static const struct store_stmt var = {.name = #var,                                            \
                                          .sql = {[col_a] = "" sql_a, [col_b] = "" sql_b}}
/* A statement whose text every dialect shares. */
#define STORE_STMT_SAME(var, sql) STORE_STMT(var, sql, sql, sql)

/* The descriptor's SQL in dialect column `col`, or NULL when it has none (a failed completeness
 * check: the caller reports ROOST_EINTERNAL naming the statement). */
const char *store_stmt_sql(const struct store_stmt *d, enum store_sql_col col);

/* ---- parameters and rows ---- */

/* A parameter of a statement: bound in order. */
enum store_param_type { STORE_P_NULL, STORE_P_INT, STORE_P_TEXT };
struct store_param {
    enum store_param_type type;
    int64_t i;
    const char *s;
};
/* A text parameter; a NULL pointer binds SQL NULL. */
#define ARG_T(v)                                                                                   \
    {                                                                                              \
        .type = (v) != NULL ? STORE_P_TEXT : STORE_P_NULL, .s = (v)                                \
    }
#define ARG_I(v)                                                                                   \
    {                                                                                              \
        .type = STORE_P_INT, .i = (v)                                                              \
    }
/* An integer where 0 means "none" (SQL NULL), as expires_at. */
#define ARG_IN(v)                                                                                  \
    {                                                                                              \
        .type = (v) != 0 ? STORE_P_INT : STORE_P_NULL, .i = (v)                                    \
    }

struct store_row;
/* A row of a statement, to the caller's callback; non-zero (an error code) stops the statement.
 * STORE_ROW_STOP stops it without an error: the statement's run answers ROOST_OK. */
typedef int (*store_row_fn)(void *arg, struct store_row *row);
#define STORE_ROW_STOP 1

/* How a statement runs beyond its parameters (NULL: plainly), for the few reads that need more. */
struct store_run_opts {
    /* A byte budget on the rows delivered (store_budget_take over the length of column
     * budget_col; 0 = none): the rows stop before the first one over it and `cut` is set. A
     * dialect that fetches a whole result before delivering it stops fetching there, so a page of
     * large payloads never sits in memory whole. */
    size_t max_bytes;
    unsigned budget_col;
    /* A time bound on the statement, in ms (0 = none): past it the statement is stopped and the
     * run answers ROOST_ESCANBUDGET (a ranking that reads every agent of a tenant). */
    int64_t max_ms;
    bool cut; /* out: the budget cut the rows */
};

/* ---- the per-connection cache the dialects keep their prepared statements in ---- */

/* Maps each descriptor a connection ran to a small index (0, 1, 2... in order of first use) into
 * the dialect's own array of prepared handles. Open addressing on the descriptor's address. */
struct store_stmt_cache {
    const struct store_stmt **keys; /* cap slots, NULL = empty */
    uint32_t *idx;                  /* the index of keys[i] */
    size_t cap, n;
};
/* *idx gets the descriptor's index; *fresh is set when it was seen for the first time (the
 * dialect then prepares it into slot *idx, which is always n - 1). ROOST_ENOMEM. */
int store_stmt_cache_find(struct store_stmt_cache *c, const struct store_stmt *d, size_t *idx,
                          bool *fresh);
/* The dialect's array of prepared handles (`slots`, *n entries of `elem` bytes) grown to hold
 * index idx, new entries zeroed (NULL handles): returns the array, or NULL (out of memory; the
 * old array stays). Called when idx >= *n. */
void *store_stmt_slots_grow(void *slots, size_t *n, size_t elem, size_t idx);
/* Forgets every descriptor (the dialect finalized its handles). */
void store_stmt_cache_free(struct store_stmt_cache *c);

#endif
