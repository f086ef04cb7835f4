/* SPDX-License-Identifier: MIT */
/* The PostgreSQL backend's LISTEN connection: one per database URL and schema in this process.
 * Every transaction that writes change rows sends NOTIFY on the schema's channel in its COMMIT's
 * round trip (store_pg_commit), and so do applications through roost_publish(); PostgreSQL
 * delivers it only once the transaction committed, never on rollback. The tailer
 * (store_pg_tail) reads the change log only after news arrived here (or after a reconnect, when
 * what committed meanwhile must be caught up on), and once a second as a safety net. */
#include "store/store_pg_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"

#include "common/banned.h"

/* The least time between two connection attempts while the server is away. */
#define LISTEN_RETRY_MS 1000

struct pg_listener {
    struct pg_listener *next;
    char *conninfo;
    char schema[STORE_PG_SCHEMA_MAX + 1];
    int refs;
    pthread_mutex_t mu; /* db, wakes, tried_ms */
    PGconn *db;
    uint64_t wakes;
    int64_t tried_ms;
};

static pthread_mutex_t listeners_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pg_listener *listeners;

struct pg_listener *store_pg_listener_acquire(const char *conninfo, const char *schema)
{
    pthread_mutex_lock(&listeners_mu);
    struct pg_listener *l = listeners;
    while (l != NULL && (strcmp(l->conninfo, conninfo) != 0 || strcmp(l->schema, schema) != 0)) {
        l = l->next;
    }
    if (l == NULL && (l = calloc(1, sizeof *l)) != NULL) {
        size_t n = strlen(conninfo) + 1;
        if ((l->conninfo = malloc(n)) == NULL) {
            free(l);
            l = NULL;
        } else {
            memcpy(l->conninfo, conninfo, n);
            snprintf(l->schema, sizeof l->schema, "%s", schema);
            pthread_mutex_init(&l->mu, NULL);
            l->next = listeners;
            listeners = l;
        }
    }
    if (l != NULL) {
        l->refs++;
    }
    pthread_mutex_unlock(&listeners_mu);
    return l;
}

void store_pg_listener_release(struct pg_listener *l)
{
    if (l == NULL) {
        return;
    }
    pthread_mutex_lock(&listeners_mu);
    if (--l->refs > 0) {
        pthread_mutex_unlock(&listeners_mu);
        return;
    }
    for (struct pg_listener **p = &listeners; *p != NULL; p = &(*p)->next) {
        if (*p == l) {
            *p = l->next;
            break;
        }
    }
    pthread_mutex_unlock(&listeners_mu);
    if (l->db != NULL) {
        PQfinish(l->db);
    }
    pthread_mutex_destroy(&l->mu);
    free(l->conninfo);
    free(l);
}

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Opens the connection and LISTENs (l->mu held). */
static void listen_open(struct pg_listener *l, int64_t now_ms)
{
    l->tried_ms = now_ms;
    PGconn *db = PQconnectdb(l->conninfo);
    if (db != NULL) {
        PQsetNoticeProcessor(db, quiet, NULL); /* a long channel name is truncated: said once */
    }
    char sql[STORE_PG_SCHEMA_MAX + 32];
    snprintf(sql, sizeof sql, "LISTEN " STORE_PG_CHANNEL_FMT, l->schema);
    PGresult *res = db != NULL && PQstatus(db) == CONNECTION_OK ? PQexec(db, sql) : NULL;
    if (PQresultStatus(res) != PGRES_COMMAND_OK || PQsetnonblocking(db, 1) != 0) {
        PQclear(res);
        PQfinish(db);
        return;
    }
    PQclear(res);
    l->db = db;
    l->wakes++; /* nobody listened until now: whatever committed meanwhile is news */
}

bool store_pg_listener_poll(struct pg_listener *l, uint64_t *wakes)
{
    int64_t now_ms = time_mono_ms();
    pthread_mutex_lock(&l->mu);
    if (l->db != NULL && (PQconsumeInput(l->db) != 1 || PQstatus(l->db) != CONNECTION_OK)) {
        PQfinish(l->db); /* terminated, or the server went away: reconnect below */
        l->db = NULL;
        l->tried_ms = 0;
    }
    if (l->db == NULL && (l->tried_ms == 0 || now_ms - l->tried_ms >= LISTEN_RETRY_MS)) {
        listen_open(l, now_ms);
    }
    for (PGnotify *n; l->db != NULL && (n = PQnotifies(l->db)) != NULL;) {
        l->wakes++;
        PQfreemem(n);
    }
    bool listening = l->db != NULL;
    *wakes = l->wakes;
    pthread_mutex_unlock(&l->mu);
    return listening;
}
