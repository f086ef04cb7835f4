/* SPDX-License-Identifier: MIT */
/* `roost admin ...`: the operator API (token scope tenant:admin): quarantine list / inspect /
 * requeue / purge, the agent list and the tenant's stats. */
#include <stdio.h>
#include <string.h>

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
    "Usage: roost admin agents [--sort agent|depth|age] [--limit N] [--next TOKEN]\n"
    "\n"
    "Lists the tenant's agents with head, pending, scheduled, claimed and quarantined counts,\n"
    "oldest pending age, open SSE subscribers and last seen (claims):\n"
    "{\"agents\":[...],\"next\":TOKEN|null}.\n"
    "\n"
    "  --sort ORDER      agent (by id, the default), depth (most pending first) or age (oldest\n"
    "                    pending first)\n"
    "  --limit N         page size (default: the server's)\n"
    "  --next TOKEN      page token from the previous answer (same --sort)\n"
    "\n" CLI_COMMON_HELP;

const char cmd_admin_quarantine_inspect_usage[] =
    "Usage: roost admin quarantine inspect EVENT_ID\n"
    "\n"
    "Prints one quarantined event: payload, attempts, timeouts, nacks, last_error, consumer.\n"
    "An unknown or not-quarantined event fails with exit 3.\n"
    "\n" CLI_COMMON_HELP;

const char cmd_admin_quarantine_purge_usage[] =
    "Usage: roost admin quarantine purge (EVENT_ID | --agent A | --all) [--limit N]\n"
    "\n"
    "Deletes quarantined events for good: one event, one agent's, or all of the tenant's (at\n"
    "most N per call, default 1000; the answer's \"more\" says whether to run it again).\n"
    "Prints {\"purged\":N,\"more\":BOOL}. Events in any other status are never touched.\n"
    "\n"
    "  -a, --agent A     only this agent's quarantined events\n"
    "  --all             every quarantined event of the tenant\n"
    "  --limit N         most events deleted by this call\n"
    "\n" CLI_COMMON_HELP;

const char cmd_admin_stats_usage[] =
    "Usage: roost admin stats\n"
    "\n"
    "Prints the tenant's totals: pending, scheduled, claimed, quarantined, oldest pending and\n"
    "claim ages, open SSE subscribers, as of the server's last metrics snapshot (as_of).\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_LIMIT = CLI_OPT_FIRST_LOCAL, OPT_NEXT, OPT_NDJSON, OPT_SORT, OPT_ALL };

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
        {"sort", required_argument, NULL, OPT_SORT},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "admin agents", cmd_admin_agents_usage);
    const char *page = NULL, *sort = NULL;
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
        } else if (opt == OPT_SORT) {
            if (strcmp(optarg, "agent") != 0 && strcmp(optarg, "depth") != 0 &&
                strcmp(optarg, "age") != 0) {
                return cli_usage_error(&co, "--sort: expected agent, depth or age, got '%s'",
                                       optarg);
            }
            sort = optarg;
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
    int rc = roost_admin_agents_list_sorted(c, sort, (int)limit, page, &agents);
    r = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, "admin agents");
    roost_agents_free(agents);
    roost_client_free(c);
    return r;
}

/* Parses only the common options and requires `want` positional arguments. Returns -1 to go on,
 * else the exit code. */
static int simple_args(struct cli_common *co, int argc, char **argv, int want)
{
    static const struct option opts[] = {
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if ((r = cli_handle_opt(co, opt, optarg, argv)) >= 0) {
            return r;
        }
    }
    if (argc - optind != want) {
        return want ? cli_usage_error(co, "expected one EVENT_ID")
                    : cli_usage_error(co, "unexpected argument '%s'", argv[optind]);
    }
    return -1;
}

int cmd_admin_quarantine_inspect(int argc, char **argv)
{
    struct cli_common co;
    cli_common_init(&co, "admin quarantine inspect", cmd_admin_quarantine_inspect_usage);
    int r = simple_args(&co, argc, argv, 1);
    if (r >= 0) {
        return r;
    }
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_quarantine_inspect(c, argv[optind], &json);
    char what[256];
    snprintf(what, sizeof what, "inspect %s", argv[optind]);
    r = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, what);
    roost_free(json);
    roost_client_free(c);
    return r;
}

int cmd_admin_quarantine_purge(int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        {"all", no_argument, NULL, OPT_ALL},
        {"limit", required_argument, NULL, OPT_LIMIT},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "admin quarantine purge", cmd_admin_quarantine_purge_usage);
    const char *agent = NULL;
    int64_t limit = 0;
    int all = 0, opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ha:", opts, NULL)) != -1) {
        if (opt == 'a') {
            agent = optarg;
        } else if (opt == OPT_ALL) {
            all = 1;
        } else if (opt == OPT_LIMIT) {
            if (cli_parse_int(optarg, 1, 10000, &limit) != 0) {
                return cli_usage_error(&co, "--limit: expected 1..10000, got '%s'", optarg);
            }
        } else if ((r = cli_handle_opt(&co, opt, optarg, argv)) >= 0) {
            return r;
        }
    }
    const char *event_id = optind < argc ? argv[optind] : NULL;
    if (argc - optind > 1) {
        return cli_usage_error(&co, "unexpected argument '%s'", argv[optind + 1]);
    }
    /* Exactly one target: deleting a whole tenant's quarantine must be asked for by name. */
    if ((event_id != NULL) + (agent != NULL) + all != 1) {
        return cli_usage_error(&co, "name exactly one of EVENT_ID, --agent A or --all");
    }
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        return r;
    }
    int rc = roost_admin_quarantine_purge(c, agent, event_id, (int)limit, NULL, NULL);
    r = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, "purge");
    roost_client_free(c);
    return r;
}

int cmd_admin_stats(int argc, char **argv)
{
    struct cli_common co;
    cli_common_init(&co, "admin stats", cmd_admin_stats_usage);
    int r = simple_args(&co, argc, argv, 0);
    if (r >= 0) {
        return r;
    }
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_stats(c, &json);
    r = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, "admin stats");
    roost_free(json);
    roost_client_free(c);
    return r;
}
