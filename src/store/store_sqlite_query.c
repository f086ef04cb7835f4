/* SPDX-License-Identifier: MIT */
/* The SQLite dialect's query primitive (store_lifecycle.h): one statement of SQL text the caller
 * owns, prepared for the call, for the plain-row tables of store_webhooks.c. */
#include "store/store_sqlite.h"
#include "store/store_sqlite_int.h"

#include "store/store_lifecycle.h"

#include "common/banned.h"

int store_sqlite_query(struct store *st, const char *sql, const struct store_param *p, size_t np,
                       int (*on_row)(void *arg, struct store_row *row), void *arg, int64_t *changed)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    sqlite3_stmt *s = NULL;
    if (changed != NULL) {
        *changed = 0;
    }
    int src = sqlite3_prepare_v2(b->db, sql, -1, &s, NULL);
    if (src != SQLITE_OK) {
        return store_sqlite_fail(b, src, sql);
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
    int rc;
    while ((rc = store_sqlite_step(b, s)) == 1) {
        if (on_row == NULL) {
            continue;
        }
        struct store_row row = store_sqlite_row(s);
        if ((rc = on_row(arg, &row)) != ROOST_OK) {
            break;
        }
        if (row.failed) {
            rc = ROOST_ENOMEM;
            break;
        }
    }
    if (rc == ROOST_OK && changed != NULL) {
        *changed = sqlite3_changes(b->db);
    }
    sqlite3_finalize(s);
    return rc;
}
