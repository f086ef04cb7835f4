/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the request-body JSON entry point roostd uses (jsonutil_parse_object):
 * bounded size and depth, duplicate keys, NUL escapes, non-object tops. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/jsonutil.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = NULL;
    /* 32 is limits.max_json_depth's default. */
    if (jsonutil_parse_object((const char *)data, size, 32, &v) == 0) {
        char *s = jsonutil_dump(v);
        free(s);
        json_decref(v);
    }
    (void)jsonutil_depth((const char *)data, size, 32);
    return 0;
}
