/* SPDX-License-Identifier: MIT */
/* Unit tests of src/common/dynbuf.c: growth and NUL termination, the maximum as an exact bound, the
 * sticky error, reset and cleanup, formatted appends. */
#include <stdint.h>
#include <string.h>

#include "common/dynbuf.h"
#include "harness/check.h"

#include "common/banned.h"

static void test_dynbuf_grows_and_stays_nul_terminated(void)
{
    struct dynbuf b;
    dynbuf_init(&b, 1 << 20);
    CHECK(b.s == NULL && b.len == 0);
    dynbuf_add(&b, "", 0);
    CHECK(b.s != NULL && b.len == 0 && b.s[0] == '\0');
    for (int i = 0; i < 1000; i++) {
        dynbuf_adds(&b, "abc");
    }
    dynbuf_addc(&b, '!');
    CHECK(b.err == DYNBUF_OK && b.len == 3001 && strlen(b.s) == 3001);
    CHECK(memcmp(b.s + 2997, "abc!", 5) == 0);
    /* Bytes with a NUL inside are kept as they are. */
    dynbuf_add(&b, "x\0y", 3);
    CHECK(b.len == 3004 && b.s[3002] == '\0' && b.s[3003] == 'y' && b.s[3004] == '\0');
    dynbuf_cleanup(&b);
    CHECK(b.s == NULL && b.len == 0 && b.max == 1 << 20);
}

static void test_dynbuf_max_is_exact_and_errors_stick(void)
{
    struct dynbuf b = {.max = 5};
    dynbuf_adds(&b, "12345");
    CHECK(b.err == DYNBUF_OK && b.len == 5);
    CHECK_STREQ(b.s, "12345");
    dynbuf_addc(&b, '6');
    CHECK(b.err == DYNBUF_ELIMIT && b.len == 5);
    /* Sticky: even an append that would fit does nothing now. */
    dynbuf_add(&b, "", 0);
    CHECK(b.err == DYNBUF_ELIMIT);
    dynbuf_reset(&b);
    CHECK(b.err == DYNBUF_OK && b.len == 0 && b.s[0] == '\0');
    dynbuf_adds(&b, "ok");
    CHECK_STREQ(b.s, "ok");
    /* A single append larger than the maximum, and one whose length would wrap. */
    dynbuf_add(&b, "too long", 8);
    CHECK(b.err == DYNBUF_ELIMIT);
    dynbuf_reset(&b);
    dynbuf_add(&b, "x", SIZE_MAX);
    CHECK(b.err == DYNBUF_ELIMIT && b.len == 0);
    dynbuf_cleanup(&b);
}

static void test_dynbuf_huge_max_does_not_wrap(void)
{
    struct dynbuf b = {.max = SIZE_MAX};
    dynbuf_adds(&b, "fits");
    CHECK(b.err == DYNBUF_OK);
    CHECK_STREQ(b.s, "fits");
    dynbuf_add(&b, "x", SIZE_MAX - 2);
    CHECK(b.err == DYNBUF_ELIMIT && b.len == 4);
    dynbuf_cleanup(&b);
}

static void test_dynbuf_addf_formats_short_and_long_text(void)
{
    struct dynbuf b;
    dynbuf_init(&b, 1000);
    dynbuf_addf(&b, "%s=%d;", "n", 42);
    CHECK(b.err == DYNBUF_OK);
    CHECK_STREQ(b.s, "n=42;");
    /* Longer than the stack buffer: formatted in place. */
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    dynbuf_addf(&b, "<%s>", big);
    CHECK(b.err == DYNBUF_OK && b.len == 5 + 601 && strlen(b.s) == b.len);
    CHECK(b.s[5] == '<' && b.s[6] == 'x' && b.s[b.len - 1] == '>');
    /* Past the maximum: nothing appended, the error sticks. */
    dynbuf_addf(&b, "%s", big);
    CHECK(b.err == DYNBUF_ELIMIT && b.len == 606);
    dynbuf_cleanup(&b);
}

int main(void)
{
    RUN(test_dynbuf_grows_and_stays_nul_terminated);
    RUN(test_dynbuf_max_is_exact_and_errors_stick);
    RUN(test_dynbuf_huge_max_does_not_wrap);
    RUN(test_dynbuf_addf_formats_short_and_long_text);
    return check_summary();
}
