/* SPDX-License-Identifier: MIT */
/* `roost ack`: completes claimed events, one request per call (several pairs use the batch
 * route). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

#include "common/banned.h"

const char cmd_ack_usage[] =
    "Usage: roost ack --agent A EVENT_ID LEASE_TOKEN [EVENT_ID LEASE_TOKEN ...]\n"
    "\n"
    "Completes claimed events and prints the server's answer. One pair uses\n"
    "POST .../inbox/{event_id}/ack; several pairs are sent as one batch ack, whose per-event\n"
    "results are printed ({\"results\":[...]}); any failed item is also reported on stderr and\n"
    "sets the exit code. A lease that expired and was claimed again fails with lease_mismatch\n"
    "(exit 3). Repeating a successful ack succeeds.\n"
    "\n"
    "  -a, --agent A     the agent\n"
    "\n" CLI_COMMON_HELP;

int cmd_ack(int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "ack", cmd_ack_usage);
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
    int npos = argc - optind;
    if (agent == NULL) {
        return cli_usage_error(&co, "--agent is required");
    }
    if (npos < 2 || npos % 2 != 0) {
        return cli_usage_error(&co, "expected EVENT_ID LEASE_TOKEN pairs");
    }
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char **pos = argv + optind;
    if (npos == 2) {
        int rc = roost_event_ack(c, agent, pos[0], pos[1]);
        char what[256];
        snprintf(what, sizeof what, "ack %s", pos[0]);
        r = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, what);
        roost_client_free(c);
        return r;
    }
    size_t n = (size_t)npos / 2;
    struct roost_ack *acks = calloc(n, sizeof *acks);
    if (acks == NULL) {
        roost_client_free(c);
        fprintf(stderr, "roost: ack: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    for (size_t i = 0; i < n; i++) {
        acks[i].event_id = pos[2 * i];
        acks[i].lease_token = pos[2 * i + 1];
    }
    size_t failed = 0;
    int rc = roost_events_ack(c, agent, acks, n, &failed);
    if (rc != ROOST_OK) {
        r = cli_fail(&co, c, rc, "ack");
    } else {
        r = cli_print_last_body(&co, c);
        for (size_t i = 0; i < n && r == CLI_EXIT_OK; i++) {
            if (acks[i].rc != ROOST_OK) {
                fprintf(stderr, "roost: ack %s: %s (%s)\n", acks[i].event_id,
                        roost_strerror(acks[i].rc), roost_err_code(acks[i].rc));
            }
        }
        /* The exit code of the first failed item: 3 when it was only a lost lease. */
        for (size_t i = 0; i < n; i++) {
            if (acks[i].rc != ROOST_OK) {
                r = cli_exit_code(acks[i].rc, true);
                break;
            }
        }
    }
    free(acks);
    roost_client_free(c);
    return r;
}
