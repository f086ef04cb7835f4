/* SPDX-License-Identifier: MIT */
/* The http.cors_origins allow-list (see cors.h). Every answer of roostd passes through
 * cors_apply() once, before its handler adds its own headers. Roost authenticates with bearer
 * tokens (never cookies), so no Access-Control-Allow-Credentials: a listed origin gets the same
 * access a script anywhere with the token has, and an unlisted one cannot read any answer. */
#include "server/cors.h"

#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

/* The next entry of a comma-separated list, spaces trimmed: *p moves past it. False at the
 * end. */
static bool next_entry(const char **p, const char **start, size_t *len)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t' || *s == ',') {
        s++;
    }
    if (*s == '\0') {
        *p = s;
        return false;
    }
    const char *e = strchr(s, ',');
    if (e == NULL) {
        e = s + strlen(s);
    }
    *p = e;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) {
        e--;
    }
    *start = s;
    *len = (size_t)(e - s);
    return true;
}

static bool host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-';
}

/* scheme://host[:port] as a browser serializes an origin: host a name, an IPv4 address or an
 * IPv6 literal in brackets; the port digits. */
static bool valid_origin(const char *s, size_t len)
{
    const char *end = s + len, *h;
    if (len > 7 && strncasecmp(s, "http://", 7) == 0) {
        h = s + 7;
    } else if (len > 8 && strncasecmp(s, "https://", 8) == 0) {
        h = s + 8;
    } else {
        return false;
    }
    const char *c = h;
    if (*c == '[') {
        while (c < end && *c != ']') {
            bool ok = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') ||
                      (*c >= 'A' && *c <= 'F') || *c == ':' || *c == '.' || *c == '[';
            if (!ok) {
                return false;
            }
            c++;
        }
        if (c == end) {
            return false;
        }
        c++; /* the ']' */
    } else {
        while (c < end && host_char(*c)) {
            c++;
        }
        if (c == h) {
            return false;
        }
    }
    if (c == end) {
        return true;
    }
    if (*c != ':' || c + 1 == end) {
        return false;
    }
    for (c++; c < end; c++) {
        if (*c < '0' || *c > '9') {
            return false;
        }
    }
    return true;
}

int cors_validate(const char *list, char *err, size_t errlen)
{
    const char *p = list ? list : "", *s;
    size_t len;
    while (next_entry(&p, &s, &len)) {
        if (!valid_origin(s, len)) {
            snprintf(err, errlen,
                     "http.cors_origins: '%.*s' is not an origin (http[s]://host[:port], no path "
                     "or trailing slash, no wildcard)",
                     (int)(len > 200 ? 200 : len), s);
            return -1;
        }
    }
    return 0;
}

bool cors_origin_listed(const char *list, const char *origin)
{
    if (list == NULL || origin == NULL || origin[0] == '\0') {
        return false;
    }
    size_t olen = strlen(origin), len;
    const char *p = list, *s;
    while (next_entry(&p, &s, &len)) {
        if (len == olen && strncasecmp(s, origin, len) == 0) {
            return true;
        }
    }
    return false;
}

bool cors_apply(const char *list, enum evhttp_cmd_type method, const struct evkeyvalq *in,
                struct evkeyvalq *out)
{
    if (list == NULL || list[0] == '\0') {
        return false;
    }
    /* Caches (the browser's included) must not serve one origin's answer to another. */
    evhttp_add_header(out, "Vary", "Origin");
    const char *origin = evhttp_find_header(in, "Origin");
    if (!cors_origin_listed(list, origin)) {
        return false;
    }
    evhttp_add_header(out, "Access-Control-Allow-Origin", origin);
    bool preflight = method == EVHTTP_REQ_OPTIONS &&
                     evhttp_find_header(in, "Access-Control-Request-Method") != NULL;
    if (!preflight) {
        evhttp_add_header(out, "Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS);
        return false;
    }
    evhttp_add_header(out, "Access-Control-Allow-Methods", CORS_ALLOW_METHODS);
    evhttp_add_header(out, "Access-Control-Allow-Headers", CORS_ALLOW_HEADERS);
    evhttp_add_header(out, "Access-Control-Max-Age", CORS_MAX_AGE_S);
    return true;
}
