/* SPDX-License-Identifier: MIT */
/* Message authentication codes of the webhook schemes, written once for roostd's outbound
 * deliveries (server/webhooks_sign.c) and its ingest verification (server/ingest_verify.c): HMAC
 * over a message given in pieces, lowercase hex, a constant-time comparison of texts, and the
 * Standard Webhooks signature (HMAC-SHA256 keyed with the base64 after "whsec_", over
 * "msg_id.timestamp.body", in base64). */
#ifndef ROOST_COMMON_MAC_H
#define ROOST_COMMON_MAC_H

#include <stdbool.h>
#include <stddef.h>

#define MAC_MAX_BYTES 64 /* SHA-512 */
#define MAC_STDWH_PREFIX "whsec_"

/* One piece of the message. */
struct mac_part {
    const void *p;
    size_t n;
};

/* HMAC with `digest` (an OpenSSL digest name: "SHA256", "SHA512", "SHA1") keyed with key[key_len]
 * over the pieces in order, into out; *out_len its length. 0, or -1 (unknown digest, no memory). */
int mac_hmac(const char *digest, const void *key, size_t key_len, const struct mac_part *parts,
             size_t n_parts, unsigned char out[MAC_MAX_BYTES], size_t *out_len);

/* n bytes as 2n lowercase hex digits and a NUL into out[2n + 1]. */
void mac_hex(const unsigned char *in, size_t n, char *out);

/* Whether got[got_len] equals the NUL-terminated `expect` (not empty), in time independent of
 * where they differ. */
bool mac_same(const char *expect, const char *got, size_t got_len);

/* The key of a Standard Webhooks secret: the base64 after "whsec_" (the prefix may be missing).
 * *key is malloc'd (the caller wipes and frees it). 0, or -1 when it is not base64. */
int mac_stdwh_key(const char *secret, unsigned char **key, size_t *key_len);

/* The Standard Webhooks signature of a message, without its "v1,": base64 of HMAC-SHA256(key,
 * "msg_id.ts.body") into *b64 (malloc'd, the caller frees). ts is the webhook-timestamp header's
 * text (decimal Unix seconds). 0 or -1. */
int mac_stdwh_sign(const unsigned char *key, size_t key_len, const char *msg_id, const char *ts,
                   const void *body, size_t body_len, char **b64);

#endif
