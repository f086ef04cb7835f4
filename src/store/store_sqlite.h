/* SPDX-License-Identifier: MIT */
/* The SQLite backend of the store vtable (store_sqlite.c: SQL and dialect; store_sqlite_conn.c:
 * connection and transactions). */
#ifndef ROOST_STORE_SQLITE_H
#define ROOST_STORE_SQLITE_H

#include "store/store.h"

/* The dialect: its driver mechanics, capabilities and statement runner (store_lifecycle.h). */
extern const struct store_dialect store_sqlite_dialect;

/* Detail of the last failed store_sqlite_open() on the calling thread ("" when none). The
 * text lives in thread-local storage and stays valid until the next open on this thread. */
const char *store_sqlite_open_error(void);

#endif
