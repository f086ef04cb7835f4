/* SPDX-License-Identifier: MIT */
/* The SQLite backend of the store vtable (store_sqlite.c: SQL and dialect; store_sqlite_conn.c:
 * connection and transactions). */
#ifndef ROOST_STORE_SQLITE_H
#define ROOST_STORE_SQLITE_H

#include "store/store.h"

extern const struct store_ops store_sqlite_ops;

/* Detail of the last failed store_sqlite_ops.open() on the calling thread ("" when none). The
 * text lives in thread-local storage and stays valid until the next open on this thread. */
const char *store_sqlite_open_error(void);

#endif
