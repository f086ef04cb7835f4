/* SPDX-License-Identifier: MIT */
/* Inbound webhook sources and their receipt log (DESIGN §6.5): the rows behind the store
 * operations source_* and receipt_* (store.h; written once in store_sources.c). */
#ifndef ROOST_STORE_SOURCES_H
#define ROOST_STORE_SOURCES_H

#include <stdint.h>

#include "store/store.h"

#define STORE_SOURCE_ID_LEN 30  /* "src_" + 26 Crockford base32 chars of 128 random bits */
#define STORE_RECEIPT_ID_LEN 30 /* "rcp_" + 26-char ULID (receipts sort by time) */
#define STORE_SOURCE_NAME_MAX 200
#define STORE_SOURCE_SCHEME_MAX 31
#define STORE_SOURCE_CONFIG_MAX 65536 /* JSON text: scheme options, routing, an inline JWKS */
#define STORE_SOURCE_SECRET_MAX 512
#define STORE_RECEIPT_OUTCOME_MAX 15 /* accepted | duplicate | refused */
#define STORE_RECEIPT_REASON_MAX 63
#define STORE_RECEIPT_DELIVERY_MAX 256
#define STORE_RECEIPT_PEER_MAX 63

struct store_source {
    char tenant_id[STORE_ID_MAX + 1];
    char source_id[STORE_SOURCE_ID_LEN + 1];
    char name[STORE_SOURCE_NAME_MAX + 1];
    char scheme[STORE_SOURCE_SCHEME_MAX + 1];
    char *config; /* owned JSON object text (store_source_cleanup) */
    /* "" in listings: they never carry secrets */
    char secret[STORE_SOURCE_SECRET_MAX + 1];
    char old_secret[STORE_SOURCE_SECRET_MAX + 1]; /* "" when none */
    int64_t old_until_ms;                         /* old_secret verifies before this; 0 = none */
    int64_t created_at_ms, updated_at_ms;
};
/* Frees config and wipes the secrets. */
void store_source_cleanup(struct store_source *s);

struct store_receipt {
    char source_id[STORE_SOURCE_ID_LEN + 1];
    char receipt_id[STORE_RECEIPT_ID_LEN + 1];
    int64_t at_ms;
    char outcome[STORE_RECEIPT_OUTCOME_MAX + 1];
    char reason[STORE_RECEIPT_REASON_MAX + 1];        /* "ok", or why it was refused */
    char delivery_id[STORE_RECEIPT_DELIVERY_MAX + 1]; /* "" when unknown (refused early) */
    int64_t size;                                     /* body bytes */
    char peer[STORE_RECEIPT_PEER_MAX + 1];            /* the sender's address */
    int events;                                       /* events written (0 for a duplicate) */
};

/* "src_" + 128 random bits / "rcp_" + a ULID for now_ms. ROOST_EINTERNAL without randomness. */
int store_source_new_id(char out[STORE_SOURCE_ID_LEN + 1]);
int store_receipt_new_id(int64_t now_ms, char out[STORE_RECEIPT_ID_LEN + 1]);

#endif
