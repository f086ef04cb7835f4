/* SPDX-License-Identifier: MIT */
/* `roost ack`: completes claimed events, one request per call (several pairs use the batch
 * route). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

#include "common/banned.h"

int cmd_ack(struct cli_args *a)
{
    if (a->argc < 2 || a->argc % 2 != 0) {
        return cli_usage_error(a, "expected EVENT_ID LEASE_TOKEN pairs");
    }
    const char *agent = cli_str(a, "agent");
    struct roost_client *c = NULL;
    int r;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char **pos = a->argv;
    if (a->argc == 2) {
        int rc = roost_event_ack(c, agent, pos[0], pos[1]);
        char what[256];
        snprintf(what, sizeof what, "ack %s", pos[0]);
        r = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, what);
        roost_client_free(c);
        return r;
    }
    size_t n = (size_t)a->argc / 2;
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
        r = cli_fail(a, c, rc, "ack");
    } else {
        r = cli_print_last_body(a, c);
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
