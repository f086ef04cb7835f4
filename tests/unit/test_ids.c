/* SPDX-License-Identifier: MIT */
/* Unit tests of src/common/ids.c: event ids (ULID order), lease tokens and name validation. */
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "common/timeutil.h"
#include "harness/check.h"

#include "common/banned.h"

#define N_IDS 20000

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_ids_event_ids_strictly_increase_in_tight_loop(void)
{
    char prev[IDS_EVENT_ID_LEN + 1] = "";
    char cur[IDS_EVENT_ID_LEN + 1];
    int bad_len = 0, invalid = 0, not_increasing = 0;
    for (int i = 0; i < N_IDS; i++) {
        if (ids_event_id(time_now_ms(), cur) != 0) {
            invalid++;
            continue;
        }
        bad_len += strlen(cur) != IDS_EVENT_ID_LEN;
        invalid += !ids_valid_event_id(cur, strlen(cur));
        not_increasing += i > 0 && strcmp(prev, cur) >= 0;
        memcpy(prev, cur, sizeof cur);
    }
    CHECK_EQ(bad_len, 0);
    CHECK_EQ(invalid, 0);
    CHECK_EQ(not_increasing, 0);
    CHECK(strncmp(prev, "evt_", 4) == 0);
}

static void test_ids_event_ids_same_ms_and_clock_going_back(void)
{
    char a[IDS_EVENT_ID_LEN + 1], b[IDS_EVENT_ID_LEN + 1], c[IDS_EVENT_ID_LEN + 1];
    int64_t t = time_now_ms() + 100000; /* ahead of the previous test's ids */
    CHECK(ids_event_id(t, a) == 0);
    CHECK(ids_event_id(t, b) == 0);
    CHECK(strcmp(a, b) < 0);
    CHECK(memcmp(a, b, 4 + 10) == 0);      /* same time prefix */
    CHECK(ids_event_id(t - 5000, c) == 0); /* clock stepped back: order is kept */
    CHECK(strcmp(b, c) < 0);
    CHECK(ids_event_id(t + 1, c) == 0);
    CHECK(strcmp(b, c) < 0 && memcmp(b, c, 14) != 0);

    /* The time prefix encodes the milliseconds: later ms sort later regardless of randomness. */
    char d[IDS_EVENT_ID_LEN + 1];
    CHECK(ids_event_id(t + 1000, d) == 0);
    CHECK(memcmp(c, d, 14) < 0);
}

static void test_ids_lease_tokens_unique_and_valid(void)
{
    enum { N = 5000 };
    char **tokens = calloc(N, sizeof *tokens);
    int invalid = 0;
    for (int i = 0; i < N; i++) {
        tokens[i] = malloc(IDS_LEASE_TOKEN_LEN + 1);
        CHECK(ids_lease_token(tokens[i]) == 0);
        invalid += strlen(tokens[i]) != IDS_LEASE_TOKEN_LEN ||
                   !ids_valid_lease_token(tokens[i], strlen(tokens[i])) ||
                   strncmp(tokens[i], "lt_", 3) != 0;
    }
    CHECK_EQ(invalid, 0);
    qsort(tokens, N, sizeof *tokens, cmp_str);
    int dups = 0;
    for (int i = 1; i < N; i++) {
        dups += strcmp(tokens[i - 1], tokens[i]) == 0;
    }
    CHECK_EQ(dups, 0);
    for (int i = 0; i < N; i++) {
        free(tokens[i]);
    }
    free(tokens);

    unsigned char r1[32], r2[32];
    CHECK(ids_random(r1, sizeof r1) == 0 && ids_random(r2, sizeof r2) == 0);
    CHECK(memcmp(r1, r2, sizeof r1) != 0);
}

static void test_ids_name_validation(void)
{
    char s[200];
    memset(s, 'a', sizeof s);
    CHECK(ids_valid_name(s, 1));
    CHECK(ids_valid_name(s, 128));
    CHECK(!ids_valid_name(s, 129));
    CHECK(!ids_valid_name(s, 0));
    CHECK(!ids_valid_name(NULL, 0));
    CHECK(!ids_valid_name(NULL, 5));
    CHECK(ids_valid_name("Agent-1_x.Y", 11));
    CHECK(ids_valid_name("...", 3));
    CHECK(ids_valid_name("-", 1));
    static const char *const bad[] = {"a:b",  "a b", "a/b", "a*",  "caf\xc3\xa9",
                                      "a\tb", "a@b", "a+b", "a%2f"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!ids_valid_name(bad[i], strlen(bad[i])));
    }
    CHECK(!ids_valid_name("ab\0c", 4)); /* embedded NUL inside the bounded length */
    CHECK(ids_valid_name("abXXX", 2));  /* only len bytes are looked at */

    CHECK(ids_valid_consumer("host-1:1234", 11));
    CHECK(!ids_valid_name("host-1:1234", 11));
    CHECK(ids_valid_consumer(s, 128));
    CHECK(!ids_valid_consumer(s, 129));
    CHECK(!ids_valid_consumer("a b", 3));
    CHECK(!ids_valid_consumer("", 0));
}

static void test_ids_event_id_and_token_validation(void)
{
    CHECK(ids_valid_event_id("evt_01ARZ3NDEKTSV4RRFFQ69G5FAV", 30));
    CHECK(ids_valid_event_id("evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ", 30));
    CHECK(!ids_valid_event_id("evt_8ZZZZZZZZZZZZZZZZZZZZZZZZZ", 30)); /* > 128 bits */
    CHECK(!ids_valid_event_id("evt_01ARZ3NDEKTSV4RRFFQ69G5FA", 29));
    CHECK(!ids_valid_event_id("evt_01ARZ3NDEKTSV4RRFFQ69G5FAVV", 31));
    CHECK(!ids_valid_event_id("EVT_01ARZ3NDEKTSV4RRFFQ69G5FAV", 30));
    CHECK(!ids_valid_event_id("evx_01ARZ3NDEKTSV4RRFFQ69G5FAV", 30));
    CHECK(!ids_valid_event_id("evt_01arz3ndektsv4rrffq69g5fav", 30)); /* lower case */
    CHECK(!ids_valid_event_id("evt_01ARZ3NDEKTSV4RRFFQ69G5FAI", 30)); /* I excluded */
    CHECK(!ids_valid_event_id("evt_01ARZ3NDEKTSV4RRFFQ69G5FAL", 30)); /* L excluded */
    CHECK(!ids_valid_event_id("evt_01ARZ3NDEKTSV4RRFFQ69G5FAO", 30)); /* O excluded */
    CHECK(!ids_valid_event_id("evt_01ARZ3NDEKTSV4RRFFQ69G5FAU", 30)); /* U excluded */
    CHECK(!ids_valid_event_id("evt_01ARZ3NDEKTSV4RRFFQ69G5F\0V", 30));
    CHECK(!ids_valid_event_id(NULL, 30));

    CHECK(ids_valid_lease_token("lt_01ARZ3NDEKTSV4RRFFQ69G5FAV", 29));
    CHECK(!ids_valid_lease_token("lt_01ARZ3NDEKTSV4RRFFQ69G5FA", 28));
    CHECK(!ids_valid_lease_token("lt-01ARZ3NDEKTSV4RRFFQ69G5FAV", 29));
    CHECK(!ids_valid_lease_token("evt_01ARZ3NDEKTSV4RRFFQ69G5FAV", 30));
    CHECK(!ids_valid_lease_token("lt_01ARZ3NDEKTSV4RRFFQ69G5FA!", 29));
    CHECK(!ids_valid_lease_token(NULL, 29));
}

int main(void)
{
    RUN(test_ids_event_ids_strictly_increase_in_tight_loop);
    RUN(test_ids_event_ids_same_ms_and_clock_going_back);
    RUN(test_ids_lease_tokens_unique_and_valid);
    RUN(test_ids_name_validation);
    RUN(test_ids_event_id_and_token_validation);
    return check_summary();
}
