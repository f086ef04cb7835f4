/* SPDX-License-Identifier: MIT */
/* libFuzzer target for src/proto/digest.c: the first line is a Content-Digest field value, the
 * rest the body. A field computed for the body must always verify. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/digest.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t flen = nl ? (size_t)(nl - data) : size;
    const uint8_t *body = nl ? nl + 1 : data + size;
    size_t blen = size - flen - (nl ? 1 : 0);
    (void)digest_content_verify((const char *)data, flen, body, blen);
    char *f = NULL;
    if (digest_content_field(body, blen, size % 2 ? DIGEST_SHA512 : DIGEST_SHA256, &f) == 0) {
        if (digest_content_verify(f, strlen(f), body, blen) != DIGEST_OK) {
            abort();
        }
        free(f);
    }
    return 0;
}
