/* SPDX-License-Identifier: MIT */
/* libroost request signing end to end against a roostd with signatures.require=all: keys
 * registered with `roost keys add`, then `roost publish / claim / ack` signed with --key-file
 * (ed25519 and hmac-sha256) succeed, and fail with exit 1 and the 401 code unsigned, with a
 * revoked key (`roost keys revoke`) or another agent's key; `roost keys list` shows the keys;
 * `roost agent run --key-file` works an inbox; many signed requests in one second all pass the
 * server's nonce replay check; roost_client_set_signing_key refuses unusable keys. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/harness.h"
#include "proto/httpsig.h"
#include "roost/roost.h"

#include "common/banned.h"

#define KEYS TESTS_DIR "/data/rfc9421/keys"
#define ED_PRIV KEYS "/test-key-ed25519.priv.pem"
#define ED_PUB KEYS "/test-key-ed25519.pub.pem"
#define EC_PRIV KEYS "/test-key-ecc-p256.priv.pem"
#define SECRET KEYS "/test-shared-secret.b64"

static struct roostd d;
static char *tok, *adm;
static char tmpdir[256];

/* ---- running the CLI ---- */

struct cli_result {
    int code; /* exit status, -1 when it did not exit normally */
    char *out, *err;
};

static void cli_result_cleanup(struct cli_result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* Runs `roost ARGS... --server URL --token T` (token may be NULL: none); NULL-ended args. */
static struct cli_result run_cli(const char *token, const char *const *args)
{
    struct cli_result r = {.code = -1};
    char *out_path = h_fmt("%s/cli.out", tmpdir), *err_path = h_fmt("%s/cli.err", tmpdir);
    const char *argv[64];
    size_t n = 0;
    argv[n++] = "roost";
    for (size_t i = 0; args[i] != NULL && n < 58; i++) {
        argv[n++] = args[i];
    }
    argv[n++] = "--server";
    argv[n++] = d.url;
    if (token != NULL) {
        argv[n++] = "--token";
        argv[n++] = token;
    }
    argv[n++] = "--compact";
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || fe < 0) {
            _exit(126);
        }
        dup2(fo, 1);
        dup2(fe, 2);
        execv(ROOST_CLI_BIN, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st)) {
        r.code = WEXITSTATUS(st);
    }
    size_t len = 0;
    if (h_read_file(out_path, &r.out, &len) != 0) {
        r.out = strdup("");
    }
    if (h_read_file(err_path, &r.err, &len) != 0) {
        r.err = strdup("");
    }
    free(out_path);
    free(err_path);
    return r;
}

/* Runs and checks the exit code and, when want_err is set, that stderr names it. Returns the
 * parsed stdout (NULL when not JSON). */
static json_t *expect_cli(const char *label, int want_code, const char *want_err, const char *token,
                          const char *const *args)
{
    struct cli_result r = run_cli(token, args);
    bool ok = r.code == want_code && (want_err == NULL || strstr(r.err, want_err) != NULL);
    CHECK_CASE(label, ok);
    if (!ok) {
        fprintf(stderr, "[%s] exit %d (want %d, stderr ~ %s)\nstdout: %s\nstderr: %s\n", label,
                r.code, want_code, want_err ? want_err : "-", r.out, r.err);
    }
    json_t *j = json_loads(r.out, JSON_DISABLE_EOF_CHECK, NULL);
    cli_result_cleanup(&r);
    return j;
}

/* ---- the tests ---- */

struct alg_case {
    const char *name;     /* "ed" / "hm" */
    const char *alg;      /* alg for keys add */
    const char *priv;     /* --key-file */
    const char *material; /* --public-key-file / --secret-file */
    bool hmac;
};

static void keys_add(const struct alg_case *k, const char *key_id, const char *agent, int want,
                     const char *want_err)
{
    const char *args[] = {"keys",      "add",     "--key-id",
                          key_id,      "--agent", agent,
                          "--alg",     k->alg,    k->hmac ? "--secret-file" : "--public-key-file",
                          k->material, NULL};
    json_t *j = expect_cli(key_id, want, want_err, adm, args);
    if (want == 0) {
        CHECK_CASE(key_id, j && strcmp(h_str(j, "key_id") ? h_str(j, "key_id") : "", key_id) == 0);
        CHECK_CASE(key_id, j && json_is_null(json_object_get(j, "revoked_at")));
    }
    json_decref(j);
}

/* Ends the CLI arguments args[0..n) with the options that sign with key_id (none when NULL) and a
 * NULL; --key-alg only `with_alg` (the CLI reads an asymmetric key's algorithm from its PEM). */
static void key_args(const char **args, size_t n, const struct alg_case *k, const char *key_id,
                     bool with_alg)
{
    if (key_id != NULL) {
        args[n++] = "--key-file";
        args[n++] = k->priv;
        args[n++] = "--key-id";
        args[n++] = key_id;
        if (with_alg) {
            args[n++] = "--key-alg";
            args[n++] = k->alg;
        }
    }
    args[n] = NULL;
}

/* Publishes one event to `agent` signed (key_id NULL: unsigned); returns the event id or NULL. */
static char *cli_publish(const char *label, const struct alg_case *k, const char *key_id,
                         const char *agent, int want, const char *want_err)
{
    const char *args[16] = {"publish", "--agent", agent, "--payload", "{\"n\":1}"};
    key_args(args, 5, k, key_id, true);
    json_t *j = expect_cli(label, want, want_err, tok, args);
    char *id = NULL;
    if (want == 0) {
        const char *eid = h_str(h_at(json_object_get(j, "events"), 0), "event_id");
        CHECK_CASE(label, eid != NULL);
        id = eid ? strdup(eid) : NULL;
    }
    json_decref(j);
    return id;
}

/* Claims one event of `agent` signed (key_id NULL: unsigned); *lease gets its lease token. */
static char *cli_claim(const char *label, const struct alg_case *k, const char *key_id,
                       const char *agent, int want, const char *want_err, char **lease)
{
    const char *args[16] = {"claim", "--agent", agent, "--limit", "1"};
    key_args(args, 5, k, key_id, k->hmac);
    json_t *j = expect_cli(label, want, want_err, tok, args);
    char *id = NULL;
    *lease = NULL;
    if (want == 0) {
        json_t *ev = h_at(json_object_get(j, "events"), 0);
        CHECK_CASE(label, ev != NULL && h_str(ev, "lease_token") != NULL);
        if (ev != NULL && h_str(ev, "event_id") && h_str(ev, "lease_token")) {
            id = strdup(h_str(ev, "event_id"));
            *lease = strdup(h_str(ev, "lease_token"));
        }
    }
    json_decref(j);
    return id;
}

static void cli_ack(const char *label, const struct alg_case *k, const char *key_id,
                    const char *agent, const char *event_id, const char *lease, int want,
                    const char *want_err)
{
    const char *args[16] = {"ack", "--agent", agent, event_id ? event_id : "x",
                            lease ? lease : "x"};
    key_args(args, 5, k, key_id, true);
    json_t *j = expect_cli(label, want, want_err, tok, args);
    json_decref(j);
}

static void test_cli_signed_round_trip(const struct alg_case *k)
{
    char *prod = h_fmt("%s-prod", k->name), *agent = h_fmt("%s-agent", k->name);
    char *akey = h_fmt("%s-a", k->name);
    keys_add(k, prod, "*", 0, NULL);
    keys_add(k, akey, agent, 0, NULL);
    keys_add(k, akey, agent, 3, "key_exists"); /* a key id is never reused */

    /* keys list shows both. */
    const char *list_args[] = {"keys", "list", NULL};
    json_t *list = expect_cli("keys list", 0, NULL, adm, list_args);
    int seen = 0;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(list, "keys"), i, it)
    {
        const char *id = h_str(it, "key_id");
        seen += id && (strcmp(id, prod) == 0 || strcmp(id, akey) == 0) &&
                strcmp(h_str(it, "alg") ? h_str(it, "alg") : "", k->alg) == 0;
    }
    CHECK_EQ(seen, 2);
    json_decref(list);

    /* Unsigned: refused with the 401 code, exit 1. */
    free(cli_publish("publish unsigned", k, NULL, agent, 1, "(signature_missing)"));
    /* Signed with the producer key: accepted; twice, so claim has two. */
    char *e1 = cli_publish("publish signed", k, prod, agent, 0, NULL);
    char *e2 = cli_publish("publish signed 2", k, prod, agent, 0, NULL);
    /* An agent key does not sign a publish. */
    free(cli_publish("publish agent key", k, akey, agent, 1, "(key_wrong_agent)"));

    char *lease = NULL;
    free(cli_claim("claim unsigned", k, NULL, agent, 1, "(signature_missing)", &lease));
    free(cli_claim("claim producer key", k, prod, agent, 1, "(key_wrong_agent)", &lease));
    char *c1 = cli_claim("claim signed", k, akey, agent, 0, NULL, &lease);
    CHECK(c1 && e1 && strcmp(c1, e1) == 0);
    cli_ack("ack unsigned", k, NULL, agent, c1, lease, 1, "(signature_missing)");
    cli_ack("ack signed", k, akey, agent, c1, lease, 0, NULL);
    free(lease);

    /* Through the environment instead of flags. */
    setenv("ROOST_KEY_FILE", k->priv, 1);
    setenv("ROOST_KEY_ID", akey, 1);
    setenv("ROOST_KEY_ALG", k->alg, 1);
    char *c2 = cli_claim("claim env", k, NULL, agent, 0, NULL, &lease);
    CHECK(c2 && e2 && strcmp(c2, e2) == 0);
    unsetenv("ROOST_KEY_FILE");
    unsetenv("ROOST_KEY_ID");
    unsetenv("ROOST_KEY_ALG");

    /* Revoked: refused. */
    const char *rev_a[] = {"keys", "revoke", akey, NULL};
    json_t *rj = expect_cli("revoke agent key", 0, NULL, adm, rev_a);
    CHECK(rj && json_is_string(json_object_get(rj, "revoked_at")));
    json_decref(rj);
    const char *rev_p[] = {"keys", "revoke", prod, NULL};
    json_decref(expect_cli("revoke producer key", 0, NULL, adm, rev_p));
    const char *rev_none[] = {"keys", "revoke", "no-such-key", NULL};
    json_decref(expect_cli("revoke unknown", 3, "(key_not_found)", adm, rev_none));
    cli_ack("ack revoked", k, akey, agent, c2, lease, 1, "(key_revoked)");
    free(lease);
    free(cli_publish("publish revoked", k, prod, agent, 1, "(key_revoked)"));
    free(cli_claim("claim revoked", k, akey, agent, 1, "(key_revoked)", &lease));

    free(lease);
    free(c1);
    free(c2);
    free(e1);
    free(e2);
    free(prod);
    free(agent);
    free(akey);
}

static void test_cli_ed25519(void)
{
    static const struct alg_case k = {"ed", "ed25519", ED_PRIV, ED_PUB, false};
    test_cli_signed_round_trip(&k);
}

static void test_cli_hmac(void)
{
    static const struct alg_case k = {"hm", "hmac-sha256", SECRET, SECRET, true};
    test_cli_signed_round_trip(&k);
}

static void test_cli_usage(void)
{
    /* A key file without a key id is a usage error; so is a public key (cannot sign). */
    const char *a1[] = {"publish", "--agent", "x", "--payload", "{}", "--key-file", ED_PRIV, NULL};
    json_decref(expect_cli("no key id", 2, "--key-id", tok, a1));
    const char *a2[] = {"publish",    "--agent", "x",        "--payload", "{}",
                        "--key-file", ED_PUB,    "--key-id", "k1",        NULL};
    json_decref(expect_cli("public key", 2, "(invalid_public_key)", tok, a2));
    const char *a3[] = {"keys", "add", "--key-id", "k", "--agent", "a", "--alg", "ed25519", NULL};
    json_decref(expect_cli("keys add without material", 2, NULL, adm, a3));
    const char *helps[][4] = {{"keys", "add", "--help", NULL},
                              {"keys", "list", "--help", NULL},
                              {"keys", "revoke", "--help", NULL}};
    for (size_t i = 0; i < 3; i++) {
        struct cli_result r = run_cli(NULL, helps[i]);
        CHECK_CASE(helps[i][1], r.code == 0 && strstr(r.out, "Usage: roost keys") != NULL);
        cli_result_cleanup(&r);
    }
}

/* The SDK directly: key loading errors, and 40 signed requests in about one second all pass the
 * server's (keyid, nonce) replay check, so every nonce was fresh. */
static void test_sdk_keys_and_nonces(void)
{
    struct roost_client *c = NULL;
    CHECK_EQ(roost_client_new(&c, d.url, tok), ROOST_OK);
    if (c == NULL) {
        return;
    }
    CHECK_EQ(roost_client_set_signing_key(c, ED_PUB, "k", NULL), ROOST_EKEYMATERIAL);
    CHECK(strlen(roost_client_errmsg(c)) > 0);
    CHECK_EQ(roost_client_set_signing_key(c, ED_PRIV, "bad/id", NULL), ROOST_EKEYID);
    CHECK_EQ(roost_client_set_signing_key(c, ED_PRIV, "k", "dsa"), ROOST_EKEYALG);
    CHECK_EQ(roost_client_set_signing_key(c, EC_PRIV, "k", "ed25519"), ROOST_EKEYALG);
    CHECK_EQ(roost_client_set_signing_key(c, TESTS_DIR "/no/such.pem", "k", NULL), ROOST_EIO);
    CHECK_EQ(roost_client_set_signing_key(c, "base64:c2hvcnQ=", "k", "hmac-sha256"),
             ROOST_EKEYMATERIAL);
    CHECK_EQ(roost_client_set_signing_key(NULL, ED_PRIV, "k", NULL), ROOST_EINVAL);

    const struct alg_case k = {"sdk", "ed25519", ED_PRIV, ED_PUB, false};
    keys_add(&k, "sdk-a", "sdk-agent", 0, NULL);
    keys_add(&k, "sdk-prod", "*", 0, NULL);
    /* Inline PEM text works as well as a path. */
    char *pem = NULL;
    size_t len = 0;
    CHECK(h_read_file(ED_PRIV, &pem, &len) == 0);
    CHECK_EQ(roost_client_set_signing_key(c, pem ? pem : "", "sdk-prod", NULL), ROOST_OK);
    free(pem);
    struct roost_message m;
    roost_message_init(&m);
    const char *to[] = {"sdk-agent"};
    m.recipients = to;
    m.n_recipients = 1;
    m.payload = "{\"x\":\"y\"}";
    int ok = 0;
    for (int i = 0; i < 20; i++) {
        struct roost_events *evs = NULL;
        int rc = roost_publish(c, &m, &evs);
        ok += rc == ROOST_OK;
        if (rc != ROOST_OK) {
            fprintf(stderr, "publish %d: %s (%s)\n", i, roost_client_errmsg(c),
                    roost_client_errcode(c));
        }
        roost_events_free(evs);
    }
    CHECK_EQ(ok, 20);
    /* The other key types sign as well (alg implied by the PEM key). */
    static const struct {
        const char *id, *alg, *pub, *priv;
    } more[] = {
        {"sdk-ec", "ecdsa-p256-sha256", KEYS "/test-key-ecc-p256.pub.pem", EC_PRIV},
        {"sdk-pss", "rsa-pss-sha512", KEYS "/test-key-rsa-pss.pub.pem",
         KEYS "/test-key-rsa-pss.priv.pem"},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        const struct alg_case mk = {"x", more[i].alg, more[i].priv, more[i].pub, false};
        keys_add(&mk, more[i].id, "*", 0, NULL);
        CHECK_CASE(more[i].id,
                   roost_client_set_signing_key(c, more[i].priv, more[i].id, NULL) == ROOST_OK);
        struct roost_events *evs = NULL;
        int rc = roost_publish(c, &m, &evs);
        CHECK_CASE(more[i].id, rc == ROOST_OK);
        if (rc != ROOST_OK) {
            fprintf(stderr, "%s: %s (%s)\n", more[i].id, roost_client_errmsg(c),
                    roost_client_errcode(c));
        }
        roost_events_free(evs);
    }
    /* Reads with a query (@query covered) on the agent's key. */
    CHECK_EQ(roost_client_set_signing_key(c, ED_PRIV, "sdk-a", "ed25519"), ROOST_OK);
    ok = 0;
    for (int i = 0; i < 20; i++) {
        struct roost_events *evs = NULL;
        int rc = roost_inbox_read(c, "sdk-agent", 0, 5, 0, &evs);
        ok += rc == ROOST_OK && evs != NULL && evs->count == 5;
        if (rc != ROOST_OK) {
            fprintf(stderr, "read %d: %s (%s)\n", i, roost_client_errmsg(c),
                    roost_client_errcode(c));
        }
        roost_events_free(evs);
    }
    CHECK_EQ(ok, 20);
    /* Removing the key: unsigned again, refused. */
    CHECK_EQ(roost_client_set_signing_key(c, NULL, NULL, NULL), ROOST_OK);
    struct roost_events *evs = NULL;
    CHECK_EQ(roost_inbox_read(c, "sdk-agent", 0, 5, 0, &evs), ROOST_ESIGMISSING);
    CHECK_STREQ(roost_client_errcode(c), "signature_missing");
    roost_events_free(evs);
    roost_client_free(c);
}

/* ---- the exact headers, captured by a fake server ---- */

#define CAPTURE_N 2

struct capture {
    int lfd;
    char req[CAPTURE_N][16384];
};

/* Case-insensitive strstr (strcasestr is a GNU extension). */
static const char *find_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay != '\0'; hay++) {
        if (strncasecmp(hay, needle, n) == 0) {
            return hay;
        }
    }
    return NULL;
}

/* Accepts CAPTURE_N connections, reads one request from each (headers + Content-Length body)
 * and answers 200 {}. */
static void *capture_main(void *arg)
{
    struct capture *cap = arg;
    for (int i = 0; i < CAPTURE_N; i++) {
        int fd = accept(cap->lfd, NULL, NULL); /* bounded by the listener's SO_RCVTIMEO */
        if (fd < 0) {
            return NULL;
        }
        struct timeval tv = {.tv_sec = 10};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        size_t len = 0;
        char *buf = cap->req[i];
        for (;;) {
            ssize_t n = recv(fd, buf + len, sizeof cap->req[i] - 1 - len, 0);
            if (n <= 0) {
                break;
            }
            len += (size_t)n;
            buf[len] = '\0';
            char *end = strstr(buf, "\r\n\r\n");
            if (end != NULL) {
                const char *cl = find_ci(buf, "\r\nContent-Length:");
                size_t want = cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
                if (len >= (size_t)(end + 4 - buf) + want) {
                    break;
                }
            }
            if (len + 1 >= sizeof cap->req[i]) {
                break;
            }
        }
        static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                    "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
        ssize_t w = send(fd, reply, sizeof reply - 1, MSG_NOSIGNAL);
        (void)w;
        close(fd);
    }
    return NULL;
}

/* The value of header `name` in a captured request (copied), or NULL. */
static char *cap_header(const char *req, const char *name)
{
    char *needle = h_fmt("\r\n%s:", name);
    const char *p = find_ci(req, needle);
    char *v = NULL;
    if (p != NULL) {
        p += strlen(needle);
        while (*p == ' ') {
            p++;
        }
        size_t n = strcspn(p, "\r\n");
        v = strndup(p, n);
    }
    free(needle);
    return v;
}

/* Checks one captured request: the components roostd requires and nothing else, created = now,
 * expires = created + 60, a 128-bit base64url nonce, keyid, alg, and a signature that verifies
 * with the public key over exactly what was sent. Returns the nonce (caller frees). */
static char *check_captured(const char *label, const char *req, const char *const *want_comp,
                            size_t n_want, EVP_PKEY *pub)
{
    char method[16] = "", target[1024] = "";
    CHECK_CASE(label, sscanf(req, "%15s %1023s HTTP/1.1", method, target) == 2);
    char *host = cap_header(req, "Host"), *authz = cap_header(req, "Authorization");
    char *digest = cap_header(req, "Content-Digest");
    char *si = cap_header(req, "Signature-Input"), *sig = cap_header(req, "Signature");
    CHECK_CASE(label, host && authz && si && sig);
    char *nonce = NULL;
    struct httpsig_signature s;
    if (!si || !sig || httpsig_parse(si, strlen(si), sig, strlen(sig), "sig1", &s) != HTTPSIG_OK) {
        CHECK_CASE(label, !"Signature-Input/Signature parse with label sig1");
        goto out;
    }
    const struct httpsig_params *p = &s.params;
    CHECK_CASE(label, p->n_components == n_want);
    for (size_t i = 0; i < n_want && i < p->n_components; i++) {
        CHECK_CASE(want_comp[i], httpsig_params_covers(p, want_comp[i]));
    }
    int64_t now = (int64_t)time(NULL);
    CHECK_CASE(label, p->has_created && p->created >= now - 5 && p->created <= now + 1);
    CHECK_CASE(label, p->has_expires && p->expires - p->created == 60);
    CHECK_CASE(label, p->keyid && strcmp(p->keyid, "cap-key") == 0);
    CHECK_CASE(label, p->alg && strcmp(p->alg, "ed25519") == 0);
    CHECK_CASE(label, p->nonce && strlen(p->nonce) == 22 &&
                          strspn(p->nonce, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                           "0123456789-_") == 22);
    nonce = p->nonce ? strdup(p->nonce) : NULL;
    char *q = strchr(target, '?');
    if (q != NULL) {
        *q++ = '\0';
    }
    struct httpsig_header h[3] = {{"Host", host}, {"Authorization", authz}};
    size_t nh = 2;
    if (digest != NULL) {
        h[nh++] = (struct httpsig_header){"Content-Digest", digest};
    }
    struct httpsig_message m = {.method = method,
                                .scheme = "http",
                                .authority = host,
                                .path = target,
                                .query = q,
                                .headers = h,
                                .n_headers = nh};
    struct httpsig_key key = {.alg = HTTPSIG_ALG_ED25519, .pkey = pub};
    CHECK_CASE(label, httpsig_verify(&m, &s, &key) == HTTPSIG_OK);
    httpsig_signature_cleanup(&s);
out:
    free(host);
    free(authz);
    free(digest);
    free(si);
    free(sig);
    return nonce;
}

static void test_signed_headers_exact(void)
{
    struct capture *cap = calloc(1, sizeof *cap);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    cap->lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(cap->lfd >= 0 && bind(cap->lfd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
          listen(cap->lfd, 4) == 0 && getsockname(cap->lfd, (struct sockaddr *)&sa, &sl) == 0);
    /* A request that never comes ends the capture thread after 10 s: a failure, not a hang. */
    struct timeval tv = {.tv_sec = 10};
    setsockopt(cap->lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, capture_main, cap) == 0);
    /* A base URL with a path prefix: @path is the whole path as sent. */
    char *url = h_fmt("http://127.0.0.1:%d/prefix/", ntohs(sa.sin_port));
    struct roost_client *c = NULL;
    CHECK_EQ(roost_client_new(&c, url, "tok-123"), ROOST_OK);
    CHECK_EQ(roost_client_set_signing_key(c, ED_PRIV, "cap-key", "ed25519"), ROOST_OK);
    int status = 0;
    CHECK_EQ(roost_client_request(c, "POST", "/api/v1/x?a=1&b=two", "{\"k\":1}", &status, NULL),
             ROOST_OK);
    CHECK_EQ(roost_client_request(c, "GET", "/api/v1/y", NULL, &status, NULL), ROOST_OK);
    roost_client_free(c);
    pthread_join(th, NULL);
    close(cap->lfd);

    char *text = NULL;
    size_t len = 0;
    EVP_PKEY *pub = NULL;
    CHECK(h_read_file(ED_PUB, &text, &len) == 0);
    CHECK(text && httpsig_key_from_pem(text, len, &pub) == HTTPSIG_OK);
    free(text);
    char *host = h_fmt("127.0.0.1:%d", ntohs(sa.sin_port));
    static const char *const post_comp[] = {"@method",    "@path",          "@query",
                                            "@authority", "content-digest", "authorization"};
    static const char *const get_comp[] = {"@method", "@path", "@authority", "authorization"};
    char *n1 = check_captured("POST", cap->req[0], post_comp, 6, pub);
    char *n2 = check_captured("GET", cap->req[1], get_comp, 4, pub);
    CHECK(n1 && n2 && strcmp(n1, n2) != 0);
    CHECK(strncmp(cap->req[0], "POST /prefix/api/v1/x?a=1&b=two HTTP/1.1\r\n", 42) == 0);
    char *h0 = cap_header(cap->req[0], "Host"), *d0 = cap_header(cap->req[0], "Content-Digest");
    CHECK_STREQ(h0, host);
    CHECK(d0 && strncmp(d0, "sha-256=:", 9) == 0);
    char *d1 = cap_header(cap->req[1], "Content-Digest");
    CHECK(d1 == NULL); /* no body, no digest */
    free(h0);
    free(d0);
    free(d1);
    free(n1);
    free(n2);
    free(host);
    free(url);
    EVP_PKEY_free(pub);
    free(cap);
}

/* The events of `agent` that are completed, read with a signed client. */
static int completed_count(struct roost_client *c, const char *agent)
{
    struct roost_events *evs = NULL;
    int n = 0;
    if (roost_inbox_read(c, agent, 0, 100, 0, &evs) == ROOST_OK) {
        for (size_t i = 0; i < evs->count; i++) {
            n += evs->items[i]->status && strcmp(evs->items[i]->status, "completed") == 0;
        }
    }
    roost_events_free(evs);
    return n;
}

static int file_lines(const char *path)
{
    char *data = NULL;
    size_t len = 0;
    int n = 0;
    if (h_read_file(path, &data, &len) == 0) {
        for (size_t i = 0; i < len; i++) {
            n += data[i] == '\n';
        }
    }
    free(data);
    return n;
}

static void test_agent_run_signed(void)
{
    const struct alg_case k = {"run", "ed25519", ED_PRIV, ED_PUB, false};
    keys_add(&k, "run-a", "runner", 0, NULL);
    keys_add(&k, "run-prod", "*", 0, NULL);
    struct roost_client *pub = NULL, *reader = NULL;
    CHECK_EQ(roost_client_new(&pub, d.url, tok), ROOST_OK);
    CHECK_EQ(roost_client_new(&reader, d.url, tok), ROOST_OK);
    if (pub == NULL || reader == NULL) {
        roost_client_free(pub);
        roost_client_free(reader);
        return;
    }
    CHECK_EQ(roost_client_set_signing_key(pub, ED_PRIV, "run-prod", NULL), ROOST_OK);
    CHECK_EQ(roost_client_set_signing_key(reader, ED_PRIV, "run-a", NULL), ROOST_OK);
    struct roost_message m;
    roost_message_init(&m);
    const char *to[] = {"runner"};
    m.recipients = to;
    m.n_recipients = 1;
    for (int i = 0; i < 5; i++) {
        struct roost_events *evs = NULL;
        CHECK_EQ(roost_publish(pub, &m, &evs), ROOST_OK);
        roost_events_free(evs);
    }

    int refused_before = roostd_log_count(&d, "signature refused");
    int streams_before = roostd_log_count(&d, "stream opened");
    char *state = h_fmt("%s/agent-state", tmpdir), *out = h_fmt("%s/handled.txt", tmpdir);
    char *log = h_fmt("%s/agent.log", tmpdir);
    char *cmd = h_fmt("echo \"$ROOST_EVENT_ID\" >> '%s'", out);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(ROOST_CLI_BIN, "roost", "agent", "run", "--server", d.url, "--token", tok, "--agent",
              "runner", "--state-dir", state, "--exec", cmd, "--key-file", ED_PRIV, "--key-id",
              "run-a", (char *)NULL);
        _exit(127);
    }
    bool ok = false;
    H_WAIT_UNTIL(ok, 30000, file_lines(out) >= 5 && completed_count(reader, "runner") == 5);
    CHECK(ok);
    CHECK_EQ(file_lines(out), 5);
    CHECK_EQ(completed_count(reader, "runner"), 5);
    /* One more while it streams (SSE signed too): handled without a restart. */
    struct roost_events *evs = NULL;
    CHECK_EQ(roost_publish(pub, &m, &evs), ROOST_OK);
    roost_events_free(evs);
    H_WAIT_UNTIL(ok, 30000, completed_count(reader, "runner") == 6);
    CHECK(ok);
    /* Its SSE stream was opened (signed: the route requires it), and roostd refused nothing. */
    CHECK(roostd_log_count(&d, "stream opened") > streams_before);
    CHECK_EQ(roostd_log_count(&d, "signature refused"), refused_before);
    int st = -1;
    if (pid > 0) {
        kill(pid, SIGTERM);
        int64_t deadline = h_now_ms() + 20000;
        int wst = 0;
        pid_t w;
        while ((w = waitpid(pid, &wst, WNOHANG)) == 0 && h_now_ms() < deadline) {
            h_sleep_ms(10);
        }
        if (w == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &wst, 0);
        }
        st = WIFEXITED(wst) ? WEXITSTATUS(wst) : -1;
    }
    CHECK_EQ(st, 0);
    /* Nothing was refused on the way: no signature error in the agent's log. */
    char *text = NULL;
    size_t len = 0;
    CHECK(h_read_file(log, &text, &len) == 0);
    CHECK(text && strstr(text, "signature_") == NULL && strstr(text, "key_") == NULL);
    if (check_failed && text) {
        fprintf(stderr, "---- agent log ----\n%s\n----\n", text);
    }
    free(text);

    /* With the key revoked, the agent stops with the auth exit code (1) naming the code. */
    const char *rev[] = {"keys", "revoke", "run-a", NULL};
    json_decref(expect_cli("revoke run-a", 0, NULL, adm, rev));
    const char *args[] = {"agent",    "run",    "--agent", "runner",     "--state-dir",
                          state,      "--exec", "true",    "--key-file", ED_PRIV,
                          "--key-id", "run-a",  "--quiet", NULL};
    json_decref(expect_cli("agent run revoked", 1, "key_revoked", tok, args));

    roost_client_free(pub);
    roost_client_free(reader);
    free(state);
    free(out);
    free(log);
    free(cmd);
}

int main(void)
{
    h_init();
    unsetenv("ROOST_KEY_FILE");
    unsetenv("ROOST_KEY_ID");
    unsetenv("ROOST_KEY_ALG");
    unsetenv("ROOST_TOKEN");
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/roost-sdksign-XXXXXX", t && *t ? t : "/tmp");
    if (mkdtemp(tmpdir) == NULL) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    static const char *const sets[] = {"signatures.require=all", NULL};
    if (roostd_start(&d, NULL, sets) != 0) {
        CHECK(!"roostd starts");
        return h_summary();
    }
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    adm = h_token(&d, "t1", "tenant:admin");

    RUN(test_cli_usage);
    RUN(test_cli_ed25519);
    RUN(test_cli_hmac);
    RUN(test_sdk_keys_and_nonces);
    RUN(test_signed_headers_exact);
    RUN(test_agent_run_signed);

    CHECK_EQ(roostd_stop(&d), 0);
    if (check_failed) {
        roostd_print_log(&d);
    }
    roostd_remove_dir(&d);
    char *rm = h_fmt("rm -rf '%s'", tmpdir);
    int r = system(rm);
    (void)r;
    free(rm);
    free(tok);
    free(adm);
    return h_summary();
}
