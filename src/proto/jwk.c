/* SPDX-License-Identifier: MIT */
/* JWK Set parsing and public-key import through OpenSSL 3 EVP_PKEY_fromdata. Bounded: the
 * document size, the key count and every member length are checked before anything is built. */
#include "proto/jwk.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"

#include "common/banned.h"

enum jwt_alg jwk_alg(const struct jwk *k)
{
    switch (k->type) {
    case JWK_OKP_ED25519:
        return JWT_ALG_EDDSA;
    case JWK_EC_P256:
        return JWT_ALG_ES256;
    case JWK_RSA:
        return JWT_ALG_RS256;
    case JWK_OCT:
        return JWT_ALG_HS256;
    }
    return JWT_ALG_UNKNOWN;
}

enum jwt_alg jwt_alg_parse(const char *name)
{
    if (name == NULL) {
        return JWT_ALG_UNKNOWN;
    }
    if (strcmp(name, "EdDSA") == 0) {
        return JWT_ALG_EDDSA;
    }
    if (strcmp(name, "ES256") == 0) {
        return JWT_ALG_ES256;
    }
    if (strcmp(name, "RS256") == 0) {
        return JWT_ALG_RS256;
    }
    if (strcmp(name, "HS256") == 0) {
        return JWT_ALG_HS256;
    }
    return JWT_ALG_UNKNOWN;
}

void jwk_cleanup(struct jwk *k)
{
    if (k == NULL) {
        return;
    }
    EVP_PKEY_free(k->pkey);
    if (k->secret != NULL) {
        OPENSSL_cleanse(k->secret, k->secret_len);
        free(k->secret);
    }
    memset(k, 0, sizeof *k);
}

void jwks_cleanup(struct jwks *s)
{
    if (s == NULL) {
        return;
    }
    for (size_t i = 0; i < s->n_keys; i++) {
        jwk_cleanup(&s->keys[i]);
    }
    free(s->keys);
    memset(s, 0, sizeof *s);
}

int jwk_from_secret(const unsigned char *secret, size_t len, struct jwk *out)
{
    memset(out, 0, sizeof *out);
    if (secret == NULL || len < JWK_HMAC_MIN_BYTES || len > JWK_HMAC_MAX_BYTES) {
        return -1;
    }
    out->secret = malloc(len);
    if (out->secret == NULL) {
        return -1;
    }
    memcpy(out->secret, secret, len);
    out->secret_len = len;
    out->type = JWK_OCT;
    return 0;
}

/* Is `pkey` an EC key on P-256? */
static bool is_p256(EVP_PKEY *pkey)
{
    char group[64];
    size_t glen = 0;
    if (!EVP_PKEY_is_a(pkey, "EC") ||
        EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group,
                                       &glen) != 1) {
        return false;
    }
    return strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0;
}

int jwk_from_pkey(EVP_PKEY *pkey, const char *kid, struct jwk *out)
{
    memset(out, 0, sizeof *out);
    if (pkey == NULL) {
        return -1;
    }
    if (EVP_PKEY_is_a(pkey, "ED25519")) {
        out->type = JWK_OKP_ED25519;
    } else if (is_p256(pkey)) {
        out->type = JWK_EC_P256;
    } else if (EVP_PKEY_is_a(pkey, "RSA") && EVP_PKEY_get_bits(pkey) >= JWK_RSA_MIN_BITS &&
               EVP_PKEY_get_bits(pkey) <= JWK_RSA_MAX_BITS) {
        out->type = JWK_RSA;
    } else {
        ERR_clear_error();
        return -1;
    }
    if (kid != NULL) {
        size_t n = strlen(kid);
        if (n > JWK_KID_MAX) {
            return -1;
        }
        memcpy(out->kid, kid, n + 1);
        out->has_kid = true;
    }
    if (EVP_PKEY_up_ref(pkey) != 1) {
        return -1;
    }
    out->pkey = pkey;
    return 0;
}

/* ---- JWK Set ---- */

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Decodes the base64url member `name` of `jwk`; when `want` is nonzero it must decode to exactly
 * that many bytes (RFC 7518 §6.2.1.2: coordinates are full length), otherwise 1..max bytes. */
static int member_bytes(const json_t *jwk, const char *name, size_t want, size_t max,
                        unsigned char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    const json_t *v = json_object_get(jwk, name);
    if (!json_is_string(v)) {
        return -1;
    }
    size_t slen = json_string_length(v);
    /* 4 characters per 3 bytes bounds the text before anything is allocated. */
    size_t cap = want != 0 ? want : max;
    if (slen == 0 || slen > (cap + 2) / 3 * 4) {
        return -1;
    }
    /* Canonical base64url, as jwt_b64url_decode (jwt.h includes this header, not the reverse). */
    if (b64_decode(B64_URL, true, json_string_value(v), slen, out, outlen) != 0) {
        return -1;
    }
    if ((want != 0 && *outlen != want) || *outlen == 0 || *outlen > cap) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* EVP_PKEY_fromdata for a public key of `type_name` ("ED25519", "EC", "RSA"). */
static EVP_PKEY *pkey_from_params(const char *type_name, const OSSL_PARAM *params)
{
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type_name, NULL);
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, (OSSL_PARAM *)params) != 1) {
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}

/* OpenSSL's own public-key validation: point on the curve, RSA modulus and exponent sanity. */
static bool public_check(EVP_PKEY *pkey)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    bool ok = ctx != NULL && EVP_PKEY_public_check(ctx) == 1;
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

static EVP_PKEY *import_okp(const json_t *jwk)
{
    unsigned char *x = NULL;
    size_t xlen = 0;
    EVP_PKEY *pkey = NULL;
    if (member_bytes(jwk, "x", 32, 0, &x, &xlen) == 0) {
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, x, xlen),
            OSSL_PARAM_construct_end(),
        };
        pkey = pkey_from_params("ED25519", params);
    }
    free(x);
    return pkey;
}

static EVP_PKEY *import_ec(const json_t *jwk)
{
    unsigned char *x = NULL, *y = NULL;
    size_t xlen = 0, ylen = 0;
    EVP_PKEY *pkey = NULL;
    if (member_bytes(jwk, "x", 32, 0, &x, &xlen) == 0 &&
        member_bytes(jwk, "y", 32, 0, &y, &ylen) == 0) {
        /* SEC 1 uncompressed point: 0x04 || x || y. */
        unsigned char point[65];
        point[0] = 0x04;
        memcpy(point + 1, x, 32);
        memcpy(point + 33, y, 32);
        char group[] = "prime256v1";
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
            OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point),
            OSSL_PARAM_construct_end(),
        };
        pkey = pkey_from_params("EC", params);
        if (pkey != NULL && !public_check(pkey)) {
            EVP_PKEY_free(pkey);
            pkey = NULL;
        }
    }
    free(x);
    free(y);
    return pkey;
}

/* Imports an RSA public key; *too_small tells a well-formed key under 2048 bits apart. */
static EVP_PKEY *import_rsa(const json_t *jwk, bool *too_small)
{
    unsigned char *n = NULL, *e = NULL;
    size_t nlen = 0, elen = 0;
    BIGNUM *bn_n = NULL, *bn_e = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY *pkey = NULL;

    *too_small = false;
    if (member_bytes(jwk, "n", 0, JWK_RSA_MAX_BITS / 8, &n, &nlen) != 0 ||
        member_bytes(jwk, "e", 0, 8, &e, &elen) != 0) {
        goto out;
    }
    bn_n = BN_bin2bn(n, (int)nlen, NULL);
    bn_e = BN_bin2bn(e, (int)elen, NULL);
    if (bn_n == NULL || bn_e == NULL) {
        goto out;
    }
    if (BN_num_bits(bn_n) < JWK_RSA_MIN_BITS) {
        *too_small = true;
        goto out;
    }
    bld = OSSL_PARAM_BLD_new();
    if (bld == NULL || OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) != 1 ||
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) != 1 ||
        (params = OSSL_PARAM_BLD_to_param(bld)) == NULL) {
        goto out;
    }
    pkey = pkey_from_params("RSA", params);
    if (pkey != NULL && !public_check(pkey)) {
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
out:
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_n);
    BN_free(bn_e);
    free(n);
    free(e);
    return pkey;
}

/* Optional string member: true when absent or a string (*val set or NULL). */
static bool opt_string(const json_t *jwk, const char *name, const char **val)
{
    const json_t *v = json_object_get(jwk, name);
    *val = NULL;
    if (v == NULL) {
        return true;
    }
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
        return false;
    }
    *val = json_string_value(v);
    return true;
}

/* Parses key number `i` into *k. Returns 1 imported, 0 skipped, -1 refused (err set). */
static int parse_key(const json_t *jwk, size_t i, struct jwk *k, bool *had_private, char *err,
                     size_t errlen)
{
    const char *kty = NULL, *kid = NULL, *use = NULL, *alg = NULL, *crv = NULL;
    enum jwk_type type;

    memset(k, 0, sizeof *k);
    if (!json_is_object(jwk)) {
        return fail(err, errlen, "keys[%zu]: not an object", i);
    }
    if (!opt_string(jwk, "kty", &kty) || kty == NULL) {
        return fail(err, errlen, "keys[%zu]: kty missing or not a string", i);
    }
    if (!opt_string(jwk, "kid", &kid) || !opt_string(jwk, "use", &use) ||
        !opt_string(jwk, "alg", &alg) || !opt_string(jwk, "crv", &crv)) {
        return fail(err, errlen, "keys[%zu]: kid, use, alg and crv must be strings", i);
    }
    if (kid != NULL && strlen(kid) > JWK_KID_MAX) {
        return fail(err, errlen, "keys[%zu]: kid longer than %d bytes", i, JWK_KID_MAX);
    }
    if (strcmp(kty, "OKP") == 0 && crv != NULL && strcmp(crv, "Ed25519") == 0) {
        type = JWK_OKP_ED25519;
    } else if (strcmp(kty, "EC") == 0 && crv != NULL && strcmp(crv, "P-256") == 0) {
        type = JWK_EC_P256;
    } else if (strcmp(kty, "RSA") == 0) {
        type = JWK_RSA;
    } else {
        return 0; /* oct, Ed448, X25519, P-384, ...: not ours to verify with */
    }
    if (use != NULL && strcmp(use, "sig") != 0) {
        return 0; /* an encryption key */
    }
    k->type = type;
    if (alg != NULL && jwt_alg_parse(alg) != jwk_alg(k)) {
        return 0; /* e.g. an RSA key meant for PS256 or RS512 */
    }
    if (json_object_get(jwk, "d") != NULL || json_object_get(jwk, "p") != NULL) {
        *had_private = true;
    }
    bool too_small = false;
    switch (type) {
    case JWK_OKP_ED25519:
        k->pkey = import_okp(jwk);
        break;
    case JWK_EC_P256:
        k->pkey = import_ec(jwk);
        break;
    case JWK_RSA:
        k->pkey = import_rsa(jwk, &too_small);
        break;
    case JWK_OCT:
        break;
    }
    ERR_clear_error();
    if (too_small) {
        return fail(err, errlen, "keys[%zu]: RSA modulus under %d bits", i, JWK_RSA_MIN_BITS);
    }
    if (k->pkey == NULL) {
        return fail(err, errlen, "keys[%zu] (%s): invalid or malformed key members", i, kty);
    }
    if (kid != NULL) {
        memcpy(k->kid, kid, strlen(kid) + 1);
        k->has_kid = true;
    }
    return 1;
}

int jwks_parse(const char *json, size_t len, struct jwks *out, char *err, size_t errlen)
{
    json_t *root = NULL;
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (json == NULL || len == 0 || len > JWKS_MAX_BYTES) {
        return fail(err, errlen, "JWK Set empty or larger than %d bytes", JWKS_MAX_BYTES);
    }
    json_error_t jerr;
    root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        return fail(err, errlen, "invalid JSON at line %d: %s", jerr.line, jerr.text);
    }
    const json_t *keys = json_object_get(root, "keys");
    if (!json_is_object(root) || !json_is_array(keys)) {
        fail(err, errlen, "not a JWK Set: no \"keys\" array");
        goto out;
    }
    size_t n = json_array_size(keys);
    if (n > JWKS_MAX_KEYS) {
        fail(err, errlen, "more than %d keys", JWKS_MAX_KEYS);
        goto out;
    }
    out->keys = calloc(n == 0 ? 1 : n, sizeof *out->keys);
    if (out->keys == NULL) {
        fail(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        struct jwk *k = &out->keys[out->n_keys];
        int r = parse_key(json_array_get(keys, i), i, k, &out->had_private_members, err, errlen);
        if (r < 0) {
            goto out;
        }
        if (r == 0) {
            out->n_skipped++;
            continue;
        }
        /* Two keys under one kid would make the choice depend on order. */
        for (size_t j = 0; k->has_kid && j < out->n_keys; j++) {
            if (out->keys[j].has_kid && strcmp(out->keys[j].kid, k->kid) == 0) {
                fail(err, errlen, "keys[%zu]: duplicate kid \"%s\"", i, k->kid);
                jwk_cleanup(k);
                goto out;
            }
        }
        out->n_keys++;
    }
    rc = 0;
out:
    json_decref(root);
    if (rc != 0) {
        jwks_cleanup(out);
    }
    return rc;
}
