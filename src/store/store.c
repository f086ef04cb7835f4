/* SPDX-License-Identifier: MIT */
/* Opening a store by URL scheme, and the small shared helpers of store.h (event lists, touch sets,
 * status names) that every backend uses. */
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

#include "store/store_mysql.h"
#include "store/store_sqlite.h"

static const struct store_ops *const backends[] = {
    &store_sqlite_ops,
    &store_mysql_ops,
};

const char *store_status_name(enum store_status s)
{
    switch (s) {
    case STORE_SCHEDULED:
        return "scheduled";
    case STORE_PENDING:
        return "pending";
    case STORE_CLAIMED:
        return "claimed";
    case STORE_COMPLETED:
        return "completed";
    case STORE_QUARANTINED:
        return "quarantined";
    case STORE_EXPIRED:
        return "expired";
    }
    return "unknown";
}

void store_event_cleanup(struct store_event *ev)
{
    if (ev == NULL) {
        return;
    }
    free(ev->correlation_id);
    free(ev->payload);
    free(ev->last_error);
    ev->correlation_id = NULL;
    ev->payload = NULL;
    ev->last_error = NULL;
}

void store_events_cleanup(struct store_events *list)
{
    if (list == NULL) {
        return;
    }
    for (size_t i = 0; i < list->len; i++) {
        store_event_cleanup(&list->items[i]);
    }
    free(list->items);
    list->items = NULL;
    list->len = 0;
    list->cap = 0;
}

struct store_event *store_events_push(struct store_events *list)
{
    if (list->len == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 16;
        if (cap > SIZE_MAX / sizeof *list->items) {
            return NULL;
        }
        struct store_event *items = realloc(list->items, cap * sizeof *items);
        if (items == NULL) {
            return NULL;
        }
        list->items = items;
        list->cap = cap;
    }
    struct store_event *ev = &list->items[list->len++];
    memset(ev, 0, sizeof *ev);
    return ev;
}

int store_touches_add(struct store_touches *t, const char *tenant_id, const char *agent_id,
                      int64_t head)
{
    /* Linear search: a transaction touches few agents, and this keeps the set dependency-free. */
    for (size_t i = 0; i < t->len; i++) {
        struct store_touch *e = &t->items[i];
        if (strcmp(e->agent_id, agent_id) == 0 && strcmp(e->tenant_id, tenant_id) == 0) {
            if (head > e->head) {
                e->head = head;
            }
            return ROOST_OK;
        }
    }
    if (strlen(tenant_id) > STORE_ID_MAX || strlen(agent_id) > STORE_ID_MAX) {
        return ROOST_EINVAL;
    }
    if (t->len == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof *t->items) {
            return ROOST_ENOMEM;
        }
        struct store_touch *items = realloc(t->items, cap * sizeof *items);
        if (items == NULL) {
            return ROOST_ENOMEM;
        }
        t->items = items;
        t->cap = cap;
    }
    struct store_touch *e = &t->items[t->len++];
    memcpy(e->tenant_id, tenant_id, strlen(tenant_id) + 1);
    memcpy(e->agent_id, agent_id, strlen(agent_id) + 1);
    e->head = head;
    return ROOST_OK;
}

void store_tail_pos_cleanup(struct store_tail_pos *pos)
{
    if (pos == NULL) {
        return;
    }
    free(pos->gaps);
    memset(pos, 0, sizeof *pos);
}

void store_touches_cleanup(struct store_touches *t)
{
    if (t == NULL) {
        return;
    }
    free(t->items);
    t->items = NULL;
    t->len = 0;
    t->cap = 0;
}

int store_open(const char *url, const struct store_options *opt, struct store **out,
               const char **errmsg)
{
    static const struct store_options defaults = {.busy_timeout_ms = 5000,
                                                  .synchronous_full = true};
    *out = NULL;
    if (errmsg != NULL) {
        *errmsg = NULL;
    }
    if (url == NULL) {
        if (errmsg != NULL) {
            *errmsg = "no store URL";
        }
        return ROOST_EINVAL;
    }
    const char *sep = strstr(url, "://");
    if (sep == NULL) {
        if (errmsg != NULL) {
            *errmsg = "the store URL must look like scheme://...";
        }
        return ROOST_EINVAL;
    }
    size_t scheme_len = (size_t)(sep - url);
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        const struct store_ops *ops = backends[i];
        if (strlen(ops->scheme) == scheme_len && memcmp(ops->scheme, url, scheme_len) == 0) {
            int rc = ops->open(url, opt != NULL ? opt : &defaults, out);
            if (rc != ROOST_OK && errmsg != NULL) {
                *errmsg = ops == &store_sqlite_ops  ? store_sqlite_open_error()
                          : ops == &store_mysql_ops ? store_mysql_open_error()
                                                    : "the store could not be opened";
            }
            return rc;
        }
    }
    if (errmsg != NULL) {
        *errmsg = "unknown store URL scheme (expected sqlite:// or mysql://)";
    }
    return ROOST_EINVAL;
}

void store_close(struct store *st)
{
    if (st != NULL) {
        st->ops->close(st);
    }
}
