/* SPDX-License-Identifier: MIT */
/* Request-signing keys and replay nonces (DESIGN §6.2; store_ops.h), written once: plain rows
 * with no lifecycle, each operation with its statements in every dialect beside it. */
#include <string.h>

#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

/* A duplicate key id: SQLite's insert changes nothing; MySQL's fails on the key (InnoDB rolls
 * back only the statement, the transaction goes on). */
STORE_STMT(KEY_ADD,
           "INSERT INTO keys (tenant_id, key_id, agent_id, alg, material, created_at)"
           " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, key_id) DO NOTHING",
           "INSERT INTO `keys` (tenant_id, key_id, agent_id, alg, material, created_at)"
           " VALUES (?, ?, ?, ?, ?, ?)",
           "INSERT INTO keys (tenant_id, key_id, agent_id, alg, material, created_at)"
           " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, key_id) DO NOTHING");

int store_keys_add(struct store *st, const char *tenant_id, const struct store_key *key,
                   int64_t now_ms)
{
    struct store_param p[] = {ARG_T(tenant_id),
                              ARG_T(key->key_id),
                              ARG_T(key->agent_id),
                              ARG_T(key->alg),
                              ARG_T(key->material != NULL ? key->material : ""),
                              ARG_I(now_ms)};
    int64_t changed = 0;
    int rc = store_run(st, KEY_ADD, p, NULL, NULL, &changed);
    if ((rc == ROOST_ESTORE && st->dialect->dup_key(st)) || (rc == ROOST_OK && changed == 0)) {
        rc = ROOST_EKEYEXISTS;
    }
    return rc;
}

struct key_page {
    struct store_key *out;
    size_t limit, n;
    bool has_more, material;
    int rc;
};

static int on_key(void *arg, struct store_row *row)
{
    struct key_page *pg = arg;
    if (pg->n == pg->limit) {
        pg->has_more = true;
        return ROOST_OK;
    }
    struct store_key *k = &pg->out[pg->n++];
    memset(k, 0, sizeof *k);
    store_row_key(row, k);
    if (pg->material) {
        return store_row_dup(row, 5, &k->material);
    }
    return ROOST_OK;
}

STORE_STMT(KEY_GET, "SELECT " KEYCOLS ", material FROM keys WHERE tenant_id = ? AND key_id = ?",
           "SELECT " KEYCOLS ", material FROM `keys` WHERE tenant_id = ? AND key_id = ?",
           "SELECT " KEYCOLS ", material FROM keys WHERE tenant_id = ? AND key_id = ?");

int store_keys_get(struct store *st, const char *tenant_id, const char *key_id,
                   struct store_key *out)
{
    struct key_page pg = {.out = out, .limit = 1, .material = true};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(key_id)};
    memset(out, 0, sizeof *out);
    int rc = store_run(st, KEY_GET, p, on_key, &pg, NULL);
    if (rc == ROOST_OK && pg.n == 0) {
        rc = ROOST_EKEYNOTFOUND;
    } else if (rc == ROOST_OK && out->material == NULL) {
        rc = ROOST_ESTORE;
    }
    if (rc != ROOST_OK) {
        store_key_cleanup(out);
    }
    return rc;
}

STORE_STMT(KEY_LIST,
           "SELECT " KEYCOLS
           " FROM keys WHERE tenant_id = ? AND key_id > ? ORDER BY key_id LIMIT ?",
           "SELECT " KEYCOLS " FROM `keys` WHERE tenant_id = ? AND key_id > ? ORDER BY key_id"
           " LIMIT ?",
           "SELECT " KEYCOLS
           " FROM keys WHERE tenant_id = ? AND key_id > ? ORDER BY key_id LIMIT ?");

int store_keys_list(struct store *st, const char *tenant_id, const char *after_key, size_t limit,
                    struct store_key *out, size_t *n, bool *has_more)
{
    struct key_page pg = {.out = out, .limit = limit};
    int rc = ROOST_OK;
    if (limit > 0) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(after_key != NULL ? after_key : ""),
                                  ARG_I(store_limit_page(limit))};
        rc = store_run(st, KEY_LIST, p, on_key, &pg, NULL);
    }
    *n = pg.n;
    *has_more = pg.has_more;
    return rc;
}

/* Revoking a revoked key keeps the earlier revoked_at (a device key's end of overlap may lie
 * ahead) and still matches its row (MySQL: CLIENT_FOUND_ROWS). */
STORE_STMT(KEY_REVOKE,
           "UPDATE keys SET revoked_at = min(coalesce(revoked_at, ?), ?)"
           " WHERE tenant_id = ? AND key_id = ?",
           "UPDATE `keys` SET revoked_at = LEAST(COALESCE(revoked_at, ?), ?)"
           " WHERE tenant_id = ? AND key_id = ?",
           "UPDATE keys SET revoked_at = LEAST(COALESCE(revoked_at, ?), ?)"
           " WHERE tenant_id = ? AND key_id = ?");

int store_keys_revoke(struct store *st, const char *tenant_id, const char *key_id, int64_t now_ms)
{
    struct store_param p[] = {ARG_I(now_ms), ARG_I(now_ms), ARG_T(tenant_id), ARG_T(key_id)};
    int64_t changed = 0;
    int rc = store_run(st, KEY_REVOKE, p, NULL, NULL, &changed);
    return rc == ROOST_OK && changed == 0 ? ROOST_EKEYNOTFOUND : rc;
}

/* With a conditional upsert (STORE_CAP_UPSERT_WHERE): a row still inside its window makes the
 * upsert change nothing, which is the replay. */
#define NONCE_UPSERT_SQL                                                                           \
    "INSERT INTO nonces (tenant_id, key_id, nonce, expires_at)"                                    \
    " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (tenant_id, key_id, nonce)"                              \
    " DO UPDATE SET expires_at = excluded.expires_at WHERE nonces.expires_at <= ?5"
STORE_STMT_ONLY2(NONCE_UPSERT, STORE_SQL_SQLITE, NONCE_UPSERT_SQL, STORE_SQL_PG, NONCE_UPSERT_SQL);
/* Without: an expired row is deleted first; then the insert either wins or meets a live row (a
 * concurrent claim of the same nonce on another node waits on its row lock, then sees the
 * duplicate). */
STORE_STMT_ONLY(NONCE_EXPIRED_DELETE, STORE_SQL_MYSQL,
                "DELETE FROM nonces WHERE tenant_id = ? AND key_id = ? AND nonce = ?"
                " AND expires_at <= ?");
STORE_STMT_ONLY(NONCE_INSERT, STORE_SQL_MYSQL,
                "INSERT INTO nonces (tenant_id, key_id, nonce, expires_at) VALUES (?, ?, ?, ?)");

int store_keys_nonce_claim(struct store *st, const char *tenant_id, const char *key_id,
                           const char *nonce, int64_t expires_at_ms, int64_t now_ms)
{
    int64_t changed = 0;
    int rc;
    if (store_dialect_has(st->dialect, STORE_CAP_UPSERT_WHERE)) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(key_id), ARG_T(nonce),
                                  ARG_I(expires_at_ms), ARG_I(now_ms)};
        rc = store_run(st, NONCE_UPSERT, p, NULL, NULL, &changed);
        return rc == ROOST_OK && changed == 0 ? ROOST_ENONCEREUSED : rc;
    }
    struct store_param del[] = {ARG_T(tenant_id), ARG_T(key_id), ARG_T(nonce), ARG_I(now_ms)};
    if ((rc = store_run(st, NONCE_EXPIRED_DELETE, del, NULL, NULL, NULL)) != ROOST_OK) {
        return rc;
    }
    struct store_param ins[] = {ARG_T(tenant_id), ARG_T(key_id), ARG_T(nonce),
                                ARG_I(expires_at_ms)};
    rc = store_run(st, NONCE_INSERT, ins, NULL, NULL, NULL);
    return rc == ROOST_ESTORE && st->dialect->dup_key(st) ? ROOST_ENONCEREUSED : rc;
}

STORE_STMT(NONCE_PRUNE,
           "DELETE FROM nonces WHERE (tenant_id, key_id, nonce) IN"
           " (SELECT tenant_id, key_id, nonce FROM nonces WHERE expires_at <= ? LIMIT ?)",
           "DELETE FROM nonces WHERE expires_at <= ? LIMIT ?",
           "DELETE FROM nonces WHERE ctid = ANY(ARRAY(SELECT ctid FROM nonces"
           " WHERE expires_at <= ? LIMIT ?)) AND expires_at <= ?1");

int store_keys_nonce_prune(struct store *st, int64_t now_ms, size_t limit, size_t *count)
{
    int64_t changed = 0;
    *count = 0;
    if (limit == 0) {
        return ROOST_OK;
    }
    struct store_param p[] = {ARG_I(now_ms), ARG_I(store_limit(limit))};
    int rc = store_run(st, NONCE_PRUNE, p, NULL, NULL, &changed);
    if (rc == ROOST_OK) {
        *count = (size_t)changed;
    }
    return rc;
}
