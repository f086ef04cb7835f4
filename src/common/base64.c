/* SPDX-License-Identifier: MIT */
/* Base64 and base64url (see base64.h). */
#include "common/base64.h"

#include <stdint.h>
#include <stdlib.h>

#include "common/banned.h"

static const char alphabets[2][65] = {
    [B64_STD] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    [B64_URL] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
};

/* Value of one character in the variant's alphabet, or -1. */
static int value_of(enum b64_variant v, unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == (v == B64_URL ? '-' : '+')) {
        return 62;
    }
    if (c == (v == B64_URL ? '_' : '/')) {
        return 63;
    }
    return -1;
}

int b64_encode(enum b64_variant v, const unsigned char *in, size_t len, char **out, size_t *outlen)
{
    const char *abc = alphabets[v];
    *out = NULL;
    if (len > (SIZE_MAX - 5) / 4 * 3) {
        return -1;
    }
    char *s = malloc((len + 2) / 3 * 4 + 1);
    if (s == NULL) {
        return -1;
    }
    size_t o = 0, i = 0;
    for (; i + 3 <= len; i += 3) {
        unsigned long w = (unsigned long)in[i] << 16 | (unsigned long)in[i + 1] << 8 | in[i + 2];
        s[o++] = abc[(w >> 18) & 63];
        s[o++] = abc[(w >> 12) & 63];
        s[o++] = abc[(w >> 6) & 63];
        s[o++] = abc[w & 63];
    }
    if (len - i > 0) {
        unsigned long w = (unsigned long)in[i] << 16;
        if (len - i == 2) {
            w |= (unsigned long)in[i + 1] << 8;
        }
        s[o++] = abc[(w >> 18) & 63];
        s[o++] = abc[(w >> 12) & 63];
        if (len - i == 2) {
            s[o++] = abc[(w >> 6) & 63];
        }
        if (v == B64_STD) {
            s[o++] = '=';
            if (len - i == 1) {
                s[o++] = '=';
            }
        }
    }
    s[o] = '\0';
    *out = s;
    if (outlen != NULL) {
        *outlen = o;
    }
    return 0;
}

int b64_decode(enum b64_variant v, bool canonical, const char *in, size_t len, unsigned char **out,
               size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    /* Padding (standard only) may only complete the last group of four: "Zg==" or "Zg". */
    size_t data = len;
    if (v == B64_STD) {
        while (data > 0 && in[data - 1] == '=' && len - data < 2) {
            data--;
        }
    }
    /* A length of 1 mod 4 cannot come from any byte string. */
    if (data % 4 == 1 || (data != len && len % 4 != 0)) {
        return -1;
    }
    unsigned char *buf = malloc(data / 4 * 3 + 3);
    if (buf == NULL) {
        return -1;
    }
    size_t o = 0;
    unsigned long acc = 0;
    int bits = 0;
    for (size_t i = 0; i < data; i++) {
        int x = value_of(v, (unsigned char)in[i]);
        if (x < 0) {
            free(buf);
            return -1;
        }
        acc = (acc << 6 | (unsigned long)x) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[o++] = (unsigned char)(acc >> bits);
        }
    }
    if (canonical && bits > 0 && (acc & ((1ul << bits) - 1)) != 0) {
        free(buf);
        return -1;
    }
    *out = buf;
    *outlen = o;
    return 0;
}
