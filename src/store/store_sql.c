/* SPDX-License-Identifier: MIT */
/* Decoding the column lists of store_sql.h, once for every backend. */
#include "store/store_sql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

static int64_t col_i64(struct store_row *row, int col)
{
    return row->i64(row, row->c0 + col);
}

static const char *col_text(struct store_row *row, int col)
{
    return row->text(row, row->c0 + col);
}

/* Copies a text column into a fixed array, truncating; SQL NULL gives "". */
static void col_copy(struct store_row *row, int col, char *dst, size_t cap)
{
    const char *t = col_text(row, col);
    snprintf(dst, cap, "%s", t != NULL ? t : "");
}

int store_row_dup(struct store_row *row, int col, char **out)
{
    const char *t = col_text(row, col);
    *out = NULL;
    if (row->failed) {
        return ROOST_ENOMEM;
    }
    if (t == NULL) {
        return ROOST_OK;
    }
    /* malloc + memcpy, not strdup: ASan's strdup interceptor (GCC 12) copies into a failed
     * allocation instead of returning NULL (the asan run of test_response_budget, memory capped,
     * hit it where payloads are copied). */
    size_t n = strlen(t) + 1;
    if ((*out = malloc(n)) == NULL) {
        return ROOST_ENOMEM;
    }
    memcpy(*out, t, n);
    return ROOST_OK;
}

int store_row_event(struct store_row *row, struct store_event *ev)
{
    col_copy(row, 0, ev->event_id, sizeof ev->event_id);
    col_copy(row, 1, ev->agent_id, sizeof ev->agent_id);
    ev->seq = col_i64(row, 2);
    ev->status = store_status_of(col_i64(row, 3));
    ev->priority = (int)col_i64(row, 4);
    ev->created_at_ms = col_i64(row, 7);
    ev->available_at_ms = col_i64(row, 8);
    ev->expires_at_ms = col_i64(row, 9);
    col_copy(row, 10, ev->lease_token, sizeof ev->lease_token);
    col_copy(row, 11, ev->consumer, sizeof ev->consumer);
    ev->claimed_at_ms = col_i64(row, 12);
    ev->claim_expires_at_ms = col_i64(row, 13);
    ev->attempts = (int)col_i64(row, 14);
    ev->timeouts = (int)col_i64(row, 15);
    ev->nacks = (int)col_i64(row, 16);
    ev->completed_at_ms = col_i64(row, 18);
    if (store_row_dup(row, 5, &ev->correlation_id) != ROOST_OK ||
        store_row_dup(row, 6, &ev->payload) != ROOST_OK ||
        store_row_dup(row, 17, &ev->last_error) != ROOST_OK) {
        store_event_cleanup(ev);
        return ROOST_ENOMEM;
    }
    return ROOST_OK;
}

int store_row_push_event(struct store_row *row, struct store_events *list)
{
    struct store_event *ev = store_events_push(list);
    if (ev == NULL) {
        return ROOST_ENOMEM;
    }
    if (store_row_event(row, ev) != ROOST_OK) {
        list->len--;
        return ROOST_ENOMEM;
    }
    return ROOST_OK;
}

void store_row_key(struct store_row *row, struct store_key *k)
{
    col_copy(row, 0, k->key_id, sizeof k->key_id);
    col_copy(row, 1, k->agent_id, sizeof k->agent_id);
    col_copy(row, 2, k->alg, sizeof k->alg);
    k->created_at_ms = col_i64(row, 3);
    k->revoked_at_ms = col_i64(row, 4);
    k->material = NULL;
}

void store_row_agent_stats(struct store_row *row, struct store_agent_stats *a)
{
    memset(a, 0, sizeof *a);
    col_copy(row, 0, a->agent_id, sizeof a->agent_id);
    a->head = col_i64(row, 1);
    a->purged_through_seq = col_i64(row, 2);
    a->pending = col_i64(row, 3);
    a->scheduled = col_i64(row, 4);
    a->claimed = col_i64(row, 5);
    a->quarantined = col_i64(row, 6);
    a->oldest_pending_ms = col_i64(row, 7);
    a->last_seen_ms = col_i64(row, 8);
}
