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

/* --secret or --secret-file into body["secret"] (neither: roostd makes one). */
static int put_secret(struct cli_args *a, json_t *body, const char *what)
{
    char *secret = NULL;
    int r = cli_secret_arg(a, what, &secret);
    if (secret != NULL) {
        json_object_set_new(body, "secret", json_string(secret));
        OPENSSL_cleanse(secret, strlen(secret));
        free(secret);
    }
    return r;
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
    int r = put_secret(a, body, "admin sources add");
    if (r != CLI_EXIT_OK) {
        json_decref(body);
        return r;
    }
    return send_json(a, "POST", "/api/v1/admin/sources", body, "admin sources add");
}

int cmd_admin_sources_list(struct cli_args *a)
{
    char path[1024] = "/api/v1/admin/sources";
    int r = cli_add_page(a, path, sizeof path);
    if (r != CLI_EXIT_OK) {
        return r;
    }
    static const char *const columns[] = {
        "source_id", "name", "scheme", "ingest_url", "previous_secret_valid_until:OLD SECRET UNTIL",
        NULL};
    return cli_call_list(a, path, "admin sources list", "sources", columns);
}

/* The source's own path plus `suffix`; a usage error when the id is not one. */
static int source_path(struct cli_args *a, const char *suffix, char *path, size_t cap)
{
    return cli_id_path(a, "/api/v1/admin/sources/", "SOURCE_ID: expected a source id", suffix, path,
                       cap);
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
    if ((r = put_secret(a, body, "admin sources rotate")) != CLI_EXIT_OK) {
        json_decref(body);
        return r;
    }
    return send_json(a, "POST", path, body, "admin sources rotate");
}

int cmd_admin_sources_receipts(struct cli_args *a)
{
    char path[1024];
    int r = source_path(a, "/receipts", path, sizeof path);
    if (r != CLI_EXIT_OK || (r = cli_add_page(a, path, sizeof path)) != CLI_EXIT_OK) {
        return r;
    }
    static const char *const columns[] = {"at",     "outcome", "reason", "delivery_id",
                                          "events", "size",    "peer",   NULL};
    return cli_call_list(a, path, "admin sources receipts", "receipts", columns);
}
