/* SPDX-License-Identifier: MIT */
/* The MySQL store URL (store_mysql_url.c). */
#ifndef ROOST_STORE_MYSQL_URL_H
#define ROOST_STORE_MYSQL_URL_H

#include <stdbool.h>
#include <stddef.h>

/* Most database hosts one URL may list (a Galera cluster rarely has more than 9 nodes). */
#define STORE_MYSQL_HOSTS_MAX 16

struct store_mysql_host {
    char name[256]; /* percent-decoded; an IPv6 address without its brackets */
    unsigned port;  /* 0 = the default (3306) */
};

/* The parts of mysql://USER[:PASS]@HOST[:PORT][,HOST[:PORT]...]/DB[?socket=PATH][&isolation=LEVEL],
 * percent-decoded. Several hosts are the nodes of one cluster (MariaDB Galera), tried in order
 * (store_mysql_conn.c picks the writer); an IPv6 host is written in brackets, [::1]:3306.
 * isolation is "read-committed" (the default; see connect_db in store_mysql_conn.c for why) or
 * "repeatable-read" (for measurements: bench/mysql_isolation.c). */
struct store_mysql_url {
    char user[129];
    char pass[257];
    struct store_mysql_host hosts[STORE_MYSQL_HOSTS_MAX];
    size_t n_hosts; /* >= 1 for TCP; with a socket 0 or 1 (a name that is not used) */
    char db[65];
    char socket[512]; /* "" = TCP; only with a single host */
    bool repeatable_read;
};

/* ROOST_EINVAL for a malformed URL, an empty host in the list, more than STORE_MYSQL_HOSTS_MAX
 * hosts, a socket with several hosts, or an unknown query parameter. */
int store_mysql_url_parse(const char *url, struct store_mysql_url *out);

/* "host:port" ("[v6]:port" for IPv6; the port is 3306 when the URL gave none), for logs, metric
 * labels and /readyz. Never fails: the text is cut at cap. */
void store_mysql_host_label(const struct store_mysql_host *h, char *out, size_t cap);

#endif
