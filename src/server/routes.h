/* SPDX-License-Identifier: MIT */
/* The route declaration: one entry per route roostd serves (routes.c) with its method, path
 * pattern, name (the route label of logs and metrics), authentication and scope, body rule,
 * parameters and their bounds, signature policy, store job kind (the op label of store metrics)
 * and handler. The router, the handlers' parameter reads (request.h), the metrics, the signature
 * policy and `roostd --print-routes` (checked against doc/openapi.json) all read it. */
#ifndef ROOST_SERVER_ROUTES_H
#define ROOST_SERVER_ROUTES_H

#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/auth.h"

struct config;
struct request;

enum body_rule {
    BODY_NONE,     /* GET: a body is ignored */
    BODY_REQUIRED, /* POST with parameters: a JSON object is required */
    BODY_OPTIONAL, /* POST without parameters: an empty body (no Content-Type) is accepted */
};

/* Who may call a route. */
enum route_auth {
    ROUTE_AUTH_TOKEN,  /* a bearer token with the route's scope */
    ROUTE_AUTH_STREAM, /* the same, or ?access_token= / ?ticket= (EventSource sends no headers) */
    ROUTE_AUTH_NONE,   /* no authentication (health, metrics with its own token, public files) */
};

/* What a {key} segment names: its id check's error code differs. */
enum route_key {
    ROUTE_KEY_NONE,
    ROUTE_KEY_SIGNING,
    ROUTE_KEY_ENDPOINT,
    ROUTE_KEY_DEVICE,
    ROUTE_KEY_SOURCE
};

/* A parameter's place and JSON type. */
enum route_param_in { RP_QUERY, RP_BODY };
enum route_param_type {
    RP_INT,    /* an integer in min..max */
    RP_STRING, /* a string of min..max bytes */
    RP_TIME,   /* an RFC 3339 time (a string of at most max bytes) */
    RP_OBJECT, /* a JSON object */
    RP_ARRAY,  /* a JSON array of min..max items */
    RP_ANY,    /* any JSON value (a payload) */
};

/* A maximum taken from the configuration (its default is what --print-routes and the OpenAPI
 * document show). */
enum route_cfg_max {
    RP_CFG_NONE,
    RP_CFG_CLAIM_MAX_WAIT_S, /* claim.max_wait_s */
    RP_CFG_LEASE_MAX_S,      /* lease.max_s */
    RP_CFG_MAX_BATCH,        /* limits.max_batch */
    RP_CFG_MAX_RECIPIENTS,   /* limits.max_recipients */
};

struct route_param {
    const char *name; /* query name or body field; "acks[].event_id" is a field of each item */
    enum route_param_in in;
    enum route_param_type type;
    int64_t min, max;       /* the value (RP_INT), length (strings) or item count (RP_ARRAY) */
    enum route_cfg_max cfg; /* when set, max comes from the configuration */
    bool required;
    const char *values; /* an enumeration, "|"-separated ("agent|depth|age"), or NULL */
};

#define ROUTE_MAX_PARAMS 12

/* One route: everything the router, the handlers, the metrics, the signature policy and the
 * OpenAPI document (doc/openapi.json, checked against `roostd --print-routes`) know of it. */
struct route {
    enum evhttp_cmd_type method;
    const char *pattern; /* literal segments, {agent}, {event}, {key} and {file} */
    const char *name;    /* the label of logs and metrics (route="...") */
    enum route_auth auth;
    enum auth_action action; /* the scope a token needs (with ROUTE_AUTH_TOKEN/STREAM) */
    enum route_key key;
    enum body_rule body;
    bool head;          /* HEAD is served too (the handler sends no body) */
    bool draining;      /* served while roostd drains (the others answer 503) */
    bool signed_policy; /* under signatures.require: "mutations" (when not GET) and "all" */
    bool form; /* the body may also be application/x-www-form-urlencoded (OAuth clients, RFC 6749):
                  read as a JSON object of strings */
    const char *job; /* the store job kind (label op="..." of store metrics), NULL = none */
    void (*handler)(struct request *rq);
    struct route_param params[ROUTE_MAX_PARAMS]; /* ended by a NULL name */
};

/* The declaration (routes.c), in match order. */
extern const struct route router_routes[];
extern const size_t router_routes_count;

/* The declared parameter `name` of `in` on `r`, or NULL. */
const struct route_param *route_param_find(const struct route *r, enum route_param_in in,
                                           const char *name);
/* The parameter's maximum under `cfg` (its configuration key when it has one). */
int64_t route_param_max(const struct route_param *p, const struct config *cfg);
/* True when a signature is required on `r` under the signature policy `policy` (an enum
 * config_sig_policy: off, mutations, all). */
bool route_signature_required(const struct route *r, int policy);
/* The declaration as JSON (roostd --print-routes), the maxima under `cfg`. Caller frees. */
char *routes_json(const struct config *cfg);

#endif
