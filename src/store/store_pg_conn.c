/* SPDX-License-Identifier: MIT */
/* The PostgreSQL backend's driver (postgres://USER:PASS@HOST:PORT/DB[?schema=NAME&...]): the
 * URL, one libpq connection per struct store, the statement runner (each descriptor prepared
 * once per connection, run with text parameters), transactions and savepoints, the commit
 * whose answer was lost, and migrations. Sessions run at READ COMMITTED, every statement outside
 * a transaction its own unit of work (autocommit). */
#include "store/store_pg.h"
#include "store/store_pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/dynbuf.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "store/migrations.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

#define PARAMS_MAX 16
/* Attempts for one statement outside a transaction (a lost connection). */
#define AUTOCOMMIT_TRIES 3
/* How long a lost COMMIT answer is worked on before it is reported as unknown. */
#define RESOLVE_MS 30000
/* Bounds the SQL text of the COMMIT's round trip (the change rows of one transaction). */
#define COMMIT_SQL_MAX ((size_t)1 << 26)

static _Thread_local char open_err[512];

const char *store_pg_open_error(void)
{
    return open_err;
}

/* ---- the URL ---- */

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* libpq parses the URI itself (user, password, hosts, unix sockets as host=/path or a
 * percent-encoded path, sslmode and every other parameter); the only parameter that is ours is
 * schema=NAME, taken out before libpq sees the URL. */
int store_pg_url_parse(const char *url, char **conninfo, char schema[STORE_PG_SCHEMA_MAX + 1],
                       char *err, size_t errlen)
{
    *conninfo = NULL;
    snprintf(schema, STORE_PG_SCHEMA_MAX + 1, "%s", STORE_PG_SCHEMA_DEFAULT);
    if (strncmp(url, "postgres://", 11) != 0 && strncmp(url, "postgresql://", 13) != 0) {
        snprintf(err, errlen, "expected postgres://USER[:PASS]@HOST[:PORT]/DB[?schema=NAME&...]");
        return ROOST_EINVAL;
    }
    size_t n = strlen(url);
    char *out = malloc(n + 1);
    if (out == NULL) {
        snprintf(err, errlen, "out of memory");
        return ROOST_ENOMEM;
    }
    const char *q = strchr(url, '?');
    size_t base = q != NULL ? (size_t)(q - url) : n;
    memcpy(out, url, base);
    size_t len = base;
    bool first = true;
    for (const char *p = q != NULL ? q + 1 : NULL; p != NULL && *p != '\0';) {
        const char *amp = strchr(p, '&');
        size_t plen = amp != NULL ? (size_t)(amp - p) : strlen(p);
        if (plen > 7 && memcmp(p, "schema=", 7) == 0) {
            size_t k = 0;
            for (size_t i = 7; i < plen; i++) {
                char c = p[i];
                if (c == '%' && i + 2 < plen && hexval(p[i + 1]) >= 0 && hexval(p[i + 2]) >= 0) {
                    c = (char)(hexval(p[i + 1]) * 16 + hexval(p[i + 2]));
                    i += 2;
                }
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '_';
                if (!ok || k == STORE_PG_SCHEMA_MAX) {
                    snprintf(err, errlen, "schema: 1 to %d letters, digits or '_'",
                             STORE_PG_SCHEMA_MAX);
                    free(out);
                    return ROOST_EINVAL;
                }
                schema[k++] = c;
            }
            schema[k] = '\0';
        } else if (plen > 0) {
            out[len++] = first ? '?' : '&';
            memcpy(out + len, p, plen);
            len += plen;
            first = false;
        }
        p = amp != NULL ? amp + 1 : NULL;
    }
    out[len] = '\0';
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(out, &perr);
    if (opts == NULL) {
        snprintf(err, errlen, "%s", perr != NULL ? perr : "bad URL (out of memory)");
        for (char *c = err; *c != '\0'; c++) {
            *c = *c == '\n' ? ' ' : *c;
        }
        PQfreemem(perr);
        free(out);
        return ROOST_EINVAL;
    }
    PQconninfoFree(opts);
    *conninfo = out;
    return ROOST_OK;
}

/* ---- errors ---- */

static void set_err(struct pg_store *b, const char *what, const char *msg)
{
    snprintf(b->err, sizeof b->err, "%s: %s", what, msg != NULL ? msg : "");
    size_t n = strlen(b->err);
    while (n > 0 && (b->err[n - 1] == '\n' || b->err[n - 1] == ' ')) {
        b->err[--n] = '\0';
    }
    for (char *c = b->err; *c != '\0'; c++) {
        *c = *c == '\n' ? ' ' : *c;
    }
}

/* Records the failure detail and maps it: a serialization failure or deadlock (the server
 * rolled the statement back, the transaction is aborted), a lock timeout, or a lost connection →
 * ROOST_ERETRY (the caller rolls back and replays); out of memory → ROOST_ENOMEM; anything else
 * (a unique key among them: dup_key) → ROOST_ESTORE. */
static int fail_res(struct pg_store *b, const PGresult *res, const char *what)
{
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res != NULL ? PQresultErrorMessage(res) : NULL;
    if (msg == NULL || msg[0] == '\0') {
        msg = b->db != NULL ? PQerrorMessage(b->db) : "no connection";
    }
    set_err(b, what, msg);
    snprintf(b->sqlstate, sizeof b->sqlstate, "%s", state != NULL ? state : "");
    if (b->db == NULL || PQstatus(b->db) != CONNECTION_OK || state == NULL ||
        strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
        strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0) {
        b->lost = true;
        return ROOST_ERETRY;
    }
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 || strcmp(state, "55P03") == 0) {
        return ROOST_ERETRY;
    }
    if (strcmp(state, "53200") == 0) {
        return ROOST_ENOMEM;
    }
    return ROOST_ESTORE;
}

/* ---- connections ---- */

/* The session every connection runs in: the schema first on the search_path (the pg_catalog
 * functions stay reachable), READ COMMITTED whatever the database's default, and the lock wait. */
static int session_init(struct pg_store *b, PGconn *db, char *err, size_t errlen)
{
    char *schema = PQescapeIdentifier(db, b->schema, strlen(b->schema));
    if (schema == NULL) {
        snprintf(err, errlen, "out of memory");
        return ROOST_ENOMEM;
    }
    char sql[512];
    snprintf(sql, sizeof sql,
             "SET search_path TO %s; SET default_transaction_isolation = 'read committed';"
             " SET lock_timeout = %d; SET client_min_messages = warning",
             schema, b->lock_timeout_ms);
    PQfreemem(schema);
    PGresult *res = PQexec(db, sql);
    int rc = ROOST_OK;
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        snprintf(err, errlen, "session setup: %s", PQerrorMessage(db));
        rc = ROOST_EUNAVAILABLE;
    }
    PQclear(res);
    return rc;
}

/* A new connection with the session set up, or NULL with the reason in err. */
static PGconn *connect_db(struct pg_store *b, char *err, size_t errlen)
{
    PGconn *db = PQconnectdb(b->conninfo);
    if (db == NULL) {
        snprintf(err, errlen, "connect: out of memory");
        return NULL;
    }
    if (PQstatus(db) != CONNECTION_OK) {
        snprintf(err, errlen, "connect: %s", PQerrorMessage(db));
        for (char *c = err; *c != '\0'; c++) {
            *c = *c == '\n' ? ' ' : *c;
        }
        PQfinish(db);
        return NULL;
    }
    if (session_init(b, db, err, errlen) != ROOST_OK) {
        PQfinish(db);
        return NULL;
    }
    return db;
}

static void drop_db(struct pg_store *b)
{
    if (b->db != NULL) {
        PQfinish(b->db);
        b->db = NULL;
    }
    b->gen++; /* every statement is prepared again on the next connection */
}

/* Reopens a dropped connection (outside a transaction only: the server rolled an open one back,
 * and the caller must hear of that through ROOST_ERETRY). */
static int conn_ready(struct pg_store *b)
{
    if (!b->lost && b->db != NULL) {
        return ROOST_OK;
    }
    if (b->in_tx) {
        return ROOST_ERETRY;
    }
    drop_db(b);
    char err[400];
    if ((b->db = connect_db(b, err, sizeof err)) == NULL) {
        snprintf(b->err, sizeof b->err, "%s", err);
        return ROOST_EUNAVAILABLE;
    }
    b->lost = false;
    return ROOST_OK;
}

/* A transaction's BEGIN goes out with its first statement (one that ran none costs nothing),
 * with txid_current(): the id a lost COMMIT answer is resolved by (store_pg_commit). */
static int begin_now(struct pg_store *b)
{
    if (!b->in_tx || !b->begin_pending) {
        return ROOST_OK;
    }
    PGresult *res = PQexec(b->db, "BEGIN; SELECT txid_current()");
    int rc = ROOST_OK;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        rc = fail_res(b, res, "begin");
    } else {
        b->txid = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        b->begin_pending = false;
    }
    PQclear(res);
    return rc;
}

int store_pg_exec(struct pg_store *b, const char *sql)
{
    int rc = conn_ready(b);
    if (rc != ROOST_OK || (rc = begin_now(b)) != ROOST_OK) {
        return rc;
    }
    PGresult *res = PQexec(b->db, sql);
    ExecStatusType s = PQresultStatus(res);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        rc = fail_res(b, res, sql);
    }
    PQclear(res);
    return rc;
}

/* ---- statements ---- */

/* The descriptor's text with its parameters as $n: `?` takes the next number, `?N` is $N (text
 * in quotes is copied as it is). malloc'd, NULL when out of memory. */
static char *pg_text(const char *sql)
{
    size_t n = strlen(sql);
    char *out = malloc(n * 3 + 1);
    if (out == NULL) {
        return NULL;
    }
    size_t o = 0;
    int next = 0;
    bool quoted = false;
    for (size_t i = 0; i < n; i++) {
        char c = sql[i];
        if (c == '\'') {
            quoted = !quoted;
        }
        if (c != '?' || quoted) {
            out[o++] = c;
            continue;
        }
        out[o++] = '$';
        if (sql[i + 1] >= '0' && sql[i + 1] <= '9') {
            continue; /* ?N → $N: the digits follow */
        }
        o += (size_t)snprintf(out + o, 12, "%d", ++next);
    }
    out[o] = '\0';
    return out;
}

static int64_t row_i64(struct store_row *row, int col)
{
    const PGresult *res = row->src;
    return PQgetisnull(res, (int)row->r, col)
               ? 0
               : strtoll(PQgetvalue(res, (int)row->r, col), NULL, 10);
}

static const char *row_text(struct store_row *row, int col)
{
    const PGresult *res = row->src;
    return PQgetisnull(res, (int)row->r, col) ? NULL : PQgetvalue(res, (int)row->r, col);
}

static int run_once(struct store *st, const struct store_stmt *d, const struct store_param *p,
                    size_t np, struct store_run_opts *o, store_row_fn on_row, void *arg,
                    int64_t *changed);

/* A transaction's first statement travels with its BEGIN, txid_current() and, on a connection
 * that has not prepared it yet, its PREPARE: libpq's pipeline mode queues the four and one Sync,
 * and their answers come back in order, one round trip instead of two or three. text: the SQL
 * to prepare as `name`, NULL when it is prepared. *out: the statement's result on success.
 * An error of any part is reported as its own (fail_res); a BEGIN that ran leaves the
 * transaction open (failed, for the caller's ROLLBACK) whatever came after it. */
static int exec_pipelined(struct pg_store *b, struct pg_slot *slot, const char *name,
                          const char *text, const char *what, int np, const Oid *types,
                          const char *const *vals, PGresult **out)
{
    enum { Q_PREP_BEGIN, Q_PREP_TXID, Q_BEGIN, Q_TXID, Q_PREPARE, Q_STMT, Q_N };
    static const char *const part[Q_N] = {"begin", "begin", "begin", "begin", NULL, NULL};
    PGconn *db = b->db;
    bool sent[Q_N] = {false, false, false, false, false, false};
    /* BEGIN and txid_current() are prepared once per connection too: sent unnamed, each would
     * be parsed again in every transaction. */
    bool prep = b->begin_gen != b->gen;
    bool ok = PQenterPipelineMode(db) == 1 &&
              (!prep ||
               ((sent[Q_PREP_BEGIN] = PQsendPrepare(db, "rb", "BEGIN", 0, NULL)) &&
                (sent[Q_PREP_TXID] = PQsendPrepare(db, "rt", "SELECT txid_current()", 0, NULL)))) &&
              (sent[Q_BEGIN] = PQsendQueryPrepared(db, "rb", 0, NULL, NULL, NULL, 0)) &&
              (sent[Q_TXID] = PQsendQueryPrepared(db, "rt", 0, NULL, NULL, NULL, 0)) &&
              (text == NULL || (sent[Q_PREPARE] = PQsendPrepare(db, name, text, np, types))) &&
              (sent[Q_STMT] = PQsendQueryPrepared(db, name, np, vals, NULL, NULL, 0)) &&
              PQpipelineSync(db) == 1;
    int rc = ROOST_OK;
    PGresult *stmt = NULL;
    for (int q = 0; ok && q < Q_N; q++) {
        if (!sent[q]) {
            continue;
        }
        PGresult *res;
        while ((res = PQgetResult(db)) != NULL) {
            ExecStatusType s = PQresultStatus(res);
            bool good = q == Q_TXID ? s == PGRES_TUPLES_OK && PQntuples(res) == 1
                                    : s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
            if (good && q == Q_BEGIN) {
                b->begin_pending = false; /* open from here on: the caller rolls it back */
            } else if (good && q == Q_TXID) {
                b->txid = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
            } else if (good && q == Q_PREP_TXID) {
                b->begin_gen = b->gen;
            } else if (good && q == Q_PREP_BEGIN) {
                /* the pair counts once both are prepared */
            } else if (good && q == Q_PREPARE) {
                slot->gen = b->gen;
            } else if (good && stmt == NULL) {
                stmt = res;
                continue;
            } else if (!good && s != PGRES_PIPELINE_ABORTED && rc == ROOST_OK) {
                rc = fail_res(b, res, part[q] != NULL ? part[q] : what);
            }
            PQclear(res);
        }
        ok = PQstatus(db) == CONNECTION_OK;
    }
    if (ok) {
        PGresult *res = PQgetResult(db);
        ok = res != NULL && PQresultStatus(res) == PGRES_PIPELINE_SYNC;
        PQclear(res);
    }
    ok = ok && PQexitPipelineMode(db) == 1;
    if (!ok) {
        /* A send or the answers cut short: the connection is gone (the server rolls back). */
        PQclear(stmt);
        int lost = fail_res(b, NULL, what);
        return rc != ROOST_OK ? rc : lost;
    }
    if (rc != ROOST_OK) {
        PQclear(stmt);
        return rc;
    }
    *out = stmt;
    return ROOST_OK;
}

/* Bounds the session's next statements by statement_timeout (0: lifts the bound). */
static int statement_time(struct pg_store *b, int64_t ms)
{
    char set[64];
    snprintf(set, sizeof set, "SET statement_timeout = %lld", (long long)ms);
    return store_pg_exec(b, set);
}

int store_pg_run(struct store *st, const struct store_stmt *d, const struct store_param *p,
                 size_t np, struct store_run_opts *o, store_row_fn on_row, void *arg,
                 int64_t *changed)
{
    struct pg_store *b = store_pg_backend(st);
    if (o != NULL) {
        o->cut = false;
    }
    if (o == NULL || o->max_ms <= 0) {
        return run_once(st, d, p, np, o, on_row, arg, changed);
    }
    int rc = statement_time(b, o->max_ms);
    if (rc != ROOST_OK) {
        return rc;
    }
    rc = run_once(st, d, p, np, o, on_row, arg, changed);
    /* Past the bound the server cancels the statement (SQLSTATE 57014, query_canceled). */
    if (rc != ROOST_OK && strcmp(b->sqlstate, "57014") == 0) {
        rc = ROOST_ESCANBUDGET;
    }
    int rc2 = statement_time(b, 0);
    return rc != ROOST_OK ? rc : rc2;
}

static int run_once(struct store *st, const struct store_stmt *d, const struct store_param *p,
                    size_t np, struct store_run_opts *o, store_row_fn on_row, void *arg,
                    int64_t *changed)
{
    struct pg_store *b = store_pg_backend(st);
    if (changed != NULL) {
        *changed = 0;
    }
    const char *sql = store_stmt_sql(d, STORE_SQL_PG);
    if (sql == NULL) {
        snprintf(b->err, sizeof b->err, "statement %s has no PostgreSQL SQL", d->name);
        return ROOST_EINTERNAL;
    }
    if (np > PARAMS_MAX) {
        snprintf(b->err, sizeof b->err, "%s: too many parameters", d->name);
        return ROOST_EINTERNAL;
    }
    size_t idx;
    bool fresh;
    if (store_stmt_cache_find(&b->cache, d, &idx, &fresh) != ROOST_OK) {
        return ROOST_ENOMEM;
    }
    if (idx >= b->n_slots) {
        struct pg_slot *grown = store_stmt_slots_grow(b->slots, &b->n_slots, sizeof *grown, idx);
        if (grown == NULL) {
            return ROOST_ENOMEM;
        }
        b->slots = grown;
    }
    char name[24];
    snprintf(name, sizeof name, "r%zu", idx);
    char ibuf[PARAMS_MAX][24];
    const char *vals[PARAMS_MAX];
    Oid types[PARAMS_MAX];
    for (size_t i = 0; i < np; i++) {
        if (p[i].type == STORE_P_INT) {
            snprintf(ibuf[i], sizeof ibuf[i], "%lld", (long long)p[i].i);
            vals[i] = ibuf[i];
            types[i] = 20; /* int8 */
        } else if (p[i].type == STORE_P_TEXT) {
            vals[i] = p[i].s;
            types[i] = 25; /* text */
        } else {
            vals[i] = NULL;
            types[i] = 0; /* the server infers it */
        }
    }
    int rc = ROOST_OK;
    for (int attempt = 0; attempt < AUTOCOMMIT_TRIES; attempt++) {
        if ((rc = conn_ready(b)) != ROOST_OK) {
            return rc;
        }
        char *text = NULL;
        if (b->slots[idx].gen != b->gen && (text = pg_text(sql)) == NULL) {
            return ROOST_ENOMEM;
        }
        PGresult *res = NULL;
        if (b->in_tx && b->begin_pending) {
            rc = exec_pipelined(b, &b->slots[idx], name, text, d->name, (int)np, types, vals, &res);
            free(text);
            if (rc != ROOST_OK) {
                goto retry;
            }
        } else {
            if (text != NULL) {
                res = PQprepare(b->db, name, text, (int)np, types);
                free(text);
                if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                    rc = fail_res(b, res, d->name);
                    PQclear(res);
                    goto retry;
                }
                PQclear(res);
                b->slots[idx].gen = b->gen;
            }
            res = PQexecPrepared(b->db, name, (int)np, vals, NULL, NULL, 0);
            ExecStatusType s = PQresultStatus(res);
            if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
                rc = fail_res(b, res, d->name);
                PQclear(res);
                goto retry;
            }
        }
        const char *tuples = PQcmdTuples(res);
        b->affected = tuples[0] != '\0' ? strtoll(tuples, NULL, 10) : PQntuples(res);
        int n = PQntuples(res);
        size_t used = 0;
        /* STORE_CAP_INSERT_ID: what an UPDATE … RETURNING handed back (insert_id). */
        b->returned = on_row == NULL && n > 0 && PQnfields(res) > 0 && !PQgetisnull(res, 0, 0)
                          ? strtoll(PQgetvalue(res, 0, 0), NULL, 10)
                          : 0;
        for (int r = 0; on_row != NULL && r < n && rc == ROOST_OK; r++) {
            if (o != NULL && o->max_bytes != 0) {
                int c = (int)o->budget_col;
                size_t bytes = PQgetisnull(res, r, c) ? 0 : (size_t)PQgetlength(res, r, c);
                if (!store_budget_take(&used, (size_t)r, bytes, o->max_bytes)) {
                    o->cut = true;
                    break;
                }
            }
            struct store_row row = {
                .i64 = row_i64, .text = row_text, .src = res, .r = (size_t)r, .c0 = 0};
            rc = on_row(arg, &row);
            if (rc == ROOST_OK && row.failed) {
                rc = ROOST_ENOMEM;
            }
            if (rc == STORE_ROW_STOP) {
                rc = ROOST_OK;
                break;
            }
        }
        PQclear(res);
        if (rc == ROOST_OK && changed != NULL) {
            *changed = b->affected;
        }
        return rc;
    retry:
        if (rc != ROOST_ERETRY || b->in_tx) {
            return rc;
        }
    }
    return rc;
}

/* ---- the connection ---- */

int store_pg_open(const char *url, const struct store_options *opt, struct store **out)
{
    *out = NULL;
    open_err[0] = '\0';
    struct pg_store *b = calloc(1, sizeof *b);
    if (b == NULL) {
        return ROOST_ENOMEM;
    }
    b->base.ops = &store_ops_table;
    b->base.dialect = &store_pg_dialect;
    int rc = store_pg_url_parse(url, &b->conninfo, b->schema, open_err, sizeof open_err);
    if (rc != ROOST_OK) {
        free(b);
        return rc;
    }
    b->origin = opt->origin;
    b->lock_timeout_ms = opt->busy_timeout_ms > 0 ? opt->busy_timeout_ms : ROOST_BUSY_TIMEOUT_MS;
    b->gen = 1;
    if ((b->listener = store_pg_listener_acquire(b->conninfo, b->schema)) == NULL) {
        free(b->conninfo);
        free(b);
        return ROOST_ENOMEM;
    }
    if ((b->db = connect_db(b, open_err, sizeof open_err)) == NULL) {
        store_pg_listener_release(b->listener);
        free(b->conninfo);
        free(b);
        return ROOST_EUNAVAILABLE;
    }
    snprintf(b->err, sizeof b->err, "no error");
    *out = &b->base;
    return ROOST_OK;
}

void store_pg_close(struct store *st)
{
    struct pg_store *b = store_pg_backend(st);
    if (b == NULL) {
        return;
    }
    if (b->db != NULL) {
        PQfinish(b->db);
    }
    store_pg_listener_release(b->listener);
    store_stmt_cache_free(&b->cache);
    free(b->slots);
    store_changes_free(&b->changes);
    free(b->conninfo);
    free(b);
}

const char *store_pg_errmsg(struct store *st)
{
    return store_pg_backend(st)->err;
}

/* False while the server is unreachable; reconnects when it is back. */
bool store_pg_ping(struct store *st)
{
    struct pg_store *b = store_pg_backend(st);
    if (b->in_tx) {
        return !b->lost;
    }
    bool ok = false;
    /* A second try on a new connection when the first found the old one gone. */
    for (int attempt = 0; attempt < 2 && !ok; attempt++) {
        if (conn_ready(b) != ROOST_OK) {
            return false;
        }
        PGresult *res = PQexec(b->db, "SELECT 1");
        ok = PQresultStatus(res) == PGRES_TUPLES_OK;
        if (!ok) {
            fail_res(b, res, "ping");
        }
        PQclear(res);
        if (!b->lost) {
            break;
        }
    }
    return ok;
}

/* ---- migrations ---- */

/* Applies the embedded migrations not yet recorded, all in one transaction under an advisory
 * lock of the schema's name (DDL is transactional: a migration is applied whole or not at all,
 * and processes starting together apply each once). The schema is created when missing (with
 * IF NOT EXISTS alone PostgreSQL would demand CREATE on the database even when it exists). */
int store_pg_migrate(struct store *st)
{
    struct pg_store *b = store_pg_backend(st);
    if (b->in_tx) {
        snprintf(b->err, sizeof b->err, "migrate: inside a transaction");
        return ROOST_EINTERNAL;
    }
    int rc = conn_ready(b);
    if (rc != ROOST_OK) {
        return rc;
    }
    char *schema = PQescapeIdentifier(b->db, b->schema, strlen(b->schema));
    char *lit = PQescapeLiteral(b->db, b->schema, strlen(b->schema));
    struct dynbuf sb = {.max = 4096};
    dynbuf_addf(&sb,
                "BEGIN; SELECT pg_advisory_xact_lock(hashtext('roost_migrate:' || %s));"
                " DO $roost$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %s)"
                " THEN CREATE SCHEMA %s; END IF; END $roost$;"
                " CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER NOT NULL PRIMARY"
                " KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
                lit != NULL ? lit : "''", lit != NULL ? lit : "''",
                schema != NULL ? schema : "roost");
    PQfreemem(schema);
    PQfreemem(lit);
    rc = sb.err != DYNBUF_OK || schema == NULL || lit == NULL ? ROOST_ENOMEM
                                                              : store_pg_exec(b, sb.s);
    dynbuf_cleanup(&sb);
    for (size_t i = 0; rc == ROOST_OK && i < store_migrations_postgres_count; i++) {
        const struct store_migration *m = &store_migrations_postgres[i];
        char q[128];
        snprintf(q, sizeof q, "SELECT 1 FROM schema_migrations WHERE version = %d", m->version);
        PGresult *res = PQexec(b->db, q);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            rc = fail_res(b, res, "migrate");
            PQclear(res);
            break;
        }
        bool applied = PQntuples(res) > 0;
        PQclear(res);
        if (applied) {
            continue;
        }
        char what[160];
        snprintf(what, sizeof what, "migration %s", m->name);
        res = PQexec(b->db, m->sql);
        ExecStatusType s = PQresultStatus(res);
        if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
            rc = fail_res(b, res, what);
            PQclear(res);
            break;
        }
        PQclear(res);
        char *name = PQescapeLiteral(b->db, m->name, strlen(m->name));
        char rec[400];
        snprintf(rec, sizeof rec,
                 "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%d, %s,"
                 " (extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
                 m->version, name != NULL ? name : "''");
        PQfreemem(name);
        rc = store_pg_exec(b, rec);
    }
    const char *end = rc == ROOST_OK ? "COMMIT" : "ROLLBACK";
    if (!b->lost) {
        PGresult *res = PQexec(b->db, end);
        if (rc == ROOST_OK &&
            (PQresultStatus(res) != PGRES_COMMAND_OK || strcmp(PQcmdStatus(res), "COMMIT") != 0)) {
            rc = fail_res(b, res, "migrate: COMMIT");
        }
        PQclear(res);
    }
    return rc;
}

/* ---- transactions ---- */

int store_pg_begin(struct store *st)
{
    struct pg_store *b = store_pg_backend(st);
    if (b->in_tx) {
        snprintf(b->err, sizeof b->err, "begin: a transaction is already open");
        return ROOST_EINTERNAL;
    }
    int rc = conn_ready(b);
    if (rc == ROOST_OK) {
        b->in_tx = true;
        b->begin_pending = true;
        b->txid = 0;
        b->changes.n = b->changes.mark = b->changes.ret_mark = 0;
    }
    return rc;
}

static void sb_literal(struct dynbuf *sb, struct pg_store *b, const char *text)
{
    char *lit = PQescapeLiteral(b->db, text, strlen(text));
    if (lit == NULL) {
        sb->err = DYNBUF_ENOMEM;
        return;
    }
    dynbuf_adds(sb, lit);
    PQfreemem(lit);
}

static void sb_quote(struct dynbuf *sb, void *arg, const char *text)
{
    sb_literal(sb, arg, text);
}

int store_pg_change(struct pg_store *b, const char *tenant_id, const char *agent_id, int64_t head,
                    int64_t at_ms)
{
    if (!b->in_tx) {
        struct store_change one = {.head = head, .at_ms = at_ms};
        snprintf(one.tenant_id, sizeof one.tenant_id, "%s", tenant_id);
        snprintf(one.agent_id, sizeof one.agent_id, "%s", agent_id);
        struct dynbuf sb = {.max = COMMIT_SQL_MAX};
        int rc = conn_ready(b);
        if (rc == ROOST_OK) {
            store_changes_sql(&sb, &one, 1, b->origin, NULL, sb_quote, b);
        }
        if (rc == ROOST_OK) {
            rc = sb.err != DYNBUF_OK ? ROOST_ENOMEM : store_pg_exec(b, sb.s);
        }
        dynbuf_cleanup(&sb);
        if (rc == ROOST_OK) {
            char notify[STORE_PG_SCHEMA_MAX + 32];
            snprintf(notify, sizeof notify, "NOTIFY " STORE_PG_CHANNEL_FMT, b->schema);
            rc = store_pg_exec(b, notify);
        }
        return rc;
    }
    return store_changes_add(&b->changes, tenant_id, agent_id, head, at_ms);
}

/* ---- the commit whose answer was lost ----
 *
 * The transaction's id comes back with its BEGIN (txid_current(), begin_now), so it is known
 * before COMMIT goes out. When the COMMIT's answer does not arrive (the connection dropped), the
 * writer opens a new connection and asks txid_status(id):
 *   - committed → ROOST_OK; aborted → ROOST_ERETRY (the group replays);
 *   - in progress: the old session is still there (the server has not noticed the drop, or its
 *     COMMIT has not run): it is terminated (pg_terminate_backend, only when its backend_xid is
 *     still this transaction), and the question asked again until the answer is final. A
 *     terminated session's open transaction aborts; a COMMIT already running completes.
 * Until the answer is known no client hears anything; past RESOLVE_MS (the server down) the
 * outcome is reported as unknown: ROOST_EUNAVAILABLE. */
static int resolve_commit(struct pg_store *b, int old_pid, int64_t txid)
{
    int64_t deadline = time_mono_ms() + RESOLVE_MS;
    int rc = ROOST_EUNAVAILABLE;
    for (int wait = 20;; wait = wait < 500 ? wait * 2 : 500) {
        if (b->db == NULL || b->lost) {
            drop_db(b);
            char err[400];
            b->db = connect_db(b, err, sizeof err);
            b->lost = b->db == NULL;
            if (b->db == NULL) {
                snprintf(b->err, sizeof b->err, "commit outcome: %s", err);
            }
        }
        if (b->db != NULL) {
            char q[200];
            snprintf(q, sizeof q, "SELECT txid_status(%lld)", (long long)txid);
            PGresult *res = PQexec(b->db, q);
            if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
                const char *s = PQgetisnull(res, 0, 0) ? "" : PQgetvalue(res, 0, 0);
                if (strcmp(s, "committed") == 0) {
                    rc = ROOST_OK;
                } else if (strcmp(s, "aborted") == 0) {
                    rc = ROOST_ERETRY;
                    snprintf(b->err, sizeof b->err, "commit: the transaction did not commit");
                } else if (strcmp(s, "in progress") == 0) {
                    rc = ROOST_EUNAVAILABLE;
                } else {
                    snprintf(b->err, sizeof b->err, "commit outcome: txid_status = '%s'", s);
                    PQclear(res);
                    return ROOST_EUNAVAILABLE;
                }
                PQclear(res);
                if (rc != ROOST_EUNAVAILABLE) {
                    return rc;
                }
                snprintf(q, sizeof q,
                         "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = %d"
                         " AND backend_xid::text::bigint = %lld",
                         old_pid, (long long)(txid & 0xffffffffLL));
                PQclear(PQexec(b->db, q));
            } else {
                fail_res(b, res, "commit outcome");
                PQclear(res);
            }
        }
        if (time_mono_ms() >= deadline) {
            snprintf(b->err, sizeof b->err, "commit: outcome unknown after %d ms", RESOLVE_MS);
            return ROOST_EUNAVAILABLE;
        }
        time_sleep_ms(wait);
    }
}

/* Sends [the transaction's change rows;] COMMIT in one round trip. ROOST_OK: committed.
 * ROOST_ERETRY: certainly not committed (the caller replays). Another error: not committed,
 * transaction still open (the caller rolls back), except ROOST_EUNAVAILABLE after a lost answer
 * that could not be resolved. */
int store_pg_commit(struct store *st)
{
    struct pg_store *b = store_pg_backend(st);
    if (!b->in_tx) {
        snprintf(b->err, sizeof b->err, "commit: no transaction");
        return ROOST_EINTERNAL;
    }
    if (b->lost) {
        snprintf(b->err, sizeof b->err, "commit: the connection dropped, the transaction is gone");
        return ROOST_ERETRY;
    }
    if (b->begin_pending && b->changes.n == 0) {
        b->begin_pending = false;
        b->in_tx = false;
        return ROOST_OK;
    }
    int rc = begin_now(b);
    if (rc != ROOST_OK) {
        return rc;
    }
    struct dynbuf sb = {.max = COMMIT_SQL_MAX};
    store_changes_sql(&sb, b->changes.rows, b->changes.n, b->origin, NULL, sb_quote, b);
    dynbuf_adds(&sb, "COMMIT");
    /* Every node's listener is told after the COMMIT, in the same round trip but in a
     * transaction of its own: a transaction that NOTIFYs holds a database-wide lock from its
     * commit until its end, so NOTIFY inside the write transactions would serialise their WAL
     * flushes (no group commit in the server across roostd's writers and nodes). Sent only when
     * the COMMIT succeeded (a failed statement skips the rest of the text); lost if the
     * connection drops right between the two, which the tailer's once-a-second read covers. */
    if (b->changes.n > 0) {
        dynbuf_addf(&sb, "; NOTIFY " STORE_PG_CHANNEL_FMT, b->schema);
    }
    if (sb.err != DYNBUF_OK) {
        dynbuf_cleanup(&sb);
        return ROOST_ENOMEM;
    }
    int old_pid = PQbackendPID(b->db);
    bool sent = PQsendQuery(b->db, sb.s) == 1;
    dynbuf_cleanup(&sb);
    bool committed = false, rolled_back = false, answered = false;
    rc = ROOST_OK;
    PGresult *res;
    while (sent && (res = PQgetResult(b->db)) != NULL) {
        ExecStatusType s = PQresultStatus(res);
        if (s == PGRES_COMMAND_OK && strcmp(PQcmdStatus(res), "COMMIT") == 0) {
            committed = true;
        } else if (s == PGRES_COMMAND_OK && strcmp(PQcmdStatus(res), "ROLLBACK") == 0) {
            rolled_back = true;
        } else if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK && rc == ROOST_OK) {
            const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
            answered = state != NULL && PQstatus(b->db) == CONNECTION_OK;
            rc = fail_res(b, res, "commit");
        }
        PQclear(res);
    }
    if (committed) {
        b->in_tx = false;
        b->changes.n = 0;
        return ROOST_OK;
    }
    if (rolled_back) {
        /* The transaction had failed before (an error the caller went on after): nothing of it
         * committed. */
        b->in_tx = false;
        b->changes.n = 0;
        snprintf(b->err, sizeof b->err, "commit: the transaction had failed and rolled back");
        return ROOST_ESTORE;
    }
    if (answered) {
        return rc; /* the server refused a statement before COMMIT: still open, caller rolls back */
    }
    /* No answer: the COMMIT may or may not have run. Nobody is told anything until we know. */
    char why[200];
    snprintf(why, sizeof why, "%.190s", sent ? b->err : PQerrorMessage(b->db));
    for (char *c = why; *c != '\0'; c++) {
        *c = *c == '"' || *c == '\\' || *c == '\n' ? '\'' : *c;
    }
    int64_t txid = b->txid;
    b->in_tx = false;
    b->changes.n = 0;
    b->lost = true;
    rc = resolve_commit(b, old_pid, txid);
    log_warn("commit answer lost, outcome resolved", "txid=%lld outcome=%s why=\"%s\"",
             (long long)txid,
             rc == ROOST_OK       ? "committed"
             : rc == ROOST_ERETRY ? "not_committed"
                                  : "unknown",
             why);
    return rc;
}

int store_pg_rollback(struct store *st)
{
    struct pg_store *b = store_pg_backend(st);
    bool sent = !b->begin_pending;
    b->changes.n = 0;
    b->begin_pending = false;
    int rc = ROOST_OK;
    if (b->in_tx && sent && !b->lost && b->db != NULL) {
        PGresult *res = PQexec(b->db, "ROLLBACK");
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            rc = fail_res(b, res, "rollback");
        }
        PQclear(res);
    }
    b->in_tx = false;
    return rc;
}

int store_pg_savepoint(struct store *st)
{
    struct pg_store *b = store_pg_backend(st);
    b->changes.mark = b->changes.n;
    return store_pg_exec(b, "SAVEPOINT roost_req");
}

/* Released at once: PostgreSQL keeps every savepoint of a name (a stack), and each one holds a
 * subtransaction. */
int store_pg_savepoint_release(struct store *st)
{
    return store_pg_exec(store_pg_backend(st), "RELEASE SAVEPOINT roost_req");
}

int store_pg_savepoint_rollback(struct store *st)
{
    struct pg_store *b = store_pg_backend(st);
    b->changes.n = b->changes.mark;
    return store_pg_exec(b, "ROLLBACK TO SAVEPOINT roost_req; RELEASE SAVEPOINT roost_req");
}
