/* SPDX-License-Identifier: MIT */
/* What the request side shares at run time: the config, the stores (shards) with their workers,
 * auth, the long-poll waiters, the SSE hub, the metrics, and the count of work in flight that a
 * graceful shutdown waits for. The daemon (daemon.c) builds it; routes, the router, signatures
 * and the scheduler use it. Loop thread only. The leaves it holds (workers, waiters, sse_hub,
 * metrics) never include this header: they get what they need as arguments. */
#ifndef ROOST_SERVER_RUNTIME_H
#define ROOST_SERVER_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/server_key.h"

struct access_log;
struct auth;
struct config;
struct event_base;
struct metrics;
struct ratelimit;
struct scheduler;
struct sse_hub;
struct store_touches;
struct waiters;
struct webhooks;
struct webhooks_net;
struct webhooks_signer;
struct workers;

/* One store (a database) with its threads and its scheduler: the default one (store.url) and one
 * per store.tenant.* entry (DESIGN §8.3: tenants mapped to shards by configuration). */
struct shard {
    const char *tenant_id; /* NULL: the default store; borrowed from the config */
    const char *url;
    struct workers *workers;
    struct scheduler *sched;
    struct webhooks *webhooks; /* its webhook dispatcher; NULL when webhooks.enabled is false */
};

struct runtime {
    struct config *cfg; /* reloadable keys change on SIGHUP, between requests */
    struct event_base *base;
    struct shard *shards; /* shards[0] is the default store */
    size_t n_shards;
    struct auth *auth; /* swapped by a reload */
    struct waiters *waiters;
    struct sse_hub *sse;
    struct metrics *metrics;
    struct access_log *access_log; /* the request lines (access_log.h) */
    struct ratelimit *publish_rl;  /* limits.publish_rows_per_s, per tenant */
    struct ratelimit *ticket_rl;   /* limits.tickets_per_s, per tenant */
    struct ratelimit *register_rl; /* webhooks.registrations_per_min, per tenant */
    struct ratelimit *ingest_rl;   /* ingest.rate_per_s, per inbound webhook source */
    struct ratelimit *device_rl;   /* oauth.device_authorizations_per_min, per client address */
    struct server_key sign_key;    /* roostd's Ed25519 signing key, served at /api/v1/keys/server */
    /* Webhooks: the signer (sign_key and its kid) and what registrations may reach. */
    struct webhooks_signer *hook_signer;
    struct webhooks_net *hook_net;
    char base_url[80];
    bool draining;
    /* Held work: requests accepted and not yet answered, answers still being written while
     * draining, background jobs (scheduler, metrics snapshot) in flight. Changed only through
     * runtime_hold() and runtime_release(). */
    size_t inflight;
};

/* The store (shard) holding `tenant_id`'s data. */
struct shard *runtime_shard(struct runtime *rt, const char *tenant_id);
/* The workers of the store holding `tenant_id`'s data. */
struct workers *runtime_workers(struct runtime *rt, const char *tenant_id);

/* After COMMIT: wakes the long-pollers, pings the SSE subscribers and wakes the webhook dispatcher
 * of every touched agent. */
void runtime_notify(struct runtime *rt, const struct store_touches *touches);

/* Counts one piece of work a shutdown must wait for. */
void runtime_hold(struct runtime *rt);
/* Ends one held piece of work; while draining, the last one ends the loop. */
void runtime_release(struct runtime *rt);
/* While draining: ends the loop once nothing is held and no stream is open. */
void runtime_drain_check(struct runtime *rt);

#endif
