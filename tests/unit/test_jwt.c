/* SPDX-License-Identifier: MIT */
/* Unit tests of src/proto/jwt.c: base64url, compact JWS decoding limits, EdDSA sign/verify, the
 * algorithm allow-list, and the RFC 8037 A.4 / RFC 7515 vectors (tests/data/jwt/). */
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

#include "harness/check.h"
#include "proto/jwt.h"

#include "common/banned.h"

#define VECTORS "data/jwt/rfc-jws-vectors.json"
#define SAMPLES "data/jwt/generated-samples.json"
#define ED25519_PUB "data/jwt/test-key-ed25519.pub.pem"

static EVP_PKEY *new_ed25519(void)
{
    return EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
}

static char *b64(const char *s)
{
    char *out = NULL;
    if (jwt_b64url_encode((const unsigned char *)s, strlen(s), &out) != 0) {
        return NULL;
    }
    return out;
}

/* Signs ASCII(b64(header) "." b64(claims)) with `key` whatever the header says: the tool for
 * forging tokens whose header lies about the algorithm. Caller frees. */
static char *sign_raw(EVP_PKEY *key, const char *header, const char *claims)
{
    char *h = b64(header), *c = b64(claims), *s = NULL, *tok = NULL;
    unsigned char sig[64];
    size_t siglen = sizeof sig;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t n = strlen(h) + 1 + strlen(c);
    char *input = malloc(n + 1);
    snprintf(input, n + 1, "%s.%s", h, c);
    if (EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1 &&
        EVP_DigestSign(ctx, sig, &siglen, (unsigned char *)input, n) == 1 &&
        jwt_b64url_encode(sig, siglen, &s) == 0) {
        size_t tn = n + 1 + strlen(s) + 1;
        tok = malloc(tn);
        snprintf(tok, tn, "%s.%s", input, s);
    }
    EVP_MD_CTX_free(ctx);
    free(h);
    free(c);
    free(s);
    free(input);
    return tok;
}

static int decode_str(const char *tok, struct jwt_parts *p)
{
    return jwt_decode(tok, strlen(tok), p);
}

/* Decodes and verifies in one step: 0 only when both succeed. */
static int decode_verify(const char *tok, EVP_PKEY *key)
{
    struct jwt_parts p;
    if (decode_str(tok, &p) != 0) {
        return -1;
    }
    int rc = jwt_verify_eddsa(&p, key);
    jwt_parts_cleanup(&p);
    return rc;
}

static void test_jwt_b64url_round_trip(void)
{
    unsigned char buf[64];
    for (size_t i = 0; i < sizeof buf; i++) {
        buf[i] = (unsigned char)(i * 37 + 250);
    }
    for (size_t len = 0; len <= sizeof buf; len++) {
        char *enc = NULL;
        unsigned char *dec = NULL;
        size_t declen = 0;
        CHECK(jwt_b64url_encode(buf, len, &enc) == 0);
        CHECK(strlen(enc) == (len * 4 + 2) / 3);
        CHECK(strpbrk(enc, "+/=") == NULL);
        CHECK(jwt_b64url_decode(enc, strlen(enc), &dec, &declen) == 0);
        CHECK(declen == len && (len == 0 || memcmp(dec, buf, len) == 0));
        free(enc);
        free(dec);
    }
}

static void test_jwt_b64url_known_values(void)
{
    char *enc = NULL;
    CHECK(jwt_b64url_encode((const unsigned char *)"\xfb\xff", 2, &enc) == 0);
    CHECK_STREQ(enc, "-_8");
    free(enc);
    unsigned char *dec = NULL;
    size_t n = 0;
    CHECK(jwt_b64url_decode("-_8", 3, &dec, &n) == 0 && n == 2 && dec[0] == 0xfb && dec[1] == 0xff);
    free(dec);
}

static void test_jwt_b64url_rejects_bad_input(void)
{
    static const char *const bad[] = {
        "QQ==", /* padding */
        "QQ=",  /* padding */
        "Q",    /* 1 mod 4 */
        "+/8",  /* standard alphabet */
        "QR",   /* non-zero trailing bits (canonical form is QQ) */
        "QUJ",  /* non-zero trailing bits (canonical form is QUI) */
        "QU I", /* space */
        "QU\nI",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned char *dec = (unsigned char *)"x";
        size_t n = 99;
        CHECK(jwt_b64url_decode(bad[i], strlen(bad[i]), &dec, &n) == -1);
        CHECK(dec == NULL && n == 0);
    }
    unsigned char *dec = NULL;
    size_t n = 0;
    CHECK(jwt_b64url_decode("QUI\0", 4, &dec, &n) == -1); /* NUL inside the bounded input */
    CHECK(jwt_b64url_decode("QUI", 3, &dec, &n) == 0 && n == 2 && memcmp(dec, "AB", 2) == 0);
    free(dec);
}

static void test_jwt_sign_verify_round_trip(void)
{
    EVP_PKEY *key = new_ed25519();
    json_t *claims = json_pack("{s:s, s:I, s:s}", "tenant", "t1", "exp", (json_int_t)2000000000,
                               "scope", "agent:a:read");
    char *tok = NULL;
    CHECK(jwt_sign_eddsa(claims, key, "k1", &tok) == 0);
    struct jwt_parts p;
    CHECK(decode_str(tok, &p) == 0);
    CHECK_STREQ(json_string_value(json_object_get(p.header, "alg")), "EdDSA");
    CHECK_STREQ(json_string_value(json_object_get(p.header, "typ")), "JWT");
    CHECK_STREQ(json_string_value(json_object_get(p.header, "kid")), "k1");
    CHECK(json_equal(p.claims, claims));
    CHECK(p.signature_len == 64);
    CHECK(p.signing_input == tok && p.signing_input_len == (size_t)(strrchr(tok, '.') - tok));
    CHECK(jwt_verify_eddsa(&p, key) == 0);
    jwt_parts_cleanup(&p);
    CHECK(p.header == NULL && p.claims == NULL && p.signature == NULL);
    jwt_parts_cleanup(&p); /* idempotent */

    /* No kid. */
    char *tok2 = NULL;
    CHECK(jwt_sign_eddsa(claims, key, NULL, &tok2) == 0);
    CHECK(decode_str(tok2, &p) == 0);
    CHECK(json_object_get(p.header, "kid") == NULL);
    jwt_parts_cleanup(&p);
    CHECK(decode_verify(tok2, key) == 0);

    /* Another key does not verify. */
    EVP_PKEY *other = new_ed25519();
    CHECK(decode_verify(tok, other) == -1);

    /* Non-object claims and non-Ed25519 keys are refused by the signer. */
    json_t *arr = json_array();
    char *bad = (char *)"x";
    CHECK(jwt_sign_eddsa(arr, key, NULL, &bad) == -1 && bad == NULL);
    EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    CHECK(jwt_sign_eddsa(claims, ec, NULL, &bad) == -1 && bad == NULL);

    json_decref(arr);
    json_decref(claims);
    free(tok);
    free(tok2);
    EVP_PKEY_free(key);
    EVP_PKEY_free(other);
    EVP_PKEY_free(ec);
}

static void test_jwt_verify_rejects_tampering(void)
{
    EVP_PKEY *key = new_ed25519();
    json_t *claims = json_pack("{s:s, s:s}", "tenant", "t1", "scope", "agent:a:read");
    char *tok = NULL;
    CHECK(jwt_sign_eddsa(claims, key, NULL, &tok) == 0);
    CHECK(decode_verify(tok, key) == 0);

    /* Payload swapped for one granting more, old signature kept. */
    char *evil_claims = b64("{\"tenant\":\"t1\",\"scope\":\"tenant:admin\"}");
    char *dot1 = strchr(tok, '.');
    char *dot2 = strrchr(tok, '.');
    size_t n = (size_t)(dot1 - tok) + 1 + strlen(evil_claims) + strlen(dot2) + 1;
    char *forged = malloc(n);
    snprintf(forged, n, "%.*s.%s%s", (int)(dot1 - tok), tok, evil_claims, dot2);
    struct jwt_parts fp;
    CHECK(decode_str(forged, &fp) == 0); /* the shape is fine: only the signature can tell */
    jwt_parts_cleanup(&fp);
    CHECK(decode_verify(forged, key) == -1);

    /* One bit of the signature flipped (change a middle char of the signature part). */
    char *sigflip = strdup(tok);
    char *sp = strrchr(sigflip, '.') + 10;
    *sp = *sp == 'A' ? 'B' : 'A';
    CHECK(decode_verify(sigflip, key) == -1);

    /* One char of the payload changed. */
    char *payflip = strdup(tok);
    char *pp = strchr(payflip, '.') + 3;
    *pp = *pp == 'A' ? 'B' : 'A';
    CHECK(decode_verify(payflip, key) == -1);

    /* Signature truncated / emptied. */
    char *trunc = strdup(tok);
    trunc[strlen(trunc) - 4] = '\0';
    CHECK(decode_verify(trunc, key) == -1);
    char *nosig = strdup(tok);
    strrchr(nosig, '.')[1] = '\0';
    CHECK(decode_verify(nosig, key) == -1);

    free(evil_claims);
    free(forged);
    free(sigflip);
    free(payflip);
    free(trunc);
    free(nosig);
    free(tok);
    json_decref(claims);
    EVP_PKEY_free(key);
}

static void test_jwt_verify_rejects_other_algs(void)
{
    EVP_PKEY *key = new_ed25519();
    const char *claims = "{\"tenant\":\"t1\",\"exp\":2000000000}";
    /* Each header is signed correctly with the Ed25519 key: only the alg is wrong. */
    static const char *const headers[] = {
        "{\"alg\":\"none\"}",    "{\"alg\":\"HS256\"}", "{\"alg\":\"RS256\"}",
        "{\"alg\":\"ES256\"}",   "{\"alg\":\"eddsa\"}", "{\"alg\":\"EdDSA \"}",
        "{\"alg\":\"Ed25519\"}", "{\"alg\":\"\"}",
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        char *tok = sign_raw(key, headers[i], claims);
        CHECK(tok != NULL);
        CHECK(decode_verify(tok, key) == -1);
        free(tok);
    }
    char *ok = sign_raw(key, "{\"alg\":\"EdDSA\"}", claims);
    CHECK(decode_verify(ok, key) == 0);
    free(ok);

    /* Unsecured token "header.payload." is refused. */
    char *h = b64("{\"alg\":\"none\"}"), *c = b64(claims);
    char none[256];
    snprintf(none, sizeof none, "%s.%s.", h, c);
    CHECK(decode_verify(none, key) == -1);
    free(h);
    free(c);

    /* A verification key that is not Ed25519 is refused even for an EdDSA header. */
    EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    EVP_PKEY *ed448 = EVP_PKEY_Q_keygen(NULL, NULL, "ED448");
    char *tok = sign_raw(key, "{\"alg\":\"EdDSA\"}", claims);
    struct jwt_parts p;
    CHECK(decode_str(tok, &p) == 0);
    CHECK(jwt_verify_eddsa(&p, ec) == -1);
    CHECK(jwt_verify_eddsa(&p, ed448) == -1);
    CHECK(jwt_verify_eddsa(&p, NULL) == -1);
    CHECK(jwt_verify_eddsa(&p, key) == 0);
    jwt_parts_cleanup(&p);
    free(tok);
    EVP_PKEY_free(ec);
    EVP_PKEY_free(ed448);
    EVP_PKEY_free(key);
}

static void test_jwt_decode_rejects_malformed(void)
{
    EVP_PKEY *key = new_ed25519();
    char *good = sign_raw(key, "{\"alg\":\"EdDSA\"}", "{\"a\":1}");
    struct jwt_parts p;
    CHECK(decode_str(good, &p) == 0);
    jwt_parts_cleanup(&p);
    char buf[1024];

    /* Wrong number of parts. */
    snprintf(buf, sizeof buf, "%s.AAAA", good);
    CHECK(decode_str(buf, &p) == -1);
    CHECK(p.header == NULL && p.claims == NULL && p.signature == NULL);
    snprintf(buf, sizeof buf, "%.*s", (int)(strrchr(good, '.') - good), good);
    CHECK(decode_str(buf, &p) == -1);
    CHECK(decode_str("abc", &p) == -1);
    CHECK(decode_str("", &p) == -1);
    CHECK(decode_str("..", &p) == -1);
    CHECK(jwt_decode(NULL, 0, &p) == -1);

    /* Padding, standard alphabet, junk in each part. */
    char *h = b64("{\"alg\":\"EdDSA\"}"), *c = b64("{\"a\":1}");
    snprintf(buf, sizeof buf, "%s=.%s.AAAA", h, c);
    CHECK(decode_str(buf, &p) == -1);
    snprintf(buf, sizeof buf, "%s.%s==.AAAA", h, c);
    CHECK(decode_str(buf, &p) == -1);
    snprintf(buf, sizeof buf, "%s.%s.AA==", h, c);
    CHECK(decode_str(buf, &p) == -1);
    snprintf(buf, sizeof buf, "%s.%s.AA+/", h, c);
    CHECK(decode_str(buf, &p) == -1);
    snprintf(buf, sizeof buf, "%s.%s.A", h, c);
    CHECK(decode_str(buf, &p) == -1);
    snprintf(buf, sizeof buf, "%s.%s.AA AA", h, c);
    CHECK(decode_str(buf, &p) == -1);
    snprintf(buf, sizeof buf, " %s.%s.AAAA", h, c);
    CHECK(decode_str(buf, &p) == -1);
    snprintf(buf, sizeof buf, "%s..AAAA", h);
    CHECK(decode_str(buf, &p) == -1);
    snprintf(buf, sizeof buf, ".%s.AAAA", c);
    CHECK(decode_str(buf, &p) == -1);
    snprintf(buf, sizeof buf, "%s.%s.AAAA", h, c);
    CHECK(decode_str(buf, &p) == 0);
    jwt_parts_cleanup(&p);

    /* JSON that is not an object, not JSON, has duplicate keys or lacks a string alg. */
    static const char *const bad_headers[] = {
        "[1]",
        "\"EdDSA\"",
        "1",
        "null",
        "{",
        "{\"alg\":\"EdDSA\",\"alg\":\"EdDSA\"}",
        "{}",
        "{\"alg\":1}",
        "{\"alg\":null}",
        "{\"typ\":\"JWT\"}",
        "{\"alg\":\"EdDSA\"} x",
        "{\"alg\":\"Ed\\u0000DSA\"}",
    };
    for (size_t i = 0; i < sizeof bad_headers / sizeof bad_headers[0]; i++) {
        char *bh = b64(bad_headers[i]);
        snprintf(buf, sizeof buf, "%s.%s.AAAA", bh, c);
        CHECK(decode_str(buf, &p) == -1);
        free(bh);
    }
    static const char *const bad_claims[] = {
        "[1]", "\"x\"", "42", "{\"a\":1,\"a\":2}", "not json", "", "{\"a\":\"\xff\"}",
    };
    for (size_t i = 0; i < sizeof bad_claims / sizeof bad_claims[0]; i++) {
        char *bc = b64(bad_claims[i]);
        snprintf(buf, sizeof buf, "%s.%s.AAAA", h, bc);
        CHECK(decode_str(buf, &p) == -1);
        free(bc);
    }

    /* The length passed is the bound, not the NUL: a token cut short by len fails. */
    CHECK(jwt_decode(good, strlen(good) - 1, &p) == -1);
    CHECK(jwt_decode(good, (size_t)(strrchr(good, '.') - good), &p) == -1);

    free(h);
    free(c);
    free(good);
    EVP_PKEY_free(key);
}

static void test_jwt_decode_rejects_oversize(void)
{
    EVP_PKEY *key = new_ed25519();
    /* Build claims so the token lands exactly at the limit, then one byte over. */
    char *header = b64("{\"alg\":\"EdDSA\"}");
    size_t fixed = strlen(header) + 1 + 1 + 86; /* dots + 64-byte signature in base64url */
    size_t claims_b64_max = JWT_MAX_TOKEN_BYTES - fixed;
    /* {"p":"xxxx"} encodes 3 bytes per 4 chars; choose the length so that the base64 is a
     * multiple of 4 and fits exactly. */
    size_t raw_len = claims_b64_max / 4 * 3;
    char *claims = malloc(raw_len + 1);
    memset(claims, 'x', raw_len);
    memcpy(claims, "{\"p\":\"", 6);
    claims[raw_len - 2] = '"';
    claims[raw_len - 1] = '}';
    claims[raw_len] = '\0';
    char *tok = sign_raw(key, "{\"alg\":\"EdDSA\"}", claims);
    CHECK(tok != NULL);
    size_t len = strlen(tok);
    CHECK(len == JWT_MAX_TOKEN_BYTES);
    CHECK(decode_verify(tok, key) == 0);

    /* Grow the payload until the token passes the limit. */
    size_t big_len = raw_len + 12;
    char *big = malloc(big_len + 1);
    memset(big, 'x', big_len);
    memcpy(big, "{\"p\":\"", 6);
    big[big_len - 2] = '"';
    big[big_len - 1] = '}';
    big[big_len] = '\0';
    char *bigtok = sign_raw(key, "{\"alg\":\"EdDSA\"}", big);
    CHECK(strlen(bigtok) > JWT_MAX_TOKEN_BYTES);
    struct jwt_parts p;
    CHECK(decode_str(bigtok, &p) == -1);

    free(header);
    free(claims);
    free(big);
    free(tok);
    free(bigtok);
    EVP_PKEY_free(key);
}

/* RFC 8037 A.4: the payload is the text "Example of Ed25519 signing", not a claims object, so
 * jwt_decode refuses it as a JWT; the signature itself is checked through jwt_verify_eddsa with
 * parts assembled by hand. */
static void test_jwt_rfc8037_a4_eddsa_vector(void)
{
    json_error_t jerr;
    json_t *root = json_load_file(VECTORS, 0, &jerr);
    CHECK(root != NULL);
    if (root == NULL) {
        fprintf(stderr, "cannot read %s: %s\n", VECTORS, jerr.text);
        return;
    }
    json_t *v = json_object_get(root, "rfc8037_A4_EdDSA");
    const char *tok = json_string_value(json_object_get(v, "token"));
    const char *x = json_string_value(json_object_get(json_object_get(v, "jwk"), "x"));
    const char *d = json_string_value(json_object_get(json_object_get(v, "jwk"), "d"));
    CHECK(tok != NULL && x != NULL && d != NULL);

    unsigned char *xb = NULL, *db = NULL;
    size_t xlen = 0, dlen = 0;
    CHECK(jwt_b64url_decode(x, strlen(x), &xb, &xlen) == 0 && xlen == 32);
    CHECK(jwt_b64url_decode(d, strlen(d), &db, &dlen) == 0 && dlen == 32);
    EVP_PKEY *pub = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, xb, xlen);
    EVP_PKEY *priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, db, dlen);
    CHECK(pub != NULL && priv != NULL);

    struct jwt_parts p;
    CHECK(decode_str(tok, &p) == -1); /* payload is not a JSON object */

    const char *dot1 = strchr(tok, '.');
    const char *dot2 = strrchr(tok, '.');
    memset(&p, 0, sizeof p);
    unsigned char *hraw = NULL, *praw = NULL;
    size_t hlen = 0, plen = 0;
    CHECK(jwt_b64url_decode(tok, (size_t)(dot1 - tok), &hraw, &hlen) == 0);
    CHECK(jwt_b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &praw, &plen) == 0);
    CHECK(plen == 26 && memcmp(praw, "Example of Ed25519 signing", 26) == 0);
    p.header = json_loadb((const char *)hraw, hlen, JSON_REJECT_DUPLICATES, &jerr);
    CHECK(jwt_b64url_decode(dot2 + 1, strlen(dot2 + 1), &p.signature, &p.signature_len) == 0);
    p.signing_input = tok;
    p.signing_input_len = (size_t)(dot2 - tok);
    CHECK(jwt_verify_eddsa(&p, pub) == 0);
    CHECK(jwt_verify_eddsa(&p, priv) == 0); /* a private key verifies too */

    /* Our signer over the same input reproduces the RFC signature (Ed25519 is deterministic). */
    unsigned char sig[64];
    size_t siglen = sizeof sig;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    CHECK(EVP_DigestSignInit(ctx, NULL, NULL, NULL, priv) == 1 &&
          EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)tok, p.signing_input_len) == 1);
    CHECK(siglen == 64 && memcmp(sig, p.signature, 64) == 0);
    EVP_MD_CTX_free(ctx);

    /* One flipped signature bit fails. */
    p.signature[0] ^= 1;
    CHECK(jwt_verify_eddsa(&p, pub) == -1);
    jwt_parts_cleanup(&p);

    /* RFC 7515 A.1 (HS256) decodes but is refused by the EdDSA verifier; A.5 (none) likewise. */
    const char *hs =
        json_string_value(json_object_get(json_object_get(root, "rfc7515_A1_HS256"), "token"));
    CHECK(decode_str(hs, &p) == 0);
    CHECK_STREQ(json_string_value(json_object_get(p.header, "alg")), "HS256");
    CHECK(json_integer_value(json_object_get(p.claims, "exp")) == 1300819380);
    CHECK(jwt_verify_eddsa(&p, pub) == -1);
    jwt_parts_cleanup(&p);
    const char *es =
        json_string_value(json_object_get(json_object_get(root, "rfc7515_A3_ES256"), "token"));
    CHECK(decode_verify(es, pub) == -1);
    const char *none = json_string_value(
        json_object_get(json_object_get(root, "rfc7515_A5_unsecured_MUST_REJECT"), "token"));
    CHECK(decode_verify(none, pub) == -1);
    CHECK(decode_verify(none, priv) == -1);

    free(xb);
    free(db);
    free(hraw);
    free(praw);
    EVP_PKEY_free(pub);
    EVP_PKEY_free(priv);
    json_decref(root);
}

/* A token minted by the npm `jose` package (an independent implementation) verifies. */
static void test_jwt_jose_generated_sample_verifies(void)
{
    json_error_t jerr;
    json_t *root = json_load_file(SAMPLES, 0, &jerr);
    CHECK(root != NULL);
    FILE *fp = fopen(ED25519_PUB, "r");
    CHECK(fp != NULL);
    if (root == NULL || fp == NULL) {
        if (fp != NULL) {
            fclose(fp);
        }
        json_decref(root);
        return;
    }
    EVP_PKEY *pub = PEM_read_PUBKEY(fp, NULL, NULL, NULL);
    fclose(fp);
    CHECK(pub != NULL);
    const char *tok = json_string_value(json_object_get(root, "eddsa_kid_test-key-ed25519"));
    struct jwt_parts p;
    CHECK(decode_str(tok, &p) == 0);
    CHECK_STREQ(json_string_value(json_object_get(p.header, "kid")), "test-key-ed25519");
    CHECK_STREQ(json_string_value(json_object_get(p.claims, "sub")), "agent-42");
    CHECK(jwt_verify_eddsa(&p, pub) == 0);
    jwt_parts_cleanup(&p);
    CHECK(decode_verify(json_string_value(json_object_get(root, "none_MUST_REJECT")), pub) == -1);
    CHECK(decode_verify(
              json_string_value(json_object_get(json_object_get(root, "hs256_iss_aud"), "token")),
              pub) == -1);
    EVP_PKEY_free(pub);
    json_decref(root);
}

int main(void)
{
    RUN(test_jwt_b64url_round_trip);
    RUN(test_jwt_b64url_known_values);
    RUN(test_jwt_b64url_rejects_bad_input);
    RUN(test_jwt_sign_verify_round_trip);
    RUN(test_jwt_verify_rejects_tampering);
    RUN(test_jwt_verify_rejects_other_algs);
    RUN(test_jwt_decode_rejects_malformed);
    RUN(test_jwt_decode_rejects_oversize);
    RUN(test_jwt_rfc8037_a4_eddsa_vector);
    RUN(test_jwt_jose_generated_sample_verifies);
    return check_summary();
}
