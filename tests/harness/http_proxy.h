/* SPDX-License-Identifier: MIT */
/* A small HTTP fault-injecting TCP proxy for the integration tests (loopback, a thread per
 * connection). It forces one request per connection (it adds `Connection: close`), so every
 * request line passes its rules: a rule matches a substring of the request line and drops the
 * request unanswered, answers 503 itself, or forwards it and holds the answer back. (tcp_proxy.h
 * cuts at protocol points inside a connection — a MySQL COMMIT, the next answer — and knows no
 * requests.) */
#ifndef ROOST_TEST_HTTP_PROXY_H
#define ROOST_TEST_HTTP_PROXY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

enum http_proxy_action {
    HTTP_PROXY_PASS = 0, /* forward (the rule only counts) */
    HTTP_PROXY_DROP,     /* close the connection without forwarding the request */
    HTTP_PROXY_FAIL_503, /* answer 503 "unavailable" without forwarding */
    HTTP_PROXY_DELAY,    /* forward, then hold the answer back delay_ms before relaying it */
};

#define HTTP_PROXY_MAX_RULES 4

struct http_proxy_rule {
    char match[64];  /* substring of the request line; "" = rule unused */
    char except[64]; /* and not this one ("" = none) */
    enum http_proxy_action action;
    int delay_ms;
    atomic_int hits; /* requests the rule acted on */
};

struct http_proxy {
    int lfd;
    int port; /* where to connect instead of roostd */
    atomic_int upstream_port;
    pthread_mutex_t mu; /* guards the rules' match/action/delay (hits are atomic) */
    struct http_proxy_rule rules[HTTP_PROXY_MAX_RULES];
    atomic_int n_live; /* connection threads still running (they use the proxy) */
    atomic_int stop;
    pthread_t th;
};

/* Listens on 127.0.0.1:0 and forwards to 127.0.0.1:upstream_port. 0 or -1. */
int http_proxy_start(struct http_proxy *p, int upstream_port);
/* Stops the listener and waits (bounded) for the connection threads. */
void http_proxy_stop(struct http_proxy *p);
/* Sets rule i (0..HTTP_PROXY_MAX_RULES-1): requests whose request line holds `match` and not
 * `except` (NULL: none) get `action`. The first matching rule wins. Resets its hit count. */
void http_proxy_rule(struct http_proxy *p, int i, const char *match, const char *except,
                     enum http_proxy_action action, int delay_ms);
/* Turns rule i off (its hit count is kept). */
void http_proxy_rule_off(struct http_proxy *p, int i);
/* How many requests rule i acted on. */
int http_proxy_hits(struct http_proxy *p, int i);

#endif
