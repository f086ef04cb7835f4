/* SPDX-License-Identifier: MIT */
/* Text generated from the command table: `roost --help`, `roost CMD --help`, and the listings
 * (--list-commands, --list-options) the man page test compares with doc/man/roost.1. */
#include <string.h>

#include "cli/cli.h"

#include "common/banned.h"

/* Synopsis lines wrap before SYNOPSIS_COLUMNS, descriptions before TEXT_COLUMNS. */
#define SYNOPSIS_COLUMNS 92
#define TEXT_COLUMNS 90

void cli_print_help(FILE *out)
{
    fputs("Usage: roost <command> [options] [arguments]\n"
          "\n"
          "The Roost command-line tool: publish events, read and work an agent's inbox, and\n"
          "operate a roostd. Every command prints the server's JSON answer on stdout.\n"
          "\n"
          "Commands:\n",
          out);
    for (size_t i = 0; i < cli_n_commands; i++) {
        fprintf(out, "  %-26s %s\n", cli_commands[i].name, cli_commands[i].summary);
    }
    fputs("  help [COMMAND]             this help, or a command's\n"
          "  version, --version         print the version (and, with --server URL or\n"
          "                             ROOST_SERVER, the roostd answering there)\n"
          "\n"
          "Environment:\n",
          out);
    /* Every environment default: the shared options' first, then each command's own. */
    const struct cli_option *groups[] = {cli_connect_options, cli_output_options, cli_sign_options};
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        for (const struct cli_option *o = groups[g]; o->name != NULL; o++) {
            if (o->env != NULL) {
                fprintf(out, "  %-15s default for --%s\n", o->env, o->name);
            }
        }
    }
    for (size_t c = 0; c < cli_n_commands; c++) {
        for (const struct cli_option *o = cli_commands[c].options; o->name != NULL; o++) {
            if (o->env != NULL) {
                fprintf(out, "  %-15s default for '%s --%s'\n", o->env, cli_commands[c].name,
                        o->name);
            }
        }
    }
    fputs("\n"
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

/* "-a, --agent A" */
static int option_left(const struct cli_option *o, char *buf, size_t len)
{
    char shortpart[8] = "";
    if (o->short_name != 0) {
        snprintf(shortpart, sizeof shortpart, "-%c, ", o->short_name);
    }
    return snprintf(buf, len, "%s--%s%s%s", shortpart, o->name, o->arg != NULL ? " " : "",
                    o->arg != NULL ? o->arg : "");
}

/* Prints options aligned in two columns; continuation lines of a help text ('\n') are indented
 * to the second column. */
static void print_options(FILE *out, const struct cli_option *const *opts, size_t n, int width,
                          bool help)
{
    char left[96];
    for (size_t i = 0; i < n; i++) {
        option_left(opts[i], left, sizeof left);
        fprintf(out, "  %-*s  ", width, left);
        for (const char *p = opts[i]->help; *p != '\0';) {
            size_t ll = strcspn(p, "\n");
            fprintf(out, "%.*s\n", (int)ll, p);
            p += ll;
            if (*p == '\n' && *++p != '\0') {
                fprintf(out, "  %-*s  ", width, "");
            }
        }
    }
    if (help) {
        fprintf(out, "  %-*s  this help\n", width, "-h, --help");
    }
}

/* Appends one synopsis word, wrapping under the first argument. */
static void synopsis_word(FILE *out, const char *word, int *col, int indent)
{
    int wl = (int)strlen(word);
    if (*col + 1 + wl > SYNOPSIS_COLUMNS) {
        fprintf(out, "\n%*s", indent, "");
        *col = indent;
    } else {
        fputc(' ', out);
        (*col)++;
    }
    fputs(word, out);
    *col += wl;
}

/* Prints text with its lines wrapped at spaces before TEXT_COLUMNS; '\n' ends a line. */
static void print_wrapped(FILE *out, const char *text)
{
    for (const char *line = text; *line != '\0';) {
        size_t len = strcspn(line, "\n");
        while (len > TEXT_COLUMNS) {
            size_t cut = TEXT_COLUMNS;
            while (cut > 0 && line[cut] != ' ') {
                cut--;
            }
            if (cut == 0) {
                break; /* one word longer than a line: printed whole */
            }
            fprintf(out, "%.*s\n", (int)cut, line);
            line += cut + 1;
            len -= cut + 1;
        }
        fprintf(out, "%.*s\n", (int)len, line);
        line += len;
        line += *line == '\n';
    }
}

/* "roost claim --agent A [--limit N] ..." from the command's own options and arguments. */
static void print_synopsis(FILE *out, const struct cli_command *cmd)
{
    int col = fprintf(out, "Usage: roost %s", cmd->name);
    int indent = col + 1;
    char word[128];
    for (const struct cli_option *o = cmd->options; o->name != NULL; o++) {
        bool req = (o->flags & CLI_REQUIRED) != 0;
        snprintf(word, sizeof word, "%s--%s%s%s%s", req ? "" : "[", o->name,
                 o->arg != NULL ? " " : "", o->arg != NULL ? o->arg : "", req ? "" : "]");
        synopsis_word(out, word, &col, indent);
    }
    if (cmd->args != NULL) {
        synopsis_word(out, cmd->args, &col, indent);
    }
    fputc('\n', out);
}

void cli_print_usage(FILE *out, const struct cli_command *cmd)
{
    if (cmd->synopsis != NULL) {
        fprintf(out, "Usage: %s\n", cmd->synopsis);
    } else {
        print_synopsis(out, cmd);
    }
    fputc('\n', out);
    print_wrapped(out, cmd->description);
    fputc('\n', out);
    const struct cli_option *opts[CLI_MAX_OPTIONS];
    size_t n = cli_command_options(cmd, opts), n_own = 0;
    while (cmd->options[n_own].name != NULL) {
        n_own++;
    }
    /* Output options alone (no server) are listed with the command's own. */
    char left[96];
    int width = (int)strlen("-h, --help");
    for (size_t i = 0; i < n; i++) {
        int w = option_left(opts[i], left, sizeof left);
        width = w > width ? w : width;
    }
    bool connects = (cmd->common & CLI_COMMON_CONNECT) != 0;
    fputs("Options:\n", out);
    print_options(out, opts, connects ? n_own : n, width, true);
    if (connects) {
        fputs("\nConnection options (every server command):\n", out);
        print_options(out, opts + n_own, n - n_own, width, false);
    }
    if (cmd->notes != NULL) {
        fprintf(out, "\n%s", cmd->notes);
    }
}

void cli_list_commands(FILE *out)
{
    for (size_t i = 0; i < cli_n_commands; i++) {
        fprintf(out, "%s\n", cli_commands[i].name);
    }
}

void cli_list_options(FILE *out)
{
    for (size_t c = 0; c < cli_n_commands; c++) {
        const struct cli_option *opts[CLI_MAX_OPTIONS];
        size_t n = cli_command_options(&cli_commands[c], opts);
        for (size_t i = 0; i < n; i++) {
            const struct cli_option *o = opts[i];
            char shortname[3] = "-";
            if (o->short_name != 0) {
                shortname[1] = o->short_name;
            }
            fprintf(out, "%s\t--%s\t%s\t%s\t%s\n", cli_commands[c].name, o->name,
                    o->short_name != 0 ? shortname : "-", o->arg != NULL ? o->arg : "-",
                    o->env != NULL ? o->env : "-");
        }
    }
}
