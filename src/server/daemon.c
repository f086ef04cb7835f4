/* SPDX-License-Identifier: MIT */
/* Wiring of the daemon (see daemon.h): start order (store and migrations, auth, HTTP, scheduler,
 * then the ready file), the loop, and graceful shutdown on SIGTERM/SIGINT: stop accepting, answer
 * long polls, finish every in-flight request, then close the store. SIGHUP reloads the
 * reloadable keys. */
#include "server/daemon.h"

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <openssl/rand.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/limits.h"
#include "common/log.h"
#include "server/access_log.h"
#include "server/api.h"
#include "server/auth.h"
#include "server/listener.h"
#include "server/metrics.h"
#include "server/ratelimit.h"
#include "server/router.h"
#include "server/scheduler.h"
#include "server/sse_hub.h"
#include "server/waiters.h"
#include "server/webhooks.h"
#include "server/workers.h"
#include "store/store.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

/* The hub's callback when a stream closed: the last one may end a shutdown. */
static void hub_stream_closed(void *arg)
{
    runtime_drain_check(arg);
}

/* What the metrics' snapshot timer needs from the daemon (metrics.h). */
static struct workers *metrics_pool(void *arg, size_t i)
{
    struct runtime *rt = arg;
    return i < rt->n_shards ? rt->shards[i].workers : NULL;
}

static void metrics_hold(void *arg)
{
    runtime_hold(arg);
}

static void metrics_release(void *arg)
{
    runtime_release(arg);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct daemon *d = arg;
    struct runtime *rt = &d->rt;
    if (rt->draining) {
        return;
    }
    log_info("shutting down", "signal=%d inflight=%zu", (int)sig, rt->inflight);
    rt->draining = true;
    listener_stop_accepting(d->listener);
    for (size_t i = 0; i < rt->n_shards; i++) {
        scheduler_stop(rt->shards[i].sched);
    }
    metrics_stop(rt->metrics);
    waiters_fire_all(rt->waiters); /* long polls answer with what they have */
    sse_hub_shutdown(rt->sse);     /* streams end cleanly */
    /* A client that never reads its answer must not hold the shutdown forever. */
    event_base_loopexit(rt->base, &(struct timeval){.tv_sec = 10});
    runtime_drain_check(rt);
}

int daemon_reload(struct daemon *d)
{
    struct runtime *rt = &d->rt;
    struct config fresh;
    char err[512] = "";
    struct auth *next = NULL;
    int rc = -1;
    if (config_build(&fresh, d->source, err, sizeof err) != 0) {
        goto out;
    }
    /* The auth material is checked first: a broken key file keeps the whole old config. The own
     * key and the data dir are not reloadable, so the current ones are used. */
    struct config mix = *rt->cfg;
    mix.auth_jwks_file = fresh.auth_jwks_file;
    mix.auth_hs256_secret_file = fresh.auth_hs256_secret_file;
    mix.auth_issuer = fresh.auth_issuer;
    mix.auth_audience = fresh.auth_audience;
    if (auth_new(&mix, &next, err, sizeof err) != ROOST_OK) {
        goto out;
    }
    /* Everything reading rt->cfg runs on this (the loop) thread, and jobs copy what they need
     * when submitted: values change between requests, never under one. */
    char changed[512], restart[512];
    config_apply_reloadable(rt->cfg, &fresh, changed, sizeof changed, restart, sizeof restart);
    /* auth_authenticate runs on the loop thread only, so nothing holds the old auth: swap and
     * free without locks. The new auth's token cache starts empty (flushed). */
    struct auth *old = rt->auth;
    rt->auth = next;
    auth_free(old);
    char desc[512];
    auth_describe(rt->auth, desc, sizeof desc);
    log_info("config reloaded", "changed=\"%s\" needs_restart=\"%s\" %s", changed, restart, desc);
    /* After the line above, so a reload that raises the level still leaves its trace. */
    log_set_level((enum log_level)log_level_parse(rt->cfg->log_level));
    log_set_json(strcmp(rt->cfg->log_format, "json") == 0);
    rc = 0;
out:
    if (rc != 0) {
        log_error("config reload failed, keeping the previous config", "error=\"%s\"", err);
    }
    config_cleanup(&fresh);
    return rc;
}

static void on_hup(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    struct daemon *d = arg;
    if (!d->rt.draining) {
        daemon_reload(d);
    }
}

/* The ready file holds the URL roostd listens on; a watcher sees it whole or not at all. */
static int write_ready_file(const char *path, const char *url)
{
    char line[512];
    int n = snprintf(line, sizeof line, "%s\n", url);
    if (n < 0 || (size_t)n >= sizeof line) {
        return -1;
    }
    return fsutil_write_atomic(path, line, (size_t)n, 0666);
}

/* libevent's own warnings (accept errors, bad sockets) go through our log, as logfmt lines. */
static void libevent_log(int severity, const char *msg)
{
    enum log_level level = severity >= EVENT_LOG_ERR    ? LOG_ERROR
                           : severity >= EVENT_LOG_WARN ? LOG_WARN
                           : severity >= EVENT_LOG_MSG  ? LOG_INFO
                                                        : LOG_DEBUG;
    log_line(level, "libevent", "detail=\"%s\"", msg);
}

/* Each SSE subscriber holds a descriptor: a stream limit above the descriptor limit would end
 * in refused connections long before the 429 the limit promises. */
static void check_nofile(const struct config *cfg)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)cfg->sse_max_total + 64 > rl.rlim_cur) {
        log_warn("sse.max_total exceeds the open-file limit",
                 "sse_max_total=%lld nofile=%llu hint=\"raise LimitNOFILE or lower sse.max_total\"",
                 (long long)cfg->sse_max_total, (unsigned long long)rl.rlim_cur);
    }
    /* One address holding every descriptor shuts everyone else out: its cap must leave room.
     * The default (-1) is derived from the limit (listener_auto_conns_per_addr). */
    if (cfg->http_max_conns_per_addr < 0) {
        log_info("http.max_conns_per_addr from the descriptor limit",
                 "http_max_conns_per_addr=%lld", (long long)listener_auto_conns_per_addr());
    } else if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
               (cfg->http_max_conns_per_addr == 0 ||
                (rlim_t)cfg->http_max_conns_per_addr > rl.rlim_cur / 2)) {
        log_warn("http.max_conns_per_addr lets one address take most descriptors",
                 "http_max_conns_per_addr=%lld nofile=%llu hint=\"set it to at most %llu, or raise "
                 "LimitNOFILE\"",
                 (long long)cfg->http_max_conns_per_addr, (unsigned long long)rl.rlim_cur,
                 (unsigned long long)(rl.rlim_cur / 4));
    }
}

/* Defaults that leave a tenant unbounded: said once at start, so an operator chooses. */
static void check_limits(const struct config *cfg)
{
    if (cfg->limits_publish_rows_per_s == 0) {
        log_warn("limits.publish_rows_per_s is 0: one tenant may publish without bound",
                 "hint=\"set limits.publish_rows_per_s (inbox rows per second per tenant) on a "
                 "shared server\"");
    }
}

/* The data dir holds the database (payloads, tenants' HMAC secrets) and the token signing key.
 * roostd creates its files 0600, but an older install or a copied dir may let others in: say so
 * at start, once per path (the operator decides; roostd does not chmod what it did not make). */
static void check_data_dir_modes(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0 && (st.st_mode & 0077) != 0) {
        log_warn("data dir is open to other users", "path=%s mode=%04o hint=\"chmod 700 %s\"", dir,
                 (unsigned)(st.st_mode & 07777), dir);
    }
    DIR *dh = opendir(dir);
    if (dh == NULL) {
        return;
    }
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (de->d_name[0] == '.' || lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            continue;
        }
        if ((st.st_mode & 0044) != 0) {
            log_warn("data file is readable by other users", "path=%s mode=%04o hint=\"chmod 600\"",
                     path, (unsigned)(st.st_mode & 07777));
        }
    }
    closedir(dh);
}

/* Opens the default store and every tenant's own store, each with its worker threads. */
static int shards_open(struct runtime *rt, char *err, size_t errlen)
{
    const struct config *cfg = rt->cfg;
    rt->shards = calloc(1 + cfg->n_tenant_stores, sizeof *rt->shards);
    if (!rt->shards) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct store_options opt = {
        .busy_timeout_ms = ROOST_BUSY_TIMEOUT_MS,
        .synchronous_full = strcmp(cfg->store_synchronous, "full") == 0,
        .admin_scan_ms = (int)cfg->limits_admin_scan_ms,
        .failover_timeout_s = (int)cfg->store_failover_timeout_s,
    };
    /* A random mark for this process's rows in a shared change log (MySQL), so its tailer pings
     * only for commits made elsewhere. */
    uint64_t origin = 0;
    while (origin == 0) {
        if (RAND_bytes((unsigned char *)&origin, sizeof origin) != 1) {
            snprintf(err, errlen, "no randomness for the node id");
            return -1;
        }
        origin &= INT64_MAX;
    }
    opt.origin = (int64_t)origin;
    for (size_t i = 0; i <= cfg->n_tenant_stores; i++) {
        struct shard *sh = &rt->shards[i];
        sh->tenant_id = i == 0 ? NULL : cfg->tenant_stores[i - 1].tenant_id;
        sh->url = i == 0 ? cfg->store_url : cfg->tenant_stores[i - 1].url;
        rt->n_shards++;
        /* SQLite has one writer at a time: more threads would only wait on its lock. On MySQL
         * a second writer overlaps one agent's statements with another's COMMIT (P2 C2 on
         * MariaDB: +35 % full cycles, doc/BENCHMARKS.md). */
        bool single_writer = store_url_has(sh->url, STORE_CAP_SINGLE_WRITER);
        int writers = single_writer ? 1 : cfg->store_writers > 0 ? (int)cfg->store_writers : 2;
        if (workers_new(rt->base, sh->url, &opt, (int)cfg->store_readers,
                        (int)cfg->store_scan_readers, writers, (int)cfg->store_group_commit_max,
                        &sh->workers, err, errlen) != ROOST_OK) {
            if (sh->tenant_id != NULL) {
                size_t used = strlen(err);
                snprintf(err + used, errlen - used, " (store.tenant.%s)", sh->tenant_id);
            }
            return -1;
        }
        workers_set_overlap(sh->workers, cfg->store_write_overlap);
    }
    return 0;
}

/* The webhook signer and filter, and one dispatcher per store when webhooks.enabled. */
static int webhooks_open(struct runtime *rt, char *err, size_t errlen)
{
    const struct config *cfg = rt->cfg;
    rt->hook_signer = calloc(1, sizeof *rt->hook_signer);
    rt->hook_net = calloc(1, sizeof *rt->hook_net);
    if (rt->hook_signer == NULL || rt->hook_net == NULL ||
        webhooks_signer_init(rt->hook_signer, &rt->sign_key) != ROOST_OK ||
        webhooks_net_init(rt->hook_net, cfg, err, errlen) != 0) {
        if (err[0] == '\0') {
            snprintf(err, errlen, "webhooks: cannot set up the signer");
        }
        return -1;
    }
    log_info("webhook signing key", "kid=%s published_keys=%zu", rt->hook_signer->kid,
             rt->sign_key.n_keys);
    /* origin 0: the dispatcher's own commits reach this node's tailer like any other. */
    struct store_options opt = {
        .busy_timeout_ms = ROOST_BUSY_TIMEOUT_MS,
        .synchronous_full = strcmp(cfg->store_synchronous, "full") == 0,
    };
    for (size_t i = 0; cfg->webhooks_enabled && i < rt->n_shards; i++) {
        struct shard *sh = &rt->shards[i];
        sh->webhooks =
            webhooks_start(cfg, sh->url, &opt, rt->hook_signer, rt->metrics, err, errlen);
        if (sh->webhooks == NULL) {
            return -1;
        }
    }
    return 0;
}

/* The event loop. With epoll, changes of interest are gathered and applied once per loop turn
 * (EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST): evhttp stops reading while it answers and starts
 * writing, then the reverse, and those changes cancel out within one turn instead of costing an
 * epoll_ctl(2) each (4 per request without it). The flag's one hazard, a dup()ed descriptor
 * watched twice, never arises here: every socket is watched once. */
static struct event_base *loop_new(void)
{
    struct event_config *cfg = event_config_new();
    if (!cfg) {
        return NULL;
    }
    event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return base;
}

int daemon_start(struct daemon *d, struct config *cfg, const struct config_source *source,
                 const char *ready_file, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    struct runtime *rt = &d->rt;
    rt->cfg = cfg;
    d->source = source;
    signal(SIGPIPE, SIG_IGN);
    event_set_log_callback(libevent_log);
    check_nofile(cfg);
    check_limits(cfg);
    /* Must precede event_base_new: event_active() from worker threads needs the locks. */
    if (evthread_use_pthreads() != 0 || !(rt->base = loop_new())) {
        snprintf(err, errlen, "cannot create the event loop");
        return -1;
    }
    if (auth_new(cfg, &rt->auth, err, errlen) != ROOST_OK) {
        return -1;
    }
    char desc[512];
    auth_describe(rt->auth, desc, sizeof desc);
    log_info("auth keys loaded", "%s", desc);
    if (server_key_load(&rt->sign_key, cfg->webhooks_signing_key_file,
                        cfg->webhooks_extra_keys_file, cfg->data_dir, err, errlen) != 0) {
        return -1;
    }
    if (shards_open(rt, err, errlen) != 0) {
        return -1;
    }
    check_data_dir_modes(cfg->data_dir);
    if ((rt->metrics = metrics_new()) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < rt->n_shards; i++) {
        metrics_observe_workers(rt->metrics, rt->shards[i].workers);
    }
    rt->waiters = waiters_new(rt->base);
    rt->sse = sse_hub_new(rt->base, rt->cfg, rt->metrics, hub_stream_closed, rt);
    rt->publish_rl = ratelimit_new();
    rt->ticket_rl = ratelimit_new();
    rt->register_rl = ratelimit_new();
    rt->access_log = access_log_new(rt->base);
    rt->ingest_rl = ratelimit_new();
    rt->device_rl = ratelimit_new();
    if (!rt->waiters || !rt->sse || !rt->publish_rl || !rt->ticket_rl || !rt->register_rl ||
        !rt->access_log || !rt->ingest_rl || !rt->device_rl) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    sse_hub_set_closecb_fn(rt->sse, listener_set_closecb);
    if (listener_start(rt->base, cfg, router_dispatch, rt, &d->listener, rt->base_url,
                       sizeof rt->base_url, err, errlen) != 0) {
        return -1;
    }
    for (size_t i = 0; i < rt->n_shards; i++) {
        if (!(rt->shards[i].sched = scheduler_start(rt, rt->shards[i].workers))) {
            snprintf(err, errlen, "cannot start the scheduler");
            return -1;
        }
    }
    if (webhooks_open(rt, err, errlen) != 0) {
        return -1;
    }
    const struct metrics_env menv = {
        .base = rt->base,
        .cfg = rt->cfg,
        .pool = metrics_pool,
        .hold = metrics_hold,
        .release = metrics_release,
        .arg = rt,
    };
    if (metrics_start(rt->metrics, &menv) != 0) {
        snprintf(err, errlen, "cannot start the metrics timer");
        return -1;
    }
    d->sig_term = evsignal_new(rt->base, SIGTERM, on_signal, d);
    d->sig_int = evsignal_new(rt->base, SIGINT, on_signal, d);
    /* SIGHUP through the loop as well: the reload then runs on the thread that authenticates. */
    d->sig_hup = evsignal_new(rt->base, SIGHUP, on_hup, d);
    if (!d->sig_term || !d->sig_int || !d->sig_hup || evsignal_add(d->sig_term, NULL) ||
        evsignal_add(d->sig_int, NULL) || evsignal_add(d->sig_hup, NULL)) {
        snprintf(err, errlen, "cannot start the scheduler or signal handlers");
        return -1;
    }
    if (ready_file && write_ready_file(ready_file, rt->base_url) != 0) {
        snprintf(err, errlen, "cannot write ready file %s: %s", ready_file, strerror(errno));
        return -1;
    }
    if (cfg->metrics_token[0] == '\0') {
        log_info("metrics served to loopback peers only",
                 "hint=\"set metrics.token to scrape /metrics from other hosts\"");
    }
    log_info("roostd listening", "url=%s store=%s tenant_stores=%zu", rt->base_url,
             /* A URL with userinfo or a query may hold a secret: not logged. */
             strpbrk(cfg->store_url, "@?") == NULL ? cfg->store_url : "(configured)",
             rt->n_shards - 1);
    return 0;
}

int daemon_run(struct daemon *d)
{
    return event_base_dispatch(d->rt.base) < 0 ? -1 : 0;
}

void daemon_cleanup(struct daemon *d)
{
    struct runtime *rt = &d->rt;
    /* Order: no more timers; parked long polls answer; the store threads finish every job
     * (their done() still replies and notifies, so HTTP, waiters and the hub must exist); then
     * HTTP (closing connections unlinks their streams), the waiters and the hub. */
    rt->draining = true;
    api_webhooks_drain();
    for (size_t i = 0; i < rt->n_shards; i++) {
        scheduler_stop(rt->shards[i].sched);
        webhooks_stop(rt->shards[i].webhooks);
        rt->shards[i].webhooks = NULL;
    }
    free(rt->hook_signer);
    free(rt->hook_net);
    rt->hook_signer = NULL;
    rt->hook_net = NULL;
    metrics_stop(rt->metrics);
    if (rt->waiters && rt->n_shards > 0) {
        waiters_fire_all(rt->waiters);
    }
    for (size_t i = 0; i < rt->n_shards; i++) {
        struct shard *sh = &rt->shards[i];
        if (sh->workers) {
            struct workers_stats ws;
            workers_get_stats(sh->workers, &ws);
            log_info("store writes",
                     "tenant_store=%s commits=%llu write_jobs=%llu max_group=%llu retries=%llu "
                     "overlaps=%llu handoffs=%llu scans=%llu reads_deferred=%llu",
                     sh->tenant_id ? sh->tenant_id : "default", ws.commits, ws.write_jobs,
                     ws.max_group, ws.retries, ws.overlaps, ws.handoffs, ws.scans,
                     ws.reads_deferred);
        }
        workers_free(sh->workers);
        sh->workers = NULL;
    }
    listener_free(d->listener);
    d->listener = NULL;
    if (rt->waiters) {
        waiters_free(rt->waiters);
        rt->waiters = NULL;
    }
    sse_hub_free(rt->sse); /* after the listener: closing connections unlinks their streams */
    ratelimit_free(rt->publish_rl);
    rt->publish_rl = NULL;
    ratelimit_free(rt->ticket_rl);
    rt->ticket_rl = NULL;
    ratelimit_free(rt->ingest_rl);
    rt->ingest_rl = NULL;
    ratelimit_free(rt->device_rl);
    rt->device_rl = NULL;
    ratelimit_free(rt->register_rl);
    rt->register_rl = NULL;
    rt->sse = NULL;
    for (size_t i = 0; i < rt->n_shards; i++) {
        scheduler_free(rt->shards[i].sched);
    }
    free(rt->shards);
    rt->shards = NULL;
    rt->n_shards = 0;
    metrics_free(rt->metrics); /* after the workers: a snapshot job's done() uses it */
    rt->metrics = NULL;
    if (d->sig_term) {
        event_free(d->sig_term);
    }
    if (d->sig_int) {
        event_free(d->sig_int);
    }
    if (d->sig_hup) {
        event_free(d->sig_hup);
    }
    auth_free(rt->auth);
    server_key_cleanup(&rt->sign_key);
    access_log_free(rt->access_log); /* last: every answer above has written its line */
    rt->access_log = NULL;
    if (rt->base) {
        event_base_free(rt->base);
    }
    memset(d, 0, sizeof *d);
}
