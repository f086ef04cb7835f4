/* SPDX-License-Identifier: MIT */
/* `roost admin devices list / approve / deny / revoke`: the operator's side of device login
 * (doc/CREDENTIALS.md; token scope tenant:admin). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#include "common/banned.h"

/* Percent-encodes everything but RFC 3986's unreserved characters (caller frees). */
static char *cli_url_escape(const char *v)
{
    size_t n = strlen(v);
    char *out = malloc(3 * n + 1);
    if (out == NULL) {
        return NULL;
    }
    char *o = out;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p) != NULL) {
            *o++ = (char)*p;
        } else {
            o += snprintf(o, 4, "%%%02X", *p);
        }
    }
    *o = '\0';
    return out;
}

static int finish(struct cli_args *a, struct roost_client *c, int rc, char *json, const char *what)
{
    int r = rc == ROOST_OK ? cli_print_json(a, json, strlen(json)) : cli_fail(a, c, rc, what);
    roost_free(json);
    roost_client_free(c);
    return r;
}

int cmd_admin_devices_list(struct cli_args *a)
{
    int r;
    struct roost_client *c = NULL;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char path[1024];
    size_t n = (size_t)snprintf(path, sizeof path, "/api/v1/admin/devices?limit=%lld",
                                (long long)cli_num(a, "limit", 100));
    static const char *const names[] = {"agent", "next", "user-code"};
    static const char *const params[] = {"agent_id", "next", "user_code"};
    for (size_t i = 0; i < 3; i++) {
        const char *v = cli_str(a, names[i]);
        if (v != NULL && n < sizeof path) {
            char *esc = cli_url_escape(v);
            if (esc == NULL) {
                roost_client_free(c);
                return CLI_EXIT_ERROR;
            }
            n += (size_t)snprintf(path + n, sizeof path - n, "&%s=%s", params[i], esc);
            free(esc);
        }
    }
    if (n >= sizeof path) {
        roost_client_free(c);
        return cli_usage_error(a, "an option is too long");
    }
    char *json = NULL;
    int rc = roost_client_request(c, "GET", path, NULL, NULL, &json);
    static const char *const columns[] = {
        "device_id", "agent_id",        "status",        "user_code",       "name",
        "address",   "scope_requested", "scope_granted", "last_refresh_at", NULL};
    if (rc == ROOST_OK && cli_output_table(a)) {
        r = cli_print_table(a, json, strlen(json), "devices", columns);
        roost_free(json);
        roost_client_free(c);
        return r;
    }
    return finish(a, c, rc, json, "admin devices list");
}

static int decide(struct cli_args *a, const char *verb)
{
    int r;
    struct roost_client *c = NULL;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    json_t *body = json_pack("{s:s}", "user_code", a->argv[0]);
    const char *scope = strcmp(verb, "approve") == 0 ? cli_str(a, "scope") : NULL;
    if (body != NULL && scope != NULL) {
        json_object_set_new(body, "scope", json_string(scope));
    }
    char *text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (text == NULL) {
        roost_client_free(c);
        return CLI_EXIT_ERROR;
    }
    char path[64], what[64];
    snprintf(path, sizeof path, "/api/v1/admin/devices/%s", verb);
    snprintf(what, sizeof what, "admin devices %s", verb);
    char *json = NULL;
    int rc = roost_client_request(c, "POST", path, text, NULL, &json);
    free(text);
    if (rc == ROOST_OK) {
        /* What was decided, for the person at the terminal (the JSON goes to stdout). */
        json_t *d = json_loads(json, 0, NULL);
        if (d != NULL) {
            fprintf(stderr, "roost: %s device %s: agent %s, scopes \"%s\", name \"%s\", from %s\n",
                    strcmp(verb, "approve") == 0 ? "approved" : "denied",
                    json_string_value(json_object_get(d, "device_id")),
                    json_string_value(json_object_get(d, "agent_id")),
                    json_string_value(json_object_get(
                        d, strcmp(verb, "approve") == 0 ? "scope_granted" : "scope_requested")),
                    json_string_value(json_object_get(d, "name")),
                    json_string_value(json_object_get(d, "address")));
            json_decref(d);
        }
    }
    return finish(a, c, rc, json, what);
}

int cmd_admin_devices_approve(struct cli_args *a)
{
    return decide(a, "approve");
}

int cmd_admin_devices_deny(struct cli_args *a)
{
    return decide(a, "deny");
}

int cmd_admin_devices_revoke(struct cli_args *a)
{
    int r;
    struct roost_client *c = NULL;
    if ((r = cli_connect(a, &c)) != CLI_EXIT_OK) {
        return r;
    }
    char *esc = cli_url_escape(a->argv[0]);
    if (esc == NULL) {
        roost_client_free(c);
        return CLI_EXIT_ERROR;
    }
    char path[512];
    snprintf(path, sizeof path, "/api/v1/admin/devices/%.300s/revoke", esc);
    free(esc);
    char *json = NULL;
    int rc = roost_client_request(c, "POST", path, NULL, NULL, &json);
    return finish(a, c, rc, json, "admin devices revoke");
}
