/* SPDX-License-Identifier: MIT */
/* Request signatures across two roostd nodes on one MariaDB (DESIGN §6.2): a key registered
 * through node 1 verifies on node 2, and a signed request replayed on the other node is refused
 * with nonce_reused (nonces live in the database, not in a node's memory). Both nodes share the
 * token key, and requests carry node 1's Host, as a load balancer that preserves Host would.
 * argv[1] is the URL of the shared test server (ctest fixture "mariadb"). */
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/limits.h"
#include "harness/harness.h"
#include "proto/httpsig.h"

#include "common/banned.h"

#define KEYS TESTS_DIR "/data/rfc9421/keys"

static char host[96];

/* The token key path of a data dir (a static buffer: one caller at a time). */
static const char *token_key_path(const char *dir)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/" ROOST_TOKEN_KEY_FILE, dir);
    return path;
}

/* Signs GET `path` with `keyid` (ed25519) and nonce; returns the raw request (caller frees). */
static char *signed_get(const char *path, const char *token, const char *keyid, EVP_PKEY *pkey,
                        const char *nonce)
{
    char *authz = h_fmt("Bearer %s", token);
    struct httpsig_header h[2] = {{"Host", host}, {"Authorization", authz}};
    struct httpsig_message m = {.method = "GET",
                                .scheme = "http",
                                .authority = host,
                                .path = path,
                                .headers = h,
                                .n_headers = 2};
    static const char *const comp[] = {"@method", "@path", "@authority", "authorization"};
    int64_t now = (int64_t)time(NULL);
    char *params = NULL, *si = NULL, *sg = NULL;
    struct httpsig_key k = {.alg = HTTPSIG_ALG_ED25519, .pkey = pkey};
    CHECK_EQ(httpsig_params_build(comp, 4, now, now + 300, nonce, keyid, NULL, NULL, &params),
             HTTPSIG_OK);
    CHECK_EQ(httpsig_sign(&m, "sig1", params, &k, &si, &sg), HTTPSIG_OK);
    char *raw = h_fmt("GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nSignature-Input: %s\r\n"
                      "Signature: %s\r\nConnection: close\r\n\r\n",
                      path, host, authz, si ? si : "", sg ? sg : "");
    free(params);
    free(si);
    free(sg);
    free(authz);
    return raw;
}

/* Sends raw to node n; returns the status and the error code (copied into code). */
static long send_raw(const struct roostd *n, const char *raw, char *code, size_t code_len)
{
    struct raw_reply rep;
    long status = -1;
    code[0] = '\0';
    if (raw_exchange(n, raw, strlen(raw), 1, 15000, &rep) == 0 && rep.n_responses >= 1) {
        status = rep.status[0];
        const char *b = strstr(rep.buf, "\r\n\r\n");
        json_t *j = b ? json_loads(b + 4, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
        snprintf(code, code_len, "%s", h_error_code(j) ? h_error_code(j) : "");
        json_decref(j);
    }
    raw_reply_cleanup(&rep);
    return status;
}

static void test_cluster_nonce_replay_refused_on_the_other_node(void)
{
    struct roostd n1, n2;
    static const char *const sets1[] = {"signatures.require=all", NULL};
    if (roostd_start(&n1, NULL, sets1) != 0) {
        CHECK(!"node 1 started");
        return;
    }
    /* Node 2's data dir starts with node 1's token key, so one token serves both nodes. */
    char *same_db = h_fmt("store.url=%s", roostd_store_url(&n1));
    char dir2[] = "/tmp/roost-sig2-XXXXXX";
    char *key_text = NULL, *key2 = NULL;
    size_t key_len = 0;
    bool copied = mkdtemp(dir2) != NULL;
    if (copied && h_read_file(token_key_path(n1.dir), &key_text, &key_len) == 0) {
        key2 = h_fmt("%s/" ROOST_TOKEN_KEY_FILE, dir2);
        int fd = open(key2, O_WRONLY | O_CREAT | O_EXCL, 0600);
        copied = fd >= 0 && write(fd, key_text, key_len) == (ssize_t)key_len;
        if (fd >= 0) {
            close(fd);
        }
    } else {
        copied = false;
    }
    free(key_text);
    free(key2);
    CHECK(copied);
    char *same_key = NULL;
    const char *sets2[] = {same_db, "signatures.require=all", NULL};
    if (roostd_start(&n2, dir2, sets2) != 0) {
        CHECK(!"node 2 started");
        free(same_db);
        free(same_key);
        roostd_finish(&n1);
        return;
    }
    snprintf(host, sizeof host, "%s:%d", n1.host, n1.port);
    char *admin = h_token(&n1, "t1", "tenant:admin");
    char *tok = h_token(&n1, "t1", "agent:a1:consume");
    char *pem = NULL;
    size_t len = 0;
    CHECK(h_read_file(KEYS "/test-key-ed25519.pub.pem", &pem, &len) == 0);
    json_t *out = NULL;
    CHECK_EQ(h_callj(n1.http, "POST", admin,
                     json_pack("{s:s, s:s, s:s, s:s}", "key_id", "k1", "agent_id", "a1", "alg",
                               "ed25519", "public_key", pem ? pem : ""),
                     &out, "/api/v1/admin/keys"),
             201);
    json_decref(out);
    free(pem);
    char *priv = NULL;
    EVP_PKEY *pkey = NULL;
    CHECK(h_read_file(KEYS "/test-key-ed25519.priv.pem", &priv, &len) == 0);
    CHECK_EQ(httpsig_key_from_pem(priv ? priv : "", len, &pkey), HTTPSIG_OK);
    free(priv);

    char code[64];
    char *r1 = signed_get("/api/v1/agents/a1/inbox", tok, "k1", pkey, "cluster-nonce-1");
    CHECK_EQ(send_raw(&n1, r1, code, sizeof code), 200);
    /* The same bytes on node 2: the nonce is already in the shared database. */
    CHECK_EQ(send_raw(&n2, r1, code, sizeof code), 401);
    CHECK_STREQ(code, "nonce_reused");
    /* A fresh nonce signed once is accepted by node 2 (the key registered on node 1). */
    char *r2 = signed_get("/api/v1/agents/a1/inbox", tok, "k1", pkey, "cluster-nonce-2");
    CHECK_EQ(send_raw(&n2, r2, code, sizeof code), 200);
    CHECK_EQ(send_raw(&n1, r2, code, sizeof code), 401);
    CHECK_STREQ(code, "nonce_reused");
    /* Revoked through node 2, refused by node 1. */
    CHECK_EQ(h_callj(n2.http, "POST", admin, NULL, &out, "/api/v1/admin/keys/k1/revoke"), 200);
    json_decref(out);
    char *r3 = signed_get("/api/v1/agents/a1/inbox", tok, "k1", pkey, "cluster-nonce-3");
    CHECK_EQ(send_raw(&n1, r3, code, sizeof code), 401);
    CHECK_STREQ(code, "key_revoked");

    EVP_PKEY_free(pkey);
    free(r1);
    free(r2);
    free(r3);
    free(admin);
    free(tok);
    free(same_db);
    free(same_key);
    roostd_finish(&n2);
    roostd_finish(&n1);
}

int main(int argc, char **argv)
{
    h_init();
    if (argc < 2) {
        fprintf(stderr, "usage: %s MYSQL_URL (a server of scripts/mariadb_test.sh)\n", argv[0]);
        return 2;
    }
    setenv("ROOST_TEST_MYSQL_URL", argv[1], 1);
    RUN(test_cluster_nonce_replay_refused_on_the_other_node);
    return h_summary();
}
