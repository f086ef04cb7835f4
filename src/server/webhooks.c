/* SPDX-License-Identifier: MIT */
/* The webhook dispatcher of one store (webhooks.h). A thread with its own store connection and a
 * libcurl multi handle that keeps the active endpoints in memory and waits for work (see run()):
 * for an endpoint woken by an inbox change of its agent, with room (webhooks.max_in_flight,
 * webhooks.max_per_s), it claims that agent's events under a lease and starts their POSTs;
 * finished transfers are acked (2xx) or released with the retry
 * schedule, and every attempt is logged. Transfers run side by side in the multi handle, each
 * with its own timeout, so one slow endpoint never delays another. One tenant never holds every
 * delivery slot: it has at most webhooks.max_tenant_in_flight of them, and the endpoints are
 * served round robin. An endpoint whose deliveries time out gets one slot and a timeout halved
 * per timeout in a row (down to an eighth, at least 1 s) until it answers again. The inbox lease is
 * the only lock: any number of nodes run a dispatcher on the same store, and a delivery interrupted
 * by a crash is delivered again once its lease expires. */
#include "server/webhooks.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "server/api_json.h"
#include "server/config.h"
#include "server/metrics.h"
#include "store/store.h"

#include "common/banned.h"

#define CONSUMER WEBHOOKS_CONSUMER
/* Endpoints listed per store round trip while reading the list. */
#define POLL_PAGE 64
/* The attempt log is pruned this often, this many rows per statement. */
#define PRUNE_EVERY_MS 60000
#define PRUNE_BATCH 1000
/* The byte budget of one claim (the events of one endpoint's free slots). */
#define CLAIM_MAX_BYTES (4u << 20)

/* What this node knows of an endpoint: its row as last read (secret included), whether it is
 * active, whether it may have deliverable events (dirty), its deliveries in flight and its rate
 * bucket. Entries of endpoints that disappeared stay, inactive, until the stop (deliveries in
 * flight point at them by index). */
struct ep_state {
    struct store_endpoint e;
    uint64_t key;       /* hash_tenant_agent(e.tenant_id, e.agent_id): what a wake names */
    bool active, dirty; /* dirty: serve it (claim) when it has room */
    uint64_t seen;      /* the listing generation that last showed it active */
    int64_t fetched_ms; /* monotonic time e was read */
    int64_t retry_ms;   /* monotonic: not served before this (after a store error) */
    int in_flight;
    double tokens;
    int64_t refill_ms;
    uint64_t tenant; /* tenant_key(e.tenant_id) */
    int timeouts;    /* deliveries timed out in a row (an answer of any status resets it) */
};

struct delivery {
    struct delivery *next, *prev; /* webhooks.deliveries */
    struct webhooks_call *call;
    size_t ep; /* index into webhooks.eps */
    char tenant_id[STORE_ID_MAX + 1];
    char endpoint_id[STORE_ENDPOINT_ID_LEN + 1];
    char agent_id[STORE_ID_MAX + 1];
    char event_id[STORE_EVENT_ID_LEN + 1];
    char lease_token[STORE_LEASE_TOKEN_LEN + 1];
    int attempt;
    int64_t at_ms;
    int64_t timeout_ms; /* the timeout it was given */
};

/* Deliveries in flight of one tenant (only tenants with some are listed). */
struct tenant_use {
    uint64_t tenant;
    int in_flight;
};

/* Wakes queued by the loop between two turns of the dispatcher; past this many it serves every
 * endpoint instead (the flags are idempotent, so nothing is lost). */
#define WAKE_MAX 256

struct webhooks {
    pthread_t thread;
    bool started;
    atomic_bool stop;
    struct store *st;
    CURLM *multi;
    struct webhooks_net net;
    const struct webhooks_signer *signer;
    struct metrics *metrics;
    int64_t schedule_s[WEBHOOKS_SCHEDULE_MAX];
    size_t n_schedule;
    int64_t jitter_pct, disable_after_ms, timeout_ms, poll_ms, retention_ms;
    int64_t max_in_flight, max_per_s, max_total, max_tenant;
    struct tenant_use *tenants; /* max_total entries: at most that many tenants have deliveries */
    size_t n_tenants;
    size_t rr; /* the endpoint serve_dirty looks at first (round robin) */
    struct ep_state *eps;
    size_t n_eps, cap_eps;
    uint32_t *slots; /* open addressing over eps by (tenant, endpoint): index + 1, 0 = empty */
    size_t n_slots;  /* a power of two, at least twice cap_eps */
    uint64_t generation;
    struct delivery *deliveries; /* in flight */
    int in_flight;
    int64_t op_t0_us; /* the store call being timed (dispatcher thread) */

    /* Shared with the loop thread (webhooks_notify, webhooks_reload), under lock. */
    pthread_mutex_t lock;
    uint64_t *watched; /* sorted keys of the active endpoints: which wakes are worth queueing */
    size_t n_watched;
    uint64_t wakes[WAKE_MAX];
    size_t n_wakes;
    bool wake_all, reload;
};

/* Every store call of the dispatcher is timed into roost_store_op_duration_seconds
 * {op="webhook_dispatch"}, so what it costs the database (idle or not) shows in a scrape. */
#define STORE_OP(w, expr) (op_start(w), op_done((w), (expr)))

static void op_start(struct webhooks *w)
{
    w->op_t0_us = time_mono_us();
}

static int op_done(struct webhooks *w, int rc)
{
    if (w->metrics != NULL) {
        metrics_store_op(w->metrics, "webhook_dispatch",
                         (double)(time_mono_us() - w->op_t0_us) / 1e6);
    }
    return rc;
}

static uint64_t ep_hash(const char *tenant_id, const char *endpoint_id)
{
    return hash_fnv1a_str(hash_fnv1a(hash_fnv1a_str(HASH_FNV1A_INIT, tenant_id), "", 1),
                          endpoint_id);
}

/* The slot of (tenant, endpoint): the one holding it, or the empty one where it would go. */
static size_t ep_slot(const struct webhooks *w, const char *tenant_id, const char *endpoint_id)
{
    size_t mask = w->n_slots - 1;
    size_t i = (size_t)ep_hash(tenant_id, endpoint_id) & mask;
    while (w->slots[i] != 0) {
        const struct store_endpoint *e = &w->eps[w->slots[i] - 1].e;
        if (strcmp(e->endpoint_id, endpoint_id) == 0 && strcmp(e->tenant_id, tenant_id) == 0) {
            break;
        }
        i = (i + 1) & mask;
    }
    return i;
}

/* Makes room for one more entry (array and index). false when out of memory. */
static bool ep_grow(struct webhooks *w)
{
    if (w->n_eps < w->cap_eps) {
        return true;
    }
    size_t cap = w->cap_eps ? w->cap_eps * 2 : 16;
    struct ep_state *grown = realloc(w->eps, cap * sizeof *grown);
    uint32_t *slots = calloc(cap * 2, sizeof *slots);
    if (grown != NULL) {
        w->eps = grown;
    }
    if (grown == NULL || slots == NULL || cap > UINT32_MAX / 2) {
        free(slots);
        return false;
    }
    free(w->slots);
    w->slots = slots;
    w->n_slots = cap * 2;
    w->cap_eps = cap;
    for (size_t k = 0; k < w->n_eps; k++) {
        w->slots[ep_slot(w, w->eps[k].e.tenant_id, w->eps[k].e.endpoint_id)] = (uint32_t)k + 1;
    }
    return true;
}

/* The index of the endpoint's state, created (inactive) on first sight; SIZE_MAX when out of
 * memory. */
static size_t ep_state(struct webhooks *w, const struct store_endpoint *e)
{
    if (w->n_slots > 0) {
        size_t i = ep_slot(w, e->tenant_id, e->endpoint_id);
        if (w->slots[i] != 0) {
            return w->slots[i] - 1;
        }
    }
    if (!ep_grow(w)) {
        return SIZE_MAX;
    }
    struct ep_state *s = &w->eps[w->n_eps];
    memset(s, 0, sizeof *s);
    s->e = *e;
    s->key = hash_tenant_agent(e->tenant_id, e->agent_id);
    s->tenant = hash_fnv1a_str(HASH_FNV1A_INIT, e->tenant_id);
    s->tokens = (double)w->max_per_s;
    s->refill_ms = time_mono_ms();
    w->slots[ep_slot(w, e->tenant_id, e->endpoint_id)] = (uint32_t)w->n_eps + 1;
    return w->n_eps++;
}

/* The tenant's deliveries in flight on this node. */
static struct tenant_use *tenant_use(struct webhooks *w, uint64_t tenant)
{
    for (size_t i = 0; i < w->n_tenants; i++) {
        if (w->tenants[i].tenant == tenant) {
            return &w->tenants[i];
        }
    }
    return NULL;
}

/* Counts one delivery more (+1) or less (-1) for the tenant. */
static void tenant_add(struct webhooks *w, uint64_t tenant, int delta)
{
    struct tenant_use *u = tenant_use(w, tenant);
    if (u == NULL && delta > 0 && w->n_tenants < (size_t)w->max_total) {
        u = &w->tenants[w->n_tenants++];
        *u = (struct tenant_use){.tenant = tenant};
    }
    if (u == NULL) {
        return;
    }
    u->in_flight += delta;
    if (u->in_flight <= 0) {
        *u = w->tenants[--w->n_tenants]; /* the last one takes its place */
    }
}

/* The concurrency of an endpoint: webhooks.max_in_flight, or one while its deliveries time out. */
static int ep_max_in_flight(const struct webhooks *w, const struct ep_state *s)
{
    return s->timeouts > 0 ? 1 : (int)w->max_in_flight;
}

/* The timeout of an endpoint's next delivery: webhooks.timeout_ms, halved per timeout in a row
 * down to an eighth of it, and never below 1 s (or timeout_ms when that is shorter). */
static int64_t ep_timeout_ms(const struct webhooks *w, const struct ep_state *s)
{
    int shift = s->timeouts < 3 ? s->timeouts : 3;
    int64_t t = w->timeout_ms >> shift;
    int64_t floor = w->timeout_ms < 1000 ? w->timeout_ms : 1000;
    return t > floor ? t : floor;
}

/* How many deliveries the endpoint may start now (concurrency, rate, the tenant's share, the
 * node's total). */
static int ep_room(struct webhooks *w, struct ep_state *s)
{
    int room = ep_max_in_flight(w, s) - s->in_flight;
    int total = (int)w->max_total - w->in_flight;
    room = room < total ? room : total;
    const struct tenant_use *u = tenant_use(w, s->tenant);
    int tenant = (int)w->max_tenant - (u != NULL ? u->in_flight : 0);
    room = room < tenant ? room : tenant;
    if (w->max_per_s > 0) {
        int64_t now = time_mono_ms();
        s->tokens += (double)(now - s->refill_ms) * (double)w->max_per_s / 1000.0;
        s->tokens = s->tokens > (double)w->max_per_s ? (double)w->max_per_s : s->tokens;
        s->refill_ms = now;
        room = (int)s->tokens < room ? (int)s->tokens : room;
    }
    return room > 0 ? room : 0;
}

/* A transaction answered ROOST_ERETRY (deadlock, busy lock: nothing committed) runs again, this
 * many times at most; then the work waits for its lease to run out or for the next poll. */
#define TX_TRIES 5

/* Runs fn (one store change) in a transaction of its own, again on ROOST_ERETRY. */
static int tx_run(struct webhooks *w, int (*fn)(struct webhooks *w, void *arg), void *arg)
{
    int rc = ROOST_ERETRY;
    for (int i = 0; i < TX_TRIES && rc == ROOST_ERETRY; i++) {
        if ((rc = STORE_OP(w, store_call0(w->st, begin))) != ROOST_OK) {
            continue;
        }
        rc = fn(w, arg);
        if (rc == ROOST_OK) {
            rc = STORE_OP(w, store_call0(w->st, commit));
        } else {
            (void)STORE_OP(w, store_call0(w->st, rollback));
        }
    }
    return rc;
}

struct claim_ctx {
    const struct store_endpoint *e;
    size_t room;
    int64_t lease_s;
    struct store_events evs;
    bool more;
};

static int claim_tx(struct webhooks *w, void *arg)
{
    struct claim_ctx *c = arg;
    store_events_cleanup(&c->evs);
    memset(&c->evs, 0, sizeof c->evs);
    c->more = false;
    return STORE_OP(w, store_call(w->st, claim, c->e->tenant_id, c->e->agent_id, c->room,
                                  CLAIM_MAX_BYTES, c->lease_s, CONSUMER, time_now_ms(), &c->evs,
                                  &c->more));
}

/* How a finished delivery settles its lease. */
struct settle_ctx {
    const struct delivery *d;
    bool ack;
    enum store_release_reason reason;
    int64_t delay_s;
    const char *why;
    int max_attempts;
    enum store_status to;
};

static int settle_tx(struct webhooks *w, void *arg)
{
    struct settle_ctx *c = arg;
    const struct delivery *d = c->d;
    int64_t now = time_now_ms();
    if (c->ack) {
        return STORE_OP(w, store_call(w->st, ack, d->tenant_id, d->agent_id, d->event_id,
                                      d->lease_token, now, NULL));
    }
    return STORE_OP(w, store_call(w->st, release, d->tenant_id, d->agent_id, d->event_id,
                                  d->lease_token, c->reason, c->delay_s, c->why, c->max_attempts,
                                  now, NULL, &c->to));
}

/* The body of a delivery: the event object as an agent's inbox read shows it (no lease token),
 * compact. NULL when out of memory. */
static char *delivery_body(const struct store_event *ev)
{
    json_t *o = event_to_json(ev, false, false);
    if (o != NULL) {
        json_object_set_new(o, "attempt", json_integer(ev->attempts));
    }
    char *text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

static void start_one(struct webhooks *w, const struct store_endpoint *e, size_t ep,
                      const struct store_event *ev)
{
    unsigned char key[WEBHOOKS_SECRET_MAX_BYTES];
    size_t key_len = 0;
    struct webhooks_headers h = {0};
    struct delivery *d = calloc(1, sizeof *d);
    char *body = delivery_body(ev);
    int rc =
        d != NULL && body != NULL ? webhooks_secret_key(e->secret, key, &key_len) : ROOST_ENOMEM;
    if (rc == ROOST_OK) {
        rc = webhooks_headers_build(w->signer, key, key_len, e->url, ev->event_id,
                                    time_now_ms() / 1000, body, strlen(body), &h);
    }
    int64_t timeout_ms = ep_timeout_ms(w, &w->eps[ep]);
    if (rc == ROOST_OK) {
        d->call = webhooks_call_new(&w->net, e->url, &h, body, strlen(body), (long)timeout_ms);
        rc = d->call != NULL ? ROOST_OK : ROOST_ENOMEM;
    }
    if (rc == ROOST_OK &&
        curl_multi_add_handle(w->multi, webhooks_call_easy(d->call)) != CURLM_OK) {
        rc = ROOST_ENOMEM;
    }
    free(body);
    if (rc != ROOST_OK) {
        /* Nothing was sent: the lease runs out and the event is claimed again. */
        log_warn("webhook not started", "tenant=%s endpoint=%s event=%s code=%s", e->tenant_id,
                 e->endpoint_id, ev->event_id, roost_err_code(rc));
        if (d != NULL) {
            webhooks_call_free(d->call);
        }
        free(d);
        return;
    }
    d->ep = ep;
    snprintf(d->tenant_id, sizeof d->tenant_id, "%s", e->tenant_id);
    snprintf(d->endpoint_id, sizeof d->endpoint_id, "%s", e->endpoint_id);
    snprintf(d->agent_id, sizeof d->agent_id, "%s", e->agent_id);
    snprintf(d->event_id, sizeof d->event_id, "%s", ev->event_id);
    snprintf(d->lease_token, sizeof d->lease_token, "%s", ev->lease_token);
    d->attempt = ev->attempts;
    d->at_ms = time_now_ms();
    d->timeout_ms = timeout_ms;
    curl_easy_setopt(webhooks_call_easy(d->call), CURLOPT_PRIVATE, d);
    d->next = w->deliveries;
    if (w->deliveries != NULL) {
        w->deliveries->prev = d;
    }
    w->deliveries = d;
    w->eps[ep].in_flight++;
    w->in_flight++;
    tenant_add(w, w->eps[ep].tenant, 1);
    if (w->max_per_s > 0) {
        w->eps[ep].tokens -= 1.0;
    }
}

/* A store error leaves the work for later: an endpoint whose listing, read or claim failed is
 * tried again after this. */
#define RETRY_MS 1000
/* The endpoint list is read again this often between sweeps (one paged listing, no claims), so
 * an endpoint registered or enabled through another node is served within this, not at the next
 * sweep. */
#define LIST_EVERY_MS 5000
/* A wake serves an endpoint as last read when that is this recent; older, it is read again first,
 * so one disabled, deleted or changed through another node is not served for longer than this. */
#define FRESH_MS 1000

static int cmp_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Publishes the keys of the active endpoints to webhooks_notify (which wakes are worth one). */
static void publish_watched(struct webhooks *w)
{
    uint64_t *keys = malloc((w->n_eps ? w->n_eps : 1) * sizeof *keys);
    size_t n = 0;
    if (keys == NULL) {
        /* Out of memory: the old list stays, and the sweeps still find every endpoint. */
        return;
    }
    for (size_t i = 0; i < w->n_eps; i++) {
        if (w->eps[i].active) {
            keys[n++] = w->eps[i].key;
        }
    }
    qsort(keys, n, sizeof *keys, cmp_key);
    pthread_mutex_lock(&w->lock);
    uint64_t *old = w->watched;
    w->watched = keys;
    w->n_watched = n;
    pthread_mutex_unlock(&w->lock);
    free(old);
}

/* Reads the active endpoints of every tenant: the ones not seen active before are marked dirty
 * (their events may predate them), and every one when `all` (a sweep); the ones no longer listed
 * stop being served. false when the store failed (nothing is dropped then). */
static bool load_endpoints(struct webhooks *w, bool all)
{
    struct store_endpoint *page = calloc(POLL_PAGE, sizeof *page);
    char after_tenant[STORE_ID_MAX + 1] = "", after_id[STORE_ENDPOINT_ID_LEN + 1] = "";
    size_t n = POLL_PAGE;
    bool ok = page != NULL;
    int64_t now = time_mono_ms();
    uint64_t gen = ++w->generation;
    while (ok && n == POLL_PAGE && !atomic_load(&w->stop)) {
        ok = STORE_OP(w, store_endpoints_active(w->st, after_tenant, after_id, POLL_PAGE, page,
                                                &n)) == ROOST_OK;
        for (size_t i = 0; ok && i < n; i++) {
            size_t k = ep_state(w, &page[i]);
            if (k == SIZE_MAX) {
                ok = false;
                break;
            }
            struct ep_state *s = &w->eps[k];
            s->dirty = s->dirty || all || !s->active;
            s->e = page[i];
            s->key = hash_tenant_agent(s->e.tenant_id, s->e.agent_id);
            s->active = true;
            s->seen = gen;
            s->fetched_ms = now;
        }
        if (ok && n > 0) {
            snprintf(after_tenant, sizeof after_tenant, "%s", page[n - 1].tenant_id);
            snprintf(after_id, sizeof after_id, "%s", page[n - 1].endpoint_id);
        }
    }
    free(page);
    if (!ok) {
        return false;
    }
    for (size_t i = 0; i < w->n_eps; i++) {
        if (w->eps[i].seen != gen) {
            w->eps[i].active = w->eps[i].dirty = false;
        }
    }
    publish_watched(w);
    return true;
}

/* Reads the endpoint again when its copy is older than FRESH_MS. false when it is no longer
 * active (or the store failed: then it is tried again after RETRY_MS). */
static bool ep_fresh(struct webhooks *w, struct ep_state *s, int64_t now)
{
    if (now - s->fetched_ms < FRESH_MS) {
        return true;
    }
    struct store_endpoint e;
    int rc = STORE_OP(w, store_endpoint_get(w->st, s->e.tenant_id, s->e.endpoint_id, &e));
    if (rc == ROOST_OK && e.status == STORE_ENDPOINT_ACTIVE) {
        s->e = e;
        s->fetched_ms = now;
        return true;
    }
    if (rc == ROOST_OK || rc == ROOST_EENDPOINTNOTFOUND) {
        /* Disabled or deleted elsewhere: served again once a listing shows it active. */
        s->active = s->dirty = false;
    } else {
        s->retry_ms = now + RETRY_MS;
    }
    return false;
}

/* Claims what a dirty endpoint has room for and starts those deliveries. It stays dirty while
 * the claim may have left events behind (no room, a full batch, a store error). */
static void serve_endpoint(struct webhooks *w, size_t ep, int64_t now)
{
    struct ep_state *s = &w->eps[ep];
    int room = ep_room(w, s);
    if (room == 0 || now < s->retry_ms || !ep_fresh(w, s, now)) {
        return;
    }
    /* The lease outlives the transfer (timeout_ms) by a margin for the ack. */
    struct claim_ctx c = {.e = &s->e, .room = (size_t)room, .lease_s = w->timeout_ms / 1000 + 3};
    int rc = tx_run(w, claim_tx, &c);
    for (size_t i = 0; rc == ROOST_OK && i < c.evs.len; i++) {
        start_one(w, &w->eps[ep].e, ep, &c.evs.items[i]);
    }
    store_events_cleanup(&c.evs);
    s = &w->eps[ep];
    s->dirty = rc != ROOST_OK || c.more;
    if (rc != ROOST_OK) {
        s->retry_ms = now + RETRY_MS;
    }
}

/* Takes the wakes the loop queued and marks their endpoints dirty; true when the endpoint list
 * must be read again (one was registered, enabled, disabled or deleted on this node). */
static bool take_wakes(struct webhooks *w)
{
    uint64_t wakes[WAKE_MAX];
    pthread_mutex_lock(&w->lock);
    size_t n = w->n_wakes;
    bool all = w->wake_all, reload = w->reload;
    memcpy(wakes, w->wakes, n * sizeof *wakes);
    w->n_wakes = 0;
    w->wake_all = w->reload = false;
    pthread_mutex_unlock(&w->lock);
    if (n == 0 && !all) {
        return reload;
    }
    qsort(wakes, n, sizeof *wakes, cmp_key);
    for (size_t i = 0; i < w->n_eps; i++) {
        struct ep_state *s = &w->eps[i];
        if (s->active && (all || bsearch(&s->key, wakes, n, sizeof *wakes, cmp_key) != NULL)) {
            s->dirty = true;
        }
    }
    return reload;
}

/* Serves every dirty endpoint that has room; returns how long the dispatcher may sleep before one
 * of them can be served again without a transfer finishing first (rate tokens, a retry), at most
 * `cap_ms`. */
static int64_t serve_dirty(struct webhooks *w, int64_t cap_ms)
{
    int64_t now = time_mono_ms(), wait = cap_ms;
    /* Round robin: each turn starts one endpoint further, so the endpoints listed first do not
     * take the slots that come free before the others are looked at. */
    size_t n = w->n_eps, first = n > 0 ? w->rr++ % n : 0;
    for (size_t k = 0; k < n && !atomic_load(&w->stop) && w->in_flight < w->max_total; k++) {
        size_t i = (first + k) % n;
        if (!w->eps[i].active || !w->eps[i].dirty) {
            continue;
        }
        serve_endpoint(w, i, now);
        const struct ep_state *s = &w->eps[i];
        if (!s->active || !s->dirty) {
            continue;
        }
        if (s->retry_ms > now) {
            wait = s->retry_ms - now < wait ? s->retry_ms - now : wait;
        } else if (ep_room(w, &w->eps[i]) > 0) {
            wait = 0; /* the claim stopped at its byte budget: the rest at once */
        } else if (w->max_per_s > 0 && s->in_flight < ep_max_in_flight(w, s)) {
            /* Out of rate tokens: the next one comes within 1/max_per_s s. */
            int64_t t = 1000 / w->max_per_s + 1;
            wait = t < wait ? t : wait;
        }
    }
    return wait;
}

/* The delay before the next try after failed attempt number `attempt` (1-based), jittered. */
static int64_t retry_delay_s(const struct webhooks *w, int attempt)
{
    size_t i = attempt >= 1 ? (size_t)attempt - 1 : 0;
    int64_t base = w->schedule_s[i < w->n_schedule ? i : w->n_schedule - 1];
    uint32_t r = 0;
    if (w->jitter_pct > 0 && ids_random(&r, sizeof r) == 0) {
        base += (int64_t)((double)base * (double)w->jitter_pct / 100.0 * (r / 4294967296.0));
    }
    return base;
}

static void finish(struct webhooks *w, struct delivery *d, int code)
{
    struct webhooks_result r;
    webhooks_call_finish(d->call, code, &r);
    int64_t now = time_now_ms();
    bool ok = strcmp(r.error_class, "ok") == 0;
    bool gone = strcmp(r.error_class, "gone") == 0;

    struct store_attempt a = {0};
    snprintf(a.endpoint_id, sizeof a.endpoint_id, "%s", d->endpoint_id);
    snprintf(a.agent_id, sizeof a.agent_id, "%s", d->agent_id);
    snprintf(a.event_id, sizeof a.event_id, "%s", d->event_id);
    a.at_ms = d->at_ms;
    a.attempt = d->attempt;
    a.status_code = (int)r.status;
    a.latency_ms = r.latency_ms;
    snprintf(a.error_class, sizeof a.error_class, "%s", r.error_class);
    snprintf(a.response_head, sizeof a.response_head, "%s", r.head);
    if (store_attempt_new_id(d->at_ms, a.attempt_id) == ROOST_OK) {
        (void)STORE_OP(w, store_attempt_add(w->st, d->tenant_id, &a));
    }

    bool disabled = false;
    char why[64];
    snprintf(why, sizeof why, "webhook: %s %ld", r.error_class, r.status);
    struct settle_ctx c = {.d = d, .ack = ok, .to = STORE_PENDING};
    if (gone) {
        /* 410: the receiver is gone for good. The event goes back untouched for the agent to
         * pull; the endpoint stops. */
        c.reason = STORE_RELEASE_SHUTDOWN;
    } else if (!ok) {
        /* Each failure counts a nack; once the schedule is spent (attempts reach its length + 1)
         * the store quarantines the event. */
        c.reason = STORE_RELEASE_TRANSIENT;
        c.delay_s = retry_delay_s(w, d->attempt);
        c.why = why;
        c.max_attempts = (int)w->n_schedule + 1;
    }
    /* On failure the lease runs out and the event is delivered again. */
    int rc = tx_run(w, settle_tx, &c);
    enum store_status to = c.to;
    if (gone) {
        disabled = STORE_OP(w, store_endpoint_set_status(w->st, d->tenant_id, d->endpoint_id,
                                                         STORE_ENDPOINT_DISABLED, "gone", now)) ==
                   ROOST_OK;
    }
    if (!gone) {
        (void)STORE_OP(w, store_endpoint_result(w->st, d->tenant_id, d->endpoint_id, ok, now,
                                                w->disable_after_ms, &disabled));
    }
    struct ep_state *s = &w->eps[d->ep];
    if (strcmp(r.error_class, "timeout") == 0) {
        s->timeouts += s->timeouts < 1000;
    } else if (r.status != 0) {
        s->timeouts = 0; /* it answers again */
    }
    if (disabled) {
        s->active = s->dirty = false;
    } else if (rc == ROOST_OK && !ok && to == STORE_PENDING) {
        /* Back to pending at once (a 0 s retry delay): no commit of another wakes it. */
        s->dirty = true;
    }
    log_info("webhook attempt",
             "tenant=%s endpoint=%s event=%s attempt=%d status=%ld class=%s latency_ms=%lld "
             "timeout_ms=%lld store=%s%s%s",
             d->tenant_id, d->endpoint_id, d->event_id, d->attempt, r.status, r.error_class,
             (long long)r.latency_ms, (long long)d->timeout_ms, roost_err_code(rc),
             to == STORE_QUARANTINED ? " quarantined=1" : "", disabled ? " disabled=1" : "");
    if (w->metrics != NULL) {
        metrics_webhook_attempt(w->metrics, d->tenant_id, d->endpoint_id, ok, disabled,
                                (double)r.latency_ms / 1000.0);
    }
    webhooks_result_cleanup(&r);
}

/* Settles every finished transfer; returns how many. */
static size_t reap(struct webhooks *w)
{
    CURLMsg *m;
    int left;
    size_t n = 0;
    while ((m = curl_multi_info_read(w->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE) {
            continue;
        }
        struct delivery *d = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&d);
        CURLcode code = m->data.result;
        curl_multi_remove_handle(w->multi, m->easy_handle);
        if (d == NULL) {
            continue;
        }
        finish(w, d, (int)code);
        if (d->prev != NULL) {
            d->prev->next = d->next;
        } else {
            w->deliveries = d->next;
        }
        if (d->next != NULL) {
            d->next->prev = d->prev;
        }
        w->eps[d->ep].in_flight--;
        w->in_flight--;
        tenant_add(w, w->eps[d->ep].tenant, -1);
        webhooks_call_free(d->call);
        free(d);
        n++;
    }
    return n;
}

/* The dispatcher waits for work: a wake from the loop (an inbox change of an agent with an
 * endpoint, from this node's commits or, through the tailer, other nodes'), a transfer finishing,
 * the endpoint list read again every LIST_EVERY_MS (endpoints registered or enabled through
 * another node), or the sweep every webhooks.poll_ms that serves them all (what no wake
 * announced: a change the tailer missed). Idle, it makes one listing every LIST_EVERY_MS. */
static void *run(void *arg)
{
    struct webhooks *w = arg;
    int64_t next_sweep = 0, next_prune = 0, next_load = 0, next_list = 0;
    bool reload = false;
    while (!atomic_load(&w->stop)) {
        reload = take_wakes(w) || reload;
        int64_t now = time_mono_ms();
        bool sweep = now >= next_sweep;
        if (sweep || now >= next_list || (reload && now >= next_load)) {
            if (load_endpoints(w, sweep)) {
                reload = false;
                next_list = now + LIST_EVERY_MS;
                next_sweep = sweep ? now + w->poll_ms : next_sweep;
            } else {
                next_load = next_list = now + RETRY_MS;
                next_sweep = sweep ? next_load : next_sweep;
            }
        }
        if (now >= next_prune) {
            size_t count = 0;
            (void)STORE_OP(w, store_attempt_prune(w->st, time_now_ms() - w->retention_ms,
                                                  PRUNE_BATCH, &count));
            next_prune = now + (count == PRUNE_BATCH ? 100 : PRUNE_EVERY_MS);
        }
        int64_t wait = serve_dirty(w, 1000);
        int running = 0;
        curl_multi_perform(w->multi, &running);
        if (reap(w) > 0) {
            continue; /* room came free: serve what waits for it at once */
        }
        now = time_mono_ms();
        int64_t until = (next_sweep < next_prune ? next_sweep : next_prune) - now;
        until = next_list - now < until ? next_list - now : until;
        if (reload) {
            until = next_load - now < until ? next_load - now : until;
        }
        wait = until < wait ? until : wait;
        curl_multi_poll(w->multi, NULL, 0, (int)(wait < 1 ? 1 : wait), NULL);
    }
    return NULL;
}

static void webhooks_free(struct webhooks *w)
{
    if (w->multi != NULL) {
        /* Abandoned deliveries: their leases expire and another attempt follows. */
        while (w->deliveries != NULL) {
            struct delivery *d = w->deliveries;
            w->deliveries = d->next;
            curl_multi_remove_handle(w->multi, webhooks_call_easy(d->call));
            webhooks_call_free(d->call);
            free(d);
        }
        curl_multi_cleanup(w->multi);
    }
    store_close(w->st);
    free(w->eps);
    free(w->slots);
    free(w->tenants);
    free(w->watched);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

static void curl_init_once(void)
{
    (void)curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct webhooks *webhooks_start(const struct config *cfg, const char *url,
                                const struct store_options *opt,
                                const struct webhooks_signer *signer, struct metrics *metrics,
                                char *err, size_t errlen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, curl_init_once);
    struct webhooks *w = calloc(1, sizeof *w);
    if (w == NULL) {
        snprintf(err, errlen, "webhooks: out of memory");
        return NULL;
    }
    pthread_mutex_init(&w->lock, NULL);
    w->signer = signer;
    w->metrics = metrics;
    w->jitter_pct = cfg->webhooks_jitter_pct;
    w->disable_after_ms = cfg->webhooks_disable_after_s * 1000;
    w->timeout_ms = cfg->webhooks_timeout_ms;
    w->poll_ms = cfg->webhooks_poll_ms;
    w->retention_ms = cfg->webhooks_attempt_retention_s * 1000;
    w->max_in_flight = cfg->webhooks_max_in_flight;
    w->max_per_s = cfg->webhooks_max_per_s;
    w->max_total = cfg->webhooks_max_total_in_flight;
    /* 0: a quarter of the node's slots (at least one), so four tenants' hanging endpoints are
     * needed to hold them all. */
    w->max_tenant = cfg->webhooks_max_tenant_in_flight > 0 ? cfg->webhooks_max_tenant_in_flight
                    : w->max_total / 4 > 0                 ? w->max_total / 4
                                                           : 1;
    w->tenants = calloc((size_t)w->max_total, sizeof *w->tenants);
    if (w->tenants == NULL) {
        snprintf(err, errlen, "webhooks: out of memory");
        webhooks_free(w);
        return NULL;
    }
    if (webhooks_net_init(&w->net, cfg, err, errlen) != 0 ||
        webhooks_parse_schedule(cfg->webhooks_retry_schedule_s, w->schedule_s, &w->n_schedule, err,
                                errlen) != 0) {
        webhooks_free(w);
        return NULL;
    }
    const char *why = NULL;
    int rc = store_open(url, opt, &w->st, &why);
    if (rc != ROOST_OK || (w->multi = curl_multi_init()) == NULL) {
        snprintf(err, errlen, "webhooks: cannot open the store: %s",
                 why != NULL ? why : roost_strerror(rc));
        webhooks_free(w);
        return NULL;
    }
    if (pthread_create(&w->thread, NULL, run, w) != 0) {
        snprintf(err, errlen, "webhooks: cannot start the dispatcher thread");
        webhooks_free(w);
        return NULL;
    }
    w->started = true;
    return w;
}

void webhooks_notify(struct webhooks *w, const char *tenant_id, const char *agent_id)
{
    if (w == NULL) {
        return;
    }
    uint64_t key = hash_tenant_agent(tenant_id, agent_id);
    bool wake = false;
    pthread_mutex_lock(&w->lock);
    if (w->n_watched > 0 && bsearch(&key, w->watched, w->n_watched, sizeof key, cmp_key) != NULL) {
        wake = w->n_wakes == 0 && !w->wake_all && !w->reload;
        size_t i = 0;
        while (i < w->n_wakes && w->wakes[i] != key) {
            i++;
        }
        if (i == w->n_wakes && i < WAKE_MAX) {
            w->wakes[w->n_wakes++] = key;
        } else if (i == WAKE_MAX) {
            w->wake_all = true;
        }
    }
    pthread_mutex_unlock(&w->lock);
    if (wake) {
        /* Only the first wake of a turn: the dispatcher takes them all at once. */
        curl_multi_wakeup(w->multi);
    }
}

void webhooks_reload(struct webhooks *w)
{
    if (w == NULL) {
        return;
    }
    pthread_mutex_lock(&w->lock);
    bool wake = w->n_wakes == 0 && !w->wake_all && !w->reload;
    w->reload = true;
    pthread_mutex_unlock(&w->lock);
    if (wake) {
        curl_multi_wakeup(w->multi);
    }
}

void webhooks_stop(struct webhooks *w)
{
    if (w == NULL) {
        return;
    }
    atomic_store(&w->stop, true);
    if (w->started) {
        curl_multi_wakeup(w->multi);
        pthread_join(w->thread, NULL);
    }
    webhooks_free(w);
}
