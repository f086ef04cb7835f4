/* SPDX-License-Identifier: MIT */
/* roostd's own Ed25519 signing key (DATA_DIR/signing_ed25519.pem) and its public half as a JWK Set,
 * served at /api/v1/keys/server. */
#ifndef ROOST_SERVER_KEY_H
#define ROOST_SERVER_KEY_H

#include <stddef.h>

#include "common/limits.h"

struct server_key {
    struct evp_pkey_st *key; /* the private key (EVP_PKEY) */
    char *jwks;              /* its public JWK Set (kid = RFC 7638 thumbprint), JSON text */
};

/* Loads key_file when it is set (it must exist: nodes that share it sign alike), else loads (or
 * creates, mode 0600) DATA_DIR/signing_ed25519.pem (data_dir NULL or "": the working
 * directory), and builds the JWK Set. 0, or -1 with err set. */
int server_key_load(struct server_key *k, const char *key_file, const char *data_dir, char *err,
                    size_t errlen);
/* Frees what load filled; a zeroed struct is a no-op. */
void server_key_cleanup(struct server_key *k);

#endif
