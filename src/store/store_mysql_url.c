/* SPDX-License-Identifier: MIT */
/* Parsing mysql://USER[:PASS]@HOST[:PORT]/DB[?socket=PATH][&isolation=LEVEL] into its
 * percent-decoded parts. */
#include "store/store_mysql_url.h"

#include <string.h>

#include "common/strutil.h"
#include "roost/roost_error.h"

#include "common/banned.h"

int store_mysql_url_parse(const char *url, struct store_mysql_url *out)
{
    static const char prefix[] = "mysql://";
    memset(out, 0, sizeof *out);
    if (url == NULL || strncmp(url, prefix, sizeof prefix - 1) != 0) {
        return ROOST_EINVAL;
    }
    const char *p = url + sizeof prefix - 1;
    const char *query = strchr(p, '?');
    const char *end = query != NULL ? query : p + strlen(p);
    /* The last '@' ends the user info (an unencoded '@' in a password still parses). */
    const char *at = NULL;
    for (const char *c = p; c < end; c++) {
        if (*c == '@') {
            at = c;
        }
    }
    const char *host = p;
    if (at != NULL) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *user_end = colon != NULL ? colon : at;
        if (strutil_percent_decode(p, (size_t)(user_end - p), out->user, sizeof out->user) != 0) {
            return ROOST_EINVAL;
        }
        if (colon != NULL && strutil_percent_decode(colon + 1, (size_t)(at - colon - 1), out->pass,
                                                    sizeof out->pass) != 0) {
            return ROOST_EINVAL;
        }
        host = at + 1;
    }
    const char *slash = memchr(host, '/', (size_t)(end - host));
    if (slash == NULL || slash + 1 >= end) {
        return ROOST_EINVAL; /* the database is required */
    }
    const char *host_end = slash;
    const char *port = NULL;
    if (host[0] == '[') {
        const char *close = memchr(host, ']', (size_t)(slash - host));
        if (close == NULL) {
            return ROOST_EINVAL;
        }
        if (close + 1 < slash && close[1] == ':') {
            port = close + 2;
        } else if (close + 1 != slash) {
            return ROOST_EINVAL;
        }
        if (strutil_percent_decode(host + 1, (size_t)(close - host - 1), out->host,
                                   sizeof out->host) != 0) {
            return ROOST_EINVAL;
        }
    } else {
        const char *colon = memchr(host, ':', (size_t)(slash - host));
        if (colon != NULL) {
            port = colon + 1;
            host_end = colon;
        }
        if (strutil_percent_decode(host, (size_t)(host_end - host), out->host, sizeof out->host) !=
            0) {
            return ROOST_EINVAL;
        }
    }
    if (port != NULL) {
        unsigned long v = 0;
        if (port == slash) {
            return ROOST_EINVAL;
        }
        for (const char *c = port; c < slash; c++) {
            if (*c < '0' || *c > '9' || (v = v * 10 + (unsigned long)(*c - '0')) > 65535) {
                return ROOST_EINVAL;
            }
        }
        out->port = (unsigned)v;
    }
    if (strutil_percent_decode(slash + 1, (size_t)(end - slash - 1), out->db, sizeof out->db) !=
        0) {
        return ROOST_EINVAL;
    }
    while (query != NULL && query[1] != '\0') {
        const char *kv = query + 1;
        const char *amp = strchr(kv, '&');
        const char *kv_end = amp != NULL ? amp : kv + strlen(kv);
        static const char sock[] = "socket=";
        static const char rc_[] = "isolation=read-committed";
        static const char rr_[] = "isolation=repeatable-read";
        size_t kl = (size_t)(kv_end - kv);
        if (kl > sizeof sock - 1 && strncmp(kv, sock, sizeof sock - 1) == 0) {
            if (strutil_percent_decode(kv + sizeof sock - 1, kl - (sizeof sock - 1), out->socket,
                                       sizeof out->socket) != 0) {
                return ROOST_EINVAL;
            }
        } else if (kl == sizeof rc_ - 1 && strncmp(kv, rc_, kl) == 0) {
            out->repeatable_read = false;
        } else if (kl == sizeof rr_ - 1 && strncmp(kv, rr_, kl) == 0) {
            out->repeatable_read = true;
        } else {
            return ROOST_EINVAL;
        }
        query = amp;
    }
    if (out->host[0] == '\0' && out->socket[0] == '\0') {
        return ROOST_EINVAL;
    }
    return ROOST_OK;
}
