/* SPDX-License-Identifier: MIT */
/* `roost admin ...`: the operator API (token scope tenant:admin): quarantine list / requeue and
 * the agent list. */
#include <stdio.h>

#include "cli/cli.h"

#include "common/banned.h"

const char cmd_admin_quarantine_list_usage[] =
    "Usage: roost admin quarantine list [--agent A] [--limit N] [--next TOKEN] [--ndjson]\n"
    "\n"
    "Lists the tenant's quarantined events (with attempts, timeouts, nacks, last_error) and\n"
    "prints {\"events\":[...],\"next\":TOKEN|null}; pass TOKEN as --next for the next page.\n"
    "\n"
    "  -a, --agent A     only this agent's events\n"
    "  --limit N         page size (default: the server's)\n"
    "  --next TOKEN      page token from the previous answer\n"
    "  --ndjson          print one event per line instead, and 'next=TOKEN' on stderr when\n"
    "                    there is a next page\n"
    "\n" CLI_COMMON_HELP;

const char cmd_admin_quarantine_requeue_usage[] =
    "Usage: roost admin quarantine requeue EVENT_ID\n"
    "\n"
    "Puts a quarantined event back to pending (same event id). Prints the server's answer.\n"
    "An unknown or not-quarantined event fails with exit 3.\n"
    "\n" CLI_COMMON_HELP;

const char cmd_admin_agents_usage[] =
    "Usage: roost admin agents [--limit N] [--next TOKEN]\n"
    "\n"
    "Lists the tenant's agents with head, pending, scheduled, claimed and quarantined counts:\n"
    "{\"agents\":[...],\"next\":TOKEN|null}.\n"
    "\n"
    "  --limit N         page size (default: the server's)\n"
    "  --next TOKEN      page token from the previous answer\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_LIMIT = CLI_OPT_FIRST_LOCAL, OPT_NEXT, OPT_NDJSON };

int cmd_admin_quarantine_list(int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"next", required_argument, NULL, OPT_NEXT},
        {"ndjson", no_argument, NULL, OPT_NDJSON},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "admin quarantine list", cmd_admin_quarantine_list_usage);
    const char *agent = NULL, *page = NULL;
    int64_t limit = 0;
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
        case OPT_NEXT:
            page = optarg;
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
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        return r;
    }
    struct roost_events *evs = NULL;
    int rc = roost_admin_quarantine_list(c, agent, (int)limit, page, &evs);
    if (rc != ROOST_OK) {
        r = cli_fail(&co, c, rc, "admin quarantine list");
    } else if (ndjson) {
        r = cli_print_ndjson(evs);
        if (evs->next_page != NULL) {
            fprintf(stderr, "next=%s\n", evs->next_page);
        }
    } else {
        r = cli_print_last_body(&co, c);
    }
    roost_events_free(evs);
    roost_client_free(c);
    return r;
}

int cmd_admin_quarantine_requeue(int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "admin quarantine requeue", cmd_admin_quarantine_requeue_usage);
    int opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if ((r = cli_handle_opt(&co, opt, optarg, argv)) >= 0) {
            return r;
        }
    }
    if (argc - optind != 1) {
        return cli_usage_error(&co, "expected one EVENT_ID");
    }
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        return r;
    }
    int rc = roost_admin_quarantine_requeue(c, argv[optind]);
    char what[256];
    snprintf(what, sizeof what, "requeue %s", argv[optind]);
    r = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, what);
    roost_client_free(c);
    return r;
}

int cmd_admin_agents(int argc, char **argv)
{
    static const struct option opts[] = {
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"next", required_argument, NULL, OPT_NEXT},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "admin agents", cmd_admin_agents_usage);
    const char *page = NULL;
    int64_t limit = 0;
    int opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (opt == OPT_LIMIT) {
            if (cli_parse_int(optarg, 1, 1000000, &limit) != 0) {
                return cli_usage_error(&co, "--limit: expected a count >= 1, got '%s'", optarg);
            }
        } else if (opt == OPT_NEXT) {
            page = optarg;
        } else if ((r = cli_handle_opt(&co, opt, optarg, argv)) >= 0) {
            return r;
        }
    }
    if (optind < argc) {
        return cli_usage_error(&co, "unexpected argument '%s'", argv[optind]);
    }
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        return r;
    }
    struct roost_agents *agents = NULL;
    int rc = roost_admin_agents_list(c, (int)limit, page, &agents);
    r = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, "admin agents");
    roost_agents_free(agents);
    roost_client_free(c);
    return r;
}
