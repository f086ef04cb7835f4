/* SPDX-License-Identifier: MIT */
/* Inside the MySQL/MariaDB backend: the connection struct, the statement ids, and the statement
 * runner of store_mysql_conn.c (prepared once per connection, parameters bound from struct prm,
 * rows fetched as text) that store_mysql.c runs its SQL through.
 * Internal to src/store/. */
#ifndef ROOST_STORE_MYSQL_INT_H
#define ROOST_STORE_MYSQL_INT_H

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "store/store.h"
#include "store/store_changes.h"
#include "store/store_mysql_url.h"
#include "store/store_sql.h"
#include "store/store_stmt.h"

enum stmt_id { S_CHANGE, S_MIG_CHECK, S_MIG_RECORD, S_TAIL_MAX, S_TAIL_SCAN, S_TAIL_GAPS, S_COUNT };

/* The SQL of each statement (store_mysql.c); its comment lists the parameters in order. */
extern const char *const store_mysql_sql[S_COUNT];

/* Bytes of a commit marker (roost_commit_markers.marker, BINARY(16)). */
#define MARKER_LEN 16

/* A publish's row sent with the COMMIT (insert_row_late); seq NULL: none. */
struct store_mysql_late_row {
    int64_t *seq;                          /* the publish's answer */
    struct store_touches *touches;         /* holds the agent's touch, head set with the seq */
    char event_id[STORE_EVENT_ID_LEN + 1]; /* reads the seq back after a lost answer */
    char tenant_id[STORE_ID_MAX + 1];
    char agent_id[STORE_ID_MAX + 1];
};

struct mysql_store {
    struct store base; /* first: struct store * and struct mysql_store * convert */
    MYSQL *db;
    MYSQL_STMT *stmts[S_COUNT];
    /* The statements of descriptors (store_stmt.h) this connection ran: cache maps each to its
     * index in run[0..n_run) (NULL until prepared, and again after a reconnect). */
    struct store_stmt_cache cache;
    MYSQL_STMT **run;
    size_t n_run;
    struct store_mysql_url url;
    struct mysql_cluster *cluster; /* shared with this process's other connections; NULL: 1 host */
    size_t host_idx;               /* the node of this connection (url.hosts[host_idx]) */
    bool galera;                   /* that node runs Galera (wsrep_on) */
    int failover_timeout_s;        /* store_options.failover_timeout_s */
    unsigned lock_wait_s;
    bool in_tx;                /* begun, no COMMIT/ROLLBACK yet */
    bool tx_aborted;           /* the server rolled the whole transaction back (deadlock) */
    bool lost;                 /* the connection dropped: reopen before the next statement */
    int64_t connected_mono_ms; /* when this connection opened (did the server restart since?) */
    uint64_t commits;          /* commits sent on this struct (paces the marker prune) */
    /* The transaction began but no statement went out yet: the first one starts it (with
     * autocommit off, implicitly; see session_prefix in store_mysql_conn.c). */
    bool begin_pending;
    bool autocommit_off; /* this session runs with autocommit = 0 (session_prefix) */
    /* The transaction ran a write that must not run twice (every statement but reads and those of
     * STORE_STMT_RERUN): its COMMIT needs a marker. Without one it commits plainly, and a lost
     * answer is resolved by running it again (store_mysql_commit). */
    bool tx_once;
    /* Galera: the marker the transaction writes first (hex, "" elsewhere), and the text that
     * writes it (see store_mysql_commit: a transaction Galera rolled back mid-way). */
    char tx_marker[2 * MARKER_LEN + 1];
    char prefix[160];
    /* The change-log rows of this transaction (store_mysql_change), written by one multi-row
     * INSERT in the COMMIT's round trip. */
    struct store_changes changes;
    /* Statements sent first in the COMMIT's round trip, each followed by "; " (struct
     * store.alone: a claim's UPDATE and the check of its row count, or a lone publish's row,
     * late_row), "" for none. */
    struct dynbuf late;
    int late_n; /* statements in late */
    /* The publish row in late (insert_row_late): where its seq goes once the COMMIT answered. */
    struct store_mysql_late_row late_row;
    int64_t origin; /* store_options.origin */
    uint64_t affected;
    uint64_t insert_id;
    unsigned last_errno; /* server code of the last failure (ER_DUP_ENTRY is an answer here) */
    char err[512];
};

static inline struct mysql_store *store_mysql_backend(struct store *st)
{
    return (struct mysql_store *)st;
}

/* The dialect primitives the shared lifecycle calls (store_mysql.c). */
extern const struct store_dialect store_mysql_dialect;

enum { P_NULL, P_INT, P_TEXT };
struct prm {
    int type;
    int64_t i;
    const char *s;
};
#define PI(v)                                                                                      \
    {                                                                                              \
        .type = P_INT, .i = (v)                                                                    \
    }
/* A text parameter; a NULL pointer binds SQL NULL. */
#define PS(v)                                                                                      \
    {                                                                                              \
        .type = (v) != NULL ? P_TEXT : P_NULL, .s = (v)                                            \
    }
/* An integer where 0 means "none" (NULL), as expires_at. */
#define PIN(v)                                                                                     \
    {                                                                                              \
        .type = (v) != 0 ? P_INT : P_NULL, .i = (v)                                                \
    }

/* A fetched result: every cell as NUL-terminated text (NULL for SQL NULL), row-major. */
struct rows {
    size_t n, cols, cap;
    char **cell;
    /* A byte budget on the rows kept (store_budget_take over column budget_col; max_bytes 0 =
     * none): fetching stops before the first row over it and sets `cut`; the rest of the result
     * is discarded unread into memory, so a page of large payloads never sits in memory whole. */
    size_t max_bytes, used;
    unsigned budget_col;
    bool cut;
};

/* Frees the cells and keeps the budget settings (q() clears `out` before every attempt). */
static inline void rows_free(struct rows *r)
{
    for (size_t i = 0; i < r->n * r->cols; i++) {
        free(r->cell[i]);
    }
    free(r->cell);
    size_t max_bytes = r->max_bytes;
    unsigned col = r->budget_col;
    memset(r, 0, sizeof *r);
    r->max_bytes = max_bytes;
    r->budget_col = col;
}

static inline const char *cell(const struct rows *r, size_t row, size_t col)
{
    return r->cell[row * r->cols + col];
}

static inline int64_t cell_i64(const struct rows *r, size_t row, size_t col)
{
    const char *v = cell(r, row, col);
    return v != NULL ? strtoll(v, NULL, 10) : 0;
}

static inline void cell_copy(const struct rows *r, size_t row, size_t col, char *dst, size_t cap)
{
    const char *v = cell(r, row, col);
    snprintf(dst, cap, "%s", v != NULL ? v : "");
}

static inline int cell_dup(const struct rows *r, size_t row, size_t col, char **out)
{
    const char *v = cell(r, row, col);
    *out = NULL;
    if (v == NULL) {
        return ROOST_OK;
    }
    /* malloc + memcpy, not strdup: ASan's strdup interceptor (GCC 12) copies into a failed
     * allocation instead of returning NULL, which the asan run of test_response_budget (memory
     * capped) hit here, where payloads are copied. */
    size_t n = strlen(v) + 1;
    if ((*out = malloc(n)) == NULL) {
        return ROOST_ENOMEM;
    }
    memcpy(*out, v, n);
    return ROOST_OK;
}

/* Prepares (once), binds, executes statement `id`; rows go to out when it is not NULL. Outside a
 * transaction a statement is its own unit of work, so a lost connection or deadlock is retried
 * (after reconnecting); inside one the caller must replay the whole transaction. */
int store_mysql_q(struct mysql_store *b, enum stmt_id id, const struct prm *p, size_t np,
                  struct rows *out);
/* The same for SQL text outside the statement table: prepared into *cache once, or (cache NULL)
 * for this call only. */
int store_mysql_q_sql(struct mysql_store *b, MYSQL_STMT **cache, const char *sql,
                      const struct prm *p, size_t np, struct rows *out);
#define Q(b, id, params, out)                                                                      \
    store_mysql_q((b), (id), (params), sizeof(params) / sizeof((params)[0]), (out))
/* Row r of rs from column c0 on, for the shared decoders of store_sql.h. */
struct store_row store_mysql_row(const struct rows *rs, size_t r, int c0);
/* Runs a text statement that returns no rows. */
int store_mysql_exec_text(struct mysql_store *b, const char *sql);
/* SQL text for statements whose shape depends on a count (multi-row writes and the COMMIT's
 * round trip) is built in a common/dynbuf of at most STORE_MYSQL_SQL_MAX bytes
 * (`struct dynbuf sb = {.max = STORE_MYSQL_SQL_MAX}`); a failed append sticks in sb.err. */
#define STORE_MYSQL_SQL_MAX ((size_t)1 << 30)
/* Appends text (at most STORE_ID_MAX bytes: ids, tokens) as an escaped SQL string literal. */
void store_mysql_sb_quoted(struct dynbuf *sb, struct mysql_store *b, const char *text);
/* The same as a store_quote_fn (arg: the struct mysql_store). */
void store_mysql_quote_cb(struct dynbuf *sb, void *arg, const char *text);
/* Appends text of any length as an escaped SQL string literal, or NULL. */
void store_mysql_sb_text(struct dynbuf *sb, struct mysql_store *b, const char *text);
/* Runs the text (the session prefix shares its round trip); b->affected gets the last
 * statement's matched rows, b->insert_id the last insert id that was not 0. The buffer stays the
 * caller's. */
int store_mysql_exec_sb(struct mysql_store *b, struct dynbuf *sb);
/* The same, and the rows of the first statement of the text that returns a result go to out
 * (caller frees with rows_free). */
int store_mysql_exec_sb_rows(struct mysql_store *b, struct dynbuf *sb, struct rows *out);
/* store_mysql_exec_sb_rows for text that may run twice (see tx_once): reads, acks. Every other
 * way of running a statement marks the transaction tx_once. */
int store_mysql_exec_sb_rerun(struct mysql_store *b, struct dynbuf *sb, struct rows *out);
/* Runs one statement that may run twice as the open transaction's first and commits it in the
 * same round trip ("stmt; COMMIT"). ROOST_OK: committed, and the transaction goes on as if just
 * begun (a later statement starts another, which store_mysql_commit commits; none: nothing is
 * sent). A lost connection, before or after the COMMIT ran, is ROOST_ERETRY: the group runs again
 * and the statement's second run finds what the first did. A failed statement leaves the
 * transaction open, as any statement does. */
int store_mysql_exec_sb_commit(struct mysql_store *b, struct dynbuf *sb, struct rows *out);
/* Each row's seq from the answer of a batch's INSERT … RETURNING event_id, seq (rs: n rows, two
 * columns), matched to its row by the event id (unique), not by position. ROOST_OK, ROOST_ENOMEM,
 * or ROOST_ESTORE (with err) when an answer matches no row, a row twice, or has no seq. */
struct store_new_row;
int store_mysql_returned_seqs(struct store_new_row *rows, size_t n, const struct rows *rs,
                              char *err, size_t errlen);
/* Queues the change-log row of (tenant, agent, head) for this transaction's COMMIT (one row per
 * agent: the highest head wins). Outside a transaction it is written at once. */
int store_mysql_change(struct mysql_store *b, const char *tenant_id, const char *agent_id,
                       int64_t head, int64_t at_ms);

/* The dialect's statement runner (store_mysql_query.c): struct store_dialect.run. */
int store_mysql_run_stmt(struct store *st, const struct store_stmt *d, const struct store_param *p,
                         size_t np, struct store_run_opts *o, store_row_fn on_row, void *arg,
                         int64_t *changed);

/* Choosing the node (store_mysql_ha.c). A cluster is shared by the connections of this process
 * to one host list; acquire gives NULL for a URL with one host. */
struct mysql_cluster;
int store_mysql_cluster_acquire(const struct store_mysql_url *u, unsigned lock_wait_s,
                                struct mysql_cluster **out);
void store_mysql_cluster_release(struct mysql_cluster *c);
/* Opens b->db (setting host_idx and galera): with one host, one attempt; with several, the
 * writer or else the first usable node in list order, trying for b->failover_timeout_s.
 * ROOST_EUNAVAILABLE with the reason in err when none could be had. */
int store_mysql_connect(struct mysql_store *b, char *err, size_t errlen);
/* The node behind db may take writes (see store_mysql_ha.c); *galera: it runs Galera. A usable
 * Galera session is left with wsrep_sync_wait = 1. */
bool store_mysql_node_usable(MYSQL *db, bool *galera, char *why, size_t whylen);
/* True when b is connected to another node than the one this process writes to now. */
bool store_mysql_off_writer(const struct mysql_store *b);

/* The connection's vtable entries (store_mysql_conn.c). */
int store_mysql_open(const char *url, const struct store_options *opt, struct store **out);
void store_mysql_close(struct store *st);
const char *store_mysql_errmsg(struct store *st);
bool store_mysql_ping(struct store *st);
int store_mysql_migrate(struct store *st);
int store_mysql_begin(struct store *st);
int store_mysql_commit(struct store *st);
int store_mysql_rollback(struct store *st);
int store_mysql_savepoint(struct store *st);
int store_mysql_savepoint_release(struct store *st);
int store_mysql_savepoint_rollback(struct store *st);

#endif
