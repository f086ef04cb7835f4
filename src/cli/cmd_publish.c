/* SPDX-License-Identifier: MIT */
/* `roost publish`: one event to one or more agents (fan-out), or a ready-made request body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

#include "common/banned.h"

const char cmd_publish_usage[] =
    "Usage: roost publish --agent A [--agent B ...] [--payload JSON | --payload-file F]\n"
    "                     [--priority N] [--delay DUR | --available-at T] [--ttl DUR |\n"
    "                     --expires-at T] [--idempotency-key K] [--correlation-id C]\n"
    "                     [--state-patch JSON]\n"
    "       roost publish --body-file F\n"
    "\n"
    "Publishes one event to every agent named (one inbox row each, in one transaction) and\n"
    "prints the server's answer: {\"events\":[{\"event_id\",\"agent_id\",\"sequence_number\"}]}.\n"
    "Without --payload or --payload-file the payload is read from standard input (when it is\n"
    "not a terminal).\n"
    "\n"
    "  -a, --agent A          recipient agent id; repeat for fan-out\n"
    "  -p, --payload JSON     the payload, a JSON object\n"
    "  --payload-file F       read the payload from F ('-' = standard input)\n"
    "  --priority N           -100..100, higher is claimed first (default 0)\n"
    "  --delay DUR            claimable only after DUR (30, 90s, 5m, 1h)\n"
    "  --available-at T       claimable only after RFC 3339 time T\n"
    "  --ttl DUR              expires DUR after publishing\n"
    "  --expires-at T         expires at RFC 3339 time T\n"
    "  --idempotency-key K    a repeat with the same key returns the original event (exit 0)\n"
    "  --correlation-id C     free-form id carried with the event\n"
    "  --state-patch JSON     JSON Merge Patch applied to each recipient's state atomically\n"
    "  --body-file F          send F ('-' = stdin) as the whole request body: one event object\n"
    "                         or {\"events\":[...]} (a batch, all or nothing)\n"
    "\n"
    "A publish that fails on the connection, or with 503 or 429, is tried again (3 times at\n"
    "most) under the same idempotency key, generated when --idempotency-key is not given, so it\n"
    "never makes the event twice; a --body-file body is tried again only when every event in it\n"
    "has an idempotency_key.\n"
    "\n" CLI_COMMON_HELP;

enum {
    OPT_PAYLOAD_FILE = CLI_OPT_FIRST_LOCAL,
    OPT_PRIORITY,
    OPT_DELAY,
    OPT_AVAILABLE_AT,
    OPT_TTL,
    OPT_EXPIRES_AT,
    OPT_IDEM,
    OPT_CORRELATION,
    OPT_STATE_PATCH,
    OPT_BODY_FILE
};

int cmd_publish(int argc, char **argv)
{
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        {"payload", required_argument, NULL, 'p'},
        {"payload-file", required_argument, NULL, OPT_PAYLOAD_FILE},
        {"priority", required_argument, NULL, OPT_PRIORITY},
        {"delay", required_argument, NULL, OPT_DELAY},
        {"available-at", required_argument, NULL, OPT_AVAILABLE_AT},
        {"ttl", required_argument, NULL, OPT_TTL},
        {"expires-at", required_argument, NULL, OPT_EXPIRES_AT},
        {"idempotency-key", required_argument, NULL, OPT_IDEM},
        {"correlation-id", required_argument, NULL, OPT_CORRELATION},
        {"state-patch", required_argument, NULL, OPT_STATE_PATCH},
        {"body-file", required_argument, NULL, OPT_BODY_FILE},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "publish", cmd_publish_usage);
    struct roost_message m;
    roost_message_init(&m);
    const char *payload_file = NULL, *body_file = NULL;
    /* At most one recipient per argument: argc bounds the list. */
    const char **to = calloc((size_t)argc + 1, sizeof *to);
    size_t n_to = 0;
    char *input = NULL;
    struct roost_client *c = NULL;
    struct roost_events *res = NULL;
    int ret = CLI_EXIT_OK, opt;
    int64_t v;
    if (to == NULL) {
        fprintf(stderr, "roost: publish: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ha:p:", opts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            to[n_to++] = optarg;
            break;
        case 'p':
            m.payload = optarg;
            break;
        case OPT_PAYLOAD_FILE:
            payload_file = optarg;
            break;
        case OPT_PRIORITY:
            if (cli_parse_int(optarg, -100, 100, &v) != 0) {
                ret = cli_usage_error(&co, "--priority: expected -100..100, got '%s'", optarg);
                goto out;
            }
            m.priority = (int)v;
            break;
        case OPT_DELAY:
            if (cli_parse_duration(optarg, &m.delay_s) != 0) {
                ret = cli_usage_error(&co, "--delay: expected a duration, got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_AVAILABLE_AT:
            m.available_at = optarg;
            break;
        case OPT_TTL:
            if (cli_parse_duration(optarg, &m.ttl_s) != 0 || m.ttl_s == 0) {
                ret = cli_usage_error(&co, "--ttl: expected a duration > 0, got '%s'", optarg);
                goto out;
            }
            break;
        case OPT_EXPIRES_AT:
            m.expires_at = optarg;
            break;
        case OPT_IDEM:
            m.idempotency_key = optarg;
            break;
        case OPT_CORRELATION:
            m.correlation_id = optarg;
            break;
        case OPT_STATE_PATCH:
            m.state_patch = optarg;
            break;
        case OPT_BODY_FILE:
            body_file = optarg;
            break;
        default:
            if ((ret = cli_handle_opt(&co, opt, optarg, argv)) >= 0) {
                goto out;
            }
            ret = CLI_EXIT_OK;
        }
    }
    if (optind < argc) {
        ret = cli_usage_error(&co, "unexpected argument '%s'", argv[optind]);
        goto out;
    }
    if (body_file != NULL) {
        if (n_to > 0 || m.payload != NULL || payload_file != NULL || m.state_patch != NULL ||
            m.idempotency_key != NULL || m.correlation_id != NULL || m.priority != 0 ||
            m.delay_s != 0 || m.ttl_s != 0 || m.available_at != NULL || m.expires_at != NULL) {
            ret = cli_usage_error(&co, "--body-file is the whole request: no other event option");
            goto out;
        }
    } else {
        if (n_to == 0) {
            ret = cli_usage_error(&co, "at least one --agent is required");
            goto out;
        }
        if (m.payload != NULL && payload_file != NULL) {
            ret = cli_usage_error(&co, "give either --payload or --payload-file");
            goto out;
        }
        if (m.payload == NULL && payload_file == NULL) {
            if (isatty(STDIN_FILENO)) {
                ret = cli_usage_error(&co, "no payload: give --payload, --payload-file, or pipe "
                                           "it on standard input");
                goto out;
            }
            payload_file = "-";
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
            ret = cli_usage_error(&co, "%s contains a NUL byte", file);
            goto out;
        }
    }
    if ((ret = cli_connect(&co, &c)) != CLI_EXIT_OK) {
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
    ret = rc == ROOST_OK ? cli_print_last_body(&co, c) : cli_fail(&co, c, rc, "publish");
out:
    roost_events_free(res);
    roost_client_free(c);
    free(input);
    free(to);
    return ret;
}
