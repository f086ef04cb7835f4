/* SPDX-License-Identifier: MIT */
/* The PostgreSQL backend of the store vtable (store_pg.c: the dialect's primitives, reads and
 * tailer; store_pg_conn.c: URL, connection, statements, transactions, migrations). */
#ifndef ROOST_STORE_PG_H
#define ROOST_STORE_PG_H

#include "store/store.h"

/* The dialect: its driver mechanics, capabilities and statement runner (store_lifecycle.h). */
extern const struct store_dialect store_pg_dialect;

#endif
