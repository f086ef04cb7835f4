/* SPDX-License-Identifier: MIT */
/* Device login (RFC 8628) and rotating refresh tokens (RFC 6749 §6, RFC 9700 §4.14), described by
 * RFC 8414 metadata; the operator's side is api_devices.c; doc/CREDENTIALS.md has the model.
 *
 * Device codes and refresh tokens name their tenant (its shard is chosen before the store is
 * read) and are stored only as SHA-256 hex, under that tenant, so a token of tenant A presented
 * as B's is simply unknown in B:
 *   device code   dc1.<tenant>.<base64url of 32 random bytes>
 *   refresh token rt1.<tenant>.<base64url of 32 random bytes>
 * Every refresh rotates the refresh token, the access token (roostd's own EdDSA JWT, short-lived)
 * and the device's request-signing key "<device_id>.<gen>": HMAC-SHA256 issued here, or the
 * Ed25519 public key the agent sent. The previous key verifies for oauth.key_overlap_s more; each
 * key stops verifying oauth.signing_key_ttl_s (+ overlap) after it was issued. A refresh token
 * used a second time revokes its whole family (the device) and its keys: whichever side holds a
 * stolen copy, the next use of either is refused. That revocation commits even though the answer
 * is an error, so each store job here answers ROOST_OK with an outcome and the reply follows it.
 *
 * A lost answer is not a theft: when the rotation commits and the connection drops before the
 * answer arrives, the agent still holds the old token and sends it again. Within
 * oauth.refresh_reuse_interval_s of the exchange, while its successor was never used (the family
 * is still at the next generation), that second use is taken as the retry it is: the family moves
 * on once more and the retry gets a fresh pair, while the lost successor and its signing key die
 * (the lost token presented later revokes the family, as any dead token does). Later, or once a
 * successor was used, it is a replay and revokes the family. This is the "reuse interval" of
 * Auth0 and Okta's grace period, without keeping the lost answer anywhere. */
#include <event2/http.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "common/timeutil.h"
#include "proto/httpsig.h"
#include "proto/jwt.h"
#include "proto/sf.h"
#include "server/api.h"
#include "server/api_json.h"
#include "server/auth.h"
#include "server/ratelimit.h"
#include "server/request.h"
#include "server/runtime.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

#define SECRET_BYTES 32
#define SLOW_DOWN_STEP_S 5 /* RFC 8628 §3.5 */
#define GRANT_DEVICE_CODE "urn:ietf:params:oauth:grant-type:device_code"
#define USER_CODE_ALPHABET "BCDFGHJKLMNPQRSTVWXZ" /* RFC 8628 §6.1: no vowels, no look-alikes */

/* ---- shared pieces ---- */

void api_oauth_sha256_hex(const char *s, char out[STORE_HASH_HEX + 1])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL);
    for (unsigned int i = 0; i < 32; i++) {
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    }
    out[STORE_HASH_HEX] = '\0';
}

/* "<prefix>.<tenant>.<secret>" → the tenant, or false when it is not of that shape. */
static bool credential_tenant(const char *cred, const char *prefix, char tenant[ROOST_ID_MAX + 1])
{
    size_t pl = strlen(prefix);
    if (cred == NULL || strncmp(cred, prefix, pl) != 0 || cred[pl] != '.') {
        return false;
    }
    const char *t = cred + pl + 1;
    const char *dot = strrchr(t, '.');
    if (dot == NULL || dot == t || (size_t)(dot - t) > ROOST_ID_MAX || strlen(dot + 1) < 16 ||
        !ids_valid_name(t, (size_t)(dot - t))) {
        return false;
    }
    memcpy(tenant, t, (size_t)(dot - t));
    tenant[dot - t] = '\0';
    return true;
}

/* A fresh "<prefix>.<tenant>.<random>" (heap; the caller cleanses and frees it). */
static char *credential_new(const char *prefix, const char *tenant)
{
    unsigned char raw[SECRET_BYTES];
    char *b64 = NULL;
    if (RAND_bytes(raw, sizeof raw) != 1 || jwt_b64url_encode(raw, sizeof raw, &b64) != 0) {
        OPENSSL_cleanse(raw, sizeof raw);
        return NULL;
    }
    OPENSSL_cleanse(raw, sizeof raw);
    size_t len = strlen(prefix) + strlen(tenant) + strlen(b64) + 3;
    char *out = malloc(len);
    if (out != NULL) {
        snprintf(out, len, "%s.%s.%s", prefix, tenant, b64);
    }
    OPENSSL_cleanse(b64, strlen(b64));
    free(b64);
    return out;
}

static void secret_free(char **s)
{
    if (*s != NULL) {
        OPENSSL_cleanse(*s, strlen(*s));
        free(*s);
        *s = NULL;
    }
}

/* An RFC 6749 §5.2 error answer (always with Cache-Control: no-store, as every JSON reply). */
static void oauth_error(struct request *rq, int status, const char *error, const char *desc)
{
    request_reply_json(rq, status,
                       json_pack("{s:s, s:s}", "error", error, "error_description", desc));
}

/* The base URL clients reached us by (for the metadata and verification_uri). */
static void base_url(struct request *rq, char *out, size_t len)
{
    const char *host = evhttp_find_header(evhttp_request_get_input_headers(rq->req), "Host");
    snprintf(out, len, "%s://%s", rq->rt->cfg->tls_cert_file[0] != '\0' ? "https" : "http",
             host != NULL && host[0] != '\0' && strlen(host) < 256 ? host : "localhost");
}

/* ---- GET /.well-known/oauth-authorization-server (RFC 8414) ---- */

void api_oauth_metadata(struct request *rq)
{
    char base[300], dev[340], tok[340];
    base_url(rq, base, sizeof base);
    snprintf(dev, sizeof dev, "%s/oauth/device_authorization", base);
    snprintf(tok, sizeof tok, "%s/oauth/token", base);
    request_reply_json(rq, 200,
                       json_pack("{s:s, s:s, s:s, s:[s, s], s:[s], s:[s], s:[s, s]}", "issuer",
                                 base, "device_authorization_endpoint", dev, "token_endpoint", tok,
                                 "grant_types_supported", GRANT_DEVICE_CODE, "refresh_token",
                                 "token_endpoint_auth_methods_supported", "none",
                                 "response_types_supported", "none",
                                 "roost_signing_key_algs_supported", "hmac-sha256", "ed25519"));
}

/* ---- POST /oauth/device_authorization ---- */

struct device_auth_op {
    struct job job;
    struct request *rq;
    char tenant[ROOST_ID_MAX + 1];
    struct store_device d;
    char *device_code;
    char code_hash[STORE_HASH_HEX + 1];
};

static void device_auth_free(void *p)
{
    struct device_auth_op *op = p;
    secret_free(&op->device_code);
    free(op);
}

static void user_code_new(char out[10])
{
    unsigned char raw[8];
    RAND_bytes(raw, sizeof raw);
    const size_t n = sizeof USER_CODE_ALPHABET - 1;
    for (int i = 0, j = 0; i < 9; i++) {
        out[i] = i == 4 ? '-' : USER_CODE_ALPHABET[raw[j++] % n]; /* 256 % 20: a small bias */
    }
    out[9] = '\0';
}

static int run_device_auth(struct job *job, struct store *st)
{
    struct device_auth_op *op = (struct device_auth_op *)job;
    int rc = ROOST_EKEYEXISTS;
    /* A user code already taken in this tenant (unlikely: 20^8) is drawn again. */
    for (int i = 0; i < 4 && rc == ROOST_EKEYEXISTS; i++) {
        user_code_new(op->d.user_code);
        rc = store_call(st, device_add, op->tenant, &op->d, op->code_hash);
    }
    return rc;
}

static void done_device_auth(struct job *job)
{
    struct device_auth_op *op = (struct device_auth_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    char base[300], uri[340], full[400];
    base_url(op->rq, base, sizeof base);
    snprintf(uri, sizeof uri, "%s/ui/#devices", base);
    snprintf(full, sizeof full, "%s/ui/#devices?user_code=%s", base, op->d.user_code);
    int64_t now = time_now_ms();
    request_reply_json(op->rq, 200,
                       json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:s, s:s}", "device_code",
                                 op->device_code, "user_code", op->d.user_code, "verification_uri",
                                 uri, "verification_uri_complete", full, "expires_in",
                                 (json_int_t)((op->d.code_expires_at_ms - now + 999) / 1000),
                                 "interval", (json_int_t)op->d.interval_s, "tenant", op->tenant,
                                 "agent_id", op->d.agent_id, "scope", op->d.scope_requested));
}

void api_oauth_device_authorization(struct request *rq)
{
    /* It needs no token, so anyone can call it: each address gets so many pending devices. */
    struct evhttp_connection *conn = evhttp_request_get_connection(rq->req);
    char *peer = NULL;
    ev_uint16_t port = 0;
    if (conn != NULL) {
        evhttp_connection_get_peer(conn, &peer, &port);
    }
    double per_min = (double)rq->rt->cfg->oauth_device_authorizations_per_min;
    int64_t wait_s = ratelimit_take(rq->rt->device_rl, peer != NULL ? peer : "", per_min / 60.0,
                                    per_min, 1.0, time_mono_ms());
    if (wait_s > 0) {
        request_set_retry_after(rq, wait_s);
        oauth_error(rq, 429, "slow_down",
                    "too many device authorizations from this address: retry after Retry-After "
                    "seconds");
        return;
    }
    const char *bad = NULL;
    if (body_param_only(rq, rq->body, "", &bad) != ROOST_OK) {
        oauth_error(rq, 400, "invalid_request", "unknown parameter");
        return;
    }
    const char *client_id = NULL, *scope = NULL, *tenant = NULL, *name = NULL;
    if (body_param_str(rq, rq->body, "client_id", ROOST_EAGENTID, &client_id) != ROOST_OK ||
        client_id == NULL || !ids_valid_name(client_id, strlen(client_id))) {
        oauth_error(rq, 400, "invalid_client", "client_id must be the agent id");
        return;
    }
    if (body_param_str(rq, rq->body, "scope", ROOST_EINVAL, &scope) != ROOST_OK ||
        body_param_str(rq, rq->body, "tenant", ROOST_EINVAL, &tenant) != ROOST_OK ||
        body_param_str(rq, rq->body, "device_name", ROOST_EINVAL, &name) != ROOST_OK) {
        oauth_error(rq, 400, "invalid_request", "scope, tenant or device_name is too long");
        return;
    }
    struct device_auth_op *op = request_op_new(rq, sizeof *op, device_auth_free);
    if (op == NULL) {
        return;
    }
    op->rq = rq;
    const struct config *cfg = rq->rt->cfg;
    tenant = tenant != NULL ? tenant : cfg->oauth_default_tenant;
    if (!ids_valid_name(tenant, strlen(tenant))) {
        oauth_error(rq, 400, "invalid_request", "tenant must match [A-Za-z0-9._-]{1,128}");
        return;
    }
    snprintf(op->tenant, sizeof op->tenant, "%s", tenant);
    struct store_device *d = &op->d;
    snprintf(d->agent_id, sizeof d->agent_id, "%s", client_id);
    if (scope == NULL) {
        snprintf(d->scope_requested, sizeof d->scope_requested, "agent:%s:consume", client_id);
    } else {
        struct auth_principal p;
        auth_principal_clear(&p);
        if (auth_parse_scopes(scope, &p) != 0 || p.n_scopes == 0) {
            oauth_error(rq, 400, "invalid_scope", "scope must name Roost scopes (DESIGN 6.1)");
            return;
        }
        snprintf(d->scope_requested, sizeof d->scope_requested, "%s", scope);
    }
    snprintf(d->name, sizeof d->name, "%s", name != NULL ? name : "");
    snprintf(d->address, sizeof d->address, "%s", peer != NULL ? peer : "");
    int64_t now = time_now_ms();
    d->created_at_ms = now;
    d->code_expires_at_ms = now + cfg->oauth_device_code_ttl_s * 1000;
    d->interval_s = cfg->oauth_poll_interval_s;
    unsigned char rnd[10];
    char hex[21];
    RAND_bytes(rnd, sizeof rnd);
    for (int i = 0; i < 10; i++) {
        snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
    }
    snprintf(d->device_id, sizeof d->device_id, "dev_%s", hex);
    if ((op->device_code = credential_new("dc1", op->tenant)) == NULL) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    api_oauth_sha256_hex(op->device_code, op->code_hash);
    op->job = (struct job){.run = run_device_auth,
                           .done = done_device_auth,
                           .write = true,
                           .name = request_job_kind(rq)};
    workers_submit(runtime_workers(rq->rt, op->tenant), &op->job);
}

/* ---- POST /oauth/token ---- */

enum token_outcome {
    T_ISSUED,
    T_PENDING,
    T_SLOW_DOWN,
    T_EXPIRED,
    T_DENIED,
    T_INVALID,
    T_REUSED,
};

struct token_op {
    struct job job;
    struct request *rq;
    char tenant[ROOST_ID_MAX + 1];
    bool refresh;                     /* the refresh_token grant, else device_code */
    char hash[STORE_HASH_HEX + 1];    /* of the presented code or token */
    char client_id[STORE_ID_MAX + 1]; /* "" when not given (refresh) */
    char *signing_pem; /* the agent's Ed25519 public key, or NULL: an HMAC key is issued */
    /* config copied at submit (a reload never changes a running job) */
    int64_t key_ttl_s, overlap_s, reuse_ms;
    bool retry; /* the grace above: the previous generation was never delivered */
    /* outputs */
    enum token_outcome outcome;
    const char *why;
    struct store_device d;
    char *refresh_token; /* the new one */
    char *hmac_secret;   /* base64, when issued */
    char key_id[STORE_ID_MAX + 1];
    int64_t key_expires_ms;
};

static void token_op_free(void *p)
{
    struct token_op *op = p;
    secret_free(&op->refresh_token);
    secret_free(&op->hmac_secret);
    free(op->signing_pem);
    free(op);
}

/* The answer to an exchange at exchanged_ms may have been lost (the header comment): it was the
 * family's last exchange (a retry keeps last_refresh_at, so repeated losses stay retries), recent,
 * and the device is still approved. */
static bool lost_answer(const struct token_op *op, const struct store_device *d,
                        int64_t exchanged_ms, int64_t now)
{
    return op->reuse_ms > 0 && d->status == STORE_DEVICE_APPROVED &&
           d->last_refresh_at_ms == exchanged_ms && now - exchanged_ms <= op->reuse_ms;
}

/* Generation gen of the family is issued: the device moves to gen + 1, a new refresh token and
 * signing key are stored, the previous key gets its overlap. */
static int issue(struct token_op *op, struct store *st, int64_t now)
{
    struct store_device *d = &op->d;
    int rc = store_call(st, device_advance, op->tenant, d->device_id, d->refresh_gen,
                        op->retry ? d->last_refresh_at_ms : now);
    if (rc == ROOST_ESTATE) { /* a racing request moved the family on first */
        op->outcome = T_INVALID;
        op->why = "the grant was already used";
        return ROOST_OK;
    }
    if (rc != ROOST_OK) {
        return rc;
    }
    int64_t gen = d->refresh_gen + 1;
    char hash[STORE_HASH_HEX + 1];
    if ((op->refresh_token = credential_new("rt1", op->tenant)) == NULL) {
        return ROOST_ENOMEM;
    }
    api_oauth_sha256_hex(op->refresh_token, hash);
    if ((rc = store_call(st, refresh_add, op->tenant, hash, d->device_id, gen, now)) != ROOST_OK) {
        return rc;
    }
    struct store_key k = {0};
    snprintf(k.key_id, sizeof k.key_id, "%s.%lld", d->device_id, (long long)gen);
    snprintf(k.agent_id, sizeof k.agent_id, "%s", d->agent_id);
    if (op->signing_pem != NULL) {
        snprintf(k.alg, sizeof k.alg, "ed25519");
        k.material = op->signing_pem;
    } else {
        unsigned char raw[SECRET_BYTES];
        size_t len = 0;
        if (RAND_bytes(raw, sizeof raw) != 1 ||
            sf_base64_encode(raw, sizeof raw, &op->hmac_secret, &len) != 0) {
            OPENSSL_cleanse(raw, sizeof raw);
            return ROOST_ENOMEM;
        }
        OPENSSL_cleanse(raw, sizeof raw);
        snprintf(k.alg, sizeof k.alg, "hmac-sha256");
        k.material = op->hmac_secret;
    }
    snprintf(op->key_id, sizeof op->key_id, "%s", k.key_id);
    op->key_expires_ms = now + op->key_ttl_s * 1000;
    if ((rc = store_call(st, key_add, op->tenant, &k, now)) != ROOST_OK ||
        (rc = store_call(st, key_revoke, op->tenant, k.key_id,
                         op->key_expires_ms + op->overlap_s * 1000)) != ROOST_OK) {
        return rc;
    }
    if (gen > 1) {
        char prev[STORE_ID_MAX + 1];
        snprintf(prev, sizeof prev, "%s.%lld", d->device_id, (long long)(gen - 1));
        /* a key whose answer was lost never signed anything: no overlap for it */
        rc = store_call(st, key_revoke, op->tenant, prev,
                        now + (op->retry ? 0 : op->overlap_s * 1000));
        if (rc != ROOST_OK && rc != ROOST_EKEYNOTFOUND) {
            return rc;
        }
    }
    d->refresh_gen = gen;
    op->outcome = T_ISSUED;
    return ROOST_OK;
}

static int run_device_code(struct token_op *op, struct store *st, int64_t now)
{
    struct store_device *d = &op->d;
    int rc = store_call(st, device_get, op->tenant, STORE_DEVICE_BY_CODE_HASH, op->hash, d);
    if (rc == ROOST_EDEVICENOTFOUND || (rc == ROOST_OK && strcmp(d->agent_id, op->client_id))) {
        op->outcome = T_INVALID;
        op->why = "unknown device_code for this client_id";
        return ROOST_OK;
    }
    if (rc != ROOST_OK) {
        return rc;
    }
    switch (d->status) {
    case STORE_DEVICE_PENDING:
        if (now >= d->code_expires_at_ms) {
            op->outcome = T_EXPIRED;
            op->why = "the user code was not approved in time; run roost login again";
            return ROOST_OK;
        }
        if (d->last_poll_at_ms != 0 && now - d->last_poll_at_ms < d->interval_s * 1000) {
            op->outcome = T_SLOW_DOWN;
            d->interval_s += SLOW_DOWN_STEP_S;
            op->why = "polling too fast: wait interval seconds between polls";
        } else {
            op->outcome = T_PENDING;
            op->why = "waiting for an operator to approve the user code";
        }
        return store_call(st, device_poll, op->tenant, d->device_id, now, d->interval_s);
    case STORE_DEVICE_DENIED:
        op->outcome = T_DENIED;
        op->why = "an operator denied this device";
        return ROOST_OK;
    case STORE_DEVICE_APPROVED:
        if (d->refresh_gen == 0) {
            return issue(op, st, now);
        }
        /* once a refresh token was used, the device code is dead for good */
        if (d->refresh_gen == 1 && lost_answer(op, d, d->last_refresh_at_ms, now)) {
            op->retry = true;
            return issue(op, st, now);
        }
        op->outcome = T_INVALID;
        op->why = "the device_code was already exchanged";
        return ROOST_OK;
    default:
        op->outcome = T_INVALID;
        op->why = "the device is revoked";
        return ROOST_OK;
    }
}

static int run_refresh(struct token_op *op, struct store *st, int64_t now)
{
    struct store_device *d = &op->d;
    char device_id[STORE_DEVICE_ID_MAX + 1];
    int64_t gen = 0, used_ms = 0;
    bool reused = false;
    int rc =
        store_call(st, refresh_use, op->tenant, op->hash, now, device_id, &gen, &reused, &used_ms);
    if (rc == ROOST_EDEVICENOTFOUND) {
        op->outcome = T_INVALID;
        op->why = "unknown refresh token";
        return ROOST_OK;
    }
    if (rc != ROOST_OK) {
        return rc;
    }
    if ((rc = store_call(st, device_get, op->tenant, STORE_DEVICE_BY_ID, device_id, d)) !=
        ROOST_OK) {
        return rc;
    }
    if (op->client_id[0] != '\0' && strcmp(op->client_id, d->agent_id) != 0) {
        op->outcome = T_INVALID;
        op->why = "the refresh token belongs to another client_id";
        return ROOST_OK;
    }
    if (reused && gen < d->refresh_gen && lost_answer(op, d, used_ms, now)) {
        op->retry = true;
        return issue(op, st, now);
    }
    if (reused || gen != d->refresh_gen) {
        /* RFC 9700 §4.14.2: a used refresh token came back, so two parties hold the family. */
        op->outcome = T_REUSED;
        op->why = "refresh token reuse detected: the device is revoked; run roost login again";
        return store_call(st, device_revoke, op->tenant, d->device_id, "refresh token reused",
                          "roostd", now);
    }
    if (d->status != STORE_DEVICE_APPROVED) {
        op->outcome = T_INVALID;
        op->why = "the device is revoked: run roost login again";
        return ROOST_OK;
    }
    return issue(op, st, now);
}

static int run_token(struct job *job, struct store *st)
{
    struct token_op *op = (struct token_op *)job;
    /* A retried group runs the job again: reset its outputs. */
    secret_free(&op->refresh_token);
    secret_free(&op->hmac_secret);
    op->outcome = T_INVALID;
    op->why = NULL;
    op->retry = false;
    int64_t now = time_now_ms();
    return op->refresh ? run_refresh(op, st, now) : run_device_code(op, st, now);
}

static void done_token(struct job *job)
{
    struct token_op *op = (struct token_op *)job;
    struct request *rq = op->rq;
    if (job->rc != ROOST_OK) {
        request_reply_error(rq, job->rc, NULL, NULL);
        return;
    }
    switch (op->outcome) {
    case T_PENDING:
        oauth_error(rq, 400, "authorization_pending", op->why);
        return;
    case T_SLOW_DOWN:
        request_reply_json(rq, 400,
                           json_pack("{s:s, s:s, s:I}", "error", "slow_down", "error_description",
                                     op->why, "interval", (json_int_t)op->d.interval_s));
        return;
    case T_EXPIRED:
        oauth_error(rq, 400, "expired_token", op->why);
        return;
    case T_DENIED:
        oauth_error(rq, 400, "access_denied", op->why);
        return;
    case T_INVALID:
    case T_REUSED:
        oauth_error(rq, 400, "invalid_grant", op->why != NULL ? op->why : "invalid grant");
        return;
    case T_ISSUED:
        break;
    }
    int64_t now = time_now_ms();
    int64_t ttl = rq->rt->cfg->oauth_access_token_ttl_s;
    char sub[STORE_DEVICE_ID_MAX + 8];
    snprintf(sub, sizeof sub, "device:%s", op->d.device_id);
    char *access = NULL;
    int rc =
        auth_token_issue(rq->rt->auth, op->tenant, sub, op->d.scope_granted, now, ttl, &access);
    if (rc != ROOST_OK) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    json_t *key = json_pack("{s:s, s:s, s:I}", "key_id", op->key_id, "alg",
                            op->hmac_secret != NULL ? "hmac-sha256" : "ed25519", "expires_in",
                            (json_int_t)((op->key_expires_ms - now) / 1000));
    if (key != NULL && op->hmac_secret != NULL) {
        json_object_set_new(key, "secret", json_string(op->hmac_secret));
    }
    request_reply_json(rq, 200,
                       json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:s, s:o*}", "access_token",
                                 access, "token_type", "Bearer", "expires_in", (json_int_t)ttl,
                                 "refresh_token", op->refresh_token, "scope", op->d.scope_granted,
                                 "tenant", op->tenant, "agent_id", op->d.agent_id, "device_id",
                                 op->d.device_id, "signing_key", key));
    OPENSSL_cleanse(access, strlen(access));
    free(access);
}

void api_oauth_token(struct request *rq)
{
    const char *bad = NULL;
    if (body_param_only(rq, rq->body, "", &bad) != ROOST_OK) {
        oauth_error(rq, 400, "invalid_request", "unknown parameter");
        return;
    }
    const char *grant = NULL, *code = NULL, *refresh = NULL, *client_id = NULL, *pem = NULL;
    if (body_param_str(rq, rq->body, "grant_type", ROOST_EINVAL, &grant) != ROOST_OK ||
        body_param_str(rq, rq->body, "device_code", ROOST_EINVAL, &code) != ROOST_OK ||
        body_param_str(rq, rq->body, "refresh_token", ROOST_EINVAL, &refresh) != ROOST_OK ||
        body_param_str(rq, rq->body, "client_id", ROOST_EINVAL, &client_id) != ROOST_OK ||
        body_param_str(rq, rq->body, "signing_public_key", ROOST_EINVAL, &pem) != ROOST_OK ||
        grant == NULL) {
        oauth_error(rq, 400, "invalid_request", "grant_type is required; a parameter is too long");
        return;
    }
    bool is_refresh = strcmp(grant, "refresh_token") == 0;
    if (!is_refresh && strcmp(grant, GRANT_DEVICE_CODE) != 0) {
        oauth_error(rq, 400, "unsupported_grant_type",
                    "grant_type must be refresh_token or " GRANT_DEVICE_CODE);
        return;
    }
    const char *cred = is_refresh ? refresh : code;
    if (cred == NULL || (!is_refresh && client_id == NULL)) {
        oauth_error(rq, 400, "invalid_request",
                    is_refresh ? "refresh_token is required"
                               : "device_code and client_id are required");
        return;
    }
    struct token_op *op = request_op_new(rq, sizeof *op, token_op_free);
    if (op == NULL) {
        return;
    }
    op->rq = rq;
    op->refresh = is_refresh;
    if (!credential_tenant(cred, is_refresh ? "rt1" : "dc1", op->tenant)) {
        oauth_error(rq, 400, "invalid_grant",
                    is_refresh ? "unknown refresh token" : "unknown device_code");
        return;
    }
    if (client_id != NULL && !ids_valid_name(client_id, strlen(client_id))) {
        oauth_error(rq, 400, "invalid_client", "client_id must be the agent id");
        return;
    }
    snprintf(op->client_id, sizeof op->client_id, "%s", client_id != NULL ? client_id : "");
    if (pem != NULL) {
        json_t *pk = json_string(pem);
        const char *why = NULL;
        int rc = pk != NULL ? api_keys_load_public(HTTPSIG_ALG_ED25519, pk, &op->signing_pem, &why)
                            : ROOST_EKEYMATERIAL;
        json_decref(pk);
        if (rc != ROOST_OK) {
            oauth_error(rq, 400, "invalid_request",
                        why != NULL ? why : "signing_public_key is not an Ed25519 public key PEM");
            return;
        }
    }
    api_oauth_sha256_hex(cred, op->hash);
    const struct config *cfg = rq->rt->cfg;
    op->key_ttl_s = cfg->oauth_signing_key_ttl_s;
    op->overlap_s = cfg->oauth_key_overlap_s;
    op->reuse_ms = cfg->oauth_refresh_reuse_interval_s * 1000;
    op->job = (struct job){
        .run = run_token, .done = done_token, .write = true, .name = request_job_kind(rq)};
    workers_submit(runtime_workers(rq->rt, op->tenant), &op->job);
}
