/* SPDX-License-Identifier: MIT */
/* The SQLite backend of the store (sqlite://PATH): its SQL, the dialect primitives the shared
 * lifecycle (store_lifecycle.c) runs on, and the read-only views. Statements are prepared once
 * and cached (store_sqlite_conn.c). agents.next_seq holds the next sequence number to assign, so
 * an agent's head is next_seq - 1 (0 for an agent without a row). */
#include "store/store_sqlite.h"
#include "store/store_sqlite_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "common/hash.h"
#include "common/jsonutil.h"
#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

const char *const store_sqlite_sql[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_BEGIN_READ] = "BEGIN DEFERRED",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    /* Requests inside one group-commit transaction run one after another, so one name is enough. */
    [S_SAVEPOINT] = "SAVEPOINT roost_req",
    [S_SAVEPOINT_RELEASE] = "RELEASE roost_req",
    [S_SAVEPOINT_ROLLBACK] = "ROLLBACK TO roost_req",
    [S_RET_SAVEPOINT] = "SAVEPOINT roost_retention",
    [S_RET_RELEASE] = "RELEASE roost_retention",
    [S_RET_ROLLBACK] = "ROLLBACK TO roost_retention",
    [S_TENANT_ENSURE] = "INSERT OR IGNORE INTO tenants (tenant_id, created_at) VALUES (?1, ?2)",
    [S_IDEM_FIND] = "SELECT event_id, seq FROM inbox"
                    " WHERE tenant_id = ?1 AND agent_id = ?2 AND idempotency_key = ?3",
    /* Allocates ?4 consecutive seqs of the agent under the write lock of this transaction
     * (DESIGN §4.2) and returns the first. */
    [S_SEQ_ALLOC] = "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
                    " VALUES (?1, ?2, 1 + ?4, ?3, ?3)"
                    " ON CONFLICT (tenant_id, agent_id) DO UPDATE"
                    " SET next_seq = next_seq + ?4, updated_at = excluded.updated_at"
                    " RETURNING next_seq - ?4",
    /* The same for many agents in one statement (a fan-out to agents this connection has no
     * guess for): ?2 is [[tenant, agent, count], …]; each agent's new next_seq comes back. One
     * RETURNING buffer for the whole set instead of one per agent. "WHERE true" tells the parser
     * the ON CONFLICT belongs to the INSERT. */
    [S_SEQ_ALLOC_MANY] =
        "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
        " SELECT value ->> 0, value ->> 1, 1 + (value ->> 2), ?1, ?1 FROM json_each(?2) WHERE true"
        " ON CONFLICT (tenant_id, agent_id) DO UPDATE"
        " SET next_seq = next_seq + excluded.next_seq - 1, updated_at = excluded.updated_at"
        " RETURNING tenant_id, agent_id, next_seq",
    /* The same allocation when this connection's guess of next_seq holds: no upsert, no
     * RETURNING (each buffers its row in a temporary B-tree); 0 rows changed = a wrong guess. */
    [S_SEQ_NEXT] = "UPDATE agents SET next_seq = ?3 + ?5, updated_at = ?4"
                   " WHERE tenant_id = ?1 AND agent_id = ?2 AND next_seq = ?3",
    [S_INBOX_INSERT] = "INSERT INTO inbox (tenant_id, agent_id, seq, event_id, status, priority,"
                       " correlation_id, idempotency_key, payload, created_at, available_at,"
                       " expires_at)"
                       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    /* The rows of one item (everything but agent, seq and event id in common) in one statement:
     * ?8 is [[agent, seq, event_id], …]; batch rows never carry an idempotency key. */
    [S_INBOX_INSERT_MANY] =
        "INSERT INTO inbox (tenant_id, agent_id, seq, event_id, status, priority,"
        " correlation_id, payload, created_at, available_at, expires_at)"
        " SELECT ?1, value ->> 0, value ->> 1, value ->> 2, ?2, ?3, ?4, ?5, ?6, ?7, ?9"
        " FROM json_each(?8)",
    [S_STATE_PATCH] = "UPDATE agents SET state = json_patch(state, ?3), state_cursor = ?4,"
                      " updated_at = ?5 WHERE tenant_id = ?1 AND agent_id = ?2"
                      " RETURNING length(state)",
};

/* ---- the dialect: one statement per primitive (store_lifecycle.h) ---- */

/* The IMMEDIATE transaction already holds the one write lock: no agent locks to take. */
static int sq_publish_begin(struct store *st, const struct store_publish_req *req)
{
    sqlite3_stmt *s;
    int rc = stmt(st, S_TENANT_ENSURE, &s);
    if (rc != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, req->tenant_id);
    sqlite3_bind_int64(s, 2, req->now_ms);
    return store_sqlite_run(store_sqlite_backend(st), s);
}

static int sq_idem_find(struct store *st, const char *tenant_id, const char *agent_id,
                        const char *key, int64_t now_ms, struct store_published *o, bool *found)
{
    sqlite3_stmt *s;
    (void)now_ms;
    int rc = stmt(st, S_IDEM_FIND, &s);
    if (rc != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    bind_text(s, 3, key);
    if ((rc = step(st, s)) < 0) {
        return rc;
    }
    if ((*found = rc == 1)) {
        col_copy(s, 0, o->event_id, sizeof o->event_id);
        o->seq = sqlite3_column_int64(s, 1);
    }
    sqlite3_reset(s);
    return ROOST_OK;
}

/* Tries the guess of the agent's next seq first (right whenever this connection made the last
 * allocation for the agent and it committed, the steady state of one writer): `count`
 * consecutive seqs from *first. A missing guess, or a wrong one (one UPDATE that changes
 * nothing), leaves *first 0. */
static int seq_guess_take(struct store *st, const char *tenant_id, const char *agent_id,
                          int64_t count, int64_t now_ms, int64_t *first)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    uint64_t key = hash_tenant_agent(tenant_id, agent_id);
    struct sqlite_seq_guess *g = &b->seq_guess[key % SQLITE_SEQ_GUESSES];
    sqlite3_stmt *s;
    *first = 0;
    if (g->key != key || g->next_seq <= 0) {
        return ROOST_OK;
    }
    bool changed = false;
    int rc = stmt(st, S_SEQ_NEXT, &s);
    if (rc != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    sqlite3_bind_int64(s, 3, g->next_seq);
    sqlite3_bind_int64(s, 4, now_ms);
    sqlite3_bind_int64(s, 5, count);
    if ((rc = run_one(st, s, &changed)) != ROOST_OK) {
        return rc;
    }
    if (changed) {
        *first = g->next_seq;
        g->next_seq += count;
    }
    return ROOST_OK;
}

/* The agent's next seq as the database says it is now; remembered as this connection's guess. */
static void seq_guess_set(struct store *st, const char *tenant_id, const char *agent_id,
                          int64_t next_seq)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    uint64_t key = hash_tenant_agent(tenant_id, agent_id);
    struct sqlite_seq_guess *g = &b->seq_guess[key % SQLITE_SEQ_GUESSES];
    g->key = key;
    g->next_seq = next_seq;
}

/* `count` consecutive seqs of one agent from *first (creating the agent): the guess, else the
 * upsert, which reads the truth. */
static int seq_take(struct store *st, const char *tenant_id, const char *agent_id, int64_t count,
                    int64_t now_ms, int64_t *first)
{
    sqlite3_stmt *s;
    int rc = seq_guess_take(st, tenant_id, agent_id, count, now_ms, first);
    if (rc != ROOST_OK || *first > 0) {
        return rc;
    }
    if ((rc = stmt(st, S_SEQ_ALLOC, &s)) != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    sqlite3_bind_int64(s, 3, now_ms);
    sqlite3_bind_int64(s, 4, count);
    if ((rc = step(st, s)) < 0) {
        return rc;
    }
    if (rc == 0) {
        sq_set_error(st, "publish: sequence allocation returned no row");
        return ROOST_ESTORE;
    }
    *first = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    seq_guess_set(st, tenant_id, agent_id, *first + count);
    return ROOST_OK;
}

static int sq_seq_alloc(struct store *st, const char *tenant_id, const char *agent_id,
                        int64_t now_ms, int64_t *seq)
{
    return seq_take(st, tenant_id, agent_id, 1, now_ms, seq);
}

static int sq_inbox_insert(struct store *st, const struct store_new_row *row)
{
    sqlite3_stmt *s;
    int rc = stmt(st, S_INBOX_INSERT, &s);
    if (rc != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, row->tenant_id);
    bind_text(s, 2, row->agent_id);
    sqlite3_bind_int64(s, 3, row->seq);
    bind_text(s, 4, row->event_id);
    sqlite3_bind_int(s, 5, row->status);
    sqlite3_bind_int(s, 6, row->priority);
    bind_text(s, 7, row->correlation_id);
    bind_text(s, 8, row->idempotency_key);
    bind_text(s, 9, row->payload);
    sqlite3_bind_int64(s, 10, row->created_at_ms);
    sqlite3_bind_int64(s, 11, row->available_at_ms);
    bind_i64_or_null(s, 12, row->expires_at_ms);
    return store_sqlite_run(store_sqlite_backend(st), s);
}

/* One agent's run of rows in insert_rows (rows[first, first + count)). */
struct seq_run {
    size_t first;
    size_t count;
};

static int seq_run_cmp(const struct store_new_row *rows, const struct seq_run *r, const char *t,
                       const char *a)
{
    int c = strcmp(t, rows[r->first].tenant_id);
    return c != 0 ? c : strcmp(a, rows[r->first].agent_id);
}

/* The seqs of the runs no guess covered (`miss`, in row order), in one upsert: the agents come
 * back with their new next_seq, each run takes the `count` seqs below it. */
static int seq_take_many(struct store *st, struct store_new_row *rows, const struct seq_run *miss,
                         size_t n_miss, int64_t now_ms)
{
    struct dynbuf j = {.max = SIZE_MAX};
    dynbuf_addc(&j, '[');
    for (size_t m = 0; m < n_miss; m++) {
        const struct store_new_row *r = &rows[miss[m].first];
        dynbuf_adds(&j, m > 0 ? ",[" : "[");
        jsonutil_add_string(&j, r->tenant_id);
        dynbuf_addc(&j, ',');
        jsonutil_add_string(&j, r->agent_id);
        dynbuf_addf(&j, ",%zu]", miss[m].count);
    }
    dynbuf_addc(&j, ']');
    if (j.err != DYNBUF_OK) {
        dynbuf_cleanup(&j);
        return ROOST_ENOMEM;
    }
    sqlite3_stmt *s;
    int rc = stmt(st, S_SEQ_ALLOC_MANY, &s);
    if (rc != ROOST_OK) {
        dynbuf_cleanup(&j);
        return rc;
    }
    sqlite3_bind_int64(s, 1, now_ms);
    sqlite3_bind_text(s, 2, j.s, (int)j.len, SQLITE_STATIC);
    size_t got = 0;
    while ((rc = step(st, s)) == 1) {
        const char *t = (const char *)sqlite3_column_text(s, 0);
        const char *a = (const char *)sqlite3_column_text(s, 1);
        int64_t next = sqlite3_column_int64(s, 2);
        size_t lo = 0, hi = n_miss;
        while (t != NULL && a != NULL && lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            int c = seq_run_cmp(rows, &miss[mid], t, a);
            if (c == 0) {
                lo = mid;
                break;
            }
            if (c < 0) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if (lo >= n_miss || t == NULL || a == NULL || seq_run_cmp(rows, &miss[lo], t, a) != 0) {
            sq_set_error(st, "publish: the batch's sequence allocation returned another agent");
            rc = ROOST_ESTORE;
            break;
        }
        int64_t first = next - (int64_t)miss[lo].count;
        for (size_t k = 0; k < miss[lo].count; k++) {
            rows[miss[lo].first + k].seq = first + (int64_t)k;
        }
        seq_guess_set(st, t, a, next);
        got++;
    }
    sqlite3_reset(s);
    dynbuf_cleanup(&j);
    if (rc == 0 && got != n_miss) {
        sq_set_error(st, "publish: the batch's sequence allocation missed agents");
        rc = ROOST_ESTORE;
    }
    return rc < 0 ? rc : ROOST_OK;
}

/* Rows of the same item: equal in every column but agent, seq and event id (the lifecycle
 * hands every row of an item the item's own strings, so pointers compare). A row with an
 * idempotency key (never one of a batch today) is its own item. */
static bool same_item(const struct store_new_row *a, const struct store_new_row *b)
{
    return a->idempotency_key == NULL && b->idempotency_key == NULL &&
           a->tenant_id == b->tenant_id && a->payload == b->payload &&
           a->correlation_id == b->correlation_id && a->status == b->status &&
           a->priority == b->priority && a->created_at_ms == b->created_at_ms &&
           a->available_at_ms == b->available_at_ms && a->expires_at_ms == b->expires_at_ms;
}

/* The rows of one item (rows[idx[0..n)]) in one statement. */
static int insert_item(struct store *st, const struct store_new_row *rows, const size_t *idx,
                       size_t n)
{
    struct dynbuf j = {.max = SIZE_MAX};
    dynbuf_addc(&j, '[');
    for (size_t k = 0; k < n; k++) {
        const struct store_new_row *r = &rows[idx[k]];
        dynbuf_adds(&j, k > 0 ? ",[" : "[");
        jsonutil_add_string(&j, r->agent_id);
        dynbuf_addf(&j, ",%lld,", (long long)r->seq);
        jsonutil_add_string(&j, r->event_id);
        dynbuf_addc(&j, ']');
    }
    dynbuf_addc(&j, ']');
    sqlite3_stmt *s;
    int rc = j.err != DYNBUF_OK ? ROOST_ENOMEM : stmt(st, S_INBOX_INSERT_MANY, &s);
    if (rc == ROOST_OK) {
        const struct store_new_row *r = &rows[idx[0]];
        bind_text(s, 1, r->tenant_id);
        sqlite3_bind_int(s, 2, r->status);
        sqlite3_bind_int(s, 3, r->priority);
        bind_text(s, 4, r->correlation_id);
        bind_text(s, 5, r->payload);
        sqlite3_bind_int64(s, 6, r->created_at_ms);
        sqlite3_bind_int64(s, 7, r->available_at_ms);
        sqlite3_bind_text(s, 8, j.s, (int)j.len, SQLITE_STATIC);
        bind_i64_or_null(s, 9, r->expires_at_ms);
        rc = store_sqlite_run(store_sqlite_backend(st), s);
    }
    dynbuf_cleanup(&j);
    return rc;
}

/* Inserts the rows, one statement per item: an item's rows are found by comparing with the first
 * row of each item seen so far (a batch holds few items; past ITEMS_MAX the rest go one by one).
 * A lone row of an item takes the plain prepared insert. */
#define ITEMS_MAX 16
static int insert_by_item(struct store *st, const struct store_new_row *rows, size_t n)
{
    size_t first[ITEMS_MAX], count[ITEMS_MAX] = {0}, n_items = 0;
    size_t *item_of = malloc((n ? n : 1) * sizeof *item_of);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    int rc = item_of != NULL && idx != NULL ? ROOST_OK : ROOST_ENOMEM;
    for (size_t i = 0; rc == ROOST_OK && i < n; i++) {
        size_t it = 0;
        while (it < n_items && !same_item(&rows[first[it]], &rows[i])) {
            it++;
        }
        if (it == n_items && n_items < ITEMS_MAX) {
            first[n_items++] = i;
        }
        item_of[i] = it; /* ITEMS_MAX: no item, inserted alone */
        if (it < ITEMS_MAX) {
            count[it]++;
        }
    }
    for (size_t it = 0; rc == ROOST_OK && it < n_items; it++) {
        size_t m = 0;
        for (size_t i = first[it]; i < n && m < count[it]; i++) {
            if (item_of[i] == it) {
                idx[m++] = i;
            }
        }
        rc = m >= 2 ? insert_item(st, rows, idx, m) : sq_inbox_insert(st, &rows[idx[0]]);
    }
    for (size_t i = 0; rc == ROOST_OK && i < n; i++) {
        if (item_of[i] == ITEMS_MAX) {
            rc = sq_inbox_insert(st, &rows[i]);
        }
    }
    free(item_of);
    free(idx);
    return rc;
}

/* A batch of rows sorted by (tenant, agent): each tenant ensured once, each agent's seqs taken
 * in one statement (its guess; the agents without one share one upsert), then one prepared
 * insert per row. The single write lock of the transaction orders everything (DESIGN §4.2). */
static int sq_insert_rows(struct store *st, struct store_new_row *rows, size_t n, int64_t now_ms)
{
    struct seq_run *miss = NULL;
    size_t n_miss = 0;
    int rc = ROOST_OK;
    for (size_t i = 0; rc == ROOST_OK && i < n;) {
        if (i == 0 || strcmp(rows[i].tenant_id, rows[i - 1].tenant_id) != 0) {
            struct store_publish_req req = {.tenant_id = rows[i].tenant_id, .now_ms = now_ms};
            if ((rc = sq_publish_begin(st, &req)) != ROOST_OK) {
                break;
            }
        }
        size_t k = i + 1;
        while (k < n && strcmp(rows[k].agent_id, rows[i].agent_id) == 0 &&
               strcmp(rows[k].tenant_id, rows[i].tenant_id) == 0) {
            k++;
        }
        int64_t first = 0;
        if ((rc = seq_guess_take(st, rows[i].tenant_id, rows[i].agent_id, (int64_t)(k - i), now_ms,
                                 &first)) != ROOST_OK) {
            break;
        }
        for (size_t r = i; first > 0 && r < k; r++) {
            rows[r].seq = first + (int64_t)(r - i);
        }
        if (first == 0) {
            if (miss == NULL && (miss = malloc(n * sizeof *miss)) == NULL) {
                rc = ROOST_ENOMEM;
                break;
            }
            miss[n_miss++] = (struct seq_run){i, k - i};
        }
        i = k;
    }
    if (rc == ROOST_OK && n_miss == 1) {
        int64_t first = 0;
        const struct store_new_row *r = &rows[miss[0].first];
        rc = seq_take(st, r->tenant_id, r->agent_id, (int64_t)miss[0].count, now_ms, &first);
        for (size_t k = 0; rc == ROOST_OK && k < miss[0].count; k++) {
            rows[miss[0].first + k].seq = first + (int64_t)k;
        }
    } else if (rc == ROOST_OK && n_miss > 1) {
        rc = seq_take_many(st, rows, miss, n_miss, now_ms);
    }
    free(miss);
    return rc == ROOST_OK ? insert_by_item(st, rows, n) : rc;
}

static int sq_state_patch(struct store *st, const char *tenant_id, const char *agent_id,
                          const char *patch, int64_t seq, int64_t now_ms, int64_t *state_bytes)
{
    sqlite3_stmt *s;
    int rc = stmt(st, S_STATE_PATCH, &s);
    if (rc != ROOST_OK) {
        return rc;
    }
    bind_text(s, 1, tenant_id);
    bind_text(s, 2, agent_id);
    bind_text(s, 3, patch);
    sqlite3_bind_int64(s, 4, seq);
    sqlite3_bind_int64(s, 5, now_ms);
    if ((rc = step(st, s)) < 0) {
        return rc;
    }
    *state_bytes = rc == 1 ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_reset(s);
    return ROOST_OK;
}

static int sq_retention_begin(struct store *st, const struct store_retention_req *req)
{
    (void)req;
    return store_sqlite_exec_id(store_sqlite_backend(st), S_RET_SAVEPOINT);
}

static int sq_retention_end(struct store *st, int rc)
{
    struct sqlite_store *b = store_sqlite_backend(st);
    if (rc == ROOST_OK) {
        return store_sqlite_exec_id(b, S_RET_RELEASE);
    }
    store_sqlite_reset_all(b); /* a statement mid-step would keep the rollback from running */
    store_sqlite_exec_id(b, S_RET_ROLLBACK);
    store_sqlite_exec_id(b, S_RET_RELEASE);
    return rc;
}

/* A unique key refused the last statement. */
static bool sq_dup_key(struct store *st)
{
    int e = sqlite3_extended_errcode(store_sqlite_backend(st)->db);
    return e == SQLITE_CONSTRAINT_UNIQUE || e == SQLITE_CONSTRAINT_PRIMARYKEY;
}

/* A read of several statements sees one snapshot: a read transaction, unless one is open. */
static int sq_read_begin(struct store *st, bool *opened)
{
    return store_sqlite_read_begin(store_sqlite_backend(st), opened);
}

static int sq_read_end(struct store *st, bool opened, int rc)
{
    return store_sqlite_read_end(store_sqlite_backend(st), opened, rc);
}

const struct store_dialect store_sqlite_dialect = {
    .scheme = "sqlite",
    .default_file = "roost.db",
    .open = store_sqlite_open,
    .open_error = store_sqlite_open_error,
    .close = store_sqlite_close,
    .migrate = store_sqlite_migrate,
    .errmsg = store_sqlite_errmsg,
    .ping = store_sqlite_ping,
    .begin = store_sqlite_begin,
    .commit = store_sqlite_commit,
    .rollback = store_sqlite_rollback,
    .savepoint = store_sqlite_savepoint,
    .savepoint_release = store_sqlite_savepoint_release,
    .savepoint_rollback = store_sqlite_savepoint_rollback,
    .tail = NULL,
    .read_begin = sq_read_begin,
    .read_end = sq_read_end,
    .done = sq_done,
    .set_error = sq_set_error,
    .sql_col = STORE_SQL_SQLITE,
    .caps = STORE_CAP_SINGLE_WRITER | STORE_CAP_UPSERT_WHERE | STORE_CAP_PUBLISH_ROWS_AS_BATCH |
            STORE_CAP_CLAIM_ALL,
    .dup_key = sq_dup_key,
    .publish_begin = sq_publish_begin,
    .idem_find = sq_idem_find,
    .seq_alloc = sq_seq_alloc,
    .inbox_insert = sq_inbox_insert,
    .insert_rows = sq_insert_rows,
    .state_patch = sq_state_patch,
    .retention_begin = sq_retention_begin,
    .retention_end = sq_retention_end,
    .run = store_sqlite_run_stmt,
};
