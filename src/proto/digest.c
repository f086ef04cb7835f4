/* SPDX-License-Identifier: MIT */
/* Content-Digest (RFC 9530) over OpenSSL's one-shot EVP_Digest; the field is parsed with sf.c. */
#include "proto/digest.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sf.h"

#include "common/banned.h"

static const struct {
    const char *key;
    enum digest_alg alg;
    size_t len;
} algs[] = {
    {"sha-256", DIGEST_SHA256, 32},
    {"sha-512", DIGEST_SHA512, 64},
};

static const EVP_MD *md_of(enum digest_alg alg)
{
    return alg == DIGEST_SHA512 ? EVP_sha512() : EVP_sha256();
}

static int hash(enum digest_alg alg, const void *body, size_t len, unsigned char *md,
                unsigned int *mdlen)
{
    /* EVP_Digest wants a non-NULL pointer even for an empty body. */
    static const unsigned char empty = 0;
    return EVP_Digest(len == 0 ? &empty : body, len, md, mdlen, md_of(alg), NULL) == 1 ? 0 : -1;
}

int digest_content_field(const void *body, size_t len, enum digest_alg alg, char **out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char *b64 = NULL;
    size_t b64len = 0;
    *out = NULL;
    if (hash(alg, body, len, md, &mdlen) != 0 || sf_base64_encode(md, mdlen, &b64, &b64len) != 0) {
        return DIGEST_ENOMEM;
    }
    const char *key = alg == DIGEST_SHA512 ? "sha-512" : "sha-256";
    size_t n = strlen(key) + 2 + b64len + 2;
    char *s = malloc(n);
    if (s == NULL) {
        free(b64);
        return DIGEST_ENOMEM;
    }
    snprintf(s, n, "%s=:%s:", key, b64);
    free(b64);
    *out = s;
    return DIGEST_OK;
}

int digest_content_verify(const char *field, size_t field_len, const void *body, size_t len)
{
    struct sf_field f;
    if (sf_parse(field, field_len, SF_FIELD_DICT, &f) != 0) {
        return DIGEST_EMALFORMED;
    }
    int rc = DIGEST_EUNSUPPORTED;
    for (size_t i = 0; i < f.n_members; i++) {
        for (size_t a = 0; a < sizeof algs / sizeof algs[0]; a++) {
            if (strcmp(f.members[i].key, algs[a].key) != 0) {
                continue;
            }
            const struct sf_item *v = &f.members[i].value;
            if (v->type != SF_BYTES || v->len != algs[a].len) {
                rc = DIGEST_EMALFORMED;
                goto out;
            }
            unsigned char md[EVP_MAX_MD_SIZE];
            unsigned int mdlen = 0;
            if (hash(algs[a].alg, body, len, md, &mdlen) != 0) {
                rc = DIGEST_ENOMEM;
                goto out;
            }
            if (mdlen != v->len || CRYPTO_memcmp(md, v->str, mdlen) != 0) {
                rc = DIGEST_EMISMATCH;
                goto out;
            }
            rc = DIGEST_OK;
        }
    }
out:
    sf_field_cleanup(&f);
    return rc;
}

const char *digest_strerror(int rc)
{
    switch (rc) {
    case DIGEST_OK:
        return "ok";
    case DIGEST_EMALFORMED:
        return "malformed";
    case DIGEST_EUNSUPPORTED:
        return "unsupported";
    case DIGEST_EMISMATCH:
        return "mismatch";
    case DIGEST_ENOMEM:
        return "out_of_memory";
    }
    return "unknown";
}
