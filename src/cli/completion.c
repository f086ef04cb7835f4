/* SPDX-License-Identifier: MIT */
/* `roost completion bash|zsh`: the shell completion scripts, generated from the command table.
 * Both walk the words typed so far through the command names ("admin", "quarantine", "list"),
 * then complete that command's options, an option's value (its choices, a file or a directory)
 * or its positional arguments' choices. */
#include <string.h>

#include "cli/cli.h"

#include "common/banned.h"

/* How an option's value completes. The value names are the table's convention: F, FILE and PEM
 * name files, DIR a directory; choices complete as words. */
enum value_kind { VALUE_NONE, VALUE_TEXT, VALUE_FILE, VALUE_DIR, VALUE_WORDS };

static enum value_kind value_kind(const struct cli_option *o)
{
    if (o->arg == NULL) {
        return VALUE_NONE;
    }
    if (o->choices != NULL) {
        return VALUE_WORDS;
    }
    if (strcmp(o->arg, "F") == 0 || strcmp(o->arg, "FILE") == 0 || strcmp(o->arg, "PEM") == 0) {
        return VALUE_FILE;
    }
    return strcmp(o->arg, "DIR") == 0 ? VALUE_DIR : VALUE_TEXT;
}

/* Whether `prefix` (words separated by one space, "" for none) is a proper prefix of a command
 * name; *next gets the word that follows it in `name`. */
static bool next_word(const char *name, const char *prefix, const char **next, size_t *len)
{
    size_t pl = strlen(prefix);
    if (pl > 0 && (strncmp(name, prefix, pl) != 0 || name[pl] != ' ')) {
        return false;
    }
    *next = name + pl + (pl > 0);
    *len = strcspn(*next, " ");
    return true;
}

/* Prints the distinct words that may follow `prefix`, separated by spaces. */
static void print_next_words(FILE *out, const char *prefix)
{
    const char *printed[64];
    size_t lens[64], n = 0;
    for (size_t c = 0; c < cli_n_commands; c++) {
        const char *w = NULL;
        size_t wl = 0;
        if (!next_word(cli_commands[c].name, prefix, &w, &wl)) {
            continue;
        }
        bool dup = false;
        for (size_t k = 0; k < n && !dup; k++) {
            dup = lens[k] == wl && strncmp(printed[k], w, wl) == 0;
        }
        if (!dup && n < 64) {
            fprintf(out, "%s%.*s", n > 0 ? " " : "", (int)wl, w);
            printed[n] = w;
            lens[n++] = wl;
        }
    }
}

/* The command-word prefixes that are not whole commands: "", "token", "admin", ... */
static size_t group_prefixes(char prefixes[][64], size_t max)
{
    size_t n = 0;
    if (n < max) {
        prefixes[n++][0] = '\0';
    }
    for (size_t c = 0; c < cli_n_commands; c++) {
        const char *name = cli_commands[c].name;
        for (const char *sp = strchr(name, ' '); sp != NULL; sp = strchr(sp + 1, ' ')) {
            size_t pl = (size_t)(sp - name);
            bool dup = false;
            for (size_t k = 0; k < n && !dup; k++) {
                dup = strlen(prefixes[k]) == pl && strncmp(prefixes[k], name, pl) == 0;
            }
            if (!dup && n < max && pl < 64) {
                snprintf(prefixes[n++], 64, "%.*s", (int)pl, name);
            }
        }
    }
    return n;
}

/* ---- bash ------------------------------------------------------------------------------------ */

/* Prints "--agent|-a|--limit" for the command's options whose value completes as `kind`; returns
 * how many. */
static size_t bash_pattern(FILE *out, const struct cli_option *const *opts, size_t n,
                           enum value_kind kind)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (value_kind(opts[i]) != kind) {
            continue;
        }
        fprintf(out, "%s--%s", k++ > 0 ? "|" : "", opts[i]->name);
        if (opts[i]->short_name != 0) {
            fprintf(out, "|-%c", opts[i]->short_name);
        }
    }
    return k;
}

static void bash_command(FILE *out, const struct cli_command *cmd)
{
    const struct cli_option *opts[CLI_MAX_OPTIONS];
    size_t n = cli_command_options(cmd, opts);
    fprintf(out, "    \"%s\")\n        case $2 in\n", cmd->name);
    static const struct {
        enum value_kind kind;
        const char *reply;
    } kinds[] = {{VALUE_FILE, "file"}, {VALUE_DIR, "dir"}, {VALUE_TEXT, "text"}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        fputs("        ", out);
        if (bash_pattern(out, opts, n, kinds[k].kind) > 0) {
            fprintf(out, ") echo %s ;;\n", kinds[k].reply);
        } else {
            fputs("'') ;;\n", out);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (value_kind(opts[i]) == VALUE_WORDS) {
            fprintf(out, "        --%s", opts[i]->name);
            if (opts[i]->short_name != 0) {
                fprintf(out, "|-%c", opts[i]->short_name);
            }
            fprintf(out, ") echo 'words %s' ;;\n", opts[i]->choices);
        }
    }
    fprintf(out, "        *) echo 'args %s' ;;\n",
            cmd->arg_choices != NULL ? cmd->arg_choices : "");
    fputs("        esac ;;\n", out);
}

/* The case arms of _roost_words, one per command-word prefix, in either shell: `indent` and the
 * shell's `say` command (echo, print -r --) are all that differ. */
static void print_words_cases(FILE *out, const char *indent, const char *say)
{
    char prefixes[32][64];
    size_t np = group_prefixes(prefixes, 32);
    for (size_t i = 0; i < np; i++) {
        fprintf(out, "%s\"%s\") %s \"", indent, prefixes[i], say);
        print_next_words(out, prefixes[i]);
        fputs(i == 0 ? " help version\" ;;\n" : "\" ;;\n", out);
    }
}

static void print_bash(FILE *out)
{
    fputs("# bash completion for roost, generated by 'roost completion bash' from its command\n"
          "# table. Load it with: source <(roost completion bash)\n"
          "\n"
          "# The words that may follow the command words $1.\n"
          "_roost_words() {\n"
          "    case $1 in\n",
          out);
    print_words_cases(out, "    ", "echo");
    fputs("    esac\n"
          "}\n"
          "\n"
          "# The options of command $1.\n"
          "_roost_options() {\n"
          "    case $1 in\n",
          out);
    for (size_t c = 0; c < cli_n_commands; c++) {
        const struct cli_option *opts[CLI_MAX_OPTIONS];
        size_t n = cli_command_options(&cli_commands[c], opts);
        fprintf(out, "    \"%s\") echo \"", cli_commands[c].name);
        for (size_t i = 0; i < n; i++) {
            fprintf(out, "--%s ", opts[i]->name);
            if (opts[i]->short_name != 0) {
                fprintf(out, "-%c ", opts[i]->short_name);
            }
        }
        fputs("--help -h\" ;;\n", out);
    }
    fputs("    esac\n"
          "}\n"
          "\n"
          "# What follows word $2 of command $1: its value (file, dir, text, 'words W...') when\n"
          "# $2 takes one, else options or the arguments' choices ('args W...').\n"
          "_roost_after() {\n"
          "    case $1 in\n",
          out);
    for (size_t c = 0; c < cli_n_commands; c++) {
        bash_command(out, &cli_commands[c]);
    }
    fputs("    esac\n"
          "}\n"
          "\n"
          "_roost() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
          "    local cmd='' i=1 w next after\n"
          "    COMPREPLY=()\n"
          "    # 'roost help CMD' completes command words only.\n"
          "    [[ ${COMP_WORDS[1]} == help && $COMP_CWORD -gt 1 ]] && i=2\n"
          "    for ((; i < COMP_CWORD; i++)); do\n"
          "        w=${COMP_WORDS[i]}\n"
          "        next=$(_roost_words \"$cmd\")\n"
          "        [[ -n $next && \" $next \" == *\" $w \"* ]] || break\n"
          "        cmd=${cmd:+$cmd }$w\n"
          "    done\n"
          "    next=$(_roost_words \"$cmd\")\n"
          "    if [[ $i -eq $COMP_CWORD && -n $next ]]; then\n"
          "        mapfile -t COMPREPLY < <(compgen -W \"$next\" -- \"$cur\")\n"
          "        return 0\n"
          "    fi\n"
          "    [[ -n $next || ${COMP_WORDS[1]} == help || $cmd == version ]] && return 0\n"
          "    after=$(_roost_after \"$cmd\" \"$prev\")\n"
          "    case $after in\n"
          "    file)\n"
          "        compopt -o filenames 2>/dev/null\n"
          "        mapfile -t COMPREPLY < <(compgen -f -- \"$cur\") ;;\n"
          "    dir)\n"
          "        compopt -o filenames 2>/dev/null\n"
          "        mapfile -t COMPREPLY < <(compgen -d -- \"$cur\") ;;\n"
          "    text) ;;\n"
          "    words\\ *) mapfile -t COMPREPLY < <(compgen -W \"${after#words }\" -- \"$cur\") ;;\n"
          "    *)\n"
          "        if [[ $cur == -* ]]; then\n"
          "            mapfile -t COMPREPLY < <(compgen -W \"$(_roost_options \"$cmd\")\" -- "
          "\"$cur\")\n"
          "        else\n"
          "            mapfile -t COMPREPLY < <(compgen -W \"${after#args }\" -- \"$cur\")\n"
          "        fi ;;\n"
          "    esac\n"
          "    return 0\n"
          "}\n"
          "complete -F _roost roost\n",
          out);
}

/* ---- zsh ------------------------------------------------------------------------------------- */

/* The first line of a help text, escaped for a single-quoted _arguments description. */
static void zsh_description(FILE *out, const char *help)
{
    for (const char *p = help; *p != '\0' && *p != '\n'; p++) {
        if (*p == '\'') {
            fputs("'\\''", out);
        } else if (*p == '[' || *p == ']' || *p == '\\') {
            fprintf(out, "\\%c", *p);
        } else {
            fputc(*p, out);
        }
    }
}

static void zsh_option(FILE *out, const struct cli_option *o)
{
    /* A repeatable option ('*') has no exclusion list: that would forbid the repeat. */
    const char *multi = (o->flags & CLI_MULTI) ? "*" : "";
    if (o->short_name != 0 && *multi != '\0') {
        fprintf(out, "      '*'{-%c,--%s}'[", o->short_name, o->name);
    } else if (o->short_name != 0) {
        fprintf(out, "      '(-%c --%s)'{-%c,--%s}'[", o->short_name, o->name, o->short_name,
                o->name);
    } else {
        fprintf(out, "      '%s--%s[", multi, o->name);
    }
    zsh_description(out, o->help);
    fputc(']', out);
    switch (value_kind(o)) {
    case VALUE_NONE:
        break;
    case VALUE_TEXT:
        fprintf(out, ":%s: ", o->arg);
        break;
    case VALUE_FILE:
        fprintf(out, ":%s:_files", o->arg);
        break;
    case VALUE_DIR:
        fprintf(out, ":%s:_files -/", o->arg);
        break;
    case VALUE_WORDS:
        fprintf(out, ":%s:(%s)", o->arg, o->choices);
        break;
    }
    fputs("' \\\n", out);
}

static void print_zsh(FILE *out)
{
    fputs("#compdef roost\n"
          "# zsh completion for roost, generated by 'roost completion zsh' from its command\n"
          "# table. Install it as _roost in a directory of $fpath.\n"
          "\n"
          "_roost_words() {\n"
          "  case $1 in\n",
          out);
    print_words_cases(out, "  ", "print -r --");
    fputs("  esac\n"
          "}\n"
          "\n"
          "_roost() {\n"
          "  local cmd='' w next\n"
          "  local -i i=2\n"
          "  [[ ${words[2]} == help && $CURRENT -gt 2 ]] && i=3\n"
          "  for (( ; i < CURRENT; i++ )); do\n"
          "    w=${words[i]}\n"
          "    next=$(_roost_words \"$cmd\")\n"
          "    [[ -n $next && \" $next \" == *\" $w \"* ]] || break\n"
          "    cmd=${cmd:+$cmd }$w\n"
          "  done\n"
          "  next=$(_roost_words \"$cmd\")\n"
          "  if (( i == CURRENT )) && [[ -n $next ]]; then\n"
          "    compadd -- ${=next}\n"
          "    return\n"
          "  fi\n"
          "  [[ -n $next || ${words[2]} == help ]] && return 1\n"
          "  # _arguments sees the last command word as the command.\n"
          "  shift $(( i - 2 )) words\n"
          "  (( CURRENT -= i - 2 ))\n"
          "  case $cmd in\n",
          out);
    for (size_t c = 0; c < cli_n_commands; c++) {
        const struct cli_command *cmd = &cli_commands[c];
        const struct cli_option *opts[CLI_MAX_OPTIONS];
        size_t n = cli_command_options(cmd, opts);
        fprintf(out, "  \"%s\")\n    _arguments -s \\\n", cmd->name);
        for (size_t i = 0; i < n; i++) {
            zsh_option(out, opts[i]);
        }
        fputs("      '(- *)'{-h,--help}'[show the help]' \\\n", out);
        if (cmd->max_args != 0) {
            fprintf(out, "      '*:%s:%s%s%s' ;;\n", cmd->args,
                    cmd->arg_choices != NULL ? "(" : " ",
                    cmd->arg_choices != NULL ? cmd->arg_choices : "",
                    cmd->arg_choices != NULL ? ")" : "");
        } else {
            fputs("      ;;\n", out);
        }
    }
    fputs("  esac\n"
          "}\n"
          "\n"
          "_roost \"$@\"\n",
          out);
}

int cli_print_completion(FILE *out, const char *shell)
{
    if (strcmp(shell, "bash") == 0) {
        print_bash(out);
        return 0;
    }
    if (strcmp(shell, "zsh") == 0) {
        print_zsh(out);
        return 0;
    }
    return -1;
}

int cmd_completion(struct cli_args *a)
{
    if (cli_print_completion(stdout, a->argv[0]) != 0) {
        return cli_usage_error(a, "expected bash or zsh, got '%s'", a->argv[0]);
    }
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}
