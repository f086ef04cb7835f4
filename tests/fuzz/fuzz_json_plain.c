/* SPDX-License-Identifier: MIT */
/* libFuzzer target, differential: jsonutil_parse_plain (roostd's fast reader of plain request
 * bodies) against jansson, its reference. Whatever the fast reader accepts, jansson must accept
 * with the flags roostd uses, as an equal value whose compact dump (key order included) is the
 * same text; jsonutil_dump must print it as json_dumps does. Any difference aborts. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *fast = jsonutil_parse_plain((const char *)data, size);
    if (fast == NULL) {
        return 0;
    }
    json_error_t e;
    json_t *ref =
        json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
    if (ref == NULL || !json_equal(fast, ref)) {
        abort();
    }
    int flags = JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY;
    char *a = json_dumps(fast, flags), *b = json_dumps(ref, flags), *c = jsonutil_dump(fast);
    if (a == NULL || b == NULL || strcmp(a, b) != 0 || (c != NULL && strcmp(c, b) != 0)) {
        abort();
    }
    free(a);
    free(b);
    free(c);
    json_decref(fast);
    json_decref(ref);
    return 0;
}
