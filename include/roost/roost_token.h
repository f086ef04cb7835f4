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

/* ---- device login credentials (roost login; doc/CREDENTIALS.md) ----
 * `roost login` saves a device's refresh token (and signing key: an HMAC secret roostd issued, or
 * the private half of an Ed25519 key pair the device made) in a credential store: the
 * directory `dir` (NULL: $ROOST_CREDENTIALS_DIR, else $XDG_STATE_HOME/roost, else
 * ~/.local/state/roost), one file per agent, mode 0600 in a 0700 directory, holding the secrets
 * themselves or, when they went to the OS keyring, naming it. A roost_device is a
 * token provider over it: roost_device_token (a roost_token_fn) answers from memory while the
 * access token has more than a third of its life left, else rotates the refresh token at
 * /oauth/token and saves the new one before answering. Secrets are kept in memory excluded from
 * core dumps and wiped when freed; the access token is never written to disk. */
struct roost_device;

/* Makes an Ed25519 key pair (OpenSSL) for a device that registers signing keys of its own: the
 * public key as SubjectPublicKeyInfo PEM (the token request's signing_public_key) and the private
 * key as PKCS#8 PEM, each NUL-terminated (about 120 bytes; 512 is plenty). The caller wipes
 * private_pem (OPENSSL_cleanse) when done. ROOST_OK, ROOST_EINVAL (a buffer too small),
 * ROOST_EINTERNAL (OpenSSL failed). Thread-safe. */
ROOST_EXPORT int roost_device_keygen(char *public_pem, size_t public_cap, char *private_pem,
                                     size_t private_cap);
/* Saves the answer of /oauth/token (`token_json`) for `server`: in the OS keyring (the Secret
 * Service, through libsecret) when a session bus offers one and ROOST_CREDENTIALS_STORE is not
 * "file", the file in `dir` then keeping only what is not secret; else in that file, 0600. On
 * success errbuf says where ("in the OS keyring (Secret Service)", or the file and why not the
 * keyring). When the answer's signing_key is an Ed25519 key the device registered (alg
 * "ed25519", from roost_device_keygen), the caller first adds its private key PEM to that object
 * as "private_key": the record holds it beside the refresh token, and every later refresh
 * (roost_device_token, the Python SDK's DeviceLogin) makes a new pair and registers its public
 * half in the same call. ROOST_OK, ROOST_EIO, ROOST_EINVAL. */
ROOST_EXPORT int roost_device_save(const char *dir, const char *server, const char *token_json,
                                   char *errbuf, size_t errlen);
/* Opens the saved credentials of agent_id (NULL: the only ones in the store). ROOST_ENOTFOUND
 * when none are saved, ROOST_EINVAL when several are and agent_id is NULL, ROOST_EIO. */
ROOST_EXPORT int roost_device_open(const char *dir, const char *agent_id, struct roost_device **out,
                                   char *errbuf, size_t errlen);
/* A roost_token_fn: `arg` is the struct roost_device. Thread-safe. A refused refresh (the device
 * revoked, or its refresh token reused elsewhere) answers ROOST_EUNAUTHENTICATED, then and on
 * every later call (a client's request fails with it, unsent), and leaves the server's reason in
 * roost_device_error. */
ROOST_EXPORT int roost_device_token(void *arg, char *buf, size_t cap);
/* A roost_signing_key_fn over the same device: the request-signing key of the last refresh, the
 * HMAC key roostd issued or the Ed25519 key the device made and registered (a refresh comes
 * before its key nears the end of its life, as for the access token; the previous key keeps
 * verifying for roostd's oauth.key_overlap_s, so requests in flight are not refused).
 * Give both to a client (roost_client_set_token_callback, roost_client_set_signing_key_callback)
 * or an agent (token_cb, signing_key_cb) and it signs every request with the current key, as
 * signatures.require = all asks, across any number of rotations. */
ROOST_EXPORT int roost_device_signing_key(void *arg, uint64_t *gen, char *key, size_t key_cap,
                                          char *key_id, size_t id_cap, char *alg, size_t alg_cap);
ROOST_EXPORT const char *roost_device_error(const struct roost_device *d);
ROOST_EXPORT const char *roost_device_server(const struct roost_device *d);
ROOST_EXPORT const char *roost_device_agent(const struct roost_device *d);
ROOST_EXPORT void roost_device_free(struct roost_device *d);

#ifdef __cplusplus
}
#endif
#endif
