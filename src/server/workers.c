/* SPDX-License-Identifier: MIT */
/* Store worker threads and group commit (see workers.h). */
#include "server/workers.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/timeutil.h"
#include "roost/roost_error.h"
#include "store/store.h"

#include "common/banned.h"

/* A FIFO of jobs (intrusive through job->next). */
struct job_queue {
    struct job *head, *tail;
    size_t len;
};

static void queue_push(struct job_queue *q, struct job *job)
{
    job->next = NULL;
    if (q->tail) {
        q->tail->next = job;
    } else {
        q->head = job;
    }
    q->tail = job;
    q->len++;
}

static struct job *queue_pop(struct job_queue *q)
{
    struct job *job = q->head;
    if (job) {
        q->head = job->next;
        if (!q->head) {
            q->tail = NULL;
        }
        q->len--;
        job->next = NULL;
    }
    return job;
}

/* Removes job, which follows prev (NULL: job is the head), from q. */
static void queue_unlink(struct job_queue *q, struct job *prev, struct job *job)
{
    if (prev) {
        prev->next = job->next;
    } else {
        q->head = job->next;
    }
    if (q->tail == job) {
        q->tail = prev;
    }
    q->len--;
    job->next = NULL;
}

/* Readers of one kind (inbox reads, or scans) and their queue, under workers.mu. */
struct lane {
    struct job_queue q;
    pthread_cond_t cv;
    int readers;          /* threads serving it */
    int share;            /* most of them one tenant's jobs may hold at once */
    uint64_t last_tenant; /* the tenant of the job taken last (round robin) */
};

struct thread_slot {
    struct workers *w;
    pthread_t thread;
    struct store *st;
    bool writer;
    bool started;
    /* Readers only: their lane, and under workers.mu the tenant of the job running (busy). */
    struct lane *lane;
    bool busy;
    uint64_t running_tenant;
    int index; /* among the writers (0 = the first) */
    /* Writers only, under workers.mu: their queue, signalled on cv, and the group they run. */
    pthread_cond_t cv;
    struct job_queue writes;
    uint64_t last_tenant; /* the tenant of the job taken last into a group (round robin) */
    struct job **running;
    size_t n_running;
    /* The running group has sent (or is about to send) its COMMIT: its statements are done, so
     * its agents' jobs need not wait for it (overlap, see writer_for). */
    bool committing;
};

struct workers {
    pthread_mutex_t mu;
    struct lane reads, scans;
    bool stopping;
    bool joined; /* workers_free joined the threads: a job submitted now can no longer run */
    int group_max;

    /* completions, handed to the loop */
    pthread_mutex_t done_mu;
    struct job_queue done;
    struct event *wake_ev;

    struct thread_slot *slots;
    int n_slots, n_writers;
    bool overlap; /* workers_set_overlap */

    pthread_mutex_t stats_mu;
    struct workers_stats stats;
    struct workers_observer obs; /* set before any job runs; its callbacks are thread-safe */
};

/* Runs a job, timing it for roost_store_op_duration_seconds. */
static int run_job(struct workers *w, struct job *job, struct store *st)
{
    if (w->obs.job_ran == NULL) {
        return job->run(job, st);
    }
    int64_t t0 = time_mono_us();
    int rc = job->run(job, st);
    w->obs.job_ran(w->obs.arg, job->name, (double)(time_mono_us() - t0) / 1e6);
    return rc;
}

/* Reports how long jobs[0..n) waited in their queue, from their submission to now. */
static void report_queued(struct workers *w, struct job *const *jobs, size_t n)
{
    if (w->obs.job_queued == NULL || n == 0) {
        return;
    }
    int64_t now = time_mono_us();
    for (size_t i = 0; i < n; i++) {
        w->obs.job_queued(w->obs.arg, jobs[i]->name, (double)(now - jobs[i]->stamp_us) / 1e6);
    }
}

/* Hands the job (and its follower, with the job's answer: it ran in the job's transaction, or
 * it never ran) to the loop. */
static void complete(struct workers *w, struct job *job)
{
    struct job *f = job->follower;
    job->follower = NULL;
    job->stamp_us = time_mono_us();
    pthread_mutex_lock(&w->done_mu);
    bool was_empty = w->done.len == 0;
    queue_push(&w->done, job);
    if (f != NULL) {
        f->rc = job->rc;
        f->stamp_us = job->stamp_us;
        queue_push(&w->done, f); /* after its leader: that done() comes first */
    }
    pthread_mutex_unlock(&w->done_mu);
    if (was_empty) {
        event_active(w->wake_ev, 0, 0);
    }
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct workers *w = arg;
    pthread_mutex_lock(&w->done_mu);
    struct job_queue batch = w->done;
    memset(&w->done, 0, sizeof w->done);
    pthread_mutex_unlock(&w->done_mu);
    struct job *job;
    while ((job = queue_pop(&batch)) != NULL) {
        if (w->obs.job_returned != NULL) {
            w->obs.job_returned(w->obs.arg, (double)(time_mono_us() - job->stamp_us) / 1e6);
        }
        job->done(job);
    }
}

/* How many of lane's readers run a job of tenant (under w->mu). */
static int lane_running(const struct workers *w, const struct lane *l, uint64_t tenant)
{
    int n = 0;
    for (int i = 0; i < w->n_slots; i++) {
        const struct thread_slot *s = &w->slots[i];
        n += s->lane == l && s->busy && s->running_tenant == tenant;
    }
    return n;
}

/* The job to take from q next, in turn between tenants (under w->mu): the first job of a tenant
 * other than `last` (or of no tenant) when there is one, else the first; jobs `held` (NULL: none)
 * passes over stay queued, and *passed (may be NULL) says some were. Each tenant's jobs keep
 * their order. NULL when q is empty or every job is held. */
static struct job *queue_peek_fair(const struct job_queue *q, uint64_t last,
                                   bool (*held)(const struct job *, void *), void *arg,
                                   bool *passed)
{
    struct job *pick = NULL;
    for (struct job *j = q->head; j != NULL; j = j->next) {
        if (held != NULL && held(j, arg)) {
            *passed = true;
            continue;
        }
        if (pick == NULL) {
            pick = j;
        }
        if (j->tenant == 0 || j->tenant != last) {
            pick = j;
            break;
        }
    }
    return pick;
}

/* Unlinks job (queued in q) and makes its tenant the last one served. */
static void queue_take(struct job_queue *q, struct job *job, uint64_t *last)
{
    struct job *prev = NULL;
    for (struct job *j = q->head; j != job; j = j->next) {
        prev = j;
    }
    queue_unlink(q, prev, job);
    *last = job->tenant;
}

struct lane_ctx {
    struct workers *w;
    struct lane *l;
};

/* A read whose tenant already runs on its share of the lane's readers waits. */
static bool lane_held(const struct job *j, void *arg)
{
    const struct lane_ctx *c = arg;
    return j->tenant != 0 && lane_running(c->w, c->l, j->tenant) >= c->l->share;
}

/* The job a free reader of lane l takes (under w->mu), unlinked from the queue, or NULL when
 * every queued job's tenant holds its share. */
static struct job *lane_take(struct workers *w, struct lane *l)
{
    struct lane_ctx c = {w, l};
    bool deferred = false;
    struct job *pick = queue_peek_fair(&l->q, l->last_tenant, lane_held, &c, &deferred);
    if (pick != NULL) {
        queue_take(&l->q, pick, &l->last_tenant);
    }
    if (deferred) {
        pthread_mutex_lock(&w->stats_mu);
        w->stats.reads_deferred++;
        pthread_mutex_unlock(&w->stats_mu);
    }
    return pick;
}

static void *reader_main(void *arg)
{
    struct thread_slot *slot = arg;
    struct workers *w = slot->w;
    struct lane *l = slot->lane;
#ifdef SYS_gettid
    if (l == &w->scans) {
        /* Scans and bulk reads yield the CPU to the rest (Linux: a thread's own nice value). On a
         * busy machine a tenant scanning in six loops otherwise slowed another's whole cycle
         * 15-fold at p99 (scripts/bench_fairness.py); it makes the scan slower only while
         * something else wants the CPU. Failing to set it changes nothing else. */
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), WORKERS_SCAN_NICE);
    }
#endif
    for (;;) {
        pthread_mutex_lock(&w->mu);
        struct job *job;
        while ((job = lane_take(w, l)) == NULL && !(w->stopping && l->q.len == 0)) {
            pthread_cond_wait(&l->cv, &w->mu);
        }
        if (job) {
            slot->busy = true;
            slot->running_tenant = job->tenant;
        }
        pthread_mutex_unlock(&w->mu);
        if (!job) {
            break; /* stopping and drained */
        }
        report_queued(w, &job, 1);
        if (l == &w->scans) {
            pthread_mutex_lock(&w->stats_mu);
            w->stats.scans++;
            pthread_mutex_unlock(&w->stats_mu);
        }
        int rc = ROOST_ERETRY;
        for (int attempt = 0; attempt < 5 && rc == ROOST_ERETRY; attempt++) {
            if (attempt > 0) {
                time_sleep_ms(2L << attempt);
            }
            rc = run_job(w, job, slot->st);
        }
        job->rc = rc;
        pthread_mutex_lock(&w->mu);
        slot->busy = false;
        if (l->q.len > 0) {
            /* A job passed over for its tenant's share may fit now, on any free reader. */
            pthread_cond_broadcast(&l->cv);
        }
        pthread_mutex_unlock(&w->mu);
        complete(w, job);
    }
    return NULL;
}

/* One group being written, and the writer's scratch space for it (each sized group_max). */
struct group {
    struct job **jobs;
    bool *skip;         /* left out: failed alone, keeps its own answer */
    bool *ran;          /* ran in this pass (as part of a batch) */
    bool *followed;     /* its follower ran in this pass */
    struct job **batch; /* the jobs of the batch being run */
    size_t n;
    size_t batches, batched; /* batches of the last pass, and their jobs */
};

/* Runs a batch, charging each job an equal share of its time. */
static int run_batch(struct workers *w, struct store *st, struct job **jobs, size_t n)
{
    int64_t t0 = w->obs.job_ran != NULL ? time_mono_us() : 0;
    int rc = jobs[0]->batch->run(jobs, n, st);
    for (size_t i = 0; w->obs.job_ran != NULL && i < n; i++) {
        w->obs.job_ran(w->obs.arg, jobs[i]->name, (double)(time_mono_us() - t0) / 1e6 / (double)n);
    }
    return rc;
}

/* run_kind's answer when the group must run again isolated (not a roost error code). */
#define RUN_ISOLATED 1

/* Runs, in the open transaction, the batch of group job i's kind: every job of that kind not yet
 * run. Returns ROOST_OK, ROOST_ERETRY (the group replays), or RUN_ISOLATED when the transaction
 * was rolled back and the group must run again isolated (a job failed alone: now skipped; or the
 * batch failed as a whole). Sets *alone when there was no other job of the kind. */
static int run_kind(struct workers *w, struct store *st, struct group *g, size_t i, bool *alone)
{
    size_t m = 0;
    /* Jobs before i of the kind have run (alone, in the second pass) or are skipped. */
    for (size_t j = i; j < g->n; j++) {
        if (!g->skip[j] && !g->ran[j] && g->jobs[j]->batch == g->jobs[i]->batch) {
            g->batch[m++] = g->jobs[j];
        }
    }
    *alone = m < 2;
    if (*alone) {
        return ROOST_OK;
    }
    for (size_t j = i; j < g->n; j++) {
        g->ran[j] = g->ran[j] || (!g->skip[j] && g->jobs[j]->batch == g->jobs[i]->batch);
    }
    int rc = run_batch(w, st, g->batch, m);
    if (rc == ROOST_ERETRY) {
        return rc;
    }
    bool failed = rc != ROOST_OK;
    for (size_t k = 0; rc == ROOST_OK && k < m; k++) {
        if (g->batch[k]->rc == ROOST_ERETRY) {
            return ROOST_ERETRY;
        }
    }
    for (size_t j = i; rc == ROOST_OK && j < g->n; j++) {
        if (g->ran[j] && !g->skip[j] && g->jobs[j]->batch == g->jobs[i]->batch &&
            g->jobs[j]->rc != ROOST_OK) {
            /* It may have written part of its work: the others run again without it. */
            g->skip[j] = true;
            failed = true;
        }
    }
    if (failed) {
        store_call0(st, rollback);
        return RUN_ISOLATED;
    }
    g->batches++;
    g->batched += m;
    return ROOST_OK;
}

/* Runs, last in the transaction, the followers of the group's jobs that succeeded (struct
 * job.follower). The last one to run is alone at the end of the transaction (struct store.alone:
 * nothing reads after it). ROOST_ERETRY: the group replays. RUN_ISOLATED: a follower failed (its
 * writes rolled back with the transaction): the group runs again without followers, which then
 * run as jobs of their own. */
static int run_followers(struct workers *w, struct store *st, struct group *g)
{
    size_t last = SIZE_MAX;
    for (size_t i = 0; i < g->n; i++) {
        if (g->jobs[i]->follower != NULL && !g->skip[i] && g->jobs[i]->rc == ROOST_OK) {
            last = i;
        }
    }
    for (size_t i = 0; last != SIZE_MAX && i <= last; i++) {
        struct job *f = g->jobs[i]->follower;
        if (f == NULL || g->skip[i] || g->jobs[i]->rc != ROOST_OK) {
            continue;
        }
        if (f->stamp_us != 0) {
            report_queued(w, &f, 1); /* once, not again when the group replays */
            f->stamp_us = 0;
        }
        st->alone = i == last;
        f->rc = run_job(w, f, st);
        st->alone = false;
        if (f->rc == ROOST_ERETRY) {
            return ROOST_ERETRY;
        }
        if (f->rc != ROOST_OK) {
            store_call0(st, rollback);
            return RUN_ISOLATED;
        }
        g->followed[i] = true;
    }
    return ROOST_OK;
}

/* Runs one group in one transaction. Returns ROOST_ERETRY when the whole group must run again.
 * A job that fails must leave no trace while the others commit. The first pass runs without
 * savepoints (on MySQL each costs a round trip per request, and failures are rare) and runs the
 * jobs of one batch kind together (their statements shared); when a job fails in it, the
 * transaction is rolled back, that job keeps its answer and is left out (skip[i]), and the second
 * pass runs the others each alone inside its own savepoint, so a group takes at most two passes.
 * A batch that fails as a whole (which job was at fault is unknown) sends the group to the second
 * pass too. A group of one job needs no savepoint at all: its transaction is its savepoint. */
static void commit_begins(struct workers *w, struct thread_slot *slot);

static int run_group(struct workers *w, struct thread_slot *slot, struct group *g, bool isolate,
                     bool *committed)
{
    struct store *st = slot->st;
    size_t left = 0;
    *committed = false;
    g->batches = g->batched = 0;
    for (size_t i = 0; i < g->n; i++) {
        isolate = isolate || g->skip[i];
        left += !g->skip[i];
        g->ran[i] = false;
    }
    memset(g->followed, 0, g->n * sizeof *g->followed);
    if (left == 0) {
        return ROOST_OK; /* every job failed alone: each rc is its answer, nothing to commit */
    }
    int rc = store_call0(st, begin);
    if (rc != ROOST_OK) {
        return rc;
    }
    /* A job with a follower is not its transaction's last work. */
    st->alone = !isolate && g->n == 1 && g->jobs[0]->follower == NULL;
    st->commit_rides = st->alone && g->jobs[0]->one_write;
    /* Jobs of a `last` kind run after the others (see struct job_batch). */
    for (size_t k = 0; k < 2 * g->n; k++) {
        size_t i = k % g->n;
        struct job *job = g->jobs[i];
        bool late = job->batch != NULL && job->batch->last;
        if (g->skip[i] || g->ran[i] || late != (k >= g->n)) {
            continue;
        }
        bool alone = true;
        if (!isolate && job->batch != NULL && (rc = run_kind(w, st, g, i, &alone)) != ROOST_OK) {
            if (rc == RUN_ISOLATED) {
                return run_group(w, slot, g, true, committed);
            }
            goto fail;
        }
        if (!alone) {
            continue;
        }
        if (isolate && (rc = store_call0(st, savepoint)) != ROOST_OK) {
            goto fail;
        }
        job->rc = run_job(w, job, st);
        if (job->rc == ROOST_ERETRY) {
            /* A lock we could not get, or (MySQL) a deadlock or lost connection that already
             * rolled the whole transaction back: the whole group replays. */
            rc = ROOST_ERETRY;
            goto fail;
        }
        if (job->rc == ROOST_OK) {
            rc = isolate ? store_call0(st, savepoint_release) : ROOST_OK;
        } else if (isolate) {
            rc = store_call0(st, savepoint_rollback);
        } else {
            /* The job may have written part of its work: the others run again without it. */
            g->skip[i] = true;
            store_call0(st, rollback);
            return run_group(w, slot, g, true, committed);
        }
        if (rc != ROOST_OK) {
            goto fail;
        }
    }
    st->commit_rides = false;
    if (!isolate && (rc = run_followers(w, st, g)) != ROOST_OK) {
        if (rc == RUN_ISOLATED) {
            return run_group(w, slot, g, true, committed);
        }
        goto fail;
    }
    st->alone = false;
    commit_begins(w, slot);
    int64_t t0 = time_mono_us();
    /* A COMMIT whose answer was lost is resolved inside the store (MySQL: the commit marker):
     * ROOST_OK means it committed, ROOST_ERETRY that it did not and never will (the group
     * replays), ROOST_EUNAVAILABLE that nobody could tell yet (every job answers 503; a client
     * retrying with its idempotency key finds its events if they were made). */
    rc = store_call0(st, commit);
    if (w->obs.job_ran != NULL) {
        w->obs.job_ran(w->obs.arg, "commit", (double)(time_mono_us() - t0) / 1e6);
    }
    if (rc == ROOST_OK) {
        *committed = true;
        return ROOST_OK;
    }
fail:
    st->commit_rides = st->alone = false;
    store_call0(st, rollback);
    return rc;
}

/* The writer's group has run its statements and now commits (under no lock). Its agents' row locks
 * stay held only until that COMMIT, so the jobs queued behind it need not wait for the COMMIT's
 * answer (on MariaDB the redo log's fsync, most of a group's time): when another writer is idle,
 * they move to it, and their statements travel while this COMMIT waits. A publish of the same
 * agent there waits on the agent's row lock, which InnoDB releases once the COMMIT is written and
 * before it is flushed, so the two fsyncs are shared (one group commit of the log); seqs stay
 * commit-ordered and gap-free, since they are only ever allocated under that lock
 * (doc/internals.md, "Group commit"). With one writer (SQLite) there is nobody to move them to. */
static void commit_begins(struct workers *w, struct thread_slot *slot)
{
    if (w->n_writers < 2 || !w->overlap) {
        return;
    }
    pthread_mutex_lock(&w->mu);
    slot->committing = true;
    struct thread_slot *idle = NULL;
    for (int i = 0; i < w->n_writers && slot->writes.len > 0 && !w->stopping; i++) {
        struct thread_slot *s = &w->slots[i];
        if (s != slot && s->writes.len == 0 && s->n_running == 0) {
            idle = s;
            break;
        }
    }
    size_t moved = 0;
    if (idle != NULL) {
        moved = slot->writes.len;
        idle->writes = slot->writes;
        memset(&slot->writes, 0, sizeof slot->writes);
        pthread_cond_signal(&idle->cv);
    }
    pthread_mutex_unlock(&w->mu);
    if (moved > 0) {
        pthread_mutex_lock(&w->stats_mu);
        w->stats.handoffs += moved;
        pthread_mutex_unlock(&w->stats_mu);
    }
}

static void group_free(struct group *g)
{
    free(g->jobs);
    free(g->skip);
    free(g->ran);
    free(g->followed);
    free(g->batch);
    memset(g, 0, sizeof *g);
}

static void *writer_main(void *arg)
{
    struct thread_slot *slot = arg;
    struct workers *w = slot->w;
    size_t max = (size_t)w->group_max;
    struct group g = {.jobs = calloc(max, sizeof *g.jobs),
                      .skip = calloc(max, sizeof *g.skip),
                      .ran = calloc(max, sizeof *g.ran),
                      .followed = calloc(max, sizeof *g.followed),
                      .batch = calloc(max, sizeof *g.batch)};
    if (!g.jobs || !g.skip || !g.ran || !g.followed || !g.batch) {
        group_free(&g);
    }
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (slot->writes.len == 0 && !w->stopping) {
            pthread_cond_wait(&slot->cv, &w->mu);
        }
        /* A group takes jobs in turn between tenants, up to group_max jobs and group_max rows
         * (its first job may be bigger alone): a tenant's big publishes neither fill a group
         * another tenant's small write waits behind nor share one with it. */
        size_t n = 0, rows = 0;
        while (g.jobs && n < max && slot->writes.len > 0) {
            struct job *job = queue_peek_fair(&slot->writes, slot->last_tenant, NULL, NULL, NULL);
            size_t job_rows = job->rows > 0 ? job->rows : 1;
            if (n > 0 && rows + job_rows > max) {
                break;
            }
            queue_take(&slot->writes, job, &slot->last_tenant);
            rows += job_rows;
            g.jobs[n++] = job;
        }
        slot->running = g.jobs;
        slot->n_running = n;
        slot->committing = false;
        bool overlap = false;
        for (int i = 0; i < w->n_writers && n > 0; i++) {
            overlap = overlap || w->slots[i].committing;
        }
        pthread_mutex_unlock(&w->mu);
        report_queued(w, g.jobs, n);
        if (overlap) {
            pthread_mutex_lock(&w->stats_mu);
            w->stats.overlaps++;
            pthread_mutex_unlock(&w->stats_mu);
        }
        if (n == 0) {
            if (!g.jobs) {
                /* Out of memory at start: fail whatever arrives, one by one. */
                pthread_mutex_lock(&w->mu);
                struct job *job = queue_pop(&slot->writes);
                bool stop = w->stopping && job == NULL;
                pthread_mutex_unlock(&w->mu);
                if (job) {
                    job->rc = ROOST_ENOMEM;
                    complete(w, job);
                    continue;
                }
                if (stop) {
                    break;
                }
                continue;
            }
            break; /* stopping and drained */
        }
        int rc = ROOST_ERETRY;
        unsigned retries = 0;
        bool committed = false;
        g.n = n;
        memset(g.skip, 0, n * sizeof *g.skip);
        for (int attempt = 0; attempt < 8 && rc == ROOST_ERETRY; attempt++) {
            if (attempt > 0) {
                retries++;
                time_sleep_ms(1L << attempt);
                pthread_mutex_lock(&w->mu);
                slot->committing = false; /* it takes its locks again */
                pthread_mutex_unlock(&w->mu);
            }
            rc = run_group(w, slot, &g, false, &committed);
        }
        for (size_t i = 0; i < n; i++) {
            /* A failed commit fails every job of the group: none of them is durable, except
             * after ROOST_EUNAVAILABLE from a commit whose outcome stayed unknown. A job left
             * out of the group keeps its own failure. */
            if (rc != ROOST_OK && !g.skip[i]) {
                g.jobs[i]->rc = rc;
            }
        }
        pthread_mutex_lock(&w->stats_mu);
        w->stats.retries += retries;
        if (retries > 0 && w->obs.group_retried != NULL) {
            w->obs.group_retried(w->obs.arg, retries);
        }
        if (committed && w->obs.group_committed != NULL) {
            w->obs.group_committed(w->obs.arg, n);
        }
        if (committed) {
            size_t followers = 0;
            for (size_t i = 0; i < n; i++) {
                followers += g.followed[i];
            }
            w->stats.commits++;
            w->stats.write_jobs += n + followers;
            w->stats.batches += g.batches;
            w->stats.batched_jobs += g.batched;
            if (n > w->stats.max_group) {
                w->stats.max_group = n;
            }
        }
        pthread_mutex_unlock(&w->stats_mu);
        pthread_mutex_lock(&w->mu);
        slot->n_running = 0;
        slot->committing = false;
        pthread_mutex_unlock(&w->mu);
        for (size_t i = 0; i < n; i++) {
            struct job *f = g.jobs[i]->follower;
            if (f != NULL && (rc != ROOST_OK || !g.followed[i])) {
                /* Its leader failed (alone or with the group's commit), or the group ran its
                 * jobs one by one: the follower's own run answers it, not its leader's failure
                 * (a long poll goes on waiting). */
                g.jobs[i]->follower = NULL;
                complete(w, g.jobs[i]);
                workers_submit(w, f);
                continue;
            }
            if (f != NULL) {
                f->followed = g.followed[i];
            }
            complete(w, g.jobs[i]);
        }
    }
    group_free(&g);
    return NULL;
}

uint64_t workers_tenant_key(const char *tenant_id)
{
    if (tenant_id == NULL || tenant_id[0] == '\0') {
        return 0;
    }
    uint64_t h = hash_fnv1a_str(HASH_FNV1A_INIT, tenant_id);
    return h != 0 ? h : 1;
}

static void lane_init(struct lane *l, int readers)
{
    pthread_cond_init(&l->cv, NULL);
    l->readers = readers;
    l->share = readers > 1 ? readers - 1 : 1;
}

int workers_new(struct event_base *base, const char *url, const struct store_options *opt,
                int readers, int scan_readers, int writers, int group_max, struct workers **out,
                char *err, size_t errlen)
{
    int rc = ROOST_ENOMEM;
    struct workers *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return ROOST_ENOMEM;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_mutex_init(&w->done_mu, NULL);
    pthread_mutex_init(&w->stats_mu, NULL);
    readers = readers > 0 ? readers : 1;
    scan_readers = scan_readers > 0 ? scan_readers : 1;
    lane_init(&w->reads, readers);
    lane_init(&w->scans, scan_readers);
    w->group_max = group_max > 0 ? group_max : 1;
    writers = writers > 0 ? writers : 1;
    w->n_slots = readers + scan_readers + writers;
    w->n_writers = writers;
    w->slots = calloc((size_t)w->n_slots, sizeof *w->slots);
    w->wake_ev = event_new(base, -1, 0, on_wake, w);
    if (!w->slots || !w->wake_ev) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (int i = 0; i < w->n_slots; i++) {
        pthread_cond_init(&w->slots[i].cv, NULL);
    }
    for (int i = 0; i < w->n_slots; i++) {
        struct thread_slot *slot = &w->slots[i];
        slot->w = w;
        slot->writer = i < writers;
        slot->index = i;
        slot->lane = slot->writer ? NULL : i < writers + readers ? &w->reads : &w->scans;
        const char *why = NULL;
        rc = store_open(url, opt, &slot->st, &why);
        if (rc != ROOST_OK) {
            snprintf(err, errlen, "cannot open store: %s", why ? why : roost_strerror(rc));
            goto fail;
        }
        if (i == 0) {
            /* Migrations run once, on the first writer's connection, before anything else. */
            rc = store_call0(slot->st, migrate);
            if (rc != ROOST_OK) {
                snprintf(err, errlen, "migrations failed: %s", slot->st->ops->errmsg(slot->st));
                goto fail;
            }
        }
    }
    for (int i = 0; i < w->n_slots; i++) {
        struct thread_slot *slot = &w->slots[i];
        if (pthread_create(&slot->thread, NULL, slot->writer ? writer_main : reader_main, slot) !=
            0) {
            snprintf(err, errlen, "cannot start worker thread");
            rc = ROOST_EINTERNAL;
            goto fail;
        }
        slot->started = true;
    }
    *out = w;
    return ROOST_OK;
fail:
    workers_free(w);
    return rc;
}

/* The writer for a write job (under w->mu): the one that has a job of the same affinity queued
 * or running, so one agent's writes never wait on each other's row locks across connections, unless
 * the group running there is committing (its locks go with that COMMIT, see commit_begins);
 * otherwise the least busy, so agents spread over the writers as they come and go. */
static struct thread_slot *writer_for(struct workers *w, const struct job *job)
{
    uint64_t affinity = w->overlap && job->no_seq_lock ? 0 : job->affinity;
    struct thread_slot *best = &w->slots[0];
    size_t best_load = SIZE_MAX;
    for (int i = 0; i < w->n_writers && w->n_writers > 1; i++) {
        struct thread_slot *slot = &w->slots[i];
        for (struct job *j = slot->writes.head; affinity != 0 && j != NULL; j = j->next) {
            if (j->affinity == affinity) {
                return slot;
            }
        }
        for (size_t k = 0; affinity != 0 && !slot->committing && k < slot->n_running; k++) {
            if (slot->running[k]->affinity == affinity) {
                return slot;
            }
        }
        size_t load = slot->writes.len + slot->n_running;
        if (load < best_load) {
            best = slot;
            best_load = load;
        }
    }
    return best;
}

void workers_submit(struct workers *w, struct job *job)
{
    job->stamp_us = time_mono_us();
    if (job->follower != NULL) {
        job->follower->stamp_us = job->stamp_us;
    }
    pthread_mutex_lock(&w->mu);
    if (w->joined) {
        /* A done() that workers_free delivers may submit the request's next job (a body parsed,
         * a signature checked): it gets its done() too, or its request would never end. */
        pthread_mutex_unlock(&w->mu);
        job->rc = ROOST_ESHUTDOWN;
        complete(w, job);
        return;
    }
    if (job->write) {
        struct thread_slot *slot = writer_for(w, job);
        queue_push(&slot->writes, job);
        pthread_cond_signal(&slot->cv);
    } else {
        struct lane *l = job->scan ? &w->scans : &w->reads;
        queue_push(&l->q, job);
        pthread_cond_signal(&l->cv);
    }
    pthread_mutex_unlock(&w->mu);
}

void workers_free(struct workers *w)
{
    if (!w) {
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_broadcast(&w->reads.cv);
    pthread_cond_broadcast(&w->scans.cv);
    for (int i = 0; w->slots && i < w->n_slots; i++) {
        pthread_cond_broadcast(&w->slots[i].cv);
    }
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; w->slots && i < w->n_slots; i++) {
        if (w->slots[i].started) {
            pthread_join(w->slots[i].thread, NULL);
        }
        if (w->slots[i].st) {
            store_close(w->slots[i].st);
        }
        pthread_cond_destroy(&w->slots[i].cv);
    }
    /* Completions that the loop did not pick up yet still get their done(), and so do the jobs
     * those submit (ROOST_ESHUTDOWN), until none is left. */
    pthread_mutex_lock(&w->mu);
    w->joined = true;
    struct job_queue left = {0}; /* submitted after their threads had drained their queues */
    struct job *job;
    for (int i = 0; w->slots && i < w->n_slots; i++) {
        while ((job = queue_pop(&w->slots[i].writes)) != NULL) {
            queue_push(&left, job);
        }
    }
    while ((job = queue_pop(&w->reads.q)) != NULL || (job = queue_pop(&w->scans.q)) != NULL) {
        queue_push(&left, job);
    }
    pthread_mutex_unlock(&w->mu);
    while ((job = queue_pop(&left)) != NULL) {
        job->rc = ROOST_ESHUTDOWN;
        complete(w, job);
    }
    if (w->wake_ev) {
        while (w->done.len > 0) {
            on_wake(-1, 0, w);
        }
        event_free(w->wake_ev);
    }
    free(w->slots);
    pthread_mutex_destroy(&w->mu);
    pthread_mutex_destroy(&w->done_mu);
    pthread_mutex_destroy(&w->stats_mu);
    pthread_cond_destroy(&w->reads.cv);
    pthread_cond_destroy(&w->scans.cv);
    free(w);
}

void workers_set_overlap(struct workers *w, bool on)
{
    w->overlap = on;
}

void workers_set_observer(struct workers *w, const struct workers_observer *obs)
{
    w->obs = *obs;
}

void workers_get_stats(struct workers *w, struct workers_stats *out)
{
    pthread_mutex_lock(&w->stats_mu);
    *out = w->stats;
    pthread_mutex_unlock(&w->stats_mu);
}

bool workers_store_has(const struct workers *w, unsigned caps)
{
    return store_has(w->slots[0].st, caps);
}
