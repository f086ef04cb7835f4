/* SPDX-License-Identifier: MIT */
/* `roost release` (NACK one claimed event) and `roost release-all` (graceful shutdown of one
 * consumer). */
#include <stdio.h>

#include "cli/cli.h"

#include "common/banned.h"

const char cmd_release_usage[] =
    "Usage: roost release --agent A EVENT_ID LEASE_TOKEN [--delay DUR] [--reason R]\n"
    "                     [--error TEXT]\n"
    "\n"
    "Gives a claimed event back: it becomes claimable again after DUR. Prints the server's\n"
    "answer. A lost lease fails with lease_mismatch (exit 3).\n"
    "\n"
    "  -a, --agent A     the agent\n"
    "  --delay DUR       claimable again after DUR (default at once)\n"
    "  --reason R        transient (default; counts a failed attempt), shutdown (counts\n"
    "                    nothing) or poison (quarantine now)\n"
    "  --error TEXT      recorded as the event's last_error (at most 4096 bytes)\n"
    "\n" CLI_COMMON_HELP;

const char cmd_release_all_usage[] =
    "Usage: roost release-all --agent A [--consumer C]\n"
    "\n"
    "Releases (reason shutdown) every lease consumer C holds on the agent's inbox; other\n"
    "processes sharing the agent keep theirs. Without --consumer, the leases claimed without a\n"
    "consumer id. Prints {\"released\":N}.\n"
    "\n"
    "  -a, --agent A     the agent\n"
    "  --consumer C      the consumer id given to 'roost claim --consumer'\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_DELAY = CLI_OPT_FIRST_LOCAL, OPT_REASON, OPT_ERROR, OPT_CONSUMER };

int cmd_release(int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        {"delay", required_argument, NULL, OPT_DELAY},
        {"reason", required_argument, NULL, OPT_REASON},
        {"error", required_argument, NULL, OPT_ERROR},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "release", cmd_release_usage);
    const char *agent = NULL, *error_text = NULL;
    int64_t delay_s = 0;
    enum roost_release_reason reason = ROOST_RELEASE_DEFAULT;
    int opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ha:", opts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            agent = optarg;
            break;
        case OPT_DELAY:
            if (cli_parse_duration(optarg, &delay_s) != 0) {
                return cli_usage_error(&co, "--delay: expected a duration, got '%s'", optarg);
            }
            break;
        case OPT_REASON:
            if (roost_release_reason_parse(optarg, &reason) != ROOST_OK) {
                return cli_usage_error(&co,
                                       "--reason: expected transient, shutdown or poison, "
                                       "got '%s'",
                                       optarg);
            }
            break;
        case OPT_ERROR:
            error_text = optarg;
            break;
        default:
            if ((r = cli_handle_opt(&co, opt, optarg, argv)) >= 0) {
                return r;
            }
        }
    }
    if (agent == NULL) {
        return cli_usage_error(&co, "--agent is required");
    }
    if (argc - optind != 2) {
        return cli_usage_error(&co, "expected EVENT_ID LEASE_TOKEN");
    }
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        return r;
    }
    const char *event_id = argv[optind];
    int rc = roost_event_release(c, agent, event_id, argv[optind + 1], delay_s, reason, error_text);
    char what[256];
    snprintf(what, sizeof what, "release %s", event_id);
    r = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, what);
    roost_client_free(c);
    return r;
}

int cmd_release_all(int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        {"consumer", required_argument, NULL, OPT_CONSUMER},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "release-all", cmd_release_all_usage);
    const char *agent = NULL, *consumer = NULL;
    int opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ha:", opts, NULL)) != -1) {
        if (opt == 'a') {
            agent = optarg;
        } else if (opt == OPT_CONSUMER) {
            consumer = optarg;
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
    int64_t released = 0;
    int rc = roost_inbox_release_all(c, agent, consumer, &released);
    r = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, "release-all");
    roost_client_free(c);
    return r;
}
