/* SPDX-License-Identifier: MIT */
/* The MySQL store URL (store_mysql_url.c). */
#ifndef ROOST_STORE_MYSQL_URL_H
#define ROOST_STORE_MYSQL_URL_H

#include <stdbool.h>

/* The parts of mysql://USER[:PASS]@HOST[:PORT]/DB[?socket=PATH][&isolation=LEVEL],
 * percent-decoded. isolation is "read-committed" (the default; see connect_db in store_mysql_conn.c
 * for why) or "repeatable-read" (for measurements: bench/mysql_isolation.c). */
struct store_mysql_url {
    char user[129];
    char pass[257];
    char host[256];
    char db[65];
    char socket[512]; /* "" = TCP */
    unsigned port;    /* 0 = the default */
    bool repeatable_read;
};

/* ROOST_EINVAL for a malformed URL or an unknown query parameter. */
int store_mysql_url_parse(const char *url, struct store_mysql_url *out);

#endif
