/* SPDX-License-Identifier: MIT */
/* Minting bearer tokens (EdDSA JWTs) from roostd's own Ed25519 key, for self-hosted setups
 * (DESIGN §6.1): `roost token mint` is built on this. */
#ifndef ROOST_TOKEN_H
#define ROOST_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "roost/roost_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest lifetime roost_token_mint accepts: 10 years. */
#define ROOST_TOKEN_MAX_TTL_S ((int64_t)10 * 366 * 24 * 3600)

/* Signs a JWT with the Ed25519 private key in the PEM file `key_pem_path` (roostd's
 * DATA_DIR/token_ed25519.pem, or the file its auth.key_file names).
 * Header {"alg":"EdDSA","typ":"JWT"}; claims {"tenant","sub","scope","iat","nbf","exp"} with
 * iat = nbf = now and exp = now + ttl_s (seconds since the epoch).
 *   tenant: [A-Za-z0-9._-]{1,128};  sub: 1..256 bytes (who the token is for, logged by the
 *   server);  scope: space-separated scopes (e.g. "agent:a1:consume agent:proj.*:publish
 *   tenant:admin"), 1..4096 bytes;  ttl_s: 1..ROOST_TOKEN_MAX_TTL_S.
 * On success *token_out is a NUL-terminated compact JWS (free with roost_free).
 * Returns ROOST_OK, ROOST_EINVAL (bad argument), ROOST_EIO (the key file cannot be read, is not a
 * PEM private key, or is not Ed25519), ROOST_ENOMEM, ROOST_EINTERNAL (signing failed).
 * Thread-safe. */
ROOST_EXPORT int roost_token_mint(const char *key_pem_path, const char *tenant, const char *sub,
                                  const char *scope, int64_t ttl_s, char **token_out);

/* Same as roost_token_mint, with a reason for the failure written to errbuf (NUL-terminated,
 * at most errlen bytes) when it fails. */
ROOST_EXPORT int roost_token_mint_ex(const char *key_pem_path, const char *tenant, const char *sub,
                                     const char *scope, int64_t ttl_s, char **token_out,
                                     char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
