/* SPDX-License-Identifier: MIT */
/* `roost token mint`: signs a bearer token with roostd's own Ed25519 key (self-hosted setups).
 * Works offline: it only reads the key file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/limits.h"

#include "common/banned.h"

int cmd_token_mint(struct cli_args *a)
{
    const char *sub = cli_given(a, "sub") ? cli_str(a, "sub") : "roost-cli";
    const char *key = cli_str(a, "key");
    /* $ROOST_DATA_DIR only fills in for a --data-dir not given: it never conflicts with --key. */
    if (key != NULL && cli_given(a, "data-dir")) {
        return cli_usage_error(a, "give either --key or --data-dir, not both");
    }
    char path[4096];
    if (key == NULL) {
        const char *data_dir = cli_str(a, "data-dir");
        if (data_dir == NULL || data_dir[0] == '\0') {
            data_dir = "./var";
        }
        size_t dl = strlen(data_dir);
        while (dl > 1 && data_dir[dl - 1] == '/') {
            dl--;
        }
        int n = snprintf(path, sizeof path, "%.*s/%s", (int)dl, data_dir, ROOST_TOKEN_KEY_FILE);
        if (n < 0 || (size_t)n >= sizeof path) {
            return cli_usage_error(a, "--data-dir is too long");
        }
        key = path;
    }
    char *token = NULL;
    char err[512];
    int rc = roost_token_mint_ex(key, cli_str(a, "tenant"), sub, cli_str(a, "scope"),
                                 cli_num(a, "ttl", 3600), &token, err, sizeof err);
    if (rc != ROOST_OK) {
        fprintf(stderr, "roost: token mint: %s (%s)\n", err[0] != '\0' ? err : roost_strerror(rc),
                roost_err_code(rc));
        return rc == ROOST_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_ERROR;
    }
    printf("%s\n", token);
    roost_free(token);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}
