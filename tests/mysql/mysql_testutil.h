/* SPDX-License-Identifier: MIT */
/* Helpers of the MariaDB tests: a database per test on the private server that
 * scripts/mariadb_test.sh started, and raw libmariadb connections for "application" code. */
#ifndef ROOST_TESTS_MYSQL_TESTUTIL_H
#define ROOST_TESTS_MYSQL_TESTUTIL_H

#include <mysql.h>
#include <stddef.h>

/* Connects with the parts of a mysql:// URL (autocommit on); NULL with a message on stdout. */
MYSQL *mysql_testutil_connect(const char *url);

/* Creates an empty database roost_t_<n>_<pid>_<name> on the server of base_url (any database in
 * it) and writes a URL naming it into url. 0 on success. */
int mysql_testutil_fresh_db(const char *base_url, const char *name, char *url, size_t cap);

/* Drops the database a URL names. */
void mysql_testutil_drop_db(const char *url);

/* Runs one statement; 0 on success, else prints the error and returns the server error code. */
unsigned mysql_testutil_exec(MYSQL *db, const char *sql);

/* The integer of a one-value query on a connection of its own to url; -1 (and a message) on
 * failure. */
long long mysql_testutil_int(const char *url, const char *sql);

/* The HOST and PORT of url (mysql://USER:PASS@HOST:PORT/DB) into host[cap] and *port. 0, or -1
 * when url is not of that form. */
int mysql_testutil_host(const char *url, char *host, size_t cap, int *port);

/* url as a store.url=… setting with HOST:PORT replaced by 127.0.0.1:port (a proxy in front of the
 * server), into out[cap]. 0 or -1. */
int mysql_testutil_via(const char *url, int port, char *out, size_t cap);

#endif
