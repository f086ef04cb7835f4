/* SPDX-License-Identifier: MIT */
/* libFuzzer target for src/proto/httpsig_keys.c: a signing key as a client registers it (doc/API.md
 * "Signature keys"), imported as PEM and, when the input is a JSON object, as a JWK. */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdint.h>

#include "proto/httpsig.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    EVP_PKEY *key = NULL;
    if (httpsig_key_from_pem((const char *)data, size, &key) == HTTPSIG_OK) {
        EVP_PKEY_free(key);
    }
    json_error_t err;
    json_t *jwk = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &err);
    if (json_is_object(jwk) && httpsig_key_from_jwk(jwk, &key) == HTTPSIG_OK) {
        EVP_PKEY_free(key);
    }
    json_decref(jwk);
    return 0;
}
