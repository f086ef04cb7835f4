/* SPDX-License-Identifier: MIT */
/* The change log (STORE_CAP_CHANGE_LOG) shared by the dialects with several writers: the rows a
 * transaction queues for its COMMIT's round trip (one per agent, the highest head), and the
 * tailer that reads what every node committed. The drivers write the rows (their COMMIT) and say
 * when there is nothing to read; the rest is here. Internal to src/store/. */
#ifndef ROOST_STORE_CHANGES_H
#define ROOST_STORE_CHANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dynbuf.h"
#include "store/store.h"

struct store_change {
    char tenant_id[STORE_ID_MAX + 1];
    char agent_id[STORE_ID_MAX + 1];
    int64_t head, at_ms;
};

/* The rows of the open transaction; the marks let a rolled-back savepoint drop its own
 * (n = mark). Zeroed at BEGIN; freed with the connection. */
struct store_changes {
    struct store_change *rows;
    size_t n, cap;
    size_t mark;     /* n at the request's SAVEPOINT roost_req */
    size_t ret_mark; /* n at SAVEPOINT roost_retention */
};

/* Queues (tenant, agent, head): rows before the latest savepoint belong to a request that may
 * still commit while this one rolls back, so only this request's own row of the agent is merged
 * (the highest head and time win). ROOST_ENOMEM. */
int store_changes_add(struct store_changes *c, const char *tenant_id, const char *agent_id,
                      int64_t head, int64_t at_ms);
void store_changes_free(struct store_changes *c);
/* Appends "INSERT INTO roost_changes … VALUES (…), …; " for rows[0..n) (nothing when n is 0),
 * each id through the driver's literal quoting, each head the row's, or the SQL expression
 * head_sql when not NULL (a seq the same query allocates). */
typedef void (*store_quote_fn)(struct dynbuf *sb, void *arg, const char *text);
void store_changes_sql(struct dynbuf *sb, const struct store_change *rows, size_t n, int64_t origin,
                       const char *head_sql, store_quote_fn quote, void *arg);

/* The tailer (struct store_ops.tail's work), outside a transaction: re-checks the open gaps (ids
 * passed over while their transaction was still open), then reads what committed above the high
 * mark; ids skipped there become gaps. Rows written by `origin` (this process; 0 = none) are not
 * reported: they were pinged at their commit. */
int store_changes_tail(struct store *st, struct store_tail_pos *pos, int64_t now_ms, int64_t origin,
                       struct store_touches *touches);

#endif
