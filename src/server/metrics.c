/* SPDX-License-Identifier: MIT */
/* Metrics registry and the Prometheus text exposition (see metrics.h). Histograms are arrays of
 * relaxed atomics, so worker threads record store timings without locks; everything else is
 * touched on the loop thread only. */
#include "server/metrics.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "server/config.h"
#include "server/history.h"
#include "server/routes.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

#define HIST_MAX_BUCKETS 16
#define HTTP_MAX_ROUTES 64 /* the declaration's names, "preflight" and "-" */
#define HTTP_MAX_STATUSES 16

static const double latency_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                        0.1,    0.25,  0.5,    1,     2.5,  5,     10};
static const double delivery_bounds[] = {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600};
/* Waits between threads: most are tens of microseconds, a queue behind a group a millisecond. */
static const double wait_bounds[] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                     0.01,    0.025,  0.05,    0.1,    0.25,  1,      10};
static const double batch_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};

#define NBOUNDS(a) (sizeof(a) / sizeof((a)[0]))

struct hist {
    const double *bounds;
    size_t n_bounds;
    double unit; /* sum is kept as an integer count of this unit */
    _Atomic uint64_t counts[HIST_MAX_BUCKETS + 1]; /* per bucket, not cumulative; last = +Inf */
    _Atomic uint64_t sum_units;
};

static void hist_init(struct hist *h, const double *bounds, size_t n, double unit)
{
    h->bounds = bounds;
    h->n_bounds = n;
    h->unit = unit;
}

static void hist_observe(struct hist *h, double v)
{
    size_t i = 0;
    while (i < h->n_bounds && v > h->bounds[i]) {
        i++;
    }
    atomic_fetch_add_explicit(&h->counts[i], 1, memory_order_relaxed);
    if (v > 0) {
        atomic_fetch_add_explicit(&h->sum_units, (uint64_t)(v / h->unit + 0.5),
                                  memory_order_relaxed);
    }
}

/* The store ops a job can name (a fixed label set): the job kinds of the route declaration
 * (routes.c), then the jobs of no route; anything else is "other". Built once by metrics_new. */
static const char *const internal_ops[] = {
    "scheduler",        "retention",  "metrics_snapshot", "commit",
    "webhook_dispatch", "parse_body", "publish_check",
};
#define N_STORE_OPS 48
static const char *store_ops[N_STORE_OPS];
static size_t n_store_ops;

static void store_ops_init(void)
{
    if (n_store_ops != 0) {
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < router_routes_count && n < N_STORE_OPS - 1; i++) {
        const char *job = router_routes[i].job;
        bool seen = job == NULL;
        for (size_t k = 0; !seen && k < n; k++) {
            seen = strcmp(store_ops[k], job) == 0;
        }
        if (!seen) {
            store_ops[n++] = job;
        }
    }
    for (size_t i = 0; i < sizeof internal_ops / sizeof internal_ops[0] && n < N_STORE_OPS - 1;
         i++) {
        store_ops[n++] = internal_ops[i];
    }
    store_ops[n++] = "other";
    n_store_ops = n;
}

struct route_stats {
    const char *name;
    struct hist duration;
    struct {
        int status;
        uint64_t n;
    } statuses[HTTP_MAX_STATUSES];
    size_t n_statuses;
};

/* Webhook deliveries per endpoint (the end of this file). */
struct webhook_stats;
struct ingest_stats;
static struct ingest_stats *ingest_stats_new(void);
static void ingest_stats_render(const struct ingest_stats *is, const char *mode,
                                struct evbuffer *out);
static struct webhook_stats *webhook_stats_new(void);
static void webhook_stats_free(struct webhook_stats *ws);
static void webhook_stats_render(struct webhook_stats *ws, const char *mode, struct evbuffer *out);

struct metrics {
    /* any thread */
    struct hist store_op[N_STORE_OPS];
    struct hist store_queued[N_STORE_OPS];
    struct hist store_returned;
    struct hist group_commit;
    _Atomic uint64_t write_retries; /* write transactions run again */
    /* loop thread */
    struct hist delivery;
    struct route_stats routes[HTTP_MAX_ROUTES];
    size_t n_routes;
    uint64_t published, lease_expired, quarantined, sse_pings, claims_with_publish;
    uint64_t released[3]; /* by enum store_release_reason */

    /* snapshot refresh */
    struct metrics_env env;
    struct event *timer;
    bool busy, stopped;
    struct store_metrics_snapshot snap; /* the last good one; arrays owned */
    int64_t snap_ms;                    /* monotonic clock of snap, 0 = none yet */
    uint64_t snap_failures;
    struct webhook_stats *webhooks; /* per endpoint; any thread, under its own mutex */
    struct ingest_stats *ingest;    /* per inbound webhook source; loop thread only */
    struct history *history;        /* the dashboard's chart samples, fed by each snapshot */
};

struct metrics *metrics_new(void)
{
    struct metrics *m = calloc(1, sizeof *m);
    if (m == NULL) {
        return NULL;
    }
    store_ops_init();
    for (size_t i = 0; i < N_STORE_OPS; i++) {
        hist_init(&m->store_op[i], latency_bounds, NBOUNDS(latency_bounds), 1e-6);
        hist_init(&m->store_queued[i], wait_bounds, NBOUNDS(wait_bounds), 1e-6);
    }
    hist_init(&m->store_returned, wait_bounds, NBOUNDS(wait_bounds), 1e-6);
    hist_init(&m->group_commit, batch_bounds, NBOUNDS(batch_bounds), 1);
    hist_init(&m->delivery, delivery_bounds, NBOUNDS(delivery_bounds), 1e-3);
    if ((m->webhooks = webhook_stats_new()) == NULL || (m->history = history_new()) == NULL ||
        (m->ingest = ingest_stats_new()) == NULL) {
        free(m->ingest);
        webhook_stats_free(m->webhooks);
        free(m);
        return NULL;
    }
    return m;
}

static void snapshot_free(struct store_metrics_snapshot *s)
{
    free(s->tenants);
    free(s->agents);
    memset(s, 0, sizeof *s);
}

void metrics_free(struct metrics *m)
{
    if (m == NULL) {
        return;
    }
    metrics_stop(m);
    snapshot_free(&m->snap);
    webhook_stats_free(m->webhooks);
    free(m->ingest);
    history_free(m->history);
    free(m);
}

/* The label index of a store op (NULL or unknown: "other", the last). */
static size_t store_op_index(const char *op)
{
    size_t i = 0;
    while (op != NULL && i < n_store_ops - 1 && strcmp(store_ops[i], op) != 0) {
        i++;
    }
    return op == NULL ? n_store_ops - 1 : i;
}

void metrics_store_op(struct metrics *m, const char *op, double seconds)
{
    hist_observe(&m->store_op[store_op_index(op)], seconds);
}

void metrics_group_commit(struct metrics *m, size_t jobs)
{
    hist_observe(&m->group_commit, (double)jobs);
}

void metrics_http(struct metrics *m, const char *route, int status, double seconds)
{
    struct route_stats *r = NULL;
    for (size_t i = 0; i < m->n_routes; i++) {
        if (m->routes[i].name == route || strcmp(m->routes[i].name, route) == 0) {
            r = &m->routes[i];
            break;
        }
    }
    if (r == NULL) {
        if (m->n_routes == HTTP_MAX_ROUTES) {
            return; /* cannot happen with the router's table; bounded all the same */
        }
        r = &m->routes[m->n_routes++];
        r->name = route;
        hist_init(&r->duration, latency_bounds, NBOUNDS(latency_bounds), 1e-6);
    }
    hist_observe(&r->duration, seconds);
    size_t k = 0;
    while (k < r->n_statuses && r->statuses[k].status != status) {
        k++;
    }
    if (k == r->n_statuses) {
        if (k == HTTP_MAX_STATUSES) {
            k--; /* the last slot absorbs anything beyond: bounded cardinality */
        } else {
            r->statuses[k].status = status;
            r->n_statuses++;
        }
    }
    r->statuses[k].n++;
}

void metrics_delivery(struct metrics *m, int64_t available_at_ms, int64_t now_ms)
{
    if (available_at_ms > 0) {
        int64_t d = now_ms - available_at_ms;
        hist_observe(&m->delivery, d > 0 ? (double)d / 1000.0 : 0.0);
    }
}

void metrics_published(struct metrics *m, size_t events)
{
    m->published += events;
}

void metrics_lease_expired(struct metrics *m, size_t n)
{
    m->lease_expired += n;
}

void metrics_released(struct metrics *m, enum store_release_reason reason, size_t n)
{
    if ((unsigned)reason < 3) {
        m->released[reason] += n;
    }
}

void metrics_quarantined(struct metrics *m, size_t n)
{
    m->quarantined += n;
}

void metrics_sse_ping(struct metrics *m)
{
    m->sse_pings++;
}

void metrics_claim_with_publish(struct metrics *m)
{
    m->claims_with_publish++;
}

/* ---- the snapshot timer ---- */

/* One refresh walks the shards (store.tenant.*) in turn, one read job each, and merges their
 * snapshots into `acc`. */
struct snap_job {
    struct job job;
    struct metrics *m;
    size_t shard;
    struct store_metrics_snapshot snap; /* this shard's */
    struct store_metrics_snapshot acc;  /* every shard so far */
};

static bool snapshot_alloc(struct store_metrics_snapshot *s, size_t top)
{
    s->max_tenants = METRICS_MAX_TENANTS;
    s->tenants = calloc(METRICS_MAX_TENANTS, sizeof *s->tenants);
    s->max_agents = top;
    s->agents = top ? calloc(top, sizeof *s->agents) : NULL;
    return s->tenants != NULL && (top == 0 || s->agents != NULL);
}

static int64_t oldest_of(int64_t a, int64_t b)
{
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

static int cmp_agent_depth(const void *x, const void *y)
{
    const struct store_metrics_agent *a = x, *b = y;
    if (a->pending != b->pending) {
        return a->pending > b->pending ? -1 : 1;
    }
    int c = strcmp(a->tenant_id, b->tenant_id);
    return c != 0 ? c : strcmp(a->agent_id, b->agent_id);
}

/* Adds a shard's snapshot to the accumulated one: a tenant found in both (its data moved to a
 * shard, old rows left behind) sums; the top agents stay the top `max_agents` of the union. */
static void snapshot_merge(struct store_metrics_snapshot *acc,
                           const struct store_metrics_snapshot *s)
{
    acc->truncated = acc->truncated || s->truncated;
    for (size_t i = 0; i < s->n_tenants; i++) {
        const struct store_metrics_tenant *t = &s->tenants[i];
        struct store_metrics_tenant *a = NULL;
        for (size_t k = 0; k < acc->n_tenants && a == NULL; k++) {
            if (strcmp(acc->tenants[k].tenant_id, t->tenant_id) == 0) {
                a = &acc->tenants[k];
            }
        }
        if (a == NULL) {
            if (acc->n_tenants == acc->max_tenants) {
                acc->truncated = true;
                continue;
            }
            a = &acc->tenants[acc->n_tenants++];
            *a = *t;
            continue;
        }
        a->pending += t->pending;
        a->scheduled += t->scheduled;
        a->claimed += t->claimed;
        a->quarantined += t->quarantined;
        a->oldest_pending_ms = oldest_of(a->oldest_pending_ms, t->oldest_pending_ms);
        a->oldest_claimed_ms = oldest_of(a->oldest_claimed_ms, t->oldest_claimed_ms);
    }
    /* Both lists are sorted: keep the best of their concatenation. */
    for (size_t i = 0; i < s->n_agents; i++) {
        if (acc->n_agents < acc->max_agents) {
            acc->agents[acc->n_agents++] = s->agents[i];
        } else if (cmp_agent_depth(&s->agents[i], &acc->agents[acc->n_agents - 1]) < 0) {
            acc->agents[acc->n_agents - 1] = s->agents[i];
        } else {
            break;
        }
        qsort(acc->agents, acc->n_agents, sizeof *acc->agents, cmp_agent_depth);
    }
}

static void arm(struct metrics *m, int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    evtimer_add(m->timer, &tv);
}

static int run_snap(struct job *job, struct store *st)
{
    struct snap_job *j = (struct snap_job *)job;
    return store_call(st, metrics_snapshot, time_now_ms(), &j->snap);
}

static void done_snap(struct job *job)
{
    struct snap_job *j = (struct snap_job *)job;
    struct metrics *m = j->m;
    bool complete = false;
    if (job->rc == ROOST_OK) {
        snapshot_merge(&j->acc, &j->snap);
        struct workers *next = m->env.pool(m->env.arg, ++j->shard);
        if (next != NULL && !m->stopped) {
            workers_submit(next, &j->job); /* still busy */
            return;
        }
        complete = next == NULL; /* stopped halfway: the partial snapshot is dropped */
    }
    if (complete) {
        snapshot_free(&m->snap);
        m->snap = j->acc; /* moves the arrays */
        memset(&j->acc, 0, sizeof j->acc);
        m->snap_ms = time_mono_ms();
        history_record(m->history, &m->snap, time_now_ms());
    } else if (job->rc != ROOST_OK) {
        m->snap_failures++;
        log_warn("metrics snapshot failed", "error=%s", roost_err_code(job->rc));
    }
    snapshot_free(&j->snap);
    snapshot_free(&j->acc);
    free(j);
    m->busy = false;
    if (!m->stopped) {
        arm(m, m->env.cfg->metrics_refresh_ms);
    }
    m->env.release(m->env.arg);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct metrics *m = arg;
    if (m->busy || m->stopped) {
        return;
    }
    struct snap_job *j = calloc(1, sizeof *j);
    size_t top = (size_t)m->env.cfg->metrics_top_agents;
    if (j == NULL || !snapshot_alloc(&j->snap, top) || !snapshot_alloc(&j->acc, top)) {
        if (j != NULL) {
            snapshot_free(&j->snap);
            snapshot_free(&j->acc);
        }
        free(j);
        arm(m, m->env.cfg->metrics_refresh_ms);
        return;
    }
    j->m = m;
    j->job = (struct job){
        .run = run_snap, .done = done_snap, .write = false, .name = "metrics_snapshot"};
    m->busy = true;
    m->env.hold(m->env.arg); /* a shutdown waits for the job: its done() touches this object */
    workers_submit(m->env.pool(m->env.arg, 0), &j->job);
}

static void observe_job(void *arg, const char *op, double seconds)
{
    metrics_store_op(arg, op, seconds);
}

static void observe_queued(void *arg, const char *op, double seconds)
{
    struct metrics *m = arg;
    hist_observe(&m->store_queued[store_op_index(op)], seconds);
}

static void observe_returned(void *arg, double seconds)
{
    struct metrics *m = arg;
    hist_observe(&m->store_returned, seconds);
}

static void observe_commit(void *arg, size_t jobs)
{
    metrics_group_commit(arg, jobs);
}

static void observe_retry(void *arg, unsigned n)
{
    struct metrics *m = arg;
    atomic_fetch_add_explicit(&m->write_retries, n, memory_order_relaxed);
}

void metrics_observe_workers(struct metrics *m, struct workers *w)
{
    const struct workers_observer obs = {.job_ran = observe_job,
                                         .group_committed = observe_commit,
                                         .group_retried = observe_retry,
                                         .job_queued = observe_queued,
                                         .job_returned = observe_returned,
                                         .arg = m};
    workers_set_observer(w, &obs);
}

int metrics_start(struct metrics *m, const struct metrics_env *env)
{
    m->env = *env;
    m->timer = evtimer_new(env->base, on_tick, m);
    if (m->timer == NULL) {
        return -1;
    }
    arm(m, 0);
    return 0;
}

void metrics_stop(struct metrics *m)
{
    if (m == NULL) {
        return;
    }
    m->stopped = true;
    if (m->timer != NULL) {
        event_free(m->timer);
        m->timer = NULL;
    }
}

bool metrics_snapshot_info(const struct metrics *m, int64_t *age_ms, bool *truncated)
{
    if (m->snap_ms == 0) {
        return false;
    }
    int64_t age = time_mono_ms() - m->snap_ms;
    *age_ms = age > 0 ? age : 0;
    *truncated = m->snap.truncated;
    return true;
}

struct history *metrics_history(struct metrics *m)
{
    return m->history;
}

const struct store_metrics_tenant *metrics_tenant(const struct metrics *m, const char *tenant_id)
{
    for (size_t i = 0; i < m->snap.n_tenants; i++) {
        if (strcmp(m->snap.tenants[i].tenant_id, tenant_id) == 0) {
            return &m->snap.tenants[i];
        }
    }
    return NULL;
}

/* ---- exposition ---- */

static void family(struct evbuffer *out, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* `labels` is "" or `key="v",` pairs without braces (a trailing comma is allowed only before le).
 */
static void hist_render(struct evbuffer *out, const char *name, const char *labels,
                        const struct hist *h)
{
    uint64_t cum = 0;
    for (size_t i = 0; i <= h->n_bounds; i++) {
        cum += atomic_load_explicit(&h->counts[i], memory_order_relaxed);
        if (i < h->n_bounds) {
            evbuffer_add_printf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels,
                                labels[0] ? "," : "", h->bounds[i], (unsigned long long)cum);
        } else {
            evbuffer_add_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels,
                                labels[0] ? "," : "", (unsigned long long)cum);
        }
    }
    double sum = (double)atomic_load_explicit(&h->sum_units, memory_order_relaxed) * h->unit;
    const char *open = labels[0] ? "{" : "", *close = labels[0] ? "}" : "";
    evbuffer_add_printf(out, "%s_sum%s%s%s %.6f\n", name, open, labels, close, sum);
    evbuffer_add_printf(out, "%s_count%s%s%s %llu\n", name, open, labels, close,
                        (unsigned long long)cum);
}

/* A histogram family with one series per store op (hists[i] for store_ops[i]). */
static void render_by_op(struct evbuffer *out, const char *name, const char *help,
                         const struct hist *hists)
{
    family(out, name, "histogram", help);
    for (size_t i = 0; i < n_store_ops; i++) {
        char labels[64];
        snprintf(labels, sizeof labels, "op=\"%s\"", store_ops[i]);
        hist_render(out, name, labels, &hists[i]);
    }
}

static double age_s(int64_t now_ms, int64_t then_ms)
{
    return then_ms > 0 && now_ms > then_ms ? (double)(now_ms - then_ms) / 1000.0 : 0.0;
}

/* metrics.tenant_labels=off: the same gauges with no tenant or agent names, summed over the
 * tenants (ages: the oldest of any tenant), so a scrape reveals no tenant's name or load. */
static void render_snapshot_unlabelled(const struct store_metrics_snapshot *s, struct evbuffer *out,
                                       int64_t now)
{
    long long pending = 0, scheduled = 0, quarantined = 0, claimed = 0;
    double oldest_pending = 0.0, oldest_claim = 0.0;
    for (size_t t = 0; t < s->n_tenants; t++) {
        const struct store_metrics_tenant *x = &s->tenants[t];
        pending += x->pending;
        scheduled += x->scheduled;
        quarantined += x->quarantined;
        claimed += x->claimed;
        double a = age_s(now, x->oldest_pending_ms), c = age_s(now, x->oldest_claimed_ms);
        oldest_pending = a > oldest_pending ? a : oldest_pending;
        oldest_claim = c > oldest_claim ? c : oldest_claim;
    }
    family(out, "roost_inbox_pending", "gauge", "Pending events (metrics.tenant_labels=off).");
    evbuffer_add_printf(out, "roost_inbox_pending %lld\n", pending);
    family(out, "roost_inbox_scheduled", "gauge", "Delayed events not yet available.");
    evbuffer_add_printf(out, "roost_inbox_scheduled %lld\n", scheduled);
    family(out, "roost_inbox_quarantined", "gauge", "Quarantined events held.");
    evbuffer_add_printf(out, "roost_inbox_quarantined %lld\n", quarantined);
    family(out, "roost_inbox_oldest_pending_age_seconds", "gauge",
           "Age of the oldest pending event (since available_at); 0 when none.");
    evbuffer_add_printf(out, "roost_inbox_oldest_pending_age_seconds %.3f\n", oldest_pending);
    family(out, "roost_claimed", "gauge", "Events under a lease.");
    evbuffer_add_printf(out, "roost_claimed %lld\n", claimed);
    family(out, "roost_oldest_claim_age_seconds", "gauge",
           "Age of the oldest lease (since claimed_at); 0 when none.");
    evbuffer_add_printf(out, "roost_oldest_claim_age_seconds %.3f\n", oldest_claim);
}

static void render_snapshot(struct metrics *m, struct evbuffer *out, int64_t now)
{
    const struct store_metrics_snapshot *s = &m->snap;
    const char *mode = m->env.cfg->metrics_tenant_labels;
    if (strcmp(mode, "off") == 0) {
        render_snapshot_unlabelled(s, out, now);
        return;
    }
    /* "on": tenants only, every agent counted in agent="_other". */
    size_t n_agents = strcmp(mode, "on") == 0 ? 0 : s->n_agents;
    family(out, "roost_inbox_depth", "gauge",
           "Pending events per agent: the top agents by depth, the rest of a tenant as "
           "agent=\"_other\".");
    for (size_t i = 0; i < n_agents; i++) {
        evbuffer_add_printf(out, "roost_inbox_depth{tenant=\"%s\",agent=\"%s\"} %lld\n",
                            s->agents[i].tenant_id, s->agents[i].agent_id,
                            (long long)s->agents[i].pending);
    }
    for (size_t t = 0; t < s->n_tenants; t++) {
        int64_t rest = s->tenants[t].pending;
        for (size_t i = 0; i < n_agents; i++) {
            if (strcmp(s->agents[i].tenant_id, s->tenants[t].tenant_id) == 0) {
                rest -= s->agents[i].pending;
            }
        }
        evbuffer_add_printf(out, "roost_inbox_depth{tenant=\"%s\",agent=\"_other\"} %lld\n",
                            s->tenants[t].tenant_id, (long long)(rest > 0 ? rest : 0));
    }
    family(out, "roost_inbox_pending", "gauge", "Pending events per tenant.");
    for (size_t t = 0; t < s->n_tenants; t++) {
        evbuffer_add_printf(out, "roost_inbox_pending{tenant=\"%s\"} %lld\n",
                            s->tenants[t].tenant_id, (long long)s->tenants[t].pending);
    }
    family(out, "roost_inbox_scheduled", "gauge", "Delayed events not yet available, per tenant.");
    for (size_t t = 0; t < s->n_tenants; t++) {
        evbuffer_add_printf(out, "roost_inbox_scheduled{tenant=\"%s\"} %lld\n",
                            s->tenants[t].tenant_id, (long long)s->tenants[t].scheduled);
    }
    family(out, "roost_inbox_quarantined", "gauge", "Quarantined events held, per tenant.");
    for (size_t t = 0; t < s->n_tenants; t++) {
        evbuffer_add_printf(out, "roost_inbox_quarantined{tenant=\"%s\"} %lld\n",
                            s->tenants[t].tenant_id, (long long)s->tenants[t].quarantined);
    }
    family(out, "roost_inbox_oldest_pending_age_seconds", "gauge",
           "Age of the oldest pending event (since available_at), per tenant; 0 when none.");
    for (size_t t = 0; t < s->n_tenants; t++) {
        evbuffer_add_printf(out, "roost_inbox_oldest_pending_age_seconds{tenant=\"%s\"} %.3f\n",
                            s->tenants[t].tenant_id, age_s(now, s->tenants[t].oldest_pending_ms));
    }
    family(out, "roost_claimed", "gauge", "Events under a lease, per tenant.");
    for (size_t t = 0; t < s->n_tenants; t++) {
        evbuffer_add_printf(out, "roost_claimed{tenant=\"%s\"} %lld\n", s->tenants[t].tenant_id,
                            (long long)s->tenants[t].claimed);
    }
    family(out, "roost_oldest_claim_age_seconds", "gauge",
           "Age of the oldest lease (since claimed_at), per tenant; 0 when none.");
    for (size_t t = 0; t < s->n_tenants; t++) {
        evbuffer_add_printf(out, "roost_oldest_claim_age_seconds{tenant=\"%s\"} %.3f\n",
                            s->tenants[t].tenant_id, age_s(now, s->tenants[t].oldest_claimed_ms));
    }
}

/* Stores with several database hosts (a Galera cluster, doc/MYSQL.md): where writes go, and how
 * often that moved. Nothing for single-server stores. */
static void render_store_ha(struct evbuffer *out)
{
    struct store_ha_info ha[8];
    size_t n = store_ha_list(ha, sizeof ha / sizeof ha[0]);
    n = n < sizeof ha / sizeof ha[0] ? n : sizeof ha / sizeof ha[0];
    if (n == 0) {
        return;
    }
    family(out, "roost_store_failovers_total", "counter",
           "Times this node's writes moved to another database node, by host list.");
    for (size_t i = 0; i < n; i++) {
        evbuffer_add_printf(out, "roost_store_failovers_total{hosts=\"%s\"} %llu\n", ha[i].hosts,
                            (unsigned long long)ha[i].failovers);
    }
    family(out, "roost_store_writer", "gauge",
           "1 for the database node this node writes to now (writer=\"\" while none is usable).");
    for (size_t i = 0; i < n; i++) {
        evbuffer_add_printf(out, "roost_store_writer{hosts=\"%s\",writer=\"%s\"} 1\n", ha[i].hosts,
                            ha[i].writer);
    }
}

/* The read lanes' fairness (workers.h), summed over the store shards: reads a free reader passed
 * over because their tenant held its share of the lane, and the jobs the scan readers ran. */
static void render_read_lanes(struct metrics *m, struct evbuffer *out)
{
    struct workers_stats sum = {0};
    for (size_t i = 0; m->env.pool != NULL; i++) {
        struct workers *w = m->env.pool(m->env.arg, i);
        if (w == NULL) {
            break;
        }
        struct workers_stats ws;
        workers_get_stats(w, &ws);
        sum.reads_deferred += ws.reads_deferred;
        sum.scans += ws.scans;
        sum.overlaps += ws.overlaps;
        sum.handoffs += ws.handoffs;
    }
    family(out, "roost_store_reads_deferred_total", "counter",
           "Times a free store reader passed over queued reads whose tenant held its share of the "
           "readers (one tenant never takes them all).");
    evbuffer_add_printf(out, "roost_store_reads_deferred_total %llu\n", sum.reads_deferred);
    family(out, "roost_store_scans_total", "counter",
           "Jobs run on the scan readers (admin listings, bulk inbox reads).");
    evbuffer_add_printf(out, "roost_store_scans_total %llu\n", sum.scans);
    family(out, "roost_store_write_overlaps_total", "counter",
           "Write groups that began while another writer's COMMIT was in flight.");
    evbuffer_add_printf(out, "roost_store_write_overlaps_total %llu\n", sum.overlaps);
    family(out, "roost_store_write_handoffs_total", "counter",
           "Write jobs moved off a committing writer's queue to an idle writer.");
    evbuffer_add_printf(out, "roost_store_write_handoffs_total %llu\n", sum.handoffs);
}

int metrics_render(struct metrics *m, const struct metrics_live *live, struct evbuffer *out)
{
    int64_t now = time_now_ms();
    family(out, "roost_build_info", "gauge", "Build of this roostd.");
    evbuffer_add_printf(out, "roost_build_info{version=\"%s\"} 1\n", ROOST_VERSION);
    render_snapshot(m, out, now);
    family(out, "roost_metrics_snapshot_age_seconds", "gauge",
           "Age of the store snapshot behind the inbox gauges (refreshed every "
           "metrics.refresh_ms).");
    evbuffer_add_printf(out, "roost_metrics_snapshot_age_seconds %.3f\n",
                        m->snap_ms ? age_s(time_mono_ms(), m->snap_ms) : 0.0);
    family(out, "roost_metrics_snapshot_failures_total", "counter",
           "Store snapshots for the gauges that failed.");
    evbuffer_add_printf(out, "roost_metrics_snapshot_failures_total %llu\n",
                        (unsigned long long)m->snap_failures);
    family(out, "roost_metrics_tenants_truncated", "gauge",
           "1 when more tenants than the snapshot holds have unfinished events.");
    evbuffer_add_printf(out, "roost_metrics_tenants_truncated %d\n", m->snap.truncated ? 1 : 0);

    family(out, "roost_publish_total", "counter", "Inbox rows written by publishes.");
    evbuffer_add_printf(out, "roost_publish_total %llu\n", (unsigned long long)m->published);
    family(out, "roost_lease_expirations_total", "counter",
           "Leases that expired and were taken back by the scavenger.");
    evbuffer_add_printf(out, "roost_lease_expirations_total %llu\n",
                        (unsigned long long)m->lease_expired);
    family(out, "roost_releases_total", "counter", "Leases released by consumers, by reason.");
    static const char *const reasons[] = {"transient", "shutdown", "poison"};
    for (int i = 0; i < 3; i++) {
        evbuffer_add_printf(out, "roost_releases_total{reason=\"%s\"} %llu\n", reasons[i],
                            (unsigned long long)m->released[i]);
    }
    family(out, "roost_quarantined_total", "counter",
           "Events moved to quarantine (poison releases, too many attempts).");
    evbuffer_add_printf(out, "roost_quarantined_total %llu\n", (unsigned long long)m->quarantined);
    family(out, "roost_sse_subscribers", "gauge", "Open SSE streams on this node.");
    evbuffer_add_printf(out, "roost_sse_subscribers %zu\n", live->sse_subscribers);
    family(out, "roost_long_polls", "gauge",
           "Long-polling reads and claims waiting on this node for a change of their agent.");
    evbuffer_add_printf(out, "roost_long_polls %zu\n", live->long_polls);
    family(out, "roost_claims_with_publish_total", "counter",
           "Long-polling claims answered from the transaction of the publish that woke them.");
    evbuffer_add_printf(out, "roost_claims_with_publish_total %llu\n",
                        (unsigned long long)m->claims_with_publish);
    family(out, "roost_sse_pings_total", "counter", "inbox_updated events sent to SSE streams.");
    evbuffer_add_printf(out, "roost_sse_pings_total %llu\n", (unsigned long long)m->sse_pings);

    family(out, "roost_delivery_latency_seconds", "histogram",
           "From available_at to the ack that completed the event.");
    hist_render(out, "roost_delivery_latency_seconds", "", &m->delivery);

    family(out, "roost_http_requests_total", "counter",
           "Answered HTTP requests by route (router name) and status.");
    for (size_t i = 0; i < m->n_routes; i++) {
        for (size_t k = 0; k < m->routes[i].n_statuses; k++) {
            evbuffer_add_printf(out, "roost_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
                                m->routes[i].name, m->routes[i].statuses[k].status,
                                (unsigned long long)m->routes[i].statuses[k].n);
        }
    }
    family(out, "roost_http_request_duration_seconds", "histogram",
           "From request parsed to answer queued, by route.");
    for (size_t i = 0; i < m->n_routes; i++) {
        char labels[96];
        snprintf(labels, sizeof labels, "route=\"%s\"", m->routes[i].name);
        hist_render(out, "roost_http_request_duration_seconds", labels, &m->routes[i].duration);
    }
    render_by_op(out, "roost_store_op_duration_seconds",
                 "Time a store job ran on a worker (inside its transaction), by op.", m->store_op);
    render_by_op(out, "roost_store_queue_wait_seconds",
                 "Time a store job waited from its submission to the start of its run (a write: "
                 "of its group's transaction), by op.",
                 m->store_queued);
    family(out, "roost_store_return_wait_seconds", "histogram",
           "Time a store job's result (a write's: after its COMMIT) waited for the event loop.");
    hist_render(out, "roost_store_return_wait_seconds", "", &m->store_returned);
    family(out, "roost_group_commit_batch_size", "histogram",
           "Write jobs sharing one transaction and one commit.");
    hist_render(out, "roost_group_commit_batch_size", "", &m->group_commit);
    family(out, "roost_store_write_retries_total", "counter",
           "Write transactions run again after a deadlock, lock wait timeout or busy store.");
    evbuffer_add_printf(
        out, "roost_store_write_retries_total %llu\n",
        (unsigned long long)atomic_load_explicit(&m->write_retries, memory_order_relaxed));
    render_read_lanes(m, out);
    webhook_stats_render(m->webhooks, m->env.cfg->metrics_tenant_labels, out);
    ingest_stats_render(m->ingest, m->env.cfg->metrics_tenant_labels, out);
    render_store_ha(out);
    return 0;
}

/* ---- webhook deliveries (any thread) ---- */

/* Endpoints with their own series; the rest of a node's endpoints share endpoint="_other". */
#define WEBHOOK_MAX_ENDPOINTS 256

struct webhook_series {
    char tenant_id[STORE_ID_MAX + 1];
    char endpoint_id[STORE_ID_MAX + 1];
    uint64_t attempts, failures, disabled;
    struct hist latency;
};

struct webhook_stats {
    pthread_mutex_t lock;
    struct webhook_series series[WEBHOOK_MAX_ENDPOINTS + 1]; /* the last one is "_other" */
    size_t n;
    /* The series as a scrape shows them (metrics.tenant_labels); loop thread only. */
    struct webhook_series view[WEBHOOK_MAX_ENDPOINTS + 1];
};

static struct webhook_stats *webhook_stats_new(void)
{
    struct webhook_stats *ws = calloc(1, sizeof *ws);
    if (ws == NULL) {
        return NULL;
    }
    pthread_mutex_init(&ws->lock, NULL);
    for (size_t i = 0; i <= WEBHOOK_MAX_ENDPOINTS; i++) {
        hist_init(&ws->series[i].latency, delivery_bounds, NBOUNDS(delivery_bounds), 1e-3);
    }
    snprintf(ws->series[WEBHOOK_MAX_ENDPOINTS].tenant_id, STORE_ID_MAX + 1, "_other");
    snprintf(ws->series[WEBHOOK_MAX_ENDPOINTS].endpoint_id, STORE_ID_MAX + 1, "_other");
    return ws;
}

static void webhook_stats_free(struct webhook_stats *ws)
{
    if (ws != NULL) {
        pthread_mutex_destroy(&ws->lock);
        free(ws);
    }
}

void metrics_webhook_attempt(struct metrics *m, const char *tenant_id, const char *endpoint_id,
                             bool ok, bool disabled, double seconds)
{
    struct webhook_stats *ws = m->webhooks;
    pthread_mutex_lock(&ws->lock);
    struct webhook_series *s = NULL;
    for (size_t i = 0; i < ws->n && s == NULL; i++) {
        if (strcmp(ws->series[i].endpoint_id, endpoint_id) == 0 &&
            strcmp(ws->series[i].tenant_id, tenant_id) == 0) {
            s = &ws->series[i];
        }
    }
    if (s == NULL && ws->n < WEBHOOK_MAX_ENDPOINTS) {
        s = &ws->series[ws->n++];
        snprintf(s->tenant_id, sizeof s->tenant_id, "%s", tenant_id);
        snprintf(s->endpoint_id, sizeof s->endpoint_id, "%s", endpoint_id);
    }
    s = s != NULL ? s : &ws->series[WEBHOOK_MAX_ENDPOINTS];
    s->attempts++;
    s->failures += ok ? 0 : 1;
    s->disabled += disabled ? 1 : 0;
    hist_observe(&s->latency, seconds);
    pthread_mutex_unlock(&ws->lock);
}

static void hist_add(struct hist *to, const struct hist *from)
{
    for (size_t i = 0; i <= from->n_bounds; i++) {
        atomic_fetch_add_explicit(&to->counts[i],
                                  atomic_load_explicit(&from->counts[i], memory_order_relaxed),
                                  memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&to->sum_units,
                              atomic_load_explicit(&from->sum_units, memory_order_relaxed),
                              memory_order_relaxed);
}

/* The series as metrics.tenant_labels shows them, into out[] (room for every series): "top" as
 * kept (tenant and endpoint), "on" one per tenant with endpoint="_other", "off" one sum with no
 * names (tenant_id ""). Returns how many. Under ws->lock. */
static size_t webhook_series_view(const struct webhook_stats *ws, const char *mode,
                                  struct webhook_series *out)
{
    bool off = strcmp(mode, "off") == 0, per_tenant = strcmp(mode, "on") == 0;
    size_t n = 0;
    for (size_t i = 0; i <= WEBHOOK_MAX_ENDPOINTS; i++) {
        const struct webhook_series *s = &ws->series[i];
        if (i >= ws->n && !(i == WEBHOOK_MAX_ENDPOINTS && s->attempts > 0)) {
            continue;
        }
        size_t k = n;
        if (off || per_tenant) {
            k = 0;
            while (k < n && !off && strcmp(out[k].tenant_id, s->tenant_id) != 0) {
                k++;
            }
        }
        if (k == n) {
            struct webhook_series *t = &out[n++];
            memset(t, 0, sizeof *t);
            hist_init(&t->latency, delivery_bounds, NBOUNDS(delivery_bounds), 1e-3);
            snprintf(t->tenant_id, sizeof t->tenant_id, "%s", off ? "" : s->tenant_id);
            snprintf(t->endpoint_id, sizeof t->endpoint_id, "%s",
                     off || per_tenant ? "_other" : s->endpoint_id);
        }
        out[k].attempts += s->attempts;
        out[k].failures += s->failures;
        out[k].disabled += s->disabled;
        hist_add(&out[k].latency, &s->latency);
    }
    return n;
}

static void webhook_stats_render(struct webhook_stats *ws, const char *mode, struct evbuffer *out)
{
    static const char *const names[] = {"roost_webhook_attempts_total",
                                        "roost_webhook_failures_total",
                                        "roost_webhook_disabled_total"};
    static const char *const help[] = {"Webhook delivery attempts made by this node, by endpoint.",
                                       "Webhook delivery attempts that did not get a 2xx.",
                                       "Endpoints this node disabled (410, or failing for "
                                       "webhooks.disable_after_s)."};
    pthread_mutex_lock(&ws->lock);
    size_t n = webhook_series_view(ws, mode, ws->view);
    pthread_mutex_unlock(&ws->lock);
    for (int f = 0; f < 3; f++) {
        family(out, names[f], "counter", help[f]);
        for (size_t i = 0; i < n; i++) {
            const struct webhook_series *s = &ws->view[i];
            uint64_t v = f == 0 ? s->attempts : f == 1 ? s->failures : s->disabled;
            if (s->tenant_id[0] == '\0') {
                evbuffer_add_printf(out, "%s %llu\n", names[f], (unsigned long long)v);
            } else {
                evbuffer_add_printf(out, "%s{tenant=\"%s\",endpoint=\"%s\"} %llu\n", names[f],
                                    s->tenant_id, s->endpoint_id, (unsigned long long)v);
            }
        }
    }
    family(out, "roost_webhook_latency_seconds", "histogram",
           "From sending a webhook delivery to its answer (or failure), by endpoint.");
    for (size_t i = 0; i < n; i++) {
        char labels[2 * STORE_ID_MAX + 40] = "";
        if (ws->view[i].tenant_id[0] != '\0') {
            snprintf(labels, sizeof labels, "tenant=\"%s\",endpoint=\"%s\"", ws->view[i].tenant_id,
                     ws->view[i].endpoint_id);
        }
        hist_render(out, "roost_webhook_latency_seconds", labels, &ws->view[i].latency);
    }
}

/* ---- inbound webhook deliveries (loop thread) ---- */

/* Sources with their own series; the rest share source="_other". */
#define INGEST_MAX_SOURCES 256

struct ingest_series {
    char tenant_id[STORE_ID_MAX + 1];
    char source_id[STORE_ID_MAX + 1];
    uint64_t count[3]; /* accepted, duplicate, refused */
};

struct ingest_stats {
    struct ingest_series series[INGEST_MAX_SOURCES + 1]; /* the last one is "_other" */
    size_t n;
};

static const char *const ingest_outcomes[] = {"accepted", "duplicate", "refused"};

void metrics_ingest(struct metrics *m, const char *tenant_id, const char *source_id,
                    const char *outcome)
{
    struct ingest_stats *is = m->ingest;
    struct ingest_series *s = NULL;
    for (size_t i = 0; i < is->n && s == NULL; i++) {
        if (strcmp(is->series[i].source_id, source_id) == 0 &&
            strcmp(is->series[i].tenant_id, tenant_id) == 0) {
            s = &is->series[i];
        }
    }
    if (s == NULL && is->n < INGEST_MAX_SOURCES) {
        s = &is->series[is->n++];
        snprintf(s->tenant_id, sizeof s->tenant_id, "%s", tenant_id);
        snprintf(s->source_id, sizeof s->source_id, "%s", source_id);
    }
    if (s == NULL) {
        s = &is->series[INGEST_MAX_SOURCES];
        snprintf(s->tenant_id, sizeof s->tenant_id, "_other");
        snprintf(s->source_id, sizeof s->source_id, "_other");
    }
    for (size_t k = 0; k < 3; k++) {
        s->count[k] += strcmp(outcome, ingest_outcomes[k]) == 0 ? 1 : 0;
    }
}

/* metrics.tenant_labels "off": one series per outcome, no names; otherwise by tenant and
 * source. */
static void ingest_stats_render(const struct ingest_stats *is, const char *mode,
                                struct evbuffer *out)
{
    bool off = strcmp(mode, "off") == 0;
    family(out, "roost_ingest_deliveries_total", "counter",
           "Inbound webhook deliveries this node answered, by source and outcome (accepted, "
           "duplicate, refused).");
    for (size_t k = 0; k < 3; k++) {
        uint64_t sum = 0;
        for (size_t i = 0; i <= INGEST_MAX_SOURCES; i++) {
            const struct ingest_series *s = &is->series[i];
            if ((i >= is->n && i != INGEST_MAX_SOURCES) || s->tenant_id[0] == '\0') {
                continue;
            }
            if (off) {
                sum += s->count[k];
            } else {
                evbuffer_add_printf(out,
                                    "roost_ingest_deliveries_total{tenant=\"%s\",source=\"%s\","
                                    "outcome=\"%s\"} %llu\n",
                                    s->tenant_id, s->source_id, ingest_outcomes[k],
                                    (unsigned long long)s->count[k]);
            }
        }
        if (off) {
            evbuffer_add_printf(out, "roost_ingest_deliveries_total{outcome=\"%s\"} %llu\n",
                                ingest_outcomes[k], (unsigned long long)sum);
        }
    }
}

static struct ingest_stats *ingest_stats_new(void)
{
    return calloc(1, sizeof(struct ingest_stats));
}
