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

/* Prints a JSON text result and frees it. */
static int print_result(const struct cli_args *a, char *json)
{
    int r = cli_print_json(a, json, strlen(json));
    roost_free(json);
    return r;
}

int cmd_keys_add(struct cli_args *a)
{
    const char *pub_file = cli_str(a, "public-key-file"), *secret_file = cli_str(a, "secret-file");
    if ((pub_file == NULL) == (secret_file == NULL)) {
        return cli_usage_error(a, "give exactly one of --public-key-file and --secret-file");
    }
    int r;
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
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        free(material);
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_key_add(c, cli_str(a, "key-id"), cli_str(a, "agent"), cli_str(a, "alg"),
                                 pub_file != NULL ? material : NULL,
                                 secret_file != NULL ? material : NULL, &json);
    free(material);
    r = rc == ROOST_OK ? print_result(a, json) : cli_fail(a, c, rc, "keys add");
    roost_client_free(c);
    return r;
}

int cmd_keys_list(struct cli_args *a)
{
    int r;
    struct roost_client *c = NULL;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_keys_list(c, (int)cli_num(a, "limit", 0), cli_str(a, "next"), &json);
    r = rc == ROOST_OK ? print_result(a, json) : cli_fail(a, c, rc, "keys list");
    roost_client_free(c);
    return r;
}

int cmd_keys_revoke(struct cli_args *a)
{
    const char *key_id = a->argv[0];
    int r;
    struct roost_client *c = NULL;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *json = NULL;
    int rc = roost_admin_key_revoke(c, key_id, &json);
    char what[200];
    snprintf(what, sizeof what, "keys revoke %.150s", key_id);
    r = rc == ROOST_OK ? print_result(a, json) : cli_fail(a, c, rc, what);
    roost_client_free(c);
    return r;
}
