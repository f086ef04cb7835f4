/* SPDX-License-Identifier: MIT */
/* `roost`: finds the (sub)command named by the first words of argv in the command table, parses
 * its options and runs it. Also answers help, version and the hidden listings of the table
 * (--list-commands, --list-options) that the man page test reads. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#include "common/banned.h"

static bool is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

static int help_command(int argc, char **argv)
{
    if (argc == 2) {
        cli_print_help(stdout);
        return CLI_EXIT_OK;
    }
    int consumed = 0;
    bool partial = false;
    const struct cli_command *cmd = cli_find_command(argc, argv, 2, &consumed, &partial);
    if (cmd != NULL) {
        cli_print_usage(stdout, cmd);
        return CLI_EXIT_OK;
    }
    if (partial) {
        cli_print_group(stdout, argc, argv, 2);
        return CLI_EXIT_OK;
    }
    fprintf(stderr, "roost: no command '%s'. Try 'roost help'.\n", argv[2]);
    return CLI_EXIT_USAGE;
}

/* `roost version` with a server configured (--server URL after it, or ROOST_SERVER) also shows
 * the roostd that answers there: its X-Roost-Version on GET /healthz, which needs no token. */
static int server_version(int argc, char **argv)
{
    const char *url = getenv("ROOST_SERVER");
    for (int i = 2; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--server") == 0) {
            url = argv[i + 1];
        }
    }
    if (url == NULL || *url == '\0') {
        return CLI_EXIT_OK;
    }
    struct roost_client *c = NULL;
    char *resp = NULL;
    int rc = roost_client_new(&c, url, NULL);
    if (rc == ROOST_OK) {
        rc = roost_client_request(c, "GET", "/healthz", NULL, NULL, &resp);
    }
    int r = CLI_EXIT_OK;
    if (rc == ROOST_OK && roost_client_server_version(c)[0] != '\0') {
        printf("roostd %s at %s\n", roost_client_server_version(c), url);
    } else if (rc == ROOST_OK) {
        printf("roostd (version not given) at %s\n", url);
    } else {
        fprintf(stderr, "roost: version: %s: %s\n", url,
                c != NULL && roost_client_errmsg(c)[0] != '\0' ? roost_client_errmsg(c)
                                                               : roost_strerror(rc));
        r = cli_exit_code(rc, c != NULL && roost_client_http_status(c) != 0);
    }
    roost_free(resp);
    roost_client_free(c);
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_print_help(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    if (is_help(first)) {
        cli_print_help(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "--version") == 0 || strcmp(first, "version") == 0) {
        printf("roost %s (libroost %s)\n", ROOST_VERSION, roost_version());
        return server_version(argc, argv);
    }
    if (strcmp(first, "--list-commands") == 0) {
        cli_list_commands(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "--list-options") == 0) {
        cli_list_options(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "help") == 0) {
        return help_command(argc, argv);
    }
    int consumed = 0;
    bool partial = false;
    const struct cli_command *cmd = cli_find_command(argc, argv, 1, &consumed, &partial);
    if (cmd == NULL) {
        if (partial) {
            bool help = argc > 2 && is_help(argv[argc - 1]);
            cli_print_group(help ? stdout : stderr, argc, argv, 1);
            return help ? CLI_EXIT_OK : CLI_EXIT_USAGE;
        }
        fprintf(stderr, "roost: no command '%s'. Try 'roost help'.\n", first);
        return CLI_EXIT_USAGE;
    }
    /* The command sees its last word as argv[0] and its own arguments after it. */
    int skip = consumed - 1;
    struct cli_args a;
    int r = cli_parse(&a, cmd, argc - 1 - skip, argv + 1 + skip);
    if (r < 0) {
        r = cmd->run(&a);
    }
    cli_args_cleanup(&a);
    return r;
}
