/* SPDX-License-Identifier: MIT */
/* The MySQL/MariaDB backend's driver glue (mysql://USER:PASS@HOST:PORT/DB): the URL, one
 * connection per struct store (opened on the chosen node by store_mysql_ha.c), reconnecting after
 * a drop, the prepared-statement cache and runner, migrations, and transactions with savepoints
 * (every COMMIT carries a commit marker, so a lost answer is resolved, on whichever node of a
 * Galera cluster the reconnect lands). Sessions run at READ COMMITTED with autocommit on, except a
 * writer's transactions, which run with it off (session_prefix); each read outside a transaction
 * is a single statement, so it sees one consistent snapshot. Deadlocks, lock wait timeouts and
 * lost connections become ROOST_ERETRY. */
#include "store/store_mysql.h"
#include "store/store_mysql_int.h"
#include "store/store_ops.h"

#include <errmsg.h>
#include <mysqld_error.h>
#include <time.h>

#include "common/ids.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "store/migrations.h"
#include "store/store_lifecycle.h"
#include "store/store_sql.h"

#include "common/banned.h"

#define PARAM_MAX 16
/* Attempts for one statement outside a transaction (a lost connection, a deadlock). */
#define AUTOCOMMIT_TRIES 3
/* Commit markers (store_mysql_commit, MARKER_LEN bytes): kept an hour (a resolution takes
 * seconds), pruned by each connection every MARKER_PRUNE_EVERY commits, at most
 * MARKER_PRUNE_LIMIT rows at a time; a lost commit answer is resolved for at most RESOLVE_MS
 * before it is reported as unknown. */
#define MARKER_KEEP_MS (60 * 60 * 1000)
#define MARKER_PRUNE_EVERY 1024
#define MARKER_PRUNE_LIMIT 4096
#define RESOLVE_MS 30000

static _Thread_local char open_err[512];

static int marker_hex(int64_t ms, bool random, char hex[2 * MARKER_LEN + 1]);

const char *store_mysql_open_error(void)
{
    return open_err;
}

/* ---- errors and statements ---- */

static bool conn_lost_code(unsigned e)
{
    return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST || e == CR_SERVER_LOST_EXTENDED ||
           e == CR_CONNECTION_ERROR || e == CR_CONN_HOST_ERROR || e == ER_CONNECTION_KILLED ||
           e == CR_COMMANDS_OUT_OF_SYNC;
}

/* Records the failure detail and maps the server code: a deadlock (the server rolled the whole
 * transaction back; on Galera also a failed certification) or lock wait timeout → ROOST_ERETRY,
 * which the caller answers by rolling back and replaying its transaction; a lost connection →
 * ROOST_ERETRY too (the next statement reconnects). So are the two ways a Galera node says it left
 * the primary component: 1047 (WSREP has not yet prepared node for application use) and 1180
 * (error during COMMIT, "not connected to Primary"): the session is dropped, and the reconnect
 * goes to a usable node. Out of memory → ROOST_ENOMEM; anything else → ROOST_ESTORE. */
static int fail_code(struct mysql_store *b, unsigned e, const char *msg, const char *what)
{
    snprintf(b->err, sizeof b->err, "%s: %s (mysql %u)", what, msg, e);
    b->last_errno = e;
    if (e == ER_LOCK_DEADLOCK) {
        if (b->in_tx) {
            b->tx_aborted = true;
        }
        return ROOST_ERETRY;
    }
    if (e == ER_LOCK_WAIT_TIMEOUT) {
        return ROOST_ERETRY;
    }
    if (conn_lost_code(e) || e == ER_UNKNOWN_COM_ERROR || e == ER_ERROR_DURING_COMMIT) {
        b->lost = true;
        return ROOST_ERETRY;
    }
    if (e == CR_OUT_OF_MEMORY || e == ER_OUTOFMEMORY || e == ER_OUT_OF_RESOURCES) {
        return ROOST_ENOMEM;
    }
    return ROOST_ESTORE;
}

static int fail_db(struct mysql_store *b, const char *what)
{
    return fail_code(b, mysql_errno(b->db), mysql_error(b->db), what);
}

static void close_stmts(struct mysql_store *b)
{
    for (int i = 0; i < S_COUNT; i++) {
        if (b->stmts[i] != NULL) {
            mysql_stmt_close(b->stmts[i]);
            b->stmts[i] = NULL;
        }
    }
    for (size_t i = 0; i < b->n_run; i++) {
        if (b->run[i] != NULL) {
            mysql_stmt_close(b->run[i]);
            b->run[i] = NULL;
        }
    }
}

/* Reopens a dropped connection (outside a transaction only: the server already rolled an open
 * one back, and the caller must hear about that through ROOST_ERETRY). */
static int conn_ready(struct mysql_store *b)
{
    if (!b->lost) {
        return b->tx_aborted ? ROOST_ERETRY : ROOST_OK;
    }
    if (b->in_tx) {
        return ROOST_ERETRY;
    }
    close_stmts(b);
    if (b->db != NULL) {
        mysql_close(b->db);
        b->db = NULL;
    }
    int rc = store_mysql_connect(b, b->err, sizeof b->err);
    if (rc != ROOST_OK) {
        return rc;
    }
    b->connected_mono_ms = time_mono_ms();
    b->lost = false;
    b->autocommit_off = false; /* a new session: the init command set autocommit = 1 */
    return ROOST_OK;
}

/* Copies a text-protocol result into out (text cells, as fetch_all does for statements). */
static int result_rows(MYSQL_RES *res, struct rows *out)
{
    unsigned nf = mysql_num_fields(res);
    uint64_t nr = mysql_num_rows(res);
    out->cols = nf;
    if (nr == 0 || nf == 0) {
        return ROOST_OK;
    }
    if (nr > SIZE_MAX / nf / sizeof *out->cell ||
        (out->cell = calloc((size_t)nr * nf, sizeof *out->cell)) == NULL) {
        return ROOST_ENOMEM;
    }
    out->cap = (size_t)nr;
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(res)) != NULL) {
        unsigned long *len = mysql_fetch_lengths(res);
        char **cells = &out->cell[out->n * nf];
        out->n++;
        for (unsigned c = 0; c < nf; c++) {
            if (row[c] == NULL) {
                continue;
            }
            if ((cells[c] = malloc(len[c] + 1)) == NULL) {
                return ROOST_ENOMEM;
            }
            memcpy(cells[c], row[c], len[c]);
            cells[c][len[c]] = '\0';
        }
    }
    return ROOST_OK;
}

/* Runs text that may hold several statements, draining every result; the first failure is
 * the answer (the server runs nothing after it). The rows of the first statement that returns
 * a result go to out (when not NULL). */
static int run_multi_rows(struct mysql_store *b, const char *sql, size_t len, struct rows *out)
{
    if (mysql_real_query(b->db, sql, (unsigned long)len) != 0) {
        return fail_db(b, sql);
    }
    b->insert_id = 0;
    bool kept = out == NULL;
    int rc = ROOST_OK;
    for (;;) {
        b->affected = mysql_affected_rows(b->db);
        if (mysql_insert_id(b->db) != 0) {
            b->insert_id = mysql_insert_id(b->db);
        }
        MYSQL_RES *res = mysql_store_result(b->db);
        if (res != NULL) {
            if (!kept && rc == ROOST_OK) {
                rc = result_rows(res, out);
                kept = true;
            }
            mysql_free_result(res);
        }
        if (!mysql_more_results(b->db)) {
            return rc;
        }
        if (mysql_next_result(b->db) > 0) {
            return fail_db(b, sql);
        }
    }
}

static int run_multi(struct mysql_store *b, const char *sql, size_t len)
{
    return run_multi_rows(b, sql, len, NULL);
}

/* What must go out before the next statement, or NULL. A writer's session runs with autocommit
 * off from its first transaction on, so each later transaction begins implicitly with its first
 * statement and costs no START TRANSACTION (store_mysql_begin only marks it pending); a statement
 * outside a transaction turns autocommit back on first, so it is still its own unit of work. */
static const char *session_prefix(struct mysql_store *b)
{
    if (b->begin_pending) {
        b->begin_pending = false;
        bool set = !b->autocommit_off;
        b->autocommit_off = true;
        if (b->tx_marker[0] == '\0') {
            return set ? "SET autocommit = 0" : NULL;
        }
        /* Galera: the transaction's first write is its marker (store_mysql_commit). */
        snprintf(b->prefix, sizeof b->prefix,
                 "%sINSERT INTO roost_commit_markers (marker) VALUES (x'%s')",
                 set ? "SET autocommit = 0; " : "", b->tx_marker);
        return b->prefix;
    }
    if (!b->in_tx && b->autocommit_off) {
        b->autocommit_off = false;
        return "SET autocommit = 1";
    }
    return NULL;
}

/* Sends the session prefix on its own (before a prepared statement, which cannot share its
 * round trip). */
static int begin_now(struct mysql_store *b)
{
    const char *prefix = session_prefix(b);
    return prefix != NULL ? run_multi(b, prefix, strlen(prefix)) : ROOST_OK;
}

/* Runs a text statement that returns no rows; the session prefix travels with it. */
int store_mysql_exec_text(struct mysql_store *b, const char *sql)
{
    b->tx_once = true;
    int rc = conn_ready(b);
    if (rc != ROOST_OK) {
        return rc;
    }
    char both[256];
    const char *prefix = session_prefix(b);
    if (prefix == NULL) {
        return run_multi(b, sql, strlen(sql));
    }
    int n = snprintf(both, sizeof both, "%s; %s", prefix, sql);
    if (n < (int)sizeof both) {
        return run_multi(b, both, (size_t)n);
    }
    if ((rc = run_multi(b, prefix, strlen(prefix))) != ROOST_OK) {
        return rc;
    }
    return run_multi(b, sql, strlen(sql));
}

/* Fetches every row of the executed statement into out (text cells). */
static int fetch_all(struct mysql_store *b, MYSQL_STMT *s, unsigned nf, struct rows *out)
{
    MYSQL_BIND rb[32];
    char buf[32][64];
    unsigned long len[32];
    my_bool isnull[32], trunc[32];
    if (nf > 32) {
        snprintf(b->err, sizeof b->err, "result has %u columns", nf);
        return ROOST_EINTERNAL;
    }
    memset(rb, 0, sizeof rb);
    for (unsigned c = 0; c < nf; c++) {
        rb[c].buffer_type = MYSQL_TYPE_STRING;
        rb[c].buffer = buf[c];
        rb[c].buffer_length = sizeof buf[c];
        rb[c].length = &len[c];
        rb[c].is_null = &isnull[c];
        rb[c].error = &trunc[c];
    }
    if (mysql_stmt_bind_result(s, rb) != 0) {
        return fail_code(b, mysql_stmt_errno(s), mysql_stmt_error(s), "bind result");
    }
    out->cols = nf;
    for (;;) {
        int f = mysql_stmt_fetch(s);
        if (f == MYSQL_NO_DATA) {
            return ROOST_OK;
        }
        if (f == 1) {
            /* An error that ends a result midway (a statement timeout) can be reported on the
             * connection rather than on the statement. */
            return mysql_stmt_errno(s) != 0
                       ? fail_code(b, mysql_stmt_errno(s), mysql_stmt_error(s), "fetch")
                       : fail_db(b, "fetch");
        }
        if (out->max_bytes != 0 && out->budget_col < nf) {
            size_t bytes = isnull[out->budget_col] ? 0 : len[out->budget_col];
            if (!store_budget_take(&out->used, out->n, bytes, out->max_bytes)) {
                out->cut = true;
                return ROOST_OK; /* the caller's mysql_stmt_free_result drops the rest */
            }
        }
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 16;
            char **grown = realloc(out->cell, cap * nf * sizeof *grown);
            if (grown == NULL) {
                return ROOST_ENOMEM;
            }
            out->cell = grown;
            out->cap = cap;
        }
        char **row = &out->cell[out->n * nf];
        memset(row, 0, nf * sizeof *row);
        out->n++;
        for (unsigned c = 0; c < nf; c++) {
            if (isnull[c]) {
                continue;
            }
            char *v = malloc(len[c] + 1);
            if (v == NULL) {
                return ROOST_ENOMEM;
            }
            if (len[c] < sizeof buf[c]) {
                memcpy(v, buf[c], len[c]);
            } else {
                /* Longer than the inline buffer (payloads): fetch the whole column. */
                MYSQL_BIND one;
                unsigned long l2 = 0;
                memset(&one, 0, sizeof one);
                one.buffer_type = MYSQL_TYPE_STRING;
                one.buffer = v;
                one.buffer_length = len[c] + 1;
                one.length = &l2;
                if (mysql_stmt_fetch_column(s, &one, c, 0) != 0) {
                    free(v);
                    return fail_code(b, mysql_stmt_errno(s), mysql_stmt_error(s), "fetch column");
                }
            }
            v[len[c]] = '\0';
            row[c] = v;
        }
    }
}

static int64_t row_i64(struct store_row *row, int col)
{
    return cell_i64(row->src, row->r, (size_t)col);
}

static const char *row_text(struct store_row *row, int col)
{
    return cell(row->src, row->r, (size_t)col);
}

struct store_row store_mysql_row(const struct rows *rs, size_t r, int c0)
{
    return (struct store_row){
        .i64 = row_i64, .text = row_text, .src = (void *)rs, .r = r, .c0 = c0};
}

/* Prepares (once into *cache), binds, executes `sql`; rows go to out when it is not NULL. Outside
 * a transaction a statement is its own unit of work, so a lost connection or deadlock is retried
 * here (after reconnecting); inside one the caller must replay the whole transaction. A statement
 * prepared for this call only (`once`) is closed before a retry: a reconnect invalidates it. */
static int store_mysql_q_run(struct mysql_store *b, MYSQL_STMT **cache, bool once, const char *sql,
                             const struct prm *p, size_t np, struct rows *out)
{
    int rc = ROOST_OK;
    for (int attempt = 0; attempt < AUTOCOMMIT_TRIES; attempt++) {
        if (out != NULL) {
            rows_free(out);
        }
        if ((rc = conn_ready(b)) != ROOST_OK) {
            return rc;
        }
        if ((rc = begin_now(b)) != ROOST_OK) {
            goto retry;
        }
        MYSQL_STMT *s = *cache;
        if (s == NULL) {
            if ((s = mysql_stmt_init(b->db)) == NULL) {
                return ROOST_ENOMEM;
            }
            if (mysql_stmt_prepare(s, sql, strlen(sql)) != 0) {
                rc = fail_code(b, mysql_stmt_errno(s), mysql_stmt_error(s), sql);
                mysql_stmt_close(s);
                goto retry;
            }
            *cache = s;
        }
        if (mysql_stmt_param_count(s) != np || np > PARAM_MAX) {
            snprintf(b->err, sizeof b->err, "%s: %zu parameters bound", sql, np);
            return ROOST_EINTERNAL;
        }
        MYSQL_BIND bind[PARAM_MAX];
        unsigned long lens[PARAM_MAX];
        memset(bind, 0, sizeof bind);
        for (size_t i = 0; i < np; i++) {
            if (p[i].type == P_INT) {
                bind[i].buffer_type = MYSQL_TYPE_LONGLONG;
                bind[i].buffer = (void *)&p[i].i;
            } else if (p[i].type == P_TEXT) {
                lens[i] = (unsigned long)strlen(p[i].s);
                bind[i].buffer_type = MYSQL_TYPE_STRING;
                bind[i].buffer = (void *)p[i].s;
                bind[i].buffer_length = lens[i];
                bind[i].length = &lens[i];
            } else {
                bind[i].buffer_type = MYSQL_TYPE_NULL;
            }
        }
        if ((np > 0 && mysql_stmt_bind_param(s, bind) != 0) || mysql_stmt_execute(s) != 0) {
            rc = fail_code(b, mysql_stmt_errno(s), mysql_stmt_error(s), sql);
            goto retry;
        }
        b->affected = mysql_stmt_affected_rows(s);
        b->insert_id = mysql_stmt_insert_id(s);
        unsigned nf = mysql_stmt_field_count(s);
        if (nf > 0) {
            struct rows scratch = {0};
            rc = fetch_all(b, s, nf, out != NULL ? out : &scratch);
            rows_free(&scratch);
            mysql_stmt_free_result(s);
            if (rc != ROOST_OK) {
                goto retry;
            }
        }
        return ROOST_OK;
    retry:
        if (rc != ROOST_ERETRY || b->in_tx) {
            return rc;
        }
        if (once && *cache != NULL) {
            mysql_stmt_close(*cache);
            *cache = NULL;
        }
    }
    return rc;
}

int store_mysql_q(struct mysql_store *b, enum stmt_id id, const struct prm *p, size_t np,
                  struct rows *out)
{
    b->tx_once = true;
    return store_mysql_q_run(b, &b->stmts[id], false, store_mysql_sql[id], p, np, out);
}

int store_mysql_q_sql(struct mysql_store *b, MYSQL_STMT **cache, const char *sql,
                      const struct prm *p, size_t np, struct rows *out)
{
    MYSQL_STMT *once = NULL;
    int rc = store_mysql_q_run(b, cache != NULL ? cache : &once, cache == NULL, sql, p, np, out);
    if (once != NULL) {
        mysql_stmt_close(once);
    }
    return rc;
}

/* ---- the connection ---- */

int store_mysql_open(const char *url, const struct store_options *opt, struct store **out)
{
    *out = NULL;
    open_err[0] = '\0';
    struct mysql_store *b = calloc(1, sizeof *b);
    if (b == NULL) {
        return ROOST_ENOMEM;
    }
    b->base.ops = &store_ops_table;
    b->base.dialect = &store_mysql_dialect;
    if (store_mysql_url_parse(url, &b->url) != ROOST_OK) {
        snprintf(open_err, sizeof open_err,
                 "expected mysql://USER[:PASS]@HOST[:PORT][,HOST[:PORT]...]/DB[?socket=PATH]");
        free(b);
        return ROOST_EINVAL;
    }
    b->origin = opt->origin;
    b->late.max = STORE_MYSQL_SQL_MAX;
    int wait_ms = opt->busy_timeout_ms > 0 ? opt->busy_timeout_ms : ROOST_BUSY_TIMEOUT_MS;
    b->lock_wait_s = (unsigned)(wait_ms + 999) / 1000;
    b->failover_timeout_s =
        opt->failover_timeout_s > 0 ? opt->failover_timeout_s : STORE_FAILOVER_TIMEOUT_S;
    int rc = store_mysql_cluster_acquire(&b->url, b->lock_wait_s, &b->cluster);
    if (rc == ROOST_OK) {
        rc = store_mysql_connect(b, open_err, sizeof open_err);
    }
    if (rc != ROOST_OK) {
        store_mysql_cluster_release(b->cluster);
        free(b);
        return rc;
    }
    b->connected_mono_ms = time_mono_ms();
    snprintf(b->err, sizeof b->err, "no error");
    *out = &b->base;
    return ROOST_OK;
}

void store_mysql_close(struct store *st)
{
    struct mysql_store *b = store_mysql_backend(st);
    if (b == NULL) {
        return;
    }
    close_stmts(b);
    free(b->run);
    store_stmt_cache_free(&b->cache);
    if (b->db != NULL) {
        mysql_close(b->db);
    }
    store_mysql_cluster_release(b->cluster);
    store_changes_free(&b->changes);
    dynbuf_cleanup(&b->late);
    free(b);
}

const char *store_mysql_errmsg(struct store *st)
{
    return store_mysql_backend(st)->err;
}

/* False while the server is unreachable; reconnects when it is back. */
bool store_mysql_ping(struct store *st)
{
    struct mysql_store *b = store_mysql_backend(st);
    if (!b->lost && mysql_ping(b->db) != 0) {
        fail_db(b, "ping");
        b->lost = true;
    }
    /* A Galera node can answer and still refuse work (it left the primary component, or it is
     * a donor): then this connection moves to a usable node. */
    bool galera = false;
    if (!b->lost && !b->in_tx && b->cluster != NULL &&
        !store_mysql_node_usable(b->db, &galera, b->err, sizeof b->err)) {
        b->lost = true;
    }
    if (b->in_tx) {
        return !b->lost;
    }
    return conn_ready(b) == ROOST_OK;
}

/* Runs a text query whose first column of the first row is an integer (-1 for NULL/no row). */
static int text_int(struct mysql_store *b, const char *sql, int64_t *v)
{
    int rc = conn_ready(b);
    if (rc != ROOST_OK || (rc = begin_now(b)) != ROOST_OK) {
        return rc;
    }
    if (mysql_real_query(b->db, sql, strlen(sql)) != 0) {
        return fail_db(b, sql);
    }
    MYSQL_RES *res = mysql_store_result(b->db);
    if (res == NULL) {
        return fail_db(b, sql);
    }
    MYSQL_ROW row = mysql_fetch_row(res);
    *v = row != NULL && row[0] != NULL ? strtoll(row[0], NULL, 10) : -1;
    mysql_free_result(res);
    return ROOST_OK;
}

/* True when `piece` holds more than whitespace and "--" comment lines. */
static bool has_sql(const char *piece, size_t len)
{
    size_t i = 0;
    while (i < len) {
        while (i < len &&
               (piece[i] == ' ' || piece[i] == '\t' || piece[i] == '\r' || piece[i] == '\n')) {
            i++;
        }
        if (i + 1 < len && piece[i] == '-' && piece[i + 1] == '-') {
            while (i < len && piece[i] != '\n') {
                i++;
            }
            continue;
        }
        return i < len;
    }
    return false;
}

/* Runs one migration file: statements separated by lines that are exactly "-- statement". */
static int run_migration(struct mysql_store *b, const struct store_migration *m)
{
    static const char marker[] = "-- statement";
    const char *sql = m->sql;
    size_t start = 0, pos = 0, n = strlen(sql);
    while (pos <= n) {
        const char *nl = memchr(sql + pos, '\n', n - pos);
        size_t line_end = nl != NULL ? (size_t)(nl - sql) : n;
        size_t ll = line_end - pos;
        while (ll > 0 && (sql[pos + ll - 1] == '\r' || sql[pos + ll - 1] == ' ')) {
            ll--;
        }
        bool is_marker = ll == sizeof marker - 1 && memcmp(sql + pos, marker, ll) == 0;
        if (is_marker || nl == NULL) {
            size_t piece_end = is_marker ? pos : n;
            if (has_sql(sql + start, piece_end - start)) {
                if (mysql_real_query(b->db, sql + start, piece_end - start) != 0) {
                    char what[128];
                    snprintf(what, sizeof what, "migration %s", m->name);
                    return fail_db(b, what);
                }
                MYSQL_RES *res = mysql_store_result(b->db);
                if (res != NULL) {
                    mysql_free_result(res);
                }
            }
            start = line_end + 1;
        }
        if (nl == NULL) {
            break;
        }
        pos = line_end + 1;
    }
    return ROOST_OK;
}

/* One attempt at the migrations (store_mysql_migrate). */
static int migrate_once(struct mysql_store *b)
{
    int64_t got = -1;
    int rc = text_int(b, "SELECT GET_LOCK('roost_migrate', 30)", &got);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (got != 1) {
        snprintf(b->err, sizeof b->err, "migrate: another process holds roost_migrate");
        return ROOST_ERETRY;
    }
    rc = store_mysql_exec_text(
        b, "CREATE TABLE IF NOT EXISTS schema_migrations (version INT NOT NULL PRIMARY"
           " KEY, name VARCHAR(255) NOT NULL, applied_at BIGINT NOT NULL)"
           " ENGINE = InnoDB");
    for (size_t i = 0; rc == ROOST_OK && i < store_migrations_mysql_count; i++) {
        const struct store_migration *m = &store_migrations_mysql[i];
        struct rows rs = {0};
        struct prm check[] = {PI(m->version)};
        if ((rc = Q(b, S_MIG_CHECK, check, &rs)) != ROOST_OK) {
            break;
        }
        bool applied = rs.n > 0;
        rows_free(&rs);
        if (applied) {
            continue;
        }
        if ((rc = run_migration(b, m)) != ROOST_OK) {
            break;
        }
        struct prm rec[] = {PI(m->version), PS(m->name)};
        rc = Q(b, S_MIG_RECORD, rec, NULL);
    }
    int64_t released;
    text_int(b, "SELECT RELEASE_LOCK('roost_migrate')", &released);
    return rc;
}

/* Applies the embedded migrations not yet recorded. DDL commits implicitly in MySQL, so the
 * cross-process exclusion is a named lock, not a transaction. A transient failure (a lost
 * connection; a Galera node that was paused answers its sessions' causal reads with a lock wait
 * timeout until it has caught up) is tried again on a new connection, which may go to another
 * node, for up to store.failover_timeout_s, as a write would: a node started meanwhile waits
 * for its database instead of exiting. */
int store_mysql_migrate(struct store *st)
{
    struct mysql_store *b = store_mysql_backend(st);
    int64_t deadline = time_mono_ms() + (int64_t)b->failover_timeout_s * 1000;
    long wait_ms = 100;
    for (;;) {
        int rc = migrate_once(b);
        if (rc != ROOST_ERETRY || time_mono_ms() >= deadline) {
            return rc;
        }
        log_warn("store migrations failed, trying again", "error=\"%s\"", b->err);
        store_mysql_rollback(st);
        b->lost = true; /* the next statement opens a new connection */
        time_sleep_ms(wait_ms);
        wait_ms = wait_ms < 500 ? wait_ms * 2 : 1000;
    }
}

/* ---- transactions ---- */

/* Sends nothing: the first statement starts the transaction (session_prefix), so a transaction
 * costs no START TRANSACTION, and one that ran no statement costs nothing. */
int store_mysql_begin(struct store *st)
{
    struct mysql_store *b = store_mysql_backend(st);
    if (b->in_tx) {
        snprintf(b->err, sizeof b->err, "begin: a transaction is already open");
        return ROOST_EINTERNAL;
    }
    b->tx_aborted = false;
    b->tx_once = false;
    if (!b->lost && store_mysql_off_writer(b)) {
        /* Another connection of this process moved the writes to another node: follow it, so
         * two nodes never take this process's writes at once (certification conflicts). */
        b->lost = true;
    }
    int rc = conn_ready(b);
    b->tx_marker[0] = '\0';
    if (rc == ROOST_OK && b->galera && marker_hex(time_now_ms(), true, b->tx_marker) != ROOST_OK) {
        snprintf(b->err, sizeof b->err, "begin: no random bytes for the marker");
        return ROOST_EINTERNAL;
    }
    if (rc == ROOST_OK) {
        b->in_tx = true;
        b->begin_pending = true;
        b->changes.n = b->changes.mark = b->changes.ret_mark = 0;
        dynbuf_reset(&b->late);
        b->late_n = 0;
        b->late_row.seq = NULL;
    }
    return rc;
}

int store_mysql_change(struct mysql_store *b, const char *tenant_id, const char *agent_id,
                       int64_t head, int64_t at_ms)
{
    if (!b->in_tx) {
        struct prm p[] = {PS(tenant_id), PS(agent_id), PI(head), PI(at_ms), PI(b->origin)};
        return Q(b, S_CHANGE, p, NULL);
    }
    return store_changes_add(&b->changes, tenant_id, agent_id, head, at_ms);
}

/* ---- the commit whose answer was lost ----
 *
 * Every COMMIT goes out in one round trip with the insert of a fresh marker row:
 *
 *     INSERT INTO roost_commit_markers (marker) VALUES (x'<16 bytes>'); COMMIT
 *
 * The server stops a multi-statement at its first error, so the COMMIT runs only after the marker
 * is in: the transaction committed exactly when its marker row exists. When the answer does not
 * arrive (the connection dropped, or COMMIT failed in an unexpected way), the writer reconnects
 * and inserts the same marker itself, with fenced = 1, in autocommit:
 *   - it goes in: the transaction did not commit, and now never will (its own INSERT would fail
 *     as a duplicate, so its COMMIT cannot run) → ROOST_ERETRY: the group replays;
 *   - duplicate, fenced = 0: the transaction committed → ROOST_OK;
 *   - duplicate, fenced = 1: a fence of ours whose answer was lost too → not committed.
 * While the old session still holds its marker uncommitted, the fence waits for that row lock, so
 * it never races the old session. The old connection is KILLed first so that its locks go at
 * once rather than when the server notices the drop (the fence, not the KILL, is what makes the
 * answer right). Cost: no round trip, one small insert into an append-ordered key per commit.
 *
 * On Galera a transaction can be rolled back mid-way without the session hearing of it: when
 * another node's commit conflicts with its locks and the brute-force abort lands while one of
 * its statements runs, that statement answers OK, the transaction is gone, and the statements
 * after it run in a new one that COMMIT then commits (measured with
 * tests/galera/bf_abort_multi.py --race: 4 of 600 aborts raced against a SELECT; issue 16). The
 * group would be told OK for work that was undone: a publish answered 201 whose row and seq are
 * gone, an ack answered 200 whose event is claimed again. So on Galera the marker
 * is the transaction's first write (with its first statement, session_prefix), and the COMMIT
 * goes out as
 *
 *     INSERT INTO roost_commit_markers (marker) VALUES ((SELECT x'<C>' FROM roost_commit_markers
 *         WHERE marker = x'<S>')); COMMIT;
 *     SET STATEMENT wsrep_sync_wait = 0 FOR SELECT COUNT(*) FROM roost_commit_markers
 *         WHERE marker = x'<S>'
 *
 * The first statement fails (NULL into the key) when the transaction's own marker S is gone, so
 * a tail in a new transaction is never committed; the count after COMMIT catches an abort that
 * landed in that statement itself (the tail then holds nothing but C). S, not C, is what the
 * fence looks for. Cost: one more small insert per commit, and one round trip per transaction
 * whose first statement is a prepared one. */

/* Writes the marker (6 bytes of `ms` big-endian, then 10 random bytes, or zeros when `random` is
 * false: the lowest marker of that millisecond) as 32 hex digits. */
static int marker_hex(int64_t ms, bool random, char hex[2 * MARKER_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char m[MARKER_LEN] = {0};
    for (int i = 0; i < 6; i++) {
        m[i] = (unsigned char)((uint64_t)ms >> (8 * (5 - i)));
    }
    if (random && ids_random(m + 6, MARKER_LEN - 6) != 0) {
        return ROOST_EINTERNAL;
    }
    for (int i = 0; i < MARKER_LEN; i++) {
        hex[2 * i] = digits[m[i] >> 4];
        hex[2 * i + 1] = digits[m[i] & 15];
    }
    hex[2 * MARKER_LEN] = '\0';
    return ROOST_OK;
}

void store_mysql_sb_quoted(struct dynbuf *sb, struct mysql_store *b, const char *text)
{
    char esc[2 * (STORE_ID_MAX + 1) + 1];
    size_t n = strlen(text);
    if (n > STORE_ID_MAX) {
        sb->err =
            DYNBUF_ENOMEM; /* ids and tokens are bounded by the API; anything longer is a bug */
        return;
    }
    unsigned long e = mysql_real_escape_string(b->db, esc, text, (unsigned long)n);
    dynbuf_add(sb, "'", 1);
    dynbuf_add(sb, esc, e);
    dynbuf_add(sb, "'", 1);
}

void store_mysql_sb_text(struct dynbuf *sb, struct mysql_store *b, const char *text)
{
    if (text == NULL) {
        dynbuf_adds(sb, "NULL");
        return;
    }
    size_t n = strlen(text);
    char *esc = n < (SIZE_MAX - 1) / 2 ? malloc(2 * n + 1) : NULL;
    if (esc == NULL) {
        sb->err = DYNBUF_ENOMEM;
        return;
    }
    unsigned long e = mysql_real_escape_string(b->db, esc, text, (unsigned long)n);
    dynbuf_add(sb, "'", 1);
    dynbuf_add(sb, esc, e);
    dynbuf_add(sb, "'", 1);
    free(esc);
}

int store_mysql_exec_sb(struct mysql_store *b, struct dynbuf *sb)
{
    return store_mysql_exec_sb_rows(b, sb, NULL);
}

int store_mysql_exec_sb_rows(struct mysql_store *b, struct dynbuf *sb, struct rows *out)
{
    b->tx_once = true;
    return store_mysql_exec_sb_rerun(b, sb, out);
}

int store_mysql_exec_sb_rerun(struct mysql_store *b, struct dynbuf *sb, struct rows *out)
{
    int rc = conn_ready(b);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (sb->err != DYNBUF_OK) {
        snprintf(b->err, sizeof b->err, "statement text: out of memory");
        return ROOST_ENOMEM;
    }
    const char *prefix = session_prefix(b);
    if (prefix == NULL) {
        return run_multi_rows(b, sb->s, sb->len, out);
    }
    /* The session prefix shares this round trip. */
    struct dynbuf both = {.max = STORE_MYSQL_SQL_MAX};
    dynbuf_adds(&both, prefix);
    dynbuf_adds(&both, "; ");
    dynbuf_add(&both, sb->s, sb->len);
    if (both.err != DYNBUF_OK) {
        dynbuf_cleanup(&both);
        return ROOST_ENOMEM;
    }
    rc = run_multi_rows(b, both.s, both.len, out);
    dynbuf_cleanup(&both);
    return rc;
}

int store_mysql_exec_sb_commit(struct mysql_store *b, struct dynbuf *sb, struct rows *out)
{
    int rc = conn_ready(b);
    if (rc != ROOST_OK) {
        return rc;
    }
    const char *prefix = session_prefix(b); /* never Galera's marker: the caller checked */
    struct dynbuf q = {.max = STORE_MYSQL_SQL_MAX};
    if (prefix != NULL) {
        dynbuf_adds(&q, prefix);
        dynbuf_adds(&q, "; ");
    }
    dynbuf_add(&q, sb->s, sb->len);
    dynbuf_adds(&q, "; COMMIT");
    if (sb->err != DYNBUF_OK || q.err != DYNBUF_OK) {
        dynbuf_cleanup(&q);
        snprintf(b->err, sizeof b->err, "statement text: out of memory");
        return ROOST_ENOMEM;
    }
    int sent = mysql_real_query(b->db, q.s, (unsigned long)q.len);
    dynbuf_cleanup(&q);
    if (sent != 0) {
        return fail_db(b, "statement"); /* the first one failed: nothing after it ran */
    }
    /* The answers: [the prefix's,] the statement's, the COMMIT's. */
    size_t stmt = prefix != NULL ? 1 : 0;
    for (size_t i = 0;; i++) {
        if (i == stmt) {
            b->affected = mysql_affected_rows(b->db);
            b->insert_id = mysql_insert_id(b->db);
        }
        MYSQL_RES *res = mysql_store_result(b->db);
        if (res != NULL) {
            if (i == stmt && out != NULL) {
                rc = result_rows(res, out);
            }
            mysql_free_result(res);
        }
        if (i == stmt + 1) {
            break; /* the COMMIT answered OK */
        }
        int next = mysql_next_result(b->db);
        if (next == 0) {
            continue;
        }
        if (next > 0 && i + 1 == stmt) {
            return fail_db(b, "statement"); /* the COMMIT did not run */
        }
        /* The COMMIT failed or went unanswered: whatever it did, the connection is not used
         * again, and the statement runs again on another (it may run twice). */
        if (next > 0) {
            fail_db(b, "commit");
        } else {
            snprintf(b->err, sizeof b->err, "commit: no answer to COMMIT");
        }
        b->lost = true;
        return ROOST_ERETRY;
    }
    b->begin_pending = true;
    b->tx_once = false;
    return rc;
}

/* Galera rolled the transaction back mid-way (see above): nothing of it committed, and whatever
 * ran after the abort (at most marker C once COMMIT ran) is not the group's work. */
static int torn(struct mysql_store *b)
{
    /* Rare and worth knowing afterwards (the group replays). */
    char node[300];
    store_mysql_host_label(&b->url.hosts[b->host_idx], node, sizeof node);
    log_warn("Galera rolled a transaction back mid-way; its group replays", "node=%s marker=%s",
             node, b->tx_marker);
    snprintf(b->err, sizeof b->err,
             "commit: Galera rolled the transaction back while a statement ran (its marker is "
             "gone)");
    b->last_errno = ER_LOCK_DEADLOCK;
    b->tx_aborted = true;
    return ROOST_ERETRY;
}

void store_mysql_quote_cb(struct dynbuf *sb, void *arg, const char *text)
{
    store_mysql_sb_quoted(sb, arg, text);
}

/* Sends [the transaction's late statements;] [its change-log rows;] marker; COMMIT in one round
 * trip (every
 * MARKER_PRUNE_EVERY-th time also the prune of old markers, which runs after the COMMIT in
 * autocommit and whose result does not matter); without a marker (hex NULL: nothing of the
 * transaction minds running twice) the COMMIT alone. ROOST_OK: committed. *unknown: the outcome
 * must be resolved. Otherwise a statement before COMMIT failed on a live connection: the COMMIT
 * did not run and the transaction is still open (the caller rolls back). */
static int send_commit(struct mysql_store *b, const char *hex, bool *unknown)
{
    struct dynbuf sb = {.max = STORE_MYSQL_SQL_MAX};
    char tmp[512];
    int before_commit = hex != NULL ? 1 : 0; /* results before the COMMIT's */
    if (b->late_n > 0) {
        dynbuf_add(&sb, b->late.s, b->late.len);
        before_commit += b->late_n;
    }
    if (b->changes.n > 0) {
        store_changes_sql(&sb, b->changes.rows, b->changes.n, b->origin, NULL, store_mysql_quote_cb,
                          b);
        before_commit++;
    }
    int n;
    if (hex == NULL) {
        n = snprintf(tmp, sizeof tmp, "COMMIT");
    } else if (b->tx_marker[0] != '\0') {
        n = snprintf(tmp, sizeof tmp,
                     "INSERT INTO roost_commit_markers (marker) VALUES ((SELECT x'%s' FROM"
                     " roost_commit_markers WHERE marker = x'%s')); COMMIT; SET STATEMENT"
                     " wsrep_sync_wait = 0 FOR SELECT COUNT(*) FROM roost_commit_markers"
                     " WHERE marker = x'%s'",
                     hex, b->tx_marker, b->tx_marker);
    } else {
        n = snprintf(tmp, sizeof tmp,
                     "INSERT INTO roost_commit_markers (marker) VALUES (x'%s'); COMMIT", hex);
    }
    dynbuf_add(&sb, tmp, (size_t)n);
    if (++b->commits % MARKER_PRUNE_EVERY == 0) {
        char cut[2 * MARKER_LEN + 1];
        if (marker_hex(time_now_ms() - MARKER_KEEP_MS, false, cut) == ROOST_OK) {
            n = snprintf(tmp, sizeof tmp,
                         "; DELETE FROM roost_commit_markers WHERE marker < x'%s' LIMIT %d; COMMIT",
                         cut, MARKER_PRUNE_LIMIT);
            dynbuf_add(&sb, tmp, (size_t)n);
        }
    }
    *unknown = false;
    if (sb.err != DYNBUF_OK) {
        dynbuf_cleanup(&sb);
        snprintf(b->err, sizeof b->err, "commit: out of memory");
        return ROOST_ENOMEM;
    }
    int q = mysql_real_query(b->db, sb.s, (unsigned long)sb.len);
    dynbuf_cleanup(&sb);
    /* A late publish's upsert answers first: its LAST_INSERT_ID(next_seq) (late_row_answer). */
    b->insert_id = q == 0 && b->late_n > 0 ? mysql_insert_id(b->db) : 0;
    if (q != 0 && before_commit == 0) {
        /* The COMMIT itself failed or went unanswered: running it all again tells. */
        int rc = fail_db(b, "commit");
        *unknown = true;
        return rc;
    }
    if (q != 0) {
        unsigned e = mysql_errno(b->db);
        int rc = fail_db(b, before_commit > 1 ? "change log" : "commit marker");
        if (before_commit == 1 && e == ER_BAD_NULL_ERROR && b->tx_marker[0] != '\0') {
            return torn(b); /* the marker's check: COMMIT did not run */
        }
        /* Lost while sending or before the first answer: the server may have run it all. */
        *unknown = conn_lost_code(e);
        return rc;
    }
    for (int i = 1; i <= before_commit; i++) {
        bool is_commit = i == before_commit; /* this answer is the COMMIT's */
        int next = mysql_next_result(b->db);
        if (next == 0) {
            continue;
        }
        if (next > 0) {
            unsigned e = mysql_errno(b->db);
            int rc = fail_db(b, is_commit ? "commit" : "commit marker");
            if (!is_commit && e == ER_BAD_NULL_ERROR && b->tx_marker[0] != '\0') {
                return torn(b); /* the marker's check: COMMIT did not run */
            }
            if (!is_commit && !conn_lost_code(e)) {
                return rc; /* the marker failed: COMMIT did not run */
            }
            if (is_commit && e == ER_LOCK_DEADLOCK) {
                return rc; /* Galera: certification failed, so it did not commit */
            }
        } else {
            snprintf(b->err, sizeof b->err, "commit: no answer to COMMIT");
        }
        *unknown = true;
        return ROOST_EUNAVAILABLE;
    }
    int64_t kept = 1;
    if (b->tx_marker[0] != '\0') {
        /* Galera: COMMIT answered OK; it committed this transaction only if its marker is in. */
        kept = -1;
        if (mysql_next_result(b->db) == 0) {
            MYSQL_RES *res = mysql_store_result(b->db);
            MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
            kept = row != NULL && row[0] != NULL ? strtoll(row[0], NULL, 10) : -1;
            if (res != NULL) {
                mysql_free_result(res);
            }
        }
        if (kept < 0) {
            fail_db(b, "commit marker check");
            *unknown = true; /* the fence looks for the marker */
            return ROOST_EUNAVAILABLE;
        }
    }
    /* Whatever follows is the prune: drain it; a lost connection shows next time. */
    while (mysql_more_results(b->db)) {
        int next = mysql_next_result(b->db);
        if (next > 0) {
            fail_db(b, "commit marker prune");
            break;
        }
        MYSQL_RES *res = mysql_store_result(b->db);
        if (res != NULL) {
            mysql_free_result(res);
        }
    }
    return kept == 0 ? torn(b) : ROOST_OK;
}

/* KILLs the connection whose commit answer was lost, when it is still there as a session of our
 * user on our database and the server has been up since it opened (after a restart, or on
 * another server after a failover, the id may name someone else's session). Uptime counts whole
 * seconds, hence one second of slack: at worst another roostd session of this database, made by
 * a server that restarted within that second, loses its connection, which it survives. Failures
 * are ignored: the KILL only frees the old session's locks early. */
static void kill_old(struct mysql_store *b, unsigned long old_id, int64_t old_connected_ms,
                     size_t old_host)
{
    char sql[512];
    if (b->host_idx != old_host) {
        return; /* another node of the cluster: the id names a session there, not ours */
    }
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %lu"
             " AND USER = SUBSTRING_INDEX(USER(), '@', 1) AND DB <=> DATABASE()"
             " AND (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
             " WHERE VARIABLE_NAME = 'UPTIME') * 1000 + 1000 >= %lld",
             old_id, (long long)(time_mono_ms() - old_connected_ms));
    int64_t same = 0;
    if (text_int(b, sql, &same) != ROOST_OK || same != 1) {
        return;
    }
    snprintf(sql, sizeof sql, "KILL CONNECTION %lu", old_id);
    if (mysql_real_query(b->db, sql, strlen(sql)) != 0 && mysql_errno(b->db) != ER_NO_SUCH_THREAD) {
        fail_db(b, "kill the connection that lost its commit answer");
    }
}

/* Learns whether the transaction with marker `hex` committed (see above): ROOST_OK it did,
 * ROOST_ERETRY it did not and never will, ROOST_EUNAVAILABLE the server stayed out of reach for
 * RESOLVE_MS, so nobody knows yet. A transaction without a marker (hex NULL: it only ran
 * statements that may run twice) is answered ROOST_ERETRY once the old session is KILLed: its
 * group runs again, and what it finds (an ack completed under its token) is its answer. */
static int resolve_commit(struct mysql_store *b, unsigned long old_id, int64_t old_connected_ms,
                          size_t old_host, const char *hex)
{
    int64_t deadline = time_mono_ms() + RESOLVE_MS;
    long wait_ms = 20;
    bool killed = false;
    char sql[256];
    for (;;) {
        if (conn_ready(b) == ROOST_OK) {
            if (!killed) {
                kill_old(b, old_id, old_connected_ms, old_host);
                killed = true;
            }
            if (hex == NULL) {
                snprintf(b->err, sizeof b->err,
                         "commit: answer lost; the transaction runs again (it may run twice)");
                return ROOST_ERETRY;
            }
            /* On Galera the fence may run on another node than the COMMIT did: it first waits
             * until this node has applied everything the cluster ordered (a COMMIT that failed
             * with 1180 may have been), so the marker's row is there when it committed. A COMMIT
             * ordered after the fence fails certification on the marker's key. */
            snprintf(sql, sizeof sql,
                     "%sINSERT INTO roost_commit_markers (marker, fenced) VALUES (x'%s', 1)",
                     b->galera ? "SET STATEMENT wsrep_sync_wait = 15 FOR " : "", hex);
            if (!b->lost && mysql_real_query(b->db, sql, strlen(sql)) == 0) {
                snprintf(b->err, sizeof b->err,
                         "commit: the connection dropped before it committed");
                return ROOST_ERETRY;
            }
            if (!b->lost && mysql_errno(b->db) == ER_DUP_ENTRY) {
                int64_t fenced = -1;
                snprintf(sql, sizeof sql,
                         "SELECT fenced FROM roost_commit_markers WHERE marker = x'%s'", hex);
                if (text_int(b, sql, &fenced) == ROOST_OK && fenced == 0) {
                    return ROOST_OK;
                }
                if (fenced == 1) {
                    snprintf(b->err, sizeof b->err,
                             "commit: the connection dropped before it committed");
                    return ROOST_ERETRY;
                }
            } else if (!b->lost) {
                fail_db(b, "commit fence");
            }
        }
        if (time_mono_ms() >= deadline) {
            break;
        }
        time_sleep_ms(wait_ms);
        wait_ms = wait_ms < 500 ? wait_ms * 2 : 1000;
    }
    char why[sizeof b->err];
    snprintf(why, sizeof why, "%.190s", b->err);
    snprintf(b->err, sizeof b->err, "commit: answer lost, outcome unknown after %d s (%.400s)",
             RESOLVE_MS / 1000, why);
    return ROOST_EUNAVAILABLE;
}

/* Answers the publish row that went with the COMMIT (mysql_store.late_row), once it committed:
 * its seq from the upsert's answer, or (answered false: the answer was lost with the COMMIT's)
 * read back by its event id. ROOST_EUNAVAILABLE when that read fails: it committed, but its seq
 * is unknown. */
static int late_row_answer(struct mysql_store *b, bool answered)
{
    struct store_mysql_late_row *r = &b->late_row;
    if (r->seq == NULL) {
        return ROOST_OK;
    }
    int64_t seq = answered ? (int64_t)b->insert_id - 1 : 0;
    if (seq < 1) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT seq FROM inbox WHERE event_id = '%s'", r->event_id);
        if (text_int(b, sql, &seq) != ROOST_OK || seq < 1) {
            r->seq = NULL;
            snprintf(b->err, sizeof b->err, "publish: committed, but its seq was not read back");
            return ROOST_EUNAVAILABLE;
        }
    }
    *r->seq = seq;
    r->seq = NULL;
    return store_touches_add(r->touches, r->tenant_id, r->agent_id, seq); /* reserved: no alloc */
}

/* ROOST_OK: committed. ROOST_ERETRY: certainly not committed (the caller replays). Another error:
 * not committed, transaction still open (the caller rolls back), except ROOST_EUNAVAILABLE after
 * a lost answer that could not be resolved. */
int store_mysql_commit(struct store *st)
{
    struct mysql_store *b = store_mysql_backend(st);
    if (b->tx_aborted || b->lost) {
        /* COMMIT now would commit an empty autocommit session and hide the loss. */
        snprintf(b->err, sizeof b->err, "commit: the transaction was rolled back by the server");
        return ROOST_ERETRY;
    }
    if (b->begin_pending && b->changes.n == 0 && b->late_n == 0) {
        /* No statement ran: there is nothing to commit and nothing was sent. */
        b->begin_pending = false;
        b->in_tx = false;
        return ROOST_OK;
    }
    int rc = begin_now(b);
    if (rc != ROOST_OK) {
        return rc;
    }
    /* Only a transaction that must not run twice needs its marker (on Galera every one: the
     * marker also tells a transaction rolled back mid-way). */
    bool marked = b->tx_once || b->changes.n > 0 || b->late_n > 0 || b->tx_marker[0] != '\0';
    char hex[2 * MARKER_LEN + 1] = "none";
    if (marked && marker_hex(time_now_ms(), true, hex) != ROOST_OK) {
        snprintf(b->err, sizeof b->err, "commit: no random bytes for the marker");
        return ROOST_EINTERNAL;
    }
    bool unknown = false;
    rc = send_commit(b, marked ? hex : NULL, &unknown);
    if (!unknown) {
        if (rc == ROOST_OK) {
            b->in_tx = false;
            b->changes.n = 0;
            b->late_n = 0;
            rc = late_row_answer(b, true);
        }
        return rc;
    }
    /* A connection in an unknown state is never used again: the server rolls back whatever it
     * still holds when it goes. */
    unsigned long old_id = mysql_thread_id(b->db);
    size_t old_host = b->host_idx;
    char why[200];
    snprintf(why, sizeof why, "%.190s", b->err);
    b->in_tx = false;
    b->lost = true;
    /* On Galera the transaction's first write is the marker that tells (see above). */
    char fence[2 * MARKER_LEN + 1];
    snprintf(fence, sizeof fence, "%s", b->tx_marker[0] != '\0' ? b->tx_marker : hex);
    rc = resolve_commit(b, old_id, b->connected_mono_ms, old_host, marked ? fence : NULL);
    /* Rare and worth knowing afterwards: which node, why, and what the fence found. */
    char from[300], on[300];
    store_mysql_host_label(&b->url.hosts[old_host], from, sizeof from);
    store_mysql_host_label(&b->url.hosts[b->host_idx], on, sizeof on);
    for (char *c = why; *c != '\0'; c++) {
        *c = *c == '"' || *c == '\\' || *c == '\n' ? '\'' : *c;
    }
    log_warn("commit answer lost, outcome resolved",
             "marker=%s node=%s fence_node=%s outcome=%s why=\"%s\"", fence, from, on,
             rc == ROOST_OK                  ? "committed"
             : !marked && rc == ROOST_ERETRY ? "runs_again"
             : rc == ROOST_ERETRY            ? "not_committed"
                                             : "unknown",
             why);
    return rc == ROOST_OK ? late_row_answer(b, false) : rc;
}

int store_mysql_rollback(struct store *st)
{
    struct mysql_store *b = store_mysql_backend(st);
    bool sent = !b->begin_pending;
    b->changes.n = 0;
    b->late_n = 0;
    b->late_row.seq = NULL;
    b->tx_aborted = false;
    b->begin_pending = false;
    int rc = ROOST_OK;
    if (b->in_tx && sent && !b->lost) {
        /* Sent while in_tx still holds, so no session prefix (which could turn autocommit on
         * and so commit) goes first. After a deadlock the server already rolled back; ROLLBACK is
         * harmless then. */
        rc = store_mysql_exec_text(b, "ROLLBACK");
    }
    b->in_tx = false;
    return rc;
}

/* One savepoint name for every request of a group: MariaDB replaces a savepoint of the same
 * name, and COMMIT drops them all, so neither a RELEASE after a request that succeeded nor one
 * after ROLLBACK TO is needed (one round trip per request, not two; the group's first SAVEPOINT
 * is the first statement of its transaction). */
int store_mysql_savepoint(struct store *st)
{
    struct mysql_store *b = store_mysql_backend(st);
    b->changes.mark = b->changes.n;
    return store_mysql_exec_text(b, "SAVEPOINT roost_req");
}

int store_mysql_savepoint_release(struct store *st)
{
    (void)st;
    return ROOST_OK;
}

int store_mysql_savepoint_rollback(struct store *st)
{
    struct mysql_store *b = store_mysql_backend(st);
    b->changes.n = b->changes.mark;
    return store_mysql_exec_text(b, "ROLLBACK TO SAVEPOINT roost_req");
}
