/* SPDX-License-Identifier: MIT */
/* The agent object of libroost (include/roost/roost_agent.h, doc/AGENT.md): options, creation,
 * stop, free and status, and the helpers its threads share (agent.h). The loop itself is in
 * agent_loop.c, the lease keeper in agent_leases.c, the state file in agent_state.c.
 *
 * Everything shared sits under a->mu with one condition variable (few threads, simple waits).
 * The state file is written before the network learns about it: a lease is stored before its
 * handler runs and a processed id before its ack is sent, so a crash at any point leaves enough
 * behind for the next run to release or ack instead of losing or repeating work. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ids.h"
#include "common/timeutil.h"
#include "sdk/agent_int.h"
#include "sdk/agent_leases.h"
#include "sdk/sdk.h"

#include "common/banned.h"

/* ---- helpers shared by the agent's threads ---------------------------------------------- */

void agent_log(struct roost_agent *a, const char *fmt, ...)
{
    if (a->on_log == NULL) {
        return;
    }
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&a->cb_mu);
    a->on_log(line, a->cb_ctx);
    pthread_mutex_unlock(&a->cb_mu);
}

int64_t agent_jitter(struct roost_agent *a, int64_t ms)
{
    a->rng = a->rng * 1103515245u + 12345u;
    int64_t pct = 75 + (int64_t)((a->rng >> 16) % 50);
    return ms * pct / 100;
}

void agent_cond_wait_ms(struct roost_agent *a, int64_t ms)
{
    if (ms <= 0) {
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&a->cond, &a->mu, &ts);
}

void agent_pause_ms(struct roost_agent *a, int64_t ms)
{
    pthread_mutex_lock(&a->mu);
    int64_t until = time_mono_ms() + ms;
    while (!agent_stopping(a) && time_mono_ms() < until) {
        agent_cond_wait_ms(a, until - time_mono_ms());
    }
    pthread_mutex_unlock(&a->mu);
}

int64_t agent_backoff_next(int64_t ms, int64_t max_ms)
{
    return ms * 2 < max_ms ? ms * 2 : max_ms;
}

bool agent_transient_rc(int rc)
{
    return rc == ROOST_ECONNECT || rc == ROOST_EUNAVAILABLE || rc == ROOST_ERETRY ||
           rc == ROOST_ESHUTDOWN || rc == ROOST_ERATELIMIT || rc == ROOST_EINTERNAL ||
           rc == ROOST_ESTORE || rc == ROOST_EPROTO || rc == ROOST_ENOMEM;
}

/* Every 401/403: a refused token or signature (key revoked, unknown, wrong agent), which a
 * retry cannot fix. Each request is signed afresh, so none of them is transient. */
bool agent_auth_rc(int rc)
{
    int status = roost_err_http_status(rc);
    return status == 401 || status == 403;
}

const char *roost_agent_conn_name(enum roost_agent_conn conn)
{
    switch (conn) {
    case ROOST_AGENT_CONN_STARTING:
        return "starting";
    case ROOST_AGENT_CONN_STREAMING:
        return "streaming";
    case ROOST_AGENT_CONN_POLLING:
        return "polling";
    case ROOST_AGENT_CONN_OFFLINE:
        return "offline";
    case ROOST_AGENT_CONN_STOPPED:
        return "stopped";
    }
    return "unknown";
}

/* ---- connection state ------------------------------------------------------------------- */

/* For `roost agent status`. The order of the locks is always mu, then the state file's. */
void agent_persist_meta(struct roost_agent *a)
{
    agent_state_save_meta(&a->st, a->conn, a->cursor, a->last_sync_ms);
    a->last_meta_sync_ms = a->last_sync_ms;
}

void agent_conn_update(struct roost_agent *a)
{
    enum roost_agent_conn c = a->conn;
    if (c == ROOST_AGENT_CONN_STOPPED) {
        return;
    }
    if (a->sse_up) {
        c = ROOST_AGENT_CONN_STREAMING;
    } else if (!a->contacted && a->server_ok) {
        c = ROOST_AGENT_CONN_STARTING;
    } else {
        c = a->server_ok ? ROOST_AGENT_CONN_POLLING : ROOST_AGENT_CONN_OFFLINE;
    }
    if (c != a->conn) {
        a->conn = c;
        agent_persist_meta(a);
    }
}

void agent_conn_notify(struct roost_agent *a)
{
    pthread_mutex_lock(&a->cb_mu);
    pthread_mutex_lock(&a->mu);
    enum roost_agent_conn c = a->conn;
    pthread_mutex_unlock(&a->mu);
    if (c != a->conn_notified) {
        a->conn_notified = c;
        if (a->on_conn != NULL) {
            a->on_conn(c, a->cb_ctx);
        }
        if (a->on_log != NULL) {
            char line[64];
            snprintf(line, sizeof line, "connection %s", roost_agent_conn_name(c));
            a->on_log(line, a->cb_ctx);
        }
    }
    pthread_mutex_unlock(&a->cb_mu);
}

void agent_note_request(struct roost_agent *a, int rc)
{
    if (rc == ROOST_ECONNECT && agent_stopping(a)) {
        return; /* our own abort of a long poll, not the server's fault */
    }
    pthread_mutex_lock(&a->mu);
    bool reached = rc == ROOST_OK ||
                   !(rc == ROOST_ECONNECT || rc == ROOST_EUNAVAILABLE || rc == ROOST_ESHUTDOWN);
    a->server_ok = reached;
    if (reached) {
        a->contacted = true;
    }
    if (rc == ROOST_OK) {
        a->last_sync_ms = time_now_ms();
        if (a->last_sync_ms - a->last_meta_sync_ms >= 1000) {
            agent_persist_meta(a);
        }
    }
    agent_conn_update(a);
    pthread_mutex_unlock(&a->mu);
    agent_conn_notify(a);
}

/* ---- options and lifecycle -------------------------------------------------------------- */

void roost_agent_options_init(struct roost_agent_options *opts)
{
    if (opts != NULL) {
        memset(opts, 0, sizeof *opts);
    }
}

void roost_agent_free(struct roost_agent *a)
{
    if (a == NULL) {
        return;
    }
    agent_state_cleanup(&a->st);
    for (int i = 0; i < 2; i++) {
        if (a->stop_pipe[i] >= 0) {
            close(a->stop_pipe[i]);
        }
    }
    agent_leases_free_queue(a);
    if (a->slots != NULL) {
        for (int i = 0; i < a->concurrency; i++) {
            sdk_event_free(a->slots[i].ev);
        }
        free(a->slots);
    }
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&a->cb_mu);
    pthread_cond_destroy(&a->cond);
    free(a->server_url);
    if (a->token != NULL) {
        OPENSSL_cleanse(a->token, strlen(a->token));
        free(a->token);
    }
    free(a->agent_id);
    free(a->state_dir);
    free(a->consumer);
    free(a->ca_file);
    if (a->signing_key != NULL) {
        OPENSSL_cleanse(a->signing_key, strlen(a->signing_key)); /* may be inline PEM */
        free(a->signing_key);
    }
    free(a->key_id);
    free(a->key_alg);
    free(a);
}

int agent_client_new(const struct roost_agent *a, struct roost_client **out)
{
    struct roost_client *c = NULL;
    int rc = roost_client_new(&c, a->server_url, a->token);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (a->ca_file != NULL) {
        roost_client_set_ca_file(c, a->ca_file);
    }
    roost_client_set_token_callback(c, a->token_cb, a->token_cb_arg);
    roost_client_set_signing_key_callback(c, a->signing_key_cb, a->signing_key_cb_arg);
    if (a->signing_key != NULL &&
        (rc = roost_client_set_signing_key(c, a->signing_key, a->key_id, a->key_alg)) != ROOST_OK) {
        roost_client_free(c);
        return rc;
    }
    *out = c;
    return ROOST_OK;
}

/* The option checks roost_agent_new documents, before anything is allocated. */
static int options_check(const struct roost_agent_options *o)
{
    if (o == NULL || o->server_url == NULL || (o->token == NULL && o->token_cb == NULL) ||
        o->agent_id == NULL || o->state_dir == NULL || o->state_dir[0] == '\0' ||
        (o->handler == NULL) == (o->handler_ex == NULL)) {
        return ROOST_EINVAL;
    }
    if (!ids_valid_name(o->agent_id, strlen(o->agent_id))) {
        return ROOST_EAGENTID;
    }
    if (o->consumer != NULL && !ids_valid_consumer(o->consumer, strlen(o->consumer))) {
        return ROOST_ECONSUMER;
    }
    if (o->concurrency < 0 || o->concurrency > AGENT_MAX_CONCURRENCY || o->lease_s < 0 ||
        o->lease_s > 43200 || o->poll_ceiling_s < 0 || o->poll_ceiling_s > 86400 ||
        o->long_poll_s < 0 || o->long_poll_s > 30 ||
        (o->processed_max != 0 && (o->processed_max < 16 || o->processed_max > 10000000)) ||
        (o->processed_max_age_s != 0 && o->processed_max_age_s < 60) || o->tempfail_max < 0 ||
        o->tempfail_max > 1000 || o->stream_resync_s < 0 || o->stream_resync_s > 86400) {
        return ROOST_EINVAL;
    }
    /* Let the client validate the URL and token the same way every call does. */
    struct roost_client *probe = NULL;
    int rc = roost_client_new(&probe, o->server_url, o->token);
    roost_client_free(probe);
    if (rc != ROOST_OK) {
        return rc;
    }
    /* A bad signing key fails now, not in the loop (each thread's client loads its own). */
    if (o->signing_key_file != NULL) {
        struct sdk_signer *signer = NULL;
        char err[256];
        rc = sdk_signer_new(o->signing_key_file, o->key_id, o->key_alg, &signer, err, sizeof err);
        sdk_signer_free(signer);
    }
    return rc;
}

/* "<hostname>-<pid>" with the host name reduced to consumer-id characters. */
static void default_consumer(char *buf, size_t len)
{
    char host[64];
    if (gethostname(host, sizeof host) != 0) {
        snprintf(host, sizeof host, "host");
    }
    host[sizeof host - 1] = '\0';
    for (char *p = host; *p != '\0'; p++) {
        if (!ids_valid_consumer(p, 1)) {
            *p = '_';
        }
    }
    snprintf(buf, len, "%.100s-%ld", host, (long)getpid());
}

int roost_agent_new(struct roost_agent **out, const struct roost_agent_options *o)
{
    if (out == NULL) {
        return ROOST_EINVAL;
    }
    *out = NULL;
    int rc = options_check(o);
    if (rc != ROOST_OK) {
        return rc;
    }
    struct roost_agent *a = calloc(1, sizeof *a);
    if (a == NULL) {
        return ROOST_ENOMEM;
    }
    a->stop_pipe[0] = a->stop_pipe[1] = -1;
    agent_state_init(&a->st, o->processed_max != 0 ? o->processed_max : 100000,
                     o->processed_max_age_s != 0 ? o->processed_max_age_s : 7 * 86400);
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->cb_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cond, &ca);
    pthread_condattr_destroy(&ca);
    a->concurrency = o->concurrency != 0 ? o->concurrency : 1;
    a->lease_s = o->lease_s != 0 ? o->lease_s : 60;
    a->poll_ceiling_s = o->poll_ceiling_s != 0 ? o->poll_ceiling_s : 300;
    a->long_poll_s = o->long_poll_s != 0 ? o->long_poll_s : 25;
    a->stream_resync_ms = (int64_t)(o->stream_resync_s != 0 ? o->stream_resync_s : 60) * 1000;
    a->handler = o->handler;
    a->handler_ex = o->handler_ex;
    a->tempfail_max = o->tempfail_max != 0 ? o->tempfail_max : 10;
    a->handler_ctx = o->handler_ctx;
    a->on_state = o->on_state;
    a->on_conn = o->on_conn;
    a->on_log = o->on_log;
    a->cb_ctx = o->cb_ctx;
    a->sse_head = -1;
    a->conn = a->conn_notified = ROOST_AGENT_CONN_STARTING;
    a->rng = (unsigned)getpid() ^ (unsigned)time_now_ms();
    char consumer[160];
    if (o->consumer == NULL) {
        default_consumer(consumer, sizeof consumer);
    }
    a->server_url = sdk_strdup(o->server_url);
    a->token = o->token != NULL ? sdk_strdup(o->token) : NULL;
    a->token_cb = o->token_cb;
    a->token_cb_arg = o->token_cb_arg;
    a->signing_key_cb = o->signing_key_cb;
    a->signing_key_cb_arg = o->signing_key_cb_arg;
    a->agent_id = sdk_strdup(o->agent_id);
    a->state_dir = sdk_strdup(o->state_dir);
    a->consumer = sdk_strdup(o->consumer != NULL ? o->consumer : consumer);
    a->ca_file = o->ca_file != NULL ? sdk_strdup(o->ca_file) : NULL;
    if (o->signing_key_file != NULL) {
        a->signing_key = sdk_strdup(o->signing_key_file);
        a->key_id = sdk_strdup(o->key_id);
        a->key_alg = o->key_alg != NULL ? sdk_strdup(o->key_alg) : NULL;
        if (a->signing_key == NULL || a->key_id == NULL ||
            (o->key_alg != NULL && a->key_alg == NULL)) {
            rc = ROOST_ENOMEM;
            goto fail;
        }
    }
    a->slots = calloc((size_t)a->concurrency, sizeof *a->slots);
    if (a->server_url == NULL || (o->token != NULL && a->token == NULL) || a->agent_id == NULL ||
        a->state_dir == NULL || a->consumer == NULL || a->slots == NULL ||
        (o->ca_file != NULL && a->ca_file == NULL)) {
        rc = ROOST_ENOMEM;
        goto fail;
    }
    if (pipe(a->stop_pipe) != 0) {
        a->stop_pipe[0] = a->stop_pipe[1] = -1;
        rc = ROOST_EINTERNAL;
        goto fail;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(a->stop_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    fcntl(a->stop_pipe[1], F_SETFL, O_NONBLOCK | fcntl(a->stop_pipe[1], F_GETFL));
    if ((rc = agent_state_open(&a->st, a->state_dir, a->agent_id)) != ROOST_OK) {
        goto fail;
    }
    agent_state_load(&a->st, &a->cursor, &a->last_sync_ms, &a->outstanding);
    a->last_meta_sync_ms = a->last_sync_ms;
    *out = a;
    return ROOST_OK;
fail:
    roost_agent_free(a);
    return rc;
}

void roost_agent_stop(struct roost_agent *a)
{
    if (a == NULL) {
        return;
    }
    int saved = errno; /* a signal handler must not change errno */
    atomic_store(&a->stop, 1);
    if (a->stop_pipe[1] >= 0) {
        ssize_t w = write(a->stop_pipe[1], "x", 1);
        (void)w; /* a full pipe already wakes the watcher */
    }
    errno = saved;
}

int roost_agent_status(struct roost_agent *a, struct roost_agent_status *out)
{
    if (a == NULL || out == NULL) {
        return ROOST_EINVAL;
    }
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&a->mu);
    out->conn = a->conn;
    out->cursor = a->cursor;
    out->last_sync_ms = a->last_sync_ms;
    out->handled = a->handled;
    out->acked = a->acked;
    out->released = a->released;
    out->quarantined = a->quarantined;
    out->outstanding_leases = a->outstanding;
    out->running = a->run_called && a->conn != ROOST_AGENT_CONN_STOPPED;
    pthread_mutex_unlock(&a->mu);
    out->processed_ids = agent_state_processed_count(&a->st);
    out->pid = (int64_t)getpid();
    snprintf(out->agent_id, sizeof out->agent_id, "%s", a->agent_id);
    snprintf(out->consumer, sizeof out->consumer, "%s", a->consumer);
    return ROOST_OK;
}
