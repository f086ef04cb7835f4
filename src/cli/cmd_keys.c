/* SPDX-License-Identifier: MIT */
/* `roost keys add / list / revoke`: the tenant's request-signing keys (token scope
 * tenant:admin). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#include "common/banned.h"

/* The server takes at most 16 KiB of key text; a little more lets it say so itself. */
#define KEYS_MAX_MATERIAL_BYTES ((size_t)32 * 1024)

const char cmd_keys_add_usage[] =
    "Usage: roost keys add --key-id ID --agent AGENT|'*' --alg ALG\n"
    "                      (--public-key-file PEM | --secret-file FILE)\n"
    "\n"
    "Registers a request-signing key (RFC 9421) for one agent, or for publishing ('*': a\n"
    "producer key), and prints its metadata. Requests signed with it (--key-file/--key-id on any\n"
    "command) are then accepted where roostd requires signatures.\n"
    "\n"
    "  --key-id ID              the key's id, [A-Za-z0-9._-]{1,128}, unique in the tenant\n"
    "  -a, --agent AGENT        the agent whose routes it signs, or '*' for publish\n"
    "  --alg ALG                ed25519, ecdsa-p256-sha256, rsa-pss-sha512, rsa-v1_5-sha256 or\n"
    "                           hmac-sha256\n"
    "  --public-key-file PEM    the public key (PEM; never the private half)\n"
    "  --secret-file FILE       hmac-sha256: the secret, base64 of 32..1024 bytes\n"
    "\n"
    "A key id that exists already fails with key_exists (exit 3).\n"
    "\n"
    "Connection options (the token needs scope tenant:admin):\n"
    "  --server URL, --token JWT, --token-file F, --cacert F, --timeout DUR,\n"
    "  --pretty/--compact: as for every command ('roost help publish').\n"
    "  Here --key-id names the key to register: to sign this request itself, set\n"
    "  ROOST_KEY_FILE / ROOST_KEY_ID / ROOST_KEY_ALG.\n"
    "  -h, --help               this help\n";

const char cmd_keys_list_usage[] =
    "Usage: roost keys list [--limit N] [--next TOKEN]\n"
    "\n"
    "Lists the tenant's request-signing keys (metadata only: key_id, agent_id, alg, created_at,\n"
    "revoked_at) and prints {\"keys\":[...],\"next\":TOKEN|null}.\n"
    "\n"
    "  --limit N         page size (default: the server's)\n"
    "  --next TOKEN      page token from the previous answer\n"
    "\n" CLI_COMMON_HELP;

const char cmd_keys_revoke_usage[] =
    "Usage: roost keys revoke KEY_ID\n"
    "\n"
    "Revokes a request-signing key: requests signed with it are refused from now on (401\n"
    "key_revoked). Prints the key with revoked_at; revoking again keeps the first time. An\n"
    "unknown key fails with key_not_found (exit 3).\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_PUBLIC_KEY_FILE = CLI_OPT_FIRST_LOCAL, OPT_SECRET_FILE, OPT_ALG, OPT_LIMIT, OPT_NEXT };

/* Prints a JSON text result and frees it. */
static int print_result(const struct cli_common *co, char *json)
{
    int r = cli_print_json(co, json, strlen(json));
    roost_free(json);
    return r;
}

int cmd_keys_add(int argc, char **argv)
{
    /* --key-id names the key registered here, so it is not the shared signing option. */
    static const struct option opts[] = {
        {"agent", required_argument, NULL, 'a'},
        {"alg", required_argument, NULL, OPT_ALG},
        {"public-key-file", required_argument, NULL, OPT_PUBLIC_KEY_FILE},
        {"secret-file", required_argument, NULL, OPT_SECRET_FILE},
        {"server", required_argument, NULL, CLI_OPT_SERVER},
        {"token", required_argument, NULL, CLI_OPT_TOKEN},
        {"token-file", required_argument, NULL, CLI_OPT_TOKEN_FILE},
        {"cacert", required_argument, NULL, CLI_OPT_CACERT},
        {"timeout", required_argument, NULL, CLI_OPT_TIMEOUT},
        {"pretty", no_argument, NULL, CLI_OPT_PRETTY},
        {"compact", no_argument, NULL, CLI_OPT_COMPACT},
        {"key-id", required_argument, NULL, CLI_OPT_KEY_ID},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "keys add", cmd_keys_add_usage);
    const char *agent = NULL, *alg = NULL, *pub_file = NULL, *secret_file = NULL, *key_id = NULL;
    int opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":ha:", opts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            agent = optarg;
            break;
        case OPT_ALG:
            alg = optarg;
            break;
        case OPT_PUBLIC_KEY_FILE:
            pub_file = optarg;
            break;
        case OPT_SECRET_FILE:
            secret_file = optarg;
            break;
        case CLI_OPT_KEY_ID:
            key_id = optarg;
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
    if (key_id == NULL || agent == NULL || alg == NULL) {
        return cli_usage_error(&co, "--key-id, --agent and --alg are required");
    }
    if ((pub_file == NULL) == (secret_file == NULL)) {
        return cli_usage_error(&co, "give exactly one of --public-key-file and --secret-file");
    }
    char *material = NULL;
    size_t len = 0;
    char err[512];
    if (cli_read_file(pub_file != NULL ? pub_file : secret_file, KEYS_MAX_MATERIAL_BYTES, &material,
                      &len, err, sizeof err) != 0) {
        fprintf(stderr, "roost: keys add: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    if (secret_file != NULL) {
        /* A secret file written by echo ends with a newline: not part of the base64. */
        while (len > 0 && (material[len - 1] == '\n' || material[len - 1] == '\r' ||
                           material[len - 1] == ' ' || material[len - 1] == '\t')) {
            material[--len] = '\0';
        }
    }
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        free(material);
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_key_add(c, key_id, agent, alg, pub_file != NULL ? material : NULL,
                                 secret_file != NULL ? material : NULL, &json);
    free(material);
    r = rc == ROOST_OK ? print_result(&co, json) : cli_fail(&co, c, rc, "keys add");
    roost_client_free(c);
    return r;
}

int cmd_keys_list(int argc, char **argv)
{
    static const struct option opts[] = {
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"next", required_argument, NULL, OPT_NEXT},
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "keys list", cmd_keys_list_usage);
    const char *page = NULL;
    int64_t limit = 0;
    int opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (opt) {
        case OPT_LIMIT:
            if (cli_parse_int(optarg, 1, 1000000, &limit) != 0) {
                return cli_usage_error(&co, "--limit: expected a count >= 1, got '%s'", optarg);
            }
            break;
        case OPT_NEXT:
            page = optarg;
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
    char *json = NULL;
    int rc = roost_admin_keys_list(c, (int)limit, page, &json);
    r = rc == ROOST_OK ? print_result(&co, json) : cli_fail(&co, c, rc, "keys list");
    roost_client_free(c);
    return r;
}

int cmd_keys_revoke(int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "keys revoke", cmd_keys_revoke_usage);
    int opt, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if ((r = cli_handle_opt(&co, opt, optarg, argv)) >= 0) {
            return r;
        }
    }
    if (argc - optind != 1) {
        return cli_usage_error(&co, "expected one KEY_ID");
    }
    const char *key_id = argv[optind];
    struct roost_client *c = NULL;
    if ((r = cli_connect(&co, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_key_revoke(c, key_id, &json);
    char what[200];
    snprintf(what, sizeof what, "keys revoke %.150s", key_id);
    r = rc == ROOST_OK ? print_result(&co, json) : cli_fail(&co, c, rc, what);
    roost_client_free(c);
    return r;
}
