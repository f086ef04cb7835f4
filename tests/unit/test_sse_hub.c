/* SPDX-License-Identifier: MIT */
/* Unit tests of src/server/sse_hub.c's opening window on a real evhttp server and a raw client
 * socket: a stream's head is read from the store before the stream exists, so a commit notified
 * in between must still reach the stream's first event (with an opening held), an opening that
 * never becomes a stream leaves nothing behind, and a notify without any opening or stream is
 * dropped (the hub keeps no state for agents nobody watches). */
#include <arpa/inet.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/check.h"
#include "server/config.h"
#include "server/metrics.h"
#include "server/sse_hub.h"

#include "common/banned.h"

static struct event_base *base;
static struct sse_hub *hub;

/* What the server does with the next request: the head it "read", commits notified while the
 * stream opens, and whether an opening covers that window. */
static struct {
    bool opening;
    int64_t read_head;
    int64_t notified_head; /* 0: none */
    const char *last_event_id;
} plan;

static void on_request(struct evhttp_request *req, void *arg)
{
    (void)arg;
    if (plan.opening) {
        CHECK(sse_hub_opening_begin(hub, "t1", "a1") == 0);
    }
    if (plan.notified_head > 0) {
        sse_hub_notify(hub, "t1", "a1", plan.notified_head);
    }
    int64_t leid = plan.last_event_id ? strtoll(plan.last_event_id, NULL, 10) : -1;
    CHECK(sse_hub_open(hub, req, "req1", "t1", "a1", plan.read_head, leid, 0) == 0);
    if (plan.opening) {
        sse_hub_opening_end(hub, "t1", "a1");
    }
}

/* Connects, sends a GET and runs the loop until the stream's first event is in; returns it. */
static void first_event(int port, char *out, size_t outlen)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    char req[256];
    int n =
        snprintf(req, sizeof req, "GET /s HTTP/1.1\r\nHost: x\r\n%s%s%s\r\n",
                 plan.last_event_id ? "Last-Event-ID: " : "",
                 plan.last_event_id ? plan.last_event_id : "", plan.last_event_id ? "\r\n" : "");
    CHECK(write(fd, req, (size_t)n) == n);
    size_t len = 0;
    out[0] = '\0';
    /* The first event follows the headers and the retry line; it ends with a blank line after a
     * data line. */
    for (int i = 0; i < 2000 && !strstr(out, "data: "); i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 10) == 1) {
            ssize_t r = read(fd, out + len, outlen - 1 - len);
            if (r <= 0) {
                break;
            }
            len += (size_t)r;
            out[len] = '\0';
        }
    }
    close(fd);
    for (int i = 0; i < 50; i++) { /* let the hub see the close */
        event_base_loop(base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
}

static int port;
static int streams_closed;

static void on_stream_closed(void *arg)
{
    (void)arg;
    streams_closed++;
}
static char ev[4096];

/* A commit notified while the stream opens is the stream's first event. */
static void test_opening_keeps_a_commit(void)
{
    plan.opening = true;
    plan.read_head = 3;
    plan.notified_head = 7;
    plan.last_event_id = NULL;
    first_event(port, ev, sizeof ev);
    CHECK(strstr(ev, "event: inbox_updated") != NULL);
    CHECK(strstr(ev, "\"cursor_hint\":7") != NULL);
}

/* Without an opening such a notify has nowhere to go: what the opening is for. */
static void test_no_opening_drops_it(void)
{
    plan.opening = false;
    plan.read_head = 3;
    plan.notified_head = 7;
    plan.last_event_id = NULL;
    first_event(port, ev, sizeof ev);
    CHECK(strstr(ev, "\"cursor_hint\":3") != NULL);
}

/* A client that saw the head still gets a ping when a commit came while it opened: a release
 * makes work claimable without moving the head, so it is notified at the head. */
static void test_opening_poke_at_head(void)
{
    plan.opening = true;
    plan.read_head = 3;
    plan.notified_head = 3;
    plan.last_event_id = "3";
    first_event(port, ev, sizeof ev);
    CHECK(strstr(ev, "event: inbox_updated") != NULL);
    plan.opening = false;
    plan.notified_head = 0;
    first_event(port, ev, sizeof ev);
    CHECK(strstr(ev, "event: heartbeat") != NULL); /* nothing came: the head it saw */
}

/* An opening that never becomes a stream leaves no entry behind. */
static void test_opening_without_stream(void)
{
    CHECK(sse_hub_opening_begin(hub, "t2", "a2") == 0);
    CHECK(sse_hub_opening_begin(hub, "t2", "a2") == 0);
    sse_hub_notify(hub, "t2", "a2", 5);
    sse_hub_opening_end(hub, "t2", "a2");
    sse_hub_opening_end(hub, "t2", "a2");
    sse_hub_opening_end(hub, "t2", "a2"); /* one too many: ignored */
    CHECK(sse_hub_count_of(hub, "t2", NULL) == 0);
    CHECK(sse_hub_count(hub) == 0);
    /* An opening still held when the hub is freed (its head read never came back) is freed with
     * it: the sanitizer build's leak checker sees to that. */
    CHECK(sse_hub_opening_begin(hub, "t3", "a3") == 0);
}

int main(void)
{
    struct config cfg;
    CHECK(config_init(&cfg) == 0);
    char err[256];
    CHECK(config_finalize(&cfg, err, sizeof err) == 0);
    struct metrics *m = metrics_new();
    base = event_base_new();
    hub = sse_hub_new(base, &cfg, m, on_stream_closed, NULL);
    struct evhttp *http = evhttp_new(base);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
    CHECK(hub && http && bs);
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    CHECK(getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sa, &sl) == 0);
    port = ntohs(sa.sin_port);
    evhttp_set_gencb(http, on_request, NULL);
    RUN(test_opening_keeps_a_commit);
    RUN(test_no_opening_drops_it);
    RUN(test_opening_poke_at_head);
    RUN(test_opening_without_stream);
    CHECK(streams_closed == 4); /* every stream above, seen closed by the hub */
    evhttp_free(http);
    sse_hub_free(hub);
    event_base_free(base);
    metrics_free(m);
    config_cleanup(&cfg);
    return check_summary();
}
