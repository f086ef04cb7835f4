/* SPDX-License-Identifier: MIT */
/* `roost extend`: heartbeats a lease held by a long job. */
#include <stdio.h>

#include "cli/cli.h"

#include "common/banned.h"

const char cmd_extend_usage[] =
    "Usage: roost extend --agent A EVENT_ID LEASE_TOKEN --lease DUR\n"
    "\n"
    "Moves the lease's end to now + DUR and prints {\"event_id\",\"claim_expires_at\"}.\n"
    "A lost lease fails with lease_mismatch, a lease past lease.max_total_s with\n"
    "lease_cap_reached (exit 3).\n"
    "\n"
    "  -a, --agent A     the agent\n"
    "  --lease DUR       new lease length from now (30, 90s, 5m, 1h)\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_LEASE = CLI_OPT_FIRST_LOCAL };

int cmd_extend(int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        {"lease", required_argument, NULL, OPT_LEASE},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "extend", cmd_extend_usage);
    const char *agent = NULL;
    int64_t lease_s = 0;
    int opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ha:", opts, NULL)) != -1) {
        if (opt == 'a') {
            agent = optarg;
        } else if (opt == OPT_LEASE) {
            if (cli_parse_duration(optarg, &lease_s) != 0 || lease_s < 1 || lease_s > INT32_MAX) {
                return cli_usage_error(&co, "--lease: expected a duration >= 1s, got '%s'", optarg);
            }
        } else if ((r = cli_handle_opt(&co, opt, optarg, argv)) >= 0) {
            return r;
        }
    }
    if (agent == NULL || lease_s == 0) {
        return cli_usage_error(&co, "--agent and --lease are required");
    }
    if (argc - optind != 2) {
        return cli_usage_error(&co, "expected EVENT_ID LEASE_TOKEN");
    }
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        return r;
    }
    int rc = roost_event_extend(c, agent, argv[optind], argv[optind + 1], (int)lease_s, NULL);
    char what[256];
    snprintf(what, sizeof what, "extend %s", argv[optind]);
    r = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, what);
    roost_client_free(c);
    return r;
}
