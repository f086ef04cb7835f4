/* SPDX-License-Identifier: MIT */
/* What the store's operations (store_ops.h, one subject file each) share: the dialect every
 * statement runs through (struct store_dialect: driver mechanics, facts and capabilities; the
 * statements themselves are descriptors beside their operation, store_stmt.h), the rows they pass
 * around, and the lifecycle's small rules and helpers (the agent's head, touches, the end of an
 * operation). Internal to src/store/. */
#ifndef ROOST_STORE_LIFECYCLE_H
#define ROOST_STORE_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_stmt.h"

/* The lease columns of one inbox row, as fencing needs them. */
struct store_lease_row {
    int64_t seq;
    enum store_status status;
    char lease_token[STORE_LEASE_TOKEN_LEN + 1]; /* "" when none */
    int attempts;
    int64_t claimed_at_ms;
    int64_t claim_expires_at_ms;
};

/* An expired lease the scavenger read: its update is conditional on this token. */
struct store_lease_ref {
    char tenant_id[STORE_ID_MAX + 1];
    char agent_id[STORE_ID_MAX + 1];
    int64_t seq;
    char lease_token[STORE_LEASE_TOKEN_LEN + 1];
    int attempts;
    char consumer[STORE_ID_MAX + 1]; /* who holds the lease, "" when claimed without one */
};
struct store_lease_refs {
    struct store_lease_ref *items;
    size_t len, cap;
};
/* Appends a zeroed entry and returns it, or NULL when out of memory. */
struct store_lease_ref *store_lease_refs_push(struct store_lease_refs *list);

struct store_agent_ref {
    char tenant_id[STORE_ID_MAX + 1];
    char agent_id[STORE_ID_MAX + 1];
};

/* What retention decides on, per row, in seq order. */
struct store_retention_row {
    int64_t seq;
    enum store_status status;
    int64_t completed_at_ms; /* 0 = never finished */
    int64_t created_at_ms;
};

/* One inbox row to insert (publish). */
struct store_new_row {
    const char *tenant_id;
    const char *agent_id;
    int64_t seq;
    const char *event_id;
    enum store_status status; /* scheduled or pending */
    int priority;
    const char *correlation_id;  /* NULL = none */
    const char *idempotency_key; /* NULL = none */
    const char *payload;
    int64_t created_at_ms;
    int64_t available_at_ms;
    int64_t expires_at_ms; /* 0 = never */
};

/* Runs a descriptor's statement through the store's dialect (struct store_dialect.run). */
#define store_run(st, stmt, params, on_row, arg, changed)                                          \
    ((st)->dialect->run((st), &(stmt), (params), sizeof(params) / sizeof((params)[0]), NULL,       \
                        (on_row), (arg), (changed)))
/* The same, for a statement without parameters. */
#define store_run0(st, stmt, on_row, arg, changed)                                                 \
    ((st)->dialect->run((st), &(stmt), NULL, 0, NULL, (on_row), (arg), (changed)))
/* The same with run options (struct store_run_opts: a byte budget, a time bound). */
#define store_run_opt(st, stmt, params, opts, on_row, arg, changed)                                \
    ((st)->dialect->run((st), &(stmt), (params), sizeof(params) / sizeof((params)[0]), (opts),     \
                        (on_row), (arg), (changed)))

/* A backend's primitives. Each returns ROOST_OK or the store error of its statement
 * (ROOST_ERETRY, ROOST_ESTORE, ROOST_ENOMEM...), never a lifecycle answer: those are decided by
 * the caller. Limits arrive already bounded (store_limit). */
struct store_dialect {
    /* ---- the driver: connection, transactions, error detail ---- */
    const char *scheme;       /* the URL scheme this dialect opens ("sqlite" for sqlite://...) */
    const char *scheme_alias; /* another scheme it opens (postgresql://), or NULL */
    /* The file a data directory holds when no store URL is configured (store_url_default);
     * NULL: the dialect is a server and needs its URL. */
    const char *default_file;
    /* Optional (NULL: one node, nothing to fail over): the nodes of this process's clusters
     * (store_ha_list). */
    size_t (*ha_list)(struct store_ha_info *out, size_t max);
    int (*open)(const char *url, const struct store_options *opt, struct store **out);
    /* Detail of the last failed open on the calling thread ("" when none). */
    const char *(*open_error)(void);
    void (*close)(struct store *st);
    int (*migrate)(struct store *st);
    const char *(*errmsg)(struct store *st);
    bool (*ping)(struct store *st);
    int (*begin)(struct store *st);
    int (*commit)(struct store *st);
    int (*rollback)(struct store *st);
    int (*savepoint)(struct store *st);
    int (*savepoint_release)(struct store *st);
    int (*savepoint_rollback)(struct store *st);
    /* The change-log tailer (STORE_CAP_CHANGE_LOG); NULL without one. */
    int (*tail)(struct store *st, struct store_tail_pos *pos, int64_t now_ms,
                struct store_touches *touches);

    /* Optional (NULL: every statement outside a transaction is its own snapshot, as at READ
     * COMMITTED): a read of several statements that must see one snapshot opens it here (*opened
     * set when it did: a transaction already open is the snapshot), and ends it with read_end,
     * which passes rc through (or the error of ending it). */
    int (*read_begin)(struct store *st, bool *opened);
    int (*read_end)(struct store *st, bool opened, int rc);

    /* ---- statements and primitives ---- */
    /* Ends every lifecycle operation (SQLite: resets the cached statements, so none pins a
     * snapshot). NULL = nothing to do. */
    void (*done)(struct store *st);
    /* Records the detail of a failure the lifecycle found (store_errmsg shows it). */
    void (*set_error)(struct store *st, const char *msg);
    /* The dialect's column of every statement descriptor (store_stmt.h). */
    enum store_sql_col sql_col;
    /* What the dialect can do or is (enum store_cap), for an operation to ask instead of testing
     * which backend it runs on. */
    unsigned caps;
    /* Error classification: the last statement failed (ROOST_ESTORE) on a unique key, which
     * some operations take as their answer (a duplicate key id, a replayed nonce). */
    bool (*dup_key)(struct store *st);
    /* Runs statement `stmt` (its SQL in this dialect's column), prepared once per connection and
     * reused: params bound in order; each result row goes to on_row (NULL: rows ignored);
     * *changed (may be NULL) gets the rows it changed. The statement is reset when it returns (no
     * snapshot stays pinned). ROOST_EINTERNAL when the descriptor has no SQL for this dialect. */
    int (*run)(struct store *st, const struct store_stmt *stmt, const struct store_param *p,
               size_t np, struct store_run_opts *o, store_row_fn on_row, void *arg,
               int64_t *changed);
    /* STORE_CAP_INSERT_ID: the value the last statement handed back (MySQL: LAST_INSERT_ID(expr),
     * PostgreSQL: the first value of a statement run without a row callback). */
    int64_t (*insert_id)(struct store *st);

    /* ---- agents and touches ---- */
    /* STORE_CAP_CHANGE_LOG: records the agent's new head in the change log other nodes tail,
     * written with this transaction's COMMIT. */
    int (*change_log)(struct store *st, const char *tenant_id, const char *agent_id, int64_t head,
                      int64_t now_ms);

    /* ---- publish (store_publish.c) ---- */
    /* Optional (NULL: the statements of store_publish.c). A batch's rows in one round trip
     * (MySQL: the statements' shape depends on the rows, so they are built as text). Allocates
     * the seqs of rows[0..n) and inserts them all, creating agents as needed (the tenants exist).
     * The rows come sorted by (tenant_id, agent_id), the order their agents are row-locked in,
     * until COMMIT (DESIGN §4.2); the rows of one agent take consecutive seqs in the order given
     * (rows[i].seq set). */
    int (*insert_rows)(struct store *st, struct store_new_row *rows, size_t n, int64_t now_ms);
    /* Optional (NULL: never). In a transaction alone (struct store.alone) whose request writes
     * nothing after this row: queues the agent's seq allocation, the row and its change-log entry
     * to go out with the COMMIT, and adds the agent to touches. Once the COMMIT answered, *seq
     * and that touch's head get the row's seq (the pointers must live until then). *queued false:
     * nothing was done (MySQL: on Galera), the caller writes the row itself. */
    int (*insert_row_late)(struct store *st, const struct store_new_row *row, int64_t now_ms,
                           int64_t *seq, struct store_touches *touches, bool *queued);

    /* ---- leases ---- */
    /* Optional (NULL: with STORE_CAP_ARRAY_PARAMS one CLAIM_UPDATE_ALL, else one CLAIM_UPDATE
     * per candidate, store_leases.c). Claims every candidate in one statement built for their
     * count (MySQL; STORE_CAP_CLAIM_ALL: each is still pending); cands->items[i] gets tokens[i].
     * Any other outcome is an error. */
    int (*claim_update_all)(struct store *st, const char *tenant_id, const char *agent_id,
                            struct store_events *cands,
                            const char (*tokens)[STORE_LEASE_TOKEN_LEN + 1], const char *consumer,
                            int64_t now_ms, int64_t claim_expires_at_ms);
    /* Optional (NULL: ack_batch acks entry by entry). Locks and reads the lease columns of
     * every entry's event (rows[i], *available_at_ms of rows[i] in avail[i]; found[i] false when
     * the tenant and agent have no such event), then completes, at now_ms, those claimed under
     * their entry's token: the same rule the caller applies to the rows read. *completed gets
     * the number of rows the update completed. */
    int (*ack_rows)(struct store *st, const struct store_ack_entry *acks, size_t n, int64_t now_ms,
                    struct store_lease_row *rows, int64_t *avail, bool *found, size_t *completed);

    /* ---- retention (store_scheduler.c) ---- */
    /* Opens the pass's savepoint (and marks where the pass's change-log rows begin). On failure
     * it leaves nothing open. */
    int (*retention_begin)(struct store *st);
    /* Releases the savepoint (rc ROOST_OK) or rolls the pass back to it (its change-log rows
     * with it); passes rc through. */
    int (*retention_end)(struct store *st, int rc);
};

/* True when the dialect has every capability in `caps`. */
static inline bool store_dialect_has(const struct store_dialect *d, unsigned caps)
{
    return (d->caps & caps) == caps;
}

/* The lifecycle rules, for the few places a backend needs one directly. */

/* True when lease_token is the row's current (non-empty) token. */
bool store_lease_token_eq(const struct store_lease_row *row, const char *lease_token);
/* A lease gives up after max_attempts claims (0 = never): where it goes instead of pending. */
bool store_lease_exhausted(int attempts, int max_attempts);
/* The ROOST_EGONE rule of inbox_read: the cursor lies below what retention purged. */
bool store_cursor_gone(int64_t after_cursor, int64_t purged_through_seq);
/* Sets the claim fields of a row just claimed, as the claim statement wrote them (for a dialect
 * whose UPDATE cannot return the row). */
void store_event_claimed(struct store_event *ev, const char *token, const char *consumer,
                         int64_t now_ms, int64_t claim_expires_at_ms);

/* The agent's head and watermark, both 0 for an agent without a row. */
int store_agent_head(struct store *st, const char *tenant_id, const char *agent_id, int64_t *head,
                     int64_t *purged);
/* The agent's head moved or its claimable set changed: add the touch (touches may be NULL), and
 * on a backend with a change log, write its row in this transaction. */
int store_changed(struct store *st, const char *tenant_id, const char *agent_id, int64_t head,
                  int64_t now_ms, struct store_touches *touches);

/* Every operation ends here (rc passes through): the dialect's done. */
int store_op_done(struct store *st, int rc);
/* Records msg as the store's error detail and returns rc. */
int store_op_fail(struct store *st, int rc, const char *msg);
/* The agent's claimable set or head changed: its current head goes to the touches (and the
 * change log). Without touches and a change log nobody would hear of it, so nothing is read. */
int store_touch(struct store *st, const char *tenant_id, const char *agent_id, int64_t now_ms,
                struct store_touches *touches);

/* The lifecycle operations (semantics in store.h). */
int store_lifecycle_head(struct store *st, const char *tenant_id, const char *agent_id,
                         int64_t *head);

#endif
