/* SPDX-License-Identifier: MIT */
/* Inbound webhook verification (ingest_verify.h): one function per scheme, each as its sender
 * documents it. */
#include "server/ingest_verify.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base64.h"
#include "common/ids.h"
#include "common/mac.h"
#include "common/strutil.h"
#include "proto/jwk.h"
#include "proto/jwt.h"

#include "common/banned.h"

#define SIG_TEXT_MAX 4096 /* a signature header we read at all */
#define MIN_SECRET_BYTES 16

/* A signed timestamp (decimal Unix seconds) within the tolerance of now. */
static bool timestamp_ok(const char *ts, const struct ingest_delivery *d, const char **reason)
{
    int64_t t;
    if (ts == NULL || strutil_parse_i64(ts, strlen(ts), 0, INT64_MAX / 2, &t) != 0) {
        *reason = "timestamp_malformed";
        return false;
    }
    if (t < d->now_s - d->tolerance_s) {
        *reason = "timestamp_too_old";
        return false;
    }
    if (t > d->now_s + d->tolerance_s) {
        *reason = "timestamp_in_future";
        return false;
    }
    return true;
}

/* A delivery id or type as the sender gave it: printable ASCII of 1..max bytes. */
static bool copy_token(const char *s, size_t len, char *out, size_t max)
{
    if (s == NULL || len == 0 || len > max) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) {
            return false;
        }
    }
    memcpy(out, s, len);
    out[len] = '\0';
    return true;
}

const json_t *ingest_json_pointer(const json_t *v, const char *pointer)
{
    if (pointer == NULL || (pointer[0] != '\0' && pointer[0] != '/')) {
        return NULL;
    }
    const char *p = pointer;
    while (v != NULL && *p == '/') {
        p++;
        const char *end = strchr(p, '/');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        char tok[256];
        size_t n = 0;
        for (size_t i = 0; i < len; i++) { /* ~1 is '/', ~0 is '~' (RFC 6901 §4) */
            char c = p[i];
            if (c == '~' && i + 1 < len && (p[i + 1] == '0' || p[i + 1] == '1')) {
                c = p[++i] == '0' ? '~' : '/';
            } else if (c == '~') {
                return NULL;
            }
            if (n + 1 >= sizeof tok) {
                return NULL;
            }
            tok[n++] = c;
        }
        tok[n] = '\0';
        if (json_is_object(v)) {
            v = json_object_get(v, tok);
        } else if (json_is_array(v)) {
            int64_t idx;
            if (n == 0 || (n > 1 && tok[0] == '0') ||
                strutil_parse_i64(tok, n, 0, INT64_MAX, &idx) != 0) {
                return NULL;
            }
            v = json_array_get(v, (size_t)idx);
        } else {
            return NULL;
        }
        p += len;
    }
    return v;
}

/* A string (or integer) member of the body at a pointer, as a token. */
static bool body_token(const struct ingest_delivery *d, const char *pointer, char *out, size_t max)
{
    const json_t *v = d->json != NULL ? ingest_json_pointer(d->json, pointer) : NULL;
    if (json_is_string(v)) {
        return copy_token(json_string_value(v), json_string_length(v), out, max);
    }
    if (json_is_integer(v)) {
        char num[32];
        int n = snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        return copy_token(num, (size_t)n, out, max);
    }
    return false;
}

static const char *opt_str(const json_t *config, const char *name, const char *def)
{
    const json_t *v = json_object_get(config, name);
    return json_is_string(v) ? json_string_value(v) : def;
}

/* ---- standard-webhooks: the signature roostd's own deliveries carry (mac_stdwh_sign), each
 * "v1,<base64>" of the space-separated webhook-signature header ---- */

static int verify_standard(const char *secret, const struct ingest_delivery *d,
                           struct ingest_verified *out, const char **reason)
{
    const char *id = d->header(d->ctx, "webhook-id");
    const char *ts = d->header(d->ctx, "webhook-timestamp");
    const char *sig = d->header(d->ctx, "webhook-signature");
    if (id == NULL || ts == NULL || sig == NULL) {
        *reason = "signature_headers_missing";
        return -1;
    }
    if (!copy_token(id, strlen(id), out->delivery_id, INGEST_DELIVERY_ID_MAX)) {
        *reason = "delivery_id_invalid";
        return -1;
    }
    if (!timestamp_ok(ts, d, reason)) {
        return -1;
    }
    unsigned char *key = NULL;
    size_t key_len = 0;
    if (mac_stdwh_key(secret, &key, &key_len) != 0) {
        *reason = "secret_unusable";
        return -1;
    }
    char *expect = NULL;
    int rc = mac_stdwh_sign(key, key_len, id, ts, d->body, d->body_len, &expect);
    OPENSSL_cleanse(key, key_len);
    free(key);
    if (rc != 0) {
        *reason = "internal";
        return -1;
    }
    bool ok = false;
    size_t sig_len = strnlen(sig, SIG_TEXT_MAX + 1);
    for (const char *p = sig; !ok && sig_len <= SIG_TEXT_MAX && *p != '\0';) {
        while (*p == ' ') {
            p++;
        }
        size_t n = strcspn(p, " ");
        if (n > 3 && strncmp(p, "v1,", 3) == 0) {
            ok = mac_same(expect, p + 3, n - 3);
        }
        p += n;
    }
    free(expect);
    if (!ok) {
        *reason = "signature_mismatch";
        return -1;
    }
    if (d->json != NULL) {
        (void)body_token(d, "/type", out->type, INGEST_TYPE_MAX);
    }
    return 0;
}

/* Whether `got` is `prefix` + the HMAC (digest md; hex, or base64 when b64) keyed with the secret's
 * text over the parts: github's check, and hmac's with the source's options. 0, or -1 with
 * *reason. */
static int mac_header_check(const char *md, bool b64, const char *prefix, const char *secret,
                            const struct mac_part *parts, size_t n_parts, const char *got,
                            const char **reason)
{
    unsigned char mac[MAC_MAX_BYTES];
    size_t mac_len = 0;
    char hex[2 * MAC_MAX_BYTES + 1], *enc = NULL;
    if (mac_hmac(md, secret, strlen(secret), parts, n_parts, mac, &mac_len) != 0 ||
        (b64 && b64_encode(B64_STD, mac, mac_len, &enc, NULL) != 0)) {
        *reason = "internal";
        return -1;
    }
    if (!b64) {
        mac_hex(mac, mac_len, hex);
    }
    size_t plen = strlen(prefix);
    bool ok = strncmp(got, prefix, plen) == 0 &&
              mac_same(b64 ? enc : hex, got + plen, strlen(got) - plen);
    free(enc);
    if (!ok) {
        *reason = "signature_mismatch";
        return -1;
    }
    return 0;
}

/* ---- github: X-Hub-Signature-256 = "sha256=" + hex HMAC-SHA256(secret, body) ---- */

static int verify_github(const char *secret, const struct ingest_delivery *d,
                         struct ingest_verified *out, const char **reason)
{
    const char *sig = d->header(d->ctx, "X-Hub-Signature-256");
    const char *id = d->header(d->ctx, "X-GitHub-Delivery");
    if (sig == NULL || id == NULL) {
        *reason = "signature_headers_missing";
        return -1;
    }
    if (!copy_token(id, strlen(id), out->delivery_id, INGEST_DELIVERY_ID_MAX)) {
        *reason = "delivery_id_invalid";
        return -1;
    }
    struct mac_part body = {d->body, d->body_len};
    if (mac_header_check("SHA256", false, "sha256=", secret, &body, 1, sig, reason) != 0) {
        return -1;
    }
    const char *ev = d->header(d->ctx, "X-GitHub-Event");
    if (ev != NULL) {
        (void)copy_token(ev, strlen(ev), out->type, INGEST_TYPE_MAX);
    }
    return 0;
}

/* ---- stripe: Stripe-Signature "t=<ts>,v1=<hex>[,v1=…][,v0=…]", HMAC-SHA256(the whole secret
 * string, "t.body"); the event id and type from the body ---- */

static int verify_stripe(const char *secret, const struct ingest_delivery *d,
                         struct ingest_verified *out, const char **reason)
{
    const char *sig = d->header(d->ctx, "Stripe-Signature");
    if (sig == NULL || strnlen(sig, SIG_TEXT_MAX + 1) > SIG_TEXT_MAX) {
        *reason = sig == NULL ? "signature_headers_missing" : "signature_malformed";
        return -1;
    }
    char ts[32] = "";
    for (const char *p = sig; *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (n > 2 && strncmp(p, "t=", 2) == 0) {
            if (ts[0] != '\0' || n - 2 >= sizeof ts) {
                *reason = "signature_malformed";
                return -1;
            }
            memcpy(ts, p + 2, n - 2);
            ts[n - 2] = '\0';
        }
        p += n + (p[n] == ',');
    }
    if (!timestamp_ok(ts[0] != '\0' ? ts : NULL, d, reason)) {
        return -1;
    }
    unsigned char mac[MAC_MAX_BYTES];
    size_t mac_len = 0;
    struct mac_part parts[] = {{ts, strlen(ts)}, {".", 1}, {d->body, d->body_len}};
    char expect[2 * MAC_MAX_BYTES + 1];
    if (mac_hmac("SHA256", secret, strlen(secret), parts, 3, mac, &mac_len) != 0) {
        *reason = "internal";
        return -1;
    }
    mac_hex(mac, mac_len, expect);
    bool ok = false;
    for (const char *p = sig; !ok && *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (n > 3 && strncmp(p, "v1=", 3) == 0) {
            ok = mac_same(expect, p + 3, n - 3);
        }
        p += n + (p[n] == ',');
    }
    if (!ok) {
        *reason = "signature_mismatch";
        return -1;
    }
    if (!body_token(d, "/id", out->delivery_id, INGEST_DELIVERY_ID_MAX)) {
        *reason = "delivery_id_missing";
        return -1;
    }
    (void)body_token(d, "/type", out->type, INGEST_TYPE_MAX);
    return 0;
}

/* ---- token and hmac: the delivery id and type as the source's options say ---- */

/* The delivery id from options.id_header or options.id_pointer, else the body's SHA-256 (the
 * same body twice is one delivery). */
static int generic_ids(const json_t *config, const struct ingest_delivery *d,
                       struct ingest_verified *out, const char **reason)
{
    const char *idh = opt_str(config, "id_header", NULL);
    const char *idp = opt_str(config, "id_pointer", NULL);
    if (idh != NULL) {
        const char *v = d->header(d->ctx, idh);
        if (v == NULL || !copy_token(v, strlen(v), out->delivery_id, INGEST_DELIVERY_ID_MAX)) {
            *reason = "delivery_id_missing";
            return -1;
        }
    } else if (idp != NULL) {
        if (!body_token(d, idp, out->delivery_id, INGEST_DELIVERY_ID_MAX)) {
            *reason = "delivery_id_missing";
            return -1;
        }
    } else {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int md_len = 0;
        if (EVP_Digest(d->body, d->body_len, md, &md_len, EVP_sha256(), NULL) != 1) {
            *reason = "internal";
            return -1;
        }
        memcpy(out->delivery_id, "sha256:", 7);
        mac_hex(md, md_len, out->delivery_id + 7);
    }
    const char *th = opt_str(config, "type_header", NULL);
    const char *tp = opt_str(config, "type_pointer", NULL);
    const char *tv = th != NULL ? d->header(d->ctx, th) : NULL;
    if (tv != NULL) {
        (void)copy_token(tv, strlen(tv), out->type, INGEST_TYPE_MAX);
    } else if (tp != NULL) {
        (void)body_token(d, tp, out->type, INGEST_TYPE_MAX);
    }
    return 0;
}

#define TOKEN_DEFAULT_HEADER "X-A2A-Notification-Token"

static int verify_token(const json_t *config, const char *secret, const struct ingest_delivery *d,
                        struct ingest_verified *out, const char **reason)
{
    const char *name = opt_str(config, "header", TOKEN_DEFAULT_HEADER);
    const char *got = d->header(d->ctx, name);
    if (got == NULL) {
        *reason = "token_missing";
        return -1;
    }
    if (strcasecmp(name, "Authorization") == 0) {
        if (strncasecmp(got, "Bearer ", 7) != 0) {
            *reason = "token_missing";
            return -1;
        }
        got += 7;
    }
    if (!mac_same(secret, got, strlen(got))) {
        *reason = "token_mismatch";
        return -1;
    }
    return generic_ids(config, d, out, reason);
}

/* ---- jwt (A2A push notifications): "Authorization: Bearer <JWT>" signed by a key of the
 * source's JWK Set (the secret, inline, or options.jwks_url), iss and aud as configured, exp,
 * iat within the tolerance, jti the delivery id; the algorithm, key and header rules are those of
 * roostd's own tokens (proto/jwt.h) ---- */

static int jwt_key_set(const json_t *config, const char *secret, const struct ingest_delivery *d,
                       bool refresh, struct jwks *set)
{
    const char *url = opt_str(config, "jwks_url", NULL);
    char *text = NULL, err[128];
    if (url != NULL &&
        (d->jwks_get == NULL || d->jwks_get(d->jwks_ctx, url, refresh, &text) != 0)) {
        return -1;
    }
    const char *json = url != NULL ? text : secret;
    int rc = jwks_parse(json, strlen(json), set, err, sizeof err);
    free(text);
    return rc;
}

static int verify_jwt(const json_t *config, const char *secret, const struct ingest_delivery *d,
                      struct ingest_verified *out, const char **reason)
{
    const char *tok;
    size_t tok_len;
    struct jwt_parts p;
    if (jwt_bearer(d->header(d->ctx, "Authorization"), &tok, &tok_len) != 0) {
        *reason = "token_missing";
        return -1;
    }
    if (jwt_decode(tok, tok_len, &p) != 0) {
        *reason = "jwt_malformed";
        return -1;
    }
    int rc = -1;
    enum jwt_alg alg;
    const char *kid;
    struct jwks set = {0};
    bool unknown_kid = false;
    const struct jwk *key = NULL;
    if (jwt_header_check(&p, &alg, &kid) != 0 || alg == JWT_ALG_UNKNOWN) {
        *reason = "jwt_alg_refused";
        goto out;
    }
    if (jwt_key_set(config, secret, d, false, &set) != 0) {
        *reason = "jwks_unavailable";
        goto out;
    }
    key = jwks_select(&set, alg, kid, &unknown_kid);
    if (key == NULL && unknown_kid && opt_str(config, "jwks_url", NULL) != NULL) {
        jwks_cleanup(&set); /* the sender may have rotated its keys: ask for them again */
        if (jwt_key_set(config, secret, d, true, &set) != 0) {
            *reason = "jwks_unavailable";
            goto out;
        }
        key = jwks_select(&set, alg, kid, &unknown_kid);
    }
    if (key == NULL) {
        *reason = unknown_kid ? "jwt_kid_unknown" : "jwt_no_key_for_alg";
        goto out;
    }
    if (jwt_verify(&p, key) != 0) {
        *reason = "signature_mismatch";
        goto out;
    }
    bool has_exp, has_iat, has_nbf;
    int64_t exp_ms = 0, iat_ms = 0, nbf_ms = 0, now_ms = d->now_s * 1000;
    if (!jwt_numeric_date_ms(p.claims, "exp", &has_exp, &exp_ms) ||
        !jwt_numeric_date_ms(p.claims, "iat", &has_iat, &iat_ms) ||
        !jwt_numeric_date_ms(p.claims, "nbf", &has_nbf, &nbf_ms) || !has_exp || !has_iat) {
        *reason = "jwt_times_missing";
        goto out;
    }
    if (!jwt_times_valid(exp_ms, has_nbf ? nbf_ms : JWT_NO_TIME, iat_ms, now_ms)) {
        *reason = now_ms >= exp_ms + JWT_LEEWAY_MS ? "jwt_expired" : "jwt_not_yet_valid";
        goto out;
    }
    if (iat_ms < now_ms - d->tolerance_s * 1000) { /* a replay of an old push */
        *reason = "timestamp_too_old";
        goto out;
    }
    if (!jwt_issuer_audience_ok(p.claims, opt_str(config, "issuer", NULL),
                                opt_str(config, "audience", NULL))) {
        *reason = "jwt_issuer_or_audience";
        goto out;
    }
    const json_t *jti = json_object_get(p.claims, "jti");
    if (!json_is_string(jti) || !copy_token(json_string_value(jti), json_string_length(jti),
                                            out->delivery_id, INGEST_DELIVERY_ID_MAX)) {
        *reason = "delivery_id_missing";
        goto out;
    }
    const char *tp = opt_str(config, "type_pointer", NULL);
    if (tp != NULL) {
        (void)body_token(d, tp, out->type, INGEST_TYPE_MAX);
    }
    rc = 0;
out:
    jwks_cleanup(&set);
    jwt_parts_cleanup(&p);
    return rc;
}

static const char *md_name(const char *alg)
{
    return strcmp(alg, "sha256") == 0   ? "SHA256"
           : strcmp(alg, "sha512") == 0 ? "SHA512"
           : strcmp(alg, "sha1") == 0   ? "SHA1"
                                        : NULL;
}

/* hmac: options.header carries options.prefix + the MAC (options.encoding: hex or base64) of
 * the body, or of "timestamp.body" with options.timestamp_header. */
static int verify_hmac(const json_t *config, const char *secret, const struct ingest_delivery *d,
                       struct ingest_verified *out, const char **reason)
{
    const char *name = opt_str(config, "header", NULL);
    const char *prefix = opt_str(config, "prefix", "");
    const char *md = md_name(opt_str(config, "algorithm", "sha256"));
    bool b64 = strcmp(opt_str(config, "encoding", "hex"), "base64") == 0;
    const char *tsh = opt_str(config, "timestamp_header", NULL);
    const char *got = name != NULL ? d->header(d->ctx, name) : NULL;
    if (got == NULL || md == NULL) {
        *reason = "signature_headers_missing";
        return -1;
    }
    const char *ts = tsh != NULL ? d->header(d->ctx, tsh) : NULL;
    if (tsh != NULL && !timestamp_ok(ts, d, reason)) {
        return -1;
    }
    struct mac_part parts[3];
    size_t n = 0;
    if (ts != NULL) {
        parts[n++] = (struct mac_part){ts, strlen(ts)};
        parts[n++] = (struct mac_part){".", 1};
    }
    parts[n++] = (struct mac_part){d->body, d->body_len};
    if (mac_header_check(md, b64, prefix, secret, parts, n, got, reason) != 0) {
        return -1;
    }
    return generic_ids(config, d, out, reason);
}

/* ---- the schemes ---- */

struct scheme {
    const char *name;
    const char *const *options; /* the option names it takes, NULL-ended */
    bool secret_given;          /* the sender makes the secret (Stripe): it must be given */
    bool whsec;                 /* secrets are "whsec_" + base64 */
};

static const char *const no_opts[] = {NULL};
static const char *const token_opts[] = {"header",      "id_header",    "id_pointer",
                                         "type_header", "type_pointer", NULL};
static const char *const jwt_opts[] = {"issuer", "audience", "jwks_url", "type_pointer", NULL};
static const char *const hmac_opts[] = {
    "header",    "algorithm",  "encoding",    "prefix",       "timestamp_header",
    "id_header", "id_pointer", "type_header", "type_pointer", NULL};

static const struct scheme schemes[] = {
    {"standard-webhooks", no_opts, false, true},
    {"github", no_opts, false, false},
    {"stripe", no_opts, true, true},
    {"token", token_opts, false, false},
    {"hmac", hmac_opts, false, false},
    {"jwt", jwt_opts, false, false},
};

static const struct scheme *scheme_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof schemes / sizeof schemes[0]; i++) {
        if (strcmp(schemes[i].name, name) == 0) {
            return &schemes[i];
        }
    }
    return NULL;
}

bool ingest_scheme_known(const char *scheme)
{
    return scheme_find(scheme) != NULL;
}

int ingest_secret_new(const char *scheme, char *out, size_t cap)
{
    const struct scheme *s = scheme_find(scheme);
    unsigned char raw[32];
    char *enc = NULL;
    if (s == NULL || ids_random(raw, sizeof raw) != 0 ||
        b64_encode(s->whsec ? B64_STD : B64_URL, raw, sizeof raw, &enc, NULL) != 0) {
        return -1;
    }
    OPENSSL_cleanse(raw, sizeof raw);
    int n = snprintf(out, cap, "%s%s", s->whsec ? "whsec_" : "", enc);
    OPENSSL_cleanse(enc, strlen(enc));
    free(enc);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* jwt: issuer and audience required; the key set is the secret (a JWK Set, stored compact) or
 * at options.jwks_url (https; then the secret is one of our making, unused). */
static int jwt_config_check(const json_t *config, char *secret, size_t cap, const char **why)
{
    const char *url = opt_str(config, "jwks_url", NULL);
    const char *tp = opt_str(config, "type_pointer", NULL);
    if (opt_str(config, "issuer", NULL) == NULL || opt_str(config, "audience", NULL) == NULL) {
        *why = "the jwt scheme needs options.issuer and options.audience";
        return -1;
    }
    if (tp != NULL && tp[0] != '/') {
        *why = "a pointer option must be a JSON pointer (RFC 6901) starting with /";
        return -1;
    }
    if (url != NULL) {
        if (strncmp(url, "https://", 8) != 0) {
            *why = "options.jwks_url must be an https URL";
            return -1;
        }
        if (secret[0] != '\0') {
            *why = "give the key set inline as secret or as options.jwks_url, not both";
            return -1;
        }
        return ingest_secret_new("jwt", secret, cap) == 0 ? 0 : (*why = "no randomness", -1);
    }
    struct jwks set;
    char err[128];
    if (secret[0] == '\0' || jwks_parse(secret, strlen(secret), &set, err, sizeof err) != 0) {
        *why = "the jwt scheme needs its JWK Set as secret (or options.jwks_url)";
        return -1;
    }
    size_t n = set.n_keys;
    bool priv = set.had_private_members;
    jwks_cleanup(&set);
    if (n == 0 || priv) {
        *why = n == 0 ? "secret has no usable public key (EdDSA, ES256 or RS256)"
                      : "secret carries private key members: give the public keys only";
        return -1;
    }
    /* Stored compact, so it fits and reads back as given. */
    json_t *v = json_loads(secret, JSON_REJECT_DUPLICATES, NULL);
    char *compact = v != NULL ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(v);
    int rc = compact != NULL && strlen(compact) < cap ? 0 : -1;
    if (rc == 0) {
        memcpy(secret, compact, strlen(compact) + 1);
    } else {
        *why = "secret (the JWK Set) is too long";
    }
    free(compact);
    return rc;
}

int ingest_config_check(const char *scheme, const json_t *config, char *secret, size_t cap,
                        const char **why)
{
    const struct scheme *s = scheme_find(scheme);
    if (s == NULL) {
        *why = "scheme must be standard-webhooks, github, stripe, token, hmac or jwt";
        return -1;
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)config, key, v)
    {
        bool known = false;
        for (const char *const *o = s->options; *o != NULL && !known; o++) {
            known = strcmp(*o, key) == 0;
        }
        if (!known) {
            *why = "options has a member this scheme does not take";
            return -1;
        }
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 256) {
            *why = "every option is a string of 1 to 256 bytes";
            return -1;
        }
    }
    if (strcmp(scheme, "hmac") == 0) {
        if (json_object_get(config, "header") == NULL) {
            *why = "the hmac scheme needs options.header";
            return -1;
        }
        if (md_name(opt_str(config, "algorithm", "sha256")) == NULL) {
            *why = "options.algorithm must be sha256, sha512 or sha1";
            return -1;
        }
        const char *enc = opt_str(config, "encoding", "hex");
        if (strcmp(enc, "hex") != 0 && strcmp(enc, "base64") != 0) {
            *why = "options.encoding must be hex or base64";
            return -1;
        }
    }
    if (strcmp(scheme, "jwt") == 0) {
        return jwt_config_check(config, secret, cap, why);
    }
    const char *ptr;
    if (((ptr = opt_str(config, "id_pointer", NULL)) != NULL && ptr[0] != '/') ||
        ((ptr = opt_str(config, "type_pointer", NULL)) != NULL && ptr[0] != '/')) {
        *why = "a pointer option must be a JSON pointer (RFC 6901) starting with /";
        return -1;
    }
    if (secret[0] == '\0') {
        if (s->secret_given) {
            *why = "this scheme's secret is made by the sender: give it as secret";
            return -1;
        }
        if (ingest_secret_new(scheme, secret, cap) != 0) {
            *why = "no randomness";
            return -1;
        }
        return 0;
    }
    size_t n = strlen(secret);
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)secret[i] <= 0x20 || (unsigned char)secret[i] > 0x7e) {
            *why = "secret must be printable ASCII without spaces";
            return -1;
        }
    }
    if (s->whsec) {
        unsigned char *raw = NULL;
        size_t key_len = 0;
        bool prefixed = strncmp(secret, MAC_STDWH_PREFIX, sizeof MAC_STDWH_PREFIX - 1) == 0;
        int rc = mac_stdwh_key(secret, &raw, &key_len);
        if (raw != NULL) {
            OPENSSL_cleanse(raw, key_len);
        }
        free(raw);
        if (!prefixed ||
            (strcmp(scheme, "standard-webhooks") == 0 && (rc != 0 || key_len < MIN_SECRET_BYTES))) {
            *why = "secret must be whsec_ followed by base64 (as the sender shows it)";
            return -1;
        }
        return 0;
    }
    if (n < MIN_SECRET_BYTES) {
        *why = "secret must be at least 16 characters";
        return -1;
    }
    return 0;
}

static int verify_one(const struct scheme *s, const json_t *config, const char *secret,
                      const struct ingest_delivery *d, struct ingest_verified *out,
                      const char **reason)
{
    memset(out, 0, sizeof *out);
    const char *name = s->name;
    return strcmp(name, "standard-webhooks") == 0 ? verify_standard(secret, d, out, reason)
           : strcmp(name, "github") == 0          ? verify_github(secret, d, out, reason)
           : strcmp(name, "stripe") == 0          ? verify_stripe(secret, d, out, reason)
           : strcmp(name, "token") == 0           ? verify_token(config, secret, d, out, reason)
           : strcmp(name, "jwt") == 0             ? verify_jwt(config, secret, d, out, reason)
                                                  : verify_hmac(config, secret, d, out, reason);
}

int ingest_verify(const char *scheme, const json_t *config, const char *secret,
                  const char *old_secret, const struct ingest_delivery *d,
                  struct ingest_verified *out, const char **reason)
{
    const struct scheme *s = scheme_find(scheme);
    if (s == NULL || secret == NULL || secret[0] == '\0') {
        *reason = "source_unusable";
        return -1;
    }
    if (verify_one(s, config, secret, d, out, reason) == 0) {
        return 0;
    }
    /* During a rotation's overlap the replaced secret still verifies; a refusal reports why the
     * current one failed. */
    const char *first = *reason, *second = NULL;
    if (old_secret != NULL && old_secret[0] != '\0' &&
        verify_one(s, config, old_secret, d, out, &second) == 0) {
        out->used_old_secret = true;
        return 0;
    }
    *reason = first;
    memset(out, 0, sizeof *out);
    return -1;
}
