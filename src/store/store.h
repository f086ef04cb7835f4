/* SPDX-License-Identifier: MIT */
/* The store: domain operations on the durable inbox, as a vtable with one implementation per
 * backend (sqlite://, mysql://). Semantics are fixed here and proven by the conformance suite in
 * tests/store/. The lifecycle operations are written once (store_lifecycle.c) over each backend's
 * SQL dialect (store_sqlite.c, store_mysql.c); only the SQL and driver glue differ per backend.
 *
 * Threading: a struct store is one database connection, used by one thread at a time.
 * Time: every operation takes `now_ms` (Unix milliseconds) from the caller, so the scheduler and
 * the tests decide what "now" is; backends never read the clock. Transactions: write operations run
 * inside an explicit transaction opened by the caller (store_begin .. store_commit), usually shared
 * by many requests (group commit); one failing request is rolled back alone (workers.c runs the
 * group again without it, each request in a savepoint). Requests of a group may also share
 * statements (the optional batch operations below). Read operations may run outside a transaction;
 * the backend gives each read operation a consistent snapshot. */
#ifndef ROOST_STORE_H
#define ROOST_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/limits.h"
#include "roost/roost_error.h"

#define STORE_ID_MAX ROOST_ID_MAX /* tenant_id, agent_id, consumer: [A-Za-z0-9._-]{1,128} */
#define STORE_EVENT_ID_LEN 30     /* "evt_" + 26-char ULID */
#define STORE_LEASE_TOKEN_LEN 29  /* "lt_" + 26 Crockford base32 chars (128 random bits) */
#define STORE_ERROR_TEXT_MAX 4096
#define STORE_SHORT_TEXT_MAX 256 /* correlation_id, idempotency_key */

enum store_status {
    STORE_SCHEDULED = 0, /* delayed: becomes pending at available_at */
    STORE_PENDING,
    STORE_CLAIMED,
    STORE_COMPLETED,
    STORE_QUARANTINED,
    STORE_EXPIRED,
};
const char *store_status_name(enum store_status s);

enum store_release_reason {
    STORE_RELEASE_TRANSIENT = 0, /* counts a nack */
    STORE_RELEASE_SHUTDOWN,      /* counts nothing */
    STORE_RELEASE_POISON,        /* quarantine now */
};

/* One inbox row as the API shows it. Strings are NUL-terminated; the heap members are owned by
 * the event and released by store_event_cleanup(). */
struct store_event {
    char event_id[STORE_EVENT_ID_LEN + 1];
    char agent_id[STORE_ID_MAX + 1];
    int64_t seq;
    enum store_status status;
    int priority;
    char *correlation_id; /* NULL when absent */
    char *payload;        /* compact JSON object text; NULL once completed */
    int64_t created_at_ms;
    int64_t available_at_ms;
    int64_t expires_at_ms; /* 0 = never */
    /* claim fields (meaningful when status is claimed or the event was claimed before) */
    char lease_token[STORE_LEASE_TOKEN_LEN + 1]; /* "" when none */
    char consumer[STORE_ID_MAX + 1];
    int64_t claimed_at_ms;
    int64_t claim_expires_at_ms;
    int attempts;
    /* quarantine/audit fields */
    int timeouts;
    int nacks;
    char *last_error; /* NULL when none */
    int64_t completed_at_ms;
};
void store_event_cleanup(struct store_event *ev);

/* A growable list of events; store ops append, the caller frees with store_events_cleanup(). */
struct store_events {
    struct store_event *items;
    size_t len, cap;
};
void store_events_cleanup(struct store_events *list);
/* Appends a zeroed event and returns it, or NULL when out of memory. */
struct store_event *store_events_push(struct store_events *list);

/* An agent whose head or claimable set changed in a committed transaction: the server pings its
 * subscribers and wakes its long-pollers after COMMIT. */
struct store_touch {
    char tenant_id[STORE_ID_MAX + 1];
    char agent_id[STORE_ID_MAX + 1];
    int64_t head;
};
/* When the scavenger quarantines an expired lease instead of returning it to pending: once its
 * event has had max_attempts claims (claim.max_attempts; 0 = never), or, for a lease held by
 * `consumer` (NULL = no such consumer), consumer_max_attempts claims. The webhook dispatcher's
 * leases (consumer "roostd-webhooks") follow webhooks.retry_schedule_s this way: a delivery cut
 * short by a crash or a stall counts as one attempt of that schedule, like a failed one. */
struct store_scavenge_limits {
    int max_attempts;
    const char *consumer;
    int consumer_max_attempts;
};

struct store_touches {
    struct store_touch *items;
    size_t len, cap;
    /* Open-addressing index over items (slot = item index + 1, 0 = empty), so a fan-out to 10k
     * agents dedups in O(n), not O(n^2). */
    uint32_t *slots;
    size_t n_slots; /* a power of two, at least twice cap */
};
/* Records (tenant, agent, head); keeps one entry per agent (the highest head). */
int store_touches_add(struct store_touches *t, const char *tenant_id, const char *agent_id,
                      int64_t head);
void store_touches_cleanup(struct store_touches *t);

/* ---- publish ---- */

struct store_publish_item {
    const char *const *recipients; /* agent ids, validated by the caller; duplicates allowed */
    size_t n_recipients;
    const char *payload; /* compact JSON object text, NUL-terminated */
    int priority;
    const char *correlation_id;  /* NULL = none */
    const char *idempotency_key; /* NULL = none; unique per (tenant, agent) */
    int64_t available_at_ms;     /* <= now_ms means available at once */
    int64_t expires_at_ms;       /* 0 = never */
    const char *state_patch; /* JSON Merge Patch (object text) applied to each recipient, or NULL */
};

/* One recipient of a publish item and its position in the item's list. */
struct store_recipient {
    const char *agent_id;
    size_t idx;
};
/* The item's recipients sorted by agent id (then position), the order backends lock agents in
 * (DESIGN §4.2), so a recipient listed twice sits next to its first mention. *buf grows as
 * needed (caller frees). ROOST_OK or ROOST_ENOMEM. */
int store_recipients_sort(const struct store_publish_item *it, struct store_recipient **buf,
                          size_t *cap);

struct store_publish_req {
    const char *tenant_id;
    const struct store_publish_item *items;
    size_t n_items;
    int64_t now_ms;
    /* Largest agent state a state_patch may leave (bytes of its JSON text); 0 = no bound. A patch
     * that would pass it fails the publish with ROOST_ESTATETOOLARGE. */
    size_t max_state_bytes;
    /* Nothing the request's job does after this publish reads its rows or depends on its seqs
     * before the COMMIT. With the transaction alone (struct store.alone) the store may then send
     * a one-row publish with the COMMIT (MySQL: the whole publish in one round trip) and fill in
     * its seq and its touch's head once it committed. */
    bool last_write;
};

/* One inbox row written (or found again through its idempotency key). */
struct store_published {
    char event_id[STORE_EVENT_ID_LEN + 1];
    char agent_id[STORE_ID_MAX + 1];
    int64_t seq;
    bool duplicate; /* an earlier publish with the same idempotency_key; nothing was written */
};

/* ---- batches: the requests of one group commit sharing statements ---- */

/* One publish request of a batch: its own request, output (one entry per (item, recipient), as
 * publish) and touches; rc is its answer. */
struct store_publish_entry {
    const struct store_publish_req *req;
    struct store_published *out;
    struct store_touches *touches;
    int rc;
};

/* One ack of a batch, as the arguments of ack; rc and available_at_ms are its answers. */
struct store_ack_entry {
    const char *tenant_id;
    const char *agent_id;
    const char *event_id;
    const char *lease_token;
    int64_t available_at_ms;
    int rc;
};

/* One claim of a batch, as the arguments of claim; out (caller's, appended to), has_more and rc
 * are its answers. */
struct store_claim_entry {
    const char *tenant_id;
    const char *agent_id;
    size_t limit;
    size_t max_bytes;
    int64_t lease_s;
    const char *consumer;
    struct store_events *out;
    bool has_more;
    int rc;
};

/* ---- reads ---- */

/* A page's byte budget (max_bytes of inbox_read and claim, limits.max_response_bytes): an event
 * weighs its payload's length plus STORE_EVENT_BASE_BYTES for its other fields as the API renders
 * them. A page stops before the event that would take it past the budget, but always holds at
 * least one event, so a single event of the largest payload is still deliverable. */
#define STORE_EVENT_BASE_BYTES 512
/* Adds an event of payload_len bytes to a page of `n` events weighing *used and returns true, or
 * returns false (nothing added) when it does not fit. max_bytes 0 = no budget. */
bool store_budget_take(size_t *used, size_t n, size_t payload_len, size_t max_bytes);

struct store_inbox_page {
    struct store_events events;
    int64_t next_cursor; /* the last seq returned, or after_cursor when none */
    bool has_more;
    int64_t head;
    int64_t oldest_cursor; /* purged_through_seq; set with ROOST_EGONE */
};

struct store_agent_stats {
    char agent_id[STORE_ID_MAX + 1];
    int64_t head;
    int64_t purged_through_seq;
    int64_t pending;
    int64_t scheduled;
    int64_t claimed;
    int64_t quarantined;
    int64_t oldest_pending_ms; /* available_at of the oldest pending event, 0 when none */
    int64_t last_seen_ms;      /* agents.last_seen_at (claims, at most once a minute), 0 never */
};

/* Order of the admin agents listing. */
enum store_agents_sort {
    STORE_SORT_AGENT = 0, /* agent_id ascending; pages continue after an agent_id */
    STORE_SORT_DEPTH,     /* pending descending, then agent_id; pages continue at an offset */
    STORE_SORT_AGE,       /* oldest pending first (agents without pending last), then agent_id */
};

/* ---- metrics ---- */

/* Per-tenant totals over the unfinished rows. */
struct store_metrics_tenant {
    char tenant_id[STORE_ID_MAX + 1];
    int64_t pending, scheduled, claimed, quarantined;
    int64_t oldest_pending_ms; /* available_at of the oldest pending event, 0 when none */
    int64_t oldest_claimed_ms; /* claimed_at of the oldest claimed event, 0 when none */
};

struct store_metrics_agent {
    char tenant_id[STORE_ID_MAX + 1];
    char agent_id[STORE_ID_MAX + 1];
    int64_t pending;
};

/* Caller-allocated arrays with their capacities; the op fills n_* and sets `truncated` when a
 * tenant did not fit (its numbers are then missing, never wrong). */
struct store_metrics_snapshot {
    struct store_metrics_tenant *tenants;
    size_t max_tenants, n_tenants;
    struct store_metrics_agent *agents; /* the top agents by pending, over every tenant */
    size_t max_agents, n_agents;
    bool truncated;
};

/* For backends filling a snapshot: adds one status's totals of a tenant (count, and for pending
 * and claimed the oldest available_at / claimed_at), creating the tenant's entry when missing; a
 * tenant that does not fit sets `truncated`. */
void store_metrics_add(struct store_metrics_snapshot *snap, const char *tenant_id,
                       enum store_status status, int64_t count, int64_t oldest_ms);
/* Orders the tenants by id (backends call it once their totals are in). */
void store_metrics_sort_tenants(struct store_metrics_snapshot *snap);

/* ---- retention ---- */

/* Called for every row retention is about to delete that is worth archiving (not completed),
 * inside the deleting transaction: a non-zero return rolls the batch back. */
typedef int (*store_archive_fn)(void *ctx, const char *tenant_id, const struct store_event *ev);

struct store_retention_req {
    int64_t now_ms;
    int64_t completed_s; /* completed/expired rows older than this (by completed_at) go */
    int64_t max_age_s;   /* any row older than this (by created_at) is archived and goes */
    size_t batch;        /* at most this many rows per call */
    store_archive_fn archive;
    void *archive_ctx;
};

/* The retention rule, the same for every backend: a row may go when it finished (completed or
 * expired) more than completed_s ago, or was created more than max_age_s ago (max_age_s 0: never).
 * completed_at_ms is 0 when the row never finished. */
bool store_retention_deletable(const struct store_retention_req *req, enum store_status status,
                               int64_t completed_at_ms, int64_t created_at_ms);

struct store_retention_result {
    size_t deleted;
    size_t archived;
    bool more; /* the batch was full: call again */
};

/* ---- signature keys and nonces (DESIGN §6.2) ---- */

#define STORE_KEY_ALG_MAX 32
#define STORE_KEY_MATERIAL_MAX 16384 /* PEM / JWK text, or the base64 HMAC secret */
#define STORE_NONCE_MAX 256

/* A request-signing key registered by a tenant's operator. agent_id is the agent the key signs
 * for, or "*" for a producer key (publish and other agent-less routes). */
struct store_key {
    char key_id[STORE_ID_MAX + 1];
    char agent_id[STORE_ID_MAX + 1];
    char alg[STORE_KEY_ALG_MAX + 1]; /* RFC 9421 name: "ed25519", "hmac-sha256", ... */
    char *material;                  /* owned; public key PEM, or base64 HMAC secret */
    int64_t created_at_ms;
    int64_t revoked_at_ms; /* 0 = active */
};
void store_key_cleanup(struct store_key *k);

/* ---- devices (RFC 8628 device login) and their refresh-token families (store_devices.c) ---- */
/* Codes and tokens reach the store only as SHA-256 hex. */
#define STORE_DEVICE_ID_MAX 64
#define STORE_DEVICE_NAME_MAX 128
#define STORE_DEVICE_ADDR_MAX 64
#define STORE_DEVICE_SCOPE_MAX 1024
#define STORE_USER_CODE_MAX 16
#define STORE_HASH_HEX 64 /* SHA-256 in hex */

enum store_device_status {
    STORE_DEVICE_PENDING = 0,
    STORE_DEVICE_APPROVED = 1,
    STORE_DEVICE_DENIED = 2,
    STORE_DEVICE_REVOKED = 3,
};

struct store_device {
    char device_id[STORE_DEVICE_ID_MAX + 1]; /* also the refresh-token family */
    char agent_id[STORE_ID_MAX + 1];
    char name[STORE_DEVICE_NAME_MAX + 1];
    char address[STORE_DEVICE_ADDR_MAX + 1];
    char scope_requested[STORE_DEVICE_SCOPE_MAX + 1];
    char scope_granted[STORE_DEVICE_SCOPE_MAX + 1]; /* "" until approved */
    char user_code[STORE_USER_CODE_MAX + 1];
    int status; /* enum store_device_status */
    int64_t code_expires_at_ms;
    int64_t interval_s; /* the polling interval the device must keep (slow_down adds 5) */
    int64_t last_poll_at_ms;
    int64_t created_at_ms;
    int64_t decided_at_ms; /* approved, denied or revoked; 0 = not yet */
    char decided_by[STORE_DEVICE_NAME_MAX + 1];
    char revoked_reason[STORE_DEVICE_NAME_MAX + 1];
    int64_t refresh_gen; /* refresh tokens issued so far (0: the device code is not exchanged) */
    int64_t last_refresh_at_ms;
};

enum store_device_by { STORE_DEVICE_BY_ID, STORE_DEVICE_BY_USER_CODE, STORE_DEVICE_BY_CODE_HASH };

/* ---- tailer ---- */

/* A tailer's position in a backend's change log (MySQL: the roost_changes table, written by every
 * transaction that produces touches, including applications calling roost_publish). Ids are
 * allocated at insert time but become visible at commit, so they appear out of order: every id up
 * to `high` has been reported except those in `gaps`, which are re-checked on every call until
 * STORE_TAIL_GAP_MS have passed (a rolled-back transaction leaves a gap that never fills).
 * Zero-initialise; release with store_tail_pos_cleanup(). */
#define STORE_TAIL_GAP_MS 60000
struct store_tail_gap {
    int64_t id;
    int64_t since_ms; /* now_ms of the call that first missed it */
};
struct store_tail_pos {
    bool started; /* false: the first call only records where the log ends */
    int64_t high; /* the highest id seen */
    /* A backend that is told of commits (PostgreSQL: LISTEN/NOTIFY) reads the log only after
     * news: the news count it last read at, and when it last read. */
    uint64_t wakes;
    int64_t scanned_ms;
    struct store_tail_gap *gaps;
    size_t n_gaps, cap_gaps;
};
void store_tail_pos_cleanup(struct store_tail_pos *pos);

/* ---- the vtable ---- */

struct store;
struct store_source;  /* store_sources.h */
struct store_receipt; /* store_sources.h */

struct store_options {
    int busy_timeout_ms; /* how long to wait for a lock (MySQL: innodb_lock_wait_timeout, >= 1 s) */
    bool synchronous_full; /* SQLite: synchronous=FULL (default) or NORMAL */
    /* MySQL: this process's mark on the change log; its tailer skips the rows it wrote itself
     * (their pings went out at commit). 0 = report every row. */
    int64_t origin;
    /* Time budget of a sorted admin listing (agents_list by depth or age, which ranks every agent
     * of the tenant): past it the call fails with ROOST_ESCANBUDGET instead of holding a
     * connection other tenants' reads wait for. 0 = no budget. */
    int admin_scan_ms;
    /* MySQL URLs with several hosts (a Galera cluster): how long a statement may go unanswered
     * before its node counts as failed, and how long a connection keeps looking for a usable node
     * before the caller gets ROOST_EUNAVAILABLE. 0 = STORE_FAILOVER_TIMEOUT_S. */
    int failover_timeout_s;
};
#define STORE_FAILOVER_TIMEOUT_S 10

/* Where the writes of a store with several database hosts go (MySQL/Galera; see doc/MYSQL.md),
 * one entry per distinct host list this process opened. No credentials. */
struct store_ha_info {
    char hosts[1024];   /* the URL's host list, "h1:3306,h2:3306,h3:3306" */
    char writer[300];   /* the node writes go to now ("host:port"); "" while none is usable */
    uint64_t failovers; /* times the writer moved to another node */
    char why[256];      /* why it last moved (or why none is usable); "" before the first move */
};
/* Fills out[0..max) and returns how many entries exist (may exceed max). Thread-safe. */
size_t store_ha_list(struct store_ha_info *out, size_t max);

/* The operations table: one for every backend (store_ops.c), each entry written once over the
 * store's dialect (store_lifecycle.h), which holds the driver mechanics. */
struct store_ops {
    void (*close)(struct store *st);
    /* Applies numbered migrations not yet applied; idempotent; safe from several processes. */
    int (*migrate)(struct store *st);
    /* Detail of the last failure on this connection (never NULL). */
    const char *(*errmsg)(struct store *st);
    bool (*ping)(struct store *st);

    int (*begin)(struct store *st);
    /* ROOST_OK: committed. ROOST_ERETRY: not committed, certainly (the caller replays the
     * transaction). ROOST_EUNAVAILABLE after the answer to COMMIT was lost and the outcome could
     * not be learnt (MySQL: see doc/MYSQL.md); any other error: not committed. */
    int (*commit)(struct store *st);
    int (*rollback)(struct store *st);
    int (*savepoint)(struct store *st);
    int (*savepoint_release)(struct store *st);
    int (*savepoint_rollback)(struct store *st); /* rolls back to, and releases, the savepoint */

    /* Writes every (item × recipient) row atomically: recipients are locked in sorted order, seq =
     * agent.next_seq++, state_patch merged into agents.state and state_cursor set.
     * out: caller-allocated, one entry per (item, recipient) in request order. Touches get every
     * recipient of a row that is claimable now. ROOST_EPAYLOADTOOLARGE never happens here. */
    int (*publish)(struct store *st, const struct store_publish_req *req,
                   struct store_published *out, struct store_touches *touches);

    /* Optional (NULL: publish per entry; store_publish_batch does that). Runs every entry as
     * publish would, in this transaction, sharing statements between them (MySQL: one multi-row
     * insert for the rows of every entry, their agents locked in one sorted pass). Seqs are
     * allocated as by publish (under the agent's row lock, so commit-ordered and gap-free); the
     * rows of one agent take consecutive seqs in entry order. ROOST_OK: each entry's rc is its
     * answer, and an entry that failed may have left writes in the transaction, so the caller
     * rolls back and runs the others again without it (workers.c does). Any other return: the
     * batch as a whole failed (roll back; ROOST_ERETRY: replay it). */
    int (*publish_batch)(struct store *st, struct store_publish_entry *entries, size_t n);
    /* Optional (NULL: ack per entry; store_ack_batch does that). Every entry as ack would, at
     * now_ms, in one shared statement (MySQL: the rows locked and read, then completed, in one
     * round trip). Returns as publish_batch. */
    int (*ack_batch)(struct store *st, struct store_ack_entry *entries, size_t n, int64_t now_ms);
    /* Optional (NULL: claim per entry; store_claim_batch does that). Every entry as claim would,
     * at now_ms; the claims of one agent share one candidate read (MySQL: one `SELECT … SKIP
     * LOCKED` for their summed limits), split in claim order, each entry taking up to its limit
     * and byte budget, so the entries' sets are disjoint. Returns as publish_batch. */
    int (*claim_batch)(struct store *st, struct store_claim_entry *entries, size_t n,
                       int64_t now_ms);

    /* Events with seq > after_cursor in seq order (every status; payload NULL once completed).
     * A page never skips a seq: where a lower seq is not visible yet (MySQL: committing), the page
     * ends before it and head is capped there, as a slightly earlier snapshot would show.
     * ROOST_EGONE (page->oldest_cursor set) when after_cursor < purged_through_seq. An agent that
     * never existed reads as empty with head 0. The page also ends at the byte budget `max_bytes`
     * (see store_budget_take; has_more is then set). */
    int (*inbox_read)(struct store *st, const char *tenant_id, const char *agent_id,
                      int64_t after_cursor, size_t limit, size_t max_bytes,
                      struct store_inbox_page *page);

    /* The event the next claim would take (the claim's rule: pending and unexpired, highest
     * priority, then lowest seq), payload included, nothing changed; *found false (and *out
     * zeroed) when none. The caller cleans *out up with store_event_cleanup. */
    int (*inbox_peek)(struct store *st, const char *tenant_id, const char *agent_id, int64_t now_ms,
                      struct store_event *out, bool *found);

    /* Claims up to `limit` pending, unexpired events: highest priority first, then lowest seq.
     * Each gets status claimed, a fresh lease token, attempts+1, claim_expires_at = now+lease_s,
     * claimed_at = now, consumer recorded ("" allowed). Sets agents.last_seen_at = now when it is
     * unset or more than a minute old (so a busy agent costs one extra row write a minute).
     * The batch also ends at the byte budget `max_bytes` (see store_budget_take): the events past
     * it are not touched (no lease, no attempt). *has_more (may be NULL) is set when the batch
     * ended at `limit` or at the budget, so more may be claimable at once. */
    int (*claim)(struct store *st, const char *tenant_id, const char *agent_id, size_t limit,
                 size_t max_bytes, int64_t lease_s, const char *consumer, int64_t now_ms,
                 struct store_events *out, bool *has_more);

    /* Completes a claimed event holding `lease_token`: status completed, payload nulled.
     * Repeating the ack of a completed event with its last token is ROOST_OK.
     * ROOST_EEVENTNOTFOUND: no such event for this agent; ROOST_ELEASEMISMATCH: other token or
     * state. *available_at_ms (may be NULL) gets the event's available_at when this call completed
     * it, 0 for a repeated ack: the delivery-latency metric (available_at → ack). */
    int (*ack)(struct store *st, const char *tenant_id, const char *agent_id, const char *event_id,
               const char *lease_token, int64_t now_ms, int64_t *available_at_ms);

    /* Releases a lease: transient → nacks+1, shutdown → nothing counted, poison → quarantined.
     * Transient/shutdown: pending (delay_s = 0) or scheduled at now+delay_s; quarantined instead
     * when attempts >= max_attempts and reason is transient. `error` (may be NULL) → last_error.
     * Touches the agent when the event became pending. *new_status (may be NULL) gets the status
     * the event went to (pending, scheduled or quarantined). Errors as ack. */
    int (*release)(struct store *st, const char *tenant_id, const char *agent_id,
                   const char *event_id, const char *lease_token, enum store_release_reason reason,
                   int64_t delay_s, const char *error, int max_attempts, int64_t now_ms,
                   struct store_touches *touches, enum store_status *new_status);

    /* claim_expires_at = min(now + lease_s, claimed_at + max_total_s); ROOST_ELEASECAP when that
     * does not move the expiry forward. Errors as ack; an expired lease is ROOST_ELEASEMISMATCH. */
    int (*extend)(struct store *st, const char *tenant_id, const char *agent_id,
                  const char *event_id, const char *lease_token, int64_t lease_s,
                  int64_t max_total_s, int64_t now_ms, int64_t *claim_expires_at_ms);

    /* Releases (reason shutdown) every lease of the agent held by `consumer`. */
    int (*release_all)(struct store *st, const char *tenant_id, const char *agent_id,
                       const char *consumer, int64_t now_ms, size_t *released,
                       struct store_touches *touches);

    /* The agent's state document (NUL-terminated JSON object text, caller frees) and the head it
     * is consistent with, in one snapshot. Unknown agent: "{}" and 0. */
    int (*state_get)(struct store *st, const char *tenant_id, const char *agent_id, char **state,
                     int64_t *cursor);

    /* The agent's head (0 when unknown). */
    int (*head)(struct store *st, const char *tenant_id, const char *agent_id, int64_t *head);

    /* Scheduler: returns at most `limit` expired leases (status claimed, claim_expires_at <= now)
     * to pending (timeouts+1), or quarantines them when their attempts are used up
     * (struct store_scavenge_limits). Every update is conditional on the lease token read.
     * *count = rows changed. */
    int (*scavenge)(struct store *st, int64_t now_ms, const struct store_scavenge_limits *lim,
                    size_t limit, size_t *count, size_t *quarantined,
                    struct store_touches *touches);
    /* Scheduler: scheduled events with available_at <= now become pending (at most `limit`). */
    int (*promote_due)(struct store *st, int64_t now_ms, size_t limit, size_t *count,
                       struct store_touches *touches);
    /* Scheduler: pending/scheduled events with expires_at <= now become expired. */
    int (*expire)(struct store *st, int64_t now_ms, size_t limit, size_t *count);
    /* Retention: deletes, per agent, the longest prefix of rows (lowest seq first) that are
     * deletable, so purged_through_seq (which only moves forward) is exact. */
    int (*retention)(struct store *st, const struct store_retention_req *req,
                     struct store_retention_result *res);

    /* Admin: quarantined events of the tenant, oldest seq first, optionally of one agent;
     * paginated by (agent_id, seq) after the given position (after_agent "" = from the start). */
    int (*quarantine_list)(struct store *st, const char *tenant_id, const char *agent_id,
                           const char *after_agent, int64_t after_seq, size_t limit,
                           struct store_events *out, bool *has_more);
    /* Admin: a quarantined (or expired) event back to pending with the same event_id and seq,
     * attempts reset to 0. ROOST_EEVENTNOTFOUND / ROOST_ESTATE. */
    int (*requeue)(struct store *st, const char *tenant_id, const char *event_id, int64_t now_ms,
                   struct store_touches *touches);
    /* Admin: agents of the tenant. STORE_SORT_AGENT: ordered by agent_id after `after_agent`
     * (offset ignored). DEPTH/AGE: in that order, skipping `offset` agents (after_agent ignored);
     * these count every agent of the tenant, an operator query, not a hot path. */
    int (*agents_list)(struct store *st, const char *tenant_id, enum store_agents_sort sort,
                       const char *after_agent, int64_t offset, size_t limit, int64_t now_ms,
                       struct store_agent_stats *out, size_t *n, bool *has_more);
    /* Admin: one event of the tenant by id, any status, with its audit fields (payload NULL once
     * completed). ROOST_EEVENTNOTFOUND. */
    int (*event_get)(struct store *st, const char *tenant_id, const char *event_id,
                     struct store_event *out);
    /* Admin: the tenant's events whose correlation_id is exactly `correlation_id` (1..
     * STORE_SHORT_TEXT_MAX bytes), any status and agent, ordered by (agent_id, seq) after the
     * given position (after_agent "" = from the start), at most `limit` (1..1000) appended to
     * *out with their audit fields; *has_more when more follow. Walks the correlation index
     * (migrations sqlite 0006, mysql 0008), never an agent's inbox. ROOST_EINVAL for a bad
     * argument. */
    int (*events_by_correlation)(struct store *st, const char *tenant_id,
                                 const char *correlation_id, const char *after_agent,
                                 int64_t after_seq, size_t limit, struct store_events *out,
                                 bool *has_more);
    /* Write (in a transaction): agents.last_seen_at = now for an agent that opened a stream, at
     * most once per STORE_SEEN_EVERY_MS (as a claim writes it); an agent without a row is left
     * alone. */
    int (*agent_seen)(struct store *st, const char *tenant_id, const char *agent_id,
                      int64_t now_ms);
    /* Admin (write): deletes quarantined rows of the tenant — one event (event_id), one agent's
     * (agent_id), or all (both NULL) — at most `limit` per call; *purged = rows deleted. Other
     * statuses are never touched; a named event that is not quarantined is ROOST_ESTATE, an
     * unknown one ROOST_EEVENTNOTFOUND. Heads and watermarks do not move (readers see a gap in
     * seq, as after a completed row was purged by retention). */
    int (*quarantine_purge)(struct store *st, const char *tenant_id, const char *agent_id,
                            const char *event_id, size_t limit, size_t *purged);

    /* Metrics (read-only, one snapshot): per-tenant totals of pending, scheduled, claimed and
     * quarantined rows, the oldest pending available_at and oldest claimed_at, and the
     * `snap->max_agents` agents with the most pending rows (ties by tenant, agent). Runs on a
     * timer (metrics.refresh_ms), never per scrape. It may read every unfinished row but must
     * never walk the completed history (SQLite: one partial index per status, migration 0002;
     * MySQL: an index leading with status, e.g. (status, tenant_id, agent_id, available_at)). */
    int (*metrics_snapshot)(struct store *st, int64_t now_ms, struct store_metrics_snapshot *snap);

    /* Keys (write, in a transaction): adds a key of the tenant, created_at = now. ROOST_EKEYEXISTS
     * when the tenant already has this key_id (revoked ones included: ids are never reused).
     * key->material is stored as given; the caller validates it. */
    int (*key_add)(struct store *st, const char *tenant_id, const struct store_key *key,
                   int64_t now_ms);
    /* Keys (read): one key of the tenant, material included (caller cleans *out up with
     * store_key_cleanup). ROOST_EKEYNOTFOUND when absent or another tenant's. */
    int (*key_get)(struct store *st, const char *tenant_id, const char *key_id,
                   struct store_key *out);
    /* Keys (read): the tenant's keys ordered by key_id after `after_key` ("" = from the start),
     * at most `limit` into caller-allocated out[limit]; material is left NULL (listings never
     * carry secrets). *has_more when more follow. */
    int (*key_list)(struct store *st, const char *tenant_id, const char *after_key, size_t limit,
                    struct store_key *out, size_t *n, bool *has_more);
    /* Keys (write): the key stops verifying at now_ms (revoked_at; a device's signing key is
     * given a future one, its overlap). Revoking a revoked key is ROOST_OK and keeps the earlier
     * revoked_at. ROOST_EKEYNOTFOUND when absent. */
    int (*key_revoke)(struct store *st, const char *tenant_id, const char *key_id, int64_t now_ms);
    /* Nonces (write): records (tenant, key_id, nonce) until expires_at_ms. ROOST_ENONCEREUSED
     * when the same triple is recorded and its expires_at > now; an expired row is replaced. */
    int (*nonce_claim)(struct store *st, const char *tenant_id, const char *key_id,
                       const char *nonce, int64_t expires_at_ms, int64_t now_ms);
    /* Scheduler (write): deletes at most `limit` nonces with expires_at <= now; *count set. */
    int (*nonce_prune)(struct store *st, int64_t now_ms, size_t limit, size_t *count);

    /* Devices and refresh-token families (store_ops.h has their contracts). */
    int (*device_add)(struct store *st, const char *tenant_id, const struct store_device *d,
                      const char *code_hash);
    int (*device_get)(struct store *st, const char *tenant_id, int by, const char *value,
                      struct store_device *out);
    int (*device_list)(struct store *st, const char *tenant_id, const char *agent_id,
                       const char *after, size_t limit, struct store_device *out, size_t *n,
                       bool *has_more);
    int (*device_poll)(struct store *st, const char *tenant_id, const char *device_id,
                       int64_t now_ms, int64_t interval_s);
    int (*device_decide)(struct store *st, const char *tenant_id, const char *device_id,
                         bool approve, const char *scope_granted, const char *by, int64_t now_ms);
    int (*device_revoke)(struct store *st, const char *tenant_id, const char *device_id,
                         const char *reason, const char *by, int64_t now_ms);
    int (*device_advance)(struct store *st, const char *tenant_id, const char *device_id,
                          int64_t gen, int64_t now_ms);
    int (*refresh_add)(struct store *st, const char *tenant_id, const char *token_hash,
                       const char *device_id, int64_t gen, int64_t now_ms);
    int (*refresh_use)(struct store *st, const char *tenant_id, const char *token_hash,
                       int64_t now_ms, char *device_id, int64_t *gen, bool *reused,
                       int64_t *used_ms);

    /* Tailer: adds to `touches` every (tenant, agent, head) recorded by transactions committed
     * since the last call on `pos`, by any writer (this process, other roostd nodes, applications
     * calling roost_publish). Runs outside a transaction; the first call on a zeroed pos reports
     * nothing and starts from the end of the log (ids just below it not yet committed are watched
     * as gaps). The same change may be reported twice, never missed (except one whose commit
     * comes more than STORE_TAIL_GAP_MS after its id was passed).
     * A backend with one writer process (SQLite) has no change log and reports nothing: every
     * commit is already pinged by the process that made it (store_has(st, STORE_CAP_CHANGE_LOG)
     * says whether there is anything to tail). */
    int (*tail)(struct store *st, struct store_tail_pos *pos, int64_t now_ms,
                struct store_touches *touches);

    /* ---- inbound webhook sources and their receipts (store_sources.h, DESIGN §6.5) ---- */
    /* Sources (write): adds s, created_at = updated_at = now. ROOST_ESOURCEEXISTS when its id is
     * taken (ids are 128 random bits: never in practice). */
    int (*source_add)(struct store *st, const struct store_source *s, int64_t now_ms);
    /* Sources (read): one source, config and secrets included (caller cleans *out up with
     * store_source_cleanup). tenant_id NULL: whichever tenant holds it (an ingest names only the
     * source). ROOST_ESOURCENOTFOUND when absent or another tenant's. */
    int (*source_get)(struct store *st, const char *tenant_id, const char *source_id,
                      struct store_source *out);
    /* Sources (read): the tenant's sources by source_id after `after` ("" = from the start), at
     * most `limit` into caller-allocated out[limit] (each cleaned up by the caller), config
     * included, secrets left "". *has_more when more follow. */
    int (*source_list)(struct store *st, const char *tenant_id, const char *after, size_t limit,
                       struct store_source *out, size_t *n, bool *has_more);
    /* Sources (write): deletes the source and its receipts. ROOST_ESOURCENOTFOUND. */
    int (*source_delete)(struct store *st, const char *tenant_id, const char *source_id);
    /* Sources (write): `secret` becomes the source's secret; the one it replaces stays valid
     * until old_until_ms (0: not at all). ROOST_ESOURCENOTFOUND. */
    int (*source_rotate)(struct store *st, const char *tenant_id, const char *source_id,
                         const char *secret, int64_t old_until_ms, int64_t now_ms);
    /* Receipts (write): appends one delivery's receipt to the tenant's source's log. */
    int (*receipt_add)(struct store *st, const char *tenant_id, const struct store_receipt *r);
    /* Receipts (read): the source's receipts, newest first, with receipt_id below `before`
     * ("" = from the newest), at most `limit` into caller-allocated out[limit]. */
    int (*receipt_list)(struct store *st, const char *tenant_id, const char *source_id,
                        const char *before, size_t limit, struct store_receipt *out, size_t *n,
                        bool *has_more);
    /* Scheduler (write): deletes at most `limit` receipts (any tenant) older than before_ms. */
    int (*receipt_prune)(struct store *st, int64_t before_ms, size_t limit, size_t *count);
};

/* Named capabilities of a store's backend (its dialect), for callers and operations that size
 * themselves to it instead of testing which backend they are on. */
enum store_cap {
    /* One writer process has the whole database (SQLite): more writer threads would only wait on
     * its lock, every commit is pinged by the process that made it, and there is no tailer. */
    STORE_CAP_SINGLE_WRITER = 1u << 0,
    /* Transactions write a change log other nodes read (MySQL): tail reports their commits, and
     * an agent is touched even when the caller collects no touches. */
    STORE_CAP_CHANGE_LOG = 1u << 1,
    /* INSERT … ON CONFLICT DO UPDATE … WHERE (SQLite): a conditional upsert in one statement,
     * which changes no row when the condition fails. */
    STORE_CAP_UPSERT_WHERE = 1u << 2,
    /* A publish of several rows is cheaper as a batch of one (SQLite: the seqs of its agents
     * from one statement per agent instead of one upsert per recipient). */
    STORE_CAP_PUBLISH_ROWS_AS_BATCH = 1u << 3,
    /* The candidates a claim read stay the claimer's until the transaction ends (SQLite: the one
     * write lock; MySQL: FOR UPDATE SKIP LOCKED), so every one can be claimed without a check,
     * and several claims of one agent can share one read. */
    STORE_CAP_CLAIM_ALL = 1u << 4,
    /* Every statement is a round trip to a server (MySQL): a per-connection memo that skips a
     * write which would change nothing pays for itself. */
    STORE_CAP_ROUND_TRIP = 1u << 5,
    /* An UPDATE can hand one value back (MySQL: LAST_INSERT_ID(expr), no UPDATE … RETURNING;
     * PostgreSQL: RETURNING, the first value of a statement run without a row callback):
     * struct store_dialect.insert_id reads it after the statement. */
    STORE_CAP_INSERT_ID = 1u << 6,
    /* A commit can become visible to new snapshots after a later one (InnoDB releases the agent's
     * row lock before its commit is visible), so a reader may see seq N+1 before N: an inbox page
     * stops at the first missing seq above the watermark and caps the head there. */
    STORE_CAP_LATE_VISIBILITY = 1u << 7,
    /* The database merges a JSON Merge Patch (RFC 7396) into a document itself (SQLite's
     * json_patch, MySQL's JSON_MERGE_PATCH); without it the state is read, merged in C and
     * written back (PostgreSQL: jsonb would not keep the document's text). */
    STORE_CAP_MERGE_PATCH = 1u << 8,
    /* A parameter can be an array literal ('{4,7}'; PostgreSQL): one prepared statement takes
     * any count of values. */
    STORE_CAP_ARRAY_PARAMS = 1u << 9,
};

/* When this connection last wrote an agent's last_seen_at (STORE_CAP_ROUND_TRIP). */
#define STORE_SEEN_SLOTS 64
struct store_seen_slot {
    uint64_t key; /* hash_tenant_agent; 0 = empty */
    int64_t at_ms;
};

/* An agent's next_seq as this connection last wrote it (STORE_CAP_SINGLE_WRITER), which the
 * publish's conditional UPDATE checks: never trusted. */
#define STORE_SEQ_GUESSES 256
struct store_seq_guess {
    uint64_t key; /* hash_tenant_agent; 0 = empty */
    int64_t next_seq;
};

struct store_dialect;
struct store {
    const struct store_ops *ops;
    /* The backend's primitive statements the shared lifecycle runs (store_lifecycle.h). */
    const struct store_dialect *dialect;
    int admin_scan_ms; /* store_options.admin_scan_ms, set by store_open */
    struct store_seen_slot seen[STORE_SEEN_SLOTS];
    /* STORE_CAP_ROUND_TRIP: the last tenant this connection saw committed (tenant rows are never
     * deleted, so a publish of it needs no check). */
    char known_tenant[STORE_ID_MAX + 1];
    struct store_seq_guess seq_guess[STORE_SEQ_GUESSES];
    /* Set by the writer for a transaction of one request whose first write is its whole effect
     * and may run twice (an ack): the backend may commit with that statement (MySQL: the statement
     * and COMMIT in one round trip, see store_mysql_exec_sb_commit). Cleared by the first write. */
    bool commit_rides;
    /* Set by the writer while its transaction holds one request's work (a group of one, no
     * savepoints): nothing else in it reads what that request wrote before the COMMIT, so a write
     * whose answer it needs no more than "done" may go out with the COMMIT (MySQL: a claim's
     * UPDATE, and a lone publish of its job's last write, mysql_store.late). */
    bool alone;
};

/* Opens a store by URL scheme ("sqlite://PATH", "mysql://USER:PASS@HOST:PORT/DB"). ROOST_EINVAL for
 * an unknown scheme or bad URL; *errmsg (static or NULL) explains. */
int store_open(const char *url, const struct store_options *opt, struct store **out,
               const char **errmsg);
void store_close(struct store *st);
/* True when the store's backend has every capability in `caps` (enum store_cap). */
bool store_has(const struct store *st, unsigned caps);
/* The same for the backend a store URL names, before any store is open (false for an unknown
 * scheme). */
bool store_url_has(const char *url, unsigned caps);
/* The store a data directory holds when no URL is configured (the embedded dialect's file,
 * sqlite://DIR/roost.db): a malloc'd URL, NULL when out of memory. */
char *store_url_default(const char *data_dir);

/* A batch of publishes (or acks) through the backend's batch operation, or one by one when it has
 * none. Returns as the publish_batch operation. */
int store_publish_batch(struct store *st, struct store_publish_entry *entries, size_t n);
int store_ack_batch(struct store *st, struct store_ack_entry *entries, size_t n, int64_t now_ms);
int store_claim_batch(struct store *st, struct store_claim_entry *entries, size_t n,
                      int64_t now_ms);

/* Thin dispatchers: store_call(st, claim, …) → st->ops->claim(st, …). */
#define store_call(st, op, ...) ((st)->ops->op((st), __VA_ARGS__))
#define store_call0(st, op) ((st)->ops->op((st)))

#endif
