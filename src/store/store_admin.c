/* SPDX-License-Identifier: MIT */
/* Admin and stats reads (store_ops.h), written once: each operation with its statements in every
 * dialect beside it. */
#include <string.h>

#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

static int on_event(void *arg, struct store_row *row)
{
    return store_row_push_event(row, arg);
}

STORE_STMT(EVENT_GET, "SELECT " EVCOLS " FROM inbox WHERE event_id = ?2 AND tenant_id = ?1",
           "SELECT " EVCOLS " FROM inbox WHERE tenant_id = ? AND event_id = ?");

int store_admin_event_get(struct store *st, const char *tenant_id, const char *event_id,
                          struct store_event *out)
{
    struct store_events one = {0};
    struct store_param p[] = {ARG_T(tenant_id), ARG_T(event_id)};
    int rc = store_run(st, EVENT_GET, p, on_event, &one, NULL);
    if (rc == ROOST_OK && one.len == 0) {
        rc = ROOST_EEVENTNOTFOUND;
    }
    if (rc == ROOST_OK) {
        *out = one.items[0]; /* moves the heap members */
        one.len = 0;
    }
    store_events_cleanup(&one);
    return rc;
}
