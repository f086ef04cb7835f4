/* SPDX-License-Identifier: MIT */
/* The small shared helpers of store.h that every backend uses: event lists, touch sets, status
 * names, metrics totals, recipient order and the retention rule. */
#include "store/store.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

#include "common/banned.h"

const char *store_status_name(enum store_status s)
{
    switch (s) {
    case STORE_SCHEDULED:
        return "scheduled";
    case STORE_PENDING:
        return "pending";
    case STORE_CLAIMED:
        return "claimed";
    case STORE_COMPLETED:
        return "completed";
    case STORE_QUARANTINED:
        return "quarantined";
    case STORE_EXPIRED:
        return "expired";
    }
    return "unknown";
}

bool store_budget_take(size_t *used, size_t n, size_t payload_len, size_t max_bytes)
{
    size_t cost = payload_len + STORE_EVENT_BASE_BYTES;
    if (max_bytes != 0 && n > 0 && (*used > max_bytes || cost > max_bytes - *used)) {
        return false;
    }
    *used += cost;
    return true;
}

void store_event_cleanup(struct store_event *ev)
{
    if (ev == NULL) {
        return;
    }
    free(ev->correlation_id);
    free(ev->payload);
    free(ev->last_error);
    ev->correlation_id = NULL;
    ev->payload = NULL;
    ev->last_error = NULL;
}

void store_key_cleanup(struct store_key *k)
{
    if (k == NULL) {
        return;
    }
    if (k->material != NULL) {
        /* May hold an HMAC secret. */
        memset(k->material, 0, strlen(k->material));
        free(k->material);
        k->material = NULL;
    }
}

void store_events_cleanup(struct store_events *list)
{
    if (list == NULL) {
        return;
    }
    for (size_t i = 0; i < list->len; i++) {
        store_event_cleanup(&list->items[i]);
    }
    free(list->items);
    list->items = NULL;
    list->len = 0;
    list->cap = 0;
}

struct store_event *store_events_push(struct store_events *list)
{
    if (list->len == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 16;
        if (cap > SIZE_MAX / sizeof *list->items) {
            return NULL;
        }
        struct store_event *items = realloc(list->items, cap * sizeof *items);
        if (items == NULL) {
            return NULL;
        }
        list->items = items;
        list->cap = cap;
    }
    struct store_event *ev = &list->items[list->len++];
    memset(ev, 0, sizeof *ev);
    return ev;
}

static bool touch_is(const struct store_touch *e, const char *tenant_id, const char *agent_id)
{
    return strcmp(e->agent_id, agent_id) == 0 && strcmp(e->tenant_id, tenant_id) == 0;
}

/* Rebuilds the index for n_slots slots from the items. */
static int touches_reindex(struct store_touches *t, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (slots == NULL) {
        return ROOST_ENOMEM;
    }
    for (size_t i = 0; i < t->len; i++) {
        size_t s =
            (size_t)hash_tenant_agent(t->items[i].tenant_id, t->items[i].agent_id) & (n_slots - 1);
        while (slots[s] != 0) {
            s = (s + 1) & (n_slots - 1);
        }
        slots[s] = (uint32_t)(i + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return ROOST_OK;
}

int store_touches_add(struct store_touches *t, const char *tenant_id, const char *agent_id,
                      int64_t head)
{
    size_t tenant_len = strlen(tenant_id), agent_len = strlen(agent_id);
    if (tenant_len > STORE_ID_MAX || agent_len > STORE_ID_MAX) {
        return ROOST_EINVAL;
    }
    uint64_t h = hash_tenant_agent(tenant_id, agent_id);
    if (t->n_slots != 0) {
        for (size_t s = (size_t)h & (t->n_slots - 1); t->slots[s] != 0;
             s = (s + 1) & (t->n_slots - 1)) {
            struct store_touch *e = &t->items[t->slots[s] - 1];
            if (touch_is(e, tenant_id, agent_id)) {
                if (head > e->head) {
                    e->head = head;
                }
                return ROOST_OK;
            }
        }
    }
    if (t->len == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        if (cap > UINT32_MAX / 4 || cap > SIZE_MAX / sizeof *t->items) {
            return ROOST_ENOMEM;
        }
        struct store_touch *items = realloc(t->items, cap * sizeof *items);
        if (items == NULL) {
            return ROOST_ENOMEM;
        }
        t->items = items;
        t->cap = cap;
    }
    if (t->n_slots < 2 * t->cap) {
        int rc = touches_reindex(t, 2 * t->cap);
        if (rc != ROOST_OK) {
            return rc;
        }
    }
    struct store_touch *e = &t->items[t->len];
    memcpy(e->tenant_id, tenant_id, tenant_len + 1);
    memcpy(e->agent_id, agent_id, agent_len + 1);
    e->head = head;
    size_t s = (size_t)h & (t->n_slots - 1);
    while (t->slots[s] != 0) {
        s = (s + 1) & (t->n_slots - 1);
    }
    t->slots[s] = (uint32_t)(++t->len);
    return ROOST_OK;
}

void store_tail_pos_cleanup(struct store_tail_pos *pos)
{
    if (pos == NULL) {
        return;
    }
    free(pos->gaps);
    memset(pos, 0, sizeof *pos);
}

void store_touches_cleanup(struct store_touches *t)
{
    if (t == NULL) {
        return;
    }
    free(t->items);
    free(t->slots);
    t->items = NULL;
    t->slots = NULL;
    t->len = 0;
    t->cap = 0;
    t->n_slots = 0;
}

void store_metrics_add(struct store_metrics_snapshot *snap, const char *tenant_id,
                       enum store_status status, int64_t count, int64_t oldest_ms)
{
    struct store_metrics_tenant *t = NULL;
    for (size_t i = 0; i < snap->n_tenants && t == NULL; i++) {
        if (strcmp(snap->tenants[i].tenant_id, tenant_id) == 0) {
            t = &snap->tenants[i];
        }
    }
    if (t == NULL) {
        if (snap->n_tenants == snap->max_tenants || strlen(tenant_id) > STORE_ID_MAX) {
            snap->truncated = true;
            return;
        }
        t = &snap->tenants[snap->n_tenants++];
        memset(t, 0, sizeof *t);
        memcpy(t->tenant_id, tenant_id, strlen(tenant_id) + 1);
    }
    switch (status) {
    case STORE_PENDING:
        t->pending = count;
        t->oldest_pending_ms = oldest_ms;
        break;
    case STORE_SCHEDULED:
        t->scheduled = count;
        break;
    case STORE_CLAIMED:
        t->claimed = count;
        t->oldest_claimed_ms = oldest_ms;
        break;
    case STORE_QUARANTINED:
        t->quarantined = count;
        break;
    default:
        break;
    }
}

static int cmp_metrics_tenant(const void *x, const void *y)
{
    return strcmp(((const struct store_metrics_tenant *)x)->tenant_id,
                  ((const struct store_metrics_tenant *)y)->tenant_id);
}

void store_metrics_sort_tenants(struct store_metrics_snapshot *snap)
{
    qsort(snap->tenants, snap->n_tenants, sizeof *snap->tenants, cmp_metrics_tenant);
}

static int recipient_cmp(const void *pa, const void *pb)
{
    const struct store_recipient *a = pa, *b = pb;
    int c = strcmp(a->agent_id, b->agent_id);
    if (c != 0) {
        return c;
    }
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

int store_recipients_sort(const struct store_publish_item *it, struct store_recipient **buf,
                          size_t *cap)
{
    size_t n = it->n_recipients;
    if (n > *cap) {
        struct store_recipient *grown =
            n > SIZE_MAX / sizeof **buf ? NULL : realloc(*buf, n * sizeof **buf);
        if (grown == NULL) {
            return ROOST_ENOMEM;
        }
        *buf = grown;
        *cap = n;
    }
    for (size_t k = 0; k < n; k++) {
        (*buf)[k].agent_id = it->recipients[k];
        (*buf)[k].idx = k;
    }
    qsort(*buf, n, sizeof **buf, recipient_cmp);
    return ROOST_OK;
}

bool store_retention_deletable(const struct store_retention_req *req, enum store_status status,
                               int64_t completed_at_ms, int64_t created_at_ms)
{
    bool finished = status == STORE_COMPLETED || status == STORE_EXPIRED;
    if (finished && completed_at_ms != 0 && req->completed_s >= 0 &&
        completed_at_ms <= req->now_ms - req->completed_s * 1000) {
        return true;
    }
    return req->max_age_s > 0 && created_at_ms <= req->now_ms - req->max_age_s * 1000;
}

int store_publish_batch(struct store *st, struct store_publish_entry *entries, size_t n)
{
    if (st->ops->publish_batch != NULL) {
        return st->ops->publish_batch(st, entries, n);
    }
    for (size_t i = 0; i < n; i++) {
        struct store_publish_entry *e = &entries[i];
        e->rc = st->ops->publish(st, e->req, e->out, e->touches);
        if (e->rc == ROOST_ERETRY) {
            return ROOST_ERETRY; /* the transaction is gone or must replay: so is the batch */
        }
    }
    return ROOST_OK;
}

int store_ack_batch(struct store *st, struct store_ack_entry *entries, size_t n, int64_t now_ms)
{
    if (st->ops->ack_batch != NULL) {
        return st->ops->ack_batch(st, entries, n, now_ms);
    }
    for (size_t i = 0; i < n; i++) {
        struct store_ack_entry *e = &entries[i];
        e->rc = st->ops->ack(st, e->tenant_id, e->agent_id, e->event_id, e->lease_token, now_ms,
                             &e->available_at_ms);
        if (e->rc == ROOST_ERETRY) {
            return ROOST_ERETRY;
        }
    }
    return ROOST_OK;
}

int store_claim_batch(struct store *st, struct store_claim_entry *entries, size_t n, int64_t now_ms)
{
    if (st->ops->claim_batch != NULL) {
        return st->ops->claim_batch(st, entries, n, now_ms);
    }
    for (size_t i = 0; i < n; i++) {
        struct store_claim_entry *e = &entries[i];
        e->rc = st->ops->claim(st, e->tenant_id, e->agent_id, e->limit, e->max_bytes, e->lease_s,
                               e->consumer, now_ms, e->out, &e->has_more);
        if (e->rc == ROOST_ERETRY) {
            return ROOST_ERETRY;
        }
    }
    return ROOST_OK;
}
