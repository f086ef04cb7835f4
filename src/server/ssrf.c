/* SPDX-License-Identifier: MIT */
/* The webhook destination filter (ssrf.h): a fixed block list of IPv4 and IPv6 ranges, IPv6 forms
 * that embed an IPv4 address unwrapped and checked again, and the operator's allow list. */
#include "server/ssrf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

struct range {
    const char *cidr; /* also the rule reported */
    int family;
    uint8_t addr[16];
    int prefix;
};

/* IPv4 ranges that are not globally reachable unicast (IANA special-purpose registry, plus the
 * deprecated 6to4 relay anycast, which is stricter than IANA). */
static struct range v4_blocked[] = {
    {"0.0.0.0/8", 0, {0}, 0},      {"10.0.0.0/8", 0, {0}, 0},     {"100.64.0.0/10", 0, {0}, 0},
    {"127.0.0.0/8", 0, {0}, 0},    {"169.254.0.0/16", 0, {0}, 0}, {"172.16.0.0/12", 0, {0}, 0},
    {"192.0.0.0/24", 0, {0}, 0},   {"192.0.2.0/24", 0, {0}, 0},   {"192.88.99.0/24", 0, {0}, 0},
    {"192.168.0.0/16", 0, {0}, 0}, {"198.18.0.0/15", 0, {0}, 0},  {"198.51.100.0/24", 0, {0}, 0},
    {"203.0.113.0/24", 0, {0}, 0}, {"224.0.0.0/4", 0, {0}, 0},    {"240.0.0.0/4", 0, {0}, 0},
};

/* IPv6 inside 2000::/3 (global unicast) that is still refused: IETF protocol assignments
 * (Teredo, benchmarking, ORCHID), documentation, and 6to4 (which embeds any IPv4 address).
 * Everything outside 2000::/3 is refused before this list is read, except the IPv4-mapped form,
 * which is unwrapped. */
static struct range v6_blocked[] = {
    {"2001::/23", 0, {0}, 0},
    {"2001:db8::/32", 0, {0}, 0},
    {"2002::/16", 0, {0}, 0},
    {"3fff::/20", 0, {0}, 0},
};

static int parse_cidr(const char *text, int *family, uint8_t addr[16], int *prefix)
{
    char buf[64];
    size_t n = strlen(text);
    if (n == 0 || n >= sizeof buf) {
        return -1;
    }
    memcpy(buf, text, n + 1);
    char *slash = strchr(buf, '/');
    long bits = -1;
    if (slash != NULL) {
        *slash = '\0';
        char *end;
        bits = strtol(slash + 1, &end, 10);
        if (slash[1] == '\0' || *end != '\0') {
            return -1;
        }
    }
    memset(addr, 0, 16);
    if (inet_pton(AF_INET, buf, addr) == 1) {
        *family = AF_INET;
        bits = bits < 0 ? 32 : bits;
        if (bits > 32) {
            return -1;
        }
    } else if (inet_pton(AF_INET6, buf, addr) == 1) {
        *family = AF_INET6;
        bits = bits < 0 ? 128 : bits;
        if (bits > 128) {
            return -1;
        }
    } else {
        return -1;
    }
    *prefix = (int)bits;
    return 0;
}

static bool prefix_match(const uint8_t *a, const uint8_t *net, int prefix)
{
    int full = prefix / 8, rest = prefix % 8;
    if (memcmp(a, net, (size_t)full) != 0) {
        return false;
    }
    if (rest == 0) {
        return true;
    }
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[full] & mask) == (net[full] & mask);
}

/* The tables are parsed once, on first use; the strings are constants, so every thread computes
 * the same bytes and a race only writes them twice. */
static void tables_init(void)
{
    static volatile int ready;
    if (ready) {
        return;
    }
    for (size_t i = 0; i < sizeof v4_blocked / sizeof v4_blocked[0]; i++) {
        struct range *r = &v4_blocked[i];
        (void)parse_cidr(r->cidr, &r->family, r->addr, &r->prefix);
    }
    for (size_t i = 0; i < sizeof v6_blocked / sizeof v6_blocked[0]; i++) {
        struct range *r = &v6_blocked[i];
        (void)parse_cidr(r->cidr, &r->family, r->addr, &r->prefix);
    }
    ready = 1;
}

int ssrf_filter_parse(struct ssrf_filter *f, const char *list, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    if (list == NULL) {
        return 0;
    }
    const char *p = list;
    while (*p != '\0') {
        size_t skip = strspn(p, ", \t");
        p += skip;
        size_t len = strcspn(p, ", \t");
        if (len == 0) {
            break;
        }
        char item[64];
        if (len >= sizeof item) {
            snprintf(err, errlen, "webhooks.allow_cidrs: an entry is too long");
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (f->n_allow == SSRF_ALLOW_MAX) {
            snprintf(err, errlen, "webhooks.allow_cidrs: more than %d entries", SSRF_ALLOW_MAX);
            return -1;
        }
        struct ssrf_cidr *c = &f->allow[f->n_allow];
        if (parse_cidr(item, &c->family, c->addr, &c->prefix) != 0) {
            snprintf(err, errlen, "webhooks.allow_cidrs: '%s' is not an address or CIDR", item);
            return -1;
        }
        f->n_allow++;
        p += len;
    }
    return 0;
}

static bool in_allow(const struct ssrf_filter *f, int family, const uint8_t *a)
{
    for (size_t i = 0; f != NULL && i < f->n_allow; i++) {
        if (f->allow[i].family == family && prefix_match(a, f->allow[i].addr, f->allow[i].prefix)) {
            return true;
        }
    }
    return false;
}

static bool v4_allowed(const struct ssrf_filter *f, const uint8_t a[4], const char **rule)
{
    if (in_allow(f, AF_INET, a)) {
        *rule = "allow_cidrs";
        return true;
    }
    for (size_t i = 0; i < sizeof v4_blocked / sizeof v4_blocked[0]; i++) {
        if (prefix_match(a, v4_blocked[i].addr, v4_blocked[i].prefix)) {
            *rule = v4_blocked[i].cidr;
            return false;
        }
    }
    *rule = "public";
    return true;
}

static bool v6_allowed(const struct ssrf_filter *f, const uint8_t a[16], const char **rule)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (in_allow(f, AF_INET6, a)) {
        *rule = "allow_cidrs";
        return true;
    }
    /* ::ffff:a.b.c.d is how a dual-stack socket reaches a.b.c.d: judge the IPv4 address. */
    if (memcmp(a, mapped, sizeof mapped) == 0) {
        return v4_allowed(f, a + 12, rule);
    }
    /* Outside 2000::/3 nothing is globally reachable unicast: ::, ::1, IPv4-compatible,
     * SIIT-translated, NAT64 (64:ff9b::/96, 64:ff9b:1::/48), discard-only, SRv6 SIDs, ULA,
     * link-local, site-local, multicast and the unassigned rest. */
    if ((a[0] & 0xe0) != 0x20) {
        *rule = "outside 2000::/3";
        return false;
    }
    for (size_t i = 0; i < sizeof v6_blocked / sizeof v6_blocked[0]; i++) {
        if (prefix_match(a, v6_blocked[i].addr, v6_blocked[i].prefix)) {
            *rule = v6_blocked[i].cidr;
            return false;
        }
    }
    *rule = "public";
    return true;
}

bool ssrf_allowed(const struct ssrf_filter *f, const struct sockaddr *sa, const char **rule)
{
    const char *dummy;
    rule = rule != NULL ? rule : &dummy;
    tables_init();
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        return v4_allowed(f, (const uint8_t *)&in->sin_addr, rule);
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        return v6_allowed(f, in6->sin6_addr.s6_addr, rule);
    }
    *rule = "not an IP address";
    return false;
}

bool ssrf_allowed_text(const struct ssrf_filter *f, const char *ip, const char **rule)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
    } else if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
    } else {
        if (rule != NULL) {
            *rule = "not an address";
        }
        return false;
    }
    return ssrf_allowed(f, (const struct sockaddr *)&ss, rule);
}
