/* SPDX-License-Identifier: MIT */
/* Where the CLI's bearer token comes from when it can change under a running command: a token
 * file rewritten by its issuer, or a credential command whose stdout is the token (as kubectl's
 * exec credentials). The source answers libroost's token callback from a cache and fetches anew
 * when the file changed or the token nears its expiry. Also decodes a JWT's claims (unverified)
 * for that expiry and for `roost whoami`. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "cli/cli.h"
#include "common/base64.h"

#include "common/banned.h"

/* A token without an expiry claim from a command is fetched again this often. */
#define TOKEN_COMMAND_REFRESH_S 300
/* A failing source is asked again at most this often (the old token is kept meanwhile). */
#define TOKEN_RETRY_S 1

int cli_jwt_claims(const char *token, json_t **out)
{
    *out = NULL;
    const char *p1 = strchr(token, '.');
    const char *p2 = p1 != NULL ? strchr(p1 + 1, '.') : NULL;
    if (p2 == NULL) {
        return -1;
    }
    unsigned char *raw = NULL;
    size_t n = 0;
    if (b64_decode(B64_URL, false, p1 + 1, (size_t)(p2 - p1 - 1), &raw, &n) != 0) {
        return -1;
    }
    json_t *j = json_loadb((const char *)raw, n, 0, NULL);
    free(raw);
    if (!json_is_object(j)) {
        json_decref(j);
        return -1;
    }
    *out = j;
    return 0;
}

/* Trims trailing whitespace (the newline `roost token mint` and most commands write). */
static void trim(char *buf, size_t *len)
{
    while (*len > 0 && (buf[*len - 1] == '\n' || buf[*len - 1] == '\r' || buf[*len - 1] == ' ' ||
                        buf[*len - 1] == '\t')) {
        buf[--*len] = '\0';
    }
}

int cli_token_command_run(const char *command, char **out, char *err, size_t errlen)
{
    *out = NULL;
    fflush(NULL);
    FILE *f = popen(command, "r");
    if (f == NULL) {
        snprintf(err, errlen, "--token-command: cannot run '%s': %s", command, strerror(errno));
        return -1;
    }
    size_t cap = ROOST_TOKEN_MAX_BYTES + 2, len = 0;
    char *buf = calloc(1, cap);
    if (buf == NULL) {
        pclose(f);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t got;
    char scratch[4096];
    while ((got = fread(scratch, 1, sizeof scratch, f)) > 0) {
        size_t take = got < cap - 1 - len ? got : cap - 1 - len;
        memcpy(buf + len, scratch, take);
        len += take;
    }
    int st = pclose(f);
    buf[len] = '\0';
    trim(buf, &len);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(err, errlen, "--token-command '%s' failed (%s %d)", command,
                 st != -1 && WIFEXITED(st) ? "exit" : "status",
                 st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : st);
        free(buf);
        return -1;
    }
    if (len == 0 || len > ROOST_TOKEN_MAX_BYTES) {
        snprintf(err, errlen, "--token-command '%s' printed %s", command,
                 len == 0 ? "no token" : "too long a token");
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}

/* Reads the token file into ts->token and remembers what it looked like. Called locked. */
static int fetch_file(struct cli_token_source *ts, const struct stat *sb, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    if (cli_read_file(ts->file, ROOST_TOKEN_MAX_BYTES + 64, &buf, &len, err, errlen) != 0) {
        return -1;
    }
    trim(buf, &len);
    if (len == 0 || len > ROOST_TOKEN_MAX_BYTES) {
        snprintf(err, errlen, "%s: %s", ts->file, len == 0 ? "no token" : "too long a token");
        free(buf);
        return -1;
    }
    memcpy(ts->token, buf, len + 1);
    free(buf);
    ts->mtime = sb->st_mtim;
    ts->size = sb->st_size;
    ts->ino = sb->st_ino;
    return 0;
}

/* Reads exp and iat of the cached token (0 when it is no JWT or has none). Called locked. */
static void note_expiry(struct cli_token_source *ts)
{
    ts->exp_s = ts->iat_s = 0;
    json_t *claims = NULL;
    if (cli_jwt_claims(ts->token, &claims) == 0) {
        ts->exp_s = json_integer_value(json_object_get(claims, "exp"));
        ts->iat_s = json_integer_value(json_object_get(claims, "iat"));
        json_decref(claims);
    }
}

/* Whether the cached token is near its end: the last third of its life, or its last minute,
 * whichever is shorter, so that a 5 s token is renewed with more than a second left. */
static bool expiring(const struct cli_token_source *ts, int64_t now)
{
    if (ts->exp_s <= 0) {
        return ts->command != NULL && now - ts->fetched_s >= TOKEN_COMMAND_REFRESH_S;
    }
    int64_t life = ts->iat_s > 0 && ts->iat_s < ts->exp_s ? ts->exp_s - ts->iat_s : 180;
    int64_t margin = life / 3 < 60 ? life / 3 : 60;
    return now >= ts->exp_s - (margin > 1 ? margin : 1);
}

/* Fetches anew when due. Called locked. Returns 0, or -1 with err (the old token stays). */
static int refresh(struct cli_token_source *ts, int64_t now, bool force, char *err, size_t errlen)
{
    struct stat sb;
    if (ts->file != NULL) {
        if (stat(ts->file, &sb) != 0) {
            snprintf(err, errlen, "%s: %s", ts->file, strerror(errno));
            return -1;
        }
        bool changed = sb.st_size != ts->size || sb.st_ino != ts->ino ||
                       sb.st_mtim.tv_sec != ts->mtime.tv_sec ||
                       sb.st_mtim.tv_nsec != ts->mtime.tv_nsec;
        if (!force && !changed && !(expiring(ts, now) && now - ts->tried_s >= TOKEN_RETRY_S)) {
            return 0;
        }
        ts->tried_s = now;
        if (fetch_file(ts, &sb, err, errlen) != 0) {
            return -1;
        }
    } else {
        if (!force && (!expiring(ts, now) || now - ts->tried_s < TOKEN_RETRY_S)) {
            return 0;
        }
        ts->tried_s = now;
        char *tok = NULL;
        if (cli_token_command_run(ts->command, &tok, err, errlen) != 0) {
            return -1;
        }
        memcpy(ts->token, tok, strlen(tok) + 1);
        free(tok);
    }
    ts->fetched_s = now;
    note_expiry(ts);
    return 0;
}

int cli_token_source_init(struct cli_token_source *ts, const char *file, const char *command,
                          char *err, size_t errlen)
{
    memset(ts, 0, sizeof *ts);
    ts->file = file;
    ts->command = command;
    pthread_mutex_init(&ts->mu, NULL);
    if (refresh(ts, (int64_t)time(NULL), true, err, errlen) != 0) {
        pthread_mutex_destroy(&ts->mu);
        return -1;
    }
    return 0;
}

int cli_token_source_follow(const struct cli_args *a, const char *what, struct cli_token_source *ts,
                            bool *follow)
{
    const char *file = cli_str(a, "token-file"), *command = cli_str(a, "token-command");
    *follow = !cli_given(a, "token") && (file != NULL || command != NULL);
    if (!*follow) {
        return CLI_EXIT_OK;
    }
    char err[600];
    if (cli_token_source_init(ts, file, command, err, sizeof err) != 0) {
        fprintf(stderr, "roost: %s: %s\n", what, err);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

void cli_token_source_cleanup(struct cli_token_source *ts)
{
    memset(ts->token, 0, sizeof ts->token);
    pthread_mutex_destroy(&ts->mu);
}

int cli_token_source_cb(void *arg, char *buf, size_t cap)
{
    struct cli_token_source *ts = arg;
    char err[512];
    pthread_mutex_lock(&ts->mu);
    if (refresh(ts, (int64_t)time(NULL), false, err, sizeof err) != 0 && ts->on_error != NULL) {
        ts->on_error(ts->on_error_ctx, err);
    }
    size_t n = strlen(ts->token);
    int rc = n < cap ? ROOST_OK : ROOST_EINVAL;
    if (rc == ROOST_OK) {
        memcpy(buf, ts->token, n + 1);
    }
    pthread_mutex_unlock(&ts->mu);
    return rc;
}
