/* SPDX-License-Identifier: MIT */
/* Webhook endpoints and their delivery-attempt log (DESIGN §6.3): plain rows with no lifecycle of
 * their own (deliveries go through the inbox lifecycle: claim, ack, release). Each operation is
 * written once in store_webhooks.c, with one SQL statement per dialect beside it, run through the
 * backend's query primitive (store_lifecycle.h). Same threading rules as the store: one
 * connection, one thread at a time. */
#ifndef ROOST_STORE_WEBHOOKS_H
#define ROOST_STORE_WEBHOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_ENDPOINT_ID_LEN 29 /* "ep_" + 26-char ULID */
#define STORE_ATTEMPT_ID_LEN 30  /* "att_" + 26-char ULID */
#define STORE_URL_MAX 2048
#define STORE_WH_SECRET_MAX 128 /* "whsec_" + base64 of at most 64 bytes */
#define STORE_WH_REASON_MAX 64  /* disabled_reason */
#define STORE_WH_CLASS_MAX 31   /* error_class */
#define STORE_WH_HEAD_MAX 256   /* response_head: the first bytes of the answer */

enum store_endpoint_status { STORE_ENDPOINT_ACTIVE = 0, STORE_ENDPOINT_DISABLED = 1 };

struct store_endpoint {
    char tenant_id[STORE_ID_MAX + 1];
    char endpoint_id[STORE_ENDPOINT_ID_LEN + 1];
    char agent_id[STORE_ID_MAX + 1];
    char url[STORE_URL_MAX + 1];
    char secret[STORE_WH_SECRET_MAX + 1]; /* "" in listings: they never carry secrets */
    enum store_endpoint_status status;
    char disabled_reason[STORE_WH_REASON_MAX + 1]; /* "" when active */
    int64_t created_at_ms, updated_at_ms;
    int64_t failing_since_ms; /* 0 = the last attempt succeeded (or none yet) */
};

struct store_attempt {
    char endpoint_id[STORE_ENDPOINT_ID_LEN + 1];
    char attempt_id[STORE_ATTEMPT_ID_LEN + 1];
    char agent_id[STORE_ID_MAX + 1];
    char event_id[STORE_EVENT_ID_LEN + 1];
    int64_t at_ms;
    int attempt;     /* the event's claim count when it was sent */
    int status_code; /* 0 = no HTTP answer */
    int64_t latency_ms;
    char error_class[STORE_WH_CLASS_MAX + 1]; /* "ok", "http_status", "redirect", "timeout"... */
    char response_head[STORE_WH_HEAD_MAX + 1];
};

/* Writes "ep_" / "att_" + a ULID for now_ms. ROOST_EINTERNAL without randomness. */
int store_endpoint_new_id(int64_t now_ms, char out[STORE_ENDPOINT_ID_LEN + 1]);
int store_attempt_new_id(int64_t now_ms, char out[STORE_ATTEMPT_ID_LEN + 1]);

/* Adds e (status active, created_at = updated_at = now). ROOST_EENDPOINTEXISTS when the agent
 * already has an endpoint (an agent has at most one: its inbox has one lease at a time). */
int store_endpoint_add(struct store *st, const struct store_endpoint *e, int64_t now_ms);
/* One endpoint of the tenant, secret included. ROOST_EENDPOINTNOTFOUND. */
int store_endpoint_get(struct store *st, const char *tenant_id, const char *endpoint_id,
                       struct store_endpoint *out);
/* The tenant's endpoints (of one agent when agent_id is not NULL) by endpoint_id after `after`
 * ("" = from the start), at most `limit` into caller-allocated out[limit], secrets left "".
 * *has_more when more follow. */
int store_endpoint_list(struct store *st, const char *tenant_id, const char *agent_id,
                        const char *after, size_t limit, struct store_endpoint *out, size_t *n,
                        bool *has_more);
/* Deletes the endpoint (only when it is agent_id's, unless agent_id is NULL); its attempt log
 * goes with it. ROOST_EENDPOINTNOTFOUND. */
int store_endpoint_delete(struct store *st, const char *tenant_id, const char *agent_id,
                          const char *endpoint_id);
/* Disables (reason kept, at most STORE_WH_REASON_MAX bytes) or enables the endpoint; enabling
 * also starts a fresh failure run. ROOST_EENDPOINTNOTFOUND. */
int store_endpoint_set_status(struct store *st, const char *tenant_id, const char *endpoint_id,
                              enum store_endpoint_status status, const char *reason,
                              int64_t now_ms);
/* Active endpoints of every tenant in (tenant_id, endpoint_id) order after (after_tenant,
 * after_id) ("", "" = from the start), secrets included: the dispatcher's work list. */
int store_endpoints_active(struct store *st, const char *after_tenant, const char *after_id,
                           size_t limit, struct store_endpoint *out, size_t *n);
/* Records the outcome of an attempt on the endpoint's failure run: a success ends it; a failure
 * starts it (failing_since = now) or continues it, and disables the endpoint ("failing") once
 * it has lasted disable_after_ms (0 = never). *disabled (may be NULL) is set when this call
 * disabled it. An unknown endpoint is ROOST_OK (it was deleted meanwhile). */
int store_endpoint_result(struct store *st, const char *tenant_id, const char *endpoint_id, bool ok,
                          int64_t now_ms, int64_t disable_after_ms, bool *disabled);

/* Appends one attempt of the tenant's endpoint to the log. */
int store_attempt_add(struct store *st, const char *tenant_id, const struct store_attempt *a);
/* The endpoint's attempts (of one event when event_id is not NULL), oldest first, by attempt_id
 * after `after` ("" = from the start), at most `limit` into caller-allocated out[limit]. */
int store_attempt_list(struct store *st, const char *tenant_id, const char *endpoint_id,
                       const char *event_id, const char *after, size_t limit,
                       struct store_attempt *out, size_t *n, bool *has_more);
/* Deletes at most `limit` attempts (any tenant) older than before_ms; *count set. */
int store_attempt_prune(struct store *st, int64_t before_ms, size_t limit, size_t *count);

#endif
