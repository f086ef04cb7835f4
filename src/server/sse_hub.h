/* SPDX-License-Identifier: MIT */
/* Server-Sent Events: the subscribe route and the hub of open streams, indexed by (tenant, agent).
 * Pings are data-less and coalesced: each subscriber holds at most one pending head, never a
 * backlog. Loop thread only.
 *
 *   retry: 3000                         sent once, on connect
 *
 *   id: 1045                            on connect (current head) and after every commit that
 *   event: inbox_updated                makes work claimable; id is the head, so a reconnecting
 *   data: {"cursor_hint":1045}          EventSource sends it back as Last-Event-ID
 *
 *   event: heartbeat                    every sse.heartbeat_s, carrying the head too
 *   data: {"cursor_hint":1045}
 */
#ifndef ROOST_SSE_HUB_H
#define ROOST_SSE_HUB_H

#include <stddef.h>
#include <stdint.h>

struct server;
struct sse_hub;

struct sse_hub *sse_hub_new(struct server *srv);
void sse_hub_free(struct sse_hub *hub);
/* A commit moved the agent's head (or made work claimable): ping its subscribers. */
void sse_hub_notify(struct sse_hub *hub, const char *tenant_id, const char *agent_id, int64_t head);
/* Ends every stream cleanly (terminating chunk, then the connection closes). */
void sse_hub_shutdown(struct sse_hub *hub);
/* Open streams (for the drain check and metrics). */
size_t sse_hub_count(const struct sse_hub *hub);
/* Open streams of one agent, or of one tenant when agent_id is NULL (hash lookups, loop thread;
 * the admin views). */
size_t sse_hub_count_of(struct sse_hub *hub, const char *tenant_id, const char *agent_id);

#endif
