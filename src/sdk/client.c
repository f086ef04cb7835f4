/* SPDX-License-Identifier: MIT */
/* The client object: creation, settings, the details of the last call and the process-wide
 * libcurl initialisation. */
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "roost/roost.h"
#include "sdk/sdk.h"

#include "common/banned.h"

/* The public headers cannot include src/common: their id buffers are sized by hand, tied here. */
_Static_assert(sizeof(((struct roost_agent_status *)0)->agent_id) == ROOST_ID_MAX + 1,
               "roost_agent_status.agent_id is ROOST_ID_MAX + 1 bytes");
_Static_assert(sizeof(((struct roost_agent_status *)0)->consumer) == ROOST_ID_MAX + 1,
               "roost_agent_status.consumer is ROOST_ID_MAX + 1 bytes");

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

/* libcurl's global state is set up once and never torn down: libroost lives in other people's
 * processes, which may use libcurl themselves, and curl_global_cleanup is not safe to call while
 * another user is active. */
static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

const char *roost_version(void)
{
    return ROOST_VERSION;
}

char *sdk_strdup(const char *s)
{
    if (s == NULL) {
        return NULL;
    }
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (p != NULL) {
        memcpy(p, s, n + 1);
    }
    return p;
}

static bool valid_token(const char *token)
{
    size_t n = strlen(token);
    if (n == 0 || n > ROOST_TOKEN_MAX_BYTES) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)token[i];
        if (ch <= 0x20 || ch >= 0x7f) {
            return false; /* a header value: CR/LF would inject headers */
        }
    }
    return true;
}

int roost_client_new(struct roost_client **out, const char *server_url, const char *token)
{
    if (out == NULL) {
        return ROOST_EINVAL;
    }
    *out = NULL;
    if (server_url == NULL || (token != NULL && !valid_token(token))) {
        return ROOST_EINVAL;
    }
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK) {
        return ROOST_EINTERNAL;
    }
    struct roost_client *c = calloc(1, sizeof *c);
    if (c == NULL) {
        return ROOST_ENOMEM;
    }
    int rc = sdk_url_normalize(server_url, &c->base_url);
    if (rc != ROOST_OK) {
        goto fail;
    }
    if (token != NULL && (c->token = sdk_strdup(token)) == NULL) {
        rc = ROOST_ENOMEM;
        goto fail;
    }
    c->curl = curl_easy_init();
    if (c->curl == NULL) {
        rc = ROOST_EINTERNAL;
        goto fail;
    }
    c->connect_timeout_ms = SDK_DEFAULT_CONNECT_TIMEOUT_MS;
    c->request_timeout_ms = SDK_DEFAULT_REQUEST_TIMEOUT_MS;
    c->max_response_bytes = SDK_DEFAULT_MAX_RESPONSE_BYTES;
    sdk_reset(c);
    *out = c;
    return ROOST_OK;
fail:
    roost_client_free(c);
    return rc;
}

void roost_client_free(struct roost_client *c)
{
    if (c == NULL) {
        return;
    }
    if (c->curl != NULL) {
        curl_easy_cleanup(c->curl);
    }
    free(c->base_url);
    if (c->token != NULL) {
        OPENSSL_cleanse(c->token, strlen(c->token));
        free(c->token);
    }
    free(c->ca_file);
    sdk_signer_free(c->signer);
    dynbuf_cleanup(&c->resp);
    free(c);
}

int roost_client_set_token(struct roost_client *c, const char *token)
{
    if (c == NULL || (token != NULL && !valid_token(token))) {
        return ROOST_EINVAL;
    }
    char *copy = NULL;
    if (token != NULL && (copy = sdk_strdup(token)) == NULL) {
        return ROOST_ENOMEM;
    }
    if (c->token != NULL) {
        OPENSSL_cleanse(c->token, strlen(c->token));
        free(c->token);
    }
    c->token = copy;
    return ROOST_OK;
}

int roost_client_set_token_callback(struct roost_client *c, roost_token_fn fn, void *arg)
{
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    c->token_fn = fn;
    c->token_arg = arg;
    return ROOST_OK;
}

int roost_client_set_signing_key_callback(struct roost_client *c, roost_signing_key_fn fn,
                                          void *arg)
{
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    c->key_fn = fn;
    c->key_arg = arg;
    c->key_gen = 0;
    return ROOST_OK;
}

/* The key the callback gives, when it is a new one; a key that does not load keeps the old. */
static void signing_key_refresh(struct roost_client *c)
{
    char key[4096], key_id[256], alg[64];
    uint64_t gen = c->key_gen;
    key[0] = key_id[0] = alg[0] = '\0';
    int rc = c->key_fn(c->key_arg, &gen, key, sizeof key, key_id, sizeof key_id, alg, sizeof alg);
    key[sizeof key - 1] = key_id[sizeof key_id - 1] = alg[sizeof alg - 1] = '\0';
    if (rc == ROOST_OK && gen != c->key_gen &&
        roost_client_set_signing_key(c, key, key_id, alg[0] != '\0' ? alg : NULL) == ROOST_OK) {
        c->key_gen = gen;
    }
    OPENSSL_cleanse(key, sizeof key);
}

int sdk_token_refresh(struct roost_client *c)
{
    if (c->token_fn != NULL) {
        char buf[ROOST_TOKEN_MAX_BYTES + 2];
        buf[0] = '\0';
        int rc = c->token_fn(c->token_arg, buf, sizeof buf);
        buf[sizeof buf - 1] = '\0';
        if (rc == ROOST_OK && valid_token(buf) &&
            (c->token == NULL || strcmp(buf, c->token) != 0)) {
            roost_client_set_token(c, buf); /* out of memory keeps the old token */
        }
        OPENSSL_cleanse(buf, sizeof buf);
        if (rc == ROOST_EUNAUTHENTICATED) {
            return sdk_fail(c, rc, "the credentials behind the token were refused");
        }
    }
    if (c->key_fn != NULL) {
        signing_key_refresh(c);
    }
    return ROOST_OK;
}

int roost_client_set_timeouts(struct roost_client *c, long connect_timeout_ms,
                              long request_timeout_ms)
{
    if (c == NULL || connect_timeout_ms < 0 || request_timeout_ms < 0) {
        return ROOST_EINVAL;
    }
    if (connect_timeout_ms > 0) {
        c->connect_timeout_ms = connect_timeout_ms;
    }
    if (request_timeout_ms > 0) {
        c->request_timeout_ms = request_timeout_ms;
    }
    return ROOST_OK;
}

int roost_client_set_max_response_bytes(struct roost_client *c, size_t max_bytes)
{
    if (c == NULL || max_bytes < SDK_MIN_RESPONSE_BYTES || max_bytes > (size_t)INT64_MAX / 2) {
        return ROOST_EINVAL;
    }
    c->max_response_bytes = max_bytes;
    return ROOST_OK;
}

int roost_client_set_ca_file(struct roost_client *c, const char *ca_pem_path)
{
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    char *copy = NULL;
    if (ca_pem_path != NULL && (copy = sdk_strdup(ca_pem_path)) == NULL) {
        return ROOST_ENOMEM;
    }
    free(c->ca_file);
    c->ca_file = copy;
    return ROOST_OK;
}

void sdk_reset(struct roost_client *c)
{
    dynbuf_reset(&c->resp);
    c->resp.max = c->max_response_bytes;
    c->http_status = 0;
    c->oldest_cursor = -1;
    c->retry_after_s = -1;
    c->request_id[0] = '\0';
    c->server_version[0] = '\0';
    c->errcode[0] = '\0';
    c->errmsg[0] = '\0';
    c->curl_err[0] = '\0';
}

int sdk_fail(struct roost_client *c, int rc, const char *fmt, ...)
{
    if (c == NULL) {
        return rc;
    }
    snprintf(c->errcode, sizeof c->errcode, "%s", roost_err_code(rc));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
    return rc;
}

int sdk_errbuf_fail(char *errbuf, size_t errlen, int rc, const char *fmt, ...)
{
    if (errbuf != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errbuf, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

const char *roost_client_errmsg(const struct roost_client *c)
{
    return c != NULL ? c->errmsg : "no client";
}

const char *roost_client_errcode(const struct roost_client *c)
{
    return c != NULL ? c->errcode : "invalid_request";
}

int roost_client_http_status(const struct roost_client *c)
{
    return c != NULL ? c->http_status : 0;
}

const char *roost_client_request_id(const struct roost_client *c)
{
    return c != NULL ? c->request_id : "";
}

const char *roost_client_server_version(const struct roost_client *c)
{
    return c != NULL ? c->server_version : "";
}

const char *roost_client_last_body(const struct roost_client *c, size_t *len_out)
{
    if (c == NULL || c->resp.s == NULL) {
        if (len_out != NULL) {
            *len_out = 0;
        }
        return "";
    }
    if (len_out != NULL) {
        *len_out = c->resp.len;
    }
    return c->resp.s;
}

int64_t roost_client_oldest_cursor(const struct roost_client *c)
{
    return c != NULL ? c->oldest_cursor : -1;
}

int64_t roost_client_retry_after_s(const struct roost_client *c)
{
    return c != NULL ? c->retry_after_s : -1;
}

void roost_free(void *p)
{
    free(p);
}
