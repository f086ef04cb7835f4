/* SPDX-License-Identifier: MIT */
/* Unit tests of src/server/auth.c: key file creation and reload, bearer token checks (signature,
 * exp/nbf/iat with 60 s skew, tenant, sub, scope) and the scope matching of DESIGN §6.1. */
#include <errno.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/jwt.h"
#include "roost/roost_error.h"
#include "server/auth.h"
#include "server/config.h"
#include "unit.h"

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
    snprintf(keypath, sizeof keypath, "%s/token_ed25519.pem", datadir);
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
        return unit_summary();
    }
    RUN(test_auth_key_file_created_private_and_reloaded);
    RUN(test_auth_load_key_errors);
    RUN(test_auth_key_creation_race);
    RUN(test_auth_valid_token_fills_principal);
    RUN(test_auth_time_claims_with_skew);
    RUN(test_auth_cached_token_still_expires);
    RUN(test_auth_tenant_sub_scope_claims);
    RUN(test_auth_rejects_bad_headers_and_signatures);
    RUN(test_auth_scope_matching_table);
    RUN(test_auth_scope_selector_lengths);
    RUN(test_auth_concurrent_verification);
    auth_free(auth);
    EVP_PKEY_free(key);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    return unit_summary();
}
