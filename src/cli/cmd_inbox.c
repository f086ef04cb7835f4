/* SPDX-License-Identifier: MIT */
/* `roost inbox read`: the read-only cursor sync of one agent's inbox. */
#include <stdio.h>

#include "cli/cli.h"

#include "common/banned.h"

const char cmd_inbox_read_usage[] =
    "Usage: roost inbox read --agent A [--after N] [--limit L] [--wait DUR] [--ndjson]\n"
    "\n"
    "Reads the agent's events with sequence_number > N in order, changing nothing, and prints\n"
    "the server's answer: {\"events\":[...],\"next_cursor\":N,\"has_more\":bool}. Pass\n"
    "next_cursor as --after next time. A cursor older than retention fails with\n"
    "cursor_expired (exit 3): resync with 'roost state'.\n"
    "\n"
    "  -a, --agent A     the agent\n"
    "  --after N         cursor: the last sequence number already seen (default 0)\n"
    "  --limit L         1..1000 events (default: the server's, 10)\n"
    "  --wait DUR        long-poll up to DUR (server maximum 30s) when nothing is there yet\n"
    "  --ndjson          print one event per line instead, and 'next_cursor=N has_more=B' on\n"
    "                    stderr\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_AFTER = CLI_OPT_FIRST_LOCAL, OPT_LIMIT, OPT_WAIT, OPT_NDJSON };

int cmd_inbox_read(int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        {"after", required_argument, NULL, OPT_AFTER},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"wait", required_argument, NULL, OPT_WAIT},
        {"ndjson", no_argument, NULL, OPT_NDJSON},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "inbox read", cmd_inbox_read_usage);
    const char *agent = NULL;
    int64_t after = 0, limit = 0, wait_s = 0;
    int ndjson = 0, opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ha:", opts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            agent = optarg;
            break;
        case OPT_AFTER:
            if (cli_parse_int(optarg, 0, INT64_MAX, &after) != 0) {
                return cli_usage_error(&co, "--after: expected a cursor >= 0, got '%s'", optarg);
            }
            break;
        case OPT_LIMIT:
            if (cli_parse_int(optarg, 1, 1000000, &limit) != 0) {
                return cli_usage_error(&co, "--limit: expected a count >= 1, got '%s'", optarg);
            }
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
    int rc = roost_inbox_read(c, agent, after, (int)limit, (int)wait_s, &evs);
    if (rc != ROOST_OK) {
        r = cli_fail(&co, c, rc, "inbox read");
    } else if (ndjson) {
        r = cli_print_ndjson(evs);
        fprintf(stderr, "next_cursor=%lld has_more=%s\n", (long long)evs->next_cursor,
                evs->has_more ? "true" : "false");
    } else {
        r = cli_print_last_body(&co, c);
    }
    roost_events_free(evs);
    roost_client_free(c);
    return r;
}
