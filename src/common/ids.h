/* SPDX-License-Identifier: MIT */
/* Identifiers: event ids (evt_ + ULID), lease tokens (lt_ + 128 random bits) and the validation of
 * client-chosen ids (agent, tenant, consumer). */
#ifndef ROOST_IDS_H
#define ROOST_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/limits.h"

#define IDS_EVENT_ID_LEN 30    /* "evt_" + 26 */
#define IDS_LEASE_TOKEN_LEN 29 /* "lt_" + 26 */
#define IDS_NAME_MAX ROOST_ID_MAX

/* Writes "evt_" + a ULID for `now_ms` (monotonic within the process: ids made in the same
 * millisecond still sort in creation order). out must hold IDS_EVENT_ID_LEN + 1 bytes. Thread-safe.
 */
int ids_event_id(int64_t now_ms, char *out);
/* Writes "lt_" + 26 Crockford base32 chars of 128 random bits. Thread-safe. */
int ids_lease_token(char *out);
/* Fills buf with cryptographically random bytes (OpenSSL RAND_bytes; draws of up to 32 bytes come
 * from a per-thread pool refilled by one RAND_bytes call). 0 on success. */
int ids_random(void *buf, size_t len);

/* [A-Za-z0-9._-]{1,128} except "." and "..": agent ids and tenant ids. Input need not be
 * NUL-terminated. */
bool ids_valid_name(const char *s, size_t len);
/* [A-Za-z0-9._:-]{1,128}: consumer ids (may carry host:pid). */
bool ids_valid_consumer(const char *s, size_t len);
/* "evt_" followed by 26 Crockford base32 characters. */
bool ids_valid_event_id(const char *s, size_t len);
/* "lt_" followed by 26 Crockford base32 characters. */
bool ids_valid_lease_token(const char *s, size_t len);

#endif
