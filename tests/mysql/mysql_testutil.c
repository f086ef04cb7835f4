/* SPDX-License-Identifier: MIT */
/* Per-test databases and raw connections for the MariaDB tests (see mysql_testutil.h). */
#include "mysql/mysql_testutil.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store_mysql.h"

#include "common/banned.h"

MYSQL *mysql_testutil_connect(const char *url)
{
    struct store_mysql_url u;
    if (store_mysql_url_parse(url, &u) != ROOST_OK) {
        printf("bad URL %s\n", url);
        return NULL;
    }
    MYSQL *db = mysql_init(NULL);
    if (db == NULL) {
        return NULL;
    }
    bool sock = u.socket[0] != '\0';
    if (mysql_real_connect(db, sock ? NULL : u.hosts[0].name, u.user, u.pass, u.db[0] ? u.db : NULL,
                           u.hosts[0].port, sock ? u.socket : NULL, 0) == NULL) {
        printf("connect %s: %s\n", url, mysql_error(db));
        mysql_close(db);
        return NULL;
    }
    return db;
}

unsigned mysql_testutil_exec(MYSQL *db, const char *sql)
{
    if (mysql_query(db, sql) != 0) {
        unsigned e = mysql_errno(db);
        printf("%s: %s (%u)\n", sql, mysql_error(db), e);
        return e != 0 ? e : 1;
    }
    MYSQL_RES *res = mysql_store_result(db);
    if (res != NULL) {
        mysql_free_result(res);
    }
    return 0;
}

long long mysql_testutil_int(const char *url, const char *sql)
{
    MYSQL *db = mysql_testutil_connect(url);
    long long v = -1;
    if (db != NULL && mysql_query(db, sql) == 0) {
        MYSQL_RES *res = mysql_store_result(db);
        MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
        if (row && row[0]) {
            v = strtoll(row[0], NULL, 10);
        }
        mysql_free_result(res);
    } else if (db != NULL) {
        printf("%s: %s\n", sql, mysql_error(db));
    }
    if (db != NULL) {
        mysql_close(db);
    }
    return v;
}

int mysql_testutil_host(const char *url, char *host, size_t cap, int *port)
{
    const char *at = strrchr(url, '@');
    const char *colon = at ? strchr(at, ':') : NULL;
    if (colon == NULL || strchr(colon, '/') == NULL || (size_t)(colon - at - 1) >= cap) {
        return -1;
    }
    snprintf(host, cap, "%.*s", (int)(colon - at - 1), at + 1);
    *port = (int)strtol(colon + 1, NULL, 10);
    return 0;
}

int mysql_testutil_via(const char *url, int port, char *out, size_t cap)
{
    const char *at = strrchr(url, '@');
    const char *slash = at ? strchr(at, '/') : NULL;
    int n = slash != NULL ? snprintf(out, cap, "store.url=%.*s127.0.0.1:%d%s", (int)(at + 1 - url),
                                     url, port, slash)
                          : -1;
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Replaces the database part of url (after the host, before any '?'). */
static int with_db(const char *url, const char *db, char *out, size_t cap)
{
    const char *host = strstr(url, "://");
    if (host == NULL) {
        return -1;
    }
    host += 3;
    const char *query = strchr(host, '?');
    const char *end = query != NULL ? query : host + strlen(host);
    const char *at = NULL;
    for (const char *c = host; c < end; c++) {
        if (*c == '@') {
            at = c;
        }
    }
    const char *slash = memchr(at != NULL ? at : host, '/', (size_t)(end - (at ? at : host)));
    if (slash == NULL) {
        return -1;
    }
    int n = snprintf(out, cap, "%.*s/%s%s", (int)(slash - url), url, db, query ? query : "");
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int mysql_testutil_fresh_db(const char *base_url, const char *name, char *url, size_t cap)
{
    static atomic_int counter;
    char db[65], sql[256];
    snprintf(db, sizeof db, "roost_t_%d_%ld_%.40s", atomic_fetch_add(&counter, 1), (long)getpid(),
             name);
    if (with_db(base_url, db, url, cap) != 0) {
        printf("cannot build a URL from %s\n", base_url);
        return -1;
    }
    MYSQL *conn = mysql_testutil_connect(base_url);
    if (conn == NULL) {
        return -1;
    }
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`", db);
    int rc = mysql_testutil_exec(conn, sql) == 0 ? 0 : -1;
    snprintf(sql, sizeof sql, "CREATE DATABASE `%s` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", db);
    if (rc == 0 && mysql_testutil_exec(conn, sql) != 0) {
        rc = -1;
    }
    mysql_close(conn);
    return rc;
}

void mysql_testutil_drop_db(const char *url)
{
    struct store_mysql_url u;
    char sql[256];
    if (store_mysql_url_parse(url, &u) != ROOST_OK) {
        return;
    }
    MYSQL *conn = mysql_testutil_connect(url);
    if (conn == NULL) {
        return;
    }
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`", u.db);
    mysql_testutil_exec(conn, sql);
    mysql_close(conn);
}
