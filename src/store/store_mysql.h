/* SPDX-License-Identifier: MIT */
/* The MySQL/MariaDB backend of the store vtable (store_mysql.c: SQL and dialect;
 * store_mysql_conn.c: connection and transactions; store_mysql_tail.c: the tailer). */
#ifndef ROOST_STORE_MYSQL_H
#define ROOST_STORE_MYSQL_H

#include "store/store.h"

extern const struct store_ops store_mysql_ops;

/* Detail of the last failed store_mysql_ops.open() on the calling thread ("" when none); valid
 * until the next open on this thread. */
const char *store_mysql_open_error(void);

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
