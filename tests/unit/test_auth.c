/* SPDX-License-Identifier: MIT */
/* Unit tests of src/server/auth.c: key file creation and reload, bearer token checks (signature,
 * exp/nbf/iat with 60 s skew, tenant, sub, scope), the scope matching of DESIGN §6.1, and the
 * identity-provider keys (JWK Set, HS256 secret, issuer, audience, key selection by kid). */
#include <errno.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/limits.h"
#include "harness/check.h"
#include "proto/jwt.h"
#include "roost/roost_error.h"
#include "server/auth.h"
#include "server/config.h"

#include "common/banned.h"

#define NOW_MS INT64_C(1700000000000)
#define NOW_S INT64_C(1700000000)

static char tmpdir[256];
static char datadir[320];
static char keypath[400];
static struct auth *auth;
static EVP_PKEY *key; /* the same key as auth's, read back from the file */

static char *bearer_raw(EVP_PKEY *k, const char *header, const char *claims)
{
    char *h = NULL, *c = NULL, *s = NULL, *out = NULL;
    unsigned char sig[64];
    size_t siglen = sizeof sig;
    jwt_b64url_encode((const unsigned char *)header, strlen(header), &h);
    jwt_b64url_encode((const unsigned char *)claims, strlen(claims), &c);
    size_t n = strlen(h) + 1 + strlen(c);
    char *input = malloc(n + 1);
    snprintf(input, n + 1, "%s.%s", h, c);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (EVP_DigestSignInit(ctx, NULL, NULL, NULL, k) == 1 &&
        EVP_DigestSign(ctx, sig, &siglen, (unsigned char *)input, n) == 1 &&
        jwt_b64url_encode(sig, siglen, &s) == 0) {
        size_t tn = 7 + n + 1 + strlen(s) + 1;
        out = malloc(tn);
        snprintf(out, tn, "Bearer %s.%s", input, s);
    }
    EVP_MD_CTX_free(ctx);
    free(h);
    free(c);
    free(s);
    free(input);
    return out;
}

/* "Bearer <jwt>" for claims given as JSON text, signed by jwt_sign_eddsa. */
static char *bearer_k(EVP_PKEY *k, const char *claims_json)
{
    json_error_t jerr;
    json_t *claims = json_loads(claims_json, 0, &jerr);
    if (claims == NULL) {
        fprintf(stderr, "bad test claims %s: %s\n", claims_json, jerr.text);
        return NULL;
    }
    char *tok = NULL, *out = NULL;
    if (jwt_sign_eddsa(claims, k, NULL, &tok) == 0) {
        size_t n = strlen(tok) + 8;
        out = malloc(n);
        snprintf(out, n, "Bearer %s", tok);
    }
    free(tok);
    json_decref(claims);
    return out;
}

static char *bearer(const char *claims_json)
{
    return bearer_k(key, claims_json);
}

/* Authenticates claims at NOW_MS; returns the rc. */
static int auth_claims(const char *claims_json, struct auth_principal *p)
{
    char *h = bearer(claims_json);
    struct auth_principal scratch;
    int rc = auth_authenticate(auth, h, NOW_MS, p != NULL ? p : &scratch);
    free(h);
    return rc;
}

static void test_auth_key_file_created_private_and_reloaded(void)
{
    struct stat st;
    CHECK(stat(datadir, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(stat(keypath, &st) == 0 && S_ISREG(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);

    char err[256] = "";
    EVP_PKEY *again = auth_load_key(keypath, false, err, sizeof err);
    CHECK(again != NULL);
    CHECK(EVP_PKEY_eq(again, key) == 1);
    EVP_PKEY_free(again);

    /* A second auth_new on the same data dir uses the same key: its tokens verify across. */
    struct config cfg;
    CHECK(config_init(&cfg) == 0);
    CHECK(config_set(&cfg, "data_dir", datadir, err, sizeof err) == 0);
    struct auth *a2 = NULL;
    CHECK(auth_new(&cfg, &a2, err, sizeof err) == ROOST_OK);
    char *h = bearer("{\"tenant\":\"t1\",\"exp\":1700000300}");
    struct auth_principal p;
    CHECK(auth_authenticate(a2, h, NOW_MS, &p) == ROOST_OK);
    free(h);
    auth_free(a2);

    /* The explicit auth.key_file is used as given. */
    CHECK(config_set(&cfg, "auth.key_file", keypath, err, sizeof err) == 0);
    CHECK(config_set(&cfg, "data_dir", "/nonexistent/never/created", err, sizeof err) == 0);
    CHECK(auth_new(&cfg, &a2, err, sizeof err) == ROOST_OK);
    auth_free(a2);
    config_cleanup(&cfg);
    auth_free(NULL);
}

static void test_auth_load_key_errors(void)
{
    char err[256] = "";
    char path[512];
    snprintf(path, sizeof path, "%s/missing.pem", tmpdir);
    CHECK(auth_load_key(path, false, err, sizeof err) == NULL);
    CHECK(strstr(err, "missing.pem") != NULL);
    CHECK(access(path, F_OK) != 0); /* not created without `create` */

    /* An explicit auth.key_file that does not exist is an error, not a fresh key. */
    struct config cfg;
    struct auth *a = NULL;
    CHECK(config_init(&cfg) == 0);
    CHECK(config_set(&cfg, "auth.key_file", path, err, sizeof err) == 0);
    CHECK(auth_new(&cfg, &a, err, sizeof err) == ROOST_EIO && a == NULL);
    config_cleanup(&cfg);

    /* A PEM of another key type is refused. */
    snprintf(path, sizeof path, "%s/ec.pem", tmpdir);
    EVP_PKEY *ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    FILE *fp = fopen(path, "w");
    CHECK(fp != NULL && PEM_write_PrivateKey(fp, ec, NULL, NULL, 0, NULL, NULL) == 1);
    fclose(fp);
    err[0] = '\0';
    CHECK(auth_load_key(path, true, err, sizeof err) == NULL);
    CHECK(strstr(err, "Ed25519") != NULL);
    EVP_PKEY_free(ec);

    /* Garbage is refused. */
    snprintf(path, sizeof path, "%s/garbage.pem", tmpdir);
    fp = fopen(path, "w");
    fputs("not a key\n", fp);
    fclose(fp);
    CHECK(auth_load_key(path, true, err, sizeof err) == NULL);

    /* Create then re-read gives the same key; no temporary file is left behind. */
    snprintf(path, sizeof path, "%s/fresh.pem", tmpdir);
    EVP_PKEY *k1 = auth_load_key(path, true, err, sizeof err);
    EVP_PKEY *k2 = auth_load_key(path, true, err, sizeof err);
    CHECK(k1 != NULL && k2 != NULL && EVP_PKEY_eq(k1, k2) == 1);
    EVP_PKEY_free(k1);
    EVP_PKEY_free(k2);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q tmp", tmpdir);
    CHECK(system(cmd) != 0);
}

static void test_auth_valid_token_fills_principal(void)
{
    struct auth_principal p;
    CHECK(auth_claims("{\"tenant\":\"acme.prod-1_x\",\"sub\":\"svc-42\",\"exp\":1700000300,"
                      "\"iat\":1700000000,\"nbf\":1699999999,"
                      "\"scope\":\"agent:a1:read agent:project_a.*:consume tenant:admin other:x\"}",
                      &p) == ROOST_OK);
    CHECK_STREQ(p.tenant_id, "acme.prod-1_x");
    CHECK_STREQ(p.sub, "svc-42");
    CHECK_EQ(p.exp_ms, INT64_C(1700000300000));
    CHECK_EQ(p.n_scopes, 3);
    CHECK(p.scopes[0].action == AUTH_READ);
    CHECK_STREQ(p.scopes[0].selector, "a1");
    CHECK(p.scopes[1].action == AUTH_CONSUME);
    CHECK_STREQ(p.scopes[1].selector, "project_a.*");
    CHECK(p.scopes[2].action == AUTH_ADMIN);
    CHECK_STREQ(p.scopes[2].selector, "");

    /* sub and scope are optional; no scope means no grants. */
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1700000300}", &p) == ROOST_OK);
    CHECK_STREQ(p.sub, "");
    CHECK_EQ(p.n_scopes, 0);
    CHECK(!auth_allows(&p, AUTH_READ, "a1"));

    /* Fractional NumericDate is accepted. */
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1700000300.5}", &p) == ROOST_OK);
    CHECK_EQ(p.exp_ms, INT64_C(1700000300500));
}

/* roostd allocates a request without zeroing its principal (~17 KiB): authentication must leave
 * no field from whatever the memory held before, above all no ticket nonce, which would make a
 * plain subscribe claim a nonce that is not its own. Fresh and cached verification alike. */
static void test_auth_principal_has_no_stale_fields(void)
{
    static const char claims[] = "{\"tenant\":\"t\",\"exp\":1700000300,"
                                 "\"scope\":\"agent:stale.a:read\"}";
    for (int pass = 0; pass < 2; pass++) {
        struct auth_principal p;
        memset(&p, 0xA5, sizeof p);
        CHECK(auth_claims(claims, &p) == ROOST_OK);
        CHECK_EQ(p.ticket_nonce[0], '\0');
        CHECK_EQ(p.ticket_exp_ms, 0);
        CHECK_EQ(p.n_scopes, 1);
        memset(&p, 0xA5, sizeof p);
        auth_principal_clear(&p);
        CHECK_STREQ(p.tenant_id, "");
        CHECK_EQ(p.ticket_nonce[0], '\0');
        CHECK_EQ(p.ticket_exp_ms, 0);
    }
}

static void test_auth_time_claims_with_skew(void)
{
    /* exp: valid until exp + 60 s, exclusive. */
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1699999941}", NULL) == ROOST_OK);
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1699999940}", NULL) == ROOST_EUNAUTHENTICATED);
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1699990000}", NULL) == ROOST_EUNAUTHENTICATED);
    /* exp is required and numeric. */
    CHECK(auth_claims("{\"tenant\":\"t\"}", NULL) == ROOST_EUNAUTHENTICATED);
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":\"1700000300\"}", NULL) == ROOST_EUNAUTHENTICATED);
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":null}", NULL) == ROOST_EUNAUTHENTICATED);
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":true}", NULL) == ROOST_EUNAUTHENTICATED);
    /* A far-future exp saturates instead of overflowing. */
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1e300}", NULL) == ROOST_OK);
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":-1e300}", NULL) == ROOST_EUNAUTHENTICATED);

    /* nbf: usable from nbf - 60 s. */
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1700000300,\"nbf\":1700000060}", NULL) ==
          ROOST_OK);
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1700000300,\"nbf\":1700000061}", NULL) ==
          ROOST_EUNAUTHENTICATED);
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1700000300,\"nbf\":1700003600}", NULL) ==
          ROOST_EUNAUTHENTICATED);
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1700000300,\"nbf\":\"x\"}", NULL) ==
          ROOST_EUNAUTHENTICATED);

    /* iat: optional, numeric, not from the future beyond the skew. */
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1700000300,\"iat\":1700000060}", NULL) ==
          ROOST_OK);
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1700000300,\"iat\":1700000061}", NULL) ==
          ROOST_EUNAUTHENTICATED);
    CHECK(auth_claims("{\"tenant\":\"t\",\"exp\":1700000300,\"iat\":[]}", NULL) ==
          ROOST_EUNAUTHENTICATED);
}

/* A verified token is cached, but the cache never outlives the token's own time window. */
static void test_auth_cached_token_still_expires(void)
{
    char *h = bearer("{\"tenant\":\"t\",\"exp\":1700000100,\"nbf\":1700000000}");
    struct auth_principal p;
    CHECK(auth_authenticate(auth, h, NOW_MS, &p) == ROOST_OK);
    CHECK(auth_authenticate(auth, h, NOW_MS, &p) == ROOST_OK); /* from the cache */
    CHECK_STREQ(p.tenant_id, "t");
    CHECK(auth_authenticate(auth, h, 1700000160LL * 1000, &p) == ROOST_EUNAUTHENTICATED);
    CHECK(auth_authenticate(auth, h, 1699999930LL * 1000, &p) == ROOST_EUNAUTHENTICATED);
    CHECK(auth_authenticate(auth, h, NOW_MS, &p) == ROOST_OK);
    /* A token differing in one signature byte is not a cache hit. */
    size_t len = strlen(h);
    h[len - 2] = h[len - 2] == 'A' ? 'B' : 'A';
    CHECK(auth_authenticate(auth, h, NOW_MS, &p) == ROOST_EUNAUTHENTICATED);
    free(h);
}

static void test_auth_tenant_sub_scope_claims(void)
{
    char long_name[200];
    memset(long_name, 'a', 128);
    long_name[128] = '\0';
    char claims[512];
    snprintf(claims, sizeof claims, "{\"tenant\":\"%s\",\"exp\":1700000300}", long_name);
    CHECK(auth_claims(claims, NULL) == ROOST_OK);
    memset(long_name, 'a', 129);
    long_name[129] = '\0';
    snprintf(claims, sizeof claims, "{\"tenant\":\"%s\",\"exp\":1700000300}", long_name);
    CHECK(auth_claims(claims, NULL) == ROOST_EUNAUTHENTICATED);

    static const char *const bad[] = {
        "{\"exp\":1700000300}",
        "{\"tenant\":\"\",\"exp\":1700000300}",
        "{\"tenant\":1,\"exp\":1700000300}",
        "{\"tenant\":null,\"exp\":1700000300}",
        "{\"tenant\":[\"t\"],\"exp\":1700000300}",
        "{\"tenant\":\"a b\",\"exp\":1700000300}",
        "{\"tenant\":\"a:b\",\"exp\":1700000300}",
        "{\"tenant\":\"a/b\",\"exp\":1700000300}",
        "{\"tenant\":\"caf\\u00e9\",\"exp\":1700000300}",
        "{\"tenant\":\"t\",\"sub\":7,\"exp\":1700000300}",
        "{\"tenant\":\"t\",\"scope\":[\"agent:a:read\"],\"exp\":1700000300}",
        "{\"tenant\":\"t\",\"scope\":null,\"exp\":1700000300}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(auth_claims(bad[i], NULL) == ROOST_EUNAUTHENTICATED);
    }

    char sub[300];
    memset(sub, 's', 256);
    sub[256] = '\0';
    snprintf(claims, sizeof claims, "{\"tenant\":\"t\",\"sub\":\"%s\",\"exp\":1700000300}", sub);
    struct auth_principal p;
    CHECK(auth_claims(claims, &p) == ROOST_OK);
    CHECK(strlen(p.sub) == 256);
    memset(sub, 's', 257);
    sub[257] = '\0';
    snprintf(claims, sizeof claims, "{\"tenant\":\"t\",\"sub\":\"%s\",\"exp\":1700000300}", sub);
    CHECK(auth_claims(claims, &p) == ROOST_EUNAUTHENTICATED);
    CHECK_STREQ(p.tenant_id, ""); /* nothing leaks out of a refused token */

    /* More than AUTH_MAX_SCOPES recognised scopes is refused, exactly the maximum is fine. */
    char scopes[4096] = "";
    for (int i = 0; i < AUTH_MAX_SCOPES; i++) {
        char one[32];
        snprintf(one, sizeof one, "%sagent:a%d:read", i ? " " : "", i);
        strncat(scopes, one, sizeof scopes - strlen(scopes) - 1);
    }
    char big[4500];
    snprintf(big, sizeof big, "{\"tenant\":\"t\",\"exp\":1700000300,\"scope\":\"%s\"}", scopes);
    CHECK(auth_claims(big, &p) == ROOST_OK);
    CHECK_EQ(p.n_scopes, AUTH_MAX_SCOPES);
    snprintf(big, sizeof big,
             "{\"tenant\":\"t\",\"exp\":1700000300,\"scope\":\"%s x:y agent:z:read\"}", scopes);
    CHECK(auth_claims(big, &p) == ROOST_EUNAUTHENTICATED);
}

static void test_auth_rejects_bad_headers_and_signatures(void)
{
    struct auth_principal p;
    char *good = bearer("{\"tenant\":\"t\",\"exp\":1700000300}");
    const char *tok = good + 7;
    char buf[4096];

    CHECK(auth_authenticate(auth, good, NOW_MS, &p) == ROOST_OK);
    snprintf(buf, sizeof buf, "bearer %s", tok);
    CHECK(auth_authenticate(auth, buf, NOW_MS, &p) == ROOST_OK);
    snprintf(buf, sizeof buf, "BEARER   %s  ", tok);
    CHECK(auth_authenticate(auth, buf, NOW_MS, &p) == ROOST_OK);

    static const char *const bad[] = {
        "",
        "Bearer",
        "Bearer ",
        "Bearer    ",
        "Bearer abc",
        "Bearer a.b.c",
        "Basic dXNlcjpwYXNzd29yZA==",
        "Token abc",
        "garbage",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(auth_authenticate(auth, bad[i], NOW_MS, &p) == ROOST_EUNAUTHENTICATED);
    }
    CHECK(auth_authenticate(auth, NULL, NOW_MS, &p) == ROOST_EUNAUTHENTICATED);
    CHECK(auth_authenticate(NULL, good, NOW_MS, &p) == ROOST_EUNAUTHENTICATED);
    snprintf(buf, sizeof buf, "Bearer%s", tok); /* no space after the scheme */
    CHECK(auth_authenticate(auth, buf, NOW_MS, &p) == ROOST_EUNAUTHENTICATED);
    snprintf(buf, sizeof buf, "Basic %s", tok);
    CHECK(auth_authenticate(auth, buf, NOW_MS, &p) == ROOST_EUNAUTHENTICATED);
    snprintf(buf, sizeof buf, "Bearer %s x", tok);
    CHECK(auth_authenticate(auth, buf, NOW_MS, &p) == ROOST_EUNAUTHENTICATED);

    /* Oversize header value. */
    size_t n = JWT_MAX_TOKEN_BYTES * 2;
    char *huge = malloc(n + 1);
    memcpy(huge, "Bearer ", 7);
    memset(huge + 7, 'A', n - 7);
    huge[n] = '\0';
    CHECK(auth_authenticate(auth, huge, NOW_MS, &p) == ROOST_EUNAUTHENTICATED);
    free(huge);

    /* Signed by another Ed25519 key. */
    EVP_PKEY *other = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    char *foreign = bearer_k(other, "{\"tenant\":\"t\",\"exp\":1700000300}");
    CHECK(auth_authenticate(auth, foreign, NOW_MS, &p) == ROOST_EUNAUTHENTICATED);
    free(foreign);
    EVP_PKEY_free(other);

    /* Right key, but the header names another algorithm, or carries "crit". */
    static const char *const headers[] = {
        "{\"alg\":\"none\"}",
        "{\"alg\":\"HS256\"}",
        "{\"alg\":\"ES256\"}",
        "{\"alg\":\"EdDSA\",\"crit\":[\"exp\"],\"exp\":1}",
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        char *h = bearer_raw(key, headers[i], "{\"tenant\":\"t\",\"exp\":1700000300}");
        CHECK(auth_authenticate(auth, h, NOW_MS, &p) == ROOST_EUNAUTHENTICATED);
        free(h);
    }
    char *h = bearer_raw(key, "{\"alg\":\"EdDSA\",\"kid\":\"x\"}",
                         "{\"tenant\":\"t\",\"exp\":1700000300}");
    CHECK(auth_authenticate(auth, h, NOW_MS, &p) == ROOST_OK);
    free(h);

    /* Unsecured token with a trailing empty signature. */
    char *hb = NULL, *cb = NULL;
    jwt_b64url_encode((const unsigned char *)"{\"alg\":\"none\"}", 14, &hb);
    const char *cl = "{\"tenant\":\"t\",\"exp\":1700000300,\"scope\":\"tenant:admin\"}";
    jwt_b64url_encode((const unsigned char *)cl, strlen(cl), &cb);
    snprintf(buf, sizeof buf, "Bearer %s.%s.", hb, cb);
    CHECK(auth_authenticate(auth, buf, NOW_MS, &p) == ROOST_EUNAUTHENTICATED);
    free(hb);
    free(cb);
    free(good);
}

struct scope_case {
    const char *scope;
    enum auth_action action;
    const char *agent;
    bool allowed;
};

static void test_auth_scope_matching_table(void)
{
    static const struct scope_case cases[] = {
        {"agent:a1:read", AUTH_READ, "a1", true},
        {"agent:a1:read", AUTH_CONSUME, "a1", false},
        {"agent:a1:read", AUTH_PUBLISH, "a1", false},
        {"agent:a1:read", AUTH_ADMIN, NULL, false},
        {"agent:a1:read", AUTH_READ, "a2", false},
        {"agent:a1:read", AUTH_READ, "a1x", false},
        {"agent:a1:read", AUTH_READ, "a", false},
        {"agent:a1:consume", AUTH_READ, "a1", true}, /* consume implies read */
        {"agent:a1:consume", AUTH_CONSUME, "a1", true},
        {"agent:a1:consume", AUTH_PUBLISH, "a1", false},
        {"agent:a1:publish", AUTH_PUBLISH, "a1", true},
        {"agent:a1:publish", AUTH_READ, "a1", false}, /* publish does not imply read */
        {"agent:a1:publish", AUTH_CONSUME, "a1", false},
        {"agent:project_a.*:consume", AUTH_CONSUME, "project_a.x", true},
        {"agent:project_a.*:consume", AUTH_READ, "project_a.worker-7", true},
        {"agent:project_a.*:consume", AUTH_CONSUME, "project_a.", true},
        {"agent:project_a.*:consume", AUTH_CONSUME, "project_a", false},
        {"agent:project_a.*:consume", AUTH_CONSUME, "project_b.x", false},
        {"agent:project_a.*:consume", AUTH_CONSUME, "xproject_a.x", false},
        {"agent:project_a.*:consume", AUTH_PUBLISH, "project_a.x", false},
        {"agent:*:read", AUTH_READ, "anything", true},
        {"agent:*:read", AUTH_READ, "a", true},
        {"agent:*:read", AUTH_CONSUME, "anything", false},
        {"agent:*:publish", AUTH_PUBLISH, "x.y-z_1", true},
        {"agent:*:publish", AUTH_ADMIN, NULL, false},
        {"tenant:admin", AUTH_ADMIN, NULL, true},
        {"tenant:admin", AUTH_ADMIN, "ignored", true},
        {"tenant:admin", AUTH_READ, "a1", false}, /* admin does not imply agent scopes */
        {"tenant:admin", AUTH_CONSUME, "a1", false},
        {"tenant:admin", AUTH_PUBLISH, "a1", false},
        /* Malformed selectors and verbs are ignored, so they grant nothing. */
        {"agent:a*b:read", AUTH_READ, "axb", false},
        {"agent:a*b:read", AUTH_READ, "a*b", false},
        {"agent:**:read", AUTH_READ, "a", false},
        {"agent:*a:read", AUTH_READ, "ba", false},
        {"agent::read", AUTH_READ, "a", false},
        {"agent:a:b:read", AUTH_READ, "a", false},
        {"agent:a:b:read", AUTH_READ, "a:b", false},
        {"agent:a1:READ", AUTH_READ, "a1", false},
        {"agent:a1:write", AUTH_READ, "a1", false},
        {"agent:a1:read:x", AUTH_READ, "a1", false},
        {"Agent:a1:read", AUTH_READ, "a1", false},
        {"agent:a1", AUTH_READ, "a1", false},
        {"tenant:admin2", AUTH_ADMIN, NULL, false},
        {"tenant:admin:x", AUTH_ADMIN, NULL, false},
        {"tenant:*", AUTH_ADMIN, NULL, false},
        {"agent:a/b:read", AUTH_READ, "a", false},
        /* Several scopes, extra blanks, foreign scopes. */
        {"  openid agent:a1:read   agent:b*:publish  ", AUTH_PUBLISH, "b2", true},
        {"  openid agent:a1:read   agent:b*:publish  ", AUTH_READ, "a1", true},
        {"  openid agent:a1:read   agent:b*:publish  ", AUTH_READ, "b2", false},
        /* Invalid agent ids never match, even "*". */
        {"agent:*:read", AUTH_READ, "", false},
        {"agent:*:read", AUTH_READ, "a:b", false},
        {"agent:*:read", AUTH_READ, "a b", false},
        {"agent:*:read", AUTH_READ, NULL, false},
        {"", AUTH_READ, "a", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct scope_case *c = &cases[i];
        struct auth_principal p;
        memset(&p, 0, sizeof p);
        CHECK(auth_parse_scopes(c->scope, &p) == 0);
        bool got = auth_allows(&p, c->action, c->agent);
        if (got != c->allowed) {
            fprintf(stderr, "case %zu: scope '%s' action %d agent '%s': got %d\n", i, c->scope,
                    (int)c->action, c->agent ? c->agent : "(null)", (int)got);
        }
        CHECK(got == c->allowed);
    }
    CHECK(!auth_allows(NULL, AUTH_ADMIN, NULL));
}

static void test_auth_scope_selector_lengths(void)
{
    char id128[129], id129[130], scope[200];
    memset(id128, 'a', 128);
    id128[128] = '\0';
    memset(id129, 'a', 129);
    id129[129] = '\0';
    struct auth_principal p;

    snprintf(scope, sizeof scope, "agent:%s:read", id128);
    CHECK(auth_parse_scopes(scope, &p) == 0 && p.n_scopes == 1);
    CHECK(auth_allows(&p, AUTH_READ, id128));
    CHECK(!auth_allows(&p, AUTH_READ, id129));

    snprintf(scope, sizeof scope, "agent:%s*:read", id128); /* 128-char prefix + '*' */
    CHECK(auth_parse_scopes(scope, &p) == 0 && p.n_scopes == 1);
    CHECK(auth_allows(&p, AUTH_READ, id128));

    snprintf(scope, sizeof scope, "agent:%s:read", id129);
    CHECK(auth_parse_scopes(scope, &p) == 0 && p.n_scopes == 0);
    snprintf(scope, sizeof scope, "agent:%s*:read", id129);
    CHECK(auth_parse_scopes(scope, &p) == 0 && p.n_scopes == 0);

    CHECK(auth_parse_scopes(NULL, &p) == 0 && p.n_scopes == 0);
}

/* Several processes starting at once on an empty data dir end up sharing one key. */
static void test_auth_key_creation_race(void)
{
    enum { N = 6 };
    char path[512];
    snprintf(path, sizeof path, "%s/race.pem", tmpdir);
    int fds[N][2];
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        CHECK(pipe(fds[i]) == 0);
        pids[i] = fork();
        if (pids[i] == 0) {
            char err[256];
            unsigned char pub[32];
            size_t len = sizeof pub;
            EVP_PKEY *k = auth_load_key(path, true, err, sizeof err);
            int ok = k != NULL && EVP_PKEY_get_raw_public_key(k, pub, &len) == 1;
            ssize_t w = ok ? write(fds[i][1], pub, len) : 0;
            _exit(ok && w == (ssize_t)len ? 0 : 1);
        }
        close(fds[i][1]);
    }
    unsigned char first[32], got[32];
    int same = 0;
    for (int i = 0; i < N; i++) {
        int status = -1;
        ssize_t r = read(fds[i][0], i == 0 ? first : got, 32);
        close(fds[i][0]);
        CHECK(waitpid(pids[i], &status, 0) == pids[i] && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
        same += r == 32 && (i == 0 || memcmp(first, got, 32) == 0);
    }
    CHECK_EQ(same, N);
    char err[256];
    EVP_PKEY *k = auth_load_key(path, false, err, sizeof err);
    unsigned char pub[32];
    size_t len = sizeof pub;
    CHECK(k != NULL && EVP_PKEY_get_raw_public_key(k, pub, &len) == 1 &&
          memcmp(pub, first, 32) == 0);
    EVP_PKEY_free(k);
}

struct thread_arg {
    char *header;
    int ok;
};

static void *auth_thread(void *arg)
{
    struct thread_arg *t = arg;
    for (int i = 0; i < 200; i++) {
        struct auth_principal p;
        if (auth_authenticate(auth, t->header, NOW_MS, &p) == ROOST_OK &&
            strcmp(p.tenant_id, "t") == 0 && auth_allows(&p, AUTH_READ, "a1")) {
            t->ok++;
        }
    }
    return NULL;
}

static void test_auth_concurrent_verification(void)
{
    pthread_t th[4];
    struct thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i].header =
            bearer("{\"tenant\":\"t\",\"exp\":1700000300,\"scope\":\"agent:a1:read\"}");
        args[i].ok = 0;
        CHECK(pthread_create(&th[i], NULL, auth_thread, &args[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ(args[i].ok, 200);
        free(args[i].header);
    }
}

/* A token built from good's header, evil's payload and good's signature. */
static char *h_splice(const char *good, const char *g1, const char *e1, const char *e2,
                      const char *g2)
{
    size_t n = strlen(good) + (size_t)(e2 - e1) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%.*s%s", (int)(g1 - good), good, (int)(e2 - e1), e1, g2);
    return out;
}

static char *h_fmt_bearer(const char *tok)
{
    size_t n = strlen(tok) + 8;
    char *out = malloc(n);
    snprintf(out, n, "Bearer %s", tok);
    return out;
}

/* roostd's own key (a kid header too), against another auth. */
static int auth_claims_with(struct auth *a, const char *claims_json)
{
    char *h = bearer(claims_json);
    struct auth_principal p;
    int rc = auth_authenticate(a, h, NOW_MS, &p);
    free(h);
    if (rc == ROOST_OK) {
        char *k = bearer_raw(key, "{\"alg\":\"EdDSA\",\"kid\":\"whatever\"}", claims_json);
        rc = auth_authenticate(a, k, NOW_MS, &p);
        free(k);
    }
    return rc;
}

/* ---- identity-provider keys: auth.jwks_file, auth.hs256_secret_file, issuer, audience ---- */

#define IDP_SECRET "0123456789abcdef0123456789abcdef"
#define IDP_ISS "https://coord.example"
#define IDP_AUD "coord-api"

static EVP_PKEY *idp_ec, *idp_rsa, *idp_ed;
static char jwks_path[400], secret_path[400];

static EVP_PKEY *read_pem(const char *path)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *k = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f) {
        fclose(f);
    }
    return k;
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        return -1;
    }
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static char *file_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return NULL;
    }
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Writes a JWK Set of the given tests/data/jwt/NAME.jwk.json files to jwks_path. */
static int write_jwks(const char *const *files, size_t n)
{
    size_t cap = 65536 * (n + 1), o = 0;
    char *buf = malloc(cap);
    o += (size_t)snprintf(buf + o, cap - o, "{\"keys\":[");
    for (size_t i = 0; i < n; i++) {
        char *t = file_text(files[i]);
        if (t == NULL) {
            free(buf);
            return -1;
        }
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? "," : "", t);
        free(t);
    }
    snprintf(buf + o, cap - o, "]}");
    int rc = write_text(jwks_path, buf);
    free(buf);
    return rc;
}

/* An auth with the identity-provider keys of the files as they are now. */
static struct auth *idp_auth(const char *issuer, const char *audience, bool with_secret, char *err,
                             size_t errlen)
{
    struct config cfg;
    struct auth *a = NULL;
    config_init(&cfg);
    config_set(&cfg, "data_dir", datadir, err, errlen);
    config_set(&cfg, "auth.jwks_file", jwks_path, err, errlen);
    config_set(&cfg, "auth.hs256_secret_file", with_secret ? secret_path : "", err, errlen);
    config_set(&cfg, "auth.issuer", issuer ? issuer : "", err, errlen);
    config_set(&cfg, "auth.audience", audience ? audience : "", err, errlen);
    if (auth_new(&cfg, &a, err, errlen) != ROOST_OK) {
        a = NULL;
    }
    config_cleanup(&cfg);
    return a;
}

/* "Bearer <jwt>" over header and claims text, signed for alg with the IdP's keys. */
static char *idp_bearer(enum jwt_alg alg, const char *header, const char *claims)
{
    json_t *h = json_loads(header, 0, NULL), *c = json_loads(claims, 0, NULL);
    EVP_PKEY *k = alg == JWT_ALG_ES256   ? idp_ec
                  : alg == JWT_ALG_RS256 ? idp_rsa
                  : alg == JWT_ALG_EDDSA ? idp_ed
                                         : NULL;
    char *tok = NULL, *out = NULL;
    if (h != NULL && c != NULL &&
        jwt_sign(h, c, alg, k, (const unsigned char *)IDP_SECRET, strlen(IDP_SECRET), &tok) == 0) {
        size_t n = strlen(tok) + 8;
        out = malloc(n);
        snprintf(out, n, "Bearer %s", tok);
    }
    free(tok);
    json_decref(h);
    json_decref(c);
    return out;
}

static int idp_check(struct auth *a, enum jwt_alg alg, const char *header, const char *claims,
                     struct auth_principal *p)
{
    char *b = idp_bearer(alg, header, claims);
    struct auth_principal scratch;
    int rc = b ? auth_authenticate(a, b, NOW_MS, p ? p : &scratch) : -999;
    free(b);
    return rc;
}

#define GOOD_CLAIMS                                                                                \
    "{\"tenant\":\"t1\",\"sub\":\"agent-42\",\"scope\":\"agent:a.*:consume\",\"iss\":\"" IDP_ISS   \
    "\",\"aud\":\"" IDP_AUD "\",\"exp\":1700000300}"

static int idp_setup(void)
{
    snprintf(jwks_path, sizeof jwks_path, "%s/jwks.json", tmpdir);
    snprintf(secret_path, sizeof secret_path, "%s/hs256.secret", tmpdir);
    idp_ec = read_pem("data/jwt/test-key-ecc-p256.priv.pem");
    idp_rsa = read_pem("data/jwt/test-key-rsa.priv.pem");
    idp_ed = read_pem("data/jwt/test-key-ed25519.priv.pem");
    static const char *const files[] = {"data/jwt/test-key-ecc-p256.jwk.json",
                                        "data/jwt/test-key-rsa.jwk.json",
                                        "data/jwt/test-key-ed25519.jwk.json"};
    if (idp_ec == NULL || idp_rsa == NULL || idp_ed == NULL || write_jwks(files, 3) != 0 ||
        write_text(secret_path, IDP_SECRET "\n") != 0) {
        fprintf(stderr, "idp_setup failed\n");
        return -1;
    }
    return 0;
}

static void test_auth_idp_each_algorithm_accepted(void)
{
    char err[256] = "";
    struct auth *a = idp_auth(IDP_ISS, IDP_AUD, true, err, sizeof err);
    CHECK(a != NULL);
    if (a == NULL) {
        fprintf(stderr, "idp_auth: %s\n", err);
        return;
    }
    char desc[256];
    auth_describe(a, desc, sizeof desc);
    CHECK(strstr(desc, "jwks_keys=3") != NULL && strstr(desc, "hs256=yes") != NULL);
    CHECK(strstr(desc, "jwks_private_members=ignored") != NULL);
    struct auth_principal p;
    CHECK_EQ(idp_check(a, JWT_ALG_ES256, "{\"kid\":\"test-key-ecc-p256\"}", GOOD_CLAIMS, &p),
             ROOST_OK);
    CHECK_STREQ(p.tenant_id, "t1");
    CHECK_STREQ(p.sub, "agent-42");
    CHECK(auth_allows(&p, AUTH_CONSUME, "a.b") && !auth_allows(&p, AUTH_READ, "b.c"));
    CHECK_EQ(idp_check(a, JWT_ALG_RS256, "{\"kid\":\"test-key-rsa\"}", GOOD_CLAIMS, &p), ROOST_OK);
    CHECK_EQ(idp_check(a, JWT_ALG_EDDSA, "{\"kid\":\"test-key-ed25519\"}", GOOD_CLAIMS, &p),
             ROOST_OK);
    CHECK_EQ(idp_check(a, JWT_ALG_HS256, "{\"typ\":\"JWT\"}", GOOD_CLAIMS, &p), ROOST_OK);
    /* Without kid: tried because there is exactly one EC and one RSA key. */
    CHECK_EQ(idp_check(a, JWT_ALG_ES256, "{}", GOOD_CLAIMS, &p), ROOST_OK);
    CHECK_EQ(idp_check(a, JWT_ALG_RS256, "{}", GOOD_CLAIMS, &p), ROOST_OK);
    /* A kid-less EdDSA token is roostd's own: the IdP's Ed25519 key is not tried. */
    CHECK_EQ(idp_check(a, JWT_ALG_EDDSA, "{}", GOOD_CLAIMS, &p), ROOST_EUNAUTHENTICATED);
    /* aud as an array containing the audience. */
    CHECK_EQ(idp_check(a, JWT_ALG_ES256, "{}",
                       "{\"tenant\":\"t1\",\"iss\":\"" IDP_ISS "\",\"aud\":[\"x\",\"" IDP_AUD
                       "\"],\"exp\":1700000300}",
                       &p),
             ROOST_OK);
    /* roostd's own tokens keep working, without iss or aud, with or without a kid. */
    CHECK_EQ(auth_claims_with(a, "{\"tenant\":\"t1\",\"exp\":1700000300}"), ROOST_OK);
    auth_free(a);
}

static void test_auth_idp_refusals(void)
{
    char err[256] = "";
    struct auth *a = idp_auth(IDP_ISS, IDP_AUD, true, err, sizeof err);
    CHECK(a != NULL);
    if (a == NULL) {
        return;
    }
    static const struct {
        const char *label;
        enum jwt_alg alg;
        const char *header;
        const char *claims;
    } cases[] = {
        {"wrong iss", JWT_ALG_ES256, "{}",
         "{\"tenant\":\"t1\",\"iss\":\"https://evil.example\",\"aud\":\"" IDP_AUD
         "\",\"exp\":1700000300}"},
        {"missing iss", JWT_ALG_RS256, "{}",
         "{\"tenant\":\"t1\",\"aud\":\"" IDP_AUD "\",\"exp\":1700000300}"},
        {"iss not a string", JWT_ALG_HS256, "{}",
         "{\"tenant\":\"t1\",\"iss\":[\"" IDP_ISS "\"],\"aud\":\"" IDP_AUD
         "\",\"exp\":1700000300}"},
        {"wrong aud", JWT_ALG_HS256, "{}",
         "{\"tenant\":\"t1\",\"iss\":\"" IDP_ISS "\",\"aud\":\"other\",\"exp\":1700000300}"},
        {"aud array without", JWT_ALG_ES256, "{}",
         "{\"tenant\":\"t1\",\"iss\":\"" IDP_ISS "\",\"aud\":[\"a\",\"b\"],\"exp\":1700000300}"},
        {"aud prefix", JWT_ALG_ES256, "{}",
         "{\"tenant\":\"t1\",\"iss\":\"" IDP_ISS "\",\"aud\":\"coord-ap\",\"exp\":1700000300}"},
        {"missing aud", JWT_ALG_ES256, "{}",
         "{\"tenant\":\"t1\",\"iss\":\"" IDP_ISS "\",\"exp\":1700000300}"},
        {"missing exp", JWT_ALG_ES256, "{}",
         "{\"tenant\":\"t1\",\"iss\":\"" IDP_ISS "\",\"aud\":\"" IDP_AUD "\"}"},
        {"expired beyond skew", JWT_ALG_RS256, "{}",
         "{\"tenant\":\"t1\",\"iss\":\"" IDP_ISS "\",\"aud\":\"" IDP_AUD "\",\"exp\":1699999940}"},
        {"nbf beyond skew", JWT_ALG_HS256, "{}",
         "{\"tenant\":\"t1\",\"iss\":\"" IDP_ISS "\",\"aud\":\"" IDP_AUD
         "\",\"nbf\":1700000061,\"exp\":1700000300}"},
        {"missing tenant", JWT_ALG_ES256, "{}",
         "{\"iss\":\"" IDP_ISS "\",\"aud\":\"" IDP_AUD "\",\"exp\":1700000300}"},
        {"null tenant", JWT_ALG_ES256, "{}",
         "{\"tenant\":null,\"iss\":\"" IDP_ISS "\",\"aud\":\"" IDP_AUD "\",\"exp\":1700000300}"},
        {"number tenant", JWT_ALG_ES256, "{}",
         "{\"tenant\":7,\"iss\":\"" IDP_ISS "\",\"aud\":\"" IDP_AUD "\",\"exp\":1700000300}"},
        {"unknown kid", JWT_ALG_ES256, "{\"kid\":\"nope\"}", GOOD_CLAIMS},
        {"kid of another key type", JWT_ALG_RS256, "{\"kid\":\"test-key-ecc-p256\"}", GOOD_CLAIMS},
        {"kid not a string", JWT_ALG_ES256, "{\"kid\":1}", GOOD_CLAIMS},
        {"EdDSA with the EC key's kid", JWT_ALG_EDDSA, "{\"kid\":\"test-key-ecc-p256\"}",
         GOOD_CLAIMS},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = idp_check(a, cases[i].alg, cases[i].header, cases[i].claims, NULL);
        if (rc != ROOST_EUNAUTHENTICATED) {
            fprintf(stderr, "case '%s' accepted\n", cases[i].label);
        }
        CHECK_EQ(rc, ROOST_EUNAUTHENTICATED);
    }
    /* Within the 60 s skew: accepted (controls for the two time cases above). */
    CHECK_EQ(idp_check(a, JWT_ALG_RS256, "{}",
                       "{\"tenant\":\"t1\",\"iss\":\"" IDP_ISS "\",\"aud\":\"" IDP_AUD
                       "\",\"exp\":1699999941}",
                       NULL),
             ROOST_OK);
    CHECK_EQ(idp_check(a, JWT_ALG_HS256, "{}",
                       "{\"tenant\":\"t1\",\"iss\":\"" IDP_ISS "\",\"aud\":\"" IDP_AUD
                       "\",\"nbf\":1700000060,\"exp\":1700000300}",
                       NULL),
             ROOST_OK);

    /* Tampered payload: a valid ES256 token with another tenant spliced in. */
    char *good = idp_bearer(JWT_ALG_ES256, "{}", GOOD_CLAIMS);
    char *evil = idp_bearer(JWT_ALG_ES256, "{}", "{\"tenant\":\"t2\",\"exp\":1700000300}");
    const char *g1 = strchr(good, '.'), *g2 = strrchr(good, '.');
    const char *e1 = strchr(evil, '.'), *e2 = strrchr(evil, '.');
    char *mixed = h_splice(good, g1, e1, e2, g2);
    struct auth_principal p;
    CHECK_EQ(auth_authenticate(a, mixed, NOW_MS, &p), ROOST_EUNAUTHENTICATED);
    free(mixed);
    free(good);
    free(evil);

    /* Algorithm confusion: HS256 MACed with the EC and RSA public keys (PEM text) as secret. */
    EVP_PKEY *pubs[] = {idp_ec, idp_rsa};
    for (size_t i = 0; i < 2; i++) {
        BIO *bio = BIO_new(BIO_s_mem());
        PEM_write_bio_PUBKEY(bio, pubs[i]);
        char *pem = NULL;
        long pemlen = BIO_get_mem_data(bio, &pem);
        json_t *h = json_pack("{s:s}", "kid", i == 0 ? "test-key-ecc-p256" : "test-key-rsa");
        json_t *c = json_loads(GOOD_CLAIMS, 0, NULL);
        char *tok = NULL;
        CHECK(jwt_sign(h, c, JWT_ALG_HS256, NULL, (unsigned char *)pem, (size_t)pemlen, &tok) == 0);
        char *b = h_fmt_bearer(tok);
        CHECK_EQ(auth_authenticate(a, b, NOW_MS, &p), ROOST_EUNAUTHENTICATED);
        free(b);
        free(tok);
        json_decref(h);
        json_decref(c);
        BIO_free(bio);
    }
    auth_free(a);

    /* Without the secret file, HS256 is refused even with the right secret. */
    a = idp_auth(IDP_ISS, IDP_AUD, false, err, sizeof err);
    CHECK(a != NULL);
    CHECK_EQ(idp_check(a, JWT_ALG_HS256, "{}", GOOD_CLAIMS, NULL), ROOST_EUNAUTHENTICATED);
    CHECK_EQ(idp_check(a, JWT_ALG_ES256, "{}", GOOD_CLAIMS, NULL), ROOST_OK);
    auth_free(a);
    /* Without issuer and audience configured, iss and aud are not required. */
    a = idp_auth(NULL, NULL, true, err, sizeof err);
    CHECK(a != NULL);
    CHECK_EQ(idp_check(a, JWT_ALG_ES256, "{}", "{\"tenant\":\"t1\",\"exp\":1700000300}", NULL),
             ROOST_OK);
    auth_free(a);
}

/* A rebuilt auth (what SIGHUP does) sees the new key files and starts with an empty cache. */
static void test_auth_idp_rebuild_and_load_errors(void)
{
    char err[256] = "";
    struct auth *a = idp_auth(IDP_ISS, IDP_AUD, true, err, sizeof err);
    char *rsa_tok = idp_bearer(JWT_ALG_RS256, "{\"kid\":\"test-key-rsa\"}", GOOD_CLAIMS);
    struct auth_principal p;
    CHECK_EQ(auth_authenticate(a, rsa_tok, NOW_MS, &p), ROOST_OK);
    CHECK_EQ(auth_authenticate(a, rsa_tok, NOW_MS, &p), ROOST_OK); /* now from the cache */
    auth_free(a);

    static const char *const ec_only[] = {"data/jwt/test-key-ecc-p256.jwk.json"};
    CHECK(write_jwks(ec_only, 1) == 0);
    a = idp_auth(IDP_ISS, IDP_AUD, true, err, sizeof err);
    CHECK(a != NULL);
    CHECK_EQ(auth_authenticate(a, rsa_tok, NOW_MS, &p), ROOST_EUNAUTHENTICATED);
    CHECK_EQ(idp_check(a, JWT_ALG_ES256, "{}", GOOD_CLAIMS, NULL), ROOST_OK);
    auth_free(a);
    free(rsa_tok);

    /* Load errors name the file. */
    CHECK(write_text(jwks_path, "{\"keys\":[") == 0);
    CHECK(idp_auth(NULL, NULL, false, err, sizeof err) == NULL);
    CHECK(strstr(err, "jwks.json") != NULL);
    CHECK(write_text(jwks_path, "{\"keys\":[{\"kty\":\"oct\",\"k\":\"AAAA\"}]}") == 0);
    CHECK(idp_auth(NULL, NULL, false, err, sizeof err) == NULL); /* no usable key */
    CHECK(strstr(err, "no usable key") != NULL);
    CHECK(write_jwks(ec_only, 1) == 0);
    CHECK(write_text(secret_path, "short\n") == 0);
    CHECK(idp_auth(NULL, NULL, true, err, sizeof err) == NULL);
    CHECK(strstr(err, "hs256.secret") != NULL);
    CHECK(write_text(secret_path, IDP_SECRET "\r\n") == 0); /* CRLF stripped: 32 bytes */
    a = idp_auth(IDP_ISS, IDP_AUD, true, err, sizeof err);
    CHECK(a != NULL);
    CHECK_EQ(idp_check(a, JWT_ALG_HS256, "{}", GOOD_CLAIMS, NULL), ROOST_OK);
    auth_free(a);
    unlink(secret_path);
    CHECK(idp_auth(NULL, NULL, true, err, sizeof err) == NULL);
    CHECK(write_text(secret_path, IDP_SECRET "\n") == 0);
}

static int setup(void)
{
    char err[256] = "";
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/roost-test-auth-XXXXXX", base);
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    snprintf(datadir, sizeof datadir, "%s/data/nested", tmpdir);
    snprintf(keypath, sizeof keypath, "%s/" ROOST_TOKEN_KEY_FILE, datadir);
    struct config cfg;
    if (config_init(&cfg) != 0 || config_set(&cfg, "data_dir", datadir, err, sizeof err) != 0) {
        fprintf(stderr, "config: %s\n", err);
        return -1;
    }
    mode_t old = umask(0);
    int rc = auth_new(&cfg, &auth, err, sizeof err);
    umask(old);
    config_cleanup(&cfg);
    if (rc != ROOST_OK) {
        fprintf(stderr, "auth_new: %s\n", err);
        return -1;
    }
    key = auth_load_key(keypath, false, err, sizeof err);
    if (key == NULL) {
        fprintf(stderr, "auth_load_key: %s\n", err);
        return -1;
    }
    return 0;
}

int main(void)
{
    if (setup() != 0) {
        CHECK(!"setup");
        return check_summary();
    }
    RUN(test_auth_key_file_created_private_and_reloaded);
    RUN(test_auth_load_key_errors);
    RUN(test_auth_key_creation_race);
    RUN(test_auth_valid_token_fills_principal);
    RUN(test_auth_principal_has_no_stale_fields);
    RUN(test_auth_time_claims_with_skew);
    RUN(test_auth_cached_token_still_expires);
    RUN(test_auth_tenant_sub_scope_claims);
    RUN(test_auth_rejects_bad_headers_and_signatures);
    RUN(test_auth_scope_matching_table);
    RUN(test_auth_scope_selector_lengths);
    RUN(test_auth_concurrent_verification);
    if (idp_setup() != 0) {
        CHECK(!"idp_setup");
    } else {
        RUN(test_auth_idp_each_algorithm_accepted);
        RUN(test_auth_idp_refusals);
        RUN(test_auth_idp_rebuild_and_load_errors);
    }
    EVP_PKEY_free(idp_ec);
    EVP_PKEY_free(idp_rsa);
    EVP_PKEY_free(idp_ed);
    auth_free(auth);
    EVP_PKEY_free(key);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    return check_summary();
}
