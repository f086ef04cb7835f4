/* SPDX-License-Identifier: MIT */
/* Unit tests of the touch set (src/store/store.c): one entry per (tenant, agent) with the highest
 * head, in first-seen order, and linear cost for a large fan-out. */
#include <stdio.h>

#include "harness/check.h"
#include "store/store.h"

#include "common/banned.h"

#define N_AGENTS 20000

static void test_touches_dedup_keeps_highest_head_and_order(void)
{
    struct store_touches t = {0};
    CHECK_EQ(store_touches_add(&t, "t1", "a", 5), ROOST_OK);
    CHECK_EQ(store_touches_add(&t, "t1", "b", 1), ROOST_OK);
    CHECK_EQ(store_touches_add(&t, "t2", "a", 2), ROOST_OK); /* same agent, other tenant */
    CHECK_EQ(store_touches_add(&t, "t1", "a", 3), ROOST_OK); /* lower head: kept at 5 */
    CHECK_EQ(store_touches_add(&t, "t1", "b", 9), ROOST_OK); /* higher head: raised */
    CHECK_EQ(t.len, 3);
    CHECK_STREQ(t.items[0].agent_id, "a");
    CHECK_EQ(t.items[0].head, 5);
    CHECK_EQ(t.items[1].head, 9);
    CHECK_STREQ(t.items[2].tenant_id, "t2");
    /* "t1"+"a" and "t"+"1a" must not collide into one entry. */
    CHECK_EQ(store_touches_add(&t, "t", "1a", 1), ROOST_OK);
    CHECK_EQ(t.len, 4);
    store_touches_cleanup(&t);
    CHECK_EQ(t.len, 0);
}

static void test_touches_large_fanout_with_repeats(void)
{
    struct store_touches t = {0};
    char agent[32];
    int bad = 0;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N_AGENTS; i++) {
            snprintf(agent, sizeof agent, "agent-%05d", i);
            bad +=
                store_touches_add(&t, "tenant", agent, (int64_t)round * N_AGENTS + i) != ROOST_OK;
        }
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(t.len, N_AGENTS);
    int wrong_head = 0;
    for (size_t i = 0; i < t.len; i++) {
        wrong_head += t.items[i].head != 2 * N_AGENTS + (int64_t)i;
    }
    CHECK_EQ(wrong_head, 0);
    store_touches_cleanup(&t);
}

static void test_touches_refuses_overlong_ids(void)
{
    struct store_touches t = {0};
    char agent[STORE_ID_MAX + 2];
    memset(agent, 'x', sizeof agent - 1);
    agent[sizeof agent - 1] = '\0';
    CHECK_EQ(store_touches_add(&t, "t1", agent, 1), ROOST_EINVAL);
    CHECK_EQ(t.len, 0);
    store_touches_cleanup(&t);
}

int main(void)
{
    RUN(test_touches_dedup_keeps_highest_head_and_order);
    RUN(test_touches_large_fanout_with_repeats);
    RUN(test_touches_refuses_overlong_ids);
    return check_summary();
}
