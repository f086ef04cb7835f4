/* SPDX-License-Identifier: MIT */
/* Verification of inbound webhook deliveries (DESIGN §6.5), each scheme exactly as its sender
 * documents it: standard-webhooks (OpenAI, Anthropic, Svix), github, stripe, token, hmac, jwt (A2A
 * push notifications). Pure functions over the body, the headers and the source's config (a leaf:
 * common, proto and OpenSSL only; a jwt key set behind a URL comes through d->jwks_get). Signatures
 * are compared in constant time; a signed timestamp must be within the tolerance either way. */
#ifndef ROOST_SERVER_INGEST_VERIFY_H
#define ROOST_SERVER_INGEST_VERIFY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INGEST_DELIVERY_ID_MAX 256
#define INGEST_TYPE_MAX 128

/* A delivery as received: its raw body, its headers (header(ctx, name) returns the value of the
 * named header, case-insensitive, or NULL), the body parsed as JSON when it is (NULL otherwise,
 * borrowed) and the clock. */
struct ingest_delivery {
    const unsigned char *body;
    size_t body_len;
    const char *(*header)(void *ctx, const char *name);
    void *ctx;
    const json_t *json;
    int64_t now_s;
    int64_t tolerance_s;
    /* jwt with options.jwks_url: the key set's text at url (malloc'd into *text, the caller of
     * ingest_verify caches it); refresh asks for a fresh copy because a token named a kid the
     * cached one lacks (the fetcher bounds how often). 0 or -1. NULL: no URL key sets. */
    int (*jwks_get)(void *jwks_ctx, const char *url, bool refresh, char **text);
    void *jwks_ctx;
};

/* What a verified delivery is: the sender's delivery id (the idempotency key's tail) and its
 * event type ("" when the scheme has none). */
struct ingest_verified {
    char delivery_id[INGEST_DELIVERY_ID_MAX + 1];
    char type[INGEST_TYPE_MAX + 1];
    bool used_old_secret; /* verified with the secret a rotation replaced */
};

/* True for a scheme this module knows. */
bool ingest_scheme_known(const char *scheme);

/* Checks a source's scheme options (`config`, a JSON object; unknown members refused) and its
 * secret. When *secret is "" and the scheme has a secret of its own making, writes a fresh one
 * into secret[cap]. 0, or -1 with *why (static text) naming what is wrong. */
int ingest_config_check(const char *scheme, const json_t *config, char *secret, size_t cap,
                        const char **why);
/* A fresh secret for the scheme into out[cap] (standard-webhooks and stripe: "whsec_" + base64
 * of 32 random bytes; the others: 43 base64url characters). 0 or -1. */
int ingest_secret_new(const char *scheme, char *out, size_t cap);

/* Verifies d under the scheme with `secret`, then `old_secret` (NULL when none or past its
 * overlap). 0 and *out filled, or -1 with *reason (static text for the receipt log: what failed,
 * never shown to the sender). */
int ingest_verify(const char *scheme, const json_t *config, const char *secret,
                  const char *old_secret, const struct ingest_delivery *d,
                  struct ingest_verified *out, const char **reason);

/* The value at an RFC 6901 JSON pointer in v, or NULL. */
const json_t *ingest_json_pointer(const json_t *v, const char *pointer);

#endif
