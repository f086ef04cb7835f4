/* SPDX-License-Identifier: MIT */
/* Shared pieces of the `roost` command-line tool: the command table, the options every server
 * command takes (--server, --token, ...), exit codes, error reporting and JSON output. The CLI is
 * built only on the public SDK (include/roost) and src/common. */
#ifndef ROOST_CLI_H
#define ROOST_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roost/roost.h"

/* Exit codes (documented in `roost --help`). */
enum cli_exit {
    CLI_EXIT_OK = 0,
    CLI_EXIT_ERROR = 1,    /* the server refused, or another failure */
    CLI_EXIT_USAGE = 2,    /* bad command line or argument (nothing was sent) */
    CLI_EXIT_CONFLICT = 3, /* not found, lease lost / wrong state, cursor expired */
    CLI_EXIT_CONNECT = 4   /* the server could not be reached (or timed out) */
};

#define CLI_DEFAULT_SERVER "http://127.0.0.1:8080"
#define CLI_MAX_INPUT_BYTES ((size_t)64 * 1024 * 1024)

/* One (sub)command: the words that name it ("admin quarantine list"), its entry point (argv[0]
 * is the last word), a one-line summary and its usage text for --help. */
struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const char *usage;
};

/* Options shared by every command that talks to a server. */
struct cli_common {
    const char *command; /* "ack", "admin quarantine list": used in messages */
    const char *usage;
    const char *server;
    const char *token;
    const char *token_file;
    const char *ca_file;
    const char *key_file; /* request signing (RFC 9421); NULL: $ROOST_KEY_FILE, else unsigned */
    const char *key_id;
    const char *key_alg;
    int64_t timeout_s;
    int pretty; /* -1: when stdout is a terminal */
};

/* Values returned by getopt_long for the shared long options. */
enum cli_opt {
    CLI_OPT_SERVER = 1000,
    CLI_OPT_TOKEN,
    CLI_OPT_TOKEN_FILE,
    CLI_OPT_CACERT,
    CLI_OPT_TIMEOUT,
    CLI_OPT_PRETTY,
    CLI_OPT_COMPACT,
    CLI_OPT_KEY_FILE,
    CLI_OPT_KEY_ID,
    CLI_OPT_KEY_ALG,
    CLI_OPT_FIRST_LOCAL /* commands number their own long-only options from here */
};

#define CLI_COMMON_OPTIONS                                                                         \
    {"server", required_argument, NULL, CLI_OPT_SERVER},                                           \
        {"token", required_argument, NULL, CLI_OPT_TOKEN},                                         \
        {"token-file", required_argument, NULL, CLI_OPT_TOKEN_FILE},                               \
        {"cacert", required_argument, NULL, CLI_OPT_CACERT},                                       \
        {"timeout", required_argument, NULL, CLI_OPT_TIMEOUT},                                     \
        {"pretty", no_argument, NULL, CLI_OPT_PRETTY},                                             \
        {"compact", no_argument, NULL, CLI_OPT_COMPACT},                                           \
        {"key-file", required_argument, NULL, CLI_OPT_KEY_FILE},                                   \
        {"key-id", required_argument, NULL, CLI_OPT_KEY_ID},                                       \
        {"key-alg", required_argument, NULL, CLI_OPT_KEY_ALG},                                     \
    {                                                                                              \
        "help", no_argument, NULL, 'h'                                                             \
    }

/* Text of the shared options, appended to every server command's usage. */
#define CLI_COMMON_HELP                                                                            \
    "Connection options (every server command):\n"                                                 \
    "  --server URL       roostd address (default $ROOST_SERVER, else " CLI_DEFAULT_SERVER ")\n"   \
    "  --token JWT        bearer token (default $ROOST_TOKEN)\n"                                   \
    "  --token-file F     read the token from file F\n"                                            \
    "  --cacert F         trust the CA certificates in PEM file F (https)\n"                       \
    "  --timeout DUR      per-request timeout (default 30s)\n"                                     \
    "  --pretty/--compact indented or one-line JSON (default: indented on a terminal)\n"           \
    "  --key-file F       sign every request (RFC 9421) with the private key in PEM file F, or\n"  \
    "                     the base64 secret in F for hmac-sha256 (default $ROOST_KEY_FILE)\n"      \
    "  --key-id ID        the signing key's registered key id (default $ROOST_KEY_ID)\n"           \
    "  --key-alg ALG      ed25519, ecdsa-p256-sha256, rsa-pss-sha512 or hmac-sha256 (default\n"    \
    "                     $ROOST_KEY_ALG, else implied by the PEM key)\n"                          \
    "  -h, --help         this help\n"

void cli_common_init(struct cli_common *co, const char *command, const char *usage);

/* The shared part of every getopt loop (optstring starting with ':'): handles -h/--help (prints
 * the usage, returns 0), '?' and ':' (unknown option, missing argument: returns 2) and the shared
 * options. Returns -1 when parsing should continue, else the exit code to return. */
int cli_handle_opt(struct cli_common *co, int opt, const char *arg, char **argv);

/* Resolves --server/--token/--token-file and the environment. *file_token_out (free it) holds
 * the token read from a file, *token_out points at it or at argv/environ. Returns an exit code. */
int cli_resolve_endpoint(struct cli_common *co, const char **server_out, const char **token_out,
                         char **file_token_out);

/* Resolves --key-file/--key-id/--key-alg and ROOST_KEY_FILE/ROOST_KEY_ID/ROOST_KEY_ALG: *file_out
 * is NULL when no signing key is configured. Returns an exit code (usage error for a key file
 * without a key id). */
int cli_resolve_signing(struct cli_common *co, const char **file_out, const char **id_out,
                        const char **alg_out);

/* Creates the client from the shared options. Returns an exit code (CLI_EXIT_OK on success). */
int cli_connect(struct cli_common *co, struct roost_client **out);

/* Reports a failed SDK call as "roost: <what>: <message> (<code>)" on stderr and returns the
 * matching exit code. */
int cli_fail(const struct cli_common *co, struct roost_client *c, int rc, const char *what);

/* Maps an rc to an exit code (see enum cli_exit); `sent` tells whether a request went out. */
int cli_exit_code(int rc, bool sent);

/* Reports a usage problem ("roost <command>: <message>" + a pointer to --help); returns 2. */
int cli_usage_error(const struct cli_common *co, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints JSON text (pretty or compact per co->pretty) and a newline on stdout. Text that is not
 * JSON is printed as is. Returns an exit code. */
int cli_print_json(const struct cli_common *co, const char *text, size_t len);
/* Prints the body of the client's last response (nothing when empty). */
int cli_print_last_body(const struct cli_common *co, struct roost_client *c);

/* Prints each event's JSON object on its own line (NDJSON). Returns an exit code. */
int cli_print_ndjson(const struct roost_events *evs);

/* Parses a decimal integer in [min, max]. 0 or -1. */
int cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);
/* Parses a duration into seconds: "3600", "90s", "30m", "1h", "2d", "1w", "1h30m". 0 or -1. */
int cli_parse_duration(const char *s, int64_t *seconds);

/* Reads a whole file ("-" = stdin) of at most max_bytes into a NUL-terminated buffer (caller
 * frees). Returns 0, or -1 with a message in err. */
int cli_read_file(const char *path, size_t max_bytes, char **out, size_t *len, char *err,
                  size_t errlen);

/* Command entry points (cmd_*.c). */
int cmd_token_mint(int argc, char **argv);
int cmd_publish(int argc, char **argv);
int cmd_inbox_read(int argc, char **argv);
int cmd_claim(int argc, char **argv);
int cmd_ack(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_release_all(int argc, char **argv);
int cmd_extend(int argc, char **argv);
int cmd_state(int argc, char **argv);
int cmd_admin_quarantine_list(int argc, char **argv);
int cmd_admin_quarantine_requeue(int argc, char **argv);
int cmd_admin_agents(int argc, char **argv);
int cmd_admin_quarantine_inspect(int argc, char **argv);
int cmd_admin_quarantine_purge(int argc, char **argv);
int cmd_admin_stats(int argc, char **argv);
int cmd_agent_run(int argc, char **argv);
int cmd_inbox_tail(int argc, char **argv);
int cmd_agent_status(int argc, char **argv);
int cmd_keys_add(int argc, char **argv);
int cmd_keys_list(int argc, char **argv);
int cmd_keys_revoke(int argc, char **argv);

extern const char cmd_token_mint_usage[];
extern const char cmd_publish_usage[];
extern const char cmd_inbox_read_usage[];
extern const char cmd_claim_usage[];
extern const char cmd_ack_usage[];
extern const char cmd_release_usage[];
extern const char cmd_release_all_usage[];
extern const char cmd_extend_usage[];
extern const char cmd_state_usage[];
extern const char cmd_admin_quarantine_list_usage[];
extern const char cmd_admin_quarantine_requeue_usage[];
extern const char cmd_admin_agents_usage[];
extern const char cmd_admin_quarantine_inspect_usage[];
extern const char cmd_admin_quarantine_purge_usage[];
extern const char cmd_admin_stats_usage[];
extern const char cmd_agent_run_usage[];
extern const char cmd_inbox_tail_usage[];
extern const char cmd_agent_status_usage[];
extern const char cmd_keys_add_usage[];
extern const char cmd_keys_list_usage[];
extern const char cmd_keys_revoke_usage[];

#endif
