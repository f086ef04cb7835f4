/* SPDX-License-Identifier: MIT */
/* The agent routes: cursor read, peek, claim, ack (single and batch), release, extend, release-all
 * and state. Each handler validates its input on the loop thread, runs one store job on a worker,
 * and answers from the job's done() on the loop thread. Reads and claims may long-poll (wait_s). */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stddef.h>
#include <stdint.h>
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
#include "server/request.h"
#include "server/runtime.h"
#include "server/waiters.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

/* A read of more events than this is bulk: it runs on the scan readers (workers.h), at their lower
 * CPU priority, so one tenant's pages of megabytes never slow another's small reads. */
#define BULK_READ_LIMIT 100

/* State shared by every agent-route job. */
struct inbox_op {
    struct job job;
    struct waiter waiter;
    struct request *rq;
    /* inputs */
    int64_t after_cursor;
    int64_t limit;
    int64_t lease_s;
    int64_t delay_s;
    int64_t deadline_ms;               /* long-poll deadline (monotonic), 0 = no wait */
    int64_t max_attempts, max_total_s; /* from the config, copied on the loop thread */
    size_t max_bytes;                  /* limits.max_response_bytes, copied likewise */
    bool has_more;                     /* claim: the batch ended at limit or at max_bytes */
    bool recheck; /* claim: parked before its deadline's end, its timeout is not its last run */
    uint64_t serial;
    enum store_release_reason reason;
    char lease_token[STORE_LEASE_TOKEN_LEN + 1];
    char consumer[STORE_ID_MAX + 1];
    char *error_text;
    struct {
        char event_id[STORE_EVENT_ID_LEN + 1];
        char lease_token[STORE_LEASE_TOKEN_LEN + 1];
        int rc;
        int64_t available_at_ms;
    } * acks;
    size_t n_acks;
    /* outputs */
    struct store_inbox_page page;
    struct store_events events;
    struct store_touches touches;
    int64_t claim_expires_at_ms;
    int64_t available_at_ms; /* of the event an ack completed (delivery latency), 0 = none */
    enum store_status released_to;
    size_t released;
    char *state;
    int64_t cursor;
    struct evbuffer *out; /* a read's page, rendered on the worker (NULL: none, or no memory) */
};

static void op_free(void *p)
{
    struct inbox_op *op = p;
    waiters_cancel(&op->waiter);
    store_events_cleanup(&op->page.events);
    store_events_cleanup(&op->events);
    store_touches_cleanup(&op->touches);
    free(op->state);
    free(op->error_text);
    free(op->acks);
    if (op->out) {
        evbuffer_free(op->out);
    }
    free(op);
}

static struct inbox_op *op_new(struct request *rq)
{
    struct inbox_op *op = request_op_new(rq, sizeof *op, op_free);
    if (op == NULL) {
        return NULL;
    }
    op->rq = rq;
    return op;
}

/* Makes op's job (its batch, if any, is set by the caller) and takes the agent's waiter serial,
 * which a long poll parks on when the job comes back empty. */
static void job_set(struct inbox_op *op, int (*run)(struct job *, struct store *),
                    void (*done)(struct job *), bool write)
{
    op->job.run = run;
    op->job.done = done;
    op->job.write = write;
    op->job.name = request_job_kind(op->rq);
    op->job.affinity = hash_tenant_agent(op->rq->principal.tenant_id, op->rq->agent_id);
    /* Claims, acks, releases and extends never take the agent's sequence lock (only publishes
     * do): with store.write_overlap they need not follow the agent's publishes to one writer. */
    op->job.no_seq_lock = write;
    op->job.tenant = workers_tenant_key(op->rq->principal.tenant_id);
    op->serial = waiters_serial(op->rq->rt->waiters, op->rq->principal.tenant_id, op->rq->agent_id);
}

static void submit(struct inbox_op *op, int (*run)(struct job *, struct store *),
                   void (*done)(struct job *), bool write)
{
    job_set(op, run, done, write);
    workers_submit(runtime_workers(op->rq->rt, op->rq->principal.tenant_id), &op->job);
}

/* Rejects a body with fields outside `allowed`, naming the field. Returns true when it replied. */
static bool reject_unknown(struct request *rq)
{
    const char *bad = NULL;
    if (body_param_only(rq, rq->body, "", &bad) != ROOST_OK) {
        char msg[200];
        snprintf(msg, sizeof msg, "unknown field '%.100s'", bad);
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, msg, json_pack("{s:s}", "field", bad));
        return true;
    }
    return false;
}

/* `name`: the declared field, "lease_token" or "acks[].lease_token" (routes.c). */
static bool read_lease_token(struct request *rq, const json_t *obj, const char *name, char *out)
{
    const char *token = NULL;
    if (body_param_str(rq, obj, name, ROOST_ELEASETOKEN, &token) != ROOST_OK || token == NULL ||
        !ids_valid_lease_token(token, strlen(token))) {
        request_reply_error(rq, ROOST_ELEASETOKEN, NULL, NULL);
        return false;
    }
    memcpy(out, token, STORE_LEASE_TOKEN_LEN + 1);
    return true;
}

/* ---- long polling ---- */

/* How long a long-polling claim of a drained agent waits for a notify before it asks the store
 * anyway (see api_inbox_claim). */
#define CLAIM_DRAINED_TRUST_MS 1000

static void on_waiter_fire(struct waiter *w, bool timed_out);

static int run_claim(struct job *job, struct store *st);

/* Parks the op until a commit touches its agent or `until` (monotonic ms, at most its deadline)
 * passes; false (nothing parked) when the agent was touched since op->serial. A parked claim may
 * be taken by a publish to the agent (api_inbox_take_claim). */
static bool park(struct inbox_op *op, int64_t until)
{
    op->waiter.fire = on_waiter_fire;
    op->waiter.claim = op->job.run == run_claim;
    return waiters_wait(op->rq->rt->waiters, &op->waiter, op->rq->principal.tenant_id,
                        op->rq->agent_id, op->serial, until);
}

/* After an empty answer: parks the op (see park). Returns false when the caller should answer
 * now (no wait asked, deadline passed) — or re-runs the job itself. */
static bool park_or_rerun(struct inbox_op *op)
{
    if (op->deadline_ms == 0 || time_mono_ms() >= op->deadline_ms || op->rq->rt->draining) {
        return false;
    }
    if (!park(op, op->deadline_ms)) {
        submit(op, op->job.run, op->job.done, op->job.write); /* a commit slipped in: re-run */
    }
    return true;
}

static void on_waiter_fire(struct waiter *w, bool timed_out)
{
    struct inbox_op *op = (struct inbox_op *)((char *)w - offsetof(struct inbox_op, waiter));
    if (timed_out && !op->recheck) {
        op->deadline_ms = 0; /* run once more, then answer whatever it finds */
    }
    op->recheck = false;
    submit(op, op->job.run, op->job.done, op->job.write);
}

/* ---- GET /inbox ---- */

/* The page's answer, built on the worker so a large page (up to limits.max_response_bytes) never
 * holds the loop thread. The store held the page to the byte budget; next_cursor is its last
 * event. NULL when out of memory. */
static struct evbuffer *render_read(const struct inbox_op *op)
{
    size_t n = 0;
    struct evbuffer *out = events_json_new(&op->page.events, false, false, 0, &n);
    if (out &&
        evbuffer_add_printf(out, ",\"next_cursor\":%lld,\"has_more\":%s,\"head\":%lld}",
                            (long long)op->page.next_cursor, op->page.has_more ? "true" : "false",
                            (long long)op->page.head) < 0) {
        evbuffer_free(out);
        out = NULL;
    }
    return out;
}

static int run_read(struct job *job, struct store *st)
{
    struct inbox_op *op = (struct inbox_op *)job;
    store_events_cleanup(&op->page.events);
    memset(&op->page, 0, sizeof op->page);
    if (op->out) {
        evbuffer_free(op->out);
        op->out = NULL;
    }
    int rc = store_call(st, inbox_read, op->rq->principal.tenant_id, op->rq->agent_id,
                        op->after_cursor, (size_t)op->limit, op->max_bytes, &op->page);
    if (rc == ROOST_OK && op->page.events.len > 0 && op->after_cursor <= op->page.head) {
        op->out = render_read(op); /* NULL: done_read answers out_of_memory */
    }
    return rc;
}

static void done_read(struct job *job)
{
    struct inbox_op *op = (struct inbox_op *)job;
    struct request *rq = op->rq;
    if (job->rc == ROOST_EGONE) {
        char resync[200];
        snprintf(resync, sizeof resync, "/api/v1/agents/%s/state", rq->agent_id);
        request_reply_error(rq, ROOST_EGONE, NULL,
                            json_pack("{s:s, s:I}", "resync", resync, "oldest_cursor",
                                      (json_int_t)op->page.oldest_cursor));
        return;
    }
    if (job->rc != ROOST_OK) {
        request_reply_error(rq, job->rc, NULL, NULL);
        return;
    }
    if (op->after_cursor > op->page.head) {
        /* Cursors only ever come from next_cursor, which never passes the head: a cursor beyond
         * it is a client bug or a store restored from an older backup. Say so instead of
         * waiting silently until the head catches up. */
        request_reply_error(rq, ROOST_ECURSOR, "after_cursor is beyond the agent's head",
                            json_pack("{s:I}", "head", (json_int_t)op->page.head));
        return;
    }
    if (op->page.events.len == 0 && park_or_rerun(op)) {
        return;
    }
    struct evbuffer *out = op->page.events.len > 0 ? op->out : render_read(op);
    op->out = NULL;
    request_reply_json_text(rq, 200, out);
}

void api_inbox_read(struct request *rq)
{
    const struct config *cfg = rq->rt->cfg;
    int64_t after, limit, wait_s;
    int rc;
    if ((rc = request_param_int(rq, "after_cursor", 0, ROOST_ECURSOR, &after)) ||
        (rc = request_param_int(rq, "limit", 10, ROOST_ELIMIT, &limit)) ||
        (rc = request_param_int(rq, "wait_s", 0, ROOST_EWAIT, &wait_s))) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    static const char *const known[] = {"after_cursor", "limit", "wait_s", NULL};
    if (!request_query_only(rq, known)) {
        return;
    }
    struct inbox_op *op = op_new(rq);
    if (!op) {
        return;
    }
    op->after_cursor = after;
    op->limit = limit;
    op->max_bytes = (size_t)cfg->limits_max_response_bytes;
    op->deadline_ms = wait_s > 0 ? rq->start_ms + wait_s * 1000 : 0;
    op->job.scan = limit > BULK_READ_LIMIT;
    submit(op, run_read, done_read, false);
}

/* ---- GET /inbox/peek ---- */

/* The event the next claim would take (highest priority, then lowest seq; pending and
 * unexpired), read on a reader connection: nothing is claimed, counted or leased. The answer is
 * rendered on the worker, as a read's page is (its payload may be limits.max_payload_bytes):
 * {"event":{…}} in the inbox read's shape (payload, no lease), or {"event":null} when nothing is
 * claimable (like an empty claim or read, an answer with a body). */
static int run_peek(struct job *job, struct store *st)
{
    struct inbox_op *op = (struct inbox_op *)job;
    struct store_event ev = {0};
    bool found = false;
    if (op->out) {
        evbuffer_free(op->out);
        op->out = NULL;
    }
    int rc = store_call(st, inbox_peek, op->rq->principal.tenant_id, op->rq->agent_id,
                        time_now_ms(), &ev, &found);
    if (rc == ROOST_OK) {
        static const char head[] = "{\"event\":", none[] = "{\"event\":null}";
        struct evbuffer *out = evbuffer_new();
        if (out && (found ? evbuffer_add(out, head, sizeof head - 1) != 0 ||
                                event_json_append(out, &ev, false, false) != ROOST_OK ||
                                evbuffer_add(out, "}", 1) != 0
                          : evbuffer_add(out, none, sizeof none - 1) != 0)) {
            evbuffer_free(out);
            out = NULL;
        }
        op->out = out; /* NULL: done_peek answers out_of_memory */
    }
    if (found) {
        store_event_cleanup(&ev);
    }
    return rc;
}

static void done_peek(struct job *job)
{
    struct inbox_op *op = (struct inbox_op *)job;
    request_reply_rendered(op->rq, job->rc, &op->out);
}

void api_inbox_peek(struct request *rq)
{
    if (!request_query_only(rq, NULL)) {
        return;
    }
    struct inbox_op *op = op_new(rq);
    if (!op) {
        return;
    }
    submit(op, run_peek, done_peek, false);
}

/* ---- POST /inbox/claim ---- */

static int run_claim(struct job *job, struct store *st)
{
    struct inbox_op *op = (struct inbox_op *)job;
    store_events_cleanup(&op->events);
    return store_call(st, claim, op->rq->principal.tenant_id, op->rq->agent_id, (size_t)op->limit,
                      op->max_bytes, op->lease_s, op->consumer, time_now_ms(), &op->events,
                      &op->has_more);
}

/* A group's claims as one batch: several claims of one agent share one candidate read
 * (store_claim_batch). */
static int run_claim_batch(struct job *const *jobs, size_t n, struct store *st)
{
    struct store_claim_entry *entries = calloc(n, sizeof *entries);
    if (entries == NULL) {
        return ROOST_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        struct inbox_op *op = (struct inbox_op *)jobs[i];
        store_events_cleanup(&op->events);
        entries[i] = (struct store_claim_entry){.tenant_id = op->rq->principal.tenant_id,
                                                .agent_id = op->rq->agent_id,
                                                .limit = (size_t)op->limit,
                                                .max_bytes = op->max_bytes,
                                                .lease_s = op->lease_s,
                                                .consumer = op->consumer,
                                                .out = &op->events};
    }
    int rc = store_claim_batch(st, entries, n, time_now_ms());
    for (size_t i = 0; i < n; i++) {
        struct inbox_op *op = (struct inbox_op *)jobs[i];
        jobs[i]->rc = entries[i].rc;
        op->has_more = entries[i].has_more;
    }
    free(entries);
    return rc;
}

static const struct job_batch claim_batch = {.run = run_claim_batch};

static void done_claim(struct job *job)
{
    struct inbox_op *op = (struct inbox_op *)job;
    struct request *rq = op->rq;
    if (job->followed) {
        /* It ran in its publish's transaction, whose notify (that job's done, just before this)
         * moved the agent's serial once: what it saw is the agent as of that serial. */
        job->followed = false;
        op->serial++;
        if (job->rc == ROOST_OK) {
            metrics_claim_with_publish(rq->rt->metrics);
        }
    }
    if (job->rc != ROOST_OK) {
        request_reply_error(rq, job->rc, NULL, NULL);
        return;
    }
    if (!op->has_more) {
        /* It took every claimable event, or found none (has_more: it stopped at its limit). */
        waiters_note_drained(rq->rt->waiters, rq->principal.tenant_id, rq->agent_id, op->serial);
    }
    if (op->events.len == 0 && park_or_rerun(op)) {
        return;
    }
    /* Every claimed event must reach the client (each holds a lease): the store applied the
     * budget, the rendering applies none. If the answer cannot be built, the leases simply
     * expire and the events come back. */
    size_t n = 0;
    struct evbuffer *out = events_json_new(&op->events, true, false, 0, &n);
    static const char more[] = ",\"has_more\":true}", last[] = ",\"has_more\":false}";
    if (out && (op->has_more ? evbuffer_add(out, more, sizeof more - 1)
                             : evbuffer_add(out, last, sizeof last - 1)) != 0) {
        evbuffer_free(out);
        out = NULL;
    }
    request_reply_json_text(rq, 200, out);
}

void api_inbox_claim(struct request *rq)
{
    const struct config *cfg = rq->rt->cfg;
    if (reject_unknown(rq)) {
        return;
    }
    int64_t limit, lease_s, wait_s;
    const char *consumer = NULL;
    int rc;
    if ((rc = body_param_int(rq, rq->body, "limit", 10, ROOST_ELIMIT, &limit)) ||
        (rc = body_param_int(rq, rq->body, "lease_s", cfg->lease_default_s, ROOST_ELEASE,
                             &lease_s)) ||
        (rc = body_param_int(rq, rq->body, "wait_s", 0, ROOST_EWAIT, &wait_s)) ||
        (rc = body_param_str(rq, rq->body, "consumer", ROOST_ECONSUMER, &consumer))) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    if (consumer && !ids_valid_consumer(consumer, strlen(consumer))) {
        request_reply_error(rq, ROOST_ECONSUMER, NULL, NULL);
        return;
    }
    struct inbox_op *op = op_new(rq);
    if (!op) {
        return;
    }
    op->limit = limit;
    op->max_bytes = (size_t)cfg->limits_max_response_bytes;
    op->lease_s = lease_s;
    snprintf(op->consumer, sizeof op->consumer, "%s", consumer ? consumer : "");
    op->deadline_ms = wait_s > 0 ? rq->start_ms + wait_s * 1000 : 0;
    op->job.batch = &claim_batch;
    job_set(op, run_claim, done_claim, true);
    if (op->deadline_ms != 0 && !rq->rt->draining &&
        waiters_known_drained(rq->rt->waiters, rq->principal.tenant_id, rq->agent_id)) {
        /* The agent's last claim left nothing claimable and nothing touched it since: wait for
         * the touch before asking the store (waiters.h, drained agents), but ask after
         * CLAIM_DRAINED_TRUST_MS at the latest, so that a change whose notify never came (a
         * concurrent claim rolled back, another node's tail stalled) waits that long, not wait_s.
         */
        int64_t until = time_mono_ms() + CLAIM_DRAINED_TRUST_MS;
        op->recheck = until < op->deadline_ms;
        if (park(op, op->recheck ? until : op->deadline_ms)) {
            return;
        }
        op->recheck = false;
    }
    workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &op->job);
}

struct job *api_inbox_take_claim(struct runtime *rt, const char *tenant_id, const char *agent_id)
{
    struct waiter *w = rt->draining ? NULL : waiters_take_claim(rt->waiters, tenant_id, agent_id);
    if (w == NULL) {
        return NULL;
    }
    struct inbox_op *op = (struct inbox_op *)((char *)w - offsetof(struct inbox_op, waiter));
    op->recheck = false;
    job_set(op, run_claim, done_claim, true);
    return &op->job;
}

/* ---- POST /inbox/{event_id}/ack ---- */

static int run_ack(struct job *job, struct store *st)
{
    struct inbox_op *op = (struct inbox_op *)job;
    return store_call(st, ack, op->rq->principal.tenant_id, op->rq->agent_id, op->rq->event_id,
                      op->lease_token, time_now_ms(), &op->available_at_ms);
}

/* A group's single-event acks as one batch: one shared statement (store_ack_batch). */
static int run_ack_batch(struct job *const *jobs, size_t n, struct store *st)
{
    struct store_ack_entry *entries = calloc(n, sizeof *entries);
    if (entries == NULL) {
        return ROOST_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        struct inbox_op *op = (struct inbox_op *)jobs[i];
        entries[i] = (struct store_ack_entry){.tenant_id = op->rq->principal.tenant_id,
                                              .agent_id = op->rq->agent_id,
                                              .event_id = op->rq->event_id,
                                              .lease_token = op->lease_token};
    }
    int rc = store_ack_batch(st, entries, n, time_now_ms());
    for (size_t i = 0; i < n; i++) {
        struct inbox_op *op = (struct inbox_op *)jobs[i];
        jobs[i]->rc = entries[i].rc;
        op->available_at_ms = entries[i].available_at_ms;
    }
    free(entries);
    return rc;
}

static const struct job_batch ack_batch = {.run = run_ack_batch};

static void done_ack(struct job *job)
{
    struct inbox_op *op = (struct inbox_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    metrics_delivery(op->rq->rt->metrics, op->available_at_ms, time_now_ms());
    struct dynbuf b = {.max = SIZE_MAX};
    dynbuf_add(&b, "{\"event_id\":", 12);
    jsonutil_add_string(&b, op->rq->event_id);
    dynbuf_add(&b, ",\"status\":\"completed\"}", 22);
    request_reply_json_text(op->rq, 200, json_text_take(&b));
}

void api_event_ack(struct request *rq)
{
    if (reject_unknown(rq)) {
        return;
    }
    struct inbox_op *op = op_new(rq);
    if (!op || !read_lease_token(rq, rq->body, "lease_token", op->lease_token)) {
        return;
    }
    op->job.batch = &ack_batch;
    /* Its one UPDATE may run twice (the repeated-ack rule): alone in a group it commits in the
     * same round trip (struct job.one_write). */
    op->job.one_write = true;
    submit(op, run_ack, done_ack, true);
}

/* ---- POST /inbox/ack (batch) ---- */

static int run_acks(struct job *job, struct store *st)
{
    struct inbox_op *op = (struct inbox_op *)job;
    int64_t now = time_now_ms();
    for (size_t i = 0; i < op->n_acks; i++) {
        int rc =
            store_call(st, ack, op->rq->principal.tenant_id, op->rq->agent_id, op->acks[i].event_id,
                       op->acks[i].lease_token, now, &op->acks[i].available_at_ms);
        /* Per-item answers for the client's mistakes; a store failure fails the batch. */
        if (rc != ROOST_OK && rc != ROOST_EEVENTNOTFOUND && rc != ROOST_ELEASEMISMATCH) {
            return rc;
        }
        op->acks[i].rc = rc;
    }
    return ROOST_OK;
}

static void done_acks(struct job *job)
{
    struct inbox_op *op = (struct inbox_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    json_t *results = json_array();
    int64_t now = time_now_ms();
    for (size_t i = 0; i < op->n_acks; i++) {
        int rc = op->acks[i].rc;
        if (rc == ROOST_OK) {
            metrics_delivery(op->rq->rt->metrics, op->acks[i].available_at_ms, now);
        }
        json_t *item =
            rc == ROOST_OK
                ? json_pack("{s:s, s:s}", "event_id", op->acks[i].event_id, "status", "completed")
                : json_pack("{s:s, s:{s:s, s:s}}", "event_id", op->acks[i].event_id, "error",
                            "code", roost_err_code(rc), "message", roost_strerror(rc));
        json_array_append_new(results, item);
    }
    request_reply_json(op->rq, 200, json_pack("{s:o}", "results", results));
}

void api_events_ack(struct request *rq)
{
    if (reject_unknown(rq)) {
        return;
    }
    json_t *acks = json_object_get(rq->body, "acks");
    size_t n = json_is_array(acks) ? json_array_size(acks) : 0;
    if (n == 0 || n > (size_t)rq->rt->cfg->limits_max_batch) {
        request_reply_error(rq, ROOST_EACKS, NULL, NULL);
        return;
    }
    struct inbox_op *op = op_new(rq);
    if (!op) {
        return;
    }
    op->acks = calloc(n, sizeof *op->acks);
    if (!op->acks) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    op->n_acks = n;
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(acks, i);
        const char *bad = NULL, *event_id = NULL;
        if (!json_is_object(item) || body_param_only(rq, item, "acks[]", &bad) != ROOST_OK) {
            request_reply_error(rq, ROOST_EACKS, "each ack is {\"event_id\",\"lease_token\"}",
                                json_pack("{s:I}", "index", (json_int_t)i));
            return;
        }
        if (body_param_str(rq, item, "acks[].event_id", ROOST_EEVENTID, &event_id) || !event_id ||
            !ids_valid_event_id(event_id, strlen(event_id))) {
            request_reply_error(rq, ROOST_EEVENTID, NULL,
                                json_pack("{s:I}", "index", (json_int_t)i));
            return;
        }
        memcpy(op->acks[i].event_id, event_id, STORE_EVENT_ID_LEN + 1);
        if (!read_lease_token(rq, item, "acks[].lease_token", op->acks[i].lease_token)) {
            return;
        }
    }
    submit(op, run_acks, done_acks, true);
}

/* ---- POST /inbox/{event_id}/release ---- */

static int run_release(struct job *job, struct store *st)
{
    struct inbox_op *op = (struct inbox_op *)job;
    store_touches_cleanup(&op->touches);
    return store_call(st, release, op->rq->principal.tenant_id, op->rq->agent_id, op->rq->event_id,
                      op->lease_token, op->reason, op->delay_s, op->error_text,
                      (int)op->max_attempts, time_now_ms(), &op->touches, &op->released_to);
}

static void done_release(struct job *job)
{
    struct inbox_op *op = (struct inbox_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    runtime_notify(op->rq->rt, &op->touches);
    metrics_released(op->rq->rt->metrics, op->reason, 1);
    if (op->released_to == STORE_QUARANTINED) {
        metrics_quarantined(op->rq->rt->metrics, 1);
    }
    const char *status = op->released_to == STORE_QUARANTINED ? "quarantined" : "released";
    request_reply_json(op->rq, 200,
                       json_pack("{s:s, s:s}", "event_id", op->rq->event_id, "status", status));
}

void api_event_release(struct request *rq)
{
    if (reject_unknown(rq)) {
        return;
    }
    int64_t delay_s;
    const char *reason = NULL, *error = NULL;
    int rc;
    if ((rc = body_param_int(rq, rq->body, "delay_s", 0, ROOST_EDELAY, &delay_s)) ||
        (rc = body_param_str(rq, rq->body, "reason", ROOST_EREASON, &reason)) ||
        (rc = body_param_str(rq, rq->body, "error", ROOST_EERRORTEXT, &error))) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    enum store_release_reason r = STORE_RELEASE_TRANSIENT;
    if (reason && strcmp(reason, "transient") != 0) {
        if (strcmp(reason, "shutdown") == 0) {
            r = STORE_RELEASE_SHUTDOWN;
        } else if (strcmp(reason, "poison") == 0) {
            r = STORE_RELEASE_POISON;
        } else {
            request_reply_error(rq, ROOST_EREASON, NULL, NULL);
            return;
        }
    }
    struct inbox_op *op = op_new(rq);
    if (!op || !read_lease_token(rq, rq->body, "lease_token", op->lease_token)) {
        return;
    }
    op->reason = r;
    op->delay_s = delay_s;
    op->max_attempts = rq->rt->cfg->claim_max_attempts;
    if (error && !(op->error_text = strdup(error))) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    submit(op, run_release, done_release, true);
}

/* ---- POST /inbox/{event_id}/extend ---- */

static int run_extend(struct job *job, struct store *st)
{
    struct inbox_op *op = (struct inbox_op *)job;
    return store_call(st, extend, op->rq->principal.tenant_id, op->rq->agent_id, op->rq->event_id,
                      op->lease_token, op->lease_s, op->max_total_s, time_now_ms(),
                      &op->claim_expires_at_ms);
}

static void done_extend(struct job *job)
{
    struct inbox_op *op = (struct inbox_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    char ts[TIME_RFC3339_LEN + 1];
    time_format_rfc3339(op->claim_expires_at_ms, ts);
    request_reply_json(
        op->rq, 200, json_pack("{s:s, s:s}", "event_id", op->rq->event_id, "claim_expires_at", ts));
}

void api_event_extend(struct request *rq)
{
    const struct config *cfg = rq->rt->cfg;
    if (reject_unknown(rq)) {
        return;
    }
    int64_t lease_s;
    int rc = body_param_int(rq, rq->body, "lease_s", cfg->lease_default_s, ROOST_ELEASE, &lease_s);
    if (rc) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    struct inbox_op *op = op_new(rq);
    if (!op || !read_lease_token(rq, rq->body, "lease_token", op->lease_token)) {
        return;
    }
    op->lease_s = lease_s;
    op->max_total_s = cfg->lease_max_total_s;
    submit(op, run_extend, done_extend, true);
}

/* ---- POST /inbox/release-all ---- */

static int run_release_all(struct job *job, struct store *st)
{
    struct inbox_op *op = (struct inbox_op *)job;
    store_touches_cleanup(&op->touches);
    op->released = 0;
    return store_call(st, release_all, op->rq->principal.tenant_id, op->rq->agent_id, op->consumer,
                      time_now_ms(), &op->released, &op->touches);
}

static void done_release_all(struct job *job)
{
    struct inbox_op *op = (struct inbox_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    runtime_notify(op->rq->rt, &op->touches);
    metrics_released(op->rq->rt->metrics, STORE_RELEASE_SHUTDOWN, op->released);
    request_reply_json(op->rq, 200, json_pack("{s:I}", "released", (json_int_t)op->released));
}

void api_release_all(struct request *rq)
{
    if (reject_unknown(rq)) {
        return;
    }
    const char *consumer = NULL;
    if (body_param_str(rq, rq->body, "consumer", ROOST_ECONSUMER, &consumer) ||
        (consumer && !ids_valid_consumer(consumer, strlen(consumer)))) {
        request_reply_error(rq, ROOST_ECONSUMER, NULL, NULL);
        return;
    }
    struct inbox_op *op = op_new(rq);
    if (!op) {
        return;
    }
    snprintf(op->consumer, sizeof op->consumer, "%s", consumer ? consumer : "");
    submit(op, run_release_all, done_release_all, true);
}

/* ---- GET /state ---- */

static int run_state(struct job *job, struct store *st)
{
    struct inbox_op *op = (struct inbox_op *)job;
    free(op->state);
    op->state = NULL;
    return store_call(st, state_get, op->rq->principal.tenant_id, op->rq->agent_id, &op->state,
                      &op->cursor);
}

static void done_state(struct job *job)
{
    struct inbox_op *op = (struct inbox_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    /* The stored document is a JSON object's text (the store only ever merges patches into it):
     * written as is, like event payloads, never parsed again only to be printed. */
    struct evbuffer *out = evbuffer_new();
    if (out && evbuffer_add_printf(out, "{\"state\":%s,\"cursor\":%lld}",
                                   op->state ? op->state : "{}", (long long)op->cursor) < 0) {
        evbuffer_free(out);
        out = NULL;
    }
    request_reply_json_text(op->rq, 200, out);
}

void api_state_get(struct request *rq)
{
    struct inbox_op *op = op_new(rq);
    if (op) {
        submit(op, run_state, done_state, false);
    }
}
