/* SPDX-License-Identifier: MIT */
/* FNV-1a (see hash.h). */
#include "common/hash.h"

#include "common/banned.h"

#define FNV1A_PRIME 1099511628211ULL

uint64_t hash_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ b[i]) * FNV1A_PRIME;
    }
    return h;
}

uint64_t hash_fnv1a_str(uint64_t h, const char *s)
{
    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * FNV1A_PRIME;
    }
    return h;
}

uint64_t hash_tenant_agent(const char *tenant_id, const char *agent_id)
{
    uint64_t h = hash_fnv1a_str(HASH_FNV1A_INIT, tenant_id);
    h = (h ^ 0u) * FNV1A_PRIME;
    return hash_fnv1a_str(h, agent_id);
}
