/* SPDX-License-Identifier: MIT */
/* The one option parser of `roost`: turns a command's table entry (commands.c) into a
 * getopt_long loop, checks values, positional arguments and required options, and hands the
 * command its values by name. Also finds the command named by the first words of argv. */
#include <assert.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#include "common/banned.h"

/* getopt_long's value for a long-only option: its index in cli_args.opts plus this. */
#define LONG_ONLY_BASE 1000

size_t cli_command_options(const struct cli_command *cmd, const struct cli_option **out)
{
    const struct cli_option *groups[4] = {cmd->options, NULL, NULL, NULL};
    size_t ng = 1, n = 0;
    if (cmd->common & CLI_COMMON_CONNECT) {
        groups[ng++] = cli_connect_options;
    }
    if (cmd->common & CLI_COMMON_OUTPUT) {
        groups[ng++] = cli_output_options;
    }
    if (cmd->common & CLI_COMMON_SIGN) {
        groups[ng++] = cli_sign_options;
    }
    for (size_t g = 0; g < ng; g++) {
        for (const struct cli_option *o = groups[g]; o->name != NULL; o++) {
            /* test_cli_parse checks that no command has more; never write past `out`. */
            assert(n < CLI_MAX_OPTIONS);
            if (n == CLI_MAX_OPTIONS) {
                return n;
            }
            out[n++] = o;
        }
    }
    return n;
}

int cli_usage_error(const struct cli_args *a, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "roost %s: ", a->cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'roost %s --help'.\n", a->cmd->name);
    return CLI_EXIT_USAGE;
}

/* "a, b or c" from the space-separated words of a CHOICE. */
static void choices_text(const char *words, char *out, size_t outlen)
{
    size_t n = 0, len = 0;
    for (const char *p = words; *p != '\0'; n++) {
        p += strcspn(p, " ");
        p += strspn(p, " ");
    }
    out[0] = '\0';
    const char *p = words;
    for (size_t i = 0; i < n && len < outlen; i++) {
        size_t wl = strcspn(p, " ");
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int w = snprintf(out + len, outlen - len, "%s%.*s", sep, (int)wl, p);
        len += w > 0 ? (size_t)w : 0;
        p += wl;
        p += strspn(p, " ");
    }
}

static bool is_choice(const char *words, const char *value)
{
    size_t vl = strlen(value);
    for (const char *p = words; *p != '\0';) {
        size_t wl = strcspn(p, " ");
        if (wl == vl && strncmp(p, value, vl) == 0) {
            return true;
        }
        p += wl;
        p += strspn(p, " ");
    }
    return false;
}

/* Checks and stores one occurrence of option i. Returns -1, or the exit code of a bad value. */
static int take_value(struct cli_args *a, size_t i, const char *arg, int order)
{
    const struct cli_option *o = a->opts[i];
    struct cli_value *v = &a->vals[i];
    int64_t num = 0;
    bool ok = true;
    char text[256];
    switch (o->kind) {
    case CLI_FLAG:
        arg = "";
        break;
    case CLI_STRING:
        break;
    case CLI_INT:
        ok = cli_parse_int(arg, o->min, o->max, &num) == 0;
        break;
    case CLI_DURATION:
        ok = cli_parse_duration(arg, &num) == 0 && num >= o->min && num <= o->max;
        break;
    case CLI_CHOICE:
        ok = is_choice(o->choices, arg);
        break;
    }
    if (!ok) {
        if (o->kind == CLI_CHOICE) {
            choices_text(o->choices, text, sizeof text);
        }
        return cli_usage_error(a, "--%s: expected %s, got '%s'", o->name,
                               o->kind == CLI_CHOICE ? text : o->expect, arg);
    }
    if (o->flags & CLI_MULTI) {
        v->list[v->count] = arg;
    }
    v->str = arg;
    v->num = num;
    v->count++;
    v->order = order;
    return -1;
}

/* "--a is required", "--a and --b are required", "--a, --b and --c are required": every
 * required option of the command, when one is missing. */
static int check_required(struct cli_args *a)
{
    size_t n_req = 0, missing = 0;
    for (size_t i = 0; i < a->n_opts; i++) {
        if (a->opts[i]->flags & CLI_REQUIRED) {
            n_req++;
            missing += a->vals[i].count == 0;
        }
    }
    if (missing == 0) {
        return -1;
    }
    char text[512];
    size_t len = 0, k = 0;
    text[0] = '\0';
    for (size_t i = 0; i < a->n_opts && len < sizeof text; i++) {
        if (a->opts[i]->flags & CLI_REQUIRED) {
            const char *sep = k == 0 ? "" : k + 1 == n_req ? " and " : ", ";
            int w = snprintf(text + len, sizeof text - len, "%s--%s", sep, a->opts[i]->name);
            len += w > 0 ? (size_t)w : 0;
            k++;
        }
    }
    return cli_usage_error(a, "%s %s required", text, n_req == 1 ? "is" : "are");
}

static int check_args(struct cli_args *a)
{
    const struct cli_command *cmd = a->cmd;
    bool exact = cmd->min_args == cmd->max_args && cmd->max_args > 0;
    if (exact && a->argc != cmd->max_args) {
        return cli_usage_error(a, "expected %s%s", cmd->max_args == 1 ? "one " : "", cmd->args);
    }
    if (cmd->max_args != CLI_ARGS_ANY && a->argc > cmd->max_args) {
        return cli_usage_error(a, "unexpected argument '%s'", a->argv[cmd->max_args]);
    }
    if (a->argc < cmd->min_args) {
        return cli_usage_error(a, "expected %s", cmd->args);
    }
    return -1;
}

/* The value of the option named `name`; the command must have it. */
static const struct cli_value *find(const struct cli_args *a, const char *name,
                                    const struct cli_option **opt)
{
    for (size_t i = 0; i < a->n_opts; i++) {
        if (strcmp(a->opts[i]->name, name) == 0) {
            if (opt != NULL) {
                *opt = a->opts[i];
            }
            return &a->vals[i];
        }
    }
    /* A handler asking for an option its table entry lacks: a programmer error, also in a
     * build without asserts. */
    fprintf(stderr, "roost %s: internal error: no option --%s\n", a->cmd->name, name);
    abort();
}

int cli_parse(struct cli_args *a, const struct cli_command *cmd, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->pretty = -1;
    a->n_opts = cli_command_options(cmd, a->opts);
    struct option longopts[CLI_MAX_OPTIONS + 2];
    char shortopts[2 * CLI_MAX_OPTIONS + 4] = ":h";
    size_t ns = 2;
    for (size_t i = 0; i < a->n_opts; i++) {
        const struct cli_option *o = a->opts[i];
        bool has_arg = o->kind != CLI_FLAG;
        longopts[i] = (struct option){o->name, has_arg ? required_argument : no_argument, NULL,
                                      o->short_name != 0 ? o->short_name : LONG_ONLY_BASE + (int)i};
        if (o->short_name != 0) {
            shortopts[ns++] = o->short_name;
            if (has_arg) {
                shortopts[ns++] = ':';
            }
        }
        /* argc bounds how often an option can be given. */
        if ((o->flags & CLI_MULTI) &&
            (a->vals[i].list = calloc((size_t)argc + 1, sizeof *a->vals[i].list)) == NULL) {
            fprintf(stderr, "roost: %s: out of memory\n", cmd->name);
            return CLI_EXIT_ERROR;
        }
    }
    shortopts[ns] = '\0';
    longopts[a->n_opts] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[a->n_opts + 1] = (struct option){NULL, 0, NULL, 0};

    int opt, order = 0, r;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        size_t i = a->n_opts;
        if (opt == 'h') {
            cli_print_usage(stdout, cmd);
            return CLI_EXIT_OK;
        }
        if (opt == ':') {
            return cli_usage_error(a, "option %s needs a value", argv[optind - 1]);
        }
        if (opt == '?') {
            const char *word = argv[optind - 1];
            if (optopt != 0 && optopt < LONG_ONLY_BASE && strncmp(word, "--", 2) != 0) {
                return cli_usage_error(a, "unknown option -%c", optopt);
            }
            /* A known long option that takes no value, given one ("--pretty=1"). */
            if (optopt != 0) {
                return cli_usage_error(a, "option %s takes no value", word);
            }
            return cli_usage_error(a, "unknown option %s", word);
        }
        if (opt >= LONG_ONLY_BASE) {
            i = (size_t)(opt - LONG_ONLY_BASE);
        } else {
            for (i = 0; i < a->n_opts && a->opts[i]->short_name != opt; i++) {
            }
        }
        assert(i < a->n_opts);
        if ((r = take_value(a, i, optarg, ++order)) >= 0) {
            return r;
        }
    }
    a->argc = argc - optind;
    a->argv = argv + optind;
    if ((r = check_args(a)) >= 0 || (r = check_required(a)) >= 0) {
        return r;
    }
    if (cmd->common & CLI_COMMON_OUTPUT) {
        /* The last of --pretty and --compact wins. */
        const struct cli_value *p = find(a, "pretty", NULL), *c = find(a, "compact", NULL);
        if (p->count > 0 || c->count > 0) {
            a->pretty = p->order > c->order;
        }
    }
    return -1;
}

void cli_args_cleanup(struct cli_args *a)
{
    for (size_t i = 0; i < a->n_opts; i++) {
        free(a->vals[i].list);
        a->vals[i].list = NULL;
    }
}

const char *cli_str(const struct cli_args *a, const char *name)
{
    const struct cli_option *o = NULL;
    const struct cli_value *v = find(a, name, &o);
    if (v->count > 0) {
        return v->str;
    }
    const char *env = o->env != NULL ? getenv(o->env) : NULL;
    return env != NULL && env[0] != '\0' ? env : NULL;
}

bool cli_given(const struct cli_args *a, const char *name)
{
    return find(a, name, NULL)->count > 0;
}

bool cli_flag(const struct cli_args *a, const char *name)
{
    return cli_given(a, name);
}

int64_t cli_num(const struct cli_args *a, const char *name, int64_t dflt)
{
    const struct cli_value *v = find(a, name, NULL);
    return v->count > 0 ? v->num : dflt;
}

const char *const *cli_list(const struct cli_args *a, const char *name, size_t *n)
{
    const struct cli_value *v = find(a, name, NULL);
    *n = (size_t)v->count;
    return v->list;
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

const struct cli_command *cli_find_command(int argc, char **argv, int from, int *consumed,
                                           bool *partial)
{
    *partial = false;
    for (size_t i = 0; i < cli_n_commands; i++) {
        int m = match_words(cli_commands[i].name, argc, argv, from);
        if (m == count_words(cli_commands[i].name)) {
            *consumed = m;
            return &cli_commands[i];
        }
        *partial = *partial || m > 0;
    }
    return NULL;
}

void cli_print_group(FILE *out, int argc, char **argv, int from)
{
    fputs("Commands:\n", out);
    for (size_t i = 0; i < cli_n_commands; i++) {
        if (match_words(cli_commands[i].name, argc, argv, from) > 0) {
            fprintf(out, "  roost %-26s %s\n", cli_commands[i].name, cli_commands[i].summary);
        }
    }
}
