/* SPDX-License-Identifier: MIT */
/* POST /api/v1/events: one event or {"events":[…]} published in one transaction (all or nothing),
 * fanned out to every recipient. Everything is validated before the store sees it (on the loop
 * thread, or for a body over REQUEST_BODY_OFF_LOOP_BYTES on a scan reader), so a rejected batch
 * writes nothing. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "common/hash.h"
#include "common/ids.h"
#include "common/jsonutil.h"
#include "common/timeutil.h"
#include "server/api.h"
#include "server/api_json.h"
#include "server/config.h"
#include "server/metrics.h"
#include "server/ratelimit.h"
#include "server/request.h"
#include "server/runtime.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

struct publish_op {
    struct job job;
    struct request *rq;
    struct store_publish_item *items;
    size_t n_items;
    const char **recipients; /* all recipients, borrowed from rq->body */
    char **texts;            /* payload and state_patch texts we own */
    size_t n_texts;
    struct store_published *out;
    size_t n_out;
    struct store_touches touches;
    int64_t now_ms;
    size_t max_state_bytes; /* limits.max_state_bytes when the request came (loop thread) */
    /* The checks of the events (check_events), on the loop or, for a big body, on a worker. */
    json_t *list, *single; /* the body's events, borrowed from rq->body */
    size_t max_recipients; /* limits.* copied on the loop thread (SIGHUP changes them there) */
    size_t max_payload_bytes;
    uint64_t max_publish_bytes;
    size_t bad_index; /* the event a check refused */
    const char *bad_msg;
    struct request_refusal refusal; /* what a worker's checks explained */
};

static void publish_op_free(void *p)
{
    struct publish_op *op = p;
    json_decref(op->refusal.detail);
    for (size_t i = 0; i < op->n_texts; i++) {
        free(op->texts[i]);
    }
    free(op->texts);
    free(op->items);
    free(op->recipients);
    free(op->out);
    store_touches_cleanup(&op->touches);
    free(op);
}

static int run_publish(struct job *job, struct store *st)
{
    struct publish_op *op = (struct publish_op *)job;
    store_touches_cleanup(&op->touches);
    struct store_publish_req req = {
        .tenant_id = op->rq->principal.tenant_id,
        .items = op->items,
        .n_items = op->n_items,
        .now_ms = op->now_ms,
        .max_state_bytes = op->max_state_bytes,
        .last_write = true, /* the job is this publish */
    };
    return store_call(st, publish, &req, op->out, &op->touches);
}

/* A group's publishes as one batch: their rows in one multi-row insert (store_publish_batch). */
static int run_publish_batch(struct job *const *jobs, size_t n, struct store *st)
{
    struct store_publish_req *reqs = calloc(n, sizeof *reqs);
    struct store_publish_entry *entries = calloc(n, sizeof *entries);
    int rc = ROOST_ENOMEM;
    if (reqs != NULL && entries != NULL) {
        for (size_t i = 0; i < n; i++) {
            struct publish_op *op = (struct publish_op *)jobs[i];
            store_touches_cleanup(&op->touches);
            reqs[i] = (struct store_publish_req){
                .tenant_id = op->rq->principal.tenant_id,
                .items = op->items,
                .n_items = op->n_items,
                .now_ms = op->now_ms,
                .max_state_bytes = op->max_state_bytes,
            };
            entries[i] = (struct store_publish_entry){
                .req = &reqs[i], .out = op->out, .touches = &op->touches};
        }
        rc = store_publish_batch(st, entries, n);
        for (size_t i = 0; i < n; i++) {
            jobs[i]->rc = entries[i].rc;
        }
    }
    free(reqs);
    free(entries);
    return rc;
}

static const struct job_batch publish_batch = {.run = run_publish_batch, .last = true};

static void done_publish(struct job *job)
{
    struct publish_op *op = (struct publish_op *)job;
    struct request *rq = op->rq;
    if (job->rc != ROOST_OK) {
        request_reply_error(rq, job->rc, NULL, NULL);
        return;
    }
    runtime_notify(rq->rt, &op->touches);
    /* Written as text: a publish to 10,000 recipients built 10,000 jansson objects on the I/O
     * loop thread (~50 ms). */
    struct dynbuf b = {.max = SIZE_MAX};
    bool all_duplicates = true;
    size_t written = 0;
    dynbuf_add(&b, "{\"events\":[", 11);
    for (size_t i = 0; i < op->n_out; i++) {
        const struct store_published *o = &op->out[i];
        all_duplicates = all_duplicates && o->duplicate;
        written += o->duplicate ? 0 : 1;
        dynbuf_add(&b, i > 0 ? ",{\"event_id\":" : "{\"event_id\":", i > 0 ? 13 : 12);
        jsonutil_add_string(&b, o->event_id);
        dynbuf_add(&b, ",\"agent_id\":", 12);
        jsonutil_add_string(&b, o->agent_id);
        dynbuf_add(&b, ",\"sequence_number\":", 19);
        jsonutil_add_int(&b, o->seq);
        dynbuf_adds(&b, o->duplicate ? ",\"duplicate\":true}" : "}");
    }
    dynbuf_add(&b, "]}", 2);
    metrics_published(rq->rt->metrics, written);
    request_reply_json_text(rq, all_duplicates ? 200 : 201, json_text_take(&b));
}

/* Reads an optional RFC 3339 time field. */
static int body_time(const json_t *ev, const char *name, int bad_rc, int64_t *out)
{
    json_t *v = json_object_get(ev, name);
    *out = 0;
    if (!v || json_is_null(v)) {
        return ROOST_OK;
    }
    if (!json_is_string(v) ||
        time_parse_rfc3339(json_string_value(v), json_string_length(v), out) != 0) {
        return bad_rc;
    }
    return ROOST_OK;
}

static char *keep_text(struct publish_op *op, char *text)
{
    if (text) {
        op->texts[op->n_texts++] = text;
    }
    return text;
}

/* Validates one event object and fills `item`. Returns ROOST_OK or an error; *msg may explain. */
static int parse_event(struct publish_op *op, const json_t *ev, struct store_publish_item *item,
                       const char **recipients_slot, const char **msg)
{
    struct request *rq = op->rq;
    const char *bad = NULL;
    if (!json_is_object(ev)) {
        *msg = "each event must be a JSON object";
        return ROOST_EBATCH;
    }
    if (body_param_only(rq, ev, "", &bad) != ROOST_OK) {
        *msg = bad;
        return ROOST_EUNKNOWNFIELD;
    }
    json_t *recips = json_object_get(ev, "recipients");
    size_t n = json_is_array(recips) ? json_array_size(recips) : 0;
    if (n == 0 || n > op->max_recipients) {
        return ROOST_ERECIPIENTS;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(recips, i);
        if (!json_is_string(r) || !ids_valid_name(json_string_value(r), json_string_length(r))) {
            *msg = "every recipient must be an agent id ([A-Za-z0-9._-]{1,128})";
            return ROOST_ERECIPIENTS;
        }
        if (!auth_allows(&rq->principal, AUTH_PUBLISH, json_string_value(r))) {
            char scope[AUTH_SCOPE_TEXT_MAX];
            auth_required_scope(AUTH_PUBLISH, json_string_value(r), scope, sizeof scope);
            request_explain(ROOST_EFORBIDDEN, json_pack("{s:s}", "required_scope", scope),
                            "the token lacks the scope %s", scope);
            return ROOST_EFORBIDDEN;
        }
        recipients_slot[i] = json_string_value(r);
    }
    item->recipients = recipients_slot;
    item->n_recipients = n;

    json_t *payload = json_object_get(ev, "payload");
    if (payload && !json_is_null(payload) && !json_is_object(payload)) {
        return ROOST_EPAYLOAD;
    }
    char *text =
        keep_text(op, payload && !json_is_null(payload) ? jsonutil_dump(payload) : strdup("{}"));
    if (!text) {
        return ROOST_ENOMEM;
    }
    if (strlen(text) > op->max_payload_bytes) {
        return ROOST_EPAYLOADTOOLARGE;
    }
    item->payload = text;

    json_t *patch = json_object_get(ev, "state_patch");
    if (patch && !json_is_null(patch)) {
        if (!json_is_object(patch)) {
            return ROOST_ESTATEPATCH;
        }
        char *ptext = keep_text(op, jsonutil_dump(patch));
        if (!ptext) {
            return ROOST_ENOMEM;
        }
        if (strlen(ptext) > op->max_payload_bytes) {
            return ROOST_EPAYLOADTOOLARGE;
        }
        item->state_patch = ptext;
    }

    int64_t priority, delay_s, ttl_s, available_at, expires_at;
    int rc;
    if ((rc = body_param_int(rq, ev, "priority", 0, ROOST_EPRIORITY, &priority)) ||
        (rc =
             body_param_str(rq, ev, "correlation_id", ROOST_ECORRELATION, &item->correlation_id)) ||
        (rc = body_param_str(rq, ev, "idempotency_key", ROOST_EIDEMKEY, &item->idempotency_key)) ||
        (rc = body_param_int(rq, ev, "delay_s", -1, ROOST_EAVAILABLEAT, &delay_s)) ||
        (rc = body_time(ev, "available_at", ROOST_EAVAILABLEAT, &available_at)) ||
        (rc = body_param_int(rq, ev, "ttl_s", -1, ROOST_EEXPIRESAT, &ttl_s)) ||
        (rc = body_time(ev, "expires_at", ROOST_EEXPIRESAT, &expires_at))) {
        return rc;
    }
    item->priority = (int)priority;
    if (delay_s >= 0 && available_at) {
        *msg = "give delay_s or available_at, not both";
        return ROOST_EAVAILABLEAT;
    }
    if (ttl_s >= 0 && expires_at) {
        *msg = "give ttl_s or expires_at, not both";
        return ROOST_EEXPIRESAT;
    }
    item->available_at_ms = delay_s >= 0   ? op->now_ms + delay_s * 1000
                            : available_at ? available_at
                                           : op->now_ms;
    if (item->available_at_ms < op->now_ms) {
        item->available_at_ms = op->now_ms; /* a time in the past means "now" */
    }
    item->expires_at_ms = ttl_s >= 0 ? op->now_ms + ttl_s * 1000 : expires_at;
    if (item->expires_at_ms && item->expires_at_ms <= item->available_at_ms) {
        *msg = "expires_at must be after available_at (and in the future)";
        return ROOST_EEXPIRESAT;
    }
    return ROOST_OK;
}

static int check_events(struct publish_op *op);
static int run_check(struct job *job, struct store *st);
static void done_check(struct job *job);
static void publish_checked(struct publish_op *op, int rc);

void api_publish(struct request *rq)
{
    const struct config *cfg = rq->rt->cfg;
    json_t *list = json_object_get(rq->body, "events");
    json_t *single = NULL;
    size_t n_events;
    if (list) {
        if (json_object_size(rq->body) != 1 || !json_is_array(list)) {
            request_reply_error(rq, ROOST_EBATCH, "a batch is {\"events\":[…]} with no other field",
                                NULL);
            return;
        }
        n_events = json_array_size(list);
        if (n_events == 0 || n_events > (size_t)cfg->limits_max_batch) {
            request_reply_error(rq, ROOST_EBATCH, NULL, NULL);
            return;
        }
    } else {
        single = rq->body;
        n_events = 1;
    }
    struct publish_op *op = request_op_new(rq, sizeof *op, publish_op_free);
    if (op == NULL) {
        return;
    }
    op->rq = rq;
    op->now_ms = time_now_ms();
    op->max_state_bytes = (size_t)rq->rt->cfg->limits_max_state_bytes;

    /* Count rows first so every allocation is sized once and bounded by the limits above. */
    size_t n_rows = 0;
    for (size_t i = 0; i < n_events; i++) {
        json_t *ev = single ? single : json_array_get(list, i);
        json_t *r = json_is_object(ev) ? json_object_get(ev, "recipients") : NULL;
        n_rows += json_is_array(r) ? json_array_size(r) : 0;
    }
    op->items = calloc(n_events, sizeof *op->items);
    op->recipients = calloc(n_rows ? n_rows : 1, sizeof *op->recipients);
    op->texts = calloc(2 * n_events, sizeof *op->texts);
    op->out = calloc(n_rows ? n_rows : 1, sizeof *op->out);
    if (!op->items || !op->recipients || !op->texts || !op->out) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    op->n_items = n_events;
    op->list = list;
    op->single = single;
    op->max_recipients = (size_t)cfg->limits_max_recipients;
    op->max_payload_bytes = (size_t)cfg->limits_max_payload_bytes;
    op->max_publish_bytes = (uint64_t)cfg->limits_max_publish_bytes;
    if (evbuffer_get_length(evhttp_request_get_input_buffer(rq->req)) >
        REQUEST_BODY_OFF_LOOP_BYTES) {
        /* A big batch's checks (each event's fields, scopes and payload text: ~5 ms for 1,000
         * events) run on the scan readers, like its parse (request.c), not on the loop. */
        request_submit_bulk(rq, &op->job, run_check, done_check, "publish_check");
        return;
    }
    publish_checked(op, check_events(op));
}

/* Checks every event and fills op's items (loop thread, or a worker for a big batch: it reads
 * only op, the request's body and principal, and route declarations). ROOST_OK, or the refusal
 * with op->bad_index and op->bad_msg. */
static int check_events(struct publish_op *op)
{
    size_t slot = 0;
    for (size_t i = 0; i < op->n_items; i++) {
        json_t *ev = op->single ? op->single : json_array_get(op->list, i);
        const char *msg = NULL;
        int rc = parse_event(op, ev, &op->items[i], op->recipients + slot, &msg);
        if (rc != ROOST_OK) {
            op->bad_index = i;
            op->bad_msg = msg;
            return rc;
        }
        slot += op->items[i].n_recipients;
    }
    op->n_out = slot;
    /* What the request writes after fan-out: a payload is stored once per recipient. */
    uint64_t fanout_bytes = 0;
    for (size_t i = 0; i < op->n_items; i++) {
        const struct store_publish_item *it = &op->items[i];
        size_t one = strlen(it->payload) + (it->state_patch ? strlen(it->state_patch) : 0);
        fanout_bytes += (uint64_t)one * it->n_recipients;
    }
    if (fanout_bytes > op->max_publish_bytes) {
        op->bad_index = SIZE_MAX;
        op->bad_msg = "the publish writes more than limits.max_publish_bytes after fan-out";
        return ROOST_EPAYLOADTOOLARGE;
    }
    return ROOST_OK;
}

static int run_check(struct job *job, struct store *st)
{
    (void)st;
    struct publish_op *op = (struct publish_op *)job;
    int rc = check_events(op);
    request_refusal_take(&op->refusal);
    /* The check's answer is the job's result: never a reason to run it again. */
    return rc == ROOST_ERETRY ? ROOST_EINTERNAL : rc;
}

static void done_check(struct job *job)
{
    struct publish_op *op = (struct publish_op *)job;
    request_refusal_put(&op->refusal);
    publish_checked(op, job->rc);
}

/* After the checks (loop thread): the refusal's answer, or the rate limit and the write. */
static void publish_checked(struct publish_op *op, int rc)
{
    struct request *rq = op->rq;
    if (rc != ROOST_OK) {
        const char *msg = op->bad_msg;
        json_t *extra = op->single || op->bad_index == SIZE_MAX
                            ? NULL
                            : json_pack("{s:I}", "index", (json_int_t)op->bad_index);
        if (rc == ROOST_EUNKNOWNFIELD) {
            char text[200];
            snprintf(text, sizeof text, "unknown field '%.100s'", msg);
            if (!extra) {
                extra = json_object();
            }
            json_object_set_new(extra, "field", json_string(msg));
            request_reply_error(rq, rc, text, extra);
        } else {
            request_reply_error(rq, rc, msg, extra);
        }
        return;
    }
    size_t slot = op->n_out;
    double rate = (double)rq->rt->cfg->limits_publish_rows_per_s;
    int64_t wait_s = ratelimit_take(rq->rt->publish_rl, rq->principal.tenant_id, rate, 2 * rate,
                                    (double)slot, time_mono_ms());
    if (wait_s > 0) {
        request_set_retry_after(rq, wait_s);
        request_reply_error(rq, ROOST_ERATELIMIT,
                            "this tenant publishes faster than limits.publish_rows_per_s", NULL);
        return;
    }
    op->job = (struct job){.run = run_publish,
                           .done = done_publish,
                           .write = true,
                           .name = request_job_kind(rq),
                           .batch = &publish_batch,
                           .tenant = workers_tenant_key(rq->principal.tenant_id),
                           .rows = slot};
    /* With several writers, one agent's publishes stay on one connection (see struct job). */
    op->job.affinity = hash_tenant_agent(rq->principal.tenant_id, op->recipients[0]);
    const struct store_publish_item *it = &op->items[0];
    if (op->n_items == 1 && it->n_recipients == 1 && it->available_at_ms <= op->now_ms) {
        /* A consumer long-polling the agent claims the event in the transaction that makes it:
         * one commit and one trip through the writers fewer than after the notify. */
        op->job.follower = api_inbox_take_claim(rq->rt, rq->principal.tenant_id, op->recipients[0]);
    }
    workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &op->job);
}
