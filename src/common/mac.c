/* SPDX-License-Identifier: MIT */
/* Message authentication codes of the webhook schemes (mac.h). */
#include "common/mac.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <string.h>

#include "common/base64.h"

#include "common/banned.h"

int mac_hmac(const char *digest, const void *key, size_t key_len, const struct mac_part *parts,
             size_t n_parts, unsigned char out[MAC_MAX_BYTES], size_t *out_len)
{
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
        OSSL_PARAM_construct_end()};
    int ok = ctx != NULL && EVP_MAC_init(ctx, key, key_len, params) == 1;
    for (size_t i = 0; ok && i < n_parts; i++) {
        ok = EVP_MAC_update(ctx, parts[i].p, parts[i].n) == 1;
    }
    ok = ok && EVP_MAC_final(ctx, out, out_len, MAC_MAX_BYTES) == 1;
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    return ok ? 0 : -1;
}

void mac_hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

bool mac_same(const char *expect, const char *got, size_t got_len)
{
    size_t n = strlen(expect);
    return n == got_len && n > 0 && CRYPTO_memcmp(expect, got, n) == 0;
}

int mac_stdwh_key(const char *secret, unsigned char **key, size_t *key_len)
{
    size_t plen = sizeof MAC_STDWH_PREFIX - 1;
    const char *b64 = strncmp(secret, MAC_STDWH_PREFIX, plen) == 0 ? secret + plen : secret;
    return b64_decode(B64_STD, false, b64, strlen(b64), key, key_len);
}

int mac_stdwh_sign(const unsigned char *key, size_t key_len, const char *msg_id, const char *ts,
                   const void *body, size_t body_len, char **b64)
{
    const struct mac_part parts[] = {
        {msg_id, strlen(msg_id)}, {".", 1}, {ts, strlen(ts)}, {".", 1}, {body, body_len}};
    unsigned char mac[MAC_MAX_BYTES];
    size_t mac_len = 0;
    *b64 = NULL;
    if (mac_hmac("SHA256", key, key_len, parts, sizeof parts / sizeof parts[0], mac, &mac_len) !=
        0) {
        return -1;
    }
    return b64_encode(B64_STD, mac, mac_len, b64, NULL) == 0 ? 0 : -1;
}
