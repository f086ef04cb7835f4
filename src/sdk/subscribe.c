/* SPDX-License-Identifier: MIT */
/* roost_subscribe: the SSE wake-up stream of one agent as a blocking call with a callback per
 * ping, on the client's own connection (one read of sse_reader.c). */
#include "sdk/sdk.h"
#include "sdk/sse_reader.h"

#include "common/banned.h"

int roost_subscribe(struct roost_client *c, const char *agent_id, roost_ping_fn on_ping, void *ctx)
{
    if (c == NULL || on_ping == NULL) {
        return ROOST_EINVAL;
    }
    struct sdk_sse_reader r;
    sdk_sse_reader_init(&r, on_ping, NULL, ctx);
    int rc = sdk_sse_reader_read(&r, c, agent_id);
    sdk_sse_reader_cleanup(&r);
    return rc;
}
