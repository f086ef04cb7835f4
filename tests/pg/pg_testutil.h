/* SPDX-License-Identifier: MIT */
/* Helpers of the PostgreSQL tests: a schema per test on the private server that
 * scripts/postgres_test.sh started (store URL parameter schema=NAME), and raw libpq connections
 * for "application" code. */
#ifndef ROOST_TESTS_PG_TESTUTIL_H
#define ROOST_TESTS_PG_TESTUTIL_H

#include <libpq-fe.h>
#include <stddef.h>

/* Connects with a postgres:// URL (its schema= parameter, if any, becomes the search_path); NULL
 * with a message on stdout. */
PGconn *pg_testutil_connect(const char *url);

/* Writes into url a store URL of base_url's server naming a schema of its own,
 * roost_t_<n>_<pid>_<name> (dropped first if a crashed run left it). 0 on success. */
int pg_testutil_fresh_schema(const char *base_url, const char *name, char *url, size_t cap);

/* Drops the schema a URL names (and everything in it). */
void pg_testutil_drop_schema(const char *url);

/* Runs SQL text; 0 on success, else prints the error and returns -1. */
int pg_testutil_exec(PGconn *db, const char *sql);

#endif
