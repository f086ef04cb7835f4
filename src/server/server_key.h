/* SPDX-License-Identifier: MIT */
/* roostd's own Ed25519 signing key (DATA_DIR/signing_ed25519.pem or webhooks.signing_key_file)
 * and the JWK Set served at /api/v1/keys/server: the signing key first, then every key of
 * webhooks.extra_keys_file (other nodes' keys, the previous key during a rotation), published
 * but never used to sign. */
#ifndef ROOST_SERVER_KEY_H
#define ROOST_SERVER_KEY_H

#include <stddef.h>

#include "common/limits.h"

/* At most this many keys in webhooks.extra_keys_file, and bytes in it. */
#define SERVER_KEY_EXTRA_MAX 16
#define SERVER_KEY_EXTRA_FILE_MAX (64 * 1024)

struct server_key {
    struct evp_pkey_st *key; /* the private key (EVP_PKEY) */
    char *jwks;              /* the public JWK Set (kid = RFC 7638 thumbprint), JSON text: the
                              * signing key is keys[0] */
    size_t n_keys;           /* keys in jwks (1 + the distinct extra keys) */
};

/* Loads key_file when it is set (it must exist: nodes that share it sign alike), else loads (or
 * creates, mode 0600) DATA_DIR/signing_ed25519.pem (data_dir NULL or "": the working
 * directory); then extra_file when set (NULL or "": none): one or more PEM blocks, each an
 * Ed25519 public key or private key (only its public half is kept), at most
 * SERVER_KEY_EXTRA_MAX keys and SERVER_KEY_EXTRA_FILE_MAX bytes; a key listed twice, or the
 * signing key itself, is published once. Builds the JWK Set. 0, or -1 with err set. */
int server_key_load(struct server_key *k, const char *key_file, const char *extra_file,
                    const char *data_dir, char *err, size_t errlen);
/* Frees what load filled; a zeroed struct is a no-op. */
void server_key_cleanup(struct server_key *k);

#endif
