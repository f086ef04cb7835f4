/* SPDX-License-Identifier: MIT */
/* GET /api/v1/agents/{agent}/subscribe: checks the stream limits, reads the agent's head on a
 * reader worker, then hands the connection to the SSE hub (sse_hub.c), which owns it from then on.
 */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/api.h"
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

static int run_head(struct job *job, struct store *st)
{
    struct subscribe_op *op = (struct subscribe_op *)job;
    return store_call(st, head, op->rq->principal.tenant_id, op->rq->agent_id, &op->head);
}

static void done_head(struct job *job)
{
    struct subscribe_op *op = (struct subscribe_op *)job;
    struct request *rq = op->rq;
    struct runtime *rt = rq->rt;
    struct sse_hub *hub = rt->sse;
    if (job->rc != ROOST_OK) {
        request_reply_error(rq, job->rc, NULL, NULL);
        return;
    }
    if (rt->draining) {
        request_reply_error(rq, ROOST_ESHUTDOWN, NULL, NULL);
        return;
    }
    /* Limits again: other streams may have opened while the head was read. */
    const char *limit = sse_hub_over_limit(hub, rq->principal.tenant_id, rq->agent_id);
    if (limit) {
        request_reply_error(rq, ROOST_ERATELIMIT, limit, NULL);
        return;
    }
    int rc = sse_hub_open(hub, rq->req, rq->id, rq->principal.tenant_id, rq->agent_id, op->head,
                          op->last_event_id, rq->principal.exp_ms);
    if (rc != ROOST_OK) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    /* The request is now a stream: it leaves the in-flight count, the hub owns the connection. */
    rq->req = NULL;
    request_detach(rq);
}

void api_subscribe(struct request *rq)
{
    struct sse_hub *hub = rq->rt->sse;
    static const char *const known[] = {"access_token", NULL};
    for (struct evkeyval *kv = rq->query ? rq->query->tqh_first : NULL; kv;
         kv = kv->next.tqe_next) {
        bool ok = false;
        for (const char *const *k = known; *k; k++) {
            ok = ok || strcmp(*k, kv->key) == 0;
        }
        if (!ok) {
            request_reply_error(rq, ROOST_EQUERY, "unknown query parameter",
                                json_pack("{s:s}", "param", kv->key));
            return;
        }
    }
    const char *limit = sse_hub_over_limit(hub, rq->principal.tenant_id, rq->agent_id);
    if (limit) {
        request_reply_error(rq, ROOST_ERATELIMIT, limit, NULL);
        return;
    }
    struct subscribe_op *op = calloc(1, sizeof *op);
    if (!op) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    op->rq = rq;
    rq->op = op;
    rq->op_free = free;
    op->last_event_id = -1;
    const char *leid =
        evhttp_find_header(evhttp_request_get_input_headers(rq->req), "Last-Event-ID");
    if (leid) {
        int64_t v;
        if (strutil_parse_i64(leid, strlen(leid), 0, INT64_MAX, &v) == 0) {
            op->last_event_id = v; /* anything else is ignored, as EventSource ids are opaque */
        }
    }
    op->job = (struct job){.run = run_head, .done = done_head, .write = false};
    workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &op->job);
}
