/* SPDX-License-Identifier: MIT */
/* The listening side of roostd's HTTP front: the evhttp instance with its limits, the bound
 * socket (backlog 4096), the pause on EMFILE/ENFILE, built-in TLS (tls.cert_file), and every
 * connection's guard: the request-head deadline (http.header_timeout_s), the per-address cap
 * (http.max_conns_per_addr) and the raw check of each request head (NUL bytes, HTTP-version).
 * Every parsed request goes to one callback (the router). Loop thread only. */
#ifndef ROOST_SERVER_LISTENER_H
#define ROOST_SERVER_LISTENER_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct event_base;
struct evhttp_connection;
struct evhttp_request;
struct listener;

/* The per-address connection cap of http.max_conns_per_addr = -1: a quarter of the open-file
 * limit (RLIMIT_NOFILE, soft), so one address never holds most descriptors; 1024 without one. */
int64_t listener_auto_conns_per_addr(void);

/* Creates the evhttp, binds cfg->listen and writes the URL clients reach it at into base_url
 * ("http://127.0.0.1:PORT"; port 0 picked a free one). `cfg` (borrowed, must outlive the
 * listener) is read again for the reloadable http.* limits. on_request gets each request with
 * head_error: NULL, or why its raw head must be refused (400) although evhttp parsed it.
 * Returns 0 with *out set, or -1 with err set (nothing left to free). */
int listener_start(struct event_base *base, const struct config *cfg,
                   void (*on_request)(struct evhttp_request *req, const char *head_error,
                                      void *arg),
                   void *arg, struct listener **out, char *base_url, size_t url_len, char *err,
                   size_t errlen);
/* evhttp_connection_set_closecb() for connections of this process's listener, whose own close
 * callback frees the connection's guard: `cb` is called first. Any other connection gets `cb`
 * set directly. */
void listener_set_closecb(struct evhttp_connection *evcon,
                          void (*cb)(struct evhttp_connection *evcon, void *arg), void *arg);
/* Closes the listening socket; established connections keep being served. */
void listener_stop_accepting(struct listener *l);
/* Closes every connection (their close callbacks run) and frees (NULL is a no-op). */
void listener_free(struct listener *l);

#endif
