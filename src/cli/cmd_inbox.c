/* SPDX-License-Identifier: MIT */
/* `roost inbox read`: the read-only cursor sync of one agent's inbox; `roost inbox peek`: the
 * event the next claim would take, claimed by nobody. */
#include <stdio.h>

#include "cli/cli.h"

#include "common/banned.h"

int cmd_inbox_read(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    struct roost_events *evs = NULL;
    int rc = roost_inbox_read(c, cli_str(a, "agent"), cli_num(a, "after", 0),
                              (int)cli_num(a, "limit", 0), (int)cli_num(a, "wait", 0), &evs);
    if (rc != ROOST_OK) {
        r = cli_fail(a, c, rc, "inbox read");
    } else if (cli_flag(a, "ndjson")) {
        r = cli_print_ndjson(evs);
        fprintf(stderr, "next_cursor=%lld has_more=%s\n", (long long)evs->next_cursor,
                evs->has_more ? "true" : "false");
    } else {
        static const char *const columns[] = {
            "sequence_number:SEQ", "event_id", "status", "priority", "created_at", "payload", NULL};
        r = cli_print_list(a, c, "events", columns);
    }
    roost_events_free(evs);
    roost_client_free(c);
    return r;
}

int cmd_inbox_peek(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    struct roost_events *evs = NULL;
    int rc = roost_inbox_peek(c, cli_str(a, "agent"), &evs);
    r = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, "inbox peek");
    roost_events_free(evs);
    roost_client_free(c);
    return r;
}
