/* SPDX-License-Identifier: MIT */
/* The MySQL dialect's query primitive (store_lifecycle.h): one statement of SQL text the caller
 * owns, prepared for the call, for the plain-row tables of store_webhooks.c. */
#include "store/store_mysql.h"
#include "store/store_mysql_int.h"

#include "store/store_lifecycle.h"

#include "common/banned.h"

#define QUERY_PARAMS_MAX 16

int store_mysql_query(struct store *st, const char *sql, const struct store_param *p, size_t np,
                      int (*on_row)(void *arg, struct store_row *row), void *arg, int64_t *changed)
{
    struct mysql_store *b = store_mysql_backend(st);
    struct prm prms[QUERY_PARAMS_MAX];
    if (changed != NULL) {
        *changed = 0;
    }
    if (np > QUERY_PARAMS_MAX) {
        snprintf(b->err, sizeof b->err, "%s: too many parameters", sql);
        return ROOST_EINTERNAL;
    }
    for (size_t i = 0; i < np; i++) {
        prms[i].type = p[i].type == STORE_P_INT    ? P_INT
                       : p[i].type == STORE_P_TEXT ? P_TEXT
                                                   : P_NULL;
        prms[i].i = p[i].i;
        prms[i].s = p[i].s;
    }
    struct rows rs = {0};
    int rc = store_mysql_q_sql(b, NULL, sql, prms, np, on_row != NULL ? &rs : NULL);
    for (size_t r = 0; rc == ROOST_OK && on_row != NULL && r < rs.n; r++) {
        struct store_row row = store_mysql_row(&rs, r, 0);
        rc = on_row(arg, &row);
        if (rc == ROOST_OK && row.failed) {
            rc = ROOST_ENOMEM;
        }
    }
    if (rc == ROOST_OK && changed != NULL) {
        *changed = (int64_t)b->affected;
    }
    rows_free(&rs);
    return rc;
}
