/* SPDX-License-Identifier: MIT */
/* RFC 9530 Content-Digest: computing the field for a body and checking a received field against
 * the body. The field is a Structured Field Dictionary of algorithm → Byte Sequence:
 *
 *   Content-Digest: sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:
 *
 * Pure: no I/O, no globals, thread-safe. */
#ifndef ROOST_PROTO_DIGEST_H
#define ROOST_PROTO_DIGEST_H

#include <stddef.h>

enum digest_alg { DIGEST_SHA256, DIGEST_SHA512 };

enum digest_result {
    DIGEST_OK = 0,
    DIGEST_EMALFORMED =
        -1, /* not a Dictionary, or a supported member is not a right-size Byte Seq */
    DIGEST_EUNSUPPORTED = -2, /* no member names a supported algorithm (sha-256, sha-512) */
    DIGEST_EMISMATCH = -3,    /* a supported member does not match the body */
    DIGEST_ENOMEM = -4,
};

/* Writes the member `sha-256=:…:` (or sha-512) for body[0..len) into *out (NUL-terminated, caller
 * frees). Returns DIGEST_OK or DIGEST_ENOMEM. */
int digest_content_field(const void *body, size_t len, enum digest_alg alg, char **out);

/* Checks a received Content-Digest value field[0..field_len) against body[0..len). Unknown
 * algorithms are ignored; at least one supported one must be present and every supported one
 * must match (a weak member cannot hide a mismatching strong one). Returns one of enum
 * digest_result. */
int digest_content_verify(const char *field, size_t field_len, const void *body, size_t len);

/* Stable name of a result code ("ok", "malformed", …). */
const char *digest_strerror(int rc);

#endif
