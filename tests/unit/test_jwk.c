/* SPDX-License-Identifier: MIT */
/* Unit tests of src/proto/jwk.c and the ES256/RS256/HS256 side of src/proto/jwt.c: the RFC 7515
 * A.1 (HS256) / A.3 (ES256) and RFC 8037 A.4 (EdDSA) vectors through JWK import, the npm jose
 * samples (tests/data/jwt/), JWK Set parsing limits, and the refusals of RFC 8725: alg none,
 * algorithm/key-type confusion, DER or wrong-length ES256 signatures, RSA under 2048 bits. */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

#include "harness/check.h"
#include "proto/jwk.h"
#include "proto/jwt.h"

#include "common/banned.h"

#define VECTORS "data/jwt/rfc-jws-vectors.json"
#define SAMPLES "data/jwt/generated-samples.json"
#define EC_JWK "data/jwt/test-key-ecc-p256.jwk.json"
#define EC_PUB_PEM "data/jwt/test-key-ecc-p256.pub.pem"
#define EC_PRIV_PEM "data/jwt/test-key-ecc-p256.priv.pem"
#define ED_JWK "data/jwt/test-key-ed25519.jwk.json"
#define RSA_JWK "data/jwt/test-key-rsa.jwk.json"
#define RSA_PRIV_PEM "data/jwt/test-key-rsa.priv.pem"

static json_t *vectors, *samples;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf) {
        buf[n] = '\0';
    }
    if (len) {
        *len = n;
    }
    return buf;
}

/* A JWK Set of the given JWK objects (JSON text), parsed. */
static int jwks_of(const char *keys_json, struct jwks *out)
{
    char buf[16384];
    char err[256] = "";
    int n = snprintf(buf, sizeof buf, "{\"keys\":[%s]}", keys_json);
    int rc = jwks_parse(buf, (size_t)n, out, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "jwks_parse: %s\n", err);
    }
    return rc;
}

/* The key of a one-JWK file (tests/data/jwt/NAME.jwk.json) wrapped as a set. */
static int jwks_of_file(const char *path, struct jwks *out)
{
    char *text = slurp(path, NULL);
    if (text == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        return -1;
    }
    int rc = jwks_of(text, out);
    free(text);
    return rc;
}

static EVP_PKEY *read_priv(const char *path)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *k = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f) {
        fclose(f);
    }
    return k;
}

static int verify_tok(const char *tok, const struct jwk *k)
{
    struct jwt_parts p;
    if (tok == NULL || jwt_decode(tok, strlen(tok), &p) != 0) {
        return -1;
    }
    int rc = jwt_verify(&p, k);
    jwt_parts_cleanup(&p);
    return rc;
}

static char *b64(const void *data, size_t len)
{
    char *out = NULL;
    jwt_b64url_encode(data, len, &out);
    return out;
}

/* header "." payload "." sig over arbitrary header/claims text, signed for `alg`. */
static char *forge(enum jwt_alg alg, EVP_PKEY *key, const void *secret, size_t secret_len,
                   const char *header, const char *claims)
{
    char *h = b64(header, strlen(header)), *c = b64(claims, strlen(claims)), *s = NULL;
    char *input = malloc(strlen(h) + strlen(c) + 2), *tok = NULL;
    snprintf(input, strlen(h) + strlen(c) + 2, "%s.%s", h, c);
    if (jwt_sign_input(alg, key, secret, secret_len, input, strlen(input), &s) == 0) {
        size_t n = strlen(input) + strlen(s) + 2;
        tok = malloc(n);
        snprintf(tok, n, "%s.%s", input, s);
    }
    free(h);
    free(c);
    free(s);
    free(input);
    return tok;
}

/* The same token with its signature part replaced by `sig` bytes. */
static char *with_signature(const char *tok, const unsigned char *sig, size_t len)
{
    const char *dot = strrchr(tok, '.');
    char *s = b64(sig, len);
    size_t n = (size_t)(dot - tok) + strlen(s) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%.*s.%s", (int)(dot - tok), tok, s);
    free(s);
    return out;
}

static const char *vec_str(const char *obj, const char *member)
{
    return json_string_value(json_object_get(json_object_get(vectors, obj), member));
}

static void test_jwk_rfc7515_a1_hs256(void)
{
    const char *tok = vec_str("rfc7515_A1_HS256", "token");
    const char *k = json_string_value(
        json_object_get(json_object_get(json_object_get(vectors, "rfc7515_A1_HS256"), "jwk"), "k"));
    CHECK(tok != NULL && k != NULL);
    unsigned char *secret = NULL;
    size_t slen = 0;
    CHECK(jwt_b64url_decode(k, strlen(k), &secret, &slen) == 0 && slen == 64);
    struct jwk key;
    CHECK(jwk_from_secret(secret, slen, &key) == 0);
    CHECK(jwk_alg(&key) == JWT_ALG_HS256);
    CHECK(verify_tok(tok, &key) == 0);

    /* Our HMAC over the RFC's exact signing input reproduces the RFC signature byte for byte. */
    const char *dot2 = strrchr(tok, '.');
    char *sig = NULL;
    CHECK(jwt_sign_input(JWT_ALG_HS256, NULL, secret, slen, tok, (size_t)(dot2 - tok), &sig) == 0);
    CHECK_STREQ(sig, dot2 + 1);
    free(sig);

    /* Tampered payload (exp pushed), old signature. */
    char *evil = forge(JWT_ALG_HS256, NULL, secret, slen, "{\"typ\":\"JWT\",\"alg\":\"HS256\"}",
                       "{\"iss\":\"joe\",\"exp\":9999999999}");
    const char *edot = strrchr(evil, '.');
    char *mixed = malloc(strlen(evil) + strlen(dot2) + 1);
    snprintf(mixed, strlen(evil) + strlen(dot2) + 1, "%.*s%s", (int)(edot - evil), evil, dot2);
    CHECK(verify_tok(mixed, &key) == -1);
    CHECK(verify_tok(evil, &key) == 0); /* control: its own MAC is fine */
    free(mixed);
    free(evil);

    /* Another secret of the same length. */
    secret[0] ^= 1;
    struct jwk other;
    CHECK(jwk_from_secret(secret, slen, &other) == 0);
    CHECK(verify_tok(tok, &other) == -1);
    jwk_cleanup(&other);
    /* A secret under 32 bytes is no key at all. */
    CHECK(jwk_from_secret(secret, 31, &other) == -1);
    CHECK(jwk_from_secret(secret, 32, &other) == 0);
    jwk_cleanup(&other);
    jwk_cleanup(&key);
    free(secret);
}

static void test_jwk_rfc7515_a3_es256(void)
{
    const char *tok = vec_str("rfc7515_A3_ES256", "token");
    json_t *jwk = json_object_get(json_object_get(vectors, "rfc7515_A3_ES256"), "jwk");
    char *jwk_text = json_dumps(jwk, JSON_COMPACT);
    struct jwks set;
    CHECK(jwks_of(jwk_text, &set) == 0);
    free(jwk_text);
    CHECK(set.n_keys == 1);
    if (set.n_keys != 1) {
        return;
    }
    CHECK(set.had_private_members); /* "d" is there, and ignored */
    const struct jwk *k = &set.keys[0];
    CHECK(k->type == JWK_EC_P256 && !k->has_kid);
    CHECK(verify_tok(tok, k) == 0);

    /* The same signature as DER (what OpenSSL would produce) is refused: JOSE is raw r||s. */
    struct jwt_parts p;
    CHECK(jwt_decode(tok, strlen(tok), &p) == 0 && p.signature_len == 64);
    ECDSA_SIG *es = ECDSA_SIG_new();
    ECDSA_SIG_set0(es, BN_bin2bn(p.signature, 32, NULL), BN_bin2bn(p.signature + 32, 32, NULL));
    unsigned char *der = NULL;
    int derlen = i2d_ECDSA_SIG(es, &der);
    CHECK(derlen > 64);
    char *dertok = with_signature(tok, der, (size_t)derlen);
    CHECK(verify_tok(dertok, k) == -1);
    free(dertok);
    /* DER cut or padded to 64 bytes is not a valid r||s either. */
    unsigned char buf[72];
    memset(buf, 0, sizeof buf);
    memcpy(buf, der, (size_t)derlen < sizeof buf ? (size_t)derlen : sizeof buf);
    char *t64 = with_signature(tok, buf, 64);
    CHECK(verify_tok(t64, k) == -1);
    free(t64);
    OPENSSL_free(der);
    ECDSA_SIG_free(es);
    /* Wrong lengths: 63 and 65 bytes. */
    memcpy(buf, p.signature, 64);
    char *t63 = with_signature(tok, buf, 63);
    buf[64] = 0;
    char *t65 = with_signature(tok, buf, 65);
    CHECK(verify_tok(t63, k) == -1);
    CHECK(verify_tok(t65, k) == -1);
    free(t63);
    free(t65);
    /* A flipped bit in s. */
    buf[40] ^= 0x10;
    char *tflip = with_signature(tok, buf, 64);
    CHECK(verify_tok(tflip, k) == -1);
    free(tflip);
    jwt_parts_cleanup(&p);

    /* Sign and verify round trip with the RFC 9421 P-256 key (ES256 is randomized). */
    EVP_PKEY *priv = read_priv(EC_PRIV_PEM);
    struct jwks set2;
    CHECK(priv != NULL && jwks_of_file(EC_JWK, &set2) == 0);
    char *mine = forge(JWT_ALG_ES256, priv, NULL, 0, "{\"alg\":\"ES256\"}", "{\"a\":1}");
    CHECK(mine != NULL && verify_tok(mine, &set2.keys[0]) == 0);
    CHECK(verify_tok(mine, k) == -1); /* another P-256 key */
    free(mine);
    EVP_PKEY_free(priv);
    jwks_cleanup(&set2);
    jwks_cleanup(&set);
}

/* RFC 8037 A.4: the payload is not JSON, so the parts are assembled by hand. */
static void test_jwk_rfc8037_a4_eddsa(void)
{
    const char *tok = vec_str("rfc8037_A4_EdDSA", "token");
    json_t *jwk = json_object_get(json_object_get(vectors, "rfc8037_A4_EdDSA"), "jwk");
    char *jwk_text = json_dumps(jwk, JSON_COMPACT);
    struct jwks set;
    CHECK(jwks_of(jwk_text, &set) == 0 && set.n_keys == 1);
    free(jwk_text);
    if (set.n_keys != 1) {
        return;
    }
    CHECK(set.keys[0].type == JWK_OKP_ED25519 && set.had_private_members);
    const char *dot1 = strchr(tok, '.'), *dot2 = strrchr(tok, '.');
    struct jwt_parts p;
    memset(&p, 0, sizeof p);
    unsigned char *hraw = NULL;
    size_t hlen = 0;
    CHECK(jwt_b64url_decode(tok, (size_t)(dot1 - tok), &hraw, &hlen) == 0);
    p.header = json_loadb((const char *)hraw, hlen, 0, NULL);
    CHECK(jwt_b64url_decode(dot2 + 1, strlen(dot2 + 1), &p.signature, &p.signature_len) == 0);
    p.signing_input = tok;
    p.signing_input_len = (size_t)(dot2 - tok);
    CHECK(jwt_verify(&p, &set.keys[0]) == 0);
    p.signing_input_len--; /* one byte less signed input */
    CHECK(jwt_verify(&p, &set.keys[0]) == -1);
    json_decref(p.header);
    free(p.signature);
    free(hraw);
    jwks_cleanup(&set);
}

static void test_jwk_alg_none_never_accepted(void)
{
    CHECK(jwt_alg_parse("none") == JWT_ALG_UNKNOWN);
    CHECK(jwt_alg_parse("None") == JWT_ALG_UNKNOWN);
    CHECK(jwt_alg_parse("HS384") == JWT_ALG_UNKNOWN);
    CHECK(jwt_alg_parse("PS256") == JWT_ALG_UNKNOWN);
    CHECK(jwt_alg_parse("es256") == JWT_ALG_UNKNOWN);
    CHECK(jwt_alg_parse(NULL) == JWT_ALG_UNKNOWN);
    const char *toks[] = {vec_str("rfc7515_A5_unsecured_MUST_REJECT", "token"),
                          json_string_value(json_object_get(samples, "none_MUST_REJECT"))};
    struct jwks set;
    CHECK(jwks_of_file(EC_JWK, &set) == 0);
    struct jwk hs;
    CHECK(jwk_from_secret((const unsigned char *)"0123456789abcdef0123456789abcdef", 32, &hs) == 0);
    for (size_t i = 0; i < 2; i++) {
        CHECK(toks[i] != NULL);
        struct jwt_parts p;
        CHECK(jwt_decode(toks[i], strlen(toks[i]), &p) == 0 && p.signature_len == 0);
        CHECK(jwt_verify(&p, &set.keys[0]) == -1);
        CHECK(jwt_verify(&p, &hs) == -1);
        jwt_parts_cleanup(&p);
    }
    jwk_cleanup(&hs);
    jwks_cleanup(&set);
}

static void test_jwk_jose_generated_samples(void)
{
    const char *secret = json_string_value(json_object_get(samples, "hs256_secret_utf8"));
    json_t *hs = json_object_get(samples, "hs256_iss_aud");
    const char *hs_tok = json_string_value(json_object_get(hs, "token"));
    struct jwk key;
    CHECK(secret != NULL &&
          jwk_from_secret((const unsigned char *)secret, strlen(secret), &key) == 0);
    CHECK(verify_tok(hs_tok, &key) == 0);
    struct jwt_parts p;
    CHECK(jwt_decode(hs_tok, strlen(hs_tok), &p) == 0);
    CHECK_STREQ(json_string_value(json_object_get(p.claims, "iss")), "https://coord.example");
    CHECK_STREQ(json_string_value(json_object_get(p.claims, "aud")), "coord-api");
    CHECK_STREQ(json_string_value(json_object_get(p.claims, "sub")), "agent-42");
    jwt_parts_cleanup(&p);

    struct jwks ec, ed;
    CHECK(jwks_of_file(EC_JWK, &ec) == 0 && ec.n_keys == 1);
    CHECK(jwks_of_file(ED_JWK, &ed) == 0 && ed.n_keys == 1);
    CHECK_STREQ(ec.keys[0].kid, "test-key-ecc-p256");
    CHECK_STREQ(ed.keys[0].kid, "test-key-ed25519");
    const char *es_tok = json_string_value(json_object_get(samples, "es256_kid_test-key-ecc-p256"));
    const char *ed_tok = json_string_value(json_object_get(samples, "eddsa_kid_test-key-ed25519"));
    CHECK(verify_tok(es_tok, &ec.keys[0]) == 0);
    CHECK(verify_tok(ed_tok, &ed.keys[0]) == 0);
    /* Cross: each token with the other keys. */
    CHECK(verify_tok(es_tok, &ed.keys[0]) == -1);
    CHECK(verify_tok(ed_tok, &ec.keys[0]) == -1);
    CHECK(verify_tok(es_tok, &key) == -1);
    CHECK(verify_tok(hs_tok, &ec.keys[0]) == -1);

    /* The JWK import equals the PEM public key of the same key. */
    FILE *f = fopen(EC_PUB_PEM, "r");
    EVP_PKEY *pem = f ? PEM_read_PUBKEY(f, NULL, NULL, NULL) : NULL;
    if (f) {
        fclose(f);
    }
    CHECK(pem != NULL && EVP_PKEY_eq(pem, ec.keys[0].pkey) == 1);

    /* Negative case of the samples: an HS256 token MACed with the P-256 public key's PEM text
     * must not verify against that EC key (algorithm confusion, RFC 8725 §2.1). */
    size_t pemlen = 0;
    char *pemtext = slurp(EC_PUB_PEM, &pemlen);
    char *conf = forge(JWT_ALG_HS256, NULL, pemtext, pemlen, "{\"alg\":\"HS256\"}",
                       "{\"sub\":\"agent-42\",\"scope\":\"admin\"}");
    CHECK(conf != NULL && verify_tok(conf, &ec.keys[0]) == -1);
    struct jwk pemsecret; /* control: it is a valid MAC under that "secret" */
    CHECK(jwk_from_secret((const unsigned char *)pemtext, pemlen, &pemsecret) == 0);
    CHECK(verify_tok(conf, &pemsecret) == 0);
    jwk_cleanup(&pemsecret);
    free(conf);
    free(pemtext);
    EVP_PKEY_free(pem);
    jwks_cleanup(&ec);
    jwks_cleanup(&ed);
    jwk_cleanup(&key);
}

/* The b64url big-endian value of an RSA parameter ("n" or "e"). */
static char *rsa_param(EVP_PKEY *k, const char *name)
{
    BIGNUM *bn = NULL;
    if (EVP_PKEY_get_bn_param(k, name, &bn) != 1) {
        return NULL;
    }
    unsigned char buf[1024];
    int n = BN_bn2bin(bn, buf);
    BN_free(bn);
    return b64(buf, (size_t)n);
}

static char *rsa_jwk_text(EVP_PKEY *k, const char *kid)
{
    char *n = rsa_param(k, OSSL_PKEY_PARAM_RSA_N), *e = rsa_param(k, OSSL_PKEY_PARAM_RSA_E);
    size_t len = strlen(n) + strlen(e) + 128;
    char *out = malloc(len);
    snprintf(out, len, "{\"kty\":\"RSA\",\"kid\":\"%s\",\"n\":\"%s\",\"e\":\"%s\"}", kid, n, e);
    free(n);
    free(e);
    return out;
}

static void test_jwk_rs256(void)
{
    EVP_PKEY *priv = read_priv(RSA_PRIV_PEM);
    struct jwks set;
    CHECK(priv != NULL && jwks_of_file(RSA_JWK, &set) == 0 && set.n_keys == 1);
    if (priv == NULL || set.n_keys != 1) {
        return;
    }
    const struct jwk *k = &set.keys[0];
    CHECK(k->type == JWK_RSA && EVP_PKEY_eq(k->pkey, priv) == 1);
    CHECK(set.had_private_members);
    char *tok = forge(JWT_ALG_RS256, priv, NULL, 0, "{\"alg\":\"RS256\",\"kid\":\"test-key-rsa\"}",
                      "{\"tenant\":\"t1\"}");
    CHECK(tok != NULL && verify_tok(tok, k) == 0);
    /* RS256 is deterministic: signing twice gives the same token. */
    char *again = forge(JWT_ALG_RS256, priv, NULL, 0,
                        "{\"alg\":\"RS256\",\"kid\":\"test-key-rsa\"}", "{\"tenant\":\"t1\"}");
    CHECK_STREQ(tok, again);
    free(again);
    /* Truncated signature, tampered payload, header claiming PS256 or RS512. */
    char *cut = strdup(tok);
    cut[strlen(cut) - 4] = '\0';
    CHECK(verify_tok(cut, k) == -1);
    free(cut);
    char *evil = forge(JWT_ALG_RS256, priv, NULL, 0, "{\"alg\":\"RS256\"}", "{\"tenant\":\"t2\"}");
    const char *d1 = strrchr(tok, '.'), *d2 = strrchr(evil, '.');
    char *mixed = malloc(strlen(tok) + strlen(evil));
    snprintf(mixed, strlen(tok) + strlen(evil), "%.*s%s", (int)(d2 - evil), evil, d1);
    CHECK(verify_tok(mixed, k) == -1);
    free(mixed);
    free(evil);
    char *ps = forge(JWT_ALG_RS256, priv, NULL, 0, "{\"alg\":\"PS256\"}", "{\"tenant\":\"t1\"}");
    CHECK(verify_tok(ps, k) == -1);
    free(ps);

    /* Confusion: HS256 MACed with the RSA public key (PEM and raw modulus) as the secret. */
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, priv);
    char *pem = NULL;
    long pemlen = BIO_get_mem_data(bio, &pem);
    char *conf = forge(JWT_ALG_HS256, NULL, pem, (size_t)pemlen, "{\"alg\":\"HS256\"}",
                       "{\"tenant\":\"t1\"}");
    CHECK(conf != NULL && verify_tok(conf, k) == -1);
    free(conf);
    BIO_free(bio);
    free(tok);

    /* 1024-bit RSA: refused as a jwk, as a JWK Set member, and at verification. */
    EVP_PKEY *small = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
    CHECK(small != NULL);
    struct jwk sk;
    CHECK(jwk_from_pkey(small, "small", &sk) == -1);
    char *jt = rsa_jwk_text(small, "small");
    char buf[4096], err[256] = "";
    int n = snprintf(buf, sizeof buf, "{\"keys\":[%s]}", jt);
    struct jwks sset;
    CHECK(jwks_parse(buf, (size_t)n, &sset, err, sizeof err) == -1);
    CHECK(strstr(err, "2048") != NULL);
    free(jt);
    memset(&sk, 0, sizeof sk);
    sk.type = JWK_RSA;
    sk.pkey = small; /* forced past the constructors: jwt_verify still refuses */
    char *stok = forge(JWT_ALG_RS256, small, NULL, 0, "{\"alg\":\"RS256\"}", "{\"tenant\":\"t1\"}");
    CHECK(stok != NULL && verify_tok(stok, &sk) == -1);
    free(stok);
    EVP_PKEY_free(small);

    /* A freshly generated 2048-bit key through the JWK path verifies. */
    EVP_PKEY *big = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    jt = rsa_jwk_text(big, "big");
    struct jwks bset;
    CHECK(jwks_of(jt, &bset) == 0 && bset.n_keys == 1);
    char *btok = forge(JWT_ALG_RS256, big, NULL, 0, "{\"alg\":\"RS256\"}", "{\"x\":1}");
    CHECK(bset.n_keys == 1 && verify_tok(btok, &bset.keys[0]) == 0);
    CHECK(verify_tok(btok, k) == -1);
    free(btok);
    free(jt);
    jwks_cleanup(&bset);
    EVP_PKEY_free(big);
    EVP_PKEY_free(priv);
    jwks_cleanup(&set);
}

/* Every key type verifies only its own algorithm, whatever the header claims. */
static void test_jwk_alg_is_fixed_by_key_type(void)
{
    EVP_PKEY *ec = read_priv(EC_PRIV_PEM), *rsa = read_priv(RSA_PRIV_PEM);
    EVP_PKEY *ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    struct jwk kec, krsa, ked, khs;
    CHECK(jwk_from_pkey(ec, "ec", &kec) == 0 && kec.type == JWK_EC_P256);
    CHECK(jwk_from_pkey(rsa, "rsa", &krsa) == 0 && krsa.type == JWK_RSA);
    CHECK(jwk_from_pkey(ed, NULL, &ked) == 0 && ked.type == JWK_OKP_ED25519 && !ked.has_kid);
    CHECK(jwk_from_secret((const unsigned char *)"0123456789abcdef0123456789abcdef", 32, &khs) ==
          0);
    const struct jwk *keys[] = {&ked, &kec, &krsa, &khs};
    const enum jwt_alg algs[] = {JWT_ALG_EDDSA, JWT_ALG_ES256, JWT_ALG_RS256, JWT_ALG_HS256};
    const char *names[] = {"EdDSA", "ES256", "RS256", "HS256"};
    EVP_PKEY *signers[] = {ed, ec, rsa, NULL};
    for (size_t i = 0; i < 4; i++) {
        char hdr[64];
        snprintf(hdr, sizeof hdr, "{\"alg\":\"%s\"}", names[i]);
        char *tok = forge(algs[i], signers[i], "0123456789abcdef0123456789abcdef", 32, hdr,
                          "{\"tenant\":\"t\"}");
        CHECK(tok != NULL);
        for (size_t j = 0; j < 4; j++) {
            CHECK(verify_tok(tok, keys[j]) == (i == j ? 0 : -1));
        }
        free(tok);
    }
    /* A token whose header lies: signed by the EC key but labelled EdDSA or RS256. */
    char *lie = forge(JWT_ALG_ES256, ec, NULL, 0, "{\"alg\":\"EdDSA\"}", "{\"tenant\":\"t\"}");
    CHECK(verify_tok(lie, &kec) == -1 && verify_tok(lie, &ked) == -1);
    free(lie);
    jwk_cleanup(&kec);
    jwk_cleanup(&krsa);
    jwk_cleanup(&ked);
    jwk_cleanup(&khs);
    EVP_PKEY_free(ec);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ed);
}

static void test_jwk_set_parsing(void)
{
    struct jwks s;
    char err[256];
    const char *ed = "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"a\","
                     "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}";
    const char *ec = "{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"b\",\"use\":\"sig\",\"alg\":"
                     "\"ES256\",\"x\":\"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\","
                     "\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0\"}";
    char buf[8192];
    snprintf(buf, sizeof buf, "%s,%s", ed, ec);
    CHECK(jwks_of(buf, &s) == 0 && s.n_keys == 2 && s.n_skipped == 0 && !s.had_private_members);
    jwks_cleanup(&s);

    /* Skipped, not refused: other kty/crv, encryption keys, an alg of another algorithm, oct. */
    static const char *const skipped[] = {
        "{\"kty\":\"OKP\",\"crv\":\"X25519\",\"x\":\"AAAA\"}",
        "{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AAAA\",\"y\":\"AAAA\"}",
        "{\"kty\":\"oct\",\"k\":\"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY\"}",
        "{\"kty\":\"XYZ\"}",
        "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"use\":\"enc\",\"x\":\"AAAA\"}",
        "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"alg\":\"ES256\",\"x\":\"AAAA\"}",
        "{\"kty\":\"RSA\",\"alg\":\"PS256\",\"n\":\"AAAA\",\"e\":\"AQAB\"}",
        "{\"kty\":\"RSA\",\"alg\":\"RS512\",\"n\":\"AAAA\",\"e\":\"AQAB\"}",
    };
    for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++) {
        snprintf(buf, sizeof buf, "%s,%s", skipped[i], ed);
        CHECK(jwks_of(buf, &s) == 0 && s.n_keys == 1 && s.n_skipped == 1);
        jwks_cleanup(&s);
    }

    /* Refused: malformed members of a supported key, duplicates, not a JWK Set. */
    static const char *const refused[] = {
        "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMl"
        "rwIaaPcHUR\"}]}", /* 31 bytes */
        "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\"}]}",
        "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":7}]}",
        "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uP"
        "HvRVEU\",\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a1\"}]}", /* off the curve */
        "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"AQAB\"}]}",
        "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"+++\",\"e\":\"AQAB\"}]}",
        "{\"keys\":[{\"crv\":\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}]}",
        "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":5,\"x\":\"11qYAYKxCrfVS_7TyWQHOg7"
        "hcvPapiMlrwIaaPcHURo\"}]}",
        "{\"keys\":{}}",
        "{\"kty\":\"OKP\"}",
        "[]",
        "{\"keys\":[1]}",
        "{\"keys\":[]",
        "{\"keys\":[],\"keys\":[]}",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        err[0] = '\0';
        int rc = jwks_parse(refused[i], strlen(refused[i]), &s, err, sizeof err);
        CHECK(rc == -1 && err[0] != '\0' && s.keys == NULL && s.n_keys == 0);
        if (rc == 0) {
            fprintf(stderr, "accepted: %s\n", refused[i]);
            jwks_cleanup(&s);
        }
    }
    /* Duplicate kid. */
    snprintf(buf, sizeof buf, "{\"keys\":[%s,%s]}", ed, ed);
    CHECK(jwks_parse(buf, strlen(buf), &s, err, sizeof err) == -1 && strstr(err, "duplicate"));
    /* Too many keys, too many bytes. */
    size_t o = (size_t)snprintf(buf, sizeof buf, "{\"keys\":[");
    for (int i = 0; i <= JWKS_MAX_KEYS; i++) {
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s{\"kty\":\"XYZ\"}", i ? "," : "");
    }
    snprintf(buf + o, sizeof buf - o, "]}");
    CHECK(jwks_parse(buf, strlen(buf), &s, err, sizeof err) == -1);
    char *big = malloc(JWKS_MAX_BYTES + 2);
    memset(big, ' ', JWKS_MAX_BYTES + 1);
    memcpy(big, "{\"keys\":[]}", 11);
    CHECK(jwks_parse(big, JWKS_MAX_BYTES + 1, &s, err, sizeof err) == -1);
    CHECK(jwks_parse(big, JWKS_MAX_BYTES, &s, err, sizeof err) == 0 && s.n_keys == 0);
    jwks_cleanup(&s);
    free(big);
}

int main(void)
{
    json_error_t jerr;
    vectors = json_load_file(VECTORS, 0, &jerr);
    samples = json_load_file(SAMPLES, 0, &jerr);
    CHECK(vectors != NULL && samples != NULL);
    if (vectors == NULL || samples == NULL) {
        fprintf(stderr, "cannot read the vectors (run from tests/): %s\n", jerr.text);
        return check_summary();
    }
    RUN(test_jwk_rfc7515_a1_hs256);
    RUN(test_jwk_rfc7515_a3_es256);
    RUN(test_jwk_rfc8037_a4_eddsa);
    RUN(test_jwk_alg_none_never_accepted);
    RUN(test_jwk_jose_generated_samples);
    RUN(test_jwk_rs256);
    RUN(test_jwk_alg_is_fixed_by_key_type);
    RUN(test_jwk_set_parsing);
    json_decref(vectors);
    json_decref(samples);
    return check_summary();
}
