/* SPDX-License-Identifier: MIT */
/* Webhook endpoints over HTTP (DESIGN §6.3). The agent's own routes (consume scope):
 * POST/GET /agents/{agent}/callbacks and DELETE /agents/{agent}/callbacks/{id}; the operator's
 * (tenant:admin): /admin/endpoints list, inspect, disable, enable, attempts and replay.
 * Registration checks the URL (https, every resolved address through the destination filter) and
 * runs the verification challenge on a thread of its own, never on the loop; the endpoint is
 * stored only when both pass. */
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ids.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "server/api.h"
#include "server/api_json.h"
#include "server/config.h"
#include "server/ratelimit.h"
#include "server/request.h"
#include "server/runtime.h"
#include "server/webhooks.h"
#include "server/workers.h"
#include "store/store_webhooks.h"

#include "common/banned.h"

#define LIST_MAX_LIMIT 100
/* Verifications running at once (each a thread waiting on an endpoint for up to
 * webhooks.verify_timeout_ms); more get 503. One tenant has webhooks.max_verifications_per_tenant
 * of them at most (at most 32: never all); more get 429. */
#define VERIFY_MAX 32
/* Quarantined events a replay by time walks per request. */
#define REPLAY_MAX 1000

struct hook_op {
    struct job job;
    struct request *rq;
    struct store_endpoint ep;
    struct store_endpoint *list;
    struct store_attempt *attempts;
    size_t n;
    bool has_more;
    int64_t limit;
    char after[STORE_ATTEMPT_ID_LEN + 1];
    char event_id[STORE_EVENT_ID_LEN + 1]; /* attempts: one event; replay: that event */
    char agent_id[STORE_ID_MAX + 1];       /* endpoint listing: one agent's */
    int64_t since_ms;                      /* replay: quarantined events created since */
    bool enable;
    size_t replayed;
    struct store_touches touches;
    /* registration */
    struct event *verified; /* fires on the loop when the verification thread is done */
    int verify_rc;
    char why[256];
};

static atomic_int verifying;      /* requests between the thread's start and on_verified */
static atomic_int verify_threads; /* verification threads not yet returned */

/* The tenants with verifications in progress and how many (loop thread only). */
static struct {
    char tenant_id[STORE_ID_MAX + 1];
    int n;
} verify_tenants[VERIFY_MAX];
static size_t n_verify_tenants;

/* Counts one verification of the tenant more (+1) or less (-1); returns how many it has now.
 * Loop thread. */
static int verify_tenant_add(const char *tenant_id, int delta)
{
    size_t i = 0;
    while (i < n_verify_tenants && strcmp(verify_tenants[i].tenant_id, tenant_id) != 0) {
        i++;
    }
    if (i == n_verify_tenants) {
        if (delta <= 0 || n_verify_tenants == VERIFY_MAX) {
            return 0;
        }
        snprintf(verify_tenants[i].tenant_id, sizeof verify_tenants[i].tenant_id, "%s", tenant_id);
        verify_tenants[i].n = 0;
        n_verify_tenants++;
    }
    int n = verify_tenants[i].n += delta;
    if (n <= 0) {
        verify_tenants[i] = verify_tenants[--n_verify_tenants];
    }
    return n;
}

static void hook_op_free(void *p)
{
    struct hook_op *op = p;
    free(op->list);
    free(op->attempts);
    store_touches_cleanup(&op->touches);
    if (op->verified != NULL) {
        event_free(op->verified);
    }
    OPENSSL_cleanse(op->ep.secret, sizeof op->ep.secret);
    free(op);
}

static struct hook_op *hook_op_new(struct request *rq)
{
    struct hook_op *op = request_op_new(rq, sizeof *op, hook_op_free);
    if (op == NULL) {
        return NULL;
    }
    op->rq = rq;
    return op;
}

static void submit(struct hook_op *op, int (*run)(struct job *, struct store *),
                   void (*done)(struct job *), bool write)
{
    /* Reads of the tenant's endpoints and attempt log are listings: the scan readers run them
     * (workers.h), in the tenant's turn. */
    op->job = (struct job){.run = run,
                           .done = done,
                           .write = write,
                           .name = request_job_kind(op->rq),
                           .tenant = workers_tenant_key(op->rq->principal.tenant_id),
                           .scan = !write};
    workers_submit(runtime_workers(op->rq->rt, op->rq->principal.tenant_id), &op->job);
}

/* The endpoints of the tenant's store changed: its dispatcher reads them again now rather than at
 * its next sweep. */
static void endpoints_changed(struct hook_op *op)
{
    webhooks_reload(runtime_shard(op->rq->rt, op->rq->principal.tenant_id)->webhooks);
}

static json_t *endpoint_json(const struct store_endpoint *e)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "endpoint_id", e->endpoint_id,
                          "agent_id", e->agent_id, "url", e->url, "status",
                          e->status == STORE_ENDPOINT_ACTIVE ? "active" : "disabled", "created_at",
                          time_json(e->created_at_ms), "updated_at", time_json(e->updated_at_ms),
                          "failing_since", time_json(e->failing_since_ms));
    if (o != NULL && e->disabled_reason[0] != '\0') {
        json_object_set_new(o, "disabled_reason", json_string(e->disabled_reason));
    }
    return o;
}

static json_t *attempt_json(const struct store_attempt *a)
{
    return json_pack("{s:s, s:s, s:s, s:o, s:i, s:i, s:I, s:s, s:s}", "attempt_id", a->attempt_id,
                     "event_id", a->event_id, "agent_id", a->agent_id, "at", time_json(a->at_ms),
                     "attempt", a->attempt, "status_code", a->status_code, "latency_ms",
                     (json_int_t)a->latency_ms, "error_class", a->error_class, "response_head",
                     a->response_head);
}

/* ---- POST /agents/{agent}/callbacks ---- */

static int run_add(struct job *job, struct store *st)
{
    struct hook_op *op = (struct hook_op *)job;
    int64_t now = time_now_ms();
    op->ep.created_at_ms = op->ep.updated_at_ms = now;
    return store_endpoint_add(st, &op->ep, now);
}

static void done_add(struct job *job)
{
    struct hook_op *op = (struct hook_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    endpoints_changed(op);
    log_info("webhook endpoint registered", "req_id=%s tenant=%s agent=%s endpoint=%s", op->rq->id,
             op->ep.tenant_id, op->ep.agent_id, op->ep.endpoint_id);
    request_reply_json(op->rq, 201, endpoint_json(&op->ep));
}

/* Loop thread: the verification thread finished. */
static void on_verified(evutil_socket_t fd, short what, void *arg)
{
    struct hook_op *op = arg;
    (void)fd;
    (void)what;
    atomic_fetch_sub(&verifying, 1);
    verify_tenant_add(op->ep.tenant_id, -1);
    if (op->verify_rc != ROOST_OK) {
        log_info("webhook endpoint refused", "req_id=%s tenant=%s agent=%s code=%s why=\"%s\"",
                 op->rq->id, op->ep.tenant_id, op->ep.agent_id, roost_err_code(op->verify_rc),
                 op->why);
        /* The tenant gets a generic detail: the address a name resolved to, or a closed port
         * told from a TLS failure from an HTTP status, would make registration a free DNS and
         * port scanner of roostd's network. The operator finds why in the log, by request id. */
        char detail[256];
        snprintf(detail, sizeof detail, "%s (the server's log says why: request %s)",
                 op->verify_rc == ROOST_EDESTFORBIDDEN
                     ? "the host resolves to an address this server may not connect to; an "
                       "operator allows ranges with webhooks.allow_cidrs"
                     : "the endpoint did not answer the challenge as required",
                 op->rq->id);
        request_reply_error(op->rq, op->verify_rc, NULL, json_pack("{s:s}", "detail", detail));
        return;
    }
    submit(op, run_add, done_add, true);
}

/* Its own thread: resolution and the challenge may each take seconds. Reads only op->ep and the
 * runtime's immutable webhook settings; the loop does not touch op until `verified` fires. */
static void *verify_thread(void *arg)
{
    struct hook_op *op = arg;
    const struct runtime *rt = op->rq->rt;
    op->verify_rc = webhooks_url_check(rt->hook_net, op->ep.url, op->why, sizeof op->why);
    if (op->verify_rc == ROOST_OK) {
        op->verify_rc = webhooks_verify_endpoint(
            rt->hook_net, rt->hook_signer, op->ep.url, op->ep.secret,
            (long)rt->cfg->webhooks_verify_timeout_ms, op->why, sizeof op->why);
    }
    event_active(op->verified, 0, 0);
    atomic_fetch_sub(&verify_threads, 1);
    return NULL;
}

void api_webhooks_drain(void)
{
    /* A verification ends within webhooks.verify_timeout_ms (plus resolving): wait that long at
     * most, so no thread touches the event base after it is freed. */
    for (int i = 0; i < 6000 && atomic_load(&verify_threads) > 0; i++) {
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
}

void api_callbacks_add(struct request *rq)
{
    const char *bad = NULL, *url = NULL, *secret = NULL;
    if (body_param_only(rq, rq->body, "", &bad) != ROOST_OK) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, NULL, json_pack("{s:s}", "field", bad));
        return;
    }
    if (body_param_str(rq, rq->body, "url", ROOST_EWEBHOOKURL, &url) != ROOST_OK || url == NULL) {
        request_reply_error(rq, ROOST_EWEBHOOKURL, NULL, NULL);
        return;
    }
    unsigned char key[WEBHOOKS_SECRET_MAX_BYTES];
    size_t key_len = 0;
    if (body_param_str(rq, rq->body, "secret", ROOST_EWEBHOOKSECRET, &secret) != ROOST_OK ||
        webhooks_secret_key(secret, key, &key_len) != ROOST_OK) {
        request_reply_error(rq, ROOST_EWEBHOOKSECRET, NULL, NULL);
        return;
    }
    OPENSSL_cleanse(key, sizeof key);
    /* One tenant's registrations (each a thread and a challenge to an address it chose) can
     * neither fill the node's verifications nor come faster than its rate. */
    const struct config *cfg = rq->rt->cfg;
    int per_tenant = (int)cfg->webhooks_max_verifications_per_tenant;
    double per_s = (double)cfg->webhooks_registrations_per_min / 60.0;
    bool busy = verify_tenant_add(rq->principal.tenant_id, 0) >= per_tenant;
    int64_t wait_s =
        busy ? (cfg->webhooks_verify_timeout_ms + 999) / 1000
             : ratelimit_take(rq->rt->register_rl, rq->principal.tenant_id, per_s,
                              (double)cfg->webhooks_registrations_per_min, 1, time_mono_ms());
    if (busy) {
        request_explain(ROOST_ERATELIMIT, NULL,
                        "this tenant has webhooks.max_verifications_per_tenant (%d) endpoint "
                        "verifications in progress",
                        per_tenant);
    } else if (wait_s > 0) {
        request_explain(
            ROOST_ERATELIMIT, NULL,
            "this tenant registers endpoints faster than webhooks.registrations_per_min");
    }
    if (wait_s > 0) {
        request_set_retry_after(rq, wait_s);
        request_reply_error(rq, ROOST_ERATELIMIT, NULL, NULL);
        return;
    }
    if (atomic_load(&verifying) >= VERIFY_MAX) {
        request_reply_error(rq, ROOST_EUNAVAILABLE, "too many endpoint verifications in progress",
                            NULL);
        return;
    }
    struct hook_op *op = hook_op_new(rq);
    if (op == NULL) {
        return;
    }
    snprintf(op->ep.tenant_id, sizeof op->ep.tenant_id, "%s", rq->principal.tenant_id);
    snprintf(op->ep.agent_id, sizeof op->ep.agent_id, "%s", rq->agent_id);
    snprintf(op->ep.url, sizeof op->ep.url, "%s", url);
    snprintf(op->ep.secret, sizeof op->ep.secret, "%s", secret);
    pthread_t t;
    pthread_attr_t attr;
    bool started = false;
    if (store_endpoint_new_id(time_now_ms(), op->ep.endpoint_id) == ROOST_OK &&
        (op->verified = event_new(rq->rt->base, -1, 0, on_verified, op)) != NULL &&
        pthread_attr_init(&attr) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        atomic_fetch_add(&verifying, 1);
        atomic_fetch_add(&verify_threads, 1);
        verify_tenant_add(op->ep.tenant_id, 1);
        started = pthread_create(&t, &attr, verify_thread, op) == 0;
        if (!started) {
            atomic_fetch_sub(&verifying, 1);
            atomic_fetch_sub(&verify_threads, 1);
            verify_tenant_add(op->ep.tenant_id, -1);
        }
        pthread_attr_destroy(&attr);
    }
    if (!started) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
    }
}

/* ---- GET /agents/{agent}/callbacks and GET /admin/endpoints ---- */

/* One page of a listing: {"<key>": items, "next": the last id when more follow, else null}. */
static void reply_page(struct hook_op *op, const char *key, json_t *items, const char *last_id)
{
    json_t *next = page_token_json(op->has_more ? last_id : NULL);
    request_reply_json(op->rq, 200, json_pack("{s:o, s:o}", key, items, "next", next));
}

static int run_list(struct job *job, struct store *st)
{
    struct hook_op *op = (struct hook_op *)job;
    const struct request *rq = op->rq;
    return store_endpoint_list(st, rq->principal.tenant_id, op->agent_id[0] ? op->agent_id : NULL,
                               op->after, (size_t)op->limit, op->list, &op->n, &op->has_more);
}

static void done_list(struct job *job)
{
    struct hook_op *op = (struct hook_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < op->n; i++) {
        json_array_append_new(arr, endpoint_json(&op->list[i]));
    }
    reply_page(op, "endpoints", arr, op->n > 0 ? op->list[op->n - 1].endpoint_id : NULL);
}

/* A listing's op: its limit, its cursor and a zeroed page of `limit` items of `size` bytes in
 * *page; NULL (answered) when out of memory. */
static struct hook_op *page_op_new(struct request *rq, int64_t limit, const char *after,
                                   size_t size, void **page)
{
    struct hook_op *op = hook_op_new(rq);
    if (op == NULL) {
        return NULL;
    }
    op->limit = limit;
    snprintf(op->after, sizeof op->after, "%s", after != NULL ? after : "");
    if ((*page = calloc((size_t)limit, size)) == NULL) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return NULL;
    }
    return op;
}

/* Lists the tenant's endpoints, of agent_id only when it is not NULL. */
static void list_endpoints(struct request *rq, const char *agent_id)
{
    int64_t limit;
    int rc = request_param_int(rq, "limit", LIST_MAX_LIMIT, ROOST_ELIMIT, &limit);
    const char *after = rc == ROOST_OK ? request_param_str(rq, "next", &rc) : NULL;
    if (rc == ROOST_OK && agent_id == NULL) {
        agent_id = request_param_str(rq, "agent_id", &rc);
    }
    char pos[STORE_ENDPOINT_ID_LEN + 1]; /* the page token's position: an endpoint id */
    if (rc == ROOST_OK && after != NULL && page_token_parse(after, pos, sizeof pos) != ROOST_OK) {
        rc = ROOST_EPAGE;
    }
    if (rc != ROOST_OK || (agent_id != NULL && strlen(agent_id) > STORE_ID_MAX)) {
        request_reply_error(rq, rc != ROOST_OK ? rc : ROOST_EPAGE, NULL, NULL);
        return;
    }
    struct store_endpoint *page = NULL;
    struct hook_op *op =
        page_op_new(rq, limit, after != NULL ? pos : NULL, sizeof *page, (void **)&page);
    if (op == NULL) {
        return;
    }
    op->list = page;
    snprintf(op->agent_id, sizeof op->agent_id, "%s", agent_id != NULL ? agent_id : "");
    submit(op, run_list, done_list, false);
}

void api_callbacks_list(struct request *rq)
{
    list_endpoints(rq, rq->agent_id);
}

void api_admin_endpoints_list(struct request *rq)
{
    list_endpoints(rq, NULL);
}

/* ---- DELETE /agents/{agent}/callbacks/{id} ---- */

static int run_delete(struct job *job, struct store *st)
{
    struct hook_op *op = (struct hook_op *)job;
    return store_endpoint_delete(st, op->rq->principal.tenant_id, op->rq->agent_id, op->rq->key_id);
}

static void done_delete(struct job *job)
{
    struct hook_op *op = (struct hook_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    endpoints_changed(op);
    request_reply_json(op->rq, 200,
                       json_pack("{s:s, s:b}", "endpoint_id", op->rq->key_id, "deleted", 1));
}

void api_callbacks_delete(struct request *rq)
{
    struct hook_op *op = hook_op_new(rq);
    if (op != NULL) {
        submit(op, run_delete, done_delete, true);
    }
}

/* ---- GET /admin/endpoints/{id}, POST …/disable, …/enable ---- */

static int run_get(struct job *job, struct store *st)
{
    struct hook_op *op = (struct hook_op *)job;
    return store_endpoint_get(st, op->rq->principal.tenant_id, op->rq->key_id, &op->ep);
}

static void done_get(struct job *job)
{
    struct hook_op *op = (struct hook_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    request_reply_json(op->rq, 200, endpoint_json(&op->ep));
}

void api_admin_endpoint_get(struct request *rq)
{
    struct hook_op *op = hook_op_new(rq);
    if (op != NULL) {
        submit(op, run_get, done_get, false);
    }
}

static int run_status(struct job *job, struct store *st)
{
    struct hook_op *op = (struct hook_op *)job;
    const char *tenant = op->rq->principal.tenant_id;
    int rc = store_endpoint_set_status(st, tenant, op->rq->key_id,
                                       op->enable ? STORE_ENDPOINT_ACTIVE : STORE_ENDPOINT_DISABLED,
                                       "operator", time_now_ms());
    return rc == ROOST_OK ? store_endpoint_get(st, tenant, op->rq->key_id, &op->ep) : rc;
}

static void done_status(struct job *job)
{
    if (job->rc == ROOST_OK) {
        endpoints_changed((struct hook_op *)job);
    }
    done_get(job);
}

static void set_status(struct request *rq, bool enable)
{
    if (json_object_size(rq->body) != 0) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, "this route takes no body", NULL);
        return;
    }
    struct hook_op *op = hook_op_new(rq);
    if (op != NULL) {
        op->enable = enable;
        submit(op, run_status, done_status, true);
    }
}

void api_admin_endpoint_disable(struct request *rq)
{
    set_status(rq, false);
}

void api_admin_endpoint_enable(struct request *rq)
{
    set_status(rq, true);
}

/* ---- GET /admin/endpoints/{id}/attempts ---- */

static int run_attempts(struct job *job, struct store *st)
{
    struct hook_op *op = (struct hook_op *)job;
    const char *tenant = op->rq->principal.tenant_id;
    int rc = store_endpoint_get(st, tenant, op->rq->key_id, &op->ep);
    return rc != ROOST_OK
               ? rc
               : store_attempt_list(st, tenant, op->rq->key_id,
                                    op->event_id[0] ? op->event_id : NULL, op->after,
                                    (size_t)op->limit, op->attempts, &op->n, &op->has_more);
}

static void done_attempts(struct job *job)
{
    struct hook_op *op = (struct hook_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < op->n; i++) {
        json_array_append_new(arr, attempt_json(&op->attempts[i]));
    }
    reply_page(op, "attempts", arr, op->n > 0 ? op->attempts[op->n - 1].attempt_id : NULL);
}

void api_admin_endpoint_attempts(struct request *rq)
{
    int64_t limit;
    int rc = request_param_int(rq, "limit", LIST_MAX_LIMIT, ROOST_ELIMIT, &limit);
    const char *after = rc == ROOST_OK ? request_param_str(rq, "next", &rc) : NULL;
    const char *event_id = rc == ROOST_OK ? request_param_str(rq, "event_id", &rc) : NULL;
    const char *after_id = rc == ROOST_OK ? request_param_str(rq, "after", &rc) : NULL;
    char pos[STORE_ATTEMPT_ID_LEN + 1]; /* the page token's position: an attempt id */
    if (rc == ROOST_OK && after != NULL && after_id != NULL) {
        request_reply_error(rq, ROOST_EQUERY, "give next or after, not both", NULL);
        return;
    }
    if (rc == ROOST_OK && after != NULL && page_token_parse(after, pos, sizeof pos) != ROOST_OK) {
        rc = ROOST_EPAGE;
    }
    if (rc == ROOST_OK && after_id != NULL) {
        snprintf(pos, sizeof pos, "%s", after_id); /* at most its declared length */
        after = after_id;
    }
    if (rc != ROOST_OK) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    if (event_id != NULL && !ids_valid_event_id(event_id, strlen(event_id))) {
        request_reply_error(rq, ROOST_EEVENTID, NULL, NULL);
        return;
    }
    struct store_attempt *page = NULL;
    struct hook_op *op =
        page_op_new(rq, limit, after != NULL ? pos : NULL, sizeof *page, (void **)&page);
    if (op == NULL) {
        return;
    }
    op->attempts = page;
    snprintf(op->event_id, sizeof op->event_id, "%s", event_id != NULL ? event_id : "");
    submit(op, run_attempts, done_attempts, false);
}

/* ---- POST /admin/endpoints/{id}/replay ---- */

/* Delivered events are completed and keep no payload, so a replay redelivers what the endpoint
 * failed to take: quarantined (or expired) events of its agent go back to pending, and the
 * dispatcher delivers them again. One event, or every one created since a time. */
static int run_replay(struct job *job, struct store *st)
{
    struct hook_op *op = (struct hook_op *)job;
    const char *tenant = op->rq->principal.tenant_id;
    int64_t now = time_now_ms();
    store_touches_cleanup(&op->touches);
    op->replayed = 0;
    int rc = store_endpoint_get(st, tenant, op->rq->key_id, &op->ep);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (op->event_id[0] != '\0') {
        struct store_event ev = {0};
        rc = store_call(st, event_get, tenant, op->event_id, &ev);
        if (rc == ROOST_OK && strcmp(ev.agent_id, op->ep.agent_id) != 0) {
            rc = ROOST_EEVENTNOTFOUND; /* another agent's event is not this endpoint's */
        }
        store_event_cleanup(&ev);
        if (rc == ROOST_OK) {
            rc = store_call(st, requeue, tenant, op->event_id, now, &op->touches);
        }
        op->replayed = rc == ROOST_OK ? 1 : 0;
        return rc;
    }
    struct store_events q = {0};
    bool more = false;
    rc = store_call(st, quarantine_list, tenant, op->ep.agent_id, "", 0, REPLAY_MAX, &q, &more);
    for (size_t i = 0; rc == ROOST_OK && i < q.len; i++) {
        if (q.items[i].created_at_ms < op->since_ms) {
            continue;
        }
        rc = store_call(st, requeue, tenant, q.items[i].event_id, now, &op->touches);
        op->replayed += rc == ROOST_OK;
    }
    store_events_cleanup(&q);
    return rc;
}

static void done_replay(struct job *job)
{
    struct hook_op *op = (struct hook_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    runtime_notify(op->rq->rt, &op->touches);
    request_reply_json(op->rq, 200,
                       json_pack("{s:s, s:I}", "endpoint_id", op->ep.endpoint_id, "replayed",
                                 (json_int_t)op->replayed));
}

void api_admin_endpoint_replay(struct request *rq)
{
    const char *bad = NULL, *event_id = NULL, *since = NULL;
    if (body_param_only(rq, rq->body, "", &bad) != ROOST_OK) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, NULL, json_pack("{s:s}", "field", bad));
        return;
    }
    int64_t since_ms = 0;
    if (body_param_str(rq, rq->body, "event_id", ROOST_EEVENTID, &event_id) != ROOST_OK ||
        (event_id != NULL && !ids_valid_event_id(event_id, strlen(event_id)))) {
        request_reply_error(rq, ROOST_EEVENTID, NULL, NULL);
        return;
    }
    if (body_param_str(rq, rq->body, "since", ROOST_EINVAL, &since) != ROOST_OK ||
        (since != NULL && time_parse_rfc3339(since, strlen(since), &since_ms) != 0) ||
        (since == NULL) == (event_id == NULL)) {
        request_reply_error(rq, ROOST_EINVAL,
                            "replay takes either event_id or since (an RFC 3339 time)", NULL);
        return;
    }
    struct hook_op *op = hook_op_new(rq);
    if (op == NULL) {
        return;
    }
    snprintf(op->event_id, sizeof op->event_id, "%s", event_id != NULL ? event_id : "");
    op->since_ms = since_ms;
    submit(op, run_replay, done_replay, true);
}
