/* SPDX-License-Identifier: MIT */
/* `roost`: finds the (sub)command named by the first words of argv and runs it. Everything else
 * lives in cmd_<subcommand>.c. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#include "common/banned.h"

static const struct cli_command commands[] = {
    {"token mint", cmd_token_mint, "mint a bearer token with roostd's key", cmd_token_mint_usage},
    {"publish", cmd_publish, "publish an event to one or more agents", cmd_publish_usage},
    {"inbox read", cmd_inbox_read, "read an agent's inbox from a cursor (read-only)",
     cmd_inbox_read_usage},
    {"inbox tail", cmd_inbox_tail, "follow an agent's inbox: print every new event (NDJSON)",
     cmd_inbox_tail_usage},
    {"claim", cmd_claim, "claim events under a lease", cmd_claim_usage},
    {"ack", cmd_ack, "complete claimed events", cmd_ack_usage},
    {"release", cmd_release, "give a claimed event back (NACK)", cmd_release_usage},
    {"extend", cmd_extend, "extend a lease", cmd_extend_usage},
    {"release-all", cmd_release_all, "release every lease a consumer holds", cmd_release_all_usage},
    {"state", cmd_state, "full state sync: the agent's state and its cursor", cmd_state_usage},
    {"admin quarantine list", cmd_admin_quarantine_list, "list quarantined events",
     cmd_admin_quarantine_list_usage},
    {"admin quarantine requeue", cmd_admin_quarantine_requeue,
     "put a quarantined event back to pending", cmd_admin_quarantine_requeue_usage},
    {"admin quarantine inspect", cmd_admin_quarantine_inspect,
     "show one quarantined event (payload, attempts, last error)",
     cmd_admin_quarantine_inspect_usage},
    {"admin quarantine purge", cmd_admin_quarantine_purge, "delete quarantined events for good",
     cmd_admin_quarantine_purge_usage},
    {"admin agents", cmd_admin_agents, "list agents with their counters", cmd_admin_agents_usage},
    {"admin stats", cmd_admin_stats, "the tenant's totals (pending, claimed, quarantined, ...)",
     cmd_admin_stats_usage},
    {"keys add", cmd_keys_add, "register a request-signing key (RFC 9421)", cmd_keys_add_usage},
    {"keys list", cmd_keys_list, "list the tenant's request-signing keys", cmd_keys_list_usage},
    {"keys revoke", cmd_keys_revoke, "revoke a request-signing key", cmd_keys_revoke_usage},
    {"agent run", cmd_agent_run, "work an agent's inbox: run a command per event",
     cmd_agent_run_usage},
    {"agent status", cmd_agent_status, "show the state of an agent run from its state dir",
     cmd_agent_status_usage},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void print_version(void)
{
    printf("roost %s (libroost %s)\n", ROOST_VERSION, roost_version());
}

static void print_help(FILE *out)
{
    fputs("Usage: roost <command> [options] [arguments]\n"
          "\n"
          "The Roost command-line tool: publish events, read and work an agent's inbox, and\n"
          "operate a roostd. Every command prints the server's JSON answer on stdout.\n"
          "\n"
          "Commands:\n",
          out);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        fprintf(out, "  %-26s %s\n", commands[i].name, commands[i].summary);
    }
    fputs("  help [COMMAND]             this help, or a command's\n"
          "  version, --version         print the version\n"
          "\n"
          "Environment:\n"
          "  ROOST_SERVER   default for --server (else " CLI_DEFAULT_SERVER ")\n"
          "  ROOST_TOKEN    default for --token\n"
          "  ROOST_KEY_FILE, ROOST_KEY_ID, ROOST_KEY_ALG\n"
          "                 defaults for --key-file, --key-id, --key-alg: sign every request\n"
          "  ROOST_DATA_DIR default for 'token mint --data-dir' (else ./var)\n"
          "\n"
          "Exit codes:\n"
          "  0  success\n"
          "  1  the server refused the request (auth, validation, limits, server error), or\n"
          "     another failure\n"
          "  2  usage error: bad command line, or an argument rejected before anything was sent\n"
          "  3  not found or conflict: no such event, lease lost or wrong state (409), cursor\n"
          "     expired (410) -- the request was valid but the target is not as expected\n"
          "  4  the server could not be reached, or the request timed out\n"
          "\n"
          "Errors are reported on stderr as 'roost: <what>: <message> (<code>)', where <code> is\n"
          "the stable snake_case error code (the server's, or a local one such as\n"
          "connect_failed).\n",
          out);
}

/* How many leading words of `name` argv[from..] matches, word by word. */
static int match_words(const char *name, int argc, char **argv, int from)
{
    int words = 0;
    const char *p = name;
    for (int i = from; *p != '\0' && i < argc; i++) {
        size_t wl = strcspn(p, " ");
        if (strlen(argv[i]) != wl || strncmp(argv[i], p, wl) != 0) {
            break;
        }
        words++;
        p += wl;
        while (*p == ' ') {
            p++;
        }
    }
    return words;
}

static int count_words(const char *name)
{
    int n = 1;
    for (const char *p = name; *p != '\0'; p++) {
        n += *p == ' ';
    }
    return n;
}

/* Finds the command named by argv[from..], or NULL. *partial is set when the words given start
 * some command's name without completing it ("admin", "admin quarantine"). */
static const struct cli_command *find_command(int argc, char **argv, int from, int *consumed,
                                              bool *partial)
{
    *partial = false;
    for (size_t i = 0; i < N_COMMANDS; i++) {
        int m = match_words(commands[i].name, argc, argv, from);
        if (m == count_words(commands[i].name)) {
            *consumed = m;
            return &commands[i];
        }
        *partial = *partial || m > 0;
    }
    return NULL;
}

/* Lists the commands that start with the words argv[from..from+n). */
static void print_group(FILE *out, int argc, char **argv, int from)
{
    fputs("Commands:\n", out);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (match_words(commands[i].name, argc, argv, from) > 0) {
            fprintf(out, "  roost %-26s %s\n", commands[i].name, commands[i].summary);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_help(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
        print_help(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "--version") == 0 || strcmp(first, "version") == 0) {
        print_version();
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "help") == 0) {
        if (argc == 2) {
            print_help(stdout);
            return CLI_EXIT_OK;
        }
        int consumed = 0;
        bool partial = false;
        const struct cli_command *cmd = find_command(argc, argv, 2, &consumed, &partial);
        if (cmd != NULL) {
            fputs(cmd->usage, stdout);
            return CLI_EXIT_OK;
        }
        if (partial) {
            print_group(stdout, argc, argv, 2);
            return CLI_EXIT_OK;
        }
        fprintf(stderr, "roost: no command '%s'. Try 'roost help'.\n", argv[2]);
        return CLI_EXIT_USAGE;
    }
    int consumed = 0;
    bool partial = false;
    const struct cli_command *cmd = find_command(argc, argv, 1, &consumed, &partial);
    if (cmd == NULL) {
        if (partial) {
            bool help = argc > 2 && (strcmp(argv[argc - 1], "--help") == 0 ||
                                     strcmp(argv[argc - 1], "-h") == 0);
            print_group(help ? stdout : stderr, argc, argv, 1);
            return help ? CLI_EXIT_OK : CLI_EXIT_USAGE;
        }
        fprintf(stderr, "roost: no command '%s'. Try 'roost help'.\n", first);
        return CLI_EXIT_USAGE;
    }
    /* The command sees its last word as argv[0] and its own arguments after it. */
    int skip = consumed - 1;
    return cmd->run(argc - 1 - skip, argv + 1 + skip);
}
