/* SPDX-License-Identifier: MIT */
/* Bounded parsing of text (see strutil.h). */
#include "common/strutil.h"

#include <stdbool.h>

#include "common/banned.h"

int strutil_parse_i64(const char *s, size_t len, int64_t min, int64_t max, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (i < len && (s[i] == '+' || s[i] == '-')) {
        neg = s[i] == '-';
        i++;
    }
    if (i == len) {
        return -1;
    }
    /* Accumulated as a negative number: its range holds INT64_MIN, which the positive one does
     * not, and overflow is checked before each step. */
    int64_t v = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        int d = s[i] - '0';
        if (v < (INT64_MIN + d) / 10) {
            return -1;
        }
        v = v * 10 - d;
    }
    if (!neg) {
        if (v == INT64_MIN) {
            return -1;
        }
        v = -v;
    }
    if (v < min || v > max) {
        return -1;
    }
    *out = v;
    return 0;
}

int strutil_hexval(int c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

int strutil_hex_decode(const char *hex, size_t len, unsigned char *out, size_t cap, size_t *out_len)
{
    if (len % 2 != 0 || len / 2 > cap) {
        return -1;
    }
    for (size_t i = 0; i < len; i += 2) {
        int hi = strutil_hexval((unsigned char)hex[i]);
        int lo = strutil_hexval((unsigned char)hex[i + 1]);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        out[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    *out_len = len / 2;
    return 0;
}

int strutil_percent_decode(const char *src, size_t len, char *dst, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)src[i];
        if (c == '%') {
            int hi = len - i > 2 ? strutil_hexval((unsigned char)src[i + 1]) : -1;
            int lo = len - i > 2 ? strutil_hexval((unsigned char)src[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                return -1;
            }
            c = hi << 4 | lo;
            i += 2;
            if (c == 0) {
                return -1;
            }
        }
        if (o + 1 >= cap) {
            return -1;
        }
        dst[o++] = (char)c;
    }
    if (cap == 0) {
        return -1;
    }
    dst[o] = '\0';
    return 0;
}

size_t strutil_last_line(const char *s, size_t len, size_t *start)
{
    size_t end = len;
    *start = 0;
    while (end > 0) {
        size_t b = end;
        while (b > 0 && s[b - 1] != '\n') {
            b--;
        }
        size_t e = end;
        while (e > b && (s[e - 1] == '\r' || s[e - 1] == ' ' || s[e - 1] == '\t')) {
            e--;
        }
        size_t f = b;
        while (f < e && (s[f] == ' ' || s[f] == '\t')) {
            f++;
        }
        if (f < e) {
            *start = b;
            return e - b;
        }
        end = b > 0 ? b - 1 : 0;
    }
    return 0;
}
