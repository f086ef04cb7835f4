/* SPDX-License-Identifier: MIT */
/* JSON Web Keys (RFC 7517, RFC 7518 §6, RFC 8037): parsing a JWK Set into public verification
 * keys, and the one algorithm each key type may verify (RFC 8725 §3.1: the key decides the
 * algorithm, never the token header).
 *
 *   {"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"<b64url 32 bytes>"},
 *            {"kty":"EC","crv":"P-256","kid":"b","x":"..","y":".."},
 *            {"kty":"RSA","kid":"c","n":"..","e":"AQAB"}]}
 *
 * Pure and I/O-free: the caller reads the file. Private members (d, p, q, ...) are accepted and
 * ignored: only the public part is imported, and jwks_parse reports that they were present so the
 * caller can warn that a private key sits in a verification key file. */
#ifndef ROOST_PROTO_JWK_H
#define ROOST_PROTO_JWK_H

#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>

#define JWKS_MAX_BYTES (256 * 1024) /* a JWK Set document larger than this is refused */
#define JWKS_MAX_KEYS 64
#define JWK_KID_MAX 256
#define JWK_RSA_MIN_BITS 2048
#define JWK_RSA_MAX_BITS 16384
#define JWK_HMAC_MIN_BYTES 32 /* RFC 7518 §3.2: a key at least as long as the hash output */
#define JWK_HMAC_MAX_BYTES 4096

/* A verification algorithm. Everything else (none, HS384, PS256, ...) is JWT_ALG_UNKNOWN. */
enum jwt_alg { JWT_ALG_UNKNOWN = 0, JWT_ALG_EDDSA, JWT_ALG_ES256, JWT_ALG_RS256, JWT_ALG_HS256 };

enum jwk_type { JWK_OKP_ED25519, JWK_EC_P256, JWK_RSA, JWK_OCT };

struct jwk {
    enum jwk_type type;
    char kid[JWK_KID_MAX + 1]; /* "" when the key has none */
    bool has_kid;
    EVP_PKEY *pkey;        /* public key (OKP, EC, RSA); owned */
    unsigned char *secret; /* HMAC secret (OCT); owned, cleansed on free */
    size_t secret_len;
};

struct jwks {
    struct jwk *keys; /* owned */
    size_t n_keys;
    bool had_private_members; /* some key carried "d" (or RSA CRT members): ignored */
    size_t n_skipped;         /* keys of a type or use we do not verify with, skipped */
};

/* The only algorithm key `k` verifies. */
enum jwt_alg jwk_alg(const struct jwk *k);
/* "EdDSA" → JWT_ALG_EDDSA, ...; JWT_ALG_UNKNOWN for anything else, "none" included. */
enum jwt_alg jwt_alg_parse(const char *name);

/* Parses a JWK Set ({"keys":[...]}) of at most JWKS_MAX_BYTES and JWKS_MAX_KEYS keys.
 * Imported: OKP/Ed25519, EC/P-256 (point checked on the curve), RSA (2048..16384 bits, public
 * check). Skipped (counted in n_skipped): other kty or crv, "use" other than "sig", an "alg" that
 * is not the key type's one algorithm, "oct" keys (secrets do not belong in a key set that is
 * often public; HS256 takes its secret from its own file). Refused (-1 with err set): invalid
 * JSON, a supported key with missing or malformed members, an RSA key under 2048 bits, a
 * duplicate kid. On success *out is filled (release with jwks_cleanup); on failure it is empty. */
int jwks_parse(const char *json, size_t len, struct jwks *out, char *err, size_t errlen);
void jwks_cleanup(struct jwks *s);

/* An HMAC key from raw secret bytes (copied): JWK_HMAC_MIN_BYTES..JWK_HMAC_MAX_BYTES. 0 or -1. */
int jwk_from_secret(const unsigned char *secret, size_t len, struct jwk *out);
/* Wraps an existing public or private key (reference taken, caller keeps its own) as a jwk of the
 * matching type; RSA keys under JWK_RSA_MIN_BITS are refused. kid may be NULL. 0 or -1. */
int jwk_from_pkey(EVP_PKEY *pkey, const char *kid, struct jwk *out);
void jwk_cleanup(struct jwk *k);

#endif
