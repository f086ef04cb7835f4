/* SPDX-License-Identifier: MIT */
/* `roost callbacks add / list / rm`: an agent's webhook endpoint (consume scope), and
 * `roost admin endpoints list / inspect / disable / enable / attempts / replay`: the tenant's
 * endpoints (tenant:admin). Built on the SDK's roost_client_request (doc/API.md "Webhooks"). */
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/base64.h"

#include "common/banned.h"

/* A secret file holds at most this much (a whsec_ string is under 100 bytes). */
#define SECRET_FILE_MAX 4096
/* Random bytes of a secret the CLI makes (Standard Webhooks: 24..64). */
#define SECRET_BYTES 32

/* Ids that go into a path or query as they are: [A-Za-z0-9._:-]{1,128}. */
bool cli_safe_id(const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n == 0 || n > 128) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-' || ch == ':';
        if (!ok) {
            return false;
        }
    }
    return true;
}

/* Sends one request and prints the answer; `what` names it in errors. */
int cli_call(struct cli_args *a, const char *method, const char *path, const char *body,
             const char *what)
{
    struct roost_client *c = NULL;
    int r = cli_connect(a, &c);
    if (r != CLI_EXIT_OK) {
        return r;
    }
    char *resp = NULL;
    int rc = roost_client_request(c, method, path, body, NULL, &resp);
    if (rc == ROOST_OK) {
        r = cli_print_json(a, resp != NULL ? resp : "{}", resp != NULL ? strlen(resp) : 2);
    } else {
        r = cli_fail(a, c, rc, what);
    }
    roost_free(resp);
    roost_client_free(c);
    return r;
}

/* Sends one GET of a list and prints it as --output asks (a table or the server's JSON). */
int cli_call_list(struct cli_args *a, const char *path, const char *what, const char *key,
                  const char *const *columns)
{
    struct roost_client *c = NULL;
    int r = cli_connect(a, &c);
    if (r != CLI_EXIT_OK) {
        return r;
    }
    char *resp = NULL;
    int rc = roost_client_request(c, "GET", path, NULL, NULL, &resp);
    r = rc == ROOST_OK ? cli_print_list(a, c, key, columns) : cli_fail(a, c, rc, what);
    roost_free(resp);
    roost_client_free(c);
    return r;
}

/* Appends "&name=value" (or "?name=value" first) when value is not NULL. */
void cli_add_query(char *path, size_t cap, const char *name, const char *value)
{
    if (value == NULL) {
        return;
    }
    size_t n = strlen(path);
    snprintf(path + n, cap - n, "%c%s=%s", strchr(path, '?') != NULL ? '&' : '?', name, value);
}

/* Appends --limit (when given) and --next (a page token: a safe id) to a listing's path. */
int cli_add_page(struct cli_args *a, char *path, size_t cap)
{
    const char *next = cli_str(a, "next");
    char limit[24];
    if (next != NULL && !cli_safe_id(next)) {
        return cli_usage_error(a, "--next: expected the page token of the previous answer");
    }
    snprintf(limit, sizeof limit, "%lld", (long long)cli_num(a, "limit", 0));
    cli_add_query(path, cap, "limit", cli_given(a, "limit") ? limit : NULL);
    cli_add_query(path, cap, "next", next);
    return CLI_EXIT_OK;
}

int cli_id_path(struct cli_args *a, const char *base, const char *what, const char *suffix,
                char *path, size_t cap)
{
    if (!cli_safe_id(a->argv[0])) {
        return cli_usage_error(a, "%s, got '%s'", what, a->argv[0]);
    }
    snprintf(path, cap, "%s%s%s", base, a->argv[0], suffix);
    return CLI_EXIT_OK;
}

int cli_secret_arg(struct cli_args *a, const char *what, char **out)
{
    const char *given = cli_str(a, "secret"), *file = cli_str(a, "secret-file");
    size_t len = given != NULL ? strlen(given) : 0;
    char err[512];
    *out = NULL;
    if (given != NULL && file != NULL) {
        return cli_usage_error(a, "give at most one of --secret and --secret-file");
    }
    if (given != NULL && (*out = malloc(len + 1)) != NULL) {
        memcpy(*out, given, len + 1);
    } else if (file != NULL) {
        if (cli_read_file(file, SECRET_FILE_MAX, out, &len, err, sizeof err) != 0) {
            fprintf(stderr, "roost: %s: %s\n", what, err);
            return CLI_EXIT_USAGE;
        }
        /* A secret file written by echo ends with a newline: not part of the secret. */
        while (len > 0 &&
               ((*out)[len - 1] == '\n' || (*out)[len - 1] == '\r' || (*out)[len - 1] == ' ')) {
            (*out)[--len] = '\0';
        }
    }
    if ((given != NULL || file != NULL) && *out == NULL) {
        fprintf(stderr, "roost: %s: out of memory\n", what);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static int check_ids(struct cli_args *a, const char *const *names)
{
    for (size_t i = 0; names[i] != NULL; i++) {
        const char *v = cli_str(a, names[i]);
        if (v != NULL && !cli_safe_id(v)) {
            return cli_usage_error(a, "--%s: expected [A-Za-z0-9._:-]{1,128}, got '%s'", names[i],
                                   v);
        }
    }
    return CLI_EXIT_OK;
}

/* The secret: --secret, --secret-file, or a new random one (*made set). *out: caller frees. */
static int secret_of(struct cli_args *a, char **out, bool *made)
{
    int r = cli_secret_arg(a, "callbacks add", out);
    *made = false;
    if (r != CLI_EXIT_OK || *out != NULL) {
        return r;
    }
    unsigned char raw[SECRET_BYTES];
    char *b64 = NULL;
    if (RAND_bytes(raw, sizeof raw) == 1 && b64_encode(B64_STD, raw, sizeof raw, &b64, NULL) == 0) {
        size_t n = strlen(b64) + 7;
        if ((*out = malloc(n)) != NULL) {
            snprintf(*out, n, "whsec_%s", b64);
        }
    }
    OPENSSL_cleanse(raw, sizeof raw);
    free(b64);
    *made = true;
    if (*out == NULL) {
        fprintf(stderr, "roost: callbacks add: out of memory\n");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* What to do about a refused registration. */
static void hint(int rc, bool made)
{
    if (rc == ROOST_EDESTFORBIDDEN) {
        fprintf(stderr, "roost: roostd connects to no loopback, private or otherwise special "
                        "address (doc/WEBHOOKS.md); an operator allows a range with "
                        "webhooks.allow_cidrs\n");
    } else if (rc == ROOST_EVERIFYFAILED) {
        fprintf(stderr, "roost: the endpoint must answer roostd's challenge with "
                        "HMAC-SHA256(secret, challenge) within 10 s (doc/WEBHOOKS.md); a "
                        "certificate of a private CA needs webhooks.ca_file on roostd\n");
        if (made) {
            fprintf(stderr, "roost: the secret was made here, so the endpoint could not know "
                            "it: give it one first and pass it with --secret-file\n");
        }
    }
}

int cmd_callbacks_add(struct cli_args *a)
{
    static const char *const ids[] = {"agent", NULL};
    int r = check_ids(a, ids);
    char *secret = NULL;
    bool made = false;
    if (r != CLI_EXIT_OK || (r = secret_of(a, &secret, &made)) != CLI_EXIT_OK) {
        return r;
    }
    json_t *body = json_pack("{s:s, s:s}", "url", cli_str(a, "url"), "secret", secret);
    char *text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/agents/%s/callbacks", cli_str(a, "agent"));
    struct roost_client *c = NULL;
    if (text == NULL || (r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        r = text == NULL ? CLI_EXIT_USAGE : r;
        goto out;
    }
    if (made) {
        /* The endpoint must know the secret before roostd's challenge reaches it: shown now. */
        fprintf(stderr,
                "roost: callbacks add: a new secret; the endpoint must answer the challenge "
                "with it:\n%s\n",
                secret);
        if (isatty(STDIN_FILENO)) {
            fprintf(stderr, "roost: press Enter once the endpoint has it\n");
            int ch;
            while ((ch = getchar()) != EOF && ch != '\n') {
            }
        }
    }
    char *resp = NULL;
    int rc = roost_client_request(c, "POST", path, text, NULL, &resp);
    if (rc != ROOST_OK) {
        r = cli_fail(a, c, rc, "callbacks add");
        hint(rc, made);
    } else {
        /* A secret made here is shown once, with the endpoint: roostd never shows it again. */
        json_t *ep = json_loads(resp, 0, NULL);
        if (ep != NULL && made) {
            json_object_set_new(ep, "secret", json_string(secret));
        }
        char *shown = ep != NULL ? json_dumps(ep, JSON_COMPACT) : NULL;
        r = cli_print_json(a, shown != NULL ? shown : resp, strlen(shown != NULL ? shown : resp));
        free(shown);
        json_decref(ep);
    }
    roost_free(resp);
    roost_client_free(c);
out:
    if (text != NULL) {
        OPENSSL_cleanse(text, strlen(text));
    }
    free(text);
    OPENSSL_cleanse(secret, strlen(secret));
    free(secret);
    return r;
}

int cmd_callbacks_list(struct cli_args *a)
{
    static const char *const ids[] = {"agent", NULL};
    int r = check_ids(a, ids);
    if (r != CLI_EXIT_OK) {
        return r;
    }
    char path[256];
    snprintf(path, sizeof path, "/api/v1/agents/%s/callbacks", cli_str(a, "agent"));
    return cli_call(a, "GET", path, NULL, "callbacks list");
}

int cmd_callbacks_rm(struct cli_args *a)
{
    static const char *const ids[] = {"agent", NULL};
    int r = check_ids(a, ids);
    if (r != CLI_EXIT_OK) {
        return r;
    }
    if (!cli_safe_id(a->argv[0])) {
        return cli_usage_error(a, "ENDPOINT_ID: expected an endpoint id, got '%s'", a->argv[0]);
    }
    char path[384];
    snprintf(path, sizeof path, "/api/v1/agents/%s/callbacks/%s", cli_str(a, "agent"), a->argv[0]);
    return cli_call(a, "DELETE", path, NULL, "callbacks rm");
}

int cmd_admin_endpoints_list(struct cli_args *a)
{
    static const char *const ids[] = {"agent", "next", NULL};
    int r = check_ids(a, ids);
    if (r != CLI_EXIT_OK) {
        return r;
    }
    char path[512] = "/api/v1/admin/endpoints";
    cli_add_query(path, sizeof path, "agent_id", cli_str(a, "agent"));
    if ((r = cli_add_page(a, path, sizeof path)) != CLI_EXIT_OK) {
        return r;
    }
    static const char *const columns[] = {"endpoint_id", "agent_id:AGENT",         "url",
                                          "status",      "disabled_reason:REASON", "failing_since",
                                          NULL};
    return cli_call_list(a, path, "admin endpoints list", "endpoints", columns);
}

/* The endpoint's own path plus `suffix`; a usage error when the id is not one. */
static int endpoint_path(struct cli_args *a, const char *suffix, char *path, size_t cap)
{
    return cli_id_path(a, "/api/v1/admin/endpoints/", "ENDPOINT_ID: expected an endpoint id",
                       suffix, path, cap);
}

int cmd_admin_endpoints_inspect(struct cli_args *a)
{
    char path[384];
    int r = endpoint_path(a, "", path, sizeof path);
    return r != CLI_EXIT_OK ? r : cli_call(a, "GET", path, NULL, "admin endpoints inspect");
}

int cmd_admin_endpoints_disable(struct cli_args *a)
{
    char path[384];
    int r = endpoint_path(a, "/disable", path, sizeof path);
    return r != CLI_EXIT_OK ? r : cli_call(a, "POST", path, "{}", "admin endpoints disable");
}

int cmd_admin_endpoints_enable(struct cli_args *a)
{
    char path[384];
    int r = endpoint_path(a, "/enable", path, sizeof path);
    return r != CLI_EXIT_OK ? r : cli_call(a, "POST", path, "{}", "admin endpoints enable");
}

int cmd_admin_endpoints_attempts(struct cli_args *a)
{
    static const char *const ids[] = {"event-id", "next", NULL};
    char path[512];
    int r = check_ids(a, ids);
    if (r != CLI_EXIT_OK || (r = endpoint_path(a, "/attempts", path, 384)) != CLI_EXIT_OK) {
        return r;
    }
    cli_add_query(path, sizeof path, "event_id", cli_str(a, "event-id"));
    if ((r = cli_add_page(a, path, sizeof path)) != CLI_EXIT_OK) {
        return r;
    }
    static const char *const columns[] = {"at",         "event_id",    "attempt", "status_code",
                                          "latency_ms", "error_class", NULL};
    return cli_call_list(a, path, "admin endpoints attempts", "attempts", columns);
}

int cmd_admin_endpoints_replay(struct cli_args *a)
{
    static const char *const ids[] = {"event-id", NULL};
    const char *event_id = cli_str(a, "event-id"), *since = cli_str(a, "since");
    char path[384];
    int r = check_ids(a, ids);
    if (r != CLI_EXIT_OK || (r = endpoint_path(a, "/replay", path, sizeof path)) != CLI_EXIT_OK) {
        return r;
    }
    if ((event_id == NULL) == (since == NULL)) {
        return cli_usage_error(a, "give exactly one of --event-id and --since");
    }
    json_t *body = event_id != NULL ? json_pack("{s:s}", "event_id", event_id)
                                    : json_pack("{s:s}", "since", since);
    char *text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (text == NULL) {
        return cli_usage_error(a, "--since: not a string");
    }
    r = cli_call(a, "POST", path, text, "admin endpoints replay");
    free(text);
    return r;
}
