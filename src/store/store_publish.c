/* SPDX-License-Identifier: MIT */
/* Publish (store_ops.h), written once (DESIGN §4.2): the tenant and the agents' locks, the
 * idempotency key, the seq and the inbox row, the state patch, and the batch of many requests'
 * rows, each with its statements in every dialect beside it. What differs between the dialects is
 * asked as a capability: one writer (SQLite) takes no row locks and guesses the agent's next seq;
 * where a statement is a round trip (MySQL, PostgreSQL) the seq and the row travel together; the
 * state is merged by the database (STORE_CAP_MERGE_PATCH) or in C. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "common/hash.h"
#include "common/ids.h"
#include "common/jsonutil.h"
#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

static const struct store_dialect *dialect(struct store *st)
{
    return st->dialect;
}

static bool has(struct store *st, unsigned caps)
{
    return store_dialect_has(st->dialect, caps);
}

/* The first column of the first row (*got set when there was one). */
struct first_i64 {
    int64_t v;
    bool got;
};

static int on_first_i64(void *arg, struct store_row *row)
{
    struct first_i64 *f = arg;
    if (!f->got) {
        f->v = row->i64(row, 0);
        f->got = true;
    }
    return ROOST_OK;
}

/* ---- the tenant and the agents' locks ---- */

/* tenant. Where rows are locked (several writers), a plain read comes first: an insert-or-ignore
 * of an existing row takes a lock every publisher of the tenant would hold until its commit. */
STORE_STMT_ONLY2(TENANT_FIND, STORE_SQL_MYSQL, "SELECT 1 FROM tenants WHERE tenant_id = ?",
                 STORE_SQL_PG, "SELECT 1 FROM tenants WHERE tenant_id = ?");
/* tenant, now */
STORE_STMT(TENANT_ENSURE, "INSERT OR IGNORE INTO tenants (tenant_id, created_at) VALUES (?, ?)",
           "INSERT IGNORE INTO tenants (tenant_id, created_at) VALUES (?, ?)",
           "INSERT INTO tenants (tenant_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING");
/* tenant, agent, now, now: creates or row-locks the agent without moving next_seq (several
 * writers; one writer's transaction already holds the only lock). */
STORE_STMT_ONLY2(AGENT_LOCK, STORE_SQL_MYSQL,
                 "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
                 " VALUES (?, ?, 1, ?, ?) ON DUPLICATE KEY UPDATE next_seq = next_seq",
                 STORE_SQL_PG,
                 "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
                 " VALUES (?, ?, 1, ?, ?) ON CONFLICT (tenant_id, agent_id)"
                 " DO UPDATE SET next_seq = agents.next_seq");

/* Creates the tenant row when missing. Where a statement is a round trip, the last tenant seen
 * committed needs no statement at all (tenant rows are never deleted). */
static int tenant_ensure(struct store *st, const char *tenant_id, int64_t now_ms)
{
    bool memo = has(st, STORE_CAP_ROUND_TRIP);
    if (memo && strcmp(st->known_tenant, tenant_id) == 0) {
        return ROOST_OK;
    }
    int rc;
    if (!has(st, STORE_CAP_SINGLE_WRITER)) {
        struct first_i64 f = {0};
        struct store_param fp[] = {ARG_T(tenant_id)};
        if ((rc = store_run(st, TENANT_FIND, fp, on_first_i64, &f, NULL)) != ROOST_OK) {
            return rc;
        }
        if (f.got) {
            if (memo) {
                snprintf(st->known_tenant, sizeof st->known_tenant, "%s", tenant_id);
            }
            return ROOST_OK;
        }
    }
    struct store_param tp[] = {ARG_T(tenant_id), ARG_I(now_ms)};
    return store_run(st, TENANT_ENSURE, tp, NULL, NULL, NULL);
}

static int agent_lock(struct store *st, const char *tenant_id, const char *agent_id, int64_t now_ms)
{
    struct store_param lk[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(now_ms), ARG_I(now_ms)};
    return store_run(st, AGENT_LOCK, lk, NULL, NULL, NULL);
}

static int str_cmp(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* Before the rows of a request: the tenant row exists. With several writers a request of several
 * items first locks all its agents in one sorted pass, so two fan-outs never wait on each other in
 * a cycle (each item alone already goes in sorted order, DESIGN §4.2). */
static int publish_begin(struct store *st, const struct store_publish_req *req)
{
    int rc = tenant_ensure(st, req->tenant_id, req->now_ms);
    if (rc != ROOST_OK || req->n_items <= 1 || has(st, STORE_CAP_SINGLE_WRITER)) {
        return rc;
    }
    size_t total = 0, k = 0;
    for (size_t i = 0; i < req->n_items; i++) {
        total += req->items[i].n_recipients;
    }
    const char **all = malloc((total ? total : 1) * sizeof *all);
    if (all == NULL) {
        return ROOST_ENOMEM;
    }
    for (size_t i = 0; i < req->n_items; i++) {
        for (size_t j = 0; j < req->items[i].n_recipients; j++) {
            all[k++] = req->items[i].recipients[j];
        }
    }
    qsort(all, total, sizeof *all, str_cmp);
    for (size_t j = 0; j < total && rc == ROOST_OK; j++) {
        if (j == 0 || strcmp(all[j - 1], all[j]) != 0) {
            rc = agent_lock(st, req->tenant_id, all[j], req->now_ms);
        }
    }
    free(all);
    return rc;
}

/* ---- the idempotency key ---- */

/* tenant, agent, key */
STORE_STMT_SAME(IDEM_FIND, "SELECT event_id, seq FROM inbox"
                           " WHERE tenant_id = ? AND agent_id = ? AND idempotency_key = ?");

static int on_idem(void *arg, struct store_row *row)
{
    struct store_published *o = arg;
    const char *ev = row->text(row, 0);
    snprintf(o->event_id, sizeof o->event_id, "%s", ev != NULL ? ev : "");
    o->seq = row->i64(row, 1);
    return ROOST_OK;
}

/* The row an earlier publish with this key wrote (*found; o->event_id and seq). With several
 * writers the agent is locked first: a concurrent publish with the same key then waits there and
 * finds this one's row (the next statement's snapshot sees that commit), instead of both inserting
 * and one failing on the unique index. */
static int idem_find(struct store *st, const char *tenant_id, const char *agent_id, const char *key,
                     int64_t now_ms, struct store_published *o, bool *found)
{
    int rc;
    if (!has(st, STORE_CAP_SINGLE_WRITER) &&
        (rc = agent_lock(st, tenant_id, agent_id, now_ms)) != ROOST_OK) {
        return rc;
    }
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_T(key)};
    o->seq = -1;
    rc = store_run(st, IDEM_FIND, p, on_idem, o, NULL);
    *found = rc == ROOST_OK && o->seq >= 0;
    if (!*found) {
        o->seq = 0;
    }
    return rc;
}

/* ---- the seq and the row ---- */

#define INBOX_COLS                                                                                 \
    "tenant_id, agent_id, seq, event_id, status, priority, correlation_id, idempotency_key,"       \
    " payload, created_at, available_at, expires_at"

/* Where a statement is a round trip, the agent's seq and the row in one (STORE_CAP_ROUND_TRIP:
 * it hands back the agent's new next_seq, seq + 1, through insert_id). The seq is allocated under
 * the agent's row lock, held until COMMIT (DESIGN §4.2). MySQL: two statements in one round trip
 * (its runner sends a descriptor of several statements as text, parameters escaped in): the upsert
 * leaves LAST_INSERT_ID(next_seq), the row takes LAST_INSERT_ID() - 1. PostgreSQL: one statement,
 * the upsert a CTE (its row lock is released only once the commit is visible to new snapshots, so
 * seqs become visible in order). tenant, agent, now, now, then the row: tenant, agent, event_id,
 * status, priority, correlation_id, idempotency_key, payload, created_at, available_at,
 * expires_at. */
STORE_STMT_ONLY2(
    SEQ_INSERT, STORE_SQL_MYSQL,
    "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
    " VALUES (?, ?, LAST_INSERT_ID(2), ?, ?) ON DUPLICATE KEY UPDATE"
    " next_seq = LAST_INSERT_ID(next_seq + 1), updated_at = VALUES(updated_at);"
    " INSERT INTO inbox (" INBOX_COLS ") VALUES (?, ?, LAST_INSERT_ID() - 1, ?, ?, ?, ?, ?, ?, ?,"
    " ?, ?)",
    STORE_SQL_PG,
    "WITH s AS (INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
    " VALUES (?1, ?2, 2, ?3, ?4) ON CONFLICT (tenant_id, agent_id) DO UPDATE SET"
    " next_seq = agents.next_seq + 1, updated_at = excluded.updated_at RETURNING next_seq - 1 AS"
    " seq) INSERT INTO inbox (" INBOX_COLS ") SELECT ?5, ?6, s.seq, ?7, ?8, ?9, ?10, ?11, ?12,"
    " ?13, ?14, ?15 FROM s RETURNING seq + 1");

/* Without round trips (SQLite), the seq first, then the row. tenant, agent, now, count: ?4
 * consecutive seqs of the agent under the write lock of this transaction, the first returned. */
STORE_STMT_ONLY(SEQ_ALLOC, STORE_SQL_SQLITE,
                "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
                " VALUES (?1, ?2, 1 + ?4, ?3, ?3)"
                " ON CONFLICT (tenant_id, agent_id) DO UPDATE"
                " SET next_seq = next_seq + ?4, updated_at = excluded.updated_at"
                " RETURNING next_seq - ?4");
/* The same allocation when this connection's guess of next_seq holds (one writer: right whenever
 * this connection made the agent's last allocation and it committed): no upsert, no RETURNING
 * (each buffers its row in a temporary B-tree); 0 rows changed = a wrong guess. tenant, agent,
 * guess, now, count. */
STORE_STMT_ONLY(SEQ_NEXT, STORE_SQL_SQLITE,
                "UPDATE agents SET next_seq = ?3 + ?5, updated_at = ?4"
                " WHERE tenant_id = ?1 AND agent_id = ?2 AND next_seq = ?3");
/* The 12 columns in order. */
STORE_STMT_ONLY(INBOX_INSERT, STORE_SQL_SQLITE,
                "INSERT INTO inbox (" INBOX_COLS ")"
                " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");

/* Tries the guess of the agent's next seq first: `count` consecutive seqs from *first. A missing
 * guess, or a wrong one (one UPDATE that changes nothing), leaves *first 0. */
static int seq_guess_take(struct store *st, const char *tenant_id, const char *agent_id,
                          int64_t count, int64_t now_ms, int64_t *first)
{
    uint64_t key = hash_tenant_agent(tenant_id, agent_id);
    struct store_seq_guess *g = &st->seq_guess[key % STORE_SEQ_GUESSES];
    *first = 0;
    if (g->key != key || g->next_seq <= 0) {
        return ROOST_OK;
    }
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(g->next_seq), ARG_I(now_ms),
                              ARG_I(count)};
    int64_t changed = 0;
    int rc = store_run(st, SEQ_NEXT, p, NULL, NULL, &changed);
    if (rc == ROOST_OK && changed > 0) {
        *first = g->next_seq;
        g->next_seq += count;
    }
    return rc;
}

/* The agent's next seq as the database says it is now; remembered as this connection's guess. */
static void seq_guess_set(struct store *st, const char *tenant_id, const char *agent_id,
                          int64_t next_seq)
{
    uint64_t key = hash_tenant_agent(tenant_id, agent_id);
    struct store_seq_guess *g = &st->seq_guess[key % STORE_SEQ_GUESSES];
    g->key = key;
    g->next_seq = next_seq;
}

/* `count` consecutive seqs of one agent from *first (creating the agent): the guess, else the
 * upsert, which reads the truth. */
static int seq_take(struct store *st, const char *tenant_id, const char *agent_id, int64_t count,
                    int64_t now_ms, int64_t *first)
{
    int rc = seq_guess_take(st, tenant_id, agent_id, count, now_ms, first);
    if (rc != ROOST_OK || *first > 0) {
        return rc;
    }
    struct first_i64 f = {0};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(now_ms), ARG_I(count)};
    if ((rc = store_run(st, SEQ_ALLOC, p, on_first_i64, &f, NULL)) != ROOST_OK) {
        return rc;
    }
    if (!f.got || f.v < 1) {
        return store_op_fail(st, ROOST_ESTORE, "publish: sequence allocation returned no seq");
    }
    *first = f.v;
    seq_guess_set(st, tenant_id, agent_id, *first + count);
    return ROOST_OK;
}

static int inbox_insert(struct store *st, const struct store_new_row *row)
{
    struct store_param p[] = {
        ARG_T(row->tenant_id),      ARG_T(row->agent_id),        ARG_I(row->seq),
        ARG_T(row->event_id),       ARG_I(row->status),          ARG_I(row->priority),
        ARG_T(row->correlation_id), ARG_T(row->idempotency_key), ARG_T(row->payload),
        ARG_I(row->created_at_ms),  ARG_I(row->available_at_ms), ARG_IN(row->expires_at_ms),
    };
    return store_run(st, INBOX_INSERT, p, NULL, NULL, NULL);
}

/* Allocates the agent's next seq (creating the agent) and inserts the row with it: row->seq is
 * set. */
static int seq_insert(struct store *st, struct store_new_row *row, int64_t now_ms)
{
    int rc;
    if (!has(st, STORE_CAP_ROUND_TRIP)) {
        rc = seq_take(st, row->tenant_id, row->agent_id, 1, now_ms, &row->seq);
        return rc != ROOST_OK ? rc : inbox_insert(st, row);
    }
    struct store_param p[] = {
        ARG_T(row->tenant_id),
        ARG_T(row->agent_id),
        ARG_I(now_ms),
        ARG_I(now_ms),
        ARG_T(row->tenant_id),
        ARG_T(row->agent_id),
        ARG_T(row->event_id),
        ARG_I(row->status),
        ARG_I(row->priority),
        ARG_T(row->correlation_id),
        ARG_T(row->idempotency_key),
        ARG_T(row->payload),
        ARG_I(row->created_at_ms),
        ARG_I(row->available_at_ms),
        ARG_IN(row->expires_at_ms),
    };
    if ((rc = store_run(st, SEQ_INSERT, p, NULL, NULL, NULL)) != ROOST_OK) {
        return rc;
    }
    int64_t next = dialect(st)->insert_id(st);
    if (next < 2) {
        return store_op_fail(st, ROOST_ESTORE, "publish: sequence allocation returned no seq");
    }
    row->seq = next - 1;
    return ROOST_OK;
}

/* ---- the state patch ---- */

/* patch, seq, now, tenant, agent: the database merges the patch (STORE_CAP_MERGE_PATCH) and
 * hands back the merged document's length: SQLite's RETURNING, MySQL's LAST_INSERT_ID(expr)
 * (STORE_CAP_INSERT_ID; MySQL evaluates assignments left to right, so LENGTH(state) is the merged
 * document's). */
STORE_STMT_ONLY2(STATE_MERGE, STORE_SQL_SQLITE,
                 "UPDATE agents SET state = json_patch(state, ?1), state_cursor = ?2,"
                 " updated_at = ?3 WHERE tenant_id = ?4 AND agent_id = ?5"
                 " RETURNING length(state)",
                 STORE_SQL_MYSQL,
                 "UPDATE agents SET state = JSON_COMPACT(JSON_MERGE_PATCH(state, ?)),"
                 " state_cursor = ?, updated_at = ? + 0 * LAST_INSERT_ID(LENGTH(state))"
                 " WHERE tenant_id = ? AND agent_id = ?");
/* Without it (PostgreSQL: jsonb would not keep the document's text) the state is read, merged in
 * C and written back; the agent row is already locked by the seq allocation of this publish.
 * tenant, agent; then state, seq, now, tenant, agent. */
STORE_STMT_ONLY(STATE_READ, STORE_SQL_PG,
                "SELECT state FROM agents WHERE tenant_id = ? AND agent_id = ? FOR UPDATE");
STORE_STMT_ONLY(STATE_WRITE, STORE_SQL_PG,
                "UPDATE agents SET state = ?, state_cursor = ?, updated_at = ?"
                " WHERE tenant_id = ? AND agent_id = ?");

/* RFC 7396 JSON Merge Patch, as MySQL's JSON_MERGE_PATCH and SQLite's json_patch: a new
 * reference (NULL when out of memory). */
static json_t *merge_patch(json_t *target, json_t *patch)
{
    if (!json_is_object(patch)) {
        return json_incref(patch);
    }
    json_t *out = json_is_object(target) ? json_deep_copy(target) : json_object();
    const char *k;
    json_t *v;
    json_object_foreach(patch, k, v)
    {
        if (out == NULL) {
            break;
        }
        if (json_is_null(v)) {
            json_object_del(out, k);
            continue;
        }
        json_t *m = merge_patch(json_object_get(out, k), v);
        if (m == NULL || json_object_set_new(out, k, m) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

static int on_state(void *arg, struct store_row *row)
{
    return store_row_dup(row, 0, arg);
}

static int state_merge_c(struct store *st, const char *tenant_id, const char *agent_id,
                         const char *patch, int64_t seq, int64_t now_ms, int64_t *state_bytes)
{
    char *state = NULL;
    struct store_param k[] = {ARG_T(tenant_id), ARG_T(agent_id)};
    int rc = store_run(st, STATE_READ, k, on_state, &state, NULL);
    if (rc != ROOST_OK) {
        free(state);
        return rc;
    }
    json_t *cur = json_loads(state != NULL ? state : "{}", 0, NULL);
    json_t *p = json_loads(patch, JSON_DECODE_ANY, NULL);
    free(state);
    json_t *merged = p != NULL ? merge_patch(cur, p) : NULL;
    char *text = merged != NULL
                     ? json_dumps(merged, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY)
                     : NULL;
    json_decref(cur);
    json_decref(p);
    json_decref(merged);
    if (text == NULL) {
        return store_op_fail(st, ROOST_ESTORE,
                             "state_patch: the patch or the state is not JSON (or out of memory)");
    }
    struct store_param w[] = {ARG_T(text), ARG_I(seq), ARG_I(now_ms), ARG_T(tenant_id),
                              ARG_T(agent_id)};
    rc = store_run(st, STATE_WRITE, w, NULL, NULL, NULL);
    *state_bytes = (int64_t)strlen(text);
    free(text);
    return rc;
}

/* Merges `patch` into agents.state and sets state_cursor = seq; *state_bytes gets the length of
 * the merged document. */
static int state_patch(struct store *st, const char *tenant_id, const char *agent_id,
                       const char *patch, int64_t seq, int64_t now_ms, int64_t *state_bytes)
{
    if (!has(st, STORE_CAP_MERGE_PATCH)) {
        return state_merge_c(st, tenant_id, agent_id, patch, seq, now_ms, state_bytes);
    }
    struct store_param p[] = {ARG_T(patch), ARG_I(seq), ARG_I(now_ms), ARG_T(tenant_id),
                              ARG_T(agent_id)};
    if (has(st, STORE_CAP_INSERT_ID)) {
        int rc = store_run(st, STATE_MERGE, p, NULL, NULL, NULL);
        *state_bytes = rc == ROOST_OK ? dialect(st)->insert_id(st) : 0;
        return rc;
    }
    struct first_i64 f = {0};
    int rc = store_run(st, STATE_MERGE, p, on_first_i64, &f, NULL);
    *state_bytes = f.v;
    return rc;
}

/* ---- a batch's rows (one writer) ---- */

/* The seqs of many agents of one tenant that exist, `count` each, in one statement (a fan-out to
 * agents this connection has no guess for): ?4 is [agent, …]; each agent's new next_seq comes
 * back, one RETURNING buffer for the whole set. An agent that does not exist yet is not there.
 * tenant, now, count, json. */
STORE_STMT_ONLY(SEQ_BUMP_MANY, STORE_SQL_SQLITE,
                "UPDATE agents SET next_seq = next_seq + ?3, updated_at = ?2"
                " WHERE tenant_id = ?1 AND agent_id IN (SELECT value FROM json_each(?4))"
                " RETURNING tenant_id, agent_id, next_seq");
/* The same creating the agents: ?2 is [[tenant, agent, count], …]. An upsert tries the insert
 * first, so it costs more per existing agent than the UPDATE above. "WHERE true" tells the parser
 * the ON CONFLICT belongs to the INSERT. now, json. */
STORE_STMT_ONLY(
    SEQ_ALLOC_MANY, STORE_SQL_SQLITE,
    "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
    " SELECT value ->> 0, value ->> 1, 1 + (value ->> 2), ?1, ?1 FROM json_each(?2) WHERE true"
    " ON CONFLICT (tenant_id, agent_id) DO UPDATE"
    " SET next_seq = next_seq + excluded.next_seq - 1, updated_at = excluded.updated_at"
    " RETURNING tenant_id, agent_id, next_seq");
/* The rows of one item (everything but agent, seq and event id in common) in one statement: ?8
 * is [[agent, seq, event_id], …]; batch rows never carry an idempotency key. */
STORE_STMT_ONLY(INBOX_INSERT_MANY, STORE_SQL_SQLITE,
                "INSERT INTO inbox (tenant_id, agent_id, seq, event_id, status, priority,"
                " correlation_id, payload, created_at, available_at, expires_at)"
                " SELECT ?1, value ->> 0, value ->> 1, value ->> 2, ?2, ?3, ?4, ?5, ?6, ?7, ?9"
                " FROM json_each(?8)");

/* One agent's run of rows in a batch (rows[first, first + count)); taken once its seqs are. */
struct seq_run {
    size_t first;
    size_t count;
    bool taken;
};

static int seq_run_cmp(const struct store_new_row *rows, const struct seq_run *r, const char *t,
                       const char *a)
{
    int c = strcmp(t, rows[r->first].tenant_id);
    return c != 0 ? c : strcmp(a, rows[r->first].agent_id);
}

struct seq_many {
    struct store *st;
    struct store_new_row *rows;
    struct seq_run *miss;
    size_t n_miss, got;
};

/* An agent's new next_seq: its run takes the `count` seqs below it. */
static int on_seq_many(void *arg, struct store_row *row)
{
    struct seq_many *m = arg;
    const char *t = row->text(row, 0), *a = row->text(row, 1);
    int64_t next = row->i64(row, 2);
    size_t lo = 0, hi = m->n_miss;
    while (t != NULL && a != NULL && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = seq_run_cmp(m->rows, &m->miss[mid], t, a);
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
    if (lo >= m->n_miss || t == NULL || a == NULL ||
        seq_run_cmp(m->rows, &m->miss[lo], t, a) != 0 || m->miss[lo].taken) {
        return store_op_fail(m->st, ROOST_ESTORE,
                             "publish: the batch's sequence allocation returned another agent");
    }
    int64_t first = next - (int64_t)m->miss[lo].count;
    for (size_t k = 0; k < m->miss[lo].count; k++) {
        m->rows[m->miss[lo].first + k].seq = first + (int64_t)k;
    }
    m->miss[lo].taken = true;
    seq_guess_set(m->st, t, a, next);
    m->got++;
    return ROOST_OK;
}

/* Statements of SEQ_BUMP_MANY per batch at most: the runs of other (tenant, count) pairs go to
 * the upsert. A fan-out, or a group of one-row publishes, is one pair. */
#define SEQ_BUMP_GROUPS 4

/* The seqs of the runs of one tenant and count, from run `lead` on, for the agents that exist. */
static int seq_bump_many(struct seq_many *m, size_t lead, int64_t now_ms)
{
    const struct seq_run *r0 = &m->miss[lead];
    const char *tenant = m->rows[r0->first].tenant_id;
    struct dynbuf j = {.max = SIZE_MAX};
    dynbuf_addc(&j, '[');
    for (size_t i = lead, n = 0; i < m->n_miss; i++) {
        const struct seq_run *r = &m->miss[i];
        if (r->taken || r->count != r0->count || strcmp(m->rows[r->first].tenant_id, tenant) != 0) {
            continue;
        }
        dynbuf_adds(&j, n++ > 0 ? "," : "");
        jsonutil_add_string(&j, m->rows[r->first].agent_id);
    }
    dynbuf_addc(&j, ']');
    int rc = ROOST_ENOMEM;
    if (j.err == DYNBUF_OK) {
        struct store_param p[] = {ARG_T(tenant), ARG_I(now_ms), ARG_I((int64_t)r0->count),
                                  ARG_T(j.s)};
        rc = store_run(m->st, SEQ_BUMP_MANY, p, on_seq_many, m, NULL);
    }
    dynbuf_cleanup(&j);
    return rc;
}

/* The seqs of the runs no guess covered (`miss`, in row order): the agents that exist in an
 * UPDATE per (tenant, count), the rest (new agents, other pairs) in one upsert. */
static int seq_take_many(struct store *st, struct store_new_row *rows, struct seq_run *miss,
                         size_t n_miss, int64_t now_ms)
{
    struct seq_many m = {.st = st, .rows = rows, .miss = miss, .n_miss = n_miss};
    int rc = ROOST_OK;
    const struct seq_run *lead[SEQ_BUMP_GROUPS];
    size_t n_lead = 0;
    for (size_t i = 0; rc == ROOST_OK && i < n_miss; i++) {
        bool known = miss[i].taken;
        for (size_t g = 0; !known && g < n_lead; g++) {
            /* A new agent like a run that led a statement: the upsert's. */
            known = lead[g]->count == miss[i].count &&
                    strcmp(rows[lead[g]->first].tenant_id, rows[miss[i].first].tenant_id) == 0;
        }
        if (!known && n_lead < SEQ_BUMP_GROUPS) {
            lead[n_lead++] = &miss[i];
            rc = seq_bump_many(&m, i, now_ms);
        }
    }
    struct dynbuf j = {.max = SIZE_MAX};
    dynbuf_addc(&j, '[');
    for (size_t k = 0, n = 0; rc == ROOST_OK && k < n_miss; k++) {
        const struct store_new_row *r = &rows[miss[k].first];
        if (miss[k].taken) {
            continue;
        }
        dynbuf_adds(&j, n++ > 0 ? ",[" : "[");
        jsonutil_add_string(&j, r->tenant_id);
        dynbuf_addc(&j, ',');
        jsonutil_add_string(&j, r->agent_id);
        dynbuf_addf(&j, ",%zu]", miss[k].count);
    }
    dynbuf_addc(&j, ']');
    if (rc == ROOST_OK && j.err != DYNBUF_OK) {
        rc = ROOST_ENOMEM;
    }
    if (rc == ROOST_OK && m.got < n_miss) {
        struct store_param p[] = {ARG_I(now_ms), ARG_T(j.s)};
        rc = store_run(st, SEQ_ALLOC_MANY, p, on_seq_many, &m, NULL);
    }
    dynbuf_cleanup(&j);
    if (rc == ROOST_OK && m.got != n_miss) {
        rc = store_op_fail(st, ROOST_ESTORE,
                           "publish: the batch's sequence allocation missed agents");
    }
    return rc;
}

/* Rows of the same item: equal in every column but agent, seq and event id (every row of an
 * item holds the item's own strings, so pointers compare). A row with an idempotency key (never
 * one of a batch today) is its own item. */
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
    int rc = ROOST_ENOMEM;
    if (j.err == DYNBUF_OK) {
        const struct store_new_row *r = &rows[idx[0]];
        struct store_param p[] = {
            ARG_T(r->tenant_id),       ARG_I(r->status),  ARG_I(r->priority),
            ARG_T(r->correlation_id),  ARG_T(r->payload), ARG_I(r->created_at_ms),
            ARG_I(r->available_at_ms), ARG_T(j.s),        ARG_IN(r->expires_at_ms),
        };
        rc = store_run(st, INBOX_INSERT_MANY, p, NULL, NULL, NULL);
    }
    dynbuf_cleanup(&j);
    return rc;
}

/* Inserts the rows, one statement per item: an item's rows are found by comparing with the first
 * row of each item seen so far (a batch holds few items; past ITEMS_MAX the rest go one by one).
 * A lone row of an item takes the plain insert. */
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
        rc = m >= 2 ? insert_item(st, rows, idx, m) : inbox_insert(st, &rows[idx[0]]);
    }
    for (size_t i = 0; rc == ROOST_OK && i < n; i++) {
        if (item_of[i] == ITEMS_MAX) {
            rc = inbox_insert(st, &rows[i]);
        }
    }
    free(item_of);
    free(idx);
    return rc;
}

/* A batch's rows sorted by (tenant, agent) with one writer (STORE_CAP_PUBLISH_ROWS_AS_BATCH):
 * each tenant ensured once, each agent's seqs taken in one statement (its guess; the agents
 * without one share one upsert), then one insert per item. The single write lock of the
 * transaction orders everything (DESIGN §4.2). */
static int insert_rows_one_writer(struct store *st, struct store_new_row *rows, size_t n,
                                  int64_t now_ms)
{
    struct seq_run *miss = NULL;
    size_t n_miss = 0;
    int rc = ROOST_OK;
    for (size_t i = 0; rc == ROOST_OK && i < n;) {
        if (i == 0 || strcmp(rows[i].tenant_id, rows[i - 1].tenant_id) != 0) {
            if ((rc = tenant_ensure(st, rows[i].tenant_id, now_ms)) != ROOST_OK) {
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
            miss[n_miss++] = (struct seq_run){.first = i, .count = k - i};
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

/* Allocates the seqs of rows[0..n) and inserts them all, creating tenants and agents as needed:
 * the dialect's one round trip where it has one (insert_rows), else the one writer's statements.
 * The rows come sorted by (tenant_id, agent_id), the order their agents are locked in; the rows
 * of one agent take consecutive seqs in the order given. */
static int insert_rows(struct store *st, struct store_new_row *rows, size_t n, int64_t now_ms)
{
    const struct store_dialect *d = dialect(st);
    if (d->insert_rows != NULL) {
        int rc = ROOST_OK;
        for (size_t r = 0; r < n && rc == ROOST_OK; r++) {
            if (r == 0 || strcmp(rows[r - 1].tenant_id, rows[r].tenant_id) != 0) {
                rc = tenant_ensure(st, rows[r].tenant_id, now_ms);
            }
        }
        return rc == ROOST_OK && n > 0 ? d->insert_rows(st, rows, n, now_ms) : rc;
    }
    return insert_rows_one_writer(st, rows, n, now_ms);
}

/* A batch insert exists: the dialect's, or the one writer's. */
static bool batch_insert(struct store *st)
{
    return dialect(st)->insert_rows != NULL || has(st, STORE_CAP_PUBLISH_ROWS_AS_BATCH);
}

/* ---- publish ---- */

/* The new row of (item, recipient), its event id made in event_id (STORE_EVENT_ID_LEN + 1
 * bytes, which the row points to). */
static int row_new(struct store *st, const struct store_publish_req *req,
                   const struct store_publish_item *it, const char *agent_id, char *event_id,
                   struct store_new_row *row)
{
    /* A row due later waits as scheduled; one due now (or in the past) is pending at once. */
    bool scheduled = it->available_at_ms > req->now_ms;
    *row = (struct store_new_row){
        .tenant_id = req->tenant_id,
        .agent_id = agent_id,
        .event_id = event_id,
        .status = scheduled ? STORE_SCHEDULED : STORE_PENDING,
        .priority = it->priority,
        .correlation_id = it->correlation_id,
        .idempotency_key = it->idempotency_key,
        .payload = it->payload != NULL ? it->payload : "{}",
        .created_at_ms = req->now_ms,
        .available_at_ms = scheduled ? it->available_at_ms : req->now_ms,
        .expires_at_ms = it->expires_at_ms,
    };
    if (ids_event_id(req->now_ms, event_id) != 0) {
        return store_op_fail(st, ROOST_EINTERNAL, "publish: no randomness for the event id");
    }
    return ROOST_OK;
}

/* A publish of one row that reads nothing between the agent's lock and its insert (no
 * idempotency key, no state patch), the last write of a transaction alone: the dialect may send
 * it with the COMMIT (insert_row_late). */
static bool publish_late_ok(struct store *st, const struct store_publish_req *req,
                            const struct store_touches *touches)
{
    const struct store_publish_item *it = &req->items[0];
    return st->alone && req->last_write && touches != NULL &&
           dialect(st)->insert_row_late != NULL && req->n_items == 1 && it->n_recipients == 1 &&
           it->idempotency_key == NULL && it->state_patch == NULL;
}

/* The one-row publish of publish_late_ok, queued for the COMMIT; *queued false when the dialect
 * did not take it (nothing written but the tenant row). */
static int publish_late(struct store *st, const struct store_publish_req *req,
                        struct store_published *o, struct store_touches *touches, bool *queued)
{
    const struct store_publish_item *it = &req->items[0];
    struct store_new_row row;
    *queued = false;
    memset(o, 0, sizeof *o);
    snprintf(o->agent_id, sizeof o->agent_id, "%s", it->recipients[0]);
    int rc = tenant_ensure(st, req->tenant_id, req->now_ms);
    if (rc == ROOST_OK &&
        (rc = row_new(st, req, it, it->recipients[0], o->event_id, &row)) == ROOST_OK) {
        rc = dialect(st)->insert_row_late(st, &row, req->now_ms, &o->seq, touches, queued);
    }
    return rc;
}

/* Writes one (item, recipient) row, or finds it again through the idempotency key. The new head
 * goes to `heads`. */
static int publish_one(struct store *st, const struct store_publish_req *req,
                       const struct store_publish_item *it, const char *agent_id,
                       struct store_published *o, struct store_touches *heads)
{
    int rc;
    memset(o, 0, sizeof *o);
    snprintf(o->agent_id, sizeof o->agent_id, "%s", agent_id);
    if (it->idempotency_key != NULL) {
        bool found = false;
        rc = idem_find(st, req->tenant_id, agent_id, it->idempotency_key, req->now_ms, o, &found);
        if (rc != ROOST_OK || found) {
            o->duplicate = found;
            return rc;
        }
    }
    struct store_new_row row;
    if ((rc = row_new(st, req, it, agent_id, o->event_id, &row)) != ROOST_OK ||
        (rc = seq_insert(st, &row, req->now_ms)) != ROOST_OK) {
        return rc;
    }
    o->seq = row.seq;
    if (it->state_patch != NULL) {
        int64_t bytes = 0;
        rc =
            state_patch(st, req->tenant_id, agent_id, it->state_patch, o->seq, req->now_ms, &bytes);
        if (rc != ROOST_OK) {
            return rc;
        }
        /* The request fails whole; the group rolls back its writes, as for any failed job. */
        if (req->max_state_bytes > 0 && bytes > (int64_t)req->max_state_bytes) {
            return ROOST_ESTATETOOLARGE;
        }
    }
    /* Every new row moves the head (cursor readers and long-polls care even about delayed rows). */
    return store_touches_add(heads, req->tenant_id, agent_id, o->seq);
}

/* Recipients of an item are handled in sorted agent_id order (the lock order of DESIGN §4.2). A
 * recipient listed twice gets one row; both out entries describe it. Each agent is reported once,
 * with its highest new head. */
static int publish(struct store *st, const struct store_publish_req *req,
                   struct store_published *out, struct store_touches *touches)
{
    if (publish_late_ok(st, req, touches)) {
        bool queued;
        int rc = publish_late(st, req, out, touches, &queued);
        if (rc != ROOST_OK || queued) {
            return store_op_done(st, rc);
        }
    }
    struct store_touches heads = {0};
    struct store_recipient *order = NULL;
    size_t order_cap = 0, base = 0;
    int rc = publish_begin(st, req);
    for (size_t i = 0; rc == ROOST_OK && i < req->n_items; i++) {
        const struct store_publish_item *it = &req->items[i];
        if ((rc = store_recipients_sort(it, &order, &order_cap)) != ROOST_OK) {
            break;
        }
        for (size_t k = 0; rc == ROOST_OK && k < it->n_recipients; k++) {
            struct store_published *o = &out[base + order[k].idx];
            if (k > 0 && strcmp(order[k - 1].agent_id, order[k].agent_id) == 0) {
                *o = out[base + order[k - 1].idx];
                continue;
            }
            rc = publish_one(st, req, it, order[k].agent_id, o, &heads);
        }
        base += it->n_recipients;
    }
    for (size_t i = 0; rc == ROOST_OK && i < heads.len; i++) {
        const struct store_touch *t = &heads.items[i];
        rc = store_changed(st, t->tenant_id, t->agent_id, t->head, req->now_ms, touches);
    }
    store_touches_cleanup(&heads);
    free(order);
    return store_op_done(st, rc);
}

/* ---- batches ---- */

/* Payload bytes (after fan-out) one batch insert takes at most; the requests past it publish one
 * by one, so the statement stays well below a server's max_allowed_packet (16 MiB by default). */
#define PUBLISH_BATCH_MAX_BYTES ((size_t)4 << 20)

/* A request the batch insert can take: none of its items looks up an idempotency key or patches
 * the agent's state (those read between the lock and the insert), so its rows are known before
 * any statement runs; and it fits the batch's byte budget (*bytes, updated when it does). A lone
 * request over the budget still goes in: limits.max_publish_bytes bounds it. */
static bool publish_batchable(const struct store_publish_req *req, size_t *bytes)
{
    size_t need = 0;
    for (size_t i = 0; i < req->n_items; i++) {
        const struct store_publish_item *it = &req->items[i];
        if (it->idempotency_key != NULL || it->state_patch != NULL) {
            return false;
        }
        need += (it->payload != NULL ? strlen(it->payload) : 2) * it->n_recipients;
    }
    if (*bytes > 0 && *bytes + need > PUBLISH_BATCH_MAX_BYTES) {
        return false;
    }
    *bytes += need;
    return true;
}

/* One row of a batch insert and where its answer goes. */
struct batch_row {
    struct store_new_row row;
    char event_id[STORE_EVENT_ID_LEN + 1];
    struct store_publish_entry *entry;
    size_t out_idx; /* into entry->out */
    size_t ord;     /* position in the batch: the order of one agent's rows */
};

static int batch_row_cmp(const void *pa, const void *pb)
{
    const struct batch_row *a = pa, *b = pb;
    int c = strcmp(a->row.tenant_id, b->row.tenant_id);
    if (c == 0) {
        c = strcmp(a->row.agent_id, b->row.agent_id);
    }
    return c != 0 ? c : (a->ord > b->ord) - (a->ord < b->ord);
}

/* The rows of every batchable entry, event ids drawn; a recipient listed twice in an item gets
 * one row (its other out entries are copied once the seqs are known). */
static int batch_rows_build(struct store *st, struct store_publish_entry *entries, size_t n,
                            const bool *batched, struct batch_row **rows_out, size_t *n_rows)
{
    struct store_recipient *order = NULL;
    size_t order_cap = 0, total = 0, k = 0;
    int rc = ROOST_OK;
    for (size_t e = 0; e < n; e++) {
        for (size_t i = 0; batched[e] && i < entries[e].req->n_items; i++) {
            total += entries[e].req->items[i].n_recipients;
        }
    }
    struct batch_row *rows = calloc(total ? total : 1, sizeof *rows);
    if (rows == NULL) {
        return ROOST_ENOMEM;
    }
    for (size_t e = 0; rc == ROOST_OK && e < n; e++) {
        struct store_publish_entry *en = &entries[e];
        const struct store_publish_req *req = en->req;
        size_t base = 0;
        for (size_t i = 0; batched[e] && rc == ROOST_OK && i < req->n_items; i++) {
            const struct store_publish_item *it = &req->items[i];
            if ((rc = store_recipients_sort(it, &order, &order_cap)) != ROOST_OK) {
                break;
            }
            for (size_t r = 0; r < it->n_recipients; r++) {
                if (r > 0 && strcmp(order[r - 1].agent_id, order[r].agent_id) == 0) {
                    continue;
                }
                struct batch_row *b = &rows[k];
                if ((rc = row_new(st, req, it, order[r].agent_id, b->event_id, &b->row)) !=
                    ROOST_OK) {
                    break;
                }
                b->entry = en;
                b->out_idx = base + order[r].idx;
                b->ord = k++;
            }
            base += it->n_recipients;
        }
    }
    free(order);
    *rows_out = rows;
    *n_rows = k;
    return rc;
}

/* Fills the entries' outputs from the inserted rows: each out entry, the duplicates of a
 * recipient listed twice, and each entry's touches (the change log too). */
static int batch_rows_answer(struct store *st, struct batch_row *rows, size_t n_rows,
                             struct store_publish_entry *entries, size_t n, const bool *batched)
{
    int rc = ROOST_OK;
    for (size_t r = 0; r < n_rows; r++) {
        struct store_published *o = &rows[r].entry->out[rows[r].out_idx];
        memset(o, 0, sizeof *o);
        memcpy(o->event_id, rows[r].event_id, sizeof o->event_id);
        snprintf(o->agent_id, sizeof o->agent_id, "%s", rows[r].row.agent_id);
        o->seq = rows[r].row.seq;
    }
    struct store_recipient *order = NULL;
    size_t order_cap = 0;
    for (size_t e = 0; rc == ROOST_OK && e < n; e++) {
        struct store_publish_entry *en = &entries[e];
        size_t base = 0;
        for (size_t i = 0; batched[e] && rc == ROOST_OK && i < en->req->n_items; i++) {
            const struct store_publish_item *it = &en->req->items[i];
            if ((rc = store_recipients_sort(it, &order, &order_cap)) != ROOST_OK) {
                break;
            }
            for (size_t r = 1; r < it->n_recipients; r++) {
                if (strcmp(order[r - 1].agent_id, order[r].agent_id) == 0) {
                    en->out[base + order[r].idx] = en->out[base + order[r - 1].idx];
                }
            }
            base += it->n_recipients;
        }
    }
    free(order);
    /* changed() keeps the highest head per agent, for the entry's touches and the change log. */
    for (size_t r = 0; rc == ROOST_OK && r < n_rows; r++) {
        const struct store_new_row *row = &rows[r].row;
        rc = store_changed(st, row->tenant_id, row->agent_id, row->seq, rows[r].entry->req->now_ms,
                           rows[r].entry->touches);
    }
    return rc;
}

/* The batchable entries share one insert (insert_rows); the others publish one by one after it.
 * Entries' touches are reset first (a batch may run again after a rollback). */
int store_publish_batch_op(struct store *st, struct store_publish_entry *entries, size_t n)
{
    struct batch_row *rows = NULL;
    size_t n_rows = 0, n_batched = 0, bytes = 0;
    int64_t now_ms = 0;
    bool *batched = calloc(n ? n : 1, sizeof *batched);
    if (batched == NULL) {
        return store_op_done(st, ROOST_ENOMEM);
    }
    for (size_t e = 0; e < n; e++) {
        store_touches_cleanup(entries[e].touches);
        entries[e].rc = ROOST_OK;
        batched[e] = batch_insert(st) && publish_batchable(entries[e].req, &bytes);
        n_batched += batched[e];
        now_ms = entries[e].req->now_ms > now_ms ? entries[e].req->now_ms : now_ms;
    }
    int rc = ROOST_OK;
    if (n_batched > 0) {
        rc = batch_rows_build(st, entries, n, batched, &rows, &n_rows);
        struct store_new_row *plain = NULL;
        if (rc == ROOST_OK && n_rows > 0) {
            qsort(rows, n_rows, sizeof *rows, batch_row_cmp);
            if ((plain = malloc(n_rows * sizeof *plain)) == NULL) {
                rc = ROOST_ENOMEM;
            }
        }
        if (rc == ROOST_OK && n_rows > 0) {
            for (size_t r = 0; r < n_rows; r++) {
                /* The sort moved the rows, not their event_id pointers: point each at its own. */
                rows[r].row.event_id = rows[r].event_id;
                plain[r] = rows[r].row;
            }
            rc = insert_rows(st, plain, n_rows, now_ms);
            for (size_t r = 0; rc == ROOST_OK && r < n_rows; r++) {
                rows[r].row.seq = plain[r].seq;
            }
        }
        free(plain);
        if (rc == ROOST_OK) {
            rc = batch_rows_answer(st, rows, n_rows, entries, n, batched);
        }
        free(rows);
    }
    for (size_t e = 0; rc == ROOST_OK && e < n; e++) {
        if (batched[e]) {
            continue;
        }
        entries[e].rc = publish(st, entries[e].req, entries[e].out, entries[e].touches);
        if (entries[e].rc == ROOST_ERETRY) {
            rc = ROOST_ERETRY;
        }
    }
    free(batched);
    return store_op_done(st, rc);
}

/* A one-row publish stays on the plain path, which costs fewer allocations. Where a publish of
 * several rows is cheaper as a batch of one (STORE_CAP_PUBLISH_ROWS_AS_BATCH), a fan-out or several
 * items take the batch path, which falls back to the plain one for an idempotency key or a state
 * patch. */
int store_publish_op(struct store *st, const struct store_publish_req *req,
                     struct store_published *out, struct store_touches *touches)
{
    size_t rows = 0;
    for (size_t i = 0; i < req->n_items && rows < 2; i++) {
        rows += req->items[i].n_recipients;
    }
    if (rows < 2 || !has(st, STORE_CAP_PUBLISH_ROWS_AS_BATCH)) {
        return publish(st, req, out, touches);
    }
    struct store_publish_entry e = {.req = req, .out = out, .touches = touches};
    int rc = store_publish_batch_op(st, &e, 1);
    return rc != ROOST_OK ? rc : e.rc;
}
