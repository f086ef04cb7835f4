/* SPDX-License-Identifier: MIT */
/* SSE streams (see sse_hub.h). Memory per idle subscriber is this file's struct sse_sub plus
 * evhttp's connection; agents and tenants are shared entries in two hash tables.
 *
 * Writing: each event is one HTTP chunk, formatted on the stack. On a plain TCP stream whose
 * kernel send queue holds nothing unsent, the chunk goes straight to the socket with one send():
 * no evbuffer, no epoll_ctl to arm a write event and none to disarm it, no loop iteration between
 * the commit and the bytes leaving (a ping to 10k streams is 10k sends in a row). Anything the
 * kernel does not take at once (and every chunk on TLS) goes through the connection's
 * bufferevent as before.
 *
 * Backpressure: a subscriber never has more than one event in flight. While the bufferevent is
 * still writing the previous one (`flushing`), a newer head only replaces `pending`; the write-done
 * callback sends it. A direct send happens only while the kernel has sent everything it was given
 * (SIOCOUTQNSD is 0), so the kernel holds at most one event unsent too. A slow reader costs one
 * small event of buffer, never a backlog, and no byte cap is needed: a subscriber stuck mid-write
 * for sse.stall_timeout_s is disconnected, and TCP_USER_TIMEOUT makes the kernel give up on a peer
 * that vanished (a laptop lid closed) 30 s after that, so its slot is freed in about 90 s instead
 * of after ~15 minutes of retransmissions.
 */
#include "server/sse_hub.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#ifdef __linux__
#include <linux/sockios.h>
#endif

#include "common/hash.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "roost/roost_error.h"
#include "server/config.h"
#include "server/metrics.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

#define HUB_BUCKETS 65536
#define HB_SLICES 128 /* a heartbeat round in 128 ticks of 512 buckets (HUB_BUCKETS / 128) */
#define SSE_NOTSENT_LOWAT 512 /* bytes: a few events */
#define SSE_KERNEL_TIMEOUT_EXTRA_S 30
/* One event as one HTTP chunk: at most 4 + 20 + 1 + 21 + 21 + 20 + 3 = 90 bytes of event (a ping
 * with the largest head), its size line in front and CRLF behind. */
#define FRAME_CAP 128
#define FRAME_BODY_AT 8 /* room for the chunk size line ("5a\r\n") in front of the event */

struct sse_sub;

struct sse_agent {
    struct sse_agent *next;            /* bucket chain */
    struct sse_agent *t_prev, *t_next; /* in tenant->agents */
    struct sse_tenant *tenant;
    struct sse_sub *subs;
    int64_t head; /* newest head seen on this node */
    size_t n_subs;
    size_t n_opening; /* streams being opened (sse_hub_opening_begin): they keep the entry */
    bool poked;       /* notified while streams were opening: their first event is a ping */
    char agent_id[];
};

struct sse_tenant {
    struct sse_tenant *next;
    struct sse_agent *agents; /* its agent entries (sse_hub_tenant_streams walks them) */
    size_t n_subs;
    size_t n_agents; /* agent entries pointing here: they keep the entry */
    char tenant_id[];
};

struct sse_sub {
    struct sse_sub *prev, *next; /* in agent->subs */
    struct sse_agent *agent;
    struct sse_hub *hub;
    struct evhttp_request *req;
    int64_t last_sent;      /* head of the last event written */
    int64_t pending;        /* a ping is owed, with this head (0 = none; notified heads are >= 1) */
    int64_t flushing_since; /* monotonic ms when the event in flight was queued; 0 = idle */
    struct event *expire_ev; /* ends the stream at its token's exp; NULL when it has none */
    bool ending;             /* we end it (drop, shutdown, hub free): evhttp frees the request */
    bool direct;             /* plain TCP: chunks may go straight to the socket (not on TLS) */
};

struct sse_hub {
    const struct config *cfg; /* the daemon's, read at each use: SIGHUP may change it */
    struct metrics *metrics;
    void (*on_stream_closed)(void *arg);
    void *arg;
    struct sse_agent **agents; /* HUB_BUCKETS chains */
    struct sse_tenant **tenants;
    struct event_base *base;
    void (*set_closecb)(struct evhttp_connection *evcon,
                        void (*cb)(struct evhttp_connection *, void *), void *arg);
    size_t n_subs;
    struct event *heartbeat_ev;
    struct evbuffer *scratch; /* what sse_hub_open hands to evhttp (empty between uses) */
    size_t hb_next;           /* first bucket of the next heartbeat slice */
    bool shutting_down;
};

static uint32_t agent_bucket(const char *tenant_id, const char *agent_id)
{
    return (uint32_t)(hash_tenant_agent(tenant_id, agent_id) % HUB_BUCKETS);
}

static uint32_t tenant_bucket(const char *tenant_id)
{
    return (uint32_t)(hash_fnv1a_str(HASH_FNV1A_INIT, tenant_id) % HUB_BUCKETS);
}

static struct sse_tenant *tenant_get(struct sse_hub *hub, const char *tenant_id, bool create)
{
    uint32_t b = tenant_bucket(tenant_id);
    for (struct sse_tenant *t = hub->tenants[b]; t; t = t->next) {
        if (strcmp(t->tenant_id, tenant_id) == 0) {
            return t;
        }
    }
    if (!create) {
        return NULL;
    }
    size_t len = strlen(tenant_id) + 1;
    struct sse_tenant *t = calloc(1, sizeof *t + len);
    if (t) {
        memcpy(t->tenant_id, tenant_id, len);
        t->next = hub->tenants[b];
        hub->tenants[b] = t;
    }
    return t;
}

/* Frees the tenant's entry once no agent entry points to it. */
static void tenant_unref(struct sse_hub *hub, struct sse_tenant *t)
{
    if (--t->n_agents > 0) {
        return;
    }
    uint32_t b = tenant_bucket(t->tenant_id);
    for (struct sse_tenant **p = &hub->tenants[b]; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            free(t);
            return;
        }
    }
}

static struct sse_agent *agent_get(struct sse_hub *hub, const char *tenant_id, const char *agent_id)
{
    uint32_t b = agent_bucket(tenant_id, agent_id);
    for (struct sse_agent *a = hub->agents[b]; a; a = a->next) {
        if (strcmp(a->agent_id, agent_id) == 0 && strcmp(a->tenant->tenant_id, tenant_id) == 0) {
            return a;
        }
    }
    return NULL;
}

static struct sse_agent *agent_create(struct sse_hub *hub, const char *tenant_id,
                                      const char *agent_id)
{
    struct sse_tenant *t = tenant_get(hub, tenant_id, true);
    size_t len = strlen(agent_id) + 1;
    struct sse_agent *a = t ? calloc(1, sizeof *a + len) : NULL;
    if (t) {
        t->n_agents++;
    }
    if (!a) {
        if (t) {
            tenant_unref(hub, t);
        }
        return NULL;
    }
    memcpy(a->agent_id, agent_id, len);
    a->tenant = t;
    a->t_next = t->agents;
    if (t->agents) {
        t->agents->t_prev = a;
    }
    t->agents = a;
    uint32_t b = agent_bucket(tenant_id, agent_id);
    a->next = hub->agents[b];
    hub->agents[b] = a;
    return a;
}

/* Frees the agent's entry (and its tenant's, when that was the last) once neither a stream nor
 * an opening holds it. */
static void agent_unref(struct sse_hub *hub, struct sse_agent *a)
{
    if (a->n_subs > 0 || a->n_opening > 0) {
        return;
    }
    struct sse_tenant *t = a->tenant;
    if (a->t_prev) {
        a->t_prev->t_next = a->t_next;
    } else {
        t->agents = a->t_next;
    }
    if (a->t_next) {
        a->t_next->t_prev = a->t_prev;
    }
    uint32_t b = agent_bucket(t->tenant_id, a->agent_id);
    for (struct sse_agent **p = &hub->agents[b]; *p; p = &(*p)->next) {
        if (*p == a) {
            *p = a->next;
            free(a);
            break;
        }
    }
    tenant_unref(hub, t);
}

/* Unlinks a subscriber; frees its agent (and tenant) entries when they become empty. */
static void sub_unlink(struct sse_sub *sub)
{
    struct sse_hub *hub = sub->hub;
    struct sse_agent *a = sub->agent;
    if (sub->prev) {
        sub->prev->next = sub->next;
    } else {
        a->subs = sub->next;
    }
    if (sub->next) {
        sub->next->prev = sub->prev;
    }
    hub->n_subs--;
    a->tenant->n_subs--;
    a->n_subs--;
    agent_unref(hub, a);
}

static void sub_free(struct sse_sub *sub)
{
    if (sub->expire_ev) {
        event_free(sub->expire_ev);
    }
    free(sub);
}

/* evhttp calls this when the client goes away, when we free the connection, and after the
 * terminating chunk of a "Connection: close" stream has been written. */
static void on_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    struct sse_sub *sub = arg;
    struct sse_hub *hub = sub->hub;
    log_line(LOG_INFO, "stream closed", "route=subscribe tenant=%s agent=%s",
             sub->agent->tenant->tenant_id, sub->agent->agent_id);
    /* The client went away (EOF, reset, timeout) while the reply was still open: evhttp has
     * detached the request from the connection and leaves it to us. When we ended the stream,
     * evhttp frees it (after this call, or already before it: never touch it then). */
    struct evhttp_request *orphan =
        !sub->ending && evhttp_request_get_connection(sub->req) == NULL ? sub->req : NULL;
    sub_unlink(sub);
    sub_free(sub);
    if (orphan) {
        evhttp_request_free(orphan);
    }
    hub->on_stream_closed(hub->arg);
}

static void drop(struct sse_sub *sub, const char *why)
{
    log_info("sse subscriber dropped", "reason=%s agent=%s", why, sub->agent->agent_id);
    sub->ending = true;
    /* Runs on_close synchronously, which frees sub. */
    evhttp_connection_free(evhttp_request_get_connection(sub->req));
}

static void on_written(struct evhttp_connection *evcon, void *arg);

/* One event framed as one HTTP chunk, built in buf[]: the event (the SSE frame of sse_hub.h) is
 * buf[FRAME_BODY_AT, body_end), the chunk is buf[chunk_at, chunk_end). */
struct frame {
    char buf[FRAME_CAP];
    size_t chunk_at, body_end, chunk_end;
};

static char *put_str(char *p, const char *s, size_t len)
{
    memcpy(p, s, len);
    return p + len;
}

static char *put_i64(char *p, int64_t v)
{
    char digits[20];
    size_t n = 0;
    uint64_t u = v > 0 ? (uint64_t)v : 0; /* heads are never negative */
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u > 0);
    while (n > 0) {
        *p++ = digits[--n];
    }
    return p;
}

#define PUT_LIT(p, lit) put_str((p), (lit), sizeof(lit) - 1)

/* The ping (or heartbeat) with `head`, without printf: a fan-out formats one per stream. */
static void frame_format(struct frame *f, int64_t head, bool heartbeat)
{
    char *p = f->buf + FRAME_BODY_AT;
    if (heartbeat) {
        p = PUT_LIT(p, "event: heartbeat\n");
    } else {
        p = PUT_LIT(p, "id: ");
        p = put_i64(p, head);
        p = PUT_LIT(p, "\nevent: inbox_updated\n");
    }
    p = PUT_LIT(p, "data: {\"cursor_hint\":");
    p = put_i64(p, head);
    p = PUT_LIT(p, "}\n\n");
    f->body_end = (size_t)(p - f->buf);
    p = PUT_LIT(p, "\r\n");
    f->chunk_end = (size_t)(p - f->buf);
    /* The size line, right before the event: the event is 16..255 bytes, two hex digits. */
    static const char hex[] = "0123456789abcdef";
    size_t body_len = f->body_end - FRAME_BODY_AT;
    f->chunk_at = FRAME_BODY_AT - 4;
    f->buf[f->chunk_at] = hex[(body_len >> 4) & 15];
    f->buf[f->chunk_at + 1] = hex[body_len & 15];
    f->buf[f->chunk_at + 2] = '\r';
    f->buf[f->chunk_at + 3] = '\n';
}

/* Bytes of the frame the kernel took straight away: all of them, some, or none (then the
 * bufferevent writes the rest). Only on plain TCP, with nothing queued in the bufferevent and
 * nothing unsent in the kernel (otherwise the reader is behind: let the event wait in the
 * bufferevent, where the stall check sees it). A send error is left to the bufferevent too, which
 * reports it to evhttp, which closes the stream the usual way. */
static size_t send_direct(struct sse_sub *sub, struct bufferevent *bev, const struct frame *f)
{
#ifdef SIOCOUTQNSD
    if (!sub->direct || evbuffer_get_length(bufferevent_get_output(bev)) != 0) {
        return 0;
    }
    evutil_socket_t fd = bufferevent_getfd(bev);
    int unsent = 0;
    if (ioctl(fd, SIOCOUTQNSD, &unsent) != 0 || unsent != 0) {
        return 0;
    }
    ssize_t n =
        send(fd, f->buf + f->chunk_at, f->chunk_end - f->chunk_at, MSG_DONTWAIT | MSG_NOSIGNAL);
    return n > 0 ? (size_t)n : 0;
#else
    (void)sub;
    (void)bev;
    (void)f;
    return 0;
#endif
}

/* Writes one event (inbox_updated when the head moved, else heartbeat). Returns false when the
 * subscriber was dropped (and freed). Not while flushing: the caller coalesces then. `first`: the
 * stream's first event, which goes through evhttp's chunk path (the headers are still queued in
 * front of it) and so makes on_written the connection's write callback for good. */
static bool sub_write(struct sse_sub *sub, int64_t head, bool heartbeat, bool first)
{
    struct frame f;
    frame_format(&f, head, heartbeat);
    if (!heartbeat) {
        sub->last_sent = head;
        metrics_sse_ping(sub->hub->metrics);
    }
    sub->pending = 0;
    if (first) {
        struct evbuffer *scratch = sub->hub->scratch;
        int rc = evbuffer_add(scratch, f.buf + FRAME_BODY_AT, f.body_end - FRAME_BODY_AT);
        if (rc == 0) {
            evhttp_send_reply_chunk_with_cb(sub->req, scratch, on_written, sub);
        }
        evbuffer_drain(scratch, evbuffer_get_length(scratch));
        if (rc != 0) {
            drop(sub, "out_of_memory");
            return false;
        }
        sub->flushing_since = time_mono_ms();
        return true;
    }
    struct evhttp_connection *evcon = evhttp_request_get_connection(sub->req);
    if (evcon == NULL) {
        return true; /* the client has gone: on_close frees the subscriber */
    }
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    size_t sent = send_direct(sub, bev, &f), len = f.chunk_end - f.chunk_at;
    if (sent == len) {
        return true;
    }
    /* The rest, framing included, goes into the bufferevent as raw bytes: evhttp's own chunk
     * path would frame it again. When it has drained, evhttp calls the connection's write
     * callback, which sse_hub_open set to on_written for this subscriber and nothing resets while
     * the stream lives (evhttp changes it only when a reply ends). */
    if (evbuffer_add(bufferevent_get_output(bev), f.buf + f.chunk_at + sent, len - sent) != 0) {
        drop(sub, "out_of_memory");
        return false;
    }
    sub->flushing_since = time_mono_ms();
    return true;
}

static void on_written(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    struct sse_sub *sub = arg;
    sub->flushing_since = 0;
    if (sub->pending > 0 && !sub->hub->shutting_down && !sub->ending) {
        sub_write(sub, sub->pending, false, false);
    }
}

/* Pings one subscriber with `head`, coalescing while a write is in flight. A head the subscriber
 * already has still pings: release, requeue, lease expiry and due events make work claimable
 * without moving the head. */
static void sub_ping(struct sse_sub *sub, int64_t head)
{
    if (sub->ending) {
        return; /* its last event is written; the connection closes after it */
    }
    if (sub->flushing_since) {
        if (head > sub->pending) {
            sub->pending = head;
        }
        return;
    }
    sub_write(sub, head, false, false);
}

void sse_hub_notify(struct sse_hub *hub, const char *tenant_id, const char *agent_id, int64_t head)
{
    struct sse_agent *a = agent_get(hub, tenant_id, agent_id);
    if (!a || hub->shutting_down) {
        return;
    }
    if (head > a->head) {
        a->head = head;
    }
    if (a->n_opening > 0) {
        a->poked = true;
    }
    for (struct sse_sub *sub = a->subs, *next; sub; sub = next) {
        next = sub->next; /* sub_ping may drop (free) sub, and free a when it was the last */
        bool last = next == NULL;
        sub_ping(sub, a->head);
        if (last) {
            break;
        }
    }
}

/* The next slice of the heartbeat round: HB_SLICES ticks per sse.heartbeat_s. */
static void arm_heartbeat(struct sse_hub *hub)
{
    int64_t us = hub->cfg->sse_heartbeat_s * 1000000 / HB_SLICES;
    struct timeval tv = {(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
    evtimer_add(hub->heartbeat_ev, &tv);
}

/* Every heartbeat: each idle subscriber gets the head; one stuck mid-write for
 * sse.stall_timeout_s is dropped. One tick walks 1/HB_SLICES of the buckets, so every subscriber is
 * still visited once per sse.heartbeat_s but the loop never writes to all streams at once (10k
 * streams in one go held the loop for ~0.3 s on a 2-vCPU VM, delaying every ping and request behind
 * them). */
static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sse_hub *hub = arg;
    int64_t now = time_mono_ms();
    int64_t stuck_ms = hub->cfg->sse_stall_timeout_s * 1000;
    size_t from = hub->hb_next, to = from + HUB_BUCKETS / HB_SLICES;
    hub->hb_next = to % HUB_BUCKETS;
    for (size_t b = from; b < to; b++) {
        struct sse_agent *a = hub->agents[b];
        while (a) {
            struct sse_agent *next_agent = a->next;
            size_t left = a->n_subs;
            /* Dropping the agent's last subscriber frees `a`: count instead of touching it. */
            for (struct sse_sub *sub = a->subs, *next; sub && left > 0; sub = next, left--) {
                next = sub->next;
                if (sub->ending) {
                    continue;
                } else if (sub->flushing_since) {
                    if (now - sub->flushing_since > stuck_ms) {
                        drop(sub, "stalled");
                    }
                } else if (sub->pending > 0) {
                    sub_write(sub, sub->pending, false, false);
                } else {
                    sub_write(sub, sub->last_sent > a->head ? sub->last_sent : a->head, true,
                              false);
                }
            }
            a = next_agent;
        }
    }
    arm_heartbeat(hub);
}

struct sse_hub *sse_hub_new(struct event_base *base, const struct config *cfg,
                            struct metrics *metrics, void (*on_stream_closed)(void *arg), void *arg)
{
    struct sse_hub *hub = calloc(1, sizeof *hub);
    if (!hub) {
        return NULL;
    }
    hub->cfg = cfg;
    hub->metrics = metrics;
    hub->on_stream_closed = on_stream_closed;
    hub->arg = arg;
    hub->base = base;
    hub->set_closecb = evhttp_connection_set_closecb;
    hub->agents = calloc(HUB_BUCKETS, sizeof *hub->agents);
    hub->tenants = calloc(HUB_BUCKETS, sizeof *hub->tenants);
    hub->heartbeat_ev = evtimer_new(base, on_heartbeat, hub);
    hub->scratch = evbuffer_new();
    if (!hub->agents || !hub->tenants || !hub->heartbeat_ev || !hub->scratch) {
        sse_hub_free(hub);
        return NULL;
    }
    arm_heartbeat(hub);
    return hub;
}

void sse_hub_shutdown(struct sse_hub *hub)
{
    if (!hub || hub->shutting_down) {
        return;
    }
    hub->shutting_down = true;
    evtimer_del(hub->heartbeat_ev);
    /* Collect first: ending a stream may close its connection and free entries. */
    size_t n = hub->n_subs, k = 0;
    struct evhttp_request **reqs = calloc(n ? n : 1, sizeof *reqs);
    for (size_t b = 0; reqs && b < HUB_BUCKETS; b++) {
        for (struct sse_agent *a = hub->agents[b]; a; a = a->next) {
            for (struct sse_sub *sub = a->subs; sub && k < n; sub = sub->next) {
                sub->ending = true;
                reqs[k++] = sub->req;
            }
        }
    }
    for (size_t i = 0; i < k; i++) {
        evhttp_send_reply_end(reqs[i]); /* "Connection: close" was sent: evhttp closes it */
    }
    free(reqs);
}

void sse_hub_free(struct sse_hub *hub)
{
    if (!hub) {
        return;
    }
    /* Streams still open at this point belong to connections evhttp_free() is closing; their
     * close callbacks ran already (evhttp_free precedes this), so the tables are empty but for
     * openings whose head read never came back. */
    for (size_t b = 0; hub->agents && b < HUB_BUCKETS; b++) {
        while (hub->agents[b]) {
            struct sse_agent *a = hub->agents[b];
            a->n_opening = 0;
            struct sse_sub *sub = a->subs;
            if (sub == NULL) {
                agent_unref(hub, a);
                continue;
            }
            hub->set_closecb(evhttp_request_get_connection(sub->req), NULL, NULL);
            sub_unlink(sub); /* frees `a` with its last stream */
            sub_free(sub);
        }
    }
    if (hub->heartbeat_ev) {
        event_free(hub->heartbeat_ev);
    }
    if (hub->scratch) {
        evbuffer_free(hub->scratch);
    }
    free(hub->agents);
    free(hub->tenants);
    free(hub);
}

size_t sse_hub_count_of(struct sse_hub *hub, const char *tenant_id, const char *agent_id)
{
    if (hub == NULL) {
        return 0;
    }
    if (agent_id == NULL) {
        const struct sse_tenant *t = tenant_get(hub, tenant_id, false);
        return t ? t->n_subs : 0;
    }
    const struct sse_agent *a = agent_get(hub, tenant_id, agent_id);
    return a ? a->n_subs : 0;
}

static int streams_cmp(const void *a, const void *b)
{
    return strcmp(((const struct sse_agent_streams *)a)->agent_id,
                  ((const struct sse_agent_streams *)b)->agent_id);
}

int sse_hub_tenant_streams(struct sse_hub *hub, const char *tenant_id,
                           struct sse_agent_streams **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    const struct sse_tenant *t = hub ? tenant_get(hub, tenant_id, false) : NULL;
    if (t == NULL || t->n_subs == 0) {
        return ROOST_OK;
    }
    struct sse_agent_streams *list = calloc(t->n_agents, sizeof *list);
    if (list == NULL) {
        return ROOST_ENOMEM;
    }
    size_t k = 0;
    for (const struct sse_agent *a = t->agents; a && k < t->n_agents; a = a->t_next) {
        if (a->n_subs > 0) {
            snprintf(list[k].agent_id, sizeof list[k].agent_id, "%s", a->agent_id);
            list[k++].n = a->n_subs;
        }
    }
    *out = list;
    *n = k;
    return ROOST_OK;
}

void sse_streams_sort(struct sse_agent_streams *list, size_t n)
{
    if (n > 1) {
        qsort(list, n, sizeof *list, streams_cmp);
    }
}

size_t sse_streams_of(const struct sse_agent_streams *list, size_t n, const char *agent_id)
{
    struct sse_agent_streams key;
    if (n == 0 || strlen(agent_id) >= sizeof key.agent_id) {
        return 0;
    }
    snprintf(key.agent_id, sizeof key.agent_id, "%s", agent_id);
    const struct sse_agent_streams *hit = bsearch(&key, list, n, sizeof *list, streams_cmp);
    return hit ? hit->n : 0;
}

size_t sse_hub_count(const struct sse_hub *hub)
{
    return hub ? hub->n_subs : 0;
}

const char *sse_hub_over_limit(struct sse_hub *hub, const char *tenant_id, const char *agent_id)
{
    const struct config *cfg = hub->cfg;
    if ((int64_t)hub->n_subs >= cfg->sse_max_total) {
        return "too many streams on this server (sse.max_total)";
    }
    struct sse_tenant *t = tenant_get(hub, tenant_id, false);
    int64_t per_tenant = cfg->sse_max_per_tenant;
    if (per_tenant == 0) {
        per_tenant = cfg->sse_max_total / 10 > 0 ? cfg->sse_max_total / 10 : 1;
    }
    if (t && (int64_t)t->n_subs >= per_tenant) {
        return "too many streams for this tenant (sse.max_per_tenant)";
    }
    struct sse_agent *a = agent_get(hub, tenant_id, agent_id);
    if (a && (int64_t)a->n_subs >= cfg->sse_max_per_agent) {
        return "too many streams for this agent (sse.max_per_agent)";
    }
    return NULL;
}

/* The token that opened the stream expired: a last event tells the client to reconnect with a
 * fresh token, then the stream ends (and its connection closes, "Connection: close"). One timer
 * per stream, so the end is on time whatever sse.heartbeat_s is. */
static void on_token_expired(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct sse_sub *sub = arg;
    if (sub->ending || sub->hub->shutting_down) {
        return;
    }
    log_info("stream ended", "reason=token_expired tenant=%s agent=%s",
             sub->agent->tenant->tenant_id, sub->agent->agent_id);
    sub->ending = true;
    struct evbuffer *buf = evbuffer_new();
    if (buf) {
        evbuffer_add_printf(buf, "event: token_expired\ndata: {}\n\n");
        evhttp_send_reply_chunk(sub->req, buf);
        evbuffer_free(buf);
    }
    evhttp_send_reply_end(sub->req); /* may run on_close, which frees sub */
}

void sse_hub_set_closecb_fn(struct sse_hub *hub,
                            void (*set)(struct evhttp_connection *evcon,
                                        void (*cb)(struct evhttp_connection *, void *), void *arg))
{
    hub->set_closecb = set;
}

int sse_hub_opening_begin(struct sse_hub *hub, const char *tenant_id, const char *agent_id)
{
    struct sse_agent *a = agent_get(hub, tenant_id, agent_id);
    if (!a && !(a = agent_create(hub, tenant_id, agent_id))) {
        return ROOST_ENOMEM;
    }
    a->n_opening++;
    return ROOST_OK;
}

void sse_hub_opening_end(struct sse_hub *hub, const char *tenant_id, const char *agent_id)
{
    struct sse_agent *a = agent_get(hub, tenant_id, agent_id);
    if (a && a->n_opening > 0) {
        if (--a->n_opening == 0) {
            a->poked = false;
        }
        agent_unref(hub, a);
    }
}

int sse_hub_open(struct sse_hub *hub, struct evhttp_request *req, const char *req_id,
                 const char *tenant_id, const char *agent_id, int64_t head, int64_t last_event_id,
                 int64_t expires_ms)
{
    const struct config *cfg = hub->cfg;
    struct sse_agent *a = agent_get(hub, tenant_id, agent_id);
    if (!a) {
        a = agent_create(hub, tenant_id, agent_id);
    }
    struct sse_sub *sub = a ? calloc(1, sizeof *sub) : NULL;
    if (sub && expires_ms > 0 &&
        !(sub->expire_ev = evtimer_new(hub->base, on_token_expired, sub))) {
        free(sub);
        sub = NULL;
    }
    if (!sub) {
        return ROOST_ENOMEM;
    }
    if (head > a->head) {
        a->head = head;
    }
    sub->hub = hub;
    sub->agent = a;
    sub->req = req;
    sub->next = a->subs;
    if (a->subs) {
        a->subs->prev = sub;
    }
    a->subs = sub;
    a->n_subs++;
    a->tenant->n_subs++;
    hub->n_subs++;

    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", "text/event-stream");
    evhttp_add_header(out, "Cache-Control", "no-cache");
    evhttp_add_header(out, "X-Accel-Buffering", "no");
    /* Browsers' EventSource on another origin (a web app): auth is the ticket or token, never a
     * cookie, so without an allow-list any origin may read the stream. With http.cors_origins
     * set, the router already echoed a listed origin and an unlisted one gets nothing. */
    if (cfg->http_cors_origins == NULL || cfg->http_cors_origins[0] == '\0') {
        evhttp_add_header(out, "Access-Control-Allow-Origin", "*");
    }
    evhttp_add_header(out, "X-Request-Id", req_id);
    /* One stream per connection: when the stream ends, the connection closes with it. */
    evhttp_add_header(out, "Connection", "close");
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    evhttp_send_reply_start(req, 200, "OK");
    hub->set_closecb(evcon, on_close, sub);
    /* The kernel must not become the backlog: the socket reports writable only while little is
     * unsent, so a subscriber that does not read stays mid-write (`flushing`) and its pings
     * coalesce here, instead of piling up in a send buffer of up to megabytes. */
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    if (bev) {
        /* No idle (read) timeout: a client sends nothing on its stream, and evhttp would re-arm
         * that timeout only on its own writes, never on ours to the socket. Vanished peers are
         * the kernel's (TCP_USER_TIMEOUT, below; every stream gets a heartbeat) and readers that
         * stopped are ours (sse.stall_timeout_s). A write still stuck after three heartbeat
         * periods ends the connection, as before. */
        struct timeval write_tv = {(time_t)(3 * cfg->sse_heartbeat_s + 30), 0};
        bufferevent_set_timeouts(bev, NULL, &write_tv);
        evutil_socket_t fd = bufferevent_getfd(bev);
        /* TLS streams write through OpenSSL's bufferevent only. */
        sub->direct = bufferevent_openssl_get_ssl(bev) == NULL;
        /* Every chunk is a whole event that should leave now: no Nagle wait for the ACK of the
         * one before (a ping right after a heartbeat would wait for the peer's delayed ACK). */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
#ifdef TCP_NOTSENT_LOWAT
        int lowat = SSE_NOTSENT_LOWAT;
        setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat);
#endif
#ifdef TCP_USER_TIMEOUT
        /* Well past the stall timeout: a reader that stopped reading is ours to drop (with a log
         * line); the kernel only ends connections whose peer stopped acknowledging. */
        unsigned int user_timeout_ms =
            ((unsigned int)cfg->sse_stall_timeout_s + SSE_KERNEL_TIMEOUT_EXTRA_S) * 1000u;
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
#endif
    }

    log_line(LOG_INFO, "stream opened", "req_id=%s route=subscribe tenant=%s agent=%s head=%lld",
             req_id, tenant_id, agent_id, (long long)a->head);
    if (evbuffer_add_printf(hub->scratch, "retry: %" PRId64 "\n\n", cfg->sse_retry_ms) > 0) {
        evhttp_send_reply_chunk(req, hub->scratch);
    }
    evbuffer_drain(hub->scratch, evbuffer_get_length(hub->scratch));
    /* At once: the head, so the client knows whether to pull. A reconnecting EventSource that
     * already saw this head (Last-Event-ID) gets it as a heartbeat instead of a new ping. */
    sub->last_sent = last_event_id >= 0 && last_event_id <= a->head ? last_event_id : 0;
    bool seen = last_event_id >= 0 && last_event_id >= a->head && !a->poked;
    /* sub_write frees sub when it drops it: the stream is ours either way. */
    if (sub_write(sub, a->head, seen, true) && sub->expire_ev) {
        int64_t left_ms = expires_ms - time_now_ms();
        left_ms = left_ms > 0 ? left_ms : 0;
        struct timeval tv = {(time_t)(left_ms / 1000), (suseconds_t)(left_ms % 1000) * 1000};
        evtimer_add(sub->expire_ev, &tv);
    }
    return ROOST_OK;
}
