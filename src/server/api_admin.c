/* SPDX-License-Identifier: MIT */
/* The tenant operator API (tenant:admin): agents overview, quarantine list / inspect / requeue /
 * purge, tenant stats, any event by id or correlation id, the chart history. Page tokens
 * (api_json.h) hold "agent_id", "agent_id:seq" or, for the depth and age orders of the agent list,
 * "#offset". */
#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "common/ids.h"
#include "common/jsonutil.h"
#include "common/strutil.h"
#include "common/timeutil.h"
#include "server/api.h"
#include "server/api_json.h"
#include "server/config.h"
#include "server/history.h"
#include "server/metrics.h"
#include "server/request.h"
#include "server/runtime.h"
#include "server/sse_hub.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

#define LEASE_TOKEN_SHOWN 7 /* "lt_" and 4 characters: enough to tell leases apart, not to use */

struct admin_op {
    struct job job;
    struct request *rq;
    int64_t limit;
    char agent_filter[STORE_ID_MAX + 1];
    char after_agent[STORE_ID_MAX + 1];
    int64_t after_seq;
    enum store_agents_sort sort;
    int64_t offset;
    struct store_events events;
    struct store_agent_stats *agents;
    size_t n_agents;
    bool has_more;
    size_t max_bytes; /* limits.max_response_bytes (quarantine list) */
    struct store_touches touches;
    struct store_event event;
    char correlation_id[STORE_SHORT_TEXT_MAX + 1];
    size_t purged;
    bool purge_one;
    size_t requeued;
    struct evbuffer *out;              /* the quarantine or agents page, rendered on the worker */
    struct sse_agent_streams *streams; /* the agents page: the tenant's open streams */
    size_t n_streams;
};

static void admin_op_free(void *p)
{
    struct admin_op *op = p;
    store_events_cleanup(&op->events);
    store_touches_cleanup(&op->touches);
    store_event_cleanup(&op->event);
    free(op->agents);
    free(op->streams);
    if (op->out) {
        evbuffer_free(op->out);
    }
    free(op);
}

static struct admin_op *admin_op_new(struct request *rq)
{
    struct admin_op *op = request_op_new(rq, sizeof *op, admin_op_free);
    if (op == NULL) {
        return NULL;
    }
    op->rq = rq;
    return op;
}

/* Where an admin job runs: the readers (a bounded read), the scan readers (a listing that may
 * rank or walk many agents or events: never on the readers inbox reads need), or a writer. */
enum admin_lane { ADMIN_READ, ADMIN_SCAN, ADMIN_WRITE };

/* Queues op's job for the caller's tenant (its share of the readers, workers.h), named by the
 * route for the metrics. */
static void admin_submit(struct admin_op *op, int (*run)(struct job *, struct store *),
                         void (*done)(struct job *), enum admin_lane lane)
{
    struct request *rq = op->rq;
    op->job = (struct job){.run = run,
                           .done = done,
                           .write = lane == ADMIN_WRITE,
                           .scan = lane == ADMIN_SCAN,
                           .name = request_job_kind(rq),
                           .tenant = workers_tenant_key(rq->principal.tenant_id)};
    workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &op->job);
}

static json_t *page_token(const char *agent_id, int64_t seq, bool with_seq)
{
    char raw[STORE_ID_MAX + 32];
    if (with_seq) {
        snprintf(raw, sizeof raw, "%s:%" PRId64, agent_id, seq);
    } else {
        snprintf(raw, sizeof raw, "%s", agent_id);
    }
    return page_token_json(raw);
}

/* Decodes a page token into agent (and seq when with_seq). ROOST_OK or ROOST_EPAGE. */
static int parse_page_token(const char *tok, bool with_seq, char *agent, int64_t *seq)
{
    char raw[PAGE_TOKEN_POS_MAX + 1];
    if (page_token_parse(tok, raw, sizeof raw) != ROOST_OK) {
        return ROOST_EPAGE;
    }
    size_t len = strlen(raw);
    const char *colon = with_seq ? strchr(raw, ':') : NULL;
    size_t alen = colon ? (size_t)(colon - raw) : len;
    if ((with_seq && !colon) || alen > STORE_ID_MAX || !ids_valid_name(raw, alen)) {
        return ROOST_EPAGE;
    }
    memcpy(agent, raw, alen);
    agent[alen] = '\0';
    if (with_seq && strutil_parse_i64(colon + 1, len - alen - 1, 0, INT64_MAX, seq) != 0) {
        return ROOST_EPAGE;
    }
    return ROOST_OK;
}

/* Decodes a "#offset" token of the depth and age orders. ROOST_OK or ROOST_EPAGE. */
static int parse_offset_token(const char *tok, int64_t *offset)
{
    char raw[PAGE_TOKEN_POS_MAX + 1];
    if (page_token_parse(tok, raw, sizeof raw) != ROOST_OK || raw[0] != '#') {
        return ROOST_EPAGE;
    }
    size_t len = strlen(raw);
    if (len < 2 || len > 10 || strutil_parse_i64(raw + 1, len - 1, 0, INT64_MAX, offset) != 0) {
        return ROOST_EPAGE;
    }
    return ROOST_OK;
}

/* ---- GET /admin/agents ---- */

/* The page as text, rendered on the worker (like the quarantine page): a page of 1,000 agents
 * built as jansson objects cost the loop thread ~4 ms, and an attacker's scan loop took that from
 * every other tenant's requests. Subscribers come from the hub's copy taken when the request came
 * (op->streams). */
static int render_agents(struct admin_op *op)
{
    struct dynbuf b = {.max = SIZE_MAX};
    int64_t now = time_now_ms();
    dynbuf_add(&b, "{\"agents\":[", 11);
    for (size_t i = 0; i < op->n_agents; i++) {
        const struct store_agent_stats *a = &op->agents[i];
        size_t subs = sse_streams_of(op->streams, op->n_streams, a->agent_id);
        dynbuf_add(&b, i > 0 ? ",{\"agent_id\":" : "{\"agent_id\":", i > 0 ? 13 : 12);
        jsonutil_add_string(&b, a->agent_id);
        dynbuf_addf(&b,
                    ",\"head\":%" PRId64 ",\"purged_through_seq\":%" PRId64 ",\"pending\":%" PRId64
                    ",\"scheduled\":%" PRId64 ",\"claimed\":%" PRId64 ",\"quarantined\":%" PRId64
                    ",\"oldest_pending_age_s\":",
                    a->head, a->purged_through_seq, a->pending, a->scheduled, a->claimed,
                    a->quarantined);
        if (a->oldest_pending_ms) {
            dynbuf_addf(&b, "%.3f", (double)(now - a->oldest_pending_ms) / 1000.0);
        } else {
            dynbuf_add(&b, "null", 4);
        }
        dynbuf_addf(&b, ",\"subscribers\":%zu,\"last_seen_at\":", subs);
        /* An open stream is the agent seen now; the store has its last claim or stream open
         * (written at most once a minute), which is all a node without the stream knows. */
        time_json_text(&b, subs > 0 ? now : a->last_seen_ms);
        dynbuf_addc(&b, '}');
    }
    json_t *next = json_null();
    if (op->has_more && op->n_agents && op->sort == STORE_SORT_AGENT) {
        next = page_token(op->agents[op->n_agents - 1].agent_id, 0, false);
    } else if (op->has_more && op->n_agents) {
        char raw[32];
        snprintf(raw, sizeof raw, "#%lld", (long long)(op->offset + (int64_t)op->n_agents));
        next = page_token_json(raw);
    }
    dynbuf_add(&b, "],\"next\":", 9);
    if (json_is_string(next)) {
        jsonutil_add_string(&b, json_string_value(next));
    } else {
        dynbuf_add(&b, "null", 4);
    }
    json_decref(next);
    dynbuf_addc(&b, '}');
    op->out = json_text_take(&b);
    return op->out ? ROOST_OK : ROOST_ENOMEM;
}

static int run_agents(struct job *job, struct store *st)
{
    struct admin_op *op = (struct admin_op *)job;
    if (op->out) {
        evbuffer_free(op->out);
        op->out = NULL;
    }
    int rc = store_call(st, agents_list, op->rq->principal.tenant_id, op->sort, op->after_agent,
                        op->offset, (size_t)op->limit, time_now_ms(), op->agents, &op->n_agents,
                        &op->has_more);
    /* Sorted here, not on the loop that copied them: thousands of streams cost it milliseconds. */
    sse_streams_sort(op->streams, op->n_streams);
    return rc == ROOST_OK ? render_agents(op) : rc;
}

/* A page rendered on the worker (op->out: the agents, the quarantine list) is the answer. */
static void done_page(struct job *job)
{
    struct admin_op *op = (struct admin_op *)job;
    request_reply_rendered(op->rq, job->rc, &op->out);
}

void api_admin_agents(struct request *rq)
{
    int64_t limit;
    int rc = request_param_int(rq, "limit", 100, ROOST_ELIMIT, &limit);
    if (rc) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    const char *next = request_param_str(rq, "next", &rc);
    struct admin_op *op = rc ? NULL : admin_op_new(rq);
    if (rc) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    if (!op) {
        return;
    }
    const char *sort = request_param_str(rq, "sort", &rc);
    if (rc != ROOST_OK) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    if ((sort && strcmp(sort, "agent") != 0 && strcmp(sort, "depth") != 0 &&
         strcmp(sort, "age") != 0)) {
        request_reply_error(rq, ROOST_EQUERY, "sort must be agent, depth or age", NULL);
        return;
    }
    op->sort = STORE_SORT_AGENT;
    if (sort && strcmp(sort, "depth") == 0) {
        op->sort = STORE_SORT_DEPTH;
    } else if (sort && strcmp(sort, "age") == 0) {
        op->sort = STORE_SORT_AGE;
    }
    if (next && op->sort != STORE_SORT_AGENT) {
        if (parse_offset_token(next, &op->offset) != ROOST_OK) {
            request_reply_error(rq, ROOST_EPAGE, NULL, NULL);
            return;
        }
    } else if (next && parse_page_token(next, false, op->after_agent, NULL) != ROOST_OK) {
        request_reply_error(rq, ROOST_EPAGE, NULL, NULL);
        return;
    }
    op->limit = limit;
    op->agents = calloc((size_t)limit, sizeof *op->agents);
    if (!op->agents || sse_hub_tenant_streams(rq->rt->sse, rq->principal.tenant_id, &op->streams,
                                              &op->n_streams) != ROOST_OK) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    /* A scan (it may rank every agent of the tenant, up to limits.admin_scan_ms): the scan
     * readers run it, never those serving inbox reads. */
    admin_submit(op, run_agents, done_page, ADMIN_SCAN);
}

/* ---- GET /admin/quarantine ---- */

/* Renders the page on the worker, so a large one (up to limits.max_response_bytes) never holds
 * the loop thread. The byte budget may end the page before the store's limit did: the next page
 * then starts after the last event shown. */
static int render_quarantine(struct admin_op *op)
{
    size_t n = 0;
    op->out = events_json_new(&op->events, false, true, op->max_bytes, &n);
    bool more = op->has_more || n < op->events.len;
    const struct store_event *last = n ? &op->events.items[n - 1] : NULL;
    json_t *next = more && last ? page_token(last->agent_id, last->seq, true) : json_null();
    char *next_text = next ? json_dumps(next, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(next);
    if (op->out && (!next_text || evbuffer_add_printf(op->out, ",\"next\":%s}", next_text) < 0)) {
        evbuffer_free(op->out);
        op->out = NULL;
    }
    free(next_text);
    return op->out ? ROOST_OK : ROOST_ENOMEM;
}

static int run_quarantine(struct job *job, struct store *st)
{
    struct admin_op *op = (struct admin_op *)job;
    store_events_cleanup(&op->events);
    if (op->out) {
        evbuffer_free(op->out);
        op->out = NULL;
    }
    int rc = store_call(st, quarantine_list, op->rq->principal.tenant_id,
                        op->agent_filter[0] ? op->agent_filter : NULL, op->after_agent,
                        op->after_seq, (size_t)op->limit, &op->events, &op->has_more);
    return rc == ROOST_OK ? render_quarantine(op) : rc;
}

void api_admin_quarantine(struct request *rq)
{
    int64_t limit;
    int rc = request_param_int(rq, "limit", 100, ROOST_ELIMIT, &limit);
    if (rc) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    int rc1, rc2;
    const char *agent = request_param_str(rq, "agent_id", &rc1);
    const char *next = request_param_str(rq, "next", &rc2);
    if (rc1 || rc2) {
        request_reply_error(rq, rc1 ? rc1 : rc2, NULL, NULL);
        return;
    }
    if (agent && !ids_valid_name(agent, strlen(agent))) {
        request_reply_error(rq, ROOST_EAGENTID, NULL, NULL);
        return;
    }
    struct admin_op *op = admin_op_new(rq);
    if (!op) {
        return;
    }
    if (next && parse_page_token(next, true, op->after_agent, &op->after_seq) != ROOST_OK) {
        request_reply_error(rq, ROOST_EPAGE, NULL, NULL);
        return;
    }
    snprintf(op->agent_filter, sizeof op->agent_filter, "%s", agent ? agent : "");
    op->limit = limit;
    op->max_bytes = (size_t)rq->rt->cfg->limits_max_response_bytes;
    admin_submit(op, run_quarantine, done_page, ADMIN_SCAN);
}

/* ---- POST /admin/quarantine/{event_id}/requeue ---- */

static int run_requeue(struct job *job, struct store *st)
{
    struct admin_op *op = (struct admin_op *)job;
    store_touches_cleanup(&op->touches);
    return store_call(st, requeue, op->rq->principal.tenant_id, op->rq->event_id, time_now_ms(),
                      &op->touches);
}

static void done_requeue(struct job *job)
{
    struct admin_op *op = (struct admin_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    runtime_notify(op->rq->rt, &op->touches);
    request_reply_json(op->rq, 200,
                       json_pack("{s:s, s:s}", "event_id", op->rq->event_id, "status", "pending"));
}

void api_admin_requeue(struct request *rq)
{
    if (json_object_size(rq->body) != 0) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, "requeue takes no body", NULL);
        return;
    }
    struct admin_op *op = admin_op_new(rq);
    if (op) {
        admin_submit(op, run_requeue, done_requeue, ADMIN_WRITE);
    }
}

/* ---- POST /admin/quarantine/requeue ---- */

/* The bulk redrive: up to `limit` quarantined events (oldest first, optionally of one agent) back
 * to pending, in the one transaction of this write job, so a request's work is bounded and a
 * replayed job starts over from nothing. An event that changed under us is skipped. */
static int run_requeue_all(struct job *job, struct store *st)
{
    struct admin_op *op = (struct admin_op *)job;
    const char *tenant = op->rq->principal.tenant_id;
    store_touches_cleanup(&op->touches);
    store_events_cleanup(&op->events);
    op->requeued = 0;
    op->has_more = false;
    int rc = store_call(st, quarantine_list, tenant, op->agent_filter[0] ? op->agent_filter : NULL,
                        "", -1, (size_t)op->limit, &op->events, &op->has_more);
    int64_t now = time_now_ms();
    for (size_t i = 0; rc == ROOST_OK && i < op->events.len; i++) {
        rc = store_call(st, requeue, tenant, op->events.items[i].event_id, now, &op->touches);
        if (rc == ROOST_OK) {
            op->requeued++;
        } else if (rc == ROOST_ESTATE || rc == ROOST_EEVENTNOTFOUND) {
            rc = ROOST_OK;
        }
    }
    return rc;
}

static void done_requeue_all(struct job *job)
{
    struct admin_op *op = (struct admin_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    runtime_notify(op->rq->rt, &op->touches);
    /* "more": quarantined events remain past this call's limit; call again. */
    request_reply_json(
        op->rq, 200,
        json_pack("{s:I, s:b}", "requeued", (json_int_t)op->requeued, "more", op->has_more));
}

/* The body of the bulk operations, {"agent_id"?, "limit"?}: agent_id must be a valid agent id;
 * limit (read only when with_limit) lies in 1..max, dflt when absent. False: answered already. */
static bool body_agent_limit(struct request *rq, bool with_limit, int64_t dflt, const char **agent,
                             int64_t *limit)
{
    if (!with_limit && json_object_size(rq->body) == 0) {
        *agent = NULL; /* the purge of one event: no body, nothing declared to read */
        return true;
    }
    const char *bad = NULL;
    if (body_param_only(rq, rq->body, "", &bad) != ROOST_OK) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, NULL, json_pack("{s:s}", "field", bad));
        return false;
    }
    if (body_param_str(rq, rq->body, "agent_id", ROOST_EAGENTID, agent) != ROOST_OK ||
        (*agent && !ids_valid_name(*agent, strlen(*agent)))) {
        request_reply_error(rq, ROOST_EAGENTID, NULL, NULL);
        return false;
    }
    int rc;
    if (with_limit && (rc = body_param_int(rq, rq->body, "limit", dflt, ROOST_ELIMIT, limit))) {
        request_reply_error(rq, rc, NULL, NULL);
        return false;
    }
    return true;
}

void api_admin_requeue_all(struct request *rq)
{
    const char *agent = NULL;
    int64_t limit = 0;
    if (!body_agent_limit(rq, true, 100, &agent, &limit)) {
        return;
    }
    struct admin_op *op = admin_op_new(rq);
    if (!op) {
        return;
    }
    snprintf(op->agent_filter, sizeof op->agent_filter, "%s", agent ? agent : "");
    op->limit = limit;
    admin_submit(op, run_requeue_all, done_requeue_all, ADMIN_WRITE);
}

/* ---- GET /admin/quarantine/{event_id} ---- */

/* The event of the route's {event_id}, any status (inspect and the event by id). */
static int run_event(struct job *job, struct store *st)
{
    struct admin_op *op = (struct admin_op *)job;
    store_event_cleanup(&op->event);
    memset(&op->event, 0, sizeof op->event);
    return store_call(st, event_get, op->rq->principal.tenant_id, op->rq->event_id, &op->event);
}

static void done_inspect(struct job *job)
{
    struct admin_op *op = (struct admin_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    /* Only quarantined events are in the quarantine: anything else is not found here. */
    if (op->event.status != STORE_QUARANTINED) {
        request_reply_error(op->rq, ROOST_EEVENTNOTFOUND, "the event is not quarantined",
                            json_pack("{s:s}", "status", store_status_name(op->event.status)));
        return;
    }
    json_t *o = event_to_json(&op->event, false, true);
    if (o != NULL) {
        json_object_set_new(o, "consumer", json_string(op->event.consumer));
        json_object_set_new(o, "claimed_at", time_json(op->event.claimed_at_ms));
    }
    request_reply_json(op->rq, 200, o);
}

void api_admin_quarantine_inspect(struct request *rq)
{
    struct admin_op *op = admin_op_new(rq);
    if (op) {
        admin_submit(op, run_event, done_inspect, ADMIN_READ);
    }
}

/* ---- POST /admin/quarantine/purge and /admin/quarantine/{event_id}/purge ---- */

static int run_purge(struct job *job, struct store *st)
{
    struct admin_op *op = (struct admin_op *)job;
    op->purged = 0;
    return store_call(st, quarantine_purge, op->rq->principal.tenant_id,
                      op->agent_filter[0] ? op->agent_filter : NULL,
                      op->purge_one ? op->rq->event_id : NULL, (size_t)op->limit, &op->purged);
}

static void done_purge(struct job *job)
{
    struct admin_op *op = (struct admin_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    /* "more": the call hit its limit, so quarantined rows may remain; call again. */
    request_reply_json(op->rq, 200,
                       json_pack("{s:I, s:b}", "purged", (json_int_t)op->purged, "more",
                                 !op->purge_one && (int64_t)op->purged == op->limit));
}

void api_admin_purge(struct request *rq)
{
    bool one = rq->event_id[0] != '\0';
    if (one && json_object_size(rq->body) != 0) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, "purge of one event takes no body", NULL);
        return;
    }
    const char *agent = NULL;
    int64_t limit = 1;
    if (!body_agent_limit(rq, !one, 1000, &agent, &limit)) {
        return;
    }
    struct admin_op *op = admin_op_new(rq);
    if (!op) {
        return;
    }
    snprintf(op->agent_filter, sizeof op->agent_filter, "%s", agent ? agent : "");
    op->purge_one = one;
    op->limit = limit;
    admin_submit(op, run_purge, done_purge, ADMIN_WRITE);
}

/* ---- GET /admin/stats ---- */

/* Served from the metrics snapshot (refreshed every metrics.refresh_ms), so operators polling
 * stats cost no query; "as_of" says how fresh the numbers are. */
void api_admin_stats(struct request *rq)
{
    struct runtime *rt = rq->rt;
    int64_t age_ms = 0, now = time_now_ms();
    bool truncated = false;
    if (!metrics_snapshot_info(rt->metrics, &age_ms, &truncated)) {
        request_reply_error(rq, ROOST_EUNAVAILABLE, "statistics are not ready yet", NULL);
        return;
    }
    /* A tenant without unfinished rows is not in the snapshot: all zero. */
    const struct store_metrics_tenant zero = {{0}, 0, 0, 0, 0, 0, 0};
    const struct store_metrics_tenant *t = metrics_tenant(rt->metrics, rq->principal.tenant_id);
    if (t == NULL) {
        t = &zero;
    }
    json_t *o = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:o, s:o, s:I, s:o, s:b}", "tenant", rq->principal.tenant_id,
        "pending", (json_int_t)t->pending, "scheduled", (json_int_t)t->scheduled, "claimed",
        (json_int_t)t->claimed, "quarantined", (json_int_t)t->quarantined, "oldest_pending_age_s",
        t->oldest_pending_ms ? json_real((double)(now - t->oldest_pending_ms) / 1000.0)
                             : json_null(),
        "oldest_claim_age_s",
        t->oldest_claimed_ms ? json_real((double)(now - t->oldest_claimed_ms) / 1000.0)
                             : json_null(),
        "subscribers", (json_int_t)sse_hub_count_of(rt->sse, rq->principal.tenant_id, NULL),
        "as_of", time_json(now - age_ms), "complete", !truncated);
    request_reply_json(rq, 200, o);
}

/* ---- GET /admin/events/{event_id} and /admin/events?correlation_id= ---- */

/* An event as an operator inspects it: every audit field, its last consumer and when it was
 * claimed, and its lease while claimed, the token shortened (an operator sees whose lease it
 * is, never a token that could ack or release). */
static json_t *event_detail(const struct store_event *ev, bool with_payload, int64_t now)
{
    json_t *o = event_to_json(ev, false, true);
    if (o == NULL) {
        return NULL;
    }
    if (!with_payload) {
        json_object_del(o, "payload");
    }
    json_object_set_new(o, "consumer", ev->consumer[0] ? json_string(ev->consumer) : json_null());
    json_object_set_new(o, "claimed_at", time_json(ev->claimed_at_ms));
    json_t *lease = json_null();
    if (ev->status == STORE_CLAIMED) {
        char shown[LEASE_TOKEN_SHOWN + 4];
        snprintf(shown, sizeof shown, "%.*s…", LEASE_TOKEN_SHOWN, ev->lease_token);
        lease = json_pack("{s:s, s:o, s:o, s:o, s:I}", "token", shown, "consumer",
                          ev->consumer[0] ? json_string(ev->consumer) : json_null(), "claimed_at",
                          time_json(ev->claimed_at_ms), "expires_at",
                          time_json(ev->claim_expires_at_ms), "expires_in_ms",
                          (json_int_t)(ev->claim_expires_at_ms - now));
    }
    json_object_set_new(o, "lease", lease ? lease : json_null());
    return o;
}

static void done_event(struct job *job)
{
    struct admin_op *op = (struct admin_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    request_reply_json(op->rq, 200, event_detail(&op->event, true, time_now_ms()));
}

void api_admin_event_get(struct request *rq)
{
    struct admin_op *op = admin_op_new(rq);
    if (op) {
        admin_submit(op, run_event, done_event, ADMIN_READ);
    }
}

static int run_find(struct job *job, struct store *st)
{
    struct admin_op *op = (struct admin_op *)job;
    store_events_cleanup(&op->events);
    return store_call(st, events_by_correlation, op->rq->principal.tenant_id, op->correlation_id,
                      op->after_agent, op->after_seq, (size_t)op->limit, &op->events,
                      &op->has_more);
}

static void done_find(struct job *job)
{
    struct admin_op *op = (struct admin_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    json_t *events = json_array();
    int64_t now = time_now_ms();
    for (size_t i = 0; i < op->events.len; i++) {
        json_array_append_new(events, event_detail(&op->events.items[i], false, now));
    }
    const struct store_event *last = op->events.len ? &op->events.items[op->events.len - 1] : NULL;
    json_t *next = op->has_more && last ? page_token(last->agent_id, last->seq, true) : json_null();
    request_reply_json(op->rq, 200, json_pack("{s:o, s:o}", "events", events, "next", next));
}

void api_admin_events_find(struct request *rq)
{
    int64_t limit;
    int rc = request_param_int(rq, "limit", 20, ROOST_ELIMIT, &limit);
    if (rc) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    int rc1, rc2;
    const char *corr = request_param_str(rq, "correlation_id", &rc1);
    const char *next = request_param_str(rq, "next", &rc2);
    if (rc1 || rc2) {
        request_reply_error(rq, rc1 ? rc1 : rc2, NULL, NULL);
        return;
    }
    size_t clen = corr ? strlen(corr) : 0;
    if (clen == 0 || clen > STORE_SHORT_TEXT_MAX) {
        request_reply_error(rq, ROOST_ECORRELATION,
                            corr ? "correlation_id must be 1 to 256 bytes"
                                 : "correlation_id is required (an event by id: "
                                   "/api/v1/admin/events/{event_id})",
                            json_pack("{s:s}", "param", "correlation_id"));
        return;
    }
    struct admin_op *op = admin_op_new(rq);
    if (!op) {
        return;
    }
    if (next && parse_page_token(next, true, op->after_agent, &op->after_seq) != ROOST_OK) {
        request_reply_error(rq, ROOST_EPAGE, NULL, NULL);
        return;
    }
    memcpy(op->correlation_id, corr, clen + 1);
    op->limit = limit;
    /* An index walk of at most limit + 1 rows, on the readers like an event by id. */
    admin_submit(op, run_find, done_find, ADMIN_READ);
}

/* ---- GET /admin/history ---- */

static void add_sample(void *arg, const struct history_sample *s)
{
    json_t *o = json_pack("{s:o, s:I, s:i, s:i, s:i, s:i}", "at", time_json(s->at_ms), "at_ms",
                          (json_int_t)s->at_ms, "pending", s->pending, "scheduled", s->scheduled,
                          "claimed", s->claimed, "quarantined", s->quarantined);
    if (o != NULL) {
        json_object_set_new(o, "oldest_pending_age_s",
                            s->oldest_pending_age_s >= 0 ? json_integer(s->oldest_pending_age_s)
                                                         : json_null());
        json_array_append_new(arg, o);
    }
}

/* The tenant's chart samples from this node's memory (history.h): no store query. */
void api_admin_history(struct request *rq)
{
    int64_t after_ms;
    int rc = request_param_int(rq, "after_ms", 0, ROOST_EQUERY, &after_ms);
    if (rc) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    json_t *samples = json_array();
    history_each(metrics_history(rq->rt->metrics), rq->principal.tenant_id, after_ms, add_sample,
                 samples);
    int64_t every = rq->rt->cfg->metrics_refresh_ms;
    request_reply_json(
        rq, 200,
        json_pack("{s:s, s:I, s:i, s:o}", "tenant", rq->principal.tenant_id, "interval_ms",
                  (json_int_t)(every > HISTORY_MIN_GAP_MS ? every : HISTORY_MIN_GAP_MS),
                  "max_samples", HISTORY_SAMPLES, "samples", samples));
}
