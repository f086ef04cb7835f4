/* SPDX-License-Identifier: MIT */
/* The store worker pool. Reads run on reader threads, each with its own connection. Writes run on
 * writer threads (store.writers: one on SQLite, several on MySQL) taking groups from one queue;
 * each group of queued writes runs in one transaction with one commit (group commit). In a group
 * of several, each job runs inside its own savepoint, so a failing job rolls back only itself; a
 * group of one needs none (its transaction is its savepoint). No job completes before the COMMIT
 * that made it durable has returned.
 * Completed jobs come back to the event loop through a mutex-protected queue and event_active(),
 * the only libevent call made off the loop thread; their `done` runs on the loop thread. */
#ifndef ROOST_WORKERS_H
#define ROOST_WORKERS_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct store;
struct store_options;

struct job {
    /* Runs on a worker thread. Must reset its own outputs first: a write job may run again when
     * its group's transaction is retried. Returns ROOST_OK or an error code. */
    int (*run)(struct job *job, struct store *st);
    /* Runs on the loop thread once the job's result is final (and, for writes, committed). */
    void (*done)(struct job *job);
    bool write;
    const char *name; /* store op label for metrics (static string; NULL = "other") */
    int rc;           /* set by the pool before done() */
    struct job *next;
};

struct workers_stats {
    unsigned long long commits;    /* group transactions committed */
    unsigned long long write_jobs; /* write jobs that went through a commit */
    unsigned long long max_group;  /* largest group seen */
    unsigned long long retries;    /* transactions retried after ROOST_ERETRY */
};

struct workers;

/* Opens one connection per thread (readers + writers) on `url`; the first writer's connection
 * runs the migrations first. Writers take groups from one queue, so with several (MySQL, where
 * each commit is a round trip the others need not wait for) groups commit in parallel; SQLite
 * has one writer at a time anyway. Returns ROOST_OK, or an error with a reason in err. */
int workers_new(struct event_base *base, const char *url, const struct store_options *opt,
                int readers, int writers, int group_max, struct workers **out, char *err,
                size_t errlen);
/* Queues a job (any thread). */
void workers_submit(struct workers *w, struct job *job);
/* Finishes every queued job (their done() still runs on the loop if it keeps running), joins
 * the threads and closes the connections. */
void workers_free(struct workers *w);
void workers_get_stats(struct workers *w, struct workers_stats *out);
/* The backend's operations (every connection of a pool has the same backend): lets callers see
 * which optional operations it has. */
const struct store_ops *workers_store_ops(const struct workers *w);
/* Who hears of job run times, commits and retries (the metrics). The callbacks run on worker
 * threads, so they must be thread-safe; arg must outlive the pool. */
struct workers_observer {
    /* A job ran for `seconds`; op is its name (NULL: unnamed), or "commit" for a group commit. */
    void (*job_ran)(void *arg, const char *op, double seconds);
    /* A group of `jobs` write jobs committed. */
    void (*group_committed)(void *arg, size_t jobs);
    /* A group's transaction was run again `n` times (deadlock, lock wait timeout, busy). */
    void (*group_retried)(void *arg, unsigned n);
    void *arg;
};

/* Reports to `obs` (copied) from now on; set before jobs are submitted. */
void workers_set_observer(struct workers *w, const struct workers_observer *obs);

#endif
