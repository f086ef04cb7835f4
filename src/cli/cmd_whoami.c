/* SPDX-License-Identifier: MIT */
/* `roost whoami`: the tenant, subject, scopes and expiry of the token in use, read from the
 * token itself (its JWT claims, not verified; nothing is sent to roostd). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

#include "common/banned.h"

int cmd_whoami(struct cli_args *a)
{
    const char *server = NULL, *token = NULL;
    char *owned = NULL;
    int r = cli_resolve_endpoint(a, &server, &token, &owned);
    if (r != CLI_EXIT_OK) {
        return r;
    }
    json_t *claims = NULL;
    if (cli_jwt_claims(token, &claims) != 0) {
        free(owned);
        return cli_usage_error(a, "the token is not a JWT (three base64url parts, JSON claims)");
    }
    free(owned);
    json_t *scopes = json_array();
    const char *scope = json_string_value(json_object_get(claims, "scope"));
    for (const char *p = scope != NULL ? scope : ""; *p != '\0';) {
        size_t n = strcspn(p, " ");
        if (n > 0) {
            json_array_append_new(scopes, json_stringn(p, n));
        }
        p += n + (p[n] == ' ');
    }
    json_t *exp = json_object_get(claims, "exp");
    json_t *out = json_pack("{s:O?, s:O?, s:o, s:O?}", "tenant", json_object_get(claims, "tenant"),
                            "sub", json_object_get(claims, "sub"), "scopes", scopes, "exp", exp);
    if (out != NULL && json_is_integer(exp)) {
        time_t secs = (time_t)json_integer_value(exp);
        struct tm tm;
        char at[32];
        gmtime_r(&secs, &tm);
        strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
        int64_t left = (int64_t)secs - (int64_t)time(NULL);
        json_object_set_new(out, "expires_at", json_string(at));
        json_object_set_new(out, "expires_in_s", json_integer(left > 0 ? left : 0));
        json_object_set_new(out, "expired", json_boolean(left <= 0));
    }
    json_decref(claims);
    char *text = out != NULL ? json_dumps(out, JSON_COMPACT) : NULL;
    json_decref(out);
    if (text == NULL) {
        fprintf(stderr, "roost: whoami: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    r = cli_print_json(a, text, strlen(text));
    free(text);
    return r;
}
