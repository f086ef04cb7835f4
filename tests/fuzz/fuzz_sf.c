/* SPDX-License-Identifier: MIT */
/* libFuzzer target for src/proto/sf.c: the input is parsed as each of Item, List and Dictionary;
 * whatever parses must serialize, and the serialization must be a fixed point (parse →
 * serialize → parse → serialize gives the same text), or the target aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sf.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const uint8_t *data, size_t size, enum sf_field_type type)
{
    struct sf_field f, g;
    char *s1 = NULL, *s2 = NULL;
    size_t n1 = 0, n2 = 0;
    if (sf_parse((const char *)data, size, type, &f) != 0) {
        return;
    }
    if (sf_serialize(&f, &s1, &n1) != 0) {
        fprintf(stderr, "parsed value (type %d) does not serialize\n", (int)type);
        abort();
    }
    if (sf_parse(s1, n1, type, &g) != 0) {
        fprintf(stderr, "serialization does not parse: %s\n", s1);
        abort();
    }
    if (sf_serialize(&g, &s2, &n2) != 0 || n1 != n2 || memcmp(s1, s2, n1) != 0) {
        fprintf(stderr, "serialization is not canonical: %s vs %s\n", s1, s2 ? s2 : "(fail)");
        abort();
    }
    /* Copying every member keeps the same serialization. */
    for (size_t i = 0; i < f.n_members; i++) {
        struct sf_item c;
        char *a = NULL, *b = NULL;
        if (sf_item_copy(&c, &f.members[i].value) != 0) {
            continue; /* out of memory only */
        }
        if (sf_serialize_item(&f.members[i].value, &a, NULL) == 0 &&
            (sf_serialize_item(&c, &b, NULL) != 0 || strcmp(a, b) != 0)) {
            abort();
        }
        free(a);
        free(b);
        sf_item_cleanup(&c);
    }
    free(s1);
    free(s2);
    sf_field_cleanup(&f);
    sf_field_cleanup(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    round_trip(data, size, SF_FIELD_ITEM);
    round_trip(data, size, SF_FIELD_LIST);
    round_trip(data, size, SF_FIELD_DICT);
    unsigned char *raw = NULL;
    size_t rawlen = 0;
    if (sf_base64_decode((const char *)data, size, &raw, &rawlen) == 0) {
        free(raw);
    }
    return 0;
}
