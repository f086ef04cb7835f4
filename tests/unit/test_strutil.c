/* SPDX-License-Identifier: MIT */
/* Unit tests of src/common/strutil.c: bounded decimal parsing at the int64 edges, hex digits and
 * strings, strict percent-decoding. */
#include <stdint.h>
#include <string.h>

#include "common/strutil.h"
#include "harness/check.h"

#include "common/banned.h"

static int parse(const char *s, int64_t min, int64_t max, int64_t *out)
{
    return strutil_parse_i64(s, strlen(s), min, max, out);
}

static void test_strutil_parse_i64_accepts_whole_decimals_in_range(void)
{
    int64_t v = 0;
    CHECK(parse("0", 0, 10, &v) == 0 && v == 0);
    CHECK(parse("+7", 0, 10, &v) == 0 && v == 7);
    CHECK(parse("-7", -10, 10, &v) == 0 && v == -7);
    CHECK(parse("9223372036854775807", INT64_MIN, INT64_MAX, &v) == 0 && v == INT64_MAX);
    CHECK(parse("-9223372036854775808", INT64_MIN, INT64_MAX, &v) == 0 && v == INT64_MIN);
    /* Only the slice counts: the bytes after it are not read. */
    CHECK(strutil_parse_i64("12x", 2, 0, 100, &v) == 0 && v == 12);
}

static void test_strutil_parse_i64_rejects_garbage_overflow_and_range(void)
{
    static const char *const bad[] = {
        "",
        "+",
        "-",
        " 1",
        "1 ",
        "1x",
        "0x10",
        "1e3",
        "--1",
        "+-1",
        "9223372036854775808",
        "-9223372036854775809",
        "99999999999999999999",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 42;
        CHECK_CASE(bad[i], parse(bad[i], INT64_MIN, INT64_MAX, &v) == -1 && v == 42);
    }
    int64_t v = 42;
    CHECK(parse("11", 0, 10, &v) == -1 && v == 42);
    CHECK(parse("-1", 0, 10, &v) == -1 && v == 42);
}

static void test_strutil_hex_decodes_both_cases(void)
{
    CHECK(strutil_hexval('0') == 0 && strutil_hexval('9') == 9);
    CHECK(strutil_hexval('a') == 10 && strutil_hexval('F') == 15);
    CHECK(strutil_hexval('g') == -1 && strutil_hexval('/') == -1 && strutil_hexval(0) == -1);
    unsigned char out[4];
    size_t n = 0;
    CHECK(strutil_hex_decode("00fFa5", 6, out, sizeof out, &n) == 0 && n == 3);
    CHECK(out[0] == 0x00 && out[1] == 0xff && out[2] == 0xa5);
    CHECK(strutil_hex_decode("", 0, out, sizeof out, &n) == 0 && n == 0);
    CHECK(strutil_hex_decode("abc", 3, out, sizeof out, &n) == -1);
    CHECK(strutil_hex_decode("zz", 2, out, sizeof out, &n) == -1);
    CHECK(strutil_hex_decode("0011223344", 10, out, sizeof out, &n) == -1);
}

static void test_strutil_percent_decode_is_strict(void)
{
    char out[16];
    CHECK(strutil_percent_decode("us%3Aer", 7, out, sizeof out) == 0);
    CHECK_STREQ(out, "us:er");
    CHECK(strutil_percent_decode("p%40ss%2F%25", 12, out, sizeof out) == 0);
    CHECK_STREQ(out, "p@ss/%");
    CHECK(strutil_percent_decode("a+b%20c", 7, out, sizeof out) == 0);
    CHECK_STREQ(out, "a+b c");
    CHECK(strutil_percent_decode("", 0, out, sizeof out) == 0);
    CHECK_STREQ(out, "");
    /* Only the slice is read: "%41" cut after "%4" is malformed. */
    CHECK(strutil_percent_decode("%41", 2, out, sizeof out) == -1);
    CHECK(strutil_percent_decode("%", 1, out, sizeof out) == -1);
    CHECK(strutil_percent_decode("%g0", 3, out, sizeof out) == -1);
    CHECK(strutil_percent_decode("a%00b", 5, out, sizeof out) == -1);
    /* The NUL must fit: 3 bytes need a cap of 4. */
    CHECK(strutil_percent_decode("abc", 3, out, 3) == -1);
    CHECK(strutil_percent_decode("abc", 3, out, 4) == 0);
    CHECK_STREQ(out, "abc");
    CHECK(strutil_percent_decode("", 0, out, 0) == -1);
}

static void test_strutil_last_line_is_the_reason(void)
{
    size_t at = 99;
    const char *tb = "Traceback (most recent call last):\n  File \"h.py\", line 3, in <module>\n"
                     "    main()\nValueError: bad input\n\n";
    size_t n = strutil_last_line(tb, strlen(tb), &at);
    CHECK(n == strlen("ValueError: bad input") &&
          strncmp(tb + at, "ValueError: bad input", n) == 0);
    CHECK(strutil_last_line("one line", 8, &at) == 8 && at == 0);
    CHECK(strutil_last_line("a\r\n  \n\t\n", 8, &at) == 1 && at == 0);
    CHECK(strutil_last_line("", 0, &at) == 0);
    CHECK(strutil_last_line(" \n\n", 3, &at) == 0);
}

int main(void)
{
    RUN(test_strutil_parse_i64_accepts_whole_decimals_in_range);
    RUN(test_strutil_parse_i64_rejects_garbage_overflow_and_range);
    RUN(test_strutil_hex_decodes_both_cases);
    RUN(test_strutil_percent_decode_is_strict);
    RUN(test_strutil_last_line_is_the_reason);
    return check_summary();
}
