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

/* Small draws (request ids, lease tokens, the ULID's random part) come from a per-thread pool
 * filled by one RAND_bytes call: each call costs thousands of instructions in OpenSSL 3 (a
 * lock, a DRBG fetch), a per-request cost on the I/O loop thread. The bytes are the same
 * CSPRNG output, each handed out once; a forked child drops its copy of the pool (fork_gen). */
#define POOL_BYTES 512
#define POOL_MAX_DRAW 32

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static volatile unsigned fork_gen;

static void on_fork_child(void)
{
    fork_gen++;
}

static void register_fork(void)
{
    pthread_atfork(NULL, NULL, on_fork_child);
}

struct rand_pool {
    unsigned char bytes[POOL_BYTES];
    size_t left; /* unused bytes at the end of `bytes` */
    unsigned gen;
};
static _Thread_local struct rand_pool pool;

int ids_random(void *buf, size_t len)
{
    if (len > POOL_MAX_DRAW) {
        return RAND_bytes(buf, (int)len) == 1 ? 0 : -1;
    }
    pthread_once(&fork_once, register_fork);
    if (pool.gen != fork_gen) {
        pool.left = 0;
        pool.gen = fork_gen;
    }
    if (pool.left < len) {
        if (RAND_bytes(pool.bytes, sizeof pool.bytes) != 1) {
            pool.left = 0;
            return -1;
        }
        pool.left = sizeof pool.bytes;
    }
    unsigned char *src = pool.bytes + sizeof pool.bytes - pool.left;
    memcpy(buf, src, len);
    memset(src, 0, len); /* handed out once; nothing stays behind to be read again */
    pool.left -= len;
    return 0;
}

/* Encodes 16 bytes (128 bits) as 26 base32 characters, most significant first (2 pad bits). */
static void encode_128(const unsigned char in[16], char out[26])
{
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 8; i++) {
        hi = hi << 8 | in[i];
        lo = lo << 8 | in[8 + i];
    }
    /* 26 × 5 = 130 bits: character i holds bits [pos, pos + 5) with the top 2 always zero. */
    for (int i = 0; i < 26; i++) {
        int pos = 130 - 5 * (i + 1);
        uint64_t v;
        if (pos >= 64) {
            v = hi >> (pos - 64);
        } else if (pos + 5 <= 64) {
            v = lo >> pos;
        } else {
            v = lo >> pos | hi << (64 - pos);
        }
        out[i] = crockford[v & 31];
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
