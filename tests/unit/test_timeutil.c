/* SPDX-License-Identifier: MIT */
/* Unit tests of src/common/timeutil.c: RFC 3339 formatting and parsing, clocks. */
#include <string.h>

#include "common/timeutil.h"
#include "harness/check.h"

#include "common/banned.h"

static int parse(const char *s, int64_t *ms)
{
    return time_parse_rfc3339(s, strlen(s), ms);
}

static void test_timeutil_format_known_values(void)
{
    char out[TIME_RFC3339_LEN + 1];
    time_format_rfc3339(0, out);
    CHECK_STREQ(out, "1970-01-01T00:00:00.000Z");
    time_format_rfc3339(INT64_C(1700000000123), out);
    CHECK_STREQ(out, "2023-11-14T22:13:20.123Z");
    time_format_rfc3339(INT64_C(951782400000), out); /* leap day 2000 */
    CHECK_STREQ(out, "2000-02-29T00:00:00.000Z");
    time_format_rfc3339(INT64_C(253402300799999), out);
    CHECK_STREQ(out, "9999-12-31T23:59:59.999Z");
    CHECK_EQ(strlen(out), TIME_RFC3339_LEN);

    char day[11];
    time_format_day(INT64_C(1700000000123), day);
    CHECK_STREQ(day, "2023-11-14");
    time_format_day(0, day);
    CHECK_STREQ(day, "1970-01-01");
}

static void test_timeutil_round_trip(void)
{
    static const int64_t values[] = {
        0,
        1,
        999,
        86399999,
        86400000,
        INT64_C(951782399999),
        INT64_C(951782400000),
        INT64_C(1700000000123),
        INT64_C(4102444800000), /* 2100-01-01 */
        INT64_C(253402300799999),
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char out[TIME_RFC3339_LEN + 1];
        int64_t back = -1;
        time_format_rfc3339(values[i], out);
        CHECK(parse(out, &back) == 0);
        CHECK_EQ(back, values[i]);
    }
    /* Every day of a leap year and a common year survives the round trip. */
    int bad = 0;
    for (int64_t day = 0; day < 366 * 2; day++) {
        int64_t ms = INT64_C(1704067200000) + day * 86400000 + 12345; /* from 2024-01-01 */
        char out[TIME_RFC3339_LEN + 1];
        int64_t back = -1;
        time_format_rfc3339(ms, out);
        bad += parse(out, &back) != 0 || back != ms;
    }
    CHECK_EQ(bad, 0);
}

/* The per-second text kept between calls: the same second with other milliseconds, the next
 * second, the one before, and back, each read back to the value formatted. */
static void test_timeutil_format_same_and_other_seconds(void)
{
    static const int64_t values[] = {
        INT64_C(1700000000123), INT64_C(1700000000999), INT64_C(1700000000000),
        INT64_C(1700000001000), INT64_C(1699999999999), INT64_C(1700000000500),
        INT64_C(1700000000500), INT64_C(86399999),      INT64_C(86400000),
        INT64_C(1700000000001),
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char out[TIME_RFC3339_LEN + 1];
        int64_t back = 0;
        time_format_rfc3339(values[i], out);
        bad += strlen(out) != TIME_RFC3339_LEN || parse(out, &back) != 0 || back != values[i];
    }
    CHECK_EQ(bad, 0);
    char out[TIME_RFC3339_LEN + 1];
    time_format_rfc3339(INT64_C(1700000000123), out);
    time_format_rfc3339(INT64_C(1700000000456), out);
    CHECK_STREQ(out, "2023-11-14T22:13:20.456Z");
    time_format_rfc3339(-1, out);
    CHECK_STREQ(out, "1969-12-31T23:59:59.999Z");
}

static void test_timeutil_offsets_and_fractions(void)
{
    int64_t ms = -1;
    CHECK(parse("2023-11-14T23:13:20.123+01:00", &ms) == 0);
    CHECK_EQ(ms, INT64_C(1700000000123));
    CHECK(parse("2023-11-14T16:43:20.123-05:30", &ms) == 0);
    CHECK_EQ(ms, INT64_C(1700000000123));
    CHECK(parse("2023-11-14T22:13:20.123-00:00", &ms) == 0);
    CHECK_EQ(ms, INT64_C(1700000000123));
    CHECK(parse("2023-11-14t22:13:20.123z", &ms) == 0);
    CHECK_EQ(ms, INT64_C(1700000000123));
    CHECK(parse("2023-11-14T22:13:20Z", &ms) == 0);
    CHECK_EQ(ms, INT64_C(1700000000000));
    CHECK(parse("2023-11-14T22:13:20.1Z", &ms) == 0);
    CHECK_EQ(ms, INT64_C(1700000000100));
    CHECK(parse("2023-11-14T22:13:20.12Z", &ms) == 0);
    CHECK_EQ(ms, INT64_C(1700000000120));
    CHECK(parse("2023-11-14T22:13:20.123456789Z", &ms) == 0);
    CHECK_EQ(ms, INT64_C(1700000000123)); /* truncated to ms */
    CHECK(parse("2023-11-14T22:13:20.999999Z", &ms) == 0);
    CHECK_EQ(ms, INT64_C(1700000000999));
    CHECK(parse("2023-11-14T22:13:20.1234567890Z", &ms) == -1); /* 10 digits */
    CHECK(parse("2023-11-14T22:13:20.Z", &ms) == -1);
    CHECK(parse("2016-12-31T23:59:60Z", &ms) == 0); /* leap second clamps */
    CHECK_EQ(ms, INT64_C(1483228799000));
    /* An offset that moves the instant before the epoch is refused. */
    CHECK(parse("1970-01-01T00:00:00+01:00", &ms) == -1);
    CHECK(parse("1970-01-01T00:00:00-01:00", &ms) == 0);
    CHECK_EQ(ms, INT64_C(3600000));
}

static void test_timeutil_rejects_invalid(void)
{
    static const char *const bad[] = {
        "",
        "garbage",
        "2023-02-29T00:00:00Z", /* not a leap year */
        "2100-02-29T00:00:00Z", /* century, not leap */
        "2023-04-31T00:00:00Z",
        "2023-13-01T00:00:00Z",
        "2023-00-01T00:00:00Z",
        "2023-01-00T00:00:00Z",
        "2023-01-32T00:00:00Z",
        "2023-01-01T24:00:00Z",
        "2023-01-01T23:60:00Z",
        "2023-01-01T23:59:61Z",
        "1969-12-31T23:59:59Z",
        "2023-01-01T00:00:00",   /* no zone */
        "2023-01-01 00:00:00Z",  /* space separator */
        "2023-01-01T00:00:00ZZ", /* trailing garbage */
        "2023-01-01T00:00:00Z ",
        "2023-01-01T00:00:00+0100",  /* offset without colon */
        "2023-01-01T00:00:00+24:00", /* offset hour */
        "2023-01-01T00:00:00+01:60",
        "2023-01-01T00:00:00+01:00x",
        "2023-1-01T00:00:00Z",
        "+2023-01-01T00:00:00Z",
        "20230101T000000Z",
        "2023-01-01T00:00:0aZ",
        "2023-01-01T00:00:00.-1Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms = 42;
        int rc = parse(bad[i], &ms);
        if (rc != -1) {
            fprintf(stderr, "accepted '%s'\n", bad[i]);
        }
        CHECK(rc == -1);
    }
    int64_t ms;
    CHECK(parse("2024-02-29T00:00:00Z", &ms) == 0);
    CHECK(parse("2000-02-29T00:00:00Z", &ms) == 0);
    /* The length bounds the input: a prefix of a valid string is not read past. */
    CHECK(time_parse_rfc3339("2023-01-01T00:00:00Zjunk", 20, &ms) == 0);
    CHECK(time_parse_rfc3339("2023-01-01T00:00:00Z", 19, &ms) == -1);
    CHECK(time_parse_rfc3339("2023-01-01T00:00:00Z", 5, &ms) == -1);
}

static void test_timeutil_clocks(void)
{
    int64_t now = time_now_ms();
    CHECK(now > INT64_C(1600000000000) && now < INT64_C(4102444800000));
    int64_t m1 = time_mono_ms();
    int64_t m2 = time_mono_ms();
    CHECK(m2 >= m1);
}

int main(void)
{
    RUN(test_timeutil_format_known_values);
    RUN(test_timeutil_round_trip);
    RUN(test_timeutil_format_same_and_other_seconds);
    RUN(test_timeutil_offsets_and_fractions);
    RUN(test_timeutil_rejects_invalid);
    RUN(test_timeutil_clocks);
    return check_summary();
}
