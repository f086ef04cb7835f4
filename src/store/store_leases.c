/* SPDX-License-Identifier: MIT */
/* Claims and leases (store_ops.h), written once (DESIGN §4.3–4.4): claim, ack, release, extend,
 * release-all and the agent's last-seen mark, each deciding here (fencing, the repeated-ack rule,
 * release target and delay, the extend cap, quarantine at max attempts) with its statements in
 * every dialect beside it. MySQL's one-statement claim and ack of a batch (claim_update_all,
 * ack_rows) are still its own: their text depends on the count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "common/hash.h"
#include "common/ids.h"
#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

static const struct store_dialect *dialect(struct store *st)
{
    return st->dialect;
}

/* ---- the statements ---- */

/* event_id, tenant, agent. MySQL: FORCE INDEX, see ACK. */
STORE_STMT(LEASE_FIND,
           "SELECT seq, status, lease_token, attempts, claimed_at, claim_expires_at"
           " FROM inbox WHERE event_id = ? AND tenant_id = ? AND agent_id = ?",
           "SELECT seq, status, lease_token, attempts, claimed_at, claim_expires_at"
           " FROM inbox FORCE INDEX (inbox_event)"
           " WHERE event_id = ? AND tenant_id = ? AND agent_id = ?",
           "SELECT seq, status, lease_token, attempts, claimed_at, claim_expires_at"
           " FROM inbox WHERE event_id = ? AND tenant_id = ? AND agent_id = ?");

static int on_lease_row(void *arg, struct store_row *row)
{
    struct store_lease_row *l = arg;
    const char *token = row->text(row, 2);
    l->seq = row->i64(row, 0);
    l->status = store_status_of(row->i64(row, 1));
    snprintf(l->lease_token, sizeof l->lease_token, "%s", token != NULL ? token : "");
    l->attempts = (int)row->i64(row, 3);
    l->claimed_at_ms = row->i64(row, 4);
    l->claim_expires_at_ms = row->i64(row, 5);
    return ROOST_OK;
}

/* The event's lease columns for this tenant and agent; *found false when there is none. */
static int lease_find(struct store *st, const char *tenant_id, const char *agent_id,
                      const char *event_id, struct store_lease_row *row, bool *found)
{
    struct store_param p[] = {ARG_T(event_id), ARG_T(tenant_id), ARG_T(agent_id)};
    memset(row, 0, sizeof *row);
    row->seq = -1;
    int rc = store_run(st, LEASE_FIND, p, on_lease_row, row, NULL);
    *found = rc == ROOST_OK && row->seq >= 0;
    return rc;
}

/* token, consumer, now, claim_expires_at, tenant, agent, seq. The claim fields are set on the
 * selected row by the caller (the UPDATE returns nothing). */
STORE_STMT_SAME(CLAIM_UPDATE,
                "UPDATE inbox SET status = " ST_CLAIMED ", lease_token = ?, consumer = ?,"
                " claimed_at = ?, claim_expires_at = ?, attempts = attempts + 1"
                " WHERE tenant_id = ? AND agent_id = ? AND seq = ? AND status = " ST_PENDING);

/* Claims the row `seq` if still pending (*claimed). */
static int claim_row(struct store *st, const char *tenant_id, const char *agent_id, int64_t seq,
                     const char *token, const char *consumer, int64_t now_ms,
                     int64_t claim_expires_at_ms, bool *claimed)
{
    struct store_param p[] = {
        ARG_T(token),     ARG_T(consumer), ARG_I(now_ms), ARG_I(claim_expires_at_ms),
        ARG_T(tenant_id), ARG_T(agent_id), ARG_I(seq)};
    int64_t n = 0;
    int rc = store_run(st, CLAIM_UPDATE, p, NULL, NULL, &n);
    *claimed = rc == ROOST_OK && n == 1;
    return rc;
}

/* now, event_id, tenant, agent, token. The lease token is kept on completion so a repeated ack
 * can be recognised. MySQL: LAST_INSERT_ID(available_at) hands the row's available_at back as
 * the statement's insert id (STORE_CAP_INSERT_ID; PostgreSQL: RETURNING available_at), so the
 * delivery-latency histogram costs no second statement. FORCE INDEX: without it the range
 * optimizer, which runs again at every execution of a prepared statement, also estimates the
 * agent's whole primary-key and idempotency-key ranges (their tenant, agent prefix) before it picks
 * the one-row unique key anyway: 43 → 36 µs of server time per ack (MariaDB 10.11, 20,000 rows per
 * agent, medians of 4 alternated runs of 500). Run twice, the second changes nothing and the
 * repeated-ack rule answers as the first did (STORE_STMT_RERUN). */
STORE_STMT_RERUN(ACK,
                 "UPDATE inbox SET status = " ST_COMPLETED ", payload = NULL, completed_at = ?"
                 " WHERE event_id = ? AND tenant_id = ? AND agent_id = ? AND status = " ST_CLAIMED
                 " AND lease_token = ?",
                 "UPDATE inbox FORCE INDEX (inbox_event) SET status = " ST_COMPLETED
                 ", payload = NULL, completed_at = ?, available_at = LAST_INSERT_ID(available_at)"
                 " WHERE event_id = ? AND tenant_id = ? AND agent_id = ? AND status = " ST_CLAIMED
                 " AND lease_token = ?",
                 "UPDATE inbox SET status = " ST_COMPLETED ", payload = NULL, completed_at = ?"
                 " WHERE event_id = ? AND tenant_id = ? AND agent_id = ? AND status = " ST_CLAIMED
                 " AND lease_token = ? RETURNING available_at");
/* event_id, tenant: after an ack changed its row, without STORE_CAP_INSERT_ID. A point read is
 * cheaper than SQLite's RETURNING, which buffers its row in a temporary B-tree. */
STORE_STMT_ONLY2(ACK_AVAILABLE, STORE_SQL_SQLITE,
                 "SELECT available_at FROM inbox WHERE event_id = ? AND tenant_id = ?",
                 STORE_SQL_PG,
                 "SELECT available_at FROM inbox WHERE event_id = ? AND tenant_id = ?");

static int on_i64(void *arg, struct store_row *row)
{
    *(int64_t *)arg = row->i64(row, 0);
    return ROOST_OK;
}

/* Completes the event if claimed under `token` (*acked); *available_at_ms (may be NULL) gets its
 * available_at when it did. */
static int ack_update(struct store *st, const char *tenant_id, const char *agent_id,
                      const char *event_id, const char *token, int64_t now_ms, bool *acked,
                      int64_t *available_at_ms)
{
    struct store_param p[] = {ARG_I(now_ms), ARG_T(event_id), ARG_T(tenant_id), ARG_T(agent_id),
                              ARG_T(token)};
    int64_t n = 0;
    int rc = store_run(st, ACK, p, NULL, NULL, &n);
    *acked = rc == ROOST_OK && n == 1;
    if (!*acked || available_at_ms == NULL) {
        return rc;
    }
    if (store_dialect_has(dialect(st), STORE_CAP_INSERT_ID)) {
        *available_at_ms = dialect(st)->insert_id(st);
        return ROOST_OK;
    }
    struct store_param q[] = {ARG_T(event_id), ARG_T(tenant_id)};
    *available_at_ms = 0;
    return store_run(st, ACK_AVAILABLE, q, on_i64, available_at_ms, NULL);
}

/* status, available_at, nack, error, tenant, agent, seq, token */
STORE_STMT(RELEASE_UPDATE,
           "UPDATE inbox SET status = ?, available_at = ?, nacks = nacks + ?,"
           " last_error = coalesce(?, last_error), lease_token = NULL, claim_expires_at = NULL"
           " WHERE tenant_id = ? AND agent_id = ? AND seq = ? AND status = " ST_CLAIMED
           " AND lease_token = ?",
           "UPDATE inbox SET status = ?, available_at = ?, nacks = nacks + ?,"
           " last_error = COALESCE(?, last_error), lease_token = NULL, claim_expires_at = NULL"
           " WHERE tenant_id = ? AND agent_id = ? AND seq = ? AND status = " ST_CLAIMED
           " AND lease_token = ?",
           "UPDATE inbox SET status = ?, available_at = ?, nacks = nacks + ?,"
           " last_error = COALESCE(?, last_error), lease_token = NULL, claim_expires_at = NULL"
           " WHERE tenant_id = ? AND agent_id = ? AND seq = ? AND status = " ST_CLAIMED
           " AND lease_token = ?");

/* Ends the lease under `token`: status `to`, available_at, nacks + nack, last_error when error is
 * not NULL. *changed false when the lease moved on. */
static int release_update(struct store *st, const char *tenant_id, const char *agent_id,
                          int64_t seq, const char *token, enum store_status to,
                          int64_t available_at_ms, int nack, const char *error, bool *changed)
{
    struct store_param p[] = {ARG_I(to),        ARG_I(available_at_ms), ARG_I(nack), ARG_T(error),
                              ARG_T(tenant_id), ARG_T(agent_id),        ARG_I(seq),  ARG_T(token)};
    int64_t n = 0;
    int rc = store_run(st, RELEASE_UPDATE, p, NULL, NULL, &n);
    *changed = rc == ROOST_OK && n == 1;
    return rc;
}

/* claim_expires_at, tenant, agent, seq, token */
STORE_STMT_SAME(EXTEND_UPDATE,
                "UPDATE inbox SET claim_expires_at = ?"
                " WHERE tenant_id = ? AND agent_id = ? AND seq = ? AND status = " ST_CLAIMED
                " AND lease_token = ?");

static int extend_update(struct store *st, const char *tenant_id, const char *agent_id, int64_t seq,
                         const char *token, int64_t claim_expires_at_ms, bool *changed)
{
    struct store_param p[] = {ARG_I(claim_expires_at_ms), ARG_T(tenant_id), ARG_T(agent_id),
                              ARG_I(seq), ARG_T(token)};
    int64_t n = 0;
    int rc = store_run(st, EXTEND_UPDATE, p, NULL, NULL, &n);
    *changed = rc == ROOST_OK && n == 1;
    return rc;
}

/* Release-all, two shapes. With one writer (STORE_CAP_SINGLE_WRITER) one UPDATE waits on nobody:
 * tenant, agent[, consumer]. */
STORE_STMT_ONLY(RELEASE_ALL, STORE_SQL_SQLITE,
                "UPDATE inbox SET status = " ST_PENDING ", lease_token = NULL,"
                " claim_expires_at = NULL WHERE tenant_id = ? AND agent_id = ?"
                " AND status = " ST_CLAIMED " AND consumer = ?");
STORE_STMT_ONLY(RELEASE_ALL_ANY, STORE_SQL_SQLITE,
                "UPDATE inbox SET status = " ST_PENDING ", lease_token = NULL,"
                " claim_expires_at = NULL WHERE tenant_id = ? AND agent_id = ?"
                " AND status = " ST_CLAIMED);
/* With row locks and other writers, the leases are read without locks, then released by primary
 * key, each conditional on the lease read: an ack, release or scavenger that won the race keeps
 * its row. MySQL's read walks the smaller of the agent's primary-key range and inbox_lease (every
 * claimed row, of every agent: a locking walk of it would wait on other agents' claims).
 * tenant, agent[, consumer]; then tenant, agent, seq, token. */
STORE_STMT_ONLY2(RELEASE_ALL_SELECT, STORE_SQL_MYSQL,
                 "SELECT seq, lease_token FROM inbox WHERE lease_expires_at IS NOT NULL"
                 " AND tenant_id = ? AND agent_id = ? AND consumer = ?",
                 STORE_SQL_PG,
                 "SELECT seq, lease_token FROM inbox WHERE status = " ST_CLAIMED
                 " AND tenant_id = ? AND agent_id = ? AND consumer = ?");
STORE_STMT_ONLY2(RELEASE_ALL_ANY_SELECT, STORE_SQL_MYSQL,
                 "SELECT seq, lease_token FROM inbox WHERE lease_expires_at IS NOT NULL"
                 " AND tenant_id = ? AND agent_id = ?",
                 STORE_SQL_PG,
                 "SELECT seq, lease_token FROM inbox WHERE status = " ST_CLAIMED
                 " AND tenant_id = ? AND agent_id = ?");
#define RELEASE_ALL_UPDATE_SQL                                                                     \
    "UPDATE inbox SET status = " ST_PENDING ", lease_token = NULL,"                                \
    " claim_expires_at = NULL WHERE tenant_id = ? AND agent_id = ? AND seq = ?"                    \
    " AND status = " ST_CLAIMED " AND lease_token = ?"
STORE_STMT_ONLY2(RELEASE_ALL_UPDATE, STORE_SQL_MYSQL, RELEASE_ALL_UPDATE_SQL, STORE_SQL_PG,
                 RELEASE_ALL_UPDATE_SQL);

static int on_lease_ref(void *arg, struct store_row *row)
{
    struct store_lease_ref *r = store_lease_refs_push(arg);
    if (r == NULL) {
        return ROOST_ENOMEM;
    }
    const char *token = row->text(row, 1);
    r->seq = row->i64(row, 0);
    snprintf(r->lease_token, sizeof r->lease_token, "%s", token != NULL ? token : "");
    return ROOST_OK;
}

/* Every lease of the agent held by consumer (NULL: any) back to pending, nothing counted. */
static int release_leases(struct store *st, const char *tenant_id, const char *agent_id,
                          const char *consumer, size_t *released)
{
    int64_t n = 0;
    int rc;
    if (store_dialect_has(dialect(st), STORE_CAP_SINGLE_WRITER)) {
        if (consumer != NULL) {
            struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_T(consumer)};
            rc = store_run(st, RELEASE_ALL, p, NULL, NULL, &n);
        } else {
            struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id)};
            rc = store_run(st, RELEASE_ALL_ANY, p, NULL, NULL, &n);
        }
        *released = rc == ROOST_OK ? (size_t)n : 0;
        return rc;
    }
    struct store_lease_refs refs = {0};
    if (consumer != NULL) {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_T(consumer)};
        rc = store_run(st, RELEASE_ALL_SELECT, p, on_lease_ref, &refs, NULL);
    } else {
        struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id)};
        rc = store_run(st, RELEASE_ALL_ANY_SELECT, p, on_lease_ref, &refs, NULL);
    }
    for (size_t i = 0; rc == ROOST_OK && i < refs.len; i++) {
        struct store_param up[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(refs.items[i].seq),
                                   ARG_T(refs.items[i].lease_token)};
        if ((rc = store_run(st, RELEASE_ALL_UPDATE, up, NULL, NULL, &n)) == ROOST_OK) {
            *released += (size_t)n;
        }
    }
    free(refs.items);
    return rc;
}

/* now, tenant, agent, now: at most one write a minute per agent; the condition makes the common
 * case a no-op. */
STORE_STMT_SAME(SEEN,
                "UPDATE agents SET last_seen_at = ? WHERE tenant_id = ? AND agent_id = ?"
                " AND (last_seen_at IS NULL OR last_seen_at <= ? - " STORE_SEEN_EVERY_SQL ")");

/* agents.last_seen_at = now, at most once per STORE_SEEN_EVERY_MS. Where a statement is a round
 * trip (STORE_CAP_ROUND_TRIP), the connection remembers when it last wrote the agent's mark, so
 * most claims skip the statement. */
static int seen(struct store *st, const char *tenant_id, const char *agent_id, int64_t now_ms)
{
    bool memo = store_dialect_has(dialect(st), STORE_CAP_ROUND_TRIP);
    uint64_t key = memo ? hash_tenant_agent(tenant_id, agent_id) : 0;
    struct store_seen_slot *slot = &st->seen[key % STORE_SEEN_SLOTS];
    if (memo && slot->key == key && now_ms - slot->at_ms < STORE_SEEN_EVERY_MS) {
        return ROOST_OK;
    }
    struct store_param p[] = {ARG_I(now_ms), ARG_T(tenant_id), ARG_T(agent_id), ARG_I(now_ms)};
    int rc = store_run(st, SEEN, p, NULL, NULL, NULL);
    if (rc == ROOST_OK && memo) {
        slot->key = key;
        slot->at_ms = now_ms;
    }
    return rc;
}

/* ---- the operations ---- */

/* The lease rule of ack over rows read (and locked) before the batch's update: claimed under the
 * entry's token → completed now; completed under it → a repeated ack; otherwise a mismatch. An
 * event acked twice in one batch is, the second time, already completed under the first's
 * token. */
int store_leases_ack_batch(struct store *st, struct store_ack_entry *entries, size_t n,
                           int64_t now_ms)
{
    const struct store_dialect *d = dialect(st);
    if (d->ack_rows == NULL) {
        for (size_t i = 0; i < n; i++) {
            struct store_ack_entry *e = &entries[i];
            e->rc = store_leases_ack(st, e->tenant_id, e->agent_id, e->event_id, e->lease_token,
                                     now_ms, &e->available_at_ms);
            if (e->rc == ROOST_ERETRY) {
                return ROOST_ERETRY;
            }
        }
        return ROOST_OK;
    }
    struct store_lease_row *rows = calloc(n ? n : 1, sizeof *rows);
    int64_t *avail = calloc(n ? n : 1, sizeof *avail);
    bool *found = calloc(n ? n : 1, sizeof *found);
    bool *did = calloc(n ? n : 1, sizeof *did); /* this entry completed its event */
    size_t completed = 0, acked = 0;
    int rc = rows && avail && found && did ? ROOST_OK : ROOST_ENOMEM;
    if (rc == ROOST_OK) {
        rc = d->ack_rows(st, entries, n, now_ms, rows, avail, found, &completed);
    }
    for (size_t i = 0; rc == ROOST_OK && i < n; i++) {
        struct store_ack_entry *e = &entries[i];
        bool first = true;
        for (size_t j = 0; j < i && first; j++) {
            first = !(did[j] && strcmp(entries[j].event_id, e->event_id) == 0);
        }
        e->available_at_ms = 0;
        if (!found[i]) {
            e->rc = ROOST_EEVENTNOTFOUND;
        } else if (!store_lease_token_eq(&rows[i], e->lease_token)) {
            e->rc = ROOST_ELEASEMISMATCH;
        } else if (rows[i].status == STORE_CLAIMED && first) {
            e->rc = ROOST_OK;
            e->available_at_ms = avail[i];
            did[i] = true;
            acked++;
        } else {
            e->rc = rows[i].status == STORE_COMPLETED || rows[i].status == STORE_CLAIMED
                        ? ROOST_OK
                        : ROOST_ELEASEMISMATCH;
        }
    }
    if (rc == ROOST_OK && acked != completed) {
        rc = store_op_fail(st, ROOST_ESTORE, "ack: the batch completed other rows than it read");
    }
    free(rows);
    free(avail);
    free(found);
    free(did);
    return store_op_done(st, rc);
}

int store_leases_agent_seen(struct store *st, const char *tenant_id, const char *agent_id,
                            int64_t now_ms)
{
    return store_op_done(st, seen(st, tenant_id, agent_id, now_ms));
}

/* tenant, agent, consumer, now, expires, seqs ('{4,7}'), tokens ('{"lt_…","lt_…"}'): every
 * candidate of a claim in one statement whatever their count (STORE_CAP_ARRAY_PARAMS: arrays, so
 * one prepared statement), each row with its own lease token. */
STORE_STMT_ONLY(CLAIM_UPDATE_ALL, STORE_SQL_PG,
                "UPDATE inbox i SET status = " ST_CLAIMED ", lease_token = u.tok, consumer = ?3,"
                " claimed_at = ?4, claim_expires_at = ?5, attempts = i.attempts + 1"
                " FROM unnest(?6::bigint[], ?7::text[]) AS u(seq, tok)"
                " WHERE i.tenant_id = ?1 AND i.agent_id = ?2 AND i.seq = u.seq"
                " AND i.status = " ST_PENDING);

static int claim_update_arrays(struct store *st, const char *tenant_id, const char *agent_id,
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
    int rc = ROOST_ENOMEM;
    int64_t changed = 0;
    if (seqs.err == DYNBUF_OK && toks.err == DYNBUF_OK) {
        struct store_param p[] = {
            ARG_T(tenant_id),           ARG_T(agent_id), ARG_T(consumer), ARG_I(now_ms),
            ARG_I(claim_expires_at_ms), ARG_T(seqs.s),   ARG_T(toks.s)};
        rc = store_run(st, CLAIM_UPDATE_ALL, p, NULL, NULL, &changed);
    }
    dynbuf_cleanup(&seqs);
    dynbuf_cleanup(&toks);
    if (rc == ROOST_OK && changed != (int64_t)cands->len) {
        char msg[96];
        snprintf(msg, sizeof msg, "claim: %lld of %zu locked rows updated", (long long)changed,
                 cands->len);
        rc = store_op_fail(st, ROOST_ESTORE, msg);
    }
    return rc;
}

/* Claims every candidate (STORE_CAP_CLAIM_ALL: claim_select left them all this claimer's) and
 * moves them to out: in one statement where the dialect has one (array parameters, or its own
 * claim_update_all), else one CLAIM_UPDATE per row, each of which must claim its row. */
static int claim_all(struct store *st, const char *tenant_id, const char *agent_id,
                     struct store_events *cands, const char *who, int64_t now_ms, int64_t expires,
                     struct store_events *out)
{
    char(*tokens)[STORE_LEASE_TOKEN_LEN + 1] = calloc(cands->len, sizeof *tokens);
    if (tokens == NULL) {
        return ROOST_ENOMEM;
    }
    int rc = ROOST_OK;
    for (size_t i = 0; i < cands->len; i++) {
        if (ids_lease_token(tokens[i]) != 0) {
            rc = store_op_fail(st, ROOST_EINTERNAL, "claim: no randomness for the lease token");
            break;
        }
    }
    const char(*toks)[STORE_LEASE_TOKEN_LEN + 1] =
        (const char(*)[STORE_LEASE_TOKEN_LEN + 1]) tokens;
    bool one = true;
    if (rc == ROOST_OK && store_dialect_has(dialect(st), STORE_CAP_ARRAY_PARAMS)) {
        rc = claim_update_arrays(st, tenant_id, agent_id, cands, toks, who, now_ms, expires);
    } else if (rc == ROOST_OK && dialect(st)->claim_update_all != NULL) {
        rc = dialect(st)->claim_update_all(st, tenant_id, agent_id, cands, toks, who, now_ms,
                                           expires);
    } else {
        one = false;
    }
    for (size_t i = 0; rc == ROOST_OK && !one && i < cands->len; i++) {
        bool claimed = false;
        rc = claim_row(st, tenant_id, agent_id, cands->items[i].seq, tokens[i], who, now_ms,
                       expires, &claimed);
        if (rc == ROOST_OK && !claimed) {
            rc = store_op_fail(st, ROOST_ESTORE, "claim: a selected row was no longer pending");
        }
    }
    for (size_t i = 0; rc == ROOST_OK && i < cands->len; i++) {
        store_event_claimed(&cands->items[i], tokens[i], who, now_ms, expires);
        struct store_event *ev = store_events_push(out);
        if (ev == NULL) {
            rc = ROOST_ENOMEM;
            break;
        }
        *ev = cands->items[i]; /* moves the heap members */
        memset(&cands->items[i], 0, sizeof cands->items[i]);
    }
    free(tokens);
    return rc;
}

/* tenant, agent, now, limit: the agent's pending rows in claim order, whole rows (EVCOLS; the
 * claim's UPDATE then needs no RETURNING). SQLite walks inbox_claim (pending rows only) in claim
 * order, no sort step; the one write lock keeps them the claimer's. MariaDB walks inbox_open by
 * an exact match (ready_priority is the priority of a pending row), never a range: a locking
 * read of a range would also lock, for an instant, the record past its end, here another agent's
 * first pending row; FORCE INDEX spares the optimizer the agent's primary-key and idempotency-key
 * ranges (see ACK): 71 → 61 µs per execution. PostgreSQL walks inbox_claim. With several writers
 * the rows are locked, those another claimer holds skipped (SKIP LOCKED), not waited for. */
STORE_STMT(CLAIM_SELECT,
           "SELECT " EVCOLS
           " FROM inbox WHERE tenant_id = ? AND agent_id = ? AND status = " ST_PENDING
           " AND (expires_at IS NULL OR expires_at > ?)"
           " ORDER BY priority DESC, seq ASC LIMIT ?",
           "SELECT " EVCOLS " FROM inbox FORCE INDEX (inbox_open)"
           " WHERE open_state = " ST_PENDING " AND tenant_id = ? AND agent_id = ?"
           " AND (expires_at IS NULL OR expires_at > ?)"
           " ORDER BY ready_priority DESC, seq ASC LIMIT ? FOR UPDATE SKIP LOCKED",
           "SELECT " EVCOLS
           " FROM inbox WHERE tenant_id = ? AND agent_id = ? AND status = " ST_PENDING
           " AND (expires_at IS NULL OR expires_at > ?)"
           " ORDER BY priority DESC, seq LIMIT ? FOR UPDATE SKIP LOCKED");

static int on_candidate(void *arg, struct store_row *row)
{
    return store_row_push_event(row, arg);
}

/* Appends up to `limit` claimable rows in claim order, stopping before the first row whose
 * payload (column 6) would take the batch past `max_bytes` (*cut then set; the rest stays
 * pending, untouched; on MariaDB it stays locked until the transaction ends, not updated). */
static int claim_select(struct store *st, const char *tenant_id, const char *agent_id,
                        int64_t now_ms, int64_t limit, size_t max_bytes, struct store_events *cands,
                        bool *cut)
{
    struct store_run_opts o = {.max_bytes = max_bytes, .budget_col = 6};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(now_ms), ARG_I(limit)};
    int rc = store_run_opt(st, CLAIM_SELECT, p, &o, on_candidate, cands, NULL);
    *cut = rc == ROOST_OK && o.cut;
    return rc;
}

int store_leases_claim(struct store *st, const char *tenant_id, const char *agent_id, size_t limit,
                       size_t max_bytes, int64_t lease_s, const char *consumer, int64_t now_ms,
                       struct store_events *out, bool *has_more)
{
    const struct store_dialect *d = dialect(st);
    struct store_events cands = {0};
    const char *who = consumer != NULL ? consumer : "";
    int64_t expires = now_ms + lease_s * 1000;
    bool cut = false;
    if (has_more != NULL) {
        *has_more = false;
    }
    if (limit == 0) {
        return store_op_done(st, ROOST_OK);
    }
    /* Candidates first: updating rows under a live walk of the claim index is not defined on
     * every backend. Rows past the byte budget are not touched (no lease, no attempt). */
    int rc =
        claim_select(st, tenant_id, agent_id, now_ms, store_limit(limit), max_bytes, &cands, &cut);
    /* A batch that ended at its limit or its budget may have more claimable at once. */
    bool more = cut || cands.len == limit;
    bool batched = rc == ROOST_OK && cands.len > 0 && store_dialect_has(d, STORE_CAP_CLAIM_ALL);
    if (batched) {
        rc = claim_all(st, tenant_id, agent_id, &cands, who, now_ms, expires, out);
    }
    for (size_t i = 0; !batched && rc == ROOST_OK && i < cands.len; i++) {
        char token[STORE_LEASE_TOKEN_LEN + 1];
        bool claimed = false;
        if (ids_lease_token(token) != 0) {
            rc = store_op_fail(st, ROOST_EINTERNAL, "claim: no randomness for the lease token");
            break;
        }
        rc = claim_row(st, tenant_id, agent_id, cands.items[i].seq, token, who, now_ms, expires,
                       &claimed);
        if (rc != ROOST_OK || !claimed) {
            continue;
        }
        store_event_claimed(&cands.items[i], token, who, now_ms, expires);
        struct store_event *ev = store_events_push(out);
        if (ev == NULL) {
            rc = ROOST_ENOMEM;
            break;
        }
        *ev = cands.items[i]; /* moves the heap members */
        memset(&cands.items[i], 0, sizeof cands.items[i]);
    }
    if (rc == ROOST_OK) {
        rc = seen(st, tenant_id, agent_id, now_ms);
    }
    if (has_more != NULL) {
        *has_more = rc == ROOST_OK && more;
    }
    store_events_cleanup(&cands);
    return store_op_done(st, rc);
}

/* An entry's place in the (tenant, agent) order of a claim batch. */
struct claim_key {
    const char *tenant_id, *agent_id;
    size_t i;
};

static int claim_key_cmp(const void *pa, const void *pb)
{
    const struct claim_key *x = pa, *y = pb;
    int c = strcmp(x->tenant_id, y->tenant_id);
    if (c == 0) {
        c = strcmp(x->agent_id, y->agent_id);
    }
    return c != 0 ? c : (x->i > y->i) - (x->i < y->i);
}

/* The claims of one agent (entries idx[0..m), m >= 2) from one candidate read: the candidates, in
 * claim order, go to the entries in turn, each taking up to its limit and byte budget (the first
 * of an entry always fits, as in claim); candidates nobody took stay locked until the transaction
 * ends but are not touched. Each entry's share is claimed by one update, as claim does. */
static int claim_shared(struct store *st, struct store_claim_entry *entries, const size_t *idx,
                        size_t m, int64_t now_ms)
{
    const char *tenant_id = entries[idx[0]].tenant_id, *agent_id = entries[idx[0]].agent_id;
    struct store_events cands = {0}, share = {0};
    int64_t total = 0;
    bool cut = false;
    for (size_t j = 0; j < m; j++) {
        entries[idx[j]].has_more = false;
        entries[idx[j]].rc = ROOST_OK;
        total += entries[idx[j]].limit > 0 ? store_limit(entries[idx[j]].limit) : 0;
    }
    int rc = total > 0 ? claim_select(st, tenant_id, agent_id, now_ms, total, 0, &cands, &cut)
                       : ROOST_OK;
    size_t k = 0;
    for (size_t j = 0; rc == ROOST_OK && j < m; j++) {
        struct store_claim_entry *e = &entries[idx[j]];
        size_t used = 0, limit = e->limit > 0 ? (size_t)store_limit(e->limit) : 0;
        bool budget = false;
        share.len = 0;
        while (k < cands.len && share.len < limit) {
            const char *p = cands.items[k].payload;
            if (!store_budget_take(&used, share.len, p != NULL ? strlen(p) : 0, e->max_bytes)) {
                budget = true;
                break;
            }
            struct store_event *ev = store_events_push(&share);
            if (ev == NULL) {
                rc = ROOST_ENOMEM;
                break;
            }
            *ev = cands.items[k]; /* moves the heap members */
            memset(&cands.items[k], 0, sizeof cands.items[k]);
            k++;
        }
        /* As claim: more may be claimable at once when the batch ended at its limit or budget. */
        e->has_more = limit > 0 && (budget || share.len == limit);
        if (rc == ROOST_OK && share.len > 0) {
            rc = claim_all(st, tenant_id, agent_id, &share, e->consumer != NULL ? e->consumer : "",
                           now_ms, now_ms + e->lease_s * 1000, e->out);
        }
        store_events_cleanup(&share);
    }
    if (rc == ROOST_OK) {
        rc = seen(st, tenant_id, agent_id, now_ms);
    }
    store_events_cleanup(&cands);
    return rc;
}

/* Claims of distinct agents run one by one (claim); several claims of one agent share their
 * candidate read (claim_shared), which needs STORE_CAP_CLAIM_ALL. */
int store_leases_claim_batch(struct store *st, struct store_claim_entry *entries, size_t n,
                             int64_t now_ms)
{
    struct claim_key *keys = malloc((n ? n : 1) * sizeof *keys);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (keys == NULL || idx == NULL) {
        free(keys);
        free(idx);
        return store_op_done(st, ROOST_ENOMEM);
    }
    for (size_t i = 0; i < n; i++) {
        keys[i] = (struct claim_key){entries[i].tenant_id, entries[i].agent_id, i};
    }
    qsort(keys, n, sizeof *keys, claim_key_cmp);
    for (size_t i = 0; i < n; i++) {
        idx[i] = keys[i].i;
    }
    free(keys);
    int rc = ROOST_OK;
    for (size_t a = 0; rc == ROOST_OK && a < n;) {
        size_t b = a + 1;
        while (b < n && strcmp(entries[idx[a]].tenant_id, entries[idx[b]].tenant_id) == 0 &&
               strcmp(entries[idx[a]].agent_id, entries[idx[b]].agent_id) == 0) {
            b++;
        }
        if (b - a >= 2 && store_dialect_has(dialect(st), STORE_CAP_CLAIM_ALL)) {
            rc = claim_shared(st, entries, idx + a, b - a, now_ms);
        } else {
            for (size_t j = a; j < b; j++) {
                struct store_claim_entry *e = &entries[idx[j]];
                e->rc = store_leases_claim(st, e->tenant_id, e->agent_id, e->limit, e->max_bytes,
                                           e->lease_s, e->consumer, now_ms, e->out, &e->has_more);
                if (e->rc == ROOST_ERETRY) {
                    rc = ROOST_ERETRY;
                    break;
                }
            }
        }
        a = b;
    }
    free(idx);
    return store_op_done(st, rc);
}

/* The event under a lease that `lease_token` must hold now (fencing, DESIGN §4.3). */
static int lease_held(struct store *st, const char *tenant_id, const char *agent_id,
                      const char *event_id, const char *lease_token, struct store_lease_row *row)
{
    bool found = false;
    int rc = lease_find(st, tenant_id, agent_id, event_id, row, &found);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (!found) {
        return ROOST_EEVENTNOTFOUND;
    }
    return row->status == STORE_CLAIMED && store_lease_token_eq(row, lease_token)
               ? ROOST_OK
               : ROOST_ELEASEMISMATCH;
}

int store_leases_ack(struct store *st, const char *tenant_id, const char *agent_id,
                     const char *event_id, const char *lease_token, int64_t now_ms,
                     int64_t *available_at_ms)
{
    struct store_lease_row row;
    bool acked = false, found = false;
    if (available_at_ms != NULL) {
        *available_at_ms = 0;
    }
    int rc =
        ack_update(st, tenant_id, agent_id, event_id, lease_token, now_ms, &acked, available_at_ms);
    if (rc != ROOST_OK || acked) {
        return store_op_done(st, rc);
    }
    /* Nothing changed: tell a repeated ack (the token is kept on completion), a stale token and
     * an unknown event apart. */
    if ((rc = lease_find(st, tenant_id, agent_id, event_id, &row, &found)) == ROOST_OK) {
        rc = !found ? ROOST_EEVENTNOTFOUND
             : row.status == STORE_COMPLETED && store_lease_token_eq(&row, lease_token)
                 ? ROOST_OK
                 : ROOST_ELEASEMISMATCH;
    }
    return store_op_done(st, rc);
}

int store_leases_release(struct store *st, const char *tenant_id, const char *agent_id,
                         const char *event_id, const char *lease_token,
                         enum store_release_reason reason, int64_t delay_s, const char *error,
                         int max_attempts, int64_t now_ms, struct store_touches *touches,
                         enum store_status *new_status)
{
    struct store_lease_row row;
    bool changed = false;
    int rc = lease_held(st, tenant_id, agent_id, event_id, lease_token, &row);
    if (rc != ROOST_OK) {
        return store_op_done(st, rc);
    }
    /* Poison quarantines at once; a transient failure once the attempts are used up. A shutdown
     * counts nothing, so it never quarantines. */
    enum store_status to = STORE_PENDING;
    int64_t available_at = now_ms;
    if (reason == STORE_RELEASE_POISON ||
        (reason == STORE_RELEASE_TRANSIENT && store_lease_exhausted(row.attempts, max_attempts))) {
        to = STORE_QUARANTINED;
    } else if (delay_s > 0) {
        to = STORE_SCHEDULED;
        available_at = now_ms + delay_s * 1000;
    }
    int nack = reason == STORE_RELEASE_TRANSIENT ? 1 : 0;
    rc = release_update(st, tenant_id, agent_id, row.seq, lease_token, to, available_at, nack,
                        error, &changed);
    if (rc == ROOST_OK && !changed) {
        rc = ROOST_ELEASEMISMATCH;
    }
    if (rc == ROOST_OK && new_status != NULL) {
        *new_status = to;
    }
    if (rc == ROOST_OK && to == STORE_PENDING) {
        rc = store_touch(st, tenant_id, agent_id, now_ms, touches);
    }
    return store_op_done(st, rc);
}

int store_leases_extend(struct store *st, const char *tenant_id, const char *agent_id,
                        const char *event_id, const char *lease_token, int64_t lease_s,
                        int64_t max_total_s, int64_t now_ms, int64_t *claim_expires_at_ms)
{
    struct store_lease_row row;
    bool changed = false;
    int rc = lease_held(st, tenant_id, agent_id, event_id, lease_token, &row);
    if (rc == ROOST_OK && row.claim_expires_at_ms <= now_ms) {
        rc = ROOST_ELEASEMISMATCH; /* expired: the scavenger may hand it out again */
    }
    if (rc != ROOST_OK) {
        return store_op_done(st, rc);
    }
    /* The cap counts from the claim, so extending forever is impossible. */
    int64_t want = now_ms + lease_s * 1000;
    int64_t cap = row.claimed_at_ms + max_total_s * 1000;
    int64_t next = want < cap ? want : cap;
    if (next <= row.claim_expires_at_ms) {
        if (claim_expires_at_ms != NULL) {
            *claim_expires_at_ms = row.claim_expires_at_ms;
        }
        return store_op_done(st, ROOST_ELEASECAP);
    }
    rc = extend_update(st, tenant_id, agent_id, row.seq, lease_token, next, &changed);
    if (rc == ROOST_OK && !changed) {
        rc = ROOST_ELEASEMISMATCH;
    }
    if (rc == ROOST_OK && claim_expires_at_ms != NULL) {
        *claim_expires_at_ms = next;
    }
    return store_op_done(st, rc);
}

/* consumer NULL releases every lease of the agent; "" those claimed without a consumer id. */
int store_leases_release_all(struct store *st, const char *tenant_id, const char *agent_id,
                             const char *consumer, int64_t now_ms, size_t *released,
                             struct store_touches *touches)
{
    *released = 0;
    int rc = release_leases(st, tenant_id, agent_id, consumer, released);
    if (rc == ROOST_OK && *released > 0) {
        rc = store_touch(st, tenant_id, agent_id, now_ms, touches);
    }
    return store_op_done(st, rc);
}
