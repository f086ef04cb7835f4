/* SPDX-License-Identifier: MIT */
/* `roost token mint`: signs a bearer token with roostd's own Ed25519 key (self-hosted setups).
 * Works offline: it only reads the key file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#include "common/banned.h"

const char cmd_token_mint_usage[] =
    "Usage: roost token mint --tenant T --scope SCOPES [--sub S] [--ttl DUR]\n"
    "                        [--data-dir DIR | --key FILE]\n"
    "\n"
    "Mints a bearer token (EdDSA JWT) signed with roostd's Ed25519 key and prints it followed\n"
    "by a newline. Needs read access to the key, nothing else (no server is contacted).\n"
    "\n"
    "  --tenant T       tenant the token is bound to ([A-Za-z0-9._-]{1,128})\n"
    "  --scope SCOPES   space-separated scopes, e.g. \"agent:a1:consume agent:proj.*:publish\";\n"
    "                   agent:<sel>:read | agent:<sel>:consume | agent:<sel>:publish |\n"
    "                   tenant:admin  (<sel> is an agent id or a prefix ending in '*')\n"
    "  --sub S          who the token is for, logged by the server (default roost-cli)\n"
    "  --ttl DUR        lifetime: 3600, 90s, 30m, 1h, 7d, 1h30m (default 1h, at most 10 years)\n"
    "  --data-dir DIR   roostd's data directory: the key is DIR/token_ed25519.pem\n"
    "                   (default $ROOST_DATA_DIR, else ./var)\n"
    "  --key FILE       the key file itself (roostd's auth.key_file)\n"
    "  -h, --help       this help\n"
    "\n"
    "Example:\n"
    "  export ROOST_TOKEN=$(roost token mint --data-dir ./var --tenant t1 \\\n"
    "        --scope 'agent:*:consume agent:*:publish tenant:admin' --ttl 12h)\n";

enum { OPT_TENANT = CLI_OPT_FIRST_LOCAL, OPT_SCOPE, OPT_SUB, OPT_TTL, OPT_DATA_DIR, OPT_KEY };

int cmd_token_mint(int argc, char **argv)
{
    static const struct option opts[] = {
        {"tenant", required_argument, NULL, OPT_TENANT},
        {"scope", required_argument, NULL, OPT_SCOPE},
        {"sub", required_argument, NULL, OPT_SUB},
        {"ttl", required_argument, NULL, OPT_TTL},
        {"data-dir", required_argument, NULL, OPT_DATA_DIR},
        {"key", required_argument, NULL, OPT_KEY},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct cli_common co;
    cli_common_init(&co, "token mint", cmd_token_mint_usage);
    const char *tenant = NULL, *scope = NULL, *sub = "roost-cli", *data_dir = NULL, *key = NULL;
    int64_t ttl_s = 3600;
    int opt;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (opt) {
        case OPT_TENANT:
            tenant = optarg;
            break;
        case OPT_SCOPE:
            scope = optarg;
            break;
        case OPT_SUB:
            sub = optarg;
            break;
        case OPT_TTL:
            if (cli_parse_duration(optarg, &ttl_s) != 0 || ttl_s < 1 ||
                ttl_s > ROOST_TOKEN_MAX_TTL_S) {
                return cli_usage_error(&co,
                                       "--ttl: expected a duration of 1s..10 years "
                                       "(3600, 30m, 1h, 7d), got '%s'",
                                       optarg);
            }
            break;
        case OPT_DATA_DIR:
            data_dir = optarg;
            break;
        case OPT_KEY:
            key = optarg;
            break;
        default: {
            /* Only -h and option errors reach here: token mint takes no connection options. */
            int r = cli_handle_opt(&co, opt, optarg, argv);
            if (r >= 0) {
                return r;
            }
            return cli_usage_error(&co, "unexpected option");
        }
        }
    }
    if (optind < argc) {
        return cli_usage_error(&co, "unexpected argument '%s'", argv[optind]);
    }
    if (tenant == NULL || scope == NULL) {
        return cli_usage_error(&co, "--tenant and --scope are required");
    }
    if (key != NULL && data_dir != NULL) {
        return cli_usage_error(&co, "give either --key or --data-dir, not both");
    }
    char path[4096];
    if (key == NULL) {
        if (data_dir == NULL) {
            data_dir = getenv("ROOST_DATA_DIR");
        }
        if (data_dir == NULL || data_dir[0] == '\0') {
            data_dir = "./var";
        }
        size_t dl = strlen(data_dir);
        while (dl > 1 && data_dir[dl - 1] == '/') {
            dl--;
        }
        int n = snprintf(path, sizeof path, "%.*s/token_ed25519.pem", (int)dl, data_dir);
        if (n < 0 || (size_t)n >= sizeof path) {
            return cli_usage_error(&co, "--data-dir is too long");
        }
        key = path;
    }
    char *token = NULL;
    char err[512];
    int rc = roost_token_mint_ex(key, tenant, sub, scope, ttl_s, &token, err, sizeof err);
    if (rc != ROOST_OK) {
        fprintf(stderr, "roost: token mint: %s (%s)\n", err[0] != '\0' ? err : roost_strerror(rc),
                roost_err_code(rc));
        return rc == ROOST_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_ERROR;
    }
    printf("%s\n", token);
    roost_free(token);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}
