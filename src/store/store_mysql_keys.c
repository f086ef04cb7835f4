/* SPDX-License-Identifier: MIT */
/* The MySQL/MariaDB backend's request-signing keys and replay nonces (DESIGN §6.2): plain rows
 * with no lifecycle, one statement each. */
#include "store/store_mysql.h"
#include "store/store_mysql_int.h"

#include <mysqld_error.h>

#include "store/store_sql.h"

#include "common/banned.h"

/* ---- signature keys and nonces ---- */

int store_mysql_key_add(struct store *st, const char *tenant_id, const struct store_key *key,
                        int64_t now_ms)
{
    struct mysql_store *b = store_mysql_backend(st);
    struct prm p[] = {PS(tenant_id),
                      PS(key->key_id),
                      PS(key->agent_id),
                      PS(key->alg),
                      PS(key->material != NULL ? key->material : ""),
                      PI(now_ms)};
    int rc = Q(b, S_KEY_ADD, p, NULL);
    /* A duplicate key rolls back only the statement (InnoDB), the transaction goes on. */
    if (rc == ROOST_ESTORE && b->last_errno == ER_DUP_ENTRY) {
        rc = ROOST_EKEYEXISTS;
    }
    return rc;
}

/* Fills k from a KEYCOLS row. */
static void row_to_key(const struct rows *rs, size_t r, struct store_key *k)
{
    struct store_row row = store_mysql_row(rs, r, 0);
    store_row_key(&row, k);
}

int store_mysql_key_get(struct store *st, const char *tenant_id, const char *key_id,
                        struct store_key *out)
{
    struct mysql_store *b = store_mysql_backend(st);
    struct rows rs = {0};
    memset(out, 0, sizeof *out);
    struct prm p[] = {PS(tenant_id), PS(key_id)};
    int rc = Q(b, S_KEY_GET, p, &rs);
    if (rc == ROOST_OK && rs.n == 0) {
        rc = ROOST_EKEYNOTFOUND;
    }
    if (rc == ROOST_OK) {
        row_to_key(&rs, 0, out);
        rc = cell_dup(&rs, 0, 5, &out->material);
        if (rc == ROOST_OK && out->material == NULL) {
            rc = ROOST_ESTORE;
        }
    }
    rows_free(&rs);
    return rc;
}

int store_mysql_key_list(struct store *st, const char *tenant_id, const char *after_key,
                         size_t limit, struct store_key *out, size_t *n, bool *has_more)
{
    struct mysql_store *b = store_mysql_backend(st);
    struct rows rs = {0};
    *n = 0;
    *has_more = false;
    if (limit == 0) {
        return ROOST_OK;
    }
    int64_t lim = store_limit_page(limit);
    struct prm p[] = {PS(tenant_id), PS(after_key != NULL ? after_key : ""), PI(lim)};
    int rc = Q(b, S_KEY_LIST, p, &rs);
    for (size_t r = 0; rc == ROOST_OK && r < rs.n; r++) {
        if (*n == limit) {
            *has_more = true;
            break;
        }
        struct store_key *k = &out[(*n)++];
        memset(k, 0, sizeof *k);
        row_to_key(&rs, r, k);
    }
    rows_free(&rs);
    return rc;
}

int store_mysql_key_revoke(struct store *st, const char *tenant_id, const char *key_id,
                           int64_t now_ms)
{
    struct mysql_store *b = store_mysql_backend(st);
    struct prm p[] = {PI(now_ms), PS(tenant_id), PS(key_id)};
    int rc = Q(b, S_KEY_REVOKE, p, NULL);
    if (rc == ROOST_OK && b->affected == 0) {
        rc = ROOST_EKEYNOTFOUND;
    }
    return rc;
}

/* An expired row is deleted first; then the insert either wins or meets a live row (a concurrent
 * claim of the same nonce on another node waits on its row lock, then sees the duplicate). */
int store_mysql_nonce_claim(struct store *st, const char *tenant_id, const char *key_id,
                            const char *nonce, int64_t expires_at_ms, int64_t now_ms)
{
    struct mysql_store *b = store_mysql_backend(st);
    struct prm del[] = {PS(tenant_id), PS(key_id), PS(nonce), PI(now_ms)};
    int rc = Q(b, S_NONCE_EXPIRED_DELETE, del, NULL);
    if (rc != ROOST_OK) {
        return rc;
    }
    struct prm ins[] = {PS(tenant_id), PS(key_id), PS(nonce), PI(expires_at_ms)};
    rc = Q(b, S_NONCE_INSERT, ins, NULL);
    if (rc == ROOST_ESTORE && b->last_errno == ER_DUP_ENTRY) {
        rc = ROOST_ENONCEREUSED;
    }
    return rc;
}

int store_mysql_nonce_prune(struct store *st, int64_t now_ms, size_t limit, size_t *count)
{
    struct mysql_store *b = store_mysql_backend(st);
    *count = 0;
    if (limit == 0) {
        return ROOST_OK;
    }
    struct prm p[] = {PI(now_ms), PI(store_limit(limit))};
    int rc = Q(b, S_NONCE_PRUNE, p, NULL);
    if (rc == ROOST_OK) {
        *count = (size_t)b->affected;
    }
    return rc;
}
