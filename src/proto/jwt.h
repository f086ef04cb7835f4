/* SPDX-License-Identifier: MIT */
/* JSON Web Tokens (RFC 7519, JWS compact serialisation RFC 7515): splitting and decoding a token,
 * and signing/verifying with OpenSSL. Only EdDSA (Ed25519) now; the algorithm allow-list is the
 * caller's (never trust the header's choice of key type).
 *
 *   eyJhbGciOiJFZERTQSJ9 . eyJ0ZW5hbnQiOiJ0MSJ9 . <base64url signature>
 *   header (JSON)          payload (claims JSON)   over ASCII(header "." payload)
 */
#ifndef ROOST_PROTO_JWT_H
#define ROOST_PROTO_JWT_H

#include <jansson.h>
#include <openssl/evp.h>
#include <stddef.h>

#define JWT_MAX_TOKEN_BYTES 8192

struct jwt_parts {
    json_t *header;            /* decoded header object (owned) */
    json_t *claims;            /* decoded payload object (owned) */
    const char *signing_input; /* borrowed from the token: header "." payload */
    size_t signing_input_len;
    unsigned char *signature; /* decoded signature bytes (owned) */
    size_t signature_len;
};

/* Splits and decodes a compact JWS. Refuses tokens longer than JWT_MAX_TOKEN_BYTES, with other
 * than three parts, bad base64url, non-object JSON, duplicate keys, or a missing "alg".
 * Returns 0 or -1. The token must outlive `out` (signing_input borrows it). */
int jwt_decode(const char *token, size_t len, struct jwt_parts *out);
void jwt_parts_cleanup(struct jwt_parts *p);

/* Verifies p->signature over p->signing_input with an Ed25519 public (or private) key, and that the
 * header's alg is "EdDSA". Returns 0 when valid, -1 otherwise. */
int jwt_verify_eddsa(const struct jwt_parts *p, EVP_PKEY *key);

/* Signs `claims` (any JSON object) with an Ed25519 private key: header {"alg":"EdDSA","typ":"JWT"}
 * plus "kid" when kid != NULL. *out is a NUL-terminated token the caller frees. Returns 0 or -1. */
int jwt_sign_eddsa(const json_t *claims, EVP_PKEY *key, const char *kid, char **out);

/* base64url without padding; the caller frees *out. Decode refuses padding and bad characters. */
int jwt_b64url_encode(const unsigned char *in, size_t len, char **out);
int jwt_b64url_decode(const char *in, size_t len, unsigned char **out, size_t *outlen);

#endif
