/* SPDX-License-Identifier: MIT */
/* Unit tests of src/common/hash.c: FNV-1a 64 against published vectors, and the (tenant, agent)
 * hash with its NUL separator. */
#include <stdint.h>

#include "common/hash.h"
#include "harness/check.h"

#include "common/banned.h"

static void test_hash_fnv1a_matches_published_vectors(void)
{
    /* From the FNV reference (isthe.com/chongo/tech/comp/fnv), FNV-1a 64. */
    CHECK(hash_fnv1a(HASH_FNV1A_INIT, "", 0) == 0xcbf29ce484222325ULL);
    CHECK(hash_fnv1a(HASH_FNV1A_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL);
    CHECK(hash_fnv1a(HASH_FNV1A_INIT, "foobar", 6) == 0x85944171f73967e8ULL);
    CHECK(hash_fnv1a_str(HASH_FNV1A_INIT, "foobar") == 0x85944171f73967e8ULL);
    /* Continuing a hash is hashing the concatenation. */
    CHECK(hash_fnv1a(hash_fnv1a(HASH_FNV1A_INIT, "foo", 3), "bar", 3) == 0x85944171f73967e8ULL);
}

static void test_hash_tenant_agent_separates_the_ids(void)
{
    CHECK(hash_tenant_agent("t", "a") == hash_fnv1a(HASH_FNV1A_INIT, "t\0a", 3));
    CHECK(hash_tenant_agent("ab", "c") != hash_tenant_agent("a", "bc"));
    CHECK(hash_tenant_agent("ab", "") != hash_tenant_agent("a", "b"));
    CHECK(hash_tenant_agent("t", "a") != hash_tenant_agent("a", "t"));
}

int main(void)
{
    RUN(test_hash_fnv1a_matches_published_vectors);
    RUN(test_hash_tenant_agent_separates_the_ids);
    return check_summary();
}
