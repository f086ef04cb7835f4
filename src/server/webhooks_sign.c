/* SPDX-License-Identifier: MIT */
/* What a webhook delivery carries besides its body (webhooks.h): the Standard Webhooks secret and
 * signature, Content-Digest and roostd's RFC 9421 signature; and the retry schedule. */
#include "server/webhooks.h"

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "common/mac.h"
#include "proto/digest.h"
#include "proto/httpsig.h"
#include "server/server_key.h"

#include "common/banned.h"

/* A delivery signature is valid this long after it was made (receivers allow 300 s of skew). */
#define SIGNATURE_TTL_S 300

int webhooks_secret_key(const char *secret, unsigned char *key, size_t *key_len)
{
    size_t len = secret != NULL ? strlen(secret) : 0, plen = sizeof MAC_STDWH_PREFIX - 1;
    unsigned char *raw = NULL;
    size_t n = 0;
    if (len <= plen || len > STORE_WH_SECRET_MAX || strncmp(secret, MAC_STDWH_PREFIX, plen) != 0 ||
        mac_stdwh_key(secret, &raw, &n) != 0) {
        return ROOST_EWEBHOOKSECRET;
    }
    int rc = ROOST_OK;
    if (n < WEBHOOKS_SECRET_MIN_BYTES || n > WEBHOOKS_SECRET_MAX_BYTES) {
        rc = ROOST_EWEBHOOKSECRET;
    } else {
        memcpy(key, raw, n);
        *key_len = n;
    }
    OPENSSL_cleanse(raw, n);
    free(raw);
    return rc;
}

int webhooks_sign_v1(const unsigned char *key, size_t key_len, const char *msg_id, int64_t ts,
                     const char *body, size_t body_len, char *out, size_t cap)
{
    char tsbuf[24];
    snprintf(tsbuf, sizeof tsbuf, "%lld", (long long)ts);
    char *b64 = NULL;
    if (mac_stdwh_sign(key, key_len, msg_id, tsbuf, body, body_len, &b64) != 0) {
        return ROOST_EINTERNAL;
    }
    int n = snprintf(out, cap, "v1,%s", b64);
    free(b64);
    return n > 0 && (size_t)n < cap ? ROOST_OK : ROOST_EINTERNAL;
}

void webhooks_challenge_answer(const unsigned char *key, size_t key_len, const char *challenge,
                               char out[65])
{
    unsigned char mac[MAC_MAX_BYTES];
    size_t mac_len = 0;
    const struct mac_part part = {challenge, strlen(challenge)};
    out[0] = '\0';
    if (mac_hmac("SHA256", key, key_len, &part, 1, mac, &mac_len) == 0 && mac_len == 32) {
        mac_hex(mac, mac_len, out);
    }
}

void webhooks_headers_cleanup(struct webhooks_headers *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->lines[i]);
    }
    memset(h, 0, sizeof *h);
}

static int header_add(struct webhooks_headers *h, const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 3;
    char *line = h->n < WEBHOOKS_N_HEADERS ? malloc(n) : NULL;
    if (line == NULL) {
        return ROOST_ENOMEM;
    }
    snprintf(line, n, "%s: %s", name, value);
    h->lines[h->n++] = line;
    return ROOST_OK;
}

int webhooks_signer_init(struct webhooks_signer *s, const struct server_key *k)
{
    memset(s, 0, sizeof *s);
    s->pkey = k->key;
    json_t *jwks = json_loads(k->jwks != NULL ? k->jwks : "", 0, NULL);
    const char *kid =
        json_string_value(json_object_get(json_array_get(json_object_get(jwks, "keys"), 0), "kid"));
    int rc = kid != NULL ? ROOST_OK : ROOST_EINTERNAL;
    if (kid != NULL) {
        snprintf(s->kid, sizeof s->kid, "%s", kid);
    }
    json_decref(jwks);
    return rc;
}

/* The target parts of url as an HTTP client sends them: authority is the Host header. */
struct target {
    char *host, *port, *path, *query;
    char authority[STORE_URL_MAX + 8];
};

static void target_cleanup(struct target *t)
{
    curl_free(t->host);
    curl_free(t->port);
    curl_free(t->path);
    curl_free(t->query);
}

static int target_parse(const char *url, struct target *t)
{
    memset(t, 0, sizeof *t);
    CURLU *u = curl_url();
    if (u == NULL) {
        return ROOST_ENOMEM;
    }
    int rc = ROOST_OK;
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &t->host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &t->path, 0) != CURLUE_OK) {
        rc = ROOST_EWEBHOOKURL;
    } else {
        (void)curl_url_get(u, CURLUPART_PORT, &t->port, 0);
        (void)curl_url_get(u, CURLUPART_QUERY, &t->query, 0);
        snprintf(t->authority, sizeof t->authority, "%s%s%s", t->host, t->port ? ":" : "",
                 t->port ? t->port : "");
    }
    curl_url_cleanup(u);
    return rc;
}

int webhooks_headers_build(const struct webhooks_signer *signer, const unsigned char *key,
                           size_t key_len, const char *url, const char *msg_id, int64_t ts,
                           const char *body, size_t body_len, struct webhooks_headers *h)
{
    static const char *const components[] = {"@method",          "@authority",   "@path",
                                             "content-digest",   "content-type", "webhook-id",
                                             "webhook-timestamp"};
    char tsbuf[24], v1[96], nonce[IDS_LEASE_TOKEN_LEN + 1];
    char *digest = NULL, *params = NULL, *sig_input = NULL, *signature = NULL;
    struct target t;
    memset(h, 0, sizeof *h);
    int rc = target_parse(url, &t);
    if (rc != ROOST_OK) {
        return rc;
    }
    snprintf(tsbuf, sizeof tsbuf, "%lld", (long long)ts);
    if ((rc = webhooks_sign_v1(key, key_len, msg_id, ts, body, body_len, v1, sizeof v1)) !=
        ROOST_OK) {
        goto out;
    }
    if (digest_content_field(body, body_len, DIGEST_SHA256, &digest) != 0 ||
        ids_lease_token(nonce) != 0) {
        rc = ROOST_ENOMEM;
        goto out;
    }
    if ((rc = header_add(h, "Content-Type", "application/json")) != ROOST_OK ||
        (rc = header_add(h, "webhook-id", msg_id)) != ROOST_OK ||
        (rc = header_add(h, "webhook-timestamp", tsbuf)) != ROOST_OK ||
        (rc = header_add(h, "webhook-signature", v1)) != ROOST_OK ||
        (rc = header_add(h, "Content-Digest", digest)) != ROOST_OK) {
        goto out;
    }
    const struct httpsig_header hdrs[] = {{"content-digest", digest},
                                          {"content-type", "application/json"},
                                          {"webhook-id", msg_id},
                                          {"webhook-timestamp", tsbuf}};
    struct httpsig_message m = {.method = "POST",
                                .scheme = "https",
                                .authority = t.authority,
                                .path = t.path,
                                .query = t.query,
                                .headers = hdrs,
                                .n_headers = sizeof hdrs / sizeof hdrs[0]};
    struct httpsig_key k = {.alg = HTTPSIG_ALG_ED25519, .pkey = signer->pkey};
    if (httpsig_params_build(components, sizeof components / sizeof components[0], ts,
                             ts + SIGNATURE_TTL_S, nonce, signer->kid, "ed25519", NULL,
                             &params) != HTTPSIG_OK ||
        httpsig_sign(&m, "roost", params, &k, &sig_input, &signature) != HTTPSIG_OK) {
        rc = ROOST_EINTERNAL;
        goto out;
    }
    if ((rc = header_add(h, "Signature-Input", sig_input)) != ROOST_OK ||
        (rc = header_add(h, "Signature", signature)) != ROOST_OK) {
        goto out;
    }
out:
    if (rc != ROOST_OK) {
        webhooks_headers_cleanup(h);
    }
    target_cleanup(&t);
    free(digest);
    free(params);
    free(sig_input);
    free(signature);
    return rc;
}
