/* SPDX-License-Identifier: MIT */
#include "pg/pg_testutil.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/banned.h"

/* Splits off the schema= parameter: *base gets the rest (malloc'd), schema the name or "". */
static char *split(const char *url, char *schema, size_t cap)
{
    size_t n = strlen(url);
    char *base = malloc(n + 1);
    if (base == NULL) {
        return NULL;
    }
    schema[0] = '\0';
    const char *q = strchr(url, '?');
    size_t len = q != NULL ? (size_t)(q - url) : n;
    memcpy(base, url, len);
    bool first = true;
    for (const char *p = q != NULL ? q + 1 : NULL; p != NULL && *p != '\0';) {
        const char *amp = strchr(p, '&');
        size_t plen = amp != NULL ? (size_t)(amp - p) : strlen(p);
        if (plen > 7 && memcmp(p, "schema=", 7) == 0) {
            snprintf(schema, cap, "%.*s", (int)(plen - 7), p + 7);
        } else {
            base[len++] = first ? '?' : '&';
            memcpy(base + len, p, plen);
            len += plen;
            first = false;
        }
        p = amp != NULL ? amp + 1 : NULL;
    }
    base[len] = '\0';
    return base;
}

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

int pg_testutil_exec(PGconn *db, const char *sql)
{
    PGresult *res = PQexec(db, sql);
    ExecStatusType s = PQresultStatus(res);
    int rc = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? 0 : -1;
    if (rc != 0) {
        printf("postgres: %s: %s\n", sql, PQerrorMessage(db));
    }
    PQclear(res);
    return rc;
}

PGconn *pg_testutil_connect(const char *url)
{
    char schema[128];
    char *base = split(url, schema, sizeof schema);
    if (base == NULL) {
        return NULL;
    }
    PGconn *db = PQconnectdb(base);
    free(base);
    PQsetNoticeProcessor(db, quiet, NULL);
    if (PQstatus(db) != CONNECTION_OK) {
        printf("postgres: connect: %s\n", PQerrorMessage(db));
        PQfinish(db);
        return NULL;
    }
    if (schema[0] != '\0') {
        char sql[200];
        snprintf(sql, sizeof sql, "SET search_path TO \"%s\"", schema);
        if (pg_testutil_exec(db, sql) != 0) {
            PQfinish(db);
            return NULL;
        }
    }
    return db;
}

int pg_testutil_fresh_schema(const char *base_url, const char *name, char *url, size_t cap)
{
    static atomic_int counter;
    char schema[64];
    int n = snprintf(schema, sizeof schema, "roost_t_%d_%d_", atomic_fetch_add(&counter, 1),
                     (int)getpid());
    for (const char *c = name; *c != '\0' && n < (int)sizeof schema - 1; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_';
        schema[n++] = ok ? *c : '_';
    }
    schema[n] = '\0';
    char dummy[128];
    char *base = split(base_url, dummy, sizeof dummy);
    if (base == NULL) {
        return -1;
    }
    int w =
        snprintf(url, cap, "%s%cschema=%s", base, strchr(base, '?') != NULL ? '&' : '?', schema);
    free(base);
    if (w < 0 || (size_t)w >= cap) {
        return -1;
    }
    pg_testutil_drop_schema(url);
    return 0;
}

void pg_testutil_drop_schema(const char *url)
{
    char schema[128];
    char *base = split(url, schema, sizeof schema);
    if (base == NULL || schema[0] == '\0') {
        free(base);
        return;
    }
    PGconn *db = PQconnectdb(base);
    free(base);
    PQsetNoticeProcessor(db, quiet, NULL);
    if (PQstatus(db) == CONNECTION_OK) {
        char sql[200];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS \"%s\" CASCADE", schema);
        pg_testutil_exec(db, sql);
    }
    PQfinish(db);
}
