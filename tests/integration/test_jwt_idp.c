/* SPDX-License-Identifier: MIT */
/* Tokens of a real identity provider against the real roostd: tests/js/jwt_idp.mjs (npm jose)
 * makes Ed25519, P-256 and RSA keys, an HS256 secret and tokens; roostd runs with a config file
 * naming auth.jwks_file, auth.hs256_secret_file, auth.issuer and auth.audience. Checks each
 * algorithm, the iss/aud refusals, tenant isolation between two tenants of the JWK Set, and the
 * SIGHUP reload: a rotated key set, a broken one (old keys stay), a new audience. A missing node
 * or jose fails the test, never skips it. */
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;
static char dir[256];
static json_t *tokens;

static const char *tok(const char *name)
{
    const char *t = h_str(tokens, name);
    if (t == NULL) {
        fprintf(stderr, "no token %s\n", name);
    }
    return t;
}

static long inbox_status(const char *token_name, const char *agent)
{
    long st = -1;
    json_t *r = h_inbox(d.http, tok(token_name), agent, 0, 10, &st);
    json_decref(r);
    return st;
}

/* Replaces `dst` atomically by a copy of `src` (rename: roostd never reads half a file). */
static int install(const char *src, const char *dst)
{
    char *data = NULL;
    size_t len = 0;
    if (h_read_file(src, &data, &len) != 0) {
        return -1;
    }
    int rc = fsutil_write_atomic(dst, data, len, 0644);
    free(data);
    return rc;
}

static int write_config(const char *audience)
{
    char *path = h_fmt("%s/roostd.conf", dir);
    FILE *f = fopen(path, "w");
    free(path);
    if (f == NULL) {
        return -1;
    }
    fprintf(f,
            "# written by test_jwt_idp\n"
            "auth.jwks_file = %s/jwks.json\n"
            "auth.hs256_secret_file = %s/hs256.secret\n"
            "auth.issuer = %s\n"
            "auth.audience = %s\n",
            dir, dir, h_str(tokens, "iss"), audience);
    return fclose(f) == 0 ? 0 : -1;
}

static void test_jwt_each_algorithm_accepted(void)
{
    static const char *const good[] = {"ed_t1", "es_t1",       "rs_t1",
                                       "hs_t1", "es_nokid_t1", "aud_array"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK_CASE(good[i], inbox_status(good[i], "idp.a") == 200);
    }
    /* roostd's own key keeps working alongside (its tokens carry no iss or aud). */
    char *own = h_token(&d, "t1", "agent:*:read");
    long st = -1;
    json_decref(h_inbox(d.http, own, "idp.a", 0, 10, &st));
    CHECK_EQ(st, 200);
    free(own);
}

static void test_jwt_refusals(void)
{
    static const char *const bad[] = {"es_wrong_iss", "rs_wrong_aud",    "hs_wrong_aud",
                                      "ed_no_iss",    "hs_other_secret", "es_expired",
                                      "es2_t1",       "es2_aud2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_CASE(bad[i], inbox_status(bad[i], "idp.a") == 401);
    }
}

static void test_jwt_tenant_isolation(void)
{
    char eid[32] = "";
    int64_t seq =
        h_publish(d.http, tok("es_t1"), "iso.a", json_pack("{s:s}", "k", "t1-only"), NULL, eid);
    CHECK(seq > 0);
    long st = -1;
    json_t *r1 = h_inbox(d.http, tok("rs_t1"), "iso.a", 0, 10, &st);
    CHECK_EQ(st, 200);
    CHECK_EQ(json_array_size(json_object_get(r1, "events")), 1);
    json_decref(r1);
    /* Tenant t2, same agent id, keys of the same JWK Set: sees nothing of t1. */
    json_t *r2 = h_inbox(d.http, tok("es_t2"), "iso.a", 0, 10, &st);
    CHECK_EQ(st, 200);
    CHECK_EQ(json_array_size(json_object_get(r2, "events")), 0);
    json_decref(r2);
    json_t *claimed = h_claim(d.http, tok("rs_t2"), "iso.a", 10, 30, "c2");
    CHECK(claimed != NULL && json_array_size(claimed) == 0);
    json_decref(claimed);
    /* t1 claims its event; t2 with t1's real lease token cannot ack it: not found. */
    json_t *mine = h_claim(d.http, tok("es_t1"), "iso.a", 10, 30, "c1");
    CHECK(mine != NULL && json_array_size(mine) == 1);
    const char *lease = h_str(h_at(mine, 0), "lease_token");
    CHECK(lease != NULL);
    json_t *ev = NULL;
    CHECK_EQ(h_callj(d.http, "POST", tok("rs_t2"),
                     json_pack("{s:s}", "lease_token", lease ? lease : "lt_x"), &ev,
                     "/api/v1/agents/iso.a/inbox/%s/ack", eid),
             404);
    CHECK_STREQ(h_error_code(ev), "event_not_found");
    json_decref(ev);
    json_decref(mine);
}

static void test_jwt_sighup_reload(void)
{
    /* 1. Rotation: es-1 and rs-1 leave, es-2 arrives. */
    char *j2 = h_fmt("%s/jwks2.json", dir), *jwks = h_fmt("%s/jwks.json", dir);
    CHECK(install(j2, jwks) == 0);
    CHECK(inbox_status("es2_t1", "idp.a") == 401); /* nothing happens before the signal */
    CHECK(roostd_hup_and_wait(&d, "config reloaded"));
    CHECK_EQ(inbox_status("es2_t1", "idp.a"), 200);
    CHECK_EQ(inbox_status("es_t1", "idp.a"), 401); /* removed key, even though it was cached */
    CHECK_EQ(inbox_status("rs_t1", "idp.a"), 401);
    CHECK_EQ(inbox_status("ed_t1", "idp.a"), 200); /* kept key */
    CHECK_EQ(inbox_status("hs_t1", "idp.a"), 200);

    /* 2. A broken key set: the reload fails, the old keys stay, roostd lives. */
    FILE *f = fopen(jwks, "w");
    CHECK(f != NULL && fputs("{\"keys\": [", f) >= 0 && fclose(f) == 0);
    CHECK(roostd_hup_and_wait(&d, "config reload failed"));
    CHECK(roostd_alive(&d));
    CHECK_EQ(inbox_status("es2_t1", "idp.a"), 200);
    CHECK_EQ(inbox_status("es_t1", "idp.a"), 401);

    /* 3. A new audience in the config file, the good key set back. */
    CHECK(install(j2, jwks) == 0);
    CHECK(write_config(h_str(tokens, "aud2")) == 0);
    CHECK(roostd_hup_and_wait(&d, "config reloaded"));
    CHECK_EQ(inbox_status("es2_aud2", "idp.a"), 200);
    CHECK_EQ(inbox_status("ed_aud2", "idp.a"), 200);
    CHECK_EQ(inbox_status("es2_t1", "idp.a"), 401); /* the old audience */
    /* Still only the reloadable keys: the daemon answers on the same URL. */
    CHECK(roostd_alive(&d));
    free(j2);
    free(jwks);
}

int main(void)
{
    h_init();
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/roost-jwt-idp-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        CHECK(!"mkdtemp");
        return h_summary();
    }
    /* The identity provider: node + jose. Missing tools fail here (exit 127 or an import error). */
    char *cmd = h_fmt("node '%s/js/jwt_idp.mjs' '%s'", TESTS_DIR, dir);
    int rc = system(cmd);
    free(cmd);
    CHECK(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
    char *tokens_path = h_fmt("%s/tokens.json", dir);
    tokens = json_load_file(tokens_path, 0, NULL);
    free(tokens_path);
    if (rc != 0 || tokens == NULL) {
        fprintf(stderr, "tests/js/jwt_idp.mjs failed: is node installed and `npm ci` done in "
                        "tests/js (scripts/js_deps.sh)?\n");
        CHECK(tokens != NULL);
        return h_summary();
    }
    char *j1 = h_fmt("%s/jwks1.json", dir), *jwks = h_fmt("%s/jwks.json", dir);
    CHECK(install(j1, jwks) == 0);
    free(j1);
    free(jwks);
    CHECK(write_config(h_str(tokens, "aud")) == 0);
    char *conf = h_fmt("--config=%s/roostd.conf", dir);
    const char *const sets[] = {conf, NULL};
    if (roostd_start(&d, NULL, sets) != 0) {
        CHECK(!"roostd_start");
        free(conf);
        return h_summary();
    }
    free(conf);
    RUN(test_jwt_each_algorithm_accepted);
    RUN(test_jwt_refusals);
    RUN(test_jwt_tenant_isolation);
    RUN(test_jwt_sighup_reload);
    if (check_failed) {
        roostd_print_log(&d);
    }
    roostd_finish(&d);
    json_decref(tokens);
    char *rm = h_fmt("rm -rf '%s'", dir);
    if (system(rm) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
    free(rm);
    return h_summary();
}
