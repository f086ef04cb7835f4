/* SPDX-License-Identifier: MIT */
/* The handler list: one function per route, defined in api_<resource>.c, named by the route
 * declaration (routes.c). Each takes a routed, authenticated request and ends it with exactly one
 * request_reply_*() (see request.h), now or from its store job's done(). */
#ifndef ROOST_SERVER_API_H
#define ROOST_SERVER_API_H

#include <jansson.h>
#include <stdbool.h>

struct job;
struct request;
struct runtime;

/* api_events.c */
void api_publish(struct request *rq);

/* api_inbox.c */
void api_inbox_read(struct request *rq);
void api_inbox_peek(struct request *rq);
void api_inbox_claim(struct request *rq);
/* For a publish about to be written (loop thread): the agent's longest-parked long-polling claim,
 * unparked, as a job to run as the publish job's follower (workers.h), so the event is claimed
 * in the transaction that makes it, or NULL when none waits. */
struct job *api_inbox_take_claim(struct runtime *rt, const char *tenant_id, const char *agent_id);
void api_event_ack(struct request *rq);
void api_events_ack(struct request *rq);
void api_event_release(struct request *rq);
void api_event_extend(struct request *rq);
void api_release_all(struct request *rq);
void api_state_get(struct request *rq);

/* api_mcp.c: POST /mcp, the MCP tools over Streamable HTTP (stateless), each run by the REST
 * handler above that serves its route. */
void api_mcp(struct request *rq);

/* api_subscribe.c */
void api_subscribe(struct request *rq);
/* POST /api/v1/agents/{agent}/subscribe/ticket: a single-use ticket for ?ticket= (auth.h). */
void api_subscribe_ticket(struct request *rq);

/* api_admin.c */
void api_admin_agents(struct request *rq);
void api_admin_quarantine(struct request *rq);
void api_admin_requeue(struct request *rq);
void api_admin_requeue_all(struct request *rq);
void api_admin_quarantine_inspect(struct request *rq);
void api_admin_purge(struct request *rq);
void api_admin_stats(struct request *rq);
/* GET /api/v1/admin/events/{event} (any status) and /api/v1/admin/events?correlation_id= */
void api_admin_event_get(struct request *rq);
void api_admin_events_find(struct request *rq);
/* GET /api/v1/admin/history: the tenant's chart samples (history.h) */
void api_admin_history(struct request *rq);

/* api_keys.c */
void api_admin_keys_add(struct request *rq);
void api_admin_keys_list(struct request *rq);
void api_admin_keys_revoke(struct request *rq);
/* GET /api/v1/keys/server: no authentication. */
void api_server_keys(struct request *rq);
/* Loads an agent's public key (PEM string or JWK) for alg; *material the public SPKI PEM (caller
 * frees). ROOST_OK, ROOST_ENOMEM, or ROOST_EKEYMATERIAL with *why set. */
int api_keys_load_public(int alg, const json_t *pk, char **material, const char **why);

/* api_oauth.c: device login (RFC 8628), refresh tokens, RFC 8414 metadata; no authentication. */
void api_oauth_metadata(struct request *rq);
void api_oauth_device_authorization(struct request *rq);
void api_oauth_token(struct request *rq);
/* SHA-256 of s in lowercase hex (how device codes and refresh tokens are stored). */
void api_oauth_sha256_hex(const char *s, char out[65]);

/* api_devices.c: the operator's side of device login (tenant:admin). */
void api_admin_devices_list(struct request *rq);
void api_admin_devices_approve(struct request *rq);
void api_admin_devices_deny(struct request *rq);
void api_admin_devices_revoke(struct request *rq);

/* api_static.c: without authentication: the embedded roost.js (/sdk/...), dashboard (/ui,
 * /ui/...) and OpenAPI document (/api/v1/openapi.json), with ETag and 304. */
void api_static(struct request *rq);

/* api_webhooks.c: webhook endpoints (DESIGN §6.3). */
void api_callbacks_add(struct request *rq);
void api_callbacks_list(struct request *rq);
void api_callbacks_delete(struct request *rq);
void api_admin_endpoints_list(struct request *rq);
void api_admin_endpoint_get(struct request *rq);
void api_admin_endpoint_disable(struct request *rq);
void api_admin_endpoint_enable(struct request *rq);
void api_admin_endpoint_attempts(struct request *rq);
void api_admin_endpoint_replay(struct request *rq);
/* Waits (bounded) until no registration's verification thread runs: before the event base goes
 * away. */
void api_webhooks_drain(void);

/* api_ingest.c: inbound webhooks (DESIGN §6.5): the operator's sources and their receipts, and
 * the senders' POST /ingest/{source_id} (no token; {key} carries the source id). */
void api_admin_sources_add(struct request *rq);
void api_admin_sources_list(struct request *rq);
void api_admin_sources_get(struct request *rq);
void api_admin_sources_delete(struct request *rq);
void api_admin_sources_rotate(struct request *rq);
void api_admin_sources_receipts(struct request *rq);
void api_ingest(struct request *rq);

/* api_health.c: without authentication, answered while draining (GET /healthz, /readyz, /metrics).
 */
void api_healthz(struct request *rq);
void api_readyz(struct request *rq);
void api_metrics(struct request *rq);

#endif
