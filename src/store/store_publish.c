/* SPDX-License-Identifier: MIT */
/* Publish (store_ops.h): the lifecycle's publish (store_lifecycle.c), or, on a dialect where a
 * publish of several rows is cheaper as a batch of one (STORE_CAP_PUBLISH_ROWS_AS_BATCH), the
 * batch path for a fan-out or several items. */
#include "store/store_lifecycle.h"
#include "store/store_ops.h"

#include "common/banned.h"

/* A one-row publish stays on the plain path, which costs fewer allocations. The batch path falls
 * back to the plain one for an idempotency key or a state patch. */
int store_publish_op(struct store *st, const struct store_publish_req *req,
                     struct store_published *out, struct store_touches *touches)
{
    size_t rows = 0;
    for (size_t i = 0; i < req->n_items && rows < 2; i++) {
        rows += req->items[i].n_recipients;
    }
    if (rows < 2 || !store_dialect_has(st->dialect, STORE_CAP_PUBLISH_ROWS_AS_BATCH)) {
        return store_lifecycle_publish(st, req, out, touches);
    }
    struct store_publish_entry e = {.req = req, .out = out, .touches = touches};
    int rc = store_lifecycle_publish_batch(st, &e, 1);
    return rc != ROOST_OK ? rc : e.rc;
}
