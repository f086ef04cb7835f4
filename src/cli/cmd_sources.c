/* SPDX-License-Identifier: MIT */
/* `roost admin sources add / list / show / rm / rotate / receipts`: the tenant's inbound webhook
 * sources (tenant:admin; doc/INGEST.md), over the SDK's roost_client_request. */
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#include "common/banned.h"

#define SECRET_FILE_MAX 4096

/* --secret or --secret-file into body["secret"] (neither: roostd makes one). */
static int put_secret(struct cli_args *a, json_t *body)
{
    const char *given = cli_str(a, "secret"), *file = cli_str(a, "secret-file");
    if (given != NULL && file != NULL) {
        return cli_usage_error(a, "give at most one of --secret and --secret-file");
    }
    if (given != NULL) {
        json_object_set_new(body, "secret", json_string(given));
    } else if (file != NULL) {
        char *text = NULL, err[512];
        size_t len = 0;
        if (cli_read_file(file, SECRET_FILE_MAX, &text, &len, err, sizeof err) != 0) {
            fprintf(stderr, "roost: %s\n", err);
            return CLI_EXIT_USAGE;
        }
        while (len > 0 &&
               (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ')) {
            text[--len] = '\0';
        }
        json_object_set_new(body, "secret", json_stringn(text, len));
        OPENSSL_cleanse(text, len);
        free(text);
    }
    return CLI_EXIT_OK;
}

/* Sends body as JSON and prints the answer. */
static int send_json(struct cli_args *a, const char *method, const char *path, json_t *body,
                     const char *what)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text == NULL) {
        fprintf(stderr, "roost: %s: out of memory\n", what);
        return CLI_EXIT_USAGE;
    }
    int r = cli_call(a, method, path, text, what);
    OPENSSL_cleanse(text, strlen(text));
    free(text);
    return r;
}

int cmd_admin_sources_add(struct cli_args *a)
{
    const char *agents = cli_str(a, "agents"), *pointer = cli_str(a, "agent-pointer"),
               *selector = cli_str(a, "agent-selector"), *options = cli_str(a, "options");
    if ((agents != NULL) == (pointer != NULL)) {
        return cli_usage_error(a, "give --agents A,B,... or --agent-pointer P with "
                                  "--agent-selector SEL");
    }
    json_t *body =
        json_pack("{s:s, s:s}", "name", cli_str(a, "name"), "scheme", cli_str(a, "scheme"));
    if (body == NULL) {
        return cli_usage_error(a, "--name and --scheme are text");
    }
    if (agents != NULL) {
        json_t *list = json_array();
        for (const char *p = agents; *p != '\0';) {
            size_t n = strcspn(p, ",");
            json_array_append_new(list, json_stringn(p, n));
            p += n + (p[n] == ',');
        }
        json_object_set_new(body, "agents", list);
    } else {
        json_object_set_new(body, "agent_pointer", json_string(pointer));
        if (selector != NULL) {
            json_object_set_new(body, "agent_selector", json_string(selector));
        }
    }
    if (options != NULL) {
        json_t *o = json_loads(options, 0, NULL);
        if (!json_is_object(o)) {
            json_decref(o);
            json_decref(body);
            return cli_usage_error(a, "--options: expected a JSON object, e.g. "
                                      "'{\"header\":\"X-Token\"}'");
        }
        json_object_set_new(body, "options", o);
    }
    int r = put_secret(a, body);
    if (r != CLI_EXIT_OK) {
        json_decref(body);
        return r;
    }
    return send_json(a, "POST", "/api/v1/admin/sources", body, "admin sources add");
}

int cmd_admin_sources_list(struct cli_args *a)
{
    char path[1024] = "/api/v1/admin/sources", limit[24];
    const char *next = cli_str(a, "next");
    if (next != NULL && !cli_safe_id(next)) {
        return cli_usage_error(a, "--next: expected the page token of the previous answer");
    }
    snprintf(limit, sizeof limit, "%lld", (long long)cli_num(a, "limit", 0));
    cli_add_query(path, sizeof path, "limit", cli_given(a, "limit") ? limit : NULL);
    cli_add_query(path, sizeof path, "next", next);
    static const char *const columns[] = {
        "source_id", "name", "scheme", "ingest_url", "previous_secret_valid_until:OLD SECRET UNTIL",
        NULL};
    return cli_call_list(a, path, "admin sources list", "sources", columns);
}

/* The source's own path plus `suffix`; a usage error when the id is not one. */
static int source_path(struct cli_args *a, const char *suffix, char *path, size_t cap)
{
    if (!cli_safe_id(a->argv[0])) {
        return cli_usage_error(a, "SOURCE_ID: expected a source id, got '%s'", a->argv[0]);
    }
    snprintf(path, cap, "/api/v1/admin/sources/%s%s", a->argv[0], suffix);
    return CLI_EXIT_OK;
}

int cmd_admin_sources_show(struct cli_args *a)
{
    char path[384];
    int r = source_path(a, "", path, sizeof path);
    return r != CLI_EXIT_OK ? r : cli_call(a, "GET", path, NULL, "admin sources show");
}

int cmd_admin_sources_rm(struct cli_args *a)
{
    char path[384];
    int r = source_path(a, "", path, sizeof path);
    return r != CLI_EXIT_OK ? r : cli_call(a, "DELETE", path, NULL, "admin sources rm");
}

int cmd_admin_sources_rotate(struct cli_args *a)
{
    char path[384];
    int r = source_path(a, "/rotate", path, sizeof path);
    if (r != CLI_EXIT_OK) {
        return r;
    }
    json_t *body = json_object();
    if (cli_given(a, "overlap")) {
        json_object_set_new(body, "overlap_s", json_integer(cli_num(a, "overlap", 0)));
    }
    if ((r = put_secret(a, body)) != CLI_EXIT_OK) {
        json_decref(body);
        return r;
    }
    return send_json(a, "POST", path, body, "admin sources rotate");
}

int cmd_admin_sources_receipts(struct cli_args *a)
{
    char path[1024], limit[24];
    int r = source_path(a, "/receipts", path, sizeof path);
    if (r != CLI_EXIT_OK) {
        return r;
    }
    const char *next = cli_str(a, "next");
    if (next != NULL && !cli_safe_id(next)) {
        return cli_usage_error(a, "--next: expected the page token of the previous answer");
    }
    snprintf(limit, sizeof limit, "%lld", (long long)cli_num(a, "limit", 0));
    cli_add_query(path, sizeof path, "limit", cli_given(a, "limit") ? limit : NULL);
    cli_add_query(path, sizeof path, "next", next);
    static const char *const columns[] = {"at",     "outcome", "reason", "delivery_id",
                                          "events", "size",    "peer",   NULL};
    return cli_call_list(a, path, "admin sources receipts", "receipts", columns);
}
