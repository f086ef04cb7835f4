/* SPDX-License-Identifier: MIT */
/* Cross-check of src/proto/httpsig.c with an independent implementation, the npm package
 * http-message-signatures (tests/js/httpsig_interop.cjs, run with node from tests/js/node_modules):
 * for each algorithm (a) a request it signs verifies here and its signature base equals ours
 * byte for byte, (b) a request signed here verifies there; both sides reject a request whose
 * covered path was changed afterwards. A missing node or package is a failure, never a skip
 * (scripts/js_deps.sh installs them). Runs from tests/ (ctest's working directory). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/check.h"
#include "proto/digest.h"
#include "proto/httpsig.h"

#include "common/banned.h"

#define KEYS_DIR "data/rfc9421/keys"
#define SCRIPT "js/httpsig_interop.cjs"

static const char *body = "{\"lease_token\":\"lt_01\"}";
static const char *fields[] = {"@method",    "@path",          "@query",
                               "@authority", "content-digest", "authorization"};
#define N_FIELDS (sizeof fields / sizeof fields[0])

/* Runs the node script with `req` on stdin; returns its parsed JSON answer or NULL. */
static json_t *run_node(const json_t *req)
{
    char in_path[] = "/tmp/roost-interop-XXXXXX";
    int fd = mkstemp(in_path);
    if (fd < 0) {
        return NULL;
    }
    char *text = json_dumps(req, JSON_COMPACT);
    size_t n = strlen(text);
    bool wrote = write(fd, text, n) == (ssize_t)n;
    close(fd);
    free(text);
    json_t *out = NULL;
    if (wrote) {
        const char *node = getenv("NODE") != NULL ? getenv("NODE") : "node";
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s %s < %s", node, SCRIPT, in_path);
        FILE *p = popen(cmd, "r");
        if (p != NULL) {
            char buf[16384];
            size_t got = fread(buf, 1, sizeof buf - 1, p);
            buf[got] = '\0';
            int status = pclose(p);
            json_error_t jerr;
            if (status == 0) {
                out = json_loads(buf, 0, &jerr);
            } else {
                fprintf(stderr, "node exited with status %d: %s\n", status, buf);
            }
        }
    }
    unlink(in_path);
    return out;
}

struct req {
    char path[128];
    char digest[256];
    struct httpsig_header h[6];
    struct httpsig_message m;
};

static void req_init(struct req *r, const char *path)
{
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    char *d = NULL;
    CHECK_EQ(digest_content_field(body, strlen(body), DIGEST_SHA256, &d), DIGEST_OK);
    snprintf(r->digest, sizeof r->digest, "%s", d);
    free(d);
    r->h[0] = (struct httpsig_header){"Host", "roost.example"};
    r->h[1] = (struct httpsig_header){"Content-Type", "application/json"};
    r->h[2] = (struct httpsig_header){"Content-Digest", r->digest};
    r->h[3] = (struct httpsig_header){"Authorization", "Bearer eyJhbGciOiJFZERTQSJ9.e30.c2ln"};
    r->m = (struct httpsig_message){.method = "POST",
                                    .scheme = "https",
                                    .authority = "roost.example",
                                    .path = r->path,
                                    .query = "wait_s=0&x=a%20b",
                                    .headers = r->h,
                                    .n_headers = 4};
}

static void set_header(struct req *r, const char *name, const char *value)
{
    r->h[r->m.n_headers++] = (struct httpsig_header){name, value};
}

/* The request as the package's message object. */
static json_t *message_json(const struct req *r)
{
    char url[512];
    snprintf(url, sizeof url, "https://%s%s?%s", r->m.authority, r->m.path, r->m.query);
    json_t *h = json_object();
    for (size_t i = 0; i < r->m.n_headers; i++) {
        json_object_set_new(h, r->h[i].name, json_string(r->h[i].value));
    }
    return json_pack("{s:s, s:s, s:o}", "method", r->m.method, "url", url, "headers", h);
}

static json_t *base_request(const char *op, const char *alg, const char *keyid, json_t *msg)
{
    json_t *f = json_array();
    for (size_t i = 0; i < N_FIELDS; i++) {
        json_array_append_new(f, json_string(fields[i]));
    }
    char keys[4096];
    if (getcwd(keys, sizeof keys - sizeof KEYS_DIR - 2) == NULL) {
        keys[0] = '\0';
    }
    strncat(keys, "/" KEYS_DIR, sizeof keys - strlen(keys) - 1);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:[s,s,s,s,s], s:o}", "op", op, "alg", alg,
                     "keyid", keyid, "keysDir", keys, "label", "sig1", "fields", f, "params",
                     "created", "expires", "keyid", "nonce", "alg", "message", msg);
}

static struct httpsig_key load_key(const char *alg, const char *keyid, bool priv,
                                   unsigned char *secret_buf)
{
    struct httpsig_key k = {.alg = httpsig_alg_from_name(alg)};
    char path[256];
    if (k.alg == HTTPSIG_ALG_HMAC_SHA256) {
        snprintf(path, sizeof path, KEYS_DIR "/test-shared-secret.b64");
    } else {
        snprintf(path, sizeof path, KEYS_DIR "/%s.%s.pem", keyid, priv ? "priv" : "pub");
    }
    FILE *f = fopen(path, "rb");
    char buf[8192];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f != NULL) {
        fclose(f);
    }
    if (k.alg == HTTPSIG_ALG_HMAC_SHA256) {
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) {
            n--;
        }
        unsigned char *raw = NULL;
        size_t rawlen = 0;
        CHECK(sf_base64_decode(buf, n, &raw, &rawlen) == 0 && rawlen == 64);
        memcpy(secret_buf, raw, rawlen <= 64 ? rawlen : 64);
        free(raw);
        k.secret = secret_buf;
        k.secret_len = 64;
    } else {
        CHECK_EQ(httpsig_key_from_pem(buf, n, &k.pkey), HTTPSIG_OK);
    }
    return k;
}

/* (a) the package signs, we verify (and build the same base). */
static void package_signs(const char *alg, const char *keyid, int64_t now)
{
    struct req r;
    req_init(&r, "/api/v1/agents/a1/events/evt_1/ack");
    json_t *q = base_request("sign", alg, keyid, message_json(&r));
    json_object_set_new(q, "created", json_integer(now));
    json_object_set_new(q, "expires", json_integer(now + 300));
    json_object_set_new(q, "nonce", json_string("n-interop-1"));
    json_t *a = run_node(q);
    json_decref(q);
    CHECK(a != NULL);
    if (a == NULL) {
        fprintf(stderr, "%s: the package did not sign\n", alg);
        return;
    }
    const char *si = json_string_value(json_object_get(a, "signatureInput"));
    const char *sg = json_string_value(json_object_get(a, "signature"));
    const char *their_base = json_string_value(json_object_get(a, "base"));
    CHECK(si != NULL && sg != NULL && their_base != NULL);
    struct httpsig_signature s;
    unsigned char sec[64];
    struct httpsig_key k = load_key(alg, keyid, false, sec);
    if (si != NULL && sg != NULL &&
        httpsig_parse(si, strlen(si), sg, strlen(sg), "sig1", &s) == HTTPSIG_OK) {
        CHECK_STREQ(s.params.nonce, "n-interop-1");
        CHECK_STREQ(s.params.alg, alg);
        CHECK(s.params.has_expires && s.params.expires == now + 300);
        char *base = NULL;
        CHECK_EQ(httpsig_base_build(&r.m, &s.input, &base, NULL), HTTPSIG_OK);
        CHECK_STREQ(base, their_base);
        free(base);
        int rc = httpsig_verify(&r.m, &s, &k);
        CHECK_EQ(rc, HTTPSIG_OK);
        if (rc != HTTPSIG_OK) {
            fprintf(stderr, "%s: package signature rejected: %s\n", alg, httpsig_strerror(rc));
        }
        /* The same signature on another path is refused. */
        snprintf(r.path, sizeof r.path, "/api/v1/agents/a1/events/evt_1/release");
        CHECK_EQ(httpsig_verify(&r.m, &s, &k), HTTPSIG_EINVALID);
        httpsig_signature_cleanup(&s);
        printf("ok: %s signed by http-message-signatures verifies in roost\n", alg);
    } else {
        CHECK(!"package signature does not parse");
    }
    EVP_PKEY_free(k.pkey);
    json_decref(a);
}

/* (b) we sign, the package verifies. */
static void roost_signs(const char *alg, const char *keyid, int64_t now)
{
    struct req r;
    req_init(&r, "/api/v1/agents/a1/events/evt_1/ack");
    unsigned char sec[64];
    struct httpsig_key k = load_key(alg, keyid, true, sec);
    char *params = NULL, *si = NULL, *sg = NULL;
    CHECK_EQ(httpsig_params_build(fields, N_FIELDS, now, now + 300, "n-interop-2", keyid, alg, NULL,
                                  &params),
             HTTPSIG_OK);
    CHECK_EQ(httpsig_sign(&r.m, "sig1", params, &k, &si, &sg), HTTPSIG_OK);
    if (si == NULL || sg == NULL) {
        free(params);
        EVP_PKEY_free(k.pkey);
        return;
    }
    /* The package wants the member values as Signature-Input / Signature headers. */
    set_header(&r, "Signature-Input", si);
    set_header(&r, "Signature", sg);
    json_t *q = base_request("verify", alg, keyid, message_json(&r));
    json_t *a = run_node(q);
    json_decref(q);
    CHECK(a != NULL && json_is_true(json_object_get(a, "verified")));
    if (a != NULL && !json_is_true(json_object_get(a, "verified"))) {
        char *t = json_dumps(a, 0);
        fprintf(stderr, "%s: the package rejected roost's signature: %s\n", alg, t);
        free(t);
    } else if (a != NULL) {
        printf("ok: %s signed by roost verifies in http-message-signatures\n", alg);
    }
    json_decref(a);
    /* Moved to another path, the package must not accept it either. */
    snprintf(r.path, sizeof r.path, "/api/v1/agents/a1/events/evt_1/release");
    q = base_request("verify", alg, keyid, message_json(&r));
    a = run_node(q);
    json_decref(q);
    CHECK(a != NULL && !json_is_true(json_object_get(a, "verified")));
    json_decref(a);
    free(params);
    free(si);
    free(sg);
    EVP_PKEY_free(k.pkey);
}

int main(void)
{
    static const char *const algs[][2] = {
        {"ed25519", "test-key-ed25519"},       {"ecdsa-p256-sha256", "test-key-ecc-p256"},
        {"hmac-sha256", "test-shared-secret"}, {"rsa-pss-sha512", "test-key-rsa-pss"},
        {"rsa-v1_5-sha256", "test-key-rsa"},
    };
    int64_t now = (int64_t)time(NULL);
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++) {
        package_signs(algs[i][0], algs[i][1], now);
        roost_signs(algs[i][0], algs[i][1], now);
    }
    return check_summary();
}
