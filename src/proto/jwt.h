/* SPDX-License-Identifier: MIT */
/* JSON Web Tokens (RFC 7519, JWS compact serialisation RFC 7515): splitting and decoding a token,
 * and signing/verifying with OpenSSL: EdDSA (Ed25519), ES256 (P-256), RS256 (RSA >= 2048 bits),
 * HS256. The key decides the algorithm (RFC 8725 §3.1): a token verifies only when its header's
 * alg is the one algorithm of the key's type, so an HS256 header never turns a public key into
 * an HMAC secret.
 *
 *   eyJhbGciOiJFZERTQSJ9 . eyJ0ZW5hbnQiOiJ0MSJ9 . <base64url signature>
 *   header (JSON)          payload (claims JSON)   over ASCII(header "." payload)
 */
#ifndef ROOST_PROTO_JWT_H
#define ROOST_PROTO_JWT_H

#include <jansson.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/limits.h"
#include "proto/jwk.h"

/* The longest compact JWS accepted: the one token limit of the daemon, SDK and CLI. */
#define JWT_MAX_TOKEN_BYTES ROOST_TOKEN_MAX_BYTES

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

/* Verifies p->signature with `key`: the header's alg must be jwk_alg(key) (never "none").
 * ES256 signatures are the JOSE raw r||s (exactly 64 bytes; DER is refused), RS256 is PKCS#1
 * v1.5 with SHA-256 and a modulus of at least 2048 bits, HS256 compares in constant time with a
 * secret of at least 32 bytes. Returns 0 when valid, -1 otherwise. Thread-safe (fresh contexts). */
int jwt_verify(const struct jwt_parts *p, const struct jwk *key);

/* Signs `input` (ASCII header64 "." payload64) with `key` for `alg`: a private EVP_PKEY for
 * EdDSA/ES256/RS256 (ES256 output converted to raw r||s), or secret/secret_len for HS256.
 * *sig64 is the base64url signature the caller frees. Returns 0 or -1. */
int jwt_sign_input(enum jwt_alg alg, EVP_PKEY *key, const unsigned char *secret, size_t secret_len,
                   const char *input, size_t len, char **sig64);

/* Signs `claims` with `header` (alg set from `alg`, other members kept) as a compact JWS.
 * *out is a NUL-terminated token the caller frees. Returns 0 or -1. */
int jwt_sign(const json_t *header, const json_t *claims, enum jwt_alg alg, EVP_PKEY *key,
             const unsigned char *secret, size_t secret_len, char **out);

/* Signs `claims` (any JSON object) with an Ed25519 private key: header {"alg":"EdDSA","typ":"JWT"}
 * plus "kid" when kid != NULL. *out is a NUL-terminated token the caller frees. Returns 0 or -1. */
int jwt_sign_eddsa(const json_t *claims, EVP_PKEY *key, const char *kid, char **out);

/* ---- claims and key selection, as roostd checks its own and an identity provider's tokens ---- */

/* The leeway on exp, nbf and iat (clocks of two machines differ). */
#define JWT_LEEWAY_MS 60000
#define JWT_NO_TIME INT64_MIN /* an absent nbf or iat */

/* The token of an Authorization header "Bearer <token>" (scheme case-insensitive, blanks
 * trimmed, scanned no further than a maximal token): *tok and *len point into `authorization`.
 * 0, or -1 when it is not a bearer token of 1..JWT_MAX_TOKEN_BYTES bytes. */
int jwt_bearer(const char *authorization, const char **tok, size_t *len);

/* The decoded header's checks before any key is chosen: no "crit" (RFC 7515 §4.1.11: we
 * understand no extension), a "kid" (when present) a string of at most JWK_KID_MAX bytes
 * without NUL. *alg and *kid (NULL when absent) are read from it. 0 or -1. */
int jwt_header_check(const struct jwt_parts *p, enum jwt_alg *alg, const char **kid);

/* A NumericDate claim (seconds, integer or fraction) as milliseconds, saturated to +-2^53 s.
 * false when present but not a finite number; *present tells whether it is there. */
bool jwt_numeric_date_ms(const json_t *claims, const char *name, bool *present, int64_t *ms);

/* exp (required by the caller) not passed, nbf reached, iat not in the future: each with
 * JWT_LEEWAY_MS; nbf_ms/iat_ms may be JWT_NO_TIME. */
bool jwt_times_valid(int64_t exp_ms, int64_t nbf_ms, int64_t iat_ms, int64_t now_ms);

/* claims.iss is exactly `issuer`; claims.aud (a string or an array of strings, RFC 7519
 * §4.1.3) holds `audience`. A NULL want is not checked. */
bool jwt_issuer_audience_ok(const json_t *claims, const char *issuer, const char *audience);

/* RFC 8725 §3.1: the key in `set` a token with header alg/kid may be verified with. With a kid:
 * the key of that kid, only when it is of alg's type (*unknown_kid set when no key has that kid);
 * without: the one key of alg's type when there is exactly one. NULL when none fits. */
const struct jwk *jwks_select(const struct jwks *set, enum jwt_alg alg, const char *kid,
                              bool *unknown_kid);

/* base64url without padding; the caller frees *out. Decode refuses padding and bad characters. */
int jwt_b64url_encode(const unsigned char *in, size_t len, char **out);
int jwt_b64url_decode(const char *in, size_t len, unsigned char **out, size_t *outlen);

#endif
