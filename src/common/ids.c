/* SPDX-License-Identifier: MIT */
/* ULIDs and random tokens. The ULID is 48 bits of milliseconds + 80 random bits, encoded in
 * Crockford base32; within one millisecond the random part is incremented so ids stay ordered. */
#include "common/ids.h"

#include <openssl/rand.h>
#include <pthread.h>
#include <string.h>

#include "common/banned.h"

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

static pthread_mutex_t ulid_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t ulid_last_ms = -1;
static unsigned char ulid_last_rand[10];

int ids_random(void *buf, size_t len)
{
    return RAND_bytes(buf, (int)len) == 1 ? 0 : -1;
}

/* Encodes 16 bytes (128 bits) as 26 base32 characters, most significant first (2 pad bits). */
static void encode_128(const unsigned char in[16], char out[26])
{
    /* Treat the 128 bits as a big number; 26 × 5 = 130 bits, the top 2 are zero. */
    for (int i = 0; i < 26; i++) {
        int bit = 130 - 5 * (i + 1); /* position of the lowest bit of this char */
        unsigned v = 0;
        for (int b = 4; b >= 0; b--) {
            int pos = bit + b; /* 0 = least significant bit of the 128 */
            unsigned bitval = 0;
            if (pos < 128) {
                int byte = 15 - pos / 8;
                bitval = (in[byte] >> (pos % 8)) & 1u;
            }
            v = (v << 1) | bitval;
        }
        out[i] = crockford[v];
    }
}

int ids_event_id(int64_t now_ms, char *out)
{
    unsigned char raw[16];
    pthread_mutex_lock(&ulid_mu);
    if (now_ms <= ulid_last_ms) {
        /* Same (or earlier) millisecond: keep the last time, increment the random part. */
        now_ms = ulid_last_ms;
        for (int i = 9; i >= 0; i--) {
            if (++ulid_last_rand[i] != 0) {
                break;
            }
        }
    } else if (ids_random(ulid_last_rand, sizeof ulid_last_rand) != 0) {
        pthread_mutex_unlock(&ulid_mu);
        return -1;
    }
    ulid_last_ms = now_ms;
    for (int i = 0; i < 6; i++) {
        raw[i] = (unsigned char)((uint64_t)now_ms >> (8 * (5 - i)));
    }
    memcpy(raw + 6, ulid_last_rand, 10);
    pthread_mutex_unlock(&ulid_mu);
    memcpy(out, "evt_", 4);
    encode_128(raw, out + 4);
    out[IDS_EVENT_ID_LEN] = '\0';
    return 0;
}

int ids_lease_token(char *out)
{
    unsigned char raw[16];
    if (ids_random(raw, sizeof raw) != 0) {
        return -1;
    }
    raw[0] &= 0x3f; /* 26 chars carry 130 bits; keep the encoding canonical */
    memcpy(out, "lt_", 3);
    encode_128(raw, out + 3);
    out[IDS_LEASE_TOKEN_LEN] = '\0';
    return 0;
}

static bool name_char(char c, bool colon)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || (colon && c == ':');
}

static bool valid_chars(const char *s, size_t len, bool colon)
{
    if (s == NULL || len == 0 || len > IDS_NAME_MAX) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (!name_char(s[i], colon)) {
            return false;
        }
    }
    return true;
}

bool ids_valid_name(const char *s, size_t len)
{
    /* "." and ".." would be path components where a name becomes a directory (archives). */
    if (s && ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))) {
        return false;
    }
    return valid_chars(s, len, false);
}

bool ids_valid_consumer(const char *s, size_t len)
{
    return valid_chars(s, len, true);
}

static bool valid_base32(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\0' || strchr(crockford, s[i]) == NULL) {
            return false;
        }
    }
    return true;
}

bool ids_valid_event_id(const char *s, size_t len)
{
    return s != NULL && len == IDS_EVENT_ID_LEN && memcmp(s, "evt_", 4) == 0 &&
           valid_base32(s + 4, 26) && s[4] <= '7';
}

bool ids_valid_lease_token(const char *s, size_t len)
{
    return s != NULL && len == IDS_LEASE_TOKEN_LEN && memcmp(s, "lt_", 3) == 0 &&
           valid_base32(s + 3, 26);
}
