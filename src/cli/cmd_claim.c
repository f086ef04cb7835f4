/* SPDX-License-Identifier: MIT */
/* `roost claim`: takes events of an agent's inbox under a visibility lease. */
#include <stdio.h>

#include "cli/cli.h"

#include "common/banned.h"

const char cmd_claim_usage[] =
    "Usage: roost claim --agent A [--limit N] [--lease DUR] [--consumer C] [--wait DUR]\n"
    "                   [--ndjson]\n"
    "\n"
    "Claims up to N pending events (highest priority first, then oldest) and prints the\n"
    "server's answer: {\"events\":[{...,\"lease_token\",\"claim_expires_at\",\"attempts\"}]}.\n"
    "Finish each with 'roost ack', give it back with 'roost release', or keep it longer with\n"
    "'roost extend' -- presenting its lease_token. An empty list is a success.\n"
    "\n"
    "  -a, --agent A     the agent\n"
    "  --limit N         1..1000 events (default: the server's, 10)\n"
    "  --lease DUR       lease length (default: the server's lease.default_s, 60s)\n"
    "  --consumer C      names this process ([A-Za-z0-9._:-]{1,128}) for 'roost release-all'\n"
    "  --wait DUR        wait up to DUR for an event when none is available\n"
    "  --ndjson          print one event per line instead\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_LIMIT = CLI_OPT_FIRST_LOCAL, OPT_LEASE, OPT_CONSUMER, OPT_WAIT, OPT_NDJSON };

int cmd_claim(int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"lease", required_argument, NULL, OPT_LEASE},
        {"consumer", required_argument, NULL, OPT_CONSUMER},
        {"wait", required_argument, NULL, OPT_WAIT},
        {"ndjson", no_argument, NULL, OPT_NDJSON},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "claim", cmd_claim_usage);
    const char *agent = NULL, *consumer = NULL;
    int64_t limit = 0, lease_s = 0, wait_s = 0;
    int ndjson = 0, opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ha:", opts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            agent = optarg;
            break;
        case OPT_LIMIT:
            if (cli_parse_int(optarg, 1, 1000000, &limit) != 0) {
                return cli_usage_error(&co, "--limit: expected a count >= 1, got '%s'", optarg);
            }
            break;
        case OPT_LEASE:
            if (cli_parse_duration(optarg, &lease_s) != 0 || lease_s < 1 || lease_s > INT32_MAX) {
                return cli_usage_error(&co, "--lease: expected a duration >= 1s, got '%s'", optarg);
            }
            break;
        case OPT_CONSUMER:
            consumer = optarg;
            break;
        case OPT_WAIT:
            if (cli_parse_duration(optarg, &wait_s) != 0 || wait_s > 3600) {
                return cli_usage_error(&co, "--wait: expected a duration up to 1h, got '%s'",
                                       optarg);
            }
            break;
        case OPT_NDJSON:
            ndjson = 1;
            break;
        default:
            if ((r = cli_handle_opt(&co, opt, optarg, argv)) >= 0) {
                return r;
            }
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
    struct roost_events *evs = NULL;
    int rc = roost_inbox_claim(c, agent, (int)limit, (int)lease_s, (int)wait_s, consumer, &evs);
    if (rc != ROOST_OK) {
        r = cli_fail(&co, c, rc, "claim");
    } else {
        r = ndjson ? cli_print_ndjson(evs) : cli_print_last_body(&co, c);
    }
    roost_events_free(evs);
    roost_client_free(c);
    return r;
}
