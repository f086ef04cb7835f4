/* SPDX-License-Identifier: MIT */
/* The route declaration (routes.h): every route roostd serves, one entry each, read by the
 * router (matching, authentication, scope, {key} checks, draining), the handlers (parameter
 * bounds: request_param_int and body_param_*), the metrics (route and op labels), the signature
 * policy and `roostd --print-routes`, which tests/integration/openapi_check.py compares with
 * doc/openapi.json both ways. Adding a route is one entry here plus its handler (api.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "server/api.h"
#include "server/config.h"
#include "server/routes.h"
#include "store/store.h"
#include "store/store_sources.h"
#include "store/store_webhooks.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

#define GET EVHTTP_REQ_GET
#define POST EVHTTP_REQ_POST
#define DELETE EVHTTP_REQ_DELETE

#define MAX_LIMIT 1000              /* inbox reads and claims, admin lists, key lists */
#define PURGE_MAX_LIMIT 10000       /* one quarantine purge */
#define FIND_MAX_LIMIT 100          /* events by correlation id (no payloads) */
#define HOOK_LIST_MAX_LIMIT 100     /* webhook endpoint and attempt lists */
#define MAX_DELAY_S (365LL * 86400) /* publish delay_s, release delay_s */
#define MAX_TTL_S (10LL * 365 * 86400)
#define PAGE_TOKEN_MAX 512 /* an opaque page token (request.h) */
#define QUERY_CREDENTIAL_MAX 8192
#define DEVICE_LIST_MAX_LIMIT 100
#define OAUTH_CRED_MAX 256 /* dc1./rt1. + tenant + 43 characters */

#define Q_INT(n, lo, hi)                                                                           \
    {                                                                                              \
        .name = n, .in = RP_QUERY, .type = RP_INT, .min = lo, .max = hi                            \
    }
#define Q_STR(n, hi)                                                                               \
    {                                                                                              \
        .name = n, .in = RP_QUERY, .type = RP_STRING, .min = 1, .max = hi                          \
    }
#define B_INT(n, lo, hi)                                                                           \
    {                                                                                              \
        .name = n, .in = RP_BODY, .type = RP_INT, .min = lo, .max = hi                             \
    }
#define B_STR(n, lo, hi)                                                                           \
    {                                                                                              \
        .name = n, .in = RP_BODY, .type = RP_STRING, .min = lo, .max = hi                          \
    }
#define B_REQ_STR(n, lo, hi)                                                                       \
    {                                                                                              \
        .name = n, .in = RP_BODY, .type = RP_STRING, .min = lo, .max = hi, .required = true        \
    }
#define Q_NEXT Q_STR("next", PAGE_TOKEN_MAX)
#define B_LEASE_TOKEN B_REQ_STR("lease_token", STORE_LEASE_TOKEN_LEN, STORE_LEASE_TOKEN_LEN)

const struct route router_routes[] =
    {
        /* ---- producers ---- */
        /* The body is one event (the fields after "events") or {"events":[…]} of such objects;
         * "required" holds within the form that has the field. */
        {.method = POST,
         .pattern = "/api/v1/events",
         .name = "publish",
         .action = AUTH_PUBLISH,
         .body = BODY_REQUIRED,
         .signed_policy = true,
         .job = "publish",
         .handler = api_publish,
         .params =
             {
                 {.name = "events",
                  .in = RP_BODY,
                  .type = RP_ARRAY,
                  .min = 1,
                  .cfg = RP_CFG_MAX_BATCH,
                  .required = true},
                 {.name = "recipients",
                  .in = RP_BODY,
                  .type = RP_ARRAY,
                  .min = 1,
                  .cfg = RP_CFG_MAX_RECIPIENTS,
                  .required = true},
                 {.name = "payload", .in = RP_BODY, .type = RP_ANY},
                 B_INT("priority", -100, 100),
                 B_STR("correlation_id", 1, STORE_SHORT_TEXT_MAX),
                 B_STR("idempotency_key", 1, STORE_SHORT_TEXT_MAX),
                 B_INT("delay_s", 0, MAX_DELAY_S),
                 {.name = "available_at", .in = RP_BODY, .type = RP_TIME, .max = 64},
                 B_INT("ttl_s", 1, MAX_TTL_S),
                 {.name = "expires_at", .in = RP_BODY, .type = RP_TIME, .max = 64},
                 {.name = "state_patch", .in = RP_BODY, .type = RP_OBJECT},
             }},
        /* ---- an agent's inbox ---- */
        {.method = GET,
         .pattern = "/api/v1/agents/{agent}/inbox",
         .name = "inbox_read",
         .action = AUTH_READ,
         .body = BODY_NONE,
         .signed_policy = true,
         .job = "inbox_read",
         .handler = api_inbox_read,
         .params =
             {
                 Q_INT("after_cursor", 0, INT64_MAX),
                 Q_INT("limit", 1, MAX_LIMIT),
                 {.name = "wait_s", .in = RP_QUERY, .type = RP_INT, .cfg = RP_CFG_CLAIM_MAX_WAIT_S},
             }},
        {.method = GET,
         .pattern = "/api/v1/agents/{agent}/inbox/peek",
         .name = "inbox_peek",
         .action = AUTH_READ,
         .body = BODY_NONE,
         .signed_policy = true,
         .job = "inbox_peek",
         .handler = api_inbox_peek},
        {.method = POST,
         .pattern = "/api/v1/agents/{agent}/inbox/claim",
         .name = "claim",
         .action = AUTH_CONSUME,
         .body = BODY_REQUIRED,
         .signed_policy = true,
         .job = "claim",
         .handler = api_inbox_claim,
         .params =
             {
                 B_INT("limit", 1, MAX_LIMIT),
                 {.name = "lease_s",
                  .in = RP_BODY,
                  .type = RP_INT,
                  .min = 1,
                  .cfg = RP_CFG_LEASE_MAX_S},
                 {.name = "wait_s", .in = RP_BODY, .type = RP_INT, .cfg = RP_CFG_CLAIM_MAX_WAIT_S},
                 B_STR("consumer", 1, STORE_ID_MAX),
             }},
        {.method = POST,
         .pattern = "/api/v1/agents/{agent}/inbox/ack",
         .name = "ack_batch",
         .action = AUTH_CONSUME,
         .body = BODY_REQUIRED,
         .signed_policy = true,
         .job = "ack_batch",
         .handler = api_events_ack,
         .params =
             {
                 {.name = "acks",
                  .in = RP_BODY,
                  .type = RP_ARRAY,
                  .min = 1,
                  .max = MAX_LIMIT,
                  .required = true},
                 B_REQ_STR("acks[].event_id", STORE_EVENT_ID_LEN, STORE_EVENT_ID_LEN),
                 B_REQ_STR("acks[].lease_token", STORE_LEASE_TOKEN_LEN, STORE_LEASE_TOKEN_LEN),
             }},
        {.method = POST,
         .pattern = "/api/v1/agents/{agent}/inbox/release-all",
         .name = "release_all",
         .action = AUTH_CONSUME,
         .body = BODY_OPTIONAL,
         .signed_policy = true,
         .job = "release_all",
         .handler = api_release_all,
         .params = {B_STR("consumer", 1, STORE_ID_MAX)}},
        {.method = POST,
         .pattern = "/api/v1/agents/{agent}/inbox/{event}/ack",
         .name = "ack",
         .action = AUTH_CONSUME,
         .body = BODY_REQUIRED,
         .signed_policy = true,
         .job = "ack",
         .handler = api_event_ack,
         .params = {B_LEASE_TOKEN}},
        {.method = POST,
         .pattern = "/api/v1/agents/{agent}/inbox/{event}/release",
         .name = "release",
         .action = AUTH_CONSUME,
         .body = BODY_REQUIRED,
         .signed_policy = true,
         .job = "release",
         .handler = api_event_release,
         .params =
             {
                 B_LEASE_TOKEN,
                 B_INT("delay_s", 0, MAX_DELAY_S),
                 {.name = "reason",
                  .in = RP_BODY,
                  .type = RP_STRING,
                  .min = 1,
                  .max = 32,
                  .values = "transient|shutdown|poison"},
                 B_STR("error", 1, STORE_ERROR_TEXT_MAX),
             }},
        {.method = POST,
         .pattern = "/api/v1/agents/{agent}/inbox/{event}/extend",
         .name = "extend",
         .action = AUTH_CONSUME,
         .body = BODY_REQUIRED,
         .signed_policy = true,
         .job = "extend",
         .handler = api_event_extend,
         .params =
             {
                 B_LEASE_TOKEN,
                 {.name = "lease_s",
                  .in = RP_BODY,
                  .type = RP_INT,
                  .min = 1,
                  .cfg = RP_CFG_LEASE_MAX_S},
             }},
        {.method = GET,
         .pattern = "/api/v1/agents/{agent}/state",
         .name = "state",
         .action = AUTH_READ,
         .body = BODY_NONE,
         .signed_policy = true,
         .job = "state",
         .handler = api_state_get},
        {.method = GET,
         .pattern = "/api/v1/agents/{agent}/subscribe",
         .name = "subscribe",
         .auth = ROUTE_AUTH_STREAM,
         .action = AUTH_READ,
         .body = BODY_NONE,
         .signed_policy = true,
         .job = "subscribe",
         .handler = api_subscribe,
         .params =
             {
                 Q_STR("access_token", QUERY_CREDENTIAL_MAX),
                 Q_STR("ticket", QUERY_CREDENTIAL_MAX),
             }},
        {.method = POST,
         .pattern = "/api/v1/agents/{agent}/subscribe/ticket",
         .name = "subscribe_ticket",
         .action = AUTH_READ,
         .body = BODY_OPTIONAL,
         .signed_policy = true,
         .handler = api_subscribe_ticket},
        /* ---- webhooks of an agent ({key} carries the endpoint id) ---- */
        {.method = POST,
         .pattern = "/api/v1/agents/{agent}/callbacks",
         .name = "callbacks_add",
         .action = AUTH_CONSUME,
         .key = ROUTE_KEY_ENDPOINT,
         .body = BODY_REQUIRED,
         .signed_policy = true,
         .job = "webhooks",
         .handler = api_callbacks_add,
         .params =
             {
                 B_REQ_STR("url", 1, STORE_URL_MAX),
                 B_STR("secret", 1, STORE_WH_SECRET_MAX),
             }},
        {.method = GET,
         .pattern = "/api/v1/agents/{agent}/callbacks",
         .name = "callbacks_list",
         .action = AUTH_CONSUME,
         .body = BODY_NONE,
         .signed_policy = true,
         .job = "webhooks",
         .handler = api_callbacks_list,
         .params = {Q_INT("limit", 1, HOOK_LIST_MAX_LIMIT), Q_NEXT}},
        {.method = DELETE,
         .pattern = "/api/v1/agents/{agent}/callbacks/{key}",
         .name = "callbacks_delete",
         .action = AUTH_CONSUME,
         .key = ROUTE_KEY_ENDPOINT,
         .body = BODY_NONE,
         .signed_policy = true,
         .job = "webhooks",
         .handler = api_callbacks_delete},
        /* ---- tenant operators (tenant:admin; outside the signature policy, DESIGN §6.2) ---- */
        {.method = GET,
         .pattern = "/api/v1/admin/agents",
         .name = "admin_agents",
         .action = AUTH_ADMIN,
         .body = BODY_NONE,
         .job = "admin",
         .handler = api_admin_agents,
         .params =
             {
                 Q_INT("limit", 1, MAX_LIMIT),
                 Q_NEXT,
                 {.name = "sort",
                  .in = RP_QUERY,
                  .type = RP_STRING,
                  .min = 1,
                  .max = 8,
                  .values = "agent|depth|age"},
             }},
        {.method = GET,
         .pattern = "/api/v1/admin/quarantine",
         .name = "admin_quarantine",
         .action = AUTH_ADMIN,
         .body = BODY_NONE,
         .job = "admin",
         .handler = api_admin_quarantine,
         .params = {Q_INT("limit", 1, MAX_LIMIT), Q_STR("agent_id", STORE_ID_MAX), Q_NEXT}},
        /* Literal segments before {event}: a literal wins over the placeholder. */
        {.method = POST,
         .pattern = "/api/v1/admin/quarantine/purge",
         .name = "admin_purge",
         .action = AUTH_ADMIN,
         .body = BODY_OPTIONAL,
         .job = "admin",
         .handler = api_admin_purge,
         .params = {B_STR("agent_id", 1, STORE_ID_MAX), B_INT("limit", 1, PURGE_MAX_LIMIT)}},
        {.method = POST,
         .pattern = "/api/v1/admin/quarantine/requeue",
         .name = "admin_requeue_all",
         .action = AUTH_ADMIN,
         .body = BODY_OPTIONAL,
         .job = "admin",
         .handler = api_admin_requeue_all,
         .params = {B_STR("agent_id", 1, STORE_ID_MAX), B_INT("limit", 1, MAX_LIMIT)}},
        {.method = POST,
         .pattern = "/api/v1/admin/quarantine/{event}/requeue",
         .name = "admin_requeue",
         .action = AUTH_ADMIN,
         .body = BODY_OPTIONAL,
         .job = "admin",
         .handler = api_admin_requeue},
        {.method = GET,
         .pattern = "/api/v1/admin/quarantine/{event}",
         .name = "admin_quarantine_inspect",
         .action = AUTH_ADMIN,
         .body = BODY_NONE,
         .job = "admin",
         .handler = api_admin_quarantine_inspect},
        {.method = POST,
         .pattern = "/api/v1/admin/quarantine/{event}/purge",
         .name = "admin_purge_event",
         .action = AUTH_ADMIN,
         .body = BODY_OPTIONAL,
         .job = "admin",
         .handler = api_admin_purge},
        {.method = GET,
         .pattern = "/api/v1/admin/stats",
         .name = "admin_stats",
         .action = AUTH_ADMIN,
         .body = BODY_NONE,
         .handler = api_admin_stats},
        {.method = GET,
         .pattern = "/api/v1/admin/events",
         .name = "admin_events_find",
         .action = AUTH_ADMIN,
         .body = BODY_NONE,
         .job = "admin",
         .handler = api_admin_events_find,
         .params = {Q_STR("correlation_id", STORE_SHORT_TEXT_MAX),
                    Q_INT("limit", 1, FIND_MAX_LIMIT), Q_NEXT}},
        {.method = GET,
         .pattern = "/api/v1/admin/events/{event}",
         .name = "admin_event",
         .action = AUTH_ADMIN,
         .body = BODY_NONE,
         .job = "admin",
         .handler = api_admin_event_get},
        {.method = GET,
         .pattern = "/api/v1/admin/history",
         .name = "admin_history",
         .action = AUTH_ADMIN,
         .body = BODY_NONE,
         .handler = api_admin_history,
         .params = {Q_INT("after_ms", 0, INT64_MAX)}},
        {.method = POST,
         .pattern = "/api/v1/admin/keys",
         .name = "admin_keys_add",
         .action = AUTH_ADMIN,
         .body = BODY_REQUIRED,
         .job = "admin",
         .handler = api_admin_keys_add,
         .params =
             {
                 B_REQ_STR("key_id", 1, STORE_ID_MAX),
                 B_STR("agent_id", 1, STORE_ID_MAX),
                 {.name = "alg",
                  .in = RP_BODY,
                  .type = RP_STRING,
                  .min = 1,
                  .max = STORE_KEY_ALG_MAX,
                  .required = true,
                  .values = "ed25519|ecdsa-p256-sha256|hmac-sha256|rsa-pss-sha512|rsa-v1_5-sha256"},
                 {.name = "public_key", .in = RP_BODY, .type = RP_ANY},
                 B_STR("secret", 1, 8192),
             }},
        {.method = GET,
         .pattern = "/api/v1/admin/keys",
         .name = "admin_keys_list",
         .action = AUTH_ADMIN,
         .body = BODY_NONE,
         .job = "admin",
         .handler = api_admin_keys_list,
         .params = {Q_INT("limit", 1, MAX_LIMIT), Q_NEXT}},
        {.method = POST,
         .pattern = "/api/v1/admin/keys/{key}/revoke",
         .name = "admin_keys_revoke",
         .action = AUTH_ADMIN,
         .key = ROUTE_KEY_SIGNING,
         .body = BODY_OPTIONAL,
         .job = "admin",
         .handler = api_admin_keys_revoke},
        {.method = GET,
         .pattern = "/api/v1/admin/endpoints",
         .name = "admin_endpoints",
         .action = AUTH_ADMIN,
         .body = BODY_NONE,
         .job = "webhooks",
         .handler = api_admin_endpoints_list,
         .params = {Q_INT("limit", 1, HOOK_LIST_MAX_LIMIT), Q_NEXT,
                    Q_STR("agent_id", STORE_ID_MAX)}},
        {.method = GET,
         .pattern = "/api/v1/admin/endpoints/{key}",
         .name = "admin_endpoint",
         .action = AUTH_ADMIN,
         .key = ROUTE_KEY_ENDPOINT,
         .body = BODY_NONE,
         .job = "webhooks",
         .handler = api_admin_endpoint_get},
        {.method = POST,
         .pattern = "/api/v1/admin/endpoints/{key}/disable",
         .name = "admin_endpoint_disable",
         .action = AUTH_ADMIN,
         .key = ROUTE_KEY_ENDPOINT,
         .body = BODY_OPTIONAL,
         .job = "webhooks",
         .handler = api_admin_endpoint_disable},
        {.method = POST,
         .pattern = "/api/v1/admin/endpoints/{key}/enable",
         .name = "admin_endpoint_enable",
         .action = AUTH_ADMIN,
         .key = ROUTE_KEY_ENDPOINT,
         .body = BODY_OPTIONAL,
         .job = "webhooks",
         .handler = api_admin_endpoint_enable},
        {.method = GET,
         .pattern = "/api/v1/admin/endpoints/{key}/attempts",
         .name = "admin_endpoint_attempts",
         .action = AUTH_ADMIN,
         .key = ROUTE_KEY_ENDPOINT,
         .body = BODY_NONE,
         .job = "webhooks",
         .handler = api_admin_endpoint_attempts,
         .params = {Q_INT("limit", 1, HOOK_LIST_MAX_LIMIT), Q_NEXT,
                    Q_STR("event_id", STORE_EVENT_ID_LEN),
                    /* The attempt log is appended to: "after" an attempt id tails it (the
                     * dashboard), where "next" pages through one listing. */
                    Q_STR("after", STORE_ATTEMPT_ID_LEN)}},
        {.method = POST,
         .pattern = "/api/v1/admin/endpoints/{key}/replay",
         .name = "admin_endpoint_replay",
         .action = AUTH_ADMIN,
         .key = ROUTE_KEY_ENDPOINT,
         .body = BODY_REQUIRED,
         .job = "webhooks",
         .handler = api_admin_endpoint_replay,
         .params =
             {
                 B_STR("event_id", STORE_EVENT_ID_LEN, STORE_EVENT_ID_LEN),
                 {.name = "since", .in = RP_BODY, .type = RP_TIME, .max = TIME_RFC3339_LEN + 16},
             }},
        {.method = GET,
         .pattern = "/api/v1/admin/devices",
         .name = "admin_devices",
         .action = AUTH_ADMIN,
         .body = BODY_NONE,
         .job = "devices",
         .handler = api_admin_devices_list,
         .params = {Q_INT("limit", 1, DEVICE_LIST_MAX_LIMIT), Q_NEXT,
                    Q_STR("agent_id", STORE_ID_MAX), Q_STR("user_code", STORE_USER_CODE_MAX)}},
        {.method = POST,
         .pattern = "/api/v1/admin/devices/approve",
         .name = "admin_devices_approve",
         .action = AUTH_ADMIN,
         .body = BODY_REQUIRED,
         .job = "devices",
         .handler = api_admin_devices_approve,
         .params = {B_REQ_STR("user_code", 1, STORE_USER_CODE_MAX),
                    B_STR("scope", 1, STORE_DEVICE_SCOPE_MAX)}},
        {.method = POST,
         .pattern = "/api/v1/admin/devices/deny",
         .name = "admin_devices_deny",
         .action = AUTH_ADMIN,
         .body = BODY_REQUIRED,
         .job = "devices",
         .handler = api_admin_devices_deny,
         .params = {B_REQ_STR("user_code", 1, STORE_USER_CODE_MAX)}},
        {.method = POST,
         .pattern = "/api/v1/admin/devices/{key}/revoke",
         .name = "admin_devices_revoke",
         .action = AUTH_ADMIN,
         .key = ROUTE_KEY_DEVICE,
         .body = BODY_OPTIONAL,
         .job = "devices",
         .handler = api_admin_devices_revoke},
        /* ---- public, without a token ---- */
        /* Device login and refresh (RFC 8628, RFC 6749): OAuth clients send forms. */
        {.method = GET,
         .pattern = "/.well-known/oauth-authorization-server",
         .name = "oauth_metadata",
         .auth = ROUTE_AUTH_NONE,
         .body = BODY_NONE,
         .handler = api_oauth_metadata},
        {.method = POST,
         .pattern = "/oauth/device_authorization",
         .name = "oauth_device_authorization",
         .auth = ROUTE_AUTH_NONE,
         .body = BODY_REQUIRED,
         .form = true,
         .job = "oauth",
         .handler = api_oauth_device_authorization,
         .params = {B_REQ_STR("client_id", 1, STORE_ID_MAX),
                    B_STR("scope", 1, STORE_DEVICE_SCOPE_MAX), B_STR("tenant", 1, STORE_ID_MAX),
                    B_STR("device_name", 1, STORE_DEVICE_NAME_MAX)}},
        {.method = POST,
         .pattern = "/oauth/token",
         .name = "oauth_token",
         .auth = ROUTE_AUTH_NONE,
         .body = BODY_REQUIRED,
         .form = true,
         .job = "oauth",
         .handler = api_oauth_token,
         .params = {B_REQ_STR("grant_type", 1, 128), B_STR("device_code", 1, OAUTH_CRED_MAX),
                    B_STR("refresh_token", 1, OAUTH_CRED_MAX), B_STR("client_id", 1, STORE_ID_MAX),
                    B_STR("signing_public_key", 1, 4096)}},
        /* ---- inbound webhook sources ({key} carries the source id; DESIGN §6.5) ---- */
        {.method = POST,
         .pattern = "/api/v1/admin/sources",
         .name = "admin_sources_add",
         .action = AUTH_ADMIN,
         .body = BODY_REQUIRED,
         .job = "ingest",
         .handler = api_admin_sources_add,
         .params =
             {
                 B_REQ_STR("name", 1, STORE_SOURCE_NAME_MAX),
                 {.name = "scheme",
                  .in = RP_BODY,
                  .type = RP_STRING,
                  .min = 1,
                  .max = STORE_SOURCE_SCHEME_MAX,
                  .required = true,
                  .values = "standard-webhooks|github|stripe|token|hmac|jwt"},
                 B_STR("secret", 1, STORE_SOURCE_SECRET_MAX),
                 {.name = "options", .in = RP_BODY, .type = RP_OBJECT},
                 {.name = "agents", .in = RP_BODY, .type = RP_ARRAY, .min = 1, .max = 100},
                 B_STR("agent_pointer", 1, 256),
                 B_STR("agent_selector", 1, STORE_ID_MAX + 1),
             }},
        {.method = GET,
         .pattern = "/api/v1/admin/sources",
         .name = "admin_sources_list",
         .action = AUTH_ADMIN,
         .body = BODY_NONE,
         .job = "ingest",
         .handler = api_admin_sources_list,
         .params = {Q_INT("limit", 1, HOOK_LIST_MAX_LIMIT), Q_NEXT}},
        {.method = GET,
         .pattern = "/api/v1/admin/sources/{key}",
         .name = "admin_source",
         .action = AUTH_ADMIN,
         .key = ROUTE_KEY_SOURCE,
         .body = BODY_NONE,
         .job = "ingest",
         .handler = api_admin_sources_get},
        {.method = DELETE,
         .pattern = "/api/v1/admin/sources/{key}",
         .name = "admin_source_delete",
         .action = AUTH_ADMIN,
         .key = ROUTE_KEY_SOURCE,
         .body = BODY_NONE,
         .job = "ingest",
         .handler = api_admin_sources_delete},
        {.method = POST,
         .pattern = "/api/v1/admin/sources/{key}/rotate",
         .name = "admin_source_rotate",
         .action = AUTH_ADMIN,
         .key = ROUTE_KEY_SOURCE,
         .body = BODY_OPTIONAL,
         .job = "ingest",
         .handler = api_admin_sources_rotate,
         .params = {B_STR("secret", 1, STORE_SOURCE_SECRET_MAX),
                    B_INT("overlap_s", 0, 30LL * 86400)}},
        {.method = GET,
         .pattern = "/api/v1/admin/sources/{key}/receipts",
         .name = "admin_source_receipts",
         .action = AUTH_ADMIN,
         .key = ROUTE_KEY_SOURCE,
         .body = BODY_NONE,
         .job = "ingest",
         .handler = api_admin_sources_receipts,
         .params = {Q_INT("limit", 1, HOOK_LIST_MAX_LIMIT), Q_NEXT}},
        /* ---- public, without a token ---- */
        /* An outside sender's delivery: no Roost token, the sender's own signature instead
         * (checked by the handler, which reads the raw body itself). */
        {.method = POST,
         .pattern = "/ingest/{key}",
         .name = "ingest",
         .auth = ROUTE_AUTH_NONE,
         .key = ROUTE_KEY_SOURCE,
         .body = BODY_NONE,
         .job = "ingest",
         .handler = api_ingest},
        {.method = GET,
         .pattern = "/api/v1/keys/server",
         .name = "server_keys",
         .auth = ROUTE_AUTH_NONE,
         .body = BODY_NONE,
         .handler = api_server_keys},
        {.method = GET,
         .pattern = "/api/v1/openapi.json",
         .name = "openapi",
         .auth = ROUTE_AUTH_NONE,
         .body = BODY_NONE,
         .head = true,
         .draining = true,
         .handler = api_static},
        /* MCP over Streamable HTTP: the agent is a tool argument, so the scope is checked per tool
         * (as publish checks its recipients) and a signature, under the policy, is a producer
         * key's. The body is JSON-RPC, read by the handler. */
        {.method = POST,
         .pattern = "/mcp",
         .name = "mcp",
         .action = AUTH_PUBLISH,
         .body = BODY_NONE,
         .signed_policy = true,
         .handler = api_mcp},
        /* ---- operations (answered while draining) ---- */
        {.method = GET,
         .pattern = "/healthz",
         .name = "healthz",
         .auth = ROUTE_AUTH_NONE,
         .body = BODY_NONE,
         .head = true,
         .draining = true,
         .handler = api_healthz},
        {.method = GET,
         .pattern = "/readyz",
         .name = "readyz",
         .auth = ROUTE_AUTH_NONE,
         .body = BODY_NONE,
         .head = true,
         .draining = true,
         .job = "ready",
         .handler = api_readyz},
        {.method = GET,
         .pattern = "/metrics",
         .name = "metrics",
         .auth = ROUTE_AUTH_NONE,
         .body = BODY_NONE,
         .draining = true,
         .handler = api_metrics},
        /* ---- the embedded roost.js and dashboard ---- */
        {.method = GET,
         .pattern = "/sdk/{file}",
         .name = "static",
         .auth = ROUTE_AUTH_NONE,
         .body = BODY_NONE,
         .head = true,
         .draining = true,
         .handler = api_static},
        {.method = GET,
         .pattern = "/ui",
         .name = "static",
         .auth = ROUTE_AUTH_NONE,
         .body = BODY_NONE,
         .head = true,
         .draining = true,
         .handler = api_static},
        {.method = GET,
         .pattern = "/ui/{file}",
         .name = "static",
         .auth = ROUTE_AUTH_NONE,
         .body = BODY_NONE,
         .head = true,
         .draining = true,
         .handler = api_static},
};

const size_t router_routes_count = sizeof router_routes / sizeof router_routes[0];

const struct route_param *route_param_find(const struct route *r, enum route_param_in in,
                                           const char *name)
{
    for (size_t i = 0; r != NULL && i < ROUTE_MAX_PARAMS && r->params[i].name != NULL; i++) {
        if (r->params[i].in == in && strcmp(r->params[i].name, name) == 0) {
            return &r->params[i];
        }
    }
    return NULL;
}

int64_t route_param_max(const struct route_param *p, const struct config *cfg)
{
    switch (p->cfg) {
    case RP_CFG_CLAIM_MAX_WAIT_S:
        return cfg->claim_max_wait_s;
    case RP_CFG_LEASE_MAX_S:
        return cfg->lease_max_s;
    case RP_CFG_MAX_BATCH:
        return cfg->limits_max_batch;
    case RP_CFG_MAX_RECIPIENTS:
        return cfg->limits_max_recipients;
    case RP_CFG_NONE:
    default:
        return p->max;
    }
}

bool route_signature_required(const struct route *r, int policy)
{
    if (!r->signed_policy) {
        return false;
    }
    return policy == CONFIG_SIG_ALL || (policy == CONFIG_SIG_MUTATIONS && r->method != GET);
}

static const char *method_name(enum evhttp_cmd_type m)
{
    return m == GET ? "GET" : m == POST ? "POST" : m == DELETE ? "DELETE" : "?";
}

static const char *const type_names[] = {
    [RP_INT] = "integer",   [RP_STRING] = "string", [RP_TIME] = "date-time",
    [RP_OBJECT] = "object", [RP_ARRAY] = "array",   [RP_ANY] = "any"};
static const char *const cfg_keys[] = {[RP_CFG_NONE] = NULL,
                                       [RP_CFG_CLAIM_MAX_WAIT_S] = "claim.max_wait_s",
                                       [RP_CFG_LEASE_MAX_S] = "lease.max_s",
                                       [RP_CFG_MAX_BATCH] = "limits.max_batch",
                                       [RP_CFG_MAX_RECIPIENTS] = "limits.max_recipients"};

static json_t *param_json(const struct route_param *p, const struct config *cfg)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:b}", "name", p->name, "in",
                          p->in == RP_QUERY ? "query" : "body", "type", type_names[p->type],
                          "required", p->required);
    if (o == NULL) {
        return NULL;
    }
    if (p->type == RP_INT || p->type == RP_STRING || p->type == RP_ARRAY) {
        json_object_set_new(o, "min", json_integer(p->min));
    }
    if (p->type != RP_OBJECT && p->type != RP_ANY) {
        json_object_set_new(o, "max", json_integer(route_param_max(p, cfg)));
    }
    if (cfg_keys[p->cfg] != NULL) {
        json_object_set_new(o, "max_config", json_string(cfg_keys[p->cfg]));
    }
    if (p->values != NULL) {
        json_t *vals = json_array();
        const char *s = p->values;
        while (vals != NULL && *s) {
            const char *bar = strchr(s, '|');
            size_t n = bar ? (size_t)(bar - s) : strlen(s);
            json_array_append_new(vals, json_stringn(s, n));
            s += n + (bar ? 1 : 0);
        }
        json_object_set_new(o, "enum", vals);
    }
    return o;
}

char *routes_json(const struct config *cfg)
{
    static const char *const scopes[] = {[AUTH_READ] = "agent:{agent}:read",
                                         [AUTH_CONSUME] = "agent:{agent}:consume",
                                         [AUTH_PUBLISH] = "agent:{recipient}:publish",
                                         [AUTH_ADMIN] = "tenant:admin"};
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < router_routes_count; i++) {
        const struct route *r = &router_routes[i];
        json_t *params = json_array();
        for (size_t k = 0; params != NULL && k < ROUTE_MAX_PARAMS && r->params[k].name; k++) {
            json_array_append_new(params, param_json(&r->params[k], cfg));
        }
        json_t *o = json_pack(
            "{s:s, s:s, s:s, s:s, s:o, s:s, s:b, s:b, s:{s:b, s:b}, s:o, s:o}", "method",
            method_name(r->method), "path", r->pattern, "name", r->name, "auth",
            r->auth == ROUTE_AUTH_NONE     ? "none"
            : r->auth == ROUTE_AUTH_STREAM ? "stream"
                                           : "token",
            "scope", r->auth == ROUTE_AUTH_NONE ? json_null() : json_string(scopes[r->action]),
            "body",
            r->body == BODY_NONE       ? "none"
            : r->body == BODY_REQUIRED ? "required"
                                       : "optional",
            "head", r->head, "draining", r->draining, "signature", "mutations",
            route_signature_required(r, CONFIG_SIG_MUTATIONS), "all",
            route_signature_required(r, CONFIG_SIG_ALL), "job",
            r->job ? json_string(r->job) : json_null(), "params", params ? params : json_array());
        json_array_append_new(list, o);
    }
    char *text = list ? json_dumps(list, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(list);
    return text;
}
