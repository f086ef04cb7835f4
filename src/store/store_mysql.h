/* SPDX-License-Identifier: MIT */
/* The MySQL/MariaDB backend of the store vtable (store_mysql.c: SQL and dialect;
 * store_mysql_conn.c: connection and transactions). */
#ifndef ROOST_STORE_MYSQL_H
#define ROOST_STORE_MYSQL_H

#include "store/store.h"
#include "store/store_mysql_url.h"

/* The dialect: its driver mechanics, capabilities and statement runner (store_lifecycle.h). */
extern const struct store_dialect store_mysql_dialect;

/* Detail of the last failed store_mysql_open() on the calling thread ("" when none); valid
 * until the next open on this thread. */
const char *store_mysql_open_error(void);
/* store_ha_list for the MySQL backend (store_mysql_ha.c). */
size_t store_mysql_ha_list(struct store_ha_info *out, size_t max);

#endif
