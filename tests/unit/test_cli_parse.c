/* SPDX-License-Identifier: MIT */
/* The CLI's command table and its one option parser (src/cli/commands.c, parse.c): the table is
 * consistent (no clashing names, every value option documented and checked), and the parser
 * reports unknown options, missing values, bad values, missing required options and wrong
 * argument counts with exit 2, keeps the last of a repeated option (every one for a repeatable
 * one), falls back to the environment, and lets the last of --pretty/--compact win. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "harness/check.h"

#include "common/banned.h"

static const struct cli_command *command(const char *name)
{
    for (size_t i = 0; i < cli_n_commands; i++) {
        if (strcmp(cli_commands[i].name, name) == 0) {
            return &cli_commands[i];
        }
    }
    return NULL;
}

/* What one parse did: its result and what it wrote on stderr and stdout. */
struct parsed {
    struct cli_args a;
    int rc;
    char err[4096];
    char out[16384];
};

static void read_back(int fd, char *buf, size_t len)
{
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(fd);
}

/* Parses `roost NAME ARGS...` (NULL-ended) with stderr and stdout captured. The caller cleans
 * p->a up. */
static void parse(struct parsed *p, const char *name, ...)
{
    static char *argv[64];
    const struct cli_command *cmd = command(name);
    const char *last = strrchr(name, ' ');
    int argc = 0;
    argv[argc++] = (char *)(last != NULL ? last + 1 : name);
    va_list ap;
    va_start(ap, name);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL && argc < 63;) {
        argv[argc++] = (char *)s;
    }
    va_end(ap);
    argv[argc] = NULL;
    char err_path[] = "/tmp/test_cli_parse_err_XXXXXX",
         out_path[] = "/tmp/test_cli_parse_out_XXXXXX";
    int err_fd = mkstemp(err_path), out_fd = mkstemp(out_path);
    unlink(err_path);
    unlink(out_path);
    fflush(stderr);
    fflush(stdout);
    int saved_err = dup(STDERR_FILENO), saved_out = dup(STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    p->rc = cli_parse(&p->a, cmd, argc, argv);
    fflush(stderr);
    fflush(stdout);
    dup2(saved_err, STDERR_FILENO);
    dup2(saved_out, STDOUT_FILENO);
    close(saved_err);
    close(saved_out);
    read_back(err_fd, p->err, sizeof p->err);
    read_back(out_fd, p->out, sizeof p->out);
}

/* ---- the table ----------------------------------------------------------------------------- */

static void test_cli_table_is_consistent(void)
{
    for (size_t c = 0; c < cli_n_commands; c++) {
        const struct cli_command *cmd = &cli_commands[c];
        CHECK(cmd->run != NULL && cmd->summary != NULL && cmd->description != NULL);
        /* Positional arguments are named in the help exactly when the command takes some. */
        CHECK((cmd->args != NULL) == (cmd->max_args != 0));
        CHECK(cmd->max_args == CLI_ARGS_ANY || cmd->min_args <= cmd->max_args);
        for (size_t d = 0; d < cli_n_commands; d++) {
            /* No command name is the first words of another: dispatch takes the first match. */
            size_t l = strlen(cli_commands[d].name);
            CHECK(c == d || strncmp(cmd->name, cli_commands[d].name, l) != 0 ||
                  (cmd->name[l] != '\0' && cmd->name[l] != ' '));
        }
        /* Counted here, not through cli_command_options(), which stops at the maximum. */
        size_t total = 0;
        const struct cli_option *groups[] = {
            cmd->options, (cmd->common & CLI_COMMON_CONNECT) ? cli_connect_options : NULL,
            (cmd->common & CLI_COMMON_OUTPUT) ? cli_output_options : NULL,
            (cmd->common & CLI_COMMON_SIGN) ? cli_sign_options : NULL};
        for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
            for (const struct cli_option *o = groups[g]; o != NULL && o->name != NULL; o++) {
                total++;
            }
        }
        CHECK(total <= CLI_MAX_OPTIONS);
        const struct cli_option *opts[CLI_MAX_OPTIONS];
        size_t n = cli_command_options(cmd, opts);
        CHECK_EQ(n, total);
        for (size_t i = 0; i < n; i++) {
            const struct cli_option *o = opts[i];
            CHECK(o->help != NULL && o->help[0] != '\0');
            CHECK(strcmp(o->name, "help") != 0 && o->short_name != 'h');
            CHECK((o->kind == CLI_FLAG) == (o->arg == NULL));
            CHECK(o->kind != CLI_FLAG || (o->flags & CLI_REQUIRED) == 0);
            CHECK((o->kind != CLI_INT && o->kind != CLI_DURATION) ||
                  (o->expect != NULL && o->min <= o->max));
            CHECK(o->kind != CLI_CHOICE || o->choices != NULL);
            for (size_t k = i + 1; k < n; k++) {
                CHECK(strcmp(o->name, opts[k]->name) != 0);
                CHECK(o->short_name == 0 || o->short_name != opts[k]->short_name);
            }
        }
    }
}

/* Every command the tool had before the table still has its entry. */
static void test_cli_table_names_every_command(void)
{
    static const char *const names[] = {"token mint",
                                        "publish",
                                        "inbox read",
                                        "inbox peek",
                                        "inbox tail",
                                        "claim",
                                        "ack",
                                        "release",
                                        "extend",
                                        "release-all",
                                        "state",
                                        "admin quarantine list",
                                        "admin quarantine requeue",
                                        "admin quarantine inspect",
                                        "admin quarantine purge",
                                        "admin agents",
                                        "admin stats",
                                        "admin events show",
                                        "admin events find",
                                        "keys add",
                                        "keys generate",
                                        "whoami",
                                        "keys list",
                                        "keys revoke",
                                        "agent run",
                                        "mcp",
                                        "agent status",
                                        "callbacks add",
                                        "callbacks list",
                                        "callbacks rm",
                                        "admin endpoints list",
                                        "admin endpoints inspect",
                                        "admin endpoints disable",
                                        "admin endpoints enable",
                                        "admin endpoints attempts",
                                        "admin endpoints replay",
                                        "admin sources add",
                                        "admin sources list",
                                        "admin sources show",
                                        "admin sources rm",
                                        "admin sources rotate",
                                        "admin sources receipts",
                                        "completion",
                                        "login",
                                        "admin devices list",
                                        "admin devices approve",
                                        "admin devices deny",
                                        "admin devices revoke"};
    CHECK_EQ(cli_n_commands, sizeof names / sizeof names[0]);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK(command(names[i]) != NULL);
    }
}

static void test_cli_find_command_by_words(void)
{
    char *argv[] = {"roost", "admin", "quarantine", "list", "--limit", "3", NULL};
    int consumed = 0;
    bool partial = false;
    const struct cli_command *cmd = cli_find_command(6, argv, 1, &consumed, &partial);
    CHECK(cmd != NULL && strcmp(cmd->name, "admin quarantine list") == 0);
    CHECK_EQ(consumed, 3);
    char *group[] = {"roost", "admin", "quarantine", NULL};
    CHECK(cli_find_command(3, group, 1, &consumed, &partial) == NULL);
    CHECK(partial);
    char *none[] = {"roost", "frobnicate", NULL};
    CHECK(cli_find_command(2, none, 1, &consumed, &partial) == NULL);
    CHECK(!partial);
}

/* ---- the parser ---------------------------------------------------------------------------- */

static void test_cli_parse_reads_options_and_arguments(void)
{
    struct parsed p;
    parse(&p, "release", "e1", "--agent", "a1", "--delay", "1m30s", "--reason", "poison", "l1",
          NULL);
    CHECK_EQ(p.rc, -1);
    CHECK_STREQ(cli_str(&p.a, "agent"), "a1");
    CHECK_EQ(cli_num(&p.a, "delay", 0), 90);
    CHECK_STREQ(cli_str(&p.a, "reason"), "poison");
    CHECK(cli_str(&p.a, "error") == NULL);
    CHECK_EQ(cli_num(&p.a, "timeout", 7), 7);
    /* Options and arguments mix in any order; the arguments keep theirs. */
    CHECK_EQ(p.a.argc, 2);
    CHECK_STREQ(p.a.argv[0], "e1");
    CHECK_STREQ(p.a.argv[1], "l1");
    CHECK_STREQ(p.err, "");
    cli_args_cleanup(&p.a);

    parse(&p, "claim", "-a", "a1", "--ndjson", "--", NULL);
    CHECK_EQ(p.rc, -1);
    CHECK_STREQ(cli_str(&p.a, "agent"), "a1");
    CHECK(cli_flag(&p.a, "ndjson"));
    CHECK(!cli_flag(&p.a, "pretty"));
    cli_args_cleanup(&p.a);
}

static void test_cli_parse_rejects_unknown_option(void)
{
    struct parsed p;
    parse(&p, "claim", "--agent", "a1", "--bogus", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "roost claim: unknown option --bogus") != NULL);
    CHECK(strstr(p.err, "Try 'roost claim --help'.") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "claim", "-z", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "unknown option -z") != NULL);
    cli_args_cleanup(&p.a);

    /* A shared option a command does not take is unknown there. */
    parse(&p, "token mint", "--tenant", "t", "--scope", "s", "--server", "http://x", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "unknown option --server") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "claim", "--agent", "a1", "--ndjson=yes", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "option --ndjson=yes takes no value") != NULL);
    cli_args_cleanup(&p.a);
}

static void test_cli_parse_rejects_missing_value(void)
{
    struct parsed p;
    parse(&p, "claim", "--agent", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "option --agent needs a value") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "publish", "-a", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "option -a needs a value") != NULL);
    cli_args_cleanup(&p.a);
}

static void test_cli_parse_checks_values(void)
{
    struct parsed p;
    parse(&p, "claim", "--agent", "a", "--limit", "0", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "--limit: expected a count >= 1, got '0'") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "claim", "--agent", "a", "--wait", "2h", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "--wait: expected a duration up to 1h, got '2h'") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "admin agents", "--sort", "sideways", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "--sort: expected agent, depth or age, got 'sideways'") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "publish", "--agent", "a", "--priority", "101", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "--priority: expected -100..100, got '101'") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "claim", "--agent", "a", "--timeout", "1x", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "--timeout: expected a duration of 1s..1d, got '1x'") != NULL);
    cli_args_cleanup(&p.a);
}

static void test_cli_parse_requires_options_and_arguments(void)
{
    struct parsed p;
    parse(&p, "agent run", "--agent", "a", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "--agent, --state-dir and --exec are required") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "state", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "--agent is required") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "extend", "--agent", "a", "--lease", "30", "e1", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "expected EVENT_ID LEASE_TOKEN") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "keys revoke", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "expected one KEY_ID") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "state", "--agent", "a", "extra", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "unexpected argument 'extra'") != NULL);
    cli_args_cleanup(&p.a);

    parse(&p, "admin quarantine purge", "e1", "e2", NULL);
    CHECK_EQ(p.rc, CLI_EXIT_USAGE);
    CHECK(strstr(p.err, "unexpected argument 'e2'") != NULL);
    cli_args_cleanup(&p.a);
}

static void test_cli_parse_repeated_option(void)
{
    struct parsed p;
    /* The last value wins... */
    parse(&p, "claim", "--agent", "a1", "--limit", "5", "--limit", "7", "--agent", "a2", NULL);
    CHECK_EQ(p.rc, -1);
    CHECK_EQ(cli_num(&p.a, "limit", 0), 7);
    CHECK_STREQ(cli_str(&p.a, "agent"), "a2");
    cli_args_cleanup(&p.a);

    /* ... except for a repeatable option, which keeps them all in order. */
    parse(&p, "publish", "--agent", "a1", "-a", "a2", "--agent=a3", "--payload", "{}", NULL);
    CHECK_EQ(p.rc, -1);
    size_t n = 0;
    const char *const *to = cli_list(&p.a, "agent", &n);
    CHECK_EQ(n, 3);
    if (n == 3) {
        CHECK_STREQ(to[0], "a1");
        CHECK_STREQ(to[1], "a2");
        CHECK_STREQ(to[2], "a3");
    }
    cli_args_cleanup(&p.a);

    /* --pretty and --compact: the last one given decides. */
    parse(&p, "state", "--agent", "a", "--pretty", "--compact", NULL);
    CHECK_EQ(p.a.pretty, 0);
    cli_args_cleanup(&p.a);
    parse(&p, "state", "--agent", "a", "--compact", "--pretty", NULL);
    CHECK_EQ(p.a.pretty, 1);
    cli_args_cleanup(&p.a);
    parse(&p, "state", "--agent", "a", NULL);
    CHECK_EQ(p.a.pretty, -1);
    cli_args_cleanup(&p.a);
}

static void test_cli_parse_env_fallback(void)
{
    struct parsed p;
    setenv("ROOST_SERVER", "http://env.example:1", 1);
    setenv("ROOST_DATA_DIR", "", 1);
    parse(&p, "state", "--agent", "a", NULL);
    CHECK_EQ(p.rc, -1);
    CHECK_STREQ(cli_str(&p.a, "server"), "http://env.example:1");
    CHECK(!cli_given(&p.a, "server"));
    cli_args_cleanup(&p.a);

    /* The command line beats the environment. */
    parse(&p, "state", "--agent", "a", "--server", "http://argv.example:2", NULL);
    CHECK_STREQ(cli_str(&p.a, "server"), "http://argv.example:2");
    CHECK(cli_given(&p.a, "server"));
    cli_args_cleanup(&p.a);

    /* An empty variable counts as unset. */
    parse(&p, "token mint", "--tenant", "t", "--scope", "s", NULL);
    CHECK_EQ(p.rc, -1);
    CHECK(cli_str(&p.a, "data-dir") == NULL);
    cli_args_cleanup(&p.a);
    unsetenv("ROOST_SERVER");
    unsetenv("ROOST_DATA_DIR");
}

static void test_cli_parse_help_for_every_command(void)
{
    for (size_t c = 0; c < cli_n_commands; c++) {
        struct parsed p;
        /* --help wins over missing required options and arguments. */
        parse(&p, cli_commands[c].name, "--help", NULL);
        CHECK_EQ(p.rc, CLI_EXIT_OK);
        char want[128];
        snprintf(want, sizeof want, "Usage: roost %s", cli_commands[c].name);
        CHECK(strncmp(p.out, want, strlen(want)) == 0);
        CHECK(strstr(p.out, "-h, --help") != NULL);
        /* Every option of the command is in its help. */
        for (size_t i = 0; i < p.a.n_opts; i++) {
            char opt[80];
            snprintf(opt, sizeof opt, "--%s", p.a.opts[i]->name);
            CHECK(strstr(p.out, opt) != NULL);
        }
        CHECK_STREQ(p.err, "");
        cli_args_cleanup(&p.a);
    }
}

int main(void)
{
    RUN(test_cli_table_is_consistent);
    RUN(test_cli_table_names_every_command);
    RUN(test_cli_find_command_by_words);
    RUN(test_cli_parse_reads_options_and_arguments);
    RUN(test_cli_parse_rejects_unknown_option);
    RUN(test_cli_parse_rejects_missing_value);
    RUN(test_cli_parse_checks_values);
    RUN(test_cli_parse_requires_options_and_arguments);
    RUN(test_cli_parse_repeated_option);
    RUN(test_cli_parse_env_fallback);
    RUN(test_cli_parse_help_for_every_command);
    return check_summary();
}
