/* SPDX-License-Identifier: MIT */
/* Shared pieces of the `roost` command-line tool: the shape of the command table (commands.c),
 * the one option parser that reads it (parse.c), what is generated from it (help.c: --help, the
 * listings the man page check reads, the shell completion scripts), exit codes, error reporting
 * and JSON output. The CLI is built only on the public SDK (include/roost) and src/common. */
#ifndef ROOST_CLI_H
#define ROOST_CLI_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "common/limits.h"
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
/* Most options one command takes, its own and the shared ones together. */
#define CLI_MAX_OPTIONS 32
/* No upper bound on the positional arguments (ack's pairs). */
#define CLI_ARGS_ANY (-1)

/* What an option's value is; the parser checks INT, DURATION and CHOICE values before the
 * command runs. */
enum cli_kind {
    CLI_FLAG,     /* no value */
    CLI_STRING,   /* any text */
    CLI_INT,      /* a decimal integer in [min, max] */
    CLI_DURATION, /* "90", "90s", "5m", "1h30m", ... in seconds, in [min, max] */
    CLI_CHOICE    /* one word of `choices` */
};

#define CLI_REQUIRED 1u /* the command refuses to run without it */
#define CLI_MULTI 2u    /* may be repeated, every value is kept (else the last one wins) */

/* One option of one command (or of the shared groups below). */
struct cli_option {
    const char *name; /* long name without "--" */
    char short_name;  /* 0: none */
    enum cli_kind kind;
    const char *arg;  /* the value's name in help ("DUR"); NULL for a flag */
    const char *help; /* help text; '\n' starts a continuation line */
    const char *env;  /* environment variable read when the option is not given, or NULL */
    unsigned flags;   /* CLI_REQUIRED, CLI_MULTI */
    int64_t min, max; /* CLI_INT, CLI_DURATION */
    /* What a bad value is told ("--limit: expected a count >= 1, got 'x'"); CHOICE: generated. */
    const char *expect;
    /* Space-separated words: the valid values of a CHOICE, a completion hint for a STRING. */
    const char *choices;
};

/* The shared option groups a command takes (cli_command.common). */
#define CLI_COMMON_CONNECT 1u /* --server --token --token-file --cacert --timeout */
#define CLI_COMMON_OUTPUT 2u  /* --pretty --compact */
#define CLI_COMMON_SIGN 4u    /* --key-file --key-id --key-alg */
#define CLI_COMMON_ALL (CLI_COMMON_CONNECT | CLI_COMMON_OUTPUT | CLI_COMMON_SIGN)

struct cli_args;

/* One (sub)command: the words that name it ("admin quarantine list"), its handler, its
 * options and the text --help shows. */
struct cli_command {
    const char *name;
    int (*run)(struct cli_args *a);
    const char *summary;  /* one line for `roost --help` */
    const char *synopsis; /* after "Usage: "; NULL: generated from the options and `args` */
    const char *args;     /* the positional arguments in the synopsis, or NULL */
    int min_args, max_args;
    const char *arg_choices;          /* completion hint for the positional arguments, or NULL */
    const char *description;          /* the paragraph(s) after the usage line */
    const struct cli_option *options; /* its own, ended by an entry without a name */
    unsigned common;                  /* CLI_COMMON_* groups */
    const char *notes;                /* printed after the options, or NULL */
};

extern const struct cli_command cli_commands[];
extern const size_t cli_n_commands;
/* The shared groups, each ended by an entry without a name. */
extern const struct cli_option cli_connect_options[];
extern const struct cli_option cli_output_options[];
extern const struct cli_option cli_sign_options[];

/* The value of one option after parsing. */
struct cli_value {
    const char *str;   /* the last value given on the command line; NULL when not given */
    int64_t num;       /* CLI_INT, CLI_DURATION: str parsed */
    int count;         /* times given */
    int order;         /* position of the last occurrence among all options given */
    const char **list; /* CLI_MULTI: every value given, `count` of them (heap) */
};

/* A parsed command line: the command, its options (its own, then the shared groups) with their
 * values, and the positional arguments. */
struct cli_args {
    const struct cli_command *cmd;
    const struct cli_option *opts[CLI_MAX_OPTIONS];
    struct cli_value vals[CLI_MAX_OPTIONS];
    size_t n_opts;
    int argc; /* positional arguments, in order */
    char **argv;
    int pretty; /* --pretty/--compact, the last one given; -1 when neither (a terminal decides) */
};

/* Collects cmd's options into *out (cmd's own first, then its shared groups); returns how many.
 * At most CLI_MAX_OPTIONS (a test checks the table). */
size_t cli_command_options(const struct cli_command *cmd, const struct cli_option **out);

/* Parses argv (argv[0] is the command's last word) against the table entry: options through
 * getopt_long, then the count of positional arguments and the required options. Returns -1
 * when the command should run, else the exit code to return: CLI_EXIT_OK after printing --help,
 * CLI_EXIT_USAGE after reporting an unknown option, a missing or bad value, a wrong number of
 * arguments or a missing required option on stderr. Call cli_args_cleanup() in every case.
 * argv is permuted (options first), as getopt_long does. */
int cli_parse(struct cli_args *a, const struct cli_command *cmd, int argc, char **argv);
void cli_args_cleanup(struct cli_args *a);

/* Value accessors by long name; naming an option the command does not have is a programmer
 * error (assert). cli_str: the value given, else the option's environment variable when set and
 * not empty, else NULL. cli_given: given on the command line (not from the environment). */
const char *cli_str(const struct cli_args *a, const char *name);
bool cli_given(const struct cli_args *a, const char *name);
bool cli_flag(const struct cli_args *a, const char *name);
int64_t cli_num(const struct cli_args *a, const char *name, int64_t dflt);
/* CLI_MULTI: every value given, in order; *n is their number. */
const char *const *cli_list(const struct cli_args *a, const char *name, size_t *n);

/* Finds the command named by the words argv[from..]: *consumed is how many words name it.
 * NULL when none; *partial then tells whether the words start some command's name without
 * completing it ("admin", "admin quarantine"). */
const struct cli_command *cli_find_command(int argc, char **argv, int from, int *consumed,
                                           bool *partial);

/* Generated text (help.c). */
void cli_print_help(FILE *out);
void cli_print_usage(FILE *out, const struct cli_command *cmd);
/* Lists the commands whose names start with argv[from..]. */
void cli_print_group(FILE *out, int argc, char **argv, int from);
/* One command name per line. */
void cli_list_commands(FILE *out);
/* One line per option of every command: COMMAND<TAB>--NAME<TAB>-S<TAB>ARG<TAB>ENV ("-" when
 * empty). */
void cli_list_options(FILE *out);
/* The completion script for "bash" or "zsh"; returns -1 for another shell. */
int cli_print_completion(FILE *out, const char *shell);

/* Resolves --server/--token/--token-file and the environment. *file_token_out (free it) holds
 * the token read from a file, *token_out points at it or at argv/environ. Returns an exit code. */
int cli_resolve_endpoint(const struct cli_args *a, const char **server_out, const char **token_out,
                         char **file_token_out);

/* A token that follows its source while a command runs (`agent run`): --token-file, re-read
 * when the file changes (size, mtime, inode) or the token enters the last third of its life
 * (at most its last minute), or --token-command, run again then (every 5 minutes for a token
 * without an expiry). Its callback is a roost_token_fn, thread-safe. */
struct cli_token_source {
    pthread_mutex_t mu;
    const char *file;    /* borrowed; NULL with command */
    const char *command; /* borrowed; NULL with file */
    char token[ROOST_TOKEN_MAX_BYTES + 1];
    struct timespec mtime; /* of the file when read */
    off_t size;
    ino_t ino;
    int64_t exp_s, iat_s; /* of the token (JWT claims; 0: none) */
    int64_t fetched_s, tried_s;
    /* Told why a refresh failed (the old token is kept); optional. */
    void (*on_error)(void *ctx, const char *msg);
    void *on_error_ctx;
};
/* Fetches the first token. Returns 0, or -1 with a message in err. */
int cli_token_source_init(struct cli_token_source *ts, const char *file, const char *command,
                          char *err, size_t errlen);
void cli_token_source_cleanup(struct cli_token_source *ts);
/* A long-running command's token source: *follow says whether the token comes from --token-file
 * or --token-command (and not --token); then ts is initialised with the first token (clean it up
 * when done). Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after printing "roost: <what>: <why>". */
int cli_token_source_follow(const struct cli_args *a, const char *what, struct cli_token_source *ts,
                            bool *follow);
/* The roost_token_fn of a source (arg: the struct cli_token_source). */
int cli_token_source_cb(void *arg, char *buf, size_t cap);
/* Runs COMMAND through /bin/sh; its stdout, trailing whitespace trimmed, is the token (*out, the
 * caller frees). Returns 0, or -1 with a message in err (a non-zero exit, no output). */
int cli_token_command_run(const char *command, char **out, char *err, size_t errlen);
/* Decodes the claims of a JWT without verifying it. Returns 0 and *out (decref it), or -1 when
 * the token is no JWT. */
int cli_jwt_claims(const char *token, json_t **out);

/* Resolves --key-file/--key-id/--key-alg and ROOST_KEY_FILE/ROOST_KEY_ID/ROOST_KEY_ALG: *file_out
 * is NULL when no signing key is configured. Returns an exit code (usage error for a key file
 * without a key id). */
int cli_resolve_signing(const struct cli_args *a, const char **file_out, const char **id_out,
                        const char **alg_out);

/* Creates the client from the shared options. Returns an exit code (CLI_EXIT_OK on success). */
int cli_connect(const struct cli_args *a, struct roost_client **out);

/* Reports a failed SDK call as "roost: <what>: <message> (<code>)" on stderr and returns the
 * matching exit code. */
int cli_fail(const struct cli_args *a, struct roost_client *c, int rc, const char *what);

/* Maps an rc to an exit code (see enum cli_exit); `sent` tells whether a request went out. */
int cli_exit_code(int rc, bool sent);

/* Reports a usage problem ("roost <command>: <message>" + a pointer to --help); returns 2. */
int cli_usage_error(const struct cli_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints JSON text (pretty or compact per a->pretty) and a newline on stdout. Text that is not
 * JSON is printed as is. Returns an exit code. */
int cli_print_json(const struct cli_args *a, const char *text, size_t len);
/* Prints the body of the client's last response (nothing when empty). */
int cli_print_last_body(const struct cli_args *a, struct roost_client *c);

/* --output of the list commands: true for "table", false for "json"; not given: a table when
 * stdout is a terminal. */
bool cli_output_table(const struct cli_args *a);
/* Prints the list answer `text` (JSON) as a table: one row per element of the array under `key`,
 * the NULL-ended `columns` ("field" or "field:TITLE"), then the next page's --next/--after. An
 * answer without that array is printed as JSON. Returns an exit code. */
int cli_print_table(const struct cli_args *a, const char *text, size_t len, const char *key,
                    const char *const *columns);
/* The client's last response, a list answer, as --output asks (cli_print_table or
 * cli_print_json). */
int cli_print_list(const struct cli_args *a, struct roost_client *c, const char *key,
                   const char *const *columns);

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

/* Command handlers (cmd_*.c), named in the table. */
int cmd_token_mint(struct cli_args *a);
int cmd_publish(struct cli_args *a);
int cmd_inbox_read(struct cli_args *a);
int cmd_inbox_peek(struct cli_args *a);
int cmd_inbox_tail(struct cli_args *a);
int cmd_claim(struct cli_args *a);
int cmd_ack(struct cli_args *a);
int cmd_release(struct cli_args *a);
int cmd_release_all(struct cli_args *a);
int cmd_extend(struct cli_args *a);
int cmd_state(struct cli_args *a);
int cmd_admin_quarantine_list(struct cli_args *a);
int cmd_admin_quarantine_requeue(struct cli_args *a);
int cmd_admin_quarantine_inspect(struct cli_args *a);
int cmd_admin_quarantine_purge(struct cli_args *a);
int cmd_admin_agents(struct cli_args *a);
int cmd_admin_stats(struct cli_args *a);
int cmd_admin_events_show(struct cli_args *a);
int cmd_admin_events_find(struct cli_args *a);
int cmd_agent_run(struct cli_args *a);
int cmd_agent_status(struct cli_args *a);
int cmd_mcp(struct cli_args *a);
int cmd_keys_add(struct cli_args *a);
int cmd_keys_generate(struct cli_args *a);
int cmd_whoami(struct cli_args *a);
int cmd_keys_list(struct cli_args *a);
int cmd_keys_revoke(struct cli_args *a);
/* The device `roost login` saved, once a command found no token and opened it (util.c). */
extern struct roost_device *cli_device;
int cli_device_open(const struct cli_args *a);
/* cmd_login.c */
int cmd_login(struct cli_args *a);
/* cmd_devices.c */
int cmd_admin_devices_list(struct cli_args *a);
int cmd_admin_devices_approve(struct cli_args *a);
int cmd_admin_devices_deny(struct cli_args *a);
int cmd_admin_devices_revoke(struct cli_args *a);
int cmd_completion(struct cli_args *a);
int cmd_callbacks_add(struct cli_args *a);
int cmd_callbacks_list(struct cli_args *a);
int cmd_callbacks_rm(struct cli_args *a);
int cmd_admin_endpoints_list(struct cli_args *a);
int cmd_admin_endpoints_inspect(struct cli_args *a);
int cmd_admin_endpoints_disable(struct cli_args *a);
int cmd_admin_endpoints_enable(struct cli_args *a);
int cmd_admin_endpoints_attempts(struct cli_args *a);
int cmd_admin_endpoints_replay(struct cli_args *a);
int cmd_admin_sources_add(struct cli_args *a);
int cmd_admin_sources_list(struct cli_args *a);
int cmd_admin_sources_show(struct cli_args *a);
int cmd_admin_sources_rm(struct cli_args *a);
int cmd_admin_sources_rotate(struct cli_args *a);
int cmd_admin_sources_receipts(struct cli_args *a);
/* Shared by the commands built on roost_client_request (cmd_callbacks.c): ids that go into a
 * path or query as they are ([A-Za-z0-9._:-]{1,128}); one request with its answer printed (JSON);
 * one GET of a list printed as --output asks; "&name=value" appended when value is not NULL. */
bool cli_safe_id(const char *s);
int cli_call(struct cli_args *a, const char *method, const char *path, const char *body,
             const char *what);
int cli_call_list(struct cli_args *a, const char *path, const char *what, const char *key,
                  const char *const *columns);
void cli_add_query(char *path, size_t cap, const char *name, const char *value);
/* A listing's --limit (when given) and --next (checked: a usage error) appended to path. Returns
 * an exit code. */
int cli_add_page(struct cli_args *a, char *path, size_t cap);
/* "<base><argv[0]><suffix>" into path[cap] when argv[0] is a safe id; else a usage error that
 * says `what` ("SOURCE_ID: expected a source id"). Returns an exit code. */
int cli_id_path(struct cli_args *a, const char *base, const char *what, const char *suffix,
                char *path, size_t cap);
/* The secret of --secret or --secret-file (trailing newline and spaces dropped) into *out
 * (malloc'd: the caller wipes and frees it), NULL when neither is given; `what` names the command
 * in errors. Returns an exit code (both given, an unreadable file, no memory). */
int cli_secret_arg(struct cli_args *a, const char *what, char **out);

#endif
