/* SPDX-License-Identifier: MIT */
/* Parsing mysql://USER[:PASS]@HOST[:PORT][,HOST[:PORT]...]/DB[?socket=PATH][&isolation=LEVEL]
 * into its percent-decoded parts. */
#include "store/store_mysql_url.h"

#include <stdio.h>
#include <string.h>

#include "common/strutil.h"
#include "roost/roost_error.h"

#include "common/banned.h"

/* One list item [host, end): NAME, NAME:PORT, [V6] or [V6]:PORT. */
static int parse_host(const char *host, const char *end, struct store_mysql_host *out)
{
    const char *name_end = end;
    const char *port = NULL;
    const char *name = host;
    if (host < end && host[0] == '[') {
        const char *close = memchr(host, ']', (size_t)(end - host));
        if (close == NULL) {
            return ROOST_EINVAL;
        }
        if (close + 1 < end && close[1] == ':') {
            port = close + 2;
        } else if (close + 1 != end) {
            return ROOST_EINVAL;
        }
        name = host + 1;
        name_end = close;
    } else {
        const char *colon = memchr(host, ':', (size_t)(end - host));
        if (colon != NULL) {
            port = colon + 1;
            name_end = colon;
        }
    }
    if (name == name_end) {
        return ROOST_EINVAL; /* an empty host, in a list or before a port */
    }
    if (strutil_percent_decode(name, (size_t)(name_end - name), out->name, sizeof out->name) != 0) {
        return ROOST_EINVAL;
    }
    out->port = 0;
    if (port != NULL) {
        unsigned long v = 0;
        if (port == end) {
            return ROOST_EINVAL;
        }
        for (const char *c = port; c < end; c++) {
            if (*c < '0' || *c > '9' || (v = v * 10 + (unsigned long)(*c - '0')) > 65535) {
                return ROOST_EINVAL;
            }
        }
        out->port = (unsigned)v;
    }
    return ROOST_OK;
}

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
    /* The host list: items separated by ',' (never inside an IPv6 address's brackets). */
    const char *item = host;
    while (item < slash) {
        const char *c = item;
        bool bracket = false;
        while (c < slash && (bracket || *c != ',')) {
            bracket = *c == '[' ? true : *c == ']' ? false : bracket;
            c++;
        }
        if (out->n_hosts == STORE_MYSQL_HOSTS_MAX ||
            parse_host(item, c, &out->hosts[out->n_hosts]) != ROOST_OK) {
            return ROOST_EINVAL;
        }
        out->n_hosts++;
        if (c < slash && c + 1 == slash) {
            return ROOST_EINVAL; /* a trailing ',' */
        }
        item = c + 1;
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
    if (out->socket[0] == '\0' ? out->n_hosts == 0 : out->n_hosts > 1) {
        return ROOST_EINVAL;
    }
    return ROOST_OK;
}

void store_mysql_host_label(const struct store_mysql_host *h, char *out, size_t cap)
{
    bool v6 = strchr(h->name, ':') != NULL;
    snprintf(out, cap, "%s%s%s:%u", v6 ? "[" : "", h->name, v6 ? "]" : "",
             h->port != 0 ? h->port : 3306);
}
