/* SPDX-License-Identifier: MIT */
/* Compact JWS (RFC 7515) decoding and Ed25519 (RFC 8037) signing/verification. The decoder is pure
 * and bounded: nothing is allocated before the token length and shape have been checked. */
#include "proto/jwt.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

static const char b64url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Value of one base64url character, or -1. */
static int b64url_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '-') {
        return 62;
    }
    if (c == '_') {
        return 63;
    }
    return -1;
}

int jwt_b64url_encode(const unsigned char *in, size_t len, char **out)
{
    *out = NULL;
    if (len > (SIZE_MAX - 4) / 4 * 3) {
        return -1;
    }
    size_t n = len / 3 * 4 + (len % 3 == 0 ? 0 : len % 3 + 1);
    char *s = malloc(n + 1);
    if (s == NULL) {
        return -1;
    }
    size_t o = 0, i = 0;
    for (; i + 3 <= len; i += 3) {
        unsigned long v = (unsigned long)in[i] << 16 | (unsigned long)in[i + 1] << 8 | in[i + 2];
        s[o++] = b64url_alphabet[(v >> 18) & 63];
        s[o++] = b64url_alphabet[(v >> 12) & 63];
        s[o++] = b64url_alphabet[(v >> 6) & 63];
        s[o++] = b64url_alphabet[v & 63];
    }
    if (len - i == 1) {
        unsigned long v = (unsigned long)in[i] << 16;
        s[o++] = b64url_alphabet[(v >> 18) & 63];
        s[o++] = b64url_alphabet[(v >> 12) & 63];
    } else if (len - i == 2) {
        unsigned long v = (unsigned long)in[i] << 16 | (unsigned long)in[i + 1] << 8;
        s[o++] = b64url_alphabet[(v >> 18) & 63];
        s[o++] = b64url_alphabet[(v >> 12) & 63];
        s[o++] = b64url_alphabet[(v >> 6) & 63];
    }
    s[o] = '\0';
    *out = s;
    return 0;
}

int jwt_b64url_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    /* A length of 1 mod 4 cannot come from any byte string. */
    if (len % 4 == 1) {
        return -1;
    }
    size_t n = len / 4 * 3 + (len % 4 == 0 ? 0 : len % 4 - 1);
    /* Always allocate at least one byte so an empty result is still a valid pointer. */
    unsigned char *buf = malloc(n + 1);
    if (buf == NULL) {
        return -1;
    }
    size_t o = 0, i = 0;
    unsigned long acc = 0;
    int bits = 0;
    for (; i < len; i++) {
        int v = b64url_value((unsigned char)in[i]);
        if (v < 0) {
            goto fail;
        }
        acc = (acc << 6 | (unsigned long)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[o++] = (unsigned char)(acc >> bits);
        }
    }
    /* Leftover bits must be zero (canonical encoding): otherwise two strings decode alike. */
    if (bits > 0 && (acc & ((1ul << bits) - 1)) != 0) {
        goto fail;
    }
    *out = buf;
    *outlen = o;
    return 0;
fail:
    free(buf);
    return -1;
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

int jwt_verify_eddsa(const struct jwt_parts *p, EVP_PKEY *key)
{
    int rc = -1;
    EVP_MD_CTX *ctx = NULL;
    if (p == NULL || key == NULL || p->header == NULL || p->signing_input == NULL) {
        return -1;
    }
    /* The algorithm is ours to choose, not the header's: only EdDSA with an Ed25519 key. */
    const char *alg = json_string_value(json_object_get(p->header, "alg"));
    if (alg == NULL || strcmp(alg, "EdDSA") != 0) {
        return -1;
    }
    if (!EVP_PKEY_is_a(key, "ED25519") || p->signature_len != 64) {
        return -1;
    }
    /* A fresh context per call keeps concurrent verifications with one shared key independent. */
    ctx = EVP_MD_CTX_new();
    if (ctx == NULL) {
        goto out;
    }
    if (EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) != 1) {
        goto out;
    }
    if (EVP_DigestVerify(ctx, p->signature, p->signature_len,
                         (const unsigned char *)p->signing_input, p->signing_input_len) == 1) {
        rc = 0;
    }
out:
    EVP_MD_CTX_free(ctx);
    return rc;
}

int jwt_sign_eddsa(const json_t *claims, EVP_PKEY *key, const char *kid, char **out)
{
    int rc = -1;
    json_t *header = NULL;
    char *hjson = NULL, *cjson = NULL, *h64 = NULL, *c64 = NULL, *s64 = NULL, *input = NULL;
    char *token = NULL;
    EVP_MD_CTX *ctx = NULL;
    unsigned char sig[64];
    size_t siglen = sizeof sig;

    *out = NULL;
    if (!json_is_object(claims) || key == NULL || !EVP_PKEY_is_a(key, "ED25519")) {
        goto out;
    }
    header = json_pack("{s:s, s:s}", "alg", "EdDSA", "typ", "JWT");
    if (header == NULL) {
        goto out;
    }
    if (kid != NULL && json_object_set_new(header, "kid", json_string(kid)) != 0) {
        goto out;
    }
    hjson = json_dumps(header, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cjson = json_dumps(claims, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (hjson == NULL || cjson == NULL) {
        goto out;
    }
    if (jwt_b64url_encode((const unsigned char *)hjson, strlen(hjson), &h64) != 0 ||
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

    ctx = EVP_MD_CTX_new();
    if (ctx == NULL || EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) != 1 ||
        EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)input, inlen) != 1) {
        goto out;
    }
    if (jwt_b64url_encode(sig, siglen, &s64) != 0) {
        goto out;
    }
    size_t slen = strlen(s64);
    token = malloc(inlen + 1 + slen + 1);
    if (token == NULL) {
        goto out;
    }
    memcpy(token, input, inlen);
    token[inlen] = '.';
    memcpy(token + inlen + 1, s64, slen + 1);
    *out = token;
    token = NULL;
    rc = 0;
out:
    EVP_MD_CTX_free(ctx);
    OPENSSL_cleanse(sig, sizeof sig);
    json_decref(header);
    free(hjson);
    free(cjson);
    free(h64);
    free(c64);
    free(s64);
    free(input);
    free(token);
    return rc;
}
