/* SPDX-License-Identifier: MIT */
/* Long-poll waiters (wait_s on inbox read and claim), indexed by (tenant, agent). A commit that
 * touches an agent fires its waiters, which re-run their query; a timer fires them with
 * timed_out set. Loop thread only.
 *
 * Lost wake-ups: a query runs on a worker while commits keep happening, so a waiter records the
 * bucket serial before submitting its query (waiters_serial) and, when the query comes back empty,
 * waiters_wait() refuses to sleep if the serial moved meanwhile: the caller re-runs at once.
 *
 * Drained agents: every change that makes an event claimable (a publish, a release, a requeue,
 * a scheduled event come due, an expired lease, another node's commit through the tail) notifies
 * the agent, so after a claim that left nothing claimable a new claim finds nothing until the
 * agent's bucket serial moves. A bucket remembers its last such agent (waiters_note_drained), and
 * a long-polling claim of it waits for the notify before asking the store (api_inbox.c): a
 * consumer that claims again after its acks costs the writers one job, not two. */
#ifndef ROOST_WAITERS_H
#define ROOST_WAITERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/limits.h"

struct event_base;
struct event;
struct waiters;

struct waiter {
    struct waiter *prev, *next;
    struct waiters *ws;
    unsigned bucket;
    bool linked;
    char tenant_id[ROOST_ID_MAX + 1];
    char agent_id[ROOST_ID_MAX + 1];
    struct event *timer;
    void (*fire)(struct waiter *w, bool timed_out);
    /* A parked claim: a publish to the agent may take it (waiters_take_claim) and run it in its
     * own transaction instead of firing it after its commit. */
    bool claim;
};

struct waiters *waiters_new(struct event_base *base);
void waiters_free(struct waiters *ws);

/* The serial of the agent's bucket; take it before submitting the query a waiter may wait on. */
uint64_t waiters_serial(struct waiters *ws, const char *tenant_id, const char *agent_id);
/* Parks `w` until the agent is notified or `deadline_mono_ms` passes. Returns false (nothing
 * parked) when the bucket serial moved since `serial`: re-run the query now. */
bool waiters_wait(struct waiters *ws, struct waiter *w, const char *tenant_id, const char *agent_id,
                  uint64_t serial, int64_t deadline_mono_ms);
/* Remembers that a claim of the agent, submitted when its bucket serial was `serial`, left
 * nothing claimable (it took every pending event, or found none). */
void waiters_note_drained(struct waiters *ws, const char *tenant_id, const char *agent_id,
                          uint64_t serial);
/* True when the agent's last claim left nothing claimable and nothing has touched the agent
 * since (the bucket serial did not move): a new claim would find nothing either, until a
 * notify. */
bool waiters_known_drained(struct waiters *ws, const char *tenant_id, const char *agent_id);
/* Unparks the agent's longest-parked claim without firing it, or returns NULL when none is
 * parked: the caller runs it now (a publish hands it its event in one transaction). */
struct waiter *waiters_take_claim(struct waiters *ws, const char *tenant_id, const char *agent_id);
/* Unparks without firing (idempotent). */
void waiters_cancel(struct waiter *w);
/* How many waiters are parked. */
size_t waiters_parked(const struct waiters *ws);
/* Fires every waiter of the agent (timed_out = false). */
void waiters_notify(struct waiters *ws, const char *tenant_id, const char *agent_id);
/* Fires every waiter with timed_out = true (shutdown). */
void waiters_fire_all(struct waiters *ws);

#endif
