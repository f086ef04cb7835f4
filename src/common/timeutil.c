/* SPDX-License-Identifier: MIT */
/* Clocks and RFC 3339 timestamps, without gmtime (banned): civil-from-days arithmetic instead. */
#include "common/timeutil.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/banned.h"

int64_t time_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void time_sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int64_t time_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Howard Hinnant's days_from_civil / civil_from_days. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = (unsigned)(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static void split(int64_t ms, int64_t *y, unsigned *mo, unsigned *d, int *h, int *mi, int *s,
                  int *msec)
{
    int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    *msec = (int)(ms - secs * 1000);
    int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
    int64_t rem = secs - days * 86400;
    civil_from_days(days, y, mo, d);
    *h = (int)(rem / 3600);
    *mi = (int)(rem % 3600 / 60);
    *s = (int)(rem % 60);
}

static void format_rfc3339(int64_t ms, char *out);

void time_format_rfc3339(int64_t ms, char *out)
{
    /* The text up to the seconds is kept for the last second formatted on this thread: most
     * calls (the log line of every request, the times of an answer) fall in the same second. */
    static _Thread_local int64_t last_s = -1;
    static _Thread_local char last[TIME_RFC3339_LEN + 1];
    if (ms < 0 || ms >= 253402300800000LL) { /* before 1970 or after 9999 */
        format_rfc3339(ms, out);
        return;
    }
    int64_t secs = ms / 1000;
    int msec = (int)(ms % 1000);
    if (secs != last_s) {
        format_rfc3339(ms, last);
        last_s = secs;
    }
    memcpy(out, last, 20); /* "YYYY-MM-DDTHH:MM:SS." */
    out[20] = (char)('0' + msec / 100);
    out[21] = (char)('0' + msec / 10 % 10);
    out[22] = (char)('0' + msec % 10);
    out[23] = 'Z';
    out[24] = '\0';
}

static void format_rfc3339(int64_t ms, char *out)
{
    int64_t y;
    unsigned mo, d;
    int h, mi, s, msec;
    split(ms, &y, &mo, &d, &h, &mi, &s, &msec);
    if (y >= 0 && y <= 9999) {
        /* Digit by digit: every event in an answer carries several times, and snprintf costs
         * ~2,000 instructions each on the I/O loop thread. */
        char *o = out;
        unsigned yy = (unsigned)y;
        *o++ = (char)('0' + yy / 1000);
        *o++ = (char)('0' + yy / 100 % 10);
        *o++ = (char)('0' + yy / 10 % 10);
        *o++ = (char)('0' + yy % 10);
        const unsigned two[5] = {mo, d, (unsigned)h, (unsigned)mi, (unsigned)s};
        static const char sep[5] = {'-', '-', 'T', ':', ':'};
        for (int i = 0; i < 5; i++) {
            *o++ = sep[i];
            *o++ = (char)('0' + two[i] / 10);
            *o++ = (char)('0' + two[i] % 10);
        }
        *o++ = '.';
        *o++ = (char)('0' + msec / 100);
        *o++ = (char)('0' + msec / 10 % 10);
        *o++ = (char)('0' + msec % 10);
        *o++ = 'Z';
        *o = '\0';
        return;
    }
    char buf[96]; /* wide enough for any int values: no truncation warnings, no surprises */
    snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", (int)y, mo, d, h, mi, s, msec);
    memcpy(out, buf, TIME_RFC3339_LEN);
    out[TIME_RFC3339_LEN] = '\0';
}

void time_format_day(int64_t ms, char *out)
{
    int64_t y;
    unsigned mo, d;
    int h, mi, s, msec;
    split(ms, &y, &mo, &d, &h, &mi, &s, &msec);
    char buf[64];
    snprintf(buf, sizeof buf, "%04d-%02u-%02u", (int)y, mo, d);
    memcpy(out, buf, 10);
    out[10] = '\0';
}

static int digits(const char *s, size_t n, int *v)
{
    int x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return 0;
}

int time_parse_rfc3339(const char *s, size_t len, int64_t *ms)
{
    int y, mo, d, h, mi, sec, frac_ms = 0;
    if (len < 20 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' ||
        digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') || digits(s + 11, 2, &h) ||
        s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' || digits(s + 17, 2, &sec)) {
        return -1;
    }
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 ||
        sec > 60) {
        return -1;
    }
    if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) {
        return -1;
    }
    size_t i = 19;
    if (i < len && s[i] == '.') {
        i++;
        size_t start = i;
        int scale = 100;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            if (i - start >= 9) {
                return -1;
            }
            frac_ms += (s[i] - '0') * scale;
            scale /= 10;
            i++;
        }
        if (i == start) {
            return -1;
        }
    }
    int offset_min = 0;
    if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i + 6 == len && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
        int oh, om;
        if (digits(s + i + 1, 2, &oh) || digits(s + i + 4, 2, &om) || oh > 23 || om > 59) {
            return -1;
        }
        offset_min = (oh * 60 + om) * (s[i] == '+' ? 1 : -1);
        i += 6;
    } else {
        return -1;
    }
    if (i != len) {
        return -1;
    }
    if (sec == 60) {
        sec = 59; /* leap second: clamp, Unix time has none */
    }
    int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - (int64_t)offset_min * 60;
    if (secs < 0) {
        return -1;
    }
    *ms = secs * 1000 + frac_ms;
    return 0;
}
