/* SPDX-License-Identifier: MIT */
/* `roost release` (NACK one claimed event) and `roost release-all` (graceful shutdown of one
 * consumer). */
#include <stdio.h>

#include "cli/cli.h"

#include "common/banned.h"

int cmd_release(struct cli_args *a)
{
    enum roost_release_reason reason = ROOST_RELEASE_DEFAULT;
    if (cli_given(a, "reason") &&
        roost_release_reason_parse(cli_str(a, "reason"), &reason) != ROOST_OK) {
        return cli_usage_error(a, "--reason: '%s' is not a reason", cli_str(a, "reason"));
    }
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    const char *event_id = a->argv[0];
    int rc = roost_event_release(c, cli_str(a, "agent"), event_id, a->argv[1],
                                 cli_num(a, "delay", 0), reason, cli_str(a, "error"));
    char what[256];
    snprintf(what, sizeof what, "release %s", event_id);
    r = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, what);
    roost_client_free(c);
    return r;
}

int cmd_release_all(struct cli_args *a)
{
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    int64_t released = 0;
    int rc = roost_inbox_release_all(c, cli_str(a, "agent"), cli_str(a, "consumer"), &released);
    r = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, "release-all");
    roost_client_free(c);
    return r;
}
