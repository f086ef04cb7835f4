/* SPDX-License-Identifier: MIT */
/* libFuzzer target for src/proto/jwt.c: compact JWS decoding (jwt_decode) and, when it decodes,
 * the EdDSA verification path with a fixed key (the header's alg is attacker-chosen). */
#include <openssl/evp.h>
#include <stdint.h>

#include "proto/jwt.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static EVP_PKEY *key;
    if (key == NULL) {
        static const unsigned char pub[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
        key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, sizeof pub);
    }
    struct jwt_parts p;
    if (jwt_decode((const char *)data, size, &p) == 0) {
        (void)jwt_verify_eddsa(&p, key);
        jwt_parts_cleanup(&p);
    }
    return 0;
}
