/* SPDX-License-Identifier: MIT */
/* libFuzzer target for src/proto/jwk.c: a JWK Set as auth.jwks_file holds it (an identity
 * provider's document, reloaded on SIGHUP), parsed and its public keys imported. */
#include <stdint.h>

#include "proto/jwk.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct jwks set;
    char err[256];
    if (jwks_parse((const char *)data, size, &set, err, sizeof err) == 0) {
        jwks_cleanup(&set);
    }
    return 0;
}
