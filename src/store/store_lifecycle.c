/* SPDX-License-Identifier: MIT */
/* The event lifecycle (DESIGN §4.3–4.5) once for every backend: each operation decides here and
 * runs its statements through the backend's struct store_dialect (store_lifecycle.h). */
#include "store/store_lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "store/store_sql.h"

#include "common/banned.h"

static const struct store_dialect *dialect(struct store *st)
{
    return st->dialect;
}

int store_op_done(struct store *st, int rc)
{
    if (dialect(st)->done != NULL) {
        dialect(st)->done(st);
    }
    return rc;
}

int store_op_fail(struct store *st, int rc, const char *msg)
{
    dialect(st)->set_error(st, msg);
    return rc;
}

struct store_lease_ref *store_lease_refs_push(struct store_lease_refs *list)
{
    if (list->len == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 16;
        if (cap > SIZE_MAX / sizeof *list->items) {
            return NULL;
        }
        struct store_lease_ref *grown = realloc(list->items, cap * sizeof *grown);
        if (grown == NULL) {
            return NULL;
        }
        list->items = grown;
        list->cap = cap;
    }
    struct store_lease_ref *r = &list->items[list->len++];
    memset(r, 0, sizeof *r);
    return r;
}

bool store_lease_token_eq(const struct store_lease_row *row, const char *lease_token)
{
    return lease_token != NULL && row->lease_token[0] != '\0' &&
           strcmp(row->lease_token, lease_token) == 0;
}

bool store_lease_exhausted(int attempts, int max_attempts)
{
    return max_attempts > 0 && attempts >= max_attempts;
}

bool store_cursor_gone(int64_t after_cursor, int64_t purged_through_seq)
{
    return after_cursor < purged_through_seq;
}

void store_event_claimed(struct store_event *ev, const char *token, const char *consumer,
                         int64_t now_ms, int64_t claim_expires_at_ms)
{
    ev->status = STORE_CLAIMED;
    snprintf(ev->lease_token, sizeof ev->lease_token, "%s", token);
    snprintf(ev->consumer, sizeof ev->consumer, "%s", consumer);
    ev->claimed_at_ms = now_ms;
    ev->claim_expires_at_ms = claim_expires_at_ms;
    ev->attempts++;
}

/* tenant, agent: next_seq holds the next seq to assign, so the head is next_seq - 1. */
STORE_STMT_SAME(AGENT_HEAD, "SELECT next_seq - 1, purged_through_seq FROM agents"
                            " WHERE tenant_id = ? AND agent_id = ?");

struct head_row {
    int64_t *head, *purged;
};

static int on_head(void *arg, struct store_row *row)
{
    struct head_row *h = arg;
    *h->head = row->i64(row, 0);
    *h->purged = row->i64(row, 1);
    return ROOST_OK;
}

int store_agent_head(struct store *st, const char *tenant_id, const char *agent_id, int64_t *head,
                     int64_t *purged)
{
    struct head_row h = {.head = head, .purged = purged};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id)};
    *head = *purged = 0;
    return store_run(st, AGENT_HEAD, p, on_head, &h, NULL);
}

/* One writer process (no change log): the commit's touches are all anyone needs. */
int store_changed(struct store *st, const char *tenant_id, const char *agent_id, int64_t head,
                  int64_t now_ms, struct store_touches *touches)
{
    const struct store_dialect *d = dialect(st);
    int rc = ROOST_OK;
    if (store_dialect_has(d, STORE_CAP_CHANGE_LOG)) {
        rc = d->change_log(st, tenant_id, agent_id, head, now_ms);
    }
    return rc == ROOST_OK && touches != NULL ? store_touches_add(touches, tenant_id, agent_id, head)
                                             : rc;
}

int store_touch(struct store *st, const char *tenant_id, const char *agent_id, int64_t now_ms,
                struct store_touches *touches)
{
    int64_t head, purged;
    if (touches == NULL && !store_dialect_has(dialect(st), STORE_CAP_CHANGE_LOG)) {
        return ROOST_OK;
    }
    int rc = store_agent_head(st, tenant_id, agent_id, &head, &purged);
    return rc != ROOST_OK ? rc : store_changed(st, tenant_id, agent_id, head, now_ms, touches);
}

/* ---- publish ---- */

/* Writes one (item, recipient) row, or finds it again through the idempotency key. The new head
 * goes to `heads`. */
static int publish_one(struct store *st, const struct store_publish_req *req,
                       const struct store_publish_item *it, const char *agent_id,
                       struct store_published *o, struct store_touches *heads)
{
    const struct store_dialect *d = dialect(st);
    int rc;
    memset(o, 0, sizeof *o);
    snprintf(o->agent_id, sizeof o->agent_id, "%s", agent_id);
    if (it->idempotency_key != NULL) {
        bool found = false;
        rc =
            d->idem_find(st, req->tenant_id, agent_id, it->idempotency_key, req->now_ms, o, &found);
        if (rc != ROOST_OK || found) {
            o->duplicate = found;
            return rc;
        }
    }
    if (ids_event_id(req->now_ms, o->event_id) != 0) {
        return store_op_fail(st, ROOST_EINTERNAL, "publish: no randomness for the event id");
    }
    if (d->seq_insert == NULL &&
        (rc = d->seq_alloc(st, req->tenant_id, agent_id, req->now_ms, &o->seq)) != ROOST_OK) {
        return rc;
    }
    /* A row due later waits as scheduled; one due now (or in the past) is pending at once. */
    bool scheduled = it->available_at_ms > req->now_ms;
    struct store_new_row row = {
        .tenant_id = req->tenant_id,
        .agent_id = agent_id,
        .seq = o->seq,
        .event_id = o->event_id,
        .status = scheduled ? STORE_SCHEDULED : STORE_PENDING,
        .priority = it->priority,
        .correlation_id = it->correlation_id,
        .idempotency_key = it->idempotency_key,
        .payload = it->payload != NULL ? it->payload : "{}",
        .created_at_ms = req->now_ms,
        .available_at_ms = scheduled ? it->available_at_ms : req->now_ms,
        .expires_at_ms = it->expires_at_ms,
    };
    rc = d->seq_insert != NULL ? d->seq_insert(st, &row, req->now_ms, &o->seq)
                               : d->inbox_insert(st, &row);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (it->state_patch != NULL) {
        int64_t bytes = 0;
        rc = d->state_patch(st, req->tenant_id, agent_id, it->state_patch, o->seq, req->now_ms,
                            &bytes);
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
int store_lifecycle_publish(struct store *st, const struct store_publish_req *req,
                            struct store_published *out, struct store_touches *touches)
{
    const struct store_dialect *d = dialect(st);
    struct store_touches heads = {0};
    struct store_recipient *order = NULL;
    size_t order_cap = 0, base = 0;
    int rc = d->publish_begin(st, req);
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
                if (ids_event_id(req->now_ms, b->event_id) != 0) {
                    rc = store_op_fail(st, ROOST_EINTERNAL,
                                       "publish: no randomness for the event id");
                    break;
                }
                bool scheduled = it->available_at_ms > req->now_ms;
                b->row = (struct store_new_row){
                    .tenant_id = req->tenant_id,
                    .agent_id = order[r].agent_id,
                    .event_id = b->event_id,
                    .status = scheduled ? STORE_SCHEDULED : STORE_PENDING,
                    .priority = it->priority,
                    .correlation_id = it->correlation_id,
                    .payload = it->payload != NULL ? it->payload : "{}",
                    .created_at_ms = req->now_ms,
                    .available_at_ms = scheduled ? it->available_at_ms : req->now_ms,
                    .expires_at_ms = it->expires_at_ms,
                };
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
int store_lifecycle_publish_batch(struct store *st, struct store_publish_entry *entries, size_t n)
{
    const struct store_dialect *d = dialect(st);
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
        batched[e] = d->insert_rows != NULL && publish_batchable(entries[e].req, &bytes);
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
            rc = d->insert_rows(st, plain, n_rows, now_ms);
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
        entries[e].rc =
            store_lifecycle_publish(st, entries[e].req, entries[e].out, entries[e].touches);
        if (entries[e].rc == ROOST_ERETRY) {
            rc = ROOST_ERETRY;
        }
    }
    free(batched);
    return store_op_done(st, rc);
}

int store_lifecycle_head(struct store *st, const char *tenant_id, const char *agent_id,
                         int64_t *head)
{
    int64_t purged;
    return store_op_done(st, store_agent_head(st, tenant_id, agent_id, head, &purged));
}
