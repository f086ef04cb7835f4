/* SPDX-License-Identifier: MIT */
/* Inbound webhooks (DESIGN §6.5). The operator's routes (tenant:admin): /admin/sources add,
 * list, show, delete, rotate and receipts. The sender's: POST /ingest/{source_id}, no Roost
 * token: rate limit, find the source (in whichever store holds it), verify on the loop thread
 * (ingest_verify.c), route, then one write job that publishes through the store's publish (the
 * sender's delivery id, scoped to the source, is the idempotency key) and records the receipt in
 * the same transaction; the answer and the pings follow COMMIT. A refusal writes a receipt and
 * nothing else, and tells the sender only that it was refused. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base64.h"
#include "common/hash.h"
#include "common/ids.h"
#include "common/jsonutil.h"
#include "common/timeutil.h"
#include "server/api.h"
#include "server/api_json.h"
#include "server/config.h"
#include "server/ingest_jwks.h"
#include "server/ingest_verify.h"
#include "server/metrics.h"
#include "server/ratelimit.h"
#include "server/request.h"
#include "server/runtime.h"
#include "server/workers.h"
#include "store/store_sources.h"

#include "common/banned.h"

#define LIST_MAX_LIMIT 100
#define MAX_AGENTS 100               /* a source's fixed recipients */
#define MAX_OVERLAP_S (30LL * 86400) /* a rotation's overlap */
#define DEFAULT_OVERLAP_S 86400
#define HEADER_VALUE_MAX 256 /* an allow-listed header kept in the event */

/* ---- the source as the operator sees it ---- */

static json_t *source_json(const struct runtime *rt, const struct store_source *s, int64_t now_ms)
{
    json_t *cfg = s->config != NULL ? json_loads(s->config, 0, NULL) : NULL;
    char url[sizeof rt->base_url + 64];
    snprintf(url, sizeof url, "%s/ingest/%s", rt->base_url, s->source_id);
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "source_id", s->source_id, "name", s->name,
                  "scheme", s->scheme, "ingest_url", url, "options", json_object(), "created_at",
                  time_json(s->created_at_ms), "updated_at", time_json(s->updated_at_ms));
    if (o == NULL) {
        json_decref(cfg);
        return NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(cfg, key, v)
    {
        json_object_set(o, key, v); /* options, agents | agent_pointer + agent_selector */
    }
    json_decref(cfg);
    bool overlap = s->old_secret[0] != '\0' && s->old_until_ms > now_ms;
    json_object_set_new(o, "previous_secret_valid_until",
                        overlap ? time_json(s->old_until_ms) : json_null());
    return o;
}

static json_t *receipt_json(const struct store_receipt *r)
{
    return json_pack("{s:s, s:o, s:s, s:s, s:s?, s:I, s:s, s:i}", "receipt_id", r->receipt_id, "at",
                     time_json(r->at_ms), "outcome", r->outcome, "reason", r->reason, "delivery_id",
                     r->delivery_id[0] != '\0' ? r->delivery_id : NULL, "size", (json_int_t)r->size,
                     "peer", r->peer, "events", r->events);
}

/* ---- admin ops ---- */

struct src_op {
    struct job job;
    struct request *rq;
    struct store_source src;
    struct store_source *list;
    struct store_receipt *receipts;
    size_t n;
    bool has_more;
    int64_t limit;
    char after[STORE_RECEIPT_ID_LEN + 1];
    char secret[STORE_SOURCE_SECRET_MAX + 1]; /* rotate: the new one ("" = make one) */
    int64_t overlap_s;
    int64_t now_ms;
};

static void src_op_free(void *p)
{
    struct src_op *op = p;
    store_source_cleanup(&op->src);
    for (size_t i = 0; op->list != NULL && i < op->n; i++) {
        store_source_cleanup(&op->list[i]);
    }
    free(op->list);
    free(op->receipts);
    OPENSSL_cleanse(op->secret, sizeof op->secret);
    free(op);
}

static struct src_op *src_op_new(struct request *rq)
{
    struct src_op *op = request_op_new(rq, sizeof *op, src_op_free);
    if (op != NULL) {
        op->rq = rq;
        op->now_ms = time_now_ms();
    }
    return op;
}

static void src_submit(struct src_op *op, int (*run)(struct job *, struct store *),
                       void (*done)(struct job *), bool write)
{
    op->job = (struct job){.run = run,
                           .done = done,
                           .write = write,
                           .name = request_job_kind(op->rq),
                           .tenant = workers_tenant_key(op->rq->principal.tenant_id),
                           .scan = !write};
    workers_submit(runtime_workers(op->rq->rt, op->rq->principal.tenant_id), &op->job);
}

static void reply_source(struct src_op *op, int status, bool with_secret)
{
    json_t *o = source_json(op->rq->rt, &op->src, op->now_ms);
    if (o != NULL && with_secret) {
        json_object_set_new(o, "secret", json_string(op->src.secret));
    }
    request_reply_json(op->rq, status, o);
}

/* ---- POST /admin/sources ---- */

static int run_add(struct job *job, struct store *st)
{
    struct src_op *op = (struct src_op *)job;
    return store_call(st, source_add, &op->src, op->now_ms);
}

static void done_add(struct job *job)
{
    struct src_op *op = (struct src_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    op->src.created_at_ms = op->src.updated_at_ms = op->now_ms;
    reply_source(op, 201, true); /* the only time the secret is shown (and at rotation) */
}

/* A selector as in token scopes: an agent id, or a prefix ending in '*'. */
static bool selector_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 1 && s[0] == '*') {
        return true;
    }
    return n > 0 && (s[n - 1] == '*' ? ids_valid_name(s, n - 1) : ids_valid_name(s, n));
}

static bool selector_allows(const char *sel, const char *agent)
{
    size_t n = strlen(sel);
    return n > 0 && sel[n - 1] == '*' ? strncmp(sel, agent, n - 1) == 0 : strcmp(sel, agent) == 0;
}

static int bad_source(struct request *rq, const char *why)
{
    request_reply_error(rq, ROOST_ESOURCECONFIG, why, NULL);
    return ROOST_ESOURCECONFIG;
}

void api_admin_sources_add(struct request *rq)
{
    const char *bad = NULL, *name = NULL, *scheme = NULL, *secret = NULL, *pointer = NULL,
               *selector = NULL;
    if (body_param_only(rq, rq->body, "", &bad) != ROOST_OK) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, NULL, json_pack("{s:s}", "field", bad));
        return;
    }
    int rc;
    if ((rc = body_param_str(rq, rq->body, "name", ROOST_ESOURCECONFIG, &name)) ||
        (rc = body_param_str(rq, rq->body, "scheme", ROOST_ESOURCECONFIG, &scheme)) ||
        (rc = body_param_str(rq, rq->body, "secret", ROOST_ESOURCECONFIG, &secret)) ||
        (rc = body_param_str(rq, rq->body, "agent_pointer", ROOST_ESOURCECONFIG, &pointer)) ||
        (rc = body_param_str(rq, rq->body, "agent_selector", ROOST_ESOURCECONFIG, &selector))) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    json_t *options = json_object_get(rq->body, "options");
    json_t *agents = json_object_get(rq->body, "agents");
    if (options != NULL && !json_is_object(options)) {
        bad_source(rq, "options must be an object");
        return;
    }
    if ((agents != NULL) == (pointer != NULL)) {
        bad_source(rq, "give agents (a list) or agent_pointer with agent_selector, not both");
        return;
    }
    if (agents != NULL) {
        size_t n = json_is_array(agents) ? json_array_size(agents) : 0;
        bool ok = n > 0 && n <= MAX_AGENTS && selector == NULL;
        for (size_t i = 0; ok && i < n; i++) {
            json_t *a = json_array_get(agents, i);
            ok = json_is_string(a) && ids_valid_name(json_string_value(a), json_string_length(a));
        }
        if (!ok) {
            bad_source(rq, "agents must be 1 to 100 agent ids (and no agent_selector)");
            return;
        }
    } else if (pointer[0] != '/' || selector == NULL || !selector_valid(selector)) {
        bad_source(rq, "agent_pointer must be a JSON pointer (/…) and agent_selector an agent id "
                       "or a prefix ending in *");
        return;
    }
    struct src_op *op = src_op_new(rq);
    if (op == NULL) {
        return;
    }
    snprintf(op->src.tenant_id, sizeof op->src.tenant_id, "%s", rq->principal.tenant_id);
    snprintf(op->src.name, sizeof op->src.name, "%s", name);
    snprintf(op->src.scheme, sizeof op->src.scheme, "%s", scheme);
    snprintf(op->src.secret, sizeof op->src.secret, "%s", secret != NULL ? secret : "");
    const char *why = NULL;
    json_t *opts = options != NULL ? options : json_object();
    if (ingest_config_check(scheme, opts, op->src.secret, sizeof op->src.secret, &why) != 0) {
        if (options == NULL) {
            json_decref(opts);
        }
        bad_source(rq, why);
        return;
    }
    json_t *cfg = json_pack("{s:O}", "options", opts);
    if (options == NULL) {
        json_decref(opts);
    }
    if (cfg != NULL && agents != NULL) {
        json_object_set(cfg, "agents", agents);
    } else if (cfg != NULL) {
        json_object_set_new(cfg, "agent_pointer", json_string(pointer));
        json_object_set_new(cfg, "agent_selector", json_string(selector));
    }
    op->src.config = cfg != NULL ? jsonutil_dump(cfg) : NULL;
    json_decref(cfg);
    if (op->src.config == NULL || store_source_new_id(op->src.source_id) != ROOST_OK) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    if (strlen(op->src.config) > STORE_SOURCE_CONFIG_MAX) {
        bad_source(rq, "the source's options are too large");
        return;
    }
    src_submit(op, run_add, done_add, true);
}

/* ---- GET /admin/sources ---- */

static int run_list(struct job *job, struct store *st)
{
    struct src_op *op = (struct src_op *)job;
    for (size_t i = 0; i < op->n; i++) { /* a replayed job starts again */
        store_source_cleanup(&op->list[i]);
    }
    return store_call(st, source_list, op->rq->principal.tenant_id, op->after, (size_t)op->limit,
                      op->list, &op->n, &op->has_more);
}

static void done_list(struct job *job)
{
    struct src_op *op = (struct src_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < op->n; i++) {
        json_array_append_new(arr, source_json(op->rq->rt, &op->list[i], op->now_ms));
    }
    json_t *next =
        page_token_json(op->has_more && op->n > 0 ? op->list[op->n - 1].source_id : NULL);
    request_reply_json(op->rq, 200, json_pack("{s:o, s:o}", "sources", arr, "next", next));
}

/* The limit and page position of a listing; NULL (answered) on a bad one. */
static struct src_op *page_op(struct request *rq)
{
    int64_t limit;
    char pos[STORE_RECEIPT_ID_LEN + 1] = "";
    int rc = request_param_int(rq, "limit", LIST_MAX_LIMIT, ROOST_ELIMIT, &limit);
    const char *next = rc == ROOST_OK ? request_param_str(rq, "next", &rc) : NULL;
    if (rc == ROOST_OK && next != NULL && page_token_parse(next, pos, sizeof pos) != ROOST_OK) {
        rc = ROOST_EPAGE;
    }
    if (rc != ROOST_OK) {
        request_reply_error(rq, rc, NULL, NULL);
        return NULL;
    }
    struct src_op *op = src_op_new(rq);
    if (op != NULL) {
        op->limit = limit;
        snprintf(op->after, sizeof op->after, "%s", pos);
    }
    return op;
}

void api_admin_sources_list(struct request *rq)
{
    struct src_op *op = page_op(rq);
    if (op == NULL) {
        return;
    }
    if ((op->list = calloc((size_t)op->limit, sizeof *op->list)) == NULL) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    src_submit(op, run_list, done_list, false);
}

/* ---- GET, DELETE /admin/sources/{id} ---- */

static int run_get(struct job *job, struct store *st)
{
    struct src_op *op = (struct src_op *)job;
    store_source_cleanup(&op->src);
    return store_call(st, source_get, op->rq->principal.tenant_id, op->rq->key_id, &op->src);
}

static void done_get(struct job *job)
{
    struct src_op *op = (struct src_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    reply_source(op, 200, false);
}

void api_admin_sources_get(struct request *rq)
{
    struct src_op *op = src_op_new(rq);
    if (op != NULL) {
        src_submit(op, run_get, done_get, false);
    }
}

static int run_delete(struct job *job, struct store *st)
{
    struct src_op *op = (struct src_op *)job;
    return store_call(st, source_delete, op->rq->principal.tenant_id, op->rq->key_id);
}

static void done_delete(struct job *job)
{
    struct src_op *op = (struct src_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    request_reply_json(op->rq, 200,
                       json_pack("{s:s, s:b}", "source_id", op->rq->key_id, "deleted", 1));
}

void api_admin_sources_delete(struct request *rq)
{
    struct src_op *op = src_op_new(rq);
    if (op != NULL) {
        src_submit(op, run_delete, done_delete, true);
    }
}

/* ---- POST /admin/sources/{id}/rotate ---- */

static int run_rotate(struct job *job, struct store *st)
{
    struct src_op *op = (struct src_op *)job;
    const char *tenant = op->rq->principal.tenant_id;
    int rc = run_get(job, st);
    if (rc != ROOST_OK) {
        return rc;
    }
    char secret[STORE_SOURCE_SECRET_MAX + 1];
    snprintf(secret, sizeof secret, "%s", op->secret);
    json_t *cfg = json_loads(op->src.config, 0, NULL);
    json_t *opts = json_object_get(cfg, "options");
    const char *why = NULL;
    rc = ingest_config_check(op->src.scheme, opts != NULL ? opts : cfg, secret, sizeof secret,
                             &why) == 0
             ? ROOST_OK
             : ROOST_ESOURCECONFIG;
    json_decref(cfg);
    if (rc == ROOST_OK) {
        int64_t until = op->overlap_s > 0 ? op->now_ms + op->overlap_s * 1000 : 0;
        rc = store_call(st, source_rotate, tenant, op->rq->key_id, secret, until, op->now_ms);
    }
    if (rc == ROOST_OK) {
        rc = run_get(job, st);
    }
    OPENSSL_cleanse(secret, sizeof secret);
    return rc;
}

static void done_rotate(struct job *job)
{
    struct src_op *op = (struct src_op *)job;
    if (job->rc == ROOST_ESOURCECONFIG) {
        request_reply_error(op->rq, job->rc,
                            "the secret does not fit the source's scheme (a stripe source needs "
                            "the one its sender shows)",
                            NULL);
        return;
    }
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    reply_source(op, 200, true);
}

void api_admin_sources_rotate(struct request *rq)
{
    const char *bad = NULL, *secret = NULL;
    if (body_param_only(rq, rq->body, "", &bad) != ROOST_OK) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, NULL, json_pack("{s:s}", "field", bad));
        return;
    }
    int64_t overlap;
    int rc;
    if ((rc = body_param_str(rq, rq->body, "secret", ROOST_ESOURCECONFIG, &secret)) ||
        (rc = body_param_int(rq, rq->body, "overlap_s", DEFAULT_OVERLAP_S, ROOST_EINVAL,
                             &overlap))) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    struct src_op *op = src_op_new(rq);
    if (op == NULL) {
        return;
    }
    snprintf(op->secret, sizeof op->secret, "%s", secret != NULL ? secret : "");
    op->overlap_s = overlap;
    src_submit(op, run_rotate, done_rotate, true);
}

/* ---- GET /admin/sources/{id}/receipts ---- */

static int run_receipts(struct job *job, struct store *st)
{
    struct src_op *op = (struct src_op *)job;
    const char *tenant = op->rq->principal.tenant_id;
    int rc = run_get(job, st);
    return rc != ROOST_OK ? rc
                          : store_call(st, receipt_list, tenant, op->rq->key_id, op->after,
                                       (size_t)op->limit, op->receipts, &op->n, &op->has_more);
}

static void done_receipts(struct job *job)
{
    struct src_op *op = (struct src_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && i < op->n; i++) {
        json_array_append_new(arr, receipt_json(&op->receipts[i]));
    }
    json_t *next =
        page_token_json(op->has_more && op->n > 0 ? op->receipts[op->n - 1].receipt_id : NULL);
    request_reply_json(
        op->rq, 200,
        json_pack("{s:s, s:o, s:o}", "source_id", op->rq->key_id, "receipts", arr, "next", next));
}

void api_admin_sources_receipts(struct request *rq)
{
    struct src_op *op = page_op(rq);
    if (op == NULL) {
        return;
    }
    if ((op->receipts = calloc((size_t)op->limit, sizeof *op->receipts)) == NULL) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    src_submit(op, run_receipts, done_receipts, false);
}

/* ==== POST /ingest/{source_id} ==== */

#define INGEST_HEADERS_MAX 100

struct ingest_op {
    struct job job;
    struct request *rq;
    size_t shard; /* the store being asked for the source */
    struct store_source src;
    struct store_receipt receipt;
    const char *refusal; /* the code the sender gets; NULL once accepted */
    int refusal_rc;
    /* the publish */
    char *payload;
    char idem_key[STORE_SHORT_TEXT_MAX + 1];
    char correlation[STORE_SHORT_TEXT_MAX + 1];
    const char *recipients[MAX_AGENTS];
    char agent[STORE_ID_MAX + 1]; /* the recipient picked by agent_pointer */
    size_t n_recipients;
    struct store_publish_item item;
    struct store_published out[MAX_AGENTS];
    struct store_touches touches;
    json_t *cfg;
    int64_t now_ms;
    size_t max_state_bytes;
    /* The delivery, copied on the loop so that a store worker verifies it (a jwt source's key
     * set may have to be fetched: never on the loop). */
    unsigned char *body;
    size_t body_len;
    bool body_too_large;
    struct {
        char *name, *value;
    } hdrs[INGEST_HEADERS_MAX];
    size_t n_hdrs;
    int64_t max_payload, max_depth, tolerance_s;
    const struct webhooks_net *net;
    /* the verdict of the worker: record(verdict_rc, verdict_reason), or ENOMEM */
    int verdict_rc;
    const char *verdict_reason;
    bool oom;
};

static void ingest_op_free(void *p)
{
    struct ingest_op *op = p;
    free(op->body);
    for (size_t i = 0; i < op->n_hdrs; i++) {
        free(op->hdrs[i].name);
        free(op->hdrs[i].value);
    }
    store_source_cleanup(&op->src);
    free(op->payload);
    json_decref(op->cfg);
    store_touches_cleanup(&op->touches);
    free(op);
}

static const char *header_of(void *ctx, const char *name)
{
    const struct ingest_op *op = ctx;
    for (size_t i = 0; i < op->n_hdrs; i++) {
        if (strcasecmp(op->hdrs[i].name, name) == 0) {
            return op->hdrs[i].value;
        }
    }
    return NULL;
}

static void lookup(struct ingest_op *op);
static void verify_delivery(struct ingest_op *op);

static int run_lookup(struct job *job, struct store *st)
{
    struct ingest_op *op = (struct ingest_op *)job;
    store_source_cleanup(&op->src);
    int rc = store_call(st, source_get, NULL, op->rq->key_id, &op->src);
    if (rc == ROOST_OK) {
        verify_delivery(op); /* on this worker: verification may block (a key set's fetch) */
    }
    return rc;
}

/* A refusal or an acceptance, recorded (and for an acceptance published) in one transaction. */
static int run_record(struct job *job, struct store *st)
{
    struct ingest_op *op = (struct ingest_op *)job;
    const char *tenant = op->src.tenant_id;
    store_touches_cleanup(&op->touches);
    snprintf(op->receipt.outcome, sizeof op->receipt.outcome, "%s",
             op->refusal != NULL ? "refused" : "accepted");
    op->receipt.events = 0;
    if (op->refusal == NULL) {
        struct store_publish_req req = {.tenant_id = tenant,
                                        .items = &op->item,
                                        .n_items = 1,
                                        .now_ms = op->now_ms,
                                        .max_state_bytes = op->max_state_bytes};
        int rc = store_call(st, publish, &req, op->out, &op->touches);
        if (rc != ROOST_OK) {
            return rc;
        }
        for (size_t i = 0; i < op->n_recipients; i++) {
            op->receipt.events += op->out[i].duplicate ? 0 : 1;
        }
        if (op->receipt.events == 0) {
            snprintf(op->receipt.outcome, sizeof op->receipt.outcome, "duplicate");
        }
    }
    return store_call(st, receipt_add, tenant, &op->receipt);
}

static void done_record(struct job *job)
{
    struct ingest_op *op = (struct ingest_op *)job;
    struct request *rq = op->rq;
    if (op->refusal != NULL || job->rc == ROOST_OK) { /* a 503 is no answer: the sender retries */
        metrics_ingest(rq->rt->metrics, op->src.tenant_id, op->src.source_id, op->receipt.outcome);
    }
    if (op->refusal != NULL) {
        /* The sender learns that it was refused, never why (the receipt log says). */
        request_reply_error(rq, op->refusal_rc, NULL, NULL);
        return;
    }
    if (job->rc != ROOST_OK) {
        request_reply_error(rq, job->rc, NULL, NULL); /* nothing committed: safe to retry */
        return;
    }
    runtime_notify(rq->rt, &op->touches);
    metrics_published(rq->rt->metrics, (size_t)op->receipt.events);
    json_t *events = json_array();
    for (size_t i = 0; events != NULL && i < op->n_recipients; i++) {
        json_array_append_new(events, json_pack("{s:s, s:s}", "event_id", op->out[i].event_id,
                                                "agent_id", op->out[i].agent_id));
    }
    request_reply_json(rq, 200,
                       json_pack("{s:b, s:b, s:o}", "accepted", 1, "duplicate",
                                 op->receipt.events == 0, "events", events));
}

static void record(struct ingest_op *op, int refusal_rc, const char *reason)
{
    if (refusal_rc != ROOST_OK) {
        op->refusal = roost_err_code(refusal_rc);
        op->refusal_rc = refusal_rc;
    }
    snprintf(op->receipt.reason, sizeof op->receipt.reason, "%s", reason);
    op->job = (struct job){.run = run_record,
                           .done = done_record,
                           .write = true,
                           .name = request_job_kind(op->rq),
                           .tenant = workers_tenant_key(op->src.tenant_id),
                           .rows = op->n_recipients,
                           .affinity = op->n_recipients > 0
                                           ? hash_tenant_agent(op->src.tenant_id, op->recipients[0])
                                           : 0};
    workers_submit(op->rq->rt->shards[op->shard].workers, &op->job);
}

/* The allow-listed headers the event keeps (the scheme's ids and types, never a signature). */
static json_t *kept_headers(struct ingest_op *op)
{
    static const char *const allow[] = {"Content-Type",
                                        "User-Agent",
                                        "webhook-id",
                                        "webhook-timestamp",
                                        "X-GitHub-Event",
                                        "X-GitHub-Delivery",
                                        "X-GitHub-Hook-ID",
                                        "X-GitHub-Hook-Installation-Target-ID",
                                        "X-GitHub-Hook-Installation-Target-Type",
                                        NULL};
    json_t *h = json_object();
    json_t *opts = json_object_get(op->cfg, "options");
    const char *names[sizeof allow / sizeof allow[0] + 2];
    size_t n_names = 0;
    for (const char *const *a = allow; *a != NULL; a++) {
        names[n_names++] = *a;
    }
    names[n_names++] = json_string_value(json_object_get(opts, "id_header"));
    names[n_names++] = json_string_value(json_object_get(opts, "type_header"));
    for (size_t i = 0; h != NULL && i < n_names; i++) {
        const char *name = names[i];
        const char *v = name != NULL ? header_of(op, name) : NULL;
        if (v == NULL || strlen(v) > HEADER_VALUE_MAX) {
            continue;
        }
        bool printable = true;
        for (const char *c = v; *c != '\0' && printable; c++) {
            printable = (unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f;
        }
        char lower[128];
        size_t n = strlen(name) < sizeof lower - 1 ? strlen(name) : sizeof lower - 1;
        for (size_t k = 0; k < n; k++) {
            lower[k] = (char)(name[k] >= 'A' && name[k] <= 'Z' ? name[k] + 32 : name[k]);
        }
        lower[n] = '\0';
        if (printable) {
            json_object_set_new(h, lower, json_string(v));
        }
    }
    return h;
}

/* Who the verified delivery goes to: the source's agents, or the agent at agent_pointer when
 * agent_selector allows it. false when nobody. */
static bool route(struct ingest_op *op, const json_t *body)
{
    json_t *agents = json_object_get(op->cfg, "agents");
    if (json_is_array(agents)) {
        size_t n = json_array_size(agents);
        for (size_t i = 0; i < n && i < MAX_AGENTS; i++) {
            op->recipients[op->n_recipients++] = json_string_value(json_array_get(agents, i));
        }
        return op->n_recipients > 0;
    }
    const char *sel = json_string_value(json_object_get(op->cfg, "agent_selector"));
    const json_t *v = body != NULL
                          ? ingest_json_pointer(
                                body, json_string_value(json_object_get(op->cfg, "agent_pointer")))
                          : NULL;
    if (!json_is_string(v) || sel == NULL ||
        !ids_valid_name(json_string_value(v), json_string_length(v)) ||
        !selector_allows(sel, json_string_value(v))) {
        return false;
    }
    snprintf(op->agent, sizeof op->agent, "%s", json_string_value(v));
    op->recipients[op->n_recipients++] = op->agent;
    return true;
}

/* "ingest:<source_id>:<delivery id>", or the delivery id's SHA-256 when that is too long. */
static void idempotency_key(struct ingest_op *op, const char *delivery_id)
{
    int n =
        snprintf(op->idem_key, sizeof op->idem_key, "ingest:%s:%s", op->src.source_id, delivery_id);
    if (n < 0 || (size_t)n >= sizeof op->idem_key) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int md_len = 0;
        (void)EVP_Digest(delivery_id, strlen(delivery_id), md, &md_len, EVP_sha256(), NULL);
        n = snprintf(op->idem_key, sizeof op->idem_key, "ingest:%s:sha256:", op->src.source_id);
        for (unsigned i = 0; i < md_len && (size_t)n + 2 < sizeof op->idem_key; i++) {
            n += snprintf(op->idem_key + n, sizeof op->idem_key - (size_t)n, "%02x", md[i]);
        }
    }
}

static void verdict(struct ingest_op *op, int rc, const char *reason)
{
    op->verdict_rc = rc;
    op->verdict_reason = reason;
}

/* The source is found (on a store worker): check, verify, route, build the event; done_lookup
 * records the verdict. */
static void verify_delivery(struct ingest_op *op)
{
    size_t len = op->body_len;
    json_decref(op->cfg);
    op->cfg = json_loads(op->src.config, 0, NULL);
    if (op->cfg == NULL) {
        verdict(op, ROOST_EINGESTREFUSED, "source_unusable");
        return;
    }
    if (op->body_too_large) {
        verdict(op, ROOST_ETOOLARGE, "body_too_large");
        return;
    }
    const unsigned char *data = op->body;
    /* The body as JSON when it is JSON (bounded depth), else kept as base64. */
    json_t *body = NULL;
    if (len > 0 &&
        jsonutil_depth((const char *)data, len, (size_t)op->max_depth) <= (size_t)op->max_depth) {
        body = json_loadb((const char *)data, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    }
    struct ingest_delivery d = {.body = data,
                                .body_len = len,
                                .header = header_of,
                                .ctx = op,
                                .json = body,
                                .now_s = op->now_ms / 1000,
                                .tolerance_s = op->tolerance_s,
                                .jwks_get = ingest_jwks_get,
                                .jwks_ctx = (void *)op->net};
    struct ingest_verified v;
    const char *reason = NULL;
    bool overlap = op->src.old_secret[0] != '\0' && op->src.old_until_ms > op->now_ms;
    json_t *opts = json_object_get(op->cfg, "options");
    if (ingest_verify(op->src.scheme, opts, op->src.secret, overlap ? op->src.old_secret : NULL, &d,
                      &v, &reason) != 0) {
        json_decref(body);
        verdict(op, ROOST_EINGESTREFUSED, reason);
        return;
    }
    snprintf(op->receipt.delivery_id, sizeof op->receipt.delivery_id, "%s", v.delivery_id);
    if (!route(op, body)) {
        json_decref(body);
        verdict(op, ROOST_EINGESTUNROUTABLE, "unroutable");
        return;
    }
    char at[TIME_RFC3339_LEN + 1];
    time_format_rfc3339(op->now_ms, at);
    json_t *ev = json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s, s:o}", "source_id", op->src.source_id,
                           "source", op->src.name, "scheme", op->src.scheme, "delivery_id",
                           v.delivery_id, "type", v.type[0] != '\0' ? v.type : NULL, "received_at",
                           at, "headers", kept_headers(op));
    if (ev != NULL && body != NULL) {
        json_object_set_new(ev, "body", body);
        body = NULL;
    } else if (ev != NULL) {
        char *b64 = NULL;
        if (b64_encode(B64_STD, data, len, &b64, NULL) == 0) {
            json_object_set_new(ev, "body_base64", json_string(b64));
        }
        free(b64);
    }
    json_decref(body);
    op->payload = ev != NULL ? jsonutil_dump(ev) : NULL;
    json_decref(ev);
    if (op->payload == NULL) {
        op->oom = true;
        return;
    }
    if (strlen(op->payload) > (size_t)op->max_payload) {
        op->n_recipients = 0;
        verdict(op, ROOST_ETOOLARGE, "event_too_large");
        return;
    }
    idempotency_key(op, v.delivery_id);
    snprintf(op->correlation, sizeof op->correlation, "%s", v.delivery_id);
    op->item = (struct store_publish_item){.recipients = op->recipients,
                                           .n_recipients = op->n_recipients,
                                           .payload = op->payload,
                                           .correlation_id = op->correlation,
                                           .idempotency_key = op->idem_key,
                                           .available_at_ms = op->now_ms};
    verdict(op, ROOST_OK, v.used_old_secret ? "ok_previous_secret" : "ok");
}

static void done_lookup(struct job *job)
{
    struct ingest_op *op = (struct ingest_op *)job;
    if (job->rc == ROOST_ESOURCENOTFOUND && op->shard + 1 < op->rq->rt->n_shards) {
        op->shard++; /* tenants with a store of their own: the source may be in another */
        lookup(op);
        return;
    }
    if (job->rc != ROOST_OK || op->oom) {
        request_reply_error(op->rq, op->oom ? ROOST_ENOMEM : job->rc, NULL, NULL);
        return;
    }
    record(op, op->verdict_rc, op->verdict_reason);
}

static void lookup(struct ingest_op *op)
{
    op->job =
        (struct job){.run = run_lookup, .done = done_lookup, .name = request_job_kind(op->rq)};
    workers_submit(op->rq->rt->shards[op->shard].workers, &op->job);
}

void api_ingest(struct request *rq)
{
    const struct config *cfg = rq->rt->cfg;
    size_t id_len = strlen(rq->key_id);
    if (id_len != STORE_SOURCE_ID_LEN || strncmp(rq->key_id, "src_", 4) != 0) {
        request_reply_error(rq, ROOST_ESOURCENOTFOUND, NULL, NULL); /* cannot be a source id */
        return;
    }
    double rate = (double)cfg->ingest_rate_per_s;
    int64_t wait_s =
        ratelimit_take(rq->rt->ingest_rl, rq->key_id, rate, 2 * rate, 1.0, time_mono_ms());
    if (wait_s > 0) {
        request_set_retry_after(rq, wait_s);
        request_reply_error(rq, ROOST_ERATELIMIT, NULL, NULL);
        return;
    }
    struct ingest_op *op = request_op_new(rq, sizeof *op, ingest_op_free);
    if (op == NULL) {
        return;
    }
    op->rq = rq;
    op->now_ms = time_now_ms();
    op->max_state_bytes = (size_t)cfg->limits_max_state_bytes;
    op->receipt.at_ms = op->now_ms;
    memcpy(op->receipt.source_id, rq->key_id, id_len + 1);
    if (store_receipt_new_id(op->now_ms, op->receipt.receipt_id) != ROOST_OK) {
        request_reply_error(rq, ROOST_EINTERNAL, NULL, NULL);
        return;
    }
    char *host = NULL;
    ev_uint16_t port = 0;
    struct evhttp_connection *conn = evhttp_request_get_connection(rq->req);
    if (conn != NULL) {
        evhttp_connection_get_peer(conn, &host, &port);
    }
    snprintf(op->receipt.peer, sizeof op->receipt.peer, "%s", host != NULL ? host : "");
    op->max_payload = cfg->limits_max_payload_bytes;
    op->max_depth = cfg->limits_max_json_depth;
    op->tolerance_s = cfg->ingest_tolerance_s;
    op->net = rq->rt->hook_net;
    struct evbuffer *in = evhttp_request_get_input_buffer(rq->req);
    size_t len = evbuffer_get_length(in);
    op->receipt.size = (int64_t)len;
    op->body_too_large = len > (size_t)cfg->ingest_max_body_bytes;
    op->body = malloc(len + 1);
    bool ok = op->body != NULL &&
              (op->body_too_large || evbuffer_copyout(in, op->body, len) == (ev_ssize_t)len);
    op->body_len = op->body_too_large ? 0 : len;
    for (struct evkeyval *h = evhttp_request_get_input_headers(rq->req)->tqh_first; h != NULL;
         h = h->next.tqe_next) {
        if (op->n_hdrs == INGEST_HEADERS_MAX) {
            break; /* libevent bounds the header block; what a scheme reads comes first anyway */
        }
        op->hdrs[op->n_hdrs].name = strdup(h->key);
        op->hdrs[op->n_hdrs].value = strdup(h->value);
        ok = ok && op->hdrs[op->n_hdrs].name != NULL && op->hdrs[op->n_hdrs].value != NULL;
        op->n_hdrs++;
    }
    if (!ok) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    lookup(op);
}
