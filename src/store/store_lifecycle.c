/* SPDX-License-Identifier: MIT */
/* The event lifecycle (DESIGN §4.3–4.5) once for every backend: each operation decides here and
 * runs its statements through the backend's struct store_dialect (store_lifecycle.h). */
#include "store/store_lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "store/store_sql.h"

#include "common/banned.h"

static const struct store_dialect *dialect(struct store *st)
{
    return st->dialect;
}

int store_op_done(struct store *st, int rc)
{
    if (dialect(st)->done != NULL) {
        dialect(st)->done(st);
    }
    return rc;
}

int store_op_fail(struct store *st, int rc, const char *msg)
{
    dialect(st)->set_error(st, msg);
    return rc;
}

struct store_lease_ref *store_lease_refs_push(struct store_lease_refs *list)
{
    if (list->len == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 16;
        if (cap > SIZE_MAX / sizeof *list->items) {
            return NULL;
        }
        struct store_lease_ref *grown = realloc(list->items, cap * sizeof *grown);
        if (grown == NULL) {
            return NULL;
        }
        list->items = grown;
        list->cap = cap;
    }
    struct store_lease_ref *r = &list->items[list->len++];
    memset(r, 0, sizeof *r);
    return r;
}

bool store_lease_token_eq(const struct store_lease_row *row, const char *lease_token)
{
    return lease_token != NULL && row->lease_token[0] != '\0' &&
           strcmp(row->lease_token, lease_token) == 0;
}

bool store_lease_exhausted(int attempts, int max_attempts)
{
    return max_attempts > 0 && attempts >= max_attempts;
}

bool store_cursor_gone(int64_t after_cursor, int64_t purged_through_seq)
{
    return after_cursor < purged_through_seq;
}

void store_event_claimed(struct store_event *ev, const char *token, const char *consumer,
                         int64_t now_ms, int64_t claim_expires_at_ms)
{
    ev->status = STORE_CLAIMED;
    snprintf(ev->lease_token, sizeof ev->lease_token, "%s", token);
    snprintf(ev->consumer, sizeof ev->consumer, "%s", consumer);
    ev->claimed_at_ms = now_ms;
    ev->claim_expires_at_ms = claim_expires_at_ms;
    ev->attempts++;
}

/* tenant, agent: next_seq holds the next seq to assign, so the head is next_seq - 1. */
STORE_STMT_SAME(AGENT_HEAD, "SELECT next_seq - 1, purged_through_seq FROM agents"
                            " WHERE tenant_id = ? AND agent_id = ?");

struct head_row {
    int64_t *head, *purged;
};

static int on_head(void *arg, struct store_row *row)
{
    struct head_row *h = arg;
    *h->head = row->i64(row, 0);
    *h->purged = row->i64(row, 1);
    return ROOST_OK;
}

int store_agent_head(struct store *st, const char *tenant_id, const char *agent_id, int64_t *head,
                     int64_t *purged)
{
    struct head_row h = {.head = head, .purged = purged};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(agent_id)};
    *head = *purged = 0;
    return store_run(st, AGENT_HEAD, p, on_head, &h, NULL);
}

/* One writer process (no change log): the commit's touches are all anyone needs. */
int store_changed(struct store *st, const char *tenant_id, const char *agent_id, int64_t head,
                  int64_t now_ms, struct store_touches *touches)
{
    const struct store_dialect *d = dialect(st);
    int rc = ROOST_OK;
    if (store_dialect_has(d, STORE_CAP_CHANGE_LOG)) {
        rc = d->change_log(st, tenant_id, agent_id, head, now_ms);
    }
    return rc == ROOST_OK && touches != NULL ? store_touches_add(touches, tenant_id, agent_id, head)
                                             : rc;
}

int store_touch(struct store *st, const char *tenant_id, const char *agent_id, int64_t now_ms,
                struct store_touches *touches)
{
    int64_t head, purged;
    if (touches == NULL && !store_dialect_has(dialect(st), STORE_CAP_CHANGE_LOG)) {
        return ROOST_OK;
    }
    int rc = store_agent_head(st, tenant_id, agent_id, &head, &purged);
    return rc != ROOST_OK ? rc : store_changed(st, tenant_id, agent_id, head, now_ms, touches);
}

int store_lifecycle_head(struct store *st, const char *tenant_id, const char *agent_id,
                         int64_t *head)
{
    int64_t purged;
    return store_op_done(st, store_agent_head(st, tenant_id, agent_id, head, &purged));
}
