/* SPDX-License-Identifier: MIT */
/* null_server: the "no durability, no work" ceiling of BENCHMARKS.md scenario 1. One libevent
 * evhttp loop (like roostd's HTTP front) answering the four calls roost_load makes, with the same
 * JSON shapes as roostd, from an in-memory queue:
 *
 *   POST /api/v1/events                                  201 {"events":[{event_id,agent_id,…}]}
 *   POST /api/v1/agents/{agent}/inbox/claim              200 {"events":[{…,lease_token,…}]}
 *   POST /api/v1/agents/{agent}/inbox/{event_id}/ack     200 {"event_id","status":"completed"}
 *   POST /api/v1/agents/{agent}/inbox/ack                200 {"results":[…]}
 *
 * Claims long-poll (wait_s) until a publish reaches the agent. Nothing is persisted, leases never
 * expire, the bearer token is not checked. Bodies are parsed and answers built with jansson, as
 * roostd does, so the difference to roostd is the store, durability and bookkeeping, not JSON.
 *
 * With --durable (null_durable.h) every answer waits for a group write that makes it durable:
 * the bound of a durable server with this HTTP front and no store work.
 *
 * usage: null_server [--listen HOST:PORT] [--ready-file FILE] [--durable SHAPE:TARGET]
 *                    [--syncers N]; SIGTERM/SIGINT stop it. */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <getopt.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/hash.h"
#include "common/strutil.h"
#include "null_durable.h"

#include "common/banned.h"

#define AGENT_BUCKETS 4096
#define MAX_LIMIT 1000
#define ID_LEN 30    /* "evt_" + 26, like roostd */
#define TOKEN_LEN 29 /* "lt_" + 26 */

struct nevent {
    uint64_t num;
    struct agent *agent;
    int64_t seq;
    int64_t created_ms;
    bool leased;
    char lease_token[TOKEN_LEN + 1];
    json_t *payload;
    struct nevent *next; /* pending FIFO */
};

struct waiter {
    struct evhttp_request *req;
    struct evhttp_connection *conn;
    struct agent *agent;
    struct event *timer;
    int limit;
    int lease_s;
    struct waiter *prev, *next;
};

struct agent {
    char *name;
    struct agent *hnext;
    struct nevent *head, *tail;
    int64_t seq;
    struct waiter *waiters, *waiters_tail;
};

static struct event_base *g_base;
static struct agent *g_agents[AGENT_BUCKETS];
static struct nevent **g_events; /* by number; NULL once acked */
static uint64_t g_n_events, g_cap_events;
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t g_req_serial;

static uint64_t rng_next(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static json_t *time_json(int64_t ms)
{
    if (ms == 0) {
        return json_null();
    }
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char buf[96];
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
    return json_string(buf);
}

static void event_id(const struct nevent *ev, char *out)
{
    snprintf(out, ID_LEN + 1, "evt_%026llu", (unsigned long long)ev->num);
}

static struct agent *agent_get(const char *name, size_t len, bool create)
{
    uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, name, len);
    struct agent **slot = &g_agents[h % AGENT_BUCKETS];
    for (struct agent *a = *slot; a; a = a->hnext) {
        if (strlen(a->name) == len && memcmp(a->name, name, len) == 0) {
            return a;
        }
    }
    if (!create) {
        return NULL;
    }
    struct agent *a = calloc(1, sizeof *a);
    if (!a || !(a->name = strndup(name, len))) {
        free(a);
        return NULL;
    }
    a->hnext = *slot;
    *slot = a;
    return a;
}

/* ---- replies ---- */

static void reply(struct evhttp_request *req, int status, json_t *body)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    char rid[32];
    snprintf(rid, sizeof rid, "%026llu", (unsigned long long)++g_req_serial);
    evhttp_add_header(out, "Content-Type", "application/json");
    evhttp_add_header(out, "X-Request-Id", rid);
    evhttp_add_header(out, "Cache-Control", "no-store");
    struct evbuffer *buf = evbuffer_new();
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (buf && text) {
        evbuffer_add(buf, text, strlen(text));
        evbuffer_add(buf, "\n", 1);
    }
    free(text);
    json_decref(body);
    if (buf && null_durable_hold(req, status, buf)) {
        return;
    }
    evhttp_send_reply(req, status, NULL, buf);
    if (buf) {
        evbuffer_free(buf);
    }
}

static void reply_error(struct evhttp_request *req, int status, const char *code, const char *msg)
{
    reply(req, status, json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg));
}

/* ---- claim ---- */

static json_t *claim_events(struct agent *a, int limit, int lease_s)
{
    json_t *events = json_array();
    int64_t now = now_ms();
    for (int i = 0; i < limit && a->head; i++) {
        struct nevent *ev = a->head;
        a->head = ev->next;
        if (!a->head) {
            a->tail = NULL;
        }
        ev->next = NULL;
        ev->leased = true;
        uint64_t r1 = rng_next(), r2 = rng_next();
        snprintf(ev->lease_token, sizeof ev->lease_token, "lt_%013llx%013llx",
                 (unsigned long long)(r1 & 0xFFFFFFFFFFFFFull),
                 (unsigned long long)(r2 & 0xFFFFFFFFFFFFFull));
        char id[ID_LEN + 1];
        event_id(ev, id);
        json_t *o =
            json_pack("{s:s, s:s, s:I, s:s, s:i, s:n, s:O, s:o, s:o, s:n, s:s, s:o, s:i}",
                      "event_id", id, "agent_id", a->name, "sequence_number", (json_int_t)ev->seq,
                      "status", "leased", "priority", 0, "correlation_id", "payload", ev->payload,
                      "created_at", time_json(ev->created_ms), "available_at",
                      time_json(ev->created_ms), "expires_at", "lease_token", ev->lease_token,
                      "claim_expires_at", time_json(now + (int64_t)lease_s * 1000), "attempts", 1);
        json_array_append_new(events, o);
    }
    return events;
}

static void waiter_unlink(struct waiter *w)
{
    struct agent *a = w->agent;
    if (w->prev) {
        w->prev->next = w->next;
    } else {
        a->waiters = w->next;
    }
    if (w->next) {
        w->next->prev = w->prev;
    } else {
        a->waiters_tail = w->prev;
    }
    evhttp_connection_set_closecb(w->conn, NULL, NULL);
    event_free(w->timer);
}

static void waiter_answer(struct waiter *w)
{
    waiter_unlink(w);
    reply(w->req, 200, json_pack("{s:o}", "events", claim_events(w->agent, w->limit, w->lease_s)));
    free(w);
}

static void on_waiter_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    waiter_answer(arg);
}

static void on_waiter_close(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    struct waiter *w = arg;
    waiter_unlink(w);
    free(w);
}

static int body_int(const json_t *body, const char *key, int min, int max, int def, int *out)
{
    const json_t *v = json_object_get(body, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        return -1;
    }
    *out = (int)json_integer_value(v);
    return 0;
}

static void do_claim(struct evhttp_request *req, struct agent *a, const json_t *body)
{
    int limit, lease_s, wait_s;
    if (body_int(body, "limit", 1, MAX_LIMIT, 10, &limit) != 0 ||
        body_int(body, "lease_s", 1, 43200, 60, &lease_s) != 0 ||
        body_int(body, "wait_s", 0, 30, 0, &wait_s) != 0) {
        reply_error(req, 400, "invalid_argument", "limit, lease_s or wait_s out of range");
        return;
    }
    if (a->head || wait_s == 0) {
        reply(req, 200, json_pack("{s:o}", "events", claim_events(a, limit, lease_s)));
        return;
    }
    struct waiter *w = calloc(1, sizeof *w);
    if (!w) {
        reply_error(req, 500, "internal", "out of memory");
        return;
    }
    w->req = req;
    w->conn = evhttp_request_get_connection(req);
    w->agent = a;
    w->limit = limit;
    w->lease_s = lease_s;
    w->timer = evtimer_new(g_base, on_waiter_timeout, w);
    struct timeval tv = {.tv_sec = wait_s, .tv_usec = 0};
    evtimer_add(w->timer, &tv);
    evhttp_connection_set_closecb(w->conn, on_waiter_close, w);
    w->prev = a->waiters_tail;
    if (a->waiters_tail) {
        a->waiters_tail->next = w;
    } else {
        a->waiters = w;
    }
    a->waiters_tail = w;
}

/* ---- publish ---- */

static void do_publish(struct evhttp_request *req, const json_t *body)
{
    json_t *recips = json_object_get(body, "recipients");
    json_t *payload = json_object_get(body, "payload");
    size_t n = json_is_array(recips) ? json_array_size(recips) : 0;
    if (n == 0 || (payload && !json_is_object(payload))) {
        reply_error(req, 400, "invalid_recipients", "recipients and an object payload, please");
        return;
    }
    json_t *out = json_array();
    struct agent **touched = calloc(n, sizeof *touched);
    if (!touched) {
        reply_error(req, 500, "internal", "out of memory");
        json_decref(out);
        return;
    }
    int64_t now = now_ms();
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(recips, i);
        struct agent *a =
            json_is_string(r) ? agent_get(json_string_value(r), json_string_length(r), true) : NULL;
        if (!a) {
            reply_error(req, 400, "invalid_recipients", "recipients are agent ids");
            json_decref(out);
            free(touched);
            return;
        }
        if (g_n_events == g_cap_events) {
            uint64_t cap = g_cap_events ? g_cap_events * 2 : 1 << 16;
            struct nevent **p = realloc(g_events, cap * sizeof *p);
            if (!p) {
                reply_error(req, 500, "internal", "out of memory");
                json_decref(out);
                free(touched);
                return;
            }
            g_events = p;
            g_cap_events = cap;
        }
        struct nevent *ev = calloc(1, sizeof *ev);
        if (!ev) {
            reply_error(req, 500, "internal", "out of memory");
            json_decref(out);
            free(touched);
            return;
        }
        ev->num = g_n_events;
        g_events[g_n_events++] = ev;
        ev->agent = a;
        ev->seq = ++a->seq;
        ev->created_ms = now;
        ev->payload = payload ? json_incref(payload) : json_object();
        if (a->tail) {
            a->tail->next = ev;
        } else {
            a->head = ev;
        }
        a->tail = ev;
        touched[i] = a;
        char id[ID_LEN + 1];
        event_id(ev, id);
        json_array_append_new(out, json_pack("{s:s, s:s, s:I}", "event_id", id, "agent_id", a->name,
                                             "sequence_number", (json_int_t)ev->seq));
    }
    for (size_t i = 0; i < n; i++) {
        while (touched[i]->waiters && touched[i]->head) {
            waiter_answer(touched[i]->waiters);
        }
    }
    free(touched);
    reply(req, 201, json_pack("{s:o}", "events", out));
}

/* ---- ack ---- */

/* 0 acked, 404 unknown event, 409 wrong state or token. */
static int ack_one(struct agent *a, const char *id, const char *token)
{
    if (!id || strlen(id) != ID_LEN || strncmp(id, "evt_", 4) != 0) {
        return 404;
    }
    int64_t num = 0;
    if (strutil_parse_i64(id + 4, ID_LEN - 4, 0, INT64_MAX, &num) != 0 ||
        (uint64_t)num >= g_n_events || !g_events[num] || g_events[num]->agent != a) {
        return 404;
    }
    struct nevent *ev = g_events[num];
    if (!ev->leased || !token || strcmp(token, ev->lease_token) != 0) {
        return 409;
    }
    json_decref(ev->payload);
    free(ev);
    g_events[num] = NULL;
    return 0;
}

static void do_ack(struct evhttp_request *req, struct agent *a, const char *id, const json_t *body)
{
    int rc = ack_one(a, id, json_string_value(json_object_get(body, "lease_token")));
    if (rc == 404) {
        reply_error(req, 404, "event_not_found", "no such event");
    } else if (rc == 409) {
        reply_error(req, 409, "lease_mismatch", "lease token does not match");
    } else {
        reply(req, 200, json_pack("{s:s, s:s}", "event_id", id, "status", "completed"));
    }
}

static void do_batch_ack(struct evhttp_request *req, struct agent *a, const json_t *body)
{
    json_t *acks = json_object_get(body, "acks");
    if (!json_is_array(acks) || json_array_size(acks) == 0) {
        reply_error(req, 400, "invalid_acks", "acks must be a non-empty array");
        return;
    }
    json_t *results = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(acks, i, item)
    {
        const char *id = json_string_value(json_object_get(item, "event_id"));
        int rc = a ? ack_one(a, id, json_string_value(json_object_get(item, "lease_token"))) : 404;
        json_t *r =
            rc == 0 ? json_pack("{s:s, s:s}", "event_id", id ? id : "", "status", "completed")
                    : json_pack("{s:s, s:{s:s, s:s}}", "event_id", id ? id : "", "error", "code",
                                rc == 404 ? "event_not_found" : "lease_mismatch", "message",
                                rc == 404 ? "no such event" : "lease token does not match");
        json_array_append_new(results, r);
    }
    reply(req, 200, json_pack("{s:o}", "results", results));
}

/* ---- router ---- */

static void on_request(struct evhttp_request *req, void *arg)
{
    (void)arg;
    const char *uri = evhttp_request_get_uri(req);
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        reply_error(req, 405, "method_not_allowed", "POST only");
        return;
    }
    char path[512];
    size_t plen = strcspn(uri, "?");
    if (plen >= sizeof path) {
        reply_error(req, 404, "not_found", "no such route");
        return;
    }
    memcpy(path, uri, plen);
    path[plen] = '\0';

    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    json_t *body = len ? json_loadb((const char *)evbuffer_pullup(in, -1), len, 0, NULL) : NULL;
    if (!json_is_object(body)) {
        reply_error(req, 400, "invalid_json", "body must be a JSON object");
        json_decref(body);
        return;
    }

    static const char agents_prefix[] = "/api/v1/agents/";
    if (strcmp(path, "/api/v1/events") == 0) {
        do_publish(req, body);
    } else if (strncmp(path, agents_prefix, sizeof agents_prefix - 1) == 0) {
        char *name = path + sizeof agents_prefix - 1;
        char *slash = strchr(name, '/');
        char *rest = slash ? slash + 1 : NULL;
        if (!slash || slash == name || strncmp(rest, "inbox/", 6) != 0) {
            reply_error(req, 404, "not_found", "no such route");
        } else {
            rest += 6;
            struct agent *a = agent_get(name, (size_t)(slash - name), strcmp(rest, "claim") == 0);
            char *ack = strchr(rest, '/');
            if (strcmp(rest, "claim") == 0) {
                if (a) {
                    do_claim(req, a, body);
                } else {
                    reply_error(req, 500, "internal", "out of memory");
                }
            } else if (strcmp(rest, "ack") == 0) {
                do_batch_ack(req, a, body);
            } else if (ack && strcmp(ack, "/ack") == 0) {
                *ack = '\0';
                if (a) {
                    do_ack(req, a, rest, body);
                } else {
                    reply_error(req, 404, "event_not_found", "no such event");
                }
            } else {
                reply_error(req, 404, "not_found", "no such route");
            }
        }
    } else {
        reply_error(req, 404, "not_found", "no such route");
    }
    json_decref(body);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    (void)arg;
    event_base_loopbreak(g_base);
}

static int write_ready(const char *path, int port)
{
    char line[64];
    int n = snprintf(line, sizeof line, "http://127.0.0.1:%d\n", port);
    return fsutil_write_atomic(path, line, (size_t)n, 0644);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'},  {"ready-file", required_argument, NULL, 'r'},
        {"durable", required_argument, NULL, 'd'}, {"syncers", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    static const char usage[] =
        "usage: null_server [--listen HOST:PORT] [--ready-file FILE] [--durable SHAPE:TARGET]\n"
        "                   [--syncers N]\n"
        "  --durable inline:FILE | thread:FILE | mysql:URL   answer only once durable\n"
        "  --syncers N   syncer threads (connections) for mysql:URL (default 1)\n";
    const char *listen = "127.0.0.1:0", *ready = NULL, *durable = NULL;
    int64_t syncers = 1;
    int c;
    while ((c = getopt_long(argc, argv, "l:r:d:s:h", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            listen = optarg;
            break;
        case 'r':
            ready = optarg;
            break;
        case 'd':
            durable = optarg;
            break;
        case 's':
            if (strutil_parse_i64(optarg, strlen(optarg), 1, 64, &syncers) != 0) {
                fprintf(stderr, "null_server: --syncers 1..64\n");
                return 2;
            }
            break;
        case 'h':
            printf("%s", usage);
            return 0;
        default:
            fprintf(stderr, "%s", usage);
            return 2;
        }
    }
    char host[256];
    const char *colon = strrchr(listen, ':');
    if (!colon || (size_t)(colon - listen) >= sizeof host) {
        fprintf(stderr, "null_server: --listen HOST:PORT\n");
        return 2;
    }
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    int64_t port = 0;
    if (strutil_parse_i64(colon + 1, strlen(colon + 1), 0, 65535, &port) != 0) {
        fprintf(stderr, "null_server: --listen HOST:PORT with a port in 0..65535\n");
        return 2;
    }

    signal(SIGPIPE, SIG_IGN);
    if (durable && strncmp(durable, "inline:", 7) != 0) {
        evthread_use_pthreads(); /* syncer threads wake the loop */
    }
    g_base = event_base_new();
    struct evhttp *http = g_base ? evhttp_new(g_base) : NULL;
    if (!http) {
        fprintf(stderr, "null_server: libevent setup failed\n");
        return 1;
    }
    char err[256];
    if (durable && null_durable_start(g_base, durable, (int)syncers, err, sizeof err) != 0) {
        fprintf(stderr, "null_server: %s\n", err);
        return 2;
    }
    evhttp_set_allowed_methods(http, EVHTTP_REQ_POST | EVHTTP_REQ_GET);
    evhttp_set_gencb(http, on_request, NULL);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(http, host, (uint16_t)port);
    if (!bs) {
        fprintf(stderr, "null_server: cannot listen on %s: %s\n", listen, strerror(errno));
        return 1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl);
    int bound = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
                                        : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    if (ready && write_ready(ready, bound) != 0) {
        fprintf(stderr, "null_server: cannot write %s: %s\n", ready, strerror(errno));
        return 1;
    }
    fprintf(stderr, "null_server: listening on http://%s:%d\n", host, bound);
    struct event *sigterm = evsignal_new(g_base, SIGTERM, on_signal, NULL);
    struct event *sigint = evsignal_new(g_base, SIGINT, on_signal, NULL);
    event_add(sigterm, NULL);
    event_add(sigint, NULL);
    event_base_dispatch(g_base);
    null_durable_report();
    event_free(sigterm);
    event_free(sigint);
    evhttp_free(http);
    event_base_free(g_base);
    return 0;
}
