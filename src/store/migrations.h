/* SPDX-License-Identifier: MIT */
/* Numbered SQL migrations embedded at build time from migrations/<backend>/NNNN_name.sql. */
#ifndef ROOST_STORE_MIGRATIONS_H
#define ROOST_STORE_MIGRATIONS_H

#include <stddef.h>

struct store_migration {
    int version;
    const char *name;
    const char *sql;
};

extern const struct store_migration store_migrations_sqlite[];
extern const size_t store_migrations_sqlite_count;
extern const struct store_migration store_migrations_mysql[];
extern const size_t store_migrations_mysql_count;
extern const struct store_migration store_migrations_postgres[];
extern const size_t store_migrations_postgres_count;

#endif
