/* SPDX-License-Identifier: MIT */
/* roostd's signing key (see server_key.h). */
#include "server/server_key.h"

#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "proto/jwt.h"
#include "server/auth.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

int server_key_load(struct server_key *k, const char *key_file, const char *data_dir, char *err,
                    size_t errlen)
{
    const char *dir = data_dir && data_dir[0] ? data_dir : ".";
    bool shared = key_file != NULL && key_file[0] != '\0';
    char path[4096];
    const char *at = key_file;
    if (!shared) {
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, ROOST_SIGNING_KEY_FILE) >=
            sizeof path) {
            snprintf(err, errlen, "data_dir: path too long");
            return -1;
        }
        at = path;
    }
    /* A shared key is never made here: each node would make its own. */
    k->key = auth_load_key(at, !shared, err, errlen);
    if (k->key == NULL) {
        return -1;
    }
    unsigned char raw[32];
    size_t raw_len = sizeof raw;
    char *x = NULL, *kid = NULL;
    int rc = -1;
    if (EVP_PKEY_get_raw_public_key(k->key, raw, &raw_len) != 1 || raw_len != 32 ||
        jwt_b64url_encode(raw, raw_len, &x) != 0) {
        ERR_clear_error();
        snprintf(err, errlen, "%s: not an Ed25519 key", at);
        goto out;
    }
    /* RFC 7638 thumbprint: SHA-256 over the required members in lexicographic order. */
    char canon[128];
    int n = snprintf(canon, sizeof canon, "{\"crv\":\"Ed25519\",\"kty\":\"OKP\",\"x\":\"%s\"}", x);
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)canon, (size_t)n, digest);
    if (jwt_b64url_encode(digest, sizeof digest, &kid) != 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    json_t *jwks = json_pack("{s:[{s:s, s:s, s:s, s:s, s:s, s:s}]}", "keys", "kty", "OKP", "crv",
                             "Ed25519", "x", x, "kid", kid, "alg", "EdDSA", "use", "sig");
    k->jwks = jwks ? json_dumps(jwks, JSON_COMPACT) : NULL;
    json_decref(jwks);
    if (k->jwks == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    rc = 0;
out:
    free(x);
    free(kid);
    return rc;
}

void server_key_cleanup(struct server_key *k)
{
    EVP_PKEY_free(k->key);
    k->key = NULL;
    free(k->jwks);
    k->jwks = NULL;
}
