/* SPDX-License-Identifier: MIT */
/* The PostgreSQL backend of the store: the dialect primitives the shared lifecycle
 * (store_lifecycle.c) runs on, the reads still written per backend, and the change-log tailer.
 * Like MySQL it has several writers: the agent row lock orders seqs (DESIGN §4.2), claims use
 * FOR UPDATE SKIP LOCKED, and every writing transaction appends to the change log the other
 * nodes follow. Its statements are descriptors with PostgreSQL text only (STORE_STMT_ONLY): they
 * become the PostgreSQL column of the shared descriptors when these primitives move into their
 * subject files (issue 30). The driver is in store_pg_conn.c. */
#include "store/store_pg.h"
#include "store/store_pg_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

#define PG STORE_SQL_PG

/* roost_changes rows older than this go with retention; a tailer is never this far behind. */
#define CHANGES_KEEP_MS (10 * 60 * 1000)

/* ---- publish ---- */

STORE_STMT_ONLY(PG_TENANT_FIND, PG, "SELECT 1 FROM tenants WHERE tenant_id = ?");
STORE_STMT_ONLY(PG_TENANT_ENSURE, PG,
                "INSERT INTO tenants (tenant_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING");
/* tenant, agent, now: creates or row-locks the agent without moving next_seq. */
STORE_STMT_ONLY(PG_AGENT_LOCK, PG,
                "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
                " VALUES (?1, ?2, 1, ?3, ?3) ON CONFLICT (tenant_id, agent_id)"
                " DO UPDATE SET next_seq = agents.next_seq");
STORE_STMT_ONLY(PG_IDEM_FIND, PG,
                "SELECT event_id, seq FROM inbox"
                " WHERE tenant_id = ? AND agent_id = ? AND idempotency_key = ?");
/* tenant, agent, now: the seq, allocated under the agent's row lock (held until the transaction
 * ends, DESIGN §4.2). PostgreSQL releases that lock only after the commit is visible to new
 * snapshots, so seqs become visible in order. */
#define SEQ_UPSERT                                                                                 \
    "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"                   \
    " VALUES (?1, ?2, 2, ?3, ?3) ON CONFLICT (tenant_id, agent_id) DO UPDATE SET"                  \
    " next_seq = agents.next_seq + 1, updated_at = excluded.updated_at RETURNING next_seq - 1"
STORE_STMT_ONLY(PG_SEQ_ALLOC, PG, SEQ_UPSERT);
#define INBOX_COLS                                                                                 \
    "tenant_id, agent_id, seq, event_id, status, priority, correlation_id, idempotency_key,"       \
    " payload, created_at, available_at, expires_at"
STORE_STMT_ONLY(PG_INBOX_INSERT, PG,
                "INSERT INTO inbox (" INBOX_COLS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
/* The seq upsert and the row in one statement: tenant, agent, now, then event_id … expires_at. */
STORE_STMT_ONLY(
    PG_SEQ_INSERT, PG,
    "WITH s AS (" SEQ_UPSERT " AS seq) INSERT INTO inbox (" INBOX_COLS ")"
    " SELECT ?1, ?2, s.seq, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12 FROM s RETURNING seq");
STORE_STMT_ONLY(PG_STATE_READ, PG,
                "SELECT state FROM agents WHERE tenant_id = ? AND agent_id = ? FOR UPDATE");
STORE_STMT_ONLY(PG_STATE_WRITE, PG,
                "UPDATE agents SET state = ?, state_cursor = ?, updated_at = ?"
                " WHERE tenant_id = ? AND agent_id = ?");

/* ---- claims, retention ---- */

/* tenant, agent, consumer, now, expires, seqs ('{4,7}'), tokens ('{"lt_…","lt_…"}'): every
 * candidate of a claim in one statement whatever their count (arrays, so one prepared statement),
 * each row with its own lease token. */
STORE_STMT_ONLY(PG_CLAIM_UPDATE_ALL, PG,
                "UPDATE inbox i SET status = " ST_CLAIMED ", lease_token = u.tok, consumer = ?3,"
                " claimed_at = ?4, claim_expires_at = ?5, attempts = i.attempts + 1"
                " FROM unnest(?6::bigint[], ?7::text[]) AS u(seq, tok)"
                " WHERE i.tenant_id = ?1 AND i.agent_id = ?2 AND i.seq = u.seq"
                " AND i.status = " ST_PENDING);
/* cut, limit: the oldest change rows nobody else is pruning. */
STORE_STMT_ONLY(PG_CHANGES_PRUNE, PG,
                "DELETE FROM roost_changes WHERE id = ANY(ARRAY(SELECT id FROM roost_changes"
                " WHERE at_ms < ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED))");

/* ---- the tailer ---- */

STORE_STMT_ONLY(PG_TAIL_MAX, PG, "SELECT COALESCE(MAX(id), 0) FROM roost_changes");
STORE_STMT_ONLY(PG_TAIL_SCAN, PG,
                "SELECT id, tenant_id, agent_id, head, origin FROM roost_changes WHERE id > ?"
                " ORDER BY id LIMIT ?");
/* ids as an array literal ('{4,7}') */
STORE_STMT_ONLY(PG_TAIL_GAPS, PG,
                "SELECT id, tenant_id, agent_id, head, origin FROM roost_changes"
                " WHERE id = ANY(?::bigint[])");

/* ---- row callbacks ---- */

struct i64s {
    int64_t v[2];
    bool found;
};

/* The first column of a row. */
static int row_i64s(void *arg, struct store_row *row)
{
    struct i64s *o = arg;
    o->v[0] = row->i64(row, 0);
    o->found = true;
    return ROOST_OK;
}

/* ---- the dialect: agents and touches ---- */

static void pg_error_set(struct store *st, const char *msg)
{
    struct pg_store *b = store_pg_backend(st);
    snprintf(b->err, sizeof b->err, "%s", msg);
}

/* Records the change for the other nodes (written in this transaction's COMMIT round trip). */
static int pg_change_log(struct store *st, const char *tenant_id, const char *agent_id,
                         int64_t head, int64_t now_ms)
{
    return store_pg_change(store_pg_backend(st), tenant_id, agent_id, head, now_ms);
}

/* ---- publish ---- */

/* Creates the tenant row when missing. A plain read first, then the insert: tenant rows are
 * never deleted, so the last one seen needs no read at all. */
static int tenant_ensure(struct store *st, const char *tenant_id, int64_t now_ms)
{
    struct pg_store *b = store_pg_backend(st);
    if (strcmp(b->known_tenant, tenant_id) == 0) {
        return ROOST_OK;
    }
    struct i64s o = {0};
    struct store_param fp[] = {ARG_T(tenant_id)};
    int rc = store_run(st, PG_TENANT_FIND, fp, row_i64s, &o, NULL);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (o.found) {
        snprintf(b->known_tenant, sizeof b->known_tenant, "%s", tenant_id);
        return ROOST_OK;
    }
    struct store_param tp[] = {ARG_T(tenant_id), ARG_I(now_ms)};
    return store_run(st, PG_TENANT_ENSURE, tp, NULL, NULL, NULL);
}

static int str_cmp(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* A request with several items first locks all its agents in one sorted pass, so two fan-outs
 * never wait on each other in a cycle (each item alone already goes in sorted order). */
static int pg_publish_begin(struct store *st, const struct store_publish_req *req)
{
    int rc = tenant_ensure(st, req->tenant_id, req->now_ms);
    if (rc != ROOST_OK || req->n_items <= 1) {
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
        if (j > 0 && strcmp(all[j - 1], all[j]) == 0) {
            continue;
        }
        struct store_param lk[] = {ARG_T(req->tenant_id), ARG_T(all[j]), ARG_I(req->now_ms)};
        rc = store_run(st, PG_AGENT_LOCK, lk, NULL, NULL, NULL);
    }
    free(all);
    return rc;
}

struct idem_row {
    struct store_published *o;
    bool found;
};

static int row_idem(void *arg, struct store_row *row)
{
    struct idem_row *r = arg;
    const char *ev = row->text(row, 0);
    snprintf(r->o->event_id, sizeof r->o->event_id, "%s", ev != NULL ? ev : "");
    r->o->seq = row->i64(row, 1);
    r->found = true;
    return ROOST_OK;
}

/* Locks the agent first: a concurrent publish with the same key then waits here and finds this
 * one's row (READ COMMITTED: the next statement's snapshot sees that commit), instead of both
 * inserting and one failing on the unique index. */
static int pg_idem_find(struct store *st, const char *tenant_id, const char *agent_id,
                        const char *key, int64_t now_ms, struct store_published *o, bool *found)
{
    struct store_param lk[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(now_ms)};
    int rc = store_run(st, PG_AGENT_LOCK, lk, NULL, NULL, NULL);
    if (rc != ROOST_OK) {
        return rc;
    }
    struct idem_row r = {.o = o};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_T(key)};
    rc = store_run(st, PG_IDEM_FIND, p, row_idem, &r, NULL);
    *found = rc == ROOST_OK && r.found;
    return rc;
}

static int seq_of(struct store *st, const struct i64s *o, int64_t *seq)
{
    if (!o->found || o->v[0] < 1) {
        pg_error_set(st, "publish: sequence allocation returned no seq");
        return ROOST_ESTORE;
    }
    *seq = o->v[0];
    return ROOST_OK;
}

static int pg_seq_alloc(struct store *st, const char *tenant_id, const char *agent_id,
                        int64_t now_ms, int64_t *seq)
{
    struct i64s o = {0};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(now_ms)};
    int rc = store_run(st, PG_SEQ_ALLOC, p, row_i64s, &o, NULL);
    return rc != ROOST_OK ? rc : seq_of(st, &o, seq);
}

static int pg_inbox_insert(struct store *st, const struct store_new_row *row)
{
    struct store_param p[] = {
        ARG_T(row->tenant_id),      ARG_T(row->agent_id),        ARG_I(row->seq),
        ARG_T(row->event_id),       ARG_I(row->status),          ARG_I(row->priority),
        ARG_T(row->correlation_id), ARG_T(row->idempotency_key), ARG_T(row->payload),
        ARG_I(row->created_at_ms),  ARG_I(row->available_at_ms), ARG_IN(row->expires_at_ms),
    };
    return store_run(st, PG_INBOX_INSERT, p, NULL, NULL, NULL);
}

static int pg_seq_insert(struct store *st, const struct store_new_row *row, int64_t now_ms,
                         int64_t *seq)
{
    struct i64s o = {0};
    struct store_param p[] = {
        ARG_T(row->tenant_id),      ARG_T(row->agent_id),        ARG_I(now_ms),
        ARG_T(row->event_id),       ARG_I(row->status),          ARG_I(row->priority),
        ARG_T(row->correlation_id), ARG_T(row->idempotency_key), ARG_T(row->payload),
        ARG_I(row->created_at_ms),  ARG_I(row->available_at_ms), ARG_IN(row->expires_at_ms),
    };
    int rc = store_run(st, PG_SEQ_INSERT, p, row_i64s, &o, NULL);
    return rc != ROOST_OK ? rc : seq_of(st, &o, seq);
}

/* RFC 7386 JSON Merge Patch, as MySQL's JSON_MERGE_PATCH and SQLite's json_patch: a new
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

struct state_row {
    char *state;
    bool failed;
};

static int row_state(void *arg, struct store_row *row)
{
    struct state_row *s = arg;
    return store_row_dup(row, 0, &s->state);
}

/* Merges in C (PostgreSQL has no merge patch, and jsonb would not keep the document's text):
 * the agent row is already locked by the seq allocation of this publish. */
static int pg_state_patch(struct store *st, const char *tenant_id, const char *agent_id,
                          const char *patch, int64_t seq, int64_t now_ms, int64_t *state_bytes)
{
    struct state_row s = {0};
    struct store_param k[] = {ARG_T(tenant_id), ARG_T(agent_id)};
    int rc = store_run(st, PG_STATE_READ, k, row_state, &s, NULL);
    if (rc != ROOST_OK) {
        free(s.state);
        return rc;
    }
    json_t *cur = json_loads(s.state != NULL ? s.state : "{}", 0, NULL);
    json_t *p = json_loads(patch, JSON_DECODE_ANY, NULL);
    free(s.state);
    json_t *merged = p != NULL ? merge_patch(cur, p) : NULL;
    char *text = merged != NULL
                     ? json_dumps(merged, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY)
                     : NULL;
    json_decref(cur);
    json_decref(p);
    json_decref(merged);
    if (text == NULL) {
        pg_error_set(st, "state_patch: the patch or the state is not JSON (or out of memory)");
        return ROOST_ESTORE;
    }
    struct store_param w[] = {ARG_T(text), ARG_I(seq), ARG_I(now_ms), ARG_T(tenant_id),
                              ARG_T(agent_id)};
    rc = store_run(st, PG_STATE_WRITE, w, NULL, NULL, NULL);
    *state_bytes = (int64_t)strlen(text);
    free(text);
    return rc;
}

/* ---- leases ---- */

/* The candidates (locked by claim_select) claimed by one statement; any other count than all of
 * them is an error. */
static int pg_claim_update_all(struct store *st, const char *tenant_id, const char *agent_id,
                               struct store_events *cands,
                               const char (*tokens)[STORE_LEASE_TOKEN_LEN + 1],
                               const char *consumer, int64_t now_ms, int64_t claim_expires_at_ms)
{
    struct dynbuf seqs = {.max = (size_t)1 << 24}, toks = {.max = (size_t)1 << 24};
    dynbuf_addc(&seqs, '{');
    dynbuf_addc(&toks, '{');
    for (size_t i = 0; i < cands->len; i++) {
        /* Lease tokens are letters, digits and '_' (ids.h): quoted, nothing to escape. */
        dynbuf_addf(&seqs, "%s%lld", i > 0 ? "," : "", (long long)cands->items[i].seq);
        dynbuf_addf(&toks, "%s\"%s\"", i > 0 ? "," : "", tokens[i]);
    }
    dynbuf_addc(&seqs, '}');
    dynbuf_addc(&toks, '}');
    dynbuf_addc(&seqs, '\0');
    dynbuf_addc(&toks, '\0');
    int rc = ROOST_ENOMEM;
    int64_t changed = 0;
    if (seqs.err == DYNBUF_OK && toks.err == DYNBUF_OK) {
        struct store_param p[] = {
            ARG_T(tenant_id),           ARG_T(agent_id), ARG_T(consumer), ARG_I(now_ms),
            ARG_I(claim_expires_at_ms), ARG_T(seqs.s),   ARG_T(toks.s)};
        rc = store_run(st, PG_CLAIM_UPDATE_ALL, p, NULL, NULL, &changed);
    }
    dynbuf_cleanup(&seqs);
    dynbuf_cleanup(&toks);
    if (rc == ROOST_OK && changed != (int64_t)cands->len) {
        char msg[96];
        snprintf(msg, sizeof msg, "claim: %lld of %zu locked rows updated", (long long)changed,
                 cands->len);
        pg_error_set(st, msg);
        rc = ROOST_ESTORE;
    }
    return rc;
}

/* ---- retention ---- */

static int pg_retention_end(struct store *st, int rc)
{
    struct pg_store *b = store_pg_backend(st);
    if (rc == ROOST_OK) {
        return store_pg_exec(b, "RELEASE SAVEPOINT roost_retention");
    }
    b->n_changes = b->changes_ret_mark;
    store_pg_exec(b, "ROLLBACK TO SAVEPOINT roost_retention; RELEASE SAVEPOINT roost_retention");
    return rc;
}

/* Also prunes the change log: old rows go in a batch this node locks first (SKIP LOCKED), so a
 * node pruning at the same time takes the next batch instead of waiting for this one's COMMIT. */
static int pg_retention_begin(struct store *st, const struct store_retention_req *req)
{
    struct pg_store *b = store_pg_backend(st);
    b->changes_ret_mark = b->n_changes;
    int rc = store_pg_exec(b, "SAVEPOINT roost_retention");
    if (rc != ROOST_OK) {
        return rc;
    }
    struct store_param p[] = {ARG_I(req->now_ms - CHANGES_KEEP_MS), ARG_I(store_limit(req->batch))};
    rc = store_run(st, PG_CHANGES_PRUNE, p, NULL, NULL, NULL);
    return rc == ROOST_OK ? rc : pg_retention_end(st, rc);
}

static int64_t pg_insert_id(struct store *st)
{
    return store_pg_backend(st)->returned;
}

/* A unique key refused the last statement. */
static bool pg_dup_key(struct store *st)
{
    return strcmp(store_pg_backend(st)->sqlstate, "23505") == 0;
}

/* ---- the tailer ---- */

#define TAIL_PAGE 1000
#define TAIL_GAP_BATCH 64
#define TAIL_GAPS_MAX 4096
/* How far below the end of the log a starting tailer looks for ids still uncommitted. */
#define TAIL_START_WINDOW 1000
/* Without news from the listener the log is still read this often (a safety net). */
#define TAIL_QUIET_SCAN_MS 1000

static int gap_add(struct store_tail_pos *pos, int64_t id, int64_t now_ms)
{
    if (pos->n_gaps == TAIL_GAPS_MAX) {
        /* Bounded: the oldest gap is the one least likely to fill. */
        memmove(pos->gaps, pos->gaps + 1, (pos->n_gaps - 1) * sizeof *pos->gaps);
        pos->n_gaps--;
    }
    if (pos->n_gaps == pos->cap_gaps) {
        size_t cap = pos->cap_gaps ? pos->cap_gaps * 2 : 16;
        struct store_tail_gap *grown = realloc(pos->gaps, cap * sizeof *grown);
        if (grown == NULL) {
            return ROOST_ENOMEM;
        }
        pos->gaps = grown;
        pos->cap_gaps = cap;
    }
    pos->gaps[pos->n_gaps++] = (struct store_tail_gap){.id = id, .since_ms = now_ms};
    return ROOST_OK;
}

/* Walks rows of roost_changes in id order: ids passed over become gaps (unless filling), each
 * row is a touch unless this process wrote it (pinged at its commit). */
struct tail_rows {
    struct pg_store *b;
    struct store_tail_pos *pos;
    struct store_touches *touches;
    int64_t now_ms;
    int64_t next; /* the id expected next (scan), 0 when rows fill gaps */
    size_t n;
    bool no_touch; /* the start: rows only mark what is committed */
};

static int row_tail(void *arg, struct store_row *row)
{
    struct tail_rows *t = arg;
    int64_t id = row->i64(row, 0);
    int rc = ROOST_OK;
    t->n++;
    if (t->next > 0) {
        for (; t->next < id && rc == ROOST_OK; t->next++) {
            rc = gap_add(t->pos, t->next, t->now_ms);
        }
        t->next = id + 1;
    } else {
        for (size_t k = 0; k < t->pos->n_gaps; k++) {
            if (t->pos->gaps[k].id == id) {
                t->pos->gaps[k].id = 0; /* filled: compacted away */
            }
        }
    }
    const char *tenant = row->text(row, 1), *agent = row->text(row, 2);
    if (rc != ROOST_OK || t->no_touch || tenant == NULL || agent == NULL ||
        (t->b->origin != 0 && row->i64(row, 4) == t->b->origin)) {
        return rc;
    }
    return store_touches_add(t->touches, tenant, agent, row->i64(row, 3));
}

/* Re-checks the open gaps (ids passed over while their transaction was still open), then reads
 * what committed above the high mark; ids skipped there become gaps. Every statement runs in
 * autocommit at READ COMMITTED, so each sees the latest commits. */
int store_pg_tail(struct store *st, struct store_tail_pos *pos, int64_t now_ms,
                  struct store_touches *touches)
{
    struct pg_store *b = store_pg_backend(st);
    if (b->in_tx) {
        snprintf(b->err, sizeof b->err, "tail: must run outside a transaction");
        return ROOST_EINTERNAL;
    }
    /* Nothing to read without news: no statement while the nodes are quiet. Without a listener
     * (the server refused it) every call reads, as a polling tailer. */
    uint64_t wakes = 0;
    bool listening = store_pg_listener_poll(b->listener, &wakes);
    if (pos->started && listening && wakes == pos->wakes && now_ms >= pos->scanned_ms &&
        now_ms - pos->scanned_ms < TAIL_QUIET_SCAN_MS) {
        return ROOST_OK;
    }
    pos->wakes = wakes;
    pos->scanned_ms = now_ms;
    struct tail_rows t = {.b = b, .pos = pos, .touches = touches, .now_ms = now_ms};
    int rc;
    if (!pos->started) {
        /* Start at the end of the log; ids just below it not committed yet belong to open
         * transactions, so they start out as gaps rather than as seen. */
        struct i64s end = {0};
        if ((rc = store_run0(st, PG_TAIL_MAX, row_i64s, &end, NULL)) != ROOST_OK) {
            return rc;
        }
        int64_t from = end.v[0] > TAIL_START_WINDOW ? end.v[0] - TAIL_START_WINDOW : 0;
        t.next = from + 1;
        t.no_touch = true;
        struct store_param p[] = {ARG_I(from), ARG_I(TAIL_START_WINDOW)};
        if ((rc = store_run(st, PG_TAIL_SCAN, p, row_tail, &t, NULL)) != ROOST_OK) {
            return rc;
        }
        pos->high = t.next - 1 > end.v[0] ? t.next - 1 : end.v[0];
        pos->started = true;
        return ROOST_OK;
    }
    /* Gaps too old to fill any more (rolled back, or pruned) are dropped. */
    size_t keep = 0;
    for (size_t i = 0; i < pos->n_gaps; i++) {
        if (now_ms - pos->gaps[i].since_ms < STORE_TAIL_GAP_MS) {
            pos->gaps[keep++] = pos->gaps[i];
        }
    }
    pos->n_gaps = keep;
    rc = ROOST_OK;
    for (size_t i = 0; i < pos->n_gaps && rc == ROOST_OK; i += TAIL_GAP_BATCH) {
        char ids[TAIL_GAP_BATCH * 22 + 3];
        size_t len = 0;
        ids[len++] = '{';
        for (size_t k = i; k < i + TAIL_GAP_BATCH && k < pos->n_gaps; k++) {
            len += (size_t)snprintf(ids + len, sizeof ids - len, "%s%lld", k > i ? "," : "",
                                    (long long)pos->gaps[k].id);
        }
        snprintf(ids + len, sizeof ids - len, "}");
        struct store_param p[] = {ARG_T(ids)};
        t.next = 0;
        rc = store_run(st, PG_TAIL_GAPS, p, row_tail, &t, NULL);
    }
    keep = 0;
    for (size_t i = 0; i < pos->n_gaps; i++) {
        if (pos->gaps[i].id != 0) {
            pos->gaps[keep++] = pos->gaps[i];
        }
    }
    pos->n_gaps = keep;
    while (rc == ROOST_OK) {
        t.next = pos->high + 1;
        t.n = 0;
        struct store_param p[] = {ARG_I(pos->high), ARG_I(TAIL_PAGE)};
        rc = store_run(st, PG_TAIL_SCAN, p, row_tail, &t, NULL);
        if (t.next - 1 > pos->high) {
            pos->high = t.next - 1;
        }
        if (t.n < TAIL_PAGE) {
            break;
        }
    }
    return rc;
}

const struct store_dialect store_pg_dialect = {
    .scheme = "postgres",
    .scheme_alias = "postgresql",
    .open = store_pg_open,
    .open_error = store_pg_open_error,
    .close = store_pg_close,
    .migrate = store_pg_migrate,
    .errmsg = store_pg_errmsg,
    .ping = store_pg_ping,
    .begin = store_pg_begin,
    .commit = store_pg_commit,
    .rollback = store_pg_rollback,
    .savepoint = store_pg_savepoint,
    .savepoint_release = store_pg_savepoint_release,
    .savepoint_rollback = store_pg_savepoint_rollback,
    .tail = store_pg_tail,
    .done = NULL,
    .set_error = pg_error_set,
    .sql_col = STORE_SQL_PG,
    .caps = STORE_CAP_CHANGE_LOG | STORE_CAP_UPSERT_WHERE | STORE_CAP_CLAIM_ALL |
            STORE_CAP_ROUND_TRIP | STORE_CAP_INSERT_ID,
    .insert_id = pg_insert_id,
    .dup_key = pg_dup_key,
    .change_log = pg_change_log,
    .publish_begin = pg_publish_begin,
    .idem_find = pg_idem_find,
    .seq_alloc = pg_seq_alloc,
    .inbox_insert = pg_inbox_insert,
    .seq_insert = pg_seq_insert,
    .state_patch = pg_state_patch,
    .claim_update_all = pg_claim_update_all,
    .retention_begin = pg_retention_begin,
    .retention_end = pg_retention_end,
    .run = store_pg_run,
};
