/* SPDX-License-Identifier: MIT */
/* `roost state`: the full state sync of one agent. */
#include "cli/cli.h"

#include "common/banned.h"

int cmd_state(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *state = NULL;
    int rc = roost_state_get(c, cli_str(a, "agent"), &state, NULL);
    r = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, "state");
    roost_free(state);
    roost_client_free(c);
    return r;
}
