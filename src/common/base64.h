/* SPDX-License-Identifier: MIT */
/* Base64 (RFC 4648 §4) and base64url (§5), shared by the JWT codec (base64url, no padding) and
 * the Structured Field Byte Sequences of HTTP signatures and Content-Digest (standard, padded). */
#ifndef ROOST_BASE64_H
#define ROOST_BASE64_H

#include <stdbool.h>
#include <stddef.h>

enum b64_variant {
    B64_STD, /* A-Z a-z 0-9 + /, encoded with '=' padding; decoding accepts it or its absence */
    B64_URL, /* A-Z a-z 0-9 - _, never padded */
};

/* *out is NUL-terminated and the caller frees it; *outlen (may be NULL) excludes the NUL.
 * Returns 0 or -1 (out of memory, length overflow). */
int b64_encode(enum b64_variant v, const unsigned char *in, size_t len, char **out, size_t *outlen);

/* Refuses characters outside the variant's alphabet, a length no encoding has, and padding that
 * does not complete the last group. `canonical` also refuses non-zero leftover bits (so no two
 * strings decode alike). *out (caller frees) is never NULL on success, even when empty.
 * Returns 0 or -1. */
int b64_decode(enum b64_variant v, bool canonical, const char *in, size_t len, unsigned char **out,
               size_t *outlen);

#endif
