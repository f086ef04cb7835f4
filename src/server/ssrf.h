/* SPDX-License-Identifier: MIT */
/* The webhook destination filter (DESIGN §6.3): which IP addresses roostd may connect to on
 * behalf of a tenant. Everything not globally reachable unicast is refused (loopback, private,
 * link-local, CGNAT, documentation, benchmarking, multicast, reserved, and the IPv6 forms that
 * embed such an IPv4 address); an operator's allow list (webhooks.allow_cidrs) is the only way
 * to private ranges. A leaf: immutable after ssrf_filter_parse, so any thread may check. */
#ifndef ROOST_SERVER_SSRF_H
#define ROOST_SERVER_SSRF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define SSRF_ALLOW_MAX 64

struct ssrf_cidr {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    int prefix;
};

struct ssrf_filter {
    struct ssrf_cidr allow[SSRF_ALLOW_MAX];
    size_t n_allow;
};

/* Parses a list of CIDRs ("127.0.0.0/8, ::1/128"; a bare address is a /32 or /128) separated by
 * commas or spaces into f->allow. NULL or "" = none. Returns 0, or -1 with a reason in err. */
int ssrf_filter_parse(struct ssrf_filter *f, const char *list, char *err, size_t errlen);

/* True when roostd may connect to the address. *rule (may be NULL) gets the CIDR or reason that
 * blocks it, or "allow_cidrs"/"public" when allowed (a static string). */
bool ssrf_allowed(const struct ssrf_filter *f, const struct sockaddr *sa, const char **rule);
/* The same for an address in text form; an unparsable one is refused ("not an address"). */
bool ssrf_allowed_text(const struct ssrf_filter *f, const char *ip, const char **rule);

#endif
