/* SPDX-License-Identifier: MIT */
/* The webhook dispatcher of one store (webhooks.h). A thread with its own store connection and a
 * libcurl multi handle: every webhooks.poll_ms it lists the active endpoints and, for each with
 * room (webhooks.max_in_flight, webhooks.max_per_s), claims that agent's events under a lease
 * and starts their POSTs; finished transfers are acked (2xx) or released with the retry
 * schedule, and every attempt is logged. Transfers run side by side in the multi handle, each
 * with its own timeout, so one slow endpoint never delays another. The inbox lease is the only
 * lock: any number of nodes run a dispatcher on the same store, and a delivery interrupted by a
 * crash is delivered again once its lease expires. */
#include "server/webhooks.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "server/api_json.h"
#include "server/config.h"
#include "server/metrics.h"
#include "store/store.h"

#include "common/banned.h"

#define CONSUMER "roostd-webhooks"
/* Endpoints listed per store round trip while polling. */
#define POLL_PAGE 64
/* The attempt log is pruned this often, this many rows per statement. */
#define PRUNE_EVERY_MS 60000
#define PRUNE_BATCH 1000
/* The byte budget of one claim (the events of one endpoint's free slots). */
#define CLAIM_MAX_BYTES (4u << 20)

/* What this node knows of an endpoint between polls: its deliveries in flight and its rate
 * bucket. Entries of endpoints that disappeared stay (a few bytes each) until the stop. */
struct ep_state {
    char tenant_id[STORE_ID_MAX + 1];
    char endpoint_id[STORE_ENDPOINT_ID_LEN + 1];
    int in_flight;
    double tokens;
    int64_t refill_ms;
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
};

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
    int64_t max_in_flight, max_per_s, max_total;
    struct ep_state *eps;
    size_t n_eps, cap_eps;
    struct delivery *deliveries; /* in flight */
    int in_flight;
};

/* The index of the endpoint's state, created on first sight; SIZE_MAX when out of memory. */
static size_t ep_state(struct webhooks *w, const struct store_endpoint *e)
{
    for (size_t i = 0; i < w->n_eps; i++) {
        if (strcmp(w->eps[i].endpoint_id, e->endpoint_id) == 0 &&
            strcmp(w->eps[i].tenant_id, e->tenant_id) == 0) {
            return i;
        }
    }
    if (w->n_eps == w->cap_eps) {
        size_t cap = w->cap_eps ? w->cap_eps * 2 : 16;
        struct ep_state *grown = realloc(w->eps, cap * sizeof *grown);
        if (grown == NULL) {
            return SIZE_MAX;
        }
        w->eps = grown;
        w->cap_eps = cap;
    }
    struct ep_state *s = &w->eps[w->n_eps];
    memset(s, 0, sizeof *s);
    snprintf(s->tenant_id, sizeof s->tenant_id, "%s", e->tenant_id);
    snprintf(s->endpoint_id, sizeof s->endpoint_id, "%s", e->endpoint_id);
    s->tokens = (double)w->max_per_s;
    s->refill_ms = time_mono_ms();
    return w->n_eps++;
}

/* How many deliveries the endpoint may start now (concurrency, rate, the node's total). */
static int ep_room(struct webhooks *w, struct ep_state *s)
{
    int room = (int)w->max_in_flight - s->in_flight;
    int total = (int)w->max_total - w->in_flight;
    room = room < total ? room : total;
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
        if ((rc = store_call0(w->st, begin)) != ROOST_OK) {
            continue;
        }
        rc = fn(w, arg);
        if (rc == ROOST_OK) {
            rc = store_call0(w->st, commit);
        } else {
            (void)store_call0(w->st, rollback);
        }
    }
    return rc;
}

struct claim_ctx {
    const struct store_endpoint *e;
    size_t room;
    int64_t lease_s;
    struct store_events evs;
};

static int claim_tx(struct webhooks *w, void *arg)
{
    struct claim_ctx *c = arg;
    store_events_cleanup(&c->evs);
    memset(&c->evs, 0, sizeof c->evs);
    return store_call(w->st, claim, c->e->tenant_id, c->e->agent_id, c->room, CLAIM_MAX_BYTES,
                      c->lease_s, CONSUMER, time_now_ms(), &c->evs, NULL);
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
        return store_call(w->st, ack, d->tenant_id, d->agent_id, d->event_id, d->lease_token, now,
                          NULL);
    }
    return store_call(w->st, release, d->tenant_id, d->agent_id, d->event_id, d->lease_token,
                      c->reason, c->delay_s, c->why, c->max_attempts, now, NULL, &c->to);
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
    if (rc == ROOST_OK) {
        d->call = webhooks_call_new(&w->net, e->url, &h, body, strlen(body), (long)w->timeout_ms);
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
    curl_easy_setopt(webhooks_call_easy(d->call), CURLOPT_PRIVATE, d);
    d->next = w->deliveries;
    if (w->deliveries != NULL) {
        w->deliveries->prev = d;
    }
    w->deliveries = d;
    w->eps[ep].in_flight++;
    w->in_flight++;
    if (w->max_per_s > 0) {
        w->eps[ep].tokens -= 1.0;
    }
}

/* Claims what the endpoint has room for and starts those deliveries. */
static void serve_endpoint(struct webhooks *w, const struct store_endpoint *e)
{
    size_t ep = ep_state(w, e);
    int room = ep != SIZE_MAX ? ep_room(w, &w->eps[ep]) : 0;
    if (room == 0) {
        return;
    }
    /* The lease outlives the transfer (timeout_ms) by a margin for the ack. */
    struct claim_ctx c = {.e = e, .room = (size_t)room, .lease_s = w->timeout_ms / 1000 + 3};
    int rc = tx_run(w, claim_tx, &c);
    for (size_t i = 0; rc == ROOST_OK && i < c.evs.len; i++) {
        start_one(w, e, ep, &c.evs.items[i]);
    }
    store_events_cleanup(&c.evs);
}

static void poll_endpoints(struct webhooks *w)
{
    struct store_endpoint *page = calloc(POLL_PAGE, sizeof *page);
    char after_tenant[STORE_ID_MAX + 1] = "", after_id[STORE_ENDPOINT_ID_LEN + 1] = "";
    size_t n = POLL_PAGE;
    while (page != NULL && n == POLL_PAGE && !atomic_load(&w->stop) &&
           w->in_flight < w->max_total) {
        if (store_endpoints_active(w->st, after_tenant, after_id, POLL_PAGE, page, &n) !=
            ROOST_OK) {
            break;
        }
        for (size_t i = 0; i < n; i++) {
            serve_endpoint(w, &page[i]);
        }
        if (n > 0) {
            snprintf(after_tenant, sizeof after_tenant, "%s", page[n - 1].tenant_id);
            snprintf(after_id, sizeof after_id, "%s", page[n - 1].endpoint_id);
        }
    }
    free(page);
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
        (void)store_attempt_add(w->st, d->tenant_id, &a);
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
        disabled = store_endpoint_set_status(w->st, d->tenant_id, d->endpoint_id,
                                             STORE_ENDPOINT_DISABLED, "gone", now) == ROOST_OK;
    }
    if (!gone) {
        (void)store_endpoint_result(w->st, d->tenant_id, d->endpoint_id, ok, now,
                                    w->disable_after_ms, &disabled);
    }
    log_info("webhook attempt",
             "tenant=%s endpoint=%s event=%s attempt=%d status=%ld class=%s latency_ms=%lld "
             "store=%s%s%s",
             d->tenant_id, d->endpoint_id, d->event_id, d->attempt, r.status, r.error_class,
             (long long)r.latency_ms, roost_err_code(rc),
             to == STORE_QUARANTINED ? " quarantined=1" : "", disabled ? " disabled=1" : "");
    if (w->metrics != NULL) {
        metrics_webhook_attempt(w->metrics, d->tenant_id, d->endpoint_id, ok, disabled,
                                (double)r.latency_ms / 1000.0);
    }
    webhooks_result_cleanup(&r);
}

static void reap(struct webhooks *w)
{
    CURLMsg *m;
    int left;
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
        webhooks_call_free(d->call);
        free(d);
    }
}

static void *run(void *arg)
{
    struct webhooks *w = arg;
    int64_t next_poll = 0, next_prune = 0;
    while (!atomic_load(&w->stop)) {
        int64_t now = time_mono_ms();
        if (now >= next_poll) {
            poll_endpoints(w);
            next_poll = now + w->poll_ms;
        }
        if (now >= next_prune) {
            size_t count = 0;
            (void)store_attempt_prune(w->st, time_now_ms() - w->retention_ms, PRUNE_BATCH, &count);
            next_prune = now + (count == PRUNE_BATCH ? w->poll_ms : PRUNE_EVERY_MS);
        }
        int running = 0;
        curl_multi_perform(w->multi, &running);
        reap(w);
        int64_t wait = next_poll - time_mono_ms();
        wait = wait < 1 ? 1 : wait > 1000 ? 1000 : wait;
        curl_multi_poll(w->multi, NULL, 0, (int)wait, NULL);
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
