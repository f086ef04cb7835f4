/* SPDX-License-Identifier: MIT */
/* roost_token_mint: an EdDSA JWT signed with roostd's Ed25519 key (DESIGN §6.1). The key file is
 * read with a size bound and never through an interactive passphrase prompt. */
#include <errno.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fsutil.h"
#include "common/ids.h"
#include "proto/jwt.h"
#include "roost/roost_token.h"
#include "sdk/sdk.h"

#include "common/banned.h"

#define KEY_FILE_MAX_BYTES (64 * 1024)
#define SUB_MAX_BYTES 256
#define SCOPE_MAX_BYTES 4096

/* Refuses encrypted keys instead of letting OpenSSL prompt on the terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

/* Reads a whole file of at most KEY_FILE_MAX_BYTES into a new buffer. */
static int read_small_file(const char *path, char **out, size_t *len, char *errbuf, size_t errlen)
{
    if (fsutil_read_bounded(path, KEY_FILE_MAX_BYTES, out, len) == 0) {
        return ROOST_OK;
    }
    switch (errno) {
    case ENOMEM:
        return sdk_errbuf_fail(errbuf, errlen, ROOST_ENOMEM, "out of memory");
    case EFBIG:
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EIO, "%s: too large for a key file", path);
    case EIO:
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EIO, "%s: read error", path);
    default:
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EIO, "cannot open %s: %s", path,
                               strerror(errno));
    }
}

static int load_ed25519_key(const char *path, EVP_PKEY **out, char *errbuf, size_t errlen)
{
    *out = NULL;
    char *pem = NULL;
    size_t len = 0;
    int rc = read_small_file(path, &pem, &len, errbuf, errlen);
    if (rc != ROOST_OK) {
        return rc;
    }
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    EVP_PKEY *key = NULL;
    if (bio == NULL) {
        rc = sdk_errbuf_fail(errbuf, errlen, ROOST_ENOMEM, "out of memory");
        goto out;
    }
    key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
    if (key == NULL) {
        rc = sdk_errbuf_fail(errbuf, errlen, ROOST_EIO, "%s: not an unencrypted PEM private key",
                             path);
        goto out;
    }
    if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
        EVP_PKEY_free(key);
        key = NULL;
        rc = sdk_errbuf_fail(errbuf, errlen, ROOST_EIO, "%s: not an Ed25519 key", path);
        goto out;
    }
    *out = key;
out:
    BIO_free(bio);
    OPENSSL_cleanse(pem, len);
    free(pem);
    return rc;
}

int roost_token_mint_ex(const char *key_pem_path, const char *tenant, const char *sub,
                        const char *scope, int64_t ttl_s, char **token_out, char *errbuf,
                        size_t errlen)
{
    if (errbuf != NULL && errlen > 0) {
        errbuf[0] = '\0';
    }
    if (token_out == NULL) {
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EINVAL, "token_out is NULL");
    }
    *token_out = NULL;
    if (key_pem_path == NULL || key_pem_path[0] == '\0') {
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EINVAL, "no key file given");
    }
    if (tenant == NULL || !ids_valid_name(tenant, strlen(tenant))) {
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EINVAL,
                               "tenant must match [A-Za-z0-9._-]{1,128}");
    }
    if (sub == NULL || sub[0] == '\0' || strlen(sub) > SUB_MAX_BYTES) {
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EINVAL, "sub must be 1..%d bytes",
                               SUB_MAX_BYTES);
    }
    if (scope == NULL || scope[0] == '\0' || strlen(scope) > SCOPE_MAX_BYTES) {
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EINVAL, "scope must be 1..%d bytes",
                               SCOPE_MAX_BYTES);
    }
    if (ttl_s < 1 || ttl_s > ROOST_TOKEN_MAX_TTL_S) {
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EINVAL, "ttl must be 1 s .. 10 years");
    }
    time_t now = time(NULL);
    if (now == (time_t)-1) {
        return sdk_errbuf_fail(errbuf, errlen, ROOST_EINTERNAL, "no clock");
    }
    EVP_PKEY *key = NULL;
    int rc = load_ed25519_key(key_pem_path, &key, errbuf, errlen);
    if (rc != ROOST_OK) {
        return rc;
    }
    json_t *claims = json_object();
    if (claims == NULL || json_object_set_new(claims, "tenant", json_string(tenant)) != 0 ||
        json_object_set_new(claims, "sub", json_string(sub)) != 0 ||
        json_object_set_new(claims, "scope", json_string(scope)) != 0) {
        /* json_string is NULL for invalid UTF-8 as well as for ENOMEM. */
        rc = sdk_errbuf_fail(errbuf, errlen, claims == NULL ? ROOST_ENOMEM : ROOST_EINVAL,
                             "sub and scope must be UTF-8");
        goto out;
    }
    if (json_object_set_new(claims, "iat", json_integer((json_int_t)now)) != 0 ||
        json_object_set_new(claims, "nbf", json_integer((json_int_t)now)) != 0 ||
        json_object_set_new(claims, "exp", json_integer((json_int_t)now + ttl_s)) != 0) {
        rc = sdk_errbuf_fail(errbuf, errlen, ROOST_ENOMEM, "out of memory");
        goto out;
    }
    if (jwt_sign_eddsa(claims, key, NULL, token_out) != 0) {
        *token_out = NULL;
        rc = sdk_errbuf_fail(errbuf, errlen, ROOST_EINTERNAL, "signing failed");
        goto out;
    }
out:
    json_decref(claims);
    EVP_PKEY_free(key);
    return rc;
}

int roost_token_mint(const char *key_pem_path, const char *tenant, const char *sub,
                     const char *scope, int64_t ttl_s, char **token_out)
{
    return roost_token_mint_ex(key_pem_path, tenant, sub, scope, ttl_s, token_out, NULL, 0);
}
