/* SPDX-License-Identifier: MIT */
/* Inbound webhook sources and their receipt log (store_sources.h, DESIGN §6.5), once for every
 * backend: each operation with its statements beside it in every dialect (store_stmt.h). */
#include "store/store_sources.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

#define SRCCOLS "tenant_id, source_id, name, scheme, config, created_at, updated_at"
#define RCPCOLS                                                                                    \
    "source_id, receipt_id, at, outcome, reason, coalesce(delivery_id, ''), size, peer, events"

void store_source_cleanup(struct store_source *s)
{
    free(s->config);
    s->config = NULL;
    OPENSSL_cleanse(s->secret, sizeof s->secret);
    OPENSSL_cleanse(s->old_secret, sizeof s->old_secret);
}

int store_source_new_id(char out[STORE_SOURCE_ID_LEN + 1])
{
    char lt[IDS_LEASE_TOKEN_LEN + 1];
    if (ids_lease_token(lt) != 0) {
        return ROOST_EINTERNAL;
    }
    snprintf(out, STORE_SOURCE_ID_LEN + 1, "src_%s", lt + 3); /* the 128 random bits after "lt_" */
    return ROOST_OK;
}

int store_receipt_new_id(int64_t now_ms, char out[STORE_RECEIPT_ID_LEN + 1])
{
    char evt[IDS_EVENT_ID_LEN + 1];
    if (ids_event_id(now_ms, evt) != 0) {
        return ROOST_EINTERNAL;
    }
    snprintf(out, STORE_RECEIPT_ID_LEN + 1, "rcp_%s", evt + 4); /* the ULID after "evt_" */
    return ROOST_OK;
}

static void copy_col(struct store_row *row, int col, char *dst, size_t cap)
{
    const char *t = row->text(row, col);
    snprintf(dst, cap, "%s", t != NULL ? t : "");
}

/* A page being filled: rows past `limit` only set has_more. */
struct page {
    void *out;
    size_t limit, n;
    bool has_more, with_secret;
};

static int on_source(void *arg, struct store_row *row)
{
    struct page *pg = arg;
    if (pg->n == pg->limit) {
        pg->has_more = true;
        return ROOST_OK;
    }
    struct store_source *s = &((struct store_source *)pg->out)[pg->n++];
    memset(s, 0, sizeof *s);
    copy_col(row, 0, s->tenant_id, sizeof s->tenant_id);
    copy_col(row, 1, s->source_id, sizeof s->source_id);
    copy_col(row, 2, s->name, sizeof s->name);
    copy_col(row, 3, s->scheme, sizeof s->scheme);
    s->created_at_ms = row->i64(row, 5);
    s->updated_at_ms = row->i64(row, 6);
    if (pg->with_secret) {
        copy_col(row, 7, s->secret, sizeof s->secret);
        copy_col(row, 8, s->old_secret, sizeof s->old_secret);
        s->old_until_ms = row->i64(row, 9);
    }
    return store_row_dup(row, 4, &s->config);
}

static int on_receipt(void *arg, struct store_row *row)
{
    struct page *pg = arg;
    if (pg->n == pg->limit) {
        pg->has_more = true;
        return ROOST_OK;
    }
    struct store_receipt *r = &((struct store_receipt *)pg->out)[pg->n++];
    memset(r, 0, sizeof *r);
    copy_col(row, 0, r->source_id, sizeof r->source_id);
    copy_col(row, 1, r->receipt_id, sizeof r->receipt_id);
    r->at_ms = row->i64(row, 2);
    copy_col(row, 3, r->outcome, sizeof r->outcome);
    copy_col(row, 4, r->reason, sizeof r->reason);
    copy_col(row, 5, r->delivery_id, sizeof r->delivery_id);
    r->size = row->i64(row, 6);
    copy_col(row, 7, r->peer, sizeof r->peer);
    r->events = (int)row->i64(row, 8);
    return ROOST_OK;
}

/* A taken id: SQLite's insert changes nothing; MySQL's fails on the key. */
STORE_STMT(SRC_ADD,
           "INSERT INTO ingest_sources (source_id, tenant_id, name, scheme, config, secret,"
           " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
           "INSERT INTO ingest_sources (source_id, tenant_id, name, scheme, config, secret,"
           " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
           "INSERT INTO ingest_sources (source_id, tenant_id, name, scheme, config, secret,"
           " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");

int store_sources_add(struct store *st, const struct store_source *s, int64_t now_ms)
{
    struct store_param p[] = {ARG_T(s->source_id),
                              ARG_T(s->tenant_id),
                              ARG_T(s->name),
                              ARG_T(s->scheme),
                              ARG_T(s->config != NULL ? s->config : "{}"),
                              ARG_T(s->secret),
                              ARG_I(now_ms),
                              ARG_I(now_ms)};
    int64_t changed = 0;
    int rc = store_run(st, SRC_ADD, p, NULL, NULL, &changed);
    if ((rc == ROOST_ESTORE && st->dialect->dup_key(st)) || (rc == ROOST_OK && changed == 0)) {
        rc = ROOST_ESOURCEEXISTS;
    }
    return rc;
}

STORE_STMT_SAME(SRC_GET, "SELECT " SRCCOLS ", secret, coalesce(old_secret, ''),"
                         " coalesce(old_until, 0) FROM ingest_sources WHERE source_id = ?");

int store_sources_get(struct store *st, const char *tenant_id, const char *source_id,
                      struct store_source *out)
{
    struct page pg = {.out = out, .limit = 1, .with_secret = true};
    struct store_param p[] = {ARG_T(source_id)};
    memset(out, 0, sizeof *out);
    int rc = store_run(st, SRC_GET, p, on_source, &pg, NULL);
    if (rc == ROOST_OK &&
        (pg.n == 0 || (tenant_id != NULL && strcmp(out->tenant_id, tenant_id) != 0))) {
        rc = ROOST_ESOURCENOTFOUND; /* another tenant's source is not found, not forbidden */
    }
    if (rc != ROOST_OK) {
        store_source_cleanup(out);
        memset(out, 0, sizeof *out);
    }
    return rc;
}

STORE_STMT_SAME(SRC_LIST, "SELECT " SRCCOLS " FROM ingest_sources WHERE tenant_id = ?"
                          " AND source_id > ? ORDER BY source_id LIMIT ?");

int store_sources_list(struct store *st, const char *tenant_id, const char *after, size_t limit,
                       struct store_source *out, size_t *n, bool *has_more)
{
    struct page pg = {.out = out, .limit = limit};
    int rc = ROOST_OK;
    if (limit > 0) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(after != NULL ? after : ""),
                                  ARG_I(store_limit_page(limit))};
        rc = store_run(st, SRC_LIST, p, on_source, &pg, NULL);
    }
    *n = pg.n;
    *has_more = pg.has_more;
    return rc;
}

STORE_STMT_SAME(SRC_DELETE, "DELETE FROM ingest_sources WHERE tenant_id = ? AND source_id = ?");
STORE_STMT_SAME(RCP_DELETE_SOURCE,
                "DELETE FROM ingest_receipts WHERE tenant_id = ? AND source_id = ?");

int store_sources_delete(struct store *st, const char *tenant_id, const char *source_id)
{
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(source_id)};
    int64_t changed = 0;
    int rc = store_run(st, SRC_DELETE, p, NULL, NULL, &changed);
    if (rc == ROOST_OK && changed == 0) {
        return ROOST_ESOURCENOTFOUND;
    }
    return rc == ROOST_OK ? store_run(st, RCP_DELETE_SOURCE, p, NULL, NULL, NULL) : rc;
}

/* The current secret becomes the old one (MySQL assigns left to right, so old_secret reads the
 * secret before it changes; SQLite's SET reads every column's old value). */
STORE_STMT_SAME(SRC_ROTATE,
                "UPDATE ingest_sources SET old_secret = secret, old_until = ?, secret = ?,"
                " updated_at = ? WHERE tenant_id = ? AND source_id = ?");

int store_sources_rotate(struct store *st, const char *tenant_id, const char *source_id,
                         const char *secret, int64_t old_until_ms, int64_t now_ms)
{
    struct store_param p[] = {ARG_IN(old_until_ms), ARG_T(secret), ARG_I(now_ms), ARG_T(tenant_id),
                              ARG_T(source_id)};
    int64_t changed = 0;
    int rc = store_run(st, SRC_ROTATE, p, NULL, NULL, &changed);
    return rc == ROOST_OK && changed == 0 ? ROOST_ESOURCENOTFOUND : rc;
}

STORE_STMT_SAME(RCP_ADD,
                "INSERT INTO ingest_receipts (tenant_id, source_id, receipt_id, at, outcome,"
                " reason, delivery_id, size, peer, events) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");

int store_receipts_add(struct store *st, const char *tenant_id, const struct store_receipt *r)
{
    struct store_param p[] = {ARG_T(tenant_id),
                              ARG_T(r->source_id),
                              ARG_T(r->receipt_id),
                              ARG_I(r->at_ms),
                              ARG_T(r->outcome),
                              ARG_T(r->reason),
                              ARG_T(r->delivery_id[0] != '\0' ? r->delivery_id : NULL),
                              ARG_I(r->size),
                              ARG_T(r->peer),
                              ARG_I(r->events)};
    return store_run(st, RCP_ADD, p, NULL, NULL, NULL);
}

STORE_STMT_SAME(RCP_LIST, "SELECT " RCPCOLS " FROM ingest_receipts WHERE tenant_id = ?"
                          " AND source_id = ? AND receipt_id < ? ORDER BY receipt_id DESC LIMIT ?");

int store_receipts_list(struct store *st, const char *tenant_id, const char *source_id,
                        const char *before, size_t limit, struct store_receipt *out, size_t *n,
                        bool *has_more)
{
    struct page pg = {.out = out, .limit = limit};
    int rc = ROOST_OK;
    if (limit > 0) {
        /* "~" sorts after every id (Crockford base32 is digits and capitals). */
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(source_id),
                                  ARG_T(before != NULL && before[0] != '\0' ? before : "~"),
                                  ARG_I(store_limit_page(limit))};
        rc = store_run(st, RCP_LIST, p, on_receipt, &pg, NULL);
    }
    *n = pg.n;
    *has_more = pg.has_more;
    return rc;
}

STORE_STMT(RCP_PRUNE,
           "DELETE FROM ingest_receipts WHERE (tenant_id, source_id, receipt_id) IN"
           " (SELECT tenant_id, source_id, receipt_id FROM ingest_receipts WHERE at < ? LIMIT ?)",
           "DELETE FROM ingest_receipts WHERE at < ? ORDER BY at LIMIT ?",
           "DELETE FROM ingest_receipts WHERE ctid = ANY(ARRAY(SELECT ctid FROM ingest_receipts"
           " WHERE at < ? LIMIT ?)) AND at < ?1");

int store_receipts_prune(struct store *st, int64_t before_ms, size_t limit, size_t *count)
{
    int64_t changed = 0;
    *count = 0;
    if (limit == 0) {
        return ROOST_OK;
    }
    struct store_param p[] = {ARG_I(before_ms), ARG_I(store_limit(limit))};
    int rc = store_run(st, RCP_PRUNE, p, NULL, NULL, &changed);
    if (rc == ROOST_OK) {
        *count = (size_t)changed;
    }
    return rc;
}
