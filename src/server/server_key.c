/* SPDX-License-Identifier: MIT */
/* roostd's signing key and the JWK Set it publishes (see server_key.h). */
#include "server/server_key.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsutil.h"
#include "proto/jwt.h"
#include "server/auth.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

/* Appends the public JWK of an Ed25519 key to `keys` unless a key with its kid is there already.
 * 0 (added or already there), or -1 with err set (`what` names the key in the message). */
static int add_jwk(json_t *keys, EVP_PKEY *key, const char *what, char *err, size_t errlen)
{
    unsigned char raw[32];
    size_t raw_len = sizeof raw;
    char *x = NULL, *kid = NULL;
    int rc = -1;
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_ED25519 ||
        EVP_PKEY_get_raw_public_key(key, raw, &raw_len) != 1 || raw_len != 32 ||
        jwt_b64url_encode(raw, raw_len, &x) != 0) {
        ERR_clear_error();
        snprintf(err, errlen, "%s: not an Ed25519 key", what);
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
    size_t i;
    json_t *have;
    json_array_foreach(keys, i, have)
    {
        if (strcmp(json_string_value(json_object_get(have, "kid")), kid) == 0) {
            rc = 0; /* listed already: published once */
            goto out;
        }
    }
    if (json_array_append_new(keys, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "kty", "OKP", "crv",
                                              "Ed25519", "x", x, "kid", kid, "alg", "EdDSA", "use",
                                              "sig")) != 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    rc = 0;
out:
    free(x);
    free(kid);
    return rc;
}

/* Every PEM block of the extra keys file: a public key (SubjectPublicKeyInfo) or a private key
 * (PKCS#8), of which only the public half is published. */
static int add_extra(json_t *keys, const char *path, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    if (fsutil_read_bounded(path, SERVER_KEY_EXTRA_FILE_MAX, &text, &len) != 0) {
        snprintf(err, errlen, "webhooks.extra_keys_file: %s: %s", path,
                 errno == EFBIG ? "larger than 64 KiB" : strerror(errno));
        return -1;
    }
    BIO *bio = BIO_new_mem_buf(text, (int)len);
    int rc = bio != NULL ? 0 : -1;
    size_t blocks = 0;
    while (rc == 0) {
        char *name = NULL, *header = NULL;
        unsigned char *data = NULL;
        long dlen = 0;
        if (PEM_read_bio(bio, &name, &header, &data, &dlen) != 1) {
            ERR_clear_error(); /* the end of the file (no further BEGIN line) */
            break;
        }
        const unsigned char *p = data;
        EVP_PKEY *key = NULL;
        if (strcmp(name, "PUBLIC KEY") == 0) {
            key = d2i_PUBKEY(NULL, &p, dlen);
        } else if (strcmp(name, "PRIVATE KEY") == 0) {
            key = d2i_AutoPrivateKey(NULL, &p, dlen);
        }
        char what[4200];
        snprintf(what, sizeof what, "webhooks.extra_keys_file: %s: key %zu (%s)", path, blocks + 1,
                 name);
        if (++blocks > SERVER_KEY_EXTRA_MAX) {
            snprintf(err, errlen, "webhooks.extra_keys_file: %s: more than %d keys", path,
                     SERVER_KEY_EXTRA_MAX);
            rc = -1;
        } else if (key == NULL) {
            ERR_clear_error();
            snprintf(err, errlen, "%s: not a PUBLIC KEY or PRIVATE KEY block of an Ed25519 key",
                     what);
            rc = -1;
        } else {
            rc = add_jwk(keys, key, what, err, errlen);
        }
        EVP_PKEY_free(key);
        OPENSSL_free(name);
        OPENSSL_free(header);
        OPENSSL_clear_free(data, (size_t)dlen);
    }
    if (rc == 0 && blocks == 0) {
        snprintf(err, errlen, "webhooks.extra_keys_file: %s: no PEM key in it", path);
        rc = -1;
    }
    BIO_free(bio);
    OPENSSL_cleanse(text, len); /* may hold private keys */
    free(text);
    return rc;
}

int server_key_load(struct server_key *k, const char *key_file, const char *extra_file,
                    const char *data_dir, char *err, size_t errlen)
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
    json_t *keys = json_array();
    int rc = keys != NULL ? add_jwk(keys, k->key, at, err, errlen) : -1;
    if (rc == 0 && extra_file != NULL && extra_file[0] != '\0') {
        rc = add_extra(keys, extra_file, err, errlen);
    }
    json_t *jwks = rc == 0 ? json_pack("{s:O}", "keys", keys) : NULL;
    k->jwks = jwks ? json_dumps(jwks, JSON_COMPACT) : NULL;
    k->n_keys = json_array_size(keys);
    json_decref(jwks);
    json_decref(keys);
    if (rc == 0 && k->jwks == NULL) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    return rc;
}

void server_key_cleanup(struct server_key *k)
{
    EVP_PKEY_free(k->key);
    k->key = NULL;
    free(k->jwks);
    k->jwks = NULL;
    k->n_keys = 0;
}
