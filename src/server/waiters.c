/* SPDX-License-Identifier: MIT */
/* Long-poll waiters in a fixed hash table of doubly linked lists (see waiters.h). */
#include "server/waiters.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/timeutil.h"

#include "common/banned.h"

#define WAITER_BUCKETS 4096

/* The last agent of a bucket whose claim left nothing claimable, and the serial it was
 * submitted at. */
struct drained {
    bool set;
    uint64_t serial;
    char tenant_id[ROOST_ID_MAX + 1];
    char agent_id[ROOST_ID_MAX + 1];
};

struct waiters {
    struct event_base *base;
    struct waiter *heads[WAITER_BUCKETS];
    uint64_t serials[WAITER_BUCKETS];
    struct drained drained[WAITER_BUCKETS];
    size_t parked;
};

static unsigned bucket_of(const char *tenant_id, const char *agent_id)
{
    return (unsigned)(hash_tenant_agent(tenant_id, agent_id) % WAITER_BUCKETS);
}

struct waiters *waiters_new(struct event_base *base)
{
    struct waiters *ws = calloc(1, sizeof *ws);
    if (ws) {
        ws->base = base;
    }
    return ws;
}

void waiters_free(struct waiters *ws)
{
    if (ws) {
        waiters_fire_all(ws);
        free(ws);
    }
}

uint64_t waiters_serial(struct waiters *ws, const char *tenant_id, const char *agent_id)
{
    return ws->serials[bucket_of(tenant_id, agent_id)];
}

void waiters_note_drained(struct waiters *ws, const char *tenant_id, const char *agent_id,
                          uint64_t serial)
{
    unsigned b = bucket_of(tenant_id, agent_id);
    if (ws->serials[b] != serial) {
        return; /* touched since the claim was submitted: its answer may be old already */
    }
    struct drained *e = &ws->drained[b];
    e->set = true;
    e->serial = serial;
    snprintf(e->tenant_id, sizeof e->tenant_id, "%s", tenant_id);
    snprintf(e->agent_id, sizeof e->agent_id, "%s", agent_id);
}

bool waiters_known_drained(struct waiters *ws, const char *tenant_id, const char *agent_id)
{
    unsigned b = bucket_of(tenant_id, agent_id);
    const struct drained *e = &ws->drained[b];
    return e->set && e->serial == ws->serials[b] && strcmp(e->agent_id, agent_id) == 0 &&
           strcmp(e->tenant_id, tenant_id) == 0;
}

static void unlink_waiter(struct waiter *w)
{
    if (!w->linked) {
        return;
    }
    if (w->prev) {
        w->prev->next = w->next;
    } else {
        w->ws->heads[w->bucket] = w->next;
    }
    if (w->next) {
        w->next->prev = w->prev;
    }
    w->prev = w->next = NULL;
    w->linked = false;
    w->ws->parked--;
    if (w->timer) {
        event_free(w->timer);
        w->timer = NULL;
    }
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct waiter *w = arg;
    unlink_waiter(w);
    w->fire(w, true);
}

bool waiters_wait(struct waiters *ws, struct waiter *w, const char *tenant_id, const char *agent_id,
                  uint64_t serial, int64_t deadline_mono_ms)
{
    unsigned b = bucket_of(tenant_id, agent_id);
    if (ws->serials[b] != serial) {
        return false;
    }
    int64_t left = deadline_mono_ms - time_mono_ms();
    if (left < 0) {
        left = 0;
    }
    w->ws = ws;
    w->bucket = b;
    snprintf(w->tenant_id, sizeof w->tenant_id, "%s", tenant_id);
    snprintf(w->agent_id, sizeof w->agent_id, "%s", agent_id);
    w->timer = evtimer_new(ws->base, on_timeout, w);
    if (!w->timer) {
        return false;
    }
    struct timeval tv = {(time_t)(left / 1000), (suseconds_t)(left % 1000) * 1000};
    evtimer_add(w->timer, &tv);
    w->prev = NULL;
    w->next = ws->heads[b];
    if (w->next) {
        w->next->prev = w;
    }
    ws->heads[b] = w;
    w->linked = true;
    ws->parked++;
    return true;
}

struct waiter *waiters_take_claim(struct waiters *ws, const char *tenant_id, const char *agent_id)
{
    struct waiter *oldest = NULL; /* a waiter parks at its bucket's head */
    for (struct waiter *w = ws->heads[bucket_of(tenant_id, agent_id)]; w; w = w->next) {
        if (w->claim && strcmp(w->agent_id, agent_id) == 0 &&
            strcmp(w->tenant_id, tenant_id) == 0) {
            oldest = w;
        }
    }
    if (oldest != NULL) {
        unlink_waiter(oldest);
    }
    return oldest;
}

size_t waiters_parked(const struct waiters *ws)
{
    return ws->parked;
}

void waiters_cancel(struct waiter *w)
{
    unlink_waiter(w);
}

void waiters_notify(struct waiters *ws, const char *tenant_id, const char *agent_id)
{
    unsigned b = bucket_of(tenant_id, agent_id);
    ws->serials[b]++;
    /* Fire matching waiters; a fired waiter may re-park itself (on the same bucket, at the head),
     * so collect first, then fire. */
    struct waiter *fired = NULL;
    for (struct waiter *w = ws->heads[b], *next; w; w = next) {
        next = w->next;
        if (strcmp(w->tenant_id, tenant_id) == 0 && strcmp(w->agent_id, agent_id) == 0) {
            unlink_waiter(w);
            w->next = fired;
            fired = w;
        }
    }
    while (fired) {
        struct waiter *w = fired;
        fired = w->next;
        w->next = NULL;
        w->fire(w, false);
    }
}

void waiters_fire_all(struct waiters *ws)
{
    for (unsigned b = 0; b < WAITER_BUCKETS; b++) {
        while (ws->heads[b]) {
            struct waiter *w = ws->heads[b];
            unlink_waiter(w);
            w->fire(w, true);
        }
    }
}
