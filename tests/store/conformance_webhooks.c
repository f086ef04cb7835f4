/* SPDX-License-Identifier: MIT */
/* Store conformance for webhook endpoints and the attempt log (store_webhooks.h): one endpoint
 * per agent, tenant isolation, listings without secrets, status changes, the failure run that
 * disables an endpoint once, and the attempt log's paging, per-event view and bounded prune. */
#include "store/conformance_webhooks.h"

#include <stdio.h>
#include <string.h>

#include "harness/check.h"
#include "store/store_webhooks.h"

#include "common/banned.h"

#define NOW 1700000000000LL

static void endpoint_init(struct store_endpoint *e, const char *tenant, const char *agent,
                          int64_t now_ms)
{
    memset(e, 0, sizeof *e);
    snprintf(e->tenant_id, sizeof e->tenant_id, "%s", tenant);
    snprintf(e->agent_id, sizeof e->agent_id, "%s", agent);
    snprintf(e->url, sizeof e->url, "https://hooks.example.com/%s", agent);
    snprintf(e->secret, sizeof e->secret, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    CHECK_EQ(store_endpoint_new_id(now_ms, e->endpoint_id), ROOST_OK);
}

void conformance_webhooks_endpoints(struct store *st)
{
    struct store_endpoint a, b, again, got;
    endpoint_init(&a, "ta", "agent.a", NOW);
    endpoint_init(&b, "ta", "agent.b", NOW + 1);
    CHECK_EQ(strncmp(a.endpoint_id, "ep_", 3), 0);
    CHECK_EQ(strlen(a.endpoint_id), STORE_ENDPOINT_ID_LEN);
    CHECK_EQ(store_endpoint_add(st, &a, NOW), ROOST_OK);
    CHECK_EQ(store_endpoint_add(st, &b, NOW), ROOST_OK);
    /* A second endpoint for the same agent is refused; another tenant's same agent is not. */
    endpoint_init(&again, "ta", "agent.a", NOW + 2);
    CHECK_EQ(store_endpoint_add(st, &again, NOW), ROOST_EENDPOINTEXISTS);
    endpoint_init(&again, "tb", "agent.a", NOW + 3);
    CHECK_EQ(store_endpoint_add(st, &again, NOW), ROOST_OK);

    CHECK_EQ(store_endpoint_get(st, "ta", a.endpoint_id, &got), ROOST_OK);
    CHECK_STREQ(got.url, a.url);
    CHECK_STREQ(got.secret, a.secret);
    CHECK_STREQ(got.agent_id, "agent.a");
    CHECK_EQ(got.status, STORE_ENDPOINT_ACTIVE);
    CHECK_EQ(got.created_at_ms, NOW);
    /* Another tenant cannot see it. */
    CHECK_EQ(store_endpoint_get(st, "tb", a.endpoint_id, &got), ROOST_EENDPOINTNOTFOUND);

    struct store_endpoint page[4];
    size_t n = 0;
    bool more = true;
    CHECK_EQ(store_endpoint_list(st, "ta", NULL, "", 1, page, &n, &more), ROOST_OK);
    CHECK_EQ(n, 1);
    CHECK(more);
    CHECK_STREQ(page[0].endpoint_id, a.endpoint_id);
    CHECK_STREQ(page[0].secret, ""); /* listings never carry secrets */
    CHECK_EQ(store_endpoint_list(st, "ta", NULL, page[0].endpoint_id, 4, page, &n, &more),
             ROOST_OK);
    CHECK_EQ(n, 1);
    CHECK(!more);
    CHECK_STREQ(page[0].endpoint_id, b.endpoint_id);
    CHECK_EQ(store_endpoint_list(st, "ta", "agent.b", "", 4, page, &n, &more), ROOST_OK);
    CHECK_EQ(n, 1);
    CHECK_STREQ(page[0].agent_id, "agent.b");

    /* Disable / enable. */
    CHECK_EQ(store_endpoint_set_status(st, "ta", a.endpoint_id, STORE_ENDPOINT_DISABLED, "operator",
                                       NOW + 10),
             ROOST_OK);
    CHECK_EQ(store_endpoint_get(st, "ta", a.endpoint_id, &got), ROOST_OK);
    CHECK_EQ(got.status, STORE_ENDPOINT_DISABLED);
    CHECK_STREQ(got.disabled_reason, "operator");
    CHECK_EQ(got.updated_at_ms, NOW + 10);
    /* The dispatcher's list has only active endpoints, of every tenant, secrets included. */
    CHECK_EQ(store_endpoints_active(st, "", "", 4, page, &n), ROOST_OK);
    CHECK_EQ(n, 2);
    CHECK_STREQ(page[0].tenant_id, "ta");
    CHECK_STREQ(page[0].endpoint_id, b.endpoint_id);
    CHECK_STREQ(page[0].secret, b.secret);
    CHECK_STREQ(page[1].tenant_id, "tb");
    CHECK_EQ(store_endpoints_active(st, "ta", b.endpoint_id, 4, page, &n), ROOST_OK);
    CHECK_EQ(n, 1);
    CHECK_EQ(
        store_endpoint_set_status(st, "ta", a.endpoint_id, STORE_ENDPOINT_ACTIVE, NULL, NOW + 11),
        ROOST_OK);
    CHECK_EQ(store_endpoint_get(st, "ta", a.endpoint_id, &got), ROOST_OK);
    CHECK_EQ(got.status, STORE_ENDPOINT_ACTIVE);
    CHECK_STREQ(got.disabled_reason, "");
    CHECK_EQ(store_endpoint_set_status(st, "tb", a.endpoint_id, STORE_ENDPOINT_ACTIVE, NULL, NOW),
             ROOST_EENDPOINTNOTFOUND);

    /* Delete: only through its own agent (when named), once. */
    CHECK_EQ(store_endpoint_delete(st, "ta", "agent.b", a.endpoint_id), ROOST_EENDPOINTNOTFOUND);
    CHECK_EQ(store_endpoint_delete(st, "ta", "agent.a", a.endpoint_id), ROOST_OK);
    CHECK_EQ(store_endpoint_delete(st, "ta", NULL, a.endpoint_id), ROOST_EENDPOINTNOTFOUND);
    CHECK_EQ(store_endpoint_get(st, "ta", a.endpoint_id, &got), ROOST_EENDPOINTNOTFOUND);
    /* The agent may register again. */
    endpoint_init(&again, "ta", "agent.a", NOW + 20);
    CHECK_EQ(store_endpoint_add(st, &again, NOW + 20), ROOST_OK);
}

void conformance_webhooks_failure_run(struct store *st)
{
    struct store_endpoint e, got;
    bool disabled = true;
    endpoint_init(&e, "ta", "agent.f", NOW);
    CHECK_EQ(store_endpoint_add(st, &e, NOW), ROOST_OK);
    /* A failure starts the run; a later one continues it (failing_since stays the first). */
    CHECK_EQ(store_endpoint_result(st, "ta", e.endpoint_id, false, NOW + 100, 10000, &disabled),
             ROOST_OK);
    CHECK(!disabled);
    CHECK_EQ(store_endpoint_result(st, "ta", e.endpoint_id, false, NOW + 5000, 10000, &disabled),
             ROOST_OK);
    CHECK(!disabled);
    CHECK_EQ(store_endpoint_get(st, "ta", e.endpoint_id, &got), ROOST_OK);
    CHECK_EQ(got.failing_since_ms, NOW + 100);
    /* A success ends it: the next failure starts a new run. */
    CHECK_EQ(store_endpoint_result(st, "ta", e.endpoint_id, true, NOW + 6000, 10000, NULL),
             ROOST_OK);
    CHECK_EQ(store_endpoint_get(st, "ta", e.endpoint_id, &got), ROOST_OK);
    CHECK_EQ(got.failing_since_ms, 0);
    CHECK_EQ(store_endpoint_result(st, "ta", e.endpoint_id, false, NOW + 7000, 10000, &disabled),
             ROOST_OK);
    CHECK_EQ(store_endpoint_result(st, "ta", e.endpoint_id, false, NOW + 16999, 10000, &disabled),
             ROOST_OK);
    CHECK(!disabled);
    /* Once the run has lasted disable_after, the endpoint is disabled, exactly once. */
    CHECK_EQ(store_endpoint_result(st, "ta", e.endpoint_id, false, NOW + 17000, 10000, &disabled),
             ROOST_OK);
    CHECK(disabled);
    CHECK_EQ(store_endpoint_result(st, "ta", e.endpoint_id, false, NOW + 18000, 10000, &disabled),
             ROOST_OK);
    CHECK(!disabled);
    CHECK_EQ(store_endpoint_get(st, "ta", e.endpoint_id, &got), ROOST_OK);
    CHECK_EQ(got.status, STORE_ENDPOINT_DISABLED);
    CHECK_STREQ(got.disabled_reason, "failing");
    /* Enabling starts afresh. */
    CHECK_EQ(store_endpoint_set_status(st, "ta", e.endpoint_id, STORE_ENDPOINT_ACTIVE, NULL,
                                       NOW + 19000),
             ROOST_OK);
    CHECK_EQ(store_endpoint_get(st, "ta", e.endpoint_id, &got), ROOST_OK);
    CHECK_EQ(got.failing_since_ms, 0);
    /* disable_after 0 never disables; an unknown endpoint is no error. */
    CHECK_EQ(store_endpoint_result(st, "ta", e.endpoint_id, false, NOW + 20000, 0, &disabled),
             ROOST_OK);
    CHECK_EQ(store_endpoint_result(st, "ta", e.endpoint_id, false, NOW + 999999, 0, &disabled),
             ROOST_OK);
    CHECK(!disabled);
    CHECK_EQ(store_endpoint_result(st, "ta", "ep_none", false, NOW, 1, &disabled), ROOST_OK);
    CHECK(!disabled);
}

static void attempt_init(struct store_attempt *a, const char *endpoint_id, const char *event_id,
                         int64_t at_ms, int code)
{
    memset(a, 0, sizeof *a);
    snprintf(a->endpoint_id, sizeof a->endpoint_id, "%s", endpoint_id);
    snprintf(a->agent_id, sizeof a->agent_id, "agent.a");
    snprintf(a->event_id, sizeof a->event_id, "%s", event_id);
    CHECK_EQ(store_attempt_new_id(at_ms, a->attempt_id), ROOST_OK);
    a->at_ms = at_ms;
    a->attempt = 1;
    a->status_code = code;
    a->latency_ms = 12;
    snprintf(a->error_class, sizeof a->error_class, "%s", code == 200 ? "ok" : "http_status");
    snprintf(a->response_head, sizeof a->response_head, "%s", code == 200 ? "" : "boom");
}

void conformance_webhooks_attempts(struct store *st)
{
    struct store_endpoint e;
    endpoint_init(&e, "ta", "agent.a", NOW);
    CHECK_EQ(store_endpoint_add(st, &e, NOW), ROOST_OK);
    const char *ev1 = "evt_01HZZZZZZZZZZZZZZZZZZZZZZ1";
    const char *ev2 = "evt_01HZZZZZZZZZZZZZZZZZZZZZZ2";
    struct store_attempt a;
    for (int i = 0; i < 5; i++) {
        attempt_init(&a, e.endpoint_id, i < 3 ? ev1 : ev2, NOW + i * 1000, i == 4 ? 200 : 500);
        CHECK_EQ(store_attempt_add(st, "ta", &a), ROOST_OK);
    }
    struct store_attempt out[8];
    size_t n = 0;
    bool more = false;
    CHECK_EQ(store_attempt_list(st, "ta", e.endpoint_id, NULL, "", 2, out, &n, &more), ROOST_OK);
    CHECK_EQ(n, 2);
    CHECK(more);
    CHECK_EQ(out[0].at_ms, NOW);
    CHECK_EQ(out[0].status_code, 500);
    CHECK_STREQ(out[0].error_class, "http_status");
    CHECK_STREQ(out[0].response_head, "boom");
    CHECK_EQ(out[0].latency_ms, 12);
    CHECK_STREQ(out[0].event_id, ev1);
    CHECK_EQ(
        store_attempt_list(st, "ta", e.endpoint_id, NULL, out[1].attempt_id, 8, out, &n, &more),
        ROOST_OK);
    CHECK_EQ(n, 3);
    CHECK(!more);
    CHECK_EQ(out[2].status_code, 200);
    CHECK_STREQ(out[2].response_head, "");
    /* Per event. */
    CHECK_EQ(store_attempt_list(st, "ta", e.endpoint_id, ev2, "", 8, out, &n, &more), ROOST_OK);
    CHECK_EQ(n, 2);
    /* Another tenant sees nothing. */
    CHECK_EQ(store_attempt_list(st, "tb", e.endpoint_id, NULL, "", 8, out, &n, &more), ROOST_OK);
    CHECK_EQ(n, 0);
    /* Prune is bounded per call and removes only old rows. */
    size_t count = 0;
    CHECK_EQ(store_attempt_prune(st, NOW + 3000, 2, &count), ROOST_OK);
    CHECK_EQ(count, 2);
    CHECK_EQ(store_attempt_prune(st, NOW + 3000, 10, &count), ROOST_OK);
    CHECK_EQ(count, 1);
    CHECK_EQ(store_attempt_list(st, "ta", e.endpoint_id, NULL, "", 8, out, &n, &more), ROOST_OK);
    CHECK_EQ(n, 2);
    /* Deleting the endpoint takes its log with it. */
    CHECK_EQ(store_endpoint_delete(st, "ta", NULL, e.endpoint_id), ROOST_OK);
    CHECK_EQ(store_attempt_list(st, "ta", e.endpoint_id, NULL, "", 8, out, &n, &more), ROOST_OK);
    CHECK_EQ(n, 0);
}
