/* SPDX-License-Identifier: MIT */
/* Bearer-token authentication with roostd's own Ed25519 key and an identity provider's keys
 * (auth.jwks_file: EdDSA, ES256, RS256; auth.hs256_secret_file: HS256; auth.issuer and
 * auth.audience checked for those), and the scope grammar of DESIGN §6.1:
 *
 *   agent:<sel>:read | agent:<sel>:consume | agent:<sel>:publish | tenant:admin
 *   <sel> = agent id, or a prefix followed by one trailing '*' ("*" alone matches every agent)
 *
 * Every failure is ROOST_EUNAUTHENTICATED without detail: a client learns nothing about which check
 * failed, with one exception: a token whose signature verifies but whose exp has passed says when
 * it expired (its holder can read exp from it anyway). The key is read-only after auth_new, so
 * verification runs on any thread. */
#include "server/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/fsutil.h"
#include "common/hash.h"
#include "common/ids.h"
#include "common/limits.h"
#include "proto/jwk.h"
#include "proto/jwt.h"
#include "roost/roost_error.h"

#include "common/banned.h"

#define AUTH_SKEW_MS JWT_LEEWAY_MS
#define AUTH_SUB_MAX 256

/* Verified tokens, so a client pays for one Ed25519 verification per token rather than one per
 * request (a verify costs ~100-170 µs, more than the rest of a request). Keyed by the token
 * itself: the slot is picked by the FNV-1a hash of its last TOKEN_HASH_TAIL bytes (the end of
 * the signature, which differs between any two tokens; hashing all of a ~400-byte token cost
 * ~1,600 instructions per request) and a hit compares every byte (a SHA-256 digest cost ~10,000
 * instructions per request in OpenSSL 3; only verified tokens are ever stored, so a chosen
 * collision can at most evict an entry). A hit re-checks the time claims against `now`.
 * Direct-mapped, mutex-protected. */
#define TOKEN_CACHE_SLOTS 256
#define TOKEN_HASH_TAIL 32

struct token_slot {
    char *token; /* a copy of the verified token, NULL when the slot is empty */
    size_t token_len;
    int64_t nbf_ms; /* JWT_NO_TIME = absent */
    int64_t iat_ms;
    struct auth_principal principal;
};

struct token_cache {
    pthread_mutex_t mu;
    struct token_slot slots[TOKEN_CACHE_SLOTS];
};

struct auth {
    EVP_PKEY *key;    /* roostd's own Ed25519 key: kid-less EdDSA tokens (`roost token mint`) */
    struct jwk own;   /* the same key as a jwk */
    struct jwks jwks; /* auth.jwks_file; no keys when unset */
    struct jwk hs256; /* auth.hs256_secret_file; has_hs256 when set */
    bool has_hs256;
    char *issuer;   /* auth.issuer, NULL when unset */
    char *audience; /* auth.audience, NULL when unset */
    struct token_cache *cache;
};

/* ---- key file ---- */

static EVP_PKEY *read_key_file(const char *path, char *err, size_t errlen)
{
    EVP_PKEY *key = NULL;
    FILE *fp = fopen(path, "re");
    if (fp == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    key = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
    fclose(fp);
    if (key == NULL) {
        ERR_clear_error();
        snprintf(err, errlen, "%s: not a PEM private key", path);
        return NULL;
    }
    if (!EVP_PKEY_is_a(key, "ED25519")) {
        EVP_PKEY_free(key);
        snprintf(err, errlen, "%s: not an Ed25519 key", path);
        return NULL;
    }
    return key;
}

/* Writes `key` to a private temporary file next to `path`, then link()s it into place: link fails
 * with EEXIST instead of replacing, so a concurrent starter never sees a half-written key and the
 * loser of the race simply reads the winner's key. Returns 0, 1 when `path` already existed, -1. */
static int publish_key_file(const char *path, EVP_PKEY *key, char *err, size_t errlen)
{
    int rc = -1, fd = -1;
    FILE *fp = NULL;
    char tmp[4096];
    unsigned char rnd[6];
    bool tmp_created = false;

    if (ids_random(rnd, sizeof rnd) != 0) {
        snprintf(err, errlen, "%s: no randomness for a temporary name", path);
        goto out;
    }
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%02x%02x%02x%02x%02x%02x", path, rnd[0], rnd[1],
                     rnd[2], rnd[3], rnd[4], rnd[5]);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        goto out;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    tmp_created = true;
    fp = fdopen(fd, "w");
    if (fp == NULL) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    fd = -1; /* owned by fp now */
    if (PEM_write_PrivateKey(fp, key, NULL, NULL, 0, NULL, NULL) != 1) {
        ERR_clear_error();
        snprintf(err, errlen, "%s: cannot write the key", tmp);
        goto out;
    }
    if (fflush(fp) != 0 || fsync(fileno(fp)) != 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    int close_rc = fclose(fp);
    fp = NULL;
    if (close_rc != 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    if (link(tmp, path) != 0) {
        if (errno == EEXIST) {
            rc = 1;
        } else {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        }
        goto out;
    }
    rc = 0;
out:
    if (fp != NULL) {
        fclose(fp);
    }
    if (fd >= 0) {
        close(fd);
    }
    if (tmp_created) {
        unlink(tmp);
    }
    return rc;
}

EVP_PKEY *auth_load_key(const char *path, bool create, char *err, size_t errlen)
{
    EVP_PKEY *key = NULL;
    if (path == NULL || path[0] == '\0') {
        snprintf(err, errlen, "no key file given");
        return NULL;
    }
    if (access(path, F_OK) == 0 || errno != ENOENT || !create) {
        return read_key_file(path, err, errlen);
    }
    key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    if (key == NULL) {
        ERR_clear_error();
        snprintf(err, errlen, "%s: cannot generate an Ed25519 key", path);
        return NULL;
    }
    int rc = publish_key_file(path, key, err, errlen);
    if (rc == 0) {
        return key;
    }
    EVP_PKEY_free(key);
    if (rc == 1) {
        /* Another process created it first: use theirs, so every node signs alike. */
        return read_key_file(path, err, errlen);
    }
    return NULL;
}

/* Reads a file of at most `max` bytes; more is an error (never a silent truncation).
 * *buf is NUL-terminated and freed by the caller. 0 or -1 with err set. */
static int read_bounded(const char *path, size_t max, char **buf, size_t *len, char *err,
                        size_t errlen)
{
    if (fsutil_read_bounded(path, max, buf, len) != 0) {
        if (errno == EFBIG) {
            snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
        } else {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        }
        return -1;
    }
    return 0;
}

static int load_jwks(const char *path, struct jwks *out, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    char why[256] = "";
    if (read_bounded(path, JWKS_MAX_BYTES, &text, &len, err, errlen) != 0) {
        return -1;
    }
    int rc = jwks_parse(text, len, out, why, sizeof why);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
    } else if (out->n_keys == 0) {
        /* An empty set would silently refuse every token: more likely a wrong file. */
        snprintf(err, errlen, "%s: no usable key (EdDSA, ES256 or RS256 signing key)", path);
        jwks_cleanup(out);
        rc = -1;
    }
    free(text);
    return rc;
}

static int load_secret(const char *path, struct jwk *out, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    /* Room for the longest secret plus a trailing CRLF. */
    if (read_bounded(path, JWK_HMAC_MAX_BYTES + 2, &text, &len, err, errlen) != 0) {
        return -1;
    }
    size_t total = len;
    /* Editors add a final newline; it is not part of the secret. */
    if (len > 0 && text[len - 1] == '\n') {
        len--;
        if (len > 0 && text[len - 1] == '\r') {
            len--;
        }
    }
    int rc = jwk_from_secret((const unsigned char *)text, len, out);
    if (rc != 0) {
        snprintf(err, errlen, "%s: the HS256 secret must be %d..%d bytes (is %zu)", path,
                 JWK_HMAC_MIN_BYTES, JWK_HMAC_MAX_BYTES, len);
    }
    OPENSSL_cleanse(text, total);
    free(text);
    return rc;
}

static bool set(const char *v)
{
    return v != NULL && v[0] != '\0';
}

/* The identity provider's material: auth.jwks_file, auth.hs256_secret_file, issuer, audience. */
static int load_external(const struct config *cfg, struct auth *a, char *err, size_t errlen)
{
    if (set(cfg->auth_jwks_file) && load_jwks(cfg->auth_jwks_file, &a->jwks, err, errlen) != 0) {
        return ROOST_EIO;
    }
    if (set(cfg->auth_hs256_secret_file)) {
        if (load_secret(cfg->auth_hs256_secret_file, &a->hs256, err, errlen) != 0) {
            return ROOST_EIO;
        }
        a->has_hs256 = true;
    }
    if ((set(cfg->auth_issuer) && (a->issuer = strdup(cfg->auth_issuer)) == NULL) ||
        (set(cfg->auth_audience) && (a->audience = strdup(cfg->auth_audience)) == NULL)) {
        return ROOST_ENOMEM;
    }
    return ROOST_OK;
}

void auth_describe(const struct auth *a, char *buf, size_t len)
{
    if (a == NULL) {
        snprintf(buf, len, "(none)");
        return;
    }
    snprintf(buf, len,
             "own_key=ed25519 jwks_keys=%zu jwks_skipped=%zu%s hs256=%s issuer=%s audience=%s",
             a->jwks.n_keys, a->jwks.n_skipped,
             a->jwks.had_private_members ? " jwks_private_members=ignored" : "",
             a->has_hs256 ? "yes" : "no", a->issuer ? a->issuer : "(any)",
             a->audience ? a->audience : "(any)");
}

int auth_new(const struct config *cfg, struct auth **out, char *err, size_t errlen)
{
    int rc = ROOST_EIO;
    struct auth *a = NULL;
    char *path = NULL;
    bool create = false;

    *out = NULL;
    if (cfg->auth_key_file != NULL && cfg->auth_key_file[0] != '\0') {
        /* An explicit key file must exist: a typo must not silently mint a new key and
         * invalidate every token in circulation. */
        path = strdup(cfg->auth_key_file);
        if (path == NULL) {
            rc = ROOST_ENOMEM;
            goto out;
        }
    } else {
        const char *dir = cfg->data_dir != NULL && cfg->data_dir[0] != '\0' ? cfg->data_dir : ".";
        /* mode 0700: the directory holds the private key. */
        if (fsutil_mkdir_p(dir, 0700) != 0) {
            snprintf(err, errlen, "%s: %s", dir, strerror(errno));
            goto out;
        }
        size_t n = strlen(dir) + 1 + sizeof ROOST_TOKEN_KEY_FILE;
        path = malloc(n);
        if (path == NULL) {
            rc = ROOST_ENOMEM;
            goto out;
        }
        snprintf(path, n, "%s/%s", dir, ROOST_TOKEN_KEY_FILE);
        create = true;
    }
    a = calloc(1, sizeof *a);
    if (a == NULL || (a->cache = calloc(1, sizeof *a->cache)) == NULL) {
        rc = ROOST_ENOMEM;
        goto out;
    }
    pthread_mutex_init(&a->cache->mu, NULL);
    a->key = auth_load_key(path, create, err, errlen);
    if (a->key == NULL) {
        goto out;
    }
    if (jwk_from_pkey(a->key, NULL, &a->own) != 0) {
        snprintf(err, errlen, "%s: cannot use the key", path);
        goto out;
    }
    rc = load_external(cfg, a, err, errlen);
    if (rc != ROOST_OK) {
        goto out;
    }
    *out = a;
    a = NULL;
    rc = ROOST_OK;
out:
    if (rc == ROOST_ENOMEM) {
        snprintf(err, errlen, "out of memory");
    }
    auth_free(a);
    free(path);
    return rc;
}

void auth_free(struct auth *a)
{
    if (a == NULL) {
        return;
    }
    jwk_cleanup(&a->own);
    jwks_cleanup(&a->jwks);
    jwk_cleanup(&a->hs256);
    free(a->issuer);
    free(a->audience);
    EVP_PKEY_free(a->key);
    if (a->cache) {
        pthread_mutex_destroy(&a->cache->mu);
        for (size_t i = 0; i < TOKEN_CACHE_SLOTS; i++) {
            free(a->cache->slots[i].token);
        }
        free(a->cache);
    }
    free(a);
}

/* ---- scopes ---- */

static bool sel_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

/* An agent id, or a (possibly empty) prefix of agent-id characters followed by one '*'. */
static bool valid_selector(const char *s, size_t len)
{
    if (len == 0 || len > AUTH_SCOPE_SEL_MAX) {
        return false;
    }
    size_t body = s[len - 1] == '*' ? len - 1 : len;
    if (body > IDS_NAME_MAX) {
        return false;
    }
    for (size_t i = 0; i < body; i++) {
        if (!sel_char(s[i])) {
            return false;
        }
    }
    return true;
}

/* Parses one scope token; returns true and fills *out when it is one of ours. */
static bool parse_scope(const char *s, size_t len, struct auth_scope *out)
{
    static const char admin[] = "tenant:admin";
    if (len == sizeof admin - 1 && memcmp(s, admin, len) == 0) {
        out->action = AUTH_ADMIN;
        out->selector[0] = '\0';
        return true;
    }
    if (len < 6 || memcmp(s, "agent:", 6) != 0) {
        return false;
    }
    const char *sel = s + 6;
    const char *end = s + len;
    const char *colon = memchr(sel, ':', (size_t)(end - sel));
    if (colon == NULL) {
        return false;
    }
    size_t sel_len = (size_t)(colon - sel);
    const char *verb = colon + 1;
    size_t verb_len = (size_t)(end - verb);
    if (verb_len == 4 && memcmp(verb, "read", 4) == 0) {
        out->action = AUTH_READ;
    } else if (verb_len == 7 && memcmp(verb, "consume", 7) == 0) {
        out->action = AUTH_CONSUME;
    } else if (verb_len == 7 && memcmp(verb, "publish", 7) == 0) {
        out->action = AUTH_PUBLISH;
    } else {
        return false;
    }
    if (!valid_selector(sel, sel_len)) {
        return false;
    }
    memcpy(out->selector, sel, sel_len);
    out->selector[sel_len] = '\0';
    return true;
}

int auth_parse_scopes(const char *scope, struct auth_principal *p)
{
    p->n_scopes = 0;
    if (scope == NULL) {
        return 0;
    }
    const char *s = scope;
    while (*s != '\0') {
        while (*s == ' ') {
            s++;
        }
        const char *start = s;
        while (*s != '\0' && *s != ' ') {
            s++;
        }
        size_t len = (size_t)(s - start);
        if (len == 0) {
            continue;
        }
        struct auth_scope sc;
        if (!parse_scope(start, len, &sc)) {
            continue; /* another service's scope, or a malformed one: grants nothing */
        }
        if (p->n_scopes >= AUTH_MAX_SCOPES) {
            p->n_scopes = 0;
            return -1;
        }
        p->scopes[p->n_scopes++] = sc;
    }
    return 0;
}

static bool selector_matches(const char *sel, const char *agent_id, size_t agent_len)
{
    size_t sel_len = strlen(sel);
    if (sel_len > 0 && sel[sel_len - 1] == '*') {
        return agent_len >= sel_len - 1 && memcmp(sel, agent_id, sel_len - 1) == 0;
    }
    return sel_len == agent_len && memcmp(sel, agent_id, agent_len) == 0;
}

void auth_required_scope(enum auth_action action, const char *agent_id, char *buf, size_t len)
{
    static const char *const verb[] = {
        [AUTH_READ] = "read", [AUTH_CONSUME] = "consume", [AUTH_PUBLISH] = "publish"};
    if (action == AUTH_ADMIN) {
        snprintf(buf, len, "tenant:admin");
    } else {
        snprintf(buf, len, "agent:%s:%s", agent_id != NULL ? agent_id : "*", verb[action]);
    }
}

bool auth_allows(const struct auth_principal *p, enum auth_action action, const char *agent_id)
{
    if (p == NULL) {
        return false;
    }
    if (action == AUTH_ADMIN) {
        for (size_t i = 0; i < p->n_scopes; i++) {
            if (p->scopes[i].action == AUTH_ADMIN) {
                return true;
            }
        }
        return false;
    }
    if (agent_id == NULL) {
        return false;
    }
    size_t agent_len = strnlen(agent_id, IDS_NAME_MAX + 1);
    if (!ids_valid_name(agent_id, agent_len)) {
        return false;
    }
    for (size_t i = 0; i < p->n_scopes && i < AUTH_MAX_SCOPES; i++) {
        const struct auth_scope *sc = &p->scopes[i];
        bool action_ok;
        switch (action) {
        case AUTH_READ:
            action_ok = sc->action == AUTH_READ || sc->action == AUTH_CONSUME;
            break;
        case AUTH_CONSUME:
            action_ok = sc->action == AUTH_CONSUME;
            break;
        case AUTH_PUBLISH:
            action_ok = sc->action == AUTH_PUBLISH;
            break;
        default:
            action_ok = false;
            break;
        }
        if (action_ok && selector_matches(sc->selector, agent_id, agent_len)) {
            return true;
        }
    }
    return false;
}

/* ---- tokens ---- */

static int check_claims(const json_t *claims, int64_t now_ms, struct auth_principal *out,
                        int64_t *nbf_out, int64_t *iat_out)
{
    bool present;
    int64_t exp_ms = 0, nbf_ms = 0, iat_ms = 0;

    if (!jwt_numeric_date_ms(claims, "exp", &present, &exp_ms) || !present) {
        return -1;
    }
    if (!jwt_numeric_date_ms(claims, "nbf", &present, &nbf_ms)) {
        return -1;
    }
    nbf_ms = present ? nbf_ms : JWT_NO_TIME;
    if (!jwt_numeric_date_ms(claims, "iat", &present, &iat_ms)) {
        return -1;
    }
    iat_ms = present ? iat_ms : JWT_NO_TIME;
    if (!jwt_times_valid(exp_ms, nbf_ms, iat_ms, now_ms)) {
        if (now_ms >= exp_ms + AUTH_SKEW_MS) {
            out->exp_ms = exp_ms; /* expired: auth_authenticate tells when */
        }
        return -1;
    }
    *nbf_out = nbf_ms;
    *iat_out = iat_ms;

    const json_t *tenant = json_object_get(claims, "tenant");
    if (!json_is_string(tenant) ||
        !ids_valid_name(json_string_value(tenant), json_string_length(tenant))) {
        return -1;
    }
    memcpy(out->tenant_id, json_string_value(tenant), json_string_length(tenant) + 1);

    const json_t *sub = json_object_get(claims, "sub");
    if (sub != NULL) {
        if (!json_is_string(sub) || json_string_length(sub) > AUTH_SUB_MAX ||
            strlen(json_string_value(sub)) != json_string_length(sub)) {
            return -1;
        }
        memcpy(out->sub, json_string_value(sub), json_string_length(sub) + 1);
    }

    const json_t *scope = json_object_get(claims, "scope");
    if (scope != NULL) {
        if (!json_is_string(scope) ||
            strlen(json_string_value(scope)) != json_string_length(scope) ||
            auth_parse_scopes(json_string_value(scope), out) != 0) {
            return -1;
        }
    }
    out->exp_ms = exp_ms;
    return 0;
}

/* RFC 8725 §3.1/§3.2: the key fixes the algorithm, the header only selects among trusted keys.
 *   kid names a JWK Set key   → that key, which must be of the header's type;
 *   EdDSA, any other kid/none → roostd's own key (its tokens carry no kid; a kid was always
 *                               ignored for them, so old tokens keep working);
 *   HS256                     → the one secret, whatever the kid;
 *   ES256/RS256 without kid   → the only JWK Set key of that type, if there is exactly one.
 * NULL when no key fits (unknown kid included). *own tells roostd's key apart. */
static const struct jwk *select_key(const struct auth *a, enum jwt_alg alg, const char *kid,
                                    bool *own)
{
    *own = false;
    if (alg == JWT_ALG_UNKNOWN) {
        return NULL;
    }
    if (alg == JWT_ALG_HS256) {
        return a->has_hs256 ? &a->hs256 : NULL;
    }
    bool unknown_kid;
    const struct jwk *k = jwks_select(&a->jwks, alg, kid, &unknown_kid);
    if (alg == JWT_ALG_EDDSA && (kid == NULL || unknown_kid)) {
        *own = true;
        return &a->own;
    }
    return k;
}

static bool issuer_audience_ok(const struct auth *a, const json_t *claims)
{
    return jwt_issuer_audience_ok(claims, a->issuer, a->audience);
}

void auth_principal_clear(struct auth_principal *p)
{
    p->tenant_id[0] = '\0';
    p->sub[0] = '\0';
    p->n_scopes = 0;
    p->exp_ms = 0;
    /* Every field but the scope array: a stale ticket nonce would make a plain subscribe claim
     * a nonce that is not its own. */
    p->ticket_nonce[0] = '\0';
    p->ticket_exp_ms = 0;
}

/* Copies the used part only: the whole struct is ~17 KiB, a token a few scopes. */
static void principal_copy(struct auth_principal *dst, const struct auth_principal *src)
{
    memcpy(dst->tenant_id, src->tenant_id, sizeof dst->tenant_id);
    memcpy(dst->sub, src->sub, sizeof dst->sub);
    memcpy(dst->scopes, src->scopes, src->n_scopes * sizeof src->scopes[0]);
    dst->n_scopes = src->n_scopes;
    dst->exp_ms = src->exp_ms;
    memcpy(dst->ticket_nonce, src->ticket_nonce, sizeof dst->ticket_nonce);
    dst->ticket_exp_ms = src->ticket_exp_ms;
}

int auth_authenticate(const struct auth *a, const char *authorization, int64_t now_ms,
                      struct auth_principal *out)
{
    int rc = ROOST_EUNAUTHENTICATED;
    struct jwt_parts parts;
    bool decoded = false;

    auth_principal_clear(out);
    if (a == NULL || a->key == NULL || authorization == NULL) {
        return ROOST_EUNAUTHENTICATED;
    }
    const char *s;
    size_t token_len;
    if (jwt_bearer(authorization, &s, &token_len) != 0) {
        return ROOST_EUNAUTHENTICATED;
    }
    struct token_slot *slot = NULL;
    if (a->cache) {
        size_t tail = token_len < TOKEN_HASH_TAIL ? token_len : TOKEN_HASH_TAIL;
        uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, s + token_len - tail, tail);
        slot = &a->cache->slots[h % TOKEN_CACHE_SLOTS];
        pthread_mutex_lock(&a->cache->mu);
        if (slot->token != NULL && slot->token_len == token_len &&
            memcmp(slot->token, s, token_len) == 0) {
            bool valid =
                jwt_times_valid(slot->principal.exp_ms, slot->nbf_ms, slot->iat_ms, now_ms);
            if (valid) {
                principal_copy(out, &slot->principal);
            } else if (now_ms >= slot->principal.exp_ms + AUTH_SKEW_MS) {
                out->exp_ms = slot->principal.exp_ms;
            }
            pthread_mutex_unlock(&a->cache->mu);
            return valid ? ROOST_OK : ROOST_EUNAUTHENTICATED;
        }
        pthread_mutex_unlock(&a->cache->mu);
    }
    if (jwt_decode(s, token_len, &parts) != 0) {
        return ROOST_EUNAUTHENTICATED;
    }
    decoded = true;
    enum jwt_alg alg;
    const char *kid;
    if (jwt_header_check(&parts, &alg, &kid) != 0) {
        goto out;
    }
    bool own = false;
    const struct jwk *key = select_key(a, alg, kid, &own);
    if (key == NULL || jwt_verify(&parts, key) != 0) {
        goto out;
    }
    int64_t nbf_ms = 0, iat_ms = 0;
    if (check_claims(parts.claims, now_ms, out, &nbf_ms, &iat_ms) != 0) {
        goto out;
    }
    /* roostd's own tokens carry no iss or aud: the checks are for the identity provider's. */
    if (!own && !issuer_audience_ok(a, parts.claims)) {
        goto out;
    }
    rc = ROOST_OK;
    char *copy = slot != NULL ? malloc(token_len) : NULL;
    if (copy != NULL) {
        memcpy(copy, s, token_len);
        pthread_mutex_lock(&a->cache->mu);
        free(slot->token);
        slot->token = copy;
        slot->token_len = token_len;
        slot->nbf_ms = nbf_ms;
        slot->iat_ms = iat_ms;
        principal_copy(&slot->principal, out);
        pthread_mutex_unlock(&a->cache->mu);
    }
out:
    if (decoded) {
        jwt_parts_cleanup(&parts);
    }
    if (rc != ROOST_OK) {
        /* check_claims leaves exp behind for a verified token; keep it only when the token failed
         * because it expired (not, say, a valid one from the wrong issuer). */
        int64_t exp_ms = out->exp_ms;
        auth_principal_clear(out);
        out->exp_ms = exp_ms != 0 && now_ms >= exp_ms + AUTH_SKEW_MS ? exp_ms : 0;
    }
    return rc;
}

/* ---- subscribe tickets (see auth.h for the format) ---- */

#define TICKET_PREFIX "rt1."
#define TICKET_DOMAIN                                                                              \
    "roost-ticket-v1\n" /* signed before the payload: no other use of the key                      \
                         * (a JWT's signing input) can ever read as a ticket */
#define TICKET_PAYLOAD_MAX 320

static bool ticket_sign_input(const char *payload, size_t len, unsigned char *buf, size_t cap,
                              size_t *out_len)
{
    size_t dlen = sizeof TICKET_DOMAIN - 1;
    if (dlen + len > cap) {
        return false;
    }
    memcpy(buf, TICKET_DOMAIN, dlen);
    memcpy(buf + dlen, payload, len);
    *out_len = dlen + len;
    return true;
}

int auth_ticket_issue(const struct auth *a, const struct auth_principal *p, const char *agent_id,
                      int64_t now_ms, int64_t ttl_s, char *out, size_t out_len, int64_t *expires_ms)
{
    unsigned char rnd[16];
    char nonce[33];
    char payload[TICKET_PAYLOAD_MAX];
    unsigned char input[TICKET_PAYLOAD_MAX + sizeof TICKET_DOMAIN];
    unsigned char sig[64];
    size_t sig_len = sizeof sig, in_len = 0;
    char *p64 = NULL, *s64 = NULL;
    int rc = ROOST_EINTERNAL;
    EVP_MD_CTX *md = NULL;

    if (RAND_bytes(rnd, sizeof rnd) != 1) {
        return ROOST_EINTERNAL;
    }
    for (size_t i = 0; i < sizeof rnd; i++) {
        snprintf(nonce + 2 * i, 3, "%02x", rnd[i]);
    }
    int64_t exp_ms = now_ms + ttl_s * 1000;
    if (p->exp_ms > 0 && p->exp_ms < exp_ms) {
        exp_ms = p->exp_ms;
    }
    int n = snprintf(payload, sizeof payload, "%s %s %lld %lld %s", p->tenant_id, agent_id,
                     (long long)exp_ms, (long long)p->exp_ms, nonce);
    if (n < 0 || (size_t)n >= sizeof payload ||
        !ticket_sign_input(payload, (size_t)n, input, sizeof input, &in_len)) {
        return ROOST_EINTERNAL;
    }
    if ((md = EVP_MD_CTX_new()) == NULL) {
        return ROOST_ENOMEM;
    }
    if (EVP_DigestSignInit(md, NULL, NULL, NULL, a->key) != 1 ||
        EVP_DigestSign(md, sig, &sig_len, input, in_len) != 1) {
        goto out;
    }
    if (b64_encode(B64_URL, (const unsigned char *)payload, (size_t)n, &p64, NULL) != 0 ||
        b64_encode(B64_URL, sig, sig_len, &s64, NULL) != 0) {
        rc = ROOST_ENOMEM;
        goto out;
    }
    n = snprintf(out, out_len, TICKET_PREFIX "%s.%s", p64, s64);
    if (n < 0 || (size_t)n >= out_len || (size_t)n > AUTH_TICKET_MAX_BYTES) {
        goto out;
    }
    *expires_ms = exp_ms;
    rc = ROOST_OK;
out:
    EVP_MD_CTX_free(md);
    free(p64);
    free(s64);
    return rc;
}

static bool ticket_signature_ok(const struct auth *a, const char *payload, size_t len,
                                const unsigned char *sig, size_t sig_len)
{
    unsigned char input[TICKET_PAYLOAD_MAX + sizeof TICKET_DOMAIN];
    size_t in_len = 0;
    if (sig_len != 64 || !ticket_sign_input(payload, len, input, sizeof input, &in_len)) {
        return false;
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = md != NULL && EVP_DigestVerifyInit(md, NULL, NULL, NULL, a->key) == 1 &&
              EVP_DigestVerify(md, sig, sig_len, input, in_len) == 1;
    EVP_MD_CTX_free(md);
    return ok;
}

/* Splits the verified payload into its five fields and checks them. */
static int ticket_payload_parse(const char *payload, size_t len, const char *agent_id,
                                int64_t now_ms, struct auth_principal *out)
{
    char buf[TICKET_PAYLOAD_MAX + 1];
    const char *f[5];
    size_t fl[5];
    size_t nf = 0;
    if (len > TICKET_PAYLOAD_MAX) {
        return ROOST_EUNAUTHENTICATED;
    }
    memcpy(buf, payload, len);
    buf[len] = '\0';
    const char *s = buf;
    while (nf < 5) {
        const char *e = strchr(s, ' ');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        f[nf] = s;
        fl[nf++] = l;
        if (!e) {
            break;
        }
        s = e + 1;
    }
    if (nf != 5 || !ids_valid_name(f[0], fl[0]) || fl[1] != strlen(agent_id) ||
        memcmp(f[1], agent_id, fl[1]) != 0 || fl[4] != 32 || f[4][32] != '\0') {
        return ROOST_EUNAUTHENTICATED;
    }
    char *end = NULL;
    long long ticket_exp = strtoll(f[2], &end, 10);
    if (end != f[2] + fl[2] || fl[2] == 0) {
        return ROOST_EUNAUTHENTICATED;
    }
    long long token_exp = strtoll(f[3], &end, 10);
    if (end != f[3] + fl[3] || fl[3] == 0) {
        return ROOST_EUNAUTHENTICATED;
    }
    /* No clock-skew allowance here: the node that issued the ticket already gave its ttl. */
    if (now_ms >= ticket_exp) {
        return ROOST_EUNAUTHENTICATED;
    }
    memcpy(out->tenant_id, f[0], fl[0]);
    out->tenant_id[fl[0]] = '\0';
    snprintf(out->sub, sizeof out->sub, "ticket");
    out->scopes[0].action = AUTH_READ;
    snprintf(out->scopes[0].selector, sizeof out->scopes[0].selector, "%s", agent_id);
    out->n_scopes = 1;
    out->exp_ms = token_exp;
    memcpy(out->ticket_nonce, f[4], 32);
    out->ticket_nonce[32] = '\0';
    out->ticket_exp_ms = ticket_exp;
    return ROOST_OK;
}

int auth_ticket_verify(const struct auth *a, const char *ticket, const char *agent_id,
                       int64_t now_ms, struct auth_principal *out)
{
    unsigned char *payload = NULL, *sig = NULL;
    size_t payload_len = 0, sig_len = 0;
    int rc = ROOST_EUNAUTHENTICATED;

    memset(out, 0, sizeof *out);
    if (a == NULL || a->key == NULL || ticket == NULL) {
        return ROOST_EUNAUTHENTICATED;
    }
    size_t len = strnlen(ticket, AUTH_TICKET_MAX_BYTES + 1);
    size_t plen = sizeof TICKET_PREFIX - 1;
    if (len > AUTH_TICKET_MAX_BYTES || len < plen || memcmp(ticket, TICKET_PREFIX, plen) != 0) {
        return ROOST_EUNAUTHENTICATED;
    }
    const char *p64 = ticket + plen;
    const char *dot = memchr(p64, '.', len - plen);
    if (dot == NULL) {
        return ROOST_EUNAUTHENTICATED;
    }
    const char *s64 = dot + 1;
    if (b64_decode(B64_URL, true, p64, (size_t)(dot - p64), &payload, &payload_len) != 0 ||
        b64_decode(B64_URL, true, s64, len - (size_t)(s64 - ticket), &sig, &sig_len) != 0) {
        goto out;
    }
    if (!ticket_signature_ok(a, (const char *)payload, payload_len, sig, sig_len)) {
        goto out;
    }
    rc = ticket_payload_parse((const char *)payload, payload_len, agent_id, now_ms, out);
out:
    free(payload);
    free(sig);
    if (rc != ROOST_OK) {
        memset(out, 0, sizeof *out);
    }
    return rc;
}

int auth_token_issue(const struct auth *a, const char *tenant, const char *sub, const char *scope,
                     int64_t now_ms, int64_t ttl_s, char **out)
{
    *out = NULL;
    json_int_t now = (json_int_t)(now_ms / 1000);
    json_t *claims =
        json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "tenant", tenant, "sub", sub, "scope", scope,
                  "iat", now, "nbf", now, "exp", now + (json_int_t)ttl_s);
    if (claims == NULL) {
        return ROOST_ENOMEM;
    }
    int rc = jwt_sign_eddsa(claims, a->key, NULL, out) == 0 ? ROOST_OK : ROOST_EINTERNAL;
    json_decref(claims);
    return rc;
}
