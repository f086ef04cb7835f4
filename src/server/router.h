/* SPDX-License-Identifier: MIT */
/* The router: path matching of the route declaration (routes.h) with {agent}, {event}, {key} and
 * {file} captures, the framing checks evhttp does not make, and
 * the dispatch of every request: framing, routing, authentication, scope, signature, query, body,
 * handler. Matching and framing are pure functions (tests/unit/test_router.c). */
#ifndef ROOST_SERVER_ROUTER_H
#define ROOST_SERVER_ROUTER_H

#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/routes.h"

struct evkeyvalq;
struct request;

/* A path segment captured by a {name} of a pattern, raw (not NUL-terminated); p NULL = none. */
struct capture {
    const char *p;
    size_t len;
};

struct route_captures {
    struct capture agent, event, key, file;
};

/* The route of (method, path); `path` has no query. Returns ROOST_OK with *route and the
 * captures of its pattern, ROOST_ENOTFOUND when no pattern matches the path, or ROOST_EMETHOD
 * when one does but not with this method. A literal segment wins over a placeholder (table
 * order). */
int router_match(enum evhttp_cmd_type method, const char *path, const struct route **route,
                 struct route_captures *caps);

/* Checks what evhttp leaves to us: header names and values, header count, one unambiguous
 * Content-Length and no Transfer-Encoding, exactly one Host on HTTP/1.1, an origin-form target.
 * Returns 0, or the status to answer (400, 431) with *why set; the connection must then close. */
int router_check_framing(struct evkeyvalq *headers, int major, int minor, const char *uri,
                         const char **why);

/* The listener's callback for every request; `arg` is the struct runtime. head_error (NULL when
 * none) is why the listener's look at the raw head refuses it: answered 400, connection closed. */
void router_dispatch(struct evhttp_request *req, const char *head_error, void *arg);

#endif
