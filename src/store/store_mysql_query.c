/* SPDX-License-Identifier: MIT */
/* The MySQL dialect's statement runner (struct store_dialect.run): a descriptor's MySQL text,
 * prepared once per connection into the connection's cache (closed and prepared again after a
 * reconnect), run through the statement runner of store_mysql_conn.c. */
#include "store/store_mysql.h"
#include "store/store_mysql_int.h"

#include <mysqld_error.h>
#include <stdio.h>
#include <string.h>

#include "store/store_lifecycle.h"

#include "common/banned.h"

#define RUN_PARAMS_MAX 16

/* The cache slot of descriptor d on this connection. */
static int cached(struct mysql_store *b, const struct store_stmt *d, MYSQL_STMT ***slot)
{
    size_t idx;
    bool fresh;
    if (store_stmt_cache_find(&b->cache, d, &idx, &fresh) != ROOST_OK) {
        return ROOST_ENOMEM;
    }
    if (idx >= b->n_run) {
        MYSQL_STMT **grown = store_stmt_slots_grow(b->run, &b->n_run, sizeof *grown, idx);
        if (grown == NULL) {
            return ROOST_ENOMEM;
        }
        b->run = grown;
    }
    *slot = &b->run[idx];
    return ROOST_OK;
}

/* Bounds the session's next statements by max_statement_time (0: lifts the bound). */
static int statement_time(struct mysql_store *b, int64_t ms)
{
    char set[64];
    snprintf(set, sizeof set, "SET SESSION max_statement_time = %.3f", (double)ms / 1000.0);
    return store_mysql_exec_text(b, set);
}

/* True when the text holds several statements (a ';' outside a string literal). */
static bool several(const char *sql)
{
    bool quoted = false;
    for (const char *c = sql; *c != '\0'; c++) {
        quoted = *c == '\'' ? !quoted : quoted;
        if (*c == ';' && !quoted) {
            return true;
        }
    }
    return false;
}

/* A descriptor of several statements goes out as one text round trip (prepared statements cannot
 * share one), its parameters escaped into the text in order; the rows of its first statement that
 * returns any go to rs. With `commit`, one statement and the transaction's COMMIT go together
 * (store_mysql_exec_sb_commit). */
static int run_text(struct mysql_store *b, const struct store_stmt *d, const char *sql,
                    const struct store_param *p, size_t np, struct rows *rs, bool commit)
{
    struct dynbuf sb = {.max = STORE_MYSQL_SQL_MAX};
    bool quoted = false, extra = false;
    size_t k = 0;
    for (const char *c = sql; *c != '\0' && !extra; c++) {
        quoted = *c == '\'' ? !quoted : quoted;
        if (*c != '?' || quoted) {
            dynbuf_addc(&sb, *c);
            continue;
        }
        if (k == np) {
            extra = true;
            break;
        }
        const struct store_param *v = &p[k++];
        if (v->type == STORE_P_INT) {
            dynbuf_addf(&sb, "%lld", (long long)v->i);
        } else if (v->type == STORE_P_TEXT && strlen(v->s) <= STORE_ID_MAX) {
            store_mysql_sb_quoted(&sb, b, v->s);
        } else {
            store_mysql_sb_text(&sb, b, v->type == STORE_P_TEXT ? v->s : NULL);
        }
    }
    int rc;
    if (extra || k != np) {
        snprintf(b->err, sizeof b->err, "%s: %zu parameters bound", d->name, np);
        rc = ROOST_EINTERNAL;
    } else if (commit) {
        rc = store_mysql_exec_sb_commit(b, &sb, rs);
    } else {
        rc = store_mysql_exec_sb_rerun(b, &sb, rs); /* the caller marked tx_once */
    }
    dynbuf_cleanup(&sb);
    return rc;
}

int store_mysql_run_stmt(struct store *st, const struct store_stmt *d, const struct store_param *p,
                         size_t np, struct store_run_opts *o, store_row_fn on_row, void *arg,
                         int64_t *changed)
{
    struct mysql_store *b = store_mysql_backend(st);
    struct prm prms[RUN_PARAMS_MAX];
    MYSQL_STMT **slot;
    if (changed != NULL) {
        *changed = 0;
    }
    const char *sql = store_stmt_sql(d, STORE_SQL_MYSQL);
    if (sql == NULL) {
        snprintf(b->err, sizeof b->err, "statement %s has no MySQL SQL", d->name);
        return ROOST_EINTERNAL;
    }
    if (np > RUN_PARAMS_MAX) {
        snprintf(b->err, sizeof b->err, "%s: too many parameters", d->name);
        return ROOST_EINTERNAL;
    }
    int rc = cached(b, d, &slot);
    if (rc != ROOST_OK) {
        return rc;
    }
    for (size_t i = 0; i < np; i++) {
        prms[i].type = p[i].type == STORE_P_INT    ? P_INT
                       : p[i].type == STORE_P_TEXT ? P_TEXT
                                                   : P_NULL;
        prms[i].i = p[i].i;
        prms[i].s = p[i].s;
    }
    /* The budget cuts the rows while they are fetched (struct rows). */
    struct rows rs = {.max_bytes = o != NULL ? o->max_bytes : 0,
                      .budget_col = o != NULL ? o->budget_col : 0};
    bool timed = o != NULL && o->max_ms > 0;
    if (timed && (rc = statement_time(b, o->max_ms)) != ROOST_OK) {
        return rc;
    }
    /* A write that must not run twice makes the transaction's COMMIT carry a marker. */
    bool reads = strncmp(sql, "SELECT ", 7) == 0 && !several(sql);
    b->tx_once = b->tx_once || !(d->rerun || reads);
    /* The transaction's whole effect (struct store.commit_rides), as its first statement: it and
     * the COMMIT in one round trip, as text (a prepared statement cannot share one). Galera's
     * transactions keep their marker, so never there. */
    bool ride = st->commit_rides && !reads && d->rerun && !several(sql) && !timed &&
                b->begin_pending && b->changes.n == 0 && b->tx_marker[0] == '\0';
    st->commit_rides = st->commit_rides && reads;
    rc = ride || several(sql)
             ? run_text(b, d, sql, p, np, on_row != NULL ? &rs : NULL, ride)
             : store_mysql_q_sql(b, slot, sql, prms, np, on_row != NULL ? &rs : NULL);
    if (timed) {
        /* Past the bound the server stops the statement with ER_STATEMENT_TIMEOUT. */
        if (rc != ROOST_OK && b->last_errno == ER_STATEMENT_TIMEOUT) {
            rc = ROOST_ESCANBUDGET;
        }
        int rc2 = statement_time(b, 0);
        rc = rc != ROOST_OK ? rc : rc2;
    }
    if (o != NULL) {
        o->cut = rc == ROOST_OK && rs.cut;
    }
    for (size_t r = 0; rc == ROOST_OK && on_row != NULL && r < rs.n; r++) {
        struct store_row row = store_mysql_row(&rs, r, 0);
        rc = on_row(arg, &row);
        if (rc == ROOST_OK && row.failed) {
            rc = ROOST_ENOMEM;
        }
        if (rc == STORE_ROW_STOP) {
            rc = ROOST_OK;
            break;
        }
    }
    if (rc == ROOST_OK && changed != NULL) {
        *changed = (int64_t)b->affected;
    }
    rows_free(&rs);
    return rc;
}
