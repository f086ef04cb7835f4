/* SPDX-License-Identifier: MIT */
/* Prometheus metrics (text format 0.0.4 at /metrics). Counters and histograms move with events;
 * gauges that need a query come from a snapshot the loop refreshes on a timer
 * (metrics.refresh_ms) through one read-only store op on a reader worker, so a scrape never runs a
 * query. Label sets are bounded: routes are the router's names, store ops a fixed list, agents the
 * top-N by depth plus one "_other" series per tenant. */
#ifndef ROOST_METRICS_H
#define ROOST_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct config;
struct evbuffer;
struct event_base;
struct history;
struct metrics;
struct workers;

/* Most tenants a snapshot carries; more are left out of the per-tenant gauges (and counted in
 * roost_metrics_tenants_truncated). */
#define METRICS_MAX_TENANTS 1000

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/* ---- any thread (atomics) ---- */

/* A store op's run time on a worker; `op` is a job name (unknown names count as "other"). */
void metrics_store_op(struct metrics *m, const char *op, double seconds);
/* One group commit of `jobs` write jobs. */
void metrics_group_commit(struct metrics *m, size_t jobs);

/* One webhook delivery attempt to the tenant's endpoint (webhooks.c); disabled: this attempt
 * disabled the endpoint. */
void metrics_webhook_attempt(struct metrics *m, const char *tenant_id, const char *endpoint_id,
                             bool ok, bool disabled, double seconds);

/* ---- loop thread only ---- */

/* One answered request; `route` is the router table's name (borrowed static string). */
void metrics_http(struct metrics *m, const char *route, int status, double seconds);
/* An ack completed an event that became available at available_at_ms. */
void metrics_delivery(struct metrics *m, int64_t available_at_ms, int64_t now_ms);
void metrics_published(struct metrics *m, size_t events);
/* One inbound webhook delivery answered: outcome "accepted", "duplicate" or "refused". */
void metrics_ingest(struct metrics *m, const char *tenant_id, const char *source_id,
                    const char *outcome);
void metrics_lease_expired(struct metrics *m, size_t n);
void metrics_released(struct metrics *m, enum store_release_reason reason, size_t n);
void metrics_quarantined(struct metrics *m, size_t n);
void metrics_sse_ping(struct metrics *m);
/* A long-polling claim was answered from the transaction of the publish that woke it. */
void metrics_claim_with_publish(struct metrics *m);

/* Has the pool report its job run times and group commits here (workers_set_observer). */
void metrics_observe_workers(struct metrics *m, struct workers *w);

/* What the snapshot timer needs from the daemon; everything borrowed, outliving the metrics. */
struct metrics_env {
    struct event_base *base;
    const struct config *cfg; /* metrics.refresh_ms, metrics.top_agents: read at each refresh */
    /* The worker pool of store (shard) i, NULL past the last: a refresh walks them in turn. */
    struct workers *(*pool)(void *arg, size_t i);
    /* A snapshot job went out / came back: a shutdown waits for it (its done() uses m). */
    void (*hold)(void *arg);
    void (*release)(void *arg);
    void *arg;
};

/* Starts the refresh timer (first run at once); env is copied. Loop thread. 0 or -1. */
int metrics_start(struct metrics *m, const struct metrics_env *env);
/* Stops the timer; a snapshot job in flight finishes without re-arming. */
void metrics_stop(struct metrics *m);
/* false until the first snapshot arrived; then *age_ms = its age, *truncated = tenants were
 * left out. */
bool metrics_snapshot_info(const struct metrics *m, int64_t *age_ms, bool *truncated);
/* The last snapshot's numbers of one tenant, or NULL when it has no unfinished rows (or was left
 * out, or there is no snapshot yet). Valid until the next refresh; loop thread. */
const struct store_metrics_tenant *metrics_tenant(const struct metrics *m, const char *tenant_id);

/* The per-tenant chart samples every complete snapshot adds to (history.h). Loop thread. */
struct history *metrics_history(struct metrics *m);

/* The loop's own gauges at a scrape. */
struct metrics_live {
    size_t sse_subscribers; /* open SSE streams (the hub's count) */
    size_t long_polls;      /* parked long-polling reads and claims (waiters_parked) */
};

/* Appends the whole exposition to `out`. Returns 0, or -1 when out of memory. */
int metrics_render(struct metrics *m, const struct metrics_live *live, struct evbuffer *out);

#endif
