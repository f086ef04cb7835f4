/* SPDX-License-Identifier: MIT */
/* Inside the PostgreSQL backend: the connection struct shared by the driver (store_pg_conn.c:
 * URL, connection, statement runner, transactions, the commit whose answer was lost, migrations)
 * and the dialect's own primitives and reads (store_pg.c). Internal to src/store/. */
#ifndef ROOST_STORE_PG_INT_H
#define ROOST_STORE_PG_INT_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_changes.h"
#include "store/store_lifecycle.h"
#include "store/store_stmt.h"

/* The schema Roost's tables live in when the URL names none (?schema=NAME). */
#define STORE_PG_SCHEMA_DEFAULT "roost"
#define STORE_PG_SCHEMA_MAX 63 /* NAMEDATALEN - 1 */

/* A prepared statement of this connection: prepared under the name "r<index>" while gen equals
 * the connection's generation (a reconnect bumps it, so each is prepared again). */
struct pg_slot {
    uint64_t gen;
};

struct pg_store {
    struct store base; /* first: struct store * and struct pg_store * convert */
    PGconn *db;
    char *conninfo;                       /* the URL without our own parameters, for libpq */
    char schema[STORE_PG_SCHEMA_MAX + 1]; /* where the tables live (search_path) */
    int lock_timeout_ms;                  /* store_options.busy_timeout_ms */
    uint64_t gen;                         /* connection generation (struct pg_slot) */
    uint64_t begin_gen; /* the generation whose "rb" (BEGIN) and "rt" (txid) are prepared */
    struct store_stmt_cache cache;
    struct pg_slot *slots;
    size_t n_slots;
    bool in_tx;         /* begun, no COMMIT/ROLLBACK yet */
    bool begin_pending; /* begun, but BEGIN not sent yet (the first statement sends it) */
    bool lost;          /* the connection dropped: reopen before the next statement */
    int64_t txid;       /* the open transaction's id (txid_current()), for a lost COMMIT answer */
    /* The change-log rows of this transaction, written in the COMMIT's round trip (see
     * store_pg_commit). */
    struct store_changes changes;
    struct pg_listener *listener; /* this process's LISTEN connection to the database */
    int64_t origin;               /* store_options.origin */
    int64_t affected;             /* rows the last statement changed */
    int64_t returned; /* the first value of the last statement run without a row callback */
    char sqlstate[6]; /* of the last failure ("" when none) */
    char err[512];
};

static inline struct pg_store *store_pg_backend(struct store *st)
{
    return (struct pg_store *)st;
}

extern const struct store_dialect store_pg_dialect;

/* The driver (store_pg_conn.c). */
int store_pg_open(const char *url, const struct store_options *opt, struct store **out);
const char *store_pg_open_error(void);
void store_pg_close(struct store *st);
const char *store_pg_errmsg(struct store *st);
bool store_pg_ping(struct store *st);
int store_pg_migrate(struct store *st);
int store_pg_begin(struct store *st);
int store_pg_commit(struct store *st);
int store_pg_rollback(struct store *st);
int store_pg_savepoint(struct store *st);
int store_pg_savepoint_release(struct store *st);
int store_pg_savepoint_rollback(struct store *st);
int store_pg_run(struct store *st, const struct store_stmt *d, const struct store_param *p,
                 size_t np, struct store_run_opts *o, store_row_fn on_row, void *arg,
                 int64_t *changed);
/* Runs SQL text without parameters or rows (inside the transaction when one is open). */
int store_pg_exec(struct pg_store *b, const char *sql);
/* Queues the change-log row of (tenant, agent, head) for this transaction's COMMIT (one per
 * agent, the highest head); outside a transaction it is written at once. */
int store_pg_change(struct pg_store *b, const char *tenant_id, const char *agent_id, int64_t head,
                    int64_t at_ms);
/* Splits a postgres:// URL into libpq's part and ours (schema=NAME). *conninfo is malloc'd.
 * ROOST_EINVAL with a reason in err. */
int store_pg_url_parse(const char *url, char **conninfo, char schema[STORE_PG_SCHEMA_MAX + 1],
                       char *err, size_t errlen);

/* The NOTIFY channel of a schema's change log ("roost:" + schema; schema names need no quoting
 * inside a quoted identifier: letters, digits and '_'). */
#define STORE_PG_CHANNEL_FMT "\"roost:%s\""

/* The LISTEN connection (store_pg_listen.c), one per database URL and schema in this process,
 * shared by its stores. acquire: NULL when out of memory. */
struct pg_listener *store_pg_listener_acquire(const char *conninfo, const char *schema);
void store_pg_listener_release(struct pg_listener *l);
/* Reads what arrived (never blocks, but (re)connects when needed, at most once a second): true
 * while listening, with *wakes the count of notifications and reconnects so far (a reconnect
 * counts: what committed while nobody listened must be read). */
bool store_pg_listener_poll(struct pg_listener *l, uint64_t *wakes);

/* The change-log tailer (store_pg.c). */
int store_pg_tail(struct store *st, struct store_tail_pos *pos, int64_t now_ms,
                  struct store_touches *touches);

#endif
