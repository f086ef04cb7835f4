/* SPDX-License-Identifier: MIT */
/* The store worker pool. Reads run on reader threads, each with its own connection. Writes run on
 * writer threads (store.writers) taking groups from one queue; each group of queued writes runs
 * in one transaction with one commit (group commit). A writer fills a group in turn between
 * tenants and stops at group_max jobs or group_max rows, so one tenant's big publishes delay
 * another's write by about one of them, not by a group full of them. Jobs of one batch kind in a
 * group run together, sharing statements (one multi-row insert for a group's publishes, one update
 * for its acks). A failing job rolls back only itself: the group runs again without it, each job
 * then in its own savepoint. No job completes before the COMMIT that made it durable has returned.
 * Completed jobs come back to the event loop through a mutex-protected queue and event_active(),
 * the only libevent call made off the loop thread; their `done` runs on the loop thread.
 * One tenant never takes every reader (DESIGN §6.4): reads run on two lanes of readers, the
 * readers (inbox reads, state, lists) and the scan readers (admin listings that may rank every
 * agent of a tenant for up to limits.admin_scan_ms, and bulk reads of hundreds of events), so a
 * scan never holds a connection an inbox read needs; the scan readers run at nice
 * WORKERS_SCAN_NICE, so they never hold the CPU it needs either. In each lane a tenant runs on at
 * most all its readers but one (its share; a lane of one reader has a share of one), and a free
 * reader takes the first queued job of a tenant other than the one it served last when there is one
 * (round robin); jobs of one tenant keep their order. Jobs of no tenant (the node's own: health,
 * metrics, scheduler) have no share. */
#ifndef ROOST_WORKERS_H
#define ROOST_WORKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct store;
struct store_options;

struct job;

/* The nice value of the scan readers' threads (Linux). */
#define WORKERS_SCAN_NICE 10

/* A kind of write job whose jobs in one group may run as one batch. */
struct job_batch {
    /* Runs jobs[0..n) (n >= 2, all of this kind, in queue order) in the group's transaction and
     * sets each job's rc, as its run() would. Must reset the jobs' outputs first (the batch may
     * run again). ROOST_OK: each rc is its job's answer (a job that failed may have left writes:
     * the group runs again without it). Any other return fails the batch as a whole: the group
     * replays (ROOST_ERETRY) or runs again with every job alone. */
    int (*run)(struct job *const *jobs, size_t n, struct store *st);
    /* Run after the group's other jobs, just before COMMIT: for kinds whose locks others wait
     * for (publish holds its agents' row locks until COMMIT), so they are held the shortest. */
    bool last;
};

struct job {
    /* Runs on a worker thread. Must reset its own outputs first: a write job may run again when
     * its group's transaction is retried. Returns ROOST_OK or an error code. */
    int (*run)(struct job *job, struct store *st);
    /* Runs on the loop thread once the job's result is final (and, for writes, committed). */
    void (*done)(struct job *job);
    bool write;
    const char *name; /* store op label for metrics (static string; NULL = "other") */
    /* Write jobs only: their batch kind, or NULL to always run alone. A job of a kind still has
     * its own run(), used when it runs alone. */
    const struct job_batch *batch;
    /* Write jobs only, with store.writers > 1: jobs of one affinity (an agent's
     * hash_tenant_agent) in flight together run on one writer; 0 = none. */
    uint64_t affinity;
    /* Write jobs only: the job never takes its agent's sequence lock (claims, acks, releases,
     * extends); with overlap on (workers_set_overlap) its affinity is ignored. */
    bool no_seq_lock;
    /* The tenant served (workers_tenant_key), 0 = none (the node's own jobs), which no share
     * limits: readers take tenants in turn within their shares, and writers fill a group in
     * turn between tenants. */
    uint64_t tenant;
    /* Write jobs only: the rows it writes (0 counts as 1). A group holds at most group_max jobs
     * and group_max rows (a bigger job runs alone). */
    size_t rows;
    /* Write jobs only: its first write statement is its whole effect and may run twice (a single
     * ack): alone in its group, that statement may carry the COMMIT (struct store.commit_rides). */
    bool one_write;
    /* Read jobs only: a scan (an admin listing ranking or walking many agents or events, or a bulk
     * inbox read): it runs on the scan readers, never on the readers that serve inbox reads. */
    bool scan;
    /* Write jobs only: a write job to run right after this one in the same transaction, once this
     * one succeeded (a parked claim of the agent a publish writes to, api_inbox.c). It shares the
     * COMMIT, and its done() runs right after this job's. When it did not commit there (this
     * job failed, the group's commit failed, or the group ran its jobs one by one), it is queued
     * as a job of its own. Set by the submitter, cleared by the pool. */
    struct job *follower;
    /* Set by the pool before done(): the job ran as a follower, in its leader's transaction. */
    bool followed;
    int rc; /* set by the pool before done() */
    struct job *next;
    int64_t stamp_us; /* the pool's: when it was queued, then when its result was ready */
};

struct workers_stats {
    unsigned long long commits;      /* group transactions committed */
    unsigned long long write_jobs;   /* write jobs that went through a commit */
    unsigned long long max_group;    /* largest group seen */
    unsigned long long retries;      /* transactions retried after ROOST_ERETRY */
    unsigned long long batches;      /* batches run (several jobs of one kind sharing statements) */
    unsigned long long batched_jobs; /* jobs that ran in them */
    unsigned long long reads_deferred; /* a free reader passed a queued read over: its tenant held
                                          its share of the lane */
    unsigned long long scans;          /* jobs run on the scan readers */
    unsigned long long overlaps; /* groups begun while another writer's COMMIT was in flight */
    unsigned long long handoffs; /* queued jobs moved off a committing writer to an idle one */
};

struct workers;

/* The key of a tenant for struct job's `tenant` (never 0; NULL or "" gives 0: no tenant). */
uint64_t workers_tenant_key(const char *tenant_id);

/* Opens one connection per thread (readers + scan_readers + writers, scan_readers >= 1) on `url`;
 * the first writer's connection runs the migrations first. Writers take groups from one queue, so
 * with several (MySQL, where each commit is a round trip the others need not wait for) groups
 * commit in parallel; SQLite has one writer at a time anyway. Returns ROOST_OK, or an error with a
 * reason in err. */
int workers_new(struct event_base *base, const char *url, const struct store_options *opt,
                int readers, int scan_readers, int writers, int group_max, struct workers **out,
                char *err, size_t errlen);
/* Queues a job (any thread). */
void workers_submit(struct workers *w, struct job *job);
/* Finishes every queued job (their done() still runs on the loop if it keeps running), joins
 * the threads and closes the connections. A job submitted once the threads are joined (by a
 * done() delivered from here) gets its done() with ROOST_ESHUTDOWN. */
void workers_free(struct workers *w);
void workers_get_stats(struct workers *w, struct workers_stats *out);
/* True when the pool's backend (every connection of a pool has the same one) has every
 * capability in `caps` (enum store_cap, store.h). */
bool workers_store_has(const struct workers *w, unsigned caps);
/* Who hears of job run times, commits and retries (the metrics). The callbacks run on worker
 * threads, so they must be thread-safe; arg must outlive the pool. */
struct workers_observer {
    /* A job ran for `seconds`; op is its name (NULL: unnamed), or "commit" for a group commit. */
    void (*job_ran)(void *arg, const char *op, double seconds);
    /* A group of `jobs` write jobs committed. */
    void (*group_committed)(void *arg, size_t jobs);
    /* A group's transaction was run again `n` times (deadlock, lock wait timeout, busy). */
    void (*group_retried)(void *arg, unsigned n);
    /* A job waited `seconds` from its submission to the start of its run (a write: of its
     * group's transaction); op as for job_ran. */
    void (*job_queued)(void *arg, const char *op, double seconds);
    /* A job's result (a write's: after its COMMIT) waited `seconds` for its done() to start on
     * the loop thread. */
    void (*job_returned)(void *arg, double seconds);
    void *arg;
};

/* Overlap (off by default; set before jobs are submitted): when a writer's group starts its
 * COMMIT, the jobs queued behind it move to an idle writer and new ones no longer follow it by
 * affinity, so the next group's statements run while that COMMIT waits; jobs with no_seq_lock go
 * to the least busy writer. Counted in workers_stats.overlaps and .handoffs. */
void workers_set_overlap(struct workers *w, bool on);

/* Reports to `obs` (copied) from now on; set before jobs are submitted. */
void workers_set_observer(struct workers *w, const struct workers_observer *obs);

#endif
