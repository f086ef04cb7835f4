/* SPDX-License-Identifier: MIT */
/* `--output table|json` of the list commands: a list answer ({"events":[...]}, {"agents":[...]},
 * {"keys":[...]}) as an aligned table for people, one row per element, then how to get the next
 * page. JSON stays the output for pipes and scripts; a terminal gets the table by default. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/strutil.h"

#include "common/banned.h"

/* The widest a cell gets, in characters; longer text is cut and ends with "...". */
#define CELL_MAX_CHARS 40
#define TABLE_MAX_COLUMNS 12

bool cli_output_table(const struct cli_args *a)
{
    const char *mode = cli_str(a, "output");
    if (mode != NULL) {
        return strcmp(mode, "table") == 0;
    }
    return isatty(STDOUT_FILENO) != 0;
}

/* Characters (UTF-8 code points) in s. */
static size_t text_chars(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++) {
        n += ((unsigned char)*s & 0xC0) != 0x80;
    }
    return n;
}

/* One cell's text (caller frees): strings as they are, null as "-", reals with one decimal,
 * anything else as compact JSON; control characters become spaces so a row stays one line; cut at
 * CELL_MAX_CHARS. */
static char *cell_text(const json_t *v)
{
    char *s;
    if (v == NULL || json_is_null(v)) {
        s = strdup("-");
    } else if (json_is_string(v)) {
        /* Text of several lines (a handler's error) shows its last: where the reason is. */
        const char *t = json_string_value(v);
        size_t at = 0,
               n = strchr(t, '\n') != NULL ? strutil_last_line(t, strlen(t), &at) : strlen(t);
        s = strndup(t + at, n);
    } else if (json_is_real(v)) {
        char num[64]; /* ages in seconds: a tenth is enough for people */
        snprintf(num, sizeof num, "%.1f", json_real_value(v));
        s = strdup(num);
    } else {
        s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    }
    if (s == NULL) {
        return NULL;
    }
    size_t chars = 0;
    for (char *p = s; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20) {
            *p = ' ';
        }
        if (((unsigned char)*p & 0xC0) != 0x80 && ++chars > CELL_MAX_CHARS - 3 &&
            text_chars(p) > 3) {
            memcpy(p, "...", 4); /* s was at least as long: the cut leaves room */
            break;
        }
    }
    return s;
}

/* Prints s padded with spaces to `width` characters (no padding after the last column). */
static void print_cell(const char *s, size_t width, bool last)
{
    fputs(s, stdout);
    if (!last) {
        for (size_t n = text_chars(s); n < width + 2; n++) {
            fputc(' ', stdout);
        }
    }
}

int cli_print_table(const struct cli_args *a, const char *text, size_t len, const char *key,
                    const char *const *columns)
{
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, 0, &jerr);
    json_t *rows = json_object_get(doc, key);
    if (!json_is_array(rows)) {
        json_decref(doc);
        return cli_print_json(a, text, len); /* not a list answer: show it as it came */
    }
    size_t n_cols = 0, n_rows = json_array_size(rows);
    char fields[TABLE_MAX_COLUMNS][64], titles[TABLE_MAX_COLUMNS][64];
    size_t width[TABLE_MAX_COLUMNS];
    /* "field" or "field:TITLE"; the title defaults to the field in capitals. */
    for (; columns[n_cols] != NULL && n_cols < TABLE_MAX_COLUMNS; n_cols++) {
        const char *col = columns[n_cols], *colon = strchr(col, ':');
        size_t flen = colon != NULL ? (size_t)(colon - col) : strlen(col);
        snprintf(fields[n_cols], sizeof fields[n_cols], "%.*s", (int)flen, col);
        snprintf(titles[n_cols], sizeof titles[n_cols], "%s", colon != NULL ? colon + 1 : col);
        for (char *p = titles[n_cols]; colon == NULL && *p != '\0'; p++) {
            *p = *p == '_' ? ' ' : (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
        }
        width[n_cols] = text_chars(titles[n_cols]);
    }
    char **cells = calloc(n_rows * n_cols + 1, sizeof *cells);
    int r = CLI_EXIT_OK;
    if (cells == NULL) {
        fprintf(stderr, "roost: %s: out of memory\n", a->cmd->name);
        json_decref(doc);
        return CLI_EXIT_ERROR;
    }
    for (size_t i = 0; i < n_rows && r == CLI_EXIT_OK; i++) {
        for (size_t j = 0; j < n_cols; j++) {
            char *s = cell_text(json_object_get(json_array_get(rows, i), fields[j]));
            if (s == NULL) {
                fprintf(stderr, "roost: %s: out of memory\n", a->cmd->name);
                r = CLI_EXIT_ERROR;
                break;
            }
            cells[i * n_cols + j] = s;
            size_t w = text_chars(s);
            width[j] = w > width[j] ? w : width[j];
        }
    }
    if (r == CLI_EXIT_OK) {
        for (size_t j = 0; j < n_cols; j++) {
            print_cell(titles[j], width[j], j + 1 == n_cols);
        }
        fputc('\n', stdout);
        for (size_t i = 0; i < n_rows; i++) {
            for (size_t j = 0; j < n_cols; j++) {
                print_cell(cells[i * n_cols + j], width[j], j + 1 == n_cols);
            }
            fputc('\n', stdout);
        }
        /* How to go on: the page token, or the cursor of an inbox read. */
        const char *next = json_string_value(json_object_get(doc, "next"));
        if (next != NULL) {
            printf("(more: --next %s)\n", next);
        } else if (json_is_true(json_object_get(doc, "has_more"))) {
            printf("(more: --after %lld)\n",
                   (long long)json_integer_value(json_object_get(doc, "next_cursor")));
        }
        if (fflush(stdout) != 0) {
            fprintf(stderr, "roost: %s: cannot write the output: %s\n", a->cmd->name,
                    strerror(errno));
            r = CLI_EXIT_ERROR;
        }
    }
    for (size_t i = 0; i < n_rows * n_cols; i++) {
        free(cells[i]);
    }
    free(cells);
    json_decref(doc);
    return r;
}

int cli_print_list(const struct cli_args *a, struct roost_client *c, const char *key,
                   const char *const *columns)
{
    size_t len = 0;
    const char *body = roost_client_last_body(c, &len);
    if (len == 0) {
        return CLI_EXIT_OK;
    }
    return cli_output_table(a) ? cli_print_table(a, body, len, key, columns)
                               : cli_print_json(a, body, len);
}
