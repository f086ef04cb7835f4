/* SPDX-License-Identifier: MIT */
/* `roost publish`: one event to one or more agents (fan-out), or a ready-made request body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#include "common/banned.h"

int cmd_publish(struct cli_args *a)
{
    struct roost_message m;
    roost_message_init(&m);
    size_t n_to = 0;
    const char *const *to = cli_list(a, "agent", &n_to);
    m.payload = cli_str(a, "payload");
    m.priority = (int)cli_num(a, "priority", 0);
    m.delay_s = cli_num(a, "delay", 0);
    m.available_at = cli_str(a, "available-at");
    m.ttl_s = cli_num(a, "ttl", 0);
    m.expires_at = cli_str(a, "expires-at");
    m.idempotency_key = cli_str(a, "idempotency-key");
    m.correlation_id = cli_str(a, "correlation-id");
    m.state_patch = cli_str(a, "state-patch");
    const char *payload_file = cli_str(a, "payload-file"), *body_file = cli_str(a, "body-file");
    char *input = NULL;
    struct roost_client *c = NULL;
    struct roost_events *res = NULL;
    int ret = CLI_EXIT_OK;
    if (body_file != NULL) {
        if (n_to > 0 || m.payload != NULL || payload_file != NULL || m.state_patch != NULL ||
            m.idempotency_key != NULL || m.correlation_id != NULL || m.priority != 0 ||
            m.delay_s != 0 || m.ttl_s != 0 || m.available_at != NULL || m.expires_at != NULL) {
            ret = cli_usage_error(a, "--body-file is the whole request: no other event option");
            goto out;
        }
    } else {
        if (n_to == 0) {
            ret = cli_usage_error(a, "at least one --agent is required");
            goto out;
        }
        if (m.payload != NULL && payload_file != NULL) {
            ret = cli_usage_error(a, "give either --payload or --payload-file");
            goto out;
        }
        /* Standard input is read only when asked for ("--payload -"): a publish in a
         * `while read` loop must not swallow the loop's input, nor wait on an open pipe. */
        if (m.payload != NULL && strcmp(m.payload, "-") == 0) {
            payload_file = "-";
            m.payload = NULL;
        } else if (m.payload != NULL && m.payload[0] == '@') {
            payload_file = m.payload + 1;
            m.payload = NULL;
        } else if (m.payload == NULL && payload_file == NULL) {
            m.payload = "{}";
        }
    }
    const char *file = body_file != NULL ? body_file : payload_file;
    if (file != NULL) {
        size_t len = 0;
        char err[512];
        if (cli_read_file(file, CLI_MAX_INPUT_BYTES, &input, &len, err, sizeof err) != 0) {
            fprintf(stderr, "roost: publish: %s\n", err);
            ret = CLI_EXIT_ERROR;
            goto out;
        }
        if (strlen(input) != len) {
            ret = cli_usage_error(a, "%s contains a NUL byte", file);
            goto out;
        }
    }
    if ((ret = cli_connect(a, &c)) != CLI_EXIT_OK) {
        goto out;
    }
    int rc;
    if (body_file != NULL) {
        rc = roost_publish_json(c, input, &res);
    } else {
        if (payload_file != NULL) {
            m.payload = input;
        }
        m.recipients = to;
        m.n_recipients = n_to;
        rc = roost_publish(c, &m, &res);
    }
    ret = rc == ROOST_OK ? cli_print_last_body(a, c) : cli_fail(a, c, rc, "publish");
out:
    roost_events_free(res);
    roost_client_free(c);
    free(input);
    return ret;
}
