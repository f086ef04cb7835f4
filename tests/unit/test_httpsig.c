/* SPDX-License-Identifier: MIT */
/* Unit tests of src/proto/httpsig.c against RFC 9421 (tests/data/rfc9421/): every Appendix B
 * signature base byte-exact and verified, the deterministic signatures (B.2.5 hmac, B.2.6 and B.4
 * ed25519, §4.3 proxy_sig rsa-v1_5) re-signed byte-exact, negative controls, §2 component rules,
 * key loading (PEM and JWK) and the error codes. */
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "harness/check.h"
#include "proto/httpsig.h"
#include "proto/sf.h"

#include "common/banned.h"

#define V "data/rfc9421/"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    fclose(f);
    s[got] = '\0';
    if (len != NULL) {
        *len = got;
    }
    return s;
}

/* A file's first line without its LF (signature-input.txt, signature.txt). */
static char *read_line(const char *path)
{
    char *s = read_file(path, NULL);
    if (s != NULL) {
        s[strcspn(s, "\n")] = '\0';
    }
    return s;
}

/* An HTTP/1.1 message file (LF line ends) as a struct httpsig_message over https. */
struct msgfile {
    char *text;
    struct httpsig_header headers[32];
    char *path, *query;
    struct httpsig_message m;
};

static void msg_load(struct msgfile *mf, const char *file)
{
    memset(mf, 0, sizeof *mf);
    mf->text = read_file(file, NULL);
    char *line = mf->text, *next;
    bool first = true;
    mf->m.scheme = "https";
    mf->m.headers = mf->headers;
    while (line != NULL && *line != '\0' && *line != '\n') {
        next = strchr(line, '\n');
        if (next != NULL) {
            *next++ = '\0';
        }
        if (first) {
            first = false;
            if (strncmp(line, "HTTP/", 5) == 0) {
                mf->m.status = (int)strtol(strchr(line, ' ') + 1, NULL, 10);
            } else {
                char *sp1 = strchr(line, ' '), *sp2 = strrchr(line, ' ');
                *sp1 = '\0';
                *sp2 = '\0';
                mf->m.method = line;
                mf->path = sp1 + 1;
                char *q = strchr(mf->path, '?');
                if (q != NULL) {
                    *q = '\0';
                    mf->query = q + 1;
                }
                mf->m.path = mf->path;
                mf->m.query = mf->query;
            }
        } else {
            char *colon = strchr(line, ':');
            *colon = '\0';
            mf->headers[mf->m.n_headers].name = line;
            mf->headers[mf->m.n_headers].value = colon + 1; /* leading SP: trimmed by httpsig */
            if (strcasecmp(line, "Host") == 0) {
                mf->m.authority = colon + 2;
            }
            mf->m.n_headers++;
        }
        line = next;
    }
}

static void msg_free(struct msgfile *mf)
{
    free(mf->text);
}

static const char *msg_header(const struct msgfile *mf, const char *name)
{
    for (size_t i = 0; i < mf->m.n_headers; i++) {
        if (strcasecmp(mf->headers[i].name, name) == 0) {
            return mf->headers[i].value + 1;
        }
    }
    return NULL;
}

static void msg_set_header(struct msgfile *mf, const char *name, const char *value)
{
    for (size_t i = 0; i < mf->m.n_headers; i++) {
        if (strcasecmp(mf->headers[i].name, name) == 0) {
            mf->headers[i].value = value;
        }
    }
}

static EVP_PKEY *pem_key(const char *name)
{
    char path[256];
    size_t len;
    snprintf(path, sizeof path, V "keys/%s", name);
    char *pem = read_file(path, &len);
    EVP_PKEY *k = NULL;
    CHECK(pem != NULL && httpsig_key_from_pem(pem, len, &k) == HTTPSIG_OK);
    free(pem);
    return k;
}

static EVP_PKEY *jwk_key(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, V "keys/%s.jwk.json", name);
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    EVP_PKEY *k = NULL;
    CHECK(j != NULL && httpsig_key_from_jwk(j, &k) == HTTPSIG_OK);
    json_decref(j);
    return k;
}

static unsigned char secret[64];
static size_t secret_len;

static void load_secret(void)
{
    char *b64 = read_line(V "keys/test-shared-secret.b64");
    unsigned char *raw = NULL;
    CHECK(b64 != NULL && sf_base64_decode(b64, strlen(b64), &raw, &secret_len) == 0);
    CHECK_EQ(secret_len, 64);
    memcpy(secret, raw, secret_len < 64 ? secret_len : 64);
    free(raw);
    free(b64);
}

/* The key of a vector by keyid: public for verifying, private for signing. */
static struct httpsig_key key_for(const char *keyid, bool priv)
{
    struct httpsig_key k = {0};
    char name[128];
    if (strcmp(keyid, "test-shared-secret") == 0) {
        k.alg = HTTPSIG_ALG_HMAC_SHA256;
        k.secret = secret;
        k.secret_len = secret_len;
        return k;
    }
    snprintf(name, sizeof name, "%s.%s.pem", keyid, priv ? "priv" : "pub");
    k.pkey = pem_key(name);
    if (strcmp(keyid, "test-key-rsa-pss") == 0) {
        k.alg = HTTPSIG_ALG_RSA_PSS_SHA512;
    } else if (strcmp(keyid, "test-key-rsa") == 0) {
        k.alg = HTTPSIG_ALG_RSA_V1_5_SHA256;
    } else if (strcmp(keyid, "test-key-ecc-p256") == 0) {
        k.alg = HTTPSIG_ALG_ECDSA_P256_SHA256;
    } else {
        k.alg = HTTPSIG_ALG_ED25519;
    }
    return k;
}

/* Parses signature `label` out of the two field values, builds its base over `m`, compares it
 * with the file `base_file` (when not NULL) and verifies it with the keyid's public key.
 * Returns the verification result. */
static int check_vector(const struct httpsig_message *m, const char *si, const char *sg,
                        const char *label, const char *base_file)
{
    struct httpsig_signature s;
    int rc = httpsig_parse(si, strlen(si), sg, strlen(sg), label, &s);
    CHECK_EQ(rc, HTTPSIG_OK);
    if (rc != HTTPSIG_OK) {
        return rc;
    }
    char *base = NULL;
    size_t n = 0;
    rc = httpsig_base_build(m, &s.input, &base, &n);
    if (rc != HTTPSIG_OK) {
        httpsig_signature_cleanup(&s);
        return rc;
    }
    if (base_file != NULL) {
        size_t wn = 0;
        char *want = read_file(base_file, &wn);
        CHECK(want != NULL && base != NULL && n == wn && memcmp(base, want, n) == 0);
        if (want != NULL && base != NULL && (n != wn || memcmp(base, want, n) != 0)) {
            fprintf(stderr, "base for %s differs:\n--- got\n%s\n--- want\n%s\n", base_file, base,
                    want);
        }
        free(want);
    }
    struct httpsig_key k = key_for(s.params.keyid, false);
    rc = httpsig_verify(m, &s, &k);
    if (rc == HTTPSIG_OK && base != NULL) {
        /* Negative controls: one changed signature byte, one changed base byte. */
        s.sig[s.sig_len / 2] ^= 0x01;
        CHECK_EQ(httpsig_verify(m, &s, &k), HTTPSIG_EINVALID);
        s.sig[s.sig_len / 2] ^= 0x01;
        base[0] ^= 0x01;
        CHECK_EQ(httpsig_verify_raw(&k, (unsigned char *)base, n, s.sig, s.sig_len),
                 HTTPSIG_EINVALID);
    }
    EVP_PKEY_free(k.pkey);
    free(base);
    httpsig_signature_cleanup(&s);
    return rc;
}

static void check_b2_case(const char *dir, const struct httpsig_message *m, const char *label)
{
    char p1[128], p2[128], p3[128];
    snprintf(p1, sizeof p1, V "%s/signature-input.txt", dir);
    snprintf(p2, sizeof p2, V "%s/signature.txt", dir);
    snprintf(p3, sizeof p3, V "%s/signature-base.txt", dir);
    char *si = read_line(p1), *sg = read_line(p2);
    CHECK_EQ(check_vector(m, si, sg, label, p3), HTTPSIG_OK);
    free(si);
    free(sg);
}

/* B.2 response with the erratum fixed: its printed Content-Digest is not the body's. */
#define B24_DIGEST                                                                                 \
    " sha-512=:mEWXIS7MaLRuGgxOBdODa3xqM1XdEvxoYhvlCFJ41QJgJc4GTsPp29l5oGX69wWdXymyU0rjJuahq4l5aG" \
    "gfLQ==:"

static void test_httpsig_appendix_b2(void)
{
    struct msgfile req, res;
    msg_load(&req, V "messages/test-request.http");
    msg_load(&res, V "messages/test-response.http");
    CHECK_STREQ(req.m.method, "POST");
    CHECK_STREQ(req.m.authority, "example.com");
    CHECK_EQ(res.m.status, 200);
    check_b2_case("b21", &req.m, "sig-b21");
    check_b2_case("b22", &req.m, "sig-b22");
    check_b2_case("b23", &req.m, "sig-b23");
    check_b2_case("b25", &req.m, "sig-b25");
    check_b2_case("b26", &req.m, NULL); /* NULL: the first (only) label */

    /* B.2.4 as printed fails (wrong Content-Digest in the RFC text), fixed it verifies. */
    char *si = read_line(V "b24/signature-input.txt"), *sg = read_line(V "b24/signature.txt");
    CHECK_EQ(check_vector(&res.m, si, sg, "sig-b24", NULL), HTTPSIG_EINVALID);
    msg_set_header(&res, "Content-Digest", B24_DIGEST);
    check_b2_case("b24", &res.m, "sig-b24");

    /* Tampering with a covered component fails; b21 covers none, so it still verifies. */
    msg_set_header(&req, "Content-Type", " text/plain");
    CHECK_EQ(check_vector(&req.m, si, sg, "sig-b24", NULL), HTTPSIG_ECOMPONENT);
    free(si);
    free(sg);
    const char *cases[] = {"b23", "b25", "b26"};
    for (size_t i = 0; i < 3; i++) {
        char p1[128], p2[128];
        snprintf(p1, sizeof p1, V "%s/signature-input.txt", cases[i]);
        snprintf(p2, sizeof p2, V "%s/signature.txt", cases[i]);
        si = read_line(p1);
        sg = read_line(p2);
        CHECK_EQ(check_vector(&req.m, si, sg, NULL, NULL), HTTPSIG_EINVALID);
        free(si);
        free(sg);
    }
    si = read_line(V "b21/signature-input.txt");
    sg = read_line(V "b21/signature.txt");
    CHECK_EQ(check_vector(&req.m, si, sg, NULL, NULL), HTTPSIG_OK);
    free(si);
    free(sg);
    msg_free(&req);
    msg_free(&res);
}

static void test_httpsig_params_exposed(void)
{
    char *si = read_line(V "b21/signature-input.txt"), *sg = read_line(V "b21/signature.txt");
    struct httpsig_signature s;
    CHECK_EQ(httpsig_parse(si, strlen(si), sg, strlen(sg), "sig-b21", &s), HTTPSIG_OK);
    CHECK_STREQ(s.label, "sig-b21");
    CHECK(s.params.has_created && s.params.created == 1618884473);
    CHECK(!s.params.has_expires);
    CHECK_STREQ(s.params.keyid, "test-key-rsa-pss");
    CHECK_STREQ(s.params.nonce, "b3k2pp5k7z-50gnwp.yemd");
    CHECK(s.params.alg == NULL && s.params.tag == NULL);
    CHECK_EQ(httpsig_params_check_time(&s.params, 1618884473, 300, 0), HTTPSIG_EEXPIRED);
    CHECK_EQ(s.params.n_components, 0);
    CHECK_EQ(s.sig_len, 256);
    httpsig_signature_cleanup(&s);
    free(si);
    free(sg);

    struct msgfile fr;
    msg_load(&fr, V "s4.3-multi/final-request.http");
    const char *fsi = msg_header(&fr, "Signature-Input"), *fsg = msg_header(&fr, "Signature");
    CHECK_EQ(httpsig_parse(fsi, strlen(fsi), fsg, strlen(fsg), "proxy_sig", &s), HTTPSIG_OK);
    CHECK(s.params.has_expires && s.params.expires == 1618884540);
    CHECK_STREQ(s.params.alg, "rsa-v1_5-sha256");
    CHECK_EQ(s.params.alg_id, HTTPSIG_ALG_RSA_V1_5_SHA256);
    CHECK_EQ(s.params.n_components, 7);
    CHECK_STREQ(s.params.components[6].str, "forwarded");
    CHECK(httpsig_params_covers(&s.params, "@authority"));
    CHECK(httpsig_params_covers(&s.params, "content-digest"));
    CHECK(!httpsig_params_covers(&s.params, "@query"));
    /* created 1618884480, expires +60. */
    CHECK_EQ(httpsig_params_check_time(&s.params, 1618884500, 300, 0), HTTPSIG_OK);
    CHECK_EQ(httpsig_params_check_time(&s.params, 1618884541, 300, 0), HTTPSIG_EEXPIRED);
    CHECK_EQ(httpsig_params_check_time(&s.params, 1618884541, 300, 5), HTTPSIG_OK);
    CHECK_EQ(httpsig_params_check_time(&s.params, 1618884470, 300, 5), HTTPSIG_EEXPIRED);
    CHECK_EQ(httpsig_params_check_time(&s.params, 1618884500, 30, 0), HTTPSIG_EEXPIRED);
    httpsig_signature_cleanup(&s);
    CHECK_EQ(httpsig_parse(fsi, strlen(fsi), fsg, strlen(fsg), "nope", &s), HTTPSIG_EMISSING);
    /* Walking every signature by index. */
    CHECK_EQ(httpsig_parse_at(fsi, strlen(fsi), fsg, strlen(fsg), 0, &s), HTTPSIG_OK);
    CHECK_STREQ(s.label, "sig1");
    httpsig_signature_cleanup(&s);
    CHECK_EQ(httpsig_parse_at(fsi, strlen(fsi), fsg, strlen(fsg), 1, &s), HTTPSIG_OK);
    CHECK_STREQ(s.label, "proxy_sig");
    httpsig_signature_cleanup(&s);
    CHECK_EQ(httpsig_parse_at(fsi, strlen(fsi), fsg, strlen(fsg), 2, &s), HTTPSIG_EMISSING);
    msg_free(&fr);

    si = read_line(V "b22/signature-input.txt");
    sg = read_line(V "b22/signature.txt");
    CHECK_EQ(httpsig_parse(si, strlen(si), sg, strlen(sg), NULL, &s), HTTPSIG_OK);
    CHECK_STREQ(s.params.tag, "header-example");
    CHECK_STREQ(sf_param_get(&s.params.components[2], "name")->str, "Pet");
    CHECK(!httpsig_params_covers(&s.params, "@query-param"));
    httpsig_signature_cleanup(&s);
    free(si);
    free(sg);
}

/* Signs with the vector's private key and the vector's own parameters; compares byte-exact. */
static void check_resign(const struct httpsig_message *m, const char *label, const char *si_line,
                         const char *sg_line)
{
    const char *params = si_line + strlen(label) + 1;
    struct sf_item input;
    struct httpsig_params p;
    CHECK_EQ(httpsig_params_parse(params, strlen(params), &input), HTTPSIG_OK);
    CHECK_EQ(httpsig_params_get(&input, &p), HTTPSIG_OK);
    if (p.keyid == NULL) {
        fprintf(stderr, "cannot re-sign %s: params \"%s\"\n", label, params);
        sf_item_cleanup(&input);
        return;
    }
    struct httpsig_key k = key_for(p.keyid, true);
    char *out_si = NULL, *out_sg = NULL;
    CHECK_EQ(httpsig_sign(m, label, params, &k, &out_si, &out_sg), HTTPSIG_OK);
    CHECK_STREQ(out_si, si_line);
    CHECK_STREQ(out_sg, sg_line);
    free(out_si);
    free(out_sg);
    EVP_PKEY_free(k.pkey);
    sf_item_cleanup(&input);
}

static void test_httpsig_deterministic_resign(void)
{
    struct msgfile req;
    msg_load(&req, V "messages/test-request.http");
    const char *dirs[] = {"b25", "b26"};
    const char *labels[] = {"sig-b25", "sig-b26"};
    for (size_t i = 0; i < 2; i++) {
        char p1[128], p2[128];
        snprintf(p1, sizeof p1, V "%s/signature-input.txt", dirs[i]);
        snprintf(p2, sizeof p2, V "%s/signature.txt", dirs[i]);
        char *si = read_line(p1), *sg = read_line(p2);
        check_resign(&req.m, labels[i], si, sg);
        free(si);
        free(sg);
    }
    msg_free(&req);

    /* B.4: ed25519 over the original transform request. */
    struct msgfile b4;
    msg_load(&b4, V "b4-transform/original.http");
    char si[512], sg[512];
    snprintf(si, sizeof si, "%s", msg_header(&b4, "Signature-Input"));
    snprintf(sg, sizeof sg, "%s", msg_header(&b4, "Signature"));
    check_resign(&b4.m, "transform", si, sg);
    msg_free(&b4);

    /* §4.3: the proxy's rsa-v1_5-sha256 signature (deterministic) over the forwarded request. */
    struct msgfile pr;
    msg_load(&pr, V "s4.3-multi/proxy-request-before-signing.http");
    char *line = read_line(V "s4.3-multi/final-signature-input.txt");
    char *raw = read_line(V "s4.3-multi/proxy_sig-signature-raw.b64");
    char want_sg[600];
    snprintf(want_sg, sizeof want_sg, "proxy_sig=:%s:", raw);
    check_resign(&pr.m, "proxy_sig", strstr(line, "proxy_sig="), want_sg);
    free(raw);
    free(line);
    msg_free(&pr);
}

/* Verifies the signature carried in a message file; `base_file` may be NULL. */
static int check_message(const char *file, const char *label, const char *base_file,
                         const struct httpsig_message *request)
{
    struct msgfile mf;
    msg_load(&mf, file);
    mf.m.request = request;
    int rc = check_vector(&mf.m, msg_header(&mf, "Signature-Input"), msg_header(&mf, "Signature"),
                          label, base_file);
    msg_free(&mf);
    return rc;
}

static void test_httpsig_appendix_b3_b4(void)
{
    CHECK_EQ(check_message(V "b3-ttrp/proxy-request-signed.http", "ttrp",
                           V "b3-ttrp/signature-base.txt", NULL),
             HTTPSIG_OK);
    const char *valid[] = {"original.http", "valid-1-added-header-and-query.http",
                           "valid-2-date-removed-referer-added-accept-collapsed.http",
                           "valid-3-fields-reordered.http"};
    for (size_t i = 0; i < 4; i++) {
        char p[256];
        snprintf(p, sizeof p, V "b4-transform/%s", valid[i]);
        CHECK_EQ(check_message(p, "transform", V "b4-transform/signature-base.txt", NULL),
                 HTTPSIG_OK);
    }
    CHECK_EQ(check_message(V "b4-transform/INVALID-4-method-and-authority-changed.http",
                           "transform", NULL, NULL),
             HTTPSIG_EINVALID);
    CHECK_EQ(check_message(V "b4-transform/INVALID-5-accept-order-swapped.http", "transform", NULL,
                           NULL),
             HTTPSIG_EINVALID);
}

static void test_httpsig_section_2_4_3_2_4_3(void)
{
    /* §2.4: a response signature covering request components with ;req. */
    struct msgfile req;
    msg_load(&req, V "messages/test-request.http");
    CHECK_EQ(check_message(V "s2.4-reqres/response-signed.http", "reqres",
                           V "s2.4-reqres/signature-base.txt", &req.m),
             HTTPSIG_OK);
    /* Without the request the ;req components are missing. */
    struct msgfile res;
    msg_load(&res, V "s2.4-reqres/response-signed.http");
    struct httpsig_signature s;
    const char *si = msg_header(&res, "Signature-Input"), *sg = msg_header(&res, "Signature");
    CHECK_EQ(httpsig_parse(si, strlen(si), sg, strlen(sg), NULL, &s), HTTPSIG_OK);
    char *base = NULL;
    CHECK_EQ(httpsig_base_build(&res.m, &s.input, &base, NULL), HTTPSIG_ECOMPONENT);
    httpsig_signature_cleanup(&s);
    msg_free(&res);
    msg_free(&req);

    /* §2.5 / §3.2: rsa-pss-sha512. */
    CHECK_EQ(check_message(V "s2.5-s3.2-sig1/request-signed.http", "sig1",
                           V "s2.5-s3.2-sig1/signature-base.txt", NULL),
             HTTPSIG_OK);
    /* §4.3: the proxy signature over the final request; the client's sig1 over its own request
     * (our reconstructed base), and not over the final one (the authority changed). */
    CHECK_EQ(check_message(V "s4.3-multi/final-request.http", "proxy_sig",
                           V "s4.3-multi/proxy_sig-signature-base.txt", NULL),
             HTTPSIG_OK);
    CHECK_EQ(check_message(V "s4.3-multi/client-request-signed.http", "sig1",
                           V "s4.3-multi/sig1-signature-base.RECONSTRUCTED.txt", NULL),
             HTTPSIG_OK);
    CHECK_EQ(check_message(V "s4.3-multi/final-request.http", "sig1", NULL, NULL),
             HTTPSIG_EINVALID);
}

/* Fresh signatures with the randomized algorithms (and JWK-loaded keys) verify. */
static void test_httpsig_sign_verify_round_trip(void)
{
    struct msgfile req;
    msg_load(&req, V "messages/test-request.http");
    const char *comps[] = {"@method",    "@path",          "@query",
                           "@authority", "content-digest", "@query-param;name=\"Pet\""};
    const char *keyids[] = {"test-key-ecc-p256", "test-key-rsa-pss", "test-key-ed25519",
                            "test-shared-secret", "test-key-rsa"};
    for (size_t i = 0; i < 5; i++) {
        struct httpsig_key sk = key_for(keyids[i], true), vk = key_for(keyids[i], false);
        char *params = NULL, *si = NULL, *sg = NULL;
        CHECK_EQ(httpsig_params_build(comps, 6, 1700000000, 1700000300, "n-1", keyids[i],
                                      httpsig_alg_name(sk.alg), NULL, &params),
                 HTTPSIG_OK);
        CHECK_EQ(httpsig_sign(&req.m, "sig", params, &sk, &si, &sg), HTTPSIG_OK);
        struct httpsig_signature s;
        CHECK_EQ(httpsig_parse(si, strlen(si), sg, strlen(sg), "sig", &s), HTTPSIG_OK);
        CHECK_EQ(httpsig_verify(&req.m, &s, &vk), HTTPSIG_OK);
        if (sk.alg == HTTPSIG_ALG_ECDSA_P256_SHA256 || sk.alg == HTTPSIG_ALG_ED25519) {
            CHECK_EQ(s.sig_len, 64); /* raw r||s, never DER */
        }
        /* A key of another algorithm is refused by the alg parameter. */
        struct httpsig_key other = vk;
        other.alg =
            vk.alg == HTTPSIG_ALG_ED25519 ? HTTPSIG_ALG_ECDSA_P256_SHA256 : HTTPSIG_ALG_ED25519;
        CHECK_EQ(httpsig_verify(&req.m, &s, &other), HTTPSIG_EALG);
        httpsig_signature_cleanup(&s);
        free(params);
        free(si);
        free(sg);
        EVP_PKEY_free(sk.pkey);
        EVP_PKEY_free(vk.pkey);
    }
    CHECK_STREQ(httpsig_alg_name(HTTPSIG_ALG_RSA_V1_5_SHA256), "rsa-v1_5-sha256");
    msg_free(&req);
}

static void test_httpsig_keys(void)
{
    const char *names[] = {"test-key-ecc-p256", "test-key-ed25519", "test-key-rsa-pss",
                           "test-key-rsa"};
    for (size_t i = 0; i < 4; i++) {
        char n1[128], n2[128];
        snprintf(n1, sizeof n1, "%s.priv.pem", names[i]);
        snprintf(n2, sizeof n2, "%s.pub.pem", names[i]);
        EVP_PKEY *priv = pem_key(n1), *pub = pem_key(n2), *jwk = jwk_key(names[i]);
        /* The JWK, the private PEM and the public PEM are one key pair. */
        CHECK(priv != NULL && pub != NULL && jwk != NULL);
        if (EVP_PKEY_is_a(priv, "RSA-PSS")) {
            /* B.1.2's private key carries the RSASSA-PSS OID, its public key rsaEncryption:
             * EVP_PKEY_eq calls the types different, so compare the moduli. */
            BIGNUM *m1 = NULL, *m2 = NULL;
            CHECK(EVP_PKEY_get_bn_param(priv, "n", &m1) == 1 &&
                  EVP_PKEY_get_bn_param(pub, "n", &m2) == 1 && BN_cmp(m1, m2) == 0);
            BN_free(m1);
            BN_free(m2);
        } else {
            CHECK_EQ(EVP_PKEY_eq(priv, pub), 1);
        }
        CHECK_EQ(EVP_PKEY_eq(jwk, pub), 1);
        EVP_PKEY_free(priv);
        EVP_PKEY_free(pub);
        EVP_PKEY_free(jwk);
    }
    /* A JWK private key signs what the PEM public key verifies (ed25519, deterministic). */
    struct httpsig_key jk = {.alg = HTTPSIG_ALG_ED25519, .pkey = jwk_key("test-key-ed25519")};
    struct httpsig_key pk = key_for("test-key-ed25519", false);
    unsigned char *sig = NULL;
    size_t n = 0;
    CHECK_EQ(httpsig_sign_raw(&jk, (const unsigned char *)"abc", 3, &sig, &n), HTTPSIG_OK);
    CHECK_EQ(httpsig_verify_raw(&pk, (const unsigned char *)"abc", 3, sig, n), HTTPSIG_OK);
    /* A public key cannot sign. */
    unsigned char *sig2 = NULL;
    CHECK_EQ(httpsig_sign_raw(&pk, (const unsigned char *)"abc", 3, &sig2, &n), HTTPSIG_EKEY);
    free(sig);
    EVP_PKEY_free(jk.pkey);
    EVP_PKEY_free(pk.pkey);
    /* Garbage, wrong curve / mismatched halves are refused. */
    EVP_PKEY *k = NULL;
    CHECK_EQ(httpsig_key_from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
                                  58, &k),
             HTTPSIG_EKEY);
    json_t *bad = json_pack("{s:s, s:s, s:s}", "kty", "OKP", "crv", "X25519", "x",
                            "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs");
    CHECK_EQ(httpsig_key_from_jwk(bad, &k), HTTPSIG_EKEY);
    json_decref(bad);
    bad = json_pack("{s:s, s:s, s:s, s:s}", "kty", "OKP", "crv", "Ed25519", "x",
                    "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs", "d",
                    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    CHECK_EQ(httpsig_key_from_jwk(bad, &k), HTTPSIG_EKEY);
    json_decref(bad);
    /* A P-256 key is not an ed25519 key, whatever the caller claims. */
    struct httpsig_key wrong = {.alg = HTTPSIG_ALG_ED25519,
                                .pkey = pem_key("test-key-ecc-p256.pub.pem")};
    CHECK_EQ(
        httpsig_verify_raw(&wrong, (const unsigned char *)"abc", 3, (const unsigned char *)"x", 1),
        HTTPSIG_EALG);
    EVP_PKEY_free(wrong.pkey);
}

/* Builds the base of `inner` (an Inner List text) over m; returns rc, *base when OK. */
static int base_of(const struct httpsig_message *m, const char *inner, char **base)
{
    struct sf_item in;
    *base = NULL;
    int rc = httpsig_params_parse(inner, strlen(inner), &in);
    if (rc != HTTPSIG_OK) {
        return rc;
    }
    rc = httpsig_base_build(m, &in, base, NULL);
    sf_item_cleanup(&in);
    return rc;
}

/* The first line of the base of a one-component Inner List. */
static void check_line(const struct httpsig_message *m, const char *component, const char *line)
{
    char inner[256], *base = NULL;
    snprintf(inner, sizeof inner, "(%s)", component);
    CHECK_EQ(base_of(m, inner, &base), HTTPSIG_OK);
    size_t n = strlen(line);
    CHECK(base != NULL && strncmp(base, line, n) == 0 && base[n] == '\n');
    if (base != NULL && (strncmp(base, line, n) != 0 || base[n] != '\n')) {
        fprintf(stderr, "got  %s\nwant %s\n", base, line);
    }
    free(base);
}

static void test_httpsig_rfc_section_2_examples(void)
{
    /* §2.1 field examples. */
    struct httpsig_header h[] = {
        {"Host", "www.example.com"},
        {"Date", "Tue, 20 Apr 2021 02:07:56 GMT"},
        {"X-OWS-Header", "   Leading and trailing whitespace.   "},
        {"X-Obs-Fold-Header", " Obsolete\r\n    line folding."},
        {"Cache-Control", " max-age=60"},
        {"Cache-Control", "    must-revalidate"},
        {"Example-Dict", "  a=1,    b=2;x=1;y=2,   c=(a   b   c)"},
        {"X-Empty-Header", ""},
        {"Example-Header", "value, with, lots"},
        {"Example-Header", "of, commas"},
    };
    struct httpsig_message m = {.method = "POST",
                                .scheme = "HTTPS",
                                .authority = "WWW.Example.com:443",
                                .path = "/path",
                                .query = "param=value&foo=bar&baz=batman&qux=",
                                .headers = h,
                                .n_headers = sizeof h / sizeof h[0]};
    check_line(&m, "\"x-ows-header\"", "\"x-ows-header\": Leading and trailing whitespace.");
    check_line(&m, "\"x-obs-fold-header\"", "\"x-obs-fold-header\": Obsolete line folding.");
    check_line(&m, "\"cache-control\"", "\"cache-control\": max-age=60, must-revalidate");
    check_line(&m, "\"example-dict\"", "\"example-dict\": a=1,    b=2;x=1;y=2,   c=(a   b   c)");
    check_line(&m, "\"x-empty-header\"", "\"x-empty-header\": ");
    check_line(&m, "\"example-dict\";sf", "\"example-dict\";sf: a=1, b=2;x=1;y=2, c=(a b c)");
    check_line(&m, "\"example-dict\";key=\"a\"", "\"example-dict\";key=\"a\": 1");
    check_line(&m, "\"example-dict\";key=\"b\"", "\"example-dict\";key=\"b\": 2;x=1;y=2");
    check_line(&m, "\"example-dict\";key=\"c\"", "\"example-dict\";key=\"c\": (a b c)");
    check_line(&m, "\"example-header\"", "\"example-header\": value, with, lots, of, commas");
    check_line(&m, "\"example-header\";bs",
               "\"example-header\";bs: :dmFsdWUsIHdpdGgsIGxvdHM=:, :b2YsIGNvbW1hcw==:");
    /* §2.2 derived components. */
    check_line(&m, "\"@method\"", "\"@method\": POST");
    check_line(&m, "\"@target-uri\"",
               "\"@target-uri\": https://www.example.com/path?param=value&foo=bar&baz=batman&qux=");
    check_line(&m, "\"@authority\"", "\"@authority\": www.example.com");
    check_line(&m, "\"@scheme\"", "\"@scheme\": https");
    check_line(&m, "\"@request-target\"",
               "\"@request-target\": /path?param=value&foo=bar&baz=batman&qux=");
    check_line(&m, "\"@path\"", "\"@path\": /path");
    check_line(&m, "\"@query\"", "\"@query\": ?param=value&foo=bar&baz=batman&qux=");
    check_line(&m, "\"@query-param\";name=\"baz\"", "\"@query-param\";name=\"baz\": batman");
    check_line(&m, "\"@query-param\";name=\"qux\"", "\"@query-param\";name=\"qux\": ");
    check_line(&m, "\"@query-param\";name=\"param\"", "\"@query-param\";name=\"param\": value");
    /* §2.2.7: no query at all, and an empty one, both give "?". */
    m.query = NULL;
    check_line(&m, "\"@query\"", "\"@query\": ?");
    m.query = "";
    check_line(&m, "\"@query\"", "\"@query\": ?");
    /* §2.2.8 re-encoding example. */
    m.query = "var=this%20is%20a%20big%0Avalue&bar=with+plus+whitespace&fa%C3%A7ade%22%3A%20="
              "something";
    check_line(&m, "\"@query-param\";name=\"var\"",
               "\"@query-param\";name=\"var\": this%20is%20a%20big%0Avalue");
    check_line(&m, "\"@query-param\";name=\"bar\"",
               "\"@query-param\";name=\"bar\": with%20plus%20whitespace");
    check_line(&m, "\"@query-param\";name=\"fa%C3%A7ade%22%3A%20\"",
               "\"@query-param\";name=\"fa%C3%A7ade%22%3A%20\": something");
    /* A repeated name MUST NOT be included; an absent one is missing. */
    char *base = NULL;
    m.query = "a=1&a=2";
    CHECK_EQ(base_of(&m, "(\"@query-param\";name=\"a\")", &base), HTTPSIG_ECOMPONENT);
    CHECK_EQ(base_of(&m, "(\"@query-param\";name=\"b\")", &base), HTTPSIG_ECOMPONENT);
    CHECK_EQ(base_of(&m, "(\"@query-param\")", &base), HTTPSIG_EBADCOMPONENT);
    /* http default port, IPv6 literal. */
    m.scheme = "http";
    m.authority = "[::1]:80";
    check_line(&m, "\"@authority\"", "\"@authority\": [::1]");
    m.authority = "Example.com:8080";
    check_line(&m, "\"@authority\"", "\"@authority\": example.com:8080");
    /* @status of a response. */
    struct httpsig_message r = {.status = 200, .headers = h, .n_headers = 2, .request = &m};
    check_line(&r, "\"@status\"", "\"@status\": 200");
    check_line(&r, "\"@authority\";req", "\"@authority\";req: example.com:8080");
}

static void test_httpsig_errors(void)
{
    struct httpsig_header h[] = {{"Host", "example.com"},
                                 {"X-Crlf", "a\r\nb"},
                                 {"Example-Dict", "a=1"},
                                 {"Bad-Dict", "a=1,,"}};
    struct httpsig_message m = {.method = "GET",
                                .scheme = "https",
                                .authority = "example.com",
                                .path = "/",
                                .headers = h,
                                .n_headers = 4};
    char *base = NULL;
    CHECK_EQ(base_of(&m, "(\"content-digest\")", &base), HTTPSIG_ECOMPONENT);
    CHECK_EQ(base_of(&m, "(\"@status\")", &base), HTTPSIG_ECOMPONENT);
    CHECK_EQ(base_of(&m, "(\"host\" \"host\")", &base), HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"example-dict\";sf;key=\"a\" \"example-dict\";key=\"a\";sf)", &base),
             HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"host\" \"host\";bs)", &base), HTTPSIG_OK);
    free(base);
    CHECK_EQ(base_of(&m, "(\"host\";tr)", &base), HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"host\";foo)", &base), HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"host\";sf)", &base), HTTPSIG_EBADCOMPONENT); /* type unknown */
    CHECK_EQ(base_of(&m, "(\"host\";bs;sf)", &base), HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"bad-dict\";key=\"a\")", &base), HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"example-dict\";key=\"zz\")", &base), HTTPSIG_ECOMPONENT);
    CHECK_EQ(base_of(&m, "(\"@foo\")", &base), HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"@signature-params\")", &base), HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"@method\";req)", &base), HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"@method\";name=\"x\")", &base), HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"Host\")", &base), HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"\")", &base), HTTPSIG_EBADCOMPONENT);
    CHECK_EQ(base_of(&m, "(\"x-crlf\")", &base), HTTPSIG_EMALFORMED);
    CHECK_EQ(base_of(&m, "(host)", &base), HTTPSIG_EMALFORMED); /* a Token, not a String */
    CHECK_EQ(base_of(&m, "();created=\"1\"", &base), HTTPSIG_EMALFORMED);
    CHECK_EQ(base_of(&m, "();keyid=1", &base), HTTPSIG_EMALFORMED);

    struct httpsig_signature s;
    CHECK_EQ(httpsig_parse(NULL, 0, "a=:AA==:", 8, NULL, &s), HTTPSIG_EMISSING);
    CHECK_EQ(httpsig_parse("a=()", 4, "b=:AA==:", 8, NULL, &s), HTTPSIG_EMISSING);
    CHECK_EQ(httpsig_parse("a=(", 3, "a=:AA==:", 8, NULL, &s), HTTPSIG_EMALFORMED);
    CHECK_EQ(httpsig_parse("a=()", 4, "a=\"x\"", 5, NULL, &s), HTTPSIG_EMALFORMED);
    CHECK_EQ(httpsig_parse("a=1", 3, "a=:AA==:", 8, NULL, &s), HTTPSIG_EMALFORMED);
    /* An unknown alg parses, and verification refuses it. */
    const char *si = "a=(\"host\");alg=\"rsa-v1_5-sha1\"";
    CHECK_EQ(httpsig_parse(si, strlen(si), "a=:AA==:", 8, NULL, &s), HTTPSIG_OK);
    CHECK_EQ(s.params.alg_id, HTTPSIG_ALG_NONE);
    struct httpsig_key k = {
        .alg = HTTPSIG_ALG_HMAC_SHA256, .secret = (const unsigned char *)"k", .secret_len = 1};
    CHECK_EQ(httpsig_verify(&m, &s, &k), HTTPSIG_EALG);
    httpsig_signature_cleanup(&s);
    /* Wrong-length signatures are invalid, not errors of another kind. */
    si = "a=(\"host\")";
    CHECK_EQ(httpsig_parse(si, strlen(si), "a=:AA==:", 8, NULL, &s), HTTPSIG_OK);
    CHECK_EQ(httpsig_verify(&m, &s, &k), HTTPSIG_EINVALID);
    httpsig_signature_cleanup(&s);
    /* Over-long fields. */
    char *big = malloc(SF_MAX_INPUT_BYTES + 2);
    memset(big, 'a', SF_MAX_INPUT_BYTES + 1);
    CHECK_EQ(httpsig_parse(big, SF_MAX_INPUT_BYTES + 1, "a=:AA==:", 8, NULL, &s), HTTPSIG_ELIMIT);
    free(big);
    /* Signing: bad label, alg parameter not the key's. */
    char *o1 = NULL, *o2 = NULL;
    CHECK_EQ(httpsig_sign(&m, "Bad", "()", &k, &o1, &o2), HTTPSIG_EMALFORMED);
    CHECK_EQ(httpsig_sign(&m, "a", "();alg=\"ed25519\"", &k, &o1, &o2), HTTPSIG_EALG);
    CHECK_EQ(httpsig_sign(&m, "a", "(\"host\")", &k, &o1, &o2), HTTPSIG_OK);
    CHECK(o1 != NULL && strcmp(o1, "a=(\"host\")") == 0);
    free(o1);
    free(o2);
    /* Composing: components quoted, a bad one refused. */
    const char *good[] = {"@method", "\"content-digest\";req", "@query-param;name=\"x\""};
    char *params = NULL;
    CHECK_EQ(httpsig_params_build(good, 3, 5, -1, NULL, "k", NULL, "t", &params), HTTPSIG_OK);
    CHECK_STREQ(params,
                "(\"@method\" \"content-digest\";req \"@query-param\";name=\"x\");created=5;"
                "keyid=\"k\";tag=\"t\"");
    free(params);
    const char *bad[] = {"Bad Name"};
    CHECK_EQ(httpsig_params_build(bad, 1, -1, -1, NULL, NULL, NULL, NULL, &params),
             HTTPSIG_EBADCOMPONENT);
    const char *ok1[] = {"@path"};
    CHECK_EQ(httpsig_params_build(ok1, 1, -1, -1, "bad\nnonce", NULL, NULL, NULL, &params),
             HTTPSIG_EMALFORMED);
    CHECK_STREQ(httpsig_strerror(HTTPSIG_EINVALID), "signature_invalid");
    CHECK_STREQ(httpsig_strerror(HTTPSIG_ECOMPONENT), "signature_component_missing");
}

int main(void)
{
    load_secret();
    RUN(test_httpsig_appendix_b2);
    RUN(test_httpsig_params_exposed);
    RUN(test_httpsig_deterministic_resign);
    RUN(test_httpsig_appendix_b3_b4);
    RUN(test_httpsig_section_2_4_3_2_4_3);
    RUN(test_httpsig_sign_verify_round_trip);
    RUN(test_httpsig_keys);
    RUN(test_httpsig_rfc_section_2_examples);
    RUN(test_httpsig_errors);
    return check_summary();
}
