/* SPDX-License-Identifier: MIT */
/* Inbox and cursor reads (store_ops.h), written once: each operation with its statements in
 * every dialect beside it. */
#include <string.h>

#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

/* The first row of a one-row read: moved into *out (the caller cleans it up). */
struct one_event {
    struct store_event *out;
    bool found;
};

static int on_one_event(void *arg, struct store_row *row)
{
    struct one_event *one = arg;
    if (one->found) {
        return ROOST_OK;
    }
    int rc = store_row_event(row, one->out);
    one->found = rc == ROOST_OK;
    return rc;
}

/* The claim's candidate read (claim_select) without its lock: the same rows in the same order,
 * the first one only. */
STORE_STMT(INBOX_PEEK,
           "SELECT " EVCOLS
           " FROM inbox WHERE tenant_id = ? AND agent_id = ? AND status = " ST_PENDING
           " AND (expires_at IS NULL OR expires_at > ?) ORDER BY priority DESC, seq ASC LIMIT 1",
           "SELECT " EVCOLS " FROM inbox FORCE INDEX (inbox_open) WHERE open_state = " ST_PENDING
           " AND tenant_id = ? AND agent_id = ? AND (expires_at IS NULL OR expires_at > ?)"
           " ORDER BY ready_priority DESC, seq ASC LIMIT 1",
           "SELECT " EVCOLS
           " FROM inbox WHERE tenant_id = ? AND agent_id = ? AND status = " ST_PENDING
           " AND (expires_at IS NULL OR expires_at > ?) ORDER BY priority DESC, seq ASC LIMIT 1");

int store_inbox_peek(struct store *st, const char *tenant_id, const char *agent_id, int64_t now_ms,
                     struct store_event *out, bool *found)
{
    struct one_event one = {.out = out};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id), ARG_I(now_ms)};
    memset(out, 0, sizeof *out);
    int rc = store_run(st, INBOX_PEEK, p, on_one_event, &one, NULL);
    if (rc != ROOST_OK && one.found) {
        store_event_cleanup(out);
        memset(out, 0, sizeof *out);
        one.found = false;
    }
    *found = one.found;
    return rc;
}

/* The state document is the same for every cursor in [state_cursor, head]; the lowest of those a
 * reader can continue from without 410 is max(state_cursor, purged_through_seq). */
STORE_STMT(STATE_GET,
           "SELECT state, max(state_cursor, purged_through_seq) FROM agents"
           " WHERE tenant_id = ? AND agent_id = ?",
           "SELECT state, GREATEST(state_cursor, purged_through_seq) FROM agents"
           " WHERE tenant_id = ? AND agent_id = ?",
           "SELECT state, GREATEST(state_cursor, purged_through_seq) FROM agents"
           " WHERE tenant_id = ? AND agent_id = ?");

struct state_row {
    char **state;
    int64_t *cursor;
};

static int on_state(void *arg, struct store_row *row)
{
    struct state_row *sr = arg;
    *sr->cursor = row->i64(row, 1);
    return store_row_dup(row, 0, sr->state);
}

int store_inbox_state_get(struct store *st, const char *tenant_id, const char *agent_id,
                          char **state, int64_t *cursor)
{
    struct state_row sr = {.state = state, .cursor = cursor};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id)};
    *state = NULL;
    *cursor = 0;
    int rc = store_run(st, STATE_GET, p, on_state, &sr, NULL);
    if (rc == ROOST_OK && *state == NULL && (*state = strdup("{}")) == NULL) {
        rc = ROOST_ENOMEM;
    }
    return rc;
}
