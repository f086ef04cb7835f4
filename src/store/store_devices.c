/* SPDX-License-Identifier: MIT */
/* Devices and refresh-token families (store_ops.h, types in store.h), written once: plain rows of a
 * tenant, each operation with its statements in every dialect beside it. The decisions (what a poll
 * answers, when a replay revokes a family) are the server's (api_oauth.c); the conditional updates
 * here make each transition happen once when two requests race. */

#include <stdio.h>
#include <string.h>

#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

#define DEVCOLS                                                                                    \
    "device_id, agent_id, name, address, scope_requested, scope_granted, user_code, status,"       \
    " code_expires_at, interval_s, last_poll_at, created_at, decided_at, decided_by,"              \
    " revoked_reason, refresh_gen, last_refresh_at"

static void copy_text(struct store_row *row, int col, char *dst, size_t cap)
{
    const char *s = row->text(row, col);
    snprintf(dst, cap, "%s", s != NULL ? s : "");
}

struct device_page {
    struct store_device *out;
    size_t limit, n;
    bool has_more;
};

static int on_device(void *arg, struct store_row *row)
{
    struct device_page *pg = arg;
    if (pg->n == pg->limit) {
        pg->has_more = true;
        return ROOST_OK;
    }
    struct store_device *d = &pg->out[pg->n++];
    memset(d, 0, sizeof *d);
    copy_text(row, 0, d->device_id, sizeof d->device_id);
    copy_text(row, 1, d->agent_id, sizeof d->agent_id);
    copy_text(row, 2, d->name, sizeof d->name);
    copy_text(row, 3, d->address, sizeof d->address);
    copy_text(row, 4, d->scope_requested, sizeof d->scope_requested);
    copy_text(row, 5, d->scope_granted, sizeof d->scope_granted);
    copy_text(row, 6, d->user_code, sizeof d->user_code);
    d->status = (int)row->i64(row, 7);
    d->code_expires_at_ms = row->i64(row, 8);
    d->interval_s = row->i64(row, 9);
    d->last_poll_at_ms = row->i64(row, 10);
    d->created_at_ms = row->i64(row, 11);
    d->decided_at_ms = row->i64(row, 12);
    copy_text(row, 13, d->decided_by, sizeof d->decided_by);
    copy_text(row, 14, d->revoked_reason, sizeof d->revoked_reason);
    d->refresh_gen = row->i64(row, 15);
    d->last_refresh_at_ms = row->i64(row, 16);
    return row->failed ? ROOST_ENOMEM : ROOST_OK;
}

/* A duplicate user code or code hash: SQLite's insert changes nothing; MySQL's fails on the key. */
STORE_STMT(DEVICE_ADD,
           "INSERT INTO devices (tenant_id, device_id, agent_id, name, address, scope_requested,"
           " user_code, device_code_hash, status, code_expires_at, interval_s, created_at)"
           " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
           "INSERT INTO devices (tenant_id, device_id, agent_id, name, address, scope_requested,"
           " user_code, device_code_hash, status, code_expires_at, interval_s, created_at)"
           " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
           "INSERT INTO devices (tenant_id, device_id, agent_id, name, address, scope_requested,"
           " user_code, device_code_hash, status, code_expires_at, interval_s, created_at)"
           " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");

int store_devices_add(struct store *st, const char *tenant_id, const struct store_device *d,
                      const char *code_hash)
{
    struct store_param p[] = {ARG_T(tenant_id),
                              ARG_T(d->device_id),
                              ARG_T(d->agent_id),
                              ARG_T(d->name),
                              ARG_T(d->address),
                              ARG_T(d->scope_requested),
                              ARG_T(d->user_code),
                              ARG_T(code_hash),
                              ARG_I(STORE_DEVICE_PENDING),
                              ARG_I(d->code_expires_at_ms),
                              ARG_I(d->interval_s),
                              ARG_I(d->created_at_ms)};
    int64_t changed = 0;
    int rc = store_run(st, DEVICE_ADD, p, NULL, NULL, &changed);
    if ((rc == ROOST_ESTORE && st->dialect->dup_key(st)) || (rc == ROOST_OK && changed == 0)) {
        rc = ROOST_EKEYEXISTS;
    }
    return rc;
}

STORE_STMT(DEVICE_BY_ID, "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ? AND device_id = ?",
           "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ? AND device_id = ?",
           "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ? AND device_id = ?");
STORE_STMT(DEVICE_BY_USER_CODE,
           "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ? AND user_code = ?",
           "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ? AND user_code = ?",
           "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ? AND user_code = ?");
STORE_STMT(DEVICE_BY_CODE_HASH,
           "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ? AND device_code_hash = ?",
           "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ? AND device_code_hash = ?",
           "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ? AND device_code_hash = ?");

int store_devices_get(struct store *st, const char *tenant_id, int by, const char *value,
                      struct store_device *out)
{
    const struct store_stmt *q = by == STORE_DEVICE_BY_USER_CODE   ? &DEVICE_BY_USER_CODE
                                 : by == STORE_DEVICE_BY_CODE_HASH ? &DEVICE_BY_CODE_HASH
                                                                   : &DEVICE_BY_ID;
    struct device_page pg = {.out = out, .limit = 1};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(value)};
    memset(out, 0, sizeof *out);
    int rc = store_run(st, *q, p, on_device, &pg, NULL);
    return rc == ROOST_OK && pg.n == 0 ? ROOST_EDEVICENOTFOUND : rc;
}

STORE_STMT(DEVICE_LIST,
           "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ? AND device_id > ?"
           " AND (? IS NULL OR agent_id = ?) ORDER BY device_id LIMIT ?",
           "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ? AND device_id > ?"
           " AND (? IS NULL OR agent_id = ?) ORDER BY device_id LIMIT ?",
           "SELECT " DEVCOLS " FROM devices WHERE tenant_id = ?1 AND device_id > ?2"
           " AND (?3::text IS NULL OR agent_id = ?4) ORDER BY device_id LIMIT ?5");

int store_devices_list(struct store *st, const char *tenant_id, const char *agent_id,
                       const char *after, size_t limit, struct store_device *out, size_t *n,
                       bool *has_more)
{
    struct device_page pg = {.out = out, .limit = limit};
    int rc = ROOST_OK;
    if (limit > 0) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(after != NULL ? after : ""),
                                  ARG_T(agent_id), ARG_T(agent_id), ARG_I(store_limit_page(limit))};
        rc = store_run(st, DEVICE_LIST, p, on_device, &pg, NULL);
    }
    *n = pg.n;
    *has_more = pg.has_more;
    return rc;
}

STORE_STMT(
    DEVICE_POLL,
    "UPDATE devices SET last_poll_at = ?, interval_s = ? WHERE tenant_id = ? AND device_id = ?",
    "UPDATE devices SET last_poll_at = ?, interval_s = ? WHERE tenant_id = ? AND device_id = ?",
    "UPDATE devices SET last_poll_at = ?, interval_s = ? WHERE tenant_id = ? AND device_id = ?");

int store_devices_poll(struct store *st, const char *tenant_id, const char *device_id,
                       int64_t now_ms, int64_t interval_s)
{
    struct store_param p[] = {ARG_I(now_ms), ARG_I(interval_s), ARG_T(tenant_id), ARG_T(device_id)};
    int64_t changed = 0;
    int rc = store_run(st, DEVICE_POLL, p, NULL, NULL, &changed);
    return rc == ROOST_OK && changed == 0 ? ROOST_EDEVICENOTFOUND : rc;
}

STORE_STMT(DEVICE_DECIDE,
           "UPDATE devices SET status = ?, scope_granted = ?, decided_at = ?, decided_by = ?"
           " WHERE tenant_id = ? AND device_id = ? AND status = 0 AND code_expires_at > ?",
           "UPDATE devices SET status = ?, scope_granted = ?, decided_at = ?, decided_by = ?"
           " WHERE tenant_id = ? AND device_id = ? AND status = 0 AND code_expires_at > ?",
           "UPDATE devices SET status = ?, scope_granted = ?, decided_at = ?, decided_by = ?"
           " WHERE tenant_id = ? AND device_id = ? AND status = 0 AND code_expires_at > ?");

int store_devices_decide(struct store *st, const char *tenant_id, const char *device_id,
                         bool approve, const char *scope_granted, const char *by, int64_t now_ms)
{
    struct store_param p[] = {ARG_I(approve ? STORE_DEVICE_APPROVED : STORE_DEVICE_DENIED),
                              ARG_T(approve ? scope_granted : NULL),
                              ARG_I(now_ms),
                              ARG_T(by),
                              ARG_T(tenant_id),
                              ARG_T(device_id),
                              ARG_I(now_ms)};
    int64_t changed = 0;
    int rc = store_run(st, DEVICE_DECIDE, p, NULL, NULL, &changed);
    if (rc == ROOST_OK && changed == 0) {
        struct store_device d;
        rc = store_devices_get(st, tenant_id, STORE_DEVICE_BY_ID, device_id, &d);
        return rc == ROOST_OK ? ROOST_ESTATE : rc;
    }
    return rc;
}

/* A revoked device keeps its first reason and time. */
STORE_STMT(DEVICE_REVOKE,
           "UPDATE devices SET status = 3, revoked_reason = coalesce(revoked_reason, ?),"
           " decided_by = CASE WHEN status = 3 THEN decided_by ELSE ? END,"
           " decided_at = CASE WHEN status = 3 THEN decided_at ELSE ? END"
           " WHERE tenant_id = ? AND device_id = ?",
           "UPDATE devices SET revoked_reason = COALESCE(revoked_reason, ?),"
           " decided_by = CASE WHEN status = 3 THEN decided_by ELSE ? END,"
           " decided_at = CASE WHEN status = 3 THEN decided_at ELSE ? END, status = 3"
           " WHERE tenant_id = ? AND device_id = ?",
           "UPDATE devices SET status = 3, revoked_reason = coalesce(revoked_reason, ?),"
           " decided_by = CASE WHEN status = 3 THEN decided_by ELSE ? END,"
           " decided_at = CASE WHEN status = 3 THEN decided_at ELSE ? END"
           " WHERE tenant_id = ? AND device_id = ?");
/* Its signing keys are named "<device_id>.<gen>": the key range of that prefix ('/' follows '.').
 */
STORE_STMT(DEVICE_KEYS_REVOKE,
           "UPDATE keys SET revoked_at = min(coalesce(revoked_at, ?), ?)"
           " WHERE tenant_id = ? AND key_id > ? AND key_id < ?",
           "UPDATE `keys` SET revoked_at = LEAST(COALESCE(revoked_at, ?), ?)"
           " WHERE tenant_id = ? AND key_id > ? AND key_id < ?",
           "UPDATE keys SET revoked_at = LEAST(COALESCE(revoked_at, ?), ?)"
           " WHERE tenant_id = ? AND key_id > ? AND key_id < ?");

int store_devices_revoke(struct store *st, const char *tenant_id, const char *device_id,
                         const char *reason, const char *by, int64_t now_ms)
{
    struct store_param p[] = {ARG_T(reason), ARG_T(by), ARG_I(now_ms), ARG_T(tenant_id),
                              ARG_T(device_id)};
    int64_t changed = 0;
    int rc = store_run(st, DEVICE_REVOKE, p, NULL, NULL, &changed);
    if (rc != ROOST_OK || changed == 0) {
        return rc == ROOST_OK ? ROOST_EDEVICENOTFOUND : rc;
    }
    char lo[STORE_DEVICE_ID_MAX + 2], hi[STORE_DEVICE_ID_MAX + 2];
    snprintf(lo, sizeof lo, "%s.", device_id);
    snprintf(hi, sizeof hi, "%s/", device_id);
    struct store_param k[] = {ARG_I(now_ms), ARG_I(now_ms), ARG_T(tenant_id), ARG_T(lo), ARG_T(hi)};
    return store_run(st, DEVICE_KEYS_REVOKE, k, NULL, NULL, NULL);
}

STORE_STMT(DEVICE_ADVANCE,
           "UPDATE devices SET refresh_gen = refresh_gen + 1, last_refresh_at = ?"
           " WHERE tenant_id = ? AND device_id = ? AND refresh_gen = ? AND status = 1",
           "UPDATE devices SET refresh_gen = refresh_gen + 1, last_refresh_at = ?"
           " WHERE tenant_id = ? AND device_id = ? AND refresh_gen = ? AND status = 1",
           "UPDATE devices SET refresh_gen = refresh_gen + 1, last_refresh_at = ?"
           " WHERE tenant_id = ? AND device_id = ? AND refresh_gen = ? AND status = 1");

int store_devices_advance(struct store *st, const char *tenant_id, const char *device_id,
                          int64_t gen, int64_t now_ms)
{
    struct store_param p[] = {ARG_I(now_ms), ARG_T(tenant_id), ARG_T(device_id), ARG_I(gen)};
    int64_t changed = 0;
    int rc = store_run(st, DEVICE_ADVANCE, p, NULL, NULL, &changed);
    return rc == ROOST_OK && changed == 0 ? ROOST_ESTATE : rc;
}

STORE_STMT(REFRESH_ADD,
           "INSERT INTO refresh_tokens (tenant_id, token_hash, device_id, gen, created_at)"
           " VALUES (?, ?, ?, ?, ?)",
           "INSERT INTO refresh_tokens (tenant_id, token_hash, device_id, gen, created_at)"
           " VALUES (?, ?, ?, ?, ?)",
           "INSERT INTO refresh_tokens (tenant_id, token_hash, device_id, gen, created_at)"
           " VALUES (?, ?, ?, ?, ?)");

int store_devices_refresh_add(struct store *st, const char *tenant_id, const char *token_hash,
                              const char *device_id, int64_t gen, int64_t now_ms)
{
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(token_hash), ARG_T(device_id), ARG_I(gen),
                              ARG_I(now_ms)};
    return store_run(st, REFRESH_ADD, p, NULL, NULL, NULL);
}

/* The conditional update is the one winner of two uses; the read after it names the family. */
STORE_STMT(REFRESH_USE,
           "UPDATE refresh_tokens SET used_at = ? WHERE tenant_id = ? AND token_hash = ?"
           " AND used_at IS NULL",
           "UPDATE refresh_tokens SET used_at = ? WHERE tenant_id = ? AND token_hash = ?"
           " AND used_at IS NULL",
           "UPDATE refresh_tokens SET used_at = ? WHERE tenant_id = ? AND token_hash = ?"
           " AND used_at IS NULL");
STORE_STMT(REFRESH_GET,
           "SELECT device_id, gen, used_at FROM refresh_tokens"
           " WHERE tenant_id = ? AND token_hash = ?",
           "SELECT device_id, gen, used_at FROM refresh_tokens"
           " WHERE tenant_id = ? AND token_hash = ?",
           "SELECT device_id, gen, used_at FROM refresh_tokens"
           " WHERE tenant_id = ? AND token_hash = ?");

struct refresh_row {
    char *device_id;
    int64_t gen, used_ms;
    bool found;
};

static int on_refresh(void *arg, struct store_row *row)
{
    struct refresh_row *r = arg;
    copy_text(row, 0, r->device_id, STORE_DEVICE_ID_MAX + 1);
    r->gen = row->i64(row, 1);
    r->used_ms = row->i64(row, 2);
    r->found = true;
    return row->failed ? ROOST_ENOMEM : ROOST_OK;
}

int store_devices_refresh_use(struct store *st, const char *tenant_id, const char *token_hash,
                              int64_t now_ms, char *device_id, int64_t *gen, bool *reused,
                              int64_t *used_ms)
{
    struct store_param u[] = {ARG_I(now_ms), ARG_T(tenant_id), ARG_T(token_hash)};
    int64_t changed = 0;
    device_id[0] = '\0';
    *gen = 0;
    *reused = false;
    *used_ms = 0;
    int rc = store_run(st, REFRESH_USE, u, NULL, NULL, &changed);
    if (rc != ROOST_OK) {
        return rc;
    }
    struct refresh_row r = {.device_id = device_id};
    struct store_param g[] = {ARG_T(tenant_id), ARG_T(token_hash)};
    if ((rc = store_run(st, REFRESH_GET, g, on_refresh, &r, NULL)) != ROOST_OK) {
        return rc;
    }
    if (!r.found) {
        return ROOST_EDEVICENOTFOUND;
    }
    *gen = r.gen;
    *reused = changed == 0;
    *used_ms = r.used_ms;
    return ROOST_OK;
}
