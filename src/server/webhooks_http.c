/* SPDX-License-Identifier: MIT */
/* The only way roostd talks to a webhook endpoint (webhooks.h): libcurl, https only, redirects
 * never followed, no proxy from the environment, and the destination filter checked on every
 * socket libcurl opens (CURLOPT_OPENSOCKETFUNCTION), so a name that resolves elsewhere at
 * delivery time than at registration (DNS rebinding) still cannot reach a forbidden address. */
#include "server/webhooks.h"

#include <curl/curl.h>
#include <jansson.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/ids.h"
#include "common/timeutil.h"
#include "server/config.h"

#include "common/banned.h"

/* The most of an answer kept (the verification reads it; the attempt log keeps its head). */
#define ANSWER_MAX 65536

struct webhooks_call {
    CURL *easy;
    const struct webhooks_net *net;
    struct curl_slist *headers;
    char *body;
    char *answer;
    size_t answer_len;
    bool forbidden; /* the filter refused an address libcurl wanted to connect to */
    int64_t start_ms;
};

static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *addr)
{
    struct webhooks_call *c = arg;
    (void)purpose;
    if (!ssrf_allowed(&c->net->filter, &addr->addr, NULL)) {
        c->forbidden = true;
        return CURL_SOCKET_BAD;
    }
    return socket(addr->family, addr->socktype, addr->protocol);
}

static size_t on_answer(char *data, size_t size, size_t nmemb, void *arg)
{
    struct webhooks_call *c = arg;
    size_t n = size * nmemb;
    size_t keep = c->answer_len + n > ANSWER_MAX ? ANSWER_MAX - c->answer_len : n;
    if (keep > 0) {
        char *grown = realloc(c->answer, c->answer_len + keep + 1);
        if (grown == NULL) {
            return 0; /* aborts the transfer: counted as a failure */
        }
        memcpy(grown + c->answer_len, data, keep);
        c->answer = grown;
        c->answer_len += keep;
        c->answer[c->answer_len] = '\0';
    }
    return n;
}

/* webhooks.ca_file adds to the CAs libcurl already loaded (CURLOPT_CAINFO would replace them). */
static CURLcode add_ca(CURL *easy, void *ssl_ctx, void *arg)
{
    const struct webhooks_net *net = arg;
    (void)easy;
    if (net->ca_file[0] != '\0' &&
        SSL_CTX_load_verify_locations(ssl_ctx, net->ca_file, NULL) != 1) {
        return CURLE_SSL_CACERT_BADFILE;
    }
    return CURLE_OK;
}

int webhooks_net_init(struct webhooks_net *net, const struct config *cfg, char *err, size_t errlen)
{
    memset(net, 0, sizeof *net);
    if (ssrf_filter_parse(&net->filter, cfg->webhooks_allow_cidrs, err, errlen) != 0) {
        return -1;
    }
    if (strlen(cfg->webhooks_ca_file) >= sizeof net->ca_file) {
        snprintf(err, errlen, "webhooks.ca_file: path too long");
        return -1;
    }
    snprintf(net->ca_file, sizeof net->ca_file, "%s", cfg->webhooks_ca_file);
    net->connect_timeout_ms = (long)cfg->webhooks_connect_timeout_ms;
    return 0;
}

void webhooks_call_free(struct webhooks_call *c)
{
    if (c == NULL) {
        return;
    }
    curl_easy_cleanup(c->easy);
    curl_slist_free_all(c->headers);
    free(c->body);
    free(c->answer);
    free(c);
}

struct webhooks_call *webhooks_call_new(const struct webhooks_net *net, const char *url,
                                        struct webhooks_headers *headers, const char *body,
                                        size_t body_len, long timeout_ms)
{
    struct webhooks_call *c = calloc(1, sizeof *c);
    if (c == NULL || (c->easy = curl_easy_init()) == NULL ||
        (c->body = malloc(body_len + 1)) == NULL) {
        webhooks_call_free(c);
        webhooks_headers_cleanup(headers);
        return NULL;
    }
    c->net = net;
    if (body_len > 0) {
        memcpy(c->body, body, body_len);
    }
    c->body[body_len] = '\0';
    bool ok = true;
    for (size_t i = 0; i < headers->n; i++) {
        struct curl_slist *l = curl_slist_append(c->headers, headers->lines[i]);
        ok = ok && l != NULL;
        c->headers = l != NULL ? l : c->headers;
    }
    struct curl_slist *l = curl_slist_append(c->headers, "Expect:");
    c->headers = l != NULL ? l : c->headers;
    webhooks_headers_cleanup(headers);
    CURL *e = c->easy;
    ok = ok && l != NULL && curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https") == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_PROXY, "") == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, c) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, add_ca) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_SSL_CTX_DATA, (void *)net) == CURLE_OK &&
         (body == NULL /* a GET */
              ? curl_easy_setopt(e, CURLOPT_HTTPGET, 1L) == CURLE_OK
              : curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->body) == CURLE_OK &&
                    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len) ==
                        CURLE_OK) &&
         curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_USERAGENT, "roostd-webhooks/1") == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_answer) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_WRITEDATA, c) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, net->connect_timeout_ms) == CURLE_OK &&
         curl_easy_setopt(e, CURLOPT_PRIVATE, c) == CURLE_OK;
    if (!ok) {
        webhooks_call_free(c);
        return NULL;
    }
    c->start_ms = time_mono_ms();
    return c;
}

void *webhooks_call_easy(struct webhooks_call *c)
{
    return c->easy;
}

void webhooks_result_cleanup(struct webhooks_result *r)
{
    free(r->body);
    memset(r, 0, sizeof *r);
}

void webhooks_call_finish(struct webhooks_call *c, int code, struct webhooks_result *r)
{
    memset(r, 0, sizeof *r);
    r->latency_ms = time_mono_ms() - c->start_ms;
    long status = 0;
    (void)curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
    if (c->forbidden) {
        r->error_class = "destination_forbidden";
    } else if (code == CURLE_OK) {
        r->status = status;
        r->error_class = status >= 200 && status < 300   ? "ok"
                         : status >= 300 && status < 400 ? "redirect"
                         : status == 410                 ? "gone"
                                                         : "http_status";
    } else if (code == CURLE_OPERATION_TIMEDOUT) {
        r->status = status;
        r->error_class = "timeout";
    } else if (code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CONNECT_ERROR ||
               code == CURLE_SSL_CACERT_BADFILE || code == CURLE_SSL_CERTPROBLEM) {
        r->error_class = "tls";
    } else if (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST) {
        r->error_class = "connect";
    } else {
        r->error_class = "error";
    }
    if (c->answer != NULL) {
        snprintf(r->head, sizeof r->head, "%s", c->answer);
        r->body = c->answer;
        r->body_len = c->answer_len;
        c->answer = NULL;
        c->answer_len = 0;
    }
}

void webhooks_call_run(struct webhooks_call *c, struct webhooks_result *r)
{
    CURLcode code = curl_easy_perform(c->easy);
    webhooks_call_finish(c, (int)code, r);
}

int webhooks_url_check(const struct webhooks_net *net, const char *url, char *why, size_t whylen)
{
    why[0] = '\0';
    if (url == NULL || strlen(url) > STORE_URL_MAX) {
        return ROOST_EWEBHOOKURL;
    }
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL, *fragment = NULL;
    int rc = ROOST_OK;
    if (u == NULL) {
        return ROOST_ENOMEM;
    }
    if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        rc = ROOST_EWEBHOOKURL;
        goto out;
    }
    if (strcmp(scheme, "https") != 0) {
        rc = ROOST_EHTTPSREQUIRED;
        goto out;
    }
    if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
        curl_url_get(u, CURLUPART_FRAGMENT, &fragment, 0) == CURLUE_OK) {
        rc = ROOST_EWEBHOOKURL; /* credentials or a fragment have no place in a webhook URL */
        goto out;
    }
    (void)curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    /* An IPv6 literal comes back in brackets. */
    char name[300];
    size_t hl = strlen(host);
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        snprintf(name, sizeof name, "%.*s", (int)(hl - 2), host + 1);
        char *zone = strchr(name, '%');
        if (zone != NULL) {
            *zone = '\0';
        }
    } else {
        snprintf(name, sizeof name, "%s", host);
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(name, port != NULL ? port : "443", &hints, &res) != 0 || res == NULL) {
        snprintf(why, whylen, "%s does not resolve", name);
        rc = ROOST_EDESTFORBIDDEN;
        goto out;
    }
    /* Every address must pass: libcurl may try any of them. */
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        const char *rule = NULL;
        if (!ssrf_allowed(&net->filter, ai->ai_addr, &rule)) {
            char text[INET6_ADDRSTRLEN + 1] = "?";
            (void)getnameinfo(ai->ai_addr, ai->ai_addrlen, text, sizeof text, NULL, 0,
                              NI_NUMERICHOST);
            snprintf(why, whylen, "%s resolves to %s (%s)", name, text, rule);
            rc = ROOST_EDESTFORBIDDEN;
            break;
        }
    }
    freeaddrinfo(res);
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(user);
    curl_free(fragment);
    curl_url_cleanup(u);
    return rc;
}

int webhooks_verify_endpoint(const struct webhooks_net *net, const struct webhooks_signer *signer,
                             const char *url, const char *secret, long timeout_ms, char *why,
                             size_t whylen)
{
    unsigned char key[WEBHOOKS_SECRET_MAX_BYTES], nonce[24];
    size_t key_len = 0;
    char *challenge = NULL, *body = NULL, expect[65], msg_id[IDS_LEASE_TOKEN_LEN + 8];
    char lt[IDS_LEASE_TOKEN_LEN + 1];
    struct webhooks_headers h = {0};
    struct webhooks_result r = {0};
    struct webhooks_call *c = NULL;
    json_t *answer = NULL;
    int rc = webhooks_secret_key(secret, key, &key_len);
    why[0] = '\0';
    if (rc != ROOST_OK) {
        return rc;
    }
    if (ids_random(nonce, sizeof nonce) != 0 || ids_lease_token(lt) != 0 ||
        b64_encode(B64_URL, nonce, sizeof nonce, &challenge, NULL) != 0) {
        rc = ROOST_EINTERNAL;
        goto out;
    }
    snprintf(msg_id, sizeof msg_id, "verify_%s", lt + 3);
    json_t *doc = json_pack("{s:s,s:s}", "type", "endpoint.verification", "challenge", challenge);
    body = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (body == NULL) {
        rc = ROOST_ENOMEM;
        goto out;
    }
    if ((rc = webhooks_headers_build(signer, key, key_len, url, msg_id, time_now_ms() / 1000, body,
                                     strlen(body), &h)) != ROOST_OK) {
        goto out;
    }
    if ((c = webhooks_call_new(net, url, &h, body, strlen(body), timeout_ms)) == NULL) {
        rc = ROOST_ENOMEM;
        goto out;
    }
    webhooks_call_run(c, &r);
    rc = ROOST_EVERIFYFAILED;
    if (strcmp(r.error_class, "destination_forbidden") == 0) {
        snprintf(why, whylen, "a resolved address is forbidden");
        rc = ROOST_EDESTFORBIDDEN;
        goto out;
    }
    if (r.status != 200) {
        snprintf(why, whylen, "the endpoint answered %ld (%s), not 200", r.status, r.error_class);
        goto out;
    }
    answer = r.body != NULL ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
    const char *got = json_string_value(json_object_get(answer, "challenge_response"));
    webhooks_challenge_answer(key, key_len, challenge, expect);
    if (got == NULL || strlen(got) != 64 || CRYPTO_memcmp(got, expect, 64) != 0) {
        snprintf(why, whylen, "challenge_response is missing or wrong");
        goto out;
    }
    rc = ROOST_OK;
out:
    OPENSSL_cleanse(key, sizeof key);
    json_decref(answer);
    webhooks_result_cleanup(&r);
    webhooks_call_free(c);
    webhooks_headers_cleanup(&h);
    free(challenge);
    free(body);
    return rc;
}
