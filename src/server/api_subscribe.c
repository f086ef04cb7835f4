/* SPDX-License-Identifier: MIT */
/* GET /api/v1/agents/{agent}/subscribe: checks the stream limits, reads the agent's head on a
 * reader worker, then hands the connection to the SSE hub (sse_hub.c), which owns it from then on.
 */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "server/api.h"
#include "server/auth.h"
#include "server/config.h"
#include "server/ratelimit.h"
#include "server/request.h"
#include "server/runtime.h"
#include "server/sse_hub.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"
#include "common/strutil.h"

struct subscribe_op {
    struct job job;
    struct request *rq;
    int64_t head;
    int64_t last_event_id; /* -1 when absent */
};

/* How long a used ticket's nonce is kept past the ticket's expiry: the clock-skew allowance, so a
 * node whose clock lags still finds it. */
#define TICKET_NONCE_SKEW_MS 60000

static int run_head(struct job *job, struct store *st)
{
    struct subscribe_op *op = (struct subscribe_op *)job;
    const struct auth_principal *p = &op->rq->principal;
    if (p->ticket_nonce[0] != '\0') {
        /* Single use on every node sharing the store: the first claim of the nonce wins. */
        int rc = store_call(st, nonce_claim, p->tenant_id, AUTH_TICKET_KEY_ID, p->ticket_nonce,
                            p->ticket_exp_ms + TICKET_NONCE_SKEW_MS, time_now_ms());
        if (rc != ROOST_OK) {
            return rc == ROOST_ENONCEREUSED ? ROOST_EUNAUTHENTICATED : rc;
        }
    }
    /* An agent that opens a stream is seen (agents.last_seen_at, at most once a minute). */
    int rc = store_call(st, agent_seen, p->tenant_id, op->rq->agent_id, time_now_ms());
    return rc == ROOST_OK ? store_call(st, head, p->tenant_id, op->rq->agent_id, &op->head) : rc;
}

static void done_head(struct job *job)
{
    struct subscribe_op *op = (struct subscribe_op *)job;
    struct request *rq = op->rq;
    struct sse_hub *hub = rq->rt->sse;
    const char *tenant_id = rq->principal.tenant_id;
    const char *limit = NULL;
    int rc = job->rc;
    if (rc == ROOST_OK && rq->rt->draining) {
        rc = ROOST_ESHUTDOWN;
    }
    /* Limits again: other streams may have opened while the head was read. */
    if (rc == ROOST_OK && (limit = sse_hub_over_limit(hub, tenant_id, rq->agent_id)) != NULL) {
        rc = ROOST_ERATELIMIT;
    }
    if (rc == ROOST_OK) {
        rc = sse_hub_open(hub, rq->req, rq->id, tenant_id, rq->agent_id, op->head,
                          op->last_event_id, rq->principal.exp_ms);
    }
    sse_hub_opening_end(hub, tenant_id, rq->agent_id);
    if (rc != ROOST_OK) {
        request_reply_error(rq, rc, limit, NULL);
        return;
    }
    /* The request is now a stream: it leaves the in-flight count, the hub owns the connection. */
    rq->req = NULL;
    request_detach(rq);
}

void api_subscribe(struct request *rq)
{
    struct sse_hub *hub = rq->rt->sse;
    static const char *const known[] = {"access_token", "ticket", NULL};
    if (!request_query_only(rq, known)) {
        return;
    }
    const char *limit = sse_hub_over_limit(hub, rq->principal.tenant_id, rq->agent_id);
    if (limit) {
        request_reply_error(rq, ROOST_ERATELIMIT, limit, NULL);
        return;
    }
    struct subscribe_op *op = request_op_new(rq, sizeof *op, free);
    if (op == NULL) {
        return;
    }
    op->rq = rq;
    op->last_event_id = -1;
    const char *leid =
        evhttp_find_header(evhttp_request_get_input_headers(rq->req), "Last-Event-ID");
    if (leid) {
        int64_t v;
        if (strutil_parse_i64(leid, strlen(leid), 0, INT64_MAX, &v) == 0) {
            op->last_event_id = v; /* anything else is ignored, as EventSource ids are opaque */
        }
    }
    /* From here on a commit's ping for the agent is kept for the stream, even one that lands
     * after the head is read and before the stream is open. */
    if (sse_hub_opening_begin(hub, rq->principal.tenant_id, rq->agent_id) != ROOST_OK) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    /* A write: a ticket's nonce claim, and the agent's last_seen_at. */
    op->job = (struct job){.run = run_head,
                           .done = done_head,
                           .write = true,
                           .name = request_job_kind(rq),
                           .tenant = workers_tenant_key(rq->principal.tenant_id)};
    workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &op->job);
}

void api_subscribe_ticket(struct request *rq)
{
    char ticket[AUTH_TICKET_MAX_BYTES + 1];
    char when[40];
    int64_t expires_ms = 0;
    const char *bad = NULL;
    if (rq->query && rq->query->tqh_first) {
        request_reply_error(rq, ROOST_EQUERY, "unknown query parameter", NULL);
        return;
    }
    if (body_param_only(rq, rq->body, "", &bad) != ROOST_OK) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, NULL, json_pack("{s:s}", "field", bad));
        return;
    }
    /* Minting costs a signature and leaves a nonce to remember: a tenant gets its rate. */
    double rate = (double)rq->rt->cfg->limits_tickets_per_s;
    int64_t wait_s = ratelimit_take(rq->rt->ticket_rl, rq->principal.tenant_id, rate, 2 * rate, 1,
                                    time_mono_ms());
    if (wait_s > 0) {
        request_set_retry_after(rq, wait_s);
        request_reply_error(rq, ROOST_ERATELIMIT,
                            "this tenant mints tickets faster than limits.tickets_per_s", NULL);
        return;
    }
    int64_t now_ms = time_now_ms();
    int rc = auth_ticket_issue(rq->rt->auth, &rq->principal, rq->agent_id, now_ms,
                               rq->rt->cfg->auth_ticket_ttl_s, ticket, sizeof ticket, &expires_ms);
    if (rc != ROOST_OK) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    time_format_rfc3339(expires_ms, when);
    request_reply_json(rq, 201,
                       json_pack("{s:s, s:s, s:I}", "ticket", ticket, "expires_at", when,
                                 "expires_in_s", (json_int_t)((expires_ms - now_ms + 999) / 1000)));
}
