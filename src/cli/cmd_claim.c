/* SPDX-License-Identifier: MIT */
/* `roost claim`: takes events of an agent's inbox under a visibility lease. */
#include "cli/cli.h"

#include "common/banned.h"

int cmd_claim(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    struct roost_events *evs = NULL;
    int rc = roost_inbox_claim(c, cli_str(a, "agent"), (int)cli_num(a, "limit", 0),
                               (int)cli_num(a, "lease", 0), (int)cli_num(a, "wait", 0),
                               cli_str(a, "consumer"), &evs);
    if (rc != ROOST_OK) {
        r = cli_fail(a, c, rc, "claim");
    } else {
        r = cli_flag(a, "ndjson") ? cli_print_ndjson(evs) : cli_print_last_body(a, c);
    }
    roost_events_free(evs);
    roost_client_free(c);
    return r;
}
