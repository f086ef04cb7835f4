/* SPDX-License-Identifier: MIT */
/* RFC 9421 request signatures against the real roostd (DESIGN §6.2): requests signed by the npm
 * http-message-signatures package (tests/js/httpsig_sign_request.cjs) and by our own signer are
 * accepted on publish, claim, ack and release; every refusal answers 401 with its precise code;
 * the policy is per tenant; keys are tenant-scoped; /api/v1/keys/server publishes the data-dir
 * signing key. A missing node or package is a failure, never a skip (scripts/js_deps.sh). */
#include <openssl/evp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/limits.h"
#include "harness/harness.h"
#include "harness/sse_client.h"
#include "proto/digest.h"
#include "proto/httpsig.h"
#include "proto/sf.h"

#include "common/banned.h"

#define KEYS TESTS_DIR "/data/rfc9421/keys"
#define SIGN_SCRIPT TESTS_DIR "/js/httpsig_sign_request.cjs"

static struct roostd d;
static char host[96];
static char *tok1, *tok1b, *tok2, *tok3, *adm1, *adm2;
static int nonce_serial;

/* ---- a request, signed and sent byte-exact ---- */

struct sreq {
    const char *method;
    char target[512]; /* path and query as sent */
    char *body;       /* NULL: none */
    const char *token;
    char digest[256];
    char *sig_input, *signature;
};

static void sreq_init(struct sreq *r, const char *method, const char *target, const char *body,
                      const char *token)
{
    memset(r, 0, sizeof *r);
    r->method = method;
    snprintf(r->target, sizeof r->target, "%s", target);
    r->body = body ? strdup(body) : NULL;
    r->token = token;
    if (body) {
        char *cd = NULL;
        CHECK_EQ(digest_content_field(body, strlen(body), DIGEST_SHA256, &cd), DIGEST_OK);
        snprintf(r->digest, sizeof r->digest, "%s", cd ? cd : "");
        free(cd);
    }
}

static void sreq_cleanup(struct sreq *r)
{
    free(r->body);
    free(r->sig_input);
    free(r->signature);
    memset(r, 0, sizeof *r);
}

static char *next_nonce(void)
{
    return h_fmt("n-%d-%lld", ++nonce_serial, (long long)time(NULL));
}

/* Components a valid request covers: the required set for its shape. */
static size_t std_components(const struct sreq *r, const char **out)
{
    size_t n = 0;
    out[n++] = "@method";
    out[n++] = "@path";
    if (strchr(r->target, '?')) {
        out[n++] = "@query";
    }
    out[n++] = "@authority";
    out[n++] = "authorization";
    if (r->body) {
        out[n++] = "content-digest";
    }
    return n;
}

struct sign_opts {
    int64_t created, expires; /* 0: now, now + 300 */
    const char *nonce;        /* NULL: a fresh one */
    bool omit_authorization;
};

/* Signs with our own signer (httpsig_sign). */
static void sign_c(struct sreq *r, const char *keyid, const struct httpsig_key *k,
                   const struct sign_opts *o)
{
    static const struct sign_opts none = {0};
    o = o ? o : &none;
    char path[512];
    snprintf(path, sizeof path, "%s", r->target);
    char *q = strchr(path, '?');
    if (q) {
        *q++ = '\0';
    }
    char *authz = h_fmt("Bearer %s", r->token);
    struct httpsig_header h[3] = {{"Host", host}, {"Authorization", authz}};
    size_t nh = 2;
    if (r->body) {
        h[nh++] = (struct httpsig_header){"Content-Digest", r->digest};
    }
    struct httpsig_message m = {.method = r->method,
                                .scheme = "http",
                                .authority = host,
                                .path = path,
                                .query = q,
                                .headers = h,
                                .n_headers = nh};
    const char *comp[8];
    size_t n = std_components(r, comp);
    if (o->omit_authorization) {
        for (size_t i = 0; i < n; i++) {
            if (strcmp(comp[i], "authorization") == 0) {
                comp[i] = comp[--n];
            }
        }
    }
    int64_t now = (int64_t)time(NULL);
    char *nonce = o->nonce ? strdup(o->nonce) : next_nonce();
    char *params = NULL;
    CHECK_EQ(httpsig_params_build(comp, n, o->created ? o->created : now,
                                  o->expires ? o->expires : now + 300, nonce, keyid, NULL, NULL,
                                  &params),
             HTTPSIG_OK);
    CHECK_EQ(httpsig_sign(&m, "sig1", params, k, &r->sig_input, &r->signature), HTTPSIG_OK);
    free(params);
    free(nonce);
    free(authz);
}

/* Signs with the npm package through node. */
static void sign_npm(struct sreq *r, const char *keyid, const char *alg, const char *key_file)
{
    const char *comp[8];
    size_t n = std_components(r, comp);
    json_t *fields = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(fields, json_string(comp[i]));
    }
    char *url = h_fmt("http://%s%s", host, r->target);
    char *authz = h_fmt("Bearer %s", r->token);
    json_t *headers = json_pack("{s:s, s:s}", "Host", host, "Authorization", authz);
    if (r->body) {
        json_object_set_new(headers, "Content-Digest", json_string(r->digest));
    }
    int64_t now = (int64_t)time(NULL);
    char *nonce = next_nonce();
    json_t *req =
        json_pack("{s:s, s:s, s:o, s:I, s:I, s:s, s:{s:s, s:s, s:o}}", "alg", alg, "keyid", keyid,
                  "fields", fields, "created", (json_int_t)now, "expires", (json_int_t)(now + 300),
                  "nonce", nonce, "message", "method", r->method, "url", url, "headers", headers);
    if (strcmp(alg, "hmac-sha256") == 0) {
        char *secret = NULL;
        size_t len = 0;
        CHECK(h_read_file(KEYS "/test-shared-secret.b64", &secret, &len) == 0);
        while (secret && len > 0 && (secret[len - 1] == '\n' || secret[len - 1] == '\r')) {
            secret[--len] = '\0';
        }
        json_object_set_new(req, "secretB64", json_string(secret ? secret : ""));
        free(secret);
    } else {
        json_object_set_new(req, "keyFile", json_string(key_file));
    }
    char in_path[] = "/tmp/roost-sig-XXXXXX";
    int fd = mkstemp(in_path);
    char *text = json_dumps(req, JSON_COMPACT);
    CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    if (fd >= 0) {
        close(fd);
    }
    const char *node = getenv("NODE") ? getenv("NODE") : "node";
    char *cmd = h_fmt("%s %s < %s", node, SIGN_SCRIPT, in_path);
    FILE *p = popen(cmd, "r");
    char buf[8192];
    size_t got = p ? fread(buf, 1, sizeof buf - 1, p) : 0;
    buf[got] = '\0';
    int status = p ? pclose(p) : -1;
    CHECK_EQ(status, 0);
    json_t *ans = status == 0 ? json_loads(buf, 0, NULL) : NULL;
    CHECK(ans != NULL);
    if (ans == NULL) {
        fprintf(stderr, "node signer failed (is node installed? scripts/js_deps.sh): %s\n", buf);
    } else {
        r->sig_input = strdup(h_str(ans, "signatureInput"));
        r->signature = strdup(h_str(ans, "signature"));
    }
    json_decref(ans);
    unlink(in_path);
    free(cmd);
    free(text);
    json_decref(req);
    free(nonce);
    free(authz);
    free(url);
}

/* Sends r byte-exact; returns the status, *out (may be NULL) the JSON body. */
static long send_req(const struct sreq *r, json_t **out)
{
    size_t blen = r->body ? strlen(r->body) : 0;
    char *extra = h_fmt("%s%s%s%s%s%s%s%s%s", r->body ? "Content-Type: application/json\r\n" : "",
                        r->digest[0] ? "Content-Digest: " : "", r->digest,
                        r->digest[0] ? "\r\n" : "", r->sig_input ? "Signature-Input: " : "",
                        r->sig_input ? r->sig_input : "", r->sig_input ? "\r\n" : "",
                        r->signature ? "Signature: " : "", r->signature ? r->signature : "");
    char *extra2 = h_fmt("%s%s", extra, r->signature ? "\r\n" : "");
    free(extra);
    extra = extra2;
    char *raw = h_fmt("%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n%s"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                      r->method, r->target, host, r->token, extra, blen, r->body ? r->body : "");
    struct raw_reply rep;
    long status = -1;
    if (out) {
        *out = NULL;
    }
    if (raw_exchange(&d, raw, strlen(raw), 1, 15000, &rep) == 0 && rep.n_responses >= 1) {
        status = rep.status[0];
        const char *b = strstr(rep.buf, "\r\n\r\n");
        if (out && b) {
            *out = json_loads(b + 4, JSON_DISABLE_EOF_CHECK, NULL);
        }
    }
    raw_reply_cleanup(&rep);
    free(raw);
    free(extra);
    return status;
}

/* Sends and checks the 401 code. */
static void expect_code(const char *label, const struct sreq *r, long want_status,
                        const char *want_code)
{
    json_t *j = NULL;
    long st = send_req(r, &j);
    CHECK_CASE(label, st == want_status);
    const char *code = h_error_code(j);
    if (want_code) {
        CHECK_CASE(label, code && strcmp(code, want_code) == 0);
    }
    if (st != want_status || (want_code && (!code || strcmp(code, want_code) != 0))) {
        fprintf(stderr, "[%s] status %ld code %s (want %ld %s)\n", label, st,
                code ? code : "(none)", want_status, want_code ? want_code : "-");
    }
    json_decref(j);
}

/* ---- keys ---- */

static struct httpsig_key load_priv(const char *alg, const char *file, unsigned char *secret_buf)
{
    struct httpsig_key k = {.alg = httpsig_alg_from_name(alg)};
    char *text = NULL;
    size_t len = 0;
    if (k.alg == HTTPSIG_ALG_HMAC_SHA256) {
        CHECK(h_read_file(KEYS "/test-shared-secret.b64", &text, &len) == 0);
        while (text && len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) {
            len--;
        }
        unsigned char *raw = NULL;
        size_t n = 0;
        CHECK(text && sf_base64_decode(text, len, &raw, &n) == 0 && n == 64);
        memcpy(secret_buf, raw, n <= 64 ? n : 64);
        free(raw);
        k.secret = secret_buf;
        k.secret_len = 64;
    } else {
        CHECK(h_read_file(file, &text, &len) == 0);
        CHECK_EQ(httpsig_key_from_pem(text, len, &k.pkey), HTTPSIG_OK);
    }
    free(text);
    return k;
}

static char *read_text(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    CHECK(h_read_file(path, &text, &len) == 0);
    while (text && len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) {
        text[--len] = '\0';
    }
    return text;
}

static long add_key(const char *admin, const char *key_id, const char *agent, const char *alg,
                    json_t *material, json_t **out)
{
    bool hmac = strcmp(alg, "hmac-sha256") == 0;
    json_t *body = json_pack("{s:s, s:s, s:s, s:o}", "key_id", key_id, "agent_id", agent, "alg",
                             alg, hmac ? "secret" : "public_key", material);
    return h_callj(d.http, "POST", admin, body, out, "/api/v1/admin/keys");
}

static json_t *pem(const char *name)
{
    char *path = h_fmt(KEYS "/%s.pub.pem", name);
    char *text = NULL;
    size_t len = 0;
    CHECK(h_read_file(path, &text, &len) == 0);
    free(path);
    json_t *s = json_string(text ? text : "");
    free(text);
    return s;
}

static json_t *public_jwk(const char *name)
{
    char *path = h_fmt(KEYS "/%s.jwk.json", name);
    json_t *j = json_load_file(path, 0, NULL);
    free(path);
    CHECK(j != NULL);
    json_object_del(j, "d");
    return j;
}

static void register_keys(void)
{
    char *secret_text = read_text(KEYS "/test-shared-secret.b64");
    json_t *secret = json_string(secret_text ? secret_text : "");
    free(secret_text);
    struct {
        const char *admin, *id, *agent, *alg;
        json_t *material;
    } keys[] = {
        {adm1, "a1-ed", "a1", "ed25519", pem("test-key-ed25519")},
        {adm1, "a1-ec", "a1", "ecdsa-p256-sha256", public_jwk("test-key-ecc-p256")},
        {adm1, "a1-hmac", "a1", "hmac-sha256", json_incref(secret)},
        {adm1, "a1-rsa", "a1", "rsa-v1_5-sha256", pem("test-key-rsa")},
        {adm1, "a1-pss", "a1", "rsa-pss-sha512", pem("test-key-rsa-pss")},
        {adm1, "a1-rev", "a1", "ed25519", pem("test-key-ed25519")},
        {adm1, "a2-ed", "a2", "ed25519", pem("test-key-ed25519")},
        {adm1, "prod-ed", "*", "ed25519", public_jwk("test-key-ed25519")},
        {adm1, "prod-ec", "*", "ecdsa-p256-sha256", pem("test-key-ecc-p256")},
        {adm1, "prod-hmac", "*", "hmac-sha256", json_incref(secret)},
        {adm2, "t2-ed", "a1", "ed25519", pem("test-key-ed25519")},
        {adm2, "t2-prod", "*", "ed25519", pem("test-key-ed25519")},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *out = NULL;
        long st =
            add_key(keys[i].admin, keys[i].id, keys[i].agent, keys[i].alg, keys[i].material, &out);
        CHECK_CASE(keys[i].id, st == 201);
        CHECK_CASE(keys[i].id, out && strcmp(h_str(out, "key_id"), keys[i].id) == 0 &&
                                   json_is_null(json_object_get(out, "revoked_at")));
        json_decref(out);
    }
    json_decref(secret);
}

static void test_admin_keys_validation_and_isolation(void)
{
    json_t *out = NULL;
    CHECK_EQ(add_key(adm1, "a1-ed", "a1", "ed25519", pem("test-key-ed25519"), &out), 409);
    CHECK_STREQ(h_error_code(out), "key_exists");
    json_decref(out);
    CHECK_EQ(add_key(adm1, "bad", "a1", "ed25519", json_string("not a pem"), &out), 400);
    CHECK_STREQ(h_error_code(out), "invalid_public_key");
    json_decref(out);
    /* An EC key registered as ed25519 does not fit. */
    CHECK_EQ(add_key(adm1, "bad", "a1", "ed25519", pem("test-key-ecc-p256"), &out), 400);
    CHECK_STREQ(h_error_code(out), "invalid_public_key");
    json_decref(out);
    CHECK_EQ(add_key(adm1, "bad", "a1", "dsa", pem("test-key-ed25519"), &out), 400);
    CHECK_STREQ(h_error_code(out), "invalid_alg");
    json_decref(out);
    CHECK_EQ(add_key(adm1, "bad", "a1", "hmac-sha256", json_string("c2hvcnQ="), &out), 400);
    CHECK_STREQ(h_error_code(out), "invalid_public_key");
    json_decref(out);
    CHECK_EQ(add_key(adm1, "bad/id", "a1", "ed25519", pem("test-key-ed25519"), &out), 400);
    CHECK_STREQ(h_error_code(out), "invalid_key_id");
    json_decref(out);
    /* A private key is refused: only public halves are registered. */
    char *priv = read_text(KEYS "/test-key-ed25519.priv.pem");
    CHECK_EQ(add_key(adm1, "bad", "a1", "ed25519", json_string(priv), &out), 400);
    free(priv);
    CHECK_STREQ(h_error_code(out), "invalid_public_key");
    json_decref(out);
    /* A consume token is not an admin token. */
    CHECK_EQ(add_key(tok1, "x", "a1", "ed25519", pem("test-key-ed25519"), &out), 403);
    json_decref(out);

    /* Listing: metadata only, never the secret; paginated; per tenant. */
    CHECK_EQ(h_callj(d.http, "GET", adm1, NULL, &out, "/api/v1/admin/keys?limit=4"), 200);
    json_t *keys = json_object_get(out, "keys");
    CHECK_EQ(json_array_size(keys), 4);
    CHECK(json_is_string(json_object_get(out, "next")));
    char *text = json_dumps(out, 0);
    CHECK(text && strstr(text, "secret") == NULL && strstr(text, "BEGIN") == NULL);
    free(text);
    char *next = h_fmt("%s", h_str(out, "next") ? h_str(out, "next") : "");
    json_decref(out);
    CHECK_EQ(h_callj(d.http, "GET", adm1, NULL, &out, "/api/v1/admin/keys?limit=100&next=%s", next),
             200);
    free(next);
    CHECK_EQ(json_array_size(json_object_get(out, "keys")), 6); /* 10 keys in t1 */
    CHECK(json_is_null(json_object_get(out, "next")));
    json_decref(out);
    CHECK_EQ(h_callj(d.http, "GET", adm2, NULL, &out, "/api/v1/admin/keys"), 200);
    CHECK_EQ(json_array_size(json_object_get(out, "keys")), 2);
    json_decref(out);

    /* Another tenant's key id answers exactly as a missing one. */
    json_t *a = NULL, *b = NULL;
    CHECK_EQ(h_callj(d.http, "POST", adm1, NULL, &a, "/api/v1/admin/keys/t2-ed/revoke"), 404);
    CHECK_EQ(h_callj(d.http, "POST", adm1, NULL, &b, "/api/v1/admin/keys/nope/revoke"), 404);
    CHECK_STREQ(h_error_code(a), "key_not_found");
    CHECK_STREQ(h_error_code(b), "key_not_found");
    json_decref(a);
    json_decref(b);
}

/* ---- accepted ---- */

static char last_event[64], last_lease[64];

/* Signs r with the key keyid names: through the npm package (sign_npm) or the C signer. */
static void sign_either(struct sreq *r, bool npm, const char *keyid, const char *alg,
                        const char *key_file)
{
    if (npm) {
        sign_npm(r, keyid, alg, key_file);
        return;
    }
    unsigned char sec[64];
    struct httpsig_key k = load_priv(alg, key_file, sec);
    sign_c(r, keyid, &k, NULL);
    EVP_PKEY_free(k.pkey);
}

static void publish_signed(const char *label, bool npm, const char *keyid, const char *alg,
                           const char *key_file)
{
    struct sreq r;
    sreq_init(&r, "POST", "/api/v1/events",
              "{\"recipients\":[\"a1\"],\"payload\":{\"signed\":true}}", tok1);
    sign_either(&r, npm, keyid, alg, key_file);
    json_t *j = NULL;
    long st = send_req(&r, &j);
    CHECK_CASE(label, st == 201);
    if (st != 201) {
        fprintf(stderr, "[%s] publish: %ld %s\n", label, st, h_error_code(j));
    }
    json_decref(j);
    sreq_cleanup(&r);
}

static void claim_signed(const char *label, bool npm, const char *keyid, const char *alg,
                         const char *key_file)
{
    struct sreq r;
    sreq_init(&r, "POST", "/api/v1/agents/a1/inbox/claim", "{\"limit\":1,\"lease_s\":60}", tok1);
    sign_either(&r, npm, keyid, alg, key_file);
    json_t *j = NULL;
    long st = send_req(&r, &j);
    CHECK_CASE(label, st == 200);
    json_t *ev = h_at(json_object_get(j, "events"), 0);
    CHECK_CASE(label, ev != NULL);
    if (st != 200 || !ev) {
        fprintf(stderr, "[%s] claim: %ld %s\n", label, st, h_error_code(j));
    }
    snprintf(last_event, sizeof last_event, "%s", ev ? h_str(ev, "event_id") : "");
    snprintf(last_lease, sizeof last_lease, "%s", ev ? h_str(ev, "lease_token") : "");
    json_decref(j);
    sreq_cleanup(&r);
}

static void ack_signed(const char *label, bool npm, const char *keyid, const char *alg,
                       const char *key_file)
{
    struct sreq r;
    char *target = h_fmt("/api/v1/agents/a1/inbox/%s/ack", last_event);
    char *body = h_fmt("{\"lease_token\":\"%s\"}", last_lease);
    sreq_init(&r, "POST", target, body, tok1);
    sign_either(&r, npm, keyid, alg, key_file);
    json_t *j = NULL;
    long st = send_req(&r, &j);
    CHECK_CASE(label, st == 200);
    if (st != 200) {
        fprintf(stderr, "[%s] ack: %ld %s\n", label, st, h_error_code(j));
    }
    json_decref(j);
    sreq_cleanup(&r);
    free(target);
    free(body);
}

/* t1 is on `all`: the ticket is asked for with a signed POST, and the EventSource-style GET
 * that uses it carries neither token nor signature. The same GET with the token is refused. */
static void test_ticket_subscribe_under_policy_all(void)
{
    struct sreq r;
    unsigned char sec[64];
    struct httpsig_key k = load_priv("ed25519", KEYS "/test-key-ed25519.priv.pem", sec);
    sreq_init(&r, "POST", "/api/v1/agents/a1/subscribe/ticket", NULL, tok1);
    expect_code("unsigned ticket request", &r, 401, "signature_missing");
    sign_c(&r, "a1-ed", &k, NULL);
    json_t *j = NULL;
    CHECK_EQ(send_req(&r, &j), 201);
    const char *ticket = h_str(j, "ticket");
    CHECK(ticket != NULL);
    struct sse s;
    char *path = h_fmt("/api/v1/agents/a1/subscribe?ticket=%s", ticket ? ticket : "");
    CHECK_EQ(sse_open(&s, &d, path, NULL, NULL, 0), 200);
    sse_close(&s);
    CHECK_EQ(sse_open(&s, &d, "/api/v1/agents/a1/subscribe", tok1, NULL, 0), 401);
    sse_close(&s);
    free(path);
    json_decref(j);
    sreq_cleanup(&r);
    EVP_PKEY_free(k.pkey);
}

static void test_npm_signed_requests_accepted(void)
{
    const char *ed = KEYS "/test-key-ed25519.priv.pem", *ec = KEYS "/test-key-ecc-p256.priv.pem";
    publish_signed("npm publish ed25519", true, "prod-ed", "ed25519", ed);
    claim_signed("npm claim ecdsa", true, "a1-ec", "ecdsa-p256-sha256", ec);
    ack_signed("npm ack hmac", true, "a1-hmac", "hmac-sha256", NULL);
    publish_signed("npm publish ecdsa", true, "prod-ec", "ecdsa-p256-sha256", ec);
    claim_signed("npm claim hmac", true, "a1-hmac", "hmac-sha256", NULL);
    ack_signed("npm ack ed25519", true, "a1-ed", "ed25519", ed);
    publish_signed("npm publish hmac", true, "prod-hmac", "hmac-sha256", NULL);
    claim_signed("npm claim ed25519", true, "a1-ed", "ed25519", ed);
    ack_signed("npm ack ecdsa", true, "a1-ec", "ecdsa-p256-sha256", ec);
}

static void test_c_signed_requests_accepted(void)
{
    const char *ed = KEYS "/test-key-ed25519.priv.pem", *rsa = KEYS "/test-key-rsa.priv.pem";
    publish_signed("C publish hmac", false, "prod-hmac", "hmac-sha256", NULL);
    claim_signed("C claim rsa", false, "a1-rsa", "rsa-v1_5-sha256", rsa);
    /* release then ack, as the agent would; a GET with a query is signed too. */
    struct sreq r;
    unsigned char sec[64];
    struct httpsig_key k = load_priv("ed25519", ed, sec);
    char *target = h_fmt("/api/v1/agents/a1/inbox/%s/release", last_event);
    char *body = h_fmt("{\"lease_token\":\"%s\"}", last_lease);
    sreq_init(&r, "POST", target, body, tok1);
    sign_c(&r, "a1-ed", &k, NULL);
    expect_code("C release", &r, 200, NULL);
    sreq_cleanup(&r);
    sreq_init(&r, "GET", "/api/v1/agents/a1/inbox?after_cursor=0&limit=5", NULL, tok1);
    sign_c(&r, "a1-ed", &k, NULL);
    expect_code("C inbox read with query", &r, 200, NULL);
    sreq_cleanup(&r);
    struct httpsig_key kp = load_priv("rsa-pss-sha512", KEYS "/test-key-rsa-pss.priv.pem", sec);
    sreq_init(&r, "GET", "/api/v1/agents/a1/state", NULL, tok1);
    sign_c(&r, "a1-pss", &kp, NULL);
    expect_code("C state read rsa-pss", &r, 200, NULL);
    sreq_cleanup(&r);
    EVP_PKEY_free(kp.pkey);
    claim_signed("C claim ed25519", false, "a1-ed", "ed25519", ed);
    ack_signed("C ack ed25519", false, "a1-ed", "ed25519", ed);
    EVP_PKEY_free(k.pkey);
    free(target);
    free(body);
}

/* Jobs of op="parse_body" so far (request bodies parsed on a scan reader): 0 before the first,
 * -1 without an answer. */
static long long parse_body_jobs(void)
{
    char *m = h_scrape(d.http, NULL);
    if (m == NULL) {
        return -1;
    }
    double v = h_sample(m, "roost_store_op_duration_seconds_count{op=\"parse_body\"}");
    free(m);
    return v < 0 ? 0 : (long long)v;
}

/* A signed body of over 64 KiB is parsed on a scan reader (request.c), after the signature
 * check: its digest is checked first, over the same bytes, so a tampered one is refused without
 * a parse, and an intact one is parsed once and published whole. */
static void test_big_body_signed(void)
{
    const char *ed = KEYS "/test-key-ed25519.priv.pem";
    unsigned char sec[64];
    struct httpsig_key k = load_priv("ed25519", ed, sec);
    char blob[1001];
    memset(blob, 'q', sizeof blob - 1);
    blob[sizeof blob - 1] = '\0';
    json_t *events = json_array();
    for (int i = 0; i < 200; i++) {
        json_array_append_new(events, json_pack("{s:[s], s:{s:i, s:s}}", "recipients", "a1",
                                                "payload", "i", i, "b", blob));
    }
    json_t *doc = json_pack("{s:o}", "events", events);
    char *body = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    CHECK(body && strlen(body) > 64 * 1024);
    long long p0 = parse_body_jobs();
    CHECK(p0 >= 0);

    struct sreq r;
    sreq_init(&r, "POST", "/api/v1/events", body, tok1);
    sign_c(&r, "prod-ed", &k, NULL);
    char *q = strrchr(r.body, 'q');
    *q = 'r'; /* the digest left as signed */
    expect_code("big tampered body", &r, 401, "digest_mismatch");
    sreq_cleanup(&r);
    CHECK_EQ(parse_body_jobs(), p0);

    sreq_init(&r, "POST", "/api/v1/events", body, tok1);
    sign_c(&r, "prod-ed", &k, NULL);
    json_t *j = NULL;
    CHECK_EQ(send_req(&r, &j), 201);
    CHECK_EQ(json_array_size(json_object_get(j, "events")), 200);
    json_decref(j);
    sreq_cleanup(&r);
    CHECK_EQ(parse_body_jobs(), p0 + 1);
    EVP_PKEY_free(k.pkey);
    free(body);
}

/* ---- refused ---- */

static void test_refusals_have_precise_codes(void)
{
    const char *ed = KEYS "/test-key-ed25519.priv.pem";
    unsigned char sec[64];
    struct httpsig_key k = load_priv("ed25519", ed, sec);
    struct sreq r;
    int64_t now = (int64_t)time(NULL);

    /* t1 requires signatures: none at all. */
    sreq_init(&r, "POST", "/api/v1/agents/a1/inbox/claim", "{\"limit\":1}", tok1);
    expect_code("no signature", &r, 401, "signature_missing");
    sreq_cleanup(&r);
    sreq_init(&r, "GET", "/api/v1/agents/a1/inbox", NULL, tok1);
    expect_code("no signature on GET (policy all)", &r, 401, "signature_missing");
    sreq_cleanup(&r);

    /* Malformed: not a Dictionary; Signature-Input without Signature; a label without its
     * Signature member; a signature that is not a Byte Sequence. */
    static const struct {
        const char *label, *input, *sig;
    } bad[] = {
        {"garbage input", "(((", "sig1=:AAAA:"},
        {"input only", "sig1=(\"@method\");keyid=\"a1-ed\"", NULL},
        {"label mismatch", "sig1=(\"@method\");keyid=\"a1-ed\"", "sig2=:AAAA:"},
        {"signature not bytes", "sig1=(\"@method\");keyid=\"a1-ed\"", "sig1=\"x\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sreq_init(&r, "GET", "/api/v1/agents/a1/inbox", NULL, tok1);
        r.sig_input = strdup(bad[i].input);
        r.signature = bad[i].sig ? strdup(bad[i].sig) : NULL;
        expect_code(bad[i].label, &r, 401, "signature_malformed");
        sreq_cleanup(&r);
    }

    /* A signature for /release replayed on /ack: the path is covered. */
    publish_signed("setup publish", false, "prod-ed", "ed25519", ed);
    claim_signed("setup claim", false, "a1-ed", "ed25519", ed);
    char *rel = h_fmt("/api/v1/agents/a1/inbox/%s/release", last_event);
    char *body = h_fmt("{\"lease_token\":\"%s\"}", last_lease);
    sreq_init(&r, "POST", rel, body, tok1);
    sign_c(&r, "a1-ed", &k, NULL);
    snprintf(r.target, sizeof r.target, "/api/v1/agents/a1/inbox/%s/ack", last_event);
    expect_code("release signature on ack", &r, 401, "signature_invalid");
    sreq_cleanup(&r);

    /* Tampered query. */
    sreq_init(&r, "GET", "/api/v1/agents/a1/inbox?after_cursor=0", NULL, tok1);
    sign_c(&r, "a1-ed", &k, NULL);
    snprintf(r.target, sizeof r.target, "/api/v1/agents/a1/inbox?after_cursor=1");
    expect_code("tampered query", &r, 401, "signature_invalid");
    sreq_cleanup(&r);

    /* Tampered body, digest left as signed. */
    sreq_init(&r, "POST", rel, body, tok1);
    sign_c(&r, "a1-ed", &k, NULL);
    free(r.body);
    r.body = h_fmt("{\"lease_token\":\"%s\",\"delay_s\":9}", last_lease);
    expect_code("tampered body", &r, 401, "digest_mismatch");
    sreq_cleanup(&r);
    /* Covered content-digest but no header sent. */
    sreq_init(&r, "POST", rel, body, tok1);
    sign_c(&r, "a1-ed", &k, NULL);
    r.digest[0] = '\0';
    expect_code("digest header dropped", &r, 401, "digest_missing");
    sreq_cleanup(&r);

    /* Authorization changed: another valid token of the same tenant and scope. */
    sreq_init(&r, "POST", rel, body, tok1);
    sign_c(&r, "a1-ed", &k, NULL);
    r.token = tok1b;
    expect_code("authorization changed", &r, 401, "signature_invalid");
    sreq_cleanup(&r);

    /* authorization not covered. */
    sreq_init(&r, "POST", rel, body, tok1);
    struct sign_opts no_authz = {.omit_authorization = true};
    sign_c(&r, "a1-ed", &k, &no_authz);
    json_t *j = NULL;
    CHECK_EQ(send_req(&r, &j), 401);
    CHECK_STREQ(h_error_code(j), "signature_component_missing");
    CHECK_STREQ(h_str(json_object_get(j, "error"), "component"), "authorization");
    json_decref(j);
    sreq_cleanup(&r);

    /* Expired, and a window over 300 s. */
    struct sign_opts old = {.created = now - 400, .expires = now - 100};
    sreq_init(&r, "POST", rel, body, tok1);
    sign_c(&r, "a1-ed", &k, &old);
    expect_code("expired", &r, 401, "signature_expired");
    sreq_cleanup(&r);
    struct sign_opts wide = {.created = now, .expires = now + 301};
    sreq_init(&r, "POST", rel, body, tok1);
    sign_c(&r, "a1-ed", &k, &wide);
    expect_code("window > 300 s", &r, 401, "signature_window_too_long");
    sreq_cleanup(&r);
    struct sign_opts future = {.created = now + 120, .expires = now + 400};
    sreq_init(&r, "POST", rel, body, tok1);
    sign_c(&r, "a1-ed", &k, &future);
    expect_code("created in the future", &r, 401, "signature_expired");
    sreq_cleanup(&r);

    /* Replay: the same signed request twice. */
    sreq_init(&r, "GET", "/api/v1/agents/a1/inbox?after_cursor=0", NULL, tok1);
    sign_c(&r, "a1-ed", &k, NULL);
    expect_code("first use", &r, 200, NULL);
    expect_code("replayed nonce", &r, 401, "nonce_reused");
    sreq_cleanup(&r);

    /* Wrong agent's key, another tenant's key, an unknown key, a producer key on an agent route,
     * an agent key on publish. */
    static const struct {
        const char *label, *keyid, *code;
    } keys[] = {
        {"wrong agent", "a2-ed", "key_wrong_agent"},
        {"other tenant", "t2-ed", "key_unknown"},
        {"unknown", "nope", "key_unknown"},
        {"producer key on agent route", "prod-ed", "key_wrong_agent"},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        sreq_init(&r, "POST", rel, body, tok1);
        sign_c(&r, keys[i].keyid, &k, NULL);
        expect_code(keys[i].label, &r, 401, keys[i].code);
        sreq_cleanup(&r);
    }
    sreq_init(&r, "POST", "/api/v1/events", "{\"recipients\":[\"a1\"],\"payload\":{}}", tok1);
    sign_c(&r, "a1-ed", &k, NULL);
    expect_code("agent key on publish", &r, 401, "key_wrong_agent");
    sreq_cleanup(&r);

    /* Revoked key: works before, refused after. */
    sreq_init(&r, "GET", "/api/v1/agents/a1/inbox", NULL, tok1);
    sign_c(&r, "a1-rev", &k, NULL);
    expect_code("before revocation", &r, 200, NULL);
    sreq_cleanup(&r);
    json_t *rv = NULL;
    CHECK_EQ(h_callj(d.http, "POST", adm1, NULL, &rv, "/api/v1/admin/keys/a1-rev/revoke"), 200);
    CHECK(rv && json_is_string(json_object_get(rv, "revoked_at")));
    json_decref(rv);
    sreq_init(&r, "GET", "/api/v1/agents/a1/inbox", NULL, tok1);
    sign_c(&r, "a1-rev", &k, NULL);
    expect_code("revoked key", &r, 401, "key_revoked");
    sreq_cleanup(&r);

    /* A refused signature never burnt the nonce: the release itself still works when signed. */
    sreq_init(&r, "POST", rel, body, tok1);
    sign_c(&r, "a1-ed", &k, NULL);
    expect_code("release after refusals", &r, 200, NULL);
    sreq_cleanup(&r);

    free(rel);
    free(body);
    EVP_PKEY_free(k.pkey);
}

/* Replay around expiry (issue 13): `expires` is accepted up to 60 s in the past (clock skew), so
 * the nonce must be remembered until expires + 60 s, not until expires. Time is driven by signing
 * with created/expires in the past instead of waiting. */
static long publish_with(const struct httpsig_key *k, const struct sign_opts *o, struct sreq *r)
{
    sreq_init(r, "POST", "/api/v1/events", "{\"recipients\":[\"a1\"],\"payload\":{\"replay\":1}}",
              tok1);
    sign_c(r, "prod-ed", k, o);
    return send_req(r, NULL);
}

/* a1's head: how many events it ever received (read signed with a1's key). */
static int64_t a1_head(void)
{
    struct sreq r;
    sreq_init(&r, "GET", "/api/v1/agents/a1/inbox?limit=1", NULL, tok1);
    unsigned char sec[64];
    struct httpsig_key k = load_priv("ed25519", KEYS "/test-key-ed25519.priv.pem", sec);
    sign_c(&r, "a1-ed", &k, NULL);
    EVP_PKEY_free(k.pkey);
    json_t *j = NULL;
    CHECK_EQ(send_req(&r, &j), 200);
    int64_t head = j ? (int64_t)h_int(j, "head") : -1;
    json_decref(j);
    sreq_cleanup(&r);
    return head;
}

/* Waits until the scheduler finished one more tick (it prunes nonces in every tick, once a second
 * by default): a lease of 1 s taken now expires, and the tick that returns it logs lease_expired
 * after pruning. */
static bool wait_for_prune_pass(void)
{
    int before = roostd_log_count(&d, "lease_expired=");
    CHECK(h_publish(d.http, tok2, "a1", json_pack("{s:b}", "tick", 1), NULL, NULL) > 0);
    json_t *evs = h_claim(d.http, tok2, "a1", 1, 1, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    json_decref(evs);
    bool ok;
    H_WAIT_UNTIL(ok, 10000, roostd_log_count(&d, "lease_expired=") > before);
    return ok;
}

static void test_replay_refused_until_expiry_plus_skew(void)
{
    unsigned char sec[64];
    struct httpsig_key k = load_priv("ed25519", KEYS "/test-key-ed25519.priv.pem", sec);
    int64_t now = (int64_t)time(NULL);
    struct sreq r;
    int64_t before = a1_head();

    /* Before expiry. */
    struct sign_opts fresh = {.created = now - 5, .expires = now + 55};
    CHECK_EQ(publish_with(&k, &fresh, &r), 201);
    expect_code("replay before expiry", &r, 401, "nonce_reused");
    sreq_cleanup(&r);

    /* At expiry. */
    struct sign_opts at = {.created = now - 60, .expires = now};
    CHECK_EQ(publish_with(&k, &at, &r), 201);
    expect_code("replay at expiry", &r, 401, "nonce_reused");
    sreq_cleanup(&r);

    /* After expiry, inside the skew allowance: accepted once, then every replay is refused, also
     * after a scheduler pass pruned the nonces that are really gone. */
    struct sign_opts past = {.created = now - 100, .expires = now - 40};
    CHECK_EQ(publish_with(&k, &past, &r), 201);
    for (int i = 0; i < 3; i++) {
        expect_code("replay after expiry", &r, 401, "nonce_reused");
    }
    CHECK(wait_for_prune_pass());
    expect_code("replay after expiry and a prune pass", &r, 401, "nonce_reused");
    sreq_cleanup(&r);
    /* Three publishes went through, not one per replay. */
    CHECK_EQ(a1_head(), before + 3);

    /* Past the skew allowance the signature itself is refused. */
    struct sign_opts dead = {.created = now - 130, .expires = now - 70};
    sreq_init(&r, "POST", "/api/v1/events", "{\"recipients\":[\"a1\"],\"payload\":{}}", tok1);
    sign_c(&r, "prod-ed", &k, &dead);
    expect_code("past the skew", &r, 401, "signature_expired");
    sreq_cleanup(&r);
    EVP_PKEY_free(k.pkey);
}

static void test_policy_per_tenant(void)
{
    const char *ed = KEYS "/test-key-ed25519.priv.pem";
    unsigned char sec[64];
    struct httpsig_key k = load_priv("ed25519", ed, sec);
    struct sreq r;
    /* t2 is off: unsigned requests pass... */
    sreq_init(&r, "POST", "/api/v1/agents/a1/inbox/claim", "{\"limit\":1}", tok2);
    expect_code("t2 unsigned claim", &r, 200, NULL);
    sreq_cleanup(&r);
    /* ...but a signature sent is verified all the same. */
    sreq_init(&r, "POST", "/api/v1/agents/a1/inbox/claim", "{\"limit\":1}", tok2);
    sign_c(&r, "t2-ed", &k, NULL);
    expect_code("t2 signed claim", &r, 200, NULL);
    sreq_cleanup(&r);
    sreq_init(&r, "POST", "/api/v1/agents/a1/inbox/claim", "{\"limit\":1}", tok2);
    sign_c(&r, "a1-ed", &k, NULL); /* t1's key id */
    expect_code("t2 with t1's key", &r, 401, "key_unknown");
    sreq_cleanup(&r);
    /* Admin routes rely on their tokens even in t1. */
    json_t *out = NULL;
    CHECK_EQ(h_callj(d.http, "GET", adm1, NULL, &out, "/api/v1/admin/agents"), 200);
    json_decref(out);
    EVP_PKEY_free(k.pkey);
}

static void test_policy_mutations(void)
{
    /* The global default (signatures.require = mutations) applies to t3: reads pass unsigned. */
    struct sreq r;
    sreq_init(&r, "GET", "/api/v1/agents/a1/inbox", NULL, tok3);
    expect_code("t3 unsigned read", &r, 200, NULL);
    sreq_cleanup(&r);
    sreq_init(&r, "POST", "/api/v1/agents/a1/inbox/claim", "{\"limit\":1}", tok3);
    expect_code("t3 unsigned claim", &r, 401, "signature_missing");
    sreq_cleanup(&r);
}

/* ---- SIGHUP reloads the policy ---- */

static int count_in_log(const struct roostd *n, const char *needle)
{
    char *path = h_fmt("%s/roostd.log", n->dir), *data = NULL;
    size_t len = 0;
    int c = 0;
    if (h_read_file(path, &data, &len) == 0) {
        for (const char *p = data; (p = strstr(p, needle)) != NULL; p++) {
            c++;
        }
    }
    free(data);
    free(path);
    return c;
}

static bool write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        return false;
    }
    fputs(text, f);
    return fclose(f) == 0;
}

static bool reload(struct roostd *n, const char *conf, const char *text)
{
    int before = count_in_log(n, "config reloaded");
    if (!write_file(conf, text) || kill(n->pid, SIGHUP) != 0) {
        return false;
    }
    bool ok;
    H_WAIT_UNTIL(ok, 10000, count_in_log(n, "config reloaded") > before);
    return ok;
}

static long unsigned_status(struct roostd *n, const char *method, const char *path,
                            const char *body, const char *token, char *code, size_t code_len)
{
    json_t *j = NULL;
    long st =
        h_callj(n->http, method, token, body ? json_loads(body, 0, NULL) : NULL, &j, "%s", path);
    snprintf(code, code_len, "%s", h_error_code(j) ? h_error_code(j) : "");
    json_decref(j);
    return st;
}

static void test_policy_reloads_on_sighup(void)
{
    char dir[] = "/tmp/roost-sigconf-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *conf = h_fmt("%s/roostd.conf", dir);
    CHECK(write_file(conf, "signatures.tenant.t5 = off\n"));
    char *opt = h_fmt("--config=%s", conf);
    const char *sets[] = {opt, NULL};
    struct roostd n;
    if (roostd_start(&n, NULL, sets) != 0) {
        CHECK(!"roostd with a config file starts");
        free(opt);
        free(conf);
        rmdir(dir);
        return;
    }
    char *tok = h_token(&n, "t5", "agent:a1:consume");
    char code[64];
    const char *claim = "/api/v1/agents/a1/inbox/claim", *inbox = "/api/v1/agents/a1/inbox";
    CHECK_EQ(unsigned_status(&n, "POST", claim, "{\"limit\":1}", tok, code, sizeof code), 200);
    CHECK(reload(&n, conf, "signatures.tenant.t5 = mutations\n"));
    CHECK(count_in_log(&n, "signatures.tenant.*") >= 1);
    CHECK_EQ(unsigned_status(&n, "POST", claim, "{\"limit\":1}", tok, code, sizeof code), 401);
    CHECK_STREQ(code, "signature_missing");
    CHECK_EQ(unsigned_status(&n, "GET", inbox, NULL, tok, code, sizeof code), 200);
    /* The tenant entry gone, the global policy applies. */
    CHECK(reload(&n, conf, "signatures.require = all\n"));
    CHECK_EQ(unsigned_status(&n, "GET", inbox, NULL, tok, code, sizeof code), 401);
    CHECK_STREQ(code, "signature_missing");
    CHECK(reload(&n, conf, "signatures.require = off\n"));
    CHECK_EQ(unsigned_status(&n, "GET", inbox, NULL, tok, code, sizeof code), 200);
    roostd_finish(&n);
    unlink(conf);
    rmdir(dir);
    free(tok);
    free(opt);
    free(conf);
}

/* ---- roostd's own key ---- */

static void test_server_key_published_as_jwks(void)
{
    struct h_response resp;
    CHECK(h_request(d.http, "GET", "/api/v1/keys/server", NULL, NULL, 0, NULL, &resp) == 0);
    CHECK_EQ(resp.status, 200);
    json_t *jwk = h_at(json_object_get(resp.json, "keys"), 0);
    CHECK(jwk != NULL);
    CHECK_STREQ(h_str(jwk, "kty"), "OKP");
    CHECK_STREQ(h_str(jwk, "crv"), "Ed25519");
    CHECK(h_str(jwk, "kid") != NULL && strlen(h_str(jwk, "kid")) == 43);
    CHECK(json_object_get(jwk, "d") == NULL);
    /* A signature made with the data-dir key verifies with the published one. */
    char *path = h_fmt("%s/%s", d.dir, ROOST_SIGNING_KEY_FILE);
    char *text = NULL;
    size_t len = 0;
    CHECK(h_read_file(path, &text, &len) == 0);
    EVP_PKEY *priv = NULL, *pub = NULL;
    CHECK_EQ(httpsig_key_from_pem(text ? text : "", len, &priv), HTTPSIG_OK);
    CHECK_EQ(jwk ? httpsig_key_from_jwk(jwk, &pub) : -1, HTTPSIG_OK);
    struct httpsig_key ks = {.alg = HTTPSIG_ALG_ED25519, .pkey = priv};
    struct httpsig_key kv = {.alg = HTTPSIG_ALG_ED25519, .pkey = pub};
    unsigned char *sig = NULL;
    size_t sig_len = 0;
    static const unsigned char msg[] = "roost webhook delivery";
    CHECK_EQ(httpsig_sign_raw(&ks, msg, sizeof msg, &sig, &sig_len), HTTPSIG_OK);
    CHECK_EQ(httpsig_verify_raw(&kv, msg, sizeof msg, sig, sig_len), HTTPSIG_OK);
    free(sig);
    EVP_PKEY_free(priv);
    EVP_PKEY_free(pub);
    free(text);
    free(path);
    h_response_cleanup(&resp);
    /* The key file is private. */
    char *kp = h_fmt("%s/%s", d.dir, ROOST_SIGNING_KEY_FILE);
    struct stat stt;
    CHECK(stat(kp, &stt) == 0 && (stt.st_mode & 0077) == 0);
    free(kp);
}

int main(void)
{
    h_init();
    static const char *const sets[] = {"signatures.require=mutations", "signatures.tenant.t1=all",
                                       "signatures.tenant.t2=off", NULL};
    if (roostd_start(&d, NULL, sets) != 0) {
        CHECK(!"roostd starts");
        return h_summary();
    }
    snprintf(host, sizeof host, "%s:%d", d.host, d.port);
    const char *scope = "agent:a1:consume agent:*:publish";
    tok1 = h_token(&d, "t1", scope);
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I}", "tenant", "t1", "sub", "other", "scope",
                               scope, "exp", (json_int_t)time(NULL) + 3600);
    tok1b = h_token_claims(&d, claims);
    json_decref(claims);
    tok2 = h_token(&d, "t2", scope);
    tok3 = h_token(&d, "t3", scope);
    adm1 = h_token(&d, "t1", "tenant:admin");
    adm2 = h_token(&d, "t2", "tenant:admin");

    register_keys();
    RUN(test_admin_keys_validation_and_isolation);
    RUN(test_npm_signed_requests_accepted);
    RUN(test_c_signed_requests_accepted);
    RUN(test_big_body_signed);
    RUN(test_ticket_subscribe_under_policy_all);
    RUN(test_refusals_have_precise_codes);
    RUN(test_replay_refused_until_expiry_plus_skew);
    RUN(test_policy_per_tenant);
    RUN(test_policy_mutations);
    RUN(test_server_key_published_as_jwks);
    RUN(test_policy_reloads_on_sighup);

    CHECK_EQ(roostd_stop(&d), 0);
    if (check_failed) {
        roostd_print_log(&d);
    }
    roostd_remove_dir(&d);
    free(tok1);
    free(tok1b);
    free(tok2);
    free(tok3);
    free(adm1);
    free(adm2);
    return h_summary();
}
