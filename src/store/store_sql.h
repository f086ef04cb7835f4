/* SPDX-License-Identifier: MIT */
/* What the SQL of every backend shares: inbox.status values as SQL literals (one place, checked
 * against enum store_status at compile time), the column lists the row decoders expect, and the
 * bounds every LIMIT goes through. Internal to src/store/. */
#ifndef ROOST_STORE_SQL_H
#define ROOST_STORE_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_SQL_STR_(x) #x
#define STORE_SQL_STR(x) STORE_SQL_STR_(x)

/* inbox.status as stored. The migrations' partial indexes (SQLite: WHERE status = 1 …) and
 * generated state columns (MySQL 0007: open_state, ready_priority, lease_expires_at, due_at,
 * ttl_at) use the same numbers, so these never change; the asserts tie them to the enum. */
#define STORE_N_SCHEDULED 0
#define STORE_N_PENDING 1
#define STORE_N_CLAIMED 2
#define STORE_N_COMPLETED 3
#define STORE_N_QUARANTINED 4
#define STORE_N_EXPIRED 5
_Static_assert(STORE_N_SCHEDULED == STORE_SCHEDULED, "inbox.status: scheduled");
_Static_assert(STORE_N_PENDING == STORE_PENDING, "inbox.status: pending");
_Static_assert(STORE_N_CLAIMED == STORE_CLAIMED, "inbox.status: claimed");
_Static_assert(STORE_N_COMPLETED == STORE_COMPLETED, "inbox.status: completed");
_Static_assert(STORE_N_QUARANTINED == STORE_QUARANTINED, "inbox.status: quarantined");
_Static_assert(STORE_N_EXPIRED == STORE_EXPIRED, "inbox.status: expired");

/* The literals to paste into SQL text: "status = " ST_PENDING. */
#define ST_SCHEDULED STORE_SQL_STR(STORE_N_SCHEDULED)
#define ST_PENDING STORE_SQL_STR(STORE_N_PENDING)
#define ST_CLAIMED STORE_SQL_STR(STORE_N_CLAIMED)
#define ST_COMPLETED STORE_SQL_STR(STORE_N_COMPLETED)
#define ST_QUARANTINED STORE_SQL_STR(STORE_N_QUARANTINED)
#define ST_EXPIRED STORE_SQL_STR(STORE_N_EXPIRED)

/* agents.last_seen_at is written at most this often per agent (store.h, claim). */
#define STORE_SEEN_EVERY_MS 60000
#define STORE_SEEN_EVERY_SQL STORE_SQL_STR(STORE_SEEN_EVERY_MS)

/* The column list every event-returning statement selects, in store_*_row_to_event() order. */
#define EVCOLS                                                                                     \
    "event_id, agent_id, seq, status, priority, correlation_id, payload, created_at, "             \
    "available_at, expires_at, lease_token, consumer, claimed_at, claim_expires_at, attempts, "    \
    "timeouts, nacks, last_error, completed_at"

/* The admin agents listing: the agent row and its per-status counts, in agents_list order. Each
 * argument is the dialect's condition on `i` for one status (pending, scheduled, claimed,
 * quarantined), written so that it walks an index of that dialect. */
#define AGENT_STATS_COLS_BY(PENDING, SCHEDULED, CLAIMED, QUARANTINED)                              \
    "a.agent_id, a.next_seq - 1, a.purged_through_seq,"                                            \
    " (SELECT count(*) FROM inbox i WHERE i.tenant_id = a.tenant_id"                               \
    "  AND i.agent_id = a.agent_id AND " PENDING ") AS pending,"                                   \
    " (SELECT count(*) FROM inbox i WHERE i.tenant_id = a.tenant_id"                               \
    "  AND i.agent_id = a.agent_id AND " SCHEDULED "),"                                            \
    " (SELECT count(*) FROM inbox i WHERE i.tenant_id = a.tenant_id"                               \
    "  AND i.agent_id = a.agent_id AND " CLAIMED "),"                                              \
    " (SELECT count(*) FROM inbox i WHERE i.tenant_id = a.tenant_id"                               \
    "  AND i.agent_id = a.agent_id AND " QUARANTINED "),"                                          \
    " (SELECT min(available_at) FROM inbox i WHERE i.tenant_id = a.tenant_id"                      \
    "  AND i.agent_id = a.agent_id AND " PENDING ") AS oldest,"                                    \
    " COALESCE(a.last_seen_at, 0)"

/* By status itself (SQLite's partial indexes). */
#define AGENT_STATS_COLS                                                                           \
    AGENT_STATS_COLS_BY("i.status = " ST_PENDING, "i.status = " ST_SCHEDULED,                      \
                        "i.status = " ST_CLAIMED, "i.status = " ST_QUARANTINED)

/* The columns of a key listing, in store_row_key() order (key_get adds material as column 5). */
#define KEYCOLS "key_id, agent_id, alg, created_at, revoked_at"

/* One result row, whatever the driver: the decoders below read the shared column lists through
 * it, so each list is decoded in one place. A backend builds it (store_sqlite_row,
 * store_mysql_row); column numbers are relative to c0. */
struct store_row {
    int64_t (*i64)(struct store_row *row, int col); /* 0 for SQL NULL */
    /* The column's NUL-terminated text, NULL for SQL NULL; sets `failed` when a value could not
     * be read (out of memory). Valid until the row moves on. */
    const char *(*text)(struct store_row *row, int col);
    void *src; /* the driver's result: sqlite3_stmt *, or struct rows * */
    size_t r;  /* the row index in src (MySQL) */
    int c0;    /* the column the list starts at */
    bool failed;
};

/* Fills ev from EVCOLS. ROOST_ENOMEM (ev left clean). */
int store_row_event(struct store_row *row, struct store_event *ev);
/* Appends an event decoded from EVCOLS to list. ROOST_ENOMEM. */
int store_row_push_event(struct store_row *row, struct store_events *list);
/* Fills k from KEYCOLS; material stays NULL. */
void store_row_key(struct store_row *row, struct store_key *k);
/* Fills a from AGENT_STATS_COLS. */
void store_row_agent_stats(struct store_row *row, struct store_agent_stats *a);
/* Duplicates a text column onto the heap into *out (NULL for SQL NULL). ROOST_ENOMEM. */
int store_row_dup(struct store_row *row, int col, char **out);

/* The largest LIMIT any store statement runs with; callers bound theirs far below. */
#define STORE_LIMIT_MAX 100000

/* A caller's limit as a statement LIMIT. */
static inline int64_t store_limit(size_t n)
{
    return n > STORE_LIMIT_MAX ? STORE_LIMIT_MAX : (int64_t)n;
}

/* The LIMIT of a page of `n`: one row more, to learn whether more follow. */
static inline int64_t store_limit_page(size_t n)
{
    return store_limit(n) + 1;
}

/* A stored status that is not one of ours reads as quarantined: nothing claims or deletes it. */
static inline enum store_status store_status_of(int64_t v)
{
    return v >= STORE_SCHEDULED && v <= STORE_EXPIRED ? (enum store_status)v : STORE_QUARANTINED;
}

#endif
