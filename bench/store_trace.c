/* SPDX-License-Identifier: MIT */
/* store_trace.so: an LD_PRELOAD shim that writes every SQL statement a process runs to the file
 * named by ROOST_STORE_TRACE, one line each, so bench/store_counts.sh can count roostd's
 * statements and COMMITs per operation without any change to roostd (any build, old or new):
 *
 *   S <tid> <sql>   SQLite: sqlite3_trace_v2(SQLITE_TRACE_STMT) on every connection opened
 *                   with sqlite3_open_v2, so each statement run is one line (a trigger's
 *                   sub-statements come as "-- TRIGGER name" lines and are not statements)
 *   M <tid> <sql>   MariaDB/MySQL client: each mysql_real_query / mysql_query (a
 *                   multi-statement text is one line, one round trip) and each
 *                   mysql_stmt_execute of a prepared statement (its text from mysql_stmt_prepare)
 *   P <tid> <sql>   libpq: each PQexec / PQsendQuery (a multi-statement text is one line, one
 *                   round trip) and each PQexecPrepared (its text from PQprepare; preparing is
 *                   not counted, as on MariaDB); in pipeline mode the statements queued by
 *                   PQsendQueryParams / PQsendQueryPrepared up to a PQpipelineSync are one line
 *                   (one round trip), joined by "; " (PQsendPrepare records a text, as PQprepare)
 *
 * <tid> is the calling thread (each roostd worker thread owns one connection). Newlines and tabs
 * in the SQL become spaces and a line is cut at 1,000 bytes. Lines go out with one write(2) to an
 * O_APPEND file, so another process may append marker lines to the same file between requests. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <mysql.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int trace_fd = -2;
static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;

static int trace_out(void)
{
    if (trace_fd == -2) {
        const char *path = getenv("ROOST_STORE_TRACE");
        trace_fd = path != NULL && path[0] != '\0'
                       ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)
                       : -1;
    }
    return trace_fd;
}

static void trace_line(char kind, const char *sql, size_t len)
{
    char line[1100];
    pthread_mutex_lock(&trace_mu);
    int fd = trace_out();
    pthread_mutex_unlock(&trace_mu);
    if (fd < 0 || sql == NULL) {
        return;
    }
    int n = snprintf(line, sizeof line, "%c\t%ld\t", kind, (long)syscall(SYS_gettid));
    if (n < 0) {
        return;
    }
    size_t at = (size_t)n;
    for (size_t i = 0; i < len && sql[i] != '\0' && at < 1000 + (size_t)n; i++) {
        char c = sql[i];
        line[at++] = (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    }
    line[at++] = '\n';
    ssize_t w = write(fd, line, at);
    (void)w;
}

/* ---- SQLite ---- */

static int sqlite_traced(unsigned type, void *ctx, void *p, void *x)
{
    (void)ctx;
    (void)p;
    if (type == SQLITE_TRACE_STMT && x != NULL) {
        const char *sql = x;
        trace_line('S', sql, strlen(sql));
    }
    return 0;
}

int sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs)
{
    int (*real)(const char *, sqlite3 **, int, const char *) =
        (int (*)(const char *, sqlite3 **, int, const char *))dlsym(RTLD_NEXT, "sqlite3_open_v2");
    if (real == NULL) {
        return SQLITE_ERROR;
    }
    int rc = real(filename, db, flags, vfs);
    if (rc == SQLITE_OK && db != NULL && *db != NULL) {
        sqlite3_trace_v2(*db, SQLITE_TRACE_STMT, sqlite_traced, NULL);
    }
    return rc;
}

/* ---- MariaDB Connector/C ---- */

#define MAX_STMTS 4096
static struct {
    MYSQL_STMT *stmt;
    char *sql;
} stmts[MAX_STMTS];
static pthread_mutex_t stmts_mu = PTHREAD_MUTEX_INITIALIZER;
/* Set while mysql_query runs: it may call mysql_real_query through the PLT, one round trip. */
static _Thread_local int in_query;

int mysql_real_query(MYSQL *m, const char *q, unsigned long len)
{
    int (*real)(MYSQL *, const char *, unsigned long) =
        (int (*)(MYSQL *, const char *, unsigned long))dlsym(RTLD_NEXT, "mysql_real_query");
    if (!in_query) {
        trace_line('M', q, len);
    }
    return real != NULL ? real(m, q, len) : 1;
}

int mysql_query(MYSQL *m, const char *q)
{
    int (*real)(MYSQL *, const char *) =
        (int (*)(MYSQL *, const char *))dlsym(RTLD_NEXT, "mysql_query");
    trace_line('M', q, q != NULL ? strlen(q) : 0);
    in_query = 1;
    int rc = real != NULL ? real(m, q) : 1;
    in_query = 0;
    return rc;
}

int mysql_stmt_prepare(MYSQL_STMT *stmt, const char *q, unsigned long len)
{
    int (*real)(MYSQL_STMT *, const char *, unsigned long) =
        (int (*)(MYSQL_STMT *, const char *, unsigned long))dlsym(RTLD_NEXT, "mysql_stmt_prepare");
    pthread_mutex_lock(&stmts_mu);
    int free_slot = -1;
    for (int i = 0; i < MAX_STMTS; i++) {
        if (stmts[i].stmt == stmt || (free_slot < 0 && stmts[i].stmt == NULL)) {
            if (stmts[i].stmt == stmt) {
                free(stmts[i].sql);
                stmts[i].stmt = NULL;
            }
            if (free_slot < 0) {
                free_slot = i;
            }
        }
    }
    if (free_slot >= 0) {
        stmts[free_slot].stmt = stmt;
        stmts[free_slot].sql = strndup(q != NULL ? q : "", len);
    }
    pthread_mutex_unlock(&stmts_mu);
    return real != NULL ? real(stmt, q, len) : 1;
}

int mysql_stmt_execute(MYSQL_STMT *stmt)
{
    int (*real)(MYSQL_STMT *) = (int (*)(MYSQL_STMT *))dlsym(RTLD_NEXT, "mysql_stmt_execute");
    char buf[1001] = "(prepared statement of unknown text)";
    pthread_mutex_lock(&stmts_mu);
    for (int i = 0; i < MAX_STMTS; i++) {
        if (stmts[i].stmt == stmt && stmts[i].sql != NULL) {
            snprintf(buf, sizeof buf, "%s", stmts[i].sql);
            break;
        }
    }
    pthread_mutex_unlock(&stmts_mu);
    trace_line('M', buf, strlen(buf));
    return real != NULL ? real(stmt) : 1;
}

my_bool mysql_stmt_close(MYSQL_STMT *stmt)
{
    my_bool (*real)(MYSQL_STMT *) = (my_bool(*)(MYSQL_STMT *))dlsym(RTLD_NEXT, "mysql_stmt_close");
    pthread_mutex_lock(&stmts_mu);
    for (int i = 0; i < MAX_STMTS; i++) {
        if (stmts[i].stmt == stmt) {
            free(stmts[i].sql);
            stmts[i].stmt = NULL;
            stmts[i].sql = NULL;
        }
    }
    pthread_mutex_unlock(&stmts_mu);
    return real != NULL ? real(stmt) : 1;
}

/* ---- libpq ---- */

/* Set while PQexec or PQexecPrepared runs: it sends through PQsendQuery or PQsendQueryPrepared,
 * already traced as one round trip. */
static _Thread_local int in_pqexec;

static struct {
    const PGconn *conn;
    char *name;
    char *sql;
} pg_stmts[MAX_STMTS];

/* Remembers the text of conn's prepared statement `name`. */
static void pg_remember(const PGconn *conn, const char *name, const char *query)
{
    pthread_mutex_lock(&stmts_mu);
    int slot = -1;
    for (int i = 0; i < MAX_STMTS && slot < 0; i++) {
        if (pg_stmts[i].conn == conn && pg_stmts[i].name != NULL &&
            strcmp(pg_stmts[i].name, name) == 0) {
            slot = i;
        }
    }
    for (int i = 0; i < MAX_STMTS && slot < 0; i++) {
        if (pg_stmts[i].conn == NULL) {
            slot = i;
        }
    }
    if (slot >= 0) {
        free(pg_stmts[slot].name);
        free(pg_stmts[slot].sql);
        pg_stmts[slot].conn = conn;
        pg_stmts[slot].name = strdup(name != NULL ? name : "");
        pg_stmts[slot].sql = strdup(query != NULL ? query : "");
    }
    pthread_mutex_unlock(&stmts_mu);
}

/* The text of conn's prepared statement `name` into buf. */
static void pg_text_of(const PGconn *conn, const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "(prepared statement of unknown text)");
    pthread_mutex_lock(&stmts_mu);
    for (int i = 0; i < MAX_STMTS; i++) {
        if (pg_stmts[i].conn == conn && pg_stmts[i].name != NULL &&
            strcmp(pg_stmts[i].name, name) == 0) {
            snprintf(buf, cap, "%s", pg_stmts[i].sql);
            break;
        }
    }
    pthread_mutex_unlock(&stmts_mu);
}

PGresult *PQprepare(PGconn *conn, const char *name, const char *query, int n, const Oid *types)
{
    PGresult *(*real)(PGconn *, const char *, const char *, int, const Oid *) =
        (PGresult * (*)(PGconn *, const char *, const char *, int, const Oid *))
            dlsym(RTLD_NEXT, "PQprepare");
    pg_remember(conn, name, query);
    return real != NULL ? real(conn, name, query, n, types) : NULL;
}

/* Pipeline mode: the statements queued on this thread since the last PQpipelineSync. */
static _Thread_local char pipe_buf[4000];
static _Thread_local size_t pipe_len;

static void pipe_add(const char *sql)
{
    int n = snprintf(pipe_buf + pipe_len, sizeof pipe_buf - pipe_len, "%s%s",
                     pipe_len > 0 ? "; " : "", sql);
    if (n > 0) {
        pipe_len +=
            (size_t)n < sizeof pipe_buf - pipe_len ? (size_t)n : sizeof pipe_buf - pipe_len - 1;
    }
}

int PQsendPrepare(PGconn *conn, const char *name, const char *query, int n, const Oid *types)
{
    int (*real)(PGconn *, const char *, const char *, int, const Oid *) =
        (int (*)(PGconn *, const char *, const char *, int, const Oid *))dlsym(RTLD_NEXT,
                                                                               "PQsendPrepare");
    pg_remember(conn, name, query);
    return real != NULL ? real(conn, name, query, n, types) : 0;
}

int PQsendQueryParams(PGconn *conn, const char *command, int n, const Oid *types,
                      const char *const *values, const int *lengths, const int *formats,
                      int result_format)
{
    int (*real)(PGconn *, const char *, int, const Oid *, const char *const *, const int *,
                const int *, int) =
        (int (*)(PGconn *, const char *, int, const Oid *, const char *const *, const int *,
                 const int *, int))dlsym(RTLD_NEXT, "PQsendQueryParams");
    if (in_pqexec) {
        /* traced by the caller */
    } else if (PQpipelineStatus(conn) != PQ_PIPELINE_OFF) {
        pipe_add(command != NULL ? command : "");
    } else {
        trace_line('P', command, command != NULL ? strlen(command) : 0);
    }
    return real != NULL ? real(conn, command, n, types, values, lengths, formats, result_format)
                        : 0;
}

int PQsendQueryPrepared(PGconn *conn, const char *name, int n, const char *const *values,
                        const int *lengths, const int *formats, int result_format)
{
    int (*real)(PGconn *, const char *, int, const char *const *, const int *, const int *, int) =
        (int (*)(PGconn *, const char *, int, const char *const *, const int *, const int *,
                 int))dlsym(RTLD_NEXT, "PQsendQueryPrepared");
    char buf[1001];
    pg_text_of(conn, name, buf, sizeof buf);
    if (in_pqexec) {
        /* traced by PQexecPrepared */
    } else if (PQpipelineStatus(conn) != PQ_PIPELINE_OFF) {
        pipe_add(buf);
    } else {
        trace_line('P', buf, strlen(buf));
    }
    return real != NULL ? real(conn, name, n, values, lengths, formats, result_format) : 0;
}

int PQpipelineSync(PGconn *conn)
{
    int (*real)(PGconn *) = (int (*)(PGconn *))dlsym(RTLD_NEXT, "PQpipelineSync");
    if (pipe_len > 0) {
        trace_line('P', pipe_buf, pipe_len);
    }
    pipe_len = 0;
    return real != NULL ? real(conn) : 0;
}

PGresult *PQexecPrepared(PGconn *conn, const char *name, int n, const char *const *values,
                         const int *lengths, const int *formats, int result_format)
{
    PGresult *(*real)(PGconn *, const char *, int, const char *const *, const int *, const int *,
                      int) =
        (PGresult * (*)(PGconn *, const char *, int, const char *const *, const int *, const int *,
                        int)) dlsym(RTLD_NEXT, "PQexecPrepared");
    char buf[1001];
    pg_text_of(conn, name, buf, sizeof buf);
    trace_line('P', buf, strlen(buf));
    in_pqexec = 1;
    PGresult *res =
        real != NULL ? real(conn, name, n, values, lengths, formats, result_format) : NULL;
    in_pqexec = 0;
    return res;
}

PGresult *PQexec(PGconn *conn, const char *query)
{
    PGresult *(*real)(PGconn *, const char *) =
        (PGresult * (*)(PGconn *, const char *)) dlsym(RTLD_NEXT, "PQexec");
    trace_line('P', query, query != NULL ? strlen(query) : 0);
    in_pqexec = 1;
    PGresult *res = real != NULL ? real(conn, query) : NULL;
    in_pqexec = 0;
    return res;
}

int PQsendQuery(PGconn *conn, const char *query)
{
    int (*real)(PGconn *, const char *) =
        (int (*)(PGconn *, const char *))dlsym(RTLD_NEXT, "PQsendQuery");
    if (!in_pqexec) {
        trace_line('P', query, query != NULL ? strlen(query) : 0);
    }
    return real != NULL ? real(conn, query) : 0;
}

void PQfinish(PGconn *conn)
{
    void (*real)(PGconn *) = (void (*)(PGconn *))dlsym(RTLD_NEXT, "PQfinish");
    pthread_mutex_lock(&stmts_mu);
    for (int i = 0; i < MAX_STMTS; i++) {
        if (pg_stmts[i].conn == conn) {
            free(pg_stmts[i].name);
            free(pg_stmts[i].sql);
            pg_stmts[i].conn = NULL;
            pg_stmts[i].name = pg_stmts[i].sql = NULL;
        }
    }
    pthread_mutex_unlock(&stmts_mu);
    if (real != NULL) {
        real(conn);
    }
}
