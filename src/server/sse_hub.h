/* SPDX-License-Identifier: MIT */
/* Server-Sent Events: the hub of open streams, indexed by (tenant, agent) (the route that opens
 * them is api_subscribe.c).
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

#include "common/limits.h"

struct config;
struct evhttp_connection;
struct evhttp_request;
struct event_base;
struct metrics;
struct sse_hub;

/* `cfg` (sse.*, read at each use) and `metrics` (the ping counter) are borrowed and must outlive
 * the hub. on_stream_closed(arg) runs after each stream has closed (the daemon's drain check). */
struct sse_hub *sse_hub_new(struct event_base *base, const struct config *cfg,
                            struct metrics *metrics, void (*on_stream_closed)(void *arg),
                            void *arg);
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
/* One agent's open streams on this node. */
struct sse_agent_streams {
    char agent_id[ROOST_ID_MAX + 1];
    size_t n;
};
/* The tenant's agents with open streams on this node and their counts: a copy (*out, the caller
 * frees it; NULL when *n is 0) that a job rendering an agent list off the loop sorts with
 * sse_streams_sort and reads with sse_streams_of. Walks only that tenant's agent entries (a list
 * per tenant), unsorted: the loop thread only copies. ROOST_OK or ROOST_ENOMEM. */
int sse_hub_tenant_streams(struct sse_hub *hub, const char *tenant_id,
                           struct sse_agent_streams **out, size_t *n);
/* Sorts such a copy by agent id, as sse_streams_of needs. Any thread. */
void sse_streams_sort(struct sse_agent_streams *list, size_t n);
/* The count of agent_id in a sorted copy (0 when absent). Any thread. */
size_t sse_streams_of(const struct sse_agent_streams *list, size_t n, const char *agent_id);

/* The message of the 429 when one more stream of (tenant, agent) would pass sse.max_total,
 * sse.max_per_tenant or sse.max_per_agent; NULL when within them. */
const char *sse_hub_over_limit(struct sse_hub *hub, const char *tenant_id, const char *agent_id);
/* A stream of (tenant, agent) is being opened: until sse_hub_opening_end, the commits notified for
 * the agent raise the head that sse_hub_open sends first, so a commit that lands between the
 * store's head read and the open is not lost (its ping had no stream to go to). Call before the
 * head is read; end it after sse_hub_open, whatever happened. ROOST_OK or ROOST_ENOMEM. */
int sse_hub_opening_begin(struct sse_hub *hub, const char *tenant_id, const char *agent_id);
void sse_hub_opening_end(struct sse_hub *hub, const char *tenant_id, const char *agent_id);
/* Turns the request `req` (not yet answered) into a stream of the agent: sends the stream's
 * headers (X-Request-Id: req_id), the retry line and at once the head (`head` as read from the
 * store, or newer). last_event_id (-1: none) is the client's Last-Event-ID: when it already saw
 * the head, the first event is a heartbeat. Returns ROOST_OK (the hub owns the connection from
 * now on) or ROOST_ENOMEM (nothing sent: the caller answers). expires_ms (wall clock; 0 = never)
 * is the exp of the token that opened it: then the stream ends with a last `event: token_expired`
 * and the connection closes, so the client reconnects with a fresh token. */
/* How the hub sets a stream connection's close callback: evhttp_connection_set_closecb unless
 * the daemon's listener must see every close (listener_set_closecb). */
void sse_hub_set_closecb_fn(struct sse_hub *hub,
                            void (*set)(struct evhttp_connection *evcon,
                                        void (*cb)(struct evhttp_connection *, void *), void *arg));
int sse_hub_open(struct sse_hub *hub, struct evhttp_request *req, const char *req_id,
                 const char *tenant_id, const char *agent_id, int64_t head, int64_t last_event_id,
                 int64_t expires_ms);

#endif
