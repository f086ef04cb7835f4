/* SPDX-License-Identifier: MIT */
/* Unit tests of src/server/ratelimit.c: the bucket refills at its rate up to its burst, a request
 * passes while the bucket is not in debt, Retry-After counts the debt, tenants are apart, and
 * many tenants (the table grows, full buckets are dropped) keep their state. */
#include <stdio.h>

#include "harness/check.h"
#include "server/ratelimit.h"

#include "common/banned.h"

static void test_ratelimit_bucket_and_debt(void)
{
    struct ratelimit *rl = ratelimit_new();
    CHECK(rl != NULL);
    /* rate 5/s, burst 10: ten pass at once, then one more (empty, not in debt), then refused. */
    CHECK_EQ(ratelimit_take(rl, "t", 5, 10, 10, 1000), 0);
    CHECK_EQ(ratelimit_take(rl, "t", 5, 10, 1, 1000), 0);
    CHECK_EQ(ratelimit_take(rl, "t", 5, 10, 1, 1000), 1); /* a debt of 1 at 5/s: under a second */
    CHECK_EQ(ratelimit_take(rl, "t", 5, 10, 1, 1100), 1);
    CHECK_EQ(ratelimit_take(rl, "t", 5, 10, 1, 1200), 0); /* the debt is paid */
    /* One large request puts the bucket 40 in debt: 8 s at 5/s. */
    CHECK_EQ(ratelimit_take(rl, "big", 5, 10, 50, 0), 0);
    CHECK_EQ(ratelimit_take(rl, "big", 5, 10, 1, 0), 8);
    CHECK_EQ(ratelimit_take(rl, "big", 5, 10, 1, 8000), 0);
    /* Another tenant is not affected; rate 0 is no limit. */
    CHECK_EQ(ratelimit_take(rl, "other", 5, 10, 1, 0), 0);
    CHECK_EQ(ratelimit_take(rl, "big", 0, 0, 1000000, 8000), 0);
    ratelimit_free(rl);
    ratelimit_free(NULL);
}

static void test_ratelimit_many_tenants(void)
{
    struct ratelimit *rl = ratelimit_new();
    char name[32];
    /* 1000 tenants in debt survive the table's growth... */
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        CHECK_EQ(ratelimit_take(rl, name, 1, 1, 2, 0), 0);
    }
    int refused = 0;
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        refused += ratelimit_take(rl, name, 1, 1, 1, 0) > 0;
    }
    CHECK_EQ(refused, 1000);
    /* ...and much later they are full again, so they pass. */
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "u%d", i);
        CHECK_EQ(ratelimit_take(rl, name, 1, 1, 1, 100000), 0);
    }
    snprintf(name, sizeof name, "t%d", 7);
    CHECK_EQ(ratelimit_take(rl, name, 1, 1, 1, 100000), 0);
    ratelimit_free(rl);
}

int main(void)
{
    RUN(test_ratelimit_bucket_and_debt);
    RUN(test_ratelimit_many_tenants);
    return check_summary();
}
