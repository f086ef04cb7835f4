/* SPDX-License-Identifier: MIT */
/* The SQLite dialect's statement runner (struct store_dialect.run): a descriptor's SQLite text,
 * prepared once per connection (SQLITE_PREPARE_PERSISTENT) into the connection's cache, rebound
 * and reset on every call. */
#include "store/store_sqlite.h"
#include "store/store_sqlite_int.h"

#include <stdlib.h>

#include "common/timeutil.h"
#include "store/store_lifecycle.h"

#include "common/banned.h"

/* The prepared statement of descriptor d on this connection, prepared on first use. */
static int cached(struct sqlite_store *b, const struct store_stmt *d, sqlite3_stmt **out)
{
    size_t idx;
    bool fresh;
    *out = NULL;
    if (store_stmt_cache_find(&b->cache, d, &idx, &fresh) != ROOST_OK) {
        return ROOST_ENOMEM;
    }
    if (idx >= b->n_run) {
        sqlite3_stmt **grown = store_stmt_slots_grow(b->run, &b->n_run, sizeof *grown, idx);
        if (grown == NULL) {
            return ROOST_ENOMEM;
        }
        b->run = grown;
    }
    if (b->run[idx] == NULL) {
        const char *sql = store_stmt_sql(d, STORE_SQL_SQLITE);
        if (sql == NULL) {
            snprintf(b->err, sizeof b->err, "statement %s has no SQLite SQL", d->name);
            return ROOST_EINTERNAL;
        }
        int src = sqlite3_prepare_v3(b->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &b->run[idx], NULL);
        if (src != SQLITE_OK) {
            return store_sqlite_fail(b, src, sql);
        }
    }
    *out = b->run[idx];
    return ROOST_OK;
}

/* The progress handler of a time-bounded statement: interrupts it past its deadline. */
struct run_deadline {
    int64_t at_ms;
    bool hit;
};

static int run_progress(void *arg)
{
    struct run_deadline *d = arg;
    d->hit = time_mono_ms() > d->at_ms;
    return d->hit;
}

int store_sqlite_run_stmt(struct store *st, const struct store_stmt *d, const struct store_param *p,
                          size_t np, struct store_run_opts *o, store_row_fn on_row, void *arg,
                          int64_t *changed)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    sqlite3_stmt *s;
    size_t max_bytes = o != NULL ? o->max_bytes : 0, used = 0, n = 0;
    struct run_deadline dl = {0};
    bool timed = o != NULL && o->max_ms > 0;
    if (changed != NULL) {
        *changed = 0;
    }
    if (o != NULL) {
        o->cut = false;
    }
    int rc = cached(b, d, &s);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (timed) {
        /* Checked every 1000 VM steps. */
        dl.at_ms = time_mono_ms() + o->max_ms;
        sqlite3_progress_handler(b->db, 1000, run_progress, &dl);
    }
    for (size_t i = 0; i < np; i++) {
        int col = (int)i + 1;
        if (p[i].type == STORE_P_INT) {
            sqlite3_bind_int64(s, col, p[i].i);
        } else if (p[i].type == STORE_P_TEXT) {
            sqlite3_bind_text(s, col, p[i].s, -1, SQLITE_STATIC);
        } else {
            sqlite3_bind_null(s, col);
        }
    }
    while ((rc = store_sqlite_step(b, s)) == 1) {
        if (on_row == NULL) {
            continue;
        }
        /* SQLite loads a column's value only for the rows stepped on. */
        if (max_bytes != 0 &&
            !store_budget_take(&used, n, (size_t)sqlite3_column_bytes(s, (int)o->budget_col),
                               max_bytes)) {
            o->cut = true;
            rc = ROOST_OK;
            break;
        }
        n++;
        struct store_row row = store_sqlite_row(s);
        if ((rc = on_row(arg, &row)) != ROOST_OK) {
            rc = rc == STORE_ROW_STOP ? ROOST_OK : rc;
            break;
        }
        if (row.failed) {
            rc = ROOST_ENOMEM;
            break;
        }
    }
    if (timed) {
        sqlite3_progress_handler(b->db, 0, NULL, NULL);
        rc = dl.hit ? ROOST_ESCANBUDGET : rc;
    }
    if (rc == ROOST_OK && changed != NULL) {
        *changed = sqlite3_changes(b->db);
    }
    /* Reset, so no read snapshot stays pinned; the bindings point at the caller's text. */
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

void store_sqlite_run_close(struct sqlite_store *b)
{
    for (size_t i = 0; i < b->n_run; i++) {
        sqlite3_finalize(b->run[i]);
    }
    free(b->run);
    b->run = NULL;
    b->n_run = 0;
    store_stmt_cache_free(&b->cache);
}
