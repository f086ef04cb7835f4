/* SPDX-License-Identifier: MIT */
/* `roost login`: device login (RFC 8628, doc/CREDENTIALS.md). Starts a device authorization,
 * prints the user code and how an operator approves it, polls at the interval the server asks
 * (slow_down adds to it), and saves the refresh token in the credential store (roost_token.h).
 * Every other command then finds the logged-in device without a token option. With
 * --signing-key ed25519 the device registers an Ed25519 key pair of its own in the token call,
 * and libroost makes a new one at every refresh. */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/jsonutil.h"

#include "common/banned.h"

#define GRANT "urn:ietf:params:oauth:grant-type:device_code"

static void sleep_s(int64_t s)
{
    struct timespec ts = {.tv_sec = (time_t)s};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* POSTs body to path; *out the answer (2xx) or the error body (400). The HTTP status or -1. */
static int post(struct roost_client *c, const char *path, json_t *body, json_t **out)
{
    char *text = json_dumps(body, JSON_COMPACT);
    char *resp = NULL;
    int status = 0;
    int rc = text ? roost_client_request(c, "POST", path, text, &status, &resp) : ROOST_ENOMEM;
    if (text) {
        OPENSSL_cleanse(text, strlen(text));
        free(text);
    }
    *out = NULL;
    if (rc == ROOST_OK) {
        *out = json_loads(resp, 0, NULL);
        OPENSSL_cleanse(resp, strlen(resp));
        roost_free(resp);
        return status;
    }
    if (status == 400) {
        size_t n = 0;
        const char *b = roost_client_last_body(c, &n);
        *out = b ? json_loadb(b, n, 0, NULL) : NULL;
        return 400;
    }
    fprintf(stderr, "roost: login: %s (%s)\n", roost_client_errmsg(c), roost_err_code(rc));
    return -1;
}

int cmd_login(struct cli_args *a)
{
    const char *server = cli_str(a, "server");
    if (server == NULL || server[0] == '\0') {
        server = CLI_DEFAULT_SERVER;
    }
    const char *agent = cli_str(a, "agent");
    struct roost_client *c = NULL;
    if (roost_client_new(&c, server, NULL) != ROOST_OK) {
        return cli_usage_error(a, "bad --server URL '%s'", server);
    }
    const char *ca = cli_str(a, "cacert");
    if (ca != NULL) {
        roost_client_set_ca_file(c, ca);
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_t *req =
        json_pack("{s:s, s:s}", "client_id", agent, "device_name", host[0] ? host : "unknown");
    if (cli_str(a, "tenant")) {
        json_object_set_new(req, "tenant", json_string(cli_str(a, "tenant")));
    }
    if (cli_str(a, "scope")) {
        json_object_set_new(req, "scope", json_string(cli_str(a, "scope")));
    }
    json_t *da = NULL;
    int st = post(c, "/oauth/device_authorization", req, &da);
    json_decref(req);
    if (st != 200) {
        fprintf(stderr, "roost: login: %s\n",
                da ? json_string_value(json_object_get(da, "error_description")) : "refused");
        json_decref(da);
        roost_client_free(c);
        return CLI_EXIT_ERROR;
    }
    const char *code = json_string_value(json_object_get(da, "user_code"));
    int64_t interval = json_integer_value(json_object_get(da, "interval"));
    int64_t expires = json_integer_value(json_object_get(da, "expires_in"));
    fprintf(stderr,
            "To approve this device (agent %s, scopes \"%s\"), an operator runs\n"
            "    roost admin devices approve %s\n"
            "or opens %s\n"
            "The code expires in %lld s. Waiting...\n",
            agent, json_string_value(json_object_get(da, "scope")), code,
            json_string_value(json_object_get(da, "verification_uri")), (long long)expires);
    json_t *poll = json_pack("{s:s, s:O, s:s}", "grant_type", GRANT, "device_code",
                             json_object_get(da, "device_code"), "client_id", agent);
    int r = CLI_EXIT_ERROR;
    /* The private key stays in this buffer until it is saved, then is wiped. */
    char pub[512], priv[512] = "";
    const char *key_alg = cli_str(a, "signing-key");
    bool own_key = key_alg != NULL && strcmp(key_alg, "ed25519") == 0;
    if (own_key && (roost_device_keygen(pub, sizeof pub, priv, sizeof priv) != ROOST_OK ||
                    json_object_set_new(poll, "signing_public_key", json_string(pub)) != 0)) {
        fprintf(stderr, "roost: login: cannot make an Ed25519 key pair\n");
        goto out;
    }
    for (;;) {
        sleep_s(interval > 0 ? interval : 5);
        json_t *ans = NULL;
        st = post(c, "/oauth/token", poll, &ans);
        const char *err = st == 400 ? json_string_value(json_object_get(ans, "error")) : NULL;
        if (st == 200) {
            json_t *key = json_object_get(ans, "signing_key");
            const char *alg = json_string_value(json_object_get(key, "alg"));
            if (own_key && (alg == NULL || strcmp(alg, "ed25519") != 0 ||
                            json_object_set_new(key, "private_key", json_string(priv)) != 0)) {
                fprintf(stderr, "roost: login: roostd did not take the Ed25519 key\n");
                jsonutil_wipe(ans);
                json_decref(ans);
                break;
            }
            char *text = json_dumps(ans, JSON_COMPACT);
            char e[512];
            int rc =
                text ? roost_device_save(cli_str(a, "credentials-dir"), server, text, e, sizeof e)
                     : ROOST_ENOMEM;
            if (text) {
                OPENSSL_cleanse(text, strlen(text));
                free(text);
            }
            if (rc == ROOST_OK) {
                fprintf(stderr,
                        "roost: login: device %s approved for agent %s, scopes \"%s\"; its "
                        "credentials are saved %s%s\n",
                        json_string_value(json_object_get(ans, "device_id")), agent,
                        json_string_value(json_object_get(ans, "scope")), e,
                        own_key ? "; it signs with Ed25519 keys of its own, a new one at every "
                                  "refresh"
                                : "");
                r = CLI_EXIT_OK;
            } else {
                fprintf(stderr, "roost: login: %s\n", e);
            }
            jsonutil_wipe(ans);
            json_decref(ans);
            break;
        }
        if (err != NULL && strcmp(err, "authorization_pending") == 0) {
            json_decref(ans);
            continue;
        }
        if (err != NULL && strcmp(err, "slow_down") == 0) {
            json_int_t next = json_integer_value(json_object_get(ans, "interval"));
            interval = next > interval ? next : interval + 5; /* RFC 8628 §3.5 */
            json_decref(ans);
            continue;
        }
        fprintf(stderr, "roost: login: %s: %s\n", err ? err : "failed",
                ans ? json_string_value(json_object_get(ans, "error_description")) : "");
        json_decref(ans);
        break;
    }
out:
    OPENSSL_cleanse(priv, sizeof priv);
    jsonutil_wipe(poll);
    json_decref(poll);
    json_decref(da);
    roost_client_free(c);
    return r;
}
