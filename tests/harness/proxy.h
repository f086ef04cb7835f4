/* SPDX-License-Identifier: MIT */
/* A small HTTP fault-injecting TCP proxy for the integration tests (loopback, a thread per
 * connection). It forces one request per connection (it adds `Connection: close`), so every
 * request line passes its rules: a rule matches a substring of the request line and drops the
 * request unanswered, answers 503 itself, or forwards it and holds the answer back. */
#ifndef ROOST_TEST_PROXY_H
#define ROOST_TEST_PROXY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

enum h_proxy_action {
    H_PROXY_PASS = 0, /* forward (the rule only counts) */
    H_PROXY_DROP,     /* close the connection without forwarding the request */
    H_PROXY_FAIL_503, /* answer 503 "unavailable" without forwarding */
    H_PROXY_DELAY,    /* forward, then hold the answer back delay_ms before relaying it */
};

#define H_PROXY_MAX_RULES 4

struct h_proxy_rule {
    char match[64];  /* substring of the request line; "" = rule unused */
    char except[64]; /* and not this one ("" = none) */
    enum h_proxy_action action;
    int delay_ms;
    atomic_int hits; /* requests the rule acted on */
};

struct h_proxy {
    int lfd;
    int port; /* where to connect instead of roostd */
    atomic_int upstream_port;
    pthread_mutex_t mu; /* guards the rules' match/action/delay (hits are atomic) */
    struct h_proxy_rule rules[H_PROXY_MAX_RULES];
    atomic_int n_live; /* connection threads still running (they use the proxy) */
    atomic_int stop;
    pthread_t th;
};

/* Listens on 127.0.0.1:0 and forwards to 127.0.0.1:upstream_port. 0 or -1. */
int h_proxy_start(struct h_proxy *p, int upstream_port);
/* Stops the listener and waits (bounded) for the connection threads. */
void h_proxy_stop(struct h_proxy *p);
/* Sets rule i (0..H_PROXY_MAX_RULES-1): requests whose request line holds `match` and not
 * `except` (NULL: none) get `action`. The first matching rule wins. Resets its hit count. */
void h_proxy_rule(struct h_proxy *p, int i, const char *match, const char *except,
                  enum h_proxy_action action, int delay_ms);
/* Turns rule i off (its hit count is kept). */
void h_proxy_rule_off(struct h_proxy *p, int i);
/* How many requests rule i acted on. */
int h_proxy_hits(struct h_proxy *p, int i);

#endif
