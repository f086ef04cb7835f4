/* SPDX-License-Identifier: MIT */
/* RFC 9421 request signing for libroost: loads the client's signing key once and adds
 * Content-Digest, Signature-Input and Signature (label sig1) to each request, covering what
 * roostd requires (doc/API.md "Request signatures"). */
#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base64.h"
#include "common/fsutil.h"
#include "common/ids.h"
#include "proto/digest.h"
#include "proto/httpsig.h"
#include "sdk/sdk.h"

#include "common/banned.h"

#define SIGN_LABEL "sig1"
#define SIGN_WINDOW_S 60
#define SIGN_NONCE_BYTES 16 /* 128 bits */
#define SIGN_MIN_SECRET_BYTES 32

struct sdk_signer {
    struct httpsig_key key;
    EVP_PKEY *pkey;
    unsigned char *secret;
    size_t secret_len;
    char *key_id;
    const char *alg_name; /* static, from httpsig_alg_name */
};

void sdk_signer_free(struct sdk_signer *s)
{
    if (s == NULL) {
        return;
    }
    EVP_PKEY_free(s->pkey);
    if (s->secret != NULL) {
        OPENSSL_cleanse(s->secret, s->secret_len);
        free(s->secret);
    }
    free(s->key_id);
    free(s);
}

/* Reads the key text: inline PEM, inline "base64:" secret, or a file of at most
 * HTTPSIG_MAX_KEY_TEXT_BYTES. */
static int key_text(const char *key, char **out, size_t *len, char *err, size_t errlen)
{
    *out = NULL;
    *len = 0;
    if (strstr(key, "-----BEGIN ") != NULL || strncmp(key, "base64:", 7) == 0) {
        const char *p = strncmp(key, "base64:", 7) == 0 ? key + 7 : key;
        size_t n = strlen(p);
        if (n > HTTPSIG_MAX_KEY_TEXT_BYTES) {
            snprintf(err, errlen, "the signing key is longer than %d bytes",
                     HTTPSIG_MAX_KEY_TEXT_BYTES);
            return ROOST_EKEYMATERIAL;
        }
        if ((*out = sdk_strdup(p)) == NULL) {
            return ROOST_ENOMEM;
        }
        *len = n;
        return ROOST_OK;
    }
    if (fsutil_read_bounded(key, HTTPSIG_MAX_KEY_TEXT_BYTES, out, len) == 0) {
        return ROOST_OK;
    }
    switch (errno) {
    case ENOMEM:
        return ROOST_ENOMEM;
    case EFBIG:
        snprintf(err, errlen, "the signing key file %s is too large", key);
        return ROOST_EKEYMATERIAL;
    case EIO:
        snprintf(err, errlen, "cannot read the signing key file %s", key);
        return ROOST_EIO;
    default:
        snprintf(err, errlen, "cannot open the signing key file %s", key);
        return ROOST_EIO;
    }
}

/* The HMAC secret: base64 (standard or url alphabet), surrounding whitespace ignored. */
static int load_secret(struct sdk_signer *s, const char *text, size_t len)
{
    while (len > 0 && isspace((unsigned char)text[len - 1])) {
        len--;
    }
    while (len > 0 && isspace((unsigned char)*text)) {
        text++;
        len--;
    }
    if (b64_decode(B64_STD, false, text, len, &s->secret, &s->secret_len) != 0 &&
        b64_decode(B64_URL, false, text, len, &s->secret, &s->secret_len) != 0) {
        return ROOST_EKEYMATERIAL;
    }
    if (s->secret_len < SIGN_MIN_SECRET_BYTES || s->secret_len > HTTPSIG_MAX_SECRET_BYTES) {
        return ROOST_EKEYMATERIAL;
    }
    return ROOST_OK;
}

/* The alg a private key implies when none was named. */
static enum httpsig_alg alg_of_pkey(EVP_PKEY *pkey)
{
    switch (EVP_PKEY_get_base_id(pkey)) {
    case EVP_PKEY_ED25519:
        return HTTPSIG_ALG_ED25519;
    case EVP_PKEY_EC:
        return HTTPSIG_ALG_ECDSA_P256_SHA256;
    case EVP_PKEY_RSA:
    case EVP_PKEY_RSA_PSS:
        return HTTPSIG_ALG_RSA_PSS_SHA512;
    default:
        return HTTPSIG_ALG_NONE;
    }
}

int sdk_signer_new(const char *key, const char *key_id, const char *alg, struct sdk_signer **out,
                   char *err, size_t errlen)
{
    *out = NULL;
    err[0] = '\0';
    if (key_id == NULL || !ids_valid_name(key_id, strlen(key_id))) {
        snprintf(err, errlen, "%s", roost_strerror(ROOST_EKEYID));
        return ROOST_EKEYID;
    }
    enum httpsig_alg alg_id = HTTPSIG_ALG_NONE;
    if (alg != NULL && (alg_id = httpsig_alg_from_name(alg)) == HTTPSIG_ALG_NONE) {
        snprintf(err, errlen,
                 "unknown alg '%.64s' (ed25519, ecdsa-p256-sha256, rsa-pss-sha512, "
                 "hmac-sha256)",
                 alg);
        return ROOST_EKEYALG;
    }
    struct sdk_signer *s = calloc(1, sizeof *s);
    char *text = NULL;
    size_t len = 0;
    if (s == NULL || (s->key_id = sdk_strdup(key_id)) == NULL) {
        sdk_signer_free(s);
        return ROOST_ENOMEM;
    }
    int rc = key_text(key, &text, &len, err, errlen);
    if (rc != ROOST_OK) {
        goto fail;
    }
    if (alg_id == HTTPSIG_ALG_HMAC_SHA256) {
        if ((rc = load_secret(s, text, len)) != ROOST_OK) {
            snprintf(err, errlen, "the hmac-sha256 secret must be base64 of %d..%d bytes",
                     SIGN_MIN_SECRET_BYTES, HTTPSIG_MAX_SECRET_BYTES);
            goto fail;
        }
    } else {
        if (httpsig_key_from_pem(text, len, &s->pkey) != HTTPSIG_OK) {
            snprintf(err, errlen, "the signing key is not a PEM private key");
            rc = ROOST_EKEYMATERIAL;
            goto fail;
        }
        if (alg_id == HTTPSIG_ALG_NONE && (alg_id = alg_of_pkey(s->pkey)) == HTTPSIG_ALG_NONE) {
            snprintf(err, errlen, "unsupported key type: name the alg");
            rc = ROOST_EKEYALG;
            goto fail;
        }
    }
    s->key = (struct httpsig_key){
        .alg = alg_id, .pkey = s->pkey, .secret = s->secret, .secret_len = s->secret_len};
    s->alg_name = httpsig_alg_name(alg_id);
    /* Sign once now, so a public key or a key that does not fit alg fails here, not on every
     * request. */
    static const unsigned char probe[] = "roost";
    unsigned char *sig = NULL;
    size_t sig_len = 0;
    int hrc = httpsig_sign_raw(&s->key, probe, sizeof probe - 1, &sig, &sig_len);
    free(sig);
    if (hrc != HTTPSIG_OK) {
        if (hrc == HTTPSIG_ENOMEM) {
            rc = ROOST_ENOMEM;
        } else {
            snprintf(err, errlen, "the key cannot sign with %s (a private key is needed): %s",
                     s->alg_name, httpsig_strerror(hrc));
            rc = hrc == HTTPSIG_EALG ? ROOST_EKEYALG : ROOST_EKEYMATERIAL;
        }
        goto fail;
    }
    OPENSSL_cleanse(text, len);
    free(text);
    *out = s;
    return ROOST_OK;
fail:
    if (text != NULL) {
        OPENSSL_cleanse(text, len);
        free(text);
    }
    sdk_signer_free(s);
    if (rc == ROOST_ENOMEM) {
        snprintf(err, errlen, "out of memory");
    }
    return rc;
}

/* The parts of the request URL the signature covers, as libcurl sends them. */
struct target {
    char authority[300];
    char *path;  /* owned */
    char *query; /* owned, NULL when absent */
};

static int parse_target(const char *url, struct target *t)
{
    memset(t, 0, sizeof *t);
    CURLU *u = curl_url();
    if (u == NULL) {
        return ROOST_ENOMEM;
    }
    char *scheme = NULL, *host = NULL, *port = NULL;
    int rc = ROOST_EINVAL;
    /* Parsed as libcurl parses CURLOPT_URL (dot segments removed), so @path is what it sends. */
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &t->path, 0) != CURLUE_OK) {
        goto out;
    }
    CURLUcode qc = curl_url_get(u, CURLUPART_QUERY, &t->query, 0);
    if (qc != CURLUE_OK && qc != CURLUE_NO_QUERY) {
        goto out;
    }
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK) {
        port = NULL;
    }
    /* libcurl's Host omits the scheme's default port; @authority is lowercase (§2.2.3). */
    bool dflt = port == NULL || (strcmp(scheme, "http") == 0 && strcmp(port, "80") == 0) ||
                (strcmp(scheme, "https") == 0 && strcmp(port, "443") == 0);
    int n = snprintf(t->authority, sizeof t->authority, "%s%s%s", host, dflt ? "" : ":",
                     dflt ? "" : port);
    if (n < 0 || (size_t)n >= sizeof t->authority) {
        goto out;
    }
    for (char *p = t->authority; *p != '\0'; p++) {
        *p = (char)tolower((unsigned char)*p);
    }
    rc = ROOST_OK;
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return rc;
}

/* Appends one header line "name: value" to *list. */
static bool add_header(struct curl_slist **list, const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 3;
    char *line = malloc(n);
    if (line == NULL) {
        return false;
    }
    snprintf(line, n, "%s: %s", name, value);
    struct curl_slist *next = curl_slist_append(*list, line);
    OPENSSL_cleanse(line, n);
    free(line);
    if (next == NULL) {
        return false;
    }
    *list = next;
    return true;
}

int sdk_signer_headers(const struct sdk_signer *s, const char *method, const char *url,
                       const char *token, const char *body, size_t body_len,
                       struct curl_slist **list, char *err, size_t errlen)
{
    err[0] = '\0';
    struct target t;
    char *digest = NULL, *nonce = NULL, *params = NULL, *authz = NULL;
    char *sig_input = NULL, *signature = NULL;
    int rc = parse_target(url, &t);
    if (rc != ROOST_OK) {
        snprintf(err, errlen, rc == ROOST_ENOMEM ? "out of memory" : "cannot sign: bad URL");
        goto out;
    }
    bool has_body = body != NULL && body_len > 0;
    struct httpsig_header h[3];
    size_t nh = 0;
    const char *comp[8];
    size_t nc = 0;
    comp[nc++] = "@method";
    comp[nc++] = "@path";
    if (t.query != NULL) {
        comp[nc++] = "@query";
    }
    comp[nc++] = "@authority";
    h[nh++] = (struct httpsig_header){"Host", t.authority};
    rc = ROOST_ENOMEM;
    if (has_body) {
        if (digest_content_field(body, body_len, DIGEST_SHA256, &digest) != DIGEST_OK) {
            goto oom;
        }
        comp[nc++] = "content-digest";
        h[nh++] = (struct httpsig_header){"Content-Digest", digest};
    }
    if (token != NULL) {
        size_t n = strlen(token) + sizeof "Bearer ";
        if ((authz = malloc(n)) == NULL) {
            goto oom;
        }
        snprintf(authz, n, "Bearer %s", token);
        comp[nc++] = "authorization";
        h[nh++] = (struct httpsig_header){"Authorization", authz};
    }
    unsigned char raw[SIGN_NONCE_BYTES];
    if (RAND_bytes(raw, sizeof raw) != 1) {
        rc = ROOST_EINTERNAL;
        snprintf(err, errlen, "cannot sign: no random bytes for the nonce");
        goto out;
    }
    if (b64_encode(B64_URL, raw, sizeof raw, &nonce, NULL) != 0) {
        goto oom;
    }
    int64_t now = (int64_t)time(NULL);
    int hrc = httpsig_params_build(comp, nc, now, now + SIGN_WINDOW_S, nonce, s->key_id,
                                   s->alg_name, NULL, &params);
    struct httpsig_message m = {.method = method,
                                .scheme = strncmp(url, "https:", 6) == 0 ? "https" : "http",
                                .authority = t.authority,
                                .path = t.path,
                                .query = t.query,
                                .headers = h,
                                .n_headers = nh};
    if (hrc == HTTPSIG_OK) {
        hrc = httpsig_sign(&m, SIGN_LABEL, params, &s->key, &sig_input, &signature);
    }
    if (hrc == HTTPSIG_ENOMEM) {
        goto oom;
    }
    if (hrc != HTTPSIG_OK) {
        rc = ROOST_EINTERNAL;
        snprintf(err, errlen, "cannot sign the request: %s", httpsig_strerror(hrc));
        goto out;
    }
    /* Host is set explicitly so that @authority is exactly what the server receives. */
    if (!add_header(list, "Host", t.authority) ||
        (digest != NULL && !add_header(list, "Content-Digest", digest)) ||
        !add_header(list, "Signature-Input", sig_input) ||
        !add_header(list, "Signature", signature)) {
        goto oom;
    }
    rc = ROOST_OK;
    goto out;
oom:
    rc = ROOST_ENOMEM;
    snprintf(err, errlen, "out of memory");
out:
    if (authz != NULL) {
        OPENSSL_cleanse(authz, strlen(authz));
        free(authz);
    }
    free(digest);
    free(nonce);
    free(params);
    free(sig_input);
    free(signature);
    curl_free(t.path);
    curl_free(t.query);
    return rc;
}

int roost_client_set_signing_key(struct roost_client *c, const char *signing_key,
                                 const char *key_id, const char *alg)
{
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (signing_key == NULL) {
        sdk_signer_free(c->signer);
        c->signer = NULL;
        return ROOST_OK;
    }
    struct sdk_signer *s = NULL;
    char err[512];
    int rc = sdk_signer_new(signing_key, key_id, alg, &s, err, sizeof err);
    if (rc != ROOST_OK) {
        return sdk_fail(c, rc, "%s", err[0] != '\0' ? err : roost_strerror(rc));
    }
    sdk_signer_free(c->signer);
    c->signer = s;
    return ROOST_OK;
}
