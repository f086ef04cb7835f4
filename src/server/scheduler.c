/* SPDX-License-Identifier: MIT */
/* The scavenger, retention and tailer timers (see scheduler.h). Retention writes its archive
 * through archive.c. */
#include "server/scheduler.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "server/archive.h"
#include "server/config.h"
#include "server/metrics.h"
#include "server/runtime.h"
#include "server/webhooks_config.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

struct tick_job {
    struct job job;
    struct scheduler *sched;
    bool retention;
    /* inputs, copied from the config on the loop thread (SIGHUP may change it meanwhile) */
    int64_t batch, max_attempts, completed_s, max_age_s;
    int64_t receipt_retention_s; /* ingest.receipt_retention_s */
    int webhook_attempts;        /* webhooks.retry_schedule_s's deliveries (webhooks_config.h) */
    const char *data_dir;        /* not reloadable: stable */
    /* outputs */
    struct store_touches touches;
    size_t due, scavenged, quarantined, expired, nonces;
    struct store_retention_result ret;
    bool more;
};

/* The tailer (DESIGN §8.3): a read job that asks the store for changes committed by anyone since
 * the last look (other roostd nodes, applications calling roost_publish) and pings the local
 * subscribers and long-pollers of the agents they touched. This node's own commits come back too:
 * their pings are data-less hints, coalesced per subscriber, so a second one costs a few bytes. */
struct tail_job {
    struct job job;
    struct scheduler *sched;
    struct store_tail_pos pos; /* touched only by the one tail job in flight */
    struct store_touches touches;
};

struct scheduler {
    struct runtime *rt;
    struct workers *workers;
    struct event *scavenge_ev, *retention_ev, *tail_ev;
    struct tick_job scavenge_job, retention_job;
    struct tail_job tail_job;
    bool scavenge_busy, retention_busy, tail_busy, stopped;
};

static void arm(struct scheduler *s, struct event *ev, int64_t ms)
{
    if (s->stopped) {
        return;
    }
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(ev, &tv);
}

/* ---- jobs ---- */

static int run_tick(struct job *job, struct store *st)
{
    struct tick_job *t = (struct tick_job *)job;
    int64_t now = time_now_ms();
    size_t batch = (size_t)t->batch;
    store_touches_cleanup(&t->touches);
    t->due = t->scavenged = t->quarantined = t->expired = t->nonces = 0;
    int rc = store_call(st, promote_due, now, batch, &t->due, &t->touches);
    if (rc == ROOST_OK) {
        /* A delivery whose lease ran out (roostd killed or stalled mid-POST) counts as one
         * attempt of the webhook schedule, never of claim.max_attempts. */
        const struct store_scavenge_limits lim = {.max_attempts = (int)t->max_attempts,
                                                  .consumer = WEBHOOKS_CONSUMER,
                                                  .consumer_max_attempts = t->webhook_attempts};
        rc =
            store_call(st, scavenge, now, &lim, batch, &t->scavenged, &t->quarantined, &t->touches);
    }
    if (rc == ROOST_OK) {
        rc = store_call(st, expire, now, batch, &t->expired);
    }
    /* Nonces outlive their signature's expires only until here; a backend without signature
     * support leaves the op NULL. */
    if (rc == ROOST_OK && st->ops->nonce_prune != NULL) {
        rc = store_call(st, nonce_prune, now, batch, &t->nonces);
    }
    t->more = t->due == batch || t->scavenged == batch || t->expired == batch || t->nonces == batch;
    return rc;
}

static int run_retention(struct job *job, struct store *st)
{
    struct tick_job *t = (struct tick_job *)job;
    struct archive_batch batch = {.data_dir = t->data_dir};
    struct store_retention_req req = {
        .now_ms = time_now_ms(),
        .completed_s = t->completed_s,
        .max_age_s = t->max_age_s,
        .batch = (size_t)t->batch,
        .archive = archive_row,
        .archive_ctx = &batch,
    };
    memset(&t->ret, 0, sizeof t->ret);
    int rc = store_call(st, retention, &req, &t->ret);
    if (archive_finish(&batch) != 0 && rc == ROOST_OK) {
        rc = ROOST_EIO; /* not archived durably: the deletion rolls back */
    }
    /* Inbound webhook receipts are kept for a bounded time (DESIGN §6.5). */
    size_t receipts = 0;
    if (rc == ROOST_OK) {
        rc = store_call(st, receipt_prune, req.now_ms - t->receipt_retention_s * 1000,
                        (size_t)t->batch, &receipts);
    }
    t->more = rc == ROOST_OK && (t->ret.more || receipts == (size_t)t->batch);
    return rc;
}

static void tick_done(struct job *job)
{
    struct tick_job *t = (struct tick_job *)job;
    struct scheduler *s = t->sched;
    struct runtime *rt = s->rt;
    if (job->rc != ROOST_OK) {
        log_warn(t->retention ? "retention failed" : "scavenger failed", "error=%s",
                 roost_err_code(job->rc));
    } else if (t->retention) {
        if (t->ret.deleted) {
            log_info("retention", "deleted=%zu archived=%zu", t->ret.deleted, t->ret.archived);
        }
    } else {
        runtime_notify(rt, &t->touches);
        /* scavenged counts every expired lease, the quarantined ones included. */
        metrics_lease_expired(rt->metrics, t->scavenged);
        metrics_quarantined(rt->metrics, t->quarantined);
        if (t->scavenged || t->quarantined || t->expired) {
            log_info("scavenger", "due=%zu lease_expired=%zu quarantined=%zu expired=%zu", t->due,
                     t->scavenged, t->quarantined, t->expired);
        }
    }
    store_touches_cleanup(&t->touches);
    if (t->retention) {
        s->retention_busy = false;
        arm(s, s->retention_ev, t->more ? 0 : rt->cfg->retention_interval_ms);
    } else {
        s->scavenge_busy = false;
        arm(s, s->scavenge_ev, t->more ? 0 : rt->cfg->scavenger_interval_ms);
    }
    runtime_release(rt);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct tick_job *t = arg;
    struct scheduler *s = t->sched;
    bool *busy = t->retention ? &s->retention_busy : &s->scavenge_busy;
    if (*busy || s->stopped) {
        return;
    }
    *busy = true;
    const struct config *cfg = s->rt->cfg;
    t->batch = t->retention ? cfg->retention_batch : cfg->scavenger_batch;
    t->max_attempts = cfg->claim_max_attempts;
    t->webhook_attempts = webhooks_schedule_attempts(cfg->webhooks_retry_schedule_s);
    t->completed_s = cfg->retention_completed_s;
    t->receipt_retention_s = cfg->ingest_receipt_retention_s;
    t->max_age_s = cfg->retention_max_age_s;
    t->data_dir = cfg->data_dir;
    runtime_hold(s->rt);
    t->job.run = t->retention ? run_retention : run_tick;
    t->job.done = tick_done;
    t->job.write = true;
    t->job.name = t->retention ? "retention" : "scheduler";
    workers_submit(s->workers, &t->job);
}

static int run_tail(struct job *job, struct store *st)
{
    struct tail_job *t = (struct tail_job *)job;
    store_touches_cleanup(&t->touches);
    return store_call(st, tail, &t->pos, time_now_ms(), &t->touches);
}

static void tail_done(struct job *job)
{
    struct tail_job *t = (struct tail_job *)job;
    struct scheduler *s = t->sched;
    struct runtime *rt = s->rt;
    if (job->rc != ROOST_OK) {
        /* The store is down or the connection was lost: look again next time. */
        log_warn("tailer failed", "error=%s", roost_err_code(job->rc));
    } else {
        runtime_notify(rt, &t->touches);
    }
    store_touches_cleanup(&t->touches);
    s->tail_busy = false;
    arm(s, s->tail_ev, rt->cfg->tail_interval_ms);
    runtime_release(rt);
}

static void on_tail_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct scheduler *s = arg;
    if (s->tail_busy || s->stopped) {
        return;
    }
    s->tail_busy = true;
    runtime_hold(s->rt);
    s->tail_job.job.run = run_tail;
    s->tail_job.job.done = tail_done;
    s->tail_job.job.write = false;
    workers_submit(s->workers, &s->tail_job.job);
}

struct scheduler *scheduler_start(struct runtime *rt, struct workers *workers)
{
    struct scheduler *s = calloc(1, sizeof *s);
    if (!s) {
        return NULL;
    }
    s->rt = rt;
    s->workers = workers;
    s->scavenge_job.sched = s;
    s->retention_job.sched = s;
    s->retention_job.retention = true;
    s->scavenge_ev = evtimer_new(rt->base, on_timer, &s->scavenge_job);
    s->retention_ev = evtimer_new(rt->base, on_timer, &s->retention_job);
    if (!s->scavenge_ev || !s->retention_ev) {
        scheduler_free(s);
        return NULL;
    }
    arm(s, s->scavenge_ev, 0);
    arm(s, s->retention_ev, 0);
    /* Only backends with writers outside this process have a change log to tail. */
    if (workers_store_has(workers, STORE_CAP_CHANGE_LOG)) {
        s->tail_job.sched = s;
        if (!(s->tail_ev = evtimer_new(rt->base, on_tail_timer, s))) {
            scheduler_free(s);
            return NULL;
        }
        arm(s, s->tail_ev, 0);
    }
    return s;
}

void scheduler_stop(struct scheduler *s)
{
    if (s) {
        s->stopped = true;
        evtimer_del(s->scavenge_ev);
        evtimer_del(s->retention_ev);
        if (s->tail_ev) {
            evtimer_del(s->tail_ev);
        }
    }
}

void scheduler_free(struct scheduler *s)
{
    if (!s) {
        return;
    }
    if (s->scavenge_ev) {
        event_free(s->scavenge_ev);
    }
    if (s->retention_ev) {
        event_free(s->retention_ev);
    }
    if (s->tail_ev) {
        event_free(s->tail_ev);
    }
    store_tail_pos_cleanup(&s->tail_job.pos);
    store_touches_cleanup(&s->tail_job.touches);
    free(s);
}
