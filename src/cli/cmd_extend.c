/* SPDX-License-Identifier: MIT */
/* `roost extend`: heartbeats a lease held by a long job. */
#include <stdio.h>

#include "cli/cli.h"

#include "common/banned.h"

int cmd_extend(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    int rc = roost_event_extend(c, cli_str(a, "agent"), a->argv[0], a->argv[1],
                                (int)cli_num(a, "lease", 0), NULL);
    char what[256];
    snprintf(what, sizeof what, "extend %s", a->argv[0]);
    r = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, what);
    roost_client_free(c);
    return r;
}
