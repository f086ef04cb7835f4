/* SPDX-License-Identifier: MIT */
/* The operational endpoints outside the route table: GET /healthz (the process answers),
 * GET /readyz (every store answers through its worker pool, and the server is not draining) and
 * GET /metrics (Prometheus text: behind metrics.token, or to loopback peers only without one). */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api.h"
#include "server/config.h"
#include "server/metrics.h"
#include "server/request.h"
#include "server/runtime.h"
#include "server/sse_hub.h"
#include "server/waiters.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

/* Constant time over the expected length: the token's bytes must not leak through timing. */
static bool token_equal(const char *got, const char *want)
{
    size_t n = strlen(want), m = strlen(got);
    unsigned char diff = (unsigned char)(n != m);
    for (size_t i = 0; i < n; i++) {
        diff |= (unsigned char)(want[i] ^ (i < m ? got[i] : 0));
    }
    return diff == 0;
}

/* GET /metrics: Prometheus text from counters and the last snapshot; no store access here. */
void api_metrics(struct request *rq)
{
    struct runtime *rt = rq->rt;
    const char *want = rt->cfg->metrics_token;
    if (evhttp_request_get_command(rq->req) != EVHTTP_REQ_GET) {
        request_reply_text(rq, 405, "method not allowed\n");
        return;
    }
    if (want == NULL || want[0] == '\0') {
        /* No token: the per-tenant gauges are for this host only (a scraper on loopback, or a
         * reverse proxy that guards them). */
        if (!request_peer_is_loopback(rq)) {
            request_reply_text(rq, 403, "metrics are served to loopback only: set metrics.token\n");
            return;
        }
    } else {
        const char *authz =
            evhttp_find_header(evhttp_request_get_input_headers(rq->req), "Authorization");
        if (authz == NULL || strncmp(authz, "Bearer ", 7) != 0 || !token_equal(authz + 7, want)) {
            evhttp_add_header(evhttp_request_get_output_headers(rq->req), "WWW-Authenticate",
                              "Bearer realm=\"roost-metrics\"");
            request_reply_text(rq, 401, "unauthorized\n");
            return;
        }
    }
    struct metrics_live live = {.sse_subscribers = sse_hub_count(rt->sse),
                                .long_polls = waiters_parked(rt->waiters)};
    struct evbuffer *buf = evbuffer_new();
    if (buf == NULL || metrics_render(rt->metrics, &live, buf) != 0) {
        if (buf) {
            evbuffer_free(buf);
        }
        request_reply_text(rq, 503, "out of memory\n");
        return;
    }
    request_reply_buffer(rq, 200, "text/plain; version=0.0.4; charset=utf-8", buf);
    evbuffer_free(buf);
}

/* /readyz asks every store (shard) at once; the last answer replies. */
struct ready_op {
    struct request *rq;
    size_t pending, failed;
    struct ready_ping {
        struct job job;
        struct ready_op *op;
    } pings[];
};

static int run_ready(struct job *job, struct store *st)
{
    (void)job;
    return st->ops->ping(st) ? ROOST_OK : ROOST_EUNAVAILABLE;
}

static void done_ready(struct job *job)
{
    struct ready_op *op = ((struct ready_ping *)job)->op;
    op->failed += job->rc != ROOST_OK;
    if (--op->pending == 0) {
        /* Stores with several database hosts say where writes go (doc/MYSQL.md). */
        char text[2048];
        size_t used = (size_t)snprintf(text, sizeof text, "%s",
                                       op->failed == 0 ? "ready\n" : "store unreachable\n");
        struct store_ha_info ha[4];
        size_t n = store_ha_list(ha, sizeof ha / sizeof ha[0]);
        for (size_t i = 0; i < n && i < sizeof ha / sizeof ha[0] && used < sizeof text; i++) {
            int k = snprintf(text + used, sizeof text - used,
                             "store %.300s: writer %s, failovers %llu%s%.200s\n", ha[i].hosts,
                             ha[i].writer[0] != '\0' ? ha[i].writer : "(none usable)",
                             (unsigned long long)ha[i].failovers, ha[i].why[0] ? ", last: " : "",
                             ha[i].why);
            used += k > 0 ? (size_t)k : 0;
        }
        request_reply_text(op->rq, op->failed == 0 ? 200 : 503, text);
    }
}

void api_healthz(struct request *rq)
{
    request_reply_text(rq, 200, "ok\n");
}

/* The store answers a query through the worker pool, so a stuck pool shows too. */
void api_readyz(struct request *rq)
{
    struct runtime *rt = rq->rt;
    if (rt->draining) {
        request_reply_text(rq, 503, "draining\n");
        return;
    }
    struct ready_op *op = calloc(1, sizeof *op + rt->n_shards * sizeof op->pings[0]);
    if (!op) {
        request_reply_text(rq, 503, "out of memory\n");
        return;
    }
    op->rq = rq;
    op->pending = rt->n_shards;
    rq->op = op;
    rq->op_free = free;
    for (size_t i = 0; i < rt->n_shards; i++) {
        op->pings[i].op = op;
        op->pings[i].job =
            (struct job){.run = run_ready, .done = done_ready, .write = false, .name = "ready"};
        workers_submit(rt->shards[i].workers, &op->pings[i].job);
    }
}
