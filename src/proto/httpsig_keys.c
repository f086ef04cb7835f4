/* SPDX-License-Identifier: MIT */
/* The keys and algorithms of RFC 9421 (§3.3) over OpenSSL 3: whether a key fits its algorithm,
 * signing and verifying raw bytes, and importing keys from PEM and JWK. The signature base and
 * the header texts are httpsig.c's. */
#include "proto/httpsig.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>

#include "proto/jwt.h"

#include "common/banned.h"

/* ---- algorithms (§3.3) ---- */

/* Checks that the key fits the algorithm (never let a key be used with another alg). */
static int key_fits(const struct httpsig_key *key)
{
    if (key == NULL) {
        return HTTPSIG_EKEY;
    }
    if (key->alg == HTTPSIG_ALG_HMAC_SHA256) {
        if (key->secret == NULL || key->secret_len == 0 ||
            key->secret_len > HTTPSIG_MAX_SECRET_BYTES) {
            return HTTPSIG_EKEY;
        }
        return HTTPSIG_OK;
    }
    if (key->pkey == NULL) {
        return HTTPSIG_EKEY;
    }
    switch (key->alg) {
    case HTTPSIG_ALG_ED25519:
        return EVP_PKEY_is_a(key->pkey, "ED25519") ? HTTPSIG_OK : HTTPSIG_EALG;
    case HTTPSIG_ALG_ECDSA_P256_SHA256: {
        char group[64];
        if (!EVP_PKEY_is_a(key->pkey, "EC") ||
            EVP_PKEY_get_group_name(key->pkey, group, sizeof group, NULL) != 1 ||
            (strcmp(group, "prime256v1") != 0 && strcmp(group, "P-256") != 0)) {
            return HTTPSIG_EALG;
        }
        return HTTPSIG_OK;
    }
    case HTTPSIG_ALG_RSA_PSS_SHA512:
    case HTTPSIG_ALG_RSA_V1_5_SHA256:
        if (!(EVP_PKEY_is_a(key->pkey, "RSA") ||
              (key->alg == HTTPSIG_ALG_RSA_PSS_SHA512 && EVP_PKEY_is_a(key->pkey, "RSA-PSS")))) {
            return HTTPSIG_EALG;
        }
        return EVP_PKEY_get_bits(key->pkey) >= 2048 ? HTTPSIG_OK : HTTPSIG_EKEY;
    default:
        return HTTPSIG_EALG;
    }
}

/* Sets up ctx for the key's algorithm (digest and RSA padding). */
static int digest_init(EVP_MD_CTX *ctx, const struct httpsig_key *key, bool sign)
{
    const EVP_MD *md = NULL;
    EVP_PKEY_CTX *pctx = NULL;
    if (key->alg == HTTPSIG_ALG_ECDSA_P256_SHA256 || key->alg == HTTPSIG_ALG_RSA_V1_5_SHA256) {
        md = EVP_sha256();
    } else if (key->alg == HTTPSIG_ALG_RSA_PSS_SHA512) {
        md = EVP_sha512();
    }
    int ok = sign ? EVP_DigestSignInit(ctx, &pctx, md, NULL, key->pkey)
                  : EVP_DigestVerifyInit(ctx, &pctx, md, NULL, key->pkey);
    if (ok != 1) {
        return HTTPSIG_EKEY;
    }
    if (key->alg == HTTPSIG_ALG_RSA_PSS_SHA512) {
        /* §3.3.1: MGF1 with SHA-512 and a 64-byte salt. */
        if (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
            EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 64) != 1 ||
            EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha512()) != 1) {
            return HTTPSIG_EKEY;
        }
    } else if (key->alg == HTTPSIG_ALG_RSA_V1_5_SHA256) {
        if (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1) {
            return HTTPSIG_EKEY;
        }
    }
    return HTTPSIG_OK;
}

int httpsig_sign_raw(const struct httpsig_key *key, const unsigned char *data, size_t len,
                     unsigned char **sig, size_t *sig_len)
{
    *sig = NULL;
    *sig_len = 0;
    int rc = key_fits(key);
    if (rc != HTTPSIG_OK) {
        return rc;
    }
    if (key->alg == HTTPSIG_ALG_HMAC_SHA256) {
        unsigned char *mac = malloc(32);
        unsigned int maclen = 0;
        if (mac == NULL) {
            return HTTPSIG_ENOMEM;
        }
        if (HMAC(EVP_sha256(), key->secret, (int)key->secret_len, data, len, mac, &maclen) ==
                NULL ||
            maclen != 32) {
            free(mac);
            return HTTPSIG_EKEY;
        }
        *sig = mac;
        *sig_len = 32;
        return HTTPSIG_OK;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char *der = NULL, *raw = NULL;
    size_t derlen = 0;
    ECDSA_SIG *es = NULL;
    if (ctx == NULL) {
        return HTTPSIG_ENOMEM;
    }
    if ((rc = digest_init(ctx, key, true)) != HTTPSIG_OK) {
        goto out;
    }
    rc = HTTPSIG_EKEY;
    if (EVP_DigestSign(ctx, NULL, &derlen, data, len) != 1) {
        goto out;
    }
    if ((der = malloc(derlen)) == NULL) {
        rc = HTTPSIG_ENOMEM;
        goto out;
    }
    if (EVP_DigestSign(ctx, der, &derlen, data, len) != 1) {
        goto out;
    }
    if (key->alg == HTTPSIG_ALG_ECDSA_P256_SHA256) {
        /* OpenSSL gives DER; RFC 9421 §3.3.4 wants the raw 32-byte r || s. */
        const unsigned char *p = der;
        const BIGNUM *r = NULL, *s = NULL;
        if ((es = d2i_ECDSA_SIG(NULL, &p, (long)derlen)) == NULL) {
            goto out;
        }
        ECDSA_SIG_get0(es, &r, &s);
        if ((raw = malloc(64)) == NULL) {
            rc = HTTPSIG_ENOMEM;
            goto out;
        }
        if (BN_bn2binpad(r, raw, 32) != 32 || BN_bn2binpad(s, raw + 32, 32) != 32) {
            goto out;
        }
        *sig = raw;
        *sig_len = 64;
        raw = NULL;
    } else {
        *sig = der;
        *sig_len = derlen;
        der = NULL;
    }
    rc = HTTPSIG_OK;
out:
    ECDSA_SIG_free(es);
    free(raw);
    free(der);
    EVP_MD_CTX_free(ctx);
    return rc;
}

int httpsig_verify_raw(const struct httpsig_key *key, const unsigned char *data, size_t len,
                       const unsigned char *sig, size_t sig_len)
{
    int rc = key_fits(key);
    if (rc != HTTPSIG_OK) {
        return rc;
    }
    if (key->alg == HTTPSIG_ALG_HMAC_SHA256) {
        unsigned char mac[32];
        unsigned int maclen = 0;
        if (HMAC(EVP_sha256(), key->secret, (int)key->secret_len, data, len, mac, &maclen) ==
            NULL) {
            return HTTPSIG_EKEY;
        }
        return sig_len == 32 && CRYPTO_memcmp(mac, sig, 32) == 0 ? HTTPSIG_OK : HTTPSIG_EINVALID;
    }
    EVP_MD_CTX *ctx = NULL;
    ECDSA_SIG *es = NULL;
    BIGNUM *r = NULL, *s = NULL;
    unsigned char *der = NULL;
    const unsigned char *check = sig;
    size_t checklen = sig_len;
    if (key->alg == HTTPSIG_ALG_ED25519 || key->alg == HTTPSIG_ALG_ECDSA_P256_SHA256) {
        if (sig_len != 64) {
            return HTTPSIG_EINVALID;
        }
    } else if (sig_len != (size_t)EVP_PKEY_get_size(key->pkey)) {
        return HTTPSIG_EINVALID;
    }
    if (key->alg == HTTPSIG_ALG_ECDSA_P256_SHA256) {
        es = ECDSA_SIG_new();
        r = BN_bin2bn(sig, 32, NULL);
        s = BN_bin2bn(sig + 32, 32, NULL);
        if (es == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(es, r, s) != 1) {
            BN_free(r);
            BN_free(s);
            rc = HTTPSIG_ENOMEM;
            goto out;
        }
        int n = i2d_ECDSA_SIG(es, &der);
        if (n <= 0) {
            rc = HTTPSIG_ENOMEM;
            goto out;
        }
        check = der;
        checklen = (size_t)n;
    }
    if ((ctx = EVP_MD_CTX_new()) == NULL) {
        rc = HTTPSIG_ENOMEM;
        goto out;
    }
    if ((rc = digest_init(ctx, key, false)) != HTTPSIG_OK) {
        goto out;
    }
    rc = EVP_DigestVerify(ctx, check, checklen, data, len) == 1 ? HTTPSIG_OK : HTTPSIG_EINVALID;
out:
    OPENSSL_free(der);
    ECDSA_SIG_free(es);
    EVP_MD_CTX_free(ctx);
    return rc;
}

/* ---- keys ---- */

int httpsig_key_from_pem(const char *pem, size_t len, EVP_PKEY **out)
{
    /* Private first (any of PKCS#8, PKCS#1, SEC1), then public (SPKI or PKCS#1). */
    static const int selections[] = {EVP_PKEY_KEYPAIR, EVP_PKEY_PUBLIC_KEY};
    *out = NULL;
    if (pem == NULL || len == 0) {
        return HTTPSIG_EKEY;
    }
    if (len > HTTPSIG_MAX_KEY_TEXT_BYTES) {
        return HTTPSIG_ELIMIT;
    }
    for (size_t i = 0; i < 2; i++) {
        EVP_PKEY *pkey = NULL;
        OSSL_DECODER_CTX *dctx =
            OSSL_DECODER_CTX_new_for_pkey(&pkey, "PEM", NULL, NULL, selections[i], NULL, NULL);
        if (dctx == NULL) {
            return HTTPSIG_ENOMEM;
        }
        const unsigned char *data = (const unsigned char *)pem;
        size_t n = len;
        int ok = OSSL_DECODER_from_data(dctx, &data, &n);
        OSSL_DECODER_CTX_free(dctx);
        if (ok == 1 && pkey != NULL) {
            *out = pkey;
            return HTTPSIG_OK;
        }
        EVP_PKEY_free(pkey);
    }
    return HTTPSIG_EKEY;
}

/* Decodes base64url member `name` of a JWK; want_len 0 = any length (bounded by the text). */
static int jwk_bytes(const json_t *jwk, const char *name, size_t want_len, unsigned char **out,
                     size_t *outlen)
{
    const char *s = json_string_value(json_object_get(jwk, name));
    *out = NULL;
    *outlen = 0;
    if (s == NULL || strlen(s) > HTTPSIG_MAX_KEY_TEXT_BYTES ||
        jwt_b64url_decode(s, strlen(s), out, outlen) != 0) {
        return HTTPSIG_EKEY;
    }
    if (*outlen == 0 || (want_len != 0 && *outlen != want_len)) {
        free(*out);
        *out = NULL;
        return HTTPSIG_EKEY;
    }
    return HTTPSIG_OK;
}

static int jwk_okp(const json_t *jwk, EVP_PKEY **out)
{
    unsigned char *x = NULL, *d = NULL;
    size_t xl = 0, dl = 0;
    unsigned char pub[32];
    size_t publen = sizeof pub;
    int rc = HTTPSIG_EKEY;
    const char *crv = json_string_value(json_object_get(jwk, "crv"));
    if (crv == NULL || strcmp(crv, "Ed25519") != 0 || jwk_bytes(jwk, "x", 32, &x, &xl) != 0) {
        goto out;
    }
    if (json_object_get(jwk, "d") != NULL) {
        if (jwk_bytes(jwk, "d", 32, &d, &dl) != 0) {
            goto out;
        }
        *out = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, d, dl);
        /* The given public half must be the private key's. */
        if (*out == NULL || EVP_PKEY_get_raw_public_key(*out, pub, &publen) != 1 || publen != 32 ||
            memcmp(pub, x, 32) != 0) {
            goto out;
        }
    } else if ((*out = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, xl)) == NULL) {
        goto out;
    }
    rc = HTTPSIG_OK;
out:
    if (rc != HTTPSIG_OK) {
        EVP_PKEY_free(*out);
        *out = NULL;
    }
    if (d != NULL) {
        OPENSSL_cleanse(d, dl);
    }
    free(x);
    free(d);
    return rc;
}

static int jwk_fromdata(const char *type, OSSL_PARAM_BLD *bld, int selection, EVP_PKEY **out)
{
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    int rc = HTTPSIG_EKEY;
    if (params != NULL && ctx != NULL && EVP_PKEY_fromdata_init(ctx) == 1 &&
        EVP_PKEY_fromdata(ctx, out, selection, params) == 1) {
        rc = HTTPSIG_OK;
    }
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return rc;
}

static int jwk_ec(const json_t *jwk, EVP_PKEY **out)
{
    unsigned char *x = NULL, *y = NULL, *d = NULL;
    size_t xl = 0, yl = 0, dl = 0;
    unsigned char pub[65];
    BIGNUM *bn = NULL;
    OSSL_PARAM_BLD *bld = NULL;
    int rc = HTTPSIG_EKEY;
    const char *crv = json_string_value(json_object_get(jwk, "crv"));
    if (crv == NULL || strcmp(crv, "P-256") != 0 || jwk_bytes(jwk, "x", 32, &x, &xl) != 0 ||
        jwk_bytes(jwk, "y", 32, &y, &yl) != 0) {
        goto out;
    }
    bool priv = json_object_get(jwk, "d") != NULL;
    if (priv && (jwk_bytes(jwk, "d", 32, &d, &dl) != 0 || (bn = BN_bin2bn(d, 32, NULL)) == NULL)) {
        goto out;
    }
    pub[0] = 0x04; /* uncompressed point */
    memcpy(pub + 1, x, 32);
    memcpy(pub + 33, y, 32);
    if ((bld = OSSL_PARAM_BLD_new()) == NULL ||
        OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) != 1 ||
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof pub) != 1 ||
        (bn != NULL && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, bn) != 1)) {
        goto out;
    }
    rc = jwk_fromdata("EC", bld, priv ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, out);
out:
    OSSL_PARAM_BLD_free(bld);
    BN_clear_free(bn);
    if (d != NULL) {
        OPENSSL_cleanse(d, dl);
    }
    free(x);
    free(y);
    free(d);
    return rc;
}

static int jwk_rsa(const json_t *jwk, EVP_PKEY **out)
{
    static const struct {
        const char *jwk, *ossl;
    } parts[] = {
        {"n", OSSL_PKEY_PARAM_RSA_N},          {"e", OSSL_PKEY_PARAM_RSA_E},
        {"d", OSSL_PKEY_PARAM_RSA_D},          {"p", OSSL_PKEY_PARAM_RSA_FACTOR1},
        {"q", OSSL_PKEY_PARAM_RSA_FACTOR2},    {"dp", OSSL_PKEY_PARAM_RSA_EXPONENT1},
        {"dq", OSSL_PKEY_PARAM_RSA_EXPONENT2}, {"qi", OSSL_PKEY_PARAM_RSA_COEFFICIENT1},
    };
    BIGNUM *bns[8] = {0};
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    int rc = HTTPSIG_EKEY;
    bool priv = json_object_get(jwk, "d") != NULL;
    if (bld == NULL) {
        return HTTPSIG_ENOMEM;
    }
    for (size_t i = 0; i < 8; i++) {
        /* Public keys need n and e; private ones need every CRT part too. */
        if (i >= 2 && (!priv || (i >= 3 && json_object_get(jwk, parts[i].jwk) == NULL))) {
            if (priv && i >= 3) {
                goto out;
            }
            continue;
        }
        unsigned char *b = NULL;
        size_t bl = 0;
        if (jwk_bytes(jwk, parts[i].jwk, 0, &b, &bl) != 0) {
            goto out;
        }
        bns[i] = BN_bin2bn(b, (int)bl, NULL);
        OPENSSL_cleanse(b, bl);
        free(b);
        if (bns[i] == NULL || OSSL_PARAM_BLD_push_BN(bld, parts[i].ossl, bns[i]) != 1) {
            goto out;
        }
    }
    rc = jwk_fromdata("RSA", bld, priv ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, out);
out:
    OSSL_PARAM_BLD_free(bld);
    for (size_t i = 0; i < 8; i++) {
        BN_clear_free(bns[i]);
    }
    return rc;
}

int httpsig_key_from_jwk(const json_t *jwk, EVP_PKEY **out)
{
    *out = NULL;
    const char *kty = json_string_value(json_object_get(jwk, "kty"));
    if (!json_is_object(jwk) || kty == NULL) {
        return HTTPSIG_EKEY;
    }
    if (strcmp(kty, "OKP") == 0) {
        return jwk_okp(jwk, out);
    }
    if (strcmp(kty, "EC") == 0) {
        return jwk_ec(jwk, out);
    }
    if (strcmp(kty, "RSA") == 0) {
        return jwk_rsa(jwk, out);
    }
    return HTTPSIG_EKEY;
}
