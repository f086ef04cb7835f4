/* SPDX-License-Identifier: MIT */
/* The shared run-time context (see runtime.h): shard lookup, notification after a commit, and
 * the in-flight count that gates shutdown. */
#include "server/runtime.h"

#include <event2/event.h>
#include <string.h>

#include "server/sse_hub.h"
#include "server/waiters.h"
#include "store/store.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

struct workers *runtime_workers(struct runtime *rt, const char *tenant_id)
{
    /* Few shards (CONFIG_MAX_TENANT_STORES): a linear scan costs less than a hash lookup. */
    for (size_t i = 1; i < rt->n_shards; i++) {
        if (strcmp(rt->shards[i].tenant_id, tenant_id) == 0) {
            return rt->shards[i].workers;
        }
    }
    return rt->shards[0].workers;
}

void runtime_notify(struct runtime *rt, const struct store_touches *touches)
{
    for (size_t i = 0; i < touches->len; i++) {
        waiters_notify(rt->waiters, touches->items[i].tenant_id, touches->items[i].agent_id);
        sse_hub_notify(rt->sse, touches->items[i].tenant_id, touches->items[i].agent_id,
                       touches->items[i].head);
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
