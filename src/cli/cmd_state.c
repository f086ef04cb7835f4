/* SPDX-License-Identifier: MIT */
/* `roost state`: the full state sync of one agent. */
#include <stdio.h>

#include "cli/cli.h"

#include "common/banned.h"

const char cmd_state_usage[] =
    "Usage: roost state --agent A\n"
    "\n"
    "Prints the agent's state document and the cursor it is consistent with:\n"
    "{\"state\":{...},\"cursor\":N}. After cursor_expired, continue 'roost inbox read' from\n"
    "--after N.\n"
    "\n"
    "  -a, --agent A     the agent\n"
    "\n" CLI_COMMON_HELP;

int cmd_state(int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "state", cmd_state_usage);
    const char *agent = NULL;
    int opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ha:", opts, NULL)) != -1) {
        if (opt == 'a') {
            agent = optarg;
        } else if ((r = cli_handle_opt(&co, opt, optarg, argv)) >= 0) {
            return r;
        }
    }
    if (optind < argc) {
        return cli_usage_error(&co, "unexpected argument '%s'", argv[optind]);
    }
    if (agent == NULL) {
        return cli_usage_error(&co, "--agent is required");
    }
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *state = NULL;
    int rc = roost_state_get(c, agent, &state, NULL);
    r = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, "state");
    roost_free(state);
    roost_client_free(c);
    return r;
}
