/* SPDX-License-Identifier: MIT */
/* The one non-cryptographic hash: FNV-1a (64-bit) for hash tables keyed by ids. Ids are short
 * and caller-validated, and an adversary controls at most the ids of their own tenant, so no keyed
 * hash is needed. */
#ifndef ROOST_HASH_H
#define ROOST_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV1A_INIT 14695981039346656037ULL

/* Continues the hash `h` (HASH_FNV1A_INIT to start) over n bytes at p. */
uint64_t hash_fnv1a(uint64_t h, const void *p, size_t n);

/* Continues the hash `h` over the NUL-terminated string s (its NUL excluded). */
uint64_t hash_fnv1a_str(uint64_t h, const char *s);

/* The hash of one (tenant, agent) pair: FNV-1a over "tenant\0agent". The NUL separates the two
 * ids, which never contain one, so ("ab", "c") and ("a", "bc") differ. */
uint64_t hash_tenant_agent(const char *tenant_id, const char *agent_id);

#endif
