/* SPDX-License-Identifier: MIT */
/* Cross-origin requests (CORS, the Fetch standard): the http.cors_origins allow-list of exact
 * origins ("https://app.example,http://localhost:5173"). Pure functions over header lists, so
 * the router decides and the tests see exactly what a browser would. */
#ifndef ROOST_SERVER_CORS_H
#define ROOST_SERVER_CORS_H

#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>

/* The request headers a preflight may ask for, and the response headers a page may read. */
#define CORS_ALLOW_METHODS "GET, POST, DELETE"
#define CORS_ALLOW_HEADERS                                                                         \
    "Authorization, Content-Type, Signature, Signature-Input, Content-Digest, Idempotency-Key, "   \
    "Last-Event-ID"
#define CORS_EXPOSE_HEADERS "Retry-After, X-Request-Id, X-Roost-Version"
#define CORS_MAX_AGE_S "600"

/* Checks an http.cors_origins value: empty, or comma-separated origins, each
 * scheme://host[:port] with scheme http or https and nothing after the authority (no path, no
 * trailing slash, no wildcard). Returns 0, or -1 with why in err. */
int cors_validate(const char *list, char *err, size_t errlen);

/* True when `origin` (an Origin header, may be NULL) is one of `list`'s entries exactly
 * (ASCII case-insensitive; spaces around the commas ignored). */
bool cors_origin_listed(const char *list, const char *origin);

/* Adds the CORS headers of an answer to `out`, given the request headers `in` and the list:
 * nothing when the list is empty (same-origin deployments see no change); otherwise Vary: Origin
 * always, and for a listed Origin, Access-Control-Allow-Origin (that origin) and
 * Access-Control-Expose-Headers. Returns true when the request is a preflight of a listed origin
 * (OPTIONS with Origin and Access-Control-Request-Method): its answer is a 204 and the headers
 * for it (allowed methods and headers, Max-Age) are added too. A preflight of an unlisted origin
 * gets no CORS header and is routed as any OPTIONS request (405 or 404), which the browser
 * takes as a refusal. */
bool cors_apply(const char *list, enum evhttp_cmd_type method, const struct evkeyvalq *in,
                struct evkeyvalq *out);

#endif
