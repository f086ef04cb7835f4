/* SPDX-License-Identifier: MIT */
/* Compact JWS (RFC 7515) decoding, and signing/verification for EdDSA (RFC 8037), ES256, RS256
 * and HS256 (RFC 7518). The decoder is pure
 * and bounded: nothing is allocated before the token length and shape have been checked. */
#include "proto/jwt.h"

#include <math.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base64.h"

#include "common/banned.h"

int jwt_b64url_encode(const unsigned char *in, size_t len, char **out)
{
    return b64_encode(B64_URL, in, len, out, NULL);
}

/* Canonical only: two strings that decode alike would let a token be altered undetected in its
 * text (and defeat the cache keyed by it). */
int jwt_b64url_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    return b64_decode(B64_URL, true, in, len, out, outlen);
}

/* Decodes one base64url part into a JSON object (duplicate keys refused). */
static json_t *decode_object(const char *s, size_t len)
{
    unsigned char *raw = NULL;
    size_t rawlen = 0;
    json_t *v = NULL;
    if (len == 0 || jwt_b64url_decode(s, len, &raw, &rawlen) != 0) {
        goto out;
    }
    json_error_t jerr;
    v = json_loadb((const char *)raw, rawlen, JSON_REJECT_DUPLICATES, &jerr);
    if (v != NULL && !json_is_object(v)) {
        json_decref(v);
        v = NULL;
    }
out:
    free(raw);
    return v;
}

int jwt_decode(const char *token, size_t len, struct jwt_parts *out)
{
    memset(out, 0, sizeof *out);
    if (token == NULL || len == 0 || len > JWT_MAX_TOKEN_BYTES) {
        return -1;
    }
    const char *dot1 = memchr(token, '.', len);
    if (dot1 == NULL) {
        return -1;
    }
    const char *rest = dot1 + 1;
    const char *end = token + len;
    const char *dot2 = memchr(rest, '.', (size_t)(end - rest));
    if (dot2 == NULL || memchr(dot2 + 1, '.', (size_t)(end - dot2 - 1)) != NULL) {
        return -1;
    }
    out->header = decode_object(token, (size_t)(dot1 - token));
    if (out->header == NULL) {
        goto fail;
    }
    if (!json_is_string(json_object_get(out->header, "alg"))) {
        goto fail;
    }
    out->claims = decode_object(rest, (size_t)(dot2 - rest));
    if (out->claims == NULL) {
        goto fail;
    }
    if (jwt_b64url_decode(dot2 + 1, (size_t)(end - dot2 - 1), &out->signature,
                          &out->signature_len) != 0) {
        goto fail;
    }
    out->signing_input = token;
    out->signing_input_len = (size_t)(dot2 - token);
    return 0;
fail:
    jwt_parts_cleanup(out);
    return -1;
}

void jwt_parts_cleanup(struct jwt_parts *p)
{
    if (p == NULL) {
        return;
    }
    json_decref(p->header);
    json_decref(p->claims);
    free(p->signature);
    memset(p, 0, sizeof *p);
}

/* JOSE ES256 signature (raw r||s, 32 bytes each, RFC 7518 §3.4) as the DER ECDSA-Sig-Value
 * OpenSSL verifies. Any other length is refused: a DER signature must not be accepted. */
static int es256_raw_to_der(const unsigned char *sig, size_t len, unsigned char **der,
                            size_t *derlen)
{
    int rc = -1;
    ECDSA_SIG *es = NULL;
    BIGNUM *r = NULL, *s = NULL;
    *der = NULL;
    *derlen = 0;
    if (len != 64) {
        return -1;
    }
    es = ECDSA_SIG_new();
    r = BN_bin2bn(sig, 32, NULL);
    s = BN_bin2bn(sig + 32, 32, NULL);
    if (es == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(es, r, s) != 1) {
        goto out;
    }
    r = s = NULL; /* owned by es now */
    unsigned char *buf = NULL;
    int n = i2d_ECDSA_SIG(es, &buf);
    if (n <= 0) {
        goto out;
    }
    *der = buf;
    *derlen = (size_t)n;
    rc = 0;
out:
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(es);
    return rc;
}

/* DER ECDSA-Sig-Value from OpenSSL → JOSE raw r||s (64 bytes). */
static int es256_der_to_raw(const unsigned char *der, size_t len, unsigned char raw[64])
{
    const unsigned char *p = der;
    ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)len);
    if (es == NULL) {
        return -1;
    }
    const BIGNUM *r = NULL, *s = NULL;
    ECDSA_SIG_get0(es, &r, &s);
    int rc = BN_bn2binpad(r, raw, 32) == 32 && BN_bn2binpad(s, raw + 32, 32) == 32 ? 0 : -1;
    ECDSA_SIG_free(es);
    return rc;
}

/* Does the EVP key really have the type the jwk claims? A second guard against confusion. */
static bool pkey_matches(const struct jwk *k)
{
    if (k->pkey == NULL) {
        return false;
    }
    switch (k->type) {
    case JWK_OKP_ED25519:
        return EVP_PKEY_is_a(k->pkey, "ED25519");
    case JWK_EC_P256:
        return EVP_PKEY_is_a(k->pkey, "EC") && EVP_PKEY_get_bits(k->pkey) == 256;
    case JWK_RSA:
        return EVP_PKEY_is_a(k->pkey, "RSA") && EVP_PKEY_get_bits(k->pkey) >= JWK_RSA_MIN_BITS;
    case JWK_OCT:
        return false;
    }
    return false;
}

static int verify_hs256(const struct jwt_parts *p, const struct jwk *k)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    if (k->secret == NULL || k->secret_len < JWK_HMAC_MIN_BYTES || p->signature_len != 32 ||
        k->secret_len > JWK_HMAC_MAX_BYTES) {
        return -1;
    }
    if (HMAC(EVP_sha256(), k->secret, (int)k->secret_len, (const unsigned char *)p->signing_input,
             p->signing_input_len, mac, &maclen) == NULL ||
        maclen != 32) {
        return -1;
    }
    /* Constant time: the comparison must not tell an attacker how many bytes matched. */
    int rc = CRYPTO_memcmp(mac, p->signature, 32) == 0 ? 0 : -1;
    OPENSSL_cleanse(mac, sizeof mac);
    return rc;
}

int jwt_verify(const struct jwt_parts *p, const struct jwk *key)
{
    int rc = -1;
    EVP_MD_CTX *ctx = NULL;
    unsigned char *der = NULL;
    size_t derlen = 0;

    if (p == NULL || key == NULL || p->header == NULL || p->signing_input == NULL ||
        p->signature == NULL) {
        return -1;
    }
    /* The key's type fixes the algorithm; the header only has to agree with it. */
    enum jwt_alg alg = jwt_alg_parse(json_string_value(json_object_get(p->header, "alg")));
    if (alg == JWT_ALG_UNKNOWN || alg != jwk_alg(key)) {
        return -1;
    }
    if (alg == JWT_ALG_HS256) {
        return key->type == JWK_OCT ? verify_hs256(p, key) : -1;
    }
    if (!pkey_matches(key)) {
        return -1;
    }
    const unsigned char *sig = p->signature;
    size_t siglen = p->signature_len;
    const EVP_MD *md = NULL;
    switch (alg) {
    case JWT_ALG_EDDSA:
        if (siglen != 64) {
            return -1;
        }
        break;
    case JWT_ALG_ES256:
        if (es256_raw_to_der(p->signature, p->signature_len, &der, &derlen) != 0) {
            return -1;
        }
        sig = der;
        siglen = derlen;
        md = EVP_sha256();
        break;
    case JWT_ALG_RS256:
        /* A PKCS#1 v1.5 signature is exactly as long as the modulus. */
        if (siglen != (size_t)EVP_PKEY_get_size(key->pkey)) {
            return -1;
        }
        md = EVP_sha256();
        break;
    default:
        return -1;
    }
    /* A fresh context per call keeps concurrent verifications with one shared key independent. */
    EVP_PKEY_CTX *pctx = NULL;
    ctx = EVP_MD_CTX_new();
    if (ctx == NULL || EVP_DigestVerifyInit(ctx, &pctx, md, NULL, key->pkey) != 1) {
        goto out;
    }
    if (alg == JWT_ALG_RS256 && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1) {
        goto out;
    }
    if (EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)p->signing_input,
                         p->signing_input_len) == 1) {
        rc = 0;
    }
out:
    ERR_clear_error();
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der);
    return rc;
}

int jwt_verify_eddsa(const struct jwt_parts *p, EVP_PKEY *key)
{
    struct jwk k;
    if (key == NULL || !EVP_PKEY_is_a(key, "ED25519") || jwk_from_pkey(key, NULL, &k) != 0) {
        return -1;
    }
    int rc = jwt_verify(p, &k);
    jwk_cleanup(&k);
    return rc;
}

int jwt_sign_input(enum jwt_alg alg, EVP_PKEY *key, const unsigned char *secret, size_t secret_len,
                   const char *input, size_t len, char **sig64)
{
    int rc = -1;
    EVP_MD_CTX *ctx = NULL;
    EVP_PKEY_CTX *pctx = NULL;
    unsigned char *sig = NULL;
    size_t siglen = 0;
    unsigned char raw[64];

    *sig64 = NULL;
    if (alg == JWT_ALG_HS256) {
        unsigned int maclen = 0;
        sig = malloc(EVP_MAX_MD_SIZE);
        if (sig == NULL || secret == NULL ||
            HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)input, len, sig,
                 &maclen) == NULL) {
            goto out;
        }
        siglen = maclen;
    } else {
        const EVP_MD *md = NULL;
        if (key == NULL) {
            goto out;
        }
        if (alg == JWT_ALG_EDDSA && EVP_PKEY_is_a(key, "ED25519")) {
            md = NULL;
        } else if ((alg == JWT_ALG_ES256 && EVP_PKEY_is_a(key, "EC")) ||
                   (alg == JWT_ALG_RS256 && EVP_PKEY_is_a(key, "RSA"))) {
            md = EVP_sha256();
        } else {
            goto out;
        }
        ctx = EVP_MD_CTX_new();
        if (ctx == NULL || EVP_DigestSignInit(ctx, &pctx, md, NULL, key) != 1) {
            goto out;
        }
        if (alg == JWT_ALG_RS256 && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1) {
            goto out;
        }
        if (EVP_DigestSign(ctx, NULL, &siglen, (const unsigned char *)input, len) != 1 ||
            (sig = malloc(siglen)) == NULL ||
            EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)input, len) != 1) {
            goto out;
        }
        if (alg == JWT_ALG_ES256) {
            if (es256_der_to_raw(sig, siglen, raw) != 0) {
                goto out;
            }
            memcpy(sig, raw, sizeof raw); /* DER is always longer than 64 bytes for P-256 */
            siglen = sizeof raw;
        }
    }
    if (jwt_b64url_encode(sig, siglen, sig64) != 0) {
        goto out;
    }
    rc = 0;
out:
    ERR_clear_error();
    EVP_MD_CTX_free(ctx);
    if (sig != NULL) {
        OPENSSL_cleanse(sig, siglen);
        free(sig);
    }
    return rc;
}

static const char *alg_name(enum jwt_alg alg)
{
    switch (alg) {
    case JWT_ALG_EDDSA:
        return "EdDSA";
    case JWT_ALG_ES256:
        return "ES256";
    case JWT_ALG_RS256:
        return "RS256";
    case JWT_ALG_HS256:
        return "HS256";
    default:
        return NULL;
    }
}

int jwt_sign(const json_t *header, const json_t *claims, enum jwt_alg alg, EVP_PKEY *key,
             const unsigned char *secret, size_t secret_len, char **out)
{
    int rc = -1;
    json_t *h = NULL;
    char *hjson = NULL, *cjson = NULL, *h64 = NULL, *c64 = NULL, *s64 = NULL, *input = NULL;

    *out = NULL;
    const char *name = alg_name(alg);
    if (name == NULL || !json_is_object(claims) || (header != NULL && !json_is_object(header))) {
        goto out;
    }
    h = header != NULL ? json_deep_copy(header) : json_object();
    if (h == NULL || json_object_set_new(h, "alg", json_string(name)) != 0) {
        goto out;
    }
    hjson = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cjson = json_dumps(claims, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (hjson == NULL || cjson == NULL ||
        jwt_b64url_encode((const unsigned char *)hjson, strlen(hjson), &h64) != 0 ||
        jwt_b64url_encode((const unsigned char *)cjson, strlen(cjson), &c64) != 0) {
        goto out;
    }
    size_t hlen = strlen(h64), clen = strlen(c64);
    size_t inlen = hlen + 1 + clen;
    input = malloc(inlen + 1);
    if (input == NULL) {
        goto out;
    }
    memcpy(input, h64, hlen);
    input[hlen] = '.';
    memcpy(input + hlen + 1, c64, clen);
    input[inlen] = '\0';
    if (jwt_sign_input(alg, key, secret, secret_len, input, inlen, &s64) != 0) {
        goto out;
    }
    size_t slen = strlen(s64);
    char *token = malloc(inlen + 1 + slen + 1);
    if (token == NULL) {
        goto out;
    }
    memcpy(token, input, inlen);
    token[inlen] = '.';
    memcpy(token + inlen + 1, s64, slen + 1);
    *out = token;
    rc = 0;
out:
    json_decref(h);
    free(hjson);
    free(cjson);
    free(h64);
    free(c64);
    free(s64);
    free(input);
    return rc;
}

int jwt_sign_eddsa(const json_t *claims, EVP_PKEY *key, const char *kid, char **out)
{
    *out = NULL;
    if (key == NULL || !EVP_PKEY_is_a(key, "ED25519")) {
        return -1;
    }
    /* Header member order as before: alg, typ, kid. */
    json_t *header = json_pack("{s:s, s:s}", "alg", "EdDSA", "typ", "JWT");
    if (header == NULL) {
        return -1;
    }
    int rc = -1;
    if (kid == NULL || json_object_set_new(header, "kid", json_string(kid)) == 0) {
        rc = jwt_sign(header, claims, JWT_ALG_EDDSA, key, NULL, 0, out);
    }
    json_decref(header);
    return rc;
}

int jwt_bearer(const char *authorization, const char **tok, size_t *len)
{
    if (authorization == NULL) {
        return -1;
    }
    /* Bounded scan: never walk further than a maximal header could be. */
    size_t hlen = strnlen(authorization, JWT_MAX_TOKEN_BYTES + 64);
    if (hlen > JWT_MAX_TOKEN_BYTES + 63) {
        return -1;
    }
    const char *s = authorization;
    const char *end = authorization + hlen;
    while (s < end && (*s == ' ' || *s == '\t')) {
        s++;
    }
    /* RFC 9110 §11.1: the auth-scheme is case-insensitive; at least one space follows it. */
    if (end - s < 7 || strncasecmp(s, "Bearer", 6) != 0 || (s[6] != ' ' && s[6] != '\t')) {
        return -1;
    }
    s += 6;
    while (s < end && (*s == ' ' || *s == '\t')) {
        s++;
    }
    while (end > s && (end[-1] == ' ' || end[-1] == '\t')) {
        end--;
    }
    size_t n = (size_t)(end - s);
    if (n == 0 || n > JWT_MAX_TOKEN_BYTES) {
        return -1;
    }
    *tok = s;
    *len = n;
    return 0;
}

int jwt_header_check(const struct jwt_parts *p, enum jwt_alg *alg, const char **kid)
{
    if (json_object_get(p->header, "crit") != NULL) {
        return -1;
    }
    const json_t *kid_v = json_object_get(p->header, "kid");
    if (kid_v != NULL && (!json_is_string(kid_v) || json_string_length(kid_v) > JWK_KID_MAX ||
                          strlen(json_string_value(kid_v)) != json_string_length(kid_v))) {
        return -1;
    }
    *kid = json_string_value(kid_v);
    *alg = jwt_alg_parse(json_string_value(json_object_get(p->header, "alg")));
    return 0;
}

bool jwt_numeric_date_ms(const json_t *claims, const char *name, bool *present, int64_t *ms)
{
    const json_t *v = json_object_get(claims, name);
    *present = v != NULL;
    if (v == NULL) {
        return true;
    }
    if (!json_is_number(v)) {
        return false;
    }
    double s = json_number_value(v);
    if (!isfinite(s)) {
        return false;
    }
    const double cap = 9007199254740992.0; /* 2^53: the arithmetic below cannot overflow */
    if (s > cap) {
        s = cap;
    } else if (s < -cap) {
        s = -cap;
    }
    *ms = (int64_t)(s * 1000.0);
    return true;
}

bool jwt_times_valid(int64_t exp_ms, int64_t nbf_ms, int64_t iat_ms, int64_t now_ms)
{
    return now_ms < exp_ms + JWT_LEEWAY_MS &&
           (nbf_ms == JWT_NO_TIME || now_ms + JWT_LEEWAY_MS >= nbf_ms) &&
           (iat_ms == JWT_NO_TIME || iat_ms <= now_ms + JWT_LEEWAY_MS);
}

static bool string_is(const json_t *v, const char *want)
{
    size_t n = strlen(want);
    return json_is_string(v) && json_string_length(v) == n &&
           memcmp(json_string_value(v), want, n) == 0;
}

bool jwt_issuer_audience_ok(const json_t *claims, const char *issuer, const char *audience)
{
    if (issuer != NULL && !string_is(json_object_get(claims, "iss"), issuer)) {
        return false;
    }
    if (audience == NULL) {
        return true;
    }
    const json_t *aud = json_object_get(claims, "aud");
    if (json_is_string(aud)) {
        return string_is(aud, audience);
    }
    size_t i;
    const json_t *v;
    json_array_foreach(aud, i, v)
    {
        if (string_is(v, audience)) {
            return true;
        }
    }
    return false;
}

const struct jwk *jwks_select(const struct jwks *set, enum jwt_alg alg, const char *kid,
                              bool *unknown_kid)
{
    const struct jwk *found = NULL;
    size_t n = 0;
    *unknown_kid = kid != NULL && alg != JWT_ALG_UNKNOWN;
    for (size_t i = 0; alg != JWT_ALG_UNKNOWN && i < set->n_keys; i++) {
        const struct jwk *k = &set->keys[i];
        if (kid != NULL) {
            if (k->has_kid && strcmp(k->kid, kid) == 0) {
                *unknown_kid = false;
                return jwk_alg(k) == alg ? k : NULL;
            }
        } else if (jwk_alg(k) == alg) {
            found = k;
            n++;
        }
    }
    return kid == NULL && n == 1 ? found : NULL;
}
