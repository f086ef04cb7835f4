/* SPDX-License-Identifier: MIT */
/* The shared run-time context (see runtime.h): shard lookup, notification after a commit, and
 * the in-flight count that gates shutdown. */
#include "server/runtime.h"

#include <event2/event.h>
#include <string.h>

#include "server/sse_hub.h"
#include "server/waiters.h"
#include "server/webhooks.h"
#include "store/store.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

struct shard *runtime_shard(struct runtime *rt, const char *tenant_id)
{
    /* Few shards (CONFIG_MAX_TENANT_STORES): a linear scan costs less than a hash lookup. */
    for (size_t i = 1; i < rt->n_shards; i++) {
        if (strcmp(rt->shards[i].tenant_id, tenant_id) == 0) {
            return &rt->shards[i];
        }
    }
    return &rt->shards[0];
}

struct workers *runtime_workers(struct runtime *rt, const char *tenant_id)
{
    return runtime_shard(rt, tenant_id)->workers;
}

void runtime_notify(struct runtime *rt, const struct store_touches *touches)
{
    for (size_t i = 0; i < touches->len; i++) {
        const struct store_touch *t = &touches->items[i];
        waiters_notify(rt->waiters, t->tenant_id, t->agent_id);
        sse_hub_notify(rt->sse, t->tenant_id, t->agent_id, t->head);
        webhooks_notify(runtime_shard(rt, t->tenant_id)->webhooks, t->tenant_id, t->agent_id);
    }
}

void runtime_hold(struct runtime *rt)
{
    rt->inflight++;
}

void runtime_release(struct runtime *rt)
{
    rt->inflight--;
    runtime_drain_check(rt);
}

void runtime_drain_check(struct runtime *rt)
{
    if (rt->draining && rt->inflight == 0 && sse_hub_count(rt->sse) == 0) {
        event_base_loopexit(rt->base, NULL);
    }
}
