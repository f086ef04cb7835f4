/* SPDX-License-Identifier: MIT */
/* Helpers shared by the `roost` commands: the client from the shared options, error reporting
 * with exit codes, JSON output and bounded input parsing. */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/dynbuf.h"
#include "common/fsutil.h"
#include "common/strutil.h"

#include "common/banned.h"

/* Reads the token file, trimming trailing whitespace (a newline written by `roost token mint`). */
static char *read_token_file(const struct cli_args *a, const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    char err[512];
    if (cli_read_file(path, 16384, &buf, &len, err, sizeof err) != 0) {
        fprintf(stderr, "roost: %s: %s\n", a->cmd->name, err);
        return NULL;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' ||
                       buf[len - 1] == '\t')) {
        buf[--len] = '\0';
    }
    return buf;
}

struct roost_device *cli_device;

int cli_device_open(const struct cli_args *a)
{
    (void)a;
    if (cli_device != NULL) {
        return 0;
    }
    char err[512];
    const char *agent = getenv("ROOST_AGENT");
    return roost_device_open(NULL, agent != NULL && agent[0] ? agent : NULL, &cli_device, err,
                             sizeof err) == ROOST_OK
               ? 0
               : -1;
}

int cli_resolve_endpoint(const struct cli_args *a, const char **server_out, const char **token_out,
                         char **file_token_out)
{
    *file_token_out = NULL;
    const char *server = cli_str(a, "server");
    if (server == NULL || server[0] == '\0') {
        server = CLI_DEFAULT_SERVER;
    }
    /* --token, then --token-command or --token-file, then $ROOST_TOKEN. */
    const char *token = cli_given(a, "token") ? cli_str(a, "token") : NULL;
    const char *token_file = cli_str(a, "token-file");
    const char *token_command = cli_str(a, "token-command");
    if (token_file != NULL && token_command != NULL) {
        return cli_usage_error(a, "--token-file and --token-command exclude each other");
    }
    if (token == NULL && token_command != NULL) {
        char err[600];
        if (cli_token_command_run(token_command, file_token_out, err, sizeof err) != 0) {
            fprintf(stderr, "roost: %s: %s\n", a->cmd->name, err);
            return CLI_EXIT_USAGE;
        }
        token = *file_token_out;
    }
    if (token == NULL && token_file != NULL) {
        if ((*file_token_out = read_token_file(a, token_file)) == NULL) {
            return CLI_EXIT_USAGE;
        }
        token = *file_token_out;
    }
    if (token == NULL) {
        token = cli_str(a, "token");
    }
    if ((token == NULL || token[0] == '\0') && cli_device_open(a) == 0) {
        /* A device logged in with `roost login`: its first access token now, the callback
         * (cli_connect, agent run) keeps it fresh. */
        char buf[ROOST_TOKEN_MAX_BYTES + 1];
        int rc = roost_device_token(cli_device, buf, sizeof buf);
        if (rc != ROOST_OK) {
            fprintf(stderr, "roost: %s: the device login of agent %s was refused: %s\n",
                    a->cmd->name, roost_device_agent(cli_device), roost_device_error(cli_device));
            return CLI_EXIT_ERROR;
        }
        if ((*file_token_out = strdup(buf)) == NULL) {
            return CLI_EXIT_ERROR;
        }
        token = *file_token_out;
        if (!cli_given(a, "server") && getenv("ROOST_SERVER") == NULL) {
            server = roost_device_server(cli_device);
        }
    }
    if (token == NULL || token[0] == '\0') {
        return cli_usage_error(a, "no token: pass --token, --token-file or --token-command, or set "
                                  "ROOST_TOKEN "
                                  "(mint one with 'roost token mint'), or run 'roost login'");
    }
    *server_out = server;
    *token_out = token;
    return CLI_EXIT_OK;
}

/* The environment default of the shared signing option `name`. */
static const char *sign_env(const char *name)
{
    for (const struct cli_option *o = cli_sign_options; o->name != NULL; o++) {
        if (strcmp(o->name, name) == 0) {
            return getenv(o->env);
        }
    }
    return NULL;
}

int cli_resolve_signing(const struct cli_args *a, const char **file_out, const char **id_out,
                        const char **alg_out)
{
    *file_out = *id_out = *alg_out = NULL;
    /* keys add takes no signing options (its --key-id names the key it registers): its own
     * request is signed from the signing options' environment variables alone. */
    bool options = (a->cmd->common & CLI_COMMON_SIGN) != 0;
    const char *file = options ? cli_str(a, "key-file") : sign_env("key-file");
    const char *id = options ? cli_str(a, "key-id") : sign_env("key-id");
    const char *alg = options ? cli_str(a, "key-alg") : sign_env("key-alg");
    if (file == NULL || file[0] == '\0') {
        if (options && (cli_given(a, "key-id") || cli_given(a, "key-alg"))) {
            return cli_usage_error(a, "--key-id/--key-alg need --key-file (or ROOST_KEY_FILE)");
        }
        return CLI_EXIT_OK;
    }
    if (id == NULL || id[0] == '\0') {
        return cli_usage_error(a, "a signing key needs --key-id (or ROOST_KEY_ID)");
    }
    *file_out = file;
    *id_out = id;
    *alg_out = alg != NULL && alg[0] != '\0' ? alg : NULL;
    return CLI_EXIT_OK;
}

int cli_connect(const struct cli_args *a, struct roost_client **out)
{
    *out = NULL;
    const char *server = NULL, *token = NULL;
    char *file_token = NULL;
    int r = cli_resolve_endpoint(a, &server, &token, &file_token);
    if (r != CLI_EXIT_OK) {
        return r;
    }
    struct roost_client *c = NULL;
    int rc = roost_client_new(&c, server, token);
    free(file_token);
    if (rc == ROOST_EINVAL) {
        return cli_usage_error(a,
                               "bad --server URL or token (server '%s'; tokens are one line "
                               "of printable ASCII)",
                               server);
    }
    if (rc != ROOST_OK) {
        fprintf(stderr, "roost: %s: %s (%s)\n", a->cmd->name, roost_strerror(rc),
                roost_err_code(rc));
        return CLI_EXIT_ERROR;
    }
    const char *ca_file = cli_str(a, "cacert");
    int64_t timeout_s = cli_num(a, "timeout", 0);
    if ((ca_file != NULL && (rc = roost_client_set_ca_file(c, ca_file)) != ROOST_OK) ||
        (timeout_s > 0 &&
         (rc = roost_client_set_timeouts(c, 0, (long)timeout_s * 1000L)) != ROOST_OK)) {
        roost_client_free(c);
        fprintf(stderr, "roost: %s: %s (%s)\n", a->cmd->name, roost_strerror(rc),
                roost_err_code(rc));
        return CLI_EXIT_ERROR;
    }
    const char *key_file = NULL, *key_id = NULL, *key_alg = NULL;
    if ((r = cli_resolve_signing(a, &key_file, &key_id, &key_alg)) != CLI_EXIT_OK) {
        roost_client_free(c);
        return r;
    }
    if (key_file != NULL &&
        (rc = roost_client_set_signing_key(c, key_file, key_id, key_alg)) != ROOST_OK) {
        r = cli_fail(a, c, rc, "signing key");
        roost_client_free(c);
        return r;
    }
    if (cli_device != NULL) {
        roost_client_set_token_callback(c, roost_device_token, cli_device);
        if (key_file == NULL) {
            roost_client_set_signing_key_callback(c, roost_device_signing_key, cli_device);
        }
    }
    *out = c;
    return CLI_EXIT_OK;
}

int cli_exit_code(int rc, bool sent)
{
    switch (rc) {
    case ROOST_OK:
        return CLI_EXIT_OK;
    case ROOST_ECONNECT:
        return CLI_EXIT_CONNECT;
    case ROOST_ENOTFOUND:
    case ROOST_EEVENTNOTFOUND:
    case ROOST_ELEASEMISMATCH:
    case ROOST_ESTATE:
    case ROOST_ELEASECAP:
    case ROOST_EGONE:
    case ROOST_EKEYNOTFOUND:
    case ROOST_EKEYEXISTS:
    case ROOST_EENDPOINTNOTFOUND:
    case ROOST_EENDPOINTEXISTS:
        return CLI_EXIT_CONFLICT;
    default:
        /* An argument the SDK refused before sending anything is a usage error. */
        if (!sent && roost_err_http_status(rc) == 400) {
            return CLI_EXIT_USAGE;
        }
        return CLI_EXIT_ERROR;
    }
}

/* The server's error.detail, when its answer has one: what exactly was refused, e.g.
 * "internal.test resolves to 10.0.0.1 (10.0.0.0/8)". */
static void print_detail(struct roost_client *c)
{
    size_t len = 0;
    const char *body = c != NULL ? roost_client_last_body(c, &len) : "";
    if (len == 0 || roost_client_http_status(c) < 400) {
        return;
    }
    json_t *doc = json_loadb(body, len, 0, NULL);
    json_t *detail = json_object_get(json_object_get(doc, "error"), "detail");
    if (json_is_string(detail)) {
        fprintf(stderr, "roost: detail: %s\n", json_string_value(detail));
    } else if (json_is_object(detail) || json_is_array(detail)) {
        char *text = json_dumps(detail, JSON_COMPACT);
        if (text != NULL) {
            fprintf(stderr, "roost: detail: %s\n", text);
        }
        free(text);
    }
    json_decref(doc);
}

int cli_fail(const struct cli_args *a, struct roost_client *c, int rc, const char *what)
{
    const char *msg = c != NULL ? roost_client_errmsg(c) : "";
    const char *code = c != NULL ? roost_client_errcode(c) : "";
    if (msg[0] == '\0') {
        msg = roost_strerror(rc);
    }
    if (code[0] == '\0') {
        code = roost_err_code(rc);
    }
    fprintf(stderr, "roost: %s: %s (%s)\n", what != NULL ? what : a->cmd->name, msg, code);
    print_detail(c);
    if (rc == ROOST_EGONE && c != NULL && roost_client_oldest_cursor(c) >= 0) {
        fprintf(stderr, "roost: the oldest cursor kept is %lld; resync with 'roost state'\n",
                (long long)roost_client_oldest_cursor(c));
    }
    if (rc == ROOST_EUNAUTHENTICATED || rc == ROOST_EFORBIDDEN) {
        fprintf(stderr, "roost: 'roost whoami' shows the token in use: its tenant, scopes and "
                        "expiry\n");
    }
    bool sent = c != NULL && roost_client_http_status(c) != 0;
    const char *rid = c != NULL ? roost_client_request_id(c) : "";
    if (sent && roost_client_http_status(c) >= 500 && rid[0] != '\0') {
        fprintf(stderr, "roost: request id %s\n", rid);
    }
    return cli_exit_code(rc, sent || rc == ROOST_ECONNECT);
}

/* Indented JSON text of v with reals as short as still reads back exactly (caller frees). */
static char *pretty_dump(const json_t *v)
{
    const size_t base = JSON_ENCODE_ANY | JSON_INDENT(2);
    char *text = json_dumps(v, base | JSON_REAL_PRECISION(15));
    if (text == NULL) {
        return NULL;
    }
    json_error_t err;
    json_t *back = json_loads(text, JSON_DECODE_ANY, &err);
    int same = back != NULL && json_equal(back, v);
    json_decref(back);
    if (same) {
        return text;
    }
    free(text);
    return json_dumps(v, base);
}

int cli_print_json(const struct cli_args *a, const char *text, size_t len)
{
    int pretty = a->pretty >= 0 ? a->pretty : isatty(STDOUT_FILENO);
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ')) {
        len--;
    }
    char *out = NULL;
    /* Compact output passes the server's bytes through when they are one line already: no
     * number or string is re-encoded on the way. */
    if (pretty || memchr(text, '\n', len) != NULL) {
        json_error_t err;
        json_t *v = json_loadb(text, len, JSON_DECODE_ANY, &err);
        if (v != NULL) {
            out = pretty ? pretty_dump(v) : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            json_decref(v);
        }
    }
    if (out != NULL) {
        fputs(out, stdout);
        free(out);
    } else {
        fwrite(text, 1, len, stdout);
    }
    fputc('\n', stdout);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "roost: %s: cannot write the output: %s\n", a->cmd->name, strerror(errno));
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}

int cli_print_last_body(const struct cli_args *a, struct roost_client *c)
{
    size_t len = 0;
    const char *body = roost_client_last_body(c, &len);
    return len > 0 ? cli_print_json(a, body, len) : CLI_EXIT_OK;
}

int cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (s == NULL) {
        return -1;
    }
    return strutil_parse_i64(s, strlen(s), min, max, out);
}

int cli_parse_duration(const char *s, int64_t *seconds)
{
    if (s == NULL || s[0] == '\0') {
        return -1;
    }
    int64_t total = 0;
    const char *p = s;
    while (*p != '\0') {
        if (*p < '0' || *p > '9') {
            return -1;
        }
        int64_t n = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (n > (INT64_MAX - 9) / 10) {
                return -1;
            }
            n = n * 10 + (*p - '0');
        }
        int64_t unit = 1;
        switch (*p) {
        case '\0':
            if (p != s + strspn(s, "0123456789")) {
                return -1; /* a bare number only on its own ("3600"), not after "1h" */
            }
            break;
        case 's':
            p++;
            break;
        case 'm':
            unit = 60;
            p++;
            break;
        case 'h':
            unit = 3600;
            p++;
            break;
        case 'd':
            unit = 86400;
            p++;
            break;
        case 'w':
            unit = 7 * 86400;
            p++;
            break;
        default:
            return -1;
        }
        if (n > (INT64_MAX - total) / unit) {
            return -1;
        }
        total += n * unit;
    }
    *seconds = total;
    return 0;
}

int cli_read_file(const char *path, size_t max_bytes, char **out, size_t *len, char *err,
                  size_t errlen)
{
    *out = NULL;
    *len = 0;
    if (strcmp(path, "-") != 0) {
        if (fsutil_read_bounded(path, max_bytes, out, len) == 0) {
            return 0;
        }
        if (errno == EFBIG) {
            snprintf(err, errlen, "%s is larger than %zu bytes", path, max_bytes);
        } else if (errno == ENOMEM) {
            snprintf(err, errlen, "out of memory");
        } else {
            snprintf(err, errlen, "cannot %s %s: %s", errno == EIO ? "read" : "open", path,
                     strerror(errno));
        }
        return -1;
    }
    struct dynbuf b;
    dynbuf_init(&b, max_bytes);
    char chunk[4096];
    size_t got;
    while (b.err == DYNBUF_OK && (got = fread(chunk, 1, sizeof chunk, stdin)) > 0) {
        dynbuf_add(&b, chunk, got);
    }
    if (ferror(stdin)) {
        snprintf(err, errlen, "cannot read standard input: %s", strerror(errno));
    } else if (b.err == DYNBUF_ELIMIT) {
        snprintf(err, errlen, "standard input is larger than %zu bytes", max_bytes);
    } else if (b.err == DYNBUF_ENOMEM) {
        snprintf(err, errlen, "out of memory");
    } else {
        /* An empty input still yields an empty string. */
        dynbuf_add(&b, "", 0);
        if (b.err == DYNBUF_OK) {
            *out = b.s;
            *len = b.len;
            return 0;
        }
        snprintf(err, errlen, "out of memory");
    }
    dynbuf_cleanup(&b);
    return -1;
}

int cli_print_ndjson(const struct roost_events *evs)
{
    for (size_t i = 0; i < evs->count; i++) {
        fputs(evs->items[i]->json, stdout);
        fputc('\n', stdout);
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "roost: cannot write the output: %s\n", strerror(errno));
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}
